//! Differential tests: `Table` (and the naive per-length hash peer) against
//! a brute-force scan over every prefix, on random tables of nested prefixes
//! of all lengths and on addresses chosen to sit on range edges.

use proptest::prelude::*;
use weir_table::naive::PerLengthHash;
use weir_table::{AddError, Builder, Entry, Prefix, Table};

fn mask(len: u8, bits: u32) -> u128 {
    let host = bits - u32::from(len);
    let all = u128::MAX >> (128 - bits);
    all & !(u128::MAX.checked_shr(128 - host).unwrap_or(0))
}

/// Brute force: the value of the longest prefix of the family containing addr.
fn brute(entries: &[Entry], addr: u128, v4: bool) -> Option<u32> {
    let bits = if v4 { 32 } else { 128 };
    entries
        .iter()
        .filter_map(|e| match (e.prefix, v4) {
            (Prefix::V4 { addr: p, len }, true) => Some((p as u128, len, e.value)),
            (Prefix::V6 { addr: p, len }, false) => Some((p, len, e.value)),
            _ => None,
        })
        .filter(|&(p, len, _)| addr & mask(len, bits) == p)
        .max_by_key(|&(_, len, _)| len)
        .map(|(_, _, v)| v)
}

/// Prefixes derived from a few seed addresses, so that many nest, plus
/// fully random ones; lengths 0..=bits. Values are small so that equal
/// neighbours (which the structure merges) are common.
fn prefixes(bits: u32) -> impl Strategy<Value = Vec<(u128, u8, u32)>> {
    let seeds = prop::collection::vec(any::<u128>(), 1..4);
    seeds.prop_flat_map(move |seeds| {
        let n = seeds.len();
        prop::collection::vec((0..n + 1, any::<u128>(), 0..=bits as u8, 0u32..4), 0..60).prop_map(
            move |raw| {
                raw.into_iter()
                    .map(|(which, random, len, value)| {
                        let addr = seeds.get(which).copied().unwrap_or(random);
                        // Flip a random low bit sometimes so siblings appear.
                        let addr = if random & 1 == 1 {
                            addr ^ (1 << ((random >> 1) % bits as u128))
                        } else {
                            addr
                        };
                        (addr, len, value)
                    })
                    .collect()
            },
        )
    })
}

/// Addresses to probe: each prefix's first and last address and their
/// neighbours, plus random addresses, plus the ends of the space.
fn probes(entries: &[(u128, u8, u32)], bits: u32, random: &[u128]) -> Vec<u128> {
    let top = u128::MAX >> (128 - bits);
    let mut out = vec![0, 1, top, top - 1];
    for &(a, len, _) in entries {
        let start = a & mask(len, bits);
        let end = start | (top & !mask(len, bits));
        out.extend([
            start,
            end,
            start.wrapping_sub(1) & top,
            end.wrapping_add(1) & top,
        ]);
    }
    out.extend(random.iter().map(|r| r & top));
    out
}

fn build(v4: &[(u128, u8, u32)], v6: &[(u128, u8, u32)]) -> (Table, Vec<Entry>, PerLengthHash) {
    let mut builder = Builder::new();
    let mut kept = Vec::new();
    let all = v4
        .iter()
        .map(|&(a, l, v)| (Prefix::v4(a as u32, l.min(32)).unwrap(), v))
        .chain(v6.iter().map(|&(a, l, v)| (Prefix::v6(a, l).unwrap(), v)));
    for (prefix, value) in all {
        match builder.add(prefix, value) {
            Ok(()) => kept.push(Entry { prefix, value }),
            Err(AddError::Duplicate { existing }) => {
                let first = kept.iter().find(|e| e.prefix == prefix).unwrap();
                assert_eq!(first.value, existing);
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(builder.len(), kept.len());
    let naive = PerLengthHash::new(&kept);
    (builder.build().unwrap(), kept, naive)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn ipv4_matches_brute_force(
        v4 in prefixes(32),
        random in prop::collection::vec(any::<u128>(), 64),
    ) {
        let (table, entries, naive) = build(&v4, &[]);
        for addr in probes(&v4, 32, &random) {
            let want = brute(&entries, addr, true);
            prop_assert_eq!(table.lookup_v4(addr as u32), want, "addr {:#x}", addr);
            prop_assert_eq!(table.lookup_ip(0xffff_0000_0000 | addr, 4), want);
            prop_assert_eq!(table.lookup(0xffff_0000_0000 | addr), want);
            prop_assert_eq!(naive.lookup_v4(addr as u32), want);
            prop_assert_eq!(table.lookup_v6(addr), None);
        }
    }

    #[test]
    fn ipv6_matches_brute_force(
        v6 in prefixes(128),
        random in prop::collection::vec(any::<u128>(), 64),
    ) {
        let (table, entries, naive) = build(&[], &v6);
        for addr in probes(&v6, 128, &random) {
            let want = brute(&entries, addr, false);
            prop_assert_eq!(table.lookup_v6(addr), want, "addr {:#x}", addr);
            prop_assert_eq!(table.lookup_ip(addr, 6), want);
            prop_assert_eq!(naive.lookup_v6(addr), want);
            prop_assert_eq!(table.lookup_v4(addr as u32), None);
        }
    }

    #[test]
    fn both_families_in_one_table(
        v4 in prefixes(32),
        v6 in prefixes(128),
        random in prop::collection::vec(any::<u128>(), 32),
    ) {
        let (table, entries, _) = build(&v4, &v6);
        for addr in probes(&v4, 32, &random) {
            prop_assert_eq!(table.lookup_v4(addr as u32), brute(&entries, addr, true));
        }
        for addr in probes(&v6, 128, &random) {
            prop_assert_eq!(table.lookup_v6(addr), brute(&entries, addr, false));
        }
        prop_assert!(table.memory_bytes() > 0);
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Large tables exercise the index with many buckets.
    #[test]
    fn large_tables_match_the_naive_peer(
        seed_v4 in prop::collection::vec((any::<u32>(), 8u8..=32, 0u32..1000), 2000..4000),
        seed_v6 in prop::collection::vec((any::<u64>(), 16u8..=64, 0u32..1000), 2000..4000),
        random in prop::collection::vec(any::<u128>(), 512),
    ) {
        let v4: Vec<_> = seed_v4.iter().map(|&(a, l, v)| (a as u128, l, v)).collect();
        let v6: Vec<_> = seed_v6.iter().map(|&(a, l, v)| (((a as u128) << 64) | 0x2000 << 112, l, v)).collect();
        let (table, _, naive) = build(&v4, &v6);
        for addr in probes(&v4, 32, &random) {
            prop_assert_eq!(table.lookup_v4(addr as u32), naive.lookup_v4(addr as u32));
        }
        for addr in probes(&v6, 128, &random) {
            prop_assert_eq!(table.lookup_v6(addr), naive.lookup_v6(addr));
        }
    }
}
