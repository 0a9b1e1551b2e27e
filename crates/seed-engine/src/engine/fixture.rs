//! Demo-world fixtures: a TOML file that plants spaces, signals, beings (with
//! their flows, scripts and qualities) and schedules world events by tick.
//! Documented in docs/moments.md; the shipped worlds are in fixtures/.

use crate::authoring::{closest, deserialize_toml_pruning, Problem, TomlSource};
use crate::fact::body::Cognition;
use crate::roles::definition::RoleRegistry;
use crate::roles::RoleFlow;
use crate::world::address::{parent_space, parse_space};
use serde::Deserialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest fixture file read, in bytes.
pub const FIXTURE_BYTES_MAX: u64 = 1024 * 1024;
/// Most beings a fixture may generate.
pub const FIXTURE_GENERATED_BEINGS_MAX: u64 = 1_000_000;

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
    /// A panel being's members and how it chooses (`moment::panel`); a
    /// script member's `script` and the `rule` name Rhai files relative to
    /// the fixture, read into the being's `panel` quality.
    #[serde(default)]
    pub panel: Option<Json>,
    /// Tick wakes every N ticks (0: only summons, signals and self-continue).
    #[serde(default)]
    pub wake_every: u64,
}

/// Why a fixture's `panel` does not give a panel.
#[derive(Debug, thiserror::Error)]
pub enum PanelSourceProblem {
    #[error("{field} must name a Rhai file")]
    NotAFile { field: String },
    #[error("{field}: {file}: {reason}")]
    Unread { field: String, file: String, reason: String },
    #[error("{0}")]
    Panel(crate::moment::panel::PanelProblem),
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

/// Kinds and signals the fixture itself uses, declared as an extension
/// declares what it provides: the world check warns about a space kind or a
/// signal that neither the fixture nor an enabled extension declares.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureDeclares {
    #[serde(default)]
    pub space_types: Vec<String>,
    #[serde(default)]
    pub matter_types: Vec<String>,
    #[serde(default)]
    pub signals: Vec<String>,
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
    #[serde(default)]
    pub declares: FixtureDeclares,
    /// Where the file was read from (for relative paths).
    #[serde(skip)]
    pub dir: PathBuf,
    /// The file as it was named, for problems found in it.
    #[serde(skip)]
    pub file: String,
    /// The file's text, to place problems found after reading it.
    #[serde(skip)]
    pub text: String,
    /// What was wrong in the file's TOML and left out of this value (the
    /// world check reports these first; nothing runs while any remain).
    #[serde(skip)]
    pub load_problems: Vec<Problem>,
}

/// Everything wrong with a fixture, each problem placed in its file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", problem_lines(.problems))]
pub struct FixtureError {
    pub problems: Vec<Problem>,
}

/// Problems one per line, errors first, then warnings, each in file order.
pub fn problem_lines(problems: &[Problem]) -> String {
    let mut sorted: Vec<&Problem> = problems.iter().collect();
    sorted.sort_by(|a, b| (a.severity, &a.file, a.position).cmp(&(b.severity, &b.file, b.position)));
    sorted.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

/// A being ready to plant: its flow checked, its script read.
#[derive(Debug, Clone)]
pub struct PlannedBeing {
    pub name: String,
    pub cognition: Cognition,
    pub home: String,
    pub default_role: String,
    /// Shared by the beings one `[[generate]]` group plants (a million
    /// copies of one template's tree took gigabytes).
    pub flow: Arc<Json>,
    pub script: Option<String>,
    /// The file `script` was read from, as the author names it (for messages).
    pub script_file: Option<String>,
    pub qualities: BTreeMap<String, Json>,
    pub wake_every: u64,
}

impl Fixture {
    /// Reads a fixture, listing every problem of its TOML (syntax, unknown
    /// fields with the name probably meant, wrong types) at once. A file
    /// whose problems could be left out loads without them, the problems
    /// kept in `load_problems` for the world check to report beside the
    /// rest; `Err` when nothing usable remains.
    pub fn load(path: &Path) -> Result<Fixture, FixtureError> {
        let file = path.display().to_string();
        let fail = |reason: String| FixtureError { problems: vec![Problem::error(file.clone(), "", reason)] };
        // Through `definitions`: replay serves a land's recorded fixture.
        let size = crate::definitions::file_len(path).map_err(|error| fail(error.to_string()))?;
        if size > FIXTURE_BYTES_MAX {
            return Err(fail(format!("{size} bytes, over the limit of {FIXTURE_BYTES_MAX}")));
        }
        let text = crate::definitions::read_to_string(path).map_err(|error| fail(error.to_string()))?;
        let source = TomlSource::parse(&file, &text).map_err(|syntax| FixtureError { problems: vec![*syntax] })?;
        let (parsed, found) = deserialize_toml_pruning::<Fixture>(&source);
        let problems: Vec<Problem> = found.into_iter().map(|found| found.in_file(&file, &source)).collect();
        let Some(mut fixture) = parsed else { return Err(FixtureError { problems }) };
        fixture.load_problems = problems;
        fixture.dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        fixture.file = file;
        fixture.text = text;
        Ok(fixture)
    }

    /// A problem at `at` (`being[2].home`), placed at its line.
    pub fn problem(&self, at: &str, reason: impl Into<String>) -> Problem {
        let position = TomlSource::parse(&self.file, &self.text).ok().and_then(|source| source.position_of(at));
        Problem::error(self.file.clone(), at, reason).at_position(position)
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

    /// A fixture's `panel` as the being's quality holds it: each script
    /// member's `script` and the `rule` read from their files (relative to
    /// the fixture, syntax checked), then the whole checked as a panel.
    fn panel_with_sources(&self, panel: &Json) -> Result<Json, PanelSourceProblem> {
        let mut panel = panel.clone();
        let read = |file: &Json, field: String| -> Result<Json, PanelSourceProblem> {
            let file = file.as_str().ok_or_else(|| PanelSourceProblem::NotAFile { field: field.clone() })?.to_string();
            let path = self.dir.join(&file);
            let source = crate::definitions::read_to_string(&path).map_err(|error| PanelSourceProblem::Unread {
                field: field.clone(),
                file: file.clone(),
                reason: error.to_string(),
            })?;
            crate::script::check_syntax(&source).map_err(|error| PanelSourceProblem::Unread {
                field,
                file,
                reason: error.to_string(),
            })?;
            Ok(Json::String(source))
        };
        if let Some(members) = panel.get_mut("members").and_then(Json::as_array_mut) {
            for (index, member) in members.iter_mut().enumerate() {
                if let Some(file) = member.get("script").cloned() {
                    member["script"] = read(&file, format!("members[{index}].script"))?;
                }
            }
        }
        if let Some(file) = panel.get("rule").cloned() {
            panel["rule"] = read(&file, "rule".to_string())?;
        }
        crate::moment::panel::PanelConfig::from_json(&panel).map_err(PanelSourceProblem::Panel)?;
        Ok(panel)
    }

    /// Checks spaces, beings, flows, scripts and events against the
    /// registry, and returns the beings to plant (generated ones included),
    /// in order; or every problem found.
    /// `broken_roles` names roles whose files failed to load: a being
    /// wearing one is left out without a second report.
    pub fn plan(
        &self,
        registry: &RoleRegistry,
        broken_roles: &std::collections::BTreeSet<String>,
    ) -> Result<Vec<PlannedBeing>, FixtureError> {
        let source = TomlSource::parse(&self.file, &self.text).ok();
        let mut problems: Vec<Problem> = Vec::new();
        let mut fail = |at: &str, reason: String, suggestion: Option<String>| {
            let position = source.as_ref().and_then(|source| source.position_of(at));
            problems.push(Problem::error(self.file.clone(), at, reason).at_position(position).suggesting(suggestion));
        };
        let mut spaces: Vec<String> = vec!["/".into()];
        for (index, space) in self.spaces.iter().enumerate() {
            let at = format!("space[{index}].path");
            match parse_space(&space.path) {
                Ok(path) => {
                    let parent = parent_space(&path).unwrap_or_default();
                    if path != "/" && !spaces.contains(&parent) {
                        fail(&at, format!("the parent space {parent} of {path} is not declared before it"), None);
                    }
                    spaces.push(path);
                }
                Err(error) => fail(&at, error.to_string(), None),
            }
        }
        let space_named = |path: &str| closest(path, spaces.iter().map(String::as_str));
        if let Some(budgets) = self.config.get(crate::spend::BUDGETS_CONFIG_KEY) {
            if let Err(problem) = crate::spend::Budgets::from_json(budgets) {
                fail(&format!("config.{}", crate::spend::BUDGETS_CONFIG_KEY), problem.to_string(), None);
            }
        }
        for (index, signal) in self.signals.iter().enumerate() {
            if let Some(reason) = crate::world::signal_key_problem(&signal.key) {
                fail(&format!("signal[{index}].key"), reason, None);
            }
        }
        // The beings the groups generate: none for a group over the limit.
        let mut generated_count = 0usize;
        for (group, generate) in self.generate.iter().enumerate() {
            if generate.count > FIXTURE_GENERATED_BEINGS_MAX {
                fail(
                    &format!("generate[{group}].count"),
                    format!("more than {FIXTURE_GENERATED_BEINGS_MAX} beings (the most one group generates)"),
                    None,
                );
            } else {
                generated_count += generate.count as usize;
            }
        }
        // Each being with its flow apart: the beings of one group share
        // theirs, and the places its problems are told at. Made one at a
        // time as the loop below asks: a million of them made ahead, each a
        // copy of its template, took a third of a gigabyte and, growing, a
        // second of `seed up`'s opening.
        let written_beings = self.beings.iter().enumerate().map(|(index, being)| {
            let flow = Arc::new(Json::Array(being.flow.clone()));
            let at: Arc<str> = format!("being[{index}]").into();
            let home_at: Arc<str> = format!("being[{index}].home").into();
            (at, home_at, being.clone(), flow)
        });
        let generated_beings = self
            .generate
            .iter()
            .enumerate()
            .filter(|(_, generate)| generate.count <= FIXTURE_GENERATED_BEINGS_MAX)
            .flat_map(|(group, generate)| {
                let flow = Arc::new(Json::Array(generate.template.flow.clone()));
                let template = FixtureBeing { flow: Vec::new(), ..generate.template.clone() };
                // Problems of a template are told once, at the template.
                let written: Arc<str> = format!("generate[{group}].template").into();
                let homes_at: Vec<Arc<str>> = match generate.homes.is_empty() {
                    true => vec![format!("{written}.home").into()],
                    false => (0..generate.homes.len())
                        .map(|home| format!("generate[{group}].homes[{home}]").into())
                        .collect(),
                };
                (0..generate.count).map(move |index| {
                    let mut being = template.clone();
                    being.name = being.name.replace("{i}", &index.to_string());
                    let home = index as usize % homes_at.len();
                    if !generate.homes.is_empty() {
                        being.home = generate.homes[home].clone();
                    }
                    (written.clone(), homes_at[home].clone(), being, flow.clone())
                })
            });
        let templates = written_beings.chain(generated_beings);
        let mut planned = Vec::with_capacity(self.beings.len() + generated_count);
        let mut names = std::collections::BTreeSet::new();
        let mut told: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        let mut scripts: BTreeMap<String, Option<String>> = BTreeMap::new();
        let mut script_problems: Vec<Problem> = Vec::new();
        // The flow checked last, with its default role and whether it bound:
        // the beings of a group share one, checked once.
        let mut flow_checked: Option<(Arc<Json>, String, bool)> = None;
        for (at, home_at, being, flow) in templates {
            let mut fail_once = |at: String, reason: String, suggestion: Option<String>| {
                if told.insert(at.clone()) {
                    fail(&at, reason, suggestion);
                }
            };
            let mut ok = true;
            if let Err(error) = crate::land::validate_being_name(&being.name) {
                fail_once(format!("{at}.name"), error.to_string(), None);
                ok = false;
            }
            if !names.insert(being.name.clone())
                || ["reality", "operator", "birther", "role-manager"].contains(&being.name.as_str())
            {
                fail_once(format!("{at}.name"), format!("the name @{} is used twice", being.name), None);
                ok = false;
            }
            let cognition = match Cognition::of_birth(&being.cognition) {
                Some(cognition) => cognition,
                None => {
                    let other = being.cognition.as_str();
                    let suggestion = closest(other, Cognition::AT_BIRTH_NAMES);
                    fail_once(
                        format!("{at}.cognition"),
                        format!("{other:?} is not scripted, llm, human or panel"),
                        suggestion,
                    );
                    ok = false;
                    Cognition::Scripted
                }
            };
            let home = match parse_space(&being.home) {
                Ok(home) if spaces.contains(&home) => home,
                Ok(home) => {
                    fail_once(home_at.to_string(), format!("no space {home} is declared"), space_named(&home));
                    ok = false;
                    home
                }
                Err(error) => {
                    fail_once(home_at.to_string(), error.to_string(), None);
                    ok = false;
                    being.home.clone()
                }
            };
            let checked_before = flow_checked.as_ref().filter(|(checked, default_role, _)| {
                Arc::ptr_eq(checked, &flow) && *default_role == being.default_role
            });
            let bound = match checked_before {
                Some((_, _, bound)) => *bound,
                None => {
                    let parsed_flow = RoleFlow::from_json(&flow);
                    // A role whose file is broken is reported there, not again here.
                    let names_a_broken_role = parsed_flow.as_ref().is_ok_and(|flow| {
                        std::iter::once(&being.default_role)
                            .chain(flow.default_role.iter())
                            .chain(flow.clauses.iter().map(|clause| &clause.role))
                            .any(|role| broken_roles.contains(role))
                    });
                    let bound = if names_a_broken_role {
                        false
                    } else if let Err(error) =
                        parsed_flow.and_then(|flow| flow.bind(registry, Some(&being.default_role)))
                    {
                        let flow_is_empty = flow.as_array().is_some_and(Vec::is_empty);
                        if error.path == "defaultRole" && flow_is_empty {
                            fail_once(format!("{at}.default_role"), error.reason, None);
                        } else {
                            fail_once(format!("{at}.flow"), error.to_string(), None);
                        }
                        false
                    } else {
                        true
                    };
                    flow_checked = Some((flow.clone(), being.default_role.clone(), bound));
                    bound
                }
            };
            ok &= bound;
            let script = match &being.script {
                None => None,
                Some(file) => {
                    let source = scripts.entry(file.clone()).or_insert_with(|| {
                        let path = self.dir.join(file);
                        match crate::definitions::read_to_string(&path) {
                            Ok(source) => match crate::script::check_syntax(&source) {
                                Ok(()) => Some(source),
                                Err(error) => {
                                    script_problems
                                        .push(crate::authoring::script_problem(&path.display().to_string(), &error));
                                    None
                                }
                            },
                            Err(error) => {
                                let position =
                                    source.as_ref().and_then(|source| source.position_of(&format!("{at}.script")));
                                script_problems.push(
                                    Problem::error(
                                        self.file.clone(),
                                        format!("{at}.script"),
                                        format!("{file}: {error}"),
                                    )
                                    .at_position(position),
                                );
                                None
                            }
                        }
                    });
                    if source.is_none() {
                        ok = false;
                    }
                    source.clone()
                }
            };
            let mut qualities = being.qualities;
            match (cognition == Cognition::Panel, &being.panel) {
                (true, None) => {
                    fail_once(format!("{at}.panel"), crate::moment::panel::PanelProblem::Missing.to_string(), None);
                    ok = false;
                }
                (false, Some(_)) => {
                    fail_once(format!("{at}.panel"), "only a being of panel cognition has a panel".into(), None);
                    ok = false;
                }
                (true, Some(panel)) => match self.panel_with_sources(panel) {
                    Ok(panel) => {
                        qualities.insert(crate::moment::panel::PANEL_QUALITY.to_string(), panel);
                    }
                    Err(problem) => {
                        fail_once(format!("{at}.panel"), problem.to_string(), None);
                        ok = false;
                    }
                },
                (false, None) => {}
            }
            if ok {
                planned.push(PlannedBeing {
                    name: being.name,
                    cognition,
                    home,
                    default_role: being.default_role,
                    flow,
                    script,
                    script_file: being.script.as_ref().map(|file| self.dir.join(file).display().to_string()),
                    qualities,
                    wake_every: being.wake_every,
                });
            }
        }
        for (index, event) in self.events.iter().enumerate() {
            let at = format!("event[{index}]");
            if let Some(signal) = &event.signal {
                if let Some(reason) = crate::world::signal_key_problem(&signal.key) {
                    fail(&format!("{at}.signal.key"), reason, None);
                }
            }
            if let Some(quality) = &event.quality {
                if !spaces.contains(&quality.space) {
                    fail(
                        &format!("{at}.quality.space"),
                        format!("no space {}", quality.space),
                        space_named(&quality.space),
                    );
                }
            }
            if let Some(movement) = &event.move_being {
                if !names.contains(&movement.being) {
                    let suggestion = closest(&movement.being, names.iter().map(String::as_str));
                    fail(&format!("{at}.move.being"), format!("no being @{}", movement.being), suggestion);
                }
                if !spaces.contains(&movement.to) {
                    fail(&format!("{at}.move.to"), format!("no space {}", movement.to), space_named(&movement.to));
                }
            }
        }
        problems.extend(script_problems);
        if problems.is_empty() {
            Ok(planned)
        } else {
            Err(FixtureError { problems })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_beings_one_group_generates_share_one_flow_checked_once() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/crowd.toml");
        let fixture = Fixture::load(&path).expect("the crowd loads");
        let checked = crate::engine::check_world(&fixture, &[]).expect("the crowd checks");
        let planned = &checked.planned;
        assert_eq!(planned.len(), 10_000);
        assert!(planned.windows(2).all(|pair| Arc::ptr_eq(&pair[0].flow, &pair[1].flow)), "one flow for the group");
        assert_eq!(planned[0].flow.as_array().map(Vec::len), Some(1), "the template's one clause");
    }

    /// The beings a group generates are made one at a time as they are
    /// checked: what each is planned as, and where its problems are told
    /// (once, at the template or the home it was dealt), guard that.
    #[test]
    fn generated_beings_are_planned_in_order_and_their_problems_told_once_where_written() {
        let roles = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/roles");
        let registry = crate::roles::RoleRegistry::load_dirs(&[roles]).0;
        let plan = |text: &str| {
            let folder = tempfile::tempdir().expect("a folder");
            let path = folder.path().join("world.toml");
            std::fs::write(&path, text).expect("written");
            let fixture = Fixture::load(&path).expect("the fixture loads");
            fixture.plan(&registry, &Default::default()).map_err(|error| {
                error.problems.iter().map(|problem| format!("{}: {}", problem.at, problem.reason)).collect::<Vec<_>>()
            })
        };
        let spaces = "[[space]]\npath = \"/a\"\nkind = \"room\"\n[[space]]\npath = \"/b\"\nkind = \"room\"\n";
        let written = "[[being]]\nname = \"ada\"\nhome = \"/a\"\ndefault_role = \"onlooker\"\n";
        let group = |count: u64, homes: &str, name: &str| {
            format!(
                "[[generate]]\ncount = {count}\nhomes = [{homes}]\ntemplate = {{ name = \"{name}\", home = \"/\", default_role = \"onlooker\", wake_every = 2 }}\n"
            )
        };
        let planned = plan(&format!(
            "name = \"w\"\n{spaces}{written}{}{}",
            group(3, "\"/a\", \"/b\"", "g-{i}"),
            group(2, "", "h-{i}")
        ))
        .expect("the world plans");
        let seen: Vec<(&str, &str, u64)> =
            planned.iter().map(|being| (being.name.as_str(), being.home.as_str(), being.wake_every)).collect();
        assert_eq!(
            seen,
            [("ada", "/a", 0), ("g-0", "/a", 2), ("g-1", "/b", 2), ("g-2", "/a", 2), ("h-0", "/", 2), ("h-1", "/", 2)]
        );
        assert!(Arc::ptr_eq(&planned[1].flow, &planned[3].flow), "a group's beings share its flow");
        assert!(!Arc::ptr_eq(&planned[3].flow, &planned[4].flow), "each group has its own");
        // A home no space declares, dealt to every other being, and a name
        // every generated being repeats: each told once, where it is written.
        let problems = plan(&format!("name = \"w\"\n{spaces}{}", group(4, "\"/a\", \"/nowhere\"", "same")))
            .expect_err("the world does not plan");
        assert_eq!(
            problems,
            [
                "generate[0].template.name: the name @same is used twice",
                "generate[0].homes[1]: no space /nowhere is declared",
            ]
        );
    }
}
