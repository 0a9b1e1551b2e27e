//! The recall tokenizer: fixed and documented, so every machine and every
//! later build splits a text the same way (docs/memory.md).
//!
//! - ASCII letters and digits are token characters; ASCII letters are
//!   lowercased. Every other ASCII character separates tokens.
//! - A character above ASCII is a token character, kept as it is (no case
//!   folding or normalisation: those follow Unicode's tables, which change
//!   between versions), except the fixed separator ranges below (spaces and
//!   punctuation blocks), which separate tokens.
//! - A token is cut to `RECALL_TOKEN_BYTES_MAX` bytes at the first
//!   character that would take it past them (the rest of the token is not
//!   read); a text gives at most `RECALL_TOKENS_PER_TEXT_MAX` tokens, the
//!   rest are not read.

use std::borrow::Cow;

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

/// The tokens of `text`, in order (a token may repeat): borrowed from the
/// text where it needs no lowercasing, so that most texts are read without
/// a copy. A token is cut at the first character that would take it past
/// `RECALL_TOKEN_BYTES_MAX` (the rest of it is not read).
pub fn tokens(text: &str) -> Vec<Cow<'_, str>> {
    let mut found: Vec<Cow<'_, str>> = Vec::new();
    let mut reading = Reading::default();
    for (at, character) in text.char_indices() {
        if found.len() >= RECALL_TOKENS_PER_TEXT_MAX {
            return found;
        }
        if separates(character) {
            reading.finish(text, &mut found);
            continue;
        }
        let begin = *reading.start.get_or_insert(at);
        if reading.cut || at + character.len_utf8() - begin > RECALL_TOKEN_BYTES_MAX {
            reading.cut = true;
            continue;
        }
        reading.end = at + character.len_utf8();
        reading.capital |= character.is_ascii_uppercase();
    }
    if found.len() < RECALL_TOKENS_PER_TEXT_MAX {
        reading.finish(text, &mut found);
    }
    found
}

/// The token being read: where it starts and ends (so far), whether it
/// was cut, and whether it holds an ASCII capital.
#[derive(Default)]
struct Reading {
    start: Option<usize>,
    end: usize,
    cut: bool,
    capital: bool,
}

impl Reading {
    fn finish<'t>(&mut self, text: &'t str, found: &mut Vec<Cow<'t, str>>) {
        if let Some(begin) = self.start.take() {
            let token = &text[begin..self.end];
            found.push(if self.capital { Cow::Owned(token.to_ascii_lowercase()) } else { Cow::Borrowed(token) });
        }
        *self = Reading::default();
    }
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
        // Cut at the first character that does not fit: a later, shorter
        // one is not taken in its place.
        let cut = format!("a{}", "é".repeat(15));
        check(&format!("{cut}éx more"), &[cut.as_str(), "more"]);
        check("MiXeD case", &["mixed", "case"]);
    }

    #[test]
    fn a_text_gives_at_most_the_token_limit() {
        let text = "w ".repeat(RECALL_TOKENS_PER_TEXT_MAX * 2);
        assert_eq!(tokens(&text).len(), RECALL_TOKENS_PER_TEXT_MAX);
    }
}
