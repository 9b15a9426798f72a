//! Differential test: the classifiers against the linear walk on
//! `weir_classbench::gen` rulesets of 10 to 20,000 rules, with count,
//! skipto, call/return, log, deny, or-blocks, `not`, `me`, a lookup table,
//! options and IPv6 mixed in (`benches/common/rulegen.rs`).
//! Same deciding rule for every packet, same per-rule counters.

#[path = "../benches/common/rulegen.rs"]
mod rulegen;

use rulegen::Kind;
use weir_engine::{load, CompileOptions, Engine, WalkKind};
use weir_rules::Names;
use weir_wire::v4_mapped;

fn engine(text: &str, walk: WalkKind) -> Engine {
    let prog =
        load(text, &Names::default(), &CompileOptions::default()).expect("generated rules compile");
    let mut e = Engine::builder(prog)
        .walk(walk)
        .me(vec![(v4_mapped(rulegen::ME), 4)])
        .build();
    e.set_interfaces(&[Some("eth0"), Some("wan0")]);
    e
}

/// Runs the trace through the linear walk and each classifier; returns the
/// candidate walk's share of rules that decided (a sanity figure).
fn differential(kind: Kind, n: usize, seed: u64, extras: bool, packets: usize) {
    let rs = rulegen::ruleset(kind, n, seed, extras);
    let trace = rulegen::trace(&rs, packets, seed + 1);
    let mut linear = engine(&rs.text, WalkKind::Linear);
    let mut walks = vec![engine(&rs.text, WalkKind::Trie)];
    if n <= 2000 {
        walks.push(engine(&rs.text, WalkKind::Bits));
    }
    for e in &walks {
        assert!(
            e.classified(),
            "{} {n}: {:?} built",
            kind.name(),
            e.walk_kind()
        );
    }
    let mut decided_by_rule = 0;
    let mut linear_decisions = Vec::with_capacity(trace.len());
    for (k, p) in trace.iter().enumerate() {
        let want = linear.decide(p);
        linear_decisions.push(want);
        decided_by_rule += usize::from(want.rule != Some(n));
        for e in &mut walks {
            assert_eq!(
                e.decide(p),
                want,
                "{} {n} rules seed {seed}, {:?}, packet {k}: {p:?}",
                kind.name(),
                e.walk_kind()
            );
        }
    }
    // The trie walked in batches (`decide_batch`): the same decisions, in
    // packet order, and the same counters.
    let mut batched = engine(&rs.text, WalkKind::Trie);
    let mut decisions = Vec::new();
    for (c, chunk) in trace.chunks(37).enumerate() {
        batched.decide_batch(chunk, &mut decisions);
        for (k, (p, got)) in chunk.iter().zip(&decisions).enumerate() {
            let k = c * 37 + k;
            assert_eq!(
                Some(got),
                linear_decisions.get(k),
                "{} {n} rules seed {seed}, batched, packet {k}: {p:?}",
                kind.name()
            );
        }
    }
    walks.push(batched);
    for e in &walks {
        assert!(
            e.counters() == linear.counters(),
            "{} {n} rules seed {seed}, {:?}: counters differ",
            kind.name(),
            e.walk_kind()
        );
    }
    // The trace exercises the rules, not just the default rule.
    assert!(
        decided_by_rule * 4 > packets,
        "{decided_by_rule} of {packets} packets decided by a rule"
    );
}

#[test]
fn small_rulesets_with_every_feature() {
    for seed in 0..30 {
        for kind in Kind::ALL {
            differential(kind, 10 + (seed as usize * 7) % 90, seed, true, 300);
        }
    }
}

#[test]
fn thousand_rules() {
    for seed in 0..3 {
        for kind in Kind::ALL {
            differential(kind, 1000, seed, true, 3000);
            differential(kind, 1000, seed, false, 3000);
        }
    }
}

#[test]
fn twenty_thousand_rules() {
    for kind in Kind::ALL {
        differential(kind, 20_000, 1, true, 2000);
        differential(kind, 20_000, 2, false, 2000);
    }
}

/// A leaf may list every rule (70,000 `count` rules that admit every
/// packet, then one deny): the merged walk visits each once, and the
/// counters equal the linear walk's.
#[test]
fn leaf_lists_of_every_rule() {
    let mut text = String::new();
    for _ in 0..70_000 {
        text += "1 count ip from any to any\n";
    }
    text += "2 deny tcp from any to any 22\n";
    let mut linear = engine(&text, WalkKind::Linear);
    let mut trie = engine(&text, WalkKind::Trie);
    assert!(trie.classified());
    let rs = rulegen::ruleset(Kind::Acl, 10, 1, false);
    let trace = rulegen::trace(&rs, 20, 2);
    for p in &trace {
        assert_eq!(trie.decide(p), linear.decide(p));
    }
    assert!(trie.counters() == linear.counters());
    assert_eq!(trie.counters()[69_999].packets, 20);
}

/// The decorated sets hold every decoration the differential test is
/// meant to cover, and their traces reach the IPv6 rules.
#[test]
fn extras_hold_every_decoration() {
    let mut text = String::new();
    let mut v6_packets = 0;
    for kind in Kind::ALL {
        let rs = rulegen::ruleset(kind, 1000, 4, true);
        let trace = rulegen::trace(&rs, 3000, 5);
        v6_packets += trace.iter().filter(|p| p.ip_version == 6).count();
        text += &rs.text;
    }
    for want in [
        " count ",
        " skipto ",
        " call ",
        " return ",
        " log ",
        "table dsts add ",
        "table(dsts)",
        "2001:db8:",
        " from me ",
        " from not ",
        "{ tcp or udp }",
        " or 10.9.9.9",
        " iplen 40-1000",
        " setup",
        " tcpflags ",
        " out via eth*",
        " in",
        " deny ",
    ] {
        assert!(text.contains(want), "no {want:?} in the decorated sets");
    }
    assert!(v6_packets > 20, "{v6_packets} IPv6 packets");
}
