//! Replay: walk a being's reel from genesis and rebuild every moment it
//! lived, byte for byte, from what the land stored.
//!
//! The world is folded fact by fact in land order. When the fold reaches the
//! cursor a stored act opened at, the moment is recomputed there (open,
//! assign, face, momentum, decide) with the act's stored wake and time; when
//! the fold reaches the act's own land seq, the seal-time rules are re-run
//! against the world as it stood then, and the recomputed act body is
//! compared with the stored body, byte for byte. Replay never writes to the
//! land and never calls a model.
//!
//! A mismatch is a [`Divergence`]: which fields differ (expected and actual),
//! the open context that fed the moment, and the likely cause: the stored
//! input changed (the reel does not verify), the evaluator or a definition
//! changed since the act was sealed (every act records the evaluator version
//! and the digest of each role it wore), or true nondeterminism (a second
//! recomputation in this build disagrees with the first).

pub mod breakpoint;
pub mod corpus;
pub mod definitions_at;
pub mod fork;
pub mod kept_worlds;
pub mod land;
mod opening;

use crate::check::{verify_being, SignatureMode};
use crate::fact::{BeingId, Fact, Hash32};
use crate::limits::Limits;
use crate::moment::{self, Outcome, Substrate, EVALUATOR_VERSION};
use crate::snapshots::WorldSnapshots;
use crate::store::{Store, StoreError};
use crate::world::body::{VerbCall, Wake, KIND_ACT};
use crate::world::{ActBody, CoreSchemas, FoldBody, World};
pub use definitions_at::{FilesChanged, ReplayDefinitions};
pub use kept_worlds::KeptWorlds;
use opening::ActOpening;
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, BTreeSet};

/// Signatures are checked in batches of this many facts (strict fallback on
/// a failed batch names the culprit).
pub const REPLAY_SIGNATURE_BATCH_FACTS: usize = 256;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{being} has no reel in this land")]
    NoReel { being: BeingId },
    #[error("land seq {land_seq} points at a fact the store does not hold")]
    DanglingLandEntry { land_seq: u64 },
    /// The definitions the land recorded do not load in this build.
    #[error("the definitions the land recorded at land seq {land_seq} do not load: {reason}")]
    Definitions { land_seq: u64, reason: String },
    /// A moment sealed before the land recorded any definitions, and no
    /// files were given to replay it with.
    #[error(
        "the moment at land seq {land_seq} was sealed before the land recorded its definitions: give the fixture it ran (--fixture FILE)"
    )]
    NoDefinitions { land_seq: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayOptions {
    /// First reel seq whose moment is shown and compared.
    pub from_seq: u64,
    /// Last reel seq (inclusive) whose moment is shown and compared.
    pub to_seq: u64,
    /// Go on after the first divergence instead of stopping there.
    pub keep_going: bool,
}

impl Default for ReplayOptions {
    fn default() -> ReplayOptions {
        ReplayOptions { from_seq: 0, to_seq: u64::MAX, keep_going: false }
    }
}

/// Why a recomputed moment differs from the stored one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DivergenceCause {
    /// The reel does not verify: a stored fact was altered or corrupted.
    StoredInputChanged { problems: Vec<String> },
    /// The act was sealed by another evaluator version.
    EvaluatorChanged { recorded: String, current: String },
    /// A role the moment wore is defined differently now (or is gone), or
    /// the files replayed with are not those the land recorded for it.
    DefinitionChanged { roles: Vec<RoleChange>, files: Option<FilesChanged> },
    /// Two recomputations in this build disagree.
    Nondeterminism,
    /// Nothing recorded explains it (for instance an input outside the
    /// recorded digests: a DO operation's or see-resolver's code).
    Unexplained,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleChange {
    pub role: String,
    pub recorded: Hash32,
    /// `None`: the role is no longer defined.
    pub current: Option<Hash32>,
}

impl DivergenceCause {
    pub fn label(&self) -> &'static str {
        match self {
            DivergenceCause::StoredInputChanged { .. } => "stored input changed",
            DivergenceCause::EvaluatorChanged { .. } => "evaluator changed",
            DivergenceCause::DefinitionChanged { .. } => "definition changed",
            DivergenceCause::Nondeterminism => "nondeterminism",
            DivergenceCause::Unexplained => "unexplained",
        }
    }

    pub fn to_json(&self) -> Json {
        match self {
            DivergenceCause::StoredInputChanged { problems } => json!({"kind": self.label(), "problems": problems}),
            DivergenceCause::EvaluatorChanged { recorded, current } => {
                json!({"kind": self.label(), "recorded": recorded, "current": current})
            }
            DivergenceCause::DefinitionChanged { roles, files } => {
                let mut value = json!({"kind": self.label(), "roles": roles.iter().map(|change| json!({
                "role": change.role, "recorded": change.recorded.to_hex(),
                "current": change.current.map(|digest| digest.to_hex()),
            })).collect::<Vec<_>>()});
                if let Some(files) = files {
                    value["files"] = json!({
                        "recordedAt": files.recorded_at,
                        "changes": files.changes.iter()
                            .map(|change| json!({"path": change.path, "how": change.how.as_str()}))
                            .collect::<Vec<_>>(),
                    });
                }
                value
            }
            DivergenceCause::Nondeterminism | DivergenceCause::Unexplained => json!({"kind": self.label()}),
        }
    }
}

/// One field that differs: where, what was stored, what replay computed.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDifference {
    pub field: String,
    pub expected: Json,
    pub actual: Json,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Divergence {
    pub seq: u64,
    pub land_seq: u64,
    pub differences: Vec<FieldDifference>,
    pub cause: DivergenceCause,
    /// The open context the recomputed moment read (its inputs).
    pub context: Json,
}

/// One moment as replay rebuilt it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayedMoment {
    pub seq: u64,
    pub land_seq: u64,
    pub stored_time_ms: u64,
    /// The stored act.
    pub act: ActBody,
    /// The clause trace of the recomputed walk (which clause held, on which keys).
    pub clauses: Vec<String>,
    /// The context keys each clause read, beside `clauses` (their values are in `context`).
    pub clause_keys: Vec<Vec<String>>,
    /// The recomputed composed role (primary, stack, capabilities, prompt).
    pub composed: Json,
    /// The recomputed face, as the cognition saw it.
    pub face: Json,
    /// The open context the recomputed moment read (dotted keys).
    pub context: Json,
    /// The two messages an LLM act's request carried, rebuilt from the face
    /// (`{system, user, offered, omitted}`); null for other cognitions.
    pub llm_prompt: Json,
    /// Whether the recomputed body is byte-identical to the stored one.
    pub matches: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReplayReport {
    pub being: BeingId,
    pub name: String,
    /// Facts of the reel whose signatures, chain and digests were checked.
    pub facts_verified: u64,
    pub moments: Vec<ReplayedMoment>,
    pub divergences: Vec<Divergence>,
    /// Verification problems of the reel (tamper, corruption), each naming its fact.
    pub problems: Vec<String>,
    /// Replay stopped at the first divergence (without `keep_going`).
    pub stopped_early: bool,
}

impl ReplayReport {
    pub fn clean(&self) -> bool {
        self.problems.is_empty() && self.divergences.is_empty()
    }
}

/// A stored act of the reel, by the land seq it was sealed at. The fact is
/// owned, or borrowed from a decoding that verification reads as well.
struct StoredAct<'f> {
    seq: u64,
    land_seq: u64,
    fact: std::borrow::Cow<'f, Fact>,
    body: ActBody,
}

/// What recomputing a stored act reads of it: how its moment opened, and
/// what a person or a model answered. A land-wide replay decodes only these
/// fields of each act body ([`ActOpening`]); the rest is compared as bytes.
#[derive(Clone, Copy)]
struct MomentInputs<'a> {
    wake: &'a Wake,
    stored_time_ms: u64,
    call: &'a VerbCall,
    content: &'a Option<String>,
    llm: Option<&'a crate::llm::LlmRecord>,
    panel: Option<&'a crate::moment::panel::PanelRecord>,
    importance: Option<u8>,
    recall_query: Option<&'a crate::embedding::QueryVector>,
    tool: Option<&'a crate::tools::ToolRecord>,
}

impl<'a> MomentInputs<'a> {
    fn of(body: &'a ActBody, fact: &Fact) -> MomentInputs<'a> {
        MomentInputs {
            wake: &body.wake,
            stored_time_ms: fact.header.stored_time_ms,
            call: &body.call,
            content: &body.content,
            llm: body.llm.as_ref(),
            panel: body.panel.as_ref(),
            importance: body.importance,
            recall_query: body.recall_query.as_ref(),
            tool: body.tool.as_ref(),
        }
    }
}

/// Whether a recomputed act agrees with the stored body in every field the
/// moment decided before the seal-time rules ran.
fn agrees_before_seal(recomputed: &ActBody, stored: &ActBody) -> bool {
    recomputed.digests == stored.digests
        && recomputed.stack == stored.stack
        && recomputed.call == stored.call
        && recomputed.content == stored.content
        && recomputed.llm == stored.llm
}

struct Recomputed {
    outcome: Outcome,
    clauses: Vec<String>,
    clause_keys: Vec<Vec<String>>,
    composed: Json,
    face: Json,
    context: Json,
    llm_prompt: Json,
    /// A second recomputation at the same cursor disagreed with the first.
    unstable: bool,
}

/// Replays `being`'s reel against `substrate` (the definitions of this build).
pub fn replay_being(
    store: &dyn Store,
    substrate: &Substrate,
    being: BeingId,
    options: ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    Replayer::new(store, substrate, being, options)?.run()
}

/// What one step of a replay reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A stored act was rebuilt and compared: its index in the report's moments.
    Moment(usize),
    /// A fact of a watched kind was folded.
    Fact { land_seq: u64, being: BeingId, seq: u64, kind: String },
    /// Nothing more to replay.
    End,
}

/// Moments between two in-memory world snapshots while stepping.
pub const STEP_SNAPSHOT_EVERY_MOMENTS: usize = 16;

/// Where a replay stood: the world and the land seq of the next fact to fold.
struct Snapshot {
    moments: usize,
    divergences: usize,
    position: u64,
    world: World,
    whole: bool,
}

/// Land-log entries a replay reads at once.
pub const REPLAY_LAND_LOG_CHUNK_ENTRIES: u64 = 4096;
/// A replay takes its world from a snapshot only to skip at least this many
/// facts per being of its world: reading a snapshot costs about that much
/// folding (on the crowd land, a 4 MB snapshot of 10,000 beings read about
/// as fast as 15,000 facts folded; docs/performance.md).
pub const REPLAY_SNAPSHOT_SKIP_FACTS_PER_BEING: u64 = 2;
/// Threads reading a replay's facts ahead and decoding their bodies.
pub const REPLAY_READ_THREADS: usize = 2;

/// A chunk reads the facts it folds one by one, rather than the whole
/// chunk again, when fewer than one in this many of its facts are folded.
pub const REPLAY_FOLDED_ONE_IN_READ_ALONE: usize = 8;

/// The entries of the land log from `land_seq` to `to`, read whole,
/// checked, in one read, each with whether a replay may pass it over (an
/// act that changes only its actor's activity, when `passes_over`) and, if
/// `being`'s replay does not, its fact decoded for the fold: each of
/// [`REPLAY_READ_THREADS`] threads decodes a part. What
/// [`Replayer::read_whole_chunk`] reads, on its own thread or on a reading
/// thread ahead of the fold ([`ReadingAhead`]).
fn read_chunk_whole(
    store: &dyn Store,
    flows: &crate::world::GenesisFlows,
    being: BeingId,
    passes_over: bool,
    land_seq: u64,
    to: u64,
) -> Result<Vec<(bool, ReadAhead)>, StoreError> {
    let read = store.land_log_with_envelopes(land_seq, to)?;
    Ok(crate::parallel::map_in_order(&read, REPLAY_READ_THREADS, |(entry, envelope)| {
        let passable = passes_over && crate::world::reach::changes_only_its_actors_activity(envelope);
        let passed_over = passable && entry.being != being;
        let fact = (!passed_over).then(|| {
            crate::store::decode_entry_envelope(entry, envelope).map(|stored| Some(ready_to_fold(stored, flows)))
        });
        (passable, ReadAhead { entry: *entry, fact, passed_over })
    }))
}

/// A chunk read whole, or why it could not be.
type ChunkReadWhole = Result<Vec<(bool, ReadAhead)>, StoreError>;

/// A thread that reads the next chunk whole ([`read_chunk_whole`]) while
/// the fold folds this one: in a run of geneses (every fact folded), the
/// read, its checks and its decoding took as long as the fold, one after
/// the other. At most one chunk is asked for at a time; a chunk read
/// ahead that the replay does not want next (it took a world from a
/// snapshot, or planned the chunk instead) is dropped, and that chunk is
/// read as before. What is read is what the fold would read itself, so
/// nothing reported changes (the snapshot tests compare a replay reading
/// ahead with one stepping, in short chunks).
struct ReadingAhead {
    asks: std::sync::mpsc::Sender<(u64, u64)>,
    answers: std::sync::mpsc::Receiver<ChunkReadWhole>,
    /// The chunk asked for and not yet taken.
    asked: Option<(u64, u64)>,
}

impl ReadingAhead {
    /// Asks for the chunk from `land_seq` to `to` (unless one is asked for).
    fn ask(&mut self, land_seq: u64, to: u64) {
        if self.asked.is_none() && self.asks.send((land_seq, to)).is_ok() {
            self.asked = Some((land_seq, to));
        }
    }

    /// The chunk from `land_seq` to `to`, if that is the one asked for
    /// (waiting for its read to end); a chunk asked for but not wanted is
    /// dropped.
    fn take(&mut self, land_seq: u64, to: u64) -> Option<ChunkReadWhole> {
        let asked = self.asked.take()?;
        // The reading thread answers every ask in order unless it panicked,
        // which the scope it runs in reports.
        let read = self.answers.recv().ok()?;
        (asked == (land_seq, to)).then_some(read)
    }
}

/// A fact read in full, with its body decoded for the fold.
fn ready_to_fold(stored: crate::store::StoredFact, flows: &crate::world::GenesisFlows) -> (Fact, FoldBody) {
    let body = FoldBody::read_keeping_flows(&stored.fact.header, stored.fact.body(), flows);
    (stored.fact, body)
}

/// A land-log entry read ahead, and its fact (`None` once folded).
struct ReadAhead {
    entry: crate::store::LandEntry,
    fact: Option<Result<Option<(Fact, FoldBody)>, StoreError>>,
    /// An act of another being that changes nothing but its actor's
    /// activity, which no moment of the replayed being reads: not read in
    /// full, and passed over by the fold.
    passed_over: bool,
}

/// A replay that advances one moment at a time and can go back (a world
/// snapshot every [`STEP_SNAPSHOT_EVERY_MOMENTS`] plus a deterministic
/// re-run): the engine of `seed replay` and of its stepping mode.
pub struct Replayer<'a> {
    store: &'a dyn Store,
    definitions: ReplayDefinitions<'a>,
    being: BeingId,
    keep_going: bool,
    /// Land-log entries read ahead, from `chunk_start` on, each with its
    /// fact read and its body decoded for the fold (taken once folded).
    chunk: Vec<ReadAhead>,
    chunk_start: u64,
    /// The buffers the chunks are first read into, as stored, one a
    /// reading thread (kept from chunk to chunk).
    read_as_stored: Vec<crate::store::LandLogRead>,
    /// The roleFlows of the geneses read ahead, converted once (shared
    /// with the thread reading ahead).
    flows: std::sync::Arc<crate::world::GenesisFlows>,
    /// The thread reading the next chunk whole while this one is folded,
    /// during [`Replayer::run_in_place`].
    reading_ahead: Option<ReadingAhead>,
    /// The land seq of the next fact to fold.
    position: u64,
    /// One past the land seq of the last act in range: where the fold stops.
    end: u64,
    /// Worlds to start from instead of folding (vouched snapshots).
    worlds: Option<&'a dyn WorldSnapshots>,
    /// Worlds kept in memory to start from, and to leave whole worlds in.
    kept: Option<&'a KeptWorlds>,
    /// The cursors at which this replay left a world in `kept`.
    worlds_left_kept: Vec<u64>,
    /// How many times this replay took its world from `kept`.
    kept_worlds_taken: u64,
    /// The place (next opening or comparison) for which `kept` was last
    /// asked: it is asked again only for the next place, not at every fact
    /// (a world kept meanwhile by another replay is only a missed shortcut).
    kept_asked_for: Option<u64>,
    world: World,
    /// Whether `world` is the whole fold of the facts before its cursor:
    /// nothing passed over, no fact left out as unreadable, no snapshot
    /// read with one being's memory (only such a world is left in `kept`).
    whole: bool,
    /// Land seqs of the stored acts in range, by the cursor each opened at.
    by_cursor: BTreeMap<u64, Vec<u64>>,
    /// The stored acts in range, by land seq.
    acts: BTreeMap<u64, StoredAct<'static>>,
    /// The land seqs of every fact of this being's reel (never passed over).
    own_land_seqs: BTreeSet<u64>,
    /// Acts recomputed at their cursor, waiting for their own land seq.
    recomputed: BTreeMap<u64, Recomputed>,
    snapshots: Vec<Snapshot>,
    /// Whether worlds are kept to step back to ([`Replayer::back_to`]).
    steps_back: bool,
    /// Whether other beings' acts that change only their own activity are
    /// passed over (`false`: every fact is folded, as a land-wide replay does).
    passes_over: bool,
    /// How many facts were passed over so far.
    passed_over: u64,
    /// Whether the last chunk read folded most of its facts: the next is
    /// then read whole at once, and its passed-over facts told from that
    /// read, rather than read first as stored to plan (runs of geneses, or
    /// of facts that reach other beings, come in long stretches).
    folds_most: bool,
    /// How many chunks were read whole at once, with no read to plan them.
    chunks_read_whole: u64,
    /// How many chunks the thread reading ahead read.
    chunks_read_ahead: u64,
    /// Land-log entries read at once ([`REPLAY_LAND_LOG_CHUNK_ENTRIES`]).
    chunk_entries: u64,
    report: ReplayReport,
    finished: bool,
}

impl<'a> Replayer<'a> {
    /// Verifies the reel and collects its stored acts; nothing is replayed
    /// yet. Every moment runs with `substrate` (today's files).
    pub fn new(
        store: &'a dyn Store,
        substrate: &'a Substrate,
        being: BeingId,
        options: ReplayOptions,
    ) -> Result<Replayer<'a>, ReplayError> {
        Replayer::with_definitions(store, ReplayDefinitions::files(store, substrate, None), being, options)
    }

    /// [`Replayer::new`], each moment run with the definitions `definitions`
    /// gives for its cursor (the land's recorded ones, or files).
    pub fn with_definitions(
        store: &'a dyn Store,
        definitions: ReplayDefinitions<'a>,
        being: BeingId,
        options: ReplayOptions,
    ) -> Result<Replayer<'a>, ReplayError> {
        match store.head(&being) {
            Ok(Some(_)) => {}
            Ok(None) => return Err(ReplayError::NoReel { being }),
            // The head is read from the last record: if that one is unreadable,
            // verification below names it.
            Err(StoreError::Corrupt { .. }) => {}
            Err(other) => return Err(other.into()),
        }
        let mode = SignatureMode::Batch { batch_facts: REPLAY_SIGNATURE_BATCH_FACTS };
        // Replay reads a store, not a land: the limits are the defaults
        // every land runs with. Act bodies are the replay's own to read: it
        // names one that is not an act, and a recomputation that does not
        // give a stored act's bytes is a divergence.
        let schemas = CoreSchemas::leaving_acts_to_replay();
        let verified = verify_being(store, &being, mode, schemas.rules(&Limits::default()))?;
        let problems: Vec<String> = verified.problems.iter().map(ToString::to_string).collect();
        let report = ReplayReport {
            being,
            name: verified.name.clone().unwrap_or_default(),
            facts_verified: verified.facts,
            moments: Vec::new(),
            divergences: Vec::new(),
            problems,
            stopped_early: false,
        };
        let mut replayer = Replayer {
            store,
            definitions,
            being,
            keep_going: options.keep_going,
            chunk: Vec::new(),
            chunk_start: 0,
            read_as_stored: Vec::new(),
            flows: std::sync::Arc::default(),
            reading_ahead: None,
            position: 0,
            end: 0,
            worlds: None,
            kept: None,
            worlds_left_kept: Vec::new(),
            kept_worlds_taken: 0,
            kept_asked_for: None,
            world: World::new(),
            whole: true,
            by_cursor: BTreeMap::new(),
            acts: BTreeMap::new(),
            own_land_seqs: BTreeSet::new(),
            recomputed: BTreeMap::new(),
            snapshots: Vec::new(),
            steps_back: true,
            passes_over: true,
            passed_over: 0,
            folds_most: false,
            chunks_read_whole: 0,
            chunks_read_ahead: 0,
            chunk_entries: REPLAY_LAND_LOG_CHUNK_ENTRIES,
            report,
            finished: false,
        };
        if !replayer.report.problems.is_empty() && !options.keep_going {
            replayer.report.stopped_early = true;
            replayer.finished = true;
            return Ok(replayer);
        }
        // The stored acts in the asked range, by the cursor they opened at. Raw
        // records are read so that one unreadable fact (already reported by
        // verification) does not hide the others.
        // A being that moved here (`seed move`) ran its acts before its last
        // `moved-in` against another land's world: they are its history,
        // not moments of this land's to run again (each fact is decoded
        // once; the acts before a `moved-in` are dropped when it is met).
        for record in store.raw_records(Some(&being))? {
            replayer.own_land_seqs.extend(record.land_seq);
            if record.seq > options.to_seq {
                continue;
            }
            let (Some(land_seq), Ok(fact)) = (record.land_seq, Fact::decode_envelope(&record.envelope)) else {
                continue;
            };
            if fact.kind() == crate::fact::body::KIND_MOVED_IN {
                replayer.acts.clear();
                replayer.by_cursor.clear();
                continue;
            }
            if fact.kind() != KIND_ACT || record.seq < options.from_seq {
                continue;
            }
            let body = match fact.body_as::<ActBody>() {
                Ok(body) => body,
                // Signed and canonical, yet not an act: the stored input is
                // wrong, as a land-wide replay reports it too.
                Err(error) => {
                    let problem = format!("seq {}: the stored act body does not read as an act: {error}", record.seq);
                    replayer.report.problems.push(problem);
                    continue;
                }
            };
            replayer.by_cursor.entry(body.cursor).or_default().push(land_seq);
            replayer
                .acts
                .insert(land_seq, StoredAct { seq: record.seq, land_seq, fact: std::borrow::Cow::Owned(fact), body });
        }
        if !replayer.report.problems.is_empty() && !options.keep_going {
            replayer.report.stopped_early = true;
            replayer.finished = true;
            return Ok(replayer);
        }
        match replayer.acts.keys().next_back() {
            Some(&last_land_seq) => replayer.end = last_land_seq + 1,
            None => replayer.finished = true,
        }
        replayer.take_snapshot();
        Ok(replayer)
    }

    /// Starts from `worlds`' snapshots where they let the fold skip ahead:
    /// before the first moment, and between two moments farther apart than
    /// two snapshots. What the replay reports does not change.
    pub fn with_snapshots(mut self, worlds: &'a dyn WorldSnapshots) -> Replayer<'a> {
        self.worlds = Some(worlds);
        self
    }

    /// Starts from the worlds `kept` holds, as from snapshots (a kept world
    /// is copied, not read, so any skip is worth it), and leaves a copy of
    /// its world there where it stands whole at a moment's opening. What the
    /// replay reports does not change.
    pub fn with_kept_worlds(mut self, kept: &'a KeptWorlds) -> Replayer<'a> {
        self.kept = Some(kept);
        self
    }

    /// The cursors at which this replay left its world in its kept worlds
    /// ([`Replayer::with_kept_worlds`]), in order.
    pub fn worlds_left_kept(&self) -> &[u64] {
        &self.worlds_left_kept
    }

    /// How many times this replay took its world from its kept worlds.
    pub fn kept_worlds_taken(&self) -> u64 {
        self.kept_worlds_taken
    }

    /// The land-log entry at `land_seq` (below `end`), read a chunk at a
    /// time. The chunk is first read as stored, unverified, to find the acts
    /// of other beings that change only their actor's activity: those are
    /// passed over. The facts the fold needs are then read in full (checked
    /// and decoded): the whole chunk again ([`Replayer::read_whole_chunk`]),
    /// or where few are needed, each alone. After a chunk that folded most
    /// of its facts, the next is read whole at once with no first read: in
    /// a long run of geneses, that read would be a second read of every
    /// fact. A replay folding every fact reads each chunk whole once.
    fn entry_at(&mut self, land_seq: u64) -> Result<crate::store::LandEntry, ReplayError> {
        let in_chunk = land_seq.checked_sub(self.chunk_start).and_then(|offset| self.chunk.get(offset as usize));
        if let Some(ahead) = in_chunk.filter(|ahead| ahead.fact.is_some() || ahead.passed_over) {
            return Ok(ahead.entry);
        }
        let to = self.end.min(land_seq + self.chunk_entries);
        if !self.passes_over {
            return self.read_whole_chunk(land_seq, to);
        }
        if self.folds_most {
            self.chunks_read_whole += 1;
            return self.read_whole_chunk(land_seq, to);
        }
        let plan = self.plan_chunk(land_seq, to)?;
        let folded = plan.iter().filter(|(_, passed_over)| !passed_over).count();
        if folded * REPLAY_FOLDED_ONE_IN_READ_ALONE >= plan.len() {
            return self.read_whole_chunk(land_seq, to);
        }
        // The chunk's vector is kept from chunk to chunk: a fresh one of
        // this size would be new pages each time.
        let mut chunk = std::mem::take(&mut self.chunk);
        chunk.clear();
        let flows = &self.flows;
        for (entry, passed_over) in &plan {
            let fact = (!passed_over)
                .then(|| self.store.fact_at(entry).map(|stored| stored.map(|stored| ready_to_fold(stored, flows))));
            chunk.push(ReadAhead { entry: *entry, fact, passed_over: *passed_over });
        }
        self.folds_most = false;
        self.hold_chunk(chunk, land_seq)
    }

    /// Keeps `chunk`, read from `land_seq` on, and gives its first entry.
    fn hold_chunk(&mut self, chunk: Vec<ReadAhead>, land_seq: u64) -> Result<crate::store::LandEntry, ReplayError> {
        self.chunk = chunk;
        self.chunk_start = land_seq;
        match self.chunk.first() {
            Some(ahead) if ahead.entry.land_seq == land_seq => Ok(ahead.entry),
            _ => Err(ReplayError::DanglingLandEntry { land_seq }),
        }
    }

    /// Reads the entries from `land_seq` to `to` whole, checked, in one
    /// read, and tells the facts passed over from those bytes (as
    /// [`Replayer::plan_chunk`] does from the bytes as stored, and teaches
    /// them to the kept worlds' keeper likewise; none when every fact is
    /// folded): [`read_chunk_whole`]. Whether the next chunk is read so
    /// too, with no first read, depends on how many this one folds; when it
    /// is, and a reading thread stands by ([`Replayer::run_in_place`]), it
    /// is asked for now, to be read while this one is folded.
    fn read_whole_chunk(&mut self, land_seq: u64, to: u64) -> Result<crate::store::LandEntry, ReplayError> {
        let read_ahead = self.reading_ahead.as_mut().and_then(|reading| reading.take(land_seq, to));
        self.chunks_read_ahead += u64::from(read_ahead.is_some());
        let read = match read_ahead {
            Some(read) => read?,
            None => read_chunk_whole(self.store, &self.flows, self.being, self.passes_over, land_seq, to)?,
        };
        if let Some(kept) = self.kept.filter(|_| self.passes_over) {
            kept.learn_passable(read.iter().map(|(passable, ahead)| (ahead.entry.land_seq, *passable)));
        }
        let mut chunk = std::mem::take(&mut self.chunk);
        chunk.clear();
        chunk.extend(read.into_iter().map(|(_, ahead)| ahead));
        let folded = chunk.iter().filter(|ahead| !ahead.passed_over).count();
        self.folds_most = folded * REPLAY_FOLDED_ONE_IN_READ_ALONE >= chunk.len();
        let next_read_whole = self.folds_most || !self.passes_over;
        if let Some(reading) = self.reading_ahead.as_mut().filter(|_| next_read_whole && to < self.end) {
            reading.ask(to, self.end.min(to + self.chunk_entries));
        }
        self.hold_chunk(chunk, land_seq)
    }

    /// The entries from `land_seq` to `to`, each with whether it is passed
    /// over: each thread reads a part as stored, unverified, and tells the
    /// acts of other beings that change only their actor's activity. What
    /// the kept worlds' keeper learnt from earlier replays is not read
    /// again, and what this one reads is taught to it.
    fn plan_chunk(&mut self, land_seq: u64, to: u64) -> Result<Vec<(crate::store::LandEntry, bool)>, ReplayError> {
        let being = self.being;
        let passed_over =
            |(entry, passable): (crate::store::LandEntry, bool)| (entry, passable && entry.being != being);
        // What earlier replays of this land learnt needs no read at all.
        if let Some(passable) = self.kept.and_then(|kept| kept.passable(land_seq, to)) {
            let entries = self.store.land_log(land_seq, to)?;
            if entries.len() == passable.len() {
                return Ok(entries.into_iter().zip(passable).map(passed_over).collect());
            }
        }
        let mut read_as_stored = std::mem::take(&mut self.read_as_stored);
        read_as_stored.resize_with(REPLAY_READ_THREADS, Default::default);
        let store = self.store;
        let part_facts = (to - land_seq).div_ceil(REPLAY_READ_THREADS as u64).max(1);
        let parts = std::thread::scope(|scope| {
            let threads: Vec<_> = read_as_stored
                .iter_mut()
                .enumerate()
                .map(|(part, read)| {
                    let from = (land_seq + part as u64 * part_facts).min(to);
                    let until = (from + part_facts).min(to);
                    scope.spawn(move || -> Result<Vec<(crate::store::LandEntry, bool)>, StoreError> {
                        store.land_log_with_envelopes_unverified(from, until, read)?;
                        Ok(read
                            .iter()
                            .map(|(entry, envelope)| {
                                (*entry, crate::world::reach::changes_only_its_actors_activity(envelope))
                            })
                            .collect())
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|thread| thread.join().expect("a reading thread does not panic"))
                .collect::<Vec<_>>()
        });
        self.read_as_stored = read_as_stored;
        let mut plan = Vec::with_capacity((to - land_seq) as usize);
        for part in parts {
            plan.extend(part?);
        }
        if let Some(kept) = self.kept {
            kept.learn_passable(plan.iter().map(|(entry, passable)| (entry.land_seq, *passable)));
        }
        Ok(plan.into_iter().map(passed_over).collect())
    }

    /// Whether the fact at `land_seq` (read ahead by [`Replayer::entry_at`],
    /// called just before) is passed over rather than folded.
    fn is_passed_over(&self, land_seq: u64) -> bool {
        let offset = land_seq.checked_sub(self.chunk_start).map(|offset| offset as usize);
        offset.and_then(|offset| self.chunk.get(offset)).is_some_and(|ahead| ahead.passed_over)
    }

    /// The fact at `land_seq` read ahead by [`Replayer::entry_at`] (called
    /// just before), with its body decoded for the fold.
    fn take_fact(&mut self, land_seq: u64) -> Result<Option<(Fact, FoldBody)>, StoreError> {
        let offset = land_seq.checked_sub(self.chunk_start).map(|offset| offset as usize);
        let taken = offset.and_then(|offset| self.chunk.get_mut(offset)).and_then(|ahead| ahead.fact.take());
        taken.expect("entry_at read this fact ahead")
    }

    /// Takes the world from the latest kept world or snapshot at or before
    /// the next place something happens (a stored act opens or is
    /// compared), if that skips facts: nothing in between is compared, so
    /// nothing reported changes.
    fn skip_ahead(&mut self, watched_kinds: &BTreeSet<String>) {
        if (self.worlds.is_none() && self.kept.is_none()) || !self.recomputed.is_empty() {
            return;
        }
        let Some(next) = self.next_place() else { return };
        let next = next.min(self.end);
        let (position, folded_to) = (self.position, self.world.cursor);
        let ahead = |cursor: &u64| *cursor > position && *cursor > folded_to;
        let ask_kept = self.kept.filter(|_| self.kept_asked_for != Some(next));
        self.kept_asked_for = Some(next);
        let kept = ask_kept.and_then(|kept| kept.latest_at_or_before(next)).filter(|(cursor, _)| ahead(cursor));
        // Reading a snapshot costs about as much as folding a couple of facts
        // per being of the world: a short skip is cheaper folded. Passing
        // over other beings' acts, a replay folds only the facts the kept
        // worlds' keeper has not learnt it may pass over: on the million
        // crowd, a moment's page read a 573 MB snapshot (3–5 s) where the
        // world kept a round earlier was a million passable acts away.
        let keeper = self.kept.filter(|_| self.passes_over && !watched_kinds.contains(KIND_ACT));
        let to_fold = |from: u64, to: u64| keeper.map_or(to.saturating_sub(from), |kept| kept.facts_to_fold(from, to));
        let worth_reading =
            |worlds: &dyn WorldSnapshots, beings: usize| worlds.skip_facts_per_being().saturating_mul(beings as u64);
        let beings = self.world.beings.len();
        let on_shelf = self.worlds.and_then(|worlds| {
            let cursor = worlds.at_or_before(next).filter(ahead)?;
            (to_fold(position, cursor) >= worth_reading(worlds, beings)).then_some((worlds, cursor))
        });
        let nearer_than_shelf = |(at, world): &(u64, std::sync::Arc<World>)| {
            on_shelf.is_none_or(|(worlds, on_shelf)| {
                on_shelf <= *at || to_fold(*at, on_shelf) < worth_reading(worlds, world.beings.len())
            })
        };
        match (kept, on_shelf) {
            // A kept world is copied rather than read: it is taken unless a
            // snapshot stands farther on and folding from the kept world
            // to it costs more than reading it.
            (Some(kept), _) if nearer_than_shelf(&kept) => {
                let (cursor, world) = kept;
                self.world = World::clone(&world);
                self.position = cursor;
                self.whole = true;
                self.kept_worlds_taken += 1;
            }
            (_, Some((worlds, cursor))) => {
                // Passing over other beings' activity, the replay keeps no
                // memory but its being's (the others' are left half folded
                // anyway); folding every fact, it keeps the world whole.
                let world = match self.passes_over {
                    true => worlds.world_for_replay_of(cursor, self.being),
                    false => worlds.world(cursor),
                };
                if let Some(world) = world {
                    self.world = world;
                    self.position = cursor;
                    // Whole enough for this replay, but not held to the
                    // fold here: not a world to leave for others.
                    self.whole = false;
                }
            }
            _ => {}
        }
    }

    /// The next place something happens here: the cursor where a stored act
    /// opens or the land seq where one is compared, whichever comes first.
    fn next_place(&self) -> Option<u64> {
        let next_opening = self.by_cursor.range(self.world.cursor..).next().map(|(cursor, _)| *cursor);
        let next_comparison = self.acts.range(self.position..).next().map(|(land_seq, _)| *land_seq);
        next_opening.into_iter().chain(next_comparison).min()
    }

    /// Passes over, unread, the run of facts from `position` that the kept
    /// worlds' keeper learnt change nothing but their actor's activity, up
    /// to the next place something happens here (a moment opens, a stored
    /// act is compared, a fact of this being's comes). Not when such facts
    /// are watched: each is then a step of its own. Whether it moved.
    fn pass_over_learnt_run(&mut self, watched_kinds: &BTreeSet<String>) -> bool {
        let Some(kept) = self.kept.filter(|_| self.passes_over && !watched_kinds.contains(KIND_ACT)) else {
            return false;
        };
        let next_own = self.own_land_seqs.range(self.position..).next().copied();
        let limit = [self.next_place(), next_own].into_iter().flatten().fold(self.end, u64::min);
        let until = kept.passable_run_end(self.position, limit);
        if until <= self.position {
            return false;
        }
        self.passed_over += until - self.position;
        self.world.move_past(until - 1);
        self.position = until;
        self.whole = false;
        true
    }

    /// Leaves a copy of the world in the kept worlds if it is whole.
    fn leave_world_kept(&mut self) {
        let Some(kept) = self.kept.filter(|_| self.whole) else { return };
        if self.worlds_left_kept.last() == Some(&self.world.cursor) {
            return;
        }
        kept.keep(&self.world);
        self.worlds_left_kept.push(self.world.cursor);
    }

    /// Folds every fact, passing over none: what the replay reports does
    /// not change (the tests compare), only its time and what
    /// [`Replayer::world`] shows of other beings' activity.
    pub fn folding_every_fact(mut self) -> Replayer<'a> {
        self.passes_over = false;
        self
    }

    /// How many facts the replay passed over so far (other beings' acts
    /// that change only their own activity, which no moment of this being reads).
    pub fn facts_passed_over(&self) -> u64 {
        self.passed_over
    }

    /// Reads the land log `entries` at a time instead of
    /// [`REPLAY_LAND_LOG_CHUNK_ENTRIES`] (at least one): what the replay
    /// reports does not change, only how often it reads (the tests use
    /// short chunks, so that small worlds span many).
    pub fn reading_chunks_of(mut self, entries: u64) -> Replayer<'a> {
        self.chunk_entries = entries.max(1);
        self
    }

    /// How many chunks of [`REPLAY_LAND_LOG_CHUNK_ENTRIES`] the replay read
    /// whole at once, after a chunk that folded most of its facts, rather
    /// than reading each first to plan it.
    pub fn chunks_read_whole(&self) -> u64 {
        self.chunks_read_whole
    }

    /// How many chunks were read whole by the thread reading ahead of the
    /// fold ([`Replayer::run_in_place`]) while the chunk before was folded.
    pub fn chunks_read_ahead(&self) -> u64 {
        self.chunks_read_ahead
    }

    /// Replays every moment in range and returns the report.
    pub fn run(mut self) -> Result<ReplayReport, ReplayError> {
        self.run_in_place()?;
        Ok(self.report)
    }

    /// Replays every moment in range, keeping the replayer (and its world):
    /// the report is [`Replayer::report`]. For a caller that exits next and
    /// leaves the world's memory to the operating system rather than
    /// freeing it block by block (`seed replay`).
    ///
    /// Chunks read whole (runs of geneses) are read on a thread of their
    /// own while the one before is folded ([`ReadingAhead`]).
    pub fn run_in_place(&mut self) -> Result<(), ReplayError> {
        // Nothing steps back in a run: no world is kept to go back to.
        self.steps_back = false;
        let (store, flows, being, passes_over) = (self.store, self.flows.clone(), self.being, self.passes_over);
        std::thread::scope(|scope| {
            let (asks, asked) = std::sync::mpsc::channel::<(u64, u64)>();
            let (answer, answers) = std::sync::mpsc::channel();
            scope.spawn(move || {
                for (land_seq, to) in asked {
                    let read = read_chunk_whole(store, &flows, being, passes_over, land_seq, to);
                    if answer.send(read).is_err() {
                        return;
                    }
                }
            });
            self.reading_ahead = Some(ReadingAhead { asks, answers, asked: None });
            let ran = (|| {
                while self.next_moment()?.is_some() {}
                Ok(())
            })();
            // Its asks gone, the reading thread ends (after the read in
            // hand, if any), and the scope waits for it.
            self.reading_ahead = None;
            ran
        })
    }

    /// The report so far.
    pub fn report(&self) -> &ReplayReport {
        &self.report
    }

    pub fn into_report(self) -> ReplayReport {
        self.report
    }

    /// The stored acts the replay will rebuild (in range), in land order.
    pub fn moments_in_range(&self) -> usize {
        self.acts.len()
    }

    /// The world as the fold left it (before the next fact). Other beings'
    /// activity (acts, last act, previous role, recent summons) lags where
    /// their acts were passed over ([`Replayer::folding_every_fact`] keeps it).
    pub fn world(&self) -> &World {
        &self.world
    }

    /// Folds on until the next stored act is compared; returns its index in
    /// `report().moments`, or `None` at the end (or after a divergence when
    /// not keeping going).
    pub fn next_moment(&mut self) -> Result<Option<usize>, ReplayError> {
        loop {
            match self.step(&BTreeSet::new())? {
                Step::Moment(index) => return Ok(Some(index)),
                Step::Fact { .. } => continue,
                Step::End => return Ok(None),
            }
        }
    }

    /// Folds on until the next stored act is compared, or until a fact of
    /// one of `watched_kinds` (any being's) has been folded.
    pub fn step(&mut self, watched_kinds: &BTreeSet<String>) -> Result<Step, ReplayError> {
        while !self.finished && self.position < self.end {
            self.skip_ahead(watched_kinds);
            if self.pass_over_learnt_run(watched_kinds) {
                continue;
            }
            let entry = self.entry_at(self.position)?;
            if self.by_cursor.contains_key(&self.world.cursor) {
                self.leave_world_kept();
            }
            if let Some(land_seqs) = self.by_cursor.get(&self.world.cursor) {
                for land_seq in land_seqs {
                    if let Some(act) = self.acts.get(land_seq) {
                        if !self.recomputed.contains_key(land_seq) {
                            let inputs = MomentInputs::of(&act.body, &act.fact);
                            let agrees = |recomputed: &moment::Act| agrees_before_seal(&recomputed.body, &act.body);
                            let substrate = self.definitions.at(&self.world)?;
                            let recomputed =
                                recompute(&substrate, &self.world, self.being, inputs, &agrees, Detail::Full);
                            self.recomputed.insert(*land_seq, recomputed);
                        }
                    }
                }
            }
            if self.is_passed_over(entry.land_seq) {
                // Another being's act that changes only its own activity:
                // no moment of this being reads it, and it is no stored act
                // of this being's to compare.
                self.world.move_past(entry.land_seq);
                self.position += 1;
                self.passed_over += 1;
                self.whole = false;
                if watched_kinds.contains(KIND_ACT) {
                    let kind = KIND_ACT.to_string();
                    return Ok(Step::Fact { land_seq: entry.land_seq, being: entry.being, seq: entry.seq, kind });
                }
                continue;
            }
            let fact = match self.take_fact(entry.land_seq) {
                Ok(Some(read)) => Some(read),
                Ok(None) => return Err(ReplayError::DanglingLandEntry { land_seq: entry.land_seq }),
                // An unreadable fact (verification names it) cannot be folded;
                // with --keep-going the replay goes on without it.
                Err(StoreError::Corrupt { .. }) => {
                    self.whole = false;
                    None
                }
                Err(other) => return Err(other.into()),
            };
            let mut compared = None;
            if let Some(act) = self.acts.get(&entry.land_seq) {
                let recomputed = self.recomputed.remove(&entry.land_seq);
                let substrate = self.definitions.at(&self.world)?;
                let (world, report) = (&self.world, &mut self.report);
                let stop = compare(&substrate, &self.definitions, world, act, recomputed, report, self.keep_going);
                compared = Some(self.report.moments.len() - 1);
                if stop {
                    self.report.stopped_early = true;
                    self.finished = true;
                    return Ok(Step::Moment(self.report.moments.len() - 1));
                }
            }
            let watched = fact
                .as_ref()
                .filter(|(fact, _)| watched_kinds.contains(fact.kind()))
                .map(|(fact, _)| fact.kind().to_string());
            if let Some((fact, body)) = fact {
                self.world.apply_folded(entry.land_seq, &fact.header, fact.id(), body);
            }
            self.position += 1;
            if let Some(index) = compared {
                if (index + 1) % STEP_SNAPSHOT_EVERY_MOMENTS == 0 && self.recomputed.is_empty() {
                    self.take_snapshot();
                }
                return Ok(Step::Moment(index));
            }
            if let Some(kind) = watched {
                return Ok(Step::Fact { land_seq: entry.land_seq, being: entry.being, seq: entry.seq, kind });
            }
        }
        self.finished = true;
        Ok(Step::End)
    }

    fn take_snapshot(&mut self) {
        if !self.steps_back {
            return;
        }
        self.snapshots.push(Snapshot {
            moments: self.report.moments.len(),
            divergences: self.report.divergences.len(),
            position: self.position,
            world: self.world.clone(),
            whole: self.whole,
        });
    }

    /// Goes back so that `index` is the last moment replayed: restores the
    /// nearest snapshot before it and re-runs from there. Returns whether the
    /// re-run rebuilt the same moments as the first run (it must: a `false`
    /// is nondeterminism in this build).
    pub fn back_to(&mut self, index: usize) -> Result<bool, ReplayError> {
        if index + 1 >= self.report.moments.len() {
            return Ok(true);
        }
        let first_run = self.report.moments.clone();
        let Some(snapshot) = self.snapshots.iter().rev().find(|snapshot| snapshot.moments <= index + 1) else {
            return Ok(true);
        };
        self.position = snapshot.position;
        self.world = snapshot.world.clone();
        self.whole = snapshot.whole;
        self.kept_asked_for = None;
        self.report.moments.truncate(snapshot.moments);
        self.report.divergences.truncate(snapshot.divergences);
        self.report.stopped_early = false;
        self.recomputed.clear();
        self.finished = false;
        let restored = snapshot.moments;
        self.snapshots.retain(|snapshot| snapshot.moments <= restored);
        while self.report.moments.len() < index + 1 {
            if self.next_moment()?.is_none() {
                break;
            }
        }
        Ok(self.report.moments[..] == first_run[..self.report.moments.len()])
    }
}

/// Replay's model for one stored act: its recorded answers, and its recall
/// query's recorded vector (or the recorded reason it had none).
struct RecordedMoment<'a> {
    answers: &'a dyn crate::llm::LanguageModel,
    query: Option<&'a crate::embedding::QueryVector>,
    /// The MCP tool's answer the act recorded: no server is started or called.
    tool: Option<&'a crate::tools::ToolRecord>,
}

impl crate::llm::LanguageModel for RecordedMoment<'_> {
    fn answer(&self, question: &crate::llm::Question<'_>) -> Result<crate::llm::Answer, crate::llm::NoAnswer> {
        self.answers.answer(question)
    }

    fn embed(&self, _: &crate::llm::EmbedQuestion<'_>) -> Result<crate::llm::Embedded, crate::llm::NoAnswer> {
        match self.query {
            Some(query) => match &query.failure {
                None => Ok(crate::llm::Embedded {
                    connection: query.connection.clone(),
                    model: query.model.clone(),
                    vector: crate::embedding::from_bytes(&query.vector),
                }),
                Some(reason) => Err(crate::llm::NoAnswer { reason: reason.clone(), attempts: 0 }),
            },
            None => Err(crate::llm::NoAnswer { reason: "the act records no recall query vector".into(), attempts: 0 }),
        }
    }

    fn call_tool(
        &self,
        question: &crate::tools::ToolQuestion<'_>,
    ) -> Result<crate::tools::ToolAnswer, crate::llm::NoAnswer> {
        match self.tool {
            Some(record) if record.server == question.server && record.tool == question.tool => Ok(record.answer()),
            Some(record) => Err(crate::llm::NoAnswer {
                reason: format!("the act records a call of {} on {:?}, not this one", record.tool, record.server),
                attempts: 0,
            }),
            None => Err(crate::llm::NoAnswer { reason: "the act records no tool call".into(), attempts: 0 }),
        }
    }
}

/// How much of a recomputed moment to keep besides its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detail {
    /// Clause trace, composed role with its prompt, face and open context (to show them).
    Full,
    /// The outcome only (a land-wide replay counts and compares).
    OutcomeOnly,
}

/// Recomputes one stored act's moment at `world`. `agrees` says whether the
/// recomputed act matches the stored one before the seal-time rules; only
/// one that does not pays for a second run (the nondeterminism check).
fn recompute(
    substrate: &Substrate,
    world: &World,
    being: BeingId,
    stored: MomentInputs<'_>,
    agrees: &dyn Fn(&moment::Act) -> bool,
    detail: Detail,
) -> Recomputed {
    let (wake, stored_time_ms) = (stored.wake.clone(), stored.stored_time_ms);
    let opened = moment::open(world, being, wake.clone(), stored_time_ms);
    // An LLM act is replayed against its recorded answer: the model is never
    // called again, and the rebuilt request's digest is compared with the record.
    // A panel's members are each answered from their own record.
    let recorded = stored.llm.map(crate::llm::Recorded);
    let recorded_panel = stored.panel.map(crate::moment::panel::RecordedPanel);
    let answers: &dyn crate::llm::LanguageModel = match (&recorded, &recorded_panel) {
        (Some(recorded), _) => recorded,
        (None, Some(panel)) => panel,
        (None, None) => &crate::llm::NoModel,
    };
    // The recall query's vector is given back from the act as well.
    let recorded_moment = RecordedMoment { answers, query: stored.recall_query, tool: stored.tool };
    let model: &dyn crate::llm::LanguageModel = &recorded_moment;
    let (mut clauses, mut clause_keys) = (Vec::new(), Vec::new());
    let (mut composed, mut face, mut context, mut llm_prompt) = (Json::Null, Json::Null, Json::Null, Json::Null);
    let result = (|| {
        let assigned = moment::assign(substrate, world, &opened)?;
        if detail == Detail::Full {
            context = context_json(&assigned.context);
            clauses = assigned.flow.explain(&assigned.walk);
            clause_keys = assigned.flow.clause_keys(&assigned.walk);
            composed = json!({
                "primary": assigned.composed.primary.as_deref(),
                "stack": assigned.composed.stack.iter().map(|name| name.as_ref()).collect::<Vec<_>>(),
                "prompt": assigned.composed.render_prompt(&assigned.context),
            });
        }
        let folded = moment::build_face(substrate, world, &opened, &assigned, model)?;
        // A request applied or closed is the substrate's moment, recomputed
        // from the world alone.
        if matches!(opened.wake, Wake::Approval { .. }) {
            let resolved = moment::approval::resolve(substrate, world, &opened, &assigned, &folded)
                .and_then(|act| moment::with_tool_answer(substrate, world, model, act));
            if detail == Detail::Full {
                face = folded.value();
            }
            return resolved;
        }
        // A person's act is replayed with the person's recorded choice; the
        // verb layer checks it again like any other.
        let person = world
            .beings
            .get(&being)
            .is_some_and(|row| row.effective_cognition() == crate::fact::body::Cognition::Human);
        let decision = if person {
            // The stored importance is the person's word (or the role's, which gives the same).
            let choice = moment::PersonChoice {
                call: stored.call.clone(),
                content: stored.content.clone(),
                importance: stored.importance,
            };
            moment::person_momentum(world, &opened, &choice)?
        } else {
            moment::momentum(substrate, world, &opened, &assigned, &folded, model, &mut None)?
        };
        let decided = moment::decide(substrate, world, &opened, &assigned, &folded, decision)
            .and_then(|act| moment::with_tool_answer(substrate, world, model, act));
        if detail == Detail::Full {
            face = folded.value();
            if stored.llm.is_some() {
                llm_prompt = llm_prompt_json(world, &folded);
            }
        }
        decided
    })();
    if context.is_null() && detail == Detail::Full {
        // Assign failed before it built the context: build it for the report.
        if let Some(row) = world.beings.get(&being) {
            context = context_json(&moment::open_context(world, row, &opened));
        }
    }
    let outcome = match result {
        Ok(Some(act)) => Outcome::Act(Box::new(act)),
        Ok(None) => Outcome::See,
        Err(failure) => Outcome::Failure(failure),
    };
    // Only a moment that already disagrees with the record pays for a second
    // run: if the two runs differ, the cause is nondeterminism.
    let agrees = match &outcome {
        Outcome::Act(recomputed) => agrees(recomputed),
        _ => false,
    };
    let unstable = !agrees
        && moment::run_observed(substrate, world, being, wake, stored_time_ms, &moment::Unobserved, model).0 != outcome;
    Recomputed { outcome, clauses, clause_keys, composed, face, context, llm_prompt, unstable }
}

/// The prompt an LLM moment sent, rebuilt from its face as the moment built
/// it (the land's `llm_prompt_chars_max`), as text for people.
fn llm_prompt_json(world: &World, face: &crate::face::Face<'_>) -> Json {
    match crate::llm::prompt_in(world, face) {
        Ok(prompt) => json!({
            "system": prompt.system, "user": prompt.user,
            "offered": prompt.offered, "omitted": prompt.omitted,
            "recallLeftOut": prompt.recall_left_out,
        }),
        Err(error) => json!({ "error": error.to_string() }),
    }
}

fn context_json(context: &crate::roles::context::OpenContext) -> Json {
    Json::Object(context.iter().map(|(key, value)| (key.to_string(), value.clone())).collect())
}

/// A recomputed moment that did not end in the stored act.
fn outcome_difference(body: &ActBody, actual: String) -> Vec<FieldDifference> {
    vec![FieldDifference {
        field: "outcome".into(),
        expected: json!(format!("act: {}", body.call.verb())),
        actual: json!(actual),
    }]
}

/// The differences between the stored act and the recomputed outcome once
/// the seal-time rules ran against `world`, and whether re-running those
/// rules disagreed with itself.
fn seal_differences(
    substrate: &Substrate,
    world: &World,
    fact: &Fact,
    body: &ActBody,
    outcome: Outcome,
) -> (Vec<FieldDifference>, bool) {
    let outcome = match sealed_as_stored(substrate, world, fact.body(), outcome, false) {
        Ok(_) => return (Vec::new(), false),
        Err(outcome) => outcome,
    };
    let mut act = match outcome {
        Outcome::Act(act) => act,
        Outcome::See => return (outcome_difference(body, "see (no act)".into()), false),
        Outcome::Failure(failure) => {
            return (outcome_difference(body, failure.to_string()), false);
        }
    };
    // A mismatch: the seal-time rules are decided twice on the act as the
    // moment left it, to tell nondeterminism apart; effects they changed
    // replace the moment's, as sealing does, before the fields are compared.
    let first = moment::seal_time_effects(substrate, world, &act);
    let second = moment::seal_time_effects(substrate, world, &act);
    let unstable = first != second;
    match first {
        Ok(sealed_effects) => {
            if let Some(effects) = sealed_effects {
                act.body.effects = effects;
            }
            (body_differences(body, &act.body), unstable)
        }
        Err(failure) => (outcome_difference(body, format!("refused at seal: {}", failure.refusal)), unstable),
    }
}

/// Whether `act` encodes to exactly the `stored` bytes. The bytes the
/// moment encoded where it ran (in parallel) serve unless the seal-time
/// rules changed the body (which drops them).
fn encodes_as_stored(act: &moment::Act, stored: &[u8]) -> bool {
    match &act.encoded {
        Some(encoded) => encoded.as_bytes() == stored,
        None => act.body.canonical().is_ok_and(|bytes| bytes.as_bytes() == stored),
    }
}

/// The fast path of the seal comparison: the recomputed act, once the
/// seal-time rules ran against `world`, encodes to exactly the stored bytes,
/// so its body is the stored body (canonical bytes decode to one value) and
/// the act is returned for the fold. Otherwise the outcome is handed back
/// for [`act_differences`] to explain. `encoded_as_stored`: the act's bytes,
/// as the moment encoded them, were already found equal to `stored`.
fn sealed_as_stored(
    substrate: &Substrate,
    world: &World,
    stored: &[u8],
    outcome: Outcome,
    encoded_as_stored: bool,
) -> Result<Box<moment::Act>, Outcome> {
    let Outcome::Act(mut act) = outcome else { return Err(outcome) };
    match moment::seal_time_effects(substrate, world, &act) {
        // Unchanged by the seal-time rules, so bytes already compared still hold.
        Ok(None) if encoded_as_stored || encodes_as_stored(&act, stored) => Ok(act),
        Ok(Some(effects)) => {
            let moment_effects = std::mem::replace(&mut act.body.effects, effects);
            act.encoded = None;
            if encodes_as_stored(&act, stored) {
                return Ok(act);
            }
            act.body.effects = moment_effects;
            Err(Outcome::Act(act))
        }
        _ => Err(Outcome::Act(act)),
    }
}

/// How the stored act differs from its recomputation (`None`: its cursor lay
/// after its own land seq, so it never was recomputed), once the seal-time
/// rules ran against `world`; and whether the recomputation was unstable.
fn act_differences(
    substrate: &Substrate,
    world: &World,
    act: &StoredAct<'_>,
    recomputed: Option<(Outcome, bool)>,
) -> (Vec<FieldDifference>, bool) {
    match recomputed {
        Some((outcome, unstable)) => {
            let (differences, unstable_at_seal) = seal_differences(substrate, world, &act.fact, &act.body, outcome);
            (differences, unstable || unstable_at_seal)
        }
        // The act's cursor lies after its own land seq: the stored cursor is wrong.
        None => {
            let difference = FieldDifference {
                field: "cursor".into(),
                expected: json!(act.body.cursor),
                actual: json!(format!("at most {}", act.land_seq)),
            };
            (vec![difference], false)
        }
    }
}

/// Compares one recomputed act with the stored one and records the moment
/// (and its divergence, if any); returns whether to stop.
fn compare(
    substrate: &Substrate,
    definitions: &ReplayDefinitions<'_>,
    world: &World,
    act: &StoredAct<'_>,
    recomputed: Option<Recomputed>,
    report: &mut ReplayReport,
    keep_going: bool,
) -> bool {
    let StoredAct { seq, land_seq, fact, body } = act;
    let (seq, land_seq) = (*seq, *land_seq);
    let (verdict, clauses, clause_keys, composed, face, context, llm_prompt) = match recomputed {
        Some(Recomputed { outcome, clauses, clause_keys, composed, face, context, llm_prompt, unstable }) => {
            (Some((outcome, unstable)), clauses, clause_keys, composed, face, context, llm_prompt)
        }
        None => (None, Vec::new(), Vec::new(), Json::Null, Json::Null, Json::Null, Json::Null),
    };
    let (differences, unstable) = act_differences(substrate, world, act, verdict);
    let matches = differences.is_empty();
    if !matches {
        let files = definitions.files_changed_at(world);
        let cause = classify(&report.problems, body, substrate, world, unstable, files);
        report.divergences.push(Divergence { seq, land_seq, differences, cause, context: context.clone() });
    }
    let stored_time_ms = fact.header.stored_time_ms;
    let act = body.clone();
    report.moments.push(ReplayedMoment {
        seq,
        land_seq,
        stored_time_ms,
        act,
        clauses,
        clause_keys,
        composed,
        face,
        context,
        llm_prompt,
        matches,
    });
    !matches && !keep_going
}

fn classify(
    problems: &[String],
    body: &ActBody,
    substrate: &Substrate,
    world: &World,
    unstable: bool,
    files: Option<FilesChanged>,
) -> DivergenceCause {
    if !problems.is_empty() {
        return DivergenceCause::StoredInputChanged { problems: problems.to_vec() };
    }
    if body.evaluator != EVALUATOR_VERSION {
        return DivergenceCause::EvaluatorChanged {
            recorded: body.evaluator.clone(),
            current: EVALUATOR_VERSION.into(),
        };
    }
    // Authored roles (facts) are part of the registry the moment saw.
    let overlay = substrate.registry_for(world);
    let registry = overlay.as_deref().unwrap_or(&substrate.roles);
    let roles: Vec<RoleChange> = body
        .stack
        .iter()
        .filter_map(|used| {
            let current = registry.get(&used.name).map(|role| role.digest);
            (current != Some(used.digest)).then(|| RoleChange {
                role: used.name.clone(),
                recorded: used.digest,
                current,
            })
        })
        .collect();
    if !roles.is_empty() || files.is_some() {
        return DivergenceCause::DefinitionChanged { roles, files };
    }
    if unstable {
        return DivergenceCause::Nondeterminism;
    }
    DivergenceCause::Unexplained
}

/// The fields of two role definitions (see `Role::definition_json`) that
/// differ: how a role changed since a moment wore it.
pub fn definition_differences(recorded: &Json, current: &Json) -> Vec<FieldDifference> {
    let mut differences = Vec::new();
    json_differences("", recorded, current, &mut differences);
    differences
}

/// The fields of two act bodies that differ, as JSON paths with both values.
pub fn body_differences(expected: &ActBody, actual: &ActBody) -> Vec<FieldDifference> {
    let expected = digests_as_hex(serde_json::to_value(expected).unwrap_or(Json::Null));
    let actual = digests_as_hex(serde_json::to_value(actual).unwrap_or(Json::Null));
    let mut differences = Vec::new();
    json_differences("", &expected, &actual, &mut differences);
    differences
}

/// Digests serialise as arrays of 32 bytes; a diff shows them as hex leaves.
fn digests_as_hex(value: Json) -> Json {
    match value {
        Json::Array(items)
            if items.len() == 32 && items.iter().all(|item| item.as_u64().is_some_and(|byte| byte <= 255)) =>
        {
            let bytes: Vec<u8> = items.iter().filter_map(|item| item.as_u64().map(|byte| byte as u8)).collect();
            Json::String(hex::encode(bytes))
        }
        Json::Array(items) => Json::Array(items.into_iter().map(digests_as_hex).collect()),
        Json::Object(map) => Json::Object(map.into_iter().map(|(key, value)| (key, digests_as_hex(value))).collect()),
        other => other,
    }
}

fn json_differences(path: &str, expected: &Json, actual: &Json, out: &mut Vec<FieldDifference>) {
    match (expected, actual) {
        (Json::Object(left), Json::Object(right)) => {
            let keys: std::collections::BTreeSet<&String> = left.keys().chain(right.keys()).collect();
            for key in keys {
                let child = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                json_differences(
                    &child,
                    left.get(key).unwrap_or(&Json::Null),
                    right.get(key).unwrap_or(&Json::Null),
                    out,
                );
            }
        }
        (Json::Array(left), Json::Array(right)) if left.len() == right.len() => {
            for (index, (left, right)) in left.iter().zip(right).enumerate() {
                json_differences(&format!("{path}[{index}]"), left, right, out);
            }
        }
        (left, right) if left != right => {
            out.push(FieldDifference { field: path.to_string(), expected: left.clone(), actual: right.clone() })
        }
        _ => {}
    }
}
