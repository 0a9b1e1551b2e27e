//! A being's memory read off a store: the land log below a cursor folded
//! into `memory::MemoryFold`, and the JSON `seed memory --json` and the
//! portal's memory page show (docs/memory.md, docs/json/memory.json).

use crate::fact::body::{GenesisBody, KIND_GENESIS};
use crate::fact::{BeingId, Fact, FactError, FactId};
use crate::memory::recall::RECALL_ITEMS_MAX;
use crate::memory::{MemoryFold, MemoryKind, RecallQuery};
use crate::store::{Store, StoreError};
use crate::world::body::KIND_ACT;
use crate::world::ActBody;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

/// Land log entries read at a time.
const MEMORY_READ_FACTS: u64 = 4_096;

#[derive(Debug, thiserror::Error)]
pub enum MemoryViewError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Fact(#[from] FactError),
    #[error("`at` {at} is past the land's end: it holds {land_len} facts")]
    PastTheEnd { at: u64, land_len: u64 },
    #[error("`count` is 1 to {RECALL_ITEMS_MAX} (the items a recall returns), not {count}")]
    Count { count: usize },
}

/// What to show of a being's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryAsk {
    /// Only facts below this land seq (`None`: the whole land).
    pub at: Option<u64>,
    pub query: Option<String>,
    pub count: usize,
}

/// Folds the land log below `cursor` into `being`'s memory. Only acts are
/// folded; of the rest, only each genesis is read, for the names the
/// summons sent to the being are shown with.
pub fn fold_memory(store: &dyn Store, being: BeingId, name: &str, cursor: u64) -> Result<MemoryFold, MemoryViewError> {
    let mut fold = MemoryFold::of(being, name);
    let mut names: BTreeMap<BeingId, String> = BTreeMap::new();
    let mut from = 0;
    while from < cursor {
        let to = (from + MEMORY_READ_FACTS).min(cursor);
        for (entry, envelope) in store.land_log_with_envelopes(from, to)? {
            let fact = Fact::decode_envelope(&envelope)?;
            match fact.kind() {
                KIND_ACT => {
                    if let Ok(act) = fact.body_as::<ActBody>() {
                        let actor = names.get(&entry.being).map_or("?", String::as_str);
                        fold.apply_act(entry.land_seq, entry.being, actor, fact.id(), &act);
                    }
                }
                KIND_GENESIS => {
                    if let Ok(genesis) = fact.body_as::<GenesisBody>() {
                        names.insert(entry.being, genesis.name);
                    }
                }
                _ => {}
            }
        }
        from = to;
    }
    Ok(fold)
}

/// `being`'s memory as `ask` wants it, as JSON (docs/json/memory.json).
pub fn memory_json(store: &dyn Store, being: BeingId, name: &str, ask: &MemoryAsk) -> Result<Json, MemoryViewError> {
    if ask.count == 0 || ask.count > RECALL_ITEMS_MAX {
        return Err(MemoryViewError::Count { count: ask.count });
    }
    let land_len = store.land_len()?;
    let cursor = match ask.at {
        Some(at) if at > land_len => return Err(MemoryViewError::PastTheEnd { at, land_len }),
        Some(at) => at,
        None => land_len,
    };
    let fold = fold_memory(store, being, name, cursor)?;
    let why_of = |fact: &FactId| fold.notes.get(fact).and_then(|note| note.why.clone());
    let items: Vec<Json> = fold
        .memory
        .items(cursor)
        .map(|item| {
            let superseded = item
                .superseded_by
                .map(|(land_seq, by)| json!({"fact": by.to_hex(), "landSeq": land_seq, "why": why_of(&by)}));
            let note = fold.notes.get(&item.fact);
            let supersedes = note.and_then(|note| note.supersedes).map(|fact| fact.to_hex());
            let covers: Vec<String> =
                note.map(|note| note.covers.iter().map(FactId::to_hex).collect()).unwrap_or_default();
            let covered = item.covered_by.map(|(land_seq, by)| json!({"fact": by.to_hex(), "landSeq": land_seq}));
            json!({"fact": item.fact.to_hex(), "landSeq": item.land_seq, "kind": item.kind.as_str(),
                   "importance": item.importance, "text": item.text, "supersedes": supersedes,
                   "supersededBy": superseded, "reflection": item.reflection, "covers": covers,
                   "coveredBy": covered})
        })
        .collect();
    let recall = ask.query.as_ref().map(|text| {
        let kinds = MemoryKind::ALL.into_iter().collect();
        let query = RecallQuery { text: text.clone(), kinds, count: ask.count, cursor };
        let items: Vec<Json> = fold
            .memory
            .recall(&query)
            .iter()
            .map(|item| {
                json!({"fact": item.fact.to_hex(), "landSeq": item.land_seq, "kind": item.kind.as_str(),
                       "importance": item.importance, "text": &*item.text,
                       "score": {"total": item.score.total, "relevance": item.score.relevance,
                                 "recency": item.score.recency, "importance": item.score.importance,
                                 "similarity": item.score.similarity}})
            })
            .collect();
        json!({"query": text, "count": ask.count, "items": items})
    });
    let problems: Vec<Json> = fold
        .problems
        .iter()
        .map(|(fact, problem)| json!({"fact": fact.to_hex(), "reason": problem.to_string()}))
        .collect();
    Ok(json!({"being": being.to_hex(), "name": name, "at": cursor, "landLength": land_len,
              "importanceSinceReflection": fold.memory.importance_since_reflection(),
              "items": items, "recall": recall, "problems": problems}))
}
