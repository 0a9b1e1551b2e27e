//! The envelope the land root's own records share (verification checkpoints,
//! world snapshots, vouched snapshots): canonical CBOR `[signed, signature,
//! …]`, the signed part a byte string the root's key signed, strictly.

use crate::canonical::CanonicalReader;
use crate::fact::PublicKeyBytes;
use ed25519_dalek::{Signature, VerifyingKey};

/// A record split into its signed bytes, its 64-byte signature and the byte
/// strings after them (`extra` of them, exactly).
pub(crate) struct SignedRecord<'a> {
    pub(crate) signed: &'a [u8],
    pub(crate) signature: [u8; 64],
    pub(crate) extra: Vec<&'a [u8]>,
}

/// Splits `bytes`, or says what is malformed.
pub(crate) fn split_signed(bytes: &[u8], extra: usize) -> Result<SignedRecord<'_>, &'static str> {
    let mut outer = CanonicalReader::new(bytes);
    if outer.array_head() != Some(2 + extra as u64) {
        return Err("not an array of the expected length");
    }
    let signed = outer.bytes().ok_or("the signed part is not a byte string")?;
    let signature: [u8; 64] =
        outer.bytes().and_then(|signature| signature.try_into().ok()).ok_or("the signature is not 64 bytes")?;
    let extra = (0..extra)
        .map(|_| outer.bytes().ok_or("an item after the signature is not a byte string"))
        .collect::<Result<_, _>>()?;
    if !outer.is_at_end() {
        return Err("trailing bytes");
    }
    Ok(SignedRecord { signed, signature, extra })
}

/// Strict Ed25519 verification of `signature` over `signed` by `public_key`.
pub(crate) fn signature_holds(public_key: &PublicKeyBytes, signed: &[u8], signature: &[u8; 64]) -> bool {
    let Ok(key) = VerifyingKey::from_bytes(public_key.as_bytes()) else { return false };
    !key.is_weak() && key.verify_strict(signed, &Signature::from_bytes(signature)).is_ok()
}
