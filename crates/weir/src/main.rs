//! weir: the command-line front end. Thin glue over the library crates.
#![forbid(unsafe_code)]

mod analyse;
mod bench;
mod capture;
mod check_stats;
mod classbench;
mod cli;
mod counting;
mod demo;
mod duration;
mod explain;
mod gen;
mod inline;
mod live;
mod outputs;
mod ppp;
mod probe;
mod replay;
mod setup;
mod sockbench;

use clap::Parser;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use weir_io::output::OutputError;

/// Why a command failed, which decides the exit code: the one place they
/// are chosen is [`exit`].
#[derive(Debug)]
pub enum Failure {
    /// Bad flags or unreadable ruleset file: exit 2.
    Usage(String),
    /// Ruleset errors, already rendered with carets: exit 2.
    Rules(String),
    /// Corrupt capture and other run-time errors: exit 1.
    Runtime(String),
    /// A write to an output failed: exit 1 naming it, except when the
    /// reader of a pipe went away, which ends the command quietly (exit 0),
    /// as ripgrep does.
    Output(OutputError),
}

impl From<OutputError> for Failure {
    fn from(e: OutputError) -> Failure {
        Failure::Output(e)
    }
}

/// A ruleset that did not load.
impl From<weir_load::LoadError> for Failure {
    fn from(e: weir_load::LoadError) -> Failure {
        match e {
            weir_load::LoadError::Usage(msg) => Failure::Usage(msg),
            weir_load::LoadError::Rules(msg) => Failure::Rules(msg),
            weir_load::LoadError::Note(e) => Failure::from_io("stderr", e),
        }
    }
}

/// A report that would not serialise.
impl From<serde_json::Error> for Failure {
    fn from(e: serde_json::Error) -> Failure {
        Failure::Runtime(e.to_string())
    }
}

impl Failure {
    /// A failed write to the output called `what`.
    pub fn from_io(what: &str, e: std::io::Error) -> Failure {
        Failure::Output(OutputError::new(what, e))
    }

    /// Whether the command stopped because a pipe it wrote to was closed.
    pub fn is_closed_pipe(&self) -> bool {
        matches!(self, Failure::Output(e) if e.is_closed_pipe())
    }
}

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return exit_clap(&e),
    };
    let result = match &cli.command {
        cli::Command::Demo(a) => demo::demo(a),
        cli::Command::Check(a) => check(a),
        cli::Command::Run(a) => replay::run(a),
        cli::Command::Explain(a) => explain::explain(a),
        cli::Command::Gen(a) => gen::gen(a),
        cli::Command::Bench(a) => bench::bench(a),
        cli::Command::Calibrate(a) => bench::calibrate(a),
        cli::Command::Probe(a) => probe::probe(a),
        cli::Command::Import(a) => classbench::import(a),
        cli::Command::Classbench(a) => classbench::classbench(a),
        cli::Command::GenRules(a) => classbench::gen_rules(a),
        cli::Command::Capture(a) => capture::capture(a),
        cli::Command::Sockbench(a) => sockbench::sockbench(a),
        cli::Command::Inline(a) => inline::run(a),
        cli::Command::Lint(a) => return analyse::code(analyse::lint(a)),
        cli::Command::Search(a) => return analyse::code(analyse::search(a)),
        cli::Command::Diff(a) => return analyse::code(analyse::diff(a)),
    };
    exit(result)
}

/// Help, version and flag errors, printed as clap prints them, exiting as
/// any command does when that print fails.
fn exit_clap(e: &clap::Error) -> ExitCode {
    let stream = if e.use_stderr() { "stderr" } else { "stdout" };
    match e.print() {
        Ok(()) => ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)),
        Err(io) => exit(Err(Failure::from_io(stream, io))),
    }
}

/// The exit code of a command's result, its message on stderr (where a
/// message that cannot be written is lost, not a panic).
fn exit(result: Result<(), Failure>) -> ExitCode {
    let (code, message) = match result {
        Ok(()) => return ExitCode::SUCCESS,
        Err(f) if f.is_closed_pipe() => return ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => (2, format!("weir: {msg}")),
        Err(Failure::Rules(msg)) => (2, msg),
        Err(Failure::Runtime(msg)) => (1, format!("weir: {msg}")),
        Err(Failure::Output(e)) => (1, format!("weir: {e}")),
    };
    outputs::note_quietly(&message);
    ExitCode::from(code)
}

fn check(args: &cli::CheckArgs) -> Result<(), Failure> {
    let names = weir_rules::Names::system();
    let opts = setup::file_options(&args.tables, &args.ppp);
    let programs =
        weir_load::programs_to_check(&args.rules, &opts, &names, &mut outputs::write_note)?;
    for (label, program) in programs {
        check_one(args, &label, program)?;
    }
    Ok(())
}

fn check_one(
    args: &cli::CheckArgs,
    label: &str,
    program: weir_engine::Program,
) -> Result<(), Failure> {
    if args.print {
        let mut text = String::new();
        let (default, rules) = program
            .rules
            .split_last()
            .expect("a program ends with rule 65535");
        let mut lines: Vec<(u16, String)> =
            rules.iter().map(|r| (r.number, r.text.clone())).collect();
        if label != args.rules.display().to_string() {
            // A ppp file's sets, one after another.
            text += &format!("# {label}\n");
        } else if args.rules.as_os_str() != "-" {
            // (Standard input was read once, by the compiler: its rules
            // stand as compiled.)
            let source = weir_load::read_source(&args.rules)?;
            if let Ok(rs) = weir_rules::parse_source(&source, &weir_rules::Names::system()) {
                // Every rule, those of disabled sets too (the `set disable`
                // line keeps them out when the output is read back), in
                // ipfw's order: by number, equal numbers as added.
                lines = rs.rules.iter().map(|r| (r.number, r.to_string())).collect();
                lines.sort_by_key(|(n, _)| *n);
                // Settings and `table ... add` lines first, as written.
                let header = weir_rules::Ruleset {
                    rules: Vec::new(),
                    ..rs
                };
                text += &weir_rules::print_ruleset(&header);
            }
        }
        for (number, rule) in lines {
            text += &format!("{number:05} {rule}\n");
        }
        // The default rule is implicit: a comment, so the output reads back.
        text += &format!("# {:05} {} (implicit)\n", default.number, default.text);
        outputs::print(&text)
    } else if args.stats {
        outputs::print(&check_stats::report(&args.rules, program, args.json))
    } else {
        let (n, insns) = (program.rules.len() - 1, program.insns.len());
        let engine = weir_engine::Engine::new(program);
        let walk = if engine.classified() {
            format!(
                "classifier {} KiB",
                engine.classifier_memory().div_ceil(1024)
            )
        } else {
            "linear walk".to_owned()
        };
        outputs::note(&format!(
            "{label}: {n} rules, {insns} micro-instructions, {walk}, ok"
        ))
    }
}

/// A progress bar for long replays, only on a terminal and only after a
/// second has passed (short runs stay quiet).
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    enabled: bool,
    total: u64,
    start: Instant,
}

impl Progress {
    pub fn for_input(path: &Path) -> Progress {
        let total = if path.as_os_str() == "-" {
            0
        } else {
            std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
        };
        Progress::new(total)
    }

    pub fn new(total: u64) -> Progress {
        Progress {
            bar: None,
            enabled: std::io::stderr().is_terminal(),
            total,
            start: Instant::now(),
        }
    }

    pub fn update(&mut self, pos: u64) {
        if !self.enabled || self.start.elapsed() < Duration::from_secs(1) {
            return;
        }
        let total = self.total;
        let bar = self.bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(total);
            let style = if total > 0 {
                "{elapsed_precise} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec})"
            } else {
                "{elapsed_precise} {bytes} ({bytes_per_sec})"
            };
            if let Ok(s) = indicatif::ProgressStyle::with_template(style) {
                bar.set_style(s.progress_chars("=> "));
            }
            bar
        });
        bar.set_position(pos);
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
