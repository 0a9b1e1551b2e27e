//! The runner lease in PostgreSQL (`store/runner.rs` says what it promises):
//! three columns of the `seed_land` row every commit locks, so taking the
//! lease waits for the commit in flight and the next commit reads the epoch.

use super::{pg_error, to_i64, to_u64, PgStore};
use crate::store::runner::{RunnerHolder, RunnerLease};
use crate::store::StoreError;
use std::sync::atomic::Ordering;

impl RunnerLease for PgStore {
    fn take_runner(&self, holder: &str, lease_ms: u64) -> Result<Option<u64>, StoreError> {
        let (holder, lease_ms) = (holder.to_string(), to_i64(lease_ms)?);
        let taken = self.with_client(move |client| async move {
            let row = client
                .query_opt(
                    "UPDATE seed_land SET runner = $1, runner_epoch = runner_epoch + 1, \
                         runner_until = clock_timestamp() + $2::int8 * interval '1 millisecond' \
                     WHERE id = 1 AND (runner_until IS NULL OR runner_until < clock_timestamp()) \
                     RETURNING runner_epoch",
                    &[&holder, &lease_ms],
                )
                .await
                .map_err(pg_error)?;
            Ok(row.map(|row| to_u64(row.get(0))))
        })?;
        if let Some(epoch) = taken {
            self.runner_fence.store(epoch, Ordering::SeqCst);
        }
        Ok(taken)
    }

    fn renew_runner(&self, epoch: u64, lease_ms: u64) -> Result<bool, StoreError> {
        let (epoch, lease_ms) = (to_i64(epoch)?, to_i64(lease_ms)?);
        self.with_client(move |client| async move {
            let renewed = client
                .execute(
                    "UPDATE seed_land SET runner_until = clock_timestamp() + $2::int8 * interval '1 millisecond' \
                     WHERE id = 1 AND runner_epoch = $1",
                    &[&epoch, &lease_ms],
                )
                .await
                .map_err(pg_error)?;
            Ok(renewed == 1)
        })
    }

    fn release_runner(&self, epoch: u64) -> Result<(), StoreError> {
        let epoch = to_i64(epoch)?;
        self.with_client(move |client| async move {
            client
                .execute("UPDATE seed_land SET runner_until = NULL WHERE id = 1 AND runner_epoch = $1", &[&epoch])
                .await
                .map_err(pg_error)?;
            Ok(())
        })
    }

    fn runner(&self) -> Result<Option<RunnerHolder>, StoreError> {
        self.with_client(|client| async move {
            let row = client
                .query_one(
                    "SELECT runner, runner_epoch, coalesce(runner_until >= clock_timestamp(), false) \
                     FROM seed_land WHERE id = 1",
                    &[],
                )
                .await
                .map_err(pg_error)?;
            Ok(row.get::<_, Option<String>>(0).map(|holder| RunnerHolder {
                holder,
                epoch: to_u64(row.get(1)),
                live: row.get(2),
            }))
        })
    }
}
