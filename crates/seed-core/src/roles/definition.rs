//! Role definitions: the file format, validation, and the registry.
//!
//! A role file is TOML (`.toml`) or JSON (`.json`) with the fields of
//! docs/roles.md. Loading reports every problem with its file, field and
//! reason, and a bad file never takes the others down.

use crate::authoring::{deserialize_toml_pruning, Position, Problem, TomlSource};
use crate::canonical;
use crate::fact::body::Cognition;
use crate::fact::Hash32;
use ciborium::value::Value as Cbor;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Longest role prompt template, in characters.
pub const ROLE_PROMPT_CHARS_MAX: usize = 16_000;
/// Most entries in one can* list or in `see`.
pub const ROLE_LIST_ENTRIES_MAX: usize = 256;
/// Largest role file read, in bytes.
pub const ROLE_FILE_BYTES_MAX: u64 = 256 * 1024;

/// The relationship tokens (`{rel = "..."}`) the standard resolvers expand.
pub const KNOWN_RELATIONS: &[&str] = &["parent", "any-child"];
/// Longest query template of a role's `recall` block, in characters.
pub const RECALL_QUERY_TEMPLATE_CHARS_MAX: usize = 1_000;

/// What a role asks its being to recall in each moment it wears it with
/// orientation `half` or `inward` (the role's `recall` block; docs/memory.md).
/// Each field left out takes the orientation's default.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecallSpec {
    /// The kinds of items to recall (within what the orientation allows).
    pub kinds: Option<Vec<crate::memory::MemoryKind>>,
    /// How many items, 1 to `RECALL_ITEMS_MAX`.
    pub count: Option<usize>,
    /// The query, a template filled from the open context like the prompt
    /// (and `{{wake.content}}`, what woke the being).
    pub query: Option<Arc<str>>,
}

impl RecallSpec {
    pub fn to_cbor(&self) -> Cbor {
        let text = |key: &str| Cbor::Text(key.to_string());
        let kinds = self.kinds.as_ref().map_or(Cbor::Null, |kinds| {
            Cbor::Array(kinds.iter().map(|kind| Cbor::Text(kind.as_str().into())).collect())
        });
        Cbor::Map(vec![
            (text("kinds"), kinds),
            (text("count"), self.count.map_or(Cbor::Null, |count| Cbor::Integer((count as u64).into()))),
            (text("query"), self.query.as_ref().map_or(Cbor::Null, |query| Cbor::Text(query.to_string()))),
        ])
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecallFile {
    #[serde(default)]
    kinds: Option<Vec<String>>,
    #[serde(default)]
    count: Option<u64>,
    #[serde(default)]
    query: Option<String>,
}

/// One entry of a can* list: a literal, or a token expanded per moment.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CanEntry {
    Literal(Arc<str>),
    Rel(Arc<str>),
    Pattern(Arc<str>),
}

impl CanEntry {
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            CanEntry::Literal(text) => serde_json::Value::String(text.to_string()),
            CanEntry::Rel(relation) => serde_json::json!({ "rel": relation.as_ref() }),
            CanEntry::Pattern(pattern) => serde_json::json!({ "pattern": pattern.as_ref() }),
        }
    }

    pub fn to_cbor(&self) -> Cbor {
        let map = |key: &str, value: &str| Cbor::Map(vec![(Cbor::Text(key.into()), Cbor::Text(value.into()))]);
        match self {
            CanEntry::Literal(text) => Cbor::Text(text.to_string()),
            CanEntry::Rel(relation) => map("rel", relation),
            CanEntry::Pattern(pattern) => map("pattern", pattern),
        }
    }
}

impl fmt::Display for CanEntry {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CanEntry::Literal(text) => formatter.write_str(text),
            CanEntry::Rel(relation) => write!(formatter, "{{rel: {relation}}}"),
            CanEntry::Pattern(pattern) => write!(formatter, "{{pattern: {pattern}}}"),
        }
    }
}

impl<'de> Deserialize<'de> for CanEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<CanEntry, D::Error> {
        struct EntryVisitor;
        impl<'de> Visitor<'de> for EntryVisitor {
            type Value = CanEntry;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a string, {rel = \"...\"} or {pattern = \"...\"}")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<CanEntry, E> {
                if text.trim().is_empty() {
                    return Err(E::custom("an empty entry"));
                }
                Ok(CanEntry::Literal(Arc::from(text)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CanEntry, A::Error> {
                let mut entry = None;
                while let Some(key) = map.next_key::<String>()? {
                    let value: String = map.next_value()?;
                    if entry.is_some() {
                        return Err(de::Error::custom("a token has exactly one key, `rel` or `pattern`"));
                    }
                    entry = Some(match key.as_str() {
                        "rel" => CanEntry::Rel(Arc::from(value.as_str())),
                        "pattern" => CanEntry::Pattern(Arc::from(value.as_str())),
                        other => {
                            return Err(de::Error::custom(format!(
                                "unknown token key `{other}` (use `rel` or `pattern`)"
                            )))
                        }
                    });
                }
                entry.ok_or_else(|| de::Error::custom("an empty token; use {rel = \"...\"} or {pattern = \"...\"}"))
            }
        }
        deserializer.deserialize_any(EntryVisitor)
    }
}

/// How a moment reads the world; `half` and `inward` are accepted now and
/// honoured once recall exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Orientation {
    Forward,
    Half,
    Inward,
}

impl Orientation {
    pub fn as_str(self) -> &'static str {
        match self {
            Orientation::Forward => "forward",
            Orientation::Half => "half",
            Orientation::Inward => "inward",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RoleFile {
    name: String,
    #[serde(default)]
    can_see: Vec<CanEntry>,
    #[serde(default)]
    can_do: Vec<CanEntry>,
    #[serde(default)]
    can_summon: Vec<CanEntry>,
    #[serde(default)]
    can_be: Vec<CanEntry>,
    #[serde(default)]
    see: Vec<String>,
    #[serde(default)]
    self_continue: Option<bool>,
    #[serde(default)]
    default_orientation: Option<Orientation>,
    #[serde(default)]
    required_cognition: Option<Cognition>,
    #[serde(default)]
    prompt: String,
    /// A Rhai file (relative to the role file) run by scripted cognition.
    #[serde(default)]
    script: Option<String>,
    /// The LLM connection this role's beings use (unless the being names one).
    #[serde(default)]
    llm: Option<String>,
    /// What the being recalls while wearing this role (`half` and `inward`).
    #[serde(default)]
    recall: Option<RecallFile>,
    /// How important the acts sealed while wearing it are (0 to 10),
    /// unless the cognition says.
    #[serde(default)]
    act_importance: Option<u64>,
    /// The calls that wait for someone's yes (`super::approval`).
    #[serde(default)]
    approvals: Vec<super::approval::ApprovalFile>,
}

/// A validated role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    pub name: Arc<str>,
    pub can_see: Vec<CanEntry>,
    pub can_do: Vec<CanEntry>,
    pub can_summon: Vec<CanEntry>,
    pub can_be: Vec<CanEntry>,
    /// See-resolvers run every moment for this role.
    pub see: Vec<Arc<str>>,
    /// `None`: not set, the stack's other roles decide (see the composer).
    pub self_continue: Option<bool>,
    pub default_orientation: Option<Orientation>,
    pub required_cognition: Option<Cognition>,
    /// The prompt template (placeholders `{{path}}`, see docs/roles.md).
    pub prompt: Arc<str>,
    /// The Rhai source scripted cognition runs while this role is primary.
    pub script: Option<Arc<str>>,
    /// The LLM connection (by name) for LLM cognition while wearing this role.
    pub llm: Option<Arc<str>>,
    /// What the being recalls while wearing it (`None`: the orientation's defaults).
    pub recall: Option<RecallSpec>,
    /// The importance of the acts sealed while wearing it, unless the
    /// cognition gives one (`None`: not set).
    pub act_importance: Option<u8>,
    /// The calls this role holds back until someone approves them.
    pub approvals: Vec<super::approval::ApprovalGate>,
    /// Where it came from (a file path, or "authored by @name" for a role
    /// authored live as a `put-role` fact).
    pub origin: String,
    /// The file its script was read from, for messages (not in the digest).
    pub script_origin: Option<String>,
    /// BLAKE3 of the canonical CBOR of the definition (origin excluded).
    pub digest: Hash32,
}

/// A problem with one role file, and where: the field, and the line and
/// column when the file is TOML or the problem is JSON syntax.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.to_problem())]
pub struct RoleLoadError {
    pub file: String,
    pub field: String,
    pub reason: String,
    pub position: Option<Position>,
    pub suggestion: Option<String>,
}

impl RoleLoadError {
    pub fn new(file: impl Into<String>, field: impl Into<String>, reason: impl Into<String>) -> RoleLoadError {
        RoleLoadError {
            file: file.into(),
            field: field.into(),
            reason: reason.into(),
            position: None,
            suggestion: None,
        }
    }

    /// The same finding in the world check's terms.
    pub fn to_problem(&self) -> Problem {
        let at = if self.field == "(file)" { String::new() } else { self.field.clone() };
        Problem::error(self.file.clone(), at, self.reason.clone())
            .at_position(self.position)
            .suggesting(self.suggestion.clone())
    }
}

fn list_cbor(entries: &[CanEntry]) -> Cbor {
    Cbor::Array(entries.iter().map(CanEntry::to_cbor).collect())
}

impl Role {
    /// The definition its digest covers, as JSON (script source inline): what
    /// a land archives so that replay can show how a role changed.
    pub fn definition_json(&self) -> serde_json::Value {
        crate::canonical::cbor_to_json(&self.definition_cbor())
    }

    fn definition_cbor(&self) -> Cbor {
        let text = |key: &str| Cbor::Text(key.to_string());
        let optional_bool = |value: Option<bool>| value.map(Cbor::Bool).unwrap_or(Cbor::Null);
        let mut fields = vec![
            (text("name"), Cbor::Text(self.name.to_string())),
            (text("canSee"), list_cbor(&self.can_see)),
            (text("canDo"), list_cbor(&self.can_do)),
            (text("canSummon"), list_cbor(&self.can_summon)),
            (text("canBe"), list_cbor(&self.can_be)),
            (text("see"), Cbor::Array(self.see.iter().map(|name| Cbor::Text(name.to_string())).collect())),
            (text("selfContinue"), optional_bool(self.self_continue)),
            (
                text("defaultOrientation"),
                self.default_orientation.map(|o| Cbor::Text(o.as_str().into())).unwrap_or(Cbor::Null),
            ),
            (
                text("requiredCognition"),
                self.required_cognition.map(|c| Cbor::Text(c.as_str().into())).unwrap_or(Cbor::Null),
            ),
            (text("prompt"), Cbor::Text(self.prompt.to_string())),
            (text("script"), self.script.as_ref().map(|s| Cbor::Text(s.to_string())).unwrap_or(Cbor::Null)),
        ];
        // Only present when set, so roles without one keep the digests they always had.
        if let Some(connection) = &self.llm {
            fields.push((text("llm"), Cbor::Text(connection.to_string())));
        }
        if let Some(recall) = &self.recall {
            fields.push((text("recall"), recall.to_cbor()));
        }
        if let Some(importance) = self.act_importance {
            fields.push((text("actImportance"), Cbor::Integer(u64::from(importance).into())));
        }
        if !self.approvals.is_empty() {
            let gates = self.approvals.iter().map(super::approval::ApprovalGate::to_cbor).collect();
            fields.push((text("approvals"), Cbor::Array(gates)));
        }
        Cbor::Map(fields)
    }

    /// Parses and validates one role from TOML or JSON text that names no
    /// script (a role parsed this way may not carry one).
    pub fn parse(text: &str, format: RoleFormat, origin: &str) -> Result<Role, Vec<RoleLoadError>> {
        Role::parse_in(text, format, origin, ScriptField::Refused)
    }

    /// Parses and validates a role authored live: the JSON of
    /// [`Role::definition_json`], its `script` the Rhai source itself. A
    /// definition read back from a role parses to the same role and digest.
    pub fn parse_authored(text: &str, origin: &str) -> Result<Role, Vec<RoleLoadError>> {
        Role::parse_in(text, RoleFormat::Json, origin, ScriptField::Source)
    }

    pub fn parse_in(
        text: &str,
        format: RoleFormat,
        origin: &str,
        script_field: ScriptField<'_>,
    ) -> Result<Role, Vec<RoleLoadError>> {
        let toml_source = match format {
            RoleFormat::Toml => match TomlSource::parse(origin, text) {
                Ok(source) => Some(source),
                Err(syntax) => {
                    return Err(vec![RoleLoadError {
                        position: syntax.position,
                        ..RoleLoadError::new(origin, "(file)", syntax.reason)
                    }])
                }
            },
            RoleFormat::Json => None,
        };
        let position_of = |field: &str| toml_source.as_ref().and_then(|source| source.position_of(field));
        let problem = |field: &str, reason: String| RoleLoadError {
            position: position_of(field),
            ..RoleLoadError::new(origin, field, reason)
        };
        // TOML problems are all listed, and the rest of the file is still
        // checked with them left out; JSON stops at its first.
        let mut problems = Vec::new();
        let file: RoleFile = match &toml_source {
            Some(source) => {
                let (parsed, found) = deserialize_toml_pruning(source);
                for found in found {
                    let field = if found.at.is_empty() { "(file)".to_string() } else { found.at };
                    problems.push(RoleLoadError { suggestion: found.suggestion, ..problem(&field, found.reason) });
                }
                match parsed {
                    Some(file) => file,
                    None => return Err(problems),
                }
            }
            None => {
                let mut deserializer = serde_json::Deserializer::from_str(text);
                serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
                    let inner = error.inner();
                    let field = error.path().to_string();
                    let field = if field == "." || field.is_empty() { "(file)".to_string() } else { field };
                    let position = (inner.line() > 0).then(|| Position { line: inner.line(), column: inner.column() });
                    vec![RoleLoadError { position, ..RoleLoadError::new(origin, field, format!("{inner}")) }]
                })?
            }
        };
        if let Some(reason) = crate::names::kebab_name_problem(&file.name) {
            problems.push(problem("name", format!("{:?}: {reason}", file.name)));
        }
        for (field, entries) in [
            ("canSee", &file.can_see),
            ("canDo", &file.can_do),
            ("canSummon", &file.can_summon),
            ("canBe", &file.can_be),
        ] {
            if entries.len() > ROLE_LIST_ENTRIES_MAX {
                problems.push(problem(field, format!("more than {ROLE_LIST_ENTRIES_MAX} entries")));
            }
            for (index, entry) in entries.iter().enumerate() {
                let at = format!("{field}[{index}]");
                match entry {
                    CanEntry::Literal(text) if text.contains(['{', '}']) => problems.push(problem(
                        &at,
                        format!(
                            "{text:?} is a token written as text: write {{rel = \"parent\"}} or {{pattern = \"@*\"}} \
(in JSON {{\"rel\": \"parent\"}}), not a string"
                        ),
                    )),
                    CanEntry::Rel(relation) if !KNOWN_RELATIONS.contains(&relation.as_ref()) => problems.push(problem(
                        &at,
                        format!("unknown relation {relation:?} (known: {})", KNOWN_RELATIONS.join(", ")),
                    )),
                    CanEntry::Pattern(pattern) => {
                        if let Some(reason) = super::resolve::pattern_problem(pattern) {
                            problems.push(problem(&at, format!("pattern {pattern:?}: {reason}")));
                        }
                    }
                    _ => {}
                }
            }
        }
        for (index, name) in file.see.iter().enumerate() {
            if let Some(reason) = crate::names::kebab_name_problem(name) {
                problems.push(problem(&format!("see[{index}]"), format!("{name:?}: {reason}")));
            }
        }
        if file.required_cognition == Some(Cognition::None) {
            problems.push(problem("requiredCognition", "must be scripted, llm or human".into()));
        }
        if let Some(connection) = &file.llm {
            if let Some(reason) = crate::names::kebab_name_problem(connection) {
                problems.push(problem("llm", format!("{connection:?}: {reason}")));
            }
        }
        let recall = file.recall.as_ref().map(|recall| recall_spec(recall, &problem, &mut problems));
        let most = crate::memory::recall::IMPORTANCE_MAX;
        let act_importance = match file.act_importance.map(u8::try_from) {
            None => None,
            Some(Ok(importance)) if importance <= most => Some(importance),
            Some(_) => {
                let given = file.act_importance.unwrap_or_default();
                problems.push(problem("actImportance", format!("{given} is not from 0 to {most}")));
                None
            }
        };
        let mut gate_problems = Vec::new();
        let approvals = super::approval::ApprovalGate::read_all(&file.name, &file.approvals, &mut gate_problems);
        for (field, reason) in gate_problems {
            problems.push(problem(&field, reason));
        }
        if file.prompt.chars().count() > ROLE_PROMPT_CHARS_MAX {
            problems.push(problem("prompt", format!("longer than {ROLE_PROMPT_CHARS_MAX} characters")));
        }
        if let Err(error) = super::compose::placeholders(&file.prompt) {
            problems.push(problem("prompt", error.to_string()));
        }
        let script_origin = match (&file.script, script_field) {
            (Some(path), ScriptField::RelativeTo(base)) => Some(base.join(path).display().to_string()),
            _ => None,
        };
        let script = match (&file.script, script_field) {
            (None, _) => None,
            (Some(source), ScriptField::Source) => {
                if source.len() <= crate::script::SCRIPT_SOURCE_BYTES_MAX {
                    Some(Arc::from(source.as_str()))
                } else {
                    problems.push(problem("script", format!("{} bytes, over the script size limit", source.len())));
                    None
                }
            }
            (Some(path), ScriptField::RelativeTo(base)) => match crate::definitions::read_to_string(&base.join(path)) {
                Ok(source) if source.len() <= crate::script::SCRIPT_SOURCE_BYTES_MAX => {
                    // A file role's script is compiled now, so a syntax error
                    // stops the world loading instead of failing moment by moment.
                    if let Err(error) = crate::script::check_syntax(&source) {
                        let script_file = base.join(path).display().to_string();
                        let found = crate::authoring::script_problem(&script_file, &error);
                        problems.push(RoleLoadError {
                            position: found.position,
                            ..RoleLoadError::new(script_file, "(file)", found.reason)
                        });
                    }
                    Some(Arc::from(source.as_str()))
                }
                Ok(source) => {
                    problems
                        .push(problem("script", format!("{path}: {} bytes, over the script size limit", source.len())));
                    None
                }
                Err(error) => {
                    problems.push(problem("script", format!("{path}: {error}")));
                    None
                }
            },
            (Some(_), ScriptField::Refused) => {
                problems.push(problem("script", "a script path needs a role file to be relative to".into()));
                None
            }
        };
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut role = Role {
            name: Arc::from(file.name.as_str()),
            can_see: file.can_see,
            can_do: file.can_do,
            can_summon: file.can_summon,
            can_be: file.can_be,
            see: file.see.iter().map(|name| Arc::from(name.as_str())).collect(),
            self_continue: file.self_continue,
            default_orientation: file.default_orientation,
            required_cognition: file.required_cognition,
            prompt: Arc::from(file.prompt.as_str()),
            script,
            llm: file.llm.as_deref().map(Arc::from),
            recall,
            act_importance,
            approvals,
            origin: origin.to_string(),
            script_origin,
            digest: Hash32::ZERO,
        };
        let bytes = canonical::encode_value(&role.definition_cbor()).expect("a role holds only texts, lists and flags");
        role.digest = crate::fact::blake3_of(&bytes);
        Ok(role)
    }

    /// Reads one role file.
    pub fn load_file(path: &Path) -> Result<Role, Vec<RoleLoadError>> {
        let origin = path.display().to_string();
        let fail = |reason: String| vec![RoleLoadError::new(origin.clone(), "(file)", reason)];
        let format = match path.extension().and_then(|e| e.to_str()) {
            Some("toml") => RoleFormat::Toml,
            Some("json") => RoleFormat::Json,
            _ => return Err(fail("a role file ends in .toml or .json".into())),
        };
        let size = crate::definitions::file_len(path).map_err(|error| fail(error.to_string()))?;
        if size > ROLE_FILE_BYTES_MAX {
            return Err(fail(format!("{size} bytes, over the limit of {ROLE_FILE_BYTES_MAX}")));
        }
        let text = crate::definitions::read_to_string(path).map_err(|error| fail(error.to_string()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Role::parse_in(&text, format, &origin, ScriptField::RelativeTo(base))
    }
}

/// A role's `recall` block read, each problem added to `problems` under
/// `recall.FIELD`.
fn recall_spec(
    file: &RecallFile,
    located: &dyn Fn(&str, String) -> RoleLoadError,
    problems: &mut Vec<RoleLoadError>,
) -> RecallSpec {
    use crate::memory::recall::RECALL_ITEMS_MAX;
    use crate::memory::MemoryKind;
    let mut problem = |field: &str, reason: String| problems.push(located(field, reason));
    let known = || MemoryKind::ALL.iter().map(|kind| kind.as_str()).collect::<Vec<_>>().join(", ");
    let kinds = file.kinds.as_ref().map(|names| {
        let mut kinds = Vec::new();
        for (index, name) in names.iter().enumerate() {
            match MemoryKind::named(name) {
                Some(kind) if !kinds.contains(&kind) => kinds.push(kind),
                Some(_) => problem(&format!("recall.kinds[{index}]"), format!("{name:?} is named twice")),
                None => problem(&format!("recall.kinds[{index}]"), format!("no kind {name:?} (known: {})", known())),
            }
        }
        if names.is_empty() {
            problem(
                "recall.kinds",
                format!("names no kind: leave it out for the orientation's, or name some of {}", known()),
            );
        }
        kinds
    });
    let count = file.count.and_then(|count| match usize::try_from(count) {
        Ok(count) if (1..=RECALL_ITEMS_MAX).contains(&count) => Some(count),
        _ => {
            problem("recall.count", format!("{count} is not from 1 to {RECALL_ITEMS_MAX}"));
            None
        }
    });
    if let Some(query) = &file.query {
        if query.chars().count() > RECALL_QUERY_TEMPLATE_CHARS_MAX {
            problem("recall.query", format!("longer than {RECALL_QUERY_TEMPLATE_CHARS_MAX} characters"));
        }
        if let Err(error) = super::compose::placeholders(query) {
            problem("recall.query", error.to_string());
        }
    }
    RecallSpec { kinds, count, query: file.query.as_deref().map(Arc::from) }
}

/// What a role's `script` field holds.
#[derive(Debug, Clone, Copy)]
pub enum ScriptField<'a> {
    /// A Rhai file's path, relative to this folder (a role file).
    RelativeTo(&'a Path),
    /// The Rhai source itself (a role authored live).
    Source,
    /// Nothing may be named there.
    Refused,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleFormat {
    Toml,
    Json,
}

/// Every role known to a moment, by name.
#[derive(Debug, Clone, Default)]
pub struct RoleRegistry {
    roles: BTreeMap<Arc<str>, Arc<Role>>,
}

/// What loading role folders found besides the roles.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    pub errors: Vec<RoleLoadError>,
    /// Roles defined again by a later folder (the later definition wins).
    pub overridden: Vec<(String, String, String)>,
    /// The names of roles whose files have errors (as far as a name could
    /// be read), so that what wears them is not reported a second time.
    pub broken_roles: std::collections::BTreeSet<String>,
}

impl RoleRegistry {
    pub fn new() -> RoleRegistry {
        RoleRegistry::default()
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Role>> {
        self.roles.get(name)
    }

    pub fn len(&self) -> usize {
        self.roles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.roles.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<Role>> {
        self.roles.values()
    }

    /// Adds a role; returns the definition it replaced.
    pub fn insert(&mut self, role: Role) -> Option<Arc<Role>> {
        self.roles.insert(role.name.clone(), Arc::new(role))
    }

    /// Loads every `.toml` / `.json` file under each folder, in path order.
    /// Folders later in the list override roles of earlier ones; within one
    /// folder a second definition of a name is an error and the first stays.
    pub fn load_dirs(dirs: &[PathBuf]) -> (RoleRegistry, LoadReport) {
        let mut registry = RoleRegistry::new();
        let mut report = LoadReport::default();
        for dir in dirs {
            let mut files = Vec::new();
            if let Err(error) = collect_role_files(dir, &mut files) {
                report.errors.push(RoleLoadError::new(
                    dir.display().to_string(),
                    "(folder)",
                    format!("cannot read the folder: {error}"),
                ));
                continue;
            }
            files.sort();
            let mut seen_here: BTreeMap<String, String> = BTreeMap::new();
            for file in files {
                match Role::load_file(&file) {
                    Ok(role) => {
                        let name = role.name.to_string();
                        if let Some(first) = seen_here.get(&name) {
                            report.errors.push(RoleLoadError::new(
                                file.display().to_string(),
                                "name",
                                format!("role {name:?} is already defined in {first}"),
                            ));
                            continue;
                        }
                        seen_here.insert(name.clone(), role.origin.clone());
                        let origin = role.origin.clone();
                        if let Some(previous) = registry.insert(role) {
                            report.overridden.push((name, previous.origin.clone(), origin));
                        }
                    }
                    Err(errors) => {
                        report.errors.extend(errors);
                        if let Some(name) = role_name_written_in(&file) {
                            report.broken_roles.insert(name);
                        }
                    }
                }
            }
        }
        (registry, report)
    }
}

/// The `name` a role file gives, read as plainly as possible (the file
/// may be wrong in every other way); its file name when even that fails.
fn role_name_written_in(path: &Path) -> Option<String> {
    let written = || -> Option<String> {
        let text = crate::definitions::read_to_string(path).ok()?;
        let value: serde_json::Value = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => serde_json::from_str(&text).ok()?,
            _ => serde_json::to_value(toml::from_str::<toml::Table>(&text).ok()?).ok()?,
        };
        value.get("name")?.as_str().map(str::to_string)
    };
    written().or_else(|| path.file_stem()?.to_str().map(str::to_string))
}

fn collect_role_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for path in crate::definitions::read_dir(dir)? {
        if crate::definitions::is_dir(&path) {
            collect_role_files(&path, out)?;
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("toml" | "json")) {
            out.push(path);
        }
    }
    Ok(())
}
