//! `seed replay`: rebuild a being's moments from its reel and compare them.

use anyhow::{bail, Context, Result};
use seed::engine::fixture::Fixture;
use seed::land::Land;
use seed::replay::{ReplayOptions, ReplayReport};
use seed::snapshots::{SnapshotUse, VouchedWorlds};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The file in a land folder that names the fixture whose definitions (roles,
/// extensions) its moments used; `seed sim --land` writes it.
pub const DEFINITIONS_FILE: &str = "definitions.toml";

/// What `definitions.toml` records: the fixture, the seed it ran with, and
/// role folders added on top of the fixture's (a kept what-if fork's).
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Definitions {
    pub(super) fixture: PathBuf,
    #[serde(default)]
    pub(super) seed: u64,
    #[serde(default)]
    pub(super) role_dirs: Vec<PathBuf>,
}

fn absolute(path: &Path) -> Result<PathBuf> {
    path.canonicalize().with_context(|| format!("{}", path.display()))
}

/// Where a land folder archives the role definitions its moments wore, one
/// `DIGEST.json` per definition (see `Role::definition_json`).
pub const ROLE_ARCHIVE_DIR: &str = "definitions/roles";

/// Records, beside the land, the fixture a simulation ran (absolute paths),
/// and archives every role definition it could wear by digest, so a later
/// replay against changed definitions can show what changed.
pub fn record_definitions(land_dir: &Path, fixture: &Path, seed: u64, role_dirs: &[PathBuf]) -> Result<()> {
    let role_dirs = role_dirs.iter().map(|dir| absolute(dir)).collect::<Result<Vec<_>>>()?;
    let (substrate, _) = seed::engine::substrate_for(&Fixture::load(fixture)?, &role_dirs)?;
    let archived = archived_roles(&substrate);
    write_definitions(land_dir, &Definitions { fixture: absolute(fixture)?, seed, role_dirs }, &archived)
}

/// Each role definition of `substrate` by its digest, as the archive keeps them.
fn archived_roles(substrate: &seed::moment::Substrate) -> Vec<(String, serde_json::Value)> {
    substrate.roles.iter().map(|role| (role.digest.to_hex(), role.definition_json())).collect()
}

/// Writes `definitions.toml` and the role archive beside a land.
fn write_definitions(
    land_dir: &Path,
    definitions: &Definitions,
    archived: &[(String, serde_json::Value)],
) -> Result<()> {
    std::fs::write(land_dir.join(DEFINITIONS_FILE), toml::to_string(definitions)?)
        .with_context(|| format!("writing {}", land_dir.join(DEFINITIONS_FILE).display()))?;
    let archive = land_dir.join(ROLE_ARCHIVE_DIR);
    std::fs::create_dir_all(&archive).with_context(|| format!("{}", archive.display()))?;
    for (digest, definition) in archived {
        let path = archive.join(format!("{digest}.json"));
        std::fs::write(&path, serde_json::to_string_pretty(definition)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// How each changed role differs from the definition the moment wore, when
/// the land archived that definition.
fn role_change_differences(
    land_dir: &Path,
    substrate: &seed::moment::Substrate,
    change: &seed::replay::RoleChange,
) -> Option<Vec<seed::replay::FieldDifference>> {
    let path = land_dir.join(ROLE_ARCHIVE_DIR).join(format!("{}.json", change.recorded.to_hex()));
    let recorded: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let file_role = substrate.roles.get(&change.role);
    // The definition in force may be one authored live (a fact), not the
    // file's: then the file's fields would be the wrong "now", and the
    // change is shown by its digests only.
    if file_role.map(|role| role.digest) != change.current {
        return None;
    }
    let current = file_role.map_or(serde_json::Value::Null, |role| role.definition_json());
    Some(seed::replay::definition_differences(&recorded, &current))
}

/// What the land folder's `definitions.toml` records, if it has one.
fn recorded_definitions(land_dir: &Path) -> Result<Option<Definitions>> {
    let path = land_dir.join(DEFINITIONS_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(toml::from_str::<Definitions>(&text).with_context(|| format!("{}", path.display()))?)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error).with_context(|| format!("{}", path.display())),
    }
}

/// No land at all, or a folder that is not one: the clearer thing to say
/// when a land folder has no `definitions.toml`.
fn not_a_land(land_dir: &Path) -> Option<anyhow::Error> {
    if !land_dir.is_dir() {
        return Some(seed::land::LandError::NoLand { dir: land_dir.to_path_buf() }.into());
    }
    if !land_dir.join(seed::land::LAND_META_FILE).is_file() {
        return Some(seed::land::LandError::NotALand { dir: land_dir.to_path_buf() }.into());
    }
    None
}

/// The fixture a land folder records, if it records one.
pub fn recorded_fixture(land_dir: &Path) -> Result<Option<PathBuf>> {
    Ok(recorded_definitions(land_dir)?.map(|recorded| recorded.fixture))
}

/// The definitions a land's moments used: `--fixture` if given (with the
/// recorded seed, if any), else what the land folder records.
pub(super) fn land_definitions(land_dir: &Path, given: Option<&Path>) -> Result<Definitions> {
    let recorded = recorded_definitions(land_dir)?;
    match (given, recorded) {
        (Some(given), recorded) => Ok(Definitions {
            fixture: given.to_path_buf(),
            seed: recorded.as_ref().map_or(0, |recorded| recorded.seed),
            role_dirs: Vec::new(),
        }),
        (None, Some(recorded)) => Ok(recorded),
        (None, None) => match not_a_land(land_dir) {
            Some(error) => Err(error),
            None => bail!(
                "{} is missing: pass --fixture FILE (the world whose roles and extensions the moments used)",
                land_dir.join(DEFINITIONS_FILE).display()
            ),
        },
    }
}

/// The files a replay may run moments with: `--fixture`, used for every
/// moment (a what-if against today's files: a divergence names the files
/// that differ from those the land recorded); or the fixture the land
/// folder names, used only for moments sealed before the land recorded its
/// definitions (older lands). Elsewhere each moment runs with the
/// definitions the land recorded in force at its cursor.
pub(super) struct ReplayFiles {
    substrate: Option<seed::moment::Substrate>,
    read: Option<seed::definitions::DefinitionFiles>,
    given: bool,
    /// Why the fixture the folder names did not load (told if a moment needs it).
    unloaded: Option<String>,
}

impl ReplayFiles {
    pub(super) fn load(land_dir: &Path, given: Option<&Path>) -> Result<ReplayFiles> {
        if let Some(path) = given {
            let fixture = Fixture::load(path)?;
            let (checked, read) = seed::engine::definitions::check_world_recording(&fixture, &[])?;
            return Ok(ReplayFiles {
                substrate: Some(checked.substrate),
                read: Some(read),
                given: true,
                unloaded: None,
            });
        }
        if let Some(error) = not_a_land(land_dir) {
            return Err(error);
        }
        let Some(recorded) = recorded_definitions(land_dir)? else {
            return Ok(ReplayFiles { substrate: None, read: None, given: false, unloaded: None });
        };
        let loaded = Fixture::load(&recorded.fixture)
            .map_err(anyhow::Error::from)
            .and_then(|fixture| Ok(seed::engine::substrate_for(&fixture, &recorded.role_dirs)?.0));
        Ok(match loaded {
            Ok(substrate) => ReplayFiles { substrate: Some(substrate), read: None, given: false, unloaded: None },
            Err(error) => ReplayFiles {
                substrate: None,
                read: None,
                given: false,
                unloaded: Some(format!(
                    "{} names {}, which does not load: {error:#}",
                    land_dir.join(DEFINITIONS_FILE).display(),
                    recorded.fixture.display()
                )),
            },
        })
    }

    pub(super) fn definitions<'a>(&'a self, store: &'a dyn seed::store::Store) -> seed::replay::ReplayDefinitions<'a> {
        match (&self.substrate, self.given) {
            (Some(substrate), true) => seed::replay::ReplayDefinitions::files(store, substrate, self.read.as_ref()),
            (substrate, _) => seed::replay::ReplayDefinitions::recorded(store, substrate.as_ref()),
        }
    }

    /// The files' substrate, if any (to show how a changed role differs).
    fn substrate(&self) -> Option<&seed::moment::Substrate> {
        self.substrate.as_ref()
    }

    /// A replay's error, with why the folder's fixture was not used when a
    /// moment needed files.
    pub(super) fn explain(&self, error: seed::replay::ReplayError) -> anyhow::Error {
        match (&error, &self.unloaded) {
            (seed::replay::ReplayError::NoDefinitions { .. }, Some(unloaded)) => {
                anyhow::Error::from(error).context(unloaded.clone())
            }
            _ => error.into(),
        }
    }
}

/// Which world snapshots a replay of one being may start from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotTrust {
    /// None: the land log is folded from genesis.
    None,
    /// Those a clean `seed verify` vouched for.
    Vouched,
    /// Those, each re-derived from the one before it.
    Paranoid,
}

pub struct ReplayArguments<'a> {
    pub being: &'a str,
    pub fixture: Option<&'a Path>,
    pub from: Option<u64>,
    pub to: Option<u64>,
    pub keep_going: bool,
    pub snapshots: SnapshotTrust,
    pub step: bool,
    pub json: bool,
}

/// The mirror of one being of another land holds its reel alone: its
/// moments read their whole land's world, which it does not hold.
fn refuse_a_being_mirror(land: &Land) -> Result<()> {
    if let Some(of) = &land.meta().mirror_being_of {
        bail!(
            "{} mirrors one being of land {of}: it verifies (`seed verify`), but its moments read their whole land's world, which it does not hold; follow the land (`seed peer follow PEER`) to replay them",
            land.dir().display()
        );
    }
    Ok(())
}

pub fn replay(land_dir: &Path, arguments: ReplayArguments<'_>) -> Result<ExitCode> {
    if let (Some(from), Some(to)) = (arguments.from, arguments.to) {
        if from > to {
            bail!("--from {from} is after --to {to}");
        }
    }
    // The files are checked while the land opens: neither needs the
    // other, and each takes a noticeable part of a short replay. A problem
    // with the files is told first, as when they were checked first.
    let (files, land) = std::thread::scope(|scope| {
        let opening = scope.spawn(|| Land::open_read_only(land_dir));
        let files = ReplayFiles::load(land_dir, arguments.fixture);
        let land = opening.join().expect("opening a land does not panic");
        (files, land)
    });
    let (files, land) = (files?, land?);
    refuse_a_being_mirror(&land)?;
    let being = land.resolve(arguments.being)?;
    let options = ReplayOptions {
        from_seq: arguments.from.unwrap_or(0),
        to_seq: arguments.to.unwrap_or(u64::MAX),
        keep_going: arguments.keep_going,
    };
    let worlds = match arguments.snapshots {
        SnapshotTrust::None => VouchedWorlds::none(land_dir, land.store()),
        trust => VouchedWorlds::open(land_dir, land.store(), land.root(), trust == SnapshotTrust::Paranoid)?,
    };
    let replayer =
        seed::replay::Replayer::with_definitions(land.store(), files.definitions(land.store()), being, options)
            .map_err(|error| files.explain(error))?
            .with_snapshots(&worlds);
    if arguments.step {
        let clean = super::step::run(replayer, std::io::stdin().lock(), &mut std::io::stdout().lock())?;
        return Ok(if clean { ExitCode::SUCCESS } else { ExitCode::from(1) });
    }
    let mut replayer = replayer;
    replayer.run_in_place().map_err(|error| files.explain(error))?;
    let report = replayer.report();
    let role_diff = |change: &seed::replay::RoleChange| {
        files.substrate().and_then(|substrate| role_change_differences(land_dir, substrate, change))
    };
    let usage = worlds.usage();
    if arguments.json {
        print_json(report, &role_diff, &usage)?;
    } else {
        print_text(report, &role_diff, &usage)?;
    }
    let exit = if report.clean() { ExitCode::SUCCESS } else { ExitCode::from(1) };
    // The process ends next: the world (a million beings' rows, in the
    // largest lands) and the land's indexes are left to the operating
    // system, which takes their pages back at once, instead of being freed
    // block by block (over half a second of a million-being replay).
    std::mem::forget(replayer);
    std::mem::forget(worlds);
    std::mem::forget(land);
    Ok(exit)
}

/// How a changed role differs from the recorded one (`None`: not archived).
type RoleDiff<'a> = &'a dyn Fn(&seed::replay::RoleChange) -> Option<Vec<seed::replay::FieldDifference>>;

fn differences_json(differences: &[seed::replay::FieldDifference]) -> serde_json::Value {
    json!(differences
        .iter()
        .map(|difference| json!({
            "field": difference.field, "expected": difference.expected, "actual": difference.actual,
        }))
        .collect::<Vec<_>>())
}

/// Which snapshots a replay started from, and which it set aside with why.
fn snapshot_use_json(usage: &SnapshotUse) -> serde_json::Value {
    json!({
        "used": usage.used,
        "setAside": usage.set_aside.iter().map(|(cursor, reason)| json!({"cursor": cursor, "reason": reason}))
            .collect::<Vec<_>>(),
    })
}

fn print_json(report: &ReplayReport, role_diff: RoleDiff<'_>, usage: &SnapshotUse) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for moment in &report.moments {
        let line = json!({
            "seq": moment.seq, "landSeq": moment.land_seq, "storedTimeMs": moment.stored_time_ms,
            "storedTime": seed::view::format_time_ms(moment.stored_time_ms),
            "wake": moment.act.wake.to_json(), "cursor": moment.act.cursor,
            "primary": moment.act.primary, "stack": moment.act.stack.iter().map(|used| &used.name).collect::<Vec<_>>(),
            "clauses": moment.clauses, "composed": moment.composed, "face": moment.face,
            "act": {"call": moment.act.call.to_json(), "content": moment.act.content},
            "effects": moment.act.effects, "matches": moment.matches,
        });
        writeln!(out, "{line}")?;
    }
    let summary = json!({
        "being": report.being.to_hex(), "name": report.name, "factsVerified": report.facts_verified,
        "moments": report.moments.len(), "problems": report.problems, "stoppedEarly": report.stopped_early,
        "divergences": report.divergences.iter().map(|divergence| json!({
            "seq": divergence.seq, "landSeq": divergence.land_seq, "cause": divergence.cause.to_json(),
            "differences": differences_json(&divergence.differences),
            "roleDefinitionDifferences": match &divergence.cause {
                seed::replay::DivergenceCause::DefinitionChanged { roles, .. } => json!(roles.iter().map(|change| json!({
                    "role": change.role,
                    "differences": role_diff(change).map(|differences| differences_json(&differences)),
                })).collect::<Vec<_>>()),
                _ => serde_json::Value::Null,
            },
            "context": divergence.context,
        })).collect::<Vec<_>>(),
        "snapshots": snapshot_use_json(usage),
    });
    writeln!(out, "{}", json!({ "summary": summary }))?;
    Ok(())
}

/// One replayed moment as text: seq, land seq, time, cursor, wake and
/// verdict, the roles, the act; with `with_trace`, also the clause trace,
/// the prose and the effects.
pub fn write_moment(
    out: &mut impl std::io::Write,
    moment: &seed::replay::ReplayedMoment,
    with_trace: bool,
) -> std::io::Result<()> {
    let act = &moment.act;
    let wake = act.wake.to_json().to_string();
    let verdict = if moment.matches { "ok" } else { "DIVERGES" };
    writeln!(
        out,
        "#{} land {} time {} cursor {} wake {wake}  {verdict}",
        moment.seq, moment.land_seq, moment.stored_time_ms, act.cursor
    )?;
    let stack: Vec<&str> = act.stack.iter().map(|used| used.name.as_str()).collect();
    writeln!(out, "    roles    {}", stack.join(" + "))?;
    if with_trace {
        for clause in &moment.clauses {
            writeln!(out, "      {clause}")?;
        }
    }
    let call = act.call.to_json();
    writeln!(out, "    act      {call}")?;
    if with_trace {
        if let Some(content) = &act.content {
            writeln!(out, "    prose    {content}")?;
        }
        if !act.effects.is_empty() {
            writeln!(out, "    effects  {}", serde_json::to_string(&act.effects).unwrap_or_default())?;
        }
    }
    Ok(())
}

fn print_text(report: &ReplayReport, role_diff: RoleDiff<'_>, usage: &SnapshotUse) -> Result<()> {
    println!("replay of @{} ({})", report.name, report.being.short());
    for problem in &report.problems {
        println!("  PROBLEM {problem}");
    }
    let mut out = std::io::stdout().lock();
    for moment in &report.moments {
        write_moment(&mut out, moment, true)?;
    }
    drop(out);
    for divergence in &report.divergences {
        println!("divergence at #{} (land {}): {}", divergence.seq, divergence.land_seq, divergence.cause.label());
        match &divergence.cause {
            seed::replay::DivergenceCause::DefinitionChanged { roles, files } => {
                if let Some(files) = files {
                    println!(
                        "    files differ from the definitions the land recorded at land seq {}:",
                        files.recorded_at
                    );
                    for change in &files.changes {
                        println!("      {} {}", change.path, change.how.as_str());
                    }
                }
                for change in roles {
                    let current = change.current.map_or("(no longer defined)".to_string(), |digest| digest.short());
                    println!("    role {}: recorded {} now {current}", change.role, change.recorded.short());
                    match role_diff(change) {
                        Some(differences) => {
                            for difference in differences {
                                println!("      - {}: {}", difference.field, difference.expected);
                                println!("      + {}: {}", difference.field, difference.actual);
                            }
                        }
                        None => println!("      (the recorded definition is not archived in this land)"),
                    }
                }
            }
            seed::replay::DivergenceCause::EvaluatorChanged { recorded, current } => {
                println!("    sealed by evaluator {recorded}, replayed by {current}");
            }
            _ => {}
        }
        for difference in &divergence.differences {
            println!("    {}: expected {} got {}", difference.field, difference.expected, difference.actual);
        }
    }
    for (cursor, reason) in &usage.set_aside {
        println!("snapshot at cursor {cursor} not used: {reason}");
    }
    if let Some(first) = usage.used.first() {
        let more = match usage.used.len() {
            1 => String::new(),
            count => format!(" and {} more", count - 1),
        };
        println!("world taken from the snapshot at cursor {first}{more} (--no-snapshots folds from genesis)");
    }
    let verdict = if report.clean() { "every moment matches" } else { "DIVERGED" };
    let stopped = if report.stopped_early { " (stopped at the first; --keep-going to go on)" } else { "" };
    println!(
        "{} facts verified, {} moments replayed, {} divergence(s): {verdict}{stopped}",
        report.facts_verified,
        report.moments.len(),
        report.divergences.len()
    );
    Ok(())
}

pub struct ForkArguments<'a> {
    pub being: &'a str,
    pub fixture: Option<&'a Path>,
    pub at_seq: u64,
    pub flow: Option<&'a Path>,
    pub roles: &'a [PathBuf],
    pub script: Option<&'a Path>,
    pub ticks: Option<u64>,
    pub keep: Option<&'a Path>,
    pub json: bool,
}

/// Threads a fork's two sandboxes run moments on (results do not depend on it).
const FORK_THREADS: usize = 2;

pub fn fork(land_dir: &Path, arguments: ForkArguments<'_>) -> Result<ExitCode> {
    let mut extra_roles = Vec::new();
    for dir in arguments.roles {
        if !dir.is_dir() {
            bail!("--roles {}: no such folder", dir.display());
        }
        extra_roles.push(dir.canonicalize().with_context(|| format!("--roles {}", dir.display()))?);
    }
    let land = Land::open_read_only(land_dir)?;
    let being = land.resolve(arguments.being)?;
    // The definitions the land recorded in force at the forked moment: the
    // sandboxes plant and run from them, whatever the files say now. With
    // --fixture (or on an older land that recorded none), today's files.
    let recorded = match arguments.fixture {
        Some(_) => None,
        None => match land.store().reel(&being, arguments.at_seq, arguments.at_seq + 1)?.first() {
            Some(stored) => seed::engine::definitions::recorded_files_before(&land, stored.land_seq)?,
            None => None,
        },
    };
    let (definitions, forked) = match recorded {
        Some(files) => {
            // The seed is not among the definitions: the file beside the land keeps it.
            let Some(named) = recorded_definitions(land_dir)? else {
                bail!(
                    "{} is missing: it keeps the seed the land was simulated with, which a fork runs again",
                    land_dir.join(DEFINITIONS_FILE).display()
                );
            };
            let fixture_path = files.fixture_path();
            // The fork's own role folders are read from the disk beside them.
            let forked = seed::definitions::serving_beside_folders(&files, &extra_roles, || {
                fork_from(&land, being, &fixture_path, &[], named.seed, &extra_roles, &arguments)
            })?;
            (named, forked)
        }
        None => {
            let definitions = land_definitions(land_dir, arguments.fixture)?;
            let (fixture, role_dirs) = (&definitions.fixture, &definitions.role_dirs);
            let forked = fork_from(&land, being, fixture, role_dirs, definitions.seed, &extra_roles, &arguments)?;
            (definitions, forked)
        }
    };
    // A kept branch replays from its own definition facts; the file beside
    // it names the original's fixture and keeps the seed, and the archive
    // holds the roles the branch ran (never read again from the disk).
    if let Some(keep) = arguments.keep {
        let fixture = absolute(&definitions.fixture).unwrap_or(definitions.fixture);
        let kept = Definitions { fixture, seed: definitions.seed, role_dirs: forked.role_dirs };
        write_definitions(keep, &kept, &forked.archived)?;
    }
    if arguments.json {
        print_fork_json(&forked.report, arguments.keep)?;
    } else {
        print_fork_text(&forked.report, arguments.at_seq, arguments.keep);
    }
    Ok(ExitCode::SUCCESS)
}

/// What a fork gives back to be kept and printed.
struct Forked {
    report: seed::replay::fork::ForkReport,
    /// The branch's role folders, and the role definitions it ran by digest.
    role_dirs: Vec<PathBuf>,
    archived: Vec<(String, serde_json::Value)>,
}

/// The fork of `being`'s moment, its sandboxes planted from the fixture at
/// `fixture_path` (served, or on the disk) with `role_dirs`, the branch's
/// definitions adding `extra_roles`.
fn fork_from(
    land: &Land,
    being: seed::fact::BeingId,
    fixture_path: &Path,
    role_dirs: &[PathBuf],
    seed: u64,
    extra_roles: &[PathBuf],
    arguments: &ForkArguments<'_>,
) -> Result<Forked> {
    let fixture = Fixture::load(fixture_path)?;
    let mut branch_role_dirs = role_dirs.to_vec();
    branch_role_dirs.extend(extra_roles.iter().cloned());
    let (checked, branch_files) = seed::engine::definitions::check_world_recording(&fixture, &branch_role_dirs)?;
    let archived = archived_roles(&checked.substrate);
    let flow = match arguments.flow {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("--flow {}", path.display()))?;
            let value: serde_json::Value =
                serde_json::from_str(&text).with_context(|| format!("--flow {}: not valid JSON", path.display()))?;
            if !value.is_array() {
                bail!("--flow {}: a roleFlow is a JSON array of clauses", path.display());
            }
            Some(value)
        }
        None => None,
    };
    let script = match arguments.script {
        Some(path) => Some(std::fs::read_to_string(path).with_context(|| format!("--script {}", path.display()))?),
        None => None,
    };
    let temporary = tempfile::tempdir()?;
    let branch_dir = match arguments.keep {
        Some(keep) => keep.to_path_buf(),
        None => temporary.path().join("branch"),
    };
    let report = seed::replay::fork::fork(
        land.store(),
        seed::replay::fork::ForkRequest {
            fixture: &fixture,
            seed,
            being,
            at_seq: arguments.at_seq,
            branch_substrate: checked.substrate,
            branch_files: Some(branch_files),
            flow,
            script,
            ticks: arguments.ticks,
            branch_dir: branch_dir.clone(),
            threads: FORK_THREADS,
        },
    )?;
    Ok(Forked { report, role_dirs: branch_role_dirs, archived })
}

fn print_fork_json(report: &seed::replay::fork::ForkReport, kept: Option<&Path>) -> Result<()> {
    let changed: Vec<&seed::replay::fork::MomentComparison> = report.changed_moments().collect();
    let value = json!({
        "being": report.name, "forkTick": report.fork_tick, "lastTick": report.last_tick,
        "prefixFacts": report.prefix_facts, "controlFactsChecked": report.control_facts_checked,
        "controlDiffersAt": report.control_differs_at,
        "moments": report.moments.iter().map(|moment| moment.to_json()).collect::<Vec<_>>(),
        "changed": {
            "moments": changed.len(),
            "roles": changed.iter().filter(|moment| moment.roles_changed()).count(),
            "acts": changed.iter().filter(|moment| moment.act_changed()).count(),
        },
        "othersChanged": report.others_changed.iter().map(|moment| moment.to_json()).collect::<Vec<_>>(),
        "controlWorldHash": report.control_world_hash.to_hex(),
        "branchWorldHash": report.branch_world_hash.to_hex(),
        "kept": kept.map(|path| path.display().to_string()),
    });
    super::print_json(&value)?;
    Ok(())
}

fn describe_side(record: &Option<seed::engine::MomentRecord>) -> (String, String) {
    match record {
        None => ("(no moment)".into(), String::new()),
        Some(record) => {
            let mut roles: Vec<&str> = record.primary.iter().map(String::as_str).collect();
            roles.extend(record.stack.iter().map(String::as_str));
            let act = match &record.call {
                Some(call) => format!("{} {}", record.outcome, call_summary(call)),
                None => record.outcome.clone(),
            };
            (roles.join(" + "), act)
        }
    }
}

/// `do stretch -> /factory`: the verb call in a few words.
fn call_summary(call: &serde_json::Value) -> String {
    let field = |key: &str| call.get(key).and_then(|value| value.as_str()).map(str::to_string);
    [field("action"), field("target").map(|target| format!("-> {target}"))]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
}

fn print_fork_text(report: &seed::replay::fork::ForkReport, at_seq: u64, kept: Option<&Path>) {
    println!(
        "what-if fork of @{} at #{at_seq} (round {}), rounds {}..={}",
        report.name, report.fork_tick, report.fork_tick, report.last_tick
    );
    println!("  the sandbox reproduced the original's first {} facts byte for byte", report.prefix_facts);
    match report.control_differs_at {
        None => println!(
            "  the unchanged control reproduced the original's next {} facts (the diff is against the original)",
            report.control_facts_checked
        ),
        Some(land_seq) => println!(
            "  WARNING: the unchanged control departs from the original at land seq {land_seq} \
             (definitions changed since?); the diff is against the control"
        ),
    }
    for moment in &report.moments {
        let (original_roles, original_act) = describe_side(&moment.original);
        if !moment.changed() {
            println!("  round {:>4}  same      {original_roles}  {original_act}", moment.tick);
            continue;
        }
        let (branch_roles, branch_act) = describe_side(&moment.branch);
        let what = match (moment.roles_changed(), moment.act_changed()) {
            (true, true) => "roles+act",
            (true, false) => "roles",
            _ => "act",
        };
        println!("  round {:>4}  {what:<9} original {original_roles}  {original_act}", moment.tick);
        println!("  {:>10}  {:<9} branch   {branch_roles}  {branch_act}", "", "");
    }
    let changed: Vec<_> = report.changed_moments().collect();
    println!(
        "{} of {} moments of @{} changed: {} wore other roles, {} acted otherwise",
        changed.len(),
        report.moments.len(),
        report.name,
        changed.iter().filter(|moment| moment.roles_changed()).count(),
        changed.iter().filter(|moment| moment.act_changed()).count()
    );
    if report.others_changed.is_empty() {
        println!("no other being's moments changed");
    } else {
        println!("{} moments of other beings changed:", report.others_changed.len());
        for moment in report.others_changed.iter().take(FORK_OTHERS_SHOWN) {
            let (original_roles, original_act) = describe_side(&moment.original);
            let (branch_roles, branch_act) = describe_side(&moment.branch);
            println!(
                "  round {:>4} @{}: {original_roles} {original_act}  ->  {branch_roles} {branch_act}",
                moment.tick, moment.name
            );
        }
    }
    println!("world hash: original {}  branch {}", report.control_world_hash.short(), report.branch_world_hash.short());
    if let Some(kept) = kept {
        println!("kept the branch at {} (seed --land {} replay @{})", kept.display(), kept.display(), report.name);
    }
}

/// Other beings' changed moments listed in the text output (all are in --json).
const FORK_OTHERS_SHOWN: usize = 20;

/// `seed replay --all`: every being's moments, recomputed and compared.
pub fn replay_all(
    land_dir: &Path,
    fixture: Option<&Path>,
    threads: usize,
    use_checkpoint: bool,
    json: bool,
) -> Result<ExitCode> {
    if threads == 0 {
        bail!("--threads must be at least 1");
    }
    let files = ReplayFiles::load(land_dir, fixture)?;
    let land = Land::open_read_only(land_dir)?;
    refuse_a_being_mirror(&land)?;
    // An unreadable checkpoint is not fatal: every signature is checked instead.
    let (checkpoint, mut checkpoint_note) = match use_checkpoint.then(|| land.verified_checkpoint()) {
        None | Some(Ok(None)) => (None, None),
        Some(Ok(Some(checkpoint))) => (Some(checkpoint), None),
        Some(Err(error)) => (None, Some(format!("checkpoint not used: {error}"))),
    };
    let trusted = checkpoint
        .as_ref()
        .map(|checkpoint| seed::check::checkpoint::TrustedCheckpoint { checkpoint, root: land.root() });
    // The wall clock measures the run for the summary only.
    let started = std::time::Instant::now();
    let watcher = super::progress::for_command("seed replay --all");
    let shelf = seed::snapshots::shelf_claims(land_dir);
    let definitions = files.definitions(land.store());
    let report =
        seed::replay::land::replay_land(land.store(), &definitions, threads, trusted, &shelf.claims, &*watcher);
    watcher.finish();
    let report = report.map_err(|error| files.explain(error))?;
    if let Some(reason) = &report.checkpoint_refused {
        checkpoint_note = Some(format!("checkpoint not used: {reason}"));
    } else if report.signatures_covered > 0 {
        checkpoint_note = Some(format!(
            "checkpoint: {} signatures vouched for by the last `seed verify`, {} checked now",
            report.signatures_covered,
            report.facts_verified - report.signatures_covered
        ));
    }
    let elapsed_ms = started.elapsed().as_millis() as u64;
    let per_second = (report.moments * 1000).checked_div(elapsed_ms).unwrap_or(0);
    let name_of = |being: &seed::fact::BeingId| {
        let genesis = land.store().reel(being, 0, 1).ok().and_then(|facts| facts.into_iter().next());
        genesis
            .and_then(|stored| stored.fact.body_as::<seed::fact::body::GenesisBody>().ok())
            .map_or_else(|| being.short(), |genesis| genesis.name)
    };
    if json {
        let value = json!({
            "beings": report.beings, "factsVerified": report.facts_verified, "problems": report.problems,
            "moments": report.moments, "divergences": report.divergences_total,
            "firstDivergences": report.divergences.iter().map(|(being, divergence)| json!({
                "being": name_of(being), "seq": divergence.seq, "landSeq": divergence.land_seq,
                "cause": divergence.cause.to_json(),
                "fields": divergence.differences.iter().map(|difference| &difference.field).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "elapsedMs": elapsed_ms, "momentsPerSecond": per_second,
            "signaturesCovered": report.signatures_covered, "checkpoint": checkpoint_note,
            "snapshotsNotChecked": shelf.other_formats.iter().map(|(cursor, format)| json!({
                "cursor": cursor, "format": format,
            })).collect::<Vec<_>>(),
        });
        super::print_json(&value)?;
    } else {
        for problem in &report.problems {
            println!("PROBLEM {problem}");
        }
        if let Some(note) = &checkpoint_note {
            println!("{note}");
        }
        for (cursor, format) in &shelf.other_formats {
            let format =
                format.map_or_else(|| "no world format".to_string(), |format| format!("world format {format}"));
            println!(
                "the world snapshot at cursor {cursor} was not checked: it is of {format}, written by another build \
                 (this one writes {}); `seed reindex` writes it again",
                seed::world::snapshot::WORLD_SNAPSHOT_FORMAT_VERSION
            );
        }
        for (being, divergence) in &report.divergences {
            let fields: Vec<&str> = divergence.differences.iter().map(|difference| difference.field.as_str()).collect();
            println!(
                "divergence: @{} #{} (land {}): {} [{}]",
                name_of(being),
                divergence.seq,
                divergence.land_seq,
                divergence.cause.label(),
                fields.join(", ")
            );
        }
        let verdict = if report.clean() { "every moment matches" } else { "DIVERGED" };
        println!(
            "{} beings, {} facts verified, {} moments replayed, {} divergence(s) in {elapsed_ms} ms ({per_second} moments/s): {verdict}",
            report.beings, report.facts_verified, report.moments, report.divergences_total
        );
    }
    Ok(if report.clean() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
