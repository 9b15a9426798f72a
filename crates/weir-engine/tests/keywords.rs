//! Every keyword of ipfw's rule grammar is either understood or refused
//! by name. The keyword lists are ipfw(8)'s own parser tables, copied from
//! FreeBSD 14's `sbin/ipfw/ipfw2.c` (`rule_actions`, `rule_action_params`,
//! `rule_eactions`, `rule_options`; read in the repository
//! sobomax/freebsd14_vendor at commit
//! 42edb4ec73d9d9ac042028c1b06a40c257c67899). "Understood" means: the
//! example rule parses, prints back to text that parses to the same rule,
//! compiles, and decides a handful of packets of every kind. "Refused"
//! means the rule file is rejected with a message that names the keyword.

use std::net::IpAddr;
use weir_engine::*;
use weir_rules::{parse, parse_rule, Names};
use weir_wire::{addr_to_u128, frag, tcp, Direction, Packet, L3};

/// `rule_actions`, in ipfw2.c's order.
const ACTIONS: &[&str] = &[
    "abort6",
    "abort",
    "accept",
    "pass",
    "allow",
    "permit",
    "count",
    "pipe",
    "queue",
    "divert",
    "tee",
    "netgraph",
    "ngtee",
    "fwd",
    "forward",
    "skipto",
    "deny",
    "drop",
    "reject",
    "reset6",
    "reset",
    "unreach6",
    "unreach",
    "check-state",
    "//",
    "nat",
    "reass",
    "setfib",
    "setdscp",
    "call",
    "return",
    "eaction",
    "tcp-setmss",
];

/// `rule_action_params`.
const ACTION_PARAMS: &[&str] = &["altq", "log", "tag", "untag"];

/// `rule_eactions`: external action modules.
const EACTIONS: &[&str] = &["nat64clat", "nat64lsn", "nat64stl", "nptv6", "tcp-setmss"];

/// `rule_options`, pseudo options (`not`, `or`, braces) last, as there.
const OPTIONS: &[&str] = &[
    "tagged",
    "uid",
    "gid",
    "jail",
    "in",
    "limit",
    "set-limit",
    "keep-state",
    "record-state",
    "bridged",
    "layer2",
    "out",
    "diverted",
    "diverted-loopback",
    "diverted-output",
    "xmit",
    "recv",
    "via",
    "fragment",
    "frag",
    "fib",
    "ipoptions",
    "ipopts",
    "iplen",
    "ipid",
    "ipprecedence",
    "dscp",
    "iptos",
    "ipttl",
    "ipversion",
    "ipver",
    "estab",
    "established",
    "setup",
    "sockarg",
    "tcpdatalen",
    "tcpflags",
    "tcpflgs",
    "tcpmss",
    "tcpoptions",
    "tcpopts",
    "tcpseq",
    "tcpack",
    "tcpwin",
    "icmptype",
    "icmptypes",
    "dst-ip",
    "src-ip",
    "dst-port",
    "src-port",
    "proto",
    "MAC",
    "mac",
    "mac-type",
    "verrevpath",
    "versrcreach",
    "antispoof",
    "ipsec",
    "icmp6type",
    "icmp6types",
    "ext6hdr",
    "flow-id",
    "ipv6",
    "ip6",
    "ipv4",
    "ip4",
    "dst-ipv6",
    "dst-ip6",
    "src-ipv6",
    "src-ip6",
    "lookup",
    "flow",
    "defer-action",
    "defer-immediate-action",
    "//",
    "not",
    "!",
    "or",
    "|",
    "{",
    "(",
    "}",
    ")",
];

/// Understood: the ruleset (its last line uses the keyword), or refused.
enum Use {
    Works(&'static str),
    Refused(&'static str),
}
use Use::*;

/// One example per keyword. A keyword in two lists (`tcp-setmss`, `//`)
/// has one example for each.
const EXAMPLES: &[(&str, Use)] = &[
    // Actions.
    ("abort6", Works("100 abort6 ip6 from any to any")),
    ("abort", Works("100 abort ip from any to any")),
    ("accept", Works("100 accept ip from any to any")),
    ("pass", Works("100 pass ip from any to any")),
    ("allow", Works("100 allow ip from any to any")),
    ("permit", Works("100 permit ip from any to any")),
    ("count", Works("100 count ip from any to any")),
    ("pipe", Works("100 pipe 1 ip from any to any")),
    ("queue", Works("100 queue 2 ip from any to any")),
    ("divert", Works("100 divert 8668 ip from any to any")),
    ("tee", Works("100 tee 8668 ip from any to any")),
    ("netgraph", Works("100 netgraph 3 ip from any to any")),
    ("ngtee", Works("100 ngtee 3 ip from any to any")),
    ("fwd", Works("100 fwd 10.0.0.1 ip from any to any")),
    (
        "forward",
        Works("100 forward 10.0.0.1,8080 tcp from any to any"),
    ),
    (
        "skipto",
        Works("100 skipto 300 ip from any to any\n300 allow ip from any to any"),
    ),
    ("deny", Works("100 deny ip from any to any")),
    ("drop", Works("100 drop ip from any to any")),
    ("reject", Works("100 reject ip from any to any")),
    ("reset6", Works("100 reset6 tcp from any to any")),
    ("reset", Works("100 reset tcp from any to any")),
    ("unreach6", Works("100 unreach6 port ip6 from any to any")),
    ("unreach", Works("100 unreach host ip from any to any")),
    (
        "check-state",
        Works("100 allow tcp from any to any keep-state\n200 check-state"),
    ),
    ("//", Works("100 // every packet, counted")),
    ("nat", Works("100 nat 1 ip from any to any")),
    ("reass", Works("100 reass ip from any to any")),
    ("setfib", Works("100 setfib 1 ip from any to any")),
    ("setdscp", Works("100 setdscp af11 ip from any to any")),
    (
        "call",
        Works("100 call 300 ip from any to any\n300 return ip from any to any"),
    ),
    ("return", Works("100 return ip from any to any")),
    ("eaction", Refused("100 eaction nptv6 ip from any to any")),
    (
        "tcp-setmss",
        Works("100 tcp-setmss 1400 tcp from any to any setup"),
    ),
    // Action parameters.
    ("altq", Works("100 allow altq q1 ip from any to any")),
    ("log", Works("100 deny log logamount 5 ip from any to any")),
    ("tag", Works("100 count tag 7 ip from any to any")),
    ("untag", Works("100 count untag 7 ip from any to any")),
    // External actions.
    ("nat64clat", Refused("100 nat64clat c1 ip from any to any")),
    ("nat64lsn", Refused("100 nat64lsn l1 ip from any to any")),
    ("nat64stl", Refused("100 nat64stl s1 ip from any to any")),
    ("nptv6", Refused("100 nptv6 n1 ip6 from any to any")),
    // Options.
    (
        "tagged",
        Works("100 count tag 7 ip from any to any\n200 allow ip from any to any tagged 7"),
    ),
    ("uid", Refused("100 allow ip from any to any uid 0")),
    ("gid", Refused("100 allow ip from any to any gid 0")),
    ("jail", Refused("100 allow ip from any to any jail 1")),
    ("in", Works("100 allow ip from any to any in")),
    (
        "limit",
        Works("100 allow tcp from any to any limit src-addr 2"),
    ),
    (
        "set-limit",
        Works("100 allow tcp from any to any set-limit dst-port 2"),
    ),
    (
        "keep-state",
        Works("100 allow ip from any to any keep-state :web"),
    ),
    (
        "record-state",
        Works("100 allow ip from any to any record-state"),
    ),
    ("bridged", Works("100 deny ip from any to any bridged")),
    ("layer2", Works("100 deny ip from any to any layer2")),
    ("out", Works("100 allow ip from any to any out")),
    ("diverted", Works("100 allow ip from any to any diverted")),
    (
        "diverted-loopback",
        Works("100 allow ip from any to any diverted-loopback"),
    ),
    (
        "diverted-output",
        Works("100 allow ip from any to any diverted-output"),
    ),
    ("xmit", Works("100 allow ip from any to any xmit em0")),
    ("recv", Works("100 allow ip from any to any recv em*")),
    ("via", Works("100 allow ip from any to any via any")),
    ("fragment", Works("100 deny ip from any to any fragment")),
    ("frag", Works("100 deny ip from any to any frag mf,!df")),
    ("fib", Works("100 allow ip from any to any fib 0")),
    (
        "ipoptions",
        Works("100 deny ip from any to any ipoptions lsrr,ssrr"),
    ),
    ("ipopts", Works("100 deny ip from any to any ipopts !rr")),
    ("iplen", Works("100 allow ip from any to any iplen 20-1500")),
    ("ipid", Works("100 allow ip from any to any ipid 1,7-9")),
    (
        "ipprecedence",
        Works("100 allow ip from any to any ipprecedence 5"),
    ),
    ("dscp", Works("100 allow ip from any to any dscp af11,ef,7")),
    (
        "iptos",
        Works("100 allow ip from any to any iptos lowdelay,!mincost"),
    ),
    ("ipttl", Works("100 allow ip from any to any ipttl 1-64")),
    (
        "ipversion",
        Works("100 allow ip from any to any ipversion 4"),
    ),
    ("ipver", Works("100 allow ip from any to any ipver 6")),
    ("estab", Works("100 allow tcp from any to any estab")),
    (
        "established",
        Works("100 allow tcp from any to any established"),
    ),
    ("setup", Works("100 allow tcp from any to any setup")),
    ("sockarg", Refused("100 allow ip from any to any sockarg")),
    (
        "tcpdatalen",
        Works("100 allow tcp from any to any tcpdatalen 0"),
    ),
    (
        "tcpflags",
        Works("100 allow tcp from any to any tcpflags syn,!ack"),
    ),
    (
        "tcpflgs",
        Works("100 allow tcp from any to any tcpflgs fin"),
    ),
    (
        "tcpmss",
        Works("100 allow tcp from any to any tcpmss 536-1460"),
    ),
    (
        "tcpoptions",
        Works("100 allow tcp from any to any tcpoptions mss,!sack"),
    ),
    ("tcpopts", Works("100 allow tcp from any to any tcpopts ts")),
    ("tcpseq", Works("100 allow tcp from any to any tcpseq 1000")),
    ("tcpack", Works("100 allow tcp from any to any tcpack 1001")),
    (
        "tcpwin",
        Works("100 allow tcp from any to any tcpwin 1024-65535"),
    ),
    (
        "icmptype",
        Works("100 allow icmp from any to any icmptype 8"),
    ),
    (
        "icmptypes",
        Works("100 allow icmp from any to any icmptypes 0,8"),
    ),
    (
        "dst-ip",
        Works("100 allow ip from any to any dst-ip 10.0.0.0/8"),
    ),
    (
        "src-ip",
        Works("100 allow ip from any to any src-ip 192.0.2.1"),
    ),
    (
        "dst-port",
        Works("100 allow tcp from any to any dst-port 80,443"),
    ),
    (
        "src-port",
        Works("100 allow udp from any to any src-port 53"),
    ),
    ("proto", Works("100 allow ip from any to any proto udp")),
    (
        "MAC",
        Works("100 allow ip from any to any MAC any 00:11:22:33:44:55"),
    ),
    (
        "mac",
        Works("100 allow ip from any to any mac 00:11:22:00:00:00/24 any"),
    ),
    (
        "mac-type",
        Works("100 allow ip from any to any mac-type ip,arp"),
    ),
    (
        "verrevpath",
        Refused("100 deny ip from any to any not verrevpath"),
    ),
    (
        "versrcreach",
        Refused("100 deny ip from any to any not versrcreach"),
    ),
    (
        "antispoof",
        Refused("100 deny ip from any to any not antispoof"),
    ),
    ("ipsec", Refused("100 allow ip from any to any ipsec")),
    (
        "icmp6type",
        Works("100 allow ipv6-icmp from any to any icmp6type 128"),
    ),
    (
        "icmp6types",
        Works("100 allow ipv6-icmp from any to any icmp6types 128,129"),
    ),
    (
        "ext6hdr",
        Works("100 deny ip6 from any to any ext6hdr rthdr0"),
    ),
    (
        "flow-id",
        Works("100 allow ip6 from any to any flow-id 5,0x10"),
    ),
    ("ipv6", Works("100 allow ip from any to any ipv6")),
    ("ip6", Works("100 allow ip from any to any ip6")),
    ("ipv4", Works("100 allow ip from any to any ipv4")),
    ("ip4", Works("100 allow ip from any to any ip4")),
    (
        "dst-ipv6",
        Works("100 allow ip from any to any dst-ipv6 2001:db8::/32"),
    ),
    ("dst-ip6", Works("100 allow ip from any to any dst-ip6 ::1")),
    (
        "src-ipv6",
        Works("100 allow ip from any to any src-ipv6 2001:db8::1"),
    ),
    (
        "src-ip6",
        Works("100 allow ip from any to any src-ip6 fe80::/10"),
    ),
    (
        "lookup",
        Works("table t add 10.0.0.1\n100 allow ip from any to any lookup dst-ip t"),
    ),
    (
        "flow",
        Works(
            "table f create type flow:proto,dst-port\ntable f add tcp,80\n\
             100 allow ip from any to any flow table(f)",
        ),
    ),
    (
        "defer-action",
        Works("100 allow tcp from any to any keep-state defer-action"),
    ),
    (
        "defer-immediate-action",
        Works("100 allow tcp from any to any record-state defer-immediate-action"),
    ),
    // Option `//`: a comment after the options.
    (
        "//",
        Works("100 allow ip from any to any in // let them in"),
    ),
    ("not", Works("100 allow ip from any to any not in")),
    ("!", Works("100 allow ip from any to any ! dst-port 80")),
    (
        "or",
        Works("100 allow ip from any to any { dst-port 80 or dst-port 443 }"),
    ),
    (
        "|",
        Works("100 allow ip from any to any { dst-port 80 | dst-port 443 }"),
    ),
    ("{", Works("100 allow { tcp or udp } from any to any")),
    ("(", Works("100 allow ip from any to any ( in or out )")),
    (
        "}",
        Works("100 allow ip from any to any { src-port 1 or dst-port 2 }"),
    ),
    (")", Works("100 allow ip from any to any ( ipv4 or ipv6 )")),
];

fn ip(s: &str) -> u128 {
    addr_to_u128(s.parse::<IpAddr>().unwrap())
}

/// Packets of every kind a rule may meet: TCP (a SYN with options, and
/// an ACK), UDP, ICMP echo, a later fragment, TCP and ICMPv6 over IPv6,
/// all in Ethernet frames.
fn packets() -> Vec<Packet> {
    let tcp4 = Packet {
        src: ip("192.0.2.1"),
        dst: ip("10.0.0.1"),
        l3: L3::Ip,
        ip_version: 4,
        proto: 6,
        src_port: 40000,
        dst_port: 80,
        has_ports: true,
        tcp_flags: tcp::SYN,
        tcp_opts: weir_wire::tcpopt::MSS,
        tcp_mss: 1460,
        tcp_win: 65535,
        tcp_seq: 1000,
        ip_len: 60,
        ip_id: 7,
        ttl: 64,
        l3_len: 60,
        direction: Direction::In,
        has_mac: true,
        mac_dst: [0x00, 0x11, 0x22, 0x33, 0x44, 0x55],
        mac_src: [0x00, 0x11, 0x22, 0x00, 0x00, 0x01],
        ether_type: 0x0800,
        ..Packet::default()
    };
    let tcp6 = Packet {
        src: ip("2001:db8::1"),
        dst: ip("2001:db8::2"),
        ip_version: 6,
        ether_type: 0x86dd,
        ..tcp4
    };
    vec![
        tcp4,
        Packet {
            tcp_flags: tcp::ACK,
            tcp_ack: 1001,
            tcp_opts: 0,
            direction: Direction::Out,
            ..tcp4
        },
        Packet {
            proto: 17,
            src_port: 53,
            dst_port: 5353,
            tcp_flags: 0,
            ..tcp4
        },
        Packet {
            proto: 1,
            has_ports: false,
            has_icmp: true,
            icmp_type: 8,
            ..tcp4
        },
        Packet {
            has_ports: false,
            frag: frag::LATER,
            ..tcp4
        },
        tcp6,
        Packet {
            proto: 58,
            has_ports: false,
            has_icmp: true,
            icmp_type: 128,
            ..tcp6
        },
    ]
}

/// The example for `kw`; `option`: as an option (`//` is an action and
/// an option, with an example for each).
fn example(kw: &str, option: bool) -> &'static Use {
    let uses: Vec<&Use> = EXAMPLES
        .iter()
        .filter(|(k, _)| *k == kw)
        .map(|(_, u)| u)
        .collect();
    let i = usize::from(option && uses.len() > 1);
    uses.get(i)
        .copied()
        .unwrap_or_else(|| panic!("no example for '{kw}'"))
}

/// Whether the text has `kw` as a word (`//` and braces included).
fn mentions(text: &str, kw: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .any(|w| w == kw || w.strip_prefix('!') == Some(kw) && kw != "!")
}

#[test]
fn every_ipfw_keyword_is_understood_or_refused_by_name() {
    let lists: [(&[&str], bool); 4] = [
        (ACTIONS, false),
        (ACTION_PARAMS, false),
        (EACTIONS, false),
        (OPTIONS, true),
    ];
    let packets = packets();
    let mut refused = Vec::new();
    for (list, option) in lists {
        for &kw in list {
            let text = match example(kw, option) {
                Works(t) | Refused(t) => *t,
            };
            assert!(mentions(text, kw), "the example for '{kw}' uses it: {text}");
            match example(kw, option) {
                Refused(_) => {
                    let errs = parse(text).expect_err(kw);
                    assert!(
                        errs[0].message.contains(&format!("'{kw}'")),
                        "'{kw}' is refused by name: {}",
                        errs[0].message
                    );
                    refused.push(kw);
                }
                Works(_) => {
                    let rs = parse(text).unwrap_or_else(|e| panic!("{kw}: {text}: {e:?}"));
                    for rule in &rs.rules {
                        let printed = rule.to_string();
                        let again = parse_rule(&printed)
                            .unwrap_or_else(|e| panic!("{kw}: {printed}: {e:?}"));
                        assert_eq!(again.to_string(), printed, "'{kw}' prints back");
                    }
                    let prog = load(text, &Names::default(), &CompileOptions::default())
                        .unwrap_or_else(|e| panic!("{kw}: {text}: {e:?}"));
                    let mut e = Engine::new(prog);
                    for p in &packets {
                        let d = e.decide(p);
                        assert!(d.rule.is_some(), "'{kw}' decides {p:?}");
                    }
                }
            }
        }
    }
    // What a capture cannot decide: the socket's owner, the host's routes,
    // IPsec, external action modules (README, "What weir refuses").
    assert_eq!(
        refused,
        [
            "eaction",
            "nat64clat",
            "nat64lsn",
            "nat64stl",
            "nptv6",
            "uid",
            "gid",
            "jail",
            "sockarg",
            "verrevpath",
            "versrcreach",
            "antispoof",
            "ipsec"
        ]
    );
}

/// weir's own list of option keywords is ipfw's, minus pseudo options.
#[test]
fn weir_knows_every_ipfw_option_keyword() {
    let pseudo = ["//", "not", "!", "or", "|", "{", "(", "}", ")"];
    let ipfw: Vec<&str> = OPTIONS
        .iter()
        .copied()
        .filter(|k| !pseudo.contains(k))
        .collect();
    assert_eq!(weir_rules::OPTION_KEYWORDS, ipfw.as_slice());
}
