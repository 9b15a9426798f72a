//! Captures as the other tools read them. Every capture weir writes (`-w`,
//! `--drop-out`, `--annotate`) is read by libpcap (tcpdump) and by
//! Wireshark's reader with the packets and bytes weir wrote, over the whole
//! corpus and the snap-length cases; and weir reads what Wireshark reads:
//! TSO/GSO super-packets, Cisco HDLC, per-packet comments.
//!
//! Wireshark's reader is run as `capinfos` (its wiretap library, many files
//! per start) over the corpus, where starting `tshark` ~1,700 times would
//! take minutes, and as `tshark` itself wherever packets are compared field
//! by field. Without the tools these tests say SKIPPED loudly.

mod common;

use common::*;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use weir_wire::{decode, Packet, L3};

/// Whether `tool` runs here; says loudly when not.
fn have(tool: &str, what: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!(
            "\n!!!!!!!! SKIPPED: {tool} is missing (apt-get install tcpdump tshark); \
             {what} did NOT run. !!!!!!!!\n"
        );
    }
    ok
}

/// Packets, captured bytes and original (wire) bytes of a capture.
type View = (u64, u64, u64);

/// As libpcap reads it: tcpdump copies it to a pcap on stdout, whose
/// records are counted. `Err` with tcpdump's message when it refuses.
/// (libpcap clips a pcap record longer than the file's snap length to it;
/// a pcapng packet longer than its interface's it refuses.)
fn libpcap_view(path: &Path) -> Result<View, String> {
    let out = Command::new("tcpdump")
        .arg("-r")
        .arg(path)
        .args(["-w", "-"])
        .stdin(Stdio::null())
        .output()
        .expect("run tcpdump");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let b = &out.stdout;
    let le = match b.get(..4) {
        Some([0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1]) => true,
        Some([0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d]) => false,
        _ => return Err(format!("tcpdump wrote no pcap for {}", path.display())),
    };
    let u32_at = |at: usize| {
        let a: [u8; 4] = b[at..at + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let (mut at, mut view) = (24, (0, 0, 0));
    while at + 16 <= b.len() {
        let incl = u64::from(u32_at(at + 8));
        view = add(view, (1, incl, u64::from(u32_at(at + 12))));
        at += 16 + incl as usize;
    }
    assert_eq!(at, b.len(), "tcpdump's pcap tiles");
    Ok(view)
}

/// A file as wiretap reads it: its format, packets and original bytes
/// ("data size"); or capinfos's error.
type Wiretap = Result<(String, (u64, u64)), String>;

/// As Wireshark's wiretap reads them (`capinfos`), file by file.
fn wiretap_views(paths: &[PathBuf]) -> Vec<Wiretap> {
    paths
        .iter()
        .map(|p| {
            let out = Command::new("capinfos")
                .args(["-T", "-r", "-M", "-t", "-c", "-d"])
                .arg(p)
                .stdin(Stdio::null())
                .output()
                .expect("run capinfos");
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            if !out.status.success() || !err.is_empty() {
                return Err(err);
            }
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let f: Vec<&str> = text.trim_end().rsplitn(4, '\t').collect();
            let [bytes, packets, format, _name] = f[..] else {
                return Err(format!("capinfos said {text:?}"));
            };
            Ok((
                format.to_owned(),
                (packets.parse().unwrap(), bytes.parse().unwrap()),
            ))
        })
        .collect()
}

/// As weir reads it (up to an error).
fn weir_view(path: &Path) -> View {
    let mut r = weir_io::open_capture(path).unwrap();
    let mut view = (0, 0, 0);
    while let Ok(Some(f)) = r.next_frame() {
        view = add(view, (1, f.data.len() as u64, u64::from(f.orig_len)));
    }
    view
}

fn add(a: View, b: View) -> View {
    (a.0 + b.0, a.1 + b.1, a.2 + b.2)
}

/// The three capture outputs of one `weir run`.
struct Outputs {
    pass: PathBuf,
    drop: PathBuf,
    annotate: PathBuf,
}

fn run_all_outputs(input: &Path, dir: &Path, stem: &str) -> (Outputs, std::process::Output) {
    let outs = Outputs {
        pass: dir.join(format!("{stem}.pass")),
        drop: dir.join(format!("{stem}.drop")),
        annotate: dir.join(format!("{stem}.annotate.pcapng")),
    };
    let out = weir([
        OsStr::new("run"),
        demo_rules().as_os_str(),
        OsStr::new("-r"),
        input.as_os_str(),
        OsStr::new("-w"),
        outs.pass.as_os_str(),
        OsStr::new("--drop-out"),
        outs.drop.as_os_str(),
        OsStr::new("--annotate"),
        outs.annotate.as_os_str(),
        OsStr::new("-q"),
        OsStr::new("--log-file"),
        OsStr::new("/dev/null"),
    ]);
    (outs, out)
}

/// Checks one input's outputs: what weir wrote adds up to what it read;
/// libpcap and wiretap read each output, whenever they read the input, with
/// the packets and wire bytes weir wrote, and libpcap with the captured
/// bytes it reads from the input (pcap) or that weir wrote (pcapng).
fn check_outputs(input: &Path, outs: &Outputs, format: weir_io::Format) -> Vec<String> {
    let mut problems = Vec::new();
    let name = input.file_name().unwrap().to_string_lossy();
    let read = weir_view(input);
    let files = [&outs.pass, &outs.drop, &outs.annotate];
    let views: Vec<View> = files.iter().map(|p| weir_view(p)).collect();
    if add(views[0], views[1]) != read || views[2] != read {
        problems.push(format!(
            "{name}: read {read:?}, wrote pass+drop {:?}, annotate {:?}",
            add(views[0], views[1]),
            views[2]
        ));
    }
    let pcap_mirror = matches!(format, weir_io::Format::Pcap { .. });
    let input_libpcap = libpcap_view(input);
    let mut mirrored_caplen = Some(0);
    for (k, (file, want)) in files.iter().zip(&views).enumerate() {
        let is_pcap = pcap_mirror && k < 2;
        match libpcap_view(file) {
            Ok(got) if (got.0, got.2) != (want.0, want.2) || (!is_pcap && got.1 != want.1) => {
                problems.push(format!(
                    "{name}: libpcap reads {got:?} in {}, weir wrote {want:?}",
                    file.display()
                ))
            }
            Ok(got) => {
                if is_pcap {
                    mirrored_caplen = mirrored_caplen.map(|c| c + got.1);
                }
            }
            Err(e) if input_libpcap.is_ok() => problems.push(format!(
                "{name}: libpcap reads the input but not {}: {e}",
                file.display()
            )),
            Err(_) => mirrored_caplen = None,
        }
    }
    // libpcap clips pcap records to the snap length alike in the input and
    // in the pass and drop files, which keep its header.
    if let (true, Ok(input), Some(split)) = (pcap_mirror, &input_libpcap, mirrored_caplen) {
        if input.0 == read.0 && input.1 != split {
            problems.push(format!(
                "{name}: libpcap reads {} captured bytes in the input, {split} in pass+drop",
                input.1
            ));
        }
    }
    // Wireshark reads the outputs as it reads the input: the same packets
    // and wire bytes (some link types count a pseudo-header out of them).
    let input_wiretap = wiretap_views(&[input.to_path_buf()]).remove(0);
    let mirror_format = match format {
        weir_io::Format::Pcap { nanos: true, .. } => "nsecpcap",
        weir_io::Format::Pcap { .. } => "pcap",
        weir_io::Format::Pcapng => "pcapng",
    };
    let paths: Vec<PathBuf> = files.iter().map(|p| p.to_path_buf()).collect();
    let got = wiretap_views(&paths);
    for ((view, file), fmt) in got
        .iter()
        .zip(&files)
        .zip([mirror_format, mirror_format, "pcapng"])
    {
        match view {
            Ok((f, _)) if f != fmt => problems.push(format!(
                "{name}: wiretap reads {} as {f}, weir wrote {fmt}",
                file.display()
            )),
            Ok(_) => {}
            Err(e) if input_wiretap.is_ok() => problems.push(format!(
                "{name}: wiretap reads the input but not {}: {e}",
                file.display()
            )),
            Err(_) => {}
        }
    }
    if let (Ok((_, whole)), [Ok((_, pass)), Ok((_, drop)), Ok((_, annotated))]) =
        (&input_wiretap, &got[..])
    {
        // An input wiretap reads to its end, as weir does.
        if whole.0 == read.0 {
            let split = (pass.0 + drop.0, pass.1 + drop.1);
            if split != *whole || annotated != whole {
                problems.push(format!(
                    "{name}: wiretap reads {whole:?} in the input, {split:?} in pass+drop, {annotated:?} annotated"
                ));
            }
        }
    }
    problems
}

/// Runs one corpus file with every output; `None` if weir reads it but
/// wrote no capture (a pcapng that never described an interface), the
/// problems found otherwise. Files weir does not read at all are skipped.
fn check_corpus_file(input: &Path, dir: &Path, stem: &str) -> Option<Option<Vec<String>>> {
    let format = weir_io::open_capture(input).ok()?.format();
    let (outs, run) = run_all_outputs(input, dir, stem);
    assert!(
        matches!(run.status.code(), Some(0 | 1)),
        "{}: {}",
        input.display(),
        stderr(&run)
    );
    if !outs.annotate.exists() {
        assert!(
            stderr(&run).contains("not written: the capture described no interface"),
            "{}: {}",
            input.display(),
            stderr(&run)
        );
        return Some(None);
    }
    Some(Some(check_outputs(input, &outs, format)))
}

#[test]
fn every_corpus_output_is_read_by_libpcap_and_wireshark_as_weir_wrote_it() {
    if !have("tcpdump", "the corpus output check") || !have("capinfos", "the corpus output check") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension() != Some(OsStr::new("txt")))
        .collect();
    files.sort();
    // Two at a time: weir, tcpdump and capinfos start many times each.
    let results: Vec<Option<Vec<String>>> = std::thread::scope(|s| {
        let half = files.len().div_ceil(2);
        let workers: Vec<_> = files
            .chunks(half)
            .enumerate()
            .map(|(w, chunk)| {
                let dir = dir.path();
                s.spawn(move || {
                    chunk
                        .iter()
                        .enumerate()
                        .filter_map(|(k, input)| check_corpus_file(input, dir, &format!("{w}-{k}")))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|h| h.join().expect("corpus worker"))
            .collect()
    });
    let checked = results.iter().filter(|r| r.is_some()).count();
    let unwritten = results.len() - checked;
    let problems: Vec<String> = results.into_iter().flatten().flatten().collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked > 500, "only {checked} corpus files checked");
    eprintln!("{checked} corpus files: outputs read alike; {unwritten} without an interface");
}

/// A little-endian pcap: header, then records of `frames`.
fn pcap(snaplen: u32, link: u32, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut b = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, snaplen, link] {
        b.extend(v.to_le_bytes());
    }
    for (i, f) in frames.iter().enumerate() {
        for v in [1_700_000_000 + i as u32, 0, f.len() as u32, f.len() as u32] {
            b.extend(v.to_le_bytes());
        }
        b.extend(f);
    }
    b
}

/// An Ethernet frame of `len` bytes carrying IPv4/UDP to port 53.
fn eth_udp(len: usize) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    f.extend([0x08, 0x00]);
    f.extend(ipv4([10, 0, 0, 1], [10, 0, 0, 2], 17, 1234, 53, 0));
    let ip_len = (len - 14) as u16;
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f.resize(len, 0x5a);
    f
}

#[test]
fn snap_length_cases_are_read_by_libpcap_and_tshark() {
    if !have("tcpdump", "the snap-length check") || !have("tshark", "the snap-length check") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // tcpdump's snaplen64 case: the header says 64, the records hold 74
    // and more; libpcap reads such a pcap.
    let frames: Vec<Vec<u8>> = [74, 60, 90, 64].map(eth_udp).into();
    let input = d.join("snaplen64.pcap");
    fs::write(&input, pcap(64, 1, &frames)).unwrap();
    // libpcap reads it, each record clipped to 64 bytes; Wireshark whole.
    assert_eq!(libpcap_view(&input), Ok((4, 252, 288)));
    let (outs, run) = run_all_outputs(&input, d, "s64");
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let problems = check_outputs(
        &input,
        &outs,
        weir_io::Format::Pcap {
            nanos: false,
            big_endian: false,
        },
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    for file in [&outs.pass, &outs.drop, &outs.annotate] {
        let n = tshark_lines(file, &[], &["frame.cap_len"]);
        assert!(n.iter().all(|l| l.len() == 1), "{}", file.display());
        let bytes: u64 = n.iter().map(|l| l[0].parse::<u64>().unwrap()).sum();
        let (packets, caplen, _) = weir_view(file);
        assert_eq!(
            (n.len() as u64, bytes),
            (packets, caplen),
            "{}",
            file.display()
        );
    }
    // The annotated pcapng holds the records whole, and libpcap reads them so.
    assert_eq!(libpcap_view(&outs.annotate), Ok((4, 288, 288)));
}

/// `tshark -n -r FILE -T fields OPTIONS… -e FIELD…`, one vector of fields
/// per packet; panics if tshark fails.
fn tshark_lines(file: &Path, options: &[&str], fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-n").arg("-r").arg(file).args(["-T", "fields"]);
    cmd.args(options);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.stdin(Stdio::null()).output().expect("run tshark");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tshark on {}: {err}", file.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

/// weir's decoding of every frame of a capture.
fn decoded(path: &Path) -> Vec<Packet> {
    let mut r = weir_io::open_capture(path).unwrap();
    let mut v = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        v.push(decode(f.link_type, f.data, f.orig_len));
    }
    v
}

/// The first of a comma-separated tshark field (the outer header).
fn first(field: &str) -> Option<&str> {
    field.split(',').next().filter(|s| !s.is_empty())
}

/// Linux cooked headers, as `tcpdump -i any` writes them for an outgoing
/// packet: SLL (16 bytes) and SLL2 (20 bytes).
fn sll(protocol: u16) -> Vec<u8> {
    let mut h = vec![0, 4, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0];
    h.extend(protocol.to_be_bytes());
    h
}

fn sll2(protocol: u16) -> Vec<u8> {
    let mut h = protocol.to_be_bytes().to_vec();
    h.extend([0, 0, 0, 0, 0, 2, 0, 1, 4, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
    h
}

/// A TCP segment from port 41000 to 443 (ACK|PSH) with `payload` bytes.
fn tcp_segment(payload: usize) -> Vec<u8> {
    let mut t = vec![
        0xa0, 0x28, 0x01, 0xbb, 0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0,
    ];
    t.resize(20 + payload, 0x61);
    t
}

/// Super-packets as a Linux host with TSO/GSO and BIG TCP captures its own
/// sends: IPv4 total length 0 (BIG TCP past 64 KiB, and an ordinary TSO
/// segment under it), IPv6 payload length 0 with no hop-by-hop header.
fn super_packets() -> Vec<(u32, Vec<u8>)> {
    let v4 = |payload: usize| {
        let mut ip = vec![
            0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0, 192, 0, 2, 1, 198, 51, 100, 7,
        ];
        ip.extend(tcp_segment(payload));
        ip
    };
    let v6 = |payload: usize| {
        let mut ip = vec![0x60, 0, 0, 0, 0, 0, 6, 64];
        ip.extend([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        ip.extend([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        ip.extend(tcp_segment(payload));
        ip
    };
    vec![
        (113, [sll(0x0800), v4(80_000)].concat()),
        (113, [sll(0x0800), v4(2_896)].concat()),
        (276, [sll2(0x86dd), v6(90_000)].concat()),
        (276, [sll2(0x0800), v4(120_000)].concat()),
    ]
}

#[test]
fn tso_super_packets_are_read_as_wireshark_reads_them() {
    if !have("tshark", "the TSO comparison with Wireshark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = [
        "bigtcp-ipv4.pcap",
        "bigtcp-ipv4-geneve-ipv4.pcap",
        "bigtcp-ipv4-geneve-ipv6.pcap",
        "bigtcp-ipv4-vxlan-ipv6.pcap",
        "bigtcp-ipv6-geneve-ipv6.pcap",
        "bigtcp-ipv6-hbh.pcap",
        "bigtcp-ipv6-vxlan-ipv4.pcap",
        "bigtcp-ipv6-vxlan-ipv6.pcap",
        "ipv4_tcp_http_xml_tso.pcap",
        "icmp-length-zero.pcapng",
    ]
    .iter()
    .map(|f| corpus_dir().join(f))
    .collect();
    // The cooked-header captures, one file per link type.
    for link in [113, 276] {
        let frames: Vec<Vec<u8>> = super_packets()
            .into_iter()
            .filter(|(l, _)| *l == link)
            .map(|(_, f)| f)
            .collect();
        let path = dir.path().join(format!("tso-{link}.pcap"));
        fs::write(&path, pcap(262_144, link, &frames)).unwrap();
        files.push(path);
    }
    let fields = [
        "ip.len",
        "ipv6.plen",
        "ipv6.opt.jumbo",
        "ip.proto",
        "ipv6.nxt",
        "tcp.srcport",
        "tcp.dstport",
        "udp.srcport",
        "udp.dstport",
    ];
    let mut compared = 0;
    for file in &files {
        let ours = decoded(file);
        let theirs = tshark_lines(file, &["-o", "ipv6.tso_support:TRUE"], &fields);
        assert_eq!(ours.len(), theirs.len(), "{}", file.display());
        for (k, (p, t)) in ours.iter().zip(&theirs).enumerate() {
            let at = format!("{} packet {}", file.display(), k + 1);
            assert_eq!(p.l3, L3::Ip, "{at}: {p:?}");
            let get = |i: usize| first(&t[i]).map(|v| v.parse::<u32>().unwrap());
            let len = match (p.ip_version, get(1)) {
                (4, _) => get(0).unwrap(),
                // A jumbogram's length is in its hop-by-hop option.
                (_, Some(0)) => 40 + get(2).unwrap(),
                (_, plen) => 40 + plen.unwrap(),
            };
            assert_eq!(u32::from(p.ip_len), len.min(65_535), "{at}: IP length");
            assert!(p.l3_len >= len, "{at}: byte count {} < {len}", p.l3_len);
            if p.ip_version == 4 {
                assert_eq!(get(3), Some(u32::from(p.proto)), "{at}: protocol");
            }
            let ports = match p.proto {
                6 => (get(5), get(6)),
                17 => (get(7), get(8)),
                _ => (None, None),
            };
            if p.has_ports {
                let ours = (u32::from(p.src_port), u32::from(p.dst_port));
                assert_eq!((ports.0.unwrap(), ports.1.unwrap()), ours, "{at}: ports");
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 14, "every super-packet compared");
}

#[test]
fn cisco_hdlc_is_decoded_as_libpcap_and_tshark_see_it() {
    if !have("tcpdump", "the Cisco HDLC comparison") || !have("tshark", "the Cisco HDLC comparison")
    {
        return;
    }
    let files: Vec<PathBuf> = fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            weir_io::open_capture(p)
                .is_ok_and(|r| r.interfaces().first().is_some_and(|i| i.link_type.0 == 104))
        })
        .collect();
    assert!(
        files.len() >= 4,
        "the corpus's Cisco HDLC captures: {files:?}"
    );
    let mut ip_packets = 0;
    for file in &files {
        let ours = decoded(file);
        let bpf = |expr: &str| {
            let out = Command::new("tcpdump")
                .arg("-r")
                .arg(file)
                .args(["--count", expr])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.split_whitespace()
                .next()
                .and_then(|n| n.parse::<usize>().ok())
        };
        // libpcap's `ip or ip6` is the link's ethertype, as weir's IP (or
        // malformed IP) is.
        if let Some(n) = bpf("ip or ip6") {
            let claimed = ours.iter().filter(|p| p.l3 != L3::NonIp).count();
            assert_eq!(claimed, n, "{}: IP frames", file.display());
        }
        if let Some(n) = bpf("icmp") {
            let icmp = ours
                .iter()
                .filter(|p| p.l3 == L3::Ip && p.proto == 1)
                .count();
            assert_eq!(icmp, n, "{}: ICMP", file.display());
        }
        let theirs = tshark_lines(file, &[], &["ip.src", "ip.dst", "ip.proto"]);
        assert_eq!(ours.len(), theirs.len(), "{}", file.display());
        for (p, t) in ours.iter().zip(&theirs) {
            if p.l3 == L3::Ip && p.ip_version == 4 {
                let want = (first(&t[0]), first(&t[1]), first(&t[2]));
                let src = p.src_ip().to_string();
                let dst = p.dst_ip().to_string();
                let proto = p.proto.to_string();
                assert_eq!(
                    want,
                    (Some(&*src), Some(&*dst), Some(&*proto)),
                    "{}",
                    file.display()
                );
                ip_packets += 1;
            }
        }
    }
    assert!(
        ip_packets >= 10,
        "HDLC.pcap's ICMP echo packets: {ip_packets}"
    );
}

#[test]
fn packet_comments_are_kept_and_annotations_added_beside_them() {
    if !have("tshark", "the comment check") || !have("editcap", "the comment check") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = gen_trace(d, "t.pcap", 40, 12);
    let input = d.join("commented.pcapng");
    // Wireshark's own tool writes the comments.
    let ok = Command::new("editcap")
        .args([
            "-F",
            "pcapng",
            "-a",
            "1:from the capture",
            "-a",
            "7:second, with a comma",
        ])
        .arg(&plain)
        .arg(&input)
        .status()
        .unwrap();
    assert!(ok.success());
    let (outs, run) = run_all_outputs(&input, d, "c");
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let verdicts_out = run_verdicts(&demo_rules(), &input, &[]);
    let verdicts = parse_verdicts(&stdout(&verdicts_out));
    let comments = |f: &Path| -> Vec<String> {
        let mut cmd = Command::new("tshark");
        cmd.arg("-r").arg(f).args([
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=|",
            "-e",
            "frame.comment",
        ]);
        let out = cmd.output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let given = comments(&input);
    assert_eq!(given.len(), 40);
    assert_eq!(
        (given[0].as_str(), given[6].as_str()),
        ("from the capture", "second, with a comma")
    );
    // -w and --drop-out: each packet with the comment it came with.
    let passes = |v: &VerdictLine| passes(&v.action);
    let want_pass: Vec<&String> = verdicts
        .iter()
        .filter(|v| passes(v))
        .map(|v| &given[v.index as usize - 1])
        .collect();
    let want_drop: Vec<&String> = verdicts
        .iter()
        .filter(|v| !passes(v))
        .map(|v| &given[v.index as usize - 1])
        .collect();
    assert_eq!(comments(&outs.pass).iter().collect::<Vec<_>>(), want_pass);
    assert_eq!(comments(&outs.drop).iter().collect::<Vec<_>>(), want_drop);
    // --annotate: weir's comment after the capture's own.
    let annotated = comments(&outs.annotate);
    for (v, got) in verdicts.iter().zip(&annotated) {
        let ours = match v.rule {
            Some(r) => format!("rule {r} {}", v.action),
            None => format!("{} {}", v.note.replace(':', " "), v.action),
        };
        let had = &given[v.index as usize - 1];
        let want = if had.is_empty() {
            ours
        } else {
            format!("{had}|{ours}")
        };
        assert_eq!(got, &want, "packet {}", v.index);
    }
}
