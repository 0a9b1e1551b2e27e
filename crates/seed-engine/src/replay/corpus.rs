//! The replay corpus: whole lands captured in land order, with the digests
//! they must replay to. A change to the evaluator that silently reinterprets
//! history makes a captured land diverge, and the corpus check fails.
//!
//! A capture file is the land's fact envelopes in land order:
//!
//! ```text
//! "seed land capture\n"              magic (18 bytes)
//! format version                     u64, big-endian
//! then per fact: length (u32, big-endian) and the envelope bytes
//! ```
//!
//! The envelopes are the signed facts exactly as stored, so loading a
//! capture into an empty store reproduces the land seq of every fact and
//! verifies every signature again. Reading dispatches on the format version
//! through [`UPCASTERS`]: a capture written in an older format is lifted step
//! by step to the current one; an unknown (newer) version is refused.

use crate::fact::{Fact, Hash32};
use crate::store::{Store, StoreError};
use std::io::Write;

pub const CAPTURE_MAGIC: &[u8] = b"seed land capture\n";
pub const CAPTURE_FORMAT_VERSION: u64 = 1;
/// Largest envelope a capture may hold (a fact body is far smaller).
pub const CAPTURE_ENVELOPE_BYTES_MAX: usize = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("not a land capture (it does not start with {:?})", String::from_utf8_lossy(CAPTURE_MAGIC))]
    NotACapture,
    #[error("capture format {found} is newer than this build reads (format {CAPTURE_FORMAT_VERSION}); upgrade seed")]
    NewerFormat { found: u64 },
    #[error("capture format {found} has no upcaster to format {CAPTURE_FORMAT_VERSION}")]
    NoUpcaster { found: u64 },
    #[error("the capture is truncated at byte {offset} (fact {index})")]
    Truncated { offset: usize, index: usize },
    #[error("fact {index} of the capture is {len} bytes, over {CAPTURE_ENVELOPE_BYTES_MAX}")]
    TooLarge { index: usize, len: usize },
    #[error("fact {index} of the capture does not decode: {reason}")]
    BadFact { index: usize, reason: String },
    #[error("fact {index} of the capture was stored at land seq {land_seq}, not {index}")]
    OutOfOrder { index: usize, land_seq: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("writing the capture: {0}")]
    Io(#[from] std::io::Error),
}

/// Lifts the fact envelopes of one capture format to the next; index `i`
/// lifts format `i + 1` to `i + 2`. Format 1 is the first, so none exist
/// yet; a change to the fact format adds one here (see docs/replay.md).
pub type Upcaster = fn(Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, CorpusError>;
pub const UPCASTERS: &[Upcaster] = &[];

/// Writes every fact of `store` in land order; returns the land digest.
pub fn write_capture(store: &dyn Store, out: &mut impl Write) -> Result<Hash32, CorpusError> {
    out.write_all(CAPTURE_MAGIC)?;
    out.write_all(&CAPTURE_FORMAT_VERSION.to_be_bytes())?;
    let mut hasher = land_hasher();
    for entry in store.land_log(0, store.land_len()?)? {
        if let Some(stored) = store.fact_at(&entry)? {
            let envelope = stored.fact.encode_envelope();
            let len = u32::try_from(envelope.len())
                .map_err(|_| CorpusError::TooLarge { index: entry.land_seq as usize, len: envelope.len() })?;
            out.write_all(&len.to_be_bytes())?;
            out.write_all(&envelope)?;
            hasher.update(&envelope);
        }
    }
    Ok(Hash32(*hasher.finalize().as_bytes()))
}

/// The envelopes of a capture, in land order, upcast to the current format.
pub fn read_capture(bytes: &[u8]) -> Result<Vec<Vec<u8>>, CorpusError> {
    let rest = bytes.strip_prefix(CAPTURE_MAGIC).ok_or(CorpusError::NotACapture)?;
    let (version, mut rest) = rest.split_first_chunk::<8>().ok_or(CorpusError::NotACapture)?;
    let version = u64::from_be_bytes(*version);
    let mut envelopes = Vec::new();
    let mut offset = CAPTURE_MAGIC.len() + 8;
    while !rest.is_empty() {
        let index = envelopes.len();
        let (len, tail) = rest.split_first_chunk::<4>().ok_or(CorpusError::Truncated { offset, index })?;
        let len = u32::from_be_bytes(*len) as usize;
        if len > CAPTURE_ENVELOPE_BYTES_MAX {
            return Err(CorpusError::TooLarge { index, len });
        }
        let envelope = tail.get(..len).ok_or(CorpusError::Truncated { offset, index })?;
        envelopes.push(envelope.to_vec());
        rest = &tail[len..];
        offset += 4 + len;
    }
    match version {
        0 => Err(CorpusError::NoUpcaster { found: version }),
        CAPTURE_FORMAT_VERSION => Ok(envelopes),
        found if found > CAPTURE_FORMAT_VERSION => Err(CorpusError::NewerFormat { found }),
        found => {
            let mut lifted = envelopes;
            for upcaster in UPCASTERS.get(found as usize - 1..).ok_or(CorpusError::NoUpcaster { found })? {
                lifted = upcaster(lifted)?;
            }
            Ok(lifted)
        }
    }
}

/// Appends the envelopes to an empty store in order: each lands at the
/// land seq it had. Returns the land digest.
pub fn load_capture(envelopes: &[Vec<u8>], store: &dyn Store) -> Result<Hash32, CorpusError> {
    let mut hasher = land_hasher();
    for (index, envelope) in envelopes.iter().enumerate() {
        let fact = Fact::decode_envelope(envelope)
            .map_err(|error| CorpusError::BadFact { index, reason: error.to_string() })?;
        let appended = store.append(fact)?;
        if appended.land_seq != index as u64 {
            return Err(CorpusError::OutOfOrder { index, land_seq: appended.land_seq });
        }
        hasher.update(envelope);
    }
    Ok(Hash32(*hasher.finalize().as_bytes()))
}

fn land_hasher() -> blake3::Hasher {
    blake3::Hasher::new_derive_key("seed land digest v1")
}
