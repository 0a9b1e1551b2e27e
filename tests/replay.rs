//! `seed replay`: every demo world replays byte for byte; tampering and
//! definition changes are named and classified; replay never writes.

use crate::common;

use common::{copy_definitions, copy_tree, folder_snapshot, seed, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Simulates `fixture` into a fresh land and returns (tempdir, land path).
fn simulated(fixture: &str, ticks: u64) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("folder");
    let land = dir.path().join("land");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(fixture);
    let output = seed(&land, &["sim", fixture.to_str().expect("utf-8 path"), "--ticks", &ticks.to_string()]);
    assert!(output.status.success(), "{}", stderr(&output));
    (dir, land)
}

/// The summary line of `seed replay --json` (its last line).
fn replay_summary(land: &Path, arguments: &[&str]) -> (i32, Value) {
    let mut all = vec!["replay"];
    all.extend_from_slice(arguments);
    all.push("--json");
    let output = seed(land, &all);
    let text = stdout(&output);
    let last = text.lines().last().unwrap_or_else(|| panic!("no output; stderr: {}", stderr(&output)));
    let summary: Value = serde_json::from_str(last).expect("json line");
    (output.status.code().unwrap_or(-1), summary["summary"].clone())
}

fn beings(land: &Path) -> Vec<String> {
    let output = seed(land, &["beings", "--json"]);
    let listed: Value = serde_json::from_str(&stdout(&output)).expect("json");
    listed
        .as_array()
        .expect("array")
        .iter()
        .map(|being| format!("@{}", being["name"].as_str().expect("name")))
        .collect()
}

/// Everything the land holds: every file of the land folder, byte for byte
/// (opening the store writes nothing).
type LandFiles = Vec<(PathBuf, Vec<u8>)>;

fn land_content(land: &Path) -> LandFiles {
    folder_snapshot(land)
}

#[test]
fn every_being_of_every_demo_world_replays_byte_for_byte_and_the_land_is_untouched() {
    for (fixture, ticks) in
        [("court.toml", 12), ("factory.toml", 16), ("library.toml", 6), ("dance.toml", 8), ("market.toml", 40)]
    {
        let (_dir, land) = simulated(fixture, ticks);
        let before = land_content(&land);
        let mut moments = 0;
        for being in beings(&land) {
            let (code, summary) = replay_summary(&land, &[&being]);
            assert_eq!(code, 0, "{fixture} {being}: {summary}");
            assert_eq!(summary["divergences"].as_array().map(Vec::len), Some(0), "{fixture} {being}");
            moments += summary["moments"].as_u64().expect("count");
        }
        assert!(moments > 0, "{fixture}: replay rebuilt no moment");
        // The land-wide replay rebuilds the same moments, all of them matching.
        let output = seed(&land, &["replay", "--all", "--json"]);
        assert_eq!(output.status.code(), Some(0), "{fixture}: {}", stdout(&output));
        let all: Value = serde_json::from_str(&stdout(&output)).expect("json");
        assert_eq!(all["moments"].as_u64(), Some(moments), "{fixture}: {all}");
        assert_eq!(all["divergences"], 0, "{fixture}: {all}");
        assert!(land_content(&land) == before, "{fixture}: replay changed the land");
    }
}

#[test]
fn a_tampered_historic_fact_is_named_by_verify_and_by_replay() {
    let (_dir, land) = simulated("factory.toml", 8);
    // Inside the body, before the signature.
    common::flip_stored_byte(&land, "@worker-a", 2, 70);
    let verify = seed(&land, &["verify"]);
    assert_eq!(verify.status.code(), Some(1));
    assert!(stdout(&verify).contains("worker-a") && stdout(&verify).contains("seq 2"), "{}", stdout(&verify));
    let (code, summary) = replay_summary(&land, &["@worker-a"]);
    assert_eq!(code, 1);
    let problems = summary["problems"].to_string();
    assert!(problems.contains("seq 2"), "{summary}");
    assert_eq!(summary["stoppedEarly"], true);
    let all = seed(&land, &["replay", "--all"]);
    assert_eq!(all.status.code(), Some(1));
    assert!(stdout(&all).contains("PROBLEM") && stdout(&all).contains("seq 2"), "{}", stdout(&all));
}

fn replay_all_json(land: &Path, arguments: &[&str]) -> (i32, Value) {
    let mut all = vec!["replay", "--all", "--json"];
    all.extend_from_slice(arguments);
    let output = seed(land, &all);
    let report = serde_json::from_str(&stdout(&output)).unwrap_or_else(|_| panic!("json: {}", stderr(&output)));
    (output.status.code().unwrap_or(-1), report)
}

#[test]
fn a_verification_checkpoint_vouches_only_for_the_facts_it_covers_and_a_tampered_signature_is_still_named() {
    let (_dir, land) = simulated("factory.toml", 8);
    let checkpoint_file = land.join(seed::check::checkpoint::CHECKPOINT_FILE);
    // A clean `seed verify` records the checkpoint; replay then checks no signature of the land again.
    let verify = seed(&land, &["verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
    assert!(stdout(&verify).contains("checkpoint: the signatures of"), "{}", stdout(&verify));
    let (code, report) = replay_all_json(&land, &[]);
    assert_eq!(code, 0, "{report}");
    let facts = report["factsVerified"].as_u64().expect("count");
    assert_eq!(report["signaturesCovered"].as_u64(), Some(facts), "{report}");
    let (code, report) = replay_all_json(&land, &["--no-checkpoint"]);
    assert_eq!((code, report["signaturesCovered"].as_u64()), (0, Some(0)), "{report}");

    // A checkpoint over the first half of the land log vouches for exactly that half.
    let half = facts / 2;
    {
        let opened = seed::land::Land::open(&land).expect("open");
        let records = opened.store().raw_records(None).expect("records");
        let decoded = seed::check::decode_records(&records, 1);
        let mut in_land_order: Vec<(u64, &seed::fact::Fact)> = records
            .iter()
            .zip(&decoded)
            .map(|(record, fact)| (record.land_seq.expect("land seq"), fact.as_ref().expect("decodes")))
            .collect();
        in_land_order.sort_by_key(|(land_seq, _)| *land_seq);
        let digest =
            seed::check::checkpoint::covered_digest(in_land_order.iter().take(half as usize).map(|(_, fact)| *fact));
        opened.write_verified_checkpoint(half, digest).expect("write the checkpoint");
        opened.close().expect("close");
    }
    let (code, report) = replay_all_json(&land, &[]);
    assert_eq!((code, report["signaturesCovered"].as_u64()), (0, Some(half)), "{report}");

    // Checkpoints that must not be trusted: unreadable, signed by a being
    // other than the root, signed by another key in the root's name, or
    // covering more facts than the land holds.
    let genuine = std::fs::read(&checkpoint_file).expect("read");
    std::fs::write(&checkpoint_file, b"not a checkpoint").expect("write");
    let (code, report) = replay_all_json(&land, &[]);
    assert_eq!((code, report["signaturesCovered"].as_u64()), (0, Some(0)), "{report}");
    assert!(report["checkpoint"].as_str().is_some_and(|note| note.contains("not used")), "{report}");
    let decoded = seed::check::checkpoint::VerifiedCheckpoint::decode(&genuine).expect("decodes");
    let stranger = ed25519_dalek::SigningKey::from_bytes(&[5; 32]);
    for (covered, signer) in [(half, seed::fact::BeingId([5; 32])), (half, decoded.signer), (facts + 1, decoded.signer)]
    {
        let forged = seed::check::checkpoint::VerifiedCheckpoint::seal(covered, decoded.digest, signer, &stranger);
        std::fs::write(&checkpoint_file, forged.encode()).expect("write");
        let (code, report) = replay_all_json(&land, &[]);
        assert_eq!((code, report["signaturesCovered"].as_u64()), (0, Some(0)), "{report}");
        assert!(report["checkpoint"].as_str().is_some_and(|note| note.contains("not used")), "{report}");
    }

    // With a checkpoint over the whole land, one flipped bit in the signature
    // of a historic fact: both commands name it, and no new checkpoint is written.
    assert_eq!(seed(&land, &["verify"]).status.code(), Some(0));
    let before = std::fs::read(&checkpoint_file).expect("read");
    common::flip_stored_byte(&land, "@worker-a", 2, 10);
    let (code, report) = replay_all_json(&land, &[]);
    assert_eq!(code, 1, "{report}");
    let problems = report["problems"].to_string();
    assert!(problems.contains("worker-a") && problems.contains("seq 2") && problems.contains("signature"), "{report}");
    assert!(report["checkpoint"].as_str().is_some_and(|note| note.contains("not used")), "{report}");
    let verify = seed(&land, &["verify"]);
    assert_eq!(verify.status.code(), Some(1));
    assert!(stdout(&verify).contains("worker-a") && stdout(&verify).contains("seq 2"), "{}", stdout(&verify));
    assert_eq!(std::fs::read(&checkpoint_file).expect("read"), before, "a land with problems gets no checkpoint");
}

/// A copy of the definitions in `dir` whose `emotions:bored` prompt says
/// something else; returns the copy's factory fixture.
fn factory_with_bored_changed(dir: &Path) -> PathBuf {
    let copy = dir.join("definitions");
    copy_definitions(&copy);
    let bored = copy.join("extensions/emotions/roles/bored.toml");
    let text = std::fs::read_to_string(&bored).expect("read");
    std::fs::write(&bored, text.replace("You would welcome something to do.", "You would rather be elsewhere."))
        .expect("edit");
    copy.join("fixtures/factory.toml")
}

#[test]
fn a_changed_role_diverges_at_the_first_moment_that_wore_it_and_is_classified_as_a_definition_change() {
    let (dir, land) = simulated("factory.toml", 16);
    let fixture = factory_with_bored_changed(dir.path());
    // The unchanged definitions replay cleanly first.
    assert_eq!(replay_summary(&land, &["@worker-a"]).0, 0);
    let (code, summary) = replay_summary(&land, &["@worker-a", "--fixture", fixture.to_str().expect("utf-8")]);
    assert_eq!(code, 1, "{summary}");
    let divergence = &summary["divergences"][0];
    // The first moment that wore emotions:bored (the earlier ones still match).
    let output = seed(&land, &["replay", "@worker-a"]);
    let first_bored = stdout(&output)
        .split("\n#")
        .find(|moment| {
            moment.lines().any(|line| line.trim_start().starts_with("roles") && line.contains("emotions:bored"))
        })
        .and_then(|moment| moment.trim_start_matches('#').split_whitespace().next().map(str::to_string))
        .expect("a moment wore emotions:bored");
    assert_eq!(divergence["seq"].as_u64().map(|seq| seq.to_string()), Some(first_bored));
    assert_eq!(divergence["cause"]["kind"], "definition changed");
    assert_eq!(divergence["cause"]["roles"][0]["role"], "emotions:bored");
    let fields: Vec<&str> =
        divergence["differences"].as_array().expect("list").iter().filter_map(|d| d["field"].as_str()).collect();
    assert!(fields.contains(&"digests.composed"), "{fields:?}");
    assert!(fields.iter().any(|field| field.starts_with("stack[")), "{fields:?}");
    assert_eq!(summary["stoppedEarly"], true);
    // How the role changed, from the definition the land archived when it was simulated.
    let changed = &divergence["roleDefinitionDifferences"][0];
    assert_eq!(changed["role"], "emotions:bored");
    let prompt = &changed["differences"][0];
    assert_eq!(prompt["field"], "prompt", "{changed}");
    assert!(prompt["expected"].as_str().is_some_and(|text| text.contains("welcome something to do")), "{changed}");
    assert!(prompt["actual"].as_str().is_some_and(|text| text.contains("rather be elsewhere")), "{changed}");
    assert_eq!(changed["differences"].as_array().map(Vec::len), Some(1), "only the prompt changed: {changed}");
    let text = stdout(&seed(&land, &["replay", "@worker-a", "--fixture", fixture.to_str().expect("utf-8")]));
    assert!(text.contains("- prompt:") && text.contains("+ prompt:"), "{text}");
    // Land-wide, every moment that wore the role diverges, each a definition change.
    let output = seed(&land, &["replay", "--all", "--json", "--fixture", fixture.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(1));
    let all: Value = serde_json::from_str(&stdout(&output)).expect("json");
    let first = all["firstDivergences"].as_array().expect("list");
    assert!(!first.is_empty() && all["divergences"].as_u64() == Some(first.len() as u64), "{all}");
    assert!(first.iter().all(|divergence| divergence["cause"]["kind"] == "definition changed"), "{all}");
    assert!(first.iter().any(|divergence| divergence["being"] == "worker-a"), "{all}");
}

#[test]
fn replay_refuses_bad_input_with_a_clear_error() {
    let (_dir, land) = simulated("court.toml", 2);
    let unknown = seed(&land, &["replay", "@nobody"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).contains("nobody"), "{}", stderr(&unknown));
    let backwards = seed(&land, &["replay", "@operator", "--from", "5", "--to", "2"]);
    assert!(!backwards.status.success());
    assert!(stderr(&backwards).contains("--from 5 is after --to 2"), "{}", stderr(&backwards));
    let no_definitions = tempfile::tempdir().expect("folder");
    let planted = no_definitions.path().join("land");
    assert!(seed(&planted, &["plant"]).status.success());
    // No fixture is recorded beside it, and none is needed: the operator
    // has no moment to rebuild (a land that recorded no definitions and has
    // moments asks for --fixture: `definitions::an_older_land...`).
    let nothing = seed(&planted, &["replay", "@operator"]);
    assert!(nothing.status.success(), "{}", stderr(&nothing));
    // No land at all is said so, for one being and for all.
    let nowhere = no_definitions.path().join("nowhere");
    for arguments in [&["replay", "@operator"][..], &["replay", "--all"]] {
        let output = seed(&nowhere, arguments);
        assert_eq!(output.status.code(), Some(1), "{arguments:?}");
        assert!(stderr(&output).starts_with("error: no land at"), "{arguments:?}: {}", stderr(&output));
    }
}

/// `seed replay --fork ... --json`: the exit code and the report.
fn fork_report(land: &Path, arguments: &[&str]) -> (i32, Value) {
    let mut all = vec!["replay"];
    all.extend_from_slice(arguments);
    all.push("--json");
    let output = seed(land, &all);
    let report = serde_json::from_str(&stdout(&output)).unwrap_or(Value::Null);
    (output.status.code().unwrap_or(-1), if report.is_null() { Value::String(stderr(&output)) } else { report })
}

fn wore(side: &Value, role: &str) -> bool {
    side["stack"].as_array().is_some_and(|stack| stack.iter().any(|worn| worn == role))
}

#[test]
fn a_fork_with_a_never_bored_flow_loses_exactly_the_bored_moments_and_the_original_is_untouched() {
    let (dir, land) = simulated("factory.toml", 30);
    let flow = dir.path().join("never-bored.json");
    std::fs::write(&flow, r#"[{"role": "factory-worker"}]"#).expect("write");
    let kept = dir.path().join("branch");
    let before = land_content(&land);
    let (code, report) = fork_report(
        &land,
        &["@worker-a", "--fork", "3", "--flow", flow.to_str().expect("utf-8"), "--keep", kept.to_str().expect("utf-8")],
    );
    assert_eq!(code, 0, "{report}");
    assert!(land_content(&land) == before, "a fork changed the original land");
    assert_eq!(report["forkTick"], 3);
    assert!(report["prefixFacts"].as_u64().expect("count") > 0);
    assert!(report["controlDiffersAt"].is_null(), "the unchanged control must reproduce the original: {report}");
    let moments = report["moments"].as_array().expect("moments");
    let bored_in_original: Vec<u64> = moments
        .iter()
        .filter(|m| wore(&m["original"], "emotions:bored"))
        .map(|m| m["tick"].as_u64().expect("tick"))
        .collect();
    let changed: Vec<u64> = moments
        .iter()
        .filter(|m| m["rolesChanged"] == true || m["actChanged"] == true)
        .map(|m| m["tick"].as_u64().expect("tick"))
        .collect();
    assert!(bored_in_original.len() >= 2, "the factory run should bore worker-a more than once: {report}");
    assert_eq!(changed, bored_in_original, "exactly the moments that wore emotions:bored change");
    for moment in moments {
        assert!(!wore(&moment["branch"], "emotions:bored"), "the branch never wears emotions:bored: {moment}");
    }
    assert_eq!(report["othersChanged"].as_array().map(Vec::len), Some(0), "worker-b is untouched: {report}");
    // The kept branch is a land of its own that replays clean.
    let (code, summary) = replay_summary(&kept, &["@worker-a"]);
    assert_eq!(code, 0, "{summary}");
    assert!(summary["moments"].as_u64().expect("count") > 0);
}

#[test]
fn a_fork_without_a_change_matches_the_original_and_bad_fork_requests_are_named() {
    let (dir, land) = simulated("factory.toml", 8);
    let (code, report) = fork_report(&land, &["@worker-b", "--fork", "2", "--ticks", "4"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["changed"]["moments"], 0, "{report}");
    assert_eq!(report["controlWorldHash"], report["branchWorldHash"]);
    assert_eq!(report["lastTick"], 5);
    let bad_flow = dir.path().join("bad.json");
    std::fs::write(&bad_flow, r#"[{"role": "no-such-role"}]"#).expect("write");
    let not_array = dir.path().join("object.json");
    std::fs::write(&not_array, r#"{"role": "factory-worker"}"#).expect("write");
    let bad_flow = bad_flow.to_str().expect("utf-8");
    let not_array = not_array.to_str().expect("utf-8");
    for (arguments, expected) in [
        (vec!["@worker-b", "--fork", "0"], "genesis fact, not a moment"),
        (vec!["@worker-b", "--fork", "999"], "no fact at seq 999"),
        (vec!["@worker-b", "--fork", "2", "--flow", bad_flow], "no role named \"no-such-role\""),
        (vec!["@worker-b", "--fork", "2", "--flow", not_array], "a roleFlow is a JSON array"),
        (vec!["@worker-b", "--fork", "2", "--ticks", "0"], "--ticks 0 is out of range"),
        (vec!["@worker-b", "--fork", "2", "--roles", "/no/such/folder"], "no such folder"),
        (vec!["@worker-b", "--flow", bad_flow], "--fork"),
        (vec!["@worker-b", "--fork", "2", "--from", "1"], "cannot be used with"),
    ] {
        let mut all = vec!["replay"];
        all.extend(arguments.iter().copied());
        let output = seed(&land, &all);
        assert!(!output.status.success(), "{arguments:?} must fail");
        assert!(stderr(&output).contains(expected), "{arguments:?}: {}", stderr(&output));
    }
}

/// Runs `seed replay BEING --step` with `commands` on stdin; returns stdout.
fn step_session(land: &Path, being: &str, commands: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("--land")
        .arg(land)
        .args(["replay", being, "--step"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run seed");
    child.stdin.take().expect("stdin").write_all(commands.as_bytes()).expect("write commands");
    let output = child.wait_with_output().expect("wait");
    assert!(output.status.success(), "{}", stderr(&output));
    stdout(&output)
}

/// The reel seqs of the moments the session showed, in order.
fn shown_seqs(transcript: &str) -> Vec<u64> {
    transcript
        .lines()
        .map(|line| line.trim_start_matches("(replay) "))
        .filter_map(|line| line.strip_prefix('#'))
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .collect()
}

#[test]
fn stepping_stops_at_each_kind_of_breakpoint_and_back_past_the_start_stops_at_the_first() {
    let (_dir, land) = simulated("factory.toml", 30);
    // Past the end, then back further than the start: it stops at the first moment.
    let transcript = step_session(&land, "@worker-a", &format!("{}back 99\nnext\nquit\n", "next\n".repeat(18)));
    let shown = shown_seqs(&transcript);
    assert_eq!(&shown[..16], &(1..=16).collect::<Vec<u64>>()[..], "{transcript}");
    assert_eq!(&shown[16..], &[1, 2], "{transcript}");
    assert!(transcript.contains("end of the reel"), "{transcript}");
    assert!(!transcript.contains("nondeterminism"), "{transcript}");

    for (breakpoint, wanted_seq, wanted_text) in [
        ("seq 7", 7, "#7 "),
        ("verb do:stretch", 5, "emotions:bored"),
        (r#"when {"time.sinceLastMoment": {"gte": 60}}"#, 5, "stretch"),
        ("verb do:attach-trucks", 3, "attach-trucks"),
    ] {
        let transcript = step_session(&land, "@worker-a", &format!("break {breakpoint}\ncontinue\nquit\n"));
        assert!(transcript.contains("breakpoint: "), "{breakpoint}: {transcript}");
        assert_eq!(shown_seqs(&transcript), vec![wanted_seq], "{breakpoint}: {transcript}");
        assert!(transcript.contains(wanted_text), "{breakpoint}: {transcript}");
    }
    // A breakpoint that never holds runs to the end; a bad one is refused with the grammar.
    let transcript = step_session(&land, "@worker-a", "break seq 999\nbreak verb fly\ncontinue\nquit\n");
    assert!(transcript.contains("end of the reel"), "{transcript}");
    assert!(transcript.contains("the verbs are see, do, summon and be"), "{transcript}");
    // Printing the open context and one key of it.
    let transcript = step_session(
        &land,
        "@worker-a",
        "break verb do:stretch\ncontinue\nprint time.sinceLastMoment\nprint composed\nquit\n",
    );
    assert!(transcript.contains("time.sinceLastMoment = 60"), "{transcript}");
    assert!(transcript.contains("You have been idle for a while"), "the composed prompt: {transcript}");
}

#[test]
fn stepping_back_rebuilds_exactly_the_moments_of_the_first_run() {
    let (_dir, land) = simulated("factory.toml", 30);
    let transcript =
        step_session(&land, "@worker-a", &format!("{}back 15\nnext\nnext\nback\nquit\n", "next\n".repeat(16)));
    let shown = shown_seqs(&transcript);
    assert_eq!(&shown[..16], &(1..=16).collect::<Vec<u64>>()[..], "{transcript}");
    assert_eq!(&shown[16..], &[1, 2, 3, 2], "{transcript}");
    assert!(!transcript.contains("nondeterminism"), "{transcript}");
    // A fact-kind breakpoint stops the fold at the first such fact (the beings' births).
    let transcript = step_session(&land, "@worker-a", "break kind genesis\ncontinue\nquit\n");
    assert!(transcript.contains("breakpoint: kind genesis: land seq"), "{transcript}");
}

/// Runs `seed corpus ARGS...` (no land needed).
fn corpus(arguments: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("corpus")
        .args(arguments)
        .env_remove("SEED_LAND")
        .output()
        .expect("run seed")
}

fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_replay_corpus_replays_as_captured() {
    let corpus_dir = repository().join("replay");
    let output = corpus(&["check", "--dir", corpus_dir.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    for world in ["court", "factory", "library", "dance", "market", "workshop"] {
        assert!(stdout(&output).contains(&format!("ok      {}", corpus_dir.join(format!("{world}.toml")).display())));
    }
}

/// Runs `seed --store URL corpus ARGS...`: each capture is checked in a
/// scratch schema of that database.
fn corpus_on_postgres(url: &str, arguments: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
        .args(["--store", url, "corpus"])
        .args(arguments)
        .env_remove("SEED_LAND")
        .output()
        .expect("run seed")
}

#[test]
fn the_replay_corpus_replays_as_captured_on_postgres_and_a_damaged_capture_fails_there_too() {
    if !crate::postgres::postgres_opted_in() {
        return;
    }
    let url = common::postgres::fresh_database();
    let dir = tempfile::tempdir().expect("folder");
    copy_definitions(dir.path());
    copy_tree(&repository().join("replay"), &dir.path().join("replay"));
    let corpus_dir = dir.path().join("replay");
    let corpus_dir_text = corpus_dir.to_str().expect("utf-8");
    let output = corpus_on_postgres(&url, &["check", "--dir", corpus_dir_text]);
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    for world in ["court", "factory", "library", "dance", "market", "workshop"] {
        assert!(stdout(&output).contains(&format!("ok      {}", corpus_dir.join(format!("{world}.toml")).display())));
    }
    let capture = corpus_dir.join("library.land");
    let mut flipped = std::fs::read(&capture).expect("read");
    let inside_the_last_fact = flipped.len() - 100;
    flipped[inside_the_last_fact] ^= 0x01;
    std::fs::write(&capture, &flipped).expect("write");
    let output = corpus_on_postgres(&url, &["check", "--dir", corpus_dir_text, "--name", "library"]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(stdout(&output).contains("FAILED"), "{}", stdout(&output));
    // Every scratch schema was dropped, the failed entry's too.
    let left =
        common::postgres::psql_url(&url, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'seed_corpus_scratch%'");
    assert_eq!(left, "0");
    // A database that cannot hold a scratch store is one clear error.
    let missing = url.replacen("postgres:///", "postgres:///no_such_", 1);
    let output = corpus_on_postgres(&missing, &["check", "--dir", corpus_dir_text]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("does not exist"), "{}", stderr(&output));
    assert!(!stdout(&output).contains("FAILED"), "no entry is reported: {}", stdout(&output));
}

#[test]
fn capturing_a_demo_world_again_reproduces_its_corpus_entry_byte_for_byte() {
    let dir = tempfile::tempdir().expect("folder");
    let fixture = repository().join("fixtures/court.toml");
    let output = corpus(&[
        "capture",
        fixture.to_str().expect("utf-8"),
        "--name",
        "court",
        "--ticks",
        "12",
        "--dir",
        dir.path().to_str().expect("utf-8"),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let captured = std::fs::read(dir.path().join("court.land")).expect("capture");
    let committed = std::fs::read(repository().join("replay/court.land")).expect("corpus");
    assert!(captured == committed, "the court's land changed: re-capture after an intended change (docs/replay.md)");
}

#[test]
fn a_changed_definition_or_a_damaged_capture_fails_the_corpus_check() {
    let dir = tempfile::tempdir().expect("folder");
    copy_definitions(dir.path());
    copy_tree(&repository().join("replay"), &dir.path().join("replay"));
    let corpus_dir = dir.path().join("replay");
    let corpus_dir_text = corpus_dir.to_str().expect("utf-8");
    assert_eq!(corpus(&["check", "--dir", corpus_dir_text]).status.code(), Some(0), "the copy checks clean");

    let bored = dir.path().join("extensions/emotions/roles/bored.toml");
    let text = std::fs::read_to_string(&bored).expect("read");
    std::fs::write(&bored, text.replace("You would welcome something to do.", "Idle hands.")).expect("edit");
    let output = corpus(&["check", "--dir", corpus_dir_text]);
    assert_eq!(output.status.code(), Some(1));
    let report = stdout(&output);
    assert!(report.contains("FAILED") && report.contains("factory.toml"), "{report}");
    assert!(report.contains("definition changed"), "{report}");
    assert!(report.contains("ok      ") && report.contains("court.toml"), "the court does not wear the role: {report}");
    std::fs::write(&bored, text).expect("restore");

    let capture = corpus_dir.join("library.land");
    let original = std::fs::read(&capture).expect("read");
    let mut flipped = original.clone();
    let inside_the_last_fact = flipped.len() - 100;
    flipped[inside_the_last_fact] ^= 0x01;
    std::fs::write(&capture, &flipped).expect("write");
    let output = corpus(&["check", "--dir", corpus_dir_text, "--name", "library"]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(stdout(&output).contains("FAILED"), "{}", stdout(&output));

    std::fs::write(&capture, &original[..original.len() - 10]).expect("truncate");
    let output = corpus(&["check", "--dir", corpus_dir_text, "--name", "library"]);
    assert!(stdout(&output).contains("truncated"), "{}", stdout(&output));

    let mut newer = original.clone();
    newer[18..26].copy_from_slice(&99u64.to_be_bytes());
    std::fs::write(&capture, &newer).expect("write");
    let output = corpus(&["check", "--dir", corpus_dir_text, "--name", "library"]);
    assert!(stdout(&output).contains("format 99 is newer than this build reads"), "{}", stdout(&output));

    let output = corpus(&["check", "--dir", dir.path().to_str().expect("utf-8")]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("no corpus entries"), "{}", stderr(&output));
}

#[test]
fn an_act_whose_effects_the_seal_time_rules_changed_replays_with_the_changed_effects() {
    // Two drummers beat in the same round: both moments open on the same
    // world, but the beat operation counts from the world as it stands when
    // the act seals, so the second act sealed carries the effects of its
    // operation run again after the first. Replay must recompute the moment,
    // rerun the seal-time rules against the world the first act left, and
    // compare the act with the changed effects: byte for byte, no divergence.
    let dir = tempfile::tempdir().expect("folder");
    let copy = dir.path().join("definitions");
    copy_definitions(&copy);
    let fixture = copy.join("fixtures/two-drummers.toml");
    let dance = std::fs::read_to_string(copy.join("fixtures/dance.toml")).expect("read");
    let drummer =
        &dance[dance.find("[[being]]").expect("a being")..dance.find("name = \"dancer-1\"").expect("dancers")];
    let drummer = drummer.trim_end().trim_end_matches("[[being]]");
    let world = &dance[..dance.find("[[being]]").expect("a being")];
    let second = drummer.replace("name = \"drummer\"", "name = \"drummer-b\"");
    std::fs::write(&fixture, format!("{world}{drummer}\n{second}")).expect("write fixture");
    let land = dir.path().join("land");
    let output = seed(&land, &["sim", fixture.to_str().expect("utf-8 path"), "--ticks", "3"]);
    assert!(output.status.success(), "{}", stderr(&output));

    // What each drummer sealed in its first moment: the cursor it opened at
    // and the count its beat set.
    let first_beat = |being: &str| {
        let text = stdout(&seed(&land, &["replay", being, "--json"]));
        let moment: Value = serde_json::from_str(text.lines().next().expect("a moment")).expect("json line");
        let count = moment["effects"]
            .as_array()
            .expect("effects")
            .iter()
            .find(|effect| effect["key"] == "harmony.tick.count")
            .map(|effect| effect["value"].clone())
            .unwrap_or_else(|| panic!("{being} set no count: {moment}"));
        (moment["cursor"].clone(), count)
    };
    let (cursor_a, count_a) = first_beat("@drummer");
    let (cursor_b, count_b) = first_beat("@drummer-b");
    assert_eq!(cursor_a, cursor_b, "both moments opened on the same world");
    let mut counts = [count_a.as_u64(), count_b.as_u64()];
    counts.sort();
    assert_eq!(counts, [Some(1), Some(2)], "the act sealed second counted after the first");

    for being in ["@drummer", "@drummer-b"] {
        let (code, summary) = replay_summary(&land, &[being]);
        assert_eq!((code, summary["divergences"].as_array().map(Vec::len)), (0, Some(0)), "{being}: {summary}");
    }
    let output = seed(&land, &["replay", "--all", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let all: Value = serde_json::from_str(&stdout(&output)).expect("json");
    assert_eq!((all["moments"].as_u64(), all["divergences"].as_u64()), (Some(6), Some(0)), "{all}");
}

#[test]
fn a_known_body_that_does_not_match_its_schema_is_named_by_verify_and_by_replay() {
    // Verification reads every body of a known kind against its schema. A
    // signed, canonical note whose text is missing or not text is named.
    let (_dir, land_path) = simulated("dance.toml", 1);
    {
        let land = seed::land::Land::open(&land_path).expect("open");
        let drummer = land.resolve("@drummer").expect("drummer");
        for body in [serde_json::json!({"txt": "hello"}), serde_json::json!({"text": 7})] {
            let body = seed::canonical::encode_json(&body).expect("encodes");
            land.seal(&drummer, "note", body).expect("sealed");
        }
        land.close().expect("close");
    }
    let verify = seed(&land_path, &["verify"]);
    assert_eq!(verify.status.code(), Some(1), "{}", stdout(&verify));
    let report = stdout(&verify);
    for expected in [
        "seq 2: body of kind \"note\" does not match its schema: unknown field `txt`, expected `text`",
        "seq 3: body of kind \"note\" does not match its schema: invalid type: integer `7`, expected string",
    ] {
        assert!(report.contains(expected), "{expected:?} not in {report}");
    }
    let output = seed(&land_path, &["replay", "--all", "--json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(stdout(&output).contains("unknown field `txt`"), "{}", stdout(&output));
}

/// The entries of the last act body of `reel`, as a map of CBOR values.
fn last_act_entries(reel: &[seed::store::StoredFact]) -> Vec<(ciborium::value::Value, ciborium::value::Value)> {
    let last_act = reel.iter().rev().find(|stored| stored.fact.kind() == "act").expect("an act");
    match seed::canonical::decode_canonical(last_act.fact.body()).expect("canonical") {
        ciborium::value::Value::Map(entries) => entries,
        other => panic!("an act body is a map, not {other:?}"),
    }
}

#[test]
fn an_act_body_that_is_not_canonical_is_named_land_wide_as_verify_names_it() {
    // Land replay leaves an act body's canonical form unchecked until its
    // recomputation fails to encode to the stored bytes. A signed act whose
    // map keys are out of canonical order must still be named exactly as
    // `seed verify` names it, with every other moment matching.
    let (_dir, land_path) = simulated("dance.toml", 2);
    append_act_with_keys_out_of_order(&land_path);
    let all = replay_names_as_verify_names(&land_path, "canonical");
    // Every other moment still matches.
    assert_eq!(all["divergences"].as_u64(), Some(0), "{all}");
}

#[test]
fn a_non_canonical_act_is_named_land_wide_as_verify_names_it() {
    // Land replay defers the canonical-form check of an act's body to the
    // comparison of its recomputed bytes: a signed act whose map keys are
    // out of order must still be named, as `seed verify` names it.
    let (_dir, land_path) = simulated("dance.toml", 2);
    append_act_with_keys_out_of_order(&land_path);
    replay_names_as_verify_names(&land_path, "canonical");
}

/// Appends to the drummer's reel an act signed with its key whose body's
/// map keys are out of canonical order (sealing refuses such a body, so it
/// is signed by hand, as a forger would); returns the drummer and the seq.
fn append_act_with_keys_out_of_order(land_path: &Path) -> (seed::fact::BeingId, u64) {
    let land = seed::land::Land::open(land_path).expect("open");
    let drummer = land.resolve("@drummer").expect("drummer");
    let reel = land.store().reel(&drummer, 0, u64::MAX).expect("reel");
    let mut entries = last_act_entries(&reel);
    entries.reverse();
    let mut body = Vec::new();
    ciborium::into_writer(&ciborium::value::Value::Map(entries), &mut body).expect("encodes");
    assert!(seed::canonical::check_canonical(&body).is_err(), "the keys are out of order");
    let head = reel.last().expect("a reel");
    let header = seed::fact::FactHeader {
        being: drummer,
        seq: head.fact.header.seq + 1,
        prev: head.fact.id(),
        stored_time_ms: head.fact.header.stored_time_ms,
        kind: "act".into(),
        body_len: body.len() as u64,
        body_hash: seed::fact::blake3_of(&body),
    };
    let header_bytes = header.encode();
    let key = land.keys().load(&drummer).expect("the drummer's key");
    let signature = ed25519_dalek::Signer::sign(&key, &header_bytes).to_bytes();
    let mut envelope = Vec::new();
    seed::canonical::write_array_head(3, &mut envelope);
    for part in [&header_bytes[..], &body, &signature] {
        seed::canonical::write_bytes(part, &mut envelope);
    }
    assert!(seed::fact::Fact::decode_envelope(&envelope).is_err(), "not canonical");
    let fact = seed::fact::Fact::decode_envelope_deferring_form_of(&envelope, |_| true).expect("well formed otherwise");
    land.store().append(fact).expect("appended");
    land.close().expect("close");
    (drummer, header.seq)
}

/// `seed verify` fails naming a problem that mentions `what`, and `seed
/// replay --all` fails naming the same problem; returns replay's report.
fn replay_names_as_verify_names(land_path: &Path, what: &str) -> Value {
    let verify = seed(land_path, &["verify"]);
    assert_eq!(verify.status.code(), Some(1), "{}", stdout(&verify));
    let problem = stdout(&verify)
        .lines()
        .find(|line| line.contains(what))
        .unwrap_or_else(|| panic!("verify names the body: {}", stdout(&verify)))
        .trim()
        .to_string();
    let output = seed(land_path, &["replay", "--all", "--json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let all: Value = serde_json::from_str(&stdout(&output)).expect("json");
    let problems = all["problems"].as_array().cloned().unwrap_or_default();
    assert!(
        problems
            .iter()
            .any(|named| named.as_str().is_some_and(|named| problem.contains(named) || named.contains(&problem))),
        "{problem:?} not in {all}"
    );
    all
}

#[test]
fn an_act_body_that_does_not_read_as_an_act_is_a_divergence_land_wide() {
    // A land-wide replay reads only the fields of an act body a moment
    // needs, and the rest only when the recomputed bytes differ. A signed
    // act whose body lacks the evaluator's version must still be named, and
    // so must one that lacks a field the moment needs (its wake), whose
    // recomputation cannot even start.
    for missing in ["evaluator", "wake"] {
        check_an_act_body_without(missing);
    }
}

fn check_an_act_body_without(missing: &str) {
    let (_dir, land_path) = simulated("dance.toml", 2);
    {
        let land = seed::land::Land::open(&land_path).expect("open");
        let drummer = land.resolve("@drummer").expect("drummer");
        let reel = land.store().reel(&drummer, 0, u64::MAX).expect("reel");
        let entries = last_act_entries(&reel);
        let without_evaluator: Vec<_> = entries.into_iter().filter(|(key, _)| key.as_text() != Some(missing)).collect();
        let body = seed::canonical::encode_value(&ciborium::value::Value::Map(without_evaluator)).expect("encodes");
        land.seal(&drummer, "act", body).expect("sealed");
        land.close().expect("close");
    }
    let output = seed(&land_path, &["replay", "--all", "--json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let all: Value = serde_json::from_str(&stdout(&output)).expect("json");
    assert_eq!(all["divergences"].as_u64(), Some(1), "{all}");
    let divergence = &all["firstDivergences"][0];
    assert_eq!(divergence["being"], "drummer", "{all}");
    assert_eq!(divergence["fields"], serde_json::json!(["body"]), "{all}");
    assert_eq!(divergence["cause"]["kind"], "stored input changed", "{all}");
    assert!(
        divergence["cause"]["problems"][0]
            .as_str()
            .is_some_and(|reason| reason.contains(&format!("missing field `{missing}`"))),
        "{missing}: {all}"
    );
    // Replaying the drummer alone names it as a problem of the stored input.
    let (code, summary) = replay_summary(&land_path, &["@drummer"]);
    assert_eq!(code, 1, "{summary}");
    let problems = summary["problems"].as_array().expect("problems");
    assert!(
        problems.iter().any(|problem| problem.as_str().is_some_and(|text| text.contains("does not read as an act"))),
        "{summary}"
    );
    assert_eq!(summary["stoppedEarly"], true, "{summary}");
}

/// Runs `rounds` rounds of `simulation`, each of which must succeed.
fn rounds(simulation: &mut seed::engine::Engine, rounds: usize) {
    for _ in 0..rounds {
        simulation.round().expect("a round goes on");
    }
}

#[test]
fn a_being_whose_key_is_missing_fails_alone_and_every_sealed_act_replays() {
    let dir = tempfile::tempdir().expect("folder");
    let land = dir.path().join("land");
    let trace = dir.path().join("moments.jsonl");
    let fixture_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/court.toml");
    let fixture = seed::engine::fixture::Fixture::load(&fixture_path).expect("fixture");
    let options = seed::engine::EngineOptions {
        store: Default::default(),
        snapshot_every_facts: None,
        snapshot_spacing_step_bytes: None,
        ticks: None,
        seed: 0,
        threads: 2,
        land_dir: land.clone(),
        trace_file: Some(trace.clone()),
        progress: std::sync::Arc::new(seed::progress::NoProgress),
        model: None,
        mode: seed::engine::Mode::Simulation,
    };
    let mut simulation = seed::engine::Engine::plant(&fixture, &options).expect("plant");
    rounds(&mut simulation, 2);
    let ada = simulation.land.resolve("@ada").expect("ada");
    let key = simulation.land.keys().load(&ada).expect("ada's key");
    simulation.land.keys().forget(&ada).expect("forget the key");
    // As after a restart or a failed step: every writer reads its key again.
    simulation.land.reload_writers();
    let before = simulation.land.store().land_len().expect("len");
    rounds(&mut simulation, 4);
    assert!(simulation.land.store().land_len().expect("len") > before, "the other beings went on");
    simulation.land.keys().store(&ada, &key).expect("restore the key");
    rounds(&mut simulation, 4);
    simulation.finish().expect("finish");

    let traces: Vec<Value> = std::fs::read_to_string(&trace)
        .expect("trace")
        .lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    let outcomes = |name: &str, ticks: std::ops::RangeInclusive<u64>| -> Vec<String> {
        traces
            .iter()
            .filter(|t| t["name"] == name && ticks.contains(&t["tick"].as_u64().unwrap_or(0)))
            .map(|t| t["outcome"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let missing = outcomes("ada", 3..=6);
    assert!(!missing.is_empty() && missing.iter().all(|o| o.contains("no signing key")), "{missing:?}");
    let others = outcomes("ben", 3..=6);
    assert!(others.iter().any(|o| o.starts_with("act")), "ben acted meanwhile: {others:?}");
    let back = outcomes("ada", 7..=10);
    assert!(back.iter().any(|o| o.starts_with("act")), "ada acts again with its key back: {back:?}");

    let fixture_arg = fixture_path.to_str().expect("utf-8");
    let verify = seed(&land, &["verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}{}", stdout(&verify), stderr(&verify));
    let (code, report) = replay_all_json(&land, &["--fixture", fixture_arg]);
    assert_eq!((code, report["divergences"].clone()), (0, Value::from(0)), "{report}");
}

#[test]
fn a_checkpoint_is_never_signed_with_a_key_the_root_reel_does_not_name() {
    let (_dir, land) = simulated("court.toml", 2);
    let opened = seed::land::Land::open(&land).expect("open");
    let (root, ada) = (opened.root(), opened.resolve("@ada").expect("ada"));
    opened.close().expect("close");
    // Another valid key as the root's: ada's.
    let keys = seed::keys::KeyRing::open(&land.join("keys")).expect("ring");
    keys.store(&root, &keys.load(&ada).expect("ada's key")).expect("swap the key");
    let checkpoint = land.join(seed::check::checkpoint::CHECKPOINT_FILE);
    let _ = std::fs::remove_file(&checkpoint);
    // The facts verify; the checkpoint is refused, naming the key file.
    let verify = seed(&land, &["verify"]);
    let said = format!("{}{}", stdout(&verify), stderr(&verify));
    assert!(said.contains("does not match the key the reel expects") && said.contains(&root.to_hex()), "{said}");
    assert!(!checkpoint.exists(), "no checkpoint was signed");
}

/// A land-wide replay reads the land log a window at a time and reads ahead
/// to the acts that opened at a cursor. Whatever the window and however
/// little it may read ahead (acts beyond it are read one by one), the report
/// is the one the default reading gives: on a land with an act that is not
/// canonical, and on a land replayed against a changed role (a divergence at
/// every moment that wore it).
#[test]
fn replaying_the_land_in_windows_of_any_size_reports_what_the_default_reading_reports() {
    let (_dance_dir, dance) = simulated("dance.toml", 8);
    append_act_with_keys_out_of_order(&dance);
    let dance_fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dance.toml");
    let report = check_replay_in_windows(&dance, &dance_fixture, true);
    assert!(report.problems.iter().any(|problem| problem.contains("canonical")), "{report:?}");
    assert_eq!(report.divergences_total, 0, "{report:?}");
    let (factory_dir, factory) = simulated("factory.toml", 16);
    let report = check_replay_in_windows(&factory, &factory_with_bored_changed(factory_dir.path()), false);
    assert!(report.problems.is_empty() && report.divergences_total > 0, "{report:?}");
}

/// Replays `land` against `fixture` reading the land log in windows of
/// several sizes, on one thread and two, and holds each report to the
/// default reading's; returns that.
fn check_replay_in_windows(land: &Path, fixture: &Path, recorded: bool) -> seed::replay::land::LandReplayReport {
    use seed::replay::land::{replay_land, replay_land_in_windows, LandWindows};
    let land = seed::land::Land::open_read_only(land).expect("open");
    let loaded = seed::engine::fixture::Fixture::load(fixture).expect("fixture");
    let (substrate, _) = seed::engine::substrate_for(&loaded, &[]).expect("substrate");
    let claims = Default::default();
    let progress = seed::progress::NoProgress;
    // The land's recorded definitions (these files before any), or these
    // files everywhere: the reading must not change which a moment runs with.
    let definitions = match recorded {
        true => seed::replay::ReplayDefinitions::recorded(land.store(), Some(&substrate)),
        false => seed::replay::ReplayDefinitions::files(land.store(), &substrate, None),
    };
    let default = replay_land(land.store(), &definitions, 2, None, &claims, &progress).expect("replay");
    assert!(default.moments >= 20, "{default:?}");
    for (window_facts, read_ahead_facts_max) in [(1, 0), (1, 1), (2, 3), (5, 0), (7, 40), (1_000, 1_000)] {
        let windows = LandWindows { window_facts, read_ahead_facts_max };
        for threads in [1, 2] {
            let report = replay_land_in_windows(land.store(), &definitions, threads, None, &claims, &progress, windows)
                .expect("replay");
            assert_eq!(report, default, "{windows:?} on {threads} threads");
        }
    }
    default
}

/// A land-wide replay verifies the facts its fold reads and decodes, where
/// `seed verify` reads them from the store itself: over tampered facts of
/// every kind, at the header, the body and the signature, both name the
/// same problems in the same order, on one thread and two, with windows
/// that make the fold read the land log twice (the second time beside a
/// verification of its own).
#[test]
fn a_land_wide_replay_names_every_problem_verification_names_in_the_same_order() {
    use seed::check::{verify_land, SignatureMode};
    use seed::replay::land::{replay_land_in_windows, LandWindows};
    let (_dir, land_path) = simulated("dance.toml", 3);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dance.toml");
    let loaded = seed::engine::fixture::Fixture::load(&fixture).expect("fixture");
    let (substrate, _) = seed::engine::substrate_for(&loaded, &[]).expect("substrate");
    let land = seed::land::Land::open(&land_path).expect("open");
    let (store, log) = (land.store(), land.surgery());
    let schemas = seed::world::CoreSchemas::leaving_acts_to_replay();
    let rules = schemas.rules(&seed::limits::Limits::default());
    let stored: Vec<_> = store.land_log(0, store.land_len().expect("length")).expect("land log");
    let (claims, progress) = (Default::default(), seed::progress::NoProgress);
    let mut compared = 0;
    for entry in stored.iter().step_by(2) {
        let original = log.stored_envelope(&entry.being, entry.seq).expect("read").expect("present");
        for at in [12, original.len() / 2, original.len() - 80, original.len() - 1] {
            let mut tampered = original.clone();
            tampered[at] ^= 0x04;
            log.overwrite_envelope_unchecked(&entry.being, entry.seq, &tampered).expect("tamper");
            let verified = verify_land(store, SignatureMode::Batch { batch_facts: 256 }, 2, rules).expect("verify");
            let named: Vec<String> = verified.problems.iter().map(ToString::to_string).collect();
            assert!(!named.is_empty(), "byte {at} of land seq {} went unnamed", entry.land_seq);
            for (threads, windows) in
                [(2, LandWindows::default()), (1, LandWindows { window_facts: 5, read_ahead_facts_max: 0 })]
            {
                let definitions = seed::replay::ReplayDefinitions::files(store, &substrate, None);
                let replayed = replay_land_in_windows(store, &definitions, threads, None, &claims, &progress, windows)
                    .expect("replay");
                assert_eq!(replayed.problems, named, "byte {at} of land seq {}, {windows:?}", entry.land_seq);
            }
            compared += 1;
        }
        log.overwrite_envelope_unchecked(&entry.being, entry.seq, &original).expect("restore");
    }
    assert!(compared >= 40, "{compared} tamperings compared");
    land.close().expect("close");
}

/// A frame at the end of the log that no reel can claim takes a land seq
/// the land log's windows hold no fact for: a land-wide replay passes over
/// it and names it as `seed verify` names it, where it must not stop short
/// of the end of the log.
#[test]
fn a_land_wide_replay_names_a_frame_no_reel_can_claim_as_verify_names_it() {
    let (_dir, land) = simulated("dance.toml", 2);
    let segments = land.join("log").join(seed::store::LOG_STORE_SEGMENTS_DIR);
    let mut log = seed::store::segments::SegmentLog::open_for_appending(&segments, 1 << 20).expect("the segment log");
    log.append_group([&b"not a fact"[..]]).expect("appended");
    drop(log);
    let all = replay_names_as_verify_names(&land, "holds no fact a reel can claim");
    assert_eq!(all["divergences"], 0, "{all}");
}

/// One being's replay reads a chunk of the land log whole at once after a
/// chunk that folded most of its facts (a run of geneses), telling the
/// facts it passes over from that read, and plans the chunk first again
/// once a chunk folds few: across every change between the two, its
/// report is the one a replay folding every fact gives.
#[test]
fn a_replay_reading_runs_of_geneses_whole_reports_what_folding_every_fact_reports() {
    // 10,008 geneses, then two rounds of 10,000 acts: chunks of each kind,
    // and other beings' acts before each being's last.
    let (_dir, land) = simulated("crowd.toml", 2);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/crowd.toml");
    let loaded = seed::engine::fixture::Fixture::load(&fixture).expect("fixture");
    let (substrate, _) = seed::engine::substrate_for(&loaded, &[]).expect("substrate");
    let opened = seed::land::Land::open_read_only(&land).expect("open");
    let store = opened.store();
    let all = store.beings().expect("beings");
    let options = seed::replay::ReplayOptions::default();
    for being in [all[0], all[all.len() / 2], all[all.len() - 1]] {
        let replayer = || seed::replay::Replayer::new(store, &substrate, being, options).expect("replayer");
        let folded = replayer().folding_every_fact().run().expect("replays");
        let mut passing_over = replayer();
        passing_over.run_in_place().expect("replays");
        assert_eq!(passing_over.report(), &folded, "{}", folded.name);
        assert!(passing_over.report().clean() && !folded.moments.is_empty(), "{:?}", folded.divergences);
        assert!(passing_over.chunks_read_whole() >= 2, "{}: {}", folded.name, passing_over.chunks_read_whole());
        assert!(passing_over.facts_passed_over() > 0, "{}", folded.name);
    }
}
