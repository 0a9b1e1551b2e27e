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
//! - on PostgreSQL with 1, 2, 4 and 8 workers each held to an eighth of a
//!   core by a CPU cgroup (skipped, saying why, where the benchmark may not
//!   make one): workers on separate machines, emulated on two cores, which
//!   docs/scale.md's arithmetic for larger pools is checked against;
//!
//! each as a ratio to raw Ed25519 signing on one thread, measured in the same
//! run. Issue 50's target: the pool with one worker at least 60% of the
//! folder's rate, and two workers faster than one.
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
use criterion::{criterion_group, BenchmarkId, Criterion, SamplingMode, Throughput};
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
        snapshot_spacing_step_bytes: None,
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

/// Each throttled worker's share of one core, in thousandths: eight such
/// workers fit in one core, leaving the other to the driver and the server,
/// so adding workers adds CPU as separate machines would (slower ones).
const THROTTLED_WORKER_CPU_PER_MILLE: u64 = 125;
/// The CFS period the throttle's quota is counted in: short, so a worker
/// runs often and briefly, like a slower processor, rather than for long
/// stretches with long stops between them.
const THROTTLE_PERIOD_MICROS: u64 = 10_000;
const THROTTLED_WORKER_COUNTS: [usize; 4] = [1, 2, 4, 8];

/// A CPU cgroup holding one worker process to a share of one core (cgroup
/// v1's `cpu` controller or v2's `cpu.max`; both need root). Removed when
/// dropped, once the worker in it has exited.
struct CpuThrottle {
    dir: PathBuf,
}

impl CpuThrottle {
    fn new(name: &str, per_mille: u64) -> std::io::Result<CpuThrottle> {
        let quota_micros = THROTTLE_PERIOD_MICROS * per_mille / 1000;
        let name = format!("seed-bench-{}-{name}", std::process::id());
        let v1 = Path::new("/sys/fs/cgroup/cpu");
        if v1.join("cpu.cfs_quota_us").exists() {
            let dir = v1.join(name);
            std::fs::create_dir(&dir)?;
            let throttle = CpuThrottle { dir };
            std::fs::write(throttle.dir.join("cpu.cfs_period_us"), THROTTLE_PERIOD_MICROS.to_string())?;
            std::fs::write(throttle.dir.join("cpu.cfs_quota_us"), quota_micros.to_string())?;
            return Ok(throttle);
        }
        let dir = Path::new("/sys/fs/cgroup").join(name);
        std::fs::create_dir(&dir)?;
        let throttle = CpuThrottle { dir };
        std::fs::write(throttle.dir.join("cpu.max"), format!("{quota_micros} {THROTTLE_PERIOD_MICROS}"))?;
        Ok(throttle)
    }

    /// Moves a process (all its threads, and every thread it starts later)
    /// into the throttle.
    fn hold(&self, child: &Child) -> std::io::Result<()> {
        std::fs::write(self.dir.join("cgroup.procs"), child.id().to_string())
    }
}

impl Drop for CpuThrottle {
    fn drop(&mut self) {
        // A cgroup is removed with rmdir once no process is left in it.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Whether this machine lets the benchmark throttle a process's CPU; the
/// reason if not.
fn throttling_available() -> std::io::Result<()> {
    CpuThrottle::new("probe", THROTTLED_WORKER_CPU_PER_MILLE).map(drop)
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
        measure_pool(&mut group, &cluster, dir.path(), &fixture, &fixture_path, workers, None);
    }
    // Workers on separate machines, emulated: each worker held to an eighth
    // of a core, so up to eight of them add CPU the way machines would
    // (docs/scale.md checks its arithmetic against these).
    match throttling_available() {
        Ok(()) => {
            group.sampling_mode(SamplingMode::Flat);
            for workers in THROTTLED_WORKER_COUNTS {
                let throttle = Some(THROTTLED_WORKER_CPU_PER_MILLE);
                measure_pool(&mut group, &cluster, dir.path(), &fixture, &fixture_path, workers, throttle);
            }
        }
        Err(error) => {
            eprintln!("skipped: pool/crowd_round_postgres_throttled_workers (cannot make a CPU cgroup: {error})")
        }
    }
    group.finish();
}

/// Plants the crowd on a fresh PostgreSQL database, starts `workers` worker
/// processes (each held to `throttle` thousandths of a core if given) and
/// measures the driver's rounds.
fn measure_pool(
    group: &mut criterion::BenchmarkGroup<criterion::measurement::WallTime>,
    cluster: &postgres::Cluster,
    dir: &Path,
    fixture: &Fixture,
    fixture_path: &Path,
    workers: usize,
    throttle: Option<u64>,
) {
    let name = match throttle {
        None => "crowd_round_postgres_workers",
        Some(_) => "crowd_round_postgres_throttled_workers",
    };
    let land = dir.join(format!("{name}-{workers}"));
    let store = seed::land::StoreLocation::Postgres { url: cluster.fresh_database() };
    let mut driver = PoolDriver::plant(fixture, &options(land.clone(), store)).expect("plant on PostgreSQL");
    let mut children = start_workers(workers, &land, fixture_path);
    let throttles: Vec<CpuThrottle> = match throttle {
        None => Vec::new(),
        Some(per_mille) => children
            .iter()
            .enumerate()
            .map(|(index, child)| {
                let throttle = CpuThrottle::new(&format!("worker-{index}"), per_mille).expect("a CPU cgroup");
                throttle.hold(child).expect("a worker into its CPU cgroup");
                throttle
            })
            .collect(),
    };
    cluster.psql("postgres", "CHECKPOINT");
    // A worker that exits before the run ends stops the benchmark.
    let mut watch = || -> Result<(), EngineError> {
        match children.iter_mut().find_map(|child| child.try_wait().ok().flatten()) {
            Some(status) => Err(EngineError::WorkersGone { reason: format!("a worker exited ({status})") }),
            None => Ok(()),
        }
    };
    group.bench_with_input(BenchmarkId::new(name, workers), &workers, |b, _| {
        b.iter(|| driver.round(&mut watch).expect("round"))
    });
    let summary = driver.finish(std::time::Instant::now()).expect("finish the run");
    assert_eq!(summary.failures, 0, "{:?}", summary.failure_reasons);
    for child in &mut children {
        assert!(child.wait().expect("worker").success(), "a worker failed");
    }
    drop(throttles);
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
            if workers == 1 { " (target >= 60%)" } else { "" }
        );
    }
    // Throttled workers against the one-worker rate scaled to their share of
    // a core: what they would seal if only their CPU bounded them.
    let share = THROTTLED_WORKER_CPU_PER_MILLE as f64 / 1000.0;
    let one_worker = rate("pool/crowd_round_postgres_workers/1", beings);
    let one_throttled = rate("pool/crowd_round_postgres_throttled_workers/1", beings);
    for workers in THROTTLED_WORKER_COUNTS {
        let Some(pooled) = rate(&format!("pool/crowd_round_postgres_throttled_workers/{workers}"), beings) else {
            continue;
        };
        print!("crowd, PostgreSQL, {workers} worker(s) at {share:.3} core {pooled:>8.0}/s");
        if let Some(one) = one_throttled {
            print!("  = {:>4.2}x 1 throttled worker", pooled / one);
        }
        if let Some(one) = one_worker {
            print!(
                ", {:>5.1}% of {workers} x {share:.3} x 1 unthrottled worker",
                100.0 * pooled / (workers as f64 * share * one)
            );
        }
        println!();
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
