//! Following a land of 1,000,000 facts (docs/canopy.md "Following a land"):
//! land B is the crowd fixture played for 99 rounds (10,000 scripted
//! beings: 1,000,008 facts), served by `seed up` with no rounds; land A, a
//! fresh `seed up`, peers with it and follows it, and the time is taken
//! from the follow until A's mirror holds every fact of B, each fetched
//! over loopback, decoded, checked (link, body, signature) and made
//! durable. The reference, measured in the same run on the same land, is
//! `seed verify` of B (land-wide, batch signatures, every thread), with its
//! verification checkpoint removed first so every signature is checked.
//! The two alternate, `RUNS` times each. B is kept under
//! `target/bench-lands/` between runs (planting it takes minutes); delete
//! that folder to plant it again. Needs nothing but the `seed` binary;
//! figures go in docs/performance.md.

#[path = "common/calls.rs"]
mod calls;
#[path = "common/up.rs"]
mod up;

use calls::{get, http, post};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use up::Up;

/// A benchmark measures on the allocator the `seed` binary uses.
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

/// Rounds the crowd plays: 10,000 geneses and 99 rounds of 10,000 acts, and the root's facts.
const CROWD_ROUNDS: &str = "99";
/// Facts of the followed land at least.
const FACTS_MIN: u64 = 1_000_000;
/// Follows and verifications, alternating.
const RUNS: usize = 2;
/// The longest a follow may take before the benchmark gives up.
const FOLLOW_WAIT: Duration = Duration::from_secs(1_800);

fn seed_at(land: &Path, arguments: &[&str]) -> std::process::Output {
    let output = Command::new(env!("CARGO_BIN_EXE_seed")).arg("--land").arg(land).args(arguments).output();
    let output = output.expect("seed runs");
    assert!(output.status.success(), "seed {arguments:?}: {}", String::from_utf8_lossy(&output.stderr));
    output
}

/// The crowd land of a million facts, planted once and kept.
fn crowd_land(fixture: &str) -> PathBuf {
    let land = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-lands/crowd-1m");
    if !land.join("land.toml").is_file() {
        let _ = std::fs::remove_dir_all(&land);
        println!("planting the crowd land of {FACTS_MIN} facts at {} (once; minutes)", land.display());
        seed_at(&land, &["sim", fixture, "--ticks", CROWD_ROUNDS]);
    }
    seed_at(&land, &["config", "set", "portal_requests_per_minute_max", "1000000000"]);
    land
}

/// `seed verify` of the land, every signature checked.
fn verify(land: &Path) -> Duration {
    let _ = std::fs::remove_file(land.join("verified-checkpoint"));
    let started = Instant::now();
    let output = seed_at(land, &["verify", "--no-checkpoint", "--json"]);
    let elapsed = started.elapsed();
    let report: Value = serde_json::from_slice(&output.stdout).expect("seed verify --json");
    assert_eq!(report["ok"], true, "{report}");
    assert!(report["facts"].as_u64() >= Some(FACTS_MIN), "{report}");
    elapsed
}

/// A fresh land follows `b` until its mirror holds every fact of `b`.
fn follow(b: &Up) -> (Duration, u64) {
    let a = Up::start(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/canopy/world.toml"), Stdio::null());
    for up in [&a, b] {
        post(up, "/api/v1/config", &json!({"key": "canopy_requests_per_peer_per_minute_max", "value": 1_000_000}));
    }
    post(&a, "/api/v1/peers", &json!({"url": b.url}));
    let b_id = get(b, "/canopy/v1/land")["land"].as_str().expect("a land id").to_string();
    // B takes A as a peer (it answers only its peers), then A follows B.
    let peers = get(b, "/api/v1/peers");
    if let Some(old) = peers["peers"].as_array().and_then(|peers| peers.first()) {
        let old = old["land"].as_str().expect("a land id");
        let response =
            http().delete(format!("{}/api/v1/peers/{old}", b.url)).bearer_auth(&b.token).send().expect("answered");
        assert!(response.status().is_success());
    }
    post(b, "/api/v1/peers", &json!({"url": a.url}));
    let started = Instant::now();
    post(&a, &format!("/api/v1/peers/{b_id}/following"), &json!({"following": true}));
    loop {
        let peers = get(&a, "/api/v1/peers");
        let peer = peers["peers"].as_array().and_then(|peers| peers.iter().find(|peer| peer["land"] == b_id.as_str()));
        let pull = &peer.expect("B is A's peer")["mirror"]["pull"];
        if pull["state"] == "caught-up" && pull["taken"].as_u64() >= Some(FACTS_MIN) {
            let taken = pull["taken"].as_u64().unwrap_or_default();
            return (started.elapsed(), taken);
        }
        assert!(pull["state"] != "failed" && pull["state"] != "forked", "the follow stopped: {pull}");
        assert!(started.elapsed() < FOLLOW_WAIT, "the follow never caught up: {pull}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn main() {
    seed::configure_allocator();
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/crowd.toml");
    let land = crowd_land(fixture);
    let (mut verify_time, mut follow_time, mut facts) = (Duration::ZERO, Duration::ZERO, 0);
    for run in 0..RUNS {
        let verified = |total: &mut Duration| {
            let elapsed = verify(&land);
            println!("  seed verify of B: {:.1} s", elapsed.as_secs_f64());
            *total += elapsed;
        };
        let followed = |total: &mut Duration, facts: &mut u64| {
            let guard = tempfile::tempdir().expect("a temporary folder");
            let b = Up::serve(guard, &land, fixture, Stdio::null(), &["--round-ms", "86400000"]);
            let (elapsed, taken) = follow(&b);
            println!("  A following B: {taken} facts in {:.1} s", elapsed.as_secs_f64());
            *total += elapsed;
            *facts = taken;
        };
        if run % 2 == 0 {
            verified(&mut verify_time);
            followed(&mut follow_time, &mut facts);
        } else {
            followed(&mut follow_time, &mut facts);
            verified(&mut verify_time);
        }
    }
    let verify_rate = facts as f64 * RUNS as f64 / verify_time.as_secs_f64();
    let follow_rate = facts as f64 * RUNS as f64 / follow_time.as_secs_f64();
    println!("following a land of {facts} facts, {RUNS} runs of each, alternating");
    println!("seed verify of the land (reference)          {verify_rate:>10.0} facts/s  100.0%");
    println!(
        "a follower catching up (fetch, check, keep)  {follow_rate:>10.0} facts/s  {:>5.1}% of verify",
        100.0 * follow_rate / verify_rate
    );
}
