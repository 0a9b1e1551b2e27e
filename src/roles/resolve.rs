//! Relationship tokens in can* lists, expanded per moment against the world.
//!
//! `{rel = "parent"}` → the being that minted me; `{rel = "any-child"}` →
//! every being I minted; `{pattern = "fitness/@coach"}` → beings whose name
//! matches the glob after `@`, located in the space before it (no space part:
//! anywhere). Resolvers are registered at start-up by name; the lookups they
//! need go through the narrow [`WorldView`] so they stay pure functions of it.

use super::definition::CanEntry;
use std::collections::BTreeMap;

/// What resolvers may ask of the world. Every list is returned sorted, so
/// expansions are deterministic.
pub trait WorldView {
    /// Name of the being's parent, if any.
    fn parent_of(&self, being: &str) -> Option<String>;
    /// Names of the beings this one minted.
    fn children_of(&self, being: &str) -> Vec<String>;
    /// Names of the beings located in a space (`/` is the root; paths without
    /// a leading slash are taken from the root).
    fn beings_in(&self, space: &str) -> Vec<String>;
    /// Names of every being.
    fn all_beings(&self) -> Vec<String>;
}

/// A resolver of `{rel = NAME}` tokens.
pub trait RelationResolver: Send + Sync {
    fn expand(&self, me: &str, world: &dyn WorldView) -> Vec<String>;
}

struct Parent;
impl RelationResolver for Parent {
    fn expand(&self, me: &str, world: &dyn WorldView) -> Vec<String> {
        world.parent_of(me).into_iter().collect()
    }
}

struct AnyChild;
impl RelationResolver for AnyChild {
    fn expand(&self, me: &str, world: &dyn WorldView) -> Vec<String> {
        world.children_of(me)
    }
}

/// The registered resolvers.
pub struct Resolvers {
    relations: BTreeMap<String, Box<dyn RelationResolver>>,
}

impl Default for Resolvers {
    fn default() -> Self {
        Resolvers::standard()
    }
}

impl Resolvers {
    /// `parent` and `any-child`; patterns are built in.
    pub fn standard() -> Resolvers {
        let mut resolvers = Resolvers { relations: BTreeMap::new() };
        resolvers.register("parent", Box::new(Parent));
        resolvers.register("any-child", Box::new(AnyChild));
        resolvers
    }

    pub fn register(&mut self, name: &str, resolver: Box<dyn RelationResolver>) {
        self.relations.insert(name.to_string(), resolver);
    }

    pub fn knows(&self, name: &str) -> bool {
        self.relations.contains_key(name)
    }

    /// Expands a can* list for being `me`: literals pass through, tokens
    /// become `@name` entries; order kept, duplicates dropped.
    pub fn expand(&self, entries: &[CanEntry], me: &str, world: &dyn WorldView) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut push = |entry: String| {
            if !out.contains(&entry) {
                out.push(entry);
            }
        };
        for entry in entries {
            match entry {
                CanEntry::Literal(text) => push(text.to_string()),
                CanEntry::Rel(relation) => {
                    if let Some(resolver) = self.relations.get(relation.as_ref()) {
                        resolver.expand(me, world).into_iter().for_each(|name| push(format!("@{name}")));
                    }
                }
                CanEntry::Pattern(pattern) => {
                    expand_pattern(pattern, world).into_iter().for_each(|name| push(format!("@{name}")));
                }
            }
        }
        out
    }
}

/// Why a pattern is malformed, or `None`. Grammar: `[space/path/]@glob`, the
/// glob of lowercase letters, digits, '-' and '*'.
pub fn pattern_problem(pattern: &str) -> Option<&'static str> {
    let (space, glob) = match pattern.rsplit_once("/@") {
        Some((space, glob)) => (Some(space), glob),
        None => match pattern.strip_prefix('@') {
            Some(glob) => (None, glob),
            None => return Some("a pattern is `@glob` or `space/path/@glob`"),
        },
    };
    if glob.is_empty() || !glob.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '*') {
        return Some("the name after '@' is a glob of lowercase letters, digits, '-' and '*'");
    }
    if let Some(space) = space {
        if space.is_empty() || space.split('/').any(|segment| segment.is_empty() && !space.starts_with('/')) {
            return Some("the space part is a path like `fitness` or `/town/fitness`");
        }
    }
    None
}

fn expand_pattern(pattern: &str, world: &dyn WorldView) -> Vec<String> {
    let (space, glob) = match pattern.rsplit_once("/@") {
        Some((space, glob)) => (Some(space), glob),
        None => (None, pattern.trim_start_matches('@')),
    };
    let candidates = match space {
        Some(space) => world.beings_in(space),
        None => world.all_beings(),
    };
    candidates.into_iter().filter(|name| glob_matches(glob, name)).collect()
}

/// `*` matches any run of characters; everything else matches itself.
fn glob_matches(glob: &str, name: &str) -> bool {
    match glob.split_once('*') {
        None => glob == name,
        Some((head, rest)) => {
            let Some(mut remaining) = name.strip_prefix(head) else { return false };
            if rest.is_empty() {
                return true;
            }
            loop {
                if glob_matches(rest, remaining) {
                    return true;
                }
                let mut chars = remaining.chars();
                if chars.next().is_none() {
                    return false;
                }
                remaining = chars.as_str();
            }
        }
    }
}

/// A small in-memory world for tests and the CLI preview.
#[derive(Debug, Clone, Default)]
pub struct StaticWorld {
    /// name → (parent, space)
    pub beings: BTreeMap<String, (Option<String>, String)>,
}

impl StaticWorld {
    pub fn add(&mut self, name: &str, parent: Option<&str>, space: &str) {
        self.beings.insert(name.to_string(), (parent.map(str::to_string), space.to_string()));
    }
}

fn normalise_space(space: &str) -> String {
    let trimmed = space.trim_matches('/');
    format!("/{trimmed}")
}

impl WorldView for StaticWorld {
    fn parent_of(&self, being: &str) -> Option<String> {
        self.beings.get(being).and_then(|(parent, _)| parent.clone())
    }
    fn children_of(&self, being: &str) -> Vec<String> {
        self.beings
            .iter()
            .filter(|(_, (parent, _))| parent.as_deref() == Some(being))
            .map(|(name, _)| name.clone())
            .collect()
    }
    fn beings_in(&self, space: &str) -> Vec<String> {
        let wanted = normalise_space(space);
        self.beings.iter().filter(|(_, (_, at))| normalise_space(at) == wanted).map(|(name, _)| name.clone()).collect()
    }
    fn all_beings(&self) -> Vec<String> {
        self.beings.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn world() -> StaticWorld {
        let mut world = StaticWorld::default();
        world.add("operator", None, "/");
        world.add("coach", Some("operator"), "/fitness");
        world.add("coach-b", Some("operator"), "/fitness");
        world.add("runner", Some("coach"), "/fitness");
        world.add("clerk", Some("operator"), "/office");
        world
    }

    #[test]
    fn tokens_expand_against_the_world_in_order_without_duplicates() {
        let resolvers = Resolvers::standard();
        let entries = vec![
            CanEntry::Literal(Arc::from("@operator")),
            CanEntry::Rel(Arc::from("parent")),
            CanEntry::Rel(Arc::from("any-child")),
            CanEntry::Pattern(Arc::from("fitness/@coach*")),
        ];
        assert_eq!(resolvers.expand(&entries, "coach", &world()), vec!["@operator", "@runner", "@coach", "@coach-b"]);
        assert_eq!(resolvers.expand(&entries, "operator", &world()), vec!["@operator", "@clerk", "@coach", "@coach-b"]);
    }

    #[test]
    fn patterns_and_globs() {
        for (pattern, ok) in [
            ("fitness/@coach", true),
            ("@worker-*", true),
            ("/town/gym/@*", true),
            ("coach", false),
            ("x/@Bad", false),
            ("/@", false),
        ] {
            assert_eq!(pattern_problem(pattern).is_none(), ok, "{pattern}");
        }
        for (glob, name, matches) in [
            ("coach", "coach", true),
            ("co*", "coach", true),
            ("*b", "coach-b", true),
            ("*", "x", true),
            ("a*c", "abd", false),
        ] {
            assert_eq!(glob_matches(glob, name), matches, "{glob} {name}");
        }
    }
}
