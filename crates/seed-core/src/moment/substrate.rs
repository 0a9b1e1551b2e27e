//! The substrate: everything a moment consults besides the world (the role
//! registry, relationship resolvers, DO operations, see-resolvers, hooks, the
//! Rhai engine, the roleFlow bindings it caches), and the limits a moment
//! reads from the land's configuration at its cursor.

use super::ops::OpRegistry;
use super::refusal::Refusal;
use super::see::SeeResolvers;
use super::{hooks, see, BEINGS_PER_LAND_MAX, INBOX_DEPTH_MAX, SUMMONS_PER_MINUTE_MAX, SUMMON_CONTENT_CHARS_MAX};
use crate::canonical;
use crate::fact::{blake3_of, Hash32};
use crate::roles::definition::RoleRegistry;
use crate::roles::flow::{BoundFlow, Walk};
use crate::roles::resolve::Resolvers;
use crate::roles::{ComposedRole, RoleFlow};
use crate::script::ScriptEngine;
use crate::world::{BeingRow, World};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// Everything a moment consults besides the world.
pub struct Substrate {
    pub roles: RoleRegistry,
    pub resolvers: Resolvers,
    pub ops: OpRegistry,
    pub see: SeeResolvers,
    pub scripts: ScriptEngine,
    pub hooks: hooks::Hooks,
    /// The extensions' cascade handlers (`crate::cascade`).
    pub cascade: crate::cascade::CascadeHandlers,
    /// Compiled flows by flow digest, one for each default role and
    /// authored-role registry they were bound with.
    flows: RwLock<BTreeMap<Hash32, Vec<FlowBinding>>>,
    /// Composed-role digests by the digests of the roles in the stack: the
    /// composition of the same definitions is always the same bytes.
    composed_digests: RwLock<BTreeMap<Vec<Hash32>, Hash32>>,
    /// The registry with the world's authored roles laid over it, by the
    /// authored roles' digest.
    overlays: RwLock<BTreeMap<Hash32, Arc<RoleRegistry>>>,
}

/// Parses an authored role's JSON definition (the same validation as a role file).
pub fn parse_authored_role(definition: &Json) -> Result<crate::roles::Role, Vec<crate::roles::RoleLoadError>> {
    crate::roles::Role::parse_authored(&definition.to_string(), "authored")
}

impl Substrate {
    pub fn new(roles: RoleRegistry) -> Substrate {
        let mut ops = OpRegistry::core();
        see::register_grid_ops(&mut ops);
        Substrate {
            roles,
            resolvers: Resolvers::standard(),
            ops,
            see: SeeResolvers::core(),
            scripts: ScriptEngine::new(),
            hooks: hooks::Hooks::default(),
            cascade: crate::cascade::CascadeHandlers::default(),
            flows: RwLock::new(BTreeMap::new()),
            composed_digests: RwLock::new(BTreeMap::new()),
            overlays: RwLock::new(BTreeMap::new()),
        }
    }

    /// The role registry as the world at its cursor sees it: the files' roles
    /// with the authored ones laid over them (an authored role shadows a file
    /// role of the same name). A definition this build refuses is left out.
    pub fn registry_for(&self, world: &World) -> Option<Arc<RoleRegistry>> {
        if world.roles.is_empty() {
            return None;
        }
        if let Some(registry) = self.overlays.read().unwrap_or_else(|p| p.into_inner()).get(&world.roles_digest) {
            return Some(registry.clone());
        }
        let mut registry = self.roles.clone();
        for (name, authored) in &world.roles {
            if let Ok(mut role) = parse_authored_role(&authored.definition) {
                if *role.name == **name {
                    role.origin = match authored.author.and_then(|author| world.name_of(&author).map(str::to_string)) {
                        Some(author) => format!("authored by @{author}"),
                        None => "authored".to_string(),
                    };
                    registry.insert(role);
                }
            }
        }
        let registry = Arc::new(registry);
        self.overlays.write().unwrap_or_else(|p| p.into_inner()).insert(world.roles_digest, registry.clone());
        Some(registry)
    }

    /// The digest of a composed role, cached by its stack's definitions.
    pub fn composed_digest(&self, walk: &Walk, composed: &ComposedRole) -> Hash32 {
        let mut key: Vec<Hash32> = Vec::with_capacity(walk.modifiers.len() + 1);
        // A zero first entry keeps "no primary, [a]" apart from "primary a".
        key.push(walk.primary.as_ref().map_or(Hash32::ZERO, |role| role.digest));
        key.extend(walk.modifiers.iter().map(|role| role.digest));
        if let Some(digest) = self.composed_digests.read().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return *digest;
        }
        let digest = composed.digest();
        self.composed_digests.write().unwrap_or_else(|p| p.into_inner()).insert(key, digest);
        digest
    }

    /// The being's flow, compiled and bound once per distinct flow.
    pub fn bound_flow(&self, world: &World, row: &BeingRow) -> Result<Arc<BoundFlow>, Refusal> {
        match row.role_flow_digest {
            Some(flow_digest) => self.bound_flow_keyed(world, flow_digest, &row.role_flow, &row.default_role),
            None => self.bound_flow_of(world, &row.role_flow, &row.default_role),
        }
    }

    /// A flow compiled and bound against the registry `world` sees (the
    /// role-manager's preview binds a flow that is not stored yet).
    pub fn bound_flow_of(
        &self,
        world: &World,
        role_flow: &Json,
        default_role: &str,
    ) -> Result<Arc<BoundFlow>, Refusal> {
        let flow_bytes = canonical::encode_json(role_flow).map_err(Refusal::Encoding)?;
        self.bound_flow_keyed(world, blake3_of(&flow_bytes), role_flow, default_role)
    }

    /// Binds `role_flow` (whose digest is `flow_digest`) once per flow,
    /// default role and authored-role registry.
    fn bound_flow_keyed(
        &self,
        world: &World,
        flow_digest: Hash32,
        role_flow: &Json,
        default_role: &str,
    ) -> Result<Arc<BoundFlow>, Refusal> {
        // Found without hashing a key: the flow's digest, then a short list.
        let roles_digest = (!world.roles.is_empty()).then_some(world.roles_digest);
        let is_the_one =
            |bound: &&FlowBinding| bound.default_role == default_role && bound.roles_digest == roles_digest;
        if let Some(bindings) = self.flows.read().unwrap_or_else(|p| p.into_inner()).get(&flow_digest) {
            if let Some(binding) = bindings.iter().find(is_the_one) {
                return Ok(binding.flow.clone());
            }
        }
        let flow = RoleFlow::from_json(role_flow).map_err(Refusal::RoleFlow)?;
        let overlay = self.registry_for(world);
        let registry = overlay.as_deref().unwrap_or(&self.roles);
        let bound = Arc::new(flow.bind(registry, Some(default_role)).map_err(Refusal::RoleFlow)?);
        let binding = FlowBinding { default_role: default_role.to_string(), roles_digest, flow: bound.clone() };
        let mut flows = self.flows.write().unwrap_or_else(|p| p.into_inner());
        let bindings = flows.entry(flow_digest).or_default();
        // Another thread may have bound it meanwhile.
        if !bindings.iter().any(|bound| is_the_one(&bound)) {
            bindings.push(binding);
        }
        Ok(bound)
    }
}

/// A flow bound with one default role against one registry.
struct FlowBinding {
    default_role: String,
    /// The authored roles' digest (`None`: the files' roles alone).
    roles_digest: Option<Hash32>,
    flow: Arc<BoundFlow>,
}

/// The limits a moment checks, as the land's configuration sets them at the
/// moment's cursor (configuration is folded from facts, so replay sees the
/// limits that were in force).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MomentLimits {
    pub inbox_depth_max: usize,
    pub summons_per_minute_max: usize,
    pub summon_content_chars_max: usize,
    pub beings_per_land_max: usize,
    pub act_body_bytes_max: usize,
    pub role_flow_clauses_max: usize,
    pub when_nesting_depth_max: usize,
}

impl MomentLimits {
    pub fn of(world: &World) -> MomentLimits {
        let get = |key: &str, default: usize| world.config_u64(key, default as u64) as usize;
        MomentLimits {
            inbox_depth_max: get("inbox_depth_max", INBOX_DEPTH_MAX),
            summons_per_minute_max: get("summons_per_minute_max", SUMMONS_PER_MINUTE_MAX),
            summon_content_chars_max: get("summon_content_chars_max", SUMMON_CONTENT_CHARS_MAX),
            beings_per_land_max: get("beings_per_land_max", BEINGS_PER_LAND_MAX),
            act_body_bytes_max: get("act_body_bytes_max", crate::limits::FACT_BODY_BYTES_MAX_DEFAULT),
            role_flow_clauses_max: get("role_flow_clauses_max", crate::roles::flow::ROLE_FLOW_CLAUSES_MAX),
            when_nesting_depth_max: get("when_nesting_depth_max", crate::roles::when::WHEN_NESTING_DEPTH_MAX),
        }
    }
}
