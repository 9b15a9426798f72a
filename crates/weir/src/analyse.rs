//! `weir lint`, `weir search`, `weir diff`: the ruleset analysis
//! (weir-analysis) on the command line. Exit codes as linters have them:
//! 0 nothing found, 1 findings (a packet found, a difference), 2 usage or
//! rule-file errors.

use crate::cli::ContextArgs;
use crate::cli::EngineArgs;
use crate::setup::{build_engine, capture_failure, load_tables, placement};
use crate::{outputs, Failure};
use clap::{Args, ValueEnum};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use weir_analysis::report::{self, describe, verdict_word};
use weir_analysis::{Analyser, DiffOptions, Goal, Point, TraceChanges};
use weir_engine::{CompileOptions, Engine, Verdict};
use weir_io::output::OutputError;
use weir_io::{CaptureWriter, Interface, PcapngWriter};
use weir_pipeline::sink::{Discard, Out};
use weir_pipeline::{
    Between, Budget, Decided, FileSource, Output, Placement, Shared, Sink, Source, Stop,
};
use weir_rules::Names;
use weir_wire::{decode_with, LinkType};

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

fn runtime(e: String) -> Failure {
    Failure::Runtime(e)
}

pub fn lint(args: &LintArgs) -> Result<bool, Failure> {
    let names = Names::system();
    let engine = build_engine(&args.rules, &args.engine, &names)?;
    let mut a = Analyser::new(&[engine.program()]);
    let mut findings =
        weir_analysis::lint(&mut a, engine.program(), engine.env()).map_err(runtime)?;
    if let Some(trace) = &args.read {
        let mut replayed = build_engine(&args.rules, &args.engine, &names)?;
        let place = placement(&args.context, &args.engine);
        replay(&mut replayed, &mut open_trace(trace)?, &place, Discard)?;
        let notes = weir_analysis::lint::unmatched_in_trace(
            engine.program(),
            &findings,
            replayed.unmatched_rules(),
            &trace.display().to_string(),
        );
        findings.extend(notes);
        findings.sort_by_key(|f| f.rule.index);
    }
    let file = args.rules.display().to_string();
    let format = if args.json { Format::Json } else { args.format };
    let text = match format {
        Format::Text => report::text(&file, &findings, args.explain),
        Format::Json => json_line(&serde_json::json!({ "file": file, "findings": findings })),
        Format::Sarif => json_line(&report::sarif(&file, &findings)),
    };
    outputs::print(&text)?;
    Ok(!findings.is_empty())
}

fn open_trace(trace: &Path) -> Result<FileSource<Reader>, Failure> {
    let reader = weir_io::open_capture(trace).map_err(|e| capture_failure(trace, e))?;
    Ok(FileSource::new(reader, trace.display().to_string()))
}

/// Replays `source` through `engine` into `sink` with `weir run`'s
/// pipeline: the same decoding, placement and run loop.
fn replay<S: Sink>(
    engine: &mut Engine,
    source: &mut FileSource<Reader>,
    place: &Placement,
    sink: S,
) -> Result<S, Failure> {
    let sink = Mutex::new(sink);
    let (budget, stop) = (Budget::new(None), Stop::new(None));
    let shared = Shared {
        sink: &sink,
        budget: &budget,
        stop: &stop,
        place,
    };
    let ended = weir_pipeline::run(source, engine, &shared, |_, _| Between::Go)?;
    if let Some(why) = ended.input_error {
        return Err(Failure::Runtime(why));
    }
    let sink = sink.into_inner().unwrap_or_else(PoisonError::into_inner);
    Ok(sink)
}

type Reader = Box<dyn std::io::Read + Send>;

fn json_line(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// The exit status: 1 when something was found.
pub fn code(result: Result<bool, Failure>) -> std::process::ExitCode {
    match result {
        Ok(true) => std::process::ExitCode::from(1),
        Ok(false) => std::process::ExitCode::SUCCESS,
        Err(e) => crate::exit(Err(e)),
    }
}

pub fn search(args: &SearchArgs) -> Result<bool, Failure> {
    let names = Names::system();
    let engine = build_engine(&args.rules, &args.engine, &names)?;
    let opts = CompileOptions {
        tables: load_tables(&args.engine.tables)?,
        no_me: args.engine.me.is_empty(),
        ..CompileOptions::default()
    };
    let text = format!("count {}", args.query);
    let query = weir_engine::load(&text, &names, &opts)
        .map_err(|errors| crate::setup::rules_failure("MATCH", &text, &errors))?;
    let goal = goal(args)?;
    let mut a = Analyser::new(&[engine.program(), &query]);
    let found_it = weir_analysis::search(&mut a, engine.program(), engine.env(), &query, &goal)
        .map_err(runtime)?;
    let out = if args.json {
        json_line(&serde_json::json!({
            "found": found_it.witness.is_some(),
            "witness": found_it.witness,
            "caveat": found_it.caveat,
        }))
    } else {
        let mut s = match &found_it.witness {
            Some(w) => format!(
                "{} -> rule {} ({})\n",
                describe(&w.packet),
                w.decided_by.unwrap_or(0),
                w.verdict.map_or("?", verdict_word)
            ),
            None => "no packet fits: none exists\n".to_string(),
        };
        if let Some(c) = &found_it.caveat {
            s += &format!("note: {c}\n");
        }
        s
    };
    if let (Some(path), Some(w)) = (&args.write, &found_it.witness) {
        write_witnesses(path, &a, [&w.packet])?;
    }
    outputs::print(&out)?;
    Ok(found_it.witness.is_none())
}

fn goal(args: &SearchArgs) -> Result<Goal, Failure> {
    let mut g = Goal {
        decided_by: args.decided_by,
        ..Goal::default()
    };
    match args.action.as_deref() {
        None => {}
        Some("allow" | "accept" | "pass" | "permit") => g.verdict = Some(Verdict::Pass),
        Some("deny" | "drop") => g.verdict = Some(Verdict::Drop),
        Some(word) => g.action = Some(word.to_string()),
    }
    Ok(g)
}

pub fn diff(args: &DiffArgs) -> Result<bool, Failure> {
    let names = Names::system();
    let mut old = build_engine(&args.old, &args.engine, &names)?;
    let mut new: Engine = build_engine(&args.new, &args.engine, &names)?;
    let mut a = Analyser::new(&[old.program(), new.program()]);
    let opts = DiffOptions { rules: args.rules };
    let d = weir_analysis::diff(&mut a, old.program(), new.program(), old.env(), &opts)
        .map_err(runtime)?;
    let trace = match &args.read {
        Some(t) => Some(replay_diff(args, t, &mut old, &mut new)?),
        None => None,
    };
    let pairs: Vec<serde_json::Value> = trace
        .iter()
        .flatten()
        .map(|((o, n), k)| serde_json::json!({ "old": o, "new": n, "packets": k }))
        .collect();
    let out = if args.json {
        let mut v = serde_json::json!({ "changes": d.changes, "caveat": d.caveat });
        if trace.is_some() {
            v["trace"] = serde_json::Value::Array(pairs);
        }
        json_line(&v)
    } else {
        let (o, n) = (args.old.display(), args.new.display());
        let mut s = String::new();
        for c in &d.changes {
            s += &format!(
                "{o}:{}: rule {} ({}) -> {n}:{}: rule {} ({}): {}\n",
                c.old.line,
                c.old.number,
                verdict_word(c.old_verdict),
                c.new.line,
                c.new.number,
                verdict_word(c.new_verdict),
                describe(&c.witness)
            );
        }
        if let Some(c) = &d.caveat {
            s += &format!("note: {c}\n");
        }
        for ((o, n), k) in trace.iter().flatten() {
            s += &format!("trace: {k} packets: rule {o} -> rule {n}\n");
        }
        s
    };
    if let (Some(path), None) = (&args.write, &args.read) {
        write_witnesses(path, &a, d.changes.iter().map(|c| &c.witness))?;
    }
    outputs::print(&out)?;
    Ok(!d.changes.is_empty() || trace.is_some_and(|t| !t.is_empty()))
}

/// The trace's packets decided differently by `old` and `new`, counted by
/// (old rule, new rule) number; written to `-w` as they come.
fn replay_diff(
    args: &DiffArgs,
    trace: &Path,
    old: &mut Engine,
    new: &mut Engine,
) -> Result<BTreeMap<(u16, u16), u64>, Failure> {
    let place = placement(&args.context, &args.engine);
    let mut source = open_trace(trace)?;
    let (format, ifaces) = (source.format(), source.interfaces());
    let out = match &args.write {
        Some(p) => Some(outputs::open(p)?.map(|w| CaptureWriter::mirror(w, format, ifaces))?),
        None => None,
    };
    let redecode = !old.fields().contains(new.fields());
    let sink = SecondOpinion {
        new,
        place: &place,
        known_ifaces: usize::MAX,
        redecode,
        changes: TraceChanges::new(args.rules),
        out,
    };
    let sink = replay(old, &mut source, &place, sink)?;
    if let Some(mut o) = sink.out {
        let done = o.w.finish_interfaces(source.interfaces());
        done.and_then(|()| o.w.flush()).map_err(|e| o.fail(e))?;
        o.commit()?;
    }
    Ok(sink.changes.counts)
}

/// The new ruleset's decision on each packet the old one decided, as
/// `weir run` would make it: decoded for the new rules' fields, placed,
/// at the packet's time.
struct SecondOpinion<'a> {
    new: &'a mut Engine,
    place: &'a Placement,
    known_ifaces: usize,
    /// The new rules read fields the old ones' decode skipped.
    redecode: bool,
    changes: TraceChanges,
    out: Option<Output<CaptureWriter<Out>>>,
}

impl Sink for SecondOpinion<'_> {
    fn packet(&mut self, d: &Decided<'_>) -> Result<(), OutputError> {
        let (frame, new) = (d.frame, &mut *self.new);
        if d.ifaces.len() != self.known_ifaces {
            self.known_ifaces = d.ifaces.len();
            new.set_interfaces(&self.place.interface_names(d.ifaces));
        }
        let mut p = *d.packet;
        if self.redecode {
            p = decode_with(frame.link_type, frame.data, frame.orig_len, new.fields());
            self.place.place(&mut p, frame);
        }
        new.set_time(frame.ts_ns);
        let y = new.decide(&p);
        let changed = self
            .changes
            .record(d.engine.program(), d.decision, new.program(), &y);
        match &mut self.out {
            Some(o) if changed => o.w.write(frame, d.ifaces, None).map_err(|e| o.fail(e)),
            _ => Ok(()),
        }
    }

    fn reloaded(&mut self, _: &Engine) {}

    fn finish(&mut self, _: &[Interface]) -> Result<(), OutputError> {
        Ok(())
    }
}

/// Witnesses as pcapng: one named interface per interface class, the
/// direction in each packet's flags, so `weir explain` sees them as the
/// analysis did.
fn write_witnesses<'p>(
    path: &Path,
    a: &Analyser,
    points: impl IntoIterator<Item = &'p Point>,
) -> Result<(), Failure> {
    let fail = |e| Failure::from_io(&path.display().to_string(), e);
    let file = std::fs::File::create(path).map_err(fail)?;
    let mut w = PcapngWriter::new(file).map_err(fail)?;
    for name in a.interface_names() {
        let iface = Interface {
            link_type: LinkType::RAW,
            snaplen: 0,
            name: name.map(str::to_string),
        };
        w.add_interface(&iface).map_err(fail)?;
    }
    for p in points {
        let f = p.frame();
        let no_comments: [&str; 0] = [];
        w.write_frame(
            u32::from(p.iface_class),
            0,
            f.len() as u32,
            &f,
            p.dir(),
            no_comments,
        )
        .map_err(fail)?;
    }
    w.flush().map_err(fail)
}
