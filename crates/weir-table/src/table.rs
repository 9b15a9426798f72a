//! `Builder` (collects entries, ipfw's duplicate rule) and `Table` (the
//! frozen longest-prefix-match structure, one per family).

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;

use ahash::RandomState;
use std::mem::size_of;
use std::net::IpAddr;

use hashbrown::HashTable;

use crate::prefix::{Entry, Prefix};
use crate::ranges::{Key, Ranges, ResultCode, Span, Wide, MAX_PREFIXES};

/// Caps that keep a hostile table file from exhausting memory. Exceeding one
/// is an error, never an abort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most entries (both families together) a builder accepts.
    pub max_entries: usize,
    /// Most heap bytes the whole load may take: the builder's entries and
    /// index, and at [`Builder::build`] the sort order and the built
    /// [`Table`] beside them ([`Builder::load_bytes`]).
    pub max_bytes: usize,
}

impl Default for Limits {
    /// 4M entries and 512 MiB: four times the 1M-prefix tables the project
    /// targets. 4M IPv6 entries, the most memory a table can take, need
    /// about 400 MiB in all.
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
            AddError::TooManyEntries { max } => {
                write!(f, "table is over its cap of {max} entries")
            }
        }
    }
}

impl std::error::Error for AddError {}

/// Why a table could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// Loading and building would need more than [`Limits::max_bytes`].
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
                "table would need {} to build, more than the cap of {}",
                Bytes(*needed),
                Bytes(*max)
            ),
            BuildError::TooManyPrefixes { max } => {
                write!(f, "table has more than {max} prefixes of one family")
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// A size as people read it: whole MiB when there are any, else bytes.
struct Bytes(usize);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 1 << 20 {
            write!(f, "{} MiB", self.0.div_ceil(1 << 20))
        } else {
            write!(f, "{} bytes", self.0)
        }
    }
}

/// Collects entries, then [`Builder::build`]s a [`Table`].
///
/// Duplicates are refused, as `ipfw table NAME add` refuses them: adding a
/// prefix that is already present (after host bits are cleared) returns
/// [`AddError::Duplicate`] and leaves the first value in place.
///
/// Entries are kept in a flat list per family (12 bytes an IPv4 entry, 24
/// an IPv6 one) with a hash index of positions beside it (4 bytes a slot),
/// a third of what a map of prefixes to values takes.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    v4: Family<u32>,
    v6: Family<Wide>,
    limits: Limits,
    /// Keyed per builder: crafted files cannot aim at one bucket chain.
    hasher: RandomState,
}

/// One family's entries in the order added, and the index that finds one.
#[derive(Clone, Debug, Default)]
struct Family<A> {
    entries: Vec<Stored<A>>,
    index: HashTable<u32>,
}

#[derive(Clone, Copy, Debug)]
struct Stored<A> {
    addr: A,
    value: u32,
    len: u8,
}

impl<A: Key + Hash> Family<A> {
    fn get(&self, hasher: &RandomState, addr: A, len: u8) -> Option<u32> {
        let found = self.index.find(hasher.hash_one((addr, len)), |&i| {
            let e = self.entries[i as usize];
            (e.addr, e.len) == (addr, len)
        })?;
        Some(self.entries[*found as usize].value)
    }

    fn insert(&mut self, hasher: &RandomState, addr: A, len: u8, value: u32) {
        let Family { entries, index } = self;
        index.insert_unique(hasher.hash_one((addr, len)), entries.len() as u32, |&i| {
            let e = entries[i as usize];
            hasher.hash_one((e.addr, e.len))
        });
        entries.push(Stored { addr, value, len });
    }

    /// Takes `(addr, len)` out: the last entry moves into its place.
    fn remove(&mut self, hasher: &RandomState, addr: A, len: u8) -> Option<u32> {
        let Family { entries, index } = self;
        let found = index.find_entry(hasher.hash_one((addr, len)), |&i| {
            let e = entries[i as usize];
            (e.addr, e.len) == (addr, len)
        });
        let (at, _) = found.ok()?.remove();
        let last = entries.len() as u32 - 1;
        if at != last {
            let moved = entries[last as usize];
            let slot = index
                .find_mut(hasher.hash_one((moved.addr, moved.len)), |&i| i == last)
                .expect("every entry is indexed");
            *slot = at;
        }
        Some(entries.swap_remove(at as usize).value)
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.index.clear();
    }

    fn bytes(&self) -> usize {
        // The index: a power of two of slots, 7/8 usable, a control byte each.
        let slots = match self.index.capacity() {
            0 => 0,
            c => (c * 8 / 7).next_power_of_two(),
        };
        self.entries.capacity() * size_of::<Stored<A>>() + slots * (size_of::<u32>() + 1)
    }
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
            Prefix::V4 { addr, len } => self.v4.remove(&self.hasher, addr, len),
            Prefix::V6 { addr, len } => self.v6.remove(&self.hasher, Wide::from_u128(addr), len),
        }
    }

    /// Removes every entry (`ipfw table NAME flush`).
    pub fn clear(&mut self) {
        self.v4.clear();
        self.v6.clear();
    }

    /// Adds `prefix` with `value`.
    pub fn add(&mut self, prefix: Prefix, value: u32) -> Result<(), AddError> {
        self.add_beside(&Builder::new(), prefix, value)
    }

    /// Adds an entry to be built together with `base` ([`build_with`]): a
    /// prefix already in `base` is a duplicate too, and `base`'s entries
    /// count towards the cap. A ruleset's `table NAME add` lines join a
    /// table file this way, without a copy of it.
    ///
    /// [`build_with`]: Builder::build_with
    pub fn add_beside(
        &mut self,
        base: &Builder,
        prefix: Prefix,
        value: u32,
    ) -> Result<(), AddError> {
        if let Some(existing) = base.get(prefix).or_else(|| self.get(prefix)) {
            return Err(AddError::Duplicate { existing });
        }
        let max = self.limits.max_entries;
        if base.len() + self.len() >= max {
            return Err(AddError::TooManyEntries { max });
        }
        let hasher = &self.hasher;
        match prefix {
            Prefix::V4 { addr, len } => self.v4.insert(hasher, addr, len, value),
            Prefix::V6 { addr, len } => self.v6.insert(hasher, Wide::from_u128(addr), len, value),
        }
        Ok(())
    }

    pub fn add_entry(&mut self, entry: Entry) -> Result<(), AddError> {
        self.add(entry.prefix, entry.value)
    }

    /// The value stored for exactly this prefix (not a longest-prefix match).
    pub fn get(&self, prefix: Prefix) -> Option<u32> {
        match prefix {
            Prefix::V4 { addr, len } => self.v4.get(&self.hasher, addr, len),
            Prefix::V6 { addr, len } => self.v6.get(&self.hasher, Wide::from_u128(addr), len),
        }
    }

    pub fn len(&self) -> usize {
        self.v4.entries.len() + self.v6.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every entry, IPv4 first, each family sorted by address then length.
    pub fn entries(&self) -> Vec<Entry> {
        let mut v4: Vec<_> = self
            .v4
            .entries
            .iter()
            .map(|e| (e.addr, e.len, e.value))
            .collect();
        let mut v6: Vec<_> = (self.v6.entries.iter())
            .map(|e| (e.addr.to_u128(), e.len, e.value))
            .collect();
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

    /// Heap bytes the builder holds now.
    pub fn memory_bytes(&self) -> usize {
        self.v4.bytes() + self.v6.bytes()
    }

    /// The most heap bytes loading these builders and building their table
    /// takes at once: the builders, and at build time the result codes, the
    /// sort order and the table.
    pub fn load_bytes(parts: &[&Builder]) -> usize {
        let count = |f: fn(&Builder) -> usize| parts.iter().map(|b| f(b)).sum::<usize>();
        let (v4, v6) = (count(|b| b.v4.entries.len()), count(|b| b.v6.entries.len()));
        count(Builder::memory_bytes) + build_bytes(v4, v6)
    }

    /// Builds the lookup structure. Fails, before allocating it, if the
    /// whole load would exceed [`Limits::max_bytes`].
    pub fn build(&self) -> Result<Table, BuildError> {
        self.build_with(&Builder::new())
    }

    /// Builds one table from this builder's entries and `more`'s (filled
    /// with [`add_beside`](Builder::add_beside)), leaving both as they are.
    pub fn build_with(&self, more: &Builder) -> Result<Table, BuildError> {
        let (len_v4, len_v6) = (
            self.v4.entries.len() + more.v4.entries.len(),
            self.v6.entries.len() + more.v6.entries.len(),
        );
        if len_v4.max(len_v6) > MAX_PREFIXES {
            return Err(BuildError::TooManyPrefixes { max: MAX_PREFIXES });
        }
        let needed = Builder::load_bytes(&[self, more]);
        if needed > self.limits.max_bytes {
            return Err(BuildError::TooBig {
                needed,
                max: self.limits.max_bytes,
            });
        }
        let codes = ValueCodes::new([self, more]);
        let v4 = Ranges::build(sorted_spans(&self.v4, &more.v4, &codes.v4));
        let v6 = Ranges::build(sorted_spans(&self.v6, &more.v6, &codes.v6));
        Ok(Table {
            v4,
            v6,
            values: codes.values,
            len_v4,
            len_v6,
        })
    }
}

/// The most heap bytes building a table of `v4` and `v6` entries takes
/// beside its builders: first the result codes are made; then, with the
/// codes and the values kept, each family is sorted and its ranges built.
fn build_bytes(v4: usize, v6: usize) -> usize {
    let codes = (v4 + v6) * 2 * size_of::<u32>();
    let building = v4.max(v6) * size_of::<u32>()
        + Ranges::<u32>::bytes_for(v4)
        + Ranges::<Wide>::bytes_for(v6);
    ValueCodes::bytes_for(v4 + v6).max(codes + building)
}

/// One family's entries from two builders as spans sorted by (start, len),
/// with their result codes (`codes`, in the same order as the entries).
/// Sorts positions (4 bytes each), not copies of the entries.
fn sorted_spans<'a, A: Key>(
    a: &'a Family<A>,
    b: &'a Family<A>,
    codes: &'a [ResultCode],
) -> impl Iterator<Item = Span> + 'a {
    let at = move |i: u32| {
        let i = i as usize;
        let e = a
            .entries
            .get(i)
            .or_else(|| b.entries.get(i - a.entries.len()))
            .copied()
            .expect("a position into one of the two lists");
        (e, codes.get(i).copied().unwrap_or(0))
    };
    let mut order: Vec<u32> = (0..(a.entries.len() + b.entries.len()) as u32).collect();
    order.sort_unstable_by_key(|&i| {
        let (e, _) = at(i);
        (e.addr, e.len)
    });
    order.into_iter().map(move |i| {
        let (e, code) = at(i);
        Span {
            start: e.addr.to_u128(),
            len: e.len,
            code,
        }
    })
}

/// The codes of one family's entries, in order, in a list made to size.
fn codes_of<A>(
    families: [&Family<A>; 2],
    code: &mut impl FnMut(u32) -> ResultCode,
) -> Vec<ResultCode> {
    let mut out = Vec::with_capacity(families.iter().map(|f| f.entries.len()).sum());
    out.extend(
        families
            .iter()
            .flat_map(|f| &f.entries)
            .map(|e| code(e.value)),
    );
    out
}

/// Each entry's result code, per family in the builders' order, and the
/// distinct values they stand for: code r means `values[r - 1]` (0 means
/// "no match"), numbered in order of first appearance.
struct ValueCodes {
    v4: Vec<ResultCode>,
    v6: Vec<ResultCode>,
    values: Vec<u32>,
}

impl ValueCodes {
    /// The value map lives only while the codes are made, so its memory is
    /// free again before the ranges are built.
    fn new(parts: [&Builder; 2]) -> ValueCodes {
        let mut map: HashMap<u32, ResultCode, RandomState> = HashMap::default();
        let mut values = Vec::new();
        let mut code = |value: u32| {
            *map.entry(value).or_insert_with(|| {
                values.push(value);
                values.len() as ResultCode
            })
        };
        let v4 = codes_of([&parts[0].v4, &parts[1].v4], &mut code);
        let v6 = codes_of([&parts[0].v6, &parts[1].v6], &mut code);
        values.shrink_to_fit();
        ValueCodes { v4, v6, values }
    }

    /// The most bytes making the codes of `n` entries takes at once: every
    /// value distinct, the map at a power of two of buckets, the values
    /// growing by doubling, and a code per entry.
    fn bytes_for(n: usize) -> usize {
        let buckets = (n * 8 / 7).next_power_of_two();
        buckets * (2 * size_of::<u32>() + 1) + 3 * n * size_of::<u32>()
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
    fn entries_beside_a_base_are_checked_against_it_and_built_with_it() {
        let mut base = Builder::with_limits(Limits {
            max_entries: 3,
            max_bytes: 1 << 20,
        });
        base.add(parse_prefix("10.0.0.0/8").unwrap(), 1).unwrap();
        base.add(parse_prefix("2001:db8::/32").unwrap(), 2).unwrap();
        let mut more = Builder::with_limits(base.limits());
        assert_eq!(
            more.add_beside(&base, parse_prefix("10.1.2.3/8").unwrap(), 9),
            Err(AddError::Duplicate { existing: 1 })
        );
        more.add_beside(&base, parse_prefix("10.1.0.0/16").unwrap(), 3)
            .unwrap();
        assert_eq!(
            more.add_beside(&base, parse_prefix("192.0.2.0/24").unwrap(), 4),
            Err(AddError::TooManyEntries { max: 3 })
        );
        let t = base.build_with(&more).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t.lookup_v4(v4("10.1.9.9")), Some(3));
        assert_eq!(t.lookup_v4(v4("10.2.0.0")), Some(1));
        assert_eq!(t.lookup_v6(v6("2001:db8::1")), Some(2));
        assert_eq!(base.len(), 2, "the base is left as it was");
    }

    #[test]
    fn the_whole_load_is_capped() {
        let mut b = Builder::new();
        for i in 0..1000u32 {
            b.add(Prefix::v6(u128::from(i) << 64, 64).unwrap(), i)
                .unwrap();
        }
        let needed = Builder::load_bytes(&[&b]);
        assert!(needed > b.memory_bytes() + Ranges::<Wide>::bytes_for(1000));
        b.limits.max_bytes = needed - 1;
        let refused = b.build().map(|_| ());
        assert_eq!(
            refused,
            Err(BuildError::TooBig {
                needed,
                max: needed - 1
            })
        );
        assert_eq!(
            refused.unwrap_err().to_string(),
            format!(
                "table would need {needed} bytes to build, more than the cap of {} bytes",
                needed - 1
            )
        );
        b.limits.max_bytes = needed;
        let t = b.build().unwrap();
        assert!(t.memory_bytes() + b.memory_bytes() <= needed);
        // The documented bound: the largest table, 4M IPv6 entries, loads
        // within the default cap of 512 MiB.
        let n = Limits::default().max_entries;
        let entries = n.next_power_of_two() * size_of::<Stored<Wide>>();
        let index = (n * 8 / 7).next_power_of_two() * (size_of::<u32>() + 1);
        let biggest = entries + index + build_bytes(0, n);
        assert!(biggest <= Limits::default().max_bytes, "{biggest}");
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
        // Taking out the first entry moves the last into its place; both
        // the moved one and the rest are still found.
        let p24 = Prefix::v4(0x0a01_0200, 24).unwrap();
        let v6 = Prefix::v6(0x2001_0db8 << 96, 32).unwrap();
        b.add(p8, 1).unwrap();
        b.add(p24, 4).unwrap();
        b.add(v6, 6).unwrap();
        assert_eq!(b.remove(p16), Some(3));
        assert_eq!(
            (b.get(p8), b.get(p24), b.get(v6)),
            (Some(1), Some(4), Some(6))
        );
        assert_eq!(b.remove(v6), Some(6));
        assert_eq!((b.len(), b.get(v6)), (2, None));
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
