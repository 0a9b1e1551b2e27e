//! The world as a place: one space (what it holds, who is there, the spaces
//! below it), one piece of matter, and search over beings, roles, spaces and
//! matter by name. Each reads the published world snapshot; the role
//! registry comes from the live land.

use super::error::PortalError;
use super::live::LiveLand;
use super::views::{self, matter_in_space, matter_summary_json};
use crate::world::World;
use serde_json::{json, Value as Json};

/// Longest search text, in characters.
pub const SEARCH_QUERY_CHARS_MAX: usize = 100;
/// Most results a search returns of each kind (beings, roles, spaces, matter).
pub const SEARCH_RESULTS_PER_KIND_MAX: usize = 50;
/// Most pieces of matter a space page lists (the rest are counted).
pub const SPACE_PAGE_MATTER_MAX: usize = 200;
/// Beings a space's page lists at a time, by name (`beingsAfter` pages on).
pub const SPACE_PAGE_BEINGS_MAX: usize = 200;

/// One space: its kind and qualities, the space above it and those directly
/// below, the beings there (and whether each is inhabited), its matter.
pub fn space_json(world: &World, path: &str, beings_after: Option<&str>) -> Result<Json, PortalError> {
    let space = world.spaces.get(path).ok_or_else(|| PortalError::not_found(format!("there is no space {path:?}")))?;
    let parent = (path != "/").then(|| parent_of(path).to_string());
    let below: Vec<&String> = world.spaces.keys().filter(|other| *other != path && parent_of(other) == path).collect();
    // Who is here, by name: one page after `beings_after`, every one counted.
    let present = || {
        world
            .names
            .values()
            .filter_map(|id| world.beings.get(id).map(|row| &**row))
            .filter(|row| row.location == path && !row.ended)
    };
    let being_count = present().count();
    let mut page: Vec<&crate::world::BeingRow> = present()
        .filter(|row| beings_after.is_none_or(|after| row.name.as_str() > after))
        .take(SPACE_PAGE_BEINGS_MAX + 1)
        .collect();
    let next = (page.len() > SPACE_PAGE_BEINGS_MAX).then(|| {
        page.truncate(SPACE_PAGE_BEINGS_MAX);
        page.last().map(|row| row.name.clone())
    });
    let beings: Vec<Json> = page
        .iter()
        .map(|row| {
            json!({"name": row.name, "cognition": row.cognition.as_str(),
                   "inhabitedBy": row.inhabited_by.and_then(|by| world.name_of(&by))})
        })
        .collect();
    let here = matter_in_space(world, path);
    let matter_count = here.clone().count();
    let matter: Vec<Json> =
        here.take(SPACE_PAGE_MATTER_MAX).map(|(address, matter)| matter_summary_json(world, address, matter)).collect();
    // The cascade signals that arrived here, newest first (the world keeps the latest).
    let arrivals: Vec<Json> = world
        .cascade
        .arrivals
        .get(path)
        .map(|arrivals| arrivals.iter().rev().map(|arrival| arrival_json(world, arrival)).collect())
        .unwrap_or_default();
    let cascade = json!({"marked": crate::cascade::is_marked(world, path), "arrivals": arrivals});
    let ownership = ownership_json(world, path);
    Ok(json!({"path": path, "kind": space.kind, "qualities": space.qualities, "parent": parent, "below": below,
              "beings": beings, "beingCount": being_count, "beingsAfter": beings_after, "beingsNext": next.flatten(),
              "matter": matter, "matterCount": matter_count, "cascade": cascade, "ownership": ownership}))
}

/// Who owns a space (and where that is named), its own contributors and
/// owner, and the scope in force there of every extension scoped on its walk.
fn ownership_json(world: &World, path: &str) -> Json {
    use crate::ownership::{extension_scope_at, owner_of, walk_up};
    let name = |being: &crate::fact::BeingId| world.name_of(being).map(|name| format!("@{name}"));
    let own = world.space_rules.get(path);
    let (owner, boundary) = match owner_of(world, path) {
        Some((owner, boundary)) => (name(&owner), Some(boundary.to_string())),
        None => (None, None),
    };
    let contributors: Vec<Option<String>> =
        own.map(|rule| rule.contributors.iter().map(name).collect()).unwrap_or_default();
    let mut scoped: std::collections::BTreeMap<String, (&str, String)> = std::collections::BTreeMap::new();
    for here in walk_up(path) {
        for extension in world.space_rules.get(here).map(|rule| rule.extensions.keys()).into_iter().flatten() {
            if let Some(scope) = extension_scope_at(world, extension, here).filter(|_| !scoped.contains_key(extension))
            {
                scoped.insert(extension.clone(), (scope.as_str(), here.to_string()));
            }
        }
    }
    let scopes: Vec<Json> = scoped
        .into_iter()
        .map(|(extension, (scope, at))| json!({"extension": extension, "scope": scope, "at": at}))
        .collect();
    json!({"owner": owner, "boundary": boundary, "ownOwner": own.and_then(|rule| rule.owner.as_ref()).and_then(name),
           "contributors": contributors, "scopes": scopes})
}

fn arrival_json(world: &World, arrival: &crate::cascade::Arrival) -> Json {
    json!({"signal": arrival.signal.to_hex(), "fact": arrival.fact.to_hex(), "landSeq": arrival.land_seq,
           "origin": arrival.origin, "write": arrival.kind.as_str(), "depth": arrival.depth,
           "from": arrival.writer.and_then(|writer| world.name_of(&writer))})
}

/// The space directly above `path` (`/` for a top-level space).
fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(at) => &path[..at],
    }
}

/// One piece of matter: what it is, its fields, who made it, when, where.
pub fn matter_json(world: &World, address: &str) -> Result<Json, PortalError> {
    let matter =
        world.matter.get(address).ok_or_else(|| PortalError::not_found(format!("there is no matter {address:?}")))?;
    Ok(views::matter_json(world, address, matter))
}

/// Beings, roles, spaces and matter whose name holds `text` (ignoring case):
/// at most [`SEARCH_RESULTS_PER_KIND_MAX`] of each, in name order.
pub fn search_json(live: &LiveLand, world: &World, text: &str) -> Result<Json, PortalError> {
    if text.chars().count() > SEARCH_QUERY_CHARS_MAX {
        return Err(PortalError {
            field: Some("q".into()),
            ..PortalError::bad_request(format!("the search is longer than {SEARCH_QUERY_CHARS_MAX} characters"))
        });
    }
    let needle = text.trim().trim_start_matches('@').to_lowercase();
    let holds = |name: &str| name.to_lowercase().contains(&needle);
    let beings: Vec<Json> = world
        .names
        .iter()
        .filter(|(name, _)| holds(name))
        .take(SEARCH_RESULTS_PER_KIND_MAX)
        .filter_map(|(name, id)| world.beings.get(id).map(|row| json!({"name": name, "space": row.location})))
        .collect();
    let overlay = live.substrate().registry_for(world);
    let registry = overlay.as_deref().unwrap_or(&live.substrate().roles);
    let mut role_names: Vec<&str> = registry.iter().map(|role| role.name.as_ref()).filter(|name| holds(name)).collect();
    role_names.sort_unstable();
    role_names.truncate(SEARCH_RESULTS_PER_KIND_MAX);
    let spaces: Vec<&String> =
        world.spaces.keys().filter(|path| holds(path)).take(SEARCH_RESULTS_PER_KIND_MAX).collect();
    let matter: Vec<Json> = world
        .matter
        .iter()
        .filter(|(address, matter)| holds(address) || holds(&matter.kind))
        .take(SEARCH_RESULTS_PER_KIND_MAX)
        .map(|(address, matter)| matter_summary_json(world, address, matter))
        .collect();
    Ok(json!({"query": text, "beings": beings, "roles": role_names, "spaces": spaces, "matter": matter}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_space_s_parent_is_the_path_before_its_last_segment() {
        for (path, parent) in [("/court", "/"), ("/court/bench", "/court"), ("/a/b/c", "/a/b"), ("/", "/")] {
            assert_eq!(parent_of(path), parent, "{path}");
        }
    }
}
