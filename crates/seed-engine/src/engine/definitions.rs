//! The code a moment ran, kept on the land (docs/definitions.md): a world
//! loaded from files is checked while its reads are recorded
//! ([`check_world_recording`]); when the files differ from the set the land
//! has in force, the land seals the texts it does not hold yet and then the
//! new set, as `world` facts on the root reel, before any moment runs with
//! them ([`seal_if_changed`]). Replay reads a set back
//! ([`recorded_files`]) and loads a world from it without the disk
//! ([`substrate_from_recorded`]).

use super::fixture::Fixture;
use super::world_check::{check_world, substrate_for, CheckedWorld};
use super::{read_land_log, EngineError};
use crate::definitions::{DefinitionEntry, DefinitionFiles};
use crate::land::Land;
use crate::moment::Substrate;
use crate::store::Store;
use crate::world::body::{Effect, WorldBody, KIND_WORLD};
use crate::world::World;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Room left in a definition fact's body for everything but the texts, in
/// bytes: a fact of texts holds at most `fact_body_bytes_max` less this.
pub const DEFINITION_FACT_OVERHEAD_BYTES: usize = 4096;

/// Checks `fixture`'s world (as [`check_world`]) and records every
/// definition file it read: the fixture's own text, the role files, the
/// extensions' manifests and scripts, the being and panel scripts.
pub fn check_world_recording(
    fixture: &Fixture,
    extra_role_dirs: &[PathBuf],
) -> Result<(CheckedWorld, DefinitionFiles), EngineError> {
    let base = fixture.dir.as_path();
    let (checked, mut files) = crate::definitions::recording(base, || check_world(fixture, extra_role_dirs));
    let name =
        Path::new(&fixture.file).file_name().map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    files.add_file(&name, &fixture.text);
    files.set.fixture = name;
    files.set.role_dirs = extra_role_dirs.iter().map(|dir| dir.to_string_lossy().into_owned()).collect();
    Ok((checked?, files))
}

/// Seals `files` as the land's definitions in force, unless they are the
/// set in force already: first the texts the land does not hold, packed
/// into facts under the body limit, then the set. `world` is folded over
/// what was sealed. Returns whether anything was.
pub fn seal_if_changed(land: &Land, world: &mut World, files: &DefinitionFiles) -> Result<bool, EngineError> {
    let digest = files.set.digest();
    if world.definitions.in_force.map(|in_force| in_force.digest) == Some(digest) {
        return Ok(false);
    }
    let room = check_fits(files, land.limits().fact_body_bytes_max)?;
    let mut batches: Vec<Vec<Effect>> = Vec::new();
    let mut batch_bytes = 0usize;
    for (digest, text) in &files.texts {
        if world.definitions.texts.contains_key(digest) {
            continue;
        }
        if batches.is_empty() || batch_bytes + text.len() > room {
            batches.push(Vec::new());
            batch_bytes = 0;
        }
        batch_bytes += text.len();
        batches
            .last_mut()
            .expect("a batch was just pushed")
            .push(Effect::DefinitionText { digest: *digest, text: text.clone() });
    }
    batches.push(vec![Effect::Definitions { set: files.set.clone() }]);
    for effects in batches {
        super::seal_world(land, effects)?;
    }
    super::fold_to_end(land.store(), world)?;
    Ok(true)
}

/// Refuses `files` if a text does not fit in one definition fact under
/// `fact_body_bytes_max`, naming the file; else the room a fact has for
/// texts. Checked before a land is planted, so a refused world plants nothing.
pub fn check_fits(files: &DefinitionFiles, fact_body_bytes_max: usize) -> Result<usize, EngineError> {
    let room = fact_body_bytes_max.saturating_sub(DEFINITION_FACT_OVERHEAD_BYTES);
    for (path, entry) in &files.set.entries {
        let DefinitionEntry::File { digest } = entry else { continue };
        let bytes = files.texts.get(digest).map_or(0, String::len);
        if bytes > room {
            return Err(EngineError::DefinitionTooLarge { path: path.clone(), bytes, max: room });
        }
    }
    Ok(room)
}

/// The definition set in force in `world` with its texts, read from the
/// facts that recorded them (`None`: the land recorded none by then).
pub fn recorded_files(store: &dyn Store, world: &World) -> Result<Option<DefinitionFiles>, EngineError> {
    let Some(in_force) = world.definitions.in_force else { return Ok(None) };
    let unreadable = |land_seq: u64, reason: String| EngineError::DefinitionsUnreadable { land_seq, reason };
    let set = effects_at(store, in_force.land_seq)?
        .into_iter()
        .find_map(|effect| match effect {
            Effect::Definitions { set } => Some(set),
            _ => None,
        })
        .ok_or_else(|| unreadable(in_force.land_seq, "the fact holds no definition set".into()))?;
    let mut texts = BTreeMap::new();
    let mut read: BTreeMap<u64, Vec<Effect>> = BTreeMap::new();
    for digest in set.text_digests() {
        let land_seq = *world
            .definitions
            .texts
            .get(&digest)
            .ok_or_else(|| unreadable(in_force.land_seq, format!("no fact keeps the text {}", digest.short())))?;
        let effects = match read.entry(land_seq) {
            std::collections::btree_map::Entry::Occupied(read) => read.into_mut(),
            std::collections::btree_map::Entry::Vacant(unread) => unread.insert(effects_at(store, land_seq)?),
        };
        let text = effects.iter().find_map(|effect| match effect {
            Effect::DefinitionText { digest: kept, text } if *kept == digest => Some(text.clone()),
            _ => None,
        });
        let text = text.ok_or_else(|| unreadable(land_seq, format!("the fact does not keep {}", digest.short())))?;
        if crate::fact::blake3_of(text.as_bytes()) != digest {
            return Err(unreadable(land_seq, format!("the text kept as {} has another digest", digest.short())));
        }
        texts.insert(digest, text);
    }
    Ok(Some(DefinitionFiles { set, texts }))
}

/// The effects of the `world` fact at `land_seq`.
fn effects_at(store: &dyn Store, land_seq: u64) -> Result<Vec<Effect>, EngineError> {
    let read = read_land_log(store, land_seq, land_seq + 1)?;
    let Some((_, fact)) = read.into_iter().next() else {
        return Err(EngineError::LandLogHole { land_seq });
    };
    if fact.kind() != KIND_WORLD {
        return Err(EngineError::DefinitionsUnreadable { land_seq, reason: "the fact is not a world fact".into() });
    }
    fact.body_as::<WorldBody>()
        .map(|body| body.effects)
        .map_err(|error| EngineError::DefinitionsUnreadable { land_seq, reason: error.to_string() })
}

/// The definition set in force just before `land_seq`, with its texts
/// (`None`: the land had recorded none by then): what a what-if fork
/// plants its sandboxes from, so they run the moments' own definitions
/// whatever the files on disk say now.
pub fn recorded_files_before(land: &Land, land_seq: u64) -> Result<Option<DefinitionFiles>, EngineError> {
    let world = super::world_before(land, land_seq)?;
    recorded_files(land.store(), &world)
}

/// What moments consult, loaded from a recorded set alone: the fixture and
/// every file its world reads are served from `files`, the disk untouched.
pub fn substrate_from_recorded(files: &DefinitionFiles) -> Result<Substrate, EngineError> {
    crate::definitions::serving(files, || {
        let fixture = Fixture::load(&files.fixture_path())?;
        let role_dirs: Vec<PathBuf> = files.set.role_dirs.iter().map(PathBuf::from).collect();
        Ok(substrate_for(&fixture, &role_dirs)?.0)
    })
}
