//! The log store's one writing thread: a group is judged by the chain rules,
//! its fork proofs and facts are appended and synced, and only then are the
//! indexes, the heads and the witness updated and the group acknowledged.
//! Index records are written after the facts, never synced (an open reads
//! the log past them), and caught up with the next group if a write of them
//! failed. It also rebuilds the index files (reindex).

use super::index::{encode_being, encode_land_slot, flags_of, ForkEntry, Indexes, LandSlot, LAND_RECORD_BYTES};
use super::{segment_error, Shared, BEINGS_INDEX_FILE, LAND_INDEX_FILE};
use crate::fact::{BeingId, Fact, FactId};
use crate::store::chain::{judge, ChainState, StagedChain, Verdict};
use crate::store::crash_points::{self, CrashPoint};
use crate::store::queue::{GroupWriter, Reply};
use crate::store::segments::SegmentLog;
use crate::store::witness::write_witness;
use crate::store::{Appended, Head, ReindexReport, StoreError};
use std::fs::File;
use std::io::Write;
use std::sync::Arc;

pub(super) struct Committer {
    shared: Arc<Shared>,
    log: SegmentLog,
    forks: SegmentLog,
    witness: Option<File>,
    /// Index records are appended here; `None` until first needed.
    beings_index: Option<File>,
    land_index: Option<File>,
}

/// One fact of a group, staged to be appended.
struct StagedFact {
    envelope: Vec<u8>,
    being: BeingId,
    seq: u64,
    flags: u32,
    /// The name a genesis claims.
    name: Option<String>,
}

/// What one group has staged but not yet written.
#[derive(Default)]
struct Staged {
    chain: StagedChain,
    /// Facts to append, in order.
    appends: Vec<StagedFact>,
    /// Rival envelopes to keep as fork proofs.
    rivals: Vec<(Vec<u8>, BeingId, u64, FactId)>,
}

impl Committer {
    pub(super) fn new(shared: Arc<Shared>, log: SegmentLog, forks: SegmentLog, witness: Option<File>) -> Committer {
        Committer { shared, log, forks, witness, beings_index: None, land_index: None }
    }

    fn commit_group_now(&mut self, group: Vec<(Box<Fact>, Reply)>) {
        if group.is_empty() {
            return;
        }
        let mut staged = Staged {
            chain: StagedChain::with_capacity(group.len()),
            appends: Vec::with_capacity(group.len()),
            rivals: Vec::new(),
        };
        let mut outcomes = Vec::with_capacity(group.len());
        for (fact, reply) in group {
            let outcome = self.stage(&fact, &mut staged);
            outcomes.push((reply, outcome));
        }
        if let Err(failure) = self.write(&mut staged) {
            for (_, outcome) in outcomes.iter_mut() {
                if !matches!(outcome, Err(StoreError::Fork { .. })) {
                    *outcome = Err(failure.clone());
                }
            }
        }
        for (reply, outcome) in outcomes {
            let _ = reply.send(outcome);
        }
    }

    /// Appends the staged group (fork proofs, then facts, each synced) and
    /// then publishes it to readers.
    fn write(&mut self, staged: &mut Staged) -> Result<(), StoreError> {
        let first_proof = self.forks.len();
        if !staged.rivals.is_empty() {
            self.forks
                .append_group(staged.rivals.iter().map(|(envelope, ..)| envelope.as_slice()))
                .map_err(segment_error)?;
        }
        let first_land_seq = self.log.len();
        let offsets = if staged.appends.is_empty() {
            Vec::new()
        } else {
            self.log
                .append_group(staged.appends.iter().map(|staged| staged.envelope.as_slice()))
                .map_err(segment_error)?
        };
        crash_points::reach(CrashPoint::SegmentSynced);
        {
            let mut indexes = self.shared.indexes.write().map_err(|_| StoreError::Closed)?;
            for (index, (being, seq, rival)) in
                staged.rivals.iter().map(|(_, being, seq, rival)| (being, seq, rival)).enumerate()
            {
                indexes.forked.insert(*being);
                indexes.forks.push(ForkEntry {
                    being: *being,
                    seq: *seq,
                    rival: *rival,
                    proof: first_proof + index as u64,
                });
            }
            for (index, (StagedFact { being, seq, flags, name, .. }, offset)) in
                staged.appends.iter().zip(&offsets).enumerate()
            {
                let ordinal = match (name, indexes.ordinals.get(being)) {
                    (_, Some(ordinal)) => *ordinal,
                    (Some(name), None) => indexes.add_being(*being, name.clone()),
                    (None, None) => unreachable!("the chain rules admit a first fact only as a genesis"),
                };
                let slot = LandSlot { offset: *offset, seq: *seq, ordinal, flags: *flags };
                indexes.add_slot_after_file(first_land_seq + index as u64, slot);
            }
        }
        *self.shared.segments.write().map_err(|_| StoreError::Closed)? = self.log.segment_files();
        self.shared.heads.lock().map_err(|_| StoreError::Closed)?.extend(staged.chain.heads.drain());
        if let (Some(witness), false) = (&self.witness, staged.appends.is_empty()) {
            write_witness(witness, self.log.len());
        }
        crash_points::reach(CrashPoint::WitnessWritten);
        // The facts are durable; their index records are derived and may
        // lag (a failure here is retried with the next group).
        let _ = self.write_index_records();
        Ok(())
    }

    /// Writes the index records readers hold in memory only, cutting each
    /// file back to its last whole record first.
    fn write_index_records(&mut self) -> Result<(), StoreError> {
        let io = |path: &std::path::Path, error: std::io::Error| StoreError::Io {
            reason: format!("{}: {error}", path.display()),
        };
        let (beings_bytes, new_beings, land_bytes, new_slots, beings_file_bytes, slots_on_file) = {
            let indexes = self.shared.indexes.read().map_err(|_| StoreError::Closed)?;
            let mut beings_bytes = Vec::new();
            for entry in &indexes.beings[indexes.beings_on_file as usize..] {
                encode_being(&entry.id, &entry.name, &mut beings_bytes);
            }
            let mut land_bytes = Vec::with_capacity(indexes.slots_after_file.len() * LAND_RECORD_BYTES);
            for (index, slot) in indexes.slots_after_file.iter().enumerate() {
                encode_land_slot(indexes.slots_on_file + index as u64, slot, &mut land_bytes);
            }
            let new_beings = indexes.beings.len() as u32 - indexes.beings_on_file;
            (
                beings_bytes,
                new_beings,
                land_bytes,
                indexes.slots_after_file.len(),
                indexes.beings_file_bytes,
                indexes.slots_on_file,
            )
        };
        if new_beings == 0 && new_slots == 0 {
            return Ok(());
        }
        let beings_path = self.shared.dir.join(BEINGS_INDEX_FILE);
        let land_path = self.shared.dir.join(LAND_INDEX_FILE);
        if self.beings_index.is_none() {
            self.beings_index = Some(open_cut_back(&beings_path, beings_file_bytes)?);
        }
        if self.land_index.is_none() {
            self.land_index = Some(open_cut_back(&land_path, slots_on_file * LAND_RECORD_BYTES as u64)?);
            // Readers read the records on file through their own handle.
            let reader = File::open(&land_path).map_err(|error| io(&land_path, error))?;
            *self.shared.land_index.write().map_err(|_| StoreError::Closed)? = Some(Arc::new(reader));
        }
        let beings_file = self.beings_index.as_mut().expect("opened above");
        if let Err(error) = beings_file.write_all(&beings_bytes) {
            self.beings_index = None;
            return Err(io(&beings_path, error));
        }
        let land_file = self.land_index.as_mut().expect("opened above");
        // The crash tests cut this write inside its last record.
        let torn_at = match crash_points::armed_at(CrashPoint::LandIndexTorn) {
            true => land_bytes.len().saturating_sub(LAND_RECORD_BYTES / 2),
            false => land_bytes.len(),
        };
        let written = land_file.write_all(&land_bytes[..torn_at]).and_then(|_| {
            crash_points::reach(CrashPoint::LandIndexTorn);
            land_file.write_all(&land_bytes[torn_at..])
        });
        if let Err(error) = written {
            self.land_index = None;
            return Err(io(&land_path, error));
        }
        let mut indexes = self.shared.indexes.write().map_err(|_| StoreError::Closed)?;
        indexes.beings_on_file += new_beings;
        indexes.beings_file_bytes += beings_bytes.len() as u64;
        indexes.slots_on_file += new_slots as u64;
        indexes.slots_after_file.drain(..new_slots);
        Ok(())
    }

    /// Checks one append against the chain rules and stages it.
    fn stage(&mut self, fact: &Fact, staged: &mut Staged) -> Result<Appended, StoreError> {
        let being = fact.header.being;
        let verdict = judge(fact, &mut LogChain { shared: &self.shared, staged })?;
        match verdict {
            Verdict::Duplicate { id, land_seq } => Ok(Appended { id, land_seq, duplicate: true }),
            Verdict::Forks { kept } => {
                staged.rivals.push((fact.encode_envelope(), being, fact.header.seq, fact.id()));
                staged.chain.forked.insert(being);
                Err(StoreError::Fork { being, seq: fact.header.seq, kept, rival: fact.id() })
            }
            Verdict::Extends { head, name } => {
                let land_seq = self.log.len() + staged.appends.len() as u64;
                if let Some(name) = &name {
                    staged.chain.names.insert(name.clone(), being);
                }
                staged.appends.push(StagedFact {
                    envelope: fact.encode_envelope(),
                    being,
                    seq: fact.header.seq,
                    flags: flags_of(fact),
                    name,
                });
                staged.chain.heads.insert(being, head);
                staged.chain.facts.insert((being, fact.header.seq), (fact.id(), land_seq));
                Ok(Appended { id: fact.id(), land_seq, duplicate: false })
            }
        }
    }

    /// Rebuilds both index files from the log, each written beside the old
    /// one, synced, and renamed over it.
    fn reindex_now(&mut self) -> Result<ReindexReport, StoreError> {
        let mut rebuilt = Indexes::default();
        self.log
            .read_positioned_from(0, |land_seq, offset, envelope| {
                rebuilt.index_frame(land_seq, offset, &envelope);
                Ok(())
            })
            .map_err(segment_error)?;
        let mut beings_bytes = Vec::new();
        for entry in &rebuilt.beings {
            encode_being(&entry.id, &entry.name, &mut beings_bytes);
        }
        let mut land_bytes = Vec::with_capacity(rebuilt.slots_after_file.len() * LAND_RECORD_BYTES);
        for (land_seq, slot) in rebuilt.slots_after_file.iter().enumerate() {
            encode_land_slot(land_seq as u64, slot, &mut land_bytes);
        }
        let beings_path = self.shared.dir.join(BEINGS_INDEX_FILE);
        let land_path = self.shared.dir.join(LAND_INDEX_FILE);
        self.beings_index = None;
        self.land_index = None;
        let io = |error: std::io::Error| StoreError::Io { reason: format!("rebuilding the indexes: {error}") };
        crate::atomic_file::write_atomically(&beings_path, &beings_bytes, crate::atomic_file::READABLE_FILE_MODE)
            .map_err(io)?;
        crate::atomic_file::write_atomically(&land_path, &land_bytes, crate::atomic_file::READABLE_FILE_MODE)
            .map_err(io)?;
        let mut indexes = self.shared.indexes.write().map_err(|_| StoreError::Closed)?;
        let report = ReindexReport {
            facts: rebuilt.land_len() - rebuilt.unindexed.len() as u64,
            beings: rebuilt.beings.len() as u64,
            fork_proofs: indexes.forks.len() as u64,
            unreadable_records: Vec::new(),
        };
        rebuilt.forks = std::mem::take(&mut indexes.forks);
        rebuilt.forked = std::mem::take(&mut indexes.forked);
        rebuilt.beings_on_file = rebuilt.beings.len() as u32;
        rebuilt.beings_file_bytes = beings_bytes.len() as u64;
        rebuilt.slots_on_file = rebuilt.slots_after_file.len() as u64;
        rebuilt.slots_after_file.clear();
        *indexes = rebuilt;
        let reader = File::open(&land_path).map_err(io)?;
        *self.shared.land_index.write().map_err(|_| StoreError::Closed)? = Some(Arc::new(reader));
        self.shared.heads.lock().map_err(|_| StoreError::Closed)?.clear();
        Ok(report)
    }
}

/// Opens an index file to append, cut back to `len` bytes (its whole,
/// checked records).
fn open_cut_back(path: &std::path::Path, len: u64) -> Result<File, StoreError> {
    let io = |error: std::io::Error| StoreError::Io { reason: format!("{}: {error}", path.display()) };
    let file = std::fs::OpenOptions::new().create(true).truncate(false).append(true).open(path).map_err(io)?;
    if file.metadata().map_err(io)?.len() != len {
        file.set_len(len).map_err(io)?;
    }
    Ok(file)
}

/// The store and the group being staged, as the chain rules see them.
struct LogChain<'a> {
    shared: &'a Shared,
    staged: &'a Staged,
}

impl ChainState for LogChain<'_> {
    fn is_forked(&self, being: &BeingId) -> bool {
        self.staged.chain.forked.contains(being)
            || self.shared.indexes.read().map(|indexes| indexes.forked.contains(being)).unwrap_or(false)
    }

    fn head(&mut self, being: &BeingId) -> Result<Option<Head>, StoreError> {
        if let Some(head) = self.staged.chain.heads.get(being) {
            return Ok(Some(*head));
        }
        self.shared.head(being)
    }

    fn stored_at(&mut self, being: &BeingId, seq: u64) -> Result<Option<(FactId, u64)>, StoreError> {
        if let Some(found) = self.staged.chain.facts.get(&(*being, seq)) {
            return Ok(Some(*found));
        }
        match self.shared.land_seq_of(being, seq)? {
            Some(land_seq) => Ok(Some((self.shared.decoded(being, seq, land_seq)?.id(), land_seq))),
            None => Ok(None),
        }
    }

    fn name_holder(&mut self, name: &str) -> Result<Option<BeingId>, StoreError> {
        if let Some(holder) = self.staged.chain.names.get(name) {
            return Ok(Some(*holder));
        }
        let indexes = self.shared.indexes.read().map_err(|_| StoreError::Closed)?;
        Ok(indexes
            .names
            .range((name.to_string(), BeingId::ZERO)..)
            .next()
            .filter(|(held, _)| held == name)
            .map(|(_, being)| *being))
    }
}

impl GroupWriter for Committer {
    fn commit_group(&mut self, group: Vec<(Box<Fact>, Reply)>) {
        self.commit_group_now(group);
    }

    fn reindex(&mut self) -> Result<ReindexReport, StoreError> {
        self.reindex_now()
    }

    /// Closing: the index records still owed are written now.
    fn finish(&mut self) {
        let _ = self.write_index_records();
    }
}
