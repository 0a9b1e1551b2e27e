//! `seed corpus capture` and `seed corpus check`: the replay corpus in
//! `replay/` (see crates/seed-engine/src/replay/corpus.rs for the capture format).

use anyhow::{bail, Context, Result};
use seed::engine::fixture::Fixture;
use seed::land::StoreLocation;
use seed::replay::corpus::{load_capture, read_capture, write_capture, CAPTURE_FORMAT_VERSION};
use seed::store::Store;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Threads a corpus capture or check runs moments on (results do not depend on it).
const CORPUS_THREADS: usize = 2;

/// `replay/NAME.toml`: how a capture was made and what it must replay to.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    /// The fixture whose definitions the land's moments used, relative to the manifest.
    fixture: PathBuf,
    seed: u64,
    ticks: u64,
    /// The capture file, relative to the manifest.
    capture: PathBuf,
    format: u64,
    expected: Expected,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Expected {
    facts: u64,
    moments: u64,
    land_digest: String,
    world_hash: String,
    /// The evaluator that sealed the captured moments.
    evaluator: String,
}

pub fn capture(fixture_path: &Path, name: &str, ticks: Option<u64>, seed: u64, dir: &Path) -> Result<ExitCode> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        bail!("--name {name:?}: use letters, digits, '-' and '_' only");
    }
    let fixture = Fixture::load(fixture_path)?;
    let ticks = ticks.unwrap_or(fixture.ticks);
    std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    let scratch = tempfile::tempdir()?;
    let land_dir = scratch.path().join("land");
    let options = seed::engine::EngineOptions {
        snapshot_every_facts: None,
        snapshot_spacing_step_bytes: None,
        store: Default::default(),
        ticks: Some(ticks),
        seed,
        threads: CORPUS_THREADS,
        land_dir: land_dir.clone(),
        trace_file: None,
        progress: std::sync::Arc::new(seed::progress::NoProgress),
        model: None,
        mode: seed::engine::Mode::Simulation,
    };
    let summary = seed::engine::simulate(&fixture, &options)?;
    let land = seed::land::Land::open(&land_dir)?;
    let capture_file = format!("{name}.land");
    let mut bytes = Vec::new();
    let land_digest = write_capture(land.store(), &mut bytes)?;
    let facts = land.store().land_len()?;
    land.close()?;
    let moments = summary.acts.values().sum();
    let fixture_relative = relative_to(dir, fixture_path)?;
    let manifest = Manifest {
        fixture: fixture_relative,
        seed,
        ticks,
        capture: PathBuf::from(&capture_file),
        format: CAPTURE_FORMAT_VERSION,
        expected: Expected {
            facts,
            moments,
            land_digest: land_digest.to_hex(),
            world_hash: summary.world_hash.to_hex(),
            evaluator: seed::moment::EVALUATOR_VERSION.to_string(),
        },
    };
    std::fs::write(dir.join(&capture_file), bytes).with_context(|| format!("writing {capture_file}"))?;
    let header = "# A replay corpus entry: written by `seed corpus capture`; see docs/replay.md.\n";
    std::fs::write(dir.join(format!("{name}.toml")), format!("{header}{}", toml::to_string(&manifest)?))
        .with_context(|| format!("writing {name}.toml"))?;
    println!(
        "captured {name}: {} ticks of {}, {facts} facts, {moments} moments, land {}",
        ticks,
        fixture.name,
        land_digest.short()
    );
    Ok(ExitCode::SUCCESS)
}

/// `target` as a path relative to the folder `from` (both made absolute).
fn relative_to(from: &Path, target: &Path) -> Result<PathBuf> {
    let from = from.canonicalize().with_context(|| format!("{}", from.display()))?;
    let target = target.canonicalize().with_context(|| format!("{}", target.display()))?;
    let common = from.components().zip(target.components()).take_while(|(a, b)| a == b).count();
    let mut relative = PathBuf::new();
    for _ in from.components().skip(common) {
        relative.push("..");
    }
    for component in target.components().skip(common) {
        relative.push(component);
    }
    Ok(relative)
}

/// `seed corpus check`: each capture is loaded into a scratch store of the
/// kind `store` names (a folder's log store in a temporary folder, or a
/// scratch schema in the PostgreSQL database, dropped after) and replayed.
pub fn check(dir: &Path, only: Option<&str>, store: &StoreLocation, json: bool) -> Result<ExitCode> {
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|extension| extension == "toml"))
        .filter(|path| only.is_none_or(|name| path.file_stem().is_some_and(|stem| stem == name)))
        .collect();
    manifests.sort();
    if manifests.is_empty() {
        bail!("no corpus entries (NAME.toml) in {}", dir.display());
    }
    if matches!(store, StoreLocation::Postgres { .. }) {
        // A database that cannot hold a scratch store is one error, not a
        // failure of every entry.
        ScratchStore::open(store, manifests.len())?.remove()?;
    }
    let mut failed = 0;
    let mut entries = Vec::new();
    for (index, manifest_path) in manifests.iter().enumerate() {
        let problems = match check_one(manifest_path, store, index) {
            Ok(problems) => problems,
            Err(error) => vec![format!("{error:#}")],
        };
        failed += usize::from(!problems.is_empty());
        if json {
            entries
                .push(serde_json::json!({"manifest": manifest_path, "ok": problems.is_empty(), "problems": problems}));
        } else if problems.is_empty() {
            println!("ok      {}", manifest_path.display());
        } else {
            println!("FAILED  {}", manifest_path.display());
            for line in problems {
                println!("        {line}");
            }
        }
    }
    if json {
        let value = serde_json::json!({"checked": manifests.len(), "failed": failed, "entries": entries});
        super::print_json(&value)?;
    } else {
        println!(
            "{} corpus entr{} checked, {failed} failed",
            manifests.len(),
            if manifests.len() == 1 { "y" } else { "ies" }
        );
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// A store to load one capture into, removed when dropped (the folder) or
/// by `remove` (the PostgreSQL schema).
enum ScratchStore {
    Folder { _dir: tempfile::TempDir, store: seed::store::LogStore },
    Postgres(Box<seed::store::PgStore>),
}

impl ScratchStore {
    fn open(location: &StoreLocation, index: usize) -> Result<ScratchStore> {
        let limits = seed::limits::Limits::default();
        Ok(match location {
            StoreLocation::Folder => {
                let dir = tempfile::tempdir()?;
                let store = seed::store::LogStore::open(&dir.path().join("store"), None, &limits)
                    .map_err(|error| anyhow::anyhow!("a scratch store: {error}"))?;
                ScratchStore::Folder { _dir: dir, store }
            }
            StoreLocation::Postgres { url } => {
                let schema = format!("seed_corpus_scratch_{}_{index}", std::process::id());
                ScratchStore::Postgres(Box::new(seed::store::PgStore::open_scratch(url, &schema, &limits)?))
            }
        })
    }

    fn store(&self) -> &dyn Store {
        match self {
            ScratchStore::Folder { store, .. } => store,
            ScratchStore::Postgres(store) => store.as_ref(),
        }
    }

    fn remove(self) -> Result<()> {
        match self {
            ScratchStore::Folder { .. } => Ok(()),
            ScratchStore::Postgres(store) => Ok(store.drop_scratch()?),
        }
    }
}

/// What differs from the manifest's expectations (empty: all as expected).
fn check_one(manifest_path: &Path, location: &StoreLocation, index: usize) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(manifest_path)?;
    let manifest: Manifest = toml::from_str(&text).context("the manifest")?;
    let base = manifest_path.parent().unwrap_or(Path::new("."));
    let fixture = Fixture::load(&base.join(&manifest.fixture))?;
    let (checked, read) = seed::engine::definitions::check_world_recording(&fixture, &[])?;
    let substrate = checked.substrate;
    let capture_path = base.join(&manifest.capture);
    let bytes = std::fs::read(&capture_path).with_context(|| format!("{}", capture_path.display()))?;
    let envelopes = read_capture(&bytes).with_context(|| format!("{}", capture_path.display()))?;
    let scratch = ScratchStore::open(location, index)?;
    let checked = check_in(&manifest, &substrate, &read, &envelopes, scratch.store());
    scratch.remove()?;
    checked
}

fn check_in(
    manifest: &Manifest,
    substrate: &seed::moment::Substrate,
    read: &seed::definitions::DefinitionFiles,
    envelopes: &[Vec<u8>],
    store: &dyn Store,
) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let land_digest = load_capture(envelopes, store)?;
    if land_digest.to_hex() != manifest.expected.land_digest {
        problems.push(format!(
            "land digest {} where {} was captured",
            land_digest.to_hex(),
            manifest.expected.land_digest
        ));
    }
    let facts = store.land_len()?;
    if facts != manifest.expected.facts {
        problems.push(format!("{facts} facts where {} were captured", manifest.expected.facts));
    }
    // Today's files for every moment, the corpus's point: a change that
    // reinterprets history shows, naming the files that differ.
    let definitions = seed::replay::ReplayDefinitions::files(store, substrate, Some(read));
    let report = seed::replay::land::replay_land(
        store,
        &definitions,
        CORPUS_THREADS,
        None,
        &Default::default(),
        &seed::progress::NoProgress,
    )?;
    problems.extend(report.problems.iter().map(|problem| format!("verify: {problem}")));
    for (being, divergence) in &report.divergences {
        let fields: Vec<&str> = divergence.differences.iter().map(|difference| difference.field.as_str()).collect();
        problems.push(format!(
            "moment #{} of {} (land {}) diverges: {} [{}]",
            divergence.seq,
            being.short(),
            divergence.land_seq,
            divergence.cause.label(),
            fields.join(", ")
        ));
    }
    if report.moments != manifest.expected.moments {
        problems.push(format!("{} moments replayed where {} were captured", report.moments, manifest.expected.moments));
    }
    let mut world = seed::world::World::new();
    seed::engine::fold_to_end(store, &mut world)?;
    let world_hash = seed::engine::world_hash(&world, store)?;
    if world_hash.to_hex() != manifest.expected.world_hash {
        problems.push(format!(
            "world hash {} where {} was captured",
            world_hash.to_hex(),
            manifest.expected.world_hash
        ));
    }
    Ok(problems)
}
