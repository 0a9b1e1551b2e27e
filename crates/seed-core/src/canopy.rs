//! Canopy's part of the world (docs/canopy.md): the lands this land peers
//! with, as its root's `world` facts record them. A peer is added with the
//! key its history proved, its key changes only to a key that history
//! proves again (each rotation signed by the key before it), its status
//! changes and its heartbeats are counted and recorded, and it may be
//! removed. Folding holds no rules and cannot fail; what to record is the
//! edge's decision (`seed-portal`'s canopy module, `seed peer`).
//!
//! What this module deliberately does not know: the network, wall-clock
//! times, nonces and round-trip times. None of them reaches a fact, so the
//! folded state is the same on every replay.

use crate::fact::{BeingId, FactId, PublicKeyBytes};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Heartbeat records kept per peer in the world (older ones stay on the
/// reel, in the facts that recorded them).
pub const CANOPY_HEARTBEAT_RECORDS_KEPT: usize = 24;
/// The longest peer URL a land records, in bytes.
pub const CANOPY_PEER_URL_BYTES_MAX: usize = 2_048;
/// The longest reason recorded with a peer's status, in bytes.
pub const CANOPY_REASON_BYTES_MAX: usize = 1_024;

/// First contacts a land accepts in an hour, unless
/// `canopy_first_contacts_per_hour_max` says otherwise: none, so a land
/// speaks only with the lands its operator added.
pub const CANOPY_FIRST_CONTACTS_PER_HOUR_MAX: u64 = 0;
/// Time between two heartbeats to a peer, unless `canopy_heartbeat_ms` says otherwise.
pub const CANOPY_HEARTBEAT_MS: u64 = 30_000;
/// Heartbeats counted before they are recorded, unless
/// `canopy_heartbeats_per_record_max` says otherwise (a status change is
/// recorded at once).
pub const CANOPY_HEARTBEATS_PER_RECORD_MAX: u64 = 120;
/// Time a peer has to answer, unless `canopy_peer_timeout_ms` says otherwise.
pub const CANOPY_PEER_TIMEOUT_MS: u64 = 10_000;
/// Peers a land records, unless `canopy_peers_max` says otherwise.
pub const CANOPY_PEERS_MAX: u64 = 256;
/// Bytes of one request's body from another land, unless
/// `canopy_request_bytes_max` says otherwise.
pub const CANOPY_REQUEST_BYTES_MAX: u64 = 1_048_576;
/// Requests accepted from one land in a minute, unless
/// `canopy_requests_per_peer_per_minute_max` says otherwise.
pub const CANOPY_REQUESTS_PER_PEER_PER_MINUTE_MAX: u64 = 600;

/// Bytes of one delivered summons's sealed fact, unless
/// `canopy_summons_bytes_max` says otherwise.
pub const CANOPY_SUMMONS_BYTES_MAX: u64 = 65_536;
/// Summons one land may deliver in a minute, unless
/// `canopy_summons_per_peer_per_minute_max` says otherwise.
pub const CANOPY_SUMMONS_PER_PEER_PER_MINUTE_MAX: u64 = 600;
/// How long a summons to another land is tried before it is given up,
/// unless `canopy_undelivered_retention_ms` says otherwise: 30 days.
pub const CANOPY_UNDELIVERED_RETENTION_MS: u64 = 2_592_000_000;

/// The land's Canopy limits as the world holds them now (configuration keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CanopyLimits {
    pub first_contacts_per_hour_max: u64,
    pub heartbeat_ms: u64,
    pub heartbeats_per_record_max: u64,
    pub peer_timeout_ms: u64,
    pub peers_max: u64,
    pub request_bytes_max: u64,
    pub requests_per_peer_per_minute_max: u64,
    pub summons_bytes_max: u64,
    pub summons_per_peer_per_minute_max: u64,
    pub undelivered_retention_ms: u64,
}

impl CanopyLimits {
    pub fn in_world(world: &crate::world::World) -> CanopyLimits {
        CanopyLimits {
            first_contacts_per_hour_max: world
                .config_u64("canopy_first_contacts_per_hour_max", CANOPY_FIRST_CONTACTS_PER_HOUR_MAX),
            heartbeat_ms: world.config_u64("canopy_heartbeat_ms", CANOPY_HEARTBEAT_MS),
            heartbeats_per_record_max: world
                .config_u64("canopy_heartbeats_per_record_max", CANOPY_HEARTBEATS_PER_RECORD_MAX),
            peer_timeout_ms: world.config_u64("canopy_peer_timeout_ms", CANOPY_PEER_TIMEOUT_MS),
            peers_max: world.config_u64("canopy_peers_max", CANOPY_PEERS_MAX),
            request_bytes_max: world.config_u64("canopy_request_bytes_max", CANOPY_REQUEST_BYTES_MAX),
            requests_per_peer_per_minute_max: world
                .config_u64("canopy_requests_per_peer_per_minute_max", CANOPY_REQUESTS_PER_PEER_PER_MINUTE_MAX),
            summons_bytes_max: world.config_u64("canopy_summons_bytes_max", CANOPY_SUMMONS_BYTES_MAX),
            summons_per_peer_per_minute_max: world
                .config_u64("canopy_summons_per_peer_per_minute_max", CANOPY_SUMMONS_PER_PEER_PER_MINUTE_MAX),
            undelivered_retention_ms: world
                .config_u64("canopy_undelivered_retention_ms", CANOPY_UNDELIVERED_RETENTION_MS),
        }
    }
}

/// How a peer came to be known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PeerOrigin {
    /// The operator added it (`seed peer add`, the peers page).
    Added,
    /// It said hello first and the land accepts first contact.
    FirstContact,
}

impl PeerOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            PeerOrigin::Added => "added",
            PeerOrigin::FirstContact => "first-contact",
        }
    }
}

/// What the land last found of a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PeerStatus {
    /// Recorded, not yet greeted (added while the land was stopped).
    New,
    /// It answered the last signed request.
    Up,
    /// It did not answer, or answered with a refusal.
    Down,
}

impl PeerStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PeerStatus::New => "new",
            PeerStatus::Up => "up",
            PeerStatus::Down => "down",
        }
    }
}

/// A peer as it is added: who, where, and the key its history proved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerAdded {
    pub land: BeingId,
    pub url: String,
    pub key: PublicKeyBytes,
    /// The seq on the peer's root reel of the fact that set `key`.
    pub key_seq: u64,
    pub origin: PeerOrigin,
}

/// A peer's heartbeats since the last record, and what they found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerHeartbeats {
    pub land: BeingId,
    pub status: PeerStatus,
    pub answered: u64,
    pub missed: u64,
    /// Why the last one missed (empty when it was answered).
    pub reason: String,
}

/// One heartbeat record as the world keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatRecord {
    pub land_seq: u64,
    pub status: PeerStatus,
    pub answered: u64,
    pub missed: u64,
    pub reason: String,
}

/// One peer as the world holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peer {
    pub url: String,
    pub key: PublicKeyBytes,
    pub key_seq: u64,
    pub origin: PeerOrigin,
    pub status: PeerStatus,
    /// The land seq of the fact that added it.
    pub added_at: u64,
    /// The land seq of the fact that set its status.
    pub status_since: u64,
    pub answered: u64,
    pub missed: u64,
    /// The newest records last, at most [`CANOPY_HEARTBEAT_RECORDS_KEPT`].
    pub heartbeats: Vec<HeartbeatRecord>,
    /// This land follows the peer's facts into a mirror (`seed peer follow`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub following: bool,
    /// The peer's beings whose reels alone this land follows, each into a
    /// mirror of its own (`seed peer follow PEER --being ID`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub following_beings: std::collections::BTreeSet<BeingId>,
}

/// A fork of one of this land's reels, shown by another land: the being,
/// the seq, the fact this land holds there and the one the other land
/// holds (its envelope kept whole, as the proof), both signed by the key
/// the being had at that seq.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkShown {
    pub being: BeingId,
    pub seq: u64,
    pub held: FactId,
    pub shown: FactId,
    /// The land that showed it.
    pub by: BeingId,
    #[serde(with = "serde_bytes")]
    pub envelope: Vec<u8>,
}

/// Forks shown by other lands the world keeps (each stays on the reel).
pub const CANOPY_FORKS_SHOWN_KEPT: usize = 50;

/// Inbound refusals the world keeps (older ones stay on the reel).
pub const CANOPY_INBOUND_REFUSALS_KEPT: usize = 50;

/// A being on another land, as a summons names it: `@name@LAND`, LAND the
/// land's id in hex (a sealed summons always holds the whole id; a being
/// may write 8 or more of its first digits, resolved against the peers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteAddress {
    pub name: String,
    pub land: BeingId,
}

impl RemoteAddress {
    /// The address as a sealed summons holds it: `@name@<64 hex digits>`.
    pub fn to_target(&self) -> String {
        format!("@{}@{}", self.name, self.land.to_hex())
    }

    /// The address a sealed summons holds, if its target is one (the fold
    /// reads it so: no peer is looked up, decide did that).
    pub fn of_sealed_target(target: &str) -> Option<RemoteAddress> {
        let (name, land) = target.trim_start_matches('@').split_once('@')?;
        Some(RemoteAddress { name: name.to_string(), land: BeingId::from_hex(land)? })
    }
}

/// Why a summons's remote target is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteTargetError {
    #[error("{target:?}: the being's name {problem}")]
    BadName { target: String, problem: String },
    #[error("{target:?}: name the land by 8 or more hex digits of its id")]
    BadLand { target: String },
    #[error("{target:?}: no peer of this land has an id starting {land}")]
    NoPeer { target: String, land: String },
    #[error("{target:?}: more than one peer's id starts {land}: give more digits")]
    AmbiguousLand { target: String, land: String },
}

/// The summons target `target` as an address on another land, resolved
/// against the peers; `None` when it names a being of this land (one '@').
pub fn remote_target(state: &CanopyState, target: &str) -> Option<Result<RemoteAddress, RemoteTargetError>> {
    let (name, land) = target.trim_start_matches('@').split_once('@')?;
    let resolved = (|| {
        if let Some(problem) = crate::names::being_name_problem(name) {
            return Err(RemoteTargetError::BadName { target: target.to_string(), problem });
        }
        let prefix = land.to_ascii_lowercase();
        if prefix.len() < 8 || prefix.len() > 64 || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(RemoteTargetError::BadLand { target: target.to_string() });
        }
        let mut found = state.peers.keys().filter(|peer| peer.to_hex().starts_with(&prefix));
        match (found.next(), found.next()) {
            (Some(land), None) => Ok(RemoteAddress { name: name.to_string(), land: *land }),
            (Some(_), Some(_)) => Err(RemoteTargetError::AmbiguousLand { target: target.to_string(), land: prefix }),
            (None, _) => Err(RemoteTargetError::NoPeer { target: target.to_string(), land: prefix }),
        }
    })();
    Some(resolved)
}

/// Where a summons to `target`, a being of this land (`@name`), goes when
/// that being moved to another land: `@name@LAND` on the land its `move`
/// named. `None` for any other target.
pub fn forwarding_address(world: &crate::world::World, target: &str) -> Option<RemoteAddress> {
    let name = target.strip_prefix('@')?;
    let row = world.being_named(name)?;
    let moved = world.canopy.moved_away.get(&row.id)?;
    Some(RemoteAddress { name: name.to_string(), land: moved.land })
}

/// Whether a being whose canSummon is `can_summon` may summon `address`:
/// an entry `@NAME@LAND` names beings of other lands, NAME a glob of the
/// being's name and LAND a glob of the land's id in hex, or its first digits
/// (`@*@*`: anyone on any peer; `@ada@46ed8644`: @ada on that land).
pub fn may_summon_remote(can_summon: &[String], address: &RemoteAddress) -> bool {
    let land = address.land.to_hex();
    can_summon.iter().any(|entry| {
        let Some((name_glob, land_glob)) = entry.trim_start_matches('@').split_once('@') else { return false };
        let land_matches = if land_glob.contains('*') {
            crate::roles::resolve::glob_matches(land_glob, &land)
        } else {
            !land_glob.is_empty() && land.starts_with(&land_glob.to_ascii_lowercase())
        };
        land_matches && crate::roles::resolve::glob_matches(name_glob, &address.name)
    })
}

/// A summons sealed here for a being on another land, not yet delivered
/// (nor given up): the outbox is the land's summons acts to other lands
/// minus the records of their delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outgoing {
    pub fact: FactId,
    pub being: BeingId,
    pub seq: u64,
    pub to: RemoteAddress,
    pub stored_time_ms: u64,
    /// The land it is delivered to instead of `to.land`: where its target
    /// moved, as that land answered (`summons-forwarded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<BeingId>,
}

impl Outgoing {
    /// The land it is delivered to.
    pub fn delivered_to(&self) -> BeingId {
        self.via.unwrap_or(self.to.land)
    }
}

/// A summons from a being of another land, as the receiving land seals it:
/// which land delivered it, the sender's being, name and fact (its seq on
/// the sender's reel), the local being it is for and what it says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arrival {
    pub land: BeingId,
    pub being: BeingId,
    pub name: String,
    pub seq: u64,
    pub fact: FactId,
    pub target: BeingId,
    pub content: String,
    pub in_reply_to: Option<FactId>,
    pub caller_role: Option<String>,
    /// The newest key of the sender's the delivered history proved, and the
    /// seq of the fact that set it.
    pub key: PublicKeyBytes,
    pub key_seq: u64,
}

/// A summons from another land this land refused, and why (the being,
/// seq and fact when the envelope said them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboundRefusal {
    pub land: BeingId,
    pub being: Option<BeingId>,
    pub seq: Option<u64>,
    pub fact: Option<FactId>,
    pub reason: String,
}

/// Facts taken from one remote being that a land remembers by seq, to
/// tell a summons delivered again (its record lost on the sending land)
/// from one delivered out of order: at least the deliveries one look at
/// the outbox makes (`CANOPY_DELIVERIES_PER_LOOK_MAX` in the portal).
pub const CANOPY_ARRIVALS_REMEMBERED_PER_BEING: usize = 256;

/// The facts of a remote being this land took: from which land, and the
/// latest ones (seq, fact id, the land seq of the arrival: the sender's
/// receipt), oldest first, the last one the latest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastArrival {
    pub land: BeingId,
    pub taken: Vec<(u64, FactId, u64)>,
    /// The newest key of the being's a delivered history proved, and the
    /// seq that set it: a later history must still hold it.
    pub key: PublicKeyBytes,
    pub key_seq: u64,
}

impl LastArrival {
    /// The latest fact taken: (seq, fact id, receipt).
    pub fn latest(&self) -> Option<(u64, FactId, u64)> {
        self.taken.last().copied()
    }
}

/// A being on its way here from another land (`seed move`): the land
/// recorded that the facts of its reel up to `through_seq` (its `move`
/// fact), which follow this record in the land log, were taken from
/// `from_land`. Those facts are its history, not this land's: the world
/// folds them only into the being's own row and memory, and replay does
/// not run their moments again (they ran against the other land's world).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BeingArriving {
    pub being: BeingId,
    pub name: String,
    pub from_land: BeingId,
    /// The seq of its `move` fact: the last fact taken from the other land.
    pub through_seq: u64,
    /// The id of that fact.
    pub head: FactId,
}

/// Where a being that left this land went (its `move` fact): summons for
/// it are sent there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovedAway {
    pub land: BeingId,
    pub url: String,
    /// The seq of its `move` fact.
    pub seq: u64,
}

/// The peers, by land id, and the summons between this land and them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanopyState {
    pub peers: BTreeMap<BeingId, Peer>,
    /// Summons to other lands not yet delivered, by land seq (send order).
    pub outbox: BTreeMap<u64, Outgoing>,
    /// Per remote being, the last of its facts this land took.
    pub arrived: BTreeMap<BeingId, LastArrival>,
    /// The latest inbound refusals, newest last.
    pub refused: Vec<(u64, InboundRefusal)>,
    /// The latest forks of this land's reels other lands showed, by the
    /// land seq that recorded each, newest last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forks_shown: Vec<(u64, ForkShown)>,
    /// Beings whose reels are being taken from another land, until their
    /// `moved-in` fact.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arriving: BTreeMap<BeingId, BeingArriving>,
    /// Beings that moved here, and the land each came from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub moved_in: BTreeMap<BeingId, BeingId>,
    /// Beings that left this land, and where each went.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub moved_away: BTreeMap<BeingId, MovedAway>,
}

impl CanopyState {
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
            && self.outbox.is_empty()
            && self.arrived.is_empty()
            && self.refused.is_empty()
            && self.forks_shown.is_empty()
            && self.arriving.is_empty()
            && self.moved_in.is_empty()
            && self.moved_away.is_empty()
    }

    /// Whether the fact at `seq` of `being`'s reel was taken from the land
    /// it moved here from (its history there, folded as such).
    pub fn is_arriving_history(&self, being: &BeingId, seq: u64) -> bool {
        self.arriving.get(being).is_some_and(|arriving| seq <= arriving.through_seq)
    }

    /// Whether `land` is a peer this land's operator added (not one that
    /// came by first contact): only such a land may follow this land or
    /// move a being here.
    pub fn added_by_operator(&self, land: &BeingId) -> bool {
        self.peers.get(land).is_some_and(|peer| peer.origin == PeerOrigin::Added)
    }

    /// Folds a summons act to another land: it waits in the outbox.
    pub fn fold_sent(&mut self, land_seq: u64, outgoing: Outgoing) {
        self.outbox.insert(land_seq, outgoing);
    }

    /// Folds a summons sent on to the land its target moved to: it waits
    /// to be delivered there.
    pub fn fold_forwarded(&mut self, fact: &FactId, to: BeingId) {
        for outgoing in self.outbox.values_mut().filter(|outgoing| outgoing.fact == *fact) {
            outgoing.via = Some(to);
        }
    }

    /// Folds the end of a summons's wait: delivered, or given up.
    pub fn fold_settled(&mut self, fact: &FactId) {
        self.outbox.retain(|_, outgoing| outgoing.fact != *fact);
    }

    /// Folds an arrival's bookkeeping (the inbox is the world's).
    pub fn fold_arrived(&mut self, land_seq: u64, arrival: &Arrival) {
        let last = self.arrived.entry(arrival.being).or_insert(LastArrival {
            land: arrival.land,
            taken: Vec::new(),
            key: arrival.key,
            key_seq: arrival.key_seq,
        });
        last.land = arrival.land;
        if arrival.key_seq >= last.key_seq {
            (last.key, last.key_seq) = (arrival.key, arrival.key_seq);
        }
        last.taken.push((arrival.seq, arrival.fact, land_seq));
        let over = last.taken.len().saturating_sub(CANOPY_ARRIVALS_REMEMBERED_PER_BEING);
        last.taken.drain(..over);
    }

    pub fn fold_refused(&mut self, land_seq: u64, refusal: &InboundRefusal) {
        self.refused.push((land_seq, refusal.clone()));
        let over = self.refused.len().saturating_sub(CANOPY_INBOUND_REFUSALS_KEPT);
        self.refused.drain(..over);
    }

    /// Folds a peer added (or added again: its record starts over).
    pub fn fold_added(&mut self, land_seq: u64, added: &PeerAdded) {
        self.peers.insert(
            added.land,
            Peer {
                url: added.url.clone(),
                key: added.key,
                key_seq: added.key_seq,
                origin: added.origin,
                status: PeerStatus::New,
                added_at: land_seq,
                status_since: land_seq,
                answered: 0,
                missed: 0,
                heartbeats: Vec::new(),
                following: false,
                following_beings: Default::default(),
            },
        );
    }

    /// Folds a peer's key change (proven by the edge before it was sealed).
    /// A key older than the one recorded changes nothing: keys only go
    /// forward (two lookups that overlapped cannot bring back a rotated-out key).
    pub fn fold_key(&mut self, land: &BeingId, key: PublicKeyBytes, key_seq: u64) {
        if let Some(peer) = self.peers.get_mut(land).filter(|peer| key_seq > peer.key_seq) {
            peer.key = key;
            peer.key_seq = key_seq;
        }
    }

    /// Folds a peer's heartbeats since the last record.
    pub fn fold_heartbeats(&mut self, land_seq: u64, beats: &PeerHeartbeats) {
        let Some(peer) = self.peers.get_mut(&beats.land) else { return };
        if peer.status != beats.status {
            peer.status = beats.status;
            peer.status_since = land_seq;
        }
        peer.answered = peer.answered.saturating_add(beats.answered);
        peer.missed = peer.missed.saturating_add(beats.missed);
        peer.heartbeats.push(HeartbeatRecord {
            land_seq,
            status: beats.status,
            answered: beats.answered,
            missed: beats.missed,
            reason: beats.reason.clone(),
        });
        let over = peer.heartbeats.len().saturating_sub(CANOPY_HEARTBEAT_RECORDS_KEPT);
        peer.heartbeats.drain(..over);
    }

    pub fn fold_removed(&mut self, land: &BeingId) {
        self.peers.remove(land);
    }

    pub fn fold_followed(&mut self, land: &BeingId, following: bool, being: Option<&BeingId>) {
        let Some(peer) = self.peers.get_mut(land) else { return };
        match (being, following) {
            (None, _) => peer.following = following,
            (Some(being), true) => {
                peer.following_beings.insert(*being);
            }
            (Some(being), false) => {
                peer.following_beings.remove(being);
            }
        }
    }

    /// Folds a fork another land showed (one record per fork: a second
    /// showing of the same pair changes nothing).
    pub fn fold_fork_shown(&mut self, land_seq: u64, fork: &ForkShown) {
        if self.forks_shown.iter().any(|(_, kept)| kept.held == fork.held && kept.shown == fork.shown) {
            return;
        }
        self.forks_shown.push((land_seq, fork.clone()));
        let over = self.forks_shown.len().saturating_sub(CANOPY_FORKS_SHOWN_KEPT);
        self.forks_shown.drain(..over);
    }

    /// The peer whose URL is `url`, if one is.
    pub fn peer_at(&self, url: &str) -> Option<(&BeingId, &Peer)> {
        self.peers.iter().find(|(_, peer)| peer.url == url)
    }
}

/// Why a land is not added as a peer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddPeerRefusal {
    #[error("{url} is this land itself (land {land})")]
    Itself { url: String, land: BeingId },
    #[error(
        "land {land} at {url} signs with this land's own key: two lands simulated from one seed share their keys; \
         rotate this land's root key (`seed rotate-key @reality`) before it peers"
    )]
    SameKey { url: String, land: BeingId },
    #[error("land {land} is a peer already, at {url}")]
    AlreadyPeer { land: BeingId, url: String },
    #[error("{url} is land {recorded}'s URL here, not land {land}'s: remove that peer first")]
    UrlTaken { url: String, recorded: BeingId, land: BeingId },
    #[error("this land has {most} peers, its most (canopy_peers_max)")]
    Full { most: u64 },
}

/// Decides whether the land `this` (signing with `this_key`) adds the land
/// its history proved, reached at `url`: what is recorded, or why not.
pub fn decide_added(
    state: &CanopyState,
    this: BeingId,
    this_key: &PublicKeyBytes,
    proven: &seed_format::canopy::ProvenKeys,
    url: &str,
    origin: PeerOrigin,
    peers_max: u64,
) -> Result<PeerAdded, AddPeerRefusal> {
    let land = proven.land;
    let (key, key_seq) = proven.current();
    if land == this {
        return Err(AddPeerRefusal::Itself { url: url.to_string(), land });
    }
    if proven.held(&this_key.0) {
        return Err(AddPeerRefusal::SameKey { url: url.to_string(), land });
    }
    if let Some(peer) = state.peers.get(&land) {
        return Err(AddPeerRefusal::AlreadyPeer { land, url: peer.url.clone() });
    }
    if let Some((recorded, _)) = state.peer_at(url) {
        return Err(AddPeerRefusal::UrlTaken { url: url.to_string(), recorded: *recorded, land });
    }
    if state.peers.len() as u64 >= peers_max {
        return Err(AddPeerRefusal::Full { most: peers_max });
    }
    Ok(PeerAdded { land, url: url.to_string(), key: PublicKeyBytes(key), key_seq, origin })
}

/// Why a peer cannot be removed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemovePeerRefusal {
    #[error("no peer is {named:?}: name a peer by its URL or its land id (8 or more hex digits)")]
    NoSuchPeer { named: String },
    #[error("{named:?} names more than one peer: give more of the land id")]
    Ambiguous { named: String },
}

/// The peer `named` (its URL, or its land id or a prefix of 8 or more hex digits).
pub fn peer_named(state: &CanopyState, named: &str) -> Result<BeingId, RemovePeerRefusal> {
    let named = named.trim();
    if let Ok(url) = normalize_peer_url(named) {
        if let Some((land, _)) = state.peer_at(&url) {
            return Ok(*land);
        }
    }
    let prefix = named.to_ascii_lowercase();
    if prefix.len() >= 8 && prefix.chars().all(|c| c.is_ascii_hexdigit()) {
        let mut found = state.peers.keys().filter(|land| land.to_hex().starts_with(&prefix));
        return match (found.next(), found.next()) {
            (Some(land), None) => Ok(*land),
            (Some(_), Some(_)) => Err(RemovePeerRefusal::Ambiguous { named: named.to_string() }),
            (None, _) => Err(RemovePeerRefusal::NoSuchPeer { named: named.to_string() }),
        };
    }
    Err(RemovePeerRefusal::NoSuchPeer { named: named.to_string() })
}

/// A peer as the CLI and the API show it: ids and keys as hex, camelCase.
pub fn peer_json(land: &BeingId, peer: &Peer) -> serde_json::Value {
    serde_json::json!({
        "land": land.to_hex(),
        "url": peer.url,
        "key": peer.key.to_hex(),
        "keySeq": peer.key_seq,
        "origin": peer.origin.as_str(),
        "status": peer.status.as_str(),
        "addedAt": peer.added_at,
        "statusSince": peer.status_since,
        "answered": peer.answered,
        "missed": peer.missed,
        "following": peer.following,
        "followingBeings": peer.following_beings.iter().map(BeingId::to_hex).collect::<Vec<_>>(),
        "heartbeats": peer.heartbeats.iter().map(|record| serde_json::json!({
            "landSeq": record.land_seq,
            "status": record.status.as_str(),
            "answered": record.answered,
            "missed": record.missed,
            "reason": if record.reason.is_empty() { serde_json::Value::Null } else { record.reason.clone().into() },
        })).collect::<Vec<_>>(),
    })
}

/// What a land does with a summons another land delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArrivalVerdict {
    /// Taken: sealed as an arrival, the target woken as for a local summons.
    Arrive(Arrival),
    /// Taken before (the same fact, or one before the last taken from its
    /// being): answered again with the receipt, nothing sealed.
    Duplicate { receipt: Option<u64> },
    /// Refused for good, sealed with its reason.
    Refuse(InboundRefusal),
    /// Refused, sealed with its reason, because its target moved to `land`:
    /// the sender may send it on there.
    Moved { refusal: InboundRefusal, land: BeingId },
    /// Not now (the target's inbox is full): the sender tries again later.
    Wait { reason: String },
}

/// What the summons decided before in the same delivery added to the
/// world as the land holds it: facts taken per remote being and summons
/// added per inbox (a delivery carries several summons, sealed together).
#[derive(Debug, Clone, Default)]
pub struct ArrivalsSoFar {
    taken: BTreeMap<BeingId, LastArrival>,
    added: BTreeMap<BeingId, usize>,
}

impl ArrivalsSoFar {
    /// The facts taken from `being`, this delivery's included.
    fn last<'a>(&'a self, world: &'a crate::world::World, being: &BeingId) -> Option<&'a LastArrival> {
        self.taken.get(being).or_else(|| world.canopy.arrived.get(being))
    }

    /// Counts `arrival` (its receipt is the land seq the delivery will be
    /// sealed at, not known yet: a duplicate of it in the same delivery
    /// answers without one).
    pub fn add(&mut self, world: &crate::world::World, arrival: &Arrival) {
        let mut last = self.last(world, &arrival.being).cloned().unwrap_or(LastArrival {
            land: arrival.land,
            taken: Vec::new(),
            key: arrival.key,
            key_seq: arrival.key_seq,
        });
        last.taken.push((arrival.seq, arrival.fact, u64::MAX));
        if arrival.key_seq >= last.key_seq {
            (last.key, last.key_seq) = (arrival.key, arrival.key_seq);
        }
        self.taken.insert(arrival.being, last);
        *self.added.entry(arrival.target).or_default() += 1;
    }
}

/// Decides what to do with `envelope`, the sealed fact land `from` says is
/// a summons of one of its beings, with that being's key history
/// (`key_history`: its genesis and rotations). The fact is believed only as
/// far as this land can check it: its being's id is its genesis's BLAKE3,
/// its signature is the key its history proves at its seq, it is an
/// applied summons to a being of this land, it comes after the last fact
/// taken from its being (the same seq with another fact is a fork), and its
/// being's facts came from no other land before.
pub fn decide_arrival(
    world: &crate::world::World,
    so_far: &ArrivalsSoFar,
    this: BeingId,
    from: BeingId,
    envelope: &[u8],
    key_history: &[Vec<u8>],
    summons_bytes_max: u64,
) -> ArrivalVerdict {
    use crate::fact::body::GenesisBodyFlowSkipped;
    use crate::world::body::KIND_ACT;
    use crate::world::{ActBody, VerbCall};
    let refusal = |being: Option<BeingId>, seq: Option<u64>, fact: Option<FactId>, reason: String| InboundRefusal {
        land: from,
        being,
        seq,
        fact,
        reason: bounded_reason(&reason),
    };
    let refuse = |being: Option<BeingId>, seq: Option<u64>, fact: Option<FactId>, reason: String| {
        ArrivalVerdict::Refuse(refusal(being, seq, fact, reason))
    };
    if envelope.len() as u64 > summons_bytes_max {
        let reason =
            format!("the summons is {} bytes, over canopy_summons_bytes_max = {summons_bytes_max}", envelope.len());
        return refuse(None, None, None, reason);
    }
    let fact = match crate::fact::Fact::decode_envelope(envelope) {
        Ok(fact) => fact,
        Err(error) => return refuse(None, None, None, format!("the summons's fact does not decode: {error}")),
    };
    let (being, seq, id) = (fact.header.being, fact.header.seq, fact.id());
    let refuse = |reason: String| refuse(Some(being), Some(seq), Some(id), reason);
    let proven = match seed_format::canopy::verify_key_history(being, key_history) {
        Ok(proven) => proven,
        Err(error) => return refuse(format!("the sender's key history does not prove its key: {error}")),
    };
    // A being that moved (`seed move`) is delivered by the land its last
    // move before this fact named, as its own signed history says; one that
    // never moved, by the land that delivered its facts before.
    match proven.land_at(seq) {
        Some(lives_on) if lives_on != from => {
            return refuse(format!(
                "being {being} moved to land {lives_on} before seq {seq}: land {from} no longer speaks for it"
            ));
        }
        Some(_) => {}
        None => {
            if let Some(last) = so_far.last(world, &being) {
                if last.land != from {
                    return refuse(format!(
                        "being {being}'s facts came from land {} before: a land delivers only its own beings' facts",
                        last.land
                    ));
                }
            }
        }
    }
    if !proven.signed(&fact) {
        return refuse(format!("the fact at seq {seq} is not signed by the key its being held there"));
    }
    // A rotation seen before must still be in the history of any fact after
    // it: a key rotated out cannot sign new summons behind a history cut
    // short. (A fact from before the rotation, delivered again, needs only
    // the history up to it.)
    if let Some(last) = so_far.last(world, &being) {
        let holds_it = proven.keys.iter().any(|(set_at, key)| *set_at == last.key_seq && *key == last.key.0);
        if seq > last.key_seq && !holds_it {
            return refuse(format!(
                "the key history leaves out the key set at seq {} that this land saw before",
                last.key_seq
            ));
        }
    }
    let (newest_key, newest_key_seq) = proven.current();
    if fact.kind() != KIND_ACT {
        return refuse(format!("a {} fact is not a summons", fact.kind()));
    }
    let act: ActBody = match fact.body_as() {
        Ok(act) => act,
        Err(error) => return refuse(format!("the act does not read: {error}")),
    };
    let VerbCall::Summon { target, content, in_reply_to } = &act.call else {
        return refuse(format!("the act is a {}, not a summons", act.call.verb()));
    };
    if !crate::approval::Gate::call_applied(act.gate.as_ref()) {
        return refuse("the summons waits for an approval on its land: it was not made".into());
    }
    let Some(address) = RemoteAddress::of_sealed_target(target) else {
        return refuse(format!("the summons is for {target}, not a being of another land"));
    };
    // A summons for a being that moved here, addressed to its old home
    // and sent on by its sender, is for this land too.
    let moved_here =
        world.being_named(&address.name).is_some_and(|row| world.canopy.moved_in.get(&row.id) == Some(&address.land));
    if address.land != this && !moved_here {
        return refuse(format!("the summons is for land {}, not this land", address.land));
    }
    if let Some(last) = so_far.last(world, &being) {
        if let Some(&(_, taken, receipt)) = last.taken.iter().find(|(taken_seq, _, _)| *taken_seq == seq) {
            if taken == id {
                return ArrivalVerdict::Duplicate { receipt: (receipt != u64::MAX).then_some(receipt) };
            }
            return refuse(format!(
                "a fork: being {being} has two facts at seq {seq}, {taken} taken before and {id} now"
            ));
        }
        let oldest = last.taken.first().map_or(0, |(oldest, _, _)| *oldest);
        let latest = last.latest().map_or(0, |(latest, _, _)| latest);
        if seq < oldest {
            // Older than every fact remembered: taken long ago (or never
            // delivered in order); it is not taken again either way.
            return ArrivalVerdict::Duplicate { receipt: None };
        }
        if seq < latest {
            return refuse(format!(
                "out of order: seq {seq} of being {being} after seq {latest} (a land delivers each being's summons in order)"
            ));
        }
    }
    let limits = crate::moment::MomentLimits::of(world);
    if content.chars().count() > limits.summon_content_chars_max {
        return refuse(format!(
            "the summons is longer than {} characters (summon_content_chars_max)",
            limits.summon_content_chars_max
        ));
    }
    let Some(row) = world.being_named(&address.name) else {
        return refuse(format!("no being @{} on this land", address.name));
    };
    if let Some(moved) = world.canopy.moved_away.get(&row.id) {
        let reason = format!(
            "@{name} moved to land {land} ({url}): summon @{name}@{land} there",
            name = address.name,
            land = moved.land,
            url = moved.url
        );
        return ArrivalVerdict::Moved { refusal: refusal(Some(being), Some(seq), Some(id), reason), land: moved.land };
    }
    if row.ended {
        return refuse(format!("@{} has ended", address.name));
    }
    let waiting =
        world.inbox.get(&row.id).map_or(0, |pending| pending.len()) + so_far.added.get(&row.id).copied().unwrap_or(0);
    if waiting >= limits.inbox_depth_max {
        return ArrivalVerdict::Wait {
            reason: format!("the inbox of @{} is full (inbox_depth_max = {})", address.name, limits.inbox_depth_max),
        };
    }
    let name = key_history
        .first()
        .and_then(|genesis| crate::fact::Fact::decode_envelope(genesis).ok())
        .and_then(|genesis| genesis.body_as::<GenesisBodyFlowSkipped>().ok())
        .map(|genesis| genesis.name)
        .unwrap_or_default();
    ArrivalVerdict::Arrive(Arrival {
        land: from,
        being,
        name,
        seq,
        fact: id,
        target: row.id,
        content: content.clone(),
        in_reply_to: *in_reply_to,
        caller_role: act.primary.clone(),
        key: PublicKeyBytes(newest_key),
        key_seq: newest_key_seq,
    })
}

/// The summons waiting to be delivered, oldest first, as the CLI and the
/// API show them: their land seq, fact, sender and `@name@LAND` target.
pub fn outbox_json(world: &crate::world::World) -> serde_json::Value {
    world
        .canopy
        .outbox
        .iter()
        .map(|(land_seq, outgoing)| {
            serde_json::json!({
                "landSeq": land_seq,
                "fact": outgoing.fact.to_hex(),
                "from": world.name_of(&outgoing.being).map(|name| format!("@{name}")),
                "to": outgoing.to.to_target(),
                "via": outgoing.via.map(|via| via.to_hex()),
            })
        })
        .collect()
}

/// The peers as the world's canonical state holds them (what the world
/// hash covers): every folded field, keys and ids as bytes.
pub fn canonical_peers(state: &CanopyState) -> ciborium::value::Value {
    use ciborium::value::Value as Cbor;
    let text = |s: &str| Cbor::Text(s.to_string());
    let int = |n: u64| Cbor::Integer(n.into());
    let peers: Vec<(Cbor, Cbor)> = state
        .peers
        .iter()
        .map(|(land, peer)| {
            let heartbeats = peer
                .heartbeats
                .iter()
                .map(|record| {
                    Cbor::Array(vec![
                        int(record.land_seq),
                        text(record.status.as_str()),
                        int(record.answered),
                        int(record.missed),
                        text(&record.reason),
                    ])
                })
                .collect();
            (
                Cbor::Bytes(land.0.to_vec()),
                Cbor::Map(vec![
                    (text("url"), text(&peer.url)),
                    (text("key"), Cbor::Bytes(peer.key.0.to_vec())),
                    (text("keySeq"), int(peer.key_seq)),
                    (text("origin"), text(peer.origin.as_str())),
                    (text("status"), text(peer.status.as_str())),
                    (text("addedAt"), int(peer.added_at)),
                    (text("statusSince"), int(peer.status_since)),
                    (text("answered"), int(peer.answered)),
                    (text("missed"), int(peer.missed)),
                    (text("heartbeats"), Cbor::Array(heartbeats)),
                ]),
            )
        })
        .collect();
    let outbox = state
        .outbox
        .iter()
        .map(|(land_seq, outgoing)| {
            (
                int(*land_seq),
                Cbor::Array(
                    [
                        Cbor::Bytes(outgoing.fact.0.to_vec()),
                        Cbor::Bytes(outgoing.being.0.to_vec()),
                        int(outgoing.seq),
                        text(&outgoing.to.to_target()),
                        int(outgoing.stored_time_ms),
                    ]
                    .into_iter()
                    // Sent on only since moves were built: a summons that
                    // was not keeps the entry it always had.
                    .chain(outgoing.via.map(|via| Cbor::Bytes(via.0.to_vec())))
                    .collect(),
                ),
            )
        })
        .collect();
    let arrived = state
        .arrived
        .iter()
        .map(|(being, last)| {
            (
                Cbor::Bytes(being.0.to_vec()),
                Cbor::Array(vec![
                    Cbor::Bytes(last.land.0.to_vec()),
                    Cbor::Bytes(last.key.0.to_vec()),
                    int(last.key_seq),
                    Cbor::Array(
                        last.taken
                            .iter()
                            .map(|(seq, fact, receipt)| {
                                Cbor::Array(vec![int(*seq), Cbor::Bytes(fact.0.to_vec()), int(*receipt)])
                            })
                            .collect(),
                    ),
                ]),
            )
        })
        .collect();
    let refused = state
        .refused
        .iter()
        .map(|(land_seq, refusal)| {
            let optional = |bytes: Option<[u8; 32]>| bytes.map_or(Cbor::Null, |bytes| Cbor::Bytes(bytes.to_vec()));
            Cbor::Array(vec![
                int(*land_seq),
                Cbor::Bytes(refusal.land.0.to_vec()),
                optional(refusal.being.map(|being| being.0)),
                refusal.seq.map_or(Cbor::Null, int),
                optional(refusal.fact.map(|fact| fact.0)),
                text(&refusal.reason),
            ])
        })
        .collect();
    let mut entries = vec![
        (text("peers"), Cbor::Map(peers)),
        (text("outbox"), Cbor::Map(outbox)),
        (text("arrived"), Cbor::Map(arrived)),
        (text("refused"), Cbor::Array(refused)),
    ];
    // Moves are in the world hash once a land has one (a land without
    // keeps the hash it always had).
    let bytes = |id: &BeingId| Cbor::Bytes(id.0.to_vec());
    if !state.arriving.is_empty() {
        let arriving = state
            .arriving
            .iter()
            .map(|(being, arriving)| {
                let record = Cbor::Array(vec![
                    text(&arriving.name),
                    bytes(&arriving.from_land),
                    int(arriving.through_seq),
                    Cbor::Bytes(arriving.head.0.to_vec()),
                ]);
                (bytes(being), record)
            })
            .collect();
        entries.push((text("arriving"), Cbor::Map(arriving)));
    }
    if !state.moved_in.is_empty() {
        let moved_in = state.moved_in.iter().map(|(being, land)| (bytes(being), bytes(land))).collect();
        entries.push((text("movedIn"), Cbor::Map(moved_in)));
    }
    if !state.moved_away.is_empty() {
        let moved_away = state
            .moved_away
            .iter()
            .map(|(being, moved)| {
                (bytes(being), Cbor::Array(vec![bytes(&moved.land), text(&moved.url), int(moved.seq)]))
            })
            .collect();
        entries.push((text("movedAway"), Cbor::Map(moved_away)));
    }
    Cbor::Map(entries)
}

/// Why a peer's URL cannot be recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerUrlError {
    #[error("a peer's URL starts with http:// or https:// (got {url:?})")]
    Scheme { url: String },
    #[error("a peer's URL is at most {max} bytes (got {len})")]
    TooLong { len: usize, max: usize },
    #[error("a peer's URL names a host after its scheme (got {url:?})")]
    NoHost { url: String },
    #[error("a peer's URL holds no spaces, query, fragment or credentials (got {url:?})")]
    Extra { url: String },
}

/// A peer's URL as the land records it: `http(s)://host[:port][/path]`,
/// without a trailing slash, so that one land is one URL.
pub fn normalize_peer_url(url: &str) -> Result<String, PeerUrlError> {
    let url = url.trim();
    if url.len() > CANOPY_PEER_URL_BYTES_MAX {
        return Err(PeerUrlError::TooLong { len: url.len(), max: CANOPY_PEER_URL_BYTES_MAX });
    }
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| PeerUrlError::Scheme { url: url.to_string() })?;
    if rest.is_empty() || rest.starts_with('/') || rest.starts_with(':') {
        return Err(PeerUrlError::NoHost { url: url.to_string() });
    }
    if rest.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '?' | '#' | '@')) {
        return Err(PeerUrlError::Extra { url: url.to_string() });
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// `text` cut to at most `max` bytes on a character boundary.
pub fn bounded_reason(text: &str) -> String {
    if text.len() <= CANOPY_REASON_BYTES_MAX {
        return text.to_string();
    }
    let mut end = CANOPY_REASON_BYTES_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The forks other lands showed this land, newest first, as the peers page,
/// `/api/v1/peers` and `seed peer list --json` list them.
pub fn forks_shown_json(state: &CanopyState) -> serde_json::Value {
    state
        .forks_shown
        .iter()
        .rev()
        .map(|(land_seq, fork)| {
            serde_json::json!({
                "landSeq": land_seq,
                "being": fork.being.to_hex(),
                "seq": fork.seq,
                "held": fork.held.to_hex(),
                "shown": fork.shown.to_hex(),
                "by": fork.by.to_hex(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn land(byte: u8) -> BeingId {
        BeingId([byte; 32])
    }

    fn added(byte: u8) -> PeerAdded {
        PeerAdded {
            land: land(byte),
            url: format!("http://127.0.0.1:{byte}"),
            key: PublicKeyBytes([byte; 32]),
            key_seq: 0,
            origin: PeerOrigin::Added,
        }
    }

    fn beats(byte: u8, status: PeerStatus, answered: u64, missed: u64) -> PeerHeartbeats {
        PeerHeartbeats { land: land(byte), status, answered, missed, reason: String::new() }
    }

    #[test]
    fn a_peers_record_folds_its_key_status_and_heartbeats_and_keeps_the_newest() {
        let mut state = CanopyState::default();
        state.fold_added(5, &added(1));
        state.fold_heartbeats(6, &beats(1, PeerStatus::Up, 3, 0));
        state.fold_heartbeats(7, &beats(1, PeerStatus::Up, 2, 0));
        let peer = &state.peers[&land(1)];
        assert_eq!((peer.status, peer.status_since, peer.answered), (PeerStatus::Up, 6, 5));
        state.fold_heartbeats(9, &beats(1, PeerStatus::Down, 0, 1));
        state.fold_key(&land(1), PublicKeyBytes([8; 32]), 40);
        let peer = &state.peers[&land(1)];
        assert_eq!(
            (peer.status, peer.status_since, peer.missed, peer.key, peer.key_seq),
            (PeerStatus::Down, 9, 1, PublicKeyBytes([8; 32]), 40)
        );
        for seq in 10..100 {
            state.fold_heartbeats(seq, &beats(1, PeerStatus::Down, 0, 1));
        }
        let peer = &state.peers[&land(1)];
        assert_eq!(peer.heartbeats.len(), CANOPY_HEARTBEAT_RECORDS_KEPT);
        assert_eq!(peer.heartbeats.last().map(|record| record.land_seq), Some(99));
        // Records about a land that is not a peer change nothing.
        state.fold_heartbeats(100, &beats(2, PeerStatus::Up, 1, 0));
        state.fold_key(&land(2), PublicKeyBytes([9; 32]), 1);
        assert_eq!(state.peers.len(), 1);
        state.fold_removed(&land(1));
        assert!(state.is_empty());
    }

    #[test]
    fn following_folds_onto_the_peer_and_a_fork_shown_is_kept_once_and_the_newest_kept() {
        let mut state = CanopyState::default();
        state.fold_followed(&land(1), true, None);
        assert!(state.peers.is_empty(), "following a land that is no peer changes nothing");
        state.fold_added(5, &added(1));
        state.fold_followed(&land(1), true, None);
        state.fold_followed(&land(1), true, Some(&land(3)));
        assert!(state.peers[&land(1)].following);
        assert_eq!(state.peers[&land(1)].following_beings.iter().collect::<Vec<_>>(), [&land(3)]);
        state.fold_followed(&land(1), false, None);
        assert!(!state.peers[&land(1)].following, "the land is no longer followed");
        assert!(!state.peers[&land(1)].following_beings.is_empty(), "its being still is");
        state.fold_followed(&land(1), false, Some(&land(3)));
        assert!(state.peers[&land(1)].following_beings.is_empty());
        let fork = |byte: u8| ForkShown {
            being: land(7),
            seq: byte as u64,
            held: FactId([byte; 32]),
            shown: FactId([byte.wrapping_add(1); 32]),
            by: land(1),
            envelope: vec![byte],
        };
        state.fold_fork_shown(10, &fork(1));
        state.fold_fork_shown(11, &fork(1));
        assert_eq!(state.forks_shown.len(), 1, "the same fork shown twice is kept once");
        for byte in 2..80 {
            state.fold_fork_shown(10 + byte as u64, &fork(byte));
        }
        assert_eq!(state.forks_shown.len(), CANOPY_FORKS_SHOWN_KEPT);
        assert_eq!(state.forks_shown.last().map(|(land_seq, _)| *land_seq), Some(89));
        let listed = forks_shown_json(&state);
        assert_eq!(listed[0]["landSeq"], 89, "newest first: {listed}");
        state.fold_removed(&land(1));
        assert!(!state.is_empty(), "the forks shown stay when the land that showed them is removed");
    }

    fn check_url(url: &str, expected: Result<&str, PeerUrlError>) {
        assert_eq!(normalize_peer_url(url), expected.map(str::to_string), "{url}");
    }

    #[test]
    fn a_peer_url_is_http_or_https_with_a_host_and_nothing_else() {
        check_url("http://127.0.0.1:8080/", Ok("http://127.0.0.1:8080"));
        check_url(" https://land.example/seed ", Ok("https://land.example/seed"));
        check_url("ftp://x", Err(PeerUrlError::Scheme { url: "ftp://x".into() }));
        check_url("127.0.0.1:80", Err(PeerUrlError::Scheme { url: "127.0.0.1:80".into() }));
        check_url("http://", Err(PeerUrlError::NoHost { url: "http://".into() }));
        check_url("http:///x", Err(PeerUrlError::NoHost { url: "http:///x".into() }));
        check_url("http://a b", Err(PeerUrlError::Extra { url: "http://a b".into() }));
        check_url("http://user@host", Err(PeerUrlError::Extra { url: "http://user@host".into() }));
        check_url("http://host/?q", Err(PeerUrlError::Extra { url: "http://host/?q".into() }));
        let long = format!("http://{}", "a".repeat(CANOPY_PEER_URL_BYTES_MAX));
        check_url(&long, Err(PeerUrlError::TooLong { len: long.len(), max: CANOPY_PEER_URL_BYTES_MAX }));
    }

    #[test]
    fn a_long_reason_is_cut_on_a_character_boundary() {
        let reason = "é".repeat(CANOPY_REASON_BYTES_MAX);
        let cut = bounded_reason(&reason);
        assert!(cut.len() <= CANOPY_REASON_BYTES_MAX + '…'.len_utf8());
        assert_eq!(bounded_reason("short"), "short");
    }
}
