//! The portal (`seed up`): server-rendered pages and the JSON API under
//! `/api/v1` over one live land. Handlers are thin: an extractor says who
//! may call them (`extract`), they parse and validate the request (naming
//! the field at fault), and `work` turns every change into one moment of a
//! person-driven being (`live::LiveLand::act`), so each change is an act on
//! the acting being's reel, checked by the same verb layer as any other, and
//! nothing is written half-way. `pages` answers the browser, `api` the JSON
//! API. docs/portal.md describes the pages, the API and the security rules.

mod accounts;
mod api;
mod approvals;
mod approvals_html;
mod audit_page;
pub mod auth;
mod canopy_follow;
mod canopy_move;
pub mod canopy_routes;
mod canopy_summons;
mod cascade_page;
mod config_page;
pub mod conversation;
pub mod error;
pub mod extract;
pub mod headers;
mod health_page;
pub mod html;
pub mod live;
pub mod mcp;
mod metrics_page;
mod mirror_pages;
mod pages;
pub mod passwords;
mod peers_page;
pub mod place;
pub mod request_log;
pub mod role_form;
pub mod serve;
mod space_rules;
pub mod throttle;
pub mod timeline;
mod timeline_html;
pub mod views;
mod work;

use api::*;
use auth::Sessions;
use axum::response::Redirect;
use axum::routing::{get, post};
use axum::Router;
use error::PortalError;
use live::LiveLand;
use pages::*;
use std::sync::Arc;
use std::time::Duration;
use work::release_unless_held;

/// How long a being stays inhabited after its last tab closed (`inhabit_release_grace_ms`).
pub const INHABIT_RELEASE_GRACE_MS: u64 = 3_000;
/// How long an inhabit page has to open its event stream before the
/// connection it made is released (added to the grace period).
pub const INHABIT_FIRST_HOLD_MS: u64 = 10_000;
/// How often the live land runs a round of wakes (`round_ms`).
pub const ROUND_MS_DEFAULT: u64 = 1_000;
/// Moments one page of the replay view details, newest first (its
/// timeline shows every moment, each mark linking to its page).
pub const REPLAY_MOMENTS_PER_PAGE: usize = 50;
/// How long a client has to send a request's body, once its headers are in.
pub const BODY_READ_TIMEOUT_MS: u64 = 10_000;
/// Seconds between keep-alive comments on event streams.
const SSE_KEEP_ALIVE_S: u64 = 15;

/// The portal's settings (from `seed up`'s flags). Its body bytes and
/// requests per minute are the land's configuration keys, read at each
/// request ([`Portal::body_bytes_max`], [`Portal::requests_per_minute_max`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortalLimits {
    pub release_grace_ms: u64,
    /// How long a client has to send a request's line and headers.
    pub header_read_timeout_ms: u64,
    /// How long a client has to send a request's body.
    pub body_read_timeout_ms: u64,
}

impl Default for PortalLimits {
    fn default() -> PortalLimits {
        PortalLimits {
            release_grace_ms: INHABIT_RELEASE_GRACE_MS,
            header_read_timeout_ms: serve::HEADER_READ_TIMEOUT_MS,
            body_read_timeout_ms: BODY_READ_TIMEOUT_MS,
        }
    }
}

pub struct Portal {
    pub live: Arc<LiveLand>,
    sessions: Sessions,
    /// People's password hashes, beside the land's store.
    passwords: passwords::Passwords,
    limits: PortalLimits,
    /// Fires when the portal stops: event streams end on it.
    shutdown: serve::Shutdown,
    /// The world page's value, once per world snapshot.
    world_view: views::WorldViewCache,
    /// The MCP tool list's digest per being, once per world snapshot.
    mcp_tool_lists: mcp::ToolListDigests,
    /// How this land speaks to other lands (none where this process cannot
    /// sign for the land: it follows another process's).
    pub canopy: Option<Arc<canopy_routes::Canopy>>,
}

impl Portal {
    /// The portal's state over `live`: what the router's handlers and an
    /// MCP connection over stdio share.
    pub fn open(live: Arc<LiveLand>, limits: PortalLimits, shutdown: serve::Shutdown) -> Arc<Portal> {
        Portal::open_reached_at(live, limits, shutdown, None)
    }

    /// The portal's state, its land speaking to other lands as reached at
    /// `public_url` (Canopy; none: it does not greet or answer other lands).
    pub fn open_reached_at(
        live: Arc<LiveLand>,
        limits: PortalLimits,
        shutdown: serve::Shutdown,
        public_url: Option<String>,
    ) -> Arc<Portal> {
        let passwords = passwords::Passwords::in_land(live.land_dir());
        let sessions = Sessions::default();
        metrics_page::install();
        let canopy = public_url.and_then(|url| match canopy_routes::Canopy::open(&live, url) {
            Ok(canopy) => Some(Arc::new(canopy)),
            Err(error) => {
                tracing::warn!(target: "seed::canopy", %error, "this process does not speak to other lands");
                None
            }
        });
        Arc::new(Portal {
            canopy,
            live,
            sessions,
            passwords,
            limits,
            shutdown,
            world_view: views::WorldViewCache::default(),
            mcp_tool_lists: Default::default(),
        })
    }
}

impl Portal {
    /// Most bytes of one request's body: the land's `portal_body_bytes_max`
    /// in the world now, so a value set by an act holds from the next request.
    pub fn body_bytes_max(&self) -> usize {
        let default = seed_core::config::PORTAL_BODY_BYTES_MAX_DEFAULT as u64;
        self.live.world().config_u64("portal_body_bytes_max", default) as usize
    }

    /// Requests one session (or bearer account) makes in a minute: the
    /// land's `portal_requests_per_minute_max` in the world now.
    pub fn requests_per_minute_max(&self) -> u64 {
        let default = seed_core::config::PORTAL_REQUESTS_PER_MINUTE_MAX_DEFAULT;
        self.live.world().config_u64("portal_requests_per_minute_max", default)
    }
}

/// The MCP endpoint: the SDK's streamable HTTP service (a server made for
/// each session) behind the bearer check, which stops with the portal.
fn mcp_router(portal: &Arc<Portal>) -> Router<Arc<Portal>> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    let for_sessions = portal.clone();
    let mut stopped = portal.shutdown.clone();
    let cancel = tokio_util::sync::CancellationToken::new();
    let cancelled = cancel.clone();
    tokio::spawn(async move {
        let _ = stopped.changed().await;
        cancelled.cancel();
    });
    let service: StreamableHttpService<mcp::SeedMcp, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(mcp::SeedMcp::for_http(for_sessions.clone())),
        Arc::new(LocalSessionManager::default()),
        // A request of a stateless revision (2026-07-28) is answered as plain
        // JSON when its handler sends nothing before the result (an event
        // stream otherwise); an `initialize` session's answers stay streams.
        StreamableHttpServerConfig::default().with_cancellation_token(cancel).with_json_response(true),
    );
    Router::new()
        .route_service(mcp::MCP_PATH, service)
        .route_layer(axum::middleware::from_fn_with_state(portal.clone(), mcp::require_bearer))
}

pub fn router(live: Arc<LiveLand>, limits: PortalLimits, shutdown: serve::Shutdown) -> Router {
    router_reached_at(live, limits, shutdown, None)
}

/// The router of a land reached at `public_url` by other lands (Canopy's
/// routes answer, and its heartbeats to its peers start).
pub fn router_reached_at(
    live: Arc<LiveLand>,
    limits: PortalLimits,
    shutdown: serve::Shutdown,
    public_url: Option<String>,
) -> Router {
    let portal = Portal::open_reached_at(live, limits, shutdown, public_url);
    canopy_routes::start_heartbeats(portal.clone());
    canopy_summons::start_deliveries(portal.clone());
    canopy_follow::start_following(portal.clone());
    // Beings still inhabited from before a restart have no tab holding them:
    // released unless a tab comes back within the grace period.
    let world = portal.live.world();
    for row in world.beings.values().filter(|row| row.inhabited_by.is_some()) {
        let wait = Duration::from_millis(limits.release_grace_ms + INHABIT_FIRST_HOLD_MS);
        release_unless_held(portal.clone(), row.id, row.name.clone(), wait);
    }
    drop(world);
    Router::new()
        .route("/", get(|| async { Redirect::to("/world") }))
        .route("/login", get(login_form).post(login))
        .route("/logout", post(logout))
        .route("/world", get(world_page))
        .route("/world/live", get(world_live))
        .route("/beings/{name}", get(being_page))
        .route("/beings/{name}/act", post(being_act_form))
        .route("/beings/{name}/conversation", get(conversation_fragment))
        .route("/beings/{name}/flow", get(flow_page).post(flow_form))
        .route("/beings/{name}/replay", get(replay_page))
        .route("/beings/{name}/memory", get(memory_page))
        .route("/beings/{name}/moments/{seq}", get(moment_page))
        .route("/inhabit/{name}", get(inhabit_page).post(inhabit_form))
        .route("/inhabit/{name}/act", post(inhabit_act_form))
        .route("/birth", post(birth_form))
        .route("/roles", get(roles_page).post(role_form_post))
        .route("/roles/{name}/revert", post(role_revert_form))
        .route("/signals", post(signal_form))
        .route("/search", get(search_page))
        .route("/spaces", get(space_page))
        .route("/spaces/rules", post(space_rules::rules_form))
        .route("/matter", get(matter_page))
        .route("/moments", get(moments_page))
        .route("/moments/live", get(moments_live))
        .route("/timeline", get(timeline_page))
        .route("/approvals", get(approvals::approvals_page))
        .route("/audit", get(audit_page::audit_page))
        .route("/cascade/{fact}", get(cascade_page::cascade_page))
        .route("/config", get(config_page::config_page).post(config_page::config_form))
        .route("/peers", get(peers_page::peers_page).post(peers_page::peers_form))
        .route("/peers/remove", post(peers_page::remove_form))
        .route("/peers/follow", post(peers_page::follow_form))
        .route("/mirrors/beings/{being}", get(mirror_pages::being_mirror_page))
        .route("/mirrors/{land}", get(mirror_pages::mirror_page))
        .route("/mirrors/{land}/beings/{being}", get(mirror_pages::mirror_reel_page))
        .route(crate::canopy_http::CANOPY_IDENTITY_PATH, get(canopy_routes::identity))
        .route(crate::canopy_http::CANOPY_HELLO_PATH, post(canopy_routes::hello))
        .route(crate::canopy_http::CANOPY_HEARTBEAT_PATH, post(canopy_routes::heartbeat))
        .route(crate::canopy_http::CANOPY_SUMMONS_PATH, post(canopy_summons::summons))
        .route(crate::canopy_http::CANOPY_FACTS_PATH, post(canopy_follow::facts))
        .route(crate::canopy_http::CANOPY_FORK_PATH, post(canopy_follow::fork))
        .route(crate::canopy_http::CANOPY_MOVE_KEY_PATH, post(canopy_move::key))
        .route(crate::canopy_http::CANOPY_MOVE_FACTS_PATH, post(canopy_move::facts))
        .route("/health", get(health_page::health_page))
        .route("/health/revive", post(health_page::revive_form))
        .route("/approvals/{request}", post(approvals::decide_form))
        .route("/accounts", get(accounts_page).post(invite_form))
        .route("/accounts/{account}/token", post(new_token_form))
        .route("/accounts/{account}/revoke", post(revoke_form))
        .route("/password", post(password_form))
        .merge(mcp_router(&portal))
        .route("/.well-known/oauth-protected-resource", get(mcp::protected_resource_metadata))
        .route("/.well-known/oauth-protected-resource/mcp", get(mcp::protected_resource_metadata))
        .route("/api/v1/login", post(api_login))
        .route("/api/v1/world", get(api_world))
        .route("/api/v1/events", get(api_events))
        .route("/api/v1/beings/{name}", get(api_being))
        .route("/api/v1/beings/{name}/act", post(api_act))
        .route("/api/v1/beings/{name}/inhabit", post(api_inhabit))
        .route("/api/v1/beings/{name}/release", post(api_release))
        .route("/api/v1/beings/{name}/presence", get(api_presence))
        .route("/api/v1/beings/{name}/flow", post(api_flow))
        .route("/api/v1/beings/{name}/flow/preview", post(api_flow_preview))
        .route("/api/v1/beings/{name}/replay", get(api_replay))
        .route("/api/v1/beings/{name}/memory", get(api_memory))
        .route("/api/v1/beings/{name}/conversation", get(api_conversation))
        .route("/api/v1/beings/{name}/moments/{seq}", get(api_moment))
        .route("/api/v1/birth", post(api_birth))
        .route("/api/v1/roles", get(api_roles).post(api_author_role))
        .route("/api/v1/roles/{name}/revert", post(api_revert_role))
        .route("/api/v1/signals", post(api_signal))
        .route("/api/v1/moments", get(api_moments))
        .route("/api/v1/timeline", get(api_timeline))
        .route("/api/v1/search", get(api_search))
        .route("/api/v1/spaces", get(api_space))
        .route("/api/v1/matter", get(api_matter))
        .route("/api/v1/cascade/{fact}", get(cascade_page::api_cascade))
        .route("/api/v1/approvals", get(approvals::api_approvals))
        .route("/api/v1/audit", get(audit_page::api_audit))
        .route("/api/v1/config", get(config_page::api_config).post(config_page::api_set_config))
        .route("/api/v1/peers", get(peers_page::api_peers).post(peers_page::api_add_peer))
        .route("/api/v1/peers/{peer}", axum::routing::delete(peers_page::api_remove_peer))
        .route("/api/v1/peers/{peer}/following", post(peers_page::api_set_following))
        .route("/api/v1/mirrors/beings/{being}", get(mirror_pages::api_being_mirror))
        .route("/api/v1/mirrors/{land}", get(mirror_pages::api_mirror))
        .route("/api/v1/mirrors/{land}/beings/{being}", get(mirror_pages::api_mirror_reel))
        .route("/api/v1/health", get(health_page::api_health))
        .route("/api/v1/health/revive", post(health_page::api_revive))
        .route("/metrics", get(metrics_page::metrics_page))
        .route("/api/v1/approvals/{request}", post(approvals::api_decide))
        .route("/api/v1/accounts", get(api_accounts).post(api_invite))
        .route("/api/v1/accounts/{account}/token", post(api_new_token))
        .route("/api/v1/accounts/{account}/revoke", post(api_revoke))
        .route("/api/v1/password", post(api_password))
        .route(
            "/static/portal.js",
            get(|| async { headers::asset(headers::PORTAL_JS, "text/javascript; charset=utf-8") }),
        )
        .route("/static/portal.css", get(|| async { headers::asset(&html::stylesheet(), "text/css; charset=utf-8") }))
        .fallback(|| async { PortalError::not_found("no such page or API route") })
        .layer(axum::middleware::map_response(headers::security_headers))
        .layer(axum::middleware::from_fn(request_log::log_request))
        .with_state(portal)
}
