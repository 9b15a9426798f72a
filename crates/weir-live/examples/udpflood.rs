//! Benchmark traffic for bench/inline.sh: small UDP datagrams to one
//! address as fast as one socket sends them, for a while.
//!
//!   udpflood ADDR:PORT SECONDS [PAYLOAD_BYTES]
//!
//! Prints `sent N in S s` on stdout.
use std::net::UdpSocket;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: udpflood ADDR:PORT SECONDS [PAYLOAD_BYTES]");
        std::process::exit(2);
    }
    let secs: f64 = args[2].parse().expect("SECONDS");
    let size: usize = args
        .get(3)
        .map_or(18, |s| s.parse().expect("PAYLOAD_BYTES"));
    let sock = UdpSocket::bind("0.0.0.0:0").expect("bind");
    sock.connect(&args[1]).expect("connect");
    let payload = vec![0u8; size];
    let (start, until) = (Instant::now(), Duration::from_secs_f64(secs));
    let mut sent = 0u64;
    while start.elapsed() < until {
        for _ in 0..256 {
            // A full backlog (ENOBUFS) is the point of a flood: go on.
            if sock.send(&payload).is_ok() {
                sent += 1;
            }
        }
    }
    println!("sent {sent} in {:.3} s", start.elapsed().as_secs_f64());
}
