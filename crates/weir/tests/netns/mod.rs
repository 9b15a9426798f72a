//! Three network namespaces (sender, router, receiver) joined by veth
//! pairs, forwarded traffic in the router steered into NFQUEUE 0, and
//! `weir inline` running there: for the tests of `weir inline` and of the
//! sources against each other. Namespaces carry the test's pid and a tag,
//! and are removed on drop, even when an assertion fails.
#![allow(dead_code)]

use rustix::process::{kill_process, Pid, Signal};
use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const SENDER: &str = "10.201.1.2";
pub const RECEIVER: &str = "10.201.2.2";

pub fn root() -> bool {
    rustix::process::geteuid().is_root()
}

pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Deletes `namespaces` (and so the veths and nft tables in them), quietly:
/// for `Drop`, which also runs after a failed step.
pub fn delete(namespaces: &[&str]) {
    for ns in namespaces {
        let _ = Command::new("ip")
            .args(["netns", "del", ns])
            .stderr(Stdio::null())
            .status();
    }
}

/// Sender — router — receiver. Dropping it deletes the namespaces (and so
/// the veths and the nft table inside them).
pub struct Net {
    pub sender: String,
    pub router: String,
    pub receiver: String,
}

impl Net {
    pub fn new(tag: &str) -> Net {
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

    pub fn exec_ok(&self, ns: &str, args: &[&str]) {
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
pub fn steer_into_queue(ns: &str) {
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
        delete(&[&self.sender, &self.router, &self.receiver]);
    }
}

/// Runs `f` on a thread inside namespace `ns`; sockets it opens stay there.
pub fn in_ns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
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
pub struct Weir {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Weir {
    /// `weir inline --queue 0 EXTRA... RULES` in the router, once bound.
    pub fn start(net: &Net, rules: &std::path::Path, extra: &[&str]) -> Weir {
        let rules = rules.to_str().expect("UTF-8 path");
        let args = [&["inline", "--queue", "0"], extra, &[rules]].concat();
        Weir::spawn(&net.router, &args, "weir: inline on queue 0")
    }

    /// `weir ARGS...` in namespace `ns`, once its stderr says `ready`.
    pub fn spawn(ns: &str, args: &[&str], ready: &str) -> Weir {
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, crate::common::bin()])
            .args(args)
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
        w.wait_for(ready);
        w
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn wait_for(&self, text: &str) -> String {
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
    pub fn signal(&self, sig: Signal) {
        kill_process(Pid::from_child(&self.child), sig).expect("kill weir");
    }

    /// Waits (at most `limit`) for weir to end by itself (`-c`); its
    /// stdout and stderr.
    pub fn wait(mut self, limit: Duration) -> (String, String) {
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(
                start.elapsed() < limit,
                "weir did not stop; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.output()
    }

    /// What weir printed, once it exits (successfully).
    fn output(&mut self) -> (String, String) {
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
        (out, err)
    }

    /// SIGTERM, then the JSON summary weir prints on its way out.
    pub fn stop(mut self) -> (Value, String) {
        self.signal(Signal::TERM);
        let (out, err) = self.output();
        (serde_json::from_str(&out).expect("JSON summary"), err)
    }
}

impl Drop for Weir {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
