//! The weir engine against the brute-force first match, on generated and
//! random ClassBench sets; the ipfw import against the same reference.

use proptest::prelude::*;
use weir_classbench::gen::{self, Kind};
use weir_classbench::to_weir::{import, import_text, Compiled, Encoding};
use weir_classbench::{first_match, parse_filters, Fields, Filter, Header, Prefix};
use weir_engine::{CompileOptions, Engine};
use weir_rules::Names;
use weir_wire::{v4_mapped, Packet, L3};

fn engine(c: &Compiled, linear: bool) -> Engine {
    let prog = weir_engine::compile(&c.ruleset, &Names::default(), &CompileOptions::default())
        .expect("filters compile");
    Engine::builder(prog).linear(linear).build()
}

/// Every header's answer from the engine equals the reference's.
fn check(filters: &[Filter], headers: &[Header], linear: bool) {
    check_fields(filters, headers, linear, Fields::FiveTuple);
}

fn check_fields(filters: &[Filter], headers: &[Header], linear: bool, fields: Fields) {
    let c = Compiled::with_fields(filters, fields).expect("few flags values");
    let mut e = engine(&c, linear);
    if filters.len() >= 100 {
        // Both walks are exercised: the classifier is on unless told off.
        assert_eq!(e.classified(), !linear);
    }
    for (i, h) in headers.iter().enumerate() {
        let got = c.filter_number(e.decide(&c.packet(h)).rule);
        let want = first_match(filters, h, fields);
        assert_eq!(
            got, want,
            "header {i} {h:?} ({:?}, linear {linear})",
            c.encoding
        );
    }
}

#[test]
fn generated_sets_match_the_reference() {
    for kind in Kind::ALL {
        for (n, seed) in [(100, 1), (500, 2), (2000, 3)] {
            let f = gen::filters(kind, n, seed);
            let t = gen::trace(&f, 4000, seed + 100);
            assert_eq!(Compiled::new(&f).encoding, Encoding::Native);
            check(&f, &t, false);
            check(&f, &t, true);
        }
    }
}

/// Filters with ports on icmp or any protocol, and odd masks, force the
/// proto-in-TOS encoding; it must still be exact.
#[test]
fn odd_protocols_use_the_tos_encoding_exactly() {
    let f = parse_filters(
        "@10.0.0.0/8\t0.0.0.0/0\t0 : 65535\t80 : 80\t0x00/0x00\n\
         @10.0.0.0/8\t0.0.0.0/0\t1000 : 2000\t0 : 65535\t0x01/0xFF\n\
         @0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x10/0xF0\n\
         @0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x06/0xFF\n",
    )
    .unwrap();
    let c = Compiled::new(&f);
    assert_eq!(c.encoding, Encoding::ProtoInTos);
    let mut headers = Vec::new();
    for proto in [0u8, 1, 6, 17, 18, 31, 32, 255] {
        for (sport, dport) in [(5, 80), (1500, 81), (999, 80), (2001, 22)] {
            for src in [0x0a00_0001, 0x0b00_0001] {
                headers.push(Header {
                    src,
                    sport,
                    dport,
                    proto,
                    ..Header::default()
                });
            }
        }
    }
    check(&f, &headers, false);
    check(&f, &headers, true);
}

fn prefix() -> impl Strategy<Value = Prefix> {
    // Few distinct networks so that filters overlap and nest.
    (0u32..4, 0u8..=32).prop_map(|(net, len)| Prefix {
        addr: 0x0a00_0000 | net << 22 | 0x1234,
        len,
    })
}

fn ports() -> impl Strategy<Value = (u16, u16)> {
    prop_oneof![
        Just((0, 65535)),
        Just((1024, 65535)),
        Just((0, 1023)),
        (0u16..100).prop_map(|p| (p, p)),
        (0u16..100, 0u16..100).prop_map(|(a, b)| (a.min(b), a.max(b))),
    ]
}

fn filter() -> impl Strategy<Value = Filter> {
    let proto = prop_oneof![
        Just((0u8, 0u8)),
        Just((6, 0xff)),
        Just((17, 0xff)),
        Just((1, 0xff)),
        (any::<u8>(), any::<u8>()).prop_map(|(v, m)| (v & m, m)),
    ];
    let flags = prop_oneof![
        Just(None),
        Just(Some((0u16, 0u16))),
        Just(Some((0x1000, 0x1000))),
        Just(Some((0, 0x0200))),
        Just(Some((0xffff, 0))),
        Just(Some((0, 40))),
    ];
    (prefix(), prefix(), ports(), ports(), proto, flags).prop_map(
        |(src, dst, sport, dport, (p, m), flags)| Filter {
            src,
            dst,
            sport,
            dport,
            proto: p,
            proto_mask: m,
            flags,
        },
    )
}

fn header() -> impl Strategy<Value = Header> {
    (
        0u32..4,
        any::<u32>(),
        0u32..4,
        any::<u32>(),
        0u16..120,
        0u16..120,
        prop_oneof![Just(6u8), Just(17), Just(1), any::<u8>()],
        prop_oneof![
            Just(None),
            Just(Some(0u32)),
            Just(Some(0x1000_1000)),
            Just(Some(0x0000_0200)),
            Just(Some(40)),
            Just(Some(u32::MAX)),
            any::<u32>().prop_map(Some),
        ],
    )
        .prop_map(|(sn, sh, dn, dh, sport, dport, proto, flags)| Header {
            src: 0x0a00_0000 | sn << 22 | (sh & 0x3f_ffff),
            dst: 0x0a00_0000 | dn << 22 | (dh & 0x3f_ffff),
            sport: if sport >= 100 { sport * 500 } else { sport },
            dport: if dport >= 100 { dport * 500 } else { dport },
            proto,
            flags,
            ..Header::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_sets_match_the_reference(
        filters in prop::collection::vec(filter(), 1..40),
        headers in prop::collection::vec(header(), 1..200),
    ) {
        for fields in [Fields::FiveTuple, Fields::WithFlags] {
            check_fields(&filters, &headers, false, fields);
            check_fields(&filters, &headers, true, fields);
        }
    }
}

/// `import` prints, parses back to the same rules, and keeps the order.
#[test]
fn import_round_trips_through_the_rule_parser() {
    for kind in Kind::ALL {
        let f = gen::filters(kind, 700, 9);
        let text = import_text(&f, "gen");
        let parsed = weir_rules::parse(&text).expect("imported text parses");
        assert_eq!(parsed, import(&f));
        assert_eq!(parsed.rules.len(), f.len());
        assert!(parsed.rules.windows(2).all(|w| w[0].number < w[1].number));
    }
    // Past 65534 filters the numbers still fit and keep order.
    let f = gen::filters(Kind::Acl, 70_000, 1);
    let parsed = weir_rules::parse(&import_text(&f, "gen")).expect("parses");
    assert_eq!(parsed.rules.len(), 70_000);
    assert!(parsed.rules.windows(2).all(|w| w[0].number <= w[1].number));
}

/// The packet a real tcp/udp/sctp frame decodes to has ports; others not.
fn ipfw_packet(h: &Header) -> Packet {
    Packet {
        src: v4_mapped(h.src),
        dst: v4_mapped(h.dst),
        l3: L3::Ip,
        ip_version: 4,
        proto: h.proto,
        src_port: h.sport,
        dst_port: h.dport,
        has_ports: matches!(h.proto, 6 | 17 | 132),
        ttl: 64,
        ..Packet::default()
    }
}

/// On generated sets (ports only with tcp/udp), the imported ruleset,
/// loaded as a person would, with ipfw's semantics, gives ClassBench's
/// answers; the default rule (index = filters) is "no match".
#[test]
fn imported_generated_sets_answer_like_classbench() {
    for kind in Kind::ALL {
        let f = gen::filters(kind, 800, 21);
        let t = gen::trace(&f, 3000, 22);
        let prog = weir_engine::load(
            &import_text(&f, "gen"),
            &Names::default(),
            &CompileOptions::default(),
        )
        .expect("imported rules compile");
        let mut e = Engine::new(prog);
        for h in &t {
            let rule = e.decide(&ipfw_packet(h)).rule.expect("IP packet");
            let got = if rule < f.len() { rule as u32 + 1 } else { 0 };
            assert_eq!(got, first_match(&f, h, Fields::FiveTuple), "{kind:?} {h:?}");
        }
    }
}
