//! Land-wide replay: every reel verified, the whole land log folded once, and
//! every stored act of every being recomputed at its cursor and compared
//! byte for byte at its land seq.
//!
//! Moments that opened at the same cursor read the same world, so they are
//! recomputed in parallel (the beats are pure); the seal-time rules and the
//! comparison then run in land order, each against the world as the earlier
//! facts left it, exactly as the simulation sealed them.

use super::{act_differences, classify, recompute, Detail, Divergence, Recomputed, StoredAct};
use crate::check::{verify_land, verify_land_records, LandReport, SignatureMode};
use crate::fact::{BeingId, Fact};
use crate::moment::Substrate;
use crate::store::{RawRecord, Store, StoreError};
use crate::world::body::KIND_ACT;
use crate::world::{ActBody, World};
use std::collections::BTreeMap;

/// Divergences a land-wide replay keeps in full (all are counted).
pub const LAND_REPLAY_DIVERGENCES_KEPT: usize = 100;
/// Below this many moments at one cursor, recomputing on one thread is cheaper
/// than starting others.
const PARALLEL_MOMENTS_MIN: usize = 16;
/// Signatures are checked in batches of this many facts.
const LAND_SIGNATURE_BATCH_FACTS: usize = 256;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LandReplayReport {
    pub beings: u64,
    pub facts_verified: u64,
    /// Verification problems (tamper, corruption, index drift), each naming its fact.
    pub problems: Vec<String>,
    /// Stored acts recomputed and compared.
    pub moments: u64,
    pub divergences_total: u64,
    /// The first [`LAND_REPLAY_DIVERGENCES_KEPT`] divergences, with the being's id.
    pub divergences: Vec<(BeingId, Divergence)>,
}

impl LandReplayReport {
    /// A report of the verification alone: nothing replayed yet.
    fn verified(verified: &LandReport) -> LandReplayReport {
        LandReplayReport {
            beings: verified.beings,
            facts_verified: verified.facts,
            problems: verified.problems.iter().map(ToString::to_string).collect(),
            ..LandReplayReport::default()
        }
    }

    pub fn clean(&self) -> bool {
        self.problems.is_empty() && self.divergences_total == 0
    }
}

/// Verifies the land only (signatures, chains, land log, indexes): the
/// cost replay pays before it recomputes anything.
pub fn verify_only(store: &dyn Store, threads: usize) -> Result<LandReplayReport, StoreError> {
    let verified =
        verify_land(store, SignatureMode::Batch { batch_facts: LAND_SIGNATURE_BATCH_FACTS }, threads.max(1))?;
    Ok(LandReplayReport::verified(&verified))
}

/// Replays every being of the land against `substrate` on `threads` threads.
pub fn replay_land(store: &dyn Store, substrate: &Substrate, threads: usize) -> Result<LandReplayReport, StoreError> {
    let threads = threads.max(1);
    // One read of the store serves verification and the fold; envelopes and
    // act bodies are decoded in parallel. An unreadable fact (verification
    // names it) is left out of the fold.
    let records = store.raw_records(None)?;
    let decoded = parallel_map(&records, threads, decode);
    let verified =
        verify_land_records(store, records, SignatureMode::Batch { batch_facts: LAND_SIGNATURE_BATCH_FACTS }, threads)?;
    let mut report = LandReplayReport::verified(&verified);
    let land_len = store.land_len()?;
    let mut facts: Vec<Option<Decoded>> = Vec::new();
    facts.resize_with(land_len as usize, || None);
    let mut by_cursor: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for decoded in decoded.into_iter().flatten() {
        let land_seq = decoded.land_seq();
        let Some(slot) = facts.get_mut(land_seq as usize) else { continue };
        if let Decoded::Act { act, .. } = &decoded {
            by_cursor.entry(act.body.cursor).or_default().push(land_seq);
        }
        *slot = Some(decoded);
    }
    let mut world = World::new();
    let mut recomputed: BTreeMap<u64, Recomputed> = BTreeMap::new();
    for (land_seq, fact) in facts.iter().enumerate() {
        let land_seq = land_seq as u64;
        if let Some(opening) = by_cursor.remove(&world.cursor) {
            let opening: Vec<(BeingId, &StoredAct)> = opening
                .iter()
                .filter_map(|seq| match facts.get(*seq as usize) {
                    Some(Some(Decoded::Act { being, act })) => Some((*being, act.as_ref())),
                    _ => None,
                })
                .collect();
            recomputed.extend(recompute_all(substrate, &world, &opening, threads));
        }
        let (being, act) = match fact {
            Some(Decoded::Act { being, act }) => (*being, act.as_ref()),
            Some(Decoded::Other { fact, .. }) => {
                world.apply(land_seq, fact);
                continue;
            }
            None => {
                // Keep the cursor moving past a fact the fold could not read.
                world.cursor = world.cursor.max(land_seq + 1);
                continue;
            }
        };
        let body = &act.body;
        report.moments += 1;
        let verdict = recomputed.remove(&land_seq).map(|recomputed| (recomputed.outcome, recomputed.unstable));
        let (differences, unstable) = act_differences(substrate, &world, act, verdict);
        if !differences.is_empty() {
            report.divergences_total += 1;
            if report.divergences.len() < LAND_REPLAY_DIVERGENCES_KEPT {
                let cause = classify(&report.problems, body, substrate, &world, unstable);
                let divergence =
                    Divergence { seq: act.seq, land_seq, differences, cause, context: serde_json::Value::Null };
                report.divergences.push((being, divergence));
            }
        }
        world.apply_act(land_seq, &act.fact.header, act.fact.id(), body);
    }
    Ok(report)
}

/// One stored fact, decoded (an act with its body).
enum Decoded {
    Act { being: BeingId, act: Box<StoredAct> },
    Other { land_seq: u64, fact: Box<Fact> },
}

impl Decoded {
    fn land_seq(&self) -> u64 {
        match self {
            Decoded::Act { act, .. } => act.land_seq,
            Decoded::Other { land_seq, .. } => *land_seq,
        }
    }
}

fn decode(record: &RawRecord) -> Option<Decoded> {
    let land_seq = record.land_seq?;
    let fact = Fact::decode_envelope(&record.envelope).ok()?;
    if fact.kind() == KIND_ACT {
        if let Ok(body) = fact.body_as::<ActBody>() {
            return Some(Decoded::Act {
                being: record.being,
                act: Box::new(StoredAct { seq: record.seq, land_seq, fact, body }),
            });
        }
    }
    Some(Decoded::Other { land_seq, fact: Box::new(fact) })
}

/// `map` over `items` on `threads` threads, in order.
fn parallel_map<T: Sync, R: Send>(items: &[T], threads: usize, map: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if threads <= 1 || items.len() < PARALLEL_MOMENTS_MIN {
        return items.iter().map(map).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let map = &map;
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            items.chunks(chunk).map(|part| scope.spawn(move || part.iter().map(map).collect::<Vec<R>>())).collect();
        // A worker that panicked is a bug in this build, not in the land.
        handles.into_iter().flat_map(|handle| handle.join().expect("a replay worker panicked")).collect()
    })
}

/// Recomputes the moments that opened at one cursor, in parallel.
fn recompute_all(
    substrate: &Substrate,
    world: &World,
    opening: &[(BeingId, &StoredAct)],
    threads: usize,
) -> Vec<(u64, Recomputed)> {
    parallel_map(opening, threads, |(being, act)| {
        (act.land_seq, recompute(substrate, world, *being, act, Detail::OutcomeOnly))
    })
}
