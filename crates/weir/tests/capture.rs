//! End-to-end tests of `weir capture` and `weir sockbench`: the real
//! binary on real AF_PACKET sockets, in two network namespaces joined by a
//! veth pair that each test creates (unique names from the pid and a
//! per-test number) and removes on drop, even when an assertion fails.
//! Traffic comes from threads of this test that enter a namespace
//! (`setns`) and use std sockets, and from `ping`. Addresses are
//! 10.203.X.1 (capture side, A) and 10.203.X.2 (sender, B), alive only in
//! those namespaces. Without root or `ip netns` the namespace tests say so
//! loudly and return; CI runs as root, so there they run.

mod common;

use common::strace_usable;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

fn can_use_netns(test: &str) -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let ip = Command::new("ip")
        .args(["netns", "list"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !(root && ip) {
        eprintln!(
            "\n!!!!!!!! SKIPPED: {test} needs root and `ip netns` (iproute2); root={root} ip={ip}. \
             It did NOT run. !!!!!!!!\n"
        );
    }
    root && ip
}

/// Two namespaces and a veth pair between them; removed on drop.
struct Netns {
    a: String,
    b: String,
    if_a: String,
    net: u8,
}

impl Netns {
    fn ip(args: &[&str]) {
        let st = Command::new("ip")
            .args(args)
            .stdout(Stdio::null())
            .status()
            .expect("run ip");
        assert!(st.success(), "ip {args:?} failed");
    }

    /// `tag` tells apart the namespaces of tests running at once.
    fn create(tag: u8) -> Netns {
        let pid = std::process::id();
        let ns = Netns {
            a: format!("weirc-{pid}-{tag}-a"),
            b: format!("weirc-{pid}-{tag}-b"),
            if_a: format!("wc{}a{tag}", pid % 100_000),
            net: ((pid as usize * 7 + tag as usize) % 250) as u8 + 1,
        };
        let if_b = format!("wc{}b{tag}", pid % 100_000);
        // From here on, Drop removes whatever was made.
        Self::ip(&["netns", "add", &ns.a]);
        Self::ip(&["netns", "add", &ns.b]);
        for n in [&ns.a, &ns.b] {
            // No IPv6: no router solicitations or MLD reports in the counts.
            for k in ["all", "default"] {
                Self::ip(&[
                    "netns",
                    "exec",
                    n,
                    "sysctl",
                    "-qw",
                    &format!("net.ipv6.conf.{k}.disable_ipv6=1"),
                ]);
            }
            Self::ip(&["-n", n, "link", "set", "lo", "up"]);
        }
        Self::ip(&[
            "link", "add", &ns.if_a, "netns", &ns.a, "type", "veth", "peer", "name", &if_b,
            "netns", &ns.b,
        ]);
        Self::ip(&[
            "-n",
            &ns.a,
            "addr",
            "add",
            &format!("{}/24", ns.addr_a()),
            "dev",
            &ns.if_a,
        ]);
        Self::ip(&[
            "-n",
            &ns.b,
            "addr",
            "add",
            &format!("{}/24", ns.addr_b()),
            "dev",
            &if_b,
        ]);
        Self::ip(&["-n", &ns.a, "link", "set", &ns.if_a, "up"]);
        Self::ip(&["-n", &ns.b, "link", "set", &if_b, "up"]);
        ns
    }

    fn addr_a(&self) -> String {
        format!("10.203.{}.1", self.net)
    }

    fn addr_b(&self) -> String {
        format!("10.203.{}.2", self.net)
    }

    /// Runs `f` on a thread inside namespace `name`; sockets it makes live there.
    fn within<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> T {
        let path = PathBuf::from(format!("/run/netns/{name}"));
        std::thread::scope(|s| {
            s.spawn(move || {
                weir_capture::enter_netns(&path).expect("setns");
                f()
            })
            .join()
            .expect("namespace thread")
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for n in [&self.a, &self.b] {
            let _ = Command::new("ip")
                .args(["netns", "del", n])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// A running `weir capture`; killed on drop.
struct CaptureProc {
    child: Option<Child>,
    stderr: mpsc::Receiver<String>,
    /// The line that said it listens.
    listening: String,
}

impl CaptureProc {
    /// Starts `ip netns exec NS weir capture ARGS…` and waits until it
    /// says it is listening.
    fn start(ns: &str, args: &[&str]) -> CaptureProc {
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, WEIR, "capture"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start weir capture");
        let err = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("[capture] {line}");
                let _ = tx.send(line);
            }
        });
        let mut p = CaptureProc {
            child: Some(child),
            stderr: rx,
            listening: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match p.stderr.recv_timeout(left) {
                Ok(l) if l.starts_with("weir capture: listening on ") => {
                    p.listening = l;
                    return p;
                }
                Ok(_) => {}
                Err(_) => panic!("weir capture did not start listening"),
            }
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Waits for the process to end by itself (or after `signal`), at most
    /// 15 s; returns its output, stderr lines included.
    fn finish(mut self, signal: Option<&str>) -> (Output, Vec<String>) {
        let mut child = self.child.take().expect("running");
        if let Some(sig) = signal {
            let _ = Command::new("kill")
                .args([sig, &child.id().to_string()])
                .status();
        }
        let start = Instant::now();
        let mut stdout = child.stdout.take().expect("stdout");
        let reader = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = stdout.read_to_end(&mut v);
            v
        });
        let status = loop {
            if let Some(s) = child.try_wait().expect("try_wait") {
                break s;
            }
            if start.elapsed() > Duration::from_secs(15) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("weir capture did not stop within 15 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stdout = reader.join().expect("stdout reader");
        // The stderr thread ends at EOF; collect what is left.
        std::thread::sleep(Duration::from_millis(50));
        let lines: Vec<String> = self.stderr.try_iter().collect();
        (
            Output {
                status,
                stdout,
                stderr: Vec::new(),
            },
            lines,
        )
    }
}

impl Drop for CaptureProc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The JSON summary and per-rule packet counts (rule number → packets).
struct Report {
    summary: serde_json::Value,
    rules: Vec<(u64, u64)>,
}

fn report(out: &Output) -> Report {
    assert!(out.status.success(), "weir capture exit: {:?}", out.status);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "JSON on stdout ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let items = v["weir"].as_array().expect("weir array");
    let rules = items
        .iter()
        .filter_map(|i| i.get("rule"))
        .map(|r| {
            (
                r["number"].as_u64().unwrap(),
                r["counter"]["packets"].as_u64().unwrap(),
            )
        })
        .collect();
    Report {
        summary: items.last().unwrap()["summary"].clone(),
        rules,
    }
}

fn write_rules(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("rules.conf");
    std::fs::write(&p, text).unwrap();
    p
}

/// Traffic from B to A: `udp` datagrams to A:9999 (A listens, so no ICMP
/// errors come back), `tcp` connects to A:7777 (accepted, then closed), and
/// `pings` ICMP echoes. Returns once all of it was sent and answered.
fn send_traffic(ns: &Netns, udp: u16, tcp: u16, pings: u16) {
    let (a, b) = (ns.addr_a(), ns.addr_b());
    let rx = Netns::within(&ns.a, || UdpSocket::bind(format!("{a}:9999")).unwrap());
    let listener = Netns::within(&ns.a, || TcpListener::bind(format!("{a}:7777")).unwrap());
    let acceptor = std::thread::spawn(move || {
        for _ in 0..tcp {
            let (mut s, _) = listener.accept().expect("accept");
            let _ = s.write_all(b"hello");
        }
    });
    Netns::within(&ns.b, || {
        // Many source ports: many flows, for the fanout hash.
        for k in 0..udp {
            let s = UdpSocket::bind(format!("{b}:0")).unwrap();
            s.send_to(format!("datagram {k}").as_bytes(), format!("{a}:9999"))
                .unwrap();
        }
        for _ in 0..tcp {
            let mut s = TcpStream::connect_timeout(
                &format!("{a}:7777").parse().unwrap(),
                Duration::from_secs(5),
            )
            .expect("connect");
            let mut buf = [0u8; 5];
            s.read_exact(&mut buf).expect("read hello");
        }
    });
    acceptor.join().unwrap();
    if pings > 0 {
        let st = Command::new("ip")
            .args(["netns", "exec", &ns.b, "ping", "-q", "-c"])
            .arg(pings.to_string())
            .args(["-i", "0.05", "-W", "2", &a])
            .stdout(Stdio::null())
            .status()
            .expect("ping (iputils-ping)");
        assert!(st.success(), "ping failed");
    }
    // Every datagram arrived before we stop (and so was in the ring).
    rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 64];
    for _ in 0..udp {
        rx.recv(&mut buf).expect("datagram arrived");
    }
    // Let the last V3 block retire (block timeout 10 ms) before stopping.
    std::thread::sleep(Duration::from_millis(300));
}

fn ruleset(ns: &Netns) -> String {
    let (a, b) = (ns.addr_a(), ns.addr_b());
    format!(
        "100 count udp from {b} to {a} 9999 in\n\
         200 count tcp from {b} to {a} 7777 setup in\n\
         300 count tcp from {a} 7777 to {b} tcpflags syn,ack out\n\
         400 count icmp from {b} to {a} icmptypes 8 in\n\
         500 count icmp from {a} to {b} icmptypes 0 out\n\
         600 deny udp from any to any\n\
         700 allow ip from any to any\n"
    )
}

/// Checks the counts that the traffic fixes exactly.
fn check_counts(r: &Report, udp: u64, tcp: u64, pings: u64) {
    let get = |n: u64| r.rules.iter().find(|(k, _)| *k == n).unwrap().1;
    assert_eq!(get(100), udp, "udp in");
    assert_eq!(get(200), tcp, "tcp SYN in");
    assert_eq!(get(300), tcp, "tcp SYN-ACK out");
    assert_eq!(get(400), pings, "echo requests in");
    assert_eq!(get(500), pings, "echo replies out");
    assert_eq!(get(600), udp, "all UDP is denied");
    assert_eq!(get(65535), 0, "nothing reaches the default rule");
    let s = &r.summary;
    let packets = s["packets"].as_u64().unwrap();
    let non_ip = s["non_ip"].as_u64().unwrap();
    assert_eq!(
        get(600) + get(700) + non_ip,
        packets,
        "every packet read was decided once"
    );
    assert_eq!(s["dropped"].as_u64(), Some(udp));
    assert_eq!(s["malformed"].as_u64(), Some(0));
    let k = &s["kernel"];
    assert_eq!(k["dropped"].as_u64(), Some(0), "kernel drops on a trickle");
    assert!(k["received"].as_u64().unwrap() >= packets);
}

#[test]
fn counters_equal_what_was_sent_and_files_split_by_verdict() {
    if !can_use_netns("counters_equal_what_was_sent") {
        return;
    }
    let ns = Netns::create(1);
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), &ruleset(&ns));
    let (pass, drop) = (dir.path().join("pass.pcap"), dir.path().join("drop.pcap"));
    let cap = CaptureProc::start(
        &ns.a,
        &[
            "-i",
            &ns.if_a,
            rules.to_str().unwrap(),
            "--json",
            "-w",
            pass.to_str().unwrap(),
            "--drop-out",
            drop.to_str().unwrap(),
        ],
    );
    let (udp, tcp, pings) = (25, 4, 3);
    send_traffic(&ns, udp, tcp, pings);
    let (out, lines) = cap.finish(Some("-INT"));
    let r = report(&out);
    check_counts(&r, udp.into(), tcp.into(), pings.into());
    assert_eq!(r.summary["capture"]["stopped_by"], "signal");
    assert_eq!(r.summary["capture"]["ring"], "tpacket_v3");
    // tcpdump's closing lines.
    let packets = r.summary["packets"].as_u64().unwrap();
    assert!(lines
        .iter()
        .any(|l| l.starts_with(&format!("{packets} packets read, "))));
    assert!(lines
        .iter()
        .any(|l| l.ends_with(" packets received by filter")));
    assert!(lines.iter().any(|l| l == "0 packets dropped by kernel"));
    // The drop file holds exactly the UDP datagrams; the pass file the rest.
    let dropped = common::read_capture(&drop);
    assert_eq!(dropped.link_types, [1]);
    assert_eq!(dropped.frames.len(), udp as usize);
    for f in &dropped.frames {
        assert_eq!(&f.data[12..14], &[0x08, 0x00], "IPv4");
        assert_eq!(f.data[14 + 9], 17, "UDP");
        assert_eq!(u16::from_be_bytes([f.data[36], f.data[37]]), 9999);
        assert_eq!(f.orig_len as usize, f.data.len());
    }
    let passed = common::read_capture(&pass);
    assert_eq!(
        passed.frames.len() as u64,
        r.summary["passed"].as_u64().unwrap()
    );
}

#[test]
fn workers_share_flows_by_fanout_and_counters_merge_exactly() {
    if !can_use_netns("workers_share_flows") {
        return;
    }
    let ns = Netns::create(2);
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), &ruleset(&ns));
    let drop = dir.path().join("drop.pcap");
    let cap = CaptureProc::start(
        &ns.a,
        &[
            "-i",
            &ns.if_a,
            rules.to_str().unwrap(),
            "--json",
            "--workers",
            "2",
            "--drop-out",
            drop.to_str().unwrap(),
        ],
    );
    let (udp, tcp, pings) = (60, 6, 2);
    send_traffic(&ns, udp, tcp, pings);
    let (out, _) = cap.finish(Some("-TERM"));
    let r = report(&out);
    check_counts(&r, udp.into(), tcp.into(), pings.into());
    let per = r.summary["capture"]["per_worker"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(per.len(), 2);
    let sum: u64 = per.iter().map(|w| w["packets"].as_u64().unwrap()).sum();
    assert_eq!(sum, r.summary["packets"].as_u64().unwrap());
    // 60 UDP flows by hash: both workers get some (all on one: 2^-59).
    assert!(
        per.iter().all(|w| w["packets"].as_u64().unwrap() > 0),
        "{per:?}"
    );
    // Both workers wrote into one drop file: every datagram, once.
    assert_eq!(common::read_capture(&drop).frames.len(), udp as usize);
}

/// `--metrics` with two workers: a scrape shows both workers' counters
/// summed, equal to the closing JSON report.
#[test]
fn metrics_show_every_worker_summed() {
    if !can_use_netns("metrics_show_every_worker_summed") {
        return;
    }
    let ns = Netns::create(7);
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), &ruleset(&ns));
    let cap = CaptureProc::start(
        &ns.a,
        &[
            "-i",
            &ns.if_a,
            rules.to_str().unwrap(),
            "--json",
            "--workers",
            "2",
            "--metrics",
            "127.0.0.1:0",
        ],
    );
    let addr: std::net::SocketAddr = cap
        .listening
        .split("metrics at http://")
        .nth(1)
        .and_then(|a| a.strip_suffix("/metrics"))
        .expect("the listening line names the metrics address")
        .parse()
        .unwrap();
    let (udp, tcp, pings) = (60, 6, 2);
    send_traffic(&ns, udp, tcp, pings);
    // Workers publish every 100 ms between batches (an idle ring polls
    // every 50 ms); the first scrape renders what they last published.
    std::thread::sleep(Duration::from_millis(400));
    let text = Netns::within(&ns.a, || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    });
    let (out, _) = cap.finish(Some("-TERM"));
    let r = report(&out);
    for (number, packets) in &r.rules {
        let scraped: u64 = text
            .lines()
            .filter(|l| l.starts_with(&format!("weir_rule_packets_total{{rule=\"{number}\",")))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum();
        assert_eq!(scraped, *packets, "rule {number}:\n{text}");
    }
    let scraped_total: u64 = text
        .lines()
        .filter(|l| l.starts_with("weir_packets_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(
        scraped_total,
        r.summary["packets"].as_u64().unwrap(),
        "{text}"
    );
    assert!(r.summary["packets"].as_u64().unwrap() >= u64::from(udp));
}

#[test]
fn immediate_ring_stops_at_exactly_count_packets() {
    if !can_use_netns("immediate_ring_stops_at_count") {
        return;
    }
    let ns = Netns::create(3);
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (ns.addr_a(), ns.addr_b());
    let rules = write_rules(
        dir.path(),
        &format!("100 count udp from {b} to {a} 9999 in\n200 allow ip from any to any\n"),
    );
    for workers in ["1", "2"] {
        let cap = CaptureProc::start(
            &ns.a,
            &[
                "-i",
                &ns.if_a,
                rules.to_str().unwrap(),
                "--json",
                "--immediate",
                "--workers",
                workers,
                "-c",
                "10",
            ],
        );
        send_traffic(&ns, 30, 0, 0);
        // It stops by itself: no signal.
        let (out, _) = cap.finish(None);
        let r = report(&out);
        assert_eq!(r.summary["packets"].as_u64(), Some(10), "workers {workers}");
        assert_eq!(r.summary["capture"]["stopped_by"], "count");
        assert_eq!(r.summary["capture"]["ring"], "tpacket_v2");
        let total: u64 = r.rules.iter().filter(|(n, _)| *n != 100).map(|x| x.1).sum();
        assert_eq!(total + r.summary["non_ip"].as_u64().unwrap(), 10);
    }
}

#[test]
fn loopback_sees_each_packet_once() {
    if !can_use_netns("loopback_sees_each_packet_once") {
        return;
    }
    let ns = Netns::create(4);
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(
        dir.path(),
        "100 count icmp from 127.0.0.1 to 127.0.0.1 icmptypes 8\n\
         200 count icmp from 127.0.0.1 to 127.0.0.1 icmptypes 0\n\
         300 allow ip from any to any\n",
    );
    let cap = CaptureProc::start(&ns.a, &["-i", "lo", rules.to_str().unwrap(), "--json"]);
    let st = Command::new("ip")
        .args([
            "netns", "exec", &ns.a, "ping", "-q", "-c", "4", "-i", "0.05",
        ])
        .arg("127.0.0.1")
        .stdout(Stdio::null())
        .status()
        .expect("ping");
    assert!(st.success());
    std::thread::sleep(Duration::from_millis(300));
    let (out, _) = cap.finish(Some("-INT"));
    let r = report(&out);
    assert_eq!(r.rules[0], (100, 4));
    assert_eq!(r.rules[1], (200, 4));
    assert_eq!(r.summary["packets"].as_u64(), Some(8));
    assert_eq!(
        r.summary["capture"]["loopback_duplicates_ignored"].as_u64(),
        Some(8)
    );
}

#[test]
fn drops_privileges_after_opening_the_sockets() {
    if !can_use_netns("drops_privileges_after_opening_the_sockets") {
        return;
    }
    let ns = Netns::create(5);
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), &ruleset(&ns));
    // The rules file is read as root, before -Z.
    let cap = CaptureProc::start(
        &ns.a,
        &[
            "-i",
            &ns.if_a,
            rules.to_str().unwrap(),
            "--json",
            "-Z",
            "nobody",
        ],
    );
    let status = std::fs::read_to_string(format!("/proc/{}/status", cap.pid())).unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    let ids: Vec<&str> = uid.split_whitespace().skip(1).collect();
    assert_eq!(ids, ["65534"; 4], "real, effective, saved, fs uid: {uid}");
    send_traffic(&ns, 5, 1, 1);
    let (out, _) = cap.finish(Some("-INT"));
    check_counts(&report(&out), 5, 1, 1);
}

/// Each AF_PACKET socket's calls, in order, from an `strace -f` log.
fn packet_socket_calls(log: &str) -> Vec<Vec<String>> {
    let mut sockets: Vec<(String, Vec<String>)> = Vec::new();
    for line in log.lines() {
        // "[PID ]call(args) = result": strace adds the pid once threads run.
        let call = match line.split_once(' ') {
            Some((pid, c)) if pid.bytes().all(|b| b.is_ascii_digit()) => c.trim_start(),
            _ => line,
        };
        let Some((name, rest)) = call.split_once('(') else {
            continue;
        };
        let result = rest.rsplit_once(" = ").map(|(_, r)| r.trim());
        if name == "socket" && rest.starts_with("AF_PACKET") {
            let proto = rest.split(", ").nth(2).unwrap_or("");
            sockets.push((
                result.unwrap_or("?").to_owned(),
                vec![format!("socket {}", proto.split(')').next().unwrap_or(""))],
            ));
            continue;
        }
        let args: Vec<&str> = rest.split(", ").collect();
        let fd = match name {
            "mmap" => args.get(4).copied(),
            _ => args.first().copied(),
        };
        let Some(fd) = fd else { continue };
        if let Some((_, calls)) = sockets.iter_mut().rev().find(|(f, _)| f == fd) {
            let what = match name {
                "setsockopt" => format!("setsockopt {}", args.get(2).unwrap_or(&"")),
                "bind" => format!("bind {}", args.get(2).unwrap_or(&"")),
                "mmap" => format!("mmap {}", args.get(3).unwrap_or(&"")),
                other => other.to_owned(),
            };
            calls.push(what);
        }
    }
    sockets.into_iter().map(|(_, c)| c).collect()
}

#[test]
fn set_up_makes_the_2014_sequence_under_strace() {
    if !can_use_netns("set_up_makes_the_2014_sequence_under_strace")
        || !strace_usable("the capture set-up sequence check")
    {
        return;
    }
    let ns = Netns::create(6);
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), "100 allow ip from any to any\n");
    let log = dir.path().join("strace.txt");
    for (workers, ring) in [("1", None), ("2", Some("--immediate"))] {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &ns.a, "strace", "-f", "-qq", "-o"])
            .arg(&log)
            .args([
                "-e",
                "trace=socket,setsockopt,mmap,bind",
                WEIR,
                "capture",
                "-q",
            ])
            .args(["-i", &ns.if_a, rules.to_str().unwrap()])
            .args(["--duration", "200ms", "--workers", workers])
            .args(ring);
        let out = cmd.output().expect("strace weir capture");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let calls = packet_socket_calls(&std::fs::read_to_string(&log).unwrap());
        assert_eq!(calls.len(), workers.parse::<usize>().unwrap(), "{calls:?}");
        let mut want = vec![
            "socket htons(0 /* ETH_P_??? */",
            "setsockopt PACKET_VERSION",
            "setsockopt SO_ATTACH_FILTER",
            "setsockopt PACKET_RX_RING",
            "mmap MAP_SHARED",
            "bind sll_protocol=htons(ETH_P_ALL)",
        ];
        if workers != "1" {
            // Fanout only once bound: the kernel refuses it before.
            want.push("setsockopt PACKET_FANOUT");
        }
        for c in &calls {
            assert_eq!(c, &want, "calls on one AF_PACKET socket");
        }
    }
}

#[test]
fn sockbench_times_the_three_cases() {
    if !can_use_netns("sockbench_times_the_three_cases") {
        return;
    }
    let out = Command::new(WEIR)
        .args(["sockbench", "--runs", "5", "--warmup", "1", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cases = v["sockbench"].as_array().unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c["case"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "proto-in-socket-bind-all",
            "proto-in-socket-bind-one",
            "proto-0-then-bind"
        ]
    );
    for c in cases {
        assert_eq!(c["runs"], 5);
        let (min, med, p99, max) = (
            c["min_us"].as_f64().unwrap(),
            c["median_us"].as_f64().unwrap(),
            c["p99_us"].as_f64().unwrap(),
            c["max_us"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= med && med <= p99 && p99 <= max, "{c}");
    }
}

#[test]
fn unknown_interface_and_bad_rules_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = write_rules(dir.path(), "100 allow ip from any to any\n");
    let out = common::weir(["capture", "-i", "no-such-if0", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(common::stderr(&out).contains("no-such-if0"));
    let bad = dir.path().join("bad.rules");
    std::fs::write(&bad, "100 allow tcp from any to any 99999\n").unwrap();
    let out = common::weir(["capture", "-i", "lo", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("bad.rules:1:"),
        "{}",
        common::stderr(&out)
    );
    let out = common::weir([
        "capture",
        "-i",
        "lo",
        good.to_str().unwrap(),
        "--workers",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
