//! A simulation served by a pool of `seed worker` processes (docs/scale.md):
//! sealed moments per second of the crowd (fixtures/crowd.toml: every being
//! woken every round, every moment ending in an act), one iteration per
//! round,
//!
//! - in one process on the land folder, one thread (the reference a land
//!   outgrows);
//! - on PostgreSQL (a throwaway cluster on a unix socket), in one process
//!   without a pool, and with the driver in this process and 1, 2 and 3
//!   worker processes of one thread each;
//!
//! each as a ratio to raw Ed25519 signing on one thread, measured in the same
//! run. The issue's target: the pool with one worker at least half the
//! folder's rate.
//!
//! Each PostgreSQL measurement starts from a `CHECKPOINT`, so the log an
//! earlier measurement wrote is not flushed during it.
//!
//! Under `cargo test --benches` (no `--bench` argument) the crowd shrinks to
//! 200 beings so the suite stays fast; the figures come from `cargo bench`.

mod common;
// The throwaway cluster the PostgreSQL tests start.
#[path = "../tests/common/postgres.rs"]
#[allow(dead_code)]
mod postgres;

use common::rate;
use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use ed25519_dalek::{Signer, SigningKey};
use seed::engine::fixture::Fixture;
use seed::engine::pool::PoolDriver;
use seed::engine::{Engine, EngineError, EngineOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

/// A benchmark measures on the allocator the `seed` binary uses.
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

const CROWD_BEINGS: u64 = 10_000;
const CROWD_BEINGS_IN_TEST_MODE: u64 = 200;
const WORKER_COUNTS: [usize; 3] = [1, 2, 3];

fn crowd_beings() -> u64 {
    if std::env::args().any(|argument| argument == "--bench") {
        CROWD_BEINGS
    } else {
        CROWD_BEINGS_IN_TEST_MODE
    }
}

/// fixtures/crowd.toml with `beings` beings and its folders absolute, in
/// `dir`: the driver and its workers load this one file.
fn crowd_fixture(dir: &Path, beings: u64) -> PathBuf {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(Path::new(root).join("fixtures/crowd.toml")).expect("crowd fixture");
    let text = text
        .replace(r#"roles = ["../roles", "roles"]"#, &format!(r#"roles = ["{root}/roles", "{root}/fixtures/roles"]"#))
        .replace(r#"extensions = "../extensions""#, &format!(r#"extensions = "{root}/extensions""#))
        .replace("count = 10000", &format!("count = {beings}"));
    let path = dir.join("crowd.toml");
    std::fs::write(&path, text).expect("write the fixture");
    path
}

fn options(land_dir: PathBuf, store: seed::land::StoreLocation) -> EngineOptions {
    EngineOptions {
        snapshot_every_facts: None,
        store,
        ticks: None,
        seed: 0,
        threads: 1,
        land_dir,
        trace_file: None,
        progress: Arc::new(seed::progress::NoProgress),
        model: None,
        mode: seed::engine::Mode::Simulation,
    }
}

fn start_workers(count: usize, land: &Path, fixture: &Path) -> Vec<Child> {
    (0..count)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_seed"))
                .arg("--land")
                .arg(land)
                .arg("worker")
                .arg(fixture)
                .args(["--threads", "1"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .expect("start a worker")
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let beings = crowd_beings();
    let dir = tempfile::tempdir().expect("folder");
    let fixture_path = crowd_fixture(dir.path(), beings);
    let fixture = Fixture::load(&fixture_path).expect("crowd fixture");
    let mut group = c.benchmark_group("pool");
    let key = SigningKey::from_bytes(&[7; 32]);
    let message = [0x89u8; 150];
    group.throughput(Throughput::Elements(1));
    group.bench_function("reference_ed25519_sign", |b| b.iter(|| key.sign(std::hint::black_box(&message))));
    group.throughput(Throughput::Elements(beings));
    group.sample_size(10);

    let mut folder =
        Engine::plant(&fixture, &options(dir.path().join("folder"), Default::default())).expect("plant the crowd");
    group.bench_function("crowd_round_folder", |b| b.iter(|| folder.round().expect("round")));
    folder.finish().expect("finish");

    if !Path::new("/usr/lib/postgresql").is_dir() {
        eprintln!("skipped: pool/crowd_round_postgres (PostgreSQL's server programs are not installed)");
        group.finish();
        return;
    }
    let cluster = postgres::Cluster::start();
    // One process on PostgreSQL, no pool: what the store itself costs.
    let store = seed::land::StoreLocation::Postgres { url: cluster.fresh_database() };
    let mut alone = Engine::plant(&fixture, &options(dir.path().join("alone"), store)).expect("plant on PostgreSQL");
    // Each PostgreSQL measurement starts from a checkpoint, so the write-ahead
    // log an earlier one (or a planting) left is not flushed during it.
    cluster.psql("postgres", "CHECKPOINT");
    group.bench_function("crowd_round_postgres_one_process", |b| b.iter(|| alone.round().expect("round")));
    alone.finish().expect("finish");
    for workers in WORKER_COUNTS {
        let land = dir.path().join(format!("pool-{workers}"));
        let store = seed::land::StoreLocation::Postgres { url: cluster.fresh_database() };
        let mut driver = PoolDriver::plant(&fixture, &options(land.clone(), store)).expect("plant on PostgreSQL");
        let mut children = start_workers(workers, &land, &fixture_path);
        cluster.psql("postgres", "CHECKPOINT");
        // A worker that exits before the run ends stops the benchmark.
        let mut watch = || -> Result<(), EngineError> {
            match children.iter_mut().find_map(|child| child.try_wait().ok().flatten()) {
                Some(status) => Err(EngineError::WorkersGone { reason: format!("a worker exited ({status})") }),
                None => Ok(()),
            }
        };
        group.bench_with_input(BenchmarkId::new("crowd_round_postgres_workers", workers), &workers, |b, _| {
            b.iter(|| driver.round(&mut watch).expect("round"))
        });
        let summary = driver.finish(std::time::Instant::now()).expect("finish the run");
        assert_eq!(summary.failures, 0, "{:?}", summary.failure_reasons);
        for child in &mut children {
            assert!(child.wait().expect("worker").success(), "a worker failed");
        }
    }
    group.finish();
}

fn print_ratios() {
    let beings = CROWD_BEINGS as f64;
    let (Some(sign), Some(folder)) =
        (rate("pool/reference_ed25519_sign", 1.0), rate("pool/crowd_round_folder", beings))
    else {
        return;
    };
    println!("\n== figures of this run (sealed moments per second) ==");
    println!("raw ed25519 sign, 1 thread (reference)   {sign:>10.0}/s");
    println!("crowd, land folder, 1 process            {folder:>10.0}/s  = {:>5.1}% of sign", 100.0 * folder / sign);
    if let Some(alone) = rate("pool/crowd_round_postgres_one_process", beings) {
        println!(
            "crowd, PostgreSQL, 1 process, no pool     {alone:>10.0}/s  = {:>5.1}% of sign, {:>5.1}% of the folder",
            100.0 * alone / sign,
            100.0 * alone / folder
        );
    }
    for workers in WORKER_COUNTS {
        let Some(pooled) = rate(&format!("pool/crowd_round_postgres_workers/{workers}"), beings) else { continue };
        println!(
            "crowd, PostgreSQL, {workers} worker(s)            {pooled:>10.0}/s  = {:>5.1}% of sign, {:>5.1}% of the folder{}",
            100.0 * pooled / sign,
            100.0 * pooled / folder,
            if workers == 1 { " (target >= 50%)" } else { "" }
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(10)).warm_up_time(Duration::from_secs(2));
    targets = bench
}

fn main() {
    // What the `seed` binary does first (src/lib.rs).
    seed::configure_allocator();
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_ratios();
}
