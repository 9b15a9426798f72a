//! One frame → `weir_wire::decode` → a compiled engine, under both
//! dispatchers (which must agree).
//!
//! Input layout: byte 0 picks the link type (a supported one, or, when it
//! is 0xff, an arbitrary u32 from the next 4 bytes); then 2 bytes of
//! `orig_len` (big-endian; 0 means "same as captured"); the rest is the frame.
#![no_main]

use std::io;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use weir_engine::{CompileOptions, DispatchKind, Engine, LogFormat, Logger, Program};
use weir_rules::Names;
use weir_wire::{Fields, LinkType};

const LINK_TYPES: [u32; 13] = [0, 1, 9, 12, 14, 50, 101, 104, 108, 113, 228, 229, 276];

/// Exercises ports, tcpflags, icmptypes, frag, ipoptions, tos, lengths,
/// interfaces, `me`, calls, skiptos and logging.
const RULES: &str = "\
100 deny log logamount 5 ip from any to any ipoptions lsrr,ssrr
110 deny ip from any to any frag
120 count log tcp from any to any setup
130 call 1000 tcp from any to any tcpflags syn,!ack
140 skipto 300 udp from any 53 to any
200 allow tcp from any to any established
210 allow tcp from 10.0.0.0/8 to { 192.0.2.0/24 or 198.51.100.0/24 } 80,443,8000-8080 setup
220 deny log tcp from any to any 25 setup
230 reject tcp from any to me 23
240 unreach host udp from any to any not 1-1023
250 reset tcp from any to any tcpflags fin,psh,urg
300 allow udp from 10.0.0.0/8 to any 53,123
310 allow icmp from any to any icmptypes 0,3,8,11
320 deny icmp from any to any icmptypes 5,9,10,13
330 allow ipv6-icmp from any to any icmptypes 1,2,3,4
340 deny ip from any to any ipoptions !rr,ts
350 allow ip from any to any iplen 0-64,1500 ipttl 1-2 iptos lowdelay
360 allow ip6 from 2001:db8::/32 to 2001:db8::/32 in via eth*
370 deny ip4 from any to any out xmit ppp0
380 allow ip from any to any ipversion 6 recv lo
1000 count tcp from any to any 22
1010 return ip from any to any
";

fn program() -> &'static Program {
    static PROGRAM: OnceLock<Program> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        weir_engine::load(RULES, &Names::default(), &CompileOptions::default())
            .unwrap_or_else(|e| panic!("fuzz ruleset does not compile: {e:?}"))
    })
}

/// The ruleset's engine for `dispatch`, built once per process: a build
/// makes the bitset classifier's 65,536-entry tables, which under the
/// fuzzer's coverage hooks took about 65 ms, and three a run left the
/// target at its seeds. Each run gets a replica (fresh counters, states
/// and logamounts, the same classifier).
fn template(dispatch: DispatchKind) -> Engine {
    Engine::builder(program().clone())
        .dispatch(dispatch)
        .me(vec![(
            weir_wire::v4_mapped(u32::from(std::net::Ipv4Addr::new(192, 0, 2, 1))),
            4,
        )])
        .build()
}

thread_local! {
    static TEMPLATES: [Engine; 2] = [template(DispatchKind::Match), template(DispatchKind::Table)];
}

fn engine(dispatch: DispatchKind) -> Engine {
    let mut e = TEMPLATES.with(|t| t[usize::from(dispatch == DispatchKind::Table)].replica());
    let rules = &program().rules;
    let logger = Logger::new(Box::new(io::sink()), LogFormat::Json, &Names::default(), rules);
    e.set_logger(logger);
    e.set_interfaces(&[Some("eth0"), Some("ppp0"), None, Some("lo")]);
    e
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    let (link, rest) = if sel == 0xff {
        match rest.split_first_chunk::<4>() {
            Some((lt, rest)) => (u32::from_be_bytes(*lt), rest),
            None => return,
        }
    } else {
        (LINK_TYPES[usize::from(sel) % LINK_TYPES.len()], rest)
    };
    let Some((len, frame)) = rest.split_first_chunk::<2>() else { return };
    let orig_len = u32::from(u16::from_be_bytes(*len));

    let p = weir_wire::decode(LinkType(link), frame, orig_len);

    // Fewer fields decoded (the selector's bits) change only those fields.
    let fields = Fields::from_bits(sel);
    let some = weir_wire::decode_with(LinkType(link), frame, orig_len, fields);
    assert_eq!(some, fields.keep(&p), "{fields:?}");

    let mut m = engine(DispatchKind::Match);
    let mut t = engine(DispatchKind::Table);
    let mut lean = engine(DispatchKind::Table);
    let q = weir_wire::decode_with(LinkType(link), frame, orig_len, lean.fields());
    // Twice, so the second walk sees non-zero counters and spent logamounts.
    for _ in 0..2 {
        let dm = m.decide(&p);
        let dt = t.decide(&p);
        assert_eq!(dm, dt, "dispatchers disagree on {p:?}");
        assert_eq!(lean.decide(&q), dt, "the program's fields decide as full decoding");
    }
    if let Some(l) = m.logger_mut() {
        let _ = l.flush();
    }
});
