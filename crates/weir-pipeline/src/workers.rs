//! Several workers of one run, each with its own source (one socket of a
//! PACKET_FANOUT group) and its own engine, sharing the sink, budget and
//! stop signal; and their counts added up at the end.

use crate::run::{run, Between, Ended, Shared};
use crate::sink::Sink;
use crate::source::Source;
use crate::stop::Reason;
use weir_engine::Engine;
use weir_io::output::OutputError;
use weir_live::metrics::{state_samples, Publisher, PUBLISH_INTERVAL};

/// One packet thread.
pub struct Worker<Src> {
    pub source: Src,
    pub engine: Engine,
    /// This worker's end of the metrics server, if one runs: published
    /// between batches.
    pub metrics: Option<Publisher>,
}

/// What a worker's run gave.
pub type Outcome = Result<Ended, OutputError>;

impl<Src: Source> Worker<Src> {
    pub fn run<S: Sink>(&mut self, shared: &Shared<'_, S>) -> Outcome {
        let metrics = &mut self.metrics;
        run(&mut self.source, &mut self.engine, shared, |engine, _| {
            if let Some(m) = metrics {
                m.publish_every(PUBLISH_INTERVAL, engine, || state_samples(engine));
            }
            Between::Go
        })
    }
}

/// Runs every worker, on threads of their own when there are several,
/// until the shared stop; the outcomes in worker order. A worker that
/// fails stops the others.
pub fn run_all<Src, S>(workers: &mut [Worker<Src>], shared: &Shared<'_, S>) -> Vec<Outcome>
where
    Src: Source + Send,
    S: Sink + Send,
{
    if let [one] = workers {
        return vec![one.run(shared)];
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .iter_mut()
            .map(|w| s.spawn(move || w.run(shared)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                let outcome = h.join().unwrap_or_else(|_| {
                    Ok(Ended {
                        input_error: Some("a worker panicked".into()),
                    })
                });
                if !matches!(outcome, Ok(Ended { input_error: None })) {
                    shared.stop.set(Reason::Error);
                }
                outcome
            })
            .collect()
    })
}

/// The engines' counters and statistics added up rule by rule, in the
/// first engine (every worker runs the same program).
pub fn merge(engines: impl IntoIterator<Item = Engine>) -> Option<Engine> {
    let mut merged: Option<Engine> = None;
    for e in engines {
        match &mut merged {
            None => merged = Some(e),
            Some(m) => m.add_counts(&e),
        }
    }
    merged
}
