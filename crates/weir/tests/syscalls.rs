//! The ppp lesson as a test: nothing on the non-logging path makes a system
//! call per packet.
//!
//! FreeBSD ppp called `getprotobynumber()` (open/read/close of
//! /etc/protocols) for every packet. Here `strace -f -c` counts the system
//! calls of `weir run` over generated traces of N and 10×N packets and the
//! test asserts that:
//!
//! * every system call other than read/write (and their vectored and
//!   positioned variants) is made exactly as often for 10×N packets as for N
//!   — start-up and shut-down work only; memory-mapping calls (mmap, munmap,
//!   mremap, brk) may differ by a few, because the allocator may map one
//!   more arena page or trim differently when the capture is larger, but
//!   never in proportion to the packets;
//! * reads and writes are no more than one per 64 KiB of bytes moved (input
//!   read plus outputs written) plus a small constant: buffered I/O, far
//!   fewer than one per packet.
//!
//! With `log` rules, the log's extra writes are bounded by the lines logged
//! divided by the lines a 64 KiB buffer holds.

mod common;
use common::strace_usable;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");
const N: u64 = 20_000;
/// weir's smallest I/O buffer (the log's and the capture writers' are
/// 64 KiB or more; the reader's is 1 MiB).
const BUF: u64 = 64 * 1024;
/// Reads and writes that are not bulk data: headers, the final partial
/// buffers, /etc/protocols and /etc/services, the ruleset, /proc reads of
/// the runtime, the end-of-file read.
const RW_SLACK: u64 = 64;
/// How much the memory-mapping calls may differ between N and 10×N.
const MMAP_SLACK: u64 = 8;

const RW: &[&str] = &[
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2",
    "pwritev2",
];
const MMAP: &[&str] = &["mmap", "munmap", "mremap", "brk"];

fn demo_rules() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/rules/demo.rules")).unwrap()
}

/// The ruleset without `log` and `logamount N`.
fn without_log(rules: &str) -> String {
    let mut out = String::new();
    for line in rules.lines() {
        let mut words = line.split_whitespace();
        let mut kept = Vec::new();
        while let Some(w) = words.next() {
            match w {
                "log" => {}
                "logamount" => {
                    words.next();
                }
                _ => kept.push(w),
            }
        }
        out.push_str(&kept.join(" "));
        out.push('\n');
    }
    out
}

fn gen(dir: &Path, count: u64) -> PathBuf {
    let path = dir.join(format!("trace-{count}.pcap"));
    let status = Command::new(WEIR)
        .args(["gen", "-n", &count.to_string(), "--seed", "7", "-o"])
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success(), "weir gen -n {count}");
    path
}

/// System calls of one traced replay, and the bytes it moved.
struct Run {
    calls: BTreeMap<String, u64>,
    bytes_moved: u64,
    log_lines: u64,
    log_bytes: u64,
    max_log_line: u64,
}

impl Run {
    fn sum(&self, names: &[&str]) -> u64 {
        names
            .iter()
            .map(|n| self.calls.get(*n).copied().unwrap_or(0))
            .sum()
    }

    fn rw(&self) -> u64 {
        self.sum(RW)
    }
}

/// Parses the table `strace -c` writes: `% time  seconds  usecs/call  calls
/// [errors]  syscall`.
fn parse_strace_c(text: &str) -> BTreeMap<String, u64> {
    let mut calls = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if !(5..=6).contains(&f.len()) || f[0].parse::<f64>().is_err() {
            continue;
        }
        let name = *f.last().unwrap();
        if name == "total" {
            continue;
        }
        let n: u64 = f[3]
            .parse()
            .unwrap_or_else(|_| panic!("strace line {line:?}"));
        calls.insert(name.to_owned(), n);
    }
    assert!(calls.contains_key("execve"), "no strace table in:\n{text}");
    calls
}

fn traced_run(dir: &Path, rules: &Path, trace: &Path, tag: &str) -> Run {
    let out = |name: &str| dir.join(format!("{tag}-{name}"));
    let summary = out("strace.txt");
    let log = out("log.txt");
    let o = Command::new("strace")
        // cargo's LD_LIBRARY_PATH only makes the loader probe more
        // directories at start-up; weir does not need it.
        .env_remove("LD_LIBRARY_PATH")
        .args(["-f", "-c", "-o"])
        .arg(&summary)
        .arg(WEIR)
        .arg("run")
        .arg(rules)
        .arg("-r")
        .arg(trace)
        .arg("-w")
        .arg(out("pass.pcap"))
        .arg("--drop-out")
        .arg(out("drop.pcap"))
        .arg("--verdicts")
        .arg(out("v.csv"))
        .arg("--log-file")
        .arg(&log)
        .arg("-q")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "weir run under strace: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    Run {
        calls: parse_strace_c(&std::fs::read_to_string(&summary).unwrap()),
        bytes_moved: size(trace)
            + size(&out("pass.pcap"))
            + size(&out("drop.pcap"))
            + size(&out("v.csv"))
            + size(&log),
        log_lines: log_text.lines().count() as u64,
        log_bytes: log_text.len() as u64,
        max_log_line: log_text
            .lines()
            .map(|l| l.len() as u64 + 1)
            .max()
            .unwrap_or(1),
    }
}

/// Asserts that nothing but buffered I/O grows from `small` to `large`.
fn assert_flat(what: &str, small: &Run, large: &Run, packets: (u64, u64)) {
    let mut names: Vec<&String> = small.calls.keys().chain(large.calls.keys()).collect();
    names.sort();
    names.dedup();
    let mut table = format!(
        "{what}: system calls for {} and {} packets\n  {:<16} {:>10} {:>10}\n",
        packets.0, packets.1, "syscall", packets.0, packets.1
    );
    for n in &names {
        let (a, b) = (
            small.calls.get(*n).copied().unwrap_or(0),
            large.calls.get(*n).copied().unwrap_or(0),
        );
        table.push_str(&format!("  {n:<16} {a:>10} {b:>10}\n"));
    }
    table.push_str(&format!(
        "  bytes moved: {} and {}; read+write: {} and {}\n",
        small.bytes_moved,
        large.bytes_moved,
        small.rw(),
        large.rw()
    ));
    eprint!("{table}");
    for n in names {
        let (a, b) = (
            small.calls.get(n).copied().unwrap_or(0),
            large.calls.get(n).copied().unwrap_or(0),
        );
        if RW.contains(&n.as_str()) {
            continue;
        }
        if MMAP.contains(&n.as_str()) {
            assert!(
                a.abs_diff(b) <= MMAP_SLACK,
                "{what}: {n} went from {a} to {b}\n{table}"
            );
        } else {
            assert_eq!(a, b, "{what}: {n} grows with the packet count\n{table}");
        }
    }
    for (run, pkts) in [(small, packets.0), (large, packets.1)] {
        let bound = run.bytes_moved / BUF + RW_SLACK;
        assert!(
            run.rw() <= bound,
            "{what}: {} reads+writes for {} bytes moved (bound {bound})\n{table}",
            run.rw(),
            run.bytes_moved
        );
        assert!(
            run.rw() * 50 < pkts,
            "{what}: {} reads+writes for {pkts} packets\n{table}",
            run.rw()
        );
    }
    // The growth itself is bulk I/O: at most one call per 64 KiB more moved.
    let extra_bytes = large.bytes_moved - small.bytes_moved;
    assert!(
        large.rw().saturating_sub(small.rw()) <= extra_bytes / BUF + RW_SLACK,
        "{what}: read+write grew by {} for {extra_bytes} more bytes\n{table}",
        large.rw() - small.rw()
    );
}

struct Fixture {
    dir: tempfile::TempDir,
    small: PathBuf,
    large: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let small = gen(dir.path(), N);
    let large = gen(dir.path(), 10 * N);
    Fixture { dir, small, large }
}

#[test]
fn no_syscall_per_packet_without_logging() {
    if !strace_usable("the per-packet system-call check") {
        return;
    }
    let f = fixture();
    let rules = f.dir.path().join("demo-nolog.rules");
    let text = without_log(&demo_rules());
    assert!(!text.split_whitespace().any(|w| w == "log"));
    std::fs::write(&rules, text).unwrap();
    let small = traced_run(f.dir.path(), &rules, &f.small, "nolog-small");
    let large = traced_run(f.dir.path(), &rules, &f.large, "nolog-large");
    assert_eq!(small.log_lines + large.log_lines, 0, "nothing logs");
    assert_flat("without log", &small, &large, (N, 10 * N));
}

#[test]
fn logging_adds_only_buffered_writes() {
    if !strace_usable("the per-packet system-call check") {
        return;
    }
    let f = fixture();
    let dir = f.dir.path();
    // The demo ruleset as shipped (a few log rules with small logamounts),
    // plus a count rule that logs every UDP packet up to 100000 lines, so
    // the log is big enough to need many buffers.
    let rules = dir.join("demo-log.rules");
    std::fs::write(
        &rules,
        format!(
            "1 count log logamount 100000 udp from any to any\n{}",
            demo_rules()
        ),
    )
    .unwrap();
    let nolog = dir.join("demo-nolog.rules");
    std::fs::write(&nolog, without_log(&demo_rules())).unwrap();

    let small = traced_run(dir, &rules, &f.small, "log-small");
    let large = traced_run(dir, &rules, &f.large, "log-large");
    assert!(small.log_lines > 1000, "{} lines logged", small.log_lines);
    assert_flat("with log", &small, &large, (N, 10 * N));

    // Against the same replay without logging, the extra writes are the
    // log's buffers: lines logged / lines per buffer, plus the last one.
    for (run, trace, tag) in [(&small, &f.small, "small"), (&large, &f.large, "large")] {
        let base = traced_run(dir, &nolog, trace, &format!("base-{tag}"));
        let extra = run.sum(&["write", "writev"]) as i64 - base.sum(&["write", "writev"]) as i64;
        let lines_per_buffer = BUF / run.max_log_line;
        let bound = run.log_lines / lines_per_buffer + 2;
        eprintln!(
            "with log ({tag}): {} lines, {} bytes logged; {extra} extra writes (bound {bound})",
            run.log_lines, run.log_bytes
        );
        assert!(
            extra <= bound as i64,
            "{tag}: {extra} extra writes for {} log lines (bound {bound})",
            run.log_lines
        );
        // Apart from reads and writes, logging costs only opening the log.
        for (n, &c) in &run.calls {
            if RW.contains(&n.as_str()) || MMAP.contains(&n.as_str()) {
                continue;
            }
            let b = base.calls.get(n).copied().unwrap_or(0);
            assert!(
                c <= b + 4,
                "{tag}: {n}: {c} calls with logging, {b} without"
            );
        }
    }
}
