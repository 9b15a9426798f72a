//! Reports: the table by probe size and train position, JSON, and a CSV of
//! every probe; the server's closing summary.

use crate::client::{ClientConfig, ClientRun, Sample};
use crate::server::ServerStats;
use crate::stats::{summarize, Summary};
use crate::wire::Bad;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

/// One row of the client's table: one probe size, one train position
/// ("first", "later" or "all"). Times are µs; a metric nobody measured
/// (no filter, no transmit stamps) is null.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub size: u32,
    pub position: &'static str,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub rtt_us: Option<Summary>,
    pub server_stack_us: Option<Summary>,
    pub engine_us: Option<Summary>,
    pub client_rx_stack_us: Option<Summary>,
    pub client_tx_stack_us: Option<Summary>,
}

/// The client's whole report (`weir probe client --json`).
#[derive(Clone, Debug, Serialize)]
pub struct ClientReport {
    pub server: String,
    pub sizes: Vec<usize>,
    pub train: u16,
    pub gap_us: u64,
    pub count: u32,
    pub tx_stamps: bool,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub send_errors: u64,
    pub duplicates: u64,
    pub mismatched: u64,
    /// Echoes that were not valid probes, by reason.
    pub bad: BTreeMap<&'static str, u64>,
    pub stopped_by: &'static str,
    pub elapsed_s: f64,
    /// How the percentiles are taken: `weir_stats::METHOD`.
    pub quantiles: &'static str,
    pub rows: Vec<Row>,
}

fn metric(samples: &[&Sample], f: impl Fn(&Sample) -> Option<u64>) -> Option<Summary> {
    let mut v: Vec<u64> = samples.iter().filter_map(|s| f(s)).collect();
    summarize(&mut v)
}

fn row(size: u32, position: &'static str, samples: &[&Sample]) -> Row {
    let sent = samples.len() as u64;
    let received = samples.iter().filter(|s| s.echoed).count() as u64;
    Row {
        size,
        position,
        sent,
        received,
        lost: sent - received,
        rtt_us: metric(samples, |s| s.rtt_ns),
        server_stack_us: metric(samples, |s| s.server_stack_ns),
        engine_us: metric(samples, |s| s.engine_ns),
        client_rx_stack_us: metric(samples, |s| s.client_rx_stack_ns),
        client_tx_stack_us: metric(samples, |s| s.client_tx_stack_ns),
    }
}

fn bad_map(bad: &[u64; Bad::COUNT]) -> BTreeMap<&'static str, u64> {
    Bad::ALL
        .iter()
        .map(|&b| (b.name(), bad[b as usize]))
        .collect()
}

impl ClientReport {
    pub fn new(cfg: &ClientConfig, run: &ClientRun) -> ClientReport {
        let mut rows = Vec::new();
        for &size in &cfg.sizes {
            let of_size: Vec<&Sample> = run
                .samples
                .iter()
                .filter(|s| s.size as usize == size)
                .collect();
            let first: Vec<&Sample> = of_size.iter().copied().filter(|s| s.pos == 0).collect();
            let later: Vec<&Sample> = of_size.iter().copied().filter(|s| s.pos > 0).collect();
            rows.push(row(size as u32, "first", &first));
            if !later.is_empty() {
                rows.push(row(size as u32, "later", &later));
            }
            rows.push(row(size as u32, "all", &of_size));
        }
        ClientReport {
            server: cfg.server.to_string(),
            sizes: cfg.sizes.clone(),
            train: cfg.train,
            gap_us: cfg.gap.as_micros() as u64,
            count: cfg.count,
            tx_stamps: cfg.tx_stamps,
            sent: run.sent(),
            received: run.received(),
            lost: run.lost(),
            send_errors: run.send_errors(),
            duplicates: run.duplicates,
            mismatched: run.mismatched,
            bad: bad_map(&run.bad),
            stopped_by: run.stopped_by,
            elapsed_s: run.elapsed.as_secs_f64(),
            quantiles: weir_stats::METHOD,
            rows,
        }
    }

    /// The table, as text. Metric groups nobody measured are left out.
    /// The report as printed: pretty JSON, or the table.
    pub fn render(&self, json: bool) -> serde_json::Result<String> {
        match json {
            true => Ok(serde_json::to_string_pretty(self)? + "\n"),
            false => Ok(self.table()),
        }
    }

    pub fn table(&self) -> String {
        type Pick = fn(&Row) -> Option<Summary>;
        let groups: [(&str, Pick); 5] = [
            ("round trip", |r| r.rtt_us),
            ("server stack", |r| r.server_stack_us),
            ("engine", |r| r.engine_us),
            ("client rx stack", |r| r.client_rx_stack_us),
            ("client tx stack", |r| r.client_tx_stack_us),
        ];
        let groups: Vec<_> = groups
            .into_iter()
            .filter(|(_, pick)| self.rows.iter().any(|r| pick(r).is_some()))
            .collect();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "weir probe {}: {} trains of {} per size, gap {} µs; {} sent, {} echoed, {} lost (stopped by {}); {} percentiles",
            self.server, self.count, self.train, self.gap_us, self.sent, self.received, self.lost,
            self.stopped_by, self.quantiles
        );
        let _ = write!(s, "{:>26}", "");
        for (name, _) in &groups {
            let _ = write!(s, " | {:<23}", format!("{name} µs"));
        }
        trim_line(&mut s);
        let _ = write!(
            s,
            "{:>5} {:<6} {:>6} {:>6}",
            "size", "pos", "echoed", "lost"
        );
        for _ in &groups {
            let _ = write!(s, " | {:>7} {:>7} {:>7}", "p20", "p50", "p99");
        }
        s.push('\n');
        for r in &self.rows {
            let _ = write!(
                s,
                "{:>5} {:<6} {:>6} {:>6}",
                r.size, r.position, r.received, r.lost
            );
            for (_, pick) in &groups {
                match pick(r) {
                    Some(m) => {
                        let _ = write!(s, " | {:>7.2} {:>7.2} {:>7.2}", m.p20, m.p50, m.p99);
                    }
                    None => {
                        let _ = write!(s, " | {:>7} {:>7} {:>7}", "-", "-", "-");
                    }
                }
            }
            s.push('\n');
        }
        if self.send_errors > 0 {
            let _ = writeln!(s, "{} sends failed (counted as lost)", self.send_errors);
        }
        let bad: u64 = self.bad.values().sum();
        if bad + self.duplicates + self.mismatched > 0 {
            let _ = writeln!(
                s,
                "echoes set aside: {bad} not probes, {} duplicates, {} mismatched",
                self.duplicates, self.mismatched
            );
        }
        s
    }
}

fn trim_line(s: &mut String) {
    s.truncate(s.trim_end().len());
    s.push('\n');
}

/// Header of [`write_packets_csv`].
pub const PACKETS_CSV_HEADER: &str = "seq,size,pos,sent_ns,echoed,rtt_ns,server_stack_ns,engine_ns,client_rx_stack_ns,client_tx_stack_ns";

/// One line per probe; empty fields for what was not measured.
pub fn write_packets_csv(out: &mut dyn Write, run: &ClientRun) -> io::Result<()> {
    writeln!(out, "{PACKETS_CSV_HEADER}")?;
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    for s in &run.samples {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{}",
            s.seq,
            s.size,
            s.pos,
            s.sent_ns,
            u8::from(s.echoed),
            opt(s.rtt_ns),
            opt(s.server_stack_ns),
            opt(s.engine_ns),
            opt(s.client_rx_stack_ns),
            opt(s.client_tx_stack_ns),
        )?;
    }
    Ok(())
}

/// The server's closing summary (`weir probe server --json`).
#[derive(Clone, Debug, Serialize)]
pub struct ServerReport {
    pub bind: String,
    pub datagrams: u64,
    pub echoed: u64,
    pub filtered_out: u64,
    /// Datagrams that were not probes, by reason; `malformed` is their sum.
    pub malformed: u64,
    pub bad: BTreeMap<&'static str, u64>,
    pub no_kernel_stamp: u64,
    pub recv_errors: u64,
    pub send_errors: u64,
    pub stack_us: Option<Summary>,
    pub engine_us: Option<Summary>,
    /// One clock read, included once in each engine time.
    pub clock_ns: u64,
    pub samples_dropped: u64,
    pub stopped_by: &'static str,
    pub elapsed_s: f64,
    /// How the percentiles are taken: `weir_stats::METHOD`.
    pub quantiles: &'static str,
}

impl ServerReport {
    pub fn new(bind: &str, st: &ServerStats) -> ServerReport {
        ServerReport {
            bind: bind.to_string(),
            datagrams: st.datagrams,
            echoed: st.echoed,
            filtered_out: st.filtered_out,
            malformed: st.bad_total(),
            bad: bad_map(&st.bad),
            no_kernel_stamp: st.no_kernel_stamp,
            recv_errors: st.recv_errors,
            send_errors: st.send_errors,
            stack_us: summarize(&mut st.stack_ns.clone()),
            engine_us: summarize(&mut st.engine_ns.clone()),
            clock_ns: st.clock_ns,
            samples_dropped: st.samples_dropped,
            stopped_by: st.stopped_by,
            elapsed_s: st.elapsed.as_secs_f64(),
            quantiles: weir_stats::METHOD,
        }
    }

    /// The filter's counters, for the line after the summary.
    pub fn filter_line(packets: u64, passed: u64, dropped: u64) -> String {
        format!("filter: {packets} packets decided, {passed} passed, {dropped} dropped")
    }

    /// Closing lines for stderr.
    pub fn text(&self) -> String {
        let mut s = format!(
            "weir probe server {}: {} datagrams, {} echoed, {} dropped by the filter, {} malformed",
            self.bind, self.datagrams, self.echoed, self.filtered_out, self.malformed
        );
        if self.malformed > 0 {
            let parts: Vec<String> = self
                .bad
                .iter()
                .filter(|(_, &n)| n > 0)
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            let _ = write!(s, " ({})", parts.join(", "));
        }
        let _ = writeln!(s, "; stopped by {}", self.stopped_by);
        let line = |name: &str, m: &Option<Summary>| match m {
            Some(m) => format!(
                "{name} µs: p20 {:.2}  p50 {:.2}  p99 {:.2}  (n {}, {})\n",
                m.p20, m.p50, m.p99, m.n, self.quantiles
            ),
            None => String::new(),
        };
        s.push_str(&line("stack (kernel rx → process)", &self.stack_us));
        if self.engine_us.is_some() {
            s.push_str(&line("engine (packet record + decide)", &self.engine_us));
            let _ = writeln!(
                s,
                "one clock read: {} ns, included in each engine time",
                self.clock_ns
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(seq: u32, size: u32, pos: u8, echoed: bool) -> Sample {
        Sample {
            seq,
            size,
            pos,
            echoed,
            rtt_ns: echoed.then_some(50_000),
            server_stack_ns: echoed.then_some(10_000 + u64::from(pos) * 1000),
            ..Sample::default()
        }
    }

    #[test]
    fn rows_split_by_size_and_position() {
        let mut cfg = ClientConfig::new("127.0.0.1:9".parse().unwrap());
        cfg.sizes = vec![32, 64];
        cfg.train = 2;
        let run = ClientRun {
            samples: vec![
                sample(0, 32, 0, true),
                sample(1, 32, 1, true),
                sample(2, 64, 0, true),
                sample(3, 64, 1, false),
            ],
            stopped_by: "count",
            ..ClientRun::default()
        };
        let r = ClientReport::new(&cfg, &run);
        assert_eq!((r.sent, r.received, r.lost), (4, 3, 1));
        let shape: Vec<(u32, &str, u64)> = r
            .rows
            .iter()
            .map(|x| (x.size, x.position, x.lost))
            .collect();
        assert_eq!(
            shape,
            [
                (32, "first", 0),
                (32, "later", 0),
                (32, "all", 0),
                (64, "first", 0),
                (64, "later", 1),
                (64, "all", 1)
            ]
        );
        assert_eq!(r.rows[1].server_stack_us.unwrap().p50, 11.0);
        assert!(r.rows[0].engine_us.is_none());
        let t = r.table();
        assert!(
            t.contains("server stack µs") && !t.contains("engine µs"),
            "{t}"
        );
        let j = serde_json::to_value(&r).unwrap();
        for k in ["sent", "received", "lost", "rows", "bad", "stopped_by"] {
            assert!(j.get(k).is_some(), "{k}");
        }
        let mut csv = Vec::new();
        write_packets_csv(&mut csv, &run).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        assert_eq!(csv.lines().count(), 5);
        assert!(csv.lines().nth(4).unwrap().starts_with("3,64,1,0,0,,"));
    }
}
