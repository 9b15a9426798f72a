//! The ipfw language beyond the basics, on crafted packets: hand-off
//! actions and `one_pass`, what actions change for later rules (tags, FIB,
//! DSCP, MSS), `prob`, sets, named states, address sets, tables of every
//! kind, fragment flags, TCP and IP header fields, the layer-2 pass.

use std::net::IpAddr;
use weir_engine::*;
use weir_rules::Names;
use weir_wire::{addr_to_u128, frag, tcp, tcpopt, Direction, Packet, L3};

fn program(rules: &str, opts: &CompileOptions) -> Program {
    load(rules, &Names::default(), opts).unwrap_or_else(|e| panic!("{rules}: {e:?}"))
}

fn engine(rules: &str) -> Engine {
    Engine::new(program(rules, &CompileOptions::default()))
}

fn ip(s: &str) -> u128 {
    addr_to_u128(s.parse::<IpAddr>().unwrap())
}

fn tcp_pkt(src: &str, sport: u16, dst: &str, dport: u16, flags: u8) -> Packet {
    let v6 = src.contains(':');
    Packet {
        src: ip(src),
        dst: ip(dst),
        l3: L3::Ip,
        ip_version: if v6 { 6 } else { 4 },
        proto: 6,
        src_port: sport,
        dst_port: dport,
        has_ports: true,
        tcp_flags: flags,
        ip_len: 60,
        ttl: 64,
        direction: Direction::In,
        l3_len: 60,
        ..Packet::default()
    }
}

fn udp_pkt(src: &str, sport: u16, dst: &str, dport: u16) -> Packet {
    Packet {
        proto: 17,
        ..tcp_pkt(src, sport, dst, dport, 0)
    }
}

/// The deciding rule's number, and the verdict.
fn decide(e: &mut Engine, p: &Packet) -> (u16, Verdict) {
    let d = e.decide(p);
    (
        e.program().rules[d.rule.expect("decided by a rule")].number,
        d.verdict,
    )
}

fn counts(e: &Engine) -> Vec<u64> {
    e.counters().iter().map(|c| c.packets).collect()
}

const PASS: Verdict = Verdict::Pass;
const DROP: Verdict = Verdict::Drop;

#[test]
fn hand_offs_follow_one_pass() {
    let p = udp_pkt("10.0.0.1", 1, "10.0.0.2", 2);
    for action in [
        "pipe 1",
        "queue 2",
        "netgraph 3",
        "nat 1",
        "divert 8668",
        "divert natd",
    ] {
        let rules = format!("100 {action} ip from any to any\n200 deny ip from any to any\n");
        let mut e = engine(&rules);
        assert_eq!(decide(&mut e, &p), (100, PASS), "{action}, one_pass 1");
        let rules = format!("net.inet.ip.fw.one_pass=0\n{rules}");
        let mut e = engine(&rules);
        assert_eq!(decide(&mut e, &p), (200, DROP), "{action}, one_pass 0");
        assert_eq!(counts(&e), [1, 1, 0], "{action} counts and goes on");
    }
    // `ipfw disable one_pass` is the same switch.
    let mut e = engine("ipfw disable one_pass\n100 pipe 1 ip from any to any\n");
    assert_eq!(decide(&mut e, &p), (65535, DROP));
}

#[test]
fn tee_and_ngtee_go_on_fwd_passes() {
    let p = udp_pkt("10.0.0.1", 1, "10.0.0.2", 2);
    let mut e = engine("100 tee 8000 ip from any to any\n110 ngtee 2 ip from any to any\n200 fwd 192.0.2.1,53 udp from any to any\n");
    assert_eq!(decide(&mut e, &p), (200, PASS));
    assert_eq!(counts(&e), [1, 1, 1, 0]);
    assert_eq!(e.program().rules[2].action_text, "fwd 192.0.2.1,53");
    assert_eq!(e.program().rules[0].action_text, "tee 8000");
}

#[test]
fn nat_denies_what_is_not_ipv4() {
    let mut e = engine("100 nat 1 ip from any to any\n");
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 2)),
        (100, PASS)
    );
    assert_eq!(
        decide(&mut e, &udp_pkt("2001:db8::1", 1, "2001:db8::2", 2)),
        (100, DROP)
    );
}

#[test]
fn setfib_changes_what_fib_sees() {
    let rules = "100 count ip from any to any fib 0\n200 setfib 3 udp from any to any\n300 allow ip from any to any fib 3\n400 deny ip from any to any\n";
    let mut e = engine(rules);
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 2)),
        (300, PASS)
    );
    assert_eq!(
        decide(&mut e, &tcp_pkt("10.0.0.1", 1, "10.0.0.2", 2, 0)),
        (400, DROP)
    );
    assert_eq!(counts(&e), [2, 1, 1, 1, 0]);
    // --fib: where packets start.
    let mut e = Engine::builder(program(rules, &CompileOptions::default()))
        .fib(3)
        .build();
    assert_eq!(
        decide(&mut e, &tcp_pkt("10.0.0.1", 1, "10.0.0.2", 2, 0)),
        (300, PASS)
    );
    assert_eq!(counts(&e)[0], 0);
}

#[test]
fn setdscp_keeps_ecn_and_later_rules_see_it() {
    let rules = "100 setdscp ef ip from any to any\n\
                 200 deny ip from any to any not dscp ef\n\
                 300 deny ip from any to any not iptos congestion\n\
                 400 allow ip from any to any ipprecedence 5\n";
    let mut e = engine(rules);
    let mut p = udp_pkt("10.0.0.1", 1, "10.0.0.2", 2);
    p.tos = 0x03; // ECN CE, DSCP 0
    assert_eq!(
        decide(&mut e, &p),
        (400, PASS),
        "46 << 2 | 3 = 0xbb: precedence 5"
    );
    // An IPv6 packet's DSCP is its traffic class's top six bits.
    let mut e = engine("100 allow ip6 from any to any dscp af41\n");
    let mut q = udp_pkt("2001:db8::1", 1, "2001:db8::2", 2);
    q.tos = 34 << 2;
    assert_eq!(decide(&mut e, &q), (100, PASS));
}

#[test]
fn tags_set_and_clear() {
    let rules = "100 count tag 5 udp from any to any\n\
                 200 count untag 5 udp from any to any 22\n\
                 300 allow ip from any to any tagged 5\n\
                 400 allow ip from any to any tagged 1-9\n\
                 500 deny ip from any to any\n";
    let mut e = engine(rules);
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 80)),
        (300, PASS)
    );
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 22)),
        (500, DROP),
        "untagged again"
    );
    assert_eq!(
        decide(&mut e, &tcp_pkt("10.0.0.1", 1, "10.0.0.2", 80, 0)),
        (500, DROP),
        "never tagged"
    );
    // A tag set by a deciding rule stays with its decision; a deny with a
    // tag still tags (nothing later sees it).
    let mut e = engine("100 allow tag 7 ip from any to any\n");
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 80)),
        (100, PASS)
    );
}

#[test]
fn tcp_setmss_lowers_what_tcpmss_sees() {
    let mut syn = tcp_pkt("10.0.0.1", 1, "10.0.0.2", 80, tcp::SYN);
    syn.tcp_opts = tcpopt::MSS;
    syn.tcp_mss = 1460;
    let rules = "100 tcp-setmss 1200 tcp from any to any\n200 allow tcp from any to any tcpmss 1200\n300 deny ip from any to any\n";
    let mut e = engine(rules);
    assert_eq!(decide(&mut e, &syn), (200, PASS));
    // A smaller MSS stays; a segment without SYN has no MSS for ipfw.
    syn.tcp_mss = 536;
    assert_eq!(decide(&mut e, &syn), (300, DROP));
    let mut ack = syn;
    ack.tcp_flags = tcp::ACK;
    ack.tcp_mss = 1200;
    assert_eq!(decide(&mut e, &ack), (300, DROP));
}

#[test]
fn reass_takes_fragments_and_passes_the_rest_on() {
    let rules = "100 reass ip from any to any\n200 deny ip from any to any\n";
    let mut e = engine(rules);
    let mut first = udp_pkt("10.0.0.1", 1, "10.0.0.2", 2);
    first.frag = frag::MF;
    assert_eq!(decide(&mut e, &first), (100, PASS));
    let mut later = first;
    later.frag = frag::LATER;
    later.has_ports = false;
    assert_eq!(decide(&mut e, &later), (100, PASS));
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 2)),
        (200, DROP)
    );
    // IPv6 is not reassembled by ipfw: the rule does not even count.
    assert_eq!(
        decide(&mut e, &udp_pkt("2001:db8::1", 1, "2001:db8::2", 2)),
        (200, DROP)
    );
    assert_eq!(counts(&e), [3, 2, 0]);
}

#[test]
fn prob_is_seeded_and_reproducible() {
    let rules = "100 prob 0.25 deny ip from any to any\n200 allow ip from any to any\n";
    let run = |seed: u64| {
        let mut e = Engine::builder(program(rules, &CompileOptions::default()))
            .seed(seed)
            .build();
        (0..4000)
            .map(|k| decide(&mut e, &udp_pkt("10.0.0.1", k as u16, "10.0.0.2", 2)).1)
            .collect::<Vec<_>>()
    };
    let a = run(1);
    assert_eq!(a, run(1), "same seed, same verdicts");
    let dropped = a.iter().filter(|v| **v == DROP).count();
    assert!((850..1150).contains(&dropped), "about a quarter: {dropped}");
    assert_ne!(a, run(2), "another seed, other draws");
    // The classifier and the linear walk draw alike (a classified
    // ruleset of 40 rules, the same verdicts walking every rule).
    let many: String = (1..=40)
        .map(|k| format!("{k} prob 0.5 count ip from 192.0.2.{k} to any\n"))
        .collect::<String>()
        + "100 prob 0.5 deny ip from any to any\n";
    let verdicts = |linear: bool| {
        let mut e = Engine::builder(program(&many, &CompileOptions::default()))
            .linear(linear)
            .seed(9)
            .build();
        assert_eq!(e.classified(), !linear);
        (0..500)
            .map(|k| e.decide(&udp_pkt(&format!("192.0.2.{}", k % 50), 1, "10.0.0.2", 2)))
            .collect::<Vec<_>>()
    };
    assert_eq!(verdicts(true), verdicts(false));
}

#[test]
fn disabled_sets_leave_their_rules_out() {
    let rules = "100 set 3 deny ip from any to any\n200 allow ip from any to any\n";
    let p = udp_pkt("10.0.0.1", 1, "10.0.0.2", 2);
    assert_eq!(decide(&mut engine(rules), &p), (100, DROP));
    let opts = CompileOptions {
        disabled_sets: 1 << 3,
        ..CompileOptions::default()
    };
    let mut e = Engine::new(program(rules, &opts));
    assert_eq!(decide(&mut e, &p), (200, PASS));
    let mut e = engine(&format!("ipfw set disable 3\n{rules}"));
    assert_eq!(decide(&mut e, &p), (200, PASS));
    // A jump into a disabled set lands on the next enabled rule.
    let mut e = engine("ipfw set disable 1\n100 skipto 300 ip from any to any\n300 set 1 deny ip from any to any\n400 allow ip from any to any\n");
    assert_eq!(decide(&mut e, &p), (400, PASS));
}

#[test]
fn named_states_fire_only_for_their_name() {
    let rules = "100 check-state :web\n\
                 200 allow tcp from any to any 22 keep-state :ssh\n\
                 300 allow tcp from any to any 80 keep-state :web\n\
                 400 check-state :any\n\
                 500 deny ip from any to any\n";
    let mut e = engine(rules);
    let ssh = tcp_pkt("10.0.0.1", 1000, "10.0.0.2", 22, tcp::SYN);
    assert_eq!(decide(&mut e, &ssh), (200, PASS));
    // The reply has no `web` state: rule 100 does not fire; its `ssh`
    // state fires at rule 200, the first probe of that name.
    let reply = tcp_pkt("10.0.0.2", 22, "10.0.0.1", 1000, tcp::SYN | tcp::ACK);
    assert_eq!(decide(&mut e, &reply), (200, PASS));
    let web = tcp_pkt("10.0.0.1", 1001, "10.0.0.2", 80, tcp::SYN);
    assert_eq!(decide(&mut e, &web), (300, PASS));
    let web_reply = tcp_pkt("10.0.0.2", 80, "10.0.0.1", 1001, tcp::ACK);
    assert_eq!(decide(&mut e, &web_reply), (300, PASS), "fired at rule 100");
    assert_eq!(counts(&e)[..2], [0, 2]);
    // check-state :any fires for a state of any name.
    let mut e = engine("100 allow tcp from any to any 22 record-state :ssh\n200 check-state :any\n300 deny ip from any to any\n");
    assert_eq!(decide(&mut e, &ssh), (100, PASS));
    assert_eq!(decide(&mut e, &reply), (100, PASS), "via check-state :any");
}

#[test]
fn defer_action_makes_the_state_and_goes_on() {
    let rules = "100 allow tcp from any to any 22 keep-state defer-action\n200 count ip from any to any\n300 deny ip from any to any\n";
    let mut e = engine(rules);
    let syn = tcp_pkt("10.0.0.1", 1000, "10.0.0.2", 22, tcp::SYN);
    assert_eq!(decide(&mut e, &syn), (300, DROP), "the action waits");
    let ack = tcp_pkt("10.0.0.1", 1000, "10.0.0.2", 22, tcp::ACK);
    assert_eq!(decide(&mut e, &ack), (100, PASS), "the state runs it");
    assert_eq!(counts(&e), [1, 1, 1, 0]);
}

#[test]
fn set_limit_does_not_probe() {
    let rules =
        "100 allow tcp from any to any 22 set-limit src-addr 1\n200 deny ip from any to any\n";
    let mut e = engine(rules);
    assert_eq!(
        decide(&mut e, &tcp_pkt("10.0.0.1", 1, "10.0.0.2", 22, tcp::SYN)),
        (100, PASS)
    );
    assert_eq!(
        decide(&mut e, &tcp_pkt("10.0.0.1", 2, "10.0.0.2", 22, tcp::SYN)),
        (100, DROP),
        "over the limit"
    );
    // No probe: the reply is not taken by the state.
    assert_eq!(
        decide(&mut e, &tcp_pkt("10.0.0.2", 22, "10.0.0.1", 1, tcp::ACK)),
        (200, DROP)
    );
    assert!(e.states().is_some());
}

#[test]
fn address_sets() {
    let mut e =
        engine("100 allow ip from 10.1.2.0/24{5,10,20-25} to any\n200 deny ip from any to any\n");
    for (host, verdict) in [
        (5, PASS),
        (10, PASS),
        (22, PASS),
        (25, PASS),
        (6, DROP),
        (26, DROP),
    ] {
        let p = udp_pkt(&format!("10.1.2.{host}"), 1, "10.0.0.2", 2);
        assert_eq!(decide(&mut e, &p).1, verdict, "host {host}");
    }
    assert_eq!(
        decide(&mut e, &udp_pkt("10.1.3.5", 1, "10.0.0.2", 2)).1,
        DROP
    );
    assert_eq!(
        decide(&mut e, &udp_pkt("2001:db8::5", 1, "2001:db8::2", 2)).1,
        DROP
    );
}

#[test]
fn tables_of_every_kind() {
    let rules = "\
table 13 add 10.0.0.0/8 100
table ports create type number
table ports add 22 1 80 2
table dscps create type number
table dscps add 46
table f create type flow:proto,dst-port
table f add udp,53 9
table ifs create type iface
table ifs add eth1
100 allow ip from table(13) to any lookup dst-port ports
200 allow ip from any to any lookup dscp dscps
300 allow ip from any to any flow table(f)
400 allow ip from any to any recv table(ifs)
500 deny ip from any to any
";
    let mut e = engine(rules);
    e.set_interfaces(&[Some("eth0"), Some("eth1")]);
    assert_eq!(
        decide(&mut e, &tcp_pkt("10.0.0.1", 1, "192.0.2.1", 80, 0)),
        (100, PASS)
    );
    assert_eq!(
        decide(&mut e, &tcp_pkt("10.0.0.1", 1, "192.0.2.1", 81, 0)),
        (500, DROP)
    );
    let mut ef = tcp_pkt("192.0.2.1", 1, "192.0.2.2", 81, 0);
    ef.tos = 46 << 2;
    assert_eq!(decide(&mut e, &ef), (200, PASS));
    assert_eq!(
        decide(&mut e, &udp_pkt("192.0.2.1", 1, "192.0.2.2", 53)),
        (300, PASS)
    );
    let mut on_eth1 = udp_pkt("192.0.2.1", 1, "192.0.2.2", 54);
    on_eth1.iface = 1;
    assert_eq!(decide(&mut e, &on_eth1), (400, PASS));
    on_eth1.direction = Direction::Out;
    assert_eq!(
        decide(&mut e, &on_eth1),
        (500, DROP),
        "recv looks at inbound only"
    );
    // tablearg from a number table: skipto the port's value × 100.
    let mut e = engine("table t add 3 300\n100 skipto tablearg ip from any to any lookup dst-port t\n200 deny ip from any to any\n300 allow ip from any to any\n");
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 3)),
        (300, PASS)
    );
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 4)),
        (200, DROP)
    );
}

#[test]
fn table_commands_apply_in_order() {
    let rules = "\
table t add 10.0.0.0/8
table t add 192.0.2.0/24
table t delete 10.0.0.0/8
table u add 198.51.100.0/24
table t swap u
ipfw -q table u add 192.0.2.0/24 5
100 allow ip from table(t) to any
200 deny ip from table(u,5) to any
300 count ip from any to any
";
    let mut e = engine(rules);
    assert_eq!(
        decide(&mut e, &udp_pkt("198.51.100.1", 1, "10.0.0.2", 2)),
        (100, PASS)
    );
    assert_eq!(
        decide(&mut e, &udp_pkt("192.0.2.1", 1, "10.0.0.2", 2)),
        (200, DROP)
    );
    assert_eq!(
        decide(&mut e, &udp_pkt("10.1.1.1", 1, "10.0.0.2", 2)),
        (65535, DROP),
        "deleted"
    );
    let flushed =
        engine("table t add 10.0.0.0/8\ntable all flush\n100 allow ip from table(t) to any\n");
    let mut flushed = flushed;
    assert_eq!(
        decide(&mut flushed, &udp_pkt("10.1.1.1", 1, "10.0.0.2", 2)).0,
        65535
    );
    for (bad, want) in [
        (
            "table t add 10.0.0.0/8\ntable t add 10.0.0.0/8\n",
            "already in the table",
        ),
        (
            "table n add 80\n100 allow ip from table(n) to any\n",
            "table 'n' holds numbers, not addresses",
        ),
        (
            "table a add 10.0.0.0/8\n100 allow ip from any to any lookup dst-port a\n",
            "holds addresses, not numbers",
        ),
    ] {
        let err = load(bad, &Names::default(), &CompileOptions::default()).expect_err(bad);
        assert!(err[0].message.contains(want), "{bad}: {}", err[0].message);
    }
}

#[test]
fn fragment_flags() {
    let mut e = engine("100 allow ip from any to any frag mf,!df\n200 allow ip from any to any frag rf\n300 deny ip from any to any\n");
    let mut p = udp_pkt("10.0.0.1", 1, "10.0.0.2", 2);
    p.frag = frag::MF;
    assert_eq!(decide(&mut e, &p), (100, PASS));
    p.frag = frag::MF | frag::DF;
    assert_eq!(decide(&mut e, &p), (300, DROP));
    p.frag = frag::RF;
    assert_eq!(decide(&mut e, &p), (200, PASS));
    // Bare `frag` is a later fragment, IPv4 or IPv6.
    let mut e = engine("100 allow ip from any to any frag\n");
    let mut q = udp_pkt("2001:db8::1", 1, "2001:db8::2", 2);
    q.frag = frag::LATER;
    q.has_ports = false;
    assert_eq!(decide(&mut e, &q), (100, PASS));
}

#[test]
fn tcp_and_ip_header_fields() {
    let mut p = tcp_pkt("10.0.0.1", 1, "10.0.0.2", 80, tcp::ACK);
    p.ip_id = 4242;
    p.tcp_seq = 7;
    p.tcp_ack = 9;
    p.tcp_win = 512;
    p.tcp_data_len = 100;
    p.tcp_opts = tcpopt::SACK | tcpopt::TS;
    for (option, hit) in [
        ("ipid 4242", true),
        ("ipid 1-4241", false),
        ("tcpseq 7", true),
        ("tcpack 9", true),
        ("tcpack 7", false),
        ("tcpwin 500-600", true),
        ("tcpdatalen 100", true),
        ("tcpdatalen 0", false),
        ("tcpoptions sack,ts", true),
        ("tcpoptions !ts", false),
        ("iplen 60", true),
    ] {
        let mut e = engine(&format!("100 allow ip from any to any {option}\n"));
        assert_eq!(decide(&mut e, &p).1 == PASS, hit, "{option}");
    }
    let mut v6 = udp_pkt("2001:db8::1", 1, "2001:db8::2", 2);
    v6.flow_label = 0x12345;
    v6.ext6 = weir_wire::ext6::ROUTING | weir_wire::ext6::RTHDR0;
    let mut e = engine("100 allow ip6 from any to any flow-id 0x12345 ext6hdr rthdr0\n");
    assert_eq!(decide(&mut e, &v6), (100, PASS));
    let mut e = engine("100 allow ip from any to any ipid 0\n");
    assert_eq!(decide(&mut e, &v6).0, 65535, "ipid never matches IPv6");
}

#[test]
fn layer2_pass_sees_the_ethernet_header() {
    let rules = "\
100 allow ip from any to any mac-type arp layer2
200 deny ip from any to any mac any 02:00:00:00:00:66 layer2
300 allow ip from any to any layer2
400 deny ip from any to any mac any any
500 allow ip from any to any
";
    let mut p = udp_pkt("10.0.0.1", 1, "10.0.0.2", 2);
    p.has_mac = true;
    p.ether_type = 0x0800;
    p.mac_src = [2, 0, 0, 0, 0, 0x66];
    // Without the layer-2 pass, MAC tests never match.
    let mut e = engine(&format!("net.link.ether.ipfw=0\n{rules}"));
    assert_eq!(decide(&mut e, &p), (500, PASS));
    // Rules that test layer 2 turn it on by themselves; the frame is
    // denied at layer 2 by its source MAC.
    let mut e = engine(rules);
    assert_eq!(decide(&mut e, &p), (200, DROP));
    p.mac_src = [2, 0, 0, 0, 0, 0x67];
    assert_eq!(
        decide(&mut e, &p),
        (300, PASS),
        "passed layer 2 at 300 (its decision), then IP at 500"
    );
    assert_eq!(counts(&e), [0, 1, 1, 0, 1, 0]);
    // ARP meets the rules at layer 2 only.
    let arp = Packet {
        has_mac: true,
        ether_type: 0x0806,
        direction: Direction::In,
        ..Packet::default()
    };
    assert_eq!(decide(&mut e, &arp), (100, PASS));
    let stats = e.stats();
    assert_eq!((stats.non_ip, stats.packets), (1, 3));
}

/// ipfw(8) PACKET FLOW: a frame coming in meets the rules at layer 2
/// (ether_demux) and then at layer 3 (ip_input); one going out at layer 3
/// (ip_output) and then at layer 2 (ether_output_frame). A drop ends it;
/// the decision named is the layer-2 one unless the IP pass drops.
#[test]
fn frames_pass_both_layers_in_the_kernels_order() {
    let rules = "net.link.ether.ipfw=1\n\
100 count ip from any to any layer2
200 deny ip from any to any out not layer2
300 allow ip from any to any
";
    let mut frame = udp_pkt("10.0.0.1", 1, "10.0.0.2", 2);
    frame.has_mac = true;
    frame.ether_type = 0x0800;
    frame.direction = Direction::Out;
    let mut e = engine(rules);
    assert_eq!(
        decide(&mut e, &frame),
        (200, DROP),
        "IP first on the way out"
    );
    assert_eq!(counts(&e), [0, 1, 0, 0], "layer 2 never saw it");
    frame.direction = Direction::In;
    assert_eq!(decide(&mut e, &frame), (300, PASS));
    assert_eq!(
        counts(&e),
        [1, 1, 2, 0],
        "layer 2 at 100 and 300, IP at 300"
    );
    let deny_ip = "100 allow ip from any to any layer2\n200 deny ip from any to any\n";
    let mut e = engine(deny_ip);
    assert_eq!(decide(&mut e, &frame), (200, DROP), "the IP pass drops");
    // At layer 2 `tee` does nothing and is not counted; `ngtee` copies
    // the frame and goes on (ip_fw2.c: only O_TEE and O_DIVERT test
    // IPFW_ARGS_ETHER).
    let tees = "100 tee 8000 ip from any to any layer2\n200 ngtee 1 ip from any to any layer2\n300 allow ip from any to any\n";
    let mut e = engine(tees);
    assert_eq!(decide(&mut e, &frame), (300, PASS));
    assert_eq!(counts(&e), [0, 1, 2, 0]);
}

#[test]
fn diverted_packets_come_back_marked() {
    let rules = "net.inet.ip.fw.one_pass=0\n100 divert natd ip from any to any not diverted\n200 allow ip from any to any diverted-loopback\n300 deny ip from any to any\n";
    let mut e = engine(rules);
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 2)),
        (200, PASS)
    );
    let mut out = udp_pkt("10.0.0.1", 1, "10.0.0.2", 2);
    out.direction = Direction::Out;
    assert_eq!(decide(&mut e, &out), (300, DROP), "diverted on output");
}

#[test]
fn me_is_either_family_and_needs_addresses() {
    let mut e = Engine::builder(program(
        "100 allow ip from me to any\n200 allow ip from me6 to any\n",
        &CompileOptions::default(),
    ))
    .me(vec![(ip("2001:db8::1"), 6), (ip("10.0.0.1"), 4)])
    .build();
    assert_eq!(
        decide(&mut e, &udp_pkt("2001:db8::1", 1, "2001:db8::2", 2)),
        (100, PASS)
    );
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 2)),
        (100, PASS)
    );
    let opts = CompileOptions {
        no_me: true,
        ..CompileOptions::default()
    };
    let err = load("\n100 allow ip from any to me\n", &Names::default(), &opts).unwrap_err();
    assert_eq!((err[0].span.line, err[0].span.col), (2, 1));
    assert!(
        err[0].message.contains("rule 100 uses 'me'") && err[0].message.contains("--me"),
        "{}",
        err[0].message
    );
}

#[test]
fn options_alone_and_in_or_blocks() {
    let mut e = engine("100 allow src-ip 10.0.0.0/8 dst-port 80\n200 allow ip from any to any { dst-port 443 or proto udp }\n300 deny ip from any to any\n");
    assert_eq!(
        decide(&mut e, &tcp_pkt("10.0.0.1", 1, "192.0.2.1", 80, 0)),
        (100, PASS)
    );
    assert_eq!(
        decide(&mut e, &tcp_pkt("192.0.2.9", 1, "192.0.2.1", 443, 0)),
        (200, PASS)
    );
    assert_eq!(
        decide(&mut e, &udp_pkt("192.0.2.9", 1, "192.0.2.1", 444)),
        (200, PASS)
    );
    assert_eq!(
        decide(&mut e, &tcp_pkt("192.0.2.9", 1, "192.0.2.1", 444, 0)),
        (300, DROP)
    );
}
