//! Table file bytes → `Source` → `parse_table_source_with` (small limits), then `build` and
//! lookups: nothing may panic, and every lookup must agree with the naive
//! per-length peer built from the same entries. Addresses probed: each
//! entry's first and last address and their neighbours, plus the edges.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_table::naive::PerLengthHash;
use weir_rules::Source;
use weir_table::{parse_table_source_with, Limits, Prefix};

fuzz_target!(|data: &[u8]| {
    let source = Source::new(data);
    let text = source.text();
    let limits = Limits { max_entries: 4096, max_bytes: 64 << 20 };
    let Ok(builder) = parse_table_source_with("fuzz", &source, limits) else { return };
    let entries = builder.entries();
    let Ok(table) = builder.build() else { return };
    assert_eq!(table.len(), entries.len());
    let naive = PerLengthHash::new(&entries);
    let mut v4 = vec![0u32, 1, u32::MAX, u32::MAX - 1];
    let mut v6 = vec![0u128, 1, u128::MAX, u128::MAX - 1];
    for e in &entries {
        match e.prefix {
            Prefix::V4 { addr, len } => {
                let last = addr | u32::MAX.checked_shr(len.into()).unwrap_or(0);
                v4.extend([addr, last, addr.wrapping_sub(1), last.wrapping_add(1)]);
            }
            Prefix::V6 { addr, len } => {
                let last = addr | u128::MAX.checked_shr(len.into()).unwrap_or(0);
                v6.extend([addr, last, addr.wrapping_sub(1), last.wrapping_add(1)]);
            }
        }
    }
    for a in v4 {
        assert_eq!(table.lookup_v4(a), naive.lookup_v4(a), "ipv4 {a:#x}\n{text:?}");
    }
    for a in v6 {
        assert_eq!(table.lookup_v6(a), naive.lookup_v6(a), "ipv6 {a:#x}\n{text:?}");
    }
});
