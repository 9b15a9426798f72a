//! `weir run`: read a capture, decide every packet, write what the verdict names.
//!
//! Per packet: decode once, decide, then write to the outputs that asked
//! for it. Every string an output needs per packet (CSV suffixes, pcapng
//! comments) is made once per rule at start-up; the loop only copies bytes.

use crate::cli::RunArgs;
use crate::report::{self, Summary};
use crate::setup::{attach_logger, build_engine_and_set, create_output, DefaultDir};
use crate::{Failure, Progress};
use std::io::{BufWriter, Write};
use weir_engine::{Decision, Engine, Verdict};
use weir_io::{CaptureError, CaptureWriter, Frame, Interface};
use weir_rules::Names;
use weir_wire::{decode, Direction, Malformed, Packet};

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
}

impl Labels {
    pub fn new(engine: &Engine) -> Labels {
        let word = |v: Verdict| if v == Verdict::Pass { "allow" } else { "deny" };
        let policy = engine.policy;
        // Each rule with each verdict: "allow" and "deny" say theirs.
        let per_verdict = || {
            engine.program.rules.iter().flat_map(|r| {
                [Verdict::Pass, Verdict::Drop].map(move |v| {
                    let plain = matches!(r.act, weir_engine::Act::Accept | weir_engine::Act::Deny);
                    (
                        r,
                        (!plain).then(|| if v == Verdict::Pass { "pass" } else { "drop" }),
                    )
                })
            })
        };
        Labels {
            rule_csv: per_verdict()
                .map(|(r, note)| {
                    let action = if r.action_text.contains(',') {
                        format!("\"{}\"", r.action_text)
                    } else {
                        r.action_text.clone()
                    };
                    format!(",{},{action},{}\n", r.number, note.unwrap_or(""))
                })
                .collect(),
            rule_comment: per_verdict()
                .map(|(r, note)| match note {
                    Some(v) => format!("rule {} {} ({v})", r.number, r.action_text),
                    None => format!("rule {} {}", r.number, r.action_text),
                })
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

    pub fn csv(&self, d: &Decision, p: &Packet) -> &str {
        match (d.rule, p.l3) {
            (Some(r), _) => &self.rule_csv[2 * r + usize::from(d.verdict == Verdict::Drop)],
            (None, weir_wire::L3::Malformed(m)) => &self.malformed_csv[m as usize],
            (None, _) => &self.non_ip_csv,
        }
    }

    pub fn comment(&self, d: &Decision, p: &Packet) -> &str {
        match (d.rule, p.l3) {
            (Some(r), _) => &self.rule_comment[2 * r + usize::from(d.verdict == Verdict::Drop)],
            (None, weir_wire::L3::Malformed(m)) => &self.malformed_comment[m as usize],
            (None, _) => &self.non_ip_comment,
        }
    }
}

/// The optional outputs of a run.
struct Outputs {
    pass: Option<CaptureWriter<Out>>,
    drop: Option<CaptureWriter<Out>>,
    annotate: Option<CaptureWriter<Out>>,
    verdicts: Option<BufWriter<Out>>,
}

impl Outputs {
    fn write(
        &mut self,
        labels: &Labels,
        index: u64,
        frame: &Frame<'_>,
        ifaces: &[Interface],
        p: &Packet,
        d: &Decision,
    ) -> std::io::Result<()> {
        let split = match d.verdict {
            Verdict::Pass => &mut self.pass,
            Verdict::Drop => &mut self.drop,
        };
        if let Some(w) = split {
            w.write(frame, ifaces, None)?;
        }
        if let Some(w) = &mut self.annotate {
            w.write(frame, ifaces, Some(labels.comment(d, p)))?;
        }
        if let Some(w) = &mut self.verdicts {
            w.write_all(itoa::Buffer::new().format(index).as_bytes())?;
            w.write_all(labels.csv(d, p).as_bytes())?;
        }
        Ok(())
    }

    /// Completes interface lists (an empty pcapng still names them all)
    /// and flushes everything.
    fn finish(&mut self, ifaces: &[Interface]) -> std::io::Result<()> {
        for w in [&mut self.pass, &mut self.drop, &mut self.annotate]
            .into_iter()
            .flatten()
        {
            w.finish_interfaces(ifaces)?;
            w.flush()?;
        }
        if let Some(w) = &mut self.verdicts {
            w.flush()?;
        }
        Ok(())
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

/// Refuses outputs that would overwrite each other or share stdout.
fn check_outputs(args: &RunArgs) -> Result<(), Failure> {
    let outputs: Vec<&std::path::Path> = [
        &args.write,
        &args.drop_out,
        &args.annotate,
        &args.verdicts,
        &args.log_file,
    ]
    .into_iter()
    .flatten()
    .map(|p| p.as_path())
    .collect();
    let on_stdout = outputs.iter().filter(|p| p.as_os_str() == "-").count();
    if on_stdout > 1 {
        return Err(Failure::Usage(
            "only one output can go to stdout (-)".into(),
        ));
    }
    if on_stdout == 1 && (args.counters || args.json || args.unmatched) {
        return Err(Failure::Usage(
            "a capture or verdicts on stdout (-) cannot share it with --counters, --json or --unmatched".into(),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for p in outputs
        .iter()
        .chain([&args.read.as_path()])
        .filter(|p| p.as_os_str() != "-")
    {
        // Canonical when the file exists; otherwise its canonical directory plus name.
        let key = std::fs::canonicalize(p).unwrap_or_else(|_| {
            let dir = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            std::fs::canonicalize(dir)
                .unwrap_or_else(|_| dir.to_path_buf())
                .join(p.file_name().unwrap_or_default())
        });
        if !seen.insert(key) {
            return Err(Failure::Usage(format!(
                "{} is named twice among -r and the outputs",
                p.display()
            )));
        }
    }
    Ok(())
}

pub fn run(args: &RunArgs) -> Result<(), Failure> {
    check_outputs(args)?;
    let names = Names::system();
    let (mut engine, ppp_set) = build_engine_and_set(&args.rules, &args.engine, &names)?;
    if engine.program.rules.iter().any(|r| r.log_limit.is_some()) {
        let format = crate::ppp::log_format(args.log_format.into(), ppp_set);
        attach_logger(&mut engine, args.log_file.as_deref(), format, &names)?;
    }
    // Reads counted for the JSON summary (see counting.rs).
    let mut reader =
        crate::counting::open_capture(&args.read).map_err(|e| capture_failure(&args.read, e))?;
    let labels = Labels::new(&engine);
    let format = reader.format();
    let mirror = |path: &Option<std::path::PathBuf>, ifaces: &[Interface]| -> Result<_, Failure> {
        path.as_deref()
            .map(|p| {
                CaptureWriter::mirror(create_output(p)?, format, ifaces)
                    .map_err(|e| io_failure(p, e))
            })
            .transpose()
    };
    let mut out = Outputs {
        pass: mirror(&args.write, reader.interfaces())?,
        drop: mirror(&args.drop_out, reader.interfaces())?,
        annotate: args
            .annotate
            .as_deref()
            .map(|p| CaptureWriter::pcapng_like(create_output(p)?).map_err(|e| io_failure(p, e)))
            .transpose()?,
        verdicts: args
            .verdicts
            .as_deref()
            .map(|p| -> Result<_, Failure> {
                let mut w = BufWriter::with_capacity(1 << 20, create_output(p)?);
                w.write_all(b"index,rule,action,note\n")
                    .map_err(|e| io_failure(p, e))?;
                Ok(w)
            })
            .transpose()?,
    };

    let default_dir = crate::setup::default_direction(args.engine.dir, &args.engine.me);
    let fallback = args.engine.iface.as_deref();
    let limit = args.count.unwrap_or(u64::MAX);
    let mut progress = Progress::for_input(&args.read);
    let mut known_ifaces = usize::MAX;
    let mut index = 0u64;
    let mut failure = None;
    while index < limit {
        let (frame, ifaces) = match reader.next_with_interfaces() {
            Ok(Some(x)) => x,
            Ok(None) => break,
            Err(e) => {
                failure = Some(capture_failure(&args.read, e));
                break;
            }
        };
        if ifaces.len() != known_ifaces {
            known_ifaces = ifaces.len();
            engine.set_interfaces(&interface_names(ifaces, fallback));
        }
        index += 1;
        let mut p = decode(frame.link_type, frame.data, frame.orig_len);
        place(&mut p, &frame, &default_dir);
        engine.set_time(frame.ts_ns);
        let d = engine.decide(&p);
        if let Err(e) = out.write(&labels, index, &frame, ifaces, &p, &d) {
            failure = Some(Failure::from_io("output", e));
            break;
        }
        if index & 0xffff == 0 {
            progress.update(frame.offset);
        }
    }
    progress.finish();
    let flushed = out
        .finish(reader.interfaces())
        .map_err(|e| Failure::from_io("output", e));
    if let Some(l) = engine.logger_mut() {
        // Logging never stops the filter, but lost lines are said.
        if l.flush().is_err() || l.errors > 0 {
            eprintln!("weir: writing the log failed; log lines were lost");
        }
    }
    let summary = Summary::of(&engine);
    if !args.quiet {
        eprintln!("{}", summary.line());
    }
    if args.counters {
        print!("{}", report::counters_table(&engine));
    }
    if args.unmatched {
        print!("{}", report::unmatched(&engine));
    }
    if args.states {
        print!("{}", report::states_table(&engine, &names));
    }
    if args.json {
        let mut json = report::json(&engine, &summary);
        crate::counting::annotate(&mut json);
        println!("{json}");
    }
    match (failure, flushed) {
        (Some(f), _) | (None, Err(f)) => Err(f),
        _ => Ok(()),
    }
}

pub fn capture_failure(path: &std::path::Path, e: CaptureError) -> Failure {
    Failure::Runtime(format!("{}: {e}", path.display()))
}

fn io_failure(path: &std::path::Path, e: std::io::Error) -> Failure {
    Failure::from_io(&path.display().to_string(), e)
}
