//! `seed up`: the land running live, with the portal.

use anyhow::{bail, Context, Result};
use seed::engine::fixture::Fixture;
use seed::engine::{Engine, EngineOptions};
use seed::portal::live::LiveLand;
use seed::portal::PortalLimits;
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
    let rounds = live.start_rounds(arguments.round_ms);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("seed-portal")
        .build()
        .context("starting the portal's runtime")?;
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
        let bound = listener.local_addr()?;
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
        let (stop_portal, shutdown) = tokio::sync::watch::channel(false);
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
    served?;
    if arguments.json {
        println!("{}", serde_json::json!({"event": "down"}));
    } else {
        println!("seed is down: the land is closed");
    }
    Ok(ExitCode::SUCCESS)
}
