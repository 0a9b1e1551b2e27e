//! The face's `recall` block: what a being with orientation `half` or
//! `inward` remembers of its own past in a moment (docs/memory.md). Pure: it
//! reads the being's memory in the world at the moment's cursor, so a replay
//! at the same cursor recalls the same items, and the block is part of the
//! face and so of its digest. A `forward` moment has no block, and its face
//! is byte for byte what it always was.

use super::{Assigned, Opened};
use crate::embedding::{QueryVector, EMBEDDING_CONNECTION_CONFIG_KEY};
use crate::face::RecallBlock;
use crate::fact::FactId;
use crate::llm::{EmbedQuestion, LanguageModel};
use crate::memory::recall::Semantic;
use crate::memory::{MemoryKind, RecallQuery, Recalled};
use crate::roles::compose::render;
use crate::roles::Orientation;
use crate::world::World;
use serde_json::Value as Json;
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
/// `forward`): the query, the kinds, the items within
/// `recall_face_chars_max` characters of text ([`compact`]), each citing its
/// fact, and the items left out for the budget with the reflection that
/// covers each, if one does.
///
/// In a land with an embedding connection the query's vector is asked of
/// `model` (replay's gives back the recorded one) and returned to be
/// recorded in the act: recall then weighs each item's similarity too.
pub fn recall_block(
    world: &World,
    opened: &Opened,
    assigned: &Assigned,
    wake: &Json,
    model: &dyn LanguageModel,
) -> (Option<RecallBlock>, Option<QueryVector>) {
    if assigned.composed.orientation == Orientation::Forward {
        return (None, None);
    }
    let query = recall_query(opened, assigned, wake);
    let memory = world.memories.get(&opened.being);
    let query_vector = query_vector(world, opened, &query.text, model);
    let query_ints = query_vector.as_ref().map(|asked| crate::embedding::from_bytes(&asked.vector));
    let vector_of = |fact: &FactId| world.embeddings.get(fact).map(|stored| &*stored.0);
    let semantic =
        query_ints.as_deref().filter(|ints| !ints.is_empty()).map(|query| Semantic { query, vector_of: &vector_of });
    let recalled = memory.map(|memory| memory.recall_with(&query, semantic.as_ref())).unwrap_or_default();
    let budget =
        usize::try_from(world.config_u64("recall_face_chars_max", RECALL_FACE_CHARS_MAX as u64)).unwrap_or(usize::MAX);
    let reflection = |fact: &FactId| memory.and_then(|memory| memory.note_recalled(fact, query.cursor));
    let Compacted { shown, stand_ins, left_out } = compact(recalled, budget, reflection);
    let block =
        RecallBlock { query: query.text, kinds: query.kinds.into_iter().collect(), items: shown, stand_ins, left_out };
    (Some(block), query_vector)
}

/// The vector of a recall query, in a land that names an embedding
/// connection and for a query with any text: what the connection gave,
/// or why it gave nothing (recall is then lexical).
fn query_vector(world: &World, opened: &Opened, text: &str, model: &dyn LanguageModel) -> Option<QueryVector> {
    let connection = world.config.get(EMBEDDING_CONNECTION_CONFIG_KEY)?.as_str()?;
    if text.trim().is_empty() {
        return None;
    }
    let seed = u64::from_be_bytes(opened.id.0[16..24].try_into().expect("32 bytes"));
    let question = EmbedQuestion { connection, text, seed, limits: crate::llm::CallLimits::of_models(world) };
    Some(match model.embed(&question) {
        Ok(embedded) => QueryVector {
            connection: embedded.connection,
            model: embedded.model,
            vector: crate::embedding::to_bytes(&embedded.vector),
            failure: None,
        },
        Err(no_answer) => QueryVector {
            connection: connection.to_string(),
            model: String::new(),
            vector: Vec::new(),
            failure: Some(no_answer.reason),
        },
    })
}

/// What a face shows of the items recalled, within a budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// The items shown, in rank order.
    pub shown: Vec<Recalled>,
    /// The reflections standing in for items that had no room.
    pub stand_ins: Vec<Recalled>,
    /// The items left out, in rank order, each with the reflection covering it.
    pub left_out: Vec<(FactId, Option<FactId>)>,
}

/// Fits ranked items into `budget_chars` characters of text. Items are
/// taken in rank order while they fit. When some are left out, reflections
/// compact what was recalled: a reflection (`reflection` reads one) that
/// covers an item left out, or whose covered items shown take more room
/// than it does, stands in for everything it covers if it fits once they
/// give way to it; the room freed is filled again in rank order with the
/// items left out that no stand-in covers. Nothing is dropped silently:
/// every item is shown or listed as left out.
pub fn compact(
    recalled: Vec<Recalled>,
    budget_chars: usize,
    reflection: impl Fn(&FactId) -> Option<Recalled>,
) -> Compacted {
    let chars = |item: &Recalled| item.text.chars().count();
    let (mut shown, mut left_out): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    let mut used = 0usize;
    for (rank, item) in recalled.iter().enumerate() {
        if used + chars(item) <= budget_chars {
            used += chars(item);
            shown.push(rank);
        } else {
            left_out.push(rank);
        }
    }
    let mut stand_ins: Vec<Recalled> = Vec::new();
    if !left_out.is_empty() {
        // The reflections covering any item recalled, by the rank of the
        // first; one stands in where it covers an item left out or frees room.
        let mut reflections: Vec<FactId> = Vec::new();
        for item in &recalled {
            if let Some(by) = item.covered_by {
                let already_shown = shown.iter().any(|shown| recalled[*shown].fact == by);
                if !reflections.contains(&by) && !already_shown {
                    reflections.push(by);
                }
            }
        }
        for by in reflections {
            let Some(stand_in) = reflection(&by) else { continue };
            let covered = |rank: &usize| recalled[*rank].covered_by == Some(by);
            let freed: usize = shown.iter().filter(|rank| covered(rank)).map(|rank| chars(&recalled[*rank])).sum();
            let covers_one_left_out = left_out.iter().any(covered);
            if used - freed + chars(&stand_in) > budget_chars || !(covers_one_left_out || freed > chars(&stand_in)) {
                continue;
            }
            left_out.extend(shown.iter().copied().filter(covered));
            shown.retain(|rank| !covered(rank));
            used = used - freed + chars(&stand_in);
            stand_ins.push(stand_in);
        }
        left_out.sort_unstable();
        let standing_in = |rank: usize| {
            recalled[rank].covered_by.is_some_and(|by| stand_ins.iter().any(|stand_in| stand_in.fact == by))
        };
        let mut still_out = Vec::new();
        for rank in left_out {
            if !standing_in(rank) && used + chars(&recalled[rank]) <= budget_chars {
                used += chars(&recalled[rank]);
                shown.push(rank);
            } else {
                still_out.push(rank);
            }
        }
        left_out = still_out;
        shown.sort_unstable();
    }
    Compacted {
        left_out: left_out.iter().map(|rank| (recalled[*rank].fact, recalled[*rank].covered_by)).collect(),
        shown: shown.iter().map(|rank| recalled[*rank].clone()).collect(),
        stand_ins,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    fn item(n: u8, text: &str, covered_by: Option<u8>) -> Recalled {
        use crate::memory::Score;
        let score = Score::default();
        let covered_by = covered_by.map(|by| FactId([by; 32]));
        Recalled {
            fact: FactId([n; 32]),
            land_seq: u64::from(n),
            kind: MemoryKind::Act,
            importance: 0,
            score,
            text: text.into(),
            covered_by,
        }
    }

    /// Shown, standing in, and left out with the reflection covering each.
    type Expected<'a> = (&'a [u8], &'a [u8], &'a [(u8, Option<u8>)]);

    /// (budget, ranked items as (fact, chars, covered by), reflections as
    /// (fact, chars)) → (shown, standing in, left out with their reflection).
    fn check(budget: usize, ranked: &[(u8, usize, Option<u8>)], reflections: &[(u8, usize)], expected: Expected<'_>) {
        let recalled = ranked.iter().map(|(n, chars, by)| item(*n, &"x".repeat(*chars), *by)).collect();
        let reflection = |fact: &FactId| {
            reflections
                .iter()
                .find(|(n, _)| FactId([*n; 32]) == *fact)
                .map(|(n, chars)| item(*n, &"r".repeat(*chars), None))
        };
        let compacted = compact(recalled, budget, reflection);
        let facts = |items: &[Recalled]| items.iter().map(|item| item.fact.0[0]).collect::<Vec<_>>();
        let left: Vec<(u8, Option<u8>)> =
            compacted.left_out.iter().map(|(fact, by)| (fact.0[0], by.map(|by| by.0[0]))).collect();
        assert_eq!(
            (facts(&compacted.shown), facts(&compacted.stand_ins), left),
            (expected.0.to_vec(), expected.1.to_vec(), expected.2.to_vec()),
            "budget {budget}, {ranked:?}, {reflections:?}"
        );
    }

    #[test]
    fn a_face_short_of_room_leaves_out_the_lowest_ranked_and_reflections_stand_in_for_what_they_cover() {
        // Everything fits.
        check(100, &[(1, 40, None), (2, 40, None)], &[], (&[1, 2], &[], &[]));
        // No reflection: the lowest-ranked that do not fit are left out (a
        // smaller one further down still fits).
        check(100, &[(1, 60, None), (2, 60, None), (3, 30, None)], &[], (&[1, 3], &[], &[(2, None)]));
        // Item 3 has no room; reflection 9 covers it and item 2: 2 gives way
        // to 9, and the room left takes nothing more.
        check(
            100,
            &[(1, 50, None), (2, 40, Some(9)), (3, 40, Some(9))],
            &[(9, 30)],
            (&[1], &[9], &[(2, Some(9)), (3, Some(9))]),
        );
        // The room a stand-in frees is filled again with what no stand-in covers.
        check(
            100,
            &[(1, 40, Some(9)), (2, 40, Some(9)), (3, 30, None), (4, 20, None)],
            &[(9, 10)],
            (&[3, 4], &[9], &[(1, Some(9)), (2, Some(9))]),
        );
        // A reflection that does not fit even in place of what it covers
        // stands in for nothing; a reflection already shown is not repeated.
        check(50, &[(1, 40, Some(9)), (2, 40, Some(9))], &[(9, 60)], (&[1], &[], &[(2, Some(9))]));
        check(100, &[(9, 30, None), (1, 60, Some(9)), (2, 60, Some(9))], &[(9, 30)], (&[9, 1], &[], &[(2, Some(9))]));
        // A reflection the memory cannot give stands in for nothing.
        check(50, &[(1, 40, Some(8)), (2, 40, Some(8))], &[], (&[1], &[], &[(2, Some(8))]));
    }

    #[test]
    fn each_orientation_recalls_its_kinds() {
        assert!(kinds_of(Orientation::Forward).is_empty());
        assert_eq!(kinds_of(Orientation::Half).into_iter().collect::<Vec<_>>(), [MemoryKind::Act, MemoryKind::Summons]);
        assert_eq!(kinds_of(Orientation::Inward).len(), 3);
    }
}
