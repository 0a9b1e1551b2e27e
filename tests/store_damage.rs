//! A damaged or full store: every byte of the log store's files flipped in
//! turn gives `seed verify` one clear answer (problems named, or one error
//! line naming the damaged file) within a bounded time, never a panic; a
//! full disk is one error on the write that hit it, and the land goes on
//! once space returns with every acknowledged fact intact.

use crate::common;

use common::{stderr, stdout};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// How long one `seed verify` of the small damaged land may take.
const VERIFY_DAMAGED_TIMEOUT_MS: u64 = 20_000;
/// Every how many bytes of a store file the sweep flips one.
const FLIP_EVERY_BYTES: usize = 97;

/// Runs `seed --land LAND ARGUMENTS` under a timeout; `None` if it ran over.
fn seed_within(land: &Path, arguments: &[&str], timeout: Duration) -> Option<std::process::Output> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("--land")
        .arg(land)
        .args(arguments)
        .env_remove("SEED_LAND")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run seed");
    let started = std::time::Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return Some(child.wait_with_output().expect("output"));
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn every_flipped_byte_of_the_store_files_gives_one_clear_answer_and_no_panic() {
    let dir = tempfile::tempdir().expect("folder");
    let land = dir.path().join("land");
    assert!(common::seed(&land, &["plant"]).status.success());
    let stress = common::seed(&land, &["stress", "--beings", "3", "--facts", "60"]);
    assert!(stress.status.success(), "{}", stderr(&stress));
    let files = ["log/segments/00000000000000000000.log", "log/land.index", "log/beings.index"];
    let mut swept = 0;
    for file in files {
        let path = land.join(file);
        let original = std::fs::read(&path).expect("read");
        for at in (0..original.len()).step_by(FLIP_EVERY_BYTES) {
            let mut damaged = original.clone();
            damaged[at] ^= 0x10;
            std::fs::write(&path, &damaged).expect("damage");
            let output =
                seed_within(&land, &["verify", "--no-checkpoint"], Duration::from_millis(VERIFY_DAMAGED_TIMEOUT_MS))
                    .unwrap_or_else(|| panic!("{file} byte {at}: verify ran past {VERIFY_DAMAGED_TIMEOUT_MS} ms"));
            let (out, error) = (stdout(&output), stderr(&output));
            assert!(!error.contains("panicked"), "{file} byte {at}: {error}");
            match output.status.code() {
                // Derived files are read past: the answer is the clean one.
                Some(0) => assert!(file.ends_with(".index") && out.contains("no problems"), "{file} byte {at}: {out}"),
                Some(1) if error.is_empty() => assert!(out.contains("problem"), "{file} byte {at}: {out}"),
                Some(1) => {
                    assert_eq!(error.lines().count(), 1, "{file} byte {at}: {error}");
                    assert!(error.contains("segments") || error.contains("index"), "{file} byte {at}: {error}");
                    assert!(!error.contains("restore") && !error.contains("re-import"), "{file} byte {at}: {error}");
                }
                other => panic!("{file} byte {at}: exit {other:?}: {out}{error}"),
            }
            swept += 1;
        }
        std::fs::write(&path, &original).expect("restore");
    }
    assert!(swept > 100, "the sweep flipped {swept} bytes");
    let clean = common::seed(&land, &["verify", "--no-checkpoint"]);
    assert!(clean.status.success(), "{}", stdout(&clean));
}

/// A 16 MB tmpfs mounted in a fresh folder, unmounted when dropped; `None`
/// where this process may not mount (the test then says so and passes: it
/// needs root, as CI has).
pub(crate) fn small_tmpfs() -> Option<SmallDisk> {
    let dir = tempfile::tempdir().expect("folder");
    let mount = dir.path().join("small");
    std::fs::create_dir(&mount).expect("mount point");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={SMALL_DISK_MEGABYTES}m"), "tmpfs"])
        .arg(&mount)
        .output()
        .is_ok_and(|output| output.status.success());
    if !mounted {
        eprintln!("skipped: mounting a {SMALL_DISK_MEGABYTES} MB tmpfs needs root (CI runs as root)");
        return None;
    }
    Some(SmallDisk { mount, dir })
}

/// A child process killed if a test fails while it runs, so that the small
/// disk it holds open can be unmounted.
pub(crate) struct KilledOnDrop(pub(crate) std::process::Child);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `seed up` on a small disk with `fixture` (rounds every 50 ms, its log
/// and output beside the mount point), killed when dropped.
pub(crate) struct UpOnSmallDisk {
    pub(crate) child: KilledOnDrop,
    log: std::path::PathBuf,
    out: std::path::PathBuf,
}

impl UpOnSmallDisk {
    pub(crate) fn start(disk: &SmallDisk, fixture: &Path) -> UpOnSmallDisk {
        let (log, out) = (disk.dir.path().join("up.log"), disk.dir.path().join("up.out"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let addr = listener.local_addr().expect("address").to_string();
        drop(listener);
        let child = KilledOnDrop(
            Command::new(env!("CARGO_BIN_EXE_seed"))
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .arg("--land")
                .arg(disk.mount.join("land"))
                .args(["up", "--addr", &addr, "--round-ms", "50", "--fixture"])
                .arg(fixture)
                .env_remove("SEED_LAND")
                .env("RUST_LOG", "info")
                .stdout(std::fs::File::create(&out).expect("output file"))
                .stderr(std::fs::File::create(&log).expect("log file"))
                .spawn()
                .expect("start seed up"),
        );
        let up = UpOnSmallDisk { child, log, out };
        up.wait_for("the land is up", &|| up.printed().contains("seed is up"));
        up
    }

    pub(crate) fn logged(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub(crate) fn printed(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// Waits until `done` holds, or fails naming `what` with the log.
    pub(crate) fn wait_for(&self, what: &str, done: &dyn Fn() -> bool) {
        let started = std::time::Instant::now();
        while !done() {
            assert!(started.elapsed().as_millis() < u128::from(UP_FULL_DISK_WAIT_MS), "{what}: {}", self.logged());
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// Fills the disk at `mount` to its last byte with a file, returned to be removed.
pub(crate) fn fill_to_the_last_byte(mount: &Path) -> std::path::PathBuf {
    let filler = mount.join("filler");
    let mut file = std::fs::File::create(&filler).expect("filler");
    while std::io::Write::write_all(&mut file, &[0u8; 4096]).is_ok() {}
    let _ = std::io::Write::write_all(&mut file, &[0u8; 1]);
    filler
}

/// The size of the disks the full-disk tests fill.
const SMALL_DISK_MEGABYTES: u64 = 16;

pub(crate) struct SmallDisk {
    pub(crate) mount: std::path::PathBuf,
    /// The folder holding the mount point (and anything else a test keeps off the small disk).
    pub(crate) dir: tempfile::TempDir,
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).output();
    }
}

#[test]
fn a_full_disk_is_one_error_and_the_land_goes_on_when_space_returns() {
    let Some(disk) = small_tmpfs() else { return };
    let mount = &disk.mount;
    let land = mount.join("land");
    assert!(common::seed(&land, &["plant"]).status.success());
    // Leave about 300 KB free.
    let filler = mount.join("filler");
    let statistics = Command::new("df").args(["-k", "--output=avail"]).arg(mount).output().expect("df");
    let available_kb: u64 =
        stdout(&statistics).lines().nth(1).and_then(|line| line.trim().parse().ok()).expect("available space");
    let filler_bytes = (available_kb.saturating_sub(300) * 1024) as usize;
    std::fs::write(&filler, vec![0u8; filler_bytes]).expect("fill the disk");

    let full = common::seed(&land, &["stress", "--beings", "2", "--facts", "3000"]);
    let error = stderr(&full);
    assert_eq!(full.status.code(), Some(1), "{error}");
    assert_eq!(error.lines().count(), 1, "one error line: {error}");
    assert!(error.contains("No space left on device"), "{error}");
    assert!(!error.contains("restore") && !error.contains("re-import"), "{error}");
    let acknowledged = stdout(&full).lines().filter(|line| line.starts_with("ack ")).count();
    assert!(acknowledged > 0, "some facts were acknowledged before the disk filled");

    // Space returns: every acknowledged fact is there and the land goes on.
    std::fs::remove_file(&filler).expect("free the space");
    let verify = common::seed(&land, &["verify", "--no-checkpoint", "--json"]);
    assert!(verify.status.success(), "{}", stdout(&verify));
    let report: serde_json::Value = serde_json::from_str(&stdout(&verify)).expect("json");
    assert!(report["facts"].as_u64().expect("facts") as usize >= acknowledged + 5, "{report}");
    let more = common::seed(&land, &["stress", "--beings", "2", "--facts", "100"]);
    assert!(more.status.success(), "{}", stderr(&more));
    assert!(common::seed(&land, &["verify", "--no-checkpoint"]).status.success());
}

/// How long `seed up` may take to meet the full disk, to go on once space
/// returns, and to stop once interrupted.
const UP_FULL_DISK_WAIT_MS: u64 = 30_000;

/// `seed up` on a disk that fills: the failing write is logged once (not at
/// every round), no message suggests discarding the land, rounds go on by
/// themselves when space returns, ctrl-c stops it at once, and the land
/// verifies clean.
#[test]
fn seed_up_on_a_full_disk_logs_it_once_goes_on_when_space_returns_and_stops_on_ctrl_c() {
    let Some(disk) = small_tmpfs() else { return };
    let (mount, dir) = (&disk.mount, disk.dir.path());
    let land = mount.join("land");
    // This test is the store's behaviour on a full disk: the health
    // breaker's disk floor (64 MiB, over this whole disk) is turned off, or
    // the land would trip before any write could fail (tests/health.rs).
    let fixture = common::court_with_config(dir, "health_disk_free_bytes_min = 0");
    let mut up = UpOnSmallDisk::start(&disk, &fixture);
    let filler = fill_to_the_last_byte(mount);
    up.wait_for("a round fails", &|| up.logged().contains("No space left on device"));
    std::thread::sleep(std::time::Duration::from_millis(1_000));
    let failures = up.logged().lines().filter(|line| line.contains("a round failed")).count();
    assert_eq!(failures, 1, "one line for a lasting failure: {}", up.logged());
    assert!(!up.logged().contains("restore") && !up.logged().contains("re-import"), "{}", up.logged());
    std::fs::remove_file(&filler).expect("free the space");
    up.wait_for("rounds go on", &|| up.logged().contains("rounds go on again"));
    let interrupted = std::time::Instant::now();
    // SAFETY: kill only sends a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(up.child.0.id() as libc::pid_t, libc::SIGINT) }, 0);
    let status = loop {
        if let Some(status) = up.child.0.try_wait().expect("wait for seed up") {
            break status;
        }
        assert!(interrupted.elapsed().as_millis() < u128::from(UP_FULL_DISK_WAIT_MS), "ctrl-c: {}", up.logged());
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}: {}", up.logged());
    assert!(up.printed().contains("seed is down: the land is closed"), "{}", up.printed());
    let verify = common::seed(&land, &["verify", "--no-checkpoint"]);
    assert!(verify.status.success(), "{}", stdout(&verify));
}

/// A frame at the end of the log that no reel can claim (its envelope is not
/// a fact) is named by `seed verify` by its land seq, its file and its byte,
/// as a problem of the land log (no index rebuild mends it).
#[test]
fn a_frame_no_reel_can_claim_is_named_by_verify() {
    let dir = tempfile::tempdir().expect("folder");
    let land = dir.path().join("land");
    assert!(common::seed(&land, &["plant"]).status.success());
    assert!(common::seed(&land, &["stress", "--beings", "2", "--facts", "5"]).status.success());
    let facts = {
        let opened = seed::land::Land::open(&land).expect("open");
        let facts = opened.store().land_len().expect("length");
        opened.close().expect("close");
        facts
    };
    let segments = land.join("log").join(seed::store::LOG_STORE_SEGMENTS_DIR);
    let mut log = seed::store::segments::SegmentLog::open_for_appending(&segments, 1 << 20).expect("the segment log");
    log.append_group([&b"not a fact"[..]]).expect("appended");
    drop(log);
    let verify = common::seed(&land, &["verify", "--no-checkpoint"]);
    assert_eq!(verify.status.code(), Some(1), "{}", stdout(&verify));
    let named = format!("land log: land seq {facts}: {}", segments.display());
    assert!(stdout(&verify).contains(&named), "{}", stdout(&verify));
    assert!(stdout(&verify).contains("holds no fact a reel can claim"), "{}", stdout(&verify));
    assert!(!stdout(&verify).contains("reindex"), "{}", stdout(&verify));
    // A land that cannot fold its world says where and what to run, and starts nothing.
    let up = common::seed(&land, &["up", "--addr", "127.0.0.1:0"]);
    assert_eq!(up.status.code(), Some(1), "{}", stderr(&up));
    let hole = format!("the land log has no fact a reel claims at land seq {facts}");
    assert!(stderr(&up).contains(&hole) && stderr(&up).contains("seed verify"), "{}", stderr(&up));
}
