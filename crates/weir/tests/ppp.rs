//! ppp filter files: each file in tests/ppp/NAME.ppp against its hand
//! translation NAME.rules over the whole corpus (same deciding rule, same
//! verdict, packet by packet); ppp's LogFILTER lines against a golden file;
//! the command line's handling of ppp files and their errors.
//!
//! `WEIR_BLESS=1 cargo test -p weir --test ppp` rewrites tests/ppp/filter.log.

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
    let filters = ppp::parse(&text).unwrap_or_else(|e| panic!("{name}.ppp: {e:?}"));
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
            let num = |e: &Engine, r: Option<usize>| r.map(|i| e.program.rules[i].number);
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
        stderr(&out).contains("in.rules:4:1: a ppp command other than 'set filter'"),
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
