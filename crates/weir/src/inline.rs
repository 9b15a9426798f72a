//! `weir inline`: a firewall on an NFQUEUE, through the pipeline. Every
//! queued packet gets exactly one verdict from the ruleset; SIGHUP reloads
//! it, `--metrics` serves Prometheus text, SIGINT/SIGTERM stop with a
//! summary after answering what is queued.

use crate::cli::InlineArgs;
use crate::live::{self, LiveLog};
use crate::outputs;
use crate::setup::build_engine;
use crate::Failure;
use std::sync::Mutex;
use weir_live::metrics::{queue_samples, Metrics, PUBLISH_INTERVAL};
use weir_live::netlink::QueueConfig;
use weir_live::nfqueue::Queue;
use weir_pipeline::queue::QueueSource;
use weir_pipeline::report::{self, Item, Report, Summary};
use weir_pipeline::{Between, Budget, Files, Placement, Shared, Sink, Source, Stop};
use weir_rules::Names;

pub fn run(args: &InlineArgs) -> Result<(), Failure> {
    let out = &args.out;
    outputs::check_mode_outputs(&args.rules, &args.engine.tables, None, out)?;
    let names = Names::system();
    let engine = build_engine(&args.rules, &args.engine, &names)?;
    let log = LiveLog::open(&engine, out)?;
    let mut engine = log.attach(engine, &names, out.log_format);
    let stop = Stop::on_signals(None).map_err(|e| Failure::Runtime(format!("signals: {e}")))?;
    let reload = live::reloader(&args.rules, &args.engine, &log, out.log_format)?;
    let serve =
        |addr| Metrics::serve(addr).map_err(|e| Failure::Runtime(format!("metrics {addr}: {e}")));
    let mut metrics = args.metrics.map(serve).transpose()?;
    let config = QueueConfig {
        queue: args.queue,
        copy_range: 0xffff,
        max_len: args.queue_len,
        fail_open: args.fail_open,
    };
    let queue =
        Queue::open(config).map_err(|e| Failure::Runtime(format!("queue {}: {e}", args.queue)))?;
    let mut source = QueueSource::new(queue);
    let files = Files::new(
        outputs::open_files(out)?,
        source.format(),
        source.interfaces(),
        &engine,
    )?;
    // A live filter does not stop for a full or closed stderr; the end says.
    let at = metrics
        .as_ref()
        .map(|m| format!(", metrics at http://{}/metrics", m.local_addr()));
    outputs::note_quietly(&format!(
        "weir: inline on queue {}, {} rules from {}{}",
        args.queue,
        engine.program().rules.len(),
        args.rules.display(),
        at.unwrap_or_default()
    ));
    let (sink, budget, place) = (
        Mutex::new(files),
        Budget::new(args.count),
        Placement::new(None, &[], None),
    );
    let shared = Shared {
        sink: &sink,
        budget: &budget,
        stop: &stop,
        place: &place,
    };
    let ran = weir_pipeline::run(&mut source, &mut engine, &shared, |engine, src| {
        // Between batches: every packet received so far has its verdict.
        let mut between = Between::Go;
        if let Some(mut new) = reload.take() {
            new.carry_over(engine);
            *engine = new;
            let file = args.rules.display();
            outputs::note_quietly(&format!(
                "weir: reloaded {file}: {} rules",
                engine.program().rules.len()
            ));
            between = Between::Replaced;
        }
        if let Some(m) = &mut metrics {
            m.publish_every(PUBLISH_INTERVAL, engine, || {
                queue_samples(src.queue(), &reload, engine)
            });
        }
        between
    });
    let mut failure = match ran {
        Ok(ended) => ended.input_error.map(Failure::Runtime),
        Err(e) => Some(e.into()),
    };
    // Whatever stopped the run, what is queued already gets its verdict.
    let drained = live::drain(&mut source, &mut engine, &sink, failure.is_some(), &place);
    let mut files = sink.into_inner().unwrap_or_else(|p| p.into_inner());
    if let Err(e) = files.finish(source.interfaces()) {
        failure.get_or_insert(e.into());
    }
    let qstats = match drained.and_then(|()| source.close()) {
        Ok(s) => s,
        Err(e) => {
            failure.get_or_insert(Failure::Runtime(format!("queue {}: {e}", args.queue)));
            Default::default()
        }
    };
    if let Some(l) = engine.logger_mut() {
        let _ = l.flush();
    }
    live::keep_or_give_up(&mut failure, files, &log)?;
    let summary = Summary::of(&engine);
    if !out.quiet {
        outputs::note(&format!(
            "{}; {} accepted, {} dropped by verdict; reloads: {} ok, {} failed",
            summary.line(),
            qstats.accepted,
            qstats.dropped,
            reload.succeeded(),
            reload.failed()
        ))?;
    }
    outputs::print_reports(out, &engine, &names, || {
        let mut doc = Report::of(&engine, &summary);
        doc.weir.push(Item::Queue(report::Queue {
            accepted: qstats.accepted,
            batches: qstats.batches,
            dropped: qstats.dropped,
            number: args.queue,
            reloads_failed: reload.failed(),
            reloads_ok: reload.succeeded(),
            unparsed: qstats.unparsed,
            verdict_errors: qstats.verdict_errors,
        }));
        doc
    })?;
    failure.map_or(Ok(()), Err)
}
