//! `seed health [--json]`: whether the land is tripped by its health
//! breaker, which sign tripped it with every reading, and its latest
//! revival; `seed health revive [--json]`: the operator revives a tripped
//! land (a world fact). Reviving needs the land stopped, as `seed config
//! set` does: a running land is revived from its portal's health page
//! (docs/health.md).

use super::print_json;
use anyhow::{bail, Result};
use seed::engine::EngineError;
use seed::health::{revival_in, trip_in, trip_line};
use seed::land::Land;
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

pub fn show(land: &Land, json: bool) -> Result<ExitCode> {
    let configuration = seed::engine::configuration_at_end(land)?;
    let (trip, revived) = (trip_in(&configuration.values), revival_in(&configuration.values));
    let land_seq = configuration.land_seq;
    if json {
        print_json(&json!({
            "landSeq": land_seq,
            "tripped": trip.is_some(),
            "trip": trip,
            "revived": revived,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    match &trip {
        Some(trip) => {
            println!("tripped at land seq {land_seq}: {}", trip_line(trip));
            for reading in &trip.readings {
                println!(
                    "  {:<24} {:>12} of {:<12} weight {:>5}‰  part {:>6}‰",
                    reading.sign, reading.value, reading.threshold, reading.weight_permille, reading.part_permille
                );
            }
        }
        None => println!("running (not tripped) at land seq {land_seq}"),
    }
    if let Some(revived) = &revived {
        println!(
            "last revived by @{} at stored time {} ms, after a trip by {}",
            revived.by, revived.at_ms, revived.trip.sign
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn revive(land_dir: &Path, store: &seed::land::StoreLocation, json: bool) -> Result<ExitCode> {
    let mut engine = super::up::stopped_land_engine(land_dir, store, "revive it from its portal's health page")?;
    let revival = match engine.revive("operator") {
        Ok(revival) => revival,
        Err(EngineError::NotTripped) => {
            bail!("the land at {} is not tripped: there is nothing to revive", land_dir.display())
        }
        Err(error) => return Err(error.into()),
    };
    let land_seq = engine.world.cursor.saturating_sub(1);
    if json {
        print_json(&json!({"ok": true, "revived": revival, "landSeq": land_seq}))?;
    } else {
        println!(
            "revived by @operator at land seq {land_seq} (it was tripped by {}); its signs are counted afresh",
            revival.trip.sign
        );
    }
    Ok(ExitCode::SUCCESS)
}
