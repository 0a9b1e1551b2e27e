//! Every way a moment can fail or be refused, as data.
//!
//! A [`Refusal`] is what a beat (or the seal) says when the moment does not
//! become an act. Its `Display` is the text traces and the API show; what
//! callers decide from it (the portal's HTTP status, the sim summary's
//! counts) comes from matching the variant, never from the text, so
//! rewording a message changes no behaviour.

use crate::canonical::CanonicalError;
use crate::fact::FactError;
use crate::llm::{NoAnswer, PromptError, ResponseError};
use crate::roles::flow::FlowError;
use crate::script::ScriptError;
use crate::world::address::AddressError;

/// Which of one being's own faults stopped its facts from sealing (the
/// engine reads it off the land's error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeingFault {
    /// Its key is missing, unreadable or not the reel's.
    Key,
    /// A body over the land's `fact_body_bytes_max`.
    BodyTooLarge,
    /// Its reel has ended.
    Ended,
    /// A name the land refuses.
    Name,
}

/// Why a moment did not act. Variants group as the portal reads them:
/// permission (the composed role or lineage does not allow it), limits,
/// conflicts with the world as it stands, and bad input or cognition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the being is not in the world")]
    BeingNotInWorld,
    #[error("the actor is not in the world")]
    ActorNotInWorld,
    /// The being's roleFlow does not parse or bind.
    #[error("roleFlow {0}")]
    RoleFlow(FlowError),
    #[error("see-resolver {name}: {error}")]
    SeeResolver { name: String, error: SeeError },
    #[error("the waking summon is no longer in the inbox")]
    WakingSummonGone,
    /// A value the moment built (face, script output, roleFlow) has no canonical encoding.
    #[error("{0}")]
    Encoding(CanonicalError),
    #[error("the act body: {0}")]
    ActBody(FactError),
    #[error("the act's body is {len} bytes, over the land's act_body_bytes_max of {most}")]
    ActBodyTooLarge { len: usize, most: usize },
    #[error("the child's roleFlow has {clauses} clauses, over the land's role_flow_clauses_max of {most}")]
    BirthFlowClauses { clauses: usize, most: usize },
    #[error("the child's roleFlow nests `when` {depth} levels deep, over the land's when_nesting_depth_max of {most}")]
    BirthFlowNesting { depth: usize, most: usize },
    #[error("llm: {0}")]
    Llm(LlmFailure),
    #[error("panel: {0}")]
    Panel(super::panel::PanelFailure),
    #[error("{cognition} cognition is not run by the scripted engine")]
    NotScripted { cognition: &'static str },
    #[error("@{being} has {cognition} cognition and is not inhabited: no person drives it")]
    NoPersonDrives { being: String, cognition: &'static str },
    #[error("{0}")]
    Script(ScriptError),
    #[error("{0}")]
    ScriptCall(CallError),
    #[error("prose longer than {most} characters (summon_content_chars_max)")]
    ProseTooLong { most: usize },
    #[error("{0}")]
    Address(AddressError),
    /// The call is not on the composed role's list for its verb; `what` is
    /// written as the trace shows it (`see /a`, `do "move"`).
    #[error("{what} is not within {list}")]
    NotWithin { what: String, list: &'static str },
    #[error("do {action}: {error}")]
    Operation { action: String, error: OpError },
    #[error(
        "do {action}: after this change @{being} would wear {wearing} without {action:?} in canDo, so nothing \
could undo it; keep {action:?} in the roles @{being} wears"
    )]
    WouldLoseMeansToUndo { action: String, being: String, wearing: String },
    #[error("summon has no target and the moment was not woken by a summon")]
    SummonWithoutTarget,
    /// `address` as written, with its `@`.
    #[error("no being {address}")]
    NoBeing { address: String },
    /// A summons to a being of another land whose address does not resolve.
    #[error(transparent)]
    RemoteTarget(#[from] crate::canopy::RemoteTargetError),
    #[error("{address} has ended")]
    BeingEnded { address: String },
    #[error("the inbox of {address} is full (inbox_depth_max = {most})")]
    InboxFull { address: String, most: usize },
    #[error("summon content longer than {most} characters (summon_content_chars_max)")]
    SummonTooLong { most: usize },
    #[error("summon rate: {recent} summons in the last minute (summons_per_minute_max = {most})")]
    SummonRate { recent: usize, most: usize },
    #[error("@{actor} is not an ancestor of @{being}")]
    NotAnAncestor { actor: String, being: String },
    #[error("unknown be operation {operation:?} (birth, connect, release, rotate-key, note, approve)")]
    UnknownBeOperation { operation: String },
    #[error("be note: {0}")]
    Note(crate::memory::NoteProblem),
    #[error("birth needs a `name`")]
    BirthWithoutName,
    #[error("invalid being name {name:?}: {reason}")]
    BadBeingName { name: String, reason: String },
    #[error("the name @{name} is taken")]
    NameTaken { name: String },
    #[error("the land holds {most} beings (beings_per_land_max)")]
    LandFull { most: usize },
    #[error("birth cognition {given:?} is not scripted, llm or human")]
    BirthCognition { given: Option<String> },
    #[error("a panel being is planted from a fixture, whose [being.panel] names its members: `be birth` cannot give a child members")]
    BirthPanel,
    #[error("roleFlow must be an array of clauses or {{\"defaultRole\", \"flow\"}}")]
    BirthFlowShape,
    #[error("cancelled by hook {hook}: {reason}")]
    HookCancelled { hook: String, reason: String },
    /// The land could not seal this being's facts (its key, its reel, the
    /// body's size); the other beings of the round go on.
    #[error("{message}")]
    Seal { fault: BeingFault, message: String },
    /// An approval gate's rules (`super::approval`).
    #[error("{0}")]
    Approval(ApprovalProblem),
    /// An MCP server's tool gave no answer (`crate::tools`): nothing is sealed.
    #[error("do {operation}: the MCP server {server:?} gave no answer to {tool}: {reason}")]
    Tool { operation: String, server: String, tool: String, reason: String },
}

/// Why a gated call, a decision on one, or applying one was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalProblem {
    #[error("gate {rule}: its approver {approver} is not in the world, so no one could approve this call")]
    ApproverMissing { rule: String, approver: String },
    #[error("gate {rule}: no one but the caller could approve this call")]
    NoApprover { rule: String },
    #[error("be approve: payload.request must be the request's fact id, 64 hex digits")]
    RequestId,
    #[error("be approve: no request {request} is waiting (it was never made, or is already applied or closed)")]
    NoRequest { request: String },
    #[error("be approve: request {request} was already decided by @{by}")]
    AlreadyDecided { request: String, by: String },
    #[error("be approve: request {request} expired at {expires_ms} ms")]
    Expired { request: String, expires_ms: u64 },
    #[error("be approve: @{being} asked for request {request} and may not decide it")]
    OwnRequest { being: String, request: String },
    #[error("be approve: @{being} may not decide request {request}: its gate {rule} names {approvers}")]
    NotAnApprover { being: String, request: String, rule: String, approvers: String },
    #[error("be approve: payload.decision must be \"approve\" or \"deny\", not {given}")]
    Decision { given: String },
    #[error("be approve: {field} edits the call, and a denial edits nothing")]
    EditOnDenial { field: &'static str },
    #[error("be approve: {field} does not fit the call: {reason}")]
    Edit { field: &'static str, reason: String },
    #[error("be approve: payload.reason is longer than {most} characters")]
    ReasonTooLong { most: usize },
    #[error(
        "be approve: payload.{field} is not a field of a decision (request, decision, args, content, payload, reason)"
    )]
    UnknownField { field: String },
    #[error("request {request} has no decision to apply and has not expired")]
    NotDue { request: String },
}

/// Why a DO operation refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpError {
    #[error("no DO operation named {name:?} is registered")]
    NotRegistered { name: String },
    #[error("{0}")]
    Args(ArgProblem),
    #[error("{0}")]
    Script(ScriptError),
    #[error("the operation returned bad effects: {reason}")]
    BadEffects { reason: String },
    #[error("{count} effects, over the limit of {most}")]
    TooManyEffects { count: usize, most: usize },
    #[error("{0}")]
    Address(AddressError),
    #[error("there is no space {space}")]
    NoSpace { space: String },
    #[error("args.key: {problem}")]
    SignalKey { problem: String },
    #[error("args.definition must be a role object")]
    DefinitionNotAnObject,
    /// The role's problems, each `field: reason`, joined by `; `.
    #[error("{problems}")]
    Definition { problems: String },
    #[error("definition.script: {0}")]
    DefinitionScript(ScriptError),
    #[error("args.being: there is no being @{name}")]
    NoBeingNamed { name: String },
    #[error("the actor is not in the world")]
    ActorNotInWorld,
    #[error("@{actor} may only edit its own roleFlow or a descendant's, not @{being}")]
    NotOwnOrDescendant { actor: String, being: String },
    #[error("args.flow: {0}")]
    Flow(FlowError),
    /// The roleFlow the change leaves does not bind.
    #[error("roleFlow {0}")]
    FlowAfter(FlowError),
    #[error("{operation} targets {wanted}")]
    WrongTarget { operation: &'static str, wanted: &'static str },
    #[error("{address} already exists")]
    MatterExists { address: String },
    #[error("{0}")]
    Grid(GridError),
    #[error("{given:?} is not a direction (N, NE, E, SE, S, SW, W, NW, STAY)")]
    NotADirection { given: String },
    #[error("the actor has no grid position")]
    NoGridPosition,
    #[error("illegal move {direction}: a wall")]
    IntoAWall { direction: String },
    #[error("illegal move {direction}: @{occupant} is there")]
    CellTaken { direction: String, occupant: String },
    #[error("args.account: {reason}")]
    AccountName { reason: String },
    #[error("args.tokenHash must be 64 hex digits (the BLAKE3 of the token)")]
    TokenHash,
    #[error("args.being: @{being} has {cognition} cognition; an account drives a human being")]
    AccountBeingNotHuman { being: String, cognition: &'static str },
    #[error("args.being: @{being} already belongs to the account {account:?}")]
    AccountBeingTaken { being: String, account: String },
    #[error("args.being: @{actor} is not an ancestor of @{being}, so may not give it to a person")]
    AccountNotDescendant { actor: String, being: String },
    #[error("args.account: there is no account {account:?}")]
    NoAccount { account: String },
    #[error("args.role: {role:?} is not an authored role: there is nothing to revert")]
    NotAuthored { role: String },
    #[error("args.role: no role file defines {role:?}, so there is no definition to revert to")]
    NoFileDefinition { role: String },
    #[error("set-budget names what it bounds: exactly one of args.being, args.role or args.land (true)")]
    BudgetScope,
    #[error("args.{limit} must be a whole number of 0 or more, or null to remove the limit")]
    BudgetLimit { limit: &'static str },
    #[error("@{actor} is not an ancestor of @{being}, so may not set its budget")]
    BudgetNotAnAncestor { actor: String, being: String },
    #[error("@{actor} was born to a parent: only the land's operator sets a role's or the land's budget")]
    BudgetNotOperator { actor: String },
    #[error("args.key: {0}")]
    Config(crate::config::ConfigError),
    #[error("{actor} may not write into {space}: it is @{owner}'s, and {actor} is neither its owner nor a contributor there")]
    MayNotWrite { actor: String, space: String, owner: String },
    #[error("{actor} may not {operation} at {space}: only {who} may")]
    NotOwner { operation: &'static str, actor: String, space: String, who: &'static str },
    #[error("{operation} refuses the land's system space {space}")]
    SystemSpace { operation: &'static str, space: String },
    #[error("{space} names no owner of its own")]
    NoOwnerNamed { space: String },
    #[error("{space} already names {most} contributors, its most")]
    TooManyContributors { space: String, most: usize },
    #[error("@{being} is not a contributor at {space}")]
    NotAContributor { being: String, space: String },
    #[error("args.extension: {reason}")]
    ExtensionName { reason: String },
    #[error("args.scope: the scope is \"blocked\", \"allowed\" or null, not {given}")]
    ExtensionScopeValue { given: String },
    #[error("{space} already scopes {most} extensions, its most")]
    TooManyScopes { space: String, most: usize },
    #[error("args.flow has {clauses} clauses, over the land's role_flow_clauses_max of {most}")]
    FlowClauses { clauses: usize, most: usize },
    #[error("args.flow nests `when` {depth} levels deep, over the land's when_nesting_depth_max of {most}")]
    FlowNesting { depth: usize, most: usize },
    #[error("{operation} is the {extension} extension's, and {extension} is blocked at {space}")]
    ExtensionBlocked { operation: String, extension: String, space: String },
}

/// An argument that does not fit its operation's schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgProblem {
    #[error("args must be an object")]
    NotAnObject,
    #[error("args.{name} is required")]
    Required { name: String },
    #[error("args.{name} must be {expected}")]
    WrongType { name: String, expected: &'static str },
    #[error("args.{name} is not an argument of this operation")]
    Unknown { name: String },
}

/// Why a see-resolver gave no view.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeeError {
    #[error("no see-resolver named {name:?} is registered")]
    NotRegistered { name: String },
    #[error("{0}")]
    Script(ScriptError),
    #[error("{0}")]
    Grid(GridError),
    #[error("@{being} has no grid position")]
    NoGridPosition { being: String },
}

/// A space that cannot be read as a grid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GridError {
    #[error("no space {space}")]
    NoSpace { space: String },
    #[error("space {space} is not a grid (no grid.w / grid.h)")]
    NotAGrid { space: String },
}

/// A cognition's output that is not a verb call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("expected a verb call map or (), got {got}")]
    NotACall { got: String },
    #[error("the verb call has no `verb`")]
    NoVerb,
    #[error("{verb} needs an `{field}`")]
    Missing { verb: &'static str, field: &'static str },
    #[error("unknown verb {verb:?} (see, do, summon, be)")]
    UnknownVerb { verb: String },
    #[error("`importance` is a whole number from 0 to {most}, not {given}")]
    Importance { given: String, most: u8 },
}

/// Why an LLM moment chose nothing usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmFailure {
    #[error("{0}")]
    Prompt(PromptError),
    #[error("{0}")]
    NoAnswer(NoAnswer),
    #[error("the response is {len} bytes, over llm_response_bytes_max = {most}")]
    ResponseTooLarge { len: usize, most: usize },
    #[error("{0}")]
    Response(ResponseError),
    /// No call was made: a budget is spent (and the owner was summoned, or
    /// has been this window, or there is none).
    #[error("no model call: {0}")]
    OverBudget(crate::spend::BudgetSpent),
}

impl Refusal {
    /// A short, stable label per variant: what the sim summary counts by.
    pub fn kind(&self) -> &'static str {
        match self {
            Refusal::BeingNotInWorld => "being-not-in-world",
            Refusal::ActorNotInWorld => "actor-not-in-world",
            Refusal::RoleFlow(_) => "role-flow",
            Refusal::SeeResolver { .. } => "see-resolver",
            Refusal::WakingSummonGone => "waking-summon-gone",
            Refusal::Encoding(_) => "encoding",
            Refusal::ActBody(_) => "act-body",
            Refusal::ActBodyTooLarge { .. } => "act-body-too-large",
            Refusal::BirthFlowClauses { .. } => "birth-flow-clauses",
            Refusal::BirthFlowNesting { .. } => "birth-flow-nesting",
            Refusal::Llm(LlmFailure::OverBudget(_)) => "budget",
            Refusal::Llm(_) => "llm",
            Refusal::Panel(_) => "panel",
            Refusal::NotScripted { .. } => "not-scripted",
            Refusal::NoPersonDrives { .. } => "no-person-drives",
            Refusal::Script(_) => "script",
            Refusal::ScriptCall(_) => "script-call",
            Refusal::ProseTooLong { .. } => "prose-too-long",
            Refusal::Address(_) => "address",
            Refusal::NotWithin { .. } => "not-within",
            Refusal::Operation { .. } => "operation",
            Refusal::WouldLoseMeansToUndo { .. } => "would-lose-means-to-undo",
            Refusal::SummonWithoutTarget => "summon-without-target",
            Refusal::NoBeing { .. } => "no-being",
            Refusal::RemoteTarget(_) => "remote-target",
            Refusal::BeingEnded { .. } => "being-ended",
            Refusal::InboxFull { .. } => "inbox-full",
            Refusal::SummonTooLong { .. } => "summon-too-long",
            Refusal::SummonRate { .. } => "summon-rate",
            Refusal::NotAnAncestor { .. } => "not-an-ancestor",
            Refusal::UnknownBeOperation { .. } => "unknown-be-operation",
            Refusal::Note(_) => "note",
            Refusal::BirthWithoutName => "birth-without-name",
            Refusal::BadBeingName { .. } => "bad-being-name",
            Refusal::NameTaken { .. } => "name-taken",
            Refusal::LandFull { .. } => "land-full",
            Refusal::BirthCognition { .. } => "birth-cognition",
            Refusal::BirthPanel => "birth-panel",
            Refusal::BirthFlowShape => "birth-flow-shape",
            Refusal::HookCancelled { .. } => "hook-cancelled",
            Refusal::Seal { .. } => "seal",
            Refusal::Approval(_) => "approval",
            Refusal::Tool { .. } => "tool",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts traces and the API show stay as they were when refusals
    /// were strings (only what callers decide from them moved to variants).
    #[test]
    fn refusal_texts_read_as_the_trace_shows_them() {
        let cases = [
            (Refusal::NotWithin { what: "see /a".into(), list: "canSee" }, "see /a is not within canSee"),
            (
                Refusal::Operation { action: "step".into(), error: OpError::IntoAWall { direction: "N".into() } },
                "do step: illegal move N: a wall",
            ),
            (
                Refusal::Operation {
                    action: "move".into(),
                    error: OpError::Args(ArgProblem::Required { name: "to".into() }),
                },
                "do move: args.to is required",
            ),
            (Refusal::NameTaken { name: "kid".into() }, "the name @kid is taken"),
            (
                Refusal::SummonRate { recent: 3, most: 3 },
                "summon rate: 3 summons in the last minute (summons_per_minute_max = 3)",
            ),
            (Refusal::ScriptCall(CallError::Missing { verb: "be", field: "operation" }), "be needs an `operation`"),
            (Refusal::BirthFlowShape, "roleFlow must be an array of clauses or {\"defaultRole\", \"flow\"}"),
            (
                Refusal::WouldLoseMeansToUndo {
                    action: "author-role".into(),
                    being: "o".into(),
                    wearing: "role x".into(),
                },
                "do author-role: after this change @o would wear role x without \"author-role\" in canDo, so nothing \
could undo it; keep \"author-role\" in the roles @o wears",
            ),
        ];
        for (refusal, expected) in cases {
            assert_eq!(refusal.to_string(), expected);
        }
    }

    #[test]
    fn every_refusal_has_its_own_kind() {
        let kinds = [
            Refusal::BeingNotInWorld.kind(),
            Refusal::ActorNotInWorld.kind(),
            Refusal::NameTaken { name: String::new() }.kind(),
            Refusal::NotAnAncestor { actor: String::new(), being: String::new() }.kind(),
            Refusal::SummonRate { recent: 0, most: 0 }.kind(),
            Refusal::InboxFull { address: String::new(), most: 0 }.kind(),
        ];
        let distinct: std::collections::BTreeSet<_> = kinds.iter().collect();
        assert_eq!(distinct.len(), kinds.len(), "{kinds:?}");
    }
}
