//! ppp filter bytes → `Source` → `ppp::parse_source` (errors render), and
//! as a ppp.conf → `ppp::parse_conf_source` for each label; whatever parses
//! must print and re-parse to the same filters, and each set must translate
//! (or be refused with diagnostics) into ipfw rules that print, re-parse,
//! compile and evaluate without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::net::Ipv4Addr;
use weir_engine::{compile, CompileOptions, Engine};
use weir_rules::ppp::{self, Bindings, FilterSet, PppFilters};
use weir_rules::{parse, print_ruleset, render_all, Names, Source};

fuzz_target!(|data: &[u8]| {
    let source = Source::new(data);
    let text = source.text();
    let names = Names::default();
    let _ = ppp::detect(text);
    match ppp::parse_source(&source, &names) {
        Ok(l) => check(text, &l.filters, &names),
        Err(errors) => {
            let _ = render_all("fuzz.filter", text, &errors);
        }
    }
    // As a ppp.conf: a few labels, default's and load's lines included.
    for label in ppp::conf_labels(text).iter().take(4) {
        if let Ok(l) = ppp::parse_conf_source(&source, label, &names) {
            check(text, &l.filters, &names);
        }
    }
});

fn check(text: &str, filters: &PppFilters, names: &Names) {
    let printed = ppp::print(filters);
    let reparsed = match ppp::parse(&printed, names) {
        Ok(l) => l.filters,
        Err(e) => panic!("printed filters do not parse: {e:?}\ninput: {text:?}\nprinted: {printed:?}"),
    };
    assert_eq!(filters, &reparsed, "round trip changed the filters\nprinted: {printed:?}");
    assert_eq!(printed, ppp::print(&reparsed), "printing is not a fixed point");

    let bind = Bindings {
        myaddr: Some(Ipv4Addr::new(10, 1, 2, 3)),
        hisaddr: Some(Ipv4Addr::new(192, 0, 2, 1)),
        hisaddr6: Some("2001:db8::1".parse().unwrap()),
        dns1: Some(Ipv4Addr::new(198, 51, 100, 53)),
        hosts: [("gate".to_owned(), Ipv4Addr::new(192, 0, 2, 9))].into(),
        ..Bindings::default()
    };
    for set in FilterSet::ALL {
        let Ok(t) = ppp::translate(filters, set, &bind, names) else { continue };
        let ipfw = print_ruleset(&t.ruleset);
        let back = parse(&ipfw).unwrap_or_else(|e| panic!("translation does not parse: {e:?}\n{ipfw}"));
        assert_eq!(back, t.ruleset, "translation does not read back\n{ipfw}");
        let prog = compile(&t.ruleset, names, &CompileOptions::default())
            .unwrap_or_else(|e| panic!("translation does not compile: {e:?}\n{ipfw}"));
        let mut engine = Engine::new(prog);
        for (link, frame) in PACKETS {
            let p = weir_wire::decode(weir_wire::LinkType(*link), frame, 0);
            engine.decide(&p);
        }
    }
}

/// Raw IPv4 TCP SYN 10.1.2.3:1234 → 192.0.2.1:80, and an IPv6 ICMPv6 echo.
static PACKETS: &[(u32, &[u8])] = &[
    (
        228,
        &[
            0x45, 0x00, 0x00, 0x28, 0x00, 0x01, 0x00, 0x00, 0x40, 0x06, 0x00, 0x00, 10, 1, 2, 3,
            192, 0, 2, 1, 0x04, 0xd2, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0x20, 0x00,
            0, 0, 0, 0,
        ],
    ),
    (
        229,
        &[
            0x60, 0, 0, 0, 0x00, 0x08, 58, 64, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 1, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 128, 0, 0, 0, 0,
            1, 0, 1,
        ],
    ),
];
