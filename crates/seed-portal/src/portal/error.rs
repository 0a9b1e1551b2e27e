//! The portal's one error type. The API renders it as
//! `{"error": {"status", "code", "field", "message"}}`; pages render the
//! same fields as a small HTML page.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortalError {
    pub status: StatusCode,
    /// A short stable label (`bad-field`, `unauthenticated`, `forbidden`, ...).
    pub code: &'static str,
    /// The request field at fault, when one is.
    pub field: Option<String>,
    pub message: String,
    /// Render as a page (a browser's form) rather than JSON.
    pub html: bool,
    /// Seconds until the request may be tried again (a 429's `Retry-After`).
    pub retry_after_s: Option<u64>,
}

impl PortalError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> PortalError {
        PortalError { status, code, field: None, message: message.into(), html: false, retry_after_s: None }
    }

    /// 400 naming the field at fault.
    pub fn field(field: &str, message: impl Into<String>) -> PortalError {
        PortalError {
            field: Some(field.to_string()),
            ..PortalError::new(StatusCode::BAD_REQUEST, "bad-field", message)
        }
    }

    pub fn bad_request(message: impl Into<String>) -> PortalError {
        PortalError::new(StatusCode::BAD_REQUEST, "bad-request", message)
    }

    pub fn unauthenticated() -> PortalError {
        PortalError::new(StatusCode::UNAUTHORIZED, "unauthenticated", "log in first: no valid session or token")
    }

    pub fn forbidden(message: impl Into<String>) -> PortalError {
        PortalError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn csrf() -> PortalError {
        PortalError {
            field: Some("csrf".into()),
            ..PortalError::new(
                StatusCode::FORBIDDEN,
                "csrf",
                "the CSRF token is missing or does not match this session",
            )
        }
    }

    pub fn not_found(message: impl Into<String>) -> PortalError {
        PortalError::new(StatusCode::NOT_FOUND, "not-found", message)
    }

    /// 503: the land cannot do it now (this process follows another's
    /// land, the land is tripped or stopping).
    pub fn unavailable(message: impl Into<String>) -> PortalError {
        PortalError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
    }

    pub fn conflict(message: impl Into<String>) -> PortalError {
        PortalError::new(StatusCode::CONFLICT, "conflict", message)
    }

    pub fn too_large(most: usize) -> PortalError {
        PortalError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            format!("the request body is over portal_body_bytes_max = {most} bytes"),
        )
    }

    /// 413: one field of the request is larger than a fact body may be.
    pub fn over_fact_limit(field: &str, len: usize, most: usize) -> PortalError {
        PortalError {
            field: Some(field.to_string()),
            ..PortalError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too-large",
                format!("`{field}` is {len} bytes, over the land's fact_body_bytes_max = {most} bytes"),
            )
        }
    }

    /// 429 for logins: this client failed too often and must wait.
    pub fn login_throttled(retry_after_s: u64) -> PortalError {
        PortalError {
            retry_after_s: Some(retry_after_s),
            ..PortalError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "login-throttled",
                format!(
                    "too many failed logins from this address; try again in {retry_after_s} s \
                     (a right token logs in at any time)"
                ),
            )
        }
    }

    /// 429 for password logins: the account took too many wrong passwords.
    pub fn password_throttled(account: &str, retry_after_s: u64) -> PortalError {
        PortalError {
            field: Some("password".into()),
            retry_after_s: Some(retry_after_s),
            ..PortalError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "password-throttled",
                format!(
                    "the account {account:?} took too many wrong passwords; its password logins wait \
                     {retry_after_s} s (its token logs in at any time)"
                ),
            )
        }
    }

    /// 503: the land holds as many sessions as it keeps.
    pub fn too_many_sessions(most: usize) -> PortalError {
        PortalError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "too-many-sessions",
            format!("the portal holds {most} sessions (portal_sessions_max); log out elsewhere or wait"),
        )
    }

    /// 408: the client did not send its body in time.
    pub fn body_timeout(most_ms: u64) -> PortalError {
        PortalError::new(
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            format!("the request body did not arrive within body_read_timeout_ms = {most_ms} ms"),
        )
    }

    pub fn rate_limited(most: u64) -> PortalError {
        PortalError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate-limited",
            format!("more than portal_requests_per_minute_max = {most} requests this minute"),
        )
    }

    pub fn internal(message: impl Into<String>) -> PortalError {
        PortalError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    pub fn as_html(mut self) -> PortalError {
        self.html = true;
        self
    }

    pub fn to_json(&self) -> serde_json::Value {
        json!({"error": {
            "status": self.status.as_u16(), "code": self.code, "field": self.field, "message": self.message,
        }})
    }
}

impl IntoResponse for PortalError {
    fn into_response(self) -> Response {
        let retry_after = self.retry_after_s;
        let mut response = self.render();
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, axum::http::HeaderValue::from(seconds));
        }
        response
    }
}

impl PortalError {
    fn render(self) -> Response {
        if self.html {
            let field = self.field.as_deref().map(|field| format!(" (field <code>{}</code>)", super::html::esc(field)));
            let body = super::html::page(
                &format!("{} {}", self.status.as_u16(), self.code),
                &format!(
                    "<p class=\"error\" id=\"error\">{}{}</p><p><a href=\"/world\">Back to the world</a></p>",
                    super::html::esc(&self.message),
                    field.unwrap_or_default()
                ),
                None,
            );
            return (self.status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response();
        }
        (self.status, axum::Json(self.to_json())).into_response()
    }
}

impl From<crate::engine::EngineError> for PortalError {
    fn from(error: crate::engine::EngineError) -> PortalError {
        use crate::engine::EngineError;
        match error {
            EngineError::Follower { .. } => PortalError::new(StatusCode::CONFLICT, "follower", error.to_string()),
            EngineError::Tripped { .. } => {
                PortalError::new(StatusCode::SERVICE_UNAVAILABLE, "tripped", error.to_string())
            }
            EngineError::NotTripped => PortalError::new(StatusCode::CONFLICT, "not-tripped", error.to_string()),
            other => PortalError::internal(other.to_string()),
        }
    }
}

impl From<crate::store::StoreError> for PortalError {
    fn from(error: crate::store::StoreError) -> PortalError {
        PortalError::internal(error.to_string())
    }
}
