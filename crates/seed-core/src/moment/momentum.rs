//! Beat 4, momentum: the cognition picks at most one verb call. A Rhai
//! script's output or a model's answer is read into a [`Decision`]; a
//! person's choice (the portal) is one already.

use super::refusal::{CallError, LlmFailure, Refusal};
use super::{failure, Assigned, Beat, Failure, Opened, Substrate};
use crate::canonical;
use crate::face::Face;
use crate::fact::body::Cognition;
use crate::fact::{blake3_of, Hash32};
use crate::llm::{self, LanguageModel, LlmRecord, LlmTrace};
use crate::world::{BeingRow, VerbCall, World};
use serde_json::Value as Json;

/// Beat 4: what the cognition chose.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub call: Option<VerbCall>,
    pub content: Option<String>,
    /// BLAKE3 of the script's output, for replay to compare.
    pub output_digest: Option<Hash32>,
    /// The model call of an LLM moment, recorded in the act.
    pub llm: Option<LlmRecord>,
    /// Why no verb was called (set exactly when `call` is `None`).
    pub see: Option<SeeReason>,
    /// How important the cognition says the act is (0 to `IMPORTANCE_MAX`),
    /// recorded in the act for memory; `None`: it did not say.
    pub importance: Option<u8>,
    /// Set when no model was called because this budget is spent: the call
    /// is the substrate's summons of the being's owner (`crate::spend`).
    pub budget: Option<crate::spend::BudgetSpent>,
    /// A panel's deliberation, recorded in the act (`super::panel`).
    pub panel: Option<super::panel::PanelRecord>,
}

impl Decision {
    /// A decision to call no verb, for `reason`.
    pub(super) fn only_looked(reason: SeeReason) -> Decision {
        Decision {
            call: None,
            content: None,
            output_digest: None,
            llm: None,
            see: Some(reason),
            importance: None,
            budget: None,
            panel: None,
        }
    }
}

/// Why a moment only looked: the reason the moments page gives for a see.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeeReason {
    #[error("neither the being nor its role {role} has a script: nothing chose an act")]
    NoScript { role: String },
    #[error("the script returned no act")]
    ScriptChoseNothing,
    #[error("the model answered without calling a tool")]
    ModelCalledNoTool,
    #[error("the panel chose member {member}'s proposal: to only look")]
    PanelChoseToLook { member: String },
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

/// The `importance` a script's call carries, if any: a whole number from 0
/// to `IMPORTANCE_MAX` (docs/memory.md).
pub fn parse_importance(output: &Json) -> Result<Option<u8>, CallError> {
    use crate::memory::recall::IMPORTANCE_MAX;
    match output.get("importance") {
        None | Some(Json::Null) => Ok(None),
        Some(given) => match given.as_u64().and_then(|value| u8::try_from(value).ok()) {
            Some(importance) if importance <= IMPORTANCE_MAX => Ok(Some(importance)),
            _ => Err(CallError::Importance { given: given.to_string(), most: IMPORTANCE_MAX }),
        },
    }
}

#[cfg(test)]
mod importance_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_scripts_importance_is_a_whole_number_up_to_the_most() {
        let check = |output: Json, expected: Result<Option<u8>, &str>| {
            let got = parse_importance(&output).map_err(|error| error.to_string());
            match expected {
                Ok(importance) => assert_eq!(got, Ok(importance), "{output}"),
                Err(needle) => {
                    assert!(got.as_ref().is_err_and(|message| message.contains(needle)), "{output}: {got:?}")
                }
            }
        };
        check(json!({"verb": "see", "address": "/"}), Ok(None));
        check(json!({"verb": "see", "address": "/", "importance": null}), Ok(None));
        check(json!({"verb": "see", "address": "/", "importance": 0}), Ok(Some(0)));
        check(json!({"verb": "see", "address": "/", "importance": 10}), Ok(Some(10)));
        check(json!({"verb": "see", "address": "/", "importance": 11}), Err("from 0 to 10, not 11"));
        check(json!({"verb": "see", "address": "/", "importance": -1}), Err("not -1"));
        check(json!({"verb": "see", "address": "/", "importance": "high"}), Err("not \"high\""));
        check(json!(null), Ok(None));
    }
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

/// The decision when a budget of `row` is spent: no model call, and its
/// owner summoned once per budget and window (`crate::spend`); after that,
/// the moment fails naming the budget. `None`: the call may be made.
pub(super) fn budget_decision(
    world: &World,
    row: &BeingRow,
    opened: &Opened,
    assigned: &Assigned,
) -> Result<Option<Decision>, Failure> {
    let primary = assigned.composed.primary.as_deref();
    let Some(spent) = crate::spend::exhausted(world, row, primary, opened.stored_time_ms) else { return Ok(None) };
    let Some(owner) = crate::spend::owner_to_summon(world, row, &spent) else {
        return Err(failure(Beat::Momentum, Refusal::Llm(LlmFailure::OverBudget(spent))));
    };
    let content = crate::spend::owner_summons_text(&row.name, &spent);
    Ok(Some(Decision {
        call: Some(VerbCall::Summon { target: format!("@{}", owner.name), content, in_reply_to: None }),
        content: None,
        output_digest: None,
        llm: None,
        see: None,
        importance: None,
        budget: Some(spent),
        panel: None,
    }))
}

/// One model call and what its answer says.
pub(super) struct ModelTurn {
    /// The call's record, once answered.
    pub record: Option<LlmRecord>,
    /// Why no answer came (after retries), if none did.
    pub no_answer: Option<String>,
    pub result: Result<llm::Interpreted, LlmFailure>,
    pub trace: LlmTrace,
}

/// Asks `model` about `prompt` (as panel member `member`, if one) and reads
/// the answer: I/O behind the trait, a client or replay's recorded answer.
pub(super) fn ask_model(
    world: &World,
    prompt: &llm::Prompt,
    connection: Option<&str>,
    member: Option<&str>,
    seed: u64,
    model: &dyn LanguageModel,
) -> ModelTurn {
    let question = llm::Question { connection, prompt, seed, member, limits: llm::CallLimits::of_models(world) };
    let answer = match model.answer(&question) {
        Ok(answer) => answer,
        Err(no_answer) => {
            return ModelTurn {
                record: None,
                no_answer: Some(no_answer.reason.clone()),
                trace: LlmTrace {
                    connection: connection.unwrap_or("(the default)").to_string(),
                    attempts: no_answer.attempts,
                    omitted_see_blocks: prompt.omitted.clone(),
                    ..LlmTrace::default()
                },
                result: Err(LlmFailure::NoAnswer(no_answer)),
            }
        }
    };
    let record = LlmRecord::of(prompt, &answer);
    let trace = LlmTrace {
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
        records: vec![record.clone()],
    };
    let most = world.config_u64("llm_response_bytes_max", llm::LLM_RESPONSE_BYTES_MAX as u64) as usize;
    let result = if record.response.len() > most {
        Err(LlmFailure::ResponseTooLarge { len: record.response.len(), most })
    } else {
        llm::interpret(&record.response, &prompt.offered).map_err(LlmFailure::Response)
    };
    ModelTurn { record: Some(record), no_answer: None, result, trace }
}

/// Beat 4 for LLM cognition: the prompt from the face, one call through
/// `model`, the response read into a verb call. What the call cost goes to
/// `trace` even when the answer is refused.
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
    if let Some(decision) = budget_decision(world, row, opened, assigned)? {
        return Ok(decision);
    }
    let prompt = llm::prompt_in(world, face).map_err(|error| fail(LlmFailure::Prompt(error)))?;
    let connection = llm_connection(world, row, assigned);
    let seed = u64::from_be_bytes(opened.id.0[24..32].try_into().expect("32 bytes"));
    let turn = ask_model(world, &prompt, connection, None, seed, model);
    *trace = Some(turn.trace);
    let interpreted = turn.result.map_err(fail)?;
    let record = turn.record.expect("an interpreted answer was answered");
    if interpreted.call.is_none() {
        // Prose said to nobody: logged in the trace, not sealed.
        if let Some(entry) = trace.as_mut() {
            entry.prose = interpreted.content;
        }
        return Ok(Decision::only_looked(SeeReason::ModelCalledNoTool));
    }
    Ok(Decision {
        call: interpreted.call,
        content: interpreted.content,
        output_digest: None,
        llm: Some(record),
        see: None,
        importance: interpreted.importance,
        budget: None,
        panel: None,
    })
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
        Cognition::Panel => {
            return super::panel::panel_momentum(substrate, world, row, opened, assigned, face, model, llm_trace)
        }
        other => return Err(failure(Beat::Momentum, Refusal::NotScripted { cognition: other.as_str() })),
    }
    // A role's script is shared by every being wearing the role, so it is
    // found by address; a being's own script (a quality) by its hash.
    let compiled = match row.qualities.get("script").and_then(Json::as_str) {
        Some(source) => substrate.scripts.compile(source),
        None => match assigned.walk.primary.as_ref().and_then(|role| role.script.as_ref()) {
            Some(source) => substrate.scripts.compile_shared(source),
            None => {
                let role =
                    assigned.walk.primary.as_ref().map_or_else(|| "(none)".to_string(), |role| role.name.to_string());
                return Ok(Decision::only_looked(SeeReason::NoScript { role }));
            }
        },
    };
    let seed = u64::from_be_bytes(opened.id.0[..8].try_into().expect("32 bytes"));
    let (output, output_digest) = script_output(substrate, compiled, face, seed, crate::script::limits_in(world))
        .map_err(|refusal| failure(Beat::Momentum, refusal))?;
    let refused = |error| failure(Beat::Momentum, Refusal::ScriptCall(error));
    let (call, content) = parse_call(&output).map_err(refused)?;
    let importance = parse_importance(&output).map_err(refused)?;
    let see = call.is_none().then_some(SeeReason::ScriptChoseNothing);
    Ok(Decision {
        call,
        content,
        output_digest: Some(output_digest),
        llm: None,
        see,
        importance,
        budget: None,
        panel: None,
    })
}

/// A script run on the face: its output and the output's digest (what a
/// scripted being's act and a panel's script member record).
pub(super) fn script_output(
    substrate: &Substrate,
    compiled: Result<std::sync::Arc<crate::script::Compiled>, crate::script::ScriptError>,
    face: &Face,
    seed: u64,
    limits: crate::script::RunLimits,
) -> Result<(Json, Hash32), Refusal> {
    let output = compiled
        .and_then(|compiled| {
            crate::script::within_limits(limits, || {
                substrate.scripts.run_compiled(&compiled, &[("face", crate::script::Input::Entries(face))], seed)
            })
        })
        .map_err(Refusal::Script)?;
    let output_bytes = canonical::encode_json(&output).map_err(Refusal::Encoding)?;
    Ok((output, blake3_of(&output_bytes)))
}

/// What a person chose at the portal: the verb call, the prose beside it
/// and, if they gave one, how important the act is to the being's memory.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonChoice {
    pub call: VerbCall,
    pub content: Option<String>,
    /// 0 to `IMPORTANCE_MAX`; `None`: the role's `actImportance` decides.
    pub importance: Option<u8>,
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
    if let Some(given) = choice.importance.filter(|given| *given > crate::memory::recall::IMPORTANCE_MAX) {
        let error = CallError::Importance { given: given.to_string(), most: crate::memory::recall::IMPORTANCE_MAX };
        return Err(failure(Beat::Momentum, Refusal::ScriptCall(error)));
    }
    Ok(Decision {
        call: Some(choice.call.clone()),
        content: choice.content.clone(),
        output_digest: None,
        llm: None,
        see: None,
        importance: choice.importance,
        budget: None,
        panel: None,
    })
}
