//! `seed replay`: rebuild a being's moments from its reel and compare them.

use anyhow::{bail, Context, Result};
use seed::land::Land;
use seed::replay::{replay_being, ReplayOptions, ReplayReport};
use seed::sim::fixture::Fixture;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The file in a land folder that names the fixture whose definitions (roles,
/// extensions) its moments used; `seed sim --land` writes it.
pub const DEFINITIONS_FILE: &str = "definitions.toml";

#[derive(serde::Serialize, serde::Deserialize)]
struct Definitions {
    fixture: PathBuf,
}

/// Records, beside the land, the fixture a simulation ran (absolute path).
pub fn record_definitions(land_dir: &Path, fixture: &Path) -> Result<()> {
    let fixture = fixture.canonicalize().with_context(|| format!("{}", fixture.display()))?;
    let text = toml::to_string(&Definitions { fixture })?;
    std::fs::write(land_dir.join(DEFINITIONS_FILE), text)
        .with_context(|| format!("writing {}", land_dir.join(DEFINITIONS_FILE).display()))?;
    Ok(())
}

fn definitions_fixture(land_dir: &Path, given: Option<&Path>) -> Result<PathBuf> {
    if let Some(given) = given {
        return Ok(given.to_path_buf());
    }
    let path = land_dir.join(DEFINITIONS_FILE);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "{} is missing: pass --fixture FILE (the world whose roles and extensions the moments used)",
            path.display()
        )
    })?;
    let definitions: Definitions = toml::from_str(&text).with_context(|| format!("{}", path.display()))?;
    Ok(definitions.fixture)
}

pub struct ReplayArguments<'a> {
    pub being: &'a str,
    pub fixture: Option<&'a Path>,
    pub from: Option<u64>,
    pub to: Option<u64>,
    pub keep_going: bool,
    pub json: bool,
}

pub fn replay(land_dir: &Path, arguments: ReplayArguments<'_>) -> Result<ExitCode> {
    if let (Some(from), Some(to)) = (arguments.from, arguments.to) {
        if from > to {
            bail!("--from {from} is after --to {to}");
        }
    }
    let fixture_path = definitions_fixture(land_dir, arguments.fixture)?;
    let fixture = Fixture::load(&fixture_path)?;
    let (substrate, _) = seed::sim::substrate_for(&fixture, &[])?;
    let land = Land::open(land_dir)?;
    let being = land.resolve(arguments.being)?;
    let options = ReplayOptions {
        from_seq: arguments.from.unwrap_or(0),
        to_seq: arguments.to.unwrap_or(u64::MAX),
        keep_going: arguments.keep_going,
    };
    let report = replay_being(land.store(), &substrate, being, options)?;
    if arguments.json {
        print_json(&report)?;
    } else {
        print_text(&report);
    }
    Ok(if report.clean() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn print_json(report: &ReplayReport) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for moment in &report.moments {
        let line = json!({
            "seq": moment.seq, "landSeq": moment.land_seq, "storedTimeMs": moment.stored_time_ms,
            "wake": moment.act.wake, "cursor": moment.act.cursor,
            "primary": moment.act.primary, "stack": moment.act.stack.iter().map(|used| &used.name).collect::<Vec<_>>(),
            "clauses": moment.clauses, "composed": moment.composed, "face": moment.face,
            "act": {"call": moment.act.call, "content": moment.act.content},
            "effects": moment.act.effects, "matches": moment.matches,
        });
        writeln!(out, "{line}")?;
    }
    let summary = json!({
        "being": report.being.to_hex(), "name": report.name, "factsVerified": report.facts_verified,
        "moments": report.moments.len(), "problems": report.problems, "stoppedEarly": report.stopped_early,
        "divergences": report.divergences.iter().map(|divergence| json!({
            "seq": divergence.seq, "landSeq": divergence.land_seq, "cause": divergence.cause.to_json(),
            "differences": divergence.differences.iter().map(|difference| json!({
                "field": difference.field, "expected": difference.expected, "actual": difference.actual,
            })).collect::<Vec<_>>(),
            "context": divergence.context,
        })).collect::<Vec<_>>(),
    });
    writeln!(out, "{}", json!({ "summary": summary }))?;
    Ok(())
}

fn print_text(report: &ReplayReport) {
    println!("replay of @{} ({})", report.name, report.being.short());
    for problem in &report.problems {
        println!("  PROBLEM {problem}");
    }
    for moment in &report.moments {
        let act = &moment.act;
        let wake = serde_json::to_string(&act.wake).unwrap_or_default();
        println!(
            "#{} land {} time {} cursor {} wake {wake}  {}",
            moment.seq,
            moment.land_seq,
            moment.stored_time_ms,
            act.cursor,
            if moment.matches { "ok" } else { "DIVERGES" }
        );
        let stack: Vec<&str> = act.stack.iter().map(|used| used.name.as_str()).collect();
        println!("    roles    {}", stack.join(" + "));
        for clause in &moment.clauses {
            println!("      {clause}");
        }
        println!("    act      {}", serde_json::to_string(&act.call).unwrap_or_default());
        if let Some(content) = &act.content {
            println!("    prose    {content}");
        }
        if !act.effects.is_empty() {
            println!("    effects  {}", serde_json::to_string(&act.effects).unwrap_or_default());
        }
    }
    for divergence in &report.divergences {
        println!("divergence at #{} (land {}): {}", divergence.seq, divergence.land_seq, divergence.cause.label());
        match &divergence.cause {
            seed::replay::DivergenceCause::DefinitionChanged { roles } => {
                for change in roles {
                    let current = change.current.map_or("(no longer defined)".to_string(), |digest| digest.short());
                    println!("    role {}: recorded {} now {current}", change.role, change.recorded.short());
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
    let verdict = if report.clean() { "every moment matches" } else { "DIVERGED" };
    let stopped = if report.stopped_early { " (stopped at the first; --keep-going to go on)" } else { "" };
    println!(
        "{} facts verified, {} moments replayed, {} divergence(s): {verdict}{stopped}",
        report.facts_verified,
        report.moments.len(),
        report.divergences.len()
    );
}
