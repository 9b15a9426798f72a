//! `weir sockbench`: the 2014 measurement of packet-socket set-up cost.
//!
//! Three ways to get a packet socket bound for `ETH_P_ALL`, each timed from
//! before `socket()` to after `bind()` (the `close()` is outside the clock):
//!
//! 1. protocol in `socket()`, `bind()` to all interfaces (ifindex 0);
//! 2. protocol in `socket()`, `bind()` to one interface: the socket is
//!    already hooked, so bind must unhook it and wait for
//!    `synchronize_net()`, the slow path the 2014 fix measured at 7447 µs;
//! 3. protocol 0 in `socket()`, the protocol in `bind()` to one interface:
//!    nothing to unhook (75 µs in 2014).
//!
//! It runs in a network namespace of its own (a new thread `unshare`s one,
//! so the host's interfaces and traffic play no part), and interleaves the
//! cases run by run so that machine noise falls on all three alike.

use crate::sys;
use crate::{Error, ETH_P_ALL};
use std::time::{Duration, Instant};

/// One of the three set-ups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    ProtoInSocketBindAll,
    ProtoInSocketBindOne,
    ProtoInBind,
}

impl Case {
    pub const ALL: [Case; 3] = [
        Case::ProtoInSocketBindAll,
        Case::ProtoInSocketBindOne,
        Case::ProtoInBind,
    ];

    /// Short stable name for tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Case::ProtoInSocketBindAll => "proto-in-socket-bind-all",
            Case::ProtoInSocketBindOne => "proto-in-socket-bind-one",
            Case::ProtoInBind => "proto-0-then-bind",
        }
    }

    /// The calls, as strace would show them.
    pub fn calls(self) -> &'static str {
        match self {
            Case::ProtoInSocketBindAll => {
                "socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)); bind(ifindex 0)"
            }
            Case::ProtoInSocketBindOne => {
                "socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)); bind(ETH_P_ALL, lo)"
            }
            Case::ProtoInBind => "socket(AF_PACKET, SOCK_RAW, 0); bind(ETH_P_ALL, lo)",
        }
    }

    /// The 2014 numbers, in µs (the fix's commit message).
    pub fn reported_2014_us(self) -> f64 {
        match self {
            Case::ProtoInSocketBindAll => 89.0,
            Case::ProtoInSocketBindOne => 7447.0,
            Case::ProtoInBind => 75.0,
        }
    }

    /// Times one socket()+bind(); the socket is closed after the clock stops.
    fn once(self, ifindex: i32) -> Result<Duration, Error> {
        let (proto, bind_to) = match self {
            Case::ProtoInSocketBindAll => (ETH_P_ALL, 0),
            Case::ProtoInSocketBindOne => (ETH_P_ALL, ifindex),
            Case::ProtoInBind => (0, ifindex),
        };
        let t0 = Instant::now();
        let fd = sys::packet_socket(proto).map_err(Error::sys("socket(AF_PACKET)"))?;
        sys::bind_packet(std::os::fd::AsRawFd::as_raw_fd(&fd), ETH_P_ALL, bind_to)
            .map_err(Error::sys("bind(AF_PACKET)"))?;
        let dt = t0.elapsed();
        drop(fd);
        Ok(dt)
    }
}

/// Timings of one case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub case: Case,
    /// Every run, in µs, sorted.
    pub samples_us: Vec<f64>,
}

impl CaseResult {
    /// The `q` quantile (0..=1; `weir_stats::METHOD`), 0 for no samples.
    pub fn percentile(&self, q: f64) -> f64 {
        weir_stats::quantile(&self.samples_us, q).unwrap_or(0.0)
    }
    pub fn median(&self) -> f64 {
        self.percentile(0.5)
    }
    pub fn p99(&self) -> f64 {
        self.percentile(0.99)
    }
}

/// Runs every case `runs` times (after `warmup` untimed rounds) in a fresh
/// network namespace, bound to its `lo`.
pub fn run(runs: usize, warmup: usize) -> Result<Vec<CaseResult>, Error> {
    std::thread::scope(|s| {
        s.spawn(|| {
            sys::unshare_net().map_err(Error::sys("unshare(CLONE_NEWNET)"))?;
            let lo = sys::Iface::lookup("lo").map_err(Error::sys("SIOCGIFINDEX(lo)"))?;
            run_here(runs, warmup, lo.index)
        })
        .join()
        .unwrap_or_else(|_| Err(Error::Config("sockbench thread panicked".into())))
    })
}

/// As [`run`], in the caller's namespace, bound to `ifindex`.
pub fn run_here(runs: usize, warmup: usize, ifindex: i32) -> Result<Vec<CaseResult>, Error> {
    let mut results: Vec<CaseResult> = Case::ALL
        .iter()
        .map(|&case| CaseResult {
            case,
            samples_us: Vec::with_capacity(runs),
        })
        .collect();
    for round in 0..warmup + runs {
        for r in &mut results {
            let dt = r.case.once(ifindex)?;
            if round >= warmup {
                r.samples_us.push(dt.as_secs_f64() * 1e6);
            }
        }
    }
    for r in &mut results {
        r.samples_us.sort_by(f64::total_cmp);
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_percentiles() {
        let r = |samples_us: Vec<f64>| CaseResult {
            case: Case::ProtoInBind,
            samples_us,
        };
        let hundred = r((1..=100).map(f64::from).collect());
        assert_eq!((hundred.median(), hundred.p99()), (50.0, 99.0));
        assert_eq!(
            (hundred.percentile(0.0), hundred.percentile(1.0)),
            (1.0, 100.0)
        );
        assert_eq!(r(vec![]).median(), 0.0);
    }
}
