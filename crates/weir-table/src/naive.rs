//! The naive peer for benchmarks and tests: one hash map per prefix
//! length, probed from the longest length present down to the shortest.
//! Simple enough to trust, and as fast as it gets without a real LPM
//! structure; `benches/lookup.rs` measures [`crate::Table`] against it.

use std::collections::HashMap;

use crate::prefix::{mask128, mask32, Entry, Prefix};

#[derive(Clone, Debug, Default)]
pub struct PerLengthHash {
    v4: Vec<(u8, HashMap<u32, u32>)>,
    v6: Vec<(u8, HashMap<u128, u32>)>,
}

impl PerLengthHash {
    /// Later entries for the same prefix replace earlier ones.
    pub fn new(entries: &[Entry]) -> PerLengthHash {
        let mut v4: HashMap<u8, HashMap<u32, u32>> = HashMap::new();
        let mut v6: HashMap<u8, HashMap<u128, u32>> = HashMap::new();
        for e in entries {
            match e.prefix {
                Prefix::V4 { addr, len } => v4.entry(len).or_default().insert(addr, e.value),
                Prefix::V6 { addr, len } => v6.entry(len).or_default().insert(addr, e.value),
            };
        }
        let mut v4: Vec<_> = v4.into_iter().collect();
        let mut v6: Vec<_> = v6.into_iter().collect();
        v4.sort_unstable_by_key(|&(len, _)| std::cmp::Reverse(len));
        v6.sort_unstable_by_key(|&(len, _)| std::cmp::Reverse(len));
        PerLengthHash { v4, v6 }
    }

    pub fn lookup_v4(&self, addr: u32) -> Option<u32> {
        self.v4
            .iter()
            .find_map(|(len, map)| map.get(&(addr & mask32(*len))).copied())
    }

    pub fn lookup_v6(&self, addr: u128) -> Option<u32> {
        self.v6
            .iter()
            .find_map(|(len, map)| map.get(&(addr & mask128(*len))).copied())
    }
}
