//! Which definitions a replayed moment runs with: those the land recorded
//! as in force at the moment's cursor (`World::definitions`), loaded from
//! their facts once per set; or the files given to the replay (a fixture on
//! disk), where the land recorded none by then, or when asked to replay
//! against today's files (a what-if: `seed replay --fixture`, the corpus
//! check). When the files are used where the land recorded others, a
//! divergence names the files that differ (docs/definitions.md).

use super::ReplayError;
use crate::definitions::{DefinitionChange, DefinitionFiles, DefinitionSet};
use crate::moment::Substrate;
use crate::store::Store;
use crate::world::World;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Which of the two a replay prefers where both exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preferred {
    /// The land's recorded definitions; the files only before any.
    Recorded,
    /// The files given, everywhere.
    Files,
}

/// The definitions of a replay (see the module documentation).
pub struct ReplayDefinitions<'a> {
    store: &'a dyn Store,
    files: Option<&'a Substrate>,
    /// What loading `files` read, to name how it differs from a recorded set.
    files_read: Option<&'a DefinitionFiles>,
    preferred: Preferred,
    /// Recorded sets loaded so far, by the land seq of the fact recording
    /// them. Each behind a pointer: every replayed act asks for its set, and
    /// a copy of the set's map of files for each (a land-wide replay's fold
    /// did, 6% of its samples) is work for nothing.
    loaded: Mutex<BTreeMap<u64, Arc<LoadedSet>>>,
}

/// A recorded set of definitions and the substrate loaded from it.
struct LoadedSet {
    set: DefinitionSet,
    substrate: Arc<Substrate>,
}

/// The substrate a moment runs with: the replay's files, or a recorded set's.
pub enum SubstrateAt<'a> {
    Files(&'a Substrate),
    Recorded(Arc<Substrate>),
}

impl std::ops::Deref for SubstrateAt<'_> {
    type Target = Substrate;

    fn deref(&self) -> &Substrate {
        match self {
            SubstrateAt::Files(substrate) => substrate,
            SubstrateAt::Recorded(substrate) => substrate,
        }
    }
}

/// The files a replay used where the land recorded others, and how they differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilesChanged {
    /// The land seq of the fact that recorded the set in force.
    pub recorded_at: u64,
    pub changes: Vec<DefinitionChange>,
}

impl<'a> ReplayDefinitions<'a> {
    /// Today's files everywhere (`read`: what loading them read, so a
    /// divergence can name the files that differ from the recorded ones).
    pub fn files(
        store: &'a dyn Store,
        substrate: &'a Substrate,
        read: Option<&'a DefinitionFiles>,
    ) -> ReplayDefinitions<'a> {
        ReplayDefinitions {
            store,
            files: Some(substrate),
            files_read: read,
            preferred: Preferred::Files,
            loaded: Mutex::new(BTreeMap::new()),
        }
    }

    /// The land's recorded definitions, with `fallback` for moments sealed
    /// before the land recorded any (older lands).
    pub fn recorded(store: &'a dyn Store, fallback: Option<&'a Substrate>) -> ReplayDefinitions<'a> {
        ReplayDefinitions {
            store,
            files: fallback,
            files_read: None,
            preferred: Preferred::Recorded,
            loaded: Mutex::new(BTreeMap::new()),
        }
    }

    /// The definitions a moment opened at `world`'s cursor runs with.
    pub fn at(&self, world: &World) -> Result<SubstrateAt<'a>, ReplayError> {
        match (self.preferred, world.definitions.in_force, self.files) {
            (Preferred::Files, _, Some(files)) | (_, None, Some(files)) => Ok(SubstrateAt::Files(files)),
            (_, Some(in_force), _) => Ok(SubstrateAt::Recorded(self.load(world, in_force.land_seq)?.substrate.clone())),
            (_, None, None) => Err(ReplayError::NoDefinitions { land_seq: world.cursor }),
        }
    }

    /// How the files used at `world`'s cursor differ from the set the land
    /// recorded there (`None`: the recorded set was used, the land recorded
    /// none, or nothing differs).
    pub fn files_changed_at(&self, world: &World) -> Option<FilesChanged> {
        let in_force = world.definitions.in_force?;
        let read = self.files_read?;
        if !matches!(self.at(world).ok()?, SubstrateAt::Files(_)) {
            return None;
        }
        let recorded = self.load(world, in_force.land_seq).ok()?;
        let changes = recorded.set.changes_to(&read.set);
        (!changes.is_empty()).then_some(FilesChanged { recorded_at: in_force.land_seq, changes })
    }

    fn load(&self, world: &World, land_seq: u64) -> Result<Arc<LoadedSet>, ReplayError> {
        if let Some(loaded) = self.loaded.lock().unwrap_or_else(|p| p.into_inner()).get(&land_seq) {
            return Ok(loaded.clone());
        }
        let failed =
            |error: crate::engine::EngineError| ReplayError::Definitions { land_seq, reason: error.to_string() };
        let files = crate::engine::definitions::recorded_files(self.store, world).map_err(failed)?;
        let files = files.ok_or(ReplayError::NoDefinitions { land_seq: world.cursor })?;
        let substrate = Arc::new(crate::engine::definitions::substrate_from_recorded(&files).map_err(failed)?);
        let loaded = Arc::new(LoadedSet { set: files.set, substrate });
        self.loaded.lock().unwrap_or_else(|p| p.into_inner()).insert(land_seq, loaded.clone());
        Ok(loaded)
    }
}
