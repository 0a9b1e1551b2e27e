//! The `when` language: conditions over the open context, compiled once and
//! evaluated as a pure function.
//!
//! A `when` is a JSON object. Each key is either a combinator (`not`, `or`,
//! `and`) or a dotted context path; all keys of one object must hold. A path's
//! value is a bare value (equals) or an operator object (`eq`, `ne`, `gt`,
//! `gte`, `lt`, `lte`, `in`, `present`; several operators must all hold).
//!
//! Semantics (documented in docs/roles.md):
//! - a missing key (absent or null) never equals anything: `eq`, `in` and the
//!   comparisons are false, `ne` is true, `present: false` holds;
//! - a type mismatch is false, never an error;
//! - numbers compare numerically, integers and decimals alike (`1 == 1.0`);
//! - the comparisons (`gt`, `gte`, `lt`, `lte`) hold only between numbers.

use super::context::OpenContext;
use serde_json::{Number, Value};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// Deepest nesting of `not` / `or` / `and` a `when` may have.
pub const WHEN_NESTING_DEPTH_MAX: usize = 8;

/// The context keys the substrate fills in; anything else draws a warning.
pub const KNOWN_KEYS: &[&str] = &[
    "verb",
    "caller.role",
    "caller.cognition",
    "caller.name",
    "caller.land",
    "space.name",
    "inHomeSpace",
    "time.hour",
    "time.dayOfWeek",
    "time.sinceLastMoment",
    "me.name",
    "me.cognition",
    "me.previousRole",
    "me.memory.importanceSinceReflection",
    "cascade.depth",
    "cascade.from",
    "cascade.origin",
    "cascade.write",
];
/// Open families of keys: the prefix and how many segments follow it at least.
pub const KNOWN_PREFIXES: &[(&str, usize)] =
    &[("world.", 2), ("space.quality.", 2), ("me.quality.", 2), ("cascade.payload.", 1)];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct WhenError {
    /// Where in the input the problem is, e.g. `[2].when.time.hour`.
    pub path: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    Eq(Value),
    Ne(Value),
    Gt(Number),
    Gte(Number),
    Lt(Number),
    Lte(Number),
    In(Vec<Value>),
    Present(bool),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    All(Vec<Condition>),
    Any(Vec<Condition>),
    Not(Box<Condition>),
    Key { path: u32, tests: Vec<Test> },
}

/// Why a condition did not hold: the first key that failed, or the combinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Key(u32),
    Not,
    Or,
}

/// The distinct context paths a flow reads, each with a small index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathTable {
    paths: Vec<String>,
    index: BTreeMap<String, u32>,
}

impl PathTable {
    pub fn intern(&mut self, path: &str) -> u32 {
        if let Some(index) = self.index.get(path) {
            return *index;
        }
        let index = self.paths.len() as u32;
        self.paths.push(path.to_string());
        self.index.insert(path.to_string(), index);
        index
    }

    pub fn path(&self, index: u32) -> &str {
        &self.paths[index as usize]
    }

    pub fn paths(&self) -> &[String] {
        &self.paths
    }
}

/// Looks paths up in the context at most once per evaluation.
pub struct Lookup<'a> {
    context: &'a OpenContext,
    paths: &'a PathTable,
    cache: Vec<Option<Option<&'a Value>>>,
}

impl<'a> Lookup<'a> {
    pub fn new(context: &'a OpenContext, paths: &'a PathTable) -> Lookup<'a> {
        Lookup { context, paths, cache: vec![None; paths.paths.len()] }
    }

    fn get(&mut self, path: u32) -> Option<&'a Value> {
        let slot = &mut self.cache[path as usize];
        match slot {
            Some(found) => *found,
            None => {
                let found = self.context.get(&self.paths.paths[path as usize]);
                *slot = Some(found);
                found
            }
        }
    }
}

const OPERATORS: &[&str] = &["eq", "ne", "gt", "gte", "lt", "lte", "in", "present"];

/// Compiles a `when` object; `at` is the location used in error paths.
pub fn compile(value: &Value, paths: &mut PathTable, at: &str) -> Result<Condition, WhenError> {
    compile_at(value, paths, at, 0)
}

/// How deep `not` / `or` / `and` nest in a `when` (0: none), as the
/// compiler counts it; what is not a `when` object counts 0.
pub fn nesting_depth(value: &Value) -> usize {
    let Value::Object(object) = value else { return 0 };
    object
        .iter()
        .map(|(key, item)| match (key.as_str(), item) {
            ("not", item) => 1 + nesting_depth(item),
            ("or" | "and", Value::Array(items)) => 1 + items.iter().map(nesting_depth).max().unwrap_or(0),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// The deepest `when` nesting of a roleFlow's clauses (its JSON form).
pub fn flow_nesting_depth(flow: &Value) -> usize {
    flow.as_array().map_or(0, |clauses| {
        clauses.iter().filter_map(|clause| clause.get("when")).map(nesting_depth).max().unwrap_or(0)
    })
}

fn error(path: &str, reason: impl Into<String>) -> WhenError {
    WhenError { path: path.to_string(), reason: reason.into() }
}

fn compile_at(value: &Value, paths: &mut PathTable, at: &str, depth: usize) -> Result<Condition, WhenError> {
    if depth > WHEN_NESTING_DEPTH_MAX {
        return Err(error(at, format!("nested deeper than {WHEN_NESTING_DEPTH_MAX} levels")));
    }
    let Value::Object(object) = value else {
        return Err(error(at, "a `when` must be an object of keys and conditions"));
    };
    let mut all = Vec::with_capacity(object.len());
    for (key, item) in object {
        let here = format!("{at}.{key}");
        let condition = match key.as_str() {
            "not" => Condition::Not(Box::new(compile_at(item, paths, &here, depth + 1)?)),
            "or" | "and" => {
                let Value::Array(items) = item else {
                    return Err(error(&here, format!("`{key}` needs an array of `when` objects")));
                };
                if items.is_empty() {
                    return Err(error(&here, format!("`{key}` needs at least one `when` object")));
                }
                let mut children = Vec::with_capacity(items.len());
                for (index, child) in items.iter().enumerate() {
                    children.push(compile_at(child, paths, &format!("{here}[{index}]"), depth + 1)?);
                }
                if key == "or" {
                    Condition::Any(children)
                } else {
                    Condition::All(children)
                }
            }
            _ => {
                check_path_syntax(key, &here)?;
                Condition::Key { path: paths.intern(key), tests: compile_tests(item, &here)? }
            }
        };
        all.push(condition);
    }
    Ok(if all.len() == 1 { all.pop().expect("one condition") } else { Condition::All(all) })
}

fn check_path_syntax(key: &str, here: &str) -> Result<(), WhenError> {
    if key.split('.').any(|segment| segment.is_empty() || segment.chars().any(char::is_whitespace)) {
        return Err(error(here, format!("{key:?} is not a dotted context path")));
    }
    Ok(())
}

fn compile_tests(item: &Value, here: &str) -> Result<Vec<Test>, WhenError> {
    match item {
        Value::Object(operators) => {
            if operators.is_empty() {
                return Err(error(here, "empty operator object"));
            }
            let mut tests = Vec::with_capacity(operators.len());
            for (operator, operand) in operators {
                let at = format!("{here}.{operator}");
                let number = |operand: &Value| match operand {
                    Value::Number(number) => Ok(number.clone()),
                    _ => Err(error(&at, format!("`{operator}` needs a number"))),
                };
                tests.push(match operator.as_str() {
                    "eq" => Test::Eq(operand.clone()),
                    "ne" => Test::Ne(operand.clone()),
                    "gt" => Test::Gt(number(operand)?),
                    "gte" => Test::Gte(number(operand)?),
                    "lt" => Test::Lt(number(operand)?),
                    "lte" => Test::Lte(number(operand)?),
                    "in" => match operand {
                        Value::Array(options) => Test::In(options.clone()),
                        _ => return Err(error(&at, "`in` needs an array of values")),
                    },
                    "present" => match operand {
                        Value::Bool(flag) => Test::Present(*flag),
                        _ => return Err(error(&at, "`present` needs true or false")),
                    },
                    unknown => {
                        let hint = crate::authoring::closest(unknown, OPERATORS.iter().copied())
                            .map(|close| format!("; did you mean `{close}`?"))
                            .unwrap_or_default();
                        return Err(error(
                            &at,
                            format!("unknown operator `{unknown}` (operators: {}){hint}", OPERATORS.join(", ")),
                        ));
                    }
                });
            }
            Ok(tests)
        }
        Value::Null => Err(error(here, "null never matches; use `{\"present\": false}` to match a missing key")),
        bare => Ok(vec![Test::Eq(bare.clone())]),
    }
}

/// Numeric comparison across integers and decimals.
fn compare_numbers(left: &Number, right: &Number) -> Option<Ordering> {
    if let (Some(a), Some(b)) = (left.as_i64(), right.as_i64()) {
        return Some(a.cmp(&b));
    }
    if let (Some(a), Some(b)) = (left.as_u64(), right.as_u64()) {
        return Some(a.cmp(&b));
    }
    left.as_f64()?.partial_cmp(&right.as_f64()?)
}

fn values_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(a), Value::Number(b)) => compare_numbers(a, b) == Some(Ordering::Equal),
        _ => left == right,
    }
}

impl Test {
    pub fn holds(&self, value: Option<&Value>) -> bool {
        let ordered = |bound: &Number, accept: fn(Ordering) -> bool| match value {
            Some(Value::Number(number)) => compare_numbers(number, bound).is_some_and(accept),
            _ => false,
        };
        match self {
            Test::Eq(expected) => value.is_some_and(|value| values_equal(value, expected)),
            Test::Ne(expected) => !value.is_some_and(|value| values_equal(value, expected)),
            Test::Gt(bound) => ordered(bound, |o| o == Ordering::Greater),
            Test::Gte(bound) => ordered(bound, |o| o != Ordering::Less),
            Test::Lt(bound) => ordered(bound, |o| o == Ordering::Less),
            Test::Lte(bound) => ordered(bound, |o| o != Ordering::Greater),
            Test::In(options) => value.is_some_and(|value| options.iter().any(|option| values_equal(value, option))),
            Test::Present(expected) => value.is_some() == *expected,
        }
    }
}

impl Condition {
    /// Evaluates the condition; on failure, says which key (or combinator) failed.
    pub fn eval(&self, lookup: &mut Lookup<'_>) -> Result<(), Failure> {
        match self {
            Condition::Key { path, tests } => {
                let value = lookup.get(*path);
                if tests.iter().all(|test| test.holds(value)) {
                    Ok(())
                } else {
                    Err(Failure::Key(*path))
                }
            }
            Condition::All(children) => children.iter().try_for_each(|child| child.eval(lookup)),
            Condition::Any(children) => {
                if children.iter().any(|child| child.eval(lookup).is_ok()) {
                    Ok(())
                } else {
                    Err(Failure::Or)
                }
            }
            Condition::Not(inner) => match inner.eval(lookup) {
                Ok(()) => Err(Failure::Not),
                Err(_) => Ok(()),
            },
        }
    }

    /// Every path this condition reads, in the order written.
    pub fn keys(&self, out: &mut Vec<u32>) {
        match self {
            Condition::Key { path, .. } => {
                if !out.contains(path) {
                    out.push(*path);
                }
            }
            Condition::All(children) | Condition::Any(children) => children.iter().for_each(|child| child.keys(out)),
            Condition::Not(inner) => inner.keys(out),
        }
    }
}

/// A validator finding that does not block: an unknown key or a likely typo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyWarning {
    pub key: String,
    pub suggestion: Option<String>,
}

impl std::fmt::Display for KeyWarning {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.suggestion {
            Some(suggestion) => write!(formatter, "unknown key `{}`; did you mean `{suggestion}`?", self.key),
            None => write!(formatter, "unknown key `{}` (not a key the substrate fills in)", self.key),
        }
    }
}

/// Warns about a path that is neither a known key nor in a known family.
pub fn check_key(key: &str) -> Option<KeyWarning> {
    if KNOWN_KEYS.contains(&key) {
        return None;
    }
    for (prefix, segments) in KNOWN_PREFIXES {
        if let Some(rest) = key.strip_prefix(prefix) {
            if rest.split('.').count() >= *segments {
                return None;
            }
            return Some(KeyWarning { key: key.to_string(), suggestion: Some(format!("{prefix}<namespace>.<key>")) });
        }
    }
    if let Some(close) = crate::authoring::closest(key, KNOWN_KEYS.iter().copied()) {
        return Some(KeyWarning { key: key.to_string(), suggestion: Some(close.to_string()) });
    }
    // A misspelt family prefix: `wrold.court.x` → `world.court.x`.
    for (prefix, _) in KNOWN_PREFIXES {
        let depth = prefix.matches('.').count();
        let parts: Vec<&str> = key.splitn(depth + 1, '.').collect();
        if parts.len() == depth + 1 {
            let head = parts[..depth].join(".") + ".";
            if strsim::damerau_levenshtein(&head, prefix) <= 2 {
                return Some(KeyWarning {
                    key: key.to_string(),
                    suggestion: Some(format!("{prefix}{}", parts[depth])),
                });
            }
        }
    }
    Some(KeyWarning { key: key.to_string(), suggestion: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The nesting `when_nesting_depth_max` bounds is the compiler's own:
    /// a `when` nested one level deeper than a ceiling fails to compile.
    #[test]
    fn nesting_depth_counts_not_or_and_as_the_compiler_does() {
        let check = |when: Value, expected: usize| assert_eq!(nesting_depth(&when), expected, "{when}");
        check(json!({"me.name": "ada"}), 0);
        check(json!({"not": {"me.name": "ada"}}), 1);
        check(json!({"or": [{"me.name": "ada"}, {"not": {"not": {"verb": "summon"}}}]}), 3);
        check(json!({"and": [{"a.b": 1}], "not": {"a.b": 2}}), 1);
        check(json!("not a when"), 0);
        let mut deepest = json!({"me.name": "ada"});
        for _ in 0..=WHEN_NESTING_DEPTH_MAX {
            deepest = json!({"not": deepest});
        }
        assert_eq!(nesting_depth(&deepest), WHEN_NESTING_DEPTH_MAX + 1);
        assert!(compile(&deepest, &mut PathTable::default(), "when").is_err(), "the compiler refuses it too");
        let flow = json!([{"role": "a"}, {"role": "b", "when": {"not": {"not": {"x.y": 1}}}}]);
        assert_eq!(flow_nesting_depth(&flow), 2);
    }
}
