//! World snapshots: replaying one being's latest moments on a crowd land
//! (fixtures/crowd.toml, 10,000 scripted beings, 12 rounds: 130,006 facts)
//! starting from the vouched snapshot before them, against the same replay
//! folding the land log from genesis (the reference, in the same run).
//! Snapshots every 10,000 facts, as many as one round seals.
//!
//! Under `cargo test --benches` the crowd shrinks to 200 beings.

mod common;

use common::rate;
use criterion::{criterion_group, Criterion};
use seed::engine::fixture::Fixture;
use seed::engine::{substrate_for, EngineOptions};
use seed::replay::{ReplayOptions, Replayer};
use seed::snapshots::VouchedWorlds;
use std::path::Path;

/// A benchmark measures on the allocator the `seed` binary uses.
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

const CROWD_BEINGS: u64 = 10_000;
const CROWD_BEINGS_IN_TEST_MODE: u64 = 200;
const ROUNDS: u64 = 12;
const THREADS: usize = 2;
const SNAPSHOT_EVERY_FACTS: u64 = 10_000;
/// The being replayed, and the first reel seq shown: its last two moments.
const BEING: &str = "@walker-77";
const FROM_SEQ: u64 = ROUNDS - 1;

fn bench(c: &mut Criterion) {
    let benchmarking = std::env::args().any(|argument| argument == "--bench");
    let beings = if benchmarking { CROWD_BEINGS } else { CROWD_BEINGS_IN_TEST_MODE };
    let mut fixture = Fixture::load(Path::new("fixtures/crowd.toml")).expect("crowd fixture");
    fixture.generate[0].count = beings;
    let dir = tempfile::tempdir().expect("folder");
    let land_dir = dir.path().join("land");
    let options = EngineOptions {
        snapshot_every_facts: Some(SNAPSHOT_EVERY_FACTS.min(beings)),
        snapshot_spacing_step_bytes: None,
        ticks: Some(ROUNDS),
        seed: 0,
        threads: THREADS,
        land_dir: land_dir.clone(),
        trace_file: None,
        progress: std::sync::Arc::new(seed::progress::NoProgress),
        model: None,
        mode: seed::engine::Mode::Simulation,
        store: Default::default(),
    };
    seed::engine::simulate(&fixture, &options).expect("simulate the crowd");
    let (substrate, _) = substrate_for(&fixture, &[]).expect("definitions");
    let land = seed::land::Land::open(&land_dir).expect("open the land");
    // What `seed verify` does after a clean verification.
    let schemas = seed::world::CoreSchemas::new();
    let mode = seed::check::SignatureMode::Batch { batch_facts: 256 };
    let verified = seed::check::verify_land(land.store(), mode, THREADS, schemas.rules(land.limits())).expect("verify");
    let (facts, _) = verified.verified_digest.expect("a clean land");
    let vouched = seed::snapshots::vouch(&land, facts).expect("vouch");
    assert!(vouched.refused.is_empty() && !vouched.vouched.is_empty(), "{vouched:?}");
    let being = land.resolve(BEING).expect("the being");
    let options = ReplayOptions { from_seq: FROM_SEQ, ..ReplayOptions::default() };
    let store = land.store();
    let replay = |worlds: Option<&VouchedWorlds<'_>>| {
        let replayer = Replayer::new(store, &substrate, being, options).expect("replayer");
        let replayer = match worlds {
            Some(worlds) => replayer.with_snapshots(worlds),
            None => replayer,
        };
        let report = replayer.run().expect("replay");
        assert!(report.clean() && report.moments.len() == 2, "{report:?}");
        report
    };

    let mut group = c.benchmark_group("snapshots");
    group.sample_size(10);
    group.bench_function("reference_replay_latest_moments_from_genesis", |b| b.iter(|| replay(None)));
    group.bench_function("replay_latest_moments_from_a_snapshot", |b| {
        b.iter(|| {
            let worlds = VouchedWorlds::open(&land_dir, store, land.root(), false).expect("snapshots");
            replay(Some(&worlds));
            assert!(!worlds.usage().used.is_empty(), "a snapshot was used");
        })
    });
    group.finish();
    land.close().expect("close");
}

fn print_figures() {
    let (Some(reference), Some(snapshotted)) = (
        rate("snapshots/reference_replay_latest_moments_from_genesis", 1.0),
        rate("snapshots/replay_latest_moments_from_a_snapshot", 1.0),
    ) else {
        return;
    };
    println!("\n== figures of this run (replays of {BEING}'s last two moments per second, 130,006-fact land) ==");
    println!("folding from genesis (reference)           {reference:>8.2}/s  ({:.3} s each)", 1.0 / reference);
    println!(
        "from the vouched snapshot before them      {snapshotted:>8.2}/s  ({:.3} s each) = {:.1}x the reference",
        1.0 / snapshotted,
        snapshotted / reference
    );
}

criterion_group!(benches, bench);

fn main() {
    seed::configure_allocator();
    benches();
    Criterion::default().configure_from_args().final_summary();
    if std::env::args().any(|argument| argument == "--bench") {
        print_figures();
    }
}
