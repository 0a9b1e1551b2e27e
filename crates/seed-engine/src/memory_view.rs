//! A being's memory read off a store: the land log below a cursor folded
//! into `memory::MemoryFold`, and the JSON `seed memory --json` and the
//! portal's memory page show (docs/memory.md, docs/json/memory.json).

use crate::fact::body::{GenesisBody, KIND_GENESIS};
use crate::fact::{BeingId, FactId};
use crate::memory::recall::RECALL_ITEMS_MAX;
use crate::memory::{MemoryFold, MemoryKind, RecallQuery};
use crate::picked_facts::{body_holds, for_each_picked_fact, FactsRead};
use crate::store::{LandEntry, Store, StoreError};
use crate::world::body::KIND_ACT;
use crate::world::ActBody;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error)]
pub enum MemoryViewError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
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
/// folded: the being's own, and the summonses others sent it by `name`.
/// Each summoner's genesis is read for the name its summons is shown with.
///
/// `how` [`FactsRead::Picked`] reads the land log as stored and decodes only
/// the being's own facts and the acts whose bodies hold its name (a summons
/// to it names it): one being's memory on a land of a million beings read
/// every fact, 13 s for one page.
pub fn fold_memory(
    store: &dyn Store,
    being: BeingId,
    name: &str,
    cursor: u64,
    how: FactsRead,
) -> Result<MemoryFold, MemoryViewError> {
    let mut fold = MemoryFold::of(being, name);
    let name = name.trim_start_matches('@');
    let mut names: BTreeMap<BeingId, String> = BTreeMap::new();
    let mut failed = None;
    let picks = |entry: &LandEntry, kind: &str, body: &[u8]| {
        entry.being == being || (kind == KIND_ACT && body_holds(body, name.as_bytes()))
    };
    for_each_picked_fact(store, 0, cursor, how, picks, |land_seq, fact| {
        if failed.is_some() {
            return;
        }
        match fact.kind() {
            KIND_ACT => {
                let Ok(act) = fact.body_as::<ActBody>() else { return };
                let actor = fact.header.being;
                if how == FactsRead::Picked && !names.contains_key(&actor) {
                    // The actor's genesis came before its act: read it now.
                    match genesis_name(store, &actor) {
                        Ok(Some(actor_name)) => {
                            names.insert(actor, actor_name);
                        }
                        Ok(None) => {}
                        Err(error) => {
                            failed = Some(error);
                            return;
                        }
                    }
                }
                let actor_name = names.get(&actor).map_or("?", String::as_str);
                fold.apply_act(land_seq, actor, actor_name, fact.id(), &act);
            }
            KIND_GENESIS => {
                if let Ok(genesis) = fact.body_as::<GenesisBody>() {
                    names.insert(fact.header.being, genesis.name);
                }
            }
            _ => {}
        }
    })?;
    match failed {
        Some(error) => Err(error),
        None => Ok(fold),
    }
}

/// The name `being`'s genesis gives it (`None`: its genesis does not read
/// as one).
fn genesis_name(store: &dyn Store, being: &BeingId) -> Result<Option<String>, MemoryViewError> {
    let genesis = store.reel(being, 0, 1)?.into_iter().next();
    Ok(genesis
        .filter(|stored| stored.fact.kind() == KIND_GENESIS)
        .and_then(|stored| stored.fact.body_as::<GenesisBody>().ok().map(|genesis| genesis.name)))
}

/// `being`'s memory as `ask` wants it, as JSON (docs/json/memory.json).
pub fn memory_json(store: &dyn Store, being: BeingId, name: &str, ask: &MemoryAsk) -> Result<Json, MemoryViewError> {
    memory_json_reading(store, being, name, ask, FactsRead::Picked)
}

/// [`memory_json`], reading the land log as `how` says.
pub fn memory_json_reading(
    store: &dyn Store,
    being: BeingId,
    name: &str,
    ask: &MemoryAsk,
    how: FactsRead,
) -> Result<Json, MemoryViewError> {
    if ask.count == 0 || ask.count > RECALL_ITEMS_MAX {
        return Err(MemoryViewError::Count { count: ask.count });
    }
    let land_len = store.land_len()?;
    let cursor = match ask.at {
        Some(at) if at > land_len => return Err(MemoryViewError::PastTheEnd { at, land_len }),
        Some(at) => at,
        None => land_len,
    };
    let fold = fold_memory(store, being, name, cursor, how)?;
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
