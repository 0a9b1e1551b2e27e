//! `seed up`: the land running live, with the portal.

use anyhow::{bail, Context, Result};
use seed::engine::fixture::Fixture;
use seed::engine::{Engine, EngineOptions};
use seed::portal::live::LiveLand;
use seed::portal::PortalLimits;
use seed::store::runner::RUNNER_LEASE_MS_DEFAULT;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

pub struct UpArguments {
    pub fixture: Option<PathBuf>,
    pub addr: String,
    pub round_ms: u64,
    pub threads: usize,
    pub limits: PortalLimits,
    pub lifetime_s: Option<u64>,
    pub runner_lease_ms: u64,
    pub llm: Option<PathBuf>,
    /// Where a land planted by this start keeps its facts.
    pub store: seed::land::StoreLocation,
    /// The start and stop lines as JSON.
    pub json: bool,
}

/// Resolves on SIGTERM (never where there is no such signal handler).
async fn terminate() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut signal) => {
            signal.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}

/// The shortest runner lease `seed up` takes, in milliseconds.
const RUNNER_LEASE_MS_MIN: u64 = 300;

/// The runner lease this process holds on a land several processes can
/// open (`store/runner.rs`), renewed on a thread of its own every third of
/// it. When a renewal finds the lease taken, the portal stops: the store
/// refuses this process's writes from then on anyway.
struct RunnerLeaseHeld {
    epoch: u64,
    stopping: Arc<std::sync::atomic::AtomicBool>,
    lost: Arc<std::sync::atomic::AtomicBool>,
    renewing: std::thread::JoinHandle<()>,
}

impl RunnerLeaseHeld {
    /// Takes the lease (`None`: the store needs none), or says who holds it.
    fn take(
        live: &Arc<LiveLand>,
        bound: std::net::SocketAddr,
        lease_ms: u64,
        stop_portal: Arc<tokio::sync::watch::Sender<bool>>,
    ) -> Result<Option<RunnerLeaseHeld>> {
        use std::sync::atomic::{AtomicBool, Ordering};
        let Some(leases) = live.store().runner_lease() else { return Ok(None) };
        let holder = format!("seed up at http://{bound}/, pid {}", std::process::id());
        let Some(epoch) = leases.take_runner(&holder, lease_ms)? else {
            let running = leases.runner()?.map_or_else(|| "another process".to_string(), |runner| runner.holder);
            bail!(
                "this land is running live in another process ({running}): one process runs a live land; \
                 open that portal, or stop that process (if it died, its hold runs out within its \
                 --runner-lease-ms, {RUNNER_LEASE_MS_DEFAULT} ms unless it was started with another)"
            );
        };
        let (stopping, lost) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let (live, stopping_thread, lost_thread) = (live.clone(), stopping.clone(), lost.clone());
        let renewing = std::thread::Builder::new()
            .name("seed-runner-lease".into())
            .spawn(move || {
                let step = std::time::Duration::from_millis(lease_ms / 3);
                while !stopping_thread.load(Ordering::SeqCst) {
                    std::thread::park_timeout(step);
                    if stopping_thread.load(Ordering::SeqCst) {
                        break;
                    }
                    let Some(leases) = live.store().runner_lease() else { break };
                    match leases.renew_runner(epoch, lease_ms) {
                        Ok(true) => {}
                        Ok(false) => {
                            tracing::error!(epoch, "another process took this land's runner lease; stopping");
                            lost_thread.store(true, Ordering::SeqCst);
                            live.stop_rounds();
                            let _ = stop_portal.send(true);
                            break;
                        }
                        // The next renewal tries again; the lease holds meanwhile.
                        Err(error) => tracing::warn!(%error, "renewing the runner lease failed"),
                    }
                }
            })
            .context("starting the runner lease's thread")?;
        Ok(Some(RunnerLeaseHeld { epoch, stopping, lost, renewing }))
    }

    /// Stops renewing and lets the lease go (unless it was lost): `true`
    /// when another process took it.
    fn release(self, live: &LiveLand) -> Result<bool> {
        use std::sync::atomic::Ordering;
        self.stopping.store(true, Ordering::SeqCst);
        self.renewing.thread().unpark();
        let _ = self.renewing.join();
        let lost = self.lost.load(Ordering::SeqCst);
        if !lost {
            if let Some(leases) = live.store().runner_lease() {
                leases.release_runner(self.epoch)?;
            }
        }
        Ok(lost)
    }
}

/// The fixture this demo world comes from when none is named.
pub const DEFAULT_FIXTURE: &str = "fixtures/court.toml";

/// Where to listen: an IP and port, or a host name the system resolves
/// (`localhost:7777`), its IPv4 address first when it has one.
fn listen_address(text: &str) -> Result<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    let fail = || format!("--addr {text:?} is not HOST:PORT (e.g. 127.0.0.1:7777 or localhost:7777)");
    if let Ok(address) = text.parse() {
        return Ok(address);
    }
    let mut found: Vec<std::net::SocketAddr> = text.to_socket_addrs().with_context(fail)?.collect();
    found.sort_by_key(|address| !address.is_ipv4());
    found.first().copied().with_context(fail)
}

pub fn up(land_dir: &Path, arguments: UpArguments) -> Result<ExitCode> {
    if arguments.round_ms == 0 {
        bail!("--round-ms must be at least 1");
    }
    if arguments.runner_lease_ms < RUNNER_LEASE_MS_MIN {
        bail!("--runner-lease-ms must be at least {RUNNER_LEASE_MS_MIN} (it is renewed every third of it)");
    }
    let addr = listen_address(&arguments.addr)?;
    let model: Option<Arc<dyn seed::llm::LanguageModel>> = match &arguments.llm {
        Some(path) => {
            let connections = seed::llm_http::connections::Connections::load(path)?;
            Some(Arc::new(seed::llm_http::client::LlmClient::new(connections)?))
        }
        None => None,
    };
    let planted = land_dir.join(seed::land::LAND_META_FILE).is_file();
    // A land planted before runs the definitions it recorded, unless told otherwise.
    let fixture_path = match (&arguments.fixture, planted) {
        (Some(path), _) => path.clone(),
        (None, true) => super::replay::recorded_fixture(land_dir)?.unwrap_or_else(|| PathBuf::from(DEFAULT_FIXTURE)),
        (None, false) => PathBuf::from(DEFAULT_FIXTURE),
    };
    let fixture = Fixture::load(&fixture_path)?;
    let options = EngineOptions {
        snapshot_every_facts: None,
        store: arguments.store.clone(),
        ticks: None,
        seed: 0,
        threads: arguments.threads.max(1),
        land_dir: land_dir.to_path_buf(),
        trace_file: None,
        progress: std::sync::Arc::new(seed::progress::NoProgress),
        model,
        mode: seed::engine::Mode::Live,
    };
    let mut engine = if planted { Engine::reopen(&fixture, &options)? } else { Engine::plant(&fixture, &options)? };
    if !planted {
        super::replay::record_definitions(land_dir, &fixture_path, 0, &[])?;
    }
    let token = engine.operator_token.take();
    let live = LiveLand::new(engine)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("seed-portal")
        .build()
        .context("starting the portal's runtime")?;
    let listener =
        runtime.block_on(tokio::net::TcpListener::bind(addr)).with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr()?;
    let (stop_portal, shutdown) = tokio::sync::watch::channel(false);
    let stop_portal = Arc::new(stop_portal);
    // One process runs a live land: where others can open it, this one
    // holds the land's runner lease while it is up.
    let lease = RunnerLeaseHeld::take(&live, bound, arguments.runner_lease_ms, stop_portal.clone())?;
    let rounds = live.start_rounds(arguments.round_ms);
    let served = runtime.block_on(async {
        let beings = live.world().beings.len();
        if arguments.json {
            let start = serde_json::json!({"event": "up", "url": format!("http://{bound}/"), "address": bound.to_string(),
                "land": land_dir, "world": fixture.name, "beings": beings, "operatorToken": token});
            println!("{start}");
        } else {
            println!("seed is up: http://{bound}/");
            println!("land      {}", land_dir.display());
            println!("world     {} ({beings} beings)", fixture.name);
            match &token {
                Some(token) => println!("operator token (shown once, keep it): {token}"),
                None => println!("operator token: the one printed when this land was planted"),
            }
        }
        use std::io::Write;
        std::io::stdout().flush()?;
        let router = seed::portal::router(live.clone(), arguments.limits, shutdown.clone());
        let lifetime = arguments.lifetime_s;
        let stopping_live = live.clone();
        tokio::spawn(async move {
            let lifetime = async {
                match lifetime {
                    Some(seconds) => tokio::time::sleep(std::time::Duration::from_secs(seconds)).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; stopping (interrupt again to exit at once)"),
                _ = terminate() => tracing::info!("terminated; stopping"),
                _ = lifetime => {}
            }
            // No round starts after the signal; the one running finishes.
            stopping_live.stop_rounds();
            let _ = stop_portal.send(true);
            if tokio::signal::ctrl_c().await.is_ok() {
                // Every acknowledged fact is already durable.
                tracing::warn!("interrupted again; exiting without waiting");
                std::process::exit(130);
            }
        });
        let header_read_timeout = std::time::Duration::from_millis(arguments.limits.header_read_timeout_ms);
        seed::portal::serve::serve(listener, router, shutdown, header_read_timeout).await;
        Ok::<(), anyhow::Error>(())
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    live.stop()?;
    let _ = rounds.join();
    let lease_lost = lease.map(|lease| lease.release(&live)).transpose()?.unwrap_or(false);
    served?;
    if lease_lost {
        bail!(
            "another process took this land's runner lease (this one did not renew it in time): \
             this process stopped; what it sealed before is sealed"
        );
    }
    if arguments.json {
        println!("{}", serde_json::json!({"event": "down"}));
    } else {
        println!("seed is down: the land is closed");
    }
    Ok(ExitCode::SUCCESS)
}
