//! `weir capture`: live packets from an AF_PACKET ring through a ruleset,
//! with pass/drop files and the counters at the end; and `weir sockbench`,
//! the 2014 set-up measurement. Glue over `weir-capture`.
//!
//! Start-up order, as tcpdump's: open every socket (root needed), drop
//! privileges (`-Z`), then create the output files and start the workers.
//! Each worker owns one socket of a PACKET_FANOUT group, its own copy of
//! the engine and its counters; they share only the output writers (locked
//! once per batch, not per packet) and the `-c` budget (claimed once per
//! batch). At the end the counters are added rule by rule.

use crate::cli::{EngineArgs, LogFormatArg};
use crate::outputs::{self, Output};
use crate::probe::parse_duration;
use crate::report::{self, Summary};
use crate::setup::build_engine;
use crate::Failure;
use clap::Args;
use serde_json::{json, Value};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use weir_capture::{Capture, Config, Iface, KernelStats, LinkKind, RingMode};
use weir_engine::{Engine, Logger, Verdict};
use weir_io::output::{ErrorWatch, Watched};
use weir_io::PcapWriter;
use weir_live::metrics::{serve_workers, state_samples, Publisher, PUBLISH_INTERVAL};
use weir_rules::Names;
use weir_wire::{decode_with, Direction, LinkType};

type Out = Box<dyn Write + Send>;

const CAPTURE_EXAMPLES: &str = "Examples:
  weir capture -i eth0 rules.conf --counters            until Ctrl-C; then `ipfw show` counters
  weir capture -i eth0 rules.conf -c 10000 -w pass.pcap --drop-out drop.pcap
  weir capture -i eth0 rules.conf --workers 2 --json    two threads, flows spread by PACKET_FANOUT
  weir capture -i eth0 rules.conf --metrics 127.0.0.1:9618
                                      Prometheus metrics at http://127.0.0.1:9618/metrics
  weir capture -i eth0 rules.conf --immediate -Z nobody TPACKET_V2 for latency; run as nobody

Needs root (or CAP_NET_RAW). The closing lines on stderr are tcpdump's:
packets read and their verdicts, packets received by filter, packets
dropped by kernel. Direction comes from the kernel (outgoing or not);
--dir and --iface do not apply. On loopback each packet is seen once
(the outgoing copy is ignored), as libpcap does. Output files appear when
the capture stops cleanly (written under a temporary name until then).

Exit codes: 0 ok, 1 runtime error (no permission, socket or output error),
2 usage, unknown interface, ruleset error or an output that is an input.";

#[derive(Args, Debug)]
#[command(after_help = CAPTURE_EXAMPLES)]
pub struct CaptureArgs {
    /// Interface to capture on (Ethernet, loopback or raw-IP devices).
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interface: String,
    /// Ruleset file (ipfw syntax).
    pub rules: PathBuf,
    /// Write passed packets here (pcap; - for stdout).
    #[arg(short = 'w', value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Write dropped packets here (pcap).
    #[arg(long, value_name = "FILE")]
    pub drop_out: Option<PathBuf>,
    /// Stop after this many packets (exactly, across workers).
    #[arg(short = 'c', value_name = "COUNT")]
    pub count: Option<u64>,
    /// Stop after this long (e.g. 10s, 500ms).
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// TPACKET_V2 ring: each packet as soon as it lands (lower latency),
    /// instead of TPACKET_V3 blocks (higher throughput).
    #[arg(long)]
    pub immediate: bool,
    /// Threads, each with its own socket in one PACKET_FANOUT group (flows
    /// spread by hash, fragments reassembled first).
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub workers: u16,
    /// Ring size per worker, in KiB (tcpdump's -B).
    #[arg(short = 'B', long = "buffer-size", default_value_t = 2048, value_name = "KiB",
          value_parser = clap::value_parser!(u32).range(64..=4_194_304))]
    pub buffer_kib: u32,
    /// Bytes kept of each packet.
    #[arg(short = 's', long = "snapshot-length", default_value_t = 262_144, value_name = "BYTES",
          value_parser = clap::value_parser!(u32).range(64..=262_144))]
    pub snaplen: u32,
    /// Become USER once the sockets are open (as tcpdump -Z); output files
    /// are created afterwards, as USER.
    #[arg(short = 'Z', value_name = "USER")]
    pub user: Option<String>,
    /// Print per-rule counters as `ipfw show` does.
    #[arg(long)]
    pub counters: bool,
    /// Print the summary, per-rule counters and kernel statistics as JSON.
    #[arg(long)]
    pub json: bool,
    /// List the rules that matched no packet.
    #[arg(long)]
    pub unmatched: bool,
    /// Where `log` rules write (default: stderr).
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Log line format.
    #[arg(long, value_enum, default_value_t = LogFormatArg::Text)]
    pub log_format: LogFormatArg,
    /// No closing lines on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics (every worker's
    /// counters summed; the same series as `weir inline --metrics`).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Why the capture ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Stop {
    Running = 0,
    Count,
    Signal,
    Duration,
    Error,
}

impl Stop {
    fn name(self) -> &'static str {
        match self {
            Stop::Running => "running",
            Stop::Count => "count",
            Stop::Signal => "signal",
            Stop::Duration => "duration",
            Stop::Error => "error",
        }
    }
}

/// What the workers share: the `-c` budget and the reason to stop.
struct Shared {
    /// Packets `-c` still allows; `None` without `-c`.
    budget: Option<AtomicU64>,
    stop: AtomicU8,
    deadline: Option<Instant>,
}

impl Shared {
    /// Takes up to `want` packets from the budget; returns how many.
    fn claim(&self, want: u64) -> u64 {
        let Some(b) = &self.budget else { return want };
        let mut cur = b.load(Relaxed);
        loop {
            let take = cur.min(want);
            match b.compare_exchange_weak(cur, cur - take, Relaxed, Relaxed) {
                Ok(_) => return take,
                Err(now) => cur = now,
            }
        }
    }

    fn exhausted(&self) -> bool {
        self.budget.as_ref().is_some_and(|b| b.load(Relaxed) == 0)
    }

    fn set_stop(&self, why: Stop) {
        // The first reason wins.
        let _ = self
            .stop
            .compare_exchange(Stop::Running as u8, why as u8, Relaxed, Relaxed);
    }

    fn reason(&self) -> Stop {
        match self.stop.load(Relaxed) {
            0 => Stop::Running,
            1 => Stop::Count,
            2 => Stop::Signal,
            3 => Stop::Duration,
            _ => Stop::Error,
        }
    }

    /// Whether to stop now; notices signals and the deadline.
    fn stopping(&self) -> bool {
        if weir_probe::sys::stop_requested() {
            self.set_stop(Stop::Signal);
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.set_stop(Stop::Duration);
        }
        self.reason() != Stop::Running
    }
}

/// The pass and drop files, shared by the workers.
struct Outputs {
    pass: Option<SharedFile>,
    drop: Option<SharedFile>,
    /// What makes each file (log included) appear, at a clean stop.
    pending: Mutex<Vec<Output<()>>>,
    /// The log's name and first write error.
    log: Option<(String, ErrorWatch)>,
}

struct SharedFile {
    name: String,
    w: Mutex<PcapWriter<Out>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One capture thread: a socket, an engine, its counts.
struct Worker<'a> {
    cap: Capture,
    engine: Engine,
    link: LinkType,
    /// On `lo` each packet shows up twice; the outgoing copy is skipped.
    loopback: bool,
    duplicates: u64,
    shared: &'a Shared,
    out: &'a Outputs,
    /// This worker's end of the metrics server, if one runs.
    metrics: Option<Publisher>,
}

/// How long one `poll` waits for an empty ring: the longest a signal or
/// the deadline waits to be noticed.
const POLL_MS: i32 = 50;

impl Worker<'_> {
    fn run(&mut self) -> Result<(), Failure> {
        while self.between_batches() {
            let Worker {
                cap,
                engine,
                link,
                loopback,
                duplicates,
                shared,
                out,
                metrics: _,
            } = self;
            let Some(batch) = cap.next_batch(POLL_MS).map_err(runtime)? else {
                continue;
            };
            let is_dup = |f: &weir_capture::Frame<'_>| *loopback && f.outgoing();
            // -c is exact across workers: claim this batch's packets first.
            let wanted = if shared.budget.is_some() {
                let mut n = 0u64;
                batch.for_each(|f| n += u64::from(!is_dup(f)));
                n
            } else {
                batch.len() as u64
            };
            let mut left = shared.claim(wanted);
            let fields = engine.fields();
            let mut pass = out.pass.as_ref().map(|f| lock(&f.w));
            let mut drop = out.drop.as_ref().map(|f| lock(&f.w));
            let mut failed = None;
            batch.for_each(|f| {
                if is_dup(f) {
                    *duplicates += 1;
                    return;
                }
                if left == 0 || failed.is_some() {
                    return;
                }
                left -= 1;
                let mut p = decode_with(*link, f.data, f.orig_len, fields);
                p.iface = 0;
                p.direction = if f.outgoing() {
                    Direction::Out
                } else {
                    Direction::In
                };
                // States age by the kernel's receive timestamps.
                engine.set_time(f.ts_ns);
                let (w, file) = match engine.decide(&p).verdict {
                    Verdict::Pass => (pass.as_deref_mut(), &out.pass),
                    Verdict::Drop => (drop.as_deref_mut(), &out.drop),
                };
                if let (Some(w), Some(file)) = (w, file) {
                    if let Err(e) = w.write_frame(f.ts_ns, f.orig_len, f.data) {
                        failed = Some(Failure::from_io(&file.name, e));
                    }
                }
            });
            if let Some(f) = failed {
                shared.set_stop(Stop::Error);
                return Err(f);
            }
            if shared.exhausted() {
                shared.set_stop(Stop::Count);
            }
        }
        Ok(())
    }

    /// Runs between batches (and after each empty poll), never per packet:
    /// says whether to go on. This is the place for work that must not
    /// touch the packet path, such as publishing counters.
    fn between_batches(&mut self) -> bool {
        if let Some(m) = &mut self.metrics {
            m.publish_every(PUBLISH_INTERVAL, &self.engine, || {
                state_samples(&self.engine)
            });
        }
        !self.shared.stopping()
    }
}

fn runtime(e: weir_capture::Error) -> Failure {
    Failure::Runtime(e.to_string())
}

/// A log sink several workers' loggers share. Each logger buffers its own
/// lines; this passes on only whole lines, under the lock, so lines from
/// different workers never interleave mid-line. Locked once per logger
/// buffer flush (64 KiB), not per line.
struct LineSink {
    shared: Arc<Mutex<Out>>,
    partial: Vec<u8>,
}

impl Write for LineSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match buf.iter().rposition(|&b| b == b'\n') {
            Some(end) => {
                let mut w = lock(&self.shared);
                w.write_all(&self.partial)?;
                w.write_all(&buf[..=end])?;
                self.partial.clear();
                self.partial.extend_from_slice(&buf[end + 1..]);
            }
            None => self.partial.extend_from_slice(buf),
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut w = lock(&self.shared);
        w.write_all(&self.partial)?;
        self.partial.clear();
        w.flush()
    }
}

/// Refuses outputs that share stdout, or that are an input or each other
/// under any name, before anything is opened for writing.
fn check_outputs(args: &CaptureArgs) -> Result<(), Failure> {
    outputs::check_filter_outputs(
        &args.rules,
        &args.engine.tables,
        None,
        &[
            ("-w", &args.write),
            ("--drop-out", &args.drop_out),
            ("--log-file", &args.log_file),
        ],
        &[
            (args.counters, "--counters"),
            (args.json, "--json"),
            (args.unmatched, "--unmatched"),
        ],
    )
}

fn open_pcap(
    path: Option<&Path>,
    link: LinkType,
    snaplen: u32,
    pending: &mut Vec<Output<()>>,
) -> Result<Option<SharedFile>, Failure> {
    path.map(|p| {
        let (w, file) = outputs::open(p)?.split();
        let w = PcapWriter::new(w, link, snaplen, false).map_err(|e| file.fail(e))?;
        let name = file.name().to_owned();
        pending.push(file);
        Ok(SharedFile {
            name,
            w: Mutex::new(w),
        })
    })
    .transpose()
}

/// tcpdump's name for the link type, for the "listening on" line.
fn link_name(link: LinkType) -> &'static str {
    if link == LinkType::ETHERNET {
        "EN10MB (Ethernet)"
    } else {
        "RAW (Raw IP)"
    }
}

pub fn capture(args: &CaptureArgs) -> Result<(), Failure> {
    check_outputs(args)?;
    let names = Names::system();
    let template = build_engine(&args.rules, &args.engine, &names)?;
    let iface = Iface::lookup(&args.interface)
        .map_err(|e| Failure::Usage(format!("{}: {e}", args.interface)))?;
    let link = match iface.link() {
        Some(LinkKind::RawIp) => LinkType::RAW,
        Some(LinkKind::Ethernet | LinkKind::Loopback) => LinkType::ETHERNET,
        None => {
            return Err(Failure::Usage(format!(
                "{}: link type ARPHRD {} is not supported (Ethernet, loopback and raw IP are)",
                iface.name, iface.hatype
            )))
        }
    };
    let mode = if args.immediate {
        RingMode::Immediate
    } else {
        RingMode::Blocks
    };
    let cfg = Config {
        mode,
        buffer: args.buffer_kib as usize * 1024,
        snaplen: args.snaplen,
        // A group id of our own: the pid, as libpcap-based tools do.
        fanout: (args.workers > 1).then(|| std::process::id() as u16),
        block_timeout_ms: 10,
    };
    let caps = (0..args.workers)
        .map(|_| weir_capture::open(&cfg, &iface))
        .collect::<Result<Vec<Capture>, _>>()
        .map_err(runtime)?;
    if let Some(user) = &args.user {
        weir_capture::drop_privileges(user)
            .map_err(|e| Failure::Runtime(format!("-Z {user}: {e}")))?;
    }
    let mut pending = Vec::new();
    let pass = open_pcap(args.write.as_deref(), link, args.snaplen, &mut pending)?;
    let drop = open_pcap(args.drop_out.as_deref(), link, args.snaplen, &mut pending)?;
    let logs = template
        .program()
        .rules
        .iter()
        .any(|r| r.log_limit.is_some());
    let mut log_watch = None;
    let log_sink: Option<Arc<Mutex<Out>>> = if logs {
        let (sink, name): (Out, String) = match &args.log_file {
            Some(p) => {
                let (w, file) = outputs::open(p)?.split();
                let name = file.name().to_owned();
                pending.push(file);
                (w, name)
            }
            None => (Box::new(io::stderr()), "stderr".to_owned()),
        };
        let (sink, watch) = Watched::new(sink);
        log_watch = Some((name, watch));
        Some(Arc::new(Mutex::new(Box::new(sink) as Out)))
    } else {
        None
    };
    let out = Outputs {
        pass,
        drop,
        pending: Mutex::new(pending),
        log: log_watch,
    };
    let shared = Shared {
        budget: args.count.map(AtomicU64::new),
        stop: AtomicU8::new(Stop::Running as u8),
        deadline: args.duration.map(|d| Instant::now() + d),
    };
    let (publishers, server): (Vec<Option<Publisher>>, _) = match args.metrics {
        Some(addr) => {
            let (p, server) = serve_workers(addr, caps.len())
                .map_err(|e| Failure::Runtime(format!("metrics {addr}: {e}")))?;
            (p.into_iter().map(Some).collect(), Some(server))
        }
        None => (caps.iter().map(|_| None).collect(), None),
    };
    let mut workers: Vec<Worker<'_>> = caps
        .into_iter()
        .zip(publishers)
        .map(|(cap, metrics)| {
            let mut engine = template.replica();
            if let Some(sink) = &log_sink {
                let w = LineSink {
                    shared: Arc::clone(sink),
                    partial: Vec::new(),
                };
                let logger = Logger::new(
                    Box::new(w),
                    args.log_format.into(),
                    &names,
                    &engine.program().rules,
                );
                engine.set_logger(logger);
            }
            engine.set_interfaces(&[Some(iface.name.as_str())]);
            Worker {
                cap,
                engine,
                link,
                loopback: iface.link() == Some(LinkKind::Loopback),
                duplicates: 0,
                shared: &shared,
                out: &out,
                metrics,
            }
        })
        .collect();
    weir_probe::sys::install_stop_handler()
        .map_err(|e| Failure::Runtime(format!("sigaction: {e}")))?;
    if !args.quiet {
        let metrics = server
            .as_ref()
            .map(|m| format!(", metrics at http://{}/metrics", m.local_addr()))
            .unwrap_or_default();
        outputs::note(&format!(
            "weir capture: listening on {}, link-type {}, snapshot length {} bytes, {} ring, {} worker{}{metrics}",
            iface.name,
            link_name(link),
            args.snaplen,
            if args.immediate { "TPACKET_V2" } else { "TPACKET_V3" },
            args.workers,
            if args.workers == 1 { "" } else { "s" },
        ))?;
    }
    let started = Instant::now();
    let results: Vec<Result<(), Failure>> = if workers.len() == 1 {
        workers.iter_mut().map(Worker::run).collect()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = workers
                .iter_mut()
                .map(|w| {
                    s.spawn(move || {
                        let r = w.run();
                        if r.is_err() {
                            w.shared.set_stop(Stop::Error);
                        }
                        r
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Failure::Runtime("a worker panicked".into())))
                })
                .collect()
        })
    };
    let seconds = started.elapsed().as_secs_f64();
    finish(args, &iface, workers, &out, seconds, &shared, results)
}

/// Flushes, merges the workers' counts and reports.
fn finish(
    args: &CaptureArgs,
    iface: &Iface,
    workers: Vec<Worker<'_>>,
    out: &Outputs,
    seconds: f64,
    shared: &Shared,
    results: Vec<Result<(), Failure>>,
) -> Result<(), Failure> {
    let mut failure = results.into_iter().find_map(Result::err);
    for f in [&out.pass, &out.drop].into_iter().flatten() {
        if let Err(e) = lock(&f.w).flush() {
            failure.get_or_insert(Failure::from_io(&f.name, e));
        }
    }
    let mut kernel = KernelStats::default();
    let mut per_worker = Vec::new();
    let mut duplicates = 0;
    let (mut log_lines, mut log_suppressed, mut log_errors) = (0, 0, 0);
    let mut merged: Option<Engine> = None;
    for mut w in workers {
        let k = w.cap.stats().map_err(runtime)?;
        kernel += k;
        duplicates += w.duplicates;
        per_worker.push(json!({
            "packets": w.engine.stats().packets,
            "kernel_received": k.received,
            "kernel_dropped": k.dropped,
        }));
        if let Some(l) = w.engine.logger_mut() {
            // A failed write is in the log's watch, looked at below.
            let _ = l.flush();
            (log_lines, log_suppressed, log_errors) = (
                log_lines + l.lines,
                log_suppressed + l.suppressed,
                log_errors + l.errors,
            );
        }
        match &mut merged {
            None => merged = Some(w.engine),
            Some(m) => m.add_counts(&w.engine),
        }
    }
    let engine = merged.expect("at least one worker");
    // The log never stopped the filter; a failed write to it still fails
    // the command, unless its reader simply went away.
    if let Some((name, watch)) = &out.log {
        if let Some(f) = watch.take().map(|e| Failure::from_io(name, e)) {
            if !f.is_closed_pipe() {
                failure.get_or_insert(f);
            }
        }
    }
    let pending = std::mem::take(&mut *lock(&out.pending));
    if failure.is_none() {
        for file in pending {
            file.commit()?;
        }
    } else {
        outputs::say_discarded(pending.into_iter().filter_map(Output::discard).collect())?;
    }
    let summary = Summary::of(&engine);
    if !args.quiet {
        let mut lines = vec![
            summary.line(),
            format!("{} packets received by filter", kernel.received),
            format!("{} packets dropped by kernel", kernel.dropped),
        ];
        if duplicates > 0 {
            lines.push(format!("{duplicates} outgoing loopback duplicates ignored"));
        }
        outputs::note(&lines.join("\n"))?;
    }
    let mut text = String::new();
    if args.counters {
        text += &report::counters_table(&engine);
    }
    if args.unmatched {
        text += &report::unmatched(&engine);
    }
    if args.json {
        let mut doc = report::json(&engine, &summary);
        if let Some(s) = doc["weir"]
            .as_array_mut()
            .and_then(|items| items.last_mut())
            .map(|last| &mut last["summary"])
        {
            if !s["log"].is_null() {
                s["log"] = json!({
                    "lines": log_lines,
                    "suppressed_by_logamount": log_suppressed,
                    "write_errors": log_errors,
                });
            }
            s["kernel"] = json!({
                "received": kernel.received,
                "dropped": kernel.dropped,
                "freezes": kernel.freezes,
            });
            s["capture"] = json!({
                "interface": iface.name,
                "ring": if args.immediate { "tpacket_v2" } else { "tpacket_v3" },
                "workers": per_worker.len(),
                "per_worker": per_worker,
                "loopback_duplicates_ignored": duplicates,
                "stopped_by": shared.reason().name(),
                "seconds": seconds,
                "packets_per_second": if seconds > 0.0 { summary.packets as f64 / seconds } else { 0.0 },
            });
        }
        text += &format!("{doc}\n");
    }
    outputs::print(&text)?;
    failure.map_or(Ok(()), Err)
}

const SOCKBENCH_EXAMPLES: &str = "Examples:
  weir sockbench                    200 runs of each case
  weir sockbench --runs 1000 --json

Needs root: it creates a network namespace of its own and packet sockets
bound to its loopback. The three cases are the 2014 Linux measurement:
a socket created with a protocol and then bound to one interface waits in
synchronize_net(); created with protocol 0, it does not.";

#[derive(Args, Debug)]
#[command(after_help = SOCKBENCH_EXAMPLES)]
pub struct SockbenchArgs {
    /// Timed runs of each case.
    #[arg(long, default_value_t = 200, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub runs: u32,
    /// Untimed runs of each case first.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub warmup: u32,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn sockbench(args: &SockbenchArgs) -> Result<(), Failure> {
    let results =
        weir_capture::sockbench::run(args.runs as usize, args.warmup as usize).map_err(runtime)?;
    if args.json {
        let cases: Vec<Value> = results
            .iter()
            .map(|r| {
                json!({
                    "case": r.case.name(),
                    "calls": r.case.calls(),
                    "runs": r.samples_us.len(),
                    "median_us": r.median(),
                    "p99_us": r.p99(),
                    "min_us": r.percentile(0.0),
                    "max_us": r.percentile(1.0),
                    "reported_2014_us": r.case.reported_2014_us(),
                })
            })
            .collect();
        return outputs::print(&format!("{}\n", json!({ "sockbench": cases })));
    }
    let mut text = format!(
        "{:<26} {:>11} {:>9} {:>9}  calls\n",
        "case", "median µs", "p99 µs", "2014 µs"
    );
    for r in &results {
        text += &format!(
            "{:<26} {:>11.1} {:>9.1} {:>9.0}  {}\n",
            r.case.name(),
            r.median(),
            r.p99(),
            r.case.reported_2014_us(),
            r.case.calls()
        );
    }
    text += &format!(
        "({} runs of each case, interleaved, in a new network namespace)\n",
        args.runs
    );
    outputs::print(&text)
}
