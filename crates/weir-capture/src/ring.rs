//! The RX ring: its layout, and the walk over what the kernel filled.
//!
//! TPACKET_V3 (throughput): the kernel packs variable-size packets into
//! blocks and hands over a whole block at once (when full, or after the
//! block timeout). TPACKET_V2 (`--immediate`, low latency): fixed-size
//! frames, each handed over as soon as it is written. libpcap makes the
//! same choice. Headers are read at fixed offsets (`mod v3`, `mod v2`) from
//! byte slices, so the walks are plain safe code and testable on made-up
//! blocks; a frame's bytes are slices of the ring, never copied.

use crate::sys::Mmap;

/// Which ring layout to ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingMode {
    /// TPACKET_V3 blocks: fewest wake-ups, highest rate.
    Blocks,
    /// TPACKET_V2 frames: each packet is visible as soon as it lands.
    Immediate,
}

/// `PACKET_OUTGOING` from linux/if_packet.h.
pub const PACKET_OUTGOING: u8 = 4;
/// `TP_STATUS_VLAN_VALID`: the kernel stripped a VLAN tag into the header.
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
/// `TPACKET_ALIGNMENT`.
const ALIGN: usize = 16;
/// Offset of `sll_pkttype` in `struct sockaddr_ll`.
const SLL_PKTTYPE: usize = 10;

const fn align(n: usize) -> usize {
    (n + ALIGN - 1) & !(ALIGN - 1)
}

/// `struct tpacket_block_desc` and `struct tpacket3_hdr` field offsets.
mod v3 {
    pub const BLOCK_STATUS: usize = 8;
    pub const NUM_PKTS: usize = 12;
    pub const FIRST_PKT: usize = 16;
    pub const NEXT: usize = 0;
    pub const SEC: usize = 4;
    pub const NSEC: usize = 8;
    pub const SNAPLEN: usize = 12;
    pub const LEN: usize = 16;
    pub const STATUS: usize = 20;
    pub const MAC: usize = 24;
    pub const VLAN_TCI: usize = 32;
    /// sizeof(struct tpacket3_hdr); the sockaddr_ll follows, aligned.
    pub const HDR: usize = 48;
}

/// `struct tpacket2_hdr` field offsets.
mod v2 {
    pub const STATUS: usize = 0;
    pub const LEN: usize = 4;
    pub const SNAPLEN: usize = 8;
    pub const MAC: usize = 12;
    pub const SEC: usize = 16;
    pub const NSEC: usize = 20;
    pub const VLAN_TCI: usize = 24;
    /// sizeof(struct tpacket2_hdr).
    pub const HDR: usize = 32;
}

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(off..off + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

/// One captured frame, borrowed from the ring for the life of its batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The captured bytes from the link header on (at most the snap length).
    pub data: &'a [u8],
    /// Length on the wire.
    pub orig_len: u32,
    /// Kernel receive time, ns since the epoch.
    pub ts_ns: u64,
    /// `sll_pkttype`: PACKET_HOST, PACKET_OUTGOING, …
    pub pkttype: u8,
    /// A VLAN tag the kernel stripped from the frame, if any.
    pub vlan_tci: Option<u16>,
}

impl Frame<'_> {
    /// Sent by this host (as opposed to received).
    #[inline]
    pub fn outgoing(&self) -> bool {
        self.pkttype == PACKET_OUTGOING
    }
}

/// Parses one `tpacket3_hdr` at `off` of a block; `None` when any field
/// points outside the block (never trusted to be right).
fn v3_frame(block: &[u8], off: usize) -> Option<(Frame<'_>, u32)> {
    let h = block.get(off..off.checked_add(v3::HDR)?)?;
    let mac = usize::from(u16_at(h, v3::MAC)?);
    let snap = u32_at(h, v3::SNAPLEN)? as usize;
    let start = off.checked_add(mac)?;
    let status = u32_at(h, v3::STATUS)?;
    let frame = Frame {
        data: block.get(start..start.checked_add(snap)?)?,
        orig_len: u32_at(h, v3::LEN)?,
        ts_ns: ts(u32_at(h, v3::SEC)?, u32_at(h, v3::NSEC)?),
        pkttype: *block.get(off + align(v3::HDR) + SLL_PKTTYPE)?,
        vlan_tci: (status & TP_STATUS_VLAN_VALID != 0)
            .then(|| u32_at(h, v3::VLAN_TCI).map(|t| t as u16))
            .flatten(),
    };
    Some((frame, u32_at(h, v3::NEXT)?))
}

/// Calls `f` for each packet of a V3 block; returns how many it saw. A
/// header pointing out of the block ends the walk there.
pub fn walk_v3_block<'b>(block: &'b [u8], mut f: impl FnMut(&Frame<'b>)) -> usize {
    let (Some(num), Some(first)) = (u32_at(block, v3::NUM_PKTS), u32_at(block, v3::FIRST_PKT))
    else {
        return 0;
    };
    let mut off = first as usize;
    for seen in 0..num as usize {
        let Some((frame, next)) = v3_frame(block, off) else {
            return seen;
        };
        f(&frame);
        if next == 0 {
            return seen + 1;
        }
        off = off.saturating_add(next as usize);
    }
    num as usize
}

/// Parses one V2 frame slot.
pub fn v2_frame(slot: &[u8]) -> Option<Frame<'_>> {
    let mac = usize::from(u16_at(slot, v2::MAC)?);
    let snap = u32_at(slot, v2::SNAPLEN)? as usize;
    let status = u32_at(slot, v2::STATUS)?;
    Some(Frame {
        data: slot.get(mac..mac.checked_add(snap)?)?,
        orig_len: u32_at(slot, v2::LEN)?,
        ts_ns: ts(u32_at(slot, v2::SEC)?, u32_at(slot, v2::NSEC)?),
        pkttype: *slot.get(align(v2::HDR) + SLL_PKTTYPE)?,
        vlan_tci: (status & TP_STATUS_VLAN_VALID != 0)
            .then(|| u16_at(slot, v2::VLAN_TCI))
            .flatten(),
    })
}

fn ts(sec: u32, nsec: u32) -> u64 {
    u64::from(sec) * 1_000_000_000 + u64::from(nsec)
}

/// Sizes of a ring, as `tpacket_req`/`tpacket_req3` want them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub mode: RingMode,
    pub block_size: u32,
    pub block_nr: u32,
    pub frame_size: u32,
    pub frame_nr: u32,
}

/// V3 block size: big enough for a 64 KiB GSO packet, small enough that a
/// 2 MiB buffer (tcpdump's default) still has 8 blocks to rotate.
const V3_BLOCK: usize = 256 * 1024;
/// V3 ignores the frame size for layout; the kernel only checks it.
const V3_FRAME: usize = 2048;
/// Offset of the MAC header in a V2 frame for a 14-byte link header: the
/// kernel's `TPACKET_ALIGN(TPACKET2_HDRLEN + 16)`.
const V2_NETOFF: usize = align(align(v2::HDR) + 20 + 16);

impl Layout {
    /// The ring for `buffer` bytes. V2 frames hold `min(snaplen, mtu +
    /// 18)` bytes of packet (larger offloaded packets are cut, their
    /// original length kept).
    pub fn plan(
        mode: RingMode,
        buffer: usize,
        snaplen: u32,
        mtu: u32,
        page: usize,
    ) -> Result<Layout, String> {
        let too_big = || format!("buffer of {buffer} bytes is too large");
        let layout = match mode {
            RingMode::Blocks => {
                let mut block = V3_BLOCK;
                while block > page && buffer / block < 2 {
                    block /= 2;
                }
                let block_nr = (buffer / block).max(2);
                Layout {
                    mode,
                    block_size: u32::try_from(block).map_err(|_| too_big())?,
                    block_nr: u32::try_from(block_nr).map_err(|_| too_big())?,
                    frame_size: V3_FRAME as u32,
                    frame_nr: u32::try_from(block / V3_FRAME * block_nr).map_err(|_| too_big())?,
                }
            }
            RingMode::Immediate => {
                let data = (snaplen as usize).min(mtu as usize + 18).max(64);
                let frame = align(V2_NETOFF + data);
                let mut block = page;
                while block < frame {
                    block *= 2;
                }
                let block_nr = (buffer / block).max(2);
                let per_block = block / frame;
                Layout {
                    mode,
                    block_size: u32::try_from(block).map_err(|_| too_big())?,
                    block_nr: u32::try_from(block_nr).map_err(|_| too_big())?,
                    frame_size: u32::try_from(frame).map_err(|_| too_big())?,
                    frame_nr: u32::try_from(per_block * block_nr).map_err(|_| too_big())?,
                }
            }
        };
        Ok(layout)
    }

    /// Bytes to map.
    pub fn bytes(&self) -> usize {
        self.block_size as usize * self.block_nr as usize
    }

    fn frames_per_block(&self) -> usize {
        (self.block_size / self.frame_size) as usize
    }

    /// Offset of V2 frame `i` (frames never straddle blocks).
    fn frame_offset(&self, i: usize) -> usize {
        let per = self.frames_per_block();
        (i / per) * self.block_size as usize + (i % per) * self.frame_size as usize
    }
}

/// The mapped ring and where the next batch starts.
pub(crate) struct Ring {
    map: Mmap,
    layout: Layout,
    /// Next block (V3) or frame (V2) to look at.
    next: usize,
}

impl Ring {
    pub(crate) fn new(map: Mmap, layout: Layout) -> Ring {
        Ring {
            map,
            layout,
            next: 0,
        }
    }

    /// Status word of block or frame `i`.
    fn status_offset(&self, i: usize) -> usize {
        match self.layout.mode {
            RingMode::Blocks => i * self.layout.block_size as usize + v3::BLOCK_STATUS,
            RingMode::Immediate => self.layout.frame_offset(i) + v2::STATUS,
        }
    }

    fn range(&self, i: usize) -> std::ops::Range<usize> {
        let (start, len) = match self.layout.mode {
            RingMode::Blocks => (
                i * self.layout.block_size as usize,
                self.layout.block_size as usize,
            ),
            RingMode::Immediate => (self.layout.frame_offset(i), self.layout.frame_size as usize),
        };
        start..start + len
    }

    fn slots(&self) -> usize {
        match self.layout.mode {
            RingMode::Blocks => self.layout.block_nr as usize,
            RingMode::Immediate => self.layout.frame_nr as usize,
        }
    }

    /// Whether the next block or frame is filled.
    pub(crate) fn ready(&self) -> bool {
        self.user_owns(self.next)
    }

    fn user_owns(&self, i: usize) -> bool {
        self.map.status(self.status_offset(i)) & libc::TP_STATUS_USER != 0
    }

    /// The next filled block, or run of filled frames, if any.
    pub(crate) fn take(&mut self) -> Option<Batch<'_>> {
        let first = self.next;
        if !self.user_owns(first) {
            return None;
        }
        let (slots, packets) = match self.layout.mode {
            RingMode::Blocks => {
                let num = self
                    .map
                    .owned(self.status_offset(first), self.range(first))
                    .and_then(|b| u32_at(b, v3::NUM_PKTS))
                    .unwrap_or(0);
                (1, num as usize)
            }
            RingMode::Immediate => {
                let total = self.slots();
                let mut n = 1;
                while n < total && self.user_owns((first + n) % total) {
                    n += 1;
                }
                (n, n)
            }
        };
        Some(Batch {
            ring: self,
            first,
            slots,
            packets,
        })
    }
}

/// A filled block (V3) or run of frames (V2), user space's until dropped.
pub struct Batch<'a> {
    ring: &'a mut Ring,
    first: usize,
    slots: usize,
    packets: usize,
}

impl Batch<'_> {
    /// Packets the kernel says the batch holds.
    pub fn len(&self) -> usize {
        self.packets
    }

    pub fn is_empty(&self) -> bool {
        self.packets == 0
    }

    /// Calls `f` with each frame, in ring order. The frames borrow the
    /// batch: they may be kept until it is handed back (dropped).
    pub fn for_each<'s>(&'s self, mut f: impl FnMut(&Frame<'s>)) {
        let ring = &*self.ring;
        let total = ring.slots();
        for k in 0..self.slots {
            let i = (self.first + k) % total;
            let Some(bytes) = ring.map.owned(ring.status_offset(i), ring.range(i)) else {
                continue;
            };
            match ring.layout.mode {
                RingMode::Blocks => {
                    walk_v3_block(bytes, &mut f);
                }
                RingMode::Immediate => {
                    if let Some(fr) = v2_frame(bytes) {
                        f(&fr);
                    }
                }
            }
        }
    }
}

impl Drop for Batch<'_> {
    /// Hands the block or frames back to the kernel, in order.
    fn drop(&mut self) {
        let total = self.ring.slots();
        for k in 0..self.slots {
            let off = self.ring.status_offset((self.first + k) % total);
            self.ring.map.release(off);
        }
        self.ring.next = (self.first + self.slots) % total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put16(b: &mut [u8], off: usize, v: u16) {
        b[off..off + 2].copy_from_slice(&v.to_ne_bytes());
    }
    fn put32(b: &mut [u8], off: usize, v: u32) {
        b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }

    /// A V3 block as the kernel lays it out: packets at 16-aligned offsets,
    /// each header followed by a sockaddr_ll, data at `tp_mac`.
    fn v3_block(packets: &[(&[u8], u32, u8)]) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        put32(&mut b, v3::BLOCK_STATUS, libc::TP_STATUS_USER);
        put32(&mut b, v3::NUM_PKTS, packets.len() as u32);
        put32(&mut b, v3::FIRST_PKT, 48);
        let mut off = 48;
        for (k, (data, len, pkttype)) in packets.iter().enumerate() {
            let mac = 82; // as the kernel: align(48 + 20 + 16) - 14 + ...
            let next = align(mac + data.len());
            put32(
                &mut b,
                off + v3::NEXT,
                if k + 1 == packets.len() {
                    0
                } else {
                    next as u32
                },
            );
            put32(&mut b, off + v3::SEC, 1_700_000_000 + k as u32);
            put32(&mut b, off + v3::NSEC, 5);
            put32(&mut b, off + v3::SNAPLEN, data.len() as u32);
            put32(&mut b, off + v3::LEN, *len);
            put16(&mut b, off + v3::MAC, mac as u16);
            b[off + align(v3::HDR) + SLL_PKTTYPE] = *pkttype;
            b[off + mac..off + mac + data.len()].copy_from_slice(data);
            off += next;
        }
        b
    }

    #[test]
    fn v3_walk_yields_every_packet_with_its_fields() {
        let block = v3_block(&[(b"first", 60, 0), (b"second!", 1514, PACKET_OUTGOING)]);
        let mut seen = Vec::new();
        let n = walk_v3_block(&block, |f| {
            seen.push((f.data.to_vec(), f.orig_len, f.ts_ns, f.outgoing()))
        });
        assert_eq!(n, 2);
        assert_eq!(
            seen,
            vec![
                (b"first".to_vec(), 60, 1_700_000_000_000_000_005, false),
                (b"second!".to_vec(), 1514, 1_700_000_001_000_000_005, true),
            ]
        );
    }

    #[test]
    fn v3_walk_stops_at_a_header_pointing_outside_the_block() {
        let mut block = v3_block(&[(b"a", 1, 0), (b"b", 1, 0), (b"c", 1, 0)]);
        // Second packet's snap length runs off the block.
        let second = 48 + align(82 + 1);
        put32(&mut block, second + v3::SNAPLEN, 1 << 20);
        let mut n = 0;
        assert_eq!(walk_v3_block(&block, |_| n += 1), 1);
        assert_eq!(n, 1);
        // And a lying packet count cannot make it read past the end.
        let mut block = v3_block(&[(b"a", 1, 0)]);
        put32(&mut block, v3::NUM_PKTS, u32::MAX);
        assert_eq!(walk_v3_block(&block, |_| {}), 1);
        assert_eq!(walk_v3_block(&[0u8; 10], |_| {}), 0);
    }

    #[test]
    fn v2_frame_reads_header_and_data() {
        let mut slot = vec![0u8; 256];
        put32(
            &mut slot,
            v2::STATUS,
            libc::TP_STATUS_USER | TP_STATUS_VLAN_VALID,
        );
        put32(&mut slot, v2::LEN, 99);
        put32(&mut slot, v2::SNAPLEN, 4);
        put16(&mut slot, v2::MAC, 66);
        put32(&mut slot, v2::SEC, 2);
        put32(&mut slot, v2::NSEC, 3);
        put16(&mut slot, v2::VLAN_TCI, 42);
        slot[align(v2::HDR) + SLL_PKTTYPE] = PACKET_OUTGOING;
        slot[66..70].copy_from_slice(b"abcd");
        let f = v2_frame(&slot).unwrap();
        assert_eq!(f.data, b"abcd");
        assert_eq!(
            (f.orig_len, f.ts_ns, f.vlan_tci),
            (99, 2_000_000_003, Some(42))
        );
        assert!(f.outgoing());
        put32(&mut slot, v2::SNAPLEN, 1000);
        assert!(v2_frame(&slot).is_none(), "data past the slot");
    }

    #[test]
    fn layouts_satisfy_the_kernels_checks() {
        // packet_set_ring: block a multiple of the page size, frame aligned,
        // frames_per_block * block_nr == frame_nr, header fits the frame.
        for mode in [RingMode::Blocks, RingMode::Immediate] {
            for buffer in [64 << 10, 2 << 20, 32 << 20] {
                for (snap, mtu) in [
                    (262_144, 1500),
                    (96, 1500),
                    (262_144, 9000),
                    (65_535, 65_536),
                ] {
                    let l = Layout::plan(mode, buffer, snap, mtu, 4096).unwrap();
                    assert_eq!(l.block_size % 4096, 0, "{l:?}");
                    assert!(l.block_size.is_power_of_two(), "{l:?}");
                    assert_eq!(l.frame_size as usize % ALIGN, 0, "{l:?}");
                    assert!(l.frame_size as usize >= V2_NETOFF, "{l:?}");
                    assert_eq!(
                        l.frames_per_block() * l.block_nr as usize,
                        l.frame_nr as usize
                    );
                    assert!(l.block_nr >= 2);
                    if mode == RingMode::Immediate {
                        let data = (snap as usize).min(mtu as usize + 18);
                        assert!(l.frame_size as usize >= V2_NETOFF + data, "{l:?}");
                    }
                }
            }
        }
        let l = Layout::plan(RingMode::Blocks, 2 << 20, 262_144, 1500, 4096).unwrap();
        assert_eq!((l.block_size, l.block_nr), (256 << 10, 8));
    }

    #[test]
    fn v2_frame_offsets_never_straddle_blocks() {
        let l = Layout::plan(RingMode::Immediate, 1 << 20, 262_144, 1500, 4096).unwrap();
        for i in 0..l.frame_nr as usize {
            let off = l.frame_offset(i);
            let block = off / l.block_size as usize;
            assert_eq!(
                (off + l.frame_size as usize - 1) / l.block_size as usize,
                block
            );
        }
        assert!(l.frame_offset(l.frame_nr as usize - 1) + l.frame_size as usize <= l.bytes());
    }
}
