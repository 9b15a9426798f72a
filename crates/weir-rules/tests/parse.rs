//! Parser behaviour: accepted forms, canonical printing, errors with spans.

use weir_rules::*;

fn one(text: &str) -> Rule {
    parse_rule(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn canon(text: &str) -> String {
    one(text).to_string()
}

#[test]
fn canonical_forms() {
    let cases = [
        ("add 100 allow ip from any to any", "allow ip from any to any"),
        ("pass all from any to any", "allow ip from any to any"),
        ("ipfw -q add 5 permit tcp from any to any 80", "allow tcp from any to any 80"),
        ("drop udp from 10.0.0.0/8 53 to me", "deny udp from 10.0.0.0/8 53 to me"),
        (
            "deny log logamount 5 tcp from not 10.1.2.3,10.1.2.4 to any 1-1023,https setup",
            "deny log logamount 5 tcp from not 10.1.2.3,10.1.2.4 to any 1-1023,https setup",
        ),
        (
            "allow { tcp or udp } from { 192.0.2.1 or 198.51.100.0/24 } to any domain",
            "allow { tcp or udp } from { 192.0.2.1 or 198.51.100.0/24 } to any domain",
        ),
        (
            "count tcp from any to any tcpflags !ack,syn",
            "count tcp from any to any tcpflags syn,!ack",
        ),
        (
            "deny icmp from any to any icmptypes echo,0,unreach",
            "deny icmp from any to any icmptypes 0,3,8",
        ),
        ("reject ip from 10.0.0.0:255.0.0.0 to any", "reject ip from 10.0.0.0:255.0.0.0 to any"),
        ("unreach port udp from any to any 7", "unreach port udp from any to any 7"),
        ("unreach 200 udp from any to any", "unreach 200 udp from any to any"),
        ("skipto 1000 ip from any to any in via eth0", "skipto 1000 ip from any to any in via eth0"),
        ("check-state", "check-state"),
        ("return ip from any to any", "return"),
        ("deny ip6 from 2001:db8::/32 to any", "deny ip6 from 2001:db8::/32 to any"),
        (
            "deny ip from any to any not established iplen 40-60,1500 ipttl 1 iptos lowdelay,!mincost",
            "deny ip from any to any not established iplen 40-60,1500 ipttl 1 iptos lowdelay,!mincost",
        ),
        ("allow tcp from any ftp\\-data to any", "allow tcp from any ftp\\-data to any"),
        ("allow ip from any to any // trusted  ", "allow ip from any to any // trusted"),
        ("deny ip from table(bad) to any", "deny ip from table(bad) to any"),
        ("allow 47 from any to any frag ipoptions rr,!ts", "allow 47 from any to any frag ipoptions rr,!ts"),
    ];
    for (input, want) in cases {
        assert_eq!(canon(input), want, "input: {input}");
        // And the canonical form is a fixed point.
        assert_eq!(canon(want), want);
    }
}

#[test]
fn auto_numbering_follows_ipfw() {
    let rs = parse("allow ip from any to any\n500 deny ip from any to any\n\n# c\ncount ip from any to any\n20 count ip from any to any\nallow ip from any to any\n").unwrap();
    let numbers: Vec<u16> = rs.rules.iter().map(|r| r.number).collect();
    assert_eq!(numbers, [100, 500, 600, 20, 700]);
}

/// Past the last step ipfw's kernel keeps giving the highest number
/// (`commit_rules`): rules then share it, in the order added.
#[test]
fn auto_numbering_stops_at_the_last_step() {
    let rs = parse("65400 allow ip from any to any\ndeny ip from any to any\ncount ip from any to any\n// note\n").unwrap();
    let numbers: Vec<u16> = rs.rules.iter().map(|r| r.number).collect();
    assert_eq!(numbers, [65400, 65500, 65500, 65500]);
    let rs = parse("65434 allow ip from any to any\nallow ip from any to any\n").unwrap();
    assert_eq!(rs.rules[1].number, 65534);
}

#[test]
fn errors_name_line_and_column() {
    let src =
        "allow ip from any to any\ndeny tcp from any to any 99999\nallow tcp frm any to any\n";
    let errs = parse(src).unwrap_err();
    assert_eq!(errs.len(), 2);
    assert_eq!((errs[0].span.line, errs[0].span.col), (2, 26));
    assert!(errs[0].message.contains("out of range"));
    assert_eq!((errs[1].span.line, errs[1].span.col), (3, 11));
    assert_eq!(errs[1].message, "expected 'from', found 'frm'");
    let rendered = errs[1].render("r.conf", src).to_string();
    assert_eq!(
        rendered,
        "r.conf:3:11: expected 'from', found 'frm'\n  allow tcp frm any to any\n            ^^^"
    );
}

#[test]
fn rejects_bad_rules() {
    let bad = [
        ("bogus ip from any to any", "unknown action"),
        ("allow ip from any", "expected 'to'"),
        ("allow ip from 300.1.1.1 to any", "expected an address"),
        ("allow ip from 10.0.0.0/33 to any", "expected an address"),
        ("allow tcp from any to any 80-20", "backwards"),
        (
            "allow tcp from any to any tcpflags syn,bogus",
            "unknown TCP flag",
        ),
        ("allow ip from any to any ipversion 5", "4 or 6"),
        ("allow tcp from any to any 80 flux", "unknown option"),
        ("allow icmp from any to any icmptypes 40", "0..31"),
        ("100 skipto 50 ip from any to any", "forward"),
        ("100 call 100 ip from any to any", "forward"),
        ("0 allow ip from any to any", "1..65534"),
        ("65535 allow ip from any to any", "rule number"),
        ("allow { tcp or udp from any to any", "'}'"),
        ("allow ip from any to any in in out 7", "unknown option '7'"),
        ("allow 256 from any to any", "over 255"),
        ("deny", "end of rule"),
    ];
    for (text, want) in bad {
        let err = parse_rule(text).expect_err(text);
        assert!(
            err.message.contains(want),
            "{text}: got '{}', want '{want}'",
            err.message
        );
        assert!(err.span.line == 1 && err.span.col >= 1);
    }
}

#[test]
fn ports_after_destination_are_not_options() {
    let r = one("allow tcp from any to any 80 in");
    assert!(r.body.dst_ports.is_some());
    assert_eq!(r.body.options.len(), 1);
    let r = one("allow tcp from any to any not in");
    assert!(r.body.dst_ports.is_none());
    assert!(r.body.options[0].not);
    let r = one("allow tcp from any to any not 22");
    assert!(r.body.dst_ports.as_ref().unwrap().not);
}

#[test]
fn canonical_forms_of_the_whole_language() {
    let cases = [
        (
            "add 100 set 3 prob 0.5 allow log tag 5 tcp from any to any",
            "set 3 prob 0.5 allow log tag 5 tcp from any to any",
        ),
        ("pipe 1 ip from any to any", "pipe 1 ip from any to any"),
        ("queue tablearg ip from table(t) to any", "queue tablearg ip from table(t) to any"),
        ("divert natd ip4 from any to any via em0", "divert natd ip4 from any to any via em0"),
        ("tee 8000 ip from any to any", "tee 8000 ip from any to any"),
        ("fwd 10.0.0.1,8080 tcp from any to any 80", "fwd 10.0.0.1,8080 tcp from any to any 80"),
        ("fwd 10.0.0.1:8080 tcp from any to any", "fwd 10.0.0.1,8080 tcp from any to any"),
        ("forward 2001:db8::1 ip6 from any to any", "fwd 2001:db8::1 ip6 from any to any"),
        ("fwd [2001:db8::1]:53 ip6 from any to any", "fwd [2001:db8::1]:53 ip6 from any to any"),
        ("nat global ip from any to any", "nat global ip from any to any"),
        ("netgraph 7 ip from any to any", "netgraph 7 ip from any to any"),
        ("ngtee 7 ip from any to any", "ngtee 7 ip from any to any"),
        ("setfib 2 ip from any to any", "setfib 2 ip from any to any"),
        ("setdscp 46 ip from any to any", "setdscp ef ip from any to any"),
        ("unreach6 admin-prohib ip6 from any to any", "unreach6 admin-prohib ip6 from any to any"),
        ("abort sctp from any to any", "abort sctp from any to any"),
        ("reset6 tcp from any to any", "reset6 tcp from any to any"),
        ("abort6 sctp from any to any", "abort6 sctp from any to any"),
        ("reass ip from any to any", "reass ip from any to any"),
        ("tcp-setmss 1400 tcp from any to any setup", "tcp-setmss 1400 tcp from any to any setup"),
        ("check-state :ssh", "check-state :ssh"),
        ("check-state :default", "check-state"),
        ("check-state :any", "check-state :any"),
        ("allow tcp from any to any 22 keep-state :ssh", "allow tcp from any to any 22 keep-state :ssh"),
        (
            "allow tcp from any to any set-limit all 5 :web",
            "allow tcp from any to any set-limit src-addr src-port dst-addr dst-port 5 :web",
        ),
        (
            "allow tcp from any to any keep-state defer-immediate-action",
            "allow tcp from any to any keep-state defer-action",
        ),
        ("allow ip from 10.1.2.0/24{5,10,20-25} to any", "allow ip from 10.1.2.0/24{5,10,20-25} to any"),
        ("allow ip from 10.1.2.7{5,6,7} to any", "allow ip from 10.1.2.0/24{5-7} to any"),
        ("allow ip from any to any ( in or out )", "allow ip from any to any { in or out }"),
        ("allow ip from any to any { via em0 or not recv em1 }", "allow ip from any to any { via em0 or not recv em1 }"),
        ("deny tcp from any to any ! established", "deny tcp from any to any not established"),
        ("deny tcp from any to any !established", "deny tcp from any to any not established"),
        ("allow ( tcp or udp ) from any to any", "allow { tcp or udp } from any to any"),
        ("allow ip from ( 10.0.0.1 or 10.0.0.2 ) to any", "allow ip from { 10.0.0.1 or 10.0.0.2 } to any"),
        ("allow ip from { 192.0.2.1 or not 1.2.3.0/24 or ! 198.51.100.0/24 } to any", "allow ip from { 192.0.2.1 or not 1.2.3.0/24 or not 198.51.100.0/24 } to any"),
        ("allow ip from any to any frag mf,!df", "allow ip from any to any frag mf,!df"),
        ("allow ip from any to any frag offset", "allow ip from any to any frag"),
        ("allow ip from any to any fragment in", "allow ip from any to any frag in"),
        (
            "count ip from any to any ipid 1-100 tcpwin 0 tcpdatalen 0 dscp af11,ef,7 ipprecedence 5",
            "count ip from any to any ipid 1-100 tcpwin 0 tcpdatalen 0 dscp 7,af11,ef ipprecedence 5",
        ),
        (
            "count tcp from any to any tcpseq 0x10 tcpack 7 tcpopts mss,!sack tcpmss 536-1460",
            "count tcp from any to any tcpseq 16 tcpack 7 tcpoptions mss,!sack tcpmss 536-1460",
        ),
        (
            "allow src-ip 10.0.0.0/8 dst-port 80",
            "allow ip from any to any src-ip 10.0.0.0/8 dst-port 80",
        ),
        (
            "allow ip from any to any src-ip6 2001:db8::/32 dst-ipv6 me6 proto udp",
            "allow ip from any to any src-ip6 2001:db8::/32 dst-ip6 me6 proto udp",
        ),
        (
            "deny ip from any to any mac any 00:11:22:33:44:55 mac-type arp,ipv6 layer2",
            "deny ip from any to any mac any 00:11:22:33:44:55 mac-type 0x0806,0x86dd layer2",
        ),
        (
            "deny ip from any to any MAC 00:11:22:00:00:00/24 any bridged",
            "deny ip from any to any mac 00:11:22:00:00:00/24 any layer2",
        ),
        (
            "count ip from any to any lookup dst-port ports lookup dscp d flow table(f,3)",
            "count ip from any to any lookup dst-port ports lookup dscp d flow table(f,3)",
        ),
        ("allow ip from any to any iptos congestion,!mincost", "allow ip from any to any iptos congestion,!mincost"),
        (
            "count ip from any to any ipopts rr tcpflgs syn estab ipver 6 icmptype 8 icmp6type 128",
            "count ip from any to any ipoptions rr tcpflags syn established ipversion 6 icmptypes 8 icmp6types 128",
        ),
        ("allow ip from any to any via table(ifs) recv any", "allow ip from any to any via table(ifs) recv any"),
        ("allow ip from any to any diverted-output not diverted", "allow ip from any to any diverted-output not diverted"),
        ("allow ip6 from any to any flow-id 5,0x10 ext6hdr rthdr0,frag", "allow ip6 from any to any flow-id 5,16 ext6hdr frag,rthdr0"),
        ("count ip from any to any fib 2 tagged 1-5,9 ip4", "count ip from any to any fib 2 tagged 1-5,9 ipversion 4"),
        ("allow altq q1 untag 7 ip from any to any", "allow altq q1 untag 7 ip from any to any"),
        ("deny ip from table(13) to any lookup src-ip 13", "deny ip from table(13) to any lookup src-ip 13"),
        // Right after the destination, ip4/ip6 are options, not ports.
        ("allow ip from any to any ip6", "allow ip from any to any ipversion 6"),
        ("allow ip from any to any not ipv4", "allow ip from any to any not ipversion 4"),
        // ipfw's comment action: a number and a comment count everything.
        ("100 // note", "count ip from any to any // note"),
        ("add 200 set 3 // x", "set 3 count ip from any to any // x"),
    ];
    for (input, want) in cases {
        assert_eq!(canon(input), want, "input: {input}");
        assert_eq!(canon(want), want, "fixed point: {want}");
    }
}

#[test]
fn options_a_capture_cannot_decide_are_refused_by_name() {
    let cases = [
        (
            "allow tcp from any to any uid root",
            27,
            "'uid' needs the owner of a local socket, which a capture does not carry",
        ),
        (
            "allow tcp from any to any not gid wheel",
            31,
            "'gid' needs the group",
        ),
        (
            "allow tcp from any to any jail 3",
            27,
            "'jail' needs the jail of a local socket",
        ),
        (
            "allow tcp from any to any sockarg",
            27,
            "'sockarg' needs the user cookie",
        ),
        (
            "allow ip from any to any verrevpath",
            26,
            "'verrevpath' needs the host's routing table",
        ),
        (
            "allow ip from any to any versrcreach",
            26,
            "'versrcreach' needs the host's routing table",
        ),
        (
            "allow ip from any to any antispoof",
            26,
            "'antispoof' needs the host's routing table and interface addresses",
        ),
        (
            "allow ip from any to any ipsec",
            26,
            "'ipsec' needs to know whether IPsec processed the packet",
        ),
        (
            "allow ip from any to any lookup uid t",
            33,
            "'lookup uid' needs the owner of a local socket",
        ),
        (
            "allow ip from any to any via 10.0.0.1",
            30,
            "names an interface by its address",
        ),
        (
            "eaction foo bar ip from any to any",
            1,
            "'eaction' hands the packet to an external action module",
        ),
        (
            "nat64lsn n1 ip6 from any to any",
            1,
            "'nat64lsn' hands the packet",
        ),
        (
            "count tag tablearg ip from table(t) to any",
            11,
            "'tag tablearg' is not supported",
        ),
    ];
    for (text, col, want) in cases {
        let err = parse_rule(text).expect_err(text);
        assert!(err.message.contains(want), "{text}: got '{}'", err.message);
        assert_eq!(err.span.col, col, "{text}: {}", err.message);
    }
}

#[test]
fn unknown_words_after_the_destination_are_unknown_options() {
    let cases = [
        ("deny ip from any to any foo", 25, "unknown option 'foo'"),
        (
            "deny tcp from any to any bogus",
            26,
            "unknown option 'bogus'",
        ),
        ("deny tcp from any foo to any", 19, "unknown service 'foo'"),
        (
            "deny tcp from any to any 80,foo",
            29,
            "unknown service 'foo'",
        ),
        ("deny ip from any to any in bar", 28, "unknown option 'bar'"),
        (
            "deny ip from any in to any",
            18,
            "options go after the destination",
        ),
    ];
    for (text, col, want) in cases {
        let err = parse_rule(text).expect_err(text);
        assert!(err.message.contains(want), "{text}: got '{}'", err.message);
        assert_eq!(err.span.col, col, "{text}");
    }
    // A service name there is a port.
    let r = one("deny tcp from any to any http in");
    assert_eq!(
        r.body.dst_ports.as_ref().unwrap().items[0].lo,
        Port::Name("http".into(), Span::default())
    );
    // Names from /etc/services count when the caller knows them.
    let mut names = Names::default();
    names.add_services_file("gopher 70/tcp\n");
    let rs = parse_with("deny tcp from any to any gopher\n", &names).unwrap();
    assert!(rs.rules[0].body.dst_ports.is_some());
}

/// Found by the rules fuzz target: a backwards range panicked in
/// `BTreeMap::range`. ipfw's kernel refuses one (EINVAL), so weir does too.
#[test]
fn a_backwards_delete_range_is_an_error_at_its_word() {
    for (line, col) in [("delete 200-100", 8), ("ipfw set 3 delete 65535-1", 19)] {
        let src = format!("add 100 allow ip from any to any\n{line}\n");
        let errs = parse(&src).unwrap_err();
        assert_eq!(errs.len(), 1, "{line}");
        assert!(errs[0].message.contains("backwards"), "{}", errs[0].message);
        assert_eq!((errs[0].span.line, errs[0].span.col), (2, col), "{line}");
    }
    // The same numbers the right way round delete the rule.
    let rs = parse("add 150 allow ip from any to any\ndelete 100-200\n").unwrap();
    assert!(rs.rules.is_empty());
}

#[test]
fn script_lines_apply_in_order() {
    let src = "\
ipfw -q -f flush
add 100 allow ip from any to any
ipfw -q flush
add allow tcp from any to any
/sbin/ipfw add 300 set 31 deny ip from any to any
ipfw -f flush
ipfw -q pipe 1 config bw 1Mbit/s
ipfw nat 1 config if em0 reset same_ports
ipfw queue 2 config pipe 1 weight 5
ipfw zero
ipfw resetlog
ipfw -q add 400 set 3 count ip from any to any
ipfw add 500 count ip from any to any
ipfw add 500 count udp from any to any
ipfw delete 500
ipfw set disable 3 4
ipfw set enable 4
ipfw disable one_pass
net.inet.ip.fw.autoinc_step=10
allow ip from any to any
ipfw table 13 add 10.0.0.0/8 5
ipfw table 13 add 10.1.0.0/16 192.0.2.1 10.2.0.0/16
ipfw table all flush
ipfw enable firewall
ipfw show
";
    let rs = parse(src).unwrap();
    let rules: Vec<(u16, u8)> = rs.rules.iter().map(|r| (r.number, r.head.set)).collect();
    assert_eq!(rules, [(300, 31), (400, 3), (410, 0)]);
    assert_eq!(rs.disabled_sets, 1 << 3);
    assert_eq!(rs.settings.len(), 1);
    assert_eq!(
        (rs.settings[0].name.as_str(), rs.settings[0].value),
        ("one_pass", 0)
    );
    let ops: Vec<String> = rs.tables.iter().map(|t| t.to_string()).collect();
    assert_eq!(
        ops,
        [
            "table 13 add 10.0.0.0/8 5",
            "table 13 add 10.1.0.0/16 3221225985",
            "table 13 add 10.2.0.0/16 0",
            "table all flush",
        ]
    );
    // `set move` and `set swap` move rules between sets.
    let rs = parse("add 10 set 1 count ip from any to any\nadd 20 set 2 count ip from any to any\nipfw set swap 1 2\nipfw set move rule 10 to 5\n").unwrap();
    let sets: Vec<u8> = rs.rules.iter().map(|r| r.head.set).collect();
    assert_eq!(sets, [5, 1]);
    // A `// comment` line alone is ipfw's comment action: a count rule.
    let rs = parse("// a note\n").unwrap();
    assert_eq!(
        rs.rules[0].to_string(),
        "count ip from any to any // a note"
    );
}

#[test]
fn table_commands_read_keys_as_their_table_says() {
    let rs = parse(
        "table ports create type number\ntable ports add 22 1 80 2\ntable ifs create type iface\ntable ifs add em0\n\
         table f create type flow:src-ip,proto,dst-port\ntable f add 10.0.0.1,tcp,80 7\ntable f delete 10.0.0.1,6,80\n\
         table t add em1\ntable n add 443\ntable a add 2001:db8::/32\ntable a swap b\n",
    )
    .unwrap();
    let kinds: Vec<String> = rs.tables.iter().map(|t| t.to_string()).collect();
    assert_eq!(
        kinds,
        [
            "table ports create type number",
            "table ports add 22 1",
            "table ports add 80 2",
            "table ifs create type iface",
            "table ifs add em0 0",
            "table f create type flow:src-ip,proto,dst-port",
            "table f add 10.0.0.1,tcp,80 7",
            "table f delete 10.0.0.1,6,80",
            "table t add em1 0",
            "table n add 443 0",
            "table a add 2001:db8::/32 0",
            "table a swap b",
        ]
    );
    let bad = [
        (
            "table p create type number\ntable p add 10.0.0.1\n",
            "table p holds numbers",
        ),
        (
            "table f create type flow:src-ip,dst-port\ntable f add 10.0.0.1\n",
            "flow key misses its dst-port",
        ),
        ("table f create type flow\n", "needs its fields"),
        ("table x add foo.bar\n", "create the table first"),
        (
            "table x create type addr\ntable x create type addr\n",
            "already exists",
        ),
        ("table x create type bogus\n", "unknown table type"),
        ("table all add 10.0.0.1\n", "needs a table name"),
    ];
    for (src, want) in bad {
        let errs = parse(src).expect_err(src);
        assert!(errs[0].message.contains(want), "{src}: {}", errs[0].message);
    }
}

/// ipfw(8) LOOKUP TABLES: `valtype` names a value's fields, and an entry
/// gives them comma-separated in ipfw's field order.
#[test]
fn typed_table_values() {
    let rs = parse(
        "table IN create type iface valtype skipto,fib\ntable IN add vlan20 12000,12\n\
         table H create type addr valtype ipv4,ipv6\ntable H add 10.0.0.0/8 10.23.2.1,2001:db8::1\n\
         table D create valtype fib,dscp,tag\ntable D add 10.0.0.1 7,1,af11\n\
         table L create valtype legacy\ntable L add 10.0.0.1 10.0.0.2\ntable IN add vlan30\n",
    )
    .unwrap();
    let text: Vec<String> = rs.tables.iter().map(|t| t.to_string()).collect();
    assert_eq!(
        text,
        [
            "table IN create type iface valtype skipto,fib",
            "table IN add vlan20 12000,12",
            "table H create type addr valtype ipv4,ipv6",
            "table H add 10.0.0.0/8 10.23.2.1,2001:db8::1",
            "table D create type addr valtype tag,fib,dscp",
            "table D add 10.0.0.1/32 7,1,10",
            "table L create type addr",
            "table L add 10.0.0.1/32 167772162",
            "table IN add vlan30 0,0",
        ]
    );
    let TableOp::Add { value, .. } = &rs.tables[1].op else {
        panic!("an add")
    };
    assert_eq!(value.number(ValueField::Skipto), 12000);
    assert_eq!(value.number(ValueField::Fib), 12);
    assert_eq!(value.number(ValueField::Pipe), 0);
    let bad = [
        (
            "table T create valtype skipto,fib\ntable T add 10.0.0.1 300\n",
            "2 fields: skipto,fib",
        ),
        (
            "table T create valtype skipto\ntable T add 10.0.0.1 300,4\n",
            "1 fields: skipto",
        ),
        (
            "table T create valtype ipv4\ntable T add 10.0.0.1 300\n",
            "bad ipv4 value '300'",
        ),
        (
            "table T create valtype dscp\ntable T add 10.0.0.1 64\n",
            "bad dscp value",
        ),
        (
            "table T create valtype bogus\n",
            "unknown value type 'bogus'",
        ),
    ];
    for (src, want) in bad {
        let errs = parse(src).expect_err(src);
        assert!(errs[0].message.contains(want), "{src}: {}", errs[0].message);
    }
}

#[test]
fn settings_and_switches() {
    let rs = parse("net.inet.ip.fw.one_pass=0\nsysctl net.link.ether.ipfw=1\nnet.inet.ip.fw.verbose=1\nnet.inet.ip.fw.default_to_accept = 1\n").unwrap();
    let s: Vec<(&str, u32)> = rs
        .settings
        .iter()
        .map(|s| (s.name.as_str(), s.value))
        .collect();
    assert_eq!(
        s,
        [
            ("one_pass", 0),
            ("net.link.ether.ipfw", 1),
            ("default_to_accept", 1)
        ]
    );
    assert!(print_ruleset(&rs).contains("net.link.ether.ipfw=1\n"));
    for (src, want) in [
        ("net.inet.ip.fw.one_pass=2\n", "0 or 1"),
        ("net.inet.ip.forwarding=1\n", "unknown setting"),
        ("ipfw disable firewall\n", "turns ipfw off"),
        ("ipfw set disable 31\n", "set 31 cannot be disabled"),
    ] {
        let errs = parse(src).expect_err(src);
        assert!(errs[0].message.contains(want), "{src}: {}", errs[0].message);
    }
}

#[test]
fn probabilities_read_back_exactly() {
    for p in ["0.5", "0.25", "0.001", "0.999999", "0.1"] {
        let r = one(&format!("prob {p} count ip from any to any"));
        let back = one(&r.to_string());
        assert_eq!(r, back, "{p}");
        let got = r.head.prob.unwrap().as_f64();
        assert!(
            (got - p.parse::<f64>().unwrap()).abs() < 1e-9,
            "{p} -> {got}"
        );
    }
    assert_eq!(one("prob 1 count ip from any to any").head.prob, None);
    for bad in [
        "prob 0 count ip from any to any",
        "prob 1.5 count ip from any to any",
        "prob x count ip from any to any",
    ] {
        assert!(parse_rule(bad).is_err(), "{bad}");
    }
}

mod roundtrip {
    use super::*;
    use proptest::prelude::*;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    fn v4() -> impl Strategy<Value = IpAddr> {
        any::<u32>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a)))
    }

    fn v6() -> impl Strategy<Value = IpAddr> {
        any::<u128>().prop_map(|a| IpAddr::V6(Ipv6Addr::from(a)))
    }

    fn table_name() -> impl Strategy<Value = String> {
        "[a-z0-9][a-z0-9_]{0,8}".prop_filter("not all", |n| n != "all")
    }

    fn state_name() -> impl Strategy<Value = StateName> {
        prop::option::of(
            "[a-z][a-z0-9_]{0,6}".prop_filter("reserved", |n| n != "default" && n != "any"),
        )
    }

    fn addr() -> impl Strategy<Value = Addr> {
        prop_oneof![
            Just(Addr::Any),
            Just(Addr::Me),
            Just(Addr::Me6),
            (v4(), 0u8..=32).prop_map(|(a, l)| Addr::Prefix(a, l)),
            (v6(), 0u8..=128).prop_map(|(a, l)| Addr::Prefix(a, l)),
            (v4(), v4()).prop_map(|(a, m)| Addr::Masked(a, m)),
            (table_name(), prop::option::of(any::<u32>())).prop_map(|(n, v)| Addr::Table(
                n,
                v,
                Span::default()
            )),
        ]
    }

    /// An address set: a /24../31 base and some of its hosts.
    fn addr_set() -> impl Strategy<Value = Addr> {
        (any::<u32>(), 24u8..=31, prop::array::uniform4(any::<u64>())).prop_map(
            |(a, len, mut members)| {
                let size = 1u32 << (32 - u32::from(len));
                for (k, w) in members.iter_mut().enumerate() {
                    let lo = 64 * k as u32;
                    *w = if lo >= size {
                        0
                    } else if size - lo < 64 {
                        *w & ((1u64 << (size - lo)) - 1)
                    } else {
                        *w
                    };
                }
                members[0] |= 1;
                let base = Ipv4Addr::from(a & (u32::MAX << (32 - u32::from(len))));
                Addr::Set { base, len, members }
            },
        )
    }

    fn addr_spec() -> impl Strategy<Value = AddrSpec> {
        prop_oneof![
            4 => (
                any::<bool>(),
                prop::collection::vec(addr(), 1..4),
                any::<bool>(),
            )
                .prop_map(|(not, items, or_block)| AddrSpec {
                    not,
                    items,
                    or_block,
                }),
            1 => (any::<bool>(), addr_set()).prop_map(|(not, a)| AddrSpec {
                not,
                items: vec![a],
                or_block: false,
            }),
            // ipfw(8) RULE BODY: `{ x or not y or z }`.
            2 => (
                any::<bool>(),
                prop::collection::vec((any::<bool>(), addr()), 1..4),
            )
                .prop_map(|(not, members)| AddrSpec {
                    not,
                    items: members
                        .into_iter()
                        .map(|(neg, a)| if neg { Addr::Not(Box::new(a)) } else { a })
                        .collect(),
                    or_block: true,
                }),
        ]
    }

    fn port() -> impl Strategy<Value = Port> {
        prop_oneof![
            any::<u16>().prop_map(Port::Number),
            prop::sample::select(vec!["http", "ftp-data", "domain", "ssh"])
                .prop_map(|n| Port::Name(n.to_string(), Span::default())),
        ]
    }

    fn port_spec() -> impl Strategy<Value = PortSpec> {
        (
            any::<bool>(),
            prop::collection::vec((port(), prop::option::of(port())), 1..4),
        )
            .prop_map(|(not, items)| PortSpec {
                not,
                items: items
                    .into_iter()
                    .map(|(lo, hi)| match (&lo, &hi) {
                        (Port::Number(a), Some(Port::Number(b))) if a > b => PortRange {
                            lo: hi.unwrap(),
                            hi: Some(lo),
                        },
                        _ => PortRange { lo, hi },
                    })
                    .collect(),
            })
    }

    fn ports() -> impl Strategy<Value = Option<PortSpec>> {
        prop::option::of(port_spec())
    }

    fn flags() -> impl Strategy<Value = FlagSpec> {
        (1u8..=255, any::<u8>()).prop_map(|(set, clear)| FlagSpec { set, clear })
    }

    /// Flags made of whole names from `names` (so they print back).
    fn named_flags(names: &'static [(&'static str, u8)]) -> impl Strategy<Value = FlagSpec> {
        let n = names.len();
        (
            prop::collection::vec(0..n, 1..3),
            prop::collection::vec(0..n, 0..2),
        )
            .prop_map(move |(set, clear)| FlagSpec {
                set: set.iter().fold(0, |m, &k| m | names[k].1),
                clear: clear.iter().fold(0, |m, &k| m | names[k].1),
            })
    }

    fn ranges(max: u16) -> impl Strategy<Value = Ranges> {
        prop::collection::vec(
            (0..=max, 0..=max).prop_map(|(a, b)| (a.min(b), a.max(b))),
            1..3,
        )
    }

    fn mac() -> impl Strategy<Value = MacAddr> {
        (any::<[u8; 6]>(), 0u32..=49, any::<[u8; 6]>()).prop_map(|(addr, len, raw_mask)| {
            let mask = match len {
                49 => raw_mask,
                l => {
                    let bits = if l == 0 { 0 } else { u64::MAX << (64 - l) };
                    let b = (bits >> 16).to_be_bytes();
                    [b[2], b[3], b[4], b[5], b[6], b[7]]
                }
            };
            let mut a = addr;
            for (x, m) in a.iter_mut().zip(mask) {
                *x &= m;
            }
            MacAddr { addr: a, mask }
        })
    }

    /// An option that can stand in an or-block.
    fn plain_opt() -> impl Strategy<Value = Opt> {
        prop_oneof![
            Just(Opt::In),
            Just(Opt::Out),
            "[a-z]{1,4}[0-9]".prop_map(Opt::Via),
            "[a-z]{1,4}[0-9]".prop_map(Opt::Recv),
            "[a-z]{1,4}[0-9]".prop_map(Opt::Xmit),
            (
                prop::sample::select(vec![IfaceDir::Via, IfaceDir::Recv, IfaceDir::Xmit]),
                table_name()
            )
                .prop_map(|(d, t)| Opt::ViaTable(d, t)),
            Just(Opt::Established),
            Just(Opt::Setup),
            Just(Opt::Frag),
            named_flags(FRAG_NAMES)
                .prop_filter("bare frag", |s| *s != FlagSpec { set: 1, clear: 0 })
                .prop_map(Opt::FragFlags),
            prop::array::uniform4(any::<u64>())
                .prop_filter("some type", |b| b.iter().any(|w| *w != 0))
                .prop_map(Opt::Icmp6Types),
            (1u8..=255).prop_map(Opt::Ext6Hdr),
            prop::collection::vec(0u32..=0xfffff, 1..3).prop_map(Opt::FlowId),
            (
                prop::sample::select(vec![
                    LookupKey::SrcIp,
                    LookupKey::DstIp,
                    LookupKey::SrcPort,
                    LookupKey::DstPort,
                    LookupKey::Dscp
                ]),
                table_name()
            )
                .prop_map(|(k, t)| Opt::Lookup(k, t)),
            (table_name(), prop::option::of(any::<u32>())).prop_map(|(t, v)| Opt::FlowTable(t, v)),
            flags().prop_map(Opt::TcpFlags),
            named_flags(TCP_OPTION_NAMES).prop_map(Opt::TcpOptions),
            (1u8..16).prop_map(|s| Opt::IpOptions(FlagSpec { set: s, clear: 0 })),
            prop::sample::select(vec![
                FlagSpec {
                    set: 0x10,
                    clear: 0x03
                },
                FlagSpec {
                    set: 0x02,
                    clear: 0
                },
                FlagSpec {
                    set: 0x0c,
                    clear: 0x10
                },
                FlagSpec {
                    set: 0x03,
                    clear: 0x08
                },
            ])
            .prop_map(Opt::IpTos),
            (1u32..).prop_map(Opt::IcmpTypes),
            ranges(65535).prop_map(Opt::IpLen),
            ranges(255).prop_map(Opt::IpTtl),
            ranges(65535).prop_map(Opt::IpId),
            ranges(65535).prop_map(Opt::TcpDataLen),
            ranges(65535).prop_map(Opt::TcpWin),
            ranges(65535).prop_map(Opt::TcpMss),
            ranges(65534).prop_map(Opt::Tagged),
            ranges(65535).prop_map(Opt::MacType),
            (0u8..=7).prop_map(Opt::IpPrecedence),
            (1u64..).prop_map(Opt::Dscp),
            any::<u32>().prop_map(Opt::TcpSeq),
            any::<u32>().prop_map(Opt::TcpAck),
            prop::sample::select(vec![4u8, 6]).prop_map(Opt::IpVersion),
            (
                any::<bool>(),
                prop::collection::vec(addr(), 1..3),
                any::<bool>()
            )
                .prop_map(|(v6, items, or_block)| Opt::SrcIp {
                    v6,
                    spec: AddrSpec {
                        not: false,
                        items,
                        or_block
                    }
                }),
            (any::<bool>(), prop::collection::vec(addr(), 1..3)).prop_map(|(v6, items)| {
                Opt::DstIp {
                    v6,
                    spec: AddrSpec {
                        not: false,
                        items,
                        or_block: false,
                    },
                }
            }),
            port_spec().prop_map(Opt::SrcPort),
            port_spec().prop_map(Opt::DstPort),
            prop_oneof![
                Just(Proto::Any),
                Just(Proto::Ip6),
                Just(Proto::Name("tcp".into(), Span::default()))
            ]
            .prop_map(Opt::Proto),
            (0u16..=0x7fff).prop_map(Opt::Fib),
            (mac(), mac()).prop_map(|(dst, src)| Opt::Mac { dst, src }),
            Just(Opt::Layer2),
            prop::sample::select(vec![1u8, 2, 3]).prop_map(Opt::Diverted),
        ]
    }

    fn opt() -> impl Strategy<Value = OptionItem> {
        let item = |(not, opt)| OptionItem {
            not,
            opt,
            span: Span::default(),
        };
        let opt = prop_oneof![
            8 => plain_opt(),
            1 => state_name().prop_map(Opt::KeepState),
            1 => state_name().prop_map(Opt::RecordState),
            1 => (1u8..16, 1u32..=65534, state_name(), any::<bool>())
                .prop_map(|(mask, count, name, probe)| Opt::Limit { mask, count, name, probe }),
            1 => Just(Opt::DeferAction),
            1 => prop::collection::vec((any::<bool>(), plain_opt()).prop_map(item), 2..4)
                .prop_map(Opt::Or),
        ];
        (any::<bool>(), opt).prop_map(move |(not, opt)| {
            let state = matches!(
                opt,
                Opt::KeepState(_)
                    | Opt::RecordState(_)
                    | Opt::Limit { .. }
                    | Opt::DeferAction
                    | Opt::Or(_)
            );
            item((not && !state, opt))
        })
    }

    fn proto() -> impl Strategy<Value = Proto> {
        prop_oneof![
            Just(Proto::Any),
            Just(Proto::Ip4),
            Just(Proto::Ip6),
            any::<u8>().prop_map(Proto::Number),
            prop::sample::select(vec!["tcp", "udp", "icmp", "gre"])
                .prop_map(|n| Proto::Name(n.into(), Span::default())),
        ]
    }

    fn arg(max: u32) -> impl Strategy<Value = Arg> {
        prop_oneof![(1..=max).prop_map(Arg::Number), Just(Arg::Tablearg)]
    }

    fn action() -> impl Strategy<Value = Action> {
        let divert = prop_oneof![
            (1u16..).prop_map(|n| DivertPort::Port(Port::Number(n))),
            Just(DivertPort::Port(Port::Name("natd".into(), Span::default()))),
            Just(DivertPort::Tablearg),
        ];
        let fwd = prop_oneof![
            (prop_oneof![v4(), v6()], prop::option::of(any::<u16>())).prop_map(|(a, port)| {
                FwdTarget {
                    addr: Some(a),
                    port,
                }
            }),
            prop::option::of(any::<u16>()).prop_map(|port| FwdTarget { addr: None, port }),
        ];
        prop_oneof![
            Just(Action::Allow),
            Just(Action::Deny),
            Just(Action::Reject),
            Just(Action::Reset),
            Just(Action::Reset6),
            Just(Action::Abort),
            Just(Action::Abort6),
            Just(Action::Count),
            Just(Action::Return),
            Just(Action::Reass),
            state_name().prop_map(Action::CheckState),
            Just(Action::CheckState(Some("any".into()))),
            any::<u8>().prop_map(Action::Unreach),
            any::<u8>().prop_map(Action::Unreach6),
            (60000u16..=65535).prop_map(Action::Skipto),
            Just(Action::SkiptoTablearg),
            (60000u16..=65535).prop_map(Action::Call),
            arg(65534).prop_map(Action::Pipe),
            arg(65534).prop_map(Action::Queue),
            arg(65534).prop_map(Action::Netgraph),
            arg(65534).prop_map(Action::Ngtee),
            divert.clone().prop_map(Action::Divert),
            divert.prop_map(Action::Tee),
            prop_oneof![
                (1u32..=65534).prop_map(NatArg::Number),
                Just(NatArg::Global),
                Just(NatArg::Tablearg)
            ]
            .prop_map(Action::Nat),
            fwd.prop_map(Action::Fwd),
            prop_oneof![(0u32..=0x7fff).prop_map(Arg::Number), Just(Arg::Tablearg)]
                .prop_map(Action::SetFib),
            prop_oneof![(0u32..=63).prop_map(Arg::Number), Just(Arg::Tablearg)]
                .prop_map(Action::SetDscp),
            (1u16..).prop_map(Action::TcpSetMss),
        ]
    }

    fn head() -> impl Strategy<Value = RuleHead> {
        (
            0u8..=31,
            prop::option::of((1u32..).prop_map(Prob)),
            prop::option::of("[a-z][a-z0-9]{0,6}"),
            prop::option::of(prop_oneof![
                (1u16..=65534).prop_map(TagOp::Tag),
                (1u16..=65534).prop_map(TagOp::Untag)
            ]),
        )
            .prop_map(|(set, prob, altq, tag)| RuleHead {
                set,
                prob,
                altq,
                tag,
            })
    }

    fn rule() -> impl Strategy<Value = Rule> {
        (
            (1u16..60000, head(), action()),
            prop::option::of(prop::option::of(any::<u32>()).prop_map(|amount| Log { amount })),
            prop::collection::vec(proto(), 1..3),
            addr_spec(),
            ports(),
            addr_spec(),
            ports(),
            prop::collection::vec(opt(), 0..4),
            prop::option::of("[a-z][a-z ]{0,10}[a-z]"),
        )
            .prop_map(
                |(
                    (number, head, action),
                    log,
                    proto,
                    src,
                    src_ports,
                    dst,
                    dst_ports,
                    options,
                    comment,
                )| {
                    let body = if matches!(action, Action::CheckState(_)) {
                        Body::match_all()
                    } else {
                        Body {
                            proto,
                            src,
                            src_ports,
                            dst,
                            dst_ports,
                            options,
                        }
                    };
                    Rule {
                        number,
                        head,
                        action,
                        log,
                        body,
                        comment,
                        span: Span::default(),
                    }
                },
            )
    }

    /// A key of a table of `kind`.
    fn key(kind: TableKind) -> BoxedStrategy<TableKey> {
        match kind {
            TableKind::Addr => prop_oneof![
                (v4(), 0u8..=32).prop_map(|(a, l)| TableKey::Prefix(a, l)),
                (v6(), 0u8..=128).prop_map(|(a, l)| TableKey::Prefix(a, l)),
            ]
            .boxed(),
            TableKind::Number => any::<u32>().prop_map(TableKey::Number).boxed(),
            TableKind::Iface => "[a-z]{1,4}[0-9]".prop_map(TableKey::Iface).boxed(),
            TableKind::Flow(mask) => {
                let pick = move |bit: u8| mask & bit != 0;
                (
                    prop_oneof![v4(), v6()],
                    prop_oneof![v4(), v6()],
                    proto(),
                    port(),
                    port(),
                )
                    .prop_map(move |(src, dst, proto, sp, dp)| {
                        // One family for both ends.
                        let dst = if src.is_ipv4() == dst.is_ipv4() {
                            dst
                        } else {
                            src
                        };
                        let proto = match proto {
                            Proto::Any | Proto::Ip4 | Proto::Ip6 => Proto::Number(6),
                            p => p,
                        };
                        TableKey::Flow(FlowKey {
                            src: pick(1).then_some(src),
                            proto: pick(2).then_some(proto),
                            src_port: pick(4).then_some(sp),
                            dst: pick(8).then_some(dst),
                            dst_port: pick(16).then_some(dp),
                        })
                    })
                    .boxed()
            }
        }
    }

    /// A value of a table with these value types.
    fn table_value(types: ValueTypes) -> BoxedStrategy<TableValue> {
        if types.is_legacy() {
            return any::<u32>().prop_map(TableValue::Legacy).boxed();
        }
        (prop::array::uniform10(any::<u32>()), any::<u128>())
            .prop_map(move |(mut numbers, nh6)| {
                for f in ValueField::ALL {
                    let k = f as usize;
                    if k < numbers.len() && !types.has(f) {
                        numbers[k] = 0;
                    }
                }
                numbers[ValueField::Dscp as usize] %= 64;
                let nh6 = if types.has(ValueField::Nh6) { nh6 } else { 0 };
                TableValue::Typed(Box::new(TypedValue {
                    types,
                    numbers,
                    nh6,
                }))
            })
            .boxed()
    }

    /// One table's commands: maybe a create, adds, deletes, maybe a flush.
    fn table_cmds() -> impl Strategy<Value = Vec<TableCmd>> {
        let kind = prop_oneof![
            Just(TableKind::Addr),
            Just(TableKind::Number),
            Just(TableKind::Iface),
            (1u8..32).prop_map(TableKind::Flow),
        ];
        // Typed values (`valtype`) need the table's create line.
        let types = prop_oneof![Just(0u16), 1u16..(1 << 11)].prop_map(ValueTypes);
        (table_name(), kind, any::<bool>(), types).prop_flat_map(|(name, kind, create, types)| {
            let create = create || matches!(kind, TableKind::Flow(_)) || !types.is_legacy();
            (
                prop::collection::vec((key(kind), table_value(types), any::<bool>()), 1..4),
                prop::collection::vec(key(kind), 0..2),
                any::<bool>(),
            )
                .prop_map(move |(adds, deletes, flush)| {
                    let cmd = |op| TableCmd {
                        table: name.clone(),
                        op,
                        span: Span::default(),
                    };
                    let mut out = Vec::new();
                    if create {
                        out.push(cmd(TableOp::Create(kind, types)));
                    }
                    out.extend(
                        adds.into_iter()
                            .map(|(key, value, update)| cmd(TableOp::Add { key, value, update })),
                    );
                    out.extend(deletes.into_iter().map(|k| cmd(TableOp::Delete(k))));
                    if flush {
                        out.push(cmd(TableOp::Flush));
                    }
                    out
                })
        })
    }

    fn setting() -> impl Strategy<Value = Setting> {
        prop_oneof![
            // dyn_max is capped; the lifetimes take any number.
            (prop::sample::select(STATE_SETTINGS.to_vec()), 1u32..).prop_map(|(s, value)| {
                let value = if s.0 == "dyn_max" {
                    value % DYN_MAX_CAP + 1
                } else {
                    value
                };
                (s, value)
            }),
            (prop::sample::select(OTHER_SETTINGS.to_vec()), 0u32..=1),
        ]
        .prop_map(|((name, _), value)| Setting {
            name: name.to_owned(),
            value,
            span: Span::default(),
        })
    }

    proptest! {
        #[test]
        fn parse_of_print_is_identity(
            rules in prop::collection::vec(rule(), 1..6),
            tables in prop::collection::vec(table_cmds(), 0..3),
            settings in prop::collection::vec(setting(), 0..3),
            disabled_sets in 0u32..(1 << 31),
        ) {
            // Each table under its own name.
            let mut seen = std::collections::HashSet::new();
            let tables: Vec<TableCmd> = tables
                .into_iter()
                .filter(|t| seen.insert(t[0].table.clone()))
                .flatten()
                .collect();
            let rs = Ruleset { rules, tables, settings, disabled_sets };
            let text = print_ruleset(&rs);
            let back = parse(&text).map_err(|e| format!("{text}\n{e:?}")).unwrap();
            prop_assert_eq!(&back, &rs, "{}", text);
            prop_assert_eq!(print_ruleset(&back), text, "printing is a fixed point");
        }
    }
}

/// The housekeeping commands of a script (`delete`, `flush`, `set move`,
/// `set swap`) against the obvious model: a list of (number, set, id)
/// changed by a pass over every rule per command.
mod housekeeping {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Cmd {
        Add(Option<u16>, u8),
        Delete(u16, u16, Option<u8>),
        DeleteSet(u8),
        Flush(Option<u8>),
        Swap(u8, u8),
        MoveSet(u8, u8),
        MoveRule(u16, u8),
    }

    fn set() -> impl Strategy<Value = u8> {
        prop_oneof![0u8..4, Just(31)]
    }

    fn number() -> impl Strategy<Value = u16> {
        prop_oneof![(1u16..8).prop_map(|n| n * 100), Just(65500), Just(65534)]
    }

    fn cmd() -> impl Strategy<Value = Cmd> {
        prop_oneof![
            6 => (prop::option::of(number()), set()).prop_map(|(n, s)| Cmd::Add(n, s)),
            2 => (number(), number(), prop::option::of(set()))
                .prop_map(|(a, b, s)| Cmd::Delete(a.min(b), a.max(b), s)),
            1 => set().prop_map(Cmd::DeleteSet),
            1 => prop::option::of(set()).prop_map(Cmd::Flush),
            1 => (set(), set()).prop_map(|(a, b)| Cmd::Swap(a, b)),
            1 => (set(), set()).prop_map(|(a, b)| Cmd::MoveSet(a, b)),
            1 => (number(), set()).prop_map(|(n, s)| Cmd::MoveRule(n, s)),
        ]
    }

    /// The script's text and the rules the model expects: (number, set, id).
    fn model(cmds: &[Cmd]) -> (String, Vec<(u16, u8, usize)>) {
        let mut text = String::new();
        let mut rules: Vec<(u16, u8, usize)> = Vec::new();
        let mut last = 0u16;
        for (id, c) in cmds.iter().enumerate() {
            let line = match *c {
                Cmd::Add(n, s) => {
                    let n = n.filter(|&n| n != 0).unwrap_or_else(|| {
                        if u32::from(last) + 100 < 65535 {
                            last + 100
                        } else {
                            last.max(1)
                        }
                    });
                    rules.push((n, s, id));
                    last = last.max(n);
                    format!("add {n} set {s} count ip from any to any // r{id}")
                }
                Cmd::Delete(lo, hi, s) => {
                    rules.retain(|r| !(lo <= r.0 && r.0 <= hi && s.is_none_or(|s| r.1 == s)));
                    match s {
                        Some(s) => format!("set {s} delete {lo}-{hi}"),
                        None => format!("delete {lo}-{hi}"),
                    }
                }
                Cmd::DeleteSet(s) => {
                    rules.retain(|r| r.1 != s);
                    format!("delete set {s}")
                }
                Cmd::Flush(s) => {
                    rules.retain(|r| match s {
                        Some(s) => r.1 != s,
                        None => r.1 == 31,
                    });
                    match s {
                        Some(s) => format!("set {s} flush"),
                        None => "flush".to_owned(),
                    }
                }
                Cmd::Swap(a, b) => {
                    for r in &mut rules {
                        r.1 = if r.1 == a {
                            b
                        } else if r.1 == b {
                            a
                        } else {
                            r.1
                        };
                    }
                    format!("set swap {a} {b}")
                }
                Cmd::MoveSet(a, b) => {
                    for r in rules.iter_mut().filter(|r| r.1 == a) {
                        r.1 = b;
                    }
                    format!("set move {a} to {b}")
                }
                Cmd::MoveRule(n, s) => {
                    for r in rules.iter_mut().filter(|r| r.0 == n) {
                        r.1 = s;
                    }
                    format!("set move rule {n} to {s}")
                }
            };
            if matches!(c, Cmd::Delete(..) | Cmd::DeleteSet(_) | Cmd::Flush(_)) {
                last = rules.iter().map(|r| r.0).max().unwrap_or(0);
            }
            text.push_str(&line);
            text.push('\n');
        }
        (text, rules)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn commands_leave_the_rules_the_model_does(cmds in prop::collection::vec(cmd(), 0..40)) {
            let (text, want) = model(&cmds);
            let rs = parse(&text).map_err(|e| format!("{text}\n{e:?}")).unwrap();
            let got: Vec<(u16, u8, usize)> = rs
                .rules
                .iter()
                .map(|r| {
                    let id = r.comment.as_deref().and_then(|c| c.strip_prefix('r'));
                    (r.number, r.head.set, id.and_then(|i| i.parse().ok()).unwrap_or(usize::MAX))
                })
                .collect();
            prop_assert_eq!(got, want, "{}", text);
        }
    }
}
