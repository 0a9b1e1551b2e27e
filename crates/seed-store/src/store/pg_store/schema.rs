//! The PostgreSQL schema, versioned: each migration is applied once, in
//! order, in one transaction under an advisory lock, so two processes opening
//! a fresh database at once neither race nor apply a step twice.
//!
//! | table                 | key                 | holds                                   | kind    |
//! |-----------------------|---------------------|-----------------------------------------|---------|
//! | `seed_land`           | `id` = 1            | the next land seq and the count of fork proofs written: the land's one lock | primary |
//! | `seed_facts`          | `(being, seq)`      | land seq (unique) and envelope bytes    | primary |
//! | `seed_fork_proofs`    | `(being, seq, rival)` | the rival envelope                    | primary |
//! | `seed_reel_keys`      | `being`             | the key that signs its next fact        | derived |
//! | `seed_names`          | `(name, being)`     | —                                       | derived |
//! | `seed_forked`         | `being`             | —: the being has a fork proof           | derived |
//!
//! | `seed_runs`           | `id` = 1            | the run a pool of workers serves (schema 2) | queue |
//! | `seed_rounds`         | `tick`              | cursor, time, wake count, turn           | queue   |
//! | `seed_wakes`          | `(tick, idx)`       | being, wake                              | queue   |
//! | `seed_claims`         | `(tick, epoch)`     | a run of wakes: holder, lease, `lost` (schema 4) | queue |
//! | `seed_turns`          | `(tick, first_idx)` | one turn's results (schema 4)            | queue   |
//!
//! The queue tables (`pg_store/work.rs`) hold no fact: deleting them loses
//! only an unfinished run's progress.
//!
//! The land order is the `land_seq` column: every commit takes the row lock
//! of `seed_land` first and holds it to COMMIT (see `committer.rs`).

use crate::store::pg_store::pg_error;
use crate::store::StoreError;

/// The schema version this build writes and reads.
pub const PG_SCHEMA_VERSION: i32 = 5;

/// Any 64-bit number the project owns: the advisory lock migrations take.
const MIGRATION_LOCK_KEY: i64 = 0x5eed_0000_0000_0001;

/// Each migration: its version and the statements that take the schema to it.
const MIGRATIONS: &[(i32, &str)] = &[
    (
        1,
        "CREATE TABLE seed_land (
         id smallint PRIMARY KEY CHECK (id = 1),
         next_land_seq bigint NOT NULL CHECK (next_land_seq >= 0),
         fork_proofs bigint NOT NULL CHECK (fork_proofs >= 0)
     );
     INSERT INTO seed_land (id, next_land_seq, fork_proofs) VALUES (1, 0, 0);
     CREATE TABLE seed_facts (
         being bytea NOT NULL CHECK (length(being) = 32),
         seq bigint NOT NULL CHECK (seq >= 0),
         land_seq bigint NOT NULL UNIQUE CHECK (land_seq >= 0),
         envelope bytea NOT NULL,
         PRIMARY KEY (being, seq)
     );
     CREATE TABLE seed_fork_proofs (
         being bytea NOT NULL,
         seq bigint NOT NULL,
         rival bytea NOT NULL,
         envelope bytea NOT NULL,
         PRIMARY KEY (being, seq, rival)
     );
     CREATE TABLE seed_reel_keys (being bytea PRIMARY KEY, public_key bytea NOT NULL);
     CREATE TABLE seed_names (name text NOT NULL, being bytea NOT NULL, PRIMARY KEY (name, being));
     CREATE TABLE seed_forked (being bytea PRIMARY KEY);",
    ),
    (
        2,
        "CREATE TABLE seed_runs (
             id smallint PRIMARY KEY CHECK (id = 1),
             digest bytea NOT NULL CHECK (length(digest) = 32),
             finished boolean NOT NULL
         );
         CREATE TABLE seed_rounds (
             tick bigint PRIMARY KEY CHECK (tick >= 0),
             cursor bigint NOT NULL CHECK (cursor >= 0),
             now_ms bigint NOT NULL CHECK (now_ms >= 0),
             wakes bigint NOT NULL CHECK (wakes >= 0),
             turn bigint NOT NULL CHECK (turn >= 0 AND turn <= wakes)
         );
         CREATE TABLE seed_wakes (
             tick bigint NOT NULL REFERENCES seed_rounds (tick) ON DELETE CASCADE,
             idx bigint NOT NULL CHECK (idx >= 0),
             being bytea NOT NULL CHECK (length(being) = 32),
             wake bytea NOT NULL,
             holder text,
             epoch bigint NOT NULL DEFAULT 0,
             lease_until timestamptz,
             result bytea,
             PRIMARY KEY (tick, idx)
         );
         CREATE TABLE seed_leases (being bytea PRIMARY KEY, epoch bigint NOT NULL CHECK (epoch > 0));",
    ),
    // Whether the run's driver writes a moment trace: workers leave the
    // trace line out of a wake's result when it does not.
    (3, "ALTER TABLE seed_runs ADD COLUMN traced boolean NOT NULL DEFAULT true;"),
    // Claims are runs of wakes, one row each, and a turn's results one row:
    // a claim or a seal writes a few rows, not one per wake (docs/scale.md).
    // The queue's tables reference no round: a foreign key checked per row
    // made writing a round's wakes cost more than the rows (start_run
    // clears them all). A run in flight across this upgrade is ended: its
    // driver stops.
    (
        4,
        "UPDATE seed_runs SET finished = true;
         DELETE FROM seed_wakes;
         DELETE FROM seed_rounds;
         DROP TABLE seed_leases;
         ALTER TABLE seed_wakes DROP COLUMN holder, DROP COLUMN epoch, DROP COLUMN lease_until, DROP COLUMN result,
             DROP CONSTRAINT seed_wakes_tick_fkey;
         CREATE SEQUENCE seed_claim_epochs;
         CREATE TABLE seed_claims (
             tick bigint NOT NULL,
             epoch bigint NOT NULL CHECK (epoch > 0),
             first_idx bigint NOT NULL CHECK (first_idx >= 0),
             end_idx bigint NOT NULL CHECK (end_idx > first_idx),
             holder text NOT NULL,
             lease_until timestamptz NOT NULL,
             lost boolean NOT NULL DEFAULT false,
             PRIMARY KEY (tick, epoch)
         );
         CREATE TABLE seed_turns (
             tick bigint NOT NULL,
             first_idx bigint NOT NULL CHECK (first_idx >= 0),
             results bytea[] NOT NULL,
             PRIMARY KEY (tick, first_idx)
         );",
    ),
    // The runner lease of a live land (`store/runner.rs`): every commit
    // already locks this row, and reads the epoch it is fenced by there.
    (
        5,
        "ALTER TABLE seed_land ADD COLUMN runner text,
             ADD COLUMN runner_epoch bigint NOT NULL DEFAULT 0 CHECK (runner_epoch >= 0),
             ADD COLUMN runner_until timestamptz;",
    ),
];

/// Why a database cannot hold this build's land.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error(
        "the database's seed schema is version {found}, newer than this build's {PG_SCHEMA_VERSION}: upgrade seed"
    )]
    Newer { found: i32 },
    #[error("the database holds no seed schema (version {found}, this build needs {PG_SCHEMA_VERSION}); open it once to write to create it")]
    Missing { found: i32 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The version the database is at (0: no seed schema).
pub(super) async fn schema_version(client: &tokio_postgres::Client) -> Result<i32, StoreError> {
    let exists = client
        .query_one("SELECT to_regclass('seed_schema_migrations') IS NOT NULL", &[])
        .await
        .map_err(pg_error)?
        .get::<_, bool>(0);
    if !exists {
        return Ok(0);
    }
    let row = client.query_one("SELECT coalesce(max(version), 0) FROM seed_schema_migrations", &[]).await;
    Ok(row.map_err(pg_error)?.get(0))
}

/// Brings the schema to [`PG_SCHEMA_VERSION`] (writers), or checks it is
/// there (readers, which write nothing).
pub(super) async fn prepare(client: &mut tokio_postgres::Client, write: bool) -> Result<(), SchemaError> {
    let found = schema_version(client).await?;
    if found > PG_SCHEMA_VERSION {
        return Err(SchemaError::Newer { found });
    }
    if found == PG_SCHEMA_VERSION {
        return Ok(());
    }
    if !write {
        return Err(SchemaError::Missing { found });
    }
    let transaction = client.transaction().await.map_err(pg_error)?;
    transaction.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK_KEY]).await.map_err(pg_error)?;
    transaction
        .batch_execute("CREATE TABLE IF NOT EXISTS seed_schema_migrations (version integer PRIMARY KEY)")
        .await
        .map_err(pg_error)?;
    let at: i32 = transaction
        .query_one("SELECT coalesce(max(version), 0) FROM seed_schema_migrations", &[])
        .await
        .map_err(pg_error)?
        .get(0);
    for (version, statements) in MIGRATIONS.iter().filter(|(version, _)| *version > at) {
        transaction.batch_execute(statements).await.map_err(pg_error)?;
        transaction
            .execute("INSERT INTO seed_schema_migrations (version) VALUES ($1)", &[version])
            .await
            .map_err(pg_error)?;
    }
    transaction.commit().await.map_err(pg_error)?;
    Ok(())
}
