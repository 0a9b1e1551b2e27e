//! Breakpoints for stepping through a replay: by reel seq, by verb (and DO
//! action), by fact kind, by a `when` expression over the moment's open
//! context, or at any divergence.

use super::ReplayedMoment;
use crate::roles::context::OpenContext;
use crate::roles::when::{compile, Condition, Lookup, PathTable};
use crate::world::VerbCall;
use serde_json::Value as Json;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BreakpointError {
    #[error("a breakpoint is one of: seq N | verb VERB[:ACTION] | kind KIND | when JSON | divergence (got {given:?})")]
    Unknown { given: String },
    #[error("seq {given:?}: not a whole number")]
    Seq { given: String },
    #[error("verb {given:?}: the verbs are see, do, summon and be")]
    Verb { given: String },
    #[error("kind: name a fact kind (genesis, act, world, rotate-key, end, note, ...)")]
    Kind,
    #[error("when: {reason}")]
    When { reason: String },
}

#[derive(Debug, Clone)]
pub enum Breakpoint {
    /// The moment sealed at this reel seq.
    Seq(u64),
    /// Moments whose act used this verb (and, for `do`, this action).
    Verb { verb: String, action: Option<String> },
    /// Any fact of this kind folded into the world (any being's).
    Kind(String),
    /// Moments whose open context satisfies this `when` expression.
    When { source: String, condition: Condition, paths: PathTable },
    /// Moments that diverge from their record.
    Divergence,
}

impl Breakpoint {
    pub fn parse(text: &str) -> Result<Breakpoint, BreakpointError> {
        let text = text.trim();
        let (head, rest) = text.split_once(char::is_whitespace).map_or((text, ""), |(head, rest)| (head, rest.trim()));
        match head {
            "seq" => rest.parse().map(Breakpoint::Seq).map_err(|_| BreakpointError::Seq { given: rest.into() }),
            "verb" => {
                let (verb, action) = rest.split_once(':').map_or((rest, None), |(verb, action)| (verb, Some(action)));
                if !["see", "do", "summon", "be"].contains(&verb) {
                    return Err(BreakpointError::Verb { given: rest.into() });
                }
                Ok(Breakpoint::Verb { verb: verb.into(), action: action.map(str::to_string) })
            }
            "kind" if !rest.is_empty() && !rest.contains(char::is_whitespace) => Ok(Breakpoint::Kind(rest.into())),
            "kind" => Err(BreakpointError::Kind),
            "when" => {
                let value: Json = serde_json::from_str(rest)
                    .map_err(|error| BreakpointError::When { reason: format!("not valid JSON: {error}") })?;
                let mut paths = PathTable::default();
                let condition = compile(&value, &mut paths, "when")
                    .map_err(|error| BreakpointError::When { reason: error.to_string() })?;
                Ok(Breakpoint::When { source: rest.into(), condition, paths })
            }
            "divergence" if rest.is_empty() => Ok(Breakpoint::Divergence),
            _ => Err(BreakpointError::Unknown { given: text.into() }),
        }
    }

    /// Whether replay should stop at this rebuilt moment.
    pub fn hits_moment(&self, moment: &ReplayedMoment) -> bool {
        match self {
            Breakpoint::Seq(seq) => moment.seq == *seq,
            Breakpoint::Verb { verb, action } => {
                moment.act.call.verb() == verb
                    && match (action, &moment.act.call) {
                        (None, _) => true,
                        (Some(wanted), VerbCall::Do { action, .. }) => wanted == action,
                        (Some(wanted), VerbCall::Be { operation, .. }) => wanted == operation,
                        (Some(_), _) => false,
                    }
            }
            Breakpoint::Kind(kind) => kind == "act",
            Breakpoint::When { condition, paths, .. } => match OpenContext::from_json(&moment.context) {
                Ok(context) => condition.eval(&mut Lookup::new(&context, paths)).is_ok(),
                Err(_) => false,
            },
            Breakpoint::Divergence => !moment.matches,
        }
    }

    /// The fact kind this breakpoint watches the fold for, if any.
    pub fn watched_kind(&self) -> Option<&str> {
        match self {
            Breakpoint::Kind(kind) => Some(kind),
            _ => None,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Breakpoint::Seq(seq) => format!("seq {seq}"),
            Breakpoint::Verb { verb, action: Some(action) } => format!("verb {verb}:{action}"),
            Breakpoint::Verb { verb, action: None } => format!("verb {verb}"),
            Breakpoint::Kind(kind) => format!("kind {kind}"),
            Breakpoint::When { source, .. } => format!("when {source}"),
            Breakpoint::Divergence => "divergence".into(),
        }
    }
}
