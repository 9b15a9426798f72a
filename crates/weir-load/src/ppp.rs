//! FreeBSD ppp filter files and ppp.conf files: which syntax a file is,
//! which set and label decide, host names resolved once, one set
//! translated to ipfw rules (`weir_rules::ppp`) and compiled as any
//! ruleset is.

use crate::files::read_source;
use crate::{rendered, LoadError, Notes, Options, PppOptions, Syntax};
use std::collections::HashMap;
use std::net::{Ipv4Addr, ToSocketAddrs};
use std::path::Path;
use weir_engine::{compile, CompileOptions, Program};
use weir_rules::ppp::{self, FilterSet, Format, Loaded, PppFilters};
use weir_rules::{Diagnostic, Names, Source};

/// The kind of ppp file `text` is, or None for ipfw rules.
pub fn format(syntax: Syntax, text: &str) -> Option<Format> {
    match syntax {
        Syntax::Auto => ppp::detect(text),
        Syntax::Ipfw => None,
        Syntax::Ppp => Some(ppp::detect(text).unwrap_or(Format::Filters)),
    }
}

/// ppp options on an ipfw file would silently mean nothing: refuse them,
/// by the flag that gives each.
pub fn refuse_for_ipfw(opts: &PppOptions, file: &str) -> Result<(), LoadError> {
    let b = &opts.bindings;
    let given = [
        (opts.filter_set.is_some(), "--filter-set"),
        (opts.label.is_some(), "--label"),
        (b.myaddr.is_some(), "--myaddr"),
        (b.hisaddr.is_some(), "--hisaddr"),
        (b.myaddr6.is_some(), "--myaddr6"),
        (b.hisaddr6.is_some(), "--hisaddr6"),
        (b.dns0.is_some(), "--dns0"),
        (b.dns1.is_some(), "--dns1"),
        (opts.hosts_file.is_some(), "--hosts"),
    ];
    match given.iter().find(|(on, _)| *on) {
        Some((_, flag)) => Err(LoadError::Usage(format!(
            "{flag} is for ppp filter files, and {file} reads as ipfw rules (--syntax ppp to say otherwise)"
        ))),
        None => Ok(()),
    }
}

/// A ppp file as read: its name, text and kind.
pub struct PppFile {
    pub name: String,
    pub source: Source<'static>,
    pub format: Format,
}

impl PppFile {
    /// The filters of one label (None for a filter file), notes given
    /// to `notes`.
    pub fn filters(
        &self,
        label: Option<&str>,
        names: &Names,
        notes: Notes,
    ) -> Result<PppFilters, LoadError> {
        let loaded: Loaded = match (self.format, label) {
            (Format::Filters, _) => ppp::parse_source(&self.source, names),
            (Format::Conf, Some(label)) => ppp::parse_conf_source(&self.source, label, names),
            (Format::Conf, None) => return Err(self.needs_label()),
        }
        .map_err(|e| self.rendered(&e))?;
        self.write_notes(&loaded.notes, notes)?;
        Ok(loaded.filters)
    }

    fn write_notes(&self, list: &[Diagnostic], notes: Notes) -> Result<(), LoadError> {
        for note in list {
            let span = note.span;
            notes(&format!(
                "{}:{}:{}: note: {}",
                self.name, span.line, span.col, note.message
            ))
            .map_err(LoadError::Note)?;
        }
        Ok(())
    }

    fn rendered(&self, errors: &[Diagnostic]) -> LoadError {
        rendered(&self.name, self.source.text(), errors)
    }

    /// Translates and compiles one set, host names resolved first.
    pub fn compile_set(
        &self,
        filters: &PppFilters,
        set: FilterSet,
        opts: &Options,
        names: &Names,
        compile_opts: &CompileOptions,
        notes: Notes,
    ) -> Result<Program, LoadError> {
        let mut bind = opts.ppp.bindings.clone();
        let unbound: Vec<&str> = filters
            .host_names(Some(set))
            .into_iter()
            .filter(|n| !bind.hosts.contains_key(&n.to_ascii_lowercase()))
            .collect();
        bind.hosts
            .extend(resolve(&unbound, opts.ppp.hosts_file.as_deref())?);
        let t = ppp::translate(filters, set, &bind, names).map_err(|e| self.rendered(&e))?;
        self.write_notes(&t.notes, notes)?;
        compile(&t.ruleset, names, compile_opts).map_err(|e| self.rendered(&e))
    }

    /// The label a ppp.conf is read with, which it must have (and a
    /// filter file must not).
    pub fn label<'a>(&self, opts: &'a PppOptions) -> Result<Option<&'a str>, LoadError> {
        match (self.format, opts.label.as_deref()) {
            (Format::Conf, Some(l)) => Ok(Some(l)),
            (Format::Conf, None) => Err(self.needs_label()),
            (Format::Filters, None) => Ok(None),
            (Format::Filters, Some(_)) => Err(LoadError::Usage(format!(
                "--label is for ppp.conf files, and {} holds only set filter lines",
                self.name
            ))),
        }
    }

    /// The set that decides, which a run must be told.
    pub fn set(&self, opts: &PppOptions) -> Result<FilterSet, LoadError> {
        opts.filter_set.ok_or_else(|| {
            LoadError::Usage(format!(
                "{} is a ppp filter file: say which set decides with --filter-set in|out|dial|alive",
                self.name
            ))
        })
    }

    fn needs_label(&self) -> LoadError {
        LoadError::Usage(format!(
            "{} is a ppp.conf: say which label's filters decide with --label NAME (labels with filters: {})",
            self.name,
            ppp::conf_labels(self.source.text()).join(", ")
        ))
    }
}

/// Host names to IPv4 addresses, each looked up once: from `hosts_file`
/// when given, else the system resolver. A name that does not resolve is
/// left out; translating reports it at the rule that uses it.
fn resolve(
    names: &[&str],
    hosts_file: Option<&Path>,
) -> Result<HashMap<String, Ipv4Addr>, LoadError> {
    let table = match hosts_file {
        Some(p) => Some(ppp::hosts::parse_hosts(read_source(p)?.text())),
        None => None,
    };
    let mut out = HashMap::new();
    for name in names {
        let key = name.to_ascii_lowercase();
        let addr = match &table {
            Some(t) => t.get(&key).copied(),
            None => (*name, 0).to_socket_addrs().ok().and_then(|mut addrs| {
                addrs.find_map(|a| match a.ip() {
                    std::net::IpAddr::V4(v4) => Some(v4),
                    std::net::IpAddr::V6(_) => None,
                })
            }),
        };
        if let Some(a) = addr {
            out.insert(key, a);
        }
    }
    Ok(out)
}
