//! `weir explain`'s text: one packet's walk through the rules, each rule
//! tried or passed over shown with its checks and why. For one packet at
//! a time, so it allocates and formats freely.

use crate::{class, packet_class, Engine, Rule, RuleAction, RuleTrace, Trace, Verdict};
use std::fmt::Write;
use weir_rules::Names;
use weir_wire::{frag, proto, tcp, Direction, Packet, L3};

/// The report `weir explain` prints for packet `index` (at byte `offset`
/// of its capture): the packet, then each rule the walk tried or passed
/// over with its checks, then the deciding rule. Call it with the engine
/// in the state the packets before left it; it decides `p` (once).
pub fn explain_packet(
    engine: &mut Engine,
    p: &Packet,
    index: u64,
    offset: u64,
    iface: Option<&str>,
    names: &Names,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "packet {index} (byte offset {offset}): {}",
        describe_packet(p, iface, names)
    );
    // Which rules the classifier left in, asked before the walk moves
    // any state; every rule when the walk is linear.
    let mut candidate = vec![!engine.classified(); engine.program().rules.len()];
    if engine.classified() {
        for r in engine.candidate_rules(p) {
            candidate[r] = true;
        }
    }
    let mut trace = Trace::default();
    let d = engine.decide_observed(p, &mut trace);
    let Some(decider) = d.rule else {
        let why = match p.l3 {
            L3::Malformed(m) => format!("malformed ({}): the rules never see it", m.name()),
            _ => "not IP: a layer-3 filter never sees it".to_owned(),
        };
        let _ = writeln!(out, "{why}; policy verdict: {}", verdict_word(d.verdict));
        return out;
    };
    // `expect`: where a linear walk would go next; rules between it and
    // the next rule tried were passed over, and each is shown with why.
    let (mut expect, mut returns) = (0usize, Vec::new());
    for (n, step) in trace.rules.iter().enumerate() {
        skipped_lines(&mut out, engine, p, expect..step.rule, &candidate);
        let mark = if step.matched { "match" } else { "no" };
        rule_lines(&mut out, engine, p, step, mark);
        let rule = &engine.program().rules[step.rule];
        if step.matched && step.insns.is_empty() && header_lines(rule, p).is_empty() {
            let _ = writeln!(out, "{INDENT}(no conditions: matches every packet)");
        }
        expect = step.rule + 1;
        let next = trace.rules.get(n + 1).map_or(expect, |s| s.rule);
        if !step.matched {
            continue;
        }
        let target = match rule.action {
            RuleAction::Skipto(_) | RuleAction::Call(_) => rule.jump as usize,
            RuleAction::SkiptoTablearg => engine.tablearg_target(p, step.rule),
            RuleAction::Return => returns.pop().unwrap_or(expect),
            _ => expect,
        };
        // A jump taken (a call may not be, past the stack's depth).
        if target > expect && target <= next {
            let _ = writeln!(
                out,
                "        rules {:05}..{:05}: jumped over by {}",
                engine.program().rules[expect].number,
                engine.program().rules[target - 1].number,
                rule.action.word()
            );
            if matches!(rule.action, RuleAction::Call(_)) {
                returns.push(expect);
            }
        }
        if target <= next {
            expect = target;
        }
    }
    let prog = &engine.program();
    let rule = &prog.rules[decider];
    let _ = writeln!(
        out,
        "decided by rule {:05} ({}): {}",
        rule.number,
        rule.action_text,
        verdict_word(d.verdict)
    );
    out
}

/// The rules a walk passed without trying them: each with its checks up to
/// the one that fails, and whether the classifier ruled it out or a skip
/// step jumped it (its header fails as the rule before's did).
fn skipped_lines(
    out: &mut String,
    engine: &Engine,
    p: &Packet,
    rules: std::ops::Range<usize>,
    candidate: &[bool],
) {
    for skipped in rules {
        let rule = &engine.program().rules[skipped];
        let header_fails = header_lines(rule, p).iter().any(|l| l.starts_with("NO"));
        let mut t = engine.trace_rule(p, skipped);
        if header_fails {
            t.insns.clear();
        }
        rule_lines(out, engine, p, &t, "skip");
        let why = if candidate[skipped] {
            "(skipped by a skip step: its header fails as the rule before's did)"
        } else {
            "(not a candidate: the classifier proved it cannot match)"
        };
        let _ = writeln!(out, "{INDENT}{why}");
    }
}

/// Indent of the lines under a rule.
const INDENT: &str = "               ";

/// A rule's line, its header checks and its instructions, each yes or NO.
fn rule_lines(out: &mut String, engine: &Engine, p: &Packet, step: &RuleTrace, mark: &str) {
    let prog = &engine.program();
    let rule = &prog.rules[step.rule];
    let insns = prog.rule_insns(rule);
    let _ = writeln!(out, "  {:05} {:<5} {}", rule.number, mark, rule.text);
    for line in header_lines(rule, p) {
        let _ = writeln!(out, "{INDENT}{line}");
    }
    for &(k, ok) in &step.insns {
        let _ = writeln!(
            out,
            "{INDENT}{} {}",
            if ok { "yes" } else { "NO " },
            prog.describe(&insns[k])
        );
    }
}

/// The rule-header checks (hoisted protocol and class bits), as the walk
/// saw them; a failed one skips ahead to the rule's skip step.
fn header_lines(rule: &Rule, p: &Packet) -> Vec<String> {
    let mark = |ok: bool| if ok { "yes" } else { "NO " };
    let mut lines = Vec::new();
    if let Some(proto) = rule.proto {
        let ok = proto == p.proto;
        lines.push(format!("{} proto {proto} (header)", mark(ok)));
        if !ok {
            return lines;
        }
    }
    if rule.class_mask != 0 {
        let ok = packet_class(p) & rule.class_mask == rule.class_bits;
        let words = class::describe(rule.class_mask, rule.class_bits).join(", ");
        lines.push(format!("{} {words} (header)", mark(ok)));
    }
    lines
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Drop => "drop",
    }
}

/// One line, tcpdump-like: `TCP 10.0.0.1:1234 > 10.0.0.2:80 [S] in via eth0, 60 bytes`.
pub fn describe_packet(p: &Packet, iface: Option<&str>, names: &Names) -> String {
    let mut s = String::new();
    match p.l3 {
        L3::NonIp => s.push_str("non-IP frame"),
        L3::Malformed(m) => {
            let _ = write!(s, "malformed ({})", m.name());
        }
        L3::Ip => {
            let proto = names
                .protocol_name(p.proto)
                .map(str::to_ascii_uppercase)
                .unwrap_or_else(|| format!("proto {}", p.proto));
            let (src, dst) = (p.src_ip(), p.dst_ip());
            if p.has_ports {
                let _ = write!(s, "{proto} {src}.{} > {dst}.{}", p.src_port, p.dst_port);
            } else {
                let _ = write!(s, "{proto} {src} > {dst}");
            }
            if p.proto == proto::TCP && p.has_ports {
                let flags: String = [
                    (tcp::SYN, 'S'),
                    (tcp::FIN, 'F'),
                    (tcp::RST, 'R'),
                    (tcp::PSH, 'P'),
                    (tcp::ACK, '.'),
                    (tcp::URG, 'U'),
                ]
                .iter()
                .filter(|(b, _)| p.tcp_flags & b != 0)
                .map(|&(_, c)| c)
                .collect();
                let _ = write!(s, " [{flags}]");
            }
            if p.has_icmp {
                let _ = write!(s, " type {} code {}", p.icmp_type, p.icmp_code);
            }
            if p.frag & frag::LATER != 0 {
                s.push_str(" (later fragment)");
            }
            let _ = write!(s, ", ttl {}, {} bytes", p.ttl, p.ip_len);
        }
    }
    let dir = match p.direction {
        Direction::Out => "out",
        _ => "in",
    };
    let _ = write!(s, ", {dir}");
    if let Some(i) = iface {
        let _ = write!(s, " via {i}");
    }
    s
}
