//! FreeBSD ppp filter files and ppp.conf files on the command line:
//! `--syntax`, `--filter-set`, `--label`, the symbolic address flags and
//! `--hosts`, shared by run, explain, bench, probe and check, and their
//! mapping into the loader's options (`weir_load` reads, translates and
//! compiles the file).

use clap::{Args, ValueEnum};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use weir_engine::LogFormat;
use weir_load::{PppOptions, Syntax};
use weir_rules::ppp::{Bindings, FilterSet};

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

impl From<SyntaxArg> for Syntax {
    fn from(s: SyntaxArg) -> Syntax {
        match s {
            SyntaxArg::Auto => Syntax::Auto,
            SyntaxArg::Ipfw => Syntax::Ipfw,
            SyntaxArg::Ppp => Syntax::Ppp,
        }
    }
}

impl PppArgs {
    /// The ppp flags as the loader takes them.
    pub fn options(&self) -> PppOptions {
        PppOptions {
            filter_set: self.filter_set.map(Into::into),
            label: self.label.clone(),
            bindings: Bindings {
                myaddr: self.myaddr,
                hisaddr: self.hisaddr,
                myaddr6: self.myaddr6,
                hisaddr6: self.hisaddr6,
                dns0: self.dns0,
                dns1: self.dns1,
                hosts: Default::default(),
            },
            hosts_file: self.hosts.clone(),
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
