//! LLM connections: which endpoints a land may call, read from a TOML file
//! (`seed sim --llm FILE`, `seed up --llm FILE`, `seed worker --llm FILE`). A connection names a base URL, a
//! model and where its key comes from (an environment variable or a key
//! file); the key itself is never written to this file's parse results'
//! `Debug`, to facts, to traces or to logs. Documented in docs/llm.md.

use crate::llm::{LlmParams, Prices};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// Per-call timeout, in milliseconds (`timeout_ms` per connection).
pub const LLM_TIMEOUT_MS_DEFAULT: u64 = 60_000;
/// Retries of one call on 429 / 5xx / a refused connection (`retries_max`).
pub const LLM_RETRIES_MAX_DEFAULT: u32 = 3;
/// First backoff, doubled each retry, in milliseconds (`backoff_base_ms`).
pub const LLM_BACKOFF_BASE_MS_DEFAULT: u64 = 250;
/// Longest backoff or Retry-After wait, in milliseconds (`backoff_max_ms`).
pub const LLM_BACKOFF_MAX_MS_DEFAULT: u64 = 10_000;
/// Most completion tokens asked for (`max_tokens`).
pub const LLM_MAX_TOKENS_DEFAULT: u32 = 256;
/// Most model calls in flight at once in a land (`concurrency_max`).
pub const LLM_CONCURRENCY_MAX_DEFAULT: usize = 8;
/// Longest failover chain followed from one connection.
pub const LLM_FAILOVER_DEPTH_MAX: usize = 8;
/// Largest connections file read, in bytes.
pub const LLM_CONFIG_BYTES_MAX: u64 = 256 * 1024;
/// Largest key file read, in bytes.
pub const LLM_KEY_FILE_BYTES_MAX: u64 = 16 * 1024;

fn default_timeout_ms() -> u64 {
    LLM_TIMEOUT_MS_DEFAULT
}
fn default_retries_max() -> u32 {
    LLM_RETRIES_MAX_DEFAULT
}
fn default_backoff_base_ms() -> u64 {
    LLM_BACKOFF_BASE_MS_DEFAULT
}
fn default_backoff_max_ms() -> u64 {
    LLM_BACKOFF_MAX_MS_DEFAULT
}
fn default_max_tokens() -> u32 {
    LLM_MAX_TOKENS_DEFAULT
}
fn default_tool_choice() -> String {
    "auto".into()
}
fn default_concurrency_max() -> usize {
    LLM_CONCURRENCY_MAX_DEFAULT
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConnectionFile {
    base_url: String,
    model: String,
    /// The model `{base_url}/embeddings` is asked for (else `model`).
    #[serde(default)]
    embedding_model: Option<String>,
    #[serde(default)]
    api_key_env: Option<String>,
    #[serde(default)]
    api_key_file: Option<String>,
    #[serde(default = "default_timeout_ms")]
    timeout_ms: u64,
    #[serde(default = "default_retries_max")]
    retries_max: u32,
    #[serde(default = "default_backoff_base_ms")]
    backoff_base_ms: u64,
    #[serde(default = "default_backoff_max_ms")]
    backoff_max_ms: u64,
    #[serde(default = "default_tool_choice")]
    tool_choice: String,
    #[serde(default)]
    temperature_milli: u32,
    #[serde(default = "default_max_tokens")]
    max_tokens: u32,
    #[serde(default)]
    failover: Vec<String>,
    #[serde(default)]
    prompt_micros_per_mtok: u64,
    #[serde(default)]
    completion_micros_per_mtok: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConnectionsFile {
    #[serde(default)]
    default: Option<String>,
    #[serde(default = "default_concurrency_max")]
    concurrency_max: usize,
    #[serde(default)]
    connection: BTreeMap<String, ConnectionFile>,
}

/// An API key. Its `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }
    /// The key, for the Authorization header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(redacted)")
    }
}

/// One validated connection.
#[derive(Debug, Clone)]
pub struct Connection {
    pub name: String,
    /// Up to and including `/v1`; requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    pub key: Option<ApiKey>,
    pub params: LlmParams,
    pub prices: Prices,
    /// The model asked for embeddings (docs/memory.md, "Embeddings").
    pub embedding_model: String,
    pub timeout_ms: u64,
    pub retries_max: u32,
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    pub failover: Vec<String>,
}

/// Every connection of a land, the default, and the land-wide call cap.
#[derive(Debug, Clone)]
pub struct Connections {
    pub connections: BTreeMap<String, Connection>,
    pub default: String,
    pub concurrency_max: usize,
}

/// What is wrong with a connections file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionsError {
    #[error("{path}: {reason}")]
    Read { path: String, reason: String },
    #[error("{path}: {field}: {reason}")]
    Field { path: String, field: String, reason: String },
}

impl Connections {
    /// Reads and validates a connections file; keys are read now, from the
    /// environment variable or key file each connection names.
    pub fn load(path: &Path) -> Result<Connections, ConnectionsError> {
        let shown = path.display().to_string();
        let read_error = |reason: String| ConnectionsError::Read { path: shown.clone(), reason };
        let size = std::fs::metadata(path).map_err(|e| read_error(e.to_string()))?.len();
        if size > LLM_CONFIG_BYTES_MAX {
            return Err(read_error(format!("{size} bytes, over {LLM_CONFIG_BYTES_MAX}")));
        }
        let text = std::fs::read_to_string(path).map_err(|e| read_error(e.to_string()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Connections::parse(&text, &shown, base, &|name| std::env::var(name).ok())
    }

    /// Parses a connections file; `env` looks up environment variables.
    pub fn parse(
        text: &str,
        shown: &str,
        base: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Connections, ConnectionsError> {
        let field_error = |field: &str, reason: String| ConnectionsError::Field {
            path: shown.to_string(),
            field: field.to_string(),
            reason,
        };
        let file: ConnectionsFile = toml::from_str(text)
            .map_err(|e| ConnectionsError::Read { path: shown.to_string(), reason: e.to_string() })?;
        if file.connection.is_empty() {
            return Err(field_error("connection", "no connections: add a [connection.NAME] table".into()));
        }
        if file.concurrency_max == 0 {
            return Err(field_error("concurrency_max", "must be at least 1".into()));
        }
        let mut connections = BTreeMap::new();
        for (name, given) in &file.connection {
            let at = |field: &str| format!("connection.{name}.{field}");
            if let Some(reason) = crate::names::kebab_name_problem(name) {
                return Err(field_error(&format!("connection.{name}"), format!("{name:?}: {reason}")));
            }
            let base_url = given.base_url.trim_end_matches('/').to_string();
            let parsed = reqwest::Url::parse(&base_url).map_err(|e| field_error(&at("base_url"), e.to_string()))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(field_error(&at("base_url"), format!("scheme {:?} is not http or https", parsed.scheme())));
            }
            if !parsed.username().is_empty() || parsed.password().is_some() {
                return Err(field_error(&at("base_url"), "put credentials in api_key_env or api_key_file".into()));
            }
            if given.model.trim().is_empty() {
                return Err(field_error(&at("model"), "is empty".into()));
            }
            let key = match (&given.api_key_env, &given.api_key_file) {
                (Some(_), Some(_)) => {
                    return Err(field_error(&at("api_key_env"), "give api_key_env or api_key_file, not both".into()))
                }
                (Some(variable), None) => Some(ApiKey::new(env(variable).ok_or_else(|| {
                    field_error(&at("api_key_env"), format!("the environment variable {variable} is not set"))
                })?)),
                (None, Some(file)) => {
                    Some(read_key_file(&base.join(file)).map_err(|e| field_error(&at("api_key_file"), e.to_string()))?)
                }
                (None, None) => None,
            };
            if !matches!(given.tool_choice.as_str(), "auto" | "required")
                && !crate::llm::VERBS.contains(&given.tool_choice.as_str())
            {
                return Err(field_error(
                    &at("tool_choice"),
                    format!("{:?} is not auto, required, see, do, summon or be", given.tool_choice),
                ));
            }
            if given.timeout_ms == 0 {
                return Err(field_error(&at("timeout_ms"), "must be at least 1".into()));
            }
            if given.temperature_milli > 2_000 {
                return Err(field_error(
                    &at("temperature_milli"),
                    "must be at most 2000 (a temperature of 2.0)".into(),
                ));
            }
            if given.max_tokens == 0 {
                return Err(field_error(&at("max_tokens"), "must be at least 1".into()));
            }
            connections.insert(
                name.clone(),
                Connection {
                    name: name.clone(),
                    base_url,
                    key,
                    params: LlmParams {
                        model: given.model.clone(),
                        tool_choice: given.tool_choice.clone(),
                        temperature_milli: given.temperature_milli,
                        max_tokens: given.max_tokens,
                    },
                    prices: Prices {
                        prompt_micros_per_mtok: given.prompt_micros_per_mtok,
                        completion_micros_per_mtok: given.completion_micros_per_mtok,
                    },
                    embedding_model: given.embedding_model.clone().unwrap_or_else(|| given.model.clone()),
                    timeout_ms: given.timeout_ms,
                    retries_max: given.retries_max,
                    backoff_base_ms: given.backoff_base_ms,
                    backoff_max_ms: given.backoff_max_ms.max(given.backoff_base_ms),
                    failover: given.failover.clone(),
                },
            );
        }
        for connection in connections.values() {
            for (index, next) in connection.failover.iter().enumerate() {
                if !connections.contains_key(next) {
                    return Err(field_error(
                        &format!("connection.{}.failover[{index}]", connection.name),
                        format!("no connection named {next:?}"),
                    ));
                }
            }
        }
        let default = match file.default {
            Some(name) if connections.contains_key(&name) => name,
            Some(name) => return Err(field_error("default", format!("no connection named {name:?}"))),
            None if connections.len() == 1 => connections.keys().next().cloned().unwrap_or_default(),
            None => return Err(field_error("default", "several connections: name the default one".into())),
        };
        Ok(Connections { connections, default, concurrency_max: file.concurrency_max })
    }

    /// The connections to try for a name, in order: it, then its failover
    /// chain (breadth first, each once, at most LLM_FAILOVER_DEPTH_MAX).
    pub fn chain(&self, first: &str) -> Vec<&Connection> {
        let mut order: Vec<&Connection> = Vec::new();
        let mut queue = std::collections::VecDeque::from([first.to_string()]);
        while let Some(name) = queue.pop_front() {
            if order.len() >= LLM_FAILOVER_DEPTH_MAX {
                break;
            }
            let Some(connection) = self.connections.get(&name) else { continue };
            if order.iter().any(|seen| seen.name == name) {
                continue;
            }
            order.push(connection);
            queue.extend(connection.failover.iter().cloned());
        }
        order
    }
}

/// A key file that cannot be used (its path shown, never its contents).
#[derive(Debug, thiserror::Error)]
enum KeyFileError {
    #[error("{path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}: {size} bytes, over {LLM_KEY_FILE_BYTES_MAX}")]
    TooLarge { path: String, size: u64 },
    #[error("{path}: the key file is empty")]
    Empty { path: String },
}

fn read_key_file(path: &Path) -> Result<ApiKey, KeyFileError> {
    let shown = || path.display().to_string();
    let size = std::fs::metadata(path).map_err(|source| KeyFileError::Read { path: shown(), source })?.len();
    if size > LLM_KEY_FILE_BYTES_MAX {
        return Err(KeyFileError::TooLarge { path: shown(), size });
    }
    let text = std::fs::read_to_string(path).map_err(|source| KeyFileError::Read { path: shown(), source })?;
    let key = text.trim();
    if key.is_empty() {
        return Err(KeyFileError::Empty { path: shown() });
    }
    Ok(ApiKey::new(key))
}
