//! Verification: everything `seed verify` and `seed import` check, as pure
//! functions over stored records (no store writes, no clock).
//!
//! Per reel: canonical decoding of every layer, the record's key against its
//! header, genesis identity (id = BLAKE3 of the genesis body), gap-free seq,
//! prev links, non-decreasing stored time, nothing after `end`, body
//! schemas, and every signature against the key the chain says was current.
//! Per land: the land log (gap-free, each fact exactly once, reel order
//! respected), fork proofs, and the derived indexes against a rebuild.
//!
//! Body schemas are checked in two layers. The foundation's own kinds
//! (`genesis`, `rotate-key`, `end`, `operator-token`, `note`) are read here,
//! with the rules the foundation owns: a genesis names a being by the one
//! being-name rule (`names::being_name_problem`), a rotation hands over to a
//! key that can sign. The kinds of the layers above (`act`, `world`) and
//! their rules on a genesis's plain-data fields (its roleFlow, home space,
//! default role) come from the caller as [`HigherSchemas`] inside
//! [`BodyRules`], with the land's body limit: the world layer's
//! `world::schema::CoreSchemas` is what `seed verify`, `seed import` and
//! replay pass. The foundation never names a higher kind itself.
//!
//! Signatures: the fast path verifies a batch at once; any batch that fails is
//! re-checked one signature at a time with strict verification, so every bad
//! signature is named. Before a signature enters a batch, the properties that
//! strict verification demands and a batch equation does not see are checked
//! directly: the key is not weak (small order), R decodes canonically and is
//! not of small order. `SignatureMode::Strict` skips batching altogether.
//! A verification checkpoint ([`checkpoint`]) may stand in for the signature
//! arithmetic of the facts it covers, and for nothing else.

pub mod checkpoint;

use crate::fact::body::{
    check_known_body, GenesisBodyFlowSkipped, MoveBody, RotateKeyBody, KIND_END, KIND_GENESIS, KIND_MOVE,
    KIND_ROTATE_KEY,
};
use crate::fact::{blake3_of, BeingId, Fact, FactError, FactId, Hash32, PublicKeyBytes};
use crate::names::being_name_problem;
use crate::progress::{NoProgress, Progress};
use crate::store::{DerivedIndexes, Head, LandEntry, RawRecord, Store, StoreError};
use checkpoint::{covered_digest_of_parts, TrustedCheckpoint, VerifiedCheckpoint, COVERED_BYTES_PER_FACT};
use ed25519_dalek::{Signature, VerifyingKey};
use std::collections::BTreeMap;
use std::fmt;

pub use seed_format::schemas::{BodyProblem, BodyRules, HigherSchemas};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureMode {
    /// Batch verification with strict pre-checks, strict re-check on failure.
    Batch { batch_facts: usize },
    /// One strict verification per signature.
    Strict,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProblemKind {
    #[error("undecodable: {reason}")]
    Undecodable { reason: String },
    #[error("stored under seq {stored_seq} of being {stored_being} but its header says seq {header_seq} of being {header_being}")]
    MisfiledRecord { stored_being: BeingId, stored_seq: u64, header_being: BeingId, header_seq: u64 },
    #[error("seq gap: expected seq {expected}, found {found}")]
    SeqGap { expected: u64, found: u64 },
    #[error("bad genesis: {reason}")]
    Genesis { reason: String },
    #[error("prev link broken: prev is {found}, the previous fact is {expected}")]
    PrevLink { expected: FactId, found: FactId },
    #[error("stored time {stored_ms} ms is before the previous fact's {previous_ms} ms")]
    TimeWentBackwards { previous_ms: u64, stored_ms: u64 },
    #[error("a fact follows the being's end fact")]
    AfterEnd,
    #[error("body of kind {kind:?} does not match its schema: {problem}")]
    Body { kind: String, problem: BodyProblem },
    #[error("body of kind {kind:?} is {len} bytes, over the land's limit of {max} bytes (fact_body_bytes_max)")]
    BodyTooLarge { kind: String, len: usize, max: usize },
    #[error("signature does not verify (strict Ed25519) against the being's key")]
    Signature,
    #[error("cannot check the signature: {reason}")]
    NoKey { reason: String },
    #[error("fork: rival fact {rival} competes with the stored fact {kept} at this seq")]
    Fork { kept: FactId, rival: FactId },
    #[error("land log: {reason}")]
    LandLog { reason: String },
    #[error("derived index: {reason} (run `seed reindex`)")]
    Index { reason: String },
}

/// One thing wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub being: Option<BeingId>,
    pub name: Option<String>,
    pub seq: Option<u64>,
    pub kind: ProblemKind,
}

impl fmt::Display for Problem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.being, &self.name) {
            (Some(being), Some(name)) => write!(formatter, "being @{name} ({})", being.short())?,
            (Some(being), None) => write!(formatter, "being {}", being.short())?,
            (None, _) => write!(formatter, "land")?,
        }
        if let Some(seq) = self.seq {
            write!(formatter, " seq {seq}")?;
        }
        write!(formatter, ": {}", self.kind)
    }
}

impl Problem {
    /// As the CLI's `--json` prints it: ids as hex, absent values as null.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "being": self.being.map(|being| being.to_hex()), "name": self.name, "seq": self.seq,
            "kind": self.kind.name(), "reason": self.kind.to_string(), "text": self.to_string(),
        })
    }
}

impl ProblemKind {
    /// A stable name for the kind of problem (camelCase, as JSON keys are).
    pub fn name(&self) -> &'static str {
        match self {
            ProblemKind::Undecodable { .. } => "undecodable",
            ProblemKind::MisfiledRecord { .. } => "misfiledRecord",
            ProblemKind::SeqGap { .. } => "seqGap",
            ProblemKind::Genesis { .. } => "genesis",
            ProblemKind::PrevLink { .. } => "prevLink",
            ProblemKind::TimeWentBackwards { .. } => "timeWentBackwards",
            ProblemKind::AfterEnd => "afterEnd",
            ProblemKind::Body { .. } => "body",
            ProblemKind::BodyTooLarge { .. } => "bodyTooLarge",
            ProblemKind::Signature => "signature",
            ProblemKind::NoKey { .. } => "noKey",
            ProblemKind::Fork { .. } => "fork",
            ProblemKind::LandLog { .. } => "landLog",
            ProblemKind::Index { .. } => "index",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReelReport {
    pub being: Option<BeingId>,
    pub name: Option<String>,
    pub facts: u64,
    pub problems: Vec<Problem>,
    /// The head as the verified facts define it (seq and id of the last
    /// fact, its time, the key that signs next, whether the reel ended).
    pub head: Option<Head>,
    /// The key that would sign the next fact.
    pub current_key: Option<PublicKeyBytes>,
    /// Facts whose signature a verification checkpoint vouched for.
    pub signatures_covered: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LandReport {
    pub beings: u64,
    pub facts: u64,
    pub problems: Vec<Problem>,
    /// Facts whose signature arithmetic a verification checkpoint stood in for.
    pub signatures_covered: u64,
    /// Why a checkpoint that was offered was not used (every signature was checked).
    pub checkpoint_refused: Option<CheckpointRefused>,
    /// From [`verify_land`], for a land without problems: how many facts, and
    /// their [`covered_digest`] in land order (what a new checkpoint would sign).
    pub verified_digest: Option<(u64, Hash32)>,
}

/// A signature waiting for its batch, with the fact it signs.
struct PendingSignature {
    being: BeingId,
    seq: u64,
    header_bytes: Vec<u8>,
    signature: Signature,
    key: VerifyingKey,
}

/// Verifies one reel from its stored records, in seq order.
pub fn check_reel(being: BeingId, records: &[RawRecord], mode: SignatureMode, rules: BodyRules<'_>) -> ReelReport {
    let mut reels = ReelCheckers::new(Checking { mode, rules, covered_below: 0 });
    for record in records {
        let at = RecordAt { being, seq: record.seq, land_seq: record.land_seq };
        reels.record(at, Fact::decode_envelope(&record.envelope).as_ref());
    }
    reels.finish().pop().unwrap_or_else(|| ReelReport { being: Some(being), ..ReelReport::default() })
}

/// Where a record is stored: whose reel, at which seq, at which land seq.
#[derive(Debug, Clone, Copy)]
struct RecordAt {
    being: BeingId,
    seq: u64,
    /// `None`: the record is too short to hold one.
    land_seq: Option<u64>,
}

/// The reels one thread checks, each fed its records in seq order (they may
/// come interleaved, as the land log holds them), and the signatures they
/// wait to check together: a batch gathers signatures across reels, so a
/// land read in land order keeps at most one batch in memory, not one per being.
struct ReelCheckers<'a> {
    checking: Checking<'a>,
    reels: BTreeMap<BeingId, ReelChecker<'a>>,
    pending: Vec<PendingSignature>,
}

impl<'a> ReelCheckers<'a> {
    fn new(checking: Checking<'a>) -> ReelCheckers<'a> {
        ReelCheckers { checking, reels: BTreeMap::new(), pending: Vec::new() }
    }

    fn record(&mut self, at: RecordAt, decoded: Result<&Fact, &FactError>) {
        let checking = self.checking;
        let reel = self.reels.entry(at.being).or_insert_with(|| ReelChecker::new(at.being, checking));
        reel.record(at, decoded, &mut self.pending);
        if let SignatureMode::Batch { batch_facts } = checking.mode {
            if self.pending.len() >= batch_facts.max(1) {
                self.flush_batch();
            }
        }
    }

    fn flush_batch(&mut self) {
        for (being, seq) in failed_signatures(std::mem::take(&mut self.pending)) {
            if let Some(reel) = self.reels.get_mut(&being) {
                reel.problem(seq, ProblemKind::Signature);
            }
        }
    }

    /// Every reel's report, in being order.
    fn finish(mut self) -> Vec<ReelReport> {
        self.flush_batch();
        self.reels.into_values().map(ReelChecker::finish).collect()
    }
}

/// The facts of `pending` whose signatures do not verify: the batch is
/// checked at once and, if it fails, one signature at a time, strictly.
fn failed_signatures(pending: Vec<PendingSignature>) -> Vec<(BeingId, u64)> {
    if pending.is_empty() {
        return Vec::new();
    }
    let messages: Vec<&[u8]> = pending.iter().map(|entry| entry.header_bytes.as_slice()).collect();
    let signatures: Vec<Signature> = pending.iter().map(|entry| entry.signature).collect();
    let keys: Vec<VerifyingKey> = pending.iter().map(|entry| entry.key).collect();
    if ed25519_dalek::verify_batch(&messages, &signatures, &keys).is_ok() {
        return Vec::new();
    }
    // The batch failed: find the culprits one by one, strictly.
    pending
        .iter()
        .filter(|entry| entry.key.verify_strict(&entry.header_bytes, &entry.signature).is_err())
        .map(|entry| (entry.being, entry.seq))
        .collect()
}

/// The first of `signed` (each a fact's header bytes, its signature and the
/// key that must have made it) that does not verify, with why: the keys and
/// the strict pre-checks one by one, then the signatures as one batch and,
/// only if the batch fails, one at a time, strictly. The same rules as
/// `seed verify`, for facts that arrive one batch at a time (`crate::mirror`).
pub(crate) fn first_bad_signature(signed: &[(&[u8], &[u8; 64], PublicKeyBytes)]) -> Option<(usize, &'static str)> {
    let mut keys = Vec::with_capacity(signed.len());
    for (index, (_, signature, key)) in signed.iter().enumerate() {
        match verifying_key(key) {
            Ok(parsed) => keys.push(parsed),
            Err(unusable) => return Some((index, unusable.reason())),
        }
        if !strict_prechecks_hold(signature) {
            return Some((index, "the signature does not verify (strict Ed25519)"));
        }
    }
    let messages: Vec<&[u8]> = signed.iter().map(|(message, _, _)| *message).collect();
    let signatures: Vec<Signature> = signed.iter().map(|(_, signature, _)| Signature::from_bytes(signature)).collect();
    if signed.is_empty() || ed25519_dalek::verify_batch(&messages, &signatures, &keys).is_ok() {
        return None;
    }
    (0..signed.len())
        .find(|&index| keys[index].verify_strict(messages[index], &signatures[index]).is_err())
        .map(|index| (index, "the signature does not verify (strict Ed25519)"))
}

/// How each reel of one verification is checked.
#[derive(Clone, Copy)]
struct Checking<'a> {
    mode: SignatureMode,
    rules: BodyRules<'a>,
    /// Facts at land seqs below this have a checkpoint vouching for their signature.
    covered_below: u64,
}

struct ReelChecker<'a> {
    being: BeingId,
    mode: SignatureMode,
    rules: BodyRules<'a>,
    report: ReelReport,
    expected_seq: u64,
    prev: Option<FactId>,
    last_time_ms: u64,
    key: Option<VerifyingKey>,
    key_problem: Option<String>,
    /// A key the chain made current, not yet decompressed: only a signature
    /// that is actually checked needs the curve point.
    unparsed_key: Option<PublicKeyBytes>,
    ended: bool,
    /// Facts at land seqs below this have a checkpoint vouching for their signature.
    covered_below: u64,
}

impl<'a> ReelChecker<'a> {
    fn new(being: BeingId, checking: Checking<'a>) -> ReelChecker<'a> {
        let Checking { mode, rules, covered_below } = checking;
        ReelChecker {
            being,
            mode,
            rules,
            report: ReelReport { being: Some(being), ..ReelReport::default() },
            expected_seq: 0,
            prev: None,
            last_time_ms: 0,
            key: None,
            key_problem: Some("the genesis key is unknown".into()),
            unparsed_key: None,
            ended: false,
            covered_below,
        }
    }

    fn problem(&mut self, seq: u64, kind: ProblemKind) {
        self.report.problems.push(Problem { being: Some(self.being), name: None, seq: Some(seq), kind });
    }

    /// Checks the reel's next record; a signature to check in a batch is
    /// left in `pending`.
    fn record(&mut self, record: RecordAt, decoded: Result<&Fact, &FactError>, pending: &mut Vec<PendingSignature>) {
        let seq = record.seq;
        self.report.facts += 1;
        if seq != self.expected_seq {
            self.problem(seq, ProblemKind::SeqGap { expected: self.expected_seq, found: seq });
            self.prev = None;
        }
        self.expected_seq = seq + 1;
        if record.land_seq.is_none() {
            self.problem(seq, ProblemKind::LandLog { reason: "record too short to hold its land seq".into() });
        }
        let fact = match decoded {
            Ok(fact) => fact,
            Err(error) => {
                self.problem(seq, ProblemKind::Undecodable { reason: error.to_string() });
                self.prev = None;
                return;
            }
        };
        let header = &fact.header;
        if header.being != record.being || header.seq != seq {
            self.problem(
                seq,
                ProblemKind::MisfiledRecord {
                    stored_being: record.being,
                    stored_seq: seq,
                    header_being: header.being,
                    header_seq: header.seq,
                },
            );
        }
        if seq == 0 {
            self.genesis(fact);
        } else {
            if fact.kind() == KIND_GENESIS {
                self.problem(seq, ProblemKind::Genesis { reason: "a genesis fact after seq 0".into() });
            }
            if let Some(expected) = self.prev {
                if header.prev != expected {
                    self.problem(seq, ProblemKind::PrevLink { expected, found: header.prev });
                }
            }
            if header.stored_time_ms < self.last_time_ms {
                self.problem(
                    seq,
                    ProblemKind::TimeWentBackwards { previous_ms: self.last_time_ms, stored_ms: header.stored_time_ms },
                );
            }
            if self.ended {
                self.problem(seq, ProblemKind::AfterEnd);
            }
        }
        let within_limit = fact.body().len() <= self.rules.body_bytes_max;
        if !within_limit {
            let (len, max) = (fact.body().len(), self.rules.body_bytes_max);
            self.problem(seq, ProblemKind::BodyTooLarge { kind: fact.kind().to_string(), len, max });
        }
        // A reel's genesis is read once, by `genesis`, which also checks it.
        // A body over the limit is named as that alone: it is not read
        // against a schema (it could be up to the format's ceiling).
        if within_limit && !(seq == 0 && fact.kind() == KIND_GENESIS) {
            let problem = match check_known_body(fact.kind(), fact.body()) {
                Err(error) => Some(BodyProblem::Unreadable { reason: error.to_string() }),
                Ok(()) => self.rules.schemas.body_problem(fact.kind(), fact.body()),
            };
            if let Some(problem) = problem {
                self.problem(seq, ProblemKind::Body { kind: fact.kind().to_string(), problem });
            }
        }
        self.signature(seq, record.land_seq, fact, pending);
        if fact.kind() == KIND_ROTATE_KEY || fact.kind() == KIND_MOVE {
            // The rotation (or the move, which hands the reel to its new
            // land's key) is signed by the old key; the new key signs what
            // follows, so a key that can sign nothing ends the reel unseen.
            let new_public_key = match fact.kind() == KIND_MOVE {
                true => fact.body_as::<MoveBody>().map(|body| body.new_public_key),
                false => fact.body_as::<RotateKeyBody>().map(|body| body.new_public_key),
            };
            match new_public_key {
                Ok(new_public_key) => {
                    if let Err(unusable) = verifying_key(&new_public_key) {
                        let problem = unusable.problem("new_public_key");
                        self.problem(seq, ProblemKind::Body { kind: fact.kind().to_string(), problem });
                    }
                    self.set_key(&new_public_key)
                }
                Err(_) => {
                    self.key = None;
                    self.unparsed_key = None;
                    self.key_problem = Some(format!("the {} fact at seq {seq} is unreadable", fact.kind()));
                }
            }
        }
        if fact.kind() == KIND_END {
            self.ended = true;
        }
        self.prev = Some(fact.id());
        self.last_time_ms = self.last_time_ms.max(header.stored_time_ms);
        self.report.head = self.report.current_key.map(|public_key| Head {
            seq,
            id: fact.id(),
            stored_time_ms: header.stored_time_ms,
            public_key,
            ended: self.ended,
        });
    }

    fn genesis(&mut self, fact: &Fact) {
        let header = &fact.header;
        if fact.kind() != KIND_GENESIS {
            self.problem(0, ProblemKind::Genesis { reason: format!("seq 0 has kind {:?}", fact.kind()) });
        }
        if header.prev != FactId::ZERO {
            self.problem(0, ProblemKind::Genesis { reason: "prev of seq 0 is not zero".into() });
        }
        if blake3_of(fact.body()) != Hash32(self.being.0) {
            self.problem(
                0,
                ProblemKind::Genesis { reason: "the being id is not the BLAKE3 of the genesis body".into() },
            );
        }
        // A genesis body is read once: this reading is also its check. Its
        // roleFlow is checked to be a list of CBOR items, as
        // `GenesisBody` takes it, but not built: only the name and the key are kept.
        let genesis = if fact.kind() == KIND_GENESIS {
            GenesisBodyFlowSkipped::read(fact.body()).map_err(|error| error.to_string())
        } else {
            fact.body_as::<GenesisBodyFlowSkipped>().map_err(|error| error.to_string())
        };
        match genesis {
            Ok(genesis) => {
                if fact.kind() == KIND_GENESIS && fact.body().len() <= self.rules.body_bytes_max {
                    let problem = match being_name_problem(&genesis.name) {
                        Some(reason) => Some(BodyProblem::BeingName { name: genesis.name.clone(), reason }),
                        None => self.rules.schemas.body_problem(KIND_GENESIS, fact.body()),
                    };
                    if let Some(problem) = problem {
                        self.problem(0, ProblemKind::Body { kind: KIND_GENESIS.to_string(), problem });
                    }
                }
                self.report.name = Some(genesis.name);
                self.set_key(&genesis.public_key);
            }
            Err(reason) => {
                self.key_problem = Some("the genesis body is unreadable".into());
                if fact.kind() == KIND_GENESIS {
                    // The problem `check_known_body` would name, in its place.
                    let problem = BodyProblem::Unreadable { reason };
                    self.problem(0, ProblemKind::Body { kind: KIND_GENESIS.to_string(), problem });
                }
            }
        }
        self.last_time_ms = header.stored_time_ms;
    }

    fn set_key(&mut self, key: &PublicKeyBytes) {
        self.report.current_key = Some(*key);
        self.unparsed_key = Some(*key);
        self.key = None;
        self.key_problem = None;
    }

    /// The current key as a curve point, decompressed on first use.
    fn current_key(&mut self) -> Option<VerifyingKey> {
        let Some(key) = self.unparsed_key.take() else { return self.key };
        match verifying_key(&key) {
            Ok(parsed) => {
                self.key = Some(parsed);
                self.key_problem = None;
            }
            Err(unusable) => {
                self.key = None;
                self.key_problem = Some(unusable.reason().into());
            }
        }
        self.key
    }

    fn signature(&mut self, seq: u64, land_seq: Option<u64>, fact: &Fact, pending: &mut Vec<PendingSignature>) {
        // A covered fact is byte for byte one that verified (key included)
        // when the checkpoint was made.
        if land_seq.is_some_and(|land_seq| land_seq < self.covered_below) {
            self.report.signatures_covered += 1;
            return;
        }
        let Some(key) = self.current_key() else {
            let reason = self.key_problem.clone().unwrap_or_else(|| "no key".into());
            self.problem(seq, ProblemKind::NoKey { reason });
            return;
        };
        match self.mode {
            SignatureMode::Strict => {
                if !fact.verify_signature(&key) {
                    self.problem(seq, ProblemKind::Signature);
                }
            }
            SignatureMode::Batch { .. } => {
                if !strict_prechecks_hold(fact.signature()) {
                    self.problem(seq, ProblemKind::Signature);
                    return;
                }
                pending.push(PendingSignature {
                    being: self.being,
                    seq,
                    header_bytes: fact.header_bytes().to_vec(),
                    signature: Signature::from_bytes(fact.signature()),
                    key,
                });
            }
        }
    }

    /// The reel's report, once every signature it left pending was checked.
    fn finish(mut self) -> ReelReport {
        let name = self.report.name.clone();
        for problem in &mut self.report.problems {
            problem.name = name.clone();
        }
        self.report.problems.sort_by_key(|problem| problem.seq);
        self.report
    }
}

/// Why a public key can sign nothing that strict verification accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnusableKey {
    /// Of small order: `verify_strict` refuses every signature under it.
    Weak,
    /// Not the encoding of a curve point.
    NotAPoint,
}

impl UnusableKey {
    fn reason(self) -> &'static str {
        match self {
            UnusableKey::Weak => "the being's public key is weak (small order)",
            UnusableKey::NotAPoint => "the being's public key is not a valid curve point",
        }
    }

    fn problem(self, field: &'static str) -> BodyProblem {
        match self {
            UnusableKey::Weak => BodyProblem::WeakKey { field },
            UnusableKey::NotAPoint => BodyProblem::NotAKey { field },
        }
    }
}

/// A public key as the curve point strict verification checks signatures
/// against: one rule for the key that signs now and a key a rotation names.
fn verifying_key(key: &PublicKeyBytes) -> Result<VerifyingKey, UnusableKey> {
    match VerifyingKey::from_bytes(key.as_bytes()) {
        Ok(parsed) if !parsed.is_weak() => Ok(parsed),
        Ok(_) => Err(UnusableKey::Weak),
        Err(_) => Err(UnusableKey::NotAPoint),
    }
}

/// The y-coordinates (sign bit cleared) of the eight points of small order:
/// the identity, the point of order 2, the two of order 4 (y = 0) and the four
/// of order 8 (two y values, each with both signs). A unit test proves the
/// encodings decompress to exactly the eight-torsion subgroup.
const SMALL_ORDER_Y: [[u8; 32]; 5] = [
    [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [
        0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
    ],
    [0; 32],
    [
        0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f, 0x2a, 0x20,
        0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a,
    ],
    [
        0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0, 0xd5, 0xdf,
        0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05,
    ],
];

/// What strict verification demands of R that a batch equation does not see,
/// decided on the bytes alone (no point arithmetic): R's y is a canonical
/// field element (below 2^255 - 19) and R is not one of the small-order
/// points (whatever its sign bit, which also refuses the non-canonical
/// "negative zero" x of y = ±1). Whether R is on the curve at all is left to
/// the batch, whose failure sends every signature to strict verification.
fn strict_prechecks_hold(signature: &[u8; 64]) -> bool {
    let mut y = [0u8; 32];
    y.copy_from_slice(&signature[..32]);
    y[31] &= 0x7f;
    let at_least_p = y[31] == 0x7f && y[1..31].iter().all(|&byte| byte == 0xff) && y[0] >= 0xed;
    !at_least_p && !SMALL_ORDER_Y.contains(&y)
}

/// The records' facts decoded on `threads` threads, in record order.
pub fn decode_records(records: &[RawRecord], threads: usize) -> Vec<Result<Fact, FactError>> {
    crate::parallel::map_in_order(records, threads, |record| Fact::decode_envelope(&record.envelope))
}

fn fork_problems(
    store: &dyn Store,
    being: Option<&BeingId>,
    names: &BTreeMap<BeingId, String>,
) -> Result<Vec<Problem>, StoreError> {
    Ok(store
        .fork_proofs(being)?
        .into_iter()
        .map(|proof| Problem {
            being: Some(proof.being),
            name: names.get(&proof.being).cloned(),
            seq: Some(proof.seq),
            kind: ProblemKind::Fork { kept: proof.kept, rival: proof.rival },
        })
        .collect())
}

/// Verifies one being's reel and its fork proofs.
pub fn verify_being(
    store: &dyn Store,
    being: &BeingId,
    mode: SignatureMode,
    rules: BodyRules<'_>,
) -> Result<ReelReport, StoreError> {
    let records = store.raw_records(Some(being))?;
    let mut report = check_reel(*being, &records, mode, rules);
    let names: BTreeMap<BeingId, String> = report.name.iter().map(|name| (*being, name.clone())).collect();
    report.problems.extend(fork_problems(store, Some(being), &names)?);
    Ok(report)
}

/// Verifies the whole land: every reel, the land log, fork proofs, indexes.
pub fn verify_land(
    store: &dyn Store,
    mode: SignatureMode,
    threads: usize,
    rules: BodyRules<'_>,
) -> Result<LandReport, StoreError> {
    verify_land_watched(store, mode, threads, rules, &NoProgress)
}

/// Land seqs a land-wide verification reads and checks at once (memory
/// holds one slice, not the land).
pub const VERIFY_SLICE_FACTS: usize = 16_384;

/// [`verify_land`], telling `progress` how many facts were checked. The land
/// is read in land order a slice at a time ([`VERIFY_SLICE_FACTS`]), each
/// reel checked as its facts come; what stays in memory across slices is a
/// checker per being and, per fact, its place in the land log and (for the
/// checkpoint's digest) its id and signature.
pub fn verify_land_watched(
    store: &dyn Store,
    mode: SignatureMode,
    threads: usize,
    rules: BodyRules<'_>,
    progress: &dyn Progress,
) -> Result<LandReport, StoreError> {
    let how = HowToVerify { mode, threads, rules, progress };
    verify_land_in_slices(store, how, VERIFY_SLICE_FACTS)
}

/// [`verify_land_watched`], reading slices of `slice_facts` land seqs:
/// the report does not depend on the size (a test holds it to that).
pub fn verify_land_in_slices(
    store: &dyn Store,
    how: HowToVerify<'_>,
    slice_facts: usize,
) -> Result<LandReport, StoreError> {
    verify_land_in_slices_trusting(store, None, how, slice_facts)
}

/// [`verify_land_watched`] with a verification checkpoint: the signatures
/// it covers are not recomputed if it holds (see [`checkpoint`]); when it
/// does not, or when anything is wrong, every signature is checked and the
/// report says why. The land is read a slice at a time, as
/// [`verify_land_in_slices`] reads it.
pub fn verify_land_trusting(
    store: &dyn Store,
    checkpoint: Option<TrustedCheckpoint<'_>>,
    how: HowToVerify<'_>,
) -> Result<LandReport, StoreError> {
    verify_land_in_slices_trusting(store, checkpoint, how, VERIFY_SLICE_FACTS)
}

/// [`verify_land_trusting`], reading slices of `slice_facts` land seqs.
pub fn verify_land_in_slices_trusting(
    store: &dyn Store,
    checkpoint: Option<TrustedCheckpoint<'_>>,
    how: HowToVerify<'_>,
    slice_facts: usize,
) -> Result<LandReport, StoreError> {
    let land_len = store.land_len()?;
    how.progress.stage("checking reels", land_len, "facts");
    let mut verification = LandOrderVerification::new(land_len, checkpoint, how);
    verification.slice_facts = slice_facts;
    let mut from = 0;
    while from < land_len {
        let to = land_len.min(from.saturating_add(slice_facts.max(1) as u64));
        verification.check_read(&store.land_log_with_envelopes(from, to)?);
        how.progress.advance(to - from);
        from = to;
    }
    verification.finish(store)
}

/// A land-wide verification fed the land log in land order, a slice at a
/// time: read from the store by [`verify_land_trusting`], or read and
/// decoded by a caller that needs the facts too (a land-wide replay folds
/// them), so that each fact is read and decoded once.
///
/// Each of the verification's threads checks the reels of its own share of
/// the beings (by the first byte of their ids), each reel in seq order,
/// since the land log keeps every reel's order (a land log that does not is
/// a problem the reel and land log checks both name). What stays in memory
/// across slices is a checker per being and, per fact, its place in the
/// land log and its id and signature.
///
/// With a verification checkpoint, whether it holds depends on the facts it
/// covers and on the root's current key, known once the root's reel was
/// read to its end: the land is checked as if it held, and what it covers
/// is compared once every fact was read. If it does not hold, or the land
/// has problems, the land is read and checked again with every signature,
/// so the report is the one a verification without the checkpoint gives.
pub struct LandOrderVerification<'a> {
    how: HowToVerify<'a>,
    /// The checkpoint the facts are checked as if it held.
    trusted: Option<TrustedCheckpoint<'a>>,
    /// Why the checkpoint offered was refused before reading anything (every
    /// signature is then checked as the land is read).
    refused: Option<CheckpointRefused>,
    shares: Vec<CheckedShare<'a>>,
    /// Each fact's land seq, being and seq, as read.
    land_seqs: Vec<(u64, BeingId, u64)>,
    /// Each readable fact's land seq, id and signature, as read.
    signed: Vec<(u64, [u8; COVERED_BYTES_PER_FACT])>,
    /// The slices a second reading (every signature checked) reads.
    slice_facts: usize,
}

impl<'a> LandOrderVerification<'a> {
    /// A verification of a land of `land_len` facts, trusting `checkpoint`
    /// as far as it holds.
    pub fn new(
        land_len: u64,
        checkpoint: Option<TrustedCheckpoint<'a>>,
        how: HowToVerify<'a>,
    ) -> LandOrderVerification<'a> {
        let refused = checkpoint.and_then(|trusted| {
            let checkpoint = trusted.checkpoint;
            if checkpoint.signer != trusted.root {
                Some(CheckpointRefused::NotTheRoot { signer: checkpoint.signer.short() })
            } else if !checkpoint.signature_holds() {
                Some(CheckpointRefused::BadSignature)
            } else {
                None
            }
        });
        let trusted = checkpoint.filter(|_| refused.is_none());
        let covered_below = trusted.map_or(0, |trusted| trusted.checkpoint.facts);
        let checking = Checking { mode: how.mode, rules: how.rules, covered_below };
        LandOrderVerification {
            how,
            trusted,
            refused,
            shares: (0..how.threads.max(1)).map(|_| CheckedShare::new(checking)).collect(),
            // Sized once: grown by doubling, they would briefly take half as much again.
            land_seqs: Vec::with_capacity(usize::try_from(land_len).unwrap_or(0)),
            signed: Vec::with_capacity(usize::try_from(land_len).unwrap_or(0)),
            slice_facts: VERIFY_SLICE_FACTS,
        }
    }

    /// Checks the next slice of the land log, as the store holds it.
    pub fn check_read(&mut self, read: &[(LandEntry, Vec<u8>)]) {
        self.land_seqs.extend(read.iter().map(|(entry, _)| (entry.land_seq, entry.being, entry.seq)));
        self.in_shares(|share, at, shares| {
            for (entry, envelope) in read.iter().filter(|(entry, _)| share_of(&entry.being, shares) == at) {
                share.check(entry, Fact::decode_envelope(envelope).as_ref());
            }
        });
    }

    /// Checks the next slice of the land log, each fact as
    /// `Fact::decode_envelope` decoded it.
    pub fn check_decoded(&mut self, decoded: &[(&LandEntry, Result<&Fact, &FactError>)]) {
        self.land_seqs.extend(decoded.iter().map(|(entry, _)| (entry.land_seq, entry.being, entry.seq)));
        self.in_shares(|share, at, shares| {
            for (entry, fact) in decoded.iter().filter(|(entry, _)| share_of(&entry.being, shares) == at) {
                share.check(entry, *fact);
            }
        });
    }

    /// Runs `check` for every share, each on its own thread, and gathers
    /// what each found signed. (Gathered here, in memory sized once, rather
    /// than grown by doubling on threads that come and go a slice at a time.)
    fn in_shares(&mut self, check: impl Fn(&mut CheckedShare<'a>, usize, usize) + Sync) {
        let shares = self.shares.len();
        if shares == 1 {
            check(&mut self.shares[0], 0, 1);
        } else {
            let check = &check;
            std::thread::scope(|scope| {
                for (at, share) in self.shares.iter_mut().enumerate() {
                    scope.spawn(move || check(share, at, shares));
                }
            });
        }
        for share in &mut self.shares {
            self.signed.append(&mut share.signed);
        }
    }

    /// The report, once every fact was checked: the land log, fork proofs
    /// and derived indexes are checked against the store, and the
    /// checkpoint's verdict is given (with a second reading of the land, every
    /// signature checked, where it does not hold).
    pub fn finish(self, store: &dyn Store) -> Result<LandReport, StoreError> {
        let LandOrderVerification { how, trusted, refused, shares, land_seqs, mut signed, slice_facts } = self;
        let mut reports = Vec::new();
        for share in shares {
            reports.extend(share.reels.finish());
        }
        // Each share's reports come in being order; the land's must too.
        reports.sort_by_key(|report| report.being);
        let (mut report, root_key) = finish_land(store, reports, land_seqs, trusted.map(|trusted| trusted.root))?;
        // In place. Where facts claim one land seq, the land has problems and
        // no digest of these is trusted or offered.
        signed.sort_unstable_by_key(|(land_seq, _)| *land_seq);
        let Some(trusted) = trusted else {
            // Without problems, the land seqs are 0 to the log's length, each
            // one readable fact's.
            if report.problems.is_empty() {
                let facts = signed.len() as u64;
                report.verified_digest = Some((facts, covered_digest_of_parts(signed.iter().map(|(_, part)| part))));
            }
            // A checkpoint refused before reading covered nothing: every
            // signature was checked in this reading.
            report.checkpoint_refused = refused;
            return Ok(report);
        };
        let checkpoint = trusted.checkpoint;
        let refused = checkpoint_covers_parts(checkpoint, &signed)
            .err()
            // The signer's key must be the root's key as its verified reel has it now.
            .or_else(|| (root_key != Some(checkpoint.public_key)).then_some(CheckpointRefused::NotTheRootsCurrentKey))
            // Something is wrong: check everything, so every bad signature is named too.
            .or_else(|| (!report.problems.is_empty()).then_some(CheckpointRefused::LandHasProblems));
        match refused {
            Some(reason) => every_signature(store, how, slice_facts, reason),
            None => Ok(report),
        }
    }
}

/// The land verified again with every signature checked, saying why the
/// checkpoint offered was not used.
fn every_signature(
    store: &dyn Store,
    how: HowToVerify<'_>,
    slice_facts: usize,
    refused: CheckpointRefused,
) -> Result<LandReport, StoreError> {
    let mut report = verify_land_in_slices(store, how, slice_facts)?;
    report.checkpoint_refused = Some(refused);
    Ok(report)
}

/// Which of `shares` checks `being`'s reel.
fn share_of(being: &BeingId, shares: usize) -> usize {
    usize::from(being.0[0]) % shares
}

/// The share of a land-wide verification one thread checks: the reels of
/// the beings [`share_of`] gives it.
struct CheckedShare<'a> {
    reels: ReelCheckers<'a>,
    /// Each readable fact's land seq, id and signature, of the slice being checked.
    signed: Vec<(u64, [u8; COVERED_BYTES_PER_FACT])>,
}

impl<'a> CheckedShare<'a> {
    fn new(checking: Checking<'a>) -> CheckedShare<'a> {
        CheckedShare { reels: ReelCheckers::new(checking), signed: Vec::new() }
    }

    /// Checks the fact at `entry`, as it decoded.
    fn check(&mut self, entry: &LandEntry, decoded: Result<&Fact, &FactError>) {
        if let Ok(fact) = decoded {
            let mut part = [0; COVERED_BYTES_PER_FACT];
            part[..32].copy_from_slice(fact.id().as_bytes());
            part[32..].copy_from_slice(fact.signature());
            self.signed.push((entry.land_seq, part));
        }
        let at = RecordAt { being: entry.being, seq: entry.seq, land_seq: Some(entry.land_seq) };
        self.reels.record(at, decoded);
    }
}

/// Whether the checkpoint's facts are the first of the land log as read
/// (`signed`: each readable fact's land seq, id and signature, in land
/// order), unchanged since it was signed.
fn checkpoint_covers_parts(
    checkpoint: &VerifiedCheckpoint,
    signed: &[(u64, [u8; COVERED_BYTES_PER_FACT])],
) -> Result<(), CheckpointRefused> {
    let covered = usize::try_from(checkpoint.facts).unwrap_or(usize::MAX);
    let Some(prefix) = signed.get(..covered) else {
        return Err(CheckpointRefused::CoversMore { covered: checkpoint.facts, readable: signed.len() });
    };
    if prefix.iter().enumerate().any(|(position, (land_seq, _))| *land_seq != position as u64) {
        return Err(CheckpointRefused::NotTheFirstFacts);
    }
    if covered_digest_of_parts(prefix.iter().map(|(_, part)| part)) != checkpoint.digest {
        return Err(CheckpointRefused::Changed);
    }
    Ok(())
}

/// How a land-wide verification checks: signatures one by one or in
/// batches, on how many threads, by which body rules, told to whom.
#[derive(Clone, Copy)]
pub struct HowToVerify<'a> {
    pub mode: SignatureMode,
    pub threads: usize,
    pub rules: BodyRules<'a>,
    pub progress: &'a dyn Progress,
}

/// Why a verification checkpoint was not trusted (every signature is then checked).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointRefused {
    #[error("it was signed by {signer}, not by the land's root")]
    NotTheRoot { signer: String },
    #[error("its signature does not verify")]
    BadSignature,
    #[error("it covers {covered} facts but only {readable} are readable")]
    CoversMore { covered: u64, readable: usize },
    #[error("the land log's first facts are not the ones it covers")]
    NotTheFirstFacts,
    #[error("the facts it covers changed since it was signed")]
    Changed,
    #[error("it was not signed with the land root's current key")]
    NotTheRootsCurrentKey,
    #[error("the land has problems, so every signature was checked")]
    LandHasProblems,
}

/// What a land-wide verification concludes from the reports of every reel
/// (one per being, in being order) and every fact's place in the land log:
/// fork proofs, the land log, the derived indexes. Also returns the current
/// key of `root`, as its verified reel has it.
fn finish_land(
    store: &dyn Store,
    reports: Vec<ReelReport>,
    mut land_seqs: Vec<(u64, BeingId, u64)>,
    root: Option<BeingId>,
) -> Result<(LandReport, Option<PublicKeyBytes>), StoreError> {
    let root_key = root.and_then(|root| {
        reports.iter().find(|report| report.being == Some(root)).and_then(|report| report.current_key)
    });
    let names: BTreeMap<BeingId, String> =
        reports.iter().filter_map(|report| Some((report.being?, report.name.clone()?))).collect();
    // Built in one go (sorted, then laid out), not entry by entry in store
    // order; where two facts claim a land seq, the later in store order
    // stays, as inserting them in turn would leave it.
    let land_log = land_seqs.iter().map(|&(land_seq, being, seq)| (land_seq, (being, seq))).collect();
    let mut expected = DerivedIndexes { land_log, ..DerivedIndexes::default() };
    let mut report = LandReport { beings: reports.len() as u64, ..LandReport::default() };
    for reel in reports {
        let Some(being) = reel.being else { continue };
        match (&reel.head, &reel.name, reel.problems.is_empty()) {
            (Some(head), Some(name), true) => {
                expected.heads.insert(being, *head);
                expected.names.insert((name.clone(), being));
            }
            _ => {
                expected.skip.insert(being);
            }
        }
        report.facts += reel.facts;
        report.signatures_covered += reel.signatures_covered;
        report.problems.extend(reel.problems);
    }
    let forks = fork_problems(store, None, &names)?;
    expected.forked.extend(forks.iter().filter_map(|problem| problem.being));
    report.problems.extend(forks);
    let land_log = land_log_problems(store, &mut land_seqs, &names)?;
    expected.skip.extend(land_log.iter().filter_map(|problem| problem.being));
    report.problems.extend(land_log);
    for reason in store.index_problems(&expected)? {
        report.problems.push(Problem { being: None, name: None, seq: None, kind: ProblemKind::Index { reason } });
    }
    Ok((report, root_key))
}

/// The land log must number every fact exactly once from 0 with no gap, and
/// keep each reel's own order. Each problem names the fact that carries the
/// offending land seq (both facts, for a land seq claimed twice).
fn land_log_problems(
    store: &dyn Store,
    land_seqs: &mut [(u64, BeingId, u64)],
    names: &BTreeMap<BeingId, String>,
) -> Result<Vec<Problem>, StoreError> {
    let mut problems = Vec::new();
    let count = land_seqs.len() as u64;
    let at = |being: BeingId, seq: u64, reason: String| Problem {
        being: Some(being),
        name: names.get(&being).cloned(),
        seq: Some(seq),
        kind: ProblemKind::LandLog { reason },
    };
    // Reel order first: within one being, land seqs rise with seq.
    land_seqs.sort_by_key(|&(_, being, seq)| (being, seq));
    for pair in land_seqs.windows(2) {
        let ((earlier_land_seq, earlier_being, earlier_seq), (land_seq, being, seq)) = (pair[0], pair[1]);
        if being == earlier_being && land_seq <= earlier_land_seq {
            problems.push(at(
                being,
                seq,
                format!("land seq {land_seq} is not after seq {earlier_seq}'s land seq {earlier_land_seq}"),
            ));
        }
    }
    land_seqs.sort();
    let mut index = 0;
    let mut expected = 0u64;
    while index < land_seqs.len() {
        let land_seq = land_seqs[index].0;
        let mut end = index + 1;
        while end < land_seqs.len() && land_seqs[end].0 == land_seq {
            end += 1;
        }
        if end - index > 1 {
            for &(_, being, seq) in &land_seqs[index..end] {
                problems.push(at(being, seq, format!("land seq {land_seq} is claimed by {} facts", end - index)));
            }
        }
        if land_seq >= count {
            let (_, being, seq) = land_seqs[index];
            problems.push(at(being, seq, format!("land seq {land_seq} is beyond the end of the log ({count} facts)")));
        } else if land_seq > expected {
            problems.push(Problem {
                being: None,
                name: None,
                seq: None,
                kind: ProblemKind::LandLog { reason: format!("land seqs {expected} to {} are missing", land_seq - 1) },
            });
        }
        expected = land_seq + 1;
        index = end;
    }
    let unclaimed = store.unclaimed_records()?;
    for (land_seq, reason) in &unclaimed {
        problems.push(Problem {
            being: None,
            name: None,
            seq: None,
            kind: ProblemKind::LandLog { reason: format!("land seq {land_seq}: {reason}") },
        });
    }
    let logged = store.land_len()?;
    if logged != count && problems.is_empty() {
        problems.push(Problem {
            being: None,
            name: None,
            seq: None,
            kind: ProblemKind::LandLog { reason: format!("the log has {logged} entries for {count} facts") },
        });
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::edwards::CompressedEdwardsY;

    /// The foundation's checks alone.
    struct NoHigherSchemas;

    impl HigherSchemas for NoHigherSchemas {
        fn body_problem(&self, _kind: &str, _body: &[u8]) -> Option<BodyProblem> {
            None
        }
    }

    /// The expected land log is collected, which must keep the last of two
    /// facts claiming one land seq, as inserting them in turn did.
    #[test]
    fn collecting_the_land_log_keeps_what_inserting_in_turn_kept() {
        let claims = [(3u64, 'a'), (1, 'b'), (3, 'c'), (2, 'd'), (1, 'e'), (3, 'f')];
        let collected: BTreeMap<u64, char> = claims.iter().copied().collect();
        let mut inserted = BTreeMap::new();
        for (land_seq, claim) in claims {
            inserted.insert(land_seq, claim);
        }
        assert_eq!(collected, inserted);
    }

    #[test]
    fn the_small_order_list_is_exactly_the_eight_torsion_subgroup() {
        let mut points = Vec::new();
        for y in SMALL_ORDER_Y {
            for sign in [0u8, 0x80] {
                let mut bytes = y;
                bytes[31] |= sign;
                let Some(point) = CompressedEdwardsY(bytes).decompress() else { continue };
                assert!(point.is_small_order(), "{}", hex::encode(bytes));
                let canonical = point.compress().to_bytes();
                if !points.contains(&canonical) {
                    points.push(canonical);
                }
            }
        }
        assert_eq!(points.len(), 8, "the eight-torsion subgroup has eight points");
    }

    #[test]
    fn a_genesis_body_that_does_not_read_is_named_once_as_its_kinds_check_names_it() {
        // The genesis body is read once, for its key and as its check: a
        // body missing fields is named as `check_known_body` names it.
        let body = crate::canonical::encode_json(&serde_json::json!({"name": "ada"})).expect("encodes");
        let being = BeingId(blake3_of(&body).0);
        let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        let fact = crate::fact::UnsignedFact::new(being, 0, FactId::ZERO, 0, KIND_GENESIS, body.clone())
            .expect("a fact")
            .sign(&key);
        let rules = BodyRules { body_bytes_max: crate::limits::FACT_BODY_BYTES_MAX_DEFAULT, schemas: &NoHigherSchemas };
        let mut checker = ReelChecker::new(being, Checking { mode: SignatureMode::Strict, rules, covered_below: 0 });
        checker.record(RecordAt { being, seq: 0, land_seq: Some(0) }, Ok(&fact), &mut Vec::new());
        let reason = check_known_body(KIND_GENESIS, &body).expect_err("not a genesis body").to_string();
        let bodies: Vec<&ProblemKind> = checker
            .report
            .problems
            .iter()
            .map(|problem| &problem.kind)
            .filter(|kind| matches!(kind, ProblemKind::Body { .. }))
            .collect();
        let problem = BodyProblem::Unreadable { reason };
        assert_eq!(bodies, [&ProblemKind::Body { kind: KIND_GENESIS.to_string(), problem }]);
        assert_eq!(checker.key_problem.as_deref(), Some("the genesis body is unreadable"));
    }

    /// Two reels' facts, interleaved as the land log holds them, checked
    /// together: each bad signature is named on its own reel at its seq, in
    /// batches as one strict check at a time names it.
    #[test]
    fn a_signature_batch_across_reels_names_each_bad_signature_on_its_own_reel() {
        let keys = [ed25519_dalek::SigningKey::from_bytes(&[1; 32]), ed25519_dalek::SigningKey::from_bytes(&[2; 32])];
        let beings = [BeingId([0xa; 32]), BeingId([0xb; 32])];
        // (reel, seq) signed with the other reel's key.
        let forged = [(1usize, 3u64), (0, 6)];
        let body = crate::canonical::encode_json(&serde_json::json!({})).expect("encodes");
        let mut facts = Vec::new();
        let mut prev = [FactId::ZERO, FactId::ZERO];
        for seq in 1..=7u64 {
            for reel in 0..2 {
                let signer = if forged.contains(&(reel, seq)) { &keys[1 - reel] } else { &keys[reel] };
                let fact = crate::fact::UnsignedFact::new(beings[reel], seq, prev[reel], 0, "test-kind", body.clone())
                    .expect("a fact")
                    .sign(signer);
                prev[reel] = fact.id();
                facts.push((reel, fact));
            }
        }
        let rules = BodyRules { body_bytes_max: crate::limits::FACT_BODY_BYTES_MAX_DEFAULT, schemas: &NoHigherSchemas };
        let check = |mode: SignatureMode| -> Vec<Vec<(Option<u64>, String)>> {
            let checking = Checking { mode, rules, covered_below: 0 };
            let mut reels = ReelCheckers::new(checking);
            for (reel, being) in beings.iter().enumerate() {
                // As if each reel's genesis had been read.
                let mut checker = ReelChecker::new(*being, checking);
                checker.set_key(&PublicKeyBytes::of(&keys[reel]));
                checker.expected_seq = 1;
                reels.reels.insert(*being, checker);
            }
            for (land_seq, (reel, fact)) in facts.iter().enumerate() {
                let at = RecordAt { being: beings[*reel], seq: fact.header.seq, land_seq: Some(land_seq as u64) };
                reels.record(at, Ok(fact));
            }
            reels
                .finish()
                .into_iter()
                .map(|report| report.problems.iter().map(|problem| (problem.seq, problem.kind.to_string())).collect())
                .collect()
        };
        let signature = ProblemKind::Signature.to_string();
        let expected = vec![vec![(Some(6), signature.clone())], vec![(Some(3), signature)]];
        for mode in
            [SignatureMode::Strict, SignatureMode::Batch { batch_facts: 3 }, SignatureMode::Batch { batch_facts: 64 }]
        {
            assert_eq!(check(mode), expected, "{mode:?}");
        }
    }

    fn signature_with_r(r: [u8; 32]) -> [u8; 64] {
        let mut signature = [0u8; 64];
        signature[..32].copy_from_slice(&r);
        signature
    }

    #[test]
    fn prechecks_refuse_what_strict_verification_refuses() {
        let mut cases: Vec<([u8; 32], bool)> = Vec::new();
        // An honest R: the base point's encoding.
        cases.push((curve25519_dalek::constants::ED25519_BASEPOINT_COMPRESSED.to_bytes(), true));
        for y in SMALL_ORDER_Y {
            cases.push((y, false));
            let mut negative = y;
            negative[31] |= 0x80;
            cases.push((negative, false));
        }
        // y = p (non-canonical zero) and y = p + 1 (non-canonical one).
        let mut p = [0xffu8; 32];
        p[0] = 0xed;
        p[31] = 0x7f;
        cases.push((p, false));
        let mut p_plus_one = p;
        p_plus_one[0] = 0xee;
        cases.push((p_plus_one, false));
        for (r, expected) in cases {
            assert_eq!(strict_prechecks_hold(&signature_with_r(r)), expected, "{}", hex::encode(r));
        }
    }
}
