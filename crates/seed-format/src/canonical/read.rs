//! Typed values straight from canonical bytes: a serde deserializer over
//! [`CanonicalReader`] that reads text and byte strings in place.
//!
//! It validates as it reads, so bytes need no separate canonical check
//! first: every head goes through [`CanonicalReader`] (shortest form,
//! definite lengths), text must be UTF-8, map keys must rise strictly in
//! encoded order, every array and map must be read to its end, nothing may
//! trail the item, and nesting stays within [`CBOR_NESTING_DEPTH_MAX`]. Any
//! byte it cannot vouch for makes it give up.
//!
//! It is a fast path, not a second reference: it mirrors what ciborium's
//! deserializer hands each visitor (the same `visit_*` call for the same
//! item, except that text and byte strings are lent from the input, through
//! `visit_borrowed_*`, which an owned type's visitor takes as it takes
//! `visit_str` and `visit_bytes`; serde's buffering of tagged enums then
//! copies nothing), and whenever ciborium would take a road this reader
//! does not take (floats, tags, byte strings read as sequences, text longer
//! than ciborium's scratch buffer, a visitor's error) it gives up with
//! [`GaveUp`]; the caller then checks the bytes and asks ciborium, which
//! decides and names any problem. Property tests (tests/fact_props.rs) hold
//! the two to the same values on canonical bytes and to the same refusals on
//! non-canonical ones.
//!
//! Over bytes already checked ([`from_checked_bytes`]: a body
//! `Fact::decode_envelope` accepted, read through `from_checked_canonical_bytes`)
//! it skips the items a type ignores by their heads alone instead of validating
//! them again.

use super::{CanonicalReader, GaveUp, CBOR_NESTING_DEPTH_MAX};
use serde::de::{self, DeserializeOwned, Visitor};

/// The scratch buffer ciborium reads text and byte strings into: longer ones
/// take other roads through ciborium (or fail there), so this reader leaves
/// them to it.
const CIBORIUM_SCRATCH_BYTES: usize = 4096;

/// `T` from `bytes` if they are one canonical item this reader can read
/// exactly as ciborium would; `None` where the caller must check the bytes
/// and ask the reference deserializer.
pub fn from_bytes<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    read_with(bytes, false)
}

/// [`from_bytes`] over bytes the caller has already checked to be canonical:
/// items `T` ignores are skipped by their heads alone, not checked again.
pub fn from_checked_bytes<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    read_with(bytes, true)
}

fn read_with<T: DeserializeOwned>(bytes: &[u8], checked: bool) -> Option<T> {
    let mut reader = Reader { cbor: CanonicalReader::new(bytes), recursion_left: CBOR_NESTING_DEPTH_MAX + 1, checked };
    let value = T::deserialize(&mut reader).ok()?;
    reader.cbor.is_at_end().then_some(value)
}

struct Reader<'a> {
    cbor: CanonicalReader<'a>,
    /// Nesting levels left, counted as ciborium counts them (arrays, maps, enums).
    recursion_left: usize,
    /// The bytes passed the canonical check already: an ignored item is
    /// skipped without validating it a second time.
    checked: bool,
}

/// What the next item starts with, without consuming it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    Unsigned(u64),
    Negative(u64),
    Bytes(u64),
    Text(u64),
    Array(u64),
    Map(u64),
    False,
    True,
    Null,
}

impl<'a> Reader<'a> {
    fn peek(&mut self) -> Result<Next, GaveUp> {
        let position = self.cbor.position;
        let head = self.cbor.head();
        self.cbor.position = position;
        Ok(match head.ok_or(GaveUp)? {
            (0, argument) => Next::Unsigned(argument),
            (1, argument) => Next::Negative(argument),
            (2, length) => Next::Bytes(length),
            (3, length) => Next::Text(length),
            (4, items) => Next::Array(items),
            (5, entries) => Next::Map(entries),
            (7, 20) => Next::False,
            (7, 21) => Next::True,
            (7, 22) => Next::Null,
            // Tags (and anything else) are not canonical; ciborium decides.
            _ => return Err(GaveUp),
        })
    }

    fn next(&mut self) -> Result<Next, GaveUp> {
        let next = self.peek()?;
        // Cannot fail: `peek` just read the same head.
        self.cbor.head().ok_or(GaveUp)?;
        Ok(next)
    }

    fn take(&mut self, length: u64) -> Result<&'a [u8], GaveUp> {
        self.cbor.take(length).ok_or(GaveUp)
    }

    fn text(&mut self, length: u64) -> Result<&'a str, GaveUp> {
        std::str::from_utf8(self.take(length)?).map_err(|_| GaveUp)
    }

    /// Runs `read` one nesting level deeper. Every container the reader
    /// enters (and every enum, as ciborium counts them) is a level, so the
    /// levels in use are never fewer than the CBOR nesting depth; keeping
    /// them at most [`CBOR_NESTING_DEPTH_MAX`] keeps every item within the
    /// validator's limit (a container at the limit itself is left to the
    /// reference, which decides at the same depth either way).
    fn recurse<T>(&mut self, read: impl FnOnce(&mut Self) -> Result<T, GaveUp>) -> Result<T, GaveUp> {
        if self.recursion_left <= 1 {
            return Err(GaveUp);
        }
        self.recursion_left -= 1;
        let result = read(self);
        self.recursion_left += 1;
        result
    }

    fn seq<V: Visitor<'a>>(&mut self, items: u64, visitor: V) -> Result<V::Value, GaveUp> {
        self.recurse(|reader| Items::new(reader, items).read_all(|items| visitor.visit_seq(items)))
    }

    fn map<V: Visitor<'a>>(&mut self, entries: u64, visitor: V) -> Result<V::Value, GaveUp> {
        self.recurse(|reader| Items::new(reader, entries).read_all(|items| visitor.visit_map(items)))
    }

    fn fits_scratch(length: u64) -> bool {
        length <= CIBORIUM_SCRATCH_BYTES as u64
    }
}

impl<'a> de::Deserializer<'a> for &mut Reader<'a> {
    type Error = GaveUp;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        match self.peek()? {
            Next::Unsigned(_) => self.deserialize_u64(visitor),
            Next::Negative(argument) if i64::try_from(argument).is_ok() => self.deserialize_i64(visitor),
            Next::Negative(_) => self.deserialize_i128(visitor),
            Next::Bytes(length) if Reader::fits_scratch(length) => self.deserialize_bytes(visitor),
            Next::Bytes(_) => self.deserialize_byte_buf(visitor),
            Next::Text(length) if Reader::fits_scratch(length) => self.deserialize_str(visitor),
            Next::Text(_) => self.deserialize_string(visitor),
            Next::Array(_) => self.deserialize_seq(visitor),
            Next::Map(_) => self.deserialize_map(visitor),
            Next::False | Next::True => self.deserialize_bool(visitor),
            Next::Null => self.deserialize_option(visitor),
        }
    }

    fn deserialize_bool<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        match self.next()? {
            Next::False => visitor.visit_bool(false),
            Next::True => visitor.visit_bool(true),
            _ => Err(GaveUp),
        }
    }

    fn deserialize_i8<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_i16<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_i32<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_i64<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        let value = match self.next()? {
            Next::Unsigned(argument) => i64::try_from(argument).map_err(|_| GaveUp)?,
            // -1 - n, as ciborium writes it (n ^ !0).
            Next::Negative(argument) => i64::try_from(argument).map_err(|_| GaveUp)? ^ !0,
            _ => return Err(GaveUp),
        };
        visitor.visit_i64(value)
    }

    fn deserialize_i128<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        let value = match self.next()? {
            Next::Unsigned(argument) => i128::from(argument),
            Next::Negative(argument) => i128::from(argument) ^ !0,
            _ => return Err(GaveUp),
        };
        visitor.visit_i128(value)
    }

    fn deserialize_u8<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        self.deserialize_u64(visitor)
    }

    fn deserialize_u16<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        self.deserialize_u64(visitor)
    }

    fn deserialize_u32<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        self.deserialize_u64(visitor)
    }

    fn deserialize_u64<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        match self.next()? {
            Next::Unsigned(argument) => visitor.visit_u64(argument),
            _ => Err(GaveUp),
        }
    }

    fn deserialize_u128<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        match self.next()? {
            Next::Unsigned(argument) => visitor.visit_u128(u128::from(argument)),
            _ => Err(GaveUp),
        }
    }

    fn deserialize_f32<V: Visitor<'a>>(self, _visitor: V) -> Result<V::Value, GaveUp> {
        Err(GaveUp)
    }

    fn deserialize_f64<V: Visitor<'a>>(self, _visitor: V) -> Result<V::Value, GaveUp> {
        Err(GaveUp)
    }

    fn deserialize_char<V: Visitor<'a>>(self, _visitor: V) -> Result<V::Value, GaveUp> {
        Err(GaveUp)
    }

    fn deserialize_str<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        match self.next()? {
            Next::Text(length) if Reader::fits_scratch(length) => visitor.visit_borrowed_str(self.text(length)?),
            _ => Err(GaveUp),
        }
    }

    fn deserialize_string<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        match self.next()? {
            Next::Text(length) => visitor.visit_string(self.text(length)?.to_owned()),
            _ => Err(GaveUp),
        }
    }

    fn deserialize_bytes<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        match self.next()? {
            Next::Bytes(length) if Reader::fits_scratch(length) => visitor.visit_borrowed_bytes(self.take(length)?),
            Next::Array(items) => self.seq(items, visitor),
            _ => Err(GaveUp),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        match self.next()? {
            Next::Bytes(length) => visitor.visit_byte_buf(self.take(length)?.to_vec()),
            Next::Array(items) => self.seq(items, visitor),
            _ => Err(GaveUp),
        }
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        if self.peek()? == Next::Null {
            self.next()?;
            return visitor.visit_none();
        }
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        match self.next()? {
            Next::Null => visitor.visit_unit(),
            _ => Err(GaveUp),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(self, _name: &'static str, visitor: V) -> Result<V::Value, GaveUp> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(self, _name: &'static str, visitor: V) -> Result<V::Value, GaveUp> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        match self.next()? {
            Next::Array(items) => self.seq(items, visitor),
            // ciborium reads a byte string as a sequence of bytes; left to it.
            _ => Err(GaveUp),
        }
    }

    fn deserialize_tuple<V: Visitor<'a>>(self, _len: usize, visitor: V) -> Result<V::Value, GaveUp> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, GaveUp> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        match self.next()? {
            Next::Map(entries) => self.map(entries, visitor),
            _ => Err(GaveUp),
        }
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, GaveUp> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, GaveUp> {
        // ciborium's tag-capturing pseudo enum: tags are never canonical.
        if name == "@@TAG@@" {
            return Err(GaveUp);
        }
        let in_map = match self.peek()? {
            Next::Map(1) => {
                self.next()?;
                true
            }
            Next::Text(_) => false,
            _ => return Err(GaveUp),
        };
        self.recurse(|reader| visitor.visit_enum(Variant { reader, in_map }))
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        match self.next()? {
            Next::Text(length) if Reader::fits_scratch(length) => visitor.visit_borrowed_str(self.text(length)?),
            Next::Bytes(length) if Reader::fits_scratch(length) => visitor.visit_borrowed_bytes(self.take(length)?),
            _ => Err(GaveUp),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, GaveUp> {
        if self.checked {
            // Whatever the item holds, the visitor ignores it (as it does
            // every item ciborium hands it).
            // Gives up where reading it would: at a container the nesting
            // limit leaves to the reference (see [`Reader::recurse`]).
            if !self.cbor.skip_checked(self.recursion_left) {
                return Err(GaveUp);
            }
            return visitor.visit_unit();
        }
        self.deserialize_any(visitor)
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

/// The items of an array, or the entries of a map, still to read.
struct Items<'r, 'a> {
    reader: &'r mut Reader<'a>,
    left: u64,
    /// Where the previous map key's bytes lie: the next must sort after them.
    previous_key: Option<(usize, usize)>,
}

impl<'r, 'a> Items<'r, 'a> {
    fn new(reader: &'r mut Reader<'a>, left: u64) -> Items<'r, 'a> {
        Items { reader, left, previous_key: None }
    }

    /// Hands the items to a visitor, which must read every one: items left
    /// unread would be read as whatever follows, unchecked.
    fn read_all<T>(mut self, visit: impl FnOnce(&mut Self) -> Result<T, GaveUp>) -> Result<T, GaveUp> {
        let value = visit(&mut self)?;
        if self.left != 0 {
            return Err(GaveUp);
        }
        Ok(value)
    }

    /// Reads one item, which must take at least one byte (a seed that reads
    /// nothing would shift every later item).
    fn item<T: de::DeserializeSeed<'a>>(&mut self, seed: T) -> Result<(T::Value, usize, usize), GaveUp> {
        let start = self.reader.cbor.position;
        let value = seed.deserialize(&mut *self.reader)?;
        let end = self.reader.cbor.position;
        if end == start {
            return Err(GaveUp);
        }
        Ok((value, start, end))
    }
}

impl<'a> de::SeqAccess<'a> for Items<'_, 'a> {
    type Error = GaveUp;

    fn next_element_seed<T: de::DeserializeSeed<'a>>(&mut self, seed: T) -> Result<Option<T::Value>, GaveUp> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        self.item(seed).map(|(value, _, _)| Some(value))
    }

    fn size_hint(&self) -> Option<usize> {
        usize::try_from(self.left).ok()
    }
}

impl<'a> de::MapAccess<'a> for Items<'_, 'a> {
    type Error = GaveUp;

    fn next_key_seed<K: de::DeserializeSeed<'a>>(&mut self, seed: K) -> Result<Option<K::Value>, GaveUp> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let (key, start, end) = self.item(seed)?;
        // Canonical maps list their keys in strictly rising encoded order
        // (which also rules out a repeated key), as the validator checks.
        let bytes = self.reader.cbor.bytes;
        if let Some((previous_start, previous_end)) = self.previous_key {
            if bytes[previous_start..previous_end] >= bytes[start..end] {
                return Err(GaveUp);
            }
        }
        self.previous_key = Some((start, end));
        Ok(Some(key))
    }

    fn next_value_seed<V: de::DeserializeSeed<'a>>(&mut self, seed: V) -> Result<V::Value, GaveUp> {
        self.item(seed).map(|(value, _, _)| value)
    }

    fn size_hint(&self) -> Option<usize> {
        usize::try_from(self.left).ok()
    }
}

/// An enum: a bare text (a unit variant) or a one-entry map from the
/// variant's name to its content.
struct Variant<'r, 'a> {
    reader: &'r mut Reader<'a>,
    in_map: bool,
}

impl<'r, 'a> de::EnumAccess<'a> for Variant<'r, 'a> {
    type Error = GaveUp;
    type Variant = Variant<'r, 'a>;

    fn variant_seed<V: de::DeserializeSeed<'a>>(self, seed: V) -> Result<(V::Value, Self::Variant), GaveUp> {
        let variant = seed.deserialize(&mut *self.reader)?;
        Ok((variant, self))
    }
}

impl<'a> de::VariantAccess<'a> for Variant<'_, 'a> {
    type Error = GaveUp;

    fn unit_variant(self) -> Result<(), GaveUp> {
        // In a map, ciborium would leave the content unread; left to it.
        if self.in_map {
            return Err(GaveUp);
        }
        Ok(())
    }

    fn newtype_variant_seed<T: de::DeserializeSeed<'a>>(self, seed: T) -> Result<T::Value, GaveUp> {
        // A bare text has no content; ciborium would read the next item.
        if !self.in_map {
            return Err(GaveUp);
        }
        seed.deserialize(&mut *self.reader)
    }

    fn tuple_variant<V: Visitor<'a>>(self, _len: usize, visitor: V) -> Result<V::Value, GaveUp> {
        if !self.in_map {
            return Err(GaveUp);
        }
        de::Deserializer::deserialize_any(&mut *self.reader, visitor)
    }

    fn struct_variant<V: Visitor<'a>>(self, _fields: &'static [&'static str], visitor: V) -> Result<V::Value, GaveUp> {
        if !self.in_map {
            return Err(GaveUp);
        }
        de::Deserializer::deserialize_any(&mut *self.reader, visitor)
    }
}
