//! End-to-end tests of `weir probe`: the real binary, real sockets. The veth
//! test needs root and `ip netns`; without them it prints SKIP and passes.
//! All traffic stays on loopback or inside namespaces the test creates.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// A running server; killed on drop, so a failed assertion leaves nothing.
struct ServerProc {
    child: Option<Child>,
    addr: String,
}

impl ServerProc {
    /// Starts `prefix… weir probe server args…` and waits for its
    /// "listening on ADDR" line.
    fn start(prefix: &[&str], args: &[&str]) -> ServerProc {
        let mut cmd = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(WEIR);
                c
            }
            None => Command::new(WEIR),
        };
        let mut child = cmd
            .args(["probe", "server", "--json"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start weir probe server");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent {
                    if let Some(a) = line.strip_prefix("weir probe server: listening on ") {
                        let _ = tx.send(a.to_string());
                        sent = true;
                    }
                }
                eprintln!("[server] {line}");
            }
        });
        let mut s = ServerProc {
            child: Some(child),
            addr: String::new(),
        };
        s.addr = rx
            .recv_timeout(Duration::from_secs(15))
            .expect("server said where it listens");
        s
    }

    /// SIGTERM, then the server's JSON summary.
    fn stop(mut self) -> serde_json::Value {
        let child = self.child.take().expect("running");
        let pid = child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let out = wait_bounded(child, Duration::from_secs(15));
        assert!(out.status.success(), "server exit: {:?}", out.status);
        serde_json::from_slice(&out.stdout).expect("server JSON on stdout")
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Waits for a child at most `limit`, killing it after; panics if it had
/// to be killed.
fn wait_bounded(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("process did not stop by itself within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run_client(prefix: &[&str], args: &[&str], limit: Duration) -> Output {
    let mut cmd = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(WEIR);
            c
        }
        None => Command::new(WEIR),
    };
    let child = cmd
        .args(["probe", "client"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start weir probe client");
    wait_bounded(child, limit)
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// Checks the report's documented fields and its sums; returns it.
fn check_report(stdout: &[u8], sizes: &[u64], per_size: u64) -> serde_json::Value {
    let r: serde_json::Value = serde_json::from_slice(stdout).expect("client JSON");
    for k in [
        "server",
        "sizes",
        "train",
        "gap_us",
        "count",
        "tx_stamps",
        "sent",
        "received",
        "lost",
        "send_errors",
        "duplicates",
        "mismatched",
        "bad",
        "stopped_by",
        "elapsed_s",
        "rows",
    ] {
        assert!(r.get(k).is_some(), "report field {k} missing: {r}");
    }
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k}: {v}"));
    assert_eq!(n(&r, "sent"), sizes.len() as u64 * per_size);
    assert_eq!(n(&r, "received") + n(&r, "lost"), n(&r, "sent"));
    assert_eq!(r["stopped_by"], "count");
    let rows = r["rows"].as_array().expect("rows");
    for &size in sizes {
        for pos in ["first", "later", "all"] {
            let row = rows
                .iter()
                .find(|x| x["size"] == size && x["position"] == pos)
                .unwrap_or_else(|| panic!("no row {size} {pos}"));
            for k in [
                "sent",
                "received",
                "lost",
                "rtt_us",
                "server_stack_us",
                "engine_us",
                "client_rx_stack_us",
                "client_tx_stack_us",
            ] {
                assert!(row.get(k).is_some(), "row field {k}: {row}");
            }
            if n(row, "received") > 0 {
                for k in ["rtt_us", "server_stack_us"] {
                    for q in ["n", "p20", "p50", "p99"] {
                        assert!(row[k][q].is_number(), "{k}.{q}: {row}");
                    }
                }
            }
        }
    }
    r
}

/// Every echoed probe: stack times positive and below the round trip.
/// Returns (lines, echoed).
fn check_packets(path: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(path).expect("packets csv");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("seq,size,pos,sent_ns,echoed,rtt_ns,server_stack_ns,engine_ns,client_rx_stack_ns,client_tx_stack_ns")
    );
    let (mut total, mut echoed) = (0, 0);
    for line in lines {
        total += 1;
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 10, "{line}");
        if f[4] != "1" {
            continue;
        }
        echoed += 1;
        let num =
            |k: usize| -> u64 { f[k].parse().unwrap_or_else(|_| panic!("field {k}: {line}")) };
        let rtt = num(5);
        let stack = num(6);
        assert!(
            stack > 0 && stack < rtt,
            "server stack {stack} vs rtt {rtt}: {line}"
        );
        if !f[8].is_empty() {
            let c = num(8);
            assert!(c > 0 && c < rtt, "client rx stack {c} vs rtt {rtt}: {line}");
        }
    }
    (total, echoed)
}

/// Network namespaces and a veth pair, removed on drop.
struct Netns {
    a: String,
    b: String,
}

impl Netns {
    fn ip(args: &[&str]) -> bool {
        Command::new("ip")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status()
            .is_ok_and(|s| s.success())
    }

    fn create(net: u8) -> Option<Netns> {
        let pid = std::process::id();
        let ns = Netns {
            a: format!("weirp-{pid}-a"),
            b: format!("weirp-{pid}-b"),
        };
        let (va, vb) = (format!("wpa{pid}"), format!("wpb{pid}"));
        let (va, vb) = (&va[..va.len().min(15)], &vb[..vb.len().min(15)]);
        let (addr_a, addr_b) = (format!("10.77.{net}.1/24"), format!("10.77.{net}.2/24"));
        let ok = Self::ip(&["netns", "add", &ns.a])
            && Self::ip(&["netns", "add", &ns.b])
            && Self::ip(&[
                "link", "add", va, "netns", &ns.a, "type", "veth", "peer", "name", vb, "netns",
                &ns.b,
            ])
            && Self::ip(&["-n", &ns.a, "addr", "add", &addr_a, "dev", va])
            && Self::ip(&["-n", &ns.b, "addr", "add", &addr_b, "dev", vb])
            && Self::ip(&["-n", &ns.a, "link", "set", "lo", "up"])
            && Self::ip(&["-n", &ns.b, "link", "set", "lo", "up"])
            && Self::ip(&["-n", &ns.a, "link", "set", va, "up"])
            && Self::ip(&["-n", &ns.b, "link", "set", vb, "up"]);
        // Whatever happened, `ns` drops and removes what was made.
        ok.then_some(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end in it, and so the pair.
        for n in [&self.a, &self.b] {
            let _ = Command::new("ip")
                .args(["netns", "del", n])
                .stderr(Stdio::null())
                .status();
        }
    }
}

fn can_use_netns() -> Result<(), String> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|e| e.to_string())?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Err("not root".into());
    }
    let ok = Command::new("ip")
        .args(["netns", "list"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Ok(())
    } else {
        Err("`ip netns` is not available (install iproute2)".into())
    }
}

#[test]
fn probe_over_veth_between_namespaces() {
    if let Err(why) = can_use_netns() {
        eprintln!("SKIP probe_over_veth_between_namespaces: {why}");
        eprintln!("*** SKIPPED: the veth/netns probe test did NOT run ***");
        return;
    }
    let net = (std::process::id() % 250) as u8 + 1;
    let ns = Netns::create(net).expect("create namespaces and veth pair");
    let server_addr = format!("10.77.{net}.1:7777");
    let in_a = ["ip", "netns", "exec", ns.a.as_str()];
    let in_b = ["ip", "netns", "exec", ns.b.as_str()];
    let srv = ServerProc::start(&in_a, &["--bind", &server_addr, "--duration", "60s"]);
    assert_eq!(srv.addr, server_addr);
    let dir = tmp();
    let csv = dir.path().join("packets.csv");
    let svg = dir.path().join("probe.svg");
    let (count, train) = (20u64, 4u64);
    let out = run_client(
        &in_b,
        &[
            &server_addr,
            "--count",
            &count.to_string(),
            "--train",
            &train.to_string(),
            "--sizes",
            "32,96,1400",
            "--gap",
            "2ms",
            "--tx-stamps",
            "--json",
            "--packets",
            csv.to_str().unwrap(),
            "--plot",
            svg.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "client exit {:?}", out.status);
    let r = check_report(&out.stdout, &[32, 96, 1400], count * train);
    let (lines, echoed) = check_packets(&csv);
    assert_eq!(lines as u64, r["sent"].as_u64().unwrap());
    assert_eq!(echoed as u64, r["received"].as_u64().unwrap());
    assert!(echoed > 0, "no echo at all over the veth pair");
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.starts_with("<svg") && plot.contains("<polyline"));
    let s = srv.stop();
    assert_eq!(s["echoed"].as_u64(), r["received"].as_u64());
    assert_eq!(s["malformed"], 0);
    assert_eq!(s["stopped_by"], "signal");
}

#[test]
fn server_counts_malformed_datagrams_and_keeps_echoing() {
    // --count: the server stops by itself after the datagrams below.
    let srv = ServerProc::start(&[], &["--bind", "127.0.0.1:0", "--count", "9"]);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    sock.connect(&srv.addr).unwrap();
    let mut probe = [0u8; 40];
    probe[..4].copy_from_slice(b"WPR\x01");
    probe[6..8].copy_from_slice(&3u16.to_be_bytes()); // train of 3
    let mut bad_magic = probe;
    bad_magic[0] = b'X';
    let mut bad_version = probe;
    bad_version[3] = 9;
    let mut bad_flags = probe;
    bad_flags[4] = 1; // ECHO set on a request
    let mut bad_train = probe;
    bad_train[5] = 3; // position 3 of a train of 3
    let garbage: Vec<u8> = (0..200u32).map(|i| (i * 37 + 11) as u8).collect();
    let bad: [&[u8]; 8] = [
        b"",
        b"W",
        &probe[..31],
        &bad_magic,
        &bad_version,
        &bad_flags,
        &bad_train,
        &garbage,
    ];
    for d in bad {
        sock.send(d).unwrap();
    }
    sock.send(&probe).unwrap();
    let mut buf = [0u8; 128];
    let n = sock.recv(&mut buf).expect("the good probe is echoed");
    assert_eq!(n, probe.len());
    assert_eq!(&buf[..4], b"WPR\x01");
    assert_eq!(buf[4] & 1, 1, "ECHO flag");
    let out = wait_bounded(srv.child_take(), Duration::from_secs(15));
    assert!(out.status.success());
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["datagrams"], 9);
    assert_eq!(s["echoed"], 1);
    assert_eq!(s["malformed"], 8);
    assert_eq!(s["stopped_by"], "count");
    let b = &s["bad"];
    assert_eq!(b["short"], 3, "{s}");
    assert_eq!(b["bad-magic"], 2, "the garbage too");
    assert_eq!(b["bad-version"], 1);
    assert_eq!(b["bad-flags"], 1);
    assert_eq!(b["bad-train"], 1);
}

impl ServerProc {
    fn child_take(mut self) -> Child {
        self.child.take().expect("running")
    }
}

#[test]
fn client_stops_at_its_deadline_with_no_server() {
    // A port nobody listens on: every probe is lost, the client gives up
    // at --deadline however large --count is.
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let start = Instant::now();
    let out = run_client(
        &[],
        &[
            &format!("127.0.0.1:{port}"),
            "--count",
            "100000",
            "--timeout",
            "50ms",
            "--deadline",
            "1s",
            "--json",
        ],
        Duration::from_secs(20),
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(
        out.status.code(),
        Some(1),
        "no echo at all is a runtime error"
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report still printed");
    assert_eq!(r["stopped_by"], "deadline");
    assert_eq!(r["received"], 0);
    assert_eq!(r["lost"], r["sent"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no echo from"));
}

#[test]
fn through_rules_times_the_engine_and_drops_what_they_deny() {
    let dir = tmp();
    let rules = dir.path().join("probe.rules");
    // 1400-byte probes are 1428-byte IPv4 packets: denied, never echoed.
    std::fs::write(
        &rules,
        "100 deny udp from any to any iplen 1428\n200 allow udp from any to any\n",
    )
    .unwrap();
    let srv = ServerProc::start(
        &[],
        &[
            "--bind",
            "127.0.0.1:0",
            "--through",
            rules.to_str().unwrap(),
            "--duration",
            "30s",
        ],
    );
    let out = run_client(
        &[],
        &[
            &srv.addr,
            "--count",
            "10",
            "--train",
            "3",
            "--sizes",
            "32,1400",
            "--gap",
            "1ms",
            "--timeout",
            "100ms",
            "--json",
        ],
        Duration::from_secs(30),
    );
    assert!(out.status.success());
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["sent"], 60);
    assert_eq!(r["received"], 30);
    assert_eq!(r["lost"], 30);
    let all32 = r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["size"] == 32 && x["position"] == "all")
        .unwrap()
        .clone();
    assert_eq!(all32["lost"], 0);
    assert!(all32["engine_us"]["p50"].as_f64().unwrap() > 0.0, "{all32}");
    let s = srv.stop();
    assert_eq!(s["filtered_out"], 30);
    assert_eq!(s["echoed"], 30);
    assert_eq!(s["engine_us"]["n"], 60);
}

#[test]
fn bad_flags_are_usage_errors() {
    let out = Command::new(WEIR)
        .args(["probe", "client", "127.0.0.1:9", "--sizes", "16"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("probe size 16"));
    let dir = tmp();
    let rules = dir.path().join("bad.rules");
    std::fs::write(&rules, "allow udp from any to any 99999\n").unwrap();
    let out = Command::new(WEIR)
        .args([
            "probe",
            "server",
            "--bind",
            "127.0.0.1:0",
            "--count",
            "1",
            "--through",
        ])
        .arg(&rules)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.rules:1:"));
}
