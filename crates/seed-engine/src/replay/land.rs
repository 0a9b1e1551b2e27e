//! Land-wide replay: every reel verified, the whole land log folded once, and
//! every stored act of every being recomputed at its cursor and compared
//! byte for byte at its land seq.
//!
//! Memory holds the world, the acts in flight and a few windows of the land
//! log, not the land. A reader thread (`read_windows`) reads the land log a
//! window at a time, decodes each fact once, hands the window to
//! verification (`check::LandOrderVerification`, which checks every reel in
//! land order) and sends it to the fold, so that each fact is read and
//! decoded once for both, and verification fills the fold's single-threaded
//! stretches. The fold takes the windows (`LandWindow`) reading ahead
//! (`LandWindows::read_ahead_facts_max`) so that it knows which acts opened at
//! a cursor when it gets there. Those are recomputed in parallel (the beats
//! are pure); the seal-time rules and the comparison then run in land order,
//! each against the world as the earlier facts left it, exactly as the
//! simulation sealed them. An act sealed farther from its opening than the
//! read-ahead is found late, and the fold runs again after a pass that reads
//! every act's opening cursor (nothing else) first, while verification reads
//! the store on its own beside it: the same report, later.
//!
//! Of an act, only what its moment reads (its opening, `opening.rs`) is read,
//! the rest skipped by its heads; the whole body is read only to explain a
//! divergence, and an act whose opening does not read is a divergence of its
//! own. An act body's canonical form is checked only if its recomputation
//! does not encode to its stored bytes (matching bytes are canonical by
//! construction); a body that fails the check is left out of the fold, as
//! `Fact::decode_envelope` leaves it out (verification, which decodes every
//! fact in full, names it).
//!
//! A recomputed act's bytes are compared with the stored ones once, on the
//! recomputing thread, and a recomputed act whose bytes match is what the fold
//! applies. Spent facts and acts are freed in batches on a background thread,
//! so the fold's single thread moves pointers and frees nothing.

use super::{
    act_differences, agrees_before_seal, classify, recompute, sealed_as_stored, ActOpening, Detail, Divergence,
    DivergenceCause, FieldDifference, Recomputed, ReplayDefinitions, ReplayError, StoredAct,
};
use crate::check::checkpoint::TrustedCheckpoint;
use crate::check::{verify_land, verify_land_trusting, HowToVerify, LandOrderVerification, LandReport, SignatureMode};
use crate::fact::{BeingId, Fact, FactError, Hash32};
use crate::limits::Limits;
use crate::moment::Substrate;
use crate::parallel::{drop_in_background, map_in_order};
use crate::progress::{NoProgress, Progress};
use crate::store::{LandEntry, Store, StoreError};
use crate::world::body::KIND_ACT;
use crate::world::{ActBody, CoreSchemas, FoldBody, GenesisFlows, World};
use serde_json::json;
use std::borrow::Cow;
use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Divergences a land-wide replay keeps in full (all are counted).
pub const LAND_REPLAY_DIVERGENCES_KEPT: usize = 100;
/// Signatures are checked in batches of this many facts.
const LAND_SIGNATURE_BATCH_FACTS: usize = 256;

/// Facts the fold passes between two reports to its progress watcher.
const LAND_REPLAY_PROGRESS_FACTS: u64 = 4096;

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

/// Replays every being of the land with `definitions` on `threads` threads.
/// With a verification checkpoint, the signatures it covers are not
/// recomputed if it holds ([`crate::check::checkpoint`]); every other check
/// and every moment still are.
///
/// `snapshot_claims`: the state digest each world snapshot of the land
/// claims, by cursor; the fold names every one its world does not give.
pub fn replay_land(
    store: &dyn Store,
    definitions: &ReplayDefinitions<'_>,
    threads: usize,
    checkpoint: Option<TrustedCheckpoint<'_>>,
    snapshot_claims: &BTreeMap<u64, Hash32>,
    progress: &dyn Progress,
) -> Result<LandReplayReport, ReplayError> {
    let windows = LandWindows::default();
    replay_land_in_windows(store, definitions, threads, checkpoint, snapshot_claims, progress, windows)
}

/// How a land-wide replay reads the land log: [`LandWindows::default`] is
/// what [`replay_land`] reads with; the report does not depend on it (a
/// test holds it to that).
#[derive(Debug, Clone, Copy)]
pub struct LandWindows {
    /// Land seqs read from the store and decoded at a time.
    pub window_facts: u64,
    /// How far ahead of the fold the windows are read, so that the acts
    /// that opened at its cursor are known when it gets there. An act
    /// sealed farther from where it opened is found late, and the fold runs
    /// again after reading every act's opening first; that fold reads such
    /// an act on its own and holds it until it gets there.
    pub read_ahead_facts_max: u64,
}

impl Default for LandWindows {
    fn default() -> LandWindows {
        LandWindows { window_facts: LAND_REPLAY_WINDOW_FACTS, read_ahead_facts_max: LAND_REPLAY_READ_AHEAD_FACTS_MAX }
    }
}

/// [`replay_land`], reading the land log as `windows` says.
pub fn replay_land_in_windows(
    store: &dyn Store,
    definitions: &ReplayDefinitions<'_>,
    threads: usize,
    checkpoint: Option<TrustedCheckpoint<'_>>,
    snapshot_claims: &BTreeMap<u64, Hash32>,
    progress: &dyn Progress,
    windows: LandWindows,
) -> Result<LandReplayReport, ReplayError> {
    let threads = threads.max(1);
    let mode = SignatureMode::Batch { batch_facts: LAND_SIGNATURE_BATCH_FACTS };
    // Every stored act is recomputed and compared byte for byte by the fold,
    // and one that is not an act body is a divergence there: verification
    // leaves act bodies to the fold rather than read each of them twice.
    let schemas = CoreSchemas::leaving_acts_to_replay();
    // The fold is the longer of the two: it alone reports progress.
    let how = HowToVerify { mode, threads, rules: schemas.rules(&Limits::default()), progress: &NoProgress };
    let plan = FoldPlan { threads, windows, snapshot_claims, progress };
    // The fold reads the land log in land order, a window at a time, and
    // hands each window, decoded, to verification: each fact is read and
    // decoded once for both. Acts open near where they are sealed, so the
    // fold first learns where each opened from the windows it reads ahead.
    let verification = LandOrderVerification::new(store.land_len()?, checkpoint, how);
    let (verified, replayed) = match fold_and_recompute(store, definitions, &plan, false, Some(verification)) {
        (Err(error), _) => return Err(error),
        (Ok(Some(replayed)), Some(verification)) => (verification.finish(store), Ok(replayed)),
        (Ok(Some(_)), None) => unreachable!("the reader hands back the verification it was given"),
        // An act sealed farther from its opening than the read-ahead was
        // found late: the fold runs again after a pass that reads every
        // opening first, and verification reads the store on its own
        // beside it, each filling the other's single-threaded stretches.
        (Ok(None), _) => std::thread::scope(|scope| {
            let verifying = scope.spawn(|| verify_land_trusting(store, checkpoint, how));
            let replayed = fold_and_recompute(store, definitions, &plan, true, None)
                .0
                .map(|replayed| replayed.expect("with every opening read first, no act is found late"));
            // A verifier that panicked is a bug in this build, not in the land.
            (verifying.join().expect("the verification thread panicked"), replayed)
        }),
    };
    let replayed = replayed?;
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
    Ok(report)
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

/// Folds the land log in order, recomputing the moments that opened at
/// each cursor (in parallel) and comparing each with its stored act at its
/// land seq. The land log is read a window at a time ([`LandWindow`]), so
/// memory holds the world, the acts in flight and the cursors where acts
/// opened, not the land.
///
/// A fact that does not decode is a hole the cursor moves past (verification
/// names it). So is an act whose body is not canonical: its form is checked
/// only when its recomputation does not encode to its stored bytes (matching
/// bytes are canonical by construction), and it is then left out exactly as
/// `Fact::decode_envelope` would have left it out.
fn fold_and_recompute<'v>(
    store: &dyn Store,
    definitions: &ReplayDefinitions<'_>,
    plan: &FoldPlan<'_>,
    openings_first: bool,
    verification: Option<LandOrderVerification<'v>>,
) -> (Result<Option<Replayed>, ReplayError>, Option<LandOrderVerification<'v>>) {
    let land_len = match store.land_len() {
        Ok(land_len) => land_len,
        Err(error) => return (Err(error.into()), verification),
    };
    let flows = GenesisFlows::default();
    std::thread::scope(|scope| {
        let (windows_read, read_ahead) = sync_channel(LAND_REPLAY_WINDOWS_READ_AHEAD);
        let window_facts = plan.windows.window_facts;
        let flows = &flows;
        let threads = plan.threads;
        let reader = scope
            .spawn(move || read_windows(store, land_len, window_facts, threads, flows, verification, windows_read));
        let window = LandWindow::new(store, land_len, plan.windows, flows, read_ahead);
        // The window (and with it the channel) is gone once the fold
        // returns, so a reader still sending stops.
        let replayed = fold_windows(store, definitions, plan, openings_first, window);
        // A reader that panicked is a bug in this build, not in the land.
        (replayed, reader.join().expect("the land log's reader panicked"))
    })
}

/// Reads the land log from its start a window of `window_facts` land seqs
/// at a time, decodes each fact for the fold, hands each window to
/// `verification` and sends it to the fold, until the end of the land log
/// or until the fold stops taking them (a store error is sent in its
/// window's place, and ends the reading). Returns the verification, fed
/// every window that was read.
///
/// The reader runs on its own thread, beside the fold: it fills the fold's
/// single-threaded stretches, where verification on the fold's own thread
/// would lengthen them.
fn read_windows<'v>(
    store: &dyn Store,
    land_len: u64,
    window_facts: u64,
    threads: usize,
    flows: &GenesisFlows,
    mut verification: Option<LandOrderVerification<'v>>,
    windows_read: SyncSender<Result<ReadWindow, StoreError>>,
) -> Option<LandOrderVerification<'v>> {
    let mut from = 0;
    while from < land_len {
        let to = land_len.min(from.saturating_add(window_facts.max(1)));
        let read = match store.land_log_with_envelopes(from, to) {
            Ok(read) => read,
            Err(error) => {
                // The fold stops at the error; nothing more is read.
                let _ = windows_read.send(Err(error));
                return verification;
            }
        };
        // Verification reads every body's form; the fold alone checks an
        // act body's form only where its recomputation differs.
        let whole = verification.is_some();
        let decoded = map_in_order(&read, threads, |(entry, envelope)| {
            let fact = match whole {
                true => Fact::decode_envelope(envelope),
                false => Fact::decode_envelope_deferring_form_of(envelope, |kind| kind == KIND_ACT),
            };
            fact.map(|fact| decode_for_fold(entry, fact, flows))
        });
        if let Some(verification) = verification.as_mut() {
            let facts: Vec<(&LandEntry, Result<&Fact, &FactError>)> = read
                .iter()
                .zip(&decoded)
                .map(|((entry, _), decoded)| (entry, decoded.as_ref().map(Decoded::fact)))
                .collect();
            verification.check_decoded(&facts);
        }
        let facts = read.iter().zip(decoded).map(|((entry, _), decoded)| (entry.land_seq, decoded.ok())).collect();
        if windows_read.send(Ok(ReadWindow { from, to, facts })).is_err() {
            // The fold stopped.
            return verification;
        }
        from = to;
    }
    verification
}

/// One window of the land log as the reader sends it: the land seqs from
/// `from` to `to`, and the fact of each that a reel claims, decoded for the
/// fold (`None`: it does not decode). A land seq no reel claims has no fact.
struct ReadWindow {
    from: u64,
    to: u64,
    facts: Vec<(u64, Option<Decoded>)>,
}

/// Windows the reader reads, decodes and verifies ahead of the fold, at most.
const LAND_REPLAY_WINDOWS_READ_AHEAD: usize = 2;

/// The world snapshots' claims, each checked against the world the fold has
/// built at its cursor on a thread of its own beside the fold, from a copy
/// of that world (its maps shared with the fold's until the fold changes
/// them). Digested on the fold's own thread, the ten snapshots of a
/// million-fact land were 5% of a land-wide replay's samples, on the thread
/// every other waits for. One is digested at a time, so at most one copy
/// is held apart from the fold's world.
struct SnapshotChecks<'scope, 'env> {
    scope: &'scope std::thread::Scope<'scope, 'env>,
    claims: &'env BTreeMap<u64, Hash32>,
    in_progress: Option<std::thread::ScopedJoinHandle<'scope, Option<u64>>>,
    mismatches: Vec<u64>,
}

impl<'scope, 'env> SnapshotChecks<'scope, 'env> {
    fn new(scope: &'scope std::thread::Scope<'scope, 'env>, claims: &'env BTreeMap<u64, Hash32>) -> Self {
        SnapshotChecks { scope, claims, in_progress: None, mismatches: Vec::new() }
    }

    /// Checks the snapshot taken at `cursor`, if there is one, against
    /// `world` (the fold's world after the first `cursor` facts).
    fn check(&mut self, cursor: u64, world: &World) {
        let Some(claimed) = self.claims.get(&cursor).copied() else { return };
        self.wait();
        let world = world.clone();
        self.in_progress = Some(self.scope.spawn(move || (world.snapshot_digest() != claimed).then_some(cursor)));
    }

    fn wait(&mut self) {
        if let Some(checking) = self.in_progress.take() {
            // A digest that panicked is a bug in this build, not in the land.
            if let Some(cursor) = checking.join().expect("a snapshot's check panicked") {
                self.mismatches.push(cursor);
            }
        }
    }

    /// The cursors of the snapshots whose state the fold does not give, in
    /// cursor order.
    fn finish(mut self) -> Vec<u64> {
        self.wait();
        self.mismatches
    }
}

/// [`fold_and_recompute`]'s fold, taking the land log from `window`.
fn fold_windows(
    store: &dyn Store,
    definitions: &ReplayDefinitions<'_>,
    plan: &FoldPlan<'_>,
    openings_first: bool,
    window: LandWindow<'_>,
) -> Result<Option<Replayed>, ReplayError> {
    std::thread::scope(|scope| {
        let mut snapshots = SnapshotChecks::new(scope, plan.snapshot_claims);
        let replayed = fold_windows_checking(store, definitions, plan, openings_first, window, &mut snapshots);
        let mismatches = snapshots.finish();
        replayed.map(|replayed| replayed.map(|replayed| Replayed { snapshot_mismatches: mismatches, ..replayed }))
    })
}

/// [`fold_windows`], each snapshot's claim handed to `snapshots` where the
/// fold reaches its cursor.
fn fold_windows_checking(
    store: &dyn Store,
    definitions: &ReplayDefinitions<'_>,
    plan: &FoldPlan<'_>,
    openings_first: bool,
    mut window: LandWindow<'_>,
    snapshots: &mut SnapshotChecks<'_, '_>,
) -> Result<Option<Replayed>, ReplayError> {
    let FoldPlan { threads, windows, snapshot_claims: _, progress } = *plan;
    let land_len = window.land_len;
    let mut replayed =
        Replayed { moments: 0, divergences_total: 0, divergences: Vec::new(), snapshot_mismatches: Vec::new() };
    if openings_first {
        window.by_cursor = openings_by_cursor(store, land_len, threads, windows.window_facts, progress)?;
        window.openings_read = true;
    }
    let mut world = World::new();
    let mut spent = Spent::default();
    progress.stage("replaying the land log", land_len, "facts");
    for land_seq in 0..land_len {
        if land_seq % LAND_REPLAY_PROGRESS_FACTS == 0 && land_seq > 0 {
            progress.advance(LAND_REPLAY_PROGRESS_FACTS);
        }
        spent.free_if_full();
        snapshots.check(land_seq, &world);
        if !window.openings_read {
            window.read_to(land_seq.saturating_add(windows.read_ahead_facts_max).saturating_add(1))?;
            if window.found_late {
                drop_in_background((spent, world, window.into_parts()));
                return Ok(None);
            }
        }
        if let Some(opening) = window.take_openings(world.cursor) {
            window.read_acts(&opening)?;
            // A moved being's history on its old land ran against that
            // land's world: it is folded, never run again here.
            let acts: Vec<(BeingId, &LandAct)> = opening
                .iter()
                .filter_map(|seq| window.act(*seq))
                .filter(|(being, act)| !world.canopy.is_arriving_history(being, act.seq))
                .collect();
            let substrate = definitions.at(&world)?;
            let outcomes = recompute_all(&substrate, &world, &acts, threads);
            // Each outcome waits in its act's slot until the fold reaches it.
            for (land_seq, recomputed) in outcomes {
                if let Some(act) = window.act_mut(land_seq) {
                    act.recomputed = Some(recomputed);
                }
            }
        }
        let (being, mut act) = match window.take(land_seq)? {
            Some(Decoded::Act { being, act }) if world.canopy.is_arriving_history(&being, act.seq) => {
                // Taken from the land the being moved from: its history
                // there, folded as such (not a moment of this land's).
                let body =
                    act.fact.body_as::<ActBody>().map_or(FoldBody::Nothing, |body| FoldBody::Act(Box::new(body)));
                world.apply_folded(land_seq, &act.fact.header, act.fact.id(), body);
                spent.facts.push(act.fact);
                continue;
            }
            Some(Decoded::Act { being, act }) => (being, act),
            Some(Decoded::Other { fact, body }) => {
                // Read in parallel before the fold.
                world.apply_folded(land_seq, &fact.header, fact.id(), body);
                spent.facts.push(fact);
                continue;
            }
            Some(Decoded::NotCanonical { .. }) | None => {
                // Keep the cursor moving past a fact the fold could not read.
                world.cursor = world.cursor.max(land_seq + 1);
                continue;
            }
            Some(Decoded::UnreadableAct { being, seq, fact, reason }) => {
                replayed.moments += 1;
                replayed.diverged(being, || unreadable_act(seq, land_seq, &reason));
                // Nothing to apply: the body does not read as an act.
                world.apply_folded(land_seq, &fact.header, fact.id(), FoldBody::Nothing);
                spent.facts.push(fact);
                continue;
            }
        };
        // The common case: the recomputed act, sealed against this world, is
        // byte for byte the stored one, so it is what the fold applies.
        let verdict = match act.recomputed.take() {
            Some(LandRecomputed { outcome, unstable, encoded_as_stored }) => {
                match sealed_as_stored(&*definitions.at(&world)?, &world, act.fact.body(), outcome, encoded_as_stored) {
                    Ok(sealed) => {
                        replayed.moments += 1;
                        world.apply_act(land_seq, &act.fact.header, act.fact.id(), &sealed.body);
                        spent.acts.push((SpentBody::Recomputed(sealed), act));
                        continue;
                    }
                    Err(outcome) => Some((outcome, unstable)),
                }
            }
            None => None,
        };
        // Not the stored bytes, so their form is not known to be canonical:
        // a body that is not is a fact `decode_envelope` refuses, a hole.
        if act.fact.body_form_error().is_some() {
            world.cursor = world.cursor.max(land_seq + 1);
            continue;
        }
        replayed.moments += 1;
        let fact = &act.fact;
        // A divergence: the whole stored body is read to explain it.
        let body = match fact.body_as::<ActBody>() {
            Ok(body) => body,
            Err(error) => {
                replayed.diverged(being, || unreadable_act(act.seq, land_seq, &error.to_string()));
                // Nothing to apply: the body was just found not to be an act.
                world.apply_folded(land_seq, &fact.header, fact.id(), FoldBody::Nothing);
                continue;
            }
        };
        let stored = StoredAct { seq: act.seq, land_seq, fact: Cow::Borrowed(fact), body };
        let substrate = definitions.at(&world)?;
        let (differences, unstable) = act_differences(&substrate, &world, &stored, verdict);
        if !differences.is_empty() {
            replayed.diverged(being, || {
                let files = definitions.files_changed_at(&world);
                let cause = classify(&[], &stored.body, &substrate, &world, unstable, files);
                Divergence { seq: act.seq, land_seq, differences, cause, context: serde_json::Value::Null }
            });
        }
        world.apply_act(land_seq, &fact.header, fact.id(), &stored.body);
        let body = stored.body;
        spent.acts.push((SpentBody::Stored(Box::new(body)), act));
    }
    snapshots.check(land_len, &world);
    // The facts after the last whole step, so the stage ends full.
    let reported = land_len.saturating_sub(1) / LAND_REPLAY_PROGRESS_FACTS * LAND_REPLAY_PROGRESS_FACTS;
    progress.advance(land_len - reported);
    drop_in_background((spent, world));
    Ok(Some(replayed))
}

/// How a fold of the land log runs, besides what it folds.
struct FoldPlan<'a> {
    threads: usize,
    windows: LandWindows,
    snapshot_claims: &'a BTreeMap<u64, Hash32>,
    progress: &'a dyn Progress,
}

/// Land seqs a land-wide replay reads from the store and decodes at a time.
pub const LAND_REPLAY_WINDOW_FACTS: u64 = 8_192;
/// How far ahead of the fold the windows are read to reach the acts that
/// opened at a cursor ([`LandWindows::read_ahead_facts_max`]): rounds of
/// the engine seal their acts within as many facts as beings acted.
pub const LAND_REPLAY_READ_AHEAD_FACTS_MAX: u64 = 16_384;
/// Folded facts whose memory is handed to a background thread at once, so
/// that the fold's single thread moves pointers and frees nothing.
const LAND_REPLAY_FREED_FACTS_AT_ONCE: usize = 4_096;

/// The land seqs of the stored acts by the cursor their moment opened at,
/// read off the acts' bodies (nothing is checked: a fact that does not
/// decode in full is a hole when the fold reaches it).
fn openings_by_cursor(
    store: &dyn Store,
    land_len: u64,
    threads: usize,
    window_facts: u64,
    progress: &dyn Progress,
) -> Result<BTreeMap<u64, Vec<u64>>, StoreError> {
    progress.stage("reading the land log", land_len, "facts");
    let mut by_cursor: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut from = 0;
    while from < land_len {
        let to = land_len.min(from + window_facts.max(1));
        let read = store.land_log_with_envelopes(from, to)?;
        let cursors =
            map_in_order(&read, threads, |(entry, envelope)| Some((opening_cursor(envelope)?, entry.land_seq)));
        for (cursor, land_seq) in cursors.into_iter().flatten() {
            by_cursor.entry(cursor).or_default().push(land_seq);
        }
        progress.advance(to - from);
        from = to;
    }
    Ok(by_cursor)
}

/// The cursor an act's moment opened at, or `None` for any other fact (or
/// an act whose opening does not read).
pub(crate) fn opening_cursor(envelope: &[u8]) -> Option<u64> {
    match Fact::peek_kind_and_body(envelope) {
        Some((kind, body)) => (kind == KIND_ACT).then(|| ActOpening::read(body).ok().map(|opening| opening.cursor))?,
        // Whatever does not read in place is left to the full decoding.
        None => {
            let fact = Fact::decode_envelope_deferring_form_of(envelope, |kind| kind == KIND_ACT).ok()?;
            (fact.kind() == KIND_ACT).then(|| ActOpening::read(fact.body()).ok().map(|opening| opening.cursor))?
        }
    }
}

/// The land log as the fold reads it: the decoded facts from the fold's
/// land seq up to as far as has been read, and acts read one by one beyond
/// that.
struct LandWindow<'a> {
    store: &'a dyn Store,
    /// The windows the reader read, decoded and verified, in land order.
    read_ahead: Receiver<Result<ReadWindow, StoreError>>,
    land_len: u64,
    windows: LandWindows,
    flows: &'a GenesisFlows,
    /// The land seq of `decoded`'s first slot: the fold's next fact.
    first: u64,
    /// Each land seq's fact from `first` on, decoded (`None`: a hole, or an act in `far`).
    decoded: VecDeque<Option<Decoded>>,
    /// Acts beyond what the windows have reached, read on their own.
    far: BTreeMap<u64, Decoded>,
    /// The land seqs of the acts read so far (or of every act, once
    /// `openings_read`), by the cursor each opened at; taken as the fold
    /// reaches each cursor.
    by_cursor: BTreeMap<u64, Vec<u64>>,
    /// Every act's opening was read before the fold began.
    openings_read: bool,
    /// The last cursor whose acts the fold took.
    openings_taken_through: Option<u64>,
    /// An act was read whose cursor the fold had already passed: its moment
    /// was not recomputed there, so the fold must run again with every
    /// opening read first.
    found_late: bool,
    /// The reality root (the being of land seq 0), once read.
    root: Option<BeingId>,
    /// Beings moving here, as the windows read so far record them, and the
    /// seq of each one's move: their facts up to it are their history on
    /// another land, whose openings are that land's cursors and are not
    /// noted (the fold folds those acts; it never runs them again).
    arriving: BTreeMap<BeingId, u64>,
}

impl<'a> LandWindow<'a> {
    fn new(
        store: &'a dyn Store,
        land_len: u64,
        windows: LandWindows,
        flows: &'a GenesisFlows,
        read_ahead: Receiver<Result<ReadWindow, StoreError>>,
    ) -> LandWindow<'a> {
        LandWindow {
            store,
            read_ahead,
            land_len,
            windows,
            flows,
            first: 0,
            decoded: VecDeque::new(),
            far: BTreeMap::new(),
            by_cursor: BTreeMap::new(),
            openings_read: false,
            openings_taken_through: None,
            found_late: false,
            root: None,
            arriving: BTreeMap::new(),
        }
    }

    /// What the window holds, to be freed away from the fold's thread.
    fn into_parts(self) -> (VecDeque<Option<Decoded>>, BTreeMap<u64, Decoded>) {
        (self.decoded, self.far)
    }

    /// Notes where the act at `land_seq` opened, when the openings were not
    /// read first.
    fn note_opening(&mut self, cursor: u64, land_seq: u64) {
        if self.openings_read {
            return;
        }
        if self.openings_taken_through.is_some_and(|taken| cursor <= taken) {
            self.found_late = true;
        }
        self.by_cursor.entry(cursor).or_default().push(land_seq);
    }

    /// Notes the root, and the beings moving here as its `world` facts
    /// record them (a `moved-in` ends one's history from elsewhere), as
    /// `World::apply_folded` reads them.
    fn note_arrivals(&mut self, land_seq: u64, fact: &Fact, body: &FoldBody) {
        let being = fact.header.being;
        if land_seq == 0 {
            self.root = Some(being);
        }
        match body {
            FoldBody::World(world) if self.root == Some(being) => {
                for effect in &world.effects {
                    if let crate::world::Effect::BeingArriving { arriving } = effect {
                        self.arriving.insert(arriving.being, arriving.through_seq);
                    }
                }
            }
            // Its own `moved-in` here, after its move (one in its history,
            // from a land it lived on before, changes nothing).
            FoldBody::MovedIn(_) if self.arriving.get(&being).is_some_and(|through| fact.header.seq > *through) => {
                self.arriving.remove(&being);
            }
            _ => {}
        }
    }

    /// The land seqs of the acts that opened at `cursor`, as far as they
    /// are known (every one, when the openings were read first); the fold
    /// takes each cursor's once, in order.
    fn take_openings(&mut self, cursor: u64) -> Option<Vec<u64>> {
        self.openings_taken_through = Some(cursor);
        self.by_cursor.remove(&cursor)
    }

    /// The land seq the windows have read up to.
    fn horizon(&self) -> u64 {
        self.first + self.decoded.len() as u64
    }

    /// Reads and decodes windows of the land log until `end` is reached.
    fn read_to(&mut self, end: u64) -> Result<(), StoreError> {
        while self.horizon() < end.min(self.land_len) {
            // The reader sends every window up to the end of the land log,
            // or an error and nothing more; it stops early only by panicking.
            let ReadWindow { from, to, facts } =
                self.read_ahead.recv().expect("the land log's reader stopped early")?;
            assert_eq!(from, self.horizon(), "the reader sends the windows in land order");
            let mut slots: Vec<Option<Decoded>> = (from..to).map(|_| None).collect();
            for (land_seq, decoded) in facts {
                // An act already read on its own stays where it is.
                if self.far.contains_key(&land_seq) {
                    continue;
                }
                match &decoded {
                    Some(Decoded::Act { being, act })
                        if self.arriving.get(being).is_none_or(|through| act.seq > *through) =>
                    {
                        self.note_opening(act.opening.cursor, land_seq)
                    }
                    Some(Decoded::Other { fact, body }) => self.note_arrivals(land_seq, fact, body),
                    _ => {}
                }
                if let Some(slot) = land_seq.checked_sub(from).and_then(|at| slots.get_mut(usize::try_from(at).ok()?)) {
                    *slot = decoded;
                }
            }
            self.decoded.extend(slots);
        }
        Ok(())
    }

    /// Makes sure the acts at `land_seqs` are read: with the windows as far
    /// as the read-ahead allows, the rest on their own.
    fn read_acts(&mut self, land_seqs: &[u64]) -> Result<(), StoreError> {
        let reach = self.first.saturating_add(self.windows.read_ahead_facts_max);
        if let Some(farthest_in_reach) = land_seqs.iter().copied().filter(|land_seq| *land_seq < reach).max() {
            self.read_to(farthest_in_reach + 1)?;
        }
        for &land_seq in land_seqs {
            if land_seq < self.horizon() || land_seq >= self.land_len || self.far.contains_key(&land_seq) {
                continue;
            }
            for (entry, envelope) in self.store.land_log_with_envelopes(land_seq, land_seq + 1)? {
                // Verification checks it when the windows reach it.
                if let Ok(fact) = Fact::decode_envelope_deferring_form_of(&envelope, |kind| kind == KIND_ACT) {
                    self.far.insert(land_seq, decode_for_fold(&entry, fact, self.flows));
                }
            }
        }
        Ok(())
    }

    /// The act at `land_seq`, if it is read and is one.
    fn act(&self, land_seq: u64) -> Option<(BeingId, &LandAct)> {
        let decoded = match self.far.get(&land_seq) {
            Some(decoded) => decoded,
            None => self.decoded.get(usize::try_from(land_seq.checked_sub(self.first)?).ok()?)?.as_ref()?,
        };
        match decoded {
            Decoded::Act { being, act } => Some((*being, act)),
            _ => None,
        }
    }

    fn act_mut(&mut self, land_seq: u64) -> Option<&mut LandAct> {
        let decoded = match self.far.get_mut(&land_seq) {
            Some(decoded) => decoded,
            None => self.decoded.get_mut(usize::try_from(land_seq.checked_sub(self.first)?).ok()?)?.as_mut()?,
        };
        match decoded {
            Decoded::Act { act, .. } => Some(act),
            _ => None,
        }
    }

    /// The fold's next fact, `land_seq`, taken out of the window.
    fn take(&mut self, land_seq: u64) -> Result<Option<Decoded>, StoreError> {
        assert_eq!(land_seq, self.first, "the fold takes the land log in order");
        self.read_to(land_seq + 1)?;
        let in_window = self.decoded.pop_front().flatten();
        self.first += 1;
        Ok(self.far.remove(&land_seq).or(in_window))
    }
}

/// One stored fact, decoded for the fold (an act's body form may not have
/// been checked: the fold checks it only where it must).
fn decode_for_fold(entry: &LandEntry, fact: Fact, flows: &GenesisFlows) -> Decoded {
    if fact.kind() != KIND_ACT {
        return Decoded::other(fact, flows);
    }
    // Only the fields a recomputation reads are decoded: an act whose
    // recomputation encodes to the stored bytes is the stored act. The rest
    // is skipped by its heads alone: an act that is not canonical cannot
    // match its recomputation, whatever was read.
    match ActOpening::read(fact.body()) {
        Ok(opening) => Decoded::Act {
            being: entry.being,
            act: LandAct {
                seq: entry.seq,
                land_seq: entry.land_seq,
                fact,
                opening: Box::new(opening),
                recomputed: None,
            },
        },
        // Not canonical: `decode_envelope` refuses it.
        Err(_) if fact.body_form_error().is_some() => Decoded::NotCanonical { fact },
        // Not an act a moment could have sealed: a divergence of its own,
        // named as reading the whole body names it.
        Err(opening_error) => {
            let reason = match fact.body_as::<ActBody>() {
                Err(error) => error.to_string(),
                Ok(_) => opening_error.to_string(),
            };
            Decoded::UnreadableAct { being: entry.being, seq: entry.seq, fact, reason }
        }
    }
}

/// Folded facts and act bodies, freed away from the fold's thread.
#[derive(Default)]
struct Spent {
    facts: Vec<Fact>,
    acts: Vec<(SpentBody, LandAct)>,
}

impl Spent {
    /// Hands what was kept to a background thread once there is enough of it.
    fn free_if_full(&mut self) {
        if self.facts.len() + self.acts.len() >= LAND_REPLAY_FREED_FACTS_AT_ONCE {
            drop_in_background(std::mem::take(self));
        }
    }
}

/// One stored fact, decoded: an act with what its recomputation reads, any
/// other fact with its body read for the fold, or an act that does not hold
/// what a moment reads (a divergence).
enum Decoded {
    Act {
        being: BeingId,
        act: LandAct,
    },
    Other {
        fact: Fact,
        body: FoldBody,
    },
    /// An act whose body does not hold what a moment reads (why, in `reason`).
    UnreadableAct {
        being: BeingId,
        seq: u64,
        fact: Fact,
        reason: String,
    },
    /// An act whose body is not canonical: `Fact::decode_envelope` refuses
    /// it, and the fold passes over it.
    NotCanonical {
        fact: Fact,
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
struct LandAct {
    seq: u64,
    land_seq: u64,
    fact: Fact,
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

/// A folded act's body, kept until freed away from the fold's single thread.
#[allow(dead_code, reason = "the bodies are held only to be freed later")]
enum SpentBody {
    Recomputed(Box<crate::moment::Act>),
    Stored(Box<ActBody>),
}

impl Decoded {
    fn other(fact: Fact, flows: &GenesisFlows) -> Decoded {
        Decoded::Other { body: FoldBody::read_keeping_flows(&fact.header, fact.body(), flows), fact }
    }

    /// The stored fact, as decoded.
    fn fact(&self) -> &Fact {
        match self {
            Decoded::Act { act, .. } => &act.fact,
            Decoded::Other { fact, .. } | Decoded::UnreadableAct { fact, .. } | Decoded::NotCanonical { fact } => fact,
        }
    }
}

/// Recomputes the moments that opened at one cursor, in parallel.
fn recompute_all(
    substrate: &Substrate,
    world: &World,
    opening: &[(BeingId, &LandAct)],
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
        let inputs = act.opening.inputs(&act.fact);
        let Recomputed { outcome, unstable, .. } =
            recompute(substrate, world, *being, inputs, &agrees, Detail::OutcomeOnly);
        (act.land_seq, LandRecomputed { outcome, unstable, encoded_as_stored: encoded_as_stored.get() })
    })
}
