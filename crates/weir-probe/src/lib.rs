//! weir-probe: measure the host's UDP/IP stack processing time, NetDyn-style
//! (1997), and what weir's filter adds per packet.
//!
//! The flow, in ten lines:
//! 1. The [`client`] sends trains of UDP datagrams; each carries a 32-byte
//!    probe header ([`wire`]) with its sequence number and train position.
//! 2. The [`server`] reads each with `recvmsg`; the kernel's software
//!    receive timestamp (`SO_TIMESTAMPING`) comes in a control message, and
//!    the server reads `CLOCK_REALTIME` right after. Both go into the echo.
//! 3. With a filter hook (`weir probe server --through RULES`), the server
//!    builds a `weir_wire::Packet` and times the engine's decision too.
//! 4. The client computes the round trip, the server's stack time and, with
//!    its own timestamps, its own; [`stats`] gives percentiles, [`report`]
//!    the table and JSON, [`plot`] a small SVG of the distributions.
//!
//! Only [`sys`] talks to the kernel; it is the one module allowed `unsafe`.

pub mod client;
pub mod plot;
pub mod report;
pub mod server;
pub mod stats;
// The socket, timestamp and signal system calls need `unsafe`; only here.
#[allow(unsafe_code)]
pub mod sys;
pub mod wire;

/// Why a probe could not run (set-up only; the per-packet paths count, they
/// do not fail).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad setting (size too small, no sizes, …).
    #[error("{0}")]
    Config(String),
    /// A socket call failed.
    #[error("{0}: {1}")]
    Io(&'static str, #[source] std::io::Error),
}
