//! Demo-world fixtures: a TOML file that plants spaces, signals, beings (with
//! their flows, scripts and qualities) and schedules world events by tick.
//! Documented in docs/moments.md; the shipped worlds are in fixtures/.

use crate::fact::body::Cognition;
use crate::roles::definition::RoleRegistry;
use crate::roles::RoleFlow;
use crate::world::address::{parent_space, parse_space};
use serde::Deserialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest fixture file read, in bytes.
pub const FIXTURE_BYTES_MAX: u64 = 1024 * 1024;
/// Most beings a fixture may generate.
pub const FIXTURE_GENERATED_BEINGS_MAX: u64 = 100_000;

fn default_tick_ms() -> u64 {
    10_000
}
fn default_ticks() -> u64 {
    20
}
fn default_start_ms() -> u64 {
    1_767_225_600_000 // 2026-01-01T00:00:00Z
}
fn default_cognition() -> String {
    "scripted".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureSpace {
    pub path: String,
    pub kind: String,
    #[serde(default)]
    pub qualities: BTreeMap<String, Json>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureSignal {
    pub key: String,
    pub value: Json,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureBeing {
    pub name: String,
    #[serde(default = "default_cognition")]
    pub cognition: String,
    pub home: String,
    pub default_role: String,
    #[serde(default)]
    pub flow: Vec<Json>,
    /// A Rhai file (relative to the fixture) overriding the role's script.
    #[serde(default)]
    pub script: Option<String>,
    #[serde(default)]
    pub qualities: BTreeMap<String, Json>,
    /// Tick wakes every N ticks (0: only summons, signals and self-continue).
    #[serde(default)]
    pub wake_every: u64,
}

/// Many beings made from one template: `{i}` in the name is the index.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureGenerate {
    pub count: u64,
    pub template: FixtureBeing,
    /// Spread the generated beings over these spaces, round robin.
    #[serde(default)]
    pub homes: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureEvent {
    pub tick: u64,
    #[serde(default)]
    pub signal: Option<FixtureSignal>,
    #[serde(default)]
    pub quality: Option<EventQuality>,
    #[serde(default, rename = "move")]
    pub move_being: Option<EventMove>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventQuality {
    pub space: String,
    pub key: String,
    pub value: Json,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventMove {
    pub being: String,
    pub to: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixture {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "default_tick_ms")]
    pub tick_ms: u64,
    #[serde(default = "default_ticks")]
    pub ticks: u64,
    #[serde(default = "default_start_ms")]
    pub start_ms: u64,
    /// Role folders, relative to the fixture file (later ones override).
    #[serde(default)]
    pub roles: Vec<String>,
    /// The extensions folder, relative to the fixture file.
    #[serde(default)]
    pub extensions: Option<String>,
    /// Extensions not to load.
    #[serde(default)]
    pub disable: Vec<String>,
    /// Land configuration (`inbox_depth_max`, `summons_per_minute_max`, ...),
    /// sealed as `set-config` effects when the fixture is planted.
    #[serde(default)]
    pub config: BTreeMap<String, Json>,
    #[serde(default, rename = "space")]
    pub spaces: Vec<FixtureSpace>,
    #[serde(default, rename = "signal")]
    pub signals: Vec<FixtureSignal>,
    #[serde(default, rename = "being")]
    pub beings: Vec<FixtureBeing>,
    #[serde(default)]
    pub generate: Vec<FixtureGenerate>,
    #[serde(default, rename = "event")]
    pub events: Vec<FixtureEvent>,
    /// Where the file was read from (for relative paths).
    #[serde(skip)]
    pub dir: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fixture {file}: {at}: {reason}")]
pub struct FixtureError {
    pub file: String,
    pub at: String,
    pub reason: String,
}

/// A being ready to plant: its flow checked, its script read.
#[derive(Debug, Clone)]
pub struct PlannedBeing {
    pub name: String,
    pub cognition: Cognition,
    pub home: String,
    pub default_role: String,
    pub flow: Json,
    pub script: Option<String>,
    pub qualities: BTreeMap<String, Json>,
    pub wake_every: u64,
}

impl Fixture {
    pub fn load(path: &Path) -> Result<Fixture, FixtureError> {
        let file = path.display().to_string();
        let fail = |at: &str, reason: String| FixtureError { file: file.clone(), at: at.to_string(), reason };
        let size = std::fs::metadata(path).map_err(|error| fail("(file)", error.to_string()))?.len();
        if size > FIXTURE_BYTES_MAX {
            return Err(fail("(file)", format!("{size} bytes, over the limit of {FIXTURE_BYTES_MAX}")));
        }
        let text = std::fs::read_to_string(path).map_err(|error| fail("(file)", error.to_string()))?;
        let deserializer = toml::Deserializer::new(&text);
        let mut fixture: Fixture = serde_path_to_error::deserialize(deserializer)
            .map_err(|error| fail(&error.path().to_string(), error.inner().message().to_string()))?;
        fixture.dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(fixture)
    }

    pub fn error(&self, at: &str, reason: impl Into<String>) -> FixtureError {
        FixtureError { file: self.name.clone(), at: at.to_string(), reason: reason.into() }
    }

    pub fn role_dirs(&self) -> Vec<PathBuf> {
        self.roles.iter().map(|dir| self.dir.join(dir)).collect()
    }

    /// The fixture's extensions, loaded (empty when it names no folder).
    pub fn load_extensions(&self) -> crate::extensions::LoadedExtensions {
        match &self.extensions {
            Some(folder) => crate::extensions::load(&self.dir.join(folder), &self.disable),
            None => crate::extensions::LoadedExtensions::default(),
        }
    }

    /// Checks spaces, beings, flows and events against the registry, and
    /// returns the beings to plant (generated ones included), in order.
    pub fn plan(&self, registry: &RoleRegistry) -> Result<Vec<PlannedBeing>, FixtureError> {
        let mut spaces: Vec<String> = vec!["/".into()];
        for (index, space) in self.spaces.iter().enumerate() {
            let at = format!("space[{index}]");
            let path = parse_space(&space.path).map_err(|error| self.error(&at, error.to_string()))?;
            let parent = parent_space(&path).unwrap_or_default();
            if path != "/" && !spaces.contains(&parent) {
                return Err(self.error(&at, format!("the parent space {parent} of {path} is not declared before it")));
            }
            spaces.push(path);
        }
        for (index, signal) in self.signals.iter().enumerate() {
            if let Some(reason) = crate::world::signal_key_problem(&signal.key) {
                return Err(self.error(&format!("signal[{index}]"), reason));
            }
        }
        let mut templates: Vec<(String, FixtureBeing)> =
            self.beings.iter().enumerate().map(|(index, being)| (format!("being[{index}]"), being.clone())).collect();
        for (group, generate) in self.generate.iter().enumerate() {
            if generate.count > FIXTURE_GENERATED_BEINGS_MAX {
                return Err(
                    self.error(&format!("generate[{group}].count"), format!("over {FIXTURE_GENERATED_BEINGS_MAX}"))
                );
            }
            for index in 0..generate.count {
                let mut being = generate.template.clone();
                being.name = being.name.replace("{i}", &index.to_string());
                if !generate.homes.is_empty() {
                    being.home = generate.homes[index as usize % generate.homes.len()].clone();
                }
                templates.push((format!("generate[{group}][{index}]"), being));
            }
        }
        let mut planned = Vec::with_capacity(templates.len());
        let mut names = std::collections::BTreeSet::new();
        let mut scripts: BTreeMap<String, String> = BTreeMap::new();
        for (at, being) in templates {
            crate::land::validate_being_name(&being.name).map_err(|error| self.error(&at, error.to_string()))?;
            if !names.insert(being.name.clone())
                || ["reality", "operator", "birther", "role-manager"].contains(&being.name.as_str())
            {
                return Err(self.error(&at, format!("the name @{} is used twice", being.name)));
            }
            let cognition = match being.cognition.as_str() {
                "scripted" => Cognition::Scripted,
                "llm" => Cognition::Llm,
                "human" => Cognition::Human,
                other => {
                    return Err(
                        self.error(&format!("{at}.cognition"), format!("{other:?} is not scripted, llm or human"))
                    )
                }
            };
            let home =
                parse_space(&being.home).map_err(|error| self.error(&format!("{at}.home"), error.to_string()))?;
            if !spaces.contains(&home) {
                return Err(self.error(&format!("{at}.home"), format!("no space {home} is declared")));
            }
            let flow = Json::Array(being.flow.clone());
            RoleFlow::from_json(&flow)
                .and_then(|flow| flow.bind(registry, Some(&being.default_role)))
                .map_err(|error| self.error(&format!("{at}.flow"), error.to_string()))?;
            let script = match &being.script {
                None => None,
                Some(file) => Some(match scripts.get(file) {
                    Some(source) => source.clone(),
                    None => {
                        let source = std::fs::read_to_string(self.dir.join(file))
                            .map_err(|error| self.error(&format!("{at}.script"), format!("{file}: {error}")))?;
                        scripts.insert(file.clone(), source.clone());
                        source
                    }
                }),
            };
            planned.push(PlannedBeing {
                name: being.name,
                cognition,
                home,
                default_role: being.default_role,
                flow,
                script,
                qualities: being.qualities,
                wake_every: being.wake_every,
            });
        }
        for (index, event) in self.events.iter().enumerate() {
            let at = format!("event[{index}]");
            if let Some(signal) = &event.signal {
                if let Some(reason) = crate::world::signal_key_problem(&signal.key) {
                    return Err(self.error(&at, reason));
                }
            }
            if let Some(quality) = &event.quality {
                if !spaces.contains(&quality.space) {
                    return Err(self.error(&at, format!("no space {}", quality.space)));
                }
            }
            if let Some(movement) = &event.move_being {
                if !names.contains(&movement.being) {
                    return Err(self.error(&at, format!("no being @{}", movement.being)));
                }
                if !spaces.contains(&movement.to) {
                    return Err(self.error(&at, format!("no space {}", movement.to)));
                }
            }
        }
        Ok(planned)
    }
}
