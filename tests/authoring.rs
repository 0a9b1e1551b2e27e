//! Authoring mistakes, one folder each under tests/fixtures/authoring/: a
//! world with the mistake, and `expected.txt`, exactly what an author is
//! told. The first line is `exit N`; then, for a world that does not load,
//! its stderr, and for one that loads, its warning lines.
//!
//! Every problem of a world is reported at once, with its file, line and
//! column, and a suggestion where a near name exists; warnings (a being
//! that can never wake, an undeclared space kind or signal) let it run.
//! After a change in wording, regenerate an expectation with
//! `SEED_AUTHORING_BLESS=1 cargo test --test integration -- authoring`
//! and read the diff before committing it.

use std::path::Path;
use std::process::Command;

const CASES: &str = "tests/fixtures/authoring";

fn told(case: &Path, verb: &[&str]) -> String {
    let land = tempfile::tempdir().expect("folder");
    let output = Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("--land")
        .arg(land.path().join("land"))
        .args(verb)
        .arg("world.toml")
        .args(["--ticks", "1"])
        .current_dir(case)
        .env_remove("SEED_LAND")
        .env("RUST_LOG", "off")
        .output()
        .expect("run seed");
    let code = output.status.code().unwrap_or(-1);
    let mut text = format!("exit {code}\n");
    if code == 0 {
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            if let Some(warning) = line.trim_start().strip_prefix("warning: ") {
                text.push_str(&format!("warning: {warning}\n"));
            }
        }
    } else {
        text.push_str(&String::from_utf8_lossy(&output.stderr));
    }
    text
}

fn check(case: &str, expected_exit: i32) {
    let folder = Path::new(CASES).join(case);
    let shown = told(&folder, &["sim"]);
    let expected_file = folder.join("expected.txt");
    if std::env::var_os("SEED_AUTHORING_BLESS").is_some() {
        std::fs::write(&expected_file, &shown).expect("write the expectation");
    }
    let expected = std::fs::read_to_string(&expected_file).expect("expected.txt");
    assert_eq!(shown, expected, "what an author is told about {case}");
    assert!(shown.starts_with(&format!("exit {expected_exit}\n")), "{case}: {shown}");
}

#[test]
fn a_broken_script_is_refused_at_load_naming_file_line_and_column() {
    // A being's script, a role's script and an extension operation's script.
    check("broken-script", 1);
}

#[test]
fn a_toml_syntax_error_names_its_line_and_column() {
    check("broken-toml", 1);
}

#[test]
fn broken_role_and_manifest_files_are_all_reported_together() {
    check("broken-files", 1);
}

#[test]
fn several_problems_in_one_world_are_listed_together_with_suggestions() {
    check("several-problems", 1);
}

#[test]
fn a_being_that_can_never_wake_is_a_warning() {
    check("never-waking", 0);
}

#[test]
fn undeclared_space_kinds_and_signals_are_warnings() {
    check("undeclared-kinds", 0);
}

#[test]
fn seed_up_refuses_a_broken_world_before_planting_anything() {
    let folder = Path::new(CASES).join("broken-script");
    let land = tempfile::tempdir().expect("folder");
    let up = Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("--land")
        .arg(land.path().join("land"))
        .args(["up", "--fixture", "world.toml", "--addr", "127.0.0.1:0", "--lifetime-s", "5"])
        .current_dir(&folder)
        .env_remove("SEED_LAND")
        .env("RUST_LOG", "off")
        .output()
        .expect("run seed up");
    let stderr = String::from_utf8_lossy(&up.stderr);
    assert_eq!(up.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("ann.rhai:1:9: the script does not compile: Unexpected ';'"), "{stderr}");
    assert!(!land.path().join("land").exists(), "nothing was planted: {stderr}");
}
