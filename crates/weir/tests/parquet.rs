//! `--verdicts NAME.parquet`: the verdict table read back with the parquet
//! crate is the CSV row for row, and its packet columns are what Wireshark
//! reads in the same capture; a failed run leaves no Parquet file.

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt16Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{Array, RecordBatch};
use common::*;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::path::Path;
use std::process::{Command, Stdio};

/// One row of the verdict table, every column.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    index: u64,
    ts_ns: u64,
    iface: Option<String>,
    dir: String,
    ip_version: Option<u8>,
    src: Option<String>,
    dst: Option<String>,
    proto: Option<u8>,
    sport: Option<u16>,
    dport: Option<u16>,
    length: u32,
    rule: Option<u16>,
    action: String,
    note: String,
}

fn read_rows(path: &Path) -> Vec<Row> {
    let file = File::open(path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for batch in reader {
        rows.extend(batch_rows(&batch.unwrap()));
    }
    rows
}

fn batch_rows(b: &RecordBatch) -> Vec<Row> {
    let col = |name: &str| b.column_by_name(name).unwrap().clone();
    let (index, ts_ns, length) = (col("index"), col("ts_ns"), col("length"));
    let (index, ts_ns) = (
        index.as_primitive::<UInt64Type>(),
        ts_ns.as_primitive::<UInt64Type>(),
    );
    let length = length.as_primitive::<UInt32Type>();
    let text = |name: &str, i: usize| {
        let c = col(name);
        let s = c.as_string::<i32>();
        (!s.is_null(i)).then(|| s.value(i).to_owned())
    };
    let u8s = |name: &str, i: usize| {
        let c = col(name);
        let a = c.as_primitive::<UInt8Type>();
        (!a.is_null(i)).then(|| a.value(i))
    };
    let u16s = |name: &str, i: usize| {
        let c = col(name);
        let a = c.as_primitive::<UInt16Type>();
        (!a.is_null(i)).then(|| a.value(i))
    };
    (0..b.num_rows())
        .map(|i| Row {
            index: index.value(i),
            ts_ns: ts_ns.value(i),
            iface: text("iface", i),
            dir: text("dir", i).unwrap(),
            ip_version: u8s("ip_version", i),
            src: text("src", i),
            dst: text("dst", i),
            proto: u8s("proto", i),
            sport: u16s("sport", i),
            dport: u16s("dport", i),
            length: length.value(i),
            rule: u16s("rule", i),
            action: text("action", i).unwrap(),
            note: text("note", i).unwrap(),
        })
        .collect()
}

/// `weir run demo.rules -r TRACE --verdicts VERDICTS EXTRA…`.
fn run_demo(trace: &Path, verdicts: &Path, extra: &[&str]) -> std::process::Output {
    let mut args: Vec<&OsStr> = vec![
        "run".as_ref(),
        "-r".as_ref(),
        trace.as_os_str(),
        "--verdicts".as_ref(),
        verdicts.as_os_str(),
    ];
    let rules = demo_rules();
    args.insert(1, rules.as_os_str());
    args.extend(extra.iter().map(OsStr::new));
    weir(&args)
}

fn run_with_verdicts(trace: &Path, verdicts: &Path) {
    let out = run_demo(trace, verdicts, &["-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn parquet_verdicts_are_the_csv_row_for_row() {
    let dir = tempfile::tempdir().unwrap();
    // More than one record batch (65,536 rows) and a short last one.
    let trace = gen_trace(dir.path(), "t.pcap", 70_000, 11);
    let (csv, pq) = (dir.path().join("v.csv"), dir.path().join("v.parquet"));
    run_with_verdicts(&trace, &csv);
    run_with_verdicts(&trace, &pq);
    let lines = parse_verdicts(&fs::read_to_string(&csv).unwrap());
    let rows = read_rows(&pq);
    assert_eq!(rows.len(), lines.len());
    for (r, l) in rows.iter().zip(&lines) {
        let csv_row = (l.index, l.rule, l.action.as_str(), l.note.as_str());
        let rule = r.rule.map(u32::from);
        assert_eq!((r.index, rule, r.action.as_str(), r.note.as_str()), csv_row);
    }
    // The trace has all kinds: non-IP and malformed rows have no rule.
    assert!(rows.iter().any(|r| r.note == "non-ip" && r.rule.is_none()));
    assert!(rows.iter().any(|r| r.note.starts_with("malformed:")));
    assert!(rows.iter().any(|r| r.ip_version == Some(6)));
    // A pcap names no interface; nothing says a direction: in.
    assert!(rows.iter().all(|r| r.iface.is_none() && r.dir == "in"));
}

/// `tshark -T fields` over `file`, one vector of fields per packet.
fn tshark(file: &Path, fields: &[&str]) -> Option<Vec<Vec<String>>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-n").arg("-r").arg(file).args(["-T", "fields"]);
    // A first fragment's ports are read from it, as weir reads them.
    cmd.args(["-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let Ok(out) = cmd.stdin(Stdio::null()).stderr(Stdio::null()).output() else {
        eprintln!("\n!!!!!!!! SKIPPED: tshark is missing; the Wireshark comparison did NOT run. !!!!!!!!\n");
        return None;
    };
    assert!(out.status.success(), "tshark on {}", file.display());
    let text = String::from_utf8(out.stdout).unwrap();
    Some(
        text.lines()
            .map(|l| l.split('\t').map(str::to_owned).collect())
            .collect(),
    )
}

/// The outer header's value of a field tshark may repeat (ICMP errors).
fn outer(field: &str) -> Option<String> {
    field
        .split(',')
        .next()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

#[test]
fn parquet_packet_columns_are_what_wireshark_reads() {
    let dir = tempfile::tempdir().unwrap();
    let trace = gen_trace(dir.path(), "t.pcap", 3000, 12);
    let pq = dir.path().join("v.parquet");
    run_with_verdicts(&trace, &pq);
    let rows = read_rows(&pq);
    let fields = [
        "frame.time_epoch",
        "ip.src",
        "ip.dst",
        "ipv6.src",
        "ipv6.dst",
        "tcp.srcport",
        "tcp.dstport",
        "udp.srcport",
        "udp.dstport",
        "sctp.srcport",
        "sctp.dstport",
        "ip.cur_rt",
    ];
    let Some(ws) = tshark(&trace, &fields) else {
        return;
    };
    assert_eq!(ws.len(), rows.len());
    let mut compared = 0;
    for (r, w) in rows.iter().zip(&ws) {
        // "1767225600.000123000": seconds and nanoseconds.
        let (s, ns) = w[0].split_once('.').unwrap();
        let ts = s.parse::<u64>().unwrap() * 1_000_000_000 + ns.parse::<u64>().unwrap();
        assert_eq!(r.ts_ns, ts, "row {}", r.index);
        if r.src.is_none() {
            continue;
        }
        let (src, dst) = match r.ip_version {
            // With a source route, Wireshark's ip.dst is the route's end;
            // the header's own (what rules match) is the current hop.
            Some(4) => (outer(&w[1]), outer(&w[11]).or(outer(&w[2]))),
            _ => (outer(&w[3]), outer(&w[4])),
        };
        assert_eq!((&r.src, &r.dst), (&src, &dst), "row {}", r.index);
        let ports = |s: &str, d: &str| {
            let p = |v: &str| outer(v).map(|v| v.parse::<u16>().unwrap());
            (p(s), p(d))
        };
        let want = match r.proto {
            Some(6) => ports(&w[5], &w[6]),
            Some(17) => ports(&w[7], &w[8]),
            Some(132) => ports(&w[9], &w[10]),
            _ => (None, None),
        };
        if r.sport.is_some() || want.0.is_some() {
            assert_eq!((r.sport, r.dport), want, "row {}: {r:?}", r.index);
        }
        compared += 1;
    }
    assert!(compared > 2500, "{compared} IP rows compared");
}

#[test]
fn a_failed_run_leaves_no_parquet_file() {
    let dir = tempfile::tempdir().unwrap();
    let trace = gen_trace(dir.path(), "t.pcap", 500, 13);
    let pq = dir.path().join("v.parquet");
    // The output is refused as the input under another name: nothing made.
    let before = fs::read(&trace).unwrap();
    let alias = dir.path().join("alias.parquet");
    std::os::unix::fs::symlink(&trace, &alias).unwrap();
    let out = run_demo(&trace, &alias, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        fs::read(&trace).unwrap() == before,
        "the input is untouched"
    );
    // A packet write fails (-w to /dev/full): the Parquet file never appears.
    let out = run_demo(&trace, &pq, &["-w", "/dev/full"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!pq.exists());
    let left: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "only the trace and the link: {left:?}");
}
