//! `weir bench`: replay packets held in memory through an engine, many
//! times, and report what deciding them costs.
//!
//! Phases, each over the same `Vec<Packet>` (decoded once, before timing):
//! 1. warm-up: one round, untimed;
//! 2. throughput: whole rounds timed with `Instant`, no observer, no clock
//!    reads inside the loop; packets/s is the median round;
//! 3. per-packet cost: one [`ticks`] read after each packet (so each sample
//!    holds one packet plus one clock read; the clock's overhead is
//!    reported beside it);
//! 4. work: rules and micro-instructions tried per packet ([`CostCounter`]);
//! 5. per-rule time: [`RuleTimer`] (one clock read per rule tried; its
//!    overhead is subtracted per read before shares are computed).
//!
//! No phase makes a system call inside its timed loop: the packets are in
//! memory, a `log` rule writes into a buffer in front of `io::sink()` (or
//! none), and nothing formats text. That is by construction, not counted.

use crate::clock::{ticks, Clock};
use crate::observe::RuleTimer;
use serde::Serialize;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};
use weir_engine::{CostCounter, Engine, LogFormat, Logger};
use weir_rules::Names;
use weir_stats::cdf::{self, Line, Panel, Scale};
use weir_stats::{median, quantile};
use weir_wire::Packet;

/// How long to run.
#[derive(Clone, Copy, Debug)]
pub enum Length {
    Rounds(u32),
    Duration(Duration),
}

#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub length: Length,
    /// At most this many per-packet samples are kept (rounds × packets).
    pub max_samples: usize,
}

impl Length {
    /// For `duration` if given, else `rounds` (at least one).
    pub fn of(duration: Option<Duration>, rounds: u32) -> Length {
        match duration {
            Some(d) => Length::Duration(d),
            None => Length::Rounds(rounds.max(1)),
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            length: Length::Rounds(10),
            max_samples: 16 << 20,
        }
    }
}

/// Percentiles of per-packet cost, in ns.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Percentiles {
    pub p20: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// One rule's work and time.
#[derive(Clone, Debug, Serialize)]
pub struct RuleCost {
    pub number: u16,
    pub text: String,
    /// Times the rule was tried (its header at least), per round.
    pub tried: u64,
    pub matched: u64,
    /// Share of the time charged to rules (0..1).
    pub share: f64,
    /// ns per try, the clock's overhead subtracted.
    pub ns_per_try: f64,
}

/// Everything `weir bench` reports (`--json` prints this).
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub dispatch: weir_engine::DispatchKind,
    /// Frames in the trace (IP or not), each decided once per round.
    pub packets: u64,
    pub ip_packets: u64,
    pub rules: usize,
    /// Throughput rounds timed.
    pub rounds: u32,
    pub seconds: f64,
    /// Median round: frames decided per second.
    pub packets_per_second: f64,
    /// 1e9 / packets_per_second: ns per packet with no clock in the loop.
    pub ns_per_packet_mean: f64,
    /// Per-packet samples (one clock read each; see `clock.overhead_ns`).
    pub ns_per_packet: Percentiles,
    /// How percentiles and medians are taken: `weir_stats::METHOD`.
    pub quantiles: &'static str,
    pub samples: usize,
    /// Rules tried (header checked) and micro-instructions run, per packet.
    pub rules_per_packet: f64,
    pub insns_per_packet: f64,
    pub clock: Clock,
    /// System calls made inside the timed loops: 0 by construction.
    pub syscalls_in_timed_loop: u64,
    pub per_rule: Vec<RuleCost>,
    /// Sorted per-packet samples in ns, for the CDF plot (not serialised).
    #[serde(skip)]
    pub sorted_ns: Vec<f32>,
}

/// Packets per `decide_batch` call in [`timed_passes`]: two of the
/// engine's chunks (`weir_engine::classify::BATCH`), the first asking for
/// the next one's records while it is decided (a trace's records, decoded
/// beforehand, are not in the cache as a capture's just-decoded frames
/// are); 24 KiB of decisions.
const DECIDE_BATCH: usize = 1024;

/// `weir classbench`'s loop: `passes` timed passes over `packets` in
/// batches, as a capture or queue delivers them (the classifier
/// interleaves their walks when its trie is large); ns per packet of each
/// pass, sorted.
pub fn timed_passes(engine: &mut Engine, packets: &[Packet], passes: u32) -> Vec<f64> {
    let mut per_packet = Vec::with_capacity(passes as usize);
    let mut decisions = Vec::with_capacity(DECIDE_BATCH);
    for _ in 0..passes {
        let start = Instant::now();
        let mut sum = 0usize;
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
    per_packet
}

/// Runs the phases on `engine` over `packets`.
pub fn run(engine: &mut Engine, packets: &[Packet], opts: &Options) -> BenchReport {
    let clock = Clock::calibrate();
    let n = packets.len().max(1);
    let round = |e: &mut Engine| {
        for p in packets {
            black_box(e.decide(black_box(p)));
        }
    };

    round(engine); // warm-up

    let mut round_secs = Vec::new();
    let started = Instant::now();
    loop {
        let t = Instant::now();
        round(engine);
        round_secs.push(t.elapsed().as_secs_f64());
        let done = match opts.length {
            Length::Rounds(r) => round_secs.len() >= r.max(1) as usize,
            Length::Duration(d) => started.elapsed() >= d,
        };
        if done {
            break;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    round_secs.sort_by(f64::total_cmp);
    let median_round = median(&round_secs).unwrap_or(0.0).max(1e-12);
    let pps = packets.len() as f64 / median_round;

    // Per-packet samples: as many rounds as fit in max_samples.
    let sample_rounds = (opts.max_samples / n).clamp(1, round_secs.len());
    let mut samples: Vec<u32> = Vec::with_capacity(sample_rounds * packets.len());
    for _ in 0..sample_rounds {
        let mut last = ticks();
        for p in packets {
            black_box(engine.decide(black_box(p)));
            let now = ticks();
            samples.push(u32::try_from(now.wrapping_sub(last)).unwrap_or(u32::MAX));
            last = now;
        }
    }
    samples.sort_unstable();
    let pct = |q: f64| clock.ns(u64::from(quantile(&samples, q).unwrap_or(0)));
    let ns_per_packet = Percentiles {
        p20: pct(0.2),
        p50: pct(0.5),
        p99: pct(0.99),
        max: pct(1.0),
    };
    let sorted_ns = samples
        .iter()
        .map(|&s| clock.ns(u64::from(s)) as f32)
        .collect();

    let mut cost = CostCounter::default();
    for p in packets {
        black_box(engine.decide_observed(p, &mut cost));
    }

    let rules = engine.program().rules.len();
    let mut timer = RuleTimer::new(rules);
    for p in packets {
        timer.start();
        black_box(engine.decide_observed(p, &mut timer));
    }
    let net: Vec<f64> = timer
        .ticks
        .iter()
        .zip(&timer.tried)
        .map(|(&t, &k)| (clock.ns(t) - clock.overhead_ns * k as f64).max(0.0))
        .collect();
    let total: f64 = net.iter().sum::<f64>().max(1e-9);
    let per_rule = engine
        .program()
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| RuleCost {
            number: r.number,
            text: r.text.clone(),
            tried: timer.tried[i],
            matched: timer.matched[i],
            share: net[i] / total,
            ns_per_try: if timer.tried[i] > 0 {
                net[i] / timer.tried[i] as f64
            } else {
                0.0
            },
        })
        .collect();

    BenchReport {
        dispatch: engine.dispatch(),
        packets: packets.len() as u64,
        ip_packets: packets.iter().filter(|p| p.l3 == weir_wire::L3::Ip).count() as u64,
        rules,
        rounds: round_secs.len() as u32,
        seconds,
        packets_per_second: pps,
        ns_per_packet_mean: 1e9 / pps,
        ns_per_packet,
        quantiles: weir_stats::METHOD,
        samples: samples.len(),
        rules_per_packet: cost.rules as f64 / n as f64,
        insns_per_packet: cost.insns as f64 / n as f64,
        clock,
        syscalls_in_timed_loop: 0,
        per_rule,
        sorted_ns,
    }
}

/// The report with the ruleset and trace it measured (`--json`).
#[derive(Serialize)]
struct Named<'a> {
    #[serde(flatten)]
    report: &'a BenchReport,
    ruleset: String,
    trace: String,
}

/// Gives `log` rules a logger that formats into a buffer in front of
/// `io::sink()`: the cost of logging is measured, and nothing is written.
pub fn discard_logs(engine: &mut Engine, names: &Names) {
    if engine.program().rules.iter().any(|r| r.log_limit.is_some()) {
        let sink = Box::new(std::io::sink());
        let logger = Logger::new(sink, LogFormat::Text, names, &engine.program().rules);
        engine.set_logger(logger);
    }
}

impl BenchReport {
    /// The report as one JSON line naming the ruleset and trace (keys
    /// sorted, as `serde_json::Value` keeps them).
    pub fn json(&self, ruleset: &Path, trace: &Path) -> serde_json::Result<String> {
        let named = Named {
            report: self,
            ruleset: ruleset.display().to_string(),
            trace: trace.display().to_string(),
        };
        Ok(format!("{}\n", serde_json::to_value(named)?))
    }

    /// The report for people, headed by the command that made it.
    pub fn text_for(&self, ruleset: &Path, trace: &Path) -> String {
        format!(
            "weir bench {} -r {}\n{}",
            ruleset.display(),
            trace.display(),
            self.text()
        )
    }

    /// The plot's title: what was measured, on what.
    pub fn plot_title(&self, ruleset: &Path, trace: &Path) -> String {
        format!(
            "weir bench: {} on {} ({} packets, {:?} dispatch)",
            ruleset.display(),
            trace.display(),
            self.packets,
            self.dispatch
        )
        .to_lowercase()
    }

    /// The CDF of per-packet cost as an SVG document, marked at the
    /// percentiles the report prints.
    pub fn plot(&self, title: &str) -> String {
        cdf::svg(&[Panel {
            title: title.to_owned(),
            x_label: "ns per packet (log scale)".into(),
            scale: Scale::Log,
            lines: vec![Line::new("", &self.sorted_ns, f64::from)],
            marks: true,
        }])
    }

    /// The report as a table for people.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} frames ({} IP) × {} rounds, {} rules, dispatch {:?}, {:.2} s",
            self.packets, self.ip_packets, self.rounds, self.rules, self.dispatch, self.seconds
        );
        let _ = writeln!(
            s,
            "throughput     {:>10.2} Mpps  ({:.1} ns/packet, median round, no clock in the loop)",
            self.packets_per_second / 1e6,
            self.ns_per_packet_mean
        );
        let p = &self.ns_per_packet;
        let _ = writeln!(
            s,
            "ns/packet      p20 {:.1}  p50 {:.1}  p99 {:.1}  max {:.0}  ({} samples, {}, each incl. one clock read)",
            p.p20, p.p50, p.p99, p.max, self.samples, self.quantiles
        );
        let _ = writeln!(
            s,
            "clock          {} at {:.3} ns/tick; one read costs {:.1} ns (median back-to-back, min {:.1})",
            self.clock.kind, self.clock.ns_per_tick, self.clock.overhead_ns, self.clock.overhead_min_ns
        );
        let _ = writeln!(
            s,
            "work/packet    {:.2} rules tried, {:.2} micro-instructions run",
            self.rules_per_packet, self.insns_per_packet
        );
        let _ = writeln!(
            s,
            "syscalls       0 in the timed loops (by construction: trace in memory, log into a buffer before io::sink)"
        );
        let mut top: Vec<&RuleCost> = self.per_rule.iter().filter(|r| r.tried > 0).collect();
        top.sort_by(|a, b| b.share.total_cmp(&a.share));
        let _ = writeln!(
            s,
            "\nrule   share  ns/try       tried     matched  text   (per-rule clock; top 15 by share)"
        );
        for r in top.iter().take(15) {
            let _ = writeln!(
                s,
                "{:05} {:5.1}% {:7.1} {:>11} {:>11}  {}",
                r.number,
                r.share * 100.0,
                r.ns_per_try,
                r.tried,
                r.matched,
                r.text
            );
        }
        s
    }
}
