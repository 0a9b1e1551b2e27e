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

use super::{write_head, CBOR_NESTING_DEPTH_MAX};
use serde::ser::{self, Serialize};

/// The canonical bytes of `value`, or `None` where the reference path must decide.
pub(super) fn to_bytes<T: Serialize + ?Sized>(value: &T) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    value.serialize(Writer { out: &mut out, depth: 0 }).ok()?;
    Some(out)
}

/// "Not here": the reference path takes over.
#[derive(Debug)]
pub(super) struct GiveUp;

impl std::fmt::Display for GiveUp {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("left to the reference encoder")
    }
}

impl std::error::Error for GiveUp {}

impl ser::Error for GiveUp {
    fn custom<T: std::fmt::Display>(_message: T) -> GiveUp {
        GiveUp
    }
}

/// Map entries whose offsets are reserved up front, at most.
const MAP_ENTRIES_RESERVED_MAX: usize = 64;

/// ciborium's markers for tagged values: tags are never canonical here.
fn is_tag_marker(name: &str) -> bool {
    name == "@@TAG@@"
}

struct Writer<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
}

impl<'a> Writer<'a> {
    fn check_depth(&self) -> Result<(), GiveUp> {
        if self.depth > CBOR_NESTING_DEPTH_MAX {
            return Err(GiveUp);
        }
        Ok(())
    }

    fn text(self, text: &str) -> Result<(), GiveUp> {
        self.check_depth()?;
        write_head(3, text.len() as u64, self.out);
        self.out.extend_from_slice(text.as_bytes());
        Ok(())
    }

    fn signed(self, value: i64) -> Result<(), GiveUp> {
        self.check_depth()?;
        if value >= 0 {
            write_head(0, value as u64, self.out);
        } else {
            // CBOR stores a negative n as -1 - n in major type 1.
            write_head(1, (-1 - i128::from(value)) as u64, self.out);
        }
        Ok(())
    }

    fn unsigned(self, value: u64) -> Result<(), GiveUp> {
        self.check_depth()?;
        write_head(0, value, self.out);
        Ok(())
    }

    fn simple(self, byte: u8) -> Result<(), GiveUp> {
        self.check_depth()?;
        self.out.push(byte);
        Ok(())
    }

    /// A one-entry map `{variant: ...}` whose value the caller writes next.
    fn variant_head(&mut self, variant: &str) -> Result<(), GiveUp> {
        self.check_depth()?;
        write_head(5, 1, self.out);
        if self.depth + 1 > CBOR_NESTING_DEPTH_MAX {
            return Err(GiveUp);
        }
        write_head(3, variant.len() as u64, self.out);
        self.out.extend_from_slice(variant.as_bytes());
        Ok(())
    }
}

impl<'a> ser::Serializer for Writer<'a> {
    type Ok = ();
    type Error = GiveUp;
    type SerializeSeq = Sequence<'a>;
    type SerializeTuple = Sequence<'a>;
    type SerializeTupleStruct = Sequence<'a>;
    type SerializeTupleVariant = Sequence<'a>;
    type SerializeMap = Entries<'a>;
    type SerializeStruct = Entries<'a>;
    type SerializeStructVariant = Entries<'a>;

    fn serialize_bool(self, value: bool) -> Result<(), GiveUp> {
        self.simple(if value { 0xf5 } else { 0xf4 })
    }
    fn serialize_i8(self, value: i8) -> Result<(), GiveUp> {
        self.signed(value.into())
    }
    fn serialize_i16(self, value: i16) -> Result<(), GiveUp> {
        self.signed(value.into())
    }
    fn serialize_i32(self, value: i32) -> Result<(), GiveUp> {
        self.signed(value.into())
    }
    fn serialize_i64(self, value: i64) -> Result<(), GiveUp> {
        self.signed(value)
    }
    fn serialize_u8(self, value: u8) -> Result<(), GiveUp> {
        self.unsigned(value.into())
    }
    fn serialize_u16(self, value: u16) -> Result<(), GiveUp> {
        self.unsigned(value.into())
    }
    fn serialize_u32(self, value: u32) -> Result<(), GiveUp> {
        self.unsigned(value.into())
    }
    fn serialize_u64(self, value: u64) -> Result<(), GiveUp> {
        self.unsigned(value)
    }
    fn serialize_i128(self, _value: i128) -> Result<(), GiveUp> {
        Err(GiveUp)
    }
    fn serialize_u128(self, _value: u128) -> Result<(), GiveUp> {
        Err(GiveUp)
    }
    fn serialize_f32(self, _value: f32) -> Result<(), GiveUp> {
        Err(GiveUp)
    }
    fn serialize_f64(self, _value: f64) -> Result<(), GiveUp> {
        Err(GiveUp)
    }
    fn serialize_char(self, value: char) -> Result<(), GiveUp> {
        self.text(value.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, value: &str) -> Result<(), GiveUp> {
        self.text(value)
    }
    fn serialize_bytes(self, value: &[u8]) -> Result<(), GiveUp> {
        self.check_depth()?;
        write_head(2, value.len() as u64, self.out);
        self.out.extend_from_slice(value);
        Ok(())
    }
    fn serialize_none(self) -> Result<(), GiveUp> {
        self.simple(0xf6)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), GiveUp> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), GiveUp> {
        self.simple(0xf6)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), GiveUp> {
        self.simple(0xf6)
    }
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Result<(), GiveUp> {
        self.text(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Result<(), GiveUp> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        mut self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), GiveUp> {
        if is_tag_marker(name) {
            return Err(GiveUp);
        }
        self.variant_head(variant)?;
        value.serialize(Writer { out: self.out, depth: self.depth + 1 })
    }
    fn serialize_seq(self, length: Option<usize>) -> Result<Sequence<'a>, GiveUp> {
        self.check_depth()?;
        Ok(Sequence::new(self.out, self.depth, length))
    }
    fn serialize_tuple(self, length: usize) -> Result<Sequence<'a>, GiveUp> {
        self.serialize_seq(Some(length))
    }
    fn serialize_tuple_struct(self, _name: &'static str, length: usize) -> Result<Sequence<'a>, GiveUp> {
        self.serialize_seq(Some(length))
    }
    fn serialize_tuple_variant(
        mut self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        length: usize,
    ) -> Result<Sequence<'a>, GiveUp> {
        if is_tag_marker(name) {
            return Err(GiveUp);
        }
        self.variant_head(variant)?;
        Ok(Sequence::new(self.out, self.depth + 1, Some(length)))
    }
    fn serialize_map(self, length: Option<usize>) -> Result<Entries<'a>, GiveUp> {
        self.check_depth()?;
        Ok(Entries::new(self.out, self.depth, length))
    }
    fn serialize_struct(self, _name: &'static str, length: usize) -> Result<Entries<'a>, GiveUp> {
        self.serialize_map(Some(length))
    }
    fn serialize_struct_variant(
        mut self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        length: usize,
    ) -> Result<Entries<'a>, GiveUp> {
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

    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), GiveUp> {
        self.items += 1;
        value.serialize(Writer { out: self.out, depth: self.depth + 1 })
    }

    fn finish(self) -> Result<(), GiveUp> {
        match self.announced {
            Some(length) if length == self.items => Ok(()),
            Some(_) => Err(GiveUp),
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

impl ser::SerializeSeq for Sequence<'_> {
    type Ok = ();
    type Error = GiveUp;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), GiveUp> {
        self.item(value)
    }
    fn end(self) -> Result<(), GiveUp> {
        self.finish()
    }
}

impl ser::SerializeTuple for Sequence<'_> {
    type Ok = ();
    type Error = GiveUp;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), GiveUp> {
        self.item(value)
    }
    fn end(self) -> Result<(), GiveUp> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for Sequence<'_> {
    type Ok = ();
    type Error = GiveUp;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), GiveUp> {
        self.item(value)
    }
    fn end(self) -> Result<(), GiveUp> {
        self.finish()
    }
}

impl ser::SerializeTupleVariant for Sequence<'_> {
    type Ok = ();
    type Error = GiveUp;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), GiveUp> {
        self.item(value)
    }
    fn end(self) -> Result<(), GiveUp> {
        self.finish()
    }
}

/// A map: entries are written in place after a one-byte placeholder head,
/// then, unless they already are, put in the order of their encoded keys
/// (duplicates give up). Struct fields arrive in declaration order, which
/// often is canonical already; writing in place spares every map a buffer
/// of its own.
pub(super) struct Entries<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
    head_at: usize,
    /// (key start, value start, entry end) in `out`.
    entries: Vec<(usize, usize, usize)>,
}

impl<'a> Entries<'a> {
    fn new(out: &'a mut Vec<u8>, depth: usize, announced: Option<usize>) -> Entries<'a> {
        let head_at = out.len();
        out.push(0);
        // An announced length only sizes the offsets' first allocation, capped:
        // it comes from the value's own `Serialize`, which could announce anything.
        let reserved = announced.unwrap_or(8).min(MAP_ENTRIES_RESERVED_MAX);
        Entries { out, depth, head_at, entries: Vec::with_capacity(reserved) }
    }

    fn key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), GiveUp> {
        let start = self.out.len();
        key.serialize(Writer { out: self.out, depth: self.depth + 1 })?;
        self.entries.push((start, self.out.len(), usize::MAX));
        Ok(())
    }

    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), GiveUp> {
        value.serialize(Writer { out: self.out, depth: self.depth + 1 })?;
        let end = self.out.len();
        match self.entries.last_mut() {
            Some(entry) if entry.2 == usize::MAX => entry.2 = end,
            _ => return Err(GiveUp),
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(), GiveUp> {
        if self.entries.iter().any(|entry| entry.2 == usize::MAX) {
            return Err(GiveUp);
        }
        let out = &mut *self.out;
        let key = |entry: &(usize, usize, usize)| entry.0..entry.1;
        let in_order = self.entries.windows(2).all(|pair| out[key(&pair[0])] < out[key(&pair[1])]);
        if !in_order {
            self.entries.sort_unstable_by(|left, right| out[key(left)].cmp(&out[key(right)]));
            if self.entries.windows(2).any(|pair| out[key(&pair[0])] == out[key(&pair[1])]) {
                return Err(GiveUp);
            }
            let first = self.head_at + 1;
            let written = out[first..].to_vec();
            out.truncate(first);
            for &(start, _, end) in &self.entries {
                out.extend_from_slice(&written[start - first..end - first]);
            }
        }
        fill_head(out, self.head_at, 5, self.entries.len());
        Ok(())
    }
}

impl ser::SerializeMap for Entries<'_> {
    type Ok = ();
    type Error = GiveUp;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), GiveUp> {
        self.key(key)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), GiveUp> {
        self.value(value)
    }
    fn end(self) -> Result<(), GiveUp> {
        self.finish()
    }
}

impl ser::SerializeStruct for Entries<'_> {
    type Ok = ();
    type Error = GiveUp;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), GiveUp> {
        self.key(key)?;
        self.value(value)
    }
    fn end(self) -> Result<(), GiveUp> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for Entries<'_> {
    type Ok = ();
    type Error = GiveUp;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), GiveUp> {
        self.key(key)?;
        self.value(value)
    }
    fn end(self) -> Result<(), GiveUp> {
        self.finish()
    }
}
