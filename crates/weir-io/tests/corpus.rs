//! The tcpdump test-suite captures: real traffic and deliberately broken
//! files. The reader must never panic on any of them, must read nearly all of
//! them to the end, and must agree with tcpdump on packet counts.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use weir_io::{open_capture, CaptureError};

const CORPUS: &str = "../../corpus/tcpdump-tests";

fn corpus_dir() -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join(CORPUS);
    d.is_dir().then_some(d)
}

fn corpus_files() -> Vec<PathBuf> {
    let Some(dir) = corpus_dir() else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("pcap" | "pcapng")
            )
        })
        .collect();
    files.sort();
    files
}

/// Frames read, and the error that stopped reading early, if any.
fn count(path: &Path) -> (usize, Option<CaptureError>) {
    let mut r = match open_capture(path) {
        Ok(r) => r,
        Err(e) => return (0, Some(e)),
    };
    let mut n = 0;
    let mut last_offset = None;
    loop {
        match r.next_frame() {
            Ok(Some(f)) => {
                assert!(last_offset < Some(f.offset), "offsets increase");
                last_offset = Some(f.offset);
                n += 1;
            }
            Ok(None) => return (n, None),
            Err(e) => {
                assert!(e.offset().is_some(), "{e}");
                return (n, Some(e));
            }
        }
    }
}

#[test]
fn corpus_reads_without_panic() {
    let files = corpus_files();
    if files.is_empty() {
        eprintln!("corpus not found; skipping");
        return;
    }
    let (mut full, mut broken, mut frames) = (0, Vec::new(), 0);
    for p in &files {
        let (n, err) = count(p);
        frames += n;
        if std::env::var_os("WEIR_CORPUS_COUNTS").is_some() {
            eprintln!("COUNT {} {n}", p.display());
        }
        match err {
            None => full += 1,
            Some(e) => broken.push(format!("{}: {e}", p.file_name().unwrap().to_string_lossy())),
        }
    }
    eprintln!(
        "{} files: {full} read fully, {} with errors, {frames} frames",
        files.len(),
        broken.len()
    );
    for b in &broken {
        eprintln!("  {b}");
    }
    assert!(files.len() > 500);
    // The broken files in this corpus are broken in their packets, not their
    // framing: tcpdump reads all 566 to the end without complaint, and so do
    // we. Allow a little slack for files added later.
    assert!(broken.len() * 100 <= files.len(), "{broken:#?}");
}

/// First-line timestamps ("sec.usec") from `tcpdump -tt -n -r`, or `None`
/// when tcpdump is not installed. Continuation lines start with whitespace.
fn tcpdump_stamps(path: &Path) -> Option<Vec<String>> {
    let out = Command::new("tcpdump")
        .args(["-tt", "-n", "-r"])
        .arg(path)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    assert!(out.status.success(), "tcpdump failed on {}", path.display());
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.lines()
            .filter_map(|l| l.split(' ').next())
            .filter(|t| {
                t.split_once('.').is_some_and(|(s, f)| {
                    !s.is_empty()
                        && f.len() == 6
                        && (s.bytes().chain(f.bytes())).all(|b| b.is_ascii_digit())
                })
            })
            .map(str::to_owned)
            .collect(),
    )
}

#[test]
fn corpus_counts_and_timestamps_match_tcpdump() {
    let Some(dir) = corpus_dir() else {
        eprintln!("corpus not found; skipping");
        return;
    };
    // Both byte orders, both resolutions, pcapng with several link types, and
    // files whose packets tcpdump prints over many lines.
    let picks = [
        "afs.pcap",
        "arp-oobr.pcap",
        "AoE_Linux.pcap",
        "ipoib.pcap",
        "pptp.pcap",
        "nfs-attr-oobr.pcap",
        "timed_1.pcap",
        "OSPFv2_Capture_FINAL.pcapng",
        "of13_ericsson.pcapng",
        "nhrp.pcapng",
        "vsock-1.pcapng",
        "hdlc_slarp.pcapng",
    ];
    for name in picks {
        let path = dir.join(name);
        let Some(theirs) = tcpdump_stamps(&path) else {
            eprintln!("tcpdump not in PATH; skipping cross-check");
            return;
        };
        let mut r = open_capture(&path).unwrap();
        let mut ours = Vec::new();
        while let Some(f) = r.next_frame().unwrap() {
            let (s, ns) = (f.ts_ns / 1_000_000_000, f.ts_ns % 1_000_000_000);
            ours.push(format!("{s}.{:06}", ns / 1_000));
        }
        assert!(!ours.is_empty(), "{name}");
        assert_eq!(ours, theirs, "{name}");
    }
}

#[test]
fn corpus_mirror_roundtrip() {
    for p in corpus_files() {
        let bytes = std::fs::read(&p).unwrap();
        let (_, ifaces, frames) = common::read_all(&bytes);
        let out = common::mirror(&bytes, |i| (i % 2 == 0).then(|| format!("c{i}")));
        let (_, ifaces2, frames2) = common::read_all(&out);
        let a: Vec<_> = frames.iter().map(common::Owned::content).collect();
        let b: Vec<_> = frames2.iter().map(common::Owned::content).collect();
        assert_eq!(a, b, "{}", p.display());
        // Interfaces that never carried a frame may be left out.
        assert!(ifaces.starts_with(&ifaces2), "{}", p.display());
    }
}
