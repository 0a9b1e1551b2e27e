//! What a run reports: the summary of a simulation, what became of a
//! person's moment, each moment's record for what-if diffs, the moment trace
//! as a JSON line, and the log line per moment.

use super::Mode;
use crate::fact::{BeingId, Hash32};
use crate::moment::{Failure, MomentTrace};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

/// What became of a moment a person drove.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonResult {
    /// `act: VERB`, `see`, or `failure in BEAT: REASON`.
    pub outcome: String,
    /// Why it did not seal, when it failed.
    pub failure: Option<Failure>,
    /// The land seq the act sealed at.
    pub land_seq: Option<u64>,
    /// Whether it sealed.
    pub sealed: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSummary {
    pub fixture: String,
    pub ticks: u64,
    pub seed: u64,
    pub threads: usize,
    pub beings: u64,
    pub moments: u64,
    pub acts: BTreeMap<String, u64>,
    pub sees: u64,
    pub failures: u64,
    pub failure_reasons: BTreeMap<String, u64>,
    /// The first failure of each kind, as an example: rounds seal in being
    /// order, so the same run names the same example.
    pub failure_examples: BTreeMap<String, FailureExample>,
    pub facts_sealed: u64,
    pub elapsed_ms: u64,
    /// The beings this run planted and how long planting them took
    /// (wall time, for the summary only): `None` when it planted none (a resumed run).
    pub planted: Option<(u64, u64)>,
    pub world_hash: Hash32,
    /// Extensions skipped at load, with the reason.
    pub skipped_extensions: Vec<(String, String)>,
    /// What the world check warned about when the world loaded.
    pub warnings: Vec<crate::authoring::Problem>,
    /// Hook handlers that failed, and breakers that opened.
    pub hook_incidents: Vec<crate::moment::hooks::HookIncident>,
    /// Model calls answered, and what they used (sees and refusals included).
    pub llm_calls: u64,
    pub llm_prompt_tokens: u64,
    pub llm_completion_tokens: u64,
    pub llm_cost_micros: u64,
    /// The health breaker's trip during the run: the tick it tripped after and why.
    pub tripped: Option<(u64, crate::health::Trip)>,
}

/// One failure standing for its kind in a run's summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailureExample {
    pub being: String,
    pub tick: u64,
    /// The whole reason, as the moment trace gives it.
    pub reason: String,
    /// `FILE:LINE:COLUMN` when a script read from a file failed.
    pub script: Option<String>,
}

impl RunSummary {
    /// Whether the run had moments and every one of them failed.
    pub fn every_moment_failed(&self) -> bool {
        self.moments > 0 && self.failures == self.moments
    }

    pub fn to_json(&self) -> Json {
        let moments_per_second =
            if self.elapsed_ms == 0 { 0.0 } else { self.moments as f64 * 1000.0 / self.elapsed_ms as f64 };
        json!({
            "fixture": self.fixture, "ticks": self.ticks, "seed": self.seed, "threads": self.threads,
            "beings": self.beings, "moments": self.moments, "acts": self.acts, "sees": self.sees,
            "failures": self.failures, "failureReasons": self.failure_reasons,
            "failureExamples": self.failure_examples.iter().map(|(kind, example)| (kind.clone(), json!({
                "being": format!("@{}", example.being), "tick": example.tick, "reason": example.reason,
                "script": example.script,
            }))).collect::<serde_json::Map<_, _>>(),
            "factsSealed": self.facts_sealed,
            "elapsedMs": self.elapsed_ms, "momentsPerSecond": moments_per_second.round(),
            "worldHash": self.world_hash.to_hex(),
            "planted": self.planted.map(|(beings, elapsed_ms)| json!({
                "beings": beings, "elapsedMs": elapsed_ms,
                "beingsPerSecond": if elapsed_ms == 0 { 0.0 } else { (beings as f64 * 1000.0 / elapsed_ms as f64).round() },
            })),
            "llm": { "calls": self.llm_calls, "promptTokens": self.llm_prompt_tokens,
                     "completionTokens": self.llm_completion_tokens, "costMicros": self.llm_cost_micros },
            "hookIncidents": self.hook_incidents.iter().map(|i| json!({"handler": i.handler, "reason": i.reason, "breakerOpened": i.breaker_opened})).collect::<Vec<_>>(),
            "skippedExtensions": self.skipped_extensions.iter().map(|(name, reason)| json!({"name": name, "reason": reason})).collect::<Vec<_>>(),
            "warnings": self.warnings.iter().map(crate::authoring::Problem::to_json).collect::<Vec<_>>(),
            "tripped": self.tripped.as_ref().map(|(tick, trip)| json!({
                "tick": tick, "sign": trip.sign, "scorePermille": trip.score_permille,
            })),
        })
    }
}

/// A moment trace a live land keeps for the portal: the round it ran in,
/// and the reel seq its act sealed at (none for a see or a failure).
pub(super) struct RecentTrace {
    pub(super) tick: u64,
    pub(super) trace: MomentTrace,
    pub(super) seq: Option<u64>,
}

impl RecentTrace {
    pub(super) fn to_json(&self) -> Json {
        let mut line = trace_json(self.tick, &self.trace);
        line["seq"] = json!(self.seq);
        line
    }
}

pub(super) fn trace_json(tick: u64, trace: &MomentTrace) -> Json {
    json!({
        "tick": tick, "being": trace.being.to_hex(), "name": trace.name,
        "wake": trace.wake.to_json(),
        "cursor": trace.cursor, "storedTimeMs": trace.stored_time_ms,
        "storedTime": crate::view::format_time_ms(trace.stored_time_ms), "space": trace.space,
        "primary": trace.primary, "stack": trace.stack, "clauses": trace.clauses,
        "face": trace.face_digest.map(|digest| digest.to_hex()), "outcome": trace.outcome,
        "seeReason": trace.see_reason,
        "timingsUs": trace.timings_us,
        "llm": trace.llm.as_ref().map(|llm| json!({
            "connection": llm.connection, "model": llm.model, "promptTokens": llm.prompt_tokens,
            "completionTokens": llm.completion_tokens, "costMicros": llm.cost_micros, "attempts": llm.attempts,
            "latencyUs": llm.latency_us, "request": llm.request.map(|digest| digest.to_hex()), "prose": llm.prose,
            "omittedSeeBlocks": llm.omitted_see_blocks,
        })),
    })
}

/// One moment as the simulation ran it: enough to compare two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct MomentRecord {
    pub tick: u64,
    pub being: BeingId,
    pub name: String,
    pub wake: Json,
    pub primary: Option<String>,
    pub stack: Vec<String>,
    /// `act: VERB`, `see`, or `failure in BEAT: REASON`.
    pub outcome: String,
    /// The sealed act's verb call and prose (acts only).
    pub call: Option<Json>,
    pub content: Option<String>,
}

/// One log line per moment, in a span naming the being, the wake and the
/// cursor: at debug level, except a refused moment of a live land, which a
/// person running it wants to see (info).
pub(super) fn log_moment(trace: &MomentTrace, mode: Mode) {
    let duration_us = trace.timings_us.get("total").copied().unwrap_or(0);
    let refused = trace.outcome.starts_with("failure");
    if mode == Mode::Live && refused {
        let span = tracing::info_span!("moment", being = %trace.name, wake = %trace.wake.kind(), cursor = trace.cursor);
        span.in_scope(|| tracing::info!(outcome = %trace.outcome, duration_us, "refused"));
    } else {
        let span =
            tracing::debug_span!("moment", being = %trace.name, wake = %trace.wake.kind(), cursor = trace.cursor);
        span.in_scope(|| tracing::debug!(outcome = %trace.outcome, duration_us, "done"));
    }
}

/// Counts a finished moment for `/metrics` (through the `metrics` facade:
/// nothing is recorded unless the process installed a recorder). `outcome`
/// is `act`, `see` or `failure`. Observability only: nothing here reaches a
/// fact, a digest or a world hash.
/// Counts facts sealed by this process (the `metrics` facade; a no-op
/// unless a recorder is installed).
pub(super) fn record_facts_sealed(facts: u64) {
    if facts > 0 {
        metrics::counter!("seed_facts_sealed_total").increment(facts);
    }
}

/// A cascade signal or delivery sealed, by outcome (`made`: `announced` or
/// `delivered`; or why it was dropped).
pub(super) fn record_cascade(counter: &'static str, made: &'static str, dropped: Option<&crate::cascade::CascadeDrop>) {
    let outcome = dropped.map_or(made, |dropped| dropped.reason.as_str());
    metrics::counter!(counter, "outcome" => outcome).increment(1);
}

/// The health score after a step, as a `/metrics` gauge.
pub(super) fn record_health(health: &crate::health::Health) {
    metrics::gauge!("seed_health_score_permille").set(health.score_permille as f64);
}

pub(super) fn record_moment_metrics(trace: &MomentTrace, outcome: &'static str) {
    metrics::counter!("seed_moments_total", "outcome" => outcome).increment(1);
    for (beat, micros) in &trace.timings_us {
        metrics::histogram!("seed_moment_beat_seconds", "beat" => *beat).record(*micros as f64 / 1e6);
    }
    if let Some(llm) = &trace.llm {
        let connection = llm.connection.clone();
        metrics::counter!("seed_llm_calls_total", "connection" => connection.clone()).increment(1);
        metrics::counter!("seed_llm_tokens_total", "connection" => connection.clone(), "kind" => "prompt")
            .increment(llm.prompt_tokens);
        metrics::counter!("seed_llm_tokens_total", "connection" => connection.clone(), "kind" => "completion")
            .increment(llm.completion_tokens);
        metrics::counter!("seed_llm_cost_micros_total", "connection" => connection.clone()).increment(llm.cost_micros);
        metrics::histogram!("seed_llm_call_seconds", "connection" => connection).record(llm.latency_us as f64 / 1e6);
    }
}
