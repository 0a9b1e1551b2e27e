//! The committer of one process: it drains the append queue and writes a
//! group as one transaction. In order:
//!
//! 1. take the land's row lock (`SELECT … FROM seed_land FOR UPDATE`): it
//!    is held to COMMIT, so groups of every process commit one at a time;
//! 2. read what the chain rules need for the group, as committed: the heads
//!    of its beings, the names its geneses claim, the facts at seqs it
//!    repeats; heads it wrote itself are kept between groups and trusted
//!    while `seed_land` shows that no other process committed since, and
//!    moved along what others committed where no fork proof was: along
//!    the steps its process read of them already (`followed.rs`), or else
//!    read here where they are few beside the group;
//! 3. decide every append with `chain::judge` (no I/O: the rules see what
//!    step 2 read and what the group staged before it);
//! 4. write the facts (binary COPY), fork proofs and derived rows, move
//!    `next_land_seq`, COMMIT; only then answer the group.
//!
//! A failed write fails the whole group and forgets what was kept: the next
//! group reads everything again.

use super::followed::{follow_read_step, FollowedTail};
use super::{being_of, derive_indexes, pg_error, pool_error, to_i64, to_u64, Runner};
use crate::fact::body::{GenesisBody, KIND_GENESIS};
use crate::fact::{BeingId, Fact, FactId};
use crate::store::chain::{judge, ChainState, HeadStep, StagedChain, Verdict};
use crate::store::crash_points::{self, CrashPoint};
use crate::store::queue::{GroupWriter, Reply};
use crate::store::work::SealTurn;
use crate::store::{Appended, Head, ReindexReport, StoreError};
use deadpool_postgres::Pool;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::Type;

/// What a committer keeps between groups: valid while nobody else wrote.
#[derive(Default)]
struct Kept {
    heads: HashMap<BeingId, Head>,
    forked: HashSet<BeingId>,
    /// `next_land_seq` and the fork proofs written, after this committer's
    /// last commit (`None`: unknown). A group of another process that wrote
    /// only fork proofs moves no land seq, so both are compared.
    written: Option<(u64, u64)>,
}

pub(super) struct Committer {
    runner: Runner,
    pool: Pool,
    kept: Kept,
    /// The runner lease epoch this store's commits are fenced by (0: none;
    /// `store/runner.rs`).
    fence: Arc<AtomicU64>,
    /// What this process read of other processes' commits (`followed.rs`).
    followed: Arc<Mutex<FollowedTail>>,
}

impl Committer {
    pub(super) fn new(
        runner: Runner,
        pool: Pool,
        fence: Arc<AtomicU64>,
        followed: Arc<Mutex<FollowedTail>>,
    ) -> Committer {
        Committer { runner, pool, kept: Kept::default(), fence, followed }
    }
}

/// What the chain rules read from the database for one group.
#[derive(Default)]
struct Read {
    names: HashMap<String, BeingId>,
    stored: HashMap<(BeingId, u64), (FactId, u64)>,
}

/// A fork proof's row: being, seq, rival id, rival envelope.
type ForkRow = (Vec<u8>, i64, Vec<u8>, Vec<u8>);

/// What one group stages before it writes.
#[derive(Default)]
struct Staged {
    chain: StagedChain,
    rows: Vec<(Vec<u8>, i64, i64, Vec<u8>)>,
    keys: Vec<(Vec<u8>, Vec<u8>)>,
    name_rows: Vec<(String, Vec<u8>)>,
    fork_rows: Vec<ForkRow>,
}

struct PgChain<'a> {
    kept: &'a Kept,
    read: &'a Read,
    staged: &'a Staged,
}

impl ChainState for PgChain<'_> {
    fn is_forked(&self, being: &BeingId) -> bool {
        self.kept.forked.contains(being) || self.staged.chain.forked.contains(being)
    }

    fn head(&mut self, being: &BeingId) -> Result<Option<Head>, StoreError> {
        Ok(self.staged.chain.heads.get(being).or_else(|| self.kept.heads.get(being)).copied())
    }

    fn stored_at(&mut self, being: &BeingId, seq: u64) -> Result<Option<(FactId, u64)>, StoreError> {
        Ok(self.staged.chain.facts.get(&(*being, seq)).or_else(|| self.read.stored.get(&(*being, seq))).copied())
    }

    fn name_holder(&mut self, name: &str) -> Result<Option<BeingId>, StoreError> {
        Ok(self.staged.chain.names.get(name).or_else(|| self.read.names.get(name)).copied())
    }
}

/// Reads the heads of `beings` that `kept` does not hold into it.
async fn read_heads(
    transaction: &tokio_postgres::Transaction<'_>,
    kept: &mut Kept,
    beings: &[BeingId],
) -> Result<(), StoreError> {
    let missing: Vec<Vec<u8>> =
        beings.iter().filter(|being| !kept.heads.contains_key(*being)).map(|being| being.as_bytes().to_vec()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let rows = transaction.query(super::HEADS_SQL, &[&missing]).await.map_err(pg_error)?;
    for row in rows {
        let (being, head) = super::head_row(&row)?;
        kept.heads.insert(being, head);
    }
    Ok(())
}

/// Reads what the rules need beyond the heads: names claimed, facts repeated.
async fn read_for_rules(
    transaction: &tokio_postgres::Transaction<'_>,
    kept: &Kept,
    facts: &[Fact],
) -> Result<Read, StoreError> {
    let mut read = Read::default();
    let names: Vec<String> = facts
        .iter()
        .filter(|fact| fact.kind() == KIND_GENESIS)
        .filter_map(|fact| fact.body_as::<GenesisBody>().ok().map(|genesis| genesis.name))
        .collect();
    if !names.is_empty() {
        let rows = transaction
            .query("SELECT name, being FROM seed_names WHERE name = ANY($1) ORDER BY name, being", &[&names])
            .await
            .map_err(pg_error)?;
        for row in rows {
            read.names.entry(row.get(0)).or_insert(being_of(row.get::<_, &[u8]>(1))?);
        }
    }
    let (mut beings, mut seqs) = (Vec::new(), Vec::new());
    for fact in facts {
        let header = &fact.header;
        if kept.heads.get(&header.being).is_some_and(|head| header.seq <= head.seq) {
            beings.push(header.being.as_bytes().to_vec());
            seqs.push(to_i64(header.seq)?);
        }
    }
    if !beings.is_empty() {
        let rows = transaction
            .query(
                "SELECT f.being, f.seq, f.land_seq, f.envelope FROM unnest($1::bytea[], $2::int8[]) AS w(being, seq) \
                 JOIN seed_facts f ON f.being = w.being AND f.seq = w.seq",
                &[&beings, &seqs],
            )
            .await
            .map_err(pg_error)?;
        for row in rows {
            let being = being_of(row.get::<_, &[u8]>(0))?;
            let seq = to_u64(row.get(1));
            let fact = Fact::decode_envelope_for_index(row.get::<_, &[u8]>(3))
                .map_err(|error| StoreError::Corrupt { being, seq, reason: error.to_string() })?;
            read.stored.insert((being, seq), (fact.id(), to_u64(row.get(2))));
        }
    }
    Ok(read)
}

/// Applies the rules to one append and stages its rows.
fn stage(fact: &Fact, land_seq: u64, kept: &Kept, read: &Read, staged: &mut Staged) -> Result<Appended, StoreError> {
    let being = fact.header.being;
    let seq = fact.header.seq;
    let verdict = judge(fact, &mut PgChain { kept, read, staged })?;
    let (new_head, name) = match verdict {
        Verdict::Duplicate { id, land_seq } => return Ok(Appended { id, land_seq, duplicate: true }),
        Verdict::Forks { kept } => {
            staged.fork_rows.push((
                being.as_bytes().to_vec(),
                to_i64(seq)?,
                fact.id().0.to_vec(),
                fact.encode_envelope(),
            ));
            staged.chain.forked.insert(being);
            return Err(StoreError::Fork { being, seq, kept, rival: fact.id() });
        }
        Verdict::Extends { head, name } => (head, name),
    };
    let previous_key = staged.chain.heads.get(&being).or_else(|| kept.heads.get(&being)).map(|head| head.public_key);
    if previous_key != Some(new_head.public_key) {
        staged.keys.push((being.as_bytes().to_vec(), new_head.public_key.as_bytes().to_vec()));
    }
    if let Some(name) = name {
        staged.name_rows.push((name.clone(), being.as_bytes().to_vec()));
        staged.chain.names.insert(name, being);
    }
    staged.rows.push((being.as_bytes().to_vec(), to_i64(seq)?, to_i64(land_seq)?, fact.encode_envelope()));
    staged.chain.heads.insert(being, new_head);
    staged.chain.facts.insert((being, seq), (fact.id(), land_seq));
    Ok(Appended { id: fact.id(), land_seq, duplicate: false })
}

/// Takes the land lock; forgets what was kept when another process wrote.
/// Returns the next land seq and the count of fork proofs written.
async fn lock_land(
    transaction: &tokio_postgres::Transaction<'_>,
    kept: &mut Kept,
    fence: u64,
    followed: Option<&Mutex<FollowedTail>>,
    catch_up_facts_max: u64,
) -> Result<(u64, u64), StoreError> {
    let row = transaction
        .query_one(
            "SELECT next_land_seq, fork_proofs, runner_epoch, runner, \
                 coalesce(runner_until >= clock_timestamp(), false) \
             FROM seed_land WHERE id = 1 FOR UPDATE",
            &[],
        )
        .await
        .map_err(pg_error)?;
    // One writer while a live land runs: its runner, at its epoch.
    let runner_epoch = to_u64(row.get(2));
    if fence != 0 && runner_epoch != fence {
        return Err(StoreError::RunnerMoved { held: fence, now: runner_epoch });
    }
    if fence == 0 && row.get::<_, bool>(4) {
        return Err(StoreError::RunByAnother { holder: row.get::<_, Option<String>>(3).unwrap_or_default() });
    }
    let written = (to_u64(row.get(0)), to_u64(row.get(1)));
    if kept.written != Some(written) {
        // Another process committed since: the kept heads follow what it
        // wrote, as this process read it already (a pool's worker folds the
        // others' turns before its own) or else read now where that is
        // cheaper than reading every head again; failing both, they go.
        if let Some((next_before, forks_before)) = kept.written {
            if forks_before == written.1 && !kept.heads.is_empty() {
                let tail = followed.map(|followed| followed.lock().unwrap_or_else(PoisonError::into_inner));
                if tail.is_some_and(|tail| follow_the_tail(&tail, kept, next_before, written.0)) {
                    return Ok(written);
                }
                if catch_up_heads(transaction, kept, next_before, written.0, catch_up_facts_max).await? {
                    return Ok(written);
                }
            }
        }
        kept.heads.clear();
        kept.forked.clear();
        for row in transaction.query("SELECT being FROM seed_forked", &[]).await.map_err(pg_error)? {
            kept.forked.insert(being_of(row.get::<_, &[u8]>(0))?);
        }
    }
    Ok(written)
}

/// Most facts other processes may have committed since this committer's
/// last commit for its kept heads to follow them, and the most steps a
/// process keeps of what it read of them (`followed.rs`).
pub(super) const KEPT_HEADS_CATCH_UP_FACTS_MAX: u64 = 65_536;

/// Most facts other processes committed, per fact of the group, that a
/// committer reads itself for its kept heads to follow them: a head read
/// again costs the server about what two or three facts read in land order
/// cost (a fact by its reel's index, with its key's entry), so past this
/// it reads the group's heads again. Steps its process read already
/// (`followed.rs`) cost no request and are always followed.
const KEPT_HEADS_CATCH_UP_FACTS_PER_GROUP_FACT: u64 = 2;

/// Moves the kept heads along the facts other processes committed at land
/// seqs `from..to`, since this committer's last commit, by the rule every
/// head is folded with (`chain::next_head`): a pool's workers take turns,
/// so each turn found another's commit before it and read the heads of all
/// its beings again, the pool's costliest statement. A kept head a fact
/// does not extend is dropped, and read again when a group needs it.
/// Returns false, keeping nothing changed, where there are more than
/// `facts_max` facts or the range is not whole.
async fn catch_up_heads(
    transaction: &tokio_postgres::Transaction<'_>,
    kept: &mut Kept,
    from: u64,
    to: u64,
    facts_max: u64,
) -> Result<bool, StoreError> {
    let Some(count) = to.checked_sub(from).filter(|count| *count <= facts_max) else {
        return Ok(false);
    };
    let rows = transaction
        .query(
            "SELECT being, seq, envelope FROM seed_facts WHERE land_seq >= $1 AND land_seq < $2 ORDER BY land_seq",
            &[&to_i64(from)?, &to_i64(to)?],
        )
        .await
        .map_err(pg_error)?;
    if rows.len() as u64 != count {
        return Ok(false);
    }
    for row in rows {
        let being = being_of(row.get::<_, &[u8]>(0))?;
        if !kept.heads.contains_key(&being) {
            continue;
        }
        let seq = to_u64(row.get(1));
        let fact = Fact::decode_envelope_for_index(row.get::<_, &[u8]>(2)).map_err(|error| StoreError::Corrupt {
            being,
            seq,
            reason: error.to_string(),
        })?;
        follow_read_step(&HeadStep::of(&fact).map_err(|_| being), &mut kept.heads);
    }
    Ok(true)
}

/// [`catch_up_heads`] from the steps this process read already
/// (`followed.rs`), where they hold every land seq of `from..to`; false,
/// changing nothing, where they do not.
fn follow_the_tail(tail: &FollowedTail, kept: &mut Kept, from: u64, to: u64) -> bool {
    let Some(steps) = tail.steps(from, to) else { return false };
    for step in steps {
        follow_read_step(step, &mut kept.heads);
    }
    true
}

/// Writes what a group staged, in the transaction holding the land lock.
async fn write_staged(
    transaction: &tokio_postgres::Transaction<'_>,
    staged: &Staged,
    written: (u64, u64),
) -> Result<(), StoreError> {
    if !staged.rows.is_empty() {
        let sink = transaction
            .copy_in("COPY seed_facts (being, seq, land_seq, envelope) FROM STDIN BINARY")
            .await
            .map_err(pg_error)?;
        let writer = BinaryCopyInWriter::new(sink, &[Type::BYTEA, Type::INT8, Type::INT8, Type::BYTEA]);
        futures_util::pin_mut!(writer);
        for (being, seq, land_seq, envelope) in &staged.rows {
            writer.as_mut().write(&[being, seq, land_seq, envelope]).await.map_err(pg_error)?;
        }
        writer.finish().await.map_err(pg_error)?;
    }
    if !staged.keys.is_empty() {
        let (beings, keys): (Vec<Vec<u8>>, Vec<Vec<u8>>) = staged.keys.iter().cloned().unzip();
        insert_keys(transaction, &beings, &keys, true).await?;
    }
    if !staged.name_rows.is_empty() {
        let (names, beings): (Vec<String>, Vec<Vec<u8>>) = staged.name_rows.iter().cloned().unzip();
        insert_names(transaction, &names, &beings).await?;
    }
    for (being, seq, rival, envelope) in &staged.fork_rows {
        transaction
            .execute(
                "INSERT INTO seed_fork_proofs (being, seq, rival, envelope) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT DO NOTHING",
                &[being, seq, rival, envelope],
            )
            .await
            .map_err(pg_error)?;
        transaction
            .execute("INSERT INTO seed_forked (being) VALUES ($1) ON CONFLICT DO NOTHING", &[being])
            .await
            .map_err(pg_error)?;
    }
    transaction
        .execute(
            "UPDATE seed_land SET next_land_seq = $1, fork_proofs = $2 WHERE id = 1",
            &[&to_i64(written.0)?, &to_i64(written.1)?],
        )
        .await
        .map_err(pg_error)?;
    Ok(())
}

/// Sets the key index entries of `beings` (`replace`: over those there).
async fn insert_keys(
    transaction: &tokio_postgres::Transaction<'_>,
    beings: &[Vec<u8>],
    keys: &[Vec<u8>],
    replace: bool,
) -> Result<(), StoreError> {
    let sql = if replace {
        "INSERT INTO seed_reel_keys (being, public_key) SELECT * FROM unnest($1::bytea[], $2::bytea[]) \
         ON CONFLICT (being) DO UPDATE SET public_key = EXCLUDED.public_key"
    } else {
        "INSERT INTO seed_reel_keys (being, public_key) SELECT * FROM unnest($1::bytea[], $2::bytea[])"
    };
    transaction.execute(sql, &[&beings, &keys]).await.map_err(pg_error)?;
    Ok(())
}

async fn insert_names(
    transaction: &tokio_postgres::Transaction<'_>,
    names: &[String],
    beings: &[Vec<u8>],
) -> Result<(), StoreError> {
    transaction
        .execute(
            "INSERT INTO seed_names (name, being) SELECT * FROM unnest($1::text[], $2::bytea[])",
            &[&names, &beings],
        )
        .await
        .map_err(pg_error)?;
    Ok(())
}

/// One group, start to COMMIT: each append's outcome, or the failure of
/// all. With a `turn`, the group is a worker's fenced run of wakes: the
/// fence is checked first, any refused append refuses the whole group, and
/// the wakes' results and the turn's move commit with the facts.
async fn commit(
    pool: Pool,
    fence: u64,
    followed: Arc<Mutex<FollowedTail>>,
    mut kept: Kept,
    facts: Vec<Fact>,
    turn: Option<SealTurn>,
) -> (Kept, Result<Vec<Result<Appended, StoreError>>, StoreError>) {
    let outcome: Result<_, StoreError> = async {
        let mut client = pool.get().await.map_err(pool_error)?;
        let transaction = client.transaction().await.map_err(pg_error)?;
        let catch_up_facts_max = (facts.len() as u64)
            .saturating_mul(KEPT_HEADS_CATCH_UP_FACTS_PER_GROUP_FACT)
            .min(KEPT_HEADS_CATCH_UP_FACTS_MAX);
        let (first_land_seq, fork_proofs) =
            lock_land(&transaction, &mut kept, fence, Some(&followed), catch_up_facts_max).await?;
        if let Some(turn) = &turn {
            super::work::check_fence(&transaction, turn).await?;
        }
        let beings: Vec<BeingId> = facts.iter().map(|fact| fact.header.being).collect();
        read_heads(&transaction, &mut kept, &beings).await?;
        let read = read_for_rules(&transaction, &kept, &facts).await?;
        let mut staged = Staged::default();
        let outcomes: Vec<Result<Appended, StoreError>> = facts
            .iter()
            .map(|fact| stage(fact, first_land_seq + staged.rows.len() as u64, &kept, &read, &mut staged))
            .collect();
        if let Some(turn) = &turn {
            // All or nothing: the transaction is dropped, so rolled back.
            let refused = outcomes.iter().find_map(|outcome| match outcome {
                Err(error) => Some(error.to_string()),
                Ok(appended) if appended.duplicate => Some(format!("fact {} is already stored", appended.id)),
                Ok(_) => None,
            });
            if let Some(reason) = refused {
                return Err(StoreError::Fenced { tick: turn.tick, first: turn.first, reason });
            }
        }
        let written = (first_land_seq + staged.rows.len() as u64, fork_proofs + staged.fork_rows.len() as u64);
        write_staged(&transaction, &staged, written).await?;
        if let Some(turn) = &turn {
            super::work::move_turn(&transaction, turn).await?;
        }
        crash_points::reach(CrashPoint::PgWritten);
        transaction.commit().await.map_err(pg_error)?;
        crash_points::reach(CrashPoint::PgCommitted);
        Ok((outcomes, staged, written))
    }
    .await;
    match outcome {
        Ok((outcomes, staged, written)) => {
            kept.heads.extend(staged.chain.heads);
            kept.forked.extend(staged.chain.forked);
            kept.written = Some(written);
            (kept, Ok(outcomes))
        }
        // A refused turn wrote nothing, but the heads it read stay unread:
        // like any failure, the next group reads everything again.
        Err(error) => (Kept::default(), Err(error)),
    }
}

impl GroupWriter for Committer {
    fn commit_group(&mut self, group: Vec<(Box<Fact>, Reply)>) {
        if group.is_empty() {
            return;
        }
        let (facts, replies): (Vec<Fact>, Vec<Reply>) = group.into_iter().map(|(fact, reply)| (*fact, reply)).unzip();
        let count = facts.len();
        // Taken for the group: what a failed run leaves is nothing kept.
        let kept = std::mem::take(&mut self.kept);
        let (pool, fence, followed) = (self.pool.clone(), self.fence.load(Ordering::SeqCst), self.followed.clone());
        let outcomes = self
            .runner
            .run(async move { Ok(commit(pool, fence, followed, kept, facts, None).await) })
            .and_then(|(kept, outcomes)| {
                self.kept = kept;
                outcomes
            });
        let outcomes = outcomes.unwrap_or_else(|error| vec![Err(error); count]);
        for (reply, outcome) in replies.into_iter().zip(outcomes) {
            let _ = reply.send(outcome);
        }
    }

    fn commit_turn(&mut self, facts: Vec<Fact>, turn: SealTurn) -> Result<Vec<Appended>, StoreError> {
        let kept = std::mem::take(&mut self.kept);
        let (pool, fence, followed) = (self.pool.clone(), self.fence.load(Ordering::SeqCst), self.followed.clone());
        let (kept, outcomes) =
            self.runner.run(async move { Ok(commit(pool, fence, followed, kept, facts, Some(turn)).await) })?;
        self.kept = kept;
        // A turn that committed refused none of its appends.
        outcomes?.into_iter().collect()
    }

    fn reindex(&mut self) -> Result<ReindexReport, StoreError> {
        self.kept = Kept::default();
        let (pool, fence) = (self.pool.clone(), self.fence.load(Ordering::SeqCst));
        self.runner.run(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = client.transaction().await.map_err(pg_error)?;
            // The land lock, as a group takes it: no group commits meanwhile.
            lock_land(&transaction, &mut Kept::default(), fence, None, 0).await?;
            transaction
                .batch_execute("DELETE FROM seed_reel_keys; DELETE FROM seed_names; DELETE FROM seed_forked;")
                .await
                .map_err(pg_error)?;
            let (derived, report) = derive_indexes(&transaction).await?;
            let beings: Vec<Vec<u8>> = derived.heads.keys().map(|being| being.as_bytes().to_vec()).collect();
            let keys: Vec<Vec<u8>> = derived.heads.values().map(|head| head.public_key.as_bytes().to_vec()).collect();
            insert_keys(&transaction, &beings, &keys, false).await?;
            let (names, named): (Vec<String>, Vec<Vec<u8>>) =
                derived.names.iter().map(|(name, being)| (name.clone(), being.as_bytes().to_vec())).unzip();
            insert_names(&transaction, &names, &named).await?;
            let forked: Vec<Vec<u8>> = derived.forked.iter().map(|being| being.as_bytes().to_vec()).collect();
            transaction
                .execute("INSERT INTO seed_forked (being) SELECT * FROM unnest($1::bytea[])", &[&forked])
                .await
                .map_err(pg_error)?;
            // The land seq index and the reel key are the table's own
            // indexes: rebuilt from its rows.
            transaction.batch_execute("REINDEX TABLE seed_facts").await.map_err(pg_error)?;
            transaction.commit().await.map_err(pg_error)?;
            Ok(report)
        })
    }
}
