//! The tools an MCP client sees: the driven being's verbs as its composed
//! role offers them now (the LLM's tools, `llm::tools`, for the face a
//! person's moment would open with), then the read tools, which change
//! nothing. A verb call is one person-driven moment (`work::drive`); what
//! the verb layer refuses is a tool result with `isError` carrying the
//! refusal's code and text, as is every argument the caller got wrong.

use super::super::error::PortalError;
use super::super::{views, work, Portal};
use super::McpCaller;
use crate::llm;
use crate::moment::{self, Outcome, PersonChoice};
use crate::world::{Wake, World};
use rmcp::model::{CallToolResult, Tool, ToolAnnotations};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Most beings `list_beings` names in one answer (`mcp_list_beings_max`).
pub const MCP_LIST_BEINGS_MAX: usize = 500;
/// Most facts `read_reel` returns in one answer (`mcp_reel_facts_max`).
pub const MCP_REEL_FACTS_MAX: u64 = 200;
/// Facts `read_reel` returns when the caller names no `limit`.
pub const MCP_REEL_FACTS_DEFAULT: u64 = 20;

/// The read tools, each with its input schema and what it does.
fn read_tools() -> Vec<Tool> {
    let being =
        json!({"type": "string", "description": "a being's name (with or without @); default: the driven being"});
    let schema = |properties: Json, required: &[&str]| {
        let value = json!({"type": "object", "properties": properties, "required": required});
        Arc::new(value.as_object().cloned().unwrap_or_default())
    };
    let read_only = || ToolAnnotations::new().read_only(true);
    vec![
        Tool::new(
            "list_beings",
            "List the land's beings by name (a page at a time, after a name): cognition, parent, place, acts.",
            schema(
                json!({"after": {"type": "string", "description": "list the names after this one"},
                       "limit": {"type": "integer", "minimum": 1, "maximum": MCP_LIST_BEINGS_MAX}}),
                &[],
            ),
        )
        .annotate(read_only()),
        Tool::new(
            "read_reel",
            "Read a being's reel: its signed facts from a seq (default: the latest ones), each with its id and body.",
            schema(
                json!({"being": being, "from_seq": {"type": "integer", "minimum": 0},
                       "limit": {"type": "integer", "minimum": 1, "maximum": MCP_REEL_FACTS_MAX}}),
                &[],
            ),
        )
        .annotate(read_only()),
        Tool::new(
            "face",
            "A being's face now: what it would read if it woke, and what it may see, do, summon and be.",
            schema(json!({"being": being}), &[]),
        )
        .annotate(read_only()),
        Tool::new(
            "replay",
            "Replay a being's history from its reel and say whether every act recomputes byte for byte.",
            schema(json!({"being": being}), &[]),
        )
        .annotate(read_only()),
        Tool::new(
            "what_if",
            "Decide a call for the driven being against the world as it stands and say what it would do, sealing \
             nothing: verb (see, do, summon, be) with the fields of that verb (address; action, target, args; \
             target, content; operation, payload).",
            schema(
                json!({"verb": {"type": "string", "enum": ["see", "do", "summon", "be"]},
                       "address": {"type": "string"}, "action": {"type": "string"}, "target": {"type": "string"},
                       "args": {"type": "object"}, "content": {"type": "string"}, "operation": {"type": "string"},
                       "payload": {"type": "object"}}),
                &["verb"],
            ),
        )
        .annotate(read_only()),
    ]
}

/// The verbs the driven being's face offers now, with their tools (none
/// when its moment cannot open: a person's moment would fail the same way).
fn verbs(portal: &Portal, world: &World, caller: &McpCaller) -> (Vec<&'static str>, Vec<Tool>) {
    let Some(row) = world.being_named(&caller.being) else { return (Vec::new(), Vec::new()) };
    let Ok((_, _, face)) = moment::preview(portal.live.substrate(), world, row.id, Wake::Person, portal.live.now_ms())
    else {
        return (Vec::new(), Vec::new());
    };
    let (offered, tools) = llm::tools(&face);
    let tools = tools
        .into_iter()
        .filter_map(|tool| {
            let function = &tool["function"];
            let name = function["name"].as_str()?.to_string();
            let description = function["description"].as_str().unwrap_or_default().to_string();
            let schema = function["parameters"].as_object()?.clone();
            Some(Tool::new(name, description, Arc::new(schema)))
        })
        .collect();
    (offered, tools)
}

/// Every tool the caller may call now: the verbs, then the read tools.
pub(super) fn listed(portal: &Portal, caller: &McpCaller) -> Vec<Tool> {
    listed_in(portal, &portal.live.world(), caller)
}

fn listed_in(portal: &Portal, world: &World, caller: &McpCaller) -> Vec<Tool> {
    let (_, mut tools) = verbs(portal, world, caller);
    tools.extend(read_tools());
    tools
}

/// What the tool list is, to tell when it changed (never stored).
fn digest(tools: &[Tool]) -> blake3::Hash {
    blake3::hash(&serde_json::to_vec(tools).unwrap_or_default())
}

/// The tool list's digest per driven being, computed once per world
/// snapshot: after a change every connection watching the same being asks
/// for the same value, and twenty connections would otherwise build its
/// face twenty times for one fact (the list depends on the being, never on
/// who drives it).
#[derive(Default)]
pub struct ToolListDigests {
    cached: std::sync::Mutex<Option<DigestsOfWorld>>,
}

/// A world and the tool lists' digests computed in it, by being name.
type DigestsOfWorld = (Arc<World>, BTreeMap<String, blake3::Hash>);

impl ToolListDigests {
    /// The digest of the tool list `caller` would be given now.
    pub(super) fn now(&self, portal: &Portal, caller: &McpCaller) -> blake3::Hash {
        let world = portal.live.world();
        // Held while computing: watchers racing on a new snapshot wait for
        // the one computation instead of each doing it.
        let mut cached = self.cached.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !cached.as_ref().is_some_and(|(seen, _)| Arc::ptr_eq(seen, &world)) {
            *cached = Some((world.clone(), BTreeMap::new()));
        }
        let (_, digests) = cached.as_mut().expect("set above");
        *digests.entry(caller.being.clone()).or_insert_with(|| digest(&listed_in(portal, &world, caller)))
    }
}

/// A tool error the client reads: the code and the message, as text and
/// as structured content.
fn tool_error(code: &str, message: &str) -> CallToolResult {
    CallToolResult::structured_error(json!({"error": {"code": code, "message": message}}))
}

fn from_portal(error: PortalError) -> CallToolResult {
    let mut value = json!({"error": {"code": error.code, "status": error.status.as_u16(), "message": error.message}});
    if let Some(field) = error.field {
        value["error"]["field"] = Json::String(field);
    }
    CallToolResult::structured_error(value)
}

/// Calls `name` for `caller`. An unknown tool is a protocol error (the
/// client asked for what was never listed); everything else, a refusal
/// included, is a tool result.
pub(super) async fn call(
    portal: &Arc<Portal>,
    caller: &McpCaller,
    name: &str,
    arguments: Json,
) -> Result<CallToolResult, McpError> {
    let answer = match name {
        "see" | "do" | "summon" | "be" => return Ok(call_verb(portal, caller, name, &arguments).await),
        "list_beings" => list_beings(portal, &arguments),
        "read_reel" => read_reel(portal, caller, &arguments),
        "face" => face(portal, caller, &arguments),
        "replay" => match being_argument(portal, caller, &arguments) {
            Ok(being) => work::replay(portal, &caller.principal, &being).await,
            Err(error) => Err(error),
        },
        "what_if" => what_if(portal, caller, &arguments),
        other => {
            return Err(McpError::invalid_params(
                format!("there is no tool {other:?}: list the tools to see what the driven being may call"),
                None,
            ))
        }
    };
    Ok(match answer {
        Ok(value) => CallToolResult::structured(value),
        Err(error) => from_portal(error),
    })
}

/// One verb of the driven being: read by the LLM's rule, then one
/// person-driven moment. The face is built once, by the moment: a verb the
/// being's roles do not offer now is refused there by the verb layer (not
/// within its can* list), as an `isError` result like any refusal.
async fn call_verb(portal: &Arc<Portal>, caller: &McpCaller, verb: &str, arguments: &Json) -> CallToolResult {
    let read = match llm::call_of_tool(verb, arguments, None, &llm::VERBS) {
        Ok(read) => read,
        Err(error @ llm::ResponseError::NotOffered { .. }) => return tool_error("not-offered", &error.to_string()),
        Err(error) => return tool_error("bad-arguments", &error.to_string()),
    };
    let Some(call) = read.call else { return tool_error("bad-arguments", "the call names no verb") };
    let choice = PersonChoice { call, content: read.content, importance: read.importance };
    match work::drive(portal, &caller.principal, &caller.being, Wake::Person, choice).await {
        Ok(done) => CallToolResult::structured(done),
        Err(error) => from_portal(error),
    }
}

/// The `being` argument (default: the driven being), which the caller must
/// be allowed to see inside.
fn being_argument(portal: &Portal, caller: &McpCaller, arguments: &Json) -> Result<String, PortalError> {
    let name = work::text_field(arguments, "being")?.map_or(caller.being.as_str(), |name| name.trim_start_matches('@'));
    let world = portal.live.world();
    let row = views::being_row(&world, name)?;
    work::may_act_for(&world, &caller.principal, row)?;
    Ok(row.name.clone())
}

fn whole_number(arguments: &Json, field: &str, most: u64) -> Result<Option<u64>, PortalError> {
    match arguments.get(field) {
        None | Some(Json::Null) => Ok(None),
        Some(value) => match value.as_u64() {
            Some(number) if number <= most => Ok(Some(number)),
            _ => Err(PortalError::field(field, format!("`{field}` is a whole number from 0 to {most}, not {value}"))),
        },
    }
}

fn list_beings(portal: &Portal, arguments: &Json) -> Result<Json, PortalError> {
    let after = work::text_field(arguments, "after")?.map(|name| name.trim_start_matches('@').to_string());
    let limit = whole_number(arguments, "limit", MCP_LIST_BEINGS_MAX as u64)?.unwrap_or(MCP_LIST_BEINGS_MAX as u64);
    if limit == 0 {
        return Err(PortalError::field("limit", "`limit` is at least 1"));
    }
    let world = portal.live.world();
    let mut names: Vec<&str> = world.beings.values().map(|row| row.name.as_str()).collect();
    names.sort_unstable();
    let start = after.as_deref().map_or(0, |after| names.partition_point(|name| *name <= after));
    let page: Vec<Json> = names[start..]
        .iter()
        .take(limit as usize)
        .filter_map(|name| world.being_named(name))
        .map(|row| {
            json!({"name": row.name, "cognition": row.effective_cognition().as_str(),
                   "parent": row.parent.and_then(|parent| world.name_of(&parent).map(|name| format!("@{name}"))),
                   "location": row.location, "acts": row.acts, "ended": row.ended})
        })
        .collect();
    let next = (start + page.len() < names.len()).then(|| page.last().map(|last| last["name"].clone())).flatten();
    Ok(json!({"total": names.len(), "beings": page, "next": next}))
}

pub(super) fn read_reel(portal: &Portal, caller: &McpCaller, arguments: &Json) -> Result<Json, PortalError> {
    let name = being_argument(portal, caller, arguments)?;
    let limit = whole_number(arguments, "limit", MCP_REEL_FACTS_MAX)?.unwrap_or(MCP_REEL_FACTS_DEFAULT).max(1);
    let from = whole_number(arguments, "from_seq", u64::MAX)?;
    let world = portal.live.world();
    let row = views::being_row(&world, &name)?;
    let store = portal.live.store();
    let head = store.head(&row.id).map_err(|error| PortalError::internal(error.to_string()))?;
    let Some(head) = head else { return Ok(json!({"being": name, "head": null, "facts": []})) };
    let from = from.unwrap_or_else(|| (head.seq + 1).saturating_sub(limit));
    // `reel` reads `from <= seq < to`.
    let to = from.saturating_add(limit).min(head.seq + 1);
    let facts = if from > head.seq {
        Vec::new()
    } else {
        store.reel(&row.id, from, to).map_err(|error| PortalError::internal(error.to_string()))?
    };
    let facts: Vec<Json> = facts.iter().map(crate::view::stored_fact_json).collect();
    Ok(json!({"being": name, "id": row.id.to_hex(), "head": head.seq, "facts": facts}))
}

pub(super) fn face(portal: &Portal, caller: &McpCaller, arguments: &Json) -> Result<Json, PortalError> {
    let name = being_argument(portal, caller, arguments)?;
    let world = portal.live.world();
    let row = views::being_row(&world, &name)?;
    let wake = views::preview_wake(row);
    match moment::preview(portal.live.substrate(), &world, row.id, wake, portal.live.now_ms()) {
        Ok((_, assigned, face)) => Ok(json!({
            "being": name,
            "primary": assigned.composed.primary.as_deref(),
            "stack": assigned.composed.stack.iter().map(|role| role.as_ref()).collect::<Vec<_>>(),
            "digest": face.digest.to_hex(),
            "face": face.value(),
            "can": {"see": face.can_see, "do": face.can_do, "summon": face.can_summon, "be": face.can_be},
        })),
        Err(failure) => {
            Ok(json!({"being": name, "failure": format!("{}: {}", failure.beat.as_str(), failure.refusal)}))
        }
    }
}

fn what_if(portal: &Portal, caller: &McpCaller, arguments: &Json) -> Result<Json, PortalError> {
    let choice = work::choice_from(arguments)?;
    let world = portal.live.world();
    let row = views::being_row(&world, &caller.being)?;
    work::may_act_for(&world, &caller.principal, row)?;
    let (outcome, trace) = moment::run_person(
        portal.live.substrate(),
        &world,
        row.id,
        Wake::Person,
        portal.live.now_ms(),
        &moment::Unobserved,
        &choice,
        &llm::NoModel,
    );
    let mut answer = json!({"being": row.name, "sealed": false, "cursor": world.cursor, "outcome": trace.outcome});
    match outcome {
        Outcome::Act(act) => {
            answer["wouldSeal"] = Json::Bool(true);
            answer["act"] = serde_json::to_value(&act.body).unwrap_or(Json::Null);
        }
        Outcome::See => answer["wouldSeal"] = Json::Bool(false),
        Outcome::Failure(failure) => {
            answer["wouldSeal"] = Json::Bool(false);
            answer["refusal"] = json!({"beat": failure.beat.as_str(), "kind": failure.refusal.kind(),
                                       "message": failure.refusal.to_string()});
        }
    }
    Ok(answer)
}
