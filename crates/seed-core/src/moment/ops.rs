//! DO operations: named actions with an argument schema. The core registers
//! a few in Rust; extensions register more in Rhai. An operation turns a
//! validated call into effects (data) or refuses with a reason; it never
//! touches the world itself.

use super::refusal::{ArgProblem, OpError};
use crate::script::ScriptEngine;
use crate::world::address::Address;
use crate::world::{Effect, World};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Most effects one DO operation may produce, unless the land's
/// `op_effects_max` key says otherwise (`crate::config`).
pub const OP_EFFECTS_MAX: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    Text,
    Integer,
    Bool,
    Any,
}

impl ArgType {
    pub fn parse(name: &str) -> Option<ArgType> {
        match name {
            "string" | "text" => Some(ArgType::Text),
            "int" | "integer" => Some(ArgType::Integer),
            "bool" => Some(ArgType::Bool),
            "any" => Some(ArgType::Any),
            _ => None,
        }
    }

    fn accepts(self, value: &Json) -> bool {
        match self {
            ArgType::Text => value.is_string(),
            ArgType::Integer => value.as_i64().is_some(),
            ArgType::Bool => value.is_boolean(),
            ArgType::Any => !crate::world::holds_fraction(value),
        }
    }

    fn name(self) -> &'static str {
        match self {
            ArgType::Text => "a string",
            ArgType::Integer => "an integer",
            ArgType::Bool => "true or false",
            ArgType::Any => "a value without fractions",
        }
    }
}

/// The argument schema: field → (type, required).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArgSchema {
    pub fields: BTreeMap<String, (ArgType, bool)>,
    /// Any other field is accepted (an MCP tool's arguments, which its
    /// server checks against its own schema).
    pub open: bool,
}

impl ArgSchema {
    /// Any object without fractions (facts hold none).
    pub fn open() -> ArgSchema {
        ArgSchema { fields: BTreeMap::new(), open: true }
    }

    pub fn field(mut self, name: &str, kind: ArgType, required: bool) -> ArgSchema {
        self.fields.insert(name.to_string(), (kind, required));
        self
    }

    /// Checks `args` (an object) against the schema, naming the bad field.
    pub fn validate(&self, args: &Json) -> Result<(), ArgProblem> {
        let empty = serde_json::Map::new();
        let object = match args {
            Json::Object(object) => object,
            Json::Null => &empty,
            _ => return Err(ArgProblem::NotAnObject),
        };
        for (name, (kind, required)) in &self.fields {
            match object.get(name) {
                None | Some(Json::Null) if *required => return Err(ArgProblem::Required { name: name.clone() }),
                Some(value) if !value.is_null() && !kind.accepts(value) => {
                    return Err(ArgProblem::WrongType { name: name.clone(), expected: kind.name() })
                }
                _ => {}
            }
        }
        if self.open {
            if let Some((name, _)) = object.iter().find(|(_, value)| crate::world::holds_fraction(value)) {
                return Err(ArgProblem::WrongType { name: name.clone(), expected: ArgType::Any.name() });
            }
            return Ok(());
        }
        if let Some(unknown) = object.keys().find(|key| !self.fields.contains_key(*key)) {
            return Err(ArgProblem::Unknown { name: unknown.clone() });
        }
        Ok(())
    }
}

/// What an operation sees of its call.
pub struct OpCall<'a> {
    pub world: &'a World,
    pub actor: &'a str,
    pub target: &'a Address,
    pub args: &'a Json,
    /// The land's Rhai engine: an operation that stores a script compiles it first.
    pub scripts: &'a ScriptEngine,
    /// The roles the land's files define (before any authored role).
    pub file_roles: &'a crate::roles::definition::RoleRegistry,
}

pub type BuiltinOp = fn(&OpCall<'_>) -> Result<Vec<Effect>, OpError>;

#[derive(Clone, Debug)]
pub enum OpHandler {
    Builtin(BuiltinOp),
    /// Rhai source: gets `actor`, `target`, `args`, `world` (a small view) and
    /// returns an array of effect maps (or throws to refuse).
    Script(Arc<str>),
    /// A tool of an MCP server (`crate::tools`): changes nothing in the
    /// world; the moment calls it and records the answer in the act.
    Tool {
        server: String,
        tool: String,
    },
}

#[derive(Clone, Debug)]
pub struct OpSpec {
    pub name: String,
    pub schema: ArgSchema,
    pub handler: OpHandler,
    /// Where it came from (`core` or an extension's name).
    pub origin: String,
    /// An MCP tool's description and input schema, as recorded in its
    /// extension: offered to a model with the operation.
    pub described: Option<Arc<crate::tools::McpToolSchema>>,
}

#[derive(Clone, Default)]
pub struct OpRegistry {
    ops: BTreeMap<String, OpSpec>,
}

impl OpRegistry {
    /// The core's operations: `move`, `publish-signal`, `set-quality`,
    /// `create-matter`, the role, account and budget operations, `set-config`.
    pub fn core() -> OpRegistry {
        let mut registry = OpRegistry::default();
        let mut add = |name: &str, schema: ArgSchema, handler: BuiltinOp| {
            registry.register(OpSpec {
                name: name.into(),
                schema,
                handler: OpHandler::Builtin(handler),
                origin: "core".into(),
                described: None,
            })
        };
        add("move", ArgSchema::default().field("to", ArgType::Text, true), op_move);
        add(
            "publish-signal",
            ArgSchema::default().field("key", ArgType::Text, true).field("value", ArgType::Any, false),
            op_publish_signal,
        );
        add(
            "set-quality",
            ArgSchema::default().field("key", ArgType::Text, true).field("value", ArgType::Any, false),
            op_set_quality,
        );
        add(
            "create-matter",
            ArgSchema::default().field("kind", ArgType::Text, true).field("fields", ArgType::Any, false),
            op_create_matter,
        );
        add("author-role", ArgSchema::default().field("definition", ArgType::Any, true), op_author_role);
        add("revert-role", ArgSchema::default().field("role", ArgType::Text, true), op_revert_role);
        add(
            "edit-role-flow",
            ArgSchema::default().field("being", ArgType::Text, true).field("flow", ArgType::Any, true),
            op_edit_role_flow,
        );
        add(
            "grant-account",
            ArgSchema::default().field("account", ArgType::Text, true).field("being", ArgType::Text, true).field(
                "tokenHash",
                ArgType::Text,
                true,
            ),
            op_grant_account,
        );
        add("revoke-account", ArgSchema::default().field("account", ArgType::Text, true), op_revoke_account);
        add(
            "set-budget",
            crate::spend::LIMIT_KEYS.iter().fold(
                ArgSchema::default().field("being", ArgType::Text, false).field("role", ArgType::Text, false).field(
                    "land",
                    ArgType::Bool,
                    false,
                ),
                |schema, limit| schema.field(limit, ArgType::Integer, false),
            ),
            op_set_budget,
        );
        add(
            "set-config",
            ArgSchema::default().field("key", ArgType::Text, true).field("value", ArgType::Any, false),
            op_set_config,
        );
        let being = || ArgSchema::default().field("being", ArgType::Text, true);
        add("set-owner", being(), |call| ownership_call(call, "set-owner")?.set_owner());
        add("remove-owner", ArgSchema::default(), |call| ownership_call(call, "remove-owner")?.remove_owner());
        add("transfer-ownership", being(), |call| ownership_call(call, "transfer-ownership")?.transfer());
        add("add-contributor", being(), |call| ownership_call(call, "add-contributor")?.add_contributor());
        add("remove-contributor", being(), |call| ownership_call(call, "remove-contributor")?.remove_contributor());
        add(
            "scope-extension",
            ArgSchema::default().field("extension", ArgType::Text, true).field("scope", ArgType::Any, false),
            |call| ownership_call(call, "scope-extension")?.scope_extension(),
        );
        registry
    }

    pub fn register(&mut self, spec: OpSpec) {
        self.ops.insert(spec.name.clone(), spec);
    }

    pub fn get(&self, name: &str) -> Option<&OpSpec> {
        self.ops.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.ops.keys()
    }

    /// Whether any operation calls an MCP server's tool (a moment doing one
    /// waits on that server).
    pub fn calls_tools(&self) -> bool {
        self.ops.values().any(|spec| matches!(spec.handler, OpHandler::Tool { .. }))
    }

    /// The MCP server and tool an operation calls, if it is one's.
    pub fn tool_of(&self, name: &str) -> Option<(&str, &str)> {
        match &self.ops.get(name)?.handler {
            OpHandler::Tool { server, tool } => Some((server, tool)),
            OpHandler::Builtin(_) | OpHandler::Script(_) => None,
        }
    }

    /// Validates the call and computes its effects.
    pub fn run(
        &self,
        name: &str,
        call: &OpCall<'_>,
        scripts: &ScriptEngine,
        seed: u64,
    ) -> Result<Vec<Effect>, OpError> {
        let spec = self.ops.get(name).ok_or_else(|| OpError::NotRegistered { name: name.to_string() })?;
        // An extension blocked where its caller stands offers nothing there.
        if let Some(row) = call.world.being_named(call.actor) {
            if crate::ownership::is_blocked(call.world, &spec.origin, &row.location) {
                return Err(OpError::ExtensionBlocked {
                    operation: name.to_string(),
                    extension: spec.origin.clone(),
                    space: row.location.clone(),
                });
            }
        }
        spec.schema.validate(call.args).map_err(OpError::Args)?;
        let effects = match &spec.handler {
            OpHandler::Builtin(handler) => handler(call)?,
            OpHandler::Script(source) => {
                let actor = json!(call.actor);
                let target = json!(call.target.to_string());
                let view = json!({ "signals": call.world.signals });
                let inputs: [(&str, &Json); 4] =
                    [("actor", &actor), ("target", &target), ("args", call.args), ("world", &view)];
                let limits = crate::script::limits_in(call.world);
                let output = crate::script::within_limits(limits, || scripts.run(source, &inputs, seed))
                    .map_err(OpError::Script)?;
                let effects: Vec<Effect> = match output {
                    Json::Null => Vec::new(),
                    other => serde_json::from_value(other)
                        .map_err(|error| OpError::BadEffects { reason: error.to_string() })?,
                };
                // Cascade records are the kernel's, sealed after the act.
                if effects
                    .iter()
                    .any(|effect| matches!(effect, Effect::CascadeSignal { .. } | Effect::CascadeDelivery { .. }))
                {
                    return Err(OpError::BadEffects {
                        reason: "an operation cannot make cascade records: the land seals them after the act".into(),
                    });
                }
                // So are definition records, sealed when the land loads its files.
                if effects
                    .iter()
                    .any(|effect| matches!(effect, Effect::DefinitionText { .. } | Effect::Definitions { .. }))
                {
                    return Err(OpError::BadEffects {
                        reason: "an operation cannot record definitions: the land records the files it loads".into(),
                    });
                }
                // So are peer records, sealed by the land's edge after it proved them.
                if effects.iter().any(Effect::is_canopy_record) {
                    return Err(OpError::BadEffects {
                        reason: "an operation cannot record peers: the land records what it proved of other lands"
                            .into(),
                    });
                }
                // Ownership and scoping change only through the core's operations, which hold their rules.
                if effects.iter().any(|effect| {
                    matches!(
                        effect,
                        Effect::SetSpaceOwner { .. }
                            | Effect::SetSpaceContributor { .. }
                            | Effect::ScopeExtension { .. }
                    )
                }) {
                    return Err(OpError::BadEffects {
                        reason: "an extension's operation cannot change a space's owner, contributors or scopes".into(),
                    });
                }
                effects
            }
            OpHandler::Tool { .. } => Vec::new(),
        };
        // The limit in force at the moment's cursor, so replay checks the same.
        let most = call.world.config_u64("op_effects_max", OP_EFFECTS_MAX as u64) as usize;
        if effects.len() > most {
            return Err(OpError::TooManyEffects { count: effects.len(), most });
        }
        crate::ownership::check_writes(call.world, call.actor, &effects)?;
        Ok(effects)
    }
}

fn text_arg<'a>(args: &'a Json, name: &str) -> &'a str {
    args.get(name).and_then(Json::as_str).unwrap_or_default()
}

fn op_move(call: &OpCall<'_>) -> Result<Vec<Effect>, OpError> {
    let to = crate::world::address::parse_space(text_arg(call.args, "to")).map_err(OpError::Address)?;
    if !call.world.spaces.contains_key(&to) {
        return Err(OpError::NoSpace { space: to });
    }
    Ok(vec![Effect::MoveBeing { being: call.actor.to_string(), to }])
}

fn op_publish_signal(call: &OpCall<'_>) -> Result<Vec<Effect>, OpError> {
    let key = text_arg(call.args, "key");
    if let Some(problem) = crate::world::signal_key_problem(key) {
        return Err(OpError::SignalKey { problem });
    }
    let value = call.args.get("value").cloned().filter(|value| !value.is_null());
    Ok(vec![Effect::SetSignal { key: key.to_string(), value }])
}

/// Authors (or replaces) a role: the definition is validated exactly as a
/// role file is, and the first problem is the refusal.
fn op_author_role(call: &OpCall<'_>) -> Result<Vec<Effect>, OpError> {
    let definition = call.args.get("definition").cloned().unwrap_or(Json::Null);
    if !definition.is_object() {
        return Err(OpError::DefinitionNotAnObject);
    }
    let role = super::parse_authored_role(&definition).map_err(|problems| OpError::Definition {
        problems: problems
            .iter()
            .map(|problem| format!("{}: {}", problem.field, problem.reason))
            .collect::<Vec<_>>()
            .join("; "),
    })?;
    // A script that does not compile is refused now, not found out by
    // every moment of every being that wears the role.
    if let Some(source) = &role.script {
        call.scripts.compile(source).map_err(OpError::DefinitionScript)?;
    }
    Ok(vec![Effect::PutRole { name: role.name.to_string(), definition }])
}

/// Drops an authored role so that its file definition applies again: the
/// role must be authored, and a file must define it (a role with no file
/// definition would leave the beings that wear it with nothing to wear).
fn op_revert_role(call: &OpCall<'_>) -> Result<Vec<Effect>, OpError> {
    let role = text_arg(call.args, "role");
    if !call.world.roles.contains_key(role) {
        return Err(OpError::NotAuthored { role: role.to_string() });
    }
    if call.file_roles.get(role).is_none() {
        return Err(OpError::NoFileDefinition { role: role.to_string() });
    }
    Ok(vec![Effect::DropRole { name: role.to_string() }])
}

/// Replaces a being's roleFlow. Only the being itself or an ancestor may.
fn op_edit_role_flow(call: &OpCall<'_>) -> Result<Vec<Effect>, OpError> {
    let name = text_arg(call.args, "being").trim_start_matches('@');
    let target = call.world.being_named(name).ok_or_else(|| OpError::NoBeingNamed { name: name.to_string() })?;
    let actor = call.world.being_named(call.actor).ok_or(OpError::ActorNotInWorld)?;
    if actor.id != target.id && !super::is_ancestor(call.world, actor.id, target.id) {
        return Err(OpError::NotOwnOrDescendant { actor: call.actor.to_string(), being: name.to_string() });
    }
    let flow = call.args.get("flow").cloned().unwrap_or(Json::Null);
    crate::roles::RoleFlow::from_json(&flow).map_err(OpError::Flow)?;
    // The land's `role_flow_clauses_max` at the moment's cursor.
    let clauses = flow.as_array().map_or(0, Vec::len);
    let limits = super::MomentLimits::of(call.world);
    if clauses > limits.role_flow_clauses_max {
        return Err(OpError::FlowClauses { clauses, most: limits.role_flow_clauses_max });
    }
    let depth = crate::roles::when::flow_nesting_depth(&flow);
    if depth > limits.when_nesting_depth_max {
        return Err(OpError::FlowNesting { depth, most: limits.when_nesting_depth_max });
    }
    Ok(vec![Effect::SetRoleFlow { being: name.to_string(), flow }])
}

/// The account name the operator logs in as; no person may take it.
pub const OPERATOR_ACCOUNT_NAME: &str = "operator";

/// Gives a person an account driving a human being the actor is an
/// ancestor of (a being belongs to at most one account). Granting an
/// existing account again gives it a new token.
fn op_grant_account(call: &OpCall<'_>) -> Result<Vec<Effect>, OpError> {
    let account = text_arg(call.args, "account");
    if let Some(reason) = crate::names::being_name_problem(account) {
        return Err(OpError::AccountName { reason: format!("{account:?} {reason}") });
    }
    if account == OPERATOR_ACCOUNT_NAME {
        return Err(OpError::AccountName { reason: format!("{account:?} is the operator's own login") });
    }
    let token_hash = text_arg(call.args, "tokenHash");
    if token_hash.len() != 64 || !token_hash.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    {
        return Err(OpError::TokenHash);
    }
    let name = text_arg(call.args, "being").trim_start_matches('@');
    let being = call.world.being_named(name).ok_or_else(|| OpError::NoBeingNamed { name: name.to_string() })?;
    if being.cognition != crate::fact::body::Cognition::Human {
        return Err(OpError::AccountBeingNotHuman { being: name.to_string(), cognition: being.cognition.as_str() });
    }
    let actor = call.world.being_named(call.actor).ok_or(OpError::ActorNotInWorld)?;
    if !super::is_ancestor(call.world, actor.id, being.id) {
        return Err(OpError::AccountNotDescendant { actor: call.actor.to_string(), being: name.to_string() });
    }
    if let Some((holder, _)) = call.world.account_of(&being.id).filter(|(holder, _)| *holder != account) {
        return Err(OpError::AccountBeingTaken { being: name.to_string(), account: holder.to_string() });
    }
    Ok(vec![Effect::GrantAccount {
        account: account.to_string(),
        being: name.to_string(),
        token_hash: token_hash.to_string(),
    }])
}

/// Sets limits of a budget in the land's `budgets` configuration
/// (`crate::spend`): a being's (by an ancestor of it: its owner raises what
/// it may spend), a role's or the land's (by the land's operator, the one
/// being born to no parent). A limit given as null is removed; limits not
/// given stay as they were.
fn op_set_budget(call: &OpCall<'_>) -> Result<Vec<Effect>, OpError> {
    use crate::spend::{Budgets, Limits, BUDGETS_CONFIG_KEY, LIMIT_KEYS};
    let given = |name: &str| call.args.get(name).filter(|value| !value.is_null());
    let actor = call.world.being_named(call.actor).ok_or(OpError::ActorNotInWorld)?;
    let being = given("being").and_then(Json::as_str).map(|name| name.trim_start_matches('@'));
    let role = given("role").and_then(Json::as_str);
    let land = given("land").and_then(Json::as_bool) == Some(true);
    let mut budgets = Budgets::of_world(call.world);
    let limits: &mut Limits = match (being, role, land) {
        (Some(name), None, false) => {
            let row = call.world.being_named(name).ok_or_else(|| OpError::NoBeingNamed { name: name.to_string() })?;
            if !super::is_ancestor(call.world, actor.id, row.id) {
                return Err(OpError::BudgetNotAnAncestor { actor: call.actor.to_string(), being: name.to_string() });
            }
            budgets.beings.entry(name.to_string()).or_default()
        }
        (None, Some(_), false) | (None, None, true) if actor.parent.is_some() => {
            return Err(OpError::BudgetNotOperator { actor: call.actor.to_string() })
        }
        (None, Some(role), false) => budgets.roles.entry(role.to_string()).or_default(),
        (None, None, true) => &mut budgets.land,
        _ => return Err(OpError::BudgetScope),
    };
    for limit in LIMIT_KEYS {
        let Some(value) = call.args.get(limit) else { continue };
        let value = match value {
            Json::Null => None,
            number => Some(number.as_u64().ok_or(OpError::BudgetLimit { limit })?),
        };
        limits.set(limit, value);
    }
    budgets.beings.retain(|_, limits| !limits.is_empty());
    budgets.roles.retain(|_, limits| !limits.is_empty());
    let value = (budgets != Budgets::default()).then(|| budgets.to_json());
    Ok(vec![Effect::SetConfig { key: BUDGETS_CONFIG_KEY.to_string(), value }])
}

/// An ownership operation's call: its target must be a space.
fn ownership_call<'a>(
    call: &'a OpCall<'a>,
    operation: &'static str,
) -> Result<crate::ownership::OwnershipCall<'a>, OpError> {
    let Address::Space(space) = call.target else {
        return Err(OpError::WrongTarget { operation, wanted: "a space" });
    };
    Ok(crate::ownership::OwnershipCall { world: call.world, actor: call.actor, space, args: call.args })
}

/// Sets one configuration key (`config::CONFIG_KEYS`) to a value in its
/// range, or back to its default (`value` null or absent). Who may is the
/// verb layer's question: the operation is in the setter's `canDo`.
fn op_set_config(call: &OpCall<'_>) -> Result<Vec<Effect>, OpError> {
    let key = crate::config::key_for_setting(text_arg(call.args, "key")).map_err(OpError::Config)?;
    let value = crate::config::check_value(key, call.args.get("value").unwrap_or(&Json::Null))
        .map_err(OpError::Config)?
        .map(Json::from);
    Ok(vec![Effect::SetConfig { key: key.name.to_string(), value }])
}

/// Ends an account; only an ancestor of its being may.
fn op_revoke_account(call: &OpCall<'_>) -> Result<Vec<Effect>, OpError> {
    let account = text_arg(call.args, "account");
    let granted =
        call.world.accounts.get(account).ok_or_else(|| OpError::NoAccount { account: account.to_string() })?;
    let actor = call.world.being_named(call.actor).ok_or(OpError::ActorNotInWorld)?;
    if !super::is_ancestor(call.world, actor.id, granted.being) {
        let being = call.world.name_of(&granted.being).unwrap_or_default().to_string();
        return Err(OpError::AccountNotDescendant { actor: call.actor.to_string(), being });
    }
    Ok(vec![Effect::RevokeAccount { account: account.to_string() }])
}

fn op_set_quality(call: &OpCall<'_>) -> Result<Vec<Effect>, OpError> {
    let Address::Space(path) = call.target else {
        return Err(OpError::WrongTarget { operation: "set-quality", wanted: "a space" });
    };
    if !call.world.spaces.contains_key(path) {
        return Err(OpError::NoSpace { space: path.clone() });
    }
    let value = call.args.get("value").cloned().filter(|value| !value.is_null());
    Ok(vec![Effect::SetSpaceQuality { path: path.clone(), key: text_arg(call.args, "key").to_string(), value }])
}

fn op_create_matter(call: &OpCall<'_>) -> Result<Vec<Effect>, OpError> {
    let Address::Matter { space, .. } = call.target else {
        return Err(OpError::WrongTarget { operation: "create-matter", wanted: "a matter address (/space#id)" });
    };
    if !call.world.spaces.contains_key(space) {
        return Err(OpError::NoSpace { space: space.clone() });
    }
    if call.world.matter.contains_key(&call.target.to_string()) {
        return Err(OpError::MatterExists { address: call.target.to_string() });
    }
    let fields = match call.args.get("fields") {
        Some(Json::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => BTreeMap::new(),
    };
    Ok(vec![Effect::PutMatter {
        address: call.target.to_string(),
        kind: text_arg(call.args, "kind").to_string(),
        fields,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a scripted operation made of `script` as @ada at `/`, in a world
    /// whose configuration holds `config`.
    fn run_script_op(script: &str, config: &[(&str, u64)]) -> Result<Vec<Effect>, OpError> {
        let scripts = ScriptEngine::new();
        let roles = crate::roles::definition::RoleRegistry::new();
        let target: Address = "/".parse().unwrap();
        let mut registry = OpRegistry::default();
        registry.register(OpSpec {
            name: "scripted".into(),
            schema: ArgSchema::default(),
            handler: OpHandler::Script(Arc::from(script)),
            origin: "test".into(),
            described: None,
        });
        let mut world = World::default();
        for (key, value) in config {
            world.config.insert((*key).into(), json!(value));
        }
        let args = json!({});
        let call =
            OpCall { world: &world, actor: "ada", target: &target, args: &args, scripts: &scripts, file_roles: &roles };
        registry.run("scripted", &call, &scripts, 7)
    }

    #[test]
    fn an_operations_effects_are_bounded_by_the_op_effects_max_in_force_at_the_cursor() {
        let ring_three = r#"[#{op: "set-signal", key: "a", value: 1}, #{op: "set-signal", key: "b", value: 2},
                    #{op: "set-signal", key: "c", value: 3}]"#;
        let check = |limit: Option<u64>, expected: Result<usize, usize>| {
            let config: Vec<(&str, u64)> = limit.map(|limit| ("op_effects_max", limit)).into_iter().collect();
            match (run_script_op(ring_three, &config), expected) {
                (Ok(effects), Ok(count)) => assert_eq!(effects.len(), count, "{limit:?}"),
                (Err(OpError::TooManyEffects { count, most }), Err(expected_most)) => {
                    assert_eq!((count, most), (3, expected_most), "{limit:?}")
                }
                (got, expected) => panic!("{limit:?}: {got:?} vs {expected:?}"),
            }
        };
        check(None, Ok(3));
        check(Some(3), Ok(3));
        check(Some(2), Err(2));
        check(Some(1), Err(1));
    }

    #[test]
    fn an_operations_script_runs_within_the_script_operations_max_in_force_at_the_cursor() {
        let counting = r#"let n = 0; for i in 0..3000 { n += 1; } [#{op: "set-signal", key: "n", value: n}]"#;
        let check = |limit: Option<u64>, allowed: bool| {
            let config: Vec<(&str, u64)> = limit.map(|limit| ("script_operations_max", limit)).into_iter().collect();
            match (run_script_op(counting, &config), allowed) {
                (Ok(effects), true) => assert_eq!(effects.len(), 1, "{limit:?}"),
                (Err(OpError::Script(crate::script::ScriptError::Budget { reason })), false) => {
                    assert!(reason.contains(&format!("more than {} operations", limit.unwrap_or(0))), "{reason}")
                }
                (got, allowed) => panic!("{limit:?}: {got:?}, allowed {allowed}"),
            }
        };
        check(None, true);
        check(Some(1_000), false);
        check(Some(50_000), true);
    }

    #[test]
    fn an_operation_cannot_make_the_records_only_the_land_seals() {
        let check = |script: &str, expected: &str| match run_script_op(script, &[]) {
            Err(OpError::BadEffects { reason }) => assert!(reason.contains(expected), "{script}: {reason}"),
            other => panic!("{script}: {other:?}"),
        };
        check(r#"[#{op: "definitions", set: #{fixture: "w.toml", entries: #{}}}]"#, "cannot record definitions");
        check(
            r#"[#{op: "set-signal", key: "a", value: 1}, #{op: "definitions", set: #{fixture: "w.toml", entries: #{}}}]"#,
            "cannot record definitions",
        );
    }

    #[test]
    fn a_budget_is_set_by_an_ancestor_for_a_being_and_by_the_operator_for_a_role_or_the_land() {
        let world = crate::spend::tests::family();
        let scripts = ScriptEngine::new();
        let roles = crate::roles::definition::RoleRegistry::new();
        let target: Address = "/".parse().unwrap();
        let check = |actor: &str, args: Json, expected: Result<Json, &str>| {
            let call =
                OpCall { world: &world, actor, target: &target, args: &args, scripts: &scripts, file_roles: &roles };
            match (op_set_budget(&call), expected) {
                (Ok(effects), Ok(budgets)) => assert_eq!(
                    effects,
                    vec![Effect::SetConfig { key: "budgets".into(), value: (!budgets.is_null()).then_some(budgets) }],
                    "@{actor} {args}"
                ),
                (Err(error), Err(needle)) => assert!(error.to_string().contains(needle), "@{actor} {args}: {error}"),
                (got, expected) => panic!("@{actor} {args}: {got:?} vs {expected:?}"),
            }
        };
        check(
            "steward",
            json!({"being": "@page", "tokens_per_hour": 500}),
            Ok(json!({"beings": {"page": {"tokens_per_hour": 500}}})),
        );
        check(
            "operator",
            json!({"being": "clerk", "cost_micros_per_day": 0}),
            Ok(json!({"beings": {"clerk": {"cost_micros_per_day": 0}}})),
        );
        check(
            "operator",
            json!({"role": "clerk", "tokens_per_day": 9}),
            Ok(json!({"roles": {"clerk": {"tokens_per_day": 9}}})),
        );
        check("operator", json!({"land": true, "tokens_per_hour": 1}), Ok(json!({"land": {"tokens_per_hour": 1}})));
        check("operator", json!({"land": true, "tokens_per_hour": null}), Ok(Json::Null));
        check("page", json!({"being": "page", "tokens_per_hour": 5}), Err("@page is not an ancestor of @page"));
        check("clerk", json!({"being": "steward", "tokens_per_hour": 5}), Err("@clerk is not an ancestor of @steward"));
        check("steward", json!({"land": true, "tokens_per_hour": 5}), Err("only the land's operator"));
        check("steward", json!({"role": "clerk", "tokens_per_hour": 5}), Err("only the land's operator"));
        check("operator", json!({"tokens_per_hour": 5}), Err("exactly one of args.being, args.role or args.land"));
        check("operator", json!({"being": "page", "land": true}), Err("exactly one of"));
        check("operator", json!({"being": "nobody"}), Err("there is no being @nobody"));
        check(
            "operator",
            json!({"being": "page", "tokens_per_hour": -1}),
            Err("args.tokens_per_hour must be a whole number"),
        );
        // What is already set stays; a null removes one limit.
        let mut world = world.clone();
        world.config.insert(
            "budgets".into(),
            json!({"land": {"tokens_per_day": 7}, "beings": {"page": {"tokens_per_hour": 5, "tokens_per_day": 50}}}),
        );
        let args = json!({"being": "page", "tokens_per_hour": null});
        let call = OpCall {
            world: &world,
            actor: "clerk",
            target: &target,
            args: &args,
            scripts: &scripts,
            file_roles: &roles,
        };
        let expected = json!({"land": {"tokens_per_day": 7}, "beings": {"page": {"tokens_per_day": 50}}});
        assert_eq!(
            op_set_budget(&call).unwrap(),
            vec![Effect::SetConfig { key: "budgets".into(), value: Some(expected) }]
        );
    }

    #[test]
    fn schemas_name_the_bad_field() {
        let schema = ArgSchema::default()
            .field("to", ArgType::Text, true)
            .field("count", ArgType::Integer, false)
            .field("any", ArgType::Any, false);
        let cases = [
            (json!({"to": "/a"}), Ok(())),
            (json!({"to": "/a", "count": 2}), Ok(())),
            (json!({}), Err("args.to is required")),
            (json!({"to": 3}), Err("args.to must be a string")),
            (json!({"to": "/a", "count": "2"}), Err("args.count must be an integer")),
            (json!({"to": "/a", "colour": 1}), Err("args.colour is not an argument")),
            (json!([1]), Err("args must be an object")),
            (json!({"to": "/a", "any": {"deep": [1, 2.5]}}), Err("args.any must be a value without fractions")),
        ];
        for (args, expected) in cases {
            match (schema.validate(&args), expected) {
                (Ok(()), Ok(())) => {}
                (Err(error), Err(needle)) => assert!(error.to_string().contains(needle), "{args}: {error}"),
                (got, expected) => panic!("{args}: {got:?} vs {expected:?}"),
            }
        }
    }
}
