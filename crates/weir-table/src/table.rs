//! `Builder` (collects entries, ipfw's duplicate rule) and `Table` (the
//! frozen longest-prefix-match structure, one per family).

use std::collections::HashMap;
use std::fmt;
use std::mem::size_of;
use std::net::IpAddr;

use crate::prefix::{Entry, Prefix};
use crate::ranges::{Key, Ranges, ResultCode, Span, Wide, MAX_PREFIXES};

/// Caps that keep a hostile table file from exhausting memory. Exceeding one
/// is an error, never an abort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most entries (both families together) a builder accepts.
    pub max_entries: usize,
    /// Most heap bytes a built [`Table`] may hold ([`Table::memory_bytes`]).
    pub max_bytes: usize,
}

impl Default for Limits {
    /// 4M entries and 512 MiB: four times the 1M-prefix tables the project
    /// targets, whose built form takes under 64 MiB.
    fn default() -> Self {
        Limits {
            max_entries: 4_000_000,
            max_bytes: 512 << 20,
        }
    }
}

/// Why an entry was not added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddError {
    /// The prefix is already in the table (ipfw: `EEXIST`). Host bits are
    /// cleared before comparing, so `10.1.0.0/8` duplicates `10.0.0.0/8`.
    Duplicate { existing: u32 },
    /// [`Limits::max_entries`] reached.
    TooManyEntries { max: usize },
}

impl fmt::Display for AddError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddError::Duplicate { existing } => {
                write!(
                    f,
                    "duplicate entry: already in the table with value {existing}"
                )
            }
            AddError::TooManyEntries { max } => write!(f, "table has more than {max} entries"),
        }
    }
}

impl std::error::Error for AddError {}

/// Why a table could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// The built table would need more than [`Limits::max_bytes`].
    TooBig { needed: usize, max: usize },
    /// One family has more prefixes than the structure can number
    /// (`MAX_PREFIXES`, about 67M; only reachable with raised limits).
    TooManyPrefixes { max: usize },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::TooBig { needed, max } => write!(
                f,
                "table would need {needed} bytes, more than the limit of {max}"
            ),
            BuildError::TooManyPrefixes { max } => {
                write!(f, "table has more than {max} prefixes of one family")
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// Collects entries, then [`Builder::build`]s a [`Table`].
///
/// Duplicates are refused, as `ipfw table NAME add` refuses them: adding a
/// prefix that is already present (after host bits are cleared) returns
/// [`AddError::Duplicate`] and leaves the first value in place.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    v4: HashMap<(u32, u8), u32>,
    v6: HashMap<(u128, u8), u32>,
    limits: Limits,
}

impl Builder {
    pub fn new() -> Builder {
        Builder::default()
    }

    pub fn with_limits(limits: Limits) -> Builder {
        Builder {
            limits,
            ..Builder::default()
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Removes `prefix` (`ipfw table NAME delete`); its value if it was there.
    pub fn remove(&mut self, prefix: Prefix) -> Option<u32> {
        match prefix {
            Prefix::V4 { addr, len } => self.v4.remove(&(addr, len)),
            Prefix::V6 { addr, len } => self.v6.remove(&(addr, len)),
        }
    }

    /// Removes every entry (`ipfw table NAME flush`).
    pub fn clear(&mut self) {
        self.v4.clear();
        self.v6.clear();
    }

    /// Adds `prefix` with `value`.
    pub fn add(&mut self, prefix: Prefix, value: u32) -> Result<(), AddError> {
        let existing = match prefix {
            Prefix::V4 { addr, len } => self.v4.get(&(addr, len)),
            Prefix::V6 { addr, len } => self.v6.get(&(addr, len)),
        };
        if let Some(&existing) = existing {
            return Err(AddError::Duplicate { existing });
        }
        if self.len() >= self.limits.max_entries {
            return Err(AddError::TooManyEntries {
                max: self.limits.max_entries,
            });
        }
        match prefix {
            Prefix::V4 { addr, len } => self.v4.insert((addr, len), value),
            Prefix::V6 { addr, len } => self.v6.insert((addr, len), value),
        };
        Ok(())
    }

    pub fn add_entry(&mut self, entry: Entry) -> Result<(), AddError> {
        self.add(entry.prefix, entry.value)
    }

    /// The value stored for exactly this prefix (not a longest-prefix match).
    pub fn get(&self, prefix: Prefix) -> Option<u32> {
        match prefix {
            Prefix::V4 { addr, len } => self.v4.get(&(addr, len)).copied(),
            Prefix::V6 { addr, len } => self.v6.get(&(addr, len)).copied(),
        }
    }

    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every entry, IPv4 first, each family sorted by address then length.
    pub fn entries(&self) -> Vec<Entry> {
        let mut v4: Vec<_> = self.v4.iter().map(|(&(a, l), &v)| (a, l, v)).collect();
        let mut v6: Vec<_> = self.v6.iter().map(|(&(a, l), &v)| (a, l, v)).collect();
        v4.sort_unstable();
        v6.sort_unstable();
        let v4 = v4.into_iter().map(|(addr, len, value)| Entry {
            prefix: Prefix::V4 { addr, len },
            value,
        });
        let v6 = v6.into_iter().map(|(addr, len, value)| Entry {
            prefix: Prefix::V6 { addr, len },
            value,
        });
        v4.chain(v6).collect()
    }

    /// Builds the lookup structure. Fails, before allocating it, if it
    /// would exceed [`Limits::max_bytes`].
    pub fn build(&self) -> Result<Table, BuildError> {
        let needed = Ranges::<u32>::bytes_for(self.v4.len())
            + Ranges::<Wide>::bytes_for(self.v6.len())
            + self.len() * size_of::<u32>();
        if self.v4.len().max(self.v6.len()) > MAX_PREFIXES {
            return Err(BuildError::TooManyPrefixes { max: MAX_PREFIXES });
        }
        if needed > self.limits.max_bytes {
            return Err(BuildError::TooBig {
                needed,
                max: self.limits.max_bytes,
            });
        }
        let mut values = ValueCodes::default();
        let v4 = spans(
            self.v4.iter().map(|(&(a, l), &v)| (a as u128, l, v)),
            &mut values,
        );
        let v6 = spans(self.v6.iter().map(|(&(a, l), &v)| (a, l, v)), &mut values);
        let mut values = values.values;
        values.shrink_to_fit();
        Ok(Table {
            v4: Ranges::build(&v4),
            v6: Ranges::build(&v6),
            values,
            len_v4: self.v4.len(),
            len_v6: self.v6.len(),
        })
    }
}

/// Sorted spans for one family, values turned into result codes.
fn spans(entries: impl Iterator<Item = (u128, u8, u32)>, values: &mut ValueCodes) -> Vec<Span> {
    let mut spans: Vec<Span> = entries
        .map(|(start, len, value)| Span {
            start,
            len,
            code: values.code(value),
        })
        .collect();
    spans.sort_unstable_by_key(|s| (s.start, s.len));
    spans
}

/// Distinct values, numbered from 1 (0 means "no match").
#[derive(Default)]
struct ValueCodes {
    codes: HashMap<u32, ResultCode>,
    values: Vec<u32>,
}

impl ValueCodes {
    fn code(&mut self, value: u32) -> ResultCode {
        *self.codes.entry(value).or_insert_with(|| {
            self.values.push(value);
            self.values.len() as ResultCode
        })
    }
}

/// A frozen lookup table: IPv4 and IPv6 prefixes with `u32` values,
/// longest-prefix match. Lookups never allocate.
#[derive(Clone, Debug)]
pub struct Table {
    v4: Ranges<u32>,
    v6: Ranges<Wide>,
    /// Distinct values; result code r means `values[r - 1]`.
    values: Vec<u32>,
    len_v4: usize,
    len_v6: usize,
}

impl Default for Table {
    fn default() -> Self {
        Builder::new()
            .build()
            .expect("an empty table fits any limit")
    }
}

impl Table {
    /// The value of the longest IPv4 prefix containing `addr`.
    #[inline]
    pub fn lookup_v4(&self, addr: u32) -> Option<u32> {
        self.value(self.v4.find(addr))
    }

    /// The value of the longest IPv6 prefix containing `addr`. IPv4
    /// entries never match here, even for `::ffff:a.b.c.d`.
    #[inline]
    pub fn lookup_v6(&self, addr: u128) -> Option<u32> {
        self.value(self.v6.find(Wide::from_u128(addr)))
    }

    /// Lookup of an address as `weir_wire::Packet` stores it, with the
    /// packet's `ip_version`: 4 looks up the low 32 bits among the IPv4
    /// prefixes, anything else the whole address among the IPv6 ones.
    /// This is ipfw's behaviour, and what the engine should call.
    #[inline]
    pub fn lookup_ip(&self, addr: u128, ip_version: u8) -> Option<u32> {
        if ip_version == 4 {
            self.lookup_v4(addr as u32)
        } else {
            self.lookup_v6(addr)
        }
    }

    /// Lookup of a `u128` address in which IPv4 is IPv4-mapped
    /// (`::ffff:a.b.c.d`, `weir_wire::addr_to_u128`): a mapped address
    /// goes to the IPv4 prefixes, any other to the IPv6 ones. An IPv6
    /// packet that really carries a mapped address would be looked up as
    /// IPv4 here; use [`Table::lookup_ip`] when the version is known.
    #[inline]
    pub fn lookup(&self, addr: u128) -> Option<u32> {
        if addr >> 32 == 0xffff {
            self.lookup_v4(addr as u32)
        } else {
            self.lookup_v6(addr)
        }
    }

    pub fn lookup_addr(&self, addr: IpAddr) -> Option<u32> {
        match addr {
            IpAddr::V4(a) => self.lookup_v4(u32::from(a)),
            IpAddr::V6(a) => self.lookup_v6(u128::from(a)),
        }
    }

    #[inline(always)]
    fn value(&self, code: ResultCode) -> Option<u32> {
        code.checked_sub(1)
            .and_then(|i| self.values.get(i as usize).copied())
    }

    /// Number of entries (prefixes) in both families.
    pub fn len(&self) -> usize {
        self.len_v4 + self.len_v6
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len_v4(&self) -> usize {
        self.len_v4
    }

    pub fn len_v6(&self) -> usize {
        self.len_v6
    }

    /// Heap bytes the lookup structure holds.
    pub fn memory_bytes(&self) -> usize {
        self.v4.memory_bytes() + self.v6.memory_bytes() + self.values.capacity() * size_of::<u32>()
    }

    /// Number of disjoint address ranges (IPv4, IPv6) the prefixes cut the
    /// address spaces into; each lookup binary-searches among a few of them.
    pub fn range_counts(&self) -> (usize, usize) {
        (self.v4.range_count(), self.v6.range_count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_prefix;

    fn table(entries: &[(&str, u32)]) -> Table {
        let mut b = Builder::new();
        for &(p, v) in entries {
            b.add(parse_prefix(p).unwrap(), v).unwrap();
        }
        b.build().unwrap()
    }

    fn v4(s: &str) -> u32 {
        u32::from(s.parse::<std::net::Ipv4Addr>().unwrap())
    }

    fn v6(s: &str) -> u128 {
        u128::from(s.parse::<std::net::Ipv6Addr>().unwrap())
    }

    #[test]
    fn empty_table_matches_nothing() {
        let t = Table::default();
        assert!(t.is_empty());
        assert_eq!(t.lookup_v4(0), None);
        assert_eq!(t.lookup_v4(u32::MAX), None);
        assert_eq!(t.lookup_v6(0), None);
        assert_eq!(t.lookup_v6(u128::MAX), None);
    }

    #[test]
    fn default_routes_match_everything_of_their_family() {
        let t = table(&[("0.0.0.0/0", 7)]);
        assert_eq!(t.lookup_v4(0), Some(7));
        assert_eq!(t.lookup_v4(u32::MAX), Some(7));
        assert_eq!(t.lookup_v6(0), None);
        let t = table(&[("::/0", 9)]);
        assert_eq!(t.lookup_v6(u128::MAX), Some(9));
        assert_eq!(t.lookup_v4(0), None);
    }

    #[test]
    fn host_routes_at_the_edges() {
        let t = table(&[
            ("0.0.0.0/32", 1),
            ("255.255.255.255/32", 2),
            ("::/128", 3),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 4),
        ]);
        assert_eq!(t.lookup_v4(0), Some(1));
        assert_eq!(t.lookup_v4(1), None);
        assert_eq!(t.lookup_v4(u32::MAX), Some(2));
        assert_eq!(t.lookup_v4(u32::MAX - 1), None);
        assert_eq!(t.lookup_v6(0), Some(3));
        assert_eq!(t.lookup_v6(u128::MAX), Some(4));
        assert_eq!(t.lookup_v6(u128::MAX - 1), None);
    }

    #[test]
    fn longest_prefix_wins_and_parent_resumes() {
        let t = table(&[
            ("10.0.0.0/8", 1),
            ("10.1.0.0/16", 2),
            ("10.1.2.0/24", 3),
            ("10.1.2.3/32", 4),
            ("10.255.0.0/16", 5),
        ]);
        assert_eq!(t.lookup_v4(v4("10.0.0.1")), Some(1));
        assert_eq!(t.lookup_v4(v4("10.1.0.1")), Some(2));
        assert_eq!(t.lookup_v4(v4("10.1.2.2")), Some(3));
        assert_eq!(t.lookup_v4(v4("10.1.2.3")), Some(4));
        assert_eq!(t.lookup_v4(v4("10.1.2.4")), Some(3));
        assert_eq!(t.lookup_v4(v4("10.1.3.0")), Some(2));
        assert_eq!(t.lookup_v4(v4("10.2.0.0")), Some(1));
        assert_eq!(t.lookup_v4(v4("10.255.255.255")), Some(5));
        assert_eq!(t.lookup_v4(v4("11.0.0.0")), None);
        assert_eq!(t.lookup_v4(v4("9.255.255.255")), None);
    }

    #[test]
    fn families_stay_apart() {
        let t = table(&[
            ("10.0.0.0/8", 1),
            ("::ffff:0:0/96", 2),
            ("2001:db8::/32", 3),
        ]);
        let mapped = 0xffff_0a01_0203_u128;
        assert_eq!(t.lookup_ip(mapped, 4), Some(1));
        assert_eq!(t.lookup_ip(mapped, 6), Some(2));
        assert_eq!(t.lookup(mapped), Some(1));
        assert_eq!(t.lookup(v6("2001:db8::1")), Some(3));
        assert_eq!(t.lookup_addr("10.9.9.9".parse().unwrap()), Some(1));
        assert_eq!(t.lookup_addr("2001:db8:1::".parse().unwrap()), Some(3));
    }

    #[test]
    fn duplicates_are_refused_after_masking() {
        let mut b = Builder::new();
        b.add(parse_prefix("10.0.0.0/8").unwrap(), 1).unwrap();
        assert_eq!(
            b.add(parse_prefix("10.9.9.9/8").unwrap(), 2),
            Err(AddError::Duplicate { existing: 1 })
        );
        // Same bits, other family or length: not duplicates.
        b.add(parse_prefix("10.0.0.0/9").unwrap(), 3).unwrap();
        b.add(parse_prefix("a00::/8").unwrap(), 4).unwrap();
        assert_eq!(b.len(), 3);
        assert_eq!(b.build().unwrap().lookup_v4(v4("10.200.0.0")), Some(1));
    }

    #[test]
    fn remove_and_clear_take_entries_out() {
        let mut b = Builder::new();
        let p8 = Prefix::v4(0x0a00_0000, 8).unwrap();
        let p16 = Prefix::v4(0x0a01_0000, 16).unwrap();
        b.add(p8, 1).unwrap();
        b.add(p16, 2).unwrap();
        assert_eq!(b.remove(p16), Some(2));
        assert_eq!(b.remove(p16), None);
        let t = b.build().unwrap();
        assert_eq!(
            t.lookup_v4(0x0a01_0203),
            Some(1),
            "the /8 answers once the /16 is gone"
        );
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.build().unwrap().lookup_v4(0x0a01_0203), None);
        b.add(p16, 3).expect("a removed prefix can be added again");
    }

    #[test]
    fn limits_are_errors() {
        let mut b = Builder::with_limits(Limits {
            max_entries: 2,
            max_bytes: 1 << 20,
        });
        b.add(Prefix::v4(1, 32).unwrap(), 0).unwrap();
        b.add(Prefix::v4(2, 32).unwrap(), 0).unwrap();
        assert_eq!(
            b.add(Prefix::v4(3, 32).unwrap(), 0),
            Err(AddError::TooManyEntries { max: 2 })
        );
        let mut b = Builder::with_limits(Limits {
            max_entries: 1000,
            max_bytes: 1000,
        });
        for i in 0..100 {
            b.add(Prefix::v6(i << 64, 64).unwrap(), 0).unwrap();
        }
        assert!(matches!(
            b.build(),
            Err(BuildError::TooBig { max: 1000, .. })
        ));
    }

    #[test]
    fn memory_is_reported_and_bounded_by_the_estimate() {
        let mut b = Builder::new();
        for i in 0..1000u32 {
            b.add(Prefix::v4(i << 12, 20).unwrap(), i).unwrap();
            b.add(Prefix::v6((i as u128) << 90, 38).unwrap(), i)
                .unwrap();
        }
        let t = b.build().unwrap();
        let estimate = Ranges::<u32>::bytes_for(1000) + Ranges::<Wide>::bytes_for(1000) + 2000 * 4;
        assert!(
            t.memory_bytes() > 1000 * 4 + 1000 * 16,
            "{}",
            t.memory_bytes()
        );
        assert!(
            t.memory_bytes() <= estimate,
            "{} > {estimate}",
            t.memory_bytes()
        );
        assert_eq!(t.len(), 2000);
    }

    #[test]
    fn crowded_buckets_are_searched_whole() {
        // 40 hosts inside one bucket (the span reaches 200/8), more than an
        // index entry can count: the search covers the widest bucket.
        let mut b = Builder::new();
        for i in 0..40u32 {
            b.add(Prefix::v4(0x0a00_0000 + 2 * i, 32).unwrap(), i)
                .unwrap();
            b.add(
                Prefix::v6((0x2001_u128 << 112) + 2 * i as u128, 128).unwrap(),
                i,
            )
            .unwrap();
        }
        b.add(parse_prefix("200.0.0.0/8").unwrap(), 99).unwrap();
        b.add(parse_prefix("fc00::/7").unwrap(), 99).unwrap();
        let t = b.build().unwrap();
        for i in 0..40u32 {
            assert_eq!(t.lookup_v4(0x0a00_0000 + 2 * i), Some(i));
            assert_eq!(t.lookup_v4(0x0a00_0000 + 2 * i + 1), None);
            assert_eq!(t.lookup_v6((0x2001_u128 << 112) + 2 * i as u128), Some(i));
            assert_eq!(t.lookup_v6((0x2001_u128 << 112) + 2 * i as u128 + 1), None);
        }
        assert_eq!(t.lookup_v4(v4("200.1.2.3")), Some(99));
        assert_eq!(t.lookup_v6(v6("fd00::1")), Some(99));
    }

    #[test]
    fn equal_neighbours_merge_into_one_range() {
        let t = table(&[("10.0.0.0/9", 1), ("10.128.0.0/9", 1), ("10.0.0.0/8", 1)]);
        assert_eq!(t.range_counts().0, 3); // below, 10/8, above
    }
}
