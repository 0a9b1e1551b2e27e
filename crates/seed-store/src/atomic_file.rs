//! Writing a whole small file so that a crash leaves the old one or the new
//! one, never a part: a temporary beside it, synced, renamed over it, and the
//! folder synced so the rename is durable too. `land.toml`, the verification
//! checkpoint, world snapshots, their vouched record and the key ring's
//! rewrite all go this way.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Replaces `path` with `bytes`; a new file gets `mode` (less the umask).
pub(crate) fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    write_parts_atomically(path, &[bytes], mode)
}

/// Replaces `path` with the concatenation of `parts`, written one after
/// the other (a large file need not be copied into one buffer first).
pub(crate) fn write_parts_atomically(path: &Path, parts: &[&[u8]], mode: u32) -> std::io::Result<()> {
    let temporary = beside(path, TEMPORARY_SUFFIX);
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode).open(&temporary)?;
    for part in parts {
        file.write_all(part)?;
    }
    file.sync_all()?;
    rename_durably(&temporary, path)
}

/// What a file being written is called until it is renamed over `path`.
pub(crate) const TEMPORARY_SUFFIX: &str = ".tmp";

/// `path` with `suffix` added to its name.
pub(crate) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Renames the synced `temporary` over `path`, then syncs the folder so
/// the rename is durable too.
pub(crate) fn rename_durably(temporary: &Path, path: &Path) -> std::io::Result<()> {
    std::fs::rename(temporary, path)?;
    let folder = path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::File::open(folder)?.sync_all()
}

/// The mode of files anyone may read (as `File::create` gives, less the umask).
pub(crate) const READABLE_FILE_MODE: u32 = 0o666;
