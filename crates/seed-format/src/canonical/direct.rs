//! Canonical CBOR straight from serde, without the `Value` tree: every act
//! body and every digest input is encoded per moment, and building, sorting
//! and walking a tree of owned values cost more than the encoding itself.
//!
//! It writes what `Value::serialized` + `canonicalise_in_place` + `write_raw`
//! write (ciborium's conventions: `None` and `()` as null, unit variants as
//! text, other variants as a one-entry map, structs as text-keyed maps; map
//! keys sorted by their encoded bytes). Whatever that path would refuse or
//! that this one does not take (floats, 128-bit integers, tags, duplicate
//! keys, nesting past the limit) makes this one give up, and the caller
//! falls back to the reference path, which names the problem. A property
//! test holds the two to the same bytes.

use super::{write_head, GaveUp, CBOR_NESTING_DEPTH_MAX};
use serde::ser::{self, Serialize};

/// The buffer a value is encoded in to begin with, unless the caller knows better.
pub(super) const BUFFER_BYTES_INITIAL: usize = 256;

/// The canonical bytes of `value`, or `None` where the reference path must decide.
pub(super) fn to_bytes<T: Serialize + ?Sized>(value: &T) -> Option<Vec<u8>> {
    to_bytes_in(value, BUFFER_BYTES_INITIAL)
}

/// As [`to_bytes`], into a buffer of `capacity` bytes to begin with.
pub(super) fn to_bytes_in<T: Serialize + ?Sized>(value: &T, capacity: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(capacity);
    value.serialize(Writer { out: &mut out, depth: 0 }).ok()?;
    Some(out)
}

std::thread_local! {
    /// Bytes copied on this thread to put maps' entries in order (`Entries::finish`).
    static BYTES_COPIED_TO_REORDER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// As [`to_bytes`], with the bytes copied to put maps in order: a map (or
/// struct) whose entries do not arrive in canonical order is copied whole
/// once it is written, so a large one arriving out of order is that much
/// more memory at once.
pub(super) fn to_bytes_counting_copies<T: Serialize + ?Sized>(value: &T) -> Option<(Vec<u8>, usize)> {
    let before = BYTES_COPIED_TO_REORDER.with(std::cell::Cell::get);
    let bytes = to_bytes(value)?;
    Some((bytes, BYTES_COPIED_TO_REORDER.with(std::cell::Cell::get) - before))
}

/// Map entries whose offsets are reserved up front, at most.
const MAP_ENTRIES_RESERVED_MAX: usize = 64;

/// ciborium's markers for tagged values: tags are never canonical here.
fn is_tag_marker(name: &str) -> bool {
    name == "@@TAG@@"
}

pub(super) struct Writer<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
}

impl<'a> Writer<'a> {
    /// A writer appending to `out` a value nested `depth` levels deep (the
    /// streaming encoder hands it the parts it encodes whole).
    pub(super) fn at_depth(out: &'a mut Vec<u8>, depth: usize) -> Writer<'a> {
        Writer { out, depth }
    }

    fn check_depth(&self) -> Result<(), GaveUp> {
        if self.depth > CBOR_NESTING_DEPTH_MAX {
            return Err(GaveUp);
        }
        Ok(())
    }

    fn text(self, text: &str) -> Result<(), GaveUp> {
        self.check_depth()?;
        write_head(3, text.len() as u64, self.out);
        self.out.extend_from_slice(text.as_bytes());
        Ok(())
    }

    fn signed(self, value: i64) -> Result<(), GaveUp> {
        self.check_depth()?;
        if value >= 0 {
            write_head(0, value as u64, self.out);
        } else {
            // CBOR stores a negative n as -1 - n in major type 1.
            write_head(1, (-1 - i128::from(value)) as u64, self.out);
        }
        Ok(())
    }

    fn unsigned(self, value: u64) -> Result<(), GaveUp> {
        self.check_depth()?;
        write_head(0, value, self.out);
        Ok(())
    }

    fn simple(self, byte: u8) -> Result<(), GaveUp> {
        self.check_depth()?;
        self.out.push(byte);
        Ok(())
    }

    /// A one-entry map `{variant: ...}` whose value the caller writes next.
    fn variant_head(&mut self, variant: &str) -> Result<(), GaveUp> {
        self.check_depth()?;
        write_head(5, 1, self.out);
        if self.depth + 1 > CBOR_NESTING_DEPTH_MAX {
            return Err(GaveUp);
        }
        write_head(3, variant.len() as u64, self.out);
        self.out.extend_from_slice(variant.as_bytes());
        Ok(())
    }
}

impl<'a> ser::Serializer for Writer<'a> {
    type Ok = ();
    type Error = GaveUp;
    type SerializeSeq = Sequence<'a>;
    type SerializeTuple = Sequence<'a>;
    type SerializeTupleStruct = Sequence<'a>;
    type SerializeTupleVariant = Sequence<'a>;
    type SerializeMap = Entries<'a>;
    type SerializeStruct = Entries<'a>;
    type SerializeStructVariant = Entries<'a>;

    fn serialize_bool(self, value: bool) -> Result<(), GaveUp> {
        self.simple(if value { 0xf5 } else { 0xf4 })
    }
    fn serialize_i8(self, value: i8) -> Result<(), GaveUp> {
        self.signed(value.into())
    }
    fn serialize_i16(self, value: i16) -> Result<(), GaveUp> {
        self.signed(value.into())
    }
    fn serialize_i32(self, value: i32) -> Result<(), GaveUp> {
        self.signed(value.into())
    }
    fn serialize_i64(self, value: i64) -> Result<(), GaveUp> {
        self.signed(value)
    }
    fn serialize_u8(self, value: u8) -> Result<(), GaveUp> {
        self.unsigned(value.into())
    }
    fn serialize_u16(self, value: u16) -> Result<(), GaveUp> {
        self.unsigned(value.into())
    }
    fn serialize_u32(self, value: u32) -> Result<(), GaveUp> {
        self.unsigned(value.into())
    }
    fn serialize_u64(self, value: u64) -> Result<(), GaveUp> {
        self.unsigned(value)
    }
    fn serialize_i128(self, _value: i128) -> Result<(), GaveUp> {
        Err(GaveUp)
    }
    fn serialize_u128(self, _value: u128) -> Result<(), GaveUp> {
        Err(GaveUp)
    }
    fn serialize_f32(self, _value: f32) -> Result<(), GaveUp> {
        Err(GaveUp)
    }
    fn serialize_f64(self, _value: f64) -> Result<(), GaveUp> {
        Err(GaveUp)
    }
    fn serialize_char(self, value: char) -> Result<(), GaveUp> {
        self.text(value.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, value: &str) -> Result<(), GaveUp> {
        self.text(value)
    }
    fn serialize_bytes(self, value: &[u8]) -> Result<(), GaveUp> {
        self.check_depth()?;
        write_head(2, value.len() as u64, self.out);
        self.out.extend_from_slice(value);
        Ok(())
    }
    fn serialize_none(self) -> Result<(), GaveUp> {
        self.simple(0xf6)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), GaveUp> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), GaveUp> {
        self.simple(0xf6)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), GaveUp> {
        self.simple(0xf6)
    }
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Result<(), GaveUp> {
        self.text(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Result<(), GaveUp> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        mut self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), GaveUp> {
        if is_tag_marker(name) {
            return Err(GaveUp);
        }
        self.variant_head(variant)?;
        value.serialize(Writer { out: self.out, depth: self.depth + 1 })
    }
    fn serialize_seq(self, length: Option<usize>) -> Result<Sequence<'a>, GaveUp> {
        self.check_depth()?;
        Ok(Sequence::new(self.out, self.depth, length))
    }
    fn serialize_tuple(self, length: usize) -> Result<Sequence<'a>, GaveUp> {
        self.serialize_seq(Some(length))
    }
    fn serialize_tuple_struct(self, _name: &'static str, length: usize) -> Result<Sequence<'a>, GaveUp> {
        self.serialize_seq(Some(length))
    }
    fn serialize_tuple_variant(
        mut self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        length: usize,
    ) -> Result<Sequence<'a>, GaveUp> {
        if is_tag_marker(name) {
            return Err(GaveUp);
        }
        self.variant_head(variant)?;
        Ok(Sequence::new(self.out, self.depth + 1, Some(length)))
    }
    fn serialize_map(self, length: Option<usize>) -> Result<Entries<'a>, GaveUp> {
        self.check_depth()?;
        Ok(Entries::new(self.out, self.depth, length))
    }
    fn serialize_struct(self, _name: &'static str, length: usize) -> Result<Entries<'a>, GaveUp> {
        self.serialize_map(Some(length))
    }
    fn serialize_struct_variant(
        mut self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        length: usize,
    ) -> Result<Entries<'a>, GaveUp> {
        self.variant_head(variant)?;
        Ok(Entries::new(self.out, self.depth + 1, Some(length)))
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

/// An array: its items are written after a head for the announced length;
/// without one, after a one-byte placeholder that `finish` fills in (and
/// widens in the rare case of 24 items or more).
pub(super) struct Sequence<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
    announced: Option<usize>,
    items: usize,
    /// Where the placeholder head is, when the length was not announced.
    head_at: usize,
}

impl<'a> Sequence<'a> {
    fn new(out: &'a mut Vec<u8>, depth: usize, announced: Option<usize>) -> Sequence<'a> {
        let head_at = out.len();
        match announced {
            Some(length) => write_head(4, length as u64, out),
            None => out.push(0),
        }
        Sequence { out, depth, announced, items: 0, head_at }
    }

    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), GaveUp> {
        self.items += 1;
        value.serialize(Writer { out: self.out, depth: self.depth + 1 })
    }

    fn finish(self) -> Result<(), GaveUp> {
        match self.announced {
            Some(length) if length == self.items => Ok(()),
            Some(_) => Err(GaveUp),
            None => {
                fill_head(self.out, self.head_at, 4, self.items);
                Ok(())
            }
        }
    }
}

/// Writes the head of a container of `count` items over the one-byte
/// placeholder at `head_at`, widening it when the head needs more bytes.
fn fill_head(out: &mut Vec<u8>, head_at: usize, major: u8, count: usize) {
    if count < 24 {
        out[head_at] = (major << 5) | count as u8;
    } else {
        let mut head = Vec::with_capacity(9);
        write_head(major, count as u64, &mut head);
        out.splice(head_at..head_at + 1, head);
    }
}

/// serde names each kind of array's element method apart; all write an item.
macro_rules! sequence_of {
    ($($kind:ident::$method:ident),*) => {$(
        impl ser::$kind for Sequence<'_> {
            type Ok = ();
            type Error = GaveUp;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), GaveUp> {
                self.item(value)
            }
            fn end(self) -> Result<(), GaveUp> {
                self.finish()
            }
        }
    )*};
}

sequence_of!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// A map: entries are written in place after the head of the announced
/// length (or a one-byte placeholder `finish` fills in and widens), then,
/// unless they already are, put in the order of their encoded keys
/// (duplicates give up). Struct fields arrive in declaration order, which
/// often is canonical already; writing in place spares every map a buffer
/// of its own. Writing the announced head first matters for a large map:
/// widening a placeholder moves every byte written after it (a world
/// snapshot's map of a million beings moved its whole encoding).
pub(super) struct Entries<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
    head_at: usize,
    announced: Option<usize>,
    /// Where the first entry starts, just after the head.
    entries_at: usize,
    /// (key start, value start, entry end) in `out`.
    entries: Vec<(usize, usize, usize)>,
}

impl<'a> Entries<'a> {
    fn new(out: &'a mut Vec<u8>, depth: usize, announced: Option<usize>) -> Entries<'a> {
        let head_at = out.len();
        match announced {
            Some(length) => write_head(5, length as u64, out),
            None => out.push(0),
        }
        let entries_at = out.len();
        // An announced length only sizes the offsets' first allocation, capped:
        // it comes from the value's own `Serialize`, which could announce
        // anything (a wrong one gives up in `finish`).
        let reserved = announced.unwrap_or(8).min(MAP_ENTRIES_RESERVED_MAX);
        Entries { out, depth, head_at, announced, entries_at, entries: Vec::with_capacity(reserved) }
    }

    fn key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), GaveUp> {
        let start = self.out.len();
        key.serialize(Writer { out: self.out, depth: self.depth + 1 })?;
        self.entries.push((start, self.out.len(), usize::MAX));
        Ok(())
    }

    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), GaveUp> {
        value.serialize(Writer { out: self.out, depth: self.depth + 1 })?;
        let end = self.out.len();
        match self.entries.last_mut() {
            Some(entry) if entry.2 == usize::MAX => entry.2 = end,
            _ => return Err(GaveUp),
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(), GaveUp> {
        if self.entries.iter().any(|entry| entry.2 == usize::MAX) {
            return Err(GaveUp);
        }
        if self.announced.is_some_and(|length| length != self.entries.len()) {
            return Err(GaveUp);
        }
        let out = &mut *self.out;
        let key = |entry: &(usize, usize, usize)| entry.0..entry.1;
        let in_order = self.entries.windows(2).all(|pair| out[key(&pair[0])] < out[key(&pair[1])]);
        if !in_order {
            self.entries.sort_unstable_by(|left, right| out[key(left)].cmp(&out[key(right)]));
            if self.entries.windows(2).any(|pair| out[key(&pair[0])] == out[key(&pair[1])]) {
                return Err(GaveUp);
            }
            let first = self.entries_at;
            let written = out[first..].to_vec();
            BYTES_COPIED_TO_REORDER.with(|copied| copied.set(copied.get() + written.len()));
            out.truncate(first);
            for &(start, _, end) in &self.entries {
                out.extend_from_slice(&written[start - first..end - first]);
            }
        }
        if self.announced.is_none() {
            fill_head(out, self.head_at, 5, self.entries.len());
        }
        Ok(())
    }
}

impl ser::SerializeMap for Entries<'_> {
    type Ok = ();
    type Error = GaveUp;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), GaveUp> {
        self.key(key)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), GaveUp> {
        self.value(value)
    }
    fn end(self) -> Result<(), GaveUp> {
        self.finish()
    }
}

/// A struct and a struct variant are both maps with text keys.
macro_rules! fields_of {
    ($($kind:ident),*) => {$(
        impl ser::$kind for Entries<'_> {
            type Ok = ();
            type Error = GaveUp;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), GaveUp> {
                self.key(key)?;
                self.value(value)
            }
            fn end(self) -> Result<(), GaveUp> {
                self.finish()
            }
        }
    )*};
}

fields_of!(SerializeStruct, SerializeStructVariant);
