//! The stack composer: the primary role and its modifiers become one
//! effective role. Pure and order-stable.
//!
//! Rules (docs/roles.md):
//! - each can* list and `see` unite in stack order (primary first), keeping
//!   the first occurrence of each entry;
//! - the prompt is the primary's, then each modifier's framed by its name;
//! - `selfContinue` and `defaultOrientation`: the primary's value (default
//!   `false` / `forward`), overridden in stack order by every modifier that
//!   sets one explicitly, so the last explicit setting wins;
//! - `llm`, `recall` and `actImportance`: the last role in stack order
//!   that sets one.

use super::context::OpenContext;
use super::definition::{CanEntry, Orientation, RecallSpec, Role};
use crate::canonical;
use crate::fact::Hash32;
use ciborium::value::Value as Cbor;
use std::sync::Arc;

/// How each modifier's prompt is framed in the composed prompt.
pub const MODIFIER_FRAME: &str = "Additionally, you are currently in this mode — ";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComposedRole {
    pub primary: Option<Arc<str>>,
    pub stack: Vec<Arc<str>>,
    pub can_see: Vec<CanEntry>,
    pub can_do: Vec<CanEntry>,
    pub can_summon: Vec<CanEntry>,
    pub can_be: Vec<CanEntry>,
    pub see: Vec<Arc<str>>,
    pub self_continue: bool,
    pub orientation: Orientation,
    /// The composed prompt template (placeholders not yet filled).
    pub prompt: String,
    /// The LLM connection named by the stack (the last role that names one).
    pub llm: Option<Arc<str>>,
    /// The `recall` block of the last role in the stack that has one.
    pub recall: Option<RecallSpec>,
    /// The `actImportance` of the last role in the stack that sets one.
    pub act_importance: Option<u8>,
    /// Every gate of the stack's roles, in stack order (`super::approval`).
    pub approvals: Vec<super::approval::ApprovalGate>,
}

fn unite<T: Clone + PartialEq>(into: &mut Vec<T>, from: &[T]) {
    for entry in from {
        if !into.contains(entry) {
            into.push(entry.clone());
        }
    }
}

/// Composes a primary role (if any) and its modifiers, in order.
pub fn compose(primary: Option<&Arc<Role>>, modifiers: &[Arc<Role>]) -> ComposedRole {
    let mut composed = ComposedRole {
        primary: primary.map(|role| role.name.clone()),
        stack: modifiers.iter().map(|role| role.name.clone()).collect(),
        can_see: Vec::new(),
        can_do: Vec::new(),
        can_summon: Vec::new(),
        can_be: Vec::new(),
        see: Vec::new(),
        self_continue: false,
        orientation: Orientation::Forward,
        prompt: String::new(),
        llm: None,
        recall: None,
        act_importance: None,
        approvals: Vec::new(),
    };
    let prompt_len: usize = primary.map_or(0, |role| role.prompt.len())
        + modifiers.iter().map(|role| role.prompt.len() + 64).sum::<usize>();
    composed.prompt.reserve(prompt_len);
    for (position, role) in primary.into_iter().chain(modifiers.iter()).enumerate() {
        unite(&mut composed.can_see, &role.can_see);
        unite(&mut composed.can_do, &role.can_do);
        unite(&mut composed.can_summon, &role.can_summon);
        unite(&mut composed.can_be, &role.can_be);
        unite(&mut composed.see, &role.see);
        unite(&mut composed.approvals, &role.approvals);
        if let Some(flag) = role.self_continue {
            composed.self_continue = flag;
        }
        if let Some(orientation) = role.default_orientation {
            composed.orientation = orientation;
        }
        if let Some(connection) = &role.llm {
            composed.llm = Some(connection.clone());
        }
        if let Some(recall) = &role.recall {
            composed.recall = Some(recall.clone());
        }
        if let Some(importance) = role.act_importance {
            composed.act_importance = Some(importance);
        }
        let is_modifier = primary.is_none() || position > 0;
        if is_modifier {
            if !composed.prompt.is_empty() {
                composed.prompt.push_str("\n\n");
            }
            composed.prompt.push_str(MODIFIER_FRAME);
            composed.prompt.push_str(&role.name);
            composed.prompt.push_str(": ");
            composed.prompt.push_str(role.prompt.trim_end());
        } else {
            composed.prompt.push_str(role.prompt.trim_end());
        }
    }
    composed
}

fn entries_cbor(entries: &[CanEntry]) -> Cbor {
    Cbor::Array(entries.iter().map(CanEntry::to_cbor).collect())
}

fn names_cbor(names: &[Arc<str>]) -> Cbor {
    Cbor::Array(names.iter().map(|name| Cbor::Text(name.to_string())).collect())
}

impl ComposedRole {
    pub fn to_cbor(&self) -> Cbor {
        let text = |key: &str| Cbor::Text(key.to_string());
        let mut fields = vec![
            (text("primary"), self.primary.as_ref().map(|name| Cbor::Text(name.to_string())).unwrap_or(Cbor::Null)),
            (text("stack"), names_cbor(&self.stack)),
            (text("canSee"), entries_cbor(&self.can_see)),
            (text("canDo"), entries_cbor(&self.can_do)),
            (text("canSummon"), entries_cbor(&self.can_summon)),
            (text("canBe"), entries_cbor(&self.can_be)),
            (text("see"), names_cbor(&self.see)),
            (text("selfContinue"), Cbor::Bool(self.self_continue)),
            (text("orientation"), Cbor::Text(self.orientation.as_str().into())),
            (text("prompt"), Cbor::Text(self.prompt.clone())),
        ];
        // Only present when set: stacks without a connection keep their digests.
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
            let gates = self
                .approvals
                .iter()
                .map(|gate| Cbor::Array(vec![Cbor::Text(gate.rule.to_string()), gate.to_cbor()]))
                .collect();
            fields.push((text("approvals"), Cbor::Array(gates)));
        }
        Cbor::Map(fields)
    }

    /// The canonical CBOR bytes of the composed role.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        canonical::encode_value(&self.to_cbor()).expect("a composed role holds only texts, lists and flags")
    }

    /// BLAKE3 of the canonical CBOR: same inputs, same bytes, same digest.
    pub fn digest(&self) -> Hash32 {
        crate::fact::blake3_of(&self.canonical_bytes())
    }

    /// The prompt with its placeholders filled from the context.
    pub fn render_prompt(&self, context: &OpenContext) -> String {
        render(&self.prompt, context)
    }
}

/// A prompt template whose placeholders do not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaceholderError {
    #[error("a `{{{{` placeholder is never closed with `}}}}`")]
    Unclosed,
    #[error("placeholder `{{{{{given}}}}}` is not a dotted context path")]
    NotAPath { given: String },
}

/// The placeholders of a template (`{{dotted.path}}`), or why it is malformed.
pub fn placeholders(template: &str) -> Result<Vec<String>, PlaceholderError> {
    let mut found = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Err(PlaceholderError::Unclosed);
        };
        let path = after[..end].trim();
        if path.is_empty() || path.split('.').any(|segment| segment.is_empty() || segment.contains(char::is_whitespace))
        {
            return Err(PlaceholderError::NotAPath { given: after[..end].to_string() });
        }
        found.push(path.to_string());
        rest = &after[end + 2..];
    }
    Ok(found)
}

/// Fills `{{path}}` with the context value at `path`: strings as they are,
/// other values as JSON, missing keys as the empty string.
pub fn render(template: &str, context: &OpenContext) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        match context.get(after[..end].trim()) {
            Some(serde_json::Value::String(text)) => out.push_str(text),
            Some(other) => out.push_str(&other.to_string()),
            None => {}
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}
