//! The portal's accept loop: one hyper HTTP/1 connection per client, with a
//! header-read timeout (a half-sent request is dropped, not held), the
//! client's address handed to handlers (login throttling), and a bounded
//! graceful shutdown: when the shutdown signal fires, new connections stop,
//! idle ones close, event streams end (they watch the same signal), and
//! whatever is still open after `SHUTDOWN_GRACE_MS` is dropped.

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// How long a client has to send a request's line and headers.
pub const HEADER_READ_TIMEOUT_MS: u64 = 10_000;
/// How long in-flight requests may take to finish after the shutdown
/// signal before their connections are dropped.
pub const SHUTDOWN_GRACE_MS: u64 = 3_000;
/// Pause after a failed accept (out of file descriptors, say), so the loop
/// does not spin.
const ACCEPT_RETRY_MS: u64 = 50;

/// The shutdown signal: `true` once the portal is stopping.
pub type Shutdown = watch::Receiver<bool>;

/// Resolves once `shutdown` says the portal is stopping.
pub async fn stopping(mut shutdown: Shutdown) {
    // An error means the sender is gone: the portal is stopping too.
    let _ = shutdown.wait_for(|stopping| *stopping).await;
}

/// Serves `router` on `listener` until `shutdown` fires, then for at most
/// `SHUTDOWN_GRACE_MS` more.
pub async fn serve(listener: TcpListener, router: Router, shutdown: Shutdown, header_read_timeout: Duration) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopping(shutdown.clone()) => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(ACCEPT_RETRY_MS)).await;
                continue;
            }
        };
        // An answer written in pieces (an MCP call's event stream: headers,
        // then the event) must not wait for the client's delayed ACK.
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let mut request = request.map(Body::new);
            request.extensions_mut().insert(ConnectInfo(peer));
            let mut router = router.clone();
            async move {
                Ok::<_, Infallible>(
                    tower_service::Service::call(&mut router, request).await.unwrap_or_else(|never| match never {}),
                )
            }
        });
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_read_timeout)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = stopping(shutdown) => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
        // Finished connections are reaped as we go, so the set stays small.
        while connections.try_join_next().is_some() {}
    }
    let grace = Duration::from_millis(SHUTDOWN_GRACE_MS);
    let _ = tokio::time::timeout(grace, async { while connections.join_next().await.is_some() {} }).await;
    connections.abort_all();
}
