//! World snapshots in use: the engine writes one every
//! `snapshot_every_facts` facts; `seed verify` vouches for them; replay and
//! an engine's opening start from the nearest vouched one instead of folding
//! the land log from genesis. A snapshot is written by a thread of its own
//! while the land seals on ([`begin_snapshot`]). The signed file and the vouched record are
//! `seed_store::snapshot`'s; the world's bytes are `World::snapshot_bytes`,
//! written to the file as they are encoded (`World::write_snapshot_to`).
//!
//! A snapshot never changes what a replay reports: it is the world the fold
//! would have built at its cursor (checked when vouched, by `--paranoid`
//! against a fold from the snapshot before, and by `seed replay --all`
//! against the whole fold).

use crate::fact::{BeingId, FactId, Hash32};
use crate::land::Land;
use crate::snapshot::{SnapshotError, SnapshotShelf, SnapshotStreamed};
use crate::store::{Store, StoreError};
use crate::world::World;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The id of the fact at land seq `cursor - 1` (what a snapshot at `cursor`
/// binds to), or `None` if the store holds none there.
pub fn last_fact_before(store: &dyn Store, cursor: u64) -> Result<Option<FactId>, StoreError> {
    if cursor == 0 {
        return Ok(Some(FactId::ZERO));
    }
    let Some(entry) = store.land_log(cursor - 1, cursor)?.into_iter().next() else { return Ok(None) };
    Ok(store.fact_at(&entry)?.map(|stored| stored.fact.id()))
}

/// The size of a snapshot (50 MiB) for which the spacing of the snapshot
/// after the next grows by one more `snapshot_every_facts`. A snapshot
/// writes the whole world, which grows as the land does (a crowd's
/// memories gain an item every moment), so at a fixed spacing the
/// snapshots of a long run cost time and disk that grow with the square of
/// its length: the crowd's ten snapshots over its 100 rounds take 374 MB
/// beside a 245 MB land, and past about 450 rounds writing one would take
/// longer than sealing the 100,000 facts to the next, so the rounds would
/// wait for it. Writing a snapshot takes about 8.6 ms of CPU per MiB and
/// sealing a fact about 46 µs (docs/performance.md), so at the default
/// spacing (100,000 facts) a snapshot's writing costs at most about a
/// tenth of the sealing it is spaced by, and a run's snapshots add up to a
/// few times its last one. A world under this size keeps the land's own
/// spacing.
pub const SNAPSHOT_SPACING_STEP_BYTES: u64 = 50 << 20;

/// The cursor at or past which the snapshot after the one at
/// `last_snapshot` is due, the world being at `cursor`: the first multiple
/// of `every` (snapshots fall near round numbers) at least the spacing
/// past the multiple `last_snapshot` was due at, and past `cursor`. The
/// spacing is `every`, once more for each whole `step_bytes` (by default
/// [`SNAPSHOT_SPACING_STEP_BYTES`]) of `snapshot_before_bytes` (the file
/// of the snapshot before the one at `last_snapshot`, 0 if none). Only
/// snapshots already on the shelf are measured, so a land reopened mid-run
/// (a resumed run, `seed up`) schedules its next snapshot where the run
/// would have.
pub fn next_snapshot_at(
    last_snapshot: u64,
    cursor: u64,
    every: u64,
    snapshot_before_bytes: u64,
    step_bytes: u64,
) -> u64 {
    assert!(every > 0 && step_bytes > 0, "a land that writes no snapshots schedules none");
    let spacing_multiples = 1 + snapshot_before_bytes / step_bytes;
    let after_last = (last_snapshot / every).saturating_add(spacing_multiples).saturating_mul(every);
    let after_cursor = (cursor / every).saturating_add(1).saturating_mul(every);
    after_last.max(after_cursor)
}

/// The size of the snapshot file at `cursor` on `land`'s shelf (0 if it
/// cannot be read: the next spacing is then the land's least).
pub fn snapshot_file_bytes(land: &Land, cursor: u64) -> u64 {
    std::fs::metadata(land.snapshots().path_of(cursor)).map_or(0, |metadata| metadata.len())
}

/// How much larger than the snapshot before it the next one's buffer is
/// made to begin with: a world grows between snapshots (the crowd's million
/// beings, by 18% a round, as their memories do).
pub const SNAPSHOT_BUFFER_MARGIN_PERCENT: usize = 25;

/// The buffer to write the next snapshot in, from the size of the one
/// before it (0: none written yet, the buffer grows as it is written).
pub fn snapshot_buffer_bytes(previous_snapshot_bytes: usize) -> usize {
    previous_snapshot_bytes.saturating_add(previous_snapshot_bytes / 100 * SNAPSHOT_BUFFER_MARGIN_PERCENT)
}

/// A snapshot written: its cursor and the size of its world's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotWritten {
    pub cursor: u64,
    pub world_bytes: usize,
}

/// Begins a snapshot of `world` (the fold of the whole land log: the
/// caller holds the land's writer and has waited for every seal; a copy,
/// its rows and memories shared behind pointers), written by a thread of
/// its own while the land seals on: the next round need not wait for a
/// world to be encoded, digested and written. Checked here, before the
/// thread starts: the world is at the land's end, and the fact it follows.
/// Its bytes go to the file as they are encoded (`World::write_snapshot_to`);
/// a world that cannot be written so is encoded whole, into a buffer of
/// `buffer_bytes` to begin with ([`snapshot_buffer_bytes`] of the one before it).
pub fn begin_snapshot(land: &Land, world: World, buffer_bytes: usize) -> Result<SnapshotInWriting, SnapshotWriteError> {
    let cursor = world.cursor;
    let land_len = land.store().land_len()?;
    if cursor != land_len {
        return Err(SnapshotWriteError::NotAtTheEnd { cursor, land_len });
    }
    let last_fact =
        last_fact_before(land.store(), cursor)?.ok_or(SnapshotWriteError::NotAtTheEnd { cursor, land_len })?;
    let signer = land.snapshot_signer()?;
    let thread = std::thread::Builder::new()
        .name("seed-snapshot".into())
        .spawn(move || {
            // Digested as it is encoded, a row at a time (`World::write_canonical_state`):
            // no copy of the state is held beside the round running meanwhile.
            let state_digest = world.snapshot_digest();
            let world_bytes = write_world_snapshot(&signer, &world, last_fact, state_digest, buffer_bytes)?;
            // The copy's own pointers are freed before memory is handed back.
            drop(world);
            crate::freed_memory::release_freed_memory();
            Ok(SnapshotWritten { cursor, world_bytes })
        })
        .map_err(|source| SnapshotWriteError::Thread { source })?;
    Ok(SnapshotInWriting { cursor, thread: Some(thread) })
}

/// A snapshot its own thread is writing ([`begin_snapshot`]). Waited for
/// with [`SnapshotInWriting::wait`]; dropped, it is waited for too (and how
/// it ended is logged), so no snapshot is left half written by a process
/// that goes on to exit.
pub struct SnapshotInWriting {
    cursor: u64,
    thread: Option<std::thread::JoinHandle<Result<SnapshotWritten, SnapshotWriteError>>>,
}

impl SnapshotInWriting {
    /// The cursor of the world being written.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// Waits until the snapshot is written (or could not be).
    pub fn wait(mut self) -> Result<SnapshotWritten, SnapshotWriteError> {
        let thread = self.thread.take().expect("a snapshot in writing has its thread until waited for");
        match thread.join() {
            Ok(written) => written,
            // A panic while writing is a bug of this program: it goes on up.
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl Drop for SnapshotInWriting {
    fn drop(&mut self) {
        let Some(thread) = self.thread.take() else { return };
        match thread.join() {
            Ok(Ok(written)) => {
                tracing::debug!(cursor = written.cursor, bytes = written.world_bytes, "world snapshot written")
            }
            Ok(Err(error)) => tracing::warn!(cursor = self.cursor, %error, "no world snapshot written"),
            Err(_) => tracing::error!(cursor = self.cursor, "the thread writing a world snapshot panicked"),
        }
    }
}

/// Writes `world` as the snapshot at its cursor, claiming `state_digest`
/// (its `World::snapshot_digest`), streamed or else whole (see
/// [`begin_snapshot`]); returns the world's length in bytes.
fn write_world_snapshot(
    signer: &crate::land::SnapshotSigner,
    world: &World,
    last_fact: FactId,
    state_digest: Hash32,
    buffer_bytes: usize,
) -> Result<usize, SnapshotWriteError> {
    let streamed =
        signer.write_streamed(world.cursor, last_fact, state_digest, |sink| world.write_snapshot_to(sink))?;
    if let SnapshotStreamed::Written { world_bytes } = streamed {
        return Ok(usize::try_from(world_bytes).unwrap_or(usize::MAX));
    }
    tracing::debug!(cursor = world.cursor, "the world snapshot could not be streamed; encoding it whole");
    let bytes = world
        .snapshot_bytes_with_capacity(buffer_bytes)
        .map_err(|error| SnapshotWriteError::World { reason: error.to_string() })?;
    let world_bytes = bytes.len();
    signer.write(world.cursor, last_fact, state_digest, bytes)?;
    Ok(world_bytes)
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotWriteError {
    #[error("the world folds {cursor} facts but the land holds {land_len}: a snapshot is written only at the end")]
    NotAtTheEnd { cursor: u64, land_len: u64 },
    #[error("the world cannot be written: {reason}")]
    World { reason: String },
    #[error("no thread could be started to write the snapshot: {source}")]
    Thread { source: std::io::Error },
    #[error(transparent)]
    Land(#[from] crate::land::LandError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a clean verification made of the snapshots on the shelf.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VouchReport {
    pub vouched: Vec<u64>,
    /// Snapshots not vouched for, with why.
    pub refused: Vec<(u64, String)>,
}

/// Why a snapshot on the shelf is not vouched for, or not used.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotRefusal {
    #[error("beyond the {verified_facts} verified facts")]
    BeyondVerified { verified_facts: u64 },
    #[error(transparent)]
    File(#[from] SnapshotError),
    #[error("not signed by this land's reality root")]
    NotSignedByRoot,
    #[error("its signature or its world's digest does not hold")]
    SignatureFails,
    #[error(transparent)]
    World(#[from] crate::world::snapshot::WorldSnapshotError),
    #[error("its world folds {folds} facts, not {cursor}")]
    WrongCursor { folds: u64, cursor: u64 },
    #[error("its world does not give the state digest it was signed with")]
    WrongStateDigest,
    #[error("the land's fact at land seq {land_seq} is not the one it was taken after")]
    NotAfterTheLogsFact { land_seq: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("not vouched for")]
    NotVouched,
    #[error("the file is not the one a verification vouched for")]
    NotTheVouchedFile,
    #[error("the fold to it failed: {0}")]
    Fold(Box<crate::engine::EngineError>),
}

/// Why the snapshot at `cursor` cannot be vouched for against `land`'s log,
/// or its world and file digest if it can.
fn check_snapshot(
    land: &Land,
    shelf: &SnapshotShelf,
    cursor: u64,
    verified_facts: u64,
) -> Result<(World, Hash32), SnapshotRefusal> {
    if cursor > verified_facts {
        return Err(SnapshotRefusal::BeyondVerified { verified_facts });
    }
    let (snapshot, digest) = shelf.read(cursor)?;
    if snapshot.claim.signer != land.root() {
        return Err(SnapshotRefusal::NotSignedByRoot);
    }
    if !snapshot.holds() {
        return Err(SnapshotRefusal::SignatureFails);
    }
    let world = World::from_snapshot_bytes(&snapshot.world)?;
    if world.cursor != cursor {
        return Err(SnapshotRefusal::WrongCursor { folds: world.cursor, cursor });
    }
    if world.snapshot_digest() != snapshot.claim.state_digest {
        return Err(SnapshotRefusal::WrongStateDigest);
    }
    follows_the_land_log(land.store(), &snapshot.claim)?;
    Ok((world, digest))
}

/// Why the snapshot `claim` speaks of does not belong to `store`'s log: the
/// fact it was taken after is not the log's fact at that place.
fn follows_the_land_log(store: &dyn Store, claim: &crate::snapshot::SnapshotClaim) -> Result<(), SnapshotRefusal> {
    match last_fact_before(store, claim.cursor)? {
        Some(id) if id == claim.last_fact => Ok(()),
        _ => Err(SnapshotRefusal::NotAfterTheLogsFact { land_seq: claim.cursor.saturating_sub(1) }),
    }
}

/// After a verification without problems over the first `verified_facts`
/// facts: checks every snapshot on the shelf and has the root vouch for
/// those that hold (replacing the previous record).
pub fn vouch(land: &Land, verified_facts: u64) -> Result<VouchReport, crate::land::LandError> {
    let shelf = land.snapshots();
    let mut report = VouchReport::default();
    let mut files = BTreeMap::new();
    for cursor in shelf.cursors()? {
        match check_snapshot(land, &shelf, cursor, verified_facts) {
            Ok((_, digest)) => {
                files.insert(cursor, digest);
                report.vouched.push(cursor);
            }
            Err(refusal) => report.refused.push((cursor, refusal.to_string())),
        }
    }
    land.write_vouched_snapshots(files)?;
    Ok(report)
}

/// Where a replay (or an opening) may take the world from instead of folding.
pub trait WorldSnapshots: Sync {
    /// The cursor of the latest usable snapshot at or before `cursor`.
    fn at_or_before(&self, cursor: u64) -> Option<u64>;
    /// The world at `cursor` (one of the cursors `at_or_before` gives), or
    /// `None` if it cannot be used after all (the fold goes on instead).
    fn world(&self, cursor: u64) -> Option<World>;
    /// [`WorldSnapshots::world`] for a replay of `being`'s moments, which
    /// read no other being's memory: the others' may be left out.
    fn world_for_replay_of(&self, cursor: u64, being: BeingId) -> Option<World> {
        let _ = being;
        self.world(cursor)
    }
    /// Facts per being of the world a replay must be able to skip before it
    /// reads a snapshot rather than folding on.
    fn skip_facts_per_being(&self) -> u64 {
        crate::replay::REPLAY_SNAPSHOT_SKIP_FACTS_PER_BEING
    }
}

/// The snapshots a clean verification vouched for and that still are the
/// files it vouched for, bound to this store's log.
pub struct VouchedWorlds<'a> {
    store: &'a dyn Store,
    shelf: SnapshotShelf,
    files: BTreeMap<u64, Hash32>,
    /// Re-derive each snapshot by folding from the one before (or genesis).
    paranoid: bool,
    /// What was used and what was not, for the report's reader.
    log: Mutex<SnapshotUse>,
    skip_facts_per_being: u64,
}

/// Which snapshots a run took its world from, and which it set aside.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotUse {
    pub used: Vec<u64>,
    pub set_aside: Vec<(u64, String)>,
}

impl<'a> VouchedWorlds<'a> {
    /// The vouched snapshots of `land_dir` (none when the record is missing,
    /// does not read, or is not signed by `root` with its current key).
    pub fn open(
        land_dir: &std::path::Path,
        store: &'a dyn Store,
        root: crate::fact::BeingId,
        paranoid: bool,
    ) -> Result<VouchedWorlds<'a>, SnapshotError> {
        let shelf = SnapshotShelf::of_land(land_dir);
        let mut log = SnapshotUse::default();
        let files = match shelf.vouched() {
            Ok(Some(vouched)) => {
                let root_key = store.head(&root).ok().flatten().map(|head| head.public_key);
                if vouched.signer == root && Some(vouched.public_key) == root_key && vouched.signature_holds() {
                    let land_len = store.land_len().unwrap_or(0);
                    vouched.files.into_iter().filter(|(cursor, _)| *cursor <= land_len && *cursor > 0).collect()
                } else {
                    log.set_aside.push((0, "the vouched record is not signed by the root's current key".into()));
                    BTreeMap::new()
                }
            }
            Ok(None) => BTreeMap::new(),
            Err(error) => {
                log.set_aside.push((0, error.to_string()));
                BTreeMap::new()
            }
        };
        let skip_facts_per_being = crate::replay::REPLAY_SNAPSHOT_SKIP_FACTS_PER_BEING;
        Ok(VouchedWorlds { store, shelf, files, paranoid, log: Mutex::new(log), skip_facts_per_being })
    }

    /// No snapshots at all: every world is folded from genesis.
    pub fn none(land_dir: &std::path::Path, store: &'a dyn Store) -> VouchedWorlds<'a> {
        VouchedWorlds {
            store,
            shelf: SnapshotShelf::of_land(land_dir),
            files: BTreeMap::new(),
            paranoid: false,
            log: Mutex::new(SnapshotUse::default()),
            skip_facts_per_being: crate::replay::REPLAY_SNAPSHOT_SKIP_FACTS_PER_BEING,
        }
    }

    /// Takes a snapshot's world to skip even `facts_per_being` facts per
    /// being (0: any skip at all; tests use it on small worlds).
    pub fn skipping_at_least(mut self, facts_per_being: u64) -> VouchedWorlds<'a> {
        self.skip_facts_per_being = facts_per_being;
        self
    }

    pub fn usage(&self) -> SnapshotUse {
        self.log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn set_aside(&self, cursor: u64, reason: String) {
        tracing::warn!(cursor, %reason, "a world snapshot was set aside");
        self.log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).set_aside.push((cursor, reason));
    }

    /// The vouched snapshot's world at `cursor`, read and checked against
    /// its vouch and its log, with every being's memory or (`memory_of`)
    /// only that being's.
    fn read_vouched(&self, cursor: u64, memory_of: Option<BeingId>) -> Result<World, SnapshotRefusal> {
        let expected = self.files.get(&cursor).ok_or(SnapshotRefusal::NotVouched)?;
        let (bytes, digest) = self.shelf.read_bytes(cursor)?;
        if digest != *expected {
            return Err(SnapshotRefusal::NotTheVouchedFile);
        }
        let snapshot = crate::snapshot::SignedSnapshot::decode_owned(bytes, &self.shelf.path_of(cursor))?;
        follows_the_land_log(self.store, &snapshot.claim)?;
        Ok(match memory_of {
            Some(being) => World::from_snapshot_bytes_keeping_memory_of(&snapshot.world, being)?,
            None => World::from_snapshot_bytes(&snapshot.world)?,
        })
    }

    /// The world at `cursor` folded from the vouched snapshot before it (or genesis).
    fn refold(&self, cursor: u64) -> Result<World, SnapshotRefusal> {
        let mut world = match self.files.range(..cursor).next_back() {
            Some((&before, _)) => self.read_vouched(before, None)?,
            None => World::new(),
        };
        crate::engine::fold_until(self.store, &mut world, cursor)
            .map_err(|error| SnapshotRefusal::Fold(Box::new(error)))?;
        Ok(world)
    }
}

impl WorldSnapshots for VouchedWorlds<'_> {
    fn skip_facts_per_being(&self) -> u64 {
        self.skip_facts_per_being
    }

    fn at_or_before(&self, cursor: u64) -> Option<u64> {
        self.files.range(..=cursor).next_back().map(|(cursor, _)| *cursor)
    }

    fn world(&self, cursor: u64) -> Option<World> {
        self.world_keeping_memory_of(cursor, None)
    }

    fn world_for_replay_of(&self, cursor: u64, being: BeingId) -> Option<World> {
        // A paranoid read holds the whole world to the fold's, so it reads it whole.
        self.world_keeping_memory_of(cursor, (!self.paranoid).then_some(being))
    }
}

impl VouchedWorlds<'_> {
    /// [`WorldSnapshots::world`], every being's memory read or (`memory_of`) one's.
    fn world_keeping_memory_of(&self, cursor: u64, memory_of: Option<BeingId>) -> Option<World> {
        let read = match self.read_vouched(cursor, memory_of) {
            Ok(world) => world,
            Err(refusal) => {
                self.set_aside(cursor, refusal.to_string());
                return None;
            }
        };
        if self.paranoid {
            match self.refold(cursor) {
                Ok(folded) if folded == read => {}
                Ok(folded) => {
                    self.set_aside(cursor, "it differs from the fold of the facts before it; the fold is used".into());
                    self.log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).used.push(cursor);
                    return Some(folded);
                }
                Err(reason) => {
                    self.set_aside(cursor, format!("it could not be re-derived: {reason}"));
                    return None;
                }
            }
        }
        self.log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).used.push(cursor);
        Some(read)
    }
}

/// What the snapshot files on a land's shelf claim: what `seed replay
/// --all` holds the fold to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShelfClaims {
    /// The state digest each file of this build's world format claims, by
    /// cursor (files that do not read or whose signature does not hold
    /// claim nothing: no reader uses them).
    pub claims: BTreeMap<u64, Hash32>,
    /// The files of another world format, by cursor, with that format:
    /// written by another build, which digested its world its own way, so
    /// their claims are not held to this build's fold (`seed reindex`
    /// writes them again).
    pub other_formats: BTreeMap<u64, Option<u64>>,
}

/// The claims of the snapshot files on `land_dir`'s shelf.
pub fn shelf_claims(land_dir: &std::path::Path) -> ShelfClaims {
    let shelf = SnapshotShelf::of_land(land_dir);
    let mut read = ShelfClaims::default();
    for cursor in shelf.cursors().unwrap_or_default() {
        let Some((snapshot, _)) = shelf.read(cursor).ok().filter(|(snapshot, _)| snapshot.holds()) else {
            continue;
        };
        match crate::world::snapshot::snapshot_format_version(&snapshot.world) {
            Some(crate::world::snapshot::WORLD_SNAPSHOT_FORMAT_VERSION) => {
                read.claims.insert(cursor, snapshot.claim.state_digest);
            }
            other => {
                read.other_formats.insert(cursor, other);
            }
        }
    }
    read
}

/// What [`rebuild`] found and did: the memories the fold of the facts
/// built, and each snapshot on the shelf held to that fold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RebuildReport {
    /// Beings that remember anything, and their items, at the land's end.
    pub beings_remembering: usize,
    pub items: usize,
    /// `World::memories_digest` of the fold at the land's end.
    pub memories_digest: Hash32,
    /// Snapshots whose claim the fold gave back.
    pub agreed: Vec<u64>,
    /// Snapshots written again from the fold (their claim differed, or the
    /// file did not read).
    pub rebuilt: Vec<u64>,
}

/// Rebuilds what a land derives from its facts beyond the store's indexes:
/// the world, each being's memory among it, folded from genesis (no
/// snapshot is read), and every snapshot on the shelf held to that fold at
/// its cursor; one that claims another world is written again from the
/// fold, and the vouches are withdrawn so that the next clean `seed verify`
/// vouches afresh. The land must not be running.
pub fn rebuild(land: &Land) -> Result<RebuildReport, RebuildError> {
    let store = land.store();
    let shelf = SnapshotShelf::of_land(land.dir());
    let land_len = store.land_len()?;
    let claims = shelf_claims(land.dir()).claims;
    let mut report = RebuildReport::default();
    let mut world = World::new();
    // The root's key, read once, when the first snapshot is written again.
    let mut signer = None;
    let cursors: Vec<u64> =
        shelf.cursors().unwrap_or_default().into_iter().filter(|cursor| *cursor <= land_len).collect();
    for cursor in cursors {
        crate::engine::fold_until(store, &mut world, cursor)?;
        if claims.get(&cursor) == Some(&world.snapshot_digest()) {
            report.agreed.push(cursor);
            continue;
        }
        let last_fact = last_fact_before(store, cursor)?.ok_or(RebuildError::NoFactBefore { cursor })?;
        if signer.is_none() {
            signer = Some(land.snapshot_signer().map_err(SnapshotWriteError::Land)?);
        }
        let signer = signer.as_ref().expect("just set");
        write_world_snapshot(signer, &world, last_fact, world.snapshot_digest(), 0)?;
        report.rebuilt.push(cursor);
    }
    if !report.rebuilt.is_empty() {
        shelf.withdraw_vouches()?;
    }
    crate::engine::fold_to_end(store, &mut world)?;
    report.beings_remembering = world.memories.values().filter(|memory| !memory.is_empty()).count();
    report.items = world.memories.values().map(|memory| memory.len()).sum();
    report.memories_digest = world.memories_digest();
    Ok(report)
}

#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    #[error("the land log holds no fact before land seq {cursor}, where a snapshot stands")]
    NoFactBefore { cursor: u64 },
    #[error(transparent)]
    Written(#[from] SnapshotWriteError),
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error(transparent)]
    Land(#[from] crate::land::LandError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
}

#[cfg(test)]
mod buffer_tests {
    use super::*;

    fn check(previous_snapshot_bytes: usize, expected: usize) {
        assert_eq!(snapshot_buffer_bytes(previous_snapshot_bytes), expected, "after {previous_snapshot_bytes}");
    }

    #[test]
    fn the_next_snapshots_buffer_is_the_last_ones_size_and_a_quarter() {
        for (previous, expected) in
            [(0, 0), (99, 99), (100, 125), (832_281_932, 1_040_352_407), (usize::MAX, usize::MAX)]
        {
            check(previous, expected);
        }
    }
}

#[cfg(test)]
mod schedule_tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn check(last_snapshot: u64, cursor: u64, every: u64, snapshot_before_bytes: u64, expected: u64) {
        assert_eq!(
            next_snapshot_at(last_snapshot, cursor, every, snapshot_before_bytes, SNAPSHOT_SPACING_STEP_BYTES),
            expected,
            "after the snapshot at {last_snapshot}, world at {cursor}, every {every}, the one before {snapshot_before_bytes} bytes"
        );
    }

    #[test]
    fn snapshots_are_spaced_by_the_lands_spacing_once_more_for_each_step_of_the_snapshot_before() {
        for (last_snapshot, cursor, every, before, expected) in [
            // A new land, and a land that has none yet: the next multiple.
            (0, 0, 100_000, 0, 100_000),
            (0, 250_003, 100_000, 0, 300_000),
            // The crowd's rounds end 8 facts past each multiple.
            (100_008, 100_008, 100_000, 0, 200_000),
            (800_008, 800_008, 100_000, 48_815_897, 900_000),
            (900_008, 900_008, 100_000, 55_265_897, 1_100_000),
            // Just under and at one step.
            (900_008, 900_008, 100_000, 50 * MIB - 1, 1_000_000),
            (900_008, 900_008, 100_000, 50 * MIB, 1_100_000),
            // The million crowd's snapshot at 2,000,008 (508 MB) spaces
            // the one after its successor by ten: due at its last round's
            // end. At 573 MB (its size in world format 10), by eleven.
            (3_000_008, 3_000_008, 100_000, 508_281_959, 4_000_000),
            (3_000_008, 3_000_008, 100_000, 573_281_959, 4_100_000),
            // A land reopened past where the next was due: past its end.
            (100_008, 450_000, 100_000, 0, 500_000),
            (100_008, 450_000, 100_000, 120 * MIB, 500_000),
            // A snapshot every fact, for a small world and a large one.
            (5, 5, 1, 0, 6),
            (5, 5, 1, 100 * MIB, 8),
            // Nothing overflows.
            (u64::MAX - 1, u64::MAX - 1, 100_000, u64::MAX, u64::MAX),
        ] {
            check(last_snapshot, cursor, every, before, expected);
        }
    }
}
