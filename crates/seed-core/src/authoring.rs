//! What an author is told about a file: every problem at once, each with
//! the file, line and column it is at and, where one is close, a suggestion.
//!
//! The world check (fixtures, role files, extension manifests, Rhai
//! scripts) reports through [`Problem`]. TOML files are read by
//! [`deserialize_toml_collecting`], which keeps deserializing after a
//! problem (dropping what was wrong) so that one run lists them all, and
//! [`TomlSource`] finds the line of any field by its path
//! (`being[2].home`), for problems found after deserialization.

use serde::de::DeserializeOwned;
use std::fmt;

/// Most problems one file reports; past it the rest are counted, not listed.
pub const FILE_PROBLEMS_LISTED_MAX: usize = 50;

/// A place in a text file, both 1-based; the column counts characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` of `text` (clamped to its end).
    pub fn of_offset(text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |at| at + 1);
        Position { line, column: text[line_start..offset].chars().count() + 1 }
    }
}

/// Whether a finding stops the world from loading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The world does not load until it is fixed.
    Error,
    /// The world loads; the author is told something looks unintended.
    Warning,
}

/// One finding in an author's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub severity: Severity,
    /// The file as the author named it (or its path as found).
    pub file: String,
    pub position: Option<Position>,
    /// Where in the file's structure (`being[2].home`), empty for the whole file.
    pub at: String,
    pub reason: String,
    /// A close name the author may have meant.
    pub suggestion: Option<String>,
}

impl Problem {
    pub fn error(file: impl Into<String>, at: impl Into<String>, reason: impl Into<String>) -> Problem {
        Problem {
            severity: Severity::Error,
            file: file.into(),
            position: None,
            at: at.into(),
            reason: reason.into(),
            suggestion: None,
        }
    }

    pub fn warning(file: impl Into<String>, at: impl Into<String>, reason: impl Into<String>) -> Problem {
        Problem { severity: Severity::Warning, ..Problem::error(file, at, reason) }
    }

    pub fn at_position(mut self, position: Option<Position>) -> Problem {
        self.position = position;
        self
    }

    pub fn suggesting(mut self, suggestion: Option<String>) -> Problem {
        self.suggestion = suggestion;
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// As the CLI's `--json` and the API write it (absent parts are `null`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "severity": match self.severity { Severity::Error => "error", Severity::Warning => "warning" },
            "file": self.file,
            "line": self.position.map(|position| position.line),
            "column": self.position.map(|position| position.column),
            "at": self.at,
            "reason": self.reason,
            "suggestion": self.suggestion,
            "message": self.to_string(),
        })
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.severity == Severity::Warning {
            formatter.write_str("warning: ")?;
        }
        formatter.write_str(&self.file)?;
        if let Some(position) = self.position {
            write!(formatter, ":{}:{}", position.line, position.column)?;
        }
        if !self.at.is_empty() {
            write!(formatter, ": {}", self.at)?;
        }
        write!(formatter, ": {}", self.reason)?;
        if let Some(suggestion) = &self.suggestion {
            write!(formatter, "; did you mean `{suggestion}`?")?;
        }
        Ok(())
    }
}

/// The candidate closest to `word` within two edits, if any (ties: the
/// first in `candidates`' order after sorting by distance, then text).
pub fn closest<'a, I>(word: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    candidates
        .into_iter()
        .filter(|candidate| *candidate != word)
        .map(|candidate| (strsim::damerau_levenshtein(word, candidate), candidate))
        .filter(|(distance, _)| *distance <= 2)
        .min()
        .map(|(_, candidate)| candidate.to_string())
}

/// A script's compile error as a problem of the script's file, at the line
/// and column the compiler points to.
pub fn script_problem(file: &str, error: &crate::script::ScriptError) -> Problem {
    match error {
        crate::script::ScriptError::Compile { what, line, column, .. } => {
            let position = line.map(|line| Position { line, column: column.unwrap_or(1) });
            Problem::error(file, "", format!("the script does not compile: {what}")).at_position(position)
        }
        crate::script::ScriptError::Runtime { reason, line, column } => {
            let position = line.map(|line| Position { line, column: column.unwrap_or(1) });
            // Rhai ends its text with the position, which the prefix now says.
            let reason = match reason.rfind(" (line ") {
                Some(at) if position.is_some() => &reason[..at],
                _ => reason.as_str(),
            };
            Problem::error(file, "", format!("script failed: {reason}")).at_position(position)
        }
        other => Problem::error(file, "", other.to_string()),
    }
}

/// A step of a path into a TOML document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathStep {
    Key(String),
    Index(usize),
}

/// Reads `being[2].home` (or `provides.op[0].script`) into steps.
pub fn parse_path(path: &str) -> Vec<PathStep> {
    let mut steps = Vec::new();
    for part in path.split('.').filter(|part| !part.is_empty()) {
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !key.is_empty() {
            steps.push(PathStep::Key(key.to_string()));
        }
        while let Some(open) = rest.strip_prefix('[') {
            let Some(close) = open.find(']') else { break };
            if let Ok(index) = open[..close].parse() {
                steps.push(PathStep::Index(index));
            }
            rest = &open[close + 1..];
        }
    }
    steps
}

fn path_text(steps: &[PathStep]) -> String {
    let mut text = String::new();
    for step in steps {
        match step {
            PathStep::Key(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            PathStep::Index(index) => text.push_str(&format!("[{index}]")),
        }
    }
    text
}

/// A TOML file's text and syntax tree, to place problems found in it.
pub struct TomlSource {
    text: String,
    document: Option<toml_edit::ImDocument<String>>,
}

impl TomlSource {
    /// Parses `text`; a syntax error is the `Err`, placed at its line and column.
    pub fn parse(file: &str, text: &str) -> Result<TomlSource, Box<Problem>> {
        match toml_edit::ImDocument::parse(text.to_string()) {
            Ok(document) => Ok(TomlSource { text: text.to_string(), document: Some(document) }),
            Err(error) => {
                let position = error.span().map(|span| Position::of_offset(text, span.start));
                let reason = format!("not valid TOML: {}", error.message().trim_end());
                Err(Box::new(Problem::error(file, "", reason.replace('\n', "; ")).at_position(position)))
            }
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Where the field at `path` is written: its key when the path ends at a
    /// key, else the value; the deepest part of the path found otherwise.
    pub fn position_of(&self, path: &str) -> Option<Position> {
        let document = self.document.as_ref()?;
        let offset = span_of_steps(document.as_table(), &parse_path(path))?;
        Some(Position::of_offset(&self.text, offset))
    }
}

enum Node<'d> {
    Item(&'d toml_edit::Item),
    Value(&'d toml_edit::Value),
    Table(&'d toml_edit::Table),
}

fn span_of_steps(root: &toml_edit::Table, steps: &[PathStep]) -> Option<usize> {
    let mut node = Node::Table(root);
    let mut found = root.span().map(|span| span.start);
    for step in steps {
        let (next, here) = match (&node, step) {
            (Node::Table(table), PathStep::Key(key)) => {
                let (key_written, item) = table.get_key_value(key)?;
                (Node::Item(item), key_written.span().or_else(|| item.span()))
            }
            (Node::Item(item), PathStep::Key(key)) => match item {
                toml_edit::Item::Table(table) => {
                    let (key_written, item) = table.get_key_value(key)?;
                    (Node::Item(item), key_written.span().or_else(|| item.span()))
                }
                toml_edit::Item::Value(toml_edit::Value::InlineTable(table)) => {
                    let (key_written, item) = table.get_key_value(key)?;
                    (Node::Item(item), key_written.span().or_else(|| item.span()))
                }
                _ => return found,
            },
            (Node::Value(toml_edit::Value::InlineTable(table)), PathStep::Key(key)) => {
                let (key_written, item) = table.get_key_value(key)?;
                (Node::Item(item), key_written.span().or_else(|| item.span()))
            }
            (Node::Item(toml_edit::Item::ArrayOfTables(tables)), PathStep::Index(index)) => {
                let Some(table) = tables.get(*index) else { return found };
                (Node::Table(table), table.span())
            }
            (Node::Item(toml_edit::Item::Value(toml_edit::Value::Array(array))), PathStep::Index(index))
            | (Node::Value(toml_edit::Value::Array(array)), PathStep::Index(index)) => {
                let Some(value) = array.get(*index) else { return found };
                (Node::Value(value), value.span())
            }
            _ => return found,
        };
        if let Some(span) = here {
            found = Some(span.start);
        }
        node = next;
    }
    found
}

/// One problem [`deserialize_toml_collecting`] found, placed by its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeserializeProblem {
    pub at: String,
    pub reason: String,
    pub suggestion: Option<String>,
}

impl DeserializeProblem {
    /// The problem as found in `file`, placed at its line in `source`.
    pub fn in_file(self, file: &str, source: &TomlSource) -> Problem {
        let position = source.position_of(&self.at);
        Problem::error(file, self.at, self.reason).at_position(position).suggesting(self.suggestion)
    }
}

/// Deserializes `source` into `T`, listing every problem serde meets rather
/// than the first: after each, the field it is about (or, for a missing
/// field, the table missing it) is dropped and deserialization runs again,
/// up to [`FILE_PROBLEMS_LISTED_MAX`] times. Paths stay those of the file:
/// a dropped element of an array of tables is remembered, not shifted out.
pub fn deserialize_toml_collecting<T: DeserializeOwned>(source: &TomlSource) -> Result<T, Vec<DeserializeProblem>> {
    match deserialize_toml_pruning(source) {
        (Some(value), problems) if problems.is_empty() => Ok(value),
        (_, problems) => Err(problems),
    }
}

/// [`deserialize_toml_collecting`], also returning what deserialized once
/// every problem was dropped (when something did), so that later checks
/// can find the problems of the rest of the file in the same run.
pub fn deserialize_toml_pruning<T: DeserializeOwned>(source: &TomlSource) -> (Option<T>, Vec<DeserializeProblem>) {
    let mut value: toml::Value = match toml::from_str(source.text()) {
        Ok(value) => value,
        Err(error) => {
            let problem =
                DeserializeProblem { at: String::new(), reason: error.message().to_string(), suggestion: None };
            return (None, vec![problem]);
        }
    };
    let mut problems = Vec::new();
    // For each array dropped from, the original indices of its remaining elements.
    let mut remaining: Vec<(Vec<PathStep>, Vec<usize>)> = Vec::new();
    // Fields already reported and dropped: their absence is not news.
    let mut dropped: Vec<Vec<PathStep>> = Vec::new();
    loop {
        let error = match serde_path_to_error::deserialize::<_, T>(value.clone()) {
            Ok(parsed) => return (Some(parsed), problems),
            Err(error) => error,
        };
        let current: Vec<PathStep> = error
            .path()
            .iter()
            .filter_map(|segment| match segment {
                serde_path_to_error::Segment::Seq { index } => Some(PathStep::Index(*index)),
                serde_path_to_error::Segment::Map { key } => Some(PathStep::Key(key.clone())),
                serde_path_to_error::Segment::Enum { variant } => Some(PathStep::Key(variant.clone())),
                serde_path_to_error::Segment::Unknown => None,
            })
            .collect();
        let original = original_path(&current, &remaining);
        let reason = error.inner().message().to_string();
        let suggestion = match current.last() {
            Some(PathStep::Key(key)) if reason.starts_with("unknown field") => {
                let expected = backticked(&reason);
                closest(key, expected.iter().skip(1).map(String::as_str))
            }
            _ => None,
        };
        let unknown_field = reason.starts_with("unknown field");
        let missing_what_was_dropped = reason.starts_with("missing field")
            && backticked(&reason).first().is_some_and(|field| {
                let mut path = original.clone();
                path.push(PathStep::Key(field.clone()));
                dropped.contains(&path)
            });
        if !missing_what_was_dropped {
            problems.push(DeserializeProblem { at: path_text(&original), reason, suggestion });
        }
        if problems.len() >= FILE_PROBLEMS_LISTED_MAX || current.is_empty() {
            return (None, problems);
        }
        // An unknown or ill-typed field goes; a table missing a field goes whole.
        let target = if unknown_field || field_exists(&value, &current) && !is_table(&value, &current) {
            current.clone()
        } else {
            match current.iter().rposition(|step| matches!(step, PathStep::Index(_))) {
                Some(at) => current[..=at].to_vec(),
                None => return (None, problems),
            }
        };
        dropped.push(original_path(&target, &remaining));
        if !remove_at(&mut value, &target, &mut remaining) {
            return (None, problems);
        }
    }
}

fn backticked(text: &str) -> Vec<String> {
    text.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

fn lookup<'v>(value: &'v toml::Value, steps: &[PathStep]) -> Option<&'v toml::Value> {
    let mut node = value;
    for step in steps {
        node = match (node, step) {
            (toml::Value::Table(table), PathStep::Key(key)) => table.get(key)?,
            (toml::Value::Array(array), PathStep::Index(index)) => array.get(*index)?,
            _ => return None,
        };
    }
    Some(node)
}

fn field_exists(value: &toml::Value, steps: &[PathStep]) -> bool {
    lookup(value, steps).is_some()
}

fn is_table(value: &toml::Value, steps: &[PathStep]) -> bool {
    matches!(lookup(value, steps), Some(toml::Value::Table(_)))
}

/// Removes what `steps` names; false when there is nothing there to remove.
fn remove_at(value: &mut toml::Value, steps: &[PathStep], remaining: &mut Vec<(Vec<PathStep>, Vec<usize>)>) -> bool {
    let Some((last, parent_steps)) = steps.split_last() else { return false };
    let mut node = value;
    for step in parent_steps {
        node = match (node, step) {
            (toml::Value::Table(table), PathStep::Key(key)) => match table.get_mut(key) {
                Some(next) => next,
                None => return false,
            },
            (toml::Value::Array(array), PathStep::Index(index)) => match array.get_mut(*index) {
                Some(next) => next,
                None => return false,
            },
            _ => return false,
        };
    }
    match (node, last) {
        (toml::Value::Table(table), PathStep::Key(key)) => table.remove(key).is_some(),
        (toml::Value::Array(array), PathStep::Index(index)) if *index < array.len() => {
            let original_parent = original_path(parent_steps, remaining);
            let entry = match remaining.iter().position(|(path, _)| *path == original_parent) {
                Some(at) => at,
                None => {
                    remaining.push((original_parent, (0..array.len()).collect()));
                    remaining.len() - 1
                }
            };
            remaining[entry].1.remove(*index);
            array.remove(*index);
            true
        }
        _ => false,
    }
}

/// Maps a path into the (partly dropped) value back to the file's path.
fn original_path(current: &[PathStep], remaining: &[(Vec<PathStep>, Vec<usize>)]) -> Vec<PathStep> {
    let mut original: Vec<PathStep> = Vec::with_capacity(current.len());
    for step in current {
        let mapped = match step {
            PathStep::Index(index) => match remaining.iter().find(|(path, _)| *path == original) {
                Some((_, indices)) => PathStep::Index(indices.get(*index).copied().unwrap_or(*index)),
                None => PathStep::Index(*index),
            },
            key => key.clone(),
        };
        original.push(mapped);
    }
    original
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Being {
        name: String,
        home: String,
        #[serde(default)]
        wake_every: u64,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct World {
        name: String,
        #[serde(default, rename = "being")]
        beings: Vec<Being>,
    }

    fn check(text: &str, expected: &[&str]) {
        let source = TomlSource::parse("w.toml", text).expect("valid TOML");
        let problems = deserialize_toml_collecting::<World>(&source).expect_err("problems");
        let shown: Vec<String> = problems
            .iter()
            .map(|problem| {
                let mut line = Problem::error("w.toml", problem.at.clone(), problem.reason.clone())
                    .at_position(source.position_of(&problem.at))
                    .suggesting(problem.suggestion.clone())
                    .to_string();
                line = line.split(", expected").next().unwrap_or_default().to_string();
                line
            })
            .collect();
        assert_eq!(shown, expected);
    }

    #[test]
    fn every_problem_of_a_file_is_listed_at_its_line() {
        check(
            "name = 'x'\n[[being]]\nname = 'a'\n[[being]]\nname = 'b'\nhome = '/'\nwake_evry = 3\n[[being]]\nname = 'c'\nhome = 4\n",
            &[
                "w.toml:2:1: being[0]: missing field `home`",
                "w.toml:7:1: being[1].wake_evry: unknown field `wake_evry`",
                "w.toml:10:1: being[2].home: invalid type: integer `4`",
            ],
        );
    }

    #[test]
    fn a_suggestion_is_offered_for_a_near_field() {
        let source = TomlSource::parse("w.toml", "name = 'x'\nnmae = 'y'\n").unwrap();
        let problems = deserialize_toml_collecting::<World>(&source).unwrap_err();
        assert_eq!(problems[0].suggestion.as_deref(), Some("name"));
    }

    #[test]
    fn a_syntax_error_names_its_line_and_column() {
        let problem = TomlSource::parse("w.toml", "name = 'x'\n[[being]\n").err().expect("syntax error");
        assert_eq!(problem.position, Some(Position { line: 2, column: 8 }));
        assert!(problem.to_string().starts_with("w.toml:2:8: not valid TOML: invalid table header"), "{problem}");
    }

    #[test]
    fn paths_read_back_into_steps() {
        assert_eq!(
            parse_path("provides.op[0].script"),
            vec![
                PathStep::Key("provides".into()),
                PathStep::Key("op".into()),
                PathStep::Index(0),
                PathStep::Key("script".into())
            ]
        );
        assert_eq!(path_text(&parse_path("generate[1][3].home")), "generate[1][3].home");
    }

    #[test]
    fn positions_count_characters_from_one() {
        assert_eq!(Position::of_offset("ab\ncé d", 7), Position { line: 2, column: 4 });
        assert_eq!(Position::of_offset("", 5), Position { line: 1, column: 1 });
    }
}
