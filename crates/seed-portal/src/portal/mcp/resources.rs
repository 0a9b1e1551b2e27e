//! The resources an MCP client reads and subscribes to:
//! `seed://beings/NAME/face`, `seed://beings/NAME/reel` (its latest facts)
//! and `seed://roles/NAME`, each JSON, under the same rules as the read
//! tools (a being's face and reel only for a caller who may act for it).

use super::super::error::PortalError;
use super::super::{views, Portal};
use super::McpCaller;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value as Json};

const SCHEME: &str = "seed://";

/// A resource this land serves, read from its URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Address {
    Face { being: String },
    Reel { being: String },
    Role { name: String },
}

impl Address {
    pub(super) fn parse(uri: &str) -> Result<Address, PortalError> {
        let unknown = || {
            PortalError::not_found(format!(
                "there is no resource {uri:?}: the resources are seed://beings/NAME/face, \
                 seed://beings/NAME/reel and seed://roles/NAME"
            ))
        };
        let path = uri.strip_prefix(SCHEME).ok_or_else(unknown)?;
        let parts: Vec<&str> = path.split('/').collect();
        match parts.as_slice() {
            ["beings", being, "face"] if !being.is_empty() => {
                Ok(Address::Face { being: being.trim_start_matches('@').to_string() })
            }
            ["beings", being, "reel"] if !being.is_empty() => {
                Ok(Address::Reel { being: being.trim_start_matches('@').to_string() })
            }
            ["roles", name] if !name.is_empty() => Ok(Address::Role { name: name.to_string() }),
            _ => Err(unknown()),
        }
    }
}

fn face_uri(being: &str) -> String {
    format!("{SCHEME}beings/{being}/face")
}

fn reel_uri(being: &str) -> String {
    format!("{SCHEME}beings/{being}/reel")
}

/// The driven being's face and reel, and every role.
pub(super) fn listed(portal: &Portal, caller: &McpCaller) -> Vec<Resource> {
    let json_resource = |uri: String, name: String, description: String| {
        Resource::new(uri, name).with_description(description).with_mime_type("application/json")
    };
    let mut listed = vec![
        json_resource(
            face_uri(&caller.being),
            format!("@{} face", caller.being),
            format!("what @{} would read if it woke now, and what it may do", caller.being),
        ),
        json_resource(
            reel_uri(&caller.being),
            format!("@{} reel", caller.being),
            format!("the latest signed facts of @{}'s reel", caller.being),
        ),
    ];
    let roles = views::roles_json(&portal.live, &portal.live.world());
    for role in roles["roles"].as_array().into_iter().flatten() {
        let Some(name) = role["name"].as_str() else { continue };
        listed.push(json_resource(format!("{SCHEME}roles/{name}"), format!("role {name}"), format!("the role {name}")));
    }
    listed
}

pub(super) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{SCHEME}beings/{{name}}/face"), "a being's face")
            .with_mime_type("application/json"),
        ResourceTemplate::new(format!("{SCHEME}beings/{{name}}/reel"), "a being's latest facts")
            .with_mime_type("application/json"),
        ResourceTemplate::new(format!("{SCHEME}roles/{{name}}"), "a role's definition")
            .with_mime_type("application/json"),
    ]
}

/// The resource's JSON now.
fn value(portal: &Portal, caller: &McpCaller, address: &Address) -> Result<Json, PortalError> {
    match address {
        Address::Face { being } => super::tools::face(portal, caller, &json!({"being": being})),
        Address::Reel { being } => super::tools::read_reel(portal, caller, &json!({"being": being})),
        Address::Role { name } => {
            let roles = views::roles_json(&portal.live, &portal.live.world());
            roles["roles"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|role| role["name"] == name.as_str())
                .cloned()
                .ok_or_else(|| PortalError::not_found(format!("there is no role {name:?}")))
        }
    }
}

/// Reads a resource. What the caller may not read, or what is not there,
/// is the protocol's "resource not found" error naming why.
pub(super) fn read(portal: &Portal, caller: &McpCaller, uri: &str) -> Result<ReadResourceResult, McpError> {
    let found = Address::parse(uri).and_then(|address| value(portal, caller, &address));
    match found {
        Ok(value) => {
            let text = serde_json::to_string_pretty(&value).unwrap_or_default();
            Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type("application/json")]))
        }
        Err(error) => Err(McpError::resource_not_found(error.message, Some(json!({"uri": uri, "code": error.code})))),
    }
}

/// What the resource is now, to tell when it changed: its bytes' hash, or
/// `None` when it cannot be read (never stored). A face changes with
/// the world; a reel with its head.
pub(super) fn version(portal: &Portal, caller: &McpCaller, uri: &str) -> Option<blake3::Hash> {
    let value = Address::parse(uri).and_then(|address| value(portal, caller, &address)).ok()?;
    Some(blake3::hash(&serde_json::to_vec(&value).ok()?))
}
