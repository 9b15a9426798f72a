//! The flags of `weir lint`, `weir search` and `weir diff`.

use crate::cli::{ContextArgs, EngineArgs};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

const EXIT_CODES: &str = "Exit status: 0 nothing found, 1 findings, 2 usage or rule-file errors.";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Sarif,
}

#[derive(Args, Debug)]
#[command(after_help = EXIT_CODES)]
pub struct LintArgs {
    /// Ruleset file (ipfw syntax, ppp `set filter` lines or a ppp.conf).
    pub rules: PathBuf,
    /// Under each finding: the rule, the rules that block or cover it, a
    /// witness packet and the rule that decides it.
    #[arg(long)]
    pub explain: bool,
    /// Output format (`--json` is `--format json`).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[arg(long)]
    pub json: bool,
    /// Also replay this capture through the rules: rules none of its
    /// packets matched get an `unmatched-in-trace` note, apart from rules
    /// no packet can match.
    #[arg(short = 'r', value_name = "TRACE")]
    pub read: Option<PathBuf>,
    #[command(flatten)]
    pub context: ContextArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: 0 a packet was found, 1 none exists, 2 usage or rule-file errors."
)]
pub struct SearchArgs {
    /// Ruleset file.
    pub rules: PathBuf,
    /// An ipfw match body: `tcp from 192.0.2.0/24 to any 22 setup`.
    #[arg(value_name = "MATCH")]
    pub query: String,
    /// The decision: allow or deny (the verdict), or an action word such
    /// as reject or unreach (the deciding rule's action).
    #[arg(long, value_name = "ACTION")]
    pub action: Option<String>,
    /// The rule number that must decide the packet.
    #[arg(long, value_name = "N")]
    pub decided_by: Option<u16>,
    /// Write the packet as pcapng, for `weir explain -r FILE --packet 1`.
    #[arg(short = 'w', value_name = "FILE")]
    pub write: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args, Debug)]
#[command(after_help = EXIT_CODES)]
pub struct DiffArgs {
    /// The ruleset before.
    pub old: PathBuf,
    /// The ruleset after.
    pub new: PathBuf,
    /// Also packets with the same verdict whose deciding rule changed.
    #[arg(long)]
    pub rules: bool,
    /// Write one witness packet per difference as pcapng; with -r, the
    /// trace's packets whose decision changed (in the trace's format).
    #[arg(short = 'w', value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Also replay this capture through both rulesets: its packets whose
    /// verdict (with --rules: deciding rule) changed, counted by (old
    /// rule, new rule).
    #[arg(short = 'r', value_name = "TRACE")]
    pub read: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub context: ContextArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}
