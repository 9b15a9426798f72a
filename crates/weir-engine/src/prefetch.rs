//! Cache-line prefetches: let a batch's later packets' records and first
//! rules arrive from memory while the earlier packets are decided.

#![allow(unsafe_code)]

/// Asks the CPU to fetch the cache line `x` starts in, without waiting for
/// it (nothing off x86-64).
#[inline(always)]
pub fn prefetch<T>(x: Option<&T>) {
    if let Some(x) = x {
        prefetch_line((x as *const T).cast());
    }
}

/// Asks for the cache lines of `x`'s first and last bytes: all of a
/// record of up to 64 bytes (a 40-byte box need not start at a line), and
/// of a longer one the ends, the next lines' hardware prefetch bringing
/// the rest (a third prefetch for the middle line of a 112-byte packet
/// record was slower).
#[inline(always)]
pub fn prefetch_ends<T>(x: Option<&T>) {
    let Some(x) = x else { return };
    let start = (x as *const T).cast::<u8>();
    prefetch_line(start);
    prefetch_line(start.wrapping_add(size_of::<T>().saturating_sub(1)));
}

#[inline(always)]
fn prefetch_line(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: every x86-64 CPU has SSE, and a prefetch neither faults
        // (whatever the address) nor changes what the program reads.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
