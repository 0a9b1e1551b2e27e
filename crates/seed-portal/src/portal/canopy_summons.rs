//! Summons between lands (docs/canopy.md): a summons a being of this land
//! sealed for `@name@LAND` waits in the world's outbox until it is
//! delivered (or given up), and a summons another land delivers is
//! verified and sealed as an arrival, or refused with its reason.
//!
//! Delivery carries each sealed fact itself, with its being's key history
//! (genesis and rotations), in a request signed by this land, up to
//! `CANOPY_SUMMONS_PER_DELIVERY_MAX` in one request, whose arrivals the
//! receiver seals as facts made durable together (one group commit). Each
//! peer's summons go in land-seq order:
//! the first that cannot be delivered now holds the ones after it (ordered
//! per sender), and is tried
//! again after a backoff that doubles from `CANOPY_DELIVERY_BACKOFF_MS_MIN`
//! to `CANOPY_DELIVERY_BACKOFF_MS_MAX`. What the receiver took is recorded
//! (`summons-delivered`, with its receipt); what it refused for good, or
//! what waited past `canopy_undelivered_retention_ms`, is recorded as
//! undelivered with the reason. A delivery whose record was lost (a crash
//! between the two) is delivered again and answered as a duplicate: the
//! receiver takes a being's facts by seq, so nothing arrives twice.

use super::canopy_routes::{
    admit_peer, answer_signed, body_json, canopy_of, every_until_stopped, limits, seal_each, Canopy, CanopyRefusal,
};
use super::Portal;
use crate::canopy::{bounded_reason, decide_arrival, ArrivalVerdict, ArrivalsSoFar, CanopyLimits, Outgoing};
use crate::canopy_http::client::{signed_post, Call};
use crate::canopy_http::guard::PeerRates;
use crate::canopy_http::{wall_clock_ms, PeerCallError, CANOPY_SUMMONS_PATH};
use crate::fact::body::{KIND_GENESIS, KIND_MOVE, KIND_ROTATE_KEY};
use crate::fact::BeingId;
use crate::world::Effect;
use axum::extract::{Request, State};
use axum::response::Response;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Time between two looks at the outbox, in milliseconds.
pub const CANOPY_DELIVERY_POLL_MS: u64 = 200;
/// The first wait after a delivery that failed for now, in milliseconds.
pub const CANOPY_DELIVERY_BACKOFF_MS_MIN: u64 = 250;
/// The longest wait between two tries of one peer, in milliseconds.
pub const CANOPY_DELIVERY_BACKOFF_MS_MAX: u64 = 60_000;
/// Summons delivered to one peer in one look at the outbox (the rest wait
/// for the next look, so one busy peer never holds the others long).
pub const CANOPY_DELIVERIES_PER_LOOK_MAX: usize = 256;
/// Summons in one delivery (one signed request; their arrivals one group commit).
pub const CANOPY_SUMMONS_PER_DELIVERY_MAX: usize = 64;
/// Delivery records (delivered, undelivered) sealed in one fact: each
/// carries a reason of at most `CANOPY_REASON_BYTES_MAX`, so a fact stays
/// far below the land's fact body limit.
pub const CANOPY_DELIVERY_RECORDS_PER_FACT_MAX: usize = 16;
/// Facts of a being's reel read at once while its key history is gathered.
const KEY_HISTORY_FACTS_PER_READ: u64 = 4_096;

/// A peer's backoff: when it may be tried again and how long the next wait is.
#[derive(Debug, Clone, Copy)]
struct Backoff {
    until_ms: u64,
    next_ms: u64,
}

/// A being's key history gathered so far: its genesis and rotations, and
/// how far its reel was read.
#[derive(Debug, Default, Clone)]
struct KeyScan {
    read_to: u64,
    history: Vec<(u64, Vec<u8>)>,
}

/// What this process keeps for summons between lands (memory only).
#[derive(Default)]
pub struct SummonsState {
    rates: Mutex<PeerRates>,
    backoff: Mutex<BTreeMap<BeingId, Backoff>>,
    keys: Mutex<BTreeMap<BeingId, KeyScan>>,
    /// One look at the outbox at a time.
    delivering: tokio::sync::Mutex<()>,
}

/// `POST /canopy/v1/summons {"summons": [{"fact": hex, "keys": [hex, …]}, …]}`:
/// a peer delivers summons of its beings, in its order (at most
/// `CANOPY_SUMMONS_PER_DELIVERY_MAX`). Each is decided in turn; what is
/// taken and what is refused is sealed (a fact each, made durable together);
/// the answer says, item
/// by item, `{receipt, duplicate}`, `{refused}` or `{wait}` (a summons
/// that waits holds the ones after it, which wait too).
pub(super) async fn summons(State(portal): State<Arc<Portal>>, request: Request) -> Response {
    answer_signed(portal, request, |portal, canopy, signed, body| async move {
        admit_peer(&portal, &canopy, &signed, &body).await?;
        let from = signed.request.from;
        let limits = limits(&portal);
        let delivered = body_json(&body)?;
        let bad = |reason: String| CanopyRefusal::BadBody { what: "a summons delivery", reason };
        let items = delivered["summons"].as_array().ok_or_else(|| bad("`summons` is not a list".into()))?;
        if items.is_empty() || items.len() > CANOPY_SUMMONS_PER_DELIVERY_MAX {
            return Err(bad(format!(
                "a delivery carries 1 to {CANOPY_SUMMONS_PER_DELIVERY_MAX} summons, not {}",
                items.len()
            )));
        }
        let mut read = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let hex_of = |text: &Json| text.as_str().and_then(|text| hex::decode(text).ok());
            let fact = hex_of(&item["fact"]).ok_or_else(|| bad(format!("summons {index}: `fact` is not hex")))?;
            let keys = item["keys"]
                .as_array()
                .and_then(|keys| keys.iter().map(hex_of).collect::<Option<Vec<Vec<u8>>>>())
                .ok_or_else(|| bad(format!("summons {index}: `keys` is not a list of hex")))?;
            read.push((fact, keys));
        }
        // What this land's mirrors of the sender say of each fact (a
        // different fact at its seq, or before it), before anything is decided.
        let mirrored: Vec<Result<(), super::canopy_follow::MirrorDisagrees>> = {
            let (canopy, facts) = (canopy.clone(), read.iter().map(|(fact, _)| fact.clone()).collect::<Vec<_>>());
            tokio::task::spawn_blocking(move || {
                facts
                    .iter()
                    .map(|envelope| match crate::fact::Fact::decode_envelope(envelope) {
                        Ok(fact) => canopy.follows.check_delivered(from, &fact),
                        Err(_) => Ok(()),
                    })
                    .collect()
            })
            .await
            .map_err(|error| CanopyRefusal::Unavailable { reason: error.to_string() })?
        };
        // One delivery decided and sealed at a time: two deliveries of one
        // fact must not both arrive.
        let _changing = canopy.changing.lock().await;
        let world = portal.live.world();
        // Removed while this delivery waited for the lock: nothing from it now.
        if !world.canopy.peers.contains_key(&from) {
            return Err(CanopyRefusal::NotAPeer { land: from });
        }
        let mut so_far = ArrivalsSoFar::default();
        let (mut effects, mut results) = (Vec::new(), Vec::new());
        // Whether each result sealed a fact (an arrival or a refusal), in order.
        let mut decisions: Vec<bool> = Vec::new();
        let mut waiting: Option<String> = None;
        for ((fact, keys), mirrored) in read.iter().zip(&mirrored) {
            if let Some(reason) = &waiting {
                results.push(json!({"wait": reason}));
                decisions.push(false);
                continue;
            }
            let now_ms = wall_clock_ms();
            let rate = canopy.summons.rates.lock().unwrap_or_else(|p| p.into_inner()).admit(
                from,
                limits.summons_per_peer_per_minute_max,
                now_ms,
            );
            if let Err(refusal) = rate {
                let reason = refusal.to_string();
                results.push(json!({"wait": reason}));
                decisions.push(false);
                waiting = Some(reason);
                continue;
            }
            if let Err(reason) = mirrored {
                let decoded = crate::fact::Fact::decode_envelope(fact).ok();
                let refusal = crate::canopy::InboundRefusal {
                    land: from,
                    being: decoded.as_ref().map(|fact| fact.header.being),
                    seq: decoded.as_ref().map(|fact| fact.header.seq),
                    fact: decoded.as_ref().map(|fact| fact.id()),
                    reason: bounded_reason(&reason.to_string()),
                };
                results.push(json!({"refused": refusal.reason}));
                decisions.push(true);
                effects.push(Effect::SummonsRefused { refusal });
                continue;
            }
            match decide_arrival(&world, &so_far, canopy.land(), from, fact, keys, limits.summons_bytes_max) {
                ArrivalVerdict::Arrive(arrival) => {
                    so_far.add(&world, &arrival);
                    results.push(json!({"receipt": null, "duplicate": false}));
                    decisions.push(true);
                    effects.push(Effect::SummonsArrived { arrival });
                }
                ArrivalVerdict::Duplicate { receipt } => {
                    results.push(json!({"receipt": receipt, "duplicate": true}));
                    decisions.push(false);
                }
                ArrivalVerdict::Refuse(refusal) => {
                    results.push(json!({"refused": refusal.reason}));
                    decisions.push(true);
                    effects.push(Effect::SummonsRefused { refusal });
                }
                // Refused here, and the sender told where its target went.
                ArrivalVerdict::Moved { refusal, land } => {
                    results.push(json!({"refused": refusal.reason, "movedTo": land.to_hex()}));
                    decisions.push(true);
                    effects.push(Effect::SummonsRefused { refusal });
                }
                ArrivalVerdict::Wait { reason } => {
                    results.push(json!({"wait": reason}));
                    decisions.push(false);
                    waiting = Some(reason);
                }
            }
        }
        drop(world);
        // Each arrival is a fact of its own (an inbox holds one summons per
        // land seq), all made durable together; refusals go in with them.
        if !effects.is_empty() {
            let receipts = seal_each(&portal, effects.into_iter().map(|effect| vec![effect]).collect()).await?;
            let mut sealed = receipts.into_iter();
            for (result, decided) in results.iter_mut().zip(&decisions) {
                let receipt = if *decided { sealed.next() } else { None };
                if result["duplicate"] == Json::Bool(false) {
                    result["receipt"] = json!(receipt);
                }
            }
        }
        Ok(json!({"ok": true, "results": results}))
    })
    .await
}

/// Looks at the outbox every `CANOPY_DELIVERY_POLL_MS` until the portal stops.
pub fn start_deliveries(portal: Arc<Portal>) {
    every_until_stopped(portal, |_| CANOPY_DELIVERY_POLL_MS, |portal| async move { deliver(&portal).await });
}

/// One look at the outbox: each peer's waiting summons delivered in order.
pub async fn deliver(portal: &Arc<Portal>) {
    let Ok(canopy) = canopy_of(portal).cloned() else { return };
    if portal.live.following().is_some() {
        return;
    }
    let _delivering = canopy.summons.delivering.lock().await;
    let world = portal.live.world();
    if world.canopy.outbox.is_empty() {
        return;
    }
    let limits = CanopyLimits::in_world(&world);
    let mut by_land: BTreeMap<BeingId, Vec<Outgoing>> = BTreeMap::new();
    for outgoing in world.canopy.outbox.values() {
        by_land.entry(outgoing.delivered_to()).or_default().push(outgoing.clone());
    }
    let peers: BTreeMap<BeingId, (String, [u8; 32])> =
        world.canopy.peers.iter().map(|(land, peer)| (*land, (peer.url.clone(), peer.key.0))).collect();
    drop(world);
    let now_land_ms = portal.live.now_ms();
    for (land, waiting) in by_land {
        let now_ms = wall_clock_ms();
        let held = canopy.summons.backoff.lock().unwrap_or_else(|p| p.into_inner()).get(&land).copied();
        if held.is_some_and(|backoff| backoff.until_ms > now_ms) {
            continue;
        }
        let mut effects = Vec::new();
        let mut batch: Vec<Outgoing> = Vec::new();
        let mut held = false;
        for outgoing in waiting.into_iter().take(CANOPY_DELIVERIES_PER_LOOK_MAX) {
            let Some((url, key)) = peers.get(&land) else {
                let reason = format!("land {land} is no longer a peer of this land");
                effects.push(Effect::SummonsUndelivered { fact: outgoing.fact, land, reason });
                continue;
            };
            if outgoing.stored_time_ms.saturating_add(limits.undelivered_retention_ms) < now_land_ms {
                let reason = format!(
                    "not delivered within canopy_undelivered_retention_ms = {} ms",
                    limits.undelivered_retention_ms
                );
                effects.push(Effect::SummonsUndelivered { fact: outgoing.fact, land, reason });
                continue;
            }
            batch.push(outgoing);
            if batch.len() == CANOPY_SUMMONS_PER_DELIVERY_MAX {
                let full = std::mem::take(&mut batch);
                held = deliver_and_record(portal, &canopy, &limits, (url, *key), land, full, &mut effects).await;
                if held {
                    break;
                }
            }
        }
        if !held && !batch.is_empty() {
            if let Some((url, key)) = peers.get(&land) {
                deliver_and_record(portal, &canopy, &limits, (url, *key), land, batch, &mut effects).await;
            }
        }
        record(portal, land, std::mem::take(&mut effects)).await;
    }
}

/// Records `effects` (deliveries and give-ups), a few to a fact, the facts
/// made durable together. A failure is logged and the next peer is served:
/// what was not recorded is delivered again and answered as a duplicate.
async fn record(portal: &Arc<Portal>, land: BeingId, effects: Vec<Effect>) {
    if effects.is_empty() {
        return;
    }
    let facts = effects.chunks(CANOPY_DELIVERY_RECORDS_PER_FACT_MAX).map(<[Effect]>::to_vec).collect();
    if let Err(refusal) = seal_each(portal, facts).await {
        tracing::warn!(target: "seed::canopy", peer = %land, reason = %refusal, "deliveries not recorded (they are delivered again, as duplicates)");
    }
}

/// Delivers `batch` and records what it settled; a delivery too large for
/// the peer is tried again one summons at a time (only a summons too large
/// alone is given up). Returns whether the peer is held in backoff.
async fn deliver_and_record(
    portal: &Arc<Portal>,
    canopy: &Canopy,
    limits: &CanopyLimits,
    (url, key): (&str, [u8; 32]),
    land: BeingId,
    batch: Vec<Outgoing>,
    effects: &mut Vec<Effect>,
) -> bool {
    let alone = batch.len() == 1;
    match deliver_batch(portal, canopy, limits, (url, key), land, batch.clone(), effects).await {
        Outcome::Settled => false,
        Outcome::Held => true,
        Outcome::TooLarge(reason) if alone => {
            let fact = batch[0].fact;
            effects.push(Effect::SummonsUndelivered { fact, land, reason: bounded_reason(&reason) });
            false
        }
        Outcome::TooLarge(_) => {
            for outgoing in batch {
                match deliver_batch(portal, canopy, limits, (url, key), land, vec![outgoing.clone()], effects).await {
                    Outcome::Settled => {}
                    Outcome::Held => return true,
                    Outcome::TooLarge(reason) => effects.push(Effect::SummonsUndelivered {
                        fact: outgoing.fact,
                        land,
                        reason: bounded_reason(&reason),
                    }),
                }
            }
            false
        }
    }
}

/// How one delivery went.
enum Outcome {
    /// Each summons was taken or refused for good (in `effects`).
    Settled,
    /// One must wait, or the request failed: the peer is in backoff.
    Held,
    /// The peer refused the request as too large (413).
    TooLarge(String),
}

/// Delivers `batch` (summons to `land`, in order) in one request: each
/// one's sealed fact and its being's key history. What was taken or refused
/// for good goes into `effects`; the first that must wait (or a request
/// that failed) puts the peer in backoff.
async fn deliver_batch(
    portal: &Arc<Portal>,
    canopy: &Canopy,
    limits: &CanopyLimits,
    (url, key): (&str, [u8; 32]),
    land: BeingId,
    batch: Vec<Outgoing>,
    effects: &mut Vec<Effect>,
) -> Outcome {
    let hold = |reason: String| {
        let mut backoff = canopy.summons.backoff.lock().unwrap_or_else(|p| p.into_inner());
        let next_ms = backoff.get(&land).map_or(CANOPY_DELIVERY_BACKOFF_MS_MIN, |held| held.next_ms);
        let until_ms = wall_clock_ms().saturating_add(next_ms);
        backoff
            .insert(land, Backoff { until_ms, next_ms: next_ms.saturating_mul(2).min(CANOPY_DELIVERY_BACKOFF_MS_MAX) });
        tracing::info!(target: "seed::canopy", peer = %land, wait_ms = next_ms, %reason, "summons wait to be delivered");
        Outcome::Held
    };
    let read = {
        let portal = portal.clone();
        let wanted: Vec<(BeingId, u64)> = batch.iter().map(|outgoing| (outgoing.being, outgoing.seq)).collect();
        tokio::task::spawn_blocking(move || {
            wanted.iter().map(|(being, seq)| sealed_with_keys(&portal, *being, *seq)).collect::<Result<Vec<_>, _>>()
        })
        .await
    };
    let read = match read {
        Ok(Ok(read)) => read,
        Ok(Err(error)) => return hold(error.to_string()),
        Err(error) => return hold(format!("the reading task stopped: {error}")),
    };
    let items: Vec<Json> = read
        .iter()
        .map(
            |(fact, keys)| json!({"fact": hex::encode(fact), "keys": keys.iter().map(hex::encode).collect::<Vec<_>>()}),
        )
        .collect();
    let call = Call {
        to: land,
        url,
        path: CANOPY_SUMMONS_PATH,
        timeout: Duration::from_millis(limits.peer_timeout_ms),
        answer_bytes_max: super::canopy_routes::CANOPY_ANSWER_BYTES_MAX,
        answer_key: key,
    };
    let answer = match signed_post(&canopy.client, &canopy.signer, call, &json!({"summons": items})).await {
        Ok(answer) => answer,
        Err(PeerCallError::Refused { status: 413, message, .. }) => return Outcome::TooLarge(message),
        // The request itself can never pass (malformed, misdirected): each
        // summons in it is given up, saying why.
        Err(PeerCallError::Refused { status: 400 | 421, message, .. }) => {
            let reason = bounded_reason(&message);
            for outgoing in &batch {
                effects.push(Effect::SummonsUndelivered { fact: outgoing.fact, land, reason: reason.clone() });
            }
            return Outcome::Settled;
        }
        Err(other) => return hold(other.to_string()),
    };
    // The peer answered: the next failure starts its backoff afresh.
    canopy.summons.backoff.lock().unwrap_or_else(|p| p.into_inner()).remove(&land);
    let results = answer["results"].as_array().cloned().unwrap_or_default();
    for (index, outgoing) in batch.iter().enumerate() {
        let result = results.get(index).cloned().unwrap_or(Json::Null);
        if let Some(reason) = result["refused"].as_str() {
            match forwarded_to(portal, canopy, &result) {
                Some(to) => effects.push(Effect::SummonsForwarded { fact: outgoing.fact, land, to }),
                None => effects.push(Effect::SummonsUndelivered {
                    fact: outgoing.fact,
                    land,
                    reason: bounded_reason(reason),
                }),
            }
        } else if result.get("duplicate").is_some() {
            effects.push(Effect::SummonsDelivered { fact: outgoing.fact, land, receipt: result["receipt"].as_u64() });
        } else {
            let reason =
                result["wait"].as_str().map_or_else(|| format!("no answer for summons {index}"), str::to_string);
            return hold(reason);
        }
    }
    Outcome::Settled
}

/// Where a refused summons goes on to: the land its target moved to, as
/// the refusing land answered, when that land is another peer of this one
/// (otherwise the summons is given up with the refusal's reason, which
/// names the new address). A being cannot move back to a land that holds
/// its reel, so a summons sent on follows its moves and never goes round.
fn forwarded_to(portal: &Portal, canopy: &Canopy, result: &Json) -> Option<BeingId> {
    let to = result["movedTo"].as_str().and_then(BeingId::from_hex)?;
    (to != canopy.land() && portal.live.world().canopy.peers.contains_key(&to)).then_some(to)
}

/// Why a summons to deliver could not be read from the land.
#[derive(Debug, thiserror::Error)]
enum ReadSummonsError {
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("the fact at seq {seq} of {being} is not in the store")]
    Missing { being: BeingId, seq: u64 },
    #[error("this process does not speak for the land")]
    NotSpeaking,
}

/// The sealed fact at `seq` of `being`'s reel, and the being's key history
/// up to it (read once per being as far as needed, then kept).
fn sealed_with_keys(portal: &Portal, being: BeingId, seq: u64) -> Result<(Vec<u8>, Vec<Vec<u8>>), ReadSummonsError> {
    let store = portal.live.store();
    let fact = store.reel(&being, seq, seq + 1)?.into_iter().next().ok_or(ReadSummonsError::Missing { being, seq })?;
    let canopy = portal.canopy.as_ref().ok_or(ReadSummonsError::NotSpeaking)?;
    let mut scans = canopy.summons.keys.lock().unwrap_or_else(|p| p.into_inner());
    let scan = scans.entry(being).or_default();
    while scan.read_to <= seq {
        let to = (scan.read_to + KEY_HISTORY_FACTS_PER_READ).min(seq + 1);
        for stored in store.reel(&being, scan.read_to, to)? {
            if matches!(stored.fact.kind(), KIND_GENESIS | KIND_ROTATE_KEY | KIND_MOVE) {
                scan.history.push((stored.fact.header.seq, stored.fact.encode_envelope()));
            }
        }
        scan.read_to = to;
    }
    let keys = scan.history.iter().filter(|(at, _)| *at <= seq).map(|(_, envelope)| envelope.clone()).collect();
    Ok((fact.fact.encode_envelope(), keys))
}
