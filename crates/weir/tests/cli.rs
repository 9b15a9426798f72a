//! End-to-end tests of the `weir` command line: the real binary, real files
//! in temporary directories, outputs read back and cross-checked.

mod common;

use common::*;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, text).expect("write file");
    p
}

fn p(path: &Path) -> &OsStr {
    path.as_os_str()
}

/// The closing stderr line, parsed: (read, passed, dropped, malformed, non-IP).
fn summary_line(stderr: &str) -> (u64, u64, u64, u64, u64) {
    let line = stderr
        .lines()
        .rfind(|l| l.contains(" packets read, "))
        .unwrap_or_else(|| panic!("no summary line in stderr:\n{stderr}"));
    let words: Vec<&str> = line.split(' ').collect();
    assert_eq!(words.len(), 11, "summary line shape: {line:?}");
    let expect = [
        "",
        "packets",
        "read,",
        "",
        "passed,",
        "",
        "dropped,",
        "",
        "malformed,",
        "",
        "non-IP",
    ];
    for (k, w) in expect.iter().enumerate() {
        if !w.is_empty() {
            assert_eq!(words[k], *w, "word {k} of {line:?}");
        }
    }
    let n = |k: usize| -> u64 {
        words[k]
            .parse()
            .unwrap_or_else(|_| panic!("number at word {k} of {line:?}"))
    };
    (n(0), n(3), n(5), n(7), n(9))
}

/// `tcpdump -tt -n -r FILE` lines (timestamps and decoded contents).
fn tcpdump_lines(path: &Path) -> Vec<String> {
    let out = Command::new("tcpdump")
        .args(["-tt", "-n", "-r"])
        .arg(path)
        .output()
        .expect("tcpdump is installed");
    assert!(out.status.success(), "tcpdump -r {}", path.display());
    // One entry per packet: continuation lines (indented) join the line
    // before them.
    let mut packets: Vec<String> = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        match packets.last_mut() {
            Some(last) if line.starts_with(['\t', ' ']) => {
                last.push('\n');
                last.push_str(line);
            }
            _ => packets.push(line.to_owned()),
        }
    }
    packets
}

// ---------------------------------------------------------------- check

#[test]
fn check_accepts_demo_rules() {
    let rules = demo_rules();
    let out = weir(["check".as_ref(), p(&rules)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    let rest = err
        .strip_prefix(&format!("{}: 13 rules, ", rules.display()))
        .unwrap_or_else(|| panic!("{err:?}"));
    let (n, tail) = rest.split_once(' ').unwrap();
    assert!(n.parse::<u32>().unwrap() >= 13, "{err:?}");
    // 13 rules: enough for the classifier, whose size is reported.
    let tail = tail
        .strip_prefix("micro-instructions, classifier ")
        .unwrap_or_else(|| panic!("{err:?}"));
    assert!(tail.ends_with(" KiB, ok\n"), "{err:?}");
    assert!(out.stdout.is_empty());
}

/// `--stats` on 1,500 rules (the trie classifier) that each allow one
/// port no generated packet uses, then the default rule: every packet's
/// candidates are few, and the linear walk would try all 1,501.
#[test]
fn check_stats_reports_the_classifier() {
    let dir = tmp();
    let rules: String = (0..1500)
        .map(|i| {
            format!(
                "{} allow tcp from 10.{}.{}.0/24 to any {}\n",
                i + 1,
                i / 256,
                i % 256,
                40000 + i
            )
        })
        .collect();
    let f = write(dir.path(), "many.rules", &rules);
    let out = weir(["check".as_ref(), "--stats".as_ref(), p(&f)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("1500 rules"), "{text}");
    assert!(text.contains("walk:        trie\n"), "{text}");
    // Every rule in an automaton: no bit blocks, nothing left unindexed.
    let parts = text
        .lines()
        .find(|l| l.starts_with("parts:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        parts.contains(" 0 bit blocks, 0 rules every packet tries"),
        "{text}"
    );
    let automata: usize = parts["parts:".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=24).contains(&automata), "{text}");
    let field = |name: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{text}"));
        line[name.len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(field("build time:") > 0.0, "{text}");
    assert!(field("memory:") > 0.0, "{text}");
    let candidates = field("candidates:");
    assert!((1.0..4.0).contains(&candidates), "{text}");
    assert!(
        text.contains("(of 1501), over the ") && text.contains(" IP packets of 10000 generated"),
        "{text}"
    );

    // The same figures as one JSON object.
    let out = weir([
        "check".as_ref(),
        "--stats".as_ref(),
        "--json".as_ref(),
        p(&f),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rule_count"], 1500, "{v}");
    assert_eq!(v["walk"], "trie", "{v}");
    assert_eq!(v["parts"]["blocks"], 0, "{v}");
    assert_eq!(v["parts"]["unindexed"], 0, "{v}");
    assert_eq!(
        v["parts"]["automata"].as_u64(),
        Some(automata as u64),
        "{v}"
    );
    assert!(v["classifier_bytes"].as_u64().unwrap() > 0, "{v}");
    let json_candidates = v["candidates_per_packet"].as_f64().unwrap();
    assert!((json_candidates - candidates).abs() < 0.05, "{v}");
    assert_eq!(v["generated"], 10000, "{v}");

    // The bitsets have no parts; --json without --stats is a usage error.
    let small = write(dir.path(), "small.rules", "allow tcp from any to any 80\n");
    let out = weir([
        "check".as_ref(),
        "--stats".as_ref(),
        "--json".as_ref(),
        p(&small),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("parts").is_none(), "{v}");
    let out = weir(["check".as_ref(), "--json".as_ref(), p(&small)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn check_reports_file_line_col_and_caret() {
    let dir = tmp();
    let f = write(
        dir.path(),
        "bad.rules",
        "allow ip from any to any\ndeny tcp from any to any 99999\n",
    );
    let out = weir(["check".as_ref(), p(&f)]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "{}:2:26: port 99999 is out of range\n  deny tcp from any to any 99999\n                           ^^^^^\n",
            f.display()
        )
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn check_reports_every_error_in_a_file() {
    let dir = tmp();
    let f = write(
        dir.path(),
        "bad.rules",
        "allow tcp from any to any 99999\n\
         # a comment\n\
         foo bar\n\
         allow ip from any to any\n\
         allow udp from any to 1.2.3.4/40\n\
         allow tcp from any to any tcpflags xyz\n",
    );
    let out = weir(["check".as_ref(), p(&f)]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let prefix = format!("{}:", f.display());
    let heads: Vec<&str> = err.lines().filter(|l| l.starts_with(&prefix)).collect();
    let lines: Vec<&str> = heads
        .iter()
        .map(|h| h[prefix.len()..].split(':').next().unwrap())
        .collect();
    assert_eq!(
        lines,
        ["1", "3", "5", "6"],
        "one error per bad line:\n{err}"
    );
    assert!(err.contains(":1:27: port 99999 is out of range"), "{err}");
    assert!(err.contains(":3:1: unknown action 'foo'"), "{err}");
    assert!(err.contains(":6:36: unknown TCP flag 'xyz'"), "{err}");
    // Each error carries its source line and a caret line.
    assert_eq!(
        err.lines()
            .filter(|l| l.trim_start().starts_with('^'))
            .count(),
        4
    );
}

/// `check --print` keeps the rules of disabled sets (with their `set`),
/// and its `set disable` line keeps them out when read back.
#[test]
fn check_print_keeps_rules_of_disabled_sets() {
    let dir = tmp();
    let f = write(
        dir.path(),
        "r.rules",
        "ipfw add 100 set 3 deny ip from 10.0.0.0/8 to any\n\
         ipfw add 200 allow ip from any to any\n\
         ipfw set disable 3\n",
    );
    let printed = stdout(&weir_ok(["check".as_ref(), "--print".as_ref(), p(&f)]));
    assert_eq!(
        printed,
        "ipfw set disable 3\n\
         00100 set 3 deny ip from 10.0.0.0/8 to any\n\
         00200 allow ip from any to any\n\
         # 65535 deny ip from any to any (implicit)\n"
    );
    let g = write(dir.path(), "canon.rules", &printed);
    let packets = [(0, ipv4([10, 0, 0, 1], [192, 0, 2, 1], 17, 5000, 53, 0))];
    let t = write_trace(dir.path(), "t.pcap", &packets);
    for rules in [&f, &g] {
        let out = run_verdicts(rules, &t, &[]);
        assert_eq!(rule_actions(&out), ["200,allow"], "set 3 stays disabled");
    }
}

#[test]
fn check_print_is_canonical_and_stable() {
    let dir = tmp();
    let f = write(
        dir.path(),
        "r.rules",
        "add allow tcp from any to any 80\n\
         allow   udp from any to any  53 // dns\n\
         \n\
         # comment\n\
         deny log ip from 10.0.0.0/8 to not 10.1.2.3\n\
         300 count icmp from any to any icmptypes echo,0\n",
    );
    let first = stdout(&weir_ok(["check".as_ref(), "--print".as_ref(), p(&f)]));
    assert_eq!(
        first,
        "00100 allow tcp from any to any 80\n\
         00200 allow udp from any to any 53 // dns\n\
         00300 deny log ip from 10.0.0.0/8 to not 10.1.2.3\n\
         00300 count icmp from any to any icmptypes 0,8\n\
         # 65535 deny ip from any to any (implicit)\n"
    );
    // Feeding the canonical form back prints the same thing (the implicit
    // default rule is printed as a comment, so it reads back).
    let g = write(dir.path(), "canon.rules", &first);
    let second = stdout(&weir_ok(["check".as_ref(), "--print".as_ref(), p(&g)]));
    assert_eq!(first, second);
    // Same input, same output.
    let third = stdout(&weir_ok(["check".as_ref(), "--print".as_ref(), p(&f)]));
    assert_eq!(first, third);
    // The demo ruleset round-trips too.
    let demo = stdout(&weir_ok(
        ["check", "--print"]
            .map(OsStr::new)
            .into_iter()
            .chain([p(&demo_rules())]),
    ));
    let d = write(
        dir.path(),
        "demo.canon",
        &demo
            .lines()
            .filter(|l| !l.starts_with("65535 "))
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    );
    assert_eq!(
        demo,
        stdout(&weir_ok(["check".as_ref(), "--print".as_ref(), p(&d)]))
    );
}

// ---------------------------------------------------------------- run: outputs

struct Split {
    _dir: tempfile::TempDir,
    input: PathBuf,
    pass: PathBuf,
    drop: PathBuf,
    verdicts: Vec<VerdictLine>,
    stderr: String,
}

fn split_run(n: u64, seed: u64, extra: &[&str]) -> Split {
    let dir = tmp();
    let input = gen_trace(dir.path(), "in.pcap", n, seed);
    let pass = dir.path().join("pass.pcap");
    let drop = dir.path().join("drop.pcap");
    let v = dir.path().join("v.csv");
    let rules = demo_rules();
    let mut args: Vec<&OsStr> = vec![
        "run".as_ref(),
        p(&rules),
        "-r".as_ref(),
        p(&input),
        "-w".as_ref(),
        p(&pass),
        "--drop-out".as_ref(),
        p(&drop),
        "--verdicts".as_ref(),
        p(&v),
    ];
    args.extend(extra.iter().map(OsStr::new));
    let out = weir_ok(&args);
    let verdicts = parse_verdicts(&fs::read_to_string(&v).unwrap());
    Split {
        input,
        pass,
        drop,
        verdicts,
        stderr: stderr(&out),
        _dir: dir,
    }
}

#[test]
fn run_splits_every_packet_into_pass_or_drop() {
    let s = split_run(5000, 3, &[]);
    let input = read_capture(&s.input);
    let pass = read_capture(&s.pass);
    let drop = read_capture(&s.drop);
    assert_eq!(input.frames.len(), 5000);
    assert_eq!(pass.frames.len() + drop.frames.len(), 5000);
    assert!(!pass.frames.is_empty() && !drop.frames.is_empty());

    let (read, passed, dropped, malformed, non_ip) = summary_line(&s.stderr);
    assert_eq!(read, 5000);
    assert_eq!(passed, pass.frames.len() as u64);
    assert_eq!(dropped, drop.frames.len() as u64);
    assert!(malformed > 0 && non_ip > 0, "generator makes both kinds");

    // Same container format and link type as the input.
    assert_eq!(pass.format, input.format);
    assert_eq!(drop.format, input.format);
    assert_eq!(pass.link_types, input.link_types);
    assert_eq!(drop.link_types, input.link_types);

    // Each packet went, unchanged and with its timestamp, to the output its
    // verdict names, in input order.
    assert_eq!(s.verdicts.len(), 5000);
    let (mut pi, mut di) = (pass.frames.iter(), drop.frames.iter());
    for (f, v) in input.frames.iter().zip(&s.verdicts) {
        let got = if passes(&v.action) {
            pi.next()
        } else {
            di.next()
        };
        let got = got.unwrap_or_else(|| panic!("packet {} missing from its output", v.index));
        assert_eq!(
            (got.ts_ns, got.orig_len, &got.data),
            (f.ts_ns, f.orig_len, &f.data),
            "packet {}",
            v.index
        );
    }
    assert!(pi.next().is_none() && di.next().is_none());

    // tcpdump sees the same timestamps and contents.
    let all = tcpdump_lines(&s.input);
    assert_eq!(all.len(), 5000);
    let want_pass: Vec<&String> = all
        .iter()
        .zip(&s.verdicts)
        .filter(|(_, v)| passes(&v.action))
        .map(|(l, _)| l)
        .collect();
    let want_drop: Vec<&String> = all
        .iter()
        .zip(&s.verdicts)
        .filter(|(_, v)| !passes(&v.action))
        .map(|(l, _)| l)
        .collect();
    let got_pass = tcpdump_lines(&s.pass);
    let got_drop = tcpdump_lines(&s.drop);
    assert_eq!(got_pass.iter().collect::<Vec<_>>(), want_pass);
    assert_eq!(got_drop.iter().collect::<Vec<_>>(), want_drop);
}

#[test]
fn summary_line_format() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 300, 1);
    let out = weir_ok(["run".as_ref(), p(&demo_rules()), "-r".as_ref(), p(&t)]);
    let err = stderr(&out);
    let last = err.lines().last().unwrap();
    let (read, passed, dropped, malformed, non_ip) = summary_line(last);
    assert_eq!(
        last,
        format!("{read} packets read, {passed} passed, {dropped} dropped, {malformed} malformed, {non_ip} non-IP")
    );
    assert_eq!(read, 300);
    assert_eq!(passed + dropped, read);
    // -q drops it.
    let q = weir_ok([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&t),
        "-q".as_ref(),
    ]);
    assert!(!stderr(&q).contains("packets read"));
}

fn rule_json(v: &serde_json::Value) -> Vec<(u64, String, String, u64, u64)> {
    v["weir"]
        .as_array()
        .expect("weir array")
        .iter()
        .filter_map(|o| o.get("rule"))
        .map(|r| {
            (
                r["number"].as_u64().unwrap(),
                r["action"].as_str().unwrap().to_owned(),
                r["text"].as_str().unwrap().to_owned(),
                r["counter"]["packets"].as_u64().unwrap(),
                r["counter"]["bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn verdicts_csv_agrees_with_json_counters() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 3000, 11);
    let v = dir.path().join("v.csv");
    let out = weir_ok([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&t),
        "--verdicts".as_ref(),
        p(&v),
        "--json".as_ref(),
    ]);
    let verdicts = parse_verdicts(&fs::read_to_string(&v).unwrap());
    assert_eq!(verdicts.len(), 3000);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rules = rule_json(&json);
    let actions: HashMap<u64, &str> = rules.iter().map(|r| (r.0, r.1.as_str())).collect();

    let mut decided: HashMap<u64, u64> = HashMap::new();
    for l in &verdicts {
        match l.rule {
            Some(r) => {
                let action = actions
                    .get(&u64::from(r))
                    .unwrap_or_else(|| panic!("rule {r} of line {} not in ruleset", l.index));
                assert_eq!(*action, l.action, "line {}", l.index);
                assert_eq!(l.note, "");
                *decided.entry(u64::from(r)).or_default() += 1;
            }
            None => assert!(
                l.note == "non-ip" || l.note.starts_with("malformed:"),
                "line {l:?}"
            ),
        }
    }
    // Terminal rules' counters count exactly the packets they decided.
    // (Demo rules have unique numbers; count rules never decide.)
    for (num, action, text, packets, _) in &rules {
        if action == "count" {
            assert!(
                !decided.contains_key(num),
                "count rule {num} decided a packet"
            );
            continue;
        }
        assert_eq!(
            decided.get(num).copied().unwrap_or(0),
            *packets,
            "rule {num} {text}"
        );
    }
    let summary = json["weir"].as_array().unwrap().last().unwrap()["summary"].clone();
    let non_ip = verdicts.iter().filter(|l| l.note == "non-ip").count() as u64;
    let malformed = verdicts
        .iter()
        .filter(|l| l.note.starts_with("malformed:"))
        .count() as u64;
    assert_eq!(summary["non_ip"].as_u64(), Some(non_ip));
    assert_eq!(summary["malformed"].as_u64(), Some(malformed));
    let passed = verdicts.iter().filter(|l| passes(&l.action)).count() as u64;
    assert_eq!(summary["passed"].as_u64(), Some(passed));
}

#[test]
fn annotate_writes_pcapng_with_a_comment_per_packet() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 1500, 5);
    let a = dir.path().join("a.pcapng");
    let v = dir.path().join("v.csv");
    weir_ok([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&t),
        "--annotate".as_ref(),
        p(&a),
        "--verdicts".as_ref(),
        p(&v),
    ]);
    let ng = parse_pcapng(&fs::read(&a).unwrap());
    let input = read_capture(&t);
    let verdicts = parse_verdicts(&fs::read_to_string(&v).unwrap());
    assert_eq!(ng.packets.len(), input.frames.len());
    assert_eq!(ng.packets.len(), verdicts.len());
    assert_eq!(ng.link_types, [1], "one Ethernet interface");
    let scale = 10u64.pow(9 - u32::from(ng.tsresol[0]));
    for ((pk, f), l) in ng.packets.iter().zip(&input.frames).zip(&verdicts) {
        assert_eq!(pk.data, f.data, "packet {}", l.index);
        assert_eq!(pk.ts * scale, f.ts_ns, "packet {} timestamp", l.index);
        let want = match l.rule {
            Some(r) => format!("rule {r} {}", l.action),
            None => match l.note.strip_prefix("malformed:") {
                Some(why) => format!("malformed {why} {}", l.action),
                None => format!("non-ip {}", l.action),
            },
        };
        assert_eq!(pk.comments, [want], "packet {}", l.index);
    }
    // Deciding rules show up as "rule NNN action" in the comments.
    assert!(ng
        .packets
        .iter()
        .any(|pk| pk.comments[0] == "rule 200 allow"));
    assert!(ng
        .packets
        .iter()
        .any(|pk| pk.comments[0] == "rule 65535 deny"));
    // And tcpdump reads it.
    assert_eq!(tcpdump_lines(&a).len(), 1500);
}

/// A `tablearg` rule's verdicts and annotations name the value the packet
/// found (`pipe 4`, `fwd 10.23.2.1`), each action reading its field of a
/// typed value; other rules keep their text.
#[test]
fn tablearg_actions_show_the_value_found() {
    let dir = tmp();
    let rules = write_rules(
        dir.path(),
        "table T add 10.0.0.0/8 1\ntable T add 10.1.0.0/16 4\n\
         table H create valtype pipe,ipv4\ntable H add 192.0.2.0/24 9,10.23.2.1\n\
         100 pipe tablearg udp from table(T) to any\n\
         200 fwd tablearg udp from table(H) to any\n\
         300 allow udp from any to any\n",
    );
    let packets: Vec<(u64, Vec<u8>)> =
        [[10, 9, 0, 1], [10, 1, 0, 1], [192, 0, 2, 7], [11, 0, 0, 1]]
            .iter()
            .enumerate()
            .map(|(k, src)| {
                (
                    k as u64 * 1000,
                    ipv4(*src, [198, 51, 100, 1], 17, 5000, 53, 0),
                )
            })
            .collect();
    let t = write_trace(dir.path(), "t.pcap", &packets);
    let a = dir.path().join("a.pcapng");
    let out = run_verdicts(&rules, &t, &["--annotate", a.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        rule_actions(&out),
        ["100,pipe 1", "100,pipe 4", "200,fwd 10.23.2.1", "300,allow"]
    );
    let comments: Vec<String> = parse_pcapng(&fs::read(&a).unwrap())
        .packets
        .into_iter()
        .flat_map(|pk| pk.comments)
        .collect();
    assert_eq!(
        comments,
        [
            "rule 100 pipe 1 (pass)",
            "rule 100 pipe 4 (pass)",
            "rule 200 fwd 10.23.2.1 (pass)",
            "rule 300 allow"
        ]
    );
}

#[test]
fn json_output_shape() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 1000, 2);
    let out = weir_ok([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&t),
        "--json".as_ref(),
    ]);
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "one JSON document on one line");
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let items = v["weir"].as_array().expect("{\"weir\": [...]}");
    assert!(items[0]["metainfo"].is_object(), "metainfo first");
    assert_eq!(items[0]["metainfo"]["dispatch"], "table");
    let rules = &items[1..items.len() - 1];
    assert_eq!(rules.len(), 14, "13 demo rules + default");
    for r in rules {
        let r = &r["rule"];
        assert!(r["number"].is_u64() && r["action"].is_string() && r["text"].is_string());
        assert!(r["counter"]["packets"].is_u64() && r["counter"]["bytes"].is_u64());
    }
    let numbers: Vec<u64> = rules
        .iter()
        .map(|r| r["rule"]["number"].as_u64().unwrap())
        .collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(*numbers.last().unwrap(), 65535);
    let s = &items.last().unwrap()["summary"];
    assert_eq!(s["packets"].as_u64(), Some(1000));
    assert_eq!(
        s["passed"].as_u64().unwrap() + s["dropped"].as_u64().unwrap(),
        s["packets"].as_u64().unwrap()
    );
    let by_reason: u64 = s["malformed_by_reason"]
        .as_object()
        .unwrap()
        .values()
        .map(|x| x.as_u64().unwrap())
        .sum();
    assert_eq!(s["malformed"].as_u64(), Some(by_reason));
    // The stderr summary agrees.
    let (read, passed, dropped, malformed, non_ip) = summary_line(&stderr(&out));
    assert_eq!(
        (read, passed, dropped, malformed, non_ip),
        (
            s["packets"].as_u64().unwrap(),
            s["passed"].as_u64().unwrap(),
            s["dropped"].as_u64().unwrap(),
            s["malformed"].as_u64().unwrap(),
            s["non_ip"].as_u64().unwrap()
        )
    );
    // Unmatched rules are those with zero packets.
    let zero: Vec<u64> = rules
        .iter()
        .filter(|r| r["rule"]["counter"]["packets"] == 0)
        .map(|r| r["rule"]["number"].as_u64().unwrap())
        .collect();
    let listed: Vec<u64> = s["unmatched_rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(listed, zero);
}

#[test]
fn counters_table_matches_ipfw_show() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 2000, 9);
    let out = weir_ok([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&t),
        "--counters".as_ref(),
        "--json".as_ref(),
    ]);
    let text = stdout(&out);
    let (table, json) = text.split_at(text.find("{\"weir\"").expect("JSON after table"));
    let rules = rule_json(&serde_json::from_str(json).unwrap());
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), rules.len());
    let pw = rules.iter().map(|r| r.3.to_string().len()).max().unwrap();
    let bw = rules.iter().map(|r| r.4.to_string().len()).max().unwrap();
    assert!(bw > pw, "bytes column is wider than packets");
    for (line, (num, _, text, packets, bytes)) in lines.iter().zip(&rules) {
        let want = format!("{num:05} {packets:>pw$} {bytes:>bw$} {text}");
        assert_eq!(*line, want);
        // Checked by hand too: %05u, single spaces, right alignment.
        assert_eq!(&line[..5], format!("{num:05}"));
        assert_eq!(&line[5..6], " ");
        let pcol = &line[6..6 + pw];
        assert_eq!(pcol.trim_start(), packets.to_string());
        assert_eq!(&line[6 + pw..7 + pw], " ");
        assert_eq!(line[7 + pw..7 + pw + bw].trim_start(), bytes.to_string());
        assert_eq!(&line[7 + pw + bw..8 + pw + bw], " ");
        assert_eq!(&line[8 + pw + bw..], text);
    }
    assert!(lines.last().unwrap().starts_with("65535 "));
    assert!(lines.last().unwrap().ends_with(" deny ip from any to any"));
    assert!(lines[0].starts_with("00100 "));
}

#[test]
fn dispatch_table_gives_identical_verdicts() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 3000, 4);
    let csv = |dispatch: &str| {
        let v = dir.path().join(format!("{dispatch}.csv"));
        let out = weir_ok([
            "run".as_ref(),
            p(&demo_rules()),
            "-r".as_ref(),
            p(&t),
            "--dispatch".as_ref(),
            dispatch.as_ref(),
            "--verdicts".as_ref(),
            p(&v),
            "--counters".as_ref(),
        ]);
        (fs::read(&v).unwrap(), out.stdout)
    };
    let (m, mc) = csv("match");
    let (t2, tc) = csv("table");
    assert!(m.len() > 3000 * 8);
    assert!(m == t2, "verdict CSVs differ between dispatch kinds");
    assert_eq!(mc, tc, "counters differ between dispatch kinds");
}

#[test]
fn default_allow_flips_only_the_default_rule() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 2000, 6);
    let rules = demo_rules();
    let run = |extra: &[&str]| {
        let v = dir.path().join("v.csv");
        let mut args: Vec<&OsStr> = vec![
            "run".as_ref(),
            p(&rules),
            "-r".as_ref(),
            p(&t),
            "--verdicts".as_ref(),
            p(&v),
        ];
        args.extend(extra.iter().map(OsStr::new));
        let out = weir_ok(&args);
        (
            parse_verdicts(&fs::read_to_string(&v).unwrap()),
            summary_line(&stderr(&out)),
        )
    };
    let (deny, sd) = run(&[]);
    let (allow, sa) = run(&["--default-allow"]);
    let mut flipped = 0;
    for (d, a) in deny.iter().zip(&allow) {
        if d.rule == Some(65535) {
            assert_eq!((d.action.as_str(), a.action.as_str()), ("deny", "allow"));
            assert_eq!(a.rule, Some(65535));
            flipped += 1;
        } else {
            assert_eq!(d, a);
        }
    }
    assert!(flipped > 0);
    assert_eq!(
        sa.1,
        sd.1 + flipped,
        "passed grows by the default rule's packets"
    );
    assert_eq!(sa.2 + flipped, sd.2);
}

fn is_arp(frame: &[u8]) -> bool {
    frame.len() >= 14 && frame[12..14] == [0x08, 0x06]
}

#[test]
fn non_ip_drop_drops_arp() {
    let default = split_run(2000, 8, &[]);
    let dropping = split_run(2000, 8, &["--non-ip", "drop"]);
    let input = read_capture(&default.input);
    let arp: Vec<usize> = (0..input.frames.len())
        .filter(|&k| is_arp(&input.frames[k].data))
        .collect();
    assert!(!arp.is_empty(), "generator makes ARP");
    for &k in &arp {
        assert_eq!(default.verdicts[k].note, "non-ip");
        assert_eq!(default.verdicts[k].action, "allow");
        assert_eq!(dropping.verdicts[k].note, "non-ip");
        assert_eq!(dropping.verdicts[k].action, "deny");
    }
    let pass = read_capture(&dropping.pass);
    let drop = read_capture(&dropping.drop);
    assert!(
        !pass.frames.iter().any(|f| is_arp(&f.data)),
        "no ARP passes"
    );
    assert_eq!(
        drop.frames.iter().filter(|f| is_arp(&f.data)).count(),
        arp.len()
    );
    let pass_default = read_capture(&default.pass);
    assert_eq!(
        pass_default
            .frames
            .iter()
            .filter(|f| is_arp(&f.data))
            .count(),
        arp.len()
    );
    // IP verdicts do not move.
    for (a, b) in default.verdicts.iter().zip(&dropping.verdicts) {
        if a.note != "non-ip" {
            assert_eq!(a, b);
        }
    }
}

#[test]
fn count_flag_stops_after_n_packets() {
    let s = split_run(500, 12, &["-c", "10"]);
    assert_eq!(s.verdicts.len(), 10);
    assert_eq!(summary_line(&s.stderr).0, 10);
    let n = read_capture(&s.pass).frames.len() + read_capture(&s.drop).frames.len();
    assert_eq!(n, 10);
    let input = read_capture(&s.input);
    let pass = read_capture(&s.pass);
    let first_pass = input
        .frames
        .iter()
        .zip(&s.verdicts)
        .filter(|(_, v)| passes(&v.action))
        .map(|(f, _)| f.data.clone())
        .collect::<Vec<_>>();
    assert_eq!(
        pass.frames
            .iter()
            .map(|f| f.data.clone())
            .collect::<Vec<_>>(),
        first_pass
    );
}

#[test]
fn stdin_to_stdout_pipe() {
    let mut gen = Command::new(bin())
        .args(["gen", "-n", "400", "--seed", "21", "-o", "-"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let run = Command::new(bin())
        .arg("run")
        .arg(demo_rules())
        .args(["-r", "-", "-w", "-"])
        .stdin(gen.stdout.take().unwrap())
        .output()
        .unwrap();
    assert!(gen.wait().unwrap().success());
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(run.stdout.len() > 24, "pcap with packets on stdout");
    let (read, passed, ..) = summary_line(&stderr(&run));
    assert_eq!(read, 400);
    let dir = tmp();
    let f = dir.path().join("out.pcap");
    fs::write(&f, &run.stdout).unwrap();
    let cap = read_capture(&f);
    assert_eq!(cap.frames.len() as u64, passed);
    // Same as the file-to-file run.
    let t = gen_trace(dir.path(), "t.pcap", 400, 21);
    let w = dir.path().join("w.pcap");
    weir_ok([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&t),
        "-w".as_ref(),
        p(&w),
    ]);
    assert_eq!(fs::read(&w).unwrap(), run.stdout);
}

#[test]
fn stdout_cannot_be_shared_with_reports() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 10, 1);
    for flag in ["--counters", "--json", "--unmatched"] {
        let out = weir([
            "run".as_ref(),
            p(&demo_rules()),
            "-r".as_ref(),
            p(&t),
            "-w".as_ref(),
            "-".as_ref(),
            flag.as_ref(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{flag}");
        assert!(out.stdout.is_empty(), "{flag}");
    }
}

// ---------------------------------------------------------------- corrupt input

fn corrupt_case(make: impl Fn(&[u8], usize) -> Vec<u8>, what: &str) {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 300, 13);
    let bytes = fs::read(&t).unwrap();
    let offs = pcap_record_offsets(&bytes);
    let k = 137; // 0-based record that goes bad
    let bad = dir.path().join("bad.pcap");
    fs::write(&bad, make(&bytes, offs[k])).unwrap();
    let pass = dir.path().join("pass.pcap");
    let drop = dir.path().join("drop.pcap");
    let v = dir.path().join("v.csv");
    let out = weir([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&bad),
        "-w".as_ref(),
        p(&pass),
        "--drop-out".as_ref(),
        p(&drop),
        "--verdicts".as_ref(),
        p(&v),
    ]);
    assert_eq!(out.status.code(), Some(1), "{what}");
    let err = stderr(&out);
    let needle = format!("{}: byte offset {}: ", bad.display(), offs[k]);
    let line = err
        .lines()
        .find(|l| l.starts_with("weir: "))
        .unwrap_or_else(|| panic!("{what}: no error line in {err}"));
    assert!(
        line.starts_with(&format!("weir: {needle}")),
        "{what}: {line:?} should name {needle:?}"
    );
    assert!(line.contains(what), "{line}");
    // Every packet before the bad record was decided and written.
    assert_eq!(summary_line(&err).0, k as u64);
    let n = read_capture(&pass).frames.len() + read_capture(&drop).frames.len();
    assert_eq!(n, k);
    assert_eq!(parse_verdicts(&fs::read_to_string(&v).unwrap()).len(), k);
}

#[test]
fn truncated_capture_reports_offset_and_keeps_earlier_packets() {
    corrupt_case(|b, off| b[..off + 20].to_vec(), "truncated record");
}

#[test]
fn oversized_record_length_reports_offset_and_keeps_earlier_packets() {
    corrupt_case(
        |b, off| {
            let mut b = b.to_vec();
            b[off + 8..off + 12].copy_from_slice(&[0xff; 4]);
            b
        },
        "record captured length 4294967295",
    );
}

#[test]
fn missing_capture_is_a_runtime_error() {
    let dir = tmp();
    let out = weir([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&dir.path().join("nope.pcap")),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("nope.pcap"));
}

#[test]
fn usage_errors_exit_2() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 20, 1);
    let rules = demo_rules();
    let nope = dir.path().join("nope.rules");
    let cases: Vec<Vec<&OsStr>> = vec![
        vec![
            "run".as_ref(),
            p(&rules),
            "-r".as_ref(),
            p(&t),
            "--bogus".as_ref(),
        ],
        vec!["run".as_ref(), p(&rules)],
        vec![
            "explain".as_ref(),
            p(&rules),
            "-r".as_ref(),
            p(&t),
            "--packet".as_ref(),
            "0".as_ref(),
        ],
        vec![
            "explain".as_ref(),
            p(&rules),
            "-r".as_ref(),
            p(&t),
            "--packet".as_ref(),
            "21".as_ref(),
        ],
        vec!["explain".as_ref(), p(&rules), "-r".as_ref(), p(&t)],
        vec!["run".as_ref(), p(&nope), "-r".as_ref(), p(&t)],
        vec![
            "run".as_ref(),
            p(&rules),
            "-r".as_ref(),
            p(&t),
            "--dispatch".as_ref(),
            "jit".as_ref(),
        ],
        vec!["frobnicate".as_ref()],
        vec![],
    ];
    for args in cases {
        let out = weir(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "weir {args:?}: {}",
            stderr(&out)
        );
        assert!(!stderr(&out).is_empty(), "weir {args:?} says why");
    }
    let out = weir([
        "explain".as_ref(),
        p(&rules),
        "-r".as_ref(),
        p(&t),
        "--packet".as_ref(),
        "0".as_ref(),
    ]);
    assert!(stderr(&out).contains("--packet counts from 1"));
    let out = weir([
        "explain".as_ref(),
        p(&rules),
        "-r".as_ref(),
        p(&t),
        "--packet".as_ref(),
        "21".as_ref(),
    ]);
    assert!(
        stderr(&out).contains("has 20 packets; there is no packet 21"),
        "{}",
        stderr(&out)
    );
}

// ---------------------------------------------------------------- explain

#[test]
fn explain_agrees_with_verdicts() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 1000, 7);
    let v = dir.path().join("v.csv");
    weir_ok([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&t),
        "--verdicts".as_ref(),
        p(&v),
    ]);
    let verdicts = parse_verdicts(&fs::read_to_string(&v).unwrap());
    let offs = pcap_record_offsets(&fs::read(&t).unwrap());
    // A sample of rules, plus the first non-IP and malformed frames and
    // the first and last packets.
    let mut picks: Vec<usize> = vec![1, 1000];
    let mut seen = std::collections::HashSet::new();
    for l in &verdicts {
        let key = (l.rule, l.note.clone());
        if seen.insert(key) {
            picks.push(l.index as usize);
        }
    }
    assert!(picks.iter().any(|&n| verdicts[n - 1].note == "non-ip"));
    assert!(picks
        .iter()
        .any(|&n| verdicts[n - 1].note.starts_with("malformed:")));
    assert!(picks.len() > 10, "many deciding rules covered");
    for n in picks {
        let out = weir_ok([
            "explain".as_ref(),
            p(&demo_rules()),
            "-r".as_ref(),
            p(&t),
            "--packet".as_ref(),
            n.to_string().as_ref(),
        ]);
        let text = stdout(&out);
        let lines: Vec<&str> = text.lines().collect();
        let head = format!("packet {n} (byte offset {}): ", offs[n - 1]);
        assert!(lines[0].starts_with(&head), "{:?} vs {head:?}", lines[0]);
        let l = &verdicts[n - 1];
        let last = *lines.last().unwrap();
        match l.rule {
            Some(r) => {
                let verdict = if passes(&l.action) { "pass" } else { "drop" };
                assert_eq!(
                    last,
                    format!("decided by rule {r:05} ({}): {verdict}", l.action),
                    "packet {n}"
                );
                // Rule lines say match, no or skip; the last one is the decider.
                let tried: Vec<(&str, &str)> = lines
                    .iter()
                    .filter(|x| x.starts_with("  ") && !x.starts_with("   "))
                    .map(|x| {
                        let w: Vec<&str> = x.split_whitespace().collect();
                        (w[0], w[1])
                    })
                    .collect();
                assert!(!tried.is_empty());
                assert!(tried
                    .iter()
                    .all(|(_, m)| ["match", "no", "skip"].contains(m)));
                assert_eq!(
                    *tried.last().unwrap(),
                    (format!("{r:05}").as_str(), "match")
                );
            }
            None if l.note == "non-ip" => {
                assert!(lines[0].contains("non-IP frame"), "{}", lines[0]);
                let verdict = if l.action == "allow" { "pass" } else { "drop" };
                assert_eq!(
                    last,
                    format!("not IP: a layer-3 filter never sees it; policy verdict: {verdict}")
                );
            }
            None => {
                let why = l.note.strip_prefix("malformed:").unwrap();
                assert!(
                    lines[0].contains(&format!("malformed ({why})")),
                    "{}",
                    lines[0]
                );
                let verdict = if l.action == "allow" { "pass" } else { "drop" };
                assert!(
                    last.ends_with(&format!("policy verdict: {verdict}")),
                    "{last}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------- gen

#[test]
fn gen_is_reproducible() {
    let dir = tmp();
    let a = gen_trace(dir.path(), "a.pcap", 700, 42);
    let b = gen_trace(dir.path(), "b.pcap", 700, 42);
    let c = gen_trace(dir.path(), "c.pcap", 700, 43);
    let (a, b, c) = (
        fs::read(a).unwrap(),
        fs::read(b).unwrap(),
        fs::read(c).unwrap(),
    );
    assert!(a.len() > 24 + 700 * 16);
    assert_eq!(a, b, "same seed, same bytes");
    assert_ne!(a, c, "different seed, different bytes");
    assert_eq!(pcap_record_offsets(&a).len(), 700);
    assert_eq!(pcap_record_offsets(&c).len(), 700);
}

#[test]
fn gen_zero_packets_is_an_empty_pcap() {
    let dir = tmp();
    let e = gen_trace(dir.path(), "e.pcap", 0, 1);
    let bytes = fs::read(&e).unwrap();
    assert_eq!(bytes.len(), 24);
    assert_eq!(&bytes[..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
    assert_eq!(
        u32::from_le_bytes(bytes[20..24].try_into().unwrap()),
        1,
        "Ethernet"
    );
    let cap = read_capture(&e);
    assert!(cap.frames.is_empty());
    assert_eq!(tcpdump_lines(&e).len(), 0);
    // And weir runs over it.
    let out = weir_ok(["run".as_ref(), p(&demo_rules()), "-r".as_ref(), p(&e)]);
    assert_eq!(summary_line(&stderr(&out)), (0, 0, 0, 0, 0));
}

// ---------------------------------------------------------------- log

#[test]
fn log_lines_are_limited_by_logamount() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 1000, 7);
    let rules = write(
        dir.path(),
        "log.rules",
        "100 deny log logamount 3 tcp from any to any\n200 allow ip from any to any\n",
    );
    let v = dir.path().join("v.csv");
    let out = weir_ok([
        "run".as_ref(),
        p(&rules),
        "-r".as_ref(),
        p(&t),
        "--verdicts".as_ref(),
        p(&v),
    ]);
    let err = stderr(&out);
    let logs: Vec<&str> = err.lines().filter(|l| l.starts_with("weir: ")).collect();
    assert_eq!(logs.len(), 3, "{err}");
    assert!(
        logs.iter().all(|l| l.starts_with("weir: 100 Deny TCP ")),
        "{logs:?}"
    );
    let verdicts = parse_verdicts(&fs::read_to_string(&v).unwrap());
    assert!(verdicts.iter().filter(|l| l.rule == Some(100)).count() > 3);

    // --log-file takes them off stderr.
    let lf = dir.path().join("log.txt");
    let out = weir_ok([
        "run".as_ref(),
        p(&rules),
        "-r".as_ref(),
        p(&t),
        "--log-file".as_ref(),
        p(&lf),
    ]);
    assert!(!stderr(&out).contains("Deny"));
    let file = fs::read_to_string(&lf).unwrap();
    assert_eq!(file.lines().collect::<Vec<_>>(), logs);
    assert!(file.ends_with('\n'));

    // JSON lines name the same packets.
    let out = weir_ok([
        "run".as_ref(),
        p(&rules),
        "-r".as_ref(),
        p(&t),
        "--log-format".as_ref(),
        "json".as_ref(),
        "-q".as_ref(),
    ]);
    let err = stderr(&out);
    let json: Vec<serde_json::Value> = err
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    assert_eq!(json.len(), 3);
    let first_100: Vec<u64> = verdicts
        .iter()
        .filter(|l| l.rule == Some(100))
        .take(3)
        .map(|l| l.index)
        .collect();
    for (j, (text, idx)) in json.iter().zip(logs.iter().zip(first_100)) {
        assert_eq!(j["rule"], 100);
        assert_eq!(j["action"], "deny");
        assert_eq!(j["packet"].as_u64(), Some(idx));
        let (src, dst) = (j["src"].as_str().unwrap(), j["dst"].as_str().unwrap());
        assert!(src.parse::<std::net::IpAddr>().is_ok(), "{src}");
        assert!(dst.parse::<std::net::IpAddr>().is_ok(), "{dst}");
        assert!(text.contains(src) && text.contains(dst), "{text} vs {j}");
    }
}

// ---------------------------------------------------------------- demo, help

#[test]
fn demo_prints_counters_and_summary() {
    let out = weir_ok(["demo", "-n", "3000"]);
    let text = stdout(&out);
    let table: Vec<&str> = text
        .lines()
        .filter(|l| l.len() > 6 && l[..5].bytes().all(|b| b.is_ascii_digit()) && &l[5..6] == " ")
        .collect();
    assert!(table.len() >= 14, "{text}");
    assert!(table
        .iter()
        .any(|l| l.starts_with("65535 ") && l.ends_with("deny ip from any to any")));
    let (read, passed, dropped, ..) = summary_line(&text);
    assert_eq!(read, 3000);
    assert_eq!(passed + dropped, 3000);
    // JSON variant.
    let j = weir_ok(["demo", "-n", "500", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!(
        v["weir"].as_array().unwrap().last().unwrap()["summary"]["packets"],
        500
    );
}

#[test]
fn help_shows_examples() {
    let top = stdout(&weir_ok(["--help"]));
    assert!(
        top.contains("Examples:") && top.contains("Exit codes"),
        "{top}"
    );
    for sub in ["demo", "check", "run", "explain", "gen"] {
        let out = stdout(&weir_ok([sub, "--help"]));
        assert!(out.contains("Example"), "{sub} --help:\n{out}");
        assert!(
            out.contains(&format!("weir {sub} ")),
            "{sub} --help shows a command:\n{out}"
        );
    }
}

// ---------------------------------------------------------------- more run options

#[test]
fn pcapng_inputs_split_losslessly() {
    // Every pcapng in the corpus: pass + drop outputs are pcapng again and
    // together hold each input packet once, with its timestamp.
    let dir = tmp();
    let mut files: Vec<PathBuf> = fs::read_dir(corpus_dir())
        .expect("corpus (set WEIR_CORPUS)")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcapng"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "corpus has pcapng files");
    let rules = demo_rules();
    let (pass, drop, v) = (
        dir.path().join("p.pcapng"),
        dir.path().join("d.pcapng"),
        dir.path().join("v.csv"),
    );
    for f in &files {
        let out = weir([
            "run".as_ref(),
            p(&rules),
            "-r".as_ref(),
            p(f),
            "-w".as_ref(),
            p(&pass),
            "--drop-out".as_ref(),
            p(&drop),
            "--verdicts".as_ref(),
            p(&v),
            "-q".as_ref(),
            "--log-file".as_ref(),
            "/dev/null".as_ref(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            f.display(),
            stderr(&out)
        );
        let verdicts = parse_verdicts(&fs::read_to_string(&v).unwrap());
        let all = tcpdump_lines(f);
        assert_eq!(all.len(), verdicts.len(), "{}", f.display());
        // An output that received no packets is checked with weir-io
        // only: tcpdump refuses a pcapng without IDBs (see the ignored
        // test `empty_pcapng_output_is_readable_by_tcpdump`).
        let lines_of = |path: &Path| {
            if read_capture(path).frames.is_empty() {
                Vec::new()
            } else {
                tcpdump_lines(path)
            }
        };
        let (got_pass, got_drop) = (lines_of(&pass), lines_of(&drop));
        let (mut pi, mut di) = (got_pass.iter(), got_drop.iter());
        for (line, l) in all.iter().zip(&verdicts) {
            let got = if passes(&l.action) {
                pi.next()
            } else {
                di.next()
            };
            assert_eq!(got, Some(line), "{} packet {}", f.display(), l.index);
        }
        assert!(
            pi.next().is_none() && di.next().is_none(),
            "{}",
            f.display()
        );
        assert_eq!(read_capture(&pass).format, weir_io::Format::Pcapng);
    }
}

#[test]
fn nanosecond_pcap_is_mirrored() {
    let dir = tmp();
    let t = dir.path().join("n.pcap");
    weir_ok([
        "gen".as_ref(),
        "-n".as_ref(),
        "400".as_ref(),
        "--nanos".as_ref(),
        "-o".as_ref(),
        p(&t),
    ]);
    assert_eq!(&fs::read(&t).unwrap()[..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
    let (w, d) = (dir.path().join("w.pcap"), dir.path().join("d.pcap"));
    weir_ok([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&t),
        "-w".as_ref(),
        p(&w),
        "--drop-out".as_ref(),
        p(&d),
    ]);
    assert_eq!(
        &fs::read(&w).unwrap()[..4],
        &[0x4d, 0x3c, 0xb2, 0xa1],
        "nanosecond magic kept"
    );
    let input = read_capture(&t);
    let mut out = read_capture(&w).frames;
    out.extend(read_capture(&d).frames);
    out.sort_by_key(|f| (f.ts_ns, f.data.clone()));
    let mut want = input.frames.clone();
    want.sort_by_key(|f| (f.ts_ns, f.data.clone()));
    let strip =
        |v: Vec<Rec>| -> Vec<(u64, Vec<u8>)> { v.into_iter().map(|f| (f.ts_ns, f.data)).collect() };
    assert_eq!(strip(out), strip(want));
}

#[test]
fn corrupt_pcapng_block_reports_offset() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 200, 17);
    let a = dir.path().join("a.pcapng");
    weir_ok([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&t),
        "--annotate".as_ref(),
        p(&a),
    ]);
    let bytes = fs::read(&a).unwrap();
    // Offsets of the EPBs.
    let mut epbs = Vec::new();
    let mut off = 0;
    while off < bytes.len() {
        let typ = u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap());
        let len = u32::from_le_bytes(bytes[off + 4..off + 8].try_into().unwrap()) as usize;
        if typ == 6 {
            epbs.push(off);
        }
        off += len;
    }
    assert_eq!(epbs.len(), 200);
    let k = 77;
    let mut bad = bytes.clone();
    bad[epbs[k] + 4..epbs[k] + 8].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    let badf = write_bytes(dir.path(), "bad.pcapng", &bad);
    let v = dir.path().join("v.csv");
    let out = weir([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&badf),
        "--verdicts".as_ref(),
        p(&v),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("bad.pcapng: byte offset {}: ", epbs[k])),
        "{}",
        stderr(&out)
    );
    assert_eq!(parse_verdicts(&fs::read_to_string(&v).unwrap()).len(), k);
    // Truncated inside the block: same offset.
    let tr = write_bytes(dir.path(), "tr.pcapng", &bytes[..epbs[k] + 30]);
    let out = weir(["run".as_ref(), p(&demo_rules()), "-r".as_ref(), p(&tr)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&format!("tr.pcapng: byte offset {}: truncated", epbs[k])));
    assert_eq!(summary_line(&stderr(&out)).0, k as u64);
}

fn write_bytes(dir: &Path, name: &str, b: &[u8]) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, b).unwrap();
    p
}

#[test]
fn interface_and_direction_flags_reach_the_rules() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 500, 2);
    let rules = write(
        dir.path(),
        "via.rules",
        "100 deny log logamount 2 ip from any to any via eth*\n\
         200 deny ip from any to any out\n\
         300 allow ip from any to any\n",
    );
    let decided = |extra: &[&str]| -> (HashMap<Option<u32>, usize>, String) {
        let v = dir.path().join("v.csv");
        let mut args: Vec<&OsStr> = vec![
            "run".as_ref(),
            p(&rules),
            "-r".as_ref(),
            p(&t),
            "--verdicts".as_ref(),
            p(&v),
            "-q".as_ref(),
        ];
        args.extend(extra.iter().map(OsStr::new));
        let out = weir_ok(&args);
        let mut m = HashMap::new();
        for l in parse_verdicts(&fs::read_to_string(&v).unwrap()) {
            *m.entry(l.rule).or_insert(0) += 1;
        }
        (m, stderr(&out))
    };
    let (none, log) = decided(&[]);
    assert!(log.is_empty());
    assert!(none.get(&Some(300)).copied().unwrap_or(0) > 400);
    assert_eq!(none.get(&Some(100)), None);
    let (em0, _) = decided(&["--iface", "em0"]);
    assert_eq!(em0, none, "em0 does not match eth*");
    let (eth, log) = decided(&["--iface", "eth0"]);
    assert_eq!(eth.get(&Some(100)), none.get(&Some(300)));
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(lines
        .iter()
        .all(|l| l.starts_with("weir: 100 Deny ") && l.ends_with(" in via eth0")));
    let (out, _) = decided(&["--dir", "out"]);
    assert_eq!(out.get(&Some(200)), none.get(&Some(300)));
    let (both, log) = decided(&["--dir", "out", "--iface", "eth1"]);
    assert_eq!(both.get(&Some(100)), none.get(&Some(300)));
    assert!(log.lines().all(|l| l.ends_with(" out via eth1")), "{log}");
}

#[test]
fn unmatched_lists_rules_that_never_matched() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 1000, 7);
    let out = weir_ok([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&t),
        "--unmatched".as_ref(),
        "--json".as_ref(),
        "-q".as_ref(),
        "--log-file".as_ref(),
        "/dev/null".as_ref(),
    ]);
    let text = stdout(&out);
    let (list, json) = text.split_at(text.find("{\"weir\"").unwrap());
    let zero: Vec<String> = rule_json(&serde_json::from_str(json).unwrap())
        .into_iter()
        .filter(|r| r.3 == 0)
        .map(|r| format!("{:05} {}", r.0, r.2))
        .collect();
    assert!(!zero.is_empty());
    assert_eq!(list.lines().collect::<Vec<_>>(), zero);
}

#[test]
fn check_reads_rules_from_stdin() {
    let mut child = Command::new(bin())
        .args(["check", "--print", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"allow tcp from any to any 22\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        "00100 allow tcp from any to any 22\n# 65535 deny ip from any to any (implicit)\n"
    );
}

#[test]
fn unwritable_output_is_a_runtime_error() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 10, 1);
    let out = weir([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&t),
        "-w".as_ref(),
        p(&dir.path().join("no/such/dir/x.pcap")),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no/such/dir/x.pcap"));
}

#[test]

fn two_outputs_on_stdout_are_a_usage_error() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 300, 1);
    for other in ["--drop-out", "--verdicts", "--annotate"] {
        let out = weir([
            "run".as_ref(),
            p(&demo_rules()),
            "-r".as_ref(),
            p(&t),
            "-w".as_ref(),
            "-".as_ref(),
            other.as_ref(),
            "-".as_ref(),
            "-q".as_ref(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "-w - {other} -: exit {:?}, {} bytes of mixed output",
            out.status.code(),
            out.stdout.len()
        );
    }
}

#[test]

fn same_file_for_two_outputs_is_refused() {
    let dir = tmp();
    let t = gen_trace(dir.path(), "t.pcap", 1000, 7);
    let same = dir.path().join("same.pcap");
    let out = weir([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&t),
        "-w".as_ref(),
        p(&same),
        "--drop-out".as_ref(),
        p(&same),
        "-q".as_ref(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "same path for -w and --drop-out should be refused"
    );
}

#[test]

fn empty_pcapng_output_is_readable_by_tcpdump() {
    // vsock-1.pcapng: every packet is non-IP and passes, so the drop file
    // stays empty; an annotated empty run shows the same.
    let dir = tmp();
    let input = corpus_dir().join("vsock-1.pcapng");
    let drop = dir.path().join("d.pcapng");
    let out = weir_ok([
        "run".as_ref(),
        p(&demo_rules()),
        "-r".as_ref(),
        p(&input),
        "--drop-out".as_ref(),
        p(&drop),
    ]);
    assert_eq!(summary_line(&stderr(&out)).2, 0, "nothing dropped");
    let td = Command::new("tcpdump")
        .arg("-r")
        .arg(&drop)
        .output()
        .unwrap();
    assert!(
        td.status.success(),
        "tcpdump -r on the empty drop file: {}",
        String::from_utf8_lossy(&td.stderr)
    );
}

#[test]
fn log_counts_in_json_and_lost_log_lines_are_reported() {
    let dir = tmp();
    let trace = gen_trace(dir.path(), "t.pcap", 2000, 5);
    let rules = write(
        dir.path(),
        "r.rules",
        "100 count log logamount 3 ip from any to any\n200 allow ip from any to any\n",
    );
    let out = weir(
        ["run", "--json", "-q", "--log-file", "/dev/null", "-r"]
            .map(OsStr::new)
            .into_iter()
            .chain([p(&trace), p(&rules)]),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = &v["weir"].as_array().unwrap().last().unwrap()["summary"]["log"];
    assert_eq!(log["lines"], 3);
    assert!(
        log["suppressed_by_logamount"].as_u64().unwrap() > 1000,
        "{log}"
    );
    assert_eq!(log["write_errors"], 0);
    // A log that cannot be written does not stop the filter, but fails
    // the run, naming the log.
    let out = weir(
        ["run", "-q", "--log-file", "/dev/full", "-r"]
            .map(OsStr::new)
            .into_iter()
            .chain([p(&trace), p(&rules)]),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "weir: /dev/full: No space left on device\n");
}
