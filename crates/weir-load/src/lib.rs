//! A ruleset from a file (or bytes) and plain options to a compiled
//! [`Program`], as every `weir` command and the Python package load one:
//! ipfw rules, or FreeBSD ppp filters (one set, of one ppp.conf label,
//! with its symbolic addresses and host names bound once); lookup tables
//! from files; `me` addresses; the implicit rule's verdict; tunables.
//! Errors are the messages `weir` prints, rule errors rendered as
//! `file:line:col` with carets. Everything here runs once, at load.
#![forbid(unsafe_code)]

mod files;
mod ppp;
mod tables;

pub use files::{read_bytes, read_source};
pub use tables::load_tables;

use ppp::PppFile;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use weir_engine::{CompileOptions, Engine, EngineBuilder, Program};
use weir_rules::ppp::{Bindings, FilterSet, Format};
use weir_rules::{Diagnostic, Names, Source};
use weir_wire::addr_to_u128;

/// How to read a ruleset and what it is compiled with. The field names
/// follow the `weir` flags that set them.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--syntax`.
    pub syntax: Syntax,
    /// What only ppp files take.
    pub ppp: PppOptions,
    /// `--table NAME=FILE`, in the order given.
    pub tables: Vec<(String, PathBuf)>,
    /// `--default-allow`: the implicit rule 65535 allows.
    pub default_allow: bool,
    /// `--disable-set`: a bit per set whose rules are left out.
    pub disabled_sets: u32,
    /// `--me`: this host's addresses; without any, rules naming `me` are
    /// refused.
    pub me: Vec<IpAddr>,
    /// `--sysctl NAME=VALUE`, applied in order over the ruleset's own.
    pub sysctl: Vec<(String, u32)>,
    /// `--layer2`: frames also pass the rules at layer 2.
    pub layer2: bool,
}

/// What a rule file is read as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Syntax {
    /// A ppp.conf when the first line is a label (`name:`), ppp `set
    /// filter` lines when the first command is `set`, else ipfw rules.
    #[default]
    Auto,
    Ipfw,
    Ppp,
}

/// Options for ppp files; any of them on an ipfw file is an error.
#[derive(Clone, Debug, Default)]
pub struct PppOptions {
    /// `--filter-set`: the set that decides.
    pub filter_set: Option<FilterSet>,
    /// `--label`: a ppp.conf's label whose `set filter` lines count,
    /// after the `default` label's.
    pub label: Option<String>,
    /// `--myaddr`, `--hisaddr`, `--myaddr6`, `--hisaddr6`, `--dns0`,
    /// `--dns1`. Host names bound in `hosts` are taken as given; the
    /// others are resolved once at load.
    pub bindings: Bindings,
    /// `--hosts`: resolve host names from this hosts(5) file instead of
    /// the system resolver.
    pub hosts_file: Option<PathBuf>,
}

/// A ruleset that did not load: the message `weir` prints (after
/// `weir: ` for a usage error).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file that cannot be read, or options that do not fit the file.
    #[error("{0}")]
    Usage(String),
    /// The file's errors, rendered: `file:line:col: message` and a caret,
    /// the first hundred in full, then a count.
    #[error("{0}")]
    Rules(String),
    /// A note about the file could not be written.
    #[error("writing a note: {0}")]
    Note(io::Error),
}

/// Where notes about a file go (`file:line:col: note: …` lines, such as
/// a ppp rule ppp itself would ignore), one line at a time.
pub type Notes<'a> = &'a mut dyn FnMut(&str) -> io::Result<()>;

/// A compiled ruleset.
pub struct Loaded {
    pub program: Program,
    /// The ppp set it was translated from; None for ipfw rules.
    pub set: Option<FilterSet>,
    me: Vec<(u128, u8)>,
}

impl Loaded {
    /// An engine builder over the program with the `me` addresses given;
    /// the caller adds walk, dispatch and policy.
    pub fn builder(self) -> EngineBuilder {
        Engine::builder(self.program).me(self.me)
    }
}

impl Options {
    /// What the compiler takes: the tables read from their files.
    pub fn compile_options(&self) -> Result<CompileOptions, LoadError> {
        Ok(CompileOptions {
            default_allow: self.default_allow,
            tables: load_tables(&self.tables)?,
            disabled_sets: self.disabled_sets,
            no_me: self.me.is_empty(),
        })
    }
}

/// Reads the rule file at `path` (`-` for stdin) and compiles it.
pub fn load(path: &Path, opts: &Options, names: &Names, notes: Notes) -> Result<Loaded, LoadError> {
    let compile_opts = opts.compile_options()?;
    let source = read_source(path)?;
    load_compiled(
        &path.display().to_string(),
        source,
        opts,
        names,
        &compile_opts,
        notes,
    )
}

/// Compiles `bytes`, the contents of the rule file called `name`.
pub fn load_bytes(
    name: &str,
    bytes: Vec<u8>,
    opts: &Options,
    names: &Names,
    notes: Notes,
) -> Result<Loaded, LoadError> {
    let compile_opts = opts.compile_options()?;
    load_compiled(
        name,
        Source::from_vec(bytes),
        opts,
        names,
        &compile_opts,
        notes,
    )
}

fn load_compiled(
    name: &str,
    source: Source<'static>,
    opts: &Options,
    names: &Names,
    compile_opts: &CompileOptions,
    notes: Notes,
) -> Result<Loaded, LoadError> {
    let (mut program, set) = match rule_file(name, source, opts)? {
        RuleFile::Ipfw(source) => (compile_ipfw(name, &source, names, compile_opts)?, None),
        RuleFile::Ppp(file) => {
            let set = file.set(&opts.ppp)?;
            let filters = file.filters(file.label(&opts.ppp)?, names, notes)?;
            let program = file.compile_set(&filters, set, opts, names, compile_opts, notes)?;
            (program, Some(set))
        }
    };
    for (name, value) in &opts.sysctl {
        let on = *value != 0;
        match name.as_str() {
            "one_pass" => program.one_pass = on,
            "net.link.ether.ipfw" => program.layer2 = on,
            "default_to_accept" => program.set_default_allow(on),
            _ => {
                program.state_config.set(name, *value);
            }
        }
    }
    program.layer2 |= opts.layer2;
    Ok(Loaded {
        program,
        set,
        me: me_addresses(&opts.me),
    })
}

/// `me` addresses as the engine holds them: the address and its IP
/// version.
pub fn me_addresses(me: &[IpAddr]) -> Vec<(u128, u8)> {
    me.iter()
        .map(|a| (addr_to_u128(*a), if a.is_ipv4() { 4 } else { 6 }))
        .collect()
}

/// What `weir check` checks in the rule file at `path`: the one ipfw
/// ruleset, or each ppp set asked for (every set with rules when no
/// `filter_set` is given; for a ppp.conf, every label with filters when
/// no `label` is), each named. Rules naming `me` are fine without `me`
/// addresses: checking asks whether the file is right, not whether a
/// run's flags suffice. Every failing set's errors are reported.
pub fn programs_to_check(
    path: &Path,
    opts: &Options,
    names: &Names,
    notes: Notes,
) -> Result<Vec<(String, Program)>, LoadError> {
    let compile_opts = CompileOptions {
        no_me: false,
        ..opts.compile_options()?
    };
    let name = path.display().to_string();
    let file = match rule_file(&name, read_source(path)?, opts)? {
        RuleFile::Ppp(f) => f,
        RuleFile::Ipfw(source) => {
            let program = compile_ipfw(&name, &source, names, &compile_opts)?;
            return Ok(vec![(name, program)]);
        }
    };
    let labels: Vec<Option<String>> = match (file.format, &opts.ppp.label) {
        (Format::Conf, None) => weir_rules::ppp::conf_labels(file.source.text())
            .into_iter()
            .map(Some)
            .collect(),
        _ => vec![file.label(&opts.ppp)?.map(str::to_owned)],
    };
    let mut out = Vec::new();
    let mut failures = Vec::new();
    for label in &labels {
        let filters = match file.filters(label.as_deref(), names, notes) {
            Ok(f) => f,
            Err(LoadError::Rules(msg)) => {
                failures.push(msg);
                continue;
            }
            Err(other) => return Err(other),
        };
        let sets: Vec<FilterSet> = match opts.ppp.filter_set {
            Some(s) => vec![s],
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
            match file.compile_set(&filters, set, opts, names, &compile_opts, notes) {
                Ok(p) => out.push((what, p)),
                Err(LoadError::Rules(msg)) => failures.push(msg),
                Err(other) => return Err(other),
            }
        }
    }
    if failures.is_empty() {
        Ok(out)
    } else {
        Err(LoadError::Rules(failures.join("\n")))
    }
}

/// Parses and compiles ipfw rules; errors come back rendered.
pub fn compile_ipfw(
    name: &str,
    source: &Source,
    names: &Names,
    opts: &CompileOptions,
) -> Result<Program, LoadError> {
    weir_rules::parse_source(source, names)
        .and_then(|ast| weir_engine::compile(&ast, names, opts))
        .map_err(|errors| rendered(name, source.text(), &errors))
}

/// A rule file's errors, rendered: the first hundred in full, then a
/// count.
pub fn rendered(name: &str, text: &str, errors: &[Diagnostic]) -> LoadError {
    LoadError::Rules(weir_rules::render_all(name, text, errors))
}

/// A rule file of either syntax.
enum RuleFile {
    Ppp(PppFile),
    Ipfw(Source<'static>),
}

/// Which syntax a rule file is; ppp options on an ipfw file are refused.
fn rule_file(name: &str, source: Source<'static>, opts: &Options) -> Result<RuleFile, LoadError> {
    match ppp::format(opts.syntax, source.text()) {
        Some(format) => Ok(RuleFile::Ppp(PppFile {
            name: name.to_owned(),
            source,
            format,
        })),
        None => {
            ppp::refuse_for_ipfw(&opts.ppp, name)?;
            Ok(RuleFile::Ipfw(source))
        }
    }
}
