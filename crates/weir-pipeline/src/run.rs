//! The run loop: batches from a [`Source`], each frame decoded once,
//! placed, decided by the [`Engine`] and handed to the [`Sink`]; between
//! batches (never per packet) the stop signal, the budget and the
//! caller's own work (metrics, reloads, progress).

use crate::place::Placement;
use crate::sink::{Decided, Sink};
use crate::source::Source;
use crate::stop::{Budget, Reason, Stop};
use std::sync::{Mutex, MutexGuard, PoisonError};
use weir_engine::Engine;
use weir_io::output::OutputError;
use weir_wire::decode;

/// What a worker shares with the others of its run.
pub struct Shared<'a, S> {
    pub sink: &'a Mutex<S>,
    pub budget: &'a Budget,
    pub stop: &'a Stop,
    pub place: &'a Placement,
}

/// What the caller does between batches.
pub enum Between {
    Go,
    /// The engine was replaced (a reload): interfaces and per-rule labels
    /// are made again.
    Replaced,
}

/// How a worker's run ended, short of an output failure.
#[derive(Debug, Default)]
pub struct Ended {
    /// The input failed (a corrupt capture, a socket error): the message.
    /// Every frame before it was decided and handed to the sink.
    pub input_error: Option<String>,
}

/// Locks the shared sink; a worker that panicked holding it left it usable.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `source` through `engine` into the shared sink until the input
/// ends, the budget is spent or `stop` asks. An output failure ends the
/// run at once (and asks the other workers to stop).
pub fn run<Src, S>(
    source: &mut Src,
    engine: &mut Engine,
    shared: &Shared<'_, S>,
    mut between: impl FnMut(&mut Engine, &Src) -> Between,
) -> Result<Ended, OutputError>
where
    Src: Source,
    S: Sink,
{
    let mut known_ifaces = usize::MAX;
    loop {
        if shared.budget.exhausted() {
            shared.stop.set(Reason::Count);
        }
        if shared.stop.requested() {
            return Ok(Ended::default());
        }
        if let Between::Replaced = between(engine, source) {
            known_ifaces = usize::MAX;
            lock(shared.sink).reloaded(engine);
        }
        let mut sink = lock(shared.sink);
        let mut failed = None;
        let got = source.next_batch(shared.budget, |frame, ifaces| {
            if ifaces.len() != known_ifaces {
                known_ifaces = ifaces.len();
                engine.set_interfaces(&shared.place.interface_names(ifaces));
            }
            let mut p = decode(frame.link_type, frame.data, frame.orig_len);
            shared.place.place(&mut p, frame);
            // States age by the packets' own timestamps.
            engine.set_time(frame.ts_ns);
            let d = engine.decide(&p);
            if failed.is_none() {
                let x = Decided {
                    frame,
                    ifaces,
                    packet: &p,
                    decision: &d,
                    engine,
                };
                if let Err(e) = sink.packet(&x) {
                    failed = Some(e);
                }
            }
            d.verdict
        });
        drop(sink);
        if let Some(e) = failed {
            shared.stop.set(Reason::Error);
            return Err(e);
        }
        match got {
            Ok(Some(_)) => {}
            Ok(None) => {
                shared.stop.set(Reason::End);
                return Ok(Ended::default());
            }
            Err(why) => {
                shared.stop.set(Reason::Error);
                return Ok(Ended {
                    input_error: Some(why),
                });
            }
        }
    }
}
