//! The moment: one wake of one being, in five beats, each a pure function of
//! the world at the moment's cursor and what the previous beats produced.
//!
//! open → assign → face → momentum → decide
//!
//! - **open** fixes the wake, the cursor and the stored time, and derives the
//!   moment's id (which seeds any randomness).
//! - **assign** builds the open context, walks the roleFlow and composes the role.
//! - **face** builds the face: identity, time, the wake, the capabilities
//!   (can* lists with relationship tokens expanded), see-resolver outputs and
//!   the rendered prompt.
//! - **momentum** runs the cognition (a Rhai script, a model's answer, or a
//!   person's choice) and gets at most one verb call.
//! - **decide** is the verb layer: it checks the call against the composed
//!   role and the substrate's rules, runs the DO operation, and produces the
//!   act body (or refuses: a failure with its reason).
//!
//! Sealing the act (signing, appending) is the caller's I/O, not a beat here.
//!
//! This file holds the beats' order (`run`, `run_person`, `preview`), beats
//! 1 to 3 and the trace; beside it: [`substrate`](Substrate) (what a moment
//! consults besides the world), `momentum.rs` (beat 4), `decide.rs` (beat 5
//! and the seal-time recheck), `refusal.rs` (every way a moment fails),
//! `ops.rs` and `see.rs` (DO operations and see-resolvers), `hooks.rs`
//! (extension hooks) and `observe.rs` (observers and the running-moments
//! table).

pub mod approval;
mod decide;
pub mod hooks;
mod momentum;
mod observe;
pub mod ops;
pub mod panel;
pub mod recall;
pub mod refusal;
pub mod see;
mod substrate;

use crate::canonical;
pub use crate::face::Face;
use crate::fact::{blake3_of, BeingId, Hash32};
use crate::llm::{self, LanguageModel, LlmTrace};
use crate::roles::flow::{BoundFlow, Walk};
use crate::roles::{compose, ComposedRole, OpenContext};
use crate::world::address::space_name;
use crate::world::{BeingRow, Wake, World};
pub use decide::{decide, is_ancestor, recheck, recheck_rules, seal_time_effects, Act, BirthRequest};
pub use momentum::{llm_connection, momentum, parse_call, person_momentum, Decision, PersonChoice};
pub use observe::{LiveObserver, MomentObserver, RunningMoment, RunningMoments, TimedObserver, Unobserved};
pub use refusal::{ApprovalProblem, CallError, LlmFailure, OpError, Refusal, SeeError};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::sync::Arc;
pub use substrate::{parse_authored_role, MomentLimits, Substrate};

/// Recorded in every act: which evaluator decided it.
pub const EVALUATOR_VERSION: &str = concat!("seed ", env!("CARGO_PKG_VERSION"));
/// Most summons waiting in one inbox; a summon to a full inbox is refused.
/// Land configuration key `inbox_depth_max` overrides it (as for the others).
pub const INBOX_DEPTH_MAX: usize = 64;
/// Most summons one being may seal in a minute (`summons_per_minute_max`).
pub const SUMMONS_PER_MINUTE_MAX: usize = 60;
/// Longest summon content / act prose, in characters (`summon_content_chars_max`).
pub const SUMMON_CONTENT_CHARS_MAX: usize = 4_000;
/// Most beings one land holds (births beyond it are refused; `beings_per_land_max`).
pub const BEINGS_PER_LAND_MAX: usize = 1_000_000;

/// Where a moment stopped when it did not act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Beat {
    Open,
    Assign,
    Face,
    Momentum,
    Decide,
    /// The seal-time recheck (against the world as the round's earlier acts
    /// left it) or the land's sealing itself.
    Seal,
}

impl Beat {
    pub fn as_str(self) -> &'static str {
        match self {
            Beat::Open => "open",
            Beat::Assign => "assign",
            Beat::Face => "face",
            Beat::Momentum => "momentum",
            Beat::Decide => "decide",
            Beat::Seal => "seal",
        }
    }
}

/// A moment that did not act: where it stopped and why. Its `Display` is
/// the trace's `failure in BEAT: REASON`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failure in {}: {refusal}", beat.as_str())]
pub struct Failure {
    pub beat: Beat,
    pub refusal: Refusal,
}

fn failure(beat: Beat, refusal: Refusal) -> Failure {
    Failure { beat, refusal }
}

/// Beat 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    pub being: BeingId,
    pub wake: Wake,
    pub cursor: u64,
    pub stored_time_ms: u64,
    /// BLAKE3 of (being, cursor, stored time, wake): seeds the moment's randomness.
    pub id: Hash32,
}

/// Bytes reserved for the input of a moment's id (being, cursor, time, and
/// the wake's encoding, which is short unless a signal's key is long).
const OPENED_ID_INPUT_BYTES_RESERVED: usize = 160;

pub fn open(world: &World, being: BeingId, wake: Wake, stored_time_ms: u64) -> Opened {
    let mut input = Vec::with_capacity(OPENED_ID_INPUT_BYTES_RESERVED);
    input.extend_from_slice(&being.0);
    input.extend_from_slice(&world.cursor.to_be_bytes());
    input.extend_from_slice(&stored_time_ms.to_be_bytes());
    let wake_at = input.len();
    crate::world::write_wake(&wake, &mut input);
    debug_assert_eq!(Ok(&input[wake_at..]), canonical::to_canonical_bytes(&wake).as_deref());
    Opened { being, wake, cursor: world.cursor, stored_time_ms, id: blake3_of(&input) }
}

/// The pending summon that woke the moment, if any.
fn waking_summon<'a>(world: &'a World, opened: &Opened) -> Option<&'a crate::world::PendingSummon> {
    match &opened.wake {
        Wake::Summon { fact, .. } => world.inbox.get(&opened.being)?.values().find(|pending| pending.fact == *fact),
        _ => None,
    }
}

/// The open context the `when` language reads (docs/roles.md lists the keys).
pub fn open_context(world: &World, row: &BeingRow, opened: &Opened) -> OpenContext {
    // Keys are inserted in their order (an insert in order is an append);
    // the result does not depend on it.
    let mut context = OpenContext::new();
    let summon = waking_summon(world, opened);
    if let Some(summon) = summon {
        match (&summon.remote, world.beings.get(&summon.from)) {
            // A being of another land: its name qualified by its land's id
            // (a rule naming a being of this land never matches it) and the
            // land's id; its cognition and role are its land's to say, so
            // neither is set.
            (Some(remote), _) => {
                context.insert("caller.name", format!("{}@{}", remote.name, remote.land.to_hex()).as_str());
                context.insert("caller.land", remote.land.to_hex().as_str());
            }
            (None, caller) => {
                if let Some(caller) = caller {
                    context.insert("caller.cognition", caller.effective_cognition().as_str());
                    context.insert("caller.name", caller.name.as_str());
                }
                if let Some(role) = &summon.caller_role {
                    context.insert("caller.role", role.as_str());
                }
            }
        }
    }
    context.insert("inHomeSpace", row.location == row.home_space);
    context.insert("me.cognition", row.effective_cognition().as_str());
    context.insert("me.name", row.name.as_str());
    // Only once something important was remembered, so that a being that
    // never was keeps the contexts (and digests) it always had.
    let importance = world.memories.get(&row.id).map_or(0, |memory| memory.importance_since_reflection());
    if importance > 0 {
        context.insert("me.memory.importanceSinceReflection", importance);
    }
    if let Some(previous) = &row.previous_role {
        context.insert("me.previousRole", previous.as_str());
    }
    for (key, value) in &row.qualities {
        context.insert(format!("me.quality.{key}"), value.clone());
    }
    let space = if row.location == "/" { "/" } else { space_name(&row.location) };
    context.insert("space.name", space);
    if let Some(space) = world.spaces.get(&row.location) {
        for (key, value) in &space.qualities {
            context.insert(format!("space.quality.{key}"), value.clone());
        }
    }
    let ms = opened.stored_time_ms;
    // 1970-01-01 was a Thursday (day 4, with Sunday = 0).
    context.insert("time.dayOfWeek", (ms / 86_400_000 + 4) % 7);
    context.insert("time.hour", (ms / 3_600_000) % 24);
    if let Some(last) = row.last_act_ms {
        context.insert("time.sinceLastMoment", ms.saturating_sub(last) / 1000);
    }
    if summon.is_some() {
        context.insert("verb", "summon");
    }
    if let Wake::Cascade { arrival } = &opened.wake {
        if let Some(arrival) = world.cascade.arrival(&row.location, arrival) {
            context.insert("cascade.depth", arrival.depth);
            if let Some(writer) = arrival.writer.and_then(|writer| world.name_of(&writer)) {
                context.insert("cascade.from", writer);
            }
            context.insert("cascade.origin", arrival.origin.as_str());
            if let Json::Object(payload) = &arrival.payload {
                for (key, value) in payload {
                    context.insert(format!("cascade.payload.{key}"), value.clone());
                }
            }
            context.insert("cascade.write", arrival.kind.as_str());
        }
    }
    for (key, value) in &world.signals {
        context.insert(format!("world.{key}"), value.clone());
    }
    context
}

fn context_digest(context: &OpenContext) -> Hash32 {
    blake3_of(&canonical::encode_json_entries(context.iter()).expect("context values come from facts"))
}

/// Beat 2.
pub struct Assigned {
    pub context: OpenContext,
    pub context_digest: Hash32,
    pub flow: Arc<BoundFlow>,
    pub walk: Walk,
    pub composed: ComposedRole,
    pub composed_digest: Hash32,
}

pub fn assign(substrate: &Substrate, world: &World, opened: &Opened) -> Result<Assigned, Failure> {
    let row = world.beings.get(&opened.being).ok_or_else(|| failure(Beat::Assign, Refusal::BeingNotInWorld))?;
    let flow = substrate.bound_flow(world, row).map_err(|refusal| failure(Beat::Assign, refusal))?;
    assign_flow(substrate, world, opened, flow)
}

/// Beat 2 with a given bound flow (the role-manager's preview of a flow not
/// stored yet walks it exactly as a moment would).
pub fn assign_flow(
    substrate: &Substrate,
    world: &World,
    opened: &Opened,
    flow: Arc<BoundFlow>,
) -> Result<Assigned, Failure> {
    let row = world.beings.get(&opened.being).ok_or_else(|| failure(Beat::Assign, Refusal::BeingNotInWorld))?;
    let context = open_context(world, row, opened);
    let walk = flow.walk(&context, row.effective_cognition());
    let composed = compose(walk.primary.as_ref(), &walk.modifiers);
    Ok(Assigned {
        context_digest: context_digest(&context),
        composed_digest: substrate.composed_digest(&walk, &composed),
        context,
        flow,
        walk,
        composed,
    })
}

/// Entries naming beings without '@' are taken as `@name`.
fn as_being_entries(entries: Vec<String>) -> Vec<String> {
    entries
        .into_iter()
        .map(|entry| if entry.starts_with('@') || entry.starts_with('/') { entry } else { format!("@{entry}") })
        .collect()
}

/// Beat 3: the face, what the cognition reads (see [`face`]).
pub fn build_face<'w>(
    substrate: &Substrate,
    world: &'w World,
    opened: &Opened,
    assigned: &Assigned,
    model: &dyn LanguageModel,
) -> Result<Face<'w>, Failure> {
    let row = world.beings.get(&opened.being).ok_or_else(|| failure(Beat::Face, Refusal::BeingNotInWorld))?;
    let composed = &assigned.composed;
    let expand = |entries| substrate.resolvers.expand(entries, &row.name, world);
    let can_see = expand(&composed.can_see);
    // An extension blocked where the being stands offers it nothing (`crate::ownership`).
    let blocked = |origin: &str| crate::ownership::is_blocked(world, origin, &row.location);
    let mut can_do = expand(&composed.can_do);
    can_do.retain(|action| substrate.ops.get(action).is_none_or(|spec| !blocked(&spec.origin)));
    let can_do_described = can_do
        .iter()
        .filter_map(|action| Some((action.clone(), substrate.ops.get(action)?.described.clone()?)))
        .collect();
    let can_summon = as_being_entries(expand(&composed.can_summon));
    let can_be = expand(&composed.can_be);
    let mut seen = serde_json::Map::new();
    let seed = u64::from_be_bytes(opened.id.0[16..24].try_into().expect("32 bytes"));
    for name in composed.see.iter().filter(|name| !blocked(substrate.see.origin(name))) {
        let output = substrate
            .see
            .resolve(name, world, row, &substrate.scripts, seed)
            .map_err(|error| failure(Beat::Face, Refusal::SeeResolver { name: name.to_string(), error }))?;
        seen.insert(name.to_string(), output);
    }
    let wake = match (&opened.wake, waking_summon(world, opened)) {
        (Wake::Summon { .. }, Some(summon)) => {
            let mut wake = json!({
                "kind": "summon",
                "from": summon.sender(world),
                "content": summon.content,
                "summon": summon.fact.to_hex(),
            });
            // A request for approval says what it asks, for the approver to decide.
            if let Some(pending) = world.approvals.get(&summon.fact) {
                wake["approval"] = json!({
                    "request": summon.fact.to_hex(),
                    "asked": pending.call.to_json(),
                    "content": pending.content,
                    "rule": pending.request.rule,
                    "expiresMs": pending.request.expires_ms,
                });
            }
            wake
        }
        (Wake::Summon { .. }, None) => return Err(failure(Beat::Face, Refusal::WakingSummonGone)),
        (Wake::Signal { key }, _) => json!({ "kind": "signal", "key": key, "value": world.signals.get(key) }),
        (Wake::Tick { tick }, _) => json!({ "kind": "tick", "tick": tick }),
        (Wake::SelfContinue, _) => json!({ "kind": "self-continue" }),
        (Wake::Person, _) => json!({ "kind": "person" }),
        (Wake::Cascade { arrival }, _) => match world.cascade.arrival(&row.location, arrival) {
            Some(arrival) => arrival.to_json(world),
            None => json!({ "kind": "cascade", "arrival": arrival.to_hex() }),
        },
        (Wake::Approval { request, decision }, _) => json!({
            "kind": "approval", "request": request.to_hex(), "decision": decision.map(|fact| fact.to_hex()),
        }),
    };
    let context = |key: &str| assigned.context.get(key).cloned().unwrap_or(Json::Null);
    let (recall, query_vector) = recall::recall_block(world, opened, assigned, &wake, model);
    let face = Face {
        row,
        stored_time_ms: opened.stored_time_ms,
        hour: context("time.hour"),
        day_of_week: context("time.dayOfWeek"),
        since_last_moment: context("time.sinceLastMoment"),
        wake,
        primary: composed.primary.clone(),
        stack: composed.stack.clone(),
        can_see,
        can_do,
        can_summon,
        can_be,
        see: seen,
        prompt: composed.render_prompt(&assigned.context),
        inbox: world.inbox.get(&opened.being).map_or(0, |pending| pending.len()),
        recall,
        can_do_described,
        query_vector,
        digest: Hash32::default(),
    };
    face.sealed().map_err(|error| failure(Beat::Face, Refusal::Encoding(error)))
}

/// The last step of deciding an act that calls an MCP server's tool (a DO
/// operation `crate::tools` declares, applied now: not a request waiting
/// for approval): the call, through `model`, and its answer recorded in the
/// act. Replay's `model` answers from the record. No answer, no act.
pub fn with_tool_answer(
    substrate: &Substrate,
    world: &World,
    model: &dyn LanguageModel,
    act: Option<Act>,
) -> Result<Option<Act>, Failure> {
    let Some(mut act) = act else { return Ok(None) };
    let crate::world::VerbCall::Do { action, args, .. } = &act.body.call else { return Ok(Some(act)) };
    if !crate::approval::Gate::call_applied(act.body.gate.as_ref()) {
        return Ok(Some(act));
    }
    let Some((server, tool)) = substrate.ops.tool_of(action) else { return Ok(Some(act)) };
    let limits = crate::tools::ToolLimits::of(world);
    let question = crate::tools::ToolQuestion { server, tool, arguments: args, seed: act.op_seed, limits };
    let answer = model.call_tool(&question).map_err(|no_answer| {
        let refusal = Refusal::Tool {
            operation: action.clone(),
            server: server.to_string(),
            tool: tool.to_string(),
            reason: no_answer.reason,
        };
        failure(Beat::Decide, refusal)
    })?;
    act.body.tool = Some(crate::tools::ToolRecord {
        tool: tool.to_string(),
        server: server.to_string(),
        result: answer.result,
        is_error: answer.is_error,
    });
    act.encoded = Some(act.body.canonical().map_err(|error| failure(Beat::Decide, Refusal::ActBody(error)))?);
    Ok(Some(act))
}

/// How a moment ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Act(Box<Act>),
    See,
    Failure(Failure),
}

/// The observability record of one moment (not a source of truth).
#[derive(Debug, Clone, PartialEq)]
pub struct MomentTrace {
    pub being: BeingId,
    pub name: String,
    pub wake: Wake,
    pub cursor: u64,
    pub stored_time_ms: u64,
    /// Where the being was when the moment opened.
    pub space: String,
    pub primary: Option<String>,
    pub stack: Vec<String>,
    pub clauses: Vec<String>,
    pub face_digest: Option<Hash32>,
    pub outcome: String,
    /// Microseconds spent in each beat and in total (observability only).
    pub timings_us: BTreeMap<&'static str, u64>,
    /// The model call of an LLM moment: connection, tokens, cost, attempts.
    pub llm: Option<LlmTrace>,
    /// Why the moment only looked (a see), as the moments page says it.
    pub see_reason: Option<String>,
}

/// Runs the five beats with no language model connected. Pure: same world,
/// substrate, being, wake and time, same outcome and trace (timings aside).
pub fn run(
    substrate: &Substrate,
    world: &World,
    being: BeingId,
    wake: Wake,
    stored_time_ms: u64,
) -> (Outcome, MomentTrace) {
    run_observed(substrate, world, being, wake, stored_time_ms, &Unobserved, &llm::NoModel)
}

/// Runs the five beats; LLM cognition asks `model` (the moment's only I/O).
pub fn run_observed(
    substrate: &Substrate,
    world: &World,
    being: BeingId,
    wake: Wake,
    stored_time_ms: u64,
    observer: &dyn MomentObserver,
    model: &dyn LanguageModel,
) -> (Outcome, MomentTrace) {
    let cognition = |opened: &Opened, assigned: &Assigned, face: &Face, llm_trace: &mut Option<LlmTrace>| {
        momentum(substrate, world, opened, assigned, face, model, llm_trace)
    };
    run_beats(substrate, world, being, wake, stored_time_ms, observer, model, &cognition)
}

/// Runs the five beats with a person's choice as the cognition (the portal).
// The moment's inputs, its observer and the model its face may ask for a vector.
#[allow(clippy::too_many_arguments)]
pub fn run_person(
    substrate: &Substrate,
    world: &World,
    being: BeingId,
    wake: Wake,
    stored_time_ms: u64,
    observer: &dyn MomentObserver,
    choice: &PersonChoice,
    model: &dyn LanguageModel,
) -> (Outcome, MomentTrace) {
    let cognition =
        |opened: &Opened, _: &Assigned, _: &Face, _: &mut Option<LlmTrace>| person_momentum(world, opened, choice);
    run_beats(substrate, world, being, wake, stored_time_ms, observer, model, &cognition)
}

/// The beats before the cognition (open, assign, face) for a being now:
/// what it would wear and what it may do, without deciding anything (the
/// portal's pick lists, the role-manager's preview).
pub fn preview<'w>(
    substrate: &Substrate,
    world: &'w World,
    being: BeingId,
    wake: Wake,
    stored_time_ms: u64,
) -> Result<(Opened, Assigned, Face<'w>), Failure> {
    let opened = open(world, being, wake, stored_time_ms);
    let assigned = assign(substrate, world, &opened)?;
    // A preview asks no model: its recall is lexical.
    let face = build_face(substrate, world, &opened, &assigned, &llm::NoModel)?;
    Ok((opened, assigned, face))
}

type Cognizer<'a> = dyn Fn(&Opened, &Assigned, &Face, &mut Option<LlmTrace>) -> Result<Decision, Failure> + 'a;

#[allow(clippy::too_many_arguments)]
fn run_beats(
    substrate: &Substrate,
    world: &World,
    being: BeingId,
    wake: Wake,
    stored_time_ms: u64,
    observer: &dyn MomentObserver,
    model: &dyn LanguageModel,
    cognition: &Cognizer<'_>,
) -> (Outcome, MomentTrace) {
    let started = observer.now_us();
    observer.entered(being, Beat::Open);
    let opened = open(world, being, wake, stored_time_ms);
    let mut trace = MomentTrace {
        being,
        name: world.name_of(&being).unwrap_or_default().to_string(),
        wake: opened.wake.clone(),
        cursor: opened.cursor,
        stored_time_ms,
        space: world.beings.get(&being).map(|row| row.location.clone()).unwrap_or_default(),
        primary: None,
        stack: Vec::new(),
        clauses: Vec::new(),
        face_digest: None,
        outcome: String::new(),
        timings_us: BTreeMap::new(),
        llm: None,
        see_reason: None,
    };
    let mut mark = started;
    let mut lap = |trace: &mut MomentTrace, beat: Beat, next: Option<Beat>| {
        let now = observer.now_us();
        trace.timings_us.insert(beat.as_str(), now.saturating_sub(mark));
        mark = now;
        if let Some(next) = next {
            observer.entered(being, next);
        }
    };
    let result = (|| {
        lap(&mut trace, Beat::Open, Some(Beat::Assign));
        let assigned = assign(substrate, world, &opened)?;
        trace.primary = assigned.composed.primary.as_ref().map(|name| name.to_string());
        trace.stack = assigned.composed.stack.iter().map(|name| name.to_string()).collect();
        if observer.explains_walks() {
            trace.clauses = assigned.flow.explain(&assigned.walk);
        }
        lap(&mut trace, Beat::Assign, Some(Beat::Face));
        let face = build_face(substrate, world, &opened, &assigned, model)?;
        trace.face_digest = Some(face.digest);
        lap(&mut trace, Beat::Face, Some(Beat::Momentum));
        // A decided or expired request is the substrate's to apply or
        // close, whatever the being's cognition: nothing is asked of it.
        if matches!(opened.wake, Wake::Approval { .. }) {
            lap(&mut trace, Beat::Momentum, Some(Beat::Decide));
            let resolved = approval::resolve(substrate, world, &opened, &assigned, &face)
                .and_then(|act| with_tool_answer(substrate, world, model, act));
            lap(&mut trace, Beat::Decide, None);
            return resolved;
        }
        let decision = cognition(&opened, &assigned, &face, &mut trace.llm)?;
        lap(&mut trace, Beat::Momentum, Some(Beat::Decide));
        trace.see_reason = decision.see.as_ref().map(ToString::to_string);
        let decided = decide(substrate, world, &opened, &assigned, &face, decision)
            .and_then(|act| with_tool_answer(substrate, world, model, act));
        lap(&mut trace, Beat::Decide, None);
        decided
    })();
    trace.timings_us.insert("total", observer.now_us().saturating_sub(started));
    let outcome = match result {
        Ok(Some(act)) => {
            // A request, or a request closed unapplied, says so: its call did not happen.
            trace.outcome = match &act.body.gate {
                Some(crate::approval::Gate::Request(request)) => {
                    format!("act: {} (waits for approval: gate {})", act.body.call.verb(), request.rule)
                }
                Some(crate::approval::Gate::Closed { outcome, .. }) => {
                    format!("act: {} (not done: {outcome})", act.body.call.verb())
                }
                _ => format!("act: {}", act.body.call.verb()),
            };
            Outcome::Act(Box::new(act))
        }
        Ok(None) => {
            trace.outcome = "see".into();
            Outcome::See
        }
        Err(failure) => {
            trace.outcome = failure.to_string();
            Outcome::Failure(failure)
        }
    };
    (outcome, trace)
}
