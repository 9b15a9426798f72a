//! The hand-over between packet threads and the server: one slot per
//! thread holding its newest snapshot; a scrape shows their sum. Three snapshots rotate (the publisher's
//! scratch, the slot's, the server's), so after the first few publishes
//! neither side allocates, and the lock is held only to swap two of them.

use super::server::Source;
use super::snapshot::{Sample, Snapshot};
use bytes::Bytes;
use std::sync::{Arc, Mutex, PoisonError, TryLockError};
use std::time::{Duration, Instant};
use weir_engine::Engine;

/// A scrape renders a new body at most this often. In-flight responses
/// each hold a body until their client's time is up, so this bounds the
/// bodies alive to `client_time / RENDER_INTERVAL + 1` whatever clients do.
pub const RENDER_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Slot {
    snapshot: Snapshot,
    fresh: bool,
}

/// The packet thread's end: copies the counters, then hands them over.
pub struct Publisher {
    slot: Arc<Mutex<Slot>>,
    scratch: Snapshot,
    last: Option<Instant>,
}

/// The server's end: renders the newest snapshots for a scrape, the sum
/// of every publisher's.
pub struct Latest {
    slots: Vec<Arc<Mutex<Slot>>>,
    /// The newest snapshot taken from each slot.
    current: Vec<Snapshot>,
    sum: Snapshot,
    body: Option<(Bytes, Instant)>,
}

/// A connected publisher and reader.
pub fn slot() -> (Publisher, Latest) {
    let (mut publishers, latest) = slots(1);
    (publishers.remove(0), latest)
}

/// One publisher per packet thread (capture workers, each with its own
/// engine) and one reader that shows their sum.
pub fn slots(n: usize) -> (Vec<Publisher>, Latest) {
    let slots: Vec<_> = (0..n.max(1))
        .map(|_| Arc::new(Mutex::new(Slot::default())))
        .collect();
    let publishers = slots
        .iter()
        .map(|slot| Publisher {
            slot: Arc::clone(slot),
            scratch: Snapshot::default(),
            last: None,
        })
        .collect();
    let latest = Latest {
        current: vec![Snapshot::default(); slots.len()],
        slots,
        sum: Snapshot::default(),
        body: None,
    };
    (publishers, latest)
}

impl Publisher {
    /// Publishes now: copies outside the lock, swaps inside it. Never
    /// waits: if the server holds the lock this instant, nothing is
    /// published and the result is false (the next call tries again).
    pub fn publish(&mut self, engine: &Engine, extra: &[Sample]) -> bool {
        self.scratch.update(engine, extra);
        let mut slot = match self.slot.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return false,
        };
        std::mem::swap(&mut slot.snapshot, &mut self.scratch);
        slot.fresh = true;
        drop(slot);
        self.last = Some(Instant::now());
        true
    }

    /// Publishes if `interval` has passed since the last publish (or
    /// there was none). Cheap to call between batches: one clock read;
    /// `extra` is only called when publishing.
    pub fn publish_every(
        &mut self,
        interval: Duration,
        engine: &Engine,
        extra: impl FnOnce() -> Vec<Sample>,
    ) {
        if self.last.is_none_or(|t| t.elapsed() >= interval) {
            self.publish(engine, &extra());
        }
    }
}

impl Source for Latest {
    fn body(&mut self) -> Bytes {
        if let Some((body, at)) = &self.body {
            if at.elapsed() < RENDER_INTERVAL {
                return body.clone();
            }
        }
        let mut fresh = false;
        for (slot, current) in self.slots.iter().zip(&mut self.current) {
            let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
            if std::mem::take(&mut slot.fresh) {
                std::mem::swap(&mut slot.snapshot, current);
                fresh = true;
            }
        }
        match &mut self.body {
            Some((body, at)) if !fresh => {
                *at = Instant::now();
                body.clone()
            }
            _ => {
                let body = match self.current.as_slice() {
                    [one] => Bytes::from(one.render()),
                    all => {
                        self.sum.clone_from(&all[0]);
                        all[1..].iter().for_each(|s| self.sum.add(s));
                        Bytes::from(self.sum.render())
                    }
                };
                self.body = Some((body.clone(), Instant::now()));
                body
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_packets::{engine, ipv4_udp};

    fn decide(e: &mut Engine, port: u16) {
        let p = ipv4_udp(port);
        e.decide(&weir_wire::decode(weir_wire::LinkType::RAW, &p, 28));
    }

    #[test]
    fn a_scrape_sees_the_last_publish_and_no_more_often_than_the_interval() {
        let (mut publisher, mut latest) = slot();
        let mut e = engine("100 allow ip from any to any\n");
        let before = latest.body();
        assert!(std::str::from_utf8(&before)
            .unwrap()
            .contains("weir_packets_total{verdict=\"pass\"} 0\n"));
        decide(&mut e, 9);
        assert!(publisher.publish(&e, &[]));
        // Within the interval the cached body stands, fresh snapshot or not.
        assert_eq!(latest.body(), before);
        latest.body.as_mut().unwrap().1 -= RENDER_INTERVAL;
        let after = latest.body();
        assert!(std::str::from_utf8(&after)
            .unwrap()
            .contains("weir_packets_total{verdict=\"pass\"} 1\n"));
        // Nothing new published: the same bytes, not a new render.
        latest.body.as_mut().unwrap().1 -= RENDER_INTERVAL;
        assert_eq!(latest.body().as_ptr(), after.as_ptr());
    }

    #[test]
    fn publish_never_waits_for_the_server() {
        let (mut publisher, latest) = slot();
        let e = engine("100 allow ip from any to any\n");
        let held = latest.slots[0].lock().unwrap();
        assert!(!publisher.publish(&e, &[]), "the lock is held: skip");
        drop(held);
        assert!(publisher.publish(&e, &[]));
        assert!(latest.slots[0].lock().unwrap().fresh);
    }

    #[test]
    fn publish_every_waits_out_the_interval() {
        let (mut publisher, latest) = slot();
        let e = engine("100 allow ip from any to any\n");
        let mut calls = 0;
        for _ in 0..3 {
            publisher.publish_every(Duration::from_secs(3600), &e, || {
                calls += 1;
                Vec::new()
            });
        }
        assert_eq!(calls, 1, "the first call publishes, the rest wait");
        assert!(latest.slots[0].lock().unwrap().fresh);
    }

    #[test]
    fn a_scrape_shows_the_sum_of_every_publisher() {
        let (mut publishers, mut latest) = slots(2);
        let rules = "100 allow udp from any to any 9\n200 deny ip from any to any\n";
        let (mut a, mut b) = (engine(rules), engine(rules));
        decide(&mut a, 9);
        decide(&mut b, 9);
        decide(&mut b, 10);
        let extra = |value| Sample {
            name: "weir_states",
            help: "States.",
            kind: crate::metrics::Kind::Gauge,
            labels: "",
            value,
        };
        assert!(publishers[0].publish(&a, &[extra(1)]));
        assert!(publishers[1].publish(&b, &[extra(2)]));
        let body = latest.body();
        let text = std::str::from_utf8(&body).unwrap();
        for line in [
            "weir_rule_packets_total{rule=\"100\",action=\"allow\"} 2\n",
            "weir_rule_packets_total{rule=\"200\",action=\"deny\"} 1\n",
            "weir_packets_total{verdict=\"pass\"} 2\n",
            "weir_packets_total{verdict=\"drop\"} 1\n",
            "weir_states 3\n",
        ] {
            assert!(text.contains(line), "{line} not in\n{text}");
        }
    }
}
