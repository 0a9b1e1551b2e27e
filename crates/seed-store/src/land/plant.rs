//! Planting: creating a land with its first beings.

use super::{
    open_store, Access, BeingSpec, KeySource, Land, LandError, LandMeta, StoreLocation, LAND_FORMAT_VERSION,
    LAND_META_FILE,
};
use super::{KEYS_DIR, LOG_DIR};
use crate::clock::Clock;
use crate::fact::body::{Cognition, OperatorTokenBody, KIND_OPERATOR_TOKEN};
use crate::fact::{blake3_of, BeingId};
use crate::keys::{random_bytes, KeyRing};
use crate::limits::Limits;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Address of the reality root's space.
pub const ROOT_SPACE: &str = "/";
/// Prefix of operator tokens, so a leaked one is recognisable.
const OPERATOR_TOKEN_PREFIX: &str = "seed-op-";

#[derive(Debug, Clone)]
pub struct PlantedBeing {
    pub name: String,
    pub id: BeingId,
    pub cognition: Cognition,
    pub parent: Option<String>,
}

#[derive(Debug, Clone)]
pub struct PlantReport {
    pub dir: std::path::PathBuf,
    pub beings: Vec<PlantedBeing>,
    /// Shown once; only its BLAKE3 hash is stored (on the operator's reel).
    pub operator_token: String,
}

/// Writes `land.toml` atomically: the marker that the plant finished.
/// `AlreadyPlanted` if `dir` holds a land's meta file.
fn refuse_a_planted_land(dir: &Path) -> Result<(), LandError> {
    if !dir.join(LAND_META_FILE).exists() {
        return Ok(());
    }
    let root = super::read_meta(dir).ok().and_then(|meta| BeingId::from_hex(&meta.root)).unwrap_or(BeingId::ZERO);
    Err(LandError::AlreadyPlanted { dir: dir.to_path_buf(), root })
}

/// The comment heading `land.toml`.
const LAND_META_HEADER: &str = "# A seed land, written by `seed plant`. Do not edit, except\n\
# snapshot_every_facts: facts between two world snapshots, at least (0: none).\n";

const MIRROR_META_HEADER: &str = "# A read-only mirror of another seed land, written when it was first followed\n\
# (docs/canopy.md). Do not edit.\n";

pub(crate) fn write_meta(dir: &Path, meta: &LandMeta) -> Result<(), LandError> {
    let path = dir.join(LAND_META_FILE);
    let text =
        toml::to_string(meta).map_err(|error| LandError::Meta { path: path.clone(), reason: error.to_string() })?;
    let header = match &meta.mirror_of {
        Some(_) => MIRROR_META_HEADER,
        None => LAND_META_HEADER,
    };
    let bytes = format!("{header}{text}");
    crate::atomic_file::write_atomically(&path, bytes.as_bytes(), crate::atomic_file::READABLE_FILE_MODE)
        .map_err(|source| LandError::Io { path, source })
}

impl Land {
    /// Plants a new land in `dir`: the reality root, the operator, `@birther`
    /// and `@role-manager`, and the operator's token hash. Refuses a folder
    /// that already holds a land or anything else.
    pub fn plant(dir: &Path, clock: Arc<dyn Clock>, limits: Limits) -> Result<(Land, PlantReport), LandError> {
        Land::plant_with(dir, clock, limits, KeySource::Os)
    }

    /// Plants with a given key source (`KeySource::Seeded` for simulations).
    pub fn plant_with(
        dir: &Path,
        clock: Arc<dyn Clock>,
        limits: Limits,
        key_source: KeySource,
    ) -> Result<(Land, PlantReport), LandError> {
        Land::plant_in(dir, clock, limits, key_source, &StoreLocation::Folder)
    }

    /// Plants with its facts kept at `location` (the folder's own store, or
    /// an empty PostgreSQL database), recorded in `land.toml`.
    pub fn plant_in(
        dir: &Path,
        clock: Arc<dyn Clock>,
        limits: Limits,
        key_source: KeySource,
        location: &StoreLocation,
    ) -> Result<(Land, PlantReport), LandError> {
        refuse_a_planted_land(dir)?;
        if dir.exists() {
            let mut entries =
                std::fs::read_dir(dir).map_err(|source| LandError::Io { path: dir.to_path_buf(), source })?;
            if entries.next().is_some() {
                return Err(LandError::NotEmpty { dir: dir.to_path_buf() });
            }
        }
        std::fs::create_dir_all(dir).map_err(|source| LandError::Io { path: dir.to_path_buf(), source })?;
        // Two commands may plant into one empty folder at once: both passed
        // the checks above. Only the store's lock decides between them, so
        // the folder is judged again once it is held: whoever comes second
        // finds the first one's land (or its facts) and changes nothing.
        let store = open_store(dir, &limits, location, Access::Write)?;
        refuse_a_planted_land(dir)?;
        if store.land_len()? > 0 {
            return Err(match location {
                StoreLocation::Folder => LandError::NotEmpty { dir: dir.to_path_buf() },
                StoreLocation::Postgres { .. } => LandError::StoreNotEmpty { store: location.describe() },
            });
        }
        let keys = KeyRing::open(&dir.join(KEYS_DIR))?;
        debug_assert!(*location != StoreLocation::Folder || dir.join(LOG_DIR).is_dir());
        // The land is usable before its meta file exists; the meta is written last.
        let mut land = Land {
            dir: dir.to_path_buf(),
            meta: LandMeta {
                format: LAND_FORMAT_VERSION,
                root: String::new(),
                operator: String::new(),
                snapshot_every_facts: Some(super::SNAPSHOT_EVERY_FACTS_DEFAULT),
                store: location.recorded(),
                mirror_of: None,
                mirror_being_of: None,
            },
            root: BeingId::ZERO,
            operator: BeingId::ZERO,
            store,
            keys,
            clock,
            limits,
            key_source,
            writers: Mutex::new(super::loaded_writers::LoadedWriters::default()),
        };
        let spec = |name: &str, parent: Option<BeingId>, cognition: Cognition| BeingSpec {
            name: name.to_string(),
            parent,
            cognition,
            role_flow: Vec::new(),
            default_role: name.to_string(),
            home_space: ROOT_SPACE.to_string(),
        };
        let root = land.create_being(spec("reality", None, Cognition::None))?.being;
        let operator = land.create_being(spec("operator", None, Cognition::Human))?.being;
        let birther = land.create_being(spec("birther", Some(root), Cognition::Scripted))?.being;
        let role_manager = land.create_being(spec("role-manager", Some(root), Cognition::Scripted))?.being;

        let mut secret = [0u8; 32];
        match key_source {
            KeySource::Os => random_bytes(&mut secret)?,
            KeySource::Seeded(_) => key_source.derive("operator-token", "operator", &mut secret)?,
        }
        let operator_token = seal_operator_token(&land, &operator, &secret)?;

        land.root = root;
        land.operator = operator;
        land.meta.root = root.to_hex();
        land.meta.operator = operator.to_hex();
        write_meta(dir, &land.meta)?;

        let named = |name: &str, id: BeingId, cognition: Cognition, parent: Option<&str>| PlantedBeing {
            name: name.to_string(),
            id,
            cognition,
            parent: parent.map(str::to_string),
        };
        let report = PlantReport {
            dir: dir.to_path_buf(),
            beings: vec![
                named("reality", root, Cognition::None, None),
                named("operator", operator, Cognition::Human, None),
                named("birther", birther, Cognition::Scripted, Some("reality")),
                named("role-manager", role_manager, Cognition::Scripted, Some("reality")),
            ],
            operator_token,
        };
        Ok((land, report))
    }
}

/// Seals an `operator-token` fact holding the hash of the token made from
/// `secret` on the operator's reel, and returns the token (never stored).
fn seal_operator_token(land: &Land, operator: &BeingId, secret: &[u8; 32]) -> Result<String, LandError> {
    let operator_token = format!("{OPERATOR_TOKEN_PREFIX}{}", hex::encode(secret));
    let token_body = OperatorTokenBody { token_hash: blake3_of(operator_token.as_bytes()) };
    land.seal_body(operator, KIND_OPERATOR_TOKEN, &token_body)?;
    Ok(operator_token)
}

impl Land {
    /// Issues a new operator token from the operating system's randomness
    /// (`seed token`): its hash is sealed on the operator's reel, and since
    /// the portal honours only the latest `operator-token` fact, every
    /// earlier token (a lost one, or the one a simulated land derived from
    /// its seed and never showed) stops working. Returns the token, which
    /// is shown once and stored nowhere.
    pub fn issue_operator_token(&self) -> Result<String, LandError> {
        let mut secret = [0u8; 32];
        random_bytes(&mut secret)?;
        seal_operator_token(self, &self.operator, &secret)
    }
}
