//! MCP tools as DO operations (docs/mcp.md, "MCP servers' tools as DO
//! operations"): an extension declares an MCP server and the tools of it
//! it offers, each under the name of a DO operation. Calling one changes
//! nothing in the world; the call is made in the moment through the
//! moment's one door to the outside (`LanguageModel::call_tool`), and the
//! server's answer is recorded in the act ([`ToolRecord`]), as a model's
//! answer is, so replay answers from the record and never starts or calls
//! the server.
//!
//! Here is what is pure: the server's declaration read from a manifest, the
//! record, the question and the answer. The client is the portal crate's
//! (`mcp_client`).

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How long one call may take, in milliseconds (`timeout_ms`).
pub const MCP_TOOL_TIMEOUT_MS_DEFAULT: u64 = 30_000;
/// Calls retried after the server failed to answer (`retries_max`).
pub const MCP_TOOL_RETRIES_MAX_DEFAULT: u32 = 2;
/// Calls to one server at once (`concurrency_max`).
pub const MCP_TOOL_CONCURRENCY_MAX_DEFAULT: usize = 4;
/// Largest result recorded, in bytes of its JSON (`result_bytes_max`).
pub const MCP_TOOL_RESULT_BYTES_MAX_DEFAULT: usize = 65_536;
/// Failures in a row after which the server is not called (`breaker_failures_max`).
pub const MCP_BREAKER_FAILURES_MAX_DEFAULT: u32 = 5;
/// How long the breaker stays open, in milliseconds (`breaker_cooldown_ms`).
pub const MCP_BREAKER_COOLDOWN_MS_DEFAULT: u64 = 30_000;
/// Most servers one extension declares.
pub const MCP_SERVERS_PER_EXTENSION_MAX: usize = 8;
/// Most tools one server offers as operations.
pub const MCP_TOOLS_PER_SERVER_MAX: usize = 64;

/// An MCP server an extension declares, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerSpec {
    /// The server's name in the land (kebab-case, unique).
    pub name: String,
    /// The command that serves it over stdio, and its arguments.
    pub command: Vec<String>,
    /// The folder the command runs in (the extension's).
    pub dir: PathBuf,
    /// Tool name → the DO operation it is offered as.
    pub tools: BTreeMap<String, String>,
    pub timeout_ms: u64,
    pub retries_max: u32,
    pub concurrency_max: usize,
    pub result_bytes_max: usize,
    pub breaker_failures_max: u32,
    pub breaker_cooldown_ms: u64,
    /// The extension that declared it.
    pub origin: String,
}

/// A server as a manifest writes it (`[[provides.mcp]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerManifest {
    pub name: String,
    pub command: Vec<String>,
    /// Tool name = "operation name".
    pub tools: BTreeMap<String, String>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(default)]
    pub retries_max: Option<u32>,
    #[serde(default)]
    pub concurrency_max: Option<usize>,
    #[serde(default)]
    pub result_bytes_max: Option<usize>,
    #[serde(default)]
    pub breaker_failures_max: Option<u32>,
    #[serde(default)]
    pub breaker_cooldown_ms: Option<u64>,
}

impl McpServerManifest {
    /// The validated server, or each problem with its field (relative to the entry).
    pub fn read(&self, origin: &str, dir: &std::path::Path) -> Result<McpServerSpec, Vec<(String, String)>> {
        let mut problems = Vec::new();
        if let Some(reason) = crate::names::kebab_name_problem(&self.name) {
            problems.push(("name".to_string(), format!("{:?}: {reason}", self.name)));
        }
        if self.command.first().is_none_or(|program| program.trim().is_empty()) {
            problems.push(("command".into(), "names no program: give [\"program\", \"argument\", …]".into()));
        }
        if self.tools.is_empty() {
            problems.push(("tools".into(), "offers no tool: give TOOL = \"operation-name\"".into()));
        }
        if self.tools.len() > MCP_TOOLS_PER_SERVER_MAX {
            problems.push(("tools".into(), format!("more than {MCP_TOOLS_PER_SERVER_MAX} tools")));
        }
        for (tool, operation) in &self.tools {
            if let Some(reason) = crate::names::kebab_name_problem(operation) {
                problems.push((format!("tools.{tool}"), format!("{operation:?}: {reason}")));
            }
        }
        let positive = |field: &str, value: u64, problems: &mut Vec<(String, String)>| {
            if value == 0 {
                problems.push((field.to_string(), "must be at least 1".to_string()));
            }
        };
        let spec = McpServerSpec {
            name: self.name.clone(),
            command: self.command.clone(),
            dir: dir.to_path_buf(),
            tools: self.tools.clone(),
            timeout_ms: self.timeout_ms.unwrap_or(MCP_TOOL_TIMEOUT_MS_DEFAULT),
            retries_max: self.retries_max.unwrap_or(MCP_TOOL_RETRIES_MAX_DEFAULT),
            concurrency_max: self.concurrency_max.unwrap_or(MCP_TOOL_CONCURRENCY_MAX_DEFAULT),
            result_bytes_max: self.result_bytes_max.unwrap_or(MCP_TOOL_RESULT_BYTES_MAX_DEFAULT),
            breaker_failures_max: self.breaker_failures_max.unwrap_or(MCP_BREAKER_FAILURES_MAX_DEFAULT),
            breaker_cooldown_ms: self.breaker_cooldown_ms.unwrap_or(MCP_BREAKER_COOLDOWN_MS_DEFAULT),
            origin: origin.to_string(),
        };
        positive("timeout_ms", spec.timeout_ms, &mut problems);
        positive("concurrency_max", spec.concurrency_max as u64, &mut problems);
        positive("result_bytes_max", spec.result_bytes_max as u64, &mut problems);
        positive("breaker_failures_max", u64::from(spec.breaker_failures_max), &mut problems);
        if problems.is_empty() {
            Ok(spec)
        } else {
            Err(problems)
        }
    }
}

/// What an act records of its tool call. Fields in canonical order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRecord {
    /// The tool, as the server names it.
    pub tool: String,
    /// The server that answered.
    pub server: String,
    /// The result as received (`CallToolResult` as JSON text).
    pub result: String,
    /// The server said the call failed (`isError`): the call was made.
    pub is_error: bool,
}

/// One tool call a moment asks for.
#[derive(Debug, Clone, Copy)]
pub struct ToolQuestion<'a> {
    pub server: &'a str,
    pub tool: &'a str,
    pub arguments: &'a Json,
    /// Seeds the retries' backoff (the moment's).
    pub seed: u64,
}

/// The server's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolAnswer {
    pub result: String,
    pub is_error: bool,
    /// How many calls it took (for the trace; not recorded in the act).
    pub attempts: u32,
}

impl ToolRecord {
    /// The answer the record holds: what replay gives back.
    pub fn answer(&self) -> ToolAnswer {
        ToolAnswer { result: self.result.clone(), is_error: self.is_error, attempts: 0 }
    }

    /// The result's text for people: its text content joined, else its JSON.
    pub fn result_text(&self) -> String {
        let parsed: Json = serde_json::from_str(&self.result).unwrap_or(Json::Null);
        let texts: Vec<&str> = parsed["content"]
            .as_array()
            .map(|content| content.iter().filter_map(|block| block["text"].as_str()).collect())
            .unwrap_or_default();
        if texts.is_empty() {
            self.result.clone()
        } else {
            texts.join("\n")
        }
    }
}
