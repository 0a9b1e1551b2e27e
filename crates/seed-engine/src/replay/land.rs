//! Land-wide replay: every reel verified, the whole land log folded once, and
//! every stored act of every being recomputed at its cursor and compared
//! byte for byte at its land seq.
//!
//! Moments that opened at the same cursor read the same world, so they are
//! recomputed in parallel (the beats are pure); the seal-time rules and the
//! comparison then run in land order, each against the world as the earlier
//! facts left it, exactly as the simulation sealed them.
//!
//! The store is read once and every fact decoded once, for verification and the
//! fold alike: the fold borrows the facts verification reads, and the two run
//! side by side. Bodies are read for the fold in parallel and in land order. Of
//! an act, only what its moment reads (its opening, `opening.rs`) is read, the
//! rest skipped by its heads; the whole body is read only to explain a
//! divergence, and an act whose opening does not read is a divergence of its own.
//!
//! An act body's canonical form is checked only if its recomputation does not
//! encode to its stored bytes (matching bytes are canonical by construction) or
//! the fold never reaches it. A body that fails the check sends the whole replay
//! round again with every body checked as it is decoded, so the report is the
//! one `Fact::decode_envelope` would give.
//!
//! A recomputed act's bytes are compared with the stored ones once, on the
//! recomputing thread, and a recomputed act whose bytes match is what the fold
//! applies. Spent acts are kept as boxes until the fold ends, so the fold's
//! single thread moves pointers and frees nothing.

use super::{
    act_differences, agrees_before_seal, classify, recompute, sealed_as_stored, ActOpening, Detail, Divergence,
    DivergenceCause, FieldDifference, Recomputed, StoredAct,
};
use crate::check::checkpoint::TrustedCheckpoint;
use crate::check::{verify_land, verify_land_decoded, HowToVerify, LandReport, SignatureMode};
use crate::fact::{BeingId, Fact, FactError, Hash32};
use crate::limits::Limits;
use crate::moment::Substrate;
use crate::parallel::{drop_in_background, map_in_order};
use crate::progress::{NoProgress, Progress};
use crate::store::{Store, StoreError};
use crate::world::body::KIND_ACT;
use crate::world::{ActBody, CoreSchemas, FoldBody, GenesisFlows, World};
use serde_json::json;
use std::borrow::Cow;
use std::cell::Cell;
use std::collections::BTreeMap;

/// Divergences a land-wide replay keeps in full (all are counted).
pub const LAND_REPLAY_DIVERGENCES_KEPT: usize = 100;
/// Signatures are checked in batches of this many facts.
const LAND_SIGNATURE_BATCH_FACTS: usize = 256;

/// Facts the fold passes between two reports to its progress watcher.
const LAND_REPLAY_PROGRESS_FACTS: usize = 4096;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LandReplayReport {
    pub beings: u64,
    pub facts_verified: u64,
    /// Verification problems (tamper, corruption, index drift), each naming its fact.
    pub problems: Vec<String>,
    /// Facts whose signature arithmetic a verification checkpoint stood in for.
    pub signatures_covered: u64,
    /// Why an offered checkpoint was not used (every signature was checked).
    pub checkpoint_refused: Option<crate::check::CheckpointRefused>,
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
    let schemas = CoreSchemas::leaving_acts_to_replay();
    let mode = SignatureMode::Batch { batch_facts: LAND_SIGNATURE_BATCH_FACTS };
    let verified = verify_land(store, mode, threads.max(1), schemas.rules(&Limits::default()))?;
    Ok(LandReplayReport::verified(&verified))
}

/// Replays every being of the land against `substrate` on `threads` threads.
/// With a verification checkpoint, the signatures it covers are not
/// recomputed if it holds ([`crate::check::checkpoint`]); every other check
/// and every moment still are.
///
/// `snapshot_claims`: the state digest each world snapshot of the land
/// claims, by cursor; the fold names every one its world does not give.
pub fn replay_land(
    store: &dyn Store,
    substrate: &Substrate,
    threads: usize,
    checkpoint: Option<TrustedCheckpoint<'_>>,
    snapshot_claims: &BTreeMap<u64, Hash32>,
    progress: &dyn Progress,
) -> Result<LandReplayReport, StoreError> {
    let how = LandReplay { threads, checkpoint, snapshot_claims, progress };
    match replay_land_deferring(store, substrate, &how, true)? {
        Some(report) => Ok(report),
        // An act's body is not canonical CBOR: the land is replayed again
        // with every body checked as it is decoded, so that verification
        // and the fold see exactly the facts `decode_envelope` gives.
        None => Ok(replay_land_deferring(store, substrate, &how, false)?
            .expect("nothing is deferred, so nothing is found late")),
    }
}

/// How a land-wide replay runs, besides what it replays.
struct LandReplay<'a> {
    threads: usize,
    checkpoint: Option<TrustedCheckpoint<'a>>,
    snapshot_claims: &'a BTreeMap<u64, Hash32>,
    progress: &'a dyn Progress,
}

/// [`replay_land`], with the canonical form of act bodies checked late when
/// `defer_act_form`: an act whose recomputation encodes to its stored bytes
/// is canonical by construction, so only the others are checked: after the
/// fold reached them, or before the fold for acts it never reaches (another
/// record's land seq, or none). `None` when one of them fails the check.
fn replay_land_deferring(
    store: &dyn Store,
    substrate: &Substrate,
    how: &LandReplay<'_>,
    defer_act_form: bool,
) -> Result<Option<LandReplayReport>, StoreError> {
    let LandReplay { threads, checkpoint, snapshot_claims, progress } = *how;
    let threads = threads.max(1);
    progress.stage("reading the store", 0, "facts");
    // One read of the store and one decoding serve verification and the
    // fold; envelopes and act bodies are decoded in parallel. An unreadable
    // fact (verification names it) is left out of the fold.
    let records = store.raw_records_in_parts(threads)?;
    progress.advance(records.len() as u64);
    let facts: Vec<Result<Fact, FactError>> = map_in_order(&records, threads, |record| {
        Fact::decode_envelope_deferring_form_of(&record.envelope, |kind| defer_act_form && kind == KIND_ACT)
    });
    // The record at each land seq (the last in store order, if several claim
    // one). A consistent log numbers every record once, so it is never
    // longer than the records (a corrupt one may claim anything).
    let land_len = usize::try_from(store.land_len()?).unwrap_or(usize::MAX).min(records.len());
    let mut at_land_seq: Vec<Option<usize>> = vec![None; land_len];
    let mut unplaced = Vec::new();
    for (index, record) in records.iter().enumerate() {
        match record.land_seq.and_then(|land_seq| at_land_seq.get_mut(usize::try_from(land_seq).ok()?)) {
            Some(slot) => unplaced.extend(slot.replace(index)),
            None => unplaced.push(index),
        }
    }
    // Facts the fold does not reach are not compared with a recomputation,
    // so an act among them whose form check was deferred is checked here.
    let unplaced_not_canonical = |index: &usize| {
        facts[*index].as_ref().is_ok_and(|fact| fact.kind() == KIND_ACT && fact.body_form_error().is_some())
    };
    if defer_act_form && unplaced.iter().any(unplaced_not_canonical) {
        return Ok(None);
    }
    // The fold borrows the decoded facts that verification reads; they are
    // decoded in land order, so the fold takes them as they come.
    let flows = GenesisFlows::default();
    let folded: Vec<Option<Decoded<'_>>> = map_in_order(&at_land_seq, threads, |at| {
        let index = (*at)?;
        let (record, fact) = (&records[index], &facts[index]);
        match (fact, record.land_seq) {
            // Only the fields a recomputation reads are decoded: an act whose
            // recomputation encodes to the stored bytes is the stored act.
            // The rest is skipped by its heads alone: either `decode_envelope`
            // checked the body, or the check was deferred and an act that is
            // not canonical cannot match its recomputation, whatever was read.
            (Ok(fact), Some(land_seq)) if fact.kind() == KIND_ACT => Some(match ActOpening::read(fact.body()) {
                Ok(opening) => Decoded::Act {
                    being: record.being,
                    act: LandAct { seq: record.seq, land_seq, fact, opening: Box::new(opening), recomputed: None },
                },
                Err(_) if defer_act_form && fact.body_form_error().is_some() => Decoded::NotCanonical,
                // Not an act a moment could have sealed: a divergence of its own,
                // named as reading the whole body names it.
                Err(opening_error) => {
                    let reason = match fact.body_as::<ActBody>() {
                        Err(error) => error.to_string(),
                        Ok(_) => opening_error.to_string(),
                    };
                    Decoded::UnreadableAct { being: record.being, seq: record.seq, fact, reason }
                }
            }),
            (Ok(fact), Some(_)) => Some(Decoded::other(fact, &flows)),
            _ => None,
        }
    });
    if folded.iter().any(|decoded| matches!(decoded, Some(Decoded::NotCanonical))) {
        return Ok(None);
    }
    let mode = SignatureMode::Batch { batch_facts: LAND_SIGNATURE_BATCH_FACTS };
    // Every stored act is recomputed and compared byte for byte below, and
    // one that is not an act body is a divergence there: verification
    // leaves act bodies to the fold rather than read each of them twice.
    let schemas = CoreSchemas::leaving_acts_to_replay();
    // Verification and the fold are independent given the decoded facts: run
    // side by side, each fills the other's single-threaded stretches.
    let (verified, replayed) = std::thread::scope(|scope| {
        let verification = scope.spawn(|| {
            // The fold is the longer of the two: it alone reports progress.
            let how = HowToVerify { mode, threads, rules: schemas.rules(&Limits::default()), progress: &NoProgress };
            verify_land_decoded(store, &records, &facts, checkpoint, how)
        });
        let replayed = fold_and_recompute(substrate, folded, defer_act_form, threads, snapshot_claims, progress);
        // A verifier that panicked is a bug in this build, not in the land.
        (verification.join().expect("the verification thread panicked"), replayed)
    });
    let Some(replayed) = replayed else { return Ok(None) };
    let mut report = LandReplayReport::verified(&verified?);
    report.moments = replayed.moments;
    report.divergences_total = replayed.divergences_total;
    report.divergences = replayed.divergences;
    for cursor in replayed.snapshot_mismatches {
        report
            .problems
            .push(format!("the world snapshot at cursor {cursor} does not hold the world the land log folds to there"));
    }
    if !report.problems.is_empty() {
        // Classification puts tampered or corrupt input first (see `classify`),
        // which verification only knew once it had finished.
        let cause = DivergenceCause::StoredInputChanged { problems: report.problems.clone() };
        for (_, divergence) in &mut report.divergences {
            divergence.cause = cause.clone();
        }
    }
    // Freeing the decoded land takes tens of milliseconds; nobody waits for it.
    drop_in_background((records, facts));
    Ok(Some(report))
}

/// What the fold and the recomputation found.
struct Replayed {
    moments: u64,
    divergences_total: u64,
    divergences: Vec<(BeingId, Divergence)>,
    /// Cursors of the world snapshots whose state the fold does not give.
    snapshot_mismatches: Vec<u64>,
}

impl Replayed {
    /// Counts one divergence of `being`'s and keeps it in full while fewer
    /// than [`LAND_REPLAY_DIVERGENCES_KEPT`] are kept.
    fn diverged(&mut self, being: BeingId, divergence: impl FnOnce() -> Divergence) {
        self.divergences_total += 1;
        if self.divergences.len() < LAND_REPLAY_DIVERGENCES_KEPT {
            self.divergences.push((being, divergence()));
        }
    }
}

/// Folds the land log in order (`facts`: each land seq's decoded fact, if
/// any), recomputing the moments that opened at each
/// cursor (in parallel) and comparing each with its stored act at its land
/// seq. `None` when an act whose form was left unchecked (every act's, when
/// `act_form_deferred`) is not canonical.
fn fold_and_recompute(
    substrate: &Substrate,
    mut facts: Vec<Option<Decoded<'_>>>,
    act_form_deferred: bool,
    threads: usize,
    snapshot_claims: &BTreeMap<u64, Hash32>,
    progress: &dyn Progress,
) -> Option<Replayed> {
    let mut replayed =
        Replayed { moments: 0, divergences_total: 0, divergences: Vec::new(), snapshot_mismatches: Vec::new() };
    // The world the fold has built after the first `cursor` facts, against
    // the snapshot taken there.
    let check_snapshot = |cursor: u64, world: &World, mismatches: &mut Vec<u64>| {
        if snapshot_claims.get(&cursor).is_some_and(|claimed| world.state_digest() != *claimed) {
            mismatches.push(cursor);
        }
    };
    let mut by_cursor: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for decoded in &facts {
        if let Some(Decoded::Act { act, .. }) = decoded {
            by_cursor.entry(act.opening.cursor).or_default().push(act.land_seq);
        }
    }
    let mut world = World::new();
    // Acts already compared and folded, freed after the fold. Boxes, so the
    // fold moves pointers, not act bodies.
    let mut spent: Vec<(SpentBody, Box<ActOpening>)> = Vec::with_capacity(facts.len());
    progress.stage("replaying the land log", facts.len() as u64, "facts");
    for land_seq in 0..facts.len() {
        if land_seq % LAND_REPLAY_PROGRESS_FACTS == 0 && land_seq > 0 {
            progress.advance(LAND_REPLAY_PROGRESS_FACTS as u64);
        }
        let land_seq = land_seq as u64;
        check_snapshot(land_seq, &world, &mut replayed.snapshot_mismatches);
        if let Some(opening) = by_cursor.remove(&world.cursor) {
            let opening: Vec<(BeingId, &LandAct<'_>)> = opening
                .iter()
                .filter_map(|seq| match facts.get(*seq as usize) {
                    Some(Some(Decoded::Act { being, act })) => Some((*being, act)),
                    _ => None,
                })
                .collect();
            let outcomes = recompute_all(substrate, &world, &opening, threads);
            // Each outcome waits in its act's slot until the fold reaches it.
            for (land_seq, recomputed) in outcomes {
                if let Some(Some(Decoded::Act { act, .. })) = facts.get_mut(land_seq as usize) {
                    act.recomputed = Some(recomputed);
                }
            }
        }
        // Taken, as nothing reads a fact again once the fold has passed it
        // (an act was recomputed at its cursor, which lies before its land seq).
        let (being, mut act) = match facts[land_seq as usize].take() {
            Some(Decoded::Act { being, act }) => (being, act),
            Some(Decoded::Other { fact, body }) => {
                // Read in parallel before the fold.
                world.apply_folded(land_seq, &fact.header, fact.id(), body);
                continue;
            }
            Some(Decoded::UnreadableAct { being, seq, fact, reason }) => {
                replayed.moments += 1;
                replayed.diverged(being, || unreadable_act(seq, land_seq, &reason));
                // Nothing to apply: the body does not read as an act.
                world.apply_folded(land_seq, &fact.header, fact.id(), FoldBody::Nothing);
                continue;
            }
            // Turned back before the fold began; kept total.
            Some(Decoded::NotCanonical) => {
                drop_in_background((spent, world));
                return None;
            }
            None => {
                // Keep the cursor moving past a fact the fold could not read.
                world.cursor = world.cursor.max(land_seq + 1);
                continue;
            }
        };
        replayed.moments += 1;
        let (fact, header) = (act.fact, &act.fact.header);
        let verdict = act.recomputed.take();
        // The common case: the recomputed act, sealed against this world, is
        // byte for byte the stored one, so it is what the fold applies.
        let verdict = match verdict {
            Some(LandRecomputed { outcome, unstable, encoded_as_stored }) => {
                match sealed_as_stored(substrate, &world, fact.body(), outcome, encoded_as_stored) {
                    Ok(sealed) => {
                        world.apply_act(land_seq, header, fact.id(), &sealed.body);
                        spent.push((SpentBody::Recomputed(sealed), act.opening));
                        continue;
                    }
                    Err(outcome) => Some((outcome, unstable)),
                }
            }
            None => None,
        };
        // Not the stored bytes, so their form is not known to be canonical.
        if act_form_deferred && fact.body_form_error().is_some() {
            drop_in_background((spent, world));
            return None;
        }
        // A divergence: the whole stored body is read to explain it.
        let body = match fact.body_as::<ActBody>() {
            Ok(body) => body,
            Err(error) => {
                replayed.diverged(being, || unreadable_act(act.seq, land_seq, &error.to_string()));
                // Nothing to apply: the body was just found not to be an act.
                world.apply_folded(land_seq, header, fact.id(), FoldBody::Nothing);
                continue;
            }
        };
        let stored = StoredAct { seq: act.seq, land_seq, fact: Cow::Borrowed(fact), body };
        let (differences, unstable) = act_differences(substrate, &world, &stored, verdict);
        if !differences.is_empty() {
            replayed.diverged(being, || {
                let cause = classify(&[], &stored.body, substrate, &world, unstable);
                Divergence { seq: act.seq, land_seq, differences, cause, context: serde_json::Value::Null }
            });
        }
        world.apply_act(land_seq, header, fact.id(), &stored.body);
        spent.push((SpentBody::Stored(Box::new(stored.body)), act.opening));
    }
    check_snapshot(facts.len() as u64, &world, &mut replayed.snapshot_mismatches);
    // The facts after the last whole step, so the stage ends full.
    let reported = facts.len().saturating_sub(1) / LAND_REPLAY_PROGRESS_FACTS * LAND_REPLAY_PROGRESS_FACTS;
    progress.advance((facts.len() - reported) as u64);
    drop_in_background((spent, world));
    Some(replayed)
}

/// One stored fact, decoded: an act with what its recomputation reads, any
/// other fact with its body read for the fold, or an act that cannot be
/// recomputed (not canonical, so the replay goes round again; or not
/// holding what a moment reads, a divergence).
enum Decoded<'f> {
    Act {
        being: BeingId,
        act: LandAct<'f>,
    },
    Other {
        fact: &'f Fact,
        body: FoldBody,
    },
    /// An act whose deferred form check failed: the land is replayed again.
    NotCanonical,
    /// An act whose body does not hold what a moment reads (why, in `reason`).
    UnreadableAct {
        being: BeingId,
        seq: u64,
        fact: &'f Fact,
        reason: String,
    },
}

/// The divergence of a stored act whose body does not read as an act.
fn unreadable_act(seq: u64, land_seq: u64, error: &str) -> Divergence {
    let reason = format!("the stored act body does not read as an act: {error}");
    let difference = FieldDifference { field: "body".into(), expected: json!("an act body"), actual: json!(reason) };
    let cause = DivergenceCause::StoredInputChanged { problems: vec![reason] };
    Divergence { seq, land_seq, differences: vec![difference], cause, context: serde_json::Value::Null }
}

/// A stored act as a land-wide replay holds it until its land seq.
struct LandAct<'f> {
    seq: u64,
    land_seq: u64,
    fact: &'f Fact,
    opening: Box<ActOpening>,
    /// What the recomputation at its cursor gave.
    recomputed: Option<LandRecomputed>,
}

/// A recomputed moment waiting for the fold to reach its act.
struct LandRecomputed {
    outcome: crate::moment::Outcome,
    /// A second recomputation at the same cursor disagreed with the first.
    unstable: bool,
    /// The recomputed act's bytes were found equal to the stored ones (while
    /// recomputing, in parallel), so the fold need not compare them again
    /// unless the seal-time rules change the act.
    encoded_as_stored: bool,
}

/// A folded act's body, kept until the fold ends so that freeing it is not
/// on the fold's single thread.
#[allow(dead_code, reason = "the bodies are held only to be freed later")]
enum SpentBody {
    Recomputed(Box<crate::moment::Act>),
    Stored(Box<ActBody>),
}

impl<'f> Decoded<'f> {
    fn other(fact: &'f Fact, flows: &GenesisFlows) -> Decoded<'f> {
        Decoded::Other { body: FoldBody::read_keeping_flows(&fact.header, fact.body(), flows), fact }
    }
}

/// Recomputes the moments that opened at one cursor, in parallel.
fn recompute_all(
    substrate: &Substrate,
    world: &World,
    opening: &[(BeingId, &LandAct<'_>)],
    threads: usize,
) -> Vec<(u64, LandRecomputed)> {
    map_in_order(opening, threads, |(being, act)| {
        // Agreeing bytes settle it; other bytes are read whole to compare
        // the fields the moment decided (the seal-time rules may have
        // changed the rest).
        let encoded_as_stored = Cell::new(false);
        let agrees = |recomputed: &crate::moment::Act| {
            let same_bytes = recomputed.encoded.as_ref().is_some_and(|encoded| encoded.as_bytes() == act.fact.body());
            encoded_as_stored.set(same_bytes);
            same_bytes
                || act.fact.body_as::<ActBody>().is_ok_and(|stored| agrees_before_seal(&recomputed.body, &stored))
        };
        let inputs = act.opening.inputs(act.fact);
        let Recomputed { outcome, unstable, .. } =
            recompute(substrate, world, *being, inputs, &agrees, Detail::OutcomeOnly);
        (act.land_seq, LandRecomputed { outcome, unstable, encoded_as_stored: encoded_as_stored.get() })
    })
}
