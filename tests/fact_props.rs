//! Property tests of the byte format: round trips, refusal of every
//! non-canonical encoding, and decoders that never panic.

use ciborium::value::{Integer, Value};
use ed25519_dalek::SigningKey;
use proptest::prelude::*;
use seed::bundle::Bundle;
use seed::canonical::{decode_canonical, encode_owned, encode_value, is_canonical};
use seed::fact::{BeingId, Fact, FactHeader, FactId};

fn value_strategy() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<u64>().prop_map(|n| Value::Integer(Integer::from(n))),
        any::<i64>().prop_map(|n| Value::Integer(Integer::from(n))),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Bytes),
        "[a-z0-9 éß-]{0,30}".prop_map(Value::Text),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{1,6}", inner, 0..6).prop_map(|entries| {
                Value::Map(entries.into_iter().map(|(key, item)| (Value::Text(key), item)).collect())
            }),
        ]
    })
}

/// Maps in any key order, with text keys of every head size (short, 24+ and
/// 256+ bytes, multi-byte characters) and, sometimes, integer keys mixed in.
fn unsorted_map_strategy() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        "[a-zé]{0,30}".prop_map(Value::Text),
        "[a-c]{250,260}".prop_map(Value::Text),
        any::<i64>().prop_map(|n| Value::Integer(Integer::from(n))),
    ];
    let leaf = value_strategy();
    proptest::collection::vec((key, leaf), 0..8).prop_map(|entries| {
        let mut seen = Vec::new();
        Value::Map(
            entries
                .into_iter()
                .filter(|(key, _)| {
                    if seen.contains(key) {
                        false
                    } else {
                        seen.push(key.clone());
                        true
                    }
                })
                .collect(),
        )
    })
}

fn json_strategy() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value as Json;
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i64>().prop_map(Json::from),
        any::<u64>().prop_map(Json::from),
        (-1e6f64..1e6).prop_map(Json::from),
        "[a-zé ]{0,30}".prop_map(Json::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Json::Array),
            proptest::collection::btree_map("[a-zé]{0,30}", inner, 0..6)
                .prop_map(|entries| Json::Object(entries.into_iter().collect())),
        ]
    })
}

/// How one item of a deliberately non-canonical encoding is written.
#[derive(Debug, Clone, Copy)]
struct Quirks {
    widen_heads: bool,
    indefinite: bool,
    reverse_maps: bool,
}

fn head(major: u8, argument: u64, widen: bool, out: &mut Vec<u8>) {
    let major = major << 5;
    if widen && argument <= u64::from(u32::MAX) {
        // Always eight bytes: valid CBOR, never the shortest form.
        out.push(major | 27);
        out.extend_from_slice(&argument.to_be_bytes());
    } else if argument < 24 {
        out.push(major | argument as u8);
    } else if argument <= 0xff {
        out.extend_from_slice(&[major | 24, argument as u8]);
    } else if argument <= 0xffff {
        out.push(major | 25);
        out.extend_from_slice(&(argument as u16).to_be_bytes());
    } else if argument <= 0xffff_ffff {
        out.push(major | 26);
        out.extend_from_slice(&(argument as u32).to_be_bytes());
    } else {
        out.push(major | 27);
        out.extend_from_slice(&argument.to_be_bytes());
    }
}

/// Writes `value` the way a lenient encoder might. Returns whether any
/// non-canonical choice actually applied.
fn write_quirky(value: &Value, quirks: Quirks, out: &mut Vec<u8>) -> bool {
    match value {
        Value::Integer(integer) => {
            let wide = i128::from(*integer);
            let (major, argument) = if wide >= 0 { (0, wide as u64) } else { (1, (-1 - wide) as u64) };
            head(major, argument, quirks.widen_heads, out);
            quirks.widen_heads && argument <= u64::from(u32::MAX)
        }
        Value::Bytes(bytes) => {
            if quirks.indefinite {
                out.push(0x5f);
                head(2, bytes.len() as u64, false, out);
                out.extend_from_slice(bytes);
                out.push(0xff);
                true
            } else {
                head(2, bytes.len() as u64, quirks.widen_heads, out);
                out.extend_from_slice(bytes);
                quirks.widen_heads
            }
        }
        Value::Text(text) => {
            head(3, text.len() as u64, quirks.widen_heads, out);
            out.extend_from_slice(text.as_bytes());
            quirks.widen_heads
        }
        Value::Bool(flag) => {
            out.push(if *flag { 0xf5 } else { 0xf4 });
            false
        }
        Value::Null => {
            out.push(0xf6);
            false
        }
        Value::Array(items) => {
            let mut changed = quirks.indefinite || quirks.widen_heads;
            if quirks.indefinite {
                out.push(0x9f);
            } else {
                head(4, items.len() as u64, quirks.widen_heads, out);
            }
            for item in items {
                changed |= write_quirky(item, quirks, out);
            }
            if quirks.indefinite {
                out.push(0xff);
            }
            changed
        }
        Value::Map(entries) => {
            let mut changed = quirks.indefinite || quirks.widen_heads || (quirks.reverse_maps && entries.len() > 1);
            if quirks.indefinite {
                out.push(0xbf);
            } else {
                head(5, entries.len() as u64, quirks.widen_heads, out);
            }
            let ordered: Vec<&(Value, Value)> =
                if quirks.reverse_maps { entries.iter().rev().collect() } else { entries.iter().collect() };
            for (key, item) in ordered {
                changed |= write_quirky(key, quirks, out);
                changed |= write_quirky(item, quirks, out);
            }
            if quirks.indefinite {
                out.push(0xff);
            }
            changed
        }
        other => panic!("strategy made an unexpected value {other:?}"),
    }
}

fn header_strategy() -> impl Strategy<Value = (FactHeader, Vec<u8>, [u8; 32])> {
    (
        any::<[u8; 32]>(),
        any::<u64>(),
        any::<[u8; 32]>(),
        any::<u64>(),
        "[a-z][a-z0-9-]{0,20}",
        value_strategy(),
        any::<[u8; 32]>(),
    )
        .prop_map(|(being, seq, prev, time, kind, body, key)| {
            let body = encode_value(&body).expect("strategy values are canonical-encodable");
            let header = FactHeader {
                being: BeingId(being),
                seq,
                prev: FactId(prev),
                stored_time_ms: time,
                kind,
                body_len: body.len() as u64,
                body_hash: seed::fact::blake3_of(&body),
            };
            (header, body, key)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn canonical_values_round_trip(value in value_strategy()) {
        let bytes = encode_value(&value).expect("encodable");
        let decoded = decode_canonical(&bytes).expect("own encoding decodes");
        prop_assert_eq!(encode_value(&decoded).expect("encodable"), bytes);
    }

    #[test]
    fn owned_and_borrowed_encoders_agree(value in unsorted_map_strategy(), text_keys_only in any::<bool>()) {
        // encode_owned sorts text-keyed maps by (length, bytes); encode_value
        // sorts by the bytes of each key's encoding. They must never differ.
        let value = match value {
            Value::Map(entries) if text_keys_only => {
                Value::Map(entries.into_iter().filter(|(key, _)| matches!(key, Value::Text(_))).collect())
            }
            other => other,
        };
        prop_assert_eq!(encode_owned(value.clone()).expect("encodable"), encode_value(&value).expect("encodable"));
    }

    #[test]
    fn header_is_written_as_the_canonical_array((header, _, _) in header_strategy()) {
        let uint = |n: u64| Value::Integer(Integer::from(n));
        let generic = Value::Array(vec![
            uint(seed::fact::FACT_FORMAT_VERSION),
            Value::Text(seed::fact::FACT_DOMAIN_TAG.into()),
            Value::Bytes(header.being.0.to_vec()),
            uint(header.seq),
            Value::Bytes(header.prev.0.to_vec()),
            uint(header.stored_time_ms),
            Value::Text(header.kind.clone()),
            uint(header.body_len),
            Value::Bytes(header.body_hash.0.to_vec()),
        ]);
        prop_assert_eq!(header.encode(), encode_value(&generic).expect("encodable"));
    }

    #[test]
    fn json_and_cbor_paths_agree(value in json_strategy()) {
        let direct = seed::canonical::encode_json(&value).expect("encodable");
        prop_assert_eq!(&direct, &encode_owned(seed::world::json_to_cbor(&value)).expect("encodable"));
        if let serde_json::Value::Object(map) = &value {
            prop_assert_eq!(seed::canonical::encode_json_entries(map.iter()).expect("encodable"), direct);
        }
    }

    #[test]
    fn owned_encoder_refuses_duplicate_keys(key in "[a-z]{0,30}", first in value_strategy(), second in value_strategy()) {
        let value = Value::Map(vec![(Value::Text(key.clone()), first), (Value::Text(key), second)]);
        prop_assert!(encode_owned(value.clone()).is_err());
        prop_assert!(encode_value(&value).is_err());
    }

    #[test]
    fn facts_round_trip_and_verify((header, body, key) in header_strategy()) {
        let key = SigningKey::from_bytes(&key);
        let fact = Fact::seal(header.being, header.seq, header.prev, header.stored_time_ms, &header.kind, body, &key)
            .expect("seal");
        prop_assert_eq!(&fact.header, &header);
        let envelope = fact.encode_envelope();
        let decoded = Fact::decode_envelope(&envelope).expect("decode");
        prop_assert_eq!(&decoded, &fact);
        prop_assert_eq!(decoded.encode_envelope(), envelope);
        prop_assert_eq!(FactHeader::decode(&header.encode()).expect("header"), header);
        prop_assert!(decoded.verify_signature(&key.verifying_key()));
    }

    #[test]
    fn every_non_canonical_encoding_is_rejected(
        value in value_strategy(),
        widen_heads in any::<bool>(),
        indefinite in any::<bool>(),
        reverse_maps in any::<bool>(),
    ) {
        // Start from the canonical shape (map keys in canonical order).
        let value = decode_canonical(&encode_value(&value).expect("encodable")).expect("canonical");
        let mut quirky = Vec::new();
        let changed = write_quirky(&value, Quirks { widen_heads, indefinite, reverse_maps }, &mut quirky);
        let canonical = encode_value(&value).expect("encodable");
        // A lenient decoder reads the same value from the quirky bytes...
        let lenient: Value = ciborium::from_reader(quirky.as_slice()).expect("valid CBOR");
        prop_assert_eq!(encode_value(&lenient).expect("encodable"), canonical.clone());
        // ...but the canonical decoder accepts only the canonical bytes.
        if changed {
            prop_assert_ne!(&quirky, &canonical);
            prop_assert!(decode_canonical(&quirky).is_err());
        } else {
            prop_assert_eq!(&quirky, &canonical);
            prop_assert!(decode_canonical(&quirky).is_ok());
        }
    }

    #[test]
    fn validator_agrees_with_the_reference_decoder_on_quirky_encodings(
        value in value_strategy(),
        widen_heads in any::<bool>(),
        indefinite in any::<bool>(),
        reverse_maps in any::<bool>(),
        position in any::<prop::sample::Index>(),
        flip in any::<u8>(),
    ) {
        // Valid encodings, lenient ones, and either with one byte flipped:
        // the fast validator and the reference decoder reach the same verdict.
        let canonical = encode_value(&value).expect("encodable");
        prop_assert!(is_canonical(&canonical));
        let value = decode_canonical(&canonical).expect("canonical");
        let mut quirky = Vec::new();
        write_quirky(&value, Quirks { widen_heads, indefinite, reverse_maps }, &mut quirky);
        for mut bytes in [canonical, quirky] {
            prop_assert_eq!(is_canonical(&bytes), decode_canonical(&bytes).is_ok(), "{}", hex::encode(&bytes));
            let index = position.index(bytes.len());
            bytes[index] ^= flip;
            prop_assert_eq!(is_canonical(&bytes), decode_canonical(&bytes).is_ok(), "{}", hex::encode(&bytes));
            bytes.truncate(index);
            prop_assert_eq!(is_canonical(&bytes), decode_canonical(&bytes).is_ok(), "{}", hex::encode(&bytes));
        }
    }

    #[test]
    fn direct_encoder_writes_what_the_reference_encoder_writes(
        json in json_strategy(),
        value in value_strategy(),
        unsorted in unsorted_map_strategy(),
    ) {
        // Same bytes, or the same refusal (floats in JSON, duplicate keys).
        let reference = seed::canonical::to_canonical_bytes_reference(&json);
        prop_assert_eq!(seed::canonical::to_canonical_bytes(&json), reference);
        prop_assert_eq!(
            seed::canonical::to_canonical_bytes(&value),
            seed::canonical::to_canonical_bytes_reference(&value)
        );
        prop_assert_eq!(
            seed::canonical::to_canonical_bytes(&unsorted),
            seed::canonical::to_canonical_bytes_reference(&unsorted)
        );
    }

    #[test]
    fn streamed_encoder_writes_what_the_whole_encoding_writes_or_gives_up(
        json in json_strategy(),
        value in value_strategy(),
        unsorted in unsorted_map_strategy(),
        levels in 0usize..4,
        flush_bytes in 1usize..64,
    ) {
        use seed::canonical::{to_canonical_bytes, write_canonical};
        fn streamed<T: serde::Serialize>(value: &T, levels: usize, flush_bytes: usize) -> Option<Vec<u8>> {
            let mut written = Vec::new();
            write_canonical(value, levels, flush_bytes, &mut written).ok().map(|_| written)
        }
        // Streamed, the same bytes or none; held whole at the top level
        // (one level, never flushed), the same bytes or none, and for JSON
        // (whose containers announce their lengths) the same bytes whenever
        // the value encodes at all.
        for (streamed_bytes, held_whole, whole) in [
            (streamed(&json, levels, flush_bytes), streamed(&json, 1, usize::MAX), to_canonical_bytes(&json)),
            (streamed(&value, levels, flush_bytes), streamed(&value, 1, usize::MAX), to_canonical_bytes(&value)),
            (
                streamed(&unsorted, levels, flush_bytes),
                streamed(&unsorted, 1, usize::MAX),
                to_canonical_bytes(&unsorted),
            ),
        ] {
            if let Some(bytes) = streamed_bytes {
                prop_assert_eq!(Some(&bytes), whole.as_ref().ok());
            }
            prop_assert!(held_whole.is_none() || held_whole.as_ref() == whole.as_ref().ok());
        }
        if let Ok(whole) = to_canonical_bytes(&json) {
            prop_assert_eq!(streamed(&json, 1, usize::MAX), Some(whole));
        }
    }

    #[test]
    fn validator_agrees_with_the_reference_decoder_on_arbitrary_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        prop_assert_eq!(is_canonical(&bytes), decode_canonical(&bytes).is_ok(), "{}", hex::encode(&bytes));
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_decoders(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = decode_canonical(&bytes);
        let _ = FactHeader::decode(&bytes);
        let _ = Fact::decode_envelope(&bytes);
        let _ = Bundle::decode(&bytes);
    }

    #[test]
    fn mutated_envelopes_never_panic_and_never_decode_to_the_same_fact(
        (header, body, key) in header_strategy(),
        position in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let key = SigningKey::from_bytes(&key);
        let fact = Fact::seal(header.being, header.seq, header.prev, header.stored_time_ms, &header.kind, body, &key)
            .expect("seal");
        let mut envelope = fact.encode_envelope();
        let index = position.index(envelope.len());
        envelope[index] ^= flip;
        if let Ok(decoded) = Fact::decode_envelope(&envelope) {
            // A flip that still decodes changed the header or the signature:
            // either way the signature no longer verifies.
            prop_assert_ne!(&decoded, &fact);
            prop_assert!(!decoded.verify_signature(&key.verifying_key()));
        }
    }
}

#[test]
fn header_with_wrong_domain_tag_or_version_is_refused() {
    let body = encode_value(&Value::Null).expect("encodable");
    let header = FactHeader {
        being: BeingId([1; 32]),
        seq: 0,
        prev: FactId::ZERO,
        stored_time_ms: 5,
        kind: "note".into(),
        body_len: body.len() as u64,
        body_hash: seed::fact::blake3_of(&body),
    };
    let Value::Array(mut fields) = decode_canonical(&header.encode()).expect("decodes") else { panic!("array") };
    fields[1] = Value::Text("other/fact".into());
    let wrong_tag = encode_value(&Value::Array(fields.clone())).expect("encodable");
    assert!(matches!(FactHeader::decode(&wrong_tag), Err(seed::fact::FactError::DomainTag { .. })));
    fields[1] = Value::Text("seed/fact".into());
    fields[0] = Value::Integer(Integer::from(2u8));
    let wrong_version = encode_value(&Value::Array(fields)).expect("encodable");
    assert!(matches!(FactHeader::decode(&wrong_version), Err(seed::fact::FactError::Version { version: 2 })));
}

/// `leaf` wrapped `depth` times in a one-item array, or in `{"k": ...}`.
fn nested_json(leaf: &serde_json::Value, depth: usize, wrap_in_object: bool) -> serde_json::Value {
    let mut value = leaf.clone();
    for _ in 0..depth {
        value = if wrap_in_object { serde_json::json!({ "k": value }) } else { serde_json::json!([value]) };
    }
    value
}

#[test]
fn direct_encoder_matches_the_reference_on_core_shapes_and_at_the_nesting_limit() {
    use std::collections::BTreeMap;
    #[derive(serde::Serialize)]
    enum Shape {
        Unit,
        Newtype(u8),
        Tuple(i64, String),
        Struct { b: Option<u32>, a: Vec<u8> },
    }
    #[derive(serde::Serialize)]
    struct Record {
        zeta: Shape,
        alpha: Option<Shape>,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        letter: char,
        #[serde(with = "serde_bytes_like")]
        raw: Vec<u8>,
        nested: BTreeMap<String, Vec<Shape>>,
        unit: (),
        negative: i64,
        big: u64,
    }
    mod serde_bytes_like {
        pub fn serialize<S: serde::Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
            serializer.serialize_bytes(bytes)
        }
    }
    let record = Record {
        zeta: Shape::Struct { b: None, a: vec![1, 2, 3] },
        alpha: Some(Shape::Tuple(-7, "seven".into())),
        skipped: None,
        letter: 'ß',
        raw: vec![0, 255],
        nested: BTreeMap::from([("bb".to_string(), vec![Shape::Unit, Shape::Newtype(9)]), ("c".to_string(), vec![])]),
        unit: (),
        negative: i64::MIN,
        big: u64::MAX,
    };
    assert_eq!(
        seed::canonical::to_canonical_bytes(&record).expect("encodes"),
        seed::canonical::to_canonical_bytes_reference(&record).expect("encodes")
    );
    // Large maps, whose heads take more than one byte: written up front
    // from the announced length, in order (numbers) or sorted (texts out of
    // order), and a map announcing a length it does not keep.
    let numbers: BTreeMap<u64, String> = (0..300u64).map(|key| (key * 7, format!("v{key}"))).collect();
    let texts: std::collections::HashMap<String, u8> = (0..70_000u32).map(|key| (format!("k{key}"), 1)).collect();
    struct Lying(usize);
    impl serde::Serialize for Lying {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = serializer.serialize_map(Some(self.0))?;
            for key in 0..30u8 {
                map.serialize_entry(&key, &key)?;
            }
            map.end()
        }
    }
    for encoded in [
        (seed::canonical::to_canonical_bytes(&numbers), seed::canonical::to_canonical_bytes_reference(&numbers)),
        (seed::canonical::to_canonical_bytes(&texts), seed::canonical::to_canonical_bytes_reference(&texts)),
        (seed::canonical::to_canonical_bytes(&Lying(30)), seed::canonical::to_canonical_bytes_reference(&Lying(30))),
        (seed::canonical::to_canonical_bytes(&Lying(3)), seed::canonical::to_canonical_bytes_reference(&Lying(3))),
        (seed::canonical::to_canonical_bytes(&Lying(300)), seed::canonical::to_canonical_bytes_reference(&Lying(300))),
    ] {
        assert_eq!(encoded.0.expect("encodes"), encoded.1.expect("encodes"));
    }
    // Floats, 128-bit integers and nesting past the limit: refused alike.
    assert!(seed::canonical::to_canonical_bytes(&1.5f64).is_err());
    assert_eq!(seed::canonical::to_canonical_bytes(&7u128), seed::canonical::to_canonical_bytes_reference(&7u128));
    let mut verdicts = std::collections::BTreeSet::new();
    for depth in [63usize, 64, 65] {
        for leaf in [serde_json::json!([]), serde_json::json!({}), serde_json::json!(1)] {
            for wrap_in_object in [false, true] {
                let value = nested_json(&leaf, depth, wrap_in_object);
                let direct = seed::canonical::to_canonical_bytes(&value);
                assert_eq!(direct, seed::canonical::to_canonical_bytes_reference(&value), "depth {depth}, leaf {leaf}");
                verdicts.insert(direct.is_ok());
            }
        }
    }
    assert_eq!(verdicts.len(), 2, "the limit is crossed: some cases encode, some are refused");
}

#[test]
fn json_encoder_nesting_limit_matches_the_cbor_path() {
    // Arrays and objects nested to the limit and one past it, ending in an
    // empty container or a scalar: both encoders accept and refuse alike.
    for depth in [63usize, 64, 65] {
        for leaf in [serde_json::json!([]), serde_json::json!({}), serde_json::json!(1)] {
            for wrap_in_object in [false, true] {
                let value = nested_json(&leaf, depth, wrap_in_object);
                let direct = seed::canonical::encode_json(&value);
                let through_cbor = encode_owned(seed::world::json_to_cbor(&value));
                assert_eq!(direct.is_ok(), through_cbor.is_ok(), "depth {depth}, leaf {leaf}, object {wrap_in_object}");
                if let (Ok(direct), Ok(through_cbor)) = (direct, through_cbor) {
                    assert_eq!(direct, through_cbor);
                }
            }
        }
    }
}

#[test]
fn validator_and_reference_decoder_agree_on_every_simple_value_and_at_the_nesting_limit() {
    // Every one-byte and two-byte head of major type 7 (floats, simple values,
    // break), every reserved additional-information value, and tags.
    let mut cases: Vec<Vec<u8>> = (0xe0..=0xffu8).map(|initial| vec![initial]).collect();
    cases.extend((0u8..=0xff).map(|simple| vec![0xf8, simple]));
    cases.extend(
        [0x1c, 0x1d, 0x1e, 0x1f, 0x3f, 0x5f, 0x7f, 0x9f, 0xbf, 0xdf].iter().map(|&initial| vec![initial, 0x00]),
    );
    cases.push(vec![0xc0, 0x61, b'a']);
    cases.push(vec![0x62, 0xc3, 0x28]);
    // Arrays and maps nested to the limit and past it, around a scalar or empty.
    for depth in [63usize, 64, 65, 66] {
        for leaf in [0x01u8, 0x80, 0xa0] {
            let mut array = vec![0x81; depth];
            array.push(leaf);
            cases.push(array);
            let mut map = Vec::new();
            for _ in 0..depth {
                map.extend_from_slice(&[0xa1, 0x61, b'k']);
            }
            map.push(leaf);
            cases.push(map);
        }
    }
    let mut verdicts = std::collections::BTreeSet::new();
    for bytes in cases {
        assert_eq!(is_canonical(&bytes), decode_canonical(&bytes).is_ok(), "{}", hex::encode(&bytes));
        verdicts.insert(is_canonical(&bytes));
    }
    assert_eq!(verdicts.len(), 2, "the cases hold both canonical and refused input");
}

/// Shapes a fact body may take on the way in: every kind of enum variant,
/// options, byte strings, maps, wide and narrow integers.
mod decoded_shapes {
    use serde::{Deserialize, Serialize};
    use std::collections::BTreeMap;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub enum Shape {
        Unit,
        Newtype(u8),
        Tuple(i64, String),
        Struct { b: Option<u32>, a: Vec<u8> },
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    pub enum Tagged {
        Plain,
        Carrying { weight: i16 },
    }

    /// Two of a [`Record`]'s fields: read from a record's bytes, it ignores the rest.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Partial {
        pub zeta: Shape,
        pub negative: i64,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Record {
        pub zeta: Shape,
        pub alpha: Option<Shape>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub skipped: Option<u8>,
        pub tagged: Tagged,
        pub nested: BTreeMap<String, Vec<Shape>>,
        pub json: serde_json::Value,
        pub unit: (),
        pub negative: i64,
        pub big: u64,
        pub pair: (u16, bool),
        pub hash: seed::fact::Hash32,
    }
}

fn record_strategy() -> impl Strategy<Value = decoded_shapes::Record> {
    use decoded_shapes::{Record, Shape, Tagged};
    let shape = prop_oneof![
        Just(Shape::Unit),
        any::<u8>().prop_map(Shape::Newtype),
        (any::<i64>(), "[a-z]{0,8}").prop_map(|(n, s)| Shape::Tuple(n, s)),
        (proptest::option::of(any::<u32>()), proptest::collection::vec(any::<u8>(), 0..5))
            .prop_map(|(b, a)| Shape::Struct { b, a }),
    ];
    let tagged = prop_oneof![Just(Tagged::Plain), any::<i16>().prop_map(|weight| Tagged::Carrying { weight })];
    (
        (shape.clone(), proptest::option::of(shape.clone()), proptest::option::of(any::<u8>()), tagged),
        proptest::collection::btree_map("[a-z]{0,4}", proptest::collection::vec(shape, 0..3), 0..3),
        json_strategy(),
        (any::<i64>(), any::<u64>(), any::<u16>(), any::<bool>(), any::<[u8; 32]>()),
    )
        .prop_map(|((zeta, alpha, skipped, tagged), nested, json, (negative, big, short, flag, hash))| Record {
            zeta,
            alpha,
            skipped,
            tagged,
            nested,
            json,
            unit: (),
            negative,
            big,
            pair: (short, flag),
            hash: seed::fact::Hash32(hash),
        })
}

/// The reader for checked bytes and the reference, as one comparable verdict.
fn decoded_checked_and_reference<T>(bytes: &[u8]) -> (Result<T, String>, Result<T, String>)
where
    T: serde::de::DeserializeOwned,
{
    (
        seed::canonical::from_checked_canonical_bytes::<T>(bytes).map_err(|error| error.to_string()),
        seed::canonical::from_canonical_bytes_reference::<T>(bytes).map_err(|error| error.to_string()),
    )
}

/// Both decoders, as one comparable verdict: the value or the error's words.
fn decoded_both_ways<T>(bytes: &[u8]) -> (Result<T, String>, Result<T, String>)
where
    T: serde::de::DeserializeOwned,
{
    (
        seed::canonical::from_canonical_bytes::<T>(bytes).map_err(|error| error.to_string()),
        seed::canonical::from_canonical_bytes_reference::<T>(bytes).map_err(|error| error.to_string()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn in_place_decoder_reads_what_the_reference_decoder_reads(
        value in value_strategy(),
        record in record_strategy(),
    ) {
        use decoded_shapes::{Record, Shape};
        use std::collections::BTreeMap;
        // Arbitrary canonical items read as many types: equal values, or
        // both refused with the reference's words.
        let bytes = encode_value(&value).expect("canonical");
        macro_rules! same {
            ($bytes:expr, $($type:ty),+) => {$(
                let (fast, reference) = decoded_both_ways::<$type>($bytes);
                prop_assert_eq!(fast, reference, "as {}", stringify!($type));
            )+};
        }
        same!(&bytes, serde_json::Value, Value, BTreeMap<String, serde_json::Value>, Vec<u8>, Option<i64>, u8, i8,
            i64, u64, String, (u64, String), Shape, Record, Option<Vec<Shape>>, seed::world::ActBody, bool, ());
        // Typed records encode and decode back to themselves both ways
        // (those whose JSON holds a float do not encode at all).
        let Ok(encoded) = seed::canonical::to_canonical_bytes(&record) else { return Ok(()) };
        let (fast, reference) = decoded_both_ways::<Record>(&encoded);
        prop_assert_eq!(&fast, &Ok(record.clone()));
        prop_assert_eq!(fast, reference);
        same!(&encoded, serde_json::Value, Value, BTreeMap<String, Value>);
        // Bytes already checked: the fields a type ignores are skipped by
        // their heads alone, and the verdict is still the reference's.
        macro_rules! same_checked {
            ($bytes:expr, $($type:ty),+) => {$(
                let (checked, reference) = decoded_checked_and_reference::<$type>($bytes);
                prop_assert_eq!(checked, reference, "checked, as {}", stringify!($type));
            )+};
        }
        same_checked!(&bytes, serde_json::Value, decoded_shapes::Partial, Record, Shape, seed::world::ActBody);
        same_checked!(&encoded, decoded_shapes::Partial, Record, serde_json::Value, seed::world::ActBody);
        // And the in-place reader itself reads them (no fallback decided it).
        let partial = seed::canonical::read_checked_in_place::<decoded_shapes::Partial>(&encoded);
        prop_assert_eq!(partial, Some(decoded_shapes::Partial { zeta: record.zeta, negative: record.negative }));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn in_place_decoder_refuses_what_the_reference_refuses_on_non_canonical_bytes(
        value in value_strategy(),
        record in record_strategy(),
        widen_heads in any::<bool>(),
        indefinite in any::<bool>(),
        reverse_maps in any::<bool>(),
        position in any::<prop::sample::Index>(),
        flip in 1..=255u8,
    ) {
        use decoded_shapes::{Record, Shape};
        use std::collections::BTreeMap;
        // The in-place reader validates as it reads (no separate check runs
        // first): lenient encodings (wide heads, indefinite lengths, map keys
        // out of order), flipped bytes, cut and padded items must get the
        // reference's verdict, value or refusal, never a value of their own.
        let mut shapes = vec![decode_canonical(&encode_value(&value).expect("canonical")).expect("canonical")];
        if let Ok(encoded) = seed::canonical::to_canonical_bytes(&record) {
            shapes.push(decode_canonical(&encoded).expect("canonical"));
        }
        for shape in shapes {
            let mut quirky = Vec::new();
            write_quirky(&shape, Quirks { widen_heads, indefinite, reverse_maps }, &mut quirky);
            let mut flipped = quirky.clone();
            let index = position.index(flipped.len());
            flipped[index] ^= flip;
            let cut = quirky[..index].to_vec();
            let mut padded = quirky.clone();
            padded.push(0xf6);
            for bytes in [&quirky, &flipped, &cut, &padded] {
                macro_rules! same {
                    ($($type:ty),+) => {$(
                        let (fast, reference) = decoded_both_ways::<$type>(bytes);
                        prop_assert_eq!(fast, reference, "as {} from {}", stringify!($type), hex::encode(bytes));
                    )+};
                }
                same!(serde_json::Value, Value, BTreeMap<String, serde_json::Value>, Vec<u8>, String, Shape,
                    Record, Option<Vec<Shape>>, seed::world::ActBody, seed::fact::Hash32);
            }
        }
    }
}

#[test]
fn in_place_decoder_agrees_on_long_strings_wide_integers_and_the_nesting_limit() {
    // Text and byte strings longer than ciborium's scratch buffer take other
    // roads there; negative integers beyond i64 are read as i128.
    let long_text = Value::Text("é".repeat(3000));
    let long_bytes = Value::Bytes(vec![7; 5000]);
    let widest_negative = Value::Integer(Integer::try_from(-(i128::from(u64::MAX)) - 1).expect("in CBOR's range"));
    let keyed = Value::Map(vec![(Value::Text("k".repeat(5000)), Value::Null)]);
    for value in [long_text, long_bytes, widest_negative, keyed] {
        let bytes = encode_value(&value).expect("canonical");
        let (fast, reference) = decoded_both_ways::<serde_json::Value>(&bytes);
        assert_eq!(fast, reference);
        let (fast, reference) = decoded_both_ways::<Value>(&bytes);
        assert_eq!(fast, reference);
        let (fast, reference) = decoded_both_ways::<String>(&bytes);
        assert_eq!(fast, reference);
        let (fast, reference) = decoded_both_ways::<i128>(&bytes);
        assert_eq!(fast, reference);
        let (fast, reference) = decoded_both_ways::<std::collections::BTreeMap<String, ()>>(&bytes);
        assert_eq!(fast, reference);
    }
    for depth in [63usize, 64] {
        for leaf in [serde_json::json!([]), serde_json::json!({}), serde_json::json!(1)] {
            for wrap_in_object in [false, true] {
                let bytes = seed::canonical::to_canonical_bytes(&nested_json(&leaf, depth, wrap_in_object))
                    .expect("within the limit");
                let (fast, reference) = decoded_both_ways::<serde_json::Value>(&bytes);
                assert!(fast.is_ok(), "depth {depth}");
                assert_eq!(fast, reference, "depth {depth}");
                // The same nesting in a field the type ignores, skipped unchecked.
                let record = seed::canonical::to_canonical_bytes(&serde_json::json!({
                    "zeta": "Unit", "negative": -1, "ignored": nested_json(&leaf, depth - 1, wrap_in_object),
                }))
                .expect("within the limit");
                let (checked, reference) = decoded_checked_and_reference::<decoded_shapes::Partial>(&record);
                assert!(checked.is_ok(), "depth {depth}");
                assert_eq!(checked, reference, "depth {depth}");
                // Below the limit the reader skips it itself; a container at
                // the limit is left to the reference, as when it is read.
                let in_place = seed::canonical::read_checked_in_place::<decoded_shapes::Partial>(&record);
                let container_at_limit = depth == 64 && (leaf.is_array() || leaf.is_object());
                assert_eq!(in_place.is_some(), !container_at_limit, "depth {depth} leaf {leaf}");
            }
        }
    }
}

#[test]
fn direct_encoder_widens_the_heads_of_long_maps_and_of_sequences_of_unannounced_length() {
    // Maps and sequences whose length serde does not announce are written
    // after a one-byte placeholder head: at 24 items and more the head takes
    // more bytes, and the items written after it move.
    struct Unannounced(Vec<u64>);
    impl serde::Serialize for Unannounced {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            // A filtering iterator has no exact length, so serde announces none.
            serializer.collect_seq(self.0.iter().filter(|_| true))
        }
    }
    for count in [0usize, 1, 23, 24, 25, 255, 256, 300] {
        let map: std::collections::BTreeMap<String, Unannounced> =
            (0..count).map(|index| (format!("k{index}"), Unannounced((0..index as u64 % 30).collect()))).collect();
        let sequence = Unannounced((0..count as u64).map(|index| index * 1_000).collect());
        for value in [&map as &dyn erased::Encode, &sequence] {
            let (direct, reference) = value.both();
            assert_eq!(direct, reference, "{count} items");
        }
    }
}

mod erased {
    pub trait Encode {
        fn both(&self) -> (Vec<u8>, Vec<u8>);
    }
    impl<T: serde::Serialize> Encode for T {
        fn both(&self) -> (Vec<u8>, Vec<u8>) {
            let direct = seed::canonical::to_canonical_bytes(self).expect("encodes");
            let reference = seed::canonical::to_canonical_bytes_reference(self).expect("encodes");
            (direct, reference)
        }
    }
}

#[test]
fn json_objects_on_either_side_of_the_stack_sorting_threshold_encode_as_the_cbor_path_does() {
    // Small objects are sorted on the stack, larger ones in a vector: keys of
    // mixed lengths, so canonical order differs from the map's own order.
    use seed::canonical::{encode_json, encode_json_entries, encode_owned};
    for count in [0usize, 1, 15, 16, 17, 40] {
        let object: serde_json::Map<String, serde_json::Value> = (0..count)
            .map(|index| (format!("{}{index}", "k".repeat(index % 5 + 1)), serde_json::json!({ "n": index })))
            .collect();
        let value = serde_json::Value::Object(object.clone());
        let direct = encode_json(&value).expect("encodable");
        assert_eq!(direct, encode_owned(seed::world::json_to_cbor(&value)).expect("encodable"), "{count} entries");
        assert_eq!(encode_json_entries(object.iter()).expect("encodable"), direct, "{count} entries");
    }
}
