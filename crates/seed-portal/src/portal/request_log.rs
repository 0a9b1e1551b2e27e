//! One log line per HTTP request: method, route (the router's pattern, so
//! `/beings/{name}`, never a query string), status and latency. Nothing of
//! the request's headers or body is logged: cookies, bearer tokens and CSRF
//! tokens travel there.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use std::time::Instant;
use tracing::Instrument;

/// What a request that matched no route is logged as.
const NO_ROUTE: &str = "(no route)";

pub async fn log_request(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let route = request.extensions().get::<MatchedPath>().map_or(NO_ROUTE, MatchedPath::as_str).to_string();
    let span = tracing::info_span!("request", %method, %route);
    let started = Instant::now();
    let response = next.run(request).instrument(span.clone()).await;
    let latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let status = response.status().as_u16();
    span.in_scope(|| tracing::info!(status, latency_us, "answered"));
    response
}
