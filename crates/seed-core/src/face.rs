//! The face, what a cognition reads (beat 3's product), held as its parts.
//!
//! Every moment digests its face, and most moments hand it to a script that
//! reads a key or two. So the face is not built as one JSON value: its digest
//! is written from the parts straight into canonical CBOR (the bytes
//! `canonical::encode_json` writes for [`Face::value`]), a script is handed
//! only the entries it reads ([`InputEntries`]), and the whole JSON is built
//! only where it is shown or sent to a model.
//!
//! It is a module of its own, beside `moment` rather than inside it, so that
//! `moment` (which builds a face) and `llm` (which renders one into a
//! prompt) both depend on it and not on each other.

use crate::canonical::{self, CanonicalError};
use crate::fact::{blake3_of, FactId, Hash32};
use crate::memory::{MemoryKind, Recalled};
use crate::script::{
    entry_read_through_json, every_number_is_i64, object_read_to_dynamic, object_to_dynamic, EntryRead, InputEntries,
    InputRead, Reach,
};
use crate::world::BeingRow;
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The face's top-level keys, in canonical order (by length, then bytes).
pub const FACE_KEYS: [&str; 8] = ["me", "can", "see", "time", "wake", "inbox", "roles", "prompt"];
/// The key of the `recall` block, which only a `half` or `inward` face has
/// (it sorts after every key of [`FACE_KEYS`]).
pub const FACE_RECALL_KEY: &str = "recall";
/// Every key a face may have, for naming a key a script reads that no face has.
pub const FACE_KEYS_KNOWN: [&str; 9] = ["me", "can", "see", "time", "wake", "inbox", "roles", "prompt", "recall"];

/// Bytes reserved up front for a face's encoding (most faces fit).
const FACE_ENCODING_BYTES_RESERVED: usize = 512;

/// What a `half` or `inward` face recalls (`moment::recall` builds it):
/// the query, the kinds, the items shown in rank order, the reflections
/// standing in for items left out, and the items left out with the
/// reflection covering each. Held typed and written straight to canonical
/// CBOR, like the rest of the face; its JSON is built where it is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallBlock {
    pub query: String,
    pub kinds: Vec<MemoryKind>,
    pub items: Vec<Recalled>,
    pub stand_ins: Vec<Recalled>,
    pub left_out: Vec<(FactId, Option<FactId>)>,
}

impl RecallBlock {
    /// The items shown, each with whether it is a reflection standing in.
    pub fn shown(&self) -> impl Iterator<Item = (&Recalled, bool)> {
        self.items.iter().map(|item| (item, false)).chain(self.stand_ins.iter().map(|item| (item, true)))
    }

    pub fn json(&self) -> Json {
        let items: Vec<Json> = self
            .shown()
            .map(|(item, stands_in)| {
                let mut json = json!({
                    "fact": item.fact.to_hex(),
                    "landSeq": item.land_seq,
                    "kind": item.kind.as_str(),
                    "importance": item.importance,
                    "score": item.score.total,
                    "text": &*item.text,
                });
                // Only on a reflection standing in, so other items read as they did.
                if stands_in {
                    json["standsIn"] = Json::Bool(true);
                }
                json
            })
            .collect();
        let left_out: Vec<Json> = self
            .left_out
            .iter()
            .map(|(fact, by)| json!({"fact": fact.to_hex(), "coveredBy": by.map(|by| by.to_hex())}))
            .collect();
        json!({
            "query": self.query,
            "kinds": self.kinds.iter().map(|kind| kind.as_str()).collect::<Vec<_>>(),
            "items": items,
            "leftOut": left_out,
        })
    }

    /// The canonical CBOR of [`RecallBlock::json`]: keys in canonical order
    /// (by length, then bytes).
    fn write(&self, out: &mut Vec<u8>) {
        canonical::write_map_head(4, out);
        canonical::write_text("items", out);
        canonical::write_array_head((self.items.len() + self.stand_ins.len()) as u64, out);
        for (item, stands_in) in self.shown() {
            canonical::write_map_head(6 + usize::from(stands_in), out);
            canonical::write_text("fact", out);
            canonical::write_text(&item.fact.to_hex(), out);
            canonical::write_text("kind", out);
            canonical::write_text(item.kind.as_str(), out);
            canonical::write_text("text", out);
            canonical::write_text(&item.text, out);
            canonical::write_text("score", out);
            canonical::write_uint(item.score.total, out);
            canonical::write_text("landSeq", out);
            canonical::write_uint(item.land_seq, out);
            if stands_in {
                canonical::write_text("standsIn", out);
                canonical::write_bool(true, out);
            }
            canonical::write_text("importance", out);
            canonical::write_uint(u64::from(item.importance), out);
        }
        canonical::write_text("kinds", out);
        canonical::write_array_head(self.kinds.len() as u64, out);
        for kind in &self.kinds {
            canonical::write_text(kind.as_str(), out);
        }
        canonical::write_text("query", out);
        canonical::write_text(&self.query, out);
        canonical::write_text("leftOut", out);
        canonical::write_array_head(self.left_out.len() as u64, out);
        for (fact, by) in &self.left_out {
            canonical::write_map_head(2, out);
            canonical::write_text("fact", out);
            canonical::write_text(&fact.to_hex(), out);
            canonical::write_text("coveredBy", out);
            match by {
                Some(by) => canonical::write_text(&by.to_hex(), out),
                None => canonical::write_null(out),
            }
        }
    }
}

pub struct Face<'w> {
    /// The being, read for `me`.
    pub(super) row: &'w BeingRow,
    pub(super) stored_time_ms: u64,
    /// `time.hour`, `time.dayOfWeek`, `time.sinceLastMoment` of the open
    /// context (`null` where it has none).
    pub(super) hour: Json,
    pub(super) day_of_week: Json,
    pub(super) since_last_moment: Json,
    pub(super) wake: Json,
    pub(super) primary: Option<Arc<str>>,
    pub(super) stack: Vec<Arc<str>>,
    pub can_see: Vec<String>,
    pub can_do: Vec<String>,
    pub can_summon: Vec<String>,
    pub can_be: Vec<String>,
    /// See-resolver outputs by resolver name.
    pub(super) see: Map<String, Json>,
    pub(super) prompt: String,
    pub(super) inbox: usize,
    /// What the being recalls (`half` and `inward` only; `moment::recall`).
    pub(super) recall: Option<RecallBlock>,
    /// The MCP tools among `can_do`, with the description and input schema
    /// their extension records, for a model's `do` tool. Not part of the
    /// face (its digest, a script's view): the prompt built from it is
    /// recorded, and the files are the land's definition, as its roles are.
    pub can_do_described: BTreeMap<String, Arc<crate::tools::McpToolSchema>>,
    /// The recall query's vector, recorded in the act (not part of the face:
    /// the items' scores it gave are).
    pub query_vector: Option<crate::embedding::QueryVector>,
    /// BLAKE3 of the face's canonical encoding, recorded in the act.
    pub digest: Hash32,
}

impl Face<'_> {
    /// The whole face as JSON (for display, for the model's prompt).
    pub fn value(&self) -> Json {
        Json::Object(self.keys().map(|key| (key.to_string(), self.entry_value(key))).collect())
    }

    /// The face's keys, in canonical order.
    pub fn keys(&self) -> impl Iterator<Item = &'static str> {
        FACE_KEYS.into_iter().chain(self.recall.is_some().then_some(FACE_RECALL_KEY))
    }

    /// The `recall` block, if the face has one.
    pub fn recall(&self) -> Option<&RecallBlock> {
        self.recall.as_ref()
    }

    /// What woke the being, as the face shows it.
    pub fn wake(&self) -> &Json {
        &self.wake
    }

    fn entry_value(&self, key: &str) -> Json {
        match key {
            "me" => {
                let row = self.row;
                json!({
                    "name": row.name,
                    "cognition": row.effective_cognition().as_str(),
                    "space": row.location,
                    "home": row.home_space,
                    "qualities": row.qualities,
                })
            }
            "can" => json!({ "see": self.can_see, "do": self.can_do, "summon": self.can_summon, "be": self.can_be }),
            "see" => Json::Object(self.see.clone()),
            "time" => json!({
                "ms": self.stored_time_ms,
                "hour": self.hour,
                "dayOfWeek": self.day_of_week,
                "sinceLastMoment": self.since_last_moment,
            }),
            "wake" => self.wake.clone(),
            "inbox" => json!(self.inbox),
            "roles" => json!({
                "primary": self.primary.as_deref(),
                "stack": self.stack.iter().map(|name| name.as_ref()).collect::<Vec<_>>(),
            }),
            "prompt" => Json::String(self.prompt.clone()),
            "recall" => self.recall.as_ref().map_or(Json::Null, RecallBlock::json),
            // Only the face's keys are asked for.
            _ => Json::Null,
        }
    }

    /// The canonical CBOR of [`Face::value`], written from the parts: keys
    /// in canonical order, nested JSON at the depth `encode_json` reaches it
    /// (so the nesting limit falls where it did).
    pub(super) fn encode(&self) -> Result<Vec<u8>, CanonicalError> {
        let mut out = Vec::with_capacity(FACE_ENCODING_BYTES_RESERVED);
        let out = &mut out;
        let row = self.row;
        canonical::write_map_head(FACE_KEYS.len() + usize::from(self.recall.is_some()), out);
        canonical::write_text("me", out);
        canonical::write_map_head(5, out);
        for (key, text) in [("home", row.home_space.as_str()), ("name", &row.name), ("space", &row.location)] {
            canonical::write_text(key, out);
            canonical::write_text(text, out);
        }
        canonical::write_text("cognition", out);
        canonical::write_text(row.effective_cognition().as_str(), out);
        canonical::write_text("qualities", out);
        canonical::write_json_entries_at(row.qualities.iter(), 2, out)?;
        canonical::write_text("can", out);
        canonical::write_map_head(4, out);
        for (key, entries) in
            [("be", &self.can_be), ("do", &self.can_do), ("see", &self.can_see), ("summon", &self.can_summon)]
        {
            canonical::write_text(key, out);
            canonical::write_array_head(entries.len() as u64, out);
            for entry in entries {
                canonical::write_text(entry, out);
            }
        }
        canonical::write_text("see", out);
        canonical::write_json_entries_at(self.see.iter(), 1, out)?;
        canonical::write_text("time", out);
        canonical::write_map_head(4, out);
        canonical::write_text("ms", out);
        canonical::write_uint(self.stored_time_ms, out);
        for (key, value) in
            [("hour", &self.hour), ("dayOfWeek", &self.day_of_week), ("sinceLastMoment", &self.since_last_moment)]
        {
            canonical::write_text(key, out);
            canonical::write_json_at(value, 2, out)?;
        }
        canonical::write_text("wake", out);
        canonical::write_json_at(&self.wake, 1, out)?;
        canonical::write_text("inbox", out);
        canonical::write_uint(self.inbox as u64, out);
        canonical::write_text("roles", out);
        canonical::write_map_head(2, out);
        canonical::write_text("stack", out);
        canonical::write_array_head(self.stack.len() as u64, out);
        for name in &self.stack {
            canonical::write_text(name, out);
        }
        canonical::write_text("primary", out);
        match &self.primary {
            Some(name) => canonical::write_text(name, out),
            None => canonical::write_null(out),
        }
        canonical::write_text("prompt", out);
        canonical::write_text(&self.prompt, out);
        if let Some(recall) = &self.recall {
            canonical::write_text(FACE_RECALL_KEY, out);
            recall.write(out);
        }
        Ok(std::mem::take(out))
    }

    /// The `me` entry as a script reading it at `keys` sees it, built from
    /// the row without its JSON (what converting [`Face::value`]'s `me` as
    /// far as read gives; `None` likewise for a number the direct
    /// conversion does not take, read or not).
    fn me_read(&self, keys: &BTreeMap<String, Reach>) -> Option<rhai::Dynamic> {
        let row = self.row;
        if !keys.contains_key("qualities") && !row.qualities.values().all(every_number_is_i64) {
            return None;
        }
        let text = |text: &str| rhai::Dynamic::from(rhai::ImmutableString::from(text));
        let mut me = rhai::Map::new();
        for (key, reach) in keys {
            let value = match key.as_str() {
                "name" => text(&row.name),
                "cognition" => text(row.effective_cognition().as_str()),
                "space" => text(&row.location),
                "home" => text(&row.home_space),
                "qualities" => match reach {
                    Reach::Whole => object_to_dynamic(row.qualities.iter())?,
                    Reach::Keys(inner) => object_read_to_dynamic(row.qualities.iter(), inner)?,
                },
                _ => continue,
            };
            me.insert(key.as_str().into(), value);
        }
        Some(rhai::Dynamic::from_map(me))
    }

    /// Sets the digest from the parts.
    pub(super) fn sealed(mut self) -> Result<Self, CanonicalError> {
        let encoded = self.encode()?;
        // Every test moment checks that the parts encode as the whole does.
        debug_assert_eq!(Ok(&encoded), canonical::encode_json(&self.value()).as_ref());
        self.digest = blake3_of(&encoded);
        Ok(self)
    }
}

impl InputEntries for Face<'_> {
    fn whole(&self) -> Json {
        self.value()
    }

    fn entry(&self, key: &str) -> Option<Json> {
        self.keys().any(|known| known == key).then(|| self.entry_value(key))
    }

    fn entry_read(&self, key: &str, read: InputRead<'_>) -> EntryRead {
        match (key, read) {
            // The entry scripts read most, nearly always at a key or two.
            ("me", InputRead::Keys(keys)) => match self.me_read(keys) {
                Some(me) => EntryRead::Converted(me),
                None => EntryRead::NotDirect,
            },
            _ => entry_read_through_json(self.entry(key), read),
        }
    }

    fn unread_numbers_are_i64(&self, read: &BTreeMap<String, Reach>) -> bool {
        let fits = |number: u64| i64::try_from(number).is_ok();
        self.keys().filter(|key| !read.contains_key(*key)).all(|key| match key {
            "me" => self.row.qualities.values().all(every_number_is_i64),
            "see" => self.see.values().all(every_number_is_i64),
            "time" => {
                fits(self.stored_time_ms)
                    && [&self.hour, &self.day_of_week, &self.since_last_moment].into_iter().all(every_number_is_i64)
            }
            "wake" => every_number_is_i64(&self.wake),
            "inbox" => fits(self.inbox as u64),
            // Land seqs, importances and scores: far below i64's limit.
            "recall" => true,
            // Text only.
            _ => true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fact::body::Cognition;
    use crate::fact::BeingId;
    use std::collections::BTreeMap;

    fn row(qualities: Json, inhabited: bool) -> BeingRow {
        let Json::Object(qualities) = qualities else { panic!("qualities are a map") };
        BeingRow {
            id: BeingId([7; 32]),
            name: "ada".into(),
            parent: None,
            cognition: Cognition::Scripted,
            role_flow: Json::Array(Vec::new()).into(),
            role_flow_digest: None,
            default_role: "idle".into(),
            home_space: "/north".into(),
            location: "/north/well".into(),
            qualities: qualities.into_iter().collect::<BTreeMap<_, _>>(),
            ended: false,
            inhabited_by: inhabited.then_some(BeingId([8; 32])),
            last_act_ms: None,
            previous_role: None,
            acts: 0,
        }
    }

    fn face<'w>(row: &'w BeingRow, wake: Json, primary: Option<&str>, see: Json, since: Json) -> Face<'w> {
        let Json::Object(see) = see else { panic!("see is a map") };
        let names = |names: &[&str]| names.iter().map(|name| name.to_string()).collect::<Vec<_>>();
        Face {
            row,
            stored_time_ms: 90_061_000,
            hour: json!(1),
            day_of_week: json!(5),
            since_last_moment: since,
            wake,
            primary: primary.map(Arc::from),
            stack: primary.into_iter().chain(["emotions:bored"]).map(Arc::from).collect(),
            can_see: names(&["/", "@bo"]),
            can_do: names(&[]),
            can_summon: names(&["@bo", "@cy"]),
            can_be: names(&["rename"]),
            see,
            prompt: "You look around.".into(),
            inbox: 3,
            recall: None,
            can_do_described: BTreeMap::new(),
            query_vector: None,
            digest: Hash32::default(),
        }
    }

    /// A `half` face's block, as `moment::recall` builds one.
    fn recall_block() -> RecallBlock {
        use crate::memory::{MemoryKind, Score};
        let item = |n: u8, land_seq, kind, importance, total, text: &str| Recalled {
            fact: FactId([n; 32]),
            land_seq,
            kind,
            importance,
            score: Score { total, ..Score::default() },
            text: text.into(),
            covered_by: None,
        };
        RecallBlock {
            query: "grain from bo".into(),
            kinds: vec![MemoryKind::Act, MemoryKind::Summons],
            items: vec![
                item(0xab, 40, MemoryKind::Summons, 0, 1_990, "@bo: grain?"),
                item(0xcd, 12, MemoryKind::Act, 8, 1_788, "paid @bo"),
            ],
            stand_ins: vec![item(0x12, 30, MemoryKind::Note, 6, 1_500, "bo cheats")],
            left_out: vec![(FactId([0xef; 32]), None), (FactId([0x34; 32]), Some(FactId([0x12; 32])))],
        }
    }

    #[test]
    fn the_known_keys_are_the_face_keys_and_recall() {
        let known: Vec<&str> = FACE_KEYS.into_iter().chain([FACE_RECALL_KEY]).collect();
        assert_eq!(FACE_KEYS_KNOWN.to_vec(), known);
    }

    #[test]
    fn a_models_do_tool_says_what_each_recorded_mcp_tool_takes_and_is_unchanged_without_one() {
        let plain = row(json!({}), false);
        let do_tool = |face: &Face<'_>| {
            let (_, tools) = crate::llm::tools(face);
            tools.into_iter().find(|tool| tool["function"]["name"] == "do").expect("a do tool")["function"].clone()
        };
        let names = |names: &[&str]| names.iter().map(|name| name.to_string()).collect::<Vec<_>>();
        let without = Face {
            can_do: names(&["echo", "move"]),
            ..face(&plain, json!({"kind": "person"}), None, json!({}), Json::Null)
        };
        assert_eq!(
            do_tool(&without),
            json!({
                "name": "do",
                "description": "Do one of the actions you may do, on a target address, with its arguments.",
                "parameters": {"type": "object", "required": ["action"], "properties": {
                    "action": {"type": "string", "enum": ["echo", "move"]},
                    "target": {"type": "string", "description": "the address acted on (default /)"},
                    "args": {"type": "object"},
                }},
            })
        );
        let echo = crate::tools::McpToolSchema {
            description: "Echoes back the input string".into(),
            input_schema: json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        };
        let with = Face { can_do_described: BTreeMap::from([("echo".to_string(), Arc::new(echo))]), ..without };
        let described = do_tool(&with);
        assert_eq!(
            described["description"],
            json!(
                "Do one of the actions you may do, on a target address, with its arguments. What some actions do, \
and the args each takes (a JSON Schema):\n- echo: Echoes back the input string. args: \
{\"properties\":{\"message\":{\"type\":\"string\"}},\"required\":[\"message\"],\"type\":\"object\"}"
            )
        );
        assert_eq!(
            described["parameters"]["properties"]["args"]["description"],
            json!("the action's arguments, as its schema above asks")
        );
    }

    #[test]
    fn a_face_with_recall_encodes_as_its_whole_and_one_without_has_no_such_key() {
        let plain = row(json!({}), false);
        let without = face(&plain, json!({"kind": "person"}), None, json!({}), Json::Null);
        assert!(without.value().get("recall").is_none(), "a forward face is what it always was");
        let with = Face {
            recall: Some(recall_block()),
            ..face(&plain, json!({"kind": "person"}), None, json!({}), Json::Null)
        };
        check(&with);
        assert_eq!(with.value()["recall"], recall_block().json());
        assert_eq!(with.value()["recall"]["items"][2]["standsIn"], true, "{}", with.value());
        assert!(with.value()["recall"]["items"][0].get("standsIn").is_none(), "only on a stand-in");
        assert_eq!(with.keys().last(), Some(FACE_RECALL_KEY), "recall sorts last");
        let (without, with) = (without.sealed().expect("seals"), with.sealed().expect("seals"));
        assert_ne!(without.digest, with.digest, "the recalled items are in the digest");
    }

    /// The parts encode to the bytes `encode_json` writes for the whole.
    fn check(face: &Face<'_>) {
        let whole = canonical::encode_json(&face.value());
        assert_eq!(face.encode(), whole, "{}", face.value());
    }

    #[test]
    fn a_face_written_from_its_parts_is_the_canonical_encoding_of_its_json() {
        let plain = row(json!({}), false);
        let rich = row(json!({"mood": "calm", "n": -3, "big": u64::MAX, "deep": {"a": [1, {"b": null}]}}), true);
        let summon = json!({"kind": "summon", "from": "@bo", "content": "hi", "summon": "ab"});
        let signal = json!({"kind": "signal", "key": "bell", "value": null});
        let see = json!({"here": {"beings": ["@bo"], "count": 2}, "a": []});
        for row in [&plain, &rich] {
            check(&face(row, json!({"kind": "tick", "tick": 4}), Some("onlooker"), json!({}), json!(60)));
            check(&face(row, summon.clone(), None, see.clone(), Json::Null));
            check(&face(row, signal.clone(), Some("worker"), see.clone(), json!(0)));
        }
    }

    #[test]
    fn a_script_reads_a_face_entry_by_entry_as_it_reads_the_whole() {
        use crate::script::{Input, ScriptEngine};
        let engine = ScriptEngine::new();
        let plain = row(json!({"mood": "calm"}), false);
        let oversized = row(json!({"big": u64::MAX}), false);
        let see = json!({"here": {"count": 2}});
        let scripts = [
            "face.me.name",
            "face.me.space + face.me.home + face.me.cognition",
            "face.me.name.len()",
            "face.me.qualities",
            "face.me.qualities.mood",
            "face.me.qualities.mood.len()",
            "face.me.qualities.big",
            "face.me.nothing",
            "face.me.keys()",
            "face.me",
            "face.time.ms + face.inbox",
            "face.see.here.count",
            "face.roles.stack",
            "face.recall",
            "face.recall.items[0].text",
            "face.recall.items.len()",
            "face.can",
            "face.keys()",
            "face",
            "eval(\"face.me.qualities\")",
            "face.missing",
            "1",
        ];
        for (row, recall) in [(&plain, None), (&oversized, None), (&plain, Some(recall_block()))] {
            let face = Face {
                recall,
                ..face(row, json!({"kind": "tick", "tick": 2}), Some("onlooker"), see.clone(), json!(60))
            };
            let value = face.value();
            for source in scripts {
                let by_entry = engine.run_inputs(source, &[("face", Input::Entries(&face))], 3);
                let whole = engine.run(source, &[("face", &value)], 3);
                assert_eq!(by_entry, whole, "{source} on {value}");
            }
        }
    }

    #[test]
    fn a_face_nested_near_the_limit_encodes_or_fails_as_its_json_does() {
        let (mut encoded, mut refused) = (0, 0);
        for nesting in canonical::CBOR_NESTING_DEPTH_MAX - 4..=canonical::CBOR_NESTING_DEPTH_MAX {
            let mut deep = json!(1);
            for _ in 0..nesting {
                deep = json!([deep]);
            }
            let quality_row = row(json!({ "deep": deep.clone() }), false);
            let wake = json!({"kind": "signal", "key": "k", "value": deep.clone()});
            let see = json!({ "deep": deep });
            let plain_row = row(json!({}), false);
            for face in [
                face(&quality_row, json!({"kind": "person"}), None, json!({}), Json::Null),
                face(&plain_row, wake, None, json!({}), Json::Null),
                face(&plain_row, json!({"kind": "person"}), None, see, Json::Null),
            ] {
                check(&face);
                match face.encode() {
                    Ok(_) => encoded += 1,
                    Err(_) => refused += 1,
                }
            }
        }
        // The limit falls inside the range tried.
        assert!(encoded > 0 && refused > 0, "{encoded} encoded, {refused} refused");
    }
}
