//! Replay at scale: the land of the moments benchmark's world (10,000
//! scripted beings, fixtures/crowd.toml, four rounds: 40,000 acts, 50,000
//! facts) replayed land-wide with full recomputation (every signature,
//! chain and index checked, every moment recomputed and compared byte for
//! byte). Reference in the same run: verification alone, the part of a
//! replay that recomputes nothing. Target: 100,000 replayed moments/s.
//!
//! Replay is measured twice: checking every signature, and with the
//! verification checkpoint a clean `seed verify` leaves (the checkpoint stands
//! in for the signature arithmetic of the facts it covers, nothing else).
//!
//! Each moment runs with the definitions the land recorded at its cursor
//! (docs/definitions.md), as `seed replay --all` does; the same replay with
//! today's files for every moment (`--fixture`) is measured beside it, the
//! cost of looking the recorded set up.
//!
//! Under `cargo test --benches` the crowd shrinks to 200 beings.

mod common;

use common::rate;
use criterion::{criterion_group, Criterion, Throughput};
use seed::check::checkpoint::TrustedCheckpoint;
use seed::engine::fixture::Fixture;
use seed::engine::{substrate_for, EngineOptions};
use seed::replay::land::{replay_land, verify_only};
use std::path::Path;

/// A benchmark measures on the allocator the `seed` binary uses; it chooses the process's allocator (the library only offers it).
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

const CROWD_BEINGS: u64 = 10_000;
const CROWD_BEINGS_IN_TEST_MODE: u64 = 200;
const ROUNDS: u64 = 4;
const THREADS: usize = 2;

fn bench(c: &mut Criterion) {
    let benchmarking = std::env::args().any(|argument| argument == "--bench");
    let beings = if benchmarking { CROWD_BEINGS } else { CROWD_BEINGS_IN_TEST_MODE };
    let mut fixture = Fixture::load(Path::new("fixtures/crowd.toml")).expect("crowd fixture");
    fixture.generate[0].count = beings;
    let dir = tempfile::tempdir().expect("folder");
    let land_dir = dir.path().join("land");
    let options = EngineOptions {
        snapshot_every_facts: None,
        snapshot_spacing_step_bytes: None,
        store: Default::default(),
        ticks: Some(ROUNDS),
        seed: 0,
        threads: THREADS,
        land_dir: land_dir.clone(),
        trace_file: None,
        progress: std::sync::Arc::new(seed::progress::NoProgress),
        model: None,
        mode: seed::engine::Mode::Simulation,
    };
    let summary = seed::engine::simulate(&fixture, &options).expect("simulate the crowd");
    let moments: u64 = summary.acts.values().sum();
    assert_eq!(moments, beings * ROUNDS, "every moment of the crowd is an act");
    let (substrate, _) = substrate_for(&fixture, &[]).expect("definitions");
    let land = seed::land::Land::open(&land_dir).expect("open the land");
    let store = land.store();
    // What `seed verify` does after a clean verification.
    let schemas = seed::world::CoreSchemas::new();
    let mode = seed::check::SignatureMode::Batch { batch_facts: 256 };
    let verified = seed::check::verify_land(store, mode, THREADS, schemas.rules(land.limits())).expect("verify");
    let (facts, digest) = verified.verified_digest.expect("a clean land");
    let checkpoint = land.write_verified_checkpoint(facts, digest).expect("checkpoint");
    let trusted = TrustedCheckpoint { checkpoint: &checkpoint, root: land.root() };

    // As `seed replay --all` runs: the definitions the land recorded.
    let definitions = seed::replay::ReplayDefinitions::recorded(store, Some(&substrate));
    let mut group = c.benchmark_group("replay");
    group.throughput(Throughput::Elements(moments));
    group.sample_size(10);
    group.bench_function("reference_verify_only", |b| {
        b.iter(|| assert!(verify_only(store, THREADS).expect("verify").problems.is_empty()))
    });
    group.bench_function("crowd_land_full_recomputation", |b| {
        b.iter(|| {
            let report =
                replay_land(store, &definitions, THREADS, None, &Default::default(), &seed::progress::NoProgress)
                    .expect("replay");
            assert!(report.clean() && report.moments == moments, "{report:?}");
        })
    });
    let todays_files = seed::replay::ReplayDefinitions::files(store, &substrate, None);
    group.bench_function("crowd_land_full_recomputation_todays_files", |b| {
        b.iter(|| {
            let report =
                replay_land(store, &todays_files, THREADS, None, &Default::default(), &seed::progress::NoProgress)
                    .expect("replay");
            assert!(report.clean() && report.moments == moments, "{report:?}");
        })
    });
    group.bench_function("crowd_land_full_recomputation_checkpointed", |b| {
        b.iter(|| {
            let report = replay_land(
                store,
                &definitions,
                THREADS,
                Some(trusted),
                &Default::default(),
                &seed::progress::NoProgress,
            )
            .expect("replay");
            assert!(report.clean() && report.moments == moments && report.signatures_covered == facts, "{report:?}");
        })
    });
    group.finish();
    land.close().expect("close");
}

fn print_figures() {
    let moments = (CROWD_BEINGS * ROUNDS) as f64;
    let (Some(verify), Some(replay), Some(checkpointed)) = (
        rate("replay/reference_verify_only", moments),
        rate("replay/crowd_land_full_recomputation", moments),
        rate("replay/crowd_land_full_recomputation_checkpointed", moments),
    ) else {
        return;
    };
    println!("\n== figures of this run (moments per second, 40,000 moments, 50,006 facts) ==");
    println!("verification alone (reference)             {verify:>10.0}/s");
    println!(
        "full replay, every signature checked       {replay:>10.0}/s  = {:.1}% of the verification rate",
        100.0 * replay / verify
    );
    if let Some(files) = rate("replay/crowd_land_full_recomputation_todays_files", moments) {
        println!(
            "full replay with today's files everywhere {files:>10.0}/s  (the recorded definitions: {:.1}% of it)",
            100.0 * replay / files
        );
    }
    println!(
        "full replay with the verify checkpoint     {checkpointed:>10.0}/s  = {:.1}% of the verification rate (target >= 100,000/s)",
        100.0 * checkpointed / verify
    );
}

criterion_group!(benches, bench);

fn main() {
    // What the `seed` binary does first (src/lib.rs).
    seed::configure_allocator();
    benches();
    Criterion::default().configure_from_args().final_summary();
    if std::env::args().any(|argument| argument == "--bench") {
        print_figures();
    }
}
