//! FreeBSD ppp filter files on the command line: `--syntax`, `--filter-set`
//! and the symbolic address flags, shared by run, explain, bench, probe and
//! check. A ppp file is read, one set translated to ipfw rules
//! (`weir_rules::ppp`), and compiled as any ruleset is.

use crate::setup::{compile_source, read_source, rules_failure};
use crate::Failure;
use clap::{Args, ValueEnum};
use std::net::Ipv4Addr;
use std::path::Path;
use weir_engine::{compile, CompileOptions, LogFormat, Program};
use weir_rules::ppp::{self, Bindings, FilterSet};
use weir_rules::Names;

/// Flags for rule files in FreeBSD ppp's `set filter` syntax.
#[derive(Args, Debug, Clone, Default)]
pub struct PppArgs {
    /// Rule file syntax. `auto` reads a file whose first command is `set`
    /// (`set filter in 0 permit …`) as a ppp filter file, anything else as
    /// ipfw rules.
    #[arg(long, value_enum, default_value_t = SyntaxArg::Auto)]
    pub syntax: SyntaxArg,
    /// ppp files: the set that decides (`check` without it checks every set).
    #[arg(long, value_enum, value_name = "SET")]
    pub filter_set: Option<FilterSetArg>,
    /// ppp files: the address MYADDR stands for.
    #[arg(long, value_name = "ADDR")]
    pub myaddr: Option<Ipv4Addr>,
    /// ppp files: the address HISADDR stands for.
    #[arg(long, value_name = "ADDR")]
    pub hisaddr: Option<Ipv4Addr>,
    /// ppp files: the address DNS0 stands for.
    #[arg(long, value_name = "ADDR")]
    pub dns0: Option<Ipv4Addr>,
    /// ppp files: the address DNS1 stands for.
    #[arg(long, value_name = "ADDR")]
    pub dns1: Option<Ipv4Addr>,
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
    fn bindings(&self) -> Bindings {
        Bindings {
            myaddr: self.myaddr,
            hisaddr: self.hisaddr,
            dns0: self.dns0,
            dns1: self.dns1,
        }
    }

    fn is_ppp(&self, text: &str) -> bool {
        match self.syntax {
            SyntaxArg::Auto => ppp::looks_like_ppp(text),
            SyntaxArg::Ipfw => false,
            SyntaxArg::Ppp => true,
        }
    }

    /// ppp flags on an ipfw file would silently mean nothing: refuse them.
    fn refuse_for_ipfw(&self, file: &str) -> Result<(), Failure> {
        let given = [
            (self.filter_set.is_some(), "--filter-set"),
            (self.myaddr.is_some(), "--myaddr"),
            (self.hisaddr.is_some(), "--hisaddr"),
            (self.dns0.is_some(), "--dns0"),
            (self.dns1.is_some(), "--dns1"),
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

/// Reads a rule file of either syntax and compiles it; for a ppp file,
/// also says which set it is.
pub fn load(
    path: &Path,
    args: &PppArgs,
    names: &Names,
    opts: &CompileOptions,
) -> Result<(Program, Option<FilterSet>), Failure> {
    let file = path.display().to_string();
    let source = read_source(path)?;
    let text = source.text();
    if !args.is_ppp(text) {
        args.refuse_for_ipfw(&file)?;
        return Ok((compile_source(&file, &source, names, opts)?, None));
    }
    let set: FilterSet = args.filter_set.map(Into::into).ok_or_else(|| {
        Failure::Usage(format!(
            "{file} is a ppp filter file: say which set decides with --filter-set in|out|dial|alive"
        ))
    })?;
    let filters = ppp::parse_source(&source).map_err(|e| rules_failure(&file, text, &e))?;
    Ok((
        compile_set(&file, text, &filters, set, args, names, opts)?,
        Some(set),
    ))
}

fn compile_set(
    file: &str,
    text: &str,
    filters: &ppp::PppFilters,
    set: FilterSet,
    args: &PppArgs,
    names: &Names,
    opts: &CompileOptions,
) -> Result<Program, Failure> {
    let t = ppp::translate(filters, set, &args.bindings(), names)
        .map_err(|e| rules_failure(file, text, &e))?;
    for note in &t.notes {
        let span = note.span;
        eprintln!("{file}:{}:{}: note: {}", span.line, span.col, note.message);
    }
    compile(&t.ruleset, names, opts).map_err(|e| rules_failure(file, text, &e))
}

/// What `weir check` checks: the one ipfw ruleset, or each ppp set asked
/// for (every set with rules when `--filter-set` is not given), labelled.
pub fn programs_to_check(
    path: &Path,
    args: &PppArgs,
    names: &Names,
    opts: &CompileOptions,
) -> Result<Vec<(String, Program)>, Failure> {
    let file = path.display().to_string();
    let source = read_source(path)?;
    let text = source.text();
    if !args.is_ppp(text) {
        args.refuse_for_ipfw(&file)?;
        return Ok(vec![(
            file.clone(),
            compile_source(&file, &source, names, opts)?,
        )]);
    }
    let filters = ppp::parse_source(&source).map_err(|e| rules_failure(&file, text, &e))?;
    let sets: Vec<FilterSet> = match args.filter_set {
        Some(s) => vec![s.into()],
        None => FilterSet::ALL
            .into_iter()
            .filter(|s| !filters.is_empty(*s))
            .collect(),
    };
    let mut out = Vec::new();
    let mut failures = Vec::new();
    for set in sets {
        match compile_set(&file, text, &filters, set, args, names, opts) {
            Ok(p) => out.push((format!("{file} (set filter {})", set.word()), p)),
            Err(Failure::Rules(msg)) => failures.push(msg),
            Err(other) => return Err(other),
        }
    }
    if failures.is_empty() {
        Ok(out)
    } else {
        Err(Failure::Rules(failures.join("\n")))
    }
}
