//! The land's configuration as a person reads it (`seed config`, the
//! portal's config page): each key with its unit, range, default, the value
//! in force and the fact that set it. The values are the world's (folded
//! from facts, as a moment reads them); which fact set each is read off the
//! land log, newest last, so the answer cites it.

use crate::config::{ConfigKey, CONFIG_KEYS};
use crate::fact::body::{GenesisBody, KIND_GENESIS};
use crate::fact::{BeingId, Fact, FactId};
use crate::store::Store;
use crate::world::body::{Effect, WorldBody, KIND_ACT, KIND_WORLD};
use crate::world::{ActBody, World};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

/// The fact that last set a configuration value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetBy {
    pub fact: FactId,
    pub land_seq: u64,
    /// The being whose reel holds it (its name, when known).
    pub being: String,
    pub time_ms: u64,
}

/// Which fact last set each configuration value, read from the whole land
/// log (every act's and every planting's `set-config` effects).
pub fn set_by(store: &dyn Store) -> Result<BTreeMap<String, SetBy>, crate::engine::EngineError> {
    let mut names: BTreeMap<BeingId, String> = BTreeMap::new();
    let mut last: BTreeMap<String, SetBy> = BTreeMap::new();
    let end = store.land_len()?;
    crate::engine::for_each_land_fact(store, 0, end, |land_seq, fact: Fact| {
        let effects = match fact.kind() {
            KIND_GENESIS => {
                if let Ok(genesis) = fact.body_as::<GenesisBody>() {
                    names.insert(fact.header.being, genesis.name);
                }
                return;
            }
            KIND_ACT => fact.body_as::<ActBody>().map(|act| act.effects).unwrap_or_default(),
            KIND_WORLD => fact.body_as::<WorldBody>().map(|body| body.effects).unwrap_or_default(),
            _ => return,
        };
        for effect in effects {
            if let Effect::SetConfig { key, .. } = effect {
                let being = names.get(&fact.header.being).cloned().unwrap_or_else(|| fact.header.being.to_hex());
                let by = SetBy { fact: fact.id(), land_seq, being, time_ms: fact.header.stored_time_ms };
                last.insert(key, by);
            }
        }
    })?;
    Ok(last)
}

fn set_by_json(by: Option<&SetBy>) -> Json {
    by.map_or(
        Json::Null,
        |by| json!({"fact": by.fact.to_hex(), "landSeq": by.land_seq, "being": by.being, "timeMs": by.time_ms}),
    )
}

fn key_json(key: &ConfigKey, world: &World, by: Option<&SetBy>) -> Json {
    let value = world.config.get(key.name).and_then(Json::as_u64);
    json!({
        "key": key.name,
        "unit": key.unit,
        "about": key.about,
        "default": key.default,
        "min": key.min,
        "max": key.max,
        "value": value.unwrap_or(key.default),
        "isDefault": value.is_none(),
        "setBy": if value.is_some() { set_by_json(by) } else { Json::Null },
    })
}

/// The configuration of `world` (at `world.cursor`), each key with the fact
/// that set it; the values set some other way (`budgets`, …) under `other`.
pub fn config_json(world: &World, set_by: &BTreeMap<String, SetBy>) -> Json {
    let keys: Vec<Json> = CONFIG_KEYS.iter().map(|key| key_json(key, world, set_by.get(key.name))).collect();
    let other: Vec<Json> = world
        .config
        .iter()
        .filter(|(name, _)| crate::config::key_named(name).is_none())
        .map(|(name, value)| json!({"key": name, "value": value, "setBy": set_by_json(set_by.get(name))}))
        .collect();
    json!({"landSeq": world.cursor, "keys": keys, "other": other})
}

/// One key's line for a terminal.
/// Characters of the key's column in `seed config` (the longest key's).
pub const CONFIG_KEY_COLUMN_CHARS: usize = 40;

pub fn key_line(key: &Json) -> String {
    let value = &key["value"];
    let source = match key["setBy"].as_object() {
        Some(by) => format!(
            "set by @{} at land seq {} (fact {})",
            by["being"].as_str().unwrap_or_default(),
            by["landSeq"],
            by["fact"].as_str().map_or("", |fact| &fact[..fact.len().min(16)])
        ),
        None => "default".to_string(),
    };
    format!(
        "{:<width$} {:>12}  {} ({} to {}; default {})  {}",
        key["key"].as_str().unwrap_or_default(),
        value,
        key["unit"].as_str().unwrap_or_default(),
        key["min"],
        key["max"],
        key["default"],
        source,
        width = CONFIG_KEY_COLUMN_CHARS
    )
}
