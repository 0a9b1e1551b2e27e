//! The typed bodies of the fact kinds the core knows. Field names are the map
//! keys of the canonical CBOR body (documented in `docs/reel-format.md`).
//!
//! A genesis body is generic over how its roleFlow is read ([`GenesisBodyOf`]):
//! built ([`GenesisBody`]), or only checked to be a list
//! ([`GenesisBodyFlowSkipped`], read off the bytes when they are in their plain
//! forms, as every genesis this build writes is, and by serde otherwise).

use super::{BeingId, Hash32, PublicKeyBytes};
use serde::{Deserialize, Serialize};

pub const KIND_GENESIS: &str = "genesis";
pub const KIND_ROTATE_KEY: &str = "rotate-key";
pub const KIND_END: &str = "end";
pub const KIND_OPERATOR_TOKEN: &str = "operator-token";
pub const KIND_NOTE: &str = "note";
pub const KIND_MOVE: &str = "move";
pub const KIND_MOVED_IN: &str = "moved-in";

/// Every kind whose body schema this build knows; `seed verify` decodes each
/// of them strictly. Kinds outside this list are accepted when their body is
/// canonical CBOR (extensions add kinds of their own, `namespace:kind`).
pub const KNOWN_KINDS: &[&str] =
    &[KIND_GENESIS, KIND_ROTATE_KEY, KIND_END, KIND_OPERATOR_TOKEN, KIND_NOTE, KIND_MOVE, KIND_MOVED_IN];

/// How a being decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cognition {
    /// A Rhai script.
    Scripted,
    /// One language-model call per moment.
    Llm,
    /// A person at the portal.
    Human,
    /// Several members (model connections, scripts) propose; one call is
    /// chosen (the being's `panel` quality says who and how).
    Panel,
    /// Never has moments: the reality root.
    None,
}

impl Cognition {
    pub fn as_str(self) -> &'static str {
        match self {
            Cognition::Scripted => "scripted",
            Cognition::Llm => "llm",
            Cognition::Human => "human",
            Cognition::None => "none",
            Cognition::Panel => "panel",
        }
    }

    /// The cognition a being may be given at birth, by its name.
    pub fn of_birth(name: &str) -> Option<Cognition> {
        Cognition::AT_BIRTH.iter().copied().find(|cognition| cognition.as_str() == name)
    }

    /// The cognitions a being may be born with (`none` is the reality root's).
    pub const AT_BIRTH: [Cognition; 4] = [Cognition::Scripted, Cognition::Llm, Cognition::Human, Cognition::Panel];

    /// The names of [`Cognition::AT_BIRTH`], for messages.
    pub const AT_BIRTH_NAMES: [&'static str; 4] = ["scripted", "llm", "human", "panel"];
}

/// Seq 0 of every reel. The being's id is the BLAKE3 of these bytes.
pub type GenesisBody = GenesisBodyOf<Vec<ciborium::value::Value>>;

/// A genesis body read for everything but its roleFlow, which is only
/// checked to be a list of CBOR items (as [`GenesisBody`] would take it),
/// not built: for readers that need the name or the key.
pub type GenesisBodyFlowSkipped = GenesisBodyOf<Vec<serde::de::IgnoredAny>>;

/// A genesis body, its roleFlow read as `Flow`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// Named as before it took a type parameter: serde's messages quote the name.
#[serde(deny_unknown_fields, rename = "GenesisBody")]
pub struct GenesisBodyOf<Flow> {
    pub name: String,
    /// The being that minted this one; none for the reality root and the operator.
    pub parent: Option<BeingId>,
    pub cognition: Cognition,
    pub public_key: PublicKeyBytes,
    /// The ordered roleFlow clauses, kept as canonical CBOR data.
    pub role_flow: Flow,
    pub default_role: String,
    /// Address of the being's home space.
    pub home_space: String,
    /// Random bytes so that two beings with the same row get different ids.
    #[serde(with = "nonce_bytes")]
    pub nonce: [u8; 16],
}

impl<Flow> GenesisBodyOf<Flow> {
    /// The same body with its roleFlow in another form.
    pub fn with_flow<Other>(self, role_flow: Other) -> GenesisBodyOf<Other> {
        GenesisBodyOf {
            name: self.name,
            parent: self.parent,
            cognition: self.cognition,
            public_key: self.public_key,
            role_flow,
            default_role: self.default_role,
            home_space: self.home_space,
            nonce: self.nonce,
        }
    }
}

impl GenesisBodyFlowSkipped {
    /// Reads a genesis body as [`read_known_body`] does, whatever the bytes:
    /// off the bytes where they hold exactly the fields, in canonical order
    /// and in their plain forms (every genesis this build writes), through
    /// serde otherwise. A body read twice for every being of a land replay
    /// (verification, the fold) is not walked by the generic reader.
    pub fn read(body: &[u8]) -> Result<GenesisBodyFlowSkipped, BodySchemaError> {
        match read_flow_skipped_directly(body) {
            Some((genesis, _)) => Ok(genesis),
            None => read_known_body(body),
        }
    }

    /// The body and its roleFlow's bytes where [`GenesisBodyFlowSkipped::read`]
    /// reads it off the bytes; `None` where it leaves the body to serde.
    pub fn read_directly(body: &[u8]) -> Option<(GenesisBodyFlowSkipped, &[u8])> {
        read_flow_skipped_directly(body)
    }
}

/// The nesting depth of a roleFlow clause in a genesis body (the body's map
/// is at 0, the flow's list at 1).
const GENESIS_CLAUSE_DEPTH: usize = 2;

/// A genesis body read off the bytes, `None` where serde decides (an
/// unknown, missing or repeated field, keys out of canonical order, a value
/// in another form). What it reads is checked as `check_canonical` checks
/// it (shortest heads, UTF-8, the clauses whole), so it accepts a body only
/// where serde's reading accepts it too, and reads the same values. With
/// the body, the bytes of its roleFlow.
fn read_flow_skipped_directly(body: &[u8]) -> Option<(GenesisBodyFlowSkipped, &[u8])> {
    use crate::canonical::{next_key_in_order, set_once, CanonicalReader};
    let mut reader = CanonicalReader::new(body);
    let (mut name, mut parent, mut cognition, mut public_key) = (None, None, None, None);
    let (mut role_flow, mut default_role, mut home_space, mut nonce) = (None, None, None, None);
    let mut flow_bytes: &[u8] = &[];
    let mut previous_key: Option<&[u8]> = None;
    for _ in 0..reader.map_head()? {
        match next_key_in_order(&mut reader, &mut previous_key)? {
            b"name" => set_once(&mut name, reader.text()?.to_string())?,
            b"parent" => {
                let read = if reader.null() { None } else { Some(BeingId(reader.fixed_bytes()?)) };
                set_once(&mut parent, read)?
            }
            b"cognition" => {
                let read = match reader.text()? {
                    "scripted" => Cognition::Scripted,
                    "llm" => Cognition::Llm,
                    "human" => Cognition::Human,
                    "none" => Cognition::None,
                    "panel" => Cognition::Panel,
                    _ => return None,
                };
                set_once(&mut cognition, read)?
            }
            b"public_key" => set_once(&mut public_key, PublicKeyBytes(reader.fixed_bytes()?))?,
            b"role_flow" => {
                let flow_start = reader.position();
                let clauses = reader.array_head()?;
                for _ in 0..clauses {
                    if !reader.skip_item(GENESIS_CLAUSE_DEPTH) {
                        return None;
                    }
                }
                flow_bytes = body.get(flow_start..reader.position())?;
                // Each clause took at least a byte, so the count is small.
                set_once(&mut role_flow, vec![serde::de::IgnoredAny; usize::try_from(clauses).ok()?])?
            }
            b"default_role" => set_once(&mut default_role, reader.text()?.to_string())?,
            b"home_space" => set_once(&mut home_space, reader.text()?.to_string())?,
            b"nonce" => set_once(&mut nonce, reader.fixed_bytes()?)?,
            _ => return None,
        }
    }
    if !reader.is_at_end() {
        return None;
    }
    let genesis = GenesisBodyOf {
        name: name?,
        // A missing `parent` reads as `None` (an `Option` field), as with serde.
        parent: parent.flatten(),
        cognition: cognition?,
        public_key: public_key?,
        role_flow: role_flow?,
        default_role: default_role?,
        home_space: home_space?,
        nonce: nonce?,
    };
    Some((genesis, flow_bytes))
}

/// Replaces the signing key; signed by the key it replaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RotateKeyBody {
    pub new_public_key: PublicKeyBytes,
}

/// The being leaves its land for another (`seed move`): a key handover,
/// signed by the key it replaces, to a key the new land minted (no private
/// key crosses between lands). Its old land holds no key for what follows,
/// so the reel goes on only on the new land, whose first fact there is a
/// `moved-in`. `qualities` are the being's qualities as its old land's
/// world held them at the move: what it carries with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoveBody {
    /// The id of the land it moves to.
    pub to_land: BeingId,
    /// Where that land said it could be reached.
    pub to_url: String,
    pub new_public_key: PublicKeyBytes,
    pub qualities: std::collections::BTreeMap<String, ciborium::value::Value>,
}

/// The first fact a moved being's reel gets on its new land, signed by the
/// key the `move` before it named: the reel goes on here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MovedInBody {
    /// The land it came from.
    pub from_land: BeingId,
    /// Its home (and where it is) on its new land.
    pub home_space: String,
    /// Its parent on its new land (its operator), in place of the parent
    /// its genesis names on the land it was born on: who may drive it and
    /// whose descendant it is here.
    pub parent: BeingId,
}

/// The being is released for good; nothing may follow this fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndBody {
    pub reason: String,
}

/// The hash of the operator's login token (the token itself is never stored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorTokenBody {
    pub token_hash: Hash32,
}

/// A free-text note: used by diagnostics (`seed stress`) and tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteBody {
    pub text: String,
}

/// Checks the body of a known kind against its schema; `Ok` for unknown
/// kinds. Read in place (ciborium's deserializer costs several times more,
/// and verification reads every genesis body of a land).
pub fn check_known_body(kind: &str, body: &[u8]) -> Result<(), BodySchemaError> {
    fn read<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<(), BodySchemaError> {
        read_known_body::<T>(body).map(drop)
    }
    match kind {
        KIND_GENESIS => read::<GenesisBody>(body),
        KIND_ROTATE_KEY => read::<RotateKeyBody>(body),
        KIND_END => read::<EndBody>(body),
        KIND_OPERATOR_TOKEN => read::<OperatorTokenBody>(body),
        KIND_NOTE => read::<NoteBody>(body),
        KIND_MOVE => read::<MoveBody>(body),
        KIND_MOVED_IN => read::<MovedInBody>(body),
        _ => Ok(()),
    }
}

/// A known kind's body read as `T`, or what [`check_known_body`] says is
/// wrong with it (for a caller that needs the body as well as the check).
pub fn read_known_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, BodySchemaError> {
    match crate::canonical::from_canonical_bytes::<T>(body) {
        Ok(read) => Ok(read),
        Err(crate::canonical::CanonicalError::Unrepresentable { reason }) => Err(BodySchemaError::Shape { reason }),
        Err(error) => Err(BodySchemaError::Canonical(error)),
    }
}

/// A body that does not read as its kind's schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodySchemaError {
    /// The decoder's own words ("missing field `text`"), without the
    /// encoder's preamble [`CanonicalError::Unrepresentable`] carries.
    ///
    /// [`CanonicalError::Unrepresentable`]: crate::canonical::CanonicalError::Unrepresentable
    #[error("{reason}")]
    Shape { reason: String },
    #[error("{0}")]
    Canonical(crate::canonical::CanonicalError),
}

mod nonce_bytes {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(nonce: &[u8; 16], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(nonce)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<[u8; 16], D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = [u8; 16];
            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a 16-byte byte string")
            }
            fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<[u8; 16], E> {
                bytes.try_into().map_err(|_| E::invalid_length(bytes.len(), &self))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, bytes: Vec<u8>) -> Result<[u8; 16], E> {
                self.visit_bytes(&bytes)
            }
        }
        deserializer.deserialize_bytes(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ciborium::value::Value;

    fn text(text: &str) -> Value {
        Value::Text(text.into())
    }

    /// A genesis body's entries with one replaced (or removed, for `None`)
    /// or added.
    fn genesis_with(key: &str, value: Option<Value>) -> Vec<u8> {
        let clause = Value::Map(vec![(text("role"), text("walker")), (text("stack"), Value::Bool(true))]);
        let mut entries = vec![
            ("name", text("ada")),
            ("parent", Value::Null),
            ("cognition", text("scripted")),
            ("public_key", Value::Bytes(vec![3; 32])),
            ("role_flow", Value::Array(vec![clause.clone(), clause])),
            ("default_role", text("idle")),
            ("home_space", text("/north")),
            ("nonce", Value::Bytes(vec![9; 16])),
        ];
        entries.retain(|(known, _)| *known != key);
        if let Some(value) = value {
            entries.push((key, value));
        }
        let map = Value::Map(entries.into_iter().map(|(key, value)| (text(key), value)).collect());
        crate::canonical::encode_value(&map).expect("encodes")
    }

    /// The body's entries written in reverse of canonical order.
    fn out_of_order(body: &[u8]) -> Vec<u8> {
        let Value::Map(mut entries) = ciborium::from_reader::<Value, _>(body).expect("decodes") else {
            panic!("a map")
        };
        entries.reverse();
        let mut bytes = Vec::new();
        ciborium::into_writer(&Value::Map(entries), &mut bytes).expect("encodes");
        bytes
    }

    /// The body with its first roleFlow clause's two keys swapped (the same
    /// length, so the rest of the body stays as it was).
    fn clause_out_of_order(body: &[u8]) -> Vec<u8> {
        let entries = |first: (&str, Value), second: (&str, Value)| {
            let mut bytes = Vec::new();
            let map = Value::Map(vec![(text(first.0), first.1), (text(second.0), second.1)]);
            ciborium::into_writer(&map, &mut bytes).expect("encodes");
            bytes
        };
        let canonical = entries(("role", text("walker")), ("stack", Value::Bool(true)));
        let swapped = entries(("stack", Value::Bool(true)), ("role", text("walker")));
        let at = body.windows(canonical.len()).position(|window| window == canonical).expect("the clause");
        let mut bytes = body.to_vec();
        bytes[at..at + swapped.len()].copy_from_slice(&swapped);
        bytes
    }

    /// Read directly or not, a genesis body reads as serde reads it; the
    /// plain forms are read directly.
    #[test]
    fn a_genesis_read_off_the_bytes_is_what_serde_reads() {
        let cases = [
            ("plain", genesis_with("", None), true),
            ("with a parent", genesis_with("parent", Some(Value::Bytes(vec![1; 32]))), true),
            ("an llm", genesis_with("cognition", Some(text("llm"))), true),
            ("a person", genesis_with("cognition", Some(text("human"))), true),
            ("the root", genesis_with("cognition", Some(text("none"))), true),
            ("no clauses", genesis_with("role_flow", Some(Value::Array(Vec::new()))), true),
            ("no parent entry", genesis_with("parent", None), true),
            ("an unknown field", genesis_with("extra", Some(Value::Bool(true))), false),
            ("a short nonce", genesis_with("nonce", Some(Value::Bytes(vec![9; 15]))), false),
            ("an unknown cognition", genesis_with("cognition", Some(text("robot"))), false),
            ("a flow that is a map", genesis_with("role_flow", Some(Value::Map(Vec::new()))), false),
            ("a name in bytes", genesis_with("name", Some(Value::Bytes(b"ada".to_vec()))), false),
            ("no name", genesis_with("name", None), false),
            ("a short parent", genesis_with("parent", Some(Value::Bytes(vec![1; 31]))), false),
            ("keys out of canonical order", out_of_order(&genesis_with("", None)), false),
            ("a clause's keys out of order", clause_out_of_order(&genesis_with("", None)), false),
        ];
        for (case, body, direct) in cases {
            let through_serde = read_known_body::<GenesisBodyFlowSkipped>(&body);
            assert_eq!(GenesisBodyFlowSkipped::read(&body), through_serde, "{case}");
            assert_eq!(read_flow_skipped_directly(&body).is_some(), direct, "{case}");
            if let Some((_, flow)) = read_flow_skipped_directly(&body) {
                // The flow's bytes hold exactly the body's roleFlow entry.
                let Value::Map(entries) = ciborium::from_reader::<Value, _>(body.as_slice()).expect("decodes") else {
                    panic!("{case}: a map")
                };
                let entry = entries.into_iter().find(|(key, _)| key.as_text() == Some("role_flow")).map(|(_, v)| v);
                let mut encoded = Vec::new();
                ciborium::into_writer(&entry.expect("a roleFlow"), &mut encoded).expect("encodes");
                assert_eq!(flow, encoded.as_slice(), "{case}");
            }
            if direct {
                assert!(through_serde.is_ok(), "{case}");
            }
        }
    }
}
