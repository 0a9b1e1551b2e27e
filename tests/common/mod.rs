//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod postgres;

use seed::clock::LogicalClock;
use seed::fact::body::{Cognition, NoteBody, KIND_NOTE};
use seed::land::{BeingSpec, Land, PlantReport, Sealed};
use seed::limits::Limits;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

/// A land planted in a fresh temporary folder, on a logical clock.
pub struct TestLand {
    pub dir: tempfile::TempDir,
    pub land: Land,
    pub report: PlantReport,
}

impl TestLand {
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("land")
    }
}

/// Every schema of this build, shared by the tests of one binary.
static CORE_SCHEMAS: seed::world::CoreSchemas = seed::world::CoreSchemas::new();

/// The rules `seed verify` holds a land with the default limits to.
/// A simulation of one thread, no model and no trace, planting its land at `land_dir`.
pub fn simulation_options(land_dir: PathBuf) -> seed::engine::EngineOptions {
    seed::engine::EngineOptions {
        snapshot_every_facts: None,
        snapshot_spacing_step_bytes: None,
        store: Default::default(),
        ticks: None,
        seed: 0,
        threads: 1,
        land_dir,
        trace_file: None,
        progress: std::sync::Arc::new(seed::progress::NoProgress),
        model: None,
        mode: seed::engine::Mode::Simulation,
    }
}

/// The court (fixtures/court.toml) with `config` lines added to its
/// `[config]`, written as `DIR/fixtures/court.toml` beside links to the
/// roles, extensions and scripts it names, so it loads as the court does.
pub fn court_with_config(dir: &Path, config: &str) -> PathBuf {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(dir.join("fixtures")).expect("a folder");
    for shared in ["roles", "extensions", "fixtures/roles", "fixtures/scripts"] {
        std::os::unix::fs::symlink(repository.join(shared), dir.join(shared)).expect("linked");
    }
    let court = std::fs::read_to_string(repository.join("fixtures/court.toml")).expect("the court");
    let fixture = dir.join("fixtures/court.toml");
    std::fs::write(&fixture, format!("{court}\n[config]\n{config}\n")).expect("written");
    fixture
}

/// `seed verify` passes on `land` and `seed replay --all` recomputes every
/// stored act with no divergence.
pub fn assert_verifies_and_replays_clean(land: &Path) {
    assert_configuration_folds_as_the_worlds(land);
    let verified = seed(land, &["verify"]);
    assert!(verified.status.success(), "verify: {}{}", stdout(&verified), stderr(&verified));
    let replayed = seed(land, &["replay", "--all", "--json"]);
    assert!(replayed.status.success(), "replay --all: {}{}", stdout(&replayed), stderr(&replayed));
    let report: serde_json::Value = serde_json::from_str(&stdout(&replayed)).expect("JSON");
    assert_eq!(report["divergences"], 0, "{report}");
}

/// The configuration `seed config` and `seed health` fold, passing over
/// the acts that change only their actor's activity, is the configuration
/// of the world folded from genesis, every fact (`configuration_at_end`'s
/// differential test, on every land a test verifies; a snapshot it starts
/// from is held to the fold too).
pub fn assert_configuration_folds_as_the_worlds(land: &Path) {
    let opened = seed::land::Land::open_read_only(land).expect("the land opens");
    let mut world = seed::world::World::new();
    seed::engine::fold_to_end(opened.store(), &mut world).expect("the world");
    let configuration = seed::engine::configuration_at_end(&opened).expect("the configuration");
    assert_eq!(configuration, seed::config_view::Configuration::of_world(&world), "{}", land.display());
}

pub fn core_rules() -> seed::check::BodyRules<'static> {
    CORE_SCHEMAS.rules(&Limits::default())
}

pub fn plant() -> TestLand {
    plant_on(Backend::Folder)
}

/// Where a test land keeps its facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The land folder's own log store.
    Folder,
    /// A fresh database on the run's throwaway PostgreSQL cluster.
    Postgres,
}

impl Backend {
    /// A store location of this backend for a new land.
    pub fn location(self) -> seed::land::StoreLocation {
        match self {
            Backend::Folder => seed::land::StoreLocation::Folder,
            Backend::Postgres => seed::land::StoreLocation::Postgres { url: postgres::fresh_database() },
        }
    }
}

pub fn plant_on(backend: Backend) -> TestLand {
    let dir = tempfile::tempdir().expect("temporary folder");
    let (land, report) = Land::plant_in(
        &dir.path().join("land"),
        Arc::new(LogicalClock::starting_at(1_700_000_000_000)),
        Limits::default(),
        seed::land::KeySource::Os,
        &backend.location(),
    )
    .expect("plant");
    TestLand { dir, land, report }
}

pub fn spec(name: &str) -> BeingSpec {
    BeingSpec {
        name: name.to_string(),
        parent: None,
        cognition: Cognition::Scripted,
        role_flow: Vec::new(),
        default_role: "worker".to_string(),
        home_space: "/".to_string(),
    }
}

/// An act body as a moment writes one (a see, woken by a tick).
pub fn act_body() -> seed::world::ActBody {
    let digest = |byte: u8| seed::fact::Hash32([byte; 32]);
    seed::world::ActBody {
        llm: None,
        call: seed::world::VerbCall::See { address: "/".into() },
        wake: seed::world::Wake::Tick { tick: 1 },
        stack: Vec::new(),
        budget: None,
        panel: None,
        recall_query: None,
        gate: None,
        tool: None,
        cursor: 0,
        content: None,
        digests: seed::world::body::Digests {
            face: digest(1),
            context: digest(2),
            composed: digest(3),
            script_output: None,
        },
        effects: Vec::new(),
        primary: None,
        evaluator: "seed test".into(),
        importance: None,
        orientation: "here".into(),
    }
}

pub fn note(land: &Land, being: &seed::fact::BeingId, text: &str) -> Sealed {
    land.seal_body(being, KIND_NOTE, &NoteBody { text: text.to_string() }).expect("seal note")
}

/// The `seed` binary against a land folder, not yet run.
pub fn seed_command(land: &Path, arguments: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_seed"));
    command.arg("--land").arg(land).args(arguments).env_remove("SEED_LAND").env_remove("SEED_STORE");
    command
}

/// Runs the `seed` binary against a land folder.
pub fn seed(land: &Path, arguments: &[&str]) -> Output {
    seed_command(land, arguments).output().expect("run seed")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every file under `dir` with its bytes, in path order: a checksum of a land.
pub fn folder_snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).expect("read folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).expect("read file")));
            }
        }
    }
    files.sort();
    files
}
pub mod portal;
pub mod webdriver;

/// Flips one bit of the envelope stored for `being`'s fact at `seq`,
/// `from_end` bytes before its end (the last 64 bytes are the signature),
/// its frame's check made to match (an attacker who knows the format).
pub fn flip_stored_byte(land: &Path, being: &str, seq: u64, from_end: usize) {
    let opened = Land::open(land).expect("open");
    let id = opened.resolve(being).expect("being");
    let store = opened.surgery();
    let mut envelope = store.stored_envelope(&id, seq).expect("read").expect("the fact is stored");
    let at = envelope.len() - from_end;
    envelope[at] ^= 0x01;
    store.overwrite_envelope_unchecked(&id, seq, &envelope).expect("write");
    opened.close().expect("close");
}

/// Rewrites a closed land in the layout of earlier builds: its facts in a
/// sled store (`store/`), appended in land order through the sled backend
/// those builds used, and no `log/`.
pub fn rewrite_as_sled_land(path: &Path) {
    use seed::store::Store;
    let log = seed::store::LogStore::open_read_only(&path.join("log"), None).expect("log store");
    let sled = seed::store::SledStore::open(&path.join("store"), None, &Limits::default()).expect("sled store");
    let len = log.land_len().expect("length");
    for entry in log.land_log(0, len).expect("land log") {
        let stored = log.fact_at(&entry).expect("read").expect("stored");
        sled.append(stored.fact).expect("append to sled");
    }
    sled.close().expect("close");
    drop(sled);
    drop(log);
    std::fs::remove_dir_all(path.join("log")).expect("remove log/");
}

/// A blocking HTTP client builder for the tests' own requests, with the
/// process's TLS crypto provider installed first (the client is built
/// without one of its own: seed_portal::tls).
pub fn blocking_http() -> reqwest::blocking::ClientBuilder {
    seed_portal::tls::install_crypto_provider();
    reqwest::blocking::Client::builder()
}

/// Copies the fixtures, core roles and extensions into `into`, keeping their
/// relative layout, so a definition can be edited without touching the tree.
pub fn copy_definitions(into: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for folder in ["fixtures", "roles", "extensions"] {
        copy_tree(&root.join(folder), &into.join(folder));
    }
}

pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let path = entry.expect("entry").path();
        let target = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy");
        }
    }
}
