//! `lint -r` and `diff -r`: a capture replayed through weir-pipeline as
//! `weir run` replays it (source, decoding, placement, run loop).

use super::DiffArgs;
use crate::outputs;
use crate::setup::{capture_failure, placement};
use crate::Failure;
use std::path::Path;
use weir_analysis::TraceChanges;
use weir_engine::Engine;
use weir_io::output::OutputError;
use weir_io::{CaptureWriter, Interface};
use weir_pipeline::sink::Out;
use weir_pipeline::Source;
use weir_pipeline::{Decided, FileSource, Output, Placement, Sink};
use weir_wire::decode_with;

type Reader = Box<dyn std::io::Read + Send>;

pub fn open(trace: &Path) -> Result<FileSource<Reader>, Failure> {
    let reader = weir_io::open_capture(trace).map_err(|e| capture_failure(trace, e))?;
    Ok(FileSource::new(reader, trace.display().to_string()))
}

/// Every packet of `source` through `engine` into `sink`.
pub fn replay<S: Sink>(
    engine: &mut Engine,
    source: &mut FileSource<Reader>,
    place: &Placement,
    sink: S,
) -> Result<S, Failure> {
    let (sink, ended) = weir_pipeline::run::whole(source, engine, place, sink)?;
    match ended.input_error {
        Some(why) => Err(Failure::Runtime(why)),
        None => Ok(sink),
    }
}

/// The trace's packets decided differently by `old` and `new`; written to
/// `-w` (in the trace's format) as they come.
pub fn diff(
    args: &DiffArgs,
    trace: &Path,
    old: &mut Engine,
    new: &mut Engine,
) -> Result<TraceChanges, Failure> {
    let place = placement(&args.context, &args.engine);
    let mut source = open(trace)?;
    let (format, ifaces) = (source.format(), source.interfaces());
    let out = match &args.write {
        Some(p) => Some(outputs::open(p)?.map(|w| CaptureWriter::mirror(w, format, ifaces))?),
        None => None,
    };
    let redecode = !old.fields().contains(new.fields());
    let sink = SecondOpinion {
        new,
        place: &place,
        known_ifaces: usize::MAX,
        redecode,
        changes: TraceChanges::new(args.rules),
        out,
    };
    let sink = replay(old, &mut source, &place, sink)?;
    if let Some(mut o) = sink.out {
        let done = o.w.finish_interfaces(source.interfaces());
        done.and_then(|()| o.w.flush()).map_err(|e| o.fail(e))?;
        o.commit()?;
    }
    Ok(sink.changes)
}

/// The new ruleset's decision on each packet the old one decided, made
/// as `weir run` would make it: decoded for the new rules' fields, placed,
/// at the packet's time.
struct SecondOpinion<'a> {
    new: &'a mut Engine,
    place: &'a Placement,
    known_ifaces: usize,
    /// The new rules read fields the old ones' decode skipped.
    redecode: bool,
    changes: TraceChanges,
    out: Option<Output<CaptureWriter<Out>>>,
}

impl Sink for SecondOpinion<'_> {
    fn packet(&mut self, d: &Decided<'_>) -> Result<(), OutputError> {
        let (frame, new) = (d.frame, &mut *self.new);
        if d.ifaces.len() != self.known_ifaces {
            self.known_ifaces = d.ifaces.len();
            new.set_interfaces(&self.place.interface_names(d.ifaces));
        }
        let mut p = *d.packet;
        if self.redecode {
            p = decode_with(frame.link_type, frame.data, frame.orig_len, new.fields());
            self.place.place(&mut p, frame);
        }
        new.set_time(frame.ts_ns);
        let y = new.decide(&p);
        let old = d.engine.program();
        let changed = self.changes.record(old, d.decision, new.program(), &y);
        match &mut self.out {
            Some(o) if changed => o.w.write(frame, d.ifaces, None).map_err(|e| o.fail(e)),
            _ => Ok(()),
        }
    }

    fn reloaded(&mut self, _: &Engine) {}

    fn finish(&mut self, _: &[Interface]) -> Result<(), OutputError> {
        Ok(())
    }
}
