//! A simulation served by a pool of `seed worker` processes on PostgreSQL
//! (issue 27): the same world hash as one process, for any number of
//! workers, and no promise broken when workers are killed mid-round.
//! Opt-in with the other PostgreSQL tests (`SEED_TEST_POSTGRES=1`).

use crate::common;
use crate::postgres::postgres_opted_in;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn fixture(path: &str) -> String {
    format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))
}

/// The `worldHash` of a `seed sim --json` run, which must have succeeded.
fn world_hash(output: &std::process::Output) -> String {
    assert!(output.status.success(), "seed sim failed: {}", common::stderr(output));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("sim JSON");
    summary["worldHash"].as_str().expect("worldHash").to_string()
}

/// Runs `fixture` for `ticks` in one process, in a land folder.
fn folder_hash(dir: &Path, fixture: &str, ticks: &str) -> String {
    world_hash(&common::seed(&dir.join("folder"), &["sim", fixture, "--ticks", ticks, "--json"]))
}

#[test]
fn a_pooled_simulation_gives_the_folder_world_hash_with_one_two_and_three_workers() {
    if !postgres_opted_in() {
        return;
    }
    // Summons (ring), a birth (nursery), refused moments (dance), and many
    // beings whose rounds span several turns (town).
    let cases: &[(&str, &str, &[&str])] = &[
        ("tests/fixtures/worlds/ring/world.toml", "30", &["1", "2", "3"]),
        ("tests/fixtures/nursery/nursery.toml", "30", &["1", "2", "3"]),
        ("fixtures/dance.toml", "30", &["1", "2", "3"]),
        // Six workers: past the first round, claims sized from the workers
        // of the round before (more than four: two claims a worker).
        ("fixtures/town.toml", "6", &["3", "6"]),
    ];
    for (path, ticks, worker_counts) in cases {
        let dir = tempfile::tempdir().expect("temporary folder");
        let fixture = fixture(path);
        let expected = folder_hash(dir.path(), &fixture, ticks);
        for workers in *worker_counts {
            let url = common::postgres::fresh_database();
            let land = dir.path().join(format!("pooled-{workers}"));
            let run = ["--store", &url, "sim", &fixture, "--ticks", ticks, "--workers", workers, "--json"];
            let hash = world_hash(&common::seed(&land, &run));
            assert_eq!(hash, expected, "{path} with {workers} worker(s)");
            for verb in [&["verify"][..], &["replay", "--all"]] {
                let output = common::seed(&land, verb);
                assert!(output.status.success(), "{path}: seed {verb:?}: {}", common::stderr(&output));
            }
        }
    }
}

#[test]
fn a_pool_is_refused_where_it_cannot_run_with_a_message_naming_why() {
    if !postgres_opted_in() {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let court = fixture("fixtures/court.toml");
    // A land in its folder has no wake queue.
    let output = common::seed(&dir.path().join("a"), &["sim", &court, "--ticks", "2", "--workers", "2"]);
    assert!(!output.status.success());
    assert!(common::stderr(&output).contains("need a land on PostgreSQL"), "{}", common::stderr(&output));
    let output = common::seed(&dir.path().join("a"), &["worker", &court]);
    assert!(!output.status.success());
    // A worker whose seed differs from the run's is refused, naming both runs.
    let url = common::postgres::fresh_database();
    let land = dir.path().join("b");
    let mut driver = spawn_seed(&land, &["--store", &url, "sim", &court, "--ticks", "3", "--pool", "--json"]);
    wait_for_planting(&land, &mut driver);
    let output = common::seed(&land, &["worker", &court, "--seed", "7"]);
    assert!(!output.status.success());
    assert!(common::stderr(&output).contains("start the worker with the simulation's fixture and --seed"));
    // The right worker then serves the run to its end.
    let output = common::seed(&land, &["worker", &court, "--json"]);
    assert!(output.status.success(), "{}", common::stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("worker JSON");
    assert!(report["momentsSealed"].as_u64().expect("count") > 0, "{report}");
    // A lone worker's acts are signed while its claims' moments run, off
    // its turns (its world hash is checked in the cases above).
    assert!(report["factsSignedAhead"].as_u64().expect("count") > 0, "{report}");
    assert!(driver.wait().expect("driver").success());
    let output = common::seed(&land, &["--store", &url, "sim", &court, "--ticks", "2", "--lease-ms", "5", "--pool"]);
    assert!(common::stderr(&output).contains("--lease-ms must be at least"), "{}", common::stderr(&output));
}

/// Starts `seed` (stdout piped; stderr into `stderr`, so that nothing
/// blocks on a full pipe).
fn spawn_seed_logging(land: &Path, arguments: &[&str], stderr: &Path) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(stderr).expect("log file");
    common::seed_command(land, arguments)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("start seed")
}

fn spawn_seed(land: &Path, arguments: &[&str]) -> Child {
    let log = land.with_extension("stderr");
    spawn_seed_logging(land, arguments, &log)
}

/// Waits until the driver has planted the land (its land.toml is written last).
fn wait_for_planting(land: &Path, driver: &mut Child) {
    let started = Instant::now();
    while !land.join("land.toml").exists() {
        assert!(driver.try_wait().expect("driver").is_none(), "the driver stopped before planting");
        assert!(started.elapsed() < Duration::from_secs(60), "the land was not planted");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How long workers are killed and restarted, and how often.
const KILLING_FOR: Duration = Duration::from_secs(60);
const KILL_EVERY: Duration = Duration::from_secs(3);

#[test]
fn workers_killed_mid_round_lose_no_fact_run_no_being_twice_and_change_no_world_hash() {
    if !postgres_opted_in() {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let town = fixture("fixtures/town.toml");
    // Long enough that the run outlasts a minute of killing on this machine.
    let ticks = "1000";
    let expected = folder_hash(dir.path(), &town, ticks);
    let url = common::postgres::fresh_database();
    let land = dir.path().join("pooled");
    let trace = dir.path().join("trace.jsonl");
    let trace_arg = trace.to_string_lossy().into_owned();
    let mut driver = spawn_seed(
        &land,
        &[
            "--store",
            &url,
            "sim",
            &town,
            "--ticks",
            ticks,
            "--pool",
            "--lease-ms",
            "1000",
            "--trace",
            &trace_arg,
            "--json",
        ],
    );
    wait_for_planting(&land, &mut driver);
    let worker_log = dir.path().join("workers.stderr");
    let start_worker = || spawn_seed_logging(&land, &["worker", &town, "--lease-ms", "1000"], &worker_log);
    let mut workers: Vec<Child> = (0..3).map(|_| start_worker()).collect();
    let started = Instant::now();
    let mut kills = 0;
    while driver.try_wait().expect("driver").is_none() && started.elapsed() < KILLING_FOR {
        std::thread::sleep(KILL_EVERY);
        let victim = kills % workers.len();
        workers[victim].kill().expect("SIGKILL");
        let _ = workers[victim].wait();
        workers[victim] = start_worker();
        kills += 1;
    }
    let output = driver.wait_with_output().expect("driver");
    let hash = world_hash(&output);
    for mut worker in workers {
        let status = worker.wait().expect("worker");
        let log = std::fs::read_to_string(&worker_log).unwrap_or_default();
        assert!(status.success(), "a worker failed: {log}");
    }
    assert!(kills >= 10, "only {kills} kills happened before the run finished: make the run longer");
    // No acknowledged fact lost, nothing sealed twice: the same land as one process.
    assert_eq!(hash, expected, "the world hash after {kills} kills");
    for verb in [&["verify"][..], &["replay", "--all"]] {
        let output = common::seed(&land, verb);
        assert!(output.status.success(), "seed {verb:?}: {}", common::stderr(&output));
    }
    // The moment trace: one sealed moment per wake, each by the worker that
    // held it at an epoch later than any before it for that being.
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("sim JSON");
    let text = std::fs::read_to_string(&trace).expect("trace");
    let mut last_epoch: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut lines = 0;
    for line in text.lines() {
        let moment: serde_json::Value = serde_json::from_str(line).expect("trace line");
        let (being, tick) =
            (moment["being"].as_str().expect("being").to_string(), moment["tick"].as_u64().expect("tick"));
        let epoch = moment["epoch"].as_u64().expect("epoch");
        assert!(moment["worker"].as_str().is_some_and(|worker| !worker.is_empty()), "{moment}");
        if let Some((last_tick, last)) = last_epoch.get(&being) {
            assert!(
                tick > *last_tick && epoch > *last,
                "{being}: tick {tick} epoch {epoch} after tick {last_tick} epoch {last}"
            );
        }
        last_epoch.insert(being, (tick, epoch));
        lines += 1;
    }
    assert_eq!(lines, summary["moments"].as_u64().expect("moments"), "one trace line per moment");
    // More wakes were claimed than sealed: leases of killed workers moved.
    let claimed: u64 = common::postgres::psql_url(&url, "SELECT sum(end_idx - first_idx) FROM seed_claims")
        .trim()
        .parse()
        .expect("sum");
    assert!(claimed > lines, "{claimed} wakes claimed for {lines} moments: no lease ever moved");
}

/// The queue itself, one step at a time: an expired claim is taken over at
/// a higher epoch, a live one is not, the worker whose lease moved is
/// fenced with a reason naming who holds its wake now, and it is not
/// counted among the round's workers.
#[test]
fn an_expired_claim_is_taken_over_at_a_higher_epoch_and_its_first_holder_is_fenced() {
    use seed::store::work::{QueuedWake, SealTurn};
    use seed::store::StoreError;
    if !postgres_opted_in() {
        return;
    }
    let test = common::plant_on(common::Backend::Postgres);
    let queue = test.land.store().wake_queue().expect("PostgreSQL has a wake queue");
    let being = test.land.create_being(common::spec("waker")).expect("being").being;
    queue.start_run(seed::fact::Hash32([1; 32]), false).expect("start");
    let wakes: Vec<QueuedWake> = (0..6).map(|index| QueuedWake { index, being, wake: vec![index as u8] }).collect();
    let cursor = test.land.store().land_len().expect("len");
    queue.open_round(1, cursor, 0, &wakes).expect("open");
    let indexes = |claims: &[seed::store::work::Claim]| claims.iter().map(|c| c.wake.index).collect::<Vec<_>>();
    let a = queue.claim("a", 1, 0..u64::MAX, 2, 60_000, &[]).wait().expect("claim a");
    let c = queue.claim("c", 1, 0..u64::MAX, 2, 1, &[]).wait().expect("claim c");
    assert_eq!((indexes(&a), indexes(&c)), (vec![0, 1], vec![2, 3]));
    assert_eq!(c[0].wake.wake, vec![2], "a claim hands out the wake's bytes");
    std::thread::sleep(Duration::from_millis(50));
    // c's lease ran out, a's did not: b takes c's wakes and the free ones.
    let b = queue.claim("b", 1, 0..u64::MAX, 10, 60_000, &[]).wait().expect("claim b");
    assert_eq!(indexes(&b), vec![2, 3, 4, 5]);
    assert!(b[0].epoch > c[0].epoch && c[0].epoch > a[0].epoch, "epochs only grow: {a:?} {c:?} {b:?}");
    assert!(queue.claim("d", 1, 0..u64::MAX, 10, 60_000, &[]).wait().expect("claim d").is_empty(), "nothing is free");
    let turn = |worker: &str, first: u64, claims: &[seed::store::work::Claim]| SealTurn {
        worker: worker.into(),
        tick: 1,
        first,
        sealed: claims.iter().map(|claim| (claim.epoch, format!("result {}", claim.wake.index).into_bytes())).collect(),
    };
    // Not c's turn yet, and not b's either.
    match queue.submit_turn(Vec::new(), turn("b", 2, &b)).wait() {
        Err(StoreError::Fenced { reason, .. }) => assert!(reason.contains("turn is at wake 0"), "{reason}"),
        other => panic!("b sealed out of turn: {other:?}"),
    }
    queue.submit_turn(Vec::new(), turn("a", 0, &a)).wait().expect("a seals its turn");
    match queue.submit_turn(Vec::new(), turn("c", 2, &c)).wait() {
        Err(StoreError::Fenced { reason, .. }) => assert_eq!(
            reason,
            format!("the lease of wake 2 moved (held by b at epoch {}, claimed at epoch {})", b[0].epoch, c[0].epoch)
        ),
        other => panic!("c sealed after its lease moved: {other:?}"),
    }
    queue.submit_turn(Vec::new(), turn("b", 2, &b)).wait().expect("b seals the rest");
    let round = queue.state().expect("state").round.expect("round");
    assert!(round.is_done(), "{round:?}");
    let results = queue.results(1, 3).expect("results");
    let expected: Vec<(u64, Vec<u8>)> = (3..6).map(|index| (index, format!("result {index}").into_bytes())).collect();
    assert_eq!(results, expected);
    assert_eq!(queue.results(1, 0).expect("results").len(), 6);
    // Claims are sized from the workers of the round before: a and b, not
    // c, whose claim was taken over.
    assert_eq!(queue.workers_before(1).expect("workers before round 1"), 0, "no round before the first");
    assert_eq!(queue.workers_before(2).expect("workers before round 2"), 2);
    assert_eq!(queue.workers_before(7).expect("workers before round 7"), 2, "the latest round with claims");
}

/// A worker whose definition files differ from those the driver planted
/// with (an operation's script edited) is another run: it is refused,
/// saying so, and the run finishes with a worker holding the same files,
/// to the world hash of the run in one process (docs/definitions.md).
#[test]
fn a_worker_with_other_definition_files_is_refused_and_the_run_ends_as_in_one_process() {
    if !postgres_opted_in() {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let (same, edited) = (dir.path().join("same"), dir.path().join("edited"));
    common::copy_definitions(&same);
    common::copy_definitions(&edited);
    let rule = edited.join("extensions/court/ops/rule.rhai");
    let text = std::fs::read_to_string(&rule).expect("the rule operation");
    std::fs::write(&rule, format!("// edited after the run started\n{text}")).expect("edited");
    let fixture_in = |root: &Path| root.join("fixtures/court.toml").to_string_lossy().into_owned();
    let expected = folder_hash(dir.path(), &fixture_in(&same), "6");
    let url = common::postgres::fresh_database();
    let land = dir.path().join("pooled");
    let same_fixture = fixture_in(&same);
    let mut driver = spawn_seed(&land, &["--store", &url, "sim", &same_fixture, "--ticks", "6", "--pool", "--json"]);
    wait_for_planting(&land, &mut driver);
    let refused = common::seed(&land, &["worker", &fixture_in(&edited)]);
    assert!(!refused.status.success(), "the edited worker ran");
    let said = common::stderr(&refused);
    assert!(said.contains("not this worker's") || said.contains("extensions/court/ops/rule.rhai changed"), "{said}");
    let worker = common::seed(&land, &["worker", &same_fixture]);
    assert!(worker.status.success(), "{}", common::stderr(&worker));
    let output = driver.wait_with_output().expect("driver");
    assert_eq!(world_hash(&output), expected);
}

/// Where a killed driver's run is stopped, by the rounds its checkpoint
/// says are done (of 120), and whether every worker is killed with it
/// (else one of the two). Rounds, not time: a loaded machine once ran the
/// whole run before a kill timed in seconds came.
const DRIVER_KILLED_AFTER_ROUNDS: [(u64, bool); 3] = [(3, true), (40, false), (80, false)];

/// A pooled run whose driver is killed (SIGKILL) mid-run, with one or both
/// of its workers killed beside it, is finished by `seed sim --resume` with
/// the pool: the round the driver stopped in is the one its wake queue
/// holds, served on by the surviving worker and a new one started after the
/// resumed driver (or, when every worker was killed, by the workers the
/// resumed driver starts itself, `--workers 2`), and the run ends with
/// the world hash of one process; the land verifies and replays.
#[test]
fn a_pooled_run_whose_driver_is_killed_resumes_to_the_world_hash_of_one_process() {
    if !postgres_opted_in() {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let ring = fixture("tests/fixtures/worlds/ring/world.toml");
    let ticks = "120";
    let expected = folder_hash(dir.path(), &ring, ticks);
    let (mut interrupted, mut reattached) = (0, 0);
    for (point, (after, every_worker)) in DRIVER_KILLED_AFTER_ROUNDS.iter().enumerate() {
        let url = common::postgres::fresh_database();
        let land = dir.path().join(format!("killed-{point}"));
        let run = ["--store", &url, "sim", &ring, "--ticks", ticks, "--pool", "--json"];
        let mut driver = spawn_seed(&land, &run);
        wait_for_planting(&land, &mut driver);
        let worker_log = dir.path().join(format!("workers-{point}.stderr"));
        let start_worker = || spawn_seed_logging(&land, &["worker", &ring, "--lease-ms", "300"], &worker_log);
        // The driver writes a checkpoint before each round, then opens the
        // round in its wake queue. The kill comes half a round (as long as
        // the round before took) after the checkpoint that counts `after`
        // rounds done: a kill just after the checkpoint would often find
        // the round not yet opened, and leave nothing to reattach to.
        let mut workers: Vec<Child> = (0..2).map(|_| start_worker()).collect();
        let waited = Instant::now();
        let (mut seen, mut seen_since, mut round_took) = (None, Instant::now(), Duration::ZERO);
        loop {
            let done = seed::engine::resume_checkpoint_rounds_done(&land).ok();
            if done != seen {
                // A round's length is only known between two checkpoints.
                round_took = if seen.is_some() { seen_since.elapsed() } else { Duration::ZERO };
                (seen, seen_since) = (done, Instant::now());
            }
            if done.is_some_and(|done| done >= *after) {
                break;
            }
            assert!(waited.elapsed() < Duration::from_secs(120), "the driver did not reach round {after}");
            assert!(driver.try_wait().expect("driver").is_none(), "the driver ended before round {after}");
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(round_took / 2);
        if driver.try_wait().expect("driver").is_none() {
            interrupted += 1;
        }
        driver.kill().expect("SIGKILL");
        let _ = driver.wait();
        let killed = if *every_worker { 2 } else { 1 };
        for worker in &mut workers[..killed] {
            worker.kill().expect("SIGKILL");
            let _ = worker.wait();
        }
        // With every worker gone, the resumed driver starts its own
        // (`--workers 2`); else the survivor and a new one serve it (`--pool`).
        let resumed = match every_worker {
            true => {
                workers.clear();
                common::seed(&land, &["sim", &ring, "--ticks", ticks, "--resume", "--workers", "2", "--json"])
            }
            false => {
                let resume = ["sim", &ring, "--ticks", ticks, "--resume", "--pool", "--json"];
                let resumed = spawn_seed(&land, &resume);
                std::thread::sleep(Duration::from_millis(300));
                workers[0] = start_worker();
                resumed.wait_with_output().expect("the resumed driver")
            }
        };
        assert_eq!(world_hash(&resumed), expected, "the driver killed after round {after}, then resumed");
        // The resumed driver's log: its stderr, or (spawned) the land's log file.
        let file = std::fs::read_to_string(land.with_extension("stderr")).unwrap_or_default();
        let logged = format!("{}{file}", common::stderr(&resumed));
        if logged.contains("resuming: the round the stopped driver opened goes on") {
            reattached += 1;
        }
        for mut worker in workers {
            let status = worker.wait().expect("worker");
            assert!(status.success(), "a worker failed: {}", std::fs::read_to_string(&worker_log).unwrap_or_default());
        }
        for verb in [&["verify"][..], &["replay", "--all"]] {
            let output = common::seed(&land, verb);
            assert!(output.status.success(), "seed {verb:?}: {}", common::stderr(&output));
        }
    }
    assert_eq!(interrupted, DRIVER_KILLED_AFTER_ROUNDS.len(), "a driver ended before its kill");
    assert!(reattached >= 1, "no resumed driver found the round its predecessor opened");

    // A pool's resume on a folder land is refused, and on a land on
    // PostgreSQL whose queue holds no run (it ran in one process), naming why.
    let folder = dir.path().join("folder");
    let output = common::seed(&folder, &["sim", &ring, "--ticks", "2", "--resume", "--pool"]);
    assert!(!output.status.success());
    assert!(common::stderr(&output).contains("need a land on PostgreSQL"), "{}", common::stderr(&output));
    let url = common::postgres::fresh_database();
    let alone = dir.path().join("alone");
    let planted = common::seed(&alone, &["--store", &url, "sim", &ring, "--ticks", "2", "--json"]);
    assert!(planted.status.success(), "{}", common::stderr(&planted));
    let output = common::seed(&alone, &["sim", &ring, "--ticks", "4", "--resume", "--pool"]);
    assert_eq!(output.status.code(), Some(1));
    let said = common::stderr(&output);
    assert!(said.contains("the land's wake queue holds no run to resume"), "{said}");
}
