//! Canopy's edge (docs/canopy.md): how a land speaks to other lands over
//! HTTP. A land is known by its id (its reality root's being id) and proven
//! by its key history (the root's genesis and every rotation, each signed
//! by the key before it); every request between lands is signed by the
//! sender's current key over `seed_format::canopy::CanopyRequest`.
//!
//! - [`client`]: what a land sends: the identity it fetches and proves,
//!   and signed requests to a peer.
//! - [`guard`]: what a receiving land remembers to refuse a replayed
//!   request, a flood from one peer and too many first contacts (memory
//!   only, bounded; nothing of it reaches a fact).
//!
//! The routes a land serves and the peers page are the portal's
//! (`portal::canopy_routes`, `portal::peers_page`).

pub mod client;
pub mod guard;

use crate::fact::BeingId;
use seed_format::canopy::{KeyHistoryError, ProvenKeys};

/// Where a land answers who it is (unsigned: anyone may read and verify it).
pub const CANOPY_IDENTITY_PATH: &str = "/canopy/v1/land";
/// Where a land greets another (signed): the handshake that makes a peer.
pub const CANOPY_HELLO_PATH: &str = "/canopy/v1/hello";
/// Where a land's peers send their heartbeats (signed).
pub const CANOPY_HEARTBEAT_PATH: &str = "/canopy/v1/heartbeat";
/// Where a land's peers deliver summons for its beings (signed).
pub const CANOPY_SUMMONS_PATH: &str = "/canopy/v1/summons";
/// Where a peer that follows this land asks for its facts from a land seq.
pub const CANOPY_FACTS_PATH: &str = "/canopy/v1/facts";
/// Where a land shows another a fork of one of the other's reels.
pub const CANOPY_FORK_PATH: &str = "/canopy/v1/fork";
/// Where a land asks another for the key a being of its will move there with.
pub const CANOPY_MOVE_KEY_PATH: &str = "/canopy/v1/moves/key";
/// Where a land sends a moving being's reel, a batch at a time.
pub const CANOPY_MOVE_FACTS_PATH: &str = "/canopy/v1/moves/facts";

/// The sending land's id, as hex.
pub const HEADER_FROM: &str = "seed-land-from";
/// The land the request is for, as hex.
pub const HEADER_TO: &str = "seed-land-to";
/// The sender's wall clock when it signed, in milliseconds since the epoch.
pub const HEADER_TIMESTAMP_MS: &str = "seed-timestamp-ms";
/// Sixteen random bytes as hex.
pub const HEADER_NONCE: &str = "seed-nonce";
/// The Ed25519 signature over the request's signed bytes, as hex.
pub const HEADER_SIGNATURE: &str = "seed-signature";
/// The answering land's signature over its answer (`CanopyAnswer`), as hex.
pub const HEADER_ANSWER_SIGNATURE: &str = "seed-answer-signature";

/// The most bytes of a land's identity document a land reads: a key
/// history of a few thousand rotations.
pub const CANOPY_IDENTITY_BYTES_MAX: usize = 4 * 1024 * 1024;

/// A land as another land proved it: its id, the URL it was reached at,
/// and its keys as its history proves them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandIdentity {
    pub land: BeingId,
    pub url: String,
    pub keys: ProvenKeys,
    /// The land's operator, as it says (a mirror of the land names it).
    pub operator: Option<BeingId>,
}

/// Why a call to another land did not give an answer this land believes.
#[derive(Debug, thiserror::Error)]
pub enum PeerCallError {
    #[error("{url} did not answer: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url} answered {status}: {message}")]
    Refused { url: String, status: u16, message: String },
    #[error("{url} answered with more than {max} bytes")]
    TooLarge { url: String, max: usize },
    #[error("{url} answered with something that is not a land's answer: {reason}")]
    Malformed { url: String, reason: String },
    #[error("{url} is not proven to be land {land}: {source}")]
    Unproven {
        url: String,
        land: BeingId,
        #[source]
        source: Box<KeyHistoryError>,
    },
    #[error(
        "{url} answered without the signature of the land's key it is known by (a rotated key, or someone on the way)"
    )]
    UnsignedAnswer { url: String },
    #[error("no OS randomness for a nonce: {reason}")]
    Random { reason: String },
    #[error("the request cannot be signed: {reason}")]
    Signing { reason: String },
}

impl PeerCallError {
    /// What kind of failure it was, in words of this land's own (never the
    /// other side's text: a stranger learns nothing of what a URL answered).
    pub fn kind(&self) -> &'static str {
        match self {
            PeerCallError::Unreachable { .. } => "it did not answer",
            PeerCallError::Refused { .. } => "it refused",
            PeerCallError::TooLarge { .. } => "its answer was too large",
            PeerCallError::Malformed { .. } => "its answer is not a land's identity",
            PeerCallError::Unproven { .. } => "its key history does not prove its key",
            PeerCallError::UnsignedAnswer { .. } => "its answer is not signed by its key",
            PeerCallError::Random { .. } | PeerCallError::Signing { .. } => "this land could not ask",
        }
    }
}

/// The wall clock in milliseconds since the epoch: requests between lands
/// carry it (never a fact: it is the edge's, for the replay window only).
pub fn wall_clock_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}
