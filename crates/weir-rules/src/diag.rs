//! Errors in rule files: `file:line:col: message` and a caret under the spot.
//!
//! A hostile file can hold an error on every line, so a reader keeps the
//! first [`MAX_ERRORS`] in full and counts the rest ([`Errors`]), and
//! [`render_all`] indexes the file's lines once, however many errors it
//! shows: checking a file stays linear in its size.

use crate::ast::Span;
use std::fmt::{self, Write as _};

/// Errors kept in full per file; the rest are counted.
pub const MAX_ERRORS: usize = 100;

/// Characters shown either side of the marked spot on a long line.
const CONTEXT: usize = 60;

/// One error in a rule file. Line 0 means the file as a whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub span: Span,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.span.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "{}:{}: {}", self.span.line, self.span.col, self.message)
        }
    }
}

impl std::error::Error for Diagnostic {}

impl Diagnostic {
    pub fn new(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            span,
            message: message.into(),
        }
    }

    /// Renders like a compiler: `file:line:col: message`, the line, a caret.
    /// For many errors of one file, [`render_all`] finds the lines once.
    pub fn render<'a>(&'a self, file: &'a str, source: &'a str) -> impl fmt::Display + 'a {
        Rendered {
            diag: self,
            file,
            line: source_line(source, self.span.line),
        }
    }
}

/// Collects a file's errors: the first [`MAX_ERRORS`] in full, then a count.
#[derive(Debug, Default)]
pub struct Errors {
    kept: Vec<Diagnostic>,
    more: usize,
}

impl Errors {
    pub fn push(&mut self, d: Diagnostic) {
        if self.kept.len() < MAX_ERRORS {
            self.kept.push(d);
        } else {
            self.more += 1;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// `ok` when there were no errors; else the kept ones, and a last one
    /// for the whole file saying how many more there were.
    pub fn finish<T>(self, ok: T) -> Result<T, Vec<Diagnostic>> {
        if self.kept.is_empty() {
            return Ok(ok);
        }
        let mut kept = self.kept;
        if self.more > 0 {
            kept.push(Diagnostic::new(
                Span::default(),
                format!(
                    "{} more errors not shown (the first {MAX_ERRORS} are above)",
                    self.more
                ),
            ));
        }
        Err(kept)
    }
}

/// Renders every diagnostic of one file, one after another, each line of
/// the file found through an index built once.
pub fn render_all(file: &str, source: &str, diags: &[Diagnostic]) -> String {
    let index = LineIndex::new(source);
    let mut out = String::new();
    for (k, d) in diags.iter().enumerate() {
        if k > 0 {
            out.push('\n');
        }
        let rendered = Rendered {
            diag: d,
            file,
            line: index.line(source, d.span.line),
        };
        let _ = write!(out, "{rendered}");
    }
    out
}

/// Where each line starts, so line n is found without rescanning the file.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(source: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(source.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// Line `n` (1-based) without its line end, as `str::lines` gives it.
    fn line<'s>(&self, source: &'s str, n: u32) -> Option<&'s str> {
        let k = (n as usize).checked_sub(1)?;
        let start = *self.starts.get(k)?;
        let end = self.starts.get(k + 1).map_or(source.len(), |&e| e - 1);
        let text = source.get(start..end)?;
        Some(text.strip_suffix('\r').unwrap_or(text))
    }
}

/// Line `n` found by one scan, for a single diagnostic.
fn source_line(source: &str, n: u32) -> Option<&str> {
    source.lines().nth((n as usize).checked_sub(1)?)
}

struct Rendered<'a> {
    diag: &'a Diagnostic,
    file: &'a str,
    line: Option<&'a str>,
}

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let span = self.diag.span;
        if span.line == 0 {
            return write!(f, "{}: {}", self.file, self.diag.message);
        }
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, span.line, span.col, self.diag.message
        )?;
        let Some(text) = self.line else {
            return Ok(());
        };
        // A long line is cut to the part around the spot.
        let before = span.col.saturating_sub(1) as usize;
        let marked = (span.len.max(1) as usize).min(2 * CONTEXT);
        let from = before.saturating_sub(CONTEXT);
        let to = before.saturating_add(marked + CONTEXT);
        let mut shown = String::new();
        let mut pad = String::new();
        let mut chars = text.chars().skip(from).peekable();
        if from > 0 {
            shown.push('…');
            pad.push(' ');
        }
        for c in chars.by_ref().take(to - from) {
            shown.push(c);
        }
        if chars.peek().is_some() {
            shown.push('…');
        }
        // Tabs stay tabs under the line, so the caret lines up.
        for c in shown.chars().skip(pad.len()).take(before - from) {
            pad.push(if c == '\t' { '\t' } else { ' ' });
        }
        write!(f, "\n  {shown}\n  {pad}{}", "^".repeat(marked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u32, col: u32, len: u32, message: &str) -> Diagnostic {
        Diagnostic::new(Span { line, col, len }, message)
    }

    #[test]
    fn renders_file_line_col_and_caret() {
        let src = "allow ip from any to any\ndeny tcp from any to any 99999\n";
        let d = at(2, 26, 5, "port 99999 is out of range");
        let out = d.render("r.conf", src).to_string();
        assert_eq!(
            out,
            "r.conf:2:26: port 99999 is out of range\n  deny tcp from any to any 99999\n                           ^^^^^"
        );
        assert_eq!(render_all("r.conf", src, &[d]), out);
    }

    #[test]
    fn render_all_finds_each_line_once_indexed() {
        let src = "a\r\n\tb x\n\nc";
        let diags = [at(4, 1, 1, "four"), at(2, 4, 1, "two"), at(9, 1, 1, "gone")];
        assert_eq!(
            render_all("f", src, &diags),
            "f:4:1: four\n  c\n  ^\nf:2:4: two\n  \tb x\n  \t  ^\nf:9:1: gone"
        );
    }

    #[test]
    fn a_whole_file_diagnostic_has_no_position() {
        let d = Diagnostic::new(Span::default(), "3 more errors");
        assert_eq!(d.to_string(), "3 more errors");
        assert_eq!(render_all("f", "x\n", &[d]), "f: 3 more errors");
    }

    #[test]
    fn long_lines_are_cut_around_the_spot() {
        let src = format!("{}bad{}", ",".repeat(1000), ",".repeat(1000));
        let out = render_all("f", &src, &[at(1, 1001, 3, "here")]);
        let lines: Vec<&str> = out.lines().collect();
        let want = format!("  …{}bad{}…", ",".repeat(60), ",".repeat(60));
        assert_eq!(lines[1], want);
        assert_eq!(lines[2], format!("  {}^^^", " ".repeat(61)));
        // At the start of a long line nothing is cut before the spot.
        let out = render_all("f", &src, &[at(1, 1, 1, "start")]);
        assert!(out.lines().nth(1).unwrap().starts_with("  ,,,"));
        assert!(out.lines().nth(1).unwrap().ends_with('…'));
        assert_eq!(out.lines().nth(2), Some("  ^"));
    }

    #[test]
    fn errors_keep_the_first_hundred_and_count_the_rest() {
        let mut e = Errors::default();
        assert!(e.is_empty());
        for line in 1..=250 {
            e.push(at(line, 1, 1, "bad"));
        }
        let list = e.finish(()).unwrap_err();
        assert_eq!(list.len(), MAX_ERRORS + 1);
        assert_eq!(list[MAX_ERRORS - 1].span.line, 100);
        assert_eq!(
            list[MAX_ERRORS].to_string(),
            "150 more errors not shown (the first 100 are above)"
        );
        let mut e = Errors::default();
        e.push(at(1, 1, 1, "one"));
        assert_eq!(e.finish(()).unwrap_err().len(), 1);
        assert_eq!(Errors::default().finish(7), Ok(7));
    }
}
