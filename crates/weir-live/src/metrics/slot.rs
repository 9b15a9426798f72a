//! The hand-over between the packet thread and the server: one slot
//! holding the newest snapshot. Three snapshots rotate (the publisher's
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

/// The server's end: renders the newest snapshot for a scrape.
pub struct Latest {
    slot: Arc<Mutex<Slot>>,
    current: Snapshot,
    body: Option<(Bytes, Instant)>,
}

/// A connected publisher and reader.
pub fn slot() -> (Publisher, Latest) {
    let slot = Arc::new(Mutex::new(Slot::default()));
    (
        Publisher {
            slot: Arc::clone(&slot),
            scratch: Snapshot::default(),
            last: None,
        },
        Latest {
            slot,
            current: Snapshot::default(),
            body: None,
        },
    )
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
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = std::mem::take(&mut slot.fresh);
        if fresh {
            std::mem::swap(&mut slot.snapshot, &mut self.current);
        }
        drop(slot);
        match &mut self.body {
            Some((body, at)) if !fresh => {
                *at = Instant::now();
                body.clone()
            }
            _ => {
                let body = Bytes::from(self.current.render());
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
        let held = latest.slot.lock().unwrap();
        assert!(!publisher.publish(&e, &[]), "the lock is held: skip");
        drop(held);
        assert!(publisher.publish(&e, &[]));
        assert!(latest.slot.lock().unwrap().fresh);
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
        assert!(latest.slot.lock().unwrap().fresh);
    }
}
