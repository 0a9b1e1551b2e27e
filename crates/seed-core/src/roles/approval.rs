//! Approval gates: the calls a role marks as needing someone's yes before
//! they apply (a role's `approvals` list; docs/approvals.md).
//!
//! A gate names the kind of call (`do`, optionally one operation; `summon`;
//! `birth`), a `when` condition over the call (its `args.*`, `payload.*`,
//! `content`, `target` and `action`, beside the moment's open context), who
//! may decide (a named being, the requester's parent or owner, or anyone
//! wearing a role) and how long the request waits. What happens to a gated
//! call is the moment's business (`crate::moment::approval`); here is only
//! the rule and whether a call matches it.

use super::context::OpenContext;
use super::when::{self, Lookup, PathTable};
use crate::world::VerbCall;
use ciborium::value::Value as Cbor;
use serde::Deserialize;
use serde_json::Value as Json;
use std::fmt;
use std::sync::Arc;

/// How long a request waits for a decision when its gate does not say.
pub const APPROVAL_TTL_MS_DEFAULT: u64 = 86_400_000;
/// The longest a gate may let a request wait (30 days).
pub const APPROVAL_TTL_MS_MAX: u64 = 30 * 86_400_000;
/// Most gates one role declares.
pub const ROLE_APPROVAL_GATES_MAX: usize = 32;
/// Most approver entries one gate names.
pub const APPROVERS_PER_GATE_MAX: usize = 16;
/// Deepest nesting of a call's arguments the `when` condition can name
/// (`args.a.b.c`); deeper values are offered whole at the last level.
pub const APPROVAL_ARGS_DEPTH_MAX: usize = 4;

/// The kind of call a gate holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum GatedVerb {
    Do,
    Summon,
    Birth,
}

impl GatedVerb {
    pub fn as_str(self) -> &'static str {
        match self {
            GatedVerb::Do => "do",
            GatedVerb::Summon => "summon",
            GatedVerb::Birth => "birth",
        }
    }

    fn named(name: &str) -> Option<GatedVerb> {
        match name {
            "do" => Some(GatedVerb::Do),
            "summon" => Some(GatedVerb::Summon),
            "birth" => Some(GatedVerb::Birth),
            _ => None,
        }
    }
}

/// Who may decide a gated call.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApproverSpec {
    /// A named being (`"@treasurer"`).
    Being(Arc<str>),
    /// Any being wearing this role (primary or modifier) when it decides.
    Role(Arc<str>),
    /// The requester's parent.
    Parent,
    /// The requester's owner (its nearest human or inhabited ancestor, else
    /// the operator: `crate::spend::owner_of`).
    Owner,
}

impl fmt::Display for ApproverSpec {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApproverSpec::Being(name) => write!(formatter, "@{name}"),
            ApproverSpec::Role(role) => write!(formatter, "role {role}"),
            ApproverSpec::Parent => formatter.write_str("parent"),
            ApproverSpec::Owner => formatter.write_str("owner"),
        }
    }
}

impl ApproverSpec {
    fn to_cbor(&self) -> Cbor {
        match self {
            ApproverSpec::Being(name) => Cbor::Text(format!("@{name}")),
            ApproverSpec::Role(role) => Cbor::Map(vec![(Cbor::Text("role".into()), Cbor::Text(role.to_string()))]),
            ApproverSpec::Parent => Cbor::Text("parent".into()),
            ApproverSpec::Owner => Cbor::Text("owner".into()),
        }
    }
}

/// One gate of a role, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalGate {
    /// `ROLE#INDEX`: the role that declared it and its place in the list.
    pub rule: Arc<str>,
    pub verb: GatedVerb,
    /// For `do`: the one operation held back (`None`: every operation).
    pub action: Option<Arc<str>>,
    /// The `when` condition as written (compiled when a call is checked).
    pub when: Option<Json>,
    pub approvers: Vec<ApproverSpec>,
    pub ttl_ms: u64,
}

/// A gate as a role file writes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct ApprovalFile {
    call: String,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    when: Option<Json>,
    #[serde(default)]
    approvers: Vec<ApproverFile>,
    #[serde(default)]
    ttl_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum ApproverFile {
    Named(String),
    Role { role: String },
}

impl ApprovalGate {
    /// Reads the gates of role `role`, each problem given with its field
    /// (`approvals[0].approvers[1]`) and reason.
    pub(super) fn read_all(
        role: &str,
        files: &[ApprovalFile],
        problems: &mut Vec<(String, String)>,
    ) -> Vec<ApprovalGate> {
        if files.len() > ROLE_APPROVAL_GATES_MAX {
            problems.push(("approvals".into(), format!("more than {ROLE_APPROVAL_GATES_MAX} gates")));
            return Vec::new();
        }
        let mut gates = Vec::new();
        for (index, file) in files.iter().enumerate() {
            let at = |field: &str| format!("approvals[{index}].{field}");
            let before = problems.len();
            let verb = GatedVerb::named(&file.call);
            if verb.is_none() {
                problems.push((at("call"), format!("{:?} is not do, summon or birth", file.call)));
            }
            if let Some(action) = &file.action {
                if verb != Some(GatedVerb::Do) {
                    problems.push((at("action"), "only a `do` gate names an operation".into()));
                } else if let Some(reason) = crate::names::kebab_name_problem(action) {
                    problems.push((at("action"), format!("{action:?}: {reason}")));
                }
            }
            if let Some(condition) = &file.when {
                if let Err(error) = when::compile(condition, &mut PathTable::default(), &at("when")) {
                    problems.push((error.path, error.reason));
                }
            }
            if file.approvers.is_empty() {
                problems.push((
                    at("approvers"),
                    "names no one: give \"@name\", \"parent\", \"owner\" or {role = \"...\"}".into(),
                ));
            }
            if file.approvers.len() > APPROVERS_PER_GATE_MAX {
                problems.push((at("approvers"), format!("more than {APPROVERS_PER_GATE_MAX} entries")));
            }
            let mut approvers = Vec::new();
            for (position, approver) in file.approvers.iter().enumerate() {
                let field = at(&format!("approvers[{position}]"));
                let read = match approver {
                    ApproverFile::Named(text) if text == "parent" => Ok(ApproverSpec::Parent),
                    ApproverFile::Named(text) if text == "owner" => Ok(ApproverSpec::Owner),
                    ApproverFile::Named(text) => match text.strip_prefix('@') {
                        Some(name) => match crate::names::being_name_problem(name) {
                            None => Ok(ApproverSpec::Being(Arc::from(name))),
                            Some(reason) => Err(format!("{text:?}: {reason}")),
                        },
                        None => Err(format!("{text:?} is not \"@name\", \"parent\", \"owner\" or {{role = \"...\"}}")),
                    },
                    ApproverFile::Role { role } => match crate::names::kebab_name_problem(role) {
                        None => Ok(ApproverSpec::Role(Arc::from(role.as_str()))),
                        Some(reason) => Err(format!("role {role:?}: {reason}")),
                    },
                };
                match read {
                    Ok(spec) if approvers.contains(&spec) => problems.push((field, format!("{spec} is named twice"))),
                    Ok(spec) => approvers.push(spec),
                    Err(reason) => problems.push((field, reason)),
                }
            }
            let ttl_ms = file.ttl_ms.unwrap_or(APPROVAL_TTL_MS_DEFAULT);
            if ttl_ms == 0 || ttl_ms > APPROVAL_TTL_MS_MAX {
                problems.push((at("ttlMs"), format!("{ttl_ms} is not from 1 to {APPROVAL_TTL_MS_MAX} milliseconds")));
            }
            if problems.len() > before {
                continue;
            }
            gates.push(ApprovalGate {
                rule: Arc::from(format!("{role}#{index}").as_str()),
                verb: verb.expect("checked above"),
                action: file.action.as_deref().map(Arc::from),
                when: file.when.clone(),
                approvers,
                ttl_ms,
            });
        }
        gates
    }

    /// The gate as its role's definition holds it (the file's form, with
    /// the time-to-live always written): what the role's digest covers.
    pub fn to_cbor(&self) -> Cbor {
        let text = |key: &str| Cbor::Text(key.to_string());
        let mut fields = vec![(text("call"), Cbor::Text(self.verb.as_str().into()))];
        if let Some(action) = &self.action {
            fields.push((text("action"), Cbor::Text(action.to_string())));
        }
        if let Some(condition) = &self.when {
            fields.push((text("when"), crate::world::json_to_cbor(condition)));
        }
        fields.push((text("approvers"), Cbor::Array(self.approvers.iter().map(ApproverSpec::to_cbor).collect())));
        fields.push((text("ttlMs"), Cbor::Integer(self.ttl_ms.into())));
        Cbor::Map(fields)
    }

    /// Whether this gate holds `call` back, its condition read over
    /// `context` (the moment's open context) and the call's own keys.
    pub fn holds_back(&self, call: &VerbCall, context: &OpenContext) -> bool {
        let matches_kind = match (self.verb, call) {
            (GatedVerb::Do, VerbCall::Do { action, .. }) => self.action.as_deref().is_none_or(|gated| gated == action),
            (GatedVerb::Summon, VerbCall::Summon { .. }) => true,
            (GatedVerb::Birth, VerbCall::Be { operation, .. }) => operation == "birth",
            _ => false,
        };
        if !matches_kind {
            return false;
        }
        let Some(condition) = &self.when else { return true };
        let mut paths = PathTable::default();
        // Validated when the role was read; a gate whose condition no longer
        // compiles holds every matching call back (never lets one through).
        let Ok(compiled) = when::compile(condition, &mut paths, "when") else { return true };
        let context = call_context(call, context);
        compiled.eval(&mut Lookup::new(&context, &paths)).is_ok()
    }
}

/// The open context with the call's keys beside it: `action`, `target`,
/// `args.*` (a do), `content` and `target` (a summon), `payload.*` (a birth).
pub fn call_context(call: &VerbCall, context: &OpenContext) -> OpenContext {
    let mut with_call = context.clone();
    match call {
        VerbCall::Do { target, action, args } => {
            with_call.insert("action", action.as_str());
            with_call.insert("target", target.as_str());
            flatten_into(&mut with_call, "args", args, 0);
        }
        VerbCall::Summon { target, content, .. } => {
            with_call.insert("target", target.as_str());
            with_call.insert("content", content.as_str());
        }
        VerbCall::Be { payload, .. } => flatten_into(&mut with_call, "payload", payload, 0),
        VerbCall::See { address } => with_call.insert("target", address.as_str()),
    }
    with_call
}

fn flatten_into(context: &mut OpenContext, prefix: &str, value: &Json, depth: usize) {
    match value {
        Json::Object(map) if depth < APPROVAL_ARGS_DEPTH_MAX => {
            for (key, inner) in map {
                flatten_into(context, &format!("{prefix}.{key}"), inner, depth + 1);
            }
        }
        other if depth > 0 => context.insert(prefix.to_string(), other.clone()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gate(file: Json) -> Result<ApprovalGate, Vec<(String, String)>> {
        let file: ApprovalFile = serde_json::from_value(file).map_err(|error| vec![("".into(), error.to_string())])?;
        let mut problems = Vec::new();
        let mut gates = ApprovalGate::read_all("clerk", &[file], &mut problems);
        if problems.is_empty() {
            Ok(gates.remove(0))
        } else {
            Err(problems)
        }
    }

    fn transfer(amount: i64) -> VerbCall {
        VerbCall::Do { target: "/bank".into(), action: "transfer".into(), args: json!({"amount": amount, "to": "@bo"}) }
    }

    #[test]
    fn a_gate_holds_back_the_calls_its_rule_names() {
        let large = gate(json!({"call": "do", "action": "transfer", "when": {"args.amount": {"gt": 100}},
                                "approvers": ["@treasurer"]}))
        .expect("a valid gate");
        let context = OpenContext::new();
        let table = [
            (transfer(150), true),
            (transfer(100), false),
            (VerbCall::Do { target: "/bank".into(), action: "deposit".into(), args: json!({"amount": 500}) }, false),
            (VerbCall::Summon { target: "@bo".into(), content: "hi".into(), in_reply_to: None }, false),
        ];
        for (call, expected) in table {
            assert_eq!(large.holds_back(&call, &context), expected, "{call:?}");
        }
        let births = gate(json!({"call": "birth", "approvers": ["parent", {"role": "warden"}], "ttlMs": 60000}))
            .expect("a valid gate");
        let birth = VerbCall::Be { operation: "birth".into(), payload: json!({"name": "kid"}) };
        assert!(births.holds_back(&birth, &context));
        assert!(!births.holds_back(&VerbCall::Be { operation: "note".into(), payload: json!({}) }, &context));
        assert_eq!(births.ttl_ms, 60_000);
        assert_eq!(births.rule.as_ref(), "clerk#0");
    }

    #[test]
    fn a_bad_gate_names_its_field() {
        let table = [
            (json!({"call": "see", "approvers": ["owner"]}), "approvals[0].call"),
            (json!({"call": "summon", "action": "x", "approvers": ["owner"]}), "approvals[0].action"),
            (json!({"call": "do"}), "approvals[0].approvers"),
            (json!({"call": "do", "approvers": ["treasurer"]}), "approvals[0].approvers[0]"),
            (json!({"call": "do", "approvers": ["owner", "owner"]}), "approvals[0].approvers[1]"),
            (json!({"call": "do", "approvers": ["owner"], "ttlMs": 0}), "approvals[0].ttlMs"),
            (
                json!({"call": "do", "approvers": ["owner"], "when": {"args.amount": {"around": 3}}}),
                "approvals[0].when",
            ),
        ];
        for (file, field) in table {
            let problems = gate(file.clone()).expect_err("refused");
            assert!(problems.iter().any(|(at, _)| at.starts_with(field)), "{file}: {problems:?}");
        }
    }
}
