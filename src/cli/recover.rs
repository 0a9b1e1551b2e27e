//! `seed recover-operator`: gives `@operator` back the roles it was planted
//! with, for a land where it can no longer undo a change to its own roles.
//!
//! The verb layer refuses a change that takes the operation it used away
//! from the acting being in that same moment, but a roleFlow whose
//! conditions move the operator to another role later (a signal, the time
//! of day) can still leave it without `edit-role-flow` and `author-role`.
//! Whoever holds the land folder (its store lock and key ring) is the
//! operator's last resort: this seals, on the reality root's reel, one
//! `world` fact that sets `@operator`'s roleFlow back to its genesis flow
//! and puts back the file definition of every role that flow names (as the
//! land recorded it, docs/definitions.md), in case an authored role shadows it. It is a fact like any other, so it verifies,
//! replays, and shows in the root's reel.

use super::replay::land_definitions;
use anyhow::{bail, Context, Result};
use seed::engine::fixture::Fixture;
use seed::fact::body::GenesisBody;
use seed::land::Land;
use seed::world::body::KIND_WORLD;
use seed::world::{Effect, WorldBody};
use serde_json::Value as Json;
use std::path::Path;
use std::process::ExitCode;

/// The name of the being this command recovers.
const OPERATOR_NAME: &str = "operator";

pub fn recover_operator(land_dir: &Path, fixture: Option<&Path>) -> Result<ExitCode> {
    // The land first: its absence or its lock is the likelier mistake.
    let land = Land::open(land_dir)?;
    // The role files the land recorded in force now (docs/definitions.md),
    // whatever the disk holds; with --fixture, or on an older land that
    // recorded none, the files on the disk.
    let recorded = match fixture {
        Some(_) => None,
        None => seed::engine::definitions::recorded_files_before(&land, land.store().land_len()?)?,
    };
    let (substrate, source) = match recorded {
        Some(files) => {
            let source = format!("the definitions the land recorded ({})", files.set.fixture);
            (seed::engine::definitions::substrate_from_recorded(&files)?, source)
        }
        None => {
            let definitions = land_definitions(land_dir, fixture)?;
            let fixture = Fixture::load(&definitions.fixture)?;
            let source = definitions.fixture.display().to_string();
            (seed::engine::substrate_for(&fixture, &definitions.role_dirs)?.0, source)
        }
    };
    let operator = land.resolve(&format!("@{OPERATOR_NAME}"))?;
    let genesis_fact = land
        .store()
        .reel(&operator, 0, 1)?
        .into_iter()
        .next()
        .with_context(|| format!("@{OPERATOR_NAME} has no genesis fact"))?;
    let genesis: GenesisBody = genesis_fact.fact.body_as().context("@operator's genesis body")?;
    let flow = Json::Array(genesis.role_flow.iter().map(seed::view::cbor_to_json).collect());
    let mut role_names: Vec<String> = flow
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|clause| clause.get("role").and_then(Json::as_str).map(str::to_string))
        .collect();
    role_names.push(genesis.default_role.clone());
    role_names.sort();
    role_names.dedup();
    let mut effects = Vec::new();
    let mut restored = Vec::new();
    for name in &role_names {
        match substrate.roles.get(name) {
            Some(role) => {
                effects.push(Effect::PutRole { name: name.clone(), definition: role.definition_json() });
                restored.push(name.as_str());
            }
            None => eprintln!("note: role {name:?} of @{OPERATOR_NAME}'s planted flow has no file definition here"),
        }
    }
    if restored.is_empty() {
        bail!(
            "none of the roles @{OPERATOR_NAME} was planted with ({}) is defined in {source} or its role folders",
            role_names.join(", "),
        );
    }
    effects.push(Effect::SetRoleFlow { being: OPERATOR_NAME.to_string(), flow });
    let sealed = land.seal_body(&land.root(), KIND_WORLD, &WorldBody { effects })?;
    println!(
        "@{OPERATOR_NAME} wears its planted roleFlow again (default role {}); roles put back from their files: {}",
        genesis.default_role,
        restored.join(", ")
    );
    println!("sealed a world fact on the reality root's reel: seq {} ({})", sealed.seq, sealed.id.short());
    Ok(ExitCode::SUCCESS)
}
