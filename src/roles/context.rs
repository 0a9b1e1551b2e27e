//! The open context of a moment as the `when` language reads it: a flat map
//! from dotted paths (`space.name`, `world.court.in-session`) to JSON values.

use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    #[error("the context must be a JSON object")]
    NotAnObject,
    #[error("key {key:?} is given twice (once dotted, once nested)")]
    Duplicate { key: String },
    #[error("empty key at {at:?}")]
    EmptyKey { at: String },
}

/// Dotted path → value. A key whose value is `null` counts as missing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpenContext {
    values: BTreeMap<String, Value>,
}

impl OpenContext {
    pub fn new() -> OpenContext {
        OpenContext::default()
    }

    pub fn insert(&mut self, path: impl Into<String>, value: impl Into<Value>) {
        self.values.insert(path.into(), value.into());
    }

    /// The value at `path`; `None` when missing or null.
    pub fn get(&self, path: &str) -> Option<&Value> {
        self.values.get(path).filter(|value| !value.is_null())
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&String, &Value)> {
        self.values.iter()
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Reads a JSON object whose keys are dotted paths, nested objects, or
    /// both: nested objects are flattened by joining keys with dots, so
    /// `{"world": {"court": {"in-session": true}}}` and
    /// `{"world.court.in-session": true}` mean the same.
    pub fn from_json(value: &Value) -> Result<OpenContext, ContextError> {
        let Value::Object(object) = value else {
            return Err(ContextError::NotAnObject);
        };
        let mut context = OpenContext::new();
        flatten(object, "", &mut context)?;
        Ok(context)
    }
}

fn flatten(object: &serde_json::Map<String, Value>, prefix: &str, out: &mut OpenContext) -> Result<(), ContextError> {
    for (key, value) in object {
        if key.is_empty() || key.split('.').any(str::is_empty) {
            return Err(ContextError::EmptyKey { at: format!("{prefix}{key}") });
        }
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match value {
            Value::Object(inner) => flatten(inner, &path, out)?,
            other => {
                if out.values.insert(path.clone(), other.clone()).is_some() {
                    return Err(ContextError::Duplicate { key: path });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dotted_and_nested_keys_mean_the_same() {
        let dotted = OpenContext::from_json(&json!({"world.court.in-session": true, "space.name": "court"})).unwrap();
        let nested =
            OpenContext::from_json(&json!({"world": {"court": {"in-session": true}}, "space": {"name": "court"}}))
                .unwrap();
        assert_eq!(dotted, nested);
        let mixed =
            OpenContext::from_json(&json!({"world.court": {"in-session": true}, "space": {"name": "court"}})).unwrap();
        assert_eq!(mixed, dotted);
    }

    #[test]
    fn a_key_given_twice_is_refused() {
        let error = OpenContext::from_json(&json!({"a.b": 1, "a": {"b": 2}})).unwrap_err();
        assert_eq!(error, ContextError::Duplicate { key: "a.b".into() });
        assert_eq!(OpenContext::from_json(&json!([1])).unwrap_err(), ContextError::NotAnObject);
        assert!(matches!(OpenContext::from_json(&json!({"a..b": 1})), Err(ContextError::EmptyKey { .. })));
    }

    #[test]
    fn null_counts_as_missing() {
        let context = OpenContext::from_json(&json!({"a": null, "b": 0})).unwrap();
        assert_eq!(context.get("a"), None);
        assert_eq!(context.get("b"), Some(&json!(0)));
    }
}
