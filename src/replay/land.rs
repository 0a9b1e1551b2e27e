//! Land-wide replay: every reel verified, the whole land log folded once, and
//! every stored act of every being recomputed at its cursor and compared
//! byte for byte at its land seq.
//!
//! Moments that opened at the same cursor read the same world, so they are
//! recomputed in parallel (the beats are pure); the seal-time rules and the
//! comparison then run in land order, each against the world as the earlier
//! facts left it, exactly as the simulation sealed them.

use super::{act_differences, classify, recompute, Detail, Divergence, Recomputed, StoredAct};
use crate::check::checkpoint::TrustedCheckpoint;
use crate::check::{verify_land, verify_land_decoded, LandReport, SignatureMode};
use crate::fact::{BeingId, Fact, FactError};
use crate::parallel::map_in_order;
use crate::moment::Substrate;
use crate::store::{Store, StoreError};
use crate::world::body::KIND_ACT;
use crate::world::{ActBody, World};
use std::collections::BTreeMap;

/// Divergences a land-wide replay keeps in full (all are counted).
pub const LAND_REPLAY_DIVERGENCES_KEPT: usize = 100;
/// Signatures are checked in batches of this many facts.
const LAND_SIGNATURE_BATCH_FACTS: usize = 256;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LandReplayReport {
    pub beings: u64,
    pub facts_verified: u64,
    /// Verification problems (tamper, corruption, index drift), each naming its fact.
    pub problems: Vec<String>,
    /// Facts whose signature arithmetic a verification checkpoint stood in for.
    pub signatures_covered: u64,
    /// Why an offered checkpoint was not used (every signature was checked).
    pub checkpoint_refused: Option<String>,
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
            signatures_covered: verified.signatures_covered,
            checkpoint_refused: verified.checkpoint_refused.clone(),
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
/// With a verification checkpoint, the signatures it covers are not
/// recomputed if it holds ([`crate::check::checkpoint`]); every other check
/// and every moment still are.
pub fn replay_land(
    store: &dyn Store,
    substrate: &Substrate,
    threads: usize,
    checkpoint: Option<TrustedCheckpoint<'_>>,
) -> Result<LandReplayReport, StoreError> {
    let threads = threads.max(1);
    // One read of the store and one decoding serve verification and the
    // fold; envelopes and act bodies are decoded in parallel. An unreadable
    // fact (verification names it) is left out of the fold.
    let records = store.raw_records(None)?;
    let (facts, act_bodies): (Vec<Result<Fact, FactError>>, Vec<Option<ActBody>>) =
        map_in_order(&records, threads, |record| {
            let fact = Fact::decode_envelope(&record.envelope);
            let act_body = match &fact {
                Ok(fact) if fact.kind() == KIND_ACT => fact.body_as::<ActBody>().ok(),
                _ => None,
            };
            (fact, act_body)
        })
        .into_iter()
        .unzip();
    let mode = SignatureMode::Batch { batch_facts: LAND_SIGNATURE_BATCH_FACTS };
    let verified = verify_land_decoded(store, &records, &facts, mode, threads, checkpoint)?;
    let mut report = LandReplayReport::verified(&verified);
    let land_len = store.land_len()?;
    let mut by_land_seq: Vec<Option<Decoded>> = Vec::new();
    by_land_seq.resize_with(land_len as usize, || None);
    let mut by_cursor: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for ((record, fact), act_body) in records.iter().zip(facts).zip(act_bodies) {
        let (Some(land_seq), Ok(fact)) = (record.land_seq, fact) else { continue };
        let decoded = match act_body {
            Some(body) => Decoded::Act {
                being: record.being,
                act: Box::new(StoredAct { seq: record.seq, land_seq, fact, body }),
            },
            None => Decoded::Other { fact: Box::new(fact) },
        };
        let Some(slot) = by_land_seq.get_mut(land_seq as usize) else { continue };
        if let Decoded::Act { act, .. } = &decoded {
            by_cursor.entry(act.body.cursor).or_default().push(land_seq);
        }
        *slot = Some(decoded);
    }
    let mut world = World::new();
    let mut recomputed: BTreeMap<u64, Recomputed> = BTreeMap::new();
    let facts = by_land_seq;
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
    Other { fact: Box<Fact> },
}

/// Recomputes the moments that opened at one cursor, in parallel.
fn recompute_all(
    substrate: &Substrate,
    world: &World,
    opening: &[(BeingId, &StoredAct)],
    threads: usize,
) -> Vec<(u64, Recomputed)> {
    map_in_order(opening, threads, |(being, act)| {
        (act.land_seq, recompute(substrate, world, *being, act, Detail::OutcomeOnly))
    })
}
