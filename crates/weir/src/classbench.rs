//! ClassBench commands: `weir import classbench`, `weir classbench`,
//! `weir gen-rules`. The formats and the mapping live in `weir-classbench`;
//! this is glue: read, compile, time the decide loop, report.

use crate::outputs::{self, Output};
use crate::setup::read_text;
use crate::Failure;
use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;
use weir_classbench::gen::{self, Kind};
use weir_classbench::to_weir::{import_text, Compiled};
use weir_classbench::{parse_filters, parse_trace, Fields, Filter, Header};
use weir_engine::{CompileOptions, Engine};
use weir_io::output::Endpoint;
use weir_rules::Names;

#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub format: ImportFormat,
}

#[derive(Subcommand, Debug)]
pub enum ImportFormat {
    /// Print a ClassBench filter set as a weir ruleset (ipfw semantics).
    #[command(
        after_help = "Filter N becomes rule N (`allow`), in order; the default rule denies.\n\
Ports match only tcp/udp/sctp in weir (as in ipfw), while ClassBench compares\n\
them for every protocol: such filters keep tcp/udp/sctp and say so in a\n\
comment. The rules hold the 5-tuple; a filter's flags and extra fields are\n\
not imported. `weir classbench` evaluates with ClassBench's own semantics.\n\n\
Example:\n  weir import classbench acl1_10k > acl1.rules && weir check acl1.rules"
    )]
    Classbench {
        /// ClassBench filter set (`@sa/len da/len lo : hi lo : hi 0xPP/0xMM`).
        file: PathBuf,
    },
}

#[derive(Args, Debug)]
#[command(
    after_help = "Decides every header of TRACE against the filters of RULES with ClassBench
semantics (first match by line order, ports compared for every protocol),
times the decide loop alone (headers are turned into packet records first),
and reports packets/s and ns per packet (median over --iter passes).

Classification is on the 5-tuple (source and destination prefix, source and
destination port range, protocol), as DPDK's test-acl and the literature use
ClassBench; a filter's flags and extra fields are read and not compared.
--match-flags adds ClassBench's sixth dimension as its trace_generator
encodes it: a filter with flags mask 0 holds any header, any other filter
only headers whose 32-bit flags field (a trace's sixth column) equals
flags << 16 | mask.

Files are read as ClassBench's db_generator and trace_generator write them:
filter lines `@sa/len da/len lo : hi lo : hi 0xPP/0xMM [0xVVVV/0xMMMM
[extra...]]`, trace lines `sa da sp dp proto [[flags [extra...]] filter#]`,
filter# the 0-based index of the filter the header was drawn from.

--verdicts writes one line per header: the 1-based number of the first
matching filter, 0 if none. The trace's filter# is checked: a header drawn
from filter i (0-based) must be answered by filter i + 1 (its own) or an
earlier one; anything else is counted as contradicting.

Examples:
  weir gen-rules --like acl -n 10000 --seed 1 -o acl.rules --trace acl.trace
  weir classbench acl.rules acl.trace --verdicts acl.answers
  weir classbench acl1 acl1_trace --match-flags
  weir classbench acl.rules acl.trace --linear --json"
)]
pub struct ClassbenchArgs {
    /// ClassBench filter set.
    pub rules: PathBuf,
    /// ClassBench header trace (`sa da sp dp proto [[flags [extra...]] filter#]`).
    pub trace: PathBuf,
    /// Write each header's first-match filter number (0: none), one a line.
    #[arg(long, value_name = "FILE")]
    pub verdicts: Option<PathBuf>,
    /// Compare the flags too (ClassBench's sixth dimension), not only the 5-tuple.
    #[arg(long)]
    pub match_flags: bool,
    /// Walk every rule in order instead of the classifier's candidates.
    #[arg(long)]
    pub linear: bool,
    /// Timed passes over the trace (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub iter: u32,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LikeArg {
    Acl,
    Fw,
    Ipc,
}

impl From<LikeArg> for Kind {
    fn from(l: LikeArg) -> Kind {
        match l {
            LikeArg::Acl => Kind::Acl,
            LikeArg::Fw => Kind::Fw,
            LikeArg::Ipc => Kind::Ipc,
        }
    }
}

#[derive(Args, Debug)]
#[command(
    after_help = "Writes N filters in ClassBench's filter format, shaped like ClassBench's
acl1, fw1 or ipc1 seeds (prefix-length pairs, nested prefixes, wildcards,
port classes WC/HI/LO/EM/AR with overlapping ranges, protocol mix), roughly
most specific first. --trace also writes a header trace whose headers are
drawn from filters at every depth (plus repeats and random ones). As
ClassBench's trace_generator writes it, a drawn header's last column is the
0-based index of its filter; a random header has the five fields alone.
Same seed, same bytes.

Examples:
  weir gen-rules --like fw -n 1000 --seed 7 -o fw.rules --trace fw.trace --trace-n 100000
  weir gen-rules --like ipc -n 100 --seed 1            # to stdout"
)]
pub struct GenRulesArgs {
    /// Which ClassBench seed the set resembles.
    #[arg(long, value_enum)]
    pub like: LikeArg,
    /// Number of filters.
    #[arg(short = 'n', long, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub count: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Filter set output, or - for stdout.
    #[arg(short = 'o', long, default_value = "-")]
    pub output: PathBuf,
    /// Also write a header trace here.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Headers in the trace.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(1..=16_777_216))]
    pub trace_n: u32,
}

/// The trace's seed is derived from the set's, so one `--seed` names both.
fn trace_seed(seed: u64) -> u64 {
    seed ^ 0x7472_6163_6521_2121
}

fn read_filters(path: &Path) -> Result<Vec<Filter>, Failure> {
    let text = read_text(path)?;
    parse_filters(&text).map_err(|e| Failure::Rules(format!("{}:{e}", path.display())))
}

fn read_trace(path: &Path) -> Result<Vec<Header>, Failure> {
    let text = read_text(path)?;
    parse_trace(&text).map_err(|e| Failure::Rules(format!("{}:{e}", path.display())))
}

pub fn import(args: &ImportArgs) -> Result<(), Failure> {
    match &args.format {
        ImportFormat::Classbench { file } => {
            let filters = read_filters(file)?;
            outputs::print(&import_text(&filters, &file.display().to_string()))
        }
    }
}

pub fn gen_rules(args: &GenRulesArgs) -> Result<(), Failure> {
    let mut outs = vec![Endpoint::new("-o", &args.output)];
    outs.extend(args.trace.as_deref().map(|p| Endpoint::new("--trace", p)));
    outputs::refuse_clashes(&[], &outs)?;
    let filters = gen::filters(args.like.into(), args.count as usize, args.seed);
    let set = written(&args.output, &gen::write_filters(&filters))?;
    let trace = match &args.trace {
        Some(path) => {
            let headers = gen::trace(&filters, args.trace_n as usize, trace_seed(args.seed));
            Some(written(path, &gen::write_trace(&headers))?)
        }
        None => None,
    };
    // Both files appear, or neither.
    set.commit()?;
    Ok(trace.map_or(Ok(()), Output::commit)?)
}

/// An output holding `text`, yet to be committed.
fn written(path: &Path, text: &str) -> Result<Output<Box<dyn Write + Send>>, Failure> {
    let mut out = outputs::open(path)?;
    out.write_text(text)?;
    Ok(out)
}

/// How the trace's filter# column compares with the answers.
#[derive(Debug, Default, Serialize)]
pub struct ExpectedCheck {
    /// Headers with a filter#.
    pub checked: u64,
    /// Answered by the filter the header was drawn from.
    pub same: u64,
    /// Answered by an earlier filter (it shadows the one drawn from).
    pub earlier: u64,
    /// Answered by a later filter or none, or drawn from a filter the set
    /// does not have: the trace does not belong to this set (or to this
    /// comparison: a trace drawn with flags, checked without them, stays
    /// consistent; the reverse need not).
    pub contradicting: u64,
}

impl ExpectedCheck {
    /// Counts one header: `index` its 0-based filter#, `answer` the
    /// 1-based first match (0: none), `filters` the set's size.
    fn count(&mut self, index: u32, answer: u32, filters: usize) {
        self.checked += 1;
        let own = u64::from(index) + 1;
        let answer = u64::from(answer);
        if own > filters as u64 || answer == 0 || answer > own {
            self.contradicting += 1;
        } else if answer == own {
            self.same += 1;
        } else {
            self.earlier += 1;
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub rules: String,
    pub trace: String,
    pub filters: usize,
    pub headers: usize,
    /// The fields compared: `5-tuple` or `5-tuple+flags`.
    pub fields: &'static str,
    /// How headers became packets (see weir_classbench::to_weir).
    pub encoding: &'static str,
    pub classified: bool,
    /// Compile plus engine (classifier) construction, milliseconds.
    pub build_ms: f64,
    pub classifier_bytes: usize,
    pub iterations: u32,
    /// Median over the timed passes.
    pub ns_per_packet: f64,
    pub packets_per_second: f64,
    pub min_ns_per_packet: f64,
    /// Headers with a matching filter.
    pub matched: u64,
    pub expected: ExpectedCheck,
}

/// Packets per `decide_batch` call in the timed loop.
const DECIDE_BATCH: usize = 256;

pub fn classbench(args: &ClassbenchArgs) -> Result<(), Failure> {
    if let Some(v) = &args.verdicts {
        let ins = [
            Endpoint::new("the filter set", &args.rules),
            Endpoint::new("the trace", &args.trace),
        ];
        outputs::refuse_clashes(&ins, &[Endpoint::new("--verdicts", v)])?;
    }
    let filters = read_filters(&args.rules)?;
    let headers = read_trace(&args.trace)?;
    let fields = if args.match_flags {
        if let Some(i) = headers.iter().position(|h| h.flags.is_none()) {
            return Err(Failure::Rules(format!(
                "{}:{}:1: --match-flags needs the flags column (sa da sp dp proto flags [extra...] filter#), and this line has none",
                args.trace.display(),
                i + 1
            )));
        }
        Fields::WithFlags
    } else {
        Fields::FiveTuple
    };

    let build = Instant::now();
    let compiled = Compiled::with_fields(&filters, fields)
        .map_err(|e| Failure::Runtime(format!("{}: {e}", args.rules.display())))?;
    let program = weir_engine::compile(
        &compiled.ruleset,
        &Names::default(),
        &CompileOptions::default(),
    )
    .map_err(|d| {
        Failure::Runtime(format!(
            "{}: the filters did not compile: {}",
            args.rules.display(),
            d.first().map_or_else(String::new, |d| d.message.clone())
        ))
    })?;
    let mut engine = Engine::builder(program).linear(args.linear).build();
    let build_ms = build.elapsed().as_secs_f64() * 1e3;

    let packets: Vec<_> = headers.iter().map(|h| compiled.packet(h)).collect();
    // Untimed first pass: the answers.
    let answers: Vec<u32> = packets
        .iter()
        .map(|p| compiled.filter_number(engine.decide(p).rule))
        .collect();
    let mut per_packet = Vec::with_capacity(args.iter as usize);
    let mut decisions = Vec::with_capacity(DECIDE_BATCH);
    for _ in 0..args.iter {
        let start = Instant::now();
        let mut sum = 0usize;
        // In batches, as a capture or queue delivers packets: the
        // classifier interleaves their walks (answers as one by one).
        for chunk in packets.chunks(DECIDE_BATCH) {
            engine.decide_batch(black_box(chunk), &mut decisions);
            for d in &decisions {
                sum = sum.wrapping_add(d.rule.unwrap_or(0));
            }
        }
        black_box(sum);
        let ns = start.elapsed().as_nanos() as f64;
        per_packet.push(ns / packets.len().max(1) as f64);
    }
    per_packet.sort_by(f64::total_cmp);
    let median = weir_stats::median(&per_packet).unwrap_or(0.0);

    let mut expected = ExpectedCheck::default();
    for (h, &a) in headers.iter().zip(&answers) {
        if let Some(index) = h.filter {
            expected.count(index, a, filters.len());
        }
    }

    if let Some(path) = &args.verdicts {
        let mut text = String::with_capacity(answers.len() * 6);
        let mut buf = itoa::Buffer::new();
        for a in &answers {
            text.push_str(buf.format(*a));
            text.push('\n');
        }
        written(path, &text)?.commit()?;
    }

    let report = Report {
        rules: args.rules.display().to_string(),
        trace: args.trace.display().to_string(),
        filters: filters.len(),
        headers: headers.len(),
        fields: fields.name(),
        encoding: compiled.encoding.name(),
        classified: engine.classified(),
        build_ms,
        classifier_bytes: engine.classifier_memory(),
        iterations: args.iter,
        ns_per_packet: median,
        packets_per_second: if median > 0.0 { 1e9 / median } else { 0.0 },
        min_ns_per_packet: per_packet[0],
        matched: answers.iter().filter(|&&a| a != 0).count() as u64,
        expected,
    };
    let text = if args.json {
        serde_json::to_string_pretty(&report).expect("report serialises") + "\n"
    } else {
        table(&report)
    };
    outputs::print(&text)
}

fn table(r: &Report) -> String {
    let e = &r.expected;
    let mut s = format!(
        "filters          {}\n\
         headers          {} ({} matched a filter)\n\
         fields           {}\n\
         encoding         {}\n\
         walk             {}\n\
         build            {:.1} ms, classifier {} KiB\n\
         ns/packet        {:.1} median of {} passes (nearest-rank; min {:.1})\n\
         packets/s        {:.0}\n",
        r.filters,
        r.headers,
        r.matched,
        r.fields,
        r.encoding,
        if r.classified { "classifier" } else { "linear" },
        r.build_ms,
        r.classifier_bytes / 1024,
        r.ns_per_packet,
        r.iterations,
        r.min_ns_per_packet,
        r.packets_per_second,
    );
    if e.checked > 0 {
        s += &format!(
            "trace filter#    {} checked: {} answered by their own filter, {} by an earlier one, {} contradicting\n",
            e.checked, e.same, e.earlier, e.contradicting
        );
    }
    s
}
