//! ppp filter files: each file in tests/ppp/NAME.ppp against its hand
//! translation NAME.rules over the whole corpus (same deciding rule, same
//! verdict, packet by packet); ppp's LogFILTER lines against a golden file;
//! FreeBSD's ppp.conf.sample loaded as it is and deciding crafted packets
//! as filter.c does; the command line's handling of ppp files, ppp.conf
//! labels, host names and their errors.
//!
//! `WEIR_BLESS=1 cargo test -p weir --test ppp` rewrites tests/ppp/filter.log
//! and tests/ppp/ppp.conf.sample.canonical.

mod common;

use common::*;
use std::fs;
use std::path::{Path, PathBuf};
use weir_engine::{compile, CompileOptions, Engine, Program};
use weir_rules::ppp::{self, Bindings, FilterSet};
use weir_rules::Names;
use weir_wire::{decode, L3};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ppp")
}

fn bindings() -> Bindings {
    Bindings {
        myaddr: Some("10.0.0.20".parse().unwrap()),
        hisaddr: Some("10.0.0.81".parse().unwrap()),
        dns0: Some("192.168.1.1".parse().unwrap()),
        dns1: Some("10.0.0.1".parse().unwrap()),
        myaddr6: Some("10::1".parse().unwrap()),
        hisaddr6: Some("10::2".parse().unwrap()),
        hosts: [("gate".to_owned(), "131.151.1.59".parse().unwrap())].into(),
    }
}

const BIND_FLAGS: [&str; 8] = [
    "--myaddr",
    "10.0.0.20",
    "--hisaddr",
    "10.0.0.81",
    "--dns0",
    "192.168.1.1",
    "--dns1",
    "10.0.0.1",
];

fn ppp_program(name: &str, set: FilterSet, names: &Names) -> Program {
    let text = fs::read_to_string(dir().join(format!("{name}.ppp"))).unwrap();
    let filters = ppp::parse(&text, names)
        .unwrap_or_else(|e| panic!("{name}.ppp: {e:?}"))
        .filters;
    let t = ppp::translate(&filters, set, &bindings(), names)
        .unwrap_or_else(|e| panic!("{name}.ppp: {e:?}"));
    compile(&t.ruleset, names, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{name}.ppp: {e:?}"))
}

fn ipfw_program(name: &str, names: &Names) -> Program {
    let text = fs::read_to_string(dir().join(format!("{name}.rules"))).unwrap();
    weir_engine::load(&text, names, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{name}.rules: {e:?}"))
}

/// Every packet of the corpus through both programs; returns how many
/// packets each deciding rule number took (the ppp program's).
fn differential(name: &str, set: FilterSet) -> Vec<(u16, u64)> {
    let names = Names::default();
    let mut a = Engine::new(ppp_program(name, set, &names));
    let mut b = Engine::new(ipfw_program(name, &names));
    let mut files: Vec<PathBuf> = fs::read_dir(corpus_dir())
        .expect("corpus")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(files.len() > 100, "corpus looks incomplete");
    let mut taken = std::collections::BTreeMap::<u16, u64>::new();
    for file in &files {
        let Ok(mut reader) = weir_io::open_capture(file) else {
            continue;
        };
        let mut index = 0u64;
        while let Ok(Some(frame)) = reader.next_frame() {
            index += 1;
            let p = decode(frame.link_type, frame.data, frame.orig_len);
            let (da, db) = (a.decide(&p), b.decide(&p));
            let num = |e: &Engine, r: Option<usize>| r.map(|i| e.program().rules[i].number);
            let (ra, rb) = (num(&a, da.rule), num(&b, db.rule));
            assert_eq!(
                (ra, da.verdict),
                (rb, db.verdict),
                "{name}: {} packet {index}: ppp file vs hand translation",
                file.display()
            );
            if p.l3 == L3::Ip {
                *taken.entry(ra.unwrap()).or_default() += 1;
            }
        }
    }
    taken.into_iter().collect()
}

/// The deciding rules, so a translation that sent everything one way fails.
fn assert_decided_by(taken: &[(u16, u64)], at_least: &[u16]) {
    for n in at_least {
        assert!(
            taken.iter().any(|(r, c)| r == n && *c > 0),
            "rule {n} decided no packet: {taken:?}"
        );
    }
}

#[test]
fn set_in_matches_its_hand_translation() {
    let taken = differential("in", FilterSet::In);
    assert_decided_by(
        &taken,
        // (The corpus's ICMP echoes are on link types weir reads as non-IP.)
        &[
            1, 300, 400, 600, 700, 900, 1000, 1100, 1200, 1500, 2000, 2200, 2300, 2600, 2750, 3100,
        ],
    );
}

#[test]
fn set_out_matches_its_hand_translation() {
    let taken = differential("out", FilterSet::Out);
    assert_decided_by(&taken, &[1, 200, 300, 400, 500, 600, 700, 3950, 4100]);
}

#[test]
fn set_dial_matches_its_hand_translation() {
    let taken = differential("dial", FilterSet::Dial);
    assert_decided_by(&taken, &[1, 100, 200, 300, 400, 500, 4100]);
}

#[test]
fn set_in_with_other_forms_matches_its_hand_translation() {
    let taken = differential("forms", FilterSet::In);
    assert_decided_by(
        &taken,
        &[
            1, 200, 300, 400, 600, 800, 900, 1000, 1100, 1200, 1300, 4100,
        ],
    );
}

#[test]
fn set_without_rule_0_matches_its_hand_translation() {
    let taken = differential("alive", FilterSet::Alive);
    assert_eq!(taken.len(), 1, "{taken:?}");
}

/// ppp's LogFILTER lines from the CLI, for three sets over a generated
/// trace: denies, the dial set's accepts, the implicit deny and the
/// dial set's fragment error.
#[test]
fn log_lines_use_ppps_wording() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = gen_trace(tmp.path(), "t.pcap", 600, 11);
    let mut got = String::new();
    for (name, set) in [("in", "in"), ("out", "out"), ("dial", "dial")] {
        let log = tmp.path().join(format!("{name}.log"));
        let ppp = dir().join(format!("{name}.ppp"));
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "run".as_ref(),
            ppp.as_os_str(),
            "--filter-set".as_ref(),
            set.as_ref(),
            "-r".as_ref(),
            trace.as_os_str(),
            "-q".as_ref(),
            "-c".as_ref(),
            "250".as_ref(),
            "--log-file".as_ref(),
            log.as_os_str(),
        ];
        args.extend(BIND_FLAGS.iter().map(std::ffi::OsStr::new));
        weir_ok(&args);
        got += &format!("# {name}.ppp --filter-set {set}\n");
        got += &fs::read_to_string(&log).unwrap();
    }
    for needle in [
        "Filter: INbound rule = 21 deny tcp src = 10.1.",
        "Filter: OUTbound rule = implicit deny tcp src = ",
        "Filter: DIALbound rule = 1 accept tcp src = ",
        "Filter: DIALbound rule = 4 accept icmp src = ",
        "Filter:  error: illegal fragmentation",
    ] {
        assert!(got.contains(needle), "log lacks {needle:?}");
    }
    let golden = dir().join("filter.log");
    if std::env::var_os("WEIR_BLESS").is_some() {
        fs::write(&golden, &got).unwrap();
    }
    let want = fs::read_to_string(&golden).expect("tests/ppp/filter.log (WEIR_BLESS=1 writes it)");
    assert!(
        got == want,
        "log differs from tests/ppp/filter.log; WEIR_BLESS=1 to rewrite, then review the diff"
    );
}

#[test]
fn cli_reads_ppp_files_and_reports_their_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = gen_trace(tmp.path(), "t.pcap", 200, 3);
    let inp = dir().join("in.ppp");

    // check: every set with rules, each labelled.
    let out = weir_ok([
        "check".as_ref(),
        inp.as_os_str(),
        "--myaddr".as_ref(),
        "10.0.0.20".as_ref(),
        "--hisaddr".as_ref(),
        "10.0.0.81".as_ref(),
        "--dns0".as_ref(),
        "1.1.1.1".as_ref(),
        "--dns1".as_ref(),
        "1.0.0.1".as_ref(),
    ]);
    assert!(
        stderr(&out).contains("in.ppp (set filter in): 30 rules"),
        "{}",
        stderr(&out)
    );

    // An unbound symbol: file:line:col, a caret, exit 2.
    let out = weir(["check".as_ref(), inp.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("in.ppp:17:24: HISADDR used but --hisaddr not given"),
        "{err}"
    );
    assert!(err.contains("^^^^^^^"), "{err}");

    // run needs the set.
    let out = weir([
        "run".as_ref(),
        inp.as_os_str(),
        "-r".as_ref(),
        trace.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--filter-set"), "{}", stderr(&out));

    // ppp flags on an ipfw file are refused, not ignored.
    let out = weir([
        "run".as_ref(),
        dir().join("in.rules").as_os_str(),
        "--filter-set".as_ref(),
        "in".as_ref(),
        "-r".as_ref(),
        trace.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--filter-set is for ppp filter files"),
        "{}",
        stderr(&out)
    );

    // --label is for a ppp.conf.
    let out = weir([
        "check".as_ref(),
        inp.as_os_str(),
        "--label".as_ref(),
        "isp".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--label is for ppp.conf files"),
        "{}",
        stderr(&out)
    );

    // A parse error, and --syntax ppp on a file that autodetects as ipfw.
    let bad = tmp.path().join("bad.ppp");
    fs::write(&bad, "set filter in 0 permit\nset filter in 40 deny\n").unwrap();
    let out = weir(["check".as_ref(), bad.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("bad.ppp:2:15: rule number 40 is out of range"),
        "{}",
        stderr(&out)
    );
    let out = weir([
        "check".as_ref(),
        dir().join("in.rules").as_os_str(),
        "--syntax".as_ref(),
        "ppp".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("in.rules:7:1: a ppp command other than 'set filter'"),
        "{}",
        stderr(&out)
    );

    // A set without rule 0 says so on stderr, and passes everything.
    let out = weir_ok([
        "run".as_ref(),
        dir().join("alive.ppp").as_os_str(),
        "--filter-set".as_ref(),
        "alive".as_ref(),
        "-r".as_ref(),
        trace.as_os_str(),
    ]);
    let err = stderr(&out);
    assert!(
        err.contains("alive.ppp:3:1: note: set alive has no rule 0"),
        "{err}"
    );
    assert!(err.contains(" 0 dropped"), "{err}");

    // explain shows the ppp rule beside its translation.
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "explain".as_ref(),
        inp.as_os_str(),
        "--filter-set".as_ref(),
        "in".as_ref(),
        "-r".as_ref(),
        trace.as_os_str(),
        "--packet".as_ref(),
        "1".as_ref(),
    ];
    args.extend(BIND_FLAGS.iter().map(std::ffi::OsStr::new));
    let out = weir_ok(&args);
    assert!(
        stdout(&out).contains("// ppp: set filter in "),
        "{}",
        stdout(&out)
    );
}

// ---- ppp.conf.sample: FreeBSD's own filters -------------------------------

fn sample() -> PathBuf {
    dir().join("ppp.conf.sample")
}

/// The `set filter` lines of one label's section, counted from the file's
/// text by hand (indented lines between the label and the next label).
fn lines_in_section(text: &str, label: &str) -> Vec<String> {
    let mut inside = false;
    let mut out = Vec::new();
    for l in text.lines() {
        if !l.starts_with([' ', '\t', '#']) && !l.is_empty() {
            inside = l == format!("{label}:");
        } else if inside && l.trim_start().starts_with("set filter ") {
            out.push(l.trim().to_owned());
        }
    }
    out
}

/// Every `set filter` line of every section of FreeBSD's sample loads, with
/// no notes, and each set prints back in canonical form (and that form
/// reads back the same).
#[test]
fn ppp_conf_sample_loads_every_filter_line() {
    let text = fs::read_to_string(sample()).unwrap();
    let names = Names::default();
    assert_eq!(ppp::detect(&text), Some(ppp::Format::Conf));
    assert_eq!(ppp::conf_labels(&text), ["dodgy", "dodgynet"]);
    let mut canonical = String::new();
    for label in ["dodgy", "dodgynet"] {
        let lines = lines_in_section(&text, label);
        let loaded = ppp::parse_conf(&text, label, &names).unwrap();
        assert!(loaded.notes.is_empty(), "{label}: {:?}", loaded.notes);
        let rules: usize = FilterSet::ALL
            .iter()
            .map(|s| loaded.filters.rules(*s).count())
            .sum();
        assert_eq!(rules, lines.len(), "{label}: one rule per line");
        for set in FilterSet::ALL {
            let want = lines
                .iter()
                .filter(|l| l.split_whitespace().nth(2) == Some(set.word()))
                .count();
            assert_eq!(loaded.filters.rules(set).count(), want, "{label} {set:?}");
            assert!(want > 0, "{label} has every set");
        }
        let printed = ppp::print(&loaded.filters);
        let again = ppp::parse(&printed, &names).unwrap().filters;
        assert_eq!(again, loaded.filters, "{label}: canonical form reads back");
        canonical += &format!("# {label}\n{printed}");
    }
    let golden = dir().join("ppp.conf.sample.canonical");
    if std::env::var_os("WEIR_BLESS").is_some() {
        fs::write(&golden, &canonical).unwrap();
    }
    assert_eq!(
        canonical,
        fs::read_to_string(&golden).expect("WEIR_BLESS=1 writes it"),
        "canonical form differs from tests/ppp/ppp.conf.sample.canonical"
    );
}

/// A raw IPv4 ICMP message of this type.
fn icmp(src: [u8; 4], dst: [u8; 4], ty: u8) -> Vec<u8> {
    ipv4(src, dst, 1, u16::from(ty) << 8, 0, 0)
}

/// The same packet as a later fragment (offset 1480 bytes).
fn later_fragment(mut p: Vec<u8>) -> Vec<u8> {
    p[6] = 0;
    p[7] = 185;
    p
}

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const FIN: u8 = 0x01;
const RST: u8 = 0x04;

/// What ppp's FilterCheck does with one packet: the rule that decides it
/// (None: the implicit deny; Some(FRAG): the later-fragment test) and
/// whether it passes.
type Outcome = (Option<u8>, bool);
const FRAG: u8 = 255;

fn decide_sample(label: &str, set: FilterSet, packet: &[u8]) -> Outcome {
    let names = Names::default();
    let text = fs::read_to_string(sample()).unwrap();
    let filters = ppp::parse_conf(&text, label, &names).unwrap().filters;
    let bind = Bindings {
        myaddr: Some("10.0.0.1".parse().unwrap()),
        ..Bindings::default()
    };
    let t = ppp::translate(&filters, set, &bind, &names).unwrap();
    let mut e = Engine::new(compile(&t.ruleset, &names, &CompileOptions::default()).unwrap());
    let p = decode(weir_wire::LinkType::RAW, packet, packet.len() as u32);
    let d = e.decide(&p);
    let number = e.program().rules[d.rule.expect("a rule decides")].number;
    let role = match ppp::role_of(number) {
        ppp::Role::Rule(n) => Some(n),
        ppp::Role::Fragment => Some(FRAG),
        ppp::Role::ImplicitDeny => None,
    };
    (role, d.verdict == weir_engine::Verdict::Pass)
}

/// The sample's sets decide crafted packets as FilterCheck does. Each
/// expectation is worked out from filter.c/ip.c by hand: first match in
/// rule order, `N` jumps to rule N, `!` takes the action when the rule
/// does not match, `estab` is ACK set, `finrst` FIN or RST set, ICMP
/// `src eq T` the type, no match the implicit deny, later fragments
/// permitted on in/out and denied on dial/alive before any rule.
#[test]
fn ppp_conf_sample_decides_as_filter_c() {
    use FilterSet::*;
    let me = [10, 0, 0, 1];
    let far = [198, 51, 100, 7];
    let work = [192, 244, 191, 5];
    let (lan, lan36, lan118, lan10) = (
        [172, 17, 16, 5],
        [172, 17, 36, 1],
        [172, 17, 118, 9],
        [10, 123, 5, 9],
    );
    let (peer, gw) = ([172, 17, 20, 248], [172, 17, 20, 247]);
    #[rustfmt::skip]
    let cases: Vec<(&str, FilterSet, Vec<u8>, Outcome)> = vec![
        // dodgy: what keeps the link alive.
        ("dodgy", Alive, ipv4(me, far, 17, 520, 520, 0), (Some(0), false)),
        ("dodgy", Alive, ipv4(far, me, 17, 1000, 520, 0), (Some(1), false)),
        ("dodgy", Alive, ipv4(far, me, 6, 139, 4000, ACK), (Some(6), false)),
        ("dodgy", Alive, ipv4(far, me, 17, 5000, 138, 0), (Some(8), false)),
        ("dodgy", Alive, icmp(far, me, 8), (Some(10), false)),
        ("dodgy", Alive, icmp(me, far, 8), (Some(11), true)),
        ("dodgy", Alive, ipv4(me, far, 6, 40000, 80, ACK), (Some(11), true)),
        ("dodgy", Alive, later_fragment(ipv4(me, far, 17, 1, 2, 0)), (Some(FRAG), false)),
        // dodgy: what may dial.
        ("dodgy", Dial, ipv4(me, far, 17, 513, 513, 0), (Some(0), false)),
        ("dodgy", Dial, ipv4(me, far, 17, 5000, 137, 0), (Some(5), false)),
        ("dodgy", Dial, ipv4(me, far, 6, 40000, 139, SYN), (Some(7), false)),
        ("dodgy", Dial, ipv4(me, far, 6, 40000, 80, ACK | FIN), (Some(8), false)),
        ("dodgy", Dial, ipv4(me, far, 6, 40000, 80, RST), (Some(8), false)),
        ("dodgy", Dial, ipv4(me, far, 6, 40000, 80, SYN), (Some(9), true)),
        ("dodgy", Dial, later_fragment(ipv4(me, far, 6, 1, 2, 0)), (Some(FRAG), false)),
        // dodgy: in and out once the line is up.
        ("dodgy", In, ipv4(far, me, 6, 40000, 113, SYN), (Some(0), true)),
        ("dodgy", In, ipv4(far, me, 6, 23, 40000, ACK), (Some(1), true)),
        ("dodgy", In, ipv4(far, me, 6, 23, 40000, SYN), (None, false)),
        ("dodgy", In, ipv4(far, me, 6, 20, 2000, SYN), (Some(3), true)),
        ("dodgy", In, ipv4(far, me, 6, 20, 1023, SYN), (None, false)),
        ("dodgy", In, ipv4(far, me, 17, 53, 3000, 0), (Some(4), true)),
        ("dodgy", In, ipv4(work, me, 17, 9, 9, 0), (Some(5), true)),
        ("dodgy", In, icmp(far, me, 0), (Some(6), true)),
        ("dodgy", In, ipv4(far, me, 17, 3000, 33434, 0), (Some(7), true)),
        ("dodgy", In, ipv4(far, me, 17, 3000, 33433, 0), (None, false)),
        ("dodgy", In, later_fragment(ipv4(far, me, 17, 1, 2, 0)), (Some(FRAG), true)),
        ("dodgy", Out, ipv4(me, far, 6, 113, 40000, ACK), (Some(0), true)),
        ("dodgy", Out, ipv4(me, far, 6, 40000, 23, SYN), (Some(1), true)),
        ("dodgy", Out, ipv4(me, work, 6, 40000, 443, SYN), (Some(5), true)),
        ("dodgy", Out, ipv4(me, far, 6, 40000, 443, SYN), (None, false)),
        // dodgynet: dial only for some services, and only to the peer.
        ("dodgynet", Dial, ipv4(lan, peer, 6, 1234, 80, SYN), (Some(7), true)),
        ("dodgynet", Dial, ipv4(lan36, peer, 6, 1234, 513, SYN), (Some(8), true)),
        ("dodgynet", Dial, ipv4(lan10, peer, 6, 1234, 23, SYN), (Some(10), true)),
        ("dodgynet", Dial, ipv4(lan118, peer, 6, 1234, 4000, SYN), (Some(9), true)),
        ("dodgynet", Dial, ipv4(lan, peer, 6, 1234, 22, SYN), (Some(6), false)),
        ("dodgynet", Dial, ipv4(lan, peer, 17, 1234, 53, 0), (Some(6), false)),
        ("dodgynet", Dial, ipv4([192, 168, 1, 1], peer, 6, 1234, 80, SYN), (None, false)),
        ("dodgynet", Dial, ipv4(lan, far, 6, 1234, 80, SYN), (None, false)),
        // dodgynet: out to the peer from the local subnets.
        ("dodgynet", Out, ipv4(lan, peer, 6, 1234, 80, SYN), (Some(5), true)),
        ("dodgynet", Out, ipv4(lan10, peer, 6, 1234, 22, ACK), (Some(4), true)),
        ("dodgynet", Out, ipv4(lan10, peer, 6, 1234, 22, SYN), (None, false)),
        ("dodgynet", Out, ipv4([192, 168, 9, 9], peer, 6, 1234, 80, SYN), (Some(3), false)),
        ("dodgynet", Out, icmp(lan, peer, 8), (Some(12), true)),
        ("dodgynet", Out, ipv4(lan, peer, 17, 1234, 53, 0), (None, false)),
        // dodgynet: in from the peer.
        ("dodgynet", In, ipv4(peer, lan, 6, 80, 1234, ACK), (Some(4), true)),
        ("dodgynet", In, ipv4(peer, lan, 6, 20, 2000, SYN), (Some(5), true)),
        ("dodgynet", In, icmp(peer, lan, 3), (Some(6), true)),
        ("dodgynet", In, icmp(peer, lan, 12), (Some(9), true)),
        ("dodgynet", In, icmp(peer, lan, 0), (Some(10), true)),
        ("dodgynet", In, icmp(peer, gw, 8), (Some(11), true)),
        ("dodgynet", In, icmp(peer, lan, 8), (None, false)),
        ("dodgynet", In, ipv4([8, 8, 8, 8], lan, 6, 80, 1234, ACK), (Some(3), false)),
        // dodgynet: any tcp keeps the link alive, nothing else.
        ("dodgynet", Alive, ipv4(far, lan, 6, 1, 2, 0), (Some(0), true)),
        ("dodgynet", Alive, ipv4(far, lan, 17, 1, 2, 0), (None, false)),
    ];
    for (label, set, packet, want) in cases {
        assert_eq!(
            decide_sample(label, set, &packet),
            want,
            "{label} {set:?} {packet:02x?}"
        );
    }
}

/// The CLI reads the sample as it is: `check` checks every label with
/// filters, `run` one label's set.
#[test]
fn cli_reads_ppp_conf_sample() {
    let s = sample();
    let out = weir_ok([
        "check".as_ref(),
        s.as_os_str(),
        "--myaddr".as_ref(),
        "10.0.0.1".as_ref(),
    ]);
    let err = stderr(&out);
    for l in ["dodgy", "dodgynet"] {
        for set in ["in", "out", "dial", "alive"] {
            assert!(
                err.contains(&format!("ppp.conf.sample ({l}, set filter {set}): ")),
                "{err}"
            );
        }
    }
    assert!(!err.contains("note:"), "{err}");
    // dodgy's alive set names MYADDR.
    let out = weir(["check".as_ref(), s.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("ppp.conf.sample:282:34: MYADDR used but --myaddr not given"),
        "{}",
        stderr(&out)
    );
    // run needs the label, and says which have filters.
    let tmp = tempfile::tempdir().unwrap();
    let trace = gen_trace(tmp.path(), "t.pcap", 200, 5);
    let out = weir([
        "run".as_ref(),
        s.as_os_str(),
        "--filter-set".as_ref(),
        "dial".as_ref(),
        "-r".as_ref(),
        trace.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--label NAME (labels with filters: dodgy, dodgynet)"),
        "{}",
        stderr(&out)
    );
    let out = weir_ok([
        "run".as_ref(),
        s.as_os_str(),
        "--label".as_ref(),
        "dodgynet".as_ref(),
        "--filter-set".as_ref(),
        "dial".as_ref(),
        "-r".as_ref(),
        trace.as_os_str(),
    ]);
    assert!(stderr(&out).contains("200 packets"), "{}", stderr(&out));
}

/// Host names resolve once, at load: from a hosts(5) file given with
/// --hosts (no DNS), or the system resolver (`localhost`, from
/// /etc/hosts); a name that does not resolve is a file:line:col error.
#[test]
fn host_names_resolve_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    let rules = tmp.path().join("hosts.ppp");
    fs::write(
        &rules,
        "set filter in 0 deny gateway any udp\nset filter in 1 permit localhost/8 any\n",
    )
    .unwrap();
    let hosts = tmp.path().join("hosts");
    fs::write(
        &hosts,
        "# test hosts\n10.1.0.1 gateway gw\n127.0.0.1 localhost\n",
    )
    .unwrap();
    let packets = [
        (1, ipv4([10, 1, 0, 1], [10, 9, 9, 9], 17, 1, 2, 0)),
        (2, ipv4([127, 3, 4, 5], [10, 9, 9, 9], 17, 1, 2, 0)),
        (3, ipv4([10, 1, 0, 2], [10, 9, 9, 9], 17, 1, 2, 0)),
    ];
    let trace = write_trace(tmp.path(), "h.pcap", &packets);
    let run = |extra: &[&str]| {
        let mut args = vec!["--filter-set", "in"];
        args.extend(extra);
        run_verdicts(&rules, &trace, &args)
    };
    let out = run(&["--hosts", hosts.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = parse_verdicts(&stdout(&out));
    let rules_hit: Vec<Option<u32>> = v.iter().map(|l| l.rule).collect();
    assert_eq!(
        rules_hit,
        [Some(100), Some(200), Some(4100)],
        "{}",
        stdout(&out)
    );
    // The system resolver knows localhost; the file's gateway it does not.
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("hosts.ppp:1:22: host name 'gateway' did not resolve to an IPv4 address"),
        "{err}"
    );
    fs::write(&rules, "set filter in 0 permit localhost any\n").unwrap();
    let out = run(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = parse_verdicts(&stdout(&out));
    assert_eq!(v[0].rule, Some(4100), "127.3.4.5 is not localhost/32");
}
