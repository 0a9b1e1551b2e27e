//! Checks computed for every record of a file (a frame, an index record)
//! are BLAKE3 in key-derivation mode over a fixed context. Hashing the
//! context costs about as much as checking a small record, so it is hashed
//! once per process and the hasher started from its key.

use blake3::hazmat::{ContextKey, HasherExt};
use std::sync::OnceLock;

/// A key-derivation context, hashed the first time it is used.
pub(crate) struct DerivedKeyContext {
    context: &'static str,
    key: OnceLock<ContextKey>,
}

impl DerivedKeyContext {
    pub(crate) const fn new(context: &'static str) -> DerivedKeyContext {
        DerivedKeyContext { context, key: OnceLock::new() }
    }

    /// What `blake3::Hasher::new_derive_key(context)` gives.
    pub(crate) fn hasher(&self) -> blake3::Hasher {
        let key = self.key.get_or_init(|| blake3::hazmat::hash_derive_key_context(self.context));
        blake3::Hasher::new_from_context_key(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hasher_from_the_context_key_hashes_as_one_from_the_context() {
        static CONTEXT: DerivedKeyContext = DerivedKeyContext::new("seed test context v1");
        for input in [&b""[..], b"a", &[7u8; 3000]] {
            let expected = blake3::Hasher::new_derive_key("seed test context v1").update(input).finalize();
            assert_eq!(CONTEXT.hasher().update(input).finalize(), expected);
            assert_eq!(CONTEXT.hasher().update(input).finalize(), expected, "the second use, from the kept key");
        }
    }
}
