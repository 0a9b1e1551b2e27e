//! A land: one installation's store, key ring, clock and limits, and the one
//! path by which facts are made (`submit` / `seal`).
//!
//! Folder layout of a land:
//!
//! ```text
//! land/
//!   land.toml   what this folder is (format, root and operator ids); written last at plant
//!   log/        the store: every fact in land order in segment files, their
//!               indexes, fork proofs (`store::LogStore`); `store/`, the sled
//!               store of earlier builds, is migrated into it once
//!   keys/ring   the key ring: every hosted being's key in one 0600 file (keys/ is 0700)
//!   witness     how many facts are durable, as last recorded: catches a truncated store
//!   verified-checkpoint   the root's signed record of the last clean `seed verify` (optional)
//!   snapshots/  world snapshots every `snapshot_every_facts` facts or more, and the
//!               root's record of those a clean `seed verify` vouched for
//! ```

pub mod copy;
mod loaded_writers;
mod migrate;
mod plant;
mod presign;

pub(crate) use plant::write_meta;
pub use plant::{PlantReport, PlantedBeing};
pub use presign::{sign_ahead, Presigned, UnsignedAhead, WriterHandle};

use crate::canonical;
use crate::check::checkpoint::{VerifiedCheckpoint, CHECKPOINT_FILE};
use crate::clock::{Clock, WallClock};
use crate::fact::body::{Cognition, GenesisBody, RotateKeyBody, KIND_GENESIS, KIND_ROTATE_KEY};
use crate::fact::{BeingId, CanonicalBody, Fact, FactError, FactId, Hash32, KeyPair, PublicKeyBytes, UnsignedFact};
use crate::keys::{random_bytes, KeyError, KeyRing};
use crate::limits::Limits;
use crate::snapshot::{SignedSnapshot, SnapshotShelf, VouchedSnapshots};
use crate::store::work::SealTurn;
use crate::store::{AppendTicket, LogOpenError, LogStore, PgStore, Store, StoreError};
use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub const LAND_META_FILE: &str = "land.toml";
pub const LAND_FORMAT_VERSION: u64 = 1;
/// The store: the facts as segment files and their indexes (`LogStore`).
const LOG_DIR: &str = "log";
/// Where lands of earlier builds kept their facts (a sled store), migrated
/// into `log/` the first time such a land is opened (`migrate.rs`).
const SLED_STORE_DIR: &str = "store";
const KEYS_DIR: &str = "keys";
/// How many facts the store had made durable, as last recorded (see `LogStore::open`).
const WITNESS_FILE: &str = "witness";
/// How many facts apart a land writes world snapshots unless its
/// `land.toml` says otherwise (`snapshot_every_facts`; 0 writes none): at
/// least, as a large world's are spaced wider (`seed_engine::snapshots`).
pub const SNAPSHOT_EVERY_FACTS_DEFAULT: u64 = 100_000;
/// Beings a planting mints as one group, whose geneses are signed together
/// (`UnsignedFact::sign_all`: a group of 64 signs about 1.25 times as fast
/// as one by one, and larger groups gain little more).
pub const PLANTING_GROUP_BEINGS: usize = 64;
/// Writers [`Land::load_writers`] derives the keys of as one group
/// (`KeyPair::derive_all`: 64 keys derive about 1.25 times as fast as one
/// by one), fewer when a small batch needs more groups to fill the threads.
pub const WRITER_KEYS_GROUP_BEINGS: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum LandError {
    #[error("no land at {dir}: run `seed plant --land {dir}` first")]
    NoLand { dir: PathBuf },
    #[error("{dir} is not a seed land (it has no {LAND_META_FILE})")]
    NotALand { dir: PathBuf },
    #[error("a land is already planted at {dir} (root {root}); nothing was changed")]
    AlreadyPlanted { dir: PathBuf, root: BeingId },
    #[error("{dir} is a read-only mirror of the land at {url}: it takes facts only from that land (verify, replay and read it; nothing can be sealed here)")]
    Mirror { dir: PathBuf, url: String },
    #[error("{dir} exists and is not empty, but holds no planted land (an interrupted plant?); remove it or choose another folder")]
    NotEmpty { dir: PathBuf },
    #[error("{path} is unreadable: {reason}")]
    Meta { path: PathBuf, reason: String },
    #[error("the land at {dir} is in use by another process (its store is locked)")]
    Locked { dir: PathBuf },
    #[error("{given:?} is not a store: give a postgres:// URL, or `folder` for the land folder's own store")]
    BadStore { given: String },
    #[error("the land at {dir} keeps its facts in {recorded}, not in {given} (its land.toml says where)")]
    StoreElsewhere { dir: PathBuf, recorded: String, given: String },
    #[error("{store} already holds the facts of a land; plant into an empty database")]
    StoreNotEmpty { store: String },
    #[error("the store of the land at {dir} cannot be opened: {reason}")]
    StoreOpen { dir: PathBuf, reason: String },
    #[error("the store of the land at {dir} is missing the reality root's reel {root} (truncated or replaced store?)")]
    StoreMissingFacts { dir: PathBuf, root: BeingId },
    #[error("no being named @{name} in this land")]
    UnknownName { name: String },
    #[error("no being with id {being} in this land")]
    UnknownBeing { being: BeingId },
    #[error("several beings are named @{name}: {ids}")]
    AmbiguousName { name: String, ids: String },
    #[error("invalid being reference {given:?}: {reason}")]
    BadReference { given: String, reason: String },
    #[error("invalid being name {name:?}: {reason}")]
    BadName { name: String, reason: String },
    #[error("fact body is {len} bytes, over the land's limit of {max} bytes (fact_body_bytes_max)")]
    BodyTooLarge { len: usize, max: usize },
    #[error("being {being} has ended; it can seal nothing more")]
    Ended { being: BeingId },
    #[error("being {being} moved to another land: its reel here ends in its move, and this land can sign nothing more for it")]
    MovedAway { being: BeingId },
    #[error("being {being} cannot move: {reason}")]
    NotMovable { being: BeingId, reason: &'static str },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Fact(#[from] FactError),
    #[error("{path}: {source}")]
    Checkpoint { path: PathBuf, source: crate::check::checkpoint::CheckpointError },
    #[error(transparent)]
    Snapshot(#[from] crate::snapshot::SnapshotError),
    /// A resumed run cannot prepare again the facts after a key rotation.
    #[error("{being}'s key was rotated after land seq {cursor}: a run cannot be resumed from before a rotation")]
    RewindPastRotation { being: BeingId, cursor: u64 },
}

/// The contents of `land.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandMeta {
    pub format: u64,
    pub root: String,
    pub operator: String,
    /// Facts between two world snapshots (absent: [`SNAPSHOT_EVERY_FACTS_DEFAULT`];
    /// 0: none). The one setting of `land.toml` an operator may change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_every_facts: Option<u64>,
    /// Where the facts are: absent, the folder's own `log/`; a
    /// `postgres://` URL (without its password, which comes from
    /// `PGPASSWORD`), a PostgreSQL database (docs/scale.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Present in a mirror's folder (`crate::mirror`): the URL of the land
    /// whose facts it copies. A mirror is read-only: opening it to write is
    /// refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror_of: Option<String>,
    /// Present in the mirror of one being's reel: the id of the land the
    /// being lives on (`root` then names the being). Such a mirror verifies
    /// but does not replay: a moment reads its whole land's world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror_being_of: Option<String>,
}

/// Where a land keeps its facts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StoreLocation {
    /// The land folder's own log store (`log/`).
    #[default]
    Folder,
    /// A PostgreSQL database, by URL.
    Postgres { url: String },
}

impl StoreLocation {
    /// Reads a `--store` value: `postgres://…` (or `postgresql://…`), or
    /// `folder` for the land folder's own store.
    pub fn parse(text: &str) -> Result<StoreLocation, LandError> {
        if text == "folder" {
            return Ok(StoreLocation::Folder);
        }
        if crate::store::is_postgres_url(text) {
            return Ok(StoreLocation::Postgres { url: text.to_string() });
        }
        Err(LandError::BadStore { given: crate::store::redact_store_url(text) })
    }

    /// Where a land's `land.toml` says its facts are.
    pub fn of_meta(meta: &LandMeta) -> StoreLocation {
        match &meta.store {
            Some(url) => StoreLocation::Postgres { url: url.clone() },
            None => StoreLocation::Folder,
        }
    }

    /// What `land.toml` records of it (its `store`): a URL without its password.
    pub fn recorded(&self) -> Option<String> {
        match self {
            StoreLocation::Folder => None,
            StoreLocation::Postgres { url } => Some(crate::store::pg_store::url_without_password(url)),
        }
    }

    /// Whether the two name the same store (a password does not count).
    pub fn same_place(&self, other: &StoreLocation) -> bool {
        self.recorded() == other.recorded()
    }

    /// How it is shown: a URL without its password.
    pub fn describe(&self) -> String {
        match self {
            StoreLocation::Folder => "the land folder".to_string(),
            StoreLocation::Postgres { url } => crate::store::redact_store_url(url),
        }
    }
}

/// The store a land opened: the folder's log store or a PostgreSQL one.
#[derive(Clone)]
enum LandStore {
    Log(Arc<LogStore>),
    Postgres(Arc<PgStore>),
}

impl std::ops::Deref for LandStore {
    type Target = dyn Store;

    fn deref(&self) -> &(dyn Store + 'static) {
        match self {
            LandStore::Log(store) => store.as_ref(),
            LandStore::Postgres(store) => store.as_ref(),
        }
    }
}

impl LandStore {
    fn shared(&self) -> Arc<dyn Store> {
        match self {
            LandStore::Log(store) => store.clone(),
            LandStore::Postgres(store) => store.clone(),
        }
    }

    fn close(&self) -> Result<(), StoreError> {
        match self {
            LandStore::Log(store) => store.close(),
            LandStore::Postgres(store) => store.close(),
        }
    }
}

/// What a caller gets back once a fact is durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sealed {
    pub being: BeingId,
    pub seq: u64,
    pub id: FactId,
    pub land_seq: u64,
    pub stored_time_ms: u64,
}

/// What a new being starts with.
#[derive(Debug, Clone)]
pub struct BeingSpec {
    pub name: String,
    pub parent: Option<BeingId>,
    pub cognition: Cognition,
    pub role_flow: Vec<ciborium::value::Value>,
    pub default_role: String,
    pub home_space: String,
}

/// Where new keys, nonces and tokens come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// The operating system's random source (live lands).
    Os,
    /// Derived from a seed and the being's name (simulations: the same seed
    /// plants the same beings with the same ids, so runs are reproducible).
    Seeded([u8; 32]),
}

impl KeySource {
    fn derive(self, purpose: &str, name: &str, out: &mut [u8]) -> Result<(), KeyError> {
        match self {
            KeySource::Os => random_bytes(out),
            KeySource::Seeded(seed) => {
                let mut hasher = blake3::Hasher::new_derive_key(&format!("seed land {purpose} v1"));
                hasher.update(&seed);
                hasher.update(name.as_bytes());
                hasher.finalize_xof().fill(out);
                Ok(())
            }
        }
    }

    fn signing_key(self, name: &str) -> Result<SigningKey, KeyError> {
        Ok(SigningKey::from_bytes(&self.secret_key(name)?))
    }

    /// The 32 secret bytes of the key of the being named `name`.
    fn secret_key(self, name: &str) -> Result<[u8; 32], KeyError> {
        let mut secret = [0u8; 32];
        self.derive("key", name, &mut secret)?;
        Ok(secret)
    }
}

/// The writer state of one being: what its next fact links to. One per being,
/// so different beings sign in parallel while one being's facts stay ordered.
struct Writer {
    /// Its key, as signing together takes it (`KeyPair`: expanded once,
    /// and smaller than a `SigningKey`).
    key: KeyPair,
    next_seq: u64,
    prev: FactId,
    last_time_ms: u64,
    ended: bool,
    /// Set when a submission failed: the next use reloads from the store.
    stale: bool,
}

impl Writer {
    /// Moves the writer past `fact`, a fact of its being another process
    /// sealed, to the head a reload from the store would give, by the same
    /// rule the stores fold heads with (`store::chain::HeadStep`). Returns
    /// false, changing nothing, where `fact` does not extend the writer's
    /// head (the writer is behind, ahead or stale) or changes the key the
    /// next fact is signed with (a rotation, a move): such a writer must
    /// reload from the store and the key ring.
    fn follow(&mut self, fact: &Fact) -> bool {
        let Ok(step) = crate::store::chain::HeadStep::of(fact) else { return false };
        let extends = self.next_seq.checked_sub(1).is_some_and(|seq| step.extends(seq, self.prev));
        let key_kept = step.key_set.is_none_or(|key| key == PublicKeyBytes(self.key.public_key()));
        if self.stale || !extends || !key_kept {
            return false;
        }
        self.next_seq = step.seq + 1;
        self.prev = step.id;
        self.last_time_ms = step.stored_time_ms;
        self.ended = step.ended;
        true
    }

    /// The writer with `key` of the reel ending at `head`.
    fn at_head(key: KeyPair, head: &crate::store::Head) -> Writer {
        Writer {
            key,
            next_seq: head.seq + 1,
            prev: head.id,
            last_time_ms: head.stored_time_ms,
            ended: head.ended,
            stale: false,
        }
    }

    /// The writer of a being's facts after its `genesis`, signed with `key`.
    fn after_genesis(genesis: &UnsignedFact, key: &KeyPair) -> Arc<Mutex<Writer>> {
        Arc::new(Mutex::new(Writer {
            key: key.clone(),
            next_seq: 1,
            prev: genesis.id(),
            last_time_ms: genesis.header.stored_time_ms,
            ended: false,
            stale: false,
        }))
    }
}

/// Whether a land is opened to write or only to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Write,
    Read,
}

pub struct Land {
    dir: PathBuf,
    meta: LandMeta,
    root: BeingId,
    operator: BeingId,
    store: LandStore,
    keys: KeyRing,
    clock: Arc<dyn Clock>,
    limits: Limits,
    key_source: KeySource,
    writers: Mutex<loaded_writers::LoadedWriters>,
}

/// A fact with its place on the reel fixed, not yet signed.
pub struct Prepared {
    pub unsigned: UnsignedFact,
    key: KeyPair,
    being: BeingId,
    seq: u64,
    stored_time_ms: u64,
    writer: Arc<Mutex<Writer>>,
    /// The signature made ahead where the moment ran, when the fact signed
    /// there is this very fact ([`Land::prepare_canonical_ahead`]): signing
    /// takes it instead.
    signature_ahead: Option<[u8; 64]>,
}

/// A worker's turn on its way to the store ([`Land::submit_turn`]).
pub struct PendingTurn {
    ticket: crate::store::work::TurnTicket,
    signed: Vec<SignedFact>,
}

impl PendingTurn {
    /// Waits until the turn committed, or was refused: its beings' writers
    /// then reload from the store.
    pub fn wait(self) -> Result<Vec<Sealed>, LandError> {
        match self.ticket.wait() {
            Ok(appended) => Ok(self
                .signed
                .iter()
                .zip(appended)
                .map(|(signed, appended)| Sealed {
                    being: signed.being,
                    seq: signed.seq,
                    id: appended.id,
                    land_seq: appended.land_seq,
                    stored_time_ms: signed.stored_time_ms,
                })
                .collect()),
            Err(error) => {
                for signed in &self.signed {
                    signed.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).stale = true;
                }
                Err(error.into())
            }
        }
    }
}

/// A signed fact ready for `Land::submit_signed`.
pub struct SignedFact {
    fact: Fact,
    being: BeingId,
    seq: u64,
    stored_time_ms: u64,
    writer: Arc<Mutex<Writer>>,
}

impl Prepared {
    /// Signs (the costly step; prepared facts may be signed on any thread),
    /// or takes the signature made ahead over this very fact.
    pub fn sign(self) -> SignedFact {
        let fact = match self.signature_ahead {
            Some(signature) => self.unsigned.with_signature(signature),
            None => self.unsigned.sign_with(&self.key),
        };
        SignedFact { fact, being: self.being, seq: self.seq, stored_time_ms: self.stored_time_ms, writer: self.writer }
    }
}

/// A key rotation half done: its fact prepared, its new key staged.
pub struct Rotation {
    pub fact: Prepared,
    pub new_key: StagedKey,
}

/// A being's next signing key, staged in the key ring until its rotate-key
/// fact is durable (it never leaves the land's process).
pub struct StagedKey(SigningKey);

/// A fact on its way to disk (it now belongs to the store's queue).
pub struct PendingSeal {
    ticket: AppendTicket,
    being: BeingId,
    seq: u64,
    stored_time_ms: u64,
    writer: Arc<Mutex<Writer>>,
}

impl PendingSeal {
    pub fn wait(self) -> Result<Sealed, LandError> {
        let PendingSeal { ticket, being, seq, stored_time_ms, writer } = self;
        Sealed::answered(ticket.wait(), being, seq, stored_time_ms, &writer)
    }

    /// What [`PendingSeal::wait`] would return if the store has answered,
    /// without waiting (once answered, the seal is spent).
    pub fn try_wait(&mut self) -> Option<Result<Sealed, LandError>> {
        let answer = self.ticket.try_wait()?;
        Some(Sealed::answered(answer, self.being, self.seq, self.stored_time_ms, &self.writer))
    }
}

impl Sealed {
    /// The store's answer to an append as the seal's result: a refused
    /// append leaves the writer stale (it reloads its head before signing again).
    fn answered(
        answer: Result<crate::store::Appended, StoreError>,
        being: BeingId,
        seq: u64,
        stored_time_ms: u64,
        writer: &Mutex<Writer>,
    ) -> Result<Sealed, LandError> {
        match answer {
            Ok(appended) => Ok(Sealed { being, seq, id: appended.id, land_seq: appended.land_seq, stored_time_ms }),
            Err(error) => {
                if let Ok(mut writer) = writer.lock() {
                    writer.stale = true;
                }
                Err(error.into())
            }
        }
    }
}

/// Being names: the rule is `names::being_name_problem`, the error names the name.
pub fn validate_being_name(name: &str) -> Result<(), LandError> {
    match crate::names::being_name_problem(name) {
        Some(reason) => Err(LandError::BadName { name: name.to_string(), reason }),
        None => Ok(()),
    }
}

pub(crate) fn read_meta(dir: &Path) -> Result<LandMeta, LandError> {
    let path = dir.join(LAND_META_FILE);
    let text = std::fs::read_to_string(&path).map_err(|source| LandError::Io { path: path.clone(), source })?;
    let meta: LandMeta = toml::from_str(&text)
        .map_err(|error| LandError::Meta { path: path.clone(), reason: error.message().to_string() })?;
    if meta.format != LAND_FORMAT_VERSION {
        return Err(LandError::Meta {
            path,
            reason: format!("land format {} is not supported (this build reads {LAND_FORMAT_VERSION})", meta.format),
        });
    }
    Ok(meta)
}

fn parse_meta_id(dir: &Path, text: &str, what: &str) -> Result<BeingId, LandError> {
    BeingId::from_hex(text).ok_or_else(|| LandError::Meta {
        path: dir.join(LAND_META_FILE),
        reason: format!("{what} is not a 64-digit hex being id"),
    })
}

impl Land {
    /// Opens a planted land with the wall clock.
    pub fn open(dir: &Path) -> Result<Land, LandError> {
        Land::open_with(dir, Arc::new(WallClock::default()), Limits::default())
    }

    pub fn open_with(dir: &Path, clock: Arc<dyn Clock>, limits: Limits) -> Result<Land, LandError> {
        Land::open_for(dir, clock, limits, Access::Write)
    }

    /// Opens a land to read it only (`verify`, `replay`, `reel`, `beings`,
    /// `export`): its store is opened without writing a byte or taking the
    /// writer's lock, so this works on a read-only mount, in a folder of
    /// another user, and beside a running `seed up`. Appends are refused
    /// (`StoreError::ReadOnly`). A land of an earlier build is migrated first,
    /// which needs write access once.
    pub fn open_read_only(dir: &Path) -> Result<Land, LandError> {
        Land::open_for(dir, Arc::new(WallClock::default()), Limits::default(), Access::Read)
    }

    fn open_for(dir: &Path, clock: Arc<dyn Clock>, limits: Limits, access: Access) -> Result<Land, LandError> {
        if !dir.is_dir() {
            return Err(LandError::NoLand { dir: dir.to_path_buf() });
        }
        if !dir.join(LAND_META_FILE).is_file() {
            return Err(LandError::NotALand { dir: dir.to_path_buf() });
        }
        let meta = read_meta(dir)?;
        if let (Some(url), Access::Write) = (&meta.mirror_of, access) {
            return Err(LandError::Mirror { dir: dir.to_path_buf(), url: url.clone() });
        }
        let root = parse_meta_id(dir, &meta.root, "root")?;
        let operator = parse_meta_id(dir, &meta.operator, "operator")?;
        let location = StoreLocation::of_meta(&meta);
        if location == StoreLocation::Folder && !dir.join(LOG_DIR).is_dir() {
            if !dir.join(SLED_STORE_DIR).is_dir() {
                return Err(LandError::StoreMissingFacts { dir: dir.to_path_buf(), root });
            }
            migrate::migrate_sled_store(dir, &limits)?;
        }
        let store = open_store(dir, &limits, &location, access)?;
        if store.head(&root)?.is_none() {
            return Err(LandError::StoreMissingFacts { dir: dir.to_path_buf(), root });
        }
        let keys = KeyRing::open(&dir.join(KEYS_DIR))?;
        Ok(Land {
            dir: dir.to_path_buf(),
            meta,
            root,
            operator,
            store,
            keys,
            clock,
            limits,
            key_source: KeySource::Os,
            writers: Mutex::new(loaded_writers::LoadedWriters::default()),
        })
    }

    /// Where the land planted in `dir` keeps its facts, as its `land.toml`
    /// records (`None`: no land is planted there).
    pub fn recorded_store(dir: &Path) -> Result<Option<StoreLocation>, LandError> {
        if !dir.join(LAND_META_FILE).is_file() {
            return Ok(None);
        }
        Ok(Some(StoreLocation::of_meta(&read_meta(dir)?)))
    }

    /// Uses `source` for the keys and nonces of beings minted from now on.
    pub fn set_key_source(&mut self, source: KeySource) {
        self.key_source = source;
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn meta(&self) -> &LandMeta {
        &self.meta
    }
    pub fn root(&self) -> BeingId {
        self.root
    }
    pub fn operator(&self) -> BeingId {
        self.operator
    }
    /// The store, through the backend-neutral interface every caller uses.
    /// The store, shared: readers (the portal's pages) use it without the
    /// land's writer.
    pub fn shared_store(&self) -> Arc<dyn Store> {
        self.store.shared()
    }

    pub fn store(&self) -> &dyn Store {
        &*self.store
    }

    /// Where the facts are.
    pub fn store_location(&self) -> StoreLocation {
        StoreLocation::of_meta(&self.meta)
    }

    /// Stored envelopes read and replaced as kept, bypassing every rule,
    /// whatever the backend: for repair tools and the tamper tests.
    pub fn surgery(&self) -> &dyn crate::store::StoreSurgery {
        match &self.store {
            LandStore::Log(store) => store.as_ref(),
            LandStore::Postgres(store) => store.as_ref(),
        }
    }

    pub fn keys(&self) -> &KeyRing {
        &self.keys
    }
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
    pub fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    /// Resolves `@name`, a bare name, or a 64-digit hex id to a being.
    pub fn resolve(&self, reference: &str) -> Result<BeingId, LandError> {
        if reference.len() == 64 {
            if let Some(being) = BeingId::from_hex(reference) {
                return match self.store.head(&being)? {
                    Some(_) => Ok(being),
                    None => Err(LandError::UnknownBeing { being }),
                };
            }
        }
        let name = reference.strip_prefix('@').unwrap_or(reference);
        validate_being_name(name).map_err(|error| LandError::BadReference {
            given: reference.to_string(),
            reason: match error {
                LandError::BadName { reason, .. } => format!("not @name or a being id ({reason})"),
                other => other.to_string(),
            },
        })?;
        let found = self.store.beings_named(name)?;
        match found.as_slice() {
            [] => Err(LandError::UnknownName { name: name.to_string() }),
            [one] => Ok(*one),
            many => Err(LandError::AmbiguousName {
                name: name.to_string(),
                ids: many.iter().map(|being| being.short()).collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// The genesis body of a being.
    pub fn genesis(&self, being: &BeingId) -> Result<GenesisBody, LandError> {
        let facts = self.store.reel(being, 0, 1)?;
        let first = facts.first().ok_or(LandError::UnknownBeing { being: *being })?;
        Ok(first.fact.body_as()?)
    }

    /// Mints a being: a fresh key (stored first, so a crash leaves at worst an
    /// unused key file) and its genesis fact.
    pub fn create_being(&self, spec: BeingSpec) -> Result<Sealed, LandError> {
        self.submit_being(spec)?.wait()
    }

    /// Mints a being without waiting for its genesis to be durable.
    pub fn submit_being(&self, spec: BeingSpec) -> Result<PendingSeal, LandError> {
        Ok(self.submit_signed(self.prepare_being(spec)?.sign()))
    }

    /// Mints a being up to its unsigned genesis (its key is already in the
    /// ring; see `prepare`).
    pub fn prepare_being(&self, spec: BeingSpec) -> Result<Prepared, LandError> {
        let (unsigned, key) = self.unsigned_geneses(vec![spec])?.pop().expect("one genesis for one spec");
        let being = unsigned.header.being;
        self.keys.store_many([(being, key.secret_bytes())])?;
        let writer = Writer::after_genesis(&unsigned, &key);
        self.writers.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(being, writer.clone());
        let stored_time_ms = unsigned.header.stored_time_ms;
        Ok(Prepared { unsigned, key, being, seq: 0, stored_time_ms, writer, signature_ahead: None })
    }

    /// Mints many beings and queues their geneses, as `prepare_being` and
    /// `submit_being` one by one would, but with their keys derived, their
    /// geneses encoded and signed on `threads` threads and every key written
    /// to the ring in one append and one sync (before any genesis is
    /// queued, as one by one). A planting of thousands of beings was bound by
    /// one ring sync each. The results keep `specs`' order; a spec that
    /// cannot be minted (a bad name, a body too large) stops the batch
    /// before anything is written. The beings are minted in groups of up
    /// to `PLANTING_GROUP_BEINGS`, whose keys are derived and geneses
    /// signed together: within a group every name is checked before any
    /// body, so a group holding both a body too large and, after it, a bad
    /// name is refused for the name.
    pub fn submit_beings(&self, specs: Vec<BeingSpec>, threads: usize) -> Result<Vec<PendingSeal>, LandError> {
        // In groups, whose geneses are signed together (for less work than
        // one by one: `UnsignedFact::sign_all`), small enough for a batch of
        // under a thousand beings to make enough of them to be spread over
        // the threads.
        let group_beings = crate::parallel::items_per_group(specs.len(), PLANTING_GROUP_BEINGS);
        let mut groups: Vec<Mutex<Option<Vec<BeingSpec>>>> = Vec::new();
        let mut specs = specs.into_iter().peekable();
        while specs.peek().is_some() {
            groups.push(Mutex::new(Some(specs.by_ref().take(group_beings).collect())));
        }
        let minted = crate::parallel::map_in_order(&groups, threads, |group| {
            let group =
                group.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take().expect("each group is taken once");
            let (unsigned, keys): (Vec<UnsignedFact>, Vec<KeyPair>) = self.unsigned_geneses(group)?.into_iter().unzip();
            let writers: Vec<Arc<Mutex<Writer>>> =
                unsigned.iter().zip(&keys).map(|(unsigned, key)| Writer::after_genesis(unsigned, key)).collect();
            let facts = UnsignedFact::sign_all(unsigned.into_iter().zip(&keys).collect());
            Ok::<_, LandError>(
                facts
                    .into_iter()
                    .zip(writers)
                    .zip(keys)
                    .map(|((fact, writer), key)| {
                        let (being, stored_time_ms) = (fact.header.being, fact.header.stored_time_ms);
                        (SignedFact { fact, being, seq: 0, stored_time_ms, writer }, key)
                    })
                    .collect::<Vec<_>>(),
            )
        });
        let minted: Vec<(SignedFact, KeyPair)> =
            minted.into_iter().collect::<Result<Vec<_>, _>>()?.into_iter().flatten().collect();
        self.keys.store_many(minted.iter().map(|(signed, key)| (signed.being, key.secret_bytes())))?;
        {
            let mut writers = self.writers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            for (signed, _) in &minted {
                writers.insert(signed.being, signed.writer.clone());
            }
        }
        Ok(minted.into_iter().map(|(signed, _)| self.submit_signed(signed)).collect())
    }

    /// New beings' keys and unsigned geneses (nothing is written), the
    /// keys derived together (`KeyPair::derive_all`: less work than one by
    /// one).
    fn unsigned_geneses(&self, specs: Vec<BeingSpec>) -> Result<Vec<(UnsignedFact, KeyPair)>, LandError> {
        // Wiped when dropped, on an error too.
        let mut secrets = zeroize::Zeroizing::new(Vec::with_capacity(specs.len()));
        for spec in &specs {
            validate_being_name(&spec.name)?;
            secrets.push(self.key_source.secret_key(&spec.name)?);
        }
        let keys = KeyPair::derive_all(&secrets);
        drop(secrets);
        specs.into_iter().zip(keys).map(|(spec, key)| Ok((self.unsigned_genesis(spec, &key)?, key))).collect()
    }

    /// A new being's unsigned genesis with `key` (nothing is written).
    fn unsigned_genesis(&self, spec: BeingSpec, key: &KeyPair) -> Result<UnsignedFact, LandError> {
        let mut nonce = [0u8; 16];
        self.key_source.derive("nonce", &spec.name, &mut nonce)?;
        let genesis = GenesisBody {
            name: spec.name,
            parent: spec.parent,
            cognition: spec.cognition,
            public_key: PublicKeyBytes(key.public_key()),
            role_flow: spec.role_flow,
            default_role: spec.default_role,
            home_space: spec.home_space,
            nonce,
        };
        let body =
            canonical::to_canonical_bytes(&genesis).map_err(|source| FactError::Cbor { part: "body", source })?;
        self.check_body_size(&body)?;
        let being = BeingId(*blake3::hash(&body).as_bytes());
        Ok(UnsignedFact::new(being, 0, FactId::ZERO, self.clock.now_ms(), KIND_GENESIS, body)?)
    }

    /// Queues a signed fact for the next group commit.
    pub fn submit_signed(&self, signed: SignedFact) -> PendingSeal {
        let ticket = self.store.submit(signed.fact);
        PendingSeal {
            ticket,
            being: signed.being,
            seq: signed.seq,
            stored_time_ms: signed.stored_time_ms,
            writer: signed.writer,
        }
    }

    fn check_body_size(&self, body: &[u8]) -> Result<(), LandError> {
        if body.len() > self.limits.fact_body_bytes_max {
            return Err(LandError::BodyTooLarge { len: body.len(), max: self.limits.fact_body_bytes_max });
        }
        Ok(())
    }

    /// Drops a prepared fact that will never be submitted: its writer
    /// reloads its head from the store at its next use.
    pub fn abandon(&self, prepared: Prepared) {
        prepared.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).stale = true;
    }

    /// Sends a worker's run of wakes to the store's wake queue: every
    /// fact, in order, with the wakes' results, in one fenced commit
    /// (`store::work`). Nothing is sealed when any of it is refused; the
    /// writers of its beings then reload from the store.
    pub fn submit_turn(&self, signed: Vec<SignedFact>, turn: SealTurn) -> Result<PendingTurn, LandError> {
        let queue = self.store.wake_queue().ok_or(StoreError::NoWakeQueue)?;
        let facts: Vec<Fact> = signed.iter().map(|signed| signed.fact.clone()).collect();
        Ok(PendingTurn { ticket: queue.submit_turn(facts, turn), signed })
    }

    /// Forgets the writers of `beings`: each reloads its head from the store
    /// at its next use. A worker of a pool calls it before each turn, since
    /// other workers extended those reels meanwhile.
    pub fn forget_writers(&self, beings: &[BeingId]) {
        let mut writers = self.writers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for being in beings {
            writers.remove(being);
        }
    }

    /// Moves the writers this land keeps past `facts` (land seq and fact,
    /// consecutive, in land order), which other processes sealed (a pool's
    /// worker folding the others' turns): each at the head a reload would
    /// read, with the key it holds, so the being's next turn here asks the
    /// store for no head and derives no key. A writer a fact does not
    /// extend, or whose key it changes, is forgotten instead, and reloads
    /// at its next use. The store is shown the facts too
    /// (`Store::followed_facts`).
    pub fn follow_facts_sealed_elsewhere(&self, facts: &[(u64, Fact)]) {
        {
            let mut writers = self.writers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            for (_, fact) in facts {
                let Some(writer) = writers.get(&fact.header.being) else { continue };
                let followed = writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).follow(fact);
                if !followed {
                    writers.remove(&fact.header.being);
                }
            }
        }
        self.store.followed_facts(facts);
    }

    /// Forgets every writer's head: each reloads from the store (and its key
    /// from the key ring) at its next use. Called after a failed step, once
    /// nothing is on its way to the store.
    pub fn reload_writers(&self) {
        self.writers.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clear();
    }

    fn writer(&self, being: &BeingId) -> Result<Arc<Mutex<Writer>>, LandError> {
        let mut writers = self.writers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(writer) = writers.get(being) {
            return Ok(writer.clone());
        }
        let writer = Arc::new(Mutex::new(self.load_writer(being)?));
        writers.insert(*being, writer.clone());
        Ok(writer)
    }

    /// Sets the writer of every being with a fact at land seq `cursor` or
    /// later back to its head before that fact, so those facts are prepared
    /// again at the places they hold: a run resumed from `cursor` prepares
    /// the same facts again, and the caller compares each with the stored
    /// one instead of submitting it. A being born after `cursor` gets no
    /// writer (its genesis is prepared again). A key rotated after `cursor`
    /// is refused: the key before it is no longer the ring's.
    pub fn rewind_writers_to(&self, cursor: u64) -> Result<(), LandError> {
        let end = self.store.land_len()?;
        let mut first_seq: std::collections::BTreeMap<BeingId, u64> = std::collections::BTreeMap::new();
        for entry in self.store.land_log(cursor, end)? {
            first_seq.entry(entry.being).or_insert(entry.seq);
        }
        let mut writers = self.writers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for (being, seq) in first_seq {
            writers.remove(&being);
            if seq == 0 {
                continue;
            }
            let head = self.store.head(&being)?.ok_or(LandError::UnknownBeing { being })?;
            let after = self.store.reel(&being, seq - 1, head.seq + 1)?;
            if after.iter().skip(1).any(|stored| stored.fact.kind() == crate::fact::body::KIND_ROTATE_KEY) {
                return Err(LandError::RewindPastRotation { being, cursor });
            }
            let before = &after.first().ok_or(LandError::UnknownBeing { being })?.fact;
            let rewound = crate::store::Head {
                seq: seq - 1,
                id: before.id(),
                stored_time_ms: before.header.stored_time_ms,
                public_key: head.public_key,
                ended: before.kind() == crate::fact::body::KIND_END,
            };
            writers.insert(being, Arc::new(Mutex::new(self.writer_at(&being, &rewound)?)));
        }
        Ok(())
    }

    /// Loads the writers of `beings` that are not loaded yet, their heads
    /// read in one request: sealing a run of moments on a networked store
    /// then costs no request per being. A being without a reel is left to
    /// the writer's first use, which names it.
    ///
    /// Keys holding nothing but a current key (the common case) are
    /// derived together, in groups of up to [`WRITER_KEYS_GROUP_BEINGS`]
    /// spread over `threads`, and checked against the public key each
    /// reel expects; any other being (a rotation cut short, a key missing,
    /// damaged or not the reel's) is loaded alone as its first use would
    /// load it, which finishes the rotation or names what is wrong.
    ///
    /// Every writer that loads is kept; the first error, in id order, is
    /// returned after the rest are loaded.
    pub fn load_writers(&self, beings: &[BeingId], threads: usize) -> Result<(), LandError> {
        self.load_writers_with(beings, threads, true)
    }

    /// [`Land::load_writers`] for the beings whose keys hold nothing but a
    /// current key, the reel's; every other being is left to its writer's
    /// first use, nothing about it read or changed. What a round loads
    /// ahead of its moments, for beings that may not seal: a key staged
    /// for a rotation another process has not sealed yet is not dropped
    /// for a being that only woke. Loaded one at a time on the thread that
    /// seals, as each act was sealed, the writers of a live land's first
    /// round on a million beings were a fifth of its samples.
    pub fn load_plain_writers(&self, beings: &[BeingId], threads: usize) -> Result<(), LandError> {
        self.load_writers_with(beings, threads, false)
    }

    fn load_writers_with(&self, beings: &[BeingId], threads: usize, others_too: bool) -> Result<(), LandError> {
        let missing: Vec<BeingId> = {
            let writers = self.writers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let mut missing: Vec<BeingId> =
                beings.iter().filter(|being| !writers.contains_key(being)).copied().collect();
            missing.sort();
            missing.dedup();
            missing
        };
        if missing.is_empty() {
            return Ok(());
        }
        let heads = self.store.heads(&missing)?;
        let derived_keys = self.keys_derived_together(&missing, &heads, threads)?;
        let mut first_error = None;
        for ((being, head), derived) in missing.iter().zip(heads).zip(derived_keys) {
            let Some(head) = head else { continue };
            let loaded = match derived {
                Some(key) => Ok(Writer::at_head(key, &head)),
                // The general path finishes a rotation, names a key that is
                // missing, damaged or another's, or a being that moved away.
                None if others_too => self.writer_at(being, &head),
                None => continue,
            };
            match loaded {
                Ok(writer) => {
                    let mut writers = self.writers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                    writers.insert_if_absent(*being, || Arc::new(Mutex::new(writer)));
                }
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The key of each of `beings` (with its reel's `heads`) whose keys
    /// hold nothing but a current key, derived together in groups spread
    /// over `threads`, where it is the key its reel expects; `None` for
    /// every other being.
    fn keys_derived_together(
        &self,
        beings: &[BeingId],
        heads: &[Option<crate::store::Head>],
        threads: usize,
    ) -> Result<Vec<Option<KeyPair>>, LandError> {
        // Only beings with a reel: the ring is not read for none.
        let with_heads: Vec<usize> = (0..beings.len()).filter(|index| heads[*index].is_some()).collect();
        let mut keys: Vec<Option<KeyPair>> = (0..beings.len()).map(|_| None).collect();
        if with_heads.is_empty() {
            return Ok(keys);
        }
        let asked: Vec<BeingId> = with_heads.iter().map(|index| beings[*index]).collect();
        let (plain, secrets) = self.keys.plain_secrets(&asked)?;
        let group_beings = crate::parallel::items_per_group(secrets.len(), WRITER_KEYS_GROUP_BEINGS);
        let groups: Vec<&[[u8; 32]]> = secrets.chunks(group_beings).collect();
        let derived = crate::parallel::map_in_order(&groups, threads, |group| KeyPair::derive_all(group));
        drop(secrets);
        for (asked_index, key) in plain.into_iter().zip(derived.into_iter().flatten()) {
            let index = with_heads[asked_index];
            if heads[index].as_ref().map(|head| head.public_key) == Some(PublicKeyBytes(key.public_key())) {
                keys[index] = Some(key);
            }
        }
        Ok(keys)
    }

    fn load_writer(&self, being: &BeingId) -> Result<Writer, LandError> {
        let head = self.store.head(being)?.ok_or(LandError::UnknownBeing { being: *being })?;
        self.writer_at(being, &head)
    }

    /// The writer of `being` whose reel ends at `head`.
    fn writer_at(&self, being: &BeingId, head: &crate::store::Head) -> Result<Writer, LandError> {
        let key = match self.current_key(being, &head.public_key) {
            // No key, because the being moved away: say so.
            Err(LandError::Key(KeyError::Missing { .. })) if self.ends_in_move(being, head)? => {
                return Err(LandError::MovedAway { being: *being });
            }
            other => other?,
        };
        Ok(Writer::at_head(KeyPair::of(&key), head))
    }

    /// The signing key matching the reel's current public key, finishing an
    /// interrupted rotation if the staged key is the one the reel now expects.
    fn current_key(&self, being: &BeingId, expected: &crate::fact::PublicKeyBytes) -> Result<SigningKey, LandError> {
        if let Some(staged) = self.keys.staged_next(being)? {
            if PublicKeyBytes::of(&staged) == *expected {
                self.keys.promote_next(being)?;
                return Ok(staged);
            }
            self.keys.discard_next(being)?;
        }
        let key = self.keys.load(being)?;
        if PublicKeyBytes::of(&key) != *expected {
            return Err(KeyError::Corrupt {
                path: self.keys.path(),
                reason: format!("the key it holds for {being} does not match the key the reel expects"),
            }
            .into());
        }
        Ok(key)
    }

    /// Signs the next fact of `being` and queues it; returns before it is durable.
    pub fn submit(&self, being: &BeingId, kind: &str, body: Vec<u8>) -> Result<PendingSeal, LandError> {
        Ok(self.submit_signed(self.prepare(being, kind, body)?.sign()))
    }

    /// Fixes the next fact of `being` (seq, prev, stored time) without signing
    /// it: its id is known, so the world can fold it now. Prepared facts must
    /// be signed and submitted in the order they were prepared.
    pub fn prepare(&self, being: &BeingId, kind: &str, body: Vec<u8>) -> Result<Prepared, LandError> {
        self.prepare_canonical(being, kind, CanonicalBody::checked(body)?)
    }

    /// As `prepare`, for a body from the canonical encoder.
    pub fn prepare_canonical(&self, being: &BeingId, kind: &str, body: CanonicalBody) -> Result<Prepared, LandError> {
        self.prepare_canonical_ahead(being, kind, body, None)
    }

    /// As [`Land::prepare_canonical`], given the fact signed ahead where
    /// the moment ran ([`WriterHandle::prepare_ahead`], `presign.rs`): where
    /// it is this very fact (the same reel, place, time, kind, body and
    /// key), it is taken whole, signature and all, and nothing is encoded,
    /// hashed or signed again; otherwise it is set aside and the fact is
    /// prepared as without it. Either way the fact is the same bytes.
    pub fn prepare_canonical_ahead(
        &self,
        being: &BeingId,
        kind: &str,
        body: CanonicalBody,
        ahead: Option<Presigned>,
    ) -> Result<Prepared, LandError> {
        if body.len() > self.limits.fact_body_bytes_max {
            return Err(LandError::BodyTooLarge { len: body.len(), max: self.limits.fact_body_bytes_max });
        }
        let writer_cell = self.writer(being)?;
        let mut writer = writer_cell.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if writer.stale {
            *writer = self.load_writer(being)?;
        }
        if writer.ended {
            return Err(LandError::Ended { being: *being });
        }
        let stored_time_ms = self.clock.now_ms().max(writer.last_time_ms);
        let (unsigned, signature_ahead) = match ahead
            .filter(|ahead| ahead.is_next_fact(being, &writer, stored_time_ms, kind, &body))
        {
            Some(ahead) => {
                let (unsigned, signature) = ahead.into_fact().into_unsigned();
                (unsigned, Some(signature))
            }
            None => {
                (UnsignedFact::from_canonical(*being, writer.next_seq, writer.prev, stored_time_ms, kind, body)?, None)
            }
        };
        let seq = writer.next_seq;
        writer.next_seq += 1;
        writer.prev = unsigned.id();
        writer.last_time_ms = stored_time_ms;
        writer.ended = kind == crate::fact::body::KIND_END;
        let key = writer.key.clone();
        drop(writer);
        Ok(Prepared { unsigned, key, being: *being, seq, stored_time_ms, writer: writer_cell, signature_ahead })
    }

    /// Seals the next fact of `being` and waits until it is durable.
    pub fn seal(&self, being: &BeingId, kind: &str, body: Vec<u8>) -> Result<Sealed, LandError> {
        self.submit(being, kind, body)?.wait()
    }

    /// Seals a typed body.
    pub fn seal_body<T: Serialize>(&self, being: &BeingId, kind: &str, body: &T) -> Result<Sealed, LandError> {
        let bytes = canonical::to_canonical_bytes(body).map_err(|source| FactError::Cbor { part: "body", source })?;
        self.seal(being, kind, bytes)
    }

    /// Replaces a being's signing key: the new key is staged, the rotate-key
    /// fact is signed by the old key and sealed, then the new key is promoted.
    pub fn rotate_key(&self, being: &BeingId) -> Result<Sealed, LandError> {
        let rotation = self.prepare_rotation(being)?;
        let sealed = match self.submit_signed(rotation.fact.sign()).wait() {
            Ok(sealed) => sealed,
            Err(error) => {
                self.keys.discard_next(being)?;
                return Err(error);
            }
        };
        self.finish_rotation(being, rotation.new_key)?;
        Ok(sealed)
    }

    /// The first half of a key rotation: the new key is staged in the key
    /// ring and the rotate-key fact prepared (signed by the old key). Once
    /// it is sealed, [`Land::finish_rotation`]; if it never is,
    /// [`Land::abandon_rotation`].
    pub fn prepare_rotation(&self, being: &BeingId) -> Result<Rotation, LandError> {
        // The writer is loaded before the key is staged: loading it settles
        // a rotation an earlier run left staged, and must not take this one
        // for such.
        self.writer(being)?;
        let new_key = match self.key_source {
            KeySource::Os => KeyRing::generate()?,
            KeySource::Seeded(_) => {
                let head = self.store.head(being)?.ok_or(LandError::UnknownBeing { being: *being })?;
                self.key_source.signing_key(&format!("{}#{}", being.to_hex(), head.seq + 1))?
            }
        };
        self.keys.stage_next(being, &new_key)?;
        let body = RotateKeyBody { new_public_key: PublicKeyBytes::of(&new_key) };
        let bytes = canonical::to_canonical_bytes(&body).map_err(|source| FactError::Cbor { part: "body", source })?;
        match self.prepare(being, KIND_ROTATE_KEY, bytes) {
            Ok(fact) => Ok(Rotation { fact, new_key: StagedKey(new_key) }),
            Err(error) => {
                self.keys.discard_next(being)?;
                Err(error)
            }
        }
    }

    /// Promotes the staged key after the rotate-key fact is durable.
    pub fn finish_rotation(&self, being: &BeingId, new_key: StagedKey) -> Result<(), LandError> {
        self.keys.promote_next(being)?;
        let writer_cell = self.writer(being)?;
        let mut writer = writer_cell.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        writer.key = KeyPair::of(&new_key.0);
        Ok(())
    }

    /// Drops a staged key whose rotate-key fact was never sealed.
    pub fn abandon_rotation(&self, being: &BeingId) -> Result<(), LandError> {
        Ok(self.keys.discard_next(being)?)
    }

    /// Seals `being`'s `move` to another land (`seed move`): signed by its
    /// key now, handing its reel to `body.new_public_key`, which that land
    /// minted and holds. Then this land forgets the being's key: what
    /// follows on its reel is the other land's to sign.
    pub fn seal_move(&self, being: &BeingId, body: &crate::fact::body::MoveBody) -> Result<Sealed, LandError> {
        if *being == self.root || *being == self.operator() {
            return Err(LandError::NotMovable {
                being: *being,
                reason: "the reality root and the operator stay with their land",
            });
        }
        let bytes = canonical::to_canonical_bytes(body).map_err(|source| FactError::Cbor { part: "body", source })?;
        let sealed = self.seal(being, crate::fact::body::KIND_MOVE, bytes)?;
        self.writers.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(being);
        self.keys.forget(being)?;
        Ok(sealed)
    }

    /// Whether `being`'s reel, ending at `head`, ends in its move to another land.
    fn ends_in_move(&self, being: &BeingId, head: &crate::store::Head) -> Result<bool, LandError> {
        let last = self.store.reel(being, head.seq, head.seq + 1)?;
        Ok(last.first().is_some_and(|stored| stored.fact.kind() == crate::fact::body::KIND_MOVE))
    }

    /// Mints the key a being moving here from another land will sign with
    /// (its `move` fact there names its public half), and keeps it in the
    /// key ring as the being's key. The being's reel must not be here yet.
    pub fn mint_arrival_key(&self, being: &BeingId) -> Result<PublicKeyBytes, LandError> {
        if self.store.head(being)?.is_some() {
            return Err(LandError::NotMovable { being: *being, reason: "its reel is on this land already" });
        }
        let key = match self.key_source {
            KeySource::Os => KeyRing::generate()?,
            KeySource::Seeded(_) => self.key_source.signing_key(&format!("{}#arrival", being.to_hex()))?,
        };
        self.keys.store(being, &key)?;
        Ok(PublicKeyBytes::of(&key))
    }

    /// The public key this land minted for `being` to move here with, if
    /// it holds one.
    pub fn arrival_key(&self, being: &BeingId) -> Result<Option<PublicKeyBytes>, LandError> {
        match self.keys.load(being) {
            Ok(key) => Ok(Some(PublicKeyBytes::of(&key))),
            Err(KeyError::Missing { .. }) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// Appends facts another land signed (a moving being's history, each
    /// checked by the caller) in order, and waits until they are durable.
    pub fn append_taken(&self, facts: Vec<crate::fact::Fact>) -> Result<(), LandError> {
        let tickets: Vec<_> = facts.into_iter().map(|fact| self.store.submit(fact)).collect();
        for ticket in tickets {
            ticket.wait()?;
        }
        Ok(())
    }

    /// The verification checkpoint the last clean `seed verify` left, if any.
    pub fn verified_checkpoint(&self) -> Result<Option<VerifiedCheckpoint>, LandError> {
        let path = self.dir.join(CHECKPOINT_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(LandError::Io { path, source }),
        };
        VerifiedCheckpoint::decode(&bytes).map(Some).map_err(|source| LandError::Checkpoint { path, source })
    }

    /// Signs, with the root's key, a checkpoint over the first `facts` facts
    /// of the land log (whose covered digest is `digest`, from a verification
    /// without problems) and writes it atomically, replacing the previous one.
    pub fn write_verified_checkpoint(&self, facts: u64, digest: Hash32) -> Result<VerifiedCheckpoint, LandError> {
        // The root's key as its reel names it now: a key file holding any
        // other valid key (another being's, a digit changed) is refused
        // here, not found out when a replay refuses the checkpoint.
        let key = self.root_key()?;
        let checkpoint = VerifiedCheckpoint::seal(facts, digest, self.root, &key);
        let path = self.dir.join(CHECKPOINT_FILE);
        crate::atomic_file::write_atomically(&path, &checkpoint.encode(), crate::atomic_file::READABLE_FILE_MODE)
            .map_err(|source| LandError::Io { path, source })?;
        Ok(checkpoint)
    }

    /// Facts between two world snapshots (0: the land writes none).
    pub fn snapshot_every_facts(&self) -> u64 {
        self.meta.snapshot_every_facts.unwrap_or(SNAPSHOT_EVERY_FACTS_DEFAULT)
    }

    /// The land's world snapshots.
    pub fn snapshots(&self) -> SnapshotShelf {
        SnapshotShelf::of_land(&self.dir)
    }

    /// The root's key as its reel names it now (see `write_verified_checkpoint`).
    fn root_key(&self) -> Result<SigningKey, LandError> {
        let head = self.store.head(&self.root)?.ok_or(LandError::UnknownBeing { being: self.root })?;
        self.current_key(&self.root, &head.public_key)
    }

    /// The land's key history as other lands verify it
    /// (`seed_format::canopy::verify_key_history`): the root's genesis,
    /// then every rotation of the root's key, as stored envelopes, oldest
    /// first. Reads the root's reel once, in bounded chunks.
    pub fn root_key_history(&self) -> Result<Vec<Vec<u8>>, LandError> {
        const FACTS_PER_READ: u64 = 4_096;
        let head = self.store.head(&self.root)?.ok_or(LandError::UnknownBeing { being: self.root })?;
        let mut history = Vec::new();
        let mut from = 0;
        while from <= head.seq {
            let to = (from + FACTS_PER_READ).min(head.seq + 1);
            for stored in self.store.reel(&self.root, from, to)? {
                if matches!(stored.fact.kind(), KIND_GENESIS | KIND_ROTATE_KEY) {
                    history.push(stored.fact.encode_envelope());
                }
            }
            from = to;
        }
        Ok(history)
    }

    /// The root's signing key as its reel names it now, for a caller that
    /// signs many requests (`seed_format::canopy::CanopyRequest::sign`).
    pub fn root_signing_key(&self) -> Result<SigningKey, LandError> {
        self.root_key()
    }

    /// What signs and writes this land's world snapshots, owned: a thread
    /// can write one while the land seals on (the root's key as its reel
    /// names it now).
    pub fn snapshot_signer(&self) -> Result<SnapshotSigner, LandError> {
        Ok(SnapshotSigner { shelf: self.snapshots(), root: self.root, key: self.root_key()? })
    }

    /// Signs, with the root's key, the record that a clean verification
    /// vouched for these snapshot files (cursor, BLAKE3 of the file), and
    /// writes it in place of the previous one.
    pub fn write_vouched_snapshots(&self, files: std::collections::BTreeMap<u64, Hash32>) -> Result<(), LandError> {
        let key = self.root_key()?;
        Ok(self.snapshots().write_vouched(&VouchedSnapshots::seal(files, self.root, &key))?)
    }

    /// Writes everything queued, flushes, and releases the land (its lock is
    /// gone when this returns).
    pub fn close(self) -> Result<(), LandError> {
        Ok(self.store.close()?)
    }
}

/// Signs world snapshots with the reality root's key and writes them to
/// the land's shelf ([`Land::snapshot_signer`]). Holds the key: it is never
/// printed (no `Debug`), and the key is wiped when this is dropped.
pub struct SnapshotSigner {
    shelf: SnapshotShelf,
    root: BeingId,
    key: SigningKey,
}

impl SnapshotSigner {
    /// Signs and writes a snapshot of the world at `cursor`, whose canonical
    /// bytes are `world`; returns the file's BLAKE3.
    pub fn write(
        &self,
        cursor: u64,
        last_fact: FactId,
        state_digest: Hash32,
        world: Vec<u8>,
    ) -> Result<Hash32, LandError> {
        let snapshot = SignedSnapshot::seal(cursor, last_fact, state_digest, world, self.root, &self.key);
        Ok(self.shelf.write(&snapshot)?)
    }

    /// Signs and writes a snapshot of the world at `cursor` whose canonical
    /// bytes `write_world` writes as they are encoded
    /// ([`crate::snapshot::SnapshotShelf::write_streamed`]).
    pub fn write_streamed(
        &self,
        cursor: u64,
        last_fact: FactId,
        state_digest: Hash32,
        write_world: impl FnOnce(&mut dyn std::io::Write) -> Result<u64, crate::canonical::WriteCanonicalError>,
    ) -> Result<crate::snapshot::SnapshotStreamed, LandError> {
        let claim = crate::snapshot::StreamedClaim { cursor, last_fact, state_digest, signer: self.root };
        Ok(self.shelf.write_streamed(claim, &self.key, write_world)?)
    }
}

fn open_store(dir: &Path, limits: &Limits, location: &StoreLocation, access: Access) -> Result<LandStore, LandError> {
    let opening = |reason: String| LandError::StoreOpen { dir: dir.to_path_buf(), reason };
    match (location, access) {
        (StoreLocation::Folder, Access::Write) => {
            LogStore::open(&dir.join(LOG_DIR), Some(&dir.join(WITNESS_FILE)), limits)
                .map(|store| LandStore::Log(Arc::new(store)))
                .map_err(|error| match error {
                    LogOpenError::Locked => LandError::Locked { dir: dir.to_path_buf() },
                    other => opening(other.to_string()),
                })
        }
        (StoreLocation::Folder, Access::Read) => {
            LogStore::open_read_only(&dir.join(LOG_DIR), Some(&dir.join(WITNESS_FILE)))
                .map(|store| LandStore::Log(Arc::new(store)))
                .map_err(|error| opening(error.to_string()))
        }
        (StoreLocation::Postgres { url }, Access::Write) => PgStore::open(url, limits)
            .map(|store| LandStore::Postgres(Arc::new(store)))
            .map_err(|error| opening(error.to_string())),
        (StoreLocation::Postgres { url }, Access::Read) => PgStore::open_read_only(url)
            .map(|store| LandStore::Postgres(Arc::new(store)))
            .map_err(|error| opening(error.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::LogicalClock;
    use crate::fact::body::{EndBody, NoteBody, KIND_END, KIND_NOTE};

    fn seeded_land(dir: &Path) -> Land {
        let clock = Arc::new(LogicalClock::starting_at(1_000));
        let source = KeySource::Seeded([7; 32]);
        Land::plant_in(dir, clock, Limits::default(), source, &StoreLocation::Folder).expect("plant").0
    }

    pub(super) fn spec(land: &Land, name: &str) -> BeingSpec {
        BeingSpec {
            name: name.into(),
            parent: Some(land.operator()),
            cognition: Cognition::Scripted,
            role_flow: Vec::new(),
            default_role: "onlooker".into(),
            home_space: "/".into(),
        }
    }

    fn envelopes(land: &Land) -> Vec<Vec<u8>> {
        let len = land.store().land_len().expect("len");
        land.store().land_log_with_envelopes(0, len).expect("log").into_iter().map(|(_, envelope)| envelope).collect()
    }

    #[test]
    fn beings_submitted_in_one_batch_are_the_facts_and_keys_one_by_one_gives() {
        let (one_dir, batch_dir) = (tempfile::tempdir().expect("dir"), tempfile::tempdir().expect("dir"));
        let (one_by_one, batch) = (seeded_land(one_dir.path()), seeded_land(batch_dir.path()));
        // Sixteen groups whose keys are derived and geneses signed together,
        // on two threads (the one-by-one side derives and signs each alone).
        let names: Vec<String> = (0..PLANTING_GROUP_BEINGS * 2 + 9).map(|index| format!("walker-{index}")).collect();
        for name in &names {
            one_by_one.submit_being(spec(&one_by_one, name)).expect("submit").wait().expect("sealed");
        }
        let specs = names.iter().map(|name| spec(&batch, name)).collect();
        let sealed: Vec<Sealed> = batch
            .submit_beings(specs, 2)
            .expect("submit")
            .into_iter()
            .map(|seal| seal.wait().expect("sealed"))
            .collect();
        assert_eq!(envelopes(&batch), envelopes(&one_by_one));
        assert_eq!(sealed.len(), names.len());
        for sealed in &sealed {
            let key = batch.keys().load(&sealed.being).expect("the batch's key is in the ring");
            assert_eq!(key.to_bytes(), one_by_one.keys().load(&sealed.being).expect("key").to_bytes());
            // Each genesis names the public key `ed25519-dalek` derives from
            // the ring's key, and bears the signature it makes.
            let genesis = batch.store().reel(&sealed.being, 0, 1).expect("reel").remove(0).fact;
            let body: GenesisBody = genesis.body_as().expect("a genesis");
            assert_eq!(body.public_key, PublicKeyBytes::of(&key));
            assert_eq!(*genesis.signature(), ed25519_dalek::Signer::sign(&key, genesis.header_bytes()).to_bytes());
            // Each batch-minted being goes on sealing with its writer.
            batch
                .seal_body(
                    &sealed.being,
                    crate::fact::body::KIND_NOTE,
                    &crate::fact::body::NoteBody { text: "hi".into() },
                )
                .expect("a being planted in a batch seals its next fact");
        }
        // The ring holds the keys after a reopen too.
        drop(batch);
        let reopened = Land::open(batch_dir.path()).expect("open");
        assert!(sealed.iter().all(|sealed| reopened.keys().has(&sealed.being)));
    }

    #[test]
    fn a_batch_with_a_bad_name_is_refused_whole_and_writes_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        let land = seeded_land(dir.path());
        let before = envelopes(&land);
        let ring_before = std::fs::read(land.keys().path()).ok();
        // The bad name in the first group, and in a group after groups that mint.
        for fine_before in [1, PLANTING_GROUP_BEINGS * 3 + 5] {
            let mut specs: Vec<BeingSpec> =
                (0..fine_before).map(|index| spec(&land, &format!("fine-{index}"))).collect();
            specs.push(spec(&land, "not a name!"));
            specs.push(spec(&land, "fine-after"));
            let refused = land.submit_beings(specs, 2).err().expect("a bad name is refused");
            assert!(matches!(&refused, LandError::BadName { name, .. } if name == "not a name!"), "{refused:?}");
            assert_eq!(envelopes(&land), before);
            assert_eq!(std::fs::read(land.keys().path()).ok(), ring_before, "no key was written");
        }
    }

    /// What the writer `land` keeps for `being` holds: its next seq, the
    /// fact it links to, its last stored time, whether the reel ended and
    /// its key's public half (`None`: no writer kept).
    fn writer_state(land: &Land, being: &BeingId) -> Option<(u64, FactId, u64, bool, PublicKeyBytes)> {
        let writers = land.writers.lock().expect("writers");
        let writer = writers.get(being)?.lock().expect("writer");
        Some((writer.next_seq, writer.prev, writer.last_time_ms, writer.ended, PublicKeyBytes(writer.key.public_key())))
    }

    /// The state of `being`'s writer reloaded from the store and the key ring.
    fn reloaded_state(land: &Land, being: &BeingId) -> (u64, FactId, u64, bool, PublicKeyBytes) {
        land.forget_writers(&[*being]);
        land.load_writers(&[*being], 1).expect("load");
        writer_state(land, being).expect("loaded")
    }

    /// Which of the facts sealed "elsewhere" the writer is shown.
    enum Shown {
        /// Every one, in order, from the head before them.
        All,
        /// All but the first: the writer is behind the first it is shown.
        AllButFirst,
        /// The last one again, the writer at its head already: ahead.
        LastAgain,
    }

    /// Seals a note of `ada`, then two more notes (and an `end` if
    /// `ending`) as another process would, shows the writer kept at the
    /// head before them the facts `shown`, and checks the writer is kept
    /// (`followed`) at exactly the head a reload gives, or forgotten.
    fn check_following(shown: Shown, ending: bool, followed: bool) {
        let dir = tempfile::tempdir().expect("dir");
        let land = seeded_land(dir.path());
        let ada = land.submit_being(spec(&land, "ada")).expect("submit").wait().expect("sealed").being;
        land.seal_body(&ada, KIND_NOTE, &NoteBody { text: "one".into() }).expect("sealed");
        let cursor = land.store().land_len().expect("len");
        for text in ["two", "three"] {
            land.seal_body(&ada, KIND_NOTE, &NoteBody { text: text.into() }).expect("sealed");
        }
        if ending {
            land.seal_body(&ada, KIND_END, &EndBody { reason: "done".into() }).expect("sealed");
        }
        let end = land.store().land_len().expect("len");
        let facts: Vec<(u64, Fact)> = land
            .store()
            .land_log_with_envelopes(cursor, end)
            .expect("log")
            .iter()
            .map(|(entry, envelope)| {
                (entry.land_seq, crate::store::decode_entry_envelope(entry, envelope).expect("decode").fact)
            })
            .collect();
        let shown: &[(u64, Fact)] = match shown {
            Shown::All => {
                land.rewind_writers_to(cursor).expect("rewind");
                &facts
            }
            Shown::AllButFirst => {
                land.rewind_writers_to(cursor).expect("rewind");
                &facts[1..]
            }
            Shown::LastAgain => &facts[facts.len() - 1..],
        };
        land.follow_facts_sealed_elsewhere(shown);
        let kept = writer_state(&land, &ada);
        assert_eq!(kept.is_some(), followed, "whether the writer is kept");
        let reloaded = reloaded_state(&land, &ada);
        if let Some(kept) = kept {
            assert_eq!(kept, reloaded, "the writer followed is the writer reloaded");
        }
        assert_eq!(reloaded.0, land.store().head(&ada).expect("head").expect("reel").seq + 1);
    }

    #[test]
    fn a_writer_follows_facts_sealed_elsewhere_to_the_head_a_reload_gives_or_is_forgotten() {
        check_following(Shown::All, false, true);
        check_following(Shown::All, true, true);
        check_following(Shown::AllButFirst, false, false);
        check_following(Shown::AllButFirst, true, false);
        check_following(Shown::LastAgain, false, false);
    }

    /// A round keeps its writers' handles for the next one while the count
    /// of changes to the loaded writers stands still: it moves whenever a
    /// writer is loaded, replaced or forgotten, and stands still as facts
    /// are sealed (a writer moves on in place) and handles are taken.
    #[test]
    fn the_count_of_loaded_writers_changes_moves_when_a_writer_is_loaded_replaced_or_forgotten() {
        let dir = tempfile::tempdir().expect("dir");
        let land = seeded_land(dir.path());
        let specs = (0..4).map(|index| spec(&land, &format!("being-{index}"))).collect();
        let beings: Vec<BeingId> = land
            .submit_beings(specs, 1)
            .expect("submitted")
            .into_iter()
            .map(|seal| seal.wait().expect("sealed").being)
            .collect();
        let note = |land: &Land| {
            land.seal_body(&beings[0], KIND_NOTE, &NoteBody { text: "on".into() }).expect("sealed");
        };
        // What is done, how, and whether the count moves.
        type Step<'a> = (&'a str, &'a dyn Fn(&Land), bool);
        let steps: [Step; 10] = [
            ("a fact sealed by a loaded writer", &note, false),
            ("handles taken", &|land| drop(land.writer_handles(&beings)), false),
            ("a writer forgotten", &|land| land.forget_writers(&beings[..1]), true),
            ("a writer not loaded forgotten", &|land| land.forget_writers(&beings[..1]), false),
            ("a fact sealed by a writer loaded for it", &note, true),
            ("the others forgotten, then loaded for a round", &|land| land.forget_writers(&beings[1..]), true),
            ("plain writers loaded with their handles", &|land| drop(land.plain_writer_handles(&beings, 2)), true),
            ("the same handles taken again", &|land| drop(land.plain_writer_handles(&beings, 2)), false),
            ("every writer reloaded", &|land| land.reload_writers(), true),
            ("nothing loaded reloaded", &|land| land.reload_writers(), false),
        ];
        for (step, act, moves) in steps {
            let before = land.loaded_writers_changes();
            act(&land);
            assert_eq!(land.loaded_writers_changes() != before, moves, "{step}");
        }
        let len = land.store().land_len().expect("len");
        land.load_writers(&beings, 1).expect("loaded");
        let before = land.loaded_writers_changes();
        land.rewind_writers_to(len - 1).expect("rewound");
        assert_ne!(land.loaded_writers_changes(), before, "a writer rewound");
    }

    /// A land of 48 plain beings (enough groups for two threads) and four
    /// whose keys hold more than a current key: a rotation whose fact
    /// sealed but whose staged key was not made current, a staged key
    /// whose rotation never sealed, a key forgotten, and a key that is not
    /// the reel's. Built the same way on any folder, so two of them are
    /// the same land. Returns the land, its beings in id order, and the
    /// two beings with a key staged (the rotation sealed, then the other).
    fn land_of_writers_in_every_state(dir: &Path) -> (Land, Vec<BeingId>, [BeingId; 2]) {
        let land = seeded_land(dir);
        let specs = (0..52).map(|index| spec(&land, &format!("being-{index}"))).collect();
        let pending = land.submit_beings(specs, 1).expect("submitted");
        let mut beings: Vec<BeingId> = pending.into_iter().map(|seal| seal.wait().expect("sealed").being).collect();
        let other_key = |byte: u8| SigningKey::from_bytes(&[byte; 32]);
        let (rotated, staged, forgotten, foreign) = (beings[0], beings[1], beings[2], beings[3]);
        let old_key = land.keys.load(&rotated).expect("key");
        land.rotate_key(&rotated).expect("rotated");
        let new_key = land.keys.load(&rotated).expect("key");
        land.keys.store(&rotated, &old_key).expect("the old key current again");
        land.keys.stage_next(&rotated, &new_key).expect("the reel's key staged");
        land.keys.stage_next(&staged, &other_key(1)).expect("a key staged");
        land.keys.forget(&forgotten).expect("forgotten");
        land.keys.store(&foreign, &other_key(2)).expect("another key current");
        beings.sort();
        land.forget_writers(&beings);
        (land, beings, [rotated, staged])
    }

    /// A writer as a test compares it: next seq, prev, last time, ended,
    /// and its key's public and secret halves.
    type WriterState = (u64, FactId, u64, bool, PublicKeyBytes, [u8; 32]);

    fn writer_states(land: &Land, beings: &[BeingId]) -> Vec<Option<WriterState>> {
        let writers = land.writers.lock().expect("writers");
        beings
            .iter()
            .map(|being| {
                let writer = writers.get(being)?.lock().expect("writer");
                let key = (PublicKeyBytes(writer.key.public_key()), *writer.key.secret_bytes());
                Some((writer.next_seq, writer.prev, writer.last_time_ms, writer.ended, key.0, key.1))
            })
            .collect()
    }

    #[test]
    fn writers_loaded_together_are_the_writers_loaded_one_by_one_and_the_first_failure_is_named() {
        let (one_dir, together_dir) = (tempfile::tempdir().expect("dir"), tempfile::tempdir().expect("dir"));
        let (one_by_one, beings, _) = land_of_writers_in_every_state(one_dir.path());
        let (together, same_beings, [rotated, staged]) = land_of_writers_in_every_state(together_dir.path());
        assert_eq!(beings, same_beings, "the two lands are the same land");
        // Derived together: the 48 plain beings' keys and no other, each
        // the key loading it alone gives (a mismatch would only be loaded
        // alone, so placing keys wrongly would go unseen below).
        let heads = together.store().heads(&beings).expect("heads");
        let derived = together.keys_derived_together(&beings, &heads, 2).expect("derived");
        assert_eq!(derived.iter().filter(|key| key.is_some()).count(), 48);
        for (being, key) in beings.iter().zip(&derived) {
            if let Some(key) = key {
                let alone = KeyPair::of(&together.keys.load(being).expect("a plain key"));
                assert_eq!((key.public_key(), key.secret_bytes()), (alone.public_key(), alone.secret_bytes()));
            }
        }
        // One by one, as each being's first use loads it.
        let mut failures = Vec::new();
        for being in &beings {
            match one_by_one.load_writer(being) {
                Ok(writer) => {
                    one_by_one.writers.lock().expect("writers").insert(*being, Arc::new(Mutex::new(writer)));
                }
                Err(error) => failures.push(error.to_string().replace(&one_dir.path().display().to_string(), "LAND")),
            }
        }
        assert_eq!(failures.len(), 2, "the forgotten key and the other being's: {failures:?}");
        // Plain keys alone first, as a round loads them ahead: the other
        // four are left as they are, a staged key in the ring included.
        together.load_plain_writers(&beings, 2).expect("plain writers load, the others are left");
        let plain_loaded = writer_states(&together, &beings);
        assert_eq!(plain_loaded.iter().filter(|state| state.is_some()).count(), 48);
        // The handles a round signs ahead with are those writers', the
        // others left to the seal.
        together.forget_writers(&beings);
        let handles = together.plain_writer_handles(&beings, 2);
        let handled: Vec<bool> = handles.iter().map(Option::is_some).collect();
        assert_eq!(handled, plain_loaded.iter().map(Option::is_some).collect::<Vec<_>>());
        assert_eq!(writer_states(&together, &beings), plain_loaded);
        assert!(together.keys.staged_next(&rotated).expect("ring").is_some(), "a rotation left to finish");
        assert!(together.keys.staged_next(&staged).expect("ring").is_some(), "a staged key left alone");
        // A being with a key and no reel has no writer, and no failure.
        let no_reel = BeingId([9; 32]);
        together.keys.store(&no_reel, &SigningKey::from_bytes(&[3; 32])).expect("a key");
        together.load_writers(&[no_reel], 2).expect("nothing to load");
        assert_eq!(writer_states(&together, &[no_reel]), [None]);
        // Then the rest, as a turn loads them: the writers loaded stay.
        let error = together.load_writers(&beings, 2).expect_err("two writers do not load");
        let error = error.to_string().replace(&together_dir.path().display().to_string(), "LAND");
        assert_eq!(error, failures[0], "the first failure in id order");
        let loaded = writer_states(&together, &beings);
        assert_eq!(loaded, writer_states(&one_by_one, &beings));
        assert_eq!(loaded.iter().filter(|state| state.is_some()).count(), beings.len() - 2);
        // What loading finished (a rotation made current, a staged key
        // dropped) is in both rings alike: loading again changes nothing.
        together.forget_writers(&beings);
        let _ = together.load_writers(&beings, 2);
        assert_eq!(writer_states(&together, &beings), loaded);
    }

    #[test]
    fn a_writer_does_not_follow_a_rotation_of_its_key() {
        let dir = tempfile::tempdir().expect("dir");
        let land = seeded_land(dir.path());
        let ada = land.submit_being(spec(&land, "ada")).expect("submit").wait().expect("sealed").being;
        land.load_writers(&[ada], 1).expect("load");
        let (next_seq, prev, last_time_ms, ended, _) = writer_state(&land, &ada).expect("loaded");
        let old_key = land.keys.load(&ada).expect("key");
        land.rotate_key(&ada).expect("rotate");
        let rotation = land.store().reel(&ada, next_seq, next_seq + 1).expect("reel").remove(0);
        assert_eq!(rotation.fact.kind(), KIND_ROTATE_KEY);
        // The writer as a process that did not rotate the key keeps it.
        let behind = Writer { key: KeyPair::of(&old_key), next_seq, prev, last_time_ms, ended, stale: false };
        land.writers.lock().expect("writers").insert(ada, Arc::new(Mutex::new(behind)));
        land.follow_facts_sealed_elsewhere(&[(rotation.land_seq, rotation.fact)]);
        assert!(writer_state(&land, &ada).is_none(), "forgotten: its key is no longer the reel's");
        let rotated = land.store().head(&ada).expect("head").expect("reel").public_key;
        assert_eq!(reloaded_state(&land, &ada).4, rotated, "reloaded with the rotated key");
    }
}
