//! LLM cognition: one chat-completion call per moment.
//!
//! The pure part lives here: the two-message prompt built from the face (with
//! a prompt budget), the tools derived from the composed can* lists, the
//! request body and its digest, reading a response into a verb call, a see or
//! a failure, and the record an act keeps of its call. The I/O sits behind the
//! [`LanguageModel`] trait: the portal crate's `llm_http::client` calls real
//! endpoints (connections, retries, failover, a concurrency cap), replay
//! answers from the act's record ([`Recorded`]), and `llm_http::fake` is an
//! in-process endpoint for tests and benchmarks. This crate does no I/O.
//! Documented in docs/llm.md.

use crate::face::{Face, RecallBlock};
use crate::fact::{blake3_of, Hash32};
pub use crate::world::body::{LlmParams, LlmRecord, Prices};
use crate::world::{VerbCall, World};
use serde_json::{json, Value as Json};
use std::time::{Duration, UNIX_EPOCH};

/// Longest system + user message of one call, in characters (land
/// configuration key `llm_prompt_chars_max`). See-resolver blocks that do not
/// fit are left out with a note; the rest must fit or the moment fails.
pub const LLM_PROMPT_CHARS_MAX: usize = 16_000;
/// Largest model response an act records, in bytes (`llm_response_bytes_max`);
/// a larger answer is a failure. Keeps an act under the fact body limit.
pub const LLM_RESPONSE_BYTES_MAX: usize = 32 * 1024;

/// The four verbs, in the order tools are offered.
pub const VERBS: [&str; 4] = ["see", "do", "summon", "be"];

/// What a reel's sealed LLM acts used, summed (the being page, `seed reel`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LlmTotals {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_micros: u64,
}

impl LlmTotals {
    pub fn add(&mut self, record: &LlmRecord) {
        self.calls += 1;
        self.prompt_tokens += record.prompt_tokens;
        self.completion_tokens += record.completion_tokens;
        self.cost_micros += record.cost_micros;
    }
}

/// The two messages and the tools of one moment's call.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub system: String,
    pub user: String,
    /// The verbs offered, in [`VERBS`] order (those whose can* list is non-empty).
    pub offered: Vec<&'static str>,
    /// One OpenAI function tool per offered verb.
    pub tools: Vec<Json>,
    /// See-resolver blocks left out to stay within the budget.
    pub omitted: Vec<String>,
    /// Recalled items (their fact ids) left out to stay within the budget.
    pub recall_left_out: Vec<String>,
}

impl Prompt {
    /// The request body for a connection's parameters. serde_json maps keep
    /// their keys sorted, so the same prompt and parameters give the same bytes.
    pub fn request_body(&self, params: &LlmParams) -> Vec<u8> {
        let mut body = json!({
            "model": params.model,
            "messages": [
                { "role": "system", "content": self.system },
                { "role": "user", "content": self.user },
            ],
            "temperature": f64::from(params.temperature_milli) / 1000.0,
            "max_tokens": params.max_tokens,
            "stream": false,
        });
        if !self.tools.is_empty() {
            body["tools"] = Json::Array(self.tools.clone());
            body["tool_choice"] = match params.tool_choice.as_str() {
                "auto" | "required" => Json::String(params.tool_choice.clone()),
                verb if self.offered.contains(&verb) => json!({ "type": "function", "function": { "name": verb } }),
                _ => Json::String("auto".into()),
            };
        }
        serde_json::to_vec(&body).expect("a JSON value always serialises")
    }

    pub fn request_digest(&self, params: &LlmParams) -> Hash32 {
        blake3_of(&self.request_body(params))
    }
}

fn list(face_value: &Json, verb: &str) -> Vec<String> {
    face_value["can"][verb]
        .as_array()
        .map(|entries| entries.iter().filter_map(|entry| entry.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

fn enum_of(entries: &[String]) -> Json {
    json!({ "type": "string", "enum": entries })
}

/// The tools for the composed can* lists: exactly the verbs whose list is
/// non-empty, each with its allowed entries as an enum.
pub fn tools(face: &Face) -> (Vec<&'static str>, Vec<Json>) {
    let mut offered = Vec::new();
    let mut tools = Vec::new();
    // A being that remembers may say how much an act matters; other faces'
    // tools (and so their requests) are what they always were.
    let remembers = face.recall().is_some();
    let mut add = |verb: &'static str, description: &str, mut properties: Json, required: &[&str]| {
        if remembers {
            properties["importance"] = json!({
                "type": "integer", "minimum": 0, "maximum": crate::memory::recall::IMPORTANCE_MAX,
                "description": "how much this act matters for you to remember, 0 to 10 (optional)",
            });
        }
        offered.push(verb);
        tools.push(json!({
            "type": "function",
            "function": {
                "name": verb,
                "description": description,
                "parameters": { "type": "object", "properties": properties, "required": required },
            },
        }));
    };
    if !face.can_see.is_empty() {
        add(
            "see",
            "Look at a place, a thing or a being you may see.",
            json!({ "address": enum_of(&face.can_see) }),
            &["address"],
        );
    }
    if !face.can_do.is_empty() {
        let mut description = "Do one of the actions you may do, on a target address, with its arguments.".to_string();
        let mut args = json!({ "type": "object" });
        // An MCP tool's action says what it does and what it takes, as its
        // server described it; a face without one is offered what it always was.
        if !face.can_do_described.is_empty() {
            description.push_str(" What some actions do, and the args each takes (a JSON Schema):");
            for (action, described) in &face.can_do_described {
                description.push_str(&format!("\n- {action}: "));
                if !described.description.is_empty() {
                    description.push_str(described.description.trim_end_matches('.'));
                    description.push_str(". ");
                }
                description.push_str(&format!("args: {}", described.input_schema));
            }
            args["description"] = json!("the action's arguments, as its schema above asks");
        }
        add(
            "do",
            &description,
            json!({
                "action": enum_of(&face.can_do),
                "target": { "type": "string", "description": "the address acted on (default /)" },
                "args": args,
            }),
            &["action"],
        );
    }
    if !face.can_summon.is_empty() {
        // The target defaults to whoever woke the being only when a summon did.
        let woken_by_summon = face.wake()["kind"] == "summon";
        add(
            "summon",
            if woken_by_summon {
                "Speak to a being: your words go to its inbox and wake it. Without a target, answer whoever woke you."
            } else {
                "Speak to a being: your words go to its inbox and wake it."
            },
            json!({ "target": enum_of(&face.can_summon), "content": { "type": "string" } }),
            if woken_by_summon { &["content"] } else { &["target", "content"] },
        );
    }
    if !face.can_be.is_empty() {
        add(
            "be",
            "Change who you are or what you hold: one of your identity operations, with its payload.",
            json!({ "operation": enum_of(&face.can_be), "payload": { "type": "object" } }),
            &["operation"],
        );
    }
    (offered, tools)
}

/// The stored time as RFC 3339 (a pure conversion: no clock is read).
pub fn format_time(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// The user message: the wake's content.
pub fn user_message(face: &Face) -> String {
    let wake = face.wake();
    match wake["kind"].as_str() {
        Some("summon") => wake["content"].as_str().unwrap_or_default().to_string(),
        Some("signal") => format!(
            "The world signal {} is now {}.",
            wake["key"].as_str().unwrap_or_default(),
            if wake["value"].is_null() { "unset".to_string() } else { wake["value"].to_string() }
        ),
        Some("tick") => format!("Tick {}: time has passed; nothing else woke you.", wake["tick"]),
        Some("self-continue") => "Continue: your last act asked for another moment.".into(),
        _ => String::new(),
    }
}

/// The prompt of `face` within the land's `llm_prompt_chars_max` (what an
/// LLM moment, a panel's members and replay's report all build).
pub fn prompt_in(world: &crate::world::World, face: &Face) -> Result<Prompt, PromptError> {
    let budget = world.config_u64("llm_prompt_chars_max", LLM_PROMPT_CHARS_MAX as u64) as usize;
    prompt(face, budget)
}

/// Builds the prompt from the face within `prompt_chars_max` characters.
pub fn prompt(face: &Face, prompt_chars_max: usize) -> Result<Prompt, PromptError> {
    let value = &face.value();
    let text = |pointer: &str| value.pointer(pointer).and_then(Json::as_str).unwrap_or_default().to_string();
    let (offered, tools) = tools(face);
    let mut head = String::new();
    head.push_str(&format!(
        "You are @{}, a being in a seed world. Each moment you may make one tool call, or none to only look.\n",
        text("/me/name")
    ));
    head.push_str(&format!(
        "You are in {} (home {}). Summons waiting in your inbox: {}.\n",
        text("/me/space"),
        text("/me/home"),
        value["inbox"]
    ));
    let stack: Vec<String> = value["roles"]["stack"]
        .as_array()
        .map(|names| names.iter().filter_map(|n| n.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    head.push_str(&format!(
        "Roles you wear now: {}{}.\n",
        value["roles"]["primary"].as_str().unwrap_or("none"),
        if stack.is_empty() { String::new() } else { format!(" (stacked: {})", stack.join(", ")) }
    ));
    head.push_str(&format!("The time is {}.\n", format_time(value["time"]["ms"].as_u64().unwrap_or(0))));
    head.push_str("\n[capabilities]\n");
    if offered.is_empty() {
        head.push_str("You cannot act on the world in this moment: answer in words or stay silent.\n");
    }
    for verb in &offered {
        head.push_str(&format!("{verb}: {}\n", list(value, verb).join(", ")));
    }
    let role_prompt = text("/prompt");
    let tail =
        if role_prompt.trim().is_empty() { String::new() } else { format!("\n[role]\n{}\n", role_prompt.trim()) };
    let user = user_message(face);
    let essential = head.chars().count() + tail.chars().count() + user.chars().count();
    if essential > prompt_chars_max {
        return Err(PromptError::OverBudget { needed: essential, most: prompt_chars_max });
    }
    let mut used = essential;
    let mut blocks = String::new();
    let mut omitted = Vec::new();
    if let Some(seen) = value["see"].as_object() {
        for (name, output) in seen {
            // Strings pass through as the resolver framed them; structures render as JSON.
            let body = match output {
                Json::String(text) => text.clone(),
                other => serde_json::to_string_pretty(other).unwrap_or_default(),
            };
            let block = format!("\n[{name}]\n{body}\n");
            let note = format!("\n[{name}] left out: over the prompt budget\n");
            let size = block.chars().count();
            if used + size <= prompt_chars_max {
                used += size;
                blocks.push_str(&block);
            } else {
                omitted.push(name.clone());
                if used + note.chars().count() <= prompt_chars_max {
                    used += note.chars().count();
                    blocks.push_str(&note);
                }
            }
        }
    }
    let mut recall_left_out = Vec::new();
    if let Some(recall) = face.recall() {
        blocks.push_str(&recall_text(recall, prompt_chars_max, &mut used, &mut recall_left_out));
    }
    Ok(Prompt { system: format!("{head}{blocks}{tail}"), user, offered, tools, omitted, recall_left_out })
}

/// The face's `recall` block as prompt text: one line per item in rank
/// order, each citing its fact, as many as fit in `prompt_chars_max` (with
/// `used` characters spent); the facts of the rest go to `left_out`, and
/// the text says how many were left out, here and by the face's own budget.
fn recall_text(recall: &RecallBlock, prompt_chars_max: usize, used: &mut usize, left_out: &mut Vec<String>) -> String {
    let mut text =
        format!("\n[recall]\nWhat you remember of your own past, most relevant first (query: {:?}):\n", recall.query);
    if recall.items.is_empty() && recall.stand_ins.is_empty() {
        text.push_str("nothing comes to mind.\n");
    }
    let header = text.chars().count();
    if *used + header > prompt_chars_max {
        left_out.extend(recall.shown().map(|(item, _)| item.fact.to_hex()));
        return String::new();
    }
    *used += header;
    // Room is kept for the line saying what was left out.
    const LEFT_OUT_LINE_CHARS: usize = 96;
    for (item, stands_in) in recall.shown() {
        let stands_in = if stands_in { ", a reflection standing in for what is left out" } else { "" };
        let line = format!(
            "- {} (land seq {}, {}, importance {}, fact {}{stands_in})\n",
            item.text,
            item.land_seq,
            item.kind.as_str(),
            item.importance,
            item.fact.to_hex(),
        );
        let size = line.chars().count();
        if left_out.is_empty() && *used + size + LEFT_OUT_LINE_CHARS <= prompt_chars_max {
            *used += size;
            text.push_str(&line);
        } else {
            left_out.push(item.fact.to_hex());
        }
    }
    let left = left_out.len() + recall.left_out.len();
    if left > 0 {
        let line = format!("({left} more remembered items left out: over the budget)\n");
        *used += line.chars().count();
        text.push_str(&line);
    }
    text
}

/// Token counts a response reports (zero when it reports none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
}

/// What a response says the being does (its token counts are read by
/// [`LlmRecord::of`]; tool calls after the first are not taken).
#[derive(Debug, Clone, PartialEq)]
pub struct Interpreted {
    /// `None`: no tool call, a see.
    pub call: Option<VerbCall>,
    /// Prose that rode with the call (or, for a see, the prose said to nobody).
    pub content: Option<String>,
    /// How important the model says the act is to remember (0 to 10).
    pub importance: Option<u8>,
}

/// The token counts of a response, if it is JSON with a `usage` block.
pub fn tokens_of(response: &str) -> Tokens {
    let Ok(value) = serde_json::from_str::<Json>(response) else { return Tokens::default() };
    Tokens {
        prompt: value["usage"]["prompt_tokens"].as_u64().unwrap_or(0),
        completion: value["usage"]["completion_tokens"].as_u64().unwrap_or(0),
    }
}

/// Reads a chat-completion response: the first tool call is the act, prose
/// beside it its content; no tool call is a see. Anything else is an error
/// naming what is wrong (the moment fails with it).
pub fn interpret(response: &str, offered: &[&str]) -> Result<Interpreted, ResponseError> {
    let value: Json =
        serde_json::from_str(response).map_err(|error| ResponseError::NotJson { reason: error.to_string() })?;
    if let Some(error) = value.get("error") {
        return Err(ResponseError::Endpoint { error: error.to_string() });
    }
    let choices = value["choices"].as_array().ok_or(ResponseError::NoChoices)?;
    let choice = choices.first().ok_or(ResponseError::EmptyChoices)?;
    let message = choice.get("message").filter(|m| m.is_object()).ok_or(ResponseError::NoMessage)?;
    let prose = message["content"].as_str().map(str::trim).filter(|text| !text.is_empty()).map(str::to_string);
    let Some(first) = message["tool_calls"].as_array().and_then(|calls| calls.first()) else {
        return Ok(Interpreted { call: None, content: prose, importance: None });
    };
    let function = &first["function"];
    let name = function["name"].as_str().ok_or(ResponseError::NoFunctionName)?;
    // An unoffered name is named before its arguments are read.
    check_offered(name, offered)?;
    let args: Json = match &function["arguments"] {
        Json::String(text) if text.trim().is_empty() => json!({}),
        Json::String(text) => serde_json::from_str(text).map_err(|error| ResponseError::Arguments {
            name: name.to_string(),
            problem: format!("are not JSON ({error}): {text:?}"),
        })?,
        Json::Object(_) => function["arguments"].clone(),
        Json::Null => json!({}),
        other => {
            return Err(ResponseError::Arguments {
                name: name.to_string(),
                problem: format!("are neither a JSON text nor an object: {other}"),
            })
        }
    };
    call_of_tool(name, &args, prose, offered)
}

fn check_offered(name: &str, offered: &[&str]) -> Result<(), ResponseError> {
    if offered.contains(&name) {
        return Ok(());
    }
    Err(ResponseError::NotOffered {
        name: name.to_string(),
        offered: if offered.is_empty() { "none".to_string() } else { offered.join(", ") },
    })
}

/// Reads one call of a verb tool (`tools`), by its name and its arguments
/// as a JSON object, into a verb call: the model's tool call and an MCP
/// client's `tools/call` are read by this one rule. `prose` is what rode
/// beside the call (a summon without `content` says it).
pub fn call_of_tool(
    name: &str,
    args: &Json,
    prose: Option<String>,
    offered: &[&str],
) -> Result<Interpreted, ResponseError> {
    check_offered(name, offered)?;
    let arguments_problem = |problem: String| ResponseError::Arguments { name: name.to_string(), problem };
    if !args.is_object() {
        return Err(arguments_problem(format!("are not an object: {args}")));
    }
    let field = |key: &str| args.get(key).and_then(Json::as_str).map(str::to_string);
    let needs =
        |key: &'static str| field(key).ok_or_else(|| ResponseError::NeedsText { name: name.to_string(), field: key });
    let mut content = prose;
    let call = match name {
        "see" => VerbCall::See { address: needs("address")? },
        "do" => VerbCall::Do {
            target: field("target").unwrap_or_else(|| "/".into()),
            action: needs("action")?,
            args: args.get("args").cloned().unwrap_or(Json::Null),
        },
        "summon" => {
            // The spoken words are the summon's content; prose beside a
            // content-less summon is what it says.
            let words = match field("content") {
                Some(words) => words,
                None => content.take().ok_or(ResponseError::SummonWithoutContent)?,
            };
            VerbCall::Summon { target: field("target").unwrap_or_default(), content: words, in_reply_to: None }
        }
        "be" => {
            VerbCall::Be { operation: needs("operation")?, payload: args.get("payload").cloned().unwrap_or(Json::Null) }
        }
        other => return Err(ResponseError::NotAVerb { name: other.to_string() }),
    };
    let importance = match args.get("importance") {
        None | Some(Json::Null) => None,
        Some(given) => Some(
            given
                .as_u64()
                .and_then(|value| u8::try_from(value).ok())
                .filter(|value| *value <= crate::memory::recall::IMPORTANCE_MAX)
                .ok_or_else(|| arguments_problem(format!("have an `importance` that is not 0 to 10: {given}")))?,
        ),
    };
    Ok(Interpreted { call: Some(call), content, importance })
}

/// A prompt that does not fit its budget.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    #[error("the prompt needs {needed} characters without its see blocks, over llm_prompt_chars_max = {most}")]
    OverBudget { needed: usize, most: usize },
}

/// A model's response that is not a usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponseError {
    #[error("the response is not JSON ({reason})")]
    NotJson { reason: String },
    #[error("the endpoint answered with an error: {error}")]
    Endpoint { error: String },
    #[error("the response has no `choices` list")]
    NoChoices,
    #[error("the response's `choices` list is empty")]
    EmptyChoices,
    #[error("the first choice has no `message`")]
    NoMessage,
    #[error("the tool call has no function name")]
    NoFunctionName,
    #[error("the model called `{name}`, which was not offered (offered: {offered})")]
    NotOffered { name: String, offered: String },
    /// `problem` continues the sentence "the arguments of `NAME` …".
    #[error("the arguments of `{name}` {problem}")]
    Arguments { name: String, problem: String },
    #[error("`{name}` needs a text `{field}`")]
    NeedsText { name: String, field: &'static str },
    #[error("`summon` needs a `content`")]
    SummonWithoutContent,
    #[error("the model called `{name}`, which is not a verb")]
    NotAVerb { name: String },
}

/// The land's ceiling on one attempt of a model call (`llm_call_timeout_ms`);
/// a connection's own `timeout_ms` (60,000 unless it says) may be shorter.
pub const LLM_CALL_TIMEOUT_MS_DEFAULT: u64 = 300_000;
/// The land's ceiling on one model call's retries (`llm_call_retries_max`);
/// a connection's own `retries_max` (3 unless it says) may be fewer.
pub const LLM_CALL_RETRIES_MAX_DEFAULT: u32 = 10;
/// The land's ceiling on model calls in flight at once
/// (`llm_calls_in_flight_max`); the connections file's `concurrency_max`
/// (8 unless it says) may be lower.
pub const LLM_CALLS_IN_FLIGHT_MAX_DEFAULT: usize = 64;

/// The land's limits on one call through the moment's door to the outside
/// (a model's or an MCP server's), read at the world the calling moment
/// opened on: a connection or a server may ask for less, never more. They
/// change what the call may cost in time, never what a moment records, so
/// replay (which calls nothing) never reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    pub timeout_ms: u64,
    pub retries_max: u32,
    pub in_flight_max: usize,
}

impl CallLimits {
    /// A model call's limits at `world` (`llm_call_timeout_ms`,
    /// `llm_call_retries_max`, `llm_calls_in_flight_max`).
    pub fn of_models(world: &World) -> CallLimits {
        CallLimits {
            timeout_ms: world.config_u64("llm_call_timeout_ms", LLM_CALL_TIMEOUT_MS_DEFAULT),
            retries_max: world.config_u64("llm_call_retries_max", LLM_CALL_RETRIES_MAX_DEFAULT as u64) as u32,
            in_flight_max: world.config_u64("llm_calls_in_flight_max", LLM_CALLS_IN_FLIGHT_MAX_DEFAULT as u64) as usize,
        }
    }

    /// An MCP tool call's limits at `world` (`mcp_call_timeout_ms`,
    /// `mcp_call_retries_max`, `mcp_calls_in_flight_max`); with the tools'
    /// own, [`crate::tools::ToolLimits::of`].
    pub fn of_tools(world: &World) -> CallLimits {
        use crate::tools::{
            MCP_CALLS_IN_FLIGHT_MAX_DEFAULT, MCP_CALL_RETRIES_MAX_DEFAULT, MCP_CALL_TIMEOUT_MS_DEFAULT,
        };
        CallLimits {
            timeout_ms: world.config_u64("mcp_call_timeout_ms", MCP_CALL_TIMEOUT_MS_DEFAULT),
            retries_max: world.config_u64("mcp_call_retries_max", MCP_CALL_RETRIES_MAX_DEFAULT as u64) as u32,
            in_flight_max: world.config_u64("mcp_calls_in_flight_max", MCP_CALLS_IN_FLIGHT_MAX_DEFAULT as u64) as usize,
        }
    }

    /// The smaller of what the land allows and what the connection or the
    /// server asks (`own`), and which of the two it is, for a message.
    pub fn timeout_ms_within(&self, own: u64, land_key: &'static str) -> (u64, &'static str) {
        if self.timeout_ms < own {
            (self.timeout_ms, land_key)
        } else {
            (own, "timeout_ms")
        }
    }
}

/// What the moment asks of a language model.
pub struct Question<'a> {
    /// The connection the resolution chain named (being → role → land), if any;
    /// `None` leaves it to the client's default.
    pub connection: Option<&'a str>,
    pub prompt: &'a Prompt,
    /// Seeds retry jitter (derived from the moment's id).
    pub seed: u64,
    /// The panel member asking (`crate::moment::panel`), if one: replay
    /// answers each member from its own record.
    pub member: Option<&'a str>,
    /// The land's limits on the call, at the moment's world.
    pub limits: CallLimits,
}

/// A text to embed, and the connection to embed it with.
#[derive(Debug, Clone, Copy)]
pub struct EmbedQuestion<'a> {
    pub connection: &'a str,
    pub text: &'a str,
    /// Seeds retry jitter.
    pub seed: u64,
    /// The land's limits on the call, at the world it is asked from.
    pub limits: CallLimits,
}

/// A text's vector, quantised (`crate::embedding::quantise`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Embedded {
    pub connection: String,
    pub model: String,
    pub vector: Vec<i8>,
}

/// A model's answer, as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub connection: String,
    pub params: LlmParams,
    pub prices: Prices,
    pub response: String,
    /// Observability only (never in a fact): calls made, and wall time.
    pub attempts: u32,
    pub latency_us: u64,
}

/// Why no answer came (after retries and failover).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} (after {attempts} attempt(s))")]
pub struct NoAnswer {
    pub reason: String,
    pub attempts: u32,
}

/// The narrow interface to a model: a real client, a recorded answer in
/// replay, or nothing.
pub trait LanguageModel: Send + Sync {
    fn answer(&self, question: &Question<'_>) -> Result<Answer, NoAnswer>;
    /// A text's vector, from the connection `question.connection` names
    /// (`crate::embedding`). Without one, there is no vector.
    fn embed(&self, question: &EmbedQuestion<'_>) -> Result<Embedded, NoAnswer> {
        Err(NoAnswer {
            reason: format!("no embedding connection {:?} is configured", question.connection),
            attempts: 0,
        })
    }
    /// Calls an MCP server's tool (`crate::tools`): the moment's other door
    /// to the outside, answered by the record in replay. Without a client,
    /// there is no answer.
    fn call_tool(&self, question: &crate::tools::ToolQuestion<'_>) -> Result<crate::tools::ToolAnswer, NoAnswer> {
        Err(NoAnswer { reason: format!("no MCP server {:?} is connected", question.server), attempts: 0 })
    }
    /// How many calls it takes at once (how many moments may wait on it).
    fn concurrency(&self) -> usize {
        1
    }
}

/// No model is connected: LLM moments fail saying so.
pub struct NoModel;

impl LanguageModel for NoModel {
    fn answer(&self, _question: &Question<'_>) -> Result<Answer, NoAnswer> {
        Err(NoAnswer { reason: "no LLM connection is configured (seed sim --llm FILE)".into(), attempts: 0 })
    }
}

/// Replay's model: the answer the act recorded. Never calls anything.
pub struct Recorded<'a>(pub &'a LlmRecord);

impl LanguageModel for Recorded<'_> {
    fn answer(&self, _question: &Question<'_>) -> Result<Answer, NoAnswer> {
        Ok(Answer {
            connection: self.0.connection.clone(),
            params: self.0.params.clone(),
            prices: self.0.prices,
            response: self.0.response.clone(),
            attempts: 0,
            latency_us: 0,
        })
    }
}

impl LlmRecord {
    /// The record of an answer to a prompt.
    pub fn of(prompt: &Prompt, answer: &Answer) -> LlmRecord {
        let tokens = tokens_of(&answer.response);
        let cost = |tokens: u64, per_million: u64| (u128::from(tokens) * u128::from(per_million) / 1_000_000) as u64;
        LlmRecord {
            connection: answer.connection.clone(),
            params: answer.params.clone(),
            request: prompt.request_digest(&answer.params),
            response: answer.response.clone(),
            prompt_tokens: tokens.prompt,
            completion_tokens: tokens.completion,
            prices: answer.prices,
            cost_micros: cost(tokens.prompt, answer.prices.prompt_micros_per_mtok)
                .saturating_add(cost(tokens.completion, answer.prices.completion_micros_per_mtok)),
        }
    }
}

/// What the moment trace shows of an LLM call (observability, not a fact).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LlmTrace {
    pub connection: String,
    pub model: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_micros: u64,
    pub attempts: u32,
    pub latency_us: u64,
    pub request: Option<Hash32>,
    /// Prose the model said (for a see, said to nobody: logged, not sealed).
    pub prose: Option<String>,
    pub omitted_see_blocks: Vec<String>,
    /// The records of the moment's answered calls (a panel makes several):
    /// the engine seals each in a `spend` fact when the moment seals no act
    /// (`crate::spend`).
    pub records: Vec<LlmRecord>,
}
