//! `seed memory @name [--at SEQ] [--query TEXT] [--count N] [--json]`: a
//! being's memory as it stood at a land cursor (`memory_view`, shared with
//! the portal's memory page): its acts, the summons sent to it, its notes and
//! what superseded each; with `--query`, what recall ranks first for it,
//! with every part of every score. It writes nothing.

use super::print_json;
use anyhow::Result;
use seed::land::Land;
use seed::memory_view::{memory_json, MemoryAsk};
use serde_json::Value as Json;
use std::process::ExitCode;

pub fn memory(land: &Land, being: &str, ask: &MemoryAsk, json: bool) -> Result<ExitCode> {
    let being = land.resolve(being)?;
    let name = land.genesis(&being)?.name;
    let shown = memory_json(land.store(), being, &name, ask)?;
    if json {
        print_json(&shown)?;
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", memory_text(&shown));
    Ok(ExitCode::SUCCESS)
}

/// The memory's JSON (docs/json/memory.json) as lines for a terminal.
fn memory_text(shown: &Json) -> String {
    let text = |value: &Json| value.as_str().unwrap_or_default().to_string();
    let short = |value: &Json| value.as_str().map_or(String::new(), |hex| hex.chars().take(12).collect());
    let number = |value: &Json| value.as_u64().unwrap_or(0);
    let items = shown["items"].as_array().cloned().unwrap_or_default();
    let count = |kind: &str| items.iter().filter(|item| item["kind"] == kind).count();
    let reflections = items.iter().filter(|item| item["reflection"] == true).count();
    let mut out = format!(
        "@{}'s memory at land seq {} of {}: {} acts, {} summons received, {} notes ({} reflections); importance since the latest reflection: {}\n",
        text(&shown["name"]),
        shown["at"],
        shown["landLength"],
        count("act"),
        count("summons"),
        count("note"),
        reflections,
        number(&shown["importanceSinceReflection"])
    );
    for item in &items {
        out.push_str(&format!(
            "  {:>8}  {:<7}  importance {:>2}  {}  {}",
            number(&item["landSeq"]),
            text(&item["kind"]),
            number(&item["importance"]),
            short(&item["fact"]),
            text(&item["text"])
        ));
        let by = &item["supersededBy"];
        if !by.is_null() {
            out.push_str(&format!("  [superseded at land seq {} by {}", by["landSeq"], short(&by["fact"])));
            if let Some(why) = by["why"].as_str() {
                out.push_str(&format!(": {why}"));
            }
            out.push(']');
        }
        if let Some(covers) = item["covers"].as_array().filter(|covers| !covers.is_empty()) {
            out.push_str(&format!("  [a reflection covering {} items]", covers.len()));
        }
        let covered = &item["coveredBy"];
        if !covered.is_null() {
            out.push_str(&format!("  [covered by {} at land seq {}]", short(&covered["fact"]), covered["landSeq"]));
        }
        out.push('\n');
    }
    if let Some(recall) = shown["recall"].as_object() {
        out.push_str(&format!(
            "recall for {} (the best {}; superseded notes left out):\n",
            recall["query"], recall["count"]
        ));
        for item in recall["items"].as_array().into_iter().flatten() {
            let score = &item["score"];
            out.push_str(&format!(
                "  {:>5} = relevance {:>4} + recency {:>4} + importance {:>4}  {:>8}  {:<7}  {}\n",
                number(&score["total"]),
                number(&score["relevance"]),
                number(&score["recency"]),
                number(&score["importance"]),
                number(&item["landSeq"]),
                text(&item["kind"]),
                text(&item["text"])
            ));
        }
    }
    for problem in shown["problems"].as_array().into_iter().flatten() {
        out.push_str(&format!("  note {}: {}\n", short(&problem["fact"]), text(&problem["reason"])));
    }
    out
}
