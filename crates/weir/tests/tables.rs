//! Lookup tables end to end: `table(NAME)`, `table(NAME,VALUE)`, `lookup`,
//! `skipto tablearg`, tables from `--table NAME=FILE` and from `table NAME
//! add` lines, and their errors.

mod common;

use common::*;

fn udp_from(src: [u8; 4]) -> Vec<u8> {
    ipv4(src, [192, 0, 2, 1], 17, 1000, 53, 0)
}

#[test]
fn tables_from_files_and_lines_decide_by_longest_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let blocklist = dir.path().join("blocklist.txt");
    std::fs::write(
        &blocklist,
        "# longest prefix wins\n10.0.0.0/8 500\n10.1.0.0/16 600\n10.1.2.3 0\n",
    )
    .unwrap();
    let rules = write_rules(
        dir.path(),
        "table friends add 172.16.0.0/12\n\
         100 allow ip from table(friends) to any\n\
         200 deny ip from table(blocklist,0) to any\n\
         300 skipto tablearg ip from table(blocklist) to any\n\
         400 deny ip from any to any\n\
         500 allow ip from any to any\n\
         600 count ip from any to any\n\
         650 deny ip from any to any\n",
    );
    let trace = write_trace(
        dir.path(),
        "t.pcap",
        &[
            (0, udp_from([172, 17, 0, 1])), // friends
            (1, udp_from([10, 1, 2, 3])),   // value 0: denied by 200
            (2, udp_from([10, 9, 9, 9])),   // /8, value 500: skipto 500
            (3, udp_from([10, 1, 7, 7])),   // /16, value 600: skipto 600, count, 650
            (4, udp_from([11, 0, 0, 1])),   // in no table
        ],
    );
    let out = run_verdicts(
        &rules,
        &trace,
        &["--table", &format!("blocklist={}", blocklist.display())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        rule_actions(&out),
        ["100,allow", "200,deny", "500,allow", "650,deny", "400,deny"]
    );
    // The classifier and the linear walk agree.
    let linear = run_verdicts(
        &rules,
        &trace,
        &[
            "--linear",
            "--table",
            &format!("blocklist={}", blocklist.display()),
        ],
    );
    assert_eq!(rule_actions(&out), rule_actions(&linear));
}

#[test]
fn lookup_and_ipv6_tables() {
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(
        dir.path(),
        "table nets add 192.0.2.0/24\n\
         table nets add 2001:db8::/32 7\n\
         100 deny ip from any to any lookup dst-ip nets\n\
         200 allow ip from any to any\n",
    );
    let trace = write_trace(
        dir.path(),
        "t.pcap",
        &[
            (0, udp_from([10, 0, 0, 1])), // dst 192.0.2.1
            (1, ipv4([10, 0, 0, 1], [198, 51, 100, 1], 17, 1, 2, 0)),
        ],
    );
    let out = run_verdicts(&rules, &trace, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(rule_actions(&out), ["100,deny", "200,allow"]);
    let check = weir(["check", "--print", &rules.display().to_string()]);
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    let printed = stdout(&check);
    assert!(
        printed.starts_with("table nets add 192.0.2.0/24 0\n"),
        "{printed}"
    );
    assert!(printed.contains("lookup dst-ip nets"), "{printed}");
}

#[test]
fn table_errors_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "10.0.0.0/8\n10.0.0.0/33\n").unwrap();
    let rules = write_rules(dir.path(), "deny ip from table(bad) to any\n");
    let out = weir([
        "check",
        &rules.display().to_string(),
        "--table",
        &format!("bad={}", bad.display()),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!("{}:2:", bad.display())),
        "{}",
        stderr(&out)
    );

    let out = weir(["check", &rules.display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("rules.conf:1:14: no such table 'bad'"),
        "{}",
        stderr(&out)
    );

    let rules = write_rules(
        dir.path(),
        "table t add 10.0.0.0/8 1\ntable t add 10.0.0.0/8 2\n100 skipto tablearg ip from any to any\n",
    );
    let out = weir(["check", &rules.display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("rules.conf:2:13: table t: duplicate entry"),
        "{err}"
    );
    assert!(
        err.contains("rules.conf:3:1: skipto tablearg needs a table"),
        "{err}"
    );
}
