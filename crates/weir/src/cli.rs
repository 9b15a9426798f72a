//! Command-line flags, each defined once with its help.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

const ABOUT: &str = "weir: a user-space packet filter that measures itself.

Reads ipfw-style rulesets, compiles each rule to micro-instructions and
decides packets first-match, with per-rule counters, skipto, call/return,
count and log.";

const EXAMPLES: &str = "Examples:
  weir demo                                       bundled ruleset over a generated trace
  weir check rules.conf                           exit 0, or 2 with file:line:col errors
  weir run rules.conf -r in.pcap --counters       replay; counters as `ipfw show` prints them
  weir run rules.conf -r in.pcap -w pass.pcap --drop-out drop.pcap
  weir run rules.conf -r in.pcapng --annotate out.pcapng   per-packet comment: rule 300 deny
  weir run rules.conf -r in.pcap --verdicts v.csv          index,rule,action,note per packet
  weir explain rules.conf -r in.pcap --packet 17  which rules and instructions ran, and why
  weir gen -n 1000000 --seed 7 -o trace.pcap      reproducible realistic trace
  weir run ppp.conf --label isp --filter-set in --myaddr 192.0.2.1 -r in.pcap
                                                  FreeBSD ppp filters (a ppp.conf or `set filter`
                                                  lines), one set

Exit codes: 0 ok (also when a pipe we write to is closed), 1 runtime error
(unreadable or corrupt capture, an output that cannot be written), 2 usage or
ruleset error (also an output that is an input or another output).";

#[derive(Parser, Debug)]
#[command(name = "weir", version, about = ABOUT, after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Find rules no packet can reach, that contradict themselves, or change no decision.
    Lint(crate::analyse::LintArgs),
    /// Find one packet that fits a match and gets a decision, or prove none exists.
    Search(crate::analyse::SearchArgs),
    /// Every class of packets two rulesets decide differently, with a witness each.
    Diff(crate::analyse::DiffArgs),
    /// Run the bundled demo ruleset over a generated trace and show the counters.
    Demo(DemoArgs),
    /// Parse and compile a ruleset; print errors as file:line:col with a caret.
    Check(CheckArgs),
    /// Replay a capture through a ruleset: verdicts, split files, counters.
    Run(RunArgs),
    /// Show which rules and instructions ran for one packet, and why.
    Explain(ExplainArgs),
    /// Write a seeded, reproducible trace of realistic traffic (pcap).
    Gen(GenArgs),
    /// Measure what filtering costs: replay a trace in memory many times.
    Bench(crate::bench::BenchArgs),
    /// Repeat the ipfw profile: ns per rule header and per micro-instruction.
    Calibrate(crate::bench::CalibrateArgs),
    /// Measure the host's UDP/IP stack processing time, NetDyn-style.
    Probe(crate::probe::ProbeArgs),
    /// Convert a rule set from another format into weir rules.
    Import(crate::classbench::ImportArgs),
    /// Evaluate a ClassBench filter set on a header trace; report ns/packet.
    Classbench(crate::classbench::ClassbenchArgs),
    /// Write a seeded ClassBench-format filter set (and header trace).
    GenRules(crate::classbench::GenRulesArgs),
    /// Filter live packets from an interface (AF_PACKET ring): counters, pass/drop files.
    Capture(CaptureArgs),
    /// Time packet-socket set-up three ways (the 2014 synchronize_net() measurement).
    Sockbench(crate::sockbench::SockbenchArgs),
    /// Filter live traffic on an NFQUEUE: one verdict per packet, SIGHUP reloads.
    Inline(InlineArgs),
}

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  weir demo --count 1000000 --dispatch match")]
pub struct DemoArgs {
    /// Packets to generate.
    #[arg(short = 'n', long, default_value_t = 200_000)]
    pub count: u64,
    /// Generator seed.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Print the summary and counters as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    #[arg(long, value_enum, default_value_t = DispatchArg::Table)]
    pub dispatch: DispatchArg,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  weir check rules.conf\n  weir check --print rules.conf    # canonical form, one rule per line\n  weir check --stats rules.conf    # classifier build time, memory, candidates per packet\n  weir check --stats --json rules.conf"
)]
pub struct CheckArgs {
    /// Ruleset file (ipfw syntax, ppp `set filter` lines or a ppp.conf), or - for stdin.
    pub rules: PathBuf,
    /// Print the compiled ruleset in canonical form.
    #[arg(long)]
    pub print: bool,
    /// Print the classifier's kind, build time and memory (for the tries,
    /// the automata and bit blocks it took and the rules every packet must
    /// try), and the average number of candidate rules per packet over a
    /// generated trace (`weir gen`'s traffic, seed 7, 10,000 packets).
    #[arg(long, conflicts_with = "print")]
    pub stats: bool,
    /// With --stats: print the figures as one JSON object (`parts` only for
    /// the tries; memory in bytes).
    #[arg(long, requires = "stats")]
    pub json: bool,
    #[command(flatten)]
    pub tables: TableArgs,
    #[command(flatten)]
    pub ppp: crate::ppp::PppArgs,
}

/// Options that shape how a ruleset is compiled and packets are seen.
#[derive(Args, Debug, Clone)]
pub struct EngineArgs {
    /// The implicit rule 65535 allows instead of denying.
    #[arg(long)]
    pub default_allow: bool,
    /// Opcode dispatch: a `match`, or a table of function pointers.
    #[arg(long, value_enum, default_value_t = DispatchArg::Table)]
    pub dispatch: DispatchArg,
    /// Walk every rule in order instead of the classifier's candidate
    /// rules. The verdicts and counters are identical; only the cost differs.
    #[arg(long)]
    pub linear: bool,
    /// Vector lanes for the classifier's automata on large rulesets: auto
    /// (AVX-512, 16 walks a vector, where the CPU has it; else AVX2, 8
    /// walks a vector; else scalar; a packet decided alone, as `weir bench`
    /// decides them, walks in scalar code, which is faster for one packet's
    /// few walks), avx512, avx2 (every walk in lanes), or off (scalar). Up to
    /// 1,024 rules the bit sets are ANDed in AVX-512 vectors with auto or
    /// avx512, else in scalar code; rulesets whose address classes the bit
    /// sets would AND apart (fw-like) take the automata where lanes are
    /// given. The verdicts and counters are
    /// identical; only the cost differs.
    #[arg(long, default_value = "auto", value_name = "WALK", value_parser = parse_simd)]
    pub simd: weir_engine::Simd,
    /// Verdict for non-IP frames (ARP, LLDP, …), which ipfw never sees.
    #[arg(long, value_enum, default_value_t = VerdictArg::Pass, value_name = "VERDICT")]
    pub non_ip: VerdictArg,
    /// Verdict for frames that claim IP but cannot be decoded.
    #[arg(long, value_enum, default_value_t = VerdictArg::Drop, value_name = "VERDICT")]
    pub malformed: VerdictArg,
    /// This host's addresses, for `me` and `me6` (comma-separated); rules
    /// that name `me` need it.
    #[arg(long, value_name = "ADDR,...", value_delimiter = ',')]
    pub me: Vec<std::net::IpAddr>,
    /// Set an ipfw tunable, overriding the ruleset: one_pass (0: a packet
    /// back from pipe, queue, netgraph, nat or divert goes on at the next
    /// rule; 1, the default: it is accepted there), default_to_accept,
    /// net.link.ether.ipfw, dyn_max, dyn_syn_lifetime, dyn_ack_lifetime,
    /// dyn_fin_lifetime, dyn_rst_lifetime, dyn_udp_lifetime,
    /// dyn_short_lifetime (seconds). Repeatable.
    #[arg(long, value_name = "NAME=VALUE", value_parser = parse_sysctl)]
    pub sysctl: Vec<(String, u32)>,
    /// The FIB (routing table) packets start in, for `fib N` rules
    /// (`setfib` changes it for later rules).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=0x7fff))]
    pub fib: u16,
    /// Seed of `prob` rules' draws: the same seed and capture, the same
    /// verdicts.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Leave out the rules of these sets (0..30), as `ipfw set disable N`
    /// does (comma-separated, repeatable).
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = clap::value_parser!(u8).range(0..=30))]
    pub disable_set: Vec<u8>,
    /// Also pass Ethernet frames through the rules at layer 2 (before the
    /// IP pass coming in, after it going out), as FreeBSD does with
    /// net.link.ether.ipfw=1: `mac`, `mac-type` and `layer2` rules see them
    /// there. On by itself for a ruleset that uses those keywords.
    #[arg(long)]
    pub layer2: bool,
    #[command(flatten)]
    pub tables: TableArgs,
    #[command(flatten)]
    pub ppp: crate::ppp::PppArgs,
}

/// Lookup tables from files.
#[derive(Args, Debug, Clone, Default)]
pub struct TableArgs {
    /// Load address table NAME (starting with a letter) from FILE: one
    /// prefix per line with an optional value (`10.0.0.0/8 7`), `#`
    /// comments. Rules use it as `table(NAME)` or `lookup src-ip|dst-ip
    /// NAME`; `table NAME add` lines in the ruleset add to it. Repeatable.
    #[arg(long = "table", value_name = "NAME=FILE", value_parser = parse_table_spec)]
    pub specs: Vec<(String, PathBuf)>,
}

fn parse_table_spec(s: &str) -> Result<(String, PathBuf), String> {
    let (name, file) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=FILE, found '{s}'"))?;
    if file.is_empty() {
        return Err("no file after '=' (expected NAME=FILE)".into());
    }
    let ok = name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !ok {
        return Err(format!("bad table name '{name}'"));
    }
    Ok((name.to_owned(), PathBuf::from(file)))
}

fn parse_sysctl(s: &str) -> Result<(String, u32), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=VALUE, found '{s}'"))?;
    let name = name.strip_prefix("net.inet.ip.fw.").unwrap_or(name);
    let settings = || {
        weir_rules::STATE_SETTINGS
            .iter()
            .chain(weir_rules::OTHER_SETTINGS)
    };
    if !settings().any(|(n, _)| *n == name) {
        let known: Vec<_> = settings().map(|(n, _)| *n).collect();
        return Err(format!(
            "unknown tunable '{name}' (known: {})",
            known.join(", ")
        ));
    }
    let value: u32 = value
        .parse()
        .map_err(|_| format!("'{value}' is not a number"))?;
    if let Some(why) = weir_rules::setting_error(name, value) {
        return Err(why);
    }
    if weir_rules::OTHER_SETTINGS.iter().any(|(n, _)| *n == name) && value > 1 {
        return Err(format!("{name} is 0 or 1"));
    }
    Ok((name.to_owned(), value))
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  weir run rules.conf -r in.pcap --counters
  weir run rules.conf -r in.pcap -w pass.pcap --drop-out drop.pcap
  tcpdump -w - -i eth0 | weir run rules.conf -r - --json
  weir run rules.conf -r in.pcapng --annotate out.pcapng
    (Wireshark: frame.comment contains \"rule 300 \")
  weir run stateful.rules -r in.pcap --states --sysctl dyn_udp_lifetime=30
    (keep-state: states age by the packets' timestamps)")]
pub struct RunArgs {
    /// Ruleset file (ipfw syntax, ppp `set filter` lines or a ppp.conf).
    pub rules: PathBuf,
    /// Capture to read (pcap or pcapng), or - for stdin.
    #[arg(short = 'r', value_name = "FILE")]
    pub read: PathBuf,
    /// Stop after this many packets.
    #[arg(short = 'c', value_name = "COUNT")]
    pub count: Option<u64>,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub context: ContextArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// The outputs every filtering mode (`run`, `capture`, `inline`) offers,
/// in the same formats.
#[derive(Args, Debug, Clone, Default)]
pub struct OutputArgs {
    /// Write passed packets here, in the input's format (- for stdout).
    #[arg(short = 'w', value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Write dropped packets here, in the input's format.
    #[arg(long, value_name = "FILE")]
    pub drop_out: Option<PathBuf>,
    /// Write every packet to a pcapng whose comments name the deciding rule.
    #[arg(long, value_name = "FILE")]
    pub annotate: Option<PathBuf>,
    /// Write one CSV line per packet: index,rule,action,note; a name
    /// ending in .parquet gets a Parquet table with the packet's fields too.
    #[arg(long, value_name = "FILE")]
    pub verdicts: Option<PathBuf>,
    /// Print per-rule counters as `ipfw show` does.
    #[arg(long)]
    pub counters: bool,
    /// Print the summary and per-rule counters as JSON (nft -j style).
    #[arg(long)]
    pub json: bool,
    /// List the rules that matched no packet.
    #[arg(long)]
    pub unmatched: bool,
    /// List the dynamic states alive at the end, as `ipfw -d show` does.
    #[arg(long)]
    pub states: bool,
    /// Where `log` rules write (default: stderr).
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Log line format.
    #[arg(long, value_enum, default_value_t = LogFormatArg::Text)]
    pub log_format: LogFormatArg,
    /// No closing summary on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// What a capture file may not say about its packets; live sources know.
#[derive(Args, Debug, Clone, Default)]
pub struct ContextArgs {
    /// Direction of packets whose capture does not say (pcapng flags and
    /// Linux SLL headers do). Without it, `--me` decides (to me: in, from
    /// me: out), and anything else is in.
    #[arg(long, value_enum)]
    pub dir: Option<DirArg>,
    /// Interface name for captures that do not name theirs (all of pcap).
    #[arg(long, value_name = "NAME")]
    pub iface: Option<String>,
}

const CAPTURE_EXAMPLES: &str = "Examples:
  weir capture -i eth0 rules.conf --counters            until Ctrl-C; then `ipfw show` counters
  weir capture -i eth0 rules.conf -c 10000 -w pass.pcap --drop-out drop.pcap
  weir capture -i eth0 rules.conf --workers 2 --json    two threads, flows spread by PACKET_FANOUT
  weir capture -i eth0 rules.conf --metrics 127.0.0.1:9618
                                      Prometheus metrics at http://127.0.0.1:9618/metrics
  weir capture -i eth0 rules.conf --immediate -Z nobody TPACKET_V2 for latency; run as nobody
  weir capture -i eth0 rules.conf -c 1000 --verdicts v.csv --annotate a.pcapng --states
                                      the same outputs as `weir run`

Needs root (or CAP_NET_RAW). The closing lines on stderr are tcpdump's:
packets read and their verdicts, packets received by filter, packets
dropped by kernel. Direction comes from the kernel (outgoing or not),
the interface is the one captured on. On loopback each packet is seen once
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
    /// Stop after this many packets (exactly, across workers).
    #[arg(short = 'c', value_name = "COUNT")]
    pub count: Option<u64>,
    /// Stop after this long (10s, 500ms, 2m; a bare number is seconds).
    #[arg(long, value_name = "TIME", value_parser = crate::duration::parse)]
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
    /// Serve Prometheus metrics at http://ADDR/metrics (every worker's
    /// counters summed; the same series as `weir inline --metrics`).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Steer traffic into the queue with nftables, then start weir:
  nft add table inet weir
  nft add chain inet weir forward '{ type filter hook forward priority 0; }'
  nft add rule inet weir forward queue num 0 bypass
  weir inline --queue 0 --metrics 127.0.0.1:9617 rules.conf

`bypass` lets traffic through while no program is bound to the queue;
without it, the kernel drops it. Remove the steering with
  nft delete table inet weir

Reload the ruleset with `kill -HUP <pid>`: the new file is compiled off the
packet path and swapped in between batches; a file with errors is reported
(file:line:col) and the running ruleset stays. Counters of rules whose
number and text are unchanged carry over; the totals always do.

Examples:
  weir inline --queue 0 rules.conf
  weir inline --queue 3 --fail-open --metrics 127.0.0.1:9617 rules.conf
  weir inline --queue 0 -c 1000 --json rules.conf   stop after 1000 packets
  weir inline --queue 0 --verdicts v.csv --annotate a.pcapng --drop-out drop.pcap rules.conf
                                    the same outputs as `weir run` (raw IP packets)"
)]
pub struct InlineArgs {
    /// Ruleset file (ipfw syntax); SIGHUP reads it again.
    pub rules: PathBuf,
    /// NFQUEUE number to bind (as in `queue num N`).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub queue: u16,
    /// When the queue is full, the kernel accepts packets instead of dropping them.
    #[arg(long)]
    pub fail_open: bool,
    /// Packets the kernel holds waiting for a verdict.
    #[arg(long, default_value_t = 4096, value_name = "PACKETS")]
    pub queue_len: u32,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Stop after this many packets (those already queued still get verdicts).
    #[arg(short = 'c', value_name = "COUNT")]
    pub count: Option<u64>,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  weir explain rules.conf -r in.pcap --packet 17")]
pub struct ExplainArgs {
    /// Ruleset file (ipfw syntax, ppp `set filter` lines or a ppp.conf).
    pub rules: PathBuf,
    /// Capture to read, or - for stdin.
    #[arg(short = 'r', value_name = "FILE")]
    pub read: PathBuf,
    /// Packet number, 1-based as tcpdump and Wireshark count.
    #[arg(long, value_name = "N")]
    pub packet: u64,
    #[command(flatten)]
    pub context: ContextArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  weir gen -n 1000000 --seed 7 -o trace.pcap\n  weir gen -n 100 -o - | tcpdump -nr -"
)]
pub struct GenArgs {
    /// Number of packets.
    #[arg(short = 'n', long, default_value_t = 100_000)]
    pub count: u64,
    /// Seed: the same seed and count give the same bytes.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Output pcap file, or - for stdout.
    #[arg(short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// Malformed frames per thousand.
    #[arg(long, default_value_t = 2)]
    pub malformed_per_mille: u32,
    /// Write nanosecond timestamps (default microsecond, as tcpdump).
    #[arg(long)]
    pub nanos: bool,
}

/// `--simd WALK`: a walk this CPU runs (asking for one it lacks is a usage
/// error, not a silent fallback).
pub fn parse_simd(word: &str) -> Result<weir_engine::Simd, String> {
    use weir_engine::Simd;
    let names = || Simd::ALL.map(Simd::name).join(", ");
    let simd = Simd::ALL
        .into_iter()
        .find(|s| s.name() == word)
        .ok_or_else(|| format!("expected one of {}", names()))?;
    if !simd.runs_here() {
        let here: Vec<_> = Simd::here().into_iter().map(Simd::name).collect();
        let here = if here.is_empty() {
            "none".to_string()
        } else {
            here.join(", ")
        };
        return Err(format!(
            "this CPU cannot run it (it runs: {here}; or auto, off)"
        ));
    }
    Ok(simd)
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum DispatchArg {
    Match,
    Table,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum VerdictArg {
    Pass,
    Drop,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum DirArg {
    In,
    Out,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq, Default)]
pub enum LogFormatArg {
    #[default]
    Text,
    Json,
}
