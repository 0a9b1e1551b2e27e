//! The land's side of Canopy (docs/canopy.md): the routes other lands
//! call (`GET /canopy/v1/land`, signed `POST /canopy/v1/hello` and
//! `/canopy/v1/heartbeat`), the heartbeats it sends its peers, and adding
//! and removing a peer. What is recorded is decided here and in
//! `seed_core::canopy` (`decide_added`), sealed as `world` facts of the
//! root; a refusal names its reason in its answer and in the land's recent
//! refusals (memory: a flood of strangers never grows the reel).
//!
//! Every inbound request passes, in order: its headers read, its body
//! read within `canopy_request_bytes_max`, the key of the land it claims
//! to be from (a peer's recorded key; a stranger's proven from its key
//! history when the land accepts first contact), the signature and window
//! (`seed_format::canopy`), the land's requests per minute, and the
//! nonce memory. Only then is its body read.

use super::error::PortalError;
use super::Portal;
use crate::canopy::{
    bounded_reason, decide_added, normalize_peer_url, peer_json, AddPeerRefusal, CanopyLimits, PeerAdded,
    PeerHeartbeats, PeerOrigin, PeerStatus,
};
use crate::canopy_http::client::{fetch_identity, signed_post, Call, Signer};
use crate::canopy_http::guard::{FirstContacts, GuardRefusal, NonceMemory, PeerRates};
use crate::canopy_http::{
    wall_clock_ms, LandIdentity, PeerCallError, CANOPY_HEARTBEAT_PATH, CANOPY_HELLO_PATH, HEADER_FROM, HEADER_NONCE,
    HEADER_SIGNATURE, HEADER_TIMESTAMP_MS, HEADER_TO,
};
use crate::engine::EngineError;
use crate::fact::{BeingId, PublicKeyBytes};
use crate::world::Effect;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use ed25519_dalek::VerifyingKey;
use seed_format::canopy::{CanopyRequest, CanopyRequestError};
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Times a land looks up one peer's key history in a minute after that
/// peer's request did not verify: a forged request cannot make this land
/// call the peer's URL more often.
pub const CANOPY_KEY_LOOKUPS_PER_PEER_PER_MINUTE_MAX: u64 = 2;
/// Refusals the peers page shows, newest first (memory only).
pub const CANOPY_REFUSALS_KEPT: usize = 50;
/// Bytes of a peer's answer a land reads.
pub const CANOPY_ANSWER_BYTES_MAX: usize = 64 * 1024;

/// Why a request from another land is refused.
#[derive(Debug, thiserror::Error)]
pub enum CanopyRefusal {
    #[error("header {header} {problem}")]
    BadHeader { header: &'static str, problem: &'static str },
    #[error(transparent)]
    Request(#[from] CanopyRequestError),
    #[error(transparent)]
    Guard(#[from] GuardRefusal),
    #[error("land {land} is not a peer of this land")]
    NotAPeer { land: BeingId },
    #[error("the request body is over canopy_request_bytes_max = {most} bytes")]
    TooLarge { most: u64 },
    #[error("the request body did not arrive in time")]
    BodyTimeout,
    #[error("the body is not {what}: {reason}")]
    BadBody { what: &'static str, reason: String },
    #[error("land {land} could not be proven: {source}")]
    Unproven {
        land: BeingId,
        #[source]
        source: Box<PeerCallError>,
    },
    /// A stranger's identity could not be proven: only the kind of failure
    /// is said (never what its URL answered).
    #[error("land {land} could not be proven at {url}: {why}")]
    StrangerUnproven { land: BeingId, url: String, why: &'static str },
    #[error("{url} is land {found}, not land {land} that signed the request")]
    OtherLand { url: String, land: BeingId, found: BeingId },
    #[error("land {land}'s key history does not hold the key this land recorded for it: it is not the same land")]
    KeyNotContinued { land: BeingId },
    #[error(transparent)]
    Add(#[from] AddPeerRefusal),
    #[error("this land cannot record it now: {reason}")]
    Unavailable { reason: String },
    #[error("not a fork of this land's reels: {0}")]
    NotAFork(#[from] crate::mirror::ForkReportError),
    #[error("land {land} came by first contact: only a land this land's operator added may follow it (the peers page, `seed peer add`)")]
    NotFollowable { land: BeingId },
    #[error("the move is refused: {reason}")]
    NotMovable { reason: String },
}

impl CanopyRefusal {
    /// The status and a short stable code, from the kind of refusal only.
    fn status(&self) -> (StatusCode, &'static str) {
        match self {
            CanopyRefusal::BadHeader { .. } | CanopyRefusal::BadBody { .. } => (StatusCode::BAD_REQUEST, "bad-request"),
            CanopyRefusal::Request(error) => match error {
                CanopyRequestError::BadSignature => (StatusCode::UNAUTHORIZED, "bad-signature"),
                CanopyRequestError::BodyDiffers => (StatusCode::UNAUTHORIZED, "bad-signature"),
                CanopyRequestError::NotForThisLand { .. } => (StatusCode::MISDIRECTED_REQUEST, "other-land"),
                CanopyRequestError::Stale { .. } | CanopyRequestError::FromTheFuture { .. } => {
                    (StatusCode::UNAUTHORIZED, "outside-window")
                }
                CanopyRequestError::Encoding { .. } => (StatusCode::BAD_REQUEST, "bad-request"),
            },
            CanopyRefusal::Guard(refusal) => match refusal {
                GuardRefusal::Replayed | GuardRefusal::BeforeStart { .. } => (StatusCode::CONFLICT, "replayed"),
                GuardRefusal::NoncesFull { .. } => (StatusCode::SERVICE_UNAVAILABLE, "busy"),
                GuardRefusal::TooMany { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate-limited"),
                GuardRefusal::FirstContacts { .. } => (StatusCode::FORBIDDEN, "not-a-peer"),
            },
            CanopyRefusal::NotAPeer { .. } => (StatusCode::FORBIDDEN, "not-a-peer"),
            CanopyRefusal::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "too-large"),
            CanopyRefusal::BodyTimeout => (StatusCode::REQUEST_TIMEOUT, "body-timeout"),
            CanopyRefusal::Unproven { .. }
            | CanopyRefusal::StrangerUnproven { .. }
            | CanopyRefusal::OtherLand { .. }
            | CanopyRefusal::KeyNotContinued { .. } => (StatusCode::FORBIDDEN, "unproven"),
            CanopyRefusal::Add(refusal) => match refusal {
                AddPeerRefusal::Itself { .. } | AddPeerRefusal::SameKey { .. } => (StatusCode::FORBIDDEN, "unproven"),
                AddPeerRefusal::AlreadyPeer { .. } | AddPeerRefusal::UrlTaken { .. } => {
                    (StatusCode::CONFLICT, "conflict")
                }
                AddPeerRefusal::Full { .. } => (StatusCode::FORBIDDEN, "full"),
            },
            CanopyRefusal::Unavailable { .. } => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            CanopyRefusal::NotAFork(_) => (StatusCode::UNPROCESSABLE_ENTITY, "not-a-fork"),
            CanopyRefusal::NotFollowable { .. } => (StatusCode::FORBIDDEN, "not-followable"),
            CanopyRefusal::NotMovable { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "move-refused"),
        }
    }
}

impl CanopyRefusal {
    /// The error document every refusal answers with.
    fn to_json(&self) -> Json {
        let (status, code) = self.status();
        json!({"error": {"status": status.as_u16(), "code": code, "field": null, "message": self.to_string()}})
    }
}

impl IntoResponse for CanopyRefusal {
    fn into_response(self) -> Response {
        let (status, _) = self.status();
        (status, axum::Json(self.to_json())).into_response()
    }
}

/// A peer's heartbeats since its last record (memory until recorded).
#[derive(Debug, Default, Clone)]
struct Beats {
    answered: u64,
    missed: u64,
    reason: String,
}

/// One refusal as the peers page lists it.
#[derive(Debug, Clone)]
struct Refused {
    from: String,
    path: String,
    reason: String,
    at_ms: u64,
}

/// The land's Canopy state in this process.
pub struct Canopy {
    pub(super) signer: Signer,
    operator: BeingId,
    key_history: Vec<String>,
    key_seq: u64,
    nonces: Mutex<NonceMemory>,
    rates: Mutex<PeerRates>,
    key_lookups: Mutex<PeerRates>,
    first_contacts: Mutex<FirstContacts>,
    refusals: Mutex<VecDeque<Refused>>,
    beats: Mutex<BTreeMap<BeingId, Beats>>,
    pub(super) client: reqwest::Client,
    /// One change of the peers at a time (two adds of one land race otherwise).
    pub(super) changing: tokio::sync::Mutex<()>,
    /// Summons to and from other lands (`canopy_summons`).
    pub(super) summons: super::canopy_summons::SummonsState,
    /// The mirrors of the lands this land follows (`canopy_follow`).
    pub(super) follows: super::canopy_follow::FollowState,
}

impl Canopy {
    /// The land's Canopy, reached at `url` (what it tells the lands it greets).
    pub fn open(live: &super::live::LiveLand, url: String) -> Result<Canopy, EngineError> {
        let (land, key, history) = live.canopy_keys()?;
        let proven = seed_format::canopy::verify_key_history(land, &history)
            .map_err(|error| EngineError::Internal(format!("this land's own key history does not verify: {error}")))?;
        let client = crate::canopy_http::client::http_client()
            .map_err(|error| EngineError::Internal(format!("no HTTP client for Canopy: {error}")))?;
        Ok(Canopy {
            signer: Signer { land, key, url },
            operator: live.operator(),
            key_history: history.iter().map(hex::encode).collect(),
            key_seq: proven.current().1,
            nonces: Mutex::new(NonceMemory::new(wall_clock_ms())),
            rates: Mutex::default(),
            key_lookups: Mutex::default(),
            first_contacts: Mutex::default(),
            refusals: Mutex::default(),
            beats: Mutex::default(),
            client,
            changing: tokio::sync::Mutex::new(()),
            summons: Default::default(),
            follows: Default::default(),
        })
    }

    pub fn land(&self) -> BeingId {
        self.signer.land
    }

    pub fn url(&self) -> &str {
        &self.signer.url
    }

    /// Whether the land `identity` proved is added as a peer now, in the
    /// world as it stands (`seed_core::canopy::decide_added`).
    fn decide_added(
        &self,
        portal: &Portal,
        identity: &LandIdentity,
        origin: PeerOrigin,
    ) -> Result<PeerAdded, AddPeerRefusal> {
        let world = portal.live.world();
        let peers_max = CanopyLimits::in_world(&world).peers_max;
        decide_added(&world.canopy, self.land(), &self.public_key(), &identity.keys, &identity.url, origin, peers_max)
    }

    fn public_key(&self) -> PublicKeyBytes {
        PublicKeyBytes(self.signer.key.verifying_key().to_bytes())
    }

    /// Who this land is, as `GET /canopy/v1/land` answers.
    pub fn identity_json(&self) -> Json {
        json!({
            "version": seed_format::canopy::CANOPY_REQUEST_VERSION,
            "land": self.signer.land.to_hex(),
            "operator": self.operator.to_hex(),
            "url": self.signer.url,
            "key": self.public_key().to_hex(),
            "keySeq": self.key_seq,
            "keyHistory": self.key_history,
        })
    }

    /// The refusals the land remembers, newest first.
    pub fn refusals_json(&self) -> Json {
        let refusals = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        refusals
            .iter()
            .map(|refused| {
                json!({"from": refused.from, "path": refused.path, "reason": refused.reason, "atMs": refused.at_ms})
            })
            .collect()
    }

    fn remember_refusal(&self, from: String, path: &str, reason: String) {
        tracing::info!(target: "seed::canopy", from = %from, path, reason = %reason, "refused a request from another land");
        let mut refusals = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        refusals.push_front(Refused {
            from,
            path: path.to_string(),
            reason: bounded_reason(&reason),
            at_ms: wall_clock_ms(),
        });
        refusals.truncate(CANOPY_REFUSALS_KEPT);
    }
}

pub(super) fn limits(portal: &Portal) -> CanopyLimits {
    CanopyLimits::in_world(&portal.live.world())
}

pub(super) fn canopy_of(portal: &Portal) -> Result<&Arc<Canopy>, CanopyRefusal> {
    portal.canopy.as_ref().ok_or_else(|| CanopyRefusal::Unavailable {
        reason: "this process does not run the land (it follows another, or could not read the root's key)".into(),
    })
}

/// Seals `effects` as one world fact of the root, on a blocking thread;
/// the land seq it sealed at.
pub(super) async fn seal(portal: &Arc<Portal>, effects: Vec<Effect>) -> Result<u64, CanopyRefusal> {
    let sealed = seal_each(portal, vec![effects]).await?;
    Ok(sealed.first().copied().unwrap_or_else(|| portal.live.world().cursor.saturating_sub(1)))
}

/// Seals each of `changes` as its own world fact of the root, made durable
/// together, on a blocking thread; their land seqs.
pub(super) async fn seal_each(portal: &Arc<Portal>, changes: Vec<Vec<Effect>>) -> Result<Vec<u64>, CanopyRefusal> {
    let live = portal.live.clone();
    tokio::task::spawn_blocking(move || live.seal_world_changes(changes))
        .await
        .map_err(|error| CanopyRefusal::Unavailable { reason: format!("the sealing task stopped: {error}") })?
        .map_err(|error| CanopyRefusal::Unavailable { reason: error.to_string() })
}

/// `GET /canopy/v1/land`: who this land is (unsigned; anyone may verify it).
pub(super) async fn identity(State(portal): State<Arc<Portal>>) -> Response {
    match canopy_of(&portal) {
        Ok(canopy) => axum::Json(canopy.identity_json()).into_response(),
        Err(refusal) => refusal.into_response(),
    }
}

/// A request's signed parts, read from its headers.
pub(super) struct Signed {
    pub(super) request: CanopyRequest,
    signature: [u8; 64],
}

fn header<'a>(headers: &'a HeaderMap, name: &'static str) -> Result<&'a str, CanopyRefusal> {
    headers
        .get(name)
        .ok_or(CanopyRefusal::BadHeader { header: name, problem: "is missing" })?
        .to_str()
        .map_err(|_| CanopyRefusal::BadHeader { header: name, problem: "is not text" })
}

fn hex_header<const N: usize>(headers: &HeaderMap, name: &'static str) -> Result<[u8; N], CanopyRefusal> {
    let bytes = hex::decode(header(headers, name)?)
        .map_err(|_| CanopyRefusal::BadHeader { header: name, problem: "is not hex" })?;
    bytes.try_into().map_err(|_| CanopyRefusal::BadHeader { header: name, problem: "is not the right length" })
}

/// Reads a signed request: its headers, then its body within the land's limit.
async fn read_signed(portal: &Portal, request: Request) -> Result<(Signed, Vec<u8>), CanopyRefusal> {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    let from = BeingId(hex_header::<32>(headers, HEADER_FROM)?);
    let to = BeingId(hex_header::<32>(headers, HEADER_TO)?);
    let timestamp_ms = header(headers, HEADER_TIMESTAMP_MS)?
        .parse::<u64>()
        .map_err(|_| CanopyRefusal::BadHeader { header: HEADER_TIMESTAMP_MS, problem: "is not a whole number" })?;
    let nonce = hex_header::<16>(headers, HEADER_NONCE)?;
    let signature = hex_header::<64>(headers, HEADER_SIGNATURE)?;
    // A land that is no peer gets no further than its headers: its body is
    // never read, unless it says hello to a land that accepts first contact.
    if !portal.live.world().canopy.peers.contains_key(&from) {
        if parts.uri.path() != CANOPY_HELLO_PATH {
            return Err(CanopyRefusal::NotAPeer { land: from });
        }
        if limits(portal).first_contacts_per_hour_max == 0 {
            FirstContacts::default().admit(0, wall_clock_ms())?;
        }
    }
    let most = limits(portal).request_bytes_max;
    let body = read_body(body, most, portal.limits.body_read_timeout_ms).await?;
    let request = CanopyRequest {
        method: parts.method.as_str().to_string(),
        path: parts.uri.path().to_string(),
        from,
        to,
        timestamp_ms,
        nonce,
        body_digest: crate::fact::blake3_of(&body),
    };
    Ok((Signed { request, signature }, body))
}

async fn read_body(body: Body, most: u64, timeout_ms: u64) -> Result<Vec<u8>, CanopyRefusal> {
    let limit = usize::try_from(most).unwrap_or(usize::MAX);
    match tokio::time::timeout(Duration::from_millis(timeout_ms), axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => Ok(bytes.to_vec()),
        Ok(Err(_)) => Err(CanopyRefusal::TooLarge { most }),
        Err(_) => Err(CanopyRefusal::BodyTimeout),
    }
}

fn verifying_key(key: &PublicKeyBytes) -> Result<VerifyingKey, CanopyRefusal> {
    VerifyingKey::from_bytes(&key.0).map_err(|_| CanopyRefusal::Request(CanopyRequestError::BadSignature))
}

/// Checks the signature and window against `key`, then the land's rate and
/// the nonce memory (only a verified request is counted or remembered).
pub(super) fn admit(
    portal: &Portal,
    canopy: &Canopy,
    signed: &Signed,
    body: &[u8],
    key: &PublicKeyBytes,
) -> Result<(), CanopyRefusal> {
    let now_ms = wall_clock_ms();
    signed.request.check(canopy.land(), now_ms, body, &verifying_key(key)?, &signed.signature)?;
    let from = signed.request.from;
    // The nonce before the rate: a captured request replayed by someone
    // else is refused without spending the peer's requests.
    canopy.nonces.lock().unwrap_or_else(|p| p.into_inner()).admit(
        from,
        signed.request.nonce,
        signed.request.timestamp_ms,
        now_ms,
    )?;
    let most = limits(portal).requests_per_peer_per_minute_max;
    let mut rates = canopy.rates.lock().unwrap_or_else(|p| p.into_inner());
    rates.forget_full(most, now_ms);
    rates.admit(from, most, now_ms)?;
    Ok(())
}

/// A peer whose request did not verify under the key recorded for it may
/// have rotated its key: its history, fetched from the URL recorded for it
/// (never one the request names), must hold the recorded key and prove the
/// new one. Returns the key to check the request with, having recorded it.
async fn key_after_rotation(
    portal: &Arc<Portal>,
    canopy: &Canopy,
    land: BeingId,
) -> Result<Option<PublicKeyBytes>, CanopyRefusal> {
    let Some(peer) = portal.live.world().canopy.peers.get(&land).cloned() else { return Ok(None) };
    let timeout = Duration::from_millis(limits(portal).peer_timeout_ms);
    let identity = fetch_identity(&canopy.client, &peer.url, timeout)
        .await
        .map_err(|source| CanopyRefusal::Unproven { land, source: Box::new(source) })?;
    if identity.land != land {
        return Err(CanopyRefusal::OtherLand { url: peer.url, land, found: identity.land });
    }
    let (key, key_seq) = identity.keys.current();
    if key == peer.key.0 {
        return Ok(None);
    }
    if !identity.keys.keys.iter().any(|(seq, held)| *held == peer.key.0 && *seq == peer.key_seq) {
        return Err(CanopyRefusal::KeyNotContinued { land });
    }
    let key = PublicKeyBytes(key);
    let _changing = canopy.changing.lock().await;
    // Another lookup may have recorded it (or a newer key) meanwhile.
    let recorded = portal.live.world().canopy.peers.get(&land).map(|peer| peer.key_seq);
    if recorded.is_some_and(|recorded| recorded < key_seq) {
        seal(portal, vec![Effect::PeerKey { land, key, key_seq }]).await?;
    }
    Ok(Some(key))
}

/// Admits a request from a recorded peer, following a proven key rotation.
pub(super) async fn admit_peer(
    portal: &Arc<Portal>,
    canopy: &Canopy,
    signed: &Signed,
    body: &[u8],
) -> Result<(), CanopyRefusal> {
    let from = signed.request.from;
    let Some(recorded) = portal.live.world().canopy.peers.get(&from).map(|peer| peer.key) else {
        return Err(CanopyRefusal::NotAPeer { land: from });
    };
    let bad_signature = || CanopyRefusal::Request(CanopyRequestError::BadSignature);
    match admit(portal, canopy, signed, body, &recorded) {
        Err(CanopyRefusal::Request(CanopyRequestError::BadSignature)) => {
            let lookups = canopy.key_lookups.lock().unwrap_or_else(|p| p.into_inner()).admit(
                from,
                CANOPY_KEY_LOOKUPS_PER_PEER_PER_MINUTE_MAX,
                wall_clock_ms(),
            );
            if lookups.is_err() {
                return Err(bad_signature());
            }
            match key_after_rotation(portal, canopy, from).await {
                Ok(Some(rotated)) => admit(portal, canopy, signed, body, &rotated),
                Ok(None) => Err(bad_signature()),
                // The request is what failed; why no newer key was found is logged.
                Err(lookup) => {
                    tracing::info!(target: "seed::canopy", peer = %from, reason = %lookup, "no newer key proven for a request that did not verify");
                    Err(bad_signature())
                }
            }
        }
        other => other,
    }
}

/// A peer's signed request is evidence that it is up: counted as an
/// answered heartbeat, and recorded at once when its status was not up.
async fn heard_from(portal: &Arc<Portal>, canopy: &Canopy, land: BeingId) -> Result<(), CanopyRefusal> {
    let Some(recorded) = portal.live.world().canopy.peers.get(&land).map(|peer| peer.status) else { return Ok(()) };
    let heard = Beat { land, answered: true, reason: String::new(), key_seq: None, unsigned: false };
    let per_record = limits(portal).heartbeats_per_record_max;
    let _changing = canopy.changing.lock().await;
    match count_beat(canopy, recorded, &heard, per_record) {
        Some(beats) => seal(portal, vec![Effect::PeerHeartbeats { beats }]).await.map(|_| ()),
        None => Ok(()),
    }
}

/// A stranger's hello, when the land accepts first contact: its identity
/// proven from the URL it gives, the request checked under its proven key,
/// and the land recorded as a peer that is up.
async fn first_contact(
    portal: &Arc<Portal>,
    canopy: &Canopy,
    signed: &Signed,
    body: &[u8],
    url: &str,
) -> Result<(), CanopyRefusal> {
    let from = signed.request.from;
    let limits = limits(portal);
    // The hour's allowance is spent before anything is fetched: a stranger
    // makes this land call a URL of its choosing at most that often, and
    // learns nothing of what the URL answered.
    canopy
        .first_contacts
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .admit(limits.first_contacts_per_hour_max, wall_clock_ms())?;
    let identity: LandIdentity = fetch_identity(&canopy.client, url, Duration::from_millis(limits.peer_timeout_ms))
        .await
        .map_err(|error| CanopyRefusal::StrangerUnproven { land: from, url: url.to_string(), why: error.kind() })?;
    if identity.land != from {
        return Err(CanopyRefusal::OtherLand { url: url.to_string(), land: from, found: identity.land });
    }
    admit(portal, canopy, signed, body, &PublicKeyBytes(identity.keys.current().0))?;
    let _changing = canopy.changing.lock().await;
    let added = canopy.decide_added(portal, &identity, PeerOrigin::FirstContact)?;
    let up = PeerHeartbeats { land: from, status: PeerStatus::Up, answered: 1, missed: 0, reason: String::new() };
    seal(portal, vec![Effect::PeerAdded { peer: added }, Effect::PeerHeartbeats { beats: up }]).await.map(|_| ())
}

pub(super) fn body_json(body: &[u8]) -> Result<Json, CanopyRefusal> {
    serde_json::from_slice(body).map_err(|error| CanopyRefusal::BadBody { what: "JSON", reason: error.to_string() })
}

/// Answers a signed request, or refuses it and remembers why.
pub(super) async fn answer_signed<F, Fut>(portal: Arc<Portal>, request: Request, handle: F) -> Response
where
    F: FnOnce(Arc<Portal>, Arc<Canopy>, Signed, Vec<u8>) -> Fut,
    Fut: std::future::Future<Output = Result<Json, CanopyRefusal>>,
{
    let path = request.uri().path().to_string();
    let claimed = request.headers().get(HEADER_FROM).and_then(|value| value.to_str().ok()).unwrap_or("unknown");
    let claimed: String = claimed.chars().take(64).collect();
    // Who asked, and with what nonce, as the headers say: the answer is
    // signed for them (an answer whose request had neither is not signed).
    let asker = BeingId::from_hex(&claimed);
    let nonce = request
        .headers()
        .get(HEADER_NONCE)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| hex::decode(text).ok())
        .and_then(|bytes| <[u8; 16]>::try_from(bytes).ok());
    let canopy = match canopy_of(&portal) {
        Ok(canopy) => canopy.clone(),
        Err(refusal) => return refusal.into_response(),
    };
    let answered = async {
        let (signed, body) = read_signed(&portal, request).await?;
        handle(portal.clone(), canopy.clone(), signed, body).await
    }
    .await;
    let (status, json) = match answered {
        Ok(json) => (StatusCode::OK, json),
        Err(refusal) => {
            canopy.remember_refusal(claimed, &path, refusal.to_string());
            let (status, _) = refusal.status();
            (status, refusal.to_json())
        }
    };
    let body = serde_json::to_vec(&json).unwrap_or_default();
    let mut response = (status, [(axum::http::header::CONTENT_TYPE, "application/json")], body.clone()).into_response();
    if let (Some(asker), Some(nonce)) = (asker, nonce) {
        let answer = seed_format::canopy::CanopyAnswer::new(canopy.land(), asker, nonce, status.as_u16(), &body);
        if let Ok(signature) = answer.sign(&canopy.signer.key) {
            if let Ok(value) = axum::http::HeaderValue::from_str(&hex::encode(signature)) {
                response.headers_mut().insert(crate::canopy_http::HEADER_ANSWER_SIGNATURE, value);
            }
        }
    }
    response
}

/// `POST /canopy/v1/hello {"url": …}`: the handshake. A peer is greeted
/// back; a stranger is proven and recorded when the land accepts first
/// contact, and refused otherwise.
pub(super) async fn hello(State(portal): State<Arc<Portal>>, request: Request) -> Response {
    answer_signed(portal, request, |portal, canopy, signed, body| async move {
        let said = body_json(&body)?;
        let url = said["url"]
            .as_str()
            .ok_or(CanopyRefusal::BadBody { what: "a hello", reason: "`url` is missing".into() })
            .and_then(|url| {
                normalize_peer_url(url)
                    .map_err(|error| CanopyRefusal::BadBody { what: "a hello", reason: error.to_string() })
            })?;
        if portal.live.world().canopy.peers.contains_key(&signed.request.from) {
            admit_peer(&portal, &canopy, &signed, &body).await?;
            heard_from(&portal, &canopy, signed.request.from).await?;
        } else {
            first_contact(&portal, &canopy, &signed, &body, &url).await?;
        }
        Ok(json!({"ok": true, "land": canopy.land().to_hex(), "keySeq": canopy.key_seq}))
    })
    .await
}

/// `POST /canopy/v1/heartbeat`: a peer asks whether this land is there.
pub(super) async fn heartbeat(State(portal): State<Arc<Portal>>, request: Request) -> Response {
    answer_signed(portal, request, |portal, canopy, signed, body| async move {
        admit_peer(&portal, &canopy, &signed, &body).await?;
        Ok(json!({"ok": true, "land": canopy.land().to_hex(), "keySeq": canopy.key_seq}))
    })
    .await
}

/// What one heartbeat (or hello) to a peer found.
struct Beat {
    land: BeingId,
    answered: bool,
    reason: String,
    key_seq: Option<u64>,
    /// Its answer was not signed by the key the peer is known by.
    unsigned: bool,
}

async fn beat(canopy: &Canopy, land: BeingId, url: &str, key: &PublicKeyBytes, path: &str, timeout: Duration) -> Beat {
    let body = json!({"url": canopy.url()});
    let call = Call { to: land, url, path, timeout, answer_bytes_max: CANOPY_ANSWER_BYTES_MAX, answer_key: key.0 };
    match signed_post(&canopy.client, &canopy.signer, call, &body).await {
        Ok(answer) => {
            Beat { land, answered: true, reason: String::new(), key_seq: answer["keySeq"].as_u64(), unsigned: false }
        }
        Err(error) => {
            let unsigned = matches!(error, PeerCallError::UnsignedAnswer { .. });
            Beat { land, answered: false, reason: error.to_string(), key_seq: None, unsigned }
        }
    }
}

/// Counts a beat and decides whether to record the heartbeats now: on a
/// change of status, or when `per_record` have been counted.
fn count_beat(canopy: &Canopy, recorded: PeerStatus, beat: &Beat, per_record: u64) -> Option<PeerHeartbeats> {
    let mut beats = canopy.beats.lock().unwrap_or_else(|p| p.into_inner());
    let counted = beats.entry(beat.land).or_default();
    if beat.answered {
        counted.answered += 1;
    } else {
        counted.missed += 1;
        counted.reason = bounded_reason(&beat.reason);
    }
    let status = if beat.answered { PeerStatus::Up } else { PeerStatus::Down };
    if status == recorded && counted.answered + counted.missed < per_record {
        return None;
    }
    let counted = std::mem::take(counted);
    let reason = if beat.answered { String::new() } else { counted.reason };
    Some(PeerHeartbeats { land: beat.land, status, answered: counted.answered, missed: counted.missed, reason })
}

/// One heartbeat to every peer (a hello to one not greeted yet), the
/// results recorded as [`count_beat`] decides, and a peer's key rotation
/// (its answer names a newer key) proven and recorded.
pub async fn heartbeat_round(portal: &Arc<Portal>) {
    let Some(canopy) = portal.canopy.clone() else { return };
    if portal.live.following().is_some() {
        return;
    }
    let world = portal.live.world();
    let limits = CanopyLimits::in_world(&world);
    let timeout = Duration::from_millis(limits.peer_timeout_ms);
    let peers: Vec<(BeingId, crate::canopy::Peer)> =
        world.canopy.peers.iter().map(|(land, peer)| (*land, peer.clone())).collect();
    drop(world);
    let beats = futures_util::future::join_all(peers.iter().map(|(land, peer)| {
        let path = if peer.status == PeerStatus::New { CANOPY_HELLO_PATH } else { CANOPY_HEARTBEAT_PATH };
        beat(&canopy, *land, &peer.url, &peer.key, path, timeout)
    }))
    .await;
    let mut effects = Vec::new();
    for ((land, peer), beat) in peers.iter().zip(&beats) {
        if let Some(record) = count_beat(&canopy, peer.status, beat, limits.heartbeats_per_record_max) {
            effects.push(Effect::PeerHeartbeats { beats: record });
        }
        // A newer key named, or an answer its recorded key did not sign:
        // the peer's history may prove a rotation.
        if beat.unsigned || beat.key_seq.is_some_and(|seq| seq > peer.key_seq) {
            if let Err(refusal) = key_after_rotation(portal, &canopy, *land).await {
                tracing::warn!(target: "seed::canopy", peer = %land, reason = %refusal, "a peer's new key is not proven");
            }
        }
    }
    let _changing = canopy.changing.lock().await;
    // A peer removed while its heartbeat was out is not recorded again.
    let world = portal.live.world();
    effects.retain(|effect| match effect {
        Effect::PeerHeartbeats { beats } => world.canopy.peers.contains_key(&beats.land),
        _ => true,
    });
    drop(world);
    if !effects.is_empty() {
        if let Err(refusal) = seal(portal, effects).await {
            tracing::warn!(target: "seed::canopy", reason = %refusal, "heartbeats not recorded");
        }
    }
}

/// Heartbeats every `canopy_heartbeat_ms` (read before each wait) until the portal stops.
pub fn start_heartbeats(portal: Arc<Portal>) {
    every_until_stopped(
        portal,
        |portal| limits(portal).heartbeat_ms,
        |portal| async move { heartbeat_round(&portal).await },
    );
}

/// Runs `work` after each wait of `wait_ms` milliseconds (read before each
/// wait) until the portal stops; nothing when the land speaks to no other.
pub(super) fn every_until_stopped<F, Fut>(portal: Arc<Portal>, wait_ms: fn(&Portal) -> u64, work: F)
where
    F: Fn(Arc<Portal>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    if portal.canopy.is_none() {
        return;
    }
    let mut stopped = portal.shutdown.clone();
    tokio::spawn(async move {
        loop {
            let wait = Duration::from_millis(wait_ms(&portal));
            tokio::select! {
                _ = tokio::time::sleep(wait) => work(portal.clone()).await,
                _ = stopped.changed() => return,
            }
        }
    });
}

/// Adds the land at `url` as a peer (the operator's act, from the peers
/// page or the API): proven, recorded, then greeted at once; the answer
/// says how the greeting went.
pub(super) async fn add_peer(portal: &Arc<Portal>, url: &str) -> Result<Json, PortalError> {
    let canopy = canopy_of(portal).map_err(refusal_for_people)?.clone();
    let url = normalize_peer_url(url).map_err(|error| PortalError::field("url", error.to_string()))?;
    let limits = limits(portal);
    let timeout = Duration::from_millis(limits.peer_timeout_ms);
    let identity = fetch_identity(&canopy.client, &url, timeout)
        .await
        .map_err(|error| PortalError::field("url", error.to_string()))?;
    let added: PeerAdded = {
        let _changing = canopy.changing.lock().await;
        let added = canopy.decide_added(portal, &identity, PeerOrigin::Added).map_err(|refusal| match refusal {
            AddPeerRefusal::AlreadyPeer { .. } | AddPeerRefusal::UrlTaken { .. } => {
                PortalError::conflict(refusal.to_string())
            }
            other => PortalError::field("url", other.to_string()),
        })?;
        seal(portal, vec![Effect::PeerAdded { peer: added.clone() }]).await.map_err(refusal_for_people)?;
        added
    };
    let greeted = beat(&canopy, added.land, &url, &added.key, CANOPY_HELLO_PATH, timeout).await;
    let effects = count_beat(&canopy, PeerStatus::New, &greeted, limits.heartbeats_per_record_max)
        .map(|beats| vec![Effect::PeerHeartbeats { beats }])
        .unwrap_or_default();
    seal(portal, effects).await.map_err(refusal_for_people)?;
    let world = portal.live.world();
    let peer = world.canopy.peers.get(&added.land).map(|peer| peer_json(&added.land, peer)).unwrap_or(Json::Null);
    Ok(
        json!({"ok": true, "peer": peer, "greeted": greeted.answered, "reason": if greeted.answered { Json::Null } else { greeted.reason.into() }}),
    )
}

/// Removes a peer (named by its URL or land id): nothing from it is accepted after.
pub(super) async fn remove_peer(portal: &Arc<Portal>, named: &str) -> Result<Json, PortalError> {
    let canopy = canopy_of(portal).map_err(refusal_for_people)?.clone();
    let _changing = canopy.changing.lock().await;
    let land = crate::canopy::peer_named(&portal.live.world().canopy, named)
        .map_err(|refusal| PortalError::not_found(refusal.to_string()))?;
    seal(portal, vec![Effect::PeerRemoved { land }]).await.map_err(refusal_for_people)?;
    canopy.beats.lock().unwrap_or_else(|p| p.into_inner()).remove(&land);
    Ok(json!({"ok": true, "removed": land.to_hex()}))
}

/// Starts or stops following a peer's facts into a mirror (named by its
/// URL or land id): the whole land, or one of its beings (`being`: its id,
/// or `@name`, which the peer resolves). Stopping keeps the mirror as it
/// stands.
pub(super) async fn set_following(
    portal: &Arc<Portal>,
    named: &str,
    being: Option<&str>,
    following: bool,
) -> Result<Json, PortalError> {
    let canopy = canopy_of(portal).map_err(refusal_for_people)?.clone();
    let world = portal.live.world();
    let land = crate::canopy::peer_named(&world.canopy, named)
        .map_err(|refusal| PortalError::not_found(refusal.to_string()))?;
    let being = match being {
        None => None,
        Some(given) => match BeingId::from_hex(given) {
            Some(id) => Some(id),
            None if given.starts_with('@') => {
                let peer =
                    world.canopy.peers.get(&land).cloned().ok_or_else(|| PortalError::not_found("no such peer"))?;
                Some(super::canopy_follow::remote_being_named(portal, &canopy, land, &peer, given).await?)
            }
            None => {
                return Err(PortalError::field(
                    "being",
                    format!("{given:?} is neither a being id (64 hex digits) nor a name (@name)"),
                ))
            }
        },
    };
    let _changing = canopy.changing.lock().await;
    let world = portal.live.world();
    let already = world.canopy.peers.get(&land).is_some_and(|peer| match &being {
        None => peer.following == following,
        Some(being) => peer.following_beings.contains(being) == following,
    });
    let land_seq = match already {
        true => None,
        false => Some(
            seal(portal, vec![Effect::PeerFollowed { land, following, being }]).await.map_err(refusal_for_people)?,
        ),
    };
    let mirror = match &being {
        None => crate::mirror::mirror_dir(portal.live.land_dir(), &land),
        Some(being) => crate::mirror::being_mirror_dir(portal.live.land_dir(), being),
    };
    Ok(json!({"ok": true, "land": land.to_hex(), "being": being.map(|being| being.to_hex()), "following": following,
        "landSeq": land_seq, "mirror": mirror.display().to_string()}))
}

/// A refusal met while the operator changes the peers, as the portal answers it.
fn refusal_for_people(refusal: CanopyRefusal) -> PortalError {
    match refusal {
        CanopyRefusal::Unavailable { .. } => PortalError::unavailable(refusal.to_string()),
        other => PortalError::bad_request(other.to_string()),
    }
}
