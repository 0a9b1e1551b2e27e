//! The recall tokenizer: fixed and documented, so every machine and every
//! later build splits a text the same way (docs/memory.md).
//!
//! - ASCII letters and digits are token characters; ASCII letters are
//!   lowercased. Every other ASCII character separates tokens.
//! - A character above ASCII is a token character, kept as it is (no case
//!   folding or normalisation: those follow Unicode's tables, which change
//!   between versions), except the fixed separator ranges below (spaces and
//!   punctuation blocks), which separate tokens.
//! - A token is cut to `RECALL_TOKEN_BYTES_MAX` bytes (at a character
//!   boundary); a text gives at most `RECALL_TOKENS_PER_TEXT_MAX` tokens, the
//!   rest are not read.

/// The longest token kept, in bytes; a longer one is cut to this.
pub const RECALL_TOKEN_BYTES_MAX: usize = 32;
/// The most tokens read from one text.
pub const RECALL_TOKENS_PER_TEXT_MAX: usize = 256;

/// Non-ASCII code points that separate tokens (inclusive ranges): Latin-1
/// punctuation and the no-break space, general punctuation and spaces, CJK
/// symbols and punctuation, full-width ASCII punctuation, and the
/// replacement character.
const SEPARATOR_RANGES: [(u32, u32); 9] = [
    (0x0080, 0x00BF),
    (0x00D7, 0x00D7),
    (0x00F7, 0x00F7),
    (0x2000, 0x206F),
    (0x2E00, 0x2E7F),
    (0x3000, 0x303F),
    (0xFE30, 0xFE4F),
    (0xFF00, 0xFF0F),
    (0xFFFD, 0xFFFD),
];

fn separates(character: char) -> bool {
    if character.is_ascii() {
        return !character.is_ascii_alphanumeric();
    }
    let code = character as u32;
    SEPARATOR_RANGES.iter().any(|&(low, high)| (low..=high).contains(&code))
}

/// The tokens of `text`, in order (a token may repeat).
pub fn tokens(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current = String::new();
    let finish = |current: &mut String, found: &mut Vec<String>| {
        if !current.is_empty() && found.len() < RECALL_TOKENS_PER_TEXT_MAX {
            found.push(std::mem::take(current));
        }
        current.clear();
    };
    for character in text.chars() {
        if found.len() >= RECALL_TOKENS_PER_TEXT_MAX {
            break;
        }
        if separates(character) {
            finish(&mut current, &mut found);
            continue;
        }
        if current.len() + character.len_utf8() > RECALL_TOKEN_BYTES_MAX {
            // The rest of an overlong token is not read.
            continue;
        }
        current.push(character.to_ascii_lowercase());
    }
    finish(&mut current, &mut found);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_split_into_the_documented_tokens() {
        let check = |text: &str, expected: &[&str]| assert_eq!(tokens(text), expected, "{text:?}");
        check("", &[]);
        check("Bob CHEATED me, twice!", &["bob", "cheated", "me", "twice"]);
        check("@ada paid 12 coins for grain-7", &["ada", "paid", "12", "coins", "for", "grain", "7"]);
        check("café — naïve", &["café", "naïve"]);
        check("Ünïcode stays as written", &["Ünïcode", "stays", "as", "written"]);
        check("東京、大阪。", &["東京", "大阪"]);
        check("tab\tand\nnewline", &["tab", "and", "newline"]);
        check(&"x".repeat(40), &["x".repeat(RECALL_TOKEN_BYTES_MAX).as_str()]);
        check(&format!("{} tail", "é".repeat(20)), &["é".repeat(16).as_str(), "tail"]);
    }

    #[test]
    fn a_text_gives_at_most_the_token_limit() {
        let text = "w ".repeat(RECALL_TOKENS_PER_TEXT_MAX * 2);
        assert_eq!(tokens(&text).len(), RECALL_TOKENS_PER_TEXT_MAX);
    }
}
