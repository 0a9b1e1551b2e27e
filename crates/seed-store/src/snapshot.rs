//! World snapshots on disk: a land writes the world as it stood at a cursor
//! (every `snapshot_every_facts` facts, see `land.toml`) so that a replay
//! or an opening starts there instead of folding the land log from genesis.
//!
//! The world's bytes are the world layer's business; this module knows them
//! only as bytes and a digest. A snapshot file is canonical CBOR
//! `[signed, signature, world]`, where `signed` is `[version, tag, cursor,
//! last fact, state digest, world digest, signer, public key]`:
//!
//! - `cursor`: how many land-log facts the world folds; `last fact`: the id
//!   of the fact at land seq `cursor - 1`, binding the snapshot to one log.
//! - `state digest`: the world's state digest (the one the world hash and
//!   replay compare); `world digest`: BLAKE3 of the `world` bytes.
//! - signed by the reality root, whose key signs every world fact.
//!
//! Trust: a snapshot is a claim of the land that sealed the facts. It is
//! used only once a clean `seed verify` has vouched for it: verification
//! checks the signature, that the world bytes match their digest and read
//! back to the state digest, and that the last fact is the verified log's
//! fact at that place; then the root signs a [`VouchedSnapshots`] record
//! naming each vouched file by its BLAKE3. A file altered after that is not
//! the file vouched for and is ignored; `seed replay --paranoid` re-derives
//! a snapshot by folding from the one before it; `seed replay --all` folds
//! the whole log and names any snapshot whose state differs from the fold.

use crate::atomic_file;
use crate::canonical::{self, CanonicalReader};
use crate::fact::{BeingId, FactId, Hash32, PublicKeyBytes};
use crate::signed::{signature_holds, split_signed, SignedRecord};
use ed25519_dalek::{Signer, SigningKey};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The land folder's directory of snapshots.
pub const SNAPSHOTS_DIR: &str = "snapshots";
/// The root's record of which snapshot files a clean verification vouched for.
pub const VOUCHED_SNAPSHOTS_FILE: &str = "vouched";
/// A snapshot file's name: `world-` and the cursor in 20 digits.
const SNAPSHOT_FILE_PREFIX: &str = "world-";
const SNAPSHOT_FILE_SUFFIX: &str = ".snapshot";
const SNAPSHOT_FORMAT_VERSION: u64 = 1;
/// Domain separation: a snapshot's signature can never pass for a fact's
/// or a checkpoint's.
const SNAPSHOT_DOMAIN_TAG: &str = "seed/world-snapshot";
const VOUCHED_DOMAIN_TAG: &str = "seed/vouched-snapshots";
/// Fields of a snapshot's signed array.
const SNAPSHOT_SIGNED_FIELDS: u64 = 8;
/// Fields of the vouched record's signed array: version, tag, entries, signer, key.
const VOUCHED_SIGNED_FIELDS: u64 = 5;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{path}: not a seed world snapshot ({reason})")]
    Malformed { path: PathBuf, reason: &'static str },
    #[error("{path}: snapshot format {version} (this build reads {SNAPSHOT_FORMAT_VERSION})")]
    Version { path: PathBuf, version: u64 },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// What a snapshot states, all of it covered by the signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotClaim {
    pub cursor: u64,
    pub last_fact: FactId,
    /// The digest the world layer gives its world (`World::snapshot_digest`:
    /// its state and its beings' memories); this layer only carries it.
    pub state_digest: Hash32,
    pub world_digest: Hash32,
    pub signer: BeingId,
    pub public_key: PublicKeyBytes,
}

/// What a streamed snapshot claims besides its world's digest (known once
/// it is written) and the key's public half.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamedClaim {
    pub cursor: u64,
    pub last_fact: FactId,
    pub state_digest: Hash32,
    pub signer: BeingId,
}

/// One snapshot as written: its claim, the signature and the world's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedSnapshot {
    pub claim: SnapshotClaim,
    signature: [u8; 64],
    pub world: Vec<u8>,
}

impl SignedSnapshot {
    /// Signs a snapshot of `world` (its bytes) at `cursor`.
    pub fn seal(
        cursor: u64,
        last_fact: FactId,
        state_digest: Hash32,
        world: Vec<u8>,
        signer: BeingId,
        key: &SigningKey,
    ) -> SignedSnapshot {
        let claim = SnapshotClaim {
            cursor,
            last_fact,
            state_digest,
            world_digest: crate::fact::blake3_of(&world),
            signer,
            public_key: PublicKeyBytes::of(key),
        };
        let signature = key.sign(&claim_bytes(&claim)).to_bytes();
        SignedSnapshot { claim, signature, world }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.file_head();
        out.extend_from_slice(&self.world);
        out
    }

    fn file_head(&self) -> Vec<u8> {
        file_head(&self.claim, &self.signature, self.world.len())
    }

    /// Reads a snapshot file's bytes (`path` only names it in errors).
    pub fn decode(bytes: &[u8], path: &Path) -> Result<SignedSnapshot, SnapshotError> {
        let (claim, signature, world) = SignedSnapshot::decode_parts(bytes, path)?;
        Ok(SignedSnapshot { claim, signature, world: bytes[world].to_vec() })
    }

    /// [`SignedSnapshot::decode`] of a file's bytes read whole, its world
    /// kept in their buffer rather than copied out of it (hundreds of
    /// megabytes at a million beings, freshly allocated pages).
    pub fn decode_owned(mut bytes: Vec<u8>, path: &Path) -> Result<SignedSnapshot, SnapshotError> {
        let (claim, signature, world) = SignedSnapshot::decode_parts(&bytes, path)?;
        bytes.drain(..world.start);
        Ok(SignedSnapshot { claim, signature, world: bytes })
    }

    /// The claim, the signature and where the world's bytes are in `bytes`.
    fn decode_parts(
        bytes: &[u8],
        path: &Path,
    ) -> Result<(SnapshotClaim, [u8; 64], std::ops::Range<usize>), SnapshotError> {
        let malformed = |reason| SnapshotError::Malformed { path: path.to_path_buf(), reason };
        let SignedRecord { signed, signature, extra } = split_signed(bytes, 1).map_err(malformed)?;
        // The world is the record's last item: nothing trails it.
        let world = bytes.len() - extra[0].len()..bytes.len();
        let mut reader = CanonicalReader::new(signed);
        if reader.array_head() != Some(SNAPSHOT_SIGNED_FIELDS) {
            return Err(malformed("the signed part is not an array of eight items"));
        }
        let version = reader.uint().ok_or(malformed("the version is not an unsigned integer"))?;
        if version != SNAPSHOT_FORMAT_VERSION {
            return Err(SnapshotError::Version { path: path.to_path_buf(), version });
        }
        if reader.text() != Some(SNAPSHOT_DOMAIN_TAG) {
            return Err(malformed("wrong domain tag"));
        }
        let cursor = reader.uint().ok_or(malformed("the cursor is not an unsigned integer"))?;
        let mut bytes32 =
            |what| reader.bytes().and_then(|bytes| <[u8; 32]>::try_from(bytes).ok()).ok_or(malformed(what));
        let last_fact = FactId(bytes32("the last fact is not a 32-byte id")?);
        let state_digest = Hash32(bytes32("the state digest is not 32 bytes")?);
        let world_digest = Hash32(bytes32("the world digest is not 32 bytes")?);
        let signer = BeingId(bytes32("the signer is not a 32-byte being id")?);
        let public_key = PublicKeyBytes(bytes32("the public key is not 32 bytes")?);
        if !reader.is_at_end() {
            return Err(malformed("trailing bytes in the signed part"));
        }
        let claim = SnapshotClaim { cursor, last_fact, state_digest, world_digest, signer, public_key };
        Ok((claim, signature, world))
    }

    /// Strict Ed25519 verification of the signature, and the world's bytes
    /// are the ones it signed.
    pub fn holds(&self) -> bool {
        crate::fact::blake3_of(&self.world) == self.claim.world_digest
            && signature_holds(&self.claim.public_key, &claim_bytes(&self.claim), &self.signature)
    }
}

/// A snapshot file's bytes before the world's: the array head, the signed
/// claim, the signature and the head of the world's byte string. A file is
/// written as this and the world, never copied into one buffer (a million
/// beings' world is most of a gigabyte).
fn file_head(claim: &SnapshotClaim, signature: &[u8; 64], world_bytes: usize) -> Vec<u8> {
    let signed = claim_bytes(claim);
    let mut out = Vec::with_capacity(signed.len() + 96);
    canonical::write_array_head(3, &mut out);
    canonical::write_bytes(&signed, &mut out);
    canonical::write_bytes(signature, &mut out);
    canonical::write_bytes_head(world_bytes, &mut out);
    out
}

/// The world's length a streamed snapshot leaves room for the head of,
/// before it knows the length: its byte string's head is five bytes for
/// any world from this size up to 4 GiB. Another length moves the world.
const STREAMED_WORLD_BYTES_EXPECTED: usize = 1 << 16;
/// The buffer between a streamed world's encoder and its file.
const STREAMED_WORLD_WRITE_BUFFER_BYTES: usize = 1 << 20;

/// What writing a snapshot as its world is encoded came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotStreamed {
    /// Written, with the world's length in bytes.
    Written { world_bytes: u64 },
    /// The world's encoder could not write it as it went
    /// (`canonical::WriteCanonicalError::NotStreamable`): nothing was
    /// written; encode it whole and write that.
    NotStreamable,
}

/// Counts and hashes what passes through to the file.
struct DigestingWriter<W: Write> {
    inner: W,
    digest: blake3::Hasher,
    bytes: u64,
}

impl<W: Write> Write for DigestingWriter<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(bytes)?;
        self.digest.update(&bytes[..written]);
        self.bytes += written as u64;
        Ok(written)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn claim_bytes(claim: &SnapshotClaim) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    canonical::write_array_head(SNAPSHOT_SIGNED_FIELDS, &mut out);
    canonical::write_uint(SNAPSHOT_FORMAT_VERSION, &mut out);
    canonical::write_text(SNAPSHOT_DOMAIN_TAG, &mut out);
    canonical::write_uint(claim.cursor, &mut out);
    canonical::write_bytes(&claim.last_fact.0, &mut out);
    canonical::write_bytes(&claim.state_digest.0, &mut out);
    canonical::write_bytes(&claim.world_digest.0, &mut out);
    canonical::write_bytes(&claim.signer.0, &mut out);
    canonical::write_bytes(claim.public_key.as_bytes(), &mut out);
    out
}

/// The root's signed list of the snapshot files a clean verification
/// vouched for: each file's cursor and the BLAKE3 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VouchedSnapshots {
    pub files: BTreeMap<u64, Hash32>,
    pub signer: BeingId,
    pub public_key: PublicKeyBytes,
    signature: [u8; 64],
}

impl VouchedSnapshots {
    pub fn seal(files: BTreeMap<u64, Hash32>, signer: BeingId, key: &SigningKey) -> VouchedSnapshots {
        let public_key = PublicKeyBytes::of(key);
        let signature = key.sign(&vouched_bytes(&files, &signer, &public_key)).to_bytes();
        VouchedSnapshots { files, signer, public_key, signature }
    }

    pub fn encode(&self) -> Vec<u8> {
        let signed = vouched_bytes(&self.files, &self.signer, &self.public_key);
        let mut out = Vec::with_capacity(signed.len() + 72);
        canonical::write_array_head(2, &mut out);
        canonical::write_bytes(&signed, &mut out);
        canonical::write_bytes(&self.signature, &mut out);
        out
    }

    pub fn decode(bytes: &[u8], path: &Path) -> Result<VouchedSnapshots, SnapshotError> {
        let malformed = |reason| SnapshotError::Malformed { path: path.to_path_buf(), reason };
        let SignedRecord { signed, signature, .. } = split_signed(bytes, 0).map_err(malformed)?;
        let mut reader = CanonicalReader::new(signed);
        if reader.array_head() != Some(VOUCHED_SIGNED_FIELDS) {
            return Err(malformed("the signed part is not an array of five items"));
        }
        let version = reader.uint().ok_or(malformed("the version is not an unsigned integer"))?;
        if version != SNAPSHOT_FORMAT_VERSION {
            return Err(SnapshotError::Version { path: path.to_path_buf(), version });
        }
        if reader.text() != Some(VOUCHED_DOMAIN_TAG) {
            return Err(malformed("wrong domain tag"));
        }
        let count = reader.array_head().ok_or(malformed("the files are not an array"))?;
        let mut files = BTreeMap::new();
        for _ in 0..count {
            if reader.array_head() != Some(2) {
                return Err(malformed("a vouched file is not a pair"));
            }
            let cursor = reader.uint().ok_or(malformed("a vouched cursor is not an unsigned integer"))?;
            let digest = reader
                .bytes()
                .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
                .ok_or(malformed("a vouched digest is not 32 bytes"))?;
            if files.insert(cursor, Hash32(digest)).is_some() {
                return Err(malformed("a cursor is vouched for twice"));
            }
        }
        let mut bytes32 =
            |what| reader.bytes().and_then(|bytes| <[u8; 32]>::try_from(bytes).ok()).ok_or(malformed(what));
        let signer = BeingId(bytes32("the signer is not a 32-byte being id")?);
        let public_key = PublicKeyBytes(bytes32("the public key is not 32 bytes")?);
        if !reader.is_at_end() {
            return Err(malformed("trailing bytes in the signed part"));
        }
        // Re-encoded, the record must give the signed bytes: one record, one form.
        if vouched_bytes(&files, &signer, &public_key) != signed {
            return Err(malformed("the signed part is not in canonical order"));
        }
        Ok(VouchedSnapshots { files, signer, public_key, signature })
    }

    pub fn signature_holds(&self) -> bool {
        signature_holds(&self.public_key, &vouched_bytes(&self.files, &self.signer, &self.public_key), &self.signature)
    }
}

fn vouched_bytes(files: &BTreeMap<u64, Hash32>, signer: &BeingId, public_key: &PublicKeyBytes) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + files.len() * 48);
    canonical::write_array_head(VOUCHED_SIGNED_FIELDS, &mut out);
    canonical::write_uint(SNAPSHOT_FORMAT_VERSION, &mut out);
    canonical::write_text(VOUCHED_DOMAIN_TAG, &mut out);
    canonical::write_array_head(files.len() as u64, &mut out);
    for (cursor, digest) in files {
        canonical::write_array_head(2, &mut out);
        canonical::write_uint(*cursor, &mut out);
        canonical::write_bytes(&digest.0, &mut out);
    }
    canonical::write_bytes(&signer.0, &mut out);
    canonical::write_bytes(public_key.as_bytes(), &mut out);
    out
}

/// The snapshots directory of one land: lists, reads and writes its files.
/// Reading never writes: a land opened to read leaves the folder as it was.
#[derive(Debug, Clone)]
pub struct SnapshotShelf {
    dir: PathBuf,
}

impl SnapshotShelf {
    /// The shelf of the land folder `land_dir`.
    pub fn of_land(land_dir: &Path) -> SnapshotShelf {
        SnapshotShelf { dir: land_dir.join(SNAPSHOTS_DIR) }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path_of(&self, cursor: u64) -> PathBuf {
        self.dir.join(format!("{SNAPSHOT_FILE_PREFIX}{cursor:020}{SNAPSHOT_FILE_SUFFIX}"))
    }

    /// The cursors of the snapshot files on the shelf, in order (none if
    /// the directory does not exist). Other files are not snapshots.
    pub fn cursors(&self) -> Result<Vec<u64>, SnapshotError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(SnapshotError::Io { path: self.dir.clone(), source }),
        };
        let mut cursors = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| SnapshotError::Io { path: self.dir.clone(), source })?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let digits =
                name.strip_prefix(SNAPSHOT_FILE_PREFIX).and_then(|rest| rest.strip_suffix(SNAPSHOT_FILE_SUFFIX));
            if let Some(cursor) = digits.filter(|digits| digits.len() == 20).and_then(|digits| digits.parse().ok()) {
                cursors.push(cursor);
            }
        }
        cursors.sort_unstable();
        Ok(cursors)
    }

    /// The file's bytes and its BLAKE3.
    pub fn read_bytes(&self, cursor: u64) -> Result<(Vec<u8>, Hash32), SnapshotError> {
        let path = self.path_of(cursor);
        let bytes = std::fs::read(&path).map_err(|source| SnapshotError::Io { path, source })?;
        let digest = crate::fact::blake3_of(&bytes);
        Ok((bytes, digest))
    }

    pub fn read(&self, cursor: u64) -> Result<(SignedSnapshot, Hash32), SnapshotError> {
        let (bytes, digest) = self.read_bytes(cursor)?;
        let snapshot = SignedSnapshot::decode_owned(bytes, &self.path_of(cursor))?;
        if snapshot.claim.cursor != cursor {
            return Err(SnapshotError::Malformed {
                path: self.path_of(cursor),
                reason: "the cursor it names is not the one in its file name",
            });
        }
        Ok((snapshot, digest))
    }

    /// Writes `snapshot` atomically (a temporary file, synced, renamed);
    /// returns the BLAKE3 of the file's bytes.
    pub fn write(&self, snapshot: &SignedSnapshot) -> Result<Hash32, SnapshotError> {
        let head = snapshot.file_head();
        let parts = [&head[..], &snapshot.world[..]];
        self.write_parts_atomically(&self.path_of(snapshot.claim.cursor), &parts)?;
        let mut file_digest = blake3::Hasher::new();
        for part in parts {
            file_digest.update(part);
        }
        Ok(Hash32(*file_digest.finalize().as_bytes()))
    }

    /// Writes a snapshot at `cursor` whose world's bytes `write_world`
    /// writes to the sink it is given (returning how many), as they are
    /// encoded: they go to the file behind room left for its head, which is
    /// written once the world's length and digest are known, and the world
    /// is never held in memory whole. Atomic as [`SnapshotShelf::write`]
    /// is; what a failed or unstreamable write began is removed.
    pub fn write_streamed(
        &self,
        claim: StreamedClaim,
        key: &SigningKey,
        write_world: impl FnOnce(&mut dyn Write) -> Result<u64, canonical::WriteCanonicalError>,
    ) -> Result<SnapshotStreamed, SnapshotError> {
        let path = self.path_of(claim.cursor);
        let io = |source| SnapshotError::Io { path: path.clone(), source };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let temporary = atomic_file::beside(&path, atomic_file::TEMPORARY_SUFFIX);
        let moved = atomic_file::beside(&path, ".tmp-moved");
        let written = write_streamed_to(&claim, key, write_world, &temporary, &moved);
        if !matches!(written, Ok(SnapshotStreamed::Written { .. })) {
            let _ = std::fs::remove_file(&temporary);
            let _ = std::fs::remove_file(&moved);
            return written.map_err(io);
        }
        atomic_file::rename_durably(&temporary, &path).map_err(io)?;
        written.map_err(io)
    }

    /// The vouched record, if there is one.
    pub fn vouched(&self) -> Result<Option<VouchedSnapshots>, SnapshotError> {
        let path = self.dir.join(VOUCHED_SNAPSHOTS_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => VouchedSnapshots::decode(&bytes, &path).map(Some),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(SnapshotError::Io { path, source }),
        }
    }

    pub fn write_vouched(&self, vouched: &VouchedSnapshots) -> Result<(), SnapshotError> {
        self.write_atomically(&self.dir.join(VOUCHED_SNAPSHOTS_FILE), &vouched.encode())
    }

    /// Withdraws every vouch (a verification found problems): nothing on
    /// the shelf is trusted until a clean verification vouches again.
    pub fn withdraw_vouches(&self) -> Result<bool, SnapshotError> {
        let path = self.dir.join(VOUCHED_SNAPSHOTS_FILE);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(SnapshotError::Io { path, source }),
        }
    }

    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> Result<(), SnapshotError> {
        self.write_parts_atomically(path, &[bytes])
    }

    fn write_parts_atomically(&self, path: &Path, parts: &[&[u8]]) -> Result<(), SnapshotError> {
        let io = |source| SnapshotError::Io { path: path.to_path_buf(), source };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        crate::atomic_file::write_parts_atomically(path, parts, crate::atomic_file::READABLE_FILE_MODE).map_err(io)
    }
}

/// Writes a streamed snapshot's file at `temporary` (see
/// [`SnapshotShelf::write_streamed`]); a world of an unexpected length is
/// moved behind its head through `moved`.
fn write_streamed_to(
    claim: &StreamedClaim,
    key: &SigningKey,
    write_world: impl FnOnce(&mut dyn Write) -> Result<u64, canonical::WriteCanonicalError>,
    temporary: &Path,
    moved: &Path,
) -> std::io::Result<SnapshotStreamed> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    let create = |path: &Path| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .mode(atomic_file::READABLE_FILE_MODE)
            .open(path)
    };
    let mut signed = SnapshotClaim {
        cursor: claim.cursor,
        last_fact: claim.last_fact,
        state_digest: claim.state_digest,
        world_digest: Hash32([0; 32]),
        signer: claim.signer,
        public_key: PublicKeyBytes::of(key),
    };
    let room = file_head(&signed, &[0; 64], STREAMED_WORLD_BYTES_EXPECTED).len() as u64;
    let mut file = create(temporary)?;
    file.seek(SeekFrom::Start(room))?;
    let mut sink = DigestingWriter {
        inner: std::io::BufWriter::with_capacity(STREAMED_WORLD_WRITE_BUFFER_BYTES, &mut file),
        digest: blake3::Hasher::new(),
        bytes: 0,
    };
    match write_world(&mut sink) {
        Ok(_) => {}
        Err(canonical::WriteCanonicalError::NotStreamable) => return Ok(SnapshotStreamed::NotStreamable),
        Err(canonical::WriteCanonicalError::Io(error)) => return Err(error),
    }
    sink.flush()?;
    let (world_bytes, world_digest) = (sink.bytes, Hash32(*sink.digest.finalize().as_bytes()));
    drop(sink);
    signed.world_digest = world_digest;
    let signature = key.sign(&claim_bytes(&signed)).to_bytes();
    let world_length = usize::try_from(world_bytes).map_err(std::io::Error::other)?;
    let head = file_head(&signed, &signature, world_length);
    if head.len() as u64 == room {
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&head)?;
        file.sync_all()?;
        return Ok(SnapshotStreamed::Written { world_bytes });
    }
    // A world under 64 KiB or over 4 GiB: its head is another length,
    // so the world moves behind it, file to file.
    let mut other = create(moved)?;
    other.write_all(&head)?;
    file.seek(SeekFrom::Start(room))?;
    let copied = std::io::copy(&mut (&mut file).take(world_bytes), &mut other)?;
    if copied != world_bytes {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the world written is shorter"));
    }
    other.sync_all()?;
    std::fs::rename(moved, temporary)?;
    Ok(SnapshotStreamed::Written { world_bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (SignedSnapshot, SigningKey) {
        let key = SigningKey::from_bytes(&[7; 32]);
        let snapshot =
            SignedSnapshot::seal(1000, FactId([2; 32]), Hash32([3; 32]), b"the world".to_vec(), BeingId([9; 32]), &key);
        (snapshot, key)
    }

    #[test]
    fn a_snapshot_round_trips_and_holds() {
        let (snapshot, _) = sample();
        let decoded = SignedSnapshot::decode(&snapshot.encode(), Path::new("s")).expect("decodes");
        assert_eq!(decoded, snapshot);
        assert!(decoded.holds());
        let owned = SignedSnapshot::decode_owned(snapshot.encode(), Path::new("s")).expect("decodes");
        assert_eq!(owned, snapshot, "the world kept in the file's buffer is the world copied out of it");
    }

    /// `decode_owned` keeps the world in the file's buffer: it refuses what
    /// `decode` refuses and reads what it reads, byte for byte.
    #[test]
    fn any_flipped_byte_of_a_snapshot_is_refused_or_breaks_it() {
        let (snapshot, _) = sample();
        let bytes = snapshot.encode();
        for index in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[index] ^= 0x01;
            let owned = SignedSnapshot::decode_owned(flipped.clone(), Path::new("s"));
            match SignedSnapshot::decode(&flipped, Path::new("s")) {
                Ok(decoded) => {
                    assert!(!decoded.holds(), "a flip at byte {index} kept a holding snapshot");
                    assert_eq!(owned.as_ref().ok(), Some(&decoded), "a flip at byte {index}");
                }
                Err(error) => assert_eq!(owned.err().map(|e| e.to_string()), Some(error.to_string()), "{index}"),
            }
        }
    }

    #[test]
    fn a_vouched_record_round_trips_and_any_flip_breaks_it() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let files = BTreeMap::from([(100, Hash32([1; 32])), (200, Hash32([2; 32]))]);
        let vouched = VouchedSnapshots::seal(files, BeingId([9; 32]), &key);
        let bytes = vouched.encode();
        let decoded = VouchedSnapshots::decode(&bytes, Path::new("v")).expect("decodes");
        assert_eq!(decoded, vouched);
        assert!(decoded.signature_holds());
        for index in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[index] ^= 0x01;
            if let Ok(decoded) = VouchedSnapshots::decode(&flipped, Path::new("v")) {
                assert!(!decoded.signature_holds(), "a flip at byte {index} kept a valid vouch");
            }
        }
    }

    #[test]
    fn a_streamed_snapshot_that_fails_or_cannot_stream_leaves_the_shelf_as_it_was() {
        let dir = tempfile::tempdir().expect("tempdir");
        let shelf = SnapshotShelf::of_land(dir.path());
        let key = SigningKey::from_bytes(&[7; 32]);
        let (snapshot, _) = sample();
        shelf.write(&snapshot).expect("writes");
        let before = std::fs::read(shelf.path_of(1000)).expect("reads");
        let claim = StreamedClaim {
            cursor: 1000,
            last_fact: FactId([2; 32]),
            state_digest: Hash32([4; 32]),
            signer: BeingId([9; 32]),
        };
        let not_streamable = shelf.write_streamed(claim, &key, |sink| {
            sink.write_all(&[0x80; 100_000])?;
            Err(canonical::WriteCanonicalError::NotStreamable)
        });
        assert_eq!(not_streamable.expect("no error"), SnapshotStreamed::NotStreamable);
        let failed = shelf.write_streamed(claim, &key, |sink| {
            sink.write_all(&[0x80; 100_000])?;
            Err(canonical::WriteCanonicalError::Io(std::io::Error::other("disk full")))
        });
        assert!(matches!(failed, Err(SnapshotError::Io { .. })), "{failed:?}");
        assert_eq!(std::fs::read(shelf.path_of(1000)).expect("reads"), before, "the snapshot there is untouched");
        let names: Vec<String> = std::fs::read_dir(shelf.dir())
            .expect("lists")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec![shelf.path_of(1000).file_name().expect("name").to_string_lossy().into_owned()]);
    }

    #[test]
    fn the_shelf_lists_only_snapshot_files_in_cursor_order_and_reads_what_it_wrote() {
        let dir = tempfile::tempdir().expect("tempdir");
        let shelf = SnapshotShelf::of_land(dir.path());
        assert_eq!(shelf.cursors().expect("lists"), Vec::<u64>::new(), "no directory yet");
        let key = SigningKey::from_bytes(&[7; 32]);
        // Worlds whose byte strings take heads of one, three and five bytes:
        // the file written in parts is the snapshot's one-buffer encoding.
        for (cursor, world) in [(300, vec![1, 2]), (20, vec![7; 300]), (1000, vec![9; 70_000])] {
            let snapshot =
                SignedSnapshot::seal(cursor, FactId([2; 32]), Hash32([3; 32]), world, BeingId([9; 32]), &key);
            let digest = shelf.write(&snapshot).expect("writes");
            let file = std::fs::read(shelf.path_of(cursor)).expect("reads the file");
            assert_eq!(file, snapshot.encode());
            assert_eq!(digest, crate::fact::blake3_of(&file));
            let (read, read_digest) = shelf.read(cursor).expect("reads");
            assert_eq!((read, read_digest), (snapshot, digest));
        }
        // Written as its world is encoded: the same file.
        let streamed_shelf = SnapshotShelf::of_land(&dir.path().join("streamed"));
        for (cursor, world) in [(300, vec![1, 2]), (20, vec![7; 300]), (1000, vec![9; 70_000])] {
            let snapshot =
                SignedSnapshot::seal(cursor, FactId([2; 32]), Hash32([3; 32]), world, BeingId([9; 32]), &key);
            let claim = StreamedClaim {
                cursor,
                last_fact: FactId([2; 32]),
                state_digest: Hash32([3; 32]),
                signer: BeingId([9; 32]),
            };
            let streamed = streamed_shelf
                .write_streamed(claim, &key, |sink| {
                    sink.write_all(&snapshot.world)?;
                    Ok(snapshot.world.len() as u64)
                })
                .expect("writes");
            assert_eq!(streamed, SnapshotStreamed::Written { world_bytes: snapshot.world.len() as u64 });
            let file = std::fs::read(streamed_shelf.path_of(cursor)).expect("reads the file");
            assert_eq!(file, snapshot.encode(), "a world of {} bytes", snapshot.world.len());
        }
        std::fs::write(shelf.dir().join("notes.txt"), "x").expect("writes");
        std::fs::write(shelf.dir().join("world-12.snapshot"), "x").expect("writes");
        assert_eq!(shelf.cursors().expect("lists"), vec![20, 300, 1000]);
        // A file renamed to another cursor is refused.
        std::fs::rename(shelf.path_of(20), shelf.path_of(21)).expect("renames");
        assert!(matches!(shelf.read(21), Err(SnapshotError::Malformed { .. })));
    }
}
