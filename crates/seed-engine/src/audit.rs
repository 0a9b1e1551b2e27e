//! The audit (docs/approvals.md, "The audit"): every tool call (an act
//! calling a DO operation) and every step of an approval, each line citing
//! the fact it was read from, over a land or over exported bundles alone.
//!
//! What a line says is read from signed acts only: who called (the act's
//! reel), with what (the call), what came back (the effects the operation
//! made, or why nothing was applied), who approved (the decision's reel,
//! when the decision is among the facts read). The reels the lines come
//! from are verified as `seed verify` verifies them (every signature, every
//! link): an audit is only as good as its facts.

use crate::approval::Gate;
use crate::bundle::{Bundle, BundleError};
use crate::check::{verify_being, SignatureMode};
use crate::fact::body::{Cognition, GenesisBody, KIND_GENESIS};
use crate::fact::{BeingId, Fact, FactId};
use crate::picked_facts::{body_holds, for_each_listed_fact, for_each_picked_fact, FactsRead};
use crate::schemas::BodyRules;
use crate::store::{Store, StoreError};
use crate::world::body::KIND_ACT;
use crate::world::{ActBody, VerbCall, World};
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error("{file}: {error}")]
    Bundle { file: String, error: Box<BundleError> },
}

/// Which lines to keep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Lines of this being's acts, and decisions on its requests.
    pub being: Option<BeingId>,
    /// Lines whose call (or whose request's call) is `do TOOL`.
    pub tool: Option<String>,
    /// Lines sealed at or after this stored time.
    pub since_ms: Option<u64>,
}

/// What a line records.
#[derive(Debug, Clone, PartialEq)]
pub enum AuditEntry {
    /// A DO operation called and applied, no gate in its way.
    Call { call: VerbCall },
    /// A gated call sealed as a request (nothing applied).
    Request { call: VerbCall, rule: String, approvers: Vec<String>, expires_ms: u64 },
    /// An approver's decision on a request.
    Decision { request: FactId, approved: bool, edited: Option<VerbCall>, reason: Option<String> },
    /// A request's call applied after its approval.
    Applied { call: VerbCall, request: FactId, decision: FactId },
    /// A request closed unapplied (denied, expired, refused).
    Closed { call: VerbCall, request: FactId, decision: Option<FactId>, outcome: String, reason: String },
}

impl AuditEntry {
    pub fn kind(&self) -> &'static str {
        match self {
            AuditEntry::Call { .. } => "call",
            AuditEntry::Request { .. } => "request",
            AuditEntry::Decision { .. } => "decision",
            AuditEntry::Applied { .. } => "applied",
            AuditEntry::Closed { .. } => "closed",
        }
    }

    fn call(&self) -> Option<&VerbCall> {
        match self {
            AuditEntry::Call { call }
            | AuditEntry::Request { call, .. }
            | AuditEntry::Applied { call, .. }
            | AuditEntry::Closed { call, .. } => Some(call),
            AuditEntry::Decision { .. } => None,
        }
    }
}

/// One line of the audit, and the fact it was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditLine {
    pub fact: FactId,
    pub being: BeingId,
    pub seq: u64,
    /// `None` when read from a bundle (which holds no land order).
    pub land_seq: Option<u64>,
    pub time_ms: u64,
    pub entry: AuditEntry,
    /// What came back: the effects of the call, as the act records them.
    pub effects: Json,
    /// How the call was chosen: `person`, `script`, or `model CONNECTION`.
    pub chosen_by: String,
    /// The MCP tool the call called and its server's answer, as recorded.
    pub tool_call: Option<crate::tools::ToolRecord>,
}

/// A reel the lines came from, and what its verification found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReelChecked {
    pub being: BeingId,
    pub facts: u64,
    pub problems: Vec<String>,
}

/// The audit: its lines in land (or time) order, the names of the beings
/// the facts read name, the reels verified.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Audit {
    pub lines: Vec<AuditLine>,
    pub names: BTreeMap<BeingId, String>,
    pub reels: Vec<ReelChecked>,
}

/// How an act's call was chosen, as far as the act and its being's genesis
/// say: `model CONNECTION`, `panel`, `substrate` (a request applied or
/// closed), `person`, `script`.
fn chosen_by(act: &ActBody, cognition: Option<Cognition>) -> String {
    match (&act.llm, &act.panel, &act.wake, &act.gate) {
        (Some(llm), _, _, _) => format!("model {}", llm.connection),
        (None, Some(_), _, _) => "panel".to_string(),
        (_, _, _, Some(Gate::Applied { .. } | Gate::Closed { .. })) => "substrate".to_string(),
        (_, _, crate::world::Wake::Person, _) => "person".to_string(),
        _ => match cognition {
            Some(Cognition::Human) => "person".to_string(),
            Some(Cognition::Scripted) => "script".to_string(),
            Some(other) => other.as_str().to_string(),
            None => "cognition".to_string(),
        },
    }
}

/// The line an act makes, if it is a tool call or a step of an approval.
fn entry_of(act: &ActBody) -> Option<AuditEntry> {
    let call = act.call.clone();
    Some(match &act.gate {
        Some(Gate::Request(request)) => AuditEntry::Request {
            call,
            rule: request.rule.clone(),
            approvers: request.approvers.clone(),
            expires_ms: request.expires_ms,
        },
        Some(Gate::Decided(decision)) => AuditEntry::Decision {
            request: decision.request,
            approved: decision.approved,
            edited: decision.edited.clone(),
            reason: decision.reason.clone(),
        },
        Some(Gate::Applied { request, decision }) => {
            AuditEntry::Applied { call, request: *request, decision: *decision }
        }
        Some(Gate::Closed { request, decision, outcome, reason }) => AuditEntry::Closed {
            call,
            request: *request,
            decision: *decision,
            outcome: outcome.clone(),
            reason: reason.clone(),
        },
        None if matches!(call, VerbCall::Do { .. }) => AuditEntry::Call { call },
        None => return None,
    })
}

/// Reads facts into lines, keeping what the filter asks for. A decision is
/// kept for a being whose request it decides, and for a tool its request calls.
#[derive(Default)]
struct Reading {
    lines: Vec<AuditLine>,
    names: BTreeMap<BeingId, String>,
    cognitions: BTreeMap<BeingId, Cognition>,
    /// Each request read: who asked, and its call.
    requests: BTreeMap<FactId, (BeingId, VerbCall)>,
}

impl Reading {
    fn read(&mut self, fact: &Fact, land_seq: Option<u64>) {
        match fact.kind() {
            KIND_GENESIS => {
                if let Ok(genesis) = fact.body_as::<GenesisBody>() {
                    self.names.insert(fact.header.being, genesis.name);
                    self.cognitions.insert(fact.header.being, genesis.cognition);
                }
            }
            KIND_ACT => {
                let Ok(act) = fact.body_as::<ActBody>() else { return };
                let Some(entry) = entry_of(&act) else { return };
                if let AuditEntry::Request { call, .. } = &entry {
                    self.requests.insert(fact.id(), (fact.header.being, call.clone()));
                }
                self.lines.push(AuditLine {
                    fact: fact.id(),
                    being: fact.header.being,
                    seq: fact.header.seq,
                    land_seq,
                    time_ms: fact.header.stored_time_ms,
                    effects: serde_json::to_value(&act.effects).unwrap_or(Json::Null),
                    chosen_by: chosen_by(&act, self.cognitions.get(&fact.header.being).copied()),
                    tool_call: act.tool.clone(),
                    entry,
                });
            }
            _ => {}
        }
    }

    fn keeps(&self, filter: &AuditFilter, line: &AuditLine) -> bool {
        let asked = match &line.entry {
            AuditEntry::Decision { request, .. } => self.requests.get(request),
            _ => None,
        };
        let being_ok =
            filter.being.is_none_or(|being| line.being == being || asked.is_some_and(|(by, _)| *by == being));
        let call = line.entry.call().or(asked.map(|(_, call)| call));
        let tool_ok = filter
            .tool
            .as_deref()
            .is_none_or(|tool| matches!(call, Some(VerbCall::Do { action, .. }) if action == tool));
        let since_ok = filter.since_ms.is_none_or(|since| line.time_ms >= since);
        being_ok && tool_ok && since_ok
    }

    fn finish(self, filter: &AuditFilter) -> Audit {
        let kept = self.lines.iter().filter(|line| self.keeps(filter, line)).cloned().collect();
        Audit { lines: kept, names: self.names, reels: Vec::new() }
    }
}

/// The audit of a land: its whole land log read in order, then every reel a
/// kept line comes from verified (`mode` as `seed verify`'s).
pub fn audit_land(
    store: &dyn Store,
    filter: &AuditFilter,
    mode: SignatureMode,
    rules: BodyRules<'_>,
) -> Result<Audit, AuditError> {
    let audit = audit_land_unverified(store, filter)?;
    verify_reels(store, audit, mode, rules)
}

/// The lines alone, read off the whole land log (`seed audit` then verifies
/// the reels they come from; the portal's page reads the acts its world
/// lists instead, [`audit_land_listed`]).
pub fn audit_land_unverified(store: &dyn Store, filter: &AuditFilter) -> Result<Audit, AuditError> {
    audit_land_reading(store, filter, FactsRead::Picked)
}

/// [`audit_land_unverified`], reading the land log as `how` says.
///
/// With [`FactsRead::Picked`] only the acts that can make a line are
/// decoded: a tool call's body holds the verb `"do"` and a step of an
/// approval's holds the key `"gate"`, each a CBOR text string as stored.
/// The genesis of each being whose act is read is read first, for its name
/// and cognition. A land of a million beings that called no tool had every
/// fact decoded to find none (13 s for the portal's audit page).
pub fn audit_land_reading(store: &dyn Store, filter: &AuditFilter, how: FactsRead) -> Result<Audit, AuditError> {
    let mut reading = Reading::default();
    let end = store.land_len()?;
    reading.read_land_log(store, 0, end, how)?;
    Ok(reading.finish(filter))
}

/// [`audit_land_unverified`], reading only the acts `world` lists as making a
/// line (`World::audit_acts`) and, picked as [`FactsRead::Picked`] picks
/// them, the facts sealed after `world`'s cursor: the portal's audit page,
/// in proportion to its lines rather than to the land (a land of a million
/// beings that called no tool had its whole log read, 2.3 s a request).
pub fn audit_land_listed(store: &dyn Store, world: &World, filter: &AuditFilter) -> Result<Audit, AuditError> {
    let mut reading = Reading::default();
    let end = store.land_len()?;
    let folded_to = world.cursor.min(end);
    let listed = world.audit_acts.iter().copied().take_while(|land_seq| *land_seq < folded_to);
    let mut failed = None;
    for_each_listed_fact(store, listed, |land_seq, fact| {
        reading.read_after_genesis(store, land_seq, &fact, &mut failed)
    })?;
    if let Some(error) = failed {
        return Err(error.into());
    }
    reading.read_land_log(store, folded_to, end, FactsRead::Picked)?;
    Ok(reading.finish(filter))
}

impl Reading {
    /// Reads the acts of the land log from `from` to `end` that can make a
    /// line (`how`: all of them, or those picked as stored).
    fn read_land_log(&mut self, store: &dyn Store, from: u64, end: u64, how: FactsRead) -> Result<(), AuditError> {
        let mut failed = None;
        let picks = |_: &crate::store::LandEntry, kind: &str, body: &[u8]| {
            kind == KIND_ACT && (body_holds(body, CBOR_TEXT_DO) || body_holds(body, CBOR_TEXT_GATE))
        };
        for_each_picked_fact(store, from, end, how, picks, |land_seq, fact| match how {
            FactsRead::Picked => self.read_after_genesis(store, land_seq, &fact, &mut failed),
            FactsRead::Every => self.read(&fact, Some(land_seq)),
        })?;
        match failed {
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    }

    /// Reads an act picked out of the land log, its being's genesis first
    /// (for its name and cognition) unless read before; the first error in
    /// reading a genesis is left in `failed`, and nothing more is read.
    fn read_after_genesis(&mut self, store: &dyn Store, land_seq: u64, fact: &Fact, failed: &mut Option<StoreError>) {
        if failed.is_some() {
            return;
        }
        let being = fact.header.being;
        if !self.names.contains_key(&being) {
            // The being's genesis came before its act: read it first.
            match store.reel(&being, 0, 1) {
                Ok(genesis) => genesis.iter().for_each(|stored| self.read(&stored.fact, Some(stored.land_seq))),
                Err(error) => {
                    *failed = Some(error);
                    return;
                }
            }
        }
        self.read(fact, Some(land_seq));
    }
}

/// The verb of a tool call, `"do"`, as canonical CBOR writes the text.
const CBOR_TEXT_DO: &[u8] = b"\x62do";
/// The key of an act's step of an approval, `"gate"`, as canonical CBOR writes it.
const CBOR_TEXT_GATE: &[u8] = b"\x64gate";

fn verify_reels(
    store: &dyn Store,
    mut audit: Audit,
    mode: SignatureMode,
    rules: BodyRules<'_>,
) -> Result<Audit, AuditError> {
    let beings: BTreeSet<BeingId> = audit.lines.iter().map(|line| line.being).collect();
    for being in beings {
        let report = verify_being(store, &being, mode, rules)?;
        audit.reels.push(ReelChecked {
            being,
            facts: report.facts,
            problems: report.problems.iter().map(ToString::to_string).collect(),
        });
    }
    Ok(audit)
}

/// The audit of exported bundles alone (no land): each bundle verified
/// strictly, its facts read; lines in stored-time order.
pub fn audit_bundles(
    bundles: &[(String, Bundle)],
    filter: &AuditFilter,
    rules: BodyRules<'_>,
) -> Result<Audit, AuditError> {
    let mut reading = Reading::default();
    let mut reels = Vec::new();
    for (file, bundle) in bundles {
        let facts =
            bundle.verify(rules).map_err(|error| AuditError::Bundle { file: file.clone(), error: Box::new(error) })?;
        reels.push(ReelChecked { being: bundle.being, facts: facts.len() as u64, problems: Vec::new() });
        for fact in &facts {
            reading.read(fact, None);
        }
    }
    reading.lines.sort_by_key(|line| (line.time_ms, line.being, line.seq));
    let mut audit = reading.finish(filter);
    audit.reels = reels;
    Ok(audit)
}

impl Audit {
    fn name(&self, being: &BeingId) -> String {
        match self.names.get(being) {
            Some(name) => format!("@{name}"),
            None => being.to_hex(),
        }
    }

    /// The being whose act is `fact`, among the lines read.
    fn author_of(&self, fact: &FactId) -> Option<String> {
        self.lines.iter().find(|line| line.fact == *fact).map(|line| self.name(&line.being))
    }

    /// Whether every reel the lines come from verified clean.
    pub fn verified(&self) -> bool {
        self.reels.iter().all(|reel| reel.problems.is_empty())
    }

    pub fn line_json(&self, line: &AuditLine) -> Json {
        let mut value = json!({
            "fact": line.fact.to_hex(), "being": self.name(&line.being), "beingId": line.being.to_hex(),
            "seq": line.seq, "landSeq": line.land_seq, "timeMs": line.time_ms,
            "time": crate::view::format_time_ms(line.time_ms), "kind": line.entry.kind(),
            "call": line.entry.call().map(VerbCall::to_json), "chosenBy": line.chosen_by,
            "tool": match line.entry.call() { Some(VerbCall::Do { action, .. }) => Json::String(action.clone()), _ => Json::Null },
            "effects": line.effects,
            "toolCall": line.tool_call.as_ref().map(|record| json!({
                "server": record.server, "tool": record.tool, "isError": record.is_error,
                "result": serde_json::from_str::<Json>(&record.result).unwrap_or(Json::String(record.result.clone())),
                "text": record.result_text(),
            })),
        });
        match &line.entry {
            AuditEntry::Call { .. } => {}
            AuditEntry::Request { rule, approvers, expires_ms, .. } => {
                value["rule"] = json!(rule);
                value["approvers"] = json!(approvers);
                value["expiresMs"] = json!(expires_ms);
            }
            AuditEntry::Decision { request, approved, edited, reason } => {
                value["request"] = json!(request.to_hex());
                value["approved"] = json!(approved);
                value["edited"] = edited.as_ref().map_or(Json::Null, VerbCall::to_json);
                value["reason"] = json!(reason);
            }
            AuditEntry::Applied { request, decision, .. } => {
                value["request"] = json!(request.to_hex());
                value["decision"] = json!(decision.to_hex());
                value["approvedBy"] = json!(self.author_of(decision));
            }
            AuditEntry::Closed { request, decision, outcome, reason, .. } => {
                value["request"] = json!(request.to_hex());
                value["decision"] = json!(decision.map(|fact| fact.to_hex()));
                value["decidedBy"] = json!(decision.and_then(|fact| self.author_of(&fact)));
                value["outcome"] = json!(outcome);
                value["reason"] = json!(reason);
            }
        }
        value
    }

    pub fn to_json(&self) -> Json {
        json!({
            "lines": self.lines.iter().map(|line| self.line_json(line)).collect::<Vec<_>>(),
            "reels": self.reels.iter().map(|reel| json!({
                "being": self.name(&reel.being), "beingId": reel.being.to_hex(), "facts": reel.facts,
                "problems": reel.problems,
            })).collect::<Vec<_>>(),
            "verified": self.verified(),
        })
    }

    /// One line of text per audit line.
    pub fn line_text(&self, line: &AuditLine) -> String {
        let short = |fact: &FactId| fact.to_hex()[..12].to_string();
        // What came back: the tool's answer when an MCP tool was called, else the effects.
        let came_back = match &line.tool_call {
            Some(record) if record.is_error => format!("{} said it failed: {}", record.server, record.result_text()),
            Some(record) => format!("{}: {}", record.server, record.result_text()),
            None => line.effects.to_string(),
        };
        let what = match &line.entry {
            AuditEntry::Call { call } => format!("{} → {came_back}", call.summary()),
            AuditEntry::Request { call, rule, approvers, .. } => {
                format!("{} waits for {} (gate {rule})", call.summary(), approvers.join(", "))
            }
            AuditEntry::Decision { request, approved, edited, reason } => format!(
                "{} request {}{}{}",
                if *approved { "approves" } else { "denies" },
                short(request),
                edited.as_ref().map(|call| format!(" as {}", call.summary())).unwrap_or_default(),
                reason.as_ref().map(|reason| format!(": {reason}")).unwrap_or_default()
            ),
            AuditEntry::Applied { call, request, decision } => format!(
                "{} → {} (request {}, approved by {} in {})",
                call.summary(),
                came_back,
                short(request),
                self.author_of(decision).unwrap_or_else(|| "a being whose reel was not read".into()),
                short(decision)
            ),
            AuditEntry::Closed { call, request, outcome, reason, .. } => {
                format!("{} not done, {outcome}: {reason} (request {})", call.summary(), short(request))
            }
        };
        format!(
            "{} {} #{} {:<8} {} [{}] fact {}",
            crate::view::format_time_ms(line.time_ms),
            self.name(&line.being),
            line.seq,
            line.entry.kind(),
            what,
            line.chosen_by,
            line.fact.to_hex()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::GateRequest;
    use crate::world::Wake;

    fn act(call: VerbCall, gate: Option<Gate>) -> ActBody {
        ActBody {
            llm: None,
            call,
            gate,
            tool: None,
            wake: Wake::Person,
            panel: None,
            stack: Vec::new(),
            budget: None,
            cursor: 0,
            content: None,
            digests: crate::world::body::Digests {
                face: crate::fact::Hash32::ZERO,
                context: crate::fact::Hash32::ZERO,
                composed: crate::fact::Hash32::ZERO,
                script_output: None,
            },
            effects: Vec::new(),
            primary: None,
            evaluator: "test".into(),
            importance: None,
            recall_query: None,
            orientation: "forward".into(),
        }
    }

    #[test]
    fn tool_calls_and_approval_steps_make_lines_and_nothing_else_does() {
        let pay = VerbCall::Do { target: "/".into(), action: "pay".into(), args: json!({"amount": 5}) };
        let request = FactId([1; 32]);
        let table = [
            (act(pay.clone(), None), Some("call")),
            (act(VerbCall::See { address: "/".into() }, None), None),
            (act(VerbCall::Summon { target: "@a".into(), content: "hi".into(), in_reply_to: None }, None), None),
            (
                act(
                    pay.clone(),
                    Some(Gate::Request(GateRequest {
                        rule: "r#0".into(),
                        approvers: vec!["@m".into()],
                        beings: Vec::new(),
                        roles: Vec::new(),
                        summoned: Vec::new(),
                        expires_ms: 9,
                    })),
                ),
                Some("request"),
            ),
            (act(pay.clone(), Some(Gate::Applied { request, decision: FactId([2; 32]) })), Some("applied")),
            (
                act(
                    pay,
                    Some(Gate::Closed { request, decision: None, outcome: "expired".into(), reason: "late".into() }),
                ),
                Some("closed"),
            ),
        ];
        for (body, expected) in table {
            assert_eq!(entry_of(&body).map(|entry| entry.kind()), expected, "{:?}", body.call);
        }
    }
}
