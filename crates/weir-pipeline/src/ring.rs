//! The AF_PACKET ring (`weir-capture`) as a [`Source`]: one socket of a
//! capture, its blocks handed out as batches, each frame with the kernel's
//! timestamp and direction, on the one interface the socket is bound to.

use crate::source::Source;
use crate::stop::Budget;
use weir_capture::{Capture, KernelStats, LinkKind};
use weir_engine::Verdict;
use weir_io::{Comments, Format, Frame, Interface};
use weir_wire::{Direction, LinkType};

/// How long one `poll` waits for an empty ring: the longest a signal or
/// the deadline waits to be noticed.
const POLL_MS: i32 = 50;

pub struct RingSource {
    cap: Capture,
    iface: [Interface; 1],
    /// On `lo` each packet shows up twice; the outgoing copy is skipped.
    loopback: bool,
    duplicates: u64,
}

impl RingSource {
    /// A source over `cap`, whose frames are kept up to `snaplen` bytes.
    pub fn new(cap: Capture, snaplen: u32) -> RingSource {
        let link = link_type(cap.link());
        let name = cap.iface().name.clone();
        RingSource {
            loopback: cap.link() == LinkKind::Loopback,
            cap,
            iface: [Interface {
                link_type: link,
                snaplen,
                name: Some(name),
            }],
            duplicates: 0,
        }
    }

    /// Outgoing copies on loopback left out so far.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// The socket's kernel counters (received, dropped), since the last call.
    pub fn stats(&mut self) -> Result<KernelStats, weir_capture::Error> {
        self.cap.stats()
    }
}

/// The link type of frames from a device of kind `link`.
pub fn link_type(link: LinkKind) -> LinkType {
    match link {
        LinkKind::RawIp => LinkType::RAW,
        LinkKind::Ethernet | LinkKind::Loopback => LinkType::ETHERNET,
    }
}

impl Source for RingSource {
    fn next_batch<F>(&mut self, budget: &Budget, mut each: F) -> Result<Option<usize>, String>
    where
        F: FnMut(&Frame<'_>, &[Interface]) -> Verdict,
    {
        let RingSource {
            cap,
            iface,
            loopback,
            duplicates,
        } = self;
        let Some(batch) = cap.next_batch(POLL_MS).map_err(|e| e.to_string())? else {
            return Ok(Some(0));
        };
        let is_dup = |f: &weir_capture::Frame<'_>| *loopback && f.outgoing();
        // -c is exact across workers: claim this batch's packets first.
        let wanted = if budget.is_limited() {
            let mut n = 0u64;
            batch.for_each(|f| n += u64::from(!is_dup(f)));
            n
        } else {
            batch.len() as u64
        };
        let mut left = budget.claim(wanted);
        let mut handed = 0;
        let link = iface[0].link_type;
        // Inlined into the block walk: as a call, about 15 instructions a
        // frame (callgrind).
        batch.for_each(
            #[inline(always)]
            |f| {
                if is_dup(f) {
                    *duplicates += 1;
                    return;
                }
                if left == 0 {
                    return;
                }
                left -= 1;
                handed += 1;
                let frame = Frame {
                    ts_ns: f.ts_ns,
                    iface: 0,
                    link_type: link,
                    orig_len: f.orig_len,
                    data: f.data,
                    direction: if f.outgoing() {
                        Direction::Out
                    } else {
                        Direction::In
                    },
                    comments: Comments::NONE,
                    offset: 0,
                };
                each(&frame, iface);
            },
        );
        budget.give_back(left);
        Ok(Some(handed))
    }

    fn interfaces(&self) -> &[Interface] {
        &self.iface
    }

    /// Microsecond pcap, as tcpdump writes.
    fn format(&self) -> Format {
        Format::Pcap {
            nanos: false,
            big_endian: false,
        }
    }
}
