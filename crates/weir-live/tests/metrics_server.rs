//! The metrics server over real TCP: Prometheus's conventions, the text
//! checked by `promtool check metrics`, the bounds on each client, and
//! scrape latency while slow and hostile clients hold the server.

mod hostile;
mod promtool;

use hostile::{Attack, Reply};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use weir_engine::Engine;
use weir_live::metrics::{Kind, Limits, Metrics, Sample, CONTENT_TYPE_0_0_4};

fn engine(rules: &str) -> Engine {
    let names = weir_rules::Names::default();
    Engine::new(weir_engine::load(rules, &names, &Default::default()).expect("rules"))
}

/// A server with one published snapshot: rule 100 matched one packet.
fn server(limits: Limits) -> Metrics {
    let mut m = Metrics::serve_with("127.0.0.1:0".parse().unwrap(), limits).unwrap();
    let mut e = engine("100 allow udp from any to any\n200 deny ip from any to any\n");
    let p = hostile::ipv4_udp();
    e.decide(&weir_wire::decode(
        weir_wire::LinkType::RAW,
        &p,
        p.len() as u32,
    ));
    assert!(m.publish(&e, &[]));
    m
}

fn send(addr: SocketAddr, request: &[u8]) -> Reply {
    hostile::exchange(addr, request).expect("an answer")
}

#[test]
fn get_and_head_metrics_and_nothing_else() {
    let m = server(Limits::default());
    let addr = m.local_addr();

    for request in [
        &b"GET /metrics HTTP/1.0\r\n\r\n"[..],
        b"GET /metrics?name[]=x HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n\r\n",
    ] {
        let r = send(addr, request);
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.header("content-type"), Some(CONTENT_TYPE_0_0_4));
        assert_eq!(r.header("content-length"), Some(&*r.body.len().to_string()));
        assert!(
            r.body
                .contains("weir_rule_packets_total{rule=\"100\",action=\"allow\"} 1\n"),
            "{}",
            r.body
        );
        // One request per connection (read_to_end saw it close); an
        // HTTP/1.1 client is told so.
        if request.ends_with(b"gzip\r\n\r\n") {
            assert_eq!(r.header("connection"), Some("close"));
        }
    }

    let get = send(addr, b"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
    let head = send(addr, b"HEAD /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some(CONTENT_TYPE_0_0_4));
    assert_eq!(
        head.header("content-length"),
        Some(&*get.body.len().to_string())
    );
    assert!(head.body.is_empty(), "HEAD has no body: {head:?}");

    for path in ["/", "/metrics/", "/favicon.ico", "/metricsx"] {
        let r = send(addr, format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes());
        assert_eq!(r.status, 404, "{path}: {r:?}");
    }
    for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
        let r = send(
            addr,
            format!("{method} /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(r.status, 405, "{method}: {r:?}");
        assert_eq!(r.header("allow"), Some("GET, HEAD"), "{method}");
    }
    assert_eq!(send(addr, b"\x16\x03\x01\x02\x00\x01\r\n\r\n").status, 400);
    assert_eq!(send(addr, b"GET /metrics HTTP/9\r\n\r\n").status, 400);
}

#[test]
fn a_request_head_past_8_kib_is_refused() {
    let m = server(Limits::default());
    let mut big = b"GET /metrics HTTP/1.1\r\nHost: a\r\n".to_vec();
    let filler = format!("X-Filler: {}\r\n", "a".repeat(100));
    while big.len() < 8192 {
        big.extend_from_slice(filler.as_bytes());
    }
    big.extend_from_slice(b"\r\n");
    assert_eq!(send(m.local_addr(), &big).status, 431);
    // Just under the limit still works.
    let mut fits = b"GET /metrics HTTP/1.1\r\n".to_vec();
    while fits.len() + filler.len() < 7000 {
        fits.extend_from_slice(filler.as_bytes());
    }
    fits.extend_from_slice(b"\r\n");
    assert_eq!(send(m.local_addr(), &fits).status, 200);
}

#[test]
fn a_client_is_closed_when_its_time_is_up() {
    let limit = Duration::from_millis(300);
    let m = server(Limits {
        client_time: limit,
        ..Limits::default()
    });
    let mut idle = TcpStream::connect(m.local_addr()).unwrap();
    idle.write_all(b"GET /metrics HTTP/1.0\r\nX: ").unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 64];
    // Closed without an answer: end of stream (or a reset).
    assert!(matches!(idle.read(&mut buf), Ok(0) | Err(_)));
    assert!(start.elapsed() >= limit - Duration::from_millis(50));
    // Well within its time, a scrape is still answered.
    assert_eq!(
        send(m.local_addr(), b"GET /metrics HTTP/1.0\r\n\r\n").status,
        200
    );
}

#[test]
fn one_connection_too_many_closes_the_oldest() {
    let m = server(Limits {
        max_connections: 4,
        client_time: Duration::from_secs(60),
    });
    let idle: Vec<TcpStream> = (0..10)
        .map(|_| {
            let mut s = TcpStream::connect(m.local_addr()).unwrap();
            s.write_all(b"GET /metrics HTTP/1.0\r\nX: ").unwrap();
            s
        })
        .collect();
    assert_eq!(
        send(m.local_addr(), b"GET /metrics HTTP/1.0\r\n\r\n").status,
        200,
        "a scrape gets in past ten idle connections"
    );
    // The scrape closed one more; its own slot is free again, so the
    // three youngest idle connections are all that is left.
    for (i, s) in idle.iter().enumerate() {
        if i < 7 {
            assert!(hostile::closed_within(s, Duration::from_secs(5)), "{i}");
        } else {
            assert!(hostile::still_open(s), "{i}");
        }
    }
}

#[test]
fn promtool_accepts_the_exposition() {
    let Some(promtool) = promtool::tool("promtool", "promtool_accepts_the_exposition") else {
        return;
    };
    let mut m = Metrics::serve("127.0.0.1:0".parse().unwrap()).unwrap();
    // Two rules share a number and action (one series), a state rule,
    // the default rule; a malformed packet; a source's own samples.
    let mut e = engine(
        "100 allow udp from any to any 53 keep-state\n100 allow udp from any to any 54\n\
         200 deny tcp from any to any\n",
    );
    let p = hostile::ipv4_udp();
    e.decide(&weir_wire::decode(
        weir_wire::LinkType::RAW,
        &p,
        p.len() as u32,
    ));
    e.decide(&weir_wire::decode(weir_wire::LinkType::RAW, &[0x45, 0], 2));
    let extra = [
        Sample {
            name: "weir_queue_verdicts_total",
            help: "Verdicts sent to the kernel.",
            kind: Kind::Counter,
            labels: "verdict=\"accept\"",
            value: 3,
        },
        Sample {
            name: "weir_queue_verdicts_total",
            help: "Verdicts sent to the kernel.",
            kind: Kind::Counter,
            labels: "verdict=\"drop\"",
            value: 1,
        },
        Sample {
            name: "weir_queue_waiting",
            help: "Packets waiting in the kernel for a verdict.",
            kind: Kind::Gauge,
            labels: "",
            value: 0,
        },
    ];
    assert!(m.publish(&e, &extra));
    let r = send(m.local_addr(), b"GET /metrics HTTP/1.0\r\n\r\n");
    assert_eq!(r.status, 200);
    assert!(r.body.contains("weir_queue_waiting 0\n"), "{}", r.body);
    promtool::promtool_check(&promtool, &r.body);
}

/// The test: 100 clients that each sent half a request and wait,
/// 10 that send garbage as fast as they can, and a scraper. Every scrape
/// must be answered, whole, within 100 ms (p50 and p90 of 50 scrapes; the
/// maximum within 1 s, as a loaded 2-core machine can stall any thread).
#[test]
fn scrapes_stay_fast_while_slow_and_hostile_clients_hold_on() {
    let m = server(Limits::default());
    let addr = m.local_addr();
    let attack = Attack::start(addr, 100, 10);
    attack.wait_until_busy();

    let mut took = Vec::new();
    for _ in 0..50 {
        let start = Instant::now();
        let r = send(addr, b"GET /metrics HTTP/1.0\r\n\r\n");
        took.push(start.elapsed());
        assert_eq!(r.status, 200, "{r:?}");
        assert!(r
            .body
            .contains("weir_rule_packets_total{rule=\"100\",action=\"allow\"} 1\n"));
        std::thread::sleep(Duration::from_millis(10));
    }
    let report = attack.stop();
    took.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let at = |q| weir_stats::quantile(&took, q).expect("50 scrapes");
    let (p50, p90, max) = (at(0.5), at(0.9), at(1.0));
    eprintln!(
        "scrape latency under attack: p50 {:.2} ms, p90 {:.2} ms, max {:.2} ms; {report}",
        ms(p50),
        ms(p90),
        ms(max)
    );
    assert_eq!(
        report.slow_still_open, 100,
        "the slow clients held their connections throughout: {report}"
    );
    assert!(
        report.garbage_connections >= 10,
        "the garbage clients got through: {report}"
    );
    assert!(
        p50 < Duration::from_millis(100) && p90 < Duration::from_millis(100),
        "scrapes must be answered within 100 ms while attacked: p50 {:.2} ms, p90 {:.2} ms",
        ms(p50),
        ms(p90)
    );
    assert!(
        max < Duration::from_secs(1),
        "the slowest scrape took {:.2} ms",
        ms(max)
    );
}

/// A real Prometheus (Debian's `prometheus`) scrapes the server every
/// second and stores what it read: the query API returns rule 100's count.
#[test]
fn prometheus_scrapes_it() {
    let Some(prometheus) = promtool::tool("prometheus", "prometheus_scrapes_it") else {
        return;
    };
    let m = server(Limits::default());
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, scrape_timeout: 1s}}\n\
             scrape_configs:\n  - job_name: weir\n    static_configs:\n      \
             - targets: [\"{}\"]\n",
            m.local_addr()
        ),
    )
    .unwrap();
    // Prometheus cannot report a port it chose; take a free one.
    let web = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let log = std::fs::File::create(dir.path().join("log")).unwrap();
    let _running = Killed(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let query =
        b"GET /api/v1/query?query=weir_rule_packets_total%7Brule%3D%22100%22%7D HTTP/1.0\r\n\r\n";
    let start = Instant::now();
    loop {
        let answer = hostile::exchange(web, query).map(|r| r.body);
        if let Ok(body) = &answer {
            if body.contains("\"action\":\"allow\"") {
                assert!(body.contains(",\"1\"]"), "{body}");
                break;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "Prometheus stored nothing from weir in 60 s; last answer {answer:?}; log:\n{}",
            std::fs::read_to_string(dir.path().join("log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
