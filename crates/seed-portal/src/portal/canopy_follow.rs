//! Following another land (docs/canopy.md "Following a land"): a land that
//! follows a peer pulls the peer's facts in the peer's land order, from
//! where its mirror stands, checks every one itself (`seed_store::mirror`)
//! and keeps them in `LAND/mirrors/<land id>/`, a read-only land folder that
//! `seed verify`, `seed replay` and the mirror pages read as they read any land.
//!
//! Each pull is a signed request (`POST /canopy/v1/facts {from, lastId,
//! factsMax}`) whose answer is signed by the peer: the facts from land seq
//! `from`, or `diverged` when the peer no longer holds the fact the mirror
//! took last there (a land put back from an older copy). A diverged mirror
//! reads again from further back, doubling the distance, until both agree;
//! then every fact the peer holds is compared with the mirror's: the same
//! fact is a duplicate, a different fact at a seq the mirror holds is a
//! fork. A fork is kept as a proof in the mirror, shown to the peer
//! (`POST /canopy/v1/fork`, which keeps it as a `fork-shown` fact once it
//! has checked the signature), and following stops: two histories signed
//! by one key are never merged.

use super::canopy_routes::{
    admit_peer, answer_signed, body_json, canopy_of, every_until_stopped, limits, seal, Canopy, CanopyRefusal,
};
use super::Portal;
use crate::canopy::{ForkShown, Peer};
use crate::canopy_http::client::{fetch_identity, signed_post, Call};
use crate::canopy_http::{PeerCallError, CANOPY_FACTS_PATH, CANOPY_FORK_PATH};
use crate::fact::{BeingId, FactId};
use crate::limits::Limits;
use crate::mirror::{being_mirror_dir, check_reported_fork, mirror_dir, Mirror, MirrorCursor, MirrorError};
use crate::store::{Store, StoreError};
use crate::world::Effect;
use axum::extract::{Request, State};
use axum::response::Response;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Time between two pulls of the lands this land follows, in milliseconds.
pub const CANOPY_FOLLOW_POLL_MS: u64 = 500;
/// Facts a land sends in one answer to a follower, at most.
pub const CANOPY_FOLLOW_FACTS_PER_ANSWER_MAX: u64 = 4_096;
/// The bytes of one answer's facts (hex), at most: a follower reads up to
/// twice this, so the JSON around them always fits.
pub const CANOPY_FOLLOW_ANSWER_FACT_BYTES_MAX: usize = 8 * 1024 * 1024;
/// Requests one pull sends a peer before the others get their turn.
pub const CANOPY_FOLLOW_REQUESTS_PER_PULL_MAX: usize = 64;

/// Where following a peer stands, in this process.
#[derive(Debug, Clone, Default)]
struct FollowStatus {
    /// `starting`, `following`, `caught-up`, `diverged`, `forked` or `failed`.
    state: &'static str,
    /// The peer's facts the mirror has taken, and how many the peer holds.
    taken: u64,
    land_len: u64,
    reason: String,
    /// How far back a diverged mirror reads next.
    back: u64,
    forks: Vec<Json>,
}

/// What is followed: a land, and one of its beings (none: the whole land).
type Target = (BeingId, Option<BeingId>);

/// One followed land (or being): its mirror (opened on the first pull) and status.
#[derive(Default)]
struct Followed {
    mirror: Option<Arc<Mutex<Mirror>>>,
    status: FollowStatus,
}

/// The lands this process follows (memory only: what it follows is the
/// world's `following` flags, how far is each mirror's cursor).
#[derive(Default)]
pub struct FollowState {
    /// By land, and the one being followed (none: the whole land).
    followed: Mutex<BTreeMap<Target, Followed>>,
    /// One pull at a time.
    pulling: tokio::sync::Mutex<()>,
}

impl FollowState {
    fn with<R>(&self, target: Target, change: impl FnOnce(&mut Followed) -> R) -> R {
        let mut followed = self.followed.lock().unwrap_or_else(|p| p.into_inner());
        change(followed.entry(target).or_default())
    }

    /// Closes the mirrors of what is no longer followed.
    fn keep_only(&self, targets: &[Target]) {
        self.followed.lock().unwrap_or_else(|p| p.into_inner()).retain(|target, _| targets.contains(target));
    }

    /// How following `target` stands, for the peers page and API (null: not
    /// followed since this process started).
    pub fn status_json(&self, target: &Target) -> Json {
        let followed = self.followed.lock().unwrap_or_else(|p| p.into_inner());
        let Some(status) = followed.get(target).map(|followed| &followed.status) else { return Json::Null };
        json!({
            "state": status.state,
            "taken": status.taken,
            "landLen": status.land_len,
            "reason": if status.reason.is_empty() { Json::Null } else { status.reason.clone().into() },
            "forks": status.forks,
        })
    }
}

/// Why a fact another land delivers disagrees with this land's mirror of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum MirrorDisagrees {
    #[error("{being} seq {seq} differs from the fact this land's mirror of land {from} holds there ({held}): that land signed two histories")]
    TwoHistories { being: BeingId, seq: u64, from: BeingId, held: FactId },
    #[error("{being} seq {seq} does not continue its reel as this land's mirror of land {from} holds it: its prev is not {before}")]
    BrokenLink { being: BeingId, seq: u64, from: BeingId, before: FactId },
}

impl FollowState {
    /// What this land's mirrors of `from` (the land, or the being) say of
    /// `fact`, a fact of one of its beings that `from` delivers: nothing
    /// when no mirror holds its seq or the one before; an error naming why
    /// when a mirror holds a different fact at its seq (the land signed two
    /// histories) or a different fact before it (its `prev` link breaks).
    pub(super) fn check_delivered(&self, from: BeingId, fact: &crate::fact::Fact) -> Result<(), MirrorDisagrees> {
        let (being, seq) = (fact.header.being, fact.header.seq);
        let mirrors: Vec<Arc<Mutex<Mirror>>> = {
            let followed = self.followed.lock().unwrap_or_else(|p| p.into_inner());
            [(from, None), (from, Some(being))]
                .iter()
                .filter_map(|target| followed.get(target).and_then(|followed| followed.mirror.clone()))
                .collect()
        };
        for mirror in mirrors {
            let mirror = mirror.lock().unwrap_or_else(|p| p.into_inner());
            let id_at = |seq: u64| {
                mirror
                    .store()
                    .reel(&being, seq, seq + 1)
                    .ok()
                    .and_then(|reel| reel.first().map(|stored| stored.fact.id()))
            };
            if let Some(held) = id_at(seq).filter(|held| *held != fact.id()) {
                return Err(MirrorDisagrees::TwoHistories { being, seq, from, held });
            }
            if let Some(before) = seq.checked_sub(1).and_then(id_at).filter(|before| *before != fact.header.prev) {
                return Err(MirrorDisagrees::BrokenLink { being, seq, from, before });
            }
        }
        Ok(())
    }
}

/// `POST /canopy/v1/facts {"from": N, "lastId": hex|null, "factsMax": N}`:
/// a peer that follows this land asks for its facts from land seq `from`
/// (`lastId` the id of the fact it took at `from - 1`). The answer holds
/// them as hex envelopes in land order, or says `diverged` when this land
/// does not hold that fact there.
pub(super) async fn facts(State(portal): State<Arc<Portal>>, request: Request) -> Response {
    answer_signed(portal, request, |portal, canopy, signed, body| async move {
        admit_peer(&portal, &canopy, &signed, &body).await?;
        // A land's facts are read whole by whoever follows it: only a land
        // the operator added may, never one that came by first contact.
        let from_land = signed.request.from;
        if !portal.live.world().canopy.added_by_operator(&from_land) {
            return Err(CanopyRefusal::NotFollowable { land: from_land });
        }
        let asked = body_json(&body)?;
        let bad = |reason: &str| CanopyRefusal::BadBody { what: "a request for facts", reason: reason.to_string() };
        let from = asked["from"].as_u64().ok_or_else(|| bad("`from` is not a land seq"))?;
        let last = match &asked["lastId"] {
            Json::Null => None,
            given => Some(given.as_str().and_then(FactId::from_hex).ok_or_else(|| bad("`lastId` is not a fact id"))?),
        };
        if from > 0 && last.is_none() {
            return Err(bad("`lastId` must name the fact at land seq `from - 1`"));
        }
        let most = asked["factsMax"].as_u64().unwrap_or(CANOPY_FOLLOW_FACTS_PER_ANSWER_MAX);
        let most = most.clamp(1, CANOPY_FOLLOW_FACTS_PER_ANSWER_MAX);
        let being = match &asked["being"] {
            Json::Null => None,
            given => Some(given.as_str().ok_or_else(|| bad("`being` is not a being id or @name"))?.to_string()),
        };
        let store = portal.live.store_shared();
        tokio::task::spawn_blocking(move || match being {
            None => facts_from(&*store, from, last, most)
                .map_err(|error| CanopyRefusal::Unavailable { reason: error.to_string() }),
            Some(being) => reel_facts_from(&*store, &being, from, last, most),
        })
        .await
        .map_err(|error| CanopyRefusal::Unavailable { reason: error.to_string() })?
    })
    .await
}

/// The answer to a follower: the facts from `from` if this land holds
/// `last` just before it.
fn facts_from(store: &dyn Store, from: u64, last: Option<FactId>, most: u64) -> Result<Json, StoreError> {
    let land_len = store.land_len()?;
    if let Some(last) = last {
        let held = match store.land_log(from - 1, from)?.first() {
            Some(entry) => store.fact_at(entry)?.map(|stored| stored.fact.id()),
            None => None,
        };
        if held != Some(last) {
            return Ok(json!({"diverged": true, "landLen": land_len, "heldId": held.map(|held| held.to_hex())}));
        }
    }
    let to = from.saturating_add(most).min(land_len);
    let read = if from < to { store.land_log_with_envelopes(from, to)? } else { Vec::new() };
    // Only the part of the log with no hole in it: a fact being made
    // durable may leave its land seq empty for a moment, and the follower
    // counts the facts it is sent from `from`.
    let envelopes = (from..)
        .zip(read)
        .take_while(|(expected, (entry, _))| entry.land_seq == *expected)
        .map(|(_, (_, envelope))| envelope);
    Ok(json!({"from": from, "landLen": land_len, "facts": hex_within_answer(envelopes)}))
}

/// The answer to a follower of one being (`being`: its id, or `@name`):
/// the being's facts from its seq `from` if its reel holds `last` just
/// before it; `landLen` is then the reel's length.
fn reel_facts_from(
    store: &dyn Store,
    being: &str,
    from: u64,
    last: Option<FactId>,
    most: u64,
) -> Result<Json, CanopyRefusal> {
    let failed = |error: StoreError| CanopyRefusal::Unavailable { reason: error.to_string() };
    let unknown =
        || CanopyRefusal::BadBody { what: "a request for facts", reason: format!("no being {being} on this land") };
    let id = match (BeingId::from_hex(being), being.strip_prefix('@')) {
        (Some(id), _) => id,
        (None, Some(name)) => match store.beings_named(name).map_err(failed)?.as_slice() {
            [id] => *id,
            _ => return Err(unknown()),
        },
        (None, None) => return Err(unknown()),
    };
    let Some(head) = store.head(&id).map_err(failed)? else { return Err(unknown()) };
    let reel_len = head.seq + 1;
    if let Some(last) = last {
        let held = store.reel(&id, from - 1, from).map_err(failed)?.first().map(|stored| stored.fact.id());
        if held != Some(last) {
            return Ok(json!({"diverged": true, "landLen": reel_len, "being": id.to_hex()}));
        }
    }
    let to = from.saturating_add(most).min(reel_len);
    let reel = if from < to { store.reel(&id, from, to).map_err(failed)? } else { Vec::new() };
    let envelopes = reel.iter().map(|stored| stored.fact.encode_envelope());
    Ok(json!({"from": from, "landLen": reel_len, "being": id.to_hex(), "facts": hex_within_answer(envelopes)}))
}

/// The envelopes as hex, in order, as many as fit in
/// `CANOPY_FOLLOW_ANSWER_FACT_BYTES_MAX` (always the first).
fn hex_within_answer(envelopes: impl Iterator<Item = Vec<u8>>) -> Vec<Json> {
    let mut facts = Vec::new();
    let mut bytes = 0;
    for envelope in envelopes {
        if bytes + envelope.len() * 2 > CANOPY_FOLLOW_ANSWER_FACT_BYTES_MAX && !facts.is_empty() {
            break;
        }
        bytes += envelope.len() * 2;
        facts.push(Json::String(hex::encode(envelope)));
    }
    facts
}

/// The id of the peer's being `name` (`@name`), as the peer answers a
/// follower's first request for its facts.
pub(super) async fn remote_being_named(
    portal: &Arc<Portal>,
    canopy: &Canopy,
    land: BeingId,
    peer: &Peer,
    name: &str,
) -> Result<BeingId, super::error::PortalError> {
    let timeout = Duration::from_millis(limits(portal).peer_timeout_ms);
    let asked =
        ask_for_facts(canopy, (land, None), &peer.url, peer.key.0, timeout, MirrorCursor::default(), Some(name));
    let not_said = |why: String| super::error::PortalError::field("being", why);
    let (_, answer) = asked
        .await
        .map_err(|error| not_said(format!("land {} could not say who {name} is: {error}", land.to_hex())))?;
    answer["being"]
        .as_str()
        .and_then(BeingId::from_hex)
        .ok_or_else(|| not_said(format!("land {} did not name {name}'s id", land.to_hex())))
}

/// `POST /canopy/v1/fork {"envelope": hex}`: a peer shows this land a fact
/// of one of its beings that differs from the one it holds at that seq.
/// Kept as a `fork-shown` fact only if the key the being had there signed it.
pub(super) async fn fork(State(portal): State<Arc<Portal>>, request: Request) -> Response {
    answer_signed(portal, request, |portal, canopy, signed, body| async move {
        admit_peer(&portal, &canopy, &signed, &body).await?;
        let shown = body_json(&body)?;
        let envelope = shown["envelope"].as_str().and_then(|text| hex::decode(text).ok()).ok_or_else(|| {
            CanopyRefusal::BadBody { what: "a fork", reason: "`envelope` is not a hex fact envelope".into() }
        })?;
        let store = portal.live.store_shared();
        let checked = envelope.clone();
        let fork = tokio::task::spawn_blocking(move || check_reported_fork(&*store, &checked))
            .await
            .map_err(|error| CanopyRefusal::Unavailable { reason: error.to_string() })??;
        let shown = ForkShown {
            being: fork.being,
            seq: fork.seq,
            held: fork.held,
            shown: fork.reported,
            by: signed.request.from,
            envelope,
        };
        let _changing = canopy.changing.lock().await;
        let known = portal.live.world().canopy.forks_shown.iter().find_map(|(land_seq, kept)| {
            (kept.held == shown.held && kept.shown == shown.shown).then_some(*land_seq)
        });
        let land_seq = match known {
            Some(land_seq) => land_seq,
            None => {
                tracing::warn!(target: "seed::canopy", being = %shown.being, seq = shown.seq, by = %shown.by, "another land showed a fork of this land's reel");
                seal(&portal, vec![Effect::ForkShown { fork: shown }]).await?
            }
        };
        Ok(json!({"ok": true, "landSeq": land_seq, "known": known.is_some()}))
    })
    .await
}

/// Pulls every followed land now and then.
pub fn start_following(portal: Arc<Portal>) {
    every_until_stopped(portal, |_| CANOPY_FOLLOW_POLL_MS, |portal| async move { follow_round(&portal).await });
}

/// One pull of each followed land and being (by the runner only: a process
/// that follows this live land does not write its mirrors).
pub async fn follow_round(portal: &Arc<Portal>) {
    let Ok(canopy) = canopy_of(portal).cloned() else { return };
    if portal.live.following().is_some() {
        return;
    }
    let _one = canopy.follows.pulling.lock().await;
    let world = portal.live.world();
    let mut followed: Vec<(Target, Peer)> = Vec::new();
    for (land, peer) in &world.canopy.peers {
        if peer.following {
            followed.push(((*land, None), peer.clone()));
        }
        for being in &peer.following_beings {
            followed.push(((*land, Some(*being)), peer.clone()));
        }
    }
    canopy.follows.keep_only(&followed.iter().map(|(target, _)| *target).collect::<Vec<_>>());
    for (target, peer) in followed {
        if let Err(failure) = pull(portal, &canopy, target, &peer).await {
            canopy.follows.with(target, |followed| {
                followed.status.state = "failed";
                followed.status.reason = failure.to_string();
            });
        }
    }
}

/// Why a pull stopped.
#[derive(Debug, thiserror::Error)]
enum PullFailure {
    #[error(transparent)]
    Call(#[from] PeerCallError),
    #[error(transparent)]
    Mirror(#[from] MirrorError),
    #[error("land {land} at {url} is land {found}")]
    OtherLand { land: BeingId, url: String, found: BeingId },
    #[error("its answer is not what a land answers: {reason}")]
    Malformed { reason: String },
    #[error("{0}")]
    Interrupted(String),
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, PullFailure> {
    tokio::task::spawn_blocking(work).await.map_err(|error| PullFailure::Interrupted(error.to_string()))
}

/// The mirror of `land`, opened on the first pull (its operator is what the
/// land's identity says).
async fn mirror_of(
    portal: &Arc<Portal>,
    canopy: &Canopy,
    target: Target,
    peer: &Peer,
) -> Result<Arc<Mutex<Mirror>>, PullFailure> {
    if let Some(mirror) = canopy.follows.with(target, |followed| followed.mirror.clone()) {
        return Ok(mirror);
    }
    let land = target.0;
    let timeout = Duration::from_millis(limits(portal).peer_timeout_ms);
    let identity = fetch_identity(&canopy.client, &peer.url, timeout).await?;
    if identity.land != land {
        return Err(PullFailure::OtherLand { land, url: peer.url.clone(), found: identity.land });
    }
    let operator =
        identity.operator.ok_or_else(|| PullFailure::Malformed { reason: "its identity names no operator".into() })?;
    let url = peer.url.clone();
    let land_dir = portal.live.land_dir().to_path_buf();
    let mirror = blocking(move || match target.1 {
        None => Mirror::open(&mirror_dir(&land_dir, &land), land, operator, &url, &Limits::default()),
        Some(being) => Mirror::open_being(&being_mirror_dir(&land_dir, &being), land, being, &url, &Limits::default()),
    })
    .await??;
    // A mirror that met a fork before stays stopped (the proof is in its store).
    let forks: Vec<Json> = mirror
        .store()
        .fork_proofs(None)
        .map_err(MirrorError::from)?
        .iter()
        .map(|proof| {
            json!({"being": proof.being.to_hex(), "seq": proof.seq, "kept": proof.kept.to_hex(),
                "rival": proof.rival.to_hex(), "shown": {"refused": "shown (or not) by an earlier process"}})
        })
        .collect();
    let mirror = Arc::new(Mutex::new(mirror));
    canopy.follows.with(target, |followed| {
        followed.mirror = Some(mirror.clone());
        followed.status.taken = mirror.lock().unwrap_or_else(|p| p.into_inner()).cursor().taken;
        if forks.is_empty() {
            followed.status.state = "following";
        } else {
            followed.status.state = "forked";
            followed.status.reason =
                format!("this mirror holds {} fork proof(s): following stays stopped", forks.len());
            followed.status.forks = forks;
        }
    });
    Ok(mirror)
}

/// Pulls `land`'s facts into its mirror until the mirror has them all (or
/// `CANOPY_FOLLOW_REQUESTS_PER_PULL_MAX` requests were sent).
async fn pull(portal: &Arc<Portal>, canopy: &Arc<Canopy>, target: Target, peer: &Peer) -> Result<(), PullFailure> {
    let land = target.0;
    if canopy.follows.with(target, |followed| followed.status.state == "forked") {
        return Ok(());
    }
    let mirror = mirror_of(portal, canopy, target, peer).await?;
    if canopy.follows.with(target, |followed| followed.status.state == "forked") {
        return Ok(());
    }
    let timeout = Duration::from_millis(limits(portal).peer_timeout_ms);
    let ask = |cursor: MirrorCursor| {
        let (canopy, url, key) = (canopy.clone(), peer.url.clone(), peer.key.0);
        let being = target.1.map(|being| being.to_hex());
        tokio::spawn(async move { ask_for_facts(&canopy, target, &url, key, timeout, cursor, being.as_deref()).await })
    };
    // The next batch is asked for while this one is checked and kept (the
    // land serves it while this land verifies): the request is named by
    // the last fact of this batch, so a batch that is refused only wastes
    // the answer to the next.
    let mut asked = ask(mirror.lock().unwrap_or_else(|p| p.into_inner()).cursor());
    for _ in 0..CANOPY_FOLLOW_REQUESTS_PER_PULL_MAX {
        let (cursor, answer) = asked.await.map_err(|error| PullFailure::Interrupted(error.to_string()))??;
        let land_len = answer["landLen"].as_u64().unwrap_or_default();
        if answer["diverged"] == Json::Bool(true) {
            let back = canopy.follows.with(target, |followed| {
                followed.status.back = (followed.status.back * 2).max(1);
                followed.status.state = "diverged";
                followed.status.land_len = land_len;
                followed.status.reason = format!(
                    "the land no longer holds the fact this mirror took at its land seq {} (put back from an older copy?): reading again from further back",
                    cursor.taken.saturating_sub(1)
                );
                followed.status.back
            });
            let rewound = mirror.clone();
            let cursor = blocking(move || {
                let mut mirror = rewound.lock().unwrap_or_else(|p| p.into_inner());
                mirror.rewind_to(cursor.taken.saturating_sub(back)).map(|()| mirror.cursor())
            })
            .await??;
            asked = ask(cursor);
            continue;
        }
        let envelopes = answer["facts"]
            .as_array()
            .and_then(|facts| {
                facts
                    .iter()
                    .map(|fact| fact.as_str().and_then(|text| hex::decode(text).ok()))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| PullFailure::Malformed { reason: "`facts` is not a list of hex envelopes".into() })?;
        if envelopes.is_empty() {
            canopy.follows.with(target, |followed| {
                followed.status = FollowStatus {
                    state: "caught-up",
                    taken: cursor.taken,
                    land_len,
                    forks: std::mem::take(&mut followed.status.forks),
                    ..FollowStatus::default()
                };
            });
            return Ok(());
        }
        let from = cursor.taken;
        let last =
            envelopes.last().and_then(|last| crate::fact::Fact::decode_envelope(last).ok()).map(|fact| fact.id());
        asked = ask(MirrorCursor { taken: from + envelopes.len() as u64, last: last.or(cursor.last) });
        let taking = mirror.clone();
        let taken = blocking(move || taking.lock().unwrap_or_else(|p| p.into_inner()).take(from, &envelopes)).await??;
        let now_taken = mirror.lock().unwrap_or_else(|p| p.into_inner()).cursor().taken;
        canopy.follows.with(target, |followed| {
            followed.status.state = "following";
            followed.status.taken = now_taken;
            followed.status.land_len = land_len;
            followed.status.reason.clear();
            followed.status.back = 0;
        });
        if !taken.forks.is_empty() {
            let mut forks = Vec::new();
            for fork in &taken.forks {
                let shown = show_fork(canopy, land, peer, timeout, &fork.kept_envelope).await;
                forks.push(json!({
                    "being": fork.being.to_hex(),
                    "seq": fork.seq,
                    "kept": fork.kept.to_hex(),
                    "rival": fork.rival.to_hex(),
                    "shown": shown,
                }));
            }
            tracing::warn!(target: "seed::canopy", %land, forks = forks.len(), "a followed land signed two histories: following stopped");
            canopy.follows.with(target, |followed| {
                followed.status.state = "forked";
                followed.status.reason = format!(
                    "the land signed a fact that differs from one this mirror holds at the same seq of {} reel(s): both are kept as a fork proof, and following stopped",
                    forks.len()
                );
                followed.status.forks = forks;
            });
            return Ok(());
        }
    }
    Ok(())
}

/// Asks the land for its facts after `cursor`; the answer with the cursor it answers.
async fn ask_for_facts(
    canopy: &Canopy,
    target: Target,
    url: &str,
    key: [u8; 32],
    timeout: Duration,
    cursor: MirrorCursor,
    being: Option<&str>,
) -> Result<(MirrorCursor, Json), PullFailure> {
    let land = target.0;
    let asked = json!({
        "from": cursor.taken,
        "lastId": cursor.last.map(|last| last.to_hex()),
        "factsMax": CANOPY_FOLLOW_FACTS_PER_ANSWER_MAX,
        "being": being,
    });
    let call = Call {
        to: land,
        url,
        path: CANOPY_FACTS_PATH,
        timeout,
        answer_bytes_max: CANOPY_FOLLOW_ANSWER_FACT_BYTES_MAX * 2,
        answer_key: key,
    };
    let answer = signed_post(&canopy.client, &canopy.signer, call, &asked).await?;
    tracing::debug!(target: "seed::canopy", %land, from = cursor.taken, land_len = %answer["landLen"],
        diverged = answer["diverged"] == Json::Bool(true), facts = answer["facts"].as_array().map_or(0, Vec::len), "pulled");
    Ok((cursor, answer))
}

/// Shows the land a fork of one of its reels; says what it answered.
async fn show_fork(canopy: &Canopy, land: BeingId, peer: &Peer, timeout: Duration, envelope: &[u8]) -> Json {
    let call = Call {
        to: land,
        url: &peer.url,
        path: CANOPY_FORK_PATH,
        timeout,
        answer_bytes_max: crate::canopy_http::CANOPY_IDENTITY_BYTES_MAX,
        answer_key: peer.key.0,
    };
    match signed_post(&canopy.client, &canopy.signer, call, &json!({"envelope": hex::encode(envelope)})).await {
        Ok(answer) => json!({"recordedAt": answer["landSeq"]}),
        Err(error) => json!({"refused": error.to_string()}),
    }
}
