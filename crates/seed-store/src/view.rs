//! Readable renderings of facts and reels for the CLI (text and JSON).

use crate::fact::Fact;
use crate::store::StoredFact;
use serde_json::{json, Value as Json};
use std::time::{Duration, UNIX_EPOCH};

pub use crate::canonical::cbor_to_json;

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

/// A time a person gives (`--since`, `?since=`): milliseconds since 1970,
/// or RFC 3339 (`2026-11-25T09:00:00Z`); `None` for anything else.
pub fn parse_time_ms(given: &str) -> Option<u64> {
    if let Ok(ms) = given.parse::<u64>() {
        return Some(ms);
    }
    let time = humantime::parse_rfc3339_weak(given.trim()).ok()?;
    Some(time.duration_since(UNIX_EPOCH).ok()?.as_millis() as u64)
}

/// One stored fact as JSON: camelCase keys, ids as hex, the time both as
/// milliseconds and RFC 3339. The body keeps its own (signed) field names.
pub fn stored_fact_json(stored: &StoredFact) -> Json {
    let fact = &stored.fact;
    json!({
        "seq": fact.header.seq,
        "landSeq": stored.land_seq,
        "id": fact.id().to_hex(),
        "prev": fact.header.prev.to_hex(),
        "storedTimeMs": fact.header.stored_time_ms,
        "storedTime": format_time_ms(fact.header.stored_time_ms),
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
