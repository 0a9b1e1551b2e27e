//! The typed bodies of the fact kinds the core knows. Field names are the map
//! keys of the canonical CBOR body (documented in `docs/reel-format.md`).

use super::{BeingId, Hash32, PublicKeyBytes};
use serde::{Deserialize, Serialize};

pub const KIND_GENESIS: &str = "genesis";
pub const KIND_ROTATE_KEY: &str = "rotate-key";
pub const KIND_END: &str = "end";
pub const KIND_OPERATOR_TOKEN: &str = "operator-token";
pub const KIND_NOTE: &str = "note";

/// Every kind whose body schema this build knows; `seed verify` decodes each
/// of them strictly. Kinds outside this list are accepted when their body is
/// canonical CBOR (extensions add kinds of their own, `namespace:kind`).
pub const KNOWN_KINDS: &[&str] = &[KIND_GENESIS, KIND_ROTATE_KEY, KIND_END, KIND_OPERATOR_TOKEN, KIND_NOTE];

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
        }
    }
}

/// Seq 0 of every reel. The being's id is the BLAKE3 of these bytes.
pub type GenesisBody = GenesisBodyOf<Vec<ciborium::value::Value>>;

/// A genesis body read for everything but its roleFlow, which is only
/// checked to be a list of CBOR items (as [`GenesisBody`] would take it),
/// not built: for readers that need the name or the key.
pub type GenesisBodyFlowSkipped = GenesisBodyOf<Vec<serde::de::IgnoredAny>>;

/// A genesis body, its roleFlow read as `Flow`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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

/// Replaces the signing key; signed by the key it replaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RotateKeyBody {
    pub new_public_key: PublicKeyBytes,
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
pub fn check_known_body(kind: &str, body: &[u8]) -> Result<(), String> {
    fn read<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<(), String> {
        read_known_body::<T>(body).map(drop)
    }
    match kind {
        KIND_GENESIS => read::<GenesisBody>(body),
        KIND_ROTATE_KEY => read::<RotateKeyBody>(body),
        KIND_END => read::<EndBody>(body),
        KIND_OPERATOR_TOKEN => read::<OperatorTokenBody>(body),
        KIND_NOTE => read::<NoteBody>(body),
        _ => Ok(()),
    }
}

/// A known kind's body read as `T`, or what [`check_known_body`] says is
/// wrong with it (for a caller that needs the body as well as the check).
pub fn read_known_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    match crate::canonical::from_canonical_bytes::<T>(body) {
        Ok(read) => Ok(read),
        // The decoder's own words ("missing field `text`"), without the
        // encoder's preamble the variant's message carries.
        Err(crate::canonical::CanonicalError::Unrepresentable { reason }) => Err(reason),
        Err(error) => Err(error.to_string()),
    }
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
