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
/// The land's ceiling on one attempt of a tool call (`mcp_call_timeout_ms`).
pub const MCP_CALL_TIMEOUT_MS_DEFAULT: u64 = 300_000;
/// The land's ceiling on one tool call's retries (`mcp_call_retries_max`).
pub const MCP_CALL_RETRIES_MAX_DEFAULT: u32 = 10;
/// The land's ceiling on one server's calls at once (`mcp_calls_in_flight_max`).
pub const MCP_CALLS_IN_FLIGHT_MAX_DEFAULT: usize = 64;
/// The land's ceiling on a tool call's result (`mcp_result_bytes_max`).
pub const MCP_LAND_RESULT_BYTES_MAX_DEFAULT: usize = 1_048_576;
/// The land's ceiling on a server's failures in a row before its breaker
/// opens (`mcp_breaker_failures_max`).
pub const MCP_LAND_BREAKER_FAILURES_MAX_DEFAULT: u32 = 100;
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

/// Most bytes of a server's `url`.
pub const MCP_SERVER_URL_BYTES_MAX: usize = 2_048;

/// How the land reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A command that serves it over stdio, run in `dir` (the extension's folder).
    Stdio { command: Vec<String>, dir: PathBuf },
    /// A server already running, reached over streamable HTTP at `url`
    /// (http or https). `bearer_token_env` names the environment variable
    /// whose value is sent as its bearer token: the token itself is never
    /// written in a manifest, a fact or a log.
    Url { url: String, bearer_token_env: Option<String> },
}

impl McpTransport {
    /// Where the server is, for a message (never the token).
    pub fn describe(&self) -> String {
        match self {
            McpTransport::Stdio { command, dir } => format!("{} (in {})", command.join(" "), dir.display()),
            McpTransport::Url { url, .. } => url.clone(),
        }
    }
}

/// An MCP server an extension declares, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerSpec {
    /// The server's name in the land (kebab-case, unique).
    pub name: String,
    pub transport: McpTransport,
    /// The declaring extension's folder (where its tool schemas are recorded).
    pub extension_dir: PathBuf,
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
    /// The command that serves it over stdio (run in the extension's folder) …
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// … or the URL it is served at over streamable HTTP: one of the two.
    #[serde(default)]
    pub url: Option<String>,
    /// With `url`: the environment variable holding its bearer token.
    #[serde(default)]
    pub bearer_token_env: Option<String>,
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
        let transport = match (&self.command, &self.url) {
            (Some(command), None) => {
                if command.first().is_none_or(|program| program.trim().is_empty()) {
                    problems.push(("command".into(), "names no program: give [\"program\", \"argument\", …]".into()));
                }
                if self.bearer_token_env.is_some() {
                    problems.push((
                        "bearer_token_env".into(),
                        "is for a server reached by url; a command's server gets its environment".into(),
                    ));
                }
                McpTransport::Stdio { command: command.clone(), dir: dir.to_path_buf() }
            }
            (None, Some(url)) => {
                if let Some(reason) = url_problem(url) {
                    problems.push(("url".into(), format!("{url:?}: {reason}")));
                }
                if let Some(name) = &self.bearer_token_env {
                    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        problems.push((
                            "bearer_token_env".into(),
                            format!("{name:?} is not an environment variable's name (letters, digits, _)"),
                        ));
                    }
                }
                McpTransport::Url { url: url.clone(), bearer_token_env: self.bearer_token_env.clone() }
            }
            (Some(_), Some(_)) => {
                problems.push(("url".into(), "give command or url, not both".into()));
                McpTransport::Stdio { command: Vec::new(), dir: dir.to_path_buf() }
            }
            (None, None) => {
                problems.push((
                    "command".into(),
                    "is missing: give command = [\"program\", …] (stdio) or url = \"http://…\" (streamable HTTP)"
                        .into(),
                ));
                McpTransport::Stdio { command: Vec::new(), dir: dir.to_path_buf() }
            }
        };
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
            transport,
            extension_dir: dir.to_path_buf(),
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

/// The folder of an extension holding its servers' recorded tool schemas
/// (`seed mcp-schemas` writes them): `mcp-schemas/SERVER.json`.
pub const MCP_SCHEMAS_DIR: &str = "mcp-schemas";
/// Largest recorded schemas file, in bytes.
pub const MCP_SCHEMAS_FILE_BYTES_MAX: u64 = 1_048_576;

/// The file recording `server`'s tool schemas in an extension's folder.
pub fn schemas_file(extension_dir: &std::path::Path, server: &str) -> PathBuf {
    extension_dir.join(MCP_SCHEMAS_DIR).join(format!("{server}.json"))
}

/// One tool as its server describes it in `tools/list`, recorded in the
/// extension (so the verb layer's check and a model's prompt read a file,
/// never the server: replay sees what the moment saw).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpToolSchema {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(rename = "inputSchema")]
    pub input_schema: Json,
}

/// A server's recorded tool schemas, by tool name (only the tools offered).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSchemasFile {
    pub server: String,
    pub tools: BTreeMap<String, McpToolSchema>,
}

/// An input schema the verb layer cannot check calls against.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("its inputSchema's {field} is {found}, not {expected}")]
pub struct InputSchemaProblem {
    pub field: &'static str,
    pub found: String,
    pub expected: &'static str,
}

/// The argument check a tool's input schema gives the verb layer: each
/// top-level property typed (`string`, `integer`, `number` (a fact holds no
/// fractions, so an integer), `boolean`; any other type is any value),
/// `required` required, and other fields accepted unless
/// `additionalProperties` is `false`. The server still checks the rest
/// (ranges, patterns, nested objects) against its own schema.
pub fn arg_schema_of(input_schema: &Json) -> Result<crate::moment::ops::ArgSchema, InputSchemaProblem> {
    use crate::moment::ops::{ArgSchema, ArgType};
    let wrong = |field: &'static str, expected: &'static str| InputSchemaProblem {
        field,
        found: input_schema[field].to_string(),
        expected,
    };
    if input_schema.get("type").and_then(Json::as_str).is_some_and(|kind| kind != "object") {
        return Err(wrong("type", "\"object\""));
    }
    let required: Vec<&str> = match input_schema.get("required") {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(names)) => names.iter().filter_map(Json::as_str).collect(),
        Some(_) => return Err(wrong("required", "a list of names")),
    };
    let mut schema = ArgSchema::open();
    schema.open = input_schema.get("additionalProperties") != Some(&Json::Bool(false));
    let properties = match input_schema.get("properties") {
        None | Some(Json::Null) => serde_json::Map::new(),
        Some(Json::Object(properties)) => properties.clone(),
        Some(_) => return Err(wrong("properties", "an object")),
    };
    for (name, property) in &properties {
        let kind = match property.get("type").and_then(Json::as_str) {
            Some("string") => ArgType::Text,
            Some("integer" | "number") => ArgType::Integer,
            Some("boolean") => ArgType::Bool,
            _ => ArgType::Any,
        };
        schema = schema.field(name, kind, required.contains(&name.as_str()));
    }
    for name in required {
        if !properties.contains_key(name) {
            schema = schema.field(name, ArgType::Any, true);
        }
    }
    Ok(schema)
}

/// Why `url` cannot be a server's address, if it cannot: an absolute http
/// or https URL with a host, no credentials (a token goes in
/// `bearer_token_env`) and no fragment.
fn url_problem(url: &str) -> Option<String> {
    if url.len() > MCP_SERVER_URL_BYTES_MAX {
        return Some(format!("longer than {MCP_SERVER_URL_BYTES_MAX} bytes"));
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Some("is not an absolute URL: give http://HOST[:PORT]/PATH or https://…".into());
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Some(format!("the scheme {scheme:?} is not http or https"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() {
        return Some("names no host".into());
    }
    if authority.contains('@') {
        return Some("carries credentials: put the token in an environment variable named by bearer_token_env".into());
    }
    if url.contains('#') {
        return Some("has a fragment (#…), which a server never sees".into());
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("contains whitespace".into());
    }
    None
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
    /// The land's limits on the call, at the moment's world.
    pub limits: ToolLimits,
}

/// The land's limits on one MCP tool call, read at the calling moment's
/// world: ceilings over the server's own (its manifest's), the smaller of
/// the two holding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLimits {
    pub call: crate::llm::CallLimits,
    pub result_bytes_max: usize,
    pub breaker_failures_max: u32,
}

impl ToolLimits {
    /// The limits at `world` (the `mcp_call_*` keys, `mcp_result_bytes_max`,
    /// `mcp_breaker_failures_max`).
    pub fn of(world: &crate::world::World) -> ToolLimits {
        ToolLimits {
            call: crate::llm::CallLimits::of_tools(world),
            result_bytes_max: world.config_u64("mcp_result_bytes_max", MCP_LAND_RESULT_BYTES_MAX_DEFAULT as u64)
                as usize,
            breaker_failures_max: world
                .config_u64("mcp_breaker_failures_max", u64::from(MCP_LAND_BREAKER_FAILURES_MAX_DEFAULT))
                .min(u64::from(u32::MAX)) as u32,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The problems reading `manifest` (TOML of one server) gives, as `field: reason` lines.
    fn check(manifest: &str, expected: &[&str]) {
        let parsed: McpServerManifest = toml::from_str(manifest).expect("the case's TOML");
        let problems = match parsed.read("ext", std::path::Path::new("/ext")) {
            Ok(_) => Vec::new(),
            Err(problems) => problems.into_iter().map(|(field, reason)| format!("{field}: {reason}")).collect(),
        };
        assert_eq!(problems, expected, "{manifest}");
    }

    #[test]
    fn a_server_is_reached_by_one_command_or_one_url_and_each_mistake_is_named() {
        let tools = "tools = { echo = \"echo\" }\n";
        check(&format!("name = \"s\"\ncommand = [\"x\"]\n{tools}"), &[]);
        check(&format!("name = \"s\"\nurl = \"http://127.0.0.1:9/mcp\"\n{tools}"), &[]);
        check(
            &format!("name = \"s\"\nurl = \"https://tools.example/mcp\"\nbearer_token_env = \"TOKEN_1\"\n{tools}"),
            &[],
        );
        check(
            &format!("name = \"s\"\n{tools}"),
            &["command: is missing: give command = [\"program\", …] (stdio) or url = \"http://…\" (streamable HTTP)"],
        );
        check(
            &format!("name = \"s\"\ncommand = [\"x\"]\nurl = \"http://h/mcp\"\n{tools}"),
            &["url: give command or url, not both"],
        );
        check(
            &format!("name = \"s\"\nurl = \"ftp://h/mcp\"\n{tools}"),
            &["url: \"ftp://h/mcp\": the scheme \"ftp\" is not http or https"],
        );
        check(
            &format!("name = \"s\"\nurl = \"h/mcp\"\n{tools}"),
            &["url: \"h/mcp\": is not an absolute URL: give http://HOST[:PORT]/PATH or https://…"],
        );
        check(&format!("name = \"s\"\nurl = \"http:///mcp\"\n{tools}"), &["url: \"http:///mcp\": names no host"]);
        check(
            &format!("name = \"s\"\nurl = \"https://me:secret@h/mcp\"\n{tools}"),
            &["url: \"https://me:secret@h/mcp\": carries credentials: put the token in an environment variable named by bearer_token_env"],
        );
        check(
            &format!("name = \"s\"\nurl = \"http://h/mcp\"\nbearer_token_env = \"A-B\"\n{tools}"),
            &["bearer_token_env: \"A-B\" is not an environment variable's name (letters, digits, _)"],
        );
        check(
            &format!("name = \"s\"\ncommand = [\"x\"]\nbearer_token_env = \"A\"\n{tools}"),
            &["bearer_token_env: is for a server reached by url; a command's server gets its environment"],
        );
    }

    #[test]
    fn an_input_schema_gives_the_verb_layer_its_fields_types_and_required() {
        use crate::moment::refusal::ArgProblem;
        let schema = arg_schema_of(&json!({
            "type": "object",
            "properties": {
                "message": {"type": "string"}, "count": {"type": "number"}, "loud": {"type": "boolean"},
                "extra": {"type": "array"},
            },
            "required": ["message"],
        }))
        .expect("a schema");
        let cases: &[(serde_json::Value, Result<(), ArgProblem>)] = &[
            (json!({"message": "hi"}), Ok(())),
            (json!({"message": "hi", "count": 3, "loud": true, "extra": [1], "other": "x"}), Ok(())),
            (json!({}), Err(ArgProblem::Required { name: "message".into() })),
            (json!({"message": 1}), Err(ArgProblem::WrongType { name: "message".into(), expected: "a string" })),
            (
                json!({"message": "hi", "count": "3"}),
                Err(ArgProblem::WrongType { name: "count".into(), expected: "an integer" }),
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(&schema.validate(args), expected, "{args}");
        }
        let closed = arg_schema_of(&json!({"properties": {"a": {}}, "additionalProperties": false})).expect("closed");
        assert_eq!(closed.validate(&json!({"b": 1})), Err(ArgProblem::Unknown { name: "b".into() }));
        assert_eq!(
            arg_schema_of(&json!({"type": "string"})).map(|_| ()).map_err(|problem| problem.to_string()),
            Err("its inputSchema's type is \"string\", not \"object\"".to_string())
        );
    }
}
