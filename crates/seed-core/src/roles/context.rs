//! The open context of a moment as the `when` language reads it: a flat map
//! from dotted paths (`space.name`, `world.court.in-session`) to JSON values.

use serde_json::Value;
use std::borrow::Cow;

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
///
/// Held as a vector sorted by key (the order a `BTreeMap<String, _>` would
/// iterate in): every moment builds one of about ten entries, mostly under
/// fixed keys, and a sorted vector of borrowed keys costs no allocation per
/// key and fewer comparisons per lookup than a tree.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpenContext {
    entries: Vec<(Cow<'static, str>, Value)>,
}

/// Entries an open context reserves room for: a moment's context fits.
const OPEN_CONTEXT_ENTRIES_RESERVED: usize = 16;

impl OpenContext {
    pub fn new() -> OpenContext {
        OpenContext { entries: Vec::with_capacity(OPEN_CONTEXT_ENTRIES_RESERVED) }
    }

    /// Sets `path` to `value`, replacing what it held.
    pub fn insert(&mut self, path: impl Into<Cow<'static, str>>, value: impl Into<Value>) {
        let path = path.into();
        // Entries given in key order (as a moment's context is built) are
        // appended after one comparison.
        if self.entries.last().is_none_or(|(last, _)| *last < path) {
            self.entries.push((path, value.into()));
            return;
        }
        match self.position(&path) {
            Ok(at) => self.entries[at].1 = value.into(),
            Err(at) => self.entries.insert(at, (path, value.into())),
        }
    }

    /// Where `path` is, or where it would go.
    fn position(&self, path: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|(key, _)| key.as_ref().cmp(path))
    }

    /// The value at `path`; `None` when missing or null.
    pub fn get(&self, path: &str) -> Option<&Value> {
        let at = self.position(path).ok()?;
        Some(&self.entries[at].1).filter(|value| !value.is_null())
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(key, value)| (key.as_ref(), value))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
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
            other => match out.position(&path) {
                Ok(_) => return Err(ContextError::Duplicate { key: path }),
                Err(at) => out.entries.insert(at, (Cow::Owned(path), other.clone())),
            },
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

    /// Entries inserted in any order, and replaced, read back in key order.
    #[test]
    fn entries_are_kept_in_key_order_and_replaced_in_place() {
        let mut context = OpenContext::new();
        for (key, value) in [("time.hour", 3), ("a", 1), ("me.name", 2), ("time.day", 4), ("a", 5)] {
            context.insert(key, value);
        }
        context.insert(String::from("world.x"), 6);
        let entries: Vec<(&str, &Value)> = context.iter().collect();
        let expected = [
            ("a", json!(5)),
            ("me.name", json!(2)),
            ("time.day", json!(4)),
            ("time.hour", json!(3)),
            ("world.x", json!(6)),
        ];
        assert_eq!(entries.len(), expected.len());
        for ((key, value), (expected_key, expected_value)) in entries.into_iter().zip(&expected) {
            assert_eq!((key, value), (*expected_key, expected_value));
        }
        assert_eq!(context.get("time.hour"), Some(&json!(3)));
        assert_eq!(context.get("time"), None);
        assert_eq!(context.get("zzz"), None);
    }

    #[test]
    fn null_counts_as_missing() {
        let context = OpenContext::from_json(&json!({"a": null, "b": 0})).unwrap();
        assert_eq!(context.get("a"), None);
        assert_eq!(context.get("b"), Some(&json!(0)));
    }
}
