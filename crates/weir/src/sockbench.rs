//! `weir sockbench`: the 2014 packet-socket set-up measurement, over
//! `weir_capture::sockbench`.

use crate::outputs;
use crate::Failure;
use clap::Args;
use serde::Serialize;

fn runtime(e: weir_capture::Error) -> Failure {
    Failure::Runtime(e.to_string())
}

const SOCKBENCH_EXAMPLES: &str = "Examples:
  weir sockbench                    200 runs of each case
  weir sockbench --runs 1000 --json

Needs root: it creates a network namespace of its own and packet sockets
bound to its loopback. The three cases are the 2014 Linux measurement:
a socket created with a protocol and then bound to one interface waits in
synchronize_net(); created with protocol 0, it does not.";

#[derive(Args, Debug)]
#[command(after_help = SOCKBENCH_EXAMPLES)]
pub struct SockbenchArgs {
    /// Timed runs of each case.
    #[arg(long, default_value_t = 200, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub runs: u32,
    /// Untimed runs of each case first.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub warmup: u32,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `{"sockbench": [case, ...]}`; fields in the order they have always had.
#[derive(Serialize)]
struct Report {
    sockbench: Vec<Case>,
}

#[derive(Serialize)]
struct Case {
    calls: &'static str,
    case: &'static str,
    max_us: f64,
    median_us: f64,
    min_us: f64,
    p99_us: f64,
    reported_2014_us: f64,
    runs: usize,
}

pub fn sockbench(args: &SockbenchArgs) -> Result<(), Failure> {
    let results =
        weir_capture::sockbench::run(args.runs as usize, args.warmup as usize).map_err(runtime)?;
    if args.json {
        let cases: Vec<Case> = results
            .iter()
            .map(|r| Case {
                calls: r.case.calls(),
                case: r.case.name(),
                max_us: r.percentile(1.0),
                median_us: r.median(),
                min_us: r.percentile(0.0),
                p99_us: r.p99(),
                reported_2014_us: r.case.reported_2014_us(),
                runs: r.samples_us.len(),
            })
            .collect();
        let json = serde_json::to_string(&Report { sockbench: cases }).unwrap_or_default();
        return outputs::print(&format!("{json}\n"));
    }
    let mut text = format!(
        "{:<26} {:>11} {:>9} {:>9}  calls\n",
        "case", "median µs", "p99 µs", "2014 µs"
    );
    for r in &results {
        text += &format!(
            "{:<26} {:>11.1} {:>9.1} {:>9.0}  {}\n",
            r.case.name(),
            r.median(),
            r.p99(),
            r.case.reported_2014_us(),
            r.case.calls()
        );
    }
    text += &format!(
        "({} runs of each case, interleaved, in a new network namespace)\n",
        args.runs
    );
    outputs::print(&text)
}
