//! The world as a place: one space (what it holds, who is there, the spaces
//! below it), one piece of matter, and search over beings, roles, spaces and
//! matter by name. Each reads the published world snapshot; the role
//! registry comes from the live land.

use super::error::PortalError;
use super::live::LiveLand;
use crate::world::{Matter, World};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

/// Longest search text, in characters.
pub const SEARCH_QUERY_CHARS_MAX: usize = 100;
/// Most results a search returns of each kind (beings, roles, spaces, matter).
pub const SEARCH_RESULTS_PER_KIND_MAX: usize = 50;
/// Most pieces of matter a space page lists (the rest are counted).
pub const SPACE_PAGE_MATTER_MAX: usize = 200;

/// The query parameters of a route, each at most once, only the ones named.
pub fn query_params(query: Option<&str>, allowed: &[&str]) -> Result<BTreeMap<String, String>, PortalError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query.unwrap_or(""))
        .map_err(|error| PortalError::bad_request(format!("the query is not url-encoded: {error}")))?;
    let mut params = BTreeMap::new();
    for (key, value) in pairs {
        if !allowed.contains(&key.as_str()) {
            return Err(PortalError {
                field: Some(key.clone()),
                ..PortalError::bad_request(format!(
                    "unknown parameter {key:?} (this route takes {})",
                    allowed.join(", ")
                ))
            });
        }
        if params.insert(key.clone(), value).is_some() {
            return Err(PortalError {
                field: Some(key.clone()),
                ..PortalError::bad_request(format!("parameter {key:?} is given twice"))
            });
        }
    }
    Ok(params)
}

/// A required parameter, named in the error when it is missing or empty.
pub fn required<'a>(params: &'a BTreeMap<String, String>, key: &str) -> Result<&'a str, PortalError> {
    params.get(key).map(|value| value.trim()).filter(|value| !value.is_empty()).ok_or_else(|| PortalError {
        field: Some(key.into()),
        ..PortalError::bad_request(format!("`{key}` is required"))
    })
}

fn matter_line(world: &World, address: &str, matter: &Matter) -> Json {
    json!({"address": address, "kind": matter.kind, "creator": matter.creator.as_ref().and_then(|id| world.name_of(id)),
           "madeAtSeq": matter.made_at_seq})
}

/// One space: its kind and qualities, the space above it and those directly
/// below, the beings there (and whether each is inhabited), its matter.
pub fn space_json(world: &World, path: &str) -> Result<Json, PortalError> {
    let space = world.spaces.get(path).ok_or_else(|| PortalError::not_found(format!("there is no space {path:?}")))?;
    let parent = (path != "/").then(|| parent_of(path).to_string());
    let below: Vec<&String> = world.spaces.keys().filter(|other| *other != path && parent_of(other) == path).collect();
    let beings: Vec<Json> = world
        .beings
        .values()
        .filter(|row| row.location == path && !row.ended)
        .map(|row| {
            json!({"name": row.name, "cognition": row.cognition.as_str(),
                   "inhabitedBy": row.inhabited_by.and_then(|by| world.name_of(&by))})
        })
        .collect();
    let prefix = format!("{path}#");
    let here = world.matter.range(prefix.clone()..).take_while(|(address, _)| address.starts_with(&prefix));
    let matter_count = here.clone().count();
    let matter: Vec<Json> =
        here.take(SPACE_PAGE_MATTER_MAX).map(|(address, matter)| matter_line(world, address, matter)).collect();
    Ok(json!({"path": path, "kind": space.kind, "qualities": space.qualities, "parent": parent, "below": below,
              "beings": beings, "matter": matter, "matterCount": matter_count}))
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
    let space = address.split_once('#').map_or(address, |(space, _)| space);
    let mut line = matter_line(world, address, matter);
    line["fields"] = json!(matter.fields);
    line["space"] = json!(space);
    Ok(line)
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
        .map(|(address, matter)| matter_line(world, address, matter))
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

    #[test]
    fn query_params_name_an_unknown_or_repeated_parameter() {
        let check = |query: &str, expected: Result<Vec<(&str, &str)>, &str>| {
            let got = query_params(Some(query), &["q"]);
            match expected {
                Ok(pairs) => {
                    let pairs: BTreeMap<String, String> =
                        pairs.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                    assert_eq!(got.expect("accepted"), pairs, "{query}");
                }
                Err(field) => assert_eq!(got.expect_err("refused").field.as_deref(), Some(field), "{query}"),
            }
        };
        check("q=ada", Ok(vec![("q", "ada")]));
        check("q=%40ada", Ok(vec![("q", "@ada")]));
        check("", Ok(vec![]));
        check("x=1", Err("x"));
        check("q=a&q=b", Err("q"));
    }
}
