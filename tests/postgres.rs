//! A land on PostgreSQL (issue 27): the same promises as a land in its
//! folder. Opt-in (`SEED_TEST_POSTGRES=1`, which `.ci/run` sets): the tests
//! start a throwaway cluster from Debian's `postgresql` package.

use crate::common::{self, note, plant_on, spec, Backend};
use crate::opted_in;
use seed::check::{verify_land, SignatureMode};
use std::process::Command;

const MODE: SignatureMode = SignatureMode::Batch { batch_facts: 64 };

pub fn postgres_opted_in() -> bool {
    opted_in("SEED_TEST_POSTGRES", "the PostgreSQL store's tests")
}

#[test]
fn a_land_planted_on_postgres_seals_reopens_and_verifies_clean() {
    if !postgres_opted_in() {
        return;
    }
    let test = plant_on(Backend::Postgres);
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    for index in 0..20 {
        note(&test.land, &worker, &format!("note {index}"));
    }
    let len = test.land.store().land_len().expect("len");
    assert_eq!(len, 4 + 1 + 1 + 20, "four planted beings' geneses, the operator token, the worker");
    let path = test.path();
    test.land.close().expect("close");
    let land = seed::land::Land::open_read_only(&path).expect("reopen");
    assert_eq!(land.store().land_len().expect("len"), len);
    let report = verify_land(land.store(), MODE, 2, common::core_rules()).expect("verify");
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(land.store().reel(&worker, 0, 100).expect("reel").len(), 21);
}

fn note_body(text: &str) -> Vec<u8> {
    seed::canonical::to_canonical_bytes(&seed::fact::body::NoteBody { text: text.into() }).expect("body")
}

/// A note signed by `being`'s key that claims seq 1 of its reel, where the
/// land holds another fact: appending it makes a fork proof.
fn rival_of_seq_1(land: &seed::land::Land, being: &seed::fact::BeingId) -> seed::fact::Fact {
    let key = land.keys().load(being).expect("key");
    let first = land.store().reel(being, 0, 2).expect("reel");
    let (genesis, stored_time_ms) = (first[0].fact.id(), first[1].fact.header.stored_time_ms);
    seed::fact::Fact::seal(*being, 1, genesis, stored_time_ms, seed::fact::body::KIND_NOTE, note_body("rival"), &key)
        .expect("seal")
}

/// The `worldHash` a `seed sim --json` printed.
fn world_hash(output: &std::process::Output) -> String {
    assert!(output.status.success(), "seed sim failed: {}", common::stderr(output));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("sim JSON");
    summary["worldHash"].as_str().expect("worldHash").to_string()
}

#[test]
fn a_simulation_gives_one_world_hash_in_the_land_folder_and_on_postgres() {
    if !postgres_opted_in() {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/town.toml");
    let url = common::postgres::fresh_database();
    let (in_folder, on_postgres) = (dir.path().join("folder"), dir.path().join("postgres"));
    let run = ["sim", fixture, "--ticks", "12", "--threads", "2", "--json"];
    let folder_hash = world_hash(&common::seed(&in_folder, &run));
    let mut with_store = vec!["--store", url.as_str()];
    with_store.extend(run);
    let postgres_hash = world_hash(&common::seed(&on_postgres, &with_store));
    assert_eq!(folder_hash, postgres_hash);
    let meta = std::fs::read_to_string(on_postgres.join("land.toml")).expect("land.toml");
    assert!(meta.contains("store = \"postgres://"), "the land records its store: {meta}");
    for verb in [&["verify"][..], &["replay", "--all"], &["beings"]] {
        let output = common::seed(&on_postgres, verb);
        assert!(output.status.success(), "seed {verb:?}: {}", common::stderr(&output));
    }
    // Another store than the one recorded is refused, naming both.
    let output = common::seed(&on_postgres, &["--store", "folder", "verify"]);
    assert!(!output.status.success());
    assert!(common::stderr(&output).contains("keeps its facts in postgres://"), "{}", common::stderr(&output));
}

#[test]
fn a_land_copied_to_postgres_and_back_is_byte_identical_and_replays_clean() {
    if !postgres_opted_in() {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/court.toml");
    let (original, on_postgres, back) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("c"));
    let output = common::seed(&original, &["sim", fixture, "--ticks", "15"]);
    assert!(output.status.success(), "{}", common::stderr(&output));
    // A rival fact, so fork proofs travel too.
    {
        let land = seed::land::Land::open(&original).expect("open");
        let ada = land.resolve("@ada").expect("ada");
        let rival = rival_of_seq_1(&land, &ada);
        assert!(land.store().append(rival).is_err(), "a fork");
        land.close().expect("close");
    }
    let before = common::folder_snapshot(&original);
    let url = common::postgres::fresh_database();
    let copied = Command::new(env!("CARGO_BIN_EXE_seed"))
        .args(["--store", &url, "copy", "--from"])
        .arg(&original)
        .arg("--to")
        .arg(&on_postgres)
        .args(["--json"])
        .output()
        .expect("seed copy");
    assert!(copied.status.success(), "{}", common::stderr(&copied));
    let report: serde_json::Value = serde_json::from_slice(&copied.stdout).expect("JSON");
    assert_eq!(report["forkProofs"], 1);
    assert_eq!(common::folder_snapshot(&original), before, "the source is not written");
    let land = seed::land::Land::open_read_only(&on_postgres).expect("open the copy");
    assert_eq!(land.store().fork_proofs(None).expect("proofs").len(), 1);
    drop(land);
    // The copy replays as the original does: the fork its one problem.
    let report_of = |land: &std::path::Path| {
        let replayed = common::seed(land, &["replay", "--all"]);
        let text = common::stdout(&replayed);
        // The last line's timing differs from run to run.
        let text: Vec<String> =
            text.lines().map(|line| line.split(" in ").next().unwrap_or(line).to_string()).collect();
        (replayed.status.code(), text)
    };
    let copy_report = report_of(&on_postgres);
    assert!(copy_report.1.iter().any(|line| line.contains("fork: rival fact")), "{copy_report:?}");
    assert_eq!(copy_report, report_of(&original));
    let copied_back = Command::new(env!("CARGO_BIN_EXE_seed"))
        .args(["copy", "--from"])
        .arg(&on_postgres)
        .arg("--to")
        .arg(&back)
        .env_remove("SEED_STORE")
        .output()
        .expect("seed copy back");
    assert!(copied_back.status.success(), "{}", common::stderr(&copied_back));
    let relative = |files: Vec<(std::path::PathBuf, Vec<u8>)>, root: &std::path::Path| {
        files
            .into_iter()
            .map(|(path, bytes)| (path.strip_prefix(root).expect("inside").to_path_buf(), bytes))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        relative(common::folder_snapshot(&back), &back),
        relative(before, &original),
        "every byte of the land comes back, its store's files included"
    );
    // Into a database that holds a land already: refused, nothing written.
    let again = Command::new(env!("CARGO_BIN_EXE_seed"))
        .args(["--store", &url, "copy", "--from"])
        .arg(&original)
        .arg("--to")
        .arg(dir.path().join("d"))
        .output()
        .expect("seed copy");
    assert!(!again.status.success());
    assert!(common::stderr(&again).contains("already holds the facts of a land"), "{}", common::stderr(&again));
}

#[test]
fn two_processes_writing_one_land_keep_one_gap_free_land_order() {
    if !postgres_opted_in() {
        return;
    }
    let test = plant_on(Backend::Postgres);
    let path = test.path();
    let beings: Vec<_> =
        (0..6).map(|index| test.land.create_being(spec(&format!("w{index}"))).expect("being").being).collect();
    // A second writer with its own committer and connections, as a second
    // process would have.
    let other = seed::land::Land::open(&path).expect("a second writer");
    let mut sealed = Vec::new();
    std::thread::scope(|scope| {
        let handles: Vec<_> = beings
            .iter()
            .enumerate()
            .map(|(index, being)| {
                let land = if index % 2 == 0 { &test.land } else { &other };
                scope.spawn(move || (0..40).map(|n| note(land, being, &format!("{n}"))).collect::<Vec<_>>())
            })
            .collect();
        for handle in handles {
            sealed.extend(handle.join().expect("writer"));
        }
    });
    let store = test.land.store();
    let len = store.land_len().expect("len");
    let log = store.land_log(0, len).expect("land log");
    assert_eq!(log.len() as u64, len, "no gap");
    for (index, entry) in log.iter().enumerate() {
        assert_eq!(entry.land_seq, index as u64);
    }
    for fact in &sealed {
        let entry = log[fact.land_seq as usize];
        assert_eq!((entry.being, entry.seq), (fact.being, fact.seq), "acknowledged where it was said to be");
    }
    let report = verify_land(store, MODE, 2, common::core_rules()).expect("verify");
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// Shows `land` the facts other processes sealed at land seqs `*seen..`, as
/// a pool's worker folding the others' turns does, and moves `seen` on.
fn follow_the_others(land: &seed::land::Land, seen: &mut u64) {
    let end = land.store().land_len().expect("len");
    let facts: Vec<(u64, seed::fact::Fact)> = land
        .store()
        .land_log_with_envelopes(*seen, end)
        .expect("log")
        .iter()
        .map(|(entry, envelope)| {
            (entry.land_seq, seed::store::decode_entry_envelope(entry, envelope).expect("decode").fact)
        })
        .collect();
    land.follow_facts_sealed_elsewhere(&facts);
    *seen = end;
}

/// Two processes taking turns on the same reels, as a pool's workers do:
/// each moves its writers past the other's facts instead of reloading them
/// (`Land::follow_facts_sealed_elsewhere`), and each committer moves the
/// heads it keeps along what the other committed instead of reading every
/// head again: along the facts its process was shown, or, on the second
/// process's odd turns, where it was shown nothing and forgot its
/// writers, along the facts it reads itself. A head or writer left behind,
/// or moved wrong, makes the next append a gap or a broken link, refused;
/// a rotation by one process reaches the other's next fact.
#[test]
fn two_processes_taking_turns_on_the_same_reels_follow_each_others_facts() {
    if !postgres_opted_in() {
        return;
    }
    let test = plant_on(Backend::Postgres);
    let first = &test.land;
    let beings: Vec<_> =
        ["ada", "bo", "cy"].iter().map(|name| first.create_being(spec(name)).expect("being").being).collect();
    let second = seed::land::Land::open(&test.path()).expect("a second process's land");
    first.load_writers(&beings, 2).expect("writers");
    second.load_writers(&beings, 2).expect("writers");
    let (mut first_seen, mut second_seen) =
        (first.store().land_len().expect("len"), first.store().land_len().expect("len"));
    for turn in 0..6 {
        follow_the_others(first, &mut first_seen);
        // On odd turns one note: the second process, shown nothing then,
        // reads it itself (at most two facts a fact of its one-fact groups).
        let noted = if turn % 2 == 0 { &beings[..] } else { &beings[turn % 3..turn % 3 + 1] };
        for being in noted {
            note(first, being, &format!("first, turn {turn}"));
        }
        first_seen = first.store().land_len().expect("len");
        if turn % 2 == 0 {
            follow_the_others(&second, &mut second_seen);
        } else {
            second.forget_writers(&beings);
        }
        if turn == 2 {
            second.rotate_key(&beings[0]).expect("rotate in the second process");
        }
        for being in &beings[turn % 2..] {
            note(&second, being, &format!("second, turn {turn}"));
        }
        second_seen = second.store().land_len().expect("len");
    }
    follow_the_others(first, &mut first_seen);
    let sealed = note(first, &beings[0], "first, after the rotation");
    let rotated = first.store().head(&beings[0]).expect("head").expect("reel");
    assert_eq!(rotated.seq, sealed.seq);
    let report = verify_land(first.store(), MODE, 2, common::core_rules()).expect("verify");
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// A key rotation reaches every process of the land: the key ring is one
/// file the processes share (appended under its lock, re-read when it
/// changed), so a writer that learns its being's reel moved reloads the
/// head and finds the rotated key.
#[test]
fn a_key_rotated_by_one_process_signs_the_next_fact_another_process_seals() {
    if !postgres_opted_in() {
        return;
    }
    let test = plant_on(Backend::Postgres);
    let path = test.path();
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    let other = seed::land::Land::open(&path).expect("a second process's land");
    note(&other, &worker, "before the rotation, from the other process");
    // Each process forgets a writer once it sees another's fact of its
    // being (a pool worker does, folding the land's tail): one writer at a
    // time, or the reel forks.
    test.land.forget_writers(&[worker]);
    test.land.rotate_key(&worker).expect("rotate in the first process");
    let rotated = test.land.store().head(&worker).expect("head").expect("reel").public_key;
    // What a pool worker does when it folds another process's fact of this being.
    other.forget_writers(&[worker]);
    let sealed = note(&other, &worker, "after the rotation, from the other process");
    let stored = other.store().reel(&worker, sealed.seq, sealed.seq + 1).expect("read");
    assert_eq!(stored.len(), 1);
    assert_eq!(other.store().head(&worker).expect("head").expect("reel").public_key, rotated, "still the rotated key");
    let report = verify_land(test.land.store(), MODE, 2, common::core_rules()).expect("verify");
    assert!(report.problems.is_empty(), "signed by the rotated key: {:?}", report.problems);
}

/// A land planted with `seed plant` on a fresh database of `cluster`.
fn planted_on(cluster: &common::postgres::Cluster, dir: &std::path::Path) -> std::path::PathBuf {
    planted_on_with_url(cluster, dir).0
}

/// `planted_on`, and the database's URL.
fn planted_on_with_url(cluster: &common::postgres::Cluster, dir: &std::path::Path) -> (std::path::PathBuf, String) {
    let land_dir = dir.join("land");
    let url = cluster.fresh_database();
    let planted = common::seed(&land_dir, &["--store", &url, "plant"]);
    assert!(planted.status.success(), "plant: {}", common::stderr(&planted));
    (land_dir, url)
}

/// A SIGKILLed writer's server sessions may still be finishing a COMMIT it
/// sent before it died (its facts land, unacknowledged, which the promise
/// allows): the check waits until they are gone, since `verify` reads the
/// land log and the facts in separate statements and a commit between them
/// reads as a log longer than its facts.
fn wait_for_other_sessions_to_end(url: &str) {
    let started = std::time::Instant::now();
    let sql = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()";
    while common::postgres::psql_url(url, sql) != "0" {
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the killed writer's sessions never ended");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn acknowledged_facts_survive_kill_9_of_a_writer_on_postgres() {
    if !postgres_opted_in() {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let (land_dir, url) = planted_on_with_url(common::postgres::cluster(), dir.path());
    let mut acknowledged = 0;
    for (cycle, delay_ms) in [300u64, 700, 1100].into_iter().enumerate() {
        let (mut child, reader) = crate::crash::spawn_stress(&land_dir, None);
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        child.kill().expect("SIGKILL the writer");
        child.wait().expect("reap the writer");
        let acks = reader.join().expect("reader");
        wait_for_other_sessions_to_end(&url);
        acknowledged += acks.len();
        crate::crash::check_reopened(&land_dir, &acks, &format!("kill {cycle} after {delay_ms} ms"));
    }
    assert!(acknowledged > 0, "the writers acknowledged something before they were killed");
}

#[test]
fn acknowledged_facts_survive_postgres_stopped_immediately_under_load() {
    if !postgres_opted_in() {
        return;
    }
    // A cluster of its own: this test stops its server.
    let cluster = common::postgres::Cluster::start();
    let dir = tempfile::tempdir().expect("temporary folder");
    let land_dir = planted_on(&cluster, dir.path());
    let (mut child, reader) = crate::crash::spawn_stress(&land_dir, None);
    std::thread::sleep(std::time::Duration::from_millis(800));
    cluster.stop_immediately();
    // The writer's appends now fail; it stops on its own.
    let waited = (0..100).find_map(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        child.try_wait().expect("poll the writer")
    });
    if waited.is_none() {
        child.kill().expect("SIGKILL the writer");
        child.wait().expect("reap the writer");
    }
    let acks = reader.join().expect("reader");
    assert!(!acks.is_empty(), "the writer acknowledged something before the stop");
    cluster.start_server();
    let facts = crate::crash::check_reopened(&land_dir, &acks, "after PostgreSQL stopped immediately");
    assert!(facts >= acks.len() as u64);
}

#[test]
fn a_fork_proof_written_by_one_process_freezes_the_reel_for_every_other() {
    if !postgres_opted_in() {
        return;
    }
    let test = plant_on(Backend::Postgres);
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    note(&test.land, &worker, "one");
    note(&test.land, &worker, "two");
    // A second writer that has written nothing yet.
    let other = seed::land::Land::open(&test.path()).expect("a second writer");
    let rival = rival_of_seq_1(&other, &worker);
    assert!(matches!(other.store().append(rival), Err(seed::store::StoreError::Fork { .. })));
    // The first writer kept the worker's head from its own commits; the
    // fork proof moved no land seq, and still it must not extend the reel.
    let refused = test.land.seal(&worker, seed::fact::body::KIND_NOTE, note_body("three"));
    assert!(
        matches!(refused, Err(seed::land::LandError::Store(seed::store::StoreError::BeingForked { .. }))),
        "{refused:?}"
    );
}

/// `seed up` on `land` with `extra` arguments: the process and its URL once
/// it printed it (stdout drained after; stderr piped for the test to read).
fn spawn_up(land: &std::path::Path, extra: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/court.toml");
    let mut child = common::seed_command(land, &["up", "--addr", "127.0.0.1:0"])
        .arg("--fixture")
        .arg(&fixture)
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("seed up starts");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let url = loop {
        let line = lines.next().expect("seed up printed its URL").expect("readable stdout");
        if let Some(rest) = line.strip_prefix("seed is up: ") {
            break rest.to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, url)
}

fn signal(child: &std::process::Child, signal: &str) {
    let sent = Command::new("kill").arg(format!("-{signal}")).arg(child.id().to_string()).status().expect("kill");
    assert!(sent.success(), "kill -{signal}");
}

/// Waits for `child` to exit (at most `seconds`): its status and stderr.
fn exit_of(mut child: std::process::Child, seconds: u64) -> (std::process::ExitStatus, String) {
    use std::io::Read;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "the process did not exit within {seconds} s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child.stderr.take().expect("stderr").read_to_string(&mut stderr).expect("stderr");
    (status, stderr)
}

/// Two processes writing one live land would sign rival facts on the same
/// reels: on PostgreSQL one `seed up` holds the land's runner lease, every
/// other writer is refused naming it, and a clean stop lets go at once.
#[test]
fn one_process_runs_a_live_land_on_postgres_and_every_other_writer_is_refused_naming_it() {
    if !postgres_opted_in() {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let land_dir = planted_on(common::postgres::cluster(), dir.path());
    let (runner, url) = spawn_up(&land_dir, &["--lifetime-s", "60", "--runner-lease-ms", "1000"]);
    let token = common::seed(&land_dir, &["token"]);
    assert!(!token.status.success(), "another process wrote to a running land");
    let said = common::stderr(&token);
    assert!(said.contains("only that process writes") && said.contains(&url), "{said}");
    signal(&runner, "TERM");
    let (status, stderr) = exit_of(runner, 30);
    assert!(status.success(), "{stderr}");
    let token = common::seed(&land_dir, &["token"]);
    assert!(token.status.success(), "a stopped runner still held the land: {}", common::stderr(&token));
}

/// The lease's fence: a runner paused past its lease (as a process stalled
/// or cut off would be) finds, when it wakes, that another took the land;
/// its writes are refused whole and it stops. No reel forks.
#[test]
fn a_paused_runner_whose_lease_was_taken_writes_nothing_and_stops() {
    if !postgres_opted_in() {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let land_dir = planted_on(common::postgres::cluster(), dir.path());
    let quick = ["--lifetime-s", "60", "--runner-lease-ms", "600", "--round-ms", "50"];
    let (first, _) = spawn_up(&land_dir, &quick);
    std::thread::sleep(std::time::Duration::from_millis(500));
    signal(&first, "STOP");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let (second, second_url) = spawn_up(&land_dir, &quick);
    signal(&first, "CONT");
    let (status, stderr) = exit_of(first, 30);
    assert!(!status.success(), "the paused runner went on: {stderr}");
    assert!(stderr.contains("runner lease"), "{stderr}");
    // The second runner still runs the land.
    let token = common::seed(&land_dir, &["token"]);
    assert!(common::stderr(&token).contains(&second_url), "{}", common::stderr(&token));
    signal(&second, "TERM");
    let (status, stderr) = exit_of(second, 30);
    assert!(status.success(), "{stderr}");
    let verified = common::seed(&land_dir, &["verify"]);
    assert!(verified.status.success(), "verify: {}", common::stdout(&verified));
}

/// The fence itself, in one test process with two writers (as two processes
/// would be): while one holds the runner lease the other writes nothing;
/// once the lease was taken over, the first one's appends are refused whole.
#[test]
fn a_commit_fenced_by_a_runner_lease_that_moved_is_refused_and_writes_nothing() {
    use seed::store::StoreError;
    if !postgres_opted_in() {
        return;
    }
    let test = plant_on(Backend::Postgres);
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    let other = seed::land::Land::open(&test.path()).expect("a second writer");
    let first_leases = test.land.store().runner_lease().expect("PostgreSQL keeps a runner lease");
    let first_epoch = first_leases.take_runner("first", 200).expect("take").expect("nobody held it");
    assert_eq!(other.store().runner_lease().expect("lease").take_runner("other", 200).expect("take"), None);
    note(&test.land, &worker, "the runner writes");
    let refused = other.seal(&worker, seed::fact::body::KIND_NOTE, note_body("not the runner"));
    assert!(
        matches!(&refused, Err(seed::land::LandError::Store(StoreError::RunByAnother { holder })) if holder == "first"),
        "{refused:?}"
    );
    std::thread::sleep(std::time::Duration::from_millis(400));
    let other_epoch = other.store().runner_lease().expect("lease").take_runner("other", 60_000).expect("take");
    assert_eq!(other_epoch, Some(first_epoch + 1), "an expired lease is taken at the next epoch");
    let len = test.land.store().land_len().expect("len");
    let refused = test.land.seal(&worker, seed::fact::body::KIND_NOTE, note_body("after the lease moved"));
    assert!(
        matches!(&refused, Err(seed::land::LandError::Store(StoreError::RunnerMoved { held, now })) if *held == first_epoch && *now == first_epoch + 1),
        "{refused:?}"
    );
    assert_eq!(test.land.store().land_len().expect("len"), len, "the refused append wrote nothing");
    assert!(!first_leases.renew_runner(first_epoch, 60_000).expect("renew"), "a moved lease is not renewed");
    other.reload_writers();
    note(&other, &worker, "the new runner writes");
    let report = verify_land(other.store(), MODE, 2, common::core_rules()).expect("verify");
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// A second `seed up` on a live land on PostgreSQL follows it: it serves
/// the land's pages as the runner seals (reading the land's tail), refuses
/// people's acts naming the runner, and runs the land once the runner
/// stops.
#[test]
fn a_second_seed_up_follows_the_live_land_and_takes_it_over_when_its_runner_stops() {
    if !postgres_opted_in() {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary folder");
    let land_dir = planted_on(common::postgres::cluster(), dir.path());
    let issued = common::seed(&land_dir, &["token"]);
    assert!(issued.status.success(), "{}", common::stderr(&issued));
    let token = common::stdout(&issued).lines().last().expect("the token").trim().to_string();
    let quick = ["--lifetime-s", "60", "--runner-lease-ms", "1000", "--round-ms", "100"];
    let (runner, runner_url) = spawn_up(&land_dir, &quick);
    let (follower, follower_url) = spawn_up(&land_dir, &quick);
    let http = crate::common::blocking_http().build().expect("an HTTP client");
    let birth = |url: &str, name: &str| {
        let response = http
            .post(format!("{url}api/v1/birth"))
            .bearer_auth(&token)
            .json(&serde_json::json!({"name": name, "cognition": "human"}))
            .send()
            .expect("answered");
        (response.status().as_u16(), response.json::<serde_json::Value>().unwrap_or_default())
    };
    let (status, body) = birth(&follower_url, "zed");
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "follower", "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|message| message.contains(&runner_url)), "{body}");
    assert_eq!(birth(&runner_url, "zed").0, 201);
    let shown = |url: &str, name: &str| {
        http.get(format!("{url}api/v1/beings/{name}")).bearer_auth(&token).send().expect("answered").status().as_u16()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while shown(&follower_url, "zed") != 200 {
        assert!(std::time::Instant::now() < deadline, "the follower never showed what the runner sealed");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    signal(&runner, "TERM");
    let (status, stderr) = exit_of(runner, 30);
    assert!(status.success(), "{stderr}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let (status, body) = birth(&follower_url, "yan");
        if status == 201 {
            break;
        }
        assert_eq!(body["error"]["code"], "follower", "{body}");
        assert!(std::time::Instant::now() < deadline, "the follower never took the land over");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    signal(&follower, "TERM");
    let (status, stderr) = exit_of(follower, 30);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("this process runs the land now"), "{stderr}");
    let verified = common::seed(&land_dir, &["verify"]);
    assert!(verified.status.success(), "verify: {}", common::stdout(&verified));
}
