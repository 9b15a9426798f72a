//! `weir bench`, `weir calibrate`, the syscall counts of `weir run`, and
//! bench/compare.sh, on small inputs (the figures are printed, not
//! asserted: these machines are shared and noisy).

mod common;

use common::{stdout, strace_usable, weir_ok};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn gen(dir: &Path, n: u64) -> PathBuf {
    let path = dir.join(format!("t{n}.pcap"));
    weir_ok([
        "gen".as_ref(),
        "-n".as_ref(),
        n.to_string().as_ref(),
        "--seed".as_ref(),
        "7".as_ref(),
        "-o".as_ref(),
        path.as_os_str(),
    ]);
    path
}

fn positive(v: &Value, what: &str) -> f64 {
    let x = v
        .as_f64()
        .unwrap_or_else(|| panic!("{what} is not a number: {v}"));
    assert!(x.is_finite() && x > 0.0, "{what} = {x}");
    x
}

#[test]
fn bench_json_has_documented_fields() {
    let dir = tmp();
    let trace = gen(dir.path(), 5000);
    let svg = dir.path().join("cdf.svg");
    for dispatch in ["match", "table"] {
        let out = weir_ok([
            "bench".as_ref(),
            repo("rules/realistic-100.rules").as_os_str(),
            "-r".as_ref(),
            trace.as_os_str(),
            "--rounds".as_ref(),
            "3".as_ref(),
            "--dispatch".as_ref(),
            dispatch.as_ref(),
            "--json".as_ref(),
            "--plot".as_ref(),
            svg.as_os_str(),
        ]);
        let text = stdout(&out);
        eprintln!("{text}");
        let v: Value = serde_json::from_str(&text).expect("one JSON object");
        assert_eq!(v["dispatch"], dispatch);
        assert_eq!(v["packets"], 5000);
        assert_eq!(v["rules"], 101, "100 rules + default");
        assert_eq!(v["rounds"], 3);
        assert_eq!(v["syscalls_in_timed_loop"], 0);
        positive(&v["packets_per_second"], "packets_per_second");
        positive(&v["ns_per_packet_mean"], "ns_per_packet_mean");
        positive(&v["ip_packets"], "ip_packets");
        let p = &v["ns_per_packet"];
        let q: Vec<f64> = ["p20", "p50", "p99", "max"]
            .iter()
            .map(|k| positive(&p[*k], k))
            .collect();
        assert!(
            q[0] <= q[1] && q[1] <= q[2] && q[2] <= q[3],
            "p20 ≤ p50 ≤ p99 ≤ max: {p}"
        );
        assert!(v["samples"].as_u64().unwrap() >= 5000);
        let rules = positive(&v["rules_per_packet"], "rules_per_packet");
        let insns = positive(&v["insns_per_packet"], "insns_per_packet");
        assert!((1.0..=101.0).contains(&rules), "{rules} rules per packet");
        assert!(insns < 1000.0, "{insns} instructions per packet");
        let clock = &v["clock"];
        assert!(clock["kind"].is_string());
        positive(&clock["ns_per_tick"], "clock.ns_per_tick");
        assert!(clock["overhead_ns"].as_f64().unwrap() >= 0.0);
        let per_rule = v["per_rule"].as_array().expect("per_rule");
        assert_eq!(per_rule.len(), 101);
        let share: f64 = per_rule.iter().map(|r| r["share"].as_f64().unwrap()).sum();
        assert!((share - 1.0).abs() < 1e-6, "shares add up to {share}");
        for r in per_rule {
            assert!(r["number"].is_u64() && r["text"].is_string() && r["tried"].is_u64());
            assert!(r["matched"].as_u64() <= r["tried"].as_u64());
        }
        let svg_text = std::fs::read_to_string(&svg).unwrap();
        assert!(svg_text.starts_with("<svg") && svg_text.contains("<polyline"));
    }
    // The people's table.
    let out = weir_ok([
        "bench".as_ref(),
        repo("rules/realistic-100.rules").as_os_str(),
        "-r".as_ref(),
        trace.as_os_str(),
        "--duration".as_ref(),
        "0.2".as_ref(),
    ]);
    let text = stdout(&out);
    eprintln!("{text}");
    for word in ["Mpps", "p20", "p99", "clock", "syscalls", "share"] {
        assert!(text.contains(word), "{word} missing from:\n{text}");
    }
}

#[test]
fn calibrate_json_has_documented_fields() {
    let dir = tmp();
    let out = weir_ok([
        "calibrate".as_ref(),
        "--quick".as_ref(),
        "--json".as_ref(),
        "--work-dir".as_ref(),
        dir.path().as_os_str(),
    ]);
    let text = stdout(&out);
    eprintln!("{text}");
    let v: Value = serde_json::from_str(&text).expect("one JSON object");
    let fits = v["weir"].as_array().expect("weir fits");
    assert_eq!(fits.len(), 2);
    assert_eq!(fits[0]["dispatch"], "match");
    assert_eq!(fits[1]["dispatch"], "table");
    for f in fits {
        for key in ["header_ns", "insn_ns", "intercept_ns"] {
            let s = &f[key];
            assert!(s["median"].as_f64().unwrap().is_finite(), "{key}: {s}");
            assert!(s["q1"].as_f64() <= s["median"].as_f64());
            assert!(s["median"].as_f64() <= s["q3"].as_f64());
            assert!(s["iqr"].as_f64().unwrap() >= 0.0);
            assert!(s["n"].as_u64().unwrap() >= 1);
        }
        let points = f["points"].as_array().unwrap();
        assert!(points.len() >= 4);
        for p in points {
            positive(&p["ns_per_packet"], "ns_per_packet");
        }
    }
    assert_eq!(v["ipfw_2009"]["header_ns"], 50.0);
    assert_eq!(v["ipfw_2009"]["insn_ns"], 12.0);
    let bpf = &v["bpf"];
    match bpf["status"].as_str() {
        Some("measured") => {
            positive(&bpf["insn_ns"]["median"], "bpf.insn_ns");
            for p in bpf["points"].as_array().unwrap() {
                positive(&p["ns_per_packet"], "bpf ns_per_packet");
                assert!(p["bf_len"].as_u64().unwrap() > 0);
                if let Some(d) = p["tcpdump_d"].as_u64() {
                    assert_eq!(Some(d), p["bf_len"].as_u64(), "tcpdump -d agrees: {p}");
                }
            }
        }
        Some("skipped") => eprintln!(
            "\n!!!!!!!! libpcap peer SKIPPED in calibrate: {} !!!!!!!!\n",
            bpf["reason"]
        ),
        other => panic!("bpf.status {other:?}"),
    }
}

/// `strace -c` rows: syscall name → calls.
fn strace_calls(text: &str) -> std::collections::HashMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if !(5..=6).contains(&f.len()) || f[0].parse::<f64>().is_err() {
                return None;
            }
            Some((f.last()?.to_string(), f[3].parse().ok()?))
        })
        .collect()
}

#[test]
fn run_json_syscall_counts_match_strace() {
    if !strace_usable("the counted-vs-strace check") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let trace = gen(d, 100_000);
    let summary = d.join("strace.txt");
    let o = Command::new("strace")
        .env_remove("LD_LIBRARY_PATH")
        .args(["-f", "-c", "-e", "trace=read,write", "-o"])
        .arg(&summary)
        .arg(common::bin())
        .arg("run")
        .arg(repo("crates/weir/rules/demo.rules"))
        .arg("-r")
        .arg(&trace)
        .arg("-w")
        .arg(d.join("pass.pcap"))
        .arg("--drop-out")
        .arg(d.join("drop.pcap"))
        .arg("--verdicts")
        .arg(d.join("v.csv"))
        .arg("--log-file")
        .arg(d.join("log.txt"))
        .args(["-q", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let counted = &v["weir"].as_array().unwrap().last().unwrap()["summary"]["syscalls"];
    let (reads, writes) = (
        counted["reads"].as_u64().unwrap(),
        counted["writes"].as_u64().unwrap(),
    );
    let traced = strace_calls(&std::fs::read_to_string(&summary).unwrap());
    let (t_reads, t_writes) = (traced["read"], traced["write"]);
    eprintln!(
        "weir counted {reads} reads, {writes} writes; strace saw {t_reads} reads, {t_writes} writes"
    );
    // The trace alone is over 30 MB: dozens of 1 MiB reads, counted.
    assert!(reads > 20, "{reads} reads counted");
    assert!(writes > 20, "{writes} writes counted");
    // strace sees the same calls plus start-up reads (ruleset,
    // /etc/protocols, /etc/services, /proc) and the final report.
    const SLACK: u64 = 32;
    assert!(
        t_reads >= reads && t_reads - reads <= SLACK,
        "reads: counted {reads}, strace {t_reads}"
    );
    assert!(
        t_writes >= writes && t_writes - writes <= SLACK,
        "writes: counted {writes}, strace {t_writes}"
    );
}

#[test]
fn compare_script_runs_on_a_small_trace() {
    let missing: Vec<&str> = [
        (
            "tcpdump",
            Command::new("tcpdump").arg("--version").output().is_ok(),
        ),
        ("cc", Command::new("cc").arg("--version").output().is_ok()),
        (
            "libpcap-dev",
            Path::new("/usr/include/pcap/pcap.h").exists(),
        ),
    ]
    .into_iter()
    .filter(|(_, ok)| !ok)
    .map(|(n, _)| n)
    .collect();
    if !missing.is_empty() {
        eprintln!(
            "\n!!!!!!!! SKIPPED compare.sh: missing {missing:?} (scripts/test.sh installs \
             tcpdump and libpcap-dev). The peers were NOT compared. !!!!!!!!\n"
        );
        return;
    }
    let dir = tmp();
    let o = Command::new("bash")
        .arg(repo("bench/compare.sh"))
        .args(["20000", "1"])
        .env("WORK", dir.path())
        .env("WEIR", common::bin())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    eprintln!("{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "compare.sh failed");
    assert!(text.contains("tcpdump / weir run:"), "{text}");
    assert!(text.contains("pcap_offline_filter / weir bench:"), "{text}");
}
