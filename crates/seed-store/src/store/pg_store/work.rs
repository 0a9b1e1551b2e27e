//! The wake queue in PostgreSQL (`store/work.rs` says what it promises).
//!
//! Tables (schema versions 2 and 3): `seed_runs` (the run workers serve, and whether it is traced),
//! `seed_rounds` (each round's cursor, time, wake count and turn),
//! `seed_wakes` (each wake with its holder, epoch, lease and result) and
//! `seed_leases` (the fencing epoch of each being, bumped by every claim).
//!
//! Lock order, so no two transactions wait on each other in a circle: a
//! fenced seal takes the land's row (as every commit does), then the
//! round's row, then its wakes' rows; a claim locks only wake rows (those
//! no one else is locking: `SKIP LOCKED`) and then the claimed beings'
//! lease rows, which nothing else locks.

use super::{being_of, pg_error, pool_error, to_i64, to_u64, PgStore};
use crate::fact::{Fact, Hash32};
use crate::store::work::{Claim, QueueState, QueuedWake, Round, RunState, SealTurn, WakeQueue};
use crate::store::{Appended, StoreError};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Mutex;

/// The channel every process of the pool listens on.
const NEWS_CHANNEL: &str = "seed_work";

/// The advisory lock claims take, one claimer at a time (the land's
/// database holds one land: a constant key names its queue).
const CLAIM_LOCK_KEY: i64 = 0x5eed_0000_0000_0002;

fn fenced(turn: &SealTurn, reason: String) -> StoreError {
    StoreError::Fenced { tick: turn.tick, first: turn.first, reason }
}

/// Checks, in the sealing transaction (after the land lock), that the
/// round's turn is `turn.first` and that `turn.worker` still holds every
/// wake of the run at the epoch it claimed; locks those rows to COMMIT.
pub(super) async fn check_fence(
    transaction: &tokio_postgres::Transaction<'_>,
    turn: &SealTurn,
) -> Result<(), StoreError> {
    let tick = to_i64(turn.tick)?;
    let round = transaction
        .query_opt("SELECT wakes, turn FROM seed_rounds WHERE tick = $1 FOR UPDATE", &[&tick])
        .await
        .map_err(pg_error)?
        .ok_or_else(|| fenced(turn, "the round is not in the wake queue".into()))?;
    let (wakes, at) = (to_u64(round.get(0)), to_u64(round.get(1)));
    if at != turn.first {
        return Err(fenced(turn, format!("the round's turn is at wake {at}: another worker sealed these wakes")));
    }
    let end = turn.first + turn.sealed.len() as u64;
    if end > wakes {
        return Err(fenced(turn, format!("the round has {wakes} wakes, not {end}")));
    }
    let rows = transaction
        .query(
            "SELECT idx, holder, epoch FROM seed_wakes WHERE tick = $1 AND idx >= $2 AND idx < $3 \
             ORDER BY idx FOR UPDATE",
            &[&tick, &to_i64(turn.first)?, &to_i64(end)?],
        )
        .await
        .map_err(pg_error)?;
    for (row, (epoch, _)) in rows.iter().zip(&turn.sealed) {
        let (index, holder, held) = (to_u64(row.get(0)), row.get::<_, Option<String>>(1), to_u64(row.get(2)));
        if holder.as_deref() != Some(turn.worker.as_str()) || held != *epoch {
            let holder = holder.unwrap_or_else(|| "nobody".into());
            return Err(fenced(
                turn,
                format!("the lease of wake {index} moved (held by {holder} at epoch {held}, claimed at epoch {epoch})"),
            ));
        }
    }
    if rows.len() != turn.sealed.len() {
        return Err(fenced(turn, format!("the queue holds {} of the {} wakes", rows.len(), turn.sealed.len())));
    }
    Ok(())
}

/// Writes the run's results, moves the turn past it and tells the pool
/// (the notification is sent at COMMIT).
pub(super) async fn move_turn(
    transaction: &tokio_postgres::Transaction<'_>,
    turn: &SealTurn,
) -> Result<(), StoreError> {
    let tick = to_i64(turn.tick)?;
    let indexes: Vec<i64> =
        (turn.first..turn.first + turn.sealed.len() as u64).map(to_i64).collect::<Result<_, _>>()?;
    let results: Vec<Vec<u8>> = turn.sealed.iter().map(|(_, result)| result.clone()).collect();
    transaction
        .execute(
            "UPDATE seed_wakes w SET result = r.result, lease_until = NULL \
             FROM unnest($2::int8[], $3::bytea[]) AS r(idx, result) WHERE w.tick = $1 AND w.idx = r.idx",
            &[&tick, &indexes, &results],
        )
        .await
        .map_err(pg_error)?;
    let end = to_i64(turn.first + turn.sealed.len() as u64)?;
    transaction.execute("UPDATE seed_rounds SET turn = $2 WHERE tick = $1", &[&tick, &end]).await.map_err(pg_error)?;
    transaction.execute("SELECT pg_notify($1, '')", &[&NEWS_CHANNEL]).await.map_err(pg_error)?;
    Ok(())
}

/// The listening connection of a process, opened at its first wait.
pub(super) struct Listener {
    /// Kept so the connection stays open.
    _client: tokio_postgres::Client,
    news: Receiver<()>,
}

/// Slots for the listener: `None` until a wait opens it, and again after
/// its connection is lost (the next wait opens another).
pub(super) type ListenerSlot = Mutex<Option<Listener>>;

impl PgStore {
    fn open_listener(&self) -> Result<Listener, StoreError> {
        let config = self.config.clone();
        self.runner.run(async move {
            let (client, mut connection) = config.connect(tokio_postgres::NoTls).await.map_err(pg_error)?;
            let (sender, news) = std::sync::mpsc::channel();
            tokio::spawn(async move {
                while let Some(message) = std::future::poll_fn(|context| connection.poll_message(context)).await {
                    match message {
                        Ok(tokio_postgres::AsyncMessage::Notification(_)) => {
                            if sender.send(()).is_err() {
                                return;
                            }
                        }
                        Ok(_) => {}
                        Err(_) => return,
                    }
                }
            });
            client.batch_execute(&format!("LISTEN {NEWS_CHANNEL}")).await.map_err(pg_error)?;
            Ok(Listener { _client: client, news })
        })
    }

    /// Runs `work` in one transaction on a pooled connection.
    fn in_transaction<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'t> FnOnce(
                &'t tokio_postgres::Transaction<'t>,
            )
                -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, StoreError>> + Send + 't>>
            + Send
            + 'static,
    {
        let pool = self.pool.clone();
        self.runner.run(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = client.transaction().await.map_err(pg_error)?;
            let value = work(&transaction).await?;
            transaction.commit().await.map_err(pg_error)?;
            Ok(value)
        })
    }
}

/// The run's state from its row's digest (`None`: no run) and finished flag.
fn run_state_of(digest: Option<&[u8]>, finished: bool) -> Result<RunState, StoreError> {
    let Some(digest) = digest else { return Ok(RunState::None) };
    let digest = Hash32::from_slice(digest)
        .ok_or_else(|| StoreError::Io { reason: "the wake queue's run digest is not 32 bytes".into() })?;
    Ok(if finished { RunState::Finished { digest } } else { RunState::Running { digest } })
}

impl WakeQueue for PgStore {
    fn start_run(&self, digest: Hash32, traced: bool) -> Result<(), StoreError> {
        self.in_transaction(move |transaction| {
            Box::pin(async move {
                let row = transaction
                    .query_opt("SELECT digest, finished FROM seed_runs WHERE id = 1 FOR UPDATE", &[])
                    .await
                    .map_err(pg_error)?;
                let state = match &row {
                    Some(row) => run_state_of(Some(row.get::<_, &[u8]>(0)), row.get(1))?,
                    None => RunState::None,
                };
                match state {
                    RunState::Running { digest: running } if running != digest => {
                        return Err(StoreError::Io {
                            reason: format!(
                                "the wake queue serves another run ({running}) that has not finished; \
                                 a land runs one pool at a time"
                            ),
                        })
                    }
                    RunState::Running { .. } => return Ok(()),
                    RunState::None | RunState::Finished { .. } => {}
                }
                transaction
                    .batch_execute("DELETE FROM seed_wakes; DELETE FROM seed_rounds;")
                    .await
                    .map_err(pg_error)?;
                transaction
                    .execute(
                        "INSERT INTO seed_runs (id, digest, finished, traced) VALUES (1, $1, false, $2) \
                         ON CONFLICT (id) DO UPDATE SET digest = EXCLUDED.digest, finished = false, \
                             traced = EXCLUDED.traced",
                        &[&digest.0.to_vec(), &traced],
                    )
                    .await
                    .map_err(pg_error)?;
                Ok(())
            })
        })
    }

    fn finish_run(&self) -> Result<(), StoreError> {
        self.in_transaction(|transaction| {
            Box::pin(async move {
                transaction
                    .execute("UPDATE seed_runs SET finished = true WHERE id = 1", &[])
                    .await
                    .map_err(pg_error)?;
                transaction.execute("SELECT pg_notify($1, '')", &[&NEWS_CHANNEL]).await.map_err(pg_error)?;
                Ok(())
            })
        })
    }

    fn open_round(&self, tick: u64, cursor: u64, now_ms: u64, wakes: &[QueuedWake]) -> Result<(), StoreError> {
        let params = (to_i64(tick)?, to_i64(cursor)?, to_i64(now_ms)?, to_i64(wakes.len() as u64)?);
        let indexes: Vec<i64> = wakes.iter().map(|wake| to_i64(wake.index)).collect::<Result<_, _>>()?;
        let beings: Vec<Vec<u8>> = wakes.iter().map(|wake| wake.being.as_bytes().to_vec()).collect();
        let bytes: Vec<Vec<u8>> = wakes.iter().map(|wake| wake.wake.clone()).collect();
        self.in_transaction(move |transaction| {
            Box::pin(async move {
                let (tick, cursor, now_ms, count) = params;
                transaction
                    .execute(
                        "INSERT INTO seed_rounds (tick, cursor, now_ms, wakes, turn) VALUES ($1, $2, $3, $4, 0)",
                        &[&tick, &cursor, &now_ms, &count],
                    )
                    .await
                    .map_err(pg_error)?;
                transaction
                    .execute(
                        "INSERT INTO seed_wakes (tick, idx, being, wake) \
                         SELECT $1, * FROM unnest($2::int8[], $3::bytea[], $4::bytea[])",
                        &[&tick, &indexes, &beings, &bytes],
                    )
                    .await
                    .map_err(pg_error)?;
                transaction.execute("SELECT pg_notify($1, '')", &[&NEWS_CHANNEL]).await.map_err(pg_error)?;
                Ok(())
            })
        })
    }

    fn state(&self) -> Result<QueueState, StoreError> {
        self.with_client(|client| async move {
            let row = client
                .query_one(
                    "SELECT r.digest, r.finished, o.tick, o.cursor, o.now_ms, o.wakes, o.turn, r.traced \
                     FROM (SELECT 1) AS one \
                     LEFT JOIN seed_runs r ON r.id = 1 \
                     LEFT JOIN LATERAL (SELECT * FROM seed_rounds ORDER BY tick DESC LIMIT 1) o ON true",
                    &[],
                )
                .await
                .map_err(pg_error)?;
            let run = run_state_of(row.get(0), row.get::<_, Option<bool>>(1).unwrap_or(false))?;
            let round = row.get::<_, Option<i64>>(2).map(|tick| Round {
                tick: to_u64(tick),
                cursor: to_u64(row.get(3)),
                now_ms: to_u64(row.get(4)),
                wakes: to_u64(row.get(5)),
                turn: to_u64(row.get(6)),
            });
            let traced = row.get::<_, Option<bool>>(7).unwrap_or(false);
            Ok(QueueState { run, traced, round })
        })
    }

    fn claim(
        &self,
        worker: &str,
        tick: u64,
        indexes: std::ops::Range<u64>,
        max: usize,
        lease_ms: u64,
    ) -> Result<Vec<Claim>, StoreError> {
        let from = to_i64(indexes.start)?;
        let below = i64::try_from(indexes.end).unwrap_or(i64::MAX);
        let params = (worker.to_string(), to_i64(tick)?, to_i64(max as u64)?, to_i64(lease_ms)?);
        self.in_transaction(move |transaction| {
            Box::pin(async move {
                let (worker, tick, max, lease_ms) = params;
                // One claim at a time: two claimers scanning the free wakes
                // together would each skip the row the other just locked and
                // take every other wake, and a worker seals only an unbroken
                // run of wakes at a time. Sealing does not take this lock.
                transaction.execute("SELECT pg_advisory_xact_lock($1)", &[&CLAIM_LOCK_KEY]).await.map_err(pg_error)?;
                // Three plain statements, each linear in the claim (one
                // statement joining the picked rows to their bumped epochs
                // let the planner loop over both: quadratic in the claim).
                let picked = transaction
                    .query(
                        "SELECT idx, being, wake FROM seed_wakes \
                         WHERE tick = $1 AND idx >= $4 AND idx < $3 AND result IS NULL \
                           AND (lease_until IS NULL OR lease_until < clock_timestamp()) \
                         ORDER BY idx LIMIT $2 FOR UPDATE SKIP LOCKED",
                        &[&tick, &max, &below, &from],
                    )
                    .await
                    .map_err(pg_error)?;
                if picked.is_empty() {
                    return Ok(Vec::new());
                }
                let beings: Vec<&[u8]> = picked.iter().map(|row| row.get::<_, &[u8]>(1)).collect();
                let bumped = transaction
                    .query(
                        "INSERT INTO seed_leases (being, epoch) SELECT being, 1 FROM unnest($1::bytea[]) AS b(being) \
                         ON CONFLICT (being) DO UPDATE SET epoch = seed_leases.epoch + 1 RETURNING being, epoch",
                        &[&beings],
                    )
                    .await
                    .map_err(pg_error)?;
                let epochs: std::collections::BTreeMap<&[u8], i64> =
                    bumped.iter().map(|row| (row.get::<_, &[u8]>(0), row.get::<_, i64>(1))).collect();
                let mut claims = Vec::with_capacity(picked.len());
                for row in &picked {
                    let being_bytes = row.get::<_, &[u8]>(1);
                    let being = being_of(being_bytes)?;
                    let epoch = *epochs.get(being_bytes).ok_or_else(|| StoreError::Io {
                        reason: format!("the lease of {being} was not bumped by its claim"),
                    })?;
                    claims.push(Claim {
                        wake: QueuedWake { index: to_u64(row.get(0)), being, wake: row.get(2) },
                        epoch: to_u64(epoch),
                    });
                }
                let indexes: Vec<i64> = picked.iter().map(|row| row.get::<_, i64>(0)).collect();
                let claimed_epochs: Vec<i64> =
                    claims.iter().map(|claim| to_i64(claim.epoch)).collect::<Result<_, _>>()?;
                transaction
                    .execute(
                        "UPDATE seed_wakes w SET holder = $2, epoch = c.epoch, \
                             lease_until = clock_timestamp() + $3::int8 * interval '1 millisecond' \
                         FROM unnest($4::int8[], $5::int8[]) AS c(idx, epoch) \
                         WHERE w.tick = $1 AND w.idx = c.idx",
                        &[&tick, &worker, &lease_ms, &indexes, &claimed_epochs],
                    )
                    .await
                    .map_err(pg_error)?;
                claims.sort_by_key(|claim| claim.wake.index);
                Ok(claims)
            })
        })
    }

    fn renew(&self, worker: &str, tick: u64, lease_ms: u64) -> Result<(), StoreError> {
        let params = (worker.to_string(), to_i64(tick)?, to_i64(lease_ms)?);
        self.with_client(move |client| async move {
            let (worker, tick, lease_ms) = params;
            client
                .execute(
                    "UPDATE seed_wakes SET lease_until = clock_timestamp() + $3::int8 * interval '1 millisecond' \
                     WHERE tick = $1 AND holder = $2 AND result IS NULL AND lease_until >= clock_timestamp()",
                    &[&tick, &worker, &lease_ms],
                )
                .await
                .map_err(pg_error)?;
            Ok(())
        })
    }

    fn seal_turn(&self, facts: Vec<Fact>, turn: SealTurn) -> Result<Vec<Appended>, StoreError> {
        assert!(!turn.sealed.is_empty(), "a turn seals at least one wake");
        self.committing.seal_turn(facts, turn, self.no_committer())
    }

    fn results(&self, tick: u64, from: u64) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let (tick, from) = (to_i64(tick)?, to_i64(from)?);
        self.with_client(move |client| async move {
            let rows = client
                .query(
                    "SELECT idx, result FROM seed_wakes WHERE tick = $1 AND idx >= $2 AND result IS NOT NULL \
                     ORDER BY idx",
                    &[&tick, &from],
                )
                .await
                .map_err(pg_error)?;
            Ok(rows.iter().map(|row| (to_u64(row.get(0)), row.get(1))).collect())
        })
    }

    fn wait_for_news(&self, timeout_ms: u64) {
        let timeout = std::time::Duration::from_millis(timeout_ms);
        let mut slot = self.listener.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.is_none() {
            match self.open_listener() {
                Ok(listener) => *slot = Some(listener),
                Err(_) => {
                    // Without notifications the caller polls: slower, as safe.
                    drop(slot);
                    std::thread::sleep(timeout);
                    return;
                }
            }
        }
        let news = &slot.as_ref().expect("just opened").news;
        match news.recv_timeout(timeout) {
            Ok(()) => while news.try_recv().is_ok() {},
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => *slot = None,
        }
    }
}
