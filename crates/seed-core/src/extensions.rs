//! Extensions: folders with a manifest (`extension.toml`) that ship roles,
//! DO operations in Rhai, space and matter types and declared signals.
//!
//! The loader discovers every `*/extension.toml` under a folder, validates
//! each manifest, resolves `needs` (semver ranges), orders the extensions so
//! that each comes after what it needs, and skips — with a reason — any that
//! is disabled, invalid, needs something missing or disabled, or sits on a
//! cycle. Disabling an extension deletes nothing: facts its operations
//! produced stay on their reels, and enabling it again finds them.

use crate::moment::hooks::{HookPoint, HookSpec};
use crate::moment::ops::{ArgSchema, ArgType, OpHandler, OpRegistry, OpSpec};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const MANIFEST_FILE: &str = "extension.toml";
/// Largest manifest read, in bytes.
pub const MANIFEST_BYTES_MAX: u64 = 64 * 1024;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpManifest {
    name: String,
    script: String,
    /// Argument name → type (`string`, `int`, `bool`, `any`; a trailing `?` = optional).
    #[serde(default)]
    args: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct HookManifest {
    /// `before:VERB`, `after:VERB`, or `*` for every verb.
    on: String,
    script: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeeManifest {
    name: String,
    script: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Provides {
    #[serde(default, rename = "see")]
    see_resolvers: Vec<SeeManifest>,
    #[serde(default, rename = "hook")]
    hooks: Vec<HookManifest>,
    #[serde(default)]
    roles: Option<String>,
    #[serde(default, rename = "op")]
    ops: Vec<OpManifest>,
    #[serde(default)]
    space_types: Vec<String>,
    #[serde(default)]
    matter_types: Vec<String>,
    #[serde(default)]
    signals: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    name: String,
    version: String,
    license: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    needs: BTreeMap<String, String>,
    #[serde(default)]
    provides: Provides,
}

/// A validated extension.
#[derive(Debug, Clone)]
pub struct Extension {
    pub name: String,
    pub version: semver::Version,
    pub license: String,
    pub description: String,
    pub dir: PathBuf,
    pub needs: BTreeMap<String, semver::VersionReq>,
    pub roles_dir: Option<PathBuf>,
    pub ops: Vec<OpSpec>,
    pub hooks: Vec<HookSpec>,
    /// (name, Rhai source) of each see-resolver.
    pub see_resolvers: Vec<(String, Arc<str>)>,
    pub space_types: Vec<String>,
    pub matter_types: Vec<String>,
    pub signals: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct LoadedExtensions {
    /// In dependency order.
    pub enabled: Vec<Extension>,
    /// (name or folder, reason), in name order.
    pub skipped: Vec<(String, String)>,
}

impl LoadedExtensions {
    pub fn role_dirs(&self) -> Vec<PathBuf> {
        self.enabled.iter().filter_map(|extension| extension.roles_dir.clone()).collect()
    }

    /// Every hook handler, in extension order, then manifest order.
    pub fn hooks(&self) -> Vec<HookSpec> {
        self.enabled.iter().flat_map(|extension| extension.hooks.iter().cloned()).collect()
    }

    pub fn register_see_resolvers(&self, registry: &mut crate::moment::see::SeeResolvers) {
        for extension in &self.enabled {
            for (name, source) in &extension.see_resolvers {
                registry.register(name, crate::moment::see::SeeResolver::Script(source.clone()));
            }
        }
    }

    pub fn register_ops(&self, registry: &mut OpRegistry) {
        for extension in &self.enabled {
            for op in &extension.ops {
                registry.register(op.clone());
            }
        }
    }
}

/// Why a manifest was refused (the extension is skipped with it).
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{0}")]
    Read(std::io::Error),
    #[error("manifest is {size} bytes, over {MANIFEST_BYTES_MAX}")]
    TooLarge { size: u64 },
    /// A field of the manifest (or a file it names) that is wrong.
    #[error("{field}: {reason}")]
    Field { field: String, reason: String },
}

fn field_error(field: impl Into<String>, reason: impl ToString) -> ManifestError {
    ManifestError::Field { field: field.into(), reason: reason.to_string() }
}

/// Reads a Rhai file a manifest names (relative to the extension's folder),
/// refusing one over the script size limit at load rather than at first use.
fn read_script(dir: &Path, at: &str, file: &str) -> Result<Arc<str>, ManifestError> {
    let field = || format!("{at}.script {file}");
    let source = std::fs::read_to_string(dir.join(file)).map_err(|error| field_error(field(), error))?;
    if source.len() > crate::script::SCRIPT_SOURCE_BYTES_MAX {
        return Err(field_error(
            field(),
            format!("{} bytes, over the limit of {}", source.len(), crate::script::SCRIPT_SOURCE_BYTES_MAX),
        ));
    }
    Ok(Arc::from(source.as_str()))
}

fn parse_manifest(dir: &Path) -> Result<Extension, ManifestError> {
    let path = dir.join(MANIFEST_FILE);
    let size = std::fs::metadata(&path).map_err(ManifestError::Read)?.len();
    if size > MANIFEST_BYTES_MAX {
        return Err(ManifestError::TooLarge { size });
    }
    let text = std::fs::read_to_string(&path).map_err(ManifestError::Read)?;
    let manifest: Manifest = serde_path_to_error::deserialize(toml::Deserializer::new(&text))
        .map_err(|error| field_error(error.path().to_string(), error.inner().message()))?;
    if let Some(reason) = crate::names::kebab_name_problem(&manifest.name) {
        return Err(field_error(format!("name {:?}", manifest.name), reason));
    }
    let version = semver::Version::parse(&manifest.version)
        .map_err(|error| field_error(format!("version {:?}", manifest.version), error))?;
    if manifest.license.trim().is_empty() {
        return Err(field_error("license", "must name a license"));
    }
    let mut needs = BTreeMap::new();
    for (name, range) in &manifest.needs {
        let requirement =
            semver::VersionReq::parse(range).map_err(|error| field_error(format!("needs.{name} {range:?}"), error))?;
        needs.insert(name.clone(), requirement);
    }
    let mut ops = Vec::new();
    for (index, op) in manifest.provides.ops.iter().enumerate() {
        let at = format!("provides.op[{index}]");
        if let Some(reason) = crate::names::kebab_name_problem(&op.name) {
            return Err(field_error(format!("{at}.name {:?}", op.name), reason));
        }
        let source = read_script(dir, &at, &op.script)?;
        let mut schema = ArgSchema::default();
        for (arg, kind) in &op.args {
            let (kind, required) = match kind.strip_suffix('?') {
                Some(kind) => (kind, false),
                None => (kind.as_str(), true),
            };
            let kind = ArgType::parse(kind).ok_or_else(|| {
                field_error(format!("{at}.args.{arg}"), format!("unknown type {kind:?} (string, int, bool, any)"))
            })?;
            schema = schema.field(arg, kind, required);
        }
        ops.push(OpSpec {
            name: op.name.clone(),
            schema,
            handler: OpHandler::Script(source),
            origin: manifest.name.clone(),
        });
    }
    let mut hooks = Vec::new();
    for (index, hook) in manifest.provides.hooks.iter().enumerate() {
        let at = format!("provides.hook[{index}]");
        let point = HookPoint::parse(&hook.on).map_err(|error| field_error(format!("{at}.on"), error))?;
        let source = read_script(dir, &at, &hook.script)?;
        hooks.push(HookSpec { name: format!("{}/{index}", manifest.name), point, source });
    }
    let mut see_resolvers = Vec::new();
    for (index, see) in manifest.provides.see_resolvers.iter().enumerate() {
        let at = format!("provides.see[{index}]");
        if let Some(reason) = crate::names::kebab_name_problem(&see.name) {
            return Err(field_error(format!("{at}.name {:?}", see.name), reason));
        }
        see_resolvers.push((see.name.clone(), read_script(dir, &at, &see.script)?));
    }
    let roles_dir = match &manifest.provides.roles {
        Some(folder) => {
            let path = dir.join(folder);
            if !path.is_dir() {
                return Err(field_error("provides.roles", format!("{} is not a folder", path.display())));
            }
            Some(path)
        }
        None => None,
    };
    Ok(Extension {
        name: manifest.name,
        version,
        license: manifest.license,
        description: manifest.description,
        dir: dir.to_path_buf(),
        needs,
        roles_dir,
        ops,
        hooks,
        see_resolvers,
        space_types: manifest.provides.space_types,
        matter_types: manifest.provides.matter_types,
        signals: manifest.provides.signals,
    })
}

/// Discovers, validates, resolves and orders the extensions under `root`.
pub fn load(root: &Path, disabled: &[String]) -> LoadedExtensions {
    let mut loaded = LoadedExtensions::default();
    let mut found: BTreeMap<String, Extension> = BTreeMap::new();
    let mut folders: Vec<PathBuf> = match std::fs::read_dir(root) {
        Ok(entries) => entries
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.path())
            .filter(|path| path.join(MANIFEST_FILE).is_file())
            .collect(),
        Err(error) => {
            loaded.skipped.push((root.display().to_string(), format!("cannot read the extensions folder: {error}")));
            return loaded;
        }
    };
    folders.sort();
    for folder in folders {
        match parse_manifest(&folder) {
            Ok(extension) => {
                if found.contains_key(&extension.name) {
                    loaded.skipped.push((
                        extension.name.clone(),
                        format!("a second extension with this name in {}", folder.display()),
                    ));
                } else {
                    found.insert(extension.name.clone(), extension);
                }
            }
            Err(reason) => loaded.skipped.push((folder.display().to_string(), format!("invalid manifest: {reason}"))),
        }
    }
    // Drop the disabled, then (repeatedly) whatever needs something absent.
    let mut skipped: BTreeMap<String, String> = BTreeMap::new();
    for name in disabled {
        if found.remove(name).is_some() {
            skipped.insert(name.clone(), "disabled".into());
        }
    }
    loop {
        let mut dropped = None;
        for (name, extension) in &found {
            for (need, requirement) in &extension.needs {
                let problem = match found.get(need) {
                    None if skipped.contains_key(need) => {
                        Some(format!("needs {need} {requirement}, which is skipped ({})", skipped[need]))
                    }
                    None => Some(format!("needs {need} {requirement}, which is not installed")),
                    Some(other) if !requirement.matches(&other.version) => {
                        Some(format!("needs {need} {requirement}, but {need} is {}", other.version))
                    }
                    Some(_) => None,
                };
                if let Some(reason) = problem {
                    dropped = Some((name.clone(), reason));
                    break;
                }
            }
            if dropped.is_some() {
                break;
            }
        }
        match dropped {
            Some((name, reason)) => {
                found.remove(&name);
                skipped.insert(name, reason);
            }
            None => break,
        }
    }
    // Topological order (Kahn), ties by name; whatever remains is on a cycle.
    let mut placed: BTreeSet<String> = BTreeSet::new();
    loop {
        let ready: Option<String> = found
            .iter()
            .find(|(name, extension)| {
                !placed.contains(*name) && extension.needs.keys().all(|need| placed.contains(need))
            })
            .map(|(name, _)| name.clone());
        match ready {
            Some(name) => {
                placed.insert(name.clone());
                if let Some(extension) = found.get(&name) {
                    loaded.enabled.push(extension.clone());
                }
            }
            None => break,
        }
    }
    for name in found.keys().filter(|name| !placed.contains(*name)) {
        skipped.insert(name.clone(), "its needs form a cycle".into());
    }
    loaded.skipped.extend(skipped);
    loaded.skipped.sort();
    loaded
}
