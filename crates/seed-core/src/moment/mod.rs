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
//! - **momentum** runs the cognition (here: scripted, Rhai) and gets at most
//!   one verb call.
//! - **decide** is the verb layer: it checks the call against the composed
//!   role and the substrate's rules, runs the DO operation, and produces the
//!   act body (or refuses: a failure with its reason).
//!
//! Sealing the act (signing, appending) is the caller's I/O, not a beat here.

pub mod hooks;
pub mod ops;
pub mod refusal;
pub mod see;

use crate::canonical;
pub use crate::face::Face;
use crate::fact::body::Cognition;
use crate::fact::{blake3_of, BeingId, CanonicalBody, Hash32};
use crate::llm::{self, LanguageModel, LlmRecord, LlmTrace};
use crate::roles::definition::RoleRegistry;
use crate::roles::flow::{BoundFlow, Walk};
use crate::roles::resolve::Resolvers;
use crate::roles::{compose, ComposedRole, OpenContext, RoleFlow};
use crate::script::ScriptEngine;
use crate::world::address::{space_name, Address};
use crate::world::body::Digests;
use crate::world::{ActBody, BeingRow, Effect, RoleUse, VerbCall, Wake, World};
use ops::{OpCall, OpRegistry};
pub use refusal::{CallError, LlmFailure, OpError, Refusal, SeeError};
use see::SeeResolvers;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

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

/// Everything a moment consults besides the world.
pub struct Substrate {
    pub roles: RoleRegistry,
    pub resolvers: Resolvers,
    pub ops: OpRegistry,
    pub see: SeeResolvers,
    pub scripts: ScriptEngine,
    pub hooks: hooks::Hooks,
    /// Compiled flows by flow digest, one for each default role and
    /// authored-role registry they were bound with.
    flows: RwLock<BTreeMap<Hash32, Vec<FlowBinding>>>,
    /// Composed-role digests by the digests of the roles in the stack: the
    /// composition of the same definitions is always the same bytes.
    composed_digests: RwLock<BTreeMap<Vec<Hash32>, Hash32>>,
    /// The registry with the world's authored roles laid over it, by the
    /// authored roles' digest.
    overlays: RwLock<BTreeMap<Hash32, Arc<RoleRegistry>>>,
}

/// Parses an authored role's JSON definition (the same validation as a role file).
pub fn parse_authored_role(definition: &Json) -> Result<crate::roles::Role, Vec<crate::roles::RoleLoadError>> {
    crate::roles::Role::parse_authored(&definition.to_string(), "authored")
}

impl Substrate {
    pub fn new(roles: RoleRegistry) -> Substrate {
        let mut ops = OpRegistry::core();
        see::register_grid_ops(&mut ops);
        Substrate {
            roles,
            resolvers: Resolvers::standard(),
            ops,
            see: SeeResolvers::core(),
            scripts: ScriptEngine::new(),
            hooks: hooks::Hooks::default(),
            flows: RwLock::new(BTreeMap::new()),
            composed_digests: RwLock::new(BTreeMap::new()),
            overlays: RwLock::new(BTreeMap::new()),
        }
    }

    /// The role registry as the world at its cursor sees it: the files' roles
    /// with the authored ones laid over them (an authored role shadows a file
    /// role of the same name). A definition this build refuses is left out.
    pub fn registry_for(&self, world: &World) -> Option<Arc<RoleRegistry>> {
        if world.roles.is_empty() {
            return None;
        }
        if let Some(registry) = self.overlays.read().unwrap_or_else(|p| p.into_inner()).get(&world.roles_digest) {
            return Some(registry.clone());
        }
        let mut registry = self.roles.clone();
        for (name, authored) in &world.roles {
            if let Ok(mut role) = parse_authored_role(&authored.definition) {
                if *role.name == **name {
                    role.origin = match authored.author.and_then(|author| world.name_of(&author).map(str::to_string)) {
                        Some(author) => format!("authored by @{author}"),
                        None => "authored".to_string(),
                    };
                    registry.insert(role);
                }
            }
        }
        let registry = Arc::new(registry);
        self.overlays.write().unwrap_or_else(|p| p.into_inner()).insert(world.roles_digest, registry.clone());
        Some(registry)
    }

    /// The digest of a composed role, cached by its stack's definitions.
    pub fn composed_digest(&self, walk: &Walk, composed: &ComposedRole) -> Hash32 {
        let mut key: Vec<Hash32> = Vec::with_capacity(walk.modifiers.len() + 1);
        // A zero first entry keeps "no primary, [a]" apart from "primary a".
        key.push(walk.primary.as_ref().map_or(Hash32::ZERO, |role| role.digest));
        key.extend(walk.modifiers.iter().map(|role| role.digest));
        if let Some(digest) = self.composed_digests.read().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return *digest;
        }
        let digest = composed.digest();
        self.composed_digests.write().unwrap_or_else(|p| p.into_inner()).insert(key, digest);
        digest
    }

    /// The being's flow, compiled and bound once per distinct flow.
    pub fn bound_flow(&self, world: &World, row: &BeingRow) -> Result<Arc<BoundFlow>, Refusal> {
        match row.role_flow_digest {
            Some(flow_digest) => self.bound_flow_keyed(world, flow_digest, &row.role_flow, &row.default_role),
            None => self.bound_flow_of(world, &row.role_flow, &row.default_role),
        }
    }

    /// A flow compiled and bound against the registry `world` sees (the
    /// role-manager's preview binds a flow that is not stored yet).
    pub fn bound_flow_of(
        &self,
        world: &World,
        role_flow: &Json,
        default_role: &str,
    ) -> Result<Arc<BoundFlow>, Refusal> {
        let flow_bytes = canonical::encode_json(role_flow).map_err(Refusal::Encoding)?;
        self.bound_flow_keyed(world, blake3_of(&flow_bytes), role_flow, default_role)
    }

    /// Binds `role_flow` (whose digest is `flow_digest`) once per flow,
    /// default role and authored-role registry.
    fn bound_flow_keyed(
        &self,
        world: &World,
        flow_digest: Hash32,
        role_flow: &Json,
        default_role: &str,
    ) -> Result<Arc<BoundFlow>, Refusal> {
        // Found without hashing a key: the flow's digest, then a short list.
        let roles_digest = (!world.roles.is_empty()).then_some(world.roles_digest);
        let is_the_one =
            |bound: &&FlowBinding| bound.default_role == default_role && bound.roles_digest == roles_digest;
        if let Some(bindings) = self.flows.read().unwrap_or_else(|p| p.into_inner()).get(&flow_digest) {
            if let Some(binding) = bindings.iter().find(is_the_one) {
                return Ok(binding.flow.clone());
            }
        }
        let flow = RoleFlow::from_json(role_flow).map_err(Refusal::RoleFlow)?;
        let overlay = self.registry_for(world);
        let registry = overlay.as_deref().unwrap_or(&self.roles);
        let bound = Arc::new(flow.bind(registry, Some(default_role)).map_err(Refusal::RoleFlow)?);
        let binding = FlowBinding { default_role: default_role.to_string(), roles_digest, flow: bound.clone() };
        let mut flows = self.flows.write().unwrap_or_else(|p| p.into_inner());
        let bindings = flows.entry(flow_digest).or_default();
        // Another thread may have bound it meanwhile.
        if !bindings.iter().any(|bound| is_the_one(&bound)) {
            bindings.push(binding);
        }
        Ok(bound)
    }
}

/// A flow bound with one default role against one registry.
struct FlowBinding {
    default_role: String,
    /// The authored roles' digest (`None`: the files' roles alone).
    roles_digest: Option<Hash32>,
    flow: Arc<BoundFlow>,
}

/// The limits a moment checks, as the land's configuration sets them at the
/// moment's cursor (configuration is folded from facts, so replay sees the
/// limits that were in force).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MomentLimits {
    pub inbox_depth_max: usize,
    pub summons_per_minute_max: usize,
    pub summon_content_chars_max: usize,
    pub beings_per_land_max: usize,
}

impl MomentLimits {
    pub fn of(world: &World) -> MomentLimits {
        let get = |key: &str, default: usize| world.config_u64(key, default as u64) as usize;
        MomentLimits {
            inbox_depth_max: get("inbox_depth_max", INBOX_DEPTH_MAX),
            summons_per_minute_max: get("summons_per_minute_max", SUMMONS_PER_MINUTE_MAX),
            summon_content_chars_max: get("summon_content_chars_max", SUMMON_CONTENT_CHARS_MAX),
            beings_per_land_max: get("beings_per_land_max", BEINGS_PER_LAND_MAX),
        }
    }
}

/// Checks the summon rules that depend on the world's state.
fn check_summon(world: &World, actor: &BeingRow, target: &str, content: &str, now_ms: u64) -> Result<(), Refusal> {
    let limits = MomentLimits::of(world);
    let address = || target.to_string();
    let row =
        world.being_named(target.trim_start_matches('@')).ok_or_else(|| Refusal::NoBeing { address: address() })?;
    if row.ended {
        return Err(Refusal::BeingEnded { address: address() });
    }
    if world.inbox.get(&row.id).map_or(0, |pending| pending.len()) >= limits.inbox_depth_max {
        return Err(Refusal::InboxFull { address: address(), most: limits.inbox_depth_max });
    }
    if content.chars().count() > limits.summon_content_chars_max {
        return Err(Refusal::SummonTooLong { most: limits.summon_content_chars_max });
    }
    let recent = world.summons_in_minute_before(&actor.id, now_ms);
    if recent >= limits.summons_per_minute_max {
        return Err(Refusal::SummonRate { recent, most: limits.summons_per_minute_max });
    }
    Ok(())
}

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
        if let Some(caller) = world.beings.get(&summon.from) {
            context.insert("caller.cognition", caller.effective_cognition().as_str());
            context.insert("caller.name", caller.name.as_str());
        }
        if let Some(role) = &summon.caller_role {
            context.insert("caller.role", role.as_str());
        }
    }
    context.insert("inHomeSpace", row.location == row.home_space);
    context.insert("me.cognition", row.effective_cognition().as_str());
    context.insert("me.name", row.name.as_str());
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
) -> Result<Face<'w>, Failure> {
    let row = world.beings.get(&opened.being).ok_or_else(|| failure(Beat::Face, Refusal::BeingNotInWorld))?;
    let composed = &assigned.composed;
    let expand = |entries| substrate.resolvers.expand(entries, &row.name, world);
    let can_see = expand(&composed.can_see);
    let can_do = expand(&composed.can_do);
    let can_summon = as_being_entries(expand(&composed.can_summon));
    let can_be = expand(&composed.can_be);
    let mut seen = serde_json::Map::new();
    let seed = u64::from_be_bytes(opened.id.0[16..24].try_into().expect("32 bytes"));
    for name in &composed.see {
        let output = substrate
            .see
            .resolve(name, world, row, &substrate.scripts, seed)
            .map_err(|error| failure(Beat::Face, Refusal::SeeResolver { name: name.to_string(), error }))?;
        seen.insert(name.to_string(), output);
    }
    let wake = match (&opened.wake, waking_summon(world, opened)) {
        (Wake::Summon { .. }, Some(summon)) => json!({
            "kind": "summon",
            "from": world.name_of(&summon.from).map(|name| format!("@{name}")),
            "content": summon.content,
            "summon": summon.fact.to_hex(),
        }),
        (Wake::Summon { .. }, None) => return Err(failure(Beat::Face, Refusal::WakingSummonGone)),
        (Wake::Signal { key }, _) => json!({ "kind": "signal", "key": key, "value": world.signals.get(key) }),
        (Wake::Tick { tick }, _) => json!({ "kind": "tick", "tick": tick }),
        (Wake::SelfContinue, _) => json!({ "kind": "self-continue" }),
        (Wake::Person, _) => json!({ "kind": "person" }),
    };
    let context = |key: &str| assigned.context.get(key).cloned().unwrap_or(Json::Null);
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
        digest: Hash32::default(),
    };
    face.sealed().map_err(|error| failure(Beat::Face, Refusal::Encoding(error)))
}

/// Beat 4: what the cognition chose.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub call: Option<VerbCall>,
    pub content: Option<String>,
    /// BLAKE3 of the script's output, for replay to compare.
    pub output_digest: Option<Hash32>,
    /// The model call of an LLM moment, recorded in the act.
    pub llm: Option<LlmRecord>,
}

/// Reads a verb call from a cognition's output (`null` = no call).
pub fn parse_call(output: &Json) -> Result<(Option<VerbCall>, Option<String>), CallError> {
    let Json::Object(fields) = output else {
        return match output {
            Json::Null => Ok((None, None)),
            other => Err(CallError::NotACall { got: other.to_string() }),
        };
    };
    let text = |name: &str| fields.get(name).and_then(Json::as_str).map(str::to_string);
    let needs = |verb: &'static str, field: &'static str| text(field).ok_or(CallError::Missing { verb, field });
    let content = text("content");
    let verb = text("verb").ok_or(CallError::NoVerb)?;
    let call = match verb.as_str() {
        "see" => VerbCall::See { address: needs("see", "address")? },
        "do" => VerbCall::Do {
            target: text("target").unwrap_or_else(|| "/".into()),
            action: needs("do", "action")?,
            args: fields.get("args").cloned().unwrap_or(Json::Null),
        },
        "summon" => VerbCall::Summon {
            target: text("target").unwrap_or_default(),
            content: text("content").or_else(|| text("message")).unwrap_or_default(),
            in_reply_to: None,
        },
        "be" => VerbCall::Be {
            operation: needs("be", "operation")?,
            payload: fields.get("payload").cloned().unwrap_or(Json::Null),
        },
        other => return Err(CallError::UnknownVerb { verb: other.to_string() }),
    };
    let content = if matches!(call, VerbCall::Summon { .. }) { None } else { content };
    Ok((Some(call), content))
}

/// The LLM connection a being uses: its own `llm` quality, else its composed
/// role's `llm`, else the land's `llm_connection` configuration; `None`
/// leaves it to the client's default connection.
pub fn llm_connection<'a>(world: &'a World, row: &'a BeingRow, assigned: &'a Assigned) -> Option<&'a str> {
    row.qualities
        .get("llm")
        .and_then(Json::as_str)
        .or(assigned.composed.llm.as_deref())
        .or_else(|| world.config.get("llm_connection").and_then(Json::as_str))
}

/// Beat 4 for LLM cognition: the prompt from the face, one call through
/// `model` (I/O behind the trait: a client, or replay's recorded answer), the
/// response read into a verb call. What the call cost goes to `trace` even
/// when the answer is refused.
fn llm_momentum(
    world: &World,
    row: &BeingRow,
    opened: &Opened,
    assigned: &Assigned,
    face: &Face,
    model: &dyn LanguageModel,
    trace: &mut Option<LlmTrace>,
) -> Result<Decision, Failure> {
    let fail = |error: LlmFailure| failure(Beat::Momentum, Refusal::Llm(error));
    let budget = world.config_u64("llm_prompt_chars_max", llm::LLM_PROMPT_CHARS_MAX as u64) as usize;
    let prompt = llm::prompt(face, budget).map_err(|error| fail(LlmFailure::Prompt(error)))?;
    let connection = llm_connection(world, row, assigned);
    let seed = u64::from_be_bytes(opened.id.0[24..32].try_into().expect("32 bytes"));
    let question = llm::Question { connection, prompt: &prompt, seed };
    let answer = model.answer(&question).map_err(|no_answer| {
        *trace = Some(LlmTrace {
            connection: connection.unwrap_or("(the default)").to_string(),
            attempts: no_answer.attempts,
            omitted_see_blocks: prompt.omitted.clone(),
            ..LlmTrace::default()
        });
        fail(LlmFailure::NoAnswer(no_answer))
    })?;
    let record = LlmRecord::of(&prompt, &answer);
    *trace = Some(LlmTrace {
        connection: record.connection.clone(),
        model: record.params.model.clone(),
        prompt_tokens: record.prompt_tokens,
        completion_tokens: record.completion_tokens,
        cost_micros: record.cost_micros,
        attempts: answer.attempts,
        latency_us: answer.latency_us,
        request: Some(record.request),
        prose: None,
        omitted_see_blocks: prompt.omitted.clone(),
    });
    let most = world.config_u64("llm_response_bytes_max", llm::LLM_RESPONSE_BYTES_MAX as u64) as usize;
    if record.response.len() > most {
        return Err(fail(LlmFailure::ResponseTooLarge { len: record.response.len(), most }));
    }
    let interpreted =
        llm::interpret(&record.response, &prompt.offered).map_err(|error| fail(LlmFailure::Response(error)))?;
    if interpreted.call.is_none() {
        // Prose said to nobody: logged in the trace, not sealed.
        if let Some(entry) = trace.as_mut() {
            entry.prose = interpreted.content;
        }
        return Ok(Decision { call: None, content: None, output_digest: None, llm: None });
    }
    Ok(Decision { call: interpreted.call, content: interpreted.content, output_digest: None, llm: Some(record) })
}

pub fn momentum(
    substrate: &Substrate,
    world: &World,
    opened: &Opened,
    assigned: &Assigned,
    face: &Face,
    model: &dyn LanguageModel,
    llm_trace: &mut Option<LlmTrace>,
) -> Result<Decision, Failure> {
    let row = world.beings.get(&opened.being).ok_or_else(|| failure(Beat::Momentum, Refusal::BeingNotInWorld))?;
    match row.effective_cognition() {
        Cognition::Scripted => {}
        Cognition::Llm => return llm_momentum(world, row, opened, assigned, face, model, llm_trace),
        other => return Err(failure(Beat::Momentum, Refusal::NotScripted { cognition: other.as_str() })),
    }
    // A role's script is shared by every being wearing the role, so it is
    // found by address; a being's own script (a quality) by its hash.
    let compiled = match row.qualities.get("script").and_then(Json::as_str) {
        Some(source) => substrate.scripts.compile(source),
        None => match assigned.walk.primary.as_ref().and_then(|role| role.script.as_ref()) {
            Some(source) => substrate.scripts.compile_shared(source),
            None => return Ok(Decision { call: None, content: None, output_digest: None, llm: None }),
        },
    };
    let seed = u64::from_be_bytes(opened.id.0[..8].try_into().expect("32 bytes"));
    let output = compiled
        .and_then(|compiled| {
            substrate.scripts.run_compiled(&compiled, &[("face", crate::script::Input::Entries(face))], seed)
        })
        .map_err(|error| failure(Beat::Momentum, Refusal::Script(error)))?;
    let output_bytes =
        canonical::encode_json(&output).map_err(|error| failure(Beat::Momentum, Refusal::Encoding(error)))?;
    let (call, content) = parse_call(&output).map_err(|error| failure(Beat::Momentum, Refusal::ScriptCall(error)))?;
    Ok(Decision { call, content, output_digest: Some(blake3_of(&output_bytes)), llm: None })
}

/// A child the moment asks the land to mint (the genesis is sealed by the land).
#[derive(Debug, Clone, PartialEq)]
pub struct BirthRequest {
    pub name: String,
    pub parent: BeingId,
    pub cognition: Cognition,
    pub role_flow: Json,
    pub default_role: String,
    pub home_space: String,
}

/// What deciding produced: the act to seal, and what the land does beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Act {
    pub body: ActBody,
    pub birth: Option<BirthRequest>,
    pub rotate_key: bool,
    /// The composed role asked to continue after this act.
    pub self_continue: bool,
    /// Seeds a DO operation's randomness (derived from the moment's id).
    pub op_seed: u64,
    pub actor: BeingId,
    /// The moment's stored time (the act's fact carries the same).
    pub stored_time_ms: u64,
    /// The body's canonical bytes, encoded where the moment ran; dropped if
    /// the seal-time recheck changes the body.
    pub encoded: Option<CanonicalBody>,
}

fn permits_see(allowed: &[String], address: &Address) -> bool {
    let text = address.to_string();
    allowed.iter().any(|entry| {
        entry == "/"
            || *entry == text
            || (entry.starts_with('/')
                && (text.starts_with(&format!("{entry}/")) || text.starts_with(&format!("{entry}#"))))
    })
}

pub fn is_ancestor(world: &World, ancestor: BeingId, being: BeingId) -> bool {
    let mut current = world.beings.get(&being).and_then(|row| row.parent);
    let mut steps = 0;
    while let Some(parent) = current {
        if parent == ancestor {
            return true;
        }
        steps += 1;
        if steps > world.beings.len() {
            return false;
        }
        current = world.beings.get(&parent).and_then(|row| row.parent);
    }
    false
}

/// Beat 5: the verb layer. `Ok(None)` is a see (no call).
pub fn decide(
    substrate: &Substrate,
    world: &World,
    opened: &Opened,
    assigned: &Assigned,
    face: &Face,
    decision: Decision,
) -> Result<Option<Act>, Failure> {
    let Some(call) = decision.call else { return Ok(None) };
    let refuse = |refusal: Refusal| failure(Beat::Decide, refusal);
    let row = world.beings.get(&opened.being).ok_or_else(|| refuse(Refusal::BeingNotInWorld))?;
    let summon = waking_summon(world, opened);
    if let Some(content) = &decision.content {
        let most = MomentLimits::of(world).summon_content_chars_max;
        if content.chars().count() > most {
            return Err(refuse(Refusal::ProseTooLong { most }));
        }
    }
    let mut effects: Vec<Effect> = Vec::new();
    let mut birth = None;
    let mut rotate_key = false;
    let call = match call {
        VerbCall::See { address } => {
            let parsed: Address = address.parse().map_err(|error| refuse(Refusal::Address(error)))?;
            if !permits_see(&face.can_see, &parsed) {
                return Err(refuse(Refusal::NotWithin { what: format!("see {parsed}"), list: "canSee" }));
            }
            VerbCall::See { address: parsed.to_string() }
        }
        VerbCall::Do { target, action, args } => {
            if !face.can_do.contains(&action) {
                return Err(refuse(Refusal::NotWithin { what: format!("do {action:?}"), list: "canDo" }));
            }
            let target_address: Address = target.parse().map_err(|error| refuse(Refusal::Address(error)))?;
            let seed = u64::from_be_bytes(opened.id.0[8..16].try_into().expect("32 bytes"));
            let op_call =
                OpCall { world, actor: &row.name, target: &target_address, args: &args, scripts: &substrate.scripts };
            effects = substrate
                .ops
                .run(&action, &op_call, &substrate.scripts, seed)
                .map_err(|error| refuse(Refusal::Operation { action: action.clone(), error }))?;
            keeps_its_means_to_undo(substrate, world, row, assigned, &action, &effects).map_err(refuse)?;
            VerbCall::Do { target: target_address.to_string(), action, args }
        }
        VerbCall::Summon { target, content, in_reply_to } => {
            let target = if target.is_empty() {
                match summon {
                    Some(summon) => format!("@{}", world.name_of(&summon.from).unwrap_or_default()),
                    None => return Err(refuse(Refusal::SummonWithoutTarget)),
                }
            } else if target.starts_with('@') {
                target
            } else {
                format!("@{target}")
            };
            if !face.can_summon.contains(&target) {
                return Err(refuse(Refusal::NotWithin { what: format!("summon {target}"), list: "canSummon" }));
            }
            check_summon(world, row, &target, &content, opened.stored_time_ms).map_err(refuse)?;
            let in_reply_to = in_reply_to.or(summon.map(|summon| summon.correlation));
            VerbCall::Summon { target, content, in_reply_to }
        }
        VerbCall::Be { operation, payload } => {
            if !face.can_be.contains(&operation) {
                return Err(refuse(Refusal::NotWithin { what: format!("be {operation:?}"), list: "canBe" }));
            }
            match operation.as_str() {
                "birth" => birth = Some(check_birth(substrate, world, row, &payload).map_err(refuse)?),
                "connect" | "release" => {
                    let target =
                        payload.get("being").and_then(Json::as_str).unwrap_or_default().trim_start_matches('@');
                    let target_row = world
                        .being_named(target)
                        .ok_or_else(|| refuse(Refusal::NoBeing { address: format!("@{target}") }))?;
                    if !is_ancestor(world, row.id, target_row.id) {
                        return Err(refuse(Refusal::NotAnAncestor {
                            actor: row.name.clone(),
                            being: target.to_string(),
                        }));
                    }
                    effects.push(if operation == "connect" {
                        Effect::Inhabit { being: target.to_string(), by: row.name.clone() }
                    } else {
                        Effect::Release { being: target.to_string() }
                    });
                }
                "rotate-key" => rotate_key = true,
                other => return Err(refuse(Refusal::UnknownBeOperation { operation: other.to_string() })),
            }
            VerbCall::Be { operation, payload }
        }
    };
    let mut stack: Vec<RoleUse> = Vec::new();
    if let Some(primary) = &assigned.walk.primary {
        stack.push(RoleUse { name: primary.name.to_string(), digest: primary.digest });
    }
    stack.extend(
        assigned.walk.modifiers.iter().map(|role| RoleUse { name: role.name.to_string(), digest: role.digest }),
    );
    let body = ActBody {
        wake: opened.wake.clone(),
        cursor: opened.cursor,
        orientation: assigned.composed.orientation.as_str().to_string(),
        primary: assigned.composed.primary.as_ref().map(|name| name.to_string()),
        stack,
        digests: Digests {
            context: assigned.context_digest,
            composed: assigned.composed_digest,
            face: face.digest,
            script_output: decision.output_digest,
        },
        call,
        content: decision.content,
        effects,
        evaluator: EVALUATOR_VERSION.to_string(),
        llm: decision.llm,
    };
    let op_seed = u64::from_be_bytes(opened.id.0[8..16].try_into().expect("32 bytes"));
    let encoded = Some(body.canonical().map_err(|error| refuse(Refusal::ActBody(error)))?);
    Ok(Some(Act {
        body,
        birth,
        rotate_key,
        self_continue: assigned.composed.self_continue,
        op_seed,
        actor: opened.being,
        stored_time_ms: opened.stored_time_ms,
        encoded,
    }))
}

/// The operations a being undoes a change to its own roles with: a roleFlow
/// edit by another edit, an authored role by another authoring.
const UNDOING_OPERATIONS: &[&str] = &["edit-role-flow", "author-role"];

/// Refuses a change to the roles the actor itself wears (its own roleFlow,
/// or a role definition) after which, in this same moment, it could no
/// longer call the operation that made the change: nothing in the land
/// could undo it (the operator setting its own flow to a role without
/// `edit-role-flow`, or re-authoring `operator` without `author-role`).
fn keeps_its_means_to_undo(
    substrate: &Substrate,
    world: &World,
    actor: &BeingRow,
    assigned: &Assigned,
    action: &str,
    effects: &[Effect],
) -> Result<(), Refusal> {
    if !UNDOING_OPERATIONS.contains(&action) {
        return Ok(());
    }
    let mut flow_after = &actor.role_flow;
    let mut authored = Vec::new();
    for effect in effects {
        match effect {
            Effect::SetRoleFlow { being, flow } if *being == actor.name => flow_after = flow,
            Effect::PutRole { definition, .. } => {
                // The operation validated it already; one that does not
                // parse changes no one's roles.
                if let Ok(role) = parse_authored_role(definition) {
                    authored.push(role);
                }
            }
            _ => {}
        }
    }
    if std::ptr::eq(flow_after, &actor.role_flow) && authored.is_empty() {
        return Ok(());
    }
    let mut registry = match substrate.registry_for(world) {
        Some(overlay) => (*overlay).clone(),
        None => substrate.roles.clone(),
    };
    for role in authored {
        registry.insert(role);
    }
    let flow = RoleFlow::from_json(flow_after)
        .and_then(|flow| flow.bind(&registry, Some(&actor.default_role)))
        .map_err(|error| Refusal::Operation { action: action.to_string(), error: OpError::FlowAfter(error) })?;
    let walk = flow.walk(&assigned.context, actor.effective_cognition());
    let composed = compose(walk.primary.as_ref(), &walk.modifiers);
    if substrate.resolvers.expand(&composed.can_do, &actor.name, world).iter().any(|entry| entry == action) {
        return Ok(());
    }
    let wearing = walk.primary.as_ref().map_or_else(|| "no role".to_string(), |role| format!("role {}", role.name));
    Err(Refusal::WouldLoseMeansToUndo { action: action.to_string(), being: actor.name.clone(), wearing })
}

/// Re-runs the rules of the verb layer that depend on the world's state
/// against the world as it stands when the act seals: an earlier act of the
/// same round may have changed it (taken a cell, filled an inbox, used a
/// name). DO operations are recomputed here, so an act's effects are those
/// of its operation on the world just before the act's own land seq.
pub fn recheck(substrate: &Substrate, world: &World, act: &mut Act) -> Result<(), Failure> {
    recheck_rules(substrate, world, act)?;
    let actor = act_actor_name(world, act).unwrap_or_default();
    substrate
        .hooks
        .before(&actor, &act.body.call, world, act.op_seed)
        .map_err(|cancelled| failure(Beat::Seal, cancelled))?;
    Ok(())
}

/// The world-dependent rules of `recheck` without the `before:` hooks.
/// Replay uses it: a sealed act already passed its hooks (a cancelled act is
/// never sealed), and a hook's circuit breaker is run-time state, not history.
pub fn recheck_rules(substrate: &Substrate, world: &World, act: &mut Act) -> Result<(), Failure> {
    if let Some(effects) = seal_time_effects(substrate, world, act)? {
        act.body.effects = effects;
        act.encoded = None;
    }
    Ok(())
}

/// Decides what [`recheck_rules`] would change, without changing it: the
/// refusal, or the effects a DO operation now yields where they differ from
/// the act's (`None`: the act stands as it is).
pub fn seal_time_effects(substrate: &Substrate, world: &World, act: &Act) -> Result<Option<Vec<Effect>>, Failure> {
    let refuse = |refusal: Refusal| failure(Beat::Seal, refusal);
    match &act.body.call {
        VerbCall::Do { target, action, args } => {
            let actor = act_actor_name(world, act).ok_or_else(|| refuse(Refusal::ActorNotInWorld))?;
            let target: Address = target.parse().map_err(|error| refuse(Refusal::Address(error)))?;
            let call = OpCall { world, actor: &actor, target: &target, args, scripts: &substrate.scripts };
            let effects = substrate
                .ops
                .run(action, &call, &substrate.scripts, act.op_seed)
                .map_err(|error| refuse(Refusal::Operation { action: action.clone(), error }))?;
            if effects != act.body.effects {
                return Ok(Some(effects));
            }
        }
        VerbCall::Summon { target, content, .. } => {
            let actor = world.beings.get(&act.actor).ok_or_else(|| refuse(Refusal::ActorNotInWorld))?;
            check_summon(world, actor, target, content, act.stored_time_ms).map_err(refuse)?;
        }
        VerbCall::Be { .. } => {
            if let Some(birth) = &act.birth {
                if world.names.contains_key(&birth.name) {
                    return Err(refuse(Refusal::NameTaken { name: birth.name.clone() }));
                }
            }
        }
        VerbCall::See { .. } => {}
    }
    Ok(None)
}

fn act_actor_name(world: &World, act: &Act) -> Option<String> {
    world.beings.get(&act.actor).map(|row| row.name.clone())
}

fn check_birth(
    substrate: &Substrate,
    world: &World,
    parent: &BeingRow,
    payload: &Json,
) -> Result<BirthRequest, Refusal> {
    let text = |name: &str| payload.get(name).and_then(Json::as_str).map(str::to_string);
    let name = text("name").ok_or(Refusal::BirthWithoutName)?;
    if let Some(reason) = crate::names::being_name_problem(&name) {
        return Err(Refusal::BadBeingName { name, reason });
    }
    if world.names.contains_key(&name) {
        return Err(Refusal::NameTaken { name });
    }
    let most = MomentLimits::of(world).beings_per_land_max;
    if world.beings.len() >= most {
        return Err(Refusal::LandFull { most });
    }
    let cognition = match text("cognition").as_deref() {
        Some("scripted") => Cognition::Scripted,
        Some("llm") => Cognition::Llm,
        Some("human") => Cognition::Human,
        other => return Err(Refusal::BirthCognition { given: other.map(str::to_string) }),
    };
    // The flow may be given as an array or as {"defaultRole", "flow"}; the
    // child's genesis stores the array and its default role.
    let given_flow = payload.get("roleFlow").cloned().unwrap_or(Json::Array(Vec::new()));
    let (role_flow, flow_default) = match given_flow {
        Json::Object(mut object) => (
            object.remove("flow").unwrap_or(Json::Array(Vec::new())),
            object.get("defaultRole").and_then(Json::as_str).map(str::to_string),
        ),
        other => (other, None),
    };
    if !role_flow.is_array() {
        return Err(Refusal::BirthFlowShape);
    }
    let default_role = text("defaultRole").or(flow_default).unwrap_or_else(|| "idle".to_string());
    let flow = RoleFlow::from_json(&role_flow).map_err(Refusal::RoleFlow)?;
    let overlay = substrate.registry_for(world);
    flow.bind(overlay.as_deref().unwrap_or(&substrate.roles), Some(&default_role)).map_err(Refusal::RoleFlow)?;
    Ok(BirthRequest {
        name,
        parent: parent.id,
        cognition,
        role_flow,
        default_role,
        home_space: parent.location.clone(),
    })
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
}

/// What a moment reports while it runs: which beat it entered, and when (a
/// monotonic microsecond reading supplied by the caller). The beats never
/// read a clock themselves; observers (the moment trace's timings, the live
/// table of running moments) are handed to them.
pub trait MomentObserver {
    fn now_us(&self) -> u64 {
        0
    }
    fn entered(&self, _being: BeingId, _beat: Beat) {}
}

/// Observes nothing and reads no clock.
pub struct Unobserved;
impl MomentObserver for Unobserved {}

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
    run_beats(substrate, world, being, wake, stored_time_ms, observer, &cognition)
}

/// What a person chose at the portal: the verb call and the prose beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonChoice {
    pub call: VerbCall,
    pub content: Option<String>,
}

/// Beat 4 for human cognition: the person's choice is the decision. Only a
/// being whose effective cognition is human (declared, or inhabited) is
/// driven this way; the verb layer then checks the call like any other.
pub fn person_momentum(world: &World, opened: &Opened, choice: &PersonChoice) -> Result<Decision, Failure> {
    let row = world.beings.get(&opened.being).ok_or_else(|| failure(Beat::Momentum, Refusal::BeingNotInWorld))?;
    if row.effective_cognition() != Cognition::Human {
        return Err(failure(
            Beat::Momentum,
            Refusal::NoPersonDrives { being: row.name.clone(), cognition: row.cognition.as_str() },
        ));
    }
    Ok(Decision { call: Some(choice.call.clone()), content: choice.content.clone(), output_digest: None, llm: None })
}

/// Runs the five beats with a person's choice as the cognition (the portal).
pub fn run_person(
    substrate: &Substrate,
    world: &World,
    being: BeingId,
    wake: Wake,
    stored_time_ms: u64,
    observer: &dyn MomentObserver,
    choice: &PersonChoice,
) -> (Outcome, MomentTrace) {
    let cognition =
        |opened: &Opened, _: &Assigned, _: &Face, _: &mut Option<LlmTrace>| person_momentum(world, opened, choice);
    run_beats(substrate, world, being, wake, stored_time_ms, observer, &cognition)
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
    let face = build_face(substrate, world, &opened, &assigned)?;
    Ok((opened, assigned, face))
}

type Cognizer<'a> = dyn Fn(&Opened, &Assigned, &Face, &mut Option<LlmTrace>) -> Result<Decision, Failure> + 'a;

fn run_beats(
    substrate: &Substrate,
    world: &World,
    being: BeingId,
    wake: Wake,
    stored_time_ms: u64,
    observer: &dyn MomentObserver,
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
        trace.clauses = assigned.flow.explain(&assigned.walk);
        lap(&mut trace, Beat::Assign, Some(Beat::Face));
        let face = build_face(substrate, world, &opened, &assigned)?;
        trace.face_digest = Some(face.digest);
        lap(&mut trace, Beat::Face, Some(Beat::Momentum));
        let decision = cognition(&opened, &assigned, &face, &mut trace.llm)?;
        lap(&mut trace, Beat::Momentum, Some(Beat::Decide));
        let decided = decide(substrate, world, &opened, &assigned, &face, decision);
        lap(&mut trace, Beat::Decide, None);
        decided
    })();
    trace.timings_us.insert("total", observer.now_us().saturating_sub(started));
    let outcome = match result {
        Ok(Some(act)) => {
            trace.outcome = format!("act: {}", act.body.call.verb());
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

/// The live table of moments running now: being → (name, beat, since).
#[derive(Default)]
pub struct RunningMoments {
    table: std::sync::Mutex<BTreeMap<BeingId, RunningMoment>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningMoment {
    pub being: BeingId,
    pub beat: Beat,
    /// Monotonic microseconds when the moment entered this beat.
    pub since_us: u64,
}

impl RunningMoments {
    pub fn enter(&self, being: BeingId, beat: Beat, now_us: u64) {
        self.table
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(being, RunningMoment { being, beat, since_us: now_us });
    }

    pub fn finish(&self, being: &BeingId) {
        self.table.lock().unwrap_or_else(|p| p.into_inner()).remove(being);
    }

    /// The moments running now, in being order.
    pub fn snapshot(&self) -> Vec<RunningMoment> {
        self.table.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }
}

/// An observer that keeps the live table and reads a monotonic clock.
pub struct LiveObserver<'a> {
    pub running: &'a RunningMoments,
    pub epoch: std::time::Instant,
}

impl MomentObserver for LiveObserver<'_> {
    fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }
    fn entered(&self, being: BeingId, beat: Beat) {
        self.running.enter(being, beat, self.now_us());
    }
}
