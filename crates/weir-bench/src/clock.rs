//! A cheap clock for per-packet and per-rule timing.
//!
//! On x86_64 it reads the time-stamp counter (`rdtsc`: a few ns, no system
//! call, no fence, so a read may drift by a few instructions either way);
//! [`Clock::calibrate`] converts ticks to ns against `Instant` over a short
//! spin. Elsewhere it falls back to `Instant` (vDSO `clock_gettime`, also no
//! system call, but slower). Either way the clock's own cost is measured
//! with back-to-back reads and reported beside every figure it produced.

use serde::Serialize;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Reads the clock, in ticks.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc only reads the time-stamp counter; it has no
        // preconditions and touches no memory.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static BASE: OnceLock<Instant> = OnceLock::new();
        BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// Name of the clock [`ticks`] reads.
pub const KIND: &str = if cfg!(target_arch = "x86_64") {
    "rdtsc"
} else {
    "instant"
};

/// The clock's rate and its own cost.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Clock {
    /// "rdtsc" or "instant".
    pub kind: &'static str,
    /// Nanoseconds per tick (1.0 for `instant`).
    pub ns_per_tick: f64,
    /// Median of back-to-back reads: what one read adds to a measurement.
    pub overhead_ns: f64,
    /// Smallest back-to-back difference seen.
    pub overhead_min_ns: f64,
}

impl Clock {
    /// Measures the tick rate against `Instant` (about 50 ms) and the
    /// overhead of one read. Done once per process.
    pub fn calibrate() -> Clock {
        static CLOCK: OnceLock<Clock> = OnceLock::new();
        *CLOCK.get_or_init(|| {
            let ns_per_tick = if KIND == "instant" {
                1.0
            } else {
                rate(Duration::from_millis(50))
            };
            let (median, min) = overhead_ticks(100_000);
            Clock {
                kind: KIND,
                ns_per_tick,
                overhead_ns: median * ns_per_tick,
                overhead_min_ns: min * ns_per_tick,
            }
        })
    }

    #[inline]
    pub fn ns(&self, ticks: u64) -> f64 {
        ticks as f64 * self.ns_per_tick
    }
}

/// Ticks per ns measured over a spin of `span`; the median of three.
fn rate(span: Duration) -> f64 {
    let mut rates: Vec<f64> = (0..3)
        .map(|_| {
            let (i0, t0) = (Instant::now(), ticks());
            while i0.elapsed() < span / 3 {
                std::hint::spin_loop();
            }
            let (t1, i1) = (ticks(), Instant::now());
            (i1 - i0).as_nanos() as f64 / (t1.wrapping_sub(t0)).max(1) as f64
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    weir_stats::median(&rates).unwrap_or(1.0)
}

/// Median and minimum of `n` back-to-back read differences, in ticks.
fn overhead_ticks(n: usize) -> (f64, f64) {
    let mut d: Vec<u64> = (0..n)
        .map(|_| {
            let a = ticks();
            let b = ticks();
            b.wrapping_sub(a)
        })
        .collect();
    d.sort_unstable();
    let at = |q| weir_stats::quantile(&d, q).unwrap_or(0) as f64;
    (at(0.5), at(0.0))
}
