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

    /// The relations `{rel = NAME}` may name, in name order.
    pub fn relation_names(&self) -> impl Iterator<Item = &str> {
        self.relations.keys().map(String::as_str)
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

/// Longest glob after a pattern's '@', in characters: as long as the
/// longest being name, plus room for stars around it.
pub const PATTERN_GLOB_CHARS_MAX: usize = 64;

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
    if glob.len() > PATTERN_GLOB_CHARS_MAX {
        return Some("the glob after '@' is at most 64 characters");
    }
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
///
/// Linear in the name's length: the literal runs between stars are found
/// left to right, each at its leftmost place after the previous one (for
/// globs of `*` alone, the leftmost place is always a safe choice, so no
/// backtracking is ever needed). A backtracking matcher took time
/// exponential in the number of stars, and patterns are authored input
/// matched while the land's writer waits.
pub fn glob_matches(glob: &str, name: &str) -> bool {
    let mut runs = glob.split('*');
    let first = runs.next().unwrap_or("");
    let Some(mut remaining) = name.strip_prefix(first) else { return false };
    let mut runs: Vec<&str> = runs.collect();
    let Some(last) = runs.pop() else {
        // No star: the glob is the name itself.
        return remaining.is_empty();
    };
    for run in runs {
        match remaining.find(run) {
            Some(at) => remaining = &remaining[at + run.len()..],
            None => return false,
        }
    }
    remaining.ends_with(last)
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
    fn a_pattern_with_many_stars_matches_in_linear_time() {
        // `@a*a*…*b` against a long run of `a`s: a backtracking matcher
        // tries every split of the name among the stars and never answers.
        let glob = format!("{}b", "a*".repeat(31));
        let name = "a".repeat(100_000);
        assert!(!glob_matches(&glob, &name));
        assert!(glob_matches(&glob, &format!("{name}b")));
        // The same pattern written by an author is bounded before it is ever matched.
        assert!(pattern_problem(&format!("@{}b", "a*".repeat(40))).is_some());
        assert!(pattern_problem(&format!("@{glob}")).is_none());
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
            ("@******************************************************************************-x", false),
        ] {
            assert_eq!(pattern_problem(pattern).is_none(), ok, "{pattern}");
        }
        for (glob, name, matches) in [
            ("coach", "coach", true),
            ("co*", "coach", true),
            ("*b", "coach-b", true),
            ("*", "x", true),
            ("a*c", "abd", false),
            ("a*c", "ac", true),
            ("a*a", "a", false),
            ("*a*a*", "aa", true),
            ("*a*a*", "a", false),
            ("**", "", true),
            ("", "", true),
            ("", "x", false),
            ("x", "", false),
            ("ab*ab", "abab", true),
            ("ab*ab", "aba", false),
            ("*-b", "coach-b-b", true),
            ("c*h*-b", "coach-b", true),
            ("c*x*-b", "coach-b", false),
            ("*ab*ab*", "aabab", true),
            ("a**b", "ab", true),
        ] {
            assert_eq!(glob_matches(glob, name), matches, "{glob} {name}");
        }
    }
}
