//! The command line end to end: planting, reading, and every kind of bad
//! input getting one clear error line, a non-zero exit, no panic, and no harm
//! to what is stored.

use crate::common;

use common::{folder_snapshot, seed, stderr, stdout};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn planted() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let land = dir.path().join("land");
    let output = seed(&land, &["plant"]);
    assert!(output.status.success(), "{}", stderr(&output));
    (dir, land)
}

/// The command failed with exit 1 and exactly one line on stderr containing `needle`.
fn check_refused(land: &Path, arguments: &[&str], needle: &str) {
    let output = seed(land, arguments);
    let error = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{arguments:?} should fail: {error}{}", stdout(&output));
    assert!(!error.contains("panicked"), "{arguments:?} panicked: {error}");
    assert_eq!(error.lines().count(), 1, "{arguments:?}: one error line, got: {error}");
    assert!(error.starts_with("error: "), "{arguments:?}: {error}");
    assert!(error.contains(needle), "{arguments:?}: expected {needle:?} in: {error}");
}

#[test]
fn plant_prints_the_beings_and_a_token_and_refuses_to_plant_twice() {
    let (_dir, land) = planted();
    let beings = stdout(&seed(&land, &["beings"]));
    for name in ["@reality", "@operator", "@birther", "@role-manager"] {
        assert!(beings.contains(name), "{beings}");
    }
    let before = folder_snapshot(&land);
    check_refused(&land, &["plant"], "already planted");
    assert_eq!(folder_snapshot(&land), before, "planting twice changed nothing");
    let verify = seed(&land, &["verify"]);
    assert!(stdout(&verify).contains("verified 4 beings, 5 facts: no problems"), "{}", stdout(&verify));
}

#[test]
fn the_operator_token_is_shown_once_and_only_its_hash_is_stored() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let land = dir.path().join("land");
    let output = stdout(&seed(&land, &["plant"]));
    let token = output.lines().find_map(|line| line.trim().strip_prefix("seed-op-")).expect("token printed");
    let hash = blake3::hash(format!("seed-op-{token}").as_bytes()).to_hex().to_string();
    let reel = stdout(&seed(&land, &["reel", "@operator", "--json"]));
    assert!(reel.contains(&hash), "the token's hash is on the operator's reel");
    for (path, bytes) in folder_snapshot(&land) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(token), "the token itself is stored in {}", path.display());
    }
}

#[test]
fn reel_prints_readably_and_as_json() {
    let (_dir, land) = planted();
    let text = stdout(&seed(&land, &["reel", "@operator"]));
    assert!(text.contains("genesis") && text.contains("operator-token"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&seed(&land, &["reel", "@operator", "--json"]))).expect("json");
    let facts = json["facts"].as_array().expect("facts");
    assert_eq!(facts.len(), 2);
    assert_eq!(facts[0]["kind"], "genesis");
    assert_eq!(facts[0]["body"]["name"], "operator");
    assert_eq!(facts[0]["body"]["cognition"], "human");
    assert_eq!(facts[1]["prev"], facts[0]["id"]);
}

#[test]
fn bad_land_folders_get_one_clear_error() {
    let dir = tempfile::tempdir().expect("temporary folder");
    check_refused(&dir.path().join("missing"), &["verify"], "no land at");
    let stranger = dir.path().join("stranger");
    std::fs::create_dir_all(&stranger).expect("folder");
    std::fs::write(stranger.join("notes.txt"), "hello").expect("file");
    check_refused(&stranger, &["verify"], "not a seed land");
    check_refused(&stranger, &["plant"], "not empty");
    assert_eq!(std::fs::read_to_string(stranger.join("notes.txt")).expect("kept"), "hello");

    let (_planted, land) = planted();
    let meta = land.join("land.toml");
    let original = std::fs::read(&meta).expect("meta");
    std::fs::write(&meta, "format = \"seven\"\n").expect("corrupt meta");
    check_refused(&land, &["verify"], "land.toml is unreadable");
    std::fs::write(&meta, original).expect("restore meta");
    assert!(seed(&land, &["verify"]).status.success());
}

#[test]
fn a_land_held_by_a_writer_refuses_another_writer_but_not_a_reader() {
    let (_dir, land) = planted();
    let holder = seed::land::Land::open(&land).expect("hold the land");
    check_refused(&land, &["token"], "in use by another process");
    // Readers take no lock: they read what is durable beside the writer.
    let verify = seed(&land, &["verify", "--no-checkpoint"]);
    assert!(verify.status.success(), "{}{}", stdout(&verify), stderr(&verify));
    holder.close().expect("close");
    assert!(seed(&land, &["token"]).status.success());
}

#[test]
fn a_truncated_or_missing_store_is_refused() {
    let (_dir, land) = planted();
    let stress = seed(&land, &["stress", "--beings", "2", "--facts", "300"]);
    assert!(stress.status.success(), "{}", stderr(&stress));
    let copy = tempfile::tempdir().expect("temporary folder");
    for (name, length) in [("short", 4096u64), ("half", 120_000u64)] {
        let damaged = copy.path().join(name);
        copy_folder(&land, &damaged);
        let segment = damaged.join("log/segments/00000000000000000000.log");
        let file = std::fs::OpenOptions::new().write(true).open(segment).expect("segment file");
        file.set_len(length).expect("truncate");
        let output = seed(&damaged, &["verify"]);
        let error = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{name}: {error}");
        assert!(!error.contains("panicked") && error.lines().count() == 1, "{name}: {error}");
        assert!(error.contains("corrupt") || error.contains("truncated"), "{name}: {error}");
    }
    let emptied = copy.path().join("emptied");
    copy_folder(&land, &emptied);
    std::fs::remove_dir_all(emptied.join("log")).expect("remove the store");
    check_refused(&emptied, &["verify"], "missing the reality root's reel");
    assert!(seed(&land, &["verify"]).status.success(), "the original is untouched");
}

#[test]
fn missing_or_exposed_keys_and_wrong_names_are_refused() {
    let (_dir, land) = planted();
    check_refused(&land, &["reel", "@nobody"], "no being named @nobody");
    check_refused(&land, &["reel", "Not A Name"], "invalid being reference");
    check_refused(&land, &["export", "@ghost", "-o", "/dev/null"], "no being named @ghost");
    let json: serde_json::Value = serde_json::from_str(&stdout(&seed(&land, &["beings", "--json"]))).expect("json");
    let birther = json.as_array().expect("list").iter().find(|b| b["name"] == "birther").expect("birther")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let ring = land.join("keys").join(seed::keys::KEY_RING_FILE);
    std::fs::set_permissions(&ring, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    check_refused(&land, &["rotate-key", "@birther"], "readable by others");
    std::fs::set_permissions(&ring, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let birther = seed::fact::BeingId::from_hex(&birther).expect("id");
    let keys = seed::keys::KeyRing::open(&land.join("keys")).expect("ring");
    let key = keys.load(&birther).expect("birther's key");
    keys.forget(&birther).expect("forget the key");
    check_refused(&land, &["rotate-key", "@birther"], "no signing key");
    assert!(seed(&land, &["verify"]).status.success(), "verification needs no private key");
    keys.store(&birther, &key).expect("restore the key");
    let rotated = seed(&land, &["rotate-key", "@birther"]);
    assert!(rotated.status.success(), "{}", stderr(&rotated));
    assert!(stdout(&seed(&land, &["verify"])).contains("no problems"));
}

#[test]
fn usage_errors_exit_2() {
    let (_dir, land) = planted();
    let output = seed(&land, &["verify", "--threads", "many"]);
    assert_eq!(output.status.code(), Some(2));
    let output = seed(&land, &["no-such-command"]);
    assert_eq!(output.status.code(), Some(2));
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create");
    for entry in std::fs::read_dir(from).expect("read") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_folder(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Off a terminal, long commands say how far they got in plain lines on
/// stderr (every few seconds; here at every step), and stdout keeps only
/// the report.
#[test]
fn long_commands_report_progress_in_plain_lines_off_a_terminal() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let land = dir.path().join("land");
    let every_step = |arguments: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
            .arg("--land")
            .arg(&land)
            .args(arguments)
            .env_remove("SEED_LAND")
            .env("SEED_PROGRESS_LINE_INTERVAL_MS", "0")
            .output()
            .expect("run seed")
    };
    let sim = every_step(&["sim", "fixtures/court.toml", "--ticks", "3"]);
    assert!(sim.status.success(), "{}", stderr(&sim));
    assert!(stderr(&sim).contains("seed sim: running rounds, 3 of 3 rounds (100%)"), "{}", stderr(&sim));
    let verify = every_step(&["verify", "--json"]);
    assert!(verify.status.success(), "{}", stderr(&verify));
    let facts = serde_json::from_str::<serde_json::Value>(&stdout(&verify)).expect("stdout is the JSON report")
        ["facts"]
        .as_u64()
        .expect("facts");
    let progress = stderr(&verify);
    assert!(progress.contains(&format!("seed verify: checking reels, {facts} of {facts} facts (100%)")), "{progress}");
    let replay = every_step(&["replay", "--all"]);
    assert!(replay.status.success(), "{}", stderr(&replay));
    assert!(stderr(&replay).contains("seed replay --all: replaying the land log"), "{}", stderr(&replay));
    let bundle = dir.path().join("ada.bundle");
    let export = every_step(&["export", "@ada", "-o", bundle.to_str().expect("utf-8")]);
    assert!(export.status.success(), "{}", stderr(&export));
    let other = dir.path().join("other");
    assert!(seed(&other, &["plant"]).status.success());
    let import = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("--land")
        .arg(&other)
        .args(["import", bundle.to_str().expect("utf-8")])
        .env("SEED_PROGRESS_LINE_INTERVAL_MS", "0")
        .output()
        .expect("run seed");
    assert!(import.status.success(), "{}", stderr(&import));
    assert!(stderr(&import).contains("seed import: storing facts"), "{}", stderr(&import));
    // Without the override, a short command prints no progress at all.
    let quiet = seed(&land, &["verify"]);
    assert_eq!(stderr(&quiet), "", "no progress line within the first interval");
}

/// A land whose key folder holds one file per being (as lands did before the
/// ring) is read as it is by commands that only read, and moved into the
/// ring the first time a command needs a key.
#[test]
fn a_key_folder_of_one_file_per_being_is_moved_into_the_ring_once() {
    let (_dir, land) = planted();
    let keys_dir = land.join("keys");
    // Turn the ring back into the old layout.
    let opened = seed::land::Land::open(&land).expect("open");
    let beings = opened.store().beings().expect("beings");
    let keys: Vec<_> = beings.iter().filter_map(|being| Some((*being, opened.keys().load(being).ok()?))).collect();
    opened.close().expect("close");
    assert!(keys.len() >= 4, "{} keys", keys.len());
    std::fs::remove_file(keys_dir.join(seed::keys::KEY_RING_FILE)).expect("remove the ring");
    for (being, key) in &keys {
        let path = keys_dir.join(format!("{}.key", being.to_hex()));
        std::fs::write(&path, format!("{}\n", hex::encode(key.to_bytes()))).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let before = common::folder_snapshot(&keys_dir);
    assert!(seed(&land, &["beings"]).status.success());
    assert!(seed(&land, &["reel", "@birther"]).status.success());
    assert!(common::folder_snapshot(&keys_dir) == before, "reading the land left the key folder as it was");
    let rotated = seed(&land, &["rotate-key", "@birther"]);
    assert!(rotated.status.success(), "{}", stderr(&rotated));
    let mut names: Vec<String> = std::fs::read_dir(&keys_dir)
        .expect("keys")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // The ring holds every key; its lock file (taken by appends) holds none.
    let expected = [seed::keys::KEY_RING_FILE, seed::keys::KEY_RING_LOCK_FILE].map(String::from);
    assert_eq!(names, expected, "one file of keys and its lock");
    let ring = seed::keys::KeyRing::open(&keys_dir).expect("ring");
    let opened = seed::land::Land::open(&land).expect("open");
    let birther = opened.resolve("@birther").expect("birther");
    opened.close().expect("close");
    for (being, key) in &keys {
        let now = ring.load(being).expect("every key moved").to_bytes();
        // The rotated being holds its new key; every other its old one.
        assert_eq!(now == key.to_bytes(), *being != birther, "{being}");
    }
    assert!(stdout(&seed(&land, &["verify"])).contains("no problems"));
    let again = seed(&land, &["rotate-key", "@birther"]);
    assert!(again.status.success(), "{}", stderr(&again));
}
