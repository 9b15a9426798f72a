//! The analysis against brute force: generated rulesets over a reduced
//! universe (a few values per field, chosen so that every class of
//! packets the rules can tell apart has a member), every packet of it
//! decided by the real engine. lint, search and diff must agree exactly,
//! and every witness must get the decision its finding claims.

use proptest::prelude::*;
use std::collections::BTreeSet;
use weir_analysis::{diff, lint, search, Analyser, DiffOptions, Goal, Kind};
use weir_engine::{packet_class, CompileOptions, Engine, Observer, Program, Verdict};
use weir_rules::Names;
use weir_wire::Packet;

fn compile(text: &str) -> Program {
    weir_engine::load(text, &Names::default(), &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{text}\n{e:?}"))
}

/// Interface names the enumeration uses; `em2` stands for "matches em*
/// only", `lo0` for "matches nothing".
const IFACES: [&str; 4] = ["em0", "em1", "em2", "lo0"];

/// Every packet of the reduced universe, as an analysis witness would be
/// built (so the decoder and engine see real frames).
fn universe() -> Vec<Packet> {
    use weir_analysis::Point;
    let mut out = Vec::new();
    let v4 = ["10.0.0.0", "10.0.0.1", "10.0.0.2"];
    let mut points = Vec::new();
    for src in v4 {
        for dst in v4 {
            for proto in [6u8, 17, 1, 47] {
                points.extend(l4_variants(4, src, dst, proto));
            }
        }
    }
    let v6 = ["2001:db8::1", "2001:db8::2"];
    for src in v6 {
        for dst in v6 {
            for proto in [6u8, 17, 1, 58, 47] {
                points.extend(l4_variants(6, src, dst, proto));
            }
        }
    }
    for p in points {
        for out_dir in [false, true] {
            for (k, _) in IFACES.iter().enumerate() {
                let mut q: Point = p.clone();
                q.direction = if out_dir { "out" } else { "in" };
                q.iface_class = k as u16;
                out.push(q.packet());
            }
        }
    }
    out
}

fn l4_variants(v: u8, src: &str, dst: &str, proto: u8) -> Vec<weir_analysis::Point> {
    let base = weir_analysis::Point::manual(v, proto, src, dst);
    let mut out = vec![base.clone().fragment()];
    match proto {
        6 => {
            for sp in 1..=3 {
                for dp in 1..=3 {
                    for flags in 0..8u8 {
                        // fin off; syn, rst, ack as bits 1, 2, 4 of the header
                        let f = (flags & 1) << 1 | (flags & 2) << 1 | (flags & 4) << 2;
                        out.push(base.clone().ports(sp, dp).flags(f));
                    }
                }
            }
        }
        17 => {
            for sp in 1..=3 {
                for dp in 1..=3 {
                    out.push(base.clone().ports(sp, dp));
                }
            }
        }
        1 | 58 => {
            for t in [0u8, 8] {
                out.push(base.clone().icmp(t));
            }
        }
        _ => out.push(base),
    }
    out
}

/// Matched rules of one walk.
#[derive(Default)]
struct Matched(Vec<usize>);
impl Observer for Matched {
    fn rule(&mut self, rule: usize, matched: bool) {
        if matched {
            self.0.push(rule);
        }
    }
}

fn engine(prog: Program) -> Engine {
    let mut e = Engine::builder(prog).linear(true).build();
    e.set_interfaces(&IFACES.map(Some));
    e
}

fn matches_alone(e: &Engine, p: &Packet, i: usize) -> bool {
    let r = &e.program().rules[i];
    packet_class(p) & r.class_mask == r.class_bits
        && r.proto.is_none_or(|x| x == p.proto)
        && e.trace_rule(p, i).matched
}

fn addr() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "any",
        "10.0.0.0/31",
        "10.0.0.1",
        "10.0.0.0",
        "not 10.0.0.1",
        "{ 10.0.0.0 or 10.0.0.1 }",
        "2001:db8::1",
    ])
    .prop_map(str::to_string)
}

fn body() -> impl Strategy<Value = String> {
    let proto = prop::sample::select(vec!["ip", "tcp", "udp", "icmp", "{ tcp or udp }"]);
    let port = prop::sample::select(vec!["", " 1", " 2", " 1-2", " not 1"]);
    let opt = prop::sample::select(vec![
        "",
        " in",
        " out",
        " via em0",
        " via em*",
        " recv em1",
        " not xmit em*",
        " setup",
        " established",
        " tcpflags syn,!ack",
        " tcpflags rst",
        " icmptypes 8",
        " frag",
        " ipversion 6",
        " not frag",
    ]);
    (proto, addr(), port.clone(), addr(), port, opt).prop_map(|(pr, s, sp, d, dp, o)| {
        let ports = pr == "tcp" || pr == "udp" || pr == "{ tcp or udp }";
        let (sp, dp) = if ports { (sp, dp) } else { ("", "") };
        format!("{pr} from {s}{sp} to {d}{dp}{o}")
    })
}

/// A ruleset: rules numbered 100, 200, …; jumps go to later numbers.
fn ruleset(max: usize) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec((0..12u8, 1..4u16, body()), 1..max).prop_map(|rules| {
        let n = rules.len() as u16;
        rules
            .into_iter()
            .enumerate()
            .map(|(k, (a, skip, body))| {
                let num = (k as u16 + 1) * 100;
                let target = (k as u16 + 1 + skip).min(n + 1) * 100;
                let action = match a {
                    0..=3 => "allow".to_string(),
                    4..=6 => "deny".to_string(),
                    7 => "count".to_string(),
                    8 => format!("skipto {target}"),
                    9 => format!("call {target}"),
                    10 => "return".to_string(),
                    _ => "reject".to_string(),
                };
                format!("{num} {action} {body}")
            })
            .collect()
    })
}

fn decisions(e: &mut Engine, packets: &[Packet]) -> Vec<(Option<usize>, Verdict)> {
    packets
        .iter()
        .map(|p| {
            let d = e.decide(p);
            (d.rule, d.verdict)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn lint_agrees_with_every_packet(rules in ruleset(8), draw in any::<bool>()) {
        let text = rules.join("\n");
        let prog = compile(&text);
        let packets = universe();
        let mut a = Analyser::new(&[&prog]);
        // Packets drawn at once instead of sets built: the same answers.
        if draw {
            a.budget = 0;
        }
        let env = weir_engine::Env::default();
        let findings = lint(&mut a, &prog, &env).unwrap();
        prop_assert!(findings.iter().all(|f| f.caveat.is_none()), "not exact: {findings:?}");
        let mut e = engine(prog.clone());
        let base = decisions(&mut e, &packets);
        let n = prog.rules.len() - 1;
        let mut matched = vec![false; n + 1];
        for p in &packets {
            let mut m = Matched::default();
            e.decide_observed(p, &mut m);
            for i in m.0 { matched[i] = true; }
        }
        for (i, &reached) in matched.iter().enumerate().take(n) {
            let kinds: Vec<Kind> = findings.iter().filter(|f| f.rule.index == i).map(|f| f.kind).collect();
            let alone = packets.iter().any(|p| matches_alone(&e, p, i));
            prop_assert_eq!(kinds.contains(&Kind::NeverMatches), !alone, "never-matches of rule {}\n{}", i, text);
            prop_assert_eq!(kinds.contains(&Kind::Unreachable), alone && !reached, "unreachable of rule {}\n{}", i, text);
            let act = prog.rules[i].act;
            if matches!(act, weir_engine::Act::Accept | weir_engine::Act::Deny) {
                let without: Vec<&str> = rules.iter().enumerate().filter(|(k, _)| *k != i).map(|(_, r)| r.as_str()).collect();
                let mut e2 = engine(compile(&without.join("\n")));
                let same = decisions(&mut e2, &packets).iter().zip(&base).all(|(x, y)| x.1 == y.1);
                let said = kinds.iter().any(|k| matches!(k, Kind::Redundant | Kind::Unreachable | Kind::NeverMatches));
                prop_assert_eq!(said, same, "redundant of rule {}\n{}", i, text);
            }
        }
        let names = a.interface_names();
        for f in &findings {
            let Some(w) = &f.witness else { continue };
            let mut e = engine(prog.clone());
            e.set_interfaces(&names);
            let d = e.decide(&w.packet.packet());
            prop_assert_eq!(d.rule, w.rule, "witness of {:?}\n{}", f, text);
            prop_assert_eq!(Some(d.verdict), w.verdict);
            if f.kind == Kind::Unreachable {
                prop_assert!(matches_alone(&e, &w.packet.packet(), f.rule.index));
            }
        }
    }

    #[test]
    fn search_agrees_with_every_packet(rules in ruleset(6), query in body(), allow in any::<bool>(), draw in any::<bool>()) {
        let prog = compile(&rules.join("\n"));
        let q = compile(&format!("count {query}"));
        let packets = universe();
        let mut a = Analyser::new(&[&prog, &q]);
        if draw {
            a.budget = 0;
        }
        let env = weir_engine::Env::default();
        let verdict = if allow { Verdict::Pass } else { Verdict::Drop };
        let goal = Goal { verdict: Some(verdict), ..Goal::default() };
        let found = search(&mut a, &prog, &env, &q, &goal).unwrap();
        prop_assert!(found.caveat.is_none());
        let mut e = engine(prog.clone());
        let qe = engine(q.clone());
        let truth = packets.iter().any(|p| matches_alone(&qe, p, 0) && e.decide(p).verdict == verdict);
        prop_assert_eq!(found.witness.is_some(), truth);
        if let Some(w) = found.witness {
            let mut e = engine(prog.clone());
            e.set_interfaces(&a.interface_names());
            let p = w.packet.packet();
            prop_assert_eq!(e.decide(&p).verdict, verdict);
            let mut qe = engine(q);
            qe.set_interfaces(&a.interface_names());
            prop_assert!(matches_alone(&qe, &p, 0));
        }
    }

    #[test]
    fn diff_agrees_with_every_packet(old in ruleset(6), new in ruleset(6), by_rule in any::<bool>()) {
        let (po, pn) = (compile(&old.join("\n")), compile(&new.join("\n")));
        let packets = universe();
        let mut a = Analyser::new(&[&po, &pn]);
        let env = weir_engine::Env::default();
        let opts = DiffOptions { rules: by_rule };
        let d = diff(&mut a, &po, &pn, &env, &opts).unwrap();
        prop_assert!(d.caveat.is_none());
        let (mut eo, mut en) = (engine(po.clone()), engine(pn.clone()));
        let mut truth = BTreeSet::new();
        for p in &packets {
            let (x, y) = (eo.decide(p), en.decide(p));
            let (rx, ry) = (x.rule.unwrap(), y.rule.unwrap());
            let same_rule = po.rules[rx].number == pn.rules[ry].number && po.rules[rx].text == pn.rules[ry].text;
            if x.verdict != y.verdict || (by_rule && !same_rule) {
                truth.insert((rx, ry));
            }
        }
        let said: BTreeSet<(usize, usize)> = d.changes.iter().map(|c| (c.old.index, c.new.index)).collect();
        prop_assert_eq!(&said, &truth, "old:\n{}\nnew:\n{}", old.join("\n"), new.join("\n"));
        let names = a.interface_names();
        eo.set_interfaces(&names);
        en.set_interfaces(&names);
        for c in &d.changes {
            let p = c.witness.packet();
            prop_assert_eq!((eo.decide(&p).rule, en.decide(&p).rule), (Some(c.old.index), Some(c.new.index)));
        }
    }
}
