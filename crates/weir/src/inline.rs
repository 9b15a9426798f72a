//! `weir inline`: a firewall on an NFQUEUE. Every queued packet gets
//! exactly one verdict from the ruleset; SIGHUP reloads it, `--metrics`
//! serves Prometheus text, SIGINT/SIGTERM stop with a summary.

use crate::cli::{EngineArgs, LogFormatArg};
use crate::outputs;
use crate::report::{self, Summary};
use crate::setup::{attach_stderr_logger, build_engine};
use crate::Failure;
use clap::Args;
use serde_json::json;
use std::net::SocketAddr;
use std::path::PathBuf;
use weir_engine::Engine;
use weir_io::output::ErrorWatch;
use weir_live::filter::Filter;
use weir_live::metrics::{Kind, Metrics, Sample, PUBLISH_INTERVAL};
use weir_live::netlink::QueueConfig;
use weir_live::nfqueue::{Queue, MAX_BATCH};
use weir_live::reload::Reloader;
use weir_live::signals::Stop;
use weir_rules::Names;

#[derive(Args, Debug)]
#[command(
    after_help = "Steer traffic into the queue with nftables, then start weir:
  nft add table inet weir
  nft add chain inet weir forward '{ type filter hook forward priority 0; }'
  nft add rule inet weir forward queue num 0 bypass
  weir inline --queue 0 --metrics 127.0.0.1:9617 rules.conf

`bypass` lets traffic through while no program is bound to the queue;
without it, the kernel drops it. Remove the steering with
  nft delete table inet weir

Reload the ruleset with `kill -HUP <pid>`: the new file is compiled off the
packet path and swapped in between batches; a file with errors is reported
(file:line:col) and the running ruleset stays. Counters of rules whose
number and text are unchanged carry over; the totals always do.

Examples:
  weir inline --queue 0 rules.conf
  weir inline --queue 3 --fail-open --metrics 127.0.0.1:9617 rules.conf
  weir inline --queue 0 -c 1000 --json rules.conf   stop after 1000 packets"
)]
pub struct InlineArgs {
    /// Ruleset file (ipfw syntax); SIGHUP reads it again.
    pub rules: PathBuf,
    /// NFQUEUE number to bind (as in `queue num N`).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub queue: u16,
    /// When the queue is full, the kernel accepts packets instead of dropping them.
    #[arg(long)]
    pub fail_open: bool,
    /// Packets the kernel holds waiting for a verdict.
    #[arg(long, default_value_t = 4096, value_name = "PACKETS")]
    pub queue_len: u32,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Stop after this many packets (those already queued still get verdicts).
    #[arg(short = 'c', value_name = "COUNT")]
    pub count: Option<u64>,
    /// Print per-rule counters as `ipfw show` does, at exit.
    #[arg(long)]
    pub counters: bool,
    /// Print the summary and per-rule counters as JSON at exit.
    #[arg(long)]
    pub json: bool,
    /// Log line format for `log` rules (to stderr).
    #[arg(long, value_enum, default_value_t = LogFormatArg::Text)]
    pub log_format: LogFormatArg,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Builds the engine as every command does, plus its logger if a rule logs.
/// Log lines go to stderr; `log` sees their write errors, across reloads.
fn engine_for(args: &InlineArgs, names: &Names, log: &ErrorWatch) -> Result<Engine, Failure> {
    let mut engine = build_engine(&args.rules, &args.engine, names)?;
    if engine.program().rules.iter().any(|r| r.log_limit.is_some()) {
        attach_stderr_logger(&mut engine, args.log_format.into(), names, log);
    }
    Ok(engine)
}

/// The reload thread's builder: the same loading, errors as text.
fn reloader(args: &InlineArgs, log: &ErrorWatch) -> Result<Reloader<Engine>, Failure> {
    let log = log.clone();
    let rules = args.rules.clone();
    let args = InlineArgs {
        rules: args.rules.clone(),
        metrics: None,
        engine: args.engine.clone(),
        ..*args
    };
    let names = Names::system();
    Reloader::on_sighup(move || {
        engine_for(&args, &names, &log).map_err(|f| {
            let why = match f {
                Failure::Rules(text) => text,
                Failure::Usage(m) | Failure::Runtime(m) => format!("weir: {m}"),
                Failure::Output(e) => format!("weir: {e}"),
            };
            format!(
                "{why}\nweir: reload of {} failed; the running ruleset is unchanged",
                rules.display()
            )
        })
    })
    .map_err(|e| Failure::Runtime(format!("SIGHUP handler: {e}")))
}

pub fn run(args: &InlineArgs) -> Result<(), Failure> {
    let names = Names::system();
    let log = ErrorWatch::default();
    let mut filter = Filter::new(engine_for(args, &names, &log)?);
    let stop = Stop::on_signals().map_err(|e| Failure::Runtime(format!("signals: {e}")))?;
    let reload = reloader(args, &log)?;
    let mut metrics = args
        .metrics
        .map(|addr| {
            Metrics::serve(addr).map_err(|e| Failure::Runtime(format!("metrics {addr}: {e}")))
        })
        .transpose()?;
    let mut queue = Queue::open(QueueConfig {
        queue: args.queue,
        copy_range: 0xffff,
        max_len: args.queue_len,
        fail_open: args.fail_open,
    })
    .map_err(|e| Failure::Runtime(format!("queue {}: {e}", args.queue)))?;
    // A live filter does not stop for a full or closed stderr; the end says.
    outputs::note_quietly(&format!(
        "weir: inline on queue {}, {} rules from {}{}",
        args.queue,
        filter.engine.program().rules.len(),
        args.rules.display(),
        metrics
            .as_ref()
            .map(|m| format!(", metrics at http://{}/metrics", m.local_addr()))
            .unwrap_or_default()
    ));

    let limit = args.count.unwrap_or(u64::MAX);
    let mut failure = None;
    while !stop.requested() && queue.stats.packets < limit {
        let room = usize::try_from(limit - queue.stats.packets).unwrap_or(MAX_BATCH);
        // Dynamic states age by the clock, read once per batch.
        filter.engine.set_time(now_ns());
        if let Err(e) = queue.process(room.min(MAX_BATCH), |p| filter.decide(p)) {
            failure = Some(Failure::Runtime(format!("queue {}: {e}", args.queue)));
            break;
        }
        // Between batches: every packet received so far has its verdict.
        if let Some(engine) = reload.take() {
            let rules = engine.program().rules.len();
            filter.swap(engine);
            outputs::note_quietly(&format!(
                "weir: reloaded {}: {rules} rules",
                args.rules.display()
            ));
        }
        if let Some(m) = &mut metrics {
            m.publish_every(PUBLISH_INTERVAL, &filter.engine, || {
                samples(&queue, &reload, &filter.engine)
            });
        }
    }
    let closed = queue.close(|p| filter.decide(p));
    let qstats = match closed {
        Ok(s) => s,
        Err(e) => {
            failure.get_or_insert(Failure::Runtime(format!("queue {}: {e}", args.queue)));
            Default::default()
        }
    };
    if let Some(l) = filter.engine.logger_mut() {
        let _ = l.flush();
    }
    // Log lines were lost if stderr failed, which is a failure unless its
    // reader went away.
    if let Some(f) = log.take().map(|e| Failure::from_io("stderr", e)) {
        if !f.is_closed_pipe() {
            failure.get_or_insert(f);
        }
    }
    let summary = Summary::of(&filter.engine);
    outputs::note(&format!(
        "{}; {} accepted, {} dropped by verdict; reloads: {} ok, {} failed",
        summary.line(),
        qstats.accepted,
        qstats.dropped,
        reload.succeeded(),
        reload.failed()
    ))?;
    let mut text = String::new();
    if args.counters {
        text += &report::counters_table(&filter.engine);
    }
    if args.json {
        let mut out = report::json(&filter.engine, &summary);
        if let Some(items) = out["weir"].as_array_mut() {
            items.push(json!({"queue": {
                "number": args.queue,
                "batches": qstats.batches,
                "accepted": qstats.accepted,
                "dropped": qstats.dropped,
                "unparsed": qstats.unparsed,
                "verdict_errors": qstats.verdict_errors,
                "reloads_ok": reload.succeeded(),
                "reloads_failed": reload.failed(),
            }}));
        }
        text += &format!("{out}\n");
    }
    outputs::print(&text)?;
    failure.map_or(Ok(()), Err)
}

/// Wall-clock nanoseconds (a vDSO read, no system call).
fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The queue's and the reloader's counters, beside the engine's.
fn samples(queue: &Queue, reload: &Reloader<Engine>, engine: &Engine) -> Vec<Sample> {
    let k = queue.kernel_counters().unwrap_or_default();
    let s = queue.stats;
    let c = |name, help, labels, value| Sample {
        name,
        help,
        kind: Kind::Counter,
        labels,
        value,
    };
    let g = |name, help, value| Sample {
        name,
        help,
        kind: Kind::Gauge,
        labels: "",
        value,
    };
    let mut out = vec![
        c(
            "weir_queue_verdicts_total",
            "Verdicts sent to the kernel.",
            "verdict=\"accept\"",
            s.accepted,
        ),
        c(
            "weir_queue_verdicts_total",
            "Verdicts sent to the kernel.",
            "verdict=\"drop\"",
            s.dropped,
        ),
        c(
            "weir_queue_batches_total",
            "Receive batches (one verdict send each).",
            "",
            s.batches,
        ),
        c(
            "weir_queue_unparsed_total",
            "Queue messages that were not a packet.",
            "",
            s.unparsed,
        ),
        c(
            "weir_queue_verdict_errors_total",
            "Verdicts the kernel refused.",
            "",
            s.verdict_errors,
        ),
        c(
            "weir_queue_kernel_drops_total",
            "Packets the kernel did not queue: queue full, or our socket buffer full.",
            "reason=\"queue_full\"",
            k.queue_dropped,
        ),
        c(
            "weir_queue_kernel_drops_total",
            "Packets the kernel did not queue: queue full, or our socket buffer full.",
            "reason=\"socket_full\"",
            k.user_dropped,
        ),
        g(
            "weir_queue_waiting",
            "Packets waiting in the kernel for a verdict.",
            k.waiting,
        ),
        c(
            "weir_reloads_total",
            "Ruleset reloads.",
            "result=\"ok\"",
            reload.succeeded(),
        ),
        c(
            "weir_reloads_total",
            "Ruleset reloads.",
            "result=\"error\"",
            reload.failed(),
        ),
        g(
            "weir_ruleset_rules",
            "Rules in the running ruleset (the default rule included).",
            engine.program().rules.len() as u64,
        ),
    ];
    out.extend(weir_live::metrics::state_samples(engine));
    out
}
