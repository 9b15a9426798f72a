//! The weir-against-libpcap harness: a ruleset and a pcap-filter expression
//! meant to select the same packets, compared over every Ethernet capture of
//! the tcpdump corpus and a generated trace (with copies behind VLAN tags).
//! `differential.rs` documents the known differences it handles; its cases
//! and the conformance corpus's (`conformance.rs`) both run through
//! [`run_case`].
#![allow(dead_code)]

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
pub struct CorpusFile {
    path: PathBuf,
    pub name: String,
    frames: Vec<Rec>,
    /// Packets libpcap reads from this file (it may stop earlier or later
    /// than weir-io on a corrupt record).
    tcpdump_reads: usize,
    /// Per packet: for IPv6 whose first next-header is an extension
    /// header, that next-header.
    v6_ext: Vec<Option<u8>>,
    /// Per packet: carries at least one VLAN tag.
    pub vlan: Vec<bool>,
    /// Per packet: libpcap clipped it to the file's snap length (its
    /// captured length is larger), so BPF saw fewer bytes than weir.
    clipped: Vec<bool>,
    /// Per packet: libpcap reads another timestamp (see `to_indices`).
    odd_ts: Vec<bool>,
    /// Some interface has a name (pcapng `if_name`), which `--iface` does
    /// not replace.
    names_interfaces: bool,
}

impl CorpusFile {
    /// Packets both tools read: the comparison's domain.
    fn domain(&self) -> usize {
        self.frames.len().min(self.tcpdump_reads)
    }
}

pub struct Corpus {
    pub files: Vec<CorpusFile>,
}

pub fn tcpdump_available() -> bool {
    Command::new("tcpdump")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Reads a capture with weir-io: its frames, whether every interface is
/// Ethernet, and whether any interface has a name.
fn read_capture(path: &Path) -> Option<(Vec<Rec>, bool, bool)> {
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
    let named = reader.interfaces().iter().any(|i| i.name.is_some());
    Some((frames, all_ethernet, named))
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
    let Some((frames, true, names_interfaces)) = read_capture(path) else {
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
        names_interfaces,
    })
}

/// A scratch directory under the target directory.
fn scratch() -> PathBuf {
    // One directory per test binary: two of them may run at once.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(env!("CARGO_CRATE_NAME"));
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
    let (frames, _, _) = read_capture(&plain).unwrap();
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

pub fn corpus() -> &'static Corpus {
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
pub enum Skip {
    Nothing,
    /// IPv6 with an extension header first: ports/flags behind it are
    /// out of libpcap's reach.
    V6Ext,
    /// The same, except a fragment header straight after the IPv6 header,
    /// which the expression reads.
    V6ExtNotFrag,
}

pub struct Case<'a> {
    pub rules: &'a str,
    pub expr: &'a str,
    pub skip: Skip,
    /// Packets both must pass over the whole corpus, so the case can fail.
    pub min_passed: usize,
    /// Packets both must drop (compared ones: IP, decodable), so a case
    /// whose rule denies can fail on its matching side too.
    pub min_dropped: usize,
    /// More `weir run` arguments: replay context, `--default-allow`.
    pub args: &'a [&'a str],
    /// The rules test the interface `--iface` names, which names only a
    /// capture's unnamed interfaces: captures that name theirs are left out.
    pub iface_by_flag: bool,
}

#[derive(Default)]
pub struct Totals {
    files: usize,
    files_with_pass: usize,
    compared: usize,
    pub passed_both: usize,
    dropped_both: usize,
    malformed: usize,
    skipped_v6_ext: usize,
    /// Packets of captures left out because they name their interfaces.
    named_iface: usize,
    /// Records longer than the snap length, which libpcap clips.
    clipped: usize,
    /// Of the skipped, how many weir passed (where the two could differ).
    skipped_weir_passed: usize,
    pub vlan_passed: usize,
    mismatches: Vec<String>,
}

/// A verdicts file's packets (0-based) by kind.
struct Verdicts {
    /// Let through: allowed, or handed to a subsystem that accepts it
    /// (`pipe 1` with one_pass set); everything but the deny actions.
    passed: BTreeSet<usize>,
    malformed: BTreeSet<usize>,
    malformed_allowed: BTreeSet<usize>,
    non_ip: BTreeSet<usize>,
}

fn parse_verdicts(path: &Path) -> Verdicts {
    let text = std::fs::read_to_string(path).unwrap();
    let mut v = Verdicts {
        passed: BTreeSet::new(),
        malformed: BTreeSet::new(),
        malformed_allowed: BTreeSet::new(),
        non_ip: BTreeSet::new(),
    };
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.splitn(4, ',').collect();
        assert_eq!(cols.len(), 4, "verdict line {line:?}");
        let index: usize = cols[0].parse().unwrap();
        let index = index - 1;
        let action = cols[2].split_whitespace().next().unwrap_or("");
        let denies = matches!(
            action,
            "deny"
                | "drop"
                | "reject"
                | "reset"
                | "reset6"
                | "unreach"
                | "unreach6"
                | "abort"
                | "abort6"
        );
        if !denies {
            v.passed.insert(index);
        }
        if cols[3].starts_with("malformed:") {
            v.malformed.insert(index);
            if !denies {
                v.malformed_allowed.insert(index);
            }
        }
        if cols[3] == "non-ip" {
            v.non_ip.insert(index);
        }
    }
    v
}

pub fn run_case(name: &str, case: &Case) -> Totals {
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
        if case.iface_by_flag && file.names_interfaces {
            totals.lock().unwrap().named_iface += file.domain();
            return;
        }
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
            .args(case.args)
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
        let Verdicts {
            passed: allow,
            malformed,
            malformed_allowed,
            non_ip,
        } = parse_verdicts(&verdicts);
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
            if !by_weir && !by_pcap {
                // Non-IP frames are dropped by construction (--non-ip drop).
                t.dropped_both += usize::from(!non_ip.contains(&i));
            } else if by_weir && by_pcap {
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
        all.dropped_both += t.dropped_both;
        all.malformed += t.malformed;
        all.skipped_v6_ext += t.skipped_v6_ext;
        all.named_iface += t.named_iface;
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
        "{name}: rules {:?} {:?} vs {:?}\n  {} files ({} with passes), {} packets compared, \
         {} passed by both ({} VLAN-tagged), {} dropped by both, {} malformed left out (all dropped by weir), \
         {} IPv6-ext left out ({} of them passed by weir), {} over-snaplen left out, {} in captures naming their interfaces left out, {} mismatches",
        case.rules.trim(),
        case.args,
        case.expr,
        t.files,
        t.files_with_pass,
        t.compared,
        t.passed_both,
        t.vlan_passed,
        t.dropped_both,
        t.malformed,
        t.skipped_v6_ext,
        t.skipped_weir_passed,
        t.clipped,
        t.named_iface,
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
    assert!(
        t.dropped_both >= case.min_dropped,
        "{name}: only {} packets dropped by both (want >= {}); the case tests nothing",
        t.dropped_both,
        case.min_dropped
    );
    t
}
