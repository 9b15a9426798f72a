//! Helpers shared by the CLI and golden tests: run the real binary, read
//! captures back, parse the verdicts CSV and pcapng comments.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The `weir` binary built for this test run.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_weir")
}

/// Runs `weir ARGS...` with stdin closed and returns its output.
pub fn weir<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("spawn weir")
}

/// Runs weir and insists on exit 0; returns the output.
pub fn weir_ok<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<_> = args
        .into_iter()
        .map(|a| a.as_ref().to_os_string())
        .collect();
    let out = weir(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "weir {args:?} failed\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("stderr is UTF-8")
}

/// The bundled `rules/demo.rules`.
pub fn demo_rules() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("rules/demo.rules")
}

/// `weir gen -n N --seed S -o DIR/NAME`, returning the path.
pub fn gen_trace(dir: &Path, name: &str, n: u64, seed: u64) -> PathBuf {
    let path = dir.join(name);
    weir_ok([
        OsStr::new("gen"),
        OsStr::new("-n"),
        OsStr::new(&n.to_string()),
        OsStr::new("--seed"),
        OsStr::new(&seed.to_string()),
        OsStr::new("-o"),
        path.as_os_str(),
    ]);
    path
}

/// One frame read back from a capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rec {
    pub ts_ns: u64,
    pub link_type: u32,
    pub orig_len: u32,
    pub data: Vec<u8>,
    pub offset: u64,
}

/// A whole capture read with weir-io.
pub struct Capture {
    pub format: weir_io::Format,
    pub link_types: Vec<u32>,
    pub frames: Vec<Rec>,
}

pub fn read_capture(path: &Path) -> Capture {
    let mut r =
        weir_io::open_capture(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut frames = Vec::new();
    while let Some(f) = r
        .next_frame()
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
    {
        frames.push(Rec {
            ts_ns: f.ts_ns,
            link_type: f.link_type.0,
            orig_len: f.orig_len,
            data: f.data.to_vec(),
            offset: f.offset,
        });
    }
    Capture {
        format: r.format(),
        link_types: r.interfaces().iter().map(|i| i.link_type.0).collect(),
        frames,
    }
}

/// Byte offsets of every record in a little-endian pcap file.
pub fn pcap_record_offsets(bytes: &[u8]) -> Vec<usize> {
    assert_eq!(
        &bytes[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "LE microsecond pcap"
    );
    let mut offs = Vec::new();
    let mut off = 24;
    while off + 16 <= bytes.len() {
        offs.push(off);
        let incl = u32::from_le_bytes(bytes[off + 8..off + 12].try_into().unwrap()) as usize;
        off += 16 + incl;
    }
    assert_eq!(off, bytes.len(), "pcap records tile the file");
    offs
}

/// One line of `--verdicts`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerdictLine {
    pub index: u64,
    /// `None` for `-` (non-IP and malformed frames).
    pub rule: Option<u32>,
    pub action: String,
    pub note: String,
}

/// Parses a verdicts CSV, checking the header and that indices run 1..=N.
pub fn parse_verdicts(text: &str) -> Vec<VerdictLine> {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("index,rule,action,note"), "CSV header");
    let v: Vec<VerdictLine> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 4, "four CSV fields in {l:?}");
            VerdictLine {
                index: f[0].parse().unwrap_or_else(|_| panic!("index in {l:?}")),
                rule: if f[1] == "-" {
                    None
                } else {
                    Some(f[1].parse().unwrap_or_else(|_| panic!("rule in {l:?}")))
                },
                action: f[2].to_owned(),
                note: f[3].to_owned(),
            }
        })
        .collect();
    for (k, l) in v.iter().enumerate() {
        assert_eq!(l.index, k as u64 + 1, "verdict indices run 1..=N");
    }
    v
}

/// Whether a verdict line's action lets the packet through.
pub fn passes(action: &str) -> bool {
    match action {
        "allow" => true,
        "deny" | "reject" | "reset" | "unreach" => false,
        a if a.starts_with("unreach") => false,
        a => panic!("not a terminal action: {a}"),
    }
}

/// Packets of a pcapng file with their `opt_comment`s, parsed by hand.
pub struct NgPacket {
    pub iface: u32,
    /// Raw timestamp in units of the interface's `if_tsresol`.
    pub ts: u64,
    pub data: Vec<u8>,
    pub comments: Vec<String>,
}

pub struct Ng {
    pub link_types: Vec<u16>,
    /// Per IDB: `if_tsresol` as a power of ten (6 when absent).
    pub tsresol: Vec<u8>,
    pub packets: Vec<NgPacket>,
}

/// A small little-endian pcapng parser: SHB, IDB, EPB (with options).
pub fn parse_pcapng(b: &[u8]) -> Ng {
    let u32le = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let u16le = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().unwrap());
    assert_eq!(u32le(0), 0x0A0D_0D0A, "starts with an SHB");
    assert_eq!(u32le(8), 0x1A2B_3C4D, "little-endian section");
    let mut ng = Ng {
        link_types: Vec::new(),
        tsresol: Vec::new(),
        packets: Vec::new(),
    };
    let mut off = 0;
    while off < b.len() {
        let typ = u32le(off);
        let len = u32le(off + 4) as usize;
        assert!(len >= 12 && len & 3 == 0, "block length {len} at {off}");
        assert_eq!(
            u32le(off + len - 4) as usize,
            len,
            "trailing length at {off}"
        );
        let body = off + 8..off + len - 4;
        match typ {
            1 => {
                ng.link_types.push(u16le(body.start));
                let mut res = 6;
                let mut opt = body.start + 8;
                while opt + 4 <= body.end {
                    let (code, olen) = (u16le(opt), u16le(opt + 2) as usize);
                    if code == 0 {
                        break;
                    }
                    if code == 9 {
                        res = b[opt + 4];
                        assert!(res & 0x80 == 0, "power-of-ten resolution");
                    }
                    opt += 4 + olen.div_ceil(4) * 4;
                }
                ng.tsresol.push(res);
            }
            6 => {
                let s = body.start;
                let caplen = u32le(s + 12) as usize;
                let data = b[s + 20..s + 20 + caplen].to_vec();
                let mut opt = s + 20 + caplen.div_ceil(4) * 4;
                let mut comments = Vec::new();
                while opt + 4 <= body.end {
                    let (code, olen) = (u16le(opt), u16le(opt + 2) as usize);
                    if code == 0 {
                        break;
                    }
                    if code == 1 {
                        comments.push(
                            String::from_utf8(b[opt + 4..opt + 4 + olen].to_vec())
                                .expect("comment is UTF-8"),
                        );
                    }
                    opt += 4 + olen.div_ceil(4) * 4;
                }
                ng.packets.push(NgPacket {
                    iface: u32le(s),
                    ts: (u64::from(u32le(s + 4)) << 32) | u64::from(u32le(s + 8)),
                    data,
                    comments,
                });
            }
            _ => {}
        }
        off += len;
    }
    assert_eq!(off, b.len(), "blocks tile the file");
    ng
}

/// The corpus of tcpdump test captures (`WEIR_CORPUS` overrides).
pub fn corpus_dir() -> PathBuf {
    match std::env::var_os("WEIR_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../corpus/tcpdump-tests"
        )),
    }
}

/// Whether strace can trace here; says loudly when not, so a skipped check
/// is seen in the test output. `what` names the check that will not run.
pub fn strace_usable(what: &str) -> bool {
    let ok = Command::new("strace")
        .args(["-f", "-c", "-o", "/dev/null", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "\n!!!!!!!! SKIPPED: strace is missing or cannot trace here \
             (apt-get install strace; ptrace must be allowed); {what} did NOT run. !!!!!!!!\n"
        );
    }
    ok
}

/// An IPv4 packet with a TCP (proto 6) or UDP (17) header, for traces
/// written by tests; checksums are not checked by the decoder, so they
/// stay zero.
pub fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, sport: u16, dport: u16, flags: u8) -> Vec<u8> {
    let l4_len = if proto == 6 { 20 } else { 8 };
    let total = 20 + l4_len;
    let mut b = vec![0x45, 0, 0, total as u8, 0, 0, 0x40, 0, 64, proto, 0, 0];
    b.extend_from_slice(&src);
    b.extend_from_slice(&dst);
    b.extend_from_slice(&sport.to_be_bytes());
    b.extend_from_slice(&dport.to_be_bytes());
    if proto == 6 {
        b.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    } else {
        b.extend_from_slice(&[0, 8, 0, 0]);
    }
    b
}

/// A raw-IP pcap of `(timestamp ns, packet)`.
pub fn write_trace(dir: &Path, name: &str, packets: &[(u64, Vec<u8>)]) -> PathBuf {
    let path = dir.join(name);
    let file = std::fs::File::create(&path).unwrap();
    let mut w = weir_io::PcapWriter::new(file, weir_wire::LinkType::RAW, 65535, true).unwrap();
    for (ts, data) in packets {
        w.write_frame(*ts, data.len() as u32, data).unwrap();
    }
    w.flush().unwrap();
    path
}

/// `DIR/rules.conf` with this text.
pub fn write_rules(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("rules.conf");
    std::fs::write(&path, text).unwrap();
    path
}

/// `weir run RULES -r TRACE --verdicts - -q EXTRA…`, whatever its exit.
pub fn run_verdicts(rules: &Path, trace: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "run".to_owned(),
        rules.display().to_string(),
        "-r".into(),
        trace.display().to_string(),
        "--verdicts".into(),
        "-".into(),
        "-q".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    weir(&args)
}

/// `rule,action` per packet of a verdicts CSV on stdout (`-` for none).
pub fn rule_actions(out: &Output) -> Vec<String> {
    parse_verdicts(&stdout(out))
        .into_iter()
        .map(|v| {
            let rule = v.rule.map_or("-".into(), |r| r.to_string());
            format!("{rule},{}", v.action)
        })
        .collect()
}

/// The `summary` object of `weir run --json` output.
pub fn json_summary(out: &Output) -> serde_json::Value {
    let json: serde_json::Value = serde_json::from_str(&stdout(out)).expect("JSON output");
    json["weir"]
        .as_array()
        .expect("a weir array")
        .iter()
        .find_map(|i| i.get("summary"))
        .expect("a summary")
        .clone()
}
