//! `next_frame` does not allocate once the generator has warmed up, and its
//! memory does not grow with the number of frames. A counting allocator
//! needs its own test binary, hence this file.
//!
//! Only the test's own thread is counted: the test harness's threads may
//! allocate at any moment (a loaded machine made this test fail that way).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static COUNTED: Cell<bool> = const { Cell::new(false) };
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

#[test]
fn no_allocation_per_frame() {
    COUNTED.with(|c| c.set(true));
    let mut g = weir_gen::Generator::new(weir_gen::GenConfig {
        seed: 1,
        count: 200_000,
        malformed_per_mille: 50,
        ..Default::default()
    });
    for _ in 0..1000 {
        g.next_frame().unwrap();
    }
    let before = ALLOCS.load(Relaxed);
    assert!(before > 0, "the counter sees the generator's set-up");
    let mut frames = 0u64;
    while let Some(f) = g.next_frame() {
        frames += u64::from(!f.data.is_empty());
    }
    let after = ALLOCS.load(Relaxed);
    assert_eq!(frames, 199_000);
    assert_eq!(after - before, 0, "allocations while generating");
}
