//! A mirror: another land's facts, copied in that land's order into a land
//! folder of their own (`LAND/mirrors/<land id>/`), checked here before a
//! byte is kept. Nothing in a mirror is trusted because of where it came
//! from: every fact is decoded, its foundation body read, its signature
//! verified (strictly, batched as `seed verify` batches) against the key its
//! own reel made current, and its link to the fact before it checked, and
//! then the log store's committer applies the chain rules once more and keeps
//! a fork (a different fact at a seq it holds) as a fork proof.
//!
//! A mirror folder is a land folder: `land.toml` (written once the land's
//! root genesis is durable, naming the land's root and operator and, in
//! `mirror_of`, the URL it is followed at), `log/` and `witness`. It has no
//! key ring, so it can seal nothing, and `Land::open` refuses to open it to
//! write; `seed verify`, `seed replay` and the readers open it as they open
//! any land. How far the land was followed is `mirror-cursor` beside them
//! (the number of the land's facts taken, and the id of the last), written
//! after the facts it counts are durable: a crash between the two only
//! makes the next pull answer duplicates.

use crate::atomic_file::{write_atomically, READABLE_FILE_MODE};
use crate::fact::body::{check_known_body, KIND_GENESIS};
use crate::fact::{BeingId, Fact, FactId, PublicKeyBytes};
use crate::land::{read_meta, write_meta, LandError, LandMeta, LAND_FORMAT_VERSION, LAND_META_FILE};
use crate::limits::Limits;
use crate::store::chain::next_head;
use crate::store::{Head, LogOpenError, LogStore, Store, StoreError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The folder of a land that holds its mirrors, one folder per land id.
pub const MIRRORS_DIR: &str = "mirrors";
/// How far a mirror has followed its land.
pub const MIRROR_CURSOR_FILE: &str = "mirror-cursor";
const MIRROR_LOG_DIR: &str = "log";
const MIRROR_WITNESS_FILE: &str = "witness";

/// Where the mirror of `land` lives in the land folder `land_dir`.
pub fn mirror_dir(land_dir: &Path, land: &BeingId) -> PathBuf {
    land_dir.join(MIRRORS_DIR).join(land.to_hex())
}

/// Where the mirror of the one being `being` (of another land) lives in
/// the land folder `land_dir`.
pub fn being_mirror_dir(land_dir: &Path, being: &BeingId) -> PathBuf {
    land_dir.join(MIRRORS_DIR).join(BEING_MIRRORS_DIR).join(being.to_hex())
}

/// The folder of `MIRRORS_DIR` that holds the mirrors of single beings.
pub const BEING_MIRRORS_DIR: &str = "beings";

/// The mirrors a land folder holds (folders whose name is a land id), in id order.
pub fn mirrors_of(land_dir: &Path) -> Vec<BeingId> {
    let Ok(entries) = std::fs::read_dir(land_dir.join(MIRRORS_DIR)) else { return Vec::new() };
    let mut lands: Vec<BeingId> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str().and_then(BeingId::from_hex))
        .collect();
    lands.sort();
    lands
}

#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    #[error("the mirror at {dir} cannot be opened: {reason}")]
    Open { dir: PathBuf, reason: String },
    #[error("the mirror at {dir} is in use by another process")]
    Locked { dir: PathBuf },
    #[error("{dir} is the mirror of land {found}, not of {expected}")]
    OtherLand { dir: PathBuf, expected: BeingId, found: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Land(#[from] LandError),
    #[error("the land sent facts from its land seq {given}, but the mirror has taken {taken} (it must send the next)")]
    NotNext { given: u64, taken: u64 },
    #[error("the land's fact at land seq {land_seq} does not decode: {reason}")]
    Undecodable { land_seq: u64, reason: String },
    #[error("the first fact is not the genesis of {expected} (it is {being}'s seq {seq})")]
    NotTheRoot { expected: BeingId, being: BeingId, seq: u64 },
    #[error("the fact at seq {seq} is {being}'s, not a fact of the followed being {expected}")]
    OtherBeing { expected: BeingId, being: BeingId, seq: u64 },
    #[error("the land's fact at land seq {land_seq} ({being} seq {seq}) has a body that does not read: {reason}")]
    Body { land_seq: u64, being: BeingId, seq: u64, reason: String },
    #[error("the land's fact at land seq {land_seq} ({being} seq {seq}): {reason}")]
    Signature { land_seq: u64, being: BeingId, seq: u64, reason: &'static str },
    #[error("the land's fact at land seq {land_seq} does not continue its reel: {source}")]
    Link { land_seq: u64, source: StoreError },
    #[error("the mirror's store: {0}")]
    Store(#[from] StoreError),
}

/// Two facts at one seq of one reel, both signed by the key the reel had
/// then: the one the mirror took first (`kept`) and the one the land sent
/// later (`rival`). Both are kept in the mirror's store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirroredFork {
    pub being: BeingId,
    pub seq: u64,
    pub kept: FactId,
    pub rival: FactId,
    /// The kept fact's envelope, to show the land that signed both.
    pub kept_envelope: Vec<u8>,
}

/// What one batch did to the mirror.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Taken {
    /// Facts new to the mirror, now durable.
    pub appended: u64,
    /// Facts the mirror held already, byte for byte.
    pub duplicates: u64,
    /// Facts of a reel the mirror holds a fork of (not kept).
    pub skipped: u64,
    pub forks: Vec<MirroredFork>,
}

/// How far a mirror has followed: the land's facts taken (the next land
/// seq to ask for) and the id of the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MirrorCursor {
    pub taken: u64,
    pub last: Option<FactId>,
}

pub struct Mirror {
    dir: PathBuf,
    /// The mirrored land's root, or the one being a being's mirror holds.
    land: BeingId,
    /// For a being's mirror: the land the being lives on.
    being_of: Option<BeingId>,
    operator: BeingId,
    url: String,
    store: LogStore,
    cursor: MirrorCursor,
    limits: Limits,
    threads: usize,
    /// The beings the mirror holds a fork proof of (their reels take nothing more).
    forked: std::collections::BTreeSet<BeingId>,
}

/// What is left to do with a fact whose body and place were checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FactCheck {
    /// Its signature, by this key; then the store appends it (or keeps it
    /// as a fork proof).
    SignedBy(PublicKeyBytes),
    /// The mirror holds this very fact (read again after a rewind).
    Held,
    /// Its reel holds a fork: nothing after it is kept.
    AfterFork,
}

/// A fact's signed bytes, its signature and the key that must have made it.
type SignedParts<'a> = (&'a [u8], &'a [u8; 64], PublicKeyBytes);

impl Mirror {
    /// Opens (creating it if need be) the mirror of `land` in `dir`, as the
    /// one process that writes it.
    pub fn open(
        dir: &Path,
        land: BeingId,
        operator: BeingId,
        url: &str,
        limits: &Limits,
    ) -> Result<Mirror, MirrorError> {
        Mirror::open_for(dir, land, operator, None, url, limits)
    }

    /// Opens (creating it if need be) the mirror of the one being `being`
    /// of the land `land`: its reel alone, in seq order (its `land.toml`
    /// names the being as its root).
    pub fn open_being(
        dir: &Path,
        land: BeingId,
        being: BeingId,
        url: &str,
        limits: &Limits,
    ) -> Result<Mirror, MirrorError> {
        Mirror::open_for(dir, being, being, Some(land), url, limits)
    }

    fn open_for(
        dir: &Path,
        land: BeingId,
        operator: BeingId,
        being_of: Option<BeingId>,
        url: &str,
        limits: &Limits,
    ) -> Result<Mirror, MirrorError> {
        if dir.join(LAND_META_FILE).is_file() {
            let meta = read_meta(dir)?;
            if meta.root != land.to_hex() || meta.mirror_of.is_none() {
                return Err(MirrorError::OtherLand { dir: dir.to_path_buf(), expected: land, found: meta.root });
            }
        }
        let store = LogStore::open(&dir.join(MIRROR_LOG_DIR), Some(&dir.join(MIRROR_WITNESS_FILE)), limits).map_err(
            |error| match error {
                LogOpenError::Locked => MirrorError::Locked { dir: dir.to_path_buf() },
                other => MirrorError::Open { dir: dir.to_path_buf(), reason: other.to_string() },
            },
        )?;
        let cursor = read_cursor(dir)?;
        let forked = store.fork_proofs(None)?.into_iter().map(|proof| proof.being).collect();
        let threads = std::thread::available_parallelism().map_or(1, |count| count.get());
        Ok(Mirror {
            dir: dir.to_path_buf(),
            land,
            being_of,
            operator,
            url: url.to_string(),
            store,
            cursor,
            limits: limits.clone(),
            threads,
            forked,
        })
    }

    pub fn cursor(&self) -> MirrorCursor {
        self.cursor
    }

    pub fn store(&self) -> &dyn Store {
        &self.store
    }

    /// The id of the fact the mirror holds at `land_seq` (the land's land
    /// seq while no fork was met: the mirror keeps the land's order).
    pub fn id_at(&self, land_seq: u64) -> Result<Option<FactId>, MirrorError> {
        let Some(entry) = self.store.land_log(land_seq, land_seq + 1)?.into_iter().next() else { return Ok(None) };
        Ok(self.store.fact_at(&entry)?.map(|stored| stored.fact.id()))
    }

    /// Moves the cursor back to `taken` facts (a land that no longer holds
    /// what the mirror took is read again from where both agree).
    pub fn rewind_to(&mut self, taken: u64) -> Result<(), MirrorError> {
        let taken = taken.min(self.cursor.taken);
        let last = match taken {
            0 => None,
            _ => self.id_at(taken - 1)?,
        };
        self.write_cursor(MirrorCursor { taken, last })
    }

    /// Checks the land's facts from its land seq `from` (each an envelope,
    /// in the land's order) and keeps them: nothing of a batch is written
    /// unless every fact decodes, reads, is signed by its reel's key and
    /// continues its reel (or is one the mirror holds, or a fork of it).
    pub fn take(&mut self, from: u64, envelopes: &[Vec<u8>]) -> Result<Taken, MirrorError> {
        if from != self.cursor.taken {
            return Err(MirrorError::NotNext { given: from, taken: self.cursor.taken });
        }
        let decoded = crate::parallel::map_in_order(envelopes, self.threads, |bytes| Fact::decode_envelope(bytes));
        let mut facts = Vec::with_capacity(decoded.len());
        for (offset, fact) in decoded.into_iter().enumerate() {
            let land_seq = from + offset as u64;
            facts.push(fact.map_err(|error| MirrorError::Undecodable { land_seq, reason: error.to_string() })?);
        }
        if let (0, Some(first)) = (from, facts.first()) {
            if first.header.being != self.land || first.kind() != KIND_GENESIS {
                return Err(MirrorError::NotTheRoot {
                    expected: self.land,
                    being: first.header.being,
                    seq: first.header.seq,
                });
            }
        }
        if let (Some(_), Some(other)) = (self.being_of, facts.iter().find(|fact| fact.header.being != self.land)) {
            return Err(MirrorError::OtherBeing {
                expected: self.land,
                being: other.header.being,
                seq: other.header.seq,
            });
        }
        let checks = self.check_links_and_bodies(from, &facts)?;
        let mut taken = Taken::default();
        let mut kept: Vec<(u64, Fact, PublicKeyBytes)> = Vec::with_capacity(facts.len());
        for ((land_seq, fact), check) in (from..).zip(&facts).zip(&checks) {
            match check {
                FactCheck::SignedBy(key) => kept.push((land_seq, fact.clone(), *key)),
                FactCheck::Held => taken.duplicates += 1,
                FactCheck::AfterFork => taken.skipped += 1,
            }
        }
        check_signatures(&kept, self.threads)?;
        let tickets: Vec<_> = kept.into_iter().map(|(_, fact, _)| self.store.submit(fact)).collect();
        for ticket in tickets {
            match ticket.wait() {
                Ok(appended) if appended.duplicate => taken.duplicates += 1,
                Ok(_) => taken.appended += 1,
                Err(StoreError::Fork { being, seq, kept, rival }) => {
                    self.forked.insert(being);
                    let kept_envelope = self
                        .store
                        .reel(&being, seq, seq + 1)?
                        .first()
                        .map(|stored| stored.fact.encode_envelope())
                        .unwrap_or_default();
                    taken.forks.push(MirroredFork { being, seq, kept, rival, kept_envelope });
                }
                Err(StoreError::BeingForked { .. }) => taken.skipped += 1,
                Err(other) => return Err(other.into()),
            }
        }
        if self.cursor.taken == 0 && !facts.is_empty() {
            self.write_meta()?;
        }
        let last = facts.last().map(Fact::id).or(self.cursor.last);
        self.write_cursor(MirrorCursor { taken: from + facts.len() as u64, last })?;
        Ok(taken)
    }

    /// Each fact's body read by the foundation's rules and within the
    /// land's limit, and its place on its reel: the next seq with a link to
    /// the fact before it and no earlier time, or a seq the mirror holds (the
    /// very fact, or a fork for the store to keep as a proof). Says for each
    /// what is left to do (`FactCheck`).
    fn check_links_and_bodies(&self, from: u64, facts: &[Fact]) -> Result<Vec<FactCheck>, MirrorError> {
        let mut heads: BTreeMap<BeingId, Option<Head>> = BTreeMap::new();
        let mut forked: std::collections::BTreeSet<BeingId> = std::collections::BTreeSet::new();
        let mut keys = Vec::with_capacity(facts.len());
        for (offset, fact) in facts.iter().enumerate() {
            let land_seq = from + offset as u64;
            let (being, seq) = (fact.header.being, fact.header.seq);
            let body_problem = |reason: String| MirrorError::Body { land_seq, being, seq, reason };
            if fact.body().len() > self.limits.fact_body_bytes_max {
                return Err(body_problem(format!(
                    "{} bytes, over the limit of {} (fact_body_bytes_max)",
                    fact.body().len(),
                    self.limits.fact_body_bytes_max
                )));
            }
            check_known_body(fact.kind(), fact.body()).map_err(|error| body_problem(error.to_string()))?;
            if forked.contains(&being) || self.forked.contains(&being) {
                forked.insert(being);
                keys.push(FactCheck::AfterFork);
                continue;
            }
            let head = match heads.get(&being) {
                Some(head) => *head,
                None => self.store.head(&being)?,
            };
            let link = |source: StoreError| MirrorError::Link { land_seq, source };
            let key = match head {
                // A seq the mirror holds: the same fact, or a fork (checked
                // against the key the reel had there, then kept as a proof).
                Some(head) if seq <= head.seq => {
                    let held = self.store.reel(&being, seq, seq + 1)?.first().map(|stored| stored.fact.id());
                    if held == Some(fact.id()) {
                        // The very fact the mirror checked when it took it.
                        keys.push(FactCheck::Held);
                    } else {
                        forked.insert(being);
                        keys.push(FactCheck::SignedBy(self.key_at(&being, seq)?));
                    }
                    continue;
                }
                None => {
                    if seq != 0 || fact.kind() != KIND_GENESIS {
                        return Err(link(StoreError::NotGenesis { being }));
                    }
                    next_head(None, fact).map_err(|error| body_problem(error.to_string()))?.public_key
                }
                Some(head) => {
                    if head.ended {
                        return Err(link(StoreError::Ended { being }));
                    }
                    if seq != head.seq + 1 {
                        return Err(link(StoreError::Gap { being, expected: head.seq + 1, got: seq }));
                    }
                    if fact.header.prev != head.id {
                        return Err(link(StoreError::PrevMismatch { being, seq }));
                    }
                    if fact.header.stored_time_ms < head.stored_time_ms {
                        return Err(link(StoreError::TimeWentBackwards {
                            being,
                            seq,
                            previous_ms: head.stored_time_ms,
                            stored_ms: fact.header.stored_time_ms,
                        }));
                    }
                    head.public_key
                }
            };
            let next = next_head(head.as_ref(), fact).map_err(|error| body_problem(error.to_string()))?;
            heads.insert(being, Some(next));
            keys.push(FactCheck::SignedBy(key));
        }
        Ok(keys)
    }

    /// The key that had to sign `being`'s fact at `seq`, as the mirror's copy
    /// of its reel says.
    fn key_at(&self, being: &BeingId, seq: u64) -> Result<PublicKeyBytes, MirrorError> {
        Ok(key_in_force(&self.store, being, seq)?.ok_or(StoreError::NotGenesis { being: *being })?)
    }

    fn write_meta(&self) -> Result<(), MirrorError> {
        let meta = LandMeta {
            format: LAND_FORMAT_VERSION,
            root: self.land.to_hex(),
            operator: self.operator.to_hex(),
            // A mirror writes no snapshots: a replay of it folds from the start.
            snapshot_every_facts: Some(0),
            store: None,
            mirror_of: Some(self.url.clone()),
            mirror_being_of: self.being_of.map(|land| land.to_hex()),
        };
        Ok(write_meta(&self.dir, &meta)?)
    }

    fn write_cursor(&mut self, cursor: MirrorCursor) -> Result<(), MirrorError> {
        let path = self.dir.join(MIRROR_CURSOR_FILE);
        let text = match cursor.last {
            Some(last) => format!("{} {}\n", cursor.taken, last.to_hex()),
            None => format!("{}\n", cursor.taken),
        };
        write_atomically(&path, text.as_bytes(), READABLE_FILE_MODE)
            .map_err(|source| MirrorError::Io { path, source })?;
        self.cursor = cursor;
        Ok(())
    }

    /// Closes the store (its last appends are durable before this returns).
    pub fn close(self) {
        drop(self.store);
    }
}

/// Every signature of `kept` (each fact with its land seq and the key that
/// must have signed it), checked in chunks on `threads` threads; the first
/// that fails is named.
fn check_signatures(kept: &[(u64, Fact, PublicKeyBytes)], threads: usize) -> Result<(), MirrorError> {
    let signed: Vec<SignedParts<'_>> =
        kept.iter().map(|(_, fact, key)| (fact.header_bytes(), fact.signature(), *key)).collect();
    let chunks: Vec<&[SignedParts<'_>]> = signed.chunks(crate::parallel::PARALLEL_CHUNK_ITEMS).collect();
    let failed = crate::parallel::map_in_order(&chunks, threads, |chunk| crate::check::first_bad_signature(chunk));
    let first_bad = failed.iter().enumerate().find_map(|(chunk, bad)| {
        bad.map(|(index, reason)| (chunk * crate::parallel::PARALLEL_CHUNK_ITEMS + index, reason))
    });
    match first_bad {
        None => Ok(()),
        Some((index, reason)) => {
            let (land_seq, fact, _) = &kept[index];
            Err(MirrorError::Signature { land_seq: *land_seq, being: fact.header.being, seq: fact.header.seq, reason })
        }
    }
}

/// How far the mirror in `dir` has followed (nothing: not at all).
pub fn read_cursor(dir: &Path) -> Result<MirrorCursor, MirrorError> {
    let path = dir.join(MIRROR_CURSOR_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(MirrorCursor::default()),
        Err(source) => return Err(MirrorError::Io { path, source }),
    };
    let unreadable =
        || MirrorError::Open { dir: dir.to_path_buf(), reason: format!("{MIRROR_CURSOR_FILE} does not read") };
    let mut words = text.split_whitespace();
    let taken = words.next().and_then(|word| word.parse().ok()).ok_or_else(unreadable)?;
    let last = match words.next() {
        Some(word) => Some(FactId::from_hex(word).ok_or_else(unreadable)?),
        None => None,
    };
    Ok(MirrorCursor { taken, last })
}

/// What a land keeps when another land shows it a fact of one of its own
/// beings that it does not hold at that seq: the fact is a fork only if
/// the key the being had there signed it (`key_history_at`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportedFork {
    pub being: BeingId,
    pub seq: u64,
    pub held: FactId,
    pub reported: FactId,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ForkReportError {
    #[error("the reported fact does not decode: {reason}")]
    Undecodable { reason: String },
    #[error("{being} is not a being of this land")]
    NotHere { being: BeingId },
    #[error("this land holds no fact at {being}'s seq {seq}: the report shows no fork")]
    NotHeld { being: BeingId, seq: u64 },
    #[error("this land holds that very fact at {being}'s seq {seq}: the report shows no fork")]
    Same { being: BeingId, seq: u64 },
    #[error("the reported fact is not signed by the key {being} had at seq {seq}")]
    NotSigned { being: BeingId, seq: u64 },
    #[error("this land's store: {reason}")]
    Store { reason: String },
}

/// Checks that `envelope` is a fork of a reel `store` holds: a fact at a
/// seq the store holds, different from the one it holds, signed by the
/// key the reel had at that seq. Nothing is written.
pub fn check_reported_fork(store: &dyn Store, envelope: &[u8]) -> Result<ReportedFork, ForkReportError> {
    let failed = |error: StoreError| ForkReportError::Store { reason: error.to_string() };
    let fact =
        Fact::decode_envelope(envelope).map_err(|error| ForkReportError::Undecodable { reason: error.to_string() })?;
    let (being, seq) = (fact.header.being, fact.header.seq);
    if store.head(&being).map_err(failed)?.is_none() {
        return Err(ForkReportError::NotHere { being });
    }
    let reel = store.reel(&being, seq, seq + 1).map_err(failed)?;
    let Some(held) = reel.iter().find(|stored| stored.fact.header.seq == seq) else {
        return Err(ForkReportError::NotHeld { being, seq });
    };
    if held.fact.id() == fact.id() {
        return Err(ForkReportError::Same { being, seq });
    }
    let key = match key_in_force(store, &being, seq).map_err(failed)? {
        Some(key) => key,
        None => return Err(ForkReportError::NotSigned { being, seq }),
    };
    let signed = [(fact.header_bytes(), fact.signature(), key)];
    if crate::check::first_bad_signature(&signed).is_some() {
        return Err(ForkReportError::NotSigned { being, seq });
    }
    Ok(ReportedFork { being, seq, held: held.fact.id(), reported: fact.id() })
}

/// The key `being`'s fact at `seq` had to be signed by: its genesis key at
/// seq 0, else the key its reel made current by the fact before (`None`:
/// the store holds no such reel, or its facts do not read).
fn key_in_force(store: &dyn Store, being: &BeingId, seq: u64) -> Result<Option<PublicKeyBytes>, StoreError> {
    let reel = store.reel(being, 0, seq.max(1))?;
    let mut head: Option<Head> = None;
    for stored in &reel {
        match next_head(head.as_ref(), &stored.fact) {
            Ok(next) => head = Some(next),
            Err(_) => return Ok(None),
        }
    }
    Ok(head.map(|head| head.public_key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::LogicalClock;
    use crate::fact::body::{NoteBody, KIND_NOTE};
    use crate::land::Land;
    use std::sync::Arc;

    fn planted(dir: &Path) -> Land {
        Land::plant(dir, Arc::new(LogicalClock::starting_at(1_000)), Limits::default()).expect("plant").0
    }

    fn note(land: &Land, being: &BeingId, text: &str) -> FactId {
        land.seal_body(being, KIND_NOTE, &NoteBody { text: text.into() }).expect("note").id
    }

    fn envelopes(land: &Land) -> Vec<Vec<u8>> {
        let len = land.store().land_len().expect("len");
        land.store().land_log_with_envelopes(0, len).expect("log").into_iter().map(|(_, envelope)| envelope).collect()
    }

    fn copy_folder(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for entry in std::fs::read_dir(from).expect("read dir").map(Result::unwrap) {
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy_folder(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).expect("copy");
            }
        }
    }

    fn mirror_of(land: &Land, dir: &Path) -> Mirror {
        Mirror::open(dir, land.root(), land.operator(), "http://127.0.0.1:1", &Limits::default()).expect("mirror")
    }

    /// A land of a few notes, and its facts as envelopes.
    fn land_with_notes(dir: &Path) -> (Land, Vec<Vec<u8>>) {
        let land = planted(dir);
        for text in ["one", "two", "three"] {
            note(&land, &land.root(), text);
            note(&land, &land.operator(), text);
        }
        let envelopes = envelopes(&land);
        (land, envelopes)
    }

    #[test]
    fn a_mirror_takes_a_land_in_its_order_batch_by_batch_and_opens_as_a_read_only_land() {
        let folder = tempfile::tempdir().unwrap();
        let (land, envelopes) = land_with_notes(&folder.path().join("land"));
        let dir = folder.path().join("mirror");
        let mut mirror = mirror_of(&land, &dir);
        let mut from = 0;
        for batch in envelopes.chunks(3) {
            let taken = mirror.take(from, batch).expect("take");
            assert_eq!(taken, Taken { appended: batch.len() as u64, ..Taken::default() });
            from += batch.len() as u64;
        }
        assert_eq!(mirror.cursor().taken, envelopes.len() as u64);
        assert!(matches!(mirror.take(0, &envelopes[..1]), Err(MirrorError::NotNext { given: 0, .. })));
        mirror.rewind_to(2).expect("rewind");
        let again = mirror.take(2, &envelopes[2..]).expect("take again");
        assert_eq!(again.duplicates, envelopes.len() as u64 - 2);
        for land_seq in 0..envelopes.len() as u64 {
            let original = land.store().land_log(land_seq, land_seq + 1).unwrap()[0];
            let id = land.store().fact_at(&original).unwrap().unwrap().fact.id();
            assert_eq!(mirror.id_at(land_seq).unwrap(), Some(id), "land seq {land_seq}");
        }
        mirror.close();
        assert_eq!(read_cursor(&dir).unwrap().taken, envelopes.len() as u64);
        let opened = Land::open_read_only(&dir).expect("a mirror opens as a land to read");
        assert_eq!(opened.root(), land.root());
        assert!(matches!(Land::open(&dir), Err(LandError::Mirror { .. })), "nothing can be sealed in a mirror");
    }

    /// What taking the land's facts, changed by `change`, from land seq 0 is refused with.
    fn check_refused(change: impl Fn(&mut Vec<Vec<u8>>), expected: &str) {
        let folder = tempfile::tempdir().unwrap();
        let (land, mut envelopes) = land_with_notes(&folder.path().join("land"));
        change(&mut envelopes);
        let mut mirror = mirror_of(&land, &folder.path().join("mirror"));
        let refused = mirror.take(0, &envelopes).expect_err("refused").to_string();
        assert!(refused.contains(expected), "{refused:?} should say {expected:?}");
        assert_eq!(mirror.cursor(), MirrorCursor::default());
        assert_eq!(mirror.store().land_len().unwrap(), 0, "nothing of a refused batch is kept");
    }

    #[test]
    fn a_batch_with_one_bad_fact_is_refused_whole_naming_the_fact() {
        let flip_signature = |envelopes: &mut Vec<Vec<u8>>| {
            let last = envelopes[5].len() - 1;
            envelopes[5][last] ^= 1;
        };
        check_refused(flip_signature, "land seq 5");
        check_refused(|envelopes| drop(envelopes.remove(4)), "does not continue its reel");
        check_refused(|envelopes| drop(envelopes.remove(0)), "is not the genesis of");
        check_refused(|envelopes| envelopes[3].truncate(20), "land seq 3 does not decode");
        check_refused(|envelopes| envelopes.swap(4, 6), "does not continue its reel");
    }

    #[test]
    fn a_being_mirror_takes_that_beings_reel_alone_and_opens_with_the_being_as_its_root() {
        let folder = tempfile::tempdir().unwrap();
        let (land, _) = land_with_notes(&folder.path().join("land"));
        let operator = land.operator();
        let reel: Vec<Vec<u8>> =
            land.store().reel(&operator, 0, 100).unwrap().iter().map(|stored| stored.fact.encode_envelope()).collect();
        let dir = folder.path().join("being");
        let mut mirror =
            Mirror::open_being(&dir, land.root(), operator, "http://127.0.0.1:1", &Limits::default()).unwrap();
        let mut with_another = reel.clone();
        with_another.push(envelopes(&land)[0].clone());
        assert!(matches!(mirror.take(0, &with_another), Err(MirrorError::OtherBeing { .. })));
        assert!(matches!(mirror.take(0, &reel[1..]), Err(MirrorError::NotTheRoot { .. })));
        let taken = mirror.take(0, &reel).expect("the operator's reel");
        assert_eq!(taken.appended, reel.len() as u64);
        mirror.close();
        let opened = Land::open_read_only(&dir).expect("a being's mirror opens as a land to read");
        assert_eq!(opened.root(), operator);
        assert_eq!(opened.meta().mirror_being_of, Some(land.root().to_hex()));
    }

    #[test]
    fn two_histories_signed_by_one_key_are_kept_as_a_fork_proof_and_shown_to_the_land() {
        let folder = tempfile::tempdir().unwrap();
        let (land, _) = land_with_notes(&folder.path().join("land"));
        let root = land.root();
        let operator = land.operator();
        land.close().unwrap();
        copy_folder(&folder.path().join("land"), &folder.path().join("restored"));
        let land =
            Land::open_with(&folder.path().join("land"), Arc::new(LogicalClock::starting_at(5_000)), Limits::default())
                .unwrap();
        let restored = Land::open_with(
            &folder.path().join("restored"),
            Arc::new(LogicalClock::starting_at(5_000)),
            Limits::default(),
        )
        .unwrap();
        let agreed = land.store().land_len().unwrap();
        let first = note(&land, &root, "the first history");
        note(&restored, &root, "the second history");
        let second = note(&restored, &operator, "after it");
        note(&restored, &root, "the second history goes on");
        let mut mirror = mirror_of(&land, &folder.path().join("mirror"));
        mirror.take(0, &envelopes(&land)).expect("the first history");
        // The land no longer holds what the mirror took: read again from where both agree.
        mirror.rewind_to(agreed).unwrap();
        let taken = mirror.take(agreed, &envelopes(&restored)[agreed as usize..]).expect("the second history");
        assert_eq!(taken.forks.len(), 1);
        assert_eq!((taken.forks[0].being, taken.forks[0].kept), (root, first));
        assert_eq!(taken.appended, 1, "the operator's reel goes on: {taken:?}");
        assert_eq!(taken.skipped, 1, "nothing after the fork is kept: {taken:?}");
        assert_eq!(mirror.id_at(agreed + 1).unwrap(), Some(second));
        assert_eq!(mirror.store().fork_proofs(Some(&root)).unwrap().len(), 1);
        // The land that holds the second history is shown the first.
        let shown = check_reported_fork(restored.store(), &taken.forks[0].kept_envelope).expect("a fork");
        assert_eq!((shown.being, shown.held, shown.reported), (root, note_id_at(&restored, &root, shown.seq), first));
        let mut forged = taken.forks[0].kept_envelope.clone();
        let last = forged.len() - 1;
        forged[last] ^= 1;
        assert!(matches!(check_reported_fork(restored.store(), &forged), Err(ForkReportError::NotSigned { .. })));
        let own = restored.store().reel(&root, shown.seq, shown.seq + 1).unwrap()[0].fact.encode_envelope();
        assert!(matches!(check_reported_fork(restored.store(), &own), Err(ForkReportError::Same { .. })));
        assert!(matches!(check_reported_fork(restored.store(), &[1, 2, 3]), Err(ForkReportError::Undecodable { .. })));
    }

    fn note_id_at(land: &Land, being: &BeingId, seq: u64) -> FactId {
        land.store().reel(being, seq, seq + 1).unwrap()[0].fact.id()
    }
}
