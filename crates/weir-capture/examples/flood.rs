//! A UDP flood for the capture benchmark (bench/capture-vs-tcpdump.sh):
//! enters a network namespace and sends datagrams as fast as it can, or
//! paced to a rate, for a fixed time, from 256 source ports (256 flows, so
//! fanout has something to spread). Prints what it sent as one JSON line.
//!
//!   flood /run/netns/NAME SRC_IP DST_IP:PORT SECONDS [PPS|0] [PAYLOAD_BYTES]

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: flood NETNS_PATH SRC_IP DST_IP:PORT SECONDS [PPS|0] [PAYLOAD_BYTES]");
        std::process::exit(2);
    }
    let arg = |k: usize, default: &str| args.get(k).cloned().unwrap_or_else(|| default.into());
    weir_capture::enter_netns(Path::new(&args[1])).expect("enter the namespace");
    let dst: SocketAddr = args[3].parse().expect("DST_IP:PORT");
    let seconds: f64 = args[4].parse().expect("SECONDS");
    let pps: f64 = arg(5, "0").parse().expect("PPS");
    let payload = vec![0x5au8; arg(6, "18").parse().expect("PAYLOAD_BYTES")];
    let socks: Vec<UdpSocket> = (0..256)
        .map(|_| UdpSocket::bind((args[2].as_str(), 0)).expect("bind"))
        .collect();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let (mut sent, mut failed) = (0u64, 0u64);
    'outer: loop {
        // Batches of 256 between clock reads; pacing sleeps between batches.
        for s in &socks {
            match s.send_to(&payload, dst) {
                Ok(_) => sent += 1,
                Err(_) => failed += 1,
            }
        }
        let now = Instant::now();
        if now >= end {
            break 'outer;
        }
        if pps > 0.0 {
            let due = start + Duration::from_secs_f64(sent as f64 / pps);
            if due > now {
                std::thread::sleep(due - now);
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{{\"sent\":{sent},\"failed\":{failed},\"seconds\":{secs:.3},\"pps\":{:.0}}}",
        sent as f64 / secs
    );
}
