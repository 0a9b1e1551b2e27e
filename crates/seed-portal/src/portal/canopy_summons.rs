//! Summons between lands (docs/canopy.md): a summons a being of this land
//! sealed for `@name@LAND` waits in the world's outbox until it is
//! delivered (or given up), and a summons another land delivers is
//! verified and sealed as an arrival, or refused with its reason.
//!
//! Delivery carries the sealed fact itself, with its being's key history
//! (genesis and rotations), in a request signed by this land. Each peer's
//! summons go in land-seq order, one at a time: the first that cannot be
//! delivered now holds the ones after it (ordered per sender), and is tried
//! again after a backoff that doubles from `CANOPY_DELIVERY_BACKOFF_MS_MIN`
//! to `CANOPY_DELIVERY_BACKOFF_MS_MAX`. What the receiver took is recorded
//! (`summons-delivered`, with its receipt); what it refused for good, or
//! what waited past `canopy_undelivered_retention_ms`, is recorded as
//! undelivered with the reason. A delivery whose record was lost (a crash
//! between the two) is delivered again and answered as a duplicate: the
//! receiver takes a being's facts by seq, so nothing arrives twice.

use super::canopy_routes::{admit_peer, answer_signed, body_json, canopy_of, limits, seal, Canopy, CanopyRefusal};
use super::Portal;
use crate::canopy::{decide_arrival, ArrivalVerdict, CanopyLimits, Outgoing};
use crate::canopy_http::client::{signed_post, Call};
use crate::canopy_http::guard::PeerRates;
use crate::canopy_http::{wall_clock_ms, PeerCallError, CANOPY_SUMMONS_PATH};
use crate::fact::body::{KIND_GENESIS, KIND_ROTATE_KEY};
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

/// `POST /canopy/v1/summons {"fact": hex, "keys": [hex, …]}`: a peer
/// delivers a summons of one of its beings.
pub(super) async fn summons(State(portal): State<Arc<Portal>>, request: Request) -> Response {
    answer_signed(portal, request, |portal, canopy, signed, body| async move {
        admit_peer(&portal, &canopy, &signed, &body).await?;
        let from = signed.request.from;
        let limits = limits(&portal);
        canopy.summons.rates.lock().unwrap_or_else(|p| p.into_inner()).admit(
            from,
            limits.summons_per_peer_per_minute_max,
            wall_clock_ms(),
        )?;
        let delivered = body_json(&body)?;
        let bad = |reason: &str| CanopyRefusal::BadBody { what: "a summons delivery", reason: reason.to_string() };
        let fact = delivered["fact"]
            .as_str()
            .and_then(|text| hex::decode(text).ok())
            .ok_or_else(|| bad("`fact` is not hex"))?;
        let keys = delivered["keys"]
            .as_array()
            .ok_or_else(|| bad("`keys` is not a list"))?
            .iter()
            .map(|key| key.as_str().and_then(|text| hex::decode(text).ok()))
            .collect::<Option<Vec<Vec<u8>>>>()
            .ok_or_else(|| bad("an entry of `keys` is not hex"))?;
        // One arrival decided and sealed at a time: two deliveries of one
        // fact must not both arrive.
        let _changing = canopy.changing.lock().await;
        let world = portal.live.world();
        let verdict = decide_arrival(&world, canopy.land(), from, &fact, &keys, limits.summons_bytes_max);
        drop(world);
        match verdict {
            ArrivalVerdict::Arrive(arrival) => {
                let receipt = seal(&portal, vec![Effect::SummonsArrived { arrival }]).await?;
                Ok(json!({"ok": true, "receipt": receipt, "duplicate": false}))
            }
            ArrivalVerdict::Duplicate { receipt } => Ok(json!({"ok": true, "receipt": receipt, "duplicate": true})),
            ArrivalVerdict::Refuse(refusal) => {
                let reason = refusal.reason.clone();
                seal(&portal, vec![Effect::SummonsRefused { refusal }]).await?;
                Err(CanopyRefusal::SummonsRefused { reason })
            }
            ArrivalVerdict::Wait { reason } => Err(CanopyRefusal::SummonsWait { reason }),
        }
    })
    .await
}

/// Looks at the outbox every `CANOPY_DELIVERY_POLL_MS` until the portal stops.
pub fn start_deliveries(portal: Arc<Portal>) {
    if portal.canopy.is_none() {
        return;
    }
    let mut stopped = portal.shutdown.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(CANOPY_DELIVERY_POLL_MS)) => deliver(&portal).await,
                _ = stopped.changed() => return,
            }
        }
    });
}

/// How a delivery ended.
enum Delivered {
    /// Taken (or taken before): its receipt.
    Taken(Option<u64>),
    /// Refused for good: why.
    Refused(String),
    /// Not now: why (the peer's queue waits).
    NotNow(String),
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
        by_land.entry(outgoing.to.land).or_default().push(outgoing.clone());
    }
    let peers: BTreeMap<BeingId, String> =
        world.canopy.peers.iter().map(|(land, peer)| (*land, peer.url.clone())).collect();
    drop(world);
    let now_land_ms = portal.live.now_ms();
    for (land, waiting) in by_land {
        let now_ms = wall_clock_ms();
        let held = canopy.summons.backoff.lock().unwrap_or_else(|p| p.into_inner()).get(&land).copied();
        if held.is_some_and(|backoff| backoff.until_ms > now_ms) {
            continue;
        }
        let mut effects = Vec::new();
        for outgoing in waiting.into_iter().take(CANOPY_DELIVERIES_PER_LOOK_MAX) {
            let Some(url) = peers.get(&land) else {
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
            match deliver_one(portal, &canopy, &limits, url, &outgoing).await {
                Delivered::Taken(receipt) => {
                    effects.push(Effect::SummonsDelivered { fact: outgoing.fact, land, receipt });
                }
                Delivered::Refused(reason) => {
                    effects.push(Effect::SummonsUndelivered { fact: outgoing.fact, land, reason });
                }
                Delivered::NotNow(reason) => {
                    let mut backoff = canopy.summons.backoff.lock().unwrap_or_else(|p| p.into_inner());
                    let next_ms = backoff.get(&land).map_or(CANOPY_DELIVERY_BACKOFF_MS_MIN, |held| held.next_ms);
                    backoff.insert(
                        land,
                        Backoff {
                            until_ms: wall_clock_ms().saturating_add(next_ms),
                            next_ms: next_ms.saturating_mul(2).min(CANOPY_DELIVERY_BACKOFF_MS_MAX),
                        },
                    );
                    tracing::info!(target: "seed::canopy", peer = %land, wait_ms = next_ms, %reason, "a summons waits to be delivered");
                    break;
                }
            }
        }
        if effects.iter().any(|effect| matches!(effect, Effect::SummonsDelivered { .. })) {
            canopy.summons.backoff.lock().unwrap_or_else(|p| p.into_inner()).remove(&land);
        }
        if !effects.is_empty() {
            if let Err(refusal) = seal(portal, effects).await {
                tracing::warn!(target: "seed::canopy", peer = %land, reason = %refusal, "deliveries not recorded (they are delivered again, as duplicates)");
                return;
            }
        }
    }
}

/// Delivers one summons: its sealed fact and its being's key history.
async fn deliver_one(
    portal: &Arc<Portal>,
    canopy: &Canopy,
    limits: &CanopyLimits,
    url: &str,
    outgoing: &Outgoing,
) -> Delivered {
    let envelope = {
        let portal = portal.clone();
        let (being, seq) = (outgoing.being, outgoing.seq);
        tokio::task::spawn_blocking(move || sealed_with_keys(&portal, being, seq)).await
    };
    let (fact, keys) = match envelope {
        Ok(Ok(read)) => read,
        Ok(Err(error)) => return Delivered::NotNow(error.to_string()),
        Err(error) => return Delivered::NotNow(format!("the reading task stopped: {error}")),
    };
    let body = json!({"fact": hex::encode(fact), "keys": keys.iter().map(hex::encode).collect::<Vec<_>>()});
    let call = Call {
        to: outgoing.to.land,
        url,
        path: CANOPY_SUMMONS_PATH,
        timeout: Duration::from_millis(limits.peer_timeout_ms),
        answer_bytes_max: super::canopy_routes::CANOPY_ANSWER_BYTES_MAX,
    };
    match signed_post(&canopy.client, &canopy.signer, call, &body).await {
        Ok(answer) => Delivered::Taken(answer["receipt"].as_u64()),
        // Refused for good: the receiver recorded why (422), or the
        // request itself can never pass (too large, malformed, misdirected).
        Err(PeerCallError::Refused { status: 400 | 413 | 421 | 422, message, .. }) => Delivered::Refused(message),
        Err(other) => Delivered::NotNow(other.to_string()),
    }
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
            if matches!(stored.fact.kind(), KIND_GENESIS | KIND_ROTATE_KEY) {
                scan.history.push((stored.fact.header.seq, stored.fact.encode_envelope()));
            }
        }
        scan.read_to = to;
    }
    let keys = scan.history.iter().filter(|(at, _)| *at <= seq).map(|(_, envelope)| envelope.clone()).collect();
    Ok((fact.fact.encode_envelope(), keys))
}

/// The outbox as the peers page shows it.
pub(super) fn outbox_json(portal: &Portal) -> Json {
    let world = portal.live.world();
    world
        .canopy
        .outbox
        .iter()
        .map(|(land_seq, outgoing)| {
            json!({
                "landSeq": land_seq,
                "fact": outgoing.fact.to_hex(),
                "from": world.name_of(&outgoing.being).map(|name| format!("@{name}")),
                "to": outgoing.to.to_target(),
            })
        })
        .collect()
}
