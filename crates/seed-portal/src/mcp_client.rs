//! The client of the MCP servers extensions declare (`seed::tools`): each
//! server started over stdio (or connected to over streamable HTTP, at its
//! `url`) at its first call and kept, each call bounded
//! by the server's `timeout_ms`, retried `retries_max` times after the
//! server failed to answer (restarted, or connected to again), `concurrency_max` at once (each within
//! the land's `mcp_call_timeout_ms`, `mcp_call_retries_max` and `mcp_calls_in_flight_max`, read at the
//! calling moment's world: the smaller holds), refused
//! when its result is over `result_bytes_max`, and a circuit breaker that
//! stops calling a server after `breaker_failures_max` failures in a row for
//! `breaker_cooldown_ms`. [`WithMcpTools`] puts it beside a model: the
//! moment's one door to the outside (`LanguageModel`).
//!
//! Replay never gets here: it answers from the act's record.

use crate::llm::{Answer, EmbedQuestion, Embedded, LanguageModel, NoAnswer, Question};
use crate::tools::{McpServerSpec, McpToolSchema, McpTransport, ToolAnswer, ToolLimits, ToolQuestion};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Threads of the client's runtime (calls wait on servers, not on CPU).
pub const MCP_CLIENT_THREADS: usize = 1;
/// The first wait before a retry, doubled each time, in milliseconds.
pub const MCP_RETRY_BACKOFF_BASE_MS: u64 = 100;

#[derive(Debug, thiserror::Error)]
pub enum McpClientError {
    #[error("the MCP client's runtime could not start: {0}")]
    Runtime(std::io::Error),
    #[error("two MCP servers are named {name:?} (in {first} and {second})")]
    TwiceNamed { name: String, first: String, second: String },
}

type Client = RunningService<RoleClient, ()>;

/// Failures in a row, and until when calls are refused.
#[derive(Default)]
struct Breaker {
    failures: u32,
    open_until: Option<Instant>,
}

struct Server {
    spec: McpServerSpec,
    /// The running server, started at the first call (and again after a failure).
    client: tokio::sync::Mutex<Option<Arc<Client>>>,
    /// Calls in flight, capped at each call by the smaller of the server's
    /// `concurrency_max` and the land's `mcp_calls_in_flight_max`.
    in_flight: crate::in_flight::InFlight,
    breaker: Mutex<Breaker>,
}

/// Why one attempt failed, and whether another may help.
enum Failed {
    /// The server did not answer (it stopped, timed out, could not start): retried, restarted.
    Transient(String),
    /// It answered, and another call would answer the same (an unknown tool, a result too large).
    Final(String),
}

/// The servers of a land's extensions.
pub struct McpTools {
    servers: Arc<BTreeMap<String, Arc<Server>>>,
    runtime: tokio::runtime::Runtime,
}

impl McpTools {
    /// Nothing is started yet: a server starts at its first call.
    pub fn new(specs: Vec<McpServerSpec>) -> Result<McpTools, McpClientError> {
        let mut servers: BTreeMap<String, Arc<Server>> = BTreeMap::new();
        for spec in specs {
            if let Some(first) = servers.get(&spec.name) {
                return Err(McpClientError::TwiceNamed {
                    name: spec.name.clone(),
                    first: first.spec.origin.clone(),
                    second: spec.origin.clone(),
                });
            }
            let server = Server {
                in_flight: Default::default(),
                client: tokio::sync::Mutex::new(None),
                breaker: Mutex::new(Breaker::default()),
                spec,
            };
            servers.insert(server.spec.name.clone(), Arc::new(server));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(MCP_CLIENT_THREADS)
            .thread_name("seed-mcp-client")
            .enable_all()
            .build()
            .map_err(McpClientError::Runtime)?;
        Ok(McpTools { servers: Arc::new(servers), runtime })
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// One call, waited for on the calling thread (a moment's, never this runtime's).
    pub fn call(&self, question: &ToolQuestion<'_>) -> Result<ToolAnswer, NoAnswer> {
        let Some(server) = self.servers.get(question.server).cloned() else {
            return Err(NoAnswer { reason: format!("no MCP server {:?} is declared", question.server), attempts: 0 });
        };
        server.refuse_if_open(question.limits)?;
        let (tool, arguments, seed, limits) =
            (question.tool.to_string(), question.arguments.clone(), question.seed, question.limits);
        let (send, receive) = std::sync::mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let _ = send.send(server.call(&tool, &arguments, seed, limits).await);
        });
        receive
            .recv()
            .unwrap_or_else(|_| Err(NoAnswer { reason: "the MCP client stopped mid-call".into(), attempts: 0 }))
    }

    /// The tools `server` offers, as its `tools/list` describes them (for
    /// `seed mcp-schemas`, never a moment): one attempt, within `timeout_ms`.
    pub fn list_tools(&self, server: &str) -> Result<BTreeMap<String, McpToolSchema>, NoAnswer> {
        let Some(server) = self.servers.get(server).cloned() else {
            return Err(NoAnswer { reason: format!("no MCP server {server:?} is declared"), attempts: 0 });
        };
        let timeout = Duration::from_millis(server.spec.timeout_ms);
        self.runtime.block_on(async move {
            let listed = tokio::time::timeout(timeout, async {
                let client = server.client().await.map_err(Failed::reason)?;
                client.list_all_tools().await.map_err(|error| format!("tools/list failed: {error}"))
            })
            .await
            .map_err(|_| format!("timed out after {} ms (timeout_ms)", server.spec.timeout_ms))
            .and_then(|listed| listed);
            if let Some(client) = server.client.lock().await.take() {
                if let Ok(client) = Arc::try_unwrap(client) {
                    let _ = client.cancel().await;
                }
            }
            let tools = listed.map_err(|reason| NoAnswer { reason, attempts: 1 })?;
            Ok(tools
                .into_iter()
                .map(|tool| {
                    let described = McpToolSchema {
                        description: tool.description.as_deref().unwrap_or_default().to_string(),
                        input_schema: Json::Object((*tool.input_schema).clone()),
                    };
                    (tool.name.to_string(), described)
                })
                .collect())
        })
    }
}

impl Failed {
    fn reason(self) -> String {
        match self {
            Failed::Transient(reason) | Failed::Final(reason) => reason,
        }
    }
}

impl Server {
    /// Failures in a row that open the breaker, and the limit that says so.
    fn breaker_failures_max(&self, limits: ToolLimits) -> (u32, &'static str) {
        match limits.breaker_failures_max < self.spec.breaker_failures_max {
            true => (limits.breaker_failures_max, "mcp_breaker_failures_max"),
            false => (self.spec.breaker_failures_max, "breaker_failures_max"),
        }
    }

    fn refuse_if_open(&self, limits: ToolLimits) -> Result<(), NoAnswer> {
        let breaker = self.breaker.lock().unwrap_or_else(PoisonError::into_inner);
        let (failures_max, failures_name) = self.breaker_failures_max(limits);
        match breaker.open_until {
            Some(until) if Instant::now() < until => Err(NoAnswer {
                reason: format!(
                    "not called: its circuit breaker is open after {} failures in a row ({failures_name} = {failures_max}), \
for {} ms more (breaker_cooldown_ms = {})",
                    breaker.failures,
                    until.saturating_duration_since(Instant::now()).as_millis(),
                    self.spec.breaker_cooldown_ms
                ),
                attempts: 0,
            }),
            _ => Ok(()),
        }
    }

    fn settle(&self, succeeded: bool, limits: ToolLimits) {
        let mut breaker = self.breaker.lock().unwrap_or_else(PoisonError::into_inner);
        if succeeded {
            *breaker = Breaker::default();
            return;
        }
        breaker.failures = breaker.failures.saturating_add(1);
        if breaker.failures >= self.breaker_failures_max(limits).0 {
            breaker.open_until = Some(Instant::now() + Duration::from_millis(self.spec.breaker_cooldown_ms));
        }
    }

    async fn call(&self, tool: &str, arguments: &Json, seed: u64, limits: ToolLimits) -> Result<ToolAnswer, NoAnswer> {
        let call = limits.call;
        let _slot = self.in_flight.acquire(self.spec.concurrency_max.min(call.in_flight_max)).await;
        let (timeout_ms, timeout_name) = call.timeout_ms_within(self.spec.timeout_ms, "mcp_call_timeout_ms");
        let retries_max = self.spec.retries_max.min(call.retries_max);
        let mut attempts = 0;
        loop {
            attempts += 1;
            let attempt =
                tokio::time::timeout(Duration::from_millis(timeout_ms), self.attempt(tool, arguments, limits));
            let failed = match attempt.await {
                Ok(Ok(answer)) => {
                    self.settle(true, limits);
                    return Ok(ToolAnswer { attempts, ..answer });
                }
                Ok(Err(failed)) => failed,
                Err(_) => Failed::Transient(format!("timed out after {timeout_ms} ms ({timeout_name})")),
            };
            match failed {
                Failed::Transient(reason) if attempts <= retries_max => {
                    tracing::debug!(server = %self.spec.name, %tool, %reason, attempts, "an MCP call is retried");
                    // A server that did not answer is started again.
                    *self.client.lock().await = None;
                    let jitter = seed.rotate_left(attempts) % MCP_RETRY_BACKOFF_BASE_MS;
                    let wait = MCP_RETRY_BACKOFF_BASE_MS.saturating_mul(1 << attempts.min(10)) + jitter;
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                }
                Failed::Transient(reason) => {
                    *self.client.lock().await = None;
                    self.settle(false, limits);
                    return Err(NoAnswer { reason: format!("{reason} ({attempts} attempts)"), attempts });
                }
                Failed::Final(reason) => {
                    self.settle(false, limits);
                    return Err(NoAnswer { reason, attempts });
                }
            }
        }
    }

    /// The running server, started if it is not.
    async fn client(&self) -> Result<Arc<Client>, Failed> {
        let mut held = self.client.lock().await;
        if let Some(client) = held.as_ref().filter(|client| !client.is_closed()) {
            return Ok(client.clone());
        }
        let client = match &self.spec.transport {
            McpTransport::Stdio { command, dir } => {
                let (program, arguments) = command.split_first().expect("a validated command names its program");
                let mut process = tokio::process::Command::new(program);
                process.args(arguments).current_dir(dir);
                let started = self.spec.transport.describe();
                let transport = TokioChildProcess::builder(process)
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .map(|(transport, _)| transport)
                    .map_err(|error| Failed::Transient(format!("could not start {started}: {error}")))?;
                ().serve(transport)
                    .await
                    .map_err(|error| Failed::Transient(format!("{started} did not start: {error}")))?
            }
            McpTransport::Url { url, bearer_token_env } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(name) = bearer_token_env {
                    // Read at each connection, so a rotated token is picked up;
                    // a missing one is this server's failure, named, never its value.
                    let token = std::env::var(name).map_err(|_| {
                        Failed::Transient(format!("the environment variable {name} (bearer_token_env) is not set"))
                    })?;
                    config = config.auth_header(token);
                }
                crate::tls::install_crypto_provider();
                let transport = StreamableHttpClientTransport::from_config(config);
                ().serve(transport)
                    .await
                    .map_err(|error| Failed::Transient(format!("{url} did not answer the handshake: {error}")))?
            }
        };
        let client = Arc::new(client);
        *held = Some(client.clone());
        Ok(client)
    }

    async fn attempt(&self, tool: &str, arguments: &Json, limits: ToolLimits) -> Result<ToolAnswer, Failed> {
        let client = self.client().await?;
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments.as_object().cloned().or_else(|| Some(serde_json::Map::new()));
        let result = match client.call_tool(params).await {
            Ok(result) => result,
            // It answered with an error of the protocol (an unknown tool, bad arguments).
            Err(ServiceError::McpError(error)) => {
                return Err(Failed::Final(format!("the server refused the call: {}", error.message)))
            }
            Err(error) => return Err(Failed::Transient(format!("the server did not answer: {error}"))),
        };
        let text = serde_json::to_string(&result).map_err(|error| Failed::Final(error.to_string()))?;
        let (bytes_max, bytes_name) = match limits.result_bytes_max < self.spec.result_bytes_max {
            true => (limits.result_bytes_max, "mcp_result_bytes_max"),
            false => (self.spec.result_bytes_max, "result_bytes_max"),
        };
        if text.len() > bytes_max {
            return Err(Failed::Final(format!("its result is {} bytes, over {bytes_name} = {bytes_max}", text.len())));
        }
        Ok(ToolAnswer { is_error: result.is_error.unwrap_or(false), result: text, attempts: 0 })
    }
}

/// A model beside the land's MCP tools: the moment's one door to the outside.
pub struct WithMcpTools {
    pub model: Arc<dyn LanguageModel>,
    pub tools: Arc<McpTools>,
}

impl LanguageModel for WithMcpTools {
    fn answer(&self, question: &Question<'_>) -> Result<Answer, NoAnswer> {
        self.model.answer(question)
    }

    fn embed(&self, question: &EmbedQuestion<'_>) -> Result<Embedded, NoAnswer> {
        self.model.embed(question)
    }

    fn call_tool(&self, question: &ToolQuestion<'_>) -> Result<ToolAnswer, NoAnswer> {
        self.tools.call(question)
    }

    fn concurrency(&self) -> usize {
        self.model.concurrency()
    }
}
