//! `weir run`: a capture file through the pipeline, into the outputs asked
//! for, then the closing summary and reports.

use crate::cli::RunArgs;
use crate::outputs;
use crate::setup::{attach_logger, build_engine_and_set, capture_failure, placement, LogOutput};
use crate::{Failure, Progress};
use std::sync::Mutex;
use weir_engine::Engine;
use weir_pipeline::report::{Report, Summary, Syscalls};
use weir_pipeline::{Between, Budget, FileSource, Files, Shared, Sink, Source, Stop};
use weir_rules::Names;

pub fn run(args: &RunArgs) -> Result<(), Failure> {
    let out = &args.out;
    outputs::check_mode_outputs(&args.rules, &args.engine.tables, Some(&args.read), out)?;
    let names = Names::system();
    let (mut engine, ppp_set) = build_engine_and_set(&args.rules, &args.engine, &names)?;
    let mut log = None;
    if engine.program().rules.iter().any(|r| r.log_limit.is_some()) {
        let format = crate::ppp::log_format(out.log_format.into(), ppp_set);
        let file = out.log_file.as_deref();
        log = Some(attach_logger(&mut engine, file, format, &names)?);
    }
    // Reads counted for the JSON summary (see counting.rs).
    let reader =
        crate::counting::open_capture(&args.read).map_err(|e| capture_failure(&args.read, e))?;
    let mut source = FileSource::new(reader, args.read.display().to_string());
    let files = outputs::open_files(out)?;
    let files = Files::new(files, source.format(), source.interfaces(), &engine)?;
    let sink = Mutex::new(files);
    let (budget, stop) = (Budget::new(args.count), Stop::new(None));
    let place = placement(&args.context, &args.engine);
    let shared = Shared {
        sink: &sink,
        budget: &budget,
        stop: &stop,
        place: &place,
    };
    let mut progress = Progress::for_input(&args.read);
    let ended = weir_pipeline::run(&mut source, &mut engine, &shared, |_, src| {
        progress.update(src.bytes_read());
        Between::Go
    });
    progress.finish();
    let mut files = sink.into_inner().unwrap_or_else(|p| p.into_inner());
    let ended = match ended {
        Ok(e) => e,
        Err(e) => {
            let at = files.packets();
            return stop_on_output(e.into(), Some(at), files, log);
        }
    };
    // Every packet read has been decided and handed to its outputs (up to a
    // corruption, which README promises): flush, then make them appear.
    if let Err(e) = files.finish(source.interfaces()) {
        return stop_on_output(e.into(), None, files, log);
    }
    if let Some(f) = log.as_mut().and_then(|l| l.finish(&mut engine)) {
        if !f.is_closed_pipe() {
            return stop_on_output(f, None, files, log);
        }
    }
    outputs::commit_files(files)?;
    if let Some(l) = log {
        l.commit()?;
    }
    report(args, &engine, &names)?;
    ended
        .input_error
        .map_or(Ok(()), |m| Err(Failure::Runtime(m)))
}

/// An output failed (while packets were written, `stopped_after` the
/// last one handed to it; or at the end): nothing the run wrote is kept,
/// and the closing summary, which would count packets that are in no
/// file, is not printed. A closed pipe stays quiet unless files were
/// given up.
fn stop_on_output(
    failure: Failure,
    stopped_after: Option<u64>,
    files: Files,
    log: Option<LogOutput>,
) -> Result<(), Failure> {
    let mut unmade = files.discard();
    unmade.extend(log.and_then(LogOutput::discard));
    if let (Some(index), false) = (stopped_after, failure.is_closed_pipe()) {
        outputs::note(&format!("weir: stopped after packet {index}"))?;
    }
    outputs::say_discarded(unmade)?;
    Err(failure)
}

/// The closing summary on stderr, and the reports asked for on stdout.
fn report(args: &RunArgs, engine: &Engine, names: &Names) -> Result<(), Failure> {
    let summary = Summary::of(engine);
    if !args.out.quiet {
        outputs::note(&summary.line())?;
    }
    outputs::print_reports(&args.out, engine, names, || {
        let mut report = Report::of(engine, &summary);
        let (reads, writes) = crate::counting::counts();
        report.summary_mut().syscalls = Some(Syscalls {
            counted: crate::counting::COUNTED,
            reads,
            writes,
        });
        report
    })
}
