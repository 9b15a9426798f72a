//! An NFQUEUE (`weir-live`) as a [`Source`]: each batch the queue
//! receives, every packet raw IP, coming `in` on its input device from
//! hooks before routing (prerouting, input, forward) and going `out` on
//! its output device after (output, postrouting); the verdicts the run
//! loop gives go back to the kernel in one message per batch.

use crate::source::Source;
use crate::stop::Budget;
use std::io;
use weir_engine::Verdict;
use weir_io::{Comments, Format, Frame, Interface};
use weir_live::nfqueue::{Queue, QueueStats, MAX_BATCH};
use weir_wire::{Direction, LinkType};

/// Devices named so far; more than this share the last slot, unnamed.
const MAX_DEVICES: usize = 256;

/// Kernel interface indexes mapped to interface slots; a new index costs
/// one lookup of its name, once. Slot 0 is index 0, no device, so that the
/// list is never empty: a pcap of passed packets takes its link type from it.
struct Devices {
    indexes: Vec<u32>,
    list: Vec<Interface>,
}

impl Default for Devices {
    fn default() -> Devices {
        Devices {
            indexes: vec![0],
            list: vec![device(None)],
        }
    }
}

fn device(name: Option<String>) -> Interface {
    Interface {
        link_type: LinkType::RAW,
        snaplen: 0xffff,
        name,
    }
}

impl Devices {
    #[inline]
    fn slot(&mut self, index: u32) -> u32 {
        if let Some(i) = self.indexes.iter().position(|&x| x == index) {
            return i as u32;
        }
        if self.indexes.len() >= MAX_DEVICES {
            return (MAX_DEVICES - 1) as u32;
        }
        self.indexes.push(index);
        self.list.push(device(weir_live::interface_name(index)));
        (self.indexes.len() - 1) as u32
    }
}

pub struct QueueSource {
    queue: Queue,
    devices: Devices,
    /// Receiving only what is queued already, before unbinding.
    draining: bool,
}

impl QueueSource {
    pub fn new(queue: Queue) -> QueueSource {
        QueueSource {
            queue,
            devices: Devices::default(),
            draining: false,
        }
    }

    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// From now on the source ends at the first empty receive: what the
    /// kernel queued before the stop still gets its verdict.
    pub fn drain(&mut self) -> io::Result<()> {
        self.draining = true;
        self.queue.drain()
    }

    /// Unbinds the queue; its counters.
    pub fn close(self) -> io::Result<QueueStats> {
        self.queue.unbind()
    }
}

impl Source for QueueSource {
    fn next_batch<F>(&mut self, budget: &Budget, mut each: F) -> Result<Option<usize>, String>
    where
        F: FnMut(&Frame<'_>, &[Interface]) -> Verdict,
    {
        let room = budget.claim(MAX_BATCH as u64);
        if room == 0 {
            return Ok(Some(0));
        }
        // Dynamic states age by the clock, read once per batch.
        let now = now_ns();
        let QueueSource { queue, devices, .. } = self;
        let number = queue.number();
        let got = queue.process(room as usize, |q| {
            let (direction, dev) = if q.hook <= 2 {
                (Direction::In, q.indev)
            } else {
                (Direction::Out, q.outdev)
            };
            let frame = Frame {
                ts_ns: now,
                iface: devices.slot(dev),
                link_type: LinkType::RAW,
                orig_len: q.orig_len,
                data: q.payload,
                direction,
                comments: Comments::NONE,
                offset: 0,
            };
            each(&frame, &devices.list) == Verdict::Pass
        });
        let got = got.map_err(|e| format!("queue {number}: {e}"))?;
        budget.give_back(room - got as u64);
        Ok(if got == 0 && self.draining {
            None
        } else {
            Some(got)
        })
    }

    fn interfaces(&self) -> &[Interface] {
        &self.devices.list
    }

    /// Raw-IP packets; written as pcap (`-w`), or pcapng naming devices
    /// (`--annotate`).
    fn format(&self) -> Format {
        Format::Pcap {
            nanos: false,
            big_endian: false,
        }
    }
}

/// Wall-clock nanoseconds (a vDSO read, no system call).
fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
