//! Every verb's `--json` output holds to its schema in docs/json/: one key
//! style (camelCase), ids and digests as hex strings, times as
//! milliseconds beside RFC 3339, `null` for what is absent. A verb that
//! gains `--json` without a schema, or a schema no verb is checked against,
//! fails here too.

use crate::common::{seed, stdout};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json")
}

/// The validator of docs/json/NAME.
fn validator(name: &str) -> jsonschema::Validator {
    let path = schema_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let schema: Value = serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    jsonschema::validator_for(&schema).unwrap_or_else(|error| panic!("{}: not a schema: {error}", path.display()))
}

/// Holds one JSON value to docs/json/`schema` (for verbs whose output
/// another test produces: `seed peer` needs lands that are up, tests/canopy.rs).
pub(crate) fn holds_to(what: &str, value: &Value, schema: &str) {
    let errors: Vec<String> =
        validator(schema).iter_errors(value).map(|error| format!("{} at {}", error, error.instance_path)).collect();
    assert!(errors.is_empty(), "{what} does not hold to docs/json/{schema}:\n{}\n{value:#}", errors.join("\n"));
}

/// The schemas tests/canopy.rs holds `seed peer`'s output to.
const SCHEMAS_HELD_IN_CANOPY_TESTS: [&str; 5] =
    ["move.json", "peer-add.json", "peer-follow.json", "peer-list.json", "peer-remove.json"];

/// Holds each JSON value of `output` (one document, or JSON lines when
/// `lines`) to docs/json/`schema`, and returns them.
fn check(what: &str, output: &Output, schema: &str, lines: bool, checked: &mut BTreeSet<String>) -> Vec<Value> {
    let text = stdout(output);
    let values: Vec<Value> = if lines {
        text.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{what}: {e}: {line}"))).collect()
    } else {
        vec![serde_json::from_str(&text).unwrap_or_else(|error| panic!("{what}: not JSON ({error}): {text}"))]
    };
    assert!(!values.is_empty(), "{what} printed nothing");
    let validator = validator(schema);
    for value in &values {
        let errors: Vec<String> =
            validator.iter_errors(value).map(|error| format!("{} at {}", error, error.instance_path)).collect();
        assert!(errors.is_empty(), "{what} does not hold to docs/json/{schema}:\n{}\n{value:#}", errors.join("\n"));
    }
    checked.insert(schema.to_string());
    values
}

fn seed_without_land(arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seed"))
        .args(arguments)
        .env_remove("SEED_LAND")
        .env_remove("SEED_STORE")
        .output()
        .expect("run seed")
}

#[test]
fn every_verbs_json_holds_to_its_schema_in_docs() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let land = scratch.path().join("court");
    let land_str = land.to_str().expect("utf-8 path");
    let mut checked = BTreeSet::new();
    let ok = |what: &str, output: &Output| {
        assert!(output.status.success(), "{what}: {}{}", stdout(output), String::from_utf8_lossy(&output.stderr));
    };

    let sim = seed_without_land(&["--land", land_str, "sim", "fixtures/court.toml", "--ticks", "6", "--json"]);
    ok("sim", &sim);
    check("sim", &sim, "sim.json", false, &mut checked);

    let beings = seed(&land, &["beings", "--json"]);
    let listed = &check("beings", &beings, "beings.json", false, &mut checked)[0];
    let ada = listed.as_array().and_then(|all| all.iter().find(|being| being["name"] == "ada")).expect("@ada listed");
    assert_eq!(ada["parent"], "@operator", "{ada}");
    let reality = listed.as_array().and_then(|all| all.iter().find(|b| b["name"] == "reality")).expect("@reality");
    assert_eq!((&reality["parent"], &reality["parentId"]), (&Value::Null, &Value::Null), "{reality}");

    let reel = seed(&land, &["reel", "@ada", "--json"]);
    check("reel", &reel, "reel.json", false, &mut checked);

    let memory = seed(&land, &["memory", "@ada", "--json", "--query", "the court"]);
    let shown = &check("memory", &memory, "memory.json", false, &mut checked)[0];
    assert!(shown["items"].as_array().is_some_and(|items| !items.is_empty()), "{shown}");

    // The court's tool calls (its DO operations), each citing its fact.
    let audit = seed(&land, &["audit", "--json"]);
    ok("audit", &audit);
    let audited = &check("audit", &audit, "audit.json", false, &mut checked)[0];
    assert!(audited["lines"].as_array().is_some_and(|lines| !lines.is_empty()), "{audited}");
    assert_eq!(audited["verified"], true, "{audited}");

    for (what, arguments) in
        [("verify", &["verify", "--json"][..]), ("verify --being", &["verify", "--being", "@ada", "--json"])]
    {
        let output = seed(&land, arguments);
        ok(what, &output);
        check(what, &output, "verify.json", false, &mut checked);
    }

    let replay = seed(&land, &["replay", "@ada", "--json"]);
    ok("replay", &replay);
    let lines = check("replay", &replay, "replay.json", true, &mut checked);
    assert!(lines.last().is_some_and(|last| last.get("summary").is_some()), "the last line is the summary");

    let replay_all = seed(&land, &["replay", "--all", "--json"]);
    ok("replay --all", &replay_all);
    check("replay --all", &replay_all, "replay-all.json", false, &mut checked);

    let fork = seed(&land, &["replay", "@ada", "--fork", "1", "--ticks", "2", "--json"]);
    ok("replay --fork", &fork);
    check("replay --fork", &fork, "replay-fork.json", false, &mut checked);

    let bundle = scratch.path().join("ada.bundle");
    let export = seed(&land, &["export", "@ada", "-o", bundle.to_str().expect("utf-8"), "--json"]);
    ok("export", &export);
    check("export", &export, "export.json", false, &mut checked);

    let reindex = seed(&land, &["reindex", "--json"]);
    ok("reindex", &reindex);
    check("reindex", &reindex, "reindex.json", false, &mut checked);

    let rotated = seed(&land, &["rotate-key", "@ada", "--json"]);
    ok("rotate-key", &rotated);
    check("rotate-key", &rotated, "rotate-key.json", false, &mut checked);

    let configured = seed(&land, &["config", "set", "inbox_depth_max", "100", "--json"]);
    ok("config set", &configured);
    check("config set", &configured, "config-set.json", false, &mut checked);
    let config = seed(&land, &["config", "--json"]);
    ok("config", &config);
    check("config", &config, "config.json", false, &mut checked);

    let health = seed(&land, &["health", "--json"]);
    ok("health", &health);
    check("health", &health, "health.json", false, &mut checked);
    // A disk floor no disk meets trips the land at the setting's own step.
    let floor = (1u64 << 50).to_string();
    assert!(seed(&land, &["config", "set", "health_disk_free_bytes_min", &floor]).status.success());
    let tripped = seed(&land, &["health", "--json"]);
    let tripped = check("health", &tripped, "health.json", false, &mut checked);
    assert_eq!(tripped[0]["tripped"], true, "{}", tripped[0]);
    let revived = seed(&land, &["health", "revive", "--json"]);
    ok("health revive", &revived);
    check("health revive", &revived, "health-revive.json", false, &mut checked);
    assert!(seed(&land, &["config", "set", "health_disk_free_bytes_min", "default"]).status.success());

    // A cascade: the relay's first signal, by the id of the act that announced it.
    let relay = scratch.path().join("relay");
    let relay_str = relay.to_str().expect("utf-8 path");
    assert!(seed_without_land(&["sim", "fixtures/relay.toml", "--land", relay_str, "--ticks", "3"]).status.success());
    let crier: Value = serde_json::from_str(&stdout(&seed(&relay, &["reel", "@crier", "--json"]))).expect("JSON");
    let act = crier["facts"][1]["id"].as_str().expect("the crier's act").to_string();
    let cascade = seed(&relay, &["cascade", &act, "--json"]);
    ok("cascade", &cascade);
    check("cascade", &cascade, "cascade.json", false, &mut checked);

    let token = seed(&land, &["token", "--json"]);
    ok("token", &token);
    check("token", &token, "token.json", false, &mut checked);

    let copied = seed_without_land(&[
        "copy",
        "--from",
        land.to_str().expect("utf-8"),
        "--to",
        scratch.path().join("copy").to_str().expect("utf-8"),
        "--json",
    ]);
    ok("copy", &copied);
    check("copy", &copied, "copy.json", false, &mut checked);

    let other = scratch.path().join("other");
    let plant = seed(&other, &["plant", "--json"]);
    ok("plant", &plant);
    check("plant", &plant, "plant.json", false, &mut checked);
    let import = seed(&other, &["import", bundle.to_str().expect("utf-8"), "--json"]);
    ok("import", &import);
    check("import", &import, "import.json", false, &mut checked);

    let flow_eval = seed_without_land(&[
        "flow",
        "eval",
        "--flow",
        "tests/fixtures/flows/court.json",
        "--context",
        "tests/fixtures/flows/in-session.json",
        "--fixture",
        "fixtures/court.toml",
        "--json",
    ]);
    ok("flow eval", &flow_eval);
    check("flow eval", &flow_eval, "flow-eval.json", false, &mut checked);
    let flow_check = seed_without_land(&[
        "flow",
        "check",
        "tests/fixtures/flows/typo.json",
        "--fixture",
        "fixtures/court.toml",
        "--json",
    ]);
    ok("flow check", &flow_check);
    check("flow check", &flow_check, "flow-check.json", false, &mut checked);

    let script_check = seed_without_land(&[
        "script",
        "check",
        "tests/fixtures/scripts/typo.rhai",
        "tests/fixtures/scripts/syntax.rhai",
        "--json",
    ]);
    assert_eq!(script_check.status.code(), Some(1), "a script that does not compile fails the check");
    check("script check", &script_check, "script-check.json", false, &mut checked);
    let script_run = seed_without_land(&[
        "script",
        "run",
        "tests/fixtures/scripts/ringer.rhai",
        "--face",
        "tests/fixtures/scripts/face.json",
        "--json",
    ]);
    ok("script run", &script_run);
    check("script run", &script_run, "script-run.json", false, &mut checked);

    let corpus = seed_without_land(&["corpus", "check", "--name", "court", "--json"]);
    ok("corpus check", &corpus);
    check("corpus check", &corpus, "corpus-check.json", false, &mut checked);

    // `seed up`: the start line, then the stop line, as JSON lines.
    let up_land = scratch.path().join("up");
    let up = Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("--land")
        .arg(&up_land)
        .args(["up", "--addr", "127.0.0.1:0", "--lifetime-s", "1", "--json"])
        .env_remove("SEED_LAND")
        .stdin(Stdio::null())
        .output()
        .expect("run seed up");
    ok("up", &up);
    let events = check("up", &up, "up.json", true, &mut checked);
    let names: Vec<&Value> = events.iter().map(|event| &event["event"]).collect();
    assert_eq!(names, ["up", "down"], "{events:?}");
    assert!(events[0]["operatorToken"].is_string(), "a new land's token is shown once: {}", events[0]);

    // Failures under --json are JSON too, with the world's problems when it did not load.
    let missing = seed(&scratch.path().join("nowhere"), &["beings", "--json"]);
    assert!(!missing.status.success());
    check("beings on no land", &missing, "error.json", false, &mut checked);
    let broken = seed_without_land(&["sim", "tests/fixtures/authoring/broken-files/world.toml", "--json"]);
    assert!(!broken.status.success());
    let failure = &check("sim of a broken world", &broken, "error.json", false, &mut checked)[0];
    assert!(failure["problems"].as_array().is_some_and(|problems| problems.len() >= 4), "{failure:#}");
    let bad_flow = seed_without_land(&["flow", "check", "tests/fixtures/flows/broken.json", "--json"]);
    assert_eq!(bad_flow.status.code(), Some(2));
    check("flow check of broken JSON", &bad_flow, "error.json", false, &mut checked);

    // A worker serves a land on PostgreSQL: checked when those tests run.
    let pooled = crate::postgres::postgres_opted_in();
    if pooled {
        let url = crate::common::postgres::fresh_database();
        let pooled_land = scratch.path().join("pooled");
        let run = ["--store", &url, "sim", "fixtures/court.toml", "--ticks", "3", "--workers", "1", "--json"];
        ok("pooled sim", &seed(&pooled_land, &run));
        // The run is finished: a worker joining now reports at once.
        let worker = seed(&pooled_land, &["worker", "fixtures/court.toml", "--json"]);
        ok("worker", &worker);
        check("worker", &worker, "worker.json", false, &mut checked);
    }
    // The recorded schemas of MCP tools, against the reference server: when those tests run.
    let with_mcp = std::env::var("SEED_TEST_MCP").is_ok_and(|value| value == "1");
    if with_mcp {
        let bin = crate::mcp_tools::servers_bin();
        let path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
        let recorded = Command::new(env!("CARGO_BIN_EXE_seed"))
            .args(["mcp-schemas", "tests/fixtures/mcp-tools/world.toml", "--check", "--json"])
            .env("PATH", path)
            .output()
            .expect("seed mcp-schemas runs");
        ok("mcp-schemas", &recorded);
        check("mcp-schemas", &recorded, "mcp-schemas.json", false, &mut checked);
    }
    let every_schema: BTreeSet<String> = std::fs::read_dir(schema_dir())
        .expect("docs/json")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".json"))
        .filter(|name| pooled || name != "worker.json")
        .filter(|name| with_mcp || name != "mcp-schemas.json")
        .filter(|name| !SCHEMAS_HELD_IN_CANOPY_TESTS.contains(&name.as_str()))
        .collect();
    assert_eq!(checked, every_schema, "every schema in docs/json is checked against a verb's output");
}

/// Every verb whose help offers `--json` is one the test above runs.
#[test]
fn every_verb_offering_json_has_a_schema() {
    let verbs_with_json: &[(&[&str], &str)] = &[
        (&["up"], "up.json"),
        (&["plant"], "plant.json"),
        (&["beings"], "beings.json"),
        (&["reel"], "reel.json"),
        (&["memory"], "memory.json"),
        (&["audit"], "audit.json"),
        (&["verify"], "verify.json"),
        (&["export"], "export.json"),
        (&["import"], "import.json"),
        (&["reindex"], "reindex.json"),
        (&["copy"], "copy.json"),
        (&["rotate-key"], "rotate-key.json"),
        (&["move"], "move.json"),
        (&["token"], "token.json"),
        (&["config"], "config.json"),
        (&["config", "set"], "config-set.json"),
        (&["health"], "health.json"),
        (&["peer", "list"], "peer-list.json"),
        (&["peer", "add"], "peer-add.json"),
        (&["peer", "remove"], "peer-remove.json"),
        (&["peer", "follow"], "peer-follow.json"),
        (&["peer", "unfollow"], "peer-follow.json"),
        (&["cascade"], "cascade.json"),
        (&["health", "revive"], "health-revive.json"),
        (&["sim"], "sim.json"),
        (&["worker"], "worker.json"),
        (&["replay"], "replay.json"),
        (&["corpus", "check"], "corpus-check.json"),
        (&["flow", "eval"], "flow-eval.json"),
        (&["flow", "check"], "flow-check.json"),
        (&["script", "check"], "script-check.json"),
        (&["script", "run"], "script-run.json"),
        (&["mcp-schemas"], "mcp-schemas.json"),
    ];
    let top = stdout(&seed_without_land(&["help"]));
    let mut verbs: Vec<Vec<String>> = Vec::new();
    for line in top.lines().skip_while(|line| !line.starts_with("Commands:")).skip(1) {
        let Some(verb) = line.split_whitespace().next() else { break };
        if verb == "help" {
            continue;
        }
        let help = stdout(&seed_without_land(&[verb, "--help"]));
        // A verb with subcommands may offer --json itself too (`seed config`).
        verbs.push(vec![verb.to_string()]);
        if help.contains("Commands:") {
            for sub in help.lines().skip_while(|line| !line.starts_with("Commands:")).skip(1) {
                match sub.split_whitespace().next() {
                    Some("help") => continue,
                    None => break,
                    Some(sub) => verbs.push(vec![verb.to_string(), sub.to_string()]),
                }
            }
        }
    }
    assert!(verbs.len() > 15, "the verbs were read from `seed help`: {verbs:?}");
    for verb in verbs {
        let mut arguments: Vec<&str> = verb.iter().map(String::as_str).collect();
        arguments.push("--help");
        let offers_json = stdout(&seed_without_land(&arguments)).contains("--json");
        let listed = verbs_with_json.iter().find(|(listed, _)| *listed == verb.as_slice());
        match (offers_json, listed) {
            (true, Some((_, schema))) => assert!(schema_dir().join(schema).is_file(), "docs/json/{schema}"),
            (true, None) => panic!("seed {} offers --json but has no schema here", verb.join(" ")),
            (false, Some(_)) => panic!("seed {} is listed but does not offer --json", verb.join(" ")),
            (false, None) => {}
        }
    }
}
