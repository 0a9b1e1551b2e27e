//! The engine: rounds of moments sealed in one land order, for a
//! simulation (`seed sim`, a fixture run headless on a logical clock,
//! deterministically) and for a live land (`seed up`, the portal's writer),
//! told apart by [`Mode`].
//!
//! A run is a sequence of rounds, one per tick. In a round, every woken
//! being's moment opens at the same cursor and runs in parallel (the beats
//! are pure, so thread count cannot change a result); then the acts are
//! sealed one by one in being-id order, each re-checked against the world as
//! the earlier acts of the round left it. Same fixture, seed and build: the
//! same facts, byte for byte, and the same world hash, for any thread count.
//!
//! This file holds the engine and its steps (a round, a person's moment, the
//! one sealing tail both end in); `scheduler.rs` says who wakes, `sealing.rs`
//! carries a step's facts to the store, `report.rs` is what a run reports,
//! `fixture.rs` reads demo worlds.

pub mod definitions;
pub mod fixture;
mod health;
mod moment_window;
pub mod pool;
mod report;
mod resume;
mod scheduler;
mod sealing;
pub mod world_check;

use crate::embedding::EMBEDDING_CONNECTION_CONFIG_KEY;
use report::{log_moment, trace_json};
pub use report::{FailureExample, MomentRecord, PersonResult, RunSummary};
pub use resume::{resume_checkpoint_rounds_done, RESUME_CHECKPOINT_FILE};
use scheduler::Scheduler;
use sealing::Sealing;
pub use world_check::{check_world, substrate_for, CheckedWorld};

use crate::canonical;
use crate::clock::{Clock, LogicalClock};
use crate::fact::{BeingId, CanonicalBody, Hash32};
use crate::keys::KeyError;
use crate::land::{BeingSpec, KeySource, Land, LandError, PendingSeal, Prepared, StoreLocation};
use crate::limits::Limits;
use crate::llm::LanguageModel;
use crate::moment::refusal::BeingFault;
use crate::moment::{self, Beat, Failure, MomentTrace, Outcome, Refusal, Substrate};
use crate::progress::Progress;
use crate::store::Store;
use crate::world::body::{KIND_ACT, KIND_WORLD};
use crate::world::{json_to_cbor, Effect, Wake, World, WorldBody};
use fixture::{Fixture, FixtureError, PlannedBeing};
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    /// The world check found errors: every one, with warnings after them.
    #[error("the world does not load:\n{problems}")]
    World { problems: FixtureError },
    #[error(transparent)]
    Land(#[from] LandError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("moment trace {path}: {source}")]
    Trace { path: PathBuf, source: std::io::Error },
    /// The land log holds no readable fact at a land seq the fold needs.
    #[error(
        "the land log has no fact a reel claims at land seq {land_seq}, so the world cannot be folded past it; \
         run `seed verify` to see what is wrong there"
    )]
    LandLogHole { land_seq: u64 },
    /// A worker's fixture or seed is not the simulation's.
    #[error(
        "the pool serves run {found}, not this worker's {expected}: start the worker with the simulation's \
         fixture and --seed"
    )]
    OtherRun { expected: Hash32, found: Hash32 },
    /// The worker processes a pooled run started stopped before it finished.
    #[error("the pool's workers stopped: {reason}")]
    WorkersGone { reason: String },
    /// This process follows a live land another process runs (`seed up` on
    /// PostgreSQL): it serves the land's pages, and seals nothing.
    #[error(
        "this portal follows the land, which another process runs ({runner}): acts are sealed there; this portal takes over if that process stops"
    )]
    Follower { runner: String },
    /// The land's health breaker is tripped: no moment runs (docs/health.md).
    #[error("{}", crate::health::trip_line(trip))]
    Tripped { trip: Box<crate::health::Trip> },
    #[error("the land is not tripped: there is nothing to revive")]
    NotTripped,
    /// `seed sim --resume` on a land no run kept a checkpoint in.
    #[error(
        "no run to resume at {dir}: it holds no {} (a run keeps one before each round when `seed sim` is given --land; one stopped before its first round has none: start it again in an empty folder)",
        resume::RESUME_CHECKPOINT_FILE
    )]
    NoCheckpoint { dir: PathBuf },
    #[error("the resume checkpoint {path} is damaged: {reason}; the run cannot be resumed from it")]
    CheckpointDamaged { path: PathBuf, reason: String },
    #[error("the resume checkpoint {path} could not be written: {source}")]
    CheckpointWrite { path: PathBuf, source: std::io::Error },
    /// The checkpoint is another run's (another fixture, seed or definitions).
    #[error(
        "the land's run is {found}, not this fixture and seed's {expected}: resume it with the fixture and --seed it was started with"
    )]
    ResumeOtherRun { expected: Hash32, found: Hash32 },
    #[error("the resume checkpoint does not belong to this land: {reason}")]
    CheckpointNotOfThisLand { reason: String },
    /// Catching up, a fact computed again is not the one the land holds.
    #[error(
        "resuming, the fact computed for land seq {land_seq} ({computed}) is not the one the land holds ({stored}): the fixture, its definitions or this build changed since the run started; nothing was written"
    )]
    ResumeDiverged { land_seq: u64, stored: crate::fact::FactId, computed: crate::fact::FactId },
    /// A resumed pool driver finds the round its predecessor opened with
    /// other wakes than the ones it computes again.
    #[error(
        "resuming, round {tick} computed again ({computed_wakes} wakes opening at land seq {computed_cursor}) is not the round the wake queue holds ({queued_wakes} wakes at {queued_cursor}, compared being for being and byte for byte): the fixture, its definitions or this build changed since the run started"
    )]
    ResumeRoundDiffers { tick: u64, computed_wakes: u64, computed_cursor: u64, queued_wakes: u64, queued_cursor: u64 },
    /// `seed sim --resume --workers` on a land whose wake queue holds no run.
    #[error("the land's wake queue holds no run to resume: a pool's run is resumed on the land it was started on (--resume without --workers or --pool finishes a run played in one process)")]
    NoPoolRunToResume,
    /// A definition file too large to keep in one fact.
    #[error(
        "the definition file {path} is {bytes} bytes; the land keeps definition files of at most {max} bytes (its fact_body_bytes_max less {} for the fact's own fields)",
        definitions::DEFINITION_FACT_OVERHEAD_BYTES
    )]
    DefinitionTooLarge { path: String, bytes: usize, max: usize },
    /// The facts recording the definitions in force do not read.
    #[error("the definitions recorded at land seq {land_seq} do not read: {reason}")]
    DefinitionsUnreadable { land_seq: u64, reason: String },
    /// A resumed run or a pool's worker whose definition files are not
    /// the ones the run started with.
    #[error(
        "the definition files differ from those the run started with ({changes}): a resumed run and a pool's workers run the definitions the run started with; restore them, or start a new run"
    )]
    DefinitionsChangedSinceStart { changes: String },
    #[error("internal: {0}")]
    Internal(String),
}

pub struct EngineOptions {
    pub ticks: Option<u64>,
    pub seed: u64,
    pub threads: usize,
    pub land_dir: PathBuf,
    /// Where to write the moment trace (one JSON object per moment).
    pub trace_file: Option<PathBuf>,
    /// Who hears how many rounds are done (the binary's bar or line).
    pub progress: Arc<dyn Progress>,
    /// The language model LLM beings call (`None`: their moments fail saying
    /// no connection is configured).
    pub model: Option<Arc<dyn LanguageModel>>,
    /// A simulation or a live land.
    pub mode: Mode,
    /// Facts between two world snapshots for this run, in place of the
    /// land's `snapshot_every_facts` (0: none).
    pub snapshot_every_facts: Option<u64>,
    /// The size of a snapshot for which the spacing grows by one more
    /// `snapshot_every_facts` (`None`:
    /// [`crate::snapshots::SNAPSHOT_SPACING_STEP_BYTES`]; tests set a
    /// small world's size).
    pub snapshot_spacing_step_bytes: Option<u64>,
    /// Where a land planted by this run keeps its facts (the folder's own
    /// store by default, or PostgreSQL).
    pub store: StoreLocation,
}

/// What an engine runs: the two differ only in where keys, time and
/// signals come from; every moment is decided and sealed alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A fixture run headless (`seed sim`): keys derived from the run's
    /// seed, a logical clock stepping `tick_ms` per round, the fixture's
    /// scripted events.
    Simulation,
    /// A land people live in (`seed up`): operating-system keys, the wall
    /// clock read once per step, signals published by people; the latest
    /// moment traces are kept for the portal and refused moments are
    /// logged at info.
    Live,
}

/// How many moment traces a live land keeps in memory for the portal.
pub const LIVE_MOMENT_TRACES_KEPT: usize = 512;

/// Folds the land log from `world.cursor` to the end into `world`.
pub fn fold_to_end(store: &dyn Store, world: &mut World) -> Result<(), EngineError> {
    fold_until(store, world, store.land_len()?)
}

/// Land-log entries a fold reads at once.
pub const FOLD_LAND_LOG_CHUNK_ENTRIES: u64 = 4096;

/// Threads that read and decode the land log's chunks ahead of a fold, in
/// turn, each up to [`FOLD_CHUNKS_READ_AHEAD`] chunks ahead.
pub const FOLD_READER_THREADS: usize = 2;

/// Chunks of the land log each reader thread of a fold holds ready ahead
/// of the fold.
pub const FOLD_CHUNKS_READ_AHEAD: usize = 2;

/// Folds the land log from `world.cursor` up to (not including) `end`, a
/// chunk of entries at a time. A fact the log points at but the store does
/// not give back is an error: a world is never folded past a hole.
///
/// Past one chunk, [`FOLD_READER_THREADS`] threads read, check and decode
/// the chunks in turn while this one folds them in land order: reading a
/// fact (its body's hash checked, its body decoded) is pure and costs
/// about three times what folding it does, most of `seed up`'s opening of
/// the million crowd.
pub fn fold_until(store: &dyn Store, world: &mut World, end: u64) -> Result<(), EngineError> {
    fold_reading_ahead(store, world, end, FOLD_LAND_LOG_CHUNK_ENTRIES, None, FoldReach::EveryFact)
}

/// Which of the facts it reads a fold decodes and folds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FoldReach {
    /// Every fact: the land's world.
    EveryFact,
    /// Only the facts that change more than their actor's activity
    /// (`world::reach`): a world whose beings' activity and memories are
    /// left out, for a view that reads none of them.
    PastActivity,
}

/// The land's configuration at its end and the facts that set it, without
/// folding what cannot change it: from the latest vouched snapshot (or
/// genesis) the fold reads every fact, but decodes and folds only those
/// that change more than their actor's activity. Such an act carries no
/// effect, so it sets no key, and on a land of scripted crowds it is most
/// of the facts. The acts passed over are not checked (their bodies are
/// not even hashed), as a replay of one being passes over them: `seed
/// verify` is what checks every fact. The world folded so is not the
/// land's (its beings' activity and memories are left out) and never
/// leaves this function.
pub fn configuration_at_end(land: &Land) -> Result<crate::config_view::Configuration, EngineError> {
    let end = land.store().land_len()?;
    let mut without_activity = latest_vouched_world_at_or_before(land, end);
    let reach = FoldReach::PastActivity;
    fold_reading_ahead(land.store(), &mut without_activity, end, FOLD_LAND_LOG_CHUNK_ENTRIES, None, reach)?;
    // The facts passed over at the end moved no cursor.
    without_activity.cursor = without_activity.cursor.max(end);
    Ok(crate::config_view::Configuration::of_world(&without_activity))
}

/// A chunk of the land log read and decoded for the fold: its facts, and
/// for a fold that keeps worlds for replays, which of them a replay may
/// pass over and where the first act in it opened.
struct FoldChunk {
    facts: Vec<(u64, crate::fact::Fact, crate::world::FoldBody)>,
    passable: Vec<(u64, bool)>,
    /// `None`: no act in the chunk; `Some(None)`: one whose body does not
    /// read; `Some(Some(cursor))`: the first act's moment opened there.
    first_act_opening: Option<Option<u64>>,
}

/// [`fold_until`] in chunks of `chunk_entries`; with `kept`, the fold also
/// leaves there what replays of the land can start from
/// ([`fold_from_genesis_keeping_for_replays`]).
fn fold_reading_ahead(
    store: &dyn Store,
    world: &mut World,
    end: u64,
    chunk_entries: u64,
    kept: Option<&crate::replay::KeptWorlds>,
    reach: FoldReach,
) -> Result<(), EngineError> {
    let from = world.cursor;
    let chunk_entries = chunk_entries.max(1);
    // Flows shared by the bodies read here: what the world's own would hold.
    let flows = crate::world::GenesisFlows::default();
    let mut fold = ChunkFold { kept, looking_for_first_act: kept.is_some() };
    if end.saturating_sub(from) <= chunk_entries {
        // One chunk or none (a fold after each seal): no thread to start.
        if from < end {
            fold.apply(world, read_fold_chunk(store, from, end, kept.is_some(), reach, &flows)?);
        }
        return Ok(());
    }
    let chunk_starts = move |reader: usize| {
        let first = from.saturating_add(chunk_entries.saturating_mul(reader as u64));
        let step = chunk_entries.saturating_mul(FOLD_READER_THREADS as u64);
        (0..).map(move |turn: u64| first.saturating_add(step.saturating_mul(turn))).take_while(move |next| *next < end)
    };
    std::thread::scope(|scope| {
        let mut read_ahead = Vec::with_capacity(FOLD_READER_THREADS);
        for reader in 0..FOLD_READER_THREADS {
            let (chunks_read, chunks) = std::sync::mpsc::sync_channel(FOLD_CHUNKS_READ_AHEAD);
            read_ahead.push(chunks);
            let flows = &flows;
            scope.spawn(move || {
                for next in chunk_starts(reader) {
                    let to = end.min(next.saturating_add(chunk_entries));
                    let chunk = read_fold_chunk(store, next, to, kept.is_some(), reach, flows);
                    let failed = chunk.is_err();
                    // A fold that stopped (at an error) takes no more.
                    if chunks_read.send(chunk).is_err() || failed {
                        return;
                    }
                }
            });
        }
        // The chunks are taken from the readers in turn, so in land order.
        // An error returns at once: the channels go with it, and the readers stop.
        let mut next = from;
        let mut turn = 0;
        while next < end {
            let chunk = read_ahead[turn % FOLD_READER_THREADS].recv();
            fold.apply(
                world,
                chunk.expect("a reader sends each of its chunks (or an error and stops) unless it panicked")?,
            );
            next = end.min(next.saturating_add(chunk_entries));
            turn += 1;
        }
        Ok(())
    })
}

/// Reads, checks and decodes the land log's `from..to` for the fold (and
/// for a fold that keeps worlds for replays, what it learns of them).
fn read_fold_chunk(
    store: &dyn Store,
    from: u64,
    to: u64,
    keeping_for_replays: bool,
    reach: FoldReach,
    flows: &crate::world::GenesisFlows,
) -> Result<FoldChunk, EngineError> {
    let read = read_land_log_envelopes(store, from, to)?;
    let (mut passable, mut first_act_opening) = (Vec::new(), None);
    if keeping_for_replays {
        let changes_only_activity = crate::world::reach::changes_only_its_actors_activity;
        passable = read.iter().map(|(entry, envelope)| (entry.land_seq, changes_only_activity(envelope))).collect();
        let first_act = read.iter().find(|(_, envelope)| crate::replay::kept_worlds::is_act(envelope));
        first_act_opening = first_act.map(|(_, envelope)| crate::replay::land::opening_cursor(envelope));
    }
    let folded = |envelope: &Vec<u8>| match reach {
        FoldReach::EveryFact => true,
        FoldReach::PastActivity => !crate::world::reach::changes_only_its_actors_activity(envelope),
    };
    let facts = read
        .iter()
        .filter(|(_, envelope)| folded(envelope))
        .map(|(entry, envelope)| {
            let (land_seq, fact) = decode_land_fact(entry, envelope)?;
            let body = crate::world::FoldBody::read_keeping_flows(&fact.header, fact.body(), flows);
            Ok((land_seq, fact, body))
        })
        .collect::<Result<Vec<_>, EngineError>>()?;
    Ok(FoldChunk { facts, passable, first_act_opening })
}

/// Folds chunks in land order, leaving in `kept` (if any) what replays
/// can start from.
struct ChunkFold<'k> {
    kept: Option<&'k crate::replay::KeptWorlds>,
    looking_for_first_act: bool,
}

impl ChunkFold<'_> {
    fn apply(&mut self, world: &mut World, chunk: FoldChunk) {
        let mut keep_before = None;
        if let Some(kept) = self.kept {
            kept.learn_passable(chunk.passable);
            if let Some(opening) = chunk.first_act_opening.filter(|_| self.looking_for_first_act) {
                self.looking_for_first_act = false;
                // An opening in a chunk already folded is past: none is kept.
                keep_before = opening.filter(|cursor| *cursor >= world.cursor);
            }
        }
        for (land_seq, fact, body) in chunk.facts {
            if let Some(kept) = self.kept.filter(|_| keep_before == Some(land_seq)) {
                kept.keep(world);
            }
            world.apply_folded(land_seq, &fact.header, fact.id(), body);
        }
    }
}

/// Hands `visit` each fact at land seqs `from..end`, decoded, in land
/// order, reading [`FOLD_LAND_LOG_CHUNK_ENTRIES`] at a time: a hole in them
/// is an error.
pub(crate) fn for_each_land_fact(
    store: &dyn Store,
    from: u64,
    end: u64,
    mut visit: impl FnMut(u64, crate::fact::Fact),
) -> Result<(), EngineError> {
    for_each_land_chunk(store, from, end, |facts| {
        for (land_seq, fact) in facts {
            visit(land_seq, fact);
        }
    })
}

/// [`for_each_land_fact`] a chunk at a time: `visit` gets each chunk's
/// facts whole, with their land seqs.
pub(crate) fn for_each_land_chunk(
    store: &dyn Store,
    from: u64,
    end: u64,
    mut visit: impl FnMut(Vec<(u64, crate::fact::Fact)>),
) -> Result<(), EngineError> {
    let mut next = from;
    while next < end {
        let to = end.min(next + FOLD_LAND_LOG_CHUNK_ENTRIES);
        visit(read_land_log(store, next, to)?);
        next = to;
    }
    Ok(())
}

/// The facts at land seqs `from..to`, decoded, in land order, read in one
/// request: a hole in them is an error.
pub(crate) fn read_land_log(
    store: &dyn Store,
    from: u64,
    to: u64,
) -> Result<Vec<(u64, crate::fact::Fact)>, EngineError> {
    read_land_log_envelopes(store, from, to)?
        .into_iter()
        .map(|(entry, envelope)| decode_land_fact(&entry, &envelope))
        .collect()
}

/// The entries and envelopes at land seqs `from..to`, in land order, read
/// in one request: a hole in them is an error.
fn read_land_log_envelopes(
    store: &dyn Store,
    from: u64,
    to: u64,
) -> Result<Vec<(crate::store::LandEntry, Vec<u8>)>, EngineError> {
    let read = store.land_log_with_envelopes(from, to)?;
    refuse_a_land_log_hole(read.iter().map(|(entry, _)| entry.land_seq), from, to)?;
    Ok(read)
}

/// An error naming the first land seq of `from..to` that `land_seqs` (read
/// in land order) skip, if they do not hold every one.
pub(crate) fn refuse_a_land_log_hole(
    land_seqs: impl Iterator<Item = u64>,
    from: u64,
    to: u64,
) -> Result<(), EngineError> {
    let mut expected = from;
    for land_seq in land_seqs {
        if land_seq != expected {
            return Err(EngineError::LandLogHole { land_seq: expected });
        }
        expected += 1;
    }
    match expected == to {
        true => Ok(()),
        false => Err(EngineError::LandLogHole { land_seq: expected }),
    }
}

fn decode_land_fact(entry: &crate::store::LandEntry, envelope: &[u8]) -> Result<(u64, crate::fact::Fact), EngineError> {
    let stored = crate::store::decode_entry_envelope(entry, envelope)?;
    Ok((entry.land_seq, stored.fact))
}

/// [`fold_until`] from genesis, leaving in `kept` what replays of this land
/// would otherwise read the log again for: a copy of the world where the
/// land's first act opened (the world every replay of a being starts
/// from, on a land planted at once) and which facts change nothing but
/// their actor's activity. The fold reads every fact anyway; the portal
/// opening a land of a million beings used to fold the million geneses a
/// second time, on its warm-up thread, before a replay could start.
/// Keeps no world when the first act's moment opened before the chunk the
/// act is read in (other facts sealed between its opening and its seal,
/// across a chunk's start): the warm-up folds it then.
///
/// Reads `chunk_entries` at a time ([`FOLD_LAND_LOG_CHUNK_ENTRIES`] when
/// opening a land; the tests try short chunks).
pub fn fold_from_genesis_keeping_for_replays(
    store: &dyn Store,
    world: &mut World,
    end: u64,
    kept: &crate::replay::KeptWorlds,
    chunk_entries: u64,
) -> Result<(), EngineError> {
    assert_eq!(world.cursor, 0, "a fold that keeps worlds for replays starts at genesis");
    fold_reading_ahead(store, world, end, chunk_entries, Some(kept), FoldReach::EveryFact)
}

/// The world folded from the whole land log, starting from the latest
/// snapshot a clean verification vouched for (if any).
pub fn world_at_end(land: &Land) -> Result<World, EngineError> {
    let mut world = world_before(land, land.store().land_len()?)?;
    fold_to_end(land.store(), &mut world)?;
    Ok(world)
}

/// [`world_at_end`], and when no vouched snapshot stands in the way the
/// fold runs from genesis and leaves in `kept` what replays of this land
/// can start from ([`fold_from_genesis_keeping_for_replays`]).
pub fn world_at_end_keeping_for_replays(land: &Land, kept: &crate::replay::KeptWorlds) -> Result<World, EngineError> {
    let end = land.store().land_len()?;
    let mut world = latest_vouched_world_at_or_before(land, end);
    match world.cursor {
        0 => fold_from_genesis_keeping_for_replays(land.store(), &mut world, end, kept, FOLD_LAND_LOG_CHUNK_ENTRIES)?,
        _ => fold_until(land.store(), &mut world, end)?,
    }
    Ok(world)
}

/// The world folded up to (not including) land seq `cursor`, from the
/// latest vouched snapshot at or before it.
pub(crate) fn world_before(land: &Land, cursor: u64) -> Result<World, EngineError> {
    let mut world = latest_vouched_world_at_or_before(land, cursor);
    fold_until(land.store(), &mut world, cursor)?;
    Ok(world)
}

/// The latest world snapshot a clean verification vouched for at or
/// before `cursor`, or the world before genesis.
fn latest_vouched_world_at_or_before(land: &Land, cursor: u64) -> World {
    use crate::snapshots::WorldSnapshots;
    let store = land.store();
    let snapshots = crate::snapshots::VouchedWorlds::open(land.dir(), store, land.root(), false)
        .unwrap_or_else(|_| crate::snapshots::VouchedWorlds::none(land.dir(), store));
    // Not `World::default()`: a world folded from genesis starts with the root space.
    match snapshots.at_or_before(cursor).and_then(|at| snapshots.world(at)) {
        Some(world) => world,
        None => World::new(),
    }
}

/// Reel heads a world hash reads in one request.
pub const WORLD_HASH_HEADS_PER_READ: usize = 4096;

/// BLAKE3 over the canonical world state and every reel head.
pub fn world_hash(world: &World, store: &dyn Store) -> Result<Hash32, EngineError> {
    let mut state = crate::fact::GatheringHasher::from_hasher(blake3::Hasher::new_derive_key("seed world hash v1"));
    world.write_canonical_state(&mut |bytes| state.update(bytes));
    let mut hasher = state.into_hasher();
    for beings in store.beings()?.chunks(WORLD_HASH_HEADS_PER_READ) {
        for (being, head) in beings.iter().zip(store.heads(beings)?) {
            if let Some(head) = head {
                hasher.update(being.as_bytes());
                hasher.update(&head.seq.to_be_bytes());
                hasher.update(head.id.as_bytes());
            }
        }
    }
    Ok(Hash32(*hasher.finalize().as_bytes()))
}

fn seal_world(land: &Land, effects: Vec<Effect>) -> Result<(), EngineError> {
    if effects.is_empty() {
        return Ok(());
    }
    let body = canonical::to_canonical_bytes(&WorldBody { effects })
        .map_err(|error| EngineError::Internal(format!("world body: {error}")))?;
    land.seal(&land.root(), KIND_WORLD, body)?;
    Ok(())
}

/// Beings a planting mints in one batch: their keys reach the ring in one
/// sync, and one batch is signed while the one before it is written.
pub const PLANT_BEINGS_PER_BATCH: usize = 4096;

fn plant(
    fixture: &Fixture,
    planned: &[PlannedBeing],
    land: &Land,
    threads: usize,
    progress: &dyn Progress,
) -> Result<(), EngineError> {
    let mut effects: Vec<Effect> = fixture
        .spaces
        .iter()
        .map(|space| Effect::PutSpace {
            path: crate::world::address::parse_space(&space.path).unwrap_or_else(|_| space.path.clone()),
            kind: space.kind.clone(),
            qualities: space.qualities.clone(),
        })
        .collect();
    effects.extend(
        fixture
            .signals
            .iter()
            .map(|signal| Effect::SetSignal { key: signal.key.clone(), value: Some(signal.value.clone()) }),
    );
    effects.extend(
        fixture.config.iter().map(|(key, value)| Effect::SetConfig { key: key.clone(), value: Some(value.clone()) }),
    );
    seal_world(land, effects)?;
    let mut pending: Vec<PendingSeal> = Vec::new();
    progress.stage("planting beings", planned.len() as u64, "beings");
    for batch in planned.chunks(PLANT_BEINGS_PER_BATCH) {
        let mut specs = Vec::with_capacity(batch.len());
        for being in batch {
            let Json::Array(flow) = &*being.flow else {
                return Err(EngineError::Internal("flow is not an array".into()));
            };
            specs.push(BeingSpec {
                name: being.name.clone(),
                parent: Some(land.operator()),
                cognition: being.cognition,
                role_flow: flow.iter().map(json_to_cbor).collect(),
                default_role: being.default_role.clone(),
                home_space: being.home.clone(),
            });
        }
        let submitted = land.submit_beings(specs, threads)?;
        // The batch before is durable by now or soon: waiting for it here
        // keeps one batch signing while the one before it is written.
        for seal in std::mem::replace(&mut pending, submitted) {
            seal.wait()?;
        }
        progress.advance(batch.len() as u64);
    }
    for seal in pending {
        seal.wait()?;
    }
    let mut qualities = Vec::new();
    for being in planned {
        for (key, value) in &being.qualities {
            qualities.push(Effect::SetBeingQuality {
                being: being.name.clone(),
                key: key.clone(),
                value: Some(value.clone()),
            });
        }
        if let Some(script) = &being.script {
            qualities.push(Effect::SetBeingQuality {
                being: being.name.clone(),
                key: "script".into(),
                value: Some(json!(script)),
            });
        }
    }
    seal_world(land, qualities)
}

/// Moments a worker computes before it hands them to the sealing thread
/// together (sooner if it would wait for the window, and on a live land
/// around any moment not a script's): each hand-over may wake the sealing
/// thread, and one a moment cost the crowd about 5% of its samples in
/// system calls; their acts are signed together, for less work
/// (`crate::land::sign_ahead`).
const MOMENTS_SENT_TOGETHER_MAX: usize = 16;

/// A moment computed on the engine's threads, and its act signed there
/// ahead of its sealing when it could be (`Engine::spawn_moments`).
struct Computed {
    outcome: Outcome,
    trace: MomentTrace,
    presigned: Option<crate::land::Presigned>,
}

/// How an engine's steps signed the facts they sealed: where each act's
/// moment ran, or at the seal (every other fact, and an act whose fact
/// turned out otherwise there).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FactsSigned {
    pub ahead: u64,
    pub at_seal: u64,
}

/// A planted world, ready to run round by round.
pub struct Engine {
    /// The snapshot a thread of its own is writing, if one is. First, so
    /// that an engine dropped unfinished waits for it (dropping it waits)
    /// before the land, and the land's lock, go.
    snapshot_in_writing: Option<crate::snapshots::SnapshotInWriting>,
    pub land: Land,
    pub world: World,
    /// What a live engine's opening fold left for replays of its land (the
    /// world where the first act opened, the passable facts): the portal
    /// hands it to its replays. Empty in a simulation.
    pub kept_for_replays: Arc<crate::replay::KeptWorlds>,
    /// Set by a live land that is stopping ([`Engine::round_interrupt`]).
    round_interrupt: Arc<std::sync::atomic::AtomicBool>,
    substrate: Arc<Substrate>,
    scheduler: Scheduler,
    clock: Arc<LogicalClock>,
    fixture: Fixture,
    threads: usize,
    /// Moment tasks per round: `threads`, or more when LLM moments wait on a model.
    workers: usize,
    model: Arc<dyn LanguageModel>,
    trace_out: Option<(PathBuf, std::io::BufWriter<std::fs::File>)>,
    pub summary: RunSummary,
    pub tick: u64,
    facts_before: u64,
    /// The land's length when `seed_facts_sealed_total` was last counted.
    facts_counted: u64,
    /// The health breaker's signs, counted as steps end.
    health: health::HealthMonitor,
    /// Acts sealed this round, for the after: hooks.
    sealed_calls: Vec<(String, crate::world::VerbCall, u64)>,
    /// Acts sealed and not yet embedded (a land with an embedding
    /// connection): their being, fact and memory text.
    to_embed: Vec<(BeingId, crate::fact::FactId, String, u64)>,
    /// The live table of moments running now (observability).
    pub running: Arc<moment::RunningMoments>,
    /// The tokio runtime the moments run on.
    runtime: tokio::runtime::Runtime,
    epoch: std::time::Instant,
    /// Every moment's outcome, kept in memory when asked (what-if forks diff them).
    pub moment_log: Option<Vec<MomentRecord>>,
    mode: Mode,
    /// The operator's login token, when this run planted the land (shown once).
    pub operator_token: Option<String>,
    /// The latest moment traces (live lands only), oldest first, as the
    /// moments left them: each is written out as JSON only when asked for
    /// ([`Engine::recent_traces_json`]), not once for every moment sealed.
    recent_traces: std::collections::VecDeque<report::RecentTrace>,
    /// How this engine's steps signed their facts, all steps together.
    facts_signed: FactsSigned,
    /// The file each script of the world was read from, by the BLAKE3 of
    /// its source: a failure example names where a script failed.
    script_files: BTreeMap<Hash32, String>,
    /// Facts between two world snapshots at least (0: none).
    snapshot_every_facts: u64,
    /// The cursor at or past which the next snapshot is written.
    next_snapshot_at: u64,
    /// The size of the world's bytes in the last snapshot written (0: none
    /// yet): the next one's buffer is sized from it.
    snapshot_bytes_last: usize,
    /// The size of the last snapshot's file (0: none yet): the one after
    /// the next is spaced by it (`snapshots::next_snapshot_at`).
    snapshot_file_bytes_last: u64,
    /// The snapshot size for which the spacing grows by one more
    /// `snapshot_every_facts` (`snapshots::SNAPSHOT_SPACING_STEP_BYTES`).
    snapshot_spacing_step_bytes: u64,
    /// A pool worker's moment traces, handed back with each wake's result.
    pool_traces: Option<Vec<Json>>,
    /// Whether a resume checkpoint is written before each round (`resume.rs`).
    resume_checkpoints: bool,
    /// The checkpoint of the round under way, still being written beside
    /// it: waited for before the round submits anything.
    resume_checkpoint_in_writing: Option<resume::CheckpointInWriting>,
    /// The writers' handles the last round signed ahead with.
    kept_round_writers: Option<KeptRoundWriters>,
    /// A resumed run's catch-up: facts prepared at land seqs below it are
    /// compared with the land's, never submitted (0: not catching up).
    catch_up_until: u64,
    /// The definition files this engine loaded, until they are sealed as
    /// the land's definitions before its first step (`definitions.rs`):
    /// not when opened, since a live land's follower never writes.
    definitions_to_seal: Option<crate::definitions::DefinitionFiles>,
    /// The digest of the definition files this engine loaded: part of a
    /// run's digest, so a pool's worker or a resume with other files is
    /// another run.
    definitions_digest: Hash32,
}

/// What a simulation's keys derive from: the fixture's name and the seed.
fn simulation_key_seed(fixture: &Fixture, seed: u64) -> [u8; 32] {
    let mut seed_input = fixture.name.as_bytes().to_vec();
    seed_input.extend_from_slice(&seed.to_be_bytes());
    *blake3::Hasher::new_derive_key("seed sim seed v1").update(&seed_input).finalize().as_bytes()
}

impl Engine {
    /// Plants the fixture in `options.land_dir`.
    pub fn plant(fixture: &Fixture, options: &EngineOptions) -> Result<Engine, EngineError> {
        Engine::plant_recording(fixture, options, true)
    }

    /// Plants as lands were planted before they recorded their definitions
    /// (no definition facts): the reference of the benchmark that measures
    /// what recording them costs, and an older land for tests.
    #[doc(hidden)]
    pub fn plant_as_before_definitions(fixture: &Fixture, options: &EngineOptions) -> Result<Engine, EngineError> {
        Engine::plant_recording(fixture, options, false)
    }

    fn plant_recording(fixture: &Fixture, options: &EngineOptions, record: bool) -> Result<Engine, EngineError> {
        let (checked, files) = definitions::check_world_recording(fixture, &[])?;
        if record {
            definitions::check_fits(&files, Limits::default().fact_body_bytes_max)?;
        }
        let key_seed = simulation_key_seed(fixture, options.seed);
        let (clock, key_source) = match options.mode {
            Mode::Live => (Arc::new(LogicalClock::starting_at(wall_now_ms())), KeySource::Os),
            Mode::Simulation => (Arc::new(LogicalClock::starting_at(fixture.start_ms)), KeySource::Seeded(key_seed)),
        };
        let (land, report) =
            Land::plant_in(&options.land_dir, clock.clone(), Limits::default(), key_source, &options.store)?;
        // The definitions first: every fact after them was made with them.
        if record {
            definitions::seal_if_changed(&land, &mut world_at_end(&land)?, &files)?;
        }
        // The wall clock measures planting for the summary only; no fact sees it.
        let planting = std::time::Instant::now();
        let beings = checked.planned.len() as u64;
        plant(fixture, &checked.planned, &land, options.threads.max(1), options.progress.as_ref())?;
        let planted = Some((beings, planting.elapsed().as_millis() as u64));
        let operator_token = report.operator_token;
        let mut simulation = Engine::start(fixture, options, land, clock, checked)?;
        simulation.summary.planted = planted;
        simulation.definitions_digest = files.set.digest();
        simulation.operator_token = Some(operator_token);
        Ok(simulation)
    }

    /// Opens a live land planted before (`seed up` again): the world folded
    /// from its log, every being subscribed to the signals its flow reads.
    /// Summons still waiting in inboxes are delivered again.
    pub fn reopen(fixture: &Fixture, options: &EngineOptions) -> Result<Engine, EngineError> {
        let (checked, files) = definitions::check_world_recording(fixture, &[])?;
        let clock = Arc::new(LogicalClock::starting_at(wall_now_ms()));
        let land = Land::open_with(&options.land_dir, clock.clone(), Limits::default())?;
        let mut engine = Engine::start(fixture, options, land, clock, checked)?;
        engine.definitions_digest = files.set.digest();
        engine.definitions_to_seal = Some(files);
        Ok(engine)
    }

    /// Seals the definitions this engine loaded as the land's, if they are
    /// not the set in force (before the first step that could use them).
    fn seal_definitions(&mut self) -> Result<(), EngineError> {
        if self.definitions_to_seal.is_some() {
            self.resume_checkpoint_written()?;
        }
        if let Some(files) = self.definitions_to_seal.take() {
            if let Err(error) = definitions::seal_if_changed(&self.land, &mut self.world, &files) {
                self.definitions_to_seal = Some(files);
                return Err(error);
            }
        }
        Ok(())
    }

    /// Refuses to go on with definition files other than those in force
    /// on the land (a resumed run, a pool's worker): they would compute
    /// other moments than the run it continues.
    pub(crate) fn check_definitions_unchanged(
        &self,
        files: &crate::definitions::DefinitionFiles,
    ) -> Result<(), EngineError> {
        // The world holds the digest in force: the land is read only to name what differs.
        match self.world.definitions.in_force {
            Some(in_force) if in_force.digest != files.set.digest() => {}
            _ => return Ok(()),
        }
        let Some(recorded) = definitions::recorded_files(self.land.store(), &self.world)? else { return Ok(()) };
        let changes = recorded.set.changes_to(&files.set);
        let changes = match changes.is_empty() {
            true => "the files were read at other paths".to_string(),
            false => changes
                .iter()
                .map(|change| format!("{} {}", change.path, change.how.as_str()))
                .collect::<Vec<_>>()
                .join(", "),
        };
        Err(EngineError::DefinitionsChangedSinceStart { changes })
    }

    fn start(
        fixture: &Fixture,
        options: &EngineOptions,
        land: Land,
        clock: Arc<LogicalClock>,
        checked: CheckedWorld,
    ) -> Result<Engine, EngineError> {
        Engine::start_with(fixture, options, land, clock, checked, None)
    }

    /// `start`, with the world and the scheduler a resumed run picks up
    /// (`None`: the land's end, every being subscribed afresh).
    fn start_with(
        fixture: &Fixture,
        options: &EngineOptions,
        land: Land,
        clock: Arc<LogicalClock>,
        checked: CheckedWorld,
        resumed: Option<(World, Scheduler)>,
    ) -> Result<Engine, EngineError> {
        let CheckedWorld { substrate, skipped_extensions, planned, warnings } = checked;
        let planned = &planned;
        let being_scripts =
            planned.iter().filter_map(|being| Some((being.script.as_ref()?, being.script_file.clone()?)));
        let role_scripts =
            substrate.roles.iter().filter_map(|role| Some((&**role.script.as_ref()?, role.script_origin.clone()?)));
        let script_files: BTreeMap<Hash32, String> = being_scripts
            .map(|(source, file)| (source.as_str(), file))
            .chain(role_scripts)
            .map(|(source, file)| (crate::fact::blake3_of(source.as_bytes()), file))
            .collect();
        let kept_for_replays = Arc::new(crate::replay::KeptWorlds::new());
        let (world, scheduler) = match resumed {
            Some(resumed) => resumed,
            None => {
                // Only a live land is replayed by the same process.
                let world = match options.mode {
                    Mode::Live => world_at_end_keeping_for_replays(&land, &kept_for_replays)?,
                    Mode::Simulation => world_at_end(&land)?,
                };
                // Looked up a million times by name, never iterated: its
                // order feeds nothing.
                let wake_every: std::collections::HashMap<&str, u64> =
                    planned.iter().map(|being| (being.name.as_str(), being.wake_every)).collect();
                let scheduler = Scheduler::subscribing_every_being(&world, |name| wake_every.get(name).copied());
                (world, scheduler)
            }
        };
        let trace_out = match &options.trace_file {
            Some(path) => Some((
                path.clone(),
                std::io::BufWriter::new(
                    std::fs::File::create(path).map_err(|source| EngineError::Trace { path: path.clone(), source })?,
                ),
            )),
            None => None,
        };
        let summary = RunSummary {
            fixture: fixture.name.clone(),
            ticks: 0,
            seed: options.seed,
            threads: options.threads,
            beings: world.beings.len() as u64,
            skipped_extensions,
            warnings,
            ..RunSummary::default()
        };
        let facts_before = land.store().land_len()?;
        let snapshot_every_facts = options.snapshot_every_facts.unwrap_or_else(|| land.snapshot_every_facts());
        let snapshot_spacing_step_bytes =
            options.snapshot_spacing_step_bytes.unwrap_or(crate::snapshots::SNAPSHOT_SPACING_STEP_BYTES).max(1);
        // The last two snapshots on the shelf: the next is spaced from the
        // last by the size of the one before it, as the run writing them did.
        let shelved = land.snapshots().cursors().unwrap_or_default();
        let latest_snapshot = shelved.last().copied().unwrap_or(0);
        let snapshot_before_bytes = match shelved.len() {
            0 | 1 => 0,
            shelved_count => crate::snapshots::snapshot_file_bytes(&land, shelved[shelved_count - 2]),
        };
        let snapshot_file_bytes_last =
            if shelved.is_empty() { 0 } else { crate::snapshots::snapshot_file_bytes(&land, latest_snapshot) };
        let next_snapshot_at = match snapshot_every_facts {
            0 => u64::MAX,
            every => crate::snapshots::next_snapshot_at(
                latest_snapshot,
                facts_before.saturating_sub(1),
                every,
                snapshot_before_bytes,
                snapshot_spacing_step_bytes,
            ),
        };
        // Moments are CPU-bound, one per `--threads`; LLM moments mostly wait
        // on a model, so with a model there are as many as it takes calls at once.
        let workers = options.threads.max(1).max(options.model.as_ref().map_or(1, |model| model.concurrency()));
        Ok(Engine {
            land,
            world,
            substrate: Arc::new(substrate),
            scheduler,
            clock,
            fixture: fixture.clone(),
            threads: options.threads,
            workers,
            model: options.model.clone().unwrap_or_else(|| Arc::new(crate::llm::NoModel)),
            trace_out,
            summary,
            tick: 0,
            facts_before,
            facts_counted: facts_before,
            health: health::HealthMonitor::default(),
            sealed_calls: Vec::new(),
            to_embed: Vec::new(),
            running: Arc::new(moment::RunningMoments::default()),
            // Moments are CPU-bound: they run as blocking tasks, one per
            // `--threads`, on a pool of that size.
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .max_blocking_threads(workers)
                .thread_name("seed-moment")
                .build()
                .map_err(|error| EngineError::Internal(format!("cannot start the moment runtime: {error}")))?,
            epoch: std::time::Instant::now(),
            moment_log: None,
            mode: options.mode,
            recent_traces: std::collections::VecDeque::new(),
            facts_signed: FactsSigned::default(),
            script_files,
            operator_token: None,
            snapshot_every_facts,
            next_snapshot_at,
            snapshot_bytes_last: 0,
            snapshot_file_bytes_last,
            snapshot_spacing_step_bytes,
            snapshot_in_writing: None,
            kept_for_replays,
            round_interrupt: Arc::default(),
            pool_traces: None,
            resume_checkpoints: false,
            resume_checkpoint_in_writing: None,
            kept_round_writers: None,
            catch_up_until: 0,
            definitions_to_seal: None,
            definitions_digest: Hash32::ZERO,
        })
    }

    /// Writes a resume checkpoint before each round from now on (`seed sim
    /// --land`): a killed run is resumed with [`Engine::resume`].
    pub fn keep_resume_checkpoints(&mut self) {
        self.resume_checkpoints = true;
    }

    /// Opens the land a simulation of `fixture` (with `options.seed`) was
    /// playing when its driver stopped, from its resume checkpoint: the
    /// world at the checkpoint, the scheduler's state, the round, the clock;
    /// the round it stopped in is played again and what the land already
    /// holds of it is compared, not sealed again (`resume.rs`).
    pub fn resume(fixture: &Fixture, options: &EngineOptions) -> Result<Engine, EngineError> {
        let checkpoint = resume::read(&options.land_dir)?;
        let (checked, files) = definitions::check_world_recording(fixture, &[])?;
        let clock = Arc::new(LogicalClock::starting_at(checkpoint.clock_ms));
        let mut land = Land::open_with(&options.land_dir, clock.clone(), Limits::default())?;
        land.set_key_source(KeySource::Seeded(simulation_key_seed(fixture, options.seed)));
        let land_len = land.store().land_len()?;
        if land_len < checkpoint.land_len {
            return Err(EngineError::CheckpointNotOfThisLand {
                reason: format!("it counts {} facts; the land holds {land_len}", checkpoint.land_len),
            });
        }
        if checkpoint.land_len > 0 {
            let last = read_land_log(land.store(), checkpoint.land_len - 1, checkpoint.land_len)?;
            let held = last.first().map(|(_, fact)| fact.id()).unwrap_or(crate::fact::FactId::ZERO);
            if held != checkpoint.last_fact {
                return Err(EngineError::CheckpointNotOfThisLand {
                    reason: format!(
                        "it names {} as the fact at land seq {}; the land holds {}",
                        checkpoint.last_fact.to_hex(),
                        checkpoint.land_len - 1,
                        held.to_hex()
                    ),
                });
            }
        }
        let world = world_before(&land, checkpoint.land_len)?;
        land.rewind_writers_to(checkpoint.land_len)?;
        let mut engine =
            Engine::start_with(fixture, options, land, clock, checked, Some((world, checkpoint.scheduler)))?;
        engine.check_definitions_unchanged(&files)?;
        engine.definitions_digest = files.set.digest();
        let run = pool::run_digest(fixture, options.seed, &engine);
        if run != checkpoint.run {
            return Err(EngineError::ResumeOtherRun { expected: run, found: checkpoint.run });
        }
        engine.tick = checkpoint.tick;
        engine.summary.ticks = checkpoint.tick;
        engine.facts_before = checkpoint.land_len;
        engine.facts_counted = checkpoint.land_len;
        engine.catch_up_until = land_len;
        engine.resume_checkpoints = true;
        Ok(engine)
    }

    /// The checkpoint a resumed run starts from, written before a round.
    fn write_resume_checkpoint(&mut self) -> Result<(), EngineError> {
        let last = self.last_fact_sealed()?;
        let scheduler = std::mem::take(&mut self.scheduler);
        let checkpoint = self.resume_checkpoint(last, scheduler);
        let written = resume::write(self.land.dir(), &checkpoint);
        self.scheduler = checkpoint.scheduler;
        written
    }

    /// Starts writing the checkpoint of the round about to begin, on a
    /// thread of its own beside the round's start (`resume::write_beside`),
    /// once the one before it is written. Whatever the round submits waits
    /// for it first ([`Engine::resume_checkpoint_written`]).
    fn begin_resume_checkpoint(&mut self) -> Result<(), EngineError> {
        self.resume_checkpoint_written()?;
        let last = self.last_fact_sealed()?;
        let checkpoint = self.resume_checkpoint(last, self.scheduler.clone());
        self.resume_checkpoint_in_writing = Some(resume::write_beside(self.land.dir(), checkpoint)?);
        Ok(())
    }

    /// Waits for the checkpoint being written, if one is: what comes
    /// before anything a round submits, so that no fact of a round reaches
    /// the land before the checkpoint that precedes it is durable.
    fn resume_checkpoint_written(&mut self) -> Result<(), EngineError> {
        self.resume_checkpoint_in_writing.take().map_or(Ok(()), resume::CheckpointInWriting::wait)
    }

    /// The land's length (the world is folded to all of it between rounds)
    /// and the id of its last fact (zero for an empty land).
    fn last_fact_sealed(&self) -> Result<(u64, crate::fact::FactId), EngineError> {
        let land_len = self.world.cursor;
        let last_fact = match land_len {
            0 => crate::fact::FactId::ZERO,
            _ => read_land_log(self.land.store(), land_len - 1, land_len)?
                .first()
                .map_or(crate::fact::FactId::ZERO, |(_, fact)| fact.id()),
        };
        Ok((land_len, last_fact))
    }

    /// The checkpoint of the round about to begin, with `scheduler` as its state.
    fn resume_checkpoint(
        &self,
        (land_len, last_fact): (u64, crate::fact::FactId),
        scheduler: Scheduler,
    ) -> resume::Checkpoint {
        resume::Checkpoint {
            version: resume::RESUME_CHECKPOINT_VERSION,
            run: pool::run_digest(&self.fixture, self.summary.seed, self),
            tick: self.tick,
            clock_ms: self.clock.now_ms(),
            land_len,
            last_fact,
            scheduler,
        }
    }

    /// Uses other definitions from the next round on (a what-if fork).
    pub fn set_substrate(&mut self, substrate: Substrate) {
        self.substrate = Arc::new(substrate);
    }

    /// Seals `effects` as one world fact now, folds it, and re-subscribes
    /// the beings whose roleFlow it changed (a what-if fork's change).
    pub fn seal_change(&mut self, effects: Vec<Effect>) -> Result<(), EngineError> {
        let reflowed: Vec<String> = effects
            .iter()
            .filter_map(|effect| match effect {
                Effect::SetRoleFlow { being, .. } => Some(being.clone()),
                _ => None,
            })
            .collect();
        seal_world(&self.land, effects)?;
        fold_to_end(self.land.store(), &mut self.world)?;
        for name in reflowed {
            let Some(id) = self.world.names.get(&name).copied() else { continue };
            let flow = self.world.beings.get(&id).map(|row| row.role_flow.clone()).unwrap_or_default();
            self.scheduler.subscribe(&self.world, id, &flow);
        }
        Ok(())
    }

    /// Seals each of `changes` as its own world fact, handed to the store
    /// together so that they are made durable together (one group commit),
    /// then folds them; returns each one's land seq. Canopy's arrivals: the
    /// inbox holds one summons per land seq, so each arrival is its own fact.
    pub fn seal_changes(&mut self, changes: Vec<Vec<Effect>>) -> Result<Vec<u64>, EngineError> {
        let mut pending = Vec::with_capacity(changes.len());
        let mut failed: Option<EngineError> = None;
        for effects in changes.into_iter().filter(|effects| !effects.is_empty()) {
            let submitted = canonical::to_canonical_bytes(&WorldBody { effects })
                .map_err(|error| EngineError::Internal(format!("world body: {error}")))
                .and_then(|body| Ok(self.land.submit(&self.land.root(), KIND_WORLD, body)?));
            match submitted {
                Ok(sealing) => pending.push(sealing),
                Err(error) => {
                    failed = Some(error);
                    break;
                }
            }
        }
        let mut land_seqs = Vec::with_capacity(pending.len());
        for sealing in pending {
            match sealing.wait() {
                Ok(sealed) => land_seqs.push(sealed.land_seq),
                Err(error) => failed = failed.or(Some(error.into())),
            }
        }
        // What did seal is folded even when some did not: the world never
        // lags what the land holds.
        fold_to_end(self.land.store(), &mut self.world)?;
        match failed {
            Some(error) => Err(error),
            None => Ok(land_seqs),
        }
    }

    /// Takes a being moving here from another land (`seed move`): records
    /// that it arrives (a root `world` fact), appends its history there
    /// (`history`: its reel up to its `move`, every fact checked by the
    /// caller, in seq order), then seals its `moved-in`, signed by the key
    /// this land minted for it, and lets it have moments here. Each step is
    /// skipped when an earlier try made it already, so a try cut short is
    /// finished by the next. Returns the land seq of its `moved-in`.
    pub fn take_moving_being(
        &mut self,
        arriving: seed_core::canopy::BeingArriving,
        history: Vec<crate::fact::Fact>,
        home_space: String,
    ) -> Result<u64, EngineError> {
        let being = arriving.being;
        let from_land = arriving.from_land;
        if !self.world.canopy.arriving.contains_key(&being) && !self.world.canopy.moved_in.contains_key(&being) {
            self.seal_changes(vec![vec![Effect::BeingArriving { arriving }]])?;
        }
        let held = self.land.store().head(&being)?.map_or(0, |head| head.seq + 1);
        self.land.append_taken(history.into_iter().filter(|fact| fact.header.seq >= held).collect())?;
        fold_to_end(self.land.store(), &mut self.world)?;
        if self.world.canopy.arriving.contains_key(&being) {
            let parent = self.land.operator();
            let body = crate::fact::body::MovedInBody { from_land, home_space, parent };
            self.land.seal_body(&being, crate::fact::body::KIND_MOVED_IN, &body)?;
            fold_to_end(self.land.store(), &mut self.world)?;
        }
        let flow = self.world.beings.get(&being).map(|row| row.role_flow.clone()).unwrap_or_default();
        self.scheduler.subscribe(&self.world, being, &flow);
        let moved_in_at = self.land.store().head(&being)?.map_or(0, |head| head.seq);
        let land_seq = self.land.store().land_seq_of(&being, moved_in_at)?;
        Ok(land_seq.unwrap_or(self.world.cursor.saturating_sub(1)))
    }

    /// What moments consult besides the world.
    pub fn substrate(&self) -> &Substrate {
        &self.substrate
    }

    pub fn substrate_shared(&self) -> Arc<Substrate> {
        self.substrate.clone()
    }

    /// When the run started (the running-moments table's clock counts from it).
    pub fn epoch(&self) -> std::time::Instant {
        self.epoch
    }

    /// How this engine's steps signed their facts so far.
    pub fn facts_signed(&self) -> FactsSigned {
        self.facts_signed
    }

    /// The latest moment traces of a live land, oldest first, as the
    /// portal shows them (each with the reel seq its act sealed at).
    pub fn recent_traces_json(&self) -> Vec<Json> {
        self.recent_traces.iter().map(report::RecentTrace::to_json).collect()
    }

    /// The clock every fact of the land is stamped from.
    pub fn clock(&self) -> Arc<LogicalClock> {
        self.clock.clone()
    }

    /// One round: the vectors of the acts sealed since the last, the tick's
    /// events, every wake's moment, the seals.
    pub fn round(&mut self) -> Result<(), EngineError> {
        if self.resume_checkpoints && self.mode == Mode::Simulation {
            self.begin_resume_checkpoint()?;
        }
        if self.idle_round_if_tripped() {
            return Ok(());
        }
        self.seal_definitions()?;
        self.seal_embeddings()?;
        let mut sealing = Sealing::new(0, self.threads.max(1));
        sealing.catch_up_until = self.catch_up_until;
        let decided = self.round_sealing(&mut sealing);
        let sealed = self.seal_step(decided, sealing);
        // Measured after a failed step too: a failed write is a sign.
        self.check_health();
        sealed
    }

    /// Ends a step. After a failure anywhere between deciding and sealing,
    /// the world and the writers may be ahead of the land (moments folded,
    /// facts prepared, never sealed): wait for what was already handed to the
    /// store, then make the world exactly the fold of what was sealed and
    /// let every writer reload its head from the store, so the next moment
    /// is decided against the land as it is and every sealed act replays.
    fn settle<T>(&mut self, result: Result<T, EngineError>, mut sealing: Sealing) -> Result<T, EngineError> {
        let waited = sealing.wait_all();
        let result = result.and_then(|value| waited.map(|()| value));
        if let Err(EngineError::Store(_) | EngineError::Land(LandError::Store(_) | LandError::Io { .. })) = &result {
            self.health.store_failed(self.clock.now_ms());
        }
        if result.is_err() {
            self.sealed_calls.clear();
            // Only acts the land holds get a vector.
            let land_len = self.land.store().land_len()?;
            self.to_embed.retain(|(_, _, _, land_seq)| *land_seq < land_len);
            self.land.reload_writers();
            self.world = world_at_end(&self.land)?;
            self.count_facts_sealed();
            return result;
        }
        self.count_facts_sealed();
        self.write_snapshot_if_due();
        result
    }

    /// Adds the facts sealed since the last step to `/metrics`'
    /// `seed_facts_sealed_total` (the world's cursor is the land's length
    /// once a step has settled).
    fn count_facts_sealed(&mut self) {
        let sealed = self.world.cursor.saturating_sub(self.facts_counted);
        report::record_facts_sealed(sealed);
        self.health.facts_sealed(self.clock.now_ms(), sealed);
        self.facts_counted = self.facts_counted.max(self.world.cursor);
    }

    /// Hook handlers whose breaker opened since the land was opened.
    fn hook_breakers_opened(&self) -> u64 {
        self.substrate.hooks.incidents().iter().filter(|incident| incident.breaker_opened).count() as u64
    }

    /// Measures the health signs after a step and trips the land when they
    /// call for it (`crate::health`): a world fact setting `land_tripped`,
    /// sealed before the next step can write anything. A tripped land, or
    /// one that watches no sign, measures nothing. A trip that cannot be
    /// sealed (the store failing) is logged, never the step's failure: the
    /// next step measures again.
    fn check_health(&mut self) {
        match self.measure_health() {
            // Said once for a lasting failure, as a failed round is.
            Err(error) if !self.health.trip_unsealed => {
                self.health.trip_unsealed = true;
                tracing::warn!(%error, "the land's health breaker could not seal its trip; it tries after each step");
            }
            Err(_) => {}
            Ok(()) => self.health.trip_unsealed = false,
        }
    }

    fn measure_health(&mut self) -> Result<(), EngineError> {
        // A resumed run catching up seals nothing of its own: a trip the
        // stopped run sealed is in the land, and one it did not must not be
        // sealed where the land holds another fact.
        if self.world.cursor < self.catch_up_until {
            return Ok(());
        }
        if crate::health::trip_of(&self.world).is_some() || !crate::health::watched(&self.world) {
            self.health.latest = None;
            return Ok(());
        }
        let now_ms = self.clock.now_ms();
        let breakers = self.hook_breakers_opened();
        let measured = self.health.measure(now_ms, breakers, Some(self.land.dir()));
        let health = crate::health::health_of(&self.world, &measured);
        let trip = crate::health::trip_for(&health, now_ms);
        report::record_health(&health);
        self.health.latest = Some(health);
        if let Some(trip) = trip {
            seal_world(&self.land, crate::health::trip_effects(&trip))?;
            fold_to_end(self.land.store(), &mut self.world)?;
            self.count_facts_sealed();
            tracing::warn!(sign = %trip.sign, score_permille = trip.score_permille, "the land's health breaker tripped");
            self.summary.tripped = Some((self.tick, trip));
        }
        Ok(())
    }

    /// The health measured after the latest step (none while tripped or
    /// when no sign is watched).
    pub fn health(&self) -> Option<&crate::health::Health> {
        self.health.latest.as_ref()
    }

    /// Revives a tripped land as `by` (the operator): a world fact that
    /// clears `land_tripped` and records the revival; the signs are counted
    /// afresh from here.
    pub fn revive(&mut self, by: &str) -> Result<crate::health::Revival, EngineError> {
        let Some(trip) = crate::health::trip_of(&self.world) else { return Err(EngineError::NotTripped) };
        if self.mode == Mode::Live {
            self.clock.advance_to(wall_now_ms());
        }
        let at_ms = self.clock.now_ms();
        seal_world(&self.land, crate::health::revival_effects(trip.clone(), by, at_ms))?;
        fold_to_end(self.land.store(), &mut self.world)?;
        self.count_facts_sealed();
        self.health.clear(self.hook_breakers_opened());
        tracing::info!(by, sign = %trip.sign, "the land was revived");
        Ok(crate::health::Revival { by: by.to_string(), trip, at_ms })
    }

    /// A round of a tripped land: its tick passes (a simulation's clock with
    /// it), and nothing is woken, run or sealed.
    fn idle_round_if_tripped(&mut self) -> bool {
        if crate::health::trip_of(&self.world).is_none() {
            return false;
        }
        self.tick += 1;
        if self.mode == Mode::Simulation {
            self.clock.advance_ms(self.fixture.tick_ms);
        }
        self.summary.ticks = self.tick;
        true
    }

    /// Writes a world snapshot when the land has grown past where the next
    /// was due (`snapshots::next_snapshot_at`: `snapshot_every_facts` after
    /// the last one, more for a large world). A snapshot that cannot be
    /// written (a full disk, an imported land without the root's key) is
    /// logged and skipped: the land goes on without it.
    ///
    /// The snapshot is written by a thread of its own from a copy of the
    /// world (rows and memories shared, behind pointers), while the next
    /// rounds run: at most one at a time, the one before waited for first.
    ///
    /// A live land that is stopping ([`Engine::round_interrupt`]) begins
    /// none: its stop would wait for it (6–10 s at a million beings), and the
    /// next opening folds past the last one anyway.
    fn write_snapshot_if_due(&mut self) {
        if !self.snapshot_due() {
            return;
        }
        if self.mode == Mode::Live && self.round_interrupt.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        self.wait_for_snapshot();
        // The round's copy of the world was just freed, and the snapshot's
        // copy and bytes (most of a gigabyte at a million beings) are next.
        crate::freed_memory::release_freed_memory();
        let buffer_bytes = crate::snapshots::snapshot_buffer_bytes(self.snapshot_bytes_last);
        match crate::snapshots::begin_snapshot(&self.land, self.world.clone(), buffer_bytes) {
            Ok(writing) => self.snapshot_in_writing = Some(writing),
            Err(error) => tracing::warn!(cursor = self.world.cursor, %error, "no world snapshot written"),
        }
        // Spaced by the snapshot just waited for, the one before this one.
        self.next_snapshot_at = crate::snapshots::next_snapshot_at(
            self.world.cursor,
            self.world.cursor,
            self.snapshot_every_facts,
            self.snapshot_file_bytes_last,
            self.snapshot_spacing_step_bytes,
        );
    }

    /// Whether the world has grown past where the next snapshot is due.
    fn snapshot_due(&self) -> bool {
        self.snapshot_every_facts != 0 && self.world.cursor >= self.next_snapshot_at
    }

    /// Waits for the world snapshot being written, if one is (a snapshot
    /// that could not be written is logged, never a step's failure).
    fn wait_for_snapshot(&mut self) {
        let Some(writing) = self.snapshot_in_writing.take() else { return };
        let cursor = writing.cursor();
        match writing.wait() {
            Ok(written) => {
                self.snapshot_bytes_last = written.world_bytes;
                self.snapshot_file_bytes_last = crate::snapshots::snapshot_file_bytes(&self.land, written.cursor);
                tracing::debug!(cursor = written.cursor, bytes = written.world_bytes, "world snapshot written");
            }
            Err(error) => tracing::warn!(cursor, %error, "no world snapshot written"),
        }
    }

    /// Advances the clock for round `tick` and gives the effects its
    /// scripted events make (a live land has none: people publish signals).
    fn advance_to_round(&mut self, tick: u64) -> Vec<Effect> {
        let scripted_events = match self.mode {
            Mode::Simulation => {
                self.clock.advance_ms(self.fixture.tick_ms);
                &self.fixture.events[..]
            }
            Mode::Live => {
                self.clock.advance_to(wall_now_ms());
                &[][..]
            }
        };
        let mut events = Vec::new();
        for event in scripted_events.iter().filter(|event| event.tick == tick) {
            let value = |value: &Json| if value.is_null() { None } else { Some(value.clone()) };
            if let Some(signal) = &event.signal {
                events.push(Effect::SetSignal { key: signal.key.clone(), value: value(&signal.value) });
            }
            if let Some(quality) = &event.quality {
                events.push(Effect::SetSpaceQuality {
                    path: quality.space.clone(),
                    key: quality.key.clone(),
                    value: value(&quality.value),
                });
            }
            if let Some(movement) = &event.move_being {
                events.push(Effect::MoveBeing { being: movement.being.clone(), to: movement.to.clone() });
            }
        }
        events
    }

    /// A round's events as a resumed run prepares them again: compared with
    /// the fact the land holds at the world's cursor, never submitted.
    fn seal_world_again(&mut self, effects: Vec<Effect>) -> Result<(), EngineError> {
        if effects.is_empty() {
            return Ok(());
        }
        let body = CanonicalBody::encode(&WorldBody { effects })
            .map_err(|error| EngineError::Internal(format!("world body: {error}")))?;
        let prepared = self.land.prepare_canonical(&self.land.root(), KIND_WORLD, body)?;
        sealing::same_as_stored(&self.land, &[(self.world.cursor, prepared)])
    }

    /// Starts the next round: its tick, its scripted events sealed and
    /// folded, and who wakes in it (in being-id order).
    fn begin_round(&mut self) -> Result<(u64, Vec<(BeingId, Wake)>), EngineError> {
        self.tick += 1;
        let tick = self.tick;
        let events = self.advance_to_round(tick);
        if self.world.cursor < self.catch_up_until {
            // Catching up: the events fact is the land's already (or the
            // resume diverged); fold no further than it.
            let after = self.world.cursor + u64::from(!events.is_empty());
            self.seal_world_again(events)?;
            fold_until(self.land.store(), &mut self.world, after)?;
        } else {
            if !events.is_empty() {
                self.resume_checkpoint_written()?;
            }
            seal_world(&self.land, events)?;
            fold_to_end(self.land.store(), &mut self.world)?;
        }
        Ok((tick, self.scheduler.wakes(&self.world, tick, self.clock.now_ms())))
    }

    /// A flag that, once set, stops a live land's round in progress between
    /// two moments (and any later round before its first): the moments it
    /// sealed stay, the rest of its wakes are not played, as wakes still
    /// queued are not played at any stop. A round of a million moments at
    /// the rounds' low priority kept `seed up` from stopping for 44 s. A simulation
    /// never reads it: its rounds are whole, or its world would depend on
    /// when the flag was set.
    pub fn round_interrupt(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.round_interrupt.clone()
    }

    /// Reads `flag` as its [`Engine::round_interrupt`] from now on (an
    /// engine that takes over from another, stopped by the same flag).
    pub fn set_round_interrupt(&mut self, flag: Arc<std::sync::atomic::AtomicBool>) {
        self.round_interrupt = flag;
    }

    fn round_sealing(&mut self, sealing: &mut Sealing) -> Result<(), EngineError> {
        let (tick, wakes) = self.begin_round()?;
        // The round's own facts wait for its checkpoint at their first flush.
        sealing.resume_checkpoint_first(self.resume_checkpoint_in_writing.take());
        // The writers each act is signed with where its moment ran: the
        // clock stays at the round's time while it seals (a live land reads
        // the wall time once, as the round begins, and nothing else moves it
        // while the round holds the engine); one whose fact turns out
        // otherwise at the seal is signed there. Those of beings that have
        // none loaded yet (a land just opened, a run resumed) are loaded
        // now, their keys derived together on the round's threads, rather
        // than one by one on this thread as each act is sealed. Only plain
        // keys: a being with a rotation in its ring, or one that does not
        // load, is left to its act's seal, which finishes it or says why.
        let writers = self.round_writer_handles(&wakes);
        let now_ms = self.clock.now_ms();
        // The world is folded to exactly what the land holds, but while a
        // resumed run catches up, when it is folded to the round's start.
        sealing.next_land_seq = match self.world.cursor < self.catch_up_until {
            true => self.world.cursor,
            false => self.land.store().land_len()?,
        };
        // Every moment of the round opens at the same cursor: blocking tasks on
        // the runtime compute them from one snapshot while this thread seals
        // finished ones, in being-id order.
        let snapshot = Arc::new(self.world.clone());
        let wakes = Arc::new(wakes);
        let window = Arc::new(moment_window::MomentWindow::new(moment_window::MOMENTS_AHEAD_OF_SEALING_MAX));
        // However this loop ends, the workers take no more wakes.
        let _stop_workers = moment_window::StopWhenDropped(&window);
        // A live land's traces are the portal's; a simulation's are read
        // only from its `--trace` file.
        let explains_walks = self.mode == Mode::Live || self.trace_out.is_some();
        let receiver = self.spawn_moments(&snapshot, &wakes, &window, now_ms, writers, explains_walks);
        // From here the workers alone hold the round's world: the last to
        // finish frees it on its own thread while this one seals the round's
        // tail (freeing it here kept both moment threads waiting).
        drop(snapshot);
        // The moments computed ahead of the next one to seal, by how far
        // ahead (the window keeps them within `MOMENTS_AHEAD_OF_SEALING_MAX`):
        // each is moved in once and out once.
        let mut waiting: VecDeque<Option<Computed>> = VecDeque::new();
        let mut interrupted = false;
        for (next, (being, _)) in wakes.iter().enumerate() {
            if self.mode == Mode::Live && self.round_interrupt.load(std::sync::atomic::Ordering::SeqCst) {
                tracing::info!(tick, played = next, wakes = wakes.len(), "the land is stopping: the round ends here");
                interrupted = true;
                break;
            }
            while waiting.front().is_none_or(Option::is_none) {
                let sent = receiver.recv().map_err(|_| EngineError::Internal("a moment task stopped early".into()))?;
                for (index, computed) in sent {
                    // Each wake is claimed once, and those before `next` are sealed.
                    let ahead = index.checked_sub(next).expect("a moment arrives once, before it is sealed");
                    if waiting.len() <= ahead {
                        waiting.resize_with(ahead + 1, || None);
                    }
                    waiting[ahead] = Some(computed);
                }
            }
            let Computed { outcome, trace, presigned } = waiting.pop_front().flatten().expect("just checked");
            window.taken(next + 1);
            self.seal_outcome(tick, *being, outcome, trace, presigned, sealing)?;
            if sealing.ripe() {
                sealing.flush(&self.land);
            }
        }
        if !interrupted && self.snapshot_due() {
            // Every moment is sealed: the workers are ending. Where a
            // snapshot is due at the step's end, waiting for them means the
            // round's world is freed before it, and the snapshot hands that
            // memory back first. Otherwise the last worker frees it while
            // the next step begins: waiting held this thread, with the
            // other core idle, about 3.5 ms a round on the crowd.
            while receiver.recv().is_ok() {}
        }
        self.summary.ticks = tick;
        Ok(())
    }

    /// The handles of the writers of the beings `wakes` wakes, as
    /// [`crate::land::Land::plain_writer_handles`] gives them: the round
    /// before's where the same beings wake and no loaded writer changed
    /// since ([`crate::land::Land::loaded_writers_changes`]). Looking ten
    /// thousand beings up again took about 2 ms of each of the crowd's
    /// rounds, before its moments start and with the other core idle.
    fn round_writer_handles(&mut self, wakes: &[(BeingId, Wake)]) -> Arc<Vec<Option<crate::land::WriterHandle>>> {
        let mut digest = crate::fact::GatheringHasher::new();
        for (being, _) in wakes {
            digest.update(&being.0);
        }
        let waking = digest.finalize();
        if let Some(kept) = &self.kept_round_writers {
            if kept.waking == waking && kept.changes == self.land.loaded_writers_changes() {
                return kept.handles.clone();
            }
        }
        let beings: Vec<BeingId> = wakes.iter().map(|(being, _)| *being).collect();
        let handles = Arc::new(self.land.plain_writer_handles(&beings, self.threads.max(1)));
        // Counted after the loading the handles may have done.
        let changes = self.land.loaded_writers_changes();
        self.kept_round_writers = Some(KeptRoundWriters { waking, changes, handles: handles.clone() });
        handles
    }

    /// Runs the moments of `wakes` on `world` as blocking tasks on the
    /// engine's runtime (`workers` of them, each taking the next wake
    /// `window` lets through); each result arrives with its wake's index.
    /// Each act is also signed there (with `writers`: each wake's being's,
    /// by index), beside the other moments, as its being's next fact
    /// would be at `now_ms` ([`crate::land::WriterHandle::presign`]): the
    /// sealing takes that signature where it prepares the very same fact,
    /// and signs the rest itself. A simulation's traces explain the role
    /// flow's walk only where `explains_walks` (something reads them).
    fn spawn_moments(
        &self,
        world: &Arc<World>,
        wakes: &Arc<Vec<(BeingId, Wake)>>,
        window: &Arc<moment_window::MomentWindow>,
        now_ms: u64,
        writers: Arc<Vec<Option<crate::land::WriterHandle>>>,
        explains_walks: bool,
    ) -> std::sync::mpsc::Receiver<Vec<(usize, Computed)>> {
        let workers = self.workers.min(wakes.len()).max(1);
        // Only a live land's running moments are listed (the portal's live
        // table); a simulation's moments are timed for their traces alone.
        let live = self.mode == Mode::Live;
        let (sender, receiver) = std::sync::mpsc::channel();
        for _ in 0..workers {
            let (sender, world, wakes, window) = (sender.clone(), world.clone(), wakes.clone(), window.clone());
            let (substrate, running, epoch) = (self.substrate.clone(), self.running.clone(), self.epoch);
            let (model, writers) = (self.model.clone(), writers.clone());
            self.runtime.spawn_blocking(move || {
                let mut computed: Vec<(usize, Computed)> = Vec::with_capacity(MOMENTS_SENT_TOGETHER_MAX);
                // The acts of `computed` to sign ahead, by their place in it:
                // signed together as they are handed over, for less work
                // than one by one (`crate::land::sign_ahead`).
                let mut ahead: Vec<(usize, crate::land::UnsignedAhead)> = Vec::with_capacity(MOMENTS_SENT_TOGETHER_MAX);
                // False once the sealing thread no longer listens.
                let hand_over = |computed: &mut Vec<(usize, Computed)>,
                                 ahead: &mut Vec<(usize, crate::land::UnsignedAhead)>| {
                    let (places, facts): (Vec<usize>, Vec<crate::land::UnsignedAhead>) = ahead.drain(..).unzip();
                    for (place, presigned) in places.into_iter().zip(crate::land::sign_ahead(facts)) {
                        computed[place].1.presigned = Some(presigned);
                    }
                    computed.is_empty() || sender.send(std::mem::take(computed)).is_ok()
                };
                let (live_observer, timed_observer) = (
                    moment::LiveObserver { running: &running, epoch },
                    moment::TimedObserver { epoch, explains_walks },
                );
                let observer: &dyn moment::MomentObserver = match live {
                    true => &live_observer,
                    false => &timed_observer,
                };
                // Computed once: what can make a script's moment wait.
                let scripts_call_out = live && moment_window::scripts_may_call_out(&substrate, &world);
                let mut listened = true;
                while let Some(index) =
                    window.claim_handing_over(wakes.len(), || listened = hand_over(&mut computed, &mut ahead))
                {
                    if !listened {
                        return;
                    }
                    let (being, wake) = &wakes[index];
                    // A live land's moments may wait on a model, a tool or a
                    // person: what this worker holds is not held behind one.
                    let held_back = !live || moment_window::may_be_held_back(&world, being, scripts_call_out);
                    if !held_back && !hand_over(&mut computed, &mut ahead) {
                        return;
                    }
                    let (outcome, trace) =
                        moment::run_observed(&substrate, &world, *being, wake.clone(), now_ms, observer, &*model);
                    if live {
                        running.finish(being);
                    }
                    let writer = writers.get(index).and_then(Option::as_ref);
                    let unsigned = match (&outcome, writer) {
                        (Outcome::Act(act), Some(writer)) => act.encoded.as_ref().and_then(|body| {
                            writer.prepare_ahead(being, KIND_ACT, body.clone(), now_ms).ok().flatten()
                        }),
                        _ => None,
                    };
                    if let Some(unsigned) = unsigned {
                        ahead.push((computed.len(), unsigned));
                    }
                    computed.push((index, Computed { outcome, trace, presigned: None }));
                    if (computed.len() >= MOMENTS_SENT_TOGETHER_MAX || !held_back)
                        && !hand_over(&mut computed, &mut ahead)
                    {
                        return;
                    }
                }
                hand_over(&mut computed, &mut ahead);
                // After the last moments are handed over, so the sealing
                // thread seals them while the round's world may be freed here
                // (by the last worker to finish), before this worker's sender
                // is dropped (the end the sealing thread waits for where a
                // snapshot is due).
                drop(world);
            });
        }
        receiver
    }

    /// The sealing tail of every step, a round's or a person's: hand what
    /// is prepared to the store (unless deciding failed: then nothing more
    /// is handed over), wait until all of it is durable (or fold the world
    /// back to what was sealed, see [`Engine::settle`]), then run the
    /// `after:` hooks on each act, in sealing order.
    fn seal_step<T>(&mut self, decided: Result<T, EngineError>, mut sealing: Sealing) -> Result<T, EngineError> {
        if decided.is_ok() {
            sealing.flush(&self.land);
        }
        tracing::debug!(
            signed_ahead = sealing.signed_ahead,
            signed_at_seal = sealing.signed_here,
            unused_ahead = sealing.unused_ahead,
            "a step's facts signed"
        );
        self.facts_signed.ahead += sealing.signed_ahead;
        self.facts_signed.at_seal += sealing.signed_here;
        let sealed = self.settle(decided, sealing)?;
        for (actor, call, seed) in std::mem::take(&mut self.sealed_calls) {
            self.substrate.hooks.after(&actor, &call, &self.world, seed);
        }
        Ok(sealed)
    }

    /// Prepares an act's fact (taking `presigned` whole where it was
    /// signed ahead as this very fact) and, for a birth, the child's
    /// genesis after it. If the genesis cannot be prepared, the act's
    /// writer forgets the act, so nothing of the moment is left half-prepared.
    fn prepare_act_and_birth(
        &self,
        being: BeingId,
        body: CanonicalBody,
        birth: Option<&moment::BirthRequest>,
        presigned: Option<crate::land::Presigned>,
    ) -> Result<(Prepared, Option<Prepared>), LandError> {
        let act = self.land.prepare_canonical_ahead(&being, KIND_ACT, body, presigned)?;
        let Some(birth) = birth else { return Ok((act, None)) };
        let genesis = self.land.prepare_being(BeingSpec {
            name: birth.name.clone(),
            parent: Some(birth.parent),
            cognition: birth.cognition,
            role_flow: birth
                .role_flow
                .as_array()
                .map(|flow| flow.iter().map(json_to_cbor).collect())
                .unwrap_or_default(),
            default_role: birth.default_role.clone(),
            home_space: birth.home_space.clone(),
        });
        match genesis {
            Ok(genesis) => Ok((act, Some(genesis))),
            Err(error) => {
                self.land.abandon(act);
                Err(error)
            }
        }
    }

    /// Seals one moment's outcome (in being-id order within the round),
    /// re-checking its act against the world the earlier acts left;
    /// `presigned` is its act as signed where the moment ran, if it was.
    fn seal_outcome(
        &mut self,
        tick: u64,
        being: BeingId,
        outcome: Outcome,
        mut trace: MomentTrace,
        presigned: Option<crate::land::Presigned>,
        sealing: &mut Sealing,
    ) -> Result<(String, Option<Failure>), EngineError> {
        self.summary.moments += 1;
        // Every answered call counts (a panel makes several).
        if let Some(llm) = trace.llm.as_ref().filter(|llm| !llm.records.is_empty()) {
            self.summary.llm_calls += llm.records.len() as u64;
            self.summary.llm_prompt_tokens += llm.prompt_tokens;
            self.summary.llm_completion_tokens += llm.completion_tokens;
            self.summary.llm_cost_micros += llm.cost_micros;
        }
        let (mut sealed_call, mut sealed_content) = (None, None);
        // The reel seq the act sealed at: the live trace links to its moment.
        let mut sealed_seq = None;
        let mut failed: Option<Failure> = None;
        match outcome {
            Outcome::Act(mut act) => match moment::recheck(&self.substrate, &self.world, &mut act) {
                Ok(()) => 'sealing: {
                    if self.moment_log.is_some() {
                        sealed_call = Some(act.body.call.to_json());
                        sealed_content = act.body.content.clone();
                    }
                    let body = match act.encoded.take() {
                        Some(body) => body,
                        None => {
                            act.body.canonical().map_err(|error| EngineError::Internal(format!("act body: {error}")))?
                        }
                    };
                    // What can stop this being's facts alone (its key missing,
                    // unreadable or not the reel's, a body over the land's
                    // limit, an ended reel) fails this moment before anything
                    // is folded; the other beings of the round go on.
                    let offered_ahead = presigned.is_some();
                    let prepared = match self.prepare_act_and_birth(being, body, act.birth.as_ref(), presigned) {
                        Ok(prepared) => prepared,
                        Err(error) => match being_fault(&error) {
                            Some(fault) => {
                                let refusal = Refusal::Seal { fault, message: error.to_string() };
                                failed = Some(Failure { beat: Beat::Seal, refusal });
                                (sealed_call, sealed_content) = (None, None);
                                break 'sealing;
                            }
                            None => return Err(error.into()),
                        },
                    };
                    let (prepared_act, prepared_birth) = prepared;
                    if offered_ahead && !prepared_act.is_signed_ahead() {
                        sealing.unused_ahead += 1;
                    }
                    let act_fact = prepared_act.unsigned.id();
                    let unsigned = &prepared_act.unsigned;
                    sealed_seq = Some(unsigned.header.seq);
                    self.world.apply_act(sealing.next_land_seq, &unsigned.header, unsigned.id(), &act.body);
                    if !sealing.is_holding() && self.world.config.contains_key(EMBEDDING_CONNECTION_CONFIG_KEY) {
                        let text = crate::memory::fold::act_text(&act.body.call, act.body.content.as_deref());
                        self.to_embed.push((being, unsigned.id(), text, sealing.next_land_seq));
                    }
                    sealing.push(prepared_act);
                    *self.summary.acts.entry(act.body.call.verb().to_string()).or_default() += 1;
                    if let (Some(birth), Some(prepared)) = (&act.birth, prepared_birth) {
                        let unsigned = &prepared.unsigned;
                        self.world.apply_parts(sealing.next_land_seq, &unsigned.header, unsigned.id(), unsigned.body());
                        sealing.push(prepared);
                        if let Some(child) = self.world.names.get(&birth.name).copied() {
                            self.scheduler.subscribe(&self.world, child, &birth.role_flow);
                        }
                    }
                    self.seal_cascades(being, act_fact, &act, sealing)?;
                    if act.rotate_key && sealing.is_holding() {
                        // A pool worker's turn: the rotation rides in the turn
                        // after the act; its key is promoted once it is sealed.
                        let rotation = self.land.prepare_rotation(&being)?;
                        sealing.push(rotation.fact);
                        sealing.rotations.push((being, rotation.new_key));
                        self.world.cursor = self.world.cursor.max(sealing.next_land_seq);
                    } else if act.rotate_key {
                        // The rotation seals after the act and everything queued before it.
                        sealing.flush(&self.land);
                        let sealed = self.land.rotate_key(&being)?;
                        if sealed.land_seq != sealing.next_land_seq {
                            return Err(EngineError::Internal(format!(
                                "rotate-key sealed at {} not {}",
                                sealed.land_seq, sealing.next_land_seq
                            )));
                        }
                        self.world.cursor = self.world.cursor.max(sealed.land_seq + 1);
                        sealing.next_land_seq += 1;
                    }
                    if act.self_continue {
                        self.scheduler.continuing.insert(being);
                    }
                    if !self.substrate.hooks.is_empty() {
                        let actor = self.world.name_of(&being).unwrap_or_default().to_string();
                        self.sealed_calls.push((actor, act.body.call.clone(), act.op_seed));
                    }
                }
                Err(failure) => failed = Some(failure),
            },
            Outcome::See => self.summary.sees += 1,
            Outcome::Failure(failure) => failed = Some(failure),
        }
        if let Some(failure) = &failed {
            self.summary.failures += 1;
            self.health.moment_failed(self.clock.now_ms());
            *self.summary.failure_reasons.entry(failure.refusal.kind().to_string()).or_default() += 1;
            trace.outcome = failure.to_string();
            let script = self.script_where(being, trace.primary.as_deref(), &failure.refusal);
            self.summary.failure_examples.entry(failure.refusal.kind().to_string()).or_insert_with(|| {
                report::FailureExample { being: trace.name.clone(), tick, reason: trace.outcome.clone(), script }
            });
        }
        if sealed_seq.is_none() || failed.is_some() {
            self.seal_unsealed_call(being, &trace, sealing)?;
        }
        self.scheduler.saw(&self.world, being);
        log_moment(&trace, self.mode);
        let outcome = match (&failed, sealed_seq) {
            (Some(_), _) => "failure",
            (None, Some(_)) => "act",
            (None, None) => "see",
        };
        report::record_moment_metrics(&trace, outcome);
        if let Some(log) = self.moment_log.as_mut() {
            log.push(MomentRecord {
                tick,
                being,
                name: trace.name.clone(),
                wake: trace.wake.to_json(),
                primary: trace.primary.clone(),
                stack: trace.stack.clone(),
                outcome: trace.outcome.clone(),
                call: sealed_call,
                content: sealed_content,
            });
        }
        if let Some((path, out)) = self.trace_out.as_mut() {
            let line = trace_json(tick, &trace);
            writeln!(out, "{line}").map_err(|source| EngineError::Trace { path: path.clone(), source })?;
        }
        if let Some(traces) = self.pool_traces.as_mut() {
            traces.push(trace_json(tick, &trace));
        }
        if self.mode == Mode::Live {
            if self.recent_traces.len() >= LIVE_MOMENT_TRACES_KEPT {
                self.recent_traces.pop_front();
            }
            let outcome = trace.outcome.clone();
            let seq = sealed_seq.filter(|_| failed.is_none());
            self.recent_traces.push_back(report::RecentTrace { tick, trace, seq });
            return Ok((outcome, failed));
        }
        Ok((trace.outcome, failed))
    }

    /// Seals a `spend` fact for each model call of a moment that sealed no act (it
    /// saw, or failed after the answer), so what it cost is on the reel and
    /// in every fold (`crate::spend`). A fault of this being's alone (its
    /// key, an ended reel) leaves the call unrecorded and is logged.
    fn seal_unsealed_call(
        &mut self,
        being: BeingId,
        trace: &MomentTrace,
        sealing: &mut Sealing,
    ) -> Result<(), EngineError> {
        let records = trace.llm.as_ref().map(|llm| llm.records.as_slice()).unwrap_or_default();
        // The outcome is kept short: a panel's failure names every member's,
        // and the record beside it may take most of a fact's room.
        let mut outcome: String = trace.outcome.chars().take(crate::spend::SPEND_OUTCOME_CHARS_MAX).collect();
        if outcome.len() < trace.outcome.len() {
            outcome.push('…');
        }
        for record in records {
            let body = crate::spend::SpendBody {
                llm: record.clone(),
                wake: trace.wake.clone(),
                cursor: trace.cursor,
                outcome: outcome.clone(),
                primary: trace.primary.clone(),
            };
            // One call that cannot be sealed does not keep the others off the reel.
            if let Err(fault) = self.seal_own_fact(being, crate::spend::KIND_SPEND, &body, sealing)? {
                tracing::warn!(being = %trace.name, error = %fault, "a model call's spend could not be sealed");
            }
        }
        Ok(())
    }

    /// Seals what an act's writes at spaces marked for cascade announce
    /// (`crate::cascade`): each signal, then its deliveries and drops, as
    /// `world` facts on the actor's reel right after the act, each folded
    /// before the next is decided. Nothing while the land is tripped. A
    /// fault of this being's alone stops its cascade there, logged.
    fn seal_cascades(
        &mut self,
        being: BeingId,
        cause: crate::fact::FactId,
        act: &moment::Act,
        sealing: &mut Sealing,
    ) -> Result<(), EngineError> {
        if crate::health::trip_of(&self.world).is_some() {
            return Ok(());
        }
        let announcements = crate::cascade::announcements(&self.world, &being, &act.body);
        let writer = self.world.name_of(&being).map(str::to_string);
        for announcement in announcements {
            let signal = crate::cascade::signal_of(&self.world, announcement, cause, act.stored_time_ms);
            let effect = Effect::CascadeSignal { signal: signal.clone() };
            let Some(signal_fact) = self.seal_own_world_fact(being, effect, sealing)? else { return Ok(()) };
            report::record_cascade("seed_cascade_signals_total", "announced", signal.dropped.as_ref());
            let deliveries = crate::cascade::propagate(
                &self.world,
                &self.substrate.cascade,
                signal_fact,
                writer.as_deref(),
                &signal,
            );
            for delivery in deliveries {
                let dropped = delivery.dropped.clone();
                if self.seal_own_world_fact(being, Effect::CascadeDelivery { delivery }, sealing)?.is_none() {
                    return Ok(());
                }
                report::record_cascade("seed_cascade_deliveries_total", "delivered", dropped.as_ref());
            }
        }
        Ok(())
    }

    /// One `world` fact of `effect` on `being`'s reel, folded and queued:
    /// its id, or `None` (logged) when a fault of this being's alone stops it.
    fn seal_own_world_fact(
        &mut self,
        being: BeingId,
        effect: Effect,
        sealing: &mut Sealing,
    ) -> Result<Option<crate::fact::FactId>, EngineError> {
        let body = WorldBody { effects: vec![effect] };
        let body =
            CanonicalBody::encode(&body).map_err(|error| EngineError::Internal(format!("world body: {error}")))?;
        match self.land.prepare_canonical(&being, KIND_WORLD, body) {
            Ok(prepared) => {
                let unsigned = &prepared.unsigned;
                let id = unsigned.id();
                self.world.apply_parts(sealing.next_land_seq, &unsigned.header, id, unsigned.body());
                sealing.push(prepared);
                Ok(Some(id))
            }
            Err(error) if being_fault(&error).is_some() => {
                tracing::warn!(being = %being.to_hex(), %error, "a cascade record could not be sealed");
                Ok(None)
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Prepares a fact of `being`'s own beside its moments (a `spend` or
    /// `embedding` fact), folds it and queues it in `sealing`. A fault of
    /// this being's alone (its key, an ended reel) is given back, not raised.
    fn seal_own_fact(
        &mut self,
        being: BeingId,
        kind: &str,
        body: &impl serde::Serialize,
        sealing: &mut Sealing,
    ) -> Result<Result<(), LandError>, EngineError> {
        let body =
            CanonicalBody::encode(body).map_err(|error| EngineError::Internal(format!("{kind} body: {error}")))?;
        match self.land.prepare_canonical(&being, kind, body) {
            Ok(prepared) => {
                let unsigned = &prepared.unsigned;
                self.world.apply_parts(sealing.next_land_seq, &unsigned.header, unsigned.id(), unsigned.body());
                sealing.push(prepared);
                Ok(Ok(()))
            }
            Err(error) if being_fault(&error).is_some() => Ok(Err(error)),
            Err(error) => Err(error.into()),
        }
    }

    /// Seals an `embedding` fact for each act sealed since the last call
    /// (`crate::embedding`): after the acts, never on their write path. A
    /// vector the connection does not give is logged and the act goes
    /// without one (recall ranks it lexically).
    fn seal_embeddings(&mut self) -> Result<(), EngineError> {
        if self.to_embed.is_empty() {
            return Ok(());
        }
        let waiting = std::mem::take(&mut self.to_embed);
        let Some(connection) = self.world.config.get(EMBEDDING_CONNECTION_CONFIG_KEY).and_then(Json::as_str) else {
            return Ok(());
        };
        let connection = connection.to_string();
        if let Err(error) = self.resume_checkpoint_written() {
            self.to_embed = waiting;
            return Err(error);
        }
        let limits = crate::llm::CallLimits::of_models(&self.world);
        let mut sealing = Sealing::new(self.world.cursor, 1);
        sealing.catch_up_until = self.catch_up_until;
        let sealed = (|| {
            for (being, fact, text, _) in waiting {
                let seed = u64::from_be_bytes(fact.0[..8].try_into().expect("32 bytes"));
                let question = crate::llm::EmbedQuestion { connection: &connection, text: &text, seed, limits };
                let embedded = match self.model.embed(&question) {
                    Ok(embedded) => embedded,
                    Err(no_answer) => {
                        tracing::warn!(fact = %fact.to_hex(), %no_answer, "an act has no vector");
                        continue;
                    }
                };
                let body = crate::embedding::EmbeddingBody {
                    fact,
                    vector: crate::embedding::to_bytes(&embedded.vector),
                    connection: embedded.connection,
                    model: embedded.model,
                };
                if let Err(fault) = self.seal_own_fact(being, crate::embedding::KIND_EMBEDDING, &body, &mut sealing)? {
                    tracing::warn!(fact = %fact.to_hex(), error = %fault, "an act's vector could not be sealed");
                }
            }
            Ok(())
        })();
        self.seal_step(sealed, sealing)
    }

    /// Runs one moment a person drives (the portal): `being` must be of
    /// human cognition or inhabited. Sealed and durable before it returns;
    /// refusals are failures in the moment trace, with nothing written.
    pub fn act_as_person(
        &mut self,
        being: BeingId,
        wake: Wake,
        choice: &moment::PersonChoice,
    ) -> Result<PersonResult, EngineError> {
        if let Some(trip) = crate::health::trip_of(&self.world) {
            return Err(EngineError::Tripped { trip: Box::new(trip) });
        }
        self.seal_definitions()?;
        if self.mode == Mode::Live {
            self.clock.advance_to(wall_now_ms());
        }
        let now_ms = self.clock.now_ms();
        let observer = moment::LiveObserver { running: &self.running, epoch: self.epoch };
        let (outcome, trace) =
            moment::run_person(&self.substrate, &self.world, being, wake, now_ms, &observer, choice, &*self.model);
        self.running.finish(&being);
        let first_land_seq = self.land.store().land_len()?;
        let mut sealing = Sealing::new(first_land_seq, 1);
        let decided = self.seal_outcome(self.tick, being, outcome, trace, None, &mut sealing);
        let sealed = sealing.next_land_seq > first_land_seq;
        let sealed_step = self.seal_step(decided, sealing);
        self.check_health();
        let (outcome, failure) = sealed_step?;
        Ok(PersonResult { outcome, failure, land_seq: sealed.then_some(first_land_seq), sealed })
    }

    /// Computes the world hash, flushes the trace and closes the land.
    pub fn finish(mut self) -> Result<RunSummary, EngineError> {
        self.seal_embeddings()?;
        self.summary.facts_sealed = self.land.store().land_len()? - self.facts_before;
        self.summary.world_hash = world_hash(&self.world, self.land.store())?;
        self.summary.hook_incidents = self.substrate.hooks.incidents();
        let summary = std::mem::take(&mut self.summary);
        self.close()?;
        Ok(summary)
    }

    /// What [`Engine::finish`] does but reckon the run's summary: seals
    /// what waits to be embedded, flushes the trace, waits for the snapshot
    /// in writing and closes the land. For a caller that prints no summary
    /// (`seed up` stopping, a command sealing one change): the world hash
    /// reads every reel's head, 13 s of `seed up`'s stop on a land of a
    /// million beings.
    pub fn close(mut self) -> Result<(), EngineError> {
        self.resume_checkpoint_written()?;
        self.seal_embeddings()?;
        if let Some((path, mut out)) = self.trace_out.take() {
            out.flush().map_err(|source| EngineError::Trace { path, source })?;
        }
        self.wait_for_snapshot();
        self.land.close()?;
        Ok(())
    }
}

impl Engine {
    /// `FILE:LINE:COLUMN` of the script that failed with `refusal`, when the
    /// script is one read from a file: the being's own, else its primary role's.
    fn script_where(&self, being: BeingId, primary: Option<&str>, refusal: &moment::Refusal) -> Option<String> {
        let moment::Refusal::Script(error) = refusal else { return None };
        let own = self.world.beings.get(&being).and_then(|row| row.qualities.get("script")).and_then(Json::as_str);
        let role_script = || self.substrate.roles.get(primary?)?.script.clone();
        let source: Arc<str> = match own {
            Some(source) => Arc::from(source),
            None => role_script()?,
        };
        let file = self.script_files.get(&crate::fact::blake3_of(source.as_bytes()))?;
        let (line, column) = match error {
            crate::script::ScriptError::Compile { line, column, .. }
            | crate::script::ScriptError::Runtime { line, column, .. } => (*line, *column),
            _ => (None, None),
        };
        Some(match (line, column) {
            (Some(line), Some(column)) => format!("{file}:{line}:{column}"),
            (Some(line), None) => format!("{file}:{line}"),
            _ => file.clone(),
        })
    }
}

/// Plants the fixture in `options.land_dir` and runs it as a simulation.
pub fn simulate(fixture: &Fixture, options: &EngineOptions) -> Result<RunSummary, EngineError> {
    play(Engine::plant(fixture, options)?, fixture, options)
}

/// [`simulate`], writing a resume checkpoint before each round (`seed sim
/// --land`), so a killed run is finished by [`resume_simulation`].
pub fn simulate_resumably(fixture: &Fixture, options: &EngineOptions) -> Result<RunSummary, EngineError> {
    let mut simulation = Engine::plant(fixture, options)?;
    simulation.keep_resume_checkpoints();
    play(simulation, fixture, options)
}

/// Finishes the simulation whose driver stopped in `options.land_dir`
/// (`seed sim --resume`): the rounds from its checkpoint to the fixture's
/// (or `--ticks`) last, ending with the world hash an uninterrupted run has.
pub fn resume_simulation(fixture: &Fixture, options: &EngineOptions) -> Result<RunSummary, EngineError> {
    play(Engine::resume(fixture, options)?, fixture, options)
}

/// Plays the rounds left until the run's last tick, then finishes.
fn play(mut simulation: Engine, fixture: &Fixture, options: &EngineOptions) -> Result<RunSummary, EngineError> {
    let ticks = options.ticks.unwrap_or(fixture.ticks);
    let progress = &options.progress;
    progress.stage("running rounds", ticks.saturating_sub(simulation.tick), "rounds");
    // The wall clock measures the run for the summary only; no fact sees it.
    let started = std::time::Instant::now();
    while simulation.tick < ticks {
        simulation.round()?;
        progress.advance(1);
    }
    simulation.summary.elapsed_ms = started.elapsed().as_millis() as u64;
    simulation.finish()
}

/// Which of one being's own faults `error` is, if it stops only that
/// being's facts (its key, its body, its ended reel) rather than the land:
/// a round fails that being's moment and goes on with the others.
fn being_fault(error: &LandError) -> Option<BeingFault> {
    match error {
        LandError::Key(KeyError::Missing { .. } | KeyError::Permissions { .. } | KeyError::Corrupt { .. }) => {
            Some(BeingFault::Key)
        }
        LandError::BodyTooLarge { .. } => Some(BeingFault::BodyTooLarge),
        LandError::Ended { .. } | LandError::MovedAway { .. } => Some(BeingFault::Ended),
        LandError::BadName { .. } => Some(BeingFault::Name),
        LandError::Key(KeyError::Io { .. } | KeyError::Random { .. })
        | LandError::NoLand { .. }
        | LandError::NotALand { .. }
        | LandError::AlreadyPlanted { .. }
        | LandError::NotEmpty { .. }
        | LandError::Meta { .. }
        | LandError::Locked { .. }
        | LandError::Mirror { .. }
        | LandError::NotMovable { .. }
        | LandError::StoreOpen { .. }
        | LandError::BadStore { .. }
        | LandError::StoreElsewhere { .. }
        | LandError::StoreNotEmpty { .. }
        | LandError::StoreMissingFacts { .. }
        | LandError::UnknownName { .. }
        | LandError::UnknownBeing { .. }
        | LandError::AmbiguousName { .. }
        | LandError::BadReference { .. }
        | LandError::Io { .. }
        | LandError::Store(_)
        | LandError::Fact(_)
        | LandError::Checkpoint { .. }
        | LandError::Snapshot(_)
        | LandError::RewindPastRotation { .. } => None,
    }
}

/// The writers' handles a round signed ahead with, and what they were
/// taken for: the beings it woke (their ids' digest, in wake order) and the
/// land's count of changes to its loaded writers after taking them.
struct KeptRoundWriters {
    waking: Hash32,
    changes: u64,
    handles: Arc<Vec<Option<crate::land::WriterHandle>>>,
}

/// The wall clock, read where a live land steps (never inside a moment).
fn wall_now_ms() -> u64 {
    crate::clock::Clock::now_ms(&crate::clock::WallClock::default())
}
