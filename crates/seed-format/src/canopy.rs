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

/// Marks the signed bytes of an answer to a request between lands.
pub const CANOPY_ANSWER_DOMAIN: &str = "seed/canopy-answer";

/// A land's answer to a request, as it is signed: the answering land, the
/// land that asked, the request's nonce (an answer is bound to its
/// request: it cannot be replayed to another), the HTTP status and the
/// answer body's BLAKE3. Whoever sits between two lands can neither forge
/// an answer nor change one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanopyAnswer {
    pub from: BeingId,
    pub to: BeingId,
    pub nonce: [u8; 16],
    pub status: u16,
    pub body_digest: Hash32,
}

impl CanopyAnswer {
    pub fn new(from: BeingId, to: BeingId, nonce: [u8; 16], status: u16, body: &[u8]) -> CanopyAnswer {
        CanopyAnswer { from, to, nonce, status, body_digest: blake3_of(body) }
    }

    /// Canonical CBOR of `[domain, version, from, to, nonce, status, body_digest]`.
    pub fn signing_bytes(&self) -> Result<Vec<u8>, CanopyRequestError> {
        let value = Value::Array(vec![
            Value::Text(CANOPY_ANSWER_DOMAIN.to_string()),
            Value::Integer(CANOPY_REQUEST_VERSION.into()),
            Value::Bytes(self.from.0.to_vec()),
            Value::Bytes(self.to.0.to_vec()),
            Value::Bytes(self.nonce.to_vec()),
            Value::Integer(self.status.into()),
            Value::Bytes(self.body_digest.0.to_vec()),
        ]);
        canonical::to_canonical_bytes(&value)
            .map_err(|error| CanopyRequestError::Encoding { reason: error.to_string() })
    }

    pub fn sign(&self, key: &SigningKey) -> Result<[u8; 64], CanopyRequestError> {
        Ok(key.sign(&self.signing_bytes()?).to_bytes())
    }

    /// Whether `signature` is the answering land's key's (strictly) over this answer.
    pub fn check(&self, key: &VerifyingKey, signature: &[u8; 64]) -> Result<(), CanopyRequestError> {
        key.verify_strict(&self.signing_bytes()?, &Signature::from_bytes(signature))
            .map_err(|_| CanopyRequestError::BadSignature)
    }
}

/// Why a land's key history (its reality root's genesis, then each
/// rotation of the root's key) does not prove the key it ends with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyHistoryError {
    #[error("the key history is empty: it must begin with the land's genesis")]
    Empty,
    #[error("fact {index} of the key history does not decode: {reason}")]
    Undecodable { index: usize, reason: String },
    #[error("the key history begins with a {kind} fact, not the land's genesis at seq 0")]
    NotGenesis { kind: String },
    #[error("the genesis is land {genesis}'s, not land {land}'s (a land's id is the BLAKE3 of its genesis)")]
    OtherLand { land: BeingId, genesis: BeingId },
    #[error("fact {index} of the key history is {being}'s, not the land's")]
    OtherReel { index: usize, being: BeingId },
    #[error("fact {index} of the key history is a {kind} fact, not a rotate-key or a move")]
    NotRotation { index: usize, kind: String },
    #[error("fact {index} of the key history is at seq {seq}, not after the one before it (seq {after})")]
    OutOfOrder { index: usize, seq: u64, after: u64 },
    #[error("fact {index} of the key history is not signed by the key before it")]
    NotSignedByPreviousKey { index: usize },
    #[error("fact {index} of the key history names a key that is not an Ed25519 public key")]
    BadKey { index: usize },
}

/// A land's keys as its history proves them: its id, every key in order
/// with the seq of the fact that set it, the current key last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenKeys {
    pub land: BeingId,
    /// (seq of the genesis or rotation, the key it set), oldest first.
    pub keys: Vec<(u64, [u8; 32])>,
    /// The being's moves to other lands (`seed move`): the seq of each
    /// `move` fact and the land it went to, oldest first. A move is also a
    /// key change, so each is in `keys` as well.
    pub moves: Vec<(u64, BeingId)>,
}

impl ProvenKeys {
    /// The key the land signs with now.
    pub fn current(&self) -> ([u8; 32], u64) {
        let (seq, key) = *self.keys.last().expect("a proven history holds the genesis key");
        (key, seq)
    }

    /// Whether `fact` (of this reel) is signed by the key its reel held at
    /// the fact's seq: the genesis's, or the last rotation's before it.
    pub fn signed(&self, fact: &crate::fact::Fact) -> bool {
        let seq = fact.header.seq;
        let key = self.keys.iter().rev().find(|(set_at, _)| *set_at < seq || *set_at == 0).map(|(_, key)| *key);
        fact.header.being == self.land
            && key.and_then(|key| VerifyingKey::from_bytes(&key).ok()).is_some_and(|key| fact.verify_signature(&key))
    }

    /// The land the being lived on at `seq`, if it had moved by then: the
    /// last move before `seq` names it (`None`: its first land).
    pub fn land_at(&self, seq: u64) -> Option<BeingId> {
        self.moves.iter().rev().find(|(moved_at, _)| *moved_at < seq).map(|(_, land)| *land)
    }

    /// Whether `key` is one the land has held.
    pub fn held(&self, key: &[u8; 32]) -> bool {
        self.keys.iter().any(|(_, held)| held == key)
    }
}

/// Verifies a land's key history from its encoded fact envelopes: the
/// first is the genesis whose BLAKE3 is `land`, signed by the key it
/// names; each next is a rotation of the same reel at a later seq, signed
/// by the key before it. What a peer says about itself is proven here or
/// not believed: the receiving land trusts no more than these signatures.
pub fn verify_key_history(land: BeingId, envelopes: &[Vec<u8>]) -> Result<ProvenKeys, KeyHistoryError> {
    use crate::fact::body::{
        GenesisBodyFlowSkipped, MoveBody, RotateKeyBody, KIND_GENESIS, KIND_MOVE, KIND_ROTATE_KEY,
    };
    use crate::fact::Fact;
    let decode = |index: usize, bytes: &[u8]| {
        Fact::decode_envelope(bytes).map_err(|error| KeyHistoryError::Undecodable { index, reason: error.to_string() })
    };
    let first = envelopes.first().ok_or(KeyHistoryError::Empty)?;
    let genesis = decode(0, first)?;
    if genesis.kind() != KIND_GENESIS || genesis.header.seq != 0 {
        return Err(KeyHistoryError::NotGenesis { kind: genesis.kind().to_string() });
    }
    let genesis_land = BeingId(blake3_of(genesis.body()).0);
    if genesis_land != land || genesis.header.being != land {
        return Err(KeyHistoryError::OtherLand { land, genesis: genesis_land });
    }
    let body: GenesisBodyFlowSkipped =
        genesis.body_as().map_err(|error| KeyHistoryError::Undecodable { index: 0, reason: error.to_string() })?;
    let mut key = VerifyingKey::from_bytes(&body.public_key.0).map_err(|_| KeyHistoryError::BadKey { index: 0 })?;
    if !genesis.verify_signature(&key) {
        return Err(KeyHistoryError::NotSignedByPreviousKey { index: 0 });
    }
    let mut proven = ProvenKeys { land, keys: vec![(0, key.to_bytes())], moves: Vec::new() };
    let mut after = 0;
    for (index, bytes) in envelopes.iter().enumerate().skip(1) {
        let fact = decode(index, bytes)?;
        if fact.header.being != land {
            return Err(KeyHistoryError::OtherReel { index, being: fact.header.being });
        }
        if fact.kind() != KIND_ROTATE_KEY && fact.kind() != KIND_MOVE {
            return Err(KeyHistoryError::NotRotation { index, kind: fact.kind().to_string() });
        }
        if fact.header.seq <= after {
            return Err(KeyHistoryError::OutOfOrder { index, seq: fact.header.seq, after });
        }
        if !fact.verify_signature(&key) {
            return Err(KeyHistoryError::NotSignedByPreviousKey { index });
        }
        let undecodable =
            |error: crate::fact::FactError| KeyHistoryError::Undecodable { index, reason: error.to_string() };
        let new_public_key = if fact.kind() == KIND_MOVE {
            let moved: MoveBody = fact.body_as().map_err(undecodable)?;
            proven.moves.push((fact.header.seq, moved.to_land));
            moved.new_public_key
        } else {
            fact.body_as::<RotateKeyBody>().map_err(undecodable)?.new_public_key
        };
        key = VerifyingKey::from_bytes(&new_public_key.0).map_err(|_| KeyHistoryError::BadKey { index })?;
        after = fact.header.seq;
        proven.keys.push((after, key.to_bytes()));
    }
    Ok(proven)
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
    fn an_answer_checks_only_for_its_request_status_and_body() {
        let answer = CanopyAnswer::new(land(2), land(1), [7; 16], 200, b"{\"ok\":true}");
        let signature = answer.sign(&key(2)).expect("signs");
        assert_eq!(answer.check(&key(2).verifying_key(), &signature), Ok(()));
        let changed = [
            CanopyAnswer { nonce: [8; 16], ..answer.clone() },
            CanopyAnswer { status: 400, ..answer.clone() },
            CanopyAnswer::new(land(2), land(1), [7; 16], 200, b"{\"ok\":false}"),
            CanopyAnswer { to: land(3), ..answer.clone() },
        ];
        for other in changed {
            assert_eq!(
                other.check(&key(2).verifying_key(), &signature),
                Err(CanopyRequestError::BadSignature),
                "{other:?}"
            );
        }
        assert_eq!(answer.check(&key(1).verifying_key(), &signature), Err(CanopyRequestError::BadSignature));
        // A request's signature over the same fields is never an answer's.
        let request = CanopyRequest::new("POST", "/x", land(2), land(1), NOW_MS, [7; 16], b"{\"ok\":true}");
        let request_signature = request.sign(&key(2)).expect("signs");
        assert_eq!(answer.check(&key(2).verifying_key(), &request_signature), Err(CanopyRequestError::BadSignature));
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

    /// A land's genesis and its rotations, signed as the land signs them.
    fn history(rotations: &[(u8, u8)]) -> (BeingId, Vec<Vec<u8>>) {
        use crate::fact::body::{Cognition, GenesisBody, RotateKeyBody, KIND_GENESIS, KIND_ROTATE_KEY};
        use crate::fact::{Fact, FactId, PublicKeyBytes};
        let genesis_body = GenesisBody {
            name: "reality".into(),
            parent: None,
            cognition: Cognition::Scripted,
            public_key: PublicKeyBytes::of(&key(1)),
            role_flow: Vec::new(),
            default_role: "idle".into(),
            home_space: "/".into(),
            nonce: [3; 16],
        };
        let body = canonical::to_canonical_bytes(&genesis_body).expect("encodes");
        let land = BeingId(blake3_of(&body).0);
        let genesis = Fact::seal(land, 0, FactId::ZERO, 1, KIND_GENESIS, body, &key(1)).expect("seals");
        let mut envelopes = vec![genesis.encode_envelope()];
        for (index, (signer, next)) in rotations.iter().enumerate() {
            let body =
                canonical::to_canonical_bytes(&RotateKeyBody { new_public_key: PublicKeyBytes::of(&key(*next)) })
                    .expect("encodes");
            let seq = 10 * (index as u64 + 1);
            let fact = Fact::seal(land, seq, FactId::ZERO, 1, KIND_ROTATE_KEY, body, &key(*signer)).expect("seals");
            envelopes.push(fact.encode_envelope());
        }
        (land, envelopes)
    }

    #[test]
    fn a_key_history_proves_each_key_only_when_the_key_before_signed_it() {
        let (land, envelopes) = history(&[(1, 2), (2, 3)]);
        let proven = verify_key_history(land, &envelopes).expect("a true history");
        assert_eq!(proven.current(), (key(3).verifying_key().to_bytes(), 20));
        assert!(proven.held(&key(1).verifying_key().to_bytes()));
        // A rotation signed by the key it introduces (a thief's rotation).
        let (land, envelopes) = history(&[(1, 2), (3, 3)]);
        assert_eq!(verify_key_history(land, &envelopes), Err(KeyHistoryError::NotSignedByPreviousKey { index: 2 }));
        // Someone else's genesis under this land's id.
        let (genesis_land, envelopes) = history(&[]);
        assert_eq!(
            verify_key_history(BeingId([9; 32]), &envelopes),
            Err(KeyHistoryError::OtherLand { land: BeingId([9; 32]), genesis: genesis_land })
        );
        // Rotations out of order, the genesis missing, nothing at all, junk.
        let (land, mut envelopes) = history(&[(1, 2), (2, 3)]);
        envelopes.swap(1, 2);
        assert!(matches!(verify_key_history(land, &envelopes), Err(KeyHistoryError::NotSignedByPreviousKey { .. })));
        let (land, envelopes) = history(&[(1, 2)]);
        assert!(matches!(verify_key_history(land, &envelopes[1..]), Err(KeyHistoryError::NotGenesis { .. })));
        assert_eq!(verify_key_history(land, &[]), Err(KeyHistoryError::Empty));
        assert!(matches!(
            verify_key_history(land, &[b"junk".to_vec()]),
            Err(KeyHistoryError::Undecodable { index: 0, .. })
        ));
        let (land, mut envelopes) = history(&[(1, 2)]);
        let genesis = envelopes[0].clone();
        envelopes.push(genesis);
        assert!(matches!(verify_key_history(land, &envelopes), Err(KeyHistoryError::NotRotation { index: 2, .. })));
    }

    /// A `move` at `seq` to `to`, handing the key over from `signer` to `next`.
    fn moved(land: BeingId, seq: u64, to: u8, signer: u8, next: u8) -> Vec<u8> {
        use crate::fact::body::{MoveBody, KIND_MOVE};
        use crate::fact::{Fact, FactId, PublicKeyBytes};
        let body = MoveBody {
            to_land: BeingId([to; 32]),
            to_url: "http://127.0.0.1:7777".into(),
            new_public_key: PublicKeyBytes::of(&key(next)),
            qualities: Default::default(),
        };
        let body = canonical::to_canonical_bytes(&body).expect("encodes");
        Fact::seal(land, seq, FactId::ZERO, 1, KIND_MOVE, body, &key(signer)).expect("seals").encode_envelope()
    }

    #[test]
    fn a_move_in_a_key_history_hands_the_key_over_and_names_the_land_that_speaks_for_the_being_after_it() {
        let (being, mut envelopes) = history(&[(1, 2)]);
        envelopes.push(moved(being, 15, 7, 2, 4));
        envelopes.push(moved(being, 30, 8, 4, 5));
        let proven = verify_key_history(being, &envelopes).expect("a true history");
        assert_eq!(proven.current(), (key(5).verifying_key().to_bytes(), 30));
        assert_eq!(proven.moves, vec![(15, BeingId([7; 32])), (30, BeingId([8; 32]))]);
        for (seq, lives_on) in [(1, None), (15, None), (16, Some(7)), (30, Some(7)), (31, Some(8))] {
            assert_eq!(proven.land_at(seq), lives_on.map(|byte| BeingId([byte; 32])), "at seq {seq}");
        }
        // A move signed by a key the being no longer held.
        let (being, mut envelopes) = history(&[(1, 2)]);
        envelopes.push(moved(being, 15, 7, 1, 4));
        assert_eq!(verify_key_history(being, &envelopes), Err(KeyHistoryError::NotSignedByPreviousKey { index: 2 }));
    }
}
