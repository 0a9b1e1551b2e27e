//! The face's `recall` block: what a being with orientation `half` or
//! `inward` remembers of its own past in a moment (docs/memory.md). Pure: it
//! reads the being's memory in the world at the moment's cursor, so a replay
//! at the same cursor recalls the same items, and the block is part of the
//! face and so of its digest. A `forward` moment has no block, and its face
//! is byte for byte what it always was.

use super::{Assigned, Opened};
use crate::memory::{MemoryKind, RecallQuery, Recalled};
use crate::roles::compose::render;
use crate::roles::Orientation;
use crate::world::World;
use serde_json::{json, Value as Json};
use std::collections::BTreeSet;

/// Items a recall brings when the role does not say (`recall.count`).
pub const RECALL_ITEMS_DEFAULT: usize = 8;
/// Characters of recalled text one face holds at most (land configuration
/// key `recall_face_chars_max`): items past it, in rank order, are left out
/// and the block names them.
pub const RECALL_FACE_CHARS_MAX: usize = 4_000;
/// The query when the role gives no template: what woke the being.
pub const RECALL_QUERY_DEFAULT: &str = "{{wake.content}}";

/// The kinds an orientation recalls: `half` its acts and the summons it
/// received, `inward` its notes as well; `forward` nothing.
pub fn kinds_of(orientation: Orientation) -> BTreeSet<MemoryKind> {
    match orientation {
        Orientation::Forward => BTreeSet::new(),
        Orientation::Half => [MemoryKind::Act, MemoryKind::Summons].into_iter().collect(),
        Orientation::Inward => MemoryKind::ALL.into_iter().collect(),
    }
}

/// What woke the being, as text a query reads: a summons' content, a
/// signal's key and value; nothing for a tick, a person or a continuation.
pub fn wake_content(wake: &Json) -> String {
    match wake["kind"].as_str() {
        Some("summon") => wake["content"].as_str().unwrap_or_default().to_string(),
        Some("signal") => {
            let value = match &wake["value"] {
                Json::String(text) => text.clone(),
                Json::Null => String::new(),
                other => other.to_string(),
            };
            format!("{} {value}", wake["key"].as_str().unwrap_or_default()).trim().to_string()
        }
        _ => String::new(),
    }
}

/// The query a moment recalls with: the role's template (or the default),
/// its placeholders filled from the open context and `wake.content`.
pub fn recall_query(opened: &Opened, assigned: &Assigned, wake: &Json) -> RecallQuery {
    let composed = &assigned.composed;
    let spec = composed.recall.clone().unwrap_or_default();
    let allowed = kinds_of(composed.orientation);
    let kinds = match &spec.kinds {
        Some(kinds) => kinds.iter().copied().filter(|kind| allowed.contains(kind)).collect(),
        None => allowed,
    };
    let template = spec.query.as_deref().unwrap_or(RECALL_QUERY_DEFAULT);
    let text = if template == RECALL_QUERY_DEFAULT {
        wake_content(wake)
    } else if template.contains("wake.content") {
        let mut context = assigned.context.clone();
        context.insert("wake.content", wake_content(wake));
        render(template, &context)
    } else {
        render(template, &assigned.context)
    };
    RecallQuery { text, kinds, count: spec.count.unwrap_or(RECALL_ITEMS_DEFAULT), cursor: opened.cursor }
}

/// The face's `recall` block for a `half` or `inward` moment (`None` for
/// `forward`): the query, the kinds, the items in rank order within
/// `recall_face_chars_max` characters of text, each citing its fact, and the
/// facts of the items left out for the budget.
pub fn recall_block(world: &World, opened: &Opened, assigned: &Assigned, wake: &Json) -> Option<Json> {
    if assigned.composed.orientation == Orientation::Forward {
        return None;
    }
    let query = recall_query(opened, assigned, wake);
    let recalled = world.memories.get(&opened.being).map(|memory| memory.recall(&query)).unwrap_or_default();
    let budget =
        usize::try_from(world.config_u64("recall_face_chars_max", RECALL_FACE_CHARS_MAX as u64)).unwrap_or(usize::MAX);
    let (mut items, mut left_out, mut used) = (Vec::new(), Vec::new(), 0usize);
    for item in &recalled {
        let chars = item.text.chars().count();
        if used + chars <= budget {
            used += chars;
            items.push(item_json(item));
        } else {
            left_out.push(Json::String(item.fact.to_hex()));
        }
    }
    Some(json!({
        "query": query.text,
        "kinds": query.kinds.iter().map(|kind| kind.as_str()).collect::<Vec<_>>(),
        "items": items,
        "leftOut": left_out,
    }))
}

fn item_json(item: &Recalled) -> Json {
    json!({
        "fact": item.fact.to_hex(),
        "landSeq": item.land_seq,
        "kind": item.kind.as_str(),
        "importance": item.importance,
        "score": item.score.total,
        "text": &*item.text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_reads_as_the_text_it_carries() {
        let check = |wake: Json, expected: &str| assert_eq!(wake_content(&wake), expected, "{wake}");
        check(json!({"kind": "summon", "from": "@bo", "content": "5 coins for grain?"}), "5 coins for grain?");
        check(json!({"kind": "signal", "key": "market.price", "value": 12}), "market.price 12");
        check(json!({"kind": "signal", "key": "weather.sky", "value": "rain"}), "weather.sky rain");
        check(json!({"kind": "signal", "key": "weather.sky", "value": null}), "weather.sky");
        check(json!({"kind": "tick", "tick": 3}), "");
        check(json!({"kind": "person"}), "");
    }

    #[test]
    fn each_orientation_recalls_its_kinds() {
        assert!(kinds_of(Orientation::Forward).is_empty());
        assert_eq!(kinds_of(Orientation::Half).into_iter().collect::<Vec<_>>(), [MemoryKind::Act, MemoryKind::Summons]);
        assert_eq!(kinds_of(Orientation::Inward).len(), 3);
    }
}
