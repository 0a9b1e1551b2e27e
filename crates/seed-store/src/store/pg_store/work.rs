//! The wake queue in PostgreSQL (`store/work.rs` says what it promises).
//!
//! Tables (schema versions 2 to 4): `seed_runs` (the run workers serve,
//! and whether it is traced), `seed_rounds` (each round's cursor, time,
//! wake count and turn), `seed_wakes` (each wake: its index, being and
//! bytes, written once), `seed_claims` (one row per claim: a run of wakes,
//! its holder, its epoch from the sequence `seed_claim_epochs`, its lease,
//! and whether it was lost to a later claim) and `seed_turns` (one row per
//! sealed turn with its wakes' results).
//!
//! A claim or a seal writes a few rows whatever its size: claims are
//! ranges, not one row per wake, and a turn's results are one array.
//!
//! **The lease of a being's wake** is the claim covering it that was not
//! lost. Claims are made over wakes no live claim covers, and a claim over
//! an expired one marks that one lost, so above the round's turn the
//! claims not lost never overlap. Epochs come from one sequence: a wake
//! claimed again (and so its being) is held at a higher epoch than ever
//! before, and a worker whose lease moved holds an epoch no live claim has.
//!
//! Lock order, so no two transactions wait on each other in a circle: a
//! fenced seal takes the land's row (as every commit does), then the
//! round's row, then the claims covering its wakes. A claim takes
//! the claim lock, then expired claims no seal is locking (`FOR UPDATE SKIP
//! LOCKED`), then writes only claim rows. A seal waiting on a claim's row
//! lock sees, once it is free, that its claim was lost.

use super::{being_of, pg_error, pool_error, to_i64, to_u64, PgStore};
use crate::fact::{Fact, Hash32};
use crate::store::work::{
    Claim, ClaimTicket, QueueState, QueuedWake, Round, RunState, SealTurn, TurnTicket, WakeQueue,
};
use crate::store::StoreError;
use std::ops::Range;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Mutex;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::Type;

/// The channel every process of the pool listens on.
const NEWS_CHANNEL: &str = "seed_work";

/// The advisory lock claims take, one claimer at a time (the land's
/// database holds one land: a constant key names its queue).
const CLAIM_LOCK_KEY: i64 = 0x5eed_0000_0000_0002;

fn fenced(turn: &SealTurn, reason: String) -> StoreError {
    StoreError::Fenced { tick: turn.tick, first: turn.first, reason }
}

/// A claim row as a claimer or a seal reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ClaimRow {
    epoch: u64,
    wakes: Range<u64>,
    holder: String,
}

/// The wakes to claim: the lowest run in `indexes` that no occupying claim
/// covers, at most `max` long (`None`: every wake there is covered).
/// `occupying` are the claims not lost whose lease is live or whose row a
/// seal is locking.
fn free_run(indexes: Range<u64>, max: u64, occupying: &[Range<u64>]) -> Option<Range<u64>> {
    let mut spans: Vec<&Range<u64>> = occupying.iter().filter(|span| !span.is_empty()).collect();
    spans.sort_by_key(|span| span.start);
    // Past every span that reaches the start, in order of their starts; the
    // first that begins after it ends the run.
    let mut start = indexes.start;
    let mut next_occupied = u64::MAX;
    for span in spans {
        if span.start > start {
            next_occupied = span.start;
            break;
        }
        start = start.max(span.end);
    }
    if start >= indexes.end || max == 0 {
        return None;
    }
    Some(start..next_occupied.min(indexes.end).min(start.saturating_add(max)))
}

/// The free run [`free_run`] finds from the first index of `prefer` (in
/// its order) that starts one, else the lowest free run of `indexes`.
fn preferred_free_run(indexes: Range<u64>, max: u64, occupying: &[Range<u64>], prefer: &[u64]) -> Option<Range<u64>> {
    prefer
        .iter()
        .filter(|first| indexes.contains(first))
        .find_map(|first| free_run(*first..indexes.end, max, occupying).filter(|run| run.start == *first))
        .or_else(|| free_run(indexes, max, occupying))
}

/// Why a turn's wakes are not all held by `turn.worker` at their epochs,
/// given the claims not lost that cover any of them (`None`: they are).
fn fence_refusal(turn: &SealTurn, claims: &[ClaimRow]) -> Option<String> {
    for (offset, (epoch, _)) in turn.sealed.iter().enumerate() {
        let index = turn.first + offset as u64;
        let covering: Vec<&ClaimRow> = claims.iter().filter(|claim| claim.wakes.contains(&index)).collect();
        if covering.iter().any(|claim| claim.epoch == *epoch && claim.holder == turn.worker) {
            continue;
        }
        return Some(match covering.first() {
            Some(claim) => format!(
                "the lease of wake {index} moved (held by {} at epoch {}, claimed at epoch {epoch})",
                claim.holder, claim.epoch
            ),
            None => format!("the lease of wake {index} was lost (claimed at epoch {epoch})"),
        });
    }
    None
}

/// Checks, in the sealing transaction (after the land lock), that the
/// round's turn is `turn.first` and that `turn.worker` still holds every
/// wake of the run at the epoch it claimed; locks those claims to COMMIT.
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
            "SELECT epoch, first_idx, end_idx, holder FROM seed_claims \
             WHERE tick = $1 AND NOT lost AND first_idx < $3 AND end_idx > $2 ORDER BY epoch FOR UPDATE",
            &[&tick, &to_i64(turn.first)?, &to_i64(end)?],
        )
        .await
        .map_err(pg_error)?;
    let claims: Vec<ClaimRow> = rows
        .iter()
        .map(|row| ClaimRow {
            epoch: to_u64(row.get(0)),
            wakes: to_u64(row.get(1))..to_u64(row.get(2)),
            holder: row.get(3),
        })
        .collect();
    match fence_refusal(turn, &claims) {
        Some(reason) => Err(fenced(turn, reason)),
        None => Ok(()),
    }
}

/// Writes the run's results, moves the turn past it and tells the pool
/// (the notification is sent at COMMIT).
pub(super) async fn move_turn(
    transaction: &tokio_postgres::Transaction<'_>,
    turn: &SealTurn,
) -> Result<(), StoreError> {
    let tick = to_i64(turn.tick)?;
    let results: Vec<&[u8]> = turn.sealed.iter().map(|(_, result)| result.as_slice()).collect();
    let end = to_i64(turn.first + turn.sealed.len() as u64)?;
    transaction
        .execute(
            "INSERT INTO seed_turns (tick, first_idx, results) VALUES ($1, $2, $3)",
            &[&tick, &to_i64(turn.first)?, &results],
        )
        .await
        .map_err(pg_error)?;
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

    /// Starts `work` in one transaction on a pooled connection; its outcome
    /// arrives on the channel returned.
    fn start_transaction<T, F>(&self, work: F) -> oneshot::Receiver<Result<T, StoreError>>
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
        self.runner.start(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let transaction = client.transaction().await.map_err(pg_error)?;
            let value = work(&transaction).await?;
            transaction.commit().await.map_err(pg_error)?;
            Ok(value)
        })
    }
}

/// The answer a request started on the store's runtime sends.
fn answered<T>(receiver: oneshot::Receiver<Result<T, StoreError>>) -> Result<T, StoreError> {
    crate::store::Ticket::waiting(receiver).wait()
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
        answered(self.start_transaction(move |transaction| {
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
                    .batch_execute(
                        "DELETE FROM seed_wakes; DELETE FROM seed_claims; DELETE FROM seed_turns; \
                         DELETE FROM seed_rounds;",
                    )
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
        }))
    }

    fn finish_run(&self) -> Result<(), StoreError> {
        answered(self.start_transaction(|transaction| {
            Box::pin(async move {
                transaction
                    .execute("UPDATE seed_runs SET finished = true WHERE id = 1", &[])
                    .await
                    .map_err(pg_error)?;
                transaction.execute("SELECT pg_notify($1, '')", &[&NEWS_CHANNEL]).await.map_err(pg_error)?;
                Ok(())
            })
        }))
    }

    fn open_round(&self, tick: u64, cursor: u64, now_ms: u64, wakes: &[QueuedWake]) -> Result<(), StoreError> {
        let params = (to_i64(tick)?, to_i64(cursor)?, to_i64(now_ms)?, to_i64(wakes.len() as u64)?);
        let rows: Vec<(i64, Vec<u8>, Vec<u8>)> = wakes
            .iter()
            .map(|wake| Ok((to_i64(wake.index)?, wake.being.as_bytes().to_vec(), wake.wake.clone())))
            .collect::<Result<_, StoreError>>()?;
        answered(self.start_transaction(move |transaction| {
            Box::pin(async move {
                let (tick, cursor, now_ms, count) = params;
                transaction
                    .execute(
                        "INSERT INTO seed_rounds (tick, cursor, now_ms, wakes, turn) VALUES ($1, $2, $3, $4, 0)",
                        &[&tick, &cursor, &now_ms, &count],
                    )
                    .await
                    .map_err(pg_error)?;
                let sink = transaction
                    .copy_in("COPY seed_wakes (tick, idx, being, wake) FROM STDIN BINARY")
                    .await
                    .map_err(pg_error)?;
                let writer = BinaryCopyInWriter::new(sink, &[Type::INT8, Type::INT8, Type::BYTEA, Type::BYTEA]);
                futures_util::pin_mut!(writer);
                for (index, being, wake) in &rows {
                    writer.as_mut().write(&[&tick, index, being, wake]).await.map_err(pg_error)?;
                }
                writer.finish().await.map_err(pg_error)?;
                transaction.execute("SELECT pg_notify($1, '')", &[&NEWS_CHANNEL]).await.map_err(pg_error)?;
                Ok(())
            })
        }))
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
        indexes: Range<u64>,
        max: usize,
        lease_ms: u64,
        prefer: &[u64],
    ) -> ClaimTicket {
        let (from, tick, lease_ms) = match (to_i64(indexes.start), to_i64(tick), to_i64(lease_ms)) {
            (Ok(from), Ok(tick), Ok(lease_ms)) => (from, tick, lease_ms),
            (Err(error), _, _) | (_, Err(error), _) | (_, _, Err(error)) => return ClaimTicket::failed(error),
        };
        let below = indexes.end;
        let params = (worker.to_string(), tick, max as u64, lease_ms, prefer.to_vec());
        ClaimTicket::waiting(self.start_transaction(move |transaction| {
            Box::pin(async move {
                let (worker, tick, max, lease_ms, prefer) = params;
                // One claim at a time: two claimers would find the same free
                // run. Sealing does not take this lock.
                transaction.execute("SELECT pg_advisory_xact_lock($1)", &[&CLAIM_LOCK_KEY]).await.map_err(pg_error)?;
                // Expired claims this claim may take over: those a seal is
                // locking right now are skipped, and count as held.
                let takeable: std::collections::BTreeSet<i64> = transaction
                    .query(
                        "SELECT epoch FROM seed_claims WHERE tick = $1 AND NOT lost AND end_idx > $2 \
                           AND lease_until < clock_timestamp() FOR UPDATE SKIP LOCKED",
                        &[&tick, &from],
                    )
                    .await
                    .map_err(pg_error)?
                    .iter()
                    .map(|row| row.get(0))
                    .collect();
                // Read after the lock above: a seal that committed before it
                // shows here as the turn's move.
                let Some(round) = transaction
                    .query_opt("SELECT turn, wakes FROM seed_rounds WHERE tick = $1", &[&tick])
                    .await
                    .map_err(pg_error)?
                else {
                    return Ok(Vec::new());
                };
                let start = indexes.start.max(to_u64(round.get(0)));
                let end = below.min(to_u64(round.get(1)));
                let claims = transaction
                    .query(
                        "SELECT epoch, first_idx, end_idx FROM seed_claims WHERE tick = $1 AND NOT lost AND end_idx > $2",
                        &[&tick, &to_i64(start)?],
                    )
                    .await
                    .map_err(pg_error)?;
                let mut occupying = Vec::new();
                let mut expired = Vec::new();
                for row in &claims {
                    let (epoch, wakes) = (row.get::<_, i64>(0), to_u64(row.get(1))..to_u64(row.get(2)));
                    if takeable.contains(&epoch) {
                        expired.push((epoch, wakes));
                    } else {
                        occupying.push(wakes);
                    }
                }
                let Some(run) = preferred_free_run(start..end, max, &occupying, &prefer) else {
                    return Ok(Vec::new());
                };
                let lost: Vec<i64> = expired
                    .iter()
                    .filter(|(_, wakes)| wakes.start < run.end && run.start < wakes.end)
                    .map(|(epoch, _)| *epoch)
                    .collect();
                if !lost.is_empty() {
                    transaction
                        .execute(
                            "UPDATE seed_claims SET lost = true WHERE tick = $1 AND epoch = ANY($2)",
                            &[&tick, &lost],
                        )
                        .await
                        .map_err(pg_error)?;
                }
                let (first, past) = (to_i64(run.start)?, to_i64(run.end)?);
                let epoch: i64 = transaction
                    .query_one(
                        "INSERT INTO seed_claims (tick, epoch, first_idx, end_idx, holder, lease_until) \
                         VALUES ($1, nextval('seed_claim_epochs'), $2, $3, $4, \
                                 clock_timestamp() + $5::int8 * interval '1 millisecond') \
                         RETURNING epoch",
                        &[&tick, &first, &past, &worker, &lease_ms],
                    )
                    .await
                    .map_err(pg_error)?
                    .get(0);
                let wakes = transaction
                    .query(
                        "SELECT idx, being, wake FROM seed_wakes WHERE tick = $1 AND idx >= $2 AND idx < $3 \
                         ORDER BY idx",
                        &[&tick, &first, &past],
                    )
                    .await
                    .map_err(pg_error)?;
                wakes
                    .iter()
                    .map(|row| {
                        Ok(Claim {
                            wake: QueuedWake {
                                index: to_u64(row.get(0)),
                                being: being_of(row.get::<_, &[u8]>(1))?,
                                wake: row.get(2),
                            },
                            epoch: to_u64(epoch),
                        })
                    })
                    .collect()
            })
        }))
    }

    fn workers_before(&self, tick: u64) -> Result<u64, StoreError> {
        let tick = to_i64(tick)?;
        self.with_client(move |client| async move {
            let row = client
                .query_one(
                    "SELECT count(DISTINCT holder) FROM seed_claims WHERE NOT lost \
                       AND tick = (SELECT max(tick) FROM seed_claims WHERE tick < $1)",
                    &[&tick],
                )
                .await
                .map_err(pg_error)?;
            Ok(to_u64(row.get(0)))
        })
    }

    fn renew(&self, worker: &str, tick: u64, lease_ms: u64) -> Result<(), StoreError> {
        let params = (worker.to_string(), to_i64(tick)?, to_i64(lease_ms)?);
        self.with_client(move |client| async move {
            let (worker, tick, lease_ms) = params;
            client
                .execute(
                    "UPDATE seed_claims SET lease_until = clock_timestamp() + $3::int8 * interval '1 millisecond' \
                     WHERE tick = $1 AND holder = $2 AND NOT lost AND lease_until >= clock_timestamp()",
                    &[&tick, &worker, &lease_ms],
                )
                .await
                .map_err(pg_error)?;
            Ok(())
        })
    }

    fn submit_turn(&self, facts: Vec<Fact>, turn: SealTurn) -> TurnTicket {
        assert!(!turn.sealed.is_empty(), "a turn seals at least one wake");
        self.committing.submit_turn(facts, turn, self.no_committer())
    }

    fn wakes(&self, tick: u64) -> Result<Vec<QueuedWake>, StoreError> {
        let tick = to_i64(tick)?;
        self.with_client(move |client| async move {
            let rows = client
                .query("SELECT idx, being, wake FROM seed_wakes WHERE tick = $1 ORDER BY idx", &[&tick])
                .await
                .map_err(pg_error)?;
            rows.iter()
                .map(|row| {
                    Ok(QueuedWake {
                        index: to_u64(row.get(0)),
                        being: being_of(row.get::<_, &[u8]>(1))?,
                        wake: row.get(2),
                    })
                })
                .collect()
        })
    }

    fn results(&self, tick: u64, from: u64) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let tick = to_i64(tick)?;
        self.with_client(move |client| async move {
            let rows = client
                .query(
                    "SELECT first_idx, results FROM seed_turns \
                     WHERE tick = $1 AND first_idx + cardinality(results) > $2 ORDER BY first_idx",
                    &[&tick, &to_i64(from)?],
                )
                .await
                .map_err(pg_error)?;
            let mut results = Vec::new();
            for row in &rows {
                let first = to_u64(row.get(0));
                let sealed: Vec<Vec<u8>> = row.get(1);
                let skip = from.saturating_sub(first) as usize;
                results.extend(
                    sealed.into_iter().enumerate().skip(skip).map(|(offset, bytes)| (first + offset as u64, bytes)),
                );
            }
            Ok(results)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_free_run(indexes: Range<u64>, max: u64, occupying: &[(u64, u64)], expected: Option<Range<u64>>) {
        let spans: Vec<Range<u64>> = occupying.iter().map(|(start, end)| *start..*end).collect();
        assert_eq!(free_run(indexes.clone(), max, &spans), expected, "{indexes:?} max {max} around {spans:?}");
    }

    #[test]
    fn a_claim_takes_the_lowest_run_no_live_claim_covers() {
        check_free_run(0..100, 10, &[], Some(0..10));
        check_free_run(0..5, 10, &[], Some(0..5));
        check_free_run(0..100, 10, &[(0, 4)], Some(4..14));
        check_free_run(0..100, 10, &[(0, 4), (4, 8), (12, 30)], Some(8..12));
        check_free_run(0..100, 10, &[(12, 30), (0, 4), (4, 8)], Some(8..12));
        check_free_run(20..100, 10, &[(0, 25)], Some(25..35));
        check_free_run(0..100, 10, &[(3, 5)], Some(0..3));
        check_free_run(0..100, 10, &[(0, 100)], None);
        check_free_run(0..100, 10, &[(0, 50), (50, 100)], None);
        check_free_run(0..10, 10, &[(0, 4), (6, 10)], Some(4..6));
        check_free_run(0..100, 0, &[], None);
        check_free_run(7..7, 10, &[], None);
        check_free_run(0..100, 10, &[(5, 5)], Some(0..10));
    }

    #[track_caller]
    fn check_preferred(indexes: Range<u64>, occupying: &[(u64, u64)], prefer: &[u64], expected: Option<Range<u64>>) {
        let spans: Vec<Range<u64>> = occupying.iter().map(|(start, end)| *start..*end).collect();
        let found = preferred_free_run(indexes.clone(), 10, &spans, prefer);
        assert_eq!(found, expected, "{indexes:?} around {spans:?} preferring {prefer:?}");
    }

    /// A worker claims the runs it had the round before where they are
    /// free, and the lowest free run where none is.
    #[test]
    fn a_claim_starts_at_the_first_preferred_wake_that_starts_a_free_run() {
        check_preferred(0..100, &[], &[], Some(0..10));
        check_preferred(0..100, &[], &[40, 20], Some(40..50));
        check_preferred(0..100, &[(40, 50)], &[40, 20], Some(20..30));
        // Inside a held run, or where one begins 5 wakes on: a shorter run.
        check_preferred(0..100, &[(40, 50), (25, 30)], &[45, 20], Some(20..25));
        // Below the turn (sealed), past the round, or all held: the lowest.
        check_preferred(30..100, &[], &[10, 100, 200], Some(30..40));
        check_preferred(0..100, &[(0, 10), (40, 50)], &[40, 45], Some(10..20));
        check_preferred(0..100, &[(0, 100)], &[40], None);
    }

    fn claim(epoch: u64, wakes: Range<u64>, holder: &str) -> ClaimRow {
        ClaimRow { epoch, wakes, holder: holder.into() }
    }

    #[track_caller]
    fn check_fence(first: u64, epochs: &[u64], claims: &[ClaimRow], expected: Option<&str>) {
        let turn = SealTurn {
            worker: "w1".into(),
            tick: 3,
            first,
            sealed: epochs.iter().map(|epoch| (*epoch, Vec::new())).collect(),
        };
        assert_eq!(fence_refusal(&turn, claims).as_deref(), expected);
    }

    #[test]
    fn a_turn_seals_only_wakes_its_worker_still_holds_at_their_epochs() {
        check_fence(0, &[4, 4, 4], &[claim(4, 0..3, "w1")], None);
        // A run across the worker's two claims.
        check_fence(2, &[4, 7], &[claim(4, 0..3, "w1"), claim(7, 3..9, "w1")], None);
        check_fence(
            0,
            &[4, 4],
            &[claim(9, 0..2, "w2")],
            Some("the lease of wake 0 moved (held by w2 at epoch 9, claimed at epoch 4)"),
        );
        check_fence(0, &[4, 4], &[claim(4, 0..1, "w1")], Some("the lease of wake 1 was lost (claimed at epoch 4)"));
        check_fence(0, &[4], &[], Some("the lease of wake 0 was lost (claimed at epoch 4)"));
        // Same epoch, another holder: never this worker's claim.
        check_fence(
            0,
            &[4],
            &[claim(4, 0..1, "w2")],
            Some("the lease of wake 0 moved (held by w2 at epoch 4, claimed at epoch 4)"),
        );
    }
}
