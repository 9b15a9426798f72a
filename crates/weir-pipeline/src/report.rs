//! What a run reports: tcpdump's closing line, `ipfw show`'s table, the
//! live states, the rules that never matched, and nft-style JSON as typed
//! structs. Field names are what scripts read; they are declared in
//! alphabetical order, the order the output has always had.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;
use weir_engine::{DispatchKind, Engine};
use weir_rules::Names;
use weir_wire::{addr_from_u128, Malformed};

/// Totals for the closing line and JSON.
pub struct Summary {
    pub packets: u64,
    pub passed: u64,
    pub dropped: u64,
    pub malformed: u64,
    pub non_ip: u64,
}

impl Summary {
    pub fn of(engine: &Engine) -> Summary {
        let s = engine.stats();
        Summary {
            packets: s.packets,
            passed: s.passed,
            dropped: s.dropped,
            malformed: s.malformed_total(),
            non_ip: s.non_ip,
        }
    }

    /// `N packets read, P passed, D dropped, M malformed, X non-IP`
    pub fn line(&self) -> String {
        format!(
            "{} packets read, {} passed, {} dropped, {} malformed, {} non-IP",
            self.packets, self.passed, self.dropped, self.malformed, self.non_ip
        )
    }
}

/// `ipfw show`: `%05u`, packets and bytes right-aligned to the widest
/// value, then the rule text.
pub fn counters_table(engine: &Engine) -> String {
    let counters = engine.counters();
    let width = |f: fn(&weir_engine::RuleCounter) -> u64| {
        counters
            .iter()
            .map(|c| f(c).to_string().len())
            .max()
            .unwrap_or(1)
    };
    let (pw, bw) = (width(|c| c.packets), width(|c| c.bytes));
    let mut out = String::new();
    for (rule, c) in engine.program().rules.iter().zip(counters) {
        let _ = writeln!(
            out,
            "{:05} {:>pw$} {:>bw$} {}",
            rule.number, c.packets, c.bytes, rule.text
        );
    }
    out
}

/// `ipfw -d show`'s dynamic part: one line per live state, in rule order:
/// `00100 3 180 (299s) STATE tcp 10.0.0.1 1234 <-> 10.0.0.2 80`.
pub fn states_table(engine: &Engine, names: &Names) -> String {
    let Some(table) = engine.states() else {
        return String::new();
    };
    let mut out = String::new();
    for s in table.live(engine.program()) {
        let proto = names
            .protocol_name(s.proto)
            .map_or_else(|| s.proto.to_string(), str::to_owned);
        let _ = writeln!(
            out,
            "{:05} {} {} ({}s) STATE {proto} {} {} <-> {} {}",
            engine.program().rules[s.rule].number,
            s.packets,
            s.bytes,
            s.expires_in,
            addr_from_u128(s.src, s.version),
            s.src_port,
            addr_from_u128(s.dst, s.version),
            s.dst_port,
        );
    }
    out
}

/// Rules that matched nothing, one `ipfw show`-style line each.
pub fn unmatched(engine: &Engine) -> String {
    let mut out = String::new();
    for i in engine.unmatched_rules() {
        let r = &engine.program().rules[i];
        let _ = writeln!(out, "{:05} {}", r.number, r.text);
    }
    out
}

/// nft -j style: `{"weir": [ {"metainfo": …}, {"rule": …}, …, {"summary": …} ]}`.
#[derive(Serialize)]
pub struct Report {
    pub weir: Vec<Item>,
}

#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Item {
    Metainfo(Metainfo),
    Rule(Rule),
    Summary(Box<SummaryJson>),
    Queue(Queue),
}

#[derive(Serialize)]
pub struct Metainfo {
    pub dispatch: DispatchKind,
    pub version: &'static str,
}

#[derive(Serialize)]
pub struct Rule {
    pub action: String,
    pub counter: Counter,
    pub number: u16,
    pub text: String,
}

#[derive(Serialize)]
pub struct Counter {
    pub bytes: u64,
    pub packets: u64,
}

#[derive(Serialize)]
pub struct SummaryJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<CaptureJson>,
    pub dropped: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<Kernel>,
    pub log: Option<Log>,
    pub malformed: u64,
    pub malformed_by_reason: BTreeMap<&'static str, u64>,
    pub non_ip: u64,
    pub packets: u64,
    pub passed: u64,
    pub states: Option<States>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syscalls: Option<Syscalls>,
    pub unmatched_rules: Vec<u16>,
}

#[derive(Serialize)]
pub struct States {
    /// The engine's state settings and statistics, as `serde_json` values
    /// so that their keys come out sorted, as they always have.
    pub config: Value,
    pub memory_bytes: usize,
    pub stats: Value,
}

#[derive(Serialize, Default, Clone, Copy)]
pub struct Log {
    pub lines: u64,
    pub suppressed_by_logamount: u64,
    pub write_errors: u64,
}

impl Log {
    /// Adds another logger's counts (workers of one capture).
    pub fn add(&mut self, o: &weir_engine::Logger) {
        self.lines += o.lines;
        self.suppressed_by_logamount += o.suppressed;
        self.write_errors += o.errors;
    }
}

#[derive(Serialize)]
pub struct Kernel {
    pub dropped: u64,
    pub freezes: u64,
    pub received: u64,
}

#[derive(Serialize)]
pub struct CaptureJson {
    pub interface: String,
    pub loopback_duplicates_ignored: u64,
    pub packets_per_second: f64,
    pub per_worker: Vec<WorkerJson>,
    pub ring: &'static str,
    pub seconds: f64,
    pub stopped_by: &'static str,
    pub workers: usize,
}

#[derive(Serialize)]
pub struct WorkerJson {
    pub kernel_dropped: u64,
    pub kernel_received: u64,
    pub packets: u64,
}

#[derive(Serialize)]
pub struct Syscalls {
    pub counted: &'static str,
    pub reads: u64,
    pub writes: u64,
}

#[derive(Serialize)]
pub struct Queue {
    pub accepted: u64,
    pub batches: u64,
    pub dropped: u64,
    pub number: u16,
    pub reloads_failed: u64,
    pub reloads_ok: u64,
    pub unparsed: u64,
    pub verdict_errors: u64,
}

impl Report {
    /// The engine's rules, counters and summary.
    pub fn of(engine: &Engine, summary: &Summary) -> Report {
        let mut items = vec![Item::Metainfo(Metainfo {
            dispatch: engine.dispatch(),
            version: env!("CARGO_PKG_VERSION"),
        })];
        for (rule, c) in engine.program().rules.iter().zip(engine.counters()) {
            items.push(Item::Rule(Rule {
                action: rule.action_text.clone(),
                counter: Counter {
                    bytes: c.bytes,
                    packets: c.packets,
                },
                number: rule.number,
                text: rule.text.clone(),
            }));
        }
        let stats = engine.stats();
        items.push(Item::Summary(Box::new(SummaryJson {
            capture: None,
            dropped: summary.dropped,
            kernel: None,
            log: engine.logger().map(|l| {
                let mut log = Log::default();
                log.add(l);
                log
            }),
            malformed: summary.malformed,
            malformed_by_reason: Malformed::ALL
                .iter()
                .map(|m| (m.name(), stats.malformed[*m as usize]))
                .collect(),
            non_ip: summary.non_ip,
            packets: summary.packets,
            passed: summary.passed,
            states: engine.states().map(|t| States {
                config: serde_json::to_value(t.config()).unwrap_or_default(),
                memory_bytes: t.memory(),
                stats: serde_json::to_value(t.stats()).unwrap_or_default(),
            }),
            syscalls: None,
            unmatched_rules: engine
                .unmatched_rules()
                .map(|i| engine.program().rules[i].number)
                .collect(),
        })));
        Report { weir: items }
    }

    /// The summary item, to add what a mode knows beside the engine.
    pub fn summary_mut(&mut self) -> &mut SummaryJson {
        self.weir
            .iter_mut()
            .find_map(|i| match i {
                Item::Summary(s) => Some(&mut **s),
                _ => None,
            })
            .expect("a report has a summary")
    }

    /// One line of JSON.
    pub fn to_line(&self) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_default();
        s.push('\n');
        s
    }
}
