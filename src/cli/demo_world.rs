//! The demo world `seed up` plants when no fixture is named and the land
//! records none: the court fixture with the role folders and extensions it
//! names, built into the binary (`include_dir`), so an installed `seed` run
//! from any folder needs no checkout.
//!
//! The world is written into the land folder (`DEMO_WORLD_DIR`) and the land
//! records that copy as its fixture (`definitions.toml`), so every later
//! `seed up`, `seed replay` and `seed recover-operator` reads the same
//! definitions from the land, wherever it is run from. A land folder must be
//! empty to be planted, so planting reads a staged copy in a temporary folder
//! first; the copy in the land is written once the land exists.

use anyhow::{Context, Result};
use include_dir::{include_dir, Dir};
use std::path::{Path, PathBuf};

/// The shipped core roles (`roles/`).
static CORE_ROLES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/roles");
/// The demo worlds' own roles and scripts (`fixtures/roles/`).
static FIXTURE_ROLES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/fixtures/roles");
/// The shipped extensions (`extensions/`).
static EXTENSIONS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/extensions");
/// The court fixture: its `roles` and `extensions` name the folders above
/// by the same relative paths as in the checkout.
const COURT_FIXTURE: &str = include_str!("../../fixtures/court.toml");

/// Where in a land folder the demo world is written.
pub const DEMO_WORLD_DIR: &str = "definitions/demo-world";
/// The fixture's path within a written demo world.
const FIXTURE_IN_WORLD: &str = "fixtures/court.toml";

/// Writes the demo world under `root` (which must not hold one) and returns
/// its fixture's path.
fn write_world(root: &Path) -> Result<PathBuf> {
    let folders = [(&CORE_ROLES, "roles"), (&FIXTURE_ROLES, "fixtures/roles"), (&EXTENSIONS, "extensions")];
    for (dir, at) in folders {
        let target = root.join(at);
        std::fs::create_dir_all(&target).with_context(|| format!("creating {}", target.display()))?;
        dir.extract(&target).with_context(|| format!("writing the demo world into {}", target.display()))?;
    }
    let fixture = root.join(FIXTURE_IN_WORLD);
    std::fs::write(&fixture, COURT_FIXTURE).with_context(|| format!("writing {}", fixture.display()))?;
    Ok(fixture)
}

/// A copy of the demo world in a temporary folder, for planting (kept as
/// long as the value lives).
pub struct StagedWorld {
    _folder: tempfile::TempDir,
    pub fixture: PathBuf,
}

pub fn stage() -> Result<StagedWorld> {
    let folder = tempfile::Builder::new().prefix("seed-demo-world-").tempdir().context("a temporary folder")?;
    let fixture = write_world(folder.path())?;
    Ok(StagedWorld { _folder: folder, fixture })
}

/// The demo world's fixture in `land_dir`, written there first if the land
/// does not hold it yet.
pub fn in_land(land_dir: &Path) -> Result<PathBuf> {
    let root = land_dir.join(DEMO_WORLD_DIR);
    let fixture = root.join(FIXTURE_IN_WORLD);
    if fixture.is_file() {
        return Ok(fixture);
    }
    write_world(&root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_demo_world_is_the_checkouts_court_with_its_roles_and_extensions() {
        let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
        let staged = stage().expect("staged");
        let root = staged.fixture.parent().and_then(Path::parent).expect("the world's root");
        for (dir, at) in [("roles", "roles"), ("fixtures/roles", "fixtures/roles"), ("extensions", "extensions")] {
            let mut shipped = files_under(&checkout.join(dir));
            let mut written = files_under(&root.join(at));
            shipped.sort();
            written.sort();
            assert_eq!(written, shipped, "{dir}");
        }
        assert_eq!(
            std::fs::read(&staged.fixture).expect("written"),
            std::fs::read(checkout.join("fixtures/court.toml")).expect("shipped")
        );
    }

    /// Every file under `dir`: its path within `dir` and its bytes.
    fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut found = Vec::new();
        let mut pending = vec![dir.to_path_buf()];
        while let Some(folder) = pending.pop() {
            for entry in std::fs::read_dir(&folder).expect("a folder") {
                let path = entry.expect("an entry").path();
                if path.is_dir() {
                    pending.push(path);
                } else {
                    let bytes = std::fs::read(&path).expect("a file");
                    found.push((path.strip_prefix(dir).expect("inside").to_path_buf(), bytes));
                }
            }
        }
        found
    }
}
