//! The ipfw language's run-time knobs end to end: hand-off actions in the
//! verdicts, `--sysctl one_pass`, `--fib`, `--seed`, `--disable-set`,
//! `--layer2`, `--me` (addresses and direction), table lines that delete
//! and flush, named states.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::Path;

/// One verdicts CSV line: rule, action, note. An action with a comma in
/// it (`fwd 10.0.0.1,8080`) is quoted, as CSV wants.
fn verdicts(out: &std::process::Output) -> Vec<(String, String, String)> {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    let text = stdout(out);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("index,rule,action,note"));
    lines
        .map(|l| {
            let (index, rest) = l.split_once(',').unwrap();
            let (rule, rest) = rest.split_once(',').unwrap();
            let (action, note) = match rest.strip_prefix('"') {
                Some(q) => {
                    let (a, n) = q.split_once("\",").unwrap();
                    (a, n)
                }
                None => rest.split_once(',').unwrap(),
            };
            assert!(index.parse::<u64>().is_ok(), "{l}");
            (rule.to_owned(), action.to_owned(), note.to_owned())
        })
        .collect()
}

/// How many packets each (rule, action, note) decided.
fn tally(v: &[(String, String, String)]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for (r, a, n) in v {
        *m.entry(format!("{r} {a} {n}").trim_end().to_owned())
            .or_insert(0) += 1;
    }
    m
}

fn tcp(src: [u8; 4], dst: [u8; 4], dport: u16) -> Vec<u8> {
    ipv4(src, dst, 6, 40000, dport, 0x02)
}

fn udp(src: [u8; 4], dst: [u8; 4], dport: u16) -> Vec<u8> {
    ipv4(src, dst, 17, 40000, dport, 0)
}

fn trace(dir: &Path, packets: Vec<Vec<u8>>) -> std::path::PathBuf {
    let timed: Vec<(u64, Vec<u8>)> = packets
        .into_iter()
        .enumerate()
        .map(|(k, b)| (k as u64 * 1000, b))
        .collect();
    write_trace(dir, "t.pcap", &timed)
}

/// A hand-off action names itself in the verdicts, with the fate the
/// packet met: with one_pass (the default) it is accepted there; with
/// one_pass=0 it comes back and goes on at the next rule.
#[test]
fn hand_offs_name_themselves_and_follow_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(
        dir.path(),
        "100 pipe 1 tcp from any to any 80\n\
         200 fwd 10.0.0.1,8080 tcp from any to any 443\n\
         300 divert 8668 udp from any to any not diverted\n\
         400 deny tcp from any to any 80\n\
         500 allow ip from any to any\n",
    );
    let t = trace(
        dir.path(),
        vec![
            tcp([10, 0, 0, 1], [192, 0, 2, 1], 80),
            tcp([10, 0, 0, 1], [192, 0, 2, 1], 443),
            udp([10, 0, 0, 1], [192, 0, 2, 1], 53),
        ],
    );
    let one_pass = verdicts(&run_verdicts(&rules, &t, &[]));
    assert_eq!(
        one_pass,
        [
            ("100".into(), "pipe 1".into(), "pass".into()),
            ("200".into(), "fwd 10.0.0.1,8080".into(), "pass".into()),
            ("300".into(), "divert 8668".into(), "pass".into()),
        ]
    );
    // Back from the pipe, the packet meets rule 400; back from divert, it
    // is a diverted packet and skips 300.
    let back = verdicts(&run_verdicts(&rules, &t, &["--sysctl", "one_pass=0"]));
    assert_eq!(back[0], ("400".into(), "deny".into(), "".into()));
    assert_eq!(back[1].1, "fwd 10.0.0.1,8080", "fwd always passes");
    assert_eq!(back[2], ("500".into(), "allow".into(), "".into()));
    // The same setting in the ruleset, as an rc.firewall would write it.
    let in_file = write_rules(
        dir.path(),
        &format!(
            "sysctl net.inet.ip.fw.one_pass=0\n{}",
            std::fs::read_to_string(&rules).unwrap()
        ),
    );
    assert_eq!(verdicts(&run_verdicts(&in_file, &t, &[])), back);
}

/// `--fib` sets the FIB packets start in; `setfib` changes it for later
/// rules.
#[test]
fn fib_flag_and_setfib_reach_fib_rules() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(
        dir.path(),
        vec![
            tcp([10, 0, 0, 1], [192, 0, 2, 1], 80),
            udp([10, 0, 0, 1], [192, 0, 2, 1], 53),
        ],
    );
    let rules = write_rules(
        dir.path(),
        "100 deny ip from any to any fib 1\n200 allow ip from any to any\n",
    );
    let rule_of = |extra: &[&str]| -> Vec<String> {
        verdicts(&run_verdicts(&rules, &t, extra))
            .into_iter()
            .map(|v| v.0)
            .collect()
    };
    assert_eq!(rule_of(&[]), ["200", "200"]);
    assert_eq!(rule_of(&["--fib", "1"]), ["100", "100"]);
    let rules = write_rules(
        dir.path(),
        "50 setfib 1 udp from any to any\n100 deny ip from any to any fib 1\n200 allow ip from any to any\n",
    );
    let v = verdicts(&run_verdicts(&rules, &t, &[]));
    assert_eq!((v[0].0.as_str(), v[1].0.as_str()), ("200", "100"));
}

/// `prob` draws follow `--seed`: the same seed, the same verdicts; another
/// seed, others; about as many matches as asked.
#[test]
fn seed_makes_prob_reproducible() {
    let dir = tempfile::tempdir().unwrap();
    let t = gen_trace(dir.path(), "g.pcap", 2000, 4);
    let rules = write_rules(
        dir.path(),
        "100 prob 0.25 deny ip from any to any\n200 allow ip from any to any\n",
    );
    let run = |seed: &str| verdicts(&run_verdicts(&rules, &t, &["--seed", seed]));
    let a = run("1");
    assert_eq!(a, run("1"), "same seed, same verdicts");
    assert_ne!(a, run("2"), "another seed, other draws");
    let denied = a.iter().filter(|v| v.0 == "100").count();
    let ip = a.iter().filter(|v| v.0 != "-").count();
    let share = denied as f64 / ip as f64;
    assert!((0.2..0.3).contains(&share), "{denied} of {ip}");
    // The classifier and the linear walk draw alike.
    assert_eq!(
        a,
        verdicts(&run_verdicts(&rules, &t, &["--seed", "1", "--linear"]))
    );
}

/// `--disable-set` leaves a set's rules out, as `ipfw set disable` does;
/// the same in the ruleset; `set enable` brings them back.
#[test]
fn disabled_sets_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path(), vec![udp([10, 0, 0, 1], [192, 0, 2, 1], 53)]);
    let body = "100 set 5 deny ip from any to any\n200 set 6 count ip from any to any\n\
                300 allow ip from any to any\n";
    let rules = write_rules(dir.path(), body);
    let rule_of =
        |rules: &Path, extra: &[&str]| verdicts(&run_verdicts(rules, &t, extra))[0].0.clone();
    assert_eq!(rule_of(&rules, &[]), "100");
    assert_eq!(rule_of(&rules, &["--disable-set", "5"]), "300");
    assert_eq!(rule_of(&rules, &["--disable-set", "5,6"]), "300");
    let in_file = write_rules(dir.path(), &format!("{body}set disable 5\n"));
    assert_eq!(rule_of(&in_file, &[]), "300");
    let again = write_rules(dir.path(), &format!("{body}set disable 5\nset enable 5\n"));
    assert_eq!(rule_of(&again, &[]), "100");
    let out = run_verdicts(&rules, &t, &["--disable-set", "31"]);
    assert_eq!(out.status.code(), Some(2), "set 31 is the default rule's");
}

/// With the layer-2 pass an Ethernet frame meets the rules at layer 2
/// too, where `mac-type` sees ARP; without it ARP is non-IP and passes.
/// A ruleset with `mac-type` rules gets the pass unless told otherwise.
#[test]
fn layer2_flag_runs_mac_rules() {
    let dir = tempfile::tempdir().unwrap();
    let t = gen_trace(dir.path(), "g.pcap", 2000, 5);
    let rules = write_rules(
        dir.path(),
        "100 deny ip from any to any mac-type arp\n200 allow ip from any to any\n",
    );
    let off = ["--sysctl", "net.link.ether.ipfw=0"];
    let plain = tally(&verdicts(&run_verdicts(&rules, &t, &off)));
    assert!(!plain.contains_key("100 deny"), "{plain:?}");
    let layer2 = tally(&verdicts(&run_verdicts(&rules, &t, &["--layer2"])));
    let by_itself = tally(&verdicts(&run_verdicts(&rules, &t, &[])));
    assert_eq!(by_itself, layer2);
    assert!(
        layer2.get("100 deny").copied().unwrap_or(0) > 0,
        "{layer2:?}"
    );
    // Every Ethernet frame meets the rules now, IP or not.
    assert!(!layer2.contains_key("- allow non-ip"), "{layer2:?}");
    let decided = |m: &BTreeMap<String, usize>, keys: &[&str]| -> usize {
        keys.iter().map(|k| m.get(*k).copied().unwrap_or(0)).sum()
    };
    assert_eq!(
        decided(&plain, &["200 allow", "- allow non-ip"]),
        decided(&layer2, &["200 allow", "100 deny"]),
    );
    let sysctl = tally(&verdicts(&run_verdicts(
        &rules,
        &t,
        &["--sysctl", "net.link.ether.ipfw=1"],
    )));
    assert_eq!(sysctl, layer2);
}

/// A rule that names `me` needs `--me`; the error points at the rule. With
/// `--me`, packets to me are incoming and packets from me outgoing.
#[test]
fn me_needs_addresses_and_decides_direction() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(
        dir.path(),
        vec![
            udp([10, 0, 0, 1], [192, 0, 2, 1], 53),
            udp([192, 0, 2, 1], [10, 0, 0, 1], 53),
            udp([10, 0, 0, 1], [10, 0, 0, 2], 53),
        ],
    );
    let rules = write_rules(
        dir.path(),
        "# me\n100 deny ip from any to me in\n200 count ip from me to any out\n300 allow ip from any to any in\n",
    );
    let out = run_verdicts(&rules, &t, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!("{}:2:1: ", rules.display())) && err.contains("--me"),
        "{err}"
    );
    let v = verdicts(&run_verdicts(&rules, &t, &["--me", "192.0.2.1"]));
    let got: Vec<(&str, &str)> = v.iter().map(|x| (x.0.as_str(), x.1.as_str())).collect();
    // To me: in, denied. From me: out, counted, then the default rule.
    // Neither: in.
    assert_eq!(got, [("100", "deny"), ("65535", "deny"), ("300", "allow")]);
    // `--dir` still decides when given.
    let v = verdicts(&run_verdicts(
        &rules,
        &t,
        &["--me", "192.0.2.1", "--dir", "in"],
    ));
    assert_eq!(v[1].0, "300");
}

/// `table NAME delete` and `table NAME flush` lines take entries out again.
#[test]
fn table_lines_delete_and_flush() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(
        dir.path(),
        vec![
            udp([10, 0, 0, 1], [192, 0, 2, 1], 53),
            udp([10, 0, 0, 2], [192, 0, 2, 1], 53),
        ],
    );
    let rules = |tail: &str| {
        write_rules(
            dir.path(),
            &format!(
                "table bad add 10.0.0.1\ntable bad add 10.0.0.2\n{tail}\
                 100 deny ip from table(bad) to any\n200 allow ip from any to any\n"
            ),
        )
    };
    let rule_of = |tail: &str| -> Vec<String> {
        verdicts(&run_verdicts(&rules(tail), &t, &[]))
            .into_iter()
            .map(|v| v.0)
            .collect()
    };
    assert_eq!(rule_of(""), ["100", "100"]);
    assert_eq!(rule_of("table bad delete 10.0.0.1\n"), ["200", "100"]);
    assert_eq!(rule_of("table bad flush\n"), ["200", "200"]);
}

/// Named states: a state made under one name fires only at a
/// `check-state` of that name (or `:any`).
#[test]
fn named_states_fire_under_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(
        dir.path(),
        vec![
            tcp([10, 0, 0, 1], [192, 0, 2, 1], 80),
            ipv4([192, 0, 2, 1], [10, 0, 0, 1], 6, 80, 40000, 0x12),
        ],
    );
    // The reply meets a check-state of another name first (nothing), then
    // one of its state's name: rule 200's action, counted on rule 200.
    let rules = write_rules(
        dir.path(),
        "50 check-state :other\n60 check-state :web\n100 deny tcp from any 80 to any\n\
         200 allow tcp from any to any 80 setup keep-state :web\n400 deny ip from any to any\n",
    );
    let v = verdicts(&run_verdicts(&rules, &t, &[]));
    assert_eq!((v[0].0.as_str(), v[1].0.as_str()), ("200", "200"));
    // Without the :web check-state, the reply is denied before it gets
    // to rule 200 (whose keep-state would fire it).
    let no_check = write_rules(
        dir.path(),
        "50 check-state :other\n100 deny tcp from any 80 to any\n\
         200 allow tcp from any to any 80 setup keep-state :web\n400 deny ip from any to any\n",
    );
    let v = verdicts(&run_verdicts(&no_check, &t, &[]));
    assert_eq!(v[1].0, "100", "no check-state of its name: the state waits");
}
