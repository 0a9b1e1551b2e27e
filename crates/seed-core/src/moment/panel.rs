//! Panel cognition (docs/llm.md, "Panels"): the members the being's `panel`
//! quality names each propose a verb call from the same face, and one
//! proposal is chosen: by majority (ties go to the earliest member), by a
//! Rhai rule that reads the proposals, or by a ruler, an LLM member that
//! reads them and calls `choose`. Only the chosen call meets the verb layer.
//!
//! The act records every member's model call (request digest and answer)
//! or script output digest, its proposal or why it made none, and the
//! ruler's call, so replay answers each member from the record
//! ([`RecordedPanel`]) and never calls a model.

use super::momentum::{ask_model, parse_call, parse_importance, script_output, Decision, SeeReason};
use super::refusal::Refusal;
use super::{failure, Assigned, Beat, Failure, Opened};
use crate::face::Face;
use crate::fact::Hash32;
use crate::llm::{self, Answer, LanguageModel, LlmRecord, LlmTrace, NoAnswer, Prompt, Question};
use crate::world::{BeingRow, VerbCall, World};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

/// The being quality holding a panel's configuration.
pub const PANEL_QUALITY: &str = "panel";
/// The most members a panel may have (each may make a model call a moment).
pub const PANEL_MEMBERS_MAX: usize = 8;
/// The tool an LLM ruler is offered.
const CHOOSE_TOOL: &str = "choose";

/// A panel, as its being's `panel` quality gives it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PanelConfig {
    pub members: Vec<MemberConfig>,
    #[serde(default)]
    pub choose: ChooseBy,
    /// `choose = "rule"`: a Rhai script given `proposals` (and `face`) that
    /// returns the chosen member's name.
    #[serde(default)]
    pub rule: Option<String>,
    /// `choose = "ruler"`: the LLM member that reads the others' proposals
    /// and chooses (it proposes nothing itself).
    #[serde(default)]
    pub ruler: Option<String>,
}

/// One member of a panel.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemberConfig {
    pub name: String,
    pub kind: MemberKind,
    /// An `llm` member's connection (else the being's: its `llm` quality,
    /// its role's, the land's).
    #[serde(default)]
    pub connection: Option<String>,
    /// A `script` member's Rhai source: given `face`, it returns a call as
    /// a scripted being's script does.
    #[serde(default)]
    pub script: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemberKind {
    Llm,
    Script,
}

/// How a panel picks one proposal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChooseBy {
    #[default]
    Majority,
    Rule,
    Ruler,
}

impl ChooseBy {
    pub fn as_str(self) -> &'static str {
        match self {
            ChooseBy::Majority => "majority",
            ChooseBy::Rule => "rule",
            ChooseBy::Ruler => "ruler",
        }
    }
}

/// Why a panel's configuration does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PanelProblem {
    #[error("a panel being needs a `panel` quality naming its members (docs/llm.md, \"Panels\")")]
    Missing,
    #[error("the `panel` quality does not read: {reason}")]
    Shape { reason: String },
    #[error("a panel has 1 to {most} members that propose, not {count}")]
    MemberCount { count: usize, most: usize },
    #[error("panel member {name:?}: {reason}")]
    Member { name: String, reason: String },
    #[error("choose = \"rule\" needs `rule`: a Rhai script that returns a member's name")]
    RuleMissing,
    #[error("choose = \"ruler\" needs `ruler`: the name of an llm member that chooses")]
    RulerMissing,
    #[error("ruler {name:?} is not an llm member of the panel")]
    RulerNotMember { name: String },
    #[error("`{field}` is given, but the panel chooses by {choose}")]
    Unused { field: &'static str, choose: &'static str },
}

impl PanelConfig {
    pub fn from_json(value: &Json) -> Result<PanelConfig, PanelProblem> {
        let config: PanelConfig =
            serde_json::from_value(value.clone()).map_err(|error| PanelProblem::Shape { reason: error.to_string() })?;
        let mut seen = std::collections::BTreeSet::new();
        for member in &config.members {
            let problem = |reason: &str| PanelProblem::Member { name: member.name.clone(), reason: reason.to_string() };
            if let Some(reason) = crate::names::kebab_name_problem(&member.name) {
                return Err(problem(reason));
            }
            if !seen.insert(member.name.as_str()) {
                return Err(problem("the name is used twice"));
            }
            match (member.kind, &member.connection, &member.script) {
                (MemberKind::Llm, _, Some(_)) => return Err(problem("an llm member has no `script`")),
                (MemberKind::Script, Some(_), _) => return Err(problem("a script member has no `connection`")),
                (MemberKind::Script, _, None) => return Err(problem("a script member needs `script`")),
                _ => {}
            }
        }
        match (config.choose, &config.rule, &config.ruler) {
            (ChooseBy::Rule, None, _) => return Err(PanelProblem::RuleMissing),
            (ChooseBy::Ruler, _, None) => return Err(PanelProblem::RulerMissing),
            (ChooseBy::Ruler, _, Some(ruler))
                if !config.members.iter().any(|member| &member.name == ruler && member.kind == MemberKind::Llm) =>
            {
                return Err(PanelProblem::RulerNotMember { name: ruler.clone() });
            }
            _ => {}
        }
        if config.rule.is_some() && config.choose != ChooseBy::Rule {
            return Err(PanelProblem::Unused { field: "rule", choose: config.choose.as_str() });
        }
        if config.ruler.is_some() && config.choose != ChooseBy::Ruler {
            return Err(PanelProblem::Unused { field: "ruler", choose: config.choose.as_str() });
        }
        let count = config.proposers().count();
        if count == 0 || config.members.len() > PANEL_MEMBERS_MAX {
            return Err(PanelProblem::MemberCount { count, most: PANEL_MEMBERS_MAX });
        }
        Ok(config)
    }

    /// The panel of `row` (its `panel` quality).
    pub fn of(row: &BeingRow) -> Result<PanelConfig, PanelProblem> {
        PanelConfig::from_json(row.qualities.get(PANEL_QUALITY).ok_or(PanelProblem::Missing)?)
    }

    /// The members that propose, in order (all but the ruler).
    pub fn proposers(&self) -> impl Iterator<Item = &MemberConfig> {
        self.members.iter().filter(|member| Some(&member.name) != self.ruler.as_ref())
    }

    fn ruler_member(&self) -> Option<&MemberConfig> {
        let ruler = self.ruler.as_ref()?;
        self.members.iter().find(|member| &member.name == ruler)
    }

    /// Whether any member calls a model (so budgets apply).
    pub fn calls_a_model(&self) -> bool {
        self.members.iter().any(|member| member.kind == MemberKind::Llm)
    }
}

/// A panel's deliberation, as the act records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelRecord {
    /// Each proposing member, in the panel's order.
    pub members: Vec<MemberRecord>,
    /// `majority`, `rule` or `ruler`.
    pub chosen_by: String,
    /// The member whose proposal was chosen.
    pub chosen: String,
    /// The ruler's call, when a ruler chose.
    pub ruler: Option<MemberRecord>,
}

impl MemberRecord {
    /// A member's record with nothing in it yet.
    fn named(name: &str) -> MemberRecord {
        MemberRecord { name: name.to_string(), llm: None, output: None, no_answer: None, proposal: None, failure: None }
    }
}

impl PanelRecord {
    /// Every answered model call of the deliberation, the ruler's last.
    pub fn calls(&self) -> impl Iterator<Item = &LlmRecord> {
        self.members.iter().chain(self.ruler.as_ref()).filter_map(|member| member.llm.as_ref())
    }
}

/// One member's part in a deliberation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberRecord {
    pub name: String,
    /// An LLM member's answered call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmRecord>,
    /// BLAKE3 of a script member's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Hash32>,
    /// An LLM member's model gave no answer: why (replay gives it back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_answer: Option<String>,
    /// What it proposed (`null` when it failed).
    pub proposal: Option<Proposal>,
    /// Why it proposed nothing.
    pub failure: Option<String>,
}

/// A member's proposal: a call (`null`: only look), the prose with it and
/// the importance it gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    pub call: Option<VerbCall>,
    pub content: Option<String>,
    pub importance: Option<u8>,
}

/// Why a panel chose nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PanelFailure {
    #[error("{0}")]
    Config(PanelProblem),
    #[error("no member of the panel proposed anything: {failures}")]
    NoProposal { failures: String },
    #[error("the panel's rule failed: {reason}")]
    Rule { reason: String },
    #[error("the panel's rule returned {returned}, not the name of a member that proposed ({names})")]
    RuleChoice { returned: String, names: String },
    #[error("the panel's ruler @{ruler} did not choose: {reason}")]
    Ruler { ruler: String, reason: String },
}

/// Replay's model for a panel: each member's (and the ruler's) recorded
/// answer, found by the member's name. Never calls anything.
pub struct RecordedPanel<'a>(pub &'a PanelRecord);

impl LanguageModel for RecordedPanel<'_> {
    fn answer(&self, question: &Question<'_>) -> Result<Answer, NoAnswer> {
        let member = self
            .0
            .members
            .iter()
            .chain(self.0.ruler.as_ref())
            .find(|member| Some(member.name.as_str()) == question.member);
        let Some(member) = member else {
            return Err(NoAnswer { reason: format!("the act records no member {:?}", question.member), attempts: 0 });
        };
        match (&member.llm, &member.no_answer) {
            (Some(record), _) => llm::Recorded(record).answer(question),
            (None, Some(reason)) => Err(NoAnswer { reason: reason.clone(), attempts: 0 }),
            (None, None) => {
                Err(NoAnswer { reason: format!("the act records no call of {}", member.name), attempts: 0 })
            }
        }
    }
}

/// Beat 4 for a panel: every proposer's proposal, then the choice.
#[allow(clippy::too_many_arguments)]
pub(super) fn panel_momentum(
    substrate: &super::Substrate,
    world: &World,
    row: &BeingRow,
    opened: &Opened,
    assigned: &Assigned,
    face: &Face,
    model: &dyn LanguageModel,
    trace: &mut Option<LlmTrace>,
) -> Result<Decision, Failure> {
    let fail = |why: PanelFailure| failure(Beat::Momentum, Refusal::Panel(why));
    let config = PanelConfig::of(row).map_err(|problem| fail(PanelFailure::Config(problem)))?;
    if config.calls_a_model() {
        if let Some(decision) = super::momentum::budget_decision(world, row, opened, assigned)? {
            return Ok(decision);
        }
    }
    // Built once: a model member's prompt is the being's, as an LLM being's would be.
    let mut prompt: Option<Result<Prompt, llm::PromptError>> = None;
    let mut panel_trace = PanelTrace::default();
    let moment_seed = u64::from_be_bytes(opened.id.0[24..32].try_into().expect("32 bytes"));
    let mut members = Vec::new();
    for (index, member) in config.proposers().enumerate() {
        let seed = moment_seed ^ (index as u64 + 1);
        let record = match member.kind {
            MemberKind::Script => script_member(substrate, member, face, seed, crate::script::limits_in(world)),
            MemberKind::Llm => match prompt.get_or_insert_with(|| llm::prompt_in(world, face)) {
                Ok(prompt) => {
                    let connection = member.connection.as_deref().or(super::llm_connection(world, row, assigned));
                    let turn = ask_model(world, prompt, connection, Some(&member.name), seed, model);
                    panel_trace.add(&turn.trace);
                    let (proposal, failure) = match turn.result {
                        Ok(interpreted) => (
                            Some(Proposal {
                                call: interpreted.call,
                                content: interpreted.content,
                                importance: interpreted.importance,
                            }),
                            None,
                        ),
                        Err(super::refusal::LlmFailure::NoAnswer(_)) => (None, None),
                        Err(why) => (None, Some(why.to_string())),
                    };
                    MemberRecord {
                        llm: turn.record,
                        no_answer: turn.no_answer,
                        proposal,
                        failure,
                        ..MemberRecord::named(&member.name)
                    }
                }
                Err(error) => MemberRecord { failure: Some(error.to_string()), ..MemberRecord::named(&member.name) },
            },
        };
        members.push(record);
    }
    // A proposal is kept in the act whether or not it is chosen, so one that
    // cannot be stored (a float, nesting too deep) is the member's failure.
    for member in &mut members {
        if let Some(proposal) = &member.proposal {
            if let Err(error) = crate::canonical::to_canonical_bytes(proposal) {
                member.failure = Some(format!("its proposal cannot be stored: {error}"));
                member.proposal = None;
            }
        }
    }
    let proposed: Vec<&MemberRecord> = members.iter().filter(|member| member.proposal.is_some()).collect();
    let outcome = if proposed.is_empty() {
        let failures = members
            .iter()
            .map(|member| format!("{}: {}", member.name, member_failure_text(member)))
            .collect::<Vec<_>>()
            .join("; ");
        Err(fail(PanelFailure::NoProposal { failures }))
    } else {
        let names = || proposed.iter().map(|member| member.name.as_str()).collect::<Vec<_>>().join(", ");
        match config.choose {
            ChooseBy::Majority => Ok((majority(&proposed).to_string(), None)),
            ChooseBy::Rule => {
                let source = config.rule.as_deref().unwrap_or_default();
                let proposals = proposals_json(&members);
                let limits = crate::script::limits_in(world);
                let chosen = substrate
                    .scripts
                    .compile(source)
                    .and_then(|compiled| {
                        crate::script::within_limits(limits, || {
                            substrate.scripts.run_compiled(
                                &compiled,
                                &[
                                    ("face", crate::script::Input::Entries(face)),
                                    ("proposals", crate::script::Input::Json(&proposals)),
                                ],
                                moment_seed,
                            )
                        })
                    })
                    .map_err(|error| fail(PanelFailure::Rule { reason: error.to_string() }));
                match chosen {
                    Ok(Json::String(name)) if proposed.iter().any(|member| member.name == name) => Ok((name, None)),
                    Ok(other) => Err(fail(PanelFailure::RuleChoice { returned: other.to_string(), names: names() })),
                    Err(failed) => Err(failed),
                }
            }
            ChooseBy::Ruler => {
                let ruler = config.ruler_member().expect("a checked panel's ruler is a member");
                match prompt.get_or_insert_with(|| llm::prompt_in(world, face)) {
                    Err(error) => {
                        Err(fail(PanelFailure::Ruler { ruler: ruler.name.clone(), reason: error.to_string() }))
                    }
                    Ok(prompt) => {
                        let ruling = ruler_prompt(prompt, &members);
                        let connection = ruler.connection.as_deref().or(super::llm_connection(world, row, assigned));
                        let turn = ask_model(world, &ruling, connection, Some(&ruler.name), moment_seed, model);
                        panel_trace.add(&turn.trace);
                        let choice = match &turn.record {
                            Some(record) => read_choice(&record.response, &proposed).map_err(|why| why.to_string()),
                            None => Err(format!("no answer: {}", turn.no_answer.clone().unwrap_or_default())),
                        };
                        let ruler_record = MemberRecord {
                            llm: turn.record,
                            no_answer: turn.no_answer,
                            failure: choice.as_ref().err().cloned(),
                            ..MemberRecord::named(&ruler.name)
                        };
                        match choice {
                            Ok(name) => Ok((name, Some(ruler_record))),
                            Err(reason) => Err(fail(PanelFailure::Ruler { ruler: ruler.name.clone(), reason })),
                        }
                    }
                }
            }
        }
    };
    *trace = panel_trace.finish(prompt.as_ref().and_then(|prompt| prompt.as_ref().ok()));
    let (chosen, ruler) = outcome?;
    let proposal = members
        .iter()
        .find(|member| member.name == chosen)
        .and_then(|member| member.proposal.clone())
        .expect("the chosen member proposed");
    let record = PanelRecord { members, chosen_by: config.choose.as_str().to_string(), chosen, ruler };
    if proposal.call.is_none() {
        return Ok(Decision::only_looked(SeeReason::PanelChoseToLook { member: record.chosen }));
    }
    Ok(Decision {
        call: proposal.call,
        content: proposal.content,
        output_digest: None,
        llm: None,
        see: None,
        importance: proposal.importance,
        budget: None,
        panel: Some(record),
    })
}

fn member_failure_text(member: &MemberRecord) -> String {
    match (&member.failure, &member.no_answer) {
        (Some(failure), _) => failure.clone(),
        (None, Some(reason)) => format!("no answer: {reason}"),
        (None, None) => "nothing".to_string(),
    }
}

/// A script member's proposal: its script run on the face, as a scripted
/// being's would be (its seed differs per member).
fn script_member(
    substrate: &super::Substrate,
    member: &MemberConfig,
    face: &Face,
    seed: u64,
    limits: crate::script::RunLimits,
) -> MemberRecord {
    let mut record = MemberRecord::named(&member.name);
    let source = member.script.as_deref().unwrap_or_default();
    let output = match script_output(substrate, substrate.scripts.compile(source), face, seed, limits) {
        Ok((output, digest)) => {
            record.output = Some(digest);
            output
        }
        Err(refusal) => {
            record.failure = Some(refusal.to_string());
            return record;
        }
    };
    match (parse_call(&output), parse_importance(&output)) {
        (Ok((call, content)), Ok(importance)) => record.proposal = Some(Proposal { call, content, importance }),
        (Err(error), _) | (_, Err(error)) => record.failure = Some(error.to_string()),
    }
    record
}

/// The proposal most members made (the same call); a tie goes to the call
/// whose first proposer comes first. Returns that first proposer's name.
fn majority<'r>(proposed: &[&'r MemberRecord]) -> &'r str {
    let call_of = |member: &MemberRecord| member.proposal.as_ref().and_then(|proposal| proposal.call.clone());
    let mut best: Option<(&str, usize)> = None;
    for (index, member) in proposed.iter().enumerate() {
        let call = call_of(member);
        // Counted once, at the call's first proposer.
        if proposed[..index].iter().any(|earlier| call_of(earlier) == call) {
            continue;
        }
        let votes = proposed[index..].iter().filter(|later| call_of(later) == call).count();
        if best.is_none_or(|(_, most)| votes > most) {
            best = Some((member.name.as_str(), votes));
        }
    }
    best.map(|(name, _)| name).expect("at least one member proposed")
}

/// The proposals as a rule and a ruler read them: each member's name, its
/// call as `act` (`null`: to only look), its prose, and why it failed if it did.
fn proposals_json(members: &[MemberRecord]) -> Json {
    Json::Array(
        members
            .iter()
            .map(|member| {
                let proposal = member.proposal.as_ref();
                json!({
                    "member": member.name,
                    // `call` is a Rhai keyword: a rule reads `proposal.act`.
                    "act": proposal.and_then(|proposal| proposal.call.as_ref()).map(|call| serde_json::to_value(call).unwrap_or(Json::Null)),
                    "content": proposal.and_then(|proposal| proposal.content.clone()),
                    "failed": member.proposal.is_none(),
                    "failure": member.proposal.is_none().then(|| member_failure_text(member)),
                })
            })
            .collect(),
    )
}

/// The ruler's prompt: the being's, with the proposals in a block and one
/// tool, `choose`, whose `member` is one of those that proposed.
fn ruler_prompt(prompt: &Prompt, members: &[MemberRecord]) -> Prompt {
    let names: Vec<&str> =
        members.iter().filter(|member| member.proposal.is_some()).map(|member| member.name.as_str()).collect();
    let proposals = serde_json::to_string_pretty(&proposals_json(members)).unwrap_or_default();
    let system = format!(
        "{}\n[panel]\nYou rule a panel: its members proposed what this being does now. \
Choose one proposal by calling `choose` with its member's name.\n\n[proposals]\n{proposals}\n",
        prompt.system
    );
    let tool = json!({
        "type": "function",
        "function": {
            "name": CHOOSE_TOOL,
            "description": "Choose the member whose proposal the being acts on.",
            "parameters": {
                "type": "object",
                "properties": { "member": { "type": "string", "enum": names } },
                "required": ["member"],
            },
        },
    });
    Prompt {
        system,
        user: prompt.user.clone(),
        offered: vec![CHOOSE_TOOL],
        tools: vec![tool],
        omitted: prompt.omitted.clone(),
        recall_left_out: prompt.recall_left_out.clone(),
    }
}

/// Why a ruler's response chose no member.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RulerChoiceProblem {
    #[error("the response is not JSON ({reason})")]
    NotJson { reason: String },
    #[error("it did not call `choose`")]
    NoChoice,
    #[error("its arguments are not JSON ({reason})")]
    Arguments { reason: String },
    #[error("it chose {chose}, not one of the members that proposed ({names})")]
    NotAProposer { chose: String, names: String },
}

/// The member a ruler's response chose, or why it chose none.
fn read_choice(response: &str, proposed: &[&MemberRecord]) -> Result<String, RulerChoiceProblem> {
    let value: Json =
        serde_json::from_str(response).map_err(|error| RulerChoiceProblem::NotJson { reason: error.to_string() })?;
    let function = &value["choices"][0]["message"]["tool_calls"][0]["function"];
    if function["name"] != CHOOSE_TOOL {
        return Err(RulerChoiceProblem::NoChoice);
    }
    let arguments: Json = match &function["arguments"] {
        Json::String(text) => {
            serde_json::from_str(text).map_err(|error| RulerChoiceProblem::Arguments { reason: error.to_string() })?
        }
        other => other.clone(),
    };
    let name = arguments["member"].as_str().unwrap_or_default();
    if proposed.iter().any(|member| member.name == name) {
        Ok(name.to_string())
    } else {
        let names = proposed.iter().map(|member| member.name.as_str()).collect::<Vec<_>>().join(", ");
        Err(RulerChoiceProblem::NotAProposer { chose: arguments["member"].to_string(), names })
    }
}

/// The model calls of one deliberation, summed for the moment trace.
#[derive(Default)]
struct PanelTrace {
    calls: Vec<LlmTrace>,
}

impl PanelTrace {
    fn add(&mut self, trace: &LlmTrace) {
        self.calls.push(trace.clone());
    }

    fn finish(self, prompt: Option<&Prompt>) -> Option<LlmTrace> {
        if self.calls.is_empty() {
            return None;
        }
        let mut total = LlmTrace {
            connection: "panel".into(),
            omitted_see_blocks: prompt.map(|prompt| prompt.omitted.clone()).unwrap_or_default(),
            ..LlmTrace::default()
        };
        let mut models = Vec::new();
        for call in self.calls {
            total.prompt_tokens += call.prompt_tokens;
            total.completion_tokens += call.completion_tokens;
            total.cost_micros += call.cost_micros;
            total.attempts += call.attempts;
            total.latency_us += call.latency_us;
            if !call.model.is_empty() && !models.contains(&call.model) {
                models.push(call.model.clone());
            }
            total.records.extend(call.records);
        }
        total.model = models.join(", ");
        Some(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `panel_momentum` relies on to turn a proposal it could not
    /// store into its member's failure.
    #[test]
    fn a_proposal_with_a_fraction_cannot_be_stored_and_a_whole_one_can() {
        let proposal = |args: Json| Proposal {
            call: Some(VerbCall::Do { target: "/".into(), action: "sell".into(), args }),
            content: None,
            importance: None,
        };
        assert!(crate::canonical::to_canonical_bytes(&proposal(json!({"price": 1.5}))).is_err());
        assert!(crate::canonical::to_canonical_bytes(&proposal(json!({"price": 2}))).is_ok());
    }
}
