//! What a land-wide replay reads of each stored act before recomputing it:
//! how its moment opened, and what a person or a model answered.
//!
//! Every act of the land is read this way, so the shapes nearly every act
//! has (a tick, signal, summon, person or self-continue wake; a see or
//! summon call; no model record) are read straight off the canonical bytes.
//! Anything else, and anything unexpected in those shapes, is left to the
//! serde reader, which decides: the direct reading either gives what serde
//! gives or gives up.

use super::MomentInputs;
use crate::canonical::{
    from_checked_canonical_bytes, set_once, CanonicalError, CanonicalReader, CBOR_NESTING_DEPTH_MAX,
};
use crate::fact::{BeingId, Fact, FactId};
use crate::world::body::{VerbCall, Wake};
use serde::Deserialize;

/// The fields of a stored act body a recomputation reads. A land-wide
/// replay reads them from bodies `Fact::decode_envelope` already checked (or
/// whose check it deferred: what was read counts only if the recomputed act
/// encodes to the stored bytes, which proves them canonical), so the other
/// fields are skipped by their heads alone.
#[derive(Debug, PartialEq, Deserialize)]
pub(super) struct ActOpening {
    pub(super) wake: Wake,
    pub(super) cursor: u64,
    pub(super) call: VerbCall,
    pub(super) content: Option<String>,
    #[serde(default)]
    pub(super) llm: Option<crate::llm::LlmRecord>,
    #[serde(default)]
    pub(super) panel: Option<crate::moment::panel::PanelRecord>,
    #[serde(default)]
    pub(super) importance: Option<u8>,
    #[serde(default)]
    pub(super) recall_query: Option<crate::embedding::QueryVector>,
    #[serde(default)]
    pub(super) tool: Option<crate::tools::ToolRecord>,
}

impl ActOpening {
    /// Reads the opening of an act body.
    pub(super) fn read(body: &[u8]) -> Result<ActOpening, CanonicalError> {
        match read_directly(body) {
            Some(opening) => Ok(opening),
            None => from_checked_canonical_bytes(body),
        }
    }

    pub(super) fn inputs<'a>(&'a self, fact: &Fact) -> MomentInputs<'a> {
        MomentInputs {
            wake: &self.wake,
            stored_time_ms: fact.header.stored_time_ms,
            call: &self.call,
            content: &self.content,
            llm: self.llm.as_ref(),
            panel: self.panel.as_ref(),
            importance: self.importance,
            recall_query: self.recall_query.as_ref(),
            tool: self.tool.as_ref(),
        }
    }
}

/// The opening read off the bytes, `None` where the serde reader decides.
/// Fields the opening does not read are skipped, as serde ignores them.
fn read_directly(body: &[u8]) -> Option<ActOpening> {
    let mut reader = CanonicalReader::new(body);
    let (mut wake, mut cursor, mut call, mut content) = (None, None, None, None);
    let mut llm_seen = false;
    for _ in 0..reader.map_head()? {
        // Keys are compared as bytes: the other keys are skipped unread.
        match reader.text_bytes()? {
            b"wake" => set_once(&mut wake, read_wake(&mut reader)?)?,
            b"cursor" => set_once(&mut cursor, reader.uint()?)?,
            b"call" => set_once(&mut call, read_call(&mut reader)?)?,
            b"content" => set_once(&mut content, optional_text(&mut reader)?)?,
            // A model's record is left to serde; its absence reads as `null`.
            b"llm" if !llm_seen && reader.null() => llm_seen = true,
            b"llm" => return None,
            // A panel's deliberation too, and an importance (a person's word).
            b"panel" | b"importance" | b"recall_query" | b"tool" => return None,
            _ => {
                // Inside the body's map: one level of nesting is taken.
                if !reader.skip_checked(CBOR_NESTING_DEPTH_MAX) {
                    return None;
                }
            }
        }
    }
    if !reader.is_at_end() {
        return None;
    }
    // A missing `content` reads as `None` (an `Option` field), as with serde.
    Some(ActOpening {
        wake: wake?,
        cursor: cursor?,
        call: call?,
        content: content.flatten(),
        llm: None,
        panel: None,
        importance: None,
        recall_query: None,
        tool: None,
    })
}

/// `null` or a text.
fn optional_text(reader: &mut CanonicalReader<'_>) -> Option<Option<String>> {
    if reader.null() {
        return Some(None);
    }
    Some(Some(reader.text()?.to_string()))
}

/// A wake whose map holds its tag and exactly its variant's fields.
fn read_wake(reader: &mut CanonicalReader<'_>) -> Option<Wake> {
    let (mut kind, mut tick, mut key, mut fact, mut from) = (None, None, None, None, None);
    for _ in 0..reader.map_head()? {
        match reader.text_bytes()? {
            b"kind" => set_once(&mut kind, reader.text()?)?,
            b"tick" => set_once(&mut tick, reader.uint()?)?,
            b"key" => set_once(&mut key, reader.text()?)?,
            b"fact" => set_once(&mut fact, reader.fixed_bytes()?)?,
            b"from" => set_once(&mut from, reader.fixed_bytes()?)?,
            // serde ignores other fields; whether they may be ignored is its call.
            _ => return None,
        }
    }
    let present = (tick.is_some(), key.is_some(), fact.is_some(), from.is_some());
    Some(match (kind?, present) {
        ("tick", (true, false, false, false)) => Wake::Tick { tick: tick? },
        ("signal", (false, true, false, false)) => Wake::Signal { key: key?.to_string() },
        ("summon", (false, false, true, true)) => Wake::Summon { fact: FactId(fact?), from: BeingId(from?) },
        ("self-continue", (false, false, false, false)) => Wake::SelfContinue,
        ("person", (false, false, false, false)) => Wake::Person,
        _ => return None,
    })
}

/// A see or summon call whose map holds its tag and only its variant's
/// fields (a do or be call carries JSON, left to serde).
fn read_call(reader: &mut CanonicalReader<'_>) -> Option<VerbCall> {
    let (mut verb, mut address, mut target, mut content, mut in_reply_to) = (None, None, None, None, None);
    for _ in 0..reader.map_head()? {
        match reader.text_bytes()? {
            b"verb" => set_once(&mut verb, reader.text()?)?,
            b"address" => set_once(&mut address, reader.text()?)?,
            b"target" => set_once(&mut target, reader.text()?)?,
            b"content" => set_once(&mut content, reader.text()?)?,
            b"in_reply_to" => {
                let reply = if reader.null() { None } else { Some(FactId(reader.fixed_bytes()?)) };
                set_once(&mut in_reply_to, reply)?
            }
            _ => return None,
        }
    }
    Some(match (verb?, address, target, content) {
        ("see", Some(address), None, None) if in_reply_to.is_none() => VerbCall::See { address: address.to_string() },
        // A missing `in_reply_to` reads as `None` (an `Option` field).
        ("summon", None, Some(target), Some(content)) => VerbCall::Summon {
            target: target.to_string(),
            content: content.to_string(),
            in_reply_to: in_reply_to.flatten(),
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::{encode_value, to_canonical_bytes};
    use crate::fact::Hash32;
    use crate::world::body::{Digests, Effect, RoleUse};
    use crate::world::ActBody;
    use ciborium::value::Value;
    use serde_json::json;

    fn act(wake: Wake, call: VerbCall, content: Option<&str>) -> ActBody {
        ActBody {
            wake,
            budget: None,
            panel: None,
            recall_query: None,
            gate: None,
            tool: None,
            cursor: 1006,
            orientation: "forward".into(),
            primary: Some("onlooker".into()),
            stack: vec![RoleUse { name: "onlooker".into(), digest: Hash32([4; 32]) }],
            digests: Digests {
                face: Hash32([1; 32]),
                context: Hash32([2; 32]),
                composed: Hash32([3; 32]),
                script_output: Some(Hash32([5; 32])),
            },
            call,
            content: content.map(str::to_string),
            effects: vec![Effect::Inhabit { being: "bo".into(), by: "ada".into() }],
            evaluator: "seed 0.1.0".into(),
            importance: None,
            llm: None,
        }
    }

    /// Reads `body` both ways: the direct reading, where it does not give
    /// up, must be serde's; `direct` says whether it is expected not to.
    fn check(body: &[u8], direct: bool) {
        let by_serde = from_checked_canonical_bytes::<ActOpening>(body);
        match read_directly(body) {
            Some(opening) => {
                assert_eq!(Ok(&opening), by_serde.as_ref(), "{body:02x?}");
                assert!(direct, "read directly, expected to be left to serde: {by_serde:?}");
            }
            None => assert!(!direct, "left to serde, expected to be read directly: {by_serde:?}"),
        }
        assert_eq!(ActOpening::read(body), by_serde);
    }

    #[test]
    fn the_common_openings_are_read_directly_as_serde_reads_them() {
        let id = FactId([9; 32]);
        let wakes = [
            Wake::Tick { tick: 3 },
            Wake::Tick { tick: u64::MAX },
            Wake::Signal { key: "bell".into() },
            Wake::Summon { fact: id, from: BeingId([8; 32]) },
            Wake::SelfContinue,
            Wake::Person,
        ];
        let see = VerbCall::See { address: "/north".into() };
        let summons = [
            VerbCall::Summon { target: "@bo".into(), content: "hi".into(), in_reply_to: None },
            VerbCall::Summon { target: "@bo".into(), content: "".into(), in_reply_to: Some(id) },
        ];
        for wake in wakes {
            for call in summons.iter().chain([&see]) {
                for content in [None, Some("prose")] {
                    let body = to_canonical_bytes(&act(wake.clone(), call.clone(), content)).expect("encodes");
                    check(&body, true);
                }
            }
        }
        // Do and be calls carry JSON, which serde reads.
        let calls = [
            VerbCall::Do { target: "/north".into(), action: "take".into(), args: json!({"n": 1}) },
            VerbCall::Be { operation: "birth".into(), payload: json!({"name": "cy"}) },
        ];
        for call in calls {
            check(&to_canonical_bytes(&act(Wake::Tick { tick: 1 }, call, None)).expect("encodes"), false);
        }
    }

    /// An act body as a CBOR map, to be bent out of shape.
    fn entries_of(body: &ActBody) -> Vec<(Value, Value)> {
        let bytes = to_canonical_bytes(body).expect("encodes");
        match ciborium::from_reader::<Value, _>(bytes.as_slice()).expect("decodes") {
            Value::Map(entries) => entries,
            other => panic!("not a map: {other:?}"),
        }
    }

    fn with_entry(entries: &[(Value, Value)], key: &str, value: Option<Value>) -> Vec<u8> {
        let mut entries: Vec<(Value, Value)> =
            entries.iter().filter(|(name, _)| name.as_text() != Some(key)).cloned().collect();
        if let Some(value) = value {
            entries.push((Value::Text(key.into()), value));
        }
        encode_value(&Value::Map(entries)).expect("encodes")
    }

    fn text_map(entries: &[(&str, Value)]) -> Value {
        Value::Map(entries.iter().map(|(key, value)| (Value::Text(key.to_string()), value.clone())).collect())
    }

    #[test]
    fn an_unusual_opening_is_left_to_serde() {
        let body = act(Wake::Tick { tick: 2 }, VerbCall::See { address: "/".into() }, None);
        let entries = entries_of(&body);
        let text = |text: &str| Value::Text(text.into());
        let cases: Vec<(Vec<u8>, bool)> = vec![
            // Fields serde reads as absent or defaults.
            (with_entry(&entries, "content", None), true),
            (with_entry(&entries, "llm", None), true),
            (with_entry(&entries, "llm", Some(Value::Null)), true),
            (with_entry(&entries, "unknown", Some(text("x"))), true),
            // A wake with a field of another variant, or an unknown kind.
            (with_entry(&entries, "wake", Some(text_map(&[("kind", text("tick")), ("key", text("k"))]))), false),
            (with_entry(&entries, "wake", Some(text_map(&[("kind", text("nap"))]))), false),
            (with_entry(&entries, "wake", Some(text_map(&[("kind", text("person")), ("x", Value::Null)]))), false),
            (with_entry(&entries, "wake", Some(text_map(&[("tick", Value::Integer(1.into()))]))), false),
            (with_entry(&entries, "wake", Some(text("tick"))), false),
            // Calls of other shapes.
            (with_entry(&entries, "call", Some(text_map(&[("verb", text("see"))]))), false),
            (with_entry(&entries, "call", Some(text_map(&[("verb", text("see")), ("target", text("@a"))]))), false),
            (with_entry(&entries, "call", Some(text_map(&[("verb", text("summon")), ("target", text("@a"))]))), false),
            (
                with_entry(
                    &entries,
                    "call",
                    Some(text_map(&[
                        ("verb", text("summon")),
                        ("target", text("@a")),
                        ("content", text("hi")),
                        ("in_reply_to", Value::Bytes(vec![1; 31])),
                    ])),
                ),
                false,
            ),
            // Missing or mistyped fields serde refuses.
            (with_entry(&entries, "cursor", None), false),
            (with_entry(&entries, "cursor", Some(Value::Integer((-1).into()))), false),
            (with_entry(&entries, "wake", None), false),
            (with_entry(&entries, "call", None), false),
            (with_entry(&entries, "content", Some(Value::Integer(1.into()))), false),
        ];
        for (body, direct) in cases {
            check(&body, direct);
        }
        // Not a map at all, or more after it.
        check(&encode_value(&Value::Array(vec![])).expect("encodes"), false);
        let mut trailing = to_canonical_bytes(&body).expect("encodes");
        trailing.push(0xf6);
        check(&trailing, false);
    }
}
