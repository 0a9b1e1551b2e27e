//! Runs that resume (docs/resume.md). A simulation keeping resume
//! checkpoints writes one for each round: the round about to start (the
//! ticks done), the clock, the land's length and last fact, and the
//! scheduler's state (summons delivered, signals seen, self-continues,
//! cascade arrivals seen), in canonical CBOR with its BLAKE3 digest,
//! written to a temporary file, synced and renamed over the last one. It
//! is written on a thread of its own while the round begins, and nothing
//! of the round is submitted before it is durable, so a killed driver
//! leaves at most the round after the checkpoint half sealed.
//!
//! Resuming verifies the checkpoint (its digest, the run it belongs to,
//! and that the land still holds the fact it names as its last), folds the
//! world to the checkpoint's length, rewinds the writers there
//! (`Land::rewind_writers_to`) and plays the rounds again from it. Moments
//! are pure and sealing follows being-id order, so the half-sealed round
//! prepares the same facts again: each one the land already holds is
//! compared with the stored fact (`Sealing`'s catch-up) and never submitted;
//! the first that differs stops the resume, writing nothing
//! ([`EngineError::ResumeDiverged`]). Past the land's end, the run goes on
//! as if it had never stopped, and ends with the same world hash.

use super::scheduler::Scheduler;
use super::EngineError;
use crate::canonical;
use crate::fact::{FactId, Hash32};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The checkpoint's file in the land folder.
pub const RESUME_CHECKPOINT_FILE: &str = "sim-resume.cbor";
/// The checkpoint's format; a build reads only its own.
pub const RESUME_CHECKPOINT_VERSION: u64 = 1;
/// Largest checkpoint file read, in bytes.
pub const RESUME_CHECKPOINT_BYTES_MAX: u64 = 1 << 30;

/// The state a run resumes from.
#[derive(Serialize, Deserialize)]
pub(super) struct Checkpoint {
    pub(super) version: u64,
    /// `pool::run_digest`: the fixture's world and the seed.
    pub(super) run: Hash32,
    /// Rounds done.
    pub(super) tick: u64,
    pub(super) clock_ms: u64,
    pub(super) land_len: u64,
    /// The fact at `land_len - 1` (zero for an empty land).
    pub(super) last_fact: FactId,
    pub(super) scheduler: Scheduler,
}

/// The file: the checkpoint's bytes and their digest.
#[derive(Serialize, Deserialize)]
struct Sealed {
    checkpoint: serde_bytes::ByteBuf,
    digest: Hash32,
}

pub(super) fn path_in(land_dir: &Path) -> PathBuf {
    land_dir.join(RESUME_CHECKPOINT_FILE)
}

fn damaged(path: &Path, reason: impl ToString) -> EngineError {
    EngineError::CheckpointDamaged { path: path.to_path_buf(), reason: reason.to_string() }
}

/// Writes `checkpoint` durably: a temporary file, synced, renamed over the old one.
pub(super) fn write(land_dir: &Path, checkpoint: &Checkpoint) -> Result<(), EngineError> {
    let path = path_in(land_dir);
    let bytes = canonical::to_canonical_bytes(checkpoint).map_err(|error| damaged(&path, error))?;
    let digest = crate::fact::blake3_of(&bytes);
    let file = canonical::to_canonical_bytes(&Sealed { checkpoint: serde_bytes::ByteBuf::from(bytes), digest })
        .map_err(|error| damaged(&path, error))?;
    let temporary = path.with_extension("cbor.tmp");
    let io = |source: std::io::Error| EngineError::CheckpointWrite { path: path.clone(), source };
    let mut out = std::fs::File::create(&temporary).map_err(io)?;
    out.write_all(&file).map_err(io)?;
    out.sync_all().map_err(io)?;
    std::fs::rename(&temporary, &path).map_err(io)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir).and_then(|dir| dir.sync_all()).map_err(io)?;
    }
    Ok(())
}

/// A checkpoint being written on a thread of its own ([`write_beside`]),
/// while the round it precedes begins.
pub(super) struct CheckpointInWriting {
    thread: std::thread::JoinHandle<Result<(), EngineError>>,
}

impl CheckpointInWriting {
    /// Waits until the checkpoint is durable, or says why it is not.
    pub(super) fn wait(self) -> Result<(), EngineError> {
        self.thread
            .join()
            .unwrap_or_else(|_| Err(EngineError::Internal("the resume checkpoint's writer panicked".into())))
    }
}

/// [`write`] on a thread of its own: encoding and syncing the checkpoint
/// (on the crowd, 10,000 beings' scheduler state, about 3.5 ms a round)
/// then goes on beside the round's start rather than before it, with a
/// core idle. The caller waits for it before the round submits anything,
/// so a kill still leaves at most the round after the checkpoint half
/// sealed.
pub(super) fn write_beside(land_dir: &Path, checkpoint: Checkpoint) -> Result<CheckpointInWriting, EngineError> {
    let land_dir = land_dir.to_path_buf();
    let path = path_in(&land_dir);
    std::thread::Builder::new()
        .name("seed-resume".into())
        .spawn(move || write(&land_dir, &checkpoint))
        .map(|thread| CheckpointInWriting { thread })
        .map_err(|source| EngineError::CheckpointWrite { path, source })
}

/// The rounds done by the run whose checkpoint is in `land_dir`, read and
/// checked as a resume reads it: how far a running (or stopped) simulation
/// has come, for a person or a test watching it.
pub fn resume_checkpoint_rounds_done(land_dir: &Path) -> Result<u64, EngineError> {
    read(land_dir).map(|checkpoint| checkpoint.tick)
}

/// Reads and checks the checkpoint in `land_dir`.
pub(super) fn read(land_dir: &Path) -> Result<Checkpoint, EngineError> {
    let path = path_in(land_dir);
    let size = match std::fs::metadata(&path) {
        Ok(metadata) => metadata.len(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(EngineError::NoCheckpoint { dir: land_dir.to_path_buf() })
        }
        Err(error) => return Err(damaged(&path, error)),
    };
    if size > RESUME_CHECKPOINT_BYTES_MAX {
        return Err(damaged(&path, format!("it is {size} bytes, over {RESUME_CHECKPOINT_BYTES_MAX}")));
    }
    let bytes = std::fs::read(&path).map_err(|error| damaged(&path, error))?;
    let sealed: Sealed = canonical::from_canonical_bytes(&bytes).map_err(|error| damaged(&path, error))?;
    if crate::fact::blake3_of(&sealed.checkpoint) != sealed.digest {
        return Err(damaged(&path, "its digest does not match its content"));
    }
    let checkpoint: Checkpoint =
        canonical::from_canonical_bytes(&sealed.checkpoint).map_err(|error| damaged(&path, error))?;
    if checkpoint.version != RESUME_CHECKPOINT_VERSION {
        return Err(damaged(
            &path,
            format!("it is format {}; this build reads {RESUME_CHECKPOINT_VERSION}", checkpoint.version),
        ));
    }
    Ok(checkpoint)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint_at(tick: u64) -> Checkpoint {
        Checkpoint {
            version: RESUME_CHECKPOINT_VERSION,
            run: Hash32([7; 32]),
            tick,
            clock_ms: tick * 1_000,
            land_len: 3,
            last_fact: FactId::ZERO,
            scheduler: Scheduler::default(),
        }
    }

    #[test]
    fn the_rounds_done_are_read_from_the_last_checkpoint_written_and_a_damaged_one_is_named() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let missing = resume_checkpoint_rounds_done(dir.path());
        assert!(matches!(missing, Err(EngineError::NoCheckpoint { .. })), "{:?}", missing.err());
        for tick in [0, 1, 41] {
            write(dir.path(), &checkpoint_at(tick)).expect("written");
            assert_eq!(resume_checkpoint_rounds_done(dir.path()).expect("read"), tick);
        }
        let path = path_in(dir.path());
        let mut bytes = std::fs::read(&path).expect("checkpoint");
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, bytes).expect("damaged");
        let damaged = resume_checkpoint_rounds_done(dir.path());
        assert!(matches!(damaged, Err(EngineError::CheckpointDamaged { .. })), "{:?}", damaged.err());
    }
}
