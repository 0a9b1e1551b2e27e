//! A note a being writes about itself: `be note` with a payload of
//! `{text, importance?, supersedes?, why?, covers?}`. A note with `covers`
//! is a reflection: it sums up the items it cites by fact id, and a face
//! short of room shows it in their place (docs/memory.md). The verb layer reads the
//! payload with [`Note::from_payload`] (a bad one is refused, nothing is
//! sealed); the memory fold reads a sealed one the same way.
//!
//! `supersedes` names an earlier note of the same being by its fact id
//! (hex): recall shows the newer note from its land seq on, and both stay on
//! the reel. Whether the cited fact is an earlier note of the being is known
//! only to the memory fold, which folds nothing from a note that cites
//! anything else and says so (`seed memory`); nothing is ever removed.

use super::recall::{IMPORTANCE_MAX, RECALL_ITEM_TEXT_CHARS_MAX};
use crate::fact::FactId;
use serde_json::Value as Json;

/// The `be` operation that writes a note.
pub const BE_NOTE: &str = "note";
/// The longest note, in characters.
pub const NOTE_TEXT_CHARS_MAX: usize = RECALL_ITEM_TEXT_CHARS_MAX;
/// The longest reason a superseding note gives, in characters.
pub const NOTE_WHY_CHARS_MAX: usize = 280;
/// The most items one reflection covers.
pub const NOTE_COVERS_MAX: usize = 64;

/// A note's payload, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub text: String,
    pub importance: u8,
    pub supersedes: Option<FactId>,
    pub why: Option<String>,
    /// The items a reflection sums up (empty: a plain note).
    pub covers: Vec<FactId>,
}

/// What is wrong with a note's payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteProblem {
    #[error("a note's payload is an object: {{text, importance?, supersedes?, why?}}")]
    NotAnObject,
    #[error("a note needs `text`, a string that is not empty")]
    NoText,
    #[error("a note's `text` is {chars} characters, over {NOTE_TEXT_CHARS_MAX}")]
    TextTooLong { chars: usize },
    #[error("a note's `importance` is a whole number from 0 to {IMPORTANCE_MAX}, not {given}")]
    Importance { given: String },
    #[error("a note's `supersedes` is the 64-hex-digit id of an earlier note, not {given}")]
    Supersedes { given: String },
    #[error("a note's `why` is a string of at most {NOTE_WHY_CHARS_MAX} characters")]
    Why,
    #[error("`why` explains a superseding: a note with `why` needs `supersedes`")]
    WhyWithoutSupersedes,
    #[error("a note has no field `{field}` (it takes text, importance, supersedes, why, covers)")]
    UnknownField { field: String },
    #[error(
        "a note's `covers` is a list of 1 to {NOTE_COVERS_MAX} distinct fact ids (64 hex digits) it sums up; entry {position} is {given}"
    )]
    Covers { position: usize, given: String },
}

impl Note {
    pub fn from_payload(payload: &Json) -> Result<Note, NoteProblem> {
        let fields = payload.as_object().ok_or(NoteProblem::NotAnObject)?;
        if let Some(field) =
            fields.keys().find(|key| !matches!(key.as_str(), "text" | "importance" | "supersedes" | "why" | "covers"))
        {
            return Err(NoteProblem::UnknownField { field: field.clone() });
        }
        let text = fields.get("text").and_then(Json::as_str).filter(|text| !text.trim().is_empty());
        let text = text.ok_or(NoteProblem::NoText)?;
        let chars = text.chars().count();
        if chars > NOTE_TEXT_CHARS_MAX {
            return Err(NoteProblem::TextTooLong { chars });
        }
        let importance = match fields.get("importance") {
            None | Some(Json::Null) => 0,
            Some(given) => given
                .as_u64()
                .filter(|value| *value <= u64::from(IMPORTANCE_MAX))
                .map(|value| value as u8)
                .ok_or_else(|| NoteProblem::Importance { given: given.to_string() })?,
        };
        let supersedes = match fields.get("supersedes") {
            None | Some(Json::Null) => None,
            Some(given) => Some(
                given
                    .as_str()
                    .and_then(|hex| FactId::from_hex(hex.trim()))
                    .ok_or_else(|| NoteProblem::Supersedes { given: given.to_string() })?,
            ),
        };
        let why = match fields.get("why") {
            None | Some(Json::Null) => None,
            Some(Json::String(why)) if why.chars().count() <= NOTE_WHY_CHARS_MAX => Some(why.clone()),
            Some(_) => return Err(NoteProblem::Why),
        };
        if why.is_some() && supersedes.is_none() {
            return Err(NoteProblem::WhyWithoutSupersedes);
        }
        let covers = match fields.get("covers") {
            None | Some(Json::Null) => Vec::new(),
            Some(Json::Array(entries)) if !entries.is_empty() && entries.len() <= NOTE_COVERS_MAX => {
                let mut covers: Vec<FactId> = Vec::with_capacity(entries.len());
                for (position, entry) in entries.iter().enumerate() {
                    match entry.as_str().and_then(|hex| FactId::from_hex(hex.trim())) {
                        Some(fact) if !covers.contains(&fact) => covers.push(fact),
                        _ => return Err(NoteProblem::Covers { position, given: entry.to_string() }),
                    }
                }
                covers
            }
            Some(other) => return Err(NoteProblem::Covers { position: 0, given: other.to_string() }),
        };
        Ok(Note { text: text.to_string(), importance, supersedes, why, covers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn note_payloads_are_read_or_named_as_wrong() {
        let earlier = FactId([7; 32]);
        let check = |payload: Json, expected: Result<Note, NoteProblem>| {
            assert_eq!(Note::from_payload(&payload), expected, "{payload}");
        };
        let note = |text: &str, importance, supersedes, why: Option<&str>| Note {
            text: text.into(),
            importance,
            supersedes,
            why: why.map(str::to_string),
            covers: Vec::new(),
        };
        check(json!({"text": "bob cheats"}), Ok(note("bob cheats", 0, None, None)));
        check(json!({"text": "bob cheats", "importance": 9}), Ok(note("bob cheats", 9, None, None)));
        check(
            json!({"text": "bob paid back", "supersedes": earlier.to_hex(), "why": "he returned the coins"}),
            Ok(note("bob paid back", 0, Some(earlier), Some("he returned the coins"))),
        );
        check(json!("bob cheats"), Err(NoteProblem::NotAnObject));
        check(json!({}), Err(NoteProblem::NoText));
        check(json!({"text": "  "}), Err(NoteProblem::NoText));
        check(json!({"text": "x".repeat(NOTE_TEXT_CHARS_MAX + 1)}), Err(NoteProblem::TextTooLong { chars: 281 }));
        check(json!({"text": "t", "importance": 11}), Err(NoteProblem::Importance { given: "11".into() }));
        check(json!({"text": "t", "importance": -1}), Err(NoteProblem::Importance { given: "-1".into() }));
        check(json!({"text": "t", "supersedes": "abc"}), Err(NoteProblem::Supersedes { given: "\"abc\"".into() }));
        check(json!({"text": "t", "why": "because"}), Err(NoteProblem::WhyWithoutSupersedes));
        check(json!({"text": "t", "mood": 1}), Err(NoteProblem::UnknownField { field: "mood".into() }));
        let (a, b) = (FactId([1; 32]), FactId([2; 32]));
        check(
            json!({"text": "bo cheats, cy pays", "covers": [a.to_hex(), b.to_hex()]}),
            Ok(Note { covers: vec![a, b], ..note("bo cheats, cy pays", 0, None, None) }),
        );
        let covers = |covers: Json, position, given: &str| {
            check(json!({"text": "t", "covers": covers}), Err(NoteProblem::Covers { position, given: given.into() }));
        };
        covers(json!([]), 0, "[]");
        covers(json!(a.to_hex()), 0, &format!("\"{}\"", a.to_hex()));
        covers(json!([a.to_hex(), "xyz"]), 1, "\"xyz\"");
        covers(json!([a.to_hex(), a.to_hex()]), 1, &format!("\"{}\"", a.to_hex()));
        let many: Vec<String> = (0..=NOTE_COVERS_MAX).map(|n| FactId([n as u8; 32]).to_hex()).collect();
        covers(json!(many), 0, &json!(many).to_string());
    }
}
