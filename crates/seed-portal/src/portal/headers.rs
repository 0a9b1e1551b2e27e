//! The headers every answer carries, and the static assets.
//!
//! The Content-Security-Policy admits scripts, styles and connections from
//! the portal itself only (the pages carry no inline script or style), and
//! no framing; answers are never cached (they show a land as it is, to
//! whoever is logged in) except the static assets; a 429 always says when
//! to come back.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The portal's script, compiled in.
pub const PORTAL_JS: &str = include_str!("assets/portal.js");

pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
connect-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
/// `Retry-After` on a 429 that did not set its own: the request budget's
/// window is a minute.
pub const RETRY_AFTER_DEFAULT_S: u64 = 60;
/// How long a browser may keep the static assets.
const ASSET_MAX_AGE_S: u64 = 300;

/// Adds the security headers to an answer (keeping any it set itself).
pub async fn security_headers(mut response: Response) -> Response {
    let status = response.status();
    let headers = response.headers_mut();
    let fixed = [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    for (name, value) in fixed {
        headers.entry(name).or_insert(HeaderValue::from_static(value));
    }
    if status == StatusCode::TOO_MANY_REQUESTS {
        headers.entry(header::RETRY_AFTER).or_insert(HeaderValue::from(RETRY_AFTER_DEFAULT_S));
    }
    response
}

/// A static asset with its type, cacheable for a short while.
pub fn asset(body: &str, content_type: &'static str) -> Response {
    let cache = format!("public, max-age={ASSET_MAX_AGE_S}");
    ([(header::CONTENT_TYPE, content_type.to_string()), (header::CACHE_CONTROL, cache)], body.to_string())
        .into_response()
}
