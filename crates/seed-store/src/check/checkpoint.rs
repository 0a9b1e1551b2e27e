//! Verification checkpoints: verifying a signature is the costliest check
//! there is (tens of microseconds of curve arithmetic per fact), and a fact's
//! bytes never change once sealed. After a clean `seed verify`, the land's
//! root signs one small record: "the first N facts of the land log, whose ids
//! and signatures hash to D, all verified". A later verification that finds
//! the same first N facts (same ids, hence the same headers and bodies, and
//! the same signature bytes: BLAKE3 is collision resistant) already knows what
//! strict Ed25519 would answer for each of them, and skips only that
//! arithmetic: every other check (canonical bytes, chains, body hashes, the
//! land log, the indexes) still runs on every fact.
//!
//! Trust: the checkpoint is signed by the root being's key, which lives in
//! the land's key ring beside every being's key, so it is exactly as hard to
//! forge as the facts it covers. Anything off (a different signer or key, a
//! signature that does not hold, a digest that does not match, any problem
//! found while it is in use) and the verification runs again checking every
//! signature, so a tampered fact is named exactly as without a checkpoint.

use crate::canonical::{self, CanonicalReader};
use crate::fact::{BeingId, Fact, Hash32, PublicKeyBytes};
use ed25519_dalek::{Signer, SigningKey};

/// The checkpoint's file in the land folder.
pub const CHECKPOINT_FILE: &str = "verified-checkpoint";
const CHECKPOINT_FORMAT_VERSION: u64 = 1;
/// Domain separation: a checkpoint signature can never pass for a fact's.
const CHECKPOINT_DOMAIN_TAG: &str = "seed/verified-checkpoint";
/// BLAKE3 key-derivation context of the digest over ids and signatures.
const CHECKPOINT_DIGEST_CONTEXT: &str = "seed verified-checkpoint digest v1";
/// Fields of the signed array: version, tag, facts, digest, signer, key.
const CHECKPOINT_SIGNED_FIELDS: u64 = 6;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("the checkpoint is not a canonical seed checkpoint ({reason})")]
    Malformed { reason: &'static str },
    #[error("unsupported checkpoint format version {version} (this build reads {CHECKPOINT_FORMAT_VERSION})")]
    Version { version: u64 },
}

/// A signed statement that the first `facts` facts of the land log verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedCheckpoint {
    /// Land seqs `0..facts` are covered.
    pub facts: u64,
    /// [`covered_digest`] of those facts, in land order.
    pub digest: Hash32,
    /// The land's root being, whose key signed.
    pub signer: BeingId,
    pub public_key: PublicKeyBytes,
    signature: [u8; 64],
}

impl VerifiedCheckpoint {
    /// Signs a checkpoint over `facts` verified facts whose digest is `digest`.
    pub fn seal(facts: u64, digest: Hash32, signer: BeingId, key: &SigningKey) -> VerifiedCheckpoint {
        let public_key = PublicKeyBytes::of(key);
        let signature = key.sign(&signed_bytes(facts, &digest, &signer, &public_key)).to_bytes();
        VerifiedCheckpoint { facts, digest, signer, public_key, signature }
    }

    /// `[signed bytes, signature]`, both byte strings: canonical by construction.
    pub fn encode(&self) -> Vec<u8> {
        let signed = signed_bytes(self.facts, &self.digest, &self.signer, &self.public_key);
        let mut out = Vec::with_capacity(signed.len() + 72);
        canonical::write_array_head(2, &mut out);
        canonical::write_bytes(&signed, &mut out);
        canonical::write_bytes(&self.signature, &mut out);
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<VerifiedCheckpoint, CheckpointError> {
        let malformed = |reason| CheckpointError::Malformed { reason };
        let crate::signed::SignedRecord { signed, signature, .. } =
            crate::signed::split_signed(bytes, 0).map_err(malformed)?;
        let mut reader = CanonicalReader::new(signed);
        if reader.array_head() != Some(CHECKPOINT_SIGNED_FIELDS) {
            return Err(malformed("the signed part is not an array of six items"));
        }
        let version = reader.uint().ok_or(malformed("the version is not an unsigned integer"))?;
        if version != CHECKPOINT_FORMAT_VERSION {
            return Err(CheckpointError::Version { version });
        }
        if reader.text() != Some(CHECKPOINT_DOMAIN_TAG) {
            return Err(malformed("wrong domain tag"));
        }
        let facts = reader.uint().ok_or(malformed("the fact count is not an unsigned integer"))?;
        let mut bytes32 =
            |what| reader.bytes().and_then(|bytes| <[u8; 32]>::try_from(bytes).ok()).ok_or(malformed(what));
        let digest = Hash32(bytes32("the digest is not 32 bytes")?);
        let signer = BeingId(bytes32("the signer is not a 32-byte being id")?);
        let public_key = PublicKeyBytes(bytes32("the public key is not 32 bytes")?);
        if !reader.is_at_end() {
            return Err(malformed("trailing bytes in the signed part"));
        }
        Ok(VerifiedCheckpoint { facts, digest, signer, public_key, signature })
    }

    /// Strict Ed25519 verification of the checkpoint's own signature.
    pub fn signature_holds(&self) -> bool {
        let signed = signed_bytes(self.facts, &self.digest, &self.signer, &self.public_key);
        crate::signed::signature_holds(&self.public_key, &signed, &self.signature)
    }
}

fn signed_bytes(facts: u64, digest: &Hash32, signer: &BeingId, public_key: &PublicKeyBytes) -> Vec<u8> {
    let mut out = Vec::with_capacity(160);
    canonical::write_array_head(CHECKPOINT_SIGNED_FIELDS, &mut out);
    canonical::write_uint(CHECKPOINT_FORMAT_VERSION, &mut out);
    canonical::write_text(CHECKPOINT_DOMAIN_TAG, &mut out);
    canonical::write_uint(facts, &mut out);
    canonical::write_bytes(&digest.0, &mut out);
    canonical::write_bytes(&signer.0, &mut out);
    canonical::write_bytes(public_key.as_bytes(), &mut out);
    out
}

/// The digest a checkpoint signs: every fact's id (which hashes its header,
/// and through the body hash its body) and signature, in land order.
pub fn covered_digest<'a>(facts_in_land_order: impl IntoIterator<Item = &'a Fact>) -> Hash32 {
    covered_digest_of_parts(facts_in_land_order.into_iter().map(|fact| {
        let mut part = [0u8; COVERED_BYTES_PER_FACT];
        part[..32].copy_from_slice(&fact.id().0);
        part[32..].copy_from_slice(fact.signature());
        part
    }))
}

/// [`covered_digest`] from each fact's id and signature, already laid side by
/// side (a verification that reads the land in slices keeps only these).
pub fn covered_digest_of_parts<P: std::borrow::Borrow<[u8; COVERED_BYTES_PER_FACT]>>(
    parts_in_land_order: impl IntoIterator<Item = P>,
) -> Hash32 {
    let mut hasher = blake3::Hasher::new_derive_key(CHECKPOINT_DIGEST_CONTEXT);
    // The same bytes, handed to BLAKE3 many chunks at a time: it hashes
    // whole chunks side by side (SIMD), where 96-byte updates go one block
    // at a time.
    let mut pending = Vec::with_capacity(COVERED_DIGEST_BUFFER_BYTES);
    for part in parts_in_land_order {
        if pending.len() + COVERED_BYTES_PER_FACT > COVERED_DIGEST_BUFFER_BYTES {
            hasher.update(&pending);
            pending.clear();
        }
        pending.extend_from_slice(part.borrow());
    }
    hasher.update(&pending);
    Hash32(*hasher.finalize().as_bytes())
}

/// What [`covered_digest`] hashes of each fact: its id and its signature.
pub const COVERED_BYTES_PER_FACT: usize = 32 + 64;
/// [`covered_digest`] hashes the facts' bytes in pieces of at most this many.
const COVERED_DIGEST_BUFFER_BYTES: usize = 64 * 1024;

/// A checkpoint, and the land root it must have been signed by.
#[derive(Debug, Clone, Copy)]
pub struct TrustedCheckpoint<'a> {
    pub checkpoint: &'a VerifiedCheckpoint,
    pub root: BeingId,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hashing in pieces gives the digest of the facts' ids and signatures
    /// in order, whether the facts fill a piece, cross one or fall short.
    #[test]
    fn the_covered_digest_hashes_every_id_and_signature_in_order() {
        let key = SigningKey::from_bytes(&[5; 32]);
        let per_piece = COVERED_DIGEST_BUFFER_BYTES / COVERED_BYTES_PER_FACT;
        let facts: Vec<Fact> = (0..2 * per_piece as u64 + 3)
            .map(|seq| {
                let body = crate::canonical::encode_json(&serde_json::json!({"seq": seq})).expect("encodes");
                crate::fact::UnsignedFact::new(BeingId([1; 32]), seq, crate::fact::FactId::ZERO, seq, "note", body)
                    .expect("a fact")
                    .sign(&key)
            })
            .collect();
        for count in [0, 1, per_piece - 1, per_piece, per_piece + 1, 2 * per_piece, facts.len()] {
            let mut one_by_one = blake3::Hasher::new_derive_key(CHECKPOINT_DIGEST_CONTEXT);
            for fact in &facts[..count] {
                one_by_one.update(&fact.id().0);
                one_by_one.update(fact.signature());
            }
            assert_eq!(covered_digest(&facts[..count]), Hash32(*one_by_one.finalize().as_bytes()), "{count} facts");
        }
    }

    fn sample() -> (VerifiedCheckpoint, SigningKey) {
        let key = SigningKey::from_bytes(&[7; 32]);
        (VerifiedCheckpoint::seal(42, Hash32([3; 32]), BeingId([9; 32]), &key), key)
    }

    #[test]
    fn a_checkpoint_round_trips_and_its_signature_holds() {
        let (checkpoint, _) = sample();
        let decoded = VerifiedCheckpoint::decode(&checkpoint.encode()).expect("decodes");
        assert_eq!(decoded, checkpoint);
        assert!(decoded.signature_holds());
    }

    #[test]
    fn any_flipped_byte_is_refused_or_breaks_the_signature() {
        let (checkpoint, _) = sample();
        let bytes = checkpoint.encode();
        for index in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[index] ^= 0x01;
            if let Ok(decoded) = VerifiedCheckpoint::decode(&flipped) {
                assert!(!decoded.signature_holds(), "a flip at byte {index} kept a valid signature");
            }
        }
    }
}
