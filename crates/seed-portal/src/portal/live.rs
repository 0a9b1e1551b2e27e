//! A running land: the engine in live mode behind one lock (the
//! land's only writer), a published snapshot of the world for readers, the
//! round loop that wakes scripted and LLM beings, and the presence of
//! inhabiting tabs.
//!
//! Everything a person does goes through `act`: one moment of a human
//! (or inhabited) being, decided by the same beats and verb layer as any
//! other, sealed and durable before it returns.

use super::auth::Principal;
use crate::engine::{Engine, EngineError, PersonResult};
use crate::fact::body::{OperatorTokenBody, KIND_OPERATOR_TOKEN};
use crate::fact::{blake3_of, BeingId, Hash32};
use crate::moment::{PersonChoice, Substrate};
use crate::store::Store;
use crate::world::{Wake, World};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// The nice value the round thread runs at (`round_thread_nice`; 0 is a
/// normal thread, 19 the lowest). The moments of a round and the signing of
/// their facts run on threads the round thread starts, which inherit it: a
/// land sealing all the while takes the CPU the pages leave, and a page
/// waits for no round. The store's committer keeps the normal priority, so
/// an acknowledged write is not delayed behind rounds.
pub const ROUND_THREAD_NICE: i32 = 10;
/// While rounds keep failing the same way (a full disk), the failure is
/// logged when it starts and again after this long, not at every round.
pub const ROUND_FAILURE_REPEAT_LOG_MS: u64 = 60_000;
/// Rounds that must go on in a row after failures before the log says the
/// failure is over (a round with nothing to write succeeds on a full disk too).
pub const ROUNDS_GOING_ON_BEFORE_ALL_CLEAR: u64 = 10;

/// Failing rounds, so that a lasting failure is one log line (and a
/// reminder now and then) and its end is one more.
#[derive(Default)]
struct RoundFailures {
    /// Rounds failed since the log last said all was well.
    failed: u64,
    /// Rounds gone on since the last failure.
    went_on_in_a_row: u64,
    last_reason: Option<String>,
    /// When a failure was last logged (the log's clock only: nothing here
    /// reaches a fact).
    logged_at: Option<std::time::Instant>,
}

impl RoundFailures {
    fn round_failed(&mut self, error: &EngineError) {
        self.failed += 1;
        self.went_on_in_a_row = 0;
        let reason = error.to_string();
        let repeat_due = self
            .logged_at
            .is_none_or(|logged_at| logged_at.elapsed() >= Duration::from_millis(ROUND_FAILURE_REPEAT_LOG_MS));
        if self.last_reason.as_deref() != Some(reason.as_str()) || repeat_due {
            tracing::error!(
                error = %reason,
                failed_rounds = self.failed,
                "a round failed (rounds are retried; while this lasts it is logged again every {} s)",
                ROUND_FAILURE_REPEAT_LOG_MS / 1000
            );
            self.logged_at = Some(std::time::Instant::now());
            self.last_reason = Some(reason);
        }
    }

    fn round_went_on(&mut self) {
        if self.failed == 0 {
            return;
        }
        self.went_on_in_a_row += 1;
        if self.went_on_in_a_row >= ROUNDS_GOING_ON_BEFORE_ALL_CLEAR {
            tracing::info!(failed_rounds = self.failed, "rounds go on again");
            *self = RoundFailures::default();
        }
    }
}

/// Lowers the calling thread's scheduling priority (on Linux the nice value
/// is per thread, and threads it starts inherit it). Best effort: a system
/// that refuses leaves the thread as it was, which is only slower pages.
fn lower_this_threads_priority(nice: i32) {
    // SAFETY: setpriority reads no memory of ours; `who` 0 is the calling thread.
    let result = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    if result != 0 {
        tracing::warn!(nice, error = %std::io::Error::last_os_error(), "the round thread keeps its priority");
    }
}

/// A live land shared by the portal's handlers.
pub struct LiveLand {
    engine: Mutex<Option<Engine>>,
    snapshot: RwLock<Arc<World>>,
    /// The latest moment traces, oldest first, published after each step
    /// beside the world so that readers never wait for the writer's lock
    /// (a round holds it for as long as its moments run).
    recent_traces: RwLock<Arc<Vec<Json>>>,
    substrate: Arc<Substrate>,
    store: Arc<dyn Store>,
    operator: BeingId,
    /// The reality root, whose key signs the world snapshots replays start from.
    root: BeingId,
    /// BLAKE3 of the operator's login token (from its latest `operator-token` fact).
    token_hash: Hash32,
    /// Tells `/api/v1/events` listeners the world's new cursor.
    events: tokio::sync::broadcast::Sender<u64>,
    /// Open inhabiting tabs per being.
    presence: Mutex<BTreeMap<BeingId, Presence>>,
    /// Set by `stop_rounds`; the round thread waits on `stopping_set`
    /// between rounds, so that it stops at once rather than after the
    /// rest of its wait (`--round-ms` may be minutes).
    stopping: Mutex<bool>,
    stopping_set: std::sync::Condvar,
    /// The moments running now, read without the writer's lock (a round
    /// holds that lock while its moments run).
    running: Arc<crate::moment::RunningMoments>,
    epoch: std::time::Instant,
    /// The land's clock, read (never advanced) for previews.
    clock: Arc<crate::clock::LogicalClock>,
    /// The land's `fact_body_bytes_max`, for refusing oversized input early.
    fact_body_bytes_max: usize,
    /// The land's folder (where people's password hashes are kept).
    land_dir: std::path::PathBuf,
    /// `Some(runner)`: this process follows a land another process runs
    /// (`store::runner`): its rounds fold the land's tail, its people's acts
    /// are refused naming the runner.
    following: RwLock<Option<String>>,
    /// Whole worlds replays start from instead of folding the land again,
    /// and which facts they may pass over unread
    /// (`seed_engine::replay::kept_worlds`): the world where the land's
    /// first act opened is folded, and the log read, as the land opens.
    kept_worlds: Arc<crate::replay::KeptWorlds>,
    /// The thread folding that first world (joined by `stop`).
    warming_replays: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The engine's: set, its round in progress ends between two moments.
    round_interrupt: Arc<std::sync::atomic::AtomicBool>,
}

/// The tabs holding one being, and how many times one started to.
#[derive(Debug, Clone, Copy, Default)]
struct Presence {
    tabs: u64,
    opened: u64,
}

/// Why a person's moment did not seal: the moment trace's outcome and,
/// when the moment failed (rather than only looking), its failure.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub outcome: String,
    pub failure: Option<crate::moment::Failure>,
}

impl LiveLand {
    pub fn new(engine: Engine) -> Result<Arc<LiveLand>, EngineError> {
        super::html::set_land_tripped(crate::health::trip_of(&engine.world).is_some());
        let operator = engine.land.operator();
        let root = engine.land.root();
        let store = engine.land.shared_store();
        let token_hash = latest_token_hash(&*store, &operator)?;
        let (events, _) = tokio::sync::broadcast::channel(64);
        let kept_worlds = engine.kept_for_replays.clone();
        let round_interrupt = engine.round_interrupt();
        let land = Arc::new(LiveLand {
            snapshot: RwLock::new(Arc::new(engine.world.clone())),
            recent_traces: RwLock::new(Arc::new(engine.recent_traces_json())),
            substrate: engine.substrate_shared(),
            running: engine.running.clone(),
            epoch: engine.epoch(),
            clock: engine.clock(),
            fact_body_bytes_max: engine.land.limits().fact_body_bytes_max,
            land_dir: engine.land.dir().to_path_buf(),
            engine: Mutex::new(Some(engine)),
            store,
            operator,
            root,
            token_hash,
            events,
            presence: Mutex::new(BTreeMap::new()),
            stopping: Mutex::new(false),
            stopping_set: std::sync::Condvar::new(),
            following: RwLock::new(None),
            kept_worlds,
            warming_replays: Mutex::new(None),
            round_interrupt,
        });
        let warming = land.start_warming_replays();
        *land.warming_replays.lock().unwrap_or_else(|p| p.into_inner()) = Some(warming);
        Ok(land)
    }

    /// Folds the world where the land's first act opened, on a thread of
    /// its own at the rounds' priority, and keeps it for replays: on a land
    /// of a million beings planted at once, every being's replay would
    /// otherwise fold the million geneses again. Then reads the land log
    /// once to learn which acts a replay of another being passes over, so
    /// that no replay reads them. A replay asked for while the world is
    /// folded waits for it; one asked while the log is read reads the acts
    /// it passes over itself. An engine that opened its land by folding
    /// from genesis left both already (`Engine::kept_for_replays`): then
    /// there is nothing to fold or read.
    fn start_warming_replays(&self) -> std::thread::JoinHandle<()> {
        let (store, substrate, kept) = (self.store.clone(), self.substrate.clone(), self.kept_worlds.clone());
        let kept_at_open = kept.cursors().first().copied();
        // Marked before the thread starts, so that no replay asked from now
        // on folds the same facts beside it.
        let warming = kept_at_open.is_none().then(|| kept.warming());
        std::thread::Builder::new()
            .name("seed-replay-warm".into())
            .spawn(move || {
                lower_this_threads_priority(ROUND_THREAD_NICE);
                let definitions = crate::replay::ReplayDefinitions::recorded(&*store, Some(&substrate));
                let kept_now = match kept_at_open {
                    Some(cursor) => Ok(Some(cursor)),
                    None => crate::replay::kept_worlds::keep_world_at_first_act(&*store, definitions, &kept),
                };
                match kept_now {
                    Ok(Some(cursor)) => tracing::debug!(cursor, "replays start from the world at the land's first act"),
                    Ok(None) => tracing::debug!("no world kept for replays (nothing acted yet)"),
                    Err(error) => {
                        tracing::warn!(%error, "replays fold from genesis (the world at the first act did not fold)")
                    }
                }
                drop(warming);
                if let Err(error) = crate::replay::kept_worlds::learn_passable_facts(&*store, &kept) {
                    tracing::warn!(%error, "replays read every act they pass over (the land log did not read)");
                }
            })
            .expect("spawning a thread only fails when the process is out of resources")
    }

    /// Reads the facts sealed since the replays' keeper last learnt which
    /// a replay may pass over (after each round, on the round thread: a
    /// million acts take it a fraction of a second), so that the first
    /// replay asked after a round does not read them.
    fn learn_what_replays_pass_over(&self) {
        if let Err(error) = crate::replay::kept_worlds::learn_passable_facts(&*self.store, &self.kept_worlds) {
            tracing::warn!(%error, "replays read the acts they pass over since the last round themselves");
        }
    }

    /// The cursors of the worlds kept for replays (the land's first act's
    /// opening, once it is folded).
    pub fn replay_worlds_kept(&self) -> Vec<u64> {
        self.kept_worlds.cursors()
    }

    /// How many land seqs, from the first, replays know whether they may
    /// pass over without reading them.
    pub fn replay_passable_known(&self) -> u64 {
        self.kept_worlds.passable_known()
    }

    pub fn fact_body_bytes_max(&self) -> usize {
        self.fact_body_bytes_max
    }

    pub fn operator(&self) -> BeingId {
        self.operator
    }

    /// Replays `being`'s moments in `options`' range, starting from the
    /// worlds kept in memory and the land's vouched world snapshots (the
    /// report is the one a replay from genesis gives; see
    /// `seed_engine::snapshots` and `seed_engine::replay::kept_worlds`).
    pub fn replay_being(
        &self,
        being: BeingId,
        options: crate::replay::ReplayOptions,
    ) -> Result<crate::replay::ReplayReport, crate::replay::ReplayError> {
        let store = self.store();
        self.kept_worlds.wait_while_warming();
        let worlds = crate::snapshots::VouchedWorlds::open(&self.land_dir, store, self.root, false)
            .unwrap_or_else(|_| crate::snapshots::VouchedWorlds::none(&self.land_dir, store));
        // Each moment with the definitions the land recorded at its cursor;
        // the land's own files for moments sealed before it recorded any.
        let definitions = crate::replay::ReplayDefinitions::recorded(store, Some(self.substrate()));
        crate::replay::Replayer::with_definitions(store, definitions, being, options)?
            .with_snapshots(&worlds)
            .with_kept_worlds(&self.kept_worlds)
            .run()
    }

    pub fn store(&self) -> &dyn Store {
        &*self.store
    }

    /// The store this land was opened with, shared.
    pub fn store_shared(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    pub fn substrate(&self) -> &Substrate {
        &self.substrate
    }

    /// The world as of the latest step.
    pub fn world(&self) -> Arc<World> {
        self.snapshot.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<u64> {
        self.events.subscribe()
    }

    /// Whether `token` is the operator's current login token.
    pub fn token_matches(&self, token: &str) -> bool {
        blake3_of(token.as_bytes()) == self.token_hash
    }

    pub fn land_dir(&self) -> &std::path::Path {
        &self.land_dir
    }

    /// Whose token `token` is: the operator's, or a person's account (with
    /// the land seq of its grant). Tokens are 256 random bits, so finding
    /// one by its hash is safe.
    pub fn principal_of_token(&self, token: &str) -> Option<(Principal, u64)> {
        if self.token_matches(token) {
            return Some((Principal::Operator, 0));
        }
        let hash = blake3_of(token.as_bytes()).to_hex();
        let world = self.world();
        let (account, granted) = world.accounts.iter().find(|(_, account)| account.token_hash == hash)?;
        Some((Principal::Person { account: account.clone() }, granted.granted_at_seq))
    }

    /// The grant `principal` holds under now: 0 for the operator, the land
    /// seq of a person's latest grant, `None` once the account is revoked.
    pub fn grant_of(&self, principal: &Principal) -> Option<u64> {
        match principal {
            Principal::Operator => Some(0),
            Principal::Person { account } => self.world().accounts.get(account).map(|granted| granted.granted_at_seq),
        }
    }

    /// The being `principal` acts as: the operator's, or the one its
    /// account drives (`None` once the account is revoked).
    pub fn being_of(&self, principal: &Principal) -> Option<BeingId> {
        match principal {
            Principal::Operator => Some(self.operator),
            Principal::Person { account } => self.world().accounts.get(account).map(|granted| granted.being),
        }
    }

    fn with_engine<T>(&self, work: impl FnOnce(&mut Engine) -> T) -> Option<T> {
        let mut guard = self.engine.lock().unwrap_or_else(|p| p.into_inner());
        let engine = guard.as_mut()?;
        let cursor_before = engine.world.cursor;
        let moments_before = engine.summary.moments;
        let result = work(engine);
        if engine.summary.moments != moments_before {
            let traces = Arc::new(engine.recent_traces_json());
            *self.recent_traces.write().unwrap_or_else(|p| p.into_inner()) = traces;
        }
        if engine.world.cursor != cursor_before {
            super::html::set_land_tripped(crate::health::trip_of(&engine.world).is_some());
            let world = Arc::new(engine.world.clone());
            let cursor = world.cursor;
            *self.snapshot.write().unwrap_or_else(|p| p.into_inner()) = world;
            let _ = self.events.send(cursor);
        }
        Some(result)
    }

    /// The health measured after the latest step (none while the land is
    /// tripped, or when it watches no sign).
    pub fn health(&self) -> Option<crate::health::Health> {
        self.with_engine(|engine| engine.health().cloned()).flatten()
    }

    /// Revives the tripped land as `by` (see `Engine::revive`).
    pub fn revive(&self, by: &str) -> Result<crate::health::Revival, EngineError> {
        if let Some(runner) = self.following() {
            return Err(EngineError::Follower { runner });
        }
        self.with_engine(|engine| engine.revive(by))
            .ok_or_else(|| EngineError::Internal("the land is stopping".into()))?
    }

    /// One round of the scheduler: signal, summon, tick and self-continue
    /// wakes. A follower folds the facts the runner sealed since instead.
    pub fn round(&self) -> Result<(), EngineError> {
        if self.following().is_some() {
            return self
                .with_engine(|engine| crate::engine::fold_to_end(engine.land.store(), &mut engine.world))
                .unwrap_or(Ok(()));
        }
        self.with_engine(|engine| engine.round()).unwrap_or(Ok(()))
    }

    /// The process running the land, when this one only follows it.
    pub fn following(&self) -> Option<String> {
        self.following.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// From now on this process follows the land `runner` runs.
    pub fn follow(&self, runner: String) {
        *self.following.write().unwrap_or_else(|p| p.into_inner()) = Some(runner);
    }

    /// Takes over a land this process followed, with `engine` opened afresh
    /// on a store that holds the runner lease (its scheduler rebuilt from
    /// the land as a restart would); the engine it followed with is closed.
    pub fn take_over(&self, mut engine: Engine) -> Result<(), EngineError> {
        engine.set_round_interrupt(self.round_interrupt.clone());
        let world = Arc::new(engine.world.clone());
        let followed = {
            let mut guard = self.engine.lock().unwrap_or_else(|p| p.into_inner());
            let followed = guard.replace(engine);
            *self.following.write().unwrap_or_else(|p| p.into_inner()) = None;
            followed
        };
        let cursor = world.cursor;
        *self.snapshot.write().unwrap_or_else(|p| p.into_inner()) = world;
        let _ = self.events.send(cursor);
        followed.map_or(Ok(()), |engine| engine.close())
    }

    /// Runs one moment of `being` with a person's choice. `Ok(Err(_))` is a
    /// refusal (nothing written; the moment trace says why).
    pub fn act(
        &self,
        being: BeingId,
        wake: Wake,
        choice: &PersonChoice,
    ) -> Result<Result<PersonResult, Refused>, EngineError> {
        if let Some(runner) = self.following() {
            return Err(EngineError::Follower { runner });
        }
        let result = self
            .with_engine(|engine| engine.act_as_person(being, wake, choice))
            .ok_or_else(|| EngineError::Internal("the land is stopping".into()))??;
        if result.sealed {
            Ok(Ok(result))
        } else {
            Ok(Err(Refused { outcome: result.outcome, failure: result.failure }))
        }
    }

    /// Seals `effects` as one `world` fact of the root now and folds it
    /// (Canopy's peer records, decided at the edge). Refused while this
    /// process follows another's land, or the land is tripped.
    /// Returns the land seq it sealed at.
    pub fn seal_world_change(&self, effects: Vec<crate::world::Effect>) -> Result<u64, EngineError> {
        let sealed = self.seal_world_changes(vec![effects])?;
        Ok(sealed.first().copied().unwrap_or_else(|| self.world().cursor.saturating_sub(1)))
    }

    /// Seals each of `changes` as its own `world` fact of the root, made
    /// durable together; their land seqs. Refused as `seal_world_change` is.
    pub fn seal_world_changes(&self, changes: Vec<Vec<crate::world::Effect>>) -> Result<Vec<u64>, EngineError> {
        if let Some(runner) = self.following() {
            return Err(EngineError::Follower { runner });
        }
        self.with_engine(|engine| {
            if let Some(trip) = crate::health::trip_of(&engine.world) {
                return Err(EngineError::Tripped { trip: Box::new(trip) });
            }
            engine.seal_changes(changes)
        })
        .ok_or_else(|| EngineError::Internal("the land is stopping".into()))?
    }

    /// The key this land holds for `being` to move here with (`seed move`
    /// on its land names it in the being's `move` fact): the one minted
    /// before, or a new one. Refused once the being's reel is here.
    pub fn arrival_key(&self, being: BeingId) -> Result<crate::fact::PublicKeyBytes, EngineError> {
        if let Some(runner) = self.following() {
            return Err(EngineError::Follower { runner });
        }
        self.with_engine(|engine| {
            if engine.land.store().head(&being)?.is_none() {
                if let Some(key) = engine.land.arrival_key(&being)? {
                    return Ok(key);
                }
            }
            Ok(engine.land.mint_arrival_key(&being)?)
        })
        .ok_or_else(|| EngineError::Internal("the land is stopping".into()))?
    }

    /// The key this land minted for `being` to move here with, if it did.
    pub fn minted_arrival_key(&self, being: BeingId) -> Result<Option<crate::fact::PublicKeyBytes>, EngineError> {
        self.with_engine(|engine| Ok(engine.land.arrival_key(&being)?))
            .ok_or_else(|| EngineError::Internal("the land is stopping".into()))?
    }

    /// Takes a being moving here (`Engine::take_moving_being`); the land
    /// seq of its `moved-in`.
    pub fn take_moving_being(
        &self,
        arriving: crate::canopy::BeingArriving,
        history: Vec<crate::fact::Fact>,
        home_space: String,
    ) -> Result<u64, EngineError> {
        if let Some(runner) = self.following() {
            return Err(EngineError::Follower { runner });
        }
        self.with_engine(|engine| {
            if let Some(trip) = crate::health::trip_of(&engine.world) {
                return Err(EngineError::Tripped { trip: Box::new(trip) });
            }
            engine.take_moving_being(arriving, history, home_space)
        })
        .ok_or_else(|| EngineError::Internal("the land is stopping".into()))?
    }

    /// What the land signs with when it speaks to other lands: its id (the
    /// root's), the root's key now and the root's key history (encoded
    /// envelopes, genesis first).
    pub fn canopy_keys(&self) -> Result<(BeingId, ed25519_dalek::SigningKey, Vec<Vec<u8>>), EngineError> {
        self.with_engine(|engine| {
            let key = engine.land.root_signing_key()?;
            let history = engine.land.root_key_history()?;
            Ok((engine.land.root(), key, history))
        })
        .ok_or_else(|| EngineError::Internal("the land is stopping".into()))?
    }

    /// About the stored time a moment would open at now (for previews: it
    /// reads the clock and the wall time and advances nothing, so the
    /// writer's next step stamps its facts with the time it read itself).
    pub fn now_ms(&self) -> u64 {
        use crate::clock::Clock;
        self.clock.now_ms().max(crate::clock::WallClock::default().now_ms())
    }

    /// The latest `most` moment traces that `admits`, newest first: only
    /// those are copied.
    pub fn recent_traces(&self, most: usize, admits: impl Fn(&Json) -> bool) -> Vec<Json> {
        let traces = self.recent_traces.read().unwrap_or_else(|p| p.into_inner()).clone();
        traces.iter().rev().filter(|trace| admits(trace)).take(most).cloned().collect()
    }

    /// The moments running now: (being, beat, microseconds in it).
    pub fn running(&self) -> Vec<(BeingId, &'static str, u64)> {
        let now = self.epoch.elapsed().as_micros() as u64;
        self.running
            .snapshot()
            .into_iter()
            .map(|moment| (moment.being, moment.beat.as_str(), now.saturating_sub(moment.since_us)))
            .collect()
    }

    /// A tab started holding `being`; returns how many hold it now.
    pub fn presence_opened(&self, being: BeingId) -> u64 {
        let mut presence = self.presence.lock().unwrap_or_else(|p| p.into_inner());
        let held = presence.entry(being).or_default();
        held.tabs += 1;
        held.opened += 1;
        held.tabs
    }

    /// A tab stopped holding `being`; returns how many still hold it.
    pub fn presence_closed(&self, being: BeingId) -> u64 {
        let mut presence = self.presence.lock().unwrap_or_else(|p| p.into_inner());
        let held = presence.entry(being).or_default();
        held.tabs = held.tabs.saturating_sub(1);
        held.tabs
    }

    pub fn presence_of(&self, being: &BeingId) -> u64 {
        self.presence.lock().unwrap_or_else(|p| p.into_inner()).get(being).map_or(0, |held| held.tabs)
    }

    /// How many times a tab has started holding `being` since the portal
    /// started: a release scheduled at one count is off once it moved (a tab
    /// reloaded and held the being again in between, even if it has let go
    /// again since).
    pub fn presence_opened_count(&self, being: &BeingId) -> u64 {
        self.presence.lock().unwrap_or_else(|p| p.into_inner()).get(being).map_or(0, |held| held.opened)
    }

    /// Runs rounds every `round_ms` on a thread of its own until `stop`.
    pub fn start_rounds(self: &Arc<Self>, round_ms: u64) -> std::thread::JoinHandle<()> {
        let land = self.clone();
        std::thread::Builder::new()
            .name("seed-rounds".into())
            .spawn(move || {
                lower_this_threads_priority(ROUND_THREAD_NICE);
                let mut failures = RoundFailures::default();
                while !land.stopped_while_waiting(Duration::from_millis(round_ms)) {
                    match land.round() {
                        Ok(()) => {
                            failures.round_went_on();
                            land.learn_what_replays_pass_over();
                        }
                        Err(error) => failures.round_failed(&error),
                    }
                }
            })
            .expect("spawning a thread only fails when the process is out of resources")
    }

    /// Waits `wait` (the scheduler's clock only: nothing here reaches a
    /// fact) unless the rounds are stopped first; whether they are.
    fn stopped_while_waiting(&self, wait: Duration) -> bool {
        let deadline = std::time::Instant::now() + wait;
        let mut stopping = self.stopping.lock().unwrap_or_else(|p| p.into_inner());
        while !*stopping {
            let Some(left) = deadline.checked_duration_since(std::time::Instant::now()).filter(|left| !left.is_zero())
            else {
                return false;
            };
            stopping = self.stopping_set.wait_timeout(stopping, left).unwrap_or_else(|p| p.into_inner()).0;
        }
        true
    }

    /// No round starts after this, the one running (if any) ends after the
    /// moment it is sealing (`Engine::round_interrupt`), and the round
    /// thread stops waiting for the next.
    pub fn stop_rounds(&self) {
        self.round_interrupt.store(true, std::sync::atomic::Ordering::SeqCst);
        *self.stopping.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.stopping_set.notify_all();
    }

    /// Stops the rounds and closes the land (its last writes are flushed).
    pub fn stop(&self) -> Result<(), EngineError> {
        self.stop_rounds();
        let warming = self.warming_replays.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(warming) = warming {
            if warming.join().is_err() {
                tracing::error!("the thread folding the world replays start from panicked");
            }
        }
        let engine = self.engine.lock().unwrap_or_else(|p| p.into_inner()).take();
        match engine {
            Some(engine) => engine.close(),
            None => Ok(()),
        }
    }
}

/// The token hash of the operator's latest `operator-token` fact.
fn latest_token_hash(store: &dyn Store, operator: &BeingId) -> Result<Hash32, EngineError> {
    let mut hash = None;
    for stored in store.reel(operator, 0, u64::MAX)? {
        if stored.fact.kind() == KIND_OPERATOR_TOKEN {
            if let Ok(body) = stored.fact.body_as::<OperatorTokenBody>() {
                hash = Some(body.token_hash);
            }
        }
    }
    hash.ok_or_else(|| EngineError::Internal("the operator's reel holds no operator-token fact".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn court_fixture() -> crate::engine::fixture::Fixture {
        let fixture_path =
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("fixtures/court.toml");
        crate::engine::fixture::Fixture::load(&fixture_path).expect("fixture")
    }

    fn live_court() -> (tempfile::TempDir, Arc<LiveLand>) {
        let dir = tempfile::tempdir().expect("folder");
        let fixture = court_fixture();
        let options = court_options(dir.path());
        let engine = Engine::plant(&fixture, &options).expect("plant");
        (dir, LiveLand::new(engine).expect("live"))
    }

    fn court_options(dir: &std::path::Path) -> crate::engine::EngineOptions {
        crate::engine::EngineOptions {
            snapshot_every_facts: None,
            snapshot_spacing_step_bytes: None,
            store: Default::default(),
            ticks: None,
            seed: 0,
            threads: 1,
            land_dir: dir.join("land"),
            trace_file: None,
            progress: std::sync::Arc::new(crate::progress::NoProgress),
            model: None,
            mode: crate::engine::Mode::Live,
        }
    }

    /// Regression: `seed up --round-ms` of hours went on waiting for the
    /// next round after it was told to stop (a bounded wait, not a timing).
    #[test]
    fn the_round_thread_stops_without_waiting_for_the_next_round() {
        let (_dir, live) = live_court();
        let rounds = live.start_rounds(24 * 60 * 60 * 1000);
        // Not a timing: long enough for the thread to be waiting, so that
        // the stop wakes it rather than being seen before it waits.
        std::thread::sleep(Duration::from_millis(200));
        live.stop_rounds();
        let (joined, stopped) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = joined.send(rounds.join().is_ok());
        });
        let stopped = stopped.recv_timeout(Duration::from_secs(30));
        assert_eq!(stopped, Ok(true), "the round thread did not stop");
        live.stop().expect("stop");
    }

    /// Regression: stopping `seed up` waited for the round in progress to
    /// play every wake (17 s on a million beings). Told to stop, a live
    /// land's round plays no more moments; the same round not told plays
    /// them, and the land replays either way.
    #[test]
    fn a_stopping_land_plays_no_more_of_the_round_in_progress() {
        let acts_in_second_round = |stop_first: bool| {
            let (_dir, live) = live_court();
            live.round().expect("a round");
            let before = live.store_shared().land_len().expect("reads");
            if stop_first {
                // What the round thread would see only after starting the round.
                live.stop_rounds();
            }
            live.round().expect("the court wakes every other tick");
            let acts = acts_sealed_since(&live, before);
            assert_every_being_replays(&live);
            live.stop().expect("stop");
            acts
        };
        assert!(acts_in_second_round(false) > 0, "the second round played no moment: nothing to stop");
        assert_eq!(acts_in_second_round(true), 0, "the stopping land played the round's moments");
    }

    /// A live land's acts are signed on the threads their moments ran on,
    /// together, as a simulation's are: they were all signed on the round's
    /// thread, after their moments, one step's at a time. The land replays.
    #[test]
    fn a_live_lands_acts_are_signed_where_their_moments_ran() {
        let dir = tempfile::tempdir().expect("folder");
        let options = crate::engine::EngineOptions { threads: 2, ..court_options(dir.path()) };
        let live = LiveLand::new(Engine::plant(&court_fixture(), &options).expect("plant")).expect("live");
        let before = live.store_shared().land_len().expect("reads");
        for _ in 0..4 {
            live.round().expect("a round");
        }
        let acts = acts_sealed_since(&live, before) as u64;
        assert!(acts > 0, "the court's rounds sealed no act");
        let signed = live.with_engine(|engine| engine.facts_signed()).expect("the engine");
        assert_eq!(signed.ahead, acts, "acts signed where their moments ran ({signed:?})");
        assert_every_being_replays(&live);
        live.stop().expect("stop");
    }

    /// The acts the land sealed from land seq `from` on.
    fn acts_sealed_since(live: &LiveLand, from: u64) -> usize {
        let store = live.store_shared();
        let read = store.land_log_with_envelopes(from, store.land_len().expect("reads")).expect("reads");
        let is_act = |envelope: &[u8]| {
            crate::fact::Fact::peek_kind_and_body(envelope)
                .is_some_and(|(kind, _)| kind == crate::world::body::KIND_ACT)
        };
        read.iter().filter(|(_, envelope)| is_act(envelope)).count()
    }

    fn assert_every_being_replays(live: &LiveLand) {
        let store = live.store_shared();
        for being in store.beings().expect("beings") {
            let definitions = crate::replay::ReplayDefinitions::recorded(&*store, Some(live.substrate()));
            let options = crate::replay::ReplayOptions::default();
            let replayer = crate::replay::Replayer::with_definitions(&*store, definitions, being, options);
            let report = replayer.expect("replayer").run().expect("replays");
            assert!(report.clean(), "{}: {:?} {:?}", report.name, report.divergences, report.problems);
        }
    }

    /// The world where a land's first act opened is kept as the land opens
    /// again, and replays (which may also leave their own whole worlds)
    /// report what a replay folding from genesis reports.
    #[test]
    fn a_reopened_land_keeps_the_world_at_its_first_act_for_replays() {
        // Folding from genesis, the opening keeps it; from a vouched
        // snapshot past it, the warm-up folds it.
        check_kept_for_replays(false);
        check_kept_for_replays(true);
    }

    fn check_kept_for_replays(vouched_snapshot_at_the_end: bool) {
        let (dir, live) = live_court();
        // Planted, nothing acted: nothing to keep.
        for _ in 0..4 {
            live.round().expect("a round");
        }
        live.stop().expect("stop");
        assert_eq!(live.replay_worlds_kept(), Vec::<u64>::new(), "kept a world on a land where nothing had acted");
        drop(live);
        let what = format!("a vouched snapshot at the end: {vouched_snapshot_at_the_end}");
        if vouched_snapshot_at_the_end {
            let land = crate::land::Land::open(&dir.path().join("land")).expect("open");
            let world = crate::engine::world_at_end(&land).expect("folds");
            let land_len = world.cursor;
            crate::snapshots::begin_snapshot(&land, world, 4096).expect("begins").wait().expect("writes");
            let vouched = crate::snapshots::vouch(&land, land_len).expect("vouches");
            assert_eq!(vouched.vouched, vec![land_len], "{what}");
            land.close().expect("close");
        }
        let engine = Engine::reopen(&court_fixture(), &court_options(dir.path())).expect("open again");
        let store = engine.land.shared_store();
        let first = crate::replay::kept_worlds::first_act(&*store).expect("reads").expect("an act");
        let opened_at = store.fact_at(&first).expect("reads").expect("held").fact.body_as::<crate::world::ActBody>();
        let opened_at = opened_at.expect("an act").cursor;
        let land_len = store.land_len().expect("reads");
        let (kept_at_open, known_at_open) = match vouched_snapshot_at_the_end {
            false => (vec![opened_at], land_len),
            true => (vec![], 0),
        };
        assert_eq!(engine.kept_for_replays.cursors(), kept_at_open, "{what}: kept as the land opened");
        assert_eq!(engine.kept_for_replays.passable_known(), known_at_open, "{what}: learnt as the land opened");
        let live = LiveLand::new(engine).expect("live");
        let warming = live.warming_replays.lock().unwrap_or_else(|p| p.into_inner()).take().expect("warming");
        warming.join().expect("the warm-up thread does not panic");
        assert_eq!(live.replay_worlds_kept(), vec![opened_at], "{what}");
        assert_eq!(live.replay_passable_known(), land_len, "{what}: the whole log is known");
        // The same as a replay's own fold keeps, and reading the log learns.
        let folded = crate::replay::KeptWorlds::new();
        let definitions = crate::replay::ReplayDefinitions::recorded(&*store, Some(live.substrate()));
        crate::replay::kept_worlds::keep_world_at_first_act(&*store, definitions, &folded).expect("replays");
        crate::replay::kept_worlds::learn_passable_facts(&*store, &folded).expect("reads");
        let world_at = |kept: &crate::replay::KeptWorlds| kept.latest_at_or_before(opened_at).expect("kept").1;
        assert!(world_at(&live.kept_worlds) == world_at(&folded), "{what}: not the world a replay's fold keeps");
        assert_eq!(live.kept_worlds.passable(0, land_len), folded.passable(0, land_len), "{what}");
        let replays_agree = || {
            for being in store.beings().expect("beings") {
                let options = crate::replay::ReplayOptions::default();
                let kept = live.replay_being(being, options).expect("replays");
                let definitions = crate::replay::ReplayDefinitions::recorded(&*store, Some(live.substrate()));
                let folded = crate::replay::Replayer::with_definitions(&*store, definitions, being, options)
                    .expect("replayer")
                    .run()
                    .expect("replays");
                assert_eq!(kept, folded, "{}: starting from the kept world changed the report", folded.name);
            }
        };
        replays_agree();
        // What later rounds seal is learnt after each (the round thread does it).
        for _ in 0..4 {
            live.round().expect("a round");
        }
        live.learn_what_replays_pass_over();
        assert_eq!(live.replay_passable_known(), store.land_len().expect("reads"), "the new rounds were not learnt");
        replays_agree();
        live.stop().expect("stop");
    }

    #[test]
    fn readers_never_wait_for_the_writers_lock() {
        let (_dir, live) = live_court();
        live.round().expect("a round");
        live.round().expect("a second round: the court wakes every other tick");
        let (holding_sender, holding) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let writer = {
            let live = live.clone();
            std::thread::spawn(move || {
                live.with_engine(|_| {
                    holding_sender.send(()).expect("tell");
                    released.recv().expect("wait to be released");
                })
            })
        };
        holding.recv().expect("the writer holds the lock");
        // What every page and /api/v1/moments read, asked while a step holds
        // the lock: each must answer without it (a bounded wait, not a timing).
        let (answered_sender, answered) = mpsc::channel();
        let reader = live.clone();
        std::thread::spawn(move || {
            let traces = reader.recent_traces(10, |_| true).len();
            let cursor = reader.world().cursor;
            let running = reader.running().len();
            let _ = answered_sender.send((traces, cursor, running));
        });
        let answer = answered.recv_timeout(Duration::from_secs(30));
        release.send(()).expect("release");
        writer.join().expect("writer");
        let (traces, cursor, _) = answer.expect("the readers answered while the writer's lock was held");
        assert!(traces > 0 && cursor > 0, "the published traces and world are the round's");
        live.stop().expect("stop");
    }
}
