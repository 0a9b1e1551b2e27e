//! The log store's derived indexes: two files beside the segments, and the
//! in-memory form a store reads them into.
//!
//! - `beings.index`: one record per being, in the order their geneses were
//!   stored (a being's place in it is its ordinal): the name's length (u16,
//!   little-endian), the being id (32), the name, a check (4).
//! - `land.index`: one fixed record per fact, at `land_seq * LAND_RECORD_BYTES`:
//!   the frame's offset in its segment (u64), the seq on its reel (u64), the
//!   being's ordinal (u32), flags (u32: genesis, key change, end), a check (4).
//!
//! Each check covers the record (and, for the land index, its land seq), so
//! a damaged or half-written record is found on reading and everything from
//! it on is rebuilt from the log. A being record's check is a keyed BLAKE3
//! prefix. A land record's is a CRC-32 when its flags carry
//! [`FLAG_CHECKED_BY_CRC`], which every record written since issue 50's
//! twenty-fourth step does, and a keyed BLAKE3 prefix otherwise (the
//! records written before, read as they are until `seed reindex` writes
//! them again): an open checks every record, four million on a land of a
//! million beings, and a BLAKE3 of each was a third of that open's work.
//! Both are four bytes and neither is a defence against a forger (the
//! facts' signatures are): a damaged record passes either with a chance of
//! one in four billion, and one whose damage sets or clears the flag is
//! checked by the other function and fails it alike. Both files are
//! written after the facts they describe are synced and are never synced
//! themselves: they are derived, and an open reads the log past their end.

use crate::fact::body::{GenesisBody, KIND_END, KIND_GENESIS, KIND_MOVE, KIND_ROTATE_KEY};
use crate::fact::{BeingId, Fact};
use crate::store::derived_key::DerivedKeyContext;
use std::collections::{BTreeMap, BTreeSet};

pub(super) const LAND_RECORD_BYTES: usize = 28;
const CHECK_BYTES: usize = 4;
static LAND_CHECK_CONTEXT: DerivedKeyContext = DerivedKeyContext::new("seed land index record v1");
static BEING_CHECK_CONTEXT: DerivedKeyContext = DerivedKeyContext::new("seed being index record v1");
/// The longest name a being record may hold (names are far shorter).
const BEING_NAME_BYTES_MAX: usize = 1024;

/// The ordinal of a frame that could not be placed on a reel (it takes its
/// land seq's slot all the same, so that slots stay in land-seq order).
pub(super) const UNPLACED: u32 = u32::MAX;

pub(super) const FLAG_GENESIS: u32 = 1;
pub(super) const FLAG_KEY_CHANGE: u32 = 2;
pub(super) const FLAG_END: u32 = 4;
/// On file only: the record's check is a CRC-32 (else a keyed BLAKE3
/// prefix, as every record had before). Never in a [`LandSlot`]'s flags.
pub(super) const FLAG_CHECKED_BY_CRC: u32 = 1 << 31;

/// Where one fact is and whose it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LandSlot {
    pub offset: u64,
    pub seq: u64,
    pub ordinal: u32,
    pub flags: u32,
}

/// One being known to the indexes.
#[derive(Debug, Clone)]
pub(super) struct BeingEntry {
    pub id: BeingId,
    pub name: String,
    /// The land seq of each fact of its reel, by seq.
    pub reel: Vec<u64>,
    /// The land seq of its last genesis or key rotation (whose key signs next).
    pub key_land_seq: u64,
}

/// Flags for a fact's slot.
pub(super) fn flags_of(fact: &Fact) -> u32 {
    match fact.kind() {
        KIND_GENESIS => FLAG_GENESIS | FLAG_KEY_CHANGE,
        KIND_ROTATE_KEY | KIND_MOVE => FLAG_KEY_CHANGE,
        KIND_END => FLAG_END,
        _ => 0,
    }
}

fn check(context: &DerivedKeyContext, parts: &[&[u8]]) -> [u8; CHECK_BYTES] {
    let mut hasher = context.hasher();
    for part in parts {
        hasher.update(part);
    }
    let mut out = [0; CHECK_BYTES];
    out.copy_from_slice(&hasher.finalize().as_bytes()[..CHECK_BYTES]);
    out
}

/// The CRC-32 check of a land record's fields at `land_seq`.
fn land_record_crc(land_seq: u64, fields: &[u8]) -> [u8; CHECK_BYTES] {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&land_seq.to_le_bytes());
    hasher.update(fields);
    hasher.finalize().to_le_bytes()
}

/// Writes the fields of `slot`'s record, with `flags` for its flags.
fn push_land_fields(slot: &LandSlot, flags: u32, out: &mut Vec<u8>) {
    debug_assert_eq!(slot.flags & FLAG_CHECKED_BY_CRC, 0, "the flag is the file's, not the slot's");
    out.extend_from_slice(&slot.offset.to_le_bytes());
    out.extend_from_slice(&slot.seq.to_le_bytes());
    out.extend_from_slice(&slot.ordinal.to_le_bytes());
    out.extend_from_slice(&flags.to_le_bytes());
}

/// Writes `slot`'s record, checked by a CRC-32.
pub(super) fn encode_land_slot(land_seq: u64, slot: &LandSlot, out: &mut Vec<u8>) {
    let start = out.len();
    push_land_fields(slot, slot.flags | FLAG_CHECKED_BY_CRC, out);
    let sum = land_record_crc(land_seq, &out[start..]);
    out.extend_from_slice(&sum);
}

/// The slot a land index record holds, or `None` if its check fails (a
/// CRC-32 or a keyed BLAKE3 prefix, as its flags say).
pub(super) fn decode_land_slot(land_seq: u64, record: &[u8]) -> Option<LandSlot> {
    let record: &[u8; LAND_RECORD_BYTES] = record.try_into().ok()?;
    let (fields, sum) = record.split_at(LAND_RECORD_BYTES - CHECK_BYTES);
    let flags = u32::from_le_bytes(fields[20..24].try_into().ok()?);
    let expected = match flags & FLAG_CHECKED_BY_CRC {
        0 => check(&LAND_CHECK_CONTEXT, &[&land_seq.to_le_bytes(), fields]),
        _ => land_record_crc(land_seq, fields),
    };
    if expected != sum {
        return None;
    }
    Some(LandSlot {
        offset: u64::from_le_bytes(fields[0..8].try_into().ok()?),
        seq: u64::from_le_bytes(fields[8..16].try_into().ok()?),
        ordinal: u32::from_le_bytes(fields[16..20].try_into().ok()?),
        flags: flags & !FLAG_CHECKED_BY_CRC,
    })
}

/// A record as every record was written before [`FLAG_CHECKED_BY_CRC`]:
/// checked by a keyed BLAKE3 prefix (for the tests that read such files).
#[cfg(test)]
pub(super) fn encode_land_slot_checked_by_blake3(land_seq: u64, slot: &LandSlot, out: &mut Vec<u8>) {
    let start = out.len();
    push_land_fields(slot, slot.flags, out);
    let sum = check(&LAND_CHECK_CONTEXT, &[&land_seq.to_le_bytes(), &out[start..]]);
    out.extend_from_slice(&sum);
}

pub(super) fn encode_being(being: &BeingId, name: &str, out: &mut Vec<u8>) {
    let start = out.len();
    // Names are validated far below this when planted; an imported one
    // longer than the record allows is kept cut (the index is derived).
    let name = &name.as_bytes()[..name.len().min(BEING_NAME_BYTES_MAX)];
    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
    out.extend_from_slice(being.as_bytes());
    out.extend_from_slice(name);
    let sum = check(&BEING_CHECK_CONTEXT, &[&out[start..]]);
    out.extend_from_slice(&sum);
}

/// The beings in `bytes` up to the first record that does not hold, and
/// the bytes they take.
pub(super) fn decode_beings(bytes: &[u8]) -> (Vec<(BeingId, String)>, usize) {
    let mut beings = Vec::new();
    let mut at = 0;
    while let Some(len) = bytes.get(at..at + 2) {
        let len = u16::from_le_bytes([len[0], len[1]]) as usize;
        if len > BEING_NAME_BYTES_MAX {
            break;
        }
        let end = at + 2 + 32 + len;
        let (Some(fields), Some(sum)) = (bytes.get(at..end), bytes.get(end..end + CHECK_BYTES)) else { break };
        if check(&BEING_CHECK_CONTEXT, &[fields]) != sum {
            break;
        }
        let Some(being) = BeingId::from_slice(&fields[2..34]) else { break };
        let Ok(name) = String::from_utf8(fields[34..].to_vec()) else { break };
        beings.push((being, name));
        at = end + CHECK_BYTES;
    }
    (beings, at)
}

/// What the indexes say, in memory: every being (by ordinal, with its reel's
/// land seqs), the names, the fork proofs, and the slots of the facts the
/// land index file does not hold (yet).
#[derive(Debug, Default)]
pub(super) struct Indexes {
    pub beings: Vec<BeingEntry>,
    pub ordinals: BTreeMap<BeingId, u32>,
    pub names: BTreeSet<(String, BeingId)>,
    /// Beings recorded in `beings.index` (the rest are still to be written).
    pub beings_on_file: u32,
    /// The bytes of `beings.index` those records take (past them, the file
    /// is cut back before more are written).
    pub beings_file_bytes: u64,
    /// Facts whose slot `land.index` holds (its first whole, checked records).
    pub slots_on_file: u64,
    /// Slots of land seqs `slots_on_file..`.
    pub slots_after_file: Vec<LandSlot>,
    /// Fork proofs: being, seq, rival id, the proof's place in `forks/`.
    pub forks: Vec<ForkEntry>,
    pub forked: BTreeSet<BeingId>,
    /// Frames of the log that could not be indexed (undecodable, or out of
    /// their reel's order), by land seq.
    pub unindexed: Vec<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ForkEntry {
    pub being: BeingId,
    pub seq: u64,
    pub rival: crate::fact::FactId,
    pub proof: u64,
}

impl Indexes {
    pub fn land_len(&self) -> u64 {
        self.slots_on_file + self.slots_after_file.len() as u64
    }

    /// The indexes of the beings `beings.index` holds (`beings`, in file
    /// order, taking `file_bytes`), none of their facts yet: the same
    /// indexes as [`Indexes::add_being`] for each in turn (where an id
    /// comes twice, the later ordinal is kept, as a later insert would
    /// keep it), the names' and the ids' maps on two threads. Each map is
    /// collected whole, which sorts its keys and builds the tree from
    /// them, rather than inserted into a key at a time: a million inserts
    /// walked the tree a million times and took most of an open of a land
    /// that size.
    pub fn of_beings_on_file(beings: Vec<(BeingId, String)>, file_bytes: u64) -> Indexes {
        let (names, ordinals) = std::thread::scope(|scope| {
            let names = scope.spawn(|| beings.iter().map(|(being, name)| (name.clone(), *being)).collect());
            let ordinals = beings.iter().map(|(being, _)| *being).zip(0u32..).collect();
            (names.join().expect("collecting names does not panic"), ordinals)
        });
        let beings: Vec<BeingEntry> =
            beings.into_iter().map(|(id, name)| BeingEntry { id, name, reel: Vec::new(), key_land_seq: 0 }).collect();
        Indexes {
            beings_on_file: beings.len() as u32,
            beings_file_bytes: file_bytes,
            beings,
            ordinals,
            names,
            ..Indexes::default()
        }
    }

    /// Adds a being with no facts yet; returns its ordinal.
    pub fn add_being(&mut self, being: BeingId, name: String) -> u32 {
        let ordinal = self.beings.len() as u32;
        self.names.insert((name.clone(), being));
        self.ordinals.insert(being, ordinal);
        self.beings.push(BeingEntry { id: being, name, reel: Vec::new(), key_land_seq: 0 });
        ordinal
    }

    /// Records a slot the land index file holds.
    pub fn add_slot_on_file(&mut self, land_seq: u64, slot: &LandSlot) {
        self.place(land_seq, slot);
        self.slots_on_file += 1;
    }

    /// Records the slot of a fact appended (or found) past the file's end.
    pub fn add_slot_after_file(&mut self, land_seq: u64, slot: LandSlot) {
        self.place(land_seq, &slot);
        self.slots_after_file.push(slot);
    }

    fn place(&mut self, land_seq: u64, slot: &LandSlot) {
        if slot.ordinal == UNPLACED {
            self.unindexed.push(land_seq);
            return;
        }
        let entry = &mut self.beings[slot.ordinal as usize];
        debug_assert_eq!(entry.reel.len() as u64, slot.seq, "slots come in reel order");
        entry.reel.push(land_seq);
        if slot.flags & FLAG_KEY_CHANGE != 0 {
            entry.key_land_seq = land_seq;
        }
    }

    /// Whether a slot read from the land index file fits what is known: its
    /// being is known and it is the next fact of that being's reel.
    pub fn fits(&self, slot: &LandSlot) -> bool {
        slot.ordinal == UNPLACED
            || self.beings.get(slot.ordinal as usize).is_some_and(|entry| entry.reel.len() as u64 == slot.seq)
    }

    /// Indexes a frame read from the log (past the index files' end, or in a
    /// rebuild): its being's ordinal (added at its genesis) and its slot.
    /// A frame that cannot be placed takes an `UNPLACED` slot.
    pub fn index_frame(&mut self, land_seq: u64, offset: u64, envelope: &[u8]) -> LandSlot {
        let placed = Fact::decode_envelope_for_index(envelope).ok().and_then(|fact| {
            let being = fact.header.being;
            let ordinal = match self.ordinals.get(&being) {
                Some(ordinal) => *ordinal,
                None if fact.kind() == KIND_GENESIS && fact.header.seq == 0 => {
                    let name = fact.body_as::<GenesisBody>().ok()?.name;
                    self.add_being(being, name)
                }
                None => return None,
            };
            let slot = LandSlot { offset, seq: fact.header.seq, ordinal, flags: flags_of(&fact) };
            self.fits(&slot).then_some(slot)
        });
        let slot = placed.unwrap_or(LandSlot { offset, seq: 0, ordinal: UNPLACED, flags: 0 });
        self.add_slot_after_file(land_seq, slot);
        slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A land record reads back as written, whichever check it carries (the
    /// records of a land written before the CRC, and those since), and not
    /// at another land seq; damage to any byte, the flag of the check
    /// included, fails it.
    #[test]
    fn land_records_read_back_by_either_check_and_damage_to_any_byte_fails_them() {
        let slots = [
            (0, LandSlot { offset: 0, seq: 0, ordinal: 0, flags: FLAG_GENESIS | FLAG_KEY_CHANGE }),
            (7, LandSlot { offset: 4_096, seq: 3, ordinal: 2, flags: 0 }),
            (4_000_007, LandSlot { offset: u64::MAX - 1, seq: 99, ordinal: UNPLACED, flags: FLAG_END }),
        ];
        for (land_seq, slot) in slots {
            let (mut by_crc, mut by_blake3) = (Vec::new(), Vec::new());
            encode_land_slot(land_seq, &slot, &mut by_crc);
            encode_land_slot_checked_by_blake3(land_seq, &slot, &mut by_blake3);
            for (record, how) in [(&by_crc, "crc"), (&by_blake3, "blake3")] {
                assert_eq!(record.len(), LAND_RECORD_BYTES);
                assert_eq!(decode_land_slot(land_seq, record), Some(slot), "{how} at {land_seq}");
                assert_eq!(decode_land_slot(land_seq + 1, record), None, "{how}: another land seq");
                for byte in 0..LAND_RECORD_BYTES {
                    for bit in [0x01u8, 0x80] {
                        let mut damaged = record.clone();
                        damaged[byte] ^= bit;
                        assert_eq!(decode_land_slot(land_seq, &damaged), None, "{how}: byte {byte} bit {bit:#x}");
                    }
                }
            }
            assert_ne!(by_crc, by_blake3, "records written now carry the CRC");
        }
    }

    /// The indexes an open builds whole from `beings.index` are those the
    /// same beings added one by one would give: the ids' and the names'
    /// maps alike, an id that comes twice keeping its later ordinal.
    #[test]
    fn beings_collected_whole_index_as_beings_added_one_by_one() {
        let id = |byte: u8| BeingId::from_slice(&[byte; 32]).expect("32 bytes make an id");
        let check = |beings: Vec<(BeingId, String)>| {
            let mut one_by_one = Indexes::default();
            for (being, name) in &beings {
                one_by_one.add_being(*being, name.clone());
            }
            let whole = Indexes::of_beings_on_file(beings.clone(), 99);
            assert_eq!(whole.ordinals, one_by_one.ordinals, "{beings:?}");
            assert_eq!(whole.names, one_by_one.names, "{beings:?}");
            let ids = |indexes: &Indexes| indexes.beings.iter().map(|entry| entry.id).collect::<Vec<_>>();
            assert_eq!(ids(&whole), ids(&one_by_one), "{beings:?}");
            assert_eq!((whole.beings_on_file, whole.beings_file_bytes), (beings.len() as u32, 99));
        };
        check(vec![]);
        check(vec![(id(7), "ann".into())]);
        check(vec![(id(9), "cy".into()), (id(2), "bo".into()), (id(5), "ann".into()), (id(1), "bo".into())]);
        check(vec![(id(3), "ann".into()), (id(4), "dee".into()), (id(3), "ann".into()), (id(8), "eve".into())]);
        check((0..=255u8).rev().map(|byte| (id(byte), format!("walker-{}", byte % 17))).collect());
    }
}
