//! Lines and words as ppp reads them: a line ending in `\` goes on with
//! the next (systems.c `xgets`); words are split on blanks, `"` quotes
//! (removed) keep blanks and `#` inside a word, `\` makes the next
//! character literal, and `#` outside quotes ends the line (command.c
//! `MakeArgs`).

use crate::ast::Span;
use crate::diag::Diagnostic;

/// One logical line: its physical pieces, joined where a line ended in `\`.
#[derive(Clone, Debug)]
pub(super) struct Line<'a> {
    /// `(line number, text)` of each piece, the joining `\` removed.
    pieces: Vec<(u32, &'a str)>,
}

impl<'a> Line<'a> {
    /// Whether it starts with a blank (ppp.conf: a command, not a label).
    pub(super) fn indented(&self) -> bool {
        self.pieces
            .first()
            .is_some_and(|p| p.1.starts_with([' ', '\t']))
    }

    /// The span just past the last character, for "expected more" errors.
    pub(super) fn end(&self) -> Span {
        let (line, text) = self.pieces.last().copied().unwrap_or((1, ""));
        Span {
            line,
            col: text.trim_end().chars().count() as u32 + 1,
            len: 1,
        }
    }

    /// Whether the line holds nothing but blanks and a comment.
    pub(super) fn is_blank(&self) -> bool {
        let first = self
            .pieces
            .iter()
            .find_map(|p| p.1.trim_start().chars().next());
        matches!(first, None | Some('#'))
    }

    /// Whether the line starts `set filter` by its blank-separated text
    /// alone, so that a broken quote later in it is worth an error.
    pub(super) fn starts_set_filter(&self) -> bool {
        let text: String = self.pieces.iter().map(|p| p.1).collect();
        let mut w = text.split_whitespace();
        match (w.next(), w.next()) {
            (Some(a), Some(b)) => super::line::is_set_filter_text(a, b),
            _ => false,
        }
    }

    /// The line's words; an unterminated quote is an error at the quote.
    pub(super) fn words(&self) -> Result<Vec<Word>, Diagnostic> {
        let mut out = Vec::new();
        let mut word: Option<Word> = None;
        let mut quote: Option<Span> = None;
        'pieces: for &(line, text) in &self.pieces {
            let mut chars = text.chars().enumerate();
            let at = |i: usize| Span {
                line,
                col: i as u32 + 1,
                len: 1,
            };
            while let Some((i, c)) = chars.next() {
                match c {
                    '#' if quote.is_none() => break 'pieces,
                    ' ' | '\t' if quote.is_none() => out.extend(word.take()),
                    '"' => {
                        quote = match quote {
                            Some(_) => None,
                            None => Some(at(i)),
                        };
                        word.get_or_insert_with(|| Word::at(at(i))).extend(at(i));
                    }
                    '\\' => {
                        let w = word.get_or_insert_with(|| Word::at(at(i)));
                        w.extend(at(i));
                        if let Some((j, next)) = chars.next() {
                            w.text.push(next);
                            w.extend(at(j));
                        }
                    }
                    _ => {
                        let w = word.get_or_insert_with(|| Word::at(at(i)));
                        w.text.push(c);
                        w.extend(at(i));
                    }
                }
            }
        }
        if let Some(q) = quote {
            return Err(Diagnostic::new(q, "unterminated quote"));
        }
        out.extend(word);
        Ok(out)
    }
}

/// A word: its text (quotes and escapes resolved) and where it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Word {
    pub(super) text: String,
    pub(super) span: Span,
}

impl Word {
    fn at(span: Span) -> Word {
        Word {
            text: String::new(),
            span: Span { len: 0, ..span },
        }
    }

    /// Takes in one more source character: the span covers the word's
    /// characters on its first line, quotes and escapes included.
    fn extend(&mut self, at: Span) {
        if at.line == self.span.line {
            self.span.len = at.col + 1 - self.span.col;
        }
    }
}

/// The file's logical lines. A byte-order mark is skipped; `\r\n` is fine.
pub(super) fn lines(source: &str) -> Vec<Line<'_>> {
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    let mut out = Vec::new();
    let mut pieces = Vec::new();
    for (i, raw) in source.split('\n').enumerate() {
        let number = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let text = raw.strip_suffix('\r').unwrap_or(raw);
        match text.strip_suffix('\\') {
            Some(head) => pieces.push((number, head)),
            None => {
                pieces.push((number, text));
                out.push(Line {
                    pieces: std::mem::take(&mut pieces),
                });
            }
        }
    }
    if !pieces.is_empty() {
        out.push(Line { pieces });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(source: &str) -> Vec<Vec<String>> {
        lines(source)
            .iter()
            .map(|l| l.words().unwrap().into_iter().map(|w| w.text).collect())
            .collect()
    }

    #[test]
    fn words_as_ppp_splits_them() {
        assert_eq!(
            texts(" set filter in 0 permit # comment\n\tset \"a b\" c#d\nx\\#y \"\"\n"),
            vec![
                vec!["set", "filter", "in", "0", "permit"],
                vec!["set", "a b", "c"],
                vec!["x#y", ""],
                vec![],
            ]
        );
    }

    #[test]
    fn a_trailing_backslash_joins_lines() {
        let l = lines("set filter \\\n  in 0 permit\nnext\n");
        assert_eq!(l.len(), 3);
        let w = l[0].words().unwrap();
        assert_eq!(w[2].text, "in");
        assert_eq!((w[2].span.line, w[2].span.col, w[2].span.len), (2, 3, 2));
        assert_eq!(l[1].words().unwrap()[0].text, "next");
    }

    #[test]
    fn spans_count_characters() {
        let l = lines("\u{feff}  é \"q r\" s\r\n");
        let w = l[0].words().unwrap();
        let spans: Vec<(u32, u32)> = w.iter().map(|w| (w.span.col, w.span.len)).collect();
        assert_eq!(spans, [(3, 1), (5, 5), (11, 1)]);
        assert_eq!(w[1].text, "q r");
        let e = lines("set \"open").remove(0).words().unwrap_err();
        assert_eq!((e.span.col, e.message.as_str()), (5, "unterminated quote"));
    }
}
