//! The verb layer's part in approval gates (docs/approvals.md): whether a
//! decided call is held back and who may decide it, an approver's decision
//! checked, and the requester's moment that applies or closes a decided or
//! expired request. The records are `crate::approval`'s; the gates are the
//! composed role's (`crate::roles::approval`).

use super::refusal::{ApprovalProblem, Refusal};
use super::{decide, failure, Act, Assigned, Beat, Decision, Failure, MomentLimits, Opened, Substrate};
use crate::approval::{Gate, GateDecision, GateRequest, PendingApproval, APPROVAL_REASON_CHARS_MAX};
use crate::face::Face;
use crate::fact::{BeingId, FactId};
use crate::roles::approval::ApproverSpec;
use crate::world::{BeingRow, VerbCall, Wake, World};
use serde_json::Value as Json;
use std::collections::BTreeSet;

fn problem(problem: ApprovalProblem) -> Refusal {
    Refusal::Approval(problem)
}

/// The request a decided `call` becomes if one of the composed role's
/// gates holds it back (`None`: it applies now). A call the moment applies
/// because it was approved is never held back again.
pub(super) fn request_for(
    world: &World,
    opened: &Opened,
    assigned: &Assigned,
    row: &BeingRow,
    call: &VerbCall,
) -> Result<Option<GateRequest>, Refusal> {
    if matches!(opened.wake, Wake::Approval { .. }) {
        return Ok(None);
    }
    let Some(gate) = assigned.composed.approvals.iter().find(|gate| gate.holds_back(call, &assigned.context)) else {
        return Ok(None);
    };
    let rule = gate.rule.to_string();
    let missing = |spec: &ApproverSpec| {
        problem(ApprovalProblem::ApproverMissing { rule: rule.clone(), approver: spec.to_string() })
    };
    let alive = |id: BeingId| world.beings.get(&id).filter(|row| !row.ended).map(|row| row.id);
    let mut beings = BTreeSet::new();
    let mut roles = Vec::new();
    for spec in &gate.approvers {
        let named = match spec {
            ApproverSpec::Being(name) => world.being_named(name).and_then(|approver| alive(approver.id)),
            ApproverSpec::Parent => row.parent.and_then(alive),
            ApproverSpec::Owner => crate::spend::owner_of(world, row.id).and_then(alive),
            ApproverSpec::Role(role) => {
                roles.push(role.to_string());
                continue;
            }
        };
        beings.insert(named.ok_or_else(|| missing(spec))?);
    }
    // A being never decides its own request.
    beings.remove(&row.id);
    if beings.is_empty() && roles.is_empty() {
        return Err(problem(ApprovalProblem::NoApprover { rule }));
    }
    // Those wearing an approving role are found by the role they last wore
    // or wear by default; whoever wears it when deciding may decide.
    let mut summoned = beings.clone();
    for (id, other) in &world.beings {
        let wears = |role: &String| other.previous_role.as_ref() == Some(role) || other.default_role == *role;
        if *id != row.id && !other.ended && roles.iter().any(wears) {
            summoned.insert(*id);
        }
    }
    Ok(Some(GateRequest {
        rule,
        approvers: gate.approvers.iter().map(ToString::to_string).collect(),
        beings: beings.into_iter().collect(),
        roles,
        summoned: summoned.into_iter().collect(),
        expires_ms: opened.stored_time_ms.saturating_add(gate.ttl_ms),
    }))
}

/// The fields a decision's payload may carry.
const DECISION_FIELDS: &[&str] = &["request", "decision", "args", "content", "payload", "reason"];

/// Checks an approver's `be approve` payload against the request it names
/// and the world at the moment's cursor, and gives the decision its act records.
pub(super) fn decision_of(
    world: &World,
    opened: &Opened,
    assigned: &Assigned,
    row: &BeingRow,
    payload: &Json,
) -> Result<GateDecision, Refusal> {
    let text = |name: &str| payload.get(name).and_then(Json::as_str);
    if let Some(unknown) =
        payload.as_object().and_then(|map| map.keys().find(|key| !DECISION_FIELDS.contains(&key.as_str())))
    {
        return Err(problem(ApprovalProblem::UnknownField { field: unknown.clone() }));
    }
    let request = text("request").and_then(FactId::from_hex).ok_or(problem(ApprovalProblem::RequestId))?;
    let hex = request.to_hex();
    let pending =
        world.approvals.get(&request).ok_or_else(|| problem(ApprovalProblem::NoRequest { request: hex.clone() }))?;
    check_still_open(world, pending, &hex, opened.stored_time_ms)?;
    if pending.requester == row.id {
        return Err(problem(ApprovalProblem::OwnRequest { being: row.name.clone(), request: hex }));
    }
    let wears = |role: &String| {
        assigned.composed.primary.as_deref() == Some(role.as_str())
            || assigned.composed.stack.iter().any(|worn| worn.as_ref() == role.as_str())
    };
    if !pending.request.beings.contains(&row.id) && !pending.request.roles.iter().any(wears) {
        return Err(problem(ApprovalProblem::NotAnApprover {
            being: row.name.clone(),
            request: hex,
            rule: pending.request.rule.clone(),
            approvers: pending.request.approvers.join(", "),
        }));
    }
    let approved = match payload.get("decision") {
        Some(Json::String(decision)) if decision == "approve" => true,
        Some(Json::String(decision)) if decision == "deny" => false,
        other => {
            let given = other.map_or_else(|| "nothing".to_string(), Json::to_string);
            return Err(problem(ApprovalProblem::Decision { given }));
        }
    };
    let reason = match payload.get("reason") {
        None | Some(Json::Null) => None,
        Some(Json::String(reason)) if reason.chars().count() <= APPROVAL_REASON_CHARS_MAX => Some(reason.clone()),
        Some(_) => return Err(problem(ApprovalProblem::ReasonTooLong { most: APPROVAL_REASON_CHARS_MAX })),
    };
    let edited = edited_call(world, &pending.call, payload, approved)?;
    Ok(GateDecision { request, approved, edited, reason })
}

/// A request still waiting for a decision at `now_ms`, or why not.
fn check_still_open(world: &World, pending: &PendingApproval, request: &str, now_ms: u64) -> Result<(), Refusal> {
    if let Some(made) = &pending.decision {
        let by = world.name_of(&made.by).unwrap_or_default().to_string();
        return Err(problem(ApprovalProblem::AlreadyDecided { request: request.to_string(), by }));
    }
    if pending.expired_at(now_ms) {
        let expires_ms = pending.request.expires_ms;
        return Err(problem(ApprovalProblem::Expired { request: request.to_string(), expires_ms }));
    }
    Ok(())
}

/// The call as the decision edits it: new `args` for a do, new `content`
/// for a summon, a new `payload` for a birth (`None`: no edit).
fn edited_call(world: &World, call: &VerbCall, payload: &Json, approved: bool) -> Result<Option<VerbCall>, Refusal> {
    let edit = |field: &'static str| payload.get(field).filter(|value| !value.is_null());
    let given: Vec<&'static str> =
        ["args", "content", "payload"].into_iter().filter(|field| edit(field).is_some()).collect();
    let Some(&field) = given.first() else { return Ok(None) };
    if !approved {
        return Err(problem(ApprovalProblem::EditOnDenial { field }));
    }
    let wrong = |reason: String| problem(ApprovalProblem::Edit { field, reason });
    if given.len() > 1 {
        return Err(wrong(format!("only one of {} edits a call", given.join(", "))));
    }
    let value = edit(field).expect("given");
    if crate::world::holds_fraction(value) {
        return Err(wrong("facts hold whole numbers only".into()));
    }
    let edited = match (call, field) {
        (VerbCall::Do { target, action, .. }, "args") if value.is_object() => {
            VerbCall::Do { target: target.clone(), action: action.clone(), args: value.clone() }
        }
        (VerbCall::Summon { target, in_reply_to, .. }, "content") => {
            let content = value.as_str().ok_or_else(|| wrong("a summons' content is text".into()))?;
            let most = MomentLimits::of(world).summon_content_chars_max;
            if content.chars().count() > most {
                return Err(wrong(format!("longer than {most} characters (summon_content_chars_max)")));
            }
            VerbCall::Summon { target: target.clone(), content: content.to_string(), in_reply_to: *in_reply_to }
        }
        (VerbCall::Be { operation, .. }, "payload") if value.is_object() => {
            VerbCall::Be { operation: operation.clone(), payload: value.clone() }
        }
        (_, "args" | "payload") if !value.is_object() => return Err(wrong("it must be an object".into())),
        (asked, _) => return Err(wrong(format!("the request is a {} call", asked.verb()))),
    };
    Ok(Some(edited))
}

/// At seal: a decision is still about a request waiting for one (two
/// approvers deciding in one round: the first sealed wins).
pub(super) fn recheck_decision(world: &World, decision: &GateDecision, now_ms: u64) -> Result<(), Refusal> {
    let hex = decision.request.to_hex();
    let pending = world
        .approvals
        .get(&decision.request)
        .ok_or_else(|| problem(ApprovalProblem::NoRequest { request: hex.clone() }))?;
    check_still_open(world, pending, &hex, now_ms)
}

/// The requester's moment woken by `Wake::Approval`: the approved call (as
/// edited) checked again by the verb layer against the world at the
/// moment's cursor and applied, or the request closed (denied, expired, or
/// refused by that check), citing the request and the decision. Replay
/// recomputes such a moment with this too.
pub fn resolve(
    substrate: &Substrate,
    world: &World,
    opened: &Opened,
    assigned: &Assigned,
    face: &Face,
) -> Result<Option<Act>, Failure> {
    let refuse = |refusal: Refusal| failure(Beat::Decide, refusal);
    let Wake::Approval { request, decision } = &opened.wake else {
        unreachable!("resolve is only called for an approval wake");
    };
    let hex = request.to_hex();
    let not_due = || refuse(problem(ApprovalProblem::NotDue { request: hex.clone() }));
    let pending =
        world.approvals.get(request).filter(|pending| pending.requester == opened.being).ok_or_else(not_due)?;
    let closed = |decision: Option<FactId>, outcome: &str, reason: String| {
        let gate = Gate::Closed { request: *request, decision, outcome: outcome.to_string(), reason };
        super::decide::unapplied_act(
            opened,
            assigned,
            face,
            pending.call_to_apply().clone(),
            pending.content.clone(),
            gate,
        )
        .map(Some)
        .map_err(refuse)
    };
    match (decision, &pending.decision) {
        (Some(fact), Some(made)) if made.fact == *fact && !made.approved => {
            let by = world.name_of(&made.by).unwrap_or_default();
            let reason = match &made.reason {
                Some(reason) => format!("denied by @{by}: {reason}"),
                None => format!("denied by @{by}"),
            };
            closed(Some(*fact), "denied", reason)
        }
        (Some(fact), Some(made)) if made.fact == *fact => {
            let chosen = Decision {
                call: Some(pending.call_to_apply().clone()),
                content: pending.content.clone(),
                output_digest: None,
                llm: None,
                see: None,
                importance: None,
                budget: None,
                panel: None,
            };
            match decide(substrate, world, opened, assigned, face, chosen) {
                Ok(Some(mut act)) => {
                    act.body.gate = Some(Gate::Applied { request: *request, decision: *fact });
                    act.encoded = Some(act.body.canonical().map_err(|error| refuse(Refusal::ActBody(error)))?);
                    Ok(Some(act))
                }
                Ok(None) => Err(not_due()),
                Err(refused) => closed(Some(*fact), "refused", refused.refusal.to_string()),
            }
        }
        (None, None) if pending.expired_at(opened.stored_time_ms) => {
            let reason = format!("no decision by {}", crate::llm::format_time(pending.request.expires_ms));
            closed(None, "expired", reason)
        }
        _ => Err(not_due()),
    }
}
