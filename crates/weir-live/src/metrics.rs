//! Prometheus metrics: the packet thread publishes a snapshot of its
//! counters now and then (one lock per publish, none per packet); a tiny
//! HTTP/1.0 server on its own thread renders the latest snapshot in the
//! text exposition format.
//!
//! Any live source can use it: build a [`Snapshot`] from the engine with
//! [`Snapshot::update`], add the source's own counters as [`Sample`]s, and
//! hand it to [`Metrics::publish`] (or [`Metrics::publish_every`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use weir_engine::{Engine, Stats};
use weir_wire::Malformed;

/// How often [`Metrics::publish_every`] publishes by default.
pub const PUBLISH_INTERVAL: Duration = Duration::from_millis(100);
/// Request bytes read before giving up on a client.
const MAX_REQUEST: usize = 8 << 10;
/// A client that says nothing for this long is dropped.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

/// One metric a source adds beside the engine's, e.g. kernel queue drops.
/// `labels` is the rendered label set without braces (`""` for none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub labels: &'static str,
    pub value: u64,
}

/// A rule's counters as published.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleSample {
    pub number: u16,
    pub action: &'static str,
    pub packets: u64,
    pub bytes: u64,
}

/// Everything a scrape shows, copied from the packet thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub rules: Vec<RuleSample>,
    pub stats: Stats,
    pub extra: Vec<Sample>,
}

impl Snapshot {
    /// Copies the engine's counters in (reusing the vectors' memory).
    pub fn update(&mut self, engine: &Engine, extra: &[Sample]) {
        self.rules.clear();
        self.rules.extend(
            engine
                .program
                .rules
                .iter()
                .zip(engine.counters())
                .map(|(r, c)| RuleSample {
                    number: r.number,
                    action: r.action.word(),
                    packets: c.packets,
                    bytes: c.bytes,
                }),
        );
        self.stats.clone_from(engine.stats());
        self.extra.clear();
        self.extra.extend_from_slice(extra);
    }

    /// The text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        // Rules that share a number and action (ipfw allows it) are one
        // series: a label set may appear only once.
        let mut by_rule: BTreeMap<(u16, &str), (u64, u64)> = BTreeMap::new();
        for r in &self.rules {
            let e = by_rule.entry((r.number, r.action)).or_default();
            e.0 += r.packets;
            e.1 += r.bytes;
        }
        header(
            &mut out,
            "weir_rule_packets_total",
            "Packets each rule matched.",
            Kind::Counter,
        );
        for ((n, a), (p, _)) in &by_rule {
            let _ = writeln!(
                out,
                "weir_rule_packets_total{{rule=\"{n}\",action=\"{a}\"}} {p}"
            );
        }
        header(
            &mut out,
            "weir_rule_bytes_total",
            "Bytes (IP length) each rule matched.",
            Kind::Counter,
        );
        for ((n, a), (_, b)) in &by_rule {
            let _ = writeln!(
                out,
                "weir_rule_bytes_total{{rule=\"{n}\",action=\"{a}\"}} {b}"
            );
        }
        let s = &self.stats;
        header(
            &mut out,
            "weir_packets_total",
            "Packets decided, by verdict.",
            Kind::Counter,
        );
        let _ = writeln!(out, "weir_packets_total{{verdict=\"pass\"}} {}", s.passed);
        let _ = writeln!(out, "weir_packets_total{{verdict=\"drop\"}} {}", s.dropped);
        header(
            &mut out,
            "weir_non_ip_packets_total",
            "Frames that were not IP.",
            Kind::Counter,
        );
        let _ = writeln!(out, "weir_non_ip_packets_total {}", s.non_ip);
        header(
            &mut out,
            "weir_malformed_packets_total",
            "Packets that claimed IP but could not be decoded, by reason.",
            Kind::Counter,
        );
        for m in Malformed::ALL {
            let _ = writeln!(
                out,
                "weir_malformed_packets_total{{reason=\"{}\"}} {}",
                m.name(),
                s.malformed[m as usize]
            );
        }
        let mut last = "";
        for e in &self.extra {
            if e.name != last {
                header(&mut out, e.name, e.help, e.kind);
                last = e.name;
            }
            if e.labels.is_empty() {
                let _ = writeln!(out, "{} {}", e.name, e.value);
            } else {
                let _ = writeln!(out, "{}{{{}}} {}", e.name, e.labels, e.value);
            }
        }
        out
    }
}

fn header(out: &mut String, name: &str, help: &str, kind: Kind) {
    let kind = match kind {
        Kind::Counter => "counter",
        Kind::Gauge => "gauge",
    };
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// The publishing side; the server thread holds the other end.
pub struct Metrics {
    latest: Arc<Mutex<Snapshot>>,
    scratch: Snapshot,
    last: Instant,
    addr: SocketAddr,
}

impl Metrics {
    /// Binds `addr` and serves `GET /metrics` from a background thread.
    pub fn serve(addr: SocketAddr) -> io::Result<Metrics> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let latest = Arc::new(Mutex::new(Snapshot::default()));
        let shared = Arc::clone(&latest);
        std::thread::Builder::new()
            .name("weir-metrics".into())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    // A client's failure is its own; the server goes on.
                    let _ = answer(stream, &shared);
                }
            })?;
        Ok(Metrics {
            latest,
            scratch: Snapshot::default(),
            last: Instant::now(),
            addr,
        })
    }

    /// Where the server listens (the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Publishes now: copies outside the lock, swaps inside it.
    pub fn publish(&mut self, engine: &Engine, extra: &[Sample]) {
        self.scratch.update(engine, extra);
        let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::swap(&mut *latest, &mut self.scratch);
        drop(latest);
        self.last = Instant::now();
    }

    /// Publishes if `interval` has passed since the last time. Cheap to
    /// call between batches; `extra` is only called when publishing.
    pub fn publish_every(
        &mut self,
        interval: Duration,
        engine: &Engine,
        extra: impl FnOnce() -> Vec<Sample>,
    ) {
        if self.last.elapsed() >= interval {
            self.publish(engine, &extra());
        }
    }
}

/// What a request asked for.
#[derive(Debug, PartialEq, Eq)]
pub enum Request {
    Metrics { head: bool },
    NotFound,
    BadRequest,
}

/// Reads the request line: `GET /metrics HTTP/1.x` (or `/`, or HEAD).
pub fn parse_request(head: &[u8]) -> Request {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let Ok(line) = std::str::from_utf8(line) else {
        return Request::BadRequest;
    };
    let mut words = line.trim_end_matches('\r').split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Request::BadRequest;
    };
    if !version.starts_with("HTTP/1.") {
        return Request::BadRequest;
    }
    let path = target.split('?').next().unwrap_or_default();
    match (method, path) {
        ("GET" | "HEAD", "/metrics" | "/") => Request::Metrics {
            head: method == "HEAD",
        },
        ("GET" | "HEAD", _) => Request::NotFound,
        _ => Request::BadRequest,
    }
}

fn answer(mut stream: TcpStream, latest: &Mutex<Snapshot>) -> io::Result<()> {
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let n = stream.read(&mut buf)?;
        if n == 0 || head.len() + n > MAX_REQUEST {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let (status, body, head_only) = match parse_request(&head) {
        Request::Metrics { head } => {
            let text = latest
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .render();
            ("200 OK", text, head)
        }
        Request::NotFound => ("404 Not Found", "not found: try /metrics\n".into(), false),
        Request::BadRequest => ("400 Bad Request", "bad request\n".into(), false),
    };
    let mut response = format!(
        "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if !head_only {
        response.push_str(&body);
    }
    stream.write_all(response.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_packets::{engine, ipv4_udp};

    #[test]
    fn renders_rules_verdicts_and_extras() {
        let mut e = engine("300 deny udp from any to any 53\n300 deny udp from any to any 54\n400 allow ip from any to any\n");
        for port in [53, 54, 80] {
            let p = ipv4_udp(port);
            e.decide(&weir_wire::decode(weir_wire::LinkType::RAW, &p, 28));
        }
        e.decide(&weir_wire::decode(weir_wire::LinkType::RAW, &[0x45, 0], 2));
        let mut s = Snapshot::default();
        let extra = [Sample {
            name: "weir_queue_dropped_total",
            help: "Dropped by the kernel.",
            kind: Kind::Counter,
            labels: "queue=\"0\"",
            value: 7,
        }];
        s.update(&e, &extra);
        let text = s.render();
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines[..6],
            [
                "weir_rule_packets_total{rule=\"300\",action=\"deny\"} 2",
                "weir_rule_packets_total{rule=\"400\",action=\"allow\"} 1",
                "weir_rule_packets_total{rule=\"65535\",action=\"deny\"} 0",
                "weir_rule_bytes_total{rule=\"300\",action=\"deny\"} 56",
                "weir_rule_bytes_total{rule=\"400\",action=\"allow\"} 28",
                "weir_rule_bytes_total{rule=\"65535\",action=\"deny\"} 0",
            ]
        );
        assert!(lines.contains(&"weir_packets_total{verdict=\"pass\"} 1"));
        assert!(lines.contains(&"weir_packets_total{verdict=\"drop\"} 3"));
        let malformed: u64 = lines
            .iter()
            .filter(|l| l.starts_with("weir_malformed_packets_total{"))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(malformed, 1);
        assert!(text.ends_with(
            "# TYPE weir_queue_dropped_total counter\nweir_queue_dropped_total{queue=\"0\"} 7\n"
        ));
        // Every metric has exactly one TYPE line, before its samples.
        for name in lines.iter().map(|l| l.split(['{', ' ']).next().unwrap()) {
            let ty = format!("# TYPE {name} ");
            assert_eq!(text.matches(&ty).count(), 1, "{name}");
            assert!(text.find(&ty).unwrap() < text.find(&format!("\n{name}")).unwrap());
        }
    }

    #[test]
    fn request_lines() {
        assert_eq!(
            parse_request(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Request::Metrics { head: false }
        );
        assert_eq!(
            parse_request(b"HEAD / HTTP/1.0\r\n\r\n"),
            Request::Metrics { head: true }
        );
        assert_eq!(parse_request(b"GET /x HTTP/1.0\r\n\r\n"), Request::NotFound);
        for bad in [
            &b""[..],
            b"GET",
            b"POST /metrics HTTP/1.0",
            b"GET / HTTP/2",
            b"\xff\xfe",
        ] {
            assert_eq!(parse_request(bad), Request::BadRequest, "{bad:?}");
        }
    }

    #[test]
    fn serves_the_published_snapshot_over_tcp() {
        let mut m = Metrics::serve("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut e = engine("100 allow ip from any to any\n");
        let p = ipv4_udp(9);
        e.decide(&weir_wire::decode(weir_wire::LinkType::RAW, &p, 28));
        m.publish(&e, &[]);
        let mut s = TcpStream::connect(m.local_addr()).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.0 200 OK\r\n"), "{reply}");
        let body = reply.split("\r\n\r\n").nth(1).unwrap();
        let len: usize = reply
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(body.len(), len);
        assert!(body.contains("weir_rule_packets_total{rule=\"100\",action=\"allow\"} 1\n"));
    }
}
