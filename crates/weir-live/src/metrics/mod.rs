//! Prometheus metrics for any live mode. The packet thread publishes a
//! snapshot of its counters between batches (one uncontended lock per
//! publish, none per packet, and never a wait); a server on its own thread
//! renders the newest snapshot for each scrape.
//!
//! One call starts it: [`Metrics::serve`] binds the address and returns
//! the publishing end; between batches the packet loop calls
//! [`Metrics::publish_every`] with its engine and its own counters as
//! [`Sample`]s. Several packet threads with an engine each (capture
//! workers) take one [`Publisher`] each from [`serve_workers`]; scrapes
//! show their sum. A mode whose counters live elsewhere implements
//! [`Source`] and calls [`serve`] itself.

mod server;
mod slot;
mod snapshot;

pub use server::{
    answer, route, serve, Limits, Route, Server, Shared, Source, CONTENT_TYPE_0_0_4,
    MAX_REQUEST_BYTES,
};
pub use slot::{slot, slots, Latest, Publisher, RENDER_INTERVAL};
pub use snapshot::{Kind, RuleSample, Sample, Snapshot};

use crate::nfqueue::Queue;
use crate::reload::Reloader;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use weir_engine::Engine;

/// How often [`Metrics::publish_every`] publishes by default.
pub const PUBLISH_INTERVAL: Duration = Duration::from_millis(100);

/// Binds `addr` and serves the sum of `n` packet threads' counters: one
/// [`Publisher`] for each thread, with the default [`Limits`].
pub fn serve_workers(addr: SocketAddr, n: usize) -> io::Result<(Vec<Publisher>, Server)> {
    let (publishers, latest) = slots(n);
    Ok((publishers, serve(addr, latest, Limits::default())?))
}

/// A running server and the packet thread's end of it.
pub struct Metrics {
    publisher: Publisher,
    server: Server,
}

impl Metrics {
    /// Binds `addr` and serves `/metrics` with the default [`Limits`].
    pub fn serve(addr: SocketAddr) -> io::Result<Metrics> {
        Metrics::serve_with(addr, Limits::default())
    }

    pub fn serve_with(addr: SocketAddr, limits: Limits) -> io::Result<Metrics> {
        let (publisher, latest) = slot();
        let server = serve(addr, latest, limits)?;
        Ok(Metrics { publisher, server })
    }

    /// Where the server listens (the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// See [`Publisher::publish`].
    pub fn publish(&mut self, engine: &Engine, extra: &[Sample]) -> bool {
        self.publisher.publish(engine, extra)
    }

    /// See [`Publisher::publish_every`].
    pub fn publish_every(
        &mut self,
        interval: Duration,
        engine: &Engine,
        extra: impl FnOnce() -> Vec<Sample>,
    ) {
        self.publisher.publish_every(interval, engine, extra);
    }
}

/// Dynamic-state counts, when the ruleset keeps states.
pub fn state_samples(engine: &Engine) -> Vec<Sample> {
    let Some(t) = engine.states() else {
        return Vec::new();
    };
    let s = t.stats();
    let sample = |name, help, kind, labels, value| Sample {
        name,
        help,
        kind,
        labels,
        value,
    };
    vec![
        sample(
            "weir_states",
            "Dynamic states alive.",
            Kind::Gauge,
            "",
            s.live,
        ),
        sample(
            "weir_states_created_total",
            "Dynamic states made by keep-state, record-state and limit rules.",
            Kind::Counter,
            "",
            s.created,
        ),
        sample(
            "weir_states_expired_total",
            "Dynamic states that outlived their lifetime.",
            Kind::Counter,
            "",
            s.expired,
        ),
        sample(
            "weir_states_refused_total",
            "New states refused (the packet was denied).",
            Kind::Counter,
            "reason=\"full\"",
            s.refused_full,
        ),
        sample(
            "weir_states_refused_total",
            "New states refused (the packet was denied).",
            Kind::Counter,
            "reason=\"limit\"",
            s.refused_limit,
        ),
    ]
}

/// The queue's and the reloader's counters, beside the engine's (the
/// series `weir inline --metrics` serves besides every mode's).
pub fn queue_samples(queue: &Queue, reload: &Reloader<Engine>, engine: &Engine) -> Vec<Sample> {
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
    out.extend(state_samples(engine));
    out
}
