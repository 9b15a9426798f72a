//! A global allocator that counts the allocations of the threads that
//! ask it to (`counting(true)`), for tests that a loop does not allocate.
//! Each test binary that includes this module gets its own allocator: a
//! counting allocator needs a test binary of its own.
//!
//! Only the counting thread is counted: the test harness's threads may
//! allocate at any moment (a loaded machine made a test fail that way).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

/// Counts this thread's allocations from now on, or stops.
pub fn counting(on: bool) {
    COUNTED.with(|c| c.set(on));
}

/// Allocations counted so far.
pub fn allocations() -> usize {
    ALLOCS.load(Relaxed)
}

fn count() {
    if COUNTED.with(Cell::get) {
        ALLOCS.fetch_add(1, Relaxed);
    }
}

// A global allocator can only be written as an `unsafe impl`; this module
// holds it and nothing else.
#[allow(unsafe_code)]
mod sys {
    use super::count;
    use std::alloc::{GlobalAlloc, Layout, System};

    pub struct Counting;

    // SAFETY: every method forwards to `System` with the caller's
    // arguments unchanged, so `System`'s guarantees carry over.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            count();
            // SAFETY: forwarded unchanged (see the impl).
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: forwarded unchanged (see the impl).
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            count();
            // SAFETY: forwarded unchanged (see the impl).
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }
}

#[global_allocator]
static GLOBAL: sys::Counting = sys::Counting;
