//! Rule files as people save them (byte-order mark, CRLF, Latin-1
//! comments), and files with more errors than anyone reads.

use weir_rules::*;

/// One ruleset, clean, in UTF-8 with LF line ends.
const CLEAN: &str = "# office rules\n\
    100 allow tcp from 10.0.0.0/8 to any 22 // ssh\n\
    table bad add 192.0.2.0/24\n\
    200 deny ip from table(bad) to any\n";

/// The same ruleset as a Windows editor with a Latin-1 code page saves it:
/// a BOM, CRLF, and "é" as the single byte 0xE9 in both kinds of comment.
const SAVED: &[u8] = b"\xef\xbb\xbf# office r\xe8gles\r\n\
    100 allow tcp from 10.0.0.0/8 to any 22 // ssh caf\xe9\r\n\
    table bad add 192.0.2.0/24\r\n\
    200 deny ip from table(bad) to any\r\n";

#[test]
fn a_bom_crlf_and_latin1_comments_read_as_the_clean_file() {
    let clean = parse(CLEAN).unwrap();
    let mut saved = parse_source(&Source::new(SAVED), &Names::default()).unwrap();
    // The kept comment shows the byte it could not read.
    assert_eq!(saved.rules[0].comment.as_deref(), Some("ssh caf\u{fffd}"));
    saved.rules[0].comment = Some("ssh".into());
    assert_eq!(saved, clean);
    // A BOM alone is not part of the first word either.
    assert_eq!(parse(&format!("\u{feff}{CLEAN}")).unwrap(), clean);
}

#[test]
fn a_non_utf8_byte_in_a_rule_is_an_error_at_its_place() {
    let src = Source::new(
        b"allow ip from any to any\r\n200 deny tcp from any to any caf\xe9 # \xff ok\r\n",
    );
    let errs = parse_source(&src, &Names::default()).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(
        errs[0].to_string(),
        "2:33: byte 0xE9 is not UTF-8 (only comments may hold other text)"
    );
    assert_eq!(
        render_all("r.conf", src.text(), &errs),
        "r.conf:2:33: byte 0xE9 is not UTF-8 (only comments may hold other text)\n  \
         200 deny tcp from any to any caf\u{fffd} # \u{fffd} ok\n  \
         \x20                               ^"
    );
}

#[test]
fn ppp_files_too() {
    let names = Names::default();
    let clean = ppp::parse("set filter in 0 permit any any tcp dst eq 22\n", &names).unwrap();
    let saved = ppp::parse_source(
        &Source::new(
            b"\xef\xbb\xbf# d\xe9p\xf4t\r\nset filter in 0 permit any any tcp dst eq 22 # s\xe9\r\n",
        ),
        &names,
    )
    .unwrap();
    assert_eq!(ppp::print(&saved.filters), ppp::print(&clean.filters));
    let err = ppp::parse_source(
        &Source::new(b"set filter in 0 permit any any t\xe9p\n"),
        &names,
    )
    .unwrap_err();
    assert_eq!(err[0].span.line, 1);
    assert_eq!(err[0].span.col, 33);
    assert!(err[0].message.contains("0xE9"), "{}", err[0].message);
    // A ppp.conf too: the byte in the filter is placed, the one in a
    // comment of another section is not an error.
    let conf = b"isp:\n # r\xe9seau\n set filter in 0 permit any any t\xe9p\n";
    let err = ppp::parse_conf_source(&Source::new(conf), "isp", &names).unwrap_err();
    assert_eq!((err[0].span.line, err[0].span.col), (3, 34));
}

#[test]
fn errors_stop_at_a_hundred_and_the_rest_are_counted() {
    let text = "allow tcp from any to any 99999\n".repeat(250);
    let errs = parse(&text).unwrap_err();
    assert_eq!(errs.len(), MAX_ERRORS + 1);
    assert_eq!(errs[MAX_ERRORS - 1].span.line, 100);
    let last = &errs[MAX_ERRORS];
    assert_eq!(last.span.line, 0, "the count is about the whole file");
    assert_eq!(
        last.message,
        "150 more errors not shown (the first 100 are above)"
    );
    let out = render_all("r.conf", &text, &errs);
    assert_eq!(out.matches("r.conf:").count(), MAX_ERRORS + 1);
    assert!(out.ends_with("\nr.conf: 150 more errors not shown (the first 100 are above)"));
    // ppp files count the same way.
    let ppp_errs =
        ppp::parse(&"set filter in 99 permit\n".repeat(150), &Names::default()).unwrap_err();
    assert_eq!(ppp_errs.len(), MAX_ERRORS + 1);
    assert!(ppp_errs[MAX_ERRORS].message.starts_with("50 more errors"));
}

#[test]
fn rule_numbers_have_one_range() {
    for (text, want) in [
        (
            "0 allow ip from any to any",
            "rule number must be 1..65534, found '0'",
        ),
        (
            "65535 allow ip from any to any",
            "rule number must be 1..65534, found '65535'",
        ),
        (
            "99999999999999999999 allow ip from any to any",
            "rule number must be 1..65534, found '99999999999999999999'",
        ),
    ] {
        assert_eq!(parse_rule(text).unwrap_err().message, want);
    }
}
