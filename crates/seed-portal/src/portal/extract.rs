//! Who may call a handler, as axum extractors: a handler's signature says
//! it. Each extractor authenticates (a session cookie or the bearer token,
//! spending the caller's request budget), and a write also checks the
//! session's CSRF token and reads its body within the size and time limits.
//!
//! | extractor | for | refused with |
//! |---|---|---|
//! | [`ApiCaller`] | API reads | a JSON error (401, 429) |
//! | [`PageVisitor`] | pages | a redirect to `/login`, or an error page |
//! | [`ApiWrite`] | API writes with a JSON object body | a JSON error (401, 403 `csrf`, 400, 408, 413, 429) |
//! | [`ApiWriteNoBody`] | API writes that carry nothing | as `ApiWrite` |
//! | [`FormWrite`] | form posts (the CSRF token in the form) | an error page |

use super::auth::Credential;
use super::error::PortalError;
use super::Portal;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// An authenticated caller of the API.
pub struct ApiCaller(pub Credential);

/// An authenticated visitor of a page.
pub struct PageVisitor(pub Credential);

/// An authenticated, CSRF-checked API write and its JSON object body.
pub struct ApiWrite(pub Credential, pub Json);

/// An authenticated, CSRF-checked API write whose body carries nothing (it
/// is still read, to hold it to the body limit).
pub struct ApiWriteNoBody(pub Credential);

/// An authenticated form post, its CSRF field checked, and its fields.
pub struct FormWrite(pub Credential, pub BTreeMap<String, String>);

fn identify(portal: &Portal, parts: &Parts) -> Result<Credential, PortalError> {
    portal.sessions.identify(
        &parts.headers,
        &client_of(parts),
        |token| portal.live.principal_of_token(token),
        |principal| portal.live.grant_of(principal),
        portal.requests_per_minute_max(),
    )
}

/// The throttle's key for the request's client (`throttle::client_key`);
/// every connection the portal serves carries its peer's address.
fn client_of(parts: &Parts) -> String {
    client_of_extensions(&parts.extensions)
}

/// The throttle's key for a whole request's client (a middleware's).
pub(super) fn client_of_request(request: &Request) -> String {
    client_of_extensions(request.extensions())
}

fn client_of_extensions(extensions: &axum::http::Extensions) -> String {
    let peer = extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>();
    peer.map_or_else(|| "(unknown)".to_string(), |peer| super::throttle::client_key(peer.0.ip()))
}

impl FromRequestParts<Arc<Portal>> for ApiCaller {
    type Rejection = PortalError;

    async fn from_request_parts(parts: &mut Parts, portal: &Arc<Portal>) -> Result<ApiCaller, PortalError> {
        identify(portal, parts).map(ApiCaller)
    }
}

impl FromRequestParts<Arc<Portal>> for PageVisitor {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, portal: &Arc<Portal>) -> Result<PageVisitor, Response> {
        match identify(portal, parts) {
            Ok(credential) => Ok(PageVisitor(credential)),
            Err(error) if error.status == StatusCode::UNAUTHORIZED => Err(Redirect::to("/login").into_response()),
            Err(error) => Err(error.as_html().into_response()),
        }
    }
}

impl FromRequest<Arc<Portal>> for ApiWrite {
    type Rejection = PortalError;

    async fn from_request(request: Request, portal: &Arc<Portal>) -> Result<ApiWrite, PortalError> {
        let (parts, body) = request.into_parts();
        let credential = identify(portal, &parts)?;
        credential.check_csrf(&parts.headers, None)?;
        let json = parse_json(&read_body(portal, body).await?)?;
        Ok(ApiWrite(credential, json))
    }
}

impl FromRequest<Arc<Portal>> for ApiWriteNoBody {
    type Rejection = PortalError;

    async fn from_request(request: Request, portal: &Arc<Portal>) -> Result<ApiWriteNoBody, PortalError> {
        let (parts, body) = request.into_parts();
        let credential = identify(portal, &parts)?;
        credential.check_csrf(&parts.headers, None)?;
        read_body(portal, body).await?;
        Ok(ApiWriteNoBody(credential))
    }
}

impl FromRequest<Arc<Portal>> for FormWrite {
    type Rejection = Response;

    async fn from_request(request: Request, portal: &Arc<Portal>) -> Result<FormWrite, Response> {
        let (parts, body) = request.into_parts();
        let written = async {
            let credential = identify(portal, &parts)?;
            let form = parse_form(&read_body(portal, body).await?)?;
            credential.check_csrf(&parts.headers, form.get("csrf").map(String::as_str))?;
            Ok::<_, PortalError>(FormWrite(credential, form))
        };
        written.await.map_err(|error| error.as_html().into_response())
    }
}

/// The request's body: 413 past the land's `portal_body_bytes_max` (read
/// at this request), 408 if the client does not send all of it within
/// `body_read_timeout_ms` (a slow client must not hold a connection and a
/// worker open).
pub async fn read_body(portal: &Portal, body: Body) -> Result<Bytes, PortalError> {
    let timeout = Duration::from_millis(portal.limits.body_read_timeout_ms);
    let body_bytes_max = portal.body_bytes_max();
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, body_bytes_max)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(PortalError::too_large(body_bytes_max)),
        Err(_) => Err(PortalError::body_timeout(portal.limits.body_read_timeout_ms)),
    }
}

pub fn parse_json(bytes: &[u8]) -> Result<Json, PortalError> {
    let value: Json = serde_json::from_slice(bytes)
        .map_err(|error| PortalError::bad_request(format!("the body is not JSON: {error}")))?;
    if !value.is_object() {
        return Err(PortalError::bad_request("the body must be a JSON object"));
    }
    Ok(value)
}

/// The query parameters of a route, each at most once, only the ones named.
pub fn query_params(query: Option<&str>, allowed: &[&str]) -> Result<BTreeMap<String, String>, PortalError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query.unwrap_or(""))
        .map_err(|error| PortalError::bad_request(format!("the query is not url-encoded: {error}")))?;
    let mut params = BTreeMap::new();
    for (key, value) in pairs {
        if !allowed.contains(&key.as_str()) {
            return Err(PortalError {
                field: Some(key.clone()),
                ..PortalError::bad_request(format!(
                    "unknown parameter {key:?} (this route takes {})",
                    allowed.join(", ")
                ))
            });
        }
        if params.insert(key.clone(), value).is_some() {
            return Err(PortalError {
                field: Some(key.clone()),
                ..PortalError::bad_request(format!("parameter {key:?} is given twice"))
            });
        }
    }
    Ok(params)
}

/// A required parameter, named in the error when it is missing or empty.
pub fn required<'a>(params: &'a BTreeMap<String, String>, key: &str) -> Result<&'a str, PortalError> {
    params.get(key).map(|value| value.trim()).filter(|value| !value.is_empty()).ok_or_else(|| PortalError {
        field: Some(key.into()),
        ..PortalError::bad_request(format!("`{key}` is required"))
    })
}

pub fn parse_form(bytes: &[u8]) -> Result<BTreeMap<String, String>, PortalError> {
    serde_urlencoded::from_bytes::<Vec<(String, String)>>(bytes)
        .map(|pairs| pairs.into_iter().collect())
        .map_err(|error| PortalError::bad_request(format!("the form is not url-encoded: {error}")).as_html())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_params_name_an_unknown_or_repeated_parameter() {
        let check = |query: &str, expected: Result<Vec<(&str, &str)>, &str>| {
            let got = query_params(Some(query), &["q"]);
            match expected {
                Ok(pairs) => {
                    let pairs: BTreeMap<String, String> =
                        pairs.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                    assert_eq!(got.expect("accepted"), pairs, "{query}");
                }
                Err(field) => assert_eq!(got.expect_err("refused").field.as_deref(), Some(field), "{query}"),
            }
        };
        check("q=ada", Ok(vec![("q", "ada")]));
        check("q=%40ada", Ok(vec![("q", "@ada")]));
        check("", Ok(vec![]));
        check("x=1", Err("x"));
        check("q=a&q=b", Err("q"));
    }
}
