//! Hostile scripts and manifests: each produces its documented failure and
//! harms nothing else.

use seed::engine::fixture::Fixture;
use seed::engine::{self, EngineOptions};
use seed::extensions;
use std::collections::BTreeMap;
use std::path::Path;

#[test]
fn hostile_scripts_fail_their_own_moments_and_nothing_else() {
    let dir = tempfile::tempdir().expect("folder");
    let trace = dir.path().join("moments.jsonl");
    let fixture = Fixture::load(Path::new("tests/fixtures/hostile/hostile.toml")).expect("fixture");
    let options = EngineOptions {
        snapshot_every_facts: None,
        snapshot_spacing_step_bytes: None,
        store: Default::default(),
        ticks: None,
        seed: 1,
        threads: 2,
        land_dir: dir.path().join("land"),
        trace_file: Some(trace.clone()),
        progress: std::sync::Arc::new(seed::progress::NoProgress),
        model: None,
        mode: seed::engine::Mode::Simulation,
    };
    let summary = engine::simulate(&fixture, &options).expect("the simulation survives hostile scripts");
    let mut outcomes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in std::fs::read_to_string(&trace).unwrap().lines() {
        let trace: serde_json::Value = serde_json::from_str(line).unwrap();
        outcomes
            .entry(trace["name"].as_str().unwrap().to_string())
            .or_default()
            .push(trace["outcome"].as_str().unwrap().to_string());
    }
    let expected = [
        ("loop", "failure in momentum: script exceeded its budget: more than 100000 operations"),
        ("huge", "failure in momentum: script exceeded its budget"),
        ("deep", "failure in momentum: script exceeded its budget: call stack overflow: deeper than 32 calls (script_call_depth_max)"),
        ("bad-verb", "failure in momentum: unknown verb \"dance\""),
        ("bad-args", "failure in decide: do move: args.to must be a string"),
        ("off-summon", "failure in decide: summon @operator is not within canSummon"),
        ("off-see", "failure in decide: see /vault is not within canSee"),
        ("off-do", "failure in decide: do \"publish-signal\" is not within canDo"),
        ("vault-runner", "failure in seal: cancelled by hook guard/0: the vault is closed"),
    ];
    for (being, outcome) in expected {
        let seen = outcomes.get(being).unwrap_or_else(|| panic!("@{being} had no moments"));
        assert_eq!(seen.len(), 4, "@{being} was woken every round");
        assert!(seen.iter().all(|o| o.starts_with(outcome)), "@{being}: {seen:?}");
    }
    // The good being acts; its fourth summon within a minute meets the
    // land's configured summons_per_minute_max = 3.
    assert_eq!(outcomes["good"][..3], ["act: summon", "act: summon", "act: summon"]);
    assert!(
        outcomes["good"][3]
            .starts_with("failure in decide: summon rate: 3 summons in the last minute (summons_per_minute_max = 3)"),
        "{:?}",
        outcomes["good"]
    );
    assert_eq!(summary.acts.get("summon"), Some(&3), "only the good being's acts sealed");
    // The looping before:summon hook and the throwing after:* hook each fail
    // three times, then their breakers open; the summons sealed regardless.
    for handler in ["guard/1", "guard/2"] {
        let incidents: Vec<_> = summary.hook_incidents.iter().filter(|i| i.handler == handler).collect();
        assert_eq!(incidents.len(), 3, "{handler}: {incidents:?}");
        assert_eq!(incidents.iter().map(|i| i.breaker_opened).collect::<Vec<_>>(), vec![false, false, true]);
    }
    assert!(summary.hook_incidents.iter().any(|i| i.reason.contains("more than 10000 operations")));
    assert_eq!(summary.facts_sealed, 3);
    let land = seed::land::Land::open(&dir.path().join("land")).expect("open");
    let report = seed::check::verify_land(
        land.store(),
        seed::check::SignatureMode::Strict,
        1,
        seed::world::CoreSchemas::new().rules(&Default::default()),
    )
    .expect("verify");
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

fn write(dir: &Path, name: &str, manifest: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::write(dir.join(name).join("extension.toml"), manifest).unwrap();
}

fn manifest(name: &str, version: &str, needs: &str) -> String {
    format!("name = \"{name}\"\nversion = \"{version}\"\nlicense = \"MIT\"\n[needs]\n{needs}\n")
}

#[test]
fn hostile_manifests_are_skipped_with_a_reason_and_the_rest_load_in_order() {
    let dir = tempfile::tempdir().expect("folder");
    let root = dir.path();
    write(root, "base", &manifest("base", "1.2.0", ""));
    write(root, "uses-base", &manifest("uses-base", "1.0.0", "base = \"^1.1\""));
    write(root, "top", &manifest("top", "0.1.0", "uses-base = \"1\"\nbase = \">=1.0, <2\""));
    write(root, "ring-a", &manifest("ring-a", "1.0.0", "ring-b = \"*\""));
    write(root, "ring-b", &manifest("ring-b", "1.0.0", "ring-a = \"*\""));
    write(root, "orphan", &manifest("orphan", "1.0.0", "nowhere = \"^1\""));
    write(root, "too-new", &manifest("too-new", "1.0.0", "base = \"^2\""));
    write(root, "bad-version", &manifest("bad-version", "one", ""));
    write(root, "bad-field", "name = \"bad-field\"\nversion = \"1.0.0\"\nlicense = \"MIT\"\ncolour = \"red\"\n");
    write(root, "needs-disabled", &manifest("needs-disabled", "1.0.0", "off = \"*\""));
    write(root, "off", &manifest("off", "1.0.0", ""));
    write(root, "bad-op", "name = \"bad-op\"\nversion = \"1.0.0\"\nlicense = \"MIT\"\n[[provides.op]]\nname = \"x\"\nscript = \"missing.rhai\"\n");
    let loaded = extensions::load(root, &["off".to_string()]);
    let order: Vec<&str> = loaded.enabled.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(order, vec!["base", "uses-base", "top"], "dependencies first");
    let skipped: BTreeMap<&str, &str> = loaded.skipped.iter().map(|(n, r)| (n.as_str(), r.as_str())).collect();
    let reason = |name: &str| {
        skipped
            .iter()
            .find(|(n, _)| n.ends_with(name))
            .map(|(_, r)| r.to_string())
            .unwrap_or_else(|| panic!("{name} not skipped: {skipped:?}"))
    };
    assert!(reason("ring-a").contains("cycle"));
    assert!(reason("ring-b").contains("cycle"));
    assert!(reason("orphan").contains("needs nowhere ^1, which is not installed"));
    assert!(reason("too-new").contains("but base is 1.2.0"));
    assert!(reason("bad-version").contains("extension.toml:2:1: version: \"one\""), "{}", reason("bad-version"));
    assert!(reason("bad-field").contains("unknown field `colour`"));
    assert_eq!(reason("off"), "disabled");
    assert!(reason("needs-disabled").contains("which is skipped (disabled)"));
    assert!(reason("bad-op").contains("missing.rhai"));
}

#[test]
fn disabling_an_extension_keeps_its_facts_and_enabling_it_finds_them_again() {
    let dir = tempfile::tempdir().expect("folder");
    let fixture = Fixture::load(Path::new("fixtures/factory.toml")).expect("fixture");
    let options = EngineOptions {
        snapshot_every_facts: None,
        snapshot_spacing_step_bytes: None,
        store: Default::default(),
        ticks: Some(6),
        seed: 0,
        threads: 1,
        land_dir: dir.path().join("land"),
        trace_file: None,
        progress: std::sync::Arc::new(seed::progress::NoProgress),
        model: None,
        mode: seed::engine::Mode::Simulation,
    };
    engine::simulate(&fixture, &options).expect("run");
    let count_decks = || {
        let land = seed::land::Land::open(&dir.path().join("land")).expect("open");
        let mut world = seed::world::World::new();
        engine::fold_to_end(land.store(), &mut world).expect("fold");
        world.matter.values().filter(|m| m.kind == "deck").count()
    };
    let before = count_decks();
    assert!(before > 0);
    let disabled = extensions::load(Path::new("extensions"), &["factory".to_string()]);
    assert!(disabled.enabled.iter().all(|e| e.name != "factory"));
    assert_eq!(count_decks(), before, "the facts of a disabled extension stay");
    let enabled = extensions::load(Path::new("extensions"), &[]);
    assert!(enabled.enabled.iter().any(|e| e.name == "factory"));
    assert_eq!(count_decks(), before);
}

/// `hook_breaker_failures_max` (docs/config.md) is read at each act's world:
/// set to 1, each failing handler's breaker opens at its first failure.
#[test]
fn a_hooks_breaker_opens_after_the_failures_the_land_configures() {
    let dir = tempfile::tempdir().expect("folder");
    let mut fixture = Fixture::load(Path::new("tests/fixtures/hostile/hostile.toml")).expect("fixture");
    fixture.config.insert("hook_breaker_failures_max".into(), serde_json::json!(1));
    let options = EngineOptions { seed: 1, threads: 2, ..crate::common::simulation_options(dir.path().join("land")) };
    let summary = engine::simulate(&fixture, &options).expect("the simulation survives hostile scripts");
    for handler in ["guard/1", "guard/2"] {
        let incidents: Vec<bool> =
            summary.hook_incidents.iter().filter(|i| i.handler == handler).map(|i| i.breaker_opened).collect();
        assert_eq!(incidents, vec![true], "{handler}: opened at its first failure");
    }
}
