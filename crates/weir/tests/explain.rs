//! `weir explain` shows every rule up to the decider: the ones the walk
//! tried, and the ones the classifier or a skip step passed over, each with
//! the check that fails. The linear walk (`--linear`) tries them one by one
//! and must show the same checks.

mod common;

use common::*;
use std::path::Path;

/// `weir explain RULES -r TRACE --packet N EXTRA…`, its output.
fn explain(rules: &Path, trace: &Path, packet: usize, extra: &[&str]) -> String {
    let packet = packet.to_string();
    let mut args = vec![
        "explain".as_ref(),
        rules.as_os_str(),
        "-r".as_ref(),
        trace.as_os_str(),
        "--packet".as_ref(),
        packet.as_ref(),
    ];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    stdout(&weir_ok(args))
}

/// The explain output with each rule line reduced to its number and every
/// check line kept; the marks (`match`, `no`, `skip`) and the notes saying
/// why a rule was passed over differ between the walks by design.
fn checks(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| {
            !l.trim_start().starts_with("(skipped")
                && !l.trim_start().starts_with("(not a candidate")
        })
        .map(
            |l| match l.strip_prefix("  ").filter(|r| !r.starts_with(' ')) {
                Some(rule) => rule.split_whitespace().next().unwrap_or("").to_owned(),
                None => l.to_owned(),
            },
        )
        .collect()
}

#[test]
fn every_rule_is_shown_with_the_check_that_fails() {
    let dir = tempfile::tempdir().unwrap();
    let trace = gen_trace(dir.path(), "t.pcap", 300, 11);
    let rules = demo_rules();
    let mut skipped_by_classifier = 0;
    for n in 1..=300 {
        let classified = explain(&rules, &trace, n, &[]);
        let linear = explain(&rules, &trace, n, &["--linear"]);
        assert_eq!(checks(&classified), checks(&linear), "packet {n}");
        skipped_by_classifier += classified.matches("(not a candidate: ").count();
    }
    assert!(
        skipped_by_classifier > 300,
        "the classifier passed over rules"
    );
}

#[test]
fn the_line_a_user_needs_is_there_by_default() {
    let dir = tempfile::tempdir().unwrap();
    // A TCP SYN 10.0.0.1:40000 > 192.0.2.80:22: the web rule cannot match.
    let syn = ipv4([10, 0, 0, 1], [192, 0, 2, 80], 6, 40000, 22, 0x02);
    let trace = write_trace(dir.path(), "syn.pcap", &[(0, syn)]);
    let text: String = (1..=8)
        .map(|k| format!("{} deny udp from any to any {}\n", k * 10, 1000 + k))
        .chain([
            "100 allow tcp from any to any 80,443,8080\n".to_owned(),
            "200 deny ip from any to any\n".to_owned(),
        ])
        .collect();
    let rules = write_rules(dir.path(), &text);
    let out = explain(&rules, &trace, 1, &[]);
    let want = "  00100 skip  allow tcp from any to any 80,443,8080\n\
        \x20              yes proto 6 (header)\n\
        \x20              NO  dst-port 80,443,8080\n\
        \x20              (not a candidate: the classifier proved it cannot match)\n\
        \x20 00200 match deny ip from any to any\n";
    assert!(out.contains(want), "{out}");
    assert_eq!(out.matches(" skip ").count(), 9, "{out}");
}

#[test]
fn jumps_name_what_they_pass_over() {
    let dir = tempfile::tempdir().unwrap();
    let udp = ipv4([192, 0, 2, 40], [10, 1, 2, 49], 17, 5353, 53, 0);
    let trace = write_trace(dir.path(), "udp.pcap", &[(0, udp)]);
    let rules = write_rules(
        dir.path(),
        "100 call 300 ip from any to any\n\
         200 allow tcp from any to any 22\n\
         250 deny ip from any to any\n\
         300 count ip from any to any\n\
         310 deny tcp from any to any 23\n\
         320 return ip from any to any\n",
    );
    let out = explain(&rules, &trace, 1, &[]);
    let body: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(
        body,
        [
            "  00100 match call 300 ip from any to any",
            "               (no conditions: matches every packet)",
            "        rules 00200..00250: jumped over by call",
            "  00300 match count ip from any to any",
            "               (no conditions: matches every packet)",
            "  00310 no    deny tcp from any to any 23",
            "               NO  proto 6 (header)",
            "  00320 match return",
            "               (no conditions: matches every packet)",
            "  00200 no    allow tcp from any to any 22",
            "               NO  proto 6 (header)",
            "  00250 match deny ip from any to any",
            "               (no conditions: matches every packet)",
            "decided by rule 00250 (deny): drop",
        ]
    );
}
