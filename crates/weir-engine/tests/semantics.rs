//! ipfw semantics, rule by rule, on hand-made packets.

use std::net::IpAddr;
use weir_engine::*;
use weir_rules::Names;
use weir_wire::{addr_to_u128, frag, tcp, Direction, Malformed, Packet, L3};

fn engine(rules: &str) -> Engine {
    Engine::new(program(rules))
}

fn program(rules: &str) -> Program {
    load(rules, &Names::default(), &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{rules}: {e:?}"))
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
        tcp_flags: 0,
        ..tcp_pkt(src, sport, dst, dport, 0)
    }
}

fn icmp_pkt(src: &str, dst: &str, t: u8) -> Packet {
    Packet {
        proto: 1,
        has_ports: false,
        has_icmp: true,
        icmp_type: t,
        src_port: 0,
        dst_port: 0,
        ..tcp_pkt(src, 0, dst, 0, 0)
    }
}

/// The deciding rule's number, and the verdict.
fn decide(e: &mut Engine, p: &Packet) -> (u16, Verdict) {
    let d = e.decide(p);
    (
        e.program().rules[d.rule.expect("IP packets are decided by a rule")].number,
        d.verdict,
    )
}

#[test]
fn first_match_wins_and_default_denies() {
    let mut e = engine("100 allow tcp from any to any 80\n200 deny tcp from any to any\n");
    let web = tcp_pkt("10.0.0.1", 1234, "10.0.0.2", 80, tcp::SYN);
    assert_eq!(decide(&mut e, &web), (100, Verdict::Pass));
    let ssh = tcp_pkt("10.0.0.1", 1234, "10.0.0.2", 22, tcp::SYN);
    assert_eq!(decide(&mut e, &ssh), (200, Verdict::Drop));
    let dns = udp_pkt("10.0.0.1", 1234, "10.0.0.2", 53);
    assert_eq!(decide(&mut e, &dns), (65535, Verdict::Drop));
    let counts: Vec<u64> = e.counters().iter().map(|c| c.packets).collect();
    assert_eq!(counts, [1, 1, 1]);
    assert_eq!(e.counters()[0].bytes, 60);
}

#[test]
fn default_allow_switch() {
    let prog = load(
        "100 deny udp from any to any",
        &Names::default(),
        &CompileOptions {
            default_allow: true,
            ..Default::default()
        },
    )
    .unwrap();
    let mut e = Engine::new(prog);
    let p = tcp_pkt("10.0.0.1", 1, "10.0.0.2", 2, 0);
    assert_eq!(decide(&mut e, &p), (65535, Verdict::Pass));
}

#[test]
fn count_continues_and_counts() {
    let mut e = engine("100 count ip from any to any\n200 count tcp from any to any\n300 allow ip from any to any\n");
    decide(&mut e, &tcp_pkt("10.0.0.1", 1, "10.0.0.2", 2, 0));
    decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 2));
    let counts: Vec<u64> = e.counters().iter().map(|c| c.packets).collect();
    assert_eq!(counts, [2, 1, 2, 0]);
}

#[test]
fn skipto_jumps_to_first_rule_at_or_after_target() {
    let mut e = engine(
        "100 skipto 250 tcp from any to any\n200 deny tcp from any to any\n300 allow tcp from any to any\n300 deny ip from any to any\n",
    );
    assert_eq!(
        decide(&mut e, &tcp_pkt("10.0.0.1", 1, "10.0.0.2", 2, 0)),
        (300, Verdict::Pass)
    );
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 2)),
        (300, Verdict::Drop)
    );
    assert_eq!(e.counters()[1].packets, 0, "rule 200 was skipped");
}

#[test]
fn rules_sort_by_number_keeping_file_order_for_ties() {
    let mut e = engine("300 allow ip from any to any\n100 count ip from any to any\n100 deny udp from any to any\n");
    let numbers: Vec<u16> = e.program().rules.iter().map(|r| r.number).collect();
    assert_eq!(numbers, [100, 100, 300, 65535]);
    assert!(e.program().rules[0].text.starts_with("count"));
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 2)),
        (100, Verdict::Drop)
    );
}

#[test]
fn call_and_return() {
    let rules = "100 call 1000 ip from any to any\n\
                 200 allow udp from any to any\n\
                 300 deny ip from any to any\n\
                 1000 deny tcp from any to any 23\n\
                 1100 return ip from any to any\n";
    let mut e = engine(rules);
    assert_eq!(
        decide(&mut e, &tcp_pkt("10.0.0.1", 1, "10.0.0.2", 23, 0)),
        (1000, Verdict::Drop)
    );
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 53)),
        (200, Verdict::Pass)
    );
    assert_eq!(
        decide(&mut e, &tcp_pkt("10.0.0.1", 1, "10.0.0.2", 22, 0)),
        (300, Verdict::Drop)
    );
    assert_eq!(e.counters()[4].packets, 2, "return taken twice");
}

#[test]
fn return_without_call_falls_through() {
    let mut e = engine("100 return\n200 allow ip from any to any\n");
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 2)),
        (200, Verdict::Pass)
    );
    // ip_fw2.c: a failed return goes on without counting its rule.
    assert_eq!(e.counters()[0].packets, 0);
}

#[test]
fn call_stack_is_bounded() {
    // Each rule calls the next: deeper than the stack allows.
    let mut rules = String::new();
    for i in 1..=40u32 {
        rules += &format!("{} call {} ip from any to any\n", i * 10, i * 10 + 10);
    }
    rules += "1000 allow ip from any to any\n";
    let mut e = engine(&rules);
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 2)),
        (1000, Verdict::Pass)
    );
    // The first 16 calls are taken and counted; the rest fail, and a
    // failed call goes on without counting its rule (ip_fw2.c).
    let counted: Vec<u64> = e.counters()[..40].iter().map(|c| c.packets).collect();
    assert_eq!(counted, [vec![1; 16], vec![0; 24]].concat());
}

#[test]
fn or_blocks_and_negation() {
    let mut e = engine(
        "100 allow { tcp or udp } from { 10.0.0.1 or 10.0.0.2 } to any\n\
         200 allow icmp from not 10.0.0.0/8 to any\n\
         300 deny ip from any to any\n",
    );
    assert_eq!(decide(&mut e, &udp_pkt("10.0.0.2", 1, "1.1.1.1", 2)).0, 100);
    assert_eq!(decide(&mut e, &udp_pkt("10.0.0.3", 1, "1.1.1.1", 2)).0, 300);
    assert_eq!(decide(&mut e, &icmp_pkt("10.0.0.1", "1.1.1.1", 8)).0, 300);
    assert_eq!(decide(&mut e, &icmp_pkt("192.0.2.1", "1.1.1.1", 8)).0, 200);
}

/// Typed table values: `tablearg` reads the field its action needs
/// (ip_fw2.c `TARG(arg, skipto|fib)`), and `table(NAME,VALUE)` compares
/// the `tag` field.
#[test]
fn typed_table_values_feed_each_action_its_field() {
    let mut e = engine(
        "table A create type addr valtype tag,skipto,fib\n\
         table A add 10.0.0.0/8 7,300,3\n\
         table A add 11.0.0.0/8 9,400,0\n\
         table A add 12.0.0.0/8 7,400,0\n\
         100 setfib tablearg ip from table(A) to any\n\
         200 skipto tablearg ip from table(A) to any\n\
         250 deny ip from any to any\n\
         300 allow ip from any to any fib 3\n\
         310 deny ip from any to any\n\
         400 allow ip from table(A,9) to any\n\
         410 deny ip from any to any\n",
    );
    assert_eq!(decide(&mut e, &udp_pkt("10.0.0.1", 1, "1.1.1.1", 2)).0, 300);
    assert_eq!(decide(&mut e, &udp_pkt("11.0.0.1", 1, "1.1.1.1", 2)).0, 400);
    assert_eq!(decide(&mut e, &udp_pkt("12.0.0.1", 1, "1.1.1.1", 2)).0, 410);
    assert_eq!(decide(&mut e, &udp_pkt("13.0.0.1", 1, "1.1.1.1", 2)).0, 250);
}

/// With two table tests, `tablearg` is the value of the last lookup that
/// found the packet (ip_fw2.c sets it at each lookup).
#[test]
fn tablearg_is_the_last_lookup() {
    let mut e = engine(
        "table A add 10.0.0.0/8 300\ntable B add 1.1.1.0/24 400\n\
         100 skipto tablearg ip from table(A) to table(B)\n\
         200 skipto tablearg ip from table(A) to { table(B) or 2.2.2.2 }\n\
         300 allow ip from any to any\n\
         400 deny ip from any to any\n",
    );
    assert_eq!(decide(&mut e, &udp_pkt("10.0.0.1", 1, "1.1.1.1", 2)).0, 400);
    // Rule 100 fails; at 200 the destination's block finds nothing in B.
    assert_eq!(decide(&mut e, &udp_pkt("10.0.0.1", 1, "2.2.2.2", 2)).0, 300);
}

/// ipfw(8) RULE BODY: `{ x or not y or z }`, each member negated on its own.
#[test]
fn negated_member_of_an_address_block() {
    let mut e = engine(
        "100 allow ip from { 192.0.2.1 or not 1.2.3.0/24 or 198.51.100.0/24 } to any\n\
         200 allow ip from any to { not 10.0.0.0/8 or 10.0.0.5 }\n\
         300 deny ip from any to any\n",
    );
    assert_eq!(
        decide(&mut e, &udp_pkt("192.0.2.1", 1, "10.0.0.1", 2)).0,
        100
    );
    assert_eq!(decide(&mut e, &udp_pkt("1.2.4.1", 1, "10.0.0.1", 2)).0, 100);
    assert_eq!(
        decide(&mut e, &udp_pkt("2001:db8::1", 1, "10.0.0.1", 2)).0,
        100
    );
    assert_eq!(decide(&mut e, &udp_pkt("1.2.3.9", 1, "10.0.0.1", 2)).0, 300);
    assert_eq!(decide(&mut e, &udp_pkt("1.2.3.9", 1, "11.0.0.1", 2)).0, 200);
    assert_eq!(decide(&mut e, &udp_pkt("1.2.3.9", 1, "10.0.0.5", 2)).0, 200);
    let mut e = engine("100 deny ip from not { 10.0.0.1 or not 10.0.0.0/8 } to any\n");
    assert_eq!(decide(&mut e, &udp_pkt("10.0.0.2", 1, "1.1.1.1", 2)).0, 100);
    assert_ne!(decide(&mut e, &udp_pkt("10.0.0.1", 1, "1.1.1.1", 2)).0, 100);
    assert_ne!(decide(&mut e, &udp_pkt("11.0.0.1", 1, "1.1.1.1", 2)).0, 100);
}

#[test]
fn negated_address_list_needs_all_to_fail() {
    let mut e =
        engine("100 deny ip from not 10.0.0.1,10.0.0.2 to any\n200 allow ip from any to any\n");
    assert_eq!(decide(&mut e, &udp_pkt("10.0.0.1", 1, "1.1.1.1", 2)).0, 200);
    assert_eq!(decide(&mut e, &udp_pkt("10.0.0.2", 1, "1.1.1.1", 2)).0, 200);
    assert_eq!(decide(&mut e, &udp_pkt("10.0.0.3", 1, "1.1.1.1", 2)).0, 100);
}

#[test]
fn address_families_never_cross() {
    let mut e = engine(
        "100 deny ip from ::/0 to any\n200 deny ip from 0.0.0.0/0 to any ipversion 6\n300 allow ip from any to any\n",
    );
    // An IPv4 packet is inside ::/0 in mapped form, but v6 nets need v6 packets.
    assert_eq!(
        decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 2)).0,
        300
    );
    assert_eq!(
        decide(&mut e, &udp_pkt("2001:db8::1", 1, "2001:db8::2", 2)).0,
        100
    );
}

#[test]
fn masks_and_prefixes() {
    let mut e = engine(
        "100 allow ip from 10.0.0.0:255.0.255.0 to any\n200 allow ip from 2001:db8:1::/48 to any\n300 deny ip from any to any\n",
    );
    assert_eq!(decide(&mut e, &udp_pkt("10.9.0.9", 1, "1.1.1.1", 2)).0, 100);
    assert_eq!(decide(&mut e, &udp_pkt("10.9.1.9", 1, "1.1.1.1", 2)).0, 300);
    assert_eq!(
        decide(&mut e, &udp_pkt("2001:db8:1:ffff::1", 1, "::1", 2)).0,
        200
    );
    assert_eq!(
        decide(&mut e, &udp_pkt("2001:db8:2::1", 1, "::1", 2)).0,
        300
    );
}

#[test]
fn later_fragments_never_match_ports() {
    let mut e = engine("100 deny udp from any to any 53\n200 allow udp from any to any not 53\n300 count ip from any to any frag\n");
    let mut later = udp_pkt("10.0.0.1", 0, "10.0.0.2", 0);
    later.has_ports = false;
    later.frag = frag::LATER;
    // Neither the port nor its negation matches a packet without ports.
    assert_eq!(decide(&mut e, &later), (65535, Verdict::Drop));
    assert_eq!(e.counters()[2].packets, 1, "frag matched");
}

#[test]
fn tcp_options() {
    let mut e = engine(
        "100 count tcp from any to any setup\n\
         200 count tcp from any to any established\n\
         300 count tcp from any to any tcpflags syn,!ack\n\
         400 count tcp from any to any tcpflags fin\n\
         500 allow ip from any to any\n",
    );
    let syn = tcp_pkt("10.0.0.1", 1, "10.0.0.2", 2, tcp::SYN);
    let synack = tcp_pkt("10.0.0.1", 1, "10.0.0.2", 2, tcp::SYN | tcp::ACK);
    let rst = tcp_pkt("10.0.0.1", 1, "10.0.0.2", 2, tcp::RST);
    let fin = tcp_pkt("10.0.0.1", 1, "10.0.0.2", 2, tcp::FIN | tcp::ACK);
    for p in [syn, synack, rst, fin] {
        decide(&mut e, &p);
    }
    let counts: Vec<u64> = e.counters().iter().map(|c| c.packets).collect();
    assert_eq!(counts, [1, 3, 1, 1, 4, 0]);
}

/// ip_fw2.c O_ESTAB: `(th_flags & (TH_RST|TH_ACK|TH_SYN)) != TH_SYN`, so
/// a bare FIN, or no flag at all, is established; a bare SYN (with or
/// without FIN, PSH, URG) is not.
#[test]
fn established_is_anything_but_a_bare_syn() {
    let mut e = engine("100 allow tcp from any to any established\n200 deny ip from any to any\n");
    for (flags, want) in [
        (tcp::FIN, 100),
        (0, 100),
        (tcp::PSH, 100),
        (tcp::SYN | tcp::RST, 100),
        (tcp::SYN, 200),
        (tcp::SYN | tcp::FIN, 200),
        (tcp::SYN | tcp::PSH, 200),
    ] {
        let p = tcp_pkt("10.0.0.1", 1, "10.0.0.2", 2, flags);
        assert_eq!(decide(&mut e, &p).0, want, "flags {flags:#x}");
    }
}

#[test]
fn icmp_and_ip_field_options() {
    let mut e = engine(
        "100 count icmp from any to any icmptypes 0,8\n\
         200 count ip from any to any ipttl 1-10\n\
         300 count ip from any to any iplen 60\n\
         400 count ip from any to any iptos lowdelay\n\
         500 count ip from any to any ipversion 6\n\
         600 allow ip from any to any\n",
    );
    let echo = icmp_pkt("10.0.0.1", "10.0.0.2", 8);
    let unreach = icmp_pkt("10.0.0.1", "10.0.0.2", 3);
    let mut low_ttl = udp_pkt("10.0.0.1", 1, "10.0.0.2", 2);
    low_ttl.ttl = 5;
    low_ttl.ip_len = 100;
    low_ttl.tos = 0x10;
    let v6 = udp_pkt("2001:db8::1", 1, "2001:db8::2", 2);
    for p in [echo, unreach, low_ttl, v6] {
        decide(&mut e, &p);
    }
    let counts: Vec<u64> = e.counters().iter().map(|c| c.packets).collect();
    // iplen 60: the two ICMP packets; the IPv6 one has no IPv4 length.
    assert_eq!(counts, [1, 1, 2, 1, 1, 4, 0]);
}

#[test]
fn direction_interfaces_and_me() {
    let mut e = Engine::builder(program(
        "100 count ip from any to any in recv eth*\n\
         200 count ip from any to any out\n\
         300 count ip from any to any xmit wan0\n\
         400 count ip from me to any\n\
         500 allow ip from any to any\n",
    ))
    .me(vec![(ip("192.0.2.1"), 4)])
    .build();
    e.set_interfaces(&[Some("eth0"), Some("wan0"), None]);
    let mut a = udp_pkt("192.0.2.1", 1, "10.0.0.2", 2);
    a.iface = 0;
    let mut b = a;
    b.iface = 1;
    b.direction = Direction::Out;
    let mut c = udp_pkt("192.0.2.9", 1, "10.0.0.2", 2);
    c.iface = 2;
    for p in [a, b, c] {
        decide(&mut e, &p);
    }
    let counts: Vec<u64> = e.counters().iter().map(|c| c.packets).collect();
    assert_eq!(counts, [1, 1, 1, 2, 3, 0]);
}

#[test]
fn non_ip_and_malformed_follow_policy() {
    let mut e = engine("100 allow ip from any to any\n");
    let arp = Packet::default();
    assert_eq!(
        e.decide(&arp),
        Decision {
            rule: None,
            verdict: Verdict::Pass
        }
    );
    let bad = Packet {
        l3: L3::Malformed(Malformed::TruncatedL4),
        ..Packet::default()
    };
    assert_eq!(
        e.decide(&bad),
        Decision {
            rule: None,
            verdict: Verdict::Drop
        }
    );
    let s = e.stats();
    assert_eq!((s.packets, s.passed, s.dropped, s.non_ip), (2, 1, 1, 1));
    assert_eq!(s.malformed[Malformed::TruncatedL4 as usize], 1);
    let mut e = Engine::builder(program("100 allow ip from any to any\n"))
        .policy(Policy {
            non_ip: Verdict::Drop,
            malformed: Verdict::Pass,
        })
        .build();
    assert_eq!(e.decide(&arp).verdict, Verdict::Drop);
    assert_eq!(e.decide(&bad).verdict, Verdict::Pass);
    let s = e.stats();
    assert_eq!((s.packets, s.passed, s.dropped, s.non_ip), (2, 1, 1, 1));
    assert_eq!(e.counters()[0].packets, 0, "rules never saw them");
}

#[test]
fn compile_errors_carry_positions() {
    let err = load(
        "allow ip from any to any 80\n",
        &Names::default(),
        &CompileOptions::default(),
    )
    .unwrap_err();
    assert!(err[0].message.contains("ports need"), "{}", err[0].message);
    let err = load(
        "allow tcp from any to any nosuchsvc\n",
        &Names::default(),
        &CompileOptions::default(),
    )
    .unwrap_err();
    assert_eq!((err[0].span.line, err[0].span.col), (1, 27));
    let err = load(
        "allow frob from any to any\n",
        &Names::default(),
        &CompileOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err[0].message, "unknown protocol 'frob'");
    let err = load(
        "allow tcp from any to any keep-state not record-state\n",
        &Names::default(),
        &CompileOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err[0].message, "a state option cannot be negated");
    assert_eq!((err[0].span.line, err[0].span.col), (1, 42));
}

struct VecSink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
impl std::io::Write for VecSink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logged(rules: &str, format: LogFormat, packets: &[Packet]) -> String {
    let mut e = engine(rules);
    let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let logger = Logger::new(
        Box::new(VecSink(buf.clone())),
        format,
        &Names::default(),
        &e.program().rules,
    );
    e.set_logger(logger);
    e.set_interfaces(&[Some("eth0")]);
    for p in packets {
        e.decide(p);
    }
    e.logger_mut().unwrap().flush().unwrap();
    let out = String::from_utf8(buf.lock().unwrap().clone()).unwrap();
    out
}

#[test]
fn log_lines_look_like_ipfw_and_respect_logamount() {
    let p = tcp_pkt("10.0.0.1", 1234, "10.0.0.2", 23, tcp::SYN);
    let out = logged(
        "400 deny log logamount 2 tcp from any to any 23\n",
        LogFormat::Text,
        &[p, p, p],
    );
    assert_eq!(
        out,
        "weir: 400 Deny TCP 10.0.0.1:1234 10.0.0.2:23 in via eth0\n".repeat(2)
    );
    let v6 = icmp_pkt("2001:db8::1", "2001:db8::2", 128);
    let v6 = Packet {
        ip_version: 6,
        proto: 58,
        direction: Direction::Out,
        ..v6
    };
    // ipfw(8): "A value of 0 removes any limit".
    let out = logged(
        "400 deny log logamount 0 tcp from any to any 23\n",
        LogFormat::Text,
        &[p, p, p],
    );
    assert_eq!(out.lines().count(), 3);
    let out = logged("100 count log ip from any to any\n", LogFormat::Text, &[v6]);
    assert_eq!(
        out,
        "weir: 100 Count ICMPv6:128.0 2001:db8::1 2001:db8::2 out via eth0\n"
    );
}

#[test]
fn json_log_lines() {
    let p = udp_pkt("10.0.0.1", 5353, "10.0.0.2", 53);
    let out = logged("100 allow log udp from any to any\n", LogFormat::Json, &[p]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["rule"], 100);
    assert_eq!(v["action"], "allow");
    assert_eq!(v["src"], "10.0.0.1");
    assert_eq!(v["dst_port"], 53);
    assert_eq!(v["iface"], "eth0");
    assert_eq!(v["packet"], 1);
}

#[test]
fn ipv4_header_options_never_match_ipv6() {
    let mut e = engine(
        "100 count ip from any to any ipttl 0-255\n\
         200 count ip from any to any iplen 0-65535\n\
         300 count ip from any to any iptos !lowdelay\n\
         400 count ip from any to any ipoptions !rr\n\
         500 count ip from any to any not ipoptions rr\n\
         600 allow ip from any to any\n",
    );
    decide(&mut e, &udp_pkt("2001:db8::1", 1, "2001:db8::2", 2));
    decide(&mut e, &udp_pkt("10.0.0.1", 1, "10.0.0.2", 2));
    let counts: Vec<u64> = e.counters().iter().map(|c| c.packets).collect();
    // `not` still inverts: an IPv6 packet does not have option rr.
    assert_eq!(counts, [1, 1, 1, 1, 2, 2, 0]);
}

#[test]
fn counts_of_split_work_add_up_to_one_engine_s() {
    let rules = "100 count udp from any to any\n200 allow tcp from any to any 80\n\
                 300 deny icmp from any to any\n400 allow udp from any to any 53\n";
    let packets = [
        tcp_pkt("10.0.0.1", 1234, "10.0.0.2", 80, tcp::SYN),
        udp_pkt("10.0.0.1", 5353, "10.0.0.2", 53),
        icmp_pkt("10.0.0.3", "10.0.0.2", 8),
        tcp_pkt("10.0.0.1", 1234, "10.0.0.2", 22, tcp::SYN),
        Packet::default(),
        Packet {
            l3: L3::Malformed(Malformed::TruncatedIp),
            ..Packet::default()
        },
    ];
    let mut whole = engine(rules);
    let (mut a, mut b) = (engine(rules), engine(rules));
    for (k, p) in packets.iter().cycle().take(25).enumerate() {
        whole.decide(p);
        if k % 3 == 0 { &mut a } else { &mut b }.decide(p);
    }
    a.add_counts(&b);
    assert_eq!(a.counters(), whole.counters());
    assert_eq!(a.stats(), whole.stats());
    assert!(whole.counters().iter().any(|c| c.bytes > 0));
}
