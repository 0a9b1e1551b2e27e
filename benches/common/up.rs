//! `seed up` on a fresh land of a fixture, on a free loopback port, with no
//! request limit: the land the benchmarks that load the portal measure
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
    pub fn start(fixture: &str, stderr: Stdio) -> Up {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let land = dir.path().join("land");
        let mut child = Command::new(env!("CARGO_BIN_EXE_seed"))
            .arg("--land")
            .arg(&land)
            .args(["up", "--fixture", fixture, "--addr", "127.0.0.1:0", "--lifetime-s", "900"])
            .args(["--requests-per-minute-max", "1000000000"])
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("seed up starts");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let (mut url, mut token) = (String::new(), String::new());
        while url.is_empty() || token.is_empty() {
            let line = lines.next().expect("seed up prints its URL and token").expect("readable");
            if let Some(rest) = line.strip_prefix("seed is up: ") {
                url = rest.trim_end_matches('/').to_string();
            }
            if let Some(rest) = line.strip_prefix("operator token (shown once, keep it): ") {
                token = rest.to_string();
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
