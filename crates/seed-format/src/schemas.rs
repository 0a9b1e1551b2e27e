//! The seam between verification and the layers above the foundation:
//! what a body may be beyond the foundation's own rules. Verification (the
//! store layer) holds every stored body to a [`BodyRules`]; the world layer
//! answers for the kinds it writes by implementing [`HigherSchemas`]. The
//! seam lives here, below both, so that neither has to know the other.

/// What is wrong with a fact's body: the problem a verification's `ProblemKind::Body` names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyProblem {
    /// The bytes do not read as the kind's body (the decoder's own words:
    /// "missing field `call`", "invalid type: integer `5`, expected …").
    #[error("{reason}")]
    Unreadable { reason: String },
    /// The body reads, but is not the bytes this build writes for what it
    /// reads as: a field the body does not have, a field the writer always
    /// writes left out, or a value in a form the writer never gives it.
    #[error("{difference} (it reads, but is not what this build writes)")]
    NotAsWritten { difference: String },
    #[error("name {name:?} is not a being name ({reason}): no command could address the being")]
    BeingName { name: String, reason: String },
    /// A field breaks the rule its writer checks it by.
    #[error("`{field}` {reason}")]
    Field { field: &'static str, reason: String },
    #[error(
        "`{field}` is a small-order (weak) public key: no signature by it verifies strictly, so nothing could follow"
    )]
    WeakKey { field: &'static str },
    #[error("`{field}` is not an Ed25519 public key (no point of the curve has this encoding)")]
    NotAKey { field: &'static str },
}

/// The schemas of the layers above the foundation: the bodies of the kinds
/// they write (`act`, `world`) and their rules on the fields of a genesis
/// the foundation keeps as plain data. The checker asks about every fact
/// whose body passed the foundation's own checks and is within the land's
/// limit; the world layer's `CoreSchemas` answers for this build.
pub trait HigherSchemas: Sync {
    /// What is wrong with `body` as the body of a fact of `kind`; `None`
    /// when nothing is, and for a kind these schemas do not know.
    fn body_problem(&self, kind: &str, body: &[u8]) -> Option<BodyProblem>;
}

/// What verification holds every body to beyond the foundation's rules.
#[derive(Clone, Copy)]
pub struct BodyRules<'a> {
    /// The land's `fact_body_bytes_max`: the land seals no larger body, so a
    /// larger one is a problem wherever it came from.
    pub body_bytes_max: usize,
    pub schemas: &'a dyn HigherSchemas,
}
