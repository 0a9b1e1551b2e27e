//! `seed flow eval` and `seed flow check` from the command line.

use std::process::{Command, Output};

const ROLE_DIRS: &[&str] = &["--roles", "roles", "--roles", "extensions/emotions/roles", "--roles", "fixtures/roles"];

fn seed(arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seed")).args(arguments).output().expect("run seed")
}

fn flow_eval(flow: &str, context: &str, extra: &[&str]) -> Output {
    let flow = format!("tests/fixtures/flows/{flow}");
    let context = format!("tests/fixtures/flows/{context}");
    let mut arguments = vec!["flow", "eval", "--flow", &flow, "--context", &context];
    arguments.extend_from_slice(ROLE_DIRS);
    arguments.extend_from_slice(extra);
    seed(&arguments)
}

#[test]
fn eval_prints_the_composed_role_as_json() {
    let output = flow_eval("court.json", "in-session.json", &["--json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(result["primary"], "judge");
    assert_eq!(result["stack"], serde_json::json!(["emotions:bored"]));
    assert_eq!(result["canDo"], serde_json::json!(["rule", "adjourn", "stretch"]));
    assert_eq!(result["canSummon"], serde_json::json!([{ "pattern": "court/@*" }]));
    assert_eq!(result["cognition"], "llm", "taken from me.cognition");
    assert!(result["prompt"].as_str().unwrap().starts_with("You preside over the court in court."));
    assert!(result["prompt"].as_str().unwrap().contains("this mode — emotions:bored: "));
    assert_eq!(result["digest"].as_str().unwrap().len(), 64);
    let trace = result["trace"].as_array().expect("trace");
    assert_eq!(trace.len(), 5);
    assert_eq!(trace[0]["outcome"], "failed");
    assert_eq!(trace[0]["failedOn"], "caller.role");
    assert_eq!(trace[1]["outcome"], "held");
    assert_eq!(trace[2]["outcome"], "not-reached");
    assert_eq!(trace[4]["failedOn"], "world.court.recent-disturbance");
    for key in ["primary", "stack", "canSee", "canDo", "canSummon", "canBe", "see", "prompt", "trace", "digest"] {
        assert!(result.get(key).is_some(), "missing {key}");
    }
    // Same inputs, same digest; the human cognition changes nothing here.
    let again: serde_json::Value =
        serde_json::from_slice(&flow_eval("court.json", "in-session.json", &["--json"]).stdout).unwrap();
    assert_eq!(again["digest"], result["digest"]);
}

#[test]
fn eval_explains_in_text() {
    let output = flow_eval("court.json", "in-session.json", &["--cognition", "human"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("primary: judge (clause 1)"), "{text}");
    assert!(text.contains("[1] primary judge: held on space.name, world.court.in-session"), "{text}");
}

#[test]
fn bad_input_exits_2_naming_the_offending_element() {
    let cases: &[(&str, &str)] = &[
        ("unknown-operator.json", "[1].when.time.sinceLastMoment.gtee: unknown operator `gtee`"),
        ("missing-role.json", "[0].role: no role named \"juggler\" is defined"),
        ("broken.json", "not valid JSON"),
        ("too-deep.json", "nested deeper than 8 levels"),
        ("nowhere.json", "No such file"),
    ];
    for (flow, expected) in cases {
        let output = flow_eval(flow, "in-session.json", &[]);
        let error = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flow}: {error}");
        assert!(error.contains(expected), "{flow}: expected {expected:?} in {error}");
        assert!(!error.contains("panicked"));
    }
    let output = flow_eval("court.json", "broken.json", &[]);
    assert_eq!(output.status.code(), Some(2));
    let output = flow_eval("court.json", "in-session.json", &["--cognition", "robot"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn check_warns_about_typos_without_blocking() {
    let mut arguments = vec!["flow", "check", "tests/fixtures/flows/typo.json"];
    arguments.extend_from_slice(ROLE_DIRS);
    let output = seed(&arguments);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}{}", String::from_utf8_lossy(&output.stderr));
    assert!(text.contains("unknown key `space.nmae`; did you mean `space.name`?"), "{text}");
    assert!(text.contains("did you mean `world.court.recent-disturbance`?"), "{text}");
    assert!(text.contains("2 warning(s)"), "{text}");
    let mut arguments = vec!["flow", "check", "tests/fixtures/flows/court.json"];
    arguments.extend_from_slice(ROLE_DIRS);
    let clean = seed(&arguments);
    let text = String::from_utf8_lossy(&clean.stdout);
    assert!(text.contains("0 warning(s); wakes on world.court.in-session, world.court.recent-disturbance"), "{text}");
}

#[test]
fn without_roles_the_core_and_extension_roles_are_used() {
    let output = seed(&[
        "flow",
        "eval",
        "--flow",
        "tests/fixtures/flows/court.json",
        "--context",
        "tests/fixtures/flows/in-session.json",
    ]);
    assert_eq!(output.status.code(), Some(2), "judge is a demo-world role, not a core one");
    assert!(String::from_utf8_lossy(&output.stderr).contains("no role named \"judge\""));
}

#[test]
fn a_fixture_names_the_roles_of_its_world_and_every_verdict_names_the_folders_searched() {
    let with_fixture = seed(&[
        "flow",
        "eval",
        "--flow",
        "tests/fixtures/flows/court.json",
        "--context",
        "tests/fixtures/flows/in-session.json",
        "--fixture",
        "fixtures/court.toml",
    ]);
    let text = String::from_utf8_lossy(&with_fixture.stdout);
    assert!(with_fixture.status.success(), "{text}{}", String::from_utf8_lossy(&with_fixture.stderr));
    assert!(text.contains("primary: judge"), "{text}");
    assert!(text.contains("fixtures/../roles, fixtures/roles"), "the folders searched, in order: {text}");
    let check =
        seed(&["flow", "check", "tests/fixtures/flows/court.json", "--fixture", "fixtures/court.toml", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).expect("JSON");
    assert_eq!(report["clauses"], 5, "{report}");
    let folders: Vec<&str> =
        report["roleFolders"].as_array().unwrap().iter().map(|dir| dir.as_str().unwrap()).collect();
    assert!(folders.iter().any(|dir| dir.ends_with("fixtures/roles")), "{folders:?}");
    // Without a fixture or folders, the error says where it looked and how to say more.
    let missing = seed(&["flow", "check", "tests/fixtures/flows/court.json"]);
    let error = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2));
    assert!(error.contains("roles searched in roles"), "{error}");
    assert!(error.contains("--fixture FILE"), "{error}");
    let broken = seed(&[
        "flow",
        "check",
        "tests/fixtures/flows/court.json",
        "--fixture",
        "tests/fixtures/authoring/broken-toml/world.toml",
    ]);
    assert_eq!(broken.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&broken.stderr).contains("world.toml:5:13: not valid TOML"));
}
