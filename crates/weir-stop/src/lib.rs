//! The one stop signal of every mode: SIGINT/SIGTERM (when asked for),
//! a deadline, a spent `-c` budget or a failure. The first reason wins;
//! the pipeline's workers look at it between batches, never per packet,
//! and `weir probe server` between datagrams.
//!
//! The handler is signal-hook's, installed with `SA_RESTART`. A loop that
//! blocks in a receive must give that receive a timeout (`SO_RCVTIMEO`,
//! or `poll` with one): Linux never restarts such a call after a handler
//! (signal(7)), so it returns `EINTR` and the loop looks at the flag.
#![forbid(unsafe_code)]

use serde::Serialize;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why a run ended (`"stopped_by"` in capture's JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum Reason {
    Running = 0,
    /// The input ended.
    End,
    Count,
    Signal,
    Duration,
    Error,
}

impl Reason {
    const ALL: [Reason; 6] = [
        Reason::Running,
        Reason::End,
        Reason::Count,
        Reason::Signal,
        Reason::Duration,
        Reason::Error,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Reason::Running => "running",
            Reason::End => "end",
            Reason::Count => "count",
            Reason::Signal => "signal",
            Reason::Duration => "duration",
            Reason::Error => "error",
        }
    }
}

/// Shared by every worker of a run (and the signal handler).
pub struct Stop {
    signalled: Arc<AtomicBool>,
    reason: AtomicU8,
    deadline: Option<Instant>,
}

impl Stop {
    /// Stops only when told, or after `limit` (from now).
    pub fn new(limit: Option<Duration>) -> Stop {
        Stop {
            signalled: Arc::new(AtomicBool::new(false)),
            reason: AtomicU8::new(Reason::Running as u8),
            deadline: limit.map(|d| Instant::now() + d),
        }
    }

    /// Also stops on SIGINT or SIGTERM (a second signal still only asks):
    /// the loop finishes its batch, and the command its summary.
    pub fn on_signals(limit: Option<Duration>) -> io::Result<Stop> {
        let stop = Stop::new(limit);
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, Arc::clone(&stop.signalled))?;
        }
        Ok(stop)
    }

    /// Records why the run stops; an earlier reason stays.
    pub fn set(&self, why: Reason) {
        let _ = self
            .reason
            .compare_exchange(Reason::Running as u8, why as u8, Relaxed, Relaxed);
    }

    pub fn reason(&self) -> Reason {
        let r = self.reason.load(Relaxed);
        Reason::ALL
            .into_iter()
            .find(|x| *x as u8 == r)
            .unwrap_or(Reason::Error)
    }

    /// Whether to stop now, noticing a signal and the deadline. Between
    /// batches: it reads the clock (a vDSO call, no system call).
    pub fn requested(&self) -> bool {
        if self.signalled.load(Relaxed) {
            self.set(Reason::Signal);
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.set(Reason::Duration);
        }
        self.reason() != Reason::Running
    }
}

/// The `-c` packet budget, exact across workers: each claims its batch's
/// packets at once, and gives back what it did not use.
pub struct Budget(Option<std::sync::atomic::AtomicU64>);

impl Budget {
    /// At most `count` packets; no limit for `None`.
    pub fn new(count: Option<u64>) -> Budget {
        Budget(count.map(std::sync::atomic::AtomicU64::new))
    }

    /// Takes up to `want` packets; returns how many.
    pub fn claim(&self, want: u64) -> u64 {
        let Some(b) = &self.0 else { return want };
        let mut cur = b.load(Relaxed);
        loop {
            let take = cur.min(want);
            match b.compare_exchange_weak(cur, cur - take, Relaxed, Relaxed) {
                Ok(_) => return take,
                Err(now) => cur = now,
            }
        }
    }

    /// Returns packets claimed and not used.
    pub fn give_back(&self, n: u64) {
        if let (Some(b), 1..) = (&self.0, n) {
            b.fetch_add(n, Relaxed);
        }
    }

    /// Whether there is a limit at all.
    pub fn is_limited(&self) -> bool {
        self.0.is_some()
    }

    pub fn exhausted(&self) -> bool {
        self.0.as_ref().is_some_and(|b| b.load(Relaxed) == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_claims_exactly_and_takes_back_what_was_not_used() {
        let b = Budget::new(Some(10));
        assert_eq!(b.claim(4), 4);
        assert_eq!(b.claim(8), 6);
        assert!(b.exhausted());
        b.give_back(3);
        assert!(!b.exhausted());
        assert_eq!(b.claim(64), 3);
        assert_eq!(Budget::new(None).claim(64), 64);
        assert!(!Budget::new(None).exhausted());
    }

    #[test]
    fn the_first_reason_wins_and_a_deadline_is_noticed() {
        let s = Stop::new(None);
        assert!(!s.requested());
        s.set(Reason::Count);
        s.set(Reason::Error);
        assert_eq!(s.reason(), Reason::Count);
        let d = Stop::new(Some(Duration::ZERO));
        assert!(d.requested());
        assert_eq!(d.reason().name(), "duration");
    }
}
