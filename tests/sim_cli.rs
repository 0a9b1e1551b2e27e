//! `seed sim` from the command line.

use std::process::{Command, Output};

fn seed(arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seed")).args(arguments).env_remove("SEED_LAND").output().expect("run seed")
}

#[test]
fn sim_prints_a_summary_keeps_the_land_when_asked_and_verifies() {
    let dir = tempfile::tempdir().expect("folder");
    let land = dir.path().join("land");
    let land = land.to_str().unwrap();
    let output = seed(&["--land", land, "sim", "fixtures/court.toml", "--ticks", "8", "--seed", "5", "--json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    for key in ["moments", "acts", "sees", "failures", "factsSealed", "momentsPerSecond", "worldHash"] {
        assert!(summary.get(key).is_some(), "{key} missing from {summary}");
    }
    assert_eq!(summary["ticks"], 8);
    let verify = seed(&["--land", land, "verify"]);
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
    let again = seed(&["sim", "fixtures/court.toml", "--ticks", "8", "--seed", "5", "--threads", "3", "--json"]);
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).expect("json");
    assert_eq!(again["worldHash"], summary["worldHash"], "a temporary land, three threads, the same world");
    let text = seed(&["sim", "fixtures/library.toml", "--ticks", "3"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("world_hash") && text.contains("moments"), "{text}");
}

#[test]
fn bad_fixtures_get_one_clear_error() {
    let dir = tempfile::tempdir().expect("folder");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let cases = [
        (write("typo.toml", "name = \"x\"\nspacez = 1\n"), "unknown field `spacez`"),
        (
            write("no-parent.toml", "name = \"x\"\n[[space]]\npath = \"/a/b\"\nkind = \"k\"\n"),
            "the parent space /a of /a/b",
        ),
        (
            write("no-role.toml", "name = \"x\"\n[[being]]\nname = \"a\"\nhome = \"/\"\ndefault_role = \"ghost\"\n"),
            "no role named \"ghost\"",
        ),
        (
            write(
                "bad-home.toml",
                "name = \"x\"\nroles = []\n[[being]]\nname = \"a\"\nhome = \"nowhere\"\ndefault_role = \"x\"\n",
            ),
            "home",
        ),
        ("fixtures/none.toml".to_string(), "No such file"),
    ];
    for (file, needle) in cases {
        let output = seed(&["sim", &file]);
        let error = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{file}: {error}");
        assert!(error.contains(needle), "{file}: expected {needle:?} in {error}");
        assert!(!error.contains("panicked"));
    }
    assert_eq!(seed(&["sim", "fixtures/court.toml", "--threads", "0"]).status.code(), Some(1));
}

#[test]
fn two_runs_started_together_on_one_empty_folder_never_plant_into_one_land() {
    for trial in 0..6 {
        let dir = tempfile::tempdir().expect("folder");
        let land = dir.path().join("land");
        let land = land.to_str().unwrap();
        let start = || {
            Command::new(env!("CARGO_BIN_EXE_seed"))
                .args(["--land", land, "sim", "fixtures/court.toml", "--ticks", "20", "--seed", "3", "--json"])
                .env_remove("SEED_LAND")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start seed")
        };
        let (first, second) = (start(), start());
        let outputs = [first.wait_with_output().expect("first"), second.wait_with_output().expect("second")];
        let planted: Vec<&Output> = outputs.iter().filter(|output| output.status.success()).collect();
        assert_eq!(planted.len(), 1, "trial {trial}: exactly one run plants");
        let refused = outputs.iter().find(|output| !output.status.success()).expect("one refused");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(
            ["already planted", "in use by another process", "not empty"].iter().any(|reason| said.contains(reason)),
            "trial {trial}: {said}"
        );
        let verify = seed(&["--land", land, "verify"]);
        assert!(verify.status.success(), "trial {trial}: {}", String::from_utf8_lossy(&verify.stdout));
    }
}

#[test]
fn the_summary_names_each_failure_kind_with_an_example_and_failing_runs_exit_3() {
    // The dance has dancers bump into each other: a few moments fail.
    let output = seed(&["sim", "fixtures/dance.toml"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "some failures are not a failed run: {text}");
    assert!(text.contains("× operation") && text.contains("e.g. @dancer-"), "{text}");
    assert!(text.contains("illegal move"), "the example's whole reason: {text}");
    let json = seed(&["sim", "fixtures/dance.toml", "--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let example = &summary["failureExamples"]["operation"];
    assert!(example["being"].as_str().is_some_and(|b| b.starts_with("@dancer-")), "{summary}");
    assert!(example["tick"].as_u64().is_some() && example["reason"].as_str().is_some(), "{summary}");
    let strict = seed(&["sim", "fixtures/dance.toml", "--fail-on-failure"]);
    assert_eq!(strict.status.code(), Some(3), "--fail-on-failure");
    assert!(String::from_utf8_lossy(&strict.stderr).contains("moments failed (--fail-on-failure)"));
    // A world whose every moment fails is a failed run.
    let dir = tempfile::tempdir().expect("folder");
    std::fs::write(dir.path().join("boom.rhai"), "throw \"broken on purpose\";\n").unwrap();
    let roles = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/roles");
    let fixture = dir.path().join("boom.toml");
    std::fs::write(
        &fixture,
        format!(
            "name = \"boom\"\nticks = 2\nroles = [{:?}]\n[[being]]\nname = \"a\"\nhome = \"/\"\ndefault_role = \"idle\"\n\
             wake_every = 1\nscript = \"boom.rhai\"\n",
            roles.to_str().unwrap()
        ),
    )
    .unwrap();
    let output = seed(&["sim", fixture.to_str().unwrap()]);
    let error = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{error}{}", String::from_utf8_lossy(&output.stdout));
    assert!(error.contains("every one of the 2 moments failed"), "{error}");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("broken on purpose"), "the example's reason: {text}");
    // The example names the script's file, line and column.
    let script_at = format!("{}:1:1", dir.path().join("boom.rhai").display());
    assert!(text.contains(&format!("at tick 1 in {script_at}: ")), "{text}");
    let json = seed(&["sim", fixture.to_str().unwrap(), "--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(summary["failureExamples"]["script"]["script"], script_at.as_str(), "{summary}");
    assert_eq!(example["script"], serde_json::Value::Null, "an operation's failure names no script: {example}");
}

/// The million-being world of docs/performance.md, small: a generated
/// crowd across more than one planting batch (`PLANT_BEINGS_PER_BATCH`,
/// 4,096) plants, plays, verifies and replays, with one world on one or
/// two threads.
#[test]
fn a_generated_crowd_plants_in_batches_plays_verifies_and_replays_the_same_on_any_thread_count() {
    let dir = tempfile::tempdir().expect("folder");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let crowd = std::fs::read_to_string(root.join("fixtures/crowd.toml")).expect("crowd");
    let roles = format!("roles = [{:?}, {:?}]", root.join("roles").display(), root.join("fixtures/roles").display());
    let extensions = format!("extensions = {:?}", root.join("extensions").display());
    let crowd = crowd
        .replace(r#"roles = ["../roles", "roles"]"#, &roles)
        .replace(r#"extensions = "../extensions""#, &extensions)
        .replace("count = 10000", "count = 4200")
        .replace("ticks = 5", "ticks = 2");
    assert!(crowd.contains("count = 4200") && crowd.contains(&roles), "the crowd fixture changed: {crowd}");
    let fixture = dir.path().join("crowd.toml");
    std::fs::write(&fixture, crowd).expect("write");
    let fixture = fixture.to_str().unwrap();
    let mut hashes = Vec::new();
    for threads in ["2", "1"] {
        let land = dir.path().join(format!("land-{threads}"));
        let land = land.to_str().unwrap();
        let output = seed(&["--land", land, "sim", fixture, "--threads", threads, "--json"]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
        assert_eq!(summary["planted"]["beings"], 4200, "{summary}");
        assert_eq!((summary["moments"].as_u64(), summary["failures"].as_u64()), (Some(8400), Some(0)), "{summary}");
        hashes.push(summary["worldHash"].clone());
        let verify = seed(&["--land", land, "verify", "--no-checkpoint"]);
        assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
        let replay = seed(&["--land", land, "replay", "--all"]);
        let said = String::from_utf8_lossy(&replay.stdout);
        assert!(replay.status.success() && said.contains(" 0 divergence"), "{said}");
    }
    assert_eq!(hashes[0], hashes[1], "one world on one thread or two");
}
