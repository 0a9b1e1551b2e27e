//! `seed script check` and `seed script run`: one script, no world. The
//! scripts and the face are files under tests/fixtures/scripts/.

use std::process::Command;

const HERE: &str = "tests/fixtures/scripts";

/// (exit code, stdout, stderr) of `seed script ARGS` run in the scripts' folder.
fn script(arguments: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("script")
        .args(arguments)
        .current_dir(HERE)
        .env("RUST_LOG", "off")
        .output()
        .expect("run seed script");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn check(arguments: &[&str], expected_code: i32, expected_out: &str, expected_err: &str) {
    let (code, out, err) = script(arguments);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (expected_code, expected_out, expected_err),
        "seed script {arguments:?}"
    );
}

#[test]
fn script_check_reports_each_mistake_at_its_line_and_column() {
    let cases: &[(&[&str], i32, &str, &str)] = &[
        (&["check", "ringer.rhai"], 0, "ringer.rhai: compiles as a role script (given face), 0 warning(s)\n", ""),
        (&["check", "syntax.rhai"], 1, "", "error: syntax.rhai:1:9: the script does not compile: Unexpected ';'\n"),
        (
            &["check", "undefined.rhai"],
            1,
            "",
            "error: undefined.rhai:2:83: the script does not compile: Undefined variable: unknown\n",
        ),
        (
            &["check", "typo.rhai"],
            0,
            "warning: typo.rhai: face.mee is not a key of the face (me, can, see, time, wake, inbox, roles, prompt, recall); did you mean `face.me`?\ntypo.rhai: compiles as a role script (given face), 1 warning(s)\n",
            "",
        ),
        // The same body is fine as an operation, which is given no face… but `face` is then undefined.
        (
            &["check", "--kind", "op", "ringer.rhai"],
            1,
            "",
            "error: ringer.rhai:2:14: the script does not compile: Undefined variable: face\n",
        ),
        (&["check", "missing.rhai"], 2, "", "error: script missing.rhai: No such file or directory (os error 2)\n"),
    ];
    for (arguments, code, out, err) in cases {
        check(arguments, *code, out, err);
    }
}

#[test]
fn every_shipped_script_passes_the_strict_check() {
    let mut roles = vec!["check".to_string()];
    let mut ops = vec!["check".to_string(), "--kind".into(), "op".into()];
    let rhai_in = |folder: &str| -> Vec<String> {
        let mut files: Vec<String> = std::fs::read_dir(folder)
            .expect("folder")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| path.extension().is_some_and(|extension| extension == "rhai"))
            .map(|path| std::fs::canonicalize(path).expect("path").display().to_string())
            .collect();
        files.sort();
        files
    };
    roles.extend(rhai_in("fixtures/roles"));
    roles.extend(rhai_in("fixtures/scripts"));
    for extension in ["court", "emotions", "factory", "harmony"] {
        ops.extend(rhai_in(&format!("extensions/{extension}/ops")));
    }
    let see = ["check".to_string(), "--kind".into(), "see".into()]
        .into_iter()
        .chain(rhai_in("extensions/court/see"))
        .collect::<Vec<_>>();
    for arguments in [roles, ops, see] {
        let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
        let (code, out, err) = script(&arguments);
        assert_eq!(code, 0, "{out}{err}");
        assert!(!out.lines().any(|line| line.starts_with("warning:")), "{out}");
    }
}

#[test]
fn script_run_prints_the_call_a_script_returns_on_a_face() {
    check(
        &["run", "ringer.rhai", "--face", "face.json"],
        0,
        "returned: {\"content\":\"minute 1\",\"target\":\"@bob\",\"verb\":\"summon\"}\ncall:     {\"content\":\"minute 1\",\"inReplyTo\":null,\"target\":\"@bob\",\"verb\":\"summon\"}\n",
        "",
    );
    let (code, out, _) = script(&["run", "ringer.rhai", "--face", "face.json", "--json"]);
    assert_eq!(code, 0);
    let report: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(report["call"]["verb"], "summon");
    assert_eq!(report["call"]["inReplyTo"], serde_json::Value::Null);
    check(
        &["run", "fails.rhai", "--face", "face.json"],
        1,
        "",
        "error: fails.rhai:2:24: script failed: Array index 0 out of bounds: array is empty\n",
    );
    let (code, _, err) = script(&["run", "ringer.rhai", "--face", "bad-face.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("error: face bad-face.json: not valid JSON"), "{err}");
}
