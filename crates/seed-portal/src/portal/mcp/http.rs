//! MCP over streamable HTTP at `/mcp`: the bearer check in front of the
//! SDK's service, and the protected-resource metadata (RFC 9728) the MCP
//! authorization spec asks an HTTP server to publish.
//!
//! Only a bearer token is taken (never the portal's session cookie, so a
//! page on another origin cannot make a browser call tools). No token, a
//! wrong token and an expired one (replaced by a new token, or its account
//! revoked) are each a 401 with a `WWW-Authenticate: Bearer` challenge
//! naming the metadata; the wrong and expired add `error="invalid_token"`.
//! A being the caller may not drive is a 403 (`insufficient_scope`), one
//! that is not there a 404. A wrong token slows its client down as at the
//! portal's login (`throttle`).

use super::super::error::PortalError;
use super::super::{views, work, Portal};
use super::McpCaller;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;

/// Where the MCP endpoint is served.
pub const MCP_PATH: &str = "/mcp";
/// Where its protected-resource metadata is published.
pub const PROTECTED_RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// The origin the client reached us at (for the URLs in metadata and
/// challenges); the Host header is checked by the SDK's service.
fn origin(headers: &HeaderMap) -> String {
    let host = headers.get(header::HOST).and_then(|value| value.to_str().ok()).unwrap_or("127.0.0.1");
    format!("http://{host}")
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`.
pub async fn protected_resource_metadata(headers: HeaderMap) -> Response {
    let origin = origin(&headers);
    axum::Json(json!({
        "resource": format!("{origin}{MCP_PATH}"),
        "bearer_methods_supported": ["header"],
        "resource_name": "seed land",
        "resource_documentation": format!("{origin}/world"),
        // Tokens are the portal's own: the operator's (printed when the land
        // was planted) and people's (given with their invitation, renewed on
        // the accounts page). No OAuth authorization server issues them.
        "authorization_servers": [],
    }))
    .into_response()
}

fn challenge(headers: &HeaderMap, error: Option<(&str, &str)>) -> HeaderValue {
    let metadata = format!("{}{PROTECTED_RESOURCE_METADATA_PATH}", origin(headers));
    let value = match error {
        None => format!("Bearer resource_metadata=\"{metadata}\""),
        Some((error, description)) => {
            format!("Bearer error=\"{error}\", error_description=\"{description}\", resource_metadata=\"{metadata}\"")
        }
    };
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

fn refused(headers: &HeaderMap, error: PortalError, challenge_error: Option<(&str, &str)>) -> Response {
    let mut response = error.into_response();
    if matches!(response.status(), StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge(headers, challenge_error));
    }
    response
}

/// The being a request drives: `?being=NAME`, or the principal's own.
fn being_asked(request: &Request) -> Result<Option<String>, PortalError> {
    let params = super::super::extract::query_params(request.uri().query(), &["being"])?;
    Ok(params.get("being").map(|name| name.trim_start_matches('@').to_string()).filter(|name| !name.is_empty()))
}

/// The middleware in front of `/mcp`: who is asking (a bearer token only)
/// and which being they drive, put into the request for the service.
pub async fn require_bearer(State(portal): State<Arc<Portal>>, mut request: Request, next: Next) -> Response {
    let headers = request.headers().clone();
    let Some(token) = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim)
    else {
        let error = PortalError {
            message: "MCP needs a bearer token: `Authorization: Bearer TOKEN` (the operator's or a person's)".into(),
            ..PortalError::unauthenticated()
        };
        return refused(&headers, error, None);
    };
    let client = super::super::extract::client_of_request(&request);
    let principal = match portal.sessions.identify_bearer(
        token,
        &client,
        |token| portal.live.principal_of_token(token),
        portal.requests_per_minute_max(),
    ) {
        Ok(principal) => principal,
        Err(error) if error.status == StatusCode::UNAUTHORIZED => {
            let error = PortalError {
                message: "the bearer token is not a current token of this land: wrong, replaced by a new one, or \
                          its account revoked"
                    .into(),
                ..error
            };
            return refused(&headers, error, Some(("invalid_token", "the token is wrong or expired")));
        }
        Err(error) => return refused(&headers, error, None),
    };
    let asked = match being_asked(&request) {
        Ok(asked) => asked,
        Err(error) => return refused(&headers, error, None),
    };
    let caller = match caller_for(&portal, principal, asked) {
        Ok(caller) => caller,
        Err(error) => {
            let challenge_error = match error.status {
                StatusCode::FORBIDDEN => Some(("insufficient_scope", "this token may not drive that being")),
                _ => Some(("invalid_token", "the token's account was revoked")),
            };
            return refused(&headers, error, challenge_error);
        }
    };
    request.extensions_mut().insert(caller);
    next.run(request).await
}

/// Who drives what: `principal` driving `asked` (default: its own being),
/// which it must be allowed to act for (404 for a being not there, 403 for
/// one not theirs, 401 for an account revoked).
pub fn caller_for(
    portal: &Portal,
    principal: super::Principal,
    asked: Option<String>,
) -> Result<McpCaller, PortalError> {
    let world = portal.live.world();
    let being = match asked {
        Some(name) => name.trim_start_matches('@').to_string(),
        None => match portal.live.being_of(&principal).and_then(|id| world.name_of(&id)) {
            Some(name) => name.to_string(),
            None => return Err(PortalError::unauthenticated()),
        },
    };
    let row = views::being_row(&world, &being)?;
    work::may_act_for(&world, &principal, row)?;
    Ok(McpCaller { principal, being })
}
