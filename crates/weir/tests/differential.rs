//! Differential test: weir against libpcap (tcpdump) on every Ethernet
//! capture of the tcpdump corpus.
//!
//! Each case is an ipfw ruleset (allow rules; the implicit rule 65535 denies)
//! and a pcap-filter expression meant to select the same packets. For every
//! corpus file whose interfaces are all Ethernet (pcap and pcapng), the test
//! runs
//!
//! ```text
//! weir run RULES -r FILE -w weir.out -q --non-ip drop --verdicts v.csv
//! tcpdump --time-stamp-precision=nano -r FILE -w tcpdump.out 'EXPR'
//! ```
//!
//! and compares the sets of packets written, each packet identified by its
//! (timestamp, bytes) and mapped back to its number in the input.
//!
//! Known semantic differences, handled explicitly rather than fudged:
//!
//! * VLAN. libpcap's `tcp dst port 80` does not look behind an 802.1Q/802.1ad
//!   tag; weir (like ipfw behind a VLAN interface) does. Every expression is
//!   wrapped as `E or (vlan and (E or (vlan and (…))))`, nested as deep as
//!   weir walks tags (4). Nesting, not `E or (vlan and E) or (vlan and vlan
//!   and E)`, because libpcap's `vlan` shifts the offsets of everything after
//!   it in the expression.
//! * Truncated headers. weir refuses a packet whose L4 header ipfw could not
//!   pull up (and other undecodable IP), counting it malformed and dropping
//!   it; BPF just reads whatever bytes are there. Packets that weir's
//!   `--verdicts` file marks `malformed:` are left out of the comparison, and
//!   the test asserts separately that weir dropped every one of them.
//! * IPv6 extension headers. weir, like ipfw, walks the extension-header
//!   chain to the upper-layer header. libpcap's `tcp`, `port`, `ip6[…]` do
//!   not; `ip6 protochain N` walks the chain but only for the protocol, and
//!   nothing in pcap-filter reads a port or TCP flag behind an extension
//!   header. Protocol cases therefore use `ip6 protochain`; cases that look
//!   at ports or TCP flags leave out IPv6 packets whose first next-header is
//!   an extension header (hop-by-hop, routing, fragment, destination
//!   options, AH) and report how many they left out.
//! * Files tcpdump and weir read differently (a corrupt record part-way):
//!   the comparison covers the packets both read; `tcpdump -w` with no
//!   expression says how far libpcap gets. libpcap clips a record longer
//!   than the file's snap length (fuzzed captures), so BPF sees fewer bytes
//!   than weir: those packets are left out and counted. A record whose
//!   fraction of a second is out of range gets another timestamp from
//!   libpcap; it is matched on its bytes.
//!
//! The corpus's Ethernet captures hold little of some traffic (4 packets to
//! TCP port 80, 27 VLAN-tagged frames), so `weir gen -n 20000 --seed 7` and a
//! copy of it behind 802.1Q and QinQ tags are compared as well.
//!
//! ipfw's `ipttl`, `iplen` and `iptos` match IPv4 only (FreeBSD ip_fw2.c);
//! the `*_ipfw_semantics` cases pin that (this test found weir matching
//! them on IPv6 once), and the `*_v4` cases check the IPv4 side alone.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

fn corpus_dir() -> PathBuf {
    match std::env::var_os("WEIR_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../corpus/tcpdump-tests"
        )),
    }
}

/// One packet as read: timestamp in ns and the captured bytes.
type Rec = (u64, Vec<u8>);

/// An Ethernet capture of the corpus, read once by weir-io.
struct CorpusFile {
    path: PathBuf,
    name: String,
    frames: Vec<Rec>,
    /// Packets libpcap reads from this file (it may stop earlier or later
    /// than weir-io on a corrupt record).
    tcpdump_reads: usize,
    /// Per packet: for IPv6 whose first next-header is an extension
    /// header, that next-header.
    v6_ext: Vec<Option<u8>>,
    /// Per packet: carries at least one VLAN tag.
    vlan: Vec<bool>,
    /// Per packet: libpcap clipped it to the file's snap length (its
    /// captured length is larger), so BPF saw fewer bytes than weir.
    clipped: Vec<bool>,
    /// Per packet: libpcap reads another timestamp (see `to_indices`).
    odd_ts: Vec<bool>,
}

impl CorpusFile {
    /// Packets both tools read: the comparison's domain.
    fn domain(&self) -> usize {
        self.frames.len().min(self.tcpdump_reads)
    }
}

struct Corpus {
    files: Vec<CorpusFile>,
}

fn tcpdump_available() -> bool {
    Command::new("tcpdump")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Reads a capture with weir-io: its frames, whether every interface is
/// Ethernet, and whether reading stopped at an error.
fn read_capture(path: &Path) -> Option<(Vec<Rec>, bool)> {
    let mut reader = weir_io::open_capture(path).ok()?;
    let mut frames = Vec::new();
    let mut all_ethernet = true;
    // A corrupt record ends the reading, as it ends weir's.
    while let Ok(Some(f)) = reader.next_frame() {
        all_ethernet &= f.link_type.0 == 1;
        frames.push((f.ts_ns, f.data.to_vec()));
    }
    all_ethernet &=
        !reader.interfaces().is_empty() && reader.interfaces().iter().all(|i| i.link_type.0 == 1);
    Some((frames, all_ethernet))
}

/// Reads an output file, which must be readable to its end.
fn read_output(path: &Path) -> Vec<Rec> {
    let mut reader = weir_io::open_capture(path)
        .unwrap_or_else(|e| panic!("{}: cannot open output: {e}", path.display()));
    let mut frames = Vec::new();
    while let Some(f) = reader
        .next_frame()
        .unwrap_or_else(|e| panic!("{}: corrupt output: {e}", path.display()))
    {
        frames.push((f.ts_ns, f.data.to_vec()));
    }
    frames
}

/// Maps each written packet to its 0-based number in the input. Outputs keep
/// input order, so a greedy subsequence match is exact even for duplicates.
/// Packets past `limit` are dropped; anything else unmatched is an error.
/// `odd_ts` marks packets whose timestamp libpcap reads differently (an
/// out-of-range fraction of a second), matched on their bytes alone.
fn to_indices(
    written: &[Rec],
    input: &[Rec],
    odd_ts: &[bool],
    limit: usize,
) -> Result<BTreeSet<usize>, String> {
    let mut out = BTreeSet::new();
    let mut at = 0;
    for (k, w) in written.iter().enumerate() {
        while at < input.len()
            && !(same_bytes(&input[at], w) && (odd_ts.get(at) == Some(&true) || input[at].0 == w.0))
        {
            at += 1;
        }
        if at == input.len() {
            if input.len() >= limit {
                // Past what both read (libpcap read further than weir-io).
                break;
            }
            return Err(format!(
                "written packet {} (ts {} ns, {} bytes) is not in the input",
                k + 1,
                w.0,
                w.1.len()
            ));
        }
        if at < limit {
            out.insert(at);
        }
        at += 1;
    }
    Ok(out)
}

/// Whether `written` has the bytes of the input packet `read`. libpcap clips a record
/// whose captured length exceeds the file's snap length to the snap length,
/// so a tcpdump output may hold a prefix of what weir-io read.
fn same_bytes(read: &Rec, written: &Rec) -> bool {
    read.1.starts_with(&written.1)
}

/// Ethernet frame → (has a VLAN tag, for IPv6 the extension header that
/// follows the fixed header).
fn classify(frame: &[u8]) -> (bool, Option<u8>) {
    let be16 = |at: usize| {
        frame
            .get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    let mut at = 12;
    let mut tagged = false;
    let mut ethertype = be16(at);
    for _ in 0..4 {
        match ethertype {
            Some(0x8100 | 0x88a8 | 0x9100) => {
                tagged = true;
                at += 4;
                ethertype = be16(at);
            }
            _ => break,
        }
    }
    let l3 = at + 2;
    let ext = match (ethertype, frame.get(l3 + 6)) {
        (Some(0x86dd), Some(&nh @ (0 | 43 | 44 | 51 | 60))) => Some(nh),
        _ => None,
    };
    (tagged, ext)
}

fn tcpdump(file: &Path, out: &Path, expr: &str) -> std::process::Output {
    let mut cmd = Command::new("tcpdump");
    cmd.arg("--time-stamp-precision=nano")
        .arg("-r")
        .arg(file)
        .arg("-w")
        .arg(out);
    if !expr.is_empty() {
        cmd.arg(expr);
    }
    let o = cmd.output().expect("run tcpdump");
    assert!(
        out.exists(),
        "tcpdump -r {} '{expr}' wrote nothing: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Reads one capture and how libpcap reads it; `None` unless all Ethernet.
fn load(path: &Path, scratch_name: &str) -> Option<CorpusFile> {
    let Some((frames, true)) = read_capture(path) else {
        return None;
    };
    let out = scratch().join(format!("all-{scratch_name}.pcap"));
    tcpdump(path, &out, "");
    let all = read_output(&out);
    // Packet k of libpcap's reading must be packet k of weir-io's, up to
    // where the first of the two stopped.
    for (k, (read, written)) in frames.iter().zip(&all).enumerate() {
        assert!(
            same_bytes(read, written),
            "{}: packet {} differs between libpcap and weir-io",
            path.display(),
            k + 1
        );
    }
    let clipped = frames
        .iter()
        .zip(&all)
        .map(|(read, written)| written.1.len() < read.1.len())
        .collect();
    // A record whose fraction of a second is out of range (some fuzzed
    // captures): libpcap and weir-io scale it differently.
    let odd_ts = frames
        .iter()
        .zip(&all)
        .map(|(read, written)| read.0 != written.0)
        .collect();
    let tcpdump_reads = all.len();
    let (vlan, v6_ext) = frames.iter().map(|f| classify(&f.1)).unzip();
    Some(CorpusFile {
        name: path.file_name().unwrap().to_string_lossy().into_owned(),
        path: path.to_path_buf(),
        frames,
        tcpdump_reads,
        v6_ext,
        vlan,
        clipped,
        odd_ts,
    })
}

/// A scratch directory under the target directory.
fn scratch() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("differential");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `weir gen -n 20000 --seed 7`, and the same frames with VLAN tags: one in
/// three untagged, one behind an 802.1Q tag, one behind QinQ (an 802.1ad
/// outer tag, then 802.1Q).
fn generated_traces() -> Vec<PathBuf> {
    let plain = scratch().join("generated-seed7.pcap");
    let status = Command::new(WEIR)
        .args(["gen", "-n", "20000", "--seed", "7", "-o"])
        .arg(&plain)
        .status()
        .unwrap();
    assert!(status.success(), "weir gen failed");
    let tagged = scratch().join("generated-seed7-vlan-qinq.pcap");
    let (frames, _) = read_capture(&plain).unwrap();
    let mut reader = weir_io::open_capture(&plain).unwrap();
    let link = reader.next_frame().unwrap().unwrap().link_type;
    let out = std::io::BufWriter::new(std::fs::File::create(&tagged).unwrap());
    let mut w = weir_io::PcapWriter::new(out, link, 65535, true).unwrap();
    for (k, (ts, data)) in frames.iter().enumerate() {
        let vid = (k % 4000 + 1) as u16;
        let [hi, lo] = vid.to_be_bytes();
        let tags: &[u8] = match k % 3 {
            1 => &[0x81, 0x00, hi, lo],
            2 => &[0x88, 0xa8, 0x00, 100, 0x81, 0x00, hi, lo],
            _ => &[],
        };
        let mut frame = data.clone();
        if frame.len() >= 12 {
            frame.splice(12..12, tags.iter().copied());
        }
        w.write_frame(*ts, frame.len() as u32, &frame).unwrap();
    }
    w.flush().unwrap();
    vec![plain, tagged]
}

fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = corpus_dir();
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("corpus {}: {e} (set WEIR_CORPUS)", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
            .collect();
        paths.sort();
        let files = Mutex::new(Vec::new());
        parallel(paths.len(), |k| {
            if let Some(f) = load(&paths[k], &k.to_string()) {
                files.lock().unwrap().push(f);
            }
        });
        let mut files = files.into_inner().unwrap();
        assert!(
            files.len() >= 100,
            "only {} Ethernet captures in {}",
            files.len(),
            dir.display()
        );
        // The corpus's Ethernet captures are light on some traffic (4
        // packets to TCP port 80, one ICMP echo request, 27 VLAN-tagged
        // frames), so a generated trace and a copy of it behind 802.1Q and
        // QinQ tags are compared too.
        for path in generated_traces() {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            files.push(load(&path, &name).expect("generated trace is Ethernet"));
        }
        files.sort_by(|a, b| a.name.cmp(&b.name));
        Corpus { files }
    })
}

/// Runs `job(0..n)` on all CPUs.
fn parallel(n: usize, job: impl Fn(usize) + Sync) {
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= n {
                    break;
                }
                job(k);
            });
        }
    });
}

/// Wraps a pcap expression so it also applies behind up to `depth` VLAN tags.
fn behind_vlans(expr: &str, depth: usize) -> String {
    if depth == 0 {
        format!("({expr})")
    } else {
        format!("({expr}) or (vlan and {})", behind_vlans(expr, depth - 1))
    }
}

/// Which packets a case leaves out because pcap-filter cannot express it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Skip {
    Nothing,
    /// IPv6 with an extension header first: ports/flags behind it are
    /// out of libpcap's reach.
    V6Ext,
    /// The same, except a fragment header straight after the IPv6 header,
    /// which the expression reads.
    V6ExtNotFrag,
}

struct Case {
    rules: &'static str,
    expr: &'static str,
    skip: Skip,
    /// Packets both must pass over the whole corpus, so the case can fail.
    min_passed: usize,
}

#[derive(Default)]
struct Totals {
    files: usize,
    files_with_pass: usize,
    compared: usize,
    passed_both: usize,
    malformed: usize,
    skipped_v6_ext: usize,
    /// Records longer than the snap length, which libpcap clips.
    clipped: usize,
    /// Of the skipped, how many weir passed (where the two could differ).
    skipped_weir_passed: usize,
    vlan_passed: usize,
    mismatches: Vec<String>,
}

fn parse_verdicts(path: &Path) -> (BTreeSet<usize>, BTreeSet<usize>, BTreeSet<usize>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut allow = BTreeSet::new();
    let mut malformed = BTreeSet::new();
    let mut malformed_allowed = BTreeSet::new();
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.splitn(4, ',').collect();
        assert_eq!(cols.len(), 4, "verdict line {line:?}");
        let index: usize = cols[0].parse().unwrap();
        let index = index - 1;
        if cols[2] == "allow" {
            allow.insert(index);
        }
        if cols[3].starts_with("malformed:") {
            malformed.insert(index);
            if cols[2] != "deny" {
                malformed_allowed.insert(index);
            }
        }
    }
    (allow, malformed, malformed_allowed)
}

fn run_case(name: &str, case: &Case) -> Totals {
    if !tcpdump_available() {
        eprintln!(
            "\n!!!!!!!! SKIPPED differential::{name}: tcpdump is not on PATH; \
             install it (apt-get install tcpdump) to compare weir with libpcap !!!!!!!!\n"
        );
        return Totals::default();
    }
    let corpus = corpus();
    let tmp = tempfile::tempdir().unwrap();
    let rules = tmp.path().join("case.rules");
    std::fs::write(&rules, case.rules).unwrap();
    let expr = behind_vlans(case.expr, 4);
    let totals = Mutex::new(Totals::default());
    parallel(corpus.files.len(), |k| {
        let file = &corpus.files[k];
        let weir_out = tmp.path().join(format!("weir-{k}.out"));
        let verdicts = tmp.path().join(format!("v-{k}.csv"));
        let tcpdump_out = tmp.path().join(format!("tcpdump-{k}.pcap"));
        let w = Command::new(WEIR)
            .arg("run")
            .arg(&rules)
            .arg("-r")
            .arg(&file.path)
            .arg("-w")
            .arg(&weir_out)
            .arg("--verdicts")
            .arg(&verdicts)
            .args(["-q", "--non-ip", "drop"])
            .output()
            .unwrap();
        // 1: a corrupt record part-way; what came before is still decided.
        assert!(
            matches!(w.status.code(), Some(0 | 1)),
            "weir run on {}: {:?}: {}",
            file.name,
            w.status,
            String::from_utf8_lossy(&w.stderr)
        );
        tcpdump(&file.path, &tcpdump_out, &expr);

        let domain = file.domain();
        let (allow, malformed, malformed_allowed) = parse_verdicts(&verdicts);
        let weir_pass = to_indices(&read_output(&weir_out), &file.frames, &file.odd_ts, domain)
            .unwrap_or_else(|e| panic!("{}: weir output: {e}", file.name));
        let pcap_pass = to_indices(
            &read_output(&tcpdump_out),
            &file.frames,
            &file.odd_ts,
            domain,
        )
        .unwrap_or_else(|e| panic!("{}: tcpdump output: {e}", file.name));
        let allow_in_domain: BTreeSet<usize> =
            allow.iter().copied().filter(|&i| i < domain).collect();
        assert_eq!(
            weir_pass, allow_in_domain,
            "{}: weir's -w file and its --verdicts disagree",
            file.name
        );

        let mut t = Totals {
            files: 1,
            ..Totals::default()
        };
        for (i, frame) in file.frames.iter().enumerate().take(domain) {
            if malformed.contains(&i) {
                t.malformed += 1;
                if malformed_allowed.contains(&i) {
                    t.mismatches.push(format!(
                        "{} #{}: weir passed a packet it calls malformed",
                        file.name,
                        i + 1
                    ));
                }
                continue;
            }
            let (by_weir, by_pcap) = (weir_pass.contains(&i), pcap_pass.contains(&i));
            if file.clipped[i] {
                t.clipped += 1;
                continue;
            }
            let skip = match case.skip {
                Skip::Nothing => false,
                Skip::V6Ext => file.v6_ext[i].is_some(),
                Skip::V6ExtNotFrag => file.v6_ext[i].is_some_and(|nh| nh != 44),
            };
            if skip {
                t.skipped_v6_ext += 1;
                t.skipped_weir_passed += usize::from(by_weir);
                continue;
            }
            t.compared += 1;
            if by_weir && by_pcap {
                t.passed_both += 1;
                t.vlan_passed += usize::from(file.vlan[i]);
            } else if by_weir != by_pcap {
                t.mismatches.push(format!(
                    "{} #{} ({} bytes): weir {}, tcpdump {}",
                    file.name,
                    i + 1,
                    frame.1.len(),
                    if by_weir { "passed" } else { "dropped" },
                    if by_pcap { "passed" } else { "dropped" },
                ));
            }
        }
        t.files_with_pass = usize::from(t.passed_both > 0);
        let mut all = totals.lock().unwrap();
        all.files += t.files;
        all.files_with_pass += t.files_with_pass;
        all.compared += t.compared;
        all.passed_both += t.passed_both;
        all.malformed += t.malformed;
        all.skipped_v6_ext += t.skipped_v6_ext;
        all.clipped += t.clipped;
        all.skipped_weir_passed += t.skipped_weir_passed;
        all.vlan_passed += t.vlan_passed;
        all.mismatches.extend(t.mismatches);
    });
    let mut t = totals.into_inner().unwrap();
    t.mismatches.sort();
    let mut report = String::new();
    let _ = writeln!(
        report,
        "differential::{name}: rules {:?} vs {:?}\n  {} files ({} with passes), {} packets compared, \
         {} passed by both ({} VLAN-tagged), {} malformed left out (all dropped by weir), \
         {} IPv6-ext left out ({} of them passed by weir), {} over-snaplen left out, {} mismatches",
        case.rules.trim(),
        case.expr,
        t.files,
        t.files_with_pass,
        t.compared,
        t.passed_both,
        t.vlan_passed,
        t.malformed,
        t.skipped_v6_ext,
        t.skipped_weir_passed,
        t.clipped,
        t.mismatches.len()
    );
    for m in t.mismatches.iter().take(40) {
        let _ = writeln!(report, "    {m}");
    }
    eprint!("{report}");
    assert!(
        t.mismatches.is_empty(),
        "{name}: weir and tcpdump disagree:\n{report}"
    );
    assert!(
        t.passed_both >= case.min_passed,
        "{name}: only {} packets passed by both (want >= {}); the case tests nothing",
        t.passed_both,
        case.min_passed
    );
    t
}

macro_rules! cases {
    ($( $(#[$attr:meta])* $name:ident: $rules:expr, $expr:expr, $skip:expr, $min:expr; )*) => {
        $(
            #[test]
            $(#[$attr])*
            fn $name() {
                run_case(stringify!($name), &Case { rules: $rules, expr: $expr, skip: $skip, min_passed: $min });
            }
        )*
    };
}

use Skip::{Nothing, V6Ext, V6ExtNotFrag};

/// `iplen 0-100,1400-1500`. A total length of 0 is a TSO super-packet,
/// whose length weir takes from the frame (as Wireshark does): here the
/// wire length less the 14-byte Ethernet header (the corpus's TSO frames
/// are untagged; a tagged one would make the case fail, not pass).
const IPLEN_EXPR: &str =
    "ip and ((ip[2:2] != 0 and (ip[2:2] <= 100 or (ip[2:2] >= 1400 and ip[2:2] <= 1500))) \
     or (ip[2:2] == 0 and (len - 14 <= 100 or (len - 14 >= 1400 and len - 14 <= 1500))))";

cases! {
    // Ports. `tcp dst port 80` covers IPv4 and IPv6 without extension headers.
    tcp_dst_port_80:
        "allow tcp from any to any 80\n",
        "tcp dst port 80", V6Ext, 900;
    udp_port_53_both_directions:
        "allow udp from any 53 to any\nallow udp from any to any 53\n",
        "udp port 53", V6Ext, 1500;
    tcp_port_ranges:
        "allow tcp from any 1024-65535 to any 1024-65535\n",
        "tcp src portrange 1024-65535 and tcp dst portrange 1024-65535", V6Ext, 2500;
    udp_port_list_and_ranges:
        "allow udp from any to any 67-68,123,161-162,500\n",
        "udp dst portrange 67-68 or udp dst port 123 or udp dst portrange 161-162 or udp dst port 500",
        V6Ext, 20;
    // ipfw: a negated port list is true for a packet without ports (a later
    // fragment), as is libpcap's `not … port`.
    tcp_not_port_80:
        "allow tcp from any to any not 80\n",
        "tcp and not tcp dst port 80", V6Ext, 10000;

    // Addresses and nets.
    src_host:
        "allow ip from 131.151.32.21 to any\n",
        "ip src host 131.151.32.21", Nothing, 100;
    dst_net_10_8:
        "allow ip from any to 10.0.0.0/8\n",
        "ip dst net 10.0.0.0/8", Nothing, 9000;
    // An IPv4 prefix never matches an IPv6 packet, so its negation does;
    // libpcap's `net` is false for IPv6 too. `ip or ip6`: libpcap's `not net`
    // alone would also take ARP, which ipfw never sees.
    not_net_192_168:
        "allow ip from not 192.168.0.0/16 to not 192.168.0.0/16\n",
        "(ip or ip6) and not net 192.168.0.0/16", Nothing, 20000;
    src_and_dst_with_port:
        "allow udp from 10.0.0.0/8 to 10.0.0.0/8 1-1023\n",
        "ip src net 10.0.0.0/8 and ip dst net 10.0.0.0/8 and udp dst portrange 1-1023",
        Nothing, 5;
    ipv6_src_prefix:
        "allow ip from fe80::/10 to any\n",
        "ip6 src net fe80::/10", Nothing, 400;
    ipv6_dst_host:
        "allow ip6 from any to 10::2\n",
        "ip6 dst host 10::2", Nothing, 10;
    ipv6_multicast_dst:
        "allow ip from any to ff00::/8\n",
        "ip6 dst net ff00::/8", Nothing, 400;

    // Protocols. `ip6 protochain` walks extension headers as weir does.
    icmp:
        "allow icmp from any to any\n",
        "ip proto 1 or ip6 protochain 1", Nothing, 1500;
    icmp_echo_request:
        "allow icmp from any to any icmptypes 8\n",
        "icmp[icmptype] == icmp-echo", Nothing, 600;
    icmp_types_list:
        "allow icmp from any to any icmptypes 0,3,11\n",
        "icmp[icmptype] == icmp-echoreply or icmp[icmptype] == icmp-unreach or icmp[icmptype] == icmp-timxceed",
        Nothing, 10;
    gre:
        "allow gre from any to any\n",
        "ip proto 47 or ip6 protochain 47", Nothing, 150;
    ipv6_icmp:
        "allow ipv6-icmp from any to any\n",
        "ip6 protochain 58 or ip proto 58", Nothing, 800;
    ipversion_6:
        "allow ip from any to any ipversion 6\n",
        "ip6", Nothing, 2000;

    // TCP flags. libpcap's `tcp[…]` is IPv4 only; the IPv6 half reads the
    // flags byte 13 bytes into a TCP header that follows the fixed header.
    tcp_syn_without_ack:
        "allow tcp from any to any tcpflags syn,!ack\n",
        "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn \
         or (ip6 and ip6[6] == 6 and ip6[53] & 0x12 == 0x02)", V6Ext, 900;
    tcp_setup:
        "allow tcp from any to any setup\n",
        "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn \
         or (ip6 and ip6[6] == 6 and ip6[53] & 0x12 == 0x02)", V6Ext, 900;
    tcp_established:
        "allow tcp from any to any established\n",
        "tcp[tcpflags] & (tcp-ack|tcp-rst) != 0 \
         or (ip6 and ip6[6] == 6 and ip6[53] & 0x14 != 0)", V6Ext, 10000;
    tcp_fin_or_rst_to_port_range:
        "allow tcp from any to any 1-1023 tcpflags fin\nallow tcp from any to any 1-1023 tcpflags rst\n",
        "tcp dst portrange 1-1023 and (tcp[tcpflags] & (tcp-fin|tcp-rst) != 0 \
         or (ip6 and ip6[6] == 6 and ip6[53] & 0x05 != 0))", V6Ext, 600;

    // Fragments: a non-zero offset, IPv4 or an IPv6 fragment header.
    frag:
        "allow ip from any to any frag\n",
        "ip[6:2] & 0x1fff != 0 or (ip6 and ip6[6] == 44 and ip6[42:2] & 0xfff8 != 0)",
        V6ExtNotFrag, 200;

    // IP header fields, IPv4. ipfw's ipttl, iplen and iptos are IPv4-only
    // (ip_fw2.c: O_IPLEN/O_IPTTL `if (is_ipv4)`, O_IPTOS `is_ipv4 && …`).
    ipttl_v4:
        "allow ip from any to any ipversion 4 ipttl 1-64\n",
        "ip and ip[8] >= 1 and ip[8] <= 64", Nothing, 15000;
    iplen_v4:
        "allow ip from any to any ipversion 4 iplen 0-100,1400-1500\n",
        IPLEN_EXPR, Nothing, 12000;
    iptos_v4:
        "allow ip from any to any ipversion 4 iptos lowdelay\n",
        "ip and ip[1] & 0x10 != 0", Nothing, 50;
    ipttl_ipfw_semantics:
        "allow ip from any to any ipttl 1-64\n",
        "ip and ip[8] >= 1 and ip[8] <= 64", Nothing, 15000;
    iplen_ipfw_semantics:
        "allow ip from any to any iplen 0-100,1400-1500\n",
        IPLEN_EXPR, Nothing, 12000;
    iptos_ipfw_semantics:
        "allow ip from any to any iptos lowdelay\n",
        "ip and ip[1] & 0x10 != 0", Nothing, 50;

    // More header fields. ipid is IPv4 only (O_IPID `if (is_ipv4)`); dscp
    // reads the IPv6 traffic class too; the TCP fields need a TCP header at
    // offset 0 (libpcap's `tcp[…]` checks neither inside arithmetic, hence
    // the explicit `tcp` and offset test in tcpdatalen).
    ipid:
        "allow ip from any to any ipid 0-1000\n",
        "ip and ip[4:2] <= 1000", Nothing, 200;
    dscp_not_zero:
        "allow ip from any to any not dscp 0\n",
        "(ip and ip[1] & 0xfc != 0) or (ip6 and (ip6[0:2] >> 6) & 0x3f != 0)", Nothing, 100;
    dscp_ef_or_cs6:
        "allow ip from any to any dscp ef,cs6\n",
        "(ip and (ip[1] & 0xfc == 0xb8 or ip[1] & 0xfc == 0xc0)) \
         or (ip6 and ((ip6[0:2] >> 6) & 0x3f == 46 or (ip6[0:2] >> 6) & 0x3f == 48))",
        Nothing, 10;
    tcpwin:
        "allow tcp from any to any tcpwin 0-1024\n",
        "tcp[14:2] <= 1024 or (ip6 and ip6[6] == 6 and ip6[54:2] <= 1024)", V6Ext, 1000;
    tcpseq:
        "allow tcp from any to any tcpseq 0\n",
        "tcp[4:4] == 0 or (ip6 and ip6[6] == 6 and ip6[44:4] == 0)", V6Ext, 30;
    tcpack:
        "allow tcp from any to any tcpack 0\n",
        "tcp[8:4] == 0 or (ip6 and ip6[6] == 6 and ip6[48:4] == 0)", V6Ext, 50;
    tcpdatalen:
        "allow tcp from any to any tcpdatalen 0\n",
        "(ip and tcp and ip[6:2] & 0x1fff == 0 \
          and ip[2:2] - ((ip[0] & 0xf) << 2) - ((tcp[12] & 0xf0) >> 2) == 0) \
         or (ip6 and ip6[6] == 6 and ip6[4:2] - ((ip6[52] & 0xf0) >> 2) == 0)", V6Ext, 1000;

    // MAC header, in the layer-2 pass (net.link.ether.ipfw=1): the rules
    // see every Ethernet frame there, ARP included, so the expression is
    // not limited to IP. The IP pass then allows.
    mac_src:
        "net.link.ether.ipfw=1\nallow ip from any to any mac any 02:00:00:00:00:01\n\
         deny ip from any to any layer2\nallow ip from any to any\n",
        "ether src 02:00:00:00:00:01", Nothing, 5000;
    mac_type:
        "net.link.ether.ipfw=1\nallow ip from any to any mac-type arp,ipv6\n\
         deny ip from any to any layer2\nallow ip from any to any\n",
        "arp or ip6", Nothing, 1000;
}

/// Everything IP, tagged or not. VLAN and QinQ frames are compared by every
/// case; this one makes sure plenty of them are, corpus frames included.
#[test]
fn all_ip_including_vlan_and_qinq() {
    let case = Case {
        rules: "allow ip from any to any\n",
        expr: "ip or ip6",
        skip: Nothing,
        min_passed: 20000,
    };
    let t = run_case("all_ip_including_vlan_and_qinq", &case);
    if tcpdump_available() {
        assert!(
            t.vlan_passed >= 10000,
            "{} VLAN-tagged packets passed",
            t.vlan_passed
        );
        let corpus_vlan: usize = corpus()
            .files
            .iter()
            .filter(|f| !f.name.starts_with("generated-"))
            .map(|f| f.vlan.iter().filter(|&&v| v).count())
            .sum();
        assert!(
            corpus_vlan >= 20,
            "corpus VLAN-tagged frames: {corpus_vlan}"
        );
    }
}
