//! The schemas of the bodies the layers above the foundation write, as
//! verification holds stored facts to them ([`crate::schemas::HigherSchemas`]):
//! `seed verify`, `seed import` and replay pass [`CoreSchemas`] to the
//! checker, which knows only the foundation's kinds itself.
//!
//! Each rule is the writer's own, called here rather than restated:
//!
//! - `act`, `world`, `spend` and `embedding` bodies read as [`ActBody`] /
//!   [`WorldBody`] / [`crate::spend::SpendBody`] /
//!   [`crate::embedding::EmbeddingBody`] and encode
//!   back to exactly their bytes (the writers encode those types, so a body
//!   with a field they lack, or without one they always write, is not theirs);
//! - a genesis's roleFlow is a list of clauses [`RoleFlow::from_json`] reads
//!   (the parser every flow passes before a land writes it), stored as the
//!   land stores a JSON flow; its home space is a space address in normal
//!   form ([`parse_space`]); its default role is a role name
//!   ([`kebab_name_problem`]).
//!
//! A roleFlow's verdict is remembered per distinct flow (beings planted from one
//! template share one), up to [`ROLE_FLOW_VERDICTS_CACHED_MAX`] flows.

use super::address::parse_space;
use super::body::{KIND_ACT, KIND_WORLD};
use super::{ActBody, WorldBody};
use crate::canonical;
use crate::fact::body::{read_known_body, GenesisBody, GenesisBodyFlowSkipped, KIND_GENESIS};
use crate::limits::Limits;
use crate::names::kebab_name_problem;
use crate::roles::RoleFlow;
use crate::schemas::{BodyProblem, BodyRules, HigherSchemas};
use ciborium::value::Value as Cbor;
use serde_json::Value as Json;
use std::borrow::Cow;
use std::sync::{PoisonError, RwLock};

/// Distinct roleFlows whose verdict one [`CoreSchemas`] remembers: beings
/// planted from one template share a flow, checked once.
pub const ROLE_FLOW_VERDICTS_CACHED_MAX: usize = 64;

/// The schemas of this build's `act` and `world` bodies and of a genesis's
/// roleFlow, home space and default role.
pub struct CoreSchemas {
    /// Whether act bodies are left to replay, which recomputes every stored
    /// act and compares its bytes: an act body that is not an [`ActBody`]
    /// cannot match and is named as a divergence of its own, so checking
    /// it here too would read every act of the land twice.
    acts_left_to_replay: bool,
    /// Each roleFlow's canonical bytes and what is wrong with it (at most
    /// [`ROLE_FLOW_VERDICTS_CACHED_MAX`]).
    flow_verdicts: RwLock<Vec<(Vec<u8>, Option<BodyProblem>)>>,
}

impl Default for CoreSchemas {
    fn default() -> CoreSchemas {
        CoreSchemas::new()
    }
}

impl CoreSchemas {
    /// Every schema, acts included (a `const fn`, so a program may keep
    /// one in a `static`).
    pub const fn new() -> CoreSchemas {
        CoreSchemas { acts_left_to_replay: false, flow_verdicts: RwLock::new(Vec::new()) }
    }

    /// Every schema but the act body's, for a verification that runs beside
    /// a replay of every act (see `replay::land`).
    pub const fn leaving_acts_to_replay() -> CoreSchemas {
        CoreSchemas { acts_left_to_replay: true, flow_verdicts: RwLock::new(Vec::new()) }
    }

    /// The rules a land with `limits` holds every body to.
    pub fn rules(&self, limits: &Limits) -> BodyRules<'_> {
        BodyRules { body_bytes_max: limits.fact_body_bytes_max, schemas: self }
    }

    fn genesis_problem(&self, body: &[u8]) -> Option<BodyProblem> {
        // Read off the bytes as verification read it; any other form (which
        // verification names already, if serde refuses it) through serde.
        let (genesis, flow) = match GenesisBodyFlowSkipped::read_directly(body) {
            Some((genesis, flow)) => (genesis, Cow::Borrowed(flow)),
            None => {
                let mut genesis: GenesisBody = read_known_body(body).ok()?;
                let flow = canonical::encode_value(&Cbor::Array(std::mem::take(&mut genesis.role_flow))).ok()?;
                (genesis.with_flow(Vec::new()), Cow::Owned(flow))
            }
        };
        // Every home a land writes is a space the parser takes (and gives
        // back unchanged: the parser's normal form is its input).
        if let Err(error) = parse_space(&genesis.home_space) {
            return Some(BodyProblem::Field { field: "home_space", reason: error.to_string() });
        }
        if let Some(reason) = kebab_name_problem(&genesis.default_role) {
            let reason = format!("{:?} is not a role name: {reason}", genesis.default_role);
            return Some(BodyProblem::Field { field: "default_role", reason });
        }
        self.role_flow_problem(&flow)
    }

    /// What is wrong with a genesis's roleFlow, given as its canonical bytes.
    fn role_flow_problem(&self, flow: &[u8]) -> Option<BodyProblem> {
        {
            // Nothing panics while the lock is held, so it is never poisoned.
            let verdicts = self.flow_verdicts.read().unwrap_or_else(PoisonError::into_inner);
            if let Some((_, verdict)) = verdicts.iter().find(|(known, _)| known == flow) {
                return verdict.clone();
            }
        }
        let verdict = role_flow_verdict(flow);
        let mut verdicts = self.flow_verdicts.write().unwrap_or_else(PoisonError::into_inner);
        if verdicts.len() < ROLE_FLOW_VERDICTS_CACHED_MAX && !verdicts.iter().any(|(known, _)| known == flow) {
            verdicts.push((flow.to_vec(), verdict.clone()));
        }
        verdict
    }
}

/// A roleFlow's problem, from its canonical bytes: the land stores a flow
/// as the CBOR of its JSON (`world::json_to_cbor`), so the clauses must read
/// as JSON and encode back to exactly these bytes (no byte strings, no
/// keys that are not text), and the JSON must be a flow the parser takes.
fn role_flow_verdict(flow: &[u8]) -> Option<BodyProblem> {
    let field = |reason: String| Some(BodyProblem::Field { field: "role_flow", reason });
    let clauses: Vec<Cbor> = match canonical::from_canonical_bytes(flow) {
        Ok(clauses) => clauses,
        Err(error) => return field(error.to_string()),
    };
    let json = Json::Array(clauses.iter().map(crate::canonical::cbor_to_json).collect());
    if canonical::encode_json(&json).ok().as_deref() != Some(flow) {
        return field(
            "is not a list of JSON values as a land writes a roleFlow (a byte string, a key that is not text, …)"
                .into(),
        );
    }
    RoleFlow::from_json(&json).err().map(|error| BodyProblem::Field { field: "role_flow", reason: error.to_string() })
}

/// What is wrong with `body` as a `T` its writer encoded: it must read as
/// one and encode back to exactly these bytes.
fn written_as<T: serde::de::DeserializeOwned + serde::Serialize>(body: &[u8]) -> Option<BodyProblem> {
    let read: T = match read_known_body(body) {
        Ok(read) => read,
        Err(error) => return Some(BodyProblem::Unreadable { reason: error.to_string() }),
    };
    match canonical::to_canonical_bytes(&read) {
        Ok(written) if written == body => None,
        Ok(written) => Some(BodyProblem::NotAsWritten { difference: first_difference(body, &written) }),
        Err(error) => Some(BodyProblem::Unreadable { reason: error.to_string() }),
    }
}

/// The first top-level field in which a stored body and what its reading
/// encodes to differ, in words. Only called once they do differ.
fn first_difference(stored: &[u8], written: &[u8]) -> String {
    let entries = |bytes: &[u8]| match canonical::decode_canonical(bytes) {
        Ok(Cbor::Map(entries)) => Some(entries),
        _ => None,
    };
    let (Some(stored), Some(written)) = (entries(stored), entries(written)) else {
        return "its bytes differ from the encoding of what it reads as".into();
    };
    let label = |key: &Cbor| match key {
        Cbor::Text(text) => format!("`{text}`"),
        other => format!("{other:?}"),
    };
    let find = |entries: &'_ [(Cbor, Cbor)], key: &Cbor| {
        entries.iter().find(|(known, _)| known == key).map(|(_, value)| value.clone())
    };
    for (key, value) in &stored {
        match find(&written, key) {
            None => return format!("field {} is not one it has", label(key)),
            Some(other) if other != *value => {
                return format!("field {} is not in the form its writer gives it", label(key))
            }
            Some(_) => {}
        }
    }
    match written.iter().find(|(key, _)| find(&stored, key).is_none()) {
        Some((key, _)) => format!("field {} is missing (its writer always writes it)", label(key)),
        None => "its bytes differ from the encoding of what it reads as".into(),
    }
}

impl HigherSchemas for CoreSchemas {
    fn body_problem(&self, kind: &str, body: &[u8]) -> Option<BodyProblem> {
        match kind {
            KIND_GENESIS => self.genesis_problem(body),
            KIND_ACT if self.acts_left_to_replay => None,
            KIND_ACT => written_as::<ActBody>(body),
            KIND_WORLD => written_as::<WorldBody>(body),
            crate::spend::KIND_SPEND => written_as::<crate::spend::SpendBody>(body),
            crate::embedding::KIND_EMBEDDING => written_as::<crate::embedding::EmbeddingBody>(body),
            _ => None,
        }
    }
}
