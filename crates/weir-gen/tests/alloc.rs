//! `next_frame` does not allocate once the generator has warmed up, and its
//! memory does not grow with the number of frames (`counting_alloc`: this
//! test binary's allocator counts).

mod counting_alloc;

use counting_alloc::{allocations, counting};

#[test]
fn no_allocation_per_frame() {
    counting(true);
    let mut g = weir_gen::Generator::new(weir_gen::GenConfig {
        seed: 1,
        count: 200_000,
        malformed_per_mille: 50,
        ..Default::default()
    });
    for _ in 0..1000 {
        g.next_frame().unwrap();
    }
    let before = allocations();
    assert!(before > 0, "the counter sees the generator's set-up");
    let mut frames = 0u64;
    while let Some(f) = g.next_frame() {
        frames += u64::from(!f.data.is_empty());
    }
    let after = allocations();
    assert_eq!(frames, 199_000);
    assert_eq!(after - before, 0, "allocations while generating");
}
