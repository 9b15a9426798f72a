//! ppp filter files and ppp.conf sections: accepted forms, the final state
//! of each set, notes where ppp reads a rule otherwise than it looks,
//! errors with spans, and the translation to ipfw rules.

use std::net::{Ipv4Addr, Ipv6Addr};
use weir_rules::ppp::{self, Bindings, FilterSet, Format, Role};
use weir_rules::{parse_rule, print_ruleset, Names};

fn parse(text: &str) -> ppp::PppFilters {
    ppp::parse(text, &Names::default())
        .unwrap_or_else(|e| panic!("{text}: {e:?}"))
        .filters
}

/// The notes reading `text` gives, as `line:col: message`.
fn notes(text: &str) -> Vec<String> {
    let loaded = ppp::parse(text, &Names::default()).unwrap_or_else(|e| panic!("{text}: {e:?}"));
    loaded
        .notes
        .iter()
        .map(|n| format!("{}:{}: {}", n.span.line, n.span.col, n.message))
        .collect()
}

fn error(text: &str) -> (u32, u32, String) {
    let errs = ppp::parse(text, &Names::default()).expect_err(text);
    let e = &errs[0];
    (e.span.line, e.span.col, e.message.clone())
}

fn bound() -> Bindings {
    Bindings {
        myaddr: Some(Ipv4Addr::new(192, 0, 2, 1)),
        hisaddr: Some(Ipv4Addr::new(192, 0, 2, 254)),
        myaddr6: Some("2001:db8::1".parse().unwrap()),
        hisaddr6: Some("2001:db8::fe".parse().unwrap()),
        dns0: Some(Ipv4Addr::new(198, 51, 100, 53)),
        dns1: Some(Ipv4Addr::new(198, 51, 100, 54)),
        hosts: [("gate".to_owned(), Ipv4Addr::new(203, 0, 113, 9))].into(),
    }
}

/// The translated set as ipfw text, comments dropped.
fn ipfw(text: &str, set: FilterSet) -> Vec<String> {
    let t = ppp::translate(&parse(text), set, &bound(), &Names::default())
        .unwrap_or_else(|e| panic!("{e:?}"));
    t.ruleset
        .rules
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.comment = None;
            format!("{} {r}", r.number)
        })
        .collect()
}

#[test]
fn canonical_forms_read_back() {
    let cases = [
        ("set filter in 0 permit", "set filter in 0 permit"),
        (
            "  set filter out 3 deny ! 10.0.0.0/8 ANY TCP timeout 30 src GT 1023 dst eq http estab syn finrst  # note",
            "set filter out 3 deny ! 10.0.0.0/8 any tcp timeout 30 src gt 1023 dst eq http estab syn finrst",
        ),
        ("SET FILTER dial 0x2 permit 0.0.0.0/0 DNS0 udp dst eq 53", "set filter dial 2 permit 0.0.0.0/0 DNS0 udp dst eq 53"),
        ("set filter alive 0 deny icmp src eq 8", "set filter alive 0 deny icmp src eq 8"),
        ("set filter in 0 permit 2001:db8::/32 any gre", "set filter in 0 permit 2001:db8::/32 any gre"),
        ("set filter in 5 permit 10.0.0.1/32 any all timeout 0", "set filter in 5 permit 10.0.0.1 any all timeout 0"),
        // C numbers: 010 is octal 8; inet_aton's short forms.
        ("set filter in 010 permit", "set filter in 8 permit"),
        ("set filter in -0 permit", "set filter in 0 permit"),
        ("set filter in 0 permit 0 0", "set filter in 0 permit 0.0.0.0/0 0.0.0.0/0"),
        ("set filter in 0 permit 10/8 127.1", "set filter in 0 permit 0.0.0.10/8 127.0.0.1"),
        ("set filter in 0 permit default 0x0a000000/0x8", "set filter in 0 permit 0.0.0.0/0 10.0.0.0/8"),
        // Symbols in any case, the width ppp ignores dropped; host names.
        ("set filter in 0 permit hisaddr/24 MyAddr", "set filter in 0 permit HISADDR MYADDR"),
        ("set filter in 0 permit HISADDR6 ::/0 ipv6-icmp src eq 135", "set filter in 0 permit HISADDR6 ::/0 ipv6-icmp src eq 135"),
        ("set filter in 0 permit gate localhost/8 ipencap src lt 5", "set filter in 0 permit gate localhost/8 ipencap src lt 5"),
        // Words as ppp splits them: quotes, a comment glued to a word, a
        // command name abbreviated as ppp's table allows, a joined line.
        ("setup fil in 0 \"permit\" all#x", "set filter in 0 permit all"),
        ("set filter in 0 permit \\\n any any tcp", "set filter in 0 permit any any tcp"),
        ("set filter in 0 permit ip timeout 7", "set filter in 0 permit ip timeout 7"),
    ];
    for (input, want) in cases {
        let got = ppp::print(&parse(input));
        assert_eq!(got.trim_end(), want, "input: {input}");
        assert_eq!(ppp::print(&parse(&got)), got, "fixed point: {got}");
    }
}

#[test]
fn later_lines_replace_and_clear() {
    let f = parse(
        "set filter in 0 deny tcp\n\
         set filter in 0 permit udp\n\
         set filter in 1 permit\n\
         set filter in 1 clear\n\
         set filter out 4 deny\n\
         set filter out -1\n\
         set filter out 6 permit\n",
    );
    let rules: Vec<String> = f.rules(FilterSet::In).map(|r| r.to_string()).collect();
    assert_eq!(rules, ["0 permit udp"]);
    let out: Vec<String> = f.rules(FilterSet::Out).map(|r| r.to_string()).collect();
    assert_eq!(out, ["6 permit"]);
    assert!(f.is_empty(FilterSet::Dial));
}

#[test]
fn errors_point_at_the_word() {
    let cases: &[(&str, (u32, u32, &str))] = &[
        (
            "set filter in 40 permit",
            (1, 15, "at most 40 rules, 0..39"),
        ),
        ("set filter up 0 permit", (1, 12, "unknown filter set 'up'")),
        (
            "set filter in 3 2 any any",
            (1, 17, "can only jump forward"),
        ),
        ("set filter in 3 allow", (1, 17, "unknown action 'allow'")),
        (
            "set filter in 3 40",
            (1, 17, "rule number 40 is out of range"),
        ),
        (
            "\nset filter in 0 permit 10.0.0.1",
            (2, 24, "ppp reads addresses in pairs"),
        ),
        ("set filter in 0 permit 6", (1, 24, "write tcp for 6")),
        (
            "set filter in 0 permit any any 6",
            (1, 32, "write tcp for 6"),
        ),
        (
            "set filter in 0 permit 10.0.0.1 any tcp src eq 0",
            (1, 48, "port 1..65535"),
        ),
        (
            "set filter in 0 permit udp estab",
            (1, 28, "estab only follows tcp"),
        ),
        (
            "set filter in 0 permit gre src eq 5",
            (1, 28, "port tests only follow tcp or udp"),
        ),
        (
            "set filter in 0 permit icmp src eq x",
            (1, 36, "expected an ICMP type, found 'x'"),
        ),
        (
            "set filter in 0 permit icmp src eq",
            (1, 29, "bad icmp syntax"),
        ),
        (
            "set filter in 0 permit tcp dst eq 80 src eq 1",
            (1, 38, "ppp's order"),
        ),
        (
            "set filter in 0 permit tcp dst eq nosuchservice",
            (1, 35, "unknown service 'nosuchservice'"),
        ),
        (
            "set filter in 0 permit tcp dst eq 80x",
            (1, 35, "ppp would read its leading 80 and drop the rest"),
        ),
        (
            "set filter in 0 permit timeout 5",
            (1, 24, "'timeout' comes after a protocol"),
        ),
        (
            "set filter in 0 permit any any timeout 5",
            (1, 32, "timeout comes after a protocol"),
        ),
        (
            "set filter in 0 permit any any tcp estab timeout 5",
            (1, 42, "unexpected 'timeout'"),
        ),
        (
            "set filter in 0 permit tcp timeout 5s",
            (1, 36, "expected a timeout in seconds"),
        ),
        (
            "set filter in 0 permit !10.0.0.1 any",
            (1, 24, "'!' is a word of its own"),
        ),
        (
            "set filter in 0 permit 10.0.0.0/33 any",
            (1, 24, "bad mask width"),
        ),
        (
            "set filter in 0 permit 10.0.0.1 ::1",
            (1, 33, "families differ"),
        ),
        (
            "set filter in 0 permit 10.0.0.0/8 ::/0",
            (1, 35, "families differ"),
        ),
        (
            "set filter in 0 permit his any",
            (1, 24, "abbreviation of HISADDR"),
        ),
        (
            "set filter in 0 permit 255.255.255.255 any",
            (1, 24, "cannot use 255.255.255.255"),
        ),
        (
            "set filter in 0 permit bad_host any",
            (1, 24, "bad address 'bad_host'"),
        ),
        ("set filter in 5x permit", (1, 15, "leading 5")),
        (
            "set filter in 0 permit \"tcp",
            (1, 24, "unterminated quote"),
        ),
        ("default:", (1, 1, "ppp.conf label")),
        (" set device /dev/cuau0", (1, 2, "other than 'set filter'")),
        ("set filter in", (1, 14, "unexpected end of line")),
    ];
    for (text, (line, col, msg)) in cases {
        let (l, c, m) = error(text);
        assert!(m.contains(msg), "{text}: message {m:?} lacks {msg:?}");
        assert_eq!((l, c), (*line, *col), "{text}: {m}");
    }
}

/// What ppp accepts but reads otherwise than it looks loads, with a note
/// that says how ppp reads it.
#[test]
fn surprises_load_with_a_note() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "set filter in 0 permit 10/8 any",
            "set filter in 0 permit 0.0.0.10/8 any",
            "1:24: ppp reads '10' as inet_aton does: 0.0.0.10",
        ),
        (
            "set filter in 0 permit HISADDR/24 any",
            "set filter in 0 permit HISADDR any",
            "1:24: ppp ignores the width '/24' on HISADDR",
        ),
        (
            "set filter in 0 permit icmp dst eq 8",
            "set filter in 0 permit icmp",
            "1:29: ppp reads only 'src eq TYPE' after icmp and ignores 'dst eq 8': this rule takes every ICMP type",
        ),
        (
            "set filter in 0 permit icmp src lt 5",
            "set filter in 0 permit icmp",
            "1:29: ppp reads only 'src eq TYPE' after icmp and ignores 'src lt 5'",
        ),
        (
            "set filter in 0 clear now",
            "",
            "1:23: ppp ignores 'now' after clear",
        ),
        (
            "set filter in 0 permit\nset filter in -1 all of it",
            "",
            "2:18: ppp ignores 'all' after a negative rule number",
        ),
    ];
    for (text, printed, note) in cases {
        assert_eq!(ppp::print(&parse(text)).trim_end(), *printed, "{text}");
        let n = notes(text);
        assert!(n.iter().any(|x| x.starts_with(note)), "{text}: {n:?}");
    }
}

#[test]
fn every_line_is_checked() {
    let errs = ppp::parse(
        "set filter in 99 permit\nset filter in 0 bogus\nset filter in 1 permit\n",
        &Names::default(),
    )
    .expect_err("two bad lines");
    assert_eq!(errs.len(), 2);
    assert_eq!((errs[0].span.line, errs[1].span.line), (1, 2));
}

/// What every rule with an upper-layer protocol carries: ppp compares an
/// IPv6 packet's first Next Header, never that protocol's when extension
/// headers come first.
const NO_EXT6: &str = "not ext6hdr hopopt,route,frag,dstopt,ah,esp";

#[test]
fn translation_numbers_rules_and_ends_in_the_implicit_deny() {
    let text = "set filter in 0 2 10.0.0.0/8 any\n\
                set filter in 1 deny ! MYADDR any tcp dst lt 1024 syn\n\
                set filter in 2 permit any HISADDR udp src gt 65535\n\
                set filter in 3 permit icmp src eq 8\n\
                set filter in 4 deny any any tcp finrst estab\n";
    assert_eq!(
        ipfw(text, FilterSet::In),
        [
            "1 allow ip4 from any to any frag".to_owned(),
            "100 skipto 300 ip from 10.0.0.0/8 to any".to_owned(),
            format!("200 skipto 300 tcp from 192.0.2.1 to any 0-1023 {NO_EXT6} tcpflags syn"),
            "250 deny log ip from any to any".to_owned(),
            format!("300 allow udp from any not 0-65535 to 192.0.2.254 {NO_EXT6}"),
            format!("400 allow icmp from any to any {NO_EXT6} icmptypes 8"),
            format!(
                "500 deny log tcp from any to any {NO_EXT6} tcpflags ack not tcpflags !fin,!rst"
            ),
            "4100 deny log ip from any to any".to_owned(),
        ]
    );
    // dial and alive deny later fragments; dial logs its permits.
    assert_eq!(
        ipfw(
            "set filter dial 0 permit any DNS1 udp dst eq domain",
            FilterSet::Dial
        ),
        [
            "1 deny log ip4 from any to any frag".to_owned(),
            format!("100 allow log udp from any to 198.51.100.54 53 {NO_EXT6}"),
            "4100 deny log ip from any to any".to_owned(),
        ]
    );
}

/// Host names, the IPv6 symbols, ports ppp reads as 0, ICMPv6 types,
/// ESP (first in an IPv6 packet or nowhere) and the all-zeros address.
#[test]
fn translation_of_the_other_forms() {
    let text = "set filter out 0 permit HISADDR6 ::/0 ipv6-icmp src eq 128\n\
                set filter out 1 permit gate/24 any ipv6 src eq 5\n\
                set filter out 2 permit any any ipencap dst lt 5\n\
                set filter out 3 permit 0 0 esp\n\
                set filter out 4 permit any any icmp src eq 300\n\
                set filter out 5 deny localhost any all\n";
    let mut b = bound();
    b.hosts.insert("localhost".into(), Ipv4Addr::UNSPECIFIED);
    // ipv6 (41) as /etc/protocols names it; the built-in table has no name.
    let mut names = Names::default();
    names.add_protocols_file("ipv6\t41\tIPv6\n");
    let f = ppp::parse(text, &names).unwrap().filters;
    let t = ppp::translate(&f, FilterSet::Out, &b, &names).unwrap();
    let rules: Vec<String> = t
        .ruleset
        .rules
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.comment = None;
            format!("{} {r}", r.number)
        })
        .collect();
    assert_eq!(
        rules,
        [
            "1 allow ip4 from any to any frag".to_owned(),
            format!("100 allow ipv6-icmp from 2001:db8::fe to any {NO_EXT6} icmp6types 128"),
            // ppp reads port 0 for ipv6 (41): `eq 5` never holds...
            format!("200 allow ipv6 from not any to any {NO_EXT6}"),
            // ... and `lt 5` always does.
            format!("300 allow ipencap from any to any {NO_EXT6}"),
            "400 allow esp from any to any not ext6hdr hopopt,route,frag,dstopt,ah".to_owned(),
            format!("500 allow icmp from not any to any {NO_EXT6}"),
            // A host that resolves to 0.0.0.0 is any, as ppp's width 0.
            "600 deny log ip from any to any".to_owned(),
            "4100 deny log ip from any to any".to_owned(),
        ]
    );
    assert!(
        t.notes
            .iter()
            .any(|n| n.message.contains("ICMP type 300 is above 255")),
        "{:?}",
        t.notes
    );
    // A rule naming an IPv6 extension header as its protocol says how it
    // differs for IPv6.
    let t = ppp::translate(
        &parse("set filter in 0 permit ah"),
        FilterSet::In,
        &bound(),
        &Names::default(),
    )
    .unwrap();
    assert!(
        t.notes[0].message.contains("first Next Header is ah"),
        "{:?}",
        t.notes
    );
}

#[test]
fn translation_reads_back_as_ipfw() {
    let text = "set filter out 0 deny ! any 0.0.0.0/0 tcp src eq 22\nset filter out 7 permit\n";
    let t = ppp::translate(&parse(text), FilterSet::Out, &bound(), &Names::default()).unwrap();
    let printed = print_ruleset(&t.ruleset);
    let again = weir_rules::parse(&printed).unwrap_or_else(|e| panic!("{printed}\n{e:?}"));
    assert_eq!(again, t.ruleset, "{printed}");
    assert!(printed.contains("// ppp: set filter out 0 deny ! any 0.0.0.0/0 tcp src eq 22"));
}

#[test]
fn a_set_without_rule_0_permits_everything() {
    let text = "set filter in 1 deny\nset filter in 2 deny tcp\n";
    let t = ppp::translate(&parse(text), FilterSet::In, &bound(), &Names::default()).unwrap();
    let rules: Vec<String> = t.ruleset.rules.iter().map(|r| r.to_string()).collect();
    assert_eq!(
        rules,
        ["allow ip from any to any // ppp: no rule 0: ppp permits every packet"]
    );
    assert_eq!(t.notes.len(), 1);
    assert!(t.notes[0].message.contains("no rule 0"), "{:?}", t.notes);
    // An empty set is the same, without the note.
    let t = ppp::translate(&parse(text), FilterSet::Out, &bound(), &Names::default()).unwrap();
    assert_eq!(t.ruleset.rules.len(), 1);
    assert!(t.notes.is_empty());
}

#[test]
fn unbound_symbols_and_unresolved_hosts_are_errors_with_spans() {
    let text = "set filter in 0 permit any any\n\
                set filter in 1 deny HISADDR MYADDR tcp dst eq http\n\
                set filter in 2 deny nosuchhost any\n";
    let errs = ppp::translate(
        &parse(text),
        FilterSet::In,
        &Bindings::default(),
        &Names::default(),
    )
    .expect_err("unbound");
    let msgs: Vec<String> = errs
        .iter()
        .map(|e| format!("{}:{}: {}", e.span.line, e.span.col, e.message))
        .collect();
    assert_eq!(
        msgs,
        [
            "2:22: HISADDR used but --hisaddr not given",
            "3:22: host name 'nosuchhost' did not resolve to an IPv4 address",
        ]
    );
    let mut b = bound();
    b.hosts.insert("nosuchhost".into(), Ipv4Addr::BROADCAST);
    let errs =
        ppp::translate(&parse(text), FilterSet::In, &b, &Names::default()).expect_err("broadcast");
    assert!(errs[0].message.contains("255.255.255.255"), "{errs:?}");
    // Rules of other sets are not translated, so they need no bindings.
    assert!(ppp::translate(
        &parse(text),
        FilterSet::Out,
        &Bindings::default(),
        &Names::default()
    )
    .is_ok());
    assert_eq!(
        parse(text).host_names(Some(FilterSet::In)),
        ["nosuchhost"],
        "the names to resolve before translating"
    );
}

#[test]
fn icmp_types_beyond_weirs_bitmap_are_refused() {
    let t = ppp::translate(
        &parse("set filter in 0 permit icmp src eq 40"),
        FilterSet::In,
        &bound(),
        &Names::default(),
    );
    assert!(t.unwrap_err()[0].message.contains("0..31"));
}

#[test]
fn roles_follow_the_numbering() {
    assert_eq!(ppp::role_of(ppp::FRAGMENT_RULE), Role::Fragment);
    assert_eq!(ppp::role_of(ppp::rule_number(0)), Role::Rule(0));
    assert_eq!(
        ppp::role_of(ppp::rule_number(3) + ppp::INVERT_OFFSET),
        Role::Rule(3)
    );
    assert_eq!(ppp::role_of(ppp::rule_number(39)), Role::Rule(39));
    assert_eq!(ppp::role_of(ppp::IMPLICIT_DENY_RULE), Role::ImplicitDeny);
}

#[test]
fn detection_looks_at_the_first_command() {
    assert_eq!(
        ppp::detect("# ppp\n\n  set filter in 0 permit\n"),
        Some(Format::Filters)
    );
    assert_eq!(
        ppp::detect("# ppp.conf\ndefault:\n set device /dev/cuau0\n"),
        Some(Format::Conf)
    );
    assert_eq!(ppp::detect("dodgy :\n"), Some(Format::Conf));
    assert_eq!(ppp::detect("# ipfw\nallow ip from any to any\n"), None);
    assert_eq!(ppp::detect(""), None);
    // An ipfw rule never starts with `set`.
    assert!(parse_rule("set filter in 0 permit").is_err());
}

const CONF: &str = "\
# a ppp.conf
default:
 set log Phase
 set filter in 0 deny tcp dst eq 23   # default runs first
 set dial \"ABORT BUSY \\
   TIMEOUT 5 \"
isp:
 set device /dev/cuau1
 set filter in 0 permit tcp          # replaces default's rule 0
 load common
 set filter out 0 permit
  set filter alive 1 permit udp
!include other.conf
common:
 set filter in 1 deny udp
 set filter in 2 permit udp \"unterminated
looper:
 load looper
broken:
 load nowhere
isp:
 set filter in 9 deny
 set filter in 3 deny
  set filter in 4 deny
";

fn conf(label: &str) -> Result<ppp::Loaded, Vec<String>> {
    ppp::parse_conf(CONF, label, &Names::default()).map_err(|e| {
        e.iter()
            .map(|d| format!("{}:{}: {}", d.span.line, d.span.col, d.message))
            .collect()
    })
}

/// ppp.conf: `default` first, then the label; `load` runs another section
/// in place; only the first section of a label counts; commands other than
/// `set filter` and `load` are skipped, quotes and joined lines included.
#[test]
fn ppp_conf_sections_run_as_ppp_runs_them() {
    let err = conf("isp").expect_err("common has a broken quote in a filter line");
    assert_eq!(err, ["16:29: unterminated quote"]);
    let fixed = CONF.replace("\"unterminated", "");
    let l = ppp::parse_conf(&fixed, "isp", &Names::default()).unwrap();
    assert_eq!(
        ppp::print(&l.filters),
        "set filter in 0 permit tcp\n\
         set filter in 1 deny udp\n\
         set filter in 2 permit udp\n\
         set filter out 0 permit\n\
         set filter alive 1 permit udp\n"
    );
    let d = ppp::parse_conf(&fixed, "default", &Names::default()).unwrap();
    assert_eq!(
        ppp::print(&d.filters),
        "set filter in 0 deny tcp dst eq 23\n"
    );
    assert_eq!(ppp::conf_labels(&fixed), ["default", "isp", "common"]);
    // The lines ppp never reads are noted: a label's second section.
    let n: Vec<String> = l
        .notes
        .iter()
        .map(|n| format!("{}: {}", n.span.line, n.message))
        .collect();
    assert_eq!(n.len(), 3, "{n:?}");
    assert!(
        n[0].starts_with("22: ppp reads only the first section labelled 'isp'"),
        "{n:?}"
    );
    let stray = format!("{fixed}set filter in 5 deny\n");
    let n = ppp::parse_conf(&stray, "isp", &Names::default())
        .unwrap()
        .notes;
    assert!(n[3].message.contains("label without its colon"), "{n:?}");
    let outside = format!("  set filter in 5 deny\n{fixed}");
    let n = ppp::parse_conf(&outside, "isp", &Names::default())
        .unwrap()
        .notes;
    assert!(n[0].message.contains("outside any label"), "{n:?}");
    assert_eq!(
        conf("looper").unwrap_err(),
        ["18:2: 'load' nests deeper than 8 sections (does a section load itself?)"]
    );
    // Fan-out within the depth limit is bounded too.
    let mut wide = String::new();
    for i in 0..8 {
        wide += &format!("s{i}:\n load{}\n", format!(" s{}", i + 1).repeat(10));
    }
    wide += "s8:\n set filter in 0 permit\n";
    let e = ppp::parse_conf(&wide, "s0", &Names::default()).unwrap_err();
    assert!(e[0].message.contains("more than 256 sections"), "{e:?}");
    assert_eq!(
        conf("broken").unwrap_err(),
        ["20:7: load: no label 'nowhere' in this ppp.conf"]
    );
    assert_eq!(
        conf("dodgy").unwrap_err(),
        ["1:1: no label 'dodgy' in this ppp.conf (labels: default, isp, common, looper, broken); weir does not follow !include"]
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn endpoint() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("any".to_owned()),
            Just("MYADDR".to_owned()),
            Just("hisaddr".to_owned()),
            Just("DNS0".to_owned()),
            Just("DNS1".to_owned()),
            Just("MYADDR6".to_owned()),
            Just("HISADDR6/64".to_owned()),
            Just("gate".to_owned()),
            Just("gate/16".to_owned()),
            Just("0".to_owned()),
            Just("10/8".to_owned()),
            Just("127.1".to_owned()),
            Just("::/0".to_owned()),
            (any::<[u8; 4]>(), 0u8..=32).prop_map(|(a, w)| format!("{}/{w}", Ipv4Addr::from(a))),
            any::<[u8; 4]>().prop_map(|a| Ipv4Addr::from(a).to_string()),
            (any::<[u16; 8]>(), 0u8..=128).prop_map(|(a, w)| format!("{}/{w}", Ipv6Addr::from(a))),
        ]
    }

    fn proto_tail() -> impl Strategy<Value = String> {
        let port = prop_oneof![
            (1u32..=65535).prop_map(|p| p.to_string()),
            Just("http".to_owned()),
            Just("domain".to_owned()),
            Just("ftp-data".to_owned())
        ];
        let op = prop_oneof![Just("lt"), Just("eq"), Just("gt")];
        let ports = (
            proptest::option::of((op.clone(), port.clone())),
            proptest::option::of((op, port)),
        )
            .prop_map(|(s, d)| {
                let mut t = String::new();
                if let Some((o, p)) = s {
                    t += &format!(" src {o} {p}");
                }
                if let Some((o, p)) = d {
                    t += &format!(" dst {o} {p}");
                }
                t
            });
        let timeout = proptest::option::of(0u32..100_000)
            .prop_map(|t| t.map(|t| format!(" timeout {t}")).unwrap_or_default());
        prop_oneof![
            Just(String::new()),
            (timeout.clone(), ports.clone(), any::<[bool; 3]>()).prop_map(|(t, p, f)| {
                let flags: String = ["estab", "syn", "finrst"]
                    .iter()
                    .zip(f)
                    .filter(|(_, on)| *on)
                    .map(|(w, _)| format!(" {w}"))
                    .collect();
                format!(" tcp{t}{p}{flags}")
            }),
            (timeout.clone(), ports).prop_map(|(t, p)| format!(" udp{t}{p}")),
            (timeout.clone(), proptest::option::of(0u16..=300)).prop_map(|(t, ty)| format!(
                " icmp{t}{}",
                ty.map(|ty| format!(" src eq {ty}")).unwrap_or_default()
            )),
            (timeout.clone(), proptest::option::of(0u16..=300)).prop_map(|(t, ty)| format!(
                " ipv6-icmp{t}{}",
                ty.map(|ty| format!(" src eq {ty}")).unwrap_or_default()
            )),
            (
                timeout,
                prop_oneof![
                    Just("all"),
                    Just("gre"),
                    Just("ospf"),
                    Just("ip"),
                    Just("esp"),
                    Just("ah")
                ]
            )
                .prop_map(|(t, p)| format!(" {p}{t}")),
        ]
    }

    fn line() -> impl Strategy<Value = String> {
        (
            prop_oneof![Just("in"), Just("out"), Just("dial"), Just("alive")],
            0u8..40,
            prop_oneof![
                Just("permit".to_owned()),
                Just("deny".to_owned()),
                (0u8..40).prop_map(|n| n.to_string()),
                Just("clear".to_owned())
            ],
            any::<bool>(),
            proptest::option::of((endpoint(), endpoint())),
            proto_tail(),
        )
            .prop_map(|(set, n, action, invert, addrs, tail)| {
                let mut l = format!("set filter {set} {n} {action}");
                if action == "clear" {
                    return l;
                }
                if invert {
                    l += " !";
                }
                if let Some((s, d)) = addrs {
                    l += &format!(" {s} {d}");
                }
                l + &tail
            })
    }

    proptest! {
        /// Generated files parse (or fail with a message), print to a fixed
        /// point, and translate (or fail with a message) without panic; a
        /// translation reads back as ipfw.
        #[test]
        fn parse_print_translate(lines in proptest::collection::vec(line(), 0..30)) {
            let text = lines.join("\n");
            let names = Names::default();
            let Ok(f) = ppp::parse(&text, &names).map(|l| l.filters) else { return Ok(()) };
            let printed = ppp::print(&f);
            let again = ppp::parse(&printed, &names).expect("printed form parses").filters;
            prop_assert_eq!(&again, &f);
            for set in FilterSet::ALL {
                if let Ok(t) = ppp::translate(&f, set, &bound(), &Names::default()) {
                    let ipfw = print_ruleset(&t.ruleset);
                    let back = weir_rules::parse(&ipfw).expect("translation reads back");
                    prop_assert_eq!(back, t.ruleset);
                }
            }
        }

        /// Arbitrary text never panics the reader.
        #[test]
        fn any_text(text in "(set filter (in|out) [0-9]{1,2} |[ -~]|\\\\\n|\n [a-z]+:\n){0,80}") {
            let names = Names::default();
            let _ = ppp::parse(&text, &names);
            let _ = ppp::detect(&text);
            for label in ppp::conf_labels(&text) {
                let _ = ppp::parse_conf(&text, &label, &names);
            }
        }
    }
}
