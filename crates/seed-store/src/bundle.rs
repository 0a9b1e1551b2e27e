//! Reel bundles: one being's whole reel in a self-verifying file
//! (`seed export` / `seed import`). Format in `docs/reel-format.md`.
//!
//! A bundle carries every fact from genesis, so it verifies with nothing but
//! itself: the genesis body gives the being id and first key, each fact its
//! signature, rotations the later keys. A digest over the whole content and a
//! declared head catch truncation and careless edits; the signatures catch the
//! rest. Import verifies all of it (strictly, one signature at a time, every
//! body held to the schema this build writes it by and to the importing
//! land's body limit) before it writes anything.

use crate::canonical::{self, as_u64, uint};
use crate::check::{check_reel, BodyRules, Problem, SignatureMode};
use crate::fact::body::GenesisBody;
use crate::fact::{BeingId, Fact, FactId, Hash32};
use crate::land::{Land, LandError};
use crate::progress::{NoProgress, Progress};
use crate::schemas::HigherSchemas;
use crate::store::{RawRecord, StoreError};
use ciborium::value::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

pub const BUNDLE_FORMAT: &str = "seed-reel-bundle";
pub const BUNDLE_VERSION: u64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} is {len} bytes, over the limit of {max} bytes (bundle_bytes_max)")]
    TooLarge { path: PathBuf, len: u64, max: u64 },
    #[error("not a seed reel bundle: {reason}")]
    NotABundle { reason: String },
    #[error("truncated bundle: the file ends before the bundle does")]
    Truncated,
    #[error("foreign format {found:?}: this is not a seed reel bundle")]
    ForeignFormat { found: String },
    #[error("bundle version {version} is not supported (this build reads version {BUNDLE_VERSION})")]
    UnsupportedVersion { version: u64 },
    #[error("malformed bundle: {reason}")]
    Malformed { reason: String },
    #[error("the bundle's digest does not match its content (altered or truncated)")]
    DigestMismatch,
    #[error("the bundle declares head seq {claimed_seq} but its facts end at seq {actual_seq}")]
    HeadMismatch { claimed_seq: u64, actual_seq: u64 },
    #[error("the bundle's reel fails verification ({count} problem(s)); first: {first}")]
    Invalid { count: usize, first: Box<Problem> },
    #[error("being {being} already lives here and its fact at seq {seq} differs from the bundle's ({local} here, {bundled} in the bundle), both signed by the being's key: a fork. The bundle's fact is kept as a fork proof and the reel will not be extended until the fork is resolved; no fact was imported")]
    Fork { being: BeingId, seq: u64, local: FactId, bundled: FactId },
    #[error("being {being} already lives here with a fork proof, and the bundle's fact at seq {seq} differs from the one here: the reel stays frozen until the fork is resolved; nothing was imported")]
    AlreadyForked { being: BeingId, seq: u64 },
    #[error("the name @{name} is taken here by another being ({holder}); nothing was imported")]
    NameTaken { name: String, holder: BeingId },
    #[error("the reel of {being} in this land fails verification; refusing to export it: {first}")]
    LocalInvalid { being: BeingId, first: Box<Problem> },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Land(#[from] LandError),
}

/// A decoded bundle: the being and its facts' exact envelope bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    pub being: BeingId,
    pub head_seq: u64,
    pub head_id: FactId,
    pub envelopes: Vec<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    pub being: BeingId,
    pub name: String,
    pub imported: u64,
    pub already_present: u64,
}

fn content_digest(being: &BeingId, head_seq: u64, head_id: &FactId, envelopes: &[Vec<u8>]) -> Hash32 {
    let mut hasher = blake3::Hasher::new();
    hasher.update(BUNDLE_FORMAT.as_bytes());
    hasher.update(being.as_bytes());
    hasher.update(&head_seq.to_be_bytes());
    hasher.update(head_id.as_bytes());
    for envelope in envelopes {
        hasher.update(&(envelope.len() as u64).to_be_bytes());
        hasher.update(envelope);
    }
    Hash32(*hasher.finalize().as_bytes())
}

impl Bundle {
    pub fn encode(&self) -> Vec<u8> {
        let digest = content_digest(&self.being, self.head_seq, &self.head_id, &self.envelopes);
        let text = |key: &str| Value::Text(key.to_string());
        let value = Value::Map(vec![
            (text("format"), text(BUNDLE_FORMAT)),
            (text("version"), uint(BUNDLE_VERSION)),
            (text("being"), Value::Bytes(self.being.0.to_vec())),
            (text("head_seq"), uint(self.head_seq)),
            (text("head_id"), Value::Bytes(self.head_id.0.to_vec())),
            (text("facts"), Value::Array(self.envelopes.iter().map(|bytes| Value::Bytes(bytes.clone())).collect())),
            (text("digest"), Value::Bytes(digest.0.to_vec())),
        ]);
        canonical::encode_value(&value).expect("a bundle holds only bytes, texts and integers")
    }

    /// Decodes and checks the framing (format, version, digest, head claim).
    /// The facts themselves are verified by `verify`.
    pub fn decode(bytes: &[u8]) -> Result<Bundle, BundleError> {
        match bytes.first() {
            None => return Err(BundleError::NotABundle { reason: "the file is empty".into() }),
            // A bundle is a definite-length CBOR map (major type 5).
            Some(first) if first >> 5 != 5 || first & 0x1f > 27 => {
                return Err(BundleError::NotABundle { reason: "it does not start with a CBOR map".into() })
            }
            Some(_) => {}
        }
        let value = canonical::decode_canonical(bytes).map_err(|error| match error {
            canonical::CanonicalError::Malformed { reason } if reason.contains("end of input") => {
                BundleError::Truncated
            }
            other => BundleError::NotABundle { reason: other.to_string() },
        })?;
        let Value::Map(entries) = value else {
            return Err(BundleError::NotABundle { reason: "the file is CBOR but not a map".into() });
        };
        let field = |name: &str| {
            entries.iter().find_map(|(key, item)| match key {
                Value::Text(key) if key == name => Some(item),
                _ => None,
            })
        };
        match field("format") {
            Some(Value::Text(format)) if format == BUNDLE_FORMAT => {}
            Some(Value::Text(format)) => return Err(BundleError::ForeignFormat { found: format.clone() }),
            _ => return Err(BundleError::NotABundle { reason: "no \"format\" field".into() }),
        }
        let version = field("version").and_then(as_u64).ok_or_else(|| malformed("no version"))?;
        if version != BUNDLE_VERSION {
            return Err(BundleError::UnsupportedVersion { version });
        }
        let known = ["format", "version", "being", "head_seq", "head_id", "facts", "digest"];
        if let Some((key, _)) =
            entries.iter().find(|(key, _)| !matches!(key, Value::Text(key) if known.contains(&key.as_str())))
        {
            return Err(malformed(&format!("unknown field {key:?}")));
        }
        let bytes32 = |name: &str| match field(name) {
            Some(Value::Bytes(bytes)) if bytes.len() == 32 => Ok(bytes.clone()),
            _ => Err(malformed(&format!("\"{name}\" is not 32 bytes"))),
        };
        let being = BeingId::from_slice(&bytes32("being")?).ok_or_else(|| malformed("being"))?;
        let head_id = FactId::from_slice(&bytes32("head_id")?).ok_or_else(|| malformed("head_id"))?;
        let digest = Hash32::from_slice(&bytes32("digest")?).ok_or_else(|| malformed("digest"))?;
        let head_seq = field("head_seq").and_then(as_u64).ok_or_else(|| malformed("no head_seq"))?;
        let Some(Value::Array(items)) = field("facts") else {
            return Err(malformed("no \"facts\" array"));
        };
        let mut envelopes = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            match item {
                Value::Bytes(bytes) => envelopes.push(bytes.clone()),
                _ => return Err(malformed(&format!("fact {index} is not a byte string"))),
            }
        }
        if envelopes.is_empty() {
            return Err(malformed("the bundle holds no facts"));
        }
        if content_digest(&being, head_seq, &head_id, &envelopes) != digest {
            return Err(BundleError::DigestMismatch);
        }
        let actual_seq = envelopes.len() as u64 - 1;
        if head_seq != actual_seq {
            return Err(BundleError::HeadMismatch { claimed_seq: head_seq, actual_seq });
        }
        Ok(Bundle { being, head_seq, head_id, envelopes })
    }

    /// Verifies the reel in the bundle, strictly, every body held to
    /// `rules` (the importing land's); returns the decoded facts.
    pub fn verify(&self, rules: BodyRules<'_>) -> Result<Vec<Fact>, BundleError> {
        let records: Vec<RawRecord> = self
            .envelopes
            .iter()
            .enumerate()
            .map(|(seq, envelope)| RawRecord {
                being: self.being,
                seq: seq as u64,
                land_seq: Some(0),
                envelope: envelope.clone(),
            })
            .collect();
        let report = check_reel(self.being, &records, SignatureMode::Strict, rules);
        if let Some(first) = report.problems.first() {
            return Err(BundleError::Invalid { count: report.problems.len(), first: Box::new(first.clone()) });
        }
        let facts: Vec<Fact> = self
            .envelopes
            .iter()
            .map(|envelope| Fact::decode_envelope(envelope).map_err(|error| malformed(&error.to_string())))
            .collect::<Result<_, _>>()?;
        let last = facts.last().map(Fact::id).unwrap_or(FactId::ZERO);
        if last != self.head_id {
            return Err(malformed("head_id is not the id of the last fact"));
        }
        Ok(facts)
    }
}

/// Hands a verified rival of a stored fact to the store, which keeps it as
/// a fork proof (and freezes the reel) instead of appending it; the error
/// the import then ends with.
fn keep_fork_proof(store: &dyn crate::store::Store, rival: Fact, local: FactId) -> BundleError {
    let (being, seq, bundled) = (rival.header.being, rival.header.seq, rival.id());
    match store.submit(rival).wait() {
        Err(StoreError::BeingForked { .. }) => BundleError::AlreadyForked { being, seq },
        Err(StoreError::Fork { kept, rival, .. }) => BundleError::Fork { being, seq, local: kept, bundled: rival },
        Err(other) => BundleError::Store(other),
        // A store never appends a second fact at a seq it holds; should one
        // ever acknowledge it, the conflict is still what the import names.
        Ok(_) => BundleError::Fork { being, seq, local, bundled },
    }
}

fn malformed(reason: &str) -> BundleError {
    BundleError::Malformed { reason: reason.to_string() }
}

/// Writes a being's whole reel to `path` after verifying it, its bodies held
/// to `schemas` (the world layer's `CoreSchemas` for this build).
pub fn export(land: &Land, being: &BeingId, path: &Path, schemas: &dyn HigherSchemas) -> Result<u64, BundleError> {
    let store = land.store();
    let records = store.raw_records(Some(being))?;
    let rules = BodyRules { body_bytes_max: land.limits().fact_body_bytes_max, schemas };
    let report = check_reel(*being, &records, SignatureMode::Strict, rules);
    if let Some(first) = report.problems.first() {
        return Err(BundleError::LocalInvalid { being: *being, first: Box::new(first.clone()) });
    }
    let head = report.head.ok_or(LandError::UnknownBeing { being: *being })?;
    let (head_seq, head_id) = (head.seq, head.id);
    let bundle =
        Bundle { being: *being, head_seq, head_id, envelopes: records.into_iter().map(|r| r.envelope).collect() };
    let bytes = bundle.encode();
    let temporary = path.with_extension("partial");
    let io = |source| BundleError::Io { path: path.to_path_buf(), source };
    std::fs::write(&temporary, &bytes).map_err(io)?;
    std::fs::rename(&temporary, path).map_err(io)?;
    Ok(head_seq + 1)
}

/// Reads, verifies and imports a bundle. Nothing is written unless the whole
/// bundle verifies and agrees with what the land already holds, with one
/// exception: a verified bundle whose fact differs from the land's at the
/// same seq proves that the being's key signed both, and that evidence is
/// kept (SPEC §3.3): the bundle's fact is stored as a fork proof, which
/// freezes the reel, and nothing else is written.
///
/// Bodies are held to `schemas` (the world layer's `CoreSchemas` for this
/// build) and to this land's body limit.
pub fn import(land: &Land, path: &Path, schemas: &dyn HigherSchemas) -> Result<ImportReport, BundleError> {
    import_watched(land, path, schemas, &NoProgress)
}

/// [`import`], telling `progress` how many facts were verified and stored.
pub fn import_watched(
    land: &Land,
    path: &Path,
    schemas: &dyn HigherSchemas,
    progress: &dyn Progress,
) -> Result<ImportReport, BundleError> {
    let io = |source| BundleError::Io { path: path.to_path_buf(), source };
    let max = land.limits().bundle_bytes_max;
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > max {
        return Err(BundleError::TooLarge { path: path.to_path_buf(), len, max });
    }
    let mut bytes = Vec::with_capacity(len as usize);
    std::fs::File::open(path).map_err(io)?.take(max + 1).read_to_end(&mut bytes).map_err(io)?;
    let bundle = Bundle::decode(&bytes)?;
    // Held to every schema this build writes by and to this land's body
    // limit: a reel the land could not have written is not imported.
    let rules = BodyRules { body_bytes_max: land.limits().fact_body_bytes_max, schemas };
    progress.stage("verifying the bundle", bundle.envelopes.len() as u64, "facts");
    let facts = bundle.verify(rules)?;
    progress.advance(facts.len() as u64);
    let genesis: GenesisBody = facts[0].body_as().map_err(|error| malformed(&error.to_string()))?;
    let store = land.store();
    let local = store.head(&bundle.being)?;
    let already_present = match local {
        Some(head) => {
            let overlap = (head.seq + 1).min(facts.len() as u64);
            let stored = store.reel(&bundle.being, 0, overlap)?;
            let conflict = facts.iter().zip(stored.iter()).find(|(fact, stored)| fact.id() != stored.fact.id());
            if let Some((rival, stored)) = conflict {
                return Err(keep_fork_proof(store, rival.clone(), stored.fact.id()));
            }
            overlap
        }
        None => {
            if let Some(holder) = store.beings_named(&genesis.name)?.into_iter().find(|other| *other != bundle.being) {
                return Err(BundleError::NameTaken { name: genesis.name, holder });
            }
            0
        }
    };
    let tickets: Vec<_> = facts.into_iter().skip(already_present as usize).map(|fact| store.submit(fact)).collect();
    let imported = tickets.len() as u64;
    progress.stage("storing facts", imported, "facts");
    for ticket in tickets {
        ticket.wait()?;
        progress.advance(1);
    }
    Ok(ImportReport { being: bundle.being, name: genesis.name, imported, already_present })
}
