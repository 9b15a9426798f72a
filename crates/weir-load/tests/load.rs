//! The loader on its own: ppp sets of a ppp.conf label with their address
//! bindings, the options a file of the other syntax refuses, table files'
//! errors, notes, tunables, and what `check` is given.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use weir_engine::{Engine, Verdict};
use weir_load::{LoadError, Loaded, Options, PppOptions, Syntax};
use weir_rules::ppp::FilterSet;
use weir_rules::Names;
use weir_wire::{addr_to_u128, Direction, Packet, L3};

/// A ppp.conf: `default` denies mail, `office` lets in ssh to MYADDR,
/// `home` lets in the web from its peer (HISADDR).
const CONF: &str = "\
default:
 set filter in 0 deny 0/0 0/0 tcp dst eq 25
office:
 set filter in 1 permit 0/0 MYADDR tcp dst eq 22
home:
 set filter in 1 permit HISADDR 0/0 tcp dst eq 80
";

fn tcp(src: &str, dst: &str, dport: u16) -> Packet {
    let ip = |s: &str| addr_to_u128(s.parse::<IpAddr>().unwrap());
    Packet {
        src: ip(src),
        dst: ip(dst),
        l3: L3::Ip,
        ip_version: 4,
        proto: 6,
        src_port: 40000,
        dst_port: dport,
        has_ports: true,
        ip_len: 60,
        l3_len: 60,
        ttl: 64,
        direction: Direction::In,
        ..Packet::default()
    }
}

fn load(text: &str, opts: &Options) -> Result<Loaded, LoadError> {
    weir_load::load_bytes(
        "f",
        text.as_bytes().to_vec(),
        opts,
        &Names::default(),
        &mut |_| Ok(()),
    )
}

fn engine(text: &str, opts: &Options) -> Engine {
    load(text, opts)
        .unwrap_or_else(|e| panic!("{e}"))
        .builder()
        .build()
}

fn message(r: Result<Loaded, LoadError>) -> String {
    match r {
        Ok(_) => panic!("loaded"),
        Err(e) => e.to_string(),
    }
}

/// Options loading these `--table NAME=FILE` files.
fn with_tables(tables: &[(&str, PathBuf)]) -> Options {
    Options {
        tables: tables
            .iter()
            .map(|(n, f)| (n.to_string(), f.clone()))
            .collect(),
        ..Options::default()
    }
}

fn ppp(set: Option<FilterSet>, label: Option<&str>) -> Options {
    let mut opts = Options::default();
    opts.ppp.filter_set = set;
    opts.ppp.label = label.map(str::to_owned);
    opts.ppp.bindings.myaddr = Some(Ipv4Addr::new(192, 0, 2, 1));
    opts.ppp.bindings.hisaddr = Some(Ipv4Addr::new(198, 51, 100, 7));
    opts
}

#[test]
fn a_ppp_conf_label_decides_with_its_set_and_bound_addresses() {
    let verdicts = |label| {
        let loaded = load(CONF, &ppp(Some(FilterSet::In), Some(label))).unwrap();
        assert_eq!(loaded.set, Some(FilterSet::In));
        let mut e = loaded.builder().build();
        [
            tcp("203.0.113.5", "192.0.2.1", 22),
            tcp("203.0.113.5", "192.0.2.2", 22),
            tcp("198.51.100.7", "192.0.2.1", 80),
            tcp("198.51.100.7", "192.0.2.1", 25),
        ]
        .map(|p| e.decide(&p).verdict)
    };
    use Verdict::{Drop, Pass};
    // ssh to MYADDR only; the default label's deny of mail holds for both,
    // and rule 0 denying mail leaves the rest to rule 1 (ppp's numbering).
    assert_eq!(verdicts("office"), [Pass, Drop, Drop, Drop]);
    assert_eq!(verdicts("home"), [Drop, Drop, Pass, Drop]);
}

#[test]
fn a_ppp_file_needs_its_set_and_a_ppp_conf_its_label() {
    assert_eq!(
        message(load(CONF, &ppp(None, Some("office")))),
        "f is a ppp filter file: say which set decides with --filter-set in|out|dial|alive"
    );
    assert_eq!(
        message(load(CONF, &ppp(Some(FilterSet::In), None))),
        "f is a ppp.conf: say which label's filters decide with --label NAME (labels with filters: default, office, home)"
    );
    let filters = "set filter in 0 permit 0/0 0/0\n";
    assert_eq!(
        message(load(filters, &ppp(Some(FilterSet::In), Some("office")))),
        "--label is for ppp.conf files, and f holds only set filter lines"
    );
}

#[test]
fn ppp_options_on_ipfw_rules_are_refused_by_their_flag() {
    let rules = "100 allow ip from any to any\n";
    let refused = |opts: Options| message(load(rules, &opts));
    let tail = "is for ppp filter files, and f reads as ipfw rules (--syntax ppp to say otherwise)";
    assert_eq!(refused(ppp(None, Some("x"))), format!("--label {tail}"));
    assert_eq!(
        refused(ppp(Some(FilterSet::Out), None)),
        format!("--filter-set {tail}")
    );
    let mut opts = Options::default();
    opts.ppp.hosts_file = Some("hosts".into());
    assert_eq!(refused(opts), format!("--hosts {tail}"));
    // The same text read as ppp filters is not ipfw's: every line errs.
    let opts = Options {
        syntax: Syntax::Ppp,
        ppp: PppOptions {
            filter_set: Some(FilterSet::In),
            ..PppOptions::default()
        },
        ..Options::default()
    };
    assert!(message(load(rules, &opts)).starts_with("f:1:1: "));
}

#[test]
fn a_bad_table_file_is_named_with_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nets.txt");
    std::fs::write(&file, "10.0.0.0/8 1\n192.0.2.0/33\n").unwrap();
    let opts = with_tables(&[("nets", file.clone())]);
    let err = load("100 deny ip from table(nets) to any\n", &opts)
        .err()
        .unwrap();
    let LoadError::Rules(msg) = err else {
        panic!("{err:?}")
    };
    assert_eq!(
        msg,
        format!(
            "{}:2:11: prefix length 33 is out of range 0-32",
            file.display()
        )
    );

    let missing = dir.path().join("none.txt");
    let opts = with_tables(&[("nets", missing.clone())]);
    let msg = message(load("100 deny ip from table(nets) to any\n", &opts));
    assert!(
        msg.starts_with(&format!("--table nets: {}: ", missing.display())),
        "{msg}"
    );
    std::fs::write(&file, "10.0.0.0/8 1\n").unwrap();
    let twice = with_tables(&[("t", file.clone()), ("t", file)]);
    assert_eq!(message(load("", &twice)), "--table t given twice");
}

#[test]
fn a_good_table_file_is_what_the_rules_look_up() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nets.txt");
    std::fs::write(&file, "# blocked\n203.0.113.0/24\n").unwrap();
    let opts = with_tables(&[("nets", file)]);
    let mut e = engine(
        "100 deny ip from table(nets) to any\n200 allow ip from any to any\n",
        &opts,
    );
    assert_eq!(
        e.decide(&tcp("203.0.113.5", "192.0.2.1", 80)).verdict,
        Verdict::Drop
    );
    assert_eq!(
        e.decide(&tcp("203.0.114.5", "192.0.2.1", 80)).verdict,
        Verdict::Pass
    );
}

#[test]
fn notes_are_handed_over_line_by_line() {
    let mut notes = Vec::new();
    let opts = ppp(Some(FilterSet::In), None);
    let text = "set filter in 1 deny 0/0 0/0 tcp dst eq 25\n";
    let loaded = weir_load::load_bytes(
        "f.ppp",
        text.as_bytes().to_vec(),
        &opts,
        &Names::default(),
        &mut |l| {
            notes.push(l.to_owned());
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(
        notes,
        ["f.ppp:1:1: note: set in has no rule 0, so ppp permits every packet and never reads rules 1..39"]
    );
    // As the note says.
    let mut e = loaded.builder().build();
    assert_eq!(
        e.decide(&tcp("203.0.113.5", "192.0.2.1", 25)).verdict,
        Verdict::Pass
    );

    // A note that cannot be written stops the load.
    let err = weir_load::load_bytes(
        "f.ppp",
        text.as_bytes().to_vec(),
        &opts,
        &Names::default(),
        &mut |_| Err(std::io::ErrorKind::BrokenPipe.into()),
    )
    .err()
    .unwrap();
    assert!(matches!(err, LoadError::Note(_)), "{err:?}");
}

#[test]
fn host_names_bound_by_the_caller_win_over_the_hosts_file() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "198.51.100.9 gw\n203.0.113.1 peer\n").unwrap();
    let text = "set filter in 0 permit gw 0/0\nset filter in 1 permit peer 0/0\n";
    let mut opts = ppp(Some(FilterSet::In), None);
    opts.ppp.hosts_file = Some(hosts);
    opts.ppp.bindings.hosts = HashMap::from([("gw".to_owned(), Ipv4Addr::new(192, 0, 2, 99))]);
    let mut e = engine(text, &opts);
    let from = |src| tcp(src, "192.0.2.1", 80);
    assert_eq!(e.decide(&from("192.0.2.99")).verdict, Verdict::Pass);
    assert_eq!(e.decide(&from("198.51.100.9")).verdict, Verdict::Drop);
    assert_eq!(e.decide(&from("203.0.113.1")).verdict, Verdict::Pass);
}

#[test]
fn tunables_and_me_shape_the_program() {
    let rules = "100 allow tcp from any to me 22\n";
    assert!(message(load(rules, &Options::default())).starts_with("f:1:"));
    let opts = Options {
        me: vec!["192.0.2.1".parse().unwrap()],
        sysctl: vec![("default_to_accept".into(), 1)],
        layer2: true,
        ..Options::default()
    };
    let mut e = engine(rules, &opts);
    assert!(e.program().layer2);
    assert_eq!(e.decide(&tcp("203.0.113.5", "192.0.2.1", 22)).rule, Some(0));
    // Not to me: the implicit rule, which now allows.
    let d = e.decide(&tcp("203.0.113.5", "192.0.2.2", 22));
    assert_eq!((d.rule, d.verdict), (Some(1), Verdict::Pass));
}

#[test]
fn check_is_given_each_set_of_each_label() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ppp.conf");
    std::fs::write(&file, CONF).unwrap();
    let mut opts = ppp(None, None);
    opts.syntax = Syntax::Auto;
    let got =
        weir_load::programs_to_check(&file, &opts, &Names::default(), &mut |_| Ok(())).unwrap();
    let name = file.display();
    let labels: Vec<String> = got.into_iter().map(|(l, _)| l).collect();
    assert_eq!(
        labels,
        [
            format!("{name} (default, set filter in)"),
            format!("{name} (office, set filter in)"),
            format!("{name} (home, set filter in)"),
        ]
    );
    // One ipfw file is one program, named by its path; `me` needs no
    // addresses to be checked.
    std::fs::write(&file, "100 allow tcp from any to me 22\n").unwrap();
    let got =
        weir_load::programs_to_check(&file, &Options::default(), &Names::default(), &mut |_| {
            Ok(())
        })
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, name.to_string());
}

#[test]
fn a_file_and_its_bytes_load_alike() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, CONF).unwrap();
    let opts = ppp(Some(FilterSet::In), Some("home"));
    let from_file = weir_load::load(&file, &opts, &Names::default(), &mut |_| Ok(())).unwrap();
    let from_bytes = load(CONF, &opts).unwrap();
    let texts = |l: &Loaded| {
        l.program
            .rules
            .iter()
            .map(|r| r.text.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(texts(&from_file), texts(&from_bytes));
    let missing = dir.path().join("nope");
    let err = weir_load::load(&missing, &opts, &Names::default(), &mut |_| Ok(()))
        .err()
        .unwrap();
    assert!(
        matches!(&err, LoadError::Usage(m) if m.starts_with(&format!("{}: ", missing.display()))),
        "{err:?}"
    );
}
