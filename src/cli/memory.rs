//! `seed memory @name [--at SEQ] [--query TEXT] [--count N] [--json]`: a
//! being's memory as it stood at a land cursor, folded from the land log
//! (`memory::MemoryFold`): its acts, the summons sent to it, its notes and
//! what superseded each; with `--query`, what recall ranks first for it,
//! with every part of every score. It writes nothing.

use super::print_json;
use anyhow::{bail, Result};
use seed::fact::{Fact, FactId};
use seed::land::Land;
use seed::memory::recall::RECALL_ITEMS_MAX;
use seed::memory::{MemoryFold, MemoryKind, RecallQuery};
use seed::world::{ActBody, World};
use serde_json::{json, Value as Json};
use std::process::ExitCode;

/// Land log entries read at a time.
const MEMORY_READ_FACTS: u64 = 4_096;

pub struct MemoryArguments<'a> {
    pub being: &'a str,
    pub at: Option<u64>,
    pub query: Option<&'a str>,
    pub count: usize,
    pub json: bool,
}

/// Folds the land log below `cursor` into `being`'s memory.
fn fold_memory(land: &Land, being: seed::fact::BeingId, name: &str, cursor: u64) -> Result<MemoryFold> {
    let mut fold = MemoryFold::of(being, name);
    let mut world = World::new();
    let mut from = 0;
    while from < cursor {
        let to = (from + MEMORY_READ_FACTS).min(cursor);
        for (entry, envelope) in land.store().land_log_with_envelopes(from, to)? {
            let fact = Fact::decode_envelope(&envelope)?;
            if fact.kind() == seed::world::body::KIND_ACT {
                if let Ok(act) = fact.body_as::<ActBody>() {
                    let actor = world.name_of(&entry.being).unwrap_or("?").to_string();
                    fold.apply_act(entry.land_seq, entry.being, &actor, fact.id(), &act);
                }
            }
            world.apply(entry.land_seq, &fact);
        }
        from = to;
    }
    Ok(fold)
}

pub fn memory(land: &Land, arguments: MemoryArguments<'_>) -> Result<ExitCode> {
    if arguments.count == 0 || arguments.count > RECALL_ITEMS_MAX {
        bail!("--count must be from 1 to {RECALL_ITEMS_MAX}, not {}", arguments.count);
    }
    let being = land.resolve(arguments.being)?;
    let name = land.genesis(&being)?.name;
    let land_len = land.store().land_len()?;
    let cursor = match arguments.at {
        Some(at) if at > land_len => bail!("--at {at} is past the land's end: it holds {land_len} facts"),
        Some(at) => at,
        None => land_len,
    };
    let fold = fold_memory(land, being, &name, cursor)?;
    let why_of = |fact: &FactId| fold.notes.get(fact).and_then(|note| note.why.clone());
    let items: Vec<Json> = fold
        .memory
        .items(cursor)
        .map(|item| {
            let superseded = item
                .superseded_by
                .map(|(land_seq, by)| json!({"fact": by.to_hex(), "landSeq": land_seq, "why": why_of(&by)}));
            let supersedes = fold.notes.get(&item.fact).and_then(|note| note.supersedes).map(|fact| fact.to_hex());
            json!({"fact": item.fact.to_hex(), "landSeq": item.land_seq, "kind": item.kind.as_str(),
                   "importance": item.importance, "text": item.text, "supersedes": supersedes,
                   "supersededBy": superseded})
        })
        .collect();
    let recalled = arguments.query.map(|text| {
        let kinds = [MemoryKind::Act, MemoryKind::Summons, MemoryKind::Note].into_iter().collect();
        let query = RecallQuery { text: text.to_string(), kinds, count: arguments.count, cursor };
        fold.memory.recall(&query)
    });
    let problems: Vec<Json> = fold
        .problems
        .iter()
        .map(|(fact, problem)| json!({"fact": fact.to_hex(), "reason": problem.to_string()}))
        .collect();
    if arguments.json {
        let recall = recalled.as_ref().map(|recalled| {
            let items: Vec<Json> = recalled
                .iter()
                .map(|item| {
                    json!({"fact": item.fact.to_hex(), "landSeq": item.land_seq, "kind": item.kind.as_str(),
                           "importance": item.importance, "text": &*item.text,
                           "score": {"total": item.score.total, "relevance": item.score.relevance,
                                     "recency": item.score.recency, "importance": item.score.importance}})
                })
                .collect();
            json!({"query": arguments.query, "count": arguments.count, "items": items})
        });
        print_json(&json!({"being": being.to_hex(), "name": name, "at": cursor, "landLength": land_len,
                           "items": items, "recall": recall, "problems": problems}))?;
        return Ok(ExitCode::SUCCESS);
    }
    let count = |kind: MemoryKind| fold.memory.items(cursor).filter(|item| item.kind == kind).count();
    println!(
        "@{name}'s memory at land seq {cursor} of {land_len}: {} acts, {} summons received, {} notes",
        count(MemoryKind::Act),
        count(MemoryKind::Summons),
        count(MemoryKind::Note)
    );
    for item in fold.memory.items(cursor) {
        let mut line = format!(
            "  {:>8}  {:<7}  importance {:>2}  {}  {}",
            item.land_seq,
            item.kind.as_str(),
            item.importance,
            &item.fact.to_hex()[..12],
            item.text
        );
        if let Some((land_seq, by)) = item.superseded_by {
            line.push_str(&format!("  [superseded at land seq {land_seq} by {}", &by.to_hex()[..12]));
            if let Some(why) = why_of(&by) {
                line.push_str(&format!(": {why}"));
            }
            line.push(']');
        }
        println!("{line}");
    }
    if let Some(recalled) = &recalled {
        println!(
            "recall for {:?} (best {} of the items above, superseded notes left out):",
            arguments.query.unwrap_or(""),
            arguments.count
        );
        for item in recalled {
            let score = item.score;
            println!(
                "  {:>5} = relevance {:>4} + recency {:>4} + importance {:>4}  {:>8}  {:<7}  {}",
                score.total,
                score.relevance,
                score.recency,
                score.importance,
                item.land_seq,
                item.kind.as_str(),
                item.text
            );
        }
    }
    for (fact, problem) in &fold.problems {
        println!("  note {}: {problem}", &fact.to_hex()[..12]);
    }
    Ok(ExitCode::SUCCESS)
}
