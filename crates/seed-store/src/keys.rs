//! The key ring: the Ed25519 signing keys of the beings this land hosts, in
//! one file, `keys/ring` (the folder 0700, the file 0600; a ring others can
//! read is refused, naming the `chmod` that fixes it).
//!
//! The ring is a log of text lines, appended and synced (one at a time,
//! or a planting's batch in one append and one sync):
//! `<record> <being id hex> <secret seed hex> <check>`, where the record is
//! `key` (the being's current key), `next` (a key a rotation staged before
//! its `rotate-key` fact was sealed), `promote` (the staged key became
//! current), `discard` (a staged key whose rotation never sealed) or
//! `forget` (the land no longer holds the being's key), and the check is the
//! first 16 hex digits of the line's BLAKE3. Reading replays the lines in
//! order. A last line cut short by a crash is ignored (nothing was
//! acknowledged on it); a damaged line elsewhere makes that being's key
//! unreadable, naming the line, and leaves the others' alone.
//!
//! Nothing is read or written before a key is first asked for, so commands
//! that only read a land never open the ring. Lands written before the ring
//! kept one file per being (`<id>.key`, `<id>.next`): the first time such a
//! ring is read its files are written into `ring` (synced, then renamed into
//! place) and removed; where the folder cannot be written (a read-only copy)
//! they are read as they are.

use crate::fact::BeingId;
use ed25519_dalek::SigningKey;
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use zeroize::Zeroizing;

/// The ring's file in the key folder.
pub const KEY_RING_FILE: &str = "ring";
/// The lock file appends to the ring hold (it holds nothing itself).
pub const KEY_RING_LOCK_FILE: &str = "ring.lock";
/// Hex digits of a line's BLAKE3 kept as its check.
const LINE_CHECK_HEX_DIGITS: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("no signing key for being {being} in {dir} (this land cannot act for it)")]
    Missing { being: BeingId, dir: PathBuf },
    #[error("key file {path} is readable by others (mode {mode:o}); run `chmod 600 {path}`")]
    Permissions { path: PathBuf, mode: u32 },
    #[error("key file {path} is corrupt: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error("key ring {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("the operating system's random source failed: {reason}")]
    Random { reason: String },
}

/// A key's 32-byte secret seed: what the ring's lines hold, and all it
/// keeps in memory (a `SigningKey` also holds its public point, 7 times the
/// size, and computing that point is done only when a key is asked for).
type KeySeed = [u8; 32];

/// One being's keys as the ring's lines leave them. A ring of a million
/// beings holds a million of these: what only a rotation or damage sets is
/// kept apart, so a being with just its key costs its key.
#[derive(Clone, Default)]
struct BeingKeys {
    current: Option<KeySeed>,
    rare: Option<Box<RareKeys>>,
}

#[derive(Clone, Default)]
struct RareKeys {
    staged: Option<KeySeed>,
    /// The line that damaged this being's record, if the last word on it is damage.
    damaged: Option<String>,
}

impl BeingKeys {
    fn staged(&self) -> Option<&KeySeed> {
        self.rare.as_ref().and_then(|rare| rare.staged.as_ref())
    }

    fn damaged(&self) -> Option<&String> {
        self.rare.as_ref().and_then(|rare| rare.damaged.as_ref())
    }

    fn set_staged(&mut self, staged: Option<KeySeed>) {
        if staged.is_none() && self.rare.is_none() {
            return;
        }
        self.rare.get_or_insert_default().staged = staged;
        self.drop_empty_rare();
    }

    fn set_damaged(&mut self, damaged: Option<String>) {
        if damaged.is_none() && self.rare.is_none() {
            return;
        }
        self.rare.get_or_insert_default().damaged = damaged;
        self.drop_empty_rare();
    }

    fn drop_empty_rare(&mut self) {
        if self.rare.as_ref().is_some_and(|rare| rare.staged.is_none() && rare.damaged.is_none()) {
            self.rare = None;
        }
    }
}

/// What has been read of the ring.
#[derive(Default)]
struct Loaded {
    beings: BTreeMap<BeingId, BeingKeys>,
    /// The ring file is open for appending (created on the first write).
    file: Option<fs::File>,
    /// The ring file as this ring last read or wrote it: another ring on
    /// the same folder (a repair tool, a test) that appended since makes it
    /// read again.
    seen: Option<FileStamp>,
    /// Bytes of the ring up to its last whole line: a line cut short by a
    /// crash is cut off before the next one is appended.
    whole_lines_len: u64,
}

/// A file's identity and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    inode: u64,
    len: u64,
}

fn stamp_of(path: &Path) -> Option<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).ok().map(|metadata| FileStamp { inode: metadata.ino(), len: metadata.len() })
}

pub struct KeyRing {
    dir: PathBuf,
    /// `None` until a key is first asked for or written.
    loaded: Mutex<Option<Loaded>>,
}

impl KeyRing {
    /// The ring in `dir`; nothing is read or created yet.
    pub fn open(dir: &Path) -> Result<KeyRing, KeyError> {
        Ok(KeyRing { dir: dir.to_path_buf(), loaded: Mutex::new(None) })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The ring's file.
    pub fn path(&self) -> PathBuf {
        self.dir.join(KEY_RING_FILE)
    }

    /// A fresh key from the operating system's random source.
    pub fn generate() -> Result<SigningKey, KeyError> {
        let mut seed = [0u8; 32];
        random_bytes(&mut seed)?;
        Ok(SigningKey::from_bytes(&seed))
    }

    /// Runs `work` on the ring as read so far (reading it first if need be).
    fn with_loaded<T>(&self, work: impl FnOnce(&mut Loaded) -> Result<T, KeyError>) -> Result<T, KeyError> {
        // Nothing panics while the lock is held, so it is never poisoned.
        let mut guard = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        let stale = guard.as_ref().is_none_or(|loaded| loaded.seen != stamp_of(&self.path()));
        if stale {
            *guard = Some(self.read()?);
        }
        work(guard.as_mut().expect("just read"))
    }

    pub fn store(&self, being: &BeingId, key: &SigningKey) -> Result<(), KeyError> {
        self.append_lines(&[(Record::Key, *being, Some(key.to_bytes()))])
    }

    /// Stores the keys of many beings in one append and one sync (a
    /// planting mints thousands at once; one sync each bound it to the disk).
    /// Each key is given by its 32 secret bytes.
    pub fn store_many<'a>(&self, keys: impl IntoIterator<Item = (BeingId, &'a KeySeed)>) -> Result<(), KeyError> {
        let lines: Vec<_> = keys.into_iter().map(|(being, secret)| (Record::Key, being, Some(*secret))).collect();
        self.append_lines(&lines)
    }

    pub fn load(&self, being: &BeingId) -> Result<SigningKey, KeyError> {
        let path = self.path();
        self.with_loaded(|loaded| {
            let keys = loaded.beings.get(being);
            if let Some(reason) = keys.and_then(|keys| keys.damaged().cloned()) {
                return Err(KeyError::Corrupt { path, reason });
            }
            keys.and_then(|keys| keys.current.as_ref())
                .map(SigningKey::from_bytes)
                .ok_or_else(|| KeyError::Missing { being: *being, dir: self.dir.clone() })
        })
    }

    /// The current secret of each of `beings` whose keys hold nothing
    /// else (no key staged for a rotation, no damage), read in one look at
    /// the ring: the indexes in `beings` of those that have one, and their
    /// secrets in that order (wiped when dropped). Any other being's key
    /// is asked for alone ([`KeyRing::load`], [`KeyRing::staged_next`]),
    /// which finishes a rotation or names what is wrong. A round's million
    /// writers asked for one at a time looked at the ring's file twice each.
    pub fn plain_secrets(&self, beings: &[BeingId]) -> Result<(Vec<usize>, Zeroizing<Vec<KeySeed>>), KeyError> {
        self.with_loaded(|loaded| {
            let mut indexes = Vec::new();
            let mut secrets = Zeroizing::new(Vec::with_capacity(beings.len()));
            for (index, being) in beings.iter().enumerate() {
                let Some(keys) = loaded.beings.get(being).filter(|keys| keys.rare.is_none()) else { continue };
                if let Some(secret) = keys.current {
                    indexes.push(index);
                    secrets.push(secret);
                }
            }
            Ok((indexes, secrets))
        })
    }

    pub fn has(&self, being: &BeingId) -> bool {
        self.load(being).is_ok()
    }

    /// Writes the key a rotation will switch to, before its fact is sealed.
    pub fn stage_next(&self, being: &BeingId, key: &SigningKey) -> Result<(), KeyError> {
        self.append_lines(&[(Record::Next, *being, Some(key.to_bytes()))])
    }

    pub fn staged_next(&self, being: &BeingId) -> Result<Option<SigningKey>, KeyError> {
        self.with_loaded(|loaded| Ok(loaded.beings.get(being).and_then(BeingKeys::staged).map(SigningKey::from_bytes)))
    }

    /// Makes the staged key current (after the rotate-key fact is durable).
    pub fn promote_next(&self, being: &BeingId) -> Result<(), KeyError> {
        self.append_lines(&[(Record::Promote, *being, None)])
    }

    /// Drops a staged key whose rotation never sealed.
    pub fn discard_next(&self, being: &BeingId) -> Result<(), KeyError> {
        self.append_lines(&[(Record::Discard, *being, None)])
    }

    /// Drops every key of `being`: the land can no longer act for it.
    pub fn forget(&self, being: &BeingId) -> Result<(), KeyError> {
        self.append_lines(&[(Record::Forget, *being, None)])
    }

    /// Appends lines and syncs them once, then applies them to what was read.
    fn append_lines(&self, records: &[(Record, BeingId, Option<KeySeed>)]) -> Result<(), KeyError> {
        if records.is_empty() {
            return Ok(());
        }
        let path = self.path();
        let lines: String =
            records.iter().map(|(record, being, key)| record_line(*record, being, key.as_ref())).collect();
        // Several processes may share a land's ring (a pool's workers on one
        // machine): an append holds the ring's lock file, and reads what the
        // others appended before it writes, so no line is cut or lost.
        let lock_path = self.dir.join(KEY_RING_LOCK_FILE);
        let lock_io = |source| KeyError::Io { path: lock_path.clone(), source };
        fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir).map_err(lock_io)?;
        let lock = fs::OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(&lock_path);
        let lock = lock.map_err(lock_io)?;
        lock.lock().map_err(lock_io)?;
        self.with_loaded(|loaded| {
            let io = |source| KeyError::Io { path: path.clone(), source };
            if loaded.file.is_none() {
                loaded.file = Some(open_for_appending(&self.dir, &path, loaded.whole_lines_len).map_err(io)?);
            }
            let file = loaded.file.as_mut().expect("just opened");
            file.write_all(lines.as_bytes()).map_err(io)?;
            file.sync_data().map_err(io)?;
            for (record, being, key) in records {
                apply(loaded.beings.entry(*being).or_default(), *record, *key);
            }
            loaded.seen = stamp_of(&path);
            loaded.whole_lines_len += lines.len() as u64;
            Ok(())
        })
    }

    /// Reads the ring (migrating a folder of per-being files first, where it can).
    fn read(&self) -> Result<Loaded, KeyError> {
        let path = self.path();
        let io = |source| KeyError::Io { path: path.clone(), source };
        let seen = stamp_of(&path);
        let text = match fs::read(&path) {
            Ok(bytes) => {
                refuse_if_exposed(&path)?;
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return self.read_per_being_files();
            }
            Err(source) => return Err(io(source)),
        };
        let whole_lines_len = text.rfind('\n').map_or(0, |last| last as u64 + 1);
        let beings = beings_of_lines(text, &path)?;
        Ok(Loaded { beings, seen, whole_lines_len, file: None })
    }

    /// A key folder of one file per being (lands written before the ring):
    /// read, and written into the ring if the folder can be written.
    fn read_per_being_files(&self) -> Result<Loaded, KeyError> {
        let mut loaded = Loaded::default();
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(loaded),
            Err(source) => return Err(KeyError::Io { path: self.dir.clone(), source }),
        };
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| KeyError::Io { path: self.dir.clone(), source })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some((stem, extension)) = name.split_once('.') else { continue };
            let record = match extension {
                "key" => Record::Key,
                "next" => Record::Next,
                _ => continue,
            };
            let Some(being) = BeingId::from_hex(stem) else { continue };
            files.push((record, being, entry.path()));
        }
        if files.is_empty() {
            return Ok(loaded);
        }
        files.sort_by_key(|(record, being, _)| (*being, *record == Record::Next));
        let mut lines = String::new();
        for (record, being, path) in &files {
            let keys = loaded.beings.entry(*being).or_default();
            match read_key_file(path) {
                Ok(key) => {
                    lines.push_str(&record_line(*record, being, Some(&key)));
                    apply(keys, *record, Some(key));
                }
                // Refused as it was before the ring: this being's key alone.
                Err(error) => keys.set_damaged(Some(error.to_string())),
            }
        }
        if loaded.beings.values().all(|keys| keys.damaged().is_none()) && self.write_ring_whole(&lines).is_ok() {
            for (_, _, path) in &files {
                let _ = fs::remove_file(path);
            }
            let _ = sync_dir(&self.dir);
            loaded.seen = stamp_of(&self.path());
            loaded.whole_lines_len = lines.len() as u64;
        }
        Ok(loaded)
    }

    /// Writes `lines` as the whole ring (a temporary file, synced, renamed).
    fn write_ring_whole(&self, lines: &str) -> std::io::Result<()> {
        crate::atomic_file::write_atomically(&self.path(), lines.as_bytes(), 0o600)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Record {
    Key,
    Next,
    Promote,
    Discard,
    Forget,
}

impl Record {
    fn word(self) -> &'static str {
        match self {
            Record::Key => "key",
            Record::Next => "next",
            Record::Promote => "promote",
            Record::Discard => "discard",
            Record::Forget => "forget",
        }
    }

    fn of_word(word: &str) -> Option<Record> {
        [Record::Key, Record::Next, Record::Promote, Record::Discard, Record::Forget]
            .into_iter()
            .find(|record| record.word() == word)
    }

    fn carries_key(self) -> bool {
        matches!(self, Record::Key | Record::Next)
    }
}

fn apply(keys: &mut BeingKeys, record: Record, key: Option<KeySeed>) {
    keys.set_damaged(None);
    match record {
        Record::Key => keys.current = key,
        Record::Next => keys.set_staged(key),
        Record::Promote => {
            if let Some(staged) = keys.staged().copied() {
                keys.current = Some(staged);
                keys.set_staged(None);
            }
        }
        Record::Discard => keys.set_staged(None),
        Record::Forget => *keys = BeingKeys::default(),
    }
}

/// Threads a ring's lines are checked and decoded on, at most: a ring of
/// a million beings is a million lines, each with its BLAKE3 to check.
const KEY_RING_READ_THREADS_MAX: usize = 4;

/// What one line of the ring says about its being.
enum LineSays {
    Record(Record, Option<KeySeed>),
    /// The line is damaged: the being's key is unreadable until a later
    /// line about it.
    Damaged(String),
}

/// Every being's keys as the ring's `text` leaves them, its lines read in
/// order; or the damage that makes the whole ring at `path` unreadable (a damaged
/// line that names no being).
///
/// The lines are checked and decoded in parallel, then sorted by being
/// (line order kept within each being, which is all a being's keys depend
/// on) and the map built from them in one pass: a million inserts in the
/// order the beings were planted cost a ring of a million beings seconds.
fn beings_of_lines(text: String, path: &Path) -> Result<BTreeMap<BeingId, BeingKeys>, KeyError> {
    let complete = text.ends_with('\n');
    let lines: Vec<(usize, &str)> = text.lines().enumerate().collect();
    let cut_short = |index: usize| index + 1 == lines.len() && !complete;
    let threads = std::thread::available_parallelism().map_or(1, usize::from).min(KEY_RING_READ_THREADS_MAX);
    // Each line read straight into what it says about its being: nothing
    // else of a million lines is held beside it.
    let said = crate::parallel::map_in_order(&lines, threads, |(index, line)| match parse_line(line) {
        Ok((record, being, key)) => Some(Ok((being, *index, LineSays::Record(record, key)))),
        // A crash while appending leaves at most the last line short.
        Err(_) if cut_short(*index) => None,
        Err(reason) => {
            let damage = format!("line {} is damaged ({reason})", index + 1);
            Some(match line.split(' ').nth(1).and_then(BeingId::from_hex) {
                Some(being) => Ok((being, *index, LineSays::Damaged(damage))),
                None => Err(KeyError::Corrupt { path: path.to_path_buf(), reason: damage }),
            })
        }
    });
    // The text (150 bytes a being) goes before the map is built.
    drop(lines);
    drop(text);
    let mut by_being = said.into_iter().flatten().collect::<Result<Vec<_>, KeyError>>()?;
    // The line's index breaks every tie: line order within each being.
    by_being.sort_unstable_by_key(|(being, index, _)| (*being, *index));
    let mut beings: Vec<(BeingId, BeingKeys)> = Vec::new();
    for (being, _, says) in by_being {
        if beings.last().is_none_or(|(last, _)| *last != being) {
            beings.push((being, BeingKeys::default()));
        }
        let keys = &mut beings.last_mut().expect("a being was just pushed").1;
        match says {
            LineSays::Record(record, key) => apply(keys, record, key),
            LineSays::Damaged(damage) => keys.set_damaged(Some(damage)),
        }
    }
    // Sorted, each being once: the map is built in one pass.
    Ok(beings.into_iter().collect())
}

fn line_check(content: &str) -> String {
    crate::fact::blake3_of(content.as_bytes()).to_hex()[..LINE_CHECK_HEX_DIGITS].to_string()
}

fn record_line(record: Record, being: &BeingId, key: Option<&KeySeed>) -> String {
    let seed = key.map_or_else(|| "-".to_string(), hex::encode);
    let content = format!("{} {} {seed}", record.word(), being.to_hex());
    format!("{content} {}\n", line_check(&content))
}

fn parse_line(line: &str) -> Result<(Record, BeingId, Option<KeySeed>), &'static str> {
    let (content, check) = line.rsplit_once(' ').ok_or("no check")?;
    if blake3::hash(content.as_bytes()).to_hex().get(..LINE_CHECK_HEX_DIGITS) != Some(check) {
        return Err("its check does not match");
    }
    let mut words = content.split(' ');
    let record = words.next().and_then(Record::of_word).ok_or("unknown record")?;
    let being = words.next().and_then(BeingId::from_hex).ok_or("not a being id")?;
    let seed = words.next().ok_or("no key field")?;
    if words.next().is_some() {
        return Err("trailing words");
    }
    let key = match (record.carries_key(), seed) {
        (false, "-") => None,
        (true, seed) => {
            if seed.len() != 64 {
                return Err(match hex::decode(seed) {
                    Ok(_) => "the key is not 32 bytes",
                    Err(_) => "the key is not hex",
                });
            }
            let mut bytes = [0u8; 32];
            hex::decode_to_slice(seed, &mut bytes).map_err(|_| "the key is not hex")?;
            Some(bytes)
        }
        (false, _) => return Err("a key where none belongs"),
    };
    Ok((record, being, key))
}

/// Creates the folder (0700) and opens the ring for appending (0600), cut
/// to its first `whole_lines_len` bytes (a line a crash cut short goes).
fn open_for_appending(dir: &Path, path: &Path, whole_lines_len: u64) -> std::io::Result<fs::File> {
    fs::create_dir_all(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    let created = !path.exists();
    let file = fs::OpenOptions::new().append(true).create(true).mode(0o600).open(path)?;
    if file.metadata()?.len() > whole_lines_len {
        file.set_len(whole_lines_len)?;
        file.sync_all()?;
    }
    if created {
        fs::File::open(dir)?.sync_all()?;
    }
    Ok(file)
}

fn refuse_if_exposed(path: &Path) -> Result<(), KeyError> {
    let io = |source| KeyError::Io { path: path.to_path_buf(), source };
    let mode = fs::metadata(path).map_err(io)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::Permissions { path: path.to_path_buf(), mode });
    }
    Ok(())
}

/// A key file of the one-file-per-being layout.
fn read_key_file(path: &Path) -> Result<KeySeed, KeyError> {
    refuse_if_exposed(path)?;
    let text = fs::read_to_string(path).map_err(|source| KeyError::Io { path: path.to_path_buf(), source })?;
    let corrupt = |reason: &str| KeyError::Corrupt { path: path.to_path_buf(), reason: reason.to_string() };
    let bytes = hex::decode(text.trim()).map_err(|_| corrupt("not hex"))?;
    bytes.as_slice().try_into().map_err(|_| corrupt("not 32 bytes"))
}

fn sync_dir(dir: &Path) -> Result<(), KeyError> {
    fs::File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(|source| KeyError::Io { path: dir.to_path_buf(), source })
}

/// Fills `out` from the operating system's random source (key seeds, nonces,
/// tokens: the only unseeded randomness in the system, none of it in a moment).
pub fn random_bytes(out: &mut [u8]) -> Result<(), KeyError> {
    getrandom::getrandom(out).map_err(|error| KeyError::Random { reason: error.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> SigningKey {
        SigningKey::from_bytes(&[byte; 32])
    }

    fn ring_in(dir: &Path) -> KeyRing {
        KeyRing::open(&dir.join("keys")).expect("ring")
    }

    #[test]
    fn keys_rotations_and_forgetting_read_back_from_one_file() {
        let dir = tempfile::tempdir().expect("dir");
        let (ada, bo) = (BeingId([1; 32]), BeingId([2; 32]));
        {
            let ring = ring_in(dir.path());
            assert!(!dir.path().join("keys").exists(), "opening writes nothing");
            ring.store(&ada, &key(1)).expect("store");
            ring.store(&bo, &key(2)).expect("store");
            ring.stage_next(&ada, &key(3)).expect("stage");
            ring.promote_next(&ada).expect("promote");
            ring.stage_next(&bo, &key(4)).expect("stage");
            ring.discard_next(&bo).expect("discard");
        }
        let ring = ring_in(dir.path());
        assert_eq!(ring.load(&ada).expect("ada").to_bytes(), [3; 32]);
        assert_eq!(ring.load(&bo).expect("bo").to_bytes(), [2; 32]);
        assert!(ring.staged_next(&bo).expect("reads").is_none());
        ring.forget(&bo).expect("forget");
        assert!(matches!(ring_in(dir.path()).load(&bo), Err(KeyError::Missing { .. })));
        let mut names: Vec<String> = fs::read_dir(dir.path().join("keys"))
            .expect("dir")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [KEY_RING_FILE, KEY_RING_LOCK_FILE], "one file of keys, and the lock appends take");
        let mode = fs::metadata(ring.path()).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_short_last_line_is_ignored_and_a_damaged_line_names_only_its_being() {
        let dir = tempfile::tempdir().expect("dir");
        let (ada, bo) = (BeingId([1; 32]), BeingId([2; 32]));
        let ring = ring_in(dir.path());
        ring.store(&ada, &key(1)).expect("store");
        ring.store(&bo, &key(9)).expect("store");
        let path = ring.path();
        let mut text = fs::read_to_string(&path).expect("read");
        // A crash while appending a third line: ignored, and cut off before
        // the next line is appended.
        let whole = text.clone();
        text.push_str("next 0101");
        fs::write(&path, &text).expect("write");
        {
            let ring = ring_in(dir.path());
            assert_eq!(ring.load(&ada).expect("ada").to_bytes(), [1; 32]);
            ring.stage_next(&ada, &key(4)).expect("stage");
            assert!(fs::read_to_string(&path).expect("read").starts_with(&whole));
            assert_eq!(ring_in(dir.path()).staged_next(&ada).expect("reads").map(|key| key.to_bytes()), Some([4; 32]));
            ring.discard_next(&ada).expect("discard");
            text = fs::read_to_string(&path).expect("read");
        }
        // A flipped digit in bo's key.
        let damaged = text.replacen(&hex::encode([9u8; 32]), &format!("3{}", &hex::encode([9u8; 32])[1..]), 1);
        fs::write(&path, damaged).expect("write");
        let ring = ring_in(dir.path());
        assert_eq!(ring.load(&ada).expect("ada").to_bytes(), [1; 32]);
        match ring.load(&bo) {
            Err(KeyError::Corrupt { reason, .. }) => assert!(reason.contains("line 2"), "{reason}"),
            other => panic!("{:?}", other.map(|key| key.to_bytes())),
        }
    }

    /// The ring's lines applied one at a time, in order: what
    /// [`beings_of_lines`] must give, however its threads split the lines.
    fn beings_line_by_line(text: &str) -> Result<BTreeMap<BeingId, BeingKeys>, KeyError> {
        let mut beings: BTreeMap<BeingId, BeingKeys> = BTreeMap::new();
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            match parse_line(line) {
                Ok((record, being, key)) => apply(beings.entry(being).or_default(), record, key),
                Err(_) if index + 1 == lines.len() && !text.ends_with('\n') => {}
                Err(reason) => {
                    let damage = format!("line {} is damaged ({reason})", index + 1);
                    match line.split(' ').nth(1).and_then(BeingId::from_hex) {
                        Some(being) => beings.entry(being).or_default().set_damaged(Some(damage)),
                        None => return Err(KeyError::Corrupt { path: PathBuf::from("ring"), reason: damage }),
                    }
                }
            }
        }
        Ok(beings)
    }

    type KeysSeen = BTreeMap<BeingId, (Option<KeySeed>, Option<KeySeed>, Option<String>)>;

    fn seen(beings: BTreeMap<BeingId, BeingKeys>) -> KeysSeen {
        let of = |keys: BeingKeys| (keys.current, keys.staged().copied(), keys.damaged().cloned());
        beings.into_iter().map(|(being, keys)| (being, of(keys))).collect()
    }

    #[test]
    fn a_ring_read_in_parallel_is_its_lines_applied_one_at_a_time() {
        // Thousands of lines about a few beings, so that every being's
        // records land in many of the threads' chunks, some lines damaged.
        let beings: Vec<BeingId> = (1..=7u8).map(|byte| BeingId([byte; 32])).collect();
        let mut state: u64 = 0x5eed;
        let mut next = |below: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % below
        };
        let records = [Record::Key, Record::Next, Record::Promote, Record::Discard, Record::Forget];
        let mut text = String::new();
        for line in 0..5_000u64 {
            let being = beings[next(beings.len() as u64) as usize];
            let record = records[next(records.len() as u64) as usize];
            let key = record.carries_key().then(|| [next(256) as u8; 32]);
            let mut written = record_line(record, &being, key.as_ref());
            if next(50) == 0 {
                // A flipped digit of the being's id or of the check: damage.
                let at = if line % 2 == 0 { written.len() - 3 } else { written.find(' ').expect("words") + 5 };
                let flipped = if &written[at..at + 1] == "0" { "1" } else { "0" };
                written.replace_range(at..at + 1, flipped);
            }
            text.push_str(&written);
        }
        let check = |text: &str| {
            let expected = beings_line_by_line(text).map(seen).map_err(|error| error.to_string());
            let read = beings_of_lines(text.to_string(), Path::new("ring")).map(seen);
            assert_eq!(read.map_err(|error| error.to_string()), expected);
            expected
        };
        let whole = check(&text).expect("every damaged line names a being");
        assert!(whole.values().any(|(_, _, damaged)| damaged.is_some()), "some damage is still the last word");
        assert!(whole.values().any(|(current, _, _)| current.is_some()));
        // A last line cut short, then a damaged line that names no being.
        assert_eq!(check(&format!("{text}next 0101")), Ok(whole));
        let unreadable =
            format!("{text}key zz {}\n{}", hex::encode([1u8; 32]), record_line(Record::Forget, &beings[0], None));
        let damaged = "key file ring is corrupt: line 5001 is damaged (its check does not match)";
        assert_eq!(check(&unreadable), Err(damaged.to_string()));
    }

    #[test]
    fn a_ring_others_can_read_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let ring = ring_in(dir.path());
        ring.store(&BeingId([1; 32]), &key(1)).expect("store");
        fs::set_permissions(ring.path(), fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(matches!(ring_in(dir.path()).load(&BeingId([1; 32])), Err(KeyError::Permissions { .. })));
    }

    #[test]
    fn a_folder_of_key_files_is_migrated_into_the_ring_once() {
        let dir = tempfile::tempdir().expect("dir");
        let keys = dir.path().join("keys");
        fs::create_dir_all(&keys).expect("dir");
        let (ada, bo) = (BeingId([1; 32]), BeingId([2; 32]));
        for (being, extension, byte) in [(ada, "key", 1u8), (bo, "key", 2), (bo, "next", 5)] {
            let path = keys.join(format!("{}.{extension}", being.to_hex()));
            fs::write(&path, format!("{}\n", hex::encode([byte; 32]))).expect("write");
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
        }
        let ring = ring_in(dir.path());
        assert_eq!(ring.load(&ada).expect("ada").to_bytes(), [1; 32]);
        assert_eq!(ring.staged_next(&bo).expect("reads").map(|key| key.to_bytes()), Some([5; 32]));
        let names: Vec<String> = fs::read_dir(&keys)
            .expect("dir")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into())
            .collect();
        assert_eq!(names, vec![KEY_RING_FILE.to_string()]);
        let again = ring_in(dir.path());
        assert_eq!(again.load(&bo).expect("bo").to_bytes(), [2; 32]);
        assert_eq!(again.staged_next(&bo).expect("reads").map(|key| key.to_bytes()), Some([5; 32]));
    }
}
