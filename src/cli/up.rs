//! `seed up`: the land running live, with the portal.

use anyhow::{bail, Context, Result};
use seed::engine::fixture::Fixture;
use seed::engine::{Engine, EngineOptions};
use seed::portal::live::LiveLand;
use seed::portal::PortalLimits;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub struct UpArguments {
    pub fixture: Option<PathBuf>,
    pub addr: String,
    pub round_ms: u64,
    pub threads: usize,
    pub limits: PortalLimits,
    pub lifetime_s: Option<u64>,
    pub runner_lease_ms: u64,
    pub llm: Option<PathBuf>,
    /// The URL other lands reach this land at (default: http:// and the bound address).
    pub public_url: Option<String>,
    /// Where a land planted by this start keeps its facts.
    pub store: seed::land::StoreLocation,
    /// The start and stop lines as JSON.
    pub json: bool,
}

/// Handles the signal `kind` from now on (its default, ending the process
/// at once, no longer applies) and resolves when one arrives; never where
/// there is no such signal handler. Registered before `seed up` says it is
/// up: a signal sent as soon as that line is read stops the land cleanly.
fn on_signal(kind: tokio::signal::unix::SignalKind) -> impl std::future::Future<Output = ()> {
    let registered = tokio::signal::unix::signal(kind);
    async move {
        match registered {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    }
}

/// The shortest runner lease `seed up` takes, in milliseconds.
const RUNNER_LEASE_MS_MIN: u64 = 300;

/// Opens the land afresh (a follower taking over).
type Reopen = Box<dyn Fn() -> Result<Engine, seed::engine::EngineError> + Send + Sync>;

/// This process's part in a land several processes can open
/// (`store/runner.rs`): it runs the land, holding the runner lease, or it
/// follows the land another process runs. A thread of its own, every third
/// of the lease, renews the lease (a renewal that finds it taken stops the
/// portal: the store refuses this process's writes from then on anyway), or
/// looks whether the runner let go and, if so, takes the land over.
struct LandHold {
    keeper: Arc<Keeper>,
    keeping: std::thread::JoinHandle<()>,
}

impl LandHold {
    /// Takes the lease or follows its holder (`None`: the store needs none).
    fn start(
        live: &Arc<LiveLand>,
        bound: std::net::SocketAddr,
        lease_ms: u64,
        stop_portal: Arc<tokio::sync::watch::Sender<bool>>,
        reopen: Reopen,
    ) -> Result<Option<LandHold>> {
        let Some(leases) = live.store().runner_lease() else { return Ok(None) };
        let holder = format!("seed up at http://{bound}/, pid {}", std::process::id());
        let epoch = match leases.take_runner(&holder, lease_ms)? {
            Some(epoch) => epoch,
            None => {
                let running = leases.runner()?.map_or_else(|| "another process".to_string(), |runner| runner.holder);
                live.follow(running);
                0
            }
        };
        let keeper = Arc::new(Keeper {
            live: live.clone(),
            holder,
            lease_ms,
            epoch: AtomicU64::new(epoch),
            store: Mutex::new(live.store_shared()),
            stopping: AtomicBool::new(false),
            lost: AtomicBool::new(false),
            stop_portal,
            reopen,
        });
        let kept = keeper.clone();
        let keeping = std::thread::Builder::new()
            .name("seed-runner-lease".into())
            .spawn(move || kept.keep())
            .context("starting the runner lease's thread")?;
        Ok(Some(LandHold { keeper, keeping }))
    }

    /// Stops keeping the lease and lets it go when this process holds it:
    /// `true` when another process took it away.
    fn release(self) -> Result<bool> {
        let keeper = &self.keeper;
        keeper.stopping.store(true, Ordering::SeqCst);
        self.keeping.thread().unpark();
        let _ = self.keeping.join();
        let lost = keeper.lost.load(Ordering::SeqCst);
        let epoch = keeper.epoch.load(Ordering::SeqCst);
        if !lost && epoch != 0 {
            let store = keeper.store.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(leases) = store.runner_lease() {
                leases.release_runner(epoch)?;
            }
        }
        Ok(lost)
    }
}

/// What the lease's thread and the process share.
struct Keeper {
    live: Arc<LiveLand>,
    holder: String,
    lease_ms: u64,
    /// The lease's epoch while this process runs the land (0: following).
    epoch: AtomicU64,
    /// The store that holds the lease (the one the running engine writes to).
    store: Mutex<Arc<dyn seed::store::Store>>,
    stopping: AtomicBool,
    /// Another process took the lease from this one.
    lost: AtomicBool,
    stop_portal: Arc<tokio::sync::watch::Sender<bool>>,
    reopen: Reopen,
}

impl Keeper {
    fn keep(&self) {
        let step = std::time::Duration::from_millis(self.lease_ms / 3);
        while !self.stopping.load(Ordering::SeqCst) {
            std::thread::park_timeout(step);
            if self.stopping.load(Ordering::SeqCst) {
                break;
            }
            let store = self.store.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let Some(leases) = store.runner_lease() else { break };
            let epoch = self.epoch.load(Ordering::SeqCst);
            if epoch == 0 {
                if let Err(error) = self.take_over_if_free(leases) {
                    tracing::warn!(%error, "looking whether the land's runner let go failed");
                }
                continue;
            }
            match leases.renew_runner(epoch, self.lease_ms) {
                Ok(true) => {}
                Ok(false) => {
                    tracing::error!(epoch, "another process took this land's runner lease; stopping");
                    self.lost.store(true, Ordering::SeqCst);
                    self.live.stop_rounds();
                    let _ = self.stop_portal.send(true);
                    break;
                }
                // The next renewal tries again; the lease holds meanwhile.
                Err(error) => tracing::warn!(%error, "renewing the runner lease failed"),
            }
        }
    }

    /// A follower whose runner let go (stopped, or died and its lease ran
    /// out) opens the land afresh, takes the lease on that engine's store
    /// and runs the land from then on.
    fn take_over_if_free(&self, leases: &dyn seed::store::runner::RunnerLease) -> Result<()> {
        match leases.runner()? {
            Some(runner) if runner.live => {
                if self.live.following().as_deref() != Some(runner.holder.as_str()) {
                    self.live.follow(runner.holder);
                }
                return Ok(());
            }
            _ => {}
        }
        let engine = (self.reopen)()?;
        let store = engine.land.shared_store();
        let taken = match store.runner_lease() {
            Some(leases) => leases.take_runner(&self.holder, self.lease_ms)?,
            None => None,
        };
        match taken {
            Some(epoch) => {
                self.live.take_over(engine)?;
                *self.store.lock().unwrap_or_else(|p| p.into_inner()) = store;
                self.epoch.store(epoch, Ordering::SeqCst);
                tracing::info!(epoch, "the land's runner let go: this process runs the land now");
            }
            // Another follower was quicker.
            None => {
                engine.close()?;
            }
        }
        Ok(())
    }
}

/// How a live land's engine is opened (by `seed up` at start and to take a
/// land over, and by `seed mcp`).
pub(super) fn engine_options(
    land_dir: &Path,
    store: &seed::land::StoreLocation,
    threads: usize,
    model: Option<Arc<dyn seed::llm::LanguageModel>>,
) -> EngineOptions {
    EngineOptions {
        snapshot_every_facts: None,
        snapshot_spacing_step_bytes: None,
        store: store.clone(),
        ticks: None,
        seed: 0,
        threads: threads.max(1),
        land_dir: land_dir.to_path_buf(),
        trace_file: None,
        progress: std::sync::Arc::new(seed::progress::NoProgress),
        model,
        mode: seed::engine::Mode::Live,
    }
}

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

/// The model a live land's LLM beings ask: the connections file's client, or none.
pub(super) fn model_of(connections_file: Option<&Path>) -> Result<Option<Arc<dyn seed::llm::LanguageModel>>> {
    let Some(path) = connections_file else { return Ok(None) };
    let connections = seed::llm_http::connections::Connections::load(path)?;
    Ok(Some(Arc::new(seed::llm_http::client::LlmClient::new(connections)?)))
}

pub fn up(land_dir: &Path, arguments: UpArguments) -> Result<ExitCode> {
    if arguments.round_ms == 0 {
        bail!("--round-ms must be at least 1");
    }
    if arguments.runner_lease_ms < RUNNER_LEASE_MS_MIN {
        bail!("--runner-lease-ms must be at least {RUNNER_LEASE_MS_MIN} (it is renewed every third of it)");
    }
    let addr = listen_address(&arguments.addr)?;
    let public_url =
        arguments.public_url.as_deref().map(seed::canopy::normalize_peer_url).transpose().context("--public-url")?;
    let model = model_of(arguments.llm.as_deref())?;
    let planted = land_dir.join(seed::land::LAND_META_FILE).is_file();
    // A land planted before runs the definitions it recorded, unless told
    // otherwise; with neither, the demo world built into the binary.
    let (fixture_path, staged) = match (&arguments.fixture, planted) {
        (Some(path), _) => (path.clone(), None),
        (None, true) => match super::replay::recorded_fixture(land_dir)? {
            Some(recorded) => (recorded, None),
            None => (super::demo_world::in_land(land_dir)?, None),
        },
        (None, false) => {
            let staged = super::demo_world::stage()?;
            (staged.fixture.clone(), Some(staged))
        }
    };
    let mut fixture = Fixture::load(&fixture_path)?;
    let model = super::with_mcp_tools(model, &fixture)?;
    let options = engine_options(land_dir, &arguments.store, arguments.threads, model.clone());
    let mut engine = if planted { Engine::reopen(&fixture, &options)? } else { Engine::plant(&fixture, &options)? };
    if !planted {
        // The demo world was planted from a staged copy (a land's folder is
        // empty until planted): the land keeps its own copy from now on.
        if staged.is_some() {
            let kept = super::demo_world::in_land(land_dir)?;
            fixture = Fixture::load(&kept)?;
            super::replay::record_definitions(land_dir, &kept, 0, &[])?;
        } else {
            super::replay::record_definitions(land_dir, &fixture_path, 0, &[])?;
        }
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
    let public_url = public_url.unwrap_or_else(|| format!("http://{bound}"));
    let (stop_portal, shutdown) = tokio::sync::watch::channel(false);
    let stop_portal = Arc::new(stop_portal);
    // One process runs a live land: where others can open it, this one
    // holds the land's runner lease while it is up.
    let reopen: Reopen = {
        let (fixture, options) =
            (fixture.clone(), engine_options(land_dir, &arguments.store, arguments.threads, model.clone()));
        Box::new(move || Engine::reopen(&fixture, &options))
    };
    // The portal is built before the first round starts: opening it asks
    // the engine for the land's keys (Canopy), and a round holds the engine
    // while it runs (on a million-being land the first request was answered
    // three seconds after the URL was printed).
    let router = runtime.block_on(async {
        seed::portal::router_reached_at(live.clone(), arguments.limits, shutdown.clone(), Some(public_url.clone()))
    });
    let hold = LandHold::start(&live, bound, arguments.runner_lease_ms, stop_portal.clone(), reopen)?;
    let rounds = live.start_rounds(arguments.round_ms);
    let served = runtime.block_on(async {
        let interrupted = on_signal(tokio::signal::unix::SignalKind::interrupt());
        let terminated = on_signal(tokio::signal::unix::SignalKind::terminate());
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
            println!("canopy    other lands reach this land at {public_url} (its peers: http://{bound}/peers)");
            if let Some(runner) = live.following() {
                println!("following the land another process runs ({runner}): acts are sealed there;");
                println!("          this portal shows the land as it goes and takes over if that process stops");
            }
        }
        use std::io::Write;
        std::io::stdout().flush()?;
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
                _ = interrupted => tracing::info!("interrupted; stopping (interrupt again to exit at once)"),
                _ = terminated => tracing::info!("terminated; stopping"),
                _ = lifetime => {}
            }
            // No round starts after the signal; the one running ends after
            // the moment it is sealing.
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
    let lease_lost = hold.map(LandHold::release).transpose()?.unwrap_or(false);
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

/// The engine of a stopped land, for a verb that seals as the operator on
/// it (`seed config set`, `seed health revive`): opened with the fixture it
/// recorded (or the demo world). `instead` says what to use while `seed up`
/// runs it (which holds the land, so opening fails).
pub fn stopped_land_engine(
    land_dir: &std::path::Path,
    store: &seed::land::StoreLocation,
    instead: &str,
) -> anyhow::Result<seed::engine::Engine> {
    use anyhow::Context;
    if !land_dir.join(seed::land::LAND_META_FILE).is_file() {
        anyhow::bail!("there is no land at {}: plant one first (`seed up` or `seed plant`)", land_dir.display());
    }
    let fixture_path = match super::replay::recorded_fixture(land_dir)? {
        Some(recorded) => recorded,
        None => super::demo_world::in_land(land_dir)?,
    };
    let fixture = seed::engine::fixture::Fixture::load(&fixture_path)?;
    let options = engine_options(land_dir, store, 1, None);
    seed::engine::Engine::reopen(&fixture, &options)
        .with_context(|| format!("opening the land at {} (is `seed up` running on it? {instead})", land_dir.display()))
}
