//! Findings and how they are written: compiler-style text, JSON with
//! stable field names, SARIF 2.1.0 for code-review tools.

use crate::witness::Point;
use serde::Serialize;
use weir_engine::{Program, Verdict};

/// What kind of finding; the JSON and SARIF `ruleId` is [`Kind::name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Unreachable,
    NeverMatches,
    Redundant,
    CounterOnly,
    ReturnOutsideCall,
    /// Packets can match it, but none of a replayed trace did.
    UnmatchedInTrace,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Unreachable => "unreachable",
            Kind::NeverMatches => "never-matches",
            Kind::Redundant => "redundant",
            Kind::CounterOnly => "counter-only",
            Kind::ReturnOutsideCall => "return-outside-call",
            Kind::UnmatchedInTrace => "unmatched-in-trace",
        }
    }

    /// SARIF's levels: a count rule or a return is a note, not a fault.
    pub fn level(self) -> &'static str {
        match self {
            Kind::Unreachable | Kind::NeverMatches | Kind::Redundant => "warning",
            Kind::CounterOnly | Kind::ReturnOutsideCall | Kind::UnmatchedInTrace => "note",
        }
    }
}

/// A rule, as findings name it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RuleRef {
    pub number: u16,
    #[serde(skip)]
    pub index: usize,
    pub line: u32,
    pub action: String,
    pub text: String,
}

impl RuleRef {
    pub fn of(prog: &Program, i: usize) -> RuleRef {
        let r = &prog.rules[i];
        RuleRef {
            number: r.number,
            index: i,
            line: r.line,
            action: r.action_text.clone(),
            text: r.text.clone(),
        }
    }
}

/// A packet and what the ruleset does with it.
#[derive(Clone, Debug, Serialize)]
pub struct Witness {
    pub packet: Point,
    /// The rule that decides it (index), and its verdict.
    #[serde(skip)]
    pub rule: Option<usize>,
    pub verdict: Option<Verdict>,
    /// For a redundant rule: the rule that decides it once this one is
    /// removed (index).
    #[serde(skip)]
    pub without_rule: Option<usize>,
    pub decided_by: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_without_it_by: Option<u16>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub kind: Kind,
    pub level: &'static str,
    pub rule: RuleRef,
    pub message: String,
    /// The blocking rules (the first [`MAX_LISTED`](crate::lint) of a
    /// minimal set), and how many the set has.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blockers: Vec<RuleRef>,
    #[serde(skip_serializing_if = "is_zero")]
    pub blockers_total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub different_action: Option<bool>,
    /// The rules that decide its packets once it is removed (the first
    /// few), and how many there are.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub covered_by: Vec<RuleRef>,
    #[serde(skip_serializing_if = "is_zero")]
    pub covered_by_total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<Witness>,
    /// Set when the analysis could not be exact here, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
}

impl Finding {
    pub fn new(kind: Kind, rule: RuleRef, message: String) -> Finding {
        Finding {
            kind,
            level: kind.level(),
            rule,
            message,
            blockers: Vec::new(),
            blockers_total: 0,
            different_action: None,
            covered_by: Vec::new(),
            covered_by_total: 0,
            witness: None,
            caveat: None,
        }
    }

    /// Fills the witnesses' rule numbers from their indices.
    pub fn number_witness(&mut self, prog: &Program) {
        if let Some(w) = &mut self.witness {
            w.decided_by = w.rule.map(|i| prog.rules[i].number);
            w.decided_without_it_by = w.without_rule.map(|i| prog.rules[i].number);
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `file:line:col: level[kind]: rule N: message`, one line each; with
/// `explain`, the blocking rules' text and the witness under it.
pub fn text(file: &str, findings: &[Finding], explain: bool) -> String {
    let mut out = String::new();
    for f in findings {
        out += &format!(
            "{file}:{}:1: {}[{}]: rule {}: {}\n",
            f.rule.line,
            f.level,
            f.kind.name(),
            f.rule.number,
            f.message
        );
        if !explain {
            continue;
        }
        out += &format!("    {:05} {}\n", f.rule.number, f.rule.text);
        for b in f.blockers.iter().chain(&f.covered_by) {
            out += &format!("  {file}:{}: {:05} {}\n", b.line, b.number, b.text);
        }
        if let Some(w) = &f.witness {
            out += &format!("  witness: {}", describe(&w.packet));
            if let (Some(n), Some(v)) = (w.decided_by, w.verdict) {
                out += &format!(" -> rule {n} ({})", verdict_word(v));
            }
            if let Some(n) = w.decided_without_it_by {
                out += &format!("; without this rule, rule {n}");
            }
            out += "\n";
        }
        if let Some(c) = &f.caveat {
            out += &format!("  note: {c}\n");
        }
    }
    out
}

pub fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Drop => "drop",
    }
}

/// One line: `tcp 192.0.2.1:1024 > 198.51.100.1:22 [syn] in via em0`.
pub fn describe(p: &Point) -> String {
    let proto = match p.proto {
        6 => "tcp".to_string(),
        17 => "udp".to_string(),
        1 if p.ip_version == 4 => "icmp".to_string(),
        58 if p.ip_version == 6 => "ipv6-icmp".to_string(),
        132 => "sctp".to_string(),
        n => format!("proto {n}"),
    };
    let addr = |a: &str, port: Option<u16>| match port {
        Some(port) if p.ip_version == 6 => format!("[{a}]:{port}"),
        Some(port) => format!("{a}:{port}"),
        None => a.to_string(),
    };
    let mut s = format!(
        "ip{} {proto} {} > {}",
        p.ip_version,
        addr(&p.src, p.src_port),
        addr(&p.dst, p.dst_port)
    );
    if let Some(f) = &p.tcp_flags {
        s += &format!(" [{f}]");
    }
    if let Some(t) = p.icmp_type {
        s += &format!(" type {t}");
    }
    if p.fragment {
        s += " frag";
    }
    s += &format!(" {}", p.direction);
    if let Some(i) = &p.interface {
        s += &format!(" via {i}");
    }
    s
}

/// SARIF 2.1.0: one run, a result per finding on the rule file.
pub fn sarif(uri: &str, findings: &[Finding]) -> serde_json::Value {
    use serde_json::json;
    let kinds = [
        Kind::Unreachable,
        Kind::NeverMatches,
        Kind::Redundant,
        Kind::CounterOnly,
        Kind::ReturnOutsideCall,
        Kind::UnmatchedInTrace,
    ];
    let results: Vec<_> = findings
        .iter()
        .map(|f| {
            json!({
                "ruleId": f.kind.name(),
                "level": f.level,
                "message": { "text": format!("rule {}: {}", f.rule.number, f.message) },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": uri },
                        "region": { "startLine": f.rule.line, "startColumn": 1 }
                    }
                }]
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "weir lint",
                "rules": kinds.iter().map(|k| json!({ "id": k.name() })).collect::<Vec<_>>()
            }},
            "results": results
        }]
    })
}
