//! The one address grammar of the world.
//!
//! ```text
//! address  = space | being | matter
//! space    = "/" | ("/" segment)+          e.g. /  /court  /factory/line-1
//! being    = "@" name                      e.g. @operator  @stress-0
//! matter   = space "#" id                  e.g. /factory#defect-17  /#notice
//! segment  = [a-z0-9] [a-z0-9-]*           (at most 63 characters)
//! name     = [a-z0-9] [a-z0-9-]*           (at most 63 characters, no trailing '-')
//! id       = [a-z0-9] [a-z0-9._-]*         (at most 127 characters)
//! ```
//!
//! At most `ADDRESS_SEGMENTS_MAX` space segments. The parser refuses
//! anything else with the position and the reason.

use std::fmt;

pub const ADDRESS_SEGMENTS_MAX: usize = 16;
pub const ADDRESS_SEGMENT_CHARS_MAX: usize = 63;
pub const MATTER_ID_CHARS_MAX: usize = 127;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid address {input:?}: {reason}")]
pub struct AddressError {
    pub input: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Address {
    /// A normalised space path: "/" or "/a/b".
    Space(String),
    /// A being's name, without the '@'.
    Being(String),
    /// A matter id within a space.
    Matter { space: String, id: String },
}

impl fmt::Display for Address {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Space(path) => formatter.write_str(path),
            Address::Being(name) => write!(formatter, "@{name}"),
            Address::Matter { space, id } => write!(formatter, "{space}#{id}"),
        }
    }
}

fn fail(input: &str, reason: impl Into<String>) -> AddressError {
    AddressError { input: input.to_string(), reason: reason.into() }
}

fn check_word(input: &str, word: &str, what: &str, max: usize, extra: &[char]) -> Result<(), AddressError> {
    if word.is_empty() {
        return Err(fail(input, format!("empty {what}")));
    }
    if word.chars().count() > max {
        return Err(fail(input, format!("{what} {word:?} is longer than {max} characters")));
    }
    let mut chars = word.chars();
    let first = chars.next().unwrap_or(' ');
    if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return Err(fail(input, format!("{what} {word:?} must start with a lowercase letter or digit")));
    }
    if let Some(bad) =
        word.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || extra.contains(c)))
    {
        return Err(fail(input, format!("{what} {word:?} contains {bad:?}")));
    }
    Ok(())
}

/// Parses and normalises a space path.
pub fn parse_space(input: &str) -> Result<String, AddressError> {
    let Some(rest) = input.strip_prefix('/') else {
        return Err(fail(input, "a space path starts with '/'"));
    };
    if rest.is_empty() {
        return Ok("/".to_string());
    }
    if rest.split('/').count() > ADDRESS_SEGMENTS_MAX {
        return Err(fail(input, format!("more than {ADDRESS_SEGMENTS_MAX} segments")));
    }
    for segment in rest.split('/') {
        check_word(input, segment, "segment", ADDRESS_SEGMENT_CHARS_MAX, &[])?;
    }
    // Every segment is a word (none is empty), so the path is already in
    // its normal form: "/" and the segments joined by "/".
    Ok(input.to_string())
}

/// The parent of a space path (`None` for the root).
pub fn parent_space(path: &str) -> Option<String> {
    if path == "/" {
        return None;
    }
    match path.rsplit_once('/') {
        Some(("", _)) => Some("/".to_string()),
        Some((parent, _)) => Some(parent.to_string()),
        None => None,
    }
}

/// The last segment of a space path ("" for the root).
pub fn space_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or("")
}

impl std::str::FromStr for Address {
    type Err = AddressError;

    fn from_str(input: &str) -> Result<Address, AddressError> {
        if let Some(name) = input.strip_prefix('@') {
            // The one being-name rule, the one the land mints by.
            if let Some(reason) = crate::names::being_name_problem(name) {
                return Err(fail(input, format!("being name {name:?}: {reason}")));
            }
            return Ok(Address::Being(name.to_string()));
        }
        if !input.starts_with('/') {
            return Err(fail(input, "an address starts with '/' (a space or matter) or '@' (a being)"));
        }
        match input.split_once('#') {
            Some((space, id)) => {
                let space = parse_space(space)?;
                check_word(input, id, "matter id", MATTER_ID_CHARS_MAX, &['.', '_'])?;
                Ok(Address::Matter { space, id: id.to_string() })
            }
            None => Ok(Address::Space(parse_space(input)?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Result<Address, &str>) {
        let parsed: Result<Address, AddressError> = input.parse();
        match (parsed, expected) {
            (Ok(address), Ok(expected)) => {
                assert_eq!(address, expected, "{input}");
                assert_eq!(address.to_string(), input, "round trip of {input}");
            }
            (Err(error), Err(reason)) => assert!(error.reason.contains(reason), "{input}: {error}"),
            (parsed, expected) => panic!("{input}: got {parsed:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn the_grammar() {
        let space = |p: &str| Ok(Address::Space(p.to_string()));
        check("/", space("/"));
        check("/court", space("/court"));
        check("/factory/line-1", space("/factory/line-1"));
        check("@operator", Ok(Address::Being("operator".into())));
        check("/factory#defect-17", Ok(Address::Matter { space: "/factory".into(), id: "defect-17".into() }));
        check("/#notice.v2", Ok(Address::Matter { space: "/".into(), id: "notice.v2".into() }));
        check("court", Err("starts with '/'"));
        check("/court/", Err("empty segment"));
        check("//court", Err("empty segment"));
        check("/Court", Err("must start with a lowercase"));
        check("/co urt", Err("contains ' '"));
        check("@", Err("must be 1 to 63 characters"));
        check("@Bad", Err("only lowercase letters"));
        check("@bad-", Err("must not start or end with '-'"));
        check("/x#", Err("empty matter id"));
        check("/x#a#b", Err("contains '#'"));
        check("", Err("an address starts with"));
        let sixteen = format!("/{}", vec!["a"; 16].join("/"));
        check(&sixteen, space(&sixteen));
        check(&format!("/{}", vec!["a"; 17].join("/")), Err("more than 16 segments"));
        check(&format!("/{}/B", vec!["a"; 17].join("/")), Err("more than 16 segments"));
    }

    #[test]
    fn parents_and_names() {
        assert_eq!(parent_space("/"), None);
        assert_eq!(parent_space("/a").as_deref(), Some("/"));
        assert_eq!(parent_space("/a/b").as_deref(), Some("/a"));
        assert_eq!(space_name("/a/b"), "b");
        assert_eq!(space_name("/"), "");
    }
}
