//! The role form: a role definition as the form's text fields, and back.
//!
//! The two directions are inverses for every role: a role opened in the form
//! and saved unchanged is the same role with the same digest (its script,
//! see-resolvers, orientation, connection, recall block and relationship
//! tokens included).
//! A can* entry written as a token (`{"rel": "parent"}`) is a token, or an
//! error naming the field; it never becomes a literal.

use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;

/// The form's fields: (definition field, label). Lists are comma-separated.
pub const ROLE_FORM_FIELDS: &[(&str, &str)] = &[
    ("name", "name"),
    ("canSee", "canSee (comma-separated addresses; tokens as JSON: {\"pattern\": \"@*\"})"),
    ("canDo", "canDo (comma-separated operations)"),
    ("canSummon", "canSummon (comma-separated @names; tokens as JSON: {\"rel\": \"parent\"})"),
    ("canBe", "canBe (comma-separated: birth, connect, release, rotate-key)"),
    ("see", "see (comma-separated see-resolvers)"),
    ("requiredCognition", "requiredCognition (optional: scripted, llm, human)"),
    ("selfContinue", "selfContinue (optional: true or false)"),
    ("defaultOrientation", "defaultOrientation (optional: forward, half, inward)"),
    ("llm", "llm (optional: the LLM connection's name)"),
    ("actImportance", "actImportance (optional: 0 to 10, the importance of every act sealed wearing it)"),
    (
        "recall",
        "recall (optional, JSON: {\"kinds\": [\"act\", \"summons\"], \"count\": 8, \"query\": \"{{caller.name}}\"})",
    ),
    ("prompt", "prompt"),
    ("script", "script (optional: Rhai source run by scripted cognition)"),
];

/// The fields whose lists may hold relationship tokens.
const CAN_FIELDS: &[&str] = &["canSee", "canDo", "canSummon", "canBe"];
/// Fields kept exactly as typed: a prompt's or a script's spaces and
/// newlines are part of the role's digest.
const VERBATIM_FIELDS: &[&str] = &["prompt", "script"];

/// Whether a field is written in a multi-line text area.
pub fn is_text_area(field: &str) -> bool {
    VERBATIM_FIELDS.contains(&field)
}

/// A role definition (as `Role::definition_json` gives it) as the form's values.
pub fn values_of_definition(definition: &Json) -> BTreeMap<String, String> {
    let mut values = BTreeMap::new();
    for (name, _) in ROLE_FORM_FIELDS {
        let value = match definition.get(*name) {
            Some(Json::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Json::String(text) => text.clone(),
                    token => token.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", "),
            Some(Json::String(text)) => text.clone(),
            Some(Json::Bool(flag)) => flag.to_string(),
            Some(Json::Number(number)) => number.to_string(),
            Some(block @ Json::Object(_)) => block.to_string(),
            _ => String::new(),
        };
        values.insert(name.to_string(), value);
    }
    values
}

/// The definition the form's values describe, or the problems by field.
pub fn definition_of_values(values: &BTreeMap<String, String>) -> Result<Json, BTreeMap<String, String>> {
    let mut definition = Map::new();
    let mut problems = BTreeMap::new();
    for (name, _) in ROLE_FORM_FIELDS {
        let raw = values.get(*name).map(String::as_str).unwrap_or_default();
        if is_text_area(name) {
            // Browsers send a text area's newlines as CRLF.
            let text = raw.replace("\r\n", "\n");
            if *name == "script" && text.trim().is_empty() {
                continue;
            }
            definition.insert(name.to_string(), Json::String(text));
            continue;
        }
        let value = raw.trim();
        match *name {
            "canSee" | "canDo" | "canSummon" | "canBe" | "see" => {
                match list_entries(value, CAN_FIELDS.contains(name)) {
                    Ok(entries) => {
                        definition.insert(name.to_string(), Json::Array(entries));
                    }
                    Err(problem) => {
                        problems.insert(name.to_string(), problem.to_string());
                    }
                }
            }
            "selfContinue" => match value {
                "" => {}
                "true" => {
                    definition.insert(name.to_string(), Json::Bool(true));
                }
                "false" => {
                    definition.insert(name.to_string(), Json::Bool(false));
                }
                other => {
                    problems.insert(name.to_string(), format!("{other:?}: write true, false or nothing"));
                }
            },
            "requiredCognition" | "defaultOrientation" | "llm" | "recall" | "actImportance" if value.is_empty() => {}
            "actImportance" => match value.parse::<u64>() {
                Ok(importance) => {
                    definition.insert(name.to_string(), Json::from(importance));
                }
                Err(_) => {
                    problems
                        .insert(name.to_string(), format!("{value:?}: write a whole number from 0 to 10, or nothing"));
                }
            },
            "recall" => match serde_json::from_str::<Json>(value) {
                Ok(block @ Json::Object(_)) => {
                    definition.insert(name.to_string(), block);
                }
                Ok(_) => {
                    problems.insert(name.to_string(), "a JSON object: {\"kinds\", \"count\", \"query\"}".into());
                }
                Err(error) => {
                    problems.insert(name.to_string(), format!("not JSON: {error}"));
                }
            },
            _ => {
                definition.insert(name.to_string(), Json::String(value.to_string()));
            }
        }
    }
    if problems.is_empty() {
        Ok(Json::Object(definition))
    } else {
        Err(problems)
    }
}

/// A list field that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ListProblem {
    #[error("entry {position} ({entry}) is a token; this list takes names only")]
    TokenNotAllowed { entry: String, position: usize },
    #[error("entry {position} ({entry}) is not a token: write {{\"rel\": \"parent\"}} or {{\"pattern\": \"@*\"}}")]
    NotAToken { entry: String, position: usize },
    #[error("a '}}' closes no token")]
    ClosesNoToken,
    #[error("a token is not closed: it ends with '}}'")]
    Unclosed,
}

/// A comma-separated list: literals as strings and, where tokens are
/// allowed, `{…}` entries read as JSON objects (commas inside a token or a
/// quoted string do not separate entries).
fn list_entries(text: &str, tokens_allowed: bool) -> Result<Vec<Json>, ListProblem> {
    let mut entries = Vec::new();
    for (index, entry) in split_top_level(text)?.into_iter().enumerate() {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        if !entry.starts_with('{') {
            entries.push(Json::String(entry.to_string()));
            continue;
        }
        if !tokens_allowed {
            return Err(ListProblem::TokenNotAllowed { entry: entry.to_string(), position: index + 1 });
        }
        match serde_json::from_str::<Json>(entry) {
            Ok(token @ Json::Object(_)) => entries.push(token),
            _ => return Err(ListProblem::NotAToken { entry: entry.to_string(), position: index + 1 }),
        }
    }
    Ok(entries)
}

/// Splits at commas outside braces and quoted strings.
fn split_top_level(text: &str) -> Result<Vec<&str>, ListProblem> {
    let (mut parts, mut start, mut depth, mut quoted, mut escaped) = (Vec::new(), 0, 0usize, false, false);
    for (at, character) in text.char_indices() {
        if quoted {
            match character {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => quoted = false,
                _ => {}
            }
            continue;
        }
        match character {
            '"' if depth > 0 => quoted = true,
            '{' => depth += 1,
            '}' => depth = depth.checked_sub(1).ok_or(ListProblem::ClosesNoToken)?,
            ',' if depth == 0 => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    if depth > 0 || quoted {
        return Err(ListProblem::Unclosed);
    }
    parts.push(&text[start..]);
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::{Role, RoleRegistry};
    use serde_json::json;

    /// What a browser sends for the form it was shown: text areas with CRLF.
    fn as_browser_sends(values: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        values
            .iter()
            .map(|(name, value)| {
                let sent = if is_text_area(name) { value.replace('\n', "\r\n") } else { value.clone() };
                (name.clone(), sent)
            })
            .collect()
    }

    fn shipped_roles() -> Vec<std::sync::Arc<Role>> {
        // The repository root: the shipped roles sit beside the crates.
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let mut folders = vec![root.join("roles"), root.join("fixtures/roles")];
        for extension in std::fs::read_dir(root.join("extensions")).expect("extensions") {
            folders.push(extension.expect("entry").path().join("roles"));
        }
        let mut roles = Vec::new();
        for folder in folders.into_iter().filter(|folder| folder.is_dir()) {
            let (registry, report) = RoleRegistry::load_dirs(std::slice::from_ref(&folder));
            assert!(report.errors.is_empty(), "the shipped roles load: {:?}", report.errors);
            roles.extend(registry.iter().cloned());
        }
        assert!(roles.len() > 10, "the shipped roles were found");
        roles
    }

    #[test]
    fn every_shipped_role_saved_unchanged_through_the_form_keeps_its_digest() {
        for role in shipped_roles() {
            let values = as_browser_sends(&values_of_definition(&role.definition_json()));
            let definition = definition_of_values(&values).unwrap_or_else(|p| panic!("{}: {p:?}", role.name));
            let authored = Role::parse_authored(&definition.to_string(), "authored")
                .unwrap_or_else(|problems| panic!("{}: {problems:?}", role.name));
            assert_eq!(authored.digest, role.digest, "{} changed on the way through the form", role.name);
        }
    }

    fn check(field: &str, typed: &str, expected: Result<Json, &str>) {
        let values = BTreeMap::from([("name".to_string(), "r".to_string()), (field.to_string(), typed.to_string())]);
        match (definition_of_values(&values), expected) {
            (Ok(definition), Ok(expected)) => assert_eq!(definition[field], expected, "{typed:?}"),
            (Err(problems), Err(expected)) => {
                assert!(problems[field].contains(expected), "{typed:?}: {problems:?}")
            }
            (got, expected) => panic!("{typed:?}: got {got:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn a_token_typed_into_a_can_field_is_a_token_or_an_error() {
        check("canSummon", r#"{"rel":"parent"}"#, Ok(json!([{"rel": "parent"}])));
        check("canSummon", r#"@ada, {"rel": "any-child"}, @bo"#, Ok(json!(["@ada", {"rel": "any-child"}, "@bo"])));
        check("canSee", r#"/court, {"pattern": "court/@*"}"#, Ok(json!(["/court", {"pattern": "court/@*"}])));
        check("canSee", r#"{"pattern": "a,b"}"#, Ok(json!([{"pattern": "a,b"}])));
        check("canSummon", "", Ok(json!([])));
        check("canSummon", "{rel: parent}", Err("is not a token"));
        check("canSummon", r#"{"rel": "parent""#, Err("is not closed"));
        check("canSummon", r#"@ada}"#, Err("closes no token"));
        check("canSummon", r#"["@ada"]"#, Ok(json!([r#"["@ada"]"#])));
        check("see", r#"{"rel": "parent"}"#, Err("names only"));
        check("selfContinue", "maybe", Err("true, false or nothing"));
    }

    #[test]
    fn a_recall_block_is_a_json_object_or_an_error() {
        check("recall", r#"{"kinds": ["summons"], "count": 3}"#, Ok(json!({"kinds": ["summons"], "count": 3})));
        check("recall", "", Ok(Json::Null));
        check("recall", "[1, 2]", Err("a JSON object"));
        check("recall", "{kinds: act}", Err("not JSON"));
        check("actImportance", "7", Ok(json!(7)));
        check("actImportance", "high", Err("a whole number from 0 to 10"));
    }

    #[test]
    fn a_token_stored_as_text_is_refused_by_the_role_itself() {
        let definition = json!({"name": "r", "canSummon": [r#"{"rel":"parent"}"#]});
        let problems = Role::parse_authored(&definition.to_string(), "authored").expect_err("refused");
        assert!(problems[0].reason.contains("token written as text"), "{problems:?}");
    }
}
