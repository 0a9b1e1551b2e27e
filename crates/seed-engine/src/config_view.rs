//! The land's configuration as a person reads it (`seed config`, the
//! portal's config page): each key with its unit, range, default, the value
//! in force and the fact that set it. The values are the world's (folded
//! from facts, as a moment reads them), and so is which fact set each
//! (`World::config_set_by`), so the answer cites it without reading the
//! land log.

use crate::config::{ConfigKey, CONFIG_KEYS};
use crate::fact::FactId;
use crate::world::World;
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

/// The land's configuration at one land seq, as a person reads it: the
/// values in force and the fact that last set each.
#[derive(Debug, Clone, PartialEq)]
pub struct Configuration {
    /// The land seq it stands at (the cursor of the world it was read from).
    pub land_seq: u64,
    /// Every value set and in force, by key (a key at its default has none).
    pub values: BTreeMap<String, Json>,
    /// The fact that last set each value.
    pub set_by: BTreeMap<String, SetBy>,
}

impl Configuration {
    /// The configuration of `world`, at its cursor.
    pub fn of_world(world: &World) -> Configuration {
        Configuration { land_seq: world.cursor, values: world.config.clone(), set_by: set_by(world) }
    }
}

/// Which fact last set each configuration value: the world's
/// `config_set_by`, folded with the values, each being named as the world
/// knows it (its id in hex once its row is gone).
pub fn set_by(world: &World) -> BTreeMap<String, SetBy> {
    world
        .config_set_by
        .iter()
        .map(|(key, by)| {
            let being = world.name_of(&by.being).map_or_else(|| by.being.to_hex(), str::to_string);
            (key.clone(), SetBy { fact: by.fact, land_seq: by.land_seq, being, time_ms: by.time_ms })
        })
        .collect()
}

fn set_by_json(by: Option<&SetBy>) -> Json {
    by.map_or(
        Json::Null,
        |by| json!({"fact": by.fact.to_hex(), "landSeq": by.land_seq, "being": by.being, "timeMs": by.time_ms}),
    )
}

fn key_json(key: &ConfigKey, values: &BTreeMap<String, Json>, by: Option<&SetBy>) -> Json {
    let value = values.get(key.name).and_then(Json::as_u64);
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

/// `configuration`, each key with the fact that set it; the values set
/// some other way (`budgets`, …) under `other`.
pub fn config_json(configuration: &Configuration) -> Json {
    let Configuration { land_seq, values, set_by } = configuration;
    let keys: Vec<Json> = CONFIG_KEYS.iter().map(|key| key_json(key, values, set_by.get(key.name))).collect();
    let other: Vec<Json> = values
        .iter()
        .filter(|(name, _)| crate::config::key_named(name).is_none())
        .map(|(name, value)| json!({"key": name, "value": value, "setBy": set_by_json(set_by.get(name))}))
        .collect();
    json!({"landSeq": land_seq, "keys": keys, "other": other})
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
