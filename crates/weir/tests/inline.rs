//! `weir inline` on a real NFQUEUE: three network namespaces per test
//! (sender, router, receiver) joined by veth pairs; nftables in the router
//! steers forwarded traffic into queue 0, where weir decides it. Traffic
//! comes from sockets the test opens inside the namespaces, so every
//! count is exact. Needs root; without it every test prints SKIPPED.
//! Namespaces carry the test's pid and name and are removed on drop, even
//! when an assertion fails.

mod common;
#[path = "../../weir-live/tests/promtool/mod.rs"]
mod promtool;

use rustix::process::{kill_process, Pid, Signal};
use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SENDER: &str = "10.201.1.2";
const RECEIVER: &str = "10.201.2.2";

fn root() -> bool {
    rustix::process::geteuid().is_root()
}

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

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Sender — router — receiver. Dropping it deletes the namespaces (and so
/// the veths and the nft table inside them).
struct Net {
    sender: String,
    router: String,
    receiver: String,
}

impl Net {
    fn new(tag: &str) -> Net {
        let pid = std::process::id();
        let net = Net {
            sender: format!("weiri-{pid}-{tag}-s"),
            router: format!("weiri-{pid}-{tag}-r"),
            receiver: format!("weiri-{pid}-{tag}-d"),
        };
        // From here on, a failed step still deletes what exists (Drop).
        for ns in [&net.sender, &net.router, &net.receiver] {
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        let (s, r, d) = (&net.sender, &net.router, &net.receiver);
        ip(&[
            "-n", r, "link", "add", "r1", "type", "veth", "peer", "name", "s0", "netns", s,
        ]);
        ip(&[
            "-n", r, "link", "add", "r2", "type", "veth", "peer", "name", "d0", "netns", d,
        ]);
        ip(&["-n", s, "addr", "add", "10.201.1.2/24", "dev", "s0"]);
        ip(&["-n", r, "addr", "add", "10.201.1.1/24", "dev", "r1"]);
        ip(&["-n", r, "addr", "add", "10.201.2.1/24", "dev", "r2"]);
        ip(&["-n", d, "addr", "add", "10.201.2.2/24", "dev", "d0"]);
        for (ns, dev) in [(s, "s0"), (r, "r1"), (r, "r2"), (d, "d0")] {
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        ip(&["-n", s, "route", "add", "default", "via", "10.201.1.1"]);
        ip(&["-n", d, "route", "add", "default", "via", "10.201.2.1"]);
        net.exec_ok(r, &["sysctl", "-qw", "net.ipv4.ip_forward=1"]);
        steer_into_queue(r);
        // Neighbours resolved before the first counted packet (bypass: no
        // queue is bound yet, so this ping is not counted by weir).
        net.exec_ok(s, &["ping", "-c", "1", "-W", "2", RECEIVER]);
        net
    }

    fn exec_ok(&self, ns: &str, args: &[&str]) {
        let out = Command::new("ip")
            .args(["netns", "exec", ns])
            .args(args)
            .output()
            .expect("ip netns exec");
        assert!(
            out.status.success(),
            "{}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Forwarded traffic in namespace `ns` goes to queue 0, with `bypass`
/// (accept while nothing is bound). nftables' `queue` expression when the
/// kernel has it (CONFIG_NFT_QUEUE); otherwise the xtables NFQUEUE target
/// through iptables(-nft), which the same nf_tables hook runs.
fn steer_into_queue(ns: &str) {
    let nft = "table inet weir {\n chain forward {\n  type filter hook forward priority 0; policy accept;\n  queue num 0 bypass\n }\n}\n";
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns, "nft", "-f", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run nft (install nftables)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(nft.as_bytes())
        .unwrap();
    if child.wait().unwrap().success() {
        return;
    }
    let out = Command::new("ip")
        .args([
            "netns", "exec", ns, "iptables", "-A", "FORWARD", "-j", "NFQUEUE",
        ])
        .args(["--queue-num", "0", "--queue-bypass"])
        .output()
        .expect("run iptables (install iptables)");
    assert!(
        out.status.success(),
        "neither nft's queue nor iptables' NFQUEUE: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in [&self.sender, &self.router, &self.receiver] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Runs `f` on a thread inside namespace `ns`; sockets it opens stay there.
fn in_ns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    let path = format!("/run/netns/{ns}");
    std::thread::scope(|s| {
        s.spawn(|| {
            let file = std::fs::File::open(&path).expect("namespace file");
            // setns changes only this thread.
            move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network))
                .unwrap_or_else(|e| panic!("setns {path}: {e}"));
            f()
        })
        .join()
        .expect("namespace thread")
    })
}

/// `weir inline` running in the router; killed on drop.
struct Weir {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Weir {
    fn start(net: &Net, rules: &std::path::Path, extra: &[&str]) -> Weir {
        let mut child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &net.router,
                common::bin(),
                "inline",
                "--queue",
                "0",
            ])
            .args(extra)
            .arg(rules)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn weir");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (pipe, sink) = (child.stderr.take().unwrap(), Arc::clone(&stderr));
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let w = Weir { child, stderr };
        w.wait_for("weir: inline on queue 0");
        w
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.stderr();
            if let Some(at) = s.find(text) {
                return s[at..].lines().next().unwrap_or_default().to_owned();
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no {text:?} from weir; stderr:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// `ip netns exec` execs weir in place, so the child is weir itself.
    fn signal(&self, sig: Signal) {
        kill_process(Pid::from_child(&self.child), sig).expect("kill weir");
    }

    /// SIGTERM, then the JSON summary weir prints on its way out.
    fn stop(mut self) -> (Value, String) {
        self.signal(Signal::TERM);
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let status = self.child.wait().unwrap();
        std::thread::sleep(Duration::from_millis(50)); // the stderr thread's last lines
        let err = self.stderr();
        assert!(status.success(), "weir exited {status}; stderr:\n{err}");
        (serde_json::from_str(&out).expect("JSON summary"), err)
    }
}

impl Drop for Weir {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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
