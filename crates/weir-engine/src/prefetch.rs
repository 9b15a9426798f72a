//! A cache-line prefetch: lets a batch's later packets' first rules
//! arrive from memory while the earlier packets are decided.

#![allow(unsafe_code)]

/// Asks the CPU to fetch the cache line `x` starts in, without waiting for
/// it (nothing off x86-64).
#[inline(always)]
pub fn prefetch<T>(x: Option<&T>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = x {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: every x86-64 CPU has SSE, and a prefetch neither faults
        // nor changes what the program reads.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
