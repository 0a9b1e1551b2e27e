//! The key ring: the Ed25519 signing keys of the beings this land hosts.
//!
//! One file per being, `keys/<being id hex>.key`, holding the 32-byte secret
//! seed as hex; the folder is 0700 and every file 0600, and a key file that
//! others can read is refused. Files are written to a temporary name, synced
//! and renamed, so a crash never leaves half a key.
//!
//! A key rotation stages the new key as `<id>.next` before the `rotate-key`
//! fact is sealed and promotes it after; `Land` finishes an interrupted
//! rotation on open by comparing the staged key with the reel's current key.

use crate::fact::BeingId;
use ed25519_dalek::SigningKey;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

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

pub struct KeyRing {
    dir: PathBuf,
}

impl KeyRing {
    /// Opens (creating if needed) the key folder.
    pub fn open(dir: &Path) -> Result<KeyRing, KeyError> {
        let io = |source| KeyError::Io { path: dir.to_path_buf(), source };
        fs::create_dir_all(dir).map_err(io)?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(io)?;
        Ok(KeyRing { dir: dir.to_path_buf() })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A fresh key from the operating system's random source.
    pub fn generate() -> Result<SigningKey, KeyError> {
        let mut seed = [0u8; 32];
        random_bytes(&mut seed)?;
        Ok(SigningKey::from_bytes(&seed))
    }

    fn path(&self, being: &BeingId, extension: &str) -> PathBuf {
        self.dir.join(format!("{}.{extension}", being.to_hex()))
    }

    pub fn store(&self, being: &BeingId, key: &SigningKey) -> Result<(), KeyError> {
        self.write_key(&self.path(being, "key"), key)
    }

    pub fn load(&self, being: &BeingId) -> Result<SigningKey, KeyError> {
        let path = self.path(being, "key");
        if !path.exists() {
            return Err(KeyError::Missing { being: *being, dir: self.dir.clone() });
        }
        read_key(&path)
    }

    pub fn has(&self, being: &BeingId) -> bool {
        self.path(being, "key").exists()
    }

    /// Writes the key a rotation will switch to, before its fact is sealed.
    pub fn stage_next(&self, being: &BeingId, key: &SigningKey) -> Result<(), KeyError> {
        self.write_key(&self.path(being, "next"), key)
    }

    pub fn staged_next(&self, being: &BeingId) -> Result<Option<SigningKey>, KeyError> {
        let path = self.path(being, "next");
        if !path.exists() {
            return Ok(None);
        }
        read_key(&path).map(Some)
    }

    /// Makes the staged key current (after the rotate-key fact is durable).
    pub fn promote_next(&self, being: &BeingId) -> Result<(), KeyError> {
        let from = self.path(being, "next");
        let to = self.path(being, "key");
        fs::rename(&from, &to).map_err(|source| KeyError::Io { path: from.clone(), source })?;
        sync_dir(&self.dir)
    }

    /// Drops a staged key whose rotation never sealed.
    pub fn discard_next(&self, being: &BeingId) -> Result<(), KeyError> {
        let path = self.path(being, "next");
        fs::remove_file(&path).map_err(|source| KeyError::Io { path, source })
    }

    fn write_key(&self, path: &Path, key: &SigningKey) -> Result<(), KeyError> {
        let temporary = path.with_extension("tmp");
        let io = |source| KeyError::Io { path: path.to_path_buf(), source };
        {
            let mut file = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&temporary)
                .map_err(io)?;
            file.write_all(hex::encode(key.to_bytes()).as_bytes()).map_err(io)?;
            file.write_all(b"\n").map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        fs::rename(&temporary, path).map_err(io)?;
        sync_dir(&self.dir)
    }
}

fn read_key(path: &Path) -> Result<SigningKey, KeyError> {
    let io = |source| KeyError::Io { path: path.to_path_buf(), source };
    let mode = fs::metadata(path).map_err(io)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::Permissions { path: path.to_path_buf(), mode });
    }
    let text = fs::read_to_string(path).map_err(io)?;
    let corrupt = |reason: &str| KeyError::Corrupt { path: path.to_path_buf(), reason: reason.to_string() };
    let bytes = hex::decode(text.trim()).map_err(|_| corrupt("not hex"))?;
    let seed: [u8; 32] = bytes.as_slice().try_into().map_err(|_| corrupt("not 32 bytes"))?;
    Ok(SigningKey::from_bytes(&seed))
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
