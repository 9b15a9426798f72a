//! SIGINT and SIGTERM ask the loop to stop; it finishes its batch, answers
//! what is queued and prints its summary.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Clone)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// Sets the flag on SIGINT or SIGTERM (a second signal still only sets it).
    pub fn on_signals() -> io::Result<Stop> {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, Arc::clone(&flag))?;
        }
        Ok(Stop(flag))
    }

    #[inline]
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
