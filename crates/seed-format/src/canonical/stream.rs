//! Canonical CBOR written to a sink as it is encoded: the bytes
//! `to_canonical_bytes` gives, for a value too large to hold whole beside
//! itself (a world snapshot of a million beings is most of a gigabyte).
//!
//! The containers of the top `levels` levels are written entry by entry:
//! each one's head goes to the sink first (its length must be announced),
//! and its entries are encoded by the direct encoder into a buffer written
//! out every `flush_bytes` while the keys so far are in canonical order. A
//! map whose keys arrive out of order before anything of it was written
//! stays in the buffer and is sorted there, as the direct encoder does; one
//! that turns out of order after its first entries were written cannot be
//! mended, and the encoding gives up ([`Stopped::GaveUp`]), as it does for
//! anything the direct encoder leaves to the reference path. The caller
//! then encodes the value whole. A container whose child is streamed too
//! (`levels` above one) must have its keys in order up to that child.

use super::{direct, write_head, GaveUp, CBOR_NESTING_DEPTH_MAX};
use serde::ser::{self, Serialize};
use std::io::Write;

/// Why a streamed encoding stopped.
#[derive(Debug)]
pub(super) enum Stopped {
    /// Not streamable as it is, or left to the reference path.
    GaveUp,
    Io(std::io::Error),
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stopped::GaveUp => formatter.write_str("not streamable"),
            Stopped::Io(error) => write!(formatter, "{error}"),
        }
    }
}

impl std::error::Error for Stopped {}

impl ser::Error for Stopped {
    fn custom<T: std::fmt::Display>(_message: T) -> Stopped {
        Stopped::GaveUp
    }
}

impl From<GaveUp> for Stopped {
    fn from(_: GaveUp) -> Stopped {
        Stopped::GaveUp
    }
}

/// Writes the canonical bytes of `value` to `sink`; returns how many.
pub(super) fn write<T: Serialize + ?Sized>(
    value: &T,
    levels: usize,
    flush_bytes: usize,
    sink: &mut dyn Write,
) -> Result<u64, Stopped> {
    let mut sink = Sink { writer: sink, written: 0 };
    match levels {
        0 => {
            let bytes = direct::to_bytes(value).ok_or(Stopped::GaveUp)?;
            sink.write(&bytes)?;
        }
        _ => value.serialize(Streamed { sink: &mut sink, depth: 0, levels, flush_bytes })?,
    }
    Ok(sink.written)
}

struct Sink<'w> {
    writer: &'w mut dyn Write,
    written: u64,
}

impl Sink<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<(), Stopped> {
        self.writer.write_all(bytes).map_err(Stopped::Io)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn head(&mut self, major: u8, length: usize) -> Result<(), Stopped> {
        let mut head = Vec::with_capacity(9);
        write_head(major, length as u64, &mut head);
        self.write(&head)
    }
}

/// A value at a streamed level: its containers go entry by entry, anything
/// else is encoded whole and written.
struct Streamed<'s, 'w> {
    sink: &'s mut Sink<'w>,
    depth: usize,
    /// Levels streamed from this one down (at least one).
    levels: usize,
    flush_bytes: usize,
}

impl<'s, 'w> Streamed<'s, 'w> {
    fn whole(self, encode: impl FnOnce(direct::Writer<'_>) -> Result<(), GaveUp>) -> Result<(), Stopped> {
        let mut bytes = Vec::new();
        encode(direct::Writer::at_depth(&mut bytes, self.depth))?;
        self.sink.write(&bytes)
    }

    fn container(self, major: u8, announced: Option<usize>) -> Result<Container<'s, 'w>, Stopped> {
        if self.depth > CBOR_NESTING_DEPTH_MAX {
            return Err(Stopped::GaveUp);
        }
        let announced = announced.ok_or(Stopped::GaveUp)?;
        self.sink.head(major, announced)?;
        Ok(Container {
            sink: self.sink,
            depth: self.depth,
            levels: self.levels,
            flush_bytes: self.flush_bytes,
            announced,
            count: 0,
            pending: Vec::new(),
            entries: Vec::new(),
            awaiting_value: false,
            in_order: true,
            written_key: None,
        })
    }
}

/// An array or a map at a streamed level. An array's items are entries
/// without keys: (value start, value start, end).
struct Container<'s, 'w> {
    sink: &'s mut Sink<'w>,
    depth: usize,
    levels: usize,
    flush_bytes: usize,
    announced: usize,
    count: usize,
    /// Entries encoded and not yet written.
    pending: Vec<u8>,
    /// (key start, value start, end) in `pending`.
    entries: Vec<(usize, usize, usize)>,
    awaiting_value: bool,
    /// The keys so far are in canonical order.
    in_order: bool,
    /// The last key written to the sink, once any was.
    written_key: Option<Vec<u8>>,
}

impl Container<'_, '_> {
    fn key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Stopped> {
        if self.awaiting_value {
            return Err(Stopped::GaveUp);
        }
        let start = self.pending.len();
        key.serialize(direct::Writer::at_depth(&mut self.pending, self.depth + 1))?;
        let end = self.pending.len();
        let previous = match self.entries.last() {
            Some(&(key_start, value_start, _)) => Some(&self.pending[key_start..value_start]),
            None => self.written_key.as_deref(),
        };
        match previous.map(|previous| previous.cmp(&self.pending[start..end])) {
            None | Some(std::cmp::Ordering::Less) => {}
            Some(std::cmp::Ordering::Equal) => return Err(Stopped::GaveUp),
            // Written entries cannot be put back in order.
            Some(std::cmp::Ordering::Greater) if self.written_key.is_some() => return Err(Stopped::GaveUp),
            Some(std::cmp::Ordering::Greater) => self.in_order = false,
        }
        self.entries.push((start, end, usize::MAX));
        self.awaiting_value = true;
        Ok(())
    }

    /// An array's item: an entry with an empty key.
    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stopped> {
        let start = self.pending.len();
        self.entries.push((start, start, usize::MAX));
        self.awaiting_value = true;
        self.value(value)
    }

    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stopped> {
        if !self.awaiting_value {
            return Err(Stopped::GaveUp);
        }
        self.awaiting_value = false;
        self.count += 1;
        if self.levels > 1 {
            // The child writes to the sink itself: what precedes it goes first.
            if !self.in_order {
                return Err(Stopped::GaveUp);
            }
            self.write_pending()?;
            let child = Streamed {
                sink: self.sink,
                depth: self.depth + 1,
                levels: self.levels - 1,
                flush_bytes: self.flush_bytes,
            };
            return value.serialize(child);
        }
        value.serialize(direct::Writer::at_depth(&mut self.pending, self.depth + 1))?;
        let end = self.pending.len();
        if let Some(entry) = self.entries.last_mut() {
            entry.2 = end;
        }
        if self.in_order && self.pending.len() >= self.flush_bytes {
            self.write_pending()?;
        }
        Ok(())
    }

    /// Writes the pending entries (in order), remembering the last key.
    fn write_pending(&mut self) -> Result<(), Stopped> {
        if let Some(&(key_start, value_start, _)) = self.entries.last() {
            self.written_key = Some(self.pending[key_start..value_start].to_vec());
        }
        self.sink.write(&self.pending)?;
        self.pending.clear();
        self.entries.clear();
        Ok(())
    }

    fn finish(mut self) -> Result<(), Stopped> {
        if self.awaiting_value || self.count != self.announced {
            return Err(Stopped::GaveUp);
        }
        if self.in_order {
            return self.write_pending();
        }
        let pending = &self.pending;
        let key = |entry: &(usize, usize, usize)| &pending[entry.0..entry.1];
        self.entries.sort_unstable_by(|left, right| key(left).cmp(key(right)));
        if self.entries.windows(2).any(|pair| key(&pair[0]) == key(&pair[1])) {
            return Err(Stopped::GaveUp);
        }
        for &(start, _, end) in &self.entries {
            self.sink.write(&pending[start..end])?;
        }
        Ok(())
    }
}

/// Scalars at a streamed level are encoded whole, as the direct encoder
/// writes them.
macro_rules! whole_scalars {
    ($($method:ident: $type:ty),*) => {$(
        fn $method(self, value: $type) -> Result<(), Stopped> {
            self.whole(|writer| ser::Serializer::$method(writer, value))
        }
    )*};
}

impl<'s, 'w> ser::Serializer for Streamed<'s, 'w> {
    type Ok = ();
    type Error = Stopped;
    type SerializeSeq = Container<'s, 'w>;
    type SerializeTuple = Container<'s, 'w>;
    type SerializeTupleStruct = Container<'s, 'w>;
    type SerializeTupleVariant = Container<'s, 'w>;
    type SerializeMap = Container<'s, 'w>;
    type SerializeStruct = Container<'s, 'w>;
    type SerializeStructVariant = Container<'s, 'w>;

    whole_scalars!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_char: char,
        serialize_str: &str,
        serialize_bytes: &[u8]
    );
    fn serialize_f32(self, _value: f32) -> Result<(), Stopped> {
        Err(Stopped::GaveUp)
    }
    fn serialize_f64(self, _value: f64) -> Result<(), Stopped> {
        Err(Stopped::GaveUp)
    }
    fn serialize_none(self) -> Result<(), Stopped> {
        self.whole(|writer| ser::Serializer::serialize_none(writer))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Stopped> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Stopped> {
        self.whole(|writer| ser::Serializer::serialize_unit(writer))
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<(), Stopped> {
        self.whole(|writer| ser::Serializer::serialize_unit_struct(writer, name))
    }
    fn serialize_unit_variant(self, name: &'static str, index: u32, variant: &'static str) -> Result<(), Stopped> {
        self.whole(|writer| ser::Serializer::serialize_unit_variant(writer, name, index, variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Result<(), Stopped> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Stopped> {
        self.whole(|writer| ser::Serializer::serialize_newtype_variant(writer, name, index, variant, value))
    }
    fn serialize_seq(self, length: Option<usize>) -> Result<Container<'s, 'w>, Stopped> {
        self.container(4, length)
    }
    fn serialize_tuple(self, length: usize) -> Result<Container<'s, 'w>, Stopped> {
        self.container(4, Some(length))
    }
    fn serialize_tuple_struct(self, _name: &'static str, length: usize) -> Result<Container<'s, 'w>, Stopped> {
        self.container(4, Some(length))
    }
    /// A variant with fields at a streamed level is not streamed: encoding
    /// gives up (nothing streamed holds one).
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _length: usize,
    ) -> Result<Container<'s, 'w>, Stopped> {
        Err(Stopped::GaveUp)
    }
    fn serialize_map(self, length: Option<usize>) -> Result<Container<'s, 'w>, Stopped> {
        self.container(5, length)
    }
    fn serialize_struct(self, _name: &'static str, length: usize) -> Result<Container<'s, 'w>, Stopped> {
        self.container(5, Some(length))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _length: usize,
    ) -> Result<Container<'s, 'w>, Stopped> {
        Err(Stopped::GaveUp)
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

/// serde names each kind of array's element method apart; all write an item.
macro_rules! items_of {
    ($($kind:ident::$method:ident),*) => {$(
        impl ser::$kind for Container<'_, '_> {
            type Ok = ();
            type Error = Stopped;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stopped> {
                self.item(value)
            }
            fn end(self) -> Result<(), Stopped> {
                self.finish()
            }
        }
    )*};
}

items_of!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Container<'_, '_> {
    type Ok = ();
    type Error = Stopped;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Stopped> {
        self.key(key)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stopped> {
        self.value(value)
    }
    fn end(self) -> Result<(), Stopped> {
        self.finish()
    }
}

/// A struct and a struct variant are both maps with text keys.
macro_rules! fields_of {
    ($($kind:ident),*) => {$(
        impl ser::$kind for Container<'_, '_> {
            type Ok = ();
            type Error = Stopped;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Stopped> {
                self.key(key)?;
                self.value(value)
            }
            fn end(self) -> Result<(), Stopped> {
                self.finish()
            }
        }
    )*};
}

fields_of!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use super::super::{to_canonical_bytes, write_canonical, WriteCanonicalError};
    use serde::Serialize;
    use std::collections::BTreeMap;

    /// What a streamed encoding gives: the whole encoding's bytes, or not streamable.
    #[derive(Debug, PartialEq)]
    enum Streamed {
        Same,
        NotStreamable,
    }

    fn check<T: Serialize>(value: &T, levels: usize, flush_bytes: usize, expected: Streamed) {
        let mut written = Vec::new();
        let outcome = write_canonical(value, levels, flush_bytes, &mut written);
        let got = match outcome {
            Ok(count) => {
                assert_eq!(count, written.len() as u64, "the count is of the bytes written");
                let whole = to_canonical_bytes(value).expect("encodes whole");
                assert_eq!(written, whole, "levels {levels}, flush {flush_bytes}");
                Streamed::Same
            }
            Err(WriteCanonicalError::NotStreamable) => Streamed::NotStreamable,
            Err(WriteCanonicalError::Io(error)) => panic!("no I/O here: {error}"),
        };
        assert_eq!(got, expected, "levels {levels}, flush {flush_bytes}");
    }

    #[derive(Serialize)]
    struct Record {
        // Canonical order: shorter keys first.
        ids: BTreeMap<u64, String>,
        names: BTreeMap<String, u64>,
        version: u64,
    }

    fn record() -> Record {
        let ids = (0..300u64).map(|id| (id * 7, format!("row {id}"))).collect();
        // Bytewise order, not canonical (shorter first): "b" < "aa" canonically.
        let names = (0..40u64).map(|id| (format!("{}{id}", "n".repeat((id % 3) as usize)), id)).collect();
        Record { ids, names, version: 8 }
    }

    #[test]
    fn a_streamed_encoding_is_the_whole_encoding_or_not_streamable() {
        use Streamed::*;
        let record = record();
        let everything = usize::MAX;
        // Every level, flushing after every entry or never.
        for levels in 0..4 {
            check(&record.ids, levels, 1, Same);
            check(&record.ids, levels, everything, Same);
        }
        for levels in 0..3 {
            check(&record, levels, everything, Same);
        }
        // Three levels stream the names map's values too, which needs its
        // keys in order.
        check(&record, 3, everything, NotStreamable);
        // The names map turns out of order after its first entry was written
        // when flushed entry by entry (streamed at level 2 of the record,
        // or level 1 of itself); held whole, it is sorted.
        check(&record.names, 1, 1, NotStreamable);
        check(&record.names, 1, everything, Same);
        check(&record, 1, 1, Same);
        check(&record, 2, 1, NotStreamable);
        check(&record, 2, everything, Same);
        // A streamed child needs its parent's keys in order up to it.
        let unordered_parent: BTreeMap<String, BTreeMap<u64, u64>> =
            BTreeMap::from([("bb".into(), BTreeMap::from([(1, 1)])), ("c".into(), BTreeMap::from([(2, 2)]))]);
        check(&unordered_parent, 1, everything, Same);
        check(&unordered_parent, 2, everything, NotStreamable);
        // What the direct encoder leaves to the reference path, and
        // containers that cannot be streamed.
        check(&BTreeMap::from([(1u8, 0.5f64)]), 2, everything, NotStreamable);
        check(&BTreeMap::from([(1u8, 0.5f64)]), 0, everything, NotStreamable);
        struct Unannounced;
        impl Serialize for Unannounced {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeSeq;
                let mut items = serializer.serialize_seq(None)?;
                items.serialize_element(&1u8)?;
                items.end()
            }
        }
        check(&Unannounced, 0, everything, Same);
        check(&Unannounced, 1, everything, NotStreamable);
        check(&vec![Unannounced, Unannounced], 1, 1, Same);
        #[derive(Serialize)]
        enum Shape {
            Pair(u8, u8),
            Named { a: u8 },
        }
        check(&Shape::Pair(1, 2), 1, everything, NotStreamable);
        check(&Shape::Named { a: 1 }, 1, everything, NotStreamable);
        check(&vec![Shape::Pair(1, 2), Shape::Named { a: 3 }], 1, 1, Same);
        check(&Some(record.ids.clone()), 1, 1, Same);
    }

    /// A sink that fails after `left` bytes.
    struct FailingAfter {
        left: usize,
    }

    impl std::io::Write for FailingAfter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            if bytes.len() > self.left {
                return Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "full"));
            }
            self.left -= bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_sink_that_fails_stops_the_encoding_with_its_error() {
        let outcome = write_canonical(&record().ids, 1, 16, &mut FailingAfter { left: 100 });
        match outcome {
            Err(WriteCanonicalError::Io(error)) => assert_eq!(error.kind(), std::io::ErrorKind::StorageFull),
            other => panic!("{other:?}"),
        }
    }
}
