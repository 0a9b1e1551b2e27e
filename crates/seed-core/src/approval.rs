//! Approvals: what an act records of a gated call, and the requests
//! waiting for a decision, folded from acts (docs/approvals.md).
//!
//! A call a role's gate holds back (`crate::roles::approval`) is sealed as
//! an act carrying a [`Gate::Request`]: its call, nothing applied, the
//! approvers summoned. An approver's `be approve` act carries a
//! [`Gate::Decided`] naming the request's fact. The requester's next moment
//! (woken by `Wake::Approval`) seals either the call itself, applied, with
//! [`Gate::Applied`], or an act that applies nothing with [`Gate::Closed`]
//! (denied, expired, or refused when checked again). The land's pending
//! requests are the fold of those four: [`Approvals`].

use crate::fact::{BeingId, FactId};
use crate::world::VerbCall;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

/// The be-operation an approver decides a request with.
pub const BE_APPROVE: &str = "approve";
/// Longest reason an approver gives, in characters.
pub const APPROVAL_REASON_CHARS_MAX: usize = 1_000;

/// What an act records about an approval gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Gate {
    /// The act's call waits for a decision; nothing of it was applied.
    Request(GateRequest),
    /// An approver's decision on a request (the act's call is `be approve`).
    Decided(GateDecision),
    /// The request's call, applied after its approval.
    Applied { request: FactId, decision: FactId },
    /// The request ended without its call applied: `denied`, `expired`, or
    /// `refused` (the approved call failed its check when it came to apply).
    Closed { request: FactId, decision: Option<FactId>, outcome: String, reason: String },
}

impl Gate {
    /// Whether the act's call took effect (a request and a closing did not).
    pub fn call_applied(gate: Option<&Gate>) -> bool {
        !matches!(gate, Some(Gate::Request(_) | Gate::Closed { .. }))
    }

    /// The request the gate belongs to (`None` for a request itself).
    pub fn request(&self) -> Option<FactId> {
        match self {
            Gate::Request(_) => None,
            Gate::Decided(decision) => Some(decision.request),
            Gate::Applied { request, .. } | Gate::Closed { request, .. } => Some(*request),
        }
    }

    pub fn to_json(&self) -> Json {
        match self {
            Gate::Request(request) => json!({
                "state": "request", "rule": request.rule,
                "approvers": request.approvers,
                "beings": request.beings.iter().map(BeingId::to_hex).collect::<Vec<_>>(),
                "roles": request.roles,
                "summoned": request.summoned.iter().map(BeingId::to_hex).collect::<Vec<_>>(),
                "expiresMs": request.expires_ms,
            }),
            Gate::Decided(decision) => json!({
                "state": "decided", "request": decision.request.to_hex(), "approved": decision.approved,
                "edited": decision.edited.as_ref().map(VerbCall::to_json), "reason": decision.reason,
            }),
            Gate::Applied { request, decision } => {
                json!({"state": "applied", "request": request.to_hex(), "decision": decision.to_hex()})
            }
            Gate::Closed { request, decision, outcome, reason } => json!({
                "state": "closed", "request": request.to_hex(), "decision": decision.map(|fact| fact.to_hex()),
                "outcome": outcome, "reason": reason,
            }),
        }
    }
}

/// A gated call's request, as its act records it: who may decide (resolved
/// when it was made), who was summoned, and until when it waits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateRequest {
    /// The gate that held the call back (`ROLE#INDEX`).
    pub rule: String,
    /// The gate's approvers as written (`@name`, `parent`, `owner`, `role NAME`).
    pub approvers: Vec<String>,
    /// The beings named (directly, as the parent or as the owner).
    pub beings: Vec<BeingId>,
    /// Roles whose wearers may decide.
    pub roles: Vec<String>,
    /// The beings summoned to decide.
    pub summoned: Vec<BeingId>,
    /// Stored time after which the request has expired.
    pub expires_ms: u64,
}

/// An approver's decision, as its act records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateDecision {
    /// The request's act.
    pub request: FactId,
    pub approved: bool,
    /// The call as the approver edited it (`None`: as asked).
    pub edited: Option<VerbCall>,
    pub reason: Option<String>,
}

/// A request waiting in the land, folded from its act and its decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    pub requester: BeingId,
    pub call: VerbCall,
    pub content: Option<String>,
    pub request: GateRequest,
    /// The land seq and stored time of the request's act.
    pub requested_at_seq: u64,
    pub requested_ms: u64,
    pub decision: Option<DecisionMade>,
}

/// A decision taken on a pending request (its call not yet applied).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionMade {
    pub fact: FactId,
    pub by: BeingId,
    pub approved: bool,
    pub edited: Option<VerbCall>,
    pub reason: Option<String>,
}

impl PendingApproval {
    /// Whether the request is past its time-to-live at `now_ms`, undecided.
    pub fn expired_at(&self, now_ms: u64) -> bool {
        self.decision.is_none() && now_ms >= self.request.expires_ms
    }

    /// The call that applies if approved: the approver's edit, or as asked.
    pub fn call_to_apply(&self) -> &VerbCall {
        self.decision.as_ref().and_then(|decision| decision.edited.as_ref()).unwrap_or(&self.call)
    }
}

/// What the requester's moment must do with a request now, if anything:
/// the wake it gets (`Wake::Approval`'s decision).
pub fn resolution_due(pending: &PendingApproval, now_ms: u64) -> Option<Option<FactId>> {
    match &pending.decision {
        Some(decision) => Some(Some(decision.fact)),
        None if pending.expired_at(now_ms) => Some(None),
        None => None,
    }
}

/// One line saying what a request asks, for an approver's inbox.
pub fn describe(requester: &str, call: &VerbCall) -> String {
    let asked = match call {
        VerbCall::Do { target, action, args } => format!("do {action} on {target} with {args}"),
        VerbCall::Summon { target, content, .. } => format!("summon {target}: {content}"),
        VerbCall::Be { operation, payload } => format!("be {operation} {payload}"),
        VerbCall::See { address } => format!("see {address}"),
    };
    format!("approval asked by @{requester}: {asked}")
}
