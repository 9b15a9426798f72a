//! What `weir inline` reads from untrusted peers: nfqueue netlink messages
//! (then the packet decoded and decided, as the pipeline does live), and
//! whatever a client sends the metrics server (one whole connection,
//! served over an in-memory pipe: every answer starts with an HTTP/1.x
//! status line, or there is none).
//!
//! Input layout: byte 0 even → a netlink datagram; odd → a connection's bytes.
#![no_main]

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weir_engine::Engine;
use weir_live::metrics::{answer, Limits, Shared, Source};
use weir_live::netlink::{parse, Received};
use weir_wire::{decode_with, Direction, LinkType};

const RULES: &str = "\
100 allow udp from any to any 53 in
200 deny tcp from any to any setup
300 allow icmp from any to any icmptypes 0,8
400 deny ip from any to any ipoptions lsrr
";

fn engine() -> &'static Mutex<Engine> {
    static ENGINE: OnceLock<Mutex<Engine>> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let program = weir_engine::load(RULES, &weir_rules::Names::default(), &Default::default())
            .unwrap_or_else(|e| panic!("fuzz ruleset does not compile: {e:?}"));
        Mutex::new(Engine::new(program))
    })
}

struct Fixed;

impl Source for Fixed {
    fn body(&mut self) -> bytes::Bytes {
        bytes::Bytes::from_static(b"# TYPE weir_x counter\nweir_x 1\n")
    }
}

/// Serves one connection whose client sent `request` and hung up.
fn serve(request: &[u8]) -> Vec<u8> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    let runtime = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    });
    let source: Shared = Arc::new(Mutex::new(Fixed));
    let limits = Limits {
        client_time: Duration::from_secs(1),
        ..Limits::default()
    };
    runtime.block_on(async {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        client.write_all(request).await.expect("pipe has room");
        client.shutdown().await.expect("shutdown");
        let served = tokio::spawn(answer(
            hyper_util::rt::TokioIo::new(server),
            source,
            limits,
        ));
        let mut out = Vec::new();
        client.read_to_end(&mut out).await.expect("read");
        served.await.expect("no panic");
        out
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    if sel % 2 == 1 {
        // The pipe holds the whole request: the server never waits on it.
        let rest = &rest[..rest.len().min(32 << 10)];
        let out = serve(rest);
        assert!(
            out.is_empty() || out.starts_with(b"HTTP/1.1 ") || out.starts_with(b"HTTP/1.0 "),
            "{:?}",
            String::from_utf8_lossy(&out)
        );
        return;
    }
    if let Received::Packet(p) = parse(rest) {
        assert!(p.payload.len() <= rest.len());
        assert!(p.orig_len as usize >= p.payload.len());
        // As weir-pipeline's queue source: raw IP, only the fields the
        // rules read, the direction from the hook (interface names are not
        // looked up: no system calls here).
        let mut e = engine().lock().unwrap_or_else(|e| e.into_inner());
        let mut packet = decode_with(LinkType::RAW, p.payload, p.orig_len, e.fields());
        packet.direction = if p.hook <= 2 {
            Direction::In
        } else {
            Direction::Out
        };
        let _ = e.decide(&packet);
    }
});
