//! The verbs that only read a land (`verify`, `replay`, `reel`, `beings`,
//! `export`) open it without writing a byte, and work where the process may
//! not write: run as a user without write access (as `nobody` when the
//! tests run as root, whom permissions do not stop; otherwise on a land
//! made read-only), every byte of the land is the same afterwards.

use crate::common;

use common::{folder_snapshot, stderr, stdout};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

/// The user id of `nobody`, who owns nothing here.
const NOBODY_ID: u32 = 65534;

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}

/// Sets the mode of every folder and file under `dir` (folders get `folder_mode`).
fn set_modes(dir: &Path, folder_mode: u32, file_mode: u32) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(folder_mode)).expect("chmod folder");
    for entry in std::fs::read_dir(dir).expect("read folder") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            set_modes(&path, folder_mode, file_mode);
        } else {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(file_mode)).expect("chmod file");
        }
    }
}

/// Runs `seed --land LAND ARGUMENTS` as a process that may not write to the land.
fn seed_without_write_access(land: &Path, arguments: &[&str], as_nobody: bool) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_seed"));
    command.arg("--land").arg(land).args(arguments).env_remove("SEED_LAND").env("HOME", "/nonexistent");
    if as_nobody {
        command.uid(NOBODY_ID).gid(NOBODY_ID);
    }
    command.output().expect("run seed")
}

#[test]
fn reading_verbs_write_nothing_and_work_without_write_access() {
    let dir = tempfile::tempdir().expect("folder");
    let land = dir.path().join("land");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join("court.toml");
    let fixture = fixture.to_str().expect("utf-8 path");
    let sim = common::seed(&land, &["sim", fixture, "--ticks", "8", "--snapshot-every-facts", "40"]);
    assert!(sim.status.success(), "{}", stderr(&sim));
    let verify = common::seed(&land, &["verify"]);
    assert!(verify.status.success(), "{}", stdout(&verify));
    let out = tempfile::tempdir().expect("folder for the export");
    std::fs::set_permissions(out.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let bundle = out.path().join("ada.bundle");
    let bundle = bundle.to_str().expect("utf-8 path");

    let as_nobody = is_root();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // Everyone may read the land but nobody may write it (the key ring stays
    // its owner's alone: no reading verb needs a key).
    set_modes(&land, 0o555, 0o444);
    std::fs::set_permissions(land.join("keys"), std::fs::Permissions::from_mode(0o500)).expect("chmod");
    let before = folder_snapshot(&land);
    let verbs: [&[&str]; 8] = [
        &["verify"],
        &["verify", "--json"],
        &["replay", "@ada"],
        &["replay", "@ada", "--from", "3", "--json"],
        &["replay", "--all"],
        &["reel", "@ada"],
        &["beings", "--json"],
        &["export", "@ada", "-o", bundle],
    ];
    for arguments in verbs {
        let output = seed_without_write_access(&land, arguments, as_nobody);
        assert!(output.status.success(), "{arguments:?} without write access: {}{}", stdout(&output), stderr(&output));
        assert!(folder_snapshot(&land) == before, "{arguments:?} changed the land's bytes");
    }
    // A clean verify could not record its checkpoint, and says so.
    let verify = seed_without_write_access(&land, &["verify"], as_nobody);
    assert!(stdout(&verify).contains("checkpoint not written"), "{}", stdout(&verify));
    assert!(Path::new(bundle).is_file(), "the export was written where it may be");
    set_modes(&land, 0o755, 0o644);
    std::fs::set_permissions(land.join("keys"), std::fs::Permissions::from_mode(0o700)).expect("chmod");
}
