//! What the live modes (`capture`, `inline`) share: the log that every
//! worker and every reloaded engine writes to, and the end of a capture
//! (kernel counters, merged counts, reports).

use crate::cli::{EngineArgs, LogFormatArg, OutputArgs};
use crate::outputs::{self, Output};
use crate::setup::build_engine;
use crate::Failure;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};
use weir_engine::{Engine, Logger};
use weir_io::output::{ErrorWatch, Watched};
use weir_live::reload::Reloader;
use weir_pipeline::log::LineSink;
use weir_pipeline::queue::QueueSource;
use weir_pipeline::report::{CaptureJson, Kernel, Log, Report, Summary, WorkerJson};
use weir_pipeline::ring::RingSource;
use weir_pipeline::sink::Discard;
use weir_pipeline::sink::Out;
use weir_pipeline::workers::{merge, Outcome, Worker};
use weir_pipeline::{Between, Budget, Files, Placement, Shared, Sink, Source, Stop};
use weir_rules::Names;

pub fn runtime(e: weir_capture::Error) -> Failure {
    Failure::Runtime(e.to_string())
}

/// Where `log` rules write in a live mode: `--log-file` or stderr, shared
/// by workers and by engines a reload brings; write errors kept to ask
/// about at the end (the filter never stops for them).
#[derive(Clone)]
pub struct LiveLog {
    sink: Option<Arc<Mutex<Out>>>,
    name: String,
    watch: ErrorWatch,
    file: Option<Arc<Mutex<Option<Output<()>>>>>,
}

impl LiveLog {
    /// Opens the log if a rule of `template` logs.
    pub fn open(template: &Engine, out: &OutputArgs) -> Result<LiveLog, Failure> {
        let mut log = LiveLog {
            sink: None,
            name: "stderr".into(),
            watch: ErrorWatch::default(),
            file: None,
        };
        if !template
            .program()
            .rules
            .iter()
            .any(|r| r.log_limit.is_some())
        {
            return Ok(log);
        }
        let w: Out = match &out.log_file {
            Some(p) => {
                let (w, file) = outputs::open(p)?.split();
                log.name = file.name().to_owned();
                log.file = Some(Arc::new(Mutex::new(Some(file))));
                w
            }
            None => Box::new(io::stderr()),
        };
        let w = Watched::reporting_to(w, &log.watch);
        log.sink = Some(Arc::new(Mutex::new(Box::new(w))));
        Ok(log)
    }

    /// `engine` with a logger into this log, if its rules log.
    pub fn attach(&self, mut engine: Engine, names: &Names, format: LogFormatArg) -> Engine {
        let logs = engine.program().rules.iter().any(|r| r.log_limit.is_some());
        if let (Some(sink), true) = (&self.sink, logs) {
            let w = Box::new(LineSink::new(sink));
            let logger = Logger::new(w, format.into(), names, &engine.program().rules);
            engine.set_logger(logger);
        }
        engine
    }

    /// A failed write to the log, unless its reader simply went away.
    pub fn failure(&self) -> Option<Failure> {
        let f = Failure::from_io(&self.name, self.watch.take()?);
        (!f.is_closed_pipe()).then_some(f)
    }

    fn file(&self) -> Option<Output<()>> {
        self.file
            .as_ref()
            .and_then(|f| weir_pipeline::run::lock(f).take())
    }

    pub fn commit(&self) -> Result<(), Failure> {
        Ok(self.file().map_or(Ok(()), Output::commit)?)
    }

    pub fn discard(&self) -> Option<String> {
        self.file().and_then(Output::discard)
    }
}

/// The reload thread's builder for `weir inline`: the same loading and
/// log as at start-up, errors as text.
pub fn reloader(
    rules: &Path,
    engine: &EngineArgs,
    log: &LiveLog,
    format: LogFormatArg,
) -> Result<Reloader<Engine>, Failure> {
    let (log, rules, engine) = (log.clone(), rules.to_owned(), engine.clone());
    let names = Names::system();
    Reloader::on_sighup(move || {
        let built = build_engine(&rules, &engine, &names).map(|e| log.attach(e, &names, format));
        built.map_err(|f| {
            let why = match f {
                Failure::Rules(text) => text,
                Failure::Usage(m) | Failure::Runtime(m) => format!("weir: {m}"),
                Failure::Output(e) => format!("weir: {e}"),
            };
            let file = rules.display();
            format!("{why}\nweir: reload of {file} failed; the running ruleset is unchanged")
        })
    })
    .map_err(|e| Failure::Runtime(format!("SIGHUP handler: {e}")))
}

/// Makes the files and the log appear, or, when the run failed (a failed
/// log write included, unless its reader went away), gives them up and
/// says which.
pub fn keep_or_give_up(
    failure: &mut Option<Failure>,
    files: Files,
    log: &LiveLog,
) -> Result<(), Failure> {
    if let Some(f) = log.failure() {
        failure.get_or_insert(f);
    }
    if failure.is_none() {
        outputs::commit_files(files)?;
        log.commit()
    } else {
        let mut unmade = files.discard();
        unmade.extend(log.discard());
        outputs::say_discarded(unmade)
    }
}

/// How a capture went, for its closing lines and JSON.
pub struct End<'a> {
    pub iface: &'a str,
    pub immediate: bool,
    pub seconds: f64,
    pub stop: &'a Stop,
}

/// Flushes, merges the workers' counts, keeps or gives up the files, and
/// reports.
pub fn finish_capture(
    out: &OutputArgs,
    names: &Names,
    workers: Vec<Worker<RingSource>>,
    mut files: Files,
    log: LiveLog,
    outcomes: Vec<Outcome>,
    end: &End<'_>,
) -> Result<(), Failure> {
    let mut failure = outcomes.into_iter().find_map(|o| match o {
        Ok(e) => e.input_error.map(Failure::Runtime),
        Err(e) => Some(e.into()),
    });
    if let Err(e) = files.finish(workers[0].source.interfaces()) {
        failure.get_or_insert(e.into());
    }
    let mut kernel = weir_capture::KernelStats::default();
    let (mut per_worker, mut duplicates, mut log_counts) = (Vec::new(), 0, Log::default());
    let mut engines = Vec::new();
    for mut w in workers {
        let k = w.source.stats().map_err(runtime)?;
        kernel += k;
        duplicates += w.source.duplicates();
        per_worker.push(WorkerJson {
            kernel_dropped: k.dropped,
            kernel_received: k.received,
            packets: w.engine.stats().packets,
        });
        if let Some(l) = w.engine.logger_mut() {
            // A failed write is in the log's watch, looked at below.
            let _ = l.flush();
            log_counts.add(l);
        }
        engines.push(w.engine);
    }
    let engine = merge(engines).expect("at least one worker");
    keep_or_give_up(&mut failure, files, &log)?;
    let summary = Summary::of(&engine);
    if !out.quiet {
        let mut lines = vec![
            summary.line(),
            format!("{} packets received by filter", kernel.received),
            format!("{} packets dropped by kernel", kernel.dropped),
        ];
        if duplicates > 0 {
            lines.push(format!("{duplicates} outgoing loopback duplicates ignored"));
        }
        outputs::note(&lines.join("\n"))?;
    }
    outputs::print_reports(out, &engine, names, || {
        let mut doc = Report::of(&engine, &summary);
        let s = doc.summary_mut();
        if s.log.is_some() {
            s.log = Some(log_counts);
        }
        s.kernel = Some(Kernel {
            dropped: kernel.dropped,
            freezes: kernel.freezes,
            received: kernel.received,
        });
        s.capture = Some(CaptureJson {
            interface: end.iface.to_owned(),
            loopback_duplicates_ignored: duplicates,
            packets_per_second: if end.seconds > 0.0 {
                summary.packets as f64 / end.seconds
            } else {
                0.0
            },
            workers: per_worker.len(),
            per_worker,
            ring: if end.immediate {
                "tpacket_v2"
            } else {
                "tpacket_v3"
            },
            seconds: end.seconds,
            stopped_by: end.stop.reason().name(),
        });
        doc
    })?;
    failure.map_or(Ok(()), Err)
}

/// Answers every packet the kernel queued before the stop, whatever `-c`
/// says; into the files unless they failed already.
pub fn drain(
    source: &mut QueueSource,
    engine: &mut Engine,
    files: &Mutex<Files>,
    failed: bool,
    place: &Placement,
) -> std::io::Result<()> {
    source.drain()?;
    let (budget, stop) = (Budget::new(None), Stop::new(None));
    let ended = if failed {
        let sink = Mutex::new(Discard);
        let shared = Shared {
            sink: &sink,
            budget: &budget,
            stop: &stop,
            place,
        };
        weir_pipeline::run(source, engine, &shared, |_, _| Between::Go)
    } else {
        let shared = Shared {
            sink: files,
            budget: &budget,
            stop: &stop,
            place,
        };
        weir_pipeline::run(source, engine, &shared, |_, _| Between::Go)
    };
    match ended {
        Ok(e) => e
            .input_error
            .map_or(Ok(()), |m| Err(std::io::Error::other(m))),
        // The files' failure is reported with theirs, at the end.
        Err(_) => Ok(()),
    }
}
