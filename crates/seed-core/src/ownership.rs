//! Ownership and spatial scoping of spaces (docs/ownership.md).
//!
//! **Ownership.** A space may name an owner and contributors, folded from
//! `set-space-owner` and `set-space-contributor` effects. The owner of a
//! space is found by walking up from it to the first space that names one
//! (the **boundary**); a space with no owner on its walk is unowned, and
//! anyone may write there (as every land did before ownership). Where there
//! is an owner, a being may write into a space when it is that owner, a
//! contributor named on a space between the space and its boundary (both
//! included), or the land's operator (a being born to no parent). The verb
//! layer refuses a DO operation whose effects write into a space its being
//! may not write ([`check_writes`], called by `OpRegistry::run`, so the
//! moment, the seal-time recheck and replay hold the same rule).
//!
//! The operations and who may call them:
//!
//! | operation | on a space | who may |
//! |---|---|---|
//! | `set-owner {being}` | delegates the space (and what is below it) | the owner above it, or the operator |
//! | `remove-owner` | ownership falls back to the next owner up | the owner above it, or the operator |
//! | `transfer-ownership {being}` | the space's own owner changes | its owner, or the operator |
//! | `add-contributor {being}` | | the resolved owner, or the operator |
//! | `remove-contributor {being}` | | the resolved owner, the operator, or the contributor itself |
//!
//! All refuse on the land's system space (`/`), which is the operator's.
//!
//! **Spatial scoping.** `scope-extension {extension, scope}` marks an
//! extension `blocked` or `allowed` at a space and below (null clears it);
//! the nearest mark on the walk up wins, so an extension blocked at `/a` may
//! be allowed again at `/a/b`. Where an extension is blocked, its DO
//! operations are refused and left out of the face's `canDo`, its hooks and
//! see-resolvers are skipped, and its cascade handlers do not run. Where a
//! being stands decides (a cascade handler: the space it would run at).
//! Who may scope: the resolved owner, or the operator.
//!
//! What this module does not know: sealing, keys, or how an extension is
//! loaded (an operation's, hook's or resolver's extension is its name).

use crate::fact::BeingId;
use crate::moment::refusal::OpError;
use crate::world::{Effect, World};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};

/// The land's system space: its ownership is the operator's and is not set.
pub const SYSTEM_SPACE: &str = "/";
/// Contributors one space may name.
pub const SPACE_CONTRIBUTORS_MAX: usize = 256;
/// Extension scopes one space may hold.
pub const SPACE_EXTENSION_SCOPES_MAX: usize = 64;

/// Whether an extension is blocked or allowed at a space and below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExtensionScope {
    Blocked,
    Allowed,
}

impl ExtensionScope {
    pub fn as_str(self) -> &'static str {
        match self {
            ExtensionScope::Blocked => "blocked",
            ExtensionScope::Allowed => "allowed",
        }
    }
}

/// What one space names of ownership and scoping.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpaceRule {
    pub owner: Option<BeingId>,
    pub contributors: BTreeSet<BeingId>,
    pub extensions: BTreeMap<String, ExtensionScope>,
}

impl SpaceRule {
    pub fn is_empty(&self) -> bool {
        self.owner.is_none() && self.contributors.is_empty() && self.extensions.is_empty()
    }
}

/// The spaces from `space` up to `/`, nearest first.
pub fn walk_up(space: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(space);
    std::iter::from_fn(move || {
        let here = next?;
        next = match here {
            "/" => None,
            _ => Some(match here.rfind('/') {
                Some(0) | None => "/",
                Some(at) => &here[..at],
            }),
        };
        Some(here)
    })
}

/// The owner of `space` and the space that names it (its boundary), if any.
pub fn owner_of<'a>(world: &World, space: &'a str) -> Option<(BeingId, &'a str)> {
    walk_up(space).find_map(|here| world.space_rules.get(here)?.owner.map(|owner| (owner, here)))
}

/// Whether `being` is the land's operator (born to no parent).
pub fn is_operator(world: &World, being: &BeingId) -> bool {
    world.beings.get(being).is_some_and(|row| row.parent.is_none())
}

/// Whether `being` may write into `space` (see the module documentation).
pub fn may_write(world: &World, being: &BeingId, space: &str) -> bool {
    let Some((owner, boundary)) = owner_of(world, space) else { return true };
    if owner == *being || is_operator(world, being) {
        return true;
    }
    for here in walk_up(space) {
        if world.space_rules.get(here).is_some_and(|rule| rule.contributors.contains(being)) {
            return true;
        }
        if here == boundary {
            break;
        }
    }
    false
}

/// The scope of `extension` at `space`: the nearest mark on the walk up.
pub fn extension_scope_at(world: &World, extension: &str, space: &str) -> Option<ExtensionScope> {
    if world.space_rules.is_empty() {
        return None;
    }
    walk_up(space).find_map(|here| world.space_rules.get(here)?.extensions.get(extension).copied())
}

/// Whether `extension` is blocked at `space` (`core` never is).
pub fn is_blocked(world: &World, extension: &str, space: &str) -> bool {
    extension != "core" && extension_scope_at(world, extension, space) == Some(ExtensionScope::Blocked)
}

/// The space an effect writes into, if it writes into one.
fn space_written(effect: &Effect) -> Option<&str> {
    match effect {
        Effect::PutSpace { path, .. } | Effect::SetSpaceQuality { path, .. } => Some(path),
        Effect::PutMatter { address, .. } | Effect::RemoveMatter { address } => {
            Some(address.split_once('#').map_or(address.as_str(), |(space, _)| space))
        }
        _ => None,
    }
}

/// Refuses effects that write into a space `actor` may not write.
pub fn check_writes(world: &World, actor: &str, effects: &[Effect]) -> Result<(), OpError> {
    if world.space_rules.is_empty() {
        return Ok(());
    }
    let Some(row) = world.being_named(actor) else { return Ok(()) };
    for space in effects.iter().filter_map(space_written) {
        if !may_write(world, &row.id, space) {
            let owner = owner_of(world, space).and_then(|(owner, _)| world.name_of(&owner)).unwrap_or_default();
            return Err(OpError::MayNotWrite {
                actor: actor.to_string(),
                space: space.to_string(),
                owner: owner.to_string(),
            });
        }
    }
    Ok(())
}

/// The being an ownership operation names (`being`, with or without `@`).
fn named_being(world: &World, args: &Json) -> Result<BeingId, OpError> {
    let name = args.get("being").and_then(Json::as_str).unwrap_or_default().trim_start_matches('@');
    world.being_named(name).map(|row| row.id).ok_or_else(|| OpError::NoBeingNamed { name: name.to_string() })
}

/// The ownership operations' checks, by operation; `Ok` carries the effect.
pub struct OwnershipCall<'a> {
    pub world: &'a World,
    pub actor: &'a str,
    pub space: &'a str,
    pub args: &'a Json,
}

impl OwnershipCall<'_> {
    fn actor_id(&self) -> Result<BeingId, OpError> {
        self.world.being_named(self.actor).map(|row| row.id).ok_or(OpError::ActorNotInWorld)
    }

    fn refuse(&self, operation: &'static str, who: &'static str) -> OpError {
        OpError::NotOwner { operation, actor: self.actor.to_string(), space: self.space.to_string(), who }
    }

    fn not_system(&self, operation: &'static str) -> Result<(), OpError> {
        if self.space == SYSTEM_SPACE {
            return Err(OpError::SystemSpace { operation, space: self.space.to_string() });
        }
        if !self.world.spaces.contains_key(self.space) {
            return Err(OpError::NoSpace { space: self.space.to_string() });
        }
        Ok(())
    }

    /// The owner above the space (of its parent's walk), or the operator.
    fn owner_above_or_operator(&self, operation: &'static str) -> Result<(), OpError> {
        let actor = self.actor_id()?;
        let parent = walk_up(self.space).nth(1).unwrap_or(SYSTEM_SPACE);
        let above = owner_of(self.world, parent).map(|(owner, _)| owner);
        if above == Some(actor) || is_operator(self.world, &actor) {
            return Ok(());
        }
        Err(self.refuse(operation, "the owner above it or the operator"))
    }

    /// The owner resolved for the space, or the operator.
    fn resolved_owner_or_operator(&self, operation: &'static str) -> Result<(), OpError> {
        let actor = self.actor_id()?;
        let owner = owner_of(self.world, self.space).map(|(owner, _)| owner);
        if owner == Some(actor) || is_operator(self.world, &actor) {
            return Ok(());
        }
        Err(self.refuse(operation, "its owner or the operator"))
    }

    pub fn set_owner(&self) -> Result<Vec<Effect>, OpError> {
        self.not_system("set-owner")?;
        self.owner_above_or_operator("set-owner")?;
        let being = named_being(self.world, self.args)?;
        Ok(vec![Effect::SetSpaceOwner { path: self.space.to_string(), owner: Some(being) }])
    }

    pub fn remove_owner(&self) -> Result<Vec<Effect>, OpError> {
        self.not_system("remove-owner")?;
        self.owner_above_or_operator("remove-owner")?;
        if self.world.space_rules.get(self.space).and_then(|rule| rule.owner).is_none() {
            return Err(OpError::NoOwnerNamed { space: self.space.to_string() });
        }
        Ok(vec![Effect::SetSpaceOwner { path: self.space.to_string(), owner: None }])
    }

    pub fn transfer(&self) -> Result<Vec<Effect>, OpError> {
        self.not_system("transfer-ownership")?;
        let actor = self.actor_id()?;
        let own = self.world.space_rules.get(self.space).and_then(|rule| rule.owner);
        if own.is_none() {
            return Err(OpError::NoOwnerNamed { space: self.space.to_string() });
        }
        if own != Some(actor) && !is_operator(self.world, &actor) {
            return Err(self.refuse("transfer-ownership", "its owner or the operator"));
        }
        let being = named_being(self.world, self.args)?;
        Ok(vec![Effect::SetSpaceOwner { path: self.space.to_string(), owner: Some(being) }])
    }

    pub fn add_contributor(&self) -> Result<Vec<Effect>, OpError> {
        self.not_system("add-contributor")?;
        self.resolved_owner_or_operator("add-contributor")?;
        let being = named_being(self.world, self.args)?;
        let named = self.world.space_rules.get(self.space).map_or(0, |rule| rule.contributors.len());
        if named >= SPACE_CONTRIBUTORS_MAX {
            return Err(OpError::TooManyContributors { space: self.space.to_string(), most: SPACE_CONTRIBUTORS_MAX });
        }
        Ok(vec![Effect::SetSpaceContributor { path: self.space.to_string(), being, contributor: true }])
    }

    pub fn remove_contributor(&self) -> Result<Vec<Effect>, OpError> {
        self.not_system("remove-contributor")?;
        let being = named_being(self.world, self.args)?;
        if self.actor_id()? != being {
            self.resolved_owner_or_operator("remove-contributor")?;
        }
        if !self.world.space_rules.get(self.space).is_some_and(|rule| rule.contributors.contains(&being)) {
            let name = self.world.name_of(&being).unwrap_or_default().to_string();
            return Err(OpError::NotAContributor { being: name, space: self.space.to_string() });
        }
        Ok(vec![Effect::SetSpaceContributor { path: self.space.to_string(), being, contributor: false }])
    }

    /// `scope-extension {extension, scope}`: the resolved owner or the
    /// operator; at `/`, the operator alone (no one else owns it).
    pub fn scope_extension(&self) -> Result<Vec<Effect>, OpError> {
        if !self.world.spaces.contains_key(self.space) {
            return Err(OpError::NoSpace { space: self.space.to_string() });
        }
        self.resolved_owner_or_operator("scope-extension")?;
        let extension = self.args.get("extension").and_then(Json::as_str).unwrap_or_default();
        if let Some(reason) = crate::names::kebab_name_problem(extension) {
            return Err(OpError::ExtensionName { reason: format!("{extension:?}: {reason}") });
        }
        let scope = match self.args.get("scope") {
            None | Some(Json::Null) => None,
            Some(Json::String(text)) if text == "blocked" => Some(ExtensionScope::Blocked),
            Some(Json::String(text)) if text == "allowed" => Some(ExtensionScope::Allowed),
            Some(other) => return Err(OpError::ExtensionScopeValue { given: other.to_string() }),
        };
        let held = self.world.space_rules.get(self.space).map_or(0, |rule| rule.extensions.len());
        if scope.is_some() && held >= SPACE_EXTENSION_SCOPES_MAX {
            return Err(OpError::TooManyScopes { space: self.space.to_string(), most: SPACE_EXTENSION_SCOPES_MAX });
        }
        Ok(vec![Effect::ScopeExtension { path: self.space.to_string(), extension: extension.to_string(), scope }])
    }
}

impl World {
    /// Folds an ownership or scoping effect. Cannot fail.
    pub(crate) fn apply_space_rule(&mut self, effect: &Effect) {
        let path = match effect {
            Effect::SetSpaceOwner { path, .. }
            | Effect::SetSpaceContributor { path, .. }
            | Effect::ScopeExtension { path, .. } => path,
            _ => return,
        };
        let rule = self.space_rules.entry(path.clone()).or_default();
        match effect {
            Effect::SetSpaceOwner { owner, .. } => rule.owner = *owner,
            Effect::SetSpaceContributor { being, contributor: true, .. } => {
                rule.contributors.insert(*being);
            }
            Effect::SetSpaceContributor { being, contributor: false, .. } => {
                rule.contributors.remove(being);
            }
            Effect::ScopeExtension { extension, scope: Some(scope), .. } => {
                rule.extensions.insert(extension.clone(), *scope);
            }
            Effect::ScopeExtension { extension, scope: None, .. } => {
                rule.extensions.remove(extension);
            }
            _ => {}
        }
        if rule.is_empty() {
            self.space_rules.remove(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fact::body::Cognition;
    use crate::world::{BeingRow, Space};
    use serde_json::json;

    /// A world of spaces `/`, `/a`, `/a/b`, `/a/b/c`, `/d`, and the beings
    /// named (the first born to no parent: the operator).
    fn world(beings: &[&str]) -> World {
        let mut world = World::new();
        for path in ["/a", "/a/b", "/a/b/c", "/d"] {
            world.spaces.insert(path.into(), Space { kind: "room".into(), qualities: BTreeMap::new() });
        }
        for (index, name) in beings.iter().enumerate() {
            let id = BeingId([index as u8 + 1; 32]);
            let parent = (index > 0).then_some(BeingId([1; 32]));
            world.beings.insert(
                id,
                std::sync::Arc::new(BeingRow {
                    id,
                    name: name.to_string(),
                    parent,
                    cognition: Cognition::Scripted,
                    role_flow: json!([]).into(),
                    role_flow_digest: None,
                    default_role: "idle".into(),
                    home_space: "/".into(),
                    location: "/".into(),
                    qualities: BTreeMap::new(),
                    ended: false,
                    inhabited_by: None,
                    last_act_ms: None,
                    previous_role: None,
                    acts: 0,
                }),
            );
            world.names.insert(name.to_string(), id);
        }
        world
    }

    /// Runs `operation` on `space` as `actor` and folds what it decides:
    /// the refusal's text if it refuses, `None` when it is done.
    fn act(world: &mut World, actor: &str, operation: &str, space: &str, args: Json) -> Option<String> {
        let call = OwnershipCall { world, actor, space, args: &args };
        let effects = match operation {
            "set-owner" => call.set_owner(),
            "remove-owner" => call.remove_owner(),
            "transfer-ownership" => call.transfer(),
            "add-contributor" => call.add_contributor(),
            "remove-contributor" => call.remove_contributor(),
            "scope-extension" => call.scope_extension(),
            other => panic!("no operation {other}"),
        };
        match effects {
            Ok(effects) => {
                effects.iter().for_each(|effect| world.apply_space_rule(effect));
                None
            }
            Err(error) => Some(error.to_string()),
        }
    }

    fn writes(world: &World, being: &str, space: &str) -> bool {
        may_write(world, &world.being_named(being).expect("a being").id, space)
    }

    #[test]
    fn who_may_write_where_follows_the_owner_found_walking_up_and_the_contributors_below_it() {
        let mut land = world(&["operator", "ada", "bo", "cy"]);
        // Unowned: anyone writes anywhere.
        assert!(writes(&land, "cy", "/a/b/c"));
        assert_eq!(
            act(&mut land, "operator", "set-owner", "/a", json!({"being": "@ada"})),
            None,
            "the operator delegates /a"
        );
        assert_eq!(
            act(&mut land, "ada", "add-contributor", "/a/b", json!({"being": "bo"})),
            None,
            "ada names bo at /a/b"
        );
        // (being, space, may write)
        let table = [
            ("ada", "/a", true),
            ("ada", "/a/b/c", true),
            ("bo", "/a", false),
            ("bo", "/a/b", true),
            ("bo", "/a/b/c", true),
            ("cy", "/a/b/c", false),
            ("cy", "/d", true),
            ("operator", "/a/b/c", true),
        ];
        for (being, space, expected) in table {
            assert_eq!(writes(&land, being, space), expected, "{being} at {space}");
        }
        // Delegation below: ada hands /a/b to cy; bo's contribution at /a/b
        // still counts (it is between /a/b/c and the new boundary), ada no longer
        // owns /a/b's subtree but is above it.
        assert_eq!(
            act(&mut land, "ada", "set-owner", "/a/b", json!({"being": "cy"})),
            None,
            "the owner above delegates"
        );
        assert_eq!(owner_of(&land, "/a/b/c").map(|(_, boundary)| boundary), Some("/a/b"));
        assert!(writes(&land, "cy", "/a/b/c") && writes(&land, "bo", "/a/b/c") && !writes(&land, "ada", "/a/b/c"));
        // Revocation by the owner above: ownership falls back to ada.
        assert_eq!(act(&mut land, "ada", "remove-owner", "/a/b", json!({})), None, "the owner above revokes");
        assert!(writes(&land, "ada", "/a/b/c") && !writes(&land, "cy", "/a/b/c"));
    }

    #[test]
    fn each_operation_refuses_whoever_may_not_call_it_and_the_system_space() {
        let mut land = world(&["operator", "ada", "bo", "cy"]);
        assert_eq!(act(&mut land, "operator", "set-owner", "/a", json!({"being": "ada"})), None, "delegated");
        assert_eq!(act(&mut land, "ada", "add-contributor", "/a", json!({"being": "bo"})), None, "named");
        let refused = [
            (
                "bo",
                "set-owner",
                "/a/b",
                json!({"being": "bo"}),
                "bo may not set-owner at /a/b: only the owner above it or the operator may",
            ),
            (
                "bo",
                "set-owner",
                "/a",
                json!({"being": "bo"}),
                "bo may not set-owner at /a: only the owner above it or the operator may",
            ),
            (
                "ada",
                "set-owner",
                "/a",
                json!({"being": "bo"}),
                "ada may not set-owner at /a: only the owner above it or the operator may",
            ),
            (
                "cy",
                "transfer-ownership",
                "/a",
                json!({"being": "cy"}),
                "cy may not transfer-ownership at /a: only its owner or the operator may",
            ),
            (
                "cy",
                "add-contributor",
                "/a",
                json!({"being": "cy"}),
                "cy may not add-contributor at /a: only its owner or the operator may",
            ),
            (
                "cy",
                "remove-contributor",
                "/a",
                json!({"being": "bo"}),
                "cy may not remove-contributor at /a: only its owner or the operator may",
            ),
            ("ada", "remove-contributor", "/a", json!({"being": "cy"}), "@cy is not a contributor at /a"),
            ("ada", "remove-owner", "/a/b", json!({}), "/a/b names no owner of its own"),
            ("operator", "set-owner", "/", json!({"being": "ada"}), "set-owner refuses the land's system space /"),
            (
                "operator",
                "add-contributor",
                "/",
                json!({"being": "ada"}),
                "add-contributor refuses the land's system space /",
            ),
            ("operator", "set-owner", "/nowhere", json!({"being": "ada"}), "there is no space /nowhere"),
            ("operator", "set-owner", "/a", json!({"being": "zed"}), "args.being: there is no being @zed"),
            (
                "ada",
                "scope-extension",
                "/d",
                json!({"extension": "court", "scope": "blocked"}),
                "ada may not scope-extension at /d: only its owner or the operator may",
            ),
            (
                "ada",
                "scope-extension",
                "/a",
                json!({"extension": "court", "scope": "gone"}),
                "args.scope: the scope is \"blocked\", \"allowed\" or null, not \"gone\"",
            ),
        ];
        for (actor, operation, space, args, expected) in refused {
            let before = land.space_rules.clone();
            assert_eq!(
                act(&mut land, actor, operation, space, args.clone()),
                Some(expected.to_string()),
                "{actor} {operation} {space} {args}"
            );
            assert_eq!(land.space_rules, before, "a refusal changes nothing");
        }
        // Self-removal, and a transfer by the owner.
        assert_eq!(act(&mut land, "bo", "remove-contributor", "/a", json!({"being": "bo"})), None, "bo leaves");
        assert_eq!(
            act(&mut land, "ada", "transfer-ownership", "/a", json!({"being": "@cy"})),
            None,
            "ada hands /a over"
        );
        assert_eq!(owner_of(&land, "/a/b").map(|(owner, _)| owner), land.being_named("cy").map(|row| row.id));
    }

    #[test]
    fn the_nearest_scope_on_the_walk_up_wins() {
        let mut land = world(&["operator"]);
        assert_eq!(
            act(&mut land, "operator", "scope-extension", "/a", json!({"extension": "court", "scope": "blocked"})),
            None,
            "blocked"
        );
        assert_eq!(
            act(&mut land, "operator", "scope-extension", "/a/b/c", json!({"extension": "court", "scope": "allowed"})),
            None,
            "allowed"
        );
        for (space, blocked) in [("/", false), ("/a", true), ("/a/b", true), ("/a/b/c", false), ("/d", false)] {
            assert_eq!(is_blocked(&land, "court", space), blocked, "{space}");
            assert!(!is_blocked(&land, "harmony", space) && !is_blocked(&land, "core", space));
        }
        assert_eq!(
            act(&mut land, "operator", "scope-extension", "/a", json!({"extension": "court", "scope": null})),
            None,
            "cleared"
        );
        assert!(!is_blocked(&land, "court", "/a/b"));
    }

    #[test]
    fn a_write_into_a_space_its_being_may_not_write_is_refused_naming_the_owner() {
        let mut land = world(&["operator", "ada", "bo"]);
        assert_eq!(act(&mut land, "operator", "set-owner", "/a", json!({"being": "ada"})), None, "delegated");
        let put =
            |address: &str| Effect::PutMatter { address: address.into(), kind: "note".into(), fields: BTreeMap::new() };
        assert_eq!(
            check_writes(&land, "bo", &[put("/d#x"), put("/a/b#y")]).map_err(|error| error.to_string()),
            Err("bo may not write into /a/b: it is @ada's, and bo is neither its owner nor a contributor there".into())
        );
        assert_eq!(check_writes(&land, "ada", &[put("/a/b#y")]), Ok(()));
        let signal = Effect::SetSignal { key: "a.b".into(), value: None };
        assert_eq!(check_writes(&land, "bo", &[signal]), Ok(()), "a world signal is written nowhere");
    }
}
