//! Splits one line of a rule file into tokens with their columns.
//!
//! ipfw's language is word-based: a token is a run of characters other than
//! white space, `{`, `}` and `,`, which stand alone. `(` and `)` stand alone
//! too (or-blocks), except inside a word such as `table(name,7)`. `#`
//! starts a comment; `//` starts a rule comment that is kept with the rule.

use crate::ast::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tok<'a> {
    Word(&'a str),
    LBrace,
    RBrace,
    LParen,
    RParen,
    Comma,
}

#[derive(Clone, Copy, Debug)]
pub struct Token<'a> {
    pub tok: Tok<'a>,
    pub span: Span,
}

impl Token<'_> {
    pub fn text(&self) -> &str {
        match self.tok {
            Tok::Word(w) => w,
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::Comma => ",",
        }
    }
}

/// A lexed line: its tokens, and the `//` comment if any.
pub struct Line<'a> {
    pub tokens: Vec<Token<'a>>,
    pub comment: Option<&'a str>,
}

/// Lexes one line (without its newline). `line_no` is 1-based.
pub fn lex_line(text: &str, line_no: u32) -> Line<'_> {
    let mut tokens = Vec::new();
    let mut comment = None;
    let mut chars = text.char_indices().peekable();
    let mut cols = Columns::default();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if c == '#' {
            break;
        }
        if text[start..].starts_with("//") {
            comment = Some(text[start + 2..].trim());
            break;
        }
        let col = cols.at(text, start);
        let span = |len: usize| Span {
            line: line_no,
            col,
            len: u32::try_from(len).unwrap_or(u32::MAX),
        };
        let single = match c {
            '{' => Some(Tok::LBrace),
            '}' => Some(Tok::RBrace),
            '(' => Some(Tok::LParen),
            ')' => Some(Tok::RParen),
            ',' => Some(Tok::Comma),
            _ => None,
        };
        if let Some(tok) = single {
            chars.next();
            tokens.push(Token { tok, span: span(1) });
            continue;
        }
        // Commas inside parentheses belong to the word: `table(blocklist,7)`.
        let mut end = text.len();
        let mut depth = 0u32;
        while let Some(&(i, c)) = chars.peek() {
            let separator = c.is_whitespace()
                || matches!(c, '{' | '}' | '#')
                || (matches!(c, ',' | ')') && depth == 0)
                || text[i..].starts_with("//");
            if separator {
                end = i;
                break;
            }
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                _ => {}
            }
            chars.next();
        }
        let word = &text[start..end];
        tokens.push(Token {
            tok: Tok::Word(word),
            span: span(word.chars().count()),
        });
    }
    Line { tokens, comment }
}

/// Columns of byte offsets met in increasing order, each counted on from
/// the last, so a line costs one pass however many tokens it has.
#[derive(Default)]
struct Columns {
    byte: usize,
    col: u32,
}

impl Columns {
    /// The 1-based column, in characters, of byte offset `byte` of `text`.
    fn at(&mut self, text: &str, byte: usize) -> u32 {
        let skipped = text.get(self.byte..byte).map_or(0, |s| s.chars().count());
        self.col = self
            .col
            .saturating_add(u32::try_from(skipped).unwrap_or(u32::MAX));
        self.byte = self.byte.max(byte);
        self.col + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_words_and_punctuation_with_columns() {
        let line = lex_line("  allow tcp from { a or b },c 80,443 # note", 3);
        let texts: Vec<_> = line.tokens.iter().map(|t| t.text()).collect();
        assert_eq!(
            texts,
            ["allow", "tcp", "from", "{", "a", "or", "b", "}", ",", "c", "80", ",", "443"]
        );
        assert_eq!(line.tokens[0].span.col, 3);
        assert_eq!(line.tokens[0].span.line, 3);
        assert_eq!(line.tokens[3].span.col, 18);
        assert!(line.comment.is_none());
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let line = lex_line("deny ip from é\u{1F600},x to any // ü", 1);
        let cols: Vec<(&str, u32, u32)> = line
            .tokens
            .iter()
            .map(|t| (t.text(), t.span.col, t.span.len))
            .collect();
        assert_eq!(
            cols,
            [
                ("deny", 1, 4),
                ("ip", 6, 2),
                ("from", 9, 4),
                ("é\u{1F600}", 14, 2),
                (",", 16, 1),
                ("x", 17, 1),
                ("to", 19, 2),
                ("any", 22, 3),
            ]
        );
    }

    #[test]
    fn parentheses_stand_alone_outside_words() {
        let line = lex_line("( in or out) from table(t,7) x)", 1);
        let texts: Vec<_> = line.tokens.iter().map(|t| t.text()).collect();
        assert_eq!(
            texts,
            ["(", "in", "or", "out", ")", "from", "table(t,7)", "x", ")"]
        );
        assert_eq!(line.tokens[4].tok, Tok::RParen);
    }

    #[test]
    fn keeps_rule_comment() {
        let line = lex_line("deny ip from any to any // block all  ", 1);
        assert_eq!(line.tokens.len(), 6);
        assert_eq!(line.comment, Some("block all"));
    }
}
