//! What a land signs when it speaks to another (Canopy, issue 49): the bytes
//! of one request between lands, signed with the sending land's key (its
//! reality root's), and the checks a receiving land makes before it reads
//! anything else of the request.
//!
//! The signed bytes are canonical CBOR of an array that starts with a
//! domain tag and a version, so a signature over a request can never be
//! taken for a signature over a fact's header, a snapshot or an answer,
//! and the other way round. They name both lands (`from`, `to`): a request
//! captured on its way to one land is refused by any other. A timestamp
//! and a nonce let the receiver refuse a request replayed later (the
//! receiver keeps the nonces it saw within the window; that memory is the
//! edge's, not this module's). The body is bound by its BLAKE3.
//!
//! Here is only what is pure: no clock (the caller says what time it is),
//! no key ring, no network. Nothing of a request reaches a fact.

use crate::canonical;
use crate::fact::{blake3_of, BeingId, Hash32};
use ciborium::value::Value;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};

/// Marks the signed bytes of a request between lands.
pub const CANOPY_REQUEST_DOMAIN: &str = "seed/canopy-request";
/// The request format this build signs and reads.
pub const CANOPY_REQUEST_VERSION: u64 = 1;
/// How far a request's timestamp may be from the receiver's clock, either
/// way, in milliseconds: older is a replay, newer a clock to fix.
pub const CANOPY_REQUEST_WINDOW_MS: u64 = 60_000;

/// One request from land `from` to land `to`, as it is signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanopyRequest {
    /// The HTTP method, upper case (`POST`).
    pub method: String,
    /// The path and query the request was sent to (`/canopy/v1/hello`).
    pub path: String,
    /// The sending land's id (its reality root's being id).
    pub from: BeingId,
    /// The land it is addressed to.
    pub to: BeingId,
    /// The sender's wall clock when it signed, in milliseconds since the epoch.
    pub timestamp_ms: u64,
    /// Sixteen random bytes: the same request twice is refused.
    pub nonce: [u8; 16],
    /// BLAKE3 of the request's body bytes.
    pub body_digest: Hash32,
}

/// Why a request between lands is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanopyRequestError {
    #[error("the request's signature is not the sending land's key's over its bytes")]
    BadSignature,
    #[error("the request's body is not the one it was signed with")]
    BodyDiffers,
    #[error("the request is addressed to land {to}, not this land {this}")]
    NotForThisLand { to: BeingId, this: BeingId },
    #[error(
        "the request was signed at {timestamp_ms} ms, more than {window_ms} ms before this land's clock ({now_ms} ms): a replay, or a clock far behind"
    )]
    Stale { timestamp_ms: u64, now_ms: u64, window_ms: u64 },
    #[error(
        "the request was signed at {timestamp_ms} ms, more than {window_ms} ms after this land's clock ({now_ms} ms): the sender's clock is ahead"
    )]
    FromTheFuture { timestamp_ms: u64, now_ms: u64, window_ms: u64 },
    #[error("the request's signed bytes do not encode: {reason}")]
    Encoding { reason: String },
}

impl CanopyRequest {
    /// A request for `body`, from `from` to `to`.
    pub fn new(
        method: &str,
        path: &str,
        from: BeingId,
        to: BeingId,
        timestamp_ms: u64,
        nonce: [u8; 16],
        body: &[u8],
    ) -> CanopyRequest {
        CanopyRequest {
            method: method.to_string(),
            path: path.to_string(),
            from,
            to,
            timestamp_ms,
            nonce,
            body_digest: blake3_of(body),
        }
    }

    /// The bytes signed: canonical CBOR of `[domain, version, method, path,
    /// from, to, timestamp_ms, nonce, body_digest]`.
    pub fn signing_bytes(&self) -> Result<Vec<u8>, CanopyRequestError> {
        let value = Value::Array(vec![
            Value::Text(CANOPY_REQUEST_DOMAIN.to_string()),
            Value::Integer(CANOPY_REQUEST_VERSION.into()),
            Value::Text(self.method.clone()),
            Value::Text(self.path.clone()),
            Value::Bytes(self.from.0.to_vec()),
            Value::Bytes(self.to.0.to_vec()),
            Value::Integer(self.timestamp_ms.into()),
            Value::Bytes(self.nonce.to_vec()),
            Value::Bytes(self.body_digest.0.to_vec()),
        ]);
        canonical::to_canonical_bytes(&value)
            .map_err(|error| CanopyRequestError::Encoding { reason: error.to_string() })
    }

    /// The sending land's signature over the request.
    pub fn sign(&self, key: &SigningKey) -> Result<[u8; 64], CanopyRequestError> {
        Ok(key.sign(&self.signing_bytes()?).to_bytes())
    }

    /// Checks a request as its receiver `this` does, at its clock `now_ms`:
    /// addressed to it, within the window, its body the one signed, and
    /// signed (strictly) by `key`, the key the receiver holds for `from`.
    pub fn check(
        &self,
        this: BeingId,
        now_ms: u64,
        body: &[u8],
        key: &VerifyingKey,
        signature: &[u8; 64],
    ) -> Result<(), CanopyRequestError> {
        if self.to != this {
            return Err(CanopyRequestError::NotForThisLand { to: self.to, this });
        }
        let window_ms = CANOPY_REQUEST_WINDOW_MS;
        let (timestamp_ms, now) = (self.timestamp_ms, now_ms);
        if timestamp_ms.saturating_add(window_ms) < now {
            return Err(CanopyRequestError::Stale { timestamp_ms, now_ms, window_ms });
        }
        if now.saturating_add(window_ms) < timestamp_ms {
            return Err(CanopyRequestError::FromTheFuture { timestamp_ms, now_ms, window_ms });
        }
        if blake3_of(body) != self.body_digest {
            return Err(CanopyRequestError::BodyDiffers);
        }
        key.verify_strict(&self.signing_bytes()?, &Signature::from_bytes(signature))
            .map_err(|_| CanopyRequestError::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn land(byte: u8) -> BeingId {
        BeingId([byte; 32])
    }

    const NOW_MS: u64 = 1_800_000_000_000;

    fn request() -> CanopyRequest {
        CanopyRequest::new("POST", "/canopy/v1/hello", land(1), land(2), NOW_MS, [7; 16], b"{\"hello\":1}")
    }

    /// A request signed by land 1's key, changed by `edit` after signing,
    /// checked by land 2 at `now_ms` with `body`.
    fn check(edit: fn(&mut CanopyRequest), now_ms: u64, body: &[u8], expected: Result<(), CanopyRequestError>) {
        let signed = request();
        let signature = signed.sign(&key(1)).expect("signs");
        let mut received = signed.clone();
        edit(&mut received);
        let verdict = received.check(land(2), now_ms, body, &key(1).verifying_key(), &signature);
        assert_eq!(verdict, expected, "{received:?}");
    }

    #[test]
    fn a_request_checks_only_as_it_was_signed_for_this_land_within_the_window() {
        let body: &[u8] = b"{\"hello\":1}";
        let window = CANOPY_REQUEST_WINDOW_MS;
        check(|_| {}, NOW_MS, body, Ok(()));
        check(|_| {}, NOW_MS + window, body, Ok(()));
        check(|_| {}, NOW_MS - window, body, Ok(()));
        check(
            |_| {},
            NOW_MS + window + 1,
            body,
            Err(CanopyRequestError::Stale { timestamp_ms: NOW_MS, now_ms: NOW_MS + window + 1, window_ms: window }),
        );
        check(
            |_| {},
            NOW_MS - window - 1,
            body,
            Err(CanopyRequestError::FromTheFuture {
                timestamp_ms: NOW_MS,
                now_ms: NOW_MS - window - 1,
                window_ms: window,
            }),
        );
        check(|_| {}, NOW_MS, b"{\"hello\":2}", Err(CanopyRequestError::BodyDiffers));
        check(|r| r.to = land(3), NOW_MS, body, Err(CanopyRequestError::NotForThisLand { to: land(3), this: land(2) }));
        // Every other signed field, changed after signing, breaks the signature.
        check(|r| r.method = "GET".into(), NOW_MS, body, Err(CanopyRequestError::BadSignature));
        check(|r| r.path = "/canopy/v1/heartbeat".into(), NOW_MS, body, Err(CanopyRequestError::BadSignature));
        check(|r| r.from = land(9), NOW_MS, body, Err(CanopyRequestError::BadSignature));
        check(|r| r.timestamp_ms += 1, NOW_MS, body, Err(CanopyRequestError::BadSignature));
        check(|r| r.nonce[0] ^= 1, NOW_MS, body, Err(CanopyRequestError::BadSignature));
    }

    #[test]
    fn another_key_or_another_domain_does_not_sign_a_request() {
        let request = request();
        let body: &[u8] = b"{\"hello\":1}";
        let by_other_land = request.sign(&key(5)).expect("signs");
        let verdict = request.check(land(2), NOW_MS, body, &key(1).verifying_key(), &by_other_land);
        assert_eq!(verdict, Err(CanopyRequestError::BadSignature));
        // The same fields signed without the domain tag (as another kind of
        // signed bytes might carry them) are not a request's signature.
        let untagged = canonical::to_canonical_bytes(&Value::Array(vec![
            Value::Text(request.method.clone()),
            Value::Text(request.path.clone()),
        ]))
        .expect("encodes");
        let signature = key(1).sign(&untagged).to_bytes();
        let verdict = request.check(land(2), NOW_MS, body, &key(1).verifying_key(), &signature);
        assert_eq!(verdict, Err(CanopyRequestError::BadSignature));
    }

    #[test]
    fn the_signed_bytes_are_canonical_and_begin_with_the_domain_and_version() {
        let bytes = request().signing_bytes().expect("encodes");
        let value: Value = canonical::from_canonical_bytes(&bytes).expect("canonical");
        let Value::Array(items) = value else { panic!("an array") };
        assert_eq!(items.len(), 9);
        assert_eq!(items[0], Value::Text(CANOPY_REQUEST_DOMAIN.into()));
        assert_eq!(items[1], Value::Integer(CANOPY_REQUEST_VERSION.into()));
        assert_eq!(request().signing_bytes().expect("encodes"), bytes, "the same request, the same bytes");
    }
}
