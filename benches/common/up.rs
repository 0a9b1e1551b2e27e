//! `seed up` on a fresh land of a fixture, on a free loopback port, with its
//! `portal_requests_per_minute_max` raised to a billion (no limit a load reaches): the land the benchmarks that load the portal measure
//! (benches/portal.rs, benches/mcp.rs). Stopped when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

pub struct Up {
    child: std::process::Child,
    pub url: String,
    pub token: String,
    _dir: tempfile::TempDir,
}

impl Up {
    /// Starts it and waits for its URL and operator token; `stderr` is
    /// where its log goes.
    #[allow(dead_code)]
    pub fn start(fixture: &str, stderr: Stdio) -> Up {
        Up::start_seeded(fixture, stderr, 0)
    }

    /// `start`, its land planted with simulation seed `seed`: two lands of
    /// one fixture and one seed have one genesis, so one land id (Canopy's
    /// benchmark plants each with its own).
    pub fn start_seeded(fixture: &str, stderr: Stdio, seed: u64) -> Up {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let land = dir.path().join("land");
        let seed_at_land = |arguments: &[&str]| {
            let output = Command::new(env!("CARGO_BIN_EXE_seed")).arg("--land").arg(&land).args(arguments).output();
            let output = output.expect("seed runs");
            assert!(output.status.success(), "seed {arguments:?}: {}", String::from_utf8_lossy(&output.stderr));
            output
        };
        // Planted first, so the request limit can be raised as a key before
        // it serves; a land that exists prints no token when it comes up, so
        // one is issued here.
        seed_at_land(&["sim", fixture, "--ticks", "0", "--seed", &seed.to_string()]);
        seed_at_land(&["config", "set", "portal_requests_per_minute_max", "1000000000"]);
        Up::serve(dir, &land, fixture, stderr, &[])
    }

    /// Serves the land planted at `land` (a `seed sim` land), with `extra`
    /// arguments for `seed up` (`--round-ms`); `dir` is dropped with it.
    pub fn serve(dir: tempfile::TempDir, land: &std::path::Path, fixture: &str, stderr: Stdio, extra: &[&str]) -> Up {
        let seed_at_land = |arguments: &[&str]| {
            let output = Command::new(env!("CARGO_BIN_EXE_seed")).arg("--land").arg(land).args(arguments).output();
            let output = output.expect("seed runs");
            assert!(output.status.success(), "seed {arguments:?}: {}", String::from_utf8_lossy(&output.stderr));
            output
        };
        let issued = seed_at_land(&["token", "--json"]);
        let issued: serde_json::Value = serde_json::from_slice(&issued.stdout).expect("seed token --json");
        let token = issued["token"].as_str().expect("a token").to_string();
        let mut child = Command::new(env!("CARGO_BIN_EXE_seed"))
            .arg("--land")
            .arg(land)
            .args(["up", "--fixture", fixture, "--addr", "127.0.0.1:0", "--lifetime-s", "3600"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("seed up starts");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut url = String::new();
        while url.is_empty() {
            let line = lines.next().expect("seed up prints its URL").expect("readable");
            if let Some(rest) = line.strip_prefix("seed is up: ") {
                url = rest.trim_end_matches('/').to_string();
            }
        }
        // Keep draining stdout so the process never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Up { child, url, token, _dir: dir }
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
