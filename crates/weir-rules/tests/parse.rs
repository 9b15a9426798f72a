//! Parser behaviour: accepted forms, canonical printing, errors with spans.

use weir_rules::*;

fn one(text: &str) -> Rule {
    parse_rule(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn canon(text: &str) -> String {
    one(text).to_string()
}

#[test]
fn canonical_forms() {
    let cases = [
        ("add 100 allow ip from any to any", "allow ip from any to any"),
        ("pass all from any to any", "allow ip from any to any"),
        ("ipfw -q add 5 permit tcp from any to any 80", "allow tcp from any to any 80"),
        ("drop udp from 10.0.0.0/8 53 to me", "deny udp from 10.0.0.0/8 53 to me"),
        (
            "deny log logamount 5 tcp from not 10.1.2.3,10.1.2.4 to any 1-1023,https setup",
            "deny log logamount 5 tcp from not 10.1.2.3,10.1.2.4 to any 1-1023,https setup",
        ),
        (
            "allow { tcp or udp } from { 192.0.2.1 or 198.51.100.0/24 } to any domain",
            "allow { tcp or udp } from { 192.0.2.1 or 198.51.100.0/24 } to any domain",
        ),
        (
            "count tcp from any to any tcpflags !ack,syn",
            "count tcp from any to any tcpflags syn,!ack",
        ),
        (
            "deny icmp from any to any icmptypes echo,0,unreach",
            "deny icmp from any to any icmptypes 0,3,8",
        ),
        ("reject ip from 10.0.0.0:255.0.0.0 to any", "reject ip from 10.0.0.0:255.0.0.0 to any"),
        ("unreach port udp from any to any 7", "unreach port udp from any to any 7"),
        ("unreach 200 udp from any to any", "unreach 200 udp from any to any"),
        ("skipto 1000 ip from any to any in via eth0", "skipto 1000 ip from any to any in via eth0"),
        ("check-state", "check-state"),
        ("return ip from any to any", "return"),
        ("deny ip6 from 2001:db8::/32 to any", "deny ip6 from 2001:db8::/32 to any"),
        (
            "deny ip from any to any not established iplen 40-60,1500 ipttl 1 iptos lowdelay,!mincost",
            "deny ip from any to any not established iplen 40-60,1500 ipttl 1 iptos lowdelay,!mincost",
        ),
        ("allow tcp from any ftp\\-data to any", "allow tcp from any ftp\\-data to any"),
        ("allow ip from any to any // trusted  ", "allow ip from any to any // trusted"),
        ("deny ip from table(bad) to any", "deny ip from table(bad) to any"),
        ("allow 47 from any to any frag ipoptions rr,!ts", "allow 47 from any to any frag ipoptions rr,!ts"),
    ];
    for (input, want) in cases {
        assert_eq!(canon(input), want, "input: {input}");
        // And the canonical form is a fixed point.
        assert_eq!(canon(want), want);
    }
}

#[test]
fn auto_numbering_follows_ipfw() {
    let rs = parse("allow ip from any to any\n500 deny ip from any to any\n\n# c\ncount ip from any to any\n20 count ip from any to any\nallow ip from any to any\n").unwrap();
    let numbers: Vec<u16> = rs.rules.iter().map(|r| r.number).collect();
    assert_eq!(numbers, [100, 500, 600, 20, 700]);
}

#[test]
fn auto_numbering_runs_out() {
    let err = parse("65500 allow ip from any to any\nallow ip from any to any\n").unwrap_err();
    assert_eq!(err[0].span.line, 2);
    assert!(err[0].message.contains("65534"), "{}", err[0].message);
}

#[test]
fn errors_name_line_and_column() {
    let src =
        "allow ip from any to any\ndeny tcp from any to any 99999\nallow tcp frm any to any\n";
    let errs = parse(src).unwrap_err();
    assert_eq!(errs.len(), 2);
    assert_eq!((errs[0].span.line, errs[0].span.col), (2, 26));
    assert!(errs[0].message.contains("out of range"));
    assert_eq!((errs[1].span.line, errs[1].span.col), (3, 11));
    assert_eq!(errs[1].message, "expected 'from', found 'frm'");
    let rendered = errs[1].render("r.conf", src).to_string();
    assert_eq!(
        rendered,
        "r.conf:3:11: expected 'from', found 'frm'\n  allow tcp frm any to any\n            ^^^"
    );
}

#[test]
fn rejects_bad_rules() {
    let bad = [
        ("bogus ip from any to any", "unknown action"),
        ("allow ip from any", "expected 'to'"),
        ("allow ip from 300.1.1.1 to any", "expected an address"),
        ("allow ip from 10.0.0.0/33 to any", "expected an address"),
        ("allow tcp from any to any 80-20", "backwards"),
        (
            "allow tcp from any to any tcpflags syn,bogus",
            "unknown TCP flag",
        ),
        ("allow ip from any to any ipversion 5", "4 or 6"),
        ("allow tcp from any to any 80 flux", "unknown option"),
        ("allow icmp from any to any icmptypes 40", "0..31"),
        ("100 skipto 50 ip from any to any", "forward"),
        ("100 call 100 ip from any to any", "forward"),
        ("0 allow ip from any to any", "1..65534"),
        ("65535 allow ip from any to any", "rule number"),
        ("allow { tcp or udp from any to any", "'}'"),
        ("allow ip from any to any in in out 7", "unknown option '7'"),
        ("allow 256 from any to any", "over 255"),
        ("deny", "end of rule"),
    ];
    for (text, want) in bad {
        let err = parse_rule(text).expect_err(text);
        assert!(
            err.message.contains(want),
            "{text}: got '{}', want '{want}'",
            err.message
        );
        assert!(err.span.line == 1 && err.span.col >= 1);
    }
}

#[test]
fn ports_after_destination_are_not_options() {
    let r = one("allow tcp from any to any 80 in");
    assert!(r.body.dst_ports.is_some());
    assert_eq!(r.body.options.len(), 1);
    let r = one("allow tcp from any to any not in");
    assert!(r.body.dst_ports.is_none());
    assert!(r.body.options[0].not);
    let r = one("allow tcp from any to any not 22");
    assert!(r.body.dst_ports.as_ref().unwrap().not);
}

mod roundtrip {
    use super::*;
    use proptest::prelude::*;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    fn addr() -> impl Strategy<Value = Addr> {
        prop_oneof![
            Just(Addr::Any),
            Just(Addr::Me),
            (any::<u32>(), 0u8..=32)
                .prop_map(|(a, l)| Addr::Prefix(IpAddr::V4(Ipv4Addr::from(a)), l)),
            (any::<u128>(), 0u8..=128)
                .prop_map(|(a, l)| Addr::Prefix(IpAddr::V6(Ipv6Addr::from(a)), l)),
            (any::<u32>(), any::<u32>()).prop_map(|(a, m)| Addr::Masked(
                IpAddr::V4(Ipv4Addr::from(a)),
                IpAddr::V4(Ipv4Addr::from(m))
            )),
            ("[a-z][a-z0-9_]{0,8}", prop::option::of(any::<u32>())).prop_map(|(n, v)| Addr::Table(
                n,
                v,
                Span::default()
            )),
        ]
    }

    fn addr_spec() -> impl Strategy<Value = AddrSpec> {
        (
            any::<bool>(),
            prop::collection::vec(addr(), 1..4),
            any::<bool>(),
        )
            .prop_map(|(not, items, or_block)| AddrSpec {
                not,
                items,
                or_block,
            })
    }

    fn port() -> impl Strategy<Value = Port> {
        prop_oneof![
            any::<u16>().prop_map(Port::Number),
            prop::sample::select(vec!["http", "ftp-data", "domain", "ssh"])
                .prop_map(|n| Port::Name(n.to_string(), Span::default())),
        ]
    }

    fn ports() -> impl Strategy<Value = Option<PortSpec>> {
        prop::option::of(
            (
                any::<bool>(),
                prop::collection::vec((port(), prop::option::of(port())), 1..4),
            )
                .prop_map(|(not, items)| PortSpec {
                    not,
                    items: items
                        .into_iter()
                        .map(|(lo, hi)| match (&lo, &hi) {
                            (Port::Number(a), Some(Port::Number(b))) if a > b => PortRange {
                                lo: hi.unwrap(),
                                hi: Some(lo),
                            },
                            _ => PortRange { lo, hi },
                        })
                        .collect(),
                }),
        )
    }

    fn flags() -> impl Strategy<Value = FlagSpec> {
        (1u8..=255, any::<u8>()).prop_map(|(set, clear)| FlagSpec { set, clear })
    }

    fn ranges(max: u16) -> impl Strategy<Value = Ranges> {
        prop::collection::vec(
            (0..=max, 0..=max).prop_map(|(a, b)| (a.min(b), a.max(b))),
            1..3,
        )
    }

    fn opt() -> impl Strategy<Value = OptionItem> {
        let opt = prop_oneof![
            Just(Opt::In),
            Just(Opt::Out),
            "[a-z]{1,4}[0-9]".prop_map(Opt::Via),
            "[a-z]{1,4}[0-9]".prop_map(Opt::Recv),
            "[a-z]{1,4}[0-9]".prop_map(Opt::Xmit),
            Just(Opt::Established),
            Just(Opt::Setup),
            Just(Opt::Frag),
            Just(Opt::KeepState),
            Just(Opt::RecordState),
            (1u8..16, 1u32..).prop_map(|(mask, count)| Opt::Limit { mask, count }),
            prop::array::uniform4(any::<u64>())
                .prop_filter("some type", |b| b.iter().any(|w| *w != 0))
                .prop_map(Opt::Icmp6Types),
            (1u8..64).prop_map(Opt::Ext6Hdr),
            (
                prop::sample::select(LookupKey::NAMES.iter().map(|(_, k)| *k).collect::<Vec<_>>()),
                "[a-z][a-z0-9_]{0,8}"
            )
                .prop_map(|(k, t)| Opt::Lookup(k, t)),
            flags().prop_map(Opt::TcpFlags),
            (1u8..16).prop_map(|s| Opt::IpOptions(FlagSpec { set: s, clear: 0 })),
            (1u8..32).prop_map(|s| Opt::IpTos(FlagSpec { set: 0, clear: s })),
            (1u32..).prop_map(Opt::IcmpTypes),
            ranges(65535).prop_map(Opt::IpLen),
            ranges(255).prop_map(Opt::IpTtl),
            prop::sample::select(vec![4u8, 6]).prop_map(Opt::IpVersion),
        ];
        (any::<bool>(), opt).prop_map(|(not, opt)| OptionItem {
            not,
            opt,
            span: Span::default(),
        })
    }

    fn proto() -> impl Strategy<Value = Proto> {
        prop_oneof![
            Just(Proto::Any),
            Just(Proto::Ip4),
            Just(Proto::Ip6),
            any::<u8>().prop_map(Proto::Number),
            prop::sample::select(vec!["tcp", "udp", "icmp", "gre"])
                .prop_map(|n| Proto::Name(n.into(), Span::default())),
        ]
    }

    fn action() -> impl Strategy<Value = Action> {
        prop_oneof![
            Just(Action::Allow),
            Just(Action::Deny),
            Just(Action::Reject),
            Just(Action::Reset),
            Just(Action::Count),
            Just(Action::Return),
            Just(Action::CheckState),
            any::<u8>().prop_map(Action::Unreach),
            (60000u16..=65535).prop_map(Action::Skipto),
            Just(Action::SkiptoTablearg),
            (60000u16..=65535).prop_map(Action::Call),
        ]
    }

    fn rule() -> impl Strategy<Value = Rule> {
        (
            1u16..60000,
            action(),
            prop::option::of(prop::option::of(any::<u32>()).prop_map(|amount| Log { amount })),
            prop::collection::vec(proto(), 1..3),
            addr_spec(),
            ports(),
            addr_spec(),
            ports(),
            prop::collection::vec(opt(), 0..4),
            prop::option::of("[a-z][a-z ]{0,10}[a-z]"),
        )
            .prop_map(
                |(number, action, log, proto, src, src_ports, dst, dst_ports, options, comment)| {
                    Rule {
                        number,
                        action,
                        log,
                        body: Body {
                            proto,
                            src,
                            src_ports,
                            dst,
                            dst_ports,
                            options,
                        },
                        comment,
                        span: Span::default(),
                    }
                },
            )
    }

    fn table_entry() -> impl Strategy<Value = TableEntry> {
        ("[a-z][a-z0-9_]{0,8}", addr(), any::<u32>()).prop_filter_map(
            "a prefix",
            |(table, addr, value)| match addr {
                Addr::Prefix(addr, len) => Some(TableEntry {
                    table,
                    addr,
                    len,
                    value,
                    span: Span::default(),
                }),
                _ => None,
            },
        )
    }

    fn setting() -> impl Strategy<Value = Setting> {
        (prop::sample::select(STATE_SETTINGS.to_vec()), 1u32..).prop_map(|((name, _), value)| {
            // dyn_max is capped; the lifetimes take any number.
            let value = if name == "dyn_max" {
                value % DYN_MAX_CAP + 1
            } else {
                value
            };
            Setting {
                name: name.to_owned(),
                value,
                span: Span::default(),
            }
        })
    }

    proptest! {
        #[test]
        fn parse_of_print_is_identity(
            rules in prop::collection::vec(rule(), 1..6),
            table_entries in prop::collection::vec(table_entry(), 0..3),
            settings in prop::collection::vec(setting(), 0..3),
        ) {
            let rs = Ruleset { rules, table_entries, settings };
            let text = print_ruleset(&rs);
            let back = parse(&text).map_err(|e| format!("{text}\n{e:?}")).unwrap();
            prop_assert_eq!(back, rs);
        }
    }
}
