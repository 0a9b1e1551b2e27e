//! `/metrics` (docs/portal.md, "Metrics"): the land in Prometheus's text
//! format, for the operator only (its bearer token or session). What the
//! engine counts as it goes (moments by outcome, each beat's latency, model
//! calls, tokens, cost and latency by connection) comes through the
//! `metrics` facade into the exporter's recorder, installed once per
//! process; what is a state rather than an event (facts in the land, waiting
//! summons and approvals, hook breakers, the land folder's bytes) is read
//! at the scrape. Observability only: nothing here reaches a fact.

use super::error::PortalError;
use super::extract::ApiCaller;
use super::Portal;
use crate::portal::auth::Principal;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::{Arc, OnceLock};

/// The histograms' bucket bounds, in seconds: from 50 µs (a scripted beat)
/// to a minute (a slow model call).
pub const METRICS_SECONDS_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
    10.0, 30.0, 60.0,
];

/// The process's recorder: the first portal installs it; a process that
/// cannot (another recorder is installed) serves what it can read at the
/// scrape alone.
fn recorder() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new().set_buckets(METRICS_SECONDS_BUCKETS).ok()?;
            match builder.install_recorder() {
                Ok(handle) => {
                    describe();
                    Some(handle)
                }
                Err(error) => {
                    tracing::warn!(%error, "metrics: no recorder installed; /metrics shows the land's state only");
                    None
                }
            }
        })
        .as_ref()
}

/// Installs the recorder, so the engine's counts from the first moment on
/// are kept (called when the portal opens).
pub fn install() {
    let _ = recorder();
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!("seed_moments_total", "Moments run, by outcome (act, see, failure).");
    describe_histogram!(
        "seed_moment_beat_seconds",
        Unit::Seconds,
        "Time spent in each beat of a moment, and in total."
    );
    describe_counter!("seed_llm_calls_total", "Model calls answered, by connection.");
    describe_counter!("seed_llm_tokens_total", "Model tokens, by connection and kind (prompt, completion).");
    describe_counter!(
        "seed_llm_cost_micros_total",
        "Model cost in millionths of the connection's currency, by connection."
    );
    describe_histogram!("seed_llm_call_seconds", Unit::Seconds, "Latency of an answered model call, by connection.");
    describe_counter!("seed_facts_sealed_total", "Facts this process sealed (moments, events, spend, births).");
    describe_gauge!("seed_land_facts", "Facts sealed in the land (its land log's length).");
    describe_gauge!("seed_store_appends_waiting", "Facts queued for the store's committer and not yet written.");
    describe_gauge!("seed_beings", "Beings in the land's world.");
    describe_gauge!(
        "seed_health_score_permille",
        "The health breaker's score after the latest step, in thousandths (the land trips past 1000)."
    );
    describe_gauge!("seed_land_tripped", "1 while the land is tripped by its health breaker, else 0.");
    describe_gauge!("seed_inbox_summons", "Summons waiting in every inbox of the land.");
    describe_gauge!("seed_approvals_waiting", "Gated calls waiting for an approval.");
    describe_gauge!("seed_hook_failures", "Hook handler failures since the process started.");
    describe_gauge!("seed_hook_breakers_open", "Hook handlers whose circuit breaker is open.");
    describe_gauge!(
        "seed_store_bytes",
        Unit::Bytes,
        "Bytes of the land's folder on disk (for PostgreSQL: its local files)."
    );
}

/// Bytes of every file under `dir` (0 for what cannot be read).
fn folder_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => folder_bytes(&entry.path()),
            Ok(kind) if kind.is_file() => entry.metadata().map_or(0, |metadata| metadata.len()),
            _ => 0,
        })
        .sum()
}

/// Sets the gauges that are the land's state, read now.
fn read_state(portal: &Portal) {
    let world = portal.live.world();
    if let Ok(facts) = portal.live.store().land_len() {
        metrics::gauge!("seed_land_facts").set(facts as f64);
    }
    metrics::gauge!("seed_store_appends_waiting").set(portal.live.store().appends_waiting() as f64);
    metrics::gauge!("seed_beings").set(world.beings.len() as f64);
    let tripped = crate::health::trip_of(&world).is_some();
    metrics::gauge!("seed_land_tripped").set(if tripped { 1.0 } else { 0.0 });
    metrics::gauge!("seed_inbox_summons").set(world.inbox.values().map(|pending| pending.len()).sum::<usize>() as f64);
    metrics::gauge!("seed_approvals_waiting").set(world.approvals.len() as f64);
    let incidents = portal.live.substrate().hooks.incidents();
    metrics::gauge!("seed_hook_failures").set(incidents.len() as f64);
    metrics::gauge!("seed_hook_breakers_open")
        .set(incidents.iter().filter(|incident| incident.breaker_opened).count() as f64);
    metrics::gauge!("seed_store_bytes").set(folder_bytes(portal.live.land_dir()) as f64);
}

pub(super) async fn metrics_page(
    State(portal): State<Arc<Portal>>,
    ApiCaller(caller): ApiCaller,
) -> Result<Response, PortalError> {
    if caller.principal != Principal::Operator {
        return Err(PortalError::forbidden("/metrics is the operator's: scrape it with the operator token"));
    }
    let Some(handle) = recorder() else {
        return Err(PortalError::internal("this process has no metrics recorder (another was installed first)"));
    };
    let body = tokio::task::spawn_blocking(move || {
        read_state(&portal);
        handle.run_upkeep();
        handle.render()
    })
    .await
    .map_err(|error| PortalError::internal(format!("the metrics task stopped: {error}")))?;
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], body).into_response())
}
