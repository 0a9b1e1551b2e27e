//! The code a moment ran, kept on the land (docs/definitions.md): a role
//! file edited between two runs of one land is sealed as a new definition
//! set before the second run's moments; replay rebuilds the first run's
//! moments from the first set and the second's from the second, even once
//! the files are gone; replayed against today's files instead, the first
//! run's moments diverge and the divergence names the file that changed.

use crate::common::{assert_verifies_and_replays_clean, copy_definitions, seed, stdout};
use seed::world::body::KIND_WORLD;
use seed::world::{Effect, WorldBody};
use std::path::{Path, PathBuf};

/// The definition facts of the land's root reel: for each, how many texts
/// it keeps and whether it records a set.
fn definition_facts(land: &Path) -> Vec<(usize, bool)> {
    let opened = seed::land::Land::open_read_only(land).expect("open");
    let store = opened.store();
    let mut found = Vec::new();
    for stored in store.reel(&opened.root(), 0, u64::MAX).expect("root reel") {
        if stored.fact.kind() != KIND_WORLD {
            continue;
        }
        let body: WorldBody = stored.fact.body_as().expect("a world body");
        let texts = body.effects.iter().filter(|effect| matches!(effect, Effect::DefinitionText { .. })).count();
        let set = body.effects.iter().any(|effect| matches!(effect, Effect::Definitions { .. }));
        if texts > 0 || set {
            found.push((texts, set));
        }
    }
    found
}

/// A second run of the land planted by `seed sim`, with the files as they
/// are now: the land opened again, `rounds` rounds played.
fn run_again(land: &Path, fixture: &Path, rounds: u64) {
    let fixture = seed::engine::fixture::Fixture::load(fixture).expect("fixture");
    let options = crate::common::simulation_options(land.to_path_buf());
    let mut engine = seed::engine::Engine::reopen(&fixture, &options).expect("reopen");
    for _ in 0..rounds {
        engine.round().expect("round");
    }
    engine.finish().expect("finish");
}

fn replay_json(land: &Path, arguments: &[&str]) -> (Option<i32>, serde_json::Value) {
    let output = seed(land, arguments);
    let text = stdout(&output);
    let last = text.lines().last().unwrap_or_default().to_string();
    (output.status.code(), serde_json::from_str(&last).unwrap_or_else(|_| panic!("JSON: {text}")))
}

/// The court copied into a scratch folder and simulated `ticks` rounds into
/// a land there: the folder, the copied files, the fixture and the land.
fn court_simulated(ticks: u64) -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("folder");
    let files = dir.path().join("definitions");
    copy_definitions(&files);
    let fixture: PathBuf = files.join("fixtures/court.toml");
    let land = dir.path().join("land");
    let (fixture_text, land_text) = (fixture.to_str().expect("utf-8"), land.to_str().expect("utf-8"));
    let planted = seed(dir.path(), &["sim", fixture_text, "--land", land_text, "--ticks", &ticks.to_string()]);
    assert!(planted.status.success(), "{}", stdout(&planted));
    (dir, files, fixture, land)
}

#[test]
fn a_role_edited_between_two_runs_replays_with_the_definitions_each_moment_ran() {
    let (_dir, files, fixture, land) = court_simulated(4);
    let fixture_text = fixture.to_str().expect("utf-8");
    let first = definition_facts(&land);
    assert!(first.len() >= 2 && first.last() == Some(&(0, true)), "texts, then the set: {first:?}");
    assert!(first[..first.len() - 1].iter().all(|(texts, set)| *texts > 0 && !set), "{first:?}");

    // The same files again: nothing more is sealed.
    run_again(&land, &fixture, 1);
    assert_eq!(definition_facts(&land), first, "unchanged files are not recorded again");

    let watcher = files.join("fixtures/roles/court-watcher.toml");
    let text = std::fs::read_to_string(&watcher).expect("read");
    let edited = text.replace("keep quiet while it sits", "whisper to the next seat");
    assert_ne!(edited, text, "the edit applies");
    std::fs::write(&watcher, edited).expect("edit");
    run_again(&land, &fixture, 3);
    let second = definition_facts(&land);
    assert_eq!(second.len(), first.len() + 2, "{second:?}");
    assert_eq!(&second[first.len()..], &[(1, false), (0, true)], "only the edited file's text is kept again");

    // Every moment replays with the definitions it ran.
    assert_verifies_and_replays_clean(&land);
    let (code, report) = replay_json(&land, &["replay", "@ada", "--json", "--no-snapshots"]);
    assert_eq!(code, Some(0), "{report}");
    assert!(report["summary"]["moments"].as_u64().expect("moments") >= 4, "{report}");

    // Against today's files, the first run's moments diverge, naming the file.
    let (code, report) = replay_json(&land, &["replay", "@ada", "--json", "--keep-going", "--fixture", fixture_text]);
    assert_eq!(code, Some(1), "{report}");
    let divergences = report["summary"]["divergences"].as_array().expect("divergences");
    assert!(!divergences.is_empty(), "{report}");
    for divergence in divergences {
        let cause = &divergence["cause"];
        assert_eq!(cause["kind"], "definition changed", "{divergence}");
        let changes = cause["files"]["changes"].as_array().expect("the files that changed");
        let named: Vec<(&str, &str)> = changes
            .iter()
            .map(|change| (change["path"].as_str().expect("path"), change["how"].as_str().expect("how")))
            .collect();
        assert_eq!(named, [("roles/court-watcher.toml", "changed")], "{divergence}");
    }
    let text_report = stdout(&seed(&land, &["replay", "--all", "--fixture", fixture_text]));
    assert!(text_report.contains("definition changed"), "{text_report}");

    // The files gone, the land still replays from what it recorded.
    std::fs::remove_dir_all(&files).expect("remove the files");
    assert_verifies_and_replays_clean(&land);
    let (code, report) = replay_json(&land, &["replay", "@ben", "--json"]);
    assert_eq!(code, Some(0), "{report}");
}

/// A land sealed before lands recorded their definitions (the court's
/// replay-corpus capture as it was then, kept in tests/fixtures): replayed
/// with the recorded definitions alone it asks for the fixture, naming the
/// first moment; with the fixture's files it replays as it always did.
#[test]
fn an_older_land_without_definition_facts_replays_with_the_files_as_before() {
    use seed::replay::land::replay_land;
    use seed::replay::{ReplayDefinitions, ReplayError};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(root.join("tests/fixtures/definitions/court-before-definitions.land")).expect("capture");
    let envelopes = seed::replay::corpus::read_capture(&bytes).expect("a capture");
    let dir = tempfile::tempdir().expect("folder");
    let limits = seed::limits::Limits::default();
    let store = seed::store::LogStore::open(&dir.path().join("store"), None, &limits).expect("a store");
    seed::replay::corpus::load_capture(&envelopes, &store).expect("loads");
    let fixture = seed::engine::fixture::Fixture::load(&root.join("fixtures/court.toml")).expect("fixture");
    let (substrate, _) = seed::engine::substrate_for(&fixture, &[]).expect("substrate");
    let (claims, progress) = (Default::default(), seed::progress::NoProgress);

    let without = replay_land(&store, &ReplayDefinitions::recorded(&store, None), 2, None, &claims, &progress);
    match without {
        Err(error @ ReplayError::NoDefinitions { .. }) => {
            assert!(error.to_string().contains("--fixture"), "{error}");
        }
        other => panic!("expected the fixture to be asked for: {other:?}"),
    }
    let with_files = ReplayDefinitions::recorded(&store, Some(&substrate));
    let report = replay_land(&store, &with_files, 2, None, &claims, &progress).expect("replays");
    assert!(report.clean() && report.moments > 0, "{report:?}");
}

/// A definition file too large to keep in one fact is refused before the
/// land is planted, naming the file, its size and the limit: no land folder
/// is left behind.
#[test]
fn a_definition_file_too_large_to_keep_is_refused_before_anything_is_planted() {
    let dir = tempfile::tempdir().expect("folder");
    let files = dir.path().join("definitions");
    copy_definitions(&files);
    let line = format!("// {}\n", "x".repeat(100));
    let script = format!("{}#{{ verb: \"see\", address: \"/court\" }}\n", line.repeat(620));
    std::fs::write(files.join("fixtures/big.rhai"), &script).expect("written");
    let court = std::fs::read_to_string(files.join("fixtures/court.toml")).expect("the court");
    let with_script = court.replacen(
        "name = \"ada\"\nhome = \"/court\"",
        "name = \"ada\"\nhome = \"/court\"\nscript = \"big.rhai\"",
        1,
    );
    assert_ne!(with_script, court, "ada reads the big script");
    std::fs::write(files.join("fixtures/court.toml"), with_script).expect("written");
    let land = dir.path().join("land");
    let fixture = files.join("fixtures/court.toml");
    let output = seed(dir.path(), &["sim", fixture.to_str().expect("utf-8"), "--land", land.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(1));
    let said = crate::common::stderr(&output);
    let expected = format!(
        "the definition file big.rhai is {} bytes; the land keeps definition files of at most 61440 bytes",
        script.len()
    );
    assert!(said.contains(&expected), "{said}");
    assert!(!land.exists(), "nothing was planted");
}

/// A what-if fork plants its sandboxes from the definitions the land
/// recorded in force at the forked moment: a role file edited since changes
/// nothing of the fork, `--fixture` forks against today's files (and names
/// why they do not reproduce the land), and a kept branch with role folders
/// of its own records them, so it replays clean.
#[test]
fn a_fork_runs_the_definitions_the_land_recorded_after_the_files_changed() {
    let (dir, files, fixture, land) = court_simulated(5);
    let fixture_text = fixture.to_str().expect("utf-8");
    let fork = |extra: &[&str]| {
        let mut arguments = vec!["replay", "@ada", "--fork", "1", "--ticks", "3", "--json"];
        arguments.extend_from_slice(extra);
        let output = seed(&land, &arguments);
        (output.status.code(), stdout(&output), crate::common::stderr(&output))
    };
    let (code, before, error) = fork(&[]);
    assert_eq!(code, Some(0), "{before}{error}");
    let report: serde_json::Value = serde_json::from_str(&before).expect("JSON");
    assert!(report["controlDiffersAt"].is_null(), "the control reproduces the land: {report}");

    let watcher = files.join("fixtures/roles/court-watcher.toml");
    let text = std::fs::read_to_string(&watcher).expect("read");
    std::fs::write(&watcher, text.replace("keep quiet while it sits", "whisper to the next seat")).expect("edit");
    let (code, after, error) = fork(&[]);
    assert_eq!((code, &after), (Some(0), &before), "the edited file changes nothing of the fork: {error}");

    let (code, _, error) = fork(&["--fixture", fixture_text]);
    assert_eq!(code, Some(1), "today's files do not reproduce the land");
    assert!(error.contains("the fixture does not reproduce this land"), "{error}");

    // A branch with a role folder of its own, kept, with the fixture itself
    // gone from the disk: one report, and the branch replays clean.
    std::fs::remove_file(&fixture).expect("the fixture gone");
    let what_if = dir.path().join("what-if");
    std::fs::create_dir_all(&what_if).expect("folder");
    std::fs::write(what_if.join("court-watcher.toml"), text.replace("keep quiet while it sits", "hum softly"))
        .expect("role");
    std::fs::copy(files.join("fixtures/roles/court-watcher.rhai"), what_if.join("court-watcher.rhai")).expect("script");
    let kept = dir.path().join("kept");
    let (code, branch, error) =
        fork(&["--roles", what_if.to_str().expect("utf-8"), "--keep", kept.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{branch}{error}");
    let report: serde_json::Value = serde_json::from_str(&branch).expect("one JSON report");
    assert!(report["moments"].is_array(), "{report}");
    let sets = definition_facts(&kept).iter().filter(|(_, set)| *set).count();
    assert_eq!(sets, 2, "the original's set, then the branch's with its own role folder");
    std::fs::remove_dir_all(&what_if).expect("the fork's roles gone");
    let output = seed(&kept, &["replay", "--all", "--json"]);
    let replayed: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    assert_eq!((output.status.code(), replayed["divergences"].clone()), (Some(0), serde_json::json!(0)), "{replayed}");
    assert!(replayed["moments"].as_u64().is_some_and(|moments| moments > 0), "{replayed}");
}
