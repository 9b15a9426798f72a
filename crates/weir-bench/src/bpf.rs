//! libpcap's BPF interpreter as the peer measured in the same run.
//!
//! The harness (`crates/weir-bench/bpf/harness.c`, embedded here) is compiled at run
//! time with the system C compiler against Debian's libpcap-dev. It loads a
//! trace into memory and times `pcap_offline_filter` on every packet, the
//! same way `weir bench` times the engine. When `cc` or libpcap is missing,
//! callers report the peer as skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The harness source, built into the binary so it runs from anywhere.
pub const HARNESS_C: &str = include_str!("../bpf/harness.c");

/// One expression timed by the harness.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BpfRun {
    pub expr: String,
    /// Instructions in the compiled program (`bpf_program.bf_len`).
    pub bf_len: u32,
    pub ns_per_packet: f64,
    /// Packets of one round the filter accepted.
    pub matched: u64,
    pub packets: u64,
}

/// Writes and compiles the harness into `dir`; returns the binary's path.
/// `$CC` overrides `cc`.
pub fn build(dir: &Path) -> Result<PathBuf, String> {
    if !Path::new("/usr/include/pcap/pcap.h").exists() && std::env::var_os("CC").is_none() {
        return Err("libpcap-dev is not installed (no /usr/include/pcap/pcap.h)".into());
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let src = dir.join("harness.c");
    let bin = dir.join("weir-bpf-harness");
    std::fs::write(&src, HARNESS_C).map_err(|e| format!("{}: {e}", src.display()))?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .arg("-lpcap")
        .output()
        .map_err(|e| format!("{cc}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cc} harness.c -lpcap failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(bin)
}

/// Times each expression over `trace` for at least `min_ms` each.
pub fn run(
    harness: &Path,
    trace: &Path,
    min_ms: u64,
    exprs: &[String],
) -> Result<Vec<BpfRun>, String> {
    let out = Command::new(harness)
        .arg(trace)
        .arg(min_ms.to_string())
        .args(exprs)
        .output()
        .map_err(|e| format!("{}: {e}", harness.display()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let runs: Vec<BpfRun> = text
        .lines()
        .zip(exprs)
        .filter_map(|(line, expr)| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let get = |k: &str| f.iter().position(|w| *w == k).and_then(|i| f.get(i + 1));
            Some(BpfRun {
                expr: expr.clone(),
                bf_len: get("bf_len")?.parse().ok()?,
                ns_per_packet: get("ns_per_packet")?.parse().ok()?,
                matched: get("matched")?.parse().ok()?,
                packets: get("packets")?.parse().ok()?,
            })
        })
        .collect();
    if runs.len() != exprs.len() {
        return Err(format!(
            "harness printed {} lines for {} expressions",
            runs.len(),
            exprs.len()
        ));
    }
    Ok(runs)
}

/// Instructions `tcpdump -d EXPR` prints (Ethernet assumed), if tcpdump runs.
pub fn tcpdump_d_len(expr: &str) -> Option<u32> {
    let out = Command::new("tcpdump").arg("-d").arg(expr).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let n = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('('))
        .count();
    u32::try_from(n).ok()
}
