//! Roles: definitions and their registry, the `when` language, the roleFlow
//! walk and the stack composer. Everything here is a pure function of its
//! inputs (no clock, no randomness, no I/O but reading role files at load).
//! The format and semantics are documented in docs/roles.md.

pub mod approval;
pub mod compose;
pub mod context;
pub mod definition;
pub mod flow;
pub mod resolve;
pub mod when;

pub use compose::{compose, ComposedRole};
pub use context::OpenContext;
pub use definition::{CanEntry, Orientation, RecallSpec, Role, RoleLoadError, RoleRegistry};
pub use flow::{BoundFlow, ClauseOutcome, FlowError, PrimarySource, RoleFlow, Walk};
