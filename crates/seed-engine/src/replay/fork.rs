//! What-if forks: the world as it stood at one moment, copied into a sandbox,
//! changed (another roleFlow, other role definitions, another script), and
//! run forward; then the branch is compared with the original, moment by
//! moment.
//!
//! A simulated land is a pure function of its fixture, seed and build, so
//! the sandbox is made by re-running the fixture up to the round before the
//! fork and checking that every fact it sealed is the original's, byte for
//! byte (same ids at the same land seqs). That copies the world and the
//! scheduler's state exactly (which summons were delivered, which signals
//! each being has seen), which copying facts alone could not. Two sandboxes
//! then run on: the control, unchanged (checked against the original's facts
//! as far as the original goes), and the branch, with the change sealed as a
//! world fact before the fork's round. The diff pairs their moments by tick
//! and being. The original land is only read.

use crate::engine::fixture::Fixture;
use crate::engine::{Engine, EngineError, EngineOptions, MomentRecord};
use crate::fact::{BeingId, FactId, Hash32};
use crate::moment::Substrate;
use crate::roles::RoleFlow;
use crate::store::{LandEntry, Store, StoreError};
use crate::world::body::KIND_ACT;
use crate::world::Effect;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Most rounds a fork runs past its fork point.
pub const FORK_TICKS_MAX: u64 = 100_000;

#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Sim(#[from] EngineError),
    #[error("@{name} has no fact at seq {seq} (its reel ends at seq {last})")]
    NoSuchFact { name: String, seq: u64, last: u64 },
    #[error("seq {seq} of @{name} is a {kind} fact, not a moment; its moments are at seqs {moments}")]
    NotAMoment { name: String, seq: u64, kind: String, moments: String },
    #[error(
        "the act at seq {seq} was sealed at {time_ms} ms, which is no round of fixture {fixture} \
         (start {start_ms} ms, a round every {tick_ms} ms): was this land simulated from another fixture?"
    )]
    NotARound { seq: u64, time_ms: u64, fixture: String, start_ms: u64, tick_ms: u64 },
    #[error(
        "the fixture does not reproduce this land: at land seq {land_seq} it seals {sandbox} where the land \
         holds {original} (did the fixture's definitions or the seed change since the land was simulated?)"
    )]
    PrefixDiffers { land_seq: u64, original: String, sandbox: String },
    #[error("--ticks {ticks} is out of range: a fork runs 1 to {FORK_TICKS_MAX} rounds")]
    Ticks { ticks: u64 },
    #[error("--flow: {reason}")]
    Flow { reason: String },
}

/// What to fork, where, and what to change.
pub struct ForkRequest<'a> {
    /// The fixture the original land was simulated from, and its seed.
    pub fixture: &'a Fixture,
    pub seed: u64,
    pub being: BeingId,
    /// The reel seq of the act whose moment the branch starts at.
    pub at_seq: u64,
    /// The branch's definitions (the original's, or with other role folders).
    pub branch_substrate: Substrate,
    /// The files the branch's definitions were loaded from: sealed in the
    /// branch before the fork's round when they are not the set in force
    /// there (other role folders), so a kept branch replays with them.
    pub branch_files: Option<crate::definitions::DefinitionFiles>,
    /// A new roleFlow for the being (a JSON array of clauses).
    pub flow: Option<Json>,
    /// A new Rhai script for the being (its source).
    pub script: Option<String>,
    /// Rounds to run from the fork's round on (default: to the original's last round).
    pub ticks: Option<u64>,
    /// Where the branch land is planted (kept by the caller, or a temporary folder).
    pub branch_dir: PathBuf,
    pub threads: usize,
}

/// One moment of a being in the control run and in the branch.
#[derive(Debug, Clone, PartialEq)]
pub struct MomentComparison {
    pub tick: u64,
    pub being: BeingId,
    pub name: String,
    /// `None`: the being had no moment at this tick on that side.
    pub original: Option<MomentRecord>,
    pub branch: Option<MomentRecord>,
}

impl MomentComparison {
    fn roles(record: &Option<MomentRecord>) -> Option<(&Option<String>, &Vec<String>)> {
        record.as_ref().map(|record| (&record.primary, &record.stack))
    }

    fn act(record: &Option<MomentRecord>) -> Option<(&String, &Option<Json>, &Option<String>)> {
        record.as_ref().map(|record| (&record.outcome, &record.call, &record.content))
    }

    /// The role stack worn differs (or only one side had the moment).
    pub fn roles_changed(&self) -> bool {
        Self::roles(&self.original) != Self::roles(&self.branch)
    }

    /// The outcome, verb call or prose differs (or only one side had the moment).
    pub fn act_changed(&self) -> bool {
        Self::act(&self.original) != Self::act(&self.branch)
    }

    pub fn changed(&self) -> bool {
        self.roles_changed() || self.act_changed()
    }

    pub fn to_json(&self) -> Json {
        let side = |record: &Option<MomentRecord>| match record {
            None => Json::Null,
            Some(record) => json!({
                "wake": record.wake, "primary": record.primary, "stack": record.stack,
                "outcome": record.outcome, "call": record.call, "content": record.content,
            }),
        };
        json!({
            "tick": self.tick, "being": self.name, "rolesChanged": self.roles_changed(),
            "actChanged": self.act_changed(), "original": side(&self.original), "branch": side(&self.branch),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ForkReport {
    pub name: String,
    /// The round of the forked moment; the branch differs from it on.
    pub fork_tick: u64,
    pub last_tick: u64,
    /// Facts of the original the sandbox reproduced byte for byte before the fork.
    pub prefix_facts: u64,
    /// Facts of the original after the fork point that the control reproduced.
    pub control_facts_checked: u64,
    /// Where the control stopped matching the original, if it did (then the
    /// diff is against this build's reading of the original history).
    pub control_differs_at: Option<u64>,
    /// Every moment of the forked being from the fork's round on.
    pub moments: Vec<MomentComparison>,
    /// Moments of other beings that differ (the change's ripples).
    pub others_changed: Vec<MomentComparison>,
    pub control_world_hash: Hash32,
    pub branch_world_hash: Hash32,
}

impl ForkReport {
    pub fn changed_moments(&self) -> impl Iterator<Item = &MomentComparison> {
        self.moments.iter().filter(|moment| moment.changed())
    }
}

/// Forks the world of `original` at the moment `request.at_seq` of `request.being`.
pub fn fork(original: &dyn Store, request: ForkRequest<'_>) -> Result<ForkReport, ForkError> {
    let fixture = request.fixture;
    let stored = original.reel(&request.being, request.at_seq, request.at_seq + 1)?;
    let reel = original.reel(&request.being, 0, u64::MAX)?;
    let name = reel
        .first()
        .and_then(|genesis| genesis.fact.body_as::<crate::fact::body::GenesisBody>().ok())
        .map(|genesis| genesis.name)
        .unwrap_or_else(|| request.being.short());
    let Some(stored) = stored.into_iter().next() else {
        let last = reel.last().map_or(0, |fact| fact.fact.header.seq);
        return Err(ForkError::NoSuchFact { name, seq: request.at_seq, last });
    };
    if stored.fact.kind() != KIND_ACT {
        let moments: Vec<String> = reel
            .iter()
            .filter(|fact| fact.fact.kind() == KIND_ACT)
            .map(|fact| fact.fact.header.seq.to_string())
            .collect();
        let moments = if moments.is_empty() { "(none)".to_string() } else { moments.join(", ") };
        return Err(ForkError::NotAMoment { name, seq: request.at_seq, kind: stored.fact.kind().to_string(), moments });
    }
    let fork_tick = round_of(fixture, request.at_seq, stored.fact.header.stored_time_ms)?;
    let original_len = original.land_len()?;
    let original_last_tick = match original_len.checked_sub(1) {
        Some(last) => last_stored_time(original, last)?.saturating_sub(fixture.start_ms) / fixture.tick_ms.max(1),
        None => fork_tick,
    };
    let ticks = request.ticks.unwrap_or(original_last_tick.saturating_sub(fork_tick) + 1);
    if ticks == 0 || ticks > FORK_TICKS_MAX {
        return Err(ForkError::Ticks { ticks });
    }
    if let Some(flow) = &request.flow {
        let parsed = RoleFlow::from_json(flow).map_err(|error| ForkError::Flow { reason: error.to_string() })?;
        parsed
            .bind(&request.branch_substrate.roles, None)
            .map_err(|error| ForkError::Flow { reason: error.to_string() })?;
    }

    let scratch = tempfile::tempdir().map_err(|error| EngineError::Internal(format!("a scratch folder: {error}")))?;
    let options = |land_dir: PathBuf| EngineOptions {
        snapshot_every_facts: None,
        snapshot_spacing_step_bytes: None,
        store: Default::default(),
        ticks: None,
        seed: request.seed,
        threads: request.threads.max(1),
        land_dir,
        trace_file: None,
        progress: std::sync::Arc::new(crate::progress::NoProgress),
        model: None,
        mode: crate::engine::Mode::Simulation,
    };
    let mut control = Engine::plant(fixture, &options(scratch.path().join("control")))?;
    let mut branch = Engine::plant(fixture, &options(request.branch_dir.clone()))?;
    for _ in 1..fork_tick {
        control.round()?;
        branch.round()?;
    }
    let prefix_facts = branch.land.store().land_len()?;
    if let Some((land_seq, original_fact, sandbox_fact)) =
        first_difference(original, branch.land.store(), 0, prefix_facts.min(original_len))?
    {
        return Err(ForkError::PrefixDiffers { land_seq, original: original_fact, sandbox: sandbox_fact });
    }
    if prefix_facts > original_len {
        return Err(ForkError::PrefixDiffers {
            land_seq: original_len,
            original: "nothing (the land ends there)".into(),
            sandbox: "more facts".into(),
        });
    }

    // The change: other definitions from this round on, and the being's new
    // flow or script sealed as one world fact before the fork's round.
    branch.set_substrate(request.branch_substrate);
    if let Some(files) = &request.branch_files {
        crate::engine::definitions::seal_if_changed(&branch.land, &mut branch.world, files)?;
    }
    let mut change = Vec::new();
    if let Some(flow) = request.flow {
        change.push(Effect::SetRoleFlow { being: name.clone(), flow });
    }
    if let Some(script) = request.script {
        change.push(Effect::SetBeingQuality { being: name.clone(), key: "script".into(), value: Some(json!(script)) });
    }
    branch.seal_change(change)?;

    control.moment_log = Some(Vec::new());
    branch.moment_log = Some(Vec::new());
    for _ in 0..ticks {
        control.round()?;
        branch.round()?;
    }
    let control_len = control.land.store().land_len()?;
    let checked_to = control_len.min(original_len);
    let control_differs_at =
        first_difference(original, control.land.store(), prefix_facts, checked_to)?.map(|(land_seq, _, _)| land_seq);
    let control_facts_checked = control_differs_at.unwrap_or(checked_to).saturating_sub(prefix_facts);

    let control_log = control.moment_log.take().unwrap_or_default();
    let branch_log = branch.moment_log.take().unwrap_or_default();
    let mut paired: BTreeMap<(u64, BeingId), MomentComparison> = BTreeMap::new();
    for (record, is_branch) in
        control_log.into_iter().map(|r| (r, false)).chain(branch_log.into_iter().map(|r| (r, true)))
    {
        let entry = paired.entry((record.tick, record.being)).or_insert_with(|| MomentComparison {
            tick: record.tick,
            being: record.being,
            name: record.name.clone(),
            original: None,
            branch: None,
        });
        if is_branch {
            entry.branch = Some(record);
        } else {
            entry.original = Some(record);
        }
    }
    let (mut moments, mut others_changed) = (Vec::new(), Vec::new());
    for ((_, being), comparison) in paired {
        if being == request.being {
            moments.push(comparison);
        } else if comparison.changed() {
            others_changed.push(comparison);
        }
    }
    let last_tick = control.tick;
    let control_summary = control.finish()?;
    let branch_summary = branch.finish()?;
    Ok(ForkReport {
        name,
        fork_tick,
        last_tick,
        prefix_facts,
        control_facts_checked,
        control_differs_at,
        moments,
        others_changed,
        control_world_hash: control_summary.world_hash,
        branch_world_hash: branch_summary.world_hash,
    })
}

/// The round a fact sealed at `time_ms` belongs to.
fn round_of(fixture: &Fixture, seq: u64, time_ms: u64) -> Result<u64, ForkError> {
    let not_a_round = || ForkError::NotARound {
        seq,
        time_ms,
        fixture: fixture.name.clone(),
        start_ms: fixture.start_ms,
        tick_ms: fixture.tick_ms,
    };
    let since_start = time_ms.checked_sub(fixture.start_ms).ok_or_else(not_a_round)?;
    if fixture.tick_ms == 0 || since_start % fixture.tick_ms != 0 || since_start == 0 {
        return Err(not_a_round());
    }
    Ok(since_start / fixture.tick_ms)
}

fn last_stored_time(store: &dyn Store, land_seq: u64) -> Result<u64, StoreError> {
    let Some(entry) = store.land_log(land_seq, land_seq + 1)?.into_iter().next() else { return Ok(0) };
    Ok(store.fact_at(&entry)?.map_or(0, |stored| stored.fact.header.stored_time_ms))
}

/// The first land seq in `from..to` where the two stores hold different
/// facts, with a description of each.
fn first_difference(
    original: &dyn Store,
    sandbox: &dyn Store,
    from: u64,
    to: u64,
) -> Result<Option<(u64, String, String)>, StoreError> {
    if from >= to {
        return Ok(None);
    }
    let left = original.land_log(from, to)?;
    let right = sandbox.land_log(from, to)?;
    for (left, right) in left.iter().zip(&right) {
        let describe = |store: &dyn Store, entry: &LandEntry| -> Result<(String, Option<FactId>), StoreError> {
            let fact = store.fact_at(entry)?;
            let id = fact.as_ref().map(|stored| stored.fact.id());
            let kind = fact.as_ref().map_or("nothing".to_string(), |stored| stored.fact.kind().to_string());
            let shown = id.map_or("-".to_string(), |id| id.short());
            Ok((format!("fact {shown} (#{} of {}, {kind})", entry.seq, entry.being.short()), id))
        };
        if left.being != right.being || left.seq != right.seq {
            return Ok(Some((left.land_seq, describe(original, left)?.0, describe(sandbox, right)?.0)));
        }
        let (left_text, left_id) = describe(original, left)?;
        let (right_text, right_id) = describe(sandbox, right)?;
        if left_id != right_id {
            return Ok(Some((left.land_seq, left_text, right_text)));
        }
    }
    Ok(None)
}
