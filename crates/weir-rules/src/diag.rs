//! Errors in rule files: `file:line:col: message` and a caret under the spot.

use crate::ast::Span;
use std::fmt;

/// One error in a rule file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {message}", line = span.line, col = span.col)]
pub struct Diagnostic {
    pub span: Span,
    pub message: String,
}

impl Diagnostic {
    pub fn new(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            span,
            message: message.into(),
        }
    }

    /// Renders like a compiler: `file:line:col: message`, the line, a caret.
    pub fn render<'a>(&'a self, file: &'a str, source: &'a str) -> impl fmt::Display + 'a {
        Rendered {
            diag: self,
            file,
            source,
        }
    }
}

struct Rendered<'a> {
    diag: &'a Diagnostic,
    file: &'a str,
    source: &'a str,
}

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let span = self.diag.span;
        writeln!(
            f,
            "{}:{}:{}: {}",
            self.file, span.line, span.col, self.diag.message
        )?;
        let Some(text) = self
            .source
            .lines()
            .nth(span.line.saturating_sub(1) as usize)
        else {
            return Ok(());
        };
        writeln!(f, "  {text}")?;
        let pad: String = text
            .chars()
            .take(span.col.saturating_sub(1) as usize)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        write!(f, "  {pad}{}", "^".repeat(span.len.max(1) as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_file_line_col_and_caret() {
        let src = "allow ip from any to any\ndeny tcp from any to any 99999\n";
        let d = Diagnostic::new(
            Span {
                line: 2,
                col: 26,
                len: 5,
            },
            "port 99999 is out of range",
        );
        let out = d.render("r.conf", src).to_string();
        assert_eq!(
            out,
            "r.conf:2:26: port 99999 is out of range\n  deny tcp from any to any 99999\n                           ^^^^^"
        );
    }
}
