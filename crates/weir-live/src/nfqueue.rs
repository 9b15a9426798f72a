//! An NFQUEUE binding: receive packets in batches, answer each with one
//! verdict, all of a batch's verdicts in one send.
//!
//! Written on netlink directly rather than with the `nfq` crate: nfq 0.2
//! sends one verdict per system call and queues a `Message` per packet,
//! while here a batch of up to 64 packets costs one `recvmmsg` and one
//! `sendto`, and nothing is allocated per packet.

use crate::netlink::{self, QueueConfig, QueuedPacket, Received, NF_ACCEPT, NF_DROP};
use crate::sys::NetlinkSocket;
use std::io;
use std::time::Duration;

/// Most packets taken in one batch.
pub const MAX_BATCH: usize = 64;
/// Packet bytes copied to user space: all of it (no GSO, so ≤ 64 KiB).
const COPY_RANGE: u32 = 0xffff;
/// A receive buffer holds the largest packet plus netlink's attributes.
const BUF_LEN: usize = COPY_RANGE as usize + 4096;
/// Re-inject the packet at the same hook: it is queued again, after the
/// queue is set up (see `Queue::open`).
const NF_REPEAT: u32 = 4;
/// How long a receive waits before the loop looks at its flags.
pub const RECV_TIMEOUT: Duration = Duration::from_millis(100);

/// What the queue has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub batches: u64,
    pub packets: u64,
    pub accepted: u64,
    pub dropped: u64,
    /// Datagrams that were not a packet we could answer (cut, garbled, other).
    pub unparsed: u64,
    /// Errors the kernel returned for our verdicts.
    pub verdict_errors: u64,
}

/// The kernel's own counters for the queue (`/proc/net/netfilter/nfnetlink_queue`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelQueueCounters {
    /// Packets waiting for a verdict now.
    pub waiting: u64,
    /// Dropped (or, fail-open, accepted) because the queue was full.
    pub queue_dropped: u64,
    /// Dropped because our socket buffer was full.
    pub user_dropped: u64,
}

pub struct Queue {
    sock: NetlinkSocket,
    config: QueueConfig,
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
    out: Vec<u8>,
    pub stats: QueueStats,
}

impl Queue {
    /// Binds to the queue and sets copy mode, length and fail-open.
    pub fn open(config: QueueConfig) -> io::Result<Queue> {
        let sock = NetlinkSocket::open()?;
        // Room for bursts: the kernel charges each queued skb's true size.
        sock.set_recv_buffer(32 << 20)?;
        sock.set_no_enobufs()?;
        sock.set_recv_timeout(RECV_TIMEOUT)?;
        let mut q = Queue {
            sock,
            config,
            bufs: (0..MAX_BATCH).map(|_| vec![0; BUF_LEN]).collect(),
            lens: vec![0; MAX_BATCH],
            out: Vec::with_capacity(MAX_BATCH * netlink::VERDICT_LEN),
            stats: QueueStats::default(),
        };
        q.out.clear();
        netlink::bind(&mut q.out, config.queue);
        q.request("bind")?;
        q.out.clear();
        netlink::configure(&mut q.out, &config);
        q.request("configure")?;
        Ok(q)
    }

    pub fn number(&self) -> u16 {
        self.config.queue
    }

    /// Sends `self.out` and waits for its acknowledgement. Packets queued
    /// before the queue was configured carry no payload yet; they are
    /// answered `repeat`, which queues them again, so the rules see them.
    fn request(&mut self, what: &str) -> io::Result<()> {
        self.sock.send(&self.out)?;
        for _ in 0..10_000 {
            let n = match self.sock.recv(&mut self.bufs[0], false) {
                Ok(n) => n.min(BUF_LEN),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("nfqueue {what}: no answer from the kernel"),
                    ))
                }
                Err(e) => return Err(e),
            };
            match netlink::parse(&self.bufs[0][..n]) {
                Received::Ack(0) => return Ok(()),
                Received::Ack(errno) => {
                    let e = io::Error::from_raw_os_error(errno);
                    return Err(io::Error::new(e.kind(), format!("nfqueue {what}: {e}")));
                }
                Received::Packet(p) => {
                    let mut v = Vec::with_capacity(netlink::VERDICT_LEN);
                    netlink::verdict(&mut v, self.config.queue, p.id, NF_REPEAT);
                    self.sock.send(&v)?;
                }
                Received::Other => {}
            }
        }
        Err(io::Error::other(format!(
            "nfqueue {what}: no acknowledgement"
        )))
    }

    /// Receives up to `max` packets (waiting at most [`RECV_TIMEOUT`] for
    /// the first), asks `decide` about each (true: accept), and sends every
    /// verdict in one message batch. Returns the number of packets.
    pub fn process(
        &mut self,
        max: usize,
        mut decide: impl FnMut(&QueuedPacket<'_>) -> bool,
    ) -> io::Result<usize> {
        let max = max.clamp(1, MAX_BATCH);
        let got = match self
            .sock
            .recv_many(&mut self.bufs[..max], &mut self.lens[..max])
        {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                return Ok(0)
            }
            Err(e) => return Err(e),
        };
        self.out.clear();
        let mut packets = 0;
        for (buf, &len) in self.bufs.iter().zip(&self.lens).take(got) {
            let Some(datagram) = buf.get(..len) else {
                // Cut: cannot happen with this buffer size and no GSO.
                self.stats.unparsed += 1;
                continue;
            };
            match netlink::parse(datagram) {
                Received::Packet(p) => {
                    packets += 1;
                    let verdict = if decide(&p) {
                        self.stats.accepted += 1;
                        NF_ACCEPT
                    } else {
                        self.stats.dropped += 1;
                        NF_DROP
                    };
                    netlink::verdict(&mut self.out, self.config.queue, p.id, verdict);
                }
                Received::Ack(e) if e != 0 => self.stats.verdict_errors += 1,
                _ => self.stats.unparsed += 1,
            }
        }
        if !self.out.is_empty() {
            self.sock.send(&self.out)?;
        }
        self.stats.batches += 1;
        self.stats.packets += packets as u64;
        Ok(packets)
    }

    /// The kernel's counters for this queue, read from /proc (a few
    /// system calls: call it per publish, not per packet).
    pub fn kernel_counters(&self) -> Option<KernelQueueCounters> {
        let text = std::fs::read_to_string("/proc/net/netfilter/nfnetlink_queue").ok()?;
        parse_proc(&text, self.config.queue)
    }

    /// From now on a receive waits at most a millisecond: for answering
    /// what is already queued before [`unbind`](Self::unbind), until a
    /// batch comes back empty.
    pub fn drain(&mut self) -> io::Result<()> {
        self.sock.set_recv_timeout(Duration::from_millis(1))
    }

    /// Unbinds the queue. Packets that arrive after the last receive get
    /// the kernel's verdict for an unbound queue (`bypass` in the nft
    /// rule: accept; otherwise drop).
    pub fn unbind(mut self) -> io::Result<QueueStats> {
        self.out.clear();
        netlink::unbind(&mut self.out, self.config.queue);
        self.sock.send(&self.out)?;
        Ok(self.stats)
    }
}

/// One line per queue: number, port id, waiting, copy mode, copy range,
/// queue_dropped, user_dropped, last id, 1.
fn parse_proc(text: &str, queue: u16) -> Option<KernelQueueCounters> {
    text.lines().find_map(|line| {
        let f: Vec<u64> = line
            .split_whitespace()
            .map(|w| w.parse().unwrap_or(0))
            .collect();
        (f.len() >= 7 && f[0] == u64::from(queue)).then(|| KernelQueueCounters {
            waiting: f[2],
            queue_dropped: f[5],
            user_dropped: f[6],
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_line_for_the_queue() {
        let text = "    0  12345     0 2 65535     0     0        7  1\n    \
                    3  54321     5 2 65535    11    22      900  1\n";
        assert_eq!(
            parse_proc(text, 3),
            Some(KernelQueueCounters {
                waiting: 5,
                queue_dropped: 11,
                user_dropped: 22,
            })
        );
        assert_eq!(parse_proc(text, 4), None);
    }
}
