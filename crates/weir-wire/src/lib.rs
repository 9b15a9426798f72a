//! Zero-copy decoding of captured frames into [`Packet`] records.
//!
//! `decode(link, frame, orig_len)` parses a frame once — link header,
//! IPv4/IPv6 (options, fragments, a bounded extension-header walk), then
//! TCP/UDP/SCTP/ICMP/ICMPv6 — into a small `Copy` record. It never panics on
//! any input: a frame that cannot be decoded becomes a record whose `l3` says
//! why. The flow is `decode.rs` → `link.rs` → `ip.rs` → `l4.rs`.
#![forbid(unsafe_code)]
// The no-panic contract, enforced: untrusted bytes are read through `get()`.
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

mod decode;
mod fields;
mod ip;
mod l4;
mod link;
mod packet;
pub mod proto;
#[cfg(test)]
mod tests;

pub use decode::{decode, decode_with, LinkType};
pub use fields::Fields;
pub use packet::*;
