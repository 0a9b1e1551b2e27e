//! The naming rules of the foundation, each in one place.
//!
//! Kebab names, shared by fact kinds and role names: kebab-case words
//! (lowercase letters, digits, '-', starting with a letter) with at most one
//! `namespace:` prefix, e.g. `note`, `rotate-key`, `emotions:bored`.
//!
//! Being names: lowercase letters, digits and '-', starting and ending with a
//! letter or digit, e.g. `ada`, `stress-0`, `7th-son`. A being is addressed
//! as `@name`, so the land mints no being whose name breaks this rule, the
//! address grammar reads `@name` by it, and verification (`seed verify`,
//! `seed import`) refuses a genesis that breaks it: no command could name
//! such a being.

use crate::limits::BEING_NAME_CHARS_MAX;

/// Longest kebab name, in characters.
pub const KEBAB_NAME_CHARS_MAX: usize = 64;

/// Why `name` is not a valid kebab name, or `None` if it is.
pub fn kebab_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() || name.len() > KEBAB_NAME_CHARS_MAX {
        return Some("must be 1 to 64 characters");
    }
    // Counted rather than collected: every fact's kind is checked here as
    // it is built, so nothing is allocated for it.
    if name.bytes().filter(|byte| *byte == b':').count() > 1 {
        return Some("at most one ':' namespace separator");
    }
    for word in name.split(':') {
        let mut chars = word.chars();
        match chars.next() {
            Some(first) if first.is_ascii_lowercase() => {}
            _ => return Some("each part must start with a lowercase letter"),
        }
        if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
            return Some("only lowercase letters, digits and '-' are allowed");
        }
    }
    None
}

/// Why `name` is not a being name, or `None` if it is. Its length counts
/// characters (at most [`BEING_NAME_CHARS_MAX`]).
pub fn being_name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.chars().count() > BEING_NAME_CHARS_MAX {
        return Some(format!("must be 1 to {BEING_NAME_CHARS_MAX} characters"));
    }
    if !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        return Some("only lowercase letters, digits and '-' are allowed".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some("must not start or end with '-'".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{being_name_problem, kebab_name_problem};
    use crate::limits::BEING_NAME_CHARS_MAX;

    #[test]
    fn being_names() {
        let longest = "a".repeat(BEING_NAME_CHARS_MAX);
        for good in ["ada", "stress-0", "7th-son", "a", longest.as_str()] {
            assert_eq!(being_name_problem(good), None, "{good}");
        }
        let too_long = "a".repeat(BEING_NAME_CHARS_MAX + 1);
        for bad in ["", "Ada", "two words", "@ada", "a/b", "-ada", "ada-", "a_b", "\u{e9}t\u{e9}", too_long.as_str()] {
            assert!(being_name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn kebab_names() {
        for good in ["note", "rotate-key", "emotions:bored", "a1-b2"] {
            assert_eq!(kebab_name_problem(good), None, "{good}");
        }
        for bad in ["", "Note", "1x", "a:b:c", "a_b", ":x", "x:", &"a".repeat(65)] {
            assert!(kebab_name_problem(bad).is_some(), "{bad}");
        }
    }
}
