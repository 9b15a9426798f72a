//! `weir gen-rules`, `weir classbench` and `weir import classbench` end to
//! end: the real binary on generated files, answers checked against the
//! brute-force reference and, when installed, DPDK's `dpdk-test-acl`.

mod common;

use common::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use weir_classbench::{first_match, parse_filters, parse_trace};

fn gen(dir: &Path, kind: &str, n: u32, seed: u64, trace_n: u32) -> (PathBuf, PathBuf) {
    let rules = dir.join(format!("{kind}-{n}-{seed}.rules"));
    let trace = dir.join(format!("{kind}-{n}-{seed}.trace"));
    weir_ok([
        "gen-rules",
        "--like",
        kind,
        "-n",
        &n.to_string(),
        "--seed",
        &seed.to_string(),
        "-o",
        rules.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "--trace-n",
        &trace_n.to_string(),
    ]);
    (rules, trace)
}

/// The reference answers for a rules/trace pair, from the files.
fn reference(rules: &Path, trace: &Path) -> Vec<u32> {
    let f = parse_filters(&fs::read_to_string(rules).unwrap()).unwrap();
    let t = parse_trace(&fs::read_to_string(trace).unwrap()).unwrap();
    t.iter().map(|h| first_match(&f, h)).collect()
}

fn answers(path: &Path) -> Vec<u32> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.parse().expect("answer is a number"))
        .collect()
}

#[test]
fn gen_rules_is_deterministic_by_seed() {
    let dir = tempfile::tempdir().unwrap();
    let (r1, t1) = gen(dir.path(), "fw", 300, 4, 1000);
    let a = (fs::read(&r1).unwrap(), fs::read(&t1).unwrap());
    fs::rename(&r1, dir.path().join("first.rules")).unwrap();
    fs::rename(&t1, dir.path().join("first.trace")).unwrap();
    let (r2, t2) = gen(dir.path(), "fw", 300, 4, 1000);
    assert_eq!(a, (fs::read(&r2).unwrap(), fs::read(&t2).unwrap()));
    let (r3, _) = gen(dir.path(), "fw", 300, 5, 1000);
    assert_ne!(a.0, fs::read(&r3).unwrap());
    assert_eq!(a.0.iter().filter(|&&b| b == b'\n').count(), 300);
    assert_eq!(a.1.iter().filter(|&&b| b == b'\n').count(), 1000);
}

#[test]
fn classbench_answers_equal_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["acl", "fw", "ipc"] {
        for (n, seed) in [(100, 1), (2000, 2)] {
            let (rules, trace) = gen(dir.path(), kind, n, seed, 5000);
            let want = reference(&rules, &trace);
            for linear in [false, true] {
                let out = dir.path().join("answers");
                let mut args = vec![
                    "classbench".to_string(),
                    rules.display().to_string(),
                    trace.display().to_string(),
                    "--verdicts".into(),
                    out.display().to_string(),
                    "--iter".into(),
                    "1".into(),
                    "--json".into(),
                ];
                if linear {
                    args.push("--linear".into());
                }
                let o = weir_ok(&args);
                assert_eq!(answers(&out), want, "{kind} {n} linear={linear}");
                let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
                assert_eq!(report["filters"], n);
                assert_eq!(report["headers"], 5000);
                assert_eq!(report["classified"], !linear);
                assert_eq!(report["expected"]["contradicting"], 0);
                let matched = want.iter().filter(|&&a| a != 0).count();
                assert_eq!(report["matched"], matched);
                assert!(report["ns_per_packet"].as_f64().unwrap() > 0.0);
            }
        }
    }
}

#[test]
fn classbench_table_names_the_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let (rules, trace) = gen(dir.path(), "acl", 200, 3, 2000);
    let o = weir_ok([
        "classbench".as_ref(),
        rules.as_os_str(),
        trace.as_os_str(),
        "--iter".as_ref(),
        "2".as_ref(),
    ]);
    let text = stdout(&o);
    for word in [
        "filters          200",
        "headers          2000",
        "ns/packet",
        "packets/s",
        "trace filter#",
    ] {
        assert!(text.contains(word), "{word:?} missing from:\n{text}");
    }
}

#[test]
fn bad_files_exit_2_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("r");
    let trace = dir.path().join("t");
    fs::write(
        &rules,
        "@1.2.3.4/32\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x06/0xFF\n@1.2.3.4/32\t0.0.0.0/0\t0 : 65535\t0 : 65536\t0x06/0xFF\n",
    )
    .unwrap();
    fs::write(&trace, "1 2 3 4 6 1\n").unwrap();
    let o = weir(["classbench".as_ref(), rules.as_os_str(), trace.as_os_str()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o).trim(),
        format!("{}:2:37: port '65536' is not 0..65535", rules.display())
    );

    fs::write(
        &rules,
        "@1.2.3.4/32\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x06/0xFF\n",
    )
    .unwrap();
    fs::write(&trace, "1 2 3 4 6 1\n1 2 3 x 6 1\n").unwrap();
    let o = weir(["classbench".as_ref(), rules.as_os_str(), trace.as_os_str()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o).trim(),
        format!(
            "{}:2:7: destination port 'x' is not a decimal number 0..65535",
            trace.display()
        )
    );

    let o = weir(["import".as_ref(), "classbench".as_ref(), trace.as_os_str()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with(&format!(
        "{}:1:1: a filter starts with '@'",
        trace.display()
    )));
}

/// The imported text is a valid weir ruleset with one rule per filter.
#[test]
fn import_output_checks_clean() {
    let dir = tempfile::tempdir().unwrap();
    let (rules, _) = gen(dir.path(), "ipc", 500, 8, 10);
    let o = weir_ok(["import".as_ref(), "classbench".as_ref(), rules.as_os_str()]);
    let text = stdout(&o);
    let numbered: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(numbered.len(), 500);
    for (i, l) in numbered.iter().enumerate() {
        assert!(l.starts_with(&format!("{} allow ", i + 1)), "{l}");
    }
    let imported = dir.path().join("imported.rules");
    fs::write(&imported, &text).unwrap();
    let o = weir_ok(["check".as_ref(), imported.as_os_str()]);
    let said = stdout(&o) + &stderr(&o);
    assert!(said.contains(": 500 rules,"), "{said}");
}

/// DPDK's rte_acl (through its test-acl app) answers every header as weir
/// does. 0-based rule indices there, u32::MAX for no match.
#[test]
fn dpdk_test_acl_agrees() {
    let Some(acl) = which("dpdk-test-acl") else {
        eprintln!(
            "SKIPPED dpdk_test_acl_agrees: dpdk-test-acl is not installed \
             (apt-get install dpdk-dev; bench/compare-acl.sh installs it)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for kind in ["acl", "fw", "ipc"] {
        let (rules, trace) = gen(dir.path(), kind, 500, 6, 3000);
        let out = dir.path().join("answers");
        weir_ok([
            "classbench".as_ref(),
            rules.as_os_str(),
            trace.as_os_str(),
            "--verdicts".as_ref(),
            out.as_os_str(),
            "--iter".as_ref(),
            "1".as_ref(),
        ]);
        let o = Command::new(&acl)
            .args(["--no-huge", "--no-pci", "-l", "0", "--log-level=error"])
            // Own run-time files: another DPDK process (a benchmark) may
            // hold the default prefix's lock in /var/run/dpdk.
            .arg(format!("--file-prefix=weir-test-{}", std::process::id()))
            .arg("--")
            .arg(format!("--rulesf={}", rules.display()))
            .arg(format!("--tracef={}", trace.display()))
            .args([
                "--iter=1",
                "--verbose=2",
                "--rulenum=500",
                "--tracenum=3000",
            ])
            .output()
            .expect("run dpdk-test-acl");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let dpdk: Vec<u32> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.starts_with("ipv4_5tuple:"))
            .map(|l| {
                let r: u32 = l.rsplit(' ').next().unwrap().parse().unwrap();
                r.wrapping_add(1)
            })
            .collect();
        assert_eq!(dpdk, answers(&out), "{kind}");
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}
