//! The two files ppp filters come in: a filter file (`set filter` lines
//! as typed at the ppp prompt, nothing else) and a ppp.conf, read as
//! systems.c's `ReadSystem` reads it: a label (`name:` in column 0) opens
//! a section of indented commands that runs to the next unindented line;
//! ppp runs the `default` section, then the label asked for; `load LABEL`
//! runs another section in place. Commands other than `set filter` and
//! `load` configure the link and are skipped.

use super::line::{is_set_filter, set_filter, Command};
use super::words::{lines, Line, Word};
use super::{Loaded, PppFilters};
use crate::diag::{Diagnostic, Errors};
use crate::names::Names;
use crate::source::Source;

/// Which kind of ppp file a text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `set filter` lines and comments only.
    Filters,
    /// A ppp.conf: labelled sections.
    Conf,
}

/// The kind of ppp file `text` is, from its first line that says
/// anything: a label makes it a ppp.conf, a `set` command a filter file;
/// None for anything else (ipfw rules never start either way).
pub fn detect(text: &str) -> Option<Format> {
    let lines = lines(text);
    let line = lines.iter().find(|l| !l.is_blank())?;
    let words = line.words().ok()?;
    if !line.indented() && label(&words).is_some() {
        return Some(Format::Conf);
    }
    words
        .first()
        .filter(|w| w.text.eq_ignore_ascii_case("set"))
        .map(|_| Format::Filters)
}

/// A label line's name (`name:` or `name :`), as `GetLabel` reads it.
fn label(words: &[Word]) -> Option<&str> {
    match words {
        [name, colon] if colon.text == ":" => Some(&name.text),
        [w] if w.text.len() >= 2 => w.text.strip_suffix(':'),
        _ => None,
    }
}

/// Reads a filter file. Only `set filter` lines, blank lines and `#`
/// comments are allowed: any other ppp command, or a ppp.conf label, is an
/// error (a ppp.conf is read with [`parse_conf`]).
pub fn parse(source: &str, names: &Names) -> Result<Loaded, Vec<Diagnostic>> {
    parse_source(&Source::new(source.as_bytes()), names)
}

/// [`parse`] for a file read as bytes: a non-UTF-8 byte in a filter is an
/// error at its place, one in a comment is not.
pub fn parse_source(source: &Source, names: &Names) -> Result<Loaded, Vec<Diagnostic>> {
    let mut run = Run::new(names, source);
    for line in lines(source.text()) {
        let words = match line.words() {
            Ok(w) => w,
            Err(e) => {
                run.errors.push(e);
                continue;
            }
        };
        let Some(first) = words.first() else { continue };
        if is_set_filter(&words) {
            run.set_filter(&line, &words);
            continue;
        }
        let what = if label(&words).is_some() {
            "a ppp.conf label (read a ppp.conf with --label NAME)"
        } else {
            "a ppp command other than 'set filter'"
        };
        run.errors.push(Diagnostic::new(
            first.span,
            format!(
                "{what}: a ppp filter file holds only 'set filter in|out|dial|alive N …' lines"
            ),
        ));
    }
    run.finish()
}

/// A ppp.conf section: where its label is and its lines.
struct Section<'a> {
    name: String,
    lines: Vec<Line<'a>>,
}

/// The sections of a ppp.conf, first occurrence of each label only (as
/// ppp stops at the first), and what stands outside them.
struct Conf<'a> {
    sections: Vec<Section<'a>>,
    /// `!include` lines: ppp would search the included files too.
    includes: usize,
    /// `set filter` lines ppp never reads (outside any section, or
    /// unindented where a label belongs).
    stray: Vec<Diagnostic>,
}

impl<'a> Conf<'a> {
    fn read(source: &'a str) -> Conf<'a> {
        let mut conf = Conf {
            sections: Vec::new(),
            includes: 0,
            stray: Vec::new(),
        };
        // The section being read; Err(name) for a label seen before.
        let mut current: Option<Result<usize, String>> = None;
        for line in lines(source) {
            if line.is_blank() {
                continue;
            }
            let words = line.words().unwrap_or_default();
            if line.indented() {
                let stray = match &current {
                    Some(Ok(i)) => {
                        conf.sections[*i].lines.push(line);
                        continue;
                    }
                    Some(Err(name)) => {
                        format!("ppp reads only the first section labelled '{name}': it never reads this line")
                    }
                    None => {
                        "this 'set filter' line is outside any label: ppp never reads it".to_owned()
                    }
                };
                if is_set_filter(&words) {
                    conf.stray.push(Diagnostic::new(words[0].span, stray));
                }
                continue;
            }
            current = None;
            if words.first().is_some_and(|w| w.text.starts_with('!')) {
                conf.includes += 1;
            } else if let Some(name) = label(&words) {
                current = Some(match conf.sections.iter().position(|s| s.name == name) {
                    Some(_) => Err(name.to_owned()),
                    None => {
                        conf.sections.push(Section {
                            name: name.to_owned(),
                            lines: Vec::new(),
                        });
                        Ok(conf.sections.len() - 1)
                    }
                });
            } else if is_set_filter(&words) {
                conf.stray.push(Diagnostic::new(
                    words[0].span,
                    "ppp reads this unindented line as a label without its colon and skips it: indent commands",
                ));
            }
        }
        conf
    }

    fn section(&self, name: &str) -> Option<&Section<'a>> {
        self.sections.iter().find(|s| s.name == name)
    }
}

/// Labels whose sections hold `set filter` lines, in file order.
pub fn conf_labels(source: &str) -> Vec<String> {
    Conf::read(source)
        .sections
        .iter()
        .filter(|s| {
            s.lines
                .iter()
                .any(|l| l.words().is_ok_and(|w| is_set_filter(&w)))
        })
        .map(|s| s.name.clone())
        .collect()
}

/// How deep `load` may nest (ppp has no limit; a loop would never end).
const MAX_LOAD_DEPTH: usize = 8;
/// How many sections one reading may run, `load`s included: a few
/// sections that each load several others many times over would
/// otherwise take time without bound.
const MAX_SECTION_RUNS: usize = 256;

/// Reads the filters a ppp.conf gives label `name`: the `default`
/// section's `set filter` lines, then the label's, with `load` followed.
pub fn parse_conf(source: &str, name: &str, names: &Names) -> Result<Loaded, Vec<Diagnostic>> {
    parse_conf_source(&Source::new(source.as_bytes()), name, names)
}

/// [`parse_conf`] for a file read as bytes (see [`parse_source`]).
pub fn parse_conf_source(
    source: &Source,
    name: &str,
    names: &Names,
) -> Result<Loaded, Vec<Diagnostic>> {
    let conf = Conf::read(source.text());
    let Some(wanted) = conf.section(name) else {
        let labels: Vec<&str> = conf.sections.iter().map(|s| s.name.as_str()).collect();
        let mut msg = format!(
            "no label '{name}' in this ppp.conf (labels: {})",
            labels.join(", ")
        );
        if conf.includes > 0 {
            msg += "; weir does not follow !include";
        }
        let at = crate::ast::Span {
            line: 1,
            col: 1,
            len: 1,
        };
        return Err(vec![Diagnostic::new(at, msg)]);
    };
    let mut run = Run::new(names, source);
    if name != "default" {
        if let Some(d) = conf.section("default") {
            run.section(&conf, d, 0);
        }
    }
    run.section(&conf, wanted, 0);
    run.notes.extend(conf.stray);
    run.finish()
}

/// The filters built so far, with the notes and errors on the way.
struct Run<'n> {
    names: &'n Names,
    /// The file, for where its non-UTF-8 bytes are.
    source: &'n Source<'n>,
    loaded: Loaded,
    notes: Vec<Diagnostic>,
    /// The first hundred errors, and how many more.
    errors: Errors,
    /// Sections run so far.
    runs: usize,
}

impl<'n> Run<'n> {
    fn new(names: &'n Names, source: &'n Source<'n>) -> Run<'n> {
        Run {
            names,
            source,
            loaded: Loaded::default(),
            notes: Vec::new(),
            errors: Errors::default(),
            runs: 0,
        }
    }

    fn set_filter(&mut self, line: &Line<'_>, words: &[Word]) {
        // A filter's words must be text; comments may hold any bytes.
        if let Some(e) = words
            .iter()
            .find_map(|w| self.source.check_code(w.span.line, w.span).err())
        {
            self.errors.push(e);
            return;
        }
        let filters: &mut PppFilters = &mut self.loaded.filters;
        match set_filter(words, line.end(), self.names, &mut self.notes) {
            Ok(Command::Set(set, f)) => filters.insert(set, *f),
            Ok(Command::Clear(set, n)) => filters.clear(set, n),
            Ok(Command::ClearAll(set)) => filters.clear_all(set),
            Err(e) => self.errors.push(e),
        }
    }

    /// Runs a section's `set filter` and `load` commands in order.
    fn section(&mut self, conf: &Conf<'_>, section: &Section<'_>, depth: usize) {
        for line in &section.lines {
            let words = match line.words() {
                Ok(w) => w,
                // ppp skips a line it cannot split; so does weir, unless
                // it would have been a filter.
                Err(e) => {
                    if line.starts_set_filter() {
                        self.errors.push(e);
                    }
                    continue;
                }
            };
            if is_set_filter(&words) {
                self.set_filter(line, &words);
            } else if words
                .first()
                .is_some_and(|w| w.text.eq_ignore_ascii_case("load"))
            {
                self.load(conf, &words, depth);
            }
        }
    }

    /// `load [LABEL...]`: each label's section in turn (`default` when
    /// none is named), as ppp's `LoadCommand`.
    fn load(&mut self, conf: &Conf<'_>, words: &[Word], depth: usize) {
        let targets: Vec<(&str, crate::ast::Span)> = match &words[1..] {
            [] => vec![("default", words[0].span)],
            rest => rest.iter().map(|w| (w.text.as_str(), w.span)).collect(),
        };
        if depth + 1 > MAX_LOAD_DEPTH {
            self.errors.push(Diagnostic::new(
                words[0].span,
                format!("'load' nests deeper than {MAX_LOAD_DEPTH} sections (does a section load itself?)"),
            ));
            return;
        }
        self.runs += targets.len();
        if self.runs > MAX_SECTION_RUNS {
            self.errors.push(Diagnostic::new(
                words[0].span,
                format!("'load' runs more than {MAX_SECTION_RUNS} sections in all"),
            ));
            return;
        }
        if let Some((name, span)) = targets.iter().find(|(n, _)| conf.section(n).is_none()) {
            self.errors.push(Diagnostic::new(
                *span,
                format!("load: no label '{name}' in this ppp.conf"),
            ));
            return;
        }
        for (name, _) in targets {
            if let Some(s) = conf.section(name) {
                self.section(conf, s, depth + 1);
            }
        }
    }

    fn finish(mut self) -> Result<Loaded, Vec<Diagnostic>> {
        self.loaded.notes = self.notes;
        self.errors.finish(self.loaded)
    }
}
