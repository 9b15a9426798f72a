//! Reload on SIGHUP: a background thread builds the new value (for weir,
//! a compiled engine) while packets keep flowing; the packet thread takes
//! it between batches with [`Reloader::take`], one atomic load when
//! nothing is pending. A build that fails is reported and changes nothing.

use std::io;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};

struct Shared<T> {
    pending: AtomicBool,
    slot: Mutex<Option<T>>,
    succeeded: AtomicU64,
    failed: AtomicU64,
}

pub struct Reloader<T> {
    shared: Arc<Shared<T>>,
    requests: mpsc::Sender<()>,
}

impl<T: Send + 'static> Reloader<T> {
    /// Starts the builder thread; each [`request`](Self::request) runs
    /// `build` once. `Err(text)` goes to stderr as it is (weir passes the
    /// rendered `file:line:col` diagnostics).
    pub fn new(mut build: impl FnMut() -> Result<T, String> + Send + 'static) -> io::Result<Self> {
        let shared = Arc::new(Shared {
            pending: AtomicBool::new(false),
            slot: Mutex::new(None),
            succeeded: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        });
        let (requests, rx) = mpsc::channel::<()>();
        let s = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("weir-reload".into())
            .spawn(move || {
                while rx.recv().is_ok() {
                    // Signals that arrived during the last build ask for one more.
                    while rx.try_recv().is_ok() {}
                    match build() {
                        Ok(value) => {
                            *s.slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(value);
                            s.pending.store(true, Ordering::Release);
                            s.succeeded.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(text) => {
                            // A full or closed stderr must not end reloads.
                            let _ = writeln!(io::stderr(), "{text}");
                            s.failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })?;
        Ok(Reloader { shared, requests })
    }

    /// As [`new`](Self::new), with every SIGHUP requesting a build.
    pub fn on_sighup(
        build: impl FnMut() -> Result<T, String> + Send + 'static,
    ) -> io::Result<Self> {
        let reloader = Reloader::new(build)?;
        let tx = reloader.requests.clone();
        let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGHUP])?;
        std::thread::Builder::new()
            .name("weir-sighup".into())
            .spawn(move || {
                for _ in signals.forever() {
                    if tx.send(()).is_err() {
                        break;
                    }
                }
            })?;
        Ok(reloader)
    }

    /// Asks for a build, as SIGHUP does.
    pub fn request(&self) {
        let _ = self.requests.send(());
    }

    /// The newly built value, if one is ready (cheap when none is).
    #[inline]
    pub fn take(&self) -> Option<T> {
        if !self.shared.pending.swap(false, Ordering::Acquire) {
            return None;
        }
        self.shared
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Builds that succeeded so far.
    pub fn succeeded(&self) -> u64 {
        self.shared.succeeded.load(Ordering::Relaxed)
    }

    /// Builds that failed so far (the running value was kept).
    pub fn failed(&self) -> u64 {
        self.shared.failed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn wait_until(mut f: impl FnMut() -> bool) {
        let start = Instant::now();
        while !f() {
            assert!(start.elapsed() < Duration::from_secs(10), "timed out");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_good_build_is_taken_once_and_a_bad_one_never() {
        let mut n = 0;
        let r = Reloader::new(move || {
            n += 1;
            if n == 2 {
                Err("rules.conf:1:5: bad".into())
            } else {
                Ok(n)
            }
        })
        .unwrap();
        assert_eq!(r.take(), None);
        r.request();
        wait_until(|| r.succeeded() == 1);
        assert_eq!(r.take(), Some(1));
        assert_eq!(r.take(), None);
        r.request();
        wait_until(|| r.failed() == 1);
        assert_eq!(r.take(), None);
        r.request();
        wait_until(|| r.succeeded() == 2);
        assert_eq!(r.take(), Some(3));
    }
}
