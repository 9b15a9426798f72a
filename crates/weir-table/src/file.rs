//! Table files: one entry per line.
//!
//! ```text
//! # blocklist, one prefix per line, optional value
//! 10.0.0.0/8
//! 192.0.2.1            7     # a plain address is a /32 (or /128)
//! 2001:db8::/32        42
//! ```
//!
//! `#` starts a comment anywhere on a line; blank lines are skipped; CRLF
//! line ends are accepted. Errors carry 1-based line and column (in
//! characters); the caller adds the file name.

use std::fmt;

use crate::prefix::{parse_entry, Entry};
use crate::table::{AddError, Builder, Limits};
use weir_rules::Source;

/// Reading stops after this many errors (the last one says so), so a
/// hostile file cannot make the error list itself huge.
pub const MAX_ERRORS: usize = 100;

/// One error in a table file. Displays as `line:col: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for LineError {}

/// Parses a table file with the default [`Limits`]. `name` is the table's
/// name, used in messages. All errors are returned (up to
/// [`MAX_ERRORS`]); any error means no table.
pub fn parse_table_file(name: &str, text: &str) -> Result<Builder, Vec<LineError>> {
    parse_table_file_with(name, text, Limits::default())
}

/// [`parse_table_file`] with explicit limits.
pub fn parse_table_file_with(
    name: &str,
    text: &str,
    limits: Limits,
) -> Result<Builder, Vec<LineError>> {
    parse_table_source_with(name, &Source::new(text.as_bytes()), limits)
}

/// [`parse_table_file`] for a file read as bytes: a byte-order mark and
/// non-UTF-8 comments are fine, a non-UTF-8 byte in an entry is an error.
pub fn parse_table_source(name: &str, source: &Source) -> Result<Builder, Vec<LineError>> {
    parse_table_source_with(name, source, Limits::default())
}

/// [`parse_table_source`] with explicit limits.
pub fn parse_table_source_with(
    name: &str,
    source: &Source,
    limits: Limits,
) -> Result<Builder, Vec<LineError>> {
    let mut builder = Builder::with_limits(limits);
    let mut errors = Vec::new();
    for (i, raw) in source.text().split('\n').enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("");
        let content = content.strip_suffix('\r').unwrap_or(content);
        if content.trim_ascii().is_empty() {
            continue;
        }
        let col = |byte: usize| column(raw, byte);
        let line_no = u32::try_from(line).unwrap_or(u32::MAX);
        let end = u32::try_from(col(content.trim_end().len())).unwrap_or(u32::MAX);
        if let Some(bad) = source.bad_byte_before(line_no, end) {
            let d = bad.diagnostic();
            errors.push(LineError {
                line,
                col: d.span.col as usize,
                message: d.message,
            });
            continue;
        }
        match parse_entry(content) {
            Ok(Entry { prefix, value }) => match builder.add(prefix, value) {
                Ok(()) => {}
                Err(e @ AddError::Duplicate { .. }) => errors.push(LineError {
                    line,
                    col: col(first_token(content)),
                    message: format!("table {name}: {prefix}: {e}"),
                }),
                Err(e @ AddError::TooManyEntries { .. }) => {
                    errors.push(LineError {
                        line,
                        col: col(first_token(content)),
                        message: format!("table {name}: {e}"),
                    });
                    return Err(errors);
                }
            },
            Err(e) => errors.push(LineError {
                line,
                col: col(e.offset),
                message: e.message,
            }),
        }
        if errors.len() >= MAX_ERRORS {
            if let Some(last) = errors.last_mut() {
                last.message.push_str(" (too many errors, stopped reading)");
            }
            return Err(errors);
        }
    }
    if errors.is_empty() {
        Ok(builder)
    } else {
        Err(errors)
    }
}

/// 1-based column, in characters, of byte offset `byte` in `line`.
fn column(line: &str, byte: usize) -> usize {
    line.get(..byte).map_or(byte, |s| s.chars().count()) + 1
}

fn first_token(s: &str) -> usize {
    s.len()
        - s.trim_start_matches(|c: char| c.is_ascii_whitespace())
            .len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Prefix;

    fn errors(text: &str) -> Vec<String> {
        parse_table_file("t", text)
            .unwrap_err()
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn a_file_with_comments_blank_lines_and_both_families() {
        let text =
            "# blocklist\n\n10.0.0.0/8\n192.0.2.1   7   # one host\r\n  2001:db8::/32\t42\n\t\n::1";
        let b = parse_table_file("blocklist", text).unwrap();
        assert_eq!(b.len(), 4);
        assert_eq!(b.get(Prefix::v4(0x0a00_0000, 8).unwrap()), Some(0));
        assert_eq!(b.get(Prefix::v4(0xc000_0201, 32).unwrap()), Some(7));
        assert_eq!(b.get(Prefix::v6(0x2001_0db8 << 96, 32).unwrap()), Some(42));
        assert_eq!(b.get(Prefix::v6(1, 128).unwrap()), Some(0));
        let t = b.build().unwrap();
        assert_eq!(t.lookup_v4(0x0a01_0203), Some(0));
        assert_eq!(t.lookup_v4(0x0b01_0203), None);
    }

    #[test]
    fn empty_and_comment_only_files_give_empty_tables() {
        assert!(parse_table_file("t", "").unwrap().is_empty());
        assert!(parse_table_file("t", "# nothing\n\n   \n")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn every_error_with_line_and_column() {
        let text = "10.0.0.0/8\n10.0.0.0/33\n  bogus 1\n1.2.3.4 x\n1.2.3.4 1 2\n10.5.0.0/8 3\n::/129 # c\n";
        assert_eq!(
            errors(text),
            [
                "2:10: prefix length 33 is out of range 0-32",
                "3:3: `bogus` is not an IPv4 or IPv6 address",
                "4:9: bad value `x`: expected a number 0-4294967295",
                "5:11: unexpected `2`: an entry is PREFIX [VALUE]",
                "6:1: table t: 10.0.0.0/8: duplicate entry: already in the table with value 0",
                "7:4: prefix length 129 is out of range 0-128",
            ]
        );
    }

    #[test]
    fn columns_count_characters() {
        assert_eq!(
            errors("# é\n\u{e9}\u{e9} 1"),
            ["2:1: `éé` is not an IPv4 or IPv6 address"]
        );
        assert_eq!(
            errors("\u{a0}1.2.3.4"),
            ["1:1: `\u{a0}1.2.3.4` is not an IPv4 or IPv6 address"]
        );
        assert_eq!(
            errors("1.2.3.4 \u{e9}"),
            ["1:9: bad value `é`: expected a number 0-4294967295"]
        );
    }

    #[test]
    fn files_as_people_save_them() {
        let saved = b"\xef\xbb\xbf# liste noire, r\xe9seaux\r\n10.0.0.0/8 7\r\n2001:db8::/32 # pr\xe9fixe\r\n";
        let b = parse_table_source("t", &Source::new(saved)).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b.get(Prefix::v4(0x0a00_0000, 8).unwrap()), Some(7));
        let err =
            parse_table_source("t", &Source::new(b"10.0.0.0/8\n  10.1.0.0/16 \xff\n")).unwrap_err();
        assert_eq!(
            err[0].to_string(),
            "2:15: byte 0xFF is not UTF-8 (only comments may hold other text)"
        );
        assert_eq!(err.len(), 1);
    }

    #[test]
    fn too_many_entries_stops_with_an_error() {
        let limits = Limits {
            max_entries: 2,
            max_bytes: 1 << 20,
        };
        let err = parse_table_file_with("big", "1.0.0.1\n1.0.0.2\n1.0.0.3\n1.0.0.4\n", limits)
            .unwrap_err();
        assert_eq!(err.len(), 1);
        assert_eq!(
            err[0].to_string(),
            "3:1: table big: table is over its cap of 2 entries"
        );
    }

    #[test]
    fn error_count_is_capped() {
        let text = "x\n".repeat(10_000);
        let err = parse_table_file("t", &text).unwrap_err();
        assert_eq!(err.len(), MAX_ERRORS);
        assert!(err[MAX_ERRORS - 1]
            .message
            .ends_with("(too many errors, stopped reading)"));
    }
}
