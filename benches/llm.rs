//! The substrate's own cost per LLM moment: 1,000 LLM beings (the crowd
//! world with `cognition = "llm"`) woken every round against the in-process
//! fake endpoint, which answers at once. One iteration is one round: 1,000
//! prompts built, 1,000 HTTP calls on loopback, responses read, acts decided,
//! re-checked, signed and committed. Reference in the same run: the same
//! 1,000 beings with scripted cognition. Also the added latency per moment
//! beyond the model call (moment total minus the call's wall time), p50 / p99.
//!
//! Under `cargo test --benches` (no `--bench` argument) the crowd shrinks to
//! 50 beings so the suite stays fast; the figures come from `cargo bench`.

mod common;

use common::rate;
use criterion::{criterion_group, Criterion, Throughput};
use seed::engine::fixture::Fixture;
use seed::engine::{Engine, EngineOptions};
use seed::llm_http::client::LlmClient;
use seed::llm_http::connections::Connections;
use seed::llm_http::fake::FakeEndpoint;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A benchmark measures on the allocator the `seed` binary uses; it chooses the process's allocator (the library only offers it).
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

const LLM_BEINGS: u64 = 1_000;
const LLM_BEINGS_IN_TEST_MODE: u64 = 50;
const THREADS: usize = 2;
/// Calls in flight at once (the land-wide cap).
const CONCURRENCY: usize = 8;
/// Rounds traced for the latency percentiles.
const LATENCY_ROUNDS: u64 = 3;

fn crowd(beings: u64, cognition: &str) -> Fixture {
    let mut fixture = Fixture::load(Path::new("fixtures/crowd.toml")).expect("crowd fixture");
    fixture.generate[0].count = beings;
    fixture.generate[0].template.cognition = cognition.to_string();
    fixture
}

fn plant(fixture: &Fixture, dir: &Path, endpoint: Option<&FakeEndpoint>, trace: bool) -> Engine {
    let model = endpoint.map(|endpoint| {
        let text = format!(
            "concurrency_max = {CONCURRENCY}\n[connection.fake]\nbase_url = \"{}\"\nmodel = \"fake\"\n",
            endpoint.base_url()
        );
        let connections = Connections::parse(&text, "bench", dir, &|_| None).expect("connections");
        Arc::new(LlmClient::new(connections).expect("client")) as Arc<dyn seed::llm::LanguageModel>
    });
    let options = EngineOptions {
        snapshot_every_facts: None,
        snapshot_spacing_step_bytes: None,
        store: Default::default(),
        ticks: None,
        seed: 0,
        threads: THREADS,
        land_dir: dir.join("land"),
        trace_file: trace.then(|| dir.join("trace.jsonl")),
        progress: std::sync::Arc::new(seed::progress::NoProgress),
        model,
        mode: seed::engine::Mode::Simulation,
    };
    Engine::plant(fixture, &options).expect("plant")
}

fn percentile(sorted: &[u64], fraction: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

/// Added latency per LLM moment beyond its model call, from a traced run.
fn added_latency(beings: u64, endpoint: &FakeEndpoint) -> (u64, u64, usize) {
    let dir = tempfile::tempdir().expect("folder");
    let mut simulation = plant(&crowd(beings, "llm"), dir.path(), Some(endpoint), true);
    for _ in 0..LATENCY_ROUNDS {
        simulation.round().expect("round");
    }
    let summary = simulation.finish().expect("finish");
    assert_eq!(summary.failures, 0, "{:?}", summary.failure_reasons);
    let text = std::fs::read_to_string(dir.path().join("trace.jsonl")).expect("trace");
    let mut added: Vec<u64> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|moment| {
            let total = moment["timingsUs"]["total"].as_u64()?;
            let call = moment["llm"]["latencyUs"].as_u64()?;
            Some(total.saturating_sub(call))
        })
        .collect();
    added.sort_unstable();
    (percentile(&added, 0.5), percentile(&added, 0.99), added.len())
}

fn bench(c: &mut Criterion) {
    let benchmarking = std::env::args().any(|argument| argument == "--bench");
    let beings = if benchmarking { LLM_BEINGS } else { LLM_BEINGS_IN_TEST_MODE };
    let endpoint = FakeEndpoint::start_counting().expect("fake endpoint");
    let (p50, p99, samples) = added_latency(beings, &endpoint);
    println!("added latency per LLM moment beyond the call: p50 {p50} us, p99 {p99} us ({samples} moments)");
    std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/target/llm-latency.txt"), format!("{p50} {p99} {samples}"))
        .ok();

    let scripted_dir = tempfile::tempdir().expect("folder");
    let mut scripted = plant(&crowd(beings, "scripted"), scripted_dir.path(), None, false);
    let llm_dir = tempfile::tempdir().expect("folder");
    let mut llm = plant(&crowd(beings, "llm"), llm_dir.path(), Some(&endpoint), false);
    scripted.round().expect("a first round");
    llm.round().expect("a first round");

    let mut group = c.benchmark_group("llm");
    group.throughput(Throughput::Elements(beings));
    group.sample_size(10);
    group.bench_function("reference_scripted_round", |b| b.iter(|| scripted.round().expect("round")));
    group.bench_function("llm_round", |b| b.iter(|| llm.round().expect("round")));
    group.finish();
    for simulation in [scripted, llm] {
        let summary = simulation.finish().expect("finish");
        assert_eq!(summary.failures, 0, "{:?}", summary.failure_reasons);
    }
}

fn print_ratios() {
    let (Some(scripted), Some(llm)) =
        (rate("llm/reference_scripted_round", LLM_BEINGS as f64), rate("llm/llm_round", LLM_BEINGS as f64))
    else {
        return;
    };
    let latency =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/target/llm-latency.txt")).unwrap_or_default();
    println!("\n== figures of this run (per second) ==");
    println!("scripted moments, 1,000 beings (reference) {scripted:>8.0}/s");
    println!(
        "LLM moments, 1,000 beings, fake endpoint   {llm:>8.0}/s  = {:.1}% of the scripted rate",
        100.0 * llm / scripted
    );
    println!("added latency beyond the call (p50 p99 us, moments): {latency}");
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(15)).warm_up_time(Duration::from_secs(3));
    targets = bench
}

fn main() {
    // What the `seed` binary does first (src/lib.rs).
    seed::configure_allocator();
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_ratios();
}
