//! Readable renderings of facts and reels for the CLI (text and JSON).

use crate::fact::Fact;
use crate::store::StoredFact;
use ciborium::value::Value;
use serde_json::{json, Map, Value as Json};
use std::time::{Duration, UNIX_EPOCH};

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

pub fn body_json(fact: &Fact) -> Json {
    match crate::canonical::decode_canonical(fact.body()) {
        Ok(value) => cbor_to_json(&value),
        Err(error) => Json::String(format!("<unreadable body: {error}>")),
    }
}

/// RFC 3339 with milliseconds, in UTC.
pub fn format_time_ms(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

pub fn stored_fact_json(stored: &StoredFact) -> Json {
    let fact = &stored.fact;
    json!({
        "seq": fact.header.seq,
        "land_seq": stored.land_seq,
        "id": fact.id().to_hex(),
        "prev": fact.header.prev.to_hex(),
        "stored_time_ms": fact.header.stored_time_ms,
        "stored_time": format_time_ms(fact.header.stored_time_ms),
        "kind": fact.kind(),
        "body": body_json(fact),
        "signature": hex::encode(fact.signature()),
    })
}

/// One line per fact: seq, time, kind, short id, then the body's fields.
pub fn stored_fact_line(stored: &StoredFact) -> String {
    let fact = &stored.fact;
    let body = match body_json(fact) {
        Json::Object(fields) => {
            fields.iter().map(|(key, value)| format!("{key}={}", compact(value))).collect::<Vec<_>>().join(" ")
        }
        other => compact(&other),
    };
    format!(
        "#{:<5} {}  {:<15} {}  {}",
        fact.header.seq,
        format_time_ms(fact.header.stored_time_ms),
        fact.kind(),
        fact.id().short(),
        body
    )
}

fn compact(value: &Json) -> String {
    match value {
        Json::String(text) if text.len() == 64 && text.chars().all(|c| c.is_ascii_hexdigit()) => {
            format!("{}…", &text[..12])
        }
        Json::String(text) => text.clone(),
        Json::Null => "—".to_string(),
        other => other.to_string(),
    }
}
