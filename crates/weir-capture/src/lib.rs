//! Live capture on Linux AF_PACKET sockets, written against libc (no libpcap).
//!
//! The flow: [`Iface::lookup`] names the interface → [`open`] makes the
//! socket in the 2014 order (protocol 0 in `socket()`, options and the
//! ring, `mmap`, then `bind()` with the protocol and interface, then
//! fanout) and records each step → [`Capture::next_batch`] waits for a
//! filled TPACKET_V3 block (or a run of TPACKET_V2 frames) and hands out a
//! [`Batch`] whose [`Frame`]s are zero-copy slices of the ring; dropping
//! the batch gives the memory back to the kernel → [`Capture::stats`] reads
//! the kernel's PACKET_STATISTICS. [`sockbench`] times the three set-up
//! variants of the 2014 measurement.
//!
//! All `unsafe` lives in `sys`.

mod ring;
pub mod sockbench;
mod socket;
mod sys;

pub use ring::{v2_frame, walk_v3_block, Batch, Frame, Layout, RingMode, PACKET_OUTGOING};
pub use socket::{open, set_up, Capture, Config, Kernel, KernelStats, Opt, Step, Sys};
pub use sys::{drop_privileges, enter_netns, Iface, LinkKind};

/// `ETH_P_ALL`: every protocol, as tcpdump captures.
pub const ETH_P_ALL: u16 = 0x0003;

/// Why a capture could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call failed; `what` names it as strace would.
    #[error("{what}: {source}")]
    Sys {
        what: &'static str,
        source: std::io::Error,
    },
    /// The interface's link type is not one weir decodes.
    #[error(
        "{iface}: link type ARPHRD {hatype} is not supported (Ethernet, loopback and raw IP are)"
    )]
    LinkType { iface: String, hatype: u16 },
    /// A size the kernel would refuse, caught before asking it.
    #[error("{0}")]
    Config(String),
}

impl Error {
    pub(crate) fn sys(what: &'static str) -> impl FnOnce(std::io::Error) -> Error {
        move |source| Error::Sys { what, source }
    }
}
