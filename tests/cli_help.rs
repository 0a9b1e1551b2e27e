//! The CLI's help: every argument and flag of every verb says what it is
//! for, flags that mean nothing for a verb are not offered there, and the
//! mistakes a newcomer makes first are answered with what to type instead.

use std::process::{Command, Output};

fn seed(arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seed")).args(arguments).env_remove("SEED_LAND").output().expect("run seed")
}

const VERBS: &[&[&str]] = &[
    &["up"],
    &["mcp"],
    &["plant"],
    &["beings"],
    &["reel"],
    &["audit"],
    &["verify"],
    &["export"],
    &["import"],
    &["reindex"],
    &["recover-operator"],
    &["rotate-key"],
    &["token"],
    &["sim"],
    &["worker"],
    &["replay"],
    &["corpus", "capture"],
    &["corpus", "check"],
    &["flow", "eval"],
    &["flow", "check"],
    &["script", "check"],
    &["script", "run"],
    &["stress"],
];

/// The arguments and flags `--help` lists that have no description: in the
/// long format each is a line of its own and its description the next,
/// indented further.
fn undescribed(help: &str) -> Vec<String> {
    let lines: Vec<&str> = help.lines().collect();
    let mut missing = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let is_entry = line.starts_with("  ")
            && (trimmed.starts_with('-') || trimmed.starts_with('<') || trimmed.starts_with('['));
        if !is_entry || line.len() - trimmed.len() > 6 {
            continue;
        }
        let indent = line.len() - trimmed.len();
        let described = lines.get(index + 1).is_some_and(|next| {
            let next_trimmed = next.trim_start();
            !next_trimmed.is_empty() && !next_trimmed.starts_with('[') && next.len() - next_trimmed.len() > indent + 2
        });
        if !described {
            missing.push(trimmed.to_string());
        }
    }
    missing
}

#[test]
fn every_argument_and_flag_of_every_verb_has_a_description() {
    for verb in VERBS {
        let mut arguments = verb.to_vec();
        arguments.push("--help");
        let output = seed(&arguments);
        assert!(output.status.success(), "seed {verb:?} --help");
        let help = String::from_utf8_lossy(&output.stdout);
        assert_eq!(undescribed(&help), Vec::<String>::new(), "seed {verb:?} --help:\n{help}");
    }
}

#[test]
fn commands_that_read_files_do_not_offer_or_take_land() {
    for verb in
        [&["flow", "eval"][..], &["flow", "check"], &["script", "check"], &["script", "run"], &["corpus", "check"]]
    {
        let mut arguments = verb.to_vec();
        arguments.push("--help");
        let help = String::from_utf8_lossy(&seed(&arguments).stdout).into_owned();
        assert!(!help.contains("--land"), "seed {verb:?} --help offers --land:\n{help}");
    }
    let refused = seed(&["flow", "check", "tests/fixtures/flows/court.json", "--land", "somewhere"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("this command reads files, not a land"));
    let help = String::from_utf8_lossy(&seed(&["verify", "--help"]).stdout).into_owned();
    assert!(help.contains("--land"), "a land's verbs keep it:\n{help}");
}

#[test]
fn replay_without_a_being_points_to_all() {
    let land = tempfile::tempdir().expect("folder");
    let output = seed(&["--land", land.path().to_str().unwrap(), "replay"]);
    assert_eq!(output.status.code(), Some(2));
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(error.contains("or --all to replay every being of the land"), "{error}");
}

#[test]
fn up_listens_on_a_host_name() {
    let land = tempfile::tempdir().expect("folder");
    let output = seed(&[
        "--land",
        land.path().join("land").to_str().unwrap(),
        "up",
        "--addr",
        "localhost:0",
        "--lifetime-s",
        "1",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("seed is up: http://127.0.0.1:"), "localhost resolves to its IPv4 address: {stdout}");
    let wrong = seed(&["--land", land.path().join("other").to_str().unwrap(), "up", "--addr", "nowhere"]);
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("is not HOST:PORT (e.g. 127.0.0.1:7777 or localhost:7777)"));
}

/// The request limits left `seed up`'s flags for the land's configuration:
/// an old script's flag is refused naming the key and how to set it, and
/// no land is created.
#[test]
fn up_refuses_the_request_limit_flags_naming_the_keys_that_replaced_them() {
    let scratch = tempfile::tempdir().expect("folder");
    let land = scratch.path().join("land");
    for (flag, key) in
        [("--requests-per-minute-max", "portal_requests_per_minute_max"), ("--body-bytes-max", "portal_body_bytes_max")]
    {
        let output = seed(&["--land", land.to_str().unwrap(), "up", flag, "4096", "--lifetime-s", "1"]);
        assert_eq!(output.status.code(), Some(1), "{flag}");
        let error = String::from_utf8_lossy(&output.stderr);
        let expected =
            format!("{flag} is no longer a flag of seed up: the limit is the land's configuration key {key}");
        assert!(error.contains(&expected), "{error}");
        assert!(error.contains(&format!("seed config set {key} 4096")), "{error}");
        assert!(!land.exists(), "{flag}: nothing is created");
    }
}
