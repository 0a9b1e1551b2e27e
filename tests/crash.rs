//! Acknowledged means durable: a child process seals facts as fast as it can
//! and is killed with SIGKILL at random moments. After every kill the land
//! reopens, every fact the child reported as acknowledged is there, and every
//! reel is a gap-free, fully verified chain.
//!
//! `SEED_CRASH_CYCLES` sets the number of kills (default 100, the CI figure;
//! the long mode documented in docs/testing.md runs 2,000).

use crate::common;

use seed::check::{verify_land, SignatureMode};
use seed::fact::{BeingId, FactId};
use seed::land::Land;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

const CRASH_CYCLES_DEFAULT: usize = 100;
/// Cycles that share one land before a fresh one is planted (keeps verify
/// time flat while still testing recovery over repeated crashes).
const CYCLES_PER_LAND: usize = 10;
const KILL_DELAY_MS_MIN: u64 = 20;
const KILL_DELAY_MS_MAX: u64 = 250;

/// A small deterministic generator so a failing cycle can be reproduced.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn parse_ack(line: &str) -> Option<(BeingId, u64, FactId)> {
    let mut parts = line.split_whitespace();
    if parts.next()? != "ack" {
        return None;
    }
    let being = BeingId::from_hex(parts.next()?)?;
    let seq = parts.next()?.parse().ok()?;
    let id = FactId::from_hex(parts.next()?)?;
    Some((being, seq, id))
}

/// The store folder's file names and sizes, to tell a failed reopen's cause.
fn store_files(land_dir: &std::path::Path) -> Vec<(String, u64)> {
    let Ok(entries) = std::fs::read_dir(land_dir.join("store")) else { return Vec::new() };
    let mut files: Vec<(String, u64)> = entries
        .flatten()
        .map(|entry| {
            let size = entry.metadata().map(|metadata| metadata.len()).unwrap_or(0);
            (entry.file_name().to_string_lossy().into_owned(), size)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn acknowledged_facts_survive_kill_9() {
    let cycles: usize =
        std::env::var("SEED_CRASH_CYCLES").ok().and_then(|text| text.parse().ok()).unwrap_or(CRASH_CYCLES_DEFAULT);
    let seed_value: u64 = std::env::var("SEED_CRASH_SEED").ok().and_then(|t| t.parse().ok()).unwrap_or(0x5eed_c4a5);
    let mut random = XorShift(seed_value);
    let mut folder = None;
    let mut total_acks = 0usize;
    let mut cycles_with_acks = 0usize;
    for cycle in 0..cycles {
        if cycle % CYCLES_PER_LAND == 0 {
            let dir = tempfile::tempdir().expect("temporary folder");
            let planted = common::seed(&dir.path().join("land"), &["plant"]);
            assert!(planted.status.success(), "plant: {}", common::stderr(&planted));
            folder = Some(dir);
        }
        let land_dir = folder.as_ref().expect("planted").path().join("land");
        let mut child = Command::new(env!("CARGO_BIN_EXE_seed"))
            .arg("--land")
            .arg(&land_dir)
            .args(["stress", "--beings", "3", "--window", "16"])
            .env_remove("SEED_LAND")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the sealing child");
        let stdout = child.stdout.take().expect("piped stdout");
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout).lines().map_while(Result::ok).filter_map(|line| parse_ack(&line)).collect::<Vec<_>>()
        });
        let delay = KILL_DELAY_MS_MIN + random.next() % (KILL_DELAY_MS_MAX - KILL_DELAY_MS_MIN);
        std::thread::sleep(Duration::from_millis(delay));
        child.kill().expect("SIGKILL the child");
        child.wait().expect("reap the child");
        let acks = reader.join().expect("reader thread");

        let land = Land::open(&land_dir).unwrap_or_else(|error| {
            panic!("cycle {cycle}: reopen failed: {error}; the store holds {:?}", store_files(&land_dir))
        });
        let report = verify_land(land.store(), SignatureMode::Batch { batch_facts: 256 }, 2, common::core_rules())
            .expect("verify");
        assert!(report.problems.is_empty(), "cycle {cycle} (kill after {delay} ms): {:?}", report.problems);
        for (being, seq, id) in &acks {
            let stored = land.store().reel(being, *seq, seq + 1).expect("read");
            assert_eq!(
                stored.first().map(|s| s.fact.id()),
                Some(*id),
                "cycle {cycle}: acknowledged fact {} seq {seq} is missing after kill -9",
                being.short()
            );
        }
        land.close().expect("close");
        total_acks += acks.len();
        cycles_with_acks += usize::from(!acks.is_empty());
    }
    eprintln!(
        "{cycles} kills, {total_acks} acknowledged facts checked, {cycles_with_acks} cycles acknowledged something"
    );
    assert!(cycles_with_acks * 2 >= cycles, "most cycles must get far enough to acknowledge facts");
}
