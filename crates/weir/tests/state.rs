//! Dynamic states end to end: traces written here with chosen timestamps,
//! so the packets' times decide when states expire.

mod common;

use common::*;
use std::path::Path;

const CLIENT: [u8; 4] = [10, 0, 0, 1];
const SERVER: [u8; 4] = [192, 0, 2, 80];
const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const FIN: u8 = 0x01;
const SEC: u64 = 1_000_000_000;

/// `rule,action` per packet; the run must succeed.
fn verdicts(rules: &Path, trace: &Path, extra: &[&str]) -> Vec<String> {
    let out = run_verdicts(rules, trace, extra);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    rule_actions(&out)
}

const STATEFUL: &str = "\
check-state
allow tcp from 10.0.0.0/8 to any setup keep-state
allow udp from 10.0.0.0/8 to any keep-state
deny ip from any to any
";

#[test]
fn return_traffic_passes_only_through_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), STATEFUL);
    let c2s = |f| ipv4(CLIENT, SERVER, 6, 40000, 80, f);
    let s2c = |f| ipv4(SERVER, CLIENT, 6, 80, 40000, f);
    let trace = write_trace(
        dir.path(),
        "tcp.pcap",
        &[
            // A reply before any state: denied.
            (0, s2c(SYN | ACK)),
            (SEC, c2s(SYN)),
            (SEC + 1000, s2c(SYN | ACK)),
            (SEC + 2000, c2s(ACK)),
            // Established: the ack lifetime (300 s) keeps it.
            (250 * SEC, s2c(ACK)),
            (251 * SEC, c2s(FIN | ACK)),
            (251 * SEC + 1, s2c(FIN | ACK)),
            // Both FINs: gone after dyn_fin_lifetime (1 s).
            (253 * SEC, s2c(ACK)),
        ],
    );
    assert_eq!(
        verdicts(&rules, &trace, &[]),
        [
            "400,deny",
            "200,allow",
            "200,allow",
            "200,allow",
            "200,allow",
            "200,allow",
            "200,allow",
            "400,deny"
        ],
        "the first reply, before the SYN, and the last, after the close, have no state"
    );
    // The classifier agrees with the linear walk.
    assert_eq!(
        verdicts(&rules, &trace, &[]),
        verdicts(&rules, &trace, &["--linear"])
    );
}

#[test]
fn udp_states_expire_after_their_lifetime_and_flags_override_it() {
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), STATEFUL);
    let out = ipv4(CLIENT, SERVER, 17, 5353, 53, 0);
    let back = ipv4(SERVER, CLIENT, 17, 53, 5353, 0);
    let trace = write_trace(
        dir.path(),
        "udp.pcap",
        &[
            (0, out.clone()),
            (9 * SEC, back.clone()),  // 9 s after the last packet: alive
            (18 * SEC, back.clone()), // refreshed at 9 s, so alive at 18 s
            (29 * SEC, back.clone()), // 11 s of silence: expired (10 s)
        ],
    );
    assert_eq!(
        verdicts(&rules, &trace, &[]),
        ["300,allow", "300,allow", "300,allow", "400,deny"]
    );
    // The same trace with a 30 s UDP lifetime from the flags.
    assert_eq!(
        verdicts(&rules, &trace, &["--sysctl", "dyn_udp_lifetime=30"]),
        ["300,allow", "300,allow", "300,allow", "300,allow"]
    );
    // And from the ruleset file.
    let rules = write_rules(
        dir.path(),
        &format!("net.inet.ip.fw.dyn_udp_lifetime=5\n{STATEFUL}"),
    );
    assert_eq!(
        verdicts(&rules, &trace, &[]),
        ["300,allow", "400,deny", "400,deny", "400,deny"]
    );
}

#[test]
fn states_are_listed_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), STATEFUL);
    let trace = write_trace(
        dir.path(),
        "two.pcap",
        &[
            (0, ipv4(CLIENT, SERVER, 17, 5353, 53, 0)),
            (SEC, ipv4(SERVER, CLIENT, 17, 53, 5353, 0)),
            (2 * SEC, ipv4(CLIENT, SERVER, 6, 40000, 22, SYN)),
        ],
    );
    let out = weir_ok([
        "run",
        &rules.display().to_string(),
        "-r",
        &trace.display().to_string(),
        "-q",
        "--states",
    ]);
    assert_eq!(
        stdout(&out),
        "00200 1 40 (20s) STATE tcp 10.0.0.1 40000 <-> 192.0.2.80 22\n\
         00300 2 56 (9s) STATE udp 10.0.0.1 5353 <-> 192.0.2.80 53\n"
    );
    let out = weir_ok([
        "run",
        &rules.display().to_string(),
        "-r",
        &trace.display().to_string(),
        "-q",
        "--json",
    ]);
    let summary = json_summary(&out);
    let stats = &summary["states"]["stats"];
    assert_eq!(stats["created"], 2);
    assert_eq!(stats["matched"], 1);
    assert_eq!(stats["live"], 2);
    assert_eq!(summary["states"]["config"]["dyn_max"], 65536);
}

#[test]
fn a_full_table_refuses_new_flows_and_denies_them() {
    let dir = tempfile::tempdir().unwrap();
    let rules = write_rules(dir.path(), "allow udp from any to any keep-state\n");
    // 5000 distinct flows within one second, dyn_max 1000.
    let packets: Vec<(u64, Vec<u8>)> = (0..5000u32)
        .map(|k| {
            let src = [10, 1, (k >> 8) as u8, k as u8];
            (u64::from(k) * 1000, ipv4(src, SERVER, 17, 1024, 53, 0))
        })
        .collect();
    let trace = write_trace(dir.path(), "flood.pcap", &packets);
    let out = weir_ok([
        "run",
        &rules.display().to_string(),
        "-r",
        &trace.display().to_string(),
        "-q",
        "--json",
        "--sysctl",
        "dyn_max=1000",
    ]);
    let summary = json_summary(&out);
    assert_eq!(summary["states"]["stats"]["created"], 1000);
    assert_eq!(summary["states"]["stats"]["refused_full"], 4000);
    assert_eq!(
        summary["dropped"], 4000,
        "refused flows are denied, as ipfw does"
    );
    assert_eq!(summary["passed"], 1000);
}

#[test]
fn state_rules_with_errors_point_at_the_option() {
    let dir = tempfile::tempdir().unwrap();
    for (text, want) in [
        (
            "allow udp from any to any keep-state limit src-addr 2\n",
            "rules.conf:1:38: one rule may have only one of keep-state",
        ),
        (
            "count ip from any to any\nnet.inet.ip.fw.dyn_nope=3\n",
            "rules.conf:2:1: unknown setting 'net.inet.ip.fw.dyn_nope'",
        ),
    ] {
        let rules = write_rules(dir.path(), text);
        let out = weir(["check", &rules.display().to_string()]);
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = stderr(&out);
        assert!(err.contains(want), "{err}");
    }
}
