//! The PostgreSQL store: a land's facts in a database that several `seed`
//! processes, on several machines, write and read at once (issue 27).
//!
//! The tables are in `schema.rs`; the one writing thread of each process is
//! `committer.rs`. What makes several writers safe:
//!
//! - **One land order.** A commit takes the row lock of `seed_land` first,
//!   gives its facts the land seqs from `next_land_seq` on, and holds the
//!   lock until COMMIT. Commits therefore happen one at a time, in land-seq
//!   order, and a snapshot that sees a commit sees every commit before it: a
//!   reader that read `next_land_seq` = N can never miss a fact below N, and
//!   never finds a gap. Group commit amortises the lock (one lock a group).
//! - **Compare-and-swap on reel heads.** Under that lock a committer reads
//!   the heads of the group's beings as committed (or keeps its own, when
//!   `next_land_seq` shows nobody else committed since its last group) and
//!   applies the chain rules (`chain::judge`) to them; the primary key
//!   `(being, seq)` is the last guard.
//! - **Acknowledged means durable.** An append is answered after COMMIT
//!   returned, which PostgreSQL (with its default `synchronous_commit`) does
//!   once the commit is in its write-ahead log on disk.
//!
//! Every call is synchronous, like the `Store` trait: the store runs its own
//! small tokio runtime and each call waits for its work there, so it may be
//! called from any thread, inside another runtime too (the portal).

mod committer;
mod followed;
mod runner;
pub mod schema;
mod work;

use crate::fact::body::KIND_END;
use crate::fact::{BeingId, Fact, FactId, Hash32, PublicKeyBytes};
use crate::limits::Limits;
use crate::store::chain::IndexDeriver;
use crate::store::index_check::IndexComparison;
use crate::store::queue::Committing;
use crate::store::{
    decode_entry_envelope, AppendTicket, DerivedIndexes, ForkProof, Head, LandEntry, RawRecord, ReindexReport, Store,
    StoreError, StoredFact,
};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use schema::SchemaError;
use std::collections::BTreeSet;
use std::future::Future;
use std::str::FromStr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Connections each process keeps open to the database.
pub const PG_POOL_CONNECTIONS_MAX: usize = 4;
/// Threads of the store's own runtime (they wait on the network, mostly).
pub const PG_RUNTIME_THREADS: usize = 2;
/// How long a connection attempt may take before the store gives up.
pub const PG_CONNECT_TIMEOUT_MS: u64 = 10_000;
/// Rows a long read (reindex, the land log's comparison) fetches at a time.
pub const PG_READ_PAGE_ROWS: i64 = 65_536;

/// Whether `text` names a PostgreSQL store (`postgres://` or `postgresql://`).
pub fn is_postgres_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// `url` with any password replaced by `***`, for messages and logs: a
/// password never reaches either.
pub fn redact_store_url(url: &str) -> String {
    rewrite_password(url, Some("***"))
}

/// `url` with any password left out, as `land.toml` records it (the
/// password comes from `PGPASSWORD`).
pub fn url_without_password(url: &str) -> String {
    rewrite_password(url, None)
}

fn rewrite_password(url: &str, replacement: Option<&str>) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => match replacement {
                Some(replacement) => format!("{user}:{replacement}@{host}"),
                None => format!("{user}@{host}"),
            },
            None => format!("{user_info}@{host}"),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .filter_map(|pair| match (pair.split_once('='), replacement) {
                    (Some(("password", _)), Some(replacement)) => Some(format!("password={replacement}")),
                    (Some(("password", _)), None) => None,
                    _ => Some(pair.to_string()),
                })
                .collect();
            if query.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", query.join("&"))
            }
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

#[derive(Debug, thiserror::Error)]
pub enum PgOpenError {
    #[error("{store} is not a PostgreSQL URL this build can read: {reason}")]
    BadUrl { store: String, reason: String },
    #[error("cannot reach PostgreSQL at {store}: {reason}")]
    Connect { store: String, reason: String },
    #[error("PostgreSQL at {store}: {source}")]
    Schema { store: String, source: Box<SchemaError> },
    #[error("cannot start the PostgreSQL store's threads: {0}")]
    Threads(std::io::Error),
    #[error("cannot make the scratch schema {schema} in {store}: {reason}")]
    ScratchSchema { store: String, schema: String, reason: String },
}

/// A PostgreSQL error as a store error, with the server's own message.
pub(crate) fn pg_error(error: tokio_postgres::Error) -> StoreError {
    let reason = match error.as_db_error() {
        Some(db) => format!("PostgreSQL: {} ({})", db.message(), db.code().code()),
        None => format!("PostgreSQL: {error}"),
    };
    StoreError::Io { reason }
}

fn pool_error(error: deadpool_postgres::PoolError) -> StoreError {
    match error {
        deadpool_postgres::PoolError::Backend(error) => pg_error(error),
        other => StoreError::Io { reason: format!("PostgreSQL connection pool: {other}") },
    }
}

pub(crate) fn to_i64(value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Io { reason: format!("{value} does not fit PostgreSQL's bigint") })
}

/// A non-negative bigint column (the schema's checks keep them so).
pub(crate) fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

pub(crate) fn being_of(bytes: &[u8]) -> Result<BeingId, StoreError> {
    BeingId::from_slice(bytes)
        .ok_or_else(|| StoreError::Io { reason: format!("a stored being id is {} bytes, not 32", bytes.len()) })
}

/// A reel's head from its last stored fact and its key index entry.
pub(crate) fn head_of(being: &BeingId, seq: i64, envelope: &[u8], key: Option<&[u8]>) -> Result<Head, StoreError> {
    let seq = to_u64(seq);
    let fact = Fact::decode_envelope_for_index(envelope).map_err(|error| StoreError::Corrupt {
        being: *being,
        seq,
        reason: error.to_string(),
    })?;
    let public_key = key.and_then(PublicKeyBytes::from_slice).ok_or_else(|| StoreError::Io {
        reason: format!("the key index entry of {being} is missing or malformed (run `seed reindex`)"),
    })?;
    Ok(Head {
        seq,
        id: fact.id(),
        stored_time_ms: fact.header.stored_time_ms,
        public_key,
        ended: fact.kind() == KIND_END,
    })
}

/// The heads of the beings in `$1` (a `bytea[]`): one row per being with a
/// reel, read in one statement.
pub(crate) const HEADS_SQL: &str =
    "SELECT w.being, f.seq, f.envelope, k.public_key FROM unnest($1::bytea[]) AS w(being) \
     CROSS JOIN LATERAL (SELECT seq, envelope FROM seed_facts WHERE being = w.being ORDER BY seq DESC LIMIT 1) f \
     LEFT JOIN seed_reel_keys k ON k.being = w.being";

/// A row of [`HEADS_SQL`].
pub(crate) fn head_row(row: &tokio_postgres::Row) -> Result<(BeingId, Head), StoreError> {
    let being = being_of(row.get::<_, &[u8]>(0))?;
    let head = head_of(&being, row.get(1), row.get::<_, &[u8]>(2), row.get::<_, Option<&[u8]>>(3))?;
    Ok((being, head))
}

/// Runs the store's asynchronous work from synchronous callers.
#[derive(Clone)]
pub(crate) struct Runner {
    handle: tokio::runtime::Handle,
}

impl Runner {
    /// Runs `work` on the store's runtime and waits for it (from any thread,
    /// inside another runtime too: the wait is a plain channel).
    pub(crate) fn run<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        crate::store::Ticket::waiting(self.start(work)).wait()
    }

    /// Starts `work` on the store's runtime; its outcome arrives on the
    /// channel returned.
    pub(crate) fn start<T, F>(&self, work: F) -> oneshot::Receiver<Result<T, StoreError>>
    where
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        let (sender, receiver) = oneshot::channel();
        self.handle.spawn(async move {
            let _ = sender.send(work.await);
        });
        receiver
    }
}

pub struct PgStore {
    runtime: Option<tokio::runtime::Runtime>,
    runner: Runner,
    pool: Pool,
    committing: Committing,
    read_only: bool,
    /// How to connect, for the listening connection of the wake queue.
    config: tokio_postgres::Config,
    listener: work::ListenerSlot,
    /// The schema of a store opened for one use (`open_scratch`).
    scratch_schema: Option<String>,
    /// The runner lease epoch every commit is fenced by, once this store
    /// took the lease (0: none; `store/runner.rs`).
    runner_fence: Arc<AtomicU64>,
    /// What this process read of other processes' commits, for its
    /// committer's kept heads (`followed.rs`).
    followed: Arc<std::sync::Mutex<followed::FollowedTail>>,
}

impl Drop for PgStore {
    fn drop(&mut self) {
        self.committing.stop();
        // Never blocks, so a store may be dropped inside another runtime.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl PgStore {
    /// Opens the land's store in the database `url` names, creating or
    /// migrating its schema, with this process's committer.
    pub fn open(url: &str, limits: &Limits) -> Result<PgStore, PgOpenError> {
        PgStore::open_for(url, Some(limits), None)
    }

    /// Opens a store of its own in a new schema `schema` of the database
    /// `url` names, for one use (`seed corpus check` on PostgreSQL): the
    /// rest of the database is not touched, and [`PgStore::drop_scratch`]
    /// removes the schema. An existing schema of that name is refused.
    pub fn open_scratch(url: &str, schema: &str, limits: &Limits) -> Result<PgStore, PgOpenError> {
        assert!(
            !schema.is_empty()
                && schema.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_'),
            "a scratch schema's name is made by the caller from [a-z0-9_]"
        );
        PgStore::open_for(url, Some(limits), Some(schema))
    }

    /// Drops the scratch schema this store was opened in, with its tables.
    pub fn drop_scratch(self) -> Result<(), StoreError> {
        let schema = self.scratch_schema.clone().expect("drop_scratch on a store opened by open_scratch");
        self.close()?;
        self.with_client(move |client| async move {
            client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await.map_err(pg_error)
        })
    }

    /// Opens it to read only: nothing is created or written (the session is
    /// read-only at the server), and appends are refused.
    pub fn open_read_only(url: &str) -> Result<PgStore, PgOpenError> {
        PgStore::open_for(url, None, None)
    }

    fn open_for(url: &str, writing: Option<&Limits>, scratch_schema: Option<&str>) -> Result<PgStore, PgOpenError> {
        let store = redact_store_url(url);
        let mut config = tokio_postgres::Config::from_str(url)
            .map_err(|error| PgOpenError::BadUrl { store: store.clone(), reason: error.to_string() })?;
        config.connect_timeout(std::time::Duration::from_millis(PG_CONNECT_TIMEOUT_MS));
        // As libpq does: a URL without a password takes `PGPASSWORD`.
        if config.get_password().is_none() {
            if let Ok(password) = std::env::var("PGPASSWORD") {
                config.password(password);
            }
        }
        config.application_name("seed");
        let mut options = Vec::new();
        if writing.is_none() {
            options.push("-c default_transaction_read_only=on".to_string());
        }
        if let Some(schema) = scratch_schema {
            options.push(format!("-c search_path={schema}"));
        }
        if !options.is_empty() {
            config.options(options.join(" "));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(PG_RUNTIME_THREADS)
            .thread_name("seed-postgres")
            .enable_all()
            .build()
            .map_err(PgOpenError::Threads)?;
        let runner = Runner { handle: runtime.handle().clone() };
        let manager = Manager::from_config(
            config.clone(),
            tokio_postgres::NoTls,
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(PG_POOL_CONNECTIONS_MAX)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(|error| PgOpenError::BadUrl { store: store.clone(), reason: error.to_string() })?;
        let (first, write, named) = (pool.clone(), writing.is_some(), store.clone());
        let create_schema = scratch_schema.map(|schema| (schema.to_string(), format!("CREATE SCHEMA {schema}")));
        runner
            .run(async move {
                let mut client = match first.get().await {
                    Ok(client) => client,
                    Err(error) => return Ok(Err(PgOpenError::Connect { store: named, reason: connect_reason(error) })),
                };
                if let Some((schema, create_schema)) = create_schema {
                    if let Err(error) = client.batch_execute(&create_schema).await {
                        let reason = pg_error(error).to_string();
                        return Ok(Err(PgOpenError::ScratchSchema { store: named, schema, reason }));
                    }
                }
                let prepared = schema::prepare(&mut client, write).await;
                Ok(prepared.map_err(|source| PgOpenError::Schema { store: named, source: Box::new(source) }))
            })
            .unwrap_or_else(|error| Err(PgOpenError::Connect { store: store.clone(), reason: error.to_string() }))?;
        let runner_fence = Arc::new(AtomicU64::new(0));
        let followed = Arc::new(std::sync::Mutex::new(followed::FollowedTail::default()));
        let committing = match writing {
            Some(limits) => {
                let committer =
                    committer::Committer::new(runner.clone(), pool.clone(), runner_fence.clone(), followed.clone());
                Committing::start(committer, limits.append_queue_facts_max, limits.group_commit_facts_max)
                    .map_err(PgOpenError::Threads)?
            }
            None => Committing::none(),
        };
        Ok(PgStore {
            runtime: Some(runtime),
            runner,
            pool,
            committing,
            read_only: writing.is_none(),
            config,
            listener: work::ListenerSlot::default(),
            scratch_schema: scratch_schema.map(str::to_string),
            runner_fence,
            followed,
        })
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn no_committer(&self) -> StoreError {
        crate::store::queue::no_committer(self.read_only)
    }

    /// Stops the committer after it has written everything queued.
    pub fn close(&self) -> Result<(), StoreError> {
        self.committing.stop();
        Ok(())
    }

    /// Runs `query` with a pooled connection.
    fn with_client<T, F, Fut>(&self, query: F) -> Result<T, StoreError>
    where
        F: FnOnce(deadpool_postgres::Object) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        let pool = self.pool.clone();
        self.runner.run(async move {
            let client = pool.get().await.map_err(pool_error)?;
            query(client).await
        })
    }

    /// Rows of `sql` with `params`, each turned into a value by `row`.
    fn rows<T, P>(
        &self,
        sql: &'static str,
        params: P,
        row: fn(&tokio_postgres::Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError>
    where
        T: Send + 'static,
        P: Params,
    {
        self.with_client(move |client| async move {
            let rows = client.query(sql, &params.as_refs()).await.map_err(pg_error)?;
            rows.iter().map(row).collect()
        })
    }
}

impl crate::store::StoreSurgery for PgStore {
    fn stored_envelope(&self, being: &BeingId, seq: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let rows = self.rows(
            "SELECT envelope FROM seed_facts WHERE being = $1 AND seq = $2",
            (being.as_bytes().to_vec(), to_i64(seq)?),
            |row| Ok(row.get::<_, Vec<u8>>(0)),
        )?;
        Ok(rows.into_iter().next())
    }

    /// Replaces the stored envelope of `being`'s fact at `seq`, bypassing
    /// every rule: for the tamper tests and repair tools.
    fn overwrite_envelope_unchecked(&self, being: &BeingId, seq: u64, envelope: &[u8]) -> Result<(), StoreError> {
        let params = (being.as_bytes().to_vec(), to_i64(seq)?, envelope.to_vec());
        self.with_client(move |client| async move {
            let (being, seq, envelope) = params;
            client
                .execute(
                    "UPDATE seed_facts SET envelope = $3 WHERE being = $1 AND seq = $2",
                    &[&being, &seq, &envelope],
                )
                .await
                .map_err(pg_error)?;
            Ok(())
        })
    }
}

fn connect_reason(error: deadpool_postgres::PoolError) -> String {
    match error {
        deadpool_postgres::PoolError::Backend(error) => match error.as_db_error() {
            Some(db) => db.message().to_string(),
            None => match std::error::Error::source(&error) {
                Some(source) => format!("{error}: {source}"),
                None => error.to_string(),
            },
        },
        other => other.to_string(),
    }
}

/// Query parameters owned by a query's future.
trait Params: Send + Sync + 'static {
    fn as_refs(&self) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)>;
}

impl Params for () {
    fn as_refs(&self) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
        Vec::new()
    }
}

impl<A: tokio_postgres::types::ToSql + Send + Sync + 'static> Params for (A,) {
    fn as_refs(&self) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
        vec![&self.0]
    }
}

impl<A, B> Params for (A, B)
where
    A: tokio_postgres::types::ToSql + Send + Sync + 'static,
    B: tokio_postgres::types::ToSql + Send + Sync + 'static,
{
    fn as_refs(&self) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
        vec![&self.0, &self.1]
    }
}

impl<A, B, C> Params for (A, B, C)
where
    A: tokio_postgres::types::ToSql + Send + Sync + 'static,
    B: tokio_postgres::types::ToSql + Send + Sync + 'static,
    C: tokio_postgres::types::ToSql + Send + Sync + 'static,
{
    fn as_refs(&self) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
        vec![&self.0, &self.1, &self.2]
    }
}

fn raw_record_row(row: &tokio_postgres::Row) -> Result<RawRecord, StoreError> {
    Ok(RawRecord {
        being: being_of(row.get::<_, &[u8]>(0))?,
        seq: to_u64(row.get(1)),
        land_seq: Some(to_u64(row.get(2))),
        envelope: row.get(3),
    })
}

fn land_entry_row(row: &tokio_postgres::Row) -> Result<LandEntry, StoreError> {
    Ok(LandEntry { land_seq: to_u64(row.get(0)), being: being_of(row.get::<_, &[u8]>(1))?, seq: to_u64(row.get(2)) })
}

fn being_row(row: &tokio_postgres::Row) -> Result<BeingId, StoreError> {
    being_of(row.get::<_, &[u8]>(0))
}

impl Store for PgStore {
    fn submit(&self, fact: Fact) -> AppendTicket {
        self.committing.submit(fact, self.no_committer())
    }

    fn appends_waiting(&self) -> u64 {
        self.committing.facts_waiting()
    }

    fn wake_queue(&self) -> Option<&dyn crate::store::work::WakeQueue> {
        Some(self)
    }

    fn runner_lease(&self) -> Option<&dyn crate::store::runner::RunnerLease> {
        Some(self)
    }

    fn head(&self, being: &BeingId) -> Result<Option<Head>, StoreError> {
        let being = *being;
        let rows = self.rows(
            "SELECT f.seq, f.envelope, k.public_key FROM seed_facts f \
             LEFT JOIN seed_reel_keys k ON k.being = f.being \
             WHERE f.being = $1 ORDER BY f.seq DESC LIMIT 1",
            (being.as_bytes().to_vec(),),
            |row| Ok((row.get::<_, i64>(0), row.get::<_, Vec<u8>>(1), row.get::<_, Option<Vec<u8>>>(2))),
        )?;
        match rows.into_iter().next() {
            Some((seq, envelope, key)) => Ok(Some(head_of(&being, seq, &envelope, key.as_deref())?)),
            None => Ok(None),
        }
    }

    fn heads(&self, beings: &[BeingId]) -> Result<Vec<Option<Head>>, StoreError> {
        let wanted: Vec<Vec<u8>> = beings.iter().map(|being| being.as_bytes().to_vec()).collect();
        let found: std::collections::BTreeMap<BeingId, Head> =
            self.rows(HEADS_SQL, (wanted,), head_row)?.into_iter().collect();
        Ok(beings.iter().map(|being| found.get(being).copied()).collect())
    }

    fn beings(&self) -> Result<Vec<BeingId>, StoreError> {
        self.rows("SELECT being FROM seed_reel_keys ORDER BY being", (), being_row)
    }

    fn beings_named(&self, name: &str) -> Result<Vec<BeingId>, StoreError> {
        self.rows("SELECT being FROM seed_names WHERE name = $1 ORDER BY being", (name.to_string(),), being_row)
    }

    fn reel(&self, being: &BeingId, from_seq: u64, to_seq: u64) -> Result<Vec<StoredFact>, StoreError> {
        let params = (being.as_bytes().to_vec(), to_i64(from_seq)?, to_i64(to_seq.min(i64::MAX as u64))?);
        let records = self.rows(
            "SELECT being, seq, land_seq, envelope FROM seed_facts \
             WHERE being = $1 AND seq >= $2 AND seq < $3 ORDER BY seq",
            params,
            raw_record_row,
        )?;
        records
            .iter()
            .map(|record| {
                let entry = LandEntry { land_seq: record.land_seq.unwrap_or(0), being: record.being, seq: record.seq };
                decode_entry_envelope(&entry, &record.envelope)
            })
            .collect()
    }

    fn land_seq_of(&self, being: &BeingId, seq: u64) -> Result<Option<u64>, StoreError> {
        let rows = self.rows(
            "SELECT land_seq FROM seed_facts WHERE being = $1 AND seq = $2",
            (being.as_bytes().to_vec(), to_i64(seq)?),
            |row| Ok(to_u64(row.get(0))),
        )?;
        Ok(rows.into_iter().next())
    }

    fn raw_records(&self, being: Option<&BeingId>) -> Result<Vec<RawRecord>, StoreError> {
        match being {
            Some(being) => self.rows(
                "SELECT being, seq, land_seq, envelope FROM seed_facts WHERE being = $1 ORDER BY seq",
                (being.as_bytes().to_vec(),),
                raw_record_row,
            ),
            None => {
                let mut records = Vec::new();
                let mut after = None;
                loop {
                    let slice = self.raw_records_after(after.as_ref(), PG_READ_PAGE_ROWS as usize)?;
                    let Some(last) = slice.last() else { break };
                    after = Some(last.being);
                    records.extend(slice);
                }
                Ok(records)
            }
        }
    }

    fn raw_records_after(&self, after: Option<&BeingId>, facts_max: usize) -> Result<Vec<RawRecord>, StoreError> {
        let after = after.map(|being| being.as_bytes().to_vec()).unwrap_or_default();
        let limit = i64::try_from(facts_max.max(1)).unwrap_or(i64::MAX);
        let mut records = self.rows(
            "SELECT being, seq, land_seq, envelope FROM seed_facts WHERE being > $1 ORDER BY being, seq LIMIT $2",
            (after, limit),
            raw_record_row,
        )?;
        // Always whole beings: the rest of the last one.
        let last = records.last().filter(|_| records.len() as i64 == limit).map(|last| (last.being, last.seq));
        if let Some((being, seq)) = last {
            let rest = self.rows(
                "SELECT being, seq, land_seq, envelope FROM seed_facts WHERE being = $1 AND seq > $2 ORDER BY seq",
                (being.as_bytes().to_vec(), to_i64(seq)?),
                raw_record_row,
            )?;
            records.extend(rest);
        }
        Ok(records)
    }

    fn land_len(&self) -> Result<u64, StoreError> {
        let rows = self.rows("SELECT next_land_seq FROM seed_land WHERE id = 1", (), |row| Ok(to_u64(row.get(0))))?;
        Ok(rows.into_iter().next().unwrap_or(0))
    }

    fn land_log(&self, from: u64, to: u64) -> Result<Vec<LandEntry>, StoreError> {
        self.rows(
            "SELECT land_seq, being, seq FROM seed_facts WHERE land_seq >= $1 AND land_seq < $2 ORDER BY land_seq",
            (to_i64(from)?, to_i64(to.min(i64::MAX as u64))?),
            land_entry_row,
        )
    }

    fn fact_at(&self, entry: &LandEntry) -> Result<Option<StoredFact>, StoreError> {
        let rows = self.rows(
            "SELECT envelope FROM seed_facts WHERE being = $1 AND seq = $2",
            (entry.being.as_bytes().to_vec(), to_i64(entry.seq)?),
            |row| Ok(row.get::<_, Vec<u8>>(0)),
        )?;
        rows.into_iter().next().map(|envelope| decode_entry_envelope(entry, &envelope)).transpose()
    }

    fn followed_facts(&self, facts: &[(u64, Fact)]) {
        if self.read_only {
            return;
        }
        let mut followed = self.followed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        followed.push(facts, committer::KEPT_HEADS_CATCH_UP_FACTS_MAX as usize);
    }

    fn land_log_with_envelopes(&self, from: u64, to: u64) -> Result<Vec<(LandEntry, Vec<u8>)>, StoreError> {
        self.rows(
            "SELECT land_seq, being, seq, envelope FROM seed_facts \
             WHERE land_seq >= $1 AND land_seq < $2 ORDER BY land_seq",
            (to_i64(from)?, to_i64(to.min(i64::MAX as u64))?),
            |row| Ok((land_entry_row(row)?, row.get::<_, Vec<u8>>(3))),
        )
    }

    fn fork_proofs(&self, being: Option<&BeingId>) -> Result<Vec<ForkProof>, StoreError> {
        let rows = self.rows(
            "SELECT p.being, p.seq, p.rival, p.envelope, f.envelope FROM seed_fork_proofs p \
             LEFT JOIN seed_facts f ON f.being = p.being AND f.seq = p.seq \
             WHERE $1::bytea IS NULL OR p.being = $1 ORDER BY p.being, p.seq, p.rival",
            (being.map(|being| being.as_bytes().to_vec()),),
            |row| {
                let kept = row
                    .get::<_, Option<&[u8]>>(4)
                    .and_then(|envelope| Fact::decode_envelope_for_index(envelope).ok())
                    .map_or(FactId::ZERO, |fact| fact.id());
                Ok(ForkProof {
                    being: being_of(row.get::<_, &[u8]>(0))?,
                    seq: to_u64(row.get(1)),
                    kept,
                    rival: FactId::from_slice(row.get::<_, &[u8]>(2)).unwrap_or(FactId::ZERO),
                    rival_envelope: row.get(3),
                })
            },
        )?;
        Ok(rows)
    }

    fn reindex(&self) -> Result<ReindexReport, StoreError> {
        self.committing.reindex(self.no_committer())
    }

    fn index_problems(&self, expected: &DerivedIndexes) -> Result<Vec<String>, StoreError> {
        let mut comparison = IndexComparison::new(expected);
        let kept = |being: &BeingId| !expected.skip.contains(being);
        let len = self.land_len()?;
        let mut from = 0;
        while from < len {
            let to = (from + PG_READ_PAGE_ROWS as u64).min(len);
            for entry in self.land_log(from, to)? {
                comparison.land_log_entry(entry.land_seq, Some((entry.being, entry.seq)));
            }
            from = to;
        }
        comparison.land_log_read();
        let names: BTreeSet<(String, BeingId)> = self
            .rows("SELECT name, being FROM seed_names", (), |row| Ok((row.get(0), being_of(row.get::<_, &[u8]>(1))?)))?
            .into_iter()
            .collect();
        let forked: BTreeSet<BeingId> =
            self.rows("SELECT being FROM seed_forked", (), being_row)?.into_iter().collect();
        comparison.names_and_forks(&names, &forked);
        let stored_keys: std::collections::BTreeMap<BeingId, Vec<u8>> = self
            .rows("SELECT being, public_key FROM seed_reel_keys", (), |row| {
                Ok((being_of(row.get::<_, &[u8]>(0))?, row.get(1)))
            })?
            .into_iter()
            .collect();
        for (being, head) in expected.heads.iter().filter(|(being, _)| kept(being)) {
            if stored_keys.get(being).map(Vec::as_slice) != Some(head.public_key.as_bytes().as_slice()) {
                comparison.key_entry_wrong(being);
            }
        }
        for being in stored_keys.keys().filter(|being| kept(being) && !expected.heads.contains_key(being)) {
            comparison.key_entry_unexpected(being);
        }
        Ok(comparison.into_problems())
    }

    fn derived_index_digest(&self) -> Result<Hash32, StoreError> {
        let mut hasher = blake3::Hasher::new();
        let len = self.land_len()?;
        let mut from = 0;
        while from < len {
            let to = (from + PG_READ_PAGE_ROWS as u64).min(len);
            for entry in self.land_log(from, to)? {
                hasher.update(&entry.land_seq.to_be_bytes());
                hasher.update(entry.being.as_bytes());
                hasher.update(&entry.seq.to_be_bytes());
            }
            from = to;
        }
        let keys = self.rows("SELECT being, public_key FROM seed_reel_keys ORDER BY being", (), |row| {
            Ok((row.get::<_, Vec<u8>>(0), row.get::<_, Vec<u8>>(1)))
        })?;
        for (being, key) in keys {
            hasher.update(&being);
            hasher.update(&key);
        }
        let names = self.rows("SELECT name, being FROM seed_names ORDER BY name, being", (), |row| {
            Ok((row.get::<_, String>(0), row.get::<_, Vec<u8>>(1)))
        })?;
        for (name, being) in names {
            hasher.update(&(name.len() as u64).to_be_bytes());
            hasher.update(name.as_bytes());
            hasher.update(&being);
        }
        for being in self.rows("SELECT being FROM seed_forked ORDER BY being", (), being_row)? {
            hasher.update(being.as_bytes());
        }
        Ok(Hash32(*hasher.finalize().as_bytes()))
    }
}

/// The derived indexes computed from the primary tables, read a page of
/// whole beings at a time (what a reindex writes).
pub(crate) async fn derive_indexes(
    transaction: &tokio_postgres::Transaction<'_>,
) -> Result<(DerivedIndexes, ReindexReport), StoreError> {
    let mut deriver = IndexDeriver::default();
    let mut after: Vec<u8> = Vec::new();
    loop {
        let rows = transaction
            .query(
                "SELECT being, seq, land_seq, envelope FROM seed_facts WHERE being > $1 ORDER BY being, seq LIMIT $2",
                &[&after, &PG_READ_PAGE_ROWS],
            )
            .await
            .map_err(pg_error)?;
        let Some(last) = rows.last() else { break };
        let last_being: Vec<u8> = last.get(0);
        let full_page = rows.len() as i64 == PG_READ_PAGE_ROWS;
        for row in &rows {
            deriver.push(&raw_record_row(row)?);
        }
        if full_page {
            let last_seq: i64 = last.get(1);
            let rest = transaction
                .query(
                    "SELECT being, seq, land_seq, envelope FROM seed_facts WHERE being = $1 AND seq > $2 ORDER BY seq",
                    &[&last_being, &last_seq],
                )
                .await
                .map_err(pg_error)?;
            for row in &rest {
                deriver.push(&raw_record_row(row)?);
            }
        }
        after = last_being;
    }
    for row in transaction.query("SELECT being FROM seed_fork_proofs", &[]).await.map_err(pg_error)? {
        deriver.fork_proof(being_of(row.get::<_, &[u8]>(0))?);
    }
    Ok(deriver.finish())
}

#[cfg(test)]
mod tests {
    use super::redact_store_url;

    #[test]
    fn a_password_never_reaches_a_message() {
        let check = |url: &str, expected: &str| assert_eq!(redact_store_url(url), expected, "{url}");
        check("postgres://seed:hunter2@db.example:5432/land", "postgres://seed:***@db.example:5432/land");
        check("postgresql://seed@db/land", "postgresql://seed@db/land");
        check(
            "postgres:///land?host=/tmp/pg&password=hunter2&user=x",
            "postgres:///land?host=/tmp/pg&password=***&user=x",
        );
        check("postgres://a:b:c@h/d?password=p", "postgres://a:***@h/d?password=***");
        check("not a url", "not a url");
        let stripped = |url: &str, expected: &str| assert_eq!(super::url_without_password(url), expected, "{url}");
        stripped("postgres://seed:hunter2@db/land", "postgres://seed@db/land");
        stripped("postgres:///land?password=hunter2", "postgres:///land");
        stripped("postgres:///land?host=/tmp/x&password=hunter2", "postgres:///land?host=/tmp/x");
    }
}
