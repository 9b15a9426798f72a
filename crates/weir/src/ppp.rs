//! FreeBSD ppp filter files and ppp.conf files on the command line:
//! `--syntax`, `--filter-set`, `--label`, the symbolic address flags and
//! `--hosts`, shared by run, explain, bench, probe and check. A ppp file
//! is read, its host names resolved once, one set translated to ipfw rules
//! (`weir_rules::ppp`), and compiled as any ruleset is.

use crate::outputs;
use crate::setup::{compile_source, read_source, rules_failure};
use crate::Failure;
use clap::{Args, ValueEnum};
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use weir_engine::{compile, CompileOptions, LogFormat, Program};
use weir_rules::ppp::{self, Bindings, FilterSet, Format, Loaded, PppFilters};
use weir_rules::{Diagnostic, Names, Source};

/// Flags for rule files in FreeBSD ppp's `set filter` syntax.
#[derive(Args, Debug, Clone, Default)]
pub struct PppArgs {
    /// Rule file syntax. `auto` reads a file whose first line is a label
    /// (`name:`) as a ppp.conf, one whose first command is `set` as ppp
    /// `set filter` lines, anything else as ipfw rules.
    #[arg(long, value_enum, default_value_t = SyntaxArg::Auto)]
    pub syntax: SyntaxArg,
    /// ppp files: the set that decides (`check` without it checks every set).
    #[arg(long, value_enum, value_name = "SET")]
    pub filter_set: Option<FilterSetArg>,
    /// ppp.conf files: the label whose `set filter` lines count, after the
    /// `default` label's (`check` without it checks every label with filters).
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// ppp files: the address MYADDR stands for.
    #[arg(long, value_name = "ADDR")]
    pub myaddr: Option<Ipv4Addr>,
    /// ppp files: the address HISADDR stands for.
    #[arg(long, value_name = "ADDR")]
    pub hisaddr: Option<Ipv4Addr>,
    /// ppp files: the address MYADDR6 stands for.
    #[arg(long, value_name = "ADDR6")]
    pub myaddr6: Option<Ipv6Addr>,
    /// ppp files: the address HISADDR6 stands for.
    #[arg(long, value_name = "ADDR6")]
    pub hisaddr6: Option<Ipv6Addr>,
    /// ppp files: the address DNS0 stands for.
    #[arg(long, value_name = "ADDR")]
    pub dns0: Option<Ipv4Addr>,
    /// ppp files: the address DNS1 stands for.
    #[arg(long, value_name = "ADDR")]
    pub dns1: Option<Ipv4Addr>,
    /// ppp files: resolve host names from this hosts(5) file instead of the
    /// system resolver (either way once, when the rules load).
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, Default, ValueEnum, PartialEq, Eq)]
pub enum SyntaxArg {
    #[default]
    Auto,
    Ipfw,
    Ppp,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum FilterSetArg {
    In,
    Out,
    Dial,
    Alive,
}

impl From<FilterSetArg> for FilterSet {
    fn from(s: FilterSetArg) -> FilterSet {
        match s {
            FilterSetArg::In => FilterSet::In,
            FilterSetArg::Out => FilterSet::Out,
            FilterSetArg::Dial => FilterSet::Dial,
            FilterSetArg::Alive => FilterSet::Alive,
        }
    }
}

impl PppArgs {
    /// The kind of ppp file `text` is, or None for ipfw rules.
    fn format(&self, text: &str) -> Option<Format> {
        match self.syntax {
            SyntaxArg::Auto => ppp::detect(text),
            SyntaxArg::Ipfw => None,
            SyntaxArg::Ppp => Some(ppp::detect(text).unwrap_or(Format::Filters)),
        }
    }

    /// ppp flags on an ipfw file would silently mean nothing: refuse them.
    fn refuse_for_ipfw(&self, file: &str) -> Result<(), Failure> {
        let given = [
            (self.filter_set.is_some(), "--filter-set"),
            (self.label.is_some(), "--label"),
            (self.myaddr.is_some(), "--myaddr"),
            (self.hisaddr.is_some(), "--hisaddr"),
            (self.myaddr6.is_some(), "--myaddr6"),
            (self.hisaddr6.is_some(), "--hisaddr6"),
            (self.dns0.is_some(), "--dns0"),
            (self.dns1.is_some(), "--dns1"),
            (self.hosts.is_some(), "--hosts"),
        ];
        match given.iter().find(|(on, _)| *on) {
            Some((_, flag)) => Err(Failure::Usage(format!(
                "{flag} is for ppp filter files, and {file} reads as ipfw rules (--syntax ppp to say otherwise)"
            ))),
            None => Ok(()),
        }
    }
}

/// The log format for a ruleset: ppp files log ppp's LogFILTER lines where
/// ipfw files log ipfw's (`--log-format text`); JSON stays JSON.
pub fn log_format(requested: LogFormat, set: Option<FilterSet>) -> LogFormat {
    match (requested, set) {
        (LogFormat::Text, Some(set)) => LogFormat::Ppp(set),
        (f, _) => f,
    }
}

/// A ppp file as read: its text, and for a ppp.conf the labels to use.
struct PppFile {
    name: String,
    source: Source<'static>,
    format: Format,
}

impl PppFile {
    /// The filters of one label (None for a filter file), notes printed.
    fn filters(&self, label: Option<&str>, names: &Names) -> Result<PppFilters, Failure> {
        let loaded: Loaded = match (self.format, label) {
            (Format::Filters, _) => ppp::parse_source(&self.source, names),
            (Format::Conf, Some(label)) => ppp::parse_conf_source(&self.source, label, names),
            (Format::Conf, None) => return Err(self.needs_label()),
        }
        .map_err(|e| self.rendered(&e))?;
        self.print_notes(&loaded.notes)?;
        Ok(loaded.filters)
    }

    fn print_notes(&self, notes: &[Diagnostic]) -> Result<(), Failure> {
        for note in notes {
            let span = note.span;
            outputs::note(&format!(
                "{}:{}:{}: note: {}",
                self.name, span.line, span.col, note.message
            ))?;
        }
        Ok(())
    }

    fn rendered(&self, errors: &[Diagnostic]) -> Failure {
        rules_failure(&self.name, self.source.text(), errors)
    }

    /// Translates and compiles one set, host names resolved first.
    fn compile_set(
        &self,
        filters: &PppFilters,
        set: FilterSet,
        args: &PppArgs,
        names: &Names,
        opts: &CompileOptions,
    ) -> Result<Program, Failure> {
        let bind = Bindings {
            myaddr: args.myaddr,
            hisaddr: args.hisaddr,
            myaddr6: args.myaddr6,
            hisaddr6: args.hisaddr6,
            dns0: args.dns0,
            dns1: args.dns1,
            hosts: resolve(&filters.host_names(Some(set)), args.hosts.as_deref())?,
        };
        let t = ppp::translate(filters, set, &bind, names).map_err(|e| self.rendered(&e))?;
        self.print_notes(&t.notes)?;
        compile(&t.ruleset, names, opts).map_err(|e| self.rendered(&e))
    }

    /// The label a ppp.conf is read with: `--label`, which it must have
    /// (and a filter file must not).
    fn label<'a>(&self, args: &'a PppArgs) -> Result<Option<&'a str>, Failure> {
        match (self.format, args.label.as_deref()) {
            (Format::Conf, Some(l)) => Ok(Some(l)),
            (Format::Conf, None) => Err(self.needs_label()),
            (Format::Filters, None) => Ok(None),
            (Format::Filters, Some(_)) => Err(Failure::Usage(format!(
                "--label is for ppp.conf files, and {} holds only set filter lines",
                self.name
            ))),
        }
    }

    fn needs_label(&self) -> Failure {
        Failure::Usage(format!(
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
) -> Result<HashMap<String, Ipv4Addr>, Failure> {
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

/// A rule file of either syntax.
enum RuleFile {
    Ppp(PppFile),
    /// ipfw rules: the file's name and contents.
    Ipfw(String, Source<'static>),
}

/// Reads a rule file; ppp flags on an ipfw file are refused.
fn read_rules(path: &Path, args: &PppArgs) -> Result<RuleFile, Failure> {
    let name = path.display().to_string();
    let source = read_source(path)?;
    match args.format(source.text()) {
        Some(format) => Ok(RuleFile::Ppp(PppFile {
            name,
            source,
            format,
        })),
        None => {
            args.refuse_for_ipfw(&name)?;
            Ok(RuleFile::Ipfw(name, source))
        }
    }
}

/// Reads a rule file of either syntax and compiles it; for a ppp file,
/// also says which set it is.
pub fn load(
    path: &Path,
    args: &PppArgs,
    names: &Names,
    opts: &CompileOptions,
) -> Result<(Program, Option<FilterSet>), Failure> {
    let file = match read_rules(path, args)? {
        RuleFile::Ppp(f) => f,
        RuleFile::Ipfw(name, source) => {
            return Ok((compile_source(&name, &source, names, opts)?, None))
        }
    };
    let set: FilterSet = args.filter_set.map(Into::into).ok_or_else(|| {
        Failure::Usage(format!(
            "{} is a ppp filter file: say which set decides with --filter-set in|out|dial|alive",
            file.name
        ))
    })?;
    let filters = file.filters(file.label(args)?, names)?;
    Ok((
        file.compile_set(&filters, set, args, names, opts)?,
        Some(set),
    ))
}

/// What `weir check` checks: the one ipfw ruleset, or each ppp set asked
/// for (every set with rules when `--filter-set` is not given; for a
/// ppp.conf, every label with filters when `--label` is not given),
/// labelled.
pub fn programs_to_check(
    path: &Path,
    args: &PppArgs,
    names: &Names,
    opts: &CompileOptions,
) -> Result<Vec<(String, Program)>, Failure> {
    let file = match read_rules(path, args)? {
        RuleFile::Ppp(f) => f,
        RuleFile::Ipfw(name, source) => {
            let program = compile_source(&name, &source, names, opts)?;
            return Ok(vec![(name, program)]);
        }
    };
    let labels: Vec<Option<String>> = match (file.format, &args.label) {
        (Format::Conf, None) => ppp::conf_labels(file.source.text())
            .into_iter()
            .map(Some)
            .collect(),
        _ => vec![file.label(args)?.map(str::to_owned)],
    };
    let mut out = Vec::new();
    let mut failures = Vec::new();
    for label in &labels {
        let filters = match file.filters(label.as_deref(), names) {
            Ok(f) => f,
            Err(Failure::Rules(msg)) => {
                failures.push(msg);
                continue;
            }
            Err(other) => return Err(other),
        };
        let sets: Vec<FilterSet> = match args.filter_set {
            Some(s) => vec![s.into()],
            None => FilterSet::ALL
                .into_iter()
                .filter(|s| !filters.is_empty(*s))
                .collect(),
        };
        for set in sets {
            let what = match label {
                Some(l) => format!("{} ({l}, set filter {})", file.name, set.word()),
                None => format!("{} (set filter {})", file.name, set.word()),
            };
            match file.compile_set(&filters, set, args, names, opts) {
                Ok(p) => out.push((what, p)),
                Err(Failure::Rules(msg)) => failures.push(msg),
                Err(other) => return Err(other),
            }
        }
    }
    if failures.is_empty() {
        Ok(out)
    } else {
        Err(Failure::Rules(failures.join("\n")))
    }
}
