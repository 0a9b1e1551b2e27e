//! `seed config [--json]`: the land's configuration keys, each with its
//! unit, range, default, the value in force and the fact that set it;
//! `seed config set KEY VALUE`: one key set (or `default`) by an act of the
//! operator (`do set-config`), in force from the next moment
//! (docs/config.md). Setting needs the land stopped, as `seed token` does:
//! a running land is set from its portal's config page.

use super::print_json;
use anyhow::{bail, Result};
use seed::config_view::{config_json, key_line};
use seed::land::Land;
use seed::moment::PersonChoice;
use seed::world::{VerbCall, Wake};
use serde_json::{json, Value as Json};
use std::path::Path;
use std::process::ExitCode;

pub fn show(land: &Land, json: bool) -> Result<ExitCode> {
    let view = config_json(&seed::engine::configuration_at_end(land)?);
    if json {
        print_json(&view)?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("configuration at land seq {}", view["landSeq"]);
    for key in view["keys"].as_array().into_iter().flatten() {
        println!("{}", key_line(key));
    }
    for other in view["other"].as_array().into_iter().flatten() {
        let name = other["key"].as_str().unwrap_or_default();
        println!(
            "{name:<width$} (set another way) {}",
            other["value"],
            width = seed::config_view::CONFIG_KEY_COLUMN_CHARS
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn set(land_dir: &Path, store: &seed::land::StoreLocation, key: &str, value: &str, json: bool) -> Result<ExitCode> {
    // The key and value are checked before the land is opened: a mistake
    // names itself and touches nothing.
    let config_key = seed::config::key_for_setting(key)?;
    let parsed = seed::config::parse_value(config_key, value)?;
    let mut engine = super::up::stopped_land_engine(land_dir, store, "set it from its portal's config page")?;
    let before = engine.world.config.get(config_key.name).and_then(Json::as_u64);
    let operator = engine.land.operator();
    let call = VerbCall::Do {
        target: "/".into(),
        action: "set-config".into(),
        args: json!({"key": config_key.name, "value": parsed}),
    };
    let choice = PersonChoice { call, content: None, importance: None };
    let done = engine.act_as_person(operator, Wake::Person, &choice)?;
    if !done.sealed {
        bail!("the operator's set-config was refused: {}", done.outcome);
    }
    let value = parsed.unwrap_or(config_key.default);
    let land_seq = done.land_seq.unwrap_or_default();
    if json {
        print_json(&json!({
            "ok": true,
            "key": config_key.name,
            "value": value,
            "isDefault": parsed.is_none(),
            "previous": before.unwrap_or(config_key.default),
            "landSeq": land_seq,
        }))?;
    } else {
        let default = if parsed.is_none() { ", its default" } else { "" };
        println!(
            "{} = {value} {}{default} (was {}), sealed by @operator at land seq {land_seq}; in force from the next moment",
            config_key.name,
            config_key.unit,
            before.unwrap_or(config_key.default),
        );
    }
    Ok(ExitCode::SUCCESS)
}
