//! CBOR shown as JSON: for people reading a fact (the CLI, the portal) and
//! for upper layers that hold a decoded roleFlow as JSON. Never re-encoded
//! into a fact.

use ciborium::value::Value;
use serde_json::{Map, Value as Json};

/// CBOR to JSON for display: byte strings become hex, non-text map keys their
/// debug form. Lossless enough to read, never used to re-encode.
pub fn cbor_to_json(value: &Value) -> Json {
    match value {
        Value::Integer(integer) => {
            let wide = i128::from(*integer);
            match (u64::try_from(wide), i64::try_from(wide)) {
                (Ok(unsigned), _) => Json::from(unsigned),
                (_, Ok(signed)) => Json::from(signed),
                _ => Json::String(wide.to_string()),
            }
        }
        Value::Bytes(bytes) => Json::String(hex::encode(bytes)),
        Value::Text(text) => Json::String(text.clone()),
        Value::Bool(flag) => Json::Bool(*flag),
        Value::Null => Json::Null,
        Value::Array(items) => Json::Array(items.iter().map(cbor_to_json).collect()),
        Value::Map(entries) => {
            let mut object = Map::new();
            for (key, item) in entries {
                let key = match key {
                    Value::Text(text) => text.clone(),
                    other => format!("{other:?}"),
                };
                object.insert(key, cbor_to_json(item));
            }
            Json::Object(object)
        }
        other => Json::String(format!("{other:?}")),
    }
}
