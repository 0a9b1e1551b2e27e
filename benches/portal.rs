//! The portal under load: `seed up` with 1,000 beings planted (fixtures/town.toml,
//! a fifth of them acting every round), then with 10,000 (fixtures/crowd.toml,
//! every one acting every round), and `wrk` from a second process on loopback
//! against the world page, a being page and the timeline. The reference
//! measured in the same run is the login page (static, no world read). Needs
//! `wrk` (Debian: apt-get install wrk). Figures go in docs/performance.md.

#[path = "common/up.rs"]
mod up;

use std::process::{Command, Stdio};
use up::Up;

/// A benchmark measures on the allocator the `seed` binary uses; it chooses the process's allocator (the library only offers it).
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

/// Seconds each page is loaded for.
const LOAD_SECONDS: u64 = 15;
/// Connections wrk keeps open.
const CONNECTIONS: u32 = 8;

struct Load {
    requests_per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: String,
}

fn milliseconds(text: &str) -> f64 {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (text, 1.0)
    };
    number.parse::<f64>().unwrap_or(f64::NAN) * scale
}

fn wrk(url: &str, token: &str) -> Load {
    let output = Command::new("wrk")
        .args(["-t1", &format!("-c{CONNECTIONS}"), &format!("-d{LOAD_SECONDS}s"), "--latency"])
        .args(["-H", &format!("Authorization: Bearer {token}"), url])
        .output()
        .expect("wrk runs (Debian: apt-get install wrk)");
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    let field = |prefix: &str| {
        text.lines().find_map(|line| line.trim().strip_prefix(prefix).map(|rest| rest.trim().to_string()))
    };
    Load {
        requests_per_second: field("Requests/sec:").and_then(|v| v.parse().ok()).unwrap_or(f64::NAN),
        p50_ms: field("50%").map(|v| milliseconds(&v)).unwrap_or(f64::NAN),
        p99_ms: field("99%").map(|v| milliseconds(&v)).unwrap_or(f64::NAN),
        errors: text
            .lines()
            .filter(|line| line.contains("Non-2xx") || line.contains("Socket errors"))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// `seed up` on a fresh land of `fixture`, loaded page by page; prints a
/// table row per page with its ratio to the first (the reference).
fn load_world(fixture: &str, beings: &str, settle_s: u64, pages: &[(&str, &str)]) {
    let up = Up::start(fixture, Stdio::inherit());
    let (url, token) = (up.url.as_str(), up.token.as_str());
    // Let rounds seal so the pages show moving reels.
    std::thread::sleep(std::time::Duration::from_secs(settle_s));
    let mut reference = f64::NAN;
    println!("portal under wrk: 1 thread, {CONNECTIONS} connections, {LOAD_SECONDS} s per page, {beings} beings");
    for (name, path) in pages {
        let load = wrk(&format!("{url}{path}"), token);
        if reference.is_nan() {
            reference = load.requests_per_second;
        }
        println!(
            "{name:<24} {:>9.0} req/s ({:>5.1}% of the reference)  p50 {:>7.2} ms  p99 {:>7.2} ms  {}",
            load.requests_per_second,
            100.0 * load.requests_per_second / reference,
            load.p50_ms,
            load.p99_ms,
            load.errors
        );
    }
}

fn main() {
    // What the `seed` binary does first (src/lib.rs).
    seed::configure_allocator();
    // `cargo bench` passes --bench; `cargo test --benches` runs us too: only load under --bench.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    load_world(
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/town.toml"),
        "1,000",
        3,
        &[
            ("login page (reference)", "/login"),
            ("world page", "/world"),
            ("being page", "/beings/townsfolk-500"),
            ("world API", "/api/v1/world"),
            ("timeline", "/timeline"),
        ],
    );
    // Every one of the 10,000 acts every round: the land seals all the while.
    load_world(
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/crowd.toml"),
        "10,000",
        10,
        &[
            ("login page (reference)", "/login"),
            ("world page", "/world"),
            ("being page", "/beings/walker-500"),
            ("timeline", "/timeline"),
            ("timeline, one being", "/timeline?being=walker-500"),
        ],
    );
}
