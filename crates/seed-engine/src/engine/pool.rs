//! A simulation served by a pool of worker processes (`seed sim --workers`,
//! `seed worker`): the land on PostgreSQL, its wakes in the store's wake
//! queue (`store::work`).
//!
//! The **driver** (`seed sim`) keeps what a round decides once: it seals the
//! tick's scripted events, asks its scheduler who wakes, and opens the round
//! in the queue with the cursor and time every moment of it shares. It
//! writes no act.
//!
//! **Workers** claim wakes (a lease and a fencing epoch per being), run
//! their moments on the world at the round's cursor, and seal them at their
//! turn: a worker seals a run of the wakes it holds starting at the round's
//! turn, after folding the land's tail, so each act is re-checked against
//! the world the earlier wakes of the round left, exactly as one process
//! seals a round in being-id order. The run's facts, the wakes' results and
//! the turn's move commit together, fenced: a worker whose lease moved
//! seals nothing.
//!
//! As the round's turn moves, the driver reads the sealed results in index
//! order, folds the round's facts wake by wake and tells its
//! scheduler what each moment saw, so the next round wakes the same beings
//! as a single process would. Same fixture and seed: the same facts, byte
//! for byte, for any number of workers.

use super::sealing::Sealing;
use super::{fold_to_end, world_at_end, world_before, Engine, EngineError, EngineOptions, FailureExample, RunSummary};
use crate::canonical;
use crate::clock::{Clock, LogicalClock};
use crate::fact::{BeingId, Hash32};
use crate::land::{KeySource, Land, LandError};
use crate::limits::Limits;
use crate::moment::{MomentTrace, Outcome};
use crate::store::work::{Claim, QueuedWake, Round, RunState, SealTurn, WakeQueue};
use crate::store::StoreError;
use crate::world::{Wake, World};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The fewest wakes a worker claims at once (fewer when fewer are free).
pub const WORKER_CLAIM_WAKES_MIN: usize = 32;
/// The most wakes a worker claims at once.
pub const WORKER_CLAIM_WAKES_MAX: usize = 1024;
/// A round is dealt out in at least about this many claims, so that many
/// workers can share it; each claim is sealed as one turn, at one commit's
/// cost. With more workers than that can keep busy, a round is dealt out
/// in [`WORKER_HELD_CLAIMS_MAX`] claims a worker ([`claim_wakes_for`]).
pub const POOL_CLAIMS_PER_ROUND: usize = 8;
/// Claims a worker holds at once (computed, waiting for their turn).
pub const WORKER_HELD_CLAIMS_MAX: usize = 2;
/// How long a claim holds without renewal (the database's clock).
pub const WORKER_LEASE_MS_DEFAULT: u64 = 5_000;
/// The longest wait for news before a pool process looks again.
pub const POOL_WAIT_MS: u64 = 200;

/// The identity every process of a pool must share: the fixture's world
/// (name, clock, roles, beings, every definition file it loaded) and the
/// seed its keys derive from.
pub fn run_digest(fixture: &super::fixture::Fixture, seed: u64, engine: &Engine) -> Hash32 {
    let mut hasher = blake3::Hasher::new_derive_key("seed pool run v1");
    hasher.update(fixture.name.as_bytes());
    hasher.update(&seed.to_be_bytes());
    hasher.update(&fixture.start_ms.to_be_bytes());
    hasher.update(&fixture.tick_ms.to_be_bytes());
    for role in engine.substrate.roles.iter() {
        hasher.update(role.name.as_bytes());
        hasher.update(role.digest.as_bytes());
    }
    for script in engine.script_files.keys() {
        hasher.update(script.as_bytes());
    }
    // Every file the world loaded (operations, see-resolvers, hooks and
    // cascade handlers too: docs/definitions.md).
    hasher.update(engine.definitions_digest.as_bytes());
    Hash32(*hasher.finalize().as_bytes())
}

/// What one moment added to a run's summary, as a worker hands it back.
#[derive(Debug, Default, Serialize, Deserialize)]
struct MomentCounts {
    moments: u64,
    acts: BTreeMap<String, u64>,
    sees: u64,
    failures: u64,
    failure_reasons: BTreeMap<String, u64>,
    /// kind → (being, tick, reason, script)
    failure_examples: BTreeMap<String, (String, u64, String, Option<String>)>,
    llm: [u64; 4],
}

impl MomentCounts {
    fn of(summary: &RunSummary) -> MomentCounts {
        MomentCounts {
            moments: summary.moments,
            acts: summary.acts.clone(),
            sees: summary.sees,
            failures: summary.failures,
            failure_reasons: summary.failure_reasons.clone(),
            failure_examples: summary
                .failure_examples
                .iter()
                .map(|(kind, e)| (kind.clone(), (e.being.clone(), e.tick, e.reason.clone(), e.script.clone())))
                .collect(),
            llm: [summary.llm_calls, summary.llm_prompt_tokens, summary.llm_completion_tokens, summary.llm_cost_micros],
        }
    }

    /// Adds these counts to `summary`; an example already there (an
    /// earlier wake's, in sealing order) stays.
    fn add_to(self, summary: &mut RunSummary) {
        summary.moments += self.moments;
        for (verb, count) in self.acts {
            *summary.acts.entry(verb).or_default() += count;
        }
        summary.sees += self.sees;
        summary.failures += self.failures;
        for (kind, count) in self.failure_reasons {
            *summary.failure_reasons.entry(kind).or_default() += count;
        }
        for (kind, (being, tick, reason, script)) in self.failure_examples {
            summary.failure_examples.entry(kind).or_insert(FailureExample { being, tick, reason, script });
        }
        summary.llm_calls += self.llm[0];
        summary.llm_prompt_tokens += self.llm[1];
        summary.llm_completion_tokens += self.llm[2];
        summary.llm_cost_micros += self.llm[3];
    }
}

/// A sealed wake's result in the queue (JSON: it feeds no fact or digest).
#[derive(Debug, Serialize, Deserialize)]
struct WakeResult {
    /// The land seq after this wake's facts: the driver folds to it.
    facts_end: u64,
    /// The act asked for the being to continue next round.
    continuing: bool,
    counts: MomentCounts,
    /// The moment trace line, with the worker and its epoch (null when the
    /// driver writes no trace).
    trace: Json,
}

fn result_error(reason: impl std::fmt::Display) -> EngineError {
    EngineError::Internal(format!("a wake result in the queue is unreadable: {reason}"))
}

/// How many wakes a worker claims at once in a round of `wakes` served by
/// `workers` (those of the round before: `WakeQueue::workers_before`). A
/// round is dealt out in [`POOL_CLAIMS_PER_ROUND`] claims, or in as many as
/// its workers hold at once if that is more: with a fixed eighth, a round
/// of 10,000 wakes was ten claims, and an eleventh worker had no work in
/// it however slow its moments (docs/scale.md, "Slow moments").
fn claim_wakes_for(wakes: u64, workers: u64) -> usize {
    let claims = workers.saturating_mul(WORKER_HELD_CLAIMS_MAX as u64).max(POOL_CLAIMS_PER_ROUND as u64);
    let share = usize::try_from(wakes / claims).unwrap_or(usize::MAX);
    share.clamp(WORKER_CLAIM_WAKES_MIN, WORKER_CLAIM_WAKES_MAX)
}

/// A claimed wake whose moment was computed, waiting for its turn.
struct Held {
    claim: Claim,
    outcome: Outcome,
    trace: MomentTrace,
    /// Its act, signed while the claim's moments ran (`WriterHandle::presign`):
    /// the turn takes the signature if it prepares the same fact.
    presigned: Option<crate::land::Presigned>,
}

/// A turn a worker sent, committing while it computes its next claim.
struct SentTurn {
    pending: crate::land::PendingTurn,
    /// The land seq each fact was folded at: the commit must agree.
    expected: Vec<u64>,
    /// Its key rotations, finished once it commits.
    sealing: Sealing,
    moments: u64,
}

/// What a worker did, for its exit line and the tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WorkerReport {
    pub moments_sealed: u64,
    pub turns_sealed: u64,
    /// Turns refused because a lease moved or another worker sealed first.
    pub turns_lost: u64,
    /// Facts of its sealed turns signed before the turn (off its serial
    /// path), and signed at the turn.
    pub facts_signed_ahead: u64,
    pub facts_signed_at_turn: u64,
}

impl Engine {
    fn wake_queue(&self) -> Result<&dyn WakeQueue, EngineError> {
        self.land.store().wake_queue().ok_or(EngineError::Store(StoreError::NoWakeQueue))
    }

    /// Opens the land a simulation planted, as one worker of its pool.
    pub fn join_pool(fixture: &super::fixture::Fixture, options: &EngineOptions) -> Result<Engine, EngineError> {
        let (checked, files) = super::definitions::check_world_recording(fixture, &[])?;
        let clock = Arc::new(LogicalClock::starting_at(fixture.start_ms));
        let mut land = Land::open_with(&options.land_dir, clock.clone(), Limits::default())?;
        if land.store().wake_queue().is_none() {
            return Err(EngineError::Store(StoreError::NoWakeQueue));
        }
        land.set_key_source(KeySource::Seeded(super::simulation_key_seed(fixture, options.seed)));
        let mut engine = Engine::start(fixture, options, land, clock, checked)?;
        engine.check_definitions_unchanged(&files)?;
        engine.definitions_digest = files.set.digest();
        Ok(engine)
    }

    /// One round with its moments served by the pool: open it in the queue,
    /// wait until every wake is sealed (calling `watch` while waiting: it
    /// stops the wait with an error, when the pool cannot finish), then fold
    /// the round as a single process would have.
    pub(super) fn pooled_round(
        &mut self,
        watch: &mut dyn FnMut() -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        if self.resume_checkpoints {
            self.write_resume_checkpoint()?;
        }
        if self.idle_round_if_tripped() {
            return Ok(());
        }
        let state = self.wake_queue()?.state()?;
        // A resumed driver re-attaching to the round its predecessor opened
        // starts the round at its events, never at the land's end: the
        // round's own facts are the workers', and some may still be sealing.
        let resumed_until = self.catch_up_until;
        if state.round.is_some_and(|round| round.tick == self.tick + 1) {
            self.catch_up_until = self.catch_up_until.max(self.world.cursor + 1);
        }
        let begun = self.begin_round();
        self.catch_up_until = resumed_until;
        let (tick, wakes) = begun?;
        let queued = wakes
            .iter()
            .enumerate()
            .map(|(index, (being, wake))| {
                let wake = canonical::to_canonical_bytes(wake)
                    .map_err(|error| EngineError::Internal(format!("wake: {error}")))?;
                Ok(QueuedWake { index: index as u64, being: *being, wake })
            })
            .collect::<Result<Vec<_>, EngineError>>()?;
        match state.round.filter(|round| round.tick == tick) {
            // A resumed driver finds the round its stopped predecessor
            // opened: the workers go on with it, and it folds the results
            // from the first wake as that driver would have.
            Some(opened) => {
                tracing::info!(
                    tick,
                    sealed = opened.turn,
                    wakes = opened.wakes,
                    "resuming: the round the stopped driver opened goes on; its results are folded from the first wake"
                );
                // The same wakes, being for being and byte for byte: the
                // results are folded as the wakes this driver computed.
                let same_wakes = opened.wakes == wakes.len() as u64 && self.wake_queue()?.wakes(tick)? == queued;
                if !same_wakes || opened.cursor != self.world.cursor {
                    return Err(EngineError::ResumeRoundDiffers {
                        tick,
                        computed_wakes: wakes.len() as u64,
                        computed_cursor: self.world.cursor,
                        queued_wakes: opened.wakes,
                        queued_cursor: opened.cursor,
                    });
                }
            }
            None => {
                // A resumed run asked for more rounds than it first played:
                // its finished run is started again (the same digest).
                if matches!(state.run, RunState::Finished { .. }) {
                    let digest = run_digest(&self.fixture, self.summary.seed, self);
                    self.wake_queue()?.start_run(digest, self.trace_out.is_some())?;
                }
                self.wake_queue()?.open_round(tick, self.world.cursor, self.clock.now_ms(), &queued)?;
            }
        }
        // The wakes below the turn are sealed for good: they are folded as
        // the turn moves, while the workers seal the rest.
        let mut folded = 0usize;
        loop {
            let round = self.wake_queue()?.state()?.round.filter(|round| round.tick == tick);
            let turn = round.map_or(0, |round| round.turn);
            if turn > folded as u64 {
                folded = self.fold_results(tick, folded, &wakes)?;
            }
            if round.is_some_and(|round| round.is_done()) {
                break;
            }
            watch()?;
            self.wake_queue()?.wait_for_news(POOL_WAIT_MS);
        }
        if folded != wakes.len() {
            return Err(result_error(format!("round {tick} has {folded} results for {} wakes", wakes.len())));
        }
        fold_to_end(self.land.store(), &mut self.world)?;
        self.summary.ticks = tick;
        self.write_snapshot_if_due();
        self.check_health();
        Ok(())
    }

    /// Folds the sealed results of round `tick` from wake `from` on, wake by
    /// wake, as a single process would have (the world to each wake's facts,
    /// births subscribed, what each moment saw told to the scheduler, the
    /// counts and the trace line); returns the next wake to fold.
    fn fold_results(&mut self, tick: u64, from: usize, wakes: &[(BeingId, Wake)]) -> Result<usize, EngineError> {
        let results = self.wake_queue()?.results(tick, from as u64)?;
        let mut decoded = Vec::with_capacity(results.len());
        for (offset, (index, bytes)) in results.into_iter().enumerate() {
            let position = from + offset;
            if index != position as u64 || position >= wakes.len() {
                return Err(result_error(format!("round {tick}: wake {position}'s result is missing")));
            }
            decoded.push(serde_json::from_slice::<WakeResult>(&bytes).map_err(result_error)?);
        }
        // The facts of these wakes, read at once and folded wake by wake.
        let end = decoded.last().map_or(self.world.cursor, |result| result.facts_end);
        let mut facts = std::collections::VecDeque::new();
        super::for_each_land_fact(self.land.store(), self.world.cursor, end, |land_seq, fact| {
            facts.push_back((land_seq, fact))
        })?;
        for (offset, result) in decoded.iter().enumerate() {
            let being = wakes[from + offset].0;
            if result.facts_end > end {
                return Err(result_error(format!(
                    "wake {} ends at land seq {}, past the end of the wakes read with it ({end})",
                    from + offset,
                    result.facts_end
                )));
            }
            let beings_before = self.world.beings.len();
            while let Some((land_seq, fact)) = facts.front().filter(|(land_seq, _)| *land_seq < result.facts_end) {
                self.world.apply(*land_seq, fact);
                facts.pop_front();
            }
            // A birth: the child is subscribed as the round left it. Only a
            // wake that added beings is looked through (a scan per wake
            // would make a round quadratic in the land's beings).
            if self.world.beings.len() != beings_before {
                let unknown: Vec<(BeingId, std::sync::Arc<Json>)> = self
                    .world
                    .beings
                    .iter()
                    .filter(|(id, _)| !self.scheduler.knows(id))
                    .map(|(id, row)| (*id, row.role_flow.clone()))
                    .collect();
                for (child, flow) in unknown {
                    self.scheduler.subscribe(&self.world, child, &flow);
                }
            }
            if result.continuing {
                self.scheduler.continuing.insert(being);
            }
            self.scheduler.saw(&self.world, being);
            if let Some((path, out)) = self.trace_out.as_mut() {
                use std::io::Write;
                writeln!(out, "{}", result.trace)
                    .map_err(|source| EngineError::Trace { path: path.clone(), source })?;
            }
        }
        let next = from + decoded.len();
        for result in decoded {
            result.counts.add_to(&mut self.summary);
        }
        Ok(next)
    }

    /// Serves the pool as worker `worker` until the run finishes (or
    /// `stop` says so): claims, computes, seals at its turns.
    pub fn serve_pool(
        &mut self,
        fixture: &super::fixture::Fixture,
        worker: &str,
        lease_ms: u64,
        stop: &dyn Fn() -> bool,
    ) -> Result<WorkerReport, EngineError> {
        let digest = run_digest(fixture, self.summary.seed, self);
        let mut report = WorkerReport::default();
        let mut held: Vec<Held> = Vec::new();
        let mut held_tick = 0;
        // How many workers served the round before (what claims are sized
        // by), read once a round.
        let mut workers = 0;
        // The first wakes of the claims this worker made in this round and
        // the round before: it claims the same runs again where they are
        // free, so a pool's workers keep meeting the same beings (their
        // writers and heads loaded once, fewer turns handed over).
        let (mut claimed_firsts, mut preferred_firsts): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
        let mut snapshot: Option<(u64, Arc<World>)> = None;
        // The turn this worker sent last, committing while it computes its
        // next claim; its outcome is taken before anything else is decided.
        let mut sending: Option<SentTurn> = None;
        while !stop() {
            if let Some(sent) = sending.take() {
                self.finish_turn(sent, &mut report)?;
            }
            let state = self.wake_queue()?.state()?;
            match state.run {
                RunState::Running { digest: found } | RunState::Finished { digest: found } if found != digest => {
                    return Err(EngineError::OtherRun { expected: digest, found });
                }
                RunState::Finished { .. } => return Ok(report),
                RunState::None => {
                    self.wake_queue()?.wait_for_news(POOL_WAIT_MS);
                    continue;
                }
                RunState::Running { .. } => {}
            }
            let Some(round) = state.round else {
                self.wake_queue()?.wait_for_news(POOL_WAIT_MS);
                continue;
            };
            if round.tick != held_tick {
                held.clear();
                held_tick = round.tick;
                workers = self.wake_queue()?.workers_before(round.tick)?;
                preferred_firsts = std::mem::take(&mut claimed_firsts);
            }
            // Wakes below the turn were sealed by another worker.
            held.retain(|wake| wake.claim.wake.index >= round.turn);
            if round.is_done() {
                self.wake_queue()?.wait_for_news(POOL_WAIT_MS);
                continue;
            }
            // The run of held wakes at the turn (read just now, after the
            // last compute) is sealed; claims start past it: if it is
            // refused, its wakes are sealed by whoever holds them now.
            let run_len = held
                .iter()
                .enumerate()
                .take_while(|(offset, wake)| wake.claim.wake.index == round.turn + *offset as u64)
                .count();
            let run: Vec<Held> = held.drain(..run_len).collect();
            let turn = round.turn + run_len as u64;
            // With room, claim the lowest free wakes; when full and the turn
            // is not ours, only wakes below ours (a dead worker's, whose
            // lease ran out): without them no one's turn would come.
            let claim_wakes = claim_wakes_for(round.wakes, workers);
            let held_max = claim_wakes * WORKER_HELD_CLAIMS_MAX;
            let first_held = held.first().map_or(u64::MAX, |wake| wake.claim.wake.index);
            let (max, below) = match held_max.saturating_sub(held.len()).min(claim_wakes) {
                0 if first_held > turn => (claim_wakes, first_held),
                0 => (0, 0),
                room => (room, u64::MAX),
            };
            // The claim goes to the database first, so it is answered while
            // the run is decided and signed.
            let claiming = (max > 0)
                .then(|| {
                    let prefer = &preferred_firsts;
                    self.wake_queue().map(|queue| queue.claim(worker, round.tick, turn..below, max, lease_ms, prefer))
                })
                .transpose()?;
            let mut progressed = false;
            if !run.is_empty() {
                sending = Some(self.send_run(&round, worker, state.traced, run)?);
                progressed = true;
            }
            if let Some(claiming) = claiming {
                let claims = claiming.wait()?;
                if let Some(first) = claims.first() {
                    claimed_firsts.push(first.wake.index);
                    let world = self.world_for_round(&round, &mut snapshot)?;
                    held.extend(self.compute(&world, claims, round.now_ms)?);
                    held.sort_by_key(|wake| wake.claim.wake.index);
                    progressed = true;
                }
            }
            if !progressed {
                if !held.is_empty() {
                    self.wake_queue()?.renew(worker, round.tick, lease_ms)?;
                }
                // Waiting for its turn, a worker folds the turns sealed
                // meanwhile, so its own turn folds only the last few: every
                // worker folds every fact of a round, and done at the turn
                // that work is serial, a cost each added worker adds to the
                // whole pool's round. Only once its moments have the world
                // at the round's cursor: folded past it first, that world
                // would have to be folded again from the start.
                if snapshot.as_ref().is_some_and(|(tick, _)| *tick == round.tick) {
                    self.fold_others_until(self.land.store().land_len()?)?;
                }
                self.wake_queue()?.wait_for_news(POOL_WAIT_MS);
            }
        }
        if let Some(sent) = sending.take() {
            self.finish_turn(sent, &mut report)?;
        }
        Ok(report)
    }

    /// The world at `round`'s cursor, which every moment of it reads.
    fn world_for_round(
        &mut self,
        round: &Round,
        snapshot: &mut Option<(u64, Arc<World>)>,
    ) -> Result<Arc<World>, EngineError> {
        if let Some((_, world)) = snapshot.as_ref().filter(|(tick, _)| *tick == round.tick) {
            return Ok(world.clone());
        }
        if self.world.cursor > round.cursor {
            // Past the cursor (this process sealed part of the round before):
            // folded again from the start or a vouched snapshot.
            self.world = world_before(&self.land, round.cursor)?;
        }
        self.fold_others_until(round.cursor)?;
        let world = Arc::new(self.world.clone());
        *snapshot = Some((round.tick, world.clone()));
        Ok(world)
    }

    /// Folds the land's facts up to `end` into the worker's world and moves
    /// the writer of each being they touch past them: this process's own
    /// facts are in its world already, so these were sealed by another
    /// process and a head this one keeps for that being is behind. Moved
    /// along, each writer is at its reel's head without asking the store
    /// for it or deriving its key again (with two workers, half of each
    /// turn's beings were the other's last); one the facts do not simply
    /// extend is forgotten and reloads. The store is shown them too: its
    /// committer's kept heads follow them the same way
    /// (`Land::follow_facts_sealed_elsewhere`).
    fn fold_others_until(&mut self, end: u64) -> Result<(), EngineError> {
        let (world, land) = (&mut self.world, &self.land);
        super::for_each_land_chunk(land.store(), world.cursor, end, |facts| {
            land.follow_facts_sealed_elsewhere(&facts);
            for (land_seq, fact) in &facts {
                world.apply(*land_seq, fact);
            }
        })
    }

    /// Runs the claimed wakes' moments on `world`, on the engine's threads.
    fn compute(&mut self, world: &Arc<World>, claims: Vec<Claim>, now_ms: u64) -> Result<Vec<Held>, EngineError> {
        let mut wakes = Vec::with_capacity(claims.len());
        for claim in &claims {
            let wake: Wake = canonical::from_canonical_bytes(&claim.wake.wake)
                .map_err(|error| result_error(format!("wake {}: {error}", claim.wake.index)))?;
            wakes.push((claim.wake.being, wake));
        }
        let wakes = Arc::new(wakes);
        // A claim is a bounded batch, every result of which is kept: no window.
        let window = Arc::new(super::moment_window::MomentWindow::new(wakes.len().max(1)));
        // Each act is signed ahead where it is computed, while other workers
        // have their turns: signing leaves this worker's turn, the pool's
        // serial path (docs/scale.md). A writer that does not load is left
        // to the turn, which says why.
        let beings: Vec<BeingId> = wakes.iter().map(|(being, _)| *being).collect();
        let writers = Arc::new(self.land.plain_writer_handles(&beings, self.threads.max(1)));
        // The driver may ask for the traces (`--trace`): always explained.
        let receiver = self.spawn_moments(world, &wakes, &window, now_ms, writers, true);
        let mut computed: Vec<Option<super::Computed>> = (0..wakes.len()).map(|_| None).collect();
        let mut received = 0;
        while received < wakes.len() {
            let sent = receiver.recv().map_err(|_| EngineError::Internal("a moment task stopped early".into()))?;
            received += sent.len();
            for (index, result) in sent {
                computed[index] = Some(result);
            }
        }
        Ok(claims
            .into_iter()
            .zip(computed)
            .filter_map(|(claim, computed)| {
                computed.map(|super::Computed { outcome, trace, presigned }| Held { claim, outcome, trace, presigned })
            })
            .collect())
    }

    /// Decides, signs and sends a run of held wakes starting at the round's
    /// turn, as one fenced turn.
    fn send_run(&mut self, round: &Round, worker: &str, traced: bool, run: Vec<Held>) -> Result<SentTurn, EngineError> {
        let beings: Vec<BeingId> = run.iter().map(|wake| wake.claim.wake.being).collect();
        self.fold_others_until(self.land.store().land_len()?)?;
        self.land.load_writers(&beings, self.threads.max(1))?;
        self.clock.advance_to(round.now_ms);
        let first = run[0].claim.wake.index;
        let moments = run.len() as u64;
        let mut sealing = Sealing::holding(self.world.cursor, self.threads.max(1));
        let decided = self.decide_run(round.tick, worker, traced, run, &mut sealing);
        match decided {
            Ok(results) => {
                sealing.flush(&self.land);
                let held = sealing.take_held();
                let expected: Vec<u64> = held.iter().map(|(land_seq, _)| *land_seq).collect();
                let signed = held.into_iter().map(|(_, fact)| fact).collect();
                let turn = SealTurn { worker: worker.to_string(), tick: round.tick, first, sealed: results };
                match self.land.submit_turn(signed, turn) {
                    Ok(pending) => Ok(SentTurn { pending, expected, sealing, moments }),
                    Err(error) => {
                        self.forget_turn(&mut sealing)?;
                        Err(error.into())
                    }
                }
            }
            Err(error) => {
                self.forget_turn(&mut sealing)?;
                Err(error)
            }
        }
    }

    /// Waits for a sent turn's outcome. A refused turn is not an error: its
    /// wakes were sealed by whoever holds them now, and this worker goes on
    /// from what the land holds.
    fn finish_turn(&mut self, sent: SentTurn, report: &mut WorkerReport) -> Result<(), EngineError> {
        let SentTurn { pending, expected, mut sealing, moments } = sent;
        match pending.wait() {
            Ok(sealed) => {
                if let Some((fact, want)) = sealed.iter().zip(&expected).find(|(fact, want)| fact.land_seq != **want) {
                    return Err(EngineError::Internal(format!(
                        "land seq {} sealed where {want} was folded",
                        fact.land_seq
                    )));
                }
                for (being, key) in std::mem::take(&mut sealing.rotations) {
                    self.land.finish_rotation(&being, key)?;
                }
                for (actor, call, seed) in std::mem::take(&mut self.sealed_calls) {
                    self.substrate.hooks.after(&actor, &call, &self.world, seed);
                }
                report.turns_sealed += 1;
                report.moments_sealed += moments;
                report.facts_signed_ahead += sealing.signed_ahead;
                report.facts_signed_at_turn += sealing.signed_here;
                Ok(())
            }
            Err(LandError::Store(StoreError::Fenced { tick, first, reason })) => {
                tracing::info!(tick, first, %reason, "turn lost: another worker holds these wakes now");
                report.turns_lost += 1;
                self.forget_turn(&mut sealing)
            }
            Err(error) => {
                self.forget_turn(&mut sealing)?;
                Err(error.into())
            }
        }
    }

    /// Decides each held wake of a run against the world as the earlier
    /// ones left it, and gives each its result for the queue.
    fn decide_run(
        &mut self,
        tick: u64,
        worker: &str,
        traced: bool,
        run: Vec<Held>,
        sealing: &mut Sealing,
    ) -> Result<Vec<(u64, Vec<u8>)>, EngineError> {
        let mut results = Vec::with_capacity(run.len());
        // A trace line is built only for a driver that writes one.
        self.pool_traces = traced.then(Vec::new);
        for Held { claim, outcome, trace, presigned } in run {
            let being = claim.wake.being;
            let before = std::mem::take(&mut self.summary);
            let decided = self.seal_outcome(tick, being, outcome, trace, presigned, sealing);
            let counts = std::mem::replace(&mut self.summary, before);
            decided?;
            let continuing = self.scheduler.continuing.remove(&being);
            let trace = match self.pool_traces.as_mut().and_then(Vec::pop) {
                Some(mut trace) => {
                    trace["worker"] = Json::from(worker);
                    trace["epoch"] = Json::from(claim.epoch);
                    trace
                }
                // The driver writes no trace: the result stays small.
                None => Json::Null,
            };
            let result =
                WakeResult { facts_end: sealing.next_land_seq, continuing, counts: MomentCounts::of(&counts), trace };
            let bytes = serde_json::to_vec(&result).map_err(result_error)?;
            results.push((claim.epoch, bytes));
        }
        Ok(results)
    }

    /// After a turn that did not seal: drop its staged keys, let every
    /// writer reload, and fold the world again from what the land holds.
    fn forget_turn(&mut self, sealing: &mut Sealing) -> Result<(), EngineError> {
        for (being, _) in std::mem::take(&mut sealing.rotations) {
            self.land.abandon_rotation(&being)?;
        }
        self.sealed_calls.clear();
        self.land.reload_writers();
        self.world = world_at_end(&self.land)?;
        Ok(())
    }
}

/// The driver of a pooled simulation, a round at a time: plants the land
/// and starts the run in its wake queue; each round is served by the
/// workers (`simulate_pooled` loops it; the pool benchmark times it).
pub struct PoolDriver {
    engine: Engine,
}

impl PoolDriver {
    pub fn plant(fixture: &super::fixture::Fixture, options: &EngineOptions) -> Result<PoolDriver, EngineError> {
        let engine = Engine::plant(fixture, options)?;
        let digest = run_digest(fixture, options.seed, &engine);
        let traced = engine.trace_out.is_some();
        engine.wake_queue()?.start_run(digest, traced)?;
        Ok(PoolDriver { engine })
    }

    /// A driver that writes a resume checkpoint before each round (`seed sim
    /// --land … --workers`): a killed driver is resumed with [`PoolDriver::resume`].
    pub fn keep_resume_checkpoints(&mut self) {
        self.engine.keep_resume_checkpoints();
    }

    /// Takes over the run whose driver stopped in `options.land_dir`, from
    /// its resume checkpoint (`Engine::resume`'s checks, and the wake queue
    /// must hold this run): the round it stopped in is the one the queue
    /// holds, if it was opened, and its results are folded from the first.
    pub fn resume(fixture: &super::fixture::Fixture, options: &EngineOptions) -> Result<PoolDriver, EngineError> {
        let engine = Engine::resume(fixture, options)?;
        let digest = run_digest(fixture, options.seed, &engine);
        match engine.wake_queue()?.state()?.run {
            RunState::None => return Err(EngineError::NoPoolRunToResume),
            RunState::Running { digest: held } | RunState::Finished { digest: held } if held != digest => {
                return Err(EngineError::ResumeOtherRun { expected: digest, found: held })
            }
            RunState::Running { .. } | RunState::Finished { .. } => {}
        }
        Ok(PoolDriver { engine })
    }

    /// The rounds the run has played.
    pub fn tick(&self) -> u64 {
        self.engine.tick
    }

    /// One round: opened in the queue, waited for (`watch` is called while
    /// waiting; its error stops the wait), folded.
    pub fn round(&mut self, watch: &mut dyn FnMut() -> Result<(), EngineError>) -> Result<(), EngineError> {
        self.engine.pooled_round(watch)
    }

    /// Marks the run finished (its workers exit) and closes the land.
    pub fn finish(mut self, started: std::time::Instant) -> Result<RunSummary, EngineError> {
        self.engine.wake_queue()?.finish_run()?;
        self.engine.summary.elapsed_ms = started.elapsed().as_millis() as u64;
        self.engine.finish()
    }
}

/// Plants the fixture and runs it with its moments served by a pool of
/// workers (`seed worker`): the driver's side. `watch` is called while a
/// round waits; its error stops the run (the workers it started died).
pub fn simulate_pooled(
    fixture: &super::fixture::Fixture,
    options: &EngineOptions,
    watch: &mut dyn FnMut() -> Result<(), EngineError>,
) -> Result<RunSummary, EngineError> {
    play_pooled(PoolDriver::plant(fixture, options)?, fixture, options, watch)
}

/// [`simulate_pooled`] writing a resume checkpoint before each round, so a
/// killed driver is finished by [`resume_pooled`].
pub fn simulate_pooled_resumably(
    fixture: &super::fixture::Fixture,
    options: &EngineOptions,
    watch: &mut dyn FnMut() -> Result<(), EngineError>,
) -> Result<RunSummary, EngineError> {
    let mut driver = PoolDriver::plant(fixture, options)?;
    driver.keep_resume_checkpoints();
    play_pooled(driver, fixture, options, watch)
}

/// Finishes the pooled run whose driver stopped in `options.land_dir`
/// (`seed sim --resume --workers N`, or `--pool`): the rounds from its
/// checkpoint to the run's last, served by the pool, ending with the world
/// hash an uninterrupted run has.
pub fn resume_pooled(
    fixture: &super::fixture::Fixture,
    options: &EngineOptions,
    watch: &mut dyn FnMut() -> Result<(), EngineError>,
) -> Result<RunSummary, EngineError> {
    play_pooled(PoolDriver::resume(fixture, options)?, fixture, options, watch)
}

/// Plays a driver's rounds until the run's last tick, then finishes.
fn play_pooled(
    mut driver: PoolDriver,
    fixture: &super::fixture::Fixture,
    options: &EngineOptions,
    watch: &mut dyn FnMut() -> Result<(), EngineError>,
) -> Result<RunSummary, EngineError> {
    let ticks = options.ticks.unwrap_or(fixture.ticks);
    let progress = &options.progress;
    progress.stage("running rounds", ticks.saturating_sub(driver.tick()), "rounds");
    // The wall clock measures the run for the summary only; no fact sees it.
    let started = std::time::Instant::now();
    while driver.tick() < ticks {
        driver.round(watch)?;
        progress.advance(1);
    }
    driver.finish(started)
}

#[cfg(test)]
mod tests {
    use super::claim_wakes_for;

    fn check(wakes: u64, workers: u64, expected: usize) {
        assert_eq!(claim_wakes_for(wakes, workers), expected, "{wakes} wakes, {workers} workers");
    }

    /// Up to four workers a round is dealt out in eighths (as before
    /// claims were sized from the workers); past that, in two claims a
    /// worker, so 128 workers each find work in a round of 10,000 wakes.
    #[test]
    fn claims_are_sized_from_the_workers_of_the_round_before() {
        for (wakes, workers, expected) in [
            (10_000, 0, 1024),
            (10_000, 1, 1024),
            (10_000, 4, 1024),
            (20_000, 4, 1024),
            (6_000, 4, 750),
            (10_000, 8, 625),
            (10_000, 32, 156),
            (10_000, 128, 39),
            (10_000, 1_000, 32),
            (100, 2, 32),
            (0, 0, 32),
            (1_000_000, 128, 1024),
            (u64::MAX, u64::MAX, 32),
        ] {
            check(wakes, workers, expected);
        }
    }
}
