//! Facts: the signed, hash-linked records a reel is made of.
//!
//! The byte format is specified in `docs/reel-format.md`; this module is its
//! only implementation. A [`Fact`] always holds the exact bytes it was decoded
//! from (or encoded to): signatures and ids are computed over those bytes and
//! never over a re-serialisation.

pub mod body;
mod ids;
mod sign_together;

pub use ids::{blake3_of, BeingId, FactId, GatheringHasher, Hash32, PublicKeyBytes, HASH_GATHER_BYTES};
pub use sign_together::{sign_each, KeyPair};

use crate::canonical::{self, as_u64, CanonicalError};
use ciborium::value::Value;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};

/// Version of the fact format written in position 0 of every header.
pub const FACT_FORMAT_VERSION: u64 = 1;
/// Domain-separation tag in position 1: these bytes are a seed fact header and
/// nothing else, so a signature over them can never be replayed as something else.
pub const FACT_DOMAIN_TAG: &str = "seed/fact";
/// Hard ceiling on a body, whatever the land's configured limit: no decoder
/// allocates more than this for one fact.
pub const FACT_BODY_BYTES_CEILING: usize = 1024 * 1024;
/// Number of fields in the fixed-position header array.
const HEADER_FIELDS: usize = 9;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactError {
    #[error("{part}: {source}")]
    Cbor { part: &'static str, source: CanonicalError },
    #[error("{part}: {reason}")]
    Shape { part: &'static str, reason: String },
    #[error("unsupported fact format version {version} (this build reads {FACT_FORMAT_VERSION})")]
    Version { version: u64 },
    #[error("wrong domain tag {found:?} (expected {FACT_DOMAIN_TAG:?})")]
    DomainTag { found: String },
    #[error("invalid fact kind {kind:?}: {reason}")]
    Kind { kind: String, reason: String },
    #[error("body is {len} bytes, over the limit of {max} bytes")]
    BodyTooLarge { len: usize, max: usize },
    #[error("header says the body is {declared} bytes but it is {actual}")]
    BodyLength { declared: u64, actual: usize },
    #[error("body hash does not match the header")]
    BodyHash,
    #[error("signature is {len} bytes, expected 64")]
    SignatureLength { len: usize },
}

/// The fixed-position header every signature covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactHeader {
    pub being: BeingId,
    pub seq: u64,
    pub prev: FactId,
    pub stored_time_ms: u64,
    pub kind: String,
    pub body_len: u64,
    pub body_hash: Hash32,
}

impl FactHeader {
    pub fn encode(&self) -> Vec<u8> {
        // Written item by item (the header is hashed and signed for every
        // fact); `header_is_written_as_the_canonical_array` pins it to the
        // generic encoder's output.
        let mut out = Vec::with_capacity(128 + self.kind.len());
        canonical::write_array_head(HEADER_FIELDS as u64, &mut out);
        canonical::write_uint(FACT_FORMAT_VERSION, &mut out);
        canonical::write_text(FACT_DOMAIN_TAG, &mut out);
        canonical::write_bytes(&self.being.0, &mut out);
        canonical::write_uint(self.seq, &mut out);
        canonical::write_bytes(&self.prev.0, &mut out);
        canonical::write_uint(self.stored_time_ms, &mut out);
        canonical::write_text(&self.kind, &mut out);
        canonical::write_uint(self.body_len, &mut out);
        canonical::write_bytes(&self.body_hash.0, &mut out);
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<FactHeader, FactError> {
        match FactHeader::read_canonical(bytes) {
            Some(header) => {
                let version = header.0;
                if version != FACT_FORMAT_VERSION {
                    return Err(FactError::Version { version });
                }
                if header.1 != FACT_DOMAIN_TAG {
                    return Err(FactError::DomainTag { found: header.1.to_string() });
                }
                validate_kind(&header.2.kind)?;
                Ok(header.2)
            }
            // Not the expected canonical layout: the reference decoder names why.
            None => FactHeader::decode_reference(bytes),
        }
    }

    /// The header's fixed layout read straight from canonical bytes (format
    /// version and domain tag returned for the caller to check).
    fn read_canonical(bytes: &[u8]) -> Option<(u64, &str, FactHeader)> {
        let mut reader = canonical::CanonicalReader::new(bytes);
        if reader.array_head()? != HEADER_FIELDS as u64 {
            return None;
        }
        let version = reader.uint()?;
        let tag = reader.text()?;
        let being = BeingId(reader.bytes()?.try_into().ok()?);
        let seq = reader.uint()?;
        let prev = FactId(reader.bytes()?.try_into().ok()?);
        let stored_time_ms = reader.uint()?;
        let kind = reader.text()?.to_string();
        let body_len = reader.uint()?;
        let body_hash = Hash32(reader.bytes()?.try_into().ok()?);
        reader.is_at_end().then_some((
            version,
            tag,
            FactHeader { being, seq, prev, stored_time_ms, kind, body_len, body_hash },
        ))
    }

    fn decode_reference(bytes: &[u8]) -> Result<FactHeader, FactError> {
        let part = "header";
        let value = canonical::decode_canonical(bytes).map_err(|source| FactError::Cbor { part, source })?;
        let Value::Array(fields) = value else {
            return Err(FactError::Shape { part, reason: "not an array".into() });
        };
        if fields.len() != HEADER_FIELDS {
            return Err(FactError::Shape {
                part,
                reason: format!("{} fields, expected {HEADER_FIELDS}", fields.len()),
            });
        }
        let version = field_u64(&fields, 0, "format version")?;
        if version != FACT_FORMAT_VERSION {
            return Err(FactError::Version { version });
        }
        let tag = field_text(&fields, 1, "domain tag")?;
        if tag != FACT_DOMAIN_TAG {
            return Err(FactError::DomainTag { found: tag });
        }
        let kind = field_text(&fields, 6, "kind")?;
        validate_kind(&kind)?;
        Ok(FactHeader {
            being: BeingId(field_bytes32(&fields, 2, "being")?),
            seq: field_u64(&fields, 3, "seq")?,
            prev: FactId(field_bytes32(&fields, 4, "prev")?),
            stored_time_ms: field_u64(&fields, 5, "stored time")?,
            kind,
            body_len: field_u64(&fields, 7, "body length")?,
            body_hash: Hash32(field_bytes32(&fields, 8, "body hash")?),
        })
    }
}

fn field_u64(fields: &[Value], index: usize, name: &str) -> Result<u64, FactError> {
    as_u64(&fields[index]).ok_or_else(|| FactError::Shape {
        part: "header",
        reason: format!("field {index} ({name}) is not an unsigned integer"),
    })
}

fn field_text(fields: &[Value], index: usize, name: &str) -> Result<String, FactError> {
    match &fields[index] {
        Value::Text(text) => Ok(text.clone()),
        _ => Err(FactError::Shape { part: "header", reason: format!("field {index} ({name}) is not a text string") }),
    }
}

fn field_bytes32(fields: &[Value], index: usize, name: &str) -> Result<[u8; 32], FactError> {
    match &fields[index] {
        Value::Bytes(bytes) if bytes.len() == 32 => {
            let mut out = [0u8; 32];
            out.copy_from_slice(bytes);
            Ok(out)
        }
        _ => Err(FactError::Shape {
            part: "header",
            reason: format!("field {index} ({name}) is not a 32-byte byte string"),
        }),
    }
}

/// Kinds are kebab-case words with an optional `namespace:` prefix, so that
/// extensions can add kinds without colliding with the core's.
pub fn validate_kind(kind: &str) -> Result<(), FactError> {
    match crate::names::kebab_name_problem(kind) {
        Some(reason) => Err(FactError::Kind { kind: kind.to_string(), reason: reason.to_string() }),
        None => Ok(()),
    }
}

/// Bytes the canonical encoder produced from a serde value: canonical by
/// construction, so a fact can be built from them without decoding them again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalBody(Vec<u8>);

impl CanonicalBody {
    pub fn encode<T: serde::Serialize + ?Sized>(value: &T) -> Result<CanonicalBody, FactError> {
        canonical::to_canonical_bytes(value)
            .map(CanonicalBody)
            .map_err(|source| FactError::Cbor { part: "body", source })
    }

    /// Bytes a caller hands over as a body: refused unless canonical.
    pub fn checked(bytes: Vec<u8>) -> Result<CanonicalBody, FactError> {
        check_body_form(&bytes)?;
        Ok(CanonicalBody(bytes))
    }

    /// Bytes a writer produced canonical by construction (an act body
    /// written key by key, which its tests hold to the reference encoder's
    /// bytes); debug builds check them anyway.
    pub fn canonical_by_construction(bytes: Vec<u8>) -> CanonicalBody {
        debug_assert!(check_body_form(&bytes).is_ok(), "a writer produced non-canonical bytes");
        CanonicalBody(bytes)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A fact before its signature: everything but the signature is fixed, so
/// its id is known (the id is the hash of the header) and the world can fold
/// it before it is signed. Signing is the costly step; unsigned facts let a
/// caller sign many in parallel and still append them in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsignedFact {
    pub header: FactHeader,
    header_bytes: Vec<u8>,
    body: Vec<u8>,
    id: FactId,
}

impl UnsignedFact {
    /// Builds the header of a new fact. `body` must be canonical CBOR.
    pub fn new(
        being: BeingId,
        seq: u64,
        prev: FactId,
        stored_time_ms: u64,
        kind: &str,
        body: Vec<u8>,
    ) -> Result<UnsignedFact, FactError> {
        check_body_form(&body)?;
        UnsignedFact::from_canonical(being, seq, prev, stored_time_ms, kind, CanonicalBody(body))
    }

    /// As `new`, for a body the canonical encoder produced (no re-check).
    pub fn from_canonical(
        being: BeingId,
        seq: u64,
        prev: FactId,
        stored_time_ms: u64,
        kind: &str,
        body: CanonicalBody,
    ) -> Result<UnsignedFact, FactError> {
        let CanonicalBody(body) = body;
        validate_kind(kind)?;
        if body.len() > FACT_BODY_BYTES_CEILING {
            return Err(FactError::BodyTooLarge { len: body.len(), max: FACT_BODY_BYTES_CEILING });
        }
        debug_assert!(canonical::is_canonical(&body), "CanonicalBody holds canonical bytes");
        let header = FactHeader {
            being,
            seq,
            prev,
            stored_time_ms,
            kind: kind.to_string(),
            body_len: body.len() as u64,
            body_hash: blake3_of(&body),
        };
        let header_bytes = header.encode();
        let id = FactId(*blake3::hash(&header_bytes).as_bytes());
        Ok(UnsignedFact { header, header_bytes, body, id })
    }

    pub fn id(&self) -> FactId {
        self.id
    }

    pub fn body(&self) -> &[u8] {
        &self.body
    }

    pub fn sign(self, key: &SigningKey) -> Fact {
        let signature = key.sign(&self.header_bytes).to_bytes();
        self.with_signature(signature)
    }

    /// Signs with a key pair ([`KeyPair`]): the fact [`UnsignedFact::sign`]
    /// gives with the pair's key.
    pub fn sign_with(self, key: &KeyPair) -> Fact {
        let signature = sign_each(&[(&self.header_bytes, key)])[0];
        self.with_signature(signature)
    }

    /// Signs each fact with its key, all together ([`sign_each`]): the
    /// facts [`UnsignedFact::sign`] gives one by one, for less work.
    pub fn sign_all<K: std::borrow::Borrow<KeyPair>>(facts: Vec<(UnsignedFact, K)>) -> Vec<Fact> {
        let items: Vec<(&[u8], &KeyPair)> =
            facts.iter().map(|(fact, key)| (fact.header_bytes.as_slice(), key.borrow())).collect();
        let signatures = sign_each(&items);
        drop(items);
        facts.into_iter().zip(signatures).map(|((fact, _), signature)| fact.with_signature(signature)).collect()
    }

    /// The fact with `signature`, made earlier over these same header bytes
    /// (a signature made ahead of sealing, `seed_store::land::Presigned`):
    /// nothing is checked here, as nothing is when a fact is decoded;
    /// verification checks every signature.
    pub fn with_signature(self, signature: [u8; 64]) -> Fact {
        Fact { header: self.header, header_bytes: self.header_bytes, body: self.body, signature, id: self.id }
    }
}

impl Fact {
    /// The fact without its signature, and the signature: what a fact
    /// signed ahead of its turn gives back when the turn takes it whole
    /// (`seed_store::land::Presigned`), rather than encoding and hashing
    /// the same header and body again.
    pub fn into_unsigned(self) -> (UnsignedFact, [u8; 64]) {
        let Fact { header, header_bytes, body, signature, id } = self;
        (UnsignedFact { header, header_bytes, body, id }, signature)
    }
}

/// One fact: header, body and signature, with the exact bytes of each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    pub header: FactHeader,
    header_bytes: Vec<u8>,
    body: Vec<u8>,
    signature: [u8; 64],
    id: FactId,
}

/// Whether a fact's body is canonical CBOR, with the error decoding gives.
pub(crate) fn check_body_form(body: &[u8]) -> Result<(), FactError> {
    canonical::check_canonical(body).map_err(|source| FactError::Cbor { part: "body", source })
}

impl Fact {
    /// Builds and signs a new fact. `body` must already be canonical CBOR.
    pub fn seal(
        being: BeingId,
        seq: u64,
        prev: FactId,
        stored_time_ms: u64,
        kind: &str,
        body: Vec<u8>,
        key: &SigningKey,
    ) -> Result<Fact, FactError> {
        Ok(UnsignedFact::new(being, seq, prev, stored_time_ms, kind, body)?.sign(key))
    }

    /// Decodes a stored envelope: `[header bytes, body bytes, signature]`.
    /// Checks canonical encoding of all three layers and that the body matches
    /// the header. The signature is checked separately, against the key the
    /// chain says was current (see `check`).
    pub fn decode_envelope(bytes: &[u8]) -> Result<Fact, FactError> {
        Fact::decode_envelope_deferring_form_of(bytes, |_| false)
    }

    /// [`Fact::decode_envelope`], except that the body's canonical form is
    /// not checked for a kind `defer` names: the caller does it later (see
    /// [`Fact::body_form_error`]), or knows it holds. Land replay defers it
    /// for acts: an act whose recomputation encodes to its stored bytes is
    /// canonical by construction.
    pub fn decode_envelope_deferring_form_of(bytes: &[u8], defer: impl Fn(&str) -> bool) -> Result<Fact, FactError> {
        // The signature is copied out of the envelope only once it is known
        // to be 64 bytes: a fact decoded on every fold, verify and replay
        // makes one allocation fewer.
        let reference;
        let (header_bytes, body, signature_bytes): (Vec<u8>, Vec<u8>, &[u8]) = match Fact::read_envelope(bytes) {
            Some((header, body, signature)) => (header.to_vec(), body.to_vec(), signature),
            None => {
                let (header, body, signature) = Fact::envelope_parts_reference(bytes)?;
                reference = signature;
                (header, body, reference.as_slice())
            }
        };
        let header = FactHeader::decode(&header_bytes)?;
        if body.len() > FACT_BODY_BYTES_CEILING {
            return Err(FactError::BodyTooLarge { len: body.len(), max: FACT_BODY_BYTES_CEILING });
        }
        if header.body_len != body.len() as u64 {
            return Err(FactError::BodyLength { declared: header.body_len, actual: body.len() });
        }
        if blake3_of(&body) != header.body_hash {
            return Err(FactError::BodyHash);
        }
        if !defer(&header.kind) {
            check_body_form(&body)?;
        }
        let Ok(signature) = <[u8; 64]>::try_from(signature_bytes) else {
            // The body's form is checked first, deferred or not, so that
            // the error is the one `decode_envelope` gives.
            check_body_form(&body)?;
            return Err(FactError::SignatureLength { len: signature_bytes.len() });
        };
        let id = FactId(*blake3::hash(&header_bytes).as_bytes());
        Ok(Fact { header, header_bytes, body, signature, id })
    }

    /// The error `decode_envelope` gives a fact whose body is not canonical
    /// CBOR (the check a deferred decoding left out; every other check of
    /// the envelope came first, so it is the error decoding would give).
    pub fn body_form_error(&self) -> Option<FactError> {
        check_body_form(&self.body).err()
    }

    /// The kind and body of a canonical envelope, read in place with nothing
    /// checked (no body hash, no form, no signature): for a reader that only
    /// plans which facts to decode. What it plans counts only once the fact
    /// is decoded in full. `None` where the envelope does not read in place.
    pub fn peek_kind_and_body(bytes: &[u8]) -> Option<(&str, &[u8])> {
        let (header, body, _) = Fact::read_envelope(bytes)?;
        let mut reader = canonical::CanonicalReader::new(header);
        if reader.array_head()? != HEADER_FIELDS as u64 {
            return None;
        }
        // Version, domain tag, being, seq, prev and stored time come first
        // (`FactHeader::read_canonical` reads them).
        reader.uint()?;
        reader.text_bytes()?;
        reader.bytes()?;
        reader.uint()?;
        reader.bytes()?;
        reader.uint()?;
        Some((reader.text()?, body))
    }

    /// The three byte strings of a canonical envelope, read in place.
    fn read_envelope(bytes: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
        let mut reader = canonical::CanonicalReader::new(bytes);
        if reader.array_head()? != 3 {
            return None;
        }
        let parts = (reader.bytes()?, reader.bytes()?, reader.bytes()?);
        reader.is_at_end().then_some(parts)
    }

    /// The envelope through the reference decoder, which names what is wrong.
    #[allow(clippy::type_complexity)]
    fn envelope_parts_reference(bytes: &[u8]) -> Result<(Vec<u8>, Vec<u8>, Vec<u8>), FactError> {
        let part = "envelope";
        let value = canonical::decode_canonical(bytes).map_err(|source| FactError::Cbor { part, source })?;
        let Value::Array(mut items) = value else {
            return Err(FactError::Shape { part, reason: "not an array".into() });
        };
        if items.len() != 3 {
            return Err(FactError::Shape { part, reason: format!("{} items, expected 3", items.len()) });
        }
        let take_bytes = |value: Value, what: &str| match value {
            Value::Bytes(bytes) => Ok(bytes),
            _ => Err(FactError::Shape { part, reason: format!("{what} is not a byte string") }),
        };
        // Three items, checked just above.
        let signature = take_bytes(items.pop().expect("three items"), "signature")?;
        let body = take_bytes(items.pop().expect("three items"), "body")?;
        let header = take_bytes(items.pop().expect("three items"), "header")?;
        Ok((header, body, signature))
    }

    /// Decodes an envelope for index building: the envelope and header are
    /// parsed and the header checked, but the body's hash and encoding are
    /// not (that is `decode_envelope`'s job, and `seed verify` does it for
    /// every record). Bodies the indexes need are decoded strictly by `body_as`.
    pub fn decode_envelope_for_index(bytes: &[u8]) -> Result<Fact, FactError> {
        let part = "envelope";
        let value: Value =
            ciborium::from_reader(bytes).map_err(|_| FactError::Shape { part, reason: "not a CBOR array".into() })?;
        let Value::Array(items) = value else {
            return Err(FactError::Shape { part, reason: "not an array".into() });
        };
        let [Value::Bytes(header_bytes), Value::Bytes(body), Value::Bytes(signature)] =
            <[Value; 3]>::try_from(items).map_err(|_| FactError::Shape { part, reason: "not three items".into() })?
        else {
            return Err(FactError::Shape { part, reason: "items are not byte strings".into() });
        };
        let header = FactHeader::decode(&header_bytes)?;
        let signature: [u8; 64] =
            signature.as_slice().try_into().map_err(|_| FactError::SignatureLength { len: signature.len() })?;
        let id = FactId(*blake3::hash(&header_bytes).as_bytes());
        Ok(Fact { header, header_bytes, body, signature, id })
    }

    /// `[header bytes, body bytes, signature]`, written directly: an array of
    /// three definite byte strings is canonical by construction.
    pub fn encode_envelope(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.header_bytes.len() + self.body.len() + 64 + 12);
        canonical::write_array_head(3, &mut out);
        canonical::write_bytes(&self.header_bytes, &mut out);
        canonical::write_bytes(&self.body, &mut out);
        canonical::write_bytes(&self.signature, &mut out);
        out
    }

    pub fn id(&self) -> FactId {
        self.id
    }
    pub fn header_bytes(&self) -> &[u8] {
        &self.header_bytes
    }
    pub fn body(&self) -> &[u8] {
        &self.body
    }
    pub fn signature(&self) -> &[u8; 64] {
        &self.signature
    }
    pub fn kind(&self) -> &str {
        &self.header.kind
    }

    /// Strict Ed25519 verification of the signature over the header bytes.
    pub fn verify_signature(&self, key: &VerifyingKey) -> bool {
        key.verify_strict(&self.header_bytes, &Signature::from_bytes(&self.signature)).is_ok()
    }

    /// Decodes the body as a typed record.
    pub fn body_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, FactError> {
        canonical::from_canonical_bytes(&self.body).map_err(|source| FactError::Cbor { part: "body", source })
    }
}
