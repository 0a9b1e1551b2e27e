//! The log store: a land's facts as frames in segment files, in land order,
//! each kept in about its own size, with small derived index files beside
//! them. It replaces sled for the facts (issue 26).
//!
//! Layout of the store folder (`log/` in a land):
//!
//! | path            | holds                                                   | kind    |
//! |-----------------|---------------------------------------------------------|---------|
//! | `segments/*.log`| every fact's envelope, in land-seq order (`segments.rs`) | primary |
//! | `forks/*.log`   | rival envelopes kept as fork proofs, in arrival order   | primary |
//! | `beings.index`  | each being's id and name, by ordinal (`index.rs`)       | derived |
//! | `land.index`    | each fact's frame offset, reel seq, being, flags        | derived |
//! | `lock`          | held (flock) by the one process that writes             | —       |
//!
//! Opening writes nothing: the index files are read up to their first record
//! that does not hold, and the log is read from there to its end, in memory
//! (a writing store writes the missing records with its next group). A store
//! opened read-only takes no lock and works where nothing may be written.
//!
//! In memory a store holds, per being, its name and its reel's land seqs
//! (8 bytes a fact), and the slots the land index file does not hold yet.
//! A reel's head is read from its last fact and the fact that set its key,
//! and kept once read.
//!
//! One committer thread writes: it applies the chain rules (`chain.rs`) to a
//! group, appends the fork proofs and then the facts, each synced, and only
//! then updates the indexes, the witness and the heads and acknowledges the
//! group. A failed write is cut back and its group refused; the next group
//! goes on where the last whole one ended (a full disk is one error on the
//! write that hit it).

mod committer;
mod index;

use crate::fact::{BeingId, Fact, FactId, Hash32};
use crate::limits::Limits;
use crate::store::chain::next_head;
use crate::store::index_check::IndexComparison;
use crate::store::queue::Committing;
use crate::store::segments::{read_frame_in, SegmentError, SegmentLog, SEGMENT_BYTES_MAX_DEFAULT};
use crate::store::witness::read_witness;
use crate::store::{
    decode_entry_envelope, AppendTicket, DerivedIndexes, ForkProof, Head, LandEntry, LandLogRead, RawRecord,
    ReindexReport, Store, StoreError, StoredFact,
};
use committer::Committer;
use index::{decode_beings, decode_land_slot, ForkEntry, Indexes, LandSlot, LAND_RECORD_BYTES, UNPLACED};
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

/// Inside a log store's folder: the segments of the facts and of the fork proofs.
pub const LOG_STORE_SEGMENTS_DIR: &str = "segments";
pub const LOG_STORE_FORKS_DIR: &str = "forks";
const SEGMENTS_DIR: &str = LOG_STORE_SEGMENTS_DIR;
const FORKS_DIR: &str = LOG_STORE_FORKS_DIR;
const BEINGS_INDEX_FILE: &str = "beings.index";
const LAND_INDEX_FILE: &str = "land.index";
/// A run of land slots in one segment: their place in the slots read, the
/// segment's path and its file.
type SegmentRun = (std::ops::Range<usize>, PathBuf, Arc<File>);

/// `land.index` records an open reads and checks at once.
pub const LAND_INDEX_LOAD_RECORDS_AT_ONCE: usize = 65_536;
/// Threads that compute the checks of `land.index` records as a store opens.
pub const LAND_INDEX_LOAD_THREADS: usize = 2;
const LOCK_FILE: &str = "lock";
/// How long a writing open waits for the lock of a store that is closing.
pub const LOG_STORE_LOCK_WAIT_MS: u64 = 2_000;
const LOG_STORE_LOCK_RETRY_MS: u64 = 20;

#[derive(Debug, thiserror::Error)]
pub enum LogOpenError {
    #[error("the store is locked by another process (is another `seed` running on this land?)")]
    Locked,
    #[error("{0}")]
    Damaged(SegmentError),
    #[error("the store holds {found} facts but {witness} recorded {recorded} acknowledged facts: it was truncated or replaced by an older copy (if you restored a copy on purpose, delete {witness})")]
    Truncated { found: u64, recorded: u64, witness: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

impl From<SegmentError> for LogOpenError {
    fn from(error: SegmentError) -> LogOpenError {
        match error {
            SegmentError::Io { path, source } => LogOpenError::Io { path, source },
            other => LogOpenError::Damaged(other),
        }
    }
}

fn segment_error(error: SegmentError) -> StoreError {
    StoreError::Io { reason: error.to_string() }
}

/// What readers and the committer share.
pub(super) struct Shared {
    dir: PathBuf,
    indexes: RwLock<Indexes>,
    /// Each segment's first land seq and file.
    segments: RwLock<Vec<(u64, PathBuf)>>,
    /// Open segment files, by first land seq.
    open_segments: Mutex<HashMap<u64, Arc<File>>>,
    /// The land index file, for positioned reads of the slots it holds.
    land_index: RwLock<Option<Arc<File>>>,
    /// Heads read so far (kept current by the committer).
    heads: Mutex<HashMap<BeingId, Head>>,
}

pub struct LogStore {
    shared: Arc<Shared>,
    committing: Committing,
    /// Held while the store writes (released when dropped).
    _lock: Option<File>,
}

impl LogStore {
    /// Opens the store in `dir` to read only: nothing is created, written or
    /// locked, so it works on a read-only mount or a folder of another user.
    pub fn open_read_only(dir: &Path, witness: Option<&Path>) -> Result<LogStore, LogOpenError> {
        let (indexes, log) = load(dir, false)?;
        check_witness(&log, witness)?;
        let shared = Shared::new(dir, indexes, &log)?;
        Ok(LogStore { shared: Arc::new(shared), committing: Committing::none(), _lock: None })
    }

    /// Opens (creating it if need be) the store in `dir` to write, as the one
    /// process that does. `witness` is the file recording the durable count.
    pub fn open(dir: &Path, witness: Option<&Path>, limits: &Limits) -> Result<LogStore, LogOpenError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| LogOpenError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let lock_path = dir.join(LOCK_FILE);
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        let mut waited_ms = 0;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if waited_ms < LOG_STORE_LOCK_WAIT_MS => {
                    std::thread::sleep(std::time::Duration::from_millis(LOG_STORE_LOCK_RETRY_MS));
                    waited_ms += LOG_STORE_LOCK_RETRY_MS;
                }
                Err(std::fs::TryLockError::WouldBlock) => return Err(LogOpenError::Locked),
                Err(std::fs::TryLockError::Error(source)) => return Err(LogOpenError::Io { path: lock_path, source }),
            }
        }
        let (indexes, log) = load(dir, true)?;
        check_witness(&log, witness)?;
        let witness_file = match witness {
            Some(path) => Some(
                std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path).map_err(io(path))?,
            ),
            None => None,
        };
        let forks = SegmentLog::open_for_appending(&dir.join(FORKS_DIR), SEGMENT_BYTES_MAX_DEFAULT)?;
        let shared = Arc::new(Shared::new(dir, indexes, &log)?);
        let committer = Committer::new(shared.clone(), log, forks, witness_file);
        let committing = Committing::start(committer, limits.append_queue_facts_max, limits.group_commit_facts_max)
            .map_err(|source| LogOpenError::Io { path: dir.to_path_buf(), source })?;
        Ok(LogStore { shared, committing, _lock: Some(lock) })
    }

    /// Whether this store was opened to read only.
    pub fn is_read_only(&self) -> bool {
        self._lock.is_none()
    }

    /// What a write to a store without a committer gets.
    fn no_committer(&self) -> StoreError {
        crate::store::queue::no_committer(self.is_read_only())
    }

    /// Stops the committer after it has written everything queued.
    pub fn close(&self) -> Result<(), StoreError> {
        self.committing.stop();
        Ok(())
    }

    /// The folder of the store.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }
}

impl Drop for LogStore {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Refuses a log holding fewer facts than the witness recorded.
fn check_witness(log: &SegmentLog, witness: Option<&Path>) -> Result<(), LogOpenError> {
    if let Some(witness) = witness {
        if let Some(recorded) = read_witness(witness) {
            if log.len() < recorded {
                return Err(LogOpenError::Truncated {
                    found: log.len(),
                    recorded,
                    witness: witness.display().to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Reads the index files as far as they hold, then the log from there.
/// `for_appending` opens the log to append (cutting off a frame a crash
/// left short); otherwise nothing is written.
fn load(dir: &Path, for_appending: bool) -> Result<(Indexes, SegmentLog), LogOpenError> {
    let beings_path = dir.join(BEINGS_INDEX_FILE);
    let beings_bytes = read_if_present(&beings_path)?;
    let (beings, beings_file_bytes) = decode_beings(&beings_bytes);
    let mut indexes = Indexes::of_beings_on_file(beings, beings_file_bytes as u64);
    let land_path = dir.join(LAND_INDEX_FILE);
    let mut last_on_file = None;
    match File::open(&land_path) {
        Ok(mut file) => {
            // Records are read a piece at a time and their checks computed
            // on two threads; they are placed in order up to the first that
            // does not hold.
            let mut piece = Vec::with_capacity(LAND_INDEX_LOAD_RECORDS_AT_ONCE * LAND_RECORD_BYTES);
            'pieces: loop {
                piece.clear();
                let want = (LAND_INDEX_LOAD_RECORDS_AT_ONCE * LAND_RECORD_BYTES) as u64;
                let read = file
                    .by_ref()
                    .take(want)
                    .read_to_end(&mut piece)
                    .map_err(|source| LogOpenError::Io { path: land_path.clone(), source })?;
                let first = indexes.slots_on_file;
                let records: Vec<(u64, &[u8])> = (first..).zip(piece.chunks_exact(LAND_RECORD_BYTES)).collect();
                let slots = crate::parallel::map_in_order(&records, LAND_INDEX_LOAD_THREADS, |(land_seq, record)| {
                    decode_land_slot(*land_seq, record)
                });
                for ((land_seq, _), slot) in records.iter().zip(slots) {
                    match slot {
                        Some(slot) if indexes.fits(&slot) => {
                            indexes.add_slot_on_file(*land_seq, &slot);
                            last_on_file = Some((*land_seq, slot.offset));
                        }
                        _ => break 'pieces,
                    }
                }
                if (read as u64) < want {
                    break;
                }
            }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(LogOpenError::Io { path: land_path, source }),
    }
    let segments_dir = dir.join(SEGMENTS_DIR);
    let log = if for_appending {
        SegmentLog::open_for_appending_after(&segments_dir, SEGMENT_BYTES_MAX_DEFAULT, last_on_file)?
    } else {
        SegmentLog::open_read_only_after(&segments_dir, last_on_file)?
    };
    if log.len() < indexes.land_len() {
        // The index speaks of facts the log does not hold (the witness
        // decides whether that is a truncation): rebuild it from the log.
        indexes = Indexes::default();
    }
    let from = indexes.land_len();
    log.read_positioned_from(from, |land_seq, offset, envelope| {
        indexes.index_frame(land_seq, offset, &envelope);
        Ok(())
    })?;
    let forks_dir = dir.join(FORKS_DIR);
    let forks = SegmentLog::open_read_only(&forks_dir)?;
    forks.read_from(0, |proof, envelope| {
        if let Ok(fact) = Fact::decode_envelope_for_index(&envelope) {
            indexes.forked.insert(fact.header.being);
            indexes.forks.push(ForkEntry { being: fact.header.being, seq: fact.header.seq, rival: fact.id(), proof });
        }
        Ok(())
    })?;
    Ok((indexes, log))
}

/// The error for an index record whose frame is not where it points.
fn index_points_at_no_frame(path: &Path, (land_seq, slot): &(u64, LandSlot)) -> StoreError {
    StoreError::Io {
        reason: format!(
            "{} at byte {}: the index points at no frame of land seq {land_seq} (run `seed reindex`)",
            path.display(),
            slot.offset
        ),
    }
}

/// The error of a `land.index` record whose check does not hold.
fn damaged_land_record(path: &Path, land_seq: u64) -> StoreError {
    StoreError::Io {
        reason: format!(
            "{} at byte {}: the index record of land seq {land_seq} does not hold (run `seed reindex`)",
            path.display(),
            land_seq * LAND_RECORD_BYTES as u64
        ),
    }
}

fn read_if_present(path: &Path) -> Result<Vec<u8>, LogOpenError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(bytes),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(LogOpenError::Io { path: path.to_path_buf(), source }),
    }
}

impl Shared {
    fn new(dir: &Path, indexes: Indexes, log: &SegmentLog) -> Result<Shared, LogOpenError> {
        let land_path = dir.join(LAND_INDEX_FILE);
        let land_index = match File::open(&land_path) {
            Ok(file) => Some(Arc::new(file)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(LogOpenError::Io { path: land_path, source }),
        };
        Ok(Shared {
            dir: dir.to_path_buf(),
            indexes: RwLock::new(indexes),
            segments: RwLock::new(log.segment_files()),
            open_segments: Mutex::new(HashMap::new()),
            land_index: RwLock::new(land_index),
            heads: Mutex::new(HashMap::new()),
        })
    }

    fn indexes(&self) -> Result<std::sync::RwLockReadGuard<'_, Indexes>, StoreError> {
        self.indexes.read().map_err(|_| StoreError::Closed)
    }

    /// Where the fact at `land_seq` is.
    fn slot(&self, land_seq: u64) -> Result<LandSlot, StoreError> {
        match self.slots(land_seq, land_seq.saturating_add(1))?.first() {
            Some((_, slot)) => Ok(*slot),
            None => Err(StoreError::Io { reason: format!("land seq {land_seq} is past the end of the land log") }),
        }
    }

    /// Slots of land seqs `from..to` (clamped to the log), read in one go
    /// from the index file where it holds them.
    fn slots(&self, from: u64, to: u64) -> Result<Vec<(u64, LandSlot)>, StoreError> {
        let indexes = self.indexes()?;
        let to = to.min(indexes.land_len());
        let mut slots = Vec::with_capacity(to.saturating_sub(from) as usize);
        if from >= to {
            return Ok(slots);
        }
        let on_file_to = to.min(indexes.slots_on_file);
        if from < on_file_to {
            use std::os::unix::fs::FileExt;
            let file = self.land_index.read().map_err(|_| StoreError::Closed)?.clone();
            let path = self.dir.join(LAND_INDEX_FILE);
            let file = file.ok_or_else(|| StoreError::Io { reason: format!("{} is missing", path.display()) })?;
            let mut bytes = vec![0u8; (on_file_to - from) as usize * LAND_RECORD_BYTES];
            file.read_exact_at(&mut bytes, from * LAND_RECORD_BYTES as u64)
                .map_err(|error| StoreError::Io { reason: format!("{}: {error}", path.display()) })?;
            for (index, record) in bytes.chunks_exact(LAND_RECORD_BYTES).enumerate() {
                let land_seq = from + index as u64;
                let slot = decode_land_slot(land_seq, record).ok_or_else(|| damaged_land_record(&path, land_seq))?;
                slots.push((land_seq, slot));
            }
        }
        for land_seq in from.max(indexes.slots_on_file)..to {
            slots.push((land_seq, indexes.slots_after_file[(land_seq - indexes.slots_on_file) as usize]));
        }
        Ok(slots)
    }

    /// The segment holding `land_seq`: its first land seq, its path and the
    /// file, opened once and shared.
    fn segment_of(&self, land_seq: u64) -> Result<(u64, PathBuf, Arc<File>), StoreError> {
        let (first, path) = {
            let segments = self.segments.read().map_err(|_| StoreError::Closed)?;
            let at = segments.partition_point(|(first, _)| *first <= land_seq);
            match at.checked_sub(1).and_then(|at| segments.get(at)) {
                Some(found) => found.clone(),
                None => return Err(StoreError::Io { reason: format!("no segment holds land seq {land_seq}") }),
            }
        };
        let mut open = self.open_segments.lock().map_err(|_| StoreError::Closed)?;
        let file = match open.get(&first) {
            Some(file) => file.clone(),
            None => {
                let file = Arc::new(
                    File::open(&path)
                        .map_err(|error| StoreError::Io { reason: format!("{}: {error}", path.display()) })?,
                );
                open.insert(first, file.clone());
                file
            }
        };
        Ok((first, path, file))
    }

    /// The first land seq of the segment after the one starting at `first`.
    fn segment_after(&self, first: u64) -> Result<Option<u64>, StoreError> {
        let segments = self.segments.read().map_err(|_| StoreError::Closed)?;
        Ok(segments.iter().map(|(start, _)| *start).find(|start| *start > first))
    }

    /// The envelope of the fact at `land_seq`, read where `slot` says and
    /// checked to be that land seq's frame.
    fn envelope_at(&self, land_seq: u64, slot: &LandSlot) -> Result<Vec<u8>, StoreError> {
        let (_, path, file) = self.segment_of(land_seq)?;
        match read_frame_in(&file, &path, slot.offset).map_err(segment_error)? {
            Some((found, envelope)) if found == land_seq => Ok(envelope),
            _ => Err(index_points_at_no_frame(&path, &(land_seq, *slot))),
        }
    }

    /// `slots` (in land order) cut into the runs each segment holds: each
    /// run's place in `slots`, with its segment's path and file.
    fn segment_runs(&self, slots: &[(u64, LandSlot)]) -> Result<Vec<SegmentRun>, StoreError> {
        let mut runs = Vec::new();
        let mut at = 0;
        while at < slots.len() {
            let (segment_first, path, file) = self.segment_of(slots[at].0)?;
            let next_segment = self.segment_after(segment_first)?;
            let run_end = slots[at..]
                .iter()
                .position(|(land_seq, _)| next_segment.is_some_and(|next| *land_seq >= next))
                .map_or(slots.len(), |run| at + run);
            runs.push((at..run_end, path, file));
            at = run_end;
        }
        Ok(runs)
    }

    /// The land log entries from `from` to `to` with their envelopes, each
    /// run of frames in one segment read at once, every frame checked.
    fn land_log_with_envelopes(&self, from: u64, to: u64) -> Result<Vec<(LandEntry, Vec<u8>)>, StoreError> {
        let slots = self.slots(from, to)?;
        let mut read = Vec::with_capacity(slots.len());
        for (run, path, file) in self.segment_runs(&slots)? {
            // One read for the run of frames in one segment.
            let frames = crate::store::segments::read_frames_in(&file, &path, slots[run.start].1.offset, run.len())
                .map_err(segment_error)?;
            let indexes = self.indexes()?;
            for ((land_seq, slot), (found_land_seq, found_offset, envelope)) in slots[run].iter().zip(frames) {
                if found_land_seq != *land_seq || found_offset != slot.offset {
                    return Err(index_points_at_no_frame(&path, &(*land_seq, *slot)));
                }
                if let Some(entry) = indexes.beings.get(slot.ordinal as usize) {
                    read.push((LandEntry { land_seq: *land_seq, being: entry.id, seq: slot.seq }, envelope));
                }
            }
        }
        Ok(read)
    }

    /// The land log entries from `from` to `to` with their envelopes, each
    /// run of frames in one segment read into one buffer with no frame's
    /// check computed.
    fn land_log_unverified(&self, from: u64, to: u64, read: &mut LandLogRead) -> Result<(), StoreError> {
        let slots = self.slots(from, to)?;
        let (bytes, entries) = read.parts_mut();
        entries.reserve(slots.len());
        for (run, path, file) in self.segment_runs(&slots)? {
            let (first_offset, last_offset) = (slots[run.start].1.offset, slots[run.end - 1].1.offset);
            let frames =
                crate::store::segments::read_frame_span_unverified(&file, &path, first_offset, last_offset, bytes)
                    .map_err(segment_error)?;
            let indexes = self.indexes()?;
            for (index, (land_seq, slot)) in slots[run].iter().enumerate() {
                match frames.get(index) {
                    Some((found_land_seq, found_offset, envelope))
                        if found_land_seq == land_seq && *found_offset == slot.offset =>
                    {
                        if let Some(being) = indexes.beings.get(slot.ordinal as usize) {
                            let entry = LandEntry { land_seq: *land_seq, being: being.id, seq: slot.seq };
                            entries.push((entry, envelope.clone()));
                        }
                    }
                    _ => return Err(index_points_at_no_frame(&path, &(*land_seq, *slot))),
                }
            }
        }
        Ok(())
    }

    fn land_seq_of(&self, being: &BeingId, seq: u64) -> Result<Option<u64>, StoreError> {
        let indexes = self.indexes()?;
        Ok(indexes
            .ordinals
            .get(being)
            .and_then(|ordinal| indexes.beings[*ordinal as usize].reel.get(seq as usize).copied()))
    }

    fn decoded(&self, being: &BeingId, seq: u64, land_seq: u64) -> Result<Fact, StoreError> {
        let envelope = self.envelope_at(land_seq, &self.slot(land_seq)?)?;
        let corrupt = |reason: String| StoreError::Corrupt { being: *being, seq, reason };
        let fact = Fact::decode_envelope_for_index(&envelope).map_err(|error| corrupt(error.to_string()))?;
        if fact.header.being != *being || fact.header.seq != seq {
            return Err(corrupt(format!("the fact at land seq {land_seq} is not this one")));
        }
        Ok(fact)
    }

    /// The head of `being`'s reel: from its last fact and the fact that set
    /// its key, kept once read.
    fn head(&self, being: &BeingId) -> Result<Option<Head>, StoreError> {
        if let Some(head) = self.heads.lock().map_err(|_| StoreError::Closed)?.get(being) {
            return Ok(Some(*head));
        }
        let (last_seq, last_land_seq, key_seq, key_land_seq) = {
            let indexes = self.indexes()?;
            let Some(ordinal) = indexes.ordinals.get(being) else { return Ok(None) };
            let entry = &indexes.beings[*ordinal as usize];
            let Some(last) = entry.reel.last().copied() else { return Ok(None) };
            // Reels are in land order, so the key fact's seq is found by search.
            let key_seq = entry.reel.partition_point(|land_seq| *land_seq < entry.key_land_seq);
            ((entry.reel.len() - 1) as u64, last, key_seq as u64, entry.key_land_seq)
        };
        let last_fact = self.decoded(being, last_seq, last_land_seq)?;
        let key_fact = self.decoded(being, key_seq, key_land_seq)?;
        let corrupt = |reason: String| StoreError::Corrupt { being: *being, seq: key_seq, reason };
        let keyed = next_head(None, &key_fact).map_err(|error| corrupt(error.to_string()))?;
        let head = Head {
            seq: last_fact.header.seq,
            id: last_fact.id(),
            stored_time_ms: last_fact.header.stored_time_ms,
            public_key: keyed.public_key,
            ended: last_fact.kind() == crate::fact::body::KIND_END,
        };
        // A head the committer kept meanwhile is newer than this one (read
        // from the indexes before it committed): it stays, and is the answer.
        let mut heads = self.heads.lock().map_err(|_| StoreError::Closed)?;
        Ok(Some(*heads.entry(*being).or_insert(head)))
    }
}

impl Store for LogStore {
    fn submit(&self, fact: Fact) -> AppendTicket {
        self.committing.submit(fact, self.no_committer())
    }

    fn appends_waiting(&self) -> u64 {
        self.committing.facts_waiting()
    }

    fn head(&self, being: &BeingId) -> Result<Option<Head>, StoreError> {
        self.shared.head(being)
    }

    /// Each head as [`Store::head`] reads it (its last fact and its key's,
    /// each read and decoded), on the machine's cores: a live land's first
    /// round on a million beings reads two million facts for them.
    fn heads(&self, beings: &[BeingId]) -> Result<Vec<Option<Head>>, StoreError> {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        crate::parallel::map_in_order(beings, threads, |being| self.shared.head(being)).into_iter().collect()
    }

    fn beings(&self) -> Result<Vec<BeingId>, StoreError> {
        let indexes = self.shared.indexes()?;
        Ok(indexes
            .ordinals
            .iter()
            .filter(|(_, ordinal)| !indexes.beings[**ordinal as usize].reel.is_empty())
            .map(|(being, _)| *being)
            .collect())
    }

    fn beings_named(&self, name: &str) -> Result<Vec<BeingId>, StoreError> {
        let indexes = self.shared.indexes()?;
        Ok(indexes
            .names
            .range((name.to_string(), BeingId::ZERO)..)
            .take_while(|(held, _)| held == name)
            .map(|(_, being)| *being)
            .collect())
    }

    fn reel(&self, being: &BeingId, from_seq: u64, to_seq: u64) -> Result<Vec<StoredFact>, StoreError> {
        let land_seqs: Vec<u64> = {
            let indexes = self.shared.indexes()?;
            match indexes.ordinals.get(being) {
                Some(ordinal) => {
                    let reel = &indexes.beings[*ordinal as usize].reel;
                    let to = (to_seq.min(reel.len() as u64)) as usize;
                    reel.get((from_seq as usize).min(to)..to).unwrap_or(&[]).to_vec()
                }
                None => Vec::new(),
            }
        };
        let mut facts = Vec::with_capacity(land_seqs.len());
        for (index, land_seq) in land_seqs.into_iter().enumerate() {
            let seq = from_seq + index as u64;
            let envelope = self.shared.envelope_at(land_seq, &self.shared.slot(land_seq)?)?;
            let corrupt = |reason: String| StoreError::Corrupt { being: *being, seq, reason };
            let fact = Fact::decode_envelope(&envelope).map_err(|error| corrupt(error.to_string()))?;
            if fact.header.being != *being || fact.header.seq != seq {
                return Err(corrupt(format!("the fact at land seq {land_seq} is not this one")));
            }
            facts.push(StoredFact { land_seq, fact });
        }
        Ok(facts)
    }

    fn land_seq_of(&self, being: &BeingId, seq: u64) -> Result<Option<u64>, StoreError> {
        self.shared.land_seq_of(being, seq)
    }

    fn raw_records(&self, being: Option<&BeingId>) -> Result<Vec<RawRecord>, StoreError> {
        match being {
            Some(being) => {
                let mut records = Vec::new();
                self.raw_records_of(being, &mut records)?;
                Ok(records)
            }
            None => self.raw_records_after(None, usize::MAX),
        }
    }

    fn raw_records_after(&self, after: Option<&BeingId>, facts_max: usize) -> Result<Vec<RawRecord>, StoreError> {
        let beings: Vec<BeingId> = {
            let indexes = self.shared.indexes()?;
            let range = match after {
                Some(after) => indexes.ordinals.range((std::ops::Bound::Excluded(*after), std::ops::Bound::Unbounded)),
                None => indexes.ordinals.range(..),
            };
            let mut facts = 0usize;
            let mut beings = Vec::new();
            for (being, ordinal) in range {
                if facts >= facts_max {
                    break;
                }
                facts += indexes.beings[*ordinal as usize].reel.len();
                beings.push(*being);
            }
            beings
        };
        let mut records = Vec::new();
        for being in &beings {
            self.raw_records_of(being, &mut records)?;
        }
        Ok(records)
    }

    fn land_len(&self) -> Result<u64, StoreError> {
        Ok(self.shared.indexes()?.land_len())
    }

    fn land_log(&self, from: u64, to: u64) -> Result<Vec<LandEntry>, StoreError> {
        let slots = self.shared.slots(from, to)?;
        let indexes = self.shared.indexes()?;
        Ok(slots
            .into_iter()
            .filter(|(_, slot)| slot.ordinal != UNPLACED)
            .filter_map(|(land_seq, slot)| {
                let being = indexes.beings.get(slot.ordinal as usize)?.id;
                Some(LandEntry { land_seq, being, seq: slot.seq })
            })
            .collect())
    }

    fn fact_at(&self, entry: &LandEntry) -> Result<Option<StoredFact>, StoreError> {
        if entry.land_seq >= self.shared.indexes()?.land_len() {
            return Ok(None);
        }
        let envelope = self.shared.envelope_at(entry.land_seq, &self.shared.slot(entry.land_seq)?)?;
        decode_entry_envelope(entry, &envelope).map(Some)
    }

    fn land_log_with_envelopes(&self, from: u64, to: u64) -> Result<Vec<(LandEntry, Vec<u8>)>, StoreError> {
        self.shared.land_log_with_envelopes(from, to)
    }

    fn land_log_with_envelopes_unverified(&self, from: u64, to: u64, read: &mut LandLogRead) -> Result<(), StoreError> {
        read.clear();
        self.shared.land_log_unverified(from, to, read)
    }

    fn fork_proofs(&self, being: Option<&BeingId>) -> Result<Vec<ForkProof>, StoreError> {
        let entries: Vec<ForkEntry> = {
            let indexes = self.shared.indexes()?;
            indexes.forks.iter().filter(|entry| being.is_none_or(|being| entry.being == *being)).copied().collect()
        };
        let forks = SegmentLog::open_read_only(&self.shared.dir.join(FORKS_DIR)).map_err(segment_error)?;
        let mut envelopes = HashMap::new();
        forks
            .read_from(0, |proof, envelope| {
                envelopes.insert(proof, envelope);
                Ok(())
            })
            .map_err(segment_error)?;
        let mut proofs = Vec::new();
        for entry in entries {
            let kept = match self.shared.land_seq_of(&entry.being, entry.seq)? {
                Some(land_seq) => {
                    self.shared.decoded(&entry.being, entry.seq, land_seq).map(|fact| fact.id()).unwrap_or(FactId::ZERO)
                }
                None => FactId::ZERO,
            };
            proofs.push(ForkProof {
                being: entry.being,
                seq: entry.seq,
                kept,
                rival: entry.rival,
                rival_envelope: envelopes.remove(&entry.proof).unwrap_or_default(),
            });
        }
        proofs.sort_by_key(|proof| (proof.being, proof.seq, proof.rival));
        Ok(proofs)
    }

    fn reindex(&self) -> Result<ReindexReport, StoreError> {
        self.committing.reindex(self.no_committer())
    }

    fn unclaimed_records(&self) -> Result<Vec<(u64, String)>, StoreError> {
        let unindexed = self.shared.indexes()?.unindexed.clone();
        let mut unclaimed = Vec::with_capacity(unindexed.len());
        for land_seq in unindexed {
            let slot = self.shared.slot(land_seq)?;
            let (_, path, _) = self.shared.segment_of(land_seq)?;
            unclaimed.push((
                land_seq,
                format!(
                    "{} at byte {}: the frame holds no fact a reel can claim (it does not decode as a fact, or it \
                     is out of its reel's order)",
                    path.display(),
                    slot.offset
                ),
            ));
        }
        Ok(unclaimed)
    }

    fn index_problems(&self, expected: &DerivedIndexes) -> Result<Vec<String>, StoreError> {
        let mut comparison = IndexComparison::new(expected);
        let kept = |being: &BeingId| !expected.skip.contains(being);
        let len = self.land_len()?;
        const CHUNK: u64 = 1 << 16;
        let mut from = 0;
        while from < len {
            let to = (from + CHUNK).min(len);
            let slots = self.shared.slots(from, to)?;
            let indexes = self.shared.indexes()?;
            for (land_seq, slot) in slots {
                let stored = indexes.beings.get(slot.ordinal as usize).map(|entry| (entry.id, slot.seq));
                comparison.land_log_entry(land_seq, stored);
            }
            from = to;
        }
        comparison.land_log_read();
        {
            let indexes = self.shared.indexes()?;
            comparison.names_and_forks(&indexes.names, &indexes.forked);
        }
        for (being, head) in expected.heads.iter().filter(|(being, _)| kept(being)) {
            match self.shared.head(being) {
                Ok(Some(stored)) if stored.public_key == head.public_key => {}
                _ => comparison.key_entry_wrong(being),
            }
        }
        Ok(comparison.into_problems())
    }

    fn derived_index_digest(&self) -> Result<Hash32, StoreError> {
        let mut hasher = blake3::Hasher::new();
        let len = self.land_len()?;
        let slots = self.shared.slots(0, len)?;
        let indexes = self.shared.indexes()?;
        for (land_seq, slot) in slots {
            hasher.update(&land_seq.to_be_bytes());
            hasher.update(&slot.offset.to_be_bytes());
            hasher.update(&slot.seq.to_be_bytes());
            hasher.update(&slot.flags.to_be_bytes());
            let being = indexes.beings.get(slot.ordinal as usize).map(|entry| entry.id).unwrap_or(BeingId::ZERO);
            hasher.update(being.as_bytes());
        }
        for (name, being) in &indexes.names {
            hasher.update(&(name.len() as u64).to_be_bytes());
            hasher.update(name.as_bytes());
            hasher.update(being.as_bytes());
        }
        for being in &indexes.forked {
            hasher.update(being.as_bytes());
        }
        Ok(Hash32(*hasher.finalize().as_bytes()))
    }
}

impl crate::store::StoreSurgery for LogStore {
    /// Replaces the stored envelope of `being`'s fact at `seq` with one of
    /// the same length, its frame's check made to match: for the tamper
    /// tests and repair tools. It bypasses every chain rule.
    fn overwrite_envelope_unchecked(&self, being: &BeingId, seq: u64, envelope: &[u8]) -> Result<(), StoreError> {
        let land_seq = self.shared.land_seq_of(being, seq)?.ok_or(StoreError::Corrupt {
            being: *being,
            seq,
            reason: "not stored".into(),
        })?;
        let slot = self.shared.slot(land_seq)?;
        let (_, path, _) = self.shared.segment_of(land_seq)?;
        crate::store::segments::rewrite_frame_unchecked(&path, slot.offset, land_seq, envelope)
            .map_err(segment_error)?;
        self.shared.heads.lock().map_err(|_| StoreError::Closed)?.remove(being);
        Ok(())
    }

    /// The stored envelope of `being`'s fact at `seq`, as kept.
    fn stored_envelope(&self, being: &BeingId, seq: u64) -> Result<Option<Vec<u8>>, StoreError> {
        match self.shared.land_seq_of(being, seq)? {
            Some(land_seq) => Ok(Some(self.shared.envelope_at(land_seq, &self.shared.slot(land_seq)?)?)),
            None => Ok(None),
        }
    }
}

impl LogStore {
    fn raw_records_of(&self, being: &BeingId, records: &mut Vec<RawRecord>) -> Result<(), StoreError> {
        let land_seqs = {
            let indexes = self.shared.indexes()?;
            match indexes.ordinals.get(being) {
                Some(ordinal) => indexes.beings[*ordinal as usize].reel.clone(),
                None => return Ok(()),
            }
        };
        for (seq, land_seq) in land_seqs.into_iter().enumerate() {
            let envelope = self.shared.envelope_at(land_seq, &self.shared.slot(land_seq)?)?;
            records.push(RawRecord { being: *being, seq: seq as u64, land_seq: Some(land_seq), envelope });
        }
        Ok(())
    }
}
