//! ppp filter files: accepted forms, the final state of each set, errors
//! with spans, and the translation to ipfw rules.

use std::net::Ipv4Addr;
use weir_rules::ppp::{self, Bindings, FilterSet, Role};
use weir_rules::{parse_rule, print_ruleset, Names};

fn parse(text: &str) -> ppp::PppFilters {
    ppp::parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
}

fn error(text: &str) -> (u32, u32, String) {
    let errs = ppp::parse(text).expect_err(text);
    let e = &errs[0];
    (e.span.line, e.span.col, e.message.clone())
}

fn bound() -> Bindings {
    Bindings {
        myaddr: Some(Ipv4Addr::new(192, 0, 2, 1)),
        hisaddr: Some(Ipv4Addr::new(192, 0, 2, 254)),
        dns0: Some(Ipv4Addr::new(198, 51, 100, 53)),
        dns1: Some(Ipv4Addr::new(198, 51, 100, 54)),
    }
}

/// The translated set as ipfw text, comments dropped.
fn ipfw(text: &str, set: FilterSet) -> Vec<String> {
    let t = ppp::translate(&parse(text), set, &bound(), &Names::default())
        .unwrap_or_else(|e| panic!("{e:?}"));
    t.ruleset
        .rules
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.comment = None;
            format!("{} {r}", r.number)
        })
        .collect()
}

#[test]
fn canonical_forms_read_back() {
    let cases = [
        ("set filter in 0 permit", "set filter in 0 permit"),
        (
            "  set filter out 3 deny ! 10.0.0.0/8 ANY TCP timeout 30 src GT 1023 dst eq http estab syn finrst  # note",
            "set filter out 3 deny ! 10.0.0.0/8 any tcp timeout 30 src gt 1023 dst eq http estab syn finrst",
        ),
        ("SET FILTER dial 0x2 permit 0.0.0.0/0 DNS0 udp dst eq 53", "set filter dial 2 permit 0.0.0.0/0 DNS0 udp dst eq 53"),
        ("set filter alive 0 deny icmp src eq 8", "set filter alive 0 deny icmp src eq 8"),
        ("set filter in 0 permit 2001:db8::/32 any gre", "set filter in 0 permit 2001:db8::/32 any gre"),
        ("set filter in 5 permit 10.0.0.1/32 any all timeout 0", "set filter in 5 permit 10.0.0.1 any all timeout 0"),
    ];
    for (input, want) in cases {
        let got = ppp::print(&parse(input));
        assert_eq!(got.trim_end(), want, "input: {input}");
        assert_eq!(ppp::print(&parse(&got)), got, "fixed point: {got}");
    }
}

#[test]
fn later_lines_replace_and_clear() {
    let f = parse(
        "set filter in 0 deny tcp\n\
         set filter in 0 permit udp\n\
         set filter in 1 permit\n\
         set filter in 1 clear\n\
         set filter out 4 deny\n\
         set filter out -1\n\
         set filter out 6 permit\n",
    );
    let rules: Vec<String> = f.rules(FilterSet::In).map(|r| r.to_string()).collect();
    assert_eq!(rules, ["0 permit udp"]);
    let out: Vec<String> = f.rules(FilterSet::Out).map(|r| r.to_string()).collect();
    assert_eq!(out, ["6 permit"]);
    assert!(f.is_empty(FilterSet::Dial));
}

#[test]
fn errors_point_at_the_word() {
    let cases: &[(&str, (u32, u32, &str))] = &[
        (
            "set filter in 40 permit",
            (1, 15, "at most 40 rules, 0..39"),
        ),
        ("set filter up 0 permit", (1, 12, "unknown filter set 'up'")),
        (
            "set filter in 3 2 any any",
            (1, 17, "can only jump forward"),
        ),
        ("set filter in 3 allow", (1, 17, "unknown action 'allow'")),
        (
            "\nset filter in 0 permit 10.0.0.1",
            (2, 32, "destination address"),
        ),
        (
            "set filter in 0 permit 10.0.0.1 any tcp src eq 0",
            (1, 48, "port 1..65535"),
        ),
        (
            "set filter in 0 permit udp estab",
            (1, 28, "estab only follows tcp"),
        ),
        (
            "set filter in 0 permit gre src eq 5",
            (1, 28, "port tests only follow tcp or udp"),
        ),
        (
            "set filter in 0 permit icmp dst eq 8",
            (1, 29, "only 'src eq TYPE'"),
        ),
        (
            "set filter in 0 permit tcp dst eq 80 src eq 1",
            (1, 38, "ppp's order"),
        ),
        (
            "set filter in 0 permit timeout 5",
            (1, 24, "timeout comes after a protocol"),
        ),
        (
            "set filter in 0 permit any any tcp estab timeout 5",
            (1, 42, "unexpected 'timeout'"),
        ),
        (
            "set filter in 0 permit !10.0.0.1 any",
            (1, 24, "'!' is a word of its own"),
        ),
        (
            "set filter in 0 permit 10.0.0.0/33 any",
            (1, 24, "bad mask width"),
        ),
        (
            "set filter in 0 permit 10.0.0.1 ::1",
            (1, 33, "families differ"),
        ),
        (
            "set filter in 0 permit HISADDR/24 any",
            (1, 24, "ignores a width"),
        ),
        ("set filter in 010 permit", (1, 15, "octal")),
        ("set filter in 0 clear now", (1, 23, "unexpected 'now'")),
        ("default:", (1, 1, "ppp.conf label")),
        (" set device /dev/cuau0", (1, 2, "other than 'set filter'")),
        ("set filter in", (1, 14, "unexpected end of line")),
    ];
    for (text, (line, col, msg)) in cases {
        let (l, c, m) = error(text);
        assert!(m.contains(msg), "{text}: message {m:?} lacks {msg:?}");
        assert_eq!((l, c), (*line, *col), "{text}: {m}");
    }
}

#[test]
fn every_line_is_checked() {
    let errs =
        ppp::parse("set filter in 99 permit\nset filter in 0 bogus\nset filter in 1 permit\n")
            .expect_err("two bad lines");
    assert_eq!(errs.len(), 2);
    assert_eq!((errs[0].span.line, errs[1].span.line), (1, 2));
}

#[test]
fn translation_numbers_rules_and_ends_in_the_implicit_deny() {
    let text = "set filter in 0 2 10.0.0.0/8 any\n\
                set filter in 1 deny ! MYADDR any tcp dst lt 1024 syn\n\
                set filter in 2 permit any HISADDR udp src gt 65535\n\
                set filter in 3 permit icmp src eq 8\n\
                set filter in 4 deny any any tcp finrst estab\n";
    assert_eq!(
        ipfw(text, FilterSet::In),
        [
            "1 allow ip4 from any to any frag",
            "100 skipto 300 ip from 10.0.0.0/8 to any",
            "200 skipto 300 tcp from 192.0.2.1 to any 0-1023 tcpflags syn",
            "250 deny log ip from any to any",
            "300 allow udp from any not 0-65535 to 192.0.2.254",
            "400 allow icmp from any to any icmptypes 8",
            "500 deny log tcp from any to any tcpflags ack not tcpflags !fin,!rst",
            "4100 deny log ip from any to any",
        ]
    );
    // dial and alive deny later fragments; dial logs its permits.
    assert_eq!(
        ipfw(
            "set filter dial 0 permit any DNS1 udp dst eq domain",
            FilterSet::Dial
        ),
        [
            "1 deny log ip4 from any to any frag",
            "100 allow log udp from any to 198.51.100.54 53",
            "4100 deny log ip from any to any",
        ]
    );
}

#[test]
fn translation_reads_back_as_ipfw() {
    let text = "set filter out 0 deny ! any 0.0.0.0/0 tcp src eq 22\nset filter out 7 permit\n";
    let t = ppp::translate(&parse(text), FilterSet::Out, &bound(), &Names::default()).unwrap();
    let printed = print_ruleset(&t.ruleset);
    let again = weir_rules::parse(&printed).unwrap_or_else(|e| panic!("{printed}\n{e:?}"));
    assert_eq!(again, t.ruleset, "{printed}");
    assert!(printed.contains("// ppp: set filter out 0 deny ! any 0.0.0.0/0 tcp src eq 22"));
}

#[test]
fn a_set_without_rule_0_permits_everything() {
    let text = "set filter in 1 deny\nset filter in 2 deny tcp\n";
    let t = ppp::translate(&parse(text), FilterSet::In, &bound(), &Names::default()).unwrap();
    let rules: Vec<String> = t.ruleset.rules.iter().map(|r| r.to_string()).collect();
    assert_eq!(
        rules,
        ["allow ip from any to any // ppp: no rule 0: ppp permits every packet"]
    );
    assert_eq!(t.notes.len(), 1);
    assert!(t.notes[0].message.contains("no rule 0"), "{:?}", t.notes);
    // An empty set is the same, without the note.
    let t = ppp::translate(&parse(text), FilterSet::Out, &bound(), &Names::default()).unwrap();
    assert_eq!(t.ruleset.rules.len(), 1);
    assert!(t.notes.is_empty());
}

#[test]
fn unbound_symbols_and_unknown_names_are_errors_with_spans() {
    let text = "set filter in 0 permit any any\nset filter in 1 deny HISADDR MYADDR tcp dst eq nosuchsvc\nset filter in 2 deny any any nosuchproto\n";
    let errs = ppp::translate(
        &parse(text),
        FilterSet::In,
        &Bindings::default(),
        &Names::default(),
    )
    .expect_err("unbound");
    let msgs: Vec<String> = errs
        .iter()
        .map(|e| format!("{}:{}: {}", e.span.line, e.span.col, e.message))
        .collect();
    assert_eq!(
        msgs,
        [
            "2:22: HISADDR used but --hisaddr not given",
            "3:30: unknown protocol 'nosuchproto'",
        ]
    );
    let errs = ppp::translate(&parse(text), FilterSet::In, &bound(), &Names::default())
        .expect_err("names");
    assert_eq!(errs[0].message, "unknown service 'nosuchsvc'");
    // Rules of other sets are not translated, so they need no bindings.
    assert!(ppp::translate(
        &parse(text),
        FilterSet::Out,
        &Bindings::default(),
        &Names::default()
    )
    .is_ok());
}

#[test]
fn icmp_types_beyond_weirs_bitmap_are_refused() {
    let t = ppp::translate(
        &parse("set filter in 0 permit icmp src eq 40"),
        FilterSet::In,
        &bound(),
        &Names::default(),
    );
    assert!(t.unwrap_err()[0].message.contains("0..31"));
    let t = ppp::translate(
        &parse("set filter in 0 permit ipv6-icmp src eq 128"),
        FilterSet::In,
        &bound(),
        &Names::default(),
    );
    assert!(t.is_err());
}

#[test]
fn roles_follow_the_numbering() {
    assert_eq!(ppp::role_of(ppp::FRAGMENT_RULE), Role::Fragment);
    assert_eq!(ppp::role_of(ppp::rule_number(0)), Role::Rule(0));
    assert_eq!(
        ppp::role_of(ppp::rule_number(3) + ppp::INVERT_OFFSET),
        Role::Rule(3)
    );
    assert_eq!(ppp::role_of(ppp::rule_number(39)), Role::Rule(39));
    assert_eq!(ppp::role_of(ppp::IMPLICIT_DENY_RULE), Role::ImplicitDeny);
}

#[test]
fn detection_looks_at_the_first_command() {
    assert!(ppp::looks_like_ppp("# ppp\n\n  set filter in 0 permit\n"));
    assert!(!ppp::looks_like_ppp("# ipfw\nallow ip from any to any\n"));
    assert!(!ppp::looks_like_ppp(""));
    // An ipfw rule never starts with `set`.
    assert!(parse_rule("set filter in 0 permit").is_err());
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn endpoint() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("any".to_owned()),
            Just("MYADDR".to_owned()),
            Just("hisaddr".to_owned()),
            Just("DNS0".to_owned()),
            Just("DNS1".to_owned()),
            (any::<[u8; 4]>(), 0u8..=32).prop_map(|(a, w)| format!("{}/{w}", Ipv4Addr::from(a))),
            any::<[u8; 4]>().prop_map(|a| Ipv4Addr::from(a).to_string()),
        ]
    }

    fn proto_tail() -> impl Strategy<Value = String> {
        let port = prop_oneof![
            (1u32..=65535).prop_map(|p| p.to_string()),
            Just("http".to_owned()),
            Just("domain".to_owned()),
            Just("ftp-data".to_owned())
        ];
        let op = prop_oneof![Just("lt"), Just("eq"), Just("gt")];
        let ports = (
            proptest::option::of((op.clone(), port.clone())),
            proptest::option::of((op, port)),
        )
            .prop_map(|(s, d)| {
                let mut t = String::new();
                if let Some((o, p)) = s {
                    t += &format!(" src {o} {p}");
                }
                if let Some((o, p)) = d {
                    t += &format!(" dst {o} {p}");
                }
                t
            });
        let timeout = proptest::option::of(0u32..100_000)
            .prop_map(|t| t.map(|t| format!(" timeout {t}")).unwrap_or_default());
        prop_oneof![
            Just(String::new()),
            (timeout.clone(), ports.clone(), any::<[bool; 3]>()).prop_map(|(t, p, f)| {
                let flags: String = ["estab", "syn", "finrst"]
                    .iter()
                    .zip(f)
                    .filter(|(_, on)| *on)
                    .map(|(w, _)| format!(" {w}"))
                    .collect();
                format!(" tcp{t}{p}{flags}")
            }),
            (timeout.clone(), ports).prop_map(|(t, p)| format!(" udp{t}{p}")),
            (timeout.clone(), proptest::option::of(0u8..=40)).prop_map(|(t, ty)| format!(
                " icmp{t}{}",
                ty.map(|ty| format!(" src eq {ty}")).unwrap_or_default()
            )),
            (
                timeout,
                prop_oneof![Just("all"), Just("gre"), Just("ospf"), Just("ip")]
            )
                .prop_map(|(t, p)| format!(" {p}{t}")),
        ]
    }

    fn line() -> impl Strategy<Value = String> {
        (
            prop_oneof![Just("in"), Just("out"), Just("dial"), Just("alive")],
            0u8..40,
            prop_oneof![
                Just("permit".to_owned()),
                Just("deny".to_owned()),
                (0u8..40).prop_map(|n| n.to_string()),
                Just("clear".to_owned())
            ],
            any::<bool>(),
            proptest::option::of((endpoint(), endpoint())),
            proto_tail(),
        )
            .prop_map(|(set, n, action, invert, addrs, tail)| {
                let mut l = format!("set filter {set} {n} {action}");
                if action == "clear" {
                    return l;
                }
                if invert {
                    l += " !";
                }
                if let Some((s, d)) = addrs {
                    l += &format!(" {s} {d}");
                }
                l + &tail
            })
    }

    proptest! {
        /// Generated files parse (or fail with a message), print to a fixed
        /// point, and translate (or fail with a message) without panic; a
        /// translation reads back as ipfw.
        #[test]
        fn parse_print_translate(lines in proptest::collection::vec(line(), 0..30)) {
            let text = lines.join("\n");
            let Ok(f) = ppp::parse(&text) else { return Ok(()) };
            let printed = ppp::print(&f);
            let again = ppp::parse(&printed).expect("printed form parses");
            prop_assert_eq!(&again, &f);
            for set in FilterSet::ALL {
                if let Ok(t) = ppp::translate(&f, set, &bound(), &Names::default()) {
                    let ipfw = print_ruleset(&t.ruleset);
                    let back = weir_rules::parse(&ipfw).expect("translation reads back");
                    prop_assert_eq!(back, t.ruleset);
                }
            }
        }

        /// Arbitrary text never panics the reader.
        #[test]
        fn any_text(text in "(set filter (in|out) [0-9]{1,2} |[ -~]){0,80}") {
            let _ = ppp::parse(&text);
        }
    }
}
