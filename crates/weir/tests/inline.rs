//! `weir inline` on a real NFQUEUE: three network namespaces per test
//! (sender, router, receiver) joined by veth pairs; nftables in the router
//! steers forwarded traffic into queue 0, where weir decides it. Traffic
//! comes from sockets the test opens inside the namespaces, so every
//! count is exact. Needs root; without it every test prints SKIPPED.
//! Namespaces carry the test's pid and name and are removed on drop, even
//! when an assertion fails.

mod common;
mod netns;
#[path = "../../weir-live/tests/promtool/mod.rs"]
mod promtool;

use rustix::process::Signal;
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

macro_rules! need_root {
    ($name:expr) => {
        if !root() {
            eprintln!(
                "*** SKIPPED: {} needs root (namespaces, nftables) ***",
                $name
            );
            return;
        }
    };
}

use netns::{in_ns, root, Net, Weir, RECEIVER, SENDER};

fn rules_file(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let p = dir.path().join("rules.conf");
    std::fs::write(&p, text).unwrap();
    p
}

/// Per rule number: packets counted (rules with one number summed).
fn rule_packets(json: &Value, number: u64) -> u64 {
    json["weir"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i.get("rule"))
        .filter(|r| r["number"] == number)
        .map(|r| r["counter"]["packets"].as_u64().unwrap())
        .sum()
}

fn section<'a>(json: &'a Value, name: &str) -> &'a Value {
    json["weir"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|i| i.get(name))
        .unwrap_or_else(|| panic!("no {name} in {json}"))
}

/// A receiving socket in the receiver namespace.
fn receiver(net: &Net, port: u16) -> UdpSocket {
    in_ns(&net.receiver, || {
        let s = UdpSocket::bind((RECEIVER, port)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        s
    })
}

fn sender(net: &Net) -> UdpSocket {
    in_ns(&net.sender, || UdpSocket::bind((SENDER, 0)).unwrap())
}

/// Sends datagrams numbered `seqs` to `port`, paced so no queue on the
/// way (veth backlog, socket buffers) overflows.
fn send(s: &UdpSocket, port: u16, seqs: std::ops::Range<u32>) {
    let to: SocketAddr = format!("{RECEIVER}:{port}").parse().unwrap();
    for seq in seqs {
        let mut msg = [0u8; 64];
        msg[..4].copy_from_slice(&seq.to_be_bytes());
        s.send_to(&msg, to).unwrap();
        if seq % 32 == 31 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Every sequence number that arrives until the socket is quiet.
fn drain(s: &UdpSocket) -> BTreeSet<u32> {
    let mut got = BTreeSet::new();
    let mut buf = [0u8; 128];
    while let Ok(n) = s.recv(&mut buf) {
        assert!(n >= 4);
        assert!(
            got.insert(u32::from_be_bytes(buf[..4].try_into().unwrap())),
            "duplicate"
        );
    }
    got
}

#[test]
fn inline_drops_what_the_rules_deny_and_passes_the_rest() {
    need_root!("inline_drops_what_the_rules_deny_and_passes_the_rest");
    let net = Net::new("basic");
    let dir = tempfile::tempdir().unwrap();
    let rules = rules_file(
        &dir,
        "100 allow udp from any to any 5001\n\
         200 deny udp from any to any 5002\n\
         300 allow tcp from any to any 7001\n\
         310 allow tcp from any 7001 to any\n\
         400 deny tcp from any to any 7002\n\
         500 allow icmp from any to any icmptypes 0,8\n",
    );
    let (rx1, rx2) = (receiver(&net, 5001), receiver(&net, 5002));
    let (l1, l2) = in_ns(&net.receiver, || {
        (
            TcpListener::bind((RECEIVER, 7001)).unwrap(),
            TcpListener::bind((RECEIVER, 7002)).unwrap(),
        )
    });
    let weir = Weir::start(&net, &rules, &["--json"]);

    let tx = sender(&net);
    send(&tx, 5001, 0..200);
    send(&tx, 5002, 0..100);
    assert_eq!(
        drain(&rx1),
        (0..200).collect(),
        "every allowed datagram arrives"
    );
    assert!(drain(&rx2).is_empty(), "no denied datagram arrives");

    let (allowed, denied) = in_ns(&net.sender, || {
        let t = Duration::from_millis(1500);
        (
            TcpStream::connect_timeout(&format!("{RECEIVER}:7001").parse().unwrap(), t),
            TcpStream::connect_timeout(&format!("{RECEIVER}:7002").parse().unwrap(), t),
        )
    });
    let allowed = allowed.expect("connect to the allowed port");
    drop(allowed);
    assert!(denied.is_err(), "connect to the denied port must fail");
    assert!(l1.accept().is_ok());
    l2.set_nonblocking(true).unwrap();
    assert!(l2.accept().is_err(), "no connection reached port 7002");

    net.exec_ok(
        &net.sender,
        &["ping", "-c", "3", "-i", "0.2", "-W", "2", RECEIVER],
    );

    let (json, _) = weir.stop();
    assert_eq!(rule_packets(&json, 100), 200);
    assert_eq!(rule_packets(&json, 200), 100);
    assert!(rule_packets(&json, 300) >= 1 && rule_packets(&json, 310) >= 1);
    assert!(rule_packets(&json, 400) >= 1, "the SYN to 7002 was decided");
    assert_eq!(rule_packets(&json, 500), 6, "3 echo requests, 3 replies");
    assert_eq!(
        rule_packets(&json, 65535),
        0,
        "nothing unexpected was queued"
    );
    let (summary, queue) = (section(&json, "summary"), section(&json, "queue"));
    let packets = summary["packets"].as_u64().unwrap();
    assert_eq!(
        queue["accepted"].as_u64().unwrap() + queue["dropped"].as_u64().unwrap(),
        packets,
        "one verdict per packet"
    );
    assert_eq!(queue["dropped"], summary["dropped"]);
    assert_eq!(summary["malformed"], 0);
}

/// A GET in the router's namespace, where weir's metrics listen.
fn scrape(net: &Net, addr: &str) -> String {
    let addr: SocketAddr = addr.parse().unwrap();
    in_ns(&net.router, || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    })
}

fn metric(text: &str, series: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn metrics_serve_prometheus_counters() {
    need_root!("metrics_serve_prometheus_counters");
    let net = Net::new("metrics");
    let dir = tempfile::tempdir().unwrap();
    let rules = rules_file(
        &dir,
        "100 allow udp from any to any 5001 keep-state\n300 deny udp from any to any 5002\n",
    );
    let _rx = (receiver(&net, 5001), receiver(&net, 5002));
    let weir = Weir::start(&net, &rules, &["--metrics", "127.0.0.1:0", "--json"]);
    let line = weir.wait_for("metrics at http://");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.strip_suffix("/metrics"))
        .unwrap()
        .to_owned();
    let tx = sender(&net);
    send(&tx, 5001, 0..30);
    send(&tx, 5002, 0..50);
    let start = Instant::now();
    let text = loop {
        let reply = scrape(&net, &addr);
        let (head, body) = reply.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.0 200 OK\r\n"), "{reply}");
        assert!(
            head.to_ascii_lowercase()
                .contains("\r\ncontent-type: text/plain; version=0.0.4; charset=utf-8"),
            "{head}"
        );
        let body = body.to_owned();
        if metric(
            &body,
            "weir_rule_packets_total{rule=\"300\",action=\"deny\"}",
        ) == Some(50)
        {
            break body;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "counters never reached 50:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        metric(
            &text,
            "weir_rule_packets_total{rule=\"100\",action=\"allow\"}"
        ),
        Some(30)
    );
    assert_eq!(
        metric(&text, "weir_rule_bytes_total{rule=\"300\",action=\"deny\"}"),
        Some(50 * 92)
    );
    assert_eq!(
        metric(&text, "weir_packets_total{verdict=\"drop\"}"),
        Some(50)
    );
    assert_eq!(
        metric(&text, "weir_queue_verdicts_total{verdict=\"accept\"}"),
        Some(30)
    );
    assert_eq!(
        metric(
            &text,
            "weir_queue_kernel_drops_total{reason=\"queue_full\"}"
        ),
        Some(0)
    );
    // Rule 100 keeps state: its flows are alive (UDP lifetime 10 s), and
    // the state-matched packets still count for rule 100 (30 above).
    let created = metric(&text, "weir_states_created_total").expect("state metrics");
    assert!(created >= 1, "{text}");
    assert_eq!(metric(&text, "weir_states"), Some(created), "{text}");
    assert_eq!(
        metric(&text, "weir_states_refused_total{reason=\"full\"}"),
        Some(0)
    );
    if let Some(promtool) = promtool::tool("promtool", "the promtool check of inline's metrics") {
        promtool::promtool_check(&promtool, &text);
    }
    let (json, _) = weir.stop();
    assert_eq!(rule_packets(&json, 300), 50);
}

#[test]
fn reload_under_traffic_loses_no_verdict() {
    need_root!("reload_under_traffic_loses_no_verdict");
    let net = Net::new("reload");
    let dir = tempfile::tempdir().unwrap();
    // Rule 50 is unchanged by the reload, so its counter carries over;
    // rule 100 changes from allow to deny.
    let rules = rules_file(
        &dir,
        "50 count udp from any to any\n100 allow udp from any to any 5001\n",
    );
    let rx = receiver(&net, 5001);
    let weir = Weir::start(&net, &rules, &["--json"]);

    // A sender that never pauses for the reload: numbered datagrams until told to stop.
    let tx = sender(&net);
    let (sent, done) = (
        Arc::new(AtomicU32::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let sending = {
        let (sent, done) = (Arc::clone(&sent), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut seq = 0;
            while !done.load(Ordering::Relaxed) {
                send(&tx, 5001, seq..seq + 16);
                seq += 16;
                sent.store(seq, Ordering::SeqCst);
            }
        })
    };
    // drain() returns after 300 ms of silence: after the swap to deny,
    // or a pause; a second empty drain confirms the end.
    let receiving = std::thread::spawn(move || {
        let mut all = BTreeSet::new();
        loop {
            let got = drain(&rx);
            if got.is_empty() {
                break all;
            }
            all.extend(got);
        }
    });
    while sent.load(Ordering::SeqCst) < 2000 {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::fs::write(
        &rules,
        "50 count udp from any to any\n100 deny udp from any to any 5001\n",
    )
    .unwrap();
    let before_signal = sent.load(Ordering::SeqCst);
    weir.signal(Signal::HUP);
    weir.wait_for("weir: reloaded");
    let after_reload = sent.load(Ordering::SeqCst);
    while sent.load(Ordering::SeqCst) < after_reload + 2000 {
        std::thread::sleep(Duration::from_millis(5));
    }
    done.store(true, Ordering::Relaxed);
    sending.join().unwrap();
    let total = sent.load(Ordering::SeqCst);
    let got = receiving.join().unwrap();
    let (json, _) = weir.stop();

    let summary = section(&json, "summary");
    let queue = section(&json, "queue");
    assert_eq!(
        summary["packets"].as_u64().unwrap(),
        u64::from(total),
        "every datagram was queued"
    );
    assert_eq!(
        queue["accepted"].as_u64().unwrap() + queue["dropped"].as_u64().unwrap(),
        u64::from(total),
        "sent = accepted + dropped"
    );
    assert_eq!(queue["accepted"].as_u64().unwrap(), got.len() as u64);
    // The old ruleset passed a prefix; the new one dropped the rest.
    let passed = got.len() as u32;
    assert_eq!(
        got,
        (0..passed).collect(),
        "a prefix arrived, nothing after the swap"
    );
    assert!(
        passed >= before_signal && passed <= after_reload,
        "{before_signal} ≤ {passed} ≤ {after_reload}"
    );
    assert_eq!(
        rule_packets(&json, 50),
        u64::from(total),
        "the unchanged rule kept its count"
    );
    assert_eq!(
        rule_packets(&json, 100),
        u64::from(total - passed),
        "the new rule 100 counts from the swap"
    );
    assert_eq!(queue["reloads_ok"], 1);
}

#[test]
fn bad_reload_keeps_the_running_ruleset() {
    need_root!("bad_reload_keeps_the_running_ruleset");
    let net = Net::new("badreload");
    let dir = tempfile::tempdir().unwrap();
    let rules = rules_file(
        &dir,
        "100 allow udp from any to any 5001\n200 deny udp from any to any 5002\n",
    );
    let (rx1, rx2) = (receiver(&net, 5001), receiver(&net, 5002));
    let weir = Weir::start(&net, &rules, &["--json"]);
    // Would pass everything, if it compiled.
    std::fs::write(
        &rules,
        "100 allow udp from any to any\n200 deny udpp from any to any\n",
    )
    .unwrap();
    weir.signal(Signal::HUP);
    let failed = weir.wait_for("weir: reload of ");
    assert!(
        failed.ends_with("rules.conf failed; the running ruleset is unchanged"),
        "{failed}"
    );
    let err = weir.stderr();
    assert!(
        err.contains("rules.conf:2:10: unknown protocol 'udpp'"),
        "file:line:col diagnostic:\n{err}"
    );
    let tx = sender(&net);
    send(&tx, 5001, 0..20);
    send(&tx, 5002, 0..20);
    assert_eq!(drain(&rx1), (0..20).collect());
    assert!(drain(&rx2).is_empty(), "the old rule 200 still denies");
    let (json, _) = weir.stop();
    assert_eq!(section(&json, "queue")["reloads_failed"], 1);
    assert_eq!(section(&json, "queue")["reloads_ok"], 0);
    assert_eq!(
        (rule_packets(&json, 100), rule_packets(&json, 200)),
        (20, 20)
    );
}

#[test]
fn a_bad_ruleset_at_start_exits_2_before_touching_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let rules = rules_file(&dir, "100 allow udpp from any to any\n");
    let out = common::weir([
        "inline".as_ref(),
        "--queue".as_ref(),
        "9".as_ref(),
        rules.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("rules.conf:1:11: unknown protocol 'udpp'"),
        "{err}"
    );
}
