//! One ruleset, the same packets, three sources: a pcap file (`weir run`),
//! an AF_PACKET ring on a veth in a network namespace (`weir capture`) and
//! an NFQUEUE in a router namespace (`weir inline`). The verdict CSVs and
//! the `ipfw show` counters must be identical, byte for byte: the pipeline
//! is one, whatever feeds it.
//!
//! The packets are raw IPv4 datagrams this test builds; live, a raw IP
//! socket sends them. Their next hop is a made-up MAC address, so no host
//! answers them and nothing but them crosses the wires weir watches.
//! Needs root; without it the test prints SKIPPED and returns.

mod common;
mod netns;

use netns::{in_ns, ip, root, Net, Weir, RECEIVER, SENDER};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use weir_io::PcapWriter;
use weir_wire::LinkType;

/// A locally administered MAC no interface has: frames to it are seen by
/// packet sockets and thrown away by the IP stack, unanswered.
const NOBODY_MAC: &str = "02:00:00:00:00:01";

const RULES: &str = "\
100 deny tcp from any to any 22
200 allow tcp from any to any 80 setup
300 count udp from any to any
400 deny udp from any to any 9999
500 allow udp from any to any 53
600 allow icmp from any to any icmptypes 8
700 deny tcp from any to any 443
";

/// Packets of every kind the rules tell apart, with payloads of growing
/// length so that byte counters differ rule by rule.
fn packets() -> Vec<Vec<u8>> {
    (0..48u16)
        .map(|i| {
            let payload = vec![0x5a; usize::from(i)];
            let src_port = 40_000 + i;
            match i % 6 {
                0 => ipv4(6, i, &tcp(src_port, 22, 0x02, &payload)),
                1 => ipv4(6, i, &tcp(src_port, 80, 0x02, &payload)),
                2 => ipv4(6, i, &tcp(src_port, 443, 0x10, &payload)),
                3 => ipv4(17, i, &udp(src_port, 53, &payload)),
                4 => ipv4(17, i, &udp(src_port, 9999, &payload)),
                _ => ipv4(
                    1,
                    i,
                    &[&[8, 0, 0, 0, 0, 1, 0, i as u8][..], &payload].concat(),
                ),
            }
        })
        .collect()
}

fn tcp(src: u16, dst: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::with_capacity(20 + payload.len());
    h.extend_from_slice(&src.to_be_bytes());
    h.extend_from_slice(&dst.to_be_bytes());
    h.extend_from_slice(&1000u32.to_be_bytes()); // seq
    h.extend_from_slice(&0u32.to_be_bytes()); // ack
    h.extend_from_slice(&[5 << 4, flags, 0xff, 0xff, 0, 0, 0, 0]);
    h.extend_from_slice(payload);
    h
}

fn udp(src: u16, dst: u16, payload: &[u8]) -> Vec<u8> {
    let len = (8 + payload.len()) as u16;
    let mut h = Vec::with_capacity(usize::from(len));
    h.extend_from_slice(&src.to_be_bytes());
    h.extend_from_slice(&dst.to_be_bytes());
    h.extend_from_slice(&len.to_be_bytes());
    h.extend_from_slice(&[0, 0]);
    h.extend_from_slice(payload);
    h
}

/// An IPv4 header from SENDER to RECEIVER around `body`, with the length
/// and checksum the kernel would fill in (so every source sees the same
/// bytes, up to the TTL a router takes one from).
fn ipv4(proto: u8, id: u16, body: &[u8]) -> Vec<u8> {
    let total = (20 + body.len()) as u16;
    let (s, d): (Ipv4Addr, Ipv4Addr) = (SENDER.parse().unwrap(), RECEIVER.parse().unwrap());
    let mut h = vec![0x45, 0];
    h.extend_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&(0x1000 + id).to_be_bytes());
    h.extend_from_slice(&[0x40, 0, 64, proto, 0, 0]);
    h.extend_from_slice(&s.octets());
    h.extend_from_slice(&d.octets());
    let sum = h
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = !((sum & 0xffff) + (sum >> 16)) as u16;
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    h.extend_from_slice(body);
    h
}

/// Sends every packet through a raw IP socket (the kernel routes it and
/// writes the link header).
fn send_raw(packets: &[Vec<u8>]) {
    let sock = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(255))).expect("raw socket");
    let to = SockAddr::from(SocketAddrV4::new(RECEIVER.parse().unwrap(), 0));
    for p in packets {
        sock.send_to(p, &to).expect("send a raw packet");
        // Paced: a live source must not drop what a file would not.
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The file source: the packets as Ethernet frames in a pcap.
fn through_file(dir: &Path, rules: &Path, packets: &[Vec<u8>]) -> (String, String) {
    let trace = dir.join("packets.pcap");
    let mut w = PcapWriter::new(
        std::fs::File::create(&trace).unwrap(),
        LinkType::ETHERNET,
        65_535,
        false,
    )
    .unwrap();
    let eth = [[2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]].concat();
    for (i, p) in packets.iter().enumerate() {
        let frame = [&eth[..], &[0x08, 0x00], p].concat();
        w.write_frame(
            1_700_000_000_000_000_000 + i as u64 * 1_000_000,
            frame.len() as u32,
            &frame,
        )
        .unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let verdicts = dir.join("file.csv");
    let out = common::weir_ok([
        "run".as_ref(),
        rules.as_os_str(),
        "-r".as_ref(),
        trace.as_os_str(),
        "--verdicts".as_ref(),
        verdicts.as_os_str(),
        "--counters".as_ref(),
        "-q".as_ref(),
    ]);
    (
        std::fs::read_to_string(verdicts).unwrap(),
        common::stdout(&out),
    )
}

/// Two namespaces joined by a veth pair: the sender's end and weir's.
/// Removed on drop.
struct Wire {
    a: String,
    b: String,
}

impl Wire {
    fn new() -> Wire {
        let pid = std::process::id();
        let w = Wire {
            a: format!("weirs-{pid}-a"),
            b: format!("weirs-{pid}-b"),
        };
        for n in [&w.a, &w.b] {
            ip(&["netns", "add", n]);
            for k in ["all", "default"] {
                let ipv6 = format!("net.ipv6.conf.{k}.disable_ipv6=1");
                let st = Command::new("ip")
                    .args(["netns", "exec", n, "sysctl", "-qw", &ipv6])
                    .status()
                    .unwrap();
                assert!(st.success(), "sysctl {ipv6}");
            }
        }
        ip(&[
            "link", "add", "ws0", "netns", &w.a, "type", "veth", "peer", "name", "ws1", "netns",
            &w.b,
        ]);
        ip(&[
            "-n",
            &w.b,
            "addr",
            "add",
            &format!("{SENDER}/24"),
            "dev",
            "ws1",
        ]);
        ip(&["-n", &w.a, "link", "set", "ws0", "up"]);
        ip(&["-n", &w.b, "link", "set", "ws1", "up"]);
        ip(&[
            "-n",
            &w.b,
            "route",
            "add",
            &format!("{RECEIVER}/32"),
            "dev",
            "ws1",
        ]);
        ip(&[
            "-n", &w.b, "neigh", "add", RECEIVER, "lladdr", NOBODY_MAC, "dev", "ws1",
        ]);
        w
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        netns::delete(&[&self.a, &self.b]);
    }
}

/// The AF_PACKET source: `weir capture` on one end of the veth.
fn through_ring(dir: &Path, rules: &Path, packets: &[Vec<u8>]) -> (String, String) {
    let wire = Wire::new();
    let verdicts = dir.join("ring.csv");
    let (rules, csv) = (rules.to_str().unwrap(), verdicts.to_str().unwrap());
    let n = packets.len().to_string();
    let args = [
        "capture",
        "-i",
        "ws0",
        "-c",
        &n,
        "--verdicts",
        csv,
        "--counters",
        rules,
    ];
    let weir = Weir::spawn(&wire.a, &args, "listening on ws0");
    in_ns(&wire.b, || send_raw(packets));
    let (counters, _) = weir.wait(Duration::from_secs(20));
    (std::fs::read_to_string(verdicts).unwrap(), counters)
}

/// The NFQUEUE source: `weir inline` in the router between two hosts.
fn through_queue(dir: &Path, rules: &Path, packets: &[Vec<u8>]) -> (String, String) {
    let net = Net::new("src");
    // Forwarded packets leave for nobody: the receiver never answers.
    ip(&[
        "-n",
        &net.router,
        "neigh",
        "replace",
        RECEIVER,
        "lladdr",
        NOBODY_MAC,
        "dev",
        "r2",
    ]);
    let verdicts = dir.join("queue.csv");
    let n = packets.len().to_string();
    let extra = [
        "-c",
        &n,
        "--verdicts",
        verdicts.to_str().unwrap(),
        "--counters",
    ];
    let weir = Weir::start(&net, rules, &extra);
    in_ns(&net.sender, || send_raw(packets));
    let (counters, _) = weir.wait(Duration::from_secs(20));
    (std::fs::read_to_string(verdicts).unwrap(), counters)
}

#[test]
fn file_ring_and_queue_give_the_same_verdicts_and_counters() {
    if !root() {
        eprintln!("*** SKIPPED: needs root (namespaces, packet sockets, nftables) ***");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.conf");
    std::fs::write(&rules, RULES).unwrap();
    let packets = packets();
    let file = through_file(dir.path(), &rules, &packets);
    // The file is the reference; it must exercise every rule.
    assert_eq!(file.0.lines().count(), packets.len() + 1, "{}", file.0);
    for rule in ["100", "200", "300", "400", "500", "600", "700"] {
        let row = file
            .1
            .lines()
            .find(|l| l.starts_with(&format!("00{rule} ")));
        let hits = row.and_then(|l| l.split_whitespace().nth(1));
        assert_ne!(hits, Some("0"), "rule {rule} never matched:\n{}", file.1);
    }
    let ring = through_ring(dir.path(), &rules, &packets);
    assert_eq!(ring.0, file.0, "AF_PACKET verdicts differ from the file's");
    assert_eq!(ring.1, file.1, "AF_PACKET counters differ from the file's");
    let queue = through_queue(dir.path(), &rules, &packets);
    assert_eq!(queue.0, file.0, "NFQUEUE verdicts differ from the file's");
    assert_eq!(queue.1, file.1, "NFQUEUE counters differ from the file's");
}
