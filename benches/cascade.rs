//! Cascade against a direct world signal, in the same run: a crier in a
//! hall publishes `house.news` every other round, and 10,000 beings in the
//! hall's 100 rooms wake on it and act. On the cascade land the hall is
//! marked and the relay extension's handler delivers the signal to each
//! room (1 signal and 100 delivery facts), and the beings wake on the
//! arrival (their flow reads `cascade.depth`); on the direct land the hall is
//! not marked and the beings wake because their flow reads
//! `world.house.news`. One iteration is the crier's round and the round in
//! which the 10,000 wake: beings reached per second. The two lands run
//! round pair for round pair (ABBA), so the machine's drift and the lands'
//! growth fall on both alike; the cascade's rate against the direct
//! signal's is the figure (docs/performance.md).
//!
//! Under `cargo test --benches` (no `--bench` argument) 200 beings in 10
//! rooms keep the suite fast; the figures come from `cargo bench`.

mod common;

use criterion::{criterion_group, Criterion};
use seed::engine::fixture::Fixture;
use seed::engine::{Engine, EngineOptions};
use std::path::Path;
use std::time::Duration;

#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

const BEINGS: u64 = 10_000;
const ROOMS: u64 = 100;
const BEINGS_IN_TEST_MODE: u64 = 200;
const ROOMS_IN_TEST_MODE: u64 = 10;
const THREADS: usize = 2;
/// Iterations (a crier's round and the waking round) of each land, interleaved.
const ITERATION_PAIRS: usize = 8;

/// The hall world, written into `dir`: marked for cascade or not, its
/// beings reading the arrival or the signal.
fn hall_world(dir: &Path, cascade: bool, beings: u64, rooms: u64) -> Fixture {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut text = format!(
        "name = \"hall\"\ntick_ms = 10000\nticks = 2\nroles = [{:?}, {:?}]\nextensions = {:?}\n\n\
         [[space]]\npath = \"/hall\"\nkind = \"house\"\nqualities = {{ cascade = {cascade} }}\n",
        repository.join("roles"),
        repository.join("fixtures/roles"),
        repository.join("extensions"),
    );
    let homes: Vec<String> = (0..rooms).map(|room| format!("/hall/r{room}")).collect();
    for home in &homes {
        text.push_str(&format!("\n[[space]]\npath = {home:?}\nkind = \"room\"\n"));
    }
    text.push_str("\n[[being]]\nname = \"crier\"\nhome = \"/hall\"\ndefault_role = \"relay:crier\"\nwake_every = 2\n");
    let reads = if cascade { r#""cascade.depth" = { gte = 1 }"# } else { r#""world.house.news" = { present = true }"# };
    text.push_str(&format!(
        "\n[[generate]]\ncount = {beings}\nhomes = {homes:?}\ntemplate = {{ name = \"listener-{{i}}\", home = \"/\", \
         default_role = \"onlooker\", flow = [ {{ when = {{ {reads} }}, role = \"onlooker\" }} ] }}\n"
    ));
    let path = dir.join(if cascade { "cascade.toml" } else { "direct.toml" });
    std::fs::write(&path, text).expect("the hall world is written");
    Fixture::load(&path).expect("the hall world loads")
}

fn options(land_dir: std::path::PathBuf) -> EngineOptions {
    EngineOptions {
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
    }
}

/// The crier's round and the round the listeners wake in; the moments run.
fn iteration(engine: &mut Engine) -> u64 {
    let before = engine.summary.moments;
    engine.round().expect("the crier's round");
    engine.round().expect("the waking round");
    engine.summary.moments - before
}

static RATES: std::sync::OnceLock<(f64, f64)> = std::sync::OnceLock::new();

fn bench(c: &mut Criterion) {
    let benchmarking = std::env::args().any(|argument| argument == "--bench");
    let (beings, rooms) = if benchmarking { (BEINGS, ROOMS) } else { (BEINGS_IN_TEST_MODE, ROOMS_IN_TEST_MODE) };
    let dir = tempfile::tempdir().expect("a folder");
    let cascading = hall_world(dir.path(), true, beings, rooms);
    let direct = hall_world(dir.path(), false, beings, rooms);
    let mut cascade_land = Engine::plant(&cascading, &options(dir.path().join("cascade"))).expect("planted");
    let mut direct_land = Engine::plant(&direct, &options(dir.path().join("direct"))).expect("planted");
    // Round 1 wakes everyone once (a first moment); round 2 is the crier's.
    cascade_land.round().expect("a first round");
    direct_land.round().expect("a first round");
    // Each land's every iteration wakes every listener, and the crier.
    for (land, name) in [(&mut cascade_land, "cascade"), (&mut direct_land, "direct")] {
        let moments = iteration(land);
        assert_eq!(moments, beings + 1, "{name}: every listener woke, and the crier");
    }
    let pairs = if benchmarking { ITERATION_PAIRS } else { 1 };
    let (cascade_time, direct_time) = common::interleaved(
        pairs,
        || {
            iteration(&mut cascade_land);
        },
        || {
            iteration(&mut direct_land);
        },
    );
    let rate = |time: Duration| (pairs as u64 * beings) as f64 / time.as_secs_f64();
    let _ = RATES.set((rate(cascade_time), rate(direct_time)));
    let mut group = c.benchmark_group("cascade");
    group.throughput(criterion::Throughput::Elements(beings));
    group.sample_size(10);
    group.bench_function("fanned_out_to_the_rooms", |b| b.iter(|| iteration(&mut cascade_land)));
    group.bench_function("direct_world_signal", |b| b.iter(|| iteration(&mut direct_land)));
    group.finish();
    for land in [cascade_land, direct_land] {
        let summary = land.finish().expect("finish");
        assert_eq!(summary.failures, 0, "{:?}", summary.failure_reasons);
    }
}

fn print_ratios() {
    let Some((cascade, direct)) = RATES.get() else { return };
    println!("\n== figures of this run (beings reached per second: the crier's round and the waking round) ==");
    println!("direct world signal (reference)       {direct:>10.0}/s");
    println!(
        "cascade to 100 rooms, interleaved      {cascade:>10.0}/s  = {:.1}% of the direct signal's",
        100.0 * cascade / direct
    );
    if let (Some(cascade), Some(direct)) = (
        common::rate("cascade/fanned_out_to_the_rooms", BEINGS as f64),
        common::rate("cascade/direct_world_signal", BEINGS as f64),
    ) {
        println!("criterion means: cascade {cascade:.0}/s, direct {direct:.0}/s = {:.1}%", 100.0 * cascade / direct);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(20)).warm_up_time(Duration::from_secs(3));
    targets = bench
}

fn main() {
    seed::configure_allocator();
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_ratios();
}
