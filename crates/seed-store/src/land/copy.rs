//! Copying a land to another store (`seed copy`): every fact, in land order,
//! with its land seq, into an empty store (the new folder's own, or an empty
//! PostgreSQL database), and every other file of the land folder (key ring,
//! snapshots, checkpoint, recorded definitions) beside it. `land.toml` is
//! written last, so a copy cut short is no land.
//!
//! The copy appends through the destination's committer, so its chain rules
//! hold each fact as a seal would; a fact that lands at another land seq, or
//! whose bytes would change, stops the copy. Nothing of the source is written.

use super::plant::write_meta;
use super::WITNESS_FILE;
use super::{open_store, Access, Land, LandError, LandMeta, StoreLocation, LAND_META_FILE, LOG_DIR, SLED_STORE_DIR};
use crate::fact::Fact;
use crate::limits::Limits;
use crate::store::{decode_entry_envelope, StoreError};
use std::path::Path;

/// Facts a copy reads and has in flight at a time.
pub const COPY_WINDOW_FACTS: u64 = 4_096;

/// What a copy moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyReport {
    pub facts: u64,
    pub fork_proofs: u64,
    pub files: u64,
}

/// Why a copy stopped.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("{to} exists and is not empty: copy into a new folder")]
    NotEmpty { to: String },
    #[error("the source's fact at land seq {land_seq} cannot be copied: {reason} (run `seed verify` on the source)")]
    Unreadable { land_seq: u64, reason: String },
    #[error(
        "the fact at land seq {land_seq} was stored at land seq {stored} in the copy: the destination was not empty"
    )]
    Moved { land_seq: u64, stored: u64 },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error(transparent)]
    Land(#[from] Box<LandError>),
}

impl From<LandError> for CopyError {
    fn from(error: LandError) -> CopyError {
        CopyError::Land(Box::new(error))
    }
}

impl From<StoreError> for CopyError {
    fn from(error: StoreError) -> CopyError {
        CopyError::Land(Box::new(LandError::Store(error)))
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> CopyError + '_ {
    move |source| CopyError::Io { path: path.display().to_string(), source }
}

/// Copies the land in `from` to a new land folder `to`, its facts kept at `location`.
pub fn copy_land(from: &Path, to: &Path, location: &StoreLocation, limits: &Limits) -> Result<CopyReport, CopyError> {
    let source = Land::open_read_only(from)?;
    if to.exists() && std::fs::read_dir(to).map_err(io(to))?.next().is_some() {
        return Err(CopyError::NotEmpty { to: to.display().to_string() });
    }
    std::fs::create_dir_all(to).map_err(io(to))?;
    let files = copy_folder(from, to, true)?;
    let target = open_store(to, limits, location, Access::Write)?;
    if target.land_len()? > 0 {
        return Err(LandError::StoreNotEmpty { store: location.describe() }.into());
    }
    let store = source.store();
    let len = store.land_len()?;
    let mut start = 0;
    while start < len {
        let end = (start + COPY_WINDOW_FACTS).min(len);
        let mut tickets = Vec::new();
        for (entry, envelope) in store.land_log_with_envelopes(start, end)? {
            let unreadable = |reason: String| CopyError::Unreadable { land_seq: entry.land_seq, reason };
            let fact = decode_entry_envelope(&entry, &envelope).map_err(|error| unreadable(error.to_string()))?.fact;
            if fact.encode_envelope() != envelope {
                return Err(unreadable("its stored bytes are not its canonical encoding".into()));
            }
            tickets.push((entry.land_seq, target.submit(fact)));
        }
        for (land_seq, ticket) in tickets {
            let appended = ticket.wait()?;
            if appended.land_seq != land_seq || appended.duplicate {
                return Err(CopyError::Moved { land_seq, stored: appended.land_seq });
            }
        }
        start = end;
    }
    let proofs = store.fork_proofs(None)?;
    for proof in &proofs {
        let rival = Fact::decode_envelope(&proof.rival_envelope).map_err(|error| CopyError::Unreadable {
            land_seq: len,
            reason: format!("the fork proof of {} at seq {}: {error}", proof.being, proof.seq),
        })?;
        match target.append(rival) {
            Err(StoreError::Fork { .. }) => {}
            Err(error) => return Err(error.into()),
            Ok(appended) => return Err(CopyError::Moved { land_seq: len, stored: appended.land_seq }),
        }
    }
    target.close()?;
    let meta = LandMeta { store: location.recorded(), ..source.meta().clone() };
    write_meta(to, &meta)?;
    Ok(CopyReport { facts: len, fork_proofs: proofs.len() as u64, files })
}

/// Copies the files of a land folder that are not its store, with their
/// permissions (the key ring stays readable by its owner only).
fn copy_folder(from: &Path, to: &Path, top: bool) -> Result<u64, CopyError> {
    let mut copied = 0;
    let mut entries: Vec<_> = std::fs::read_dir(from).map_err(io(from))?.collect::<Result<_, _>>().map_err(io(from))?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let name = entry.file_name();
        let skipped = [LAND_META_FILE, LOG_DIR, SLED_STORE_DIR, WITNESS_FILE];
        if top && skipped.iter().any(|skip| name == *skip) {
            continue;
        }
        let (source, target) = (entry.path(), to.join(&name));
        let metadata = entry.metadata().map_err(io(&source))?;
        if metadata.is_dir() {
            std::fs::create_dir_all(&target).map_err(io(&target))?;
            std::fs::set_permissions(&target, metadata.permissions()).map_err(io(&target))?;
            copied += copy_folder(&source, &target, false)?;
        } else if metadata.is_file() {
            std::fs::copy(&source, &target).map_err(io(&source))?;
            copied += 1;
        }
    }
    Ok(copied)
}
