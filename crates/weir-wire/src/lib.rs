//! Zero-copy decoding of captured frames into [`Packet`] records.
//!
//! `decode(link, frame, orig_len)` parses a frame once — link header,
//! IPv4/IPv6 (options, fragments, a bounded extension-header walk), then
//! TCP/UDP/ICMP/ICMPv6 — into a small `Copy` record. It never panics on any
//! input: a frame that cannot be decoded becomes a record whose `l3` says why.
#![forbid(unsafe_code)]

mod decode;
mod packet;

pub use decode::{decode, LinkType};
pub use packet::*;
