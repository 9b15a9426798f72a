//! Benchmark for bench/metrics-hostile.sh: does the metrics server slow the
//! packet path when clients attack it?
//!
//!   metrics_hostile RULES SECONDS ROUNDS [--pin]
//!
//! A packet thread decides a generated trace (weir-gen seed 1, 65,536
//! Ethernet frames, looped) with the ruleset in batches of 64 and, between
//! batches, publishes a snapshot every 100 ms as `weir inline` does; the
//! metrics server runs beside it and a scraper asks every 100 ms. Each
//! round has a quiet phase and an attack phase (100 slow clients, 10
//! garbage senders; tests/hostile), SECONDS each, in alternating order.
//! Printed per phase: verdicts per second of the packet thread, and the
//! scrape latency; then the medians over rounds and their ratio.
//!
//! `--pin` puts the packet thread on CPU 0 and everything else (server,
//! clients, scraper) on CPU 1: what is left is the server's effect on the
//! packet path through shared state (the lock, caches), not the CPU time
//! the attackers take from a 2-core machine.

#[path = "../tests/hostile/mod.rs"]
mod hostile;

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

    let rule_count = engine.program.rules.len();
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
        std::thread::spawn(move || {
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
    };
    let scraper = Scraper::start(addr);

    println!(
        "{} rules, {FRAMES} frames looped, {secs} s per phase, {rounds} rounds, {}",
        rule_count,
        if pinned {
            "packet thread on CPU 0, server and clients on CPU 1"
        } else {
            "not pinned"
        }
    );
    let (mut quiet, mut attacked) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for attack in [round % 2 == 1, round % 2 == 0] {
            let clients = attack.then(|| {
                let a = hostile::Attack::start(addr, 100, 10);
                a.wait_until_busy();
                a
            });
            scraper.take();
            let (c0, t0) = (decided.load(Ordering::Relaxed), Instant::now());
            std::thread::sleep(Duration::from_secs_f64(secs));
            let (c1, t1) = (decided.load(Ordering::Relaxed), Instant::now());
            let rate = (c1 - c0) as f64 / (t1 - t0).as_secs_f64();
            let lat = scraper.take();
            let report = clients.map(|a| a.stop());
            println!(
                "round {} {:6} {:>12} verdicts/s   scrapes {}{}",
                round + 1,
                if attack { "attack" } else { "quiet" },
                thousands(rate),
                lat,
                report.map(|r| format!("   ({r})")).unwrap_or_default()
            );
            if attack {
                attacked.push(rate);
            } else {
                quiet.push(rate);
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    packets.join().expect("packet thread");
    let (q, a) = (median(&mut quiet), median(&mut attacked));
    println!(
        "median verdicts/s: quiet {}, attack {}; attack / quiet {:.3}",
        thousands(q),
        thousands(a),
        a / q
    );
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
        match (t.get(t.len() / 2), t.last()) {
            (Some(&p50), Some(&max)) if failed == 0 => {
                format!("{} p50 {:.1} ms max {:.1} ms", t.len(), ms(p50), ms(max))
            }
            _ => format!("{} ({failed} failed)", t.len()),
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes
    // inside it; sched_setaffinity reads it for the calling thread (0).
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    assert_eq!(
        rc,
        0,
        "pin to CPU {cpu}: {}",
        std::io::Error::last_os_error()
    );
}
