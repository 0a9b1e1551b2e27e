//! The world check: everything a world is made of, read and checked before
//! anything runs, every problem reported at once with its file and line.
//!
//! It loads the fixture's extensions (manifests and their Rhai scripts
//! compiled), its role folders (role files and their scripts compiled), and
//! plans its beings (spaces, names, flows bound, being scripts compiled,
//! events). Errors stop `seed sim` and `seed up` before a single moment
//! (a replay of recorded definitions runs [`substrate_for`]: the same
//! files, the beings not planned); warnings are told and the world runs:
//!
//! - a being that can never wake: no `wake_every`, its flow reads no world
//!   signal nor cascade arrival, and no role a being of the fixture wears may summon it;
//! - a space kind or signal that neither an enabled extension nor the
//!   fixture's `[declares]` table declares (with the closest declared one);
//! - an extension skipped because it needs one the fixture disabled.

use super::fixture::{problem_lines, Fixture, FixtureError, PlannedBeing};
use super::EngineError;
use crate::authoring::{closest, Problem, Severity};
use crate::extensions::LoadedExtensions;
use crate::fact::body::Cognition;
use crate::moment::Substrate;
use crate::roles::definition::RoleRegistry;
use crate::roles::resolve::{Resolvers, StaticWorld};
use crate::roles::RoleFlow;
use serde_json::Value as Json;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

/// A world that loaded: what its moments consult, the beings to plant, and
/// what it was warned about.
pub struct CheckedWorld {
    pub substrate: Substrate,
    /// (name or folder, reason) of each extension not loaded.
    pub skipped_extensions: Vec<(String, String)>,
    pub planned: Vec<PlannedBeing>,
    pub warnings: Vec<Problem>,
}

/// Checks `fixture`'s whole world (its roles: the extensions', then the
/// fixture's, then `extra_role_dirs`, later ones overriding).
pub fn check_world(fixture: &Fixture, extra_role_dirs: &[PathBuf]) -> Result<CheckedWorld, EngineError> {
    let Definitions { extensions, registry, broken_roles, mut problems } = load_definitions(fixture, extra_role_dirs);
    let planned = match fixture.plan(&registry, &broken_roles) {
        Ok(planned) => planned,
        Err(FixtureError { problems: found }) => {
            problems.extend(found);
            Vec::new()
        }
    };
    if problems.iter().any(Problem::is_error) {
        return Err(EngineError::World { problems: FixtureError { problems } });
    }
    problems.extend(never_waking(fixture, &planned, &registry));
    problems.extend(undeclared(fixture, &extensions, &planned));
    problems.sort_by(|a, b| (&a.file, a.position).cmp(&(&b.file, b.position)));
    let substrate = substrate_of(&extensions, registry);
    Ok(CheckedWorld { substrate, skipped_extensions: extensions.skipped.clone(), planned, warnings: problems })
}

/// What moments of `fixture`'s world consult (its roles: the extensions',
/// then the fixture's, then `extra_role_dirs`, later ones overriding; DO
/// operations, see-resolvers, hooks, cascade handlers) and the extensions
/// skipped, with why, checked as [`check_world`] checks the files they come
/// from (an error in the fixture, an extension or a role file refuses
/// them), without planning the fixture's beings: this is for moments of
/// beings a land holds already (replay, recovery), and planning a million
/// generated beings (with the warnings about them) was most of a one-being
/// replay's time.
pub fn substrate_for(
    fixture: &Fixture,
    extra_role_dirs: &[PathBuf],
) -> Result<(Substrate, Vec<(String, String)>), EngineError> {
    let Definitions { extensions, registry, problems, .. } = load_definitions(fixture, extra_role_dirs);
    if problems.iter().any(Problem::is_error) {
        return Err(EngineError::World { problems: FixtureError { problems } });
    }
    Ok((substrate_of(&extensions, registry), extensions.skipped.clone()))
}

/// A world's definitions as loaded, with the problems of their files.
struct Definitions {
    extensions: LoadedExtensions,
    registry: RoleRegistry,
    /// Roles whose files failed to load.
    broken_roles: BTreeSet<String>,
    problems: Vec<Problem>,
}

/// Loads `fixture`'s extensions and role folders (the extensions', then the
/// fixture's, then `extra_role_dirs`, later ones overriding).
fn load_definitions(fixture: &Fixture, extra_role_dirs: &[PathBuf]) -> Definitions {
    let extensions = fixture.load_extensions();
    let mut problems: Vec<Problem> = fixture.load_problems.clone();
    problems.extend(extensions.problems.iter().cloned());
    let mut role_dirs = extensions.role_dirs();
    role_dirs.extend(fixture.role_dirs());
    role_dirs.extend(extra_role_dirs.iter().cloned());
    let (registry, report) = RoleRegistry::load_dirs(&role_dirs);
    problems.extend(report.errors.iter().map(|error| error.to_problem()));
    Definitions { extensions, registry, broken_roles: report.broken_roles, problems }
}

fn substrate_of(extensions: &LoadedExtensions, registry: RoleRegistry) -> Substrate {
    let mut substrate = Substrate::new(registry);
    extensions.register_ops(&mut substrate.ops);
    extensions.register_see_resolvers(&mut substrate.see);
    substrate.hooks = crate::moment::hooks::Hooks::new(extensions.hooks());
    substrate.cascade = crate::cascade::CascadeHandlers::new(extensions.cascade_handlers());
    substrate
}

/// The warnings one per line, as `seed sim` and `seed up` print them.
pub fn warning_lines(warnings: &[Problem]) -> String {
    problem_lines(warnings)
}

fn warning(fixture: &Fixture, at: &str, reason: String, suggestion: Option<String>) -> Problem {
    let mut found = fixture.problem(at, reason).suggesting(suggestion);
    found.severity = Severity::Warning;
    found
}

/// Where a planned being is written: its own `[[being]]` or its template.
fn written_at(fixture: &Fixture, name: &str) -> String {
    if let Some(index) = fixture.beings.iter().position(|being| being.name == name) {
        return format!("being[{index}]");
    }
    let group = fixture.generate.iter().position(|generate| {
        let (prefix, suffix) = generate.template.name.split_once("{i}").unwrap_or((&generate.template.name, ""));
        name.starts_with(prefix) && name.ends_with(suffix)
    });
    group.map(|group| format!("generate[{group}].template")).unwrap_or_default()
}

/// Planned beings' flows, read once per flow rather than once per being:
/// the beings of one `[[generate]]` group share one flow
/// (`PlannedBeing::flow`), and a world of a million beings was a million
/// readings of it at every opening of its land.
#[derive(Default)]
struct FlowsRead {
    /// The flow read last, and what it read as (`None`: not a flow).
    last: Option<(Arc<Json>, Option<RoleFlow>)>,
}

impl FlowsRead {
    /// `flow` as read.
    fn read(&mut self, flow: &Arc<Json>) -> Option<&RoleFlow> {
        self.read_if_new(flow);
        self.last.as_ref().and_then(|(_, read)| read.as_ref())
    }

    /// `flow` as read, unless it is the flow read last (the same copy).
    fn read_if_new(&mut self, flow: &Arc<Json>) -> Option<&RoleFlow> {
        if self.last.as_ref().is_some_and(|(last, _)| Arc::ptr_eq(last, flow)) {
            return None;
        }
        self.last = Some((flow.clone(), RoleFlow::from_json(flow).ok()));
        self.last.as_ref().and_then(|(_, read)| read.as_ref())
    }
}

/// Beings nothing in the world can wake (people are woken by themselves).
fn never_waking(fixture: &Fixture, planned: &[PlannedBeing], registry: &RoleRegistry) -> Vec<Problem> {
    let mut world = StaticWorld::default();
    for being in planned {
        world.add(&being.name, Some("operator"), &being.home);
    }
    // Who the fixture's beings may summon does not depend on who asks, at
    // planting: their only relations are the operator (their parent) and
    // children not yet born, so each role's list is expanded once.
    let mut worn: BTreeSet<String> = BTreeSet::new();
    let mut flows = FlowsRead::default();
    for being in planned {
        if !worn.contains(&being.default_role) {
            worn.insert(being.default_role.clone());
        }
        if let Some(flow) = flows.read_if_new(&being.flow) {
            worn.extend(flow.default_role.clone());
            worn.extend(flow.clauses.iter().map(|clause| clause.role.clone()));
        }
    }
    let resolvers = Resolvers::standard();
    let mut summonable: BTreeSet<String> = BTreeSet::new();
    // An approval gate summons the beings it names, and those wearing the
    // roles it names (`default_role` is what a planned being wears).
    let mut approving_roles: BTreeSet<String> = BTreeSet::new();
    for role in worn.iter().filter_map(|name| registry.get(name)) {
        summonable.extend(resolvers.expand(&role.can_summon, "", &world));
        for approver in role.approvals.iter().flat_map(|gate| &gate.approvers) {
            match approver {
                crate::roles::approval::ApproverSpec::Being(name) => {
                    summonable.insert(format!("@{name}"));
                }
                crate::roles::approval::ApproverSpec::Role(name) => {
                    approving_roles.insert(name.to_string());
                }
                crate::roles::approval::ApproverSpec::Parent | crate::roles::approval::ApproverSpec::Owner => {}
            }
        }
    }
    summonable.extend(
        planned
            .iter()
            .filter(|being| approving_roles.contains(&being.default_role))
            .map(|being| format!("@{}", being.name)),
    );
    let mut told: BTreeSet<String> = BTreeSet::new();
    let mut warnings = Vec::new();
    for being in planned {
        if being.cognition == Cognition::Human || being.wake_every > 0 {
            continue;
        }
        let reads_a_signal =
            flows.read(&being.flow).is_some_and(|flow| !flow.world_subscriptions().is_empty() || flow.reads_cascade());
        if reads_a_signal || summonable.contains(&format!("@{}", being.name)) {
            continue;
        }
        let at = written_at(fixture, &being.name);
        if !told.insert(at.clone()) {
            continue;
        }
        let reason = format!(
            "@{} can never wake: wake_every is 0, its flow reads no world signal nor cascade arrival, and no role a being of this \
world wears may summon it (set wake_every, or give a role canSummon = [\"@{}\"])",
            being.name, being.name
        );
        warnings.push(warning(fixture, &at, reason, None));
    }
    warnings
}

/// Space kinds and signals neither an enabled extension nor the fixture declares.
fn undeclared(fixture: &Fixture, extensions: &LoadedExtensions, planned: &[PlannedBeing]) -> Vec<Problem> {
    let mut space_types: BTreeSet<&str> = fixture.declares.space_types.iter().map(String::as_str).collect();
    let mut signals: BTreeSet<&str> = fixture.declares.signals.iter().map(String::as_str).collect();
    for extension in &extensions.enabled {
        space_types.extend(extension.space_types.iter().map(String::as_str));
        signals.extend(extension.signals.iter().map(String::as_str));
    }
    let mut warnings = Vec::new();
    let mut told: BTreeSet<String> = BTreeSet::new();
    for (index, space) in fixture.spaces.iter().enumerate() {
        if !space_types.contains(space.kind.as_str()) && told.insert(format!("kind {}", space.kind)) {
            let reason = format!(
                "the space kind {:?} is declared by no enabled extension (provides.space_types) nor by this \
fixture's [declares] space_types",
                space.kind
            );
            let suggestion = closest(&space.kind, space_types.iter().copied());
            warnings.push(warning(fixture, &format!("space[{index}].kind"), reason, suggestion));
        }
    }
    let mut check_signal = |key: &str, at: String| {
        if !signals.contains(key) && told.insert(format!("signal {key}")) {
            let reason = format!(
                "the signal {key:?} is declared by no enabled extension (provides.signals) nor by this fixture's \
[declares] signals"
            );
            let suggestion = closest(key, signals.iter().copied());
            warnings.push(warning(fixture, &at, reason, suggestion));
        }
    };
    for (index, signal) in fixture.signals.iter().enumerate() {
        check_signal(&signal.key, format!("signal[{index}].key"));
    }
    for (index, event) in fixture.events.iter().enumerate() {
        if let Some(signal) = &event.signal {
            check_signal(&signal.key, format!("event[{index}].signal.key"));
        }
    }
    let mut flows = FlowsRead::default();
    for being in planned {
        // A flow's signals were checked where it was first read: a warning
        // names the first being written with it.
        if let Some(flow) = flows.read_if_new(&being.flow) {
            for key in flow.world_subscriptions() {
                let key = key.trim_start_matches("world.");
                check_signal(key, format!("{}.flow", written_at(fixture, &being.name)));
            }
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixture (`fixture.toml`) beside a `roles` folder holding `idle.toml` written as `idle_role`.
    fn fixture_with(text: &str, idle_role: &str) -> (tempfile::TempDir, Fixture) {
        let dir = tempfile::tempdir().expect("folder");
        std::fs::create_dir(dir.path().join("roles")).expect("roles folder");
        std::fs::write(dir.path().join("roles/idle.toml"), idle_role).expect("role file");
        let path = dir.path().join("fixture.toml");
        std::fs::write(&path, format!("name = \"x\"\nroles = [\"roles\"]\n{text}")).expect("fixture");
        let fixture = Fixture::load(&path).expect("the fixture reads");
        (dir, fixture)
    }

    /// Flows are read once per flow, not per being: every flow still gets
    /// its warnings, whichever beings share it and in whatever order.
    #[test]
    fn every_flow_is_checked_however_the_beings_share_their_flows() {
        let idle = "name = \"idle\"\ncanSee = [\"/\"]\n";
        let being = |name: &str, wake_every: u64, when: &str| {
            format!(
                "[[being]]\nname = \"{name}\"\nhome = \"/\"\ndefault_role = \"idle\"\nwake_every = {wake_every}\n\
flow = [ {{ when = {{ {when} }}, role = \"idle\" }} ]\n"
            )
        };
        let (declared, misspelt, space) =
            (r#""world.bells.rung" = true"#, r#""world.bells.rnug" = true"#, r#""space.name" = "x""#);
        let text = [
            "[declares]\nsignals = [\"bells.rung\"]\n".to_string(),
            being("a", 1, declared),
            being("b", 1, misspelt),
            being("c", 0, space),
            being("d", 0, declared),
            being("e", 0, space),
            "[[generate]]\ncount = 3\nhomes = [\"/\"]\n\
template = { name = \"w-{i}\", home = \"/\", default_role = \"idle\", wake_every = 1, flow = [ { when = { \"world.town.curfew\" = true }, role = \"idle\" } ] }\n".to_string(),
            being("f", 0, space),
        ]
        .concat();
        let (_dir, fixture) = fixture_with(&text, idle);
        let checked = check_world(&fixture, &[]).expect("warnings only");
        let mut told: Vec<String> = checked
            .warnings
            .iter()
            .map(|warning| {
                let what = if warning.reason.contains("never wake") { "never wakes" } else { "undeclared signal" };
                format!("{}: {what}", warning.at)
            })
            .collect();
        told.sort();
        assert_eq!(
            told,
            [
                "being[1].flow: undeclared signal",
                "being[2]: never wakes",
                "being[4]: never wakes",
                "being[5]: never wakes",
                "generate[0].template.flow: undeclared signal",
            ],
            "{:?}",
            checked.warnings
        );
    }

    /// Whether `check_world` and `substrate_for` take each world: the
    /// substrate is refused for every problem of the files it comes from
    /// and taken despite problems only the planting of beings finds.
    #[test]
    fn the_substrate_is_refused_for_its_files_problems_and_not_for_the_beings_plan() {
        let idle = "name = \"idle\"\ncanSee = [\"/\"]\n";
        let being = "[[being]]\nname = \"a\"\nhome = \"/\"\ndefault_role = \"idle\"\n";
        let cases = [
            ("a clean world", being.to_string(), idle, true, true),
            (
                "a being whose home is no space",
                "[[being]]\nname = \"a\"\nhome = \"/nowhere\"\ndefault_role = \"idle\"\n".to_string(),
                idle,
                false,
                true,
            ),
            (
                "a being wearing no role there is",
                "[[being]]\nname = \"a\"\nhome = \"/\"\ndefault_role = \"ghost\"\n".to_string(),
                idle,
                false,
                true,
            ),
            ("a role file that does not read", being.to_string(), "name = \"idle\"\ncanSee = 3\n", false, false),
            ("a fixture field nobody knows", format!("spacez = 1\n{being}"), idle, false, false),
        ];
        for (case, text, role, world_ok, substrate_ok) in cases {
            let (_dir, fixture) = fixture_with(&text, role);
            assert_eq!(check_world(&fixture, &[]).is_ok(), world_ok, "check_world: {case}");
            let substrate = substrate_for(&fixture, &[]);
            assert_eq!(substrate.is_ok(), substrate_ok, "substrate_for: {case}");
            if let Ok((substrate, _)) = substrate {
                assert!(substrate.roles.get("idle").is_some(), "{case}: the substrate holds the fixture's roles");
            }
        }
    }
}
