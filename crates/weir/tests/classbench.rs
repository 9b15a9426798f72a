//! `weir gen-rules`, `weir classbench` and `weir import classbench` end to
//! end: the real binary on generated files and on files in the format
//! ClassBench's own generators write (tests/classbench/, see its README),
//! answers checked against the brute-force reference and, when installed,
//! DPDK's `dpdk-test-acl`.

mod common;

use common::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use weir_classbench::{first_match, parse_filters, parse_trace, Fields};
use weir_engine::Simd;

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
    t.iter()
        .map(|h| first_match(&f, h, Fields::FiveTuple))
        .collect()
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
            // The default walk, the linear one, and the automata in every
            // vector walk this CPU has and in scalar rounds.
            let mut walks = vec![vec![], vec!["--linear"], vec!["--simd", "off"]];
            walks.extend(Simd::here().into_iter().map(|s| vec!["--simd", s.name()]));
            for walk in walks {
                let linear = walk == ["--linear"];
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
                args.extend(walk.iter().map(|w| w.to_string()));
                let o = weir_ok(&args);
                assert_eq!(answers(&out), want, "{kind} {n} {walk:?}");
                let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
                assert_eq!(report["filters"], n);
                assert_eq!(report["headers"], 5000);
                assert_eq!(report["classified"], !linear);
                // The tries (past 1,024 rules) step in the lanes asked for
                // (by default the widest); the bit sets AND in AVX-512
                // vectors or in scalar code.
                let wide = Simd::Avx512.runs_here().then_some("avx512");
                let lanes = match walk.as_slice() {
                    ["--simd", simd] if n > 1024 || Some(*simd) == wide => *simd,
                    [] if n > 1024 => Simd::here().first().map_or("off", |s| s.name()),
                    [] => wide.unwrap_or("off"),
                    _ => "off",
                };
                assert_eq!(report["simd"], lanes, "{kind} {n} {walk:?}");
                assert_eq!(report["expected"]["contradicting"], 0);
                let matched = want.iter().filter(|&&a| a != 0).count();
                assert_eq!(report["matched"], matched);
                assert!(report["ns_per_packet"].as_f64().unwrap() > 0.0);
            }
        }
    }
}

/// `--simd` takes only the walks this CPU runs: another is a usage
/// error that names what it does run, not a silent fallback.
#[test]
fn simd_walks_the_cpu_lacks_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (rules, trace) = gen(dir.path(), "acl", 200, 3, 100);
    let run = |simd: &str| {
        weir([
            "classbench".as_ref(),
            rules.as_os_str(),
            trace.as_os_str(),
            "--iter".as_ref(),
            "1".as_ref(),
            "--simd".as_ref(),
            simd.as_ref(),
        ])
    };
    let here = Simd::here();
    for simd in Simd::ALL {
        let o = run(simd.name());
        let runs = matches!(simd, Simd::Auto | Simd::Off) || here.contains(&simd);
        assert_eq!(o.status.code(), Some(if runs { 0 } else { 2 }), "{simd:?}");
        if !runs {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("this CPU cannot run it"), "{err}");
        }
    }
    let o = run("sse");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("expected one of auto, off, avx2, avx512"),
        "{err}"
    );
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
        "passes (nearest-rank; min ",
        ", mean ",
        "packets/s",
        "trace filter#",
    ] {
        assert!(text.contains(word), "{word:?} missing from:\n{text}");
    }
}

/// The passes' median, fastest, mean and slowest, from the same passes:
/// one pass gives one number four times; more stay in order.
#[test]
fn classbench_reports_the_passes_spread() {
    let dir = tempfile::tempdir().unwrap();
    let (rules, trace) = gen(dir.path(), "acl", 200, 3, 2000);
    let report = |iter: &str| -> serde_json::Value {
        let o = weir_ok([
            "classbench".as_ref(),
            rules.as_os_str(),
            trace.as_os_str(),
            "--iter".as_ref(),
            iter.as_ref(),
            "--json".as_ref(),
        ]);
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let ns = |r: &serde_json::Value, field: &str| r[field].as_f64().unwrap();
    let one = report("1");
    let median = ns(&one, "ns_per_packet");
    assert!(median > 0.0);
    for field in [
        "min_ns_per_packet",
        "mean_ns_per_packet",
        "max_ns_per_packet",
    ] {
        assert_eq!(ns(&one, field), median, "{field}");
    }
    let four = report("4");
    let [min, median, mean, max] = [
        "min_ns_per_packet",
        "ns_per_packet",
        "mean_ns_per_packet",
        "max_ns_per_packet",
    ]
    .map(|field| ns(&four, field));
    assert!(min <= median && median <= max, "{min} {median} {max}");
    // The mean's sum may round by an ulp or so past passes all but equal.
    let slack = max * 1e-12;
    assert!(
        min - slack <= mean && mean <= max + slack,
        "{min} {mean} {max}"
    );
}

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/classbench")
        .join(name)
}

/// `weir classbench` on a sample pair: the report and the answers.
fn run_sample(name: &str, extra: &[&str]) -> (serde_json::Value, Vec<u32>) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("answers");
    let mut args = vec![
        "classbench".to_string(),
        sample(&format!("{name}.rules")).display().to_string(),
        sample(&format!("{name}.trace")).display().to_string(),
        "--verdicts".into(),
        out.display().to_string(),
        "--iter".into(),
        "1".into(),
        "--json".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let o = weir_ok(&args);
    let report = serde_json::from_str(&stdout(&o)).unwrap();
    (report, answers(&out))
}

/// The trace's last column, as trace_generator wrote it (0-based).
fn drawn_from(name: &str) -> Vec<u32> {
    let text = fs::read_to_string(sample(&format!("{name}.trace"))).unwrap();
    text.lines()
        .map(|l| l.split_whitespace().last().unwrap().parse().unwrap())
        .collect()
}

/// Files as db_generator and trace_generator write them (flags, extra
/// fields, the 32-bit flags column, a trailing tab, 0-based filter
/// indices) load, and every header is answered by the filter it was drawn
/// from or an earlier one: none contradicts its trace.
#[test]
fn generator_format_samples_load_and_agree_with_their_traces() {
    for name in ["acl-flags", "acl-5tuple", "acl-extra"] {
        let headers = drawn_from(name).len();
        for flags in [false, true] {
            if flags && name == "acl-5tuple" {
                continue;
            }
            let extra: &[&str] = if flags { &["--match-flags"] } else { &[] };
            let (report, got) = run_sample(name, extra);
            let e = &report["expected"];
            assert_eq!(report["filters"], 20, "{name}");
            assert_eq!(report["headers"], headers, "{name}");
            assert_eq!(e["checked"], headers, "{name} {flags}");
            assert_eq!(e["contradicting"], 0, "{name} {flags}: {report}");
            assert!(e["same"].as_u64().unwrap() > 0, "{name}: {report}");
            let fields = if flags { "5-tuple+flags" } else { "5-tuple" };
            assert_eq!(report["fields"], fields);
            if !flags {
                let rules = sample(&format!("{name}.rules"));
                let trace = sample(&format!("{name}.trace"));
                assert_eq!(got, reference(&rules, &trace), "{name}");
            }
        }
    }
}

/// Filters 1 and 2 of acl-flags.rules have the same 5-tuple; filter 1
/// requires flags 0x1000/0x1000 (one 32-bit value, 0x10001000), filter 2
/// any flags. trace_generator drew headers from filter 2 (index 1) with
/// its flags at a corner of the whole range, 0 or 4294967295, neither of
/// which is filter 1's value. On the 5-tuple filter 1 answers them; with
/// --match-flags filter 2 does. Headers from filter 1 carry its value and
/// are filter 1's either way.
#[test]
fn match_flags_is_classbench_sixth_dimension() {
    let from = drawn_from("acl-flags");
    let (_, five) = run_sample("acl-flags", &[]);
    let (_, six) = run_sample("acl-flags", &["--match-flags"]);
    let (mut from_1, mut from_2) = (0, 0);
    for (i, &f) in from.iter().enumerate() {
        match f {
            0 => {
                from_1 += 1;
                assert_eq!((five[i], six[i]), (1, 1), "header {}", i + 1);
            }
            1 => {
                from_2 += 1;
                assert_eq!((five[i], six[i]), (1, 2), "header {}", i + 1);
            }
            _ => {}
        }
    }
    assert!(from_1 > 0 && from_2 > 0, "{from_1} {from_2}");
    // A trace without the flags column cannot be compared on them.
    let o = weir([
        "classbench".as_ref(),
        sample("acl-flags.rules").as_os_str(),
        sample("acl-5tuple.trace").as_os_str(),
        "--match-flags".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("acl-5tuple.trace:1:1: --match-flags needs the flags column"),
        "{}",
        stderr(&o)
    );
}

/// The filter# check counts a header's own filter (index + 1), an earlier
/// one, and anything else, on a hand-made trace whose answers are plain.
#[test]
fn trace_filter_index_is_zero_based() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("r");
    let trace = dir.path().join("t");
    fs::write(
        &rules,
        "@10.0.0.0/8\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x06/0xFF\t\n\
         @0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x06/0xFF\t\n",
    )
    .unwrap();
    // 10.0.0.1 tcp: filter 1. 11.0.0.1 tcp: filter 2. udp: none.
    fs::write(
        &trace,
        "167772161\t1\t2\t3\t6\t0\n\
         184549377\t1\t2\t3\t6\t1\n\
         167772161\t1\t2\t3\t6\t1\n\
         184549377\t1\t2\t3\t6\t0\n\
         184549377\t1\t2\t3\t17\t1\n\
         167772161\t1\t2\t3\t6\t2\n\
         167772161\t1\t2\t3\t6\n",
    )
    .unwrap();
    let run = |json: bool| {
        let mut args = vec![
            "classbench".as_ref(),
            rules.as_os_str(),
            trace.as_os_str(),
            "--iter".as_ref(),
            "1".as_ref(),
        ];
        if json {
            args.push("--json".as_ref());
        }
        stdout(&weir_ok(args))
    };
    let report: serde_json::Value = serde_json::from_str(&run(true)).unwrap();
    let e = &report["expected"];
    assert_eq!(
        (
            &e["checked"],
            &e["same"],
            &e["earlier"],
            &e["contradicting"]
        ),
        (
            &serde_json::json!(6),
            &serde_json::json!(2),
            &serde_json::json!(1),
            &serde_json::json!(3)
        ),
        "{report}"
    );
    let table = run(false);
    assert!(
        table.contains(
            "trace filter#    6 checked: 2 answered by their own filter, 1 by an earlier one, 3 contradicting"
        ),
        "{table}"
    );
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
/// does, on generated sets and on the generator-format samples (flags and
/// extra fields in the rules, the flags column in the trace: test-acl
/// reads the 5-tuple). 0-based rule indices there, u32::MAX for no match.
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
    let mut pairs = Vec::new();
    for kind in ["acl", "fw", "ipc"] {
        pairs.push(gen(dir.path(), kind, 500, 6, 3000));
    }
    for name in ["acl-flags", "acl-5tuple", "acl-extra"] {
        pairs.push((
            sample(&format!("{name}.rules")),
            sample(&format!("{name}.trace")),
        ));
    }
    for (rules, trace) in pairs {
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
        let want = answers(&out);
        let filters = fs::read_to_string(&rules).unwrap().lines().count();
        let o = Command::new(&acl)
            .args(["--no-huge", "--no-pci", "-l", "0", "--log-level=error"])
            // Own run-time files: another DPDK process (a benchmark) may
            // hold the default prefix's lock in /var/run/dpdk.
            .arg(format!("--file-prefix=weir-test-{}", std::process::id()))
            .arg("--")
            .arg(format!("--rulesf={}", rules.display()))
            .arg(format!("--tracef={}", trace.display()))
            .arg("--iter=1")
            .arg("--verbose=2")
            .arg(format!("--rulenum={filters}"))
            .arg(format!("--tracenum={}", want.len()))
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
        assert_eq!(dpdk, want, "{}", rules.display());
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}
