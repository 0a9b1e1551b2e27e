//! 32-byte identifiers: fact ids, being ids and content hashes.
//!
//! They order as their bytes do, compared eight bytes at a time: the world's
//! ordered maps are keyed by being id.

use std::fmt;

macro_rules! hash32_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name(pub [u8; 32]);

        /// The bytes' lexicographic order, as a derived `Ord` gives, read
        /// eight bytes at a time: ids key the world's ordered maps, looked up
        /// several times every moment, and ids are hashes, so their first
        /// eight bytes almost always decide (a call to libc's `memcmp` per
        /// step cost more than the comparison).
        impl Ord for $name {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                compare_ids(&self.0, &other.0)
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl $name {
            pub const ZERO: $name = $name([0u8; 32]);

            pub fn as_bytes(&self) -> &[u8; 32] {
                &self.0
            }

            pub fn to_hex(&self) -> String {
                hex::encode(self.0)
            }

            /// The first 12 hex digits: enough to tell facts apart on a screen.
            pub fn short(&self) -> String {
                hex::encode(&self.0[..6])
            }

            pub fn from_hex(text: &str) -> Option<Self> {
                let bytes = hex::decode(text).ok()?;
                Self::from_slice(&bytes)
            }

            pub fn from_slice(bytes: &[u8]) -> Option<Self> {
                let array: [u8; 32] = bytes.try_into().ok()?;
                Some(Self(array))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(&self.to_hex())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(formatter, "{}({})", stringify!($name), self.short())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_bytes(&self.0)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_bytes(Bytes32Visitor).map($name)
            }
        }
    };
}

/// Lexicographic order of two 32-byte ids, four big-endian words at a time.
#[inline]
fn compare_ids(left: &[u8; 32], right: &[u8; 32]) -> std::cmp::Ordering {
    let word = |bytes: &[u8; 32], at: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        u64::from_be_bytes(word)
    };
    for at in [0, 8, 16, 24] {
        match word(left, at).cmp(&word(right, at)) {
            std::cmp::Ordering::Equal => continue,
            unequal => return unequal,
        }
    }
    std::cmp::Ordering::Equal
}

struct Bytes32Visitor;

impl<'de> serde::de::Visitor<'de> for Bytes32Visitor {
    type Value = [u8; 32];

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a 32-byte byte string")
    }

    fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<[u8; 32], E> {
        bytes.try_into().map_err(|_| E::invalid_length(bytes.len(), &self))
    }

    fn visit_byte_buf<E: serde::de::Error>(self, bytes: Vec<u8>) -> Result<[u8; 32], E> {
        self.visit_bytes(&bytes)
    }
}

hash32_type!(
    /// BLAKE3 of a fact's header bytes.
    FactId
);
hash32_type!(
    /// BLAKE3 of a being's genesis body bytes: its identity for life.
    BeingId
);
hash32_type!(
    /// BLAKE3 of some content (a body, a token, a digest input).
    Hash32
);
hash32_type!(
    /// An Ed25519 public key as stored in facts.
    PublicKeyBytes
);

impl PublicKeyBytes {
    /// The public half of a signing key, as a genesis or a rotation records it.
    pub fn of(key: &ed25519_dalek::SigningKey) -> PublicKeyBytes {
        PublicKeyBytes(key.verifying_key().to_bytes())
    }
}

pub fn blake3_of(bytes: &[u8]) -> Hash32 {
    Hash32(*blake3::hash(bytes).as_bytes())
}

/// Bytes [`GatheringHasher`] gathers before hashing them: the hash works
/// on many 1 KiB chunks at once only when it is handed that many together.
pub const HASH_GATHER_BYTES: usize = 64 * 1024;

/// BLAKE3 of bytes handed over a few at a time (a field, a row) without
/// holding them all: they are gathered [`HASH_GATHER_BYTES`] at a time. The
/// digest is the one [`blake3_of`] gives for the bytes laid end to end.
pub struct GatheringHasher {
    hasher: blake3::Hasher,
    gathered: Vec<u8>,
}

impl GatheringHasher {
    pub fn new() -> GatheringHasher {
        GatheringHasher::from_hasher(blake3::Hasher::new())
    }

    /// Gathers for `hasher` (a keyed or derived-key one).
    pub fn from_hasher(hasher: blake3::Hasher) -> GatheringHasher {
        GatheringHasher { hasher, gathered: Vec::with_capacity(HASH_GATHER_BYTES) }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        if self.gathered.len() + bytes.len() > HASH_GATHER_BYTES {
            self.hasher.update(&self.gathered);
            self.gathered.clear();
            if bytes.len() >= HASH_GATHER_BYTES {
                self.hasher.update(bytes);
                return;
            }
        }
        self.gathered.extend_from_slice(bytes);
    }

    /// The hasher, every byte handed over so far given to it.
    pub fn into_hasher(mut self) -> blake3::Hasher {
        self.hasher.update(&self.gathered);
        self.hasher
    }

    pub fn finalize(self) -> Hash32 {
        Hash32(*self.into_hasher().finalize().as_bytes())
    }
}

impl Default for GatheringHasher {
    fn default() -> GatheringHasher {
        GatheringHasher::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Gathered or laid end to end, the same bytes give the same digest,
        /// whatever the sizes they are handed over in.
        #[test]
        fn gathered_bytes_hash_as_the_bytes_laid_end_to_end(
            sizes in proptest::collection::vec(0usize..3 * HASH_GATHER_BYTES / 2, 0..12),
            seed in any::<u8>(),
        ) {
            let mut gathering = GatheringHasher::new();
            let mut end_to_end = Vec::new();
            for (index, size) in sizes.iter().enumerate() {
                let piece: Vec<u8> = (0..*size).map(|at| (at as u8).wrapping_mul(31).wrapping_add(seed ^ index as u8)).collect();
                gathering.update(&piece);
                end_to_end.extend_from_slice(&piece);
            }
            prop_assert_eq!(gathering.finalize(), blake3_of(&end_to_end));
        }
    }

    /// Ids that differ only in one byte, at every position, and equal ids.
    fn check_order(left: [u8; 32], right: [u8; 32]) {
        assert_eq!(BeingId(left).cmp(&BeingId(right)), left.cmp(&right), "{left:?} vs {right:?}");
        assert_eq!(FactId(left).partial_cmp(&FactId(right)), Some(left.cmp(&right)));
    }

    #[test]
    fn id_order_is_the_byte_order_at_every_position() {
        for position in 0..32 {
            for (low, high) in [(0u8, 1u8), (0x7f, 0x80), (0xfe, 0xff), (0, 0xff)] {
                let mut left = [0x55u8; 32];
                let mut right = [0x55u8; 32];
                left[position] = low;
                right[position] = high;
                check_order(left, right);
                check_order(right, left);
                check_order(left, left);
            }
        }
    }

    proptest! {
        #[test]
        fn id_order_is_the_byte_order(left in any::<[u8; 32]>(), right in any::<[u8; 32]>(), shared in 0usize..32) {
            // Sharing a prefix exercises the later words.
            let mut right = right;
            right[..shared].copy_from_slice(&left[..shared]);
            check_order(left, right);
        }
    }
}
