//! The ClassBench commands' flags: `import classbench`, `classbench`,
//! `gen-rules`.

use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;
use weir_classbench::gen::Kind;

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
    /// Vector lanes for the automata: auto (AVX-512 where the CPU has it,
    /// else AVX2, else scalar), avx512, avx2 or off (scalar); up to 1,024
    /// filters, the bit sets' AND in AVX-512 (auto, avx512) or scalar
    /// code, except that sets whose address classes are ANDed apart
    /// (fw-like) take the automata where lanes are given. The same
    /// answers, to compare the costs.
    #[arg(long, default_value = "auto", value_name = "WALK", value_parser = crate::cli::parse_simd)]
    pub simd: weir_engine::Simd,
    /// Timed passes over the trace (the median is reported, and the
    /// fastest, mean and slowest pass).
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
