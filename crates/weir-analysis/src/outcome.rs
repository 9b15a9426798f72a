//! What `lint`, `search` and `diff` answer, as the command line shows it:
//! the JSON shapes (stable field names), the text for people, and whether
//! anything was found (the exit status: 1 found, 0 not).

use crate::report::{self, describe, verdict_word, Finding};
use crate::trace::Pair;
use crate::{DiffResult, SearchResult};
use serde::Serialize;

/// Pretty JSON with a final newline.
pub fn json_line<T: Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// `weir lint`: the rule file's findings.
#[derive(Debug, Serialize)]
pub struct LintAnswer<'a> {
    pub file: &'a str,
    pub findings: &'a [Finding],
}

impl LintAnswer<'_> {
    pub fn text(&self, explain: bool) -> String {
        report::text(self.file, self.findings, explain)
    }

    pub fn sarif(&self) -> String {
        json_line(&report::sarif(self.file, self.findings))
    }

    pub fn found(&self) -> bool {
        !self.findings.is_empty()
    }
}

/// `weir search`: the packet, or none.
#[derive(Debug, Serialize)]
pub struct SearchAnswer<'a> {
    pub found: bool,
    pub witness: Option<&'a report::Witness>,
    pub caveat: Option<&'a str>,
}

impl SearchAnswer<'_> {
    pub fn of(r: &SearchResult) -> SearchAnswer<'_> {
        SearchAnswer {
            found: r.witness.is_some(),
            witness: r.witness.as_ref(),
            caveat: r.caveat.as_deref(),
        }
    }

    pub fn text(&self) -> String {
        let mut s = match self.witness {
            Some(w) => format!(
                "{} -> rule {} ({})\n",
                describe(&w.packet),
                w.decided_by.unwrap_or(0),
                w.verdict.map_or("?", verdict_word)
            ),
            None => "no packet fits: none exists\n".to_string(),
        };
        if let Some(c) = self.caveat {
            s += &format!("note: {c}\n");
        }
        s
    }
}

/// `weir diff`: the classes that changed and, with a trace, its packets
/// that did by (old rule, new rule).
#[derive(Debug, Serialize)]
pub struct DiffAnswer<'a> {
    pub changes: &'a [crate::Change],
    pub caveat: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Vec<Pair>>,
}

impl DiffAnswer<'_> {
    pub fn of(d: &DiffResult, trace: Option<Vec<Pair>>) -> DiffAnswer<'_> {
        DiffAnswer {
            changes: &d.changes,
            caveat: d.caveat.as_deref(),
            trace,
        }
    }

    /// One line per class, `OLD:line: rule N (verdict) -> NEW:line: …`.
    pub fn text(&self, old: &str, new: &str) -> String {
        let mut s = String::new();
        for c in self.changes {
            s += &format!(
                "{old}:{}: rule {} ({}) -> {new}:{}: rule {} ({}): {}\n",
                c.old.line,
                c.old.number,
                verdict_word(c.old_verdict),
                c.new.line,
                c.new.number,
                verdict_word(c.new_verdict),
                describe(&c.witness)
            );
        }
        if let Some(c) = self.caveat {
            s += &format!("note: {c}\n");
        }
        for p in self.trace.iter().flatten() {
            s += &format!(
                "trace: {} packets: rule {} -> rule {}\n",
                p.packets, p.old, p.new
            );
        }
        s
    }

    pub fn found(&self) -> bool {
        !self.changes.is_empty() || self.trace.as_ref().is_some_and(|t| !t.is_empty())
    }
}
