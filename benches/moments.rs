//! Moments at scale: a world of 10,000 scripted beings in four spaces
//! (fixtures/crowd.toml), every being woken every round, every moment ending
//! in an act. One iteration is one round: 10,000 moments through all five
//! beats, re-checked, signed, group-committed and durable. Reference in the
//! same run: raw Ed25519 signing (target: 20,000 sealed moments/s, or 40% of
//! the sign rate). Also reports the resident memory per planted being.
//!
//! The same crowd with every being wearing `recollecting` (orientation
//! `half`: each moment recalls its own past into the face) runs in the same
//! run: its rate against the `forward` crowd's is the cost of recall
//! (target: at least 80%).
//!
//! The health breaker measures its signs as each round ends (docs/health.md):
//! the same crowd whose land watches no sign (every weight and the disk
//! floor 0) runs in the same run, round for round with the default crowd
//! (16 pairs, ABBA), and the default crowd's rate against it is the cost of
//! the health score (target: at least 95%).
//!
//! A land keeps the files its world loads as definition facts, sealed as it
//! plants (docs/definitions.md): the same crowd planted as lands were before
//! (no definition facts) runs in the same run, round for round with the
//! default crowd (16 pairs, ABBA), and the default crowd's rate against it
//! is the cost of definition facts on sealed moments (target: at least
//! 95%); the two plantings are timed too.
//!
//! Under `cargo test --benches` (no `--bench` argument) the crowd shrinks to
//! 200 beings so the suite stays fast; the figures come from `cargo bench`.

mod common;

use common::rate;
use criterion::{criterion_group, Criterion, Throughput};
use ed25519_dalek::{Signer, SigningKey};
use seed::engine::fixture::Fixture;
use seed::engine::{Engine, EngineOptions};
use std::path::Path;
use std::time::Duration;

/// A benchmark measures on the allocator the `seed` binary uses; it chooses the process's allocator (the library only offers it).
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

const CROWD_BEINGS: u64 = 10_000;
const CROWD_BEINGS_IN_TEST_MODE: u64 = 200;
const THREADS: usize = 2;
/// Rounds of each crowd, interleaved, for the cost of the health score.
const HEALTH_ROUND_PAIRS: usize = 16;
/// Sealed moments per second of the crowd measuring its health and of the
/// one watching no sign, from the interleaved rounds.
static HEALTH_RATES: std::sync::OnceLock<(f64, f64)> = std::sync::OnceLock::new();
/// Rounds of each crowd, interleaved, for the cost of definition facts.
const DEFINITIONS_ROUND_PAIRS: usize = 16;
/// Sealed moments per second of the crowd whose land recorded its
/// definitions and of the one planted as before, from the interleaved
/// rounds; and the seconds each took to plant.
static DEFINITIONS_RATES: std::sync::OnceLock<(f64, f64, f64, f64)> = std::sync::OnceLock::new();

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

fn bench(c: &mut Criterion) {
    let benchmarking = std::env::args().any(|argument| argument == "--bench");
    let beings = if benchmarking { CROWD_BEINGS } else { CROWD_BEINGS_IN_TEST_MODE };
    let mut fixture = Fixture::load(Path::new("fixtures/crowd.toml")).expect("crowd fixture");
    fixture.generate[0].count = beings;
    let mut recollecting = fixture.clone();
    recollecting.generate[0].template.flow.push(serde_json::json!({"stack": true, "role": "recollecting"}));
    let mut unwatched = fixture.clone();
    for key in [
        "health_facts_weight_permille",
        "health_failures_weight_permille",
        "health_store_errors_weight_permille",
        "health_hook_breakers_weight_permille",
        "health_disk_free_bytes_min",
    ] {
        unwatched.config.insert(key.to_string(), serde_json::json!(0));
    }
    let dir = tempfile::tempdir().expect("folder");
    let half_dir = tempfile::tempdir().expect("folder");
    let unwatched_dir = tempfile::tempdir().expect("folder");
    let options_in = |land_dir: std::path::PathBuf| EngineOptions {
        snapshot_every_facts: None,
        snapshot_spacing_step_bytes: None,
        store: Default::default(),
        ticks: None,
        seed: 0,
        threads: THREADS,
        land_dir,
        trace_file: None,
        progress: std::sync::Arc::new(seed::progress::NoProgress),
        model: None,
        mode: seed::engine::Mode::Simulation,
    };
    let options = options_in(dir.path().join("land"));
    let before = resident_bytes();
    let mut simulation = Engine::plant(&fixture, &options).expect("plant the crowd");
    simulation.round().expect("a first round");
    let per_being = resident_bytes().saturating_sub(before) / beings;
    println!("resident memory after planting and one round: {per_being} bytes per being ({beings} beings)");
    std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/target/crowd-memory.txt"), format!("{per_being}")).ok();

    let unwatched_options = options_in(unwatched_dir.path().join("land"));
    let mut quiet = Engine::plant(&unwatched, &unwatched_options).expect("plant the unwatched crowd");
    quiet.round().expect("a first round");
    assert!(quiet.health().is_none(), "a land watching no sign measures nothing");
    if benchmarking {
        // Interleaved rounds, in ABBA order, on two lands of the same
        // size, so the machine's drift and the lands' growth fall on both alike.
        let (watched_time, unwatched_time) = common::interleaved(
            HEALTH_ROUND_PAIRS,
            || simulation.round().expect("round"),
            || quiet.round().expect("round"),
        );
        let rate = |time: Duration| (HEALTH_ROUND_PAIRS as u64 * beings) as f64 / time.as_secs_f64();
        let _ = HEALTH_RATES.set((rate(watched_time), rate(unwatched_time)));
    }
    let summary = quiet.finish().expect("finish");
    assert_eq!(summary.failures, 0, "{:?}", summary.failure_reasons);

    // Two fresh lands of the same size (the default crowd's land has grown
    // by the rounds above): one recording its definitions as it plants, one
    // planted as before.
    let (recorded_dir, unrecorded_dir) = (tempfile::tempdir().expect("folder"), tempfile::tempdir().expect("folder"));
    let planting = std::time::Instant::now();
    let mut recorded = Engine::plant(&fixture, &options_in(recorded_dir.path().join("land"))).expect("plant the crowd");
    let planted_recording = planting.elapsed();
    let planting = std::time::Instant::now();
    let mut unrecorded = Engine::plant_as_before_definitions(&fixture, &options_in(unrecorded_dir.path().join("land")))
        .expect("plant the crowd as before");
    let planted_as_before = planting.elapsed();
    recorded.round().expect("a first round");
    unrecorded.round().expect("a first round");
    if benchmarking {
        let (recorded_time, unrecorded_time) = common::interleaved(
            DEFINITIONS_ROUND_PAIRS,
            || recorded.round().expect("round"),
            || unrecorded.round().expect("round"),
        );
        let rate = |time: Duration| (DEFINITIONS_ROUND_PAIRS as u64 * beings) as f64 / time.as_secs_f64();
        let _ = DEFINITIONS_RATES.set((
            rate(recorded_time),
            rate(unrecorded_time),
            planted_recording.as_secs_f64(),
            planted_as_before.as_secs_f64(),
        ));
    }
    for engine in [recorded, unrecorded] {
        let summary = engine.finish().expect("finish");
        assert_eq!(summary.failures, 0, "{:?}", summary.failure_reasons);
    }

    let mut group = c.benchmark_group("moments");
    let key = SigningKey::from_bytes(&[7; 32]);
    let message = [0x89u8; 150];
    group.throughput(Throughput::Elements(1));
    group.bench_function("reference_ed25519_sign", |b| b.iter(|| key.sign(std::hint::black_box(&message))));
    group.throughput(Throughput::Elements(beings));
    group.sample_size(10);
    group.bench_function("crowd_round", |b| b.iter(|| simulation.round().expect("round")));
    assert!(simulation.health().is_some(), "the default crowd measures its health");
    let summary = simulation.finish().expect("finish");
    assert_eq!(summary.failures, 0, "{:?}", summary.failure_reasons);
    let half_options = options_in(half_dir.path().join("land"));
    let mut half = Engine::plant(&recollecting, &half_options).expect("plant the recollecting crowd");
    half.round().expect("a first round");
    group.bench_function("crowd_round_half", |b| b.iter(|| half.round().expect("round")));
    group.finish();
    let summary = half.finish().expect("finish");
    assert_eq!(summary.failures, 0, "{:?}", summary.failure_reasons);
}

fn print_ratios() {
    let (Some(sign), Some(moments)) =
        (rate("moments/reference_ed25519_sign", 1.0), rate("moments/crowd_round", CROWD_BEINGS as f64))
    else {
        return;
    };
    println!("\n== figures of this run (per second) ==");
    println!("raw ed25519 sign (reference)          {sign:>10.0}/s");
    println!("sealed moments, 10,000 beings         {moments:>10.0}/s  = {:.1}% of the sign rate (target >= 40%, or >= 20,000/s)", 100.0 * moments / sign);
    if let Some((watched, unwatched)) = HEALTH_RATES.get() {
        println!(
            "interleaved rounds: health watched {watched:>8.0}/s  = {:.1}% of the crowd watching no sign ({unwatched:.0}/s; target >= 95%)",
            100.0 * watched / unwatched
        );
    }
    if let Some((recorded, unrecorded, planted_recording, planted_as_before)) = DEFINITIONS_RATES.get() {
        println!(
            "interleaved rounds: definitions recorded {recorded:>6.0}/s  = {:.1}% of the crowd planted as before ({unrecorded:.0}/s; target >= 95%)",
            100.0 * recorded / unrecorded
        );
        println!(
            "planting 10,000 beings: {planted_recording:.2} s recording the definitions, {planted_as_before:.2} s as before"
        );
    }
    if let Some(half) = rate("moments/crowd_round_half", CROWD_BEINGS as f64) {
        println!(
            "sealed moments, the same crowd `half`  {half:>10.0}/s  = {:.1}% of the `forward` crowd's (target >= 80%)",
            100.0 * half / moments
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(20)).warm_up_time(Duration::from_secs(3));
    targets = bench
}

fn main() {
    // What the `seed` binary does first (src/lib.rs).
    seed::configure_allocator();
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_ratios();
}
