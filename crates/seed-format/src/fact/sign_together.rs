//! Many Ed25519 signatures made together: the same bytes
//! `SigningKey::sign` makes one at a time (RFC 8032 signing is
//! deterministic), for less work.
//!
//! Each signature's nonce point `R = r·B` must be written compressed, and
//! compressing a point takes a field inversion: about a fifth of a
//! signature's time on its own. Compressed together, the points share one
//! inversion (Montgomery's trick, `EdwardsPoint::compress_batch_alloc`),
//! so a batch of sixteen signs about 1.2 times as fast as one by one
//! (docs/performance.md). Everything else is the signing `ed25519-dalek`
//! does, in the same order, on `curve25519-dalek`'s constant-time
//! arithmetic: the secret key is expanded by SHA-512 and clamped, the
//! nonce is the SHA-512 of the key's prefix and the message, and
//! `s = SHA-512(R ‖ A ‖ M)·a + r`. The secret values are wiped when
//! done. `a_batch_signs_the_bytes_one_by_one_signing_gives` holds the two
//! to the same bytes.
//!
//! `curve25519-dalek` 5 is used here beside the 4 that `ed25519-dalek` 2
//! is built on, because only 5 compresses points together; the two never
//! exchange a value (keys cross as bytes).

use curve25519_dalek_5::{EdwardsPoint, Scalar};
use ed25519_dalek::SigningKey;
use sha2::{Digest, Sha512};
use zeroize::Zeroize;

/// An Ed25519 key pair as signing together takes it: the key's 32 secret
/// bytes, the public key they give, and the secret expanded for signing
/// (the clamped scalar and the nonce prefix, both from the SHA-512 of the
/// secret: `ed25519-dalek` expands them again for every signature). The
/// secret parts are wiped when it is dropped. At 128 bytes it is also
/// smaller than a `SigningKey` (224), which a being's writer holds for
/// the land's whole life.
#[derive(Clone)]
pub struct KeyPair {
    secret: [u8; 32],
    public: [u8; 32],
    scalar: Scalar,
    nonce_prefix: [u8; 32],
}

impl Drop for KeyPair {
    fn drop(&mut self) {
        self.secret.zeroize();
        self.scalar.zeroize();
        self.nonce_prefix.zeroize();
    }
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        formatter.debug_struct("KeyPair").field("public", &hex::encode(self.public)).finish_non_exhaustive()
    }
}

impl KeyPair {
    /// The pair `key` is (its public key as it holds it).
    pub fn of(key: &SigningKey) -> KeyPair {
        KeyPair::expanded(key.to_bytes(), key.verifying_key().to_bytes())
    }

    /// The pair of each secret, every public key derived as
    /// `SigningKey::from_bytes` derives it (`a·B` for the clamped scalar
    /// `a`), the points compressed together: one field inversion for all
    /// of them rather than one each, about a fifth of a key's derivation.
    pub fn derive_all(secrets: &[[u8; 32]]) -> Vec<KeyPair> {
        let mut pairs: Vec<KeyPair> = secrets.iter().map(|secret| KeyPair::expanded(*secret, [0; 32])).collect();
        let points: Vec<EdwardsPoint> = pairs.iter().map(|pair| EdwardsPoint::mul_base(&pair.scalar)).collect();
        for (pair, public) in pairs.iter_mut().zip(EdwardsPoint::compress_batch_alloc(&points)) {
            pair.public = public.to_bytes();
        }
        pairs
    }

    /// `secret` with `public`, and the secret expanded.
    fn expanded(mut secret: [u8; 32], public: [u8; 32]) -> KeyPair {
        let mut wide: [u8; 64] = Sha512::digest(secret).into();
        let mut scalar_bytes = [0u8; 32];
        scalar_bytes.copy_from_slice(&wide[..32]);
        let scalar = Scalar::from_bytes_mod_order(curve25519_dalek_5::scalar::clamp_integer(scalar_bytes));
        scalar_bytes.zeroize();
        let mut nonce_prefix = [0u8; 32];
        nonce_prefix.copy_from_slice(&wide[32..]);
        wide.zeroize();
        let pair = KeyPair { secret, public, scalar, nonce_prefix };
        secret.zeroize();
        pair
    }

    /// The public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.public
    }

    /// The secret key's 32 bytes (what a key ring stores).
    pub fn secret_bytes(&self) -> &[u8; 32] {
        &self.secret
    }

    /// The `ed25519-dalek` key of this pair (it derives the public key again).
    pub fn signing_key(&self) -> SigningKey {
        SigningKey::from_bytes(&self.secret)
    }
}

/// The Ed25519 signature of each message by its key pair, in order: byte
/// for byte what `SigningKey::sign` gives.
pub fn sign_each(items: &[(&[u8], &KeyPair)]) -> Vec<[u8; 64]> {
    let mut nonces: Vec<Scalar> = Vec::with_capacity(items.len());
    let mut nonce_points: Vec<EdwardsPoint> = Vec::with_capacity(items.len());
    for (message, pair) in items {
        let mut nonce_hash = Sha512::new();
        nonce_hash.update(pair.nonce_prefix);
        nonce_hash.update(message);
        let mut nonce_wide: [u8; 64] = nonce_hash.finalize().into();
        let nonce = Scalar::from_bytes_mod_order_wide(&nonce_wide);
        nonce_wide.zeroize();
        nonce_points.push(EdwardsPoint::mul_base(&nonce));
        nonces.push(nonce);
    }
    let compressed = EdwardsPoint::compress_batch_alloc(&nonce_points);
    let mut signatures = Vec::with_capacity(items.len());
    for (((message, pair), nonce), nonce_point) in items.iter().zip(&mut nonces).zip(&compressed) {
        let mut challenge_hash = Sha512::new();
        challenge_hash.update(nonce_point.as_bytes());
        challenge_hash.update(pair.public);
        challenge_hash.update(message);
        let challenge = Scalar::from_bytes_mod_order_wide(&challenge_hash.finalize().into());
        let response = challenge * pair.scalar + *nonce;
        nonce.zeroize();
        let mut signature = [0u8; 64];
        signature[..32].copy_from_slice(nonce_point.as_bytes());
        signature[32..].copy_from_slice(response.as_bytes());
        signatures.push(signature);
    }
    signatures
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::Signer;
    use proptest::prelude::*;

    /// The signatures made together are those made one by one, and
    /// verify; the pairs derived together are the keys' own.
    fn check(items: &[(Vec<u8>, [u8; 32])]) {
        let keys: Vec<SigningKey> = items.iter().map(|(_, seed)| SigningKey::from_bytes(seed)).collect();
        let secrets: Vec<[u8; 32]> = items.iter().map(|(_, seed)| *seed).collect();
        let derived = KeyPair::derive_all(&secrets);
        for (key, pair) in keys.iter().zip(&derived) {
            assert_eq!(pair.public_key(), key.verifying_key().to_bytes(), "the public key derived together");
            let of_key = KeyPair::of(key);
            assert_eq!((pair.secret_bytes(), pair.public_key()), (of_key.secret_bytes(), of_key.public_key()));
            assert_eq!(pair.signing_key().to_bytes(), key.to_bytes());
        }
        let borrowed: Vec<(&[u8], &KeyPair)> =
            items.iter().zip(&derived).map(|((message, _), pair)| (message.as_slice(), pair)).collect();
        let together = sign_each(&borrowed);
        assert_eq!(together.len(), items.len());
        for (((message, _), key), signature) in items.iter().zip(&keys).zip(&together) {
            assert_eq!(*signature, key.sign(message).to_bytes(), "the bytes one by one signing gives");
            let signature = ed25519_dalek::Signature::from_bytes(signature);
            assert!(key.verifying_key().verify_strict(message, &signature).is_ok(), "it verifies");
        }
    }

    #[test]
    fn a_key_pair_never_shows_its_secret() {
        let pair = KeyPair::of(&SigningKey::from_bytes(&[0xab; 32]));
        let shown = format!("{pair:?}");
        assert!(!shown.contains("abab"), "{shown}");
        assert!(shown.contains(&hex::encode(pair.public_key())), "{shown}");
    }

    #[test]
    fn a_batch_signs_the_bytes_one_by_one_signing_gives() {
        check(&[]);
        check(&[(Vec::new(), [0; 32])]);
        check(&[(b"one".to_vec(), [1; 32]), (b"one".to_vec(), [1; 32]), (b"two".to_vec(), [2; 32])]);
        let many: Vec<(Vec<u8>, [u8; 32])> =
            (0u8..64).map(|i| (vec![i; usize::from(i) * 7], [i.wrapping_mul(37); 32])).collect();
        check(&many);
    }

    proptest! {
        #[test]
        fn any_batch_signs_as_one_by_one(items in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..300), any::<[u8; 32]>()), 0..20)) {
            check(&items);
        }
    }
}
