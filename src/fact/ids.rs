//! 32-byte identifiers: fact ids, being ids and content hashes.

use std::fmt;

macro_rules! hash32_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub [u8; 32]);

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

pub fn blake3_of(bytes: &[u8]) -> Hash32 {
    Hash32(*blake3::hash(bytes).as_bytes())
}
