//! A being's memory read off a store: the land log below a cursor folded
//! into `memory::MemoryFold`, and the JSON `seed memory --json` and the
//! portal's memory page show (docs/memory.md, docs/json/memory.json).
//!
//! What is folded is the being's own facts and the summonses sent to it.
//! `seed memory` finds the summonses by reading the land log as stored
//! (`picked_facts`); the portal, which holds the land's world, asks that
//! world's memory of the being where its summonses are
//! ([`SummonsesKnown`]) and reads only those, the being's reel and the
//! land log past the world's cursor. On a land of a million beings,
//! searching the log read 4 million facts as stored to find a handful.

use crate::fact::body::{GenesisBody, KIND_GENESIS};
use crate::fact::{BeingId, Fact, FactId};
use crate::memory::recall::RECALL_ITEMS_MAX;
use crate::memory::{MemoryFold, MemoryKind, RecallQuery};
use crate::picked_facts::{body_holds, for_each_picked_fact, FactsRead};
use crate::store::{LandEntry, Store, StoreError};
use crate::world::body::KIND_ACT;
use crate::world::{ActBody, World};
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
    let mut folding = Folding::new(being, name, how);
    let picks = folding.picks();
    for_each_picked_fact(store, 0, cursor, how, picks, |land_seq, fact| folding.visit(store, land_seq, fact))?;
    folding.finish()
}

/// Where a world folded to `until` holds the summonses a being was sent:
/// their land seqs. The world remembers a summons for the being its target
/// names, the memory fold for the being of that name; the two agree
/// because a summons is sealed only to a being that exists then, and no two
/// beings share a name (`moment::decide`: `NoBeing`, `NameTaken`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummonsesKnown {
    pub until: u64,
    pub land_seqs: Vec<u64>,
}

impl SummonsesKnown {
    /// The summonses `world` remembers for `being` below its cursor.
    pub fn in_world(world: &World, being: &BeingId) -> SummonsesKnown {
        let land_seqs = world.memories.get(being).map_or_else(Vec::new, |memory| {
            memory
                .items(world.cursor)
                .filter(|item| item.kind == MemoryKind::Summons)
                .map(|item| item.land_seq)
                .collect()
        });
        SummonsesKnown { until: world.cursor, land_seqs }
    }
}

/// [`fold_memory`] (reading as [`FactsRead::Picked`] picks) without
/// reading the land log below `known.until`: there, the being's facts are
/// its reel's and the summonses sent to it those `known` lists.
pub fn fold_memory_knowing(
    store: &dyn Store,
    being: BeingId,
    name: &str,
    cursor: u64,
    known: &SummonsesKnown,
) -> Result<MemoryFold, MemoryViewError> {
    let mut folding = Folding::new(being, name, FactsRead::Picked);
    let known_until = known.until.min(cursor);
    let own: Vec<(u64, Fact)> = store
        .reel(&being, 0, u64::MAX)?
        .into_iter()
        .filter(|stored| stored.land_seq < known_until)
        .map(|stored| (stored.land_seq, stored.fact))
        .collect();
    let mut summonses: Vec<u64> = known.land_seqs.iter().copied().filter(|land_seq| *land_seq < known_until).collect();
    summonses.sort_unstable();
    summonses.dedup();
    let mut own = own.into_iter().peekable();
    for land_seq in summonses {
        let mut own_at_land_seq = false;
        while let Some((own_seq, fact)) = own.next_if(|(own_seq, _)| *own_seq <= land_seq) {
            own_at_land_seq = own_seq == land_seq;
            folding.visit(store, own_seq, fact);
        }
        // A land seq `known` lists that is one of the being's own facts
        // (a summons it sent itself) is folded once.
        if own_at_land_seq {
            continue;
        }
        for (land_seq, fact) in crate::engine::read_land_log(store, land_seq, land_seq + 1)? {
            folding.visit(store, land_seq, fact);
        }
    }
    for (own_seq, fact) in own {
        folding.visit(store, own_seq, fact);
    }
    let picks = folding.picks();
    for_each_picked_fact(store, known_until, cursor, FactsRead::Picked, picks, |land_seq, fact| {
        folding.visit(store, land_seq, fact)
    })?;
    folding.finish()
}

/// The memory fold of one being, fact by fact, with the names of the
/// beings that summoned it.
struct Folding {
    fold: MemoryFold,
    being: BeingId,
    name: String,
    how: FactsRead,
    names: BTreeMap<BeingId, String>,
    failed: Option<MemoryViewError>,
}

impl Folding {
    fn new(being: BeingId, name: &str, how: FactsRead) -> Folding {
        Folding {
            fold: MemoryFold::of(being, name),
            being,
            name: name.trim_start_matches('@').to_string(),
            how,
            names: BTreeMap::new(),
            failed: None,
        }
    }

    /// The pick for [`FactsRead::Picked`]: the being's own facts and the
    /// acts whose bodies hold its name (a summons to it names it).
    fn picks(&self) -> impl Fn(&LandEntry, &str, &[u8]) -> bool {
        let (being, name) = (self.being, self.name.clone());
        move |entry: &LandEntry, kind: &str, body: &[u8]| {
            entry.being == being || (kind == KIND_ACT && body_holds(body, name.as_bytes()))
        }
    }

    fn finish(self) -> Result<MemoryFold, MemoryViewError> {
        match self.failed {
            Some(error) => Err(error),
            None => Ok(self.fold),
        }
    }

    fn visit(&mut self, store: &dyn Store, land_seq: u64, fact: Fact) {
        let Folding { fold, how, names, failed, .. } = self;
        let how = *how;
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
                            *failed = Some(error);
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
    let (cursor, land_len) = cursor_asked(store, ask)?;
    let fold = fold_memory(store, being, name, cursor, how)?;
    Ok(memory_json_of(&fold, being, name, ask, cursor, land_len))
}

/// [`memory_json`], reading only the summonses `known` lists below its
/// `until` ([`fold_memory_knowing`]): the portal's, which holds the
/// land's world.
pub fn memory_json_knowing(
    store: &dyn Store,
    being: BeingId,
    name: &str,
    ask: &MemoryAsk,
    known: &SummonsesKnown,
) -> Result<Json, MemoryViewError> {
    let (cursor, land_len) = cursor_asked(store, ask)?;
    let fold = fold_memory_knowing(store, being, name, cursor, known)?;
    Ok(memory_json_of(&fold, being, name, ask, cursor, land_len))
}

/// The cursor `ask` is at, and the land's length.
fn cursor_asked(store: &dyn Store, ask: &MemoryAsk) -> Result<(u64, u64), MemoryViewError> {
    if ask.count == 0 || ask.count > RECALL_ITEMS_MAX {
        return Err(MemoryViewError::Count { count: ask.count });
    }
    let land_len = store.land_len()?;
    match ask.at {
        Some(at) if at > land_len => Err(MemoryViewError::PastTheEnd { at, land_len }),
        Some(at) => Ok((at, land_len)),
        None => Ok((land_len, land_len)),
    }
}

fn memory_json_of(fold: &MemoryFold, being: BeingId, name: &str, ask: &MemoryAsk, cursor: u64, land_len: u64) -> Json {
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
    json!({"being": being.to_hex(), "name": name, "at": cursor, "landLength": land_len,
           "importanceSinceReflection": fold.memory.importance_since_reflection(),
           "items": items, "recall": recall, "problems": problems})
}
