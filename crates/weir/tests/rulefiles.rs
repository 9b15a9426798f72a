//! Rule, ppp and table files through the command line: files as people
//! save them, errors capped with a count, and messages that name the
//! problem.

mod common;

use common::*;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

fn write_bytes(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).expect("write file");
    p
}

#[test]
fn check_shows_a_hundred_errors_then_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = "allow ip from any to any\n".to_owned();
    text.push_str(&"deny tcp from any to any 99999\n".repeat(1000));
    let rules = write_bytes(dir.path(), "many.rules", text.as_bytes());
    let out = weir(["check".as_ref(), rules.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let file = rules.display().to_string();
    let located: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with(&format!("{file}:")) && l.ends_with("port 99999 is out of range"))
        .collect();
    assert_eq!(located.len(), 100, "{err}");
    assert_eq!(
        located[0],
        format!("{file}:2:26: port 99999 is out of range")
    );
    assert_eq!(
        located[99],
        format!("{file}:101:26: port 99999 is out of range")
    );
    assert_eq!(
        err.lines().last(),
        Some(format!("{file}: 900 more errors not shown (the first 100 are above)").as_str())
    );
    // Each shown error has its line and caret: three lines apiece.
    assert_eq!(err.lines().count(), 3 * 100 + 1);
}

#[test]
fn compile_errors_are_capped_too() {
    let dir = tempfile::tempdir().unwrap();
    let text = "allow nosuchproto from any to any\n".repeat(300);
    let rules = write_bytes(dir.path(), "c.rules", text.as_bytes());
    let out = weir(["check".as_ref(), rules.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.matches("unknown protocol 'nosuchproto'").count(), 100);
    assert!(
        err.ends_with("200 more errors not shown (the first 100 are above)\n"),
        "{err}"
    );
}

#[test]
fn files_saved_with_a_bom_crlf_and_latin1_comments_load() {
    let dir = tempfile::tempdir().unwrap();
    let rules = write_bytes(
        dir.path(),
        "saved.rules",
        b"\xef\xbb\xbf# r\xe8gles du bureau\r\n100 allow ip from table(t) to any // caf\xe9\r\n200 deny ip from any to any\r\n",
    );
    let table = write_bytes(
        dir.path(),
        "t.txt",
        b"\xef\xbb\xbf# r\xe9seaux\r\n10.0.0.0/8 7\r\n",
    );
    let table_arg = format!("t={}", table.display());
    let out = weir_ok([
        "check".as_ref(),
        "--print".as_ref(),
        "--table".as_ref(),
        table_arg.as_ref(),
        rules.as_os_str(),
    ]);
    assert_eq!(
        stdout(&out),
        "00100 allow ip from table(t) to any // caf\u{fffd}\n\
         00200 deny ip from any to any\n\
         # 65535 deny ip from any to any (implicit)\n"
    );
    let ppp = write_bytes(
        dir.path(),
        "saved.filter",
        b"\xef\xbb\xbf# filtre d'entr\xe9e\r\nset filter in 0 permit any any\r\n",
    );
    weir_ok(["check".as_ref(), ppp.as_os_str()]);
}

#[test]
fn a_non_utf8_byte_outside_a_comment_is_placed() {
    let dir = tempfile::tempdir().unwrap();
    let table = write_bytes(dir.path(), "t.txt", b"10.0.0.0/8\n1.2.3.4 \xff\n");
    let bad_rules = write_bytes(
        dir.path(),
        "bad.rules",
        b"allow ip from any to any\r\ndeny ip from any to caf\xe9\r\n",
    );
    let bad_ppp = write_bytes(
        dir.path(),
        "bad.filter",
        b"set filter in 0 permit any any\nset filter in 1 deny any any t\xe7p\n",
    );
    let good_rules = write_bytes(dir.path(), "ok.rules", b"allow ip from table(t) to any\n");
    let cases = [
        (&bad_rules, &bad_rules, "2:24: byte 0xE9"),
        (&bad_ppp, &bad_ppp, "2:31: byte 0xE7"),
        (&good_rules, &table, "2:9: byte 0xFF"),
    ];
    let table_arg = format!("t={}", table.display());
    for (rules, blamed, place) in cases {
        let mut args: Vec<&OsStr> = vec!["check".as_ref(), rules.as_os_str()];
        if blamed == &table {
            args.extend([OsStr::new("--table"), OsStr::new(&table_arg)]);
        }
        let out = weir(args);
        assert_eq!(out.status.code(), Some(2), "{}", rules.display());
        let want = format!(
            "{}:{place} is not UTF-8 (only comments may hold other text)",
            blamed.display()
        );
        assert!(stderr(&out).starts_with(&want), "{}", stderr(&out));
    }
}

#[test]
fn table_flag_without_a_file_names_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let rules = write_bytes(dir.path(), "r.rules", b"allow ip from table(t) to any\n");
    let out = weir([
        "check".as_ref(),
        "--table".as_ref(),
        "t=".as_ref(),
        rules.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("'t=' for '--table <NAME=FILE>'"), "{err}");
    assert!(
        err.contains("no file after '=' (expected NAME=FILE)"),
        "{err}"
    );
    let missing = dir.path().join("missing.txt");
    let arg = format!("t={}", missing.display());
    let out = weir([
        "check".as_ref(),
        "--table".as_ref(),
        arg.as_ref(),
        rules.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "weir: --table t: {}: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
}
