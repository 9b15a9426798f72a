//! Every documented memory cap holds for the whole process: each is driven
//! to its limit in a child `weir`, whose peak resident memory (`wait4`'s
//! `ru_maxrss`) must stay under the cap plus [`BASE`], and a value past the
//! cap is refused with the cap named.
//!
//! The caps, as README.md and ARCHITECTURE.md state them:
//! - the state table: `dyn_max` at most 1048576, and then at most 416 MiB;
//! - a lookup table: at most 4M entries, loaded within 512 MiB;
//! - captures: pcapng blocks of at most 16 MiB (pcap records 256 KiB), so
//!   reading holds at most that beside its 1 MiB chunk.
//!
//! `ru_maxrss` also counts the pages the child shared with this process
//! before it ran `weir`, so these tests keep their own memory small (files
//! are written as streams) and check that a small run stays under `BASE`.

mod common;

use common::*;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const MIB: u64 = 1 << 20;

/// What a `weir` process takes besides the capped structure: code, stacks,
/// the read chunk and output buffers (about 5 MiB measured).
const BASE: u64 = 16 * MIB;

struct Measured {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// Peak resident memory of the child, bytes.
    peak: u64,
}

/// Runs `weir ARGS` and waits for it with `wait4`, which reports the peak
/// resident memory of exactly that child.
fn measured<I, S>(args: I) -> Measured
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    // Reaped by wait4 below, which std's `wait` would not let us call.
    #[allow(clippy::zombie_processes)]
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn weir");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            r.read_to_string(&mut s).expect("child output is UTF-8");
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let (code, peak) = sys::wait4(child.id());
    Measured {
        code,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        peak,
    }
}

// wait4 (the only call that reports one child's peak memory) has no safe
// wrapper in std or rustix; this module holds the one unsafe call.
#[allow(unsafe_code)]
mod sys {
    /// Reaps child `pid`: its exit code (None if a signal ended it) and
    /// its peak resident memory in bytes.
    pub fn wait4(pid: u32) -> (Option<i32>, u64) {
        let pid = pid as libc::pid_t;
        let mut status = 0;
        // SAFETY: rusage is plain integers, so all-zero is a valid value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are to live locals wait4 only writes.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
        let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        // Linux reports kibibytes.
        (code, usage.ru_maxrss as u64 * 1024)
    }
}

/// A raw-IP pcap of `n` UDP packets from `n` different sources, all in
/// the first second (no state expires).
fn flood(dir: &Path, n: u32) -> PathBuf {
    let path = dir.join("flood.pcap");
    let file = BufWriter::new(File::create(&path).unwrap());
    let mut w = weir_io::PcapWriter::new(file, weir_wire::LinkType::RAW, 65535, true).unwrap();
    for k in 0..n {
        let src = (0x0a00_0000 + k).to_be_bytes();
        let p = ipv4(src, [192, 0, 2, 1], 17, 1024, 53, 0);
        w.write_frame(u64::from(k), p.len() as u32, &p).unwrap();
    }
    w.flush().unwrap();
    path
}

#[test]
fn the_state_table_stays_within_its_cap() {
    let cap = weir_rules::DYN_MAX_CAP;
    let dir = tempfile::tempdir().unwrap();
    let trace = flood(dir.path(), cap + 1000);
    // Every source its own state and its own limit counter: the most a
    // state can cost.
    let rules = write_rules(dir.path(), "allow udp from any to any limit src-addr 1\n");
    let run = |dyn_max: u32| {
        let sysctl = format!("dyn_max={dyn_max}");
        let m = measured([
            "run".as_ref(),
            rules.as_os_str(),
            "-r".as_ref(),
            trace.as_os_str(),
            "--sysctl".as_ref(),
            sysctl.as_ref(),
            "--json".as_ref(),
            "-q".as_ref(),
        ]);
        assert_eq!(m.code, Some(0), "{}", m.stderr);
        let json: serde_json::Value = serde_json::from_str(&m.stdout).unwrap();
        let summary = json["weir"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|i| i.get("summary"))
            .unwrap()
            .clone();
        (summary["states"]["stats"]["created"].as_u64(), m.peak)
    };
    let (small_created, small_peak) = run(1);
    assert_eq!(small_created, Some(1));
    assert!(
        small_peak < BASE,
        "a small run took {} MiB",
        small_peak / MIB
    );
    let (created, peak) = run(cap);
    assert_eq!(
        created,
        Some(u64::from(cap)),
        "the table filled up to the cap"
    );
    eprintln!(
        "peak {} MiB at dyn_max={cap}, {} MiB at dyn_max=1",
        peak / MIB,
        small_peak / MIB
    );
    assert!(peak <= 416 * MIB + BASE, "peak {} MiB", peak / MIB);
    // One past the cap is refused, naming it, on the command line and in
    // a ruleset.
    let over = format!("dyn_max={}", cap + 1);
    let out = weir([
        "run".as_ref(),
        rules.as_os_str(),
        "-r".as_ref(),
        trace.as_os_str(),
        "--sysctl".as_ref(),
        over.as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("dyn_max 1048577 is over the cap of 1048576 states"),
        "{}",
        stderr(&out)
    );
    let in_file = write_rules(
        dir.path(),
        &format!("net.inet.ip.fw.{over}\nallow ip from any to any\n"),
    );
    let out = weir(["check".as_ref(), in_file.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(":1:1: dyn_max 1048577 is over the cap of 1048576 states"),
        "{}",
        stderr(&out)
    );
}

/// A table file of `n` distinct IPv6 prefixes, each with its own value:
/// the costliest table there is.
fn ipv6_table(dir: &Path, n: u64) -> PathBuf {
    let path = dir.join(format!("t{n}.txt"));
    let mut w = BufWriter::new(File::create(&path).unwrap());
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for k in 0..n {
        // splitmix64 for the high bits, the index in the low ones: distinct.
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let addr = (u128::from(z) << 64) | u128::from(k);
        writeln!(w, "{}/128 {k}", std::net::Ipv6Addr::from(addr)).unwrap();
    }
    w.flush().unwrap();
    path
}

#[test]
fn a_table_at_its_cap_loads_within_its_memory_cap() {
    let max = weir_table::Limits::default().max_entries as u64;
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), "allow ip from table(t) to any\n");
    let check = |table: &Path| {
        let arg = format!("t={}", table.display());
        measured([
            "check".as_ref(),
            rules.as_os_str(),
            "--table".as_ref(),
            arg.as_ref(),
        ])
    };
    let small = check(&ipv6_table(dir.path(), 1000));
    assert_eq!(small.code, Some(0), "{}", small.stderr);
    assert!(
        small.peak < BASE,
        "a small run took {} MiB",
        small.peak / MIB
    );
    let big_file = ipv6_table(dir.path(), max);
    let big = check(&big_file);
    assert_eq!(big.code, Some(0), "{}", big.stderr);
    eprintln!(
        "peak {} MiB with {max} IPv6 entries, {} MiB with 1000",
        big.peak / MIB,
        small.peak / MIB
    );
    assert!(big.peak <= 512 * MIB + BASE, "peak {} MiB", big.peak / MIB);
    // One entry more is refused, naming the cap.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&big_file)
        .unwrap();
    writeln!(f, "2001:db8::/32 1").unwrap();
    drop(f);
    let over = check(&big_file);
    assert_eq!(over.code, Some(2));
    assert!(
        over.stderr.contains(&format!(
            ":{}:1: table t: table is over its cap of {max} entries",
            max + 1
        )),
        "{}",
        over.stderr
    );
}

/// A pcapng with one enhanced packet block of `total` bytes in all (a
/// multiple of 4), written as a stream.
fn pcapng_one_block(dir: &Path, name: &str, total: u32) -> PathBuf {
    let path = dir.join(name);
    let mut w = BufWriter::new(File::create(&path).unwrap());
    let mut block =
        |kind: u32, fields: &[u8], body_len: u32, body: &mut dyn FnMut(&mut dyn Write)| {
            let len = 12 + fields.len() as u32 + body_len;
            w.write_all(&kind.to_le_bytes()).unwrap();
            w.write_all(&len.to_le_bytes()).unwrap();
            w.write_all(fields).unwrap();
            body(&mut w);
            w.write_all(&len.to_le_bytes()).unwrap();
        };
    // Section header: byte-order magic, version 1.0, length unknown.
    let mut shb = 0x1a2b_3c4d_u32.to_le_bytes().to_vec();
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&u64::MAX.to_le_bytes());
    block(0x0a0d_0d0a, &shb, 0, &mut |_| {});
    // Interface: raw IP (101), no snap length.
    block(1, &[101, 0, 0, 0, 0, 0, 0, 0], 0, &mut |_| {});
    // One EPB whose data fills the block: a UDP packet, then zeros.
    let data_len = total - 32;
    let mut epb = vec![0u8; 12];
    epb.extend_from_slice(&data_len.to_le_bytes());
    epb.extend_from_slice(&data_len.to_le_bytes());
    let packet = ipv4([10, 0, 0, 1], [192, 0, 2, 1], 17, 1024, 53, 0);
    block(6, &epb, data_len, &mut |w| {
        w.write_all(&packet).unwrap();
        let zeros = [0u8; 4096];
        let mut left = data_len as usize - packet.len();
        while left > 0 {
            let n = left.min(zeros.len());
            w.write_all(&zeros[..n]).unwrap();
            left -= n;
        }
    });
    w.flush().unwrap();
    path
}

#[test]
fn capture_blocks_stay_within_their_caps() {
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), "allow ip from any to any\n");
    let run = |trace: &Path| {
        let out = dir.path().join("out.pcapng");
        measured([
            "run".as_ref(),
            rules.as_os_str(),
            "-r".as_ref(),
            trace.as_os_str(),
            "-w".as_ref(),
            out.as_os_str(),
            "-q".as_ref(),
        ])
    };
    let cap = 16 << 20;
    let small = run(&pcapng_one_block(dir.path(), "small.pcapng", 4096));
    assert_eq!(small.code, Some(0), "{}", small.stderr);
    assert!(
        small.peak < BASE,
        "a small run took {} MiB",
        small.peak / MIB
    );
    let big = run(&pcapng_one_block(dir.path(), "big.pcapng", cap));
    assert_eq!(big.code, Some(0), "{}", big.stderr);
    eprintln!("peak {} MiB with a {} MiB block", big.peak / MIB, cap >> 20);
    assert!(
        big.peak <= u64::from(cap) + BASE,
        "peak {} MiB",
        big.peak / MIB
    );
    let over = run(&pcapng_one_block(dir.path(), "over.pcapng", cap + 4));
    assert_eq!(over.code, Some(1));
    assert!(
        over.stderr.contains(&format!(
            "pcapng block length {} exceeds limit {cap}",
            cap + 4
        )),
        "{}",
        over.stderr
    );
}
