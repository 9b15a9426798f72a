//! Deciding packets does not allocate, on the tiered trie classifier too:
//! a later tier's automata are walked and merged into the engine's
//! scratch, sized when the engine was built. A counting allocator needs
//! its own test binary, hence this file.
//!
//! Only the test's own thread is counted: the test harness's threads may
//! allocate at any moment.

#[path = "../benches/common/rulegen.rs"]
mod rulegen;

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use weir_engine::{load, CompileOptions, Engine, WalkKind};
use weir_rules::Names;

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

/// 40,000 random rules (tiered: the automata cannot hold them whole), a
/// trace that reaches every tier: no allocation deciding it, one packet
/// at a time or in batches.
#[test]
fn deciding_does_not_allocate() {
    let rs = rulegen::random(40_000, 5, false);
    let trace = rulegen::trace(&rs, 3000, 6);
    let prog = load(&rs.text, &Names::default(), &CompileOptions::default()).expect("rules");
    let mut e = Engine::builder(prog).walk(WalkKind::Trie).build();
    let parts = e.classifier_parts().expect("a trie");
    assert!(parts.head_automata < parts.automata, "{parts:?}");
    let mut out = Vec::with_capacity(64);
    let late = trace
        .iter()
        .filter(|p| e.decide(p).rule.is_some_and(|r| r > 24_576))
        .count();
    assert!(late > 30, "{late} packets decided past the second tier");
    COUNTED.with(|c| c.set(true));
    for p in &trace {
        std::hint::black_box(e.decide(p));
    }
    for chunk in trace.chunks(64) {
        e.decide_batch(chunk, &mut out);
    }
    COUNTED.with(|c| c.set(false));
    assert_eq!(ALLOCS.load(Relaxed), 0, "allocations while deciding");
}
