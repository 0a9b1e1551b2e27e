//! Canonical CBOR: the only byte encoding a fact, a body or a bundle may use.
//!
//! Canonical means (RFC 8949 §4.2.1 "core deterministic encoding", restricted):
//! definite lengths only, integers in their shortest form, map keys sorted by
//! the bytewise order of their own encodings with no duplicates, no floats, no
//! tags, no simple values other than `true`, `false` and `null`.
//!
//! Encoding goes through [`ciborium::Value`]: a value is first brought into
//! canonical shape (keys sorted, floats and tags refused) and then written.
//! Decoding parses with ciborium and re-encodes canonically; any input that is
//! not byte-identical to its own canonical re-encoding is refused. That one
//! comparison catches every non-canonical form (long integers, indefinite
//! lengths, unsorted or duplicate keys, trailing bytes) and is the reference.
//!
//! Verification and replay read every stored fact, so the hot paths first ask
//! [`is_canonical`], a validator that walks the bytes without building a
//! value; only input it refuses goes through the reference decoder, which
//! names the problem. A property test (tests/fact_props.rs) pins the two to
//! the same verdict on valid encodings and on mutations of them.
//!
//! Typed values take faster roads to the same results: `direct.rs` encodes
//! straight from serde, and `read.rs` deserialises in place over
//! [`CanonicalReader`] (the validator's head-by-head reader). Both give up to
//! the reference paths here, which decide and name any problem.

use ciborium::value::{Integer, Value};
use serde::{de::DeserializeOwned, Serialize};

/// Deepest nesting of arrays and maps a canonical value may have. Fact bodies
/// are small records; anything deeper is refused rather than risked.
pub const CBOR_NESTING_DEPTH_MAX: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    #[error("not valid CBOR: {reason}")]
    Malformed { reason: String },
    #[error("{count} trailing byte(s) after the CBOR item")]
    TrailingBytes { count: usize },
    #[error("not canonical CBOR (a shorter, definite or sorted encoding exists)")]
    NotCanonical,
    #[error("floating-point numbers are not allowed (at {path})")]
    Float { path: String },
    #[error("CBOR tags are not allowed (at {path})")]
    Tag { path: String },
    #[error("integer out of the 64-bit range (at {path})")]
    IntegerRange { path: String },
    #[error("duplicate map key (at {path})")]
    DuplicateKey { path: String },
    #[error("nested deeper than {max} levels (at {path})", max = CBOR_NESTING_DEPTH_MAX)]
    TooDeep { path: String },
    #[error("cannot represent the value as CBOR: {reason}")]
    Unrepresentable { reason: String },
}

mod direct;
mod display;
pub use display::cbor_to_json;
mod read;
mod stream;

/// A fast path (the direct encoder, the in-place reader) did not decide;
/// the reference encoder or deserializer will, and names any problem.
#[derive(Debug)]
pub struct GaveUp;

impl std::fmt::Display for GaveUp {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("left to the reference path")
    }
}

impl std::error::Error for GaveUp {}

impl serde::ser::Error for GaveUp {
    fn custom<T: std::fmt::Display>(_message: T) -> GaveUp {
        GaveUp
    }
}

impl serde::de::Error for GaveUp {
    fn custom<T: std::fmt::Display>(_message: T) -> GaveUp {
        GaveUp
    }
}

/// Serialises any serde value into canonical CBOR bytes: straight from serde
/// when it can ([`direct`]), through the reference path otherwise (which
/// also names every problem).
pub fn to_canonical_bytes<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    to_canonical_bytes_with_capacity(value, direct::BUFFER_BYTES_INITIAL)
}

/// As [`to_canonical_bytes`], into a buffer of `capacity_bytes` to begin
/// with: a large value whose size is known roughly (a world snapshot, from
/// the one before it) is written without the buffer doubling on the way,
/// each doubling leaving the smaller buffer freed beside the larger.
pub fn to_canonical_bytes_with_capacity<T: Serialize + ?Sized>(
    value: &T,
    capacity_bytes: usize,
) -> Result<Vec<u8>, CanonicalError> {
    match direct::to_bytes_in(value, capacity_bytes) {
        Some(bytes) => Ok(bytes),
        None => to_canonical_bytes_reference(value),
    }
}

/// As [`to_canonical_bytes`], with how many bytes the encoder copied to put
/// maps and structs whose entries arrived out of canonical order in order
/// (`None` for the copies where the reference path encoded it). A test
/// holds a large value's own layout to its canonical order with it: a
/// world snapshot is most of a gigabyte at a million beings, and a struct
/// at its top arriving out of order copies all of it.
pub fn to_canonical_bytes_counting_copies<T: Serialize + ?Sized>(
    value: &T,
) -> Result<(Vec<u8>, Option<usize>), CanonicalError> {
    match direct::to_bytes_counting_copies(value) {
        Some((bytes, copied)) => Ok((bytes, Some(copied))),
        None => Ok((to_canonical_bytes_reference(value)?, None)),
    }
}

/// Bytes of in-order entries a streamed encoding holds before writing them
/// out ([`write_canonical`]).
pub const CANONICAL_STREAM_FLUSH_BYTES: usize = 1 << 20;

/// Why [`write_canonical`] stopped; what it wrote so far is not the value's encoding.
#[derive(Debug, thiserror::Error)]
pub enum WriteCanonicalError {
    /// A map or struct among the streamed levels whose keys turned out of
    /// canonical order after its first entries were written, a container
    /// there that does not announce its length, or anything the direct
    /// encoder leaves to the reference path: encode the value whole with
    /// [`to_canonical_bytes`] instead (which names any problem).
    #[error("the value cannot be written as it is encoded; encode it whole")]
    NotStreamable,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Writes the canonical bytes of `value` to `sink` as they are encoded,
/// the same bytes [`to_canonical_bytes`] gives; returns how many. The maps,
/// structs and arrays of the top `streamed_levels` levels are written
/// entry by entry, holding in memory at most about `flush_bytes` of their
/// entries at a time (a map whose keys arrive out of canonical order is
/// held whole and sorted); deeper values are encoded whole, one at a time.
/// A value twice its size in memory (a world snapshot) need not be.
pub fn write_canonical<T: Serialize + ?Sized>(
    value: &T,
    streamed_levels: usize,
    flush_bytes: usize,
    sink: &mut dyn std::io::Write,
) -> Result<u64, WriteCanonicalError> {
    stream::write(value, streamed_levels, flush_bytes, sink).map_err(|stopped| match stopped {
        stream::Stopped::GaveUp => WriteCanonicalError::NotStreamable,
        stream::Stopped::Io(error) => WriteCanonicalError::Io(error),
    })
}

/// The reference encoder: through a `Value` tree, sorted in place, then
/// written. Public so that tests can hold the direct path to it.
pub fn to_canonical_bytes_reference<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    let mut value =
        Value::serialized(value).map_err(|error| CanonicalError::Unrepresentable { reason: error.to_string() })?;
    // The tree is ours: sort it in place instead of cloning it.
    canonicalise_in_place(&mut value, 0)?;
    let mut out = Vec::new();
    write_raw(&value, &mut out);
    Ok(out)
}

/// Writes an owned CBOR value in canonical form, sorting it in place.
pub fn encode_owned(mut value: Value) -> Result<Vec<u8>, CanonicalError> {
    canonicalise_in_place(&mut value, 0)?;
    let mut out = Vec::new();
    write_raw(&value, &mut out);
    Ok(out)
}

/// Canonical CBOR of a JSON value, written straight from the JSON tree (the
/// digests of a moment's context, face and script output are taken over it,
/// every moment). The mapping is `world::json_to_cbor`'s: integers stay
/// integers, any other number becomes its text, object keys are text sorted
/// canonically; `json_and_cbor_paths_agree` pins the two together.
pub fn encode_json(value: &serde_json::Value) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(JSON_ENCODING_BYTES_RESERVED);
    write_json(value, 0, &mut out)?;
    Ok(out)
}

/// A key of a map written by [`encode_json_entries`]: owned or borrowed text.
pub trait EntryKey<'a> {
    fn key(self) -> &'a str;
}

impl<'a> EntryKey<'a> for &'a String {
    fn key(self) -> &'a str {
        self.as_str()
    }
}

impl<'a> EntryKey<'a> for &'a str {
    fn key(self) -> &'a str {
        self
    }
}

/// Canonical CBOR of a map from text keys to JSON values.
pub fn encode_json_entries<'a>(
    entries: impl ExactSizeIterator<Item = (impl EntryKey<'a>, &'a serde_json::Value)>,
) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(JSON_ENCODING_BYTES_RESERVED);
    write_json_object(entries, 0, &mut out)?;
    Ok(out)
}

/// Bytes reserved up front for a JSON value's encoding: a moment's face fits,
/// so it is written without growing its buffer several times.
const JSON_ENCODING_BYTES_RESERVED: usize = 512;
/// Objects of up to this many entries are put in canonical order on the stack.
const JSON_OBJECT_ENTRIES_SORTED_ON_STACK: usize = 16;

fn write_json(value: &serde_json::Value, depth: usize, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    use serde_json::Value as Json;
    if depth > CBOR_NESTING_DEPTH_MAX {
        return Err(CanonicalError::TooDeep { path: "$".into() });
    }
    match value {
        Json::Null => out.push(0xf6),
        Json::Bool(flag) => out.push(if *flag { 0xf5 } else { 0xf4 }),
        Json::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(signed), _) if signed < 0 => write_head(1, (-1 - i128::from(signed)) as u64, out),
            (Some(signed), _) => write_head(0, signed as u64, out),
            (_, Some(unsigned)) => write_head(0, unsigned, out),
            _ => write_text(&number.to_string(), out),
        },
        Json::String(text) => write_text(text, out),
        Json::Array(items) => {
            write_head(4, items.len() as u64, out);
            for item in items {
                write_json(item, depth + 1, out)?;
            }
        }
        Json::Object(map) => write_json_object(map.iter(), depth, out)?,
    }
    Ok(())
}

/// An object's entries gathered for sorting: on the stack when there are few
/// (every moment encodes a face and a context of small objects).
fn write_json_object<'a>(
    entries: impl ExactSizeIterator<Item = (impl EntryKey<'a>, &'a serde_json::Value)>,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), CanonicalError> {
    static NULL: serde_json::Value = serde_json::Value::Null;
    let count = entries.len();
    if count <= JSON_OBJECT_ENTRIES_SORTED_ON_STACK {
        let mut slots: [(&str, &serde_json::Value); JSON_OBJECT_ENTRIES_SORTED_ON_STACK] =
            [("", &NULL); JSON_OBJECT_ENTRIES_SORTED_ON_STACK];
        let mut filled = 0;
        for (slot, (key, item)) in slots.iter_mut().zip(entries) {
            *slot = (key.key(), item);
            filled += 1;
        }
        debug_assert_eq!(filled, count, "an exact-size iterator yields its length");
        write_json_map(&mut slots[..filled], depth, out)
    } else {
        let mut gathered: Vec<_> = entries.map(|(key, item)| (key.key(), item)).collect();
        write_json_map(&mut gathered, depth, out)
    }
}

fn write_json_map(
    entries: &mut [(&str, &serde_json::Value)],
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), CanonicalError> {
    if !entries.is_empty() && depth + 1 > CBOR_NESTING_DEPTH_MAX {
        return Err(CanonicalError::TooDeep { path: "$".into() });
    }
    // Text keys: canonical order is by length, then bytes (see
    // `canonicalise_in_place`). Keys come from a map, so none repeat.
    entries.sort_by(|(left, _), (right, _)| left.len().cmp(&right.len()).then_with(|| left.cmp(right)));
    write_head(5, entries.len() as u64, out);
    for (key, item) in entries.iter() {
        write_text(key, out);
        write_json(item, depth + 1, out)?;
    }
    Ok(())
}

/// Appends `value` as `encode_json` writes it at nesting `depth`: for a
/// value written in place inside a larger one, so that the nesting limit
/// falls where it would in the whole.
pub fn write_json_at(value: &serde_json::Value, depth: usize, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    write_json(value, depth, out)
}

/// Appends a map from text keys to JSON values as `encode_json` writes an
/// object at nesting `depth` (see [`write_json_at`]).
pub fn write_json_entries_at<'a>(
    entries: impl ExactSizeIterator<Item = (impl EntryKey<'a>, &'a serde_json::Value)>,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), CanonicalError> {
    if depth > CBOR_NESTING_DEPTH_MAX {
        return Err(CanonicalError::TooDeep { path: "$".into() });
    }
    write_json_object(entries, depth, out)
}

/// Appends the head of a definite-length map of `entries` entries; the
/// caller writes them in canonical key order.
#[inline]
pub fn write_map_head(entries: usize, out: &mut Vec<u8>) {
    write_head(5, entries as u64, out);
}

/// Appends `null`.
#[inline]
pub fn write_null(out: &mut Vec<u8>) {
    out.push(0xf6);
}

/// Appends `true` or `false`.
#[inline]
pub fn write_bool(value: bool, out: &mut Vec<u8>) {
    out.push(if value { 0xf5 } else { 0xf4 });
}

/// Appends a definite-length byte string to `out` (a canonical item).
#[inline]
pub fn write_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    write_head(2, bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// Appends the head of a definite-length byte string of `length` bytes,
/// for a caller that writes the bytes elsewhere (a file, in parts).
#[inline]
pub fn write_bytes_head(length: usize, out: &mut Vec<u8>) {
    write_head(2, length as u64, out);
}

/// Appends an unsigned integer in its shortest form (a canonical item).
#[inline]
pub fn write_uint(value: u64, out: &mut Vec<u8>) {
    write_head(0, value, out);
}

/// Appends a definite-length text string (a canonical item).
#[inline]
pub fn write_text(text: &str, out: &mut Vec<u8>) {
    write_head(3, text.len() as u64, out);
    out.extend_from_slice(text.as_bytes());
}

/// Appends the head of a definite-length array of `items` items.
#[inline]
pub fn write_array_head(items: u64, out: &mut Vec<u8>) {
    write_head(4, items, out);
}

/// `canonicalise` for an owned tree: the same rules, without copying it.
fn canonicalise_in_place(value: &mut Value, depth: usize) -> Result<(), CanonicalError> {
    if depth > CBOR_NESTING_DEPTH_MAX {
        return Err(CanonicalError::TooDeep { path: "$".into() });
    }
    match value {
        Value::Array(items) => items.iter_mut().try_for_each(|item| canonicalise_in_place(item, depth + 1)),
        Value::Map(entries) => {
            for (key, item) in entries.iter_mut() {
                canonicalise_in_place(key, depth + 1)?;
                canonicalise_in_place(item, depth + 1)?;
            }
            if entries.iter().all(|(key, _)| matches!(key, Value::Text(_))) {
                // Text keys (nearly every map): the bytewise order of their
                // encodings is the order by length, then by bytes, because a
                // text head grows monotonically with the length.
                entries.sort_by(|(left, _), (right, _)| match (left, right) {
                    (Value::Text(left), Value::Text(right)) => {
                        left.len().cmp(&right.len()).then_with(|| left.as_bytes().cmp(right.as_bytes()))
                    }
                    // Unreachable: every key was just checked to be text.
                    _ => std::cmp::Ordering::Equal,
                });
                if let Some(pair) = entries.windows(2).find(|pair| pair[0].0 == pair[1].0) {
                    return Err(CanonicalError::DuplicateKey { path: format!("$.{}", key_label(&pair[0].0)) });
                }
                return Ok(());
            }
            let mut keyed: Vec<(Vec<u8>, (Value, Value))> = Vec::with_capacity(entries.len());
            for (key, item) in std::mem::take(entries) {
                let mut key_bytes = Vec::new();
                write_raw(&key, &mut key_bytes);
                keyed.push((key_bytes, (key, item)));
            }
            keyed.sort_by(|left, right| left.0.cmp(&right.0));
            if let Some(pair) = keyed.windows(2).find(|pair| pair[0].0 == pair[1].0) {
                return Err(CanonicalError::DuplicateKey { path: format!("$.{}", key_label(&(pair[0].1).0)) });
            }
            *entries = keyed.into_iter().map(|(_, entry)| entry).collect();
            Ok(())
        }
        Value::Integer(integer) => {
            let wide = i128::from(*integer);
            if wide > i128::from(u64::MAX) || wide < -(i128::from(u64::MAX)) - 1 {
                return Err(CanonicalError::IntegerRange { path: "$".into() });
            }
            Ok(())
        }
        Value::Bytes(_) | Value::Text(_) | Value::Bool(_) | Value::Null => Ok(()),
        Value::Float(_) => Err(CanonicalError::Float { path: "$".into() }),
        Value::Tag(..) => Err(CanonicalError::Tag { path: "$".into() }),
        // ciborium's Value is non-exhaustive; the cloning path names the rest.
        other => canonicalise(other, depth, &mut String::from("$")).map(|_| ()),
    }
}

/// Writes a CBOR value in canonical form.
pub fn encode_value(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    let canonical = canonicalise(value, 0, &mut String::from("$"))?;
    let mut out = Vec::new();
    write_raw(&canonical, &mut out);
    Ok(out)
}

/// Parses canonical CBOR bytes into a value, refusing anything that is not
/// exactly the canonical encoding of what it decodes to.
pub fn decode_canonical(bytes: &[u8]) -> Result<Value, CanonicalError> {
    let mut reader = bytes;
    let value: Value = ciborium::de::from_reader_with_recursion_limit(&mut reader, CBOR_NESTING_DEPTH_MAX + 1)
        .map_err(|error| CanonicalError::Malformed { reason: describe_decode_error(&error) })?;
    if !reader.is_empty() {
        return Err(CanonicalError::TrailingBytes { count: reader.len() });
    }
    let mut again = Vec::with_capacity(bytes.len());
    write_checked(&value, 0, &mut again).map_err(CanonicalError::rooted)?;
    if again != bytes {
        return Err(CanonicalError::NotCanonical);
    }
    Ok(value)
}

/// Whether `bytes` are exactly one canonical CBOR item: the verdict of
/// [`decode_canonical`], reached without allocating.
pub fn is_canonical(bytes: &[u8]) -> bool {
    let mut reader = CanonicalReader::new(bytes);
    reader.skip_item(0) && reader.is_at_end()
}

/// `Ok` for canonical bytes; otherwise the reference decoder's error.
pub fn check_canonical(bytes: &[u8]) -> Result<(), CanonicalError> {
    if is_canonical(bytes) {
        return Ok(());
    }
    decode_canonical(bytes).map(drop)
}

/// Sets `slot` once, for a reader that takes a map's fields off the bytes:
/// `None` (as for serde's duplicate-field error) the second time.
pub fn set_once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

/// Reads a map's next text key, which must come after `previous` in
/// canonical order (shorter first, then bytewise): `None` for a key out of
/// order or repeated, or no text key at all.
pub fn next_key_in_order<'a>(reader: &mut CanonicalReader<'a>, previous: &mut Option<&'a [u8]>) -> Option<&'a [u8]> {
    let key = reader.text_bytes()?;
    if previous.is_some_and(|previous| (previous.len(), previous) >= (key.len(), key)) {
        return None;
    }
    *previous = Some(key);
    Some(key)
}

/// Reads canonical CBOR item by item: every head must be in its shortest
/// form and every length definite; anything else reads as `None`. Used by the
/// validator and by the fixed-layout decoders of envelopes and headers.
pub struct CanonicalReader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> CanonicalReader<'a> {
    pub fn new(bytes: &'a [u8]) -> CanonicalReader<'a> {
        CanonicalReader { bytes, position: 0 }
    }

    pub fn is_at_end(&self) -> bool {
        self.position == self.bytes.len()
    }

    /// How many bytes have been read.
    pub fn position(&self) -> usize {
        self.position
    }

    fn take(&mut self, count: u64) -> Option<&'a [u8]> {
        let end = self.position.checked_add(usize::try_from(count).ok()?)?;
        let taken = self.bytes.get(self.position..end)?;
        self.position = end;
        Some(taken)
    }

    /// One head: its major type and argument. Of the simple values only
    /// `false`, `true` and `null` read (argument 20, 21, 22); floats, other
    /// simple values, reserved and indefinite forms do not.
    fn head(&mut self) -> Option<(u8, u64)> {
        let initial = *self.take(1)?.first()?;
        let (major, info) = (initial >> 5, initial & 0x1f);
        if major == 7 {
            return matches!(info, 20..=22).then_some((7, u64::from(info)));
        }
        let argument = match info {
            0..=23 => u64::from(info),
            24 => Some(u64::from(self.take(1)?[0])).filter(|&value| value >= 24)?,
            25 => Some(u64::from(u16::from_be_bytes(self.take(2)?.try_into().ok()?)))
                .filter(|&value| value > u64::from(u8::MAX))?,
            26 => Some(u64::from(u32::from_be_bytes(self.take(4)?.try_into().ok()?)))
                .filter(|&value| value > u64::from(u16::MAX))?,
            27 => {
                Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?)).filter(|&value| value > u64::from(u32::MAX))?
            }
            _ => return None,
        };
        Some((major, argument))
    }

    fn head_of(&mut self, major: u8) -> Option<u64> {
        self.head().filter(|&(found, _)| found == major).map(|(_, argument)| argument)
    }

    pub fn uint(&mut self) -> Option<u64> {
        self.head_of(0)
    }

    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let length = self.head_of(2)?;
        self.take(length)
    }

    /// A byte string of exactly `N` bytes (what an id, a key or a nonce
    /// deserializes from).
    pub fn fixed_bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.bytes()?.try_into().ok()
    }

    pub fn text(&mut self) -> Option<&'a str> {
        let length = self.head_of(3)?;
        std::str::from_utf8(self.take(length)?).ok()
    }

    /// A text's bytes, not checked to be UTF-8 (a map key compared with
    /// known keys needs no check: they are UTF-8).
    pub fn text_bytes(&mut self) -> Option<&'a [u8]> {
        let length = self.head_of(3)?;
        self.take(length)
    }

    pub fn array_head(&mut self) -> Option<u64> {
        self.head_of(4)
    }

    pub fn map_head(&mut self) -> Option<u64> {
        self.head_of(5)
    }

    /// Reads a `null` if one comes next.
    pub fn null(&mut self) -> bool {
        let is_null = self.bytes.get(self.position) == Some(&0xf6);
        if is_null {
            self.position += 1;
        }
        is_null
    }

    /// Skips one item by its heads alone, without the UTF-8 and key-order
    /// checks of `skip_item`: for bytes checked to be canonical already, or
    /// whose reading counts only once they are proven so. `levels_left`
    /// counts nesting as the in-place reader does (`read::Reader::recurse`):
    /// a container needs more than one level left. `false` at a container
    /// too deep for that, or where the input ends.
    pub fn skip_checked(&mut self, levels_left: usize) -> bool {
        let Some((major, argument)) = self.head() else { return false };
        match major {
            0 | 1 | 7 => true,
            2 | 3 => self.take(argument).is_some(),
            4 | 5 if levels_left <= 1 => false,
            // Every item takes at least a byte, so a huge count runs out of input quickly.
            4 => (0..argument).all(|_| self.skip_checked(levels_left - 1)),
            5 => (0..argument).all(|_| self.skip_checked(levels_left - 1) && self.skip_checked(levels_left - 1)),
            _ => false,
        }
    }

    /// Skips one item by its heads alone, as [`CanonicalReader::skip_checked`]
    /// does but at any depth and without recursion: for a reader that only
    /// plans which facts to decode (what it reads counts only once the fact
    /// is decoded in full). Each item takes at least a byte, so the loop
    /// ends within the input. `false` where the input ends first or a head
    /// does not read.
    pub fn skip_heads(&mut self) -> bool {
        let mut items_left: u64 = 1;
        while items_left > 0 {
            let Some((major, argument)) = self.head() else { return false };
            items_left -= 1;
            let more = match major {
                0 | 1 | 7 => 0,
                2 | 3 => match self.take(argument) {
                    Some(_) => 0,
                    None => return false,
                },
                4 => argument,
                5 => match argument.checked_mul(2) {
                    Some(items) => items,
                    None => return false,
                },
                _ => return false,
            };
            match items_left.checked_add(more) {
                Some(total) => items_left = total,
                None => return false,
            }
        }
        true
    }

    /// Reads one whole item, checking what a canonical item must hold: no
    /// tags, valid UTF-8 text, map keys in strictly rising encoded order (so
    /// no duplicates), nesting no deeper than [`CBOR_NESTING_DEPTH_MAX`]
    /// (`depth`: the item's own, 0 for a whole document).
    pub fn skip_item(&mut self, depth: usize) -> bool {
        if depth > CBOR_NESTING_DEPTH_MAX {
            return false;
        }
        let Some((major, argument)) = self.head() else { return false };
        match major {
            0 | 1 | 7 => true,
            2 => self.take(argument).is_some(),
            3 => self.take(argument).is_some_and(|text| std::str::from_utf8(text).is_ok()),
            // Every item takes at least a byte, so a huge count runs out of input quickly.
            4 => (0..argument).all(|_| self.skip_item(depth + 1)),
            5 => {
                let mut previous_key: Option<&[u8]> = None;
                for _ in 0..argument {
                    let key_start = self.position;
                    if !self.skip_item(depth + 1) {
                        return false;
                    }
                    let key = &self.bytes[key_start..self.position];
                    if previous_key.is_some_and(|previous| previous >= key) {
                        return false;
                    }
                    previous_key = Some(key);
                    if !self.skip_item(depth + 1) {
                        return false;
                    }
                }
                true
            }
            _ => false,
        }
    }
}

/// Re-encodes a decoded value in the order it was read, refusing what a
/// canonical encoding cannot hold (floats, tags, out-of-range integers, map
/// keys out of order or repeated). Together with the byte comparison in
/// `decode_canonical` this equals "re-encode canonically and compare", without
/// cloning the value to sort it. Error paths are built only on the way out.
fn write_checked(value: &Value, depth: usize, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    if depth > CBOR_NESTING_DEPTH_MAX {
        return Err(CanonicalError::TooDeep { path: String::new() });
    }
    match value {
        Value::Integer(integer) => {
            let wide = i128::from(*integer);
            if wide > i128::from(u64::MAX) || wide < -(i128::from(u64::MAX)) - 1 {
                return Err(CanonicalError::IntegerRange { path: String::new() });
            }
            write_raw(value, out);
        }
        Value::Bytes(_) | Value::Text(_) | Value::Bool(_) | Value::Null => write_raw(value, out),
        Value::Float(_) => return Err(CanonicalError::Float { path: String::new() }),
        Value::Tag(..) => return Err(CanonicalError::Tag { path: String::new() }),
        Value::Array(items) => {
            write_head(4, items.len() as u64, out);
            for (index, item) in items.iter().enumerate() {
                write_checked(item, depth + 1, out).map_err(|error| error.within(&format!("[{index}]")))?;
            }
        }
        Value::Map(entries) => {
            write_head(5, entries.len() as u64, out);
            let mut previous_key: Option<(usize, usize)> = None;
            for (key, item) in entries {
                let segment = || format!(".{}", key_label(key));
                let key_start = out.len();
                write_checked(key, depth + 1, out).map_err(|error| error.within(&segment()))?;
                let key_end = out.len();
                if let Some((start, end)) = previous_key {
                    match out[start..end].cmp(&out[key_start..key_end]) {
                        std::cmp::Ordering::Less => {}
                        std::cmp::Ordering::Equal => return Err(CanonicalError::DuplicateKey { path: segment() }),
                        std::cmp::Ordering::Greater => return Err(CanonicalError::NotCanonical),
                    }
                }
                previous_key = Some((key_start, key_end));
                write_checked(item, depth + 1, out).map_err(|error| error.within(&segment()))?;
            }
        }
        other => return Err(CanonicalError::Unrepresentable { reason: format!("unsupported CBOR value {other:?}") }),
    }
    Ok(())
}

impl CanonicalError {
    /// Prefixes the path of an error raised inside a nested item.
    fn within(self, segment: &str) -> CanonicalError {
        let prefixed = |path: String| format!("{segment}{path}");
        match self {
            CanonicalError::Float { path } => CanonicalError::Float { path: prefixed(path) },
            CanonicalError::Tag { path } => CanonicalError::Tag { path: prefixed(path) },
            CanonicalError::IntegerRange { path } => CanonicalError::IntegerRange { path: prefixed(path) },
            CanonicalError::DuplicateKey { path } => CanonicalError::DuplicateKey { path: prefixed(path) },
            CanonicalError::TooDeep { path } => CanonicalError::TooDeep { path: prefixed(path) },
            other => other,
        }
    }

    /// Roots a relative path at `$`.
    fn rooted(self) -> CanonicalError {
        self.within("$")
    }
}

/// Decodes canonical bytes straight into a typed record.
/// The bytes are deserialised in place by a reader that validates as it
/// reads ([`read`]); whatever that fast path leaves undecided is checked and
/// goes through ciborium's deserializer, the reference, which also names
/// every problem.
pub fn from_canonical_bytes<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CanonicalError> {
    match read::from_bytes(bytes) {
        Some(value) => Ok(value),
        None => {
            check_canonical(bytes)?;
            deserialize_with_ciborium(bytes)
        }
    }
}

/// [`from_canonical_bytes`] for bytes that already passed [`check_canonical`]
/// (a body [`crate::fact::Fact::decode_envelope`] accepted): the items `T`
/// ignores are skipped by their heads alone rather than checked again. On
/// bytes that did not pass, it may accept an ignored item the check refuses
/// (land replay reads act bodies whose check it deferred this way: what it
/// read counts only if the recomputed act encodes to the stored bytes,
/// which proves them canonical).
pub fn from_checked_canonical_bytes<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CanonicalError> {
    match read::from_checked_bytes(bytes) {
        Some(value) => Ok(value),
        None => from_canonical_bytes_reference(bytes),
    }
}

/// The in-place reader of [`from_checked_canonical_bytes`] alone: `None`
/// where it gives up and the reference would decide (tests use it to know
/// the fast road was the one taken).
pub fn read_checked_in_place<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    read::from_checked_bytes(bytes)
}

/// [`from_canonical_bytes`] through ciborium's deserializer alone.
pub fn from_canonical_bytes_reference<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CanonicalError> {
    check_canonical(bytes)?;
    deserialize_with_ciborium(bytes)
}

/// ciborium's deserializer over bytes already checked to be canonical.
fn deserialize_with_ciborium<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CanonicalError> {
    ciborium::de::from_reader_with_recursion_limit(bytes, CBOR_NESTING_DEPTH_MAX + 1)
        .map_err(|error| CanonicalError::Unrepresentable { reason: describe_decode_error(&error) })
}

fn describe_decode_error<E: std::fmt::Debug>(error: &ciborium::de::Error<E>) -> String {
    match error {
        ciborium::de::Error::Io(_) => "unexpected end of input".to_string(),
        ciborium::de::Error::Syntax(offset) => format!("syntax error at byte {offset}"),
        ciborium::de::Error::Semantic(offset, message) => match offset {
            Some(offset) => format!("{message} at byte {offset}"),
            None => message.clone(),
        },
        ciborium::de::Error::RecursionLimitExceeded => {
            format!("nested deeper than {CBOR_NESTING_DEPTH_MAX} levels")
        }
    }
}

fn canonicalise(value: &Value, depth: usize, path: &mut String) -> Result<Value, CanonicalError> {
    if depth > CBOR_NESTING_DEPTH_MAX {
        return Err(CanonicalError::TooDeep { path: path.clone() });
    }
    Ok(match value {
        Value::Integer(integer) => {
            let wide = i128::from(*integer);
            if wide > i128::from(u64::MAX) || wide < -(i128::from(u64::MAX)) - 1 {
                return Err(CanonicalError::IntegerRange { path: path.clone() });
            }
            Value::Integer(*integer)
        }
        Value::Bytes(bytes) => Value::Bytes(bytes.clone()),
        Value::Text(text) => Value::Text(text.clone()),
        Value::Bool(flag) => Value::Bool(*flag),
        Value::Null => Value::Null,
        Value::Float(_) => return Err(CanonicalError::Float { path: path.clone() }),
        Value::Tag(..) => return Err(CanonicalError::Tag { path: path.clone() }),
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                let before = path.len();
                path.push_str(&format!("[{index}]"));
                out.push(canonicalise(item, depth + 1, path)?);
                path.truncate(before);
            }
            Value::Array(out)
        }
        Value::Map(entries) => {
            let mut keyed: Vec<(Vec<u8>, Value, Value)> = Vec::with_capacity(entries.len());
            for (key, item) in entries {
                let before = path.len();
                path.push_str(&format!(".{}", key_label(key)));
                let key = canonicalise(key, depth + 1, path)?;
                let item = canonicalise(item, depth + 1, path)?;
                path.truncate(before);
                let mut key_bytes = Vec::new();
                write_raw(&key, &mut key_bytes);
                keyed.push((key_bytes, key, item));
            }
            keyed.sort_by(|left, right| left.0.cmp(&right.0));
            for pair in keyed.windows(2) {
                if pair[0].0 == pair[1].0 {
                    return Err(CanonicalError::DuplicateKey { path: format!("{path}.{}", key_label(&pair[0].1)) });
                }
            }
            Value::Map(keyed.into_iter().map(|(_, key, item)| (key, item)).collect())
        }
        other => {
            return Err(CanonicalError::Unrepresentable {
                reason: format!("unsupported CBOR value {other:?} at {path}"),
            })
        }
    })
}

fn key_label(key: &Value) -> String {
    match key {
        Value::Text(text) => text.clone(),
        Value::Integer(integer) => i128::from(*integer).to_string(),
        other => format!("{other:?}"),
    }
}

/// Writes an already-canonical value. Lengths are always definite and
/// integers shortest: the encoding rules live here and in `write_head` only.
fn write_raw(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Integer(integer) => {
            let wide = i128::from(*integer);
            if wide >= 0 {
                write_head(0, wide as u64, out);
            } else {
                // CBOR stores a negative n as -1 - n in major type 1.
                write_head(1, (-1 - wide) as u64, out);
            }
        }
        Value::Bytes(bytes) => {
            write_head(2, bytes.len() as u64, out);
            out.extend_from_slice(bytes);
        }
        Value::Text(text) => {
            write_head(3, text.len() as u64, out);
            out.extend_from_slice(text.as_bytes());
        }
        Value::Array(items) => {
            write_head(4, items.len() as u64, out);
            for item in items {
                write_raw(item, out);
            }
        }
        Value::Map(entries) => {
            write_head(5, entries.len() as u64, out);
            for (key, item) in entries {
                write_raw(key, out);
                write_raw(item, out);
            }
        }
        Value::Bool(false) => out.push(0xf4),
        Value::Bool(true) => out.push(0xf5),
        Value::Null => out.push(0xf6),
        // `canonicalise` refuses everything else before we get here.
        other => unreachable!("non-canonical value reached the writer: {other:?}"),
    }
}

/// Inlined for its one-byte case, which nearly every head is (the encoders
/// of faces and act bodies write dozens a moment).
#[inline]
fn write_head(major: u8, argument: u64, out: &mut Vec<u8>) {
    if argument < 24 {
        out.push((major << 5) | argument as u8);
    } else {
        write_long_head(major, argument, out);
    }
}

/// A head whose argument takes bytes of its own (24 and above).
fn write_long_head(major: u8, argument: u64, out: &mut Vec<u8>) {
    debug_assert!(argument >= 24, "write_head writes the one-byte heads");
    let major = major << 5;
    if argument <= u64::from(u8::MAX) {
        out.push(major | 24);
        out.push(argument as u8);
    } else if argument <= u64::from(u16::MAX) {
        out.push(major | 25);
        out.extend_from_slice(&(argument as u16).to_be_bytes());
    } else if argument <= u64::from(u32::MAX) {
        out.push(major | 26);
        out.extend_from_slice(&(argument as u32).to_be_bytes());
    } else {
        out.push(major | 27);
        out.extend_from_slice(&argument.to_be_bytes());
    }
}

/// Convenience constructors used by the fixed-position encoders.
pub fn uint(value: u64) -> Value {
    Value::Integer(Integer::from(value))
}

/// Reads a non-negative integer out of a value.
pub fn as_u64(value: &Value) -> Option<u64> {
    match value {
        Value::Integer(integer) => u64::try_from(i128::from(*integer)).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_rejected(bytes: &[u8], expected: CanonicalError) {
        assert_eq!(decode_canonical(bytes), Err(expected), "input {}", hex::encode(bytes));
    }

    #[test]
    fn non_canonical_forms_are_rejected() {
        // 1 written in two bytes instead of one.
        check_rejected(&[0x18, 0x01], CanonicalError::NotCanonical);
        // Indefinite-length array [1].
        check_rejected(&[0x9f, 0x01, 0xff], CanonicalError::NotCanonical);
        // {"b": 1, "a": 2}: keys out of order.
        check_rejected(&[0xa2, 0x61, b'b', 0x01, 0x61, b'a', 0x02], CanonicalError::NotCanonical);
        // Trailing byte.
        check_rejected(&[0x01, 0x01], CanonicalError::TrailingBytes { count: 1 });
        // Half-precision float 1.0.
        check_rejected(&[0xf9, 0x3c, 0x00], CanonicalError::Float { path: "$".into() });
        // Tag 1 (epoch time) around 0.
        check_rejected(&[0xc1, 0x00], CanonicalError::Tag { path: "$".into() });
        // Duplicate key {"a":1,"a":1}.
        check_rejected(
            &[0xa2, 0x61, b'a', 0x01, 0x61, b'a', 0x01],
            CanonicalError::DuplicateKey { path: "$.a".into() },
        );
    }

    #[test]
    fn skipping_by_heads_alone_ends_where_the_checked_skip_ends() {
        let items = [
            serde_json::json!(null),
            serde_json::json!(-7),
            serde_json::json!("a text"),
            serde_json::json!([1, [2, [3, {"k": "v"}]], "x"]),
            serde_json::json!({"a": {"b": [true, false, null]}, "long key": "v".repeat(300)}),
        ];
        for item in &items {
            let mut bytes = encode_json(item).expect("encodes");
            bytes.push(0x01);
            let skipped_to = |skip: fn(&mut CanonicalReader<'_>) -> bool, bytes: &[u8]| {
                let mut reader = CanonicalReader::new(bytes);
                skip(&mut reader).then(|| reader.position())
            };
            let by_heads: fn(&mut CanonicalReader<'_>) -> bool = |reader| reader.skip_heads();
            let checked: fn(&mut CanonicalReader<'_>) -> bool = |reader| reader.skip_checked(CBOR_NESTING_DEPTH_MAX);
            assert_eq!(skipped_to(by_heads, &bytes), Some(bytes.len() - 1), "{item}");
            for cut in 0..bytes.len() - 1 {
                assert_eq!(
                    skipped_to(by_heads, &bytes[..cut]),
                    skipped_to(checked, &bytes[..cut]),
                    "{item} cut at {cut}"
                );
            }
        }
        // A count no input could hold ends with the input.
        let mut reader = CanonicalReader::new(&[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert!(!reader.skip_heads());
        let mut reader = CanonicalReader::new(&[0xbb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert!(!reader.skip_heads());
    }

    #[test]
    fn canonical_forms_round_trip() {
        for bytes in [
            vec![0x00],
            vec![0x18, 0x18],
            vec![0x20],
            vec![0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            vec![0xa2, 0x61, b'a', 0x01, 0x61, b'b', 0x02],
            vec![0x82, 0xf5, 0xf6],
        ] {
            let value = decode_canonical(&bytes).expect("canonical input");
            assert_eq!(encode_value(&value).expect("encodable"), bytes);
        }
    }

    #[test]
    fn map_keys_sort_by_encoded_bytes_so_shorter_keys_come_first() {
        let value = Value::Map(vec![(Value::Text("bb".into()), uint(1)), (Value::Text("c".into()), uint(2))]);
        let bytes = encode_value(&value).expect("encodable");
        assert_eq!(bytes, vec![0xa2, 0x61, b'c', 0x02, 0x62, b'b', b'b', 0x01]);
    }
}
