//! What a run reports: tcpdump's closing line, `ipfw show`'s table, nft-style JSON.

use serde_json::{json, Value};
use std::fmt::Write;
use weir_engine::Engine;
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
pub fn json(engine: &Engine, summary: &Summary) -> Value {
    let mut items = vec![json!({"metainfo": {
        "version": env!("CARGO_PKG_VERSION"),
        "dispatch": engine.dispatch(),
    }})];
    for (rule, c) in engine.program().rules.iter().zip(engine.counters()) {
        items.push(json!({"rule": {
            "number": rule.number,
            "action": rule.action_text,
            "text": rule.text,
            "counter": {"packets": c.packets, "bytes": c.bytes},
        }}));
    }
    let stats = engine.stats();
    let malformed: serde_json::Map<String, Value> = Malformed::ALL
        .iter()
        .map(|m| (m.name().to_owned(), json!(stats.malformed[*m as usize])))
        .collect();
    let unmatched: Vec<u16> = engine
        .unmatched_rules()
        .map(|i| engine.program().rules[i].number)
        .collect();
    items.push(json!({"summary": {
        "packets": summary.packets,
        "passed": summary.passed,
        "dropped": summary.dropped,
        "non_ip": summary.non_ip,
        "malformed": summary.malformed,
        "malformed_by_reason": malformed,
        "unmatched_rules": unmatched,
        "states": engine.states().map(|t| json!({
            "config": t.config(),
            "stats": t.stats(),
            "memory_bytes": t.memory(),
        })),
        "log": engine.logger().map(|l| json!({
            "lines": l.lines,
            "suppressed_by_logamount": l.suppressed,
            "write_errors": l.errors,
        })),
    }}));
    json!({ "weir": items })
}
