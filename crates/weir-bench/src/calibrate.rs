//! `weir calibrate`: the ipfw profile repeated on this machine.
//!
//! Synthetic rulesets of k rules × m micro-instructions, each rule failing
//! at its LAST instruction (so all m run), then the default rule, are timed
//! under both dispatch strategies over a small in-memory trace of identical
//! TCP packets. A least-squares fit of `ns = a + k·(h + m·c)` per
//! repetition gives h (ns per rule header + its bookkeeping) and c (ns per
//! simple micro-instruction); their median and IQR over repetitions are
//! reported. The m instructions are `iplen`/`ipttl` range tests (one pooled
//! range each), which the compiler keeps as instructions; `tcp` and
//! direction tests would be hoisted into the rule header.
//!
//! The peer, in the same run: libpcap's BPF interpreter (see [`crate::bpf`])
//! on the same packets, with expressions of n `tcp dst port N` clauses the
//! packets fail; `ns = a + b·bf_len` gives ns per BPF instruction (a failing
//! packet runs all but the accepting `ret`).

use crate::bpf;
use crate::clock::Clock;
use crate::fit::least_squares;
use serde::Serialize;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use weir_engine::{load, CompileOptions, DispatchKind, Engine, WalkKind};
use weir_io::PcapWriter;
use weir_rules::Names;
use weir_stats::Spread;
use weir_wire::{decode, Direction, LinkType, Packet};

/// ipfw's in-kernel figures (FreeBSD, 2009 hardware).
pub const IPFW_2009_HEADER_NS: f64 = 50.0;
pub const IPFW_2009_INSN_NS: f64 = 12.0;

#[derive(Clone, Debug)]
pub struct Options {
    pub ks: Vec<usize>,
    pub ms: Vec<usize>,
    pub reps: usize,
    pub packets: usize,
    /// Time spent per (k, m, dispatch) point per repetition.
    pub point_ms: u64,
    pub bpf_clauses: Vec<usize>,
    /// Measure libpcap too (needs cc and libpcap-dev).
    pub peer: bool,
    /// Where the harness and its trace are built.
    pub work_dir: PathBuf,
    /// Remove `work_dir` when the run ends (it was made for this run).
    pub temporary: bool,
}

impl Options {
    /// The sweep `quick` asks for, built in `work_dir`, or else in a fresh
    /// temporary directory removed when the run ends.
    pub fn new(quick: bool, work_dir: Option<PathBuf>) -> Options {
        let temporary = work_dir.is_none();
        let dir = work_dir.unwrap_or_else(|| {
            std::env::temp_dir().join(format!("weir-calibrate-{}", std::process::id()))
        });
        let mut opts = if quick {
            Options::quick(dir)
        } else {
            Options::full(dir)
        };
        opts.temporary = temporary;
        opts
    }

    /// The full sweep: about a minute.
    pub fn full(work_dir: PathBuf) -> Options {
        Options {
            ks: vec![1, 2, 4, 8, 16, 32, 64],
            ms: vec![1, 2, 4, 8],
            reps: 7,
            packets: 1024,
            point_ms: 40,
            bpf_clauses: vec![1, 2, 4, 8, 16, 32, 64],
            peer: true,
            work_dir,
            temporary: false,
        }
    }

    /// A small sweep for tests: a few seconds.
    pub fn quick(work_dir: PathBuf) -> Options {
        Options {
            ks: vec![1, 4, 16],
            ms: vec![1, 4],
            reps: 3,
            packets: 256,
            point_ms: 5,
            bpf_clauses: vec![1, 8, 64],
            peer: true,
            work_dir,
            temporary: false,
        }
    }
}

/// One timed point, the median over repetitions.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub k: usize,
    pub m: usize,
    pub ns_per_packet: f64,
}

/// The fit for one dispatch strategy.
#[derive(Clone, Debug, Serialize)]
pub struct Fit {
    pub dispatch: DispatchKind,
    /// a: per packet, whatever the rules (decide, class bits, default rule).
    pub intercept_ns: Spread,
    /// h: per rule header (and the loop's per-rule bookkeeping).
    pub header_ns: Spread,
    /// c: per simple micro-instruction.
    pub insn_ns: Spread,
    pub points: Vec<Point>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BpfPoint {
    pub clauses: usize,
    pub expr: String,
    pub bf_len: u32,
    /// Lines `tcpdump -d` prints for the expression (None: no tcpdump).
    pub tcpdump_d: Option<u32>,
    pub ns_per_packet: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BpfFit {
    /// "measured" or "skipped".
    pub status: &'static str,
    pub reason: Option<String>,
    pub intercept_ns: Spread,
    /// ns per BPF instruction (slope against bf_len).
    pub insn_ns: Spread,
    pub points: Vec<BpfPoint>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CalibrateReport {
    pub clock: Clock,
    pub packets: usize,
    pub reps: usize,
    /// How medians and quartiles are taken: `weir_stats::METHOD`.
    pub quantiles: &'static str,
    pub ks: Vec<usize>,
    pub ms: Vec<usize>,
    pub weir: Vec<Fit>,
    pub bpf: BpfFit,
    pub ipfw_2009: Ipfw2009,
    pub seconds: f64,
}

#[derive(Clone, Copy, Debug, Serialize)]
pub struct Ipfw2009 {
    pub header_ns: f64,
    pub insn_ns: f64,
}

/// k rules of m instructions; every packet of [`frames`] fails each rule
/// at its last instruction (`ipttl 1`; the packets have TTL 64).
pub fn synthetic_rules(k: usize, m: usize) -> String {
    let mut s = String::new();
    for r in 0..k {
        s.push_str(&format!("{} allow tcp from any to any", 100 + 10 * r));
        for j in 0..m.saturating_sub(1) {
            s.push_str(if j % 2 == 0 {
                " iplen 0-65535"
            } else {
                " ipttl 0-255"
            });
        }
        s.push_str(" ipttl 1\n");
    }
    s
}

/// `ip and (tcp dst port 1000 or … )` with n clauses; the packets go to
/// port 80, so they fail every clause.
pub fn bpf_expr(n: usize) -> String {
    let clauses: Vec<String> = (0..n)
        .map(|i| format!("tcp dst port {}", 1000 + i))
        .collect();
    format!("ip and ({})", clauses.join(" or "))
}

/// `n` Ethernet/IPv4/TCP ACK frames, 10.0.0.1:(1024+i) → 10.0.0.2:80,
/// TTL 64, no payload.
pub fn frames(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let sport = 1024 + (i % 60_000) as u16;
            let mut f = vec![
                2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, // Ethernet
                0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, // IPv4
            ];
            f.extend_from_slice(&sport.to_be_bytes());
            f.extend_from_slice(&[
                0, 80, 0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0,
            ]);
            f
        })
        .collect()
}

fn engine(rules: &str, dispatch: DispatchKind) -> Engine {
    let prog = load(rules, &Names::default(), &CompileOptions::default())
        .expect("synthetic rules compile");
    // Calibration measures the rule walk itself: ipfw's loop, no classifier.
    Engine::builder(prog)
        .dispatch(dispatch)
        .walk(WalkKind::Linear)
        .build()
}

/// ns per packet: rounds over `packets` for about `span`, median of three
/// batches, after a warm-up round. Amortised: no clock inside the loop.
fn time_engine(e: &mut Engine, packets: &[Packet], span: Duration) -> f64 {
    let round = |e: &mut Engine| {
        for p in packets {
            black_box(e.decide(black_box(p)));
        }
    };
    round(e);
    let t = Instant::now();
    round(e);
    let one = t.elapsed().max(Duration::from_nanos(1));
    let rounds = ((span / 3).as_secs_f64() / one.as_secs_f64())
        .ceil()
        .max(1.0) as u32;
    let mut batches: Vec<f64> = (0..3)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..rounds {
                round(e);
            }
            t.elapsed().as_nanos() as f64 / (rounds as f64 * packets.len() as f64)
        })
        .collect();
    batches.sort_by(f64::total_cmp);
    weir_stats::median(&batches).unwrap_or(0.0)
}

/// Runs the sweep; `progress` gets a line per repetition.
pub fn run(opts: &Options, progress: &mut dyn FnMut(&str)) -> CalibrateReport {
    let started = Instant::now();
    let clock = Clock::calibrate();
    let raw = frames(opts.packets.max(1));
    let packets: Vec<Packet> = raw
        .iter()
        .map(|f| {
            let mut p = decode(LinkType::ETHERNET, f, f.len() as u32);
            p.direction = Direction::In;
            p
        })
        .collect();
    let span = Duration::from_millis(opts.point_ms.max(1));
    let dispatches = [DispatchKind::Match, DispatchKind::Table];
    let grid: Vec<(usize, usize)> = opts
        .ks
        .iter()
        .flat_map(|&k| opts.ms.iter().map(move |&m| (k, m)))
        .collect();
    // Engines are compiled once; each repetition times every point under
    // both dispatches, interleaved, so load hits them alike.
    let mut engines: Vec<Vec<Engine>> = dispatches
        .iter()
        .map(|&d| {
            grid.iter()
                .map(|&(k, m)| engine(&synthetic_rules(k, m), d))
                .collect()
        })
        .collect();
    // ns[dispatch][point][rep]
    let mut ns = vec![vec![Vec::new(); grid.len()]; dispatches.len()];
    let mut fits: Vec<Vec<[f64; 3]>> = vec![Vec::new(); dispatches.len()];
    for rep in 0..opts.reps.max(1) {
        for (pi, _) in grid.iter().enumerate() {
            for (di, per_d) in engines.iter_mut().enumerate() {
                ns[di][pi].push(time_engine(&mut per_d[pi], &packets, span));
            }
        }
        for di in 0..dispatches.len() {
            let x: Vec<Vec<f64>> = grid
                .iter()
                .map(|&(k, m)| vec![1.0, k as f64, (k * m) as f64])
                .collect();
            let y: Vec<f64> = (0..grid.len()).map(|pi| ns[di][pi][rep]).collect();
            if let Some(b) = least_squares(&x, &y) {
                fits[di].push([b[0], b[1], b[2]]);
            }
        }
        progress(&format!(
            "weir: repetition {}/{} done",
            rep + 1,
            opts.reps.max(1)
        ));
    }
    let weir = dispatches
        .iter()
        .enumerate()
        .map(|(di, &d)| {
            let col = |j: usize| Spread::of(&fits[di].iter().map(|f| f[j]).collect::<Vec<_>>());
            Fit {
                dispatch: d,
                intercept_ns: col(0),
                header_ns: col(1),
                insn_ns: col(2),
                points: grid
                    .iter()
                    .enumerate()
                    .map(|(pi, &(k, m))| Point {
                        k,
                        m,
                        ns_per_packet: Spread::of(&ns[di][pi]).median,
                    })
                    .collect(),
            }
        })
        .collect();
    let bpf = if opts.peer {
        measure_bpf(opts, &raw, progress)
    } else {
        skipped("not asked for (--no-peer)".into())
    };
    if opts.temporary {
        let _ = std::fs::remove_dir_all(&opts.work_dir);
    }
    CalibrateReport {
        clock,
        packets: packets.len(),
        reps: opts.reps.max(1),
        quantiles: weir_stats::METHOD,
        ks: opts.ks.clone(),
        ms: opts.ms.clone(),
        weir,
        bpf,
        ipfw_2009: Ipfw2009 {
            header_ns: IPFW_2009_HEADER_NS,
            insn_ns: IPFW_2009_INSN_NS,
        },
        seconds: started.elapsed().as_secs_f64(),
    }
}

fn skipped(reason: String) -> BpfFit {
    BpfFit {
        status: "skipped",
        reason: Some(reason),
        intercept_ns: Spread::default(),
        insn_ns: Spread::default(),
        points: Vec::new(),
    }
}

fn measure_bpf(opts: &Options, raw: &[Vec<u8>], progress: &mut dyn FnMut(&str)) -> BpfFit {
    let harness = match bpf::build(&opts.work_dir) {
        Ok(h) => h,
        Err(e) => return skipped(e),
    };
    let trace = opts.work_dir.join("calibrate.pcap");
    let written = std::fs::File::create(&trace).and_then(|f| {
        let mut w = PcapWriter::new(f, LinkType::ETHERNET, 65535, false)?;
        for (i, f) in raw.iter().enumerate() {
            w.write_frame(i as u64 * 1000, f.len() as u32, f)?;
        }
        w.flush()
    });
    if let Err(e) = written {
        return skipped(format!("{}: {e}", trace.display()));
    }
    let exprs: Vec<String> = opts.bpf_clauses.iter().map(|&n| bpf_expr(n)).collect();
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); exprs.len()];
    let mut lens = vec![0u32; exprs.len()];
    let mut slopes = Vec::new();
    for rep in 0..opts.reps.max(1) {
        let runs = match bpf::run(&harness, &trace, opts.point_ms.max(1), &exprs) {
            Ok(r) => r,
            Err(e) => return skipped(format!("harness: {e}")),
        };
        if let Some(bad) = runs.iter().find(|r| r.matched != 0) {
            return skipped(format!(
                "harness: {} matched {} packets",
                bad.expr, bad.matched
            ));
        }
        for (i, r) in runs.iter().enumerate() {
            ns[i].push(r.ns_per_packet);
            lens[i] = r.bf_len;
        }
        let x: Vec<Vec<f64>> = runs
            .iter()
            .map(|r| vec![1.0, f64::from(r.bf_len)])
            .collect();
        let y: Vec<f64> = runs.iter().map(|r| r.ns_per_packet).collect();
        if let Some(b) = least_squares(&x, &y) {
            slopes.push([b[0], b[1]]);
        }
        progress(&format!(
            "libpcap: repetition {}/{} done",
            rep + 1,
            opts.reps.max(1)
        ));
    }
    let col = |j: usize| Spread::of(&slopes.iter().map(|f| f[j]).collect::<Vec<_>>());
    BpfFit {
        status: "measured",
        reason: None,
        intercept_ns: col(0),
        insn_ns: col(1),
        points: opts
            .bpf_clauses
            .iter()
            .enumerate()
            .map(|(i, &n)| BpfPoint {
                clauses: n,
                expr: if n <= 2 {
                    exprs[i].clone()
                } else {
                    format!("ip and ({n} × tcp dst port N, or-ed)")
                },
                bf_len: lens[i],
                tcpdump_d: bpf::tcpdump_d_len(&exprs[i]),
                ns_per_packet: Spread::of(&ns[i]).median,
            })
            .collect(),
    }
}

impl CalibrateReport {
    /// Why the libpcap peer was not measured, if it was not.
    pub fn peer_skipped(&self) -> Option<&str> {
        match self.bpf.status {
            "measured" => None,
            _ => Some(self.bpf.reason.as_deref().unwrap_or("")),
        }
    }

    /// The cost table for people, beside ipfw 2009 and libpcap.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "fit: ns/packet = a + k·(h + m·c); k in {:?} rules, m in {:?} instructions; {} packets in memory; {} repetitions; median [IQR], {}",
            self.ks, self.ms, self.packets, self.reps, self.quantiles
        );
        let _ = writeln!(
            s,
            "\n{:<30} {:>22} {:>22} {:>16}",
            "", "h: header+action", "c: micro-instruction", "a: per packet"
        );
        let cell = |sp: &Spread| format!("{:.2} ns [{:.2}]", sp.median, sp.iqr);
        for f in &self.weir {
            let _ = writeln!(
                s,
                "{:<30} {:>22} {:>22} {:>16}",
                format!("weir, {:?} dispatch", f.dispatch).to_lowercase(),
                cell(&f.header_ns),
                cell(&f.insn_ns),
                format!("{:.1} ns", f.intercept_ns.median)
            );
        }
        match self.bpf.status {
            "measured" => {
                let _ = writeln!(
                    s,
                    "{:<30} {:>22} {:>22} {:>16}",
                    "libpcap BPF interpreter",
                    "-",
                    format!("{} /BPF insn", cell(&self.bpf.insn_ns)),
                    format!("{:.1} ns", self.bpf.intercept_ns.median)
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    "{:<30} skipped: {}",
                    "libpcap BPF interpreter",
                    self.bpf.reason.as_deref().unwrap_or("")
                );
            }
        }
        let _ = writeln!(
            s,
            "{:<30} {:>22} {:>22} {:>16}",
            "ipfw, 2009, in kernel",
            format!("{:.0} ns", self.ipfw_2009.header_ns),
            format!("{:.0} ns", self.ipfw_2009.insn_ns),
            "-"
        );
        let _ = writeln!(s, "\nns/packet, weir (median over repetitions):");
        let _ = write!(s, "{:>6} {:>4}", "k", "m");
        for f in &self.weir {
            let _ = write!(s, " {:>10}", format!("{:?}", f.dispatch).to_lowercase());
        }
        let _ = writeln!(s);
        if let Some(first) = self.weir.first() {
            for (i, p) in first.points.iter().enumerate() {
                let _ = write!(s, "{:>6} {:>4}", p.k, p.m);
                for f in &self.weir {
                    let _ = write!(s, " {:>10.1}", f.points[i].ns_per_packet);
                }
                let _ = writeln!(s);
            }
        }
        if !self.bpf.points.is_empty() {
            let _ = writeln!(s, "\nns/packet, libpcap pcap_offline_filter:");
            let _ = writeln!(
                s,
                "{:>8} {:>7} {:>10} {:>10}",
                "clauses", "bf_len", "tcpdump -d", "ns"
            );
            for p in &self.bpf.points {
                let d = p.tcpdump_d.map_or("-".into(), |n| n.to_string());
                let _ = writeln!(
                    s,
                    "{:>8} {:>7} {:>10} {:>10.1}",
                    p.clauses, p.bf_len, d, p.ns_per_packet
                );
            }
        }
        let _ = writeln!(
            s,
            "\nclock: {} ({:.3} ns/tick, one read {:.1} ns); {:.1} s",
            self.clock.kind, self.clock.ns_per_tick, self.clock.overhead_ns, self.seconds
        );
        s
    }
}
