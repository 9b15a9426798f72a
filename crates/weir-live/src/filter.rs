//! The engine as a live filter: queued packets in, pass or drop out, and
//! the engine swapped for a reloaded one between batches.

use crate::netlink::QueuedPacket;
use weir_engine::{Engine, Verdict};
use weir_wire::{decode_with, Direction, LinkType};

/// Interfaces named so far; more than this share the "unknown" slot.
const MAX_INTERFACES: usize = 256;

/// Kernel interface indexes mapped to the engine's interface slots; a new
/// index costs one lookup of its name, once.
#[derive(Default)]
struct Interfaces {
    indexes: Vec<u32>,
    names: Vec<Option<String>>,
}

impl Interfaces {
    #[inline]
    fn slot(&mut self, index: u32, engine: &mut Engine) -> u16 {
        if let Some(i) = self.indexes.iter().position(|&x| x == index) {
            return i as u16;
        }
        if index == 0 || self.indexes.len() >= MAX_INTERFACES {
            return u16::MAX;
        }
        self.indexes.push(index);
        self.names.push(crate::sys::interface_name(index));
        self.apply(engine);
        (self.indexes.len() - 1) as u16
    }

    fn apply(&self, engine: &mut Engine) {
        let names: Vec<Option<&str>> = self.names.iter().map(Option::as_deref).collect();
        engine.set_interfaces(&names);
    }
}

pub struct Filter {
    pub engine: Engine,
    ifaces: Interfaces,
}

impl Filter {
    pub fn new(engine: Engine) -> Filter {
        Filter {
            engine,
            ifaces: Interfaces::default(),
        }
    }

    /// Decodes the raw IP packet once and decides it: true to accept.
    /// Hooks before routing decisions (prerouting, input, forward) see the
    /// packet coming `in` on its input device; output and postrouting
    /// see it going `out` on its output device.
    #[inline]
    pub fn decide(&mut self, q: &QueuedPacket<'_>) -> bool {
        let mut p = decode_with(LinkType::RAW, q.payload, q.orig_len, self.engine.fields());
        let (dir, dev) = if q.hook <= 2 {
            (Direction::In, q.indev)
        } else {
            (Direction::Out, q.outdev)
        };
        p.direction = dir;
        p.iface = self.ifaces.slot(dev, &mut self.engine);
        self.engine.decide(&p).verdict == Verdict::Pass
    }

    /// Puts a reloaded engine in place, between batches: it inherits the
    /// counters of unchanged rules and the totals (see
    /// [`Engine::carry_over`]), and learns the interfaces seen so far.
    /// Returns the engine it replaced.
    pub fn swap(&mut self, mut engine: Engine) -> Engine {
        engine.carry_over(&self.engine);
        self.ifaces.apply(&mut engine);
        std::mem::replace(&mut self.engine, engine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_packets::{engine, ipv4_udp as udp};

    fn queued(payload: &[u8]) -> QueuedPacket<'_> {
        QueuedPacket {
            id: 1,
            hook: 2,
            indev: 0,
            outdev: 0,
            payload,
            orig_len: payload.len() as u32,
        }
    }

    #[test]
    fn decides_raw_ip_and_carries_counters_over_a_swap() {
        let mut f = Filter::new(engine(
            "100 deny udp from any to any 53\n200 allow ip from any to any\n",
        ));
        let (dns, web) = (udp(53), udp(80));
        assert!(!f.decide(&queued(&dns)));
        assert!(f.decide(&queued(&web)));
        assert!(!f.decide(&queued(&[0x45, 0, 0])), "malformed drops");
        // Rule 100 changes, rule 200 keeps its text: only 200 keeps counting.
        let old = f.swap(engine(
            "100 deny udp from any to any 80\n200 allow ip from any to any\n",
        ));
        assert_eq!(old.stats().packets, 3);
        assert!(f.decide(&queued(&dns)));
        assert!(!f.decide(&queued(&web)));
        let c: Vec<u64> = f.engine.counters().iter().map(|c| c.packets).collect();
        assert_eq!(c, [1, 2, 0]);
        let s = f.engine.stats();
        assert_eq!(
            (s.packets, s.passed, s.dropped, s.malformed_total()),
            (5, 2, 3, 1)
        );
    }
}
