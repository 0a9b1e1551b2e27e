//! `seed flow eval` and `seed flow check`: the roleFlow evaluator for role
//! authors, on files. Bad input exits 2 with the path of the offending element.

use super::{bad_input, EXIT_BAD_INPUT};
use anyhow::Result;
use seed::fact::body::Cognition;
use seed::roles::definition::RoleRegistry;
use seed::roles::flow::{BoundFlow, ClauseOutcome, PrimarySource, Walk};
use seed::roles::{compose, OpenContext, RoleFlow};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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

/// Where a flow's roles are looked for: a fixture's world (its extensions'
/// role folders, then its own), then `--roles` folders; without either,
/// roles/ and extensions/*/roles/ under the current folder.
pub struct RoleSources {
    pub fixture: Option<PathBuf>,
    pub roles: Vec<PathBuf>,
}

impl RoleSources {
    fn folders(&self) -> std::result::Result<Vec<PathBuf>, String> {
        let mut dirs = Vec::new();
        if let Some(path) = &self.fixture {
            let fixture = seed::engine::fixture::Fixture::load(path).map_err(|error| error.to_string())?;
            dirs.extend(fixture.load_extensions().role_dirs());
            dirs.extend(fixture.role_dirs());
        }
        dirs.extend(self.roles.iter().cloned());
        if self.fixture.is_none() && self.roles.is_empty() {
            dirs = default_role_dirs();
        }
        Ok(dirs)
    }
}

/// The roles found, the folders searched, and what loading them found wrong.
struct LoadedRoles {
    registry: RoleRegistry,
    folders: Vec<PathBuf>,
    problems: Vec<String>,
}

impl LoadedRoles {
    fn folder_list(&self) -> String {
        let list: Vec<String> = self.folders.iter().map(|dir| dir.display().to_string()).collect();
        if list.is_empty() {
            "no folder".to_string()
        } else {
            list.join(", ")
        }
    }
}

fn load_roles(sources: &RoleSources) -> std::result::Result<LoadedRoles, String> {
    let folders = sources.folders()?;
    let (registry, report) = RoleRegistry::load_dirs(&folders);
    let mut problems: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    for (name, earlier, later) in &report.overridden {
        problems.push(format!("note: role {name:?} from {earlier} is overridden by {later}"));
    }
    Ok(LoadedRoles { registry, folders, problems })
}

fn read_flow(path: &Path, roles: &LoadedRoles) -> std::result::Result<BoundFlow, String> {
    let value = read_json(path, "flow")?;
    let flow = RoleFlow::from_json(&value).map_err(|error| format!("flow {}: {error}", path.display()))?;
    flow.bind(&roles.registry, None).map_err(|error| {
        format!(
            "flow {}: {error} (roles searched in {}; name a world's roles with --fixture FILE or folders with --roles DIR)",
            path.display(),
            roles.folder_list()
        )
    })
}

pub fn eval(
    flow: &Path,
    context: &Path,
    sources: &RoleSources,
    cognition: Option<Cognition>,
    as_json: bool,
) -> Result<ExitCode> {
    let roles = match load_roles(sources) {
        Ok(roles) => roles,
        Err(message) => return bad_input(message, as_json),
    };
    for problem in &roles.problems {
        eprintln!("warning: {problem}");
    }
    let bound = match read_flow(flow, &roles) {
        Ok(bound) => bound,
        Err(message) => return bad_input(message, as_json),
    };
    let context_value = match read_json(context, "context") {
        Ok(value) => value,
        Err(message) => return bad_input(message, as_json),
    };
    let context = match OpenContext::from_json(&context_value) {
        Ok(context) => context,
        Err(error) => return bad_input(format!("context {}: {error}", context.display()), as_json),
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
            "roleFolders": roles.folders.iter().map(|dir| dir.display().to_string()).collect::<Vec<_>>(),
        });
        super::print_json(&output)?;
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
        println!("roles:   {} role(s) from {}", roles.registry.len(), roles.folder_list());
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

pub fn check(flow: &Path, sources: &RoleSources, as_json: bool) -> Result<ExitCode> {
    let roles = match load_roles(sources) {
        Ok(roles) => roles,
        Err(message) => return bad_input(message, as_json),
    };
    let errors: Vec<&String> = roles.problems.iter().filter(|problem| !problem.starts_with("note:")).collect();
    for problem in &roles.problems {
        eprintln!(
            "{}",
            if problem.starts_with("note:") { problem.clone() } else { format!("error: role file {problem}") }
        );
    }
    let bound = match read_flow(flow, &roles) {
        Ok(bound) => bound,
        Err(message) => return bad_input(message, as_json),
    };
    let warnings = bound.flow.key_warning_lines();
    let subscriptions = bound.flow.world_subscriptions();
    if as_json {
        let output = json!({
            "flow": flow.display().to_string(),
            "clauses": bound.flow.clauses.len(),
            "warnings": warnings,
            "wakesOn": subscriptions,
            "roleFolders": roles.folders.iter().map(|dir| dir.display().to_string()).collect::<Vec<_>>(),
            "roles": roles.registry.len(),
            "roleFileErrors": errors,
        });
        super::print_json(&output)?;
    } else {
        for warning in &warnings {
            println!("warning: {warning}");
        }
        println!(
            "{}: {} clause(s), {} warning(s){}",
            flow.display(),
            bound.flow.clauses.len(),
            warnings.len(),
            if subscriptions.is_empty() { String::new() } else { format!("; wakes on {}", subscriptions.join(", ")) }
        );
        println!("roles: {} role(s) from {}", roles.registry.len(), roles.folder_list());
    }
    if errors.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::from(EXIT_BAD_INPUT))
    }
}
