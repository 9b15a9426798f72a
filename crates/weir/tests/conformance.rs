//! The ipfw conformance corpus (`conformance/ipfw/`): FreeBSD's own rulesets
//! (ipfw(8)'s examples, rc.firewall's profiles, the Handbook's IPFW
//! chapter), written out as ipfw receives them, each beside a table of the
//! decisions its documentation gives for crafted packets (`NAME.expect`,
//! format in `conformance/ipfw/README.md`). The tables were written from
//! the documents and ipfw(8), not from weir's output.
//!
//! `corpus_decides_as_documented` checks every file: it loads unchanged
//! with `weir check` (or, if its table says `refuse`, is refused naming
//! exactly those keywords at their place); its canonical form
//! (`weir check --print`) loads again; every `run` block's packets,
//! written to a pcapng with the named interfaces and directions, decide as
//! the table says (rule number and action) and the `counter` lines hold;
//! and the canonical form decides every packet the same and counts the
//! same. All failures of all files are collected and reported together.
//!
//! `crafted_packets_read_back_by_tcpdump` checks the packet builder against
//! libpcap, and the `libpcap_*` tests compare single rules of the corpus
//! with pcap-filter expressions over the tcpdump corpus.

mod common;
#[path = "conformance/craft.rs"]
mod craft;
#[path = "conformance/expect.rs"]
mod expect;
#[path = "common/pcap_diff.rs"]
mod pcap_diff;

use common::{parse_verdicts, weir};
use expect::{Decision, Expectations, Outcome, PacketLine, Run};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/ipfw")
}

/// The corpus's rule files, sorted, each with its table's path.
fn corpus_files() -> Vec<(PathBuf, PathBuf)> {
    let mut rules: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rules"))
        .collect();
    rules.sort();
    rules
        .into_iter()
        .map(|r| {
            let e = r.with_extension("expect");
            (r, e)
        })
        .collect()
}

fn name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

fn load_expectations(path: &Path) -> Expectations {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (every .rules needs a .expect)", path.display()));
    expect::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What one file did, for the closing report.
#[derive(Default)]
struct FileReport {
    /// One line per failure, `file:line: what`.
    failures: Vec<String>,
    packets: usize,
    packets_as_documented: usize,
}

#[test]
fn corpus_decides_as_documented() {
    let tmp = tempfile::tempdir().unwrap();
    let mut reports = BTreeMap::new();
    for (rules, table) in corpus_files() {
        let ex = load_expectations(&table);
        let report = check_file(&rules, &ex, tmp.path());
        reports.insert(name(&rules), report);
    }
    let (mut files_ok, mut packets, mut as_documented) = (0, 0, 0);
    let mut text = String::new();
    for (file, r) in &reports {
        packets += r.packets;
        as_documented += r.packets_as_documented;
        if r.failures.is_empty() {
            files_ok += 1;
            let _ = writeln!(text, "  ok    {file} ({} packets)", r.packets);
        } else {
            let _ = writeln!(
                text,
                "  FAIL  {file}: {} of {} packets as documented",
                r.packets_as_documented, r.packets
            );
            for f in &r.failures {
                let _ = writeln!(text, "          {f}");
            }
        }
    }
    let summary = format!(
        "conformance/ipfw: {files_ok} of {} files as documented; {as_documented} of {packets} \
         packets decided as documented\n{text}",
        reports.len()
    );
    assert_eq!(files_ok, reports.len(), "\n{summary}");
}

fn check_file(rules: &Path, ex: &Expectations, tmp: &Path) -> FileReport {
    let file = name(rules);
    let mut report = FileReport {
        packets: ex
            .runs
            .iter()
            .flat_map(|r| &r.packets)
            .map(|p| p.repeat)
            .sum(),
        ..FileReport::default()
    };
    let check = weir([Path::new("check"), rules]);
    if !ex.refusals.is_empty() {
        report.failures = check_refusals(rules, &check, &ex.refusals);
        return report;
    }
    if check.status.code() != Some(0) {
        report.failures.push(format!(
            "{file}: does not load:\n{}",
            distinct_errors(rules, &check.stderr)
        ));
        return report;
    }
    let canon = canonical_form(rules, tmp, &mut report.failures);
    for (k, run) in ex.runs.iter().enumerate() {
        let capture = tmp.join(format!("{file}.run{k}.pcapng"));
        craft::write_pcapng(&capture, &run.packets);
        let got = match replay(rules, &capture, run, tmp) {
            Ok(got) => got,
            Err(e) => {
                report.failures.push(format!(
                    "{file}:{}: weir run {:?} failed:\n{}",
                    run.line,
                    run.args,
                    indent(&e)
                ));
                continue;
            }
        };
        let (as_doc, mut failures) = compare(&file, run, &got);
        report.packets_as_documented += as_doc;
        report.failures.append(&mut failures);
        if let Some(canon) = &canon {
            match replay(canon, &capture, run, tmp) {
                Ok(c) if c == got => {}
                Ok(c) => report.failures.push(format!(
                    "{file}:{}: the canonical form decides differently: {}",
                    run.line,
                    first_difference(&got, &c)
                )),
                Err(e) => report.failures.push(format!(
                    "{file}:{}: the canonical form does not replay:\n{}",
                    run.line,
                    indent(&e)
                )),
            }
        }
    }
    report
}

/// `weir check --print`, saved and loaded again; `None` if either fails.
fn canonical_form(rules: &Path, tmp: &Path, failures: &mut Vec<String>) -> Option<PathBuf> {
    let file = name(rules);
    let printed = weir([Path::new("check"), Path::new("--print"), rules]);
    if printed.status.code() != Some(0) {
        failures.push(format!(
            "{file}: weir check --print failed:\n{}",
            indent(&String::from_utf8_lossy(&printed.stderr))
        ));
        return None;
    }
    let canon = tmp.join(format!("{file}.canonical"));
    std::fs::write(&canon, &printed.stdout).unwrap();
    let again = weir([Path::new("check"), &canon]);
    if again.status.code() != Some(0) {
        failures.push(format!(
            "{file}: its canonical form does not load:\n{}",
            distinct_errors(&canon, &again.stderr)
        ));
        return None;
    }
    Some(canon)
}

/// A replay's outcome: per packet `(rule, action)`, per rule number the
/// packets its rules counted.
#[derive(PartialEq, Eq)]
struct Replay {
    decisions: Vec<Decision>,
    counters: BTreeMap<u32, u64>,
}

/// `weir run` with the verdicts in a file and the counters as JSON; its
/// stderr if it fails.
fn replay(rules: &Path, capture: &Path, run: &Run, tmp: &Path) -> Result<Replay, String> {
    let verdicts = tmp.join("verdicts.csv");
    let mut args: Vec<String> = vec!["run".into(), rules.display().to_string(), "-r".into()];
    args.push(capture.display().to_string());
    args.extend(["--verdicts".into(), verdicts.display().to_string()]);
    args.extend(["--json".into(), "-q".into()]);
    args.extend(run.args.iter().cloned());
    let out = weir(&args);
    if out.status.code() != Some(0) {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let decisions = parse_verdicts(&std::fs::read_to_string(&verdicts).unwrap())
        .into_iter()
        .map(|v| Decision {
            rule: v.rule.unwrap_or(0),
            action: v.action,
        })
        .collect();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    let mut counters = BTreeMap::new();
    for rule in json["weir"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i.get("rule"))
    {
        let n = rule["number"].as_u64().unwrap() as u32;
        *counters.entry(n).or_insert(0) += rule["counter"]["packets"].as_u64().unwrap();
    }
    Ok(Replay {
        decisions,
        counters,
    })
}

/// Compares a replay with the table: the number of packets decided as
/// documented, and a line per packet or counter that is not.
fn compare(file: &str, run: &Run, got: &Replay) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut as_doc = 0;
    let mut at = 0;
    for line in &run.packets {
        let Some(decided) = got.decisions.get(at..at + line.repeat) else {
            failures.push(format!("{file}:{}: no verdict for this packet", line.line));
            break;
        };
        at += line.repeat;
        match &line.outcome {
            Outcome::Always(want) => {
                for d in decided {
                    if same_decision(want, d) {
                        as_doc += 1;
                    } else {
                        failures.push(mismatch(file, line, &want.to_string(), d));
                    }
                }
            }
            Outcome::Share { first, p, rest } => {
                let hits = decided.iter().filter(|d| same_decision(first, d)).count();
                let others = decided.iter().filter(|d| same_decision(rest, d)).count();
                let n = decided.len() as f64;
                let sd = (n * p * (1.0 - p)).sqrt();
                let near = (hits as f64 - n * p).abs() <= 6.0 * sd + 1.0;
                if hits + others == decided.len() && near {
                    as_doc += decided.len();
                } else {
                    let stray = decided
                        .iter()
                        .find(|d| !same_decision(first, d) && !same_decision(rest, d));
                    failures.push(format!(
                        "{file}:{}: {}: want {first} for about {:.0} of {} and {rest} for the \
                         rest, weir gave {hits} and {others}{}",
                        line.line,
                        line.text,
                        n * p,
                        decided.len(),
                        stray.map_or(String::new(), |d| format!(", and {d}"))
                    ));
                }
            }
        }
    }
    for (rule, want) in &run.counters {
        let counted = got.counters.get(rule).copied().unwrap_or(0);
        if counted != *want {
            failures.push(format!(
                "{file}:{}: rule {rule} counted {counted} packets, want {want}",
                run.line
            ));
        }
    }
    (as_doc, failures)
}

fn mismatch(file: &str, line: &PacketLine, want: &str, got: &Decision) -> String {
    format!(
        "{file}:{}: {}: want {want}, weir said {got}",
        line.line, line.text
    )
}

/// Rule numbers equal, and actions equal once ipfw's synonyms are read as
/// one (`pass` is `allow`, `drop` is `deny`, `forward` is `fwd`).
fn same_decision(want: &Decision, got: &Decision) -> bool {
    want.rule == got.rule && canonical_action(&want.action) == canonical_action(&got.action)
}

fn canonical_action(action: &str) -> String {
    let mut words = action.split_whitespace();
    let first = match words.next().unwrap_or("") {
        "accept" | "pass" | "permit" => "allow",
        "drop" => "deny",
        "forward" => "fwd",
        w => w,
    };
    std::iter::once(first)
        .chain(words)
        .collect::<Vec<_>>()
        .join(" ")
}

fn first_difference(a: &Replay, b: &Replay) -> String {
    if let Some(k) = (0..a.decisions.len().max(b.decisions.len()))
        .find(|&k| a.decisions.get(k) != b.decisions.get(k))
    {
        return format!(
            "packet {}: {} against {}",
            k + 1,
            a.decisions.get(k).map_or("none".into(), |d| d.to_string()),
            b.decisions.get(k).map_or("none".into(), |d| d.to_string())
        );
    }
    format!("counters {:?} against {:?}", a.counters, b.counters)
}

/// A refused file: exit 2 and one diagnostic per expected keyword, at the
/// keyword's line and column, naming it; nothing else.
fn check_refusals(rules: &Path, check: &std::process::Output, words: &[String]) -> Vec<String> {
    let file = name(rules);
    let stderr = String::from_utf8_lossy(&check.stderr);
    let text = std::fs::read_to_string(rules).unwrap();
    let prefix = format!("{}:", rules.display());
    // file:line:col: message
    let diagnostics: Vec<(usize, usize, &str)> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let line = parts.next()?.parse().ok()?;
            let col = parts.next()?.parse().ok()?;
            Some((line, col, parts.next()?.trim()))
        })
        .collect();
    let mut failures = Vec::new();
    if check.status.code() != Some(2) {
        failures.push(format!(
            "{file}: want a refusal (exit 2), got {:?}",
            check.status.code()
        ));
    }
    for word in words {
        let Some((line, col)) = place_of(&text, word) else {
            failures.push(format!("{file}: no rule names {word:?}"));
            continue;
        };
        let named = diagnostics
            .iter()
            .any(|&(l, c, msg)| l == line && c == col && msg.contains(word.as_str()));
        if !named {
            failures.push(format!(
                "{file}:{line}:{col}: want a refusal naming '{word}' here"
            ));
        }
    }
    let expected: Vec<(usize, usize)> = words.iter().filter_map(|w| place_of(&text, w)).collect();
    for (l, c, msg) in &diagnostics {
        if !expected.contains(&(*l, *c)) {
            failures.push(format!("{file}:{l}:{c}: unexpected error: {msg}"));
        }
    }
    failures
}

/// Line and column (1-based, in characters) of `word` in the one rule
/// (not a comment line) that holds it.
fn place_of(text: &str, word: &str) -> Option<(usize, usize)> {
    text.lines().enumerate().find_map(|(i, l)| {
        if l.trim_start().starts_with('#') {
            return None;
        }
        let at = l.find(word)?;
        Some((i + 1, l[..at].chars().count() + 1))
    })
}

/// A file's diagnostics, one line per distinct message: its first place
/// and how many more lines got it.
fn distinct_errors(rules: &Path, stderr: &[u8]) -> String {
    let stderr = String::from_utf8_lossy(stderr);
    let prefix = format!("{}:", rules.display());
    let mut seen: Vec<(String, String, usize)> = Vec::new();
    for l in stderr.lines().filter_map(|l| l.strip_prefix(&prefix)) {
        let mut parts = l.splitn(3, ':');
        let (Some(line), Some(col), Some(msg)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let msg = msg.trim().to_owned();
        match seen.iter_mut().find(|(_, m, _)| *m == msg) {
            Some(s) => s.2 += 1,
            None => seen.push((format!("{line}:{col}"), msg, 0)),
        }
    }
    if seen.is_empty() {
        return indent(&stderr);
    }
    let lines: Vec<String> = seen
        .iter()
        .map(|(at, msg, more)| match more {
            0 => format!("{at}: {msg}"),
            n => format!("{at}: {msg} (+{n} more lines)"),
        })
        .collect();
    indent(&lines.join("\n"))
}

fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("            {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_rules_file_has_a_table_that_tests_it() {
    for (rules, table) in corpus_files() {
        let ex = load_expectations(&table);
        let file = name(&rules);
        let text = std::fs::read_to_string(&rules).unwrap();
        assert!(
            text.lines().take(8).any(|l| l.contains("commit")),
            "{file}: the header names the source's repository, path and commit"
        );
        if ex.refusals.is_empty() {
            assert!(!ex.runs.is_empty(), "{file}: no run in its table");
            for run in &ex.runs {
                assert!(
                    run.packets.len() >= 2,
                    "{file}:{}: a run needs at least two packets",
                    run.line
                );
            }
        }
    }
    let tables = std::fs::read_dir(corpus_dir())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "expect")
        })
        .count();
    assert_eq!(tables, corpus_files().len(), "a .expect without its .rules");
}

/// Every crafted packet, read by tcpdump, shows the addresses, ports, TCP
/// flags and ICMP kind its table line describes.
#[test]
fn crafted_packets_read_back_by_tcpdump() {
    if !pcap_diff::tcpdump_available() {
        eprintln!(
            "\n!!!!!!!! SKIPPED: tcpdump is not on PATH; the crafted packets were \
             NOT checked against libpcap !!!!!!!!\n"
        );
        return;
    }
    let lines: Vec<PacketLine> = corpus_files()
        .iter()
        .flat_map(|(_, t)| load_expectations(t).runs)
        .flat_map(|r| r.packets)
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let pcap = tmp.path().join("all.pcap");
    craft::write_raw_pcap(&pcap, &lines.iter().map(|l| &l.packet).collect::<Vec<_>>());
    let out = Command::new("tcpdump")
        .args(["-n", "-r"])
        .arg(&pcap)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let printed: Vec<&str> = text.lines().collect();
    assert_eq!(printed.len(), lines.len(), "tcpdump read every packet");
    for (line, shown) in lines.iter().zip(&printed) {
        for want in tcpdump_words(line) {
            assert!(
                shown.contains(&want),
                "{}: tcpdump shows {shown:?}, which lacks {want:?}",
                line.text
            );
        }
    }
}

/// What tcpdump -n prints for a packet of this description.
fn tcpdump_words(line: &PacketLine) -> Vec<String> {
    use expect::L4;
    let p = &line.packet;
    let family = if p.src.is_ipv4() { "IP " } else { "IP6 " };
    let mut words = vec![family.to_owned()];
    match p.l4 {
        _ if p.frag => words.push(format!("{} > {}:", p.src, p.dst)),
        L4::Tcp {
            sport,
            dport,
            flags,
        } => {
            words.push(format!("{}.{sport} > {}.{dport}:", p.src, p.dst));
            words.push(format!("Flags [{}]", expect::tcp_flags_text(flags)));
        }
        L4::Udp { sport, dport } => words.push(format!("{}.{sport} > {}.{dport}:", p.src, p.dst)),
        L4::Icmp { .. } => words.push(format!("{} > {}: ICMP", p.src, p.dst)),
        L4::Icmp6 { .. } => words.push(format!("{} > {}: ICMP6", p.src, p.dst)),
        L4::Proto(_) => words.push(format!("{} > {}:", p.src, p.dst)),
    }
    words
}

/// Single rules of the corpus against pcap-filter expressions over the
/// tcpdump corpus (`common/pcap_diff.rs`). `lines` picks the corpus lines
/// that make the ruleset (every rule or table line containing one of the
/// strings, in file order), unchanged. A deny rule is replayed with
/// `--default-allow` against `(ip or ip6) and not (…)`, so both its
/// matching and its non-matching side are compared. A rule on an interface
/// gets it from `--iface`, so captures that name theirs are left out.
#[allow(clippy::too_many_arguments)]
fn corpus_rule_vs_libpcap(
    name: &str,
    file: &str,
    lines: &[&str],
    args: &[&str],
    expr: &str,
    skip: pcap_diff::Skip,
    min_passed: usize,
    min_dropped: usize,
) {
    let text = std::fs::read_to_string(corpus_dir().join(file)).unwrap();
    let rule_lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter(|l| lines.iter().any(|s| l.contains(s)))
        .collect();
    for s in lines {
        assert!(
            rule_lines.iter().any(|l| l.contains(s)),
            "{file}: no line holds {s:?}"
        );
    }
    let rules = rule_lines.join("\n") + "\n";
    let tmp = tempfile::tempdir().unwrap();
    let path = common::write_rules(tmp.path(), &rules);
    let check = weir([Path::new("check"), &path]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{file}: {rules:?} does not load:\n{}",
        distinct_errors(&path, &check.stderr)
    );
    let case = pcap_diff::Case {
        rules: &rules,
        expr,
        skip,
        min_passed,
        min_dropped,
        args,
        iface_by_flag: args.contains(&"--iface"),
    };
    pcap_diff::run_case(&format!("conformance::{name}"), &case);
}

macro_rules! libpcap_cases {
    ($( $name:ident: $file:expr, [$($line:expr),+], [$($arg:expr),*], $expr:expr, $skip:ident,
        passed >= $min_passed:expr, dropped >= $min_dropped:expr; )*) => {
        $(
            #[test]
            fn $name() {
                corpus_rule_vs_libpcap(
                    stringify!($name), $file, &[$($line),+], &[$($arg),*], $expr,
                    pcap_diff::Skip::$skip, $min_passed, $min_dropped,
                );
            }
        )*
    };
}

libpcap_cases! {
    // rc.firewall's loopback and IPv6 rules, which every profile gets.
    libpcap_rc_firewall_deny_to_loopback_net: "rc.firewall-open.rules",
        ["add 200 deny all from any to 127.0.0.0/8"], ["--default-allow"],
        "(ip or ip6) and not ip dst net 127.0.0.0/8", Nothing, passed >= 10000, dropped >= 150;
    libpcap_rc_firewall_deny_to_ipv6_loopback: "rc.firewall-open.rules",
        ["add 400 deny all from any to ::1"], ["--default-allow"],
        "(ip or ip6) and not ip6 dst host ::1", Nothing, passed >= 10000, dropped >= 10;
    libpcap_rc_firewall_dad: "rc.firewall-open.rules",
        ["pass ipv6-icmp from :: to ff02::/16"], [],
        "ip6 src host :: and ip6 dst net ff02::/16 and ip6 protochain 58", Nothing,
        passed >= 5, dropped >= 10000;
    libpcap_rc_firewall_link_local_icmp6: "rc.firewall-open.rules",
        ["pass ipv6-icmp from fe80::/10 to ff02::/16"], [],
        "ip6 src net fe80::/10 and ip6 dst net ff02::/16 and ip6 protochain 58", Nothing,
        passed >= 200, dropped >= 10000;
    // icmp6types reads the type behind the extension headers; pcap-filter
    // only in front of them.
    libpcap_rc_firewall_neighbour_discovery: "rc.firewall-open.rules",
        ["icmp6types 2,135,136"], [],
        "ip6 and ip6[6] == 58 and (ip6[40] == 2 or ip6[40] == 135 or ip6[40] == 136)", V6Ext,
        passed >= 200, dropped >= 10000;
    // rc.firewall's workstation profile.
    libpcap_workstation_mandatory_icmp: "rc.firewall-workstation.rules",
        ["pass icmp from any to any icmptype 3,4,11"], [],
        "icmp[icmptype] == 3 or icmp[icmptype] == 4 or icmp[icmptype] == 11", Nothing,
        passed >= 300, dropped >= 10000;
    libpcap_workstation_router_noise: "rc.firewall-workstation.rules",
        ["deny udp from any to any 520 in"], ["--default-allow", "--dir", "in"],
        "(ip or ip6) and not udp dst port 520", V6Ext, passed >= 10000, dropped >= 10;
    libpcap_workstation_web_noise: "rc.firewall-workstation.rules",
        ["deny tcp from any 80,443 to any 1024-65535 in"], ["--default-allow", "--dir", "in"],
        "(ip or ip6) and not (tcp and (src port 80 or src port 443) and dst portrange 1024-65535)",
        V6Ext, passed >= 10000, dropped >= 3000;
    libpcap_workstation_multicast: "rc.firewall-workstation.rules",
        ["deny ip from any to 224.0.0.0/24 in"], ["--default-allow", "--dir", "in"],
        "(ip or ip6) and not ip dst net 224.0.0.0/24", Nothing, passed >= 10000, dropped >= 200;
    libpcap_workstation_dhcp_discover: "rc.firewall-workstation.rules",
        ["from 0.0.0.0 68 to 255.255.255.255 67 out"], ["--dir", "out"],
        "ip src host 0.0.0.0 and ip dst host 255.255.255.255 and udp src port 68 and udp dst port 67",
        Nothing, passed >= 20, dropped >= 10000;
    // rc.firewall's simple profile: table 13 and the rule that reads it.
    libpcap_simple_bad_sources: "rc.firewall-simple.rules",
        ["table 13 add", "deny all from table(13) to any via em0"],
        ["--default-allow", "--iface", "em0"],
        "(ip or ip6) and not (ip src net 10.0.0.0/8 or ip src net 172.16.0.0/12 \
         or ip src net 192.168.0.0/16 or ip src net 0.0.0.0/8 or ip src net 169.254.0.0/16 \
         or ip src net 192.0.2.0/24 or ip src net 224.0.0.0/4 or ip src net 240.0.0.0/4)",
        Nothing, passed >= 5000, dropped >= 5000;
    // The Handbook's ruleset.
    libpcap_handbook_private_source: "handbook-ruleset.rules",
        ["00300 deny all from 192.168.0.0/16"], ["--default-allow", "--iface", "dc0", "--dir", "in"],
        "(ip or ip6) and not ip src net 192.168.0.0/16", Nothing, passed >= 10000, dropped >= 200;
    libpcap_handbook_public_ping: "handbook-ruleset.rules",
        ["00310 deny icmp from any to any in via"], ["--default-allow", "--iface", "dc0", "--dir", "in"],
        "(ip or ip6) and not (ip proto 1 or ip6 protochain 1)", Nothing,
        passed >= 10000, dropped >= 300;
    // ipfw(8): an address set, and src-ip lists with and without a space.
    libpcap_ipfw8_address_set: "ipfw8-address-sets.rules",
        ["deny ip from 10.1.2.0/24{8,38,60} to any"], ["--default-allow"],
        "(ip or ip6) and not (ip src host 10.1.2.8 or ip src host 10.1.2.38 or ip src host 10.1.2.60)",
        Nothing, passed >= 10000, dropped >= 30;
    libpcap_ipfw8_src_ip_list: "ipfw8-syntax.rules",
        ["src-ip 10.0.0.0/24,127.0.0.1/8"], ["--default-allow"],
        "(ip or ip6) and not (ip src net 10.0.0.0/24 or ip src net 127.0.0.0/8)", Nothing,
        passed >= 10000, dropped >= 150;
    libpcap_ipfw8_src_ip_list_spaced: "ipfw8-syntax.rules",
        ["src-ip 10.0.0.0/24, 127.0.0.1/8"], ["--default-allow"],
        "(ip or ip6) and not (ip src net 10.0.0.0/24 or ip src net 127.0.0.0/8)", Nothing,
        passed >= 10000, dropped >= 150;
    // Hand-offs: with one_pass at its default 1 a packet sent to a pipe
    // leaves the ruleset accepted; NAT accepts IPv4 and denies the rest
    // (ip_fw2.c, O_NAT).
    libpcap_ipfw8_pipe_udp: "ipfw8-pipe-mask-all.rules",
        ["ipfw add pipe 1 udp from any to any", "ipfw pipe 1 config"], [],
        "ip proto 17 or ip6 protochain 17", Nothing, passed >= 3000, dropped >= 10000;
    libpcap_ipfw8_nat_takes_ipv4: "ipfw8-nat.rules",
        ["ipfw add nat 123 all from any to any", "ipfw nat 123 config"], [],
        "ip", Nothing, passed >= 10000, dropped >= 1000;
}
