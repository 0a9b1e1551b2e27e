//! The land's health breaker (docs/health.md): each sign a portal can
//! provoke trips a live land past its threshold; while tripped, acts are
//! refused with a 503 naming the sign and every read stays open; the
//! operator (only) revives it; the trip and the revival are world facts a
//! stopped land shows with `seed health`, and verify and replay pass over
//! them. A simulation trips the same way and `seed health revive` revives
//! the stopped land.

use crate::common::portal::Up;
use crate::common::{seed, stderr, stdout};
use serde_json::{json, Value};

fn act(up: &Up, body: Value) -> (u16, Value) {
    up.post("/api/v1/beings/operator/act", &body)
}

fn set_config(up: &Up, key: &str, value: Value) {
    let (status, answer) = up.post("/api/v1/config", &json!({"key": key, "value": value}));
    assert_eq!(status, 200, "{key}: {answer}");
}

fn refused_act() -> Value {
    json!({"verb": "do", "target": "/", "action": "no-such-operation"})
}

/// An act that seals a fact (a `see` seals none).
fn good_act() -> Value {
    json!({"verb": "summon", "target": "@ada", "content": "the health breaker's test"})
}

/// Provokes one sign after setting its threshold (or floor): the land trips
/// within `most_acts` acts, named by `sign`.
struct Case {
    sign: &'static str,
    key: &'static str,
    value: u64,
    provoke: fn() -> Value,
    most_acts: usize,
}

fn check(case: &Case) {
    let mut up = Up::start(&[]);
    let (status, health) = up.get("/api/v1/health");
    assert_eq!((status, &health["tripped"]), (200, &json!(false)), "{health}");
    let (status, invited) = up.post("/api/v1/accounts", &json!({"account": "ann"}));
    assert_eq!(status, 201, "{invited}");

    // The setting is itself a step: the disk floor trips the land at once.
    set_config(&up, case.key, json!(case.value));
    let mut acts = 0;
    loop {
        let (_, health) = up.get("/api/v1/health");
        if health["tripped"] == true {
            assert_eq!(health["trip"]["sign"], case.sign, "{health}");
            break;
        }
        assert!(acts < case.most_acts, "{}: not tripped after {acts} acts: {health}", case.sign);
        let (status, answer) = act(&up, (case.provoke)());
        assert_ne!(status, 503, "{}: refused as tripped before the health API said so: {answer}", case.sign);
        acts += 1;
    }

    // Tripped: an act is a 503 naming the sign and the way out; nothing is sealed.
    let cursor = up.cursor();
    let (status, answer) = act(&up, good_act());
    assert_eq!(status, 503, "{answer}");
    assert_eq!(answer["error"]["code"], "tripped", "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(case.sign) || case.sign == "disk_free_bytes", "{message}");
    assert!(message.contains("revive"), "{message}");
    assert_eq!(up.cursor(), cursor, "a tripped land seals nothing");

    // Reads stay open: the world, a being, the pages (each with the banner).
    assert_eq!(up.get("/api/v1/world").0, 200);
    assert_eq!(up.get("/api/v1/beings/operator").0, 200);
    for path in ["/world", "/config", "/health"] {
        let (status, page) = up.page(path);
        assert_eq!(status, 200, "{path}");
        assert!(page.contains("id=\"tripped-banner\""), "{path}: {page}");
    }
    let (_, page) = up.page("/health");
    assert!(page.contains(&format!("id=\"sign-{}\" class=\"error\"", case.sign)) || case.sign == "disk_free_bytes");

    // Only the operator revives: a person's token is a 403; the operator's
    // revives, and a second revival is a 409.
    let response = up
        .http
        .post(format!("{}/api/v1/health/revive", up.url))
        .bearer_auth(invited["token"].as_str().expect("a token"))
        .body("{}")
        .send()
        .expect("answered");
    assert_eq!(response.status().as_u16(), 403);
    let (status, answer) = up.post("/api/v1/health/revive", &json!({"why": "x"}));
    assert_eq!((status, &answer["error"]["field"]), (400, &json!("why")), "{answer}");
    let (status, answer) = up.post("/api/v1/health/revive", &json!({}));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["revived"]["trip"]["sign"], case.sign, "{answer}");
    let (status, answer) = up.post("/api/v1/health/revive", &json!({}));
    assert_eq!((status, &answer["error"]["code"]), (409, &json!("not-tripped")), "{answer}");

    // Revived: the threshold back to its default, and acts run again.
    set_config(&up, case.key, Value::Null);
    let (status, answer) = act(&up, good_act());
    assert_eq!(status, 200, "{answer}");
    let (_, page) = up.page("/world");
    assert!(!page.contains("tripped-banner"), "the banner is gone");
    up.stop();

    // The trip and the revival are facts: shown by `seed health`, verified, replayed.
    let land = up.land();
    let shown = seed(&land, &["health", "--json"]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let shown: Value = serde_json::from_str(&stdout(&shown)).expect("JSON");
    assert_eq!((&shown["tripped"], &shown["revived"]["trip"]["sign"]), (&json!(false), &json!(case.sign)), "{shown}");
    crate::common::assert_verifies_and_replays_clean(&land);
}

#[test]
fn each_sign_trips_a_live_land_reads_stay_open_and_the_operator_revives_it() {
    let cases = [
        Case {
            sign: "failures_per_hour",
            key: "health_failures_per_hour_max",
            value: 2,
            provoke: refused_act,
            most_acts: 4,
        },
        Case {
            sign: "facts_per_minute",
            key: "health_facts_per_minute_max",
            value: 4,
            provoke: good_act,
            most_acts: 8,
        },
        Case {
            sign: "disk_free_bytes",
            key: "health_disk_free_bytes_min",
            value: 1 << 50,
            provoke: good_act,
            most_acts: 2,
        },
    ];
    for case in &cases {
        check(case);
    }
}

#[test]
fn a_simulation_trips_and_seed_health_revive_revives_the_stopped_land() {
    let scratch = tempfile::tempdir().expect("a folder");
    let fixture =
        crate::common::court_with_config(scratch.path(), &format!("health_disk_free_bytes_min = {}", 1u64 << 50));
    let land = scratch.path().join("land");
    let ran = seed(&land, &["sim", fixture.to_str().unwrap(), "--ticks", "5", "--json"]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    let summary: Value = serde_json::from_str(&stdout(&ran)).expect("JSON");
    assert_eq!(summary["ticks"], 5, "{summary}");
    assert_eq!((&summary["tripped"]["tick"], &summary["tripped"]["sign"]), (&json!(1), &json!("disk_free_bytes")));
    let untripped = seed(&scratch.path().join("other"), &["sim", fixture.to_str().unwrap(), "--ticks", "1", "--json"]);
    let untripped: Value = serde_json::from_str(&stdout(&untripped)).expect("JSON");
    assert_eq!(summary["moments"], untripped["moments"], "moments ran in the first round only");

    let shown = seed(&land, &["health"]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert!(
        stdout(&shown).contains("tripped at land seq") && stdout(&shown).contains("free disk"),
        "{}",
        stdout(&shown)
    );
    let before = seed(&land, &["health", "--json"]);
    let before: Value = serde_json::from_str(&stdout(&before)).expect("JSON");
    assert_eq!(before["trip"]["sign"], "disk_free_bytes", "{before}");

    let revived = seed(&land, &["health", "revive", "--json"]);
    assert!(revived.status.success(), "{}", stderr(&revived));
    let revived: Value = serde_json::from_str(&stdout(&revived)).expect("JSON");
    assert_eq!(revived["revived"]["by"], "operator", "{revived}");
    let again = seed(&land, &["health", "revive"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("is not tripped: there is nothing to revive"), "{}", stderr(&again));
    crate::common::assert_verifies_and_replays_clean(&land);
}

/// The hostile world's two failing hook handlers open their breakers in its
/// third round; with a threshold of one open breaker the land trips there,
/// and its fourth round runs no moment.
#[test]
fn hook_breakers_opening_trip_a_simulation_whose_threshold_they_pass() {
    use seed::engine::{self, fixture::Fixture, EngineOptions};
    let dir = tempfile::tempdir().expect("folder");
    let mut fixture = Fixture::load(std::path::Path::new("tests/fixtures/hostile/hostile.toml")).expect("fixture");
    fixture.config.insert("health_hook_breakers_open_max".into(), json!(1));
    let options = EngineOptions { seed: 1, threads: 2, ..crate::common::simulation_options(dir.path().join("land")) };
    let summary = engine::simulate(&fixture, &options).expect("the simulation runs");
    assert_eq!(summary.ticks, 4, "every tick passes, tripped or not");
    assert_eq!(
        summary.tripped.as_ref().map(|(tick, trip)| (*tick, trip.sign.as_str())),
        Some((3, "hook_breakers_open"))
    );
    assert_eq!(summary.hook_incidents.iter().filter(|incident| incident.breaker_opened).count(), 2);
    let land = seed::land::Land::open(&dir.path().join("land")).expect("open");
    let world = engine::world_at_end(&land).expect("the world");
    let trip = seed::health::trip_of(&world).expect("tripped");
    assert_eq!(trip.sign, "hook_breakers_open", "{trip:?}");
    let reading = trip.readings.iter().find(|reading| reading.sign == "hook_breakers_open").expect("the reading");
    assert_eq!((reading.value, reading.threshold, reading.part_permille), (2, 1, 2000));
    // Every being woke in each of the three rounds before the trip and none
    // after: three quarters of the moments of the same world untripped.
    let untripped_dir = tempfile::tempdir().expect("folder");
    fixture.config.remove("health_hook_breakers_open_max");
    let untripped =
        engine::simulate(&fixture, &EngineOptions { land_dir: untripped_dir.path().join("land"), ..options })
            .expect("the simulation runs");
    assert_eq!(summary.moments * 4, untripped.moments * 3, "{} vs {}", summary.moments, untripped.moments);
}

/// A land on a small disk (a 16 MB tmpfs) whose floor is 8 MiB: filled to
/// about 4 MB free, its next step still writes and then trips it, so no
/// later write can fail; what it refuses while tripped writes nothing; once
/// space returns the operator revives it and the land verifies clean.
#[test]
fn a_land_on_a_filling_disk_trips_before_a_write_fails() {
    let Some(disk) = crate::store_damage::small_tmpfs() else { return };
    let land = disk.mount.join("land");
    assert!(seed(&land, &["plant"]).status.success());
    let floor = (8u64 << 20).to_string();
    let set = seed(&land, &["config", "set", "health_disk_free_bytes_min", &floor]);
    assert!(set.status.success(), "{}", stderr(&set));
    let filler = disk.mount.join("filler");
    let free = fs2::available_space(&disk.mount).expect("free space");
    std::fs::write(&filler, vec![0u8; free.saturating_sub(4 << 20) as usize]).expect("fill the disk");

    let step = seed(&land, &["config", "set", "inbox_depth_max", "40"]);
    assert!(step.status.success(), "the step before the trip still writes: {}", stderr(&step));
    let shown: Value = serde_json::from_str(&stdout(&seed(&land, &["health", "--json"]))).expect("JSON");
    assert_eq!(shown["trip"]["sign"], "disk_free_bytes", "{shown}");
    assert!(shown["trip"]["diskFreeBytes"].as_u64().expect("free bytes") < 8 << 20, "{shown}");
    let refused = seed(&land, &["config", "set", "inbox_depth_max", "41"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr(&refused).contains("free disk is"), "{}", stderr(&refused));
    assert!(!stderr(&refused).contains("No space left"), "{}", stderr(&refused));

    std::fs::remove_file(&filler).expect("free the space");
    let revived = seed(&land, &["health", "revive"]);
    assert!(revived.status.success(), "{}", stderr(&revived));
    assert!(seed(&land, &["config", "set", "inbox_depth_max", "41"]).status.success());
    assert!(seed(&land, &["verify", "--no-checkpoint"]).status.success());
}

/// `seed up` on a 16 MB tmpfs (its disk floor off, one store error an hour
/// its threshold) whose disk fills: its rounds' writes fail; the trip they
/// call for cannot be sealed while the disk is full and is said once; once
/// space returns the next step seals it, and the land is tripped by
/// `store_errors_per_hour`.
#[test]
fn failed_writes_trip_a_live_land_once_a_write_succeeds_again() {
    use crate::store_damage::{fill_to_the_last_byte, small_tmpfs, UpOnSmallDisk};
    let Some(disk) = small_tmpfs() else { return };
    let fixture = crate::common::court_with_config(
        disk.dir.path(),
        "health_disk_free_bytes_min = 0\nhealth_store_errors_per_hour_max = 1",
    );
    let mut up = UpOnSmallDisk::start(&disk, &fixture);
    let filler = fill_to_the_last_byte(&disk.mount);
    up.wait_for("the trip cannot be sealed", &|| up.logged().contains("could not seal its trip"));
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(up.logged().matches("could not seal its trip").count(), 1, "said once: {}", up.logged());
    assert!(!up.logged().contains("breaker tripped"), "{}", up.logged());
    std::fs::remove_file(&filler).expect("free the space");
    up.wait_for("the land trips", &|| up.logged().contains("health breaker tripped"));
    assert!(up.logged().contains("sign=store_errors_per_hour"), "{}", up.logged());
    let _ = up.child.0.kill();
    let _ = up.child.0.wait();
    let land = disk.mount.join("land");
    let shown: Value = serde_json::from_str(&stdout(&seed(&land, &["health", "--json"]))).expect("JSON");
    assert_eq!(shown["trip"]["sign"], "store_errors_per_hour", "{shown}");
    assert!(seed(&land, &["verify", "--no-checkpoint"]).status.success());
}
