//! weir-bench: the instruments behind `weir bench` and `weir calibrate`.
//!
//! - [`clock`]: a cheap clock (rdtsc on x86_64, calibrated against
//!   `Instant`; `Instant` elsewhere) and its own measured overhead.
//! - [`observe`]: a per-rule timing [`weir_engine::Observer`].
//! - [`bench`]: replays packets held in memory through an engine: packets/s,
//!   per-packet cost percentiles, rules and instructions per packet, each
//!   rule's share of the time.
//! - [`calibrate`]: the ipfw profile repeated: synthetic k×m rulesets, a
//!   least-squares fit of ns per rule header and per micro-instruction, and
//!   libpcap's BPF interpreter measured the same way ([`bpf`]).
//! - [`fit`]: least squares.
//!
//! Percentiles, medians and the CDF plot come from `weir_stats`.

pub mod bench;
pub mod bpf;
pub mod calibrate;
// `_rdtsc` is still an unsafe intrinsic; this is its one call.
#[allow(unsafe_code)]
pub mod clock;
pub mod fit;
pub mod observe;
