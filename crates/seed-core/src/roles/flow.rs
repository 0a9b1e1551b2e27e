//! The roleFlow: a being's ordered clauses, and the walk that picks the roles
//! it wears in a moment. Pure: the same flow, roles, context and cognition
//! always give the same walk.
//!
//! The walk: the primary role is the first non-stacked clause whose `when`
//! holds (no `when` always holds), else the default role; the modifiers are
//! every stacked clause whose `when` holds, in order. A role whose
//! `requiredCognition` differs from the effective cognition is skipped.

use super::context::OpenContext;
use super::definition::{Role, RoleRegistry};
use super::when::{self, check_key, Condition, Failure, KeyWarning, Lookup, PathTable, WhenError};
use crate::fact::body::Cognition;
use serde_json::Value;
use std::sync::Arc;

/// Most clauses one roleFlow may have.
pub const ROLE_FLOW_CLAUSES_MAX: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct FlowError {
    /// Where in the flow, e.g. `[2].when.time.hour`, or `defaultRole`.
    pub path: String,
    pub reason: String,
}

impl From<WhenError> for FlowError {
    fn from(error: WhenError) -> FlowError {
        FlowError { path: error.path, reason: error.reason }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    pub stack: bool,
    pub when: Option<Condition>,
    pub role: String,
    /// The `when` exactly as written, for traces and editors.
    pub when_source: Option<Value>,
}

/// A parsed roleFlow, with its `when`s compiled.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleFlow {
    pub default_role: Option<String>,
    pub clauses: Vec<Clause>,
    pub paths: PathTable,
}

fn flow_error(path: impl Into<String>, reason: impl Into<String>) -> FlowError {
    FlowError { path: path.into(), reason: reason.into() }
}

impl RoleFlow {
    /// Reads a flow: a JSON array of clauses, or `{"defaultRole": ..., "flow": [...]}`.
    pub fn from_json(value: &Value) -> Result<RoleFlow, FlowError> {
        let (default_role, clauses) = match value {
            Value::Array(clauses) => (None, clauses),
            Value::Object(object) => {
                if let Some(unknown) = object.keys().find(|key| !["defaultRole", "flow"].contains(&key.as_str())) {
                    return Err(flow_error(
                        unknown.clone(),
                        "unknown field (a flow object has `defaultRole` and `flow`)",
                    ));
                }
                let default_role = match object.get("defaultRole") {
                    None => None,
                    Some(Value::String(name)) => Some(name.clone()),
                    Some(_) => return Err(flow_error("defaultRole", "must be a role name")),
                };
                match object.get("flow") {
                    Some(Value::Array(clauses)) => (default_role, clauses),
                    Some(_) => return Err(flow_error("flow", "must be an array of clauses")),
                    None => return Err(flow_error("flow", "missing (an array of clauses)")),
                }
            }
            _ => return Err(flow_error("(flow)", "a flow is an array of clauses or {\"defaultRole\", \"flow\"}")),
        };
        if clauses.len() > ROLE_FLOW_CLAUSES_MAX {
            return Err(flow_error(
                "(flow)",
                format!("{} clauses, over the limit of {ROLE_FLOW_CLAUSES_MAX}", clauses.len()),
            ));
        }
        let mut paths = PathTable::default();
        let mut compiled = Vec::with_capacity(clauses.len());
        for (index, clause) in clauses.iter().enumerate() {
            let at = format!("[{index}]");
            let Value::Object(fields) = clause else {
                return Err(flow_error(at, "a clause is an object with `role` (and `when`, `stack`)"));
            };
            if let Some(unknown) = fields.keys().find(|key| !["when", "role", "stack"].contains(&key.as_str())) {
                return Err(flow_error(
                    format!("{at}.{unknown}"),
                    "unknown field (a clause has `role`, `when`, `stack`)",
                ));
            }
            let role = match fields.get("role") {
                Some(Value::String(name)) => name.clone(),
                Some(_) => return Err(flow_error(format!("{at}.role"), "must be a role name")),
                None => return Err(flow_error(format!("{at}.role"), "missing")),
            };
            let stack = match fields.get("stack") {
                None => false,
                Some(Value::Bool(flag)) => *flag,
                Some(_) => return Err(flow_error(format!("{at}.stack"), "must be true or false")),
            };
            let when = match fields.get("when") {
                None => None,
                Some(source) => Some(when::compile(source, &mut paths, &format!("{at}.when"))?),
            };
            compiled.push(Clause { stack, when, role, when_source: fields.get("when").cloned() });
        }
        Ok(RoleFlow { default_role, clauses: compiled, paths })
    }

    /// Unknown context keys and likely typos, with the clause that reads them.
    pub fn key_warnings(&self) -> Vec<(usize, KeyWarning)> {
        let mut warnings = Vec::new();
        for (index, clause) in self.clauses.iter().enumerate() {
            let mut keys = Vec::new();
            if let Some(when) = &clause.when {
                when.keys(&mut keys);
            }
            for key in keys {
                if let Some(warning) = check_key(self.paths.path(key)) {
                    warnings.push((index, warning));
                }
            }
        }
        warnings
    }

    /// [`RoleFlow::key_warnings`] as people read them, one line each:
    /// `clause [INDEX] (ROLE): WARNING` (`seed flow check` and the portal's
    /// flow preview say the same).
    pub fn key_warning_lines(&self) -> Vec<String> {
        self.key_warnings()
            .iter()
            .map(|(clause, warning)| format!("clause [{clause}] ({}): {warning}", self.clauses[*clause].role))
            .collect()
    }

    /// The `world.*` keys this flow reads: the signals that wake the being.
    pub fn world_subscriptions(&self) -> Vec<String> {
        self.paths.paths().iter().filter(|path| path.starts_with("world.")).cloned().collect()
    }

    /// Whether the flow reads a cascade arrival (a `cascade.` key): a being
    /// wearing it wakes when a cascade signal arrives at its space.
    pub fn reads_cascade(&self) -> bool {
        self.paths.paths().iter().any(|path| path.starts_with("cascade."))
    }

    /// Resolves every role the flow names (and the default) in the registry.
    /// `fallback_default` is the being's own `defaultRole` when the flow has none.
    pub fn bind(self, registry: &RoleRegistry, fallback_default: Option<&str>) -> Result<BoundFlow, FlowError> {
        let mut roles = Vec::with_capacity(self.clauses.len());
        for (index, clause) in self.clauses.iter().enumerate() {
            let role = registry
                .get(&clause.role)
                .ok_or_else(|| flow_error(format!("[{index}].role"), unknown_role(registry, &clause.role)))?;
            roles.push(role.clone());
        }
        let default_name = self.default_role.clone().or_else(|| fallback_default.map(str::to_string));
        let default = match default_name {
            Some(name) => Some(
                registry.get(&name).ok_or_else(|| flow_error("defaultRole", unknown_role(registry, &name)))?.clone(),
            ),
            None => None,
        };
        Ok(BoundFlow { flow: self, roles, default })
    }
}

/// Why a role name does not resolve, with the closest defined name.
fn unknown_role(registry: &RoleRegistry, name: &str) -> String {
    let closest = crate::authoring::closest(name, registry.iter().map(|role| &*role.name));
    match closest {
        Some(close) => format!("no role named {name:?} is defined; did you mean `{close}`?"),
        None => format!("no role named {name:?} is defined"),
    }
}

/// A flow whose role names are resolved against a registry.
#[derive(Debug, Clone)]
pub struct BoundFlow {
    pub flow: RoleFlow,
    roles: Vec<Arc<Role>>,
    default: Option<Arc<Role>>,
}

/// What happened to one clause in a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClauseOutcome {
    /// The `when` held (or there was none) and the role was taken.
    Held,
    /// The `when` did not hold.
    Failed(Failure),
    /// The `when` held but the role requires another cognition.
    SkippedCognition(Cognition),
    /// A primary clause after the primary was found: not evaluated.
    NotReached,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClauseTrace {
    pub clause: usize,
    pub outcome: ClauseOutcome,
}

/// Where the primary role came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrimarySource {
    Clause(usize),
    Default,
    /// The default role requires another cognition: no primary this moment.
    None,
}

#[derive(Debug, Clone)]
pub struct Walk {
    pub primary: Option<Arc<Role>>,
    pub primary_source: PrimarySource,
    pub modifiers: Vec<Arc<Role>>,
    pub trace: Vec<ClauseTrace>,
}

fn fits(role: &Role, cognition: Cognition) -> bool {
    role.required_cognition.is_none_or(|required| required == cognition)
}

impl BoundFlow {
    pub fn role_of(&self, clause: usize) -> &Arc<Role> {
        &self.roles[clause]
    }

    pub fn default_role(&self) -> Option<&Arc<Role>> {
        self.default.as_ref()
    }

    /// The walk. `cognition` is the being's effective cognition this moment.
    pub fn walk(&self, context: &OpenContext, cognition: Cognition) -> Walk {
        let mut lookup = Lookup::new(context, &self.flow.paths);
        let mut primary: Option<(usize, &Arc<Role>)> = None;
        let mut modifiers = Vec::new();
        let mut trace = Vec::with_capacity(self.flow.clauses.len());
        for (index, clause) in self.flow.clauses.iter().enumerate() {
            if !clause.stack && primary.is_some() {
                trace.push(ClauseTrace { clause: index, outcome: ClauseOutcome::NotReached });
                continue;
            }
            let held = match &clause.when {
                Some(condition) => condition.eval(&mut lookup),
                None => Ok(()),
            };
            let role = &self.roles[index];
            let outcome = match held {
                Err(failure) => ClauseOutcome::Failed(failure),
                Ok(()) if !fits(role, cognition) => {
                    ClauseOutcome::SkippedCognition(role.required_cognition.unwrap_or(cognition))
                }
                Ok(()) => {
                    if clause.stack {
                        modifiers.push(role.clone());
                    } else {
                        primary = Some((index, role));
                    }
                    ClauseOutcome::Held
                }
            };
            trace.push(ClauseTrace { clause: index, outcome });
        }
        let (primary, primary_source) = match primary {
            Some((index, role)) => (Some(role.clone()), PrimarySource::Clause(index)),
            None => match &self.default {
                Some(role) if fits(role, cognition) => (Some(role.clone()), PrimarySource::Default),
                _ => (None, PrimarySource::None),
            },
        };
        Walk { primary, primary_source, modifiers, trace }
    }

    /// A clause-by-clause explanation of a walk, for people.
    pub fn explain(&self, walk: &Walk) -> Vec<String> {
        walk.trace
            .iter()
            .map(|entry| {
                let clause = &self.flow.clauses[entry.clause];
                let kind = if clause.stack { "stack" } else { "primary" };
                let what = match entry.outcome {
                    ClauseOutcome::Held => match &clause.when {
                        Some(condition) => {
                            let mut keys = Vec::new();
                            condition.keys(&mut keys);
                            let keys: Vec<&str> = keys.iter().map(|key| self.flow.paths.path(*key)).collect();
                            format!("held on {}", keys.join(", "))
                        }
                        None => "held (no condition)".to_string(),
                    },
                    ClauseOutcome::Failed(failure) => format!("failed: {}", self.describe_failure(failure)),
                    ClauseOutcome::SkippedCognition(required) => {
                        format!("held, but the role requires {} cognition: skipped", required.as_str())
                    }
                    ClauseOutcome::NotReached => "not reached (the primary was already chosen)".to_string(),
                };
                format!("[{}] {kind} {}: {what}", entry.clause, clause.role)
            })
            .collect()
    }

    /// The context keys each clause of a walk read, in the walk's order
    /// (beside [`BoundFlow::explain`], so a page can show the value each had).
    /// A clause not reached, or without a condition, read none.
    pub fn clause_keys(&self, walk: &Walk) -> Vec<Vec<String>> {
        walk.trace
            .iter()
            .map(|entry| match (&self.flow.clauses[entry.clause].when, entry.outcome) {
                (_, ClauseOutcome::NotReached) | (None, _) => Vec::new(),
                (Some(condition), _) => {
                    let mut keys = Vec::new();
                    condition.keys(&mut keys);
                    keys.iter().map(|key| self.flow.paths.path(*key).to_string()).collect()
                }
            })
            .collect()
    }

    pub fn describe_failure(&self, failure: Failure) -> String {
        match failure {
            Failure::Key(path) => format!("`{}`", self.flow.paths.path(path)),
            Failure::Not => "`not` (its condition held)".to_string(),
            Failure::Or => "`or` (no alternative held)".to_string(),
        }
    }
}
