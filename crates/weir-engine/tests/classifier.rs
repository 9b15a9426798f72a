//! Differential test: the classifiers against the linear walk on
//! `weir_classbench::gen` rulesets of 10 to 20,000 rules, with count,
//! skipto, call/return, log, deny, or-blocks, `not`, `me`, a lookup table,
//! options and IPv6 mixed in (`benches/common/rulegen.rs`), and on random
//! rulesets with build budgets small enough that the automata cannot hold
//! them whole. Same deciding rule for every packet, same per-rule counters.

#[path = "../benches/common/rulegen.rs"]
mod rulegen;

use rulegen::{Kind, Ruleset};
use weir_engine::{load, Budget, CompileOptions, Engine, EngineBuilder, Parts, Simd, WalkKind};
use weir_rules::Names;
use weir_wire::v4_mapped;

fn engine(text: &str, walk: WalkKind) -> Engine {
    engine_with(text, walk, Budget::default())
}

fn builder(text: &str, walk: WalkKind, budget: Budget) -> EngineBuilder {
    let prog =
        load(text, &Names::default(), &CompileOptions::default()).expect("generated rules compile");
    Engine::builder(prog)
        .walk(walk)
        .budget(budget)
        .me(vec![(v4_mapped(rulegen::ME), 4)])
}

fn engine_of(builder: EngineBuilder) -> Engine {
    let mut e = builder.build();
    e.set_interfaces(&[Some("eth0"), Some("wan0")]);
    e
}

fn engine_with(text: &str, walk: WalkKind, budget: Budget) -> Engine {
    engine_of(builder(text, walk, budget))
}

fn differential(kind: Kind, n: usize, seed: u64, extras: bool, packets: usize) -> Parts {
    let rs = rulegen::ruleset(kind, n, seed, extras);
    let name = format!("{} {n} rules seed {seed}", kind.name());
    same_as_linear(&name, &rs, seed, packets, Budget::default())
}

/// Runs a trace of `rs` through the linear walk and each classifier (the
/// tries within `budget`), one by one and batched; returns what the
/// tries' rules went into.
fn same_as_linear(name: &str, rs: &Ruleset, seed: u64, packets: usize, budget: Budget) -> Parts {
    let n = rs.len();
    let trace = rulegen::trace(rs, packets, seed + 1);
    let mut linear = engine(&rs.text, WalkKind::Linear);
    let mut walks = vec![engine_with(&rs.text, WalkKind::Trie, budget)];
    if n <= 2000 {
        walks.push(engine(&rs.text, WalkKind::Bits));
    }
    for e in &walks {
        assert!(e.classified(), "{name}: {:?} built", e.walk_kind());
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
                "{name}, {:?}, packet {k}: {p:?}",
                e.walk_kind()
            );
        }
    }
    // Batched (`decide_batch`): the trie with its automata stepped in
    // each SIMD walk this CPU has (AVX-512, AVX2) and in scalar rounds,
    // and the bit sets with a batch's recursive-table lookups done first:
    // the same decisions, in packet order, and the same counters.
    let mut batched_engines = Vec::new();
    for simd in Simd::here().into_iter().chain([Simd::Off]) {
        let builder = builder(&rs.text, WalkKind::Trie, budget).simd(simd);
        let batched = engine_of(builder.interleave_always());
        assert!(batched.walks_in_batches());
        assert_eq!(batched.simd(), simd);
        batched_engines.push((format!("{simd:?}"), batched));
    }
    if n <= 2000 {
        // The bit sets' recursive tables AND whole sets in AVX-512
        // vectors or in the scalar loop (`Off`, also without the tables).
        for simd in [Simd::Avx512, Simd::Off]
            .into_iter()
            .filter(|s| s.runs_here())
        {
            let bits = engine_of(builder(&rs.text, WalkKind::Bits, budget).simd(simd));
            assert!(bits.simd() == simd || bits.simd() == Simd::Off, "{name}");
            batched_engines.push((format!("bits, {simd:?}"), bits));
        }
    }
    for (how, mut batched) in batched_engines {
        let mut decisions = Vec::new();
        for (c, chunk) in trace.chunks(137).enumerate() {
            batched.decide_batch(chunk, &mut decisions);
            for (k, (p, got)) in chunk.iter().zip(&decisions).enumerate() {
                let k = c * 137 + k;
                assert_eq!(
                    Some(got),
                    linear_decisions.get(k),
                    "{name}, batched, {how}, packet {k}: {p:?}"
                );
            }
        }
        walks.push(batched);
    }
    for e in &walks {
        assert!(
            e.counters() == linear.counters(),
            "{name}, {:?}: counters differ",
            e.walk_kind()
        );
        assert_eq!(e.stats(), linear.stats(), "{name}, {:?}", e.walk_kind());
    }
    // The trace exercises the rules, not just the default rule.
    assert!(
        decided_by_rule * 4 > packets,
        "{decided_by_rule} of {packets} packets decided by a rule"
    );
    walks[0].classifier_parts().expect("a trie")
}

#[test]
fn small_rulesets_with_every_feature() {
    for seed in 0..30 {
        for kind in Kind::ALL {
            differential(kind, 10 + (seed as usize * 7) % 90, seed, true, 300);
        }
    }
}

/// Also each grouping of the rules (`Parts::by_destination`), which the
/// build chooses per ruleset, is among these sets' builds.
#[test]
fn thousand_rules() {
    let mut by_destination = Vec::new();
    for seed in 0..3 {
        for kind in Kind::ALL {
            for extras in [true, false] {
                let parts = differential(kind, 1000, seed, extras, 3000);
                by_destination.push(parts.by_destination);
            }
        }
    }
    assert!(by_destination.contains(&true) && by_destination.contains(&false));
}

#[test]
fn twenty_thousand_rules() {
    for kind in Kind::ALL {
        differential(kind, 20_000, 1, true, 2000);
        differential(kind, 20_000, 2, false, 2000);
    }
}

/// Random rulesets, whose wildcards and ranges blow up automata, within
/// budgets that give up on automata early (the rest in bit blocks), that
/// run out of memory (the rest tried by every packet), and that allow
/// nothing at all: every part of the fallback is walked and agrees.
#[test]
fn random_rulesets_past_the_budget() {
    let tight = Budget {
        bytes: 96 << 20,
        work: 100_000,
    };
    let small = Budget {
        bytes: 200 << 10,
        work: 100_000,
    };
    let none = Budget { bytes: 0, work: 0 };
    let mut mixed = 0;
    for (n, seed, extras) in [(3000, 1, false), (5000, 2, true), (20_000, 3, false)] {
        let rs = rulegen::random(n, seed, extras);
        let name = |b| format!("random {n} rules seed {seed}, budget {b}");
        let parts = same_as_linear(&name("tight"), &rs, seed, 1500, tight);
        assert!(parts.blocks > 0 && parts.unindexed == 0, "{parts:?}");
        mixed += usize::from(parts.automata > 0);
        let parts = same_as_linear(&name("small"), &rs, seed, 1500, small);
        assert!(parts.unindexed > 0, "{parts:?}");
        let parts = same_as_linear(&name("none"), &rs, seed, 300, none);
        assert_eq!((parts.automata, parts.blocks), (0, 0), "{parts:?}");
    }
    assert!(mixed > 0, "no set had both automata and bit blocks");
}

/// The default budget holds a random set whole, in automata and bit
/// blocks, with nothing left for every packet to try.
#[test]
fn random_rulesets_within_the_default_budget() {
    let rs = rulegen::random(20_000, 4, true);
    let parts = same_as_linear("random 20000 rules seed 4", &rs, 4, 2000, Budget::default());
    assert_eq!(parts.unindexed, 0, "{parts:?}");
}

/// Past 32k rules, a family the automata cannot hold whole is built in
/// tiers, each walked only by packets whose walk gets past the tiers
/// before: random and ACL sets with every feature (skipto, call, count,
/// states, tables; the decorated ACL set overflows the automata) and a
/// plain random set decide as the linear walk does, one by one and
/// batched, with the same counters. A plain ACL set, which the automata
/// hold whole, stays in one tier.
#[test]
fn tiered_rulesets() {
    let sets = [
        (
            "random 40000 rules seed 5",
            rulegen::random(40_000, 5, true),
            true,
        ),
        (
            "random 36000 rules seed 7",
            rulegen::random(36_000, 7, false),
            true,
        ),
        (
            "acl 40000 rules seed 6",
            rulegen::ruleset(Kind::Acl, 40_000, 6, true),
            true,
        ),
        (
            "acl 40000 rules seed 8",
            rulegen::ruleset(Kind::Acl, 40_000, 8, false),
            false,
        ),
    ];
    for (name, rs, tiered) in sets {
        let parts = same_as_linear(name, &rs, 5, 3000, Budget::default());
        assert!(parts.head_automata > 0, "{name}: {parts:?}");
        assert_eq!(
            parts.head_automata < parts.automata,
            tiered,
            "{name}: {parts:?}"
        );
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

/// A state made by a `skipto` rule fires at an earlier `check-state` and
/// sends the walk past a rule that would have ended it: the rules after
/// the jump's target stay candidates.
#[test]
fn a_fired_state_jumps_past_a_final_rule() {
    // Rule 10 (index 3) allows, directly or through the state's skipto.
    state_walks_agree(
        "1 check-state\n2 deny tcp from any 81 to any\n\
         3 skipto 10 tcp from any to any 81 keep-state\n10 allow tcp from any to any\n",
        3,
    );
}

/// Without a `check-state`, the `keep-state` rule looks the state up
/// (ipfw(8): the first check-state, keep-state or limit rule does) for a
/// reply its own fields do not match: a probe is a candidate of every
/// packet of a known flow, whatever its fields say.
#[test]
fn a_keep_state_rule_finds_the_reply_its_fields_miss() {
    // Rule 10 (index 2) allows, directly or through the state's skipto.
    state_walks_agree(
        "1 skipto 10 tcp from any to any 81 keep-state\n2 deny tcp from any 81 to any\n\
         10 allow tcp from any to any\n",
        2,
    );
}

/// The same with a `count` rule's state: the walk goes on after the rule
/// that made the state, past a rule that looked final.
#[test]
fn a_fired_count_state_goes_on_past_a_final_rule() {
    // Rule 4 (index 3) allows after the count.
    state_walks_agree(
        "1 check-state\n2 deny tcp from any 81 to any\n\
         3 count tcp from any to any 81 keep-state\n4 allow tcp from any to any\n",
        3,
    );
}

/// A flow to port 81 and back twice: the tries and bitsets decide as the
/// linear walk, which lets rule index `rule` decide each packet.
fn state_walks_agree(text: &str, rule: usize) {
    let tcp = |src: u32, sport: u16, dst: u32, dport: u16| weir_wire::Packet {
        l3: weir_wire::L3::Ip,
        ip_version: 4,
        proto: 6,
        src: v4_mapped(src),
        dst: v4_mapped(dst),
        src_port: sport,
        dst_port: dport,
        has_ports: true,
        tcp_flags: weir_wire::tcp::ACK,
        ..Default::default()
    };
    let there = tcp(0x0a00_0001, 1000, 0x0a00_0002, 81);
    let back = tcp(0x0a00_0002, 81, 0x0a00_0001, 1000);
    let mut linear = engine(text, WalkKind::Linear);
    let mut walks = [engine(text, WalkKind::Trie), engine(text, WalkKind::Bits)];
    let flow = [there, back, back];
    let mut wants = Vec::new();
    for p in flow {
        let want = linear.decide(&p);
        assert_eq!(want.rule, Some(rule));
        wants.push(want);
        for e in &mut walks {
            assert_eq!(e.decide(&p), want, "{:?}", e.walk_kind());
        }
    }
    for e in &walks {
        assert!(e.counters() == linear.counters(), "{:?}", e.walk_kind());
    }
    // In one batch: the state the first packet makes is found by the
    // next two, though the batch looked their classifier keys up before.
    let trie = builder(text, WalkKind::Trie, Budget::default()).interleave_always();
    for mut e in [engine_of(trie), engine(text, WalkKind::Bits)] {
        let mut got = Vec::new();
        e.decide_batch(&flow, &mut got);
        assert_eq!(got, wants, "batched, {:?}", e.walk_kind());
        assert!(e.counters() == linear.counters(), "{:?}", e.walk_kind());
    }
}
