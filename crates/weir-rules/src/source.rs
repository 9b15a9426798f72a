//! A text file as people save it: bytes, decoded once.
//!
//! Rule files, ppp filter files and table files come from every editor
//! there is. A UTF-8 byte-order mark is dropped; CRLF line ends need
//! nothing here (every reader splits on `\n` and trims the `\r`). Bytes
//! that are not UTF-8 (a Latin-1 comment in an old ruleset) become U+FFFD,
//! and where they were is remembered: a comment may hold anything, but
//! the reader refuses one in a rule, at its line and column.
//!
//! The decision is made once per file: valid UTF-8 (nearly every file) is
//! borrowed as it is, and only a file with stray bytes is copied.

use crate::ast::Span;
use crate::diag::Diagnostic;
use std::borrow::Cow;

const BOM: &[u8] = b"\xef\xbb\xbf";

/// A file's text, decoded, with the places of its non-UTF-8 bytes.
#[derive(Clone, Debug)]
pub struct Source<'a> {
    text: Cow<'a, str>,
    /// By line, then column: where each invalid sequence was replaced.
    bad: Vec<BadByte>,
}

/// A byte that is not UTF-8: the first of an invalid sequence, and where
/// its U+FFFD stands (1-based line and column, in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadByte {
    pub line: u32,
    pub col: u32,
    pub byte: u8,
}

impl BadByte {
    /// The error for this byte standing in a rule.
    pub fn diagnostic(self) -> Diagnostic {
        let span = Span {
            line: self.line,
            col: self.col,
            len: 1,
        };
        Diagnostic::new(
            span,
            format!(
                "byte 0x{:02X} is not UTF-8 (only comments may hold other text)",
                self.byte
            ),
        )
    }
}

impl<'a> Source<'a> {
    /// Decodes `bytes`, borrowing them when they are UTF-8.
    pub fn new(bytes: &'a [u8]) -> Source<'a> {
        let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
        match std::str::from_utf8(bytes) {
            Ok(text) => Source {
                text: Cow::Borrowed(text),
                bad: Vec::new(),
            },
            Err(_) => Source::lossy(bytes),
        }
    }

    /// Decodes a file read whole, reusing its buffer when it is UTF-8.
    pub fn from_vec(mut bytes: Vec<u8>) -> Source<'static> {
        if bytes.starts_with(BOM) {
            bytes.drain(..BOM.len());
        }
        match String::from_utf8(bytes) {
            Ok(text) => Source {
                text: Cow::Owned(text),
                bad: Vec::new(),
            },
            Err(e) => {
                let Source { text, bad } = Source::lossy(e.as_bytes());
                Source {
                    text: Cow::Owned(text.into_owned()),
                    bad,
                }
            }
        }
    }

    fn lossy(bytes: &[u8]) -> Source<'static> {
        let mut text = String::with_capacity(bytes.len());
        let mut bad = Vec::new();
        let (mut line, mut col) = (1u32, 1u32);
        for chunk in bytes.utf8_chunks() {
            let valid = chunk.valid();
            text.push_str(valid);
            // Columns count characters since the last newline.
            match valid.rfind('\n') {
                Some(nl) => {
                    let lines = valid.bytes().filter(|&b| b == b'\n').count();
                    line = line.saturating_add(u32::try_from(lines).unwrap_or(u32::MAX));
                    col = 1u32.saturating_add(count_chars(&valid[nl + 1..]));
                }
                None => col = col.saturating_add(count_chars(valid)),
            }
            if let Some(&byte) = chunk.invalid().first() {
                bad.push(BadByte { line, col, byte });
                text.push(char::REPLACEMENT_CHARACTER);
                col = col.saturating_add(1);
            }
        }
        Source {
            text: Cow::Owned(text),
            bad,
        }
    }

    /// The decoded text, without a byte-order mark.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The lines, numbered from 1, without their line ends.
    pub fn lines(&self) -> impl Iterator<Item = (u32, &str)> {
        let number = |i: usize| u32::try_from(i + 1).unwrap_or(u32::MAX);
        self.text
            .lines()
            .enumerate()
            .map(move |(i, l)| (number(i), l))
    }

    /// Refuses a non-UTF-8 byte in the code of line `line`, which ends
    /// with token `last`: the byte stands before the end of the token, so
    /// not in a comment (comments come after every token).
    pub fn check_code(&self, line: u32, last: Span) -> Result<(), Diagnostic> {
        match self.bad_byte_before(line, last.col.saturating_add(last.len)) {
            Some(bad) => Err(bad.diagnostic()),
            None => Ok(()),
        }
    }

    /// Whether every byte was UTF-8.
    pub fn is_utf8(&self) -> bool {
        self.bad.is_empty()
    }

    /// The first non-UTF-8 byte on `line` before column `end`: a reader
    /// passes the column just past its last token, so a byte there stands
    /// in the rule, and one after it in a comment.
    pub fn bad_byte_before(&self, line: u32, end: u32) -> Option<BadByte> {
        if self.bad.is_empty() {
            return None;
        }
        let first = self.bad.partition_point(|b| b.line < line);
        self.bad
            .get(first)
            .filter(|b| b.line == line && b.col < end)
            .copied()
    }
}

fn count_chars(s: &str) -> u32 {
    u32::try_from(s.chars().count()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_is_borrowed_and_a_bom_dropped() {
        let bytes = b"\xef\xbb\xbfallow ip from any to any\r\n";
        let s = Source::new(bytes);
        assert!(matches!(s.text, Cow::Borrowed(_)));
        assert_eq!(s.text(), "allow ip from any to any\r\n");
        assert!(s.is_utf8());
        let owned = Source::from_vec(bytes.to_vec());
        assert_eq!(owned.text(), s.text());
    }

    #[test]
    fn stray_bytes_are_replaced_and_placed() {
        // Latin-1 "é" (0xE9) in a comment on line 1, and 0xFF at column 7
        // of line 3 after a two-byte UTF-8 "ü".
        let bytes = b"# caf\xe9\n\nx \xc3\xbc a \xff b\n";
        let s = Source::new(bytes);
        assert_eq!(s.text(), "# caf\u{fffd}\n\nx \u{fc} a \u{fffd} b\n");
        assert!(!s.is_utf8());
        assert_eq!(
            s.bad,
            [
                BadByte {
                    line: 1,
                    col: 6,
                    byte: 0xe9
                },
                BadByte {
                    line: 3,
                    col: 7,
                    byte: 0xff
                }
            ]
        );
        assert_eq!(s.bad_byte_before(1, 3), None, "after the code: a comment");
        assert_eq!(s.bad_byte_before(3, 8).map(|b| b.col), Some(7));
        assert_eq!(s.bad_byte_before(3, 7), None);
        assert_eq!(s.bad_byte_before(2, 100), None);
        let d = s.bad_byte_before(3, 8).unwrap().diagnostic();
        assert_eq!(
            d.to_string(),
            "3:7: byte 0xFF is not UTF-8 (only comments may hold other text)"
        );
        assert_eq!(Source::from_vec(bytes.to_vec()).bad, s.bad);
    }

    #[test]
    fn a_bom_then_stray_bytes() {
        let s = Source::from_vec(b"\xef\xbb\xbf\x80x".to_vec());
        assert_eq!(s.text(), "\u{fffd}x");
        assert_eq!(
            s.bad_byte_before(1, 2).map(|b| (b.col, b.byte)),
            Some((1, 0x80))
        );
    }
}
