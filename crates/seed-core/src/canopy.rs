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

use crate::fact::{BeingId, PublicKeyBytes};
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
}

/// The peers, by land id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanopyState {
    pub peers: BTreeMap<BeingId, Peer>,
}

impl CanopyState {
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
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
            },
        );
    }

    /// Folds a peer's key change (proven by the edge before it was sealed).
    pub fn fold_key(&mut self, land: &BeingId, key: PublicKeyBytes, key_seq: u64) {
        if let Some(peer) = self.peers.get_mut(land) {
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
        "heartbeats": peer.heartbeats.iter().map(|record| serde_json::json!({
            "landSeq": record.land_seq,
            "status": record.status.as_str(),
            "answered": record.answered,
            "missed": record.missed,
            "reason": if record.reason.is_empty() { serde_json::Value::Null } else { record.reason.clone().into() },
        })).collect::<Vec<_>>(),
    })
}

/// The peers as the world's canonical state holds them (what the world
/// hash covers): every folded field, keys and ids as bytes.
pub fn canonical_peers(state: &CanopyState) -> ciborium::value::Value {
    use ciborium::value::Value as Cbor;
    let text = |s: &str| Cbor::Text(s.to_string());
    let int = |n: u64| Cbor::Integer(n.into());
    let peers = state
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
    Cbor::Map(peers)
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
