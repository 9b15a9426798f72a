//! The two parsers of `weir inline` that see untrusted bytes: nfqueue
//! netlink messages (then the packet through the filter, as live) and the
//! metrics server's HTTP request line.
//!
//! Input layout: byte 0 even → a netlink datagram; odd → an HTTP request.
#![no_main]

use std::sync::Mutex;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use weir_live::filter::Filter;
use weir_live::metrics::parse_request;
use weir_live::netlink::{parse, Received};

const RULES: &str = "\
100 allow udp from any to any 53 in
200 deny tcp from any to any setup
300 allow icmp from any to any icmptypes 0,8
400 deny ip from any to any ipoptions lsrr
";

fn filter() -> &'static Mutex<Filter> {
    static FILTER: OnceLock<Mutex<Filter>> = OnceLock::new();
    FILTER.get_or_init(|| {
        let program = weir_engine::load(RULES, &weir_rules::Names::default(), &Default::default())
            .unwrap_or_else(|e| panic!("fuzz ruleset does not compile: {e:?}"));
        Mutex::new(Filter::new(weir_engine::Engine::new(program)))
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    if sel % 2 == 1 {
        let _ = parse_request(rest);
        return;
    }
    if let Received::Packet(p) = parse(rest) {
        assert!(p.payload.len() <= rest.len());
        assert!(p.orig_len as usize >= p.payload.len());
        // Interface indexes are looked up by name: keep them 0 (none) so
        // the fuzzer does not make system calls per input.
        let p = weir_live::netlink::QueuedPacket {
            indev: 0,
            outdev: 0,
            ..p
        };
        let mut f = filter().lock().unwrap_or_else(|e| e.into_inner());
        let _ = f.decide(&p);
    }
});
