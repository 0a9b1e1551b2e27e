//! A world written out whole, to be read back instead of folded again: the
//! content of a land's world snapshots (the signed file around it is
//! `seed_store::snapshot`'s). Everything the fold keeps is written, the
//! derived fields (`BeingRow::role_flow_digest`, `World::roles_digest`,
//! `World::live_beings_by_space`) excepted: reading recomputes them, so a
//! world read back equals, field for field, the world the fold built.
//!
//! The bytes are canonical CBOR of a versioned record, so one world always
//! writes the same bytes (the file's digest covers them).

use super::{BeingRow, World};
use crate::canonical;
use crate::fact::{BeingId, Hash32};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The version of the written form; a build reads only its own (2: the
/// beings' memories are written too; 3: and the spend ledger; 4: and the
/// acts' vectors; 5: and the pending approvals; 6: and the cascades and
/// the spaces' owners and scopes; 7: and the definitions recorded; 8:
/// and the root and the land's peers; 9: and the fact that set each
/// configuration key; 10: and the acts the audit lists; 11: each memory
/// item an array, not a map of named fields).
pub const WORLD_SNAPSHOT_FORMAT_VERSION: u64 = 11;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorldSnapshotError {
    #[error("the world cannot be written: {reason}")]
    Unwritable { reason: String },
    #[error("the snapshot's world does not read: {reason}")]
    Unreadable { reason: String },
    #[error("the snapshot's world is format {version}; this build reads {WORLD_SNAPSHOT_FORMAT_VERSION} (`seed reindex` writes it again)")]
    Version { version: u64 },
}

/// Levels of a snapshot written entry by entry: the record, the world, and
/// each of the world's fields (a million rows, a million memories); each
/// entry of those is encoded whole.
const SNAPSHOT_STREAMED_LEVELS: usize = 3;

/// Its fields in canonical order (`world` is the shorter key), as the
/// world's and a row's are: the encoder then writes them in place.
#[derive(Serialize)]
struct Written<'a> {
    world: &'a World,
    version: u64,
}

/// The record read back; its version is checked once it is read (and a
/// record that does not read is read again for its version alone, so that
/// another version is named as such).
#[derive(Deserialize)]
struct Read {
    world: World,
    version: u64,
}

/// Just the version, read when the whole record does not read, so that
/// another version is named as such.
#[derive(Deserialize)]
struct VersionOnly {
    version: u64,
}

/// The world format `bytes` (a world snapshot's world) are written in, or
/// `None` if they hold no version. Read from the end: canonical order puts
/// the record's `version` after its `world`, so the bytes end with that key
/// and a small unsigned integer, and the world (most of a gigabyte at a
/// million beings) is not read. Bytes that do not end so are read whole for
/// it, as [`World::from_snapshot_bytes`] reads them.
pub fn snapshot_format_version(bytes: &[u8]) -> Option<u64> {
    format_version_at_the_end(bytes)
        .or_else(|| canonical::from_canonical_bytes::<VersionOnly>(bytes).ok().map(|read| read.version))
}

/// The version a snapshot's world record ends with, if it ends with the key
/// `version` and an unsigned integer below 256 (one byte below 24, else
/// 0x18 and one byte, as canonical CBOR writes them).
fn format_version_at_the_end(bytes: &[u8]) -> Option<u64> {
    const VERSION_KEY: &[u8] = b"\x67version";
    let ends_with_key_then = |value: &[u8]| {
        let key_end = bytes.len().checked_sub(value.len())?;
        let key_start = key_end.checked_sub(VERSION_KEY.len())?;
        (&bytes[key_start..key_end] == VERSION_KEY && &bytes[key_end..] == value).then_some(())
    };
    match bytes {
        [.., small] if *small < 24 => ends_with_key_then(&[*small]).map(|()| u64::from(*small)),
        [.., 0x18, byte] if *byte >= 24 => ends_with_key_then(&[0x18, *byte]).map(|()| u64::from(*byte)),
        _ => None,
    }
}

impl World {
    /// The whole world as canonical bytes (see the module documentation).
    pub fn snapshot_bytes(&self) -> Result<Vec<u8>, WorldSnapshotError> {
        self.snapshot_bytes_with_capacity(0)
    }

    /// As [`World::snapshot_bytes`], written into a buffer of
    /// `capacity_bytes` to begin with (the size expected: the snapshot
    /// before it, and some).
    pub fn snapshot_bytes_with_capacity(&self, capacity_bytes: usize) -> Result<Vec<u8>, WorldSnapshotError> {
        let written = Written { world: self, version: WORLD_SNAPSHOT_FORMAT_VERSION };
        canonical::to_canonical_bytes_with_capacity(&written, capacity_bytes)
            .map_err(|error| WorldSnapshotError::Unwritable { reason: error.to_string() })
    }

    /// Writes [`World::snapshot_bytes`] to `sink` as they are encoded
    /// (`canonical::write_canonical`), the rows, memories and other large
    /// maps entry by entry; returns how many bytes. `NotStreamable` means
    /// nothing written is usable: encode it whole instead.
    pub fn write_snapshot_to(&self, sink: &mut dyn std::io::Write) -> Result<u64, canonical::WriteCanonicalError> {
        let written = Written { world: self, version: WORLD_SNAPSHOT_FORMAT_VERSION };
        canonical::write_canonical(&written, SNAPSHOT_STREAMED_LEVELS, canonical::CANONICAL_STREAM_FLUSH_BYTES, sink)
    }

    /// The world [`World::snapshot_bytes`] wrote, derived fields recomputed
    /// (each row's flow digest as its flow is read: [`rows_sharing_flows`]).
    ///
    /// The bytes are read once: the version comes after the world (the
    /// longer key), so it is checked once both are read, and only a record
    /// that does not read is read again for its version alone.
    pub fn from_snapshot_bytes(bytes: &[u8]) -> Result<World, WorldSnapshotError> {
        World::read_snapshot(bytes, canonical::from_canonical_bytes::<Read>)
    }

    /// [`World::from_snapshot_bytes`], the whole record read by `read_record`.
    fn read_snapshot(
        bytes: &[u8],
        read_record: fn(&[u8]) -> Result<Read, canonical::CanonicalError>,
    ) -> Result<World, WorldSnapshotError> {
        let unreadable =
            |error: canonical::CanonicalError| WorldSnapshotError::Unreadable { reason: error.to_string() };
        let read = match read_record(bytes) {
            Ok(read) => read,
            Err(error) => {
                let version = canonical::from_canonical_bytes::<VersionOnly>(bytes).map_err(unreadable)?.version;
                if version != WORLD_SNAPSHOT_FORMAT_VERSION {
                    return Err(WorldSnapshotError::Version { version });
                }
                return Err(unreadable(error));
            }
        };
        if read.version != WORLD_SNAPSHOT_FORMAT_VERSION {
            return Err(WorldSnapshotError::Version { version: read.version });
        }
        let mut world = read.world;
        world.roles_digest = world.authored_roles_digest();
        world.recount_live_beings();
        Ok(world)
    }
}

impl World {
    /// [`World::from_snapshot_bytes`] for a replay of `being`'s moments:
    /// of the memories, only `being`'s is read; every other being's is
    /// skipped by its bytes and left out (an empty memory). A moment reads
    /// its own being's memory and no other's (`moment::recall`, the
    /// importance a reflection reads), and a replay of one being already
    /// passes over the acts that would fill the others'. Each memory read is
    /// about a kilobyte per item it holds, built item by item: gigabytes
    /// and most of the read at a million beings.
    ///
    /// `bytes` must be a snapshot's world that was read whole before (a
    /// vouched snapshot: the verification that vouched for the file read
    /// it, and the file's digest is checked on reading): the memories
    /// skipped are then skipped by their heads alone, as checked bytes are
    /// (`canonical::from_checked_canonical_bytes`), not checked again.
    pub fn from_snapshot_bytes_keeping_memory_of(bytes: &[u8], being: BeingId) -> Result<World, WorldSnapshotError> {
        let _kept = MemoriesKeptWhileReading::only_of(being);
        World::read_snapshot(bytes, canonical::from_checked_canonical_bytes::<Read>)
    }
}

thread_local! {
    /// Whose memories a snapshot read on this thread keeps: every being's
    /// but while a [`MemoriesKeptWhileReading`] says otherwise. serde's
    /// derived `Deserialize` takes no arguments, so the one read that keeps
    /// less says so here, around itself.
    static MEMORIES_KEPT_OF: std::cell::Cell<Option<BeingId>> = const { std::cell::Cell::new(None) };
}

/// While it lives, a snapshot read on this thread keeps only one being's
/// memory; dropped (also by a panic), every being's again.
struct MemoriesKeptWhileReading;

impl MemoriesKeptWhileReading {
    fn only_of(being: BeingId) -> MemoriesKeptWhileReading {
        MEMORIES_KEPT_OF.with(|kept| kept.set(Some(being)));
        MemoriesKeptWhileReading
    }
}

impl Drop for MemoriesKeptWhileReading {
    fn drop(&mut self) {
        MEMORIES_KEPT_OF.with(|kept| kept.set(None));
    }
}

/// The memories of a snapshot's world: every being's, or the one being's
/// a [`MemoriesKeptWhileReading`] names, the others skipped unread.
pub(super) fn memories_kept<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<imbl::OrdMap<BeingId, Arc<crate::memory::BeingMemory>>, D::Error> {
    struct Memories(Option<BeingId>);
    impl<'de> serde::de::Visitor<'de> for Memories {
        type Value = imbl::OrdMap<BeingId, Arc<crate::memory::BeingMemory>>;

        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("a map of beings' memories")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut entries: A) -> Result<Self::Value, A::Error> {
            let mut memories = imbl::OrdMap::new();
            while let Some(being) = entries.next_key::<BeingId>()? {
                match self.0 {
                    Some(kept) if kept != being => {
                        entries.next_value::<serde::de::IgnoredAny>()?;
                    }
                    _ => {
                        memories.insert(being, entries.next_value()?);
                    }
                }
            }
            Ok(memories)
        }
    }
    deserializer.deserialize_map(Memories(MEMORIES_KEPT_OF.with(std::cell::Cell::get)))
}

/// The distinct roleFlows [`rows_sharing_flows`] keeps to share, at most
/// (as many as the fold keeps of its geneses').
const SNAPSHOT_SHARED_FLOWS_MAX: usize = super::GENESIS_FLOWS_CACHED_MAX;

/// The rows of a snapshot's world, read one at a time: a row whose roleFlow
/// equals one read before takes that one's pointer and digest, and its own
/// copy is dropped at once. The fold's rows planted from one template share
/// one flow (`SharedFlows`); read back, each row would otherwise hold its own
/// JSON tree and digest it: about 2 KB and a BLAKE3 of its encoding per
/// being, gigabytes and seconds for a million beings. Each row's digest is
/// set here ([`super::role_flow_digest`] of the flow it holds).
pub(super) fn rows_sharing_flows<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<BeingId, Arc<BeingRow>>, D::Error> {
    struct Rows;
    impl<'de> serde::de::Visitor<'de> for Rows {
        type Value = BTreeMap<BeingId, Arc<BeingRow>>;

        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("a map of beings' rows")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut entries: A) -> Result<Self::Value, A::Error> {
            let mut rows = BTreeMap::new();
            let mut flows = KnownFlows::default();
            while let Some((id, mut row)) = entries.next_entry::<BeingId, BeingRow>()? {
                (row.role_flow, row.role_flow_digest) = flows.share(row.role_flow);
                rows.insert(id, Arc::new(row));
            }
            Ok(rows)
        }
    }
    deserializer.deserialize_map(Rows)
}

/// The flows [`rows_sharing_flows`] has read, each with its digest.
#[derive(Default)]
struct KnownFlows {
    flows: Vec<(Arc<Json>, Option<Hash32>)>,
    /// The one the last row shared: rows planted together sit together.
    last_shared: usize,
}

impl KnownFlows {
    /// `flow` as a row holds it: one read before if equal, else itself
    /// (kept while fewer than [`SNAPSHOT_SHARED_FLOWS_MAX`] are), and its digest.
    fn share(&mut self, flow: Arc<Json>) -> (Arc<Json>, Option<Hash32>) {
        let found = match self.flows.get(self.last_shared) {
            Some((known, _)) if **known == *flow => Some(self.last_shared),
            _ => self.flows.iter().position(|(known, _)| **known == *flow),
        };
        if let Some(index) = found {
            self.last_shared = index;
            let (known, digest) = &self.flows[index];
            return (known.clone(), *digest);
        }
        let digest = super::role_flow_digest(&flow);
        if self.flows.len() < SNAPSHOT_SHARED_FLOWS_MAX {
            self.flows.push((flow.clone(), digest));
        }
        (flow, digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fact::{BeingId, FactId};
    use crate::world::{Account, AuthoredRole, BeingRow, Matter, PendingSummon, Space};
    use serde_json::json;
    use std::collections::BTreeMap;

    fn sample() -> World {
        let mut world = World::new();
        let ada = BeingId([7; 32]);
        world.cursor = 42;
        world.spaces.insert(
            "/north".into(),
            Space { kind: "square".into(), qualities: BTreeMap::from([("lamps".into(), json!(-3))]) },
        );
        world.matter.insert(
            "/north/bell".into(),
            Matter {
                kind: "bell".into(),
                fields: BTreeMap::from([("rung".into(), json!({"times": [1, 2, u64::MAX]}))]),
                creator: Some(ada),
                made_at_seq: 9,
            },
        );
        world.beings.insert(
            ada,
            std::sync::Arc::new(BeingRow {
                id: ada,
                name: "ada".into(),
                parent: None,
                cognition: crate::fact::body::Cognition::Scripted,
                role_flow: json!([{"role": "walker", "when": {"me.acts": {"gt": 2}}}]).into(),
                role_flow_digest: super::super::role_flow_digest(
                    &json!([{"role": "walker", "when": {"me.acts": {"gt": 2}}}]),
                ),
                default_role: "idle".into(),
                home_space: "/north".into(),
                location: "/north".into(),
                qualities: BTreeMap::from([("mood".into(), json!("calm")), ("none".into(), json!(null))]),
                ended: false,
                inhabited_by: Some(BeingId([8; 32])),
                last_act_ms: Some(1_000),
                previous_role: Some("walker".into()),
                acts: 3,
            }),
        );
        world.names.insert("ada".into(), ada);
        world.signals.insert("weather.rain".into(), json!(true));
        world.config.insert("llm_prompt_chars_max".into(), json!(4000));
        world.config_set_by.insert(
            "llm_prompt_chars_max".into(),
            crate::world::ConfigSetBy { fact: FactId([6; 32]), being: ada, time_ms: 900, land_seq: 30 },
        );
        world.inbox.entry(ada).or_default().insert(
            40,
            PendingSummon {
                fact: FactId([1; 32]),
                land_seq: 40,
                from: ada,
                content: "hello".into(),
                caller_role: None,
                correlation: FactId([1; 32]),
                remote: None,
            },
        );
        world.recent_summons.insert(ada, vec![5, 6]);
        world.roles.insert("guide".into(), AuthoredRole { definition: json!({"name": "guide"}), author: Some(ada) });
        world.roles_digest = world.authored_roles_digest();
        world.accounts.insert("ada".into(), Account { being: ada, token_hash: "ab".repeat(32), granted_at_seq: 12 });
        let mut memory = crate::memory::BeingMemory::default();
        let remembered = |fact: u8, land_seq, kind, text: &str| crate::memory::Remembered {
            fact: FactId([fact; 32]),
            land_seq,
            kind,
            importance: fact % 11,
            text: text.into(),
        };
        use crate::memory::MemoryKind::{Act, Note, Summons};
        for item in [
            remembered(2, 10, Summons, "@bo: grain for 5 coins?"),
            remembered(3, 11, Note, "bo cheats"),
            remembered(4, 12, Act, "did pay at /market {\"to\":\"@bo\"}"),
            // Cut to the index's length when remembered; read back the same.
            remembered(5, 13, Note, &"bo paid after all; ".repeat(20)),
        ] {
            memory.remember(item).expect("in land order");
        }
        memory.supersede(FactId([3; 32]), FactId([5; 32]), 13).expect("an earlier note");
        // The last note is also a reflection covering the act and the
        // summons: one item superseded, two covered, one a reflection.
        assert_eq!(memory.reflect(FactId([5; 32]), 13, &[FactId([4; 32]), FactId([2; 32])]), vec![]);
        world.memories.insert(ada, Arc::new(memory));
        world.recount_live_beings();
        assert_eq!(world.live_beings_by_space.get("/north"), Some(&1), "the sample's being is counted where it is");
        world
    }

    #[test]
    fn the_format_version_read_from_the_end_is_the_one_read_whole() {
        let world = sample();
        for version in [0, 1, 8, 9, 23, 24, 25, 100, 255, 256, 1_000, u64::MAX] {
            let bytes = canonical::to_canonical_bytes(&Written { world: &world, version }).expect("encodes");
            let whole = canonical::from_canonical_bytes::<VersionOnly>(&bytes).expect("reads").version;
            assert_eq!(whole, version);
            assert_eq!(snapshot_format_version(&bytes), Some(version), "version {version}");
            // The fast read answers only for what it reads, and then as the whole read does.
            let at_the_end = format_version_at_the_end(&bytes);
            assert_eq!(at_the_end.is_some(), version < 256, "version {version}");
            assert!(at_the_end.is_none_or(|read| read == whole), "version {version}");
        }
        let written = world.snapshot_bytes().expect("writes");
        assert_eq!(snapshot_format_version(&written), Some(WORLD_SNAPSHOT_FORMAT_VERSION));
        // No version: none read, from the end or whole.
        let no_version = canonical::to_canonical_bytes(&json!({"world": 1})).expect("encodes");
        for bytes in [&no_version[..], b"", b"\x67version", &written[..written.len() - 1]] {
            assert_eq!(snapshot_format_version(bytes), None, "{bytes:?}");
        }
    }

    #[test]
    fn a_world_read_back_equals_the_world_written_with_its_derived_fields() {
        let world = sample();
        let bytes = world.snapshot_bytes().expect("writes");
        let read = World::from_snapshot_bytes(&bytes).expect("reads");
        assert_eq!(read, world);
        assert_eq!(read.memories_digest(), world.memories_digest(), "the index rebuilt is the index written");
        assert_eq!(world.snapshot_bytes().expect("writes"), bytes, "one world, one form");
        assert_eq!(World::from_snapshot_bytes(&World::new().snapshot_bytes().expect("writes")), Ok(World::new()));
    }

    /// A replay of one being reads its own memory from a snapshot and skips
    /// the others'; everything else reads as written, and the next read on
    /// the thread keeps every memory again.
    #[test]
    fn a_snapshot_read_for_one_being_keeps_its_memory_alone() {
        let mut world = sample();
        let ada = BeingId([7; 32]);
        let bo = BeingId([9; 32]);
        let ada_memory = world.memories.get(&ada).cloned().expect("the sample's memory");
        world.memories.insert(bo, ada_memory.clone());
        let bytes = world.snapshot_bytes().expect("writes");
        let check = |kept: BeingId, expected: &[BeingId]| {
            let read = World::from_snapshot_bytes_keeping_memory_of(&bytes, kept).expect("reads");
            let mut whole = world.clone();
            whole.memories = whole.memories.into_iter().filter(|(being, _)| expected.contains(being)).collect();
            assert_eq!(read, whole, "kept {kept:?}");
            assert_eq!(read.memories.get(&kept).map(|memory| memory.len()), expected.first().map(|_| ada_memory.len()));
        };
        check(ada, &[ada]);
        check(bo, &[bo]);
        check(BeingId([1; 32]), &[]);
        assert_eq!(World::from_snapshot_bytes(&bytes).expect("reads"), world, "every memory read again");
    }

    /// Rows planted from one template share one roleFlow in the fold; read
    /// back, they share one again (a million rows held a million copies,
    /// about 2 KB each, and digested each). Every row's digest is its own
    /// flow's, whether its flow was shared, kept to share or, past
    /// `SNAPSHOT_SHARED_FLOWS_MAX` distinct flows, read on its own.
    #[test]
    fn rows_read_back_share_each_flow_read_before_and_carry_its_digest() {
        let mut world = sample();
        let template = world.beings.values().next().cloned().expect("the sample's being");
        let flow_of = |kind: u32| json!([{"role": format!("walker-{kind}"), "when": {"me.acts": {"gt": 2}}}]);
        // Each of 3 * (the most kept + 8) beings holds one of (the most kept + 8) flows, the flows interleaved.
        let kinds = SNAPSHOT_SHARED_FLOWS_MAX as u32 + 8;
        for index in 0..3 * kinds {
            let mut id = [0u8; 32];
            id[..4].copy_from_slice(&index.to_be_bytes());
            id[4] = 1;
            let flow = flow_of(index % kinds);
            let row = BeingRow {
                id: BeingId(id),
                name: format!("walker-{index}"),
                role_flow_digest: super::super::role_flow_digest(&flow),
                role_flow: Arc::new(flow),
                ..(*template).clone()
            };
            world.beings.insert(BeingId(id), Arc::new(row));
        }
        world.recount_live_beings();
        let read = World::from_snapshot_bytes(&world.snapshot_bytes().expect("writes")).expect("reads");
        assert_eq!(read, world, "rows, flows and digests read back as written");
        let mut distinct: Vec<&Arc<Json>> = Vec::new();
        for row in read.beings.values() {
            assert_eq!(row.role_flow_digest, super::super::role_flow_digest(&row.role_flow), "{}", row.name);
            if !distinct.iter().any(|flow| Arc::ptr_eq(flow, &row.role_flow)) {
                distinct.push(&row.role_flow);
            }
        }
        // Rows are read in id order: the walkers' kinds in turn, the sample's
        // being last. The first kinds read are kept and shared; each row of
        // the 8 kinds read once as many were kept holds its own, as does the
        // sample's being.
        assert_eq!(distinct.len(), SNAPSHOT_SHARED_FLOWS_MAX + 3 * 8 + 1);
    }

    /// A snapshot is encoded in one buffer, and a map or struct whose
    /// entries arrive out of canonical order is copied whole to be put in
    /// order: at the top of the snapshot that was the whole world, twice
    /// (most of a gigabyte each at a million beings). The record, the world
    /// and each row declare their fields in canonical order (shorter keys
    /// first, then bytewise), so only small parts are copied.
    /// The sample and 2,000 more beings, each with a row, a name and a memory.
    fn crowd() -> World {
        let mut world = sample();
        let template = world.beings.values().next().cloned().expect("the sample's being");
        let memory = world.memories.values().next().cloned().expect("the sample's memory");
        for index in 0..2_000u32 {
            let mut id = [0u8; 32];
            id[..4].copy_from_slice(&index.to_be_bytes());
            id[4] = 1;
            let being = BeingId(id);
            let row = BeingRow { id: being, name: format!("walker-{index}"), ..(*template).clone() };
            world.names.insert(row.name.clone(), being);
            world.beings.insert(being, Arc::new(row));
            world.memories.insert(being, memory.clone());
        }
        world
    }

    #[test]
    fn a_snapshot_is_encoded_without_copying_its_large_parts_to_order_them() {
        let world = crowd();
        let written = Written { version: WORLD_SNAPSHOT_FORMAT_VERSION, world: &world };
        let (bytes, copied) = canonical::to_canonical_bytes_counting_copies(&written).expect("writes");
        let copied = copied.expect("the direct encoder wrote it");
        assert_eq!(bytes, world.snapshot_bytes().expect("writes"), "the same bytes");
        for capacity in [0, 1, bytes.len() - 1, bytes.len(), bytes.len() * 2] {
            let sized = world.snapshot_bytes_with_capacity(capacity).expect("writes");
            assert_eq!(sized, bytes, "the same bytes from a buffer of {capacity}");
        }
        assert!(
            copied * 20 < bytes.len(),
            "{copied} of {} bytes were copied to put maps in order: a large part arrives out of order",
            bytes.len()
        );
    }

    /// Records the size of each write it is given.
    #[derive(Default)]
    struct Writes {
        bytes: Vec<u8>,
        largest: usize,
    }

    impl std::io::Write for Writes {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.largest = self.largest.max(bytes.len());
            self.bytes.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Written as it is encoded, a snapshot is the same bytes, and it is
    /// handed to its file in parts no larger than the encoder's flush size
    /// and one entry: never the world whole.
    #[test]
    fn a_snapshot_written_as_it_is_encoded_is_its_bytes_in_parts() {
        for world in [World::new(), sample(), crowd()] {
            let bytes = world.snapshot_bytes().expect("writes");
            let mut writes = Writes::default();
            let count = world.write_snapshot_to(&mut writes).expect("streams");
            assert_eq!(count, bytes.len() as u64);
            assert_eq!(writes.bytes, bytes, "the same bytes");
            assert!(
                writes.largest <= canonical::CANONICAL_STREAM_FLUSH_BYTES + 4_096,
                "{} bytes at once",
                writes.largest
            );
        }
        // Flushed after every entry: the world's maps with text keys (its
        // names) turn out of order once their first entry is written.
        let crowd = crowd();
        let written = Written { world: &crowd, version: WORLD_SNAPSHOT_FORMAT_VERSION };
        let mut writes = Writes::default();
        let outcome = canonical::write_canonical(&written, SNAPSHOT_STREAMED_LEVELS, 1, &mut writes);
        assert!(matches!(outcome, Err(canonical::WriteCanonicalError::NotStreamable)), "{outcome:?}");
    }

    #[test]
    fn another_version_and_damaged_bytes_are_named() {
        let bytes = canonical::encode_json(&json!({"version": 1, "world": {}})).expect("encodes");
        assert_eq!(World::from_snapshot_bytes(&bytes), Err(WorldSnapshotError::Version { version: 1 }));
        let written = sample().snapshot_bytes().expect("writes");
        for cut in [0, 1, written.len() / 2, written.len() - 1] {
            assert!(
                matches!(World::from_snapshot_bytes(&written[..cut]), Err(WorldSnapshotError::Unreadable { .. })),
                "cut at {cut}"
            );
        }
    }
}
