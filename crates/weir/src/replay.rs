//! `weir run`: read a capture, decide every packet, write what the verdict names.
//!
//! Per packet: decode once, decide, then write to the outputs that asked
//! for it. Every string an output needs per packet (CSV suffixes, pcapng
//! comments) is made once per rule at start-up; the loop only copies bytes.

use crate::cli::RunArgs;
use crate::outputs::{self, Output};
use crate::report::{self, Summary};
use crate::setup::{attach_logger, build_engine_and_set, DefaultDir, LogOutput};
use crate::{Failure, Progress};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use weir_engine::{Decision, Engine, Verdict};
use weir_io::{CaptureError, CaptureWriter, Frame, Interface};
use weir_rules::Names;
use weir_wire::{decode_with, Direction, Malformed, Packet};

type Out = Box<dyn Write + Send>;

/// Text attached to each decision, made once.
pub struct Labels {
    /// Per rule and verdict (`2 * rule + drop`): ",300,deny,\n" style CSV
    /// suffix and "rule 300 deny" comment, with the action that decided
    /// ("pipe 1"), and the verdict too when the action does not say it.
    rule_csv: Vec<String>,
    rule_comment: Vec<String>,
    non_ip_csv: String,
    non_ip_comment: String,
    malformed_csv: Vec<String>,
    malformed_comment: Vec<String>,
    /// Per rule: whether its action reads `tablearg`, so that a packet it
    /// decides gets its label made with the value resolved.
    tablearg: Vec<bool>,
}

/// What one packet's label is: made once, or made for this packet.
enum Label<'a> {
    Made(&'a str),
    Resolved(String),
}

impl Label<'_> {
    fn as_bytes(&self) -> &[u8] {
        match self {
            Label::Made(s) => s.as_bytes(),
            Label::Resolved(s) => s.as_bytes(),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            Label::Made(s) => s,
            Label::Resolved(s) => s,
        }
    }
}

impl Labels {
    pub fn new(engine: &Engine) -> Labels {
        let word = |v: Verdict| if v == Verdict::Pass { "allow" } else { "deny" };
        let policy = engine.policy();
        // Each rule with each verdict, as (action, note).
        let per_verdict = || {
            engine.program().rules.iter().flat_map(|r| {
                [Verdict::Pass, Verdict::Drop].map(move |v| {
                    let (action, note) = action_and_note(r.act, &r.action_text, v);
                    (r, action, note)
                })
            })
        };
        Labels {
            rule_csv: per_verdict()
                .map(|(r, action, note)| csv_suffix(r.number, action, note))
                .collect(),
            rule_comment: per_verdict()
                .map(|(r, action, note)| comment_text(r.number, &action, &note))
                .collect(),
            tablearg: engine
                .program()
                .rules
                .iter()
                .map(|r| r.action.takes_tablearg())
                .collect(),
            non_ip_csv: format!(",-,{},non-ip\n", word(policy.non_ip)),
            non_ip_comment: format!("non-ip {}", word(policy.non_ip)),
            malformed_csv: Malformed::ALL
                .iter()
                .map(|m| format!(",-,{},malformed:{}\n", word(policy.malformed), m.name()))
                .collect(),
            malformed_comment: Malformed::ALL
                .iter()
                .map(|m| format!("malformed {} {}", m.name(), word(policy.malformed)))
                .collect(),
        }
    }

    fn csv(&self, d: &Decision, p: &Packet, engine: &Engine) -> Label<'_> {
        match (d.rule, p.l3) {
            (Some(r), _) => match self.resolved(d, r, p, engine) {
                Some((number, action, note)) => Label::Resolved(csv_suffix(number, action, note)),
                None => {
                    Label::Made(&self.rule_csv[2 * r + usize::from(d.verdict == Verdict::Drop)])
                }
            },
            (None, weir_wire::L3::Malformed(m)) => Label::Made(&self.malformed_csv[m as usize]),
            (None, _) => Label::Made(&self.non_ip_csv),
        }
    }

    fn comment(&self, d: &Decision, p: &Packet, engine: &Engine) -> Label<'_> {
        match (d.rule, p.l3) {
            (Some(r), _) => match self.resolved(d, r, p, engine) {
                Some((number, action, note)) => {
                    Label::Resolved(comment_text(number, &action, &note))
                }
                None => {
                    Label::Made(&self.rule_comment[2 * r + usize::from(d.verdict == Verdict::Drop)])
                }
            },
            (None, weir_wire::L3::Malformed(m)) => Label::Made(&self.malformed_comment[m as usize]),
            (None, _) => Label::Made(&self.non_ip_comment),
        }
    }

    /// A `tablearg` rule's number, action and note with the packet's
    /// table value in the action (`pipe 1`); None for every other rule.
    #[cold]
    fn resolved_slow(
        d: &Decision,
        r: usize,
        p: &Packet,
        engine: &Engine,
    ) -> Option<(u16, String, String)> {
        let rule = &engine.program().rules[r];
        let action = engine.resolved_action(p, r)?.to_string();
        let (action, note) = action_and_note(rule.act, &action, d.verdict);
        Some((rule.number, action, note))
    }

    #[inline]
    fn resolved(
        &self,
        d: &Decision,
        r: usize,
        p: &Packet,
        engine: &Engine,
    ) -> Option<(u16, String, String)> {
        if self.tablearg[r] {
            Self::resolved_slow(d, r, p, engine)
        } else {
            None
        }
    }
}

/// A decision's action and note: "allow" and "deny" say theirs; other
/// actions add the verdict. A drop by an action that does not drop (a
/// state refused at `allow … limit`, `nat` of a packet NAT does not take)
/// is a "deny", the note naming the action refused.
fn action_and_note(act: weir_engine::Act, text: &str, v: Verdict) -> (String, String) {
    match (act, v) {
        (weir_engine::Act::Accept, Verdict::Pass) | (weir_engine::Act::Deny, _) => {
            (text.to_owned(), String::new())
        }
        (_, Verdict::Pass) => (text.to_owned(), "pass".to_owned()),
        (_, Verdict::Drop) => ("deny".to_owned(), format!("{text} refused")),
    }
}

/// ",300,pipe 1,pass\n": a --verdicts line after its index.
fn csv_suffix(number: u16, action: String, note: String) -> String {
    let quoted = |t: String| {
        if t.contains(',') {
            format!("\"{t}\"")
        } else {
            t
        }
    };
    format!(",{number},{},{}\n", quoted(action), quoted(note))
}

/// "rule 300 pipe 1 (pass)": an --annotate comment.
fn comment_text(number: u16, action: &str, note: &str) -> String {
    match note {
        "" => format!("rule {number} {action}"),
        note => format!("rule {number} {action} ({note})"),
    }
}

type Capture = Output<CaptureWriter<Out>>;

/// The optional outputs of a run.
struct Outputs {
    pass: Option<Capture>,
    drop: Option<Capture>,
    annotate: Option<Capture>,
    verdicts: Option<Output<BufWriter<Out>>>,
}

impl Outputs {
    /// Writes packet `index`: `(labels, engine)` name its decision.
    fn write(
        &mut self,
        (labels, engine): (&Labels, &Engine),
        index: u64,
        frame: &Frame<'_>,
        ifaces: &[Interface],
        p: &Packet,
        d: &Decision,
    ) -> Result<(), Failure> {
        let split = match d.verdict {
            Verdict::Pass => &mut self.pass,
            Verdict::Drop => &mut self.drop,
        };
        if let Some(o) = split {
            o.w.write(frame, ifaces, None).map_err(|e| o.fail(e))?;
        }
        if let Some(o) = &mut self.annotate {
            let comment = labels.comment(d, p, engine);
            o.w.write(frame, ifaces, Some(comment.as_str()))
                .map_err(|e| o.fail(e))?;
        }
        if let Some(o) = &mut self.verdicts {
            let line =
                o.w.write_all(itoa::Buffer::new().format(index).as_bytes())
                    .and_then(|()| o.w.write_all(labels.csv(d, p, engine).as_bytes()));
            line.map_err(|e| o.fail(e))?;
        }
        Ok(())
    }

    /// Completes interface lists (an empty pcapng still names them all)
    /// and flushes everything.
    fn finish(&mut self, ifaces: &[Interface]) -> Result<(), Failure> {
        for o in [&mut self.pass, &mut self.drop, &mut self.annotate]
            .into_iter()
            .flatten()
        {
            let res = o.w.finish_interfaces(ifaces).and_then(|()| o.w.flush());
            res.map_err(|e| o.fail(e))?;
        }
        if let Some(o) = &mut self.verdicts {
            o.w.flush().map_err(|e| o.fail(e))?;
        }
        Ok(())
    }

    /// Makes the files appear. A pcapng output whose input never described
    /// an interface is left unmade: libpcap refuses a pcapng without one,
    /// and weir cannot say what the link was.
    fn commit(self) -> Result<(), Failure> {
        for o in [self.pass, self.drop, self.annotate].into_iter().flatten() {
            if o.w.has_interfaces() {
                o.commit()?;
            } else if let Some(name) = o.discard() {
                outputs::note(&format!(
                    "weir: {name} not written: the capture described no interface"
                ))?;
            }
        }
        self.verdicts.map_or(Ok(()), Output::commit)
    }

    /// Gives every output up; the names of the files left unmade.
    fn discard(self) -> Vec<String> {
        let captures = [self.pass, self.drop, self.annotate].into_iter().flatten();
        captures
            .filter_map(Output::discard)
            .chain(self.verdicts.and_then(Output::discard))
            .collect()
    }
}

/// Names of the capture's interfaces, `--iface` filling in unnamed ones.
pub fn interface_names<'a>(
    ifaces: &'a [Interface],
    fallback: Option<&'a str>,
) -> Vec<Option<&'a str>> {
    ifaces
        .iter()
        .map(|i| i.name.as_deref().or(fallback))
        .collect()
}

/// Fills in what the capture, not the frame bytes, knows about a packet.
#[inline]
pub fn place(p: &mut Packet, frame: &Frame<'_>, default_dir: &DefaultDir) {
    p.iface = u16::try_from(frame.iface).unwrap_or(u16::MAX);
    if frame.direction != Direction::Unknown {
        p.direction = frame.direction;
    } else if p.direction == Direction::Unknown {
        p.direction = default_dir.of(p);
    }
}

/// Refuses outputs that would share stdout, or overwrite an input or each
/// other under any name, before anything is opened for writing.
fn check_outputs(args: &RunArgs) -> Result<(), Failure> {
    outputs::check_filter_outputs(
        &args.rules,
        &args.engine.tables,
        Some(&args.read),
        &[
            ("-w", &args.write),
            ("--drop-out", &args.drop_out),
            ("--annotate", &args.annotate),
            ("--verdicts", &args.verdicts),
            ("--log-file", &args.log_file),
        ],
        &[
            (args.counters, "--counters"),
            (args.json, "--json"),
            (args.unmatched, "--unmatched"),
            (args.states, "--states"),
        ],
    )
}

pub fn run(args: &RunArgs) -> Result<(), Failure> {
    check_outputs(args)?;
    let names = Names::system();
    let (mut engine, ppp_set) = build_engine_and_set(&args.rules, &args.engine, &names)?;
    let mut log = None;
    if engine.program().rules.iter().any(|r| r.log_limit.is_some()) {
        let format = crate::ppp::log_format(args.log_format.into(), ppp_set);
        log = Some(attach_logger(
            &mut engine,
            args.log_file.as_deref(),
            format,
            &names,
        )?);
    }
    // Reads counted for the JSON summary (see counting.rs).
    let mut reader =
        crate::counting::open_capture(&args.read).map_err(|e| capture_failure(&args.read, e))?;
    let labels = Labels::new(&engine);
    let format = reader.format();
    let capture = |path: &Option<PathBuf>, ifaces: &[Interface], pcapng: bool| {
        path.as_deref()
            .map(|p| {
                outputs::open(p)?.map(|w| {
                    if pcapng {
                        CaptureWriter::pcapng_like(w, format)
                    } else {
                        CaptureWriter::mirror(w, format, ifaces)
                    }
                })
            })
            .transpose()
    };
    let mut out = Outputs {
        pass: capture(&args.write, reader.interfaces(), false)?,
        drop: capture(&args.drop_out, reader.interfaces(), false)?,
        annotate: capture(&args.annotate, reader.interfaces(), true)?,
        verdicts: args
            .verdicts
            .as_deref()
            .map(|p| -> Result<_, Failure> {
                let mut o = outputs::open(p)?.map(|w| Ok(BufWriter::with_capacity(1 << 20, w)))?;
                let header = o.w.write_all(b"index,rule,action,note\n");
                header.map_err(|e| o.fail(e))?;
                Ok(o)
            })
            .transpose()?,
    };

    let default_dir = crate::setup::default_direction(args.engine.dir, &args.engine.me);
    let fallback = args.engine.iface.as_deref();
    let limit = args.count.unwrap_or(u64::MAX);
    let mut progress = Progress::for_input(&args.read);
    let mut known_ifaces = usize::MAX;
    let mut index = 0u64;
    // Decode fills what the rules read; the outputs read only what decode
    // always fills.
    let fields = engine.fields();
    // What stopped the run early: the capture (corrupt), or an output.
    let mut stopped = None;
    while index < limit {
        let (frame, ifaces) = match reader.next_with_interfaces() {
            Ok(Some(x)) => x,
            Ok(None) => break,
            Err(e) => {
                stopped = Some(Stop::Input(capture_failure(&args.read, e)));
                break;
            }
        };
        if ifaces.len() != known_ifaces {
            known_ifaces = ifaces.len();
            engine.set_interfaces(&interface_names(ifaces, fallback));
        }
        index += 1;
        let mut p = decode_with(frame.link_type, frame.data, frame.orig_len, fields);
        place(&mut p, &frame, &default_dir);
        engine.set_time(frame.ts_ns);
        let d = engine.decide(&p);
        if let Err(f) = out.write((&labels, &engine), index, &frame, ifaces, &p, &d) {
            stopped = Some(Stop::Output(f));
            break;
        }
        if index & 0xffff == 0 {
            progress.update(frame.offset);
        }
    }
    progress.finish();
    let input_failure = match stopped {
        Some(Stop::Output(f)) => return stop_on_output(f, Some(index), out, log),
        Some(Stop::Input(f)) => Some(f),
        None => None,
    };
    // Every packet read has been decided and handed to its outputs (up to a
    // corruption, which README promises): flush, then make them appear.
    if let Err(f) = out.finish(reader.interfaces()) {
        return stop_on_output(f, None, out, log);
    }
    if let Some(f) = log.as_mut().and_then(|l| l.finish(&mut engine)) {
        if !f.is_closed_pipe() {
            return stop_on_output(f, None, out, log);
        }
    }
    out.commit()?;
    if let Some(l) = log {
        l.commit()?;
    }
    report(args, &engine, &names)?;
    input_failure.map_or(Ok(()), Err)
}

/// What ended a run before the end of its capture.
enum Stop {
    Input(Failure),
    Output(Failure),
}

/// An output failed (while packets were written, `stopped_after` the
/// last one handed to it; or at the end): nothing the run wrote is kept,
/// and the closing summary, which would count packets that are in no
/// file, is not printed. A closed pipe stays quiet unless files were
/// given up.
fn stop_on_output(
    failure: Failure,
    stopped_after: Option<u64>,
    out: Outputs,
    log: Option<LogOutput>,
) -> Result<(), Failure> {
    let mut unmade = out.discard();
    unmade.extend(log.and_then(LogOutput::discard));
    if let (Some(index), false) = (stopped_after, failure.is_closed_pipe()) {
        outputs::note(&format!("weir: stopped after packet {index}"))?;
    }
    outputs::say_discarded(unmade)?;
    Err(failure)
}

/// The closing summary on stderr, and the reports asked for on stdout.
fn report(args: &RunArgs, engine: &Engine, names: &Names) -> Result<(), Failure> {
    let summary = Summary::of(engine);
    if !args.quiet {
        outputs::note(&summary.line())?;
    }
    let mut text = String::new();
    if args.counters {
        text += &report::counters_table(engine);
    }
    if args.unmatched {
        text += &report::unmatched(engine);
    }
    if args.states {
        text += &report::states_table(engine, names);
    }
    if args.json {
        let mut json = report::json(engine, &summary);
        crate::counting::annotate(&mut json);
        text += &format!("{json}\n");
    }
    outputs::print(&text)
}

pub fn capture_failure(path: &std::path::Path, e: CaptureError) -> Failure {
    Failure::Runtime(format!("{}: {e}", path.display()))
}
