//! Benchmark for bench/metrics-hostile.sh: does the metrics server slow the
//! packet path when clients attack it?
//!
//!   metrics_hostile RULES SECONDS ROUNDS [--pin]
//!
//! A packet thread decides a generated trace (weir-gen seed 1, 65,536
//! Ethernet frames, looped) with the ruleset in batches of 64 and, between
//! batches, publishes a snapshot every 100 ms as `weir inline` does; the
//! metrics server runs beside it and a scraper asks every 100 ms. Each
//! round has three phases of SECONDS, in rotating order: quiet; an attack
//! on the server (100 slow clients, 10 garbage senders; tests/hostile);
//! and the same attack on a sink that is not weir's server (the control:
//! what the attack's traffic alone costs the machine).
//! Printed per phase: verdicts per second of the packet thread, the share
//! of the time it was on a CPU and its verdicts per CPU-second (from
//! /proc/self/task/TID/schedstat), and the scrape latency; then the medians
//! over rounds and their ratios. The server slows the packet path only by
//! as much as "attack weir" falls below "attack a sink".
//!
//! `--pin` puts the packet thread on CPU 0 and everything else (server,
//! clients, scraper) on CPU 1, so the attackers cannot take the packet
//! thread's CPU; on a machine shared with other work the scheduler moves
//! that work onto CPU 0 instead, so pin only on a machine of your own.

#[path = "../tests/hostile/mod.rs"]
mod hostile;

use rustix::thread::{sched_setaffinity, CpuSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weir_live::metrics::{Metrics, PUBLISH_INTERVAL};
use weir_wire::{decode, LinkType};

const FRAMES: u64 = 1 << 16;
const BATCH: usize = 64;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: metrics_hostile RULES SECONDS ROUNDS [--pin]");
        std::process::exit(2);
    }
    let rules = std::fs::read_to_string(&args[1]).expect("read RULES");
    let secs: f64 = args[2].parse().expect("SECONDS");
    let rounds: usize = args[3].parse().expect("ROUNDS");
    let pinned = args.get(4).is_some_and(|a| a == "--pin");
    let program = weir_engine::load(&rules, &weir_rules::Names::default(), &Default::default())
        .unwrap_or_else(|e| panic!("{}: {e:?}", args[1]));
    let engine = weir_engine::Engine::new(program);

    let rule_count = engine.program().rules.len();
    let frames: Vec<Vec<u8>> = weir_gen::generate(weir_gen::GenConfig {
        seed: 1,
        count: FRAMES,
        ..Default::default()
    })
    .into_iter()
    .map(|(_, data)| data)
    .collect();

    if pinned {
        pin(1); // inherited by every thread started from here on
    }
    let mut metrics = Metrics::serve("127.0.0.1:0".parse().unwrap()).expect("serve");
    let addr = metrics.local_addr();
    let decided = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let packets = {
        let (decided, done) = (Arc::clone(&decided), Arc::clone(&done));
        std::thread::Builder::new()
            .name(PACKET_THREAD.into())
            .spawn(move || {
                if pinned {
                    pin(0);
                }
                let mut engine = engine;
                let mut n = 0u64;
                while !done.load(Ordering::Relaxed) {
                    for batch in frames.chunks(BATCH) {
                        for f in batch {
                            let p = decode(LinkType::ETHERNET, f, f.len() as u32);
                            std::hint::black_box(engine.decide(&p));
                        }
                        n += batch.len() as u64;
                        decided.store(n, Ordering::Relaxed);
                        metrics.publish_every(PUBLISH_INTERVAL, &engine, Vec::new);
                    }
                }
            })
            .expect("packet thread")
    };
    let cpu = ThreadCpu::find(PACKET_THREAD);
    let scraper = Scraper::start(addr);
    let sink = sink();

    println!(
        "{rule_count} rules, {FRAMES} frames looped, {secs} s per phase, {rounds} rounds, {}",
        if pinned {
            "packet thread on CPU 0, server and clients on CPU 1"
        } else {
            "not pinned"
        }
    );
    let mut results: [Vec<Measured>; 3] = Default::default();
    for round in 0..rounds {
        // Each round in another order, so a drift in the machine's load
        // does not favour one phase.
        for k in 0..3 {
            let phase = (round + k) % 3;
            let target = [None, Some(addr), Some(sink)][phase];
            let clients = target.map(|to| {
                let a = hostile::Attack::start(to, 100, 10);
                a.wait_until_busy();
                a
            });
            scraper.take();
            let (c0, t0, u0) = (decided.load(Ordering::Relaxed), Instant::now(), cpu.ns());
            std::thread::sleep(Duration::from_secs_f64(secs));
            let (c1, t1, u1) = (decided.load(Ordering::Relaxed), Instant::now(), cpu.ns());
            let wall = (t1 - t0).as_secs_f64();
            let rate = (c1 - c0) as f64 / wall;
            let on_cpu = (u1 - u0) as f64 / 1e9;
            let per_cpu_second = (c1 - c0) as f64 / on_cpu;
            let lat = scraper.take();
            let report = clients.map(|a| a.stop());
            println!(
                "round {} {:13} {:>11} verdicts/s  on CPU {:3.0}%  {:>11} per CPU-second   scrapes {}{}",
                round + 1,
                PHASES[phase],
                thousands(rate),
                100.0 * on_cpu / wall,
                thousands(per_cpu_second),
                lat,
                report.map(|r| format!("   ({r})")).unwrap_or_default()
            );
            results[phase].push(Measured {
                per_second: rate,
                per_cpu_second,
            });
        }
    }
    done.store(true, Ordering::Relaxed);
    packets.join().expect("packet thread");
    let medians = |f: fn(&Measured) -> f64| {
        results
            .each_ref()
            .map(|r| weir_stats::median(&weir_stats::sorted(r.iter().map(f))).unwrap_or(0.0))
    };
    print_medians("verdicts/s", medians(|m| m.per_second));
    print_medians(
        "verdicts per CPU-second of the packet thread",
        medians(|m| m.per_cpu_second),
    );
}

struct Measured {
    per_second: f64,
    per_cpu_second: f64,
}

fn print_medians(what: &str, [quiet, weir, sink]: [f64; 3]) {
    println!(
        "median {what}: {} {}, {} {}, {} {}; attack on weir / quiet {:.3}, \
         attack on weir / attack on the sink {:.3}",
        PHASES[0],
        thousands(quiet),
        PHASES[1],
        thousands(weir),
        PHASES[2],
        thousands(sink),
        weir / quiet,
        weir / sink
    );
}

const PHASES: [&str; 3] = ["quiet", "attack weir", "attack a sink"];

/// The control: a listener that takes the same attack but is not weir's
/// server (each connection: accepted, read once without waiting, closed).
fn sink() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("sink");
    let addr = listener.local_addr().expect("sink address");
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 8192];
        for mut s in listener.incoming().flatten() {
            let _ = s.set_nonblocking(true);
            let _ = std::io::Read::read(&mut s, &mut buf);
        }
    });
    addr
}

const PACKET_THREAD: &str = "weir-packets";

/// A thread's CPU time from /proc (read from outside: the packet thread
/// makes no extra system call).
struct ThreadCpu(std::path::PathBuf);

impl ThreadCpu {
    fn find(name: &str) -> ThreadCpu {
        let start = Instant::now();
        loop {
            for task in std::fs::read_dir("/proc/self/task")
                .expect("/proc")
                .flatten()
            {
                let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
                if comm.trim_end() == name {
                    return ThreadCpu(task.path().join("schedstat"));
                }
            }
            assert!(start.elapsed() < Duration::from_secs(5), "no thread {name}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Nanoseconds on a CPU so far (schedstat's first field).
    fn ns(&self) -> u64 {
        std::fs::read_to_string(&self.0)
            .ok()
            .and_then(|s| s.split(' ').next()?.parse().ok())
            .expect("schedstat")
    }
}

/// Scrapes every 100 ms on its own thread, keeping each scrape's time.
struct Scraper {
    took: Arc<Mutex<Vec<Duration>>>,
}

impl Scraper {
    fn start(addr: SocketAddr) -> Scraper {
        let took = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&took);
        std::thread::spawn(move || loop {
            let start = Instant::now();
            let ok = hostile::exchange(addr, b"GET /metrics HTTP/1.0\r\n\r\n")
                .is_ok_and(|r| r.status == 200);
            // A failed scrape counts as the longest there can be.
            let t = if ok { start.elapsed() } else { Duration::MAX };
            keep.lock().unwrap().push(t);
            std::thread::sleep(Duration::from_millis(100));
        });
        Scraper { took }
    }

    /// The scrapes since the last call: count, median, maximum, failures.
    fn take(&self) -> String {
        let mut t = std::mem::take(&mut *self.took.lock().unwrap());
        t.sort();
        let failed = t.iter().filter(|&&d| d == Duration::MAX).count();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        match (weir_stats::median(&t), t.last()) {
            (Some(p50), Some(&max)) if failed == 0 => {
                format!("{} p50 {:.1} ms max {:.1} ms", t.len(), ms(p50), ms(max))
            }
            _ => format!("{} ({failed} failed)", t.len()),
        }
    }
}

fn thousands(x: f64) -> String {
    let s = format!("{:.0}", x);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Keeps the calling thread (and threads it starts later) on one CPU.
fn pin(cpu: usize) {
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set).unwrap_or_else(|e| panic!("pin to CPU {cpu}: {e}"));
}
