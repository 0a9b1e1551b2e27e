//! `seed mcp`: a land served to one MCP client over stdio (the client
//! starts this process and speaks JSON-RPC on its stdin and stdout; logs go
//! to stderr). The land runs live while it is served, as under `seed up`.

use anyhow::{bail, Context, Result};
use seed::engine::fixture::Fixture;
use seed::engine::Engine;
use seed::portal::live::LiveLand;
use seed::portal::{mcp, Portal, PortalLimits};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// The environment variable a person's token is read from (a token never
/// goes on a command line, where other users of the machine can read it).
pub const MCP_TOKEN_VARIABLE: &str = "SEED_MCP_TOKEN";

pub struct McpArguments {
    pub being: Option<String>,
    pub round_ms: u64,
    pub threads: usize,
    pub llm: Option<PathBuf>,
    pub store: seed::land::StoreLocation,
}

pub fn mcp(land_dir: &Path, arguments: McpArguments) -> Result<ExitCode> {
    if arguments.round_ms == 0 {
        bail!("--round-ms must be at least 1");
    }
    if !land_dir.join(seed::land::LAND_META_FILE).is_file() {
        bail!("there is no land at {}: plant one first (`seed up` or `seed plant`)", land_dir.display());
    }
    let model = super::up::model_of(arguments.llm.as_deref())?;
    let fixture_path = match super::replay::recorded_fixture(land_dir)? {
        Some(recorded) => recorded,
        None => super::demo_world::in_land(land_dir)?,
    };
    let fixture = Fixture::load(&fixture_path)?;
    let model = super::with_mcp_tools(model, &fixture)?;
    let options = super::up::engine_options(land_dir, &arguments.store, arguments.threads, model);
    let engine = Engine::reopen(&fixture, &options)
        .with_context(|| format!("opening the land at {} (is `seed up` running on it?)", land_dir.display()))?;
    if engine.land.store().runner_lease().is_some() {
        bail!(
            "this land is on PostgreSQL, where one process runs a live land: serve it with `seed up` and \
             connect to its MCP endpoint at http://ADDR/mcp"
        );
    }
    let live = LiveLand::new(engine)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("seed-mcp")
        .build()
        .context("starting the MCP runtime")?;
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let stop = Arc::new(stop);
    let portal = Portal::open(live.clone(), PortalLimits::default(), shutdown);
    let principal = match std::env::var(MCP_TOKEN_VARIABLE) {
        Ok(token) => match live.principal_of_token(token.trim()) {
            Some((principal, _)) => principal,
            None => bail!("{MCP_TOKEN_VARIABLE} is not a current token of this land: wrong, replaced or revoked"),
        },
        Err(_) => seed::portal::auth::Principal::Operator,
    };
    let caller = mcp::caller_for(&portal, principal, arguments.being.clone()).map_err(|error| {
        anyhow::anyhow!(
            "{} may not be driven over MCP: {}",
            arguments
                .being
                .as_deref()
                .map_or("the token's own being".to_string(), |name| format!("@{}", name.trim_start_matches('@'))),
            error.message
        )
    })?;
    tracing::info!(being = %caller.being, account = caller.principal.account(), "serving MCP on stdio");
    let rounds = live.start_rounds(arguments.round_ms);
    let served = runtime.block_on(async {
        let stopping = stop.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            let _ = stopping.send(true);
        });
        mcp::serve_stdio(portal, caller).await
    });
    let _ = stop.send(true);
    live.stop_rounds();
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    live.stop()?;
    let _ = rounds.join();
    served?;
    Ok(ExitCode::SUCCESS)
}
