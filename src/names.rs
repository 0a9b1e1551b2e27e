//! The one naming rule shared by fact kinds and role names: kebab-case words
//! (lowercase letters, digits, '-', starting with a letter) with at most one
//! `namespace:` prefix, e.g. `note`, `rotate-key`, `emotions:bored`.

/// Longest kebab name, in characters.
pub const KEBAB_NAME_CHARS_MAX: usize = 64;

/// Why `name` is not a valid kebab name, or `None` if it is.
pub fn kebab_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() || name.len() > KEBAB_NAME_CHARS_MAX {
        return Some("must be 1 to 64 characters");
    }
    let words: Vec<&str> = name.split(':').collect();
    if words.len() > 2 {
        return Some("at most one ':' namespace separator");
    }
    for word in words {
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

#[cfg(test)]
mod tests {
    use super::kebab_name_problem;

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
