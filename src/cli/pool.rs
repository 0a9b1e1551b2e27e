//! `seed worker`, and the workers `seed sim --workers N` starts on this
//! machine (docs/scale.md, "A pool of workers").

use anyhow::{bail, Result};
use seed::engine::fixture::Fixture;
use seed::engine::pool::WorkerReport;
use seed::engine::{Engine, EngineError, EngineOptions, Mode};
use seed::land::StoreLocation;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;

/// The shortest lease a claim may have: below it, a busy machine would
/// lose claims to the clock rather than to a dead worker.
pub const WORKER_LEASE_MS_MIN: u64 = 100;

pub fn check_lease_ms(lease_ms: u64) -> Result<()> {
    if lease_ms < WORKER_LEASE_MS_MIN {
        bail!("--lease-ms must be at least {WORKER_LEASE_MS_MIN} (got {lease_ms})");
    }
    Ok(())
}

pub struct WorkerArguments<'a> {
    pub seed: u64,
    pub threads: usize,
    pub lease_ms: u64,
    pub llm: Option<&'a Path>,
    pub store: StoreLocation,
    pub json: bool,
}

/// This process's name in the pool: host and process id (a restarted
/// worker is a new one).
fn worker_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = match host.trim() {
        "" => "localhost",
        host => host,
    };
    format!("{host}:{}", std::process::id())
}

/// `seed worker FIXTURE`: serves the pool of the simulation planted in `dir`
/// until its run finishes.
pub fn worker(dir: &Path, fixture_path: &Path, arguments: WorkerArguments) -> Result<ExitCode> {
    let WorkerArguments { seed, threads, lease_ms, llm, store, json } = arguments;
    if !matches!(store, StoreLocation::Postgres { .. }) {
        bail!(
            "{} keeps its facts in its folder: a pool of workers serves a land on PostgreSQL (plant it with \
             `seed --store postgres://… sim --workers N`)",
            dir.display()
        );
    }
    if threads == 0 {
        bail!("--threads must be at least 1");
    }
    check_lease_ms(lease_ms)?;
    let fixture = Fixture::load(fixture_path)?;
    let options = EngineOptions {
        ticks: None,
        seed,
        threads,
        land_dir: dir.to_path_buf(),
        trace_file: None,
        progress: Arc::new(seed::progress::NoProgress),
        model: super::with_mcp_tools(super::load_model(llm)?, &fixture)?,
        mode: Mode::Simulation,
        // The driver writes the snapshots; a worker only seals acts.
        snapshot_every_facts: Some(0),
        snapshot_spacing_step_bytes: None,
        store,
    };
    let mut engine = Engine::join_pool(&fixture, &options)?;
    let name = worker_name();
    tracing::debug!(worker = %name, land = %dir.display(), "serving the pool");
    let report = engine.serve_pool(&fixture, &name, lease_ms, &|| false)?;
    engine.land.close()?;
    print_report(&name, &report, json)?;
    Ok(ExitCode::SUCCESS)
}

fn print_report(name: &str, report: &WorkerReport, json: bool) -> Result<()> {
    if json {
        super::print_json(&serde_json::json!({
            "worker": name,
            "momentsSealed": report.moments_sealed,
            "turnsSealed": report.turns_sealed,
            "turnsLost": report.turns_lost,
            "factsSignedAhead": report.facts_signed_ahead,
            "factsSignedAtTurn": report.facts_signed_at_turn,
        }))
    } else {
        println!(
            "worker {name}: the run finished — {} moments sealed in {} turns, {} turns lost to other workers; {} facts signed ahead of their turn, {} at it",
            report.moments_sealed, report.turns_sealed, report.turns_lost, report.facts_signed_ahead, report.facts_signed_at_turn
        );
        Ok(())
    }
}

/// The `seed worker` processes `seed sim --workers N` starts once the land
/// is planted, watches while rounds wait, and waits for at the end.
pub struct LocalWorkers {
    count: usize,
    land_dir: PathBuf,
    fixture: PathBuf,
    seed: u64,
    threads: usize,
    lease_ms: u64,
    llm: Option<PathBuf>,
    children: Vec<Child>,
}

impl LocalWorkers {
    pub fn new(
        count: usize,
        land_dir: &Path,
        fixture: &Path,
        options: &EngineOptions,
        lease_ms: u64,
        llm: Option<&Path>,
    ) -> LocalWorkers {
        LocalWorkers {
            count,
            land_dir: land_dir.to_path_buf(),
            fixture: fixture.to_path_buf(),
            seed: options.seed,
            threads: options.threads,
            lease_ms,
            llm: llm.map(Path::to_path_buf),
            children: Vec::new(),
        }
    }

    fn start(&mut self) -> Result<(), EngineError> {
        let program = std::env::current_exe()
            .map_err(|error| EngineError::WorkersGone { reason: format!("cannot find the seed binary: {error}") })?;
        for _ in 0..self.count {
            let mut command = Command::new(&program);
            // The store comes from the land's land.toml (a password from PGPASSWORD).
            command.arg("--land").arg(&self.land_dir).arg("worker").arg(&self.fixture);
            command.args(["--seed", &self.seed.to_string(), "--threads", &self.threads.to_string()]);
            command.args(["--lease-ms", &self.lease_ms.to_string()]);
            if let Some(llm) = &self.llm {
                command.arg("--llm").arg(llm);
            }
            let child = command.stdin(Stdio::null()).stdout(Stdio::null()).spawn().map_err(|error| {
                EngineError::WorkersGone { reason: format!("cannot start a worker ({}): {error}", program.display()) }
            })?;
            self.children.push(child);
        }
        Ok(())
    }

    /// Starts the workers at the first wait; after that, an error once any
    /// of them has exited, since the run has not finished.
    pub fn watch(&mut self) -> Result<(), EngineError> {
        if self.children.len() < self.count {
            return self.start();
        }
        for child in &mut self.children {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(EngineError::WorkersGone {
                    reason: format!("worker process {} exited ({status}) before the run finished", child.id()),
                });
            }
        }
        Ok(())
    }

    /// Waits for the workers (they exit when the run is finished); after a
    /// failed run they are stopped.
    pub fn finish(&mut self, run_finished: bool) {
        for child in &mut self.children {
            if !run_finished {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}
