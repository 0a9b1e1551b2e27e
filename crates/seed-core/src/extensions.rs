//! Extensions: folders with a manifest (`extension.toml`) that ship roles,
//! DO operations in Rhai, space and matter types and declared signals.
//!
//! The loader discovers every `*/extension.toml` under a folder, validates
//! each manifest, resolves `needs` (semver ranges), orders the extensions so
//! that each comes after what it needs, and skips — with a reason — any that
//! is disabled, invalid, needs something missing or disabled, or sits on a
//! cycle. Disabling an extension deletes nothing: facts its operations
//! produced stay on their reels, and enabling it again finds them.

use crate::authoring::{deserialize_toml_pruning, Problem, Severity, TomlSource};
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
struct CascadeManifest {
    /// Rhai: reads `signal` and `here`, returns the spaces to deliver to.
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
    /// Cascade handlers (`crate::cascade`).
    #[serde(default)]
    cascade: Vec<CascadeManifest>,
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
    /// MCP servers whose tools become DO operations (`crate::tools`).
    #[serde(default)]
    mcp: Vec<crate::tools::McpServerManifest>,
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
    pub cascade_handlers: Vec<crate::cascade::CascadeHandler>,
    /// (name, Rhai source) of each see-resolver.
    pub see_resolvers: Vec<(String, Arc<str>)>,
    pub space_types: Vec<String>,
    pub matter_types: Vec<String>,
    pub signals: Vec<String>,
    /// MCP servers it declares (their tools are among `ops`).
    pub mcp_servers: Vec<crate::tools::McpServerSpec>,
}

#[derive(Debug, Clone, Default)]
pub struct LoadedExtensions {
    /// In dependency order.
    pub enabled: Vec<Extension>,
    /// (name or folder, reason), in name order.
    pub skipped: Vec<(String, String)>,
    /// What is wrong with each skipped extension (its manifest, its
    /// scripts, its needs): the world check refuses to load a world while
    /// an error remains; needing a disabled extension is a warning.
    pub problems: Vec<Problem>,
}

impl LoadedExtensions {
    pub fn role_dirs(&self) -> Vec<PathBuf> {
        self.enabled.iter().filter_map(|extension| extension.roles_dir.clone()).collect()
    }

    /// Every hook handler, in extension order, then manifest order.
    pub fn hooks(&self) -> Vec<HookSpec> {
        self.enabled.iter().flat_map(|extension| extension.hooks.iter().cloned()).collect()
    }

    /// Every cascade handler, in extension order, then manifest order.
    pub fn cascade_handlers(&self) -> Vec<crate::cascade::CascadeHandler> {
        self.enabled.iter().flat_map(|extension| extension.cascade_handlers.iter().cloned()).collect()
    }

    pub fn register_see_resolvers(&self, registry: &mut crate::moment::see::SeeResolvers) {
        for extension in &self.enabled {
            for (name, source) in &extension.see_resolvers {
                registry.register_from(&extension.name, name, crate::moment::see::SeeResolver::Script(source.clone()));
            }
        }
    }

    /// Every MCP server the enabled extensions declare, in extension order.
    pub fn mcp_servers(&self) -> Vec<crate::tools::McpServerSpec> {
        self.enabled.iter().flat_map(|extension| extension.mcp_servers.iter().cloned()).collect()
    }

    pub fn register_ops(&self, registry: &mut OpRegistry) {
        for extension in &self.enabled {
            for op in &extension.ops {
                registry.register(op.clone());
            }
        }
    }
}

/// What reading one manifest found wrong, each placed in its file.
struct ManifestReading {
    file: String,
    source: Option<TomlSource>,
    problems: Vec<Problem>,
}

impl ManifestReading {
    fn fail(&mut self, at: &str, reason: impl ToString) {
        let position = self.source.as_ref().and_then(|source| source.position_of(at));
        self.problems.push(Problem::error(self.file.clone(), at, reason.to_string()).at_position(position));
    }

    /// Reads a Rhai file the manifest names (relative to the extension's
    /// folder) and compiles it, so a script too large or not compiling is
    /// refused at load rather than at first use.
    fn script(&mut self, dir: &Path, at: &str, file: &str) -> Option<Arc<str>> {
        let path = dir.join(file);
        let source = match crate::definitions::read_to_string(&path) {
            Ok(source) => source,
            Err(error) => {
                self.fail(&format!("{at}.script"), format!("{file}: {error}"));
                return None;
            }
        };
        if let Err(error) = crate::script::check_syntax(&source) {
            self.problems.push(crate::authoring::script_problem(&path.display().to_string(), &error));
            return None;
        }
        Some(Arc::from(source.as_str()))
    }
}

impl ManifestReading {
    /// The tool schemas recorded for `spec` (`seed mcp-schemas`), if any: a
    /// file that does not read, or names another server, is refused at load.
    fn tool_schemas(
        &mut self,
        dir: &Path,
        at: &str,
        spec: &crate::tools::McpServerSpec,
    ) -> BTreeMap<String, crate::tools::McpToolSchema> {
        let path = crate::tools::schemas_file(dir, &spec.name);
        let shown = format!("{}/{}.json", crate::tools::MCP_SCHEMAS_DIR, spec.name);
        let size = match crate::definitions::file_len(&path) {
            Ok(size) => size,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return BTreeMap::new(),
            Err(error) => {
                self.fail(at, format!("{shown}: {error}"));
                return BTreeMap::new();
            }
        };
        if size > crate::tools::MCP_SCHEMAS_FILE_BYTES_MAX {
            self.fail(at, format!("{shown} is {size} bytes, over {}", crate::tools::MCP_SCHEMAS_FILE_BYTES_MAX));
            return BTreeMap::new();
        }
        let parsed = crate::definitions::read_to_string(&path)
            .map_err(|error| error.to_string())
            .and_then(|text| serde_json::from_str::<crate::tools::McpSchemasFile>(&text).map_err(|e| e.to_string()));
        match parsed {
            Ok(file) if file.server == spec.name => file.tools,
            Ok(file) => {
                self.fail(at, format!("{shown} records the server {:?}, not {:?}", file.server, spec.name));
                BTreeMap::new()
            }
            Err(error) => {
                self.fail(at, format!("{shown}: {error} (run `seed mcp-schemas` to record it again)"));
                BTreeMap::new()
            }
        }
    }
}

fn parse_manifest(dir: &Path) -> Result<Extension, Vec<Problem>> {
    let path = dir.join(MANIFEST_FILE);
    let file = path.display().to_string();
    let whole = |reason: String| vec![Problem::error(file.clone(), "", reason)];
    let size = crate::definitions::file_len(&path).map_err(|error| whole(error.to_string()))?;
    if size > MANIFEST_BYTES_MAX {
        return Err(whole(format!("the manifest is {size} bytes, over {MANIFEST_BYTES_MAX}")));
    }
    let text = crate::definitions::read_to_string(&path).map_err(|error| whole(error.to_string()))?;
    let source = TomlSource::parse(&file, &text).map_err(|syntax| vec![*syntax])?;
    // Every problem of the TOML is listed, and the rest is still checked.
    let (parsed, found) = deserialize_toml_pruning::<Manifest>(&source);
    let problems: Vec<Problem> = found.into_iter().map(|found| found.in_file(&file, &source)).collect();
    let Some(manifest) = parsed else { return Err(problems) };
    let mut reading = ManifestReading { file, source: Some(source), problems };
    if let Some(reason) = crate::names::kebab_name_problem(&manifest.name) {
        reading.fail("name", format!("{:?}: {reason}", manifest.name));
    }
    let version = semver::Version::parse(&manifest.version)
        .map_err(|error| reading.fail("version", format!("{:?}: {error}", manifest.version)))
        .ok();
    if manifest.license.trim().is_empty() {
        reading.fail("license", "must name a license");
    }
    let mut needs = BTreeMap::new();
    for (name, range) in &manifest.needs {
        match semver::VersionReq::parse(range) {
            Ok(requirement) => {
                needs.insert(name.clone(), requirement);
            }
            Err(error) => reading.fail(&format!("needs.{name}"), format!("{range:?}: {error}")),
        }
    }
    let mut ops = Vec::new();
    for (index, op) in manifest.provides.ops.iter().enumerate() {
        let at = format!("provides.op[{index}]");
        if let Some(reason) = crate::names::kebab_name_problem(&op.name) {
            reading.fail(&format!("{at}.name"), format!("{:?}: {reason}", op.name));
        }
        let source = reading.script(dir, &at, &op.script);
        let mut schema = ArgSchema::default();
        for (arg, kind) in &op.args {
            let (kind, required) = match kind.strip_suffix('?') {
                Some(kind) => (kind, false),
                None => (kind.as_str(), true),
            };
            match ArgType::parse(kind) {
                Some(kind) => schema = schema.field(arg, kind, required),
                None => {
                    reading.fail(&format!("{at}.args.{arg}"), format!("unknown type {kind:?} (string, int, bool, any)"))
                }
            }
        }
        if let Some(source) = source {
            ops.push(OpSpec {
                name: op.name.clone(),
                schema,
                handler: OpHandler::Script(source),
                origin: manifest.name.clone(),
                described: None,
            });
        }
    }
    let mut mcp_servers = Vec::new();
    if manifest.provides.mcp.len() > crate::tools::MCP_SERVERS_PER_EXTENSION_MAX {
        reading.fail("provides.mcp", format!("more than {} servers", crate::tools::MCP_SERVERS_PER_EXTENSION_MAX));
    }
    for (index, server) in manifest.provides.mcp.iter().enumerate() {
        let at = format!("provides.mcp[{index}]");
        match server.read(&manifest.name, dir) {
            Ok(spec) => {
                let recorded = reading.tool_schemas(dir, &at, &spec);
                for (tool, operation) in &spec.tools {
                    let described = recorded.get(tool).cloned();
                    let schema = match &described {
                        Some(described) => crate::tools::arg_schema_of(&described.input_schema)
                            .map_err(|reason| reading.fail(&format!("{at}.tools.{tool}"), reason))
                            .unwrap_or_else(|()| ArgSchema::open()),
                        None => ArgSchema::open(),
                    };
                    ops.push(OpSpec {
                        name: operation.clone(),
                        schema,
                        handler: OpHandler::Tool { server: spec.name.clone(), tool: tool.clone() },
                        origin: manifest.name.clone(),
                        described: described.map(Arc::new),
                    });
                }
                mcp_servers.push(spec);
            }
            Err(problems) => {
                for (field, reason) in problems {
                    reading.fail(&format!("{at}.{field}"), reason);
                }
            }
        }
    }
    let mut hooks = Vec::new();
    for (index, hook) in manifest.provides.hooks.iter().enumerate() {
        let at = format!("provides.hook[{index}]");
        let point = HookPoint::parse(&hook.on).map_err(|error| reading.fail(&format!("{at}.on"), error)).ok();
        let source = reading.script(dir, &at, &hook.script);
        if let (Some(point), Some(source)) = (point, source) {
            hooks.push(HookSpec { name: format!("{}/{index}", manifest.name), point, source });
        }
    }
    let mut cascade_handlers = Vec::new();
    for (index, handler) in manifest.provides.cascade.iter().enumerate() {
        let at = format!("provides.cascade[{index}]");
        if let Some(source) = reading.script(dir, &at, &handler.script) {
            cascade_handlers.push(crate::cascade::CascadeHandler {
                name: format!("{}/cascade-{index}", manifest.name),
                extension: manifest.name.clone(),
                source,
            });
        }
    }
    let mut see_resolvers = Vec::new();
    for (index, see) in manifest.provides.see_resolvers.iter().enumerate() {
        let at = format!("provides.see[{index}]");
        if let Some(reason) = crate::names::kebab_name_problem(&see.name) {
            reading.fail(&format!("{at}.name"), format!("{:?}: {reason}", see.name));
        }
        if let Some(source) = reading.script(dir, &at, &see.script) {
            see_resolvers.push((see.name.clone(), source));
        }
    }
    let roles_dir = match &manifest.provides.roles {
        Some(folder) => {
            let path = dir.join(folder);
            if !crate::definitions::is_dir(&path) {
                reading.fail("provides.roles", format!("{} is not a folder", path.display()));
            }
            Some(path)
        }
        None => None,
    };
    match version {
        Some(version) if reading.problems.is_empty() => Ok(Extension {
            name: manifest.name,
            version,
            license: manifest.license,
            description: manifest.description,
            dir: dir.to_path_buf(),
            needs,
            roles_dir,
            ops,
            hooks,
            cascade_handlers,
            see_resolvers,
            space_types: manifest.provides.space_types,
            matter_types: manifest.provides.matter_types,
            signals: manifest.provides.signals,
            mcp_servers,
        }),
        _ => Err(reading.problems),
    }
}

/// Discovers, validates, resolves and orders the extensions under `root`.
pub fn load(root: &Path, disabled: &[String]) -> LoadedExtensions {
    let mut loaded = LoadedExtensions::default();
    let mut found: BTreeMap<String, Extension> = BTreeMap::new();
    let mut folders: Vec<PathBuf> = match crate::definitions::read_dir(root) {
        Ok(entries) => {
            entries.into_iter().filter(|path| crate::definitions::is_file(&path.join(MANIFEST_FILE))).collect()
        }
        Err(error) => {
            let reason = format!("cannot read the extensions folder: {error}");
            loaded.problems.push(Problem::error(root.display().to_string(), "", reason.clone()));
            loaded.skipped.push((root.display().to_string(), reason));
            return loaded;
        }
    };
    folders.sort();
    for folder in folders {
        match parse_manifest(&folder) {
            Ok(extension) => {
                if let Some(first) = found.get(&extension.name) {
                    loaded.problems.push(Problem::error(
                        folder.join(MANIFEST_FILE).display().to_string(),
                        "name",
                        format!("the extension {} is already in {}", extension.name, first.dir.display()),
                    ));
                    loaded.skipped.push((
                        extension.name.clone(),
                        format!("a second extension with this name in {}", folder.display()),
                    ));
                } else {
                    found.insert(extension.name.clone(), extension);
                }
            }
            Err(problems) => {
                let first = problems.first().map(ToString::to_string).unwrap_or_default();
                let more = match problems.len() {
                    0 | 1 => String::new(),
                    count => format!(" (and {} more)", count - 1),
                };
                loaded.skipped.push((folder.display().to_string(), format!("invalid manifest: {first}{more}")));
                loaded.problems.extend(problems);
            }
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
                // Needing what the author chose to leave out is a warning;
                // needing what is not there (or not that version) an error.
                let problem = match found.get(need) {
                    None if skipped.contains_key(need) => Some((
                        Severity::Warning,
                        format!("needs {need} {requirement}, which is skipped ({})", skipped[need]),
                    )),
                    None => Some((Severity::Error, format!("needs {need} {requirement}, which is not installed"))),
                    Some(other) if !requirement.matches(&other.version) => {
                        Some((Severity::Error, format!("needs {need} {requirement}, but {need} is {}", other.version)))
                    }
                    Some(_) => None,
                };
                if let Some((severity, reason)) = problem {
                    let manifest = extension.dir.join(MANIFEST_FILE).display().to_string();
                    let mut found = Problem::error(manifest, format!("needs.{need}"), reason.clone());
                    found.severity = severity;
                    loaded.problems.push(found);
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
    for (name, extension) in found.iter().filter(|(name, _)| !placed.contains(*name)) {
        let manifest = extension.dir.join(MANIFEST_FILE).display().to_string();
        loaded.problems.push(Problem::error(manifest, "needs", "its needs form a cycle"));
        skipped.insert(name.clone(), "its needs form a cycle".into());
    }
    loaded.skipped.extend(skipped);
    loaded.skipped.sort();
    loaded
}
