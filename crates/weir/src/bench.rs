//! `weir bench` and `weir calibrate`: CLI glue over the `weir-bench` crate.
//!
//! `bench` decodes the whole trace into memory first (direction and
//! interface from the capture, else `--dir`/`--iface`), then times only the
//! engine; `calibrate` runs the synthetic k×m sweep and the libpcap peer.

use crate::cli::EngineArgs;
use crate::outputs;
use crate::setup::{build_engine, capture_failure, placement};
use crate::Failure;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;
use weir_bench::{bench, calibrate};
use weir_engine::Engine;
use weir_io::open_capture;
use weir_io::output::Endpoint;
use weir_pipeline::source::decode_all;
use weir_rules::Names;
use weir_wire::Packet;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  weir bench rules/realistic-100.rules -r trace.pcap
  weir bench rules.conf -r trace.pcap --dispatch table --duration 10 --json
  weir bench rules.conf -r trace.pcap --plot cdf.svg

Reports packets/s (median round, no clock in the loop), ns per packet
(p20, p50, p99, max; one cheap clock read per packet, whose own cost is
printed), rules and micro-instructions tried per packet, and each rule's
share of the time. The timed loops make no system calls: the trace is in
memory and `log` rules write into a buffer in front of io::sink.")]
pub struct BenchArgs {
    /// Ruleset file (ipfw syntax).
    pub rules: PathBuf,
    /// Capture to load into memory (pcap or pcapng), or - for stdin.
    #[arg(short = 'r', value_name = "FILE")]
    pub read: PathBuf,
    /// Load at most this many packets.
    #[arg(short = 'c', value_name = "COUNT")]
    pub count: Option<u64>,
    /// Timed rounds over the whole trace.
    #[arg(long, default_value_t = 10, conflicts_with = "duration")]
    pub rounds: u32,
    /// Time rounds for this long instead of a fixed count (2s, 500ms; a
    /// bare number is seconds).
    #[arg(long, value_name = "TIME", value_parser = crate::duration::parse_positive)]
    pub duration: Option<Duration>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Draw the CDF of per-packet cost into this SVG file.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    #[command(flatten)]
    pub context: crate::cli::ContextArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  weir calibrate                 full sweep (about a minute), both dispatches, libpcap beside
  weir calibrate --quick --json  small sweep, machine-readable

Fits ns/packet = a + k·(h + m·c) over rulesets of k rules × m
micro-instructions that every packet fails at the last instruction, and
prints h and c beside ipfw's 2009 in-kernel figures (50 ns, 12 ns) and
libpcap's ns per BPF instruction, measured in the same run by a C harness
compiled with cc against libpcap-dev (skipped, and said so, if missing).")]
pub struct CalibrateArgs {
    /// A small sweep (a few seconds), for tests and quick looks.
    #[arg(long)]
    pub quick: bool,
    /// Repetitions (each gives one fit; median and IQR are reported).
    #[arg(long, value_name = "N")]
    pub reps: Option<usize>,
    /// Do not build and time the libpcap harness.
    #[arg(long)]
    pub no_peer: bool,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Where the harness is compiled (default: a fresh temporary directory).
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
}

/// Decodes the capture into memory: the only I/O `bench` does.
fn load_packets(args: &BenchArgs, engine: &mut Engine) -> Result<Vec<Packet>, Failure> {
    let mut reader = open_capture(&args.read).map_err(|e| capture_failure(&args.read, e))?;
    let place = placement(&args.context, &args.engine);
    let limit = args.count.unwrap_or(u64::MAX);
    let packets = decode_all(&mut reader, &place, limit);
    let packets = packets.map_err(|e| capture_failure(&args.read, e))?;
    engine.set_interfaces(&place.interface_names(reader.interfaces()));
    Ok(packets)
}

pub fn bench(args: &BenchArgs) -> Result<(), Failure> {
    let (rules, trace) = (&args.rules, &args.read);
    let ins = [
        Endpoint::new("the ruleset", rules),
        Endpoint::new("-r", trace),
    ];
    outputs::refuse_clashes(&ins, &outputs::given(&[("--plot", &args.plot)]))?;
    let names = Names::system();
    let mut engine = build_engine(rules, &args.engine, &names)?;
    bench::discard_logs(&mut engine, &names);
    let packets = load_packets(args, &mut engine)?;
    if packets.is_empty() {
        let empty = format!("{}: no packets to replay", trace.display());
        return Err(Failure::Usage(empty));
    }
    let opts = bench::Options {
        length: bench::Length::of(args.duration, args.rounds),
        ..Default::default()
    };
    let report = bench::run(&mut engine, &packets, &opts);
    if let Some(path) = &args.plot {
        outputs::written(path, &report.plot(&report.plot_title(rules, trace)))?.commit()?;
    }
    if args.json {
        outputs::print(&report.json(rules, trace)?)
    } else {
        outputs::print(&report.text_for(rules, trace))
    }
}

pub fn calibrate(args: &CalibrateArgs) -> Result<(), Failure> {
    let mut opts = calibrate::Options::new(args.quick, args.work_dir.clone());
    opts.reps = args.reps.map_or(opts.reps, |r| r.max(1));
    opts.peer = !args.no_peer;
    // Progress lines: a full or closed stderr does not stop the sweep.
    let report = calibrate::run(&opts, &mut |line| {
        outputs::note_quietly(&format!("weir calibrate: {line}"));
    });
    if let Some(reason) = report.peer_skipped() {
        outputs::note(&format!("weir calibrate: libpcap peer skipped: {reason}"))?;
    }
    if args.json {
        outputs::print(&format!("{}\n", serde_json::to_value(&report)?))
    } else {
        outputs::print(&report.text())
    }
}
