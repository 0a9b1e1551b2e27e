//! The MCP edge: a land served to outside agents over the Model Context
//! Protocol, with the official Rust SDK (`rmcp`), over streamable HTTP at
//! `/mcp` in the portal (`http`) and over stdio (`seed mcp`).
//!
//! An MCP client is one more way a person drives a being: it authenticates
//! with the portal's bearer tokens, drives one being under the portal's
//! account rules (`work::may_act_for`), and every verb it calls is one
//! person-driven moment (`work::drive`), checked by the verb layer and sealed
//! as an act, exactly as a click in the portal is. Nothing here decides what
//! a being may do: the tools are the LLM's tools for the being's face
//! (`llm::tools`), read by the LLM's rule (`llm::call_of_tool`), and a
//! refusal comes back as a tool result with `isError`, never as a protocol
//! error (`tools`). Resources are a being's face and reel and the roles
//! (`resources`); a `subscriptions/listen` stream tells the client when the
//! driven being's tools change and when a subscribed resource does
//! (`SeedMcp::listen`), read off the live land's change feed.

mod http;
mod resources;
mod tools;
pub(super) use tools::ToolListDigests;

pub use http::{caller_for, protected_resource_metadata, require_bearer, MCP_PATH};

use super::auth::Principal;
use super::Portal;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use std::borrow::Cow;
use std::sync::Arc;

/// How long a connection's watch gathers the land's changes before it
/// looks at what they changed, in milliseconds: the tool list (a face
/// built) and the watched resources are computed at most once per this,
/// not once per fact sealed, and a change is announced at most this late.
pub const MCP_CHANGES_GATHERED_MS: u64 = 50;

/// Who drives what through one MCP connection or request: the principal
/// its bearer token (or, over stdio, the process) acts as, and the being
/// it drives, which that principal may act for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpCaller {
    pub principal: Principal,
    /// The driven being's name (without `@`).
    pub being: String,
}

/// The MCP server of a land. Over HTTP one is made per session and each
/// request carries its caller (the bearer middleware put it there); over
/// stdio the process's caller is fixed.
#[derive(Clone)]
pub struct SeedMcp {
    portal: Arc<Portal>,
    stdio_caller: Option<McpCaller>,
    /// The resources a connection of an earlier protocol subscribed to.
    legacy_subscriptions: Arc<std::sync::Mutex<std::collections::BTreeMap<String, Option<blake3::Hash>>>>,
}

impl SeedMcp {
    /// The server for HTTP requests, each carrying its caller.
    pub fn for_http(portal: Arc<Portal>) -> SeedMcp {
        SeedMcp { portal, stdio_caller: None, legacy_subscriptions: Default::default() }
    }

    /// The server for one stdio connection, driving `caller.being`.
    pub fn for_stdio(portal: Arc<Portal>, caller: McpCaller) -> SeedMcp {
        SeedMcp { portal, stdio_caller: Some(caller), legacy_subscriptions: Default::default() }
    }

    /// The caller of a request: fixed over stdio, put into the HTTP
    /// request's extensions by [`require_bearer`] otherwise (a request that
    /// reached the service without one is a routing mistake of ours).
    fn caller(&self, extensions: &rmcp::model::Extensions) -> Result<McpCaller, McpError> {
        if let Some(caller) = &self.stdio_caller {
            return Ok(caller.clone());
        }
        extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<McpCaller>())
            .cloned()
            .ok_or_else(|| McpError::internal_error("the request reached /mcp without its caller", None))
    }

    /// Whether `caller` still holds: an account revoked since the
    /// connection opened drives nothing more.
    fn still_holds(&self, caller: &McpCaller) -> bool {
        self.portal.live.grant_of(&caller.principal).is_some()
    }
}

impl ServerHandler for SeedMcp {
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .build(),
        )
        .with_server_info(Implementation::new("seed", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "A seed land. The tools see, do, summon and be are the verbs the driven being's composed role \
             offers right now (each call is one moment of the being, checked by the verb layer and sealed as \
             an act); list_beings, read_reel, face, replay and what_if read the land and change nothing.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let caller = self.caller(&context.extensions)?;
        Ok(ListToolsResult::with_all_items(tools::listed(&self.portal, &caller)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let caller = self.caller(&context.extensions)?;
        if !self.still_holds(&caller) {
            return Err(McpError::invalid_request("the account this connection drives for was revoked", None));
        }
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let result = tools::call(&self.portal, &caller, &request.name, arguments).await?;
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let caller = self.caller(&context.extensions)?;
        Ok(ListResourcesResult::with_all_items(resources::listed(&self.portal, &caller)))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(resources::templates()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let caller = self.caller(&context.extensions)?;
        Ok(resources::read(&self.portal, &caller, &request.uri)?.into())
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let mut accepted = requested.supported_by(&self.get_info().capabilities);
        // Only resources this land serves can change; others are not taken.
        if let Some(uris) = accepted.resource_subscriptions.as_mut() {
            uris.retain(|uri| resources::Address::parse(uri).is_ok());
        }
        Some(accepted)
    }

    /// One `subscriptions/listen` stream (protocol 2026-07-28): after
    /// every change of the land, a tool list that changed is announced, and
    /// so is every subscribed resource that changed. It ends when the client
    /// cancels it, the portal stops or the caller's account is revoked.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let caller = self.caller(&context.request_context().extensions)?;
        let wants_tools = context.accepted().tools_list_changed == Some(true);
        let uris: Vec<String> = context.accepted().resource_subscriptions.clone().unwrap_or_default();
        let mut watch = Watch::new(self, caller, wants_tools, uris, false);
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                more = watch.next_change(self) => if !more { return Ok(()) },
            }
            let (tools_changed, resources_changed) = watch.what_changed(self, &Default::default());
            if tools_changed {
                sent(context.sink().notify_tool_list_changed().await)?;
            }
            for uri in resources_changed {
                sent(context.sink().notify_resource_updated(uri).await)?;
            }
        }
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let caller = self.caller(&context.extensions)?;
        resources::read(&self.portal, &caller, &request.uri)?;
        let version = resources::version(&self.portal, &caller, &request.uri);
        self.legacy_subscriptions.lock().unwrap_or_else(|p| p.into_inner()).insert(request.uri, version);
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.legacy_subscriptions.lock().unwrap_or_else(|p| p.into_inner()).remove(&request.uri);
        Ok(())
    }

    /// A connection of an earlier protocol (an `initialize` handshake):
    /// changes are announced to it as plain notifications, the tool list's
    /// always and a resource's once it was subscribed (`resources/subscribe`),
    /// until the connection closes.
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        let Ok(caller) = self.caller(&context.extensions) else { return };
        let server = self.clone();
        let peer = context.peer;
        tokio::spawn(async move {
            let mut watch = Watch::new(&server, caller, true, Vec::new(), true);
            while watch.next_change(&server).await {
                let subscribed = server.legacy_subscriptions.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let (tools_changed, resources_changed) = watch.what_changed(&server, &subscribed);
                let mut delivered = Ok(());
                if tools_changed {
                    delivered = peer.notify_tool_list_changed().await;
                }
                for uri in resources_changed {
                    if delivered.is_ok() {
                        let updated = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                        delivered = peer.notify_resource_updated(updated).await;
                    }
                }
                if delivered.is_err() || peer.is_transport_closed() {
                    return;
                }
            }
        });
    }
}

/// What a connection was last told about: the tool list's digest and each
/// watched resource's version, compared after every change of the land.
struct Watch {
    caller: McpCaller,
    changes: tokio::sync::broadcast::Receiver<u64>,
    shutdown: super::serve::Shutdown,
    wants_tools: bool,
    /// Watching for a connection of an earlier protocol, whose
    /// subscriptions come and go (`resources/subscribe`, `unsubscribe`).
    legacy: bool,
    tools_seen: blake3::Hash,
    resources_seen: std::collections::BTreeMap<String, Option<blake3::Hash>>,
}

impl Watch {
    fn new(server: &SeedMcp, caller: McpCaller, wants_tools: bool, uris: Vec<String>, legacy: bool) -> Watch {
        let portal = &server.portal;
        let tools_seen = portal.mcp_tool_lists.now(portal, &caller);
        let resources_seen =
            uris.into_iter().map(|uri| (uri.clone(), resources::version(portal, &caller, &uri))).collect();
        Watch {
            changes: portal.live.subscribe(),
            shutdown: portal.shutdown.clone(),
            caller,
            wants_tools,
            legacy,
            tools_seen,
            resources_seen,
        }
    }

    /// Waits for the land to change: `false` once the portal stops, the
    /// land's feed ends or the caller's account is revoked.
    async fn next_change(&mut self, server: &SeedMcp) -> bool {
        use tokio::sync::broadcast::error::{RecvError, TryRecvError};
        tokio::select! {
            _ = self.shutdown.changed() => return false,
            change = self.changes.recv() => {
                if let Err(RecvError::Closed) = change {
                    return false;
                }
            }
        }
        // The changes that follow within the window are looked at together.
        tokio::select! {
            _ = self.shutdown.changed() => return false,
            _ = tokio::time::sleep(std::time::Duration::from_millis(MCP_CHANGES_GATHERED_MS)) => {}
        }
        loop {
            match self.changes.try_recv() {
                Ok(_) | Err(TryRecvError::Lagged(_)) => continue,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Closed) => return false,
            }
        }
        server.still_holds(&self.caller)
    }

    /// Whether the tool list changed, and which watched resources did (the
    /// ones given here are watched from now on, their first version seen).
    fn what_changed(
        &mut self,
        server: &SeedMcp,
        also_watch: &std::collections::BTreeMap<String, Option<blake3::Hash>>,
    ) -> (bool, Vec<String>) {
        let portal = &server.portal;
        let mut tools_changed = false;
        if self.wants_tools {
            let now = portal.mcp_tool_lists.now(portal, &self.caller);
            tools_changed = now != self.tools_seen;
            self.tools_seen = now;
        }
        let mut changed = Vec::new();
        // Unsubscribed resources are no longer told; new ones from the
        // version they had when they were subscribed.
        if self.legacy {
            self.resources_seen.retain(|uri, _| also_watch.contains_key(uri));
            for (uri, version) in also_watch {
                self.resources_seen.entry(uri.clone()).or_insert(*version);
            }
        }
        for (uri, seen) in self.resources_seen.iter_mut() {
            let now = resources::version(portal, &self.caller, uri);
            if now != *seen {
                *seen = now;
                changed.push(uri.clone());
            }
        }
        (tools_changed, changed)
    }
}

fn sent(sending: Result<(), rmcp::service::SubscriptionSendError>) -> Result<(), McpError> {
    match sending {
        Ok(()) => Ok(()),
        // The client went away: the stream is over, not failed.
        Err(rmcp::service::SubscriptionSendError::SubscriptionClosed) => Ok(()),
        Err(error) => Err(McpError::internal_error(format!("a change could not be announced: {error}"), None)),
    }
}

/// Serves one MCP connection over this process's stdin and stdout until
/// the client closes it or the portal stops.
pub async fn serve_stdio(portal: Arc<Portal>, caller: McpCaller) -> Result<(), McpServeError> {
    use rmcp::ServiceExt;
    let mut shutdown = portal.shutdown.clone();
    let server = SeedMcp::for_stdio(portal, caller)
        .serve(rmcp::transport::io::stdio())
        .await
        .map_err(|error| McpServeError::Start { reason: error.to_string() })?;
    let cancel = server.cancellation_token();
    tokio::select! {
        ended = server.waiting() => {
            ended.map_err(|error| McpServeError::Ended { reason: error.to_string() })?;
        }
        _ = shutdown.changed() => cancel.cancel(),
    }
    Ok(())
}

/// Why an MCP connection over stdio could not be served.
#[derive(Debug, thiserror::Error)]
pub enum McpServeError {
    #[error("the MCP connection could not start: {reason}")]
    Start { reason: String },
    #[error("the MCP connection ended with an error: {reason}")]
    Ended { reason: String },
}
