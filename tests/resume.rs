//! Runs that resume (docs/resume.md): a `seed sim --land` whose driver is
//! killed (SIGKILL) at ten points spread over its rounds is finished by
//! `seed sim --resume`, and every resumed run ends with the world hash of
//! the run nobody killed; the resumed land verifies and replays. A resume
//! with another seed, a damaged checkpoint or changed definitions is
//! refused, naming why, and writes nothing.

use crate::common::{assert_verifies_and_replays_clean, seed, seed_command, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Kill points, each a fraction of the rounds' duration.
const KILL_POINTS: u64 = 10;
/// The longest a run may take to plant and write its first checkpoint.
const FIRST_CHECKPOINT_WAIT: Duration = Duration::from_secs(120);

fn world() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/resume/world.toml")
}

fn world_hash(output: &std::process::Output) -> String {
    assert!(output.status.success(), "{}{}", stdout(output), stderr(output));
    let summary: Value = serde_json::from_str(&stdout(output)).expect("JSON");
    summary["worldHash"].as_str().expect("a world hash").to_string()
}

/// Starts `seed sim` into `land` and waits for its first checkpoint (the
/// land is planted); returns the child and when the checkpoint appeared.
fn start_run(land: &Path) -> (std::process::Child, Instant) {
    let world = world();
    let mut command = seed_command(Path::new("."), &["sim", world.to_str().expect("utf-8"), "--json"]);
    command.arg("--land").arg(land).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = command.spawn().expect("seed sim starts");
    let started = Instant::now();
    let checkpoint = land.join(seed::engine::RESUME_CHECKPOINT_FILE);
    while !checkpoint.exists() {
        assert!(started.elapsed() < FIRST_CHECKPOINT_WAIT, "no checkpoint was written");
        assert!(child.try_wait().expect("waitable").is_none(), "the run ended before its first round");
        std::thread::sleep(Duration::from_millis(5));
    }
    (child, Instant::now())
}

#[test]
fn a_run_killed_at_ten_points_resumes_to_the_world_hash_of_the_run_nobody_killed() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    // The run nobody killed, timed from its first checkpoint to its end.
    let reference = dir.path().join("reference");
    let (child, rounds_started) = start_run(&reference);
    let output = child.wait_with_output().expect("the run ends");
    let rounds_took = rounds_started.elapsed();
    let expected = world_hash(&output);

    let mut interrupted = 0;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for point in 0..KILL_POINTS {
        // A seeded spread over the rounds: each tenth of them, jittered.
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let jitter = (state >> 33) % 1_000;
        let at = rounds_took.mul_f64((point as f64 + jitter as f64 / 1_000.0) / KILL_POINTS as f64);
        let land = dir.path().join(format!("killed-{point}"));
        let (mut child, rounds_started) = start_run(&land);
        std::thread::sleep(at.saturating_sub(rounds_started.elapsed()));
        if child.try_wait().expect("waitable").is_none() {
            interrupted += 1;
        }
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        let world = world();
        let resumed = seed(
            Path::new("."),
            &["sim", world.to_str().expect("utf-8"), "--land", land.to_str().expect("utf-8"), "--resume", "--json"],
        );
        assert_eq!(world_hash(&resumed), expected, "killed {at:?} into its rounds, then resumed");
        if point % 3 == 0 {
            assert_verifies_and_replays_clean(&land);
        }
    }
    assert!(interrupted >= KILL_POINTS / 2, "only {interrupted} of the kills stopped a running round");
}

#[test]
fn a_resume_with_another_seed_a_damaged_checkpoint_or_changed_definitions_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let land = dir.path().join("land");
    let (mut child, _) = start_run(&land);
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let world = world();
    let resume = |world: &Path, extra: &[&str]| {
        let mut arguments =
            vec!["sim", world.to_str().expect("utf-8"), "--land", land.to_str().expect("utf-8"), "--resume"];
        arguments.extend_from_slice(extra);
        seed(Path::new("."), &arguments)
    };
    // The land's length, as `seed verify` counts it.
    let facts = |land: &Path| {
        let verified = seed(land, &["verify", "--no-checkpoint"]);
        assert!(verified.status.success(), "{}{}", stdout(&verified), stderr(&verified));
        stdout(&verified).split(" facts").next().and_then(|head| head.rsplit(' ').next()).map(str::to_string)
    };

    // Another seed is another run.
    let other = resume(&world, &["--seed", "7"]);
    assert_eq!(other.status.code(), Some(1));
    assert!(stderr(&other).contains("resume it with the fixture and --seed it was started with"), "{}", stderr(&other));

    // Changed definitions: the onlookers look elsewhere. A land whose last
    // round was cut short diverges at its first fact computed again; one cut
    // at a round's edge is another run.
    let changed = dir.path().join("changed");
    std::fs::create_dir_all(&changed).expect("a folder");
    // Every path of the world made absolute, and a `roles` folder of its own last.
    let repository = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(&world)
        .expect("the world")
        .replace("\"../worlds/ring/roles\"]", "\"../worlds/ring/roles\", \"roles\"]")
        .replace("\"../../../", &format!("\"{repository}/"))
        .replace("\"../worlds/", &format!("\"{repository}/tests/fixtures/worlds/"));
    std::fs::create_dir_all(changed.join("roles")).expect("a folder");
    std::fs::write(
        changed.join("roles/onlooker.toml"),
        "name = \"onlooker\"\ncanSee = [\"/\"]\nprompt = \"You look at the hall.\"\nscript = \"onlooker.rhai\"\n",
    )
    .expect("written");
    std::fs::write(changed.join("roles/onlooker.rhai"), "#{ verb: \"see\", address: \"/hall\" }\n").expect("written");
    std::fs::write(changed.join("world.toml"), text).expect("written");
    let before = facts(&land);
    let diverged = resume(&changed.join("world.toml"), &[]);
    assert_eq!(diverged.status.code(), Some(1));
    let said = stderr(&diverged);
    assert!(
        said.contains("is not the one the land holds")
            || said.contains("resume it with the fixture and --seed it was started with")
            || said.contains("roles/onlooker.toml added"),
        "{said}"
    );
    assert_eq!(facts(&land), before, "a refused resume writes nothing");

    // A damaged checkpoint.
    let checkpoint = land.join(seed::engine::RESUME_CHECKPOINT_FILE);
    let mut bytes = std::fs::read(&checkpoint).expect("the checkpoint");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&checkpoint, bytes).expect("written");
    let damaged = resume(&world, &[]);
    assert_eq!(damaged.status.code(), Some(1));
    assert!(stderr(&damaged).contains("is damaged"), "{}", stderr(&damaged));
    assert!(stderr(&damaged).contains("the run cannot be resumed from it"), "{}", stderr(&damaged));

    // No checkpoint at all.
    let empty = dir.path().join("empty");
    let none = seed(
        Path::new("."),
        &["sim", world.to_str().expect("utf-8"), "--land", empty.to_str().expect("utf-8"), "--resume"],
    );
    assert_eq!(none.status.code(), Some(1));
    assert!(stderr(&none).contains("no run to resume at"), "{}", stderr(&none));
}

/// A round's checkpoint is written beside the round's start, on a thread of
/// its own, and the round submits nothing before it is durable: a round
/// whose checkpoint cannot be written fails naming it, and the land holds
/// none of its facts (a kill then would leave more than the round after the
/// checkpoint sealed).
#[test]
fn a_round_whose_checkpoint_cannot_be_written_fails_and_seals_none_of_its_facts() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let land = dir.path().join("land");
    let fixture = seed::engine::fixture::Fixture::load(&world()).expect("the world");
    let options = seed::engine::EngineOptions { threads: 2, ..crate::common::simulation_options(land.clone()) };
    let mut engine = seed::engine::Engine::plant(&fixture, &options).expect("plants");
    engine.keep_resume_checkpoints();
    engine.round().expect("the first round");
    let sealed = engine.world.cursor;
    assert_eq!(seed::engine::resume_checkpoint_rounds_done(&land).expect("a checkpoint"), 0);
    // The checkpoint's temporary file cannot be created: a folder is in its place.
    std::fs::create_dir(land.join(format!("{}.tmp", seed::engine::RESUME_CHECKPOINT_FILE))).expect("a folder");
    let failed = engine.round();
    assert!(matches!(failed, Err(seed::engine::EngineError::CheckpointWrite { .. })), "{:?}", failed.err());
    assert_eq!(engine.world.cursor, sealed, "the round sealed facts before its checkpoint was written");
    drop(engine);
    let reopened = seed::land::Land::open(&land).expect("the land opens");
    assert_eq!(reopened.store().land_len().expect("its length"), sealed);
    assert_eq!(seed::engine::resume_checkpoint_rounds_done(&land).expect("the checkpoint before"), 0);
}
