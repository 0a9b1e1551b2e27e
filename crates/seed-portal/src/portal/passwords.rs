//! People's passwords: only a slow hash (Argon2id, in its PHC string form)
//! is kept, in `passwords.toml` beside the land's store, readable by its
//! owner alone. Never in a fact: a bundle or a reel carries no password
//! hash. Each entry names the grant it belongs to, so a new grant of the
//! account (a new token) or its revocation retires the password too.

use super::error::PortalError;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file, in the land's folder.
pub const PASSWORDS_FILE: &str = "passwords.toml";
/// The shortest password a person may set, in characters.
pub const PASSWORD_CHARS_MIN: usize = 10;
/// The longest, in bytes (hashing is slow on purpose; its input is bounded).
pub const PASSWORD_BYTES_MAX: usize = 512;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct StoredPassword {
    /// The Argon2id hash in PHC form (algorithm, parameters, salt, hash).
    hash: String,
    /// The land seq of the account's grant this password was set under.
    granted_at_seq: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct PasswordsFile {
    #[serde(default)]
    accounts: BTreeMap<String, StoredPassword>,
}

/// Why a password may not be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasswordProblem {
    #[error("a password needs at least {PASSWORD_CHARS_MIN} characters")]
    TooShort,
    #[error("a password is at most {PASSWORD_BYTES_MAX} bytes")]
    TooLong,
}

pub fn password_problem(password: &str) -> Option<PasswordProblem> {
    if password.len() > PASSWORD_BYTES_MAX {
        Some(PasswordProblem::TooLong)
    } else if password.chars().count() < PASSWORD_CHARS_MIN {
        Some(PasswordProblem::TooShort)
    } else {
        None
    }
}

pub struct Passwords {
    path: PathBuf,
    /// Held while the file is read and rewritten, so two settings never
    /// interleave.
    lock: Mutex<()>,
}

impl Passwords {
    pub fn in_land(land_dir: &Path) -> Passwords {
        Passwords { path: land_dir.join(PASSWORDS_FILE), lock: Mutex::new(()) }
    }

    fn read(&self) -> Result<PasswordsFile, PortalError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => toml::from_str(&text)
                .map_err(|error| PortalError::internal(format!("{} is unreadable: {error}", self.path.display()))),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(PasswordsFile::default()),
            Err(error) => Err(PortalError::internal(format!("{}: {error}", self.path.display()))),
        }
    }

    /// Writes the file whole: a temporary file (owner-only) renamed over it.
    fn write(&self, file: &PasswordsFile) -> Result<(), PortalError> {
        let fail = |error: String| PortalError::internal(format!("{}: {error}", self.path.display()));
        let text = toml::to_string(file).map_err(|error| fail(error.to_string()))?;
        let folder = self.path.parent().unwrap_or(Path::new("."));
        let mut temporary = tempfile::NamedTempFile::new_in(folder).map_err(|error| fail(error.to_string()))?;
        std::io::Write::write_all(&mut temporary, text.as_bytes()).map_err(|error| fail(error.to_string()))?;
        temporary.as_file().sync_all().map_err(|error| fail(error.to_string()))?;
        temporary.persist(&self.path).map_err(|error| fail(error.to_string()))?;
        Ok(())
    }

    /// Sets `account`'s password under the grant at `granted_at_seq`.
    /// Hashing is slow by design: call it off the async workers.
    pub fn set(&self, account: &str, granted_at_seq: u64, password: &str) -> Result<(), PortalError> {
        if let Some(problem) = password_problem(password) {
            return Err(PortalError::field("password", problem.to_string()));
        }
        let mut salt = [0u8; 16];
        getrandom::getrandom(&mut salt).map_err(|error| PortalError::internal(format!("no OS randomness: {error}")))?;
        let salt = SaltString::encode_b64(&salt).map_err(|error| PortalError::internal(error.to_string()))?;
        let hash = Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map_err(|error| PortalError::internal(format!("hashing the password failed: {error}")))?
            .to_string();
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut file = self.read()?;
        file.accounts.insert(account.to_string(), StoredPassword { hash, granted_at_seq });
        self.write(&file)
    }

    /// Whether `password` is `account`'s, set under the grant at
    /// `granted_at_seq` (a password from an earlier grant never holds).
    /// Slow by design, like [`Passwords::set`].
    pub fn holds(&self, account: &str, granted_at_seq: u64, password: &str) -> Result<bool, PortalError> {
        if password.len() > PASSWORD_BYTES_MAX {
            return Ok(false);
        }
        let stored = {
            let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
            self.read()?.accounts.get(account).cloned()
        };
        let Some(stored) = stored.filter(|stored| stored.granted_at_seq == granted_at_seq) else {
            self.spend_a_check(password);
            return Ok(false);
        };
        let parsed = PasswordHash::new(&stored.hash)
            .map_err(|error| PortalError::internal(format!("a stored password hash is unreadable: {error}")))?;
        Ok(Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
    }

    /// Hashes `password` against a hash no password holds, as long as a
    /// real check takes: a login for an account that does not exist, or
    /// has no password, answers in the same time as a wrong password, so
    /// the time does not tell which accounts exist.
    pub fn spend_a_check(&self, password: &str) {
        static UNHELD: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
        let unheld = UNHELD.get_or_init(|| {
            let salt = SaltString::encode_b64(b"seed-no-account!").ok()?;
            Some(Argon2::default().hash_password(b"no password holds this", &salt).ok()?.to_string())
        });
        if let Some(parsed) = unheld.as_deref().and_then(|hash| PasswordHash::new(hash).ok()) {
            let _ = Argon2::default().verify_password(password.as_bytes(), &parsed);
        }
    }

    /// Each account with a password, and the grant it was set under: read
    /// once for a whole list of accounts.
    pub fn grants_with_a_password(&self) -> BTreeMap<String, u64> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let file = self.read().unwrap_or_default();
        file.accounts.into_iter().map(|(account, stored)| (account, stored.granted_at_seq)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_holds_only_for_its_account_and_grant() {
        let folder = tempfile::tempdir().expect("folder");
        let passwords = Passwords::in_land(folder.path());
        passwords.set("ann", 7, "correct horse battery").expect("set");
        let check = |account: &str, grant: u64, password: &str, expected: bool| {
            assert_eq!(
                passwords.holds(account, grant, password).expect("checked"),
                expected,
                "{account} {grant} {password}"
            );
        };
        check("ann", 7, "correct horse battery", true);
        check("ann", 7, "correct horse battery!", false);
        check("ann", 8, "correct horse battery", false);
        check("bob", 7, "correct horse battery", false);
        let text = std::fs::read_to_string(folder.path().join(PASSWORDS_FILE)).expect("file");
        assert!(!text.contains("correct horse"), "only the hash is stored");
        assert!(text.contains("$argon2id$"));
    }

    #[test]
    fn passwords_too_short_or_too_long_are_named() {
        assert_eq!(password_problem("short"), Some(PasswordProblem::TooShort));
        assert_eq!(password_problem(&"x".repeat(PASSWORD_BYTES_MAX + 1)), Some(PasswordProblem::TooLong));
        assert_eq!(password_problem("long enough now"), None);
    }
}
