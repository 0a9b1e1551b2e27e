//! Beat 5, decide: the verb layer. Every call is checked against the
//! composed role's can* lists and the substrate's rules (summon limits,
//! ancestry, births, the means to undo a role change), a DO operation is run
//! into effects, and the act is built; at seal the world-dependent rules are
//! checked again (`recheck`) against the world the earlier acts of the round
//! left.

use super::approval;
use super::ops::OpCall;
use super::refusal::{OpError, Refusal};
use super::{
    failure, parse_authored_role, waking_summon, Assigned, Beat, Decision, Failure, MomentLimits, Opened, Substrate,
    EVALUATOR_VERSION,
};
use crate::approval::Gate;
use crate::face::Face;
use crate::fact::body::Cognition;
use crate::fact::{BeingId, CanonicalBody};
use crate::roles::{compose, RoleFlow};
use crate::world::address::Address;
use crate::world::body::Digests;
use crate::world::{ActBody, BeingRow, Effect, RoleUse, VerbCall, World};
use serde_json::Value as Json;

/// Checks the summon rules that depend on the world's state. A summons
/// to a being of another land is checked for what this land knows: its
/// land a peer, its content and the sender's rate (the receiving land
/// checks its being and inbox).
fn check_summon(world: &World, actor: &BeingRow, target: &str, content: &str, now_ms: u64) -> Result<(), Refusal> {
    let limits = MomentLimits::of(world);
    if let Some(remote) = crate::canopy::remote_target(&world.canopy, target) {
        remote?;
        return check_summon_size_and_rate(world, actor, content, now_ms, &limits);
    }
    let address = || target.to_string();
    let row =
        world.being_named(target.trim_start_matches('@')).ok_or_else(|| Refusal::NoBeing { address: address() })?;
    if row.ended {
        return Err(Refusal::BeingEnded { address: address() });
    }
    if world.inbox.get(&row.id).map_or(0, |pending| pending.len()) >= limits.inbox_depth_max {
        return Err(Refusal::InboxFull { address: address(), most: limits.inbox_depth_max });
    }
    check_summon_size_and_rate(world, actor, content, now_ms, &limits)
}

fn check_summon_size_and_rate(
    world: &World,
    actor: &BeingRow,
    content: &str,
    now_ms: u64,
    limits: &MomentLimits,
) -> Result<(), Refusal> {
    if content.chars().count() > limits.summon_content_chars_max {
        return Err(Refusal::SummonTooLong { most: limits.summon_content_chars_max });
    }
    let recent = world.summons_in_minute_before(&actor.id, now_ms);
    if recent >= limits.summons_per_minute_max {
        return Err(Refusal::SummonRate { recent, most: limits.summons_per_minute_max });
    }
    Ok(())
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
    let mut gate = None;
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
                // Offered by the role but blocked where the being stands: say so.
                let offered =
                    || substrate.resolvers.expand(&assigned.composed.can_do, &row.name, world).contains(&action);
                if let Some(spec) = substrate
                    .ops
                    .get(&action)
                    .filter(|spec| crate::ownership::is_blocked(world, &spec.origin, &row.location) && offered())
                {
                    let error = OpError::ExtensionBlocked {
                        operation: action.clone(),
                        extension: spec.origin.clone(),
                        space: row.location.clone(),
                    };
                    return Err(refuse(Refusal::Operation { action: action.clone(), error }));
                }
                return Err(refuse(Refusal::NotWithin { what: format!("do {action:?}"), list: "canDo" }));
            }
            let target_address: Address = target.parse().map_err(|error| refuse(Refusal::Address(error)))?;
            let seed = u64::from_be_bytes(opened.id.0[8..16].try_into().expect("32 bytes"));
            let op_call = OpCall {
                world,
                actor: &row.name,
                target: &target_address,
                args: &args,
                scripts: &substrate.scripts,
                file_roles: &substrate.roles,
            };
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
                    // A summons from another land is answered there.
                    Some(summon) => match &summon.remote {
                        Some(remote) => remote.to_target(),
                        None => format!("@{}", world.name_of(&summon.from).unwrap_or_default()),
                    },
                    None => return Err(refuse(Refusal::SummonWithoutTarget)),
                }
            } else if target.starts_with('@') {
                target
            } else {
                format!("@{target}")
            };
            // A being of another land: its land resolved against the peers
            // and written whole in the sealed call; canSummon names such
            // beings as `@NAME@LAND` globs (`crate::canopy`).
            let remote = crate::canopy::remote_target(&world.canopy, &target)
                .transpose()
                .map_err(|error| refuse(Refusal::RemoteTarget(error)))?;
            let mut allowed = match &remote {
                Some(address) => crate::canopy::may_summon_remote(&face.can_summon, address),
                None => face.can_summon.contains(&target),
            };
            // A being of this land that moved to another is summoned there
            // (its forwarding address is its `move` fact), by a being whose
            // canSummon names it here or there.
            let remote = match remote {
                Some(address) => Some(address),
                None => crate::canopy::forwarding_address(world, &target).inspect(|address| {
                    allowed = allowed || crate::canopy::may_summon_remote(&face.can_summon, address);
                }),
            };
            let target = remote.map_or(target, |address| address.to_target());
            // The substrate's own summons of the owner about a spent budget
            // needs no canSummon entry; the summon limits still apply.
            if decision.budget.is_none() && !allowed {
                return Err(refuse(Refusal::NotWithin { what: format!("summon {target}"), list: "canSummon" }));
            }
            check_summon(world, row, &target, &content, opened.stored_time_ms).map_err(refuse)?;
            // A summons about a spent budget answers nobody: it starts its own conversation.
            let in_reply_to = match decision.budget {
                Some(_) => in_reply_to,
                None => in_reply_to.or(summon.map(|summon| summon.correlation)),
            };
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
                crate::approval::BE_APPROVE => {
                    let decision = approval::decision_of(world, opened, assigned, row, &payload).map_err(refuse)?;
                    gate = Some(Gate::Decided(decision));
                }
                // A note changes nothing in the world: it is memory, folded
                // from the act itself (`memory::MemoryFold`).
                crate::memory::BE_NOTE => {
                    crate::memory::Note::from_payload(&payload).map_err(|problem| refuse(Refusal::Note(problem)))?;
                }
                other => return Err(refuse(Refusal::UnknownBeOperation { operation: other.to_string() })),
            }
            VerbCall::Be { operation, payload }
        }
    };
    // A call a gate holds back is checked as above, then sealed as a
    // request: nothing of it applies until it is approved.
    if gate.is_none() {
        if let Some(request) = approval::request_for(world, opened, assigned, row, &call).map_err(refuse)? {
            effects.clear();
            birth = None;
            gate = Some(Gate::Request(request));
        }
    }
    let mut body = body_of(opened, assigned, face, call, decision.content);
    body.effects = effects;
    body.llm = decision.llm;
    body.importance = decision.importance.or(assigned.composed.act_importance);
    body.budget = decision.budget;
    body.panel = decision.panel;
    body.digests.script_output = decision.output_digest;
    body.gate = gate;
    let encoded = body.canonical().map_err(|error| refuse(Refusal::ActBody(error)))?;
    // The land's `act_body_bytes_max` at the moment's cursor (the store's own limit still holds at seal).
    let most = MomentLimits::of(world).act_body_bytes_max;
    if encoded.len() > most {
        return Err(refuse(Refusal::ActBodyTooLarge { len: encoded.len(), most }));
    }
    let encoded = Some(encoded);
    Ok(Some(Act {
        body,
        birth,
        rotate_key,
        self_continue: assigned.composed.self_continue,
        op_seed: op_seed_of(opened),
        actor: opened.being,
        stored_time_ms: opened.stored_time_ms,
        encoded,
    }))
}

fn op_seed_of(opened: &Opened) -> u64 {
    u64::from_be_bytes(opened.id.0[8..16].try_into().expect("32 bytes"))
}

/// The act body of a moment's `call`, with nothing applied, no model call
/// and no gate: what every act shares.
fn body_of(opened: &Opened, assigned: &Assigned, face: &Face, call: VerbCall, content: Option<String>) -> ActBody {
    let mut stack: Vec<RoleUse> = Vec::new();
    if let Some(primary) = &assigned.walk.primary {
        stack.push(RoleUse { name: primary.name.to_string(), digest: primary.digest });
    }
    stack.extend(
        assigned.walk.modifiers.iter().map(|role| RoleUse { name: role.name.to_string(), digest: role.digest }),
    );
    ActBody {
        wake: opened.wake.clone(),
        cursor: opened.cursor,
        orientation: assigned.composed.orientation.as_str().to_string(),
        primary: assigned.composed.primary.as_ref().map(|name| name.to_string()),
        stack,
        digests: Digests {
            context: assigned.context_digest,
            composed: assigned.composed_digest,
            face: face.digest,
            script_output: None,
        },
        call,
        content,
        effects: Vec::new(),
        evaluator: EVALUATOR_VERSION.to_string(),
        llm: None,
        importance: assigned.composed.act_importance,
        budget: None,
        panel: None,
        recall_query: face.query_vector.clone(),
        gate: None,
        tool: None,
    }
}

/// An act that applies nothing of its call and records `gate` (a request
/// closed unapplied): no birth, no key rotation, no continuing.
pub(super) fn unapplied_act(
    opened: &Opened,
    assigned: &Assigned,
    face: &Face,
    call: VerbCall,
    content: Option<String>,
    gate: Gate,
) -> Result<Act, Refusal> {
    let mut body = body_of(opened, assigned, face, call, content);
    body.gate = Some(gate);
    let encoded = Some(body.canonical().map_err(Refusal::ActBody)?);
    Ok(Act {
        body,
        birth: None,
        rotate_key: false,
        self_continue: false,
        op_seed: op_seed_of(opened),
        actor: opened.being,
        stored_time_ms: opened.stored_time_ms,
        encoded,
    })
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
    let mut flow_after: &Json = &actor.role_flow;
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
    if std::ptr::eq(flow_after, &*actor.role_flow) && authored.is_empty() {
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
    if !substrate.hooks.attends(super::hooks::Phase::Before, act.body.call.verb()) {
        return Ok(());
    }
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
    // What applies nothing needs nothing checked again but a decision, which
    // must still find its request waiting; a request's call is checked as
    // any call, and still applies nothing.
    let applies = match &act.body.gate {
        Some(Gate::Closed { .. }) => return Ok(None),
        Some(Gate::Decided(decision)) => {
            approval::recheck_decision(world, decision, act.stored_time_ms).map_err(refuse)?;
            return Ok(None);
        }
        Some(Gate::Request(_)) => false,
        Some(Gate::Applied { .. }) | None => true,
    };
    match &act.body.call {
        VerbCall::Do { target, action, args } => {
            let actor = act_actor_name(world, act).ok_or_else(|| refuse(Refusal::ActorNotInWorld))?;
            let target: Address = target.parse().map_err(|error| refuse(Refusal::Address(error)))?;
            let call = OpCall {
                world,
                actor: &actor,
                target: &target,
                args,
                scripts: &substrate.scripts,
                file_roles: &substrate.roles,
            };
            let effects = substrate
                .ops
                .run(action, &call, &substrate.scripts, act.op_seed)
                .map_err(|error| refuse(Refusal::Operation { action: action.clone(), error }))?;
            if applies && effects != act.body.effects {
                return Ok(Some(effects));
            }
        }
        VerbCall::Summon { target, content, .. } => {
            let actor = world.beings.get(&act.actor).ok_or_else(|| refuse(Refusal::ActorNotInWorld))?;
            check_summon(world, actor, target, content, act.stored_time_ms).map_err(refuse)?;
        }
        VerbCall::Be { operation, payload } => {
            // A gated birth carries no request to mint: its name is checked.
            if !applies && operation == "birth" {
                let name = payload.get("name").and_then(Json::as_str).unwrap_or_default();
                if world.names.contains_key(name) {
                    return Err(refuse(Refusal::NameTaken { name: name.to_string() }));
                }
            }
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
    let given = text("cognition");
    let Some(cognition) = given.as_deref().and_then(Cognition::of_birth) else {
        return Err(Refusal::BirthCognition { given });
    };
    if cognition == Cognition::Panel {
        return Err(Refusal::BirthPanel);
    }
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
    let clauses = role_flow.as_array().map_or(0, Vec::len);
    let limits = MomentLimits::of(world);
    if clauses > limits.role_flow_clauses_max {
        return Err(Refusal::BirthFlowClauses { clauses, most: limits.role_flow_clauses_max });
    }
    let depth = crate::roles::when::flow_nesting_depth(&role_flow);
    if depth > limits.when_nesting_depth_max {
        return Err(Refusal::BirthFlowNesting { depth, most: limits.when_nesting_depth_max });
    }
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
