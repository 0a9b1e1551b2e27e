//! Summons between two lands (docs/canopy.md): two `seed up` processes on
//! loopback, each on tests/fixtures/canopy, peering with each other. A
//! summons from @ada of land A to @bo of land B is sealed on A, delivered
//! with its sealed fact, verified by B and sealed there as an arrival, and
//! its delivery recorded back on A: two facts, one on each land, and one
//! signed request between them. The reference, measured in the same run
//! and on the same land, is a local summons (@ada to @bo of land A), sealed
//! once. The two run in alternating batches (local, remote; remote, local;
//! …) so both see the same machine and lands of the same size. A remote
//! batch is timed from its first summons sealed to its last one recorded
//! as delivered. Needs nothing but the `seed` binary; figures go in
//! docs/performance.md.

#[path = "common/calls.rs"]
mod calls;
#[path = "common/up.rs"]
mod up;

use calls::{get, http, post};
use serde_json::json;
use std::process::Stdio;
use std::time::{Duration, Instant};
use up::Up;

/// A benchmark measures on the allocator the `seed` binary uses.
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

/// Summons in one batch.
const SUMMONS_PER_BATCH: usize = 200;
/// Batches of each kind.
const BATCHES: usize = 4;
/// Clients sending summons at once.
const CLIENTS: usize = 4;

/// `count` summons from @ada of `up` to `target`, from `CLIENTS` clients at once.
fn send(up: &Up, target: &str, count: usize) {
    std::thread::scope(|scope| {
        for client in 0..CLIENTS {
            scope.spawn(move || {
                let http = http();
                for n in (client..count).step_by(CLIENTS) {
                    let body = json!({"verb": "summon", "target": target, "content": format!("summons {n}")});
                    let response = http
                        .post(format!("{}/api/v1/beings/ada/act", up.url))
                        .bearer_auth(&up.token)
                        .json(&body)
                        .send()
                        .expect("answered");
                    assert!(response.status().is_success(), "{:?}", response.text());
                }
            });
        }
    });
}

fn main() {
    seed::configure_allocator();
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/canopy/world.toml");
    let (a, b) = (Up::start_seeded(fixture, Stdio::null(), 1), Up::start_seeded(fixture, Stdio::null(), 2));
    for up in [&a, &b] {
        for (key, value) in [
            ("summons_per_minute_max", 1_000_000),
            ("inbox_depth_max", 1_000_000),
            ("canopy_requests_per_peer_per_minute_max", 1_000_000),
            ("canopy_summons_per_peer_per_minute_max", 1_000_000),
        ] {
            post(up, "/api/v1/config", &json!({"key": key, "value": value}));
        }
    }
    post(&a, "/api/v1/peers", &json!({"url": b.url}));
    post(&b, "/api/v1/peers", &json!({"url": a.url}));
    let b_land = get(&b, "/canopy/v1/land")["land"].as_str().expect("a land id").to_string();
    let remote = format!("@bo@{b_land}");
    let arrived_at_b = || get(&b, "/api/v1/beings/bo")["inbox"].as_array().map_or(0, Vec::len);
    let (mut local_time, mut remote_time) = (Duration::ZERO, Duration::ZERO);
    let local = |total: &mut Duration| {
        let started = Instant::now();
        send(&a, "@bo", SUMMONS_PER_BATCH);
        *total += started.elapsed();
    };
    let remote_batch = |total: &mut Duration| {
        let before = arrived_at_b();
        let started = Instant::now();
        send(&a, &remote, SUMMONS_PER_BATCH);
        // Until every one is sealed on B and its delivery recorded on A.
        loop {
            let outbox = get(&a, "/api/v1/peers")["outbox"].as_array().map_or(usize::MAX, Vec::len);
            if outbox == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        *total += started.elapsed();
        assert_eq!(arrived_at_b() - before, SUMMONS_PER_BATCH, "each summons arrived once");
    };
    for batch in 0..BATCHES {
        if batch % 2 == 0 {
            local(&mut local_time);
            remote_batch(&mut remote_time);
        } else {
            remote_batch(&mut remote_time);
            local(&mut local_time);
        }
    }
    let count = (SUMMONS_PER_BATCH * BATCHES) as f64;
    let local_rate = count / local_time.as_secs_f64();
    let remote_rate = count / remote_time.as_secs_f64();
    println!("summons, {CLIENTS} clients, {BATCHES} batches of {SUMMONS_PER_BATCH} of each kind, interleaved");
    println!("local summons, sealed on A (reference)      {local_rate:>8.1}/s  100.0%");
    println!(
        "summons A to B, sealed on A and B, recorded {remote_rate:>8.1}/s  {:>5.1}% of local",
        100.0 * remote_rate / local_rate
    );
}
