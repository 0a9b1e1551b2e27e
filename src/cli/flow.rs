//! `seed flow eval` and `seed flow check`: the roleFlow evaluator for role
//! authors, on files. Bad input exits 2 with the path of the offending element.

use anyhow::Result;
use seed::fact::body::Cognition;
use seed::roles::definition::RoleRegistry;
use seed::roles::flow::{BoundFlow, ClauseOutcome, PrimarySource, Walk};
use seed::roles::{compose, OpenContext, RoleFlow};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit code for bad input files (clap uses the same for bad arguments).
const EXIT_BAD_INPUT: u8 = 2;

fn bad_input(message: String) -> Result<ExitCode> {
    eprintln!("error: {message}");
    Ok(ExitCode::from(EXIT_BAD_INPUT))
}

/// `roles/` and every `extensions/*/roles/` under the current folder.
fn default_role_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("roles")];
    if let Ok(entries) = std::fs::read_dir("extensions") {
        let mut extension_dirs: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.path().join("roles"))
            .filter(|p| p.is_dir())
            .collect();
        extension_dirs.sort();
        dirs.extend(extension_dirs);
    }
    dirs
}

fn read_json(path: &Path, what: &str) -> std::result::Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("{what} {}: {error}", path.display()))?;
    serde_json::from_str(&text).map_err(|error| format!("{what} {}: not valid JSON: {error}", path.display()))
}

fn load_roles(dirs: &[PathBuf]) -> (RoleRegistry, Vec<String>) {
    let dirs = if dirs.is_empty() { default_role_dirs() } else { dirs.to_vec() };
    let (registry, report) = RoleRegistry::load_dirs(&dirs);
    let mut problems: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    for (name, earlier, later) in &report.overridden {
        problems.push(format!("note: role {name:?} from {earlier} is overridden by {later}"));
    }
    (registry, problems)
}

fn read_flow(path: &Path, registry: &RoleRegistry) -> std::result::Result<BoundFlow, String> {
    let value = read_json(path, "flow")?;
    let flow = RoleFlow::from_json(&value).map_err(|error| format!("flow {}: {error}", path.display()))?;
    flow.bind(registry, None).map_err(|error| format!("flow {}: {error}", path.display()))
}

pub fn eval(
    flow: &Path,
    context: &Path,
    role_dirs: &[PathBuf],
    cognition: Option<Cognition>,
    as_json: bool,
) -> Result<ExitCode> {
    let (registry, load_problems) = load_roles(role_dirs);
    for problem in &load_problems {
        eprintln!("warning: {problem}");
    }
    let bound = match read_flow(flow, &registry) {
        Ok(bound) => bound,
        Err(message) => return bad_input(message),
    };
    let context_value = match read_json(context, "context") {
        Ok(value) => value,
        Err(message) => return bad_input(message),
    };
    let context = match OpenContext::from_json(&context_value) {
        Ok(context) => context,
        Err(error) => return bad_input(format!("context {}: {error}", context.display())),
    };
    let cognition = cognition
        .or_else(|| match context.get("me.cognition") {
            Some(Value::String(text)) => serde_json::from_value(Value::String(text.clone())).ok(),
            _ => None,
        })
        .unwrap_or(Cognition::Scripted);
    let walk = bound.walk(&context, cognition);
    let composed = compose(walk.primary.as_ref(), &walk.modifiers);
    let prompt = composed.render_prompt(&context);
    let list = |entries: &[seed::roles::CanEntry]| entries.iter().map(|entry| entry.to_json()).collect::<Vec<_>>();
    if as_json {
        let output = json!({
            "primary": composed.primary.as_deref(),
            "primarySource": primary_source(&walk),
            "stack": composed.stack.iter().map(|name| name.as_ref()).collect::<Vec<_>>(),
            "canSee": list(&composed.can_see),
            "canDo": list(&composed.can_do),
            "canSummon": list(&composed.can_summon),
            "canBe": list(&composed.can_be),
            "see": composed.see.iter().map(|name| name.as_ref()).collect::<Vec<_>>(),
            "selfContinue": composed.self_continue,
            "orientation": composed.orientation.as_str(),
            "cognition": cognition.as_str(),
            "prompt": prompt,
            "trace": trace_json(&bound, &walk),
            "digest": composed.digest().to_hex(),
        });
        println!("{}", serde_json::to_string_pretty(&output)?);
    } else {
        println!("primary: {} ({})", composed.primary.as_deref().unwrap_or("none"), primary_source(&walk));
        let stack: Vec<&str> = composed.stack.iter().map(|name| name.as_ref()).collect();
        println!("stack:   {}", if stack.is_empty() { "—".to_string() } else { stack.join(", ") });
        let show =
            |entries: &[seed::roles::CanEntry]| entries.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        println!("canSee:    {}", show(&composed.can_see));
        println!("canDo:     {}", show(&composed.can_do));
        println!("canSummon: {}", show(&composed.can_summon));
        println!("canBe:     {}", show(&composed.can_be));
        println!("digest:  {}", composed.digest().to_hex());
        println!("why:");
        for line in bound.explain(&walk) {
            println!("  {line}");
        }
        println!("prompt:\n{prompt}");
    }
    Ok(ExitCode::SUCCESS)
}

fn primary_source(walk: &Walk) -> String {
    match walk.primary_source {
        PrimarySource::Clause(index) => format!("clause {index}"),
        PrimarySource::Default => "defaultRole".to_string(),
        PrimarySource::None => "none: the default role requires another cognition".to_string(),
    }
}

fn trace_json(bound: &BoundFlow, walk: &Walk) -> Vec<Value> {
    let explanations = bound.explain(walk);
    walk.trace
        .iter()
        .zip(explanations)
        .map(|(entry, explanation)| {
            let clause = &bound.flow.clauses[entry.clause];
            let (outcome, key) = match entry.outcome {
                ClauseOutcome::Held => ("held", None),
                ClauseOutcome::Failed(failure) => ("failed", Some(bound.describe_failure(failure).replace('`', ""))),
                ClauseOutcome::SkippedCognition(_) => ("skipped", None),
                ClauseOutcome::NotReached => ("not-reached", None),
            };
            json!({
                "clause": entry.clause,
                "role": clause.role,
                "stack": clause.stack,
                "outcome": outcome,
                "failedOn": key,
                "explanation": explanation,
            })
        })
        .collect()
}

pub fn check(flow: &Path, role_dirs: &[PathBuf]) -> Result<ExitCode> {
    let (registry, load_problems) = load_roles(role_dirs);
    let errors: Vec<&String> = load_problems.iter().filter(|problem| !problem.starts_with("note:")).collect();
    for problem in &load_problems {
        eprintln!(
            "{}",
            if problem.starts_with("note:") { problem.clone() } else { format!("error: role file {problem}") }
        );
    }
    let bound = match read_flow(flow, &registry) {
        Ok(bound) => bound,
        Err(message) => return bad_input(message),
    };
    let warnings = bound.flow.key_warning_lines();
    for warning in &warnings {
        println!("warning: {warning}");
    }
    let subscriptions = bound.flow.world_subscriptions();
    println!(
        "{}: {} clause(s), {} warning(s){}",
        flow.display(),
        bound.flow.clauses.len(),
        warnings.len(),
        if subscriptions.is_empty() { String::new() } else { format!("; wakes on {}", subscriptions.join(", ")) }
    );
    if errors.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::from(EXIT_BAD_INPUT))
    }
}
