//! Dynamic states: ipfw's `keep-state`, `record-state` and `limit`.
//!
//! A state is keyed by the flow in both directions (protocol, and the two
//! address/port ends in a canonical order), remembers the rule that made
//! it, and expires after a lifetime that depends on the protocol and, for
//! TCP, on the SYN/FIN/RST flags seen each way — ipfw's
//! `dyn_update_tcp_state`. Time is whatever the caller says: the packet
//! timestamp in replay, the clock live.
//!
//! Memory is bounded: at most `dyn_max` states (a slab of that many slots
//! at most, plus the index), and a `limit` counter exists only while one of
//! its states lives. The slab and the index are sized for `dyn_max` when
//! the table is made, so they never grow (a growing hash table briefly
//! holds its old and new buckets), and the limit counters when the first
//! `limit` state is made: [`StateTable::memory_for`] is the whole bound.
//! When the table is full a new state is refused and the packet denied, as
//! ipfw does; the refusal is counted.

use crate::program::{Program, ANY_STATE, MAX_STATE_NAMES};
use serde::Serialize;
use std::collections::HashMap;
use std::mem::size_of;
use weir_wire::{proto, tcp, Packet};

const NS: u64 = 1_000_000_000;
/// Expired states are swept at most this often (ipfw's expiry callout runs
/// once a second); a lookup also drops an expired state it meets.
const SWEEP_EVERY_NS: u64 = NS;

/// The tunables, with FreeBSD's defaults ([`weir_rules::STATE_SETTINGS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct StateConfig {
    pub dyn_max: u32,
    pub dyn_syn_lifetime: u32,
    pub dyn_ack_lifetime: u32,
    pub dyn_fin_lifetime: u32,
    pub dyn_rst_lifetime: u32,
    pub dyn_udp_lifetime: u32,
    pub dyn_short_lifetime: u32,
}

impl Default for StateConfig {
    fn default() -> StateConfig {
        let mut c = StateConfig {
            dyn_max: 0,
            dyn_syn_lifetime: 0,
            dyn_ack_lifetime: 0,
            dyn_fin_lifetime: 0,
            dyn_rst_lifetime: 0,
            dyn_udp_lifetime: 0,
            dyn_short_lifetime: 0,
        };
        for (name, value) in weir_rules::STATE_SETTINGS {
            c.set(name, *value);
        }
        c
    }
}

impl StateConfig {
    /// Sets one tunable by its sysctl name; false if there is no such name.
    pub fn set(&mut self, name: &str, value: u32) -> bool {
        let field = match name.strip_prefix("net.inet.ip.fw.").unwrap_or(name) {
            "dyn_max" => &mut self.dyn_max,
            "dyn_syn_lifetime" => &mut self.dyn_syn_lifetime,
            "dyn_ack_lifetime" => &mut self.dyn_ack_lifetime,
            "dyn_fin_lifetime" => &mut self.dyn_fin_lifetime,
            "dyn_rst_lifetime" => &mut self.dyn_rst_lifetime,
            "dyn_udp_lifetime" => &mut self.dyn_udp_lifetime,
            "dyn_short_lifetime" => &mut self.dyn_short_lifetime,
            _ => return false,
        };
        *field = value;
        true
    }
}

/// `limit` mask bits (as [`weir_rules::LIMIT_NAMES`]).
pub mod limit {
    pub const SRC_ADDR: u8 = 1;
    pub const SRC_PORT: u8 = 2;
    pub const DST_ADDR: u8 = 4;
    pub const DST_PORT: u8 = 8;
}

/// A flow in both directions: the lower (address, port) end first, and
/// the state's name (index into `Program::state_names`). The small fields
/// share one word, so hashing and comparing a key is three steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FlowKey {
    a: u128,
    b: u128,
    /// a's port, b's port, protocol, IP version, name: 16+16+8+8+8 bits.
    rest: u64,
}

impl FlowKey {
    /// The key, and whether the packet goes from `a` to `b`.
    #[inline]
    fn of(p: &Packet, name: u8) -> (FlowKey, bool) {
        let (sp, dp) = if p.has_ports {
            (p.src_port, p.dst_port)
        } else {
            (0, 0)
        };
        let forward = (p.src, sp) <= (p.dst, dp);
        let ((a, a_port), (b, b_port)) = if forward {
            ((p.src, sp), (p.dst, dp))
        } else {
            ((p.dst, dp), (p.src, sp))
        };
        let key = FlowKey {
            a,
            b,
            rest: u64::from(a_port)
                | u64::from(b_port) << 16
                | u64::from(p.proto) << 32
                | u64::from(p.ip_version) << 40,
        }
        .named(name);
        (key, forward)
    }

    /// The same flow under state name `name`.
    fn named(self, name: u8) -> FlowKey {
        FlowKey {
            rest: self.rest & !(0xff << 48) | u64::from(name) << 48,
            ..self
        }
    }

    fn a_port(&self) -> u16 {
        self.rest as u16
    }
    fn b_port(&self) -> u16 {
        (self.rest >> 16) as u16
    }
    fn proto(&self) -> u8 {
        (self.rest >> 32) as u8
    }
    fn version(&self) -> u8 {
        (self.rest >> 40) as u8
    }
    fn name(&self) -> u8 {
        (self.rest >> 48) as u8
    }
}

/// The fields a `limit` rule counts together, masked; per rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct LimitKey {
    rule: u32,
    src: u128,
    dst: u128,
    src_port: u16,
    dst_port: u16,
}

impl LimitKey {
    fn of(rule: usize, mask: u8, p: &Packet) -> LimitKey {
        let pick = |bit: u8| mask & bit != 0;
        LimitKey {
            rule: rule as u32,
            src: if pick(limit::SRC_ADDR) { p.src } else { 0 },
            dst: if pick(limit::DST_ADDR) { p.dst } else { 0 },
            src_port: if pick(limit::SRC_PORT) { p.src_port } else { 0 },
            dst_port: if pick(limit::DST_PORT) { p.dst_port } else { 0 },
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct DynState {
    key: FlowKey,
    /// Whether the creating packet went from `key.a` to `key.b`.
    creator_a_to_b: bool,
    /// Index of the rule that made it.
    rule: u32,
    expire_ns: u64,
    /// TCP FIN/SYN/RST seen: the creator's direction in the low byte, the
    /// other in the high byte (ipfw's `state` word).
    tcp_seen: u16,
    packets: u64,
    bytes: u64,
    limit: Option<LimitKey>,
}

/// Totals over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StateStats {
    /// States alive now.
    pub live: u64,
    /// Most states alive at once.
    pub peak: u64,
    pub created: u64,
    pub expired: u64,
    /// New states refused because `dyn_max` states were alive (packet denied).
    pub refused_full: u64,
    /// New states refused by a `limit` rule (packet denied).
    pub refused_limit: u64,
    /// Packets that matched an existing state.
    pub matched: u64,
}

/// One live state, as `weir run --states` lists it.
#[derive(Clone, Debug, Serialize)]
pub struct StateView {
    /// Index of the rule that made it.
    pub rule: usize,
    /// Its state name (index into `Program::state_names`).
    pub name: u8,
    pub proto: u8,
    pub version: u8,
    /// The creating packet's source and destination.
    pub src: u128,
    pub src_port: u16,
    pub dst: u128,
    pub dst_port: u16,
    pub packets: u64,
    pub bytes: u64,
    /// Seconds until it expires (rounded up).
    pub expires_in: u64,
}

/// The table of dynamic states.
pub struct StateTable {
    config: StateConfig,
    /// Slots; `free` lists the empty ones. Never more than `dyn_max`.
    slots: Vec<Option<DynState>>,
    free: Vec<u32>,
    index: HashMap<FlowKey, u32, ahash::RandomState>,
    limits: HashMap<LimitKey, u32, ahash::RandomState>,
    /// Whether `limits` was made (for `dyn_max` entries, when the first
    /// `limit` state came).
    limit_counters: bool,
    now_ns: u64,
    next_sweep_ns: u64,
    stats: StateStats,
    /// The current packet's states, per state name, looked up before its
    /// walk ([`probe`](Self::probe)): `found[k]` is valid when bit k of
    /// `found_names` is set. Kept here so that a stateless program's walk
    /// has nothing to set up.
    found: [Found; MAX_STATE_NAMES],
    found_names: u8,
}

/// The state a packet belongs to, found before its walk.
#[derive(Clone, Copy, Debug, Default)]
pub struct Found {
    slot: u32,
    forward: bool,
    /// Index of the rule that made the state.
    pub rule: usize,
}

impl StateTable {
    pub fn new(config: StateConfig) -> StateTable {
        let max = config.dyn_max as usize;
        StateTable {
            config,
            // Address space only: pages are touched as states come.
            slots: Vec::with_capacity(max),
            free: Vec::with_capacity(max),
            // ahash's per-process random keys: crafted flows cannot aim at
            // one bucket chain.
            index: HashMap::with_capacity_and_hasher(max, Default::default()),
            limits: HashMap::default(),
            limit_counters: false,
            now_ns: 0,
            next_sweep_ns: 0,
            stats: StateStats::default(),
            found: [Found::default(); MAX_STATE_NAMES],
            found_names: 0,
        }
    }

    /// Looks the packet's flow up under each of the first `names` state
    /// names, before its walk; true if it has a state under any.
    #[inline]
    pub fn probe(&mut self, p: &Packet, names: usize) -> bool {
        self.found_names = 0;
        if self.index.is_empty() {
            return false;
        }
        let (key, a_to_b) = FlowKey::of(p, 0);
        if let Some(found) = self.find(&key, a_to_b) {
            self.found[0] = found;
            self.found_names = 1;
        }
        if names > 1 {
            self.probe_other_names(key, a_to_b, names);
        }
        self.found_names != 0
    }

    /// [`probe`](Self::probe) for names past the first (most rulesets
    /// have one name, the default).
    #[inline(never)]
    fn probe_other_names(&mut self, key: FlowKey, a_to_b: bool, names: usize) {
        for name in 1..names.min(MAX_STATE_NAMES) {
            if let Some(found) = self.find(&key.named(name as u8), a_to_b) {
                self.found[name] = found;
                self.found_names |= 1 << name;
            }
        }
    }

    /// The packet's state under `name` ([`ANY_STATE`]: any name, the first
    /// in name order) fires: it is counted and moved on, and the index of
    /// the rule that made it comes back. After a state fires there are no
    /// more lookups for this walk, as in ipfw.
    #[inline]
    pub fn fire(&mut self, p: &Packet, name: u8) -> Option<usize> {
        let k = if name == ANY_STATE {
            self.found_names.trailing_zeros()
        } else {
            u32::from(name)
        };
        if k >= MAX_STATE_NAMES as u32 || self.found_names >> k & 1 == 0 {
            return None;
        }
        self.found_names = 0;
        let found = self.found[k as usize];
        self.hit(found, p);
        Some(found.rule)
    }

    pub fn config(&self) -> &StateConfig {
        &self.config
    }

    pub fn stats(&self) -> StateStats {
        self.stats
    }

    /// Advances the clock (never backwards: a capture whose timestamps go
    /// back does not revive states) and sweeps expired states once a second.
    pub fn set_time(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        if self.now_ns >= self.next_sweep_ns {
            self.sweep();
            self.next_sweep_ns = self.now_ns.saturating_add(SWEEP_EVERY_NS);
        }
    }

    /// The live state of the packet's flow under state name `name`, if any.
    #[inline]
    pub fn lookup(&mut self, p: &Packet, name: u8) -> Option<Found> {
        if self.index.is_empty() {
            return None;
        }
        let (key, a_to_b) = FlowKey::of(p, name);
        self.find(&key, a_to_b)
    }

    /// The live state under `key`; an expired one is removed.
    #[inline]
    fn find(&mut self, key: &FlowKey, a_to_b: bool) -> Option<Found> {
        let slot = *self.index.get(key)?;
        let s = self.slots[slot as usize].as_ref()?;
        if s.expire_ns <= self.now_ns {
            self.remove(slot);
            self.stats.expired += 1;
            return None;
        }
        Some(Found {
            slot,
            forward: a_to_b == s.creator_a_to_b,
            rule: s.rule as usize,
        })
    }

    /// The packet matched its state: count it and move the state on.
    pub fn hit(&mut self, found: Found, p: &Packet) {
        let now = self.now_ns;
        let config = self.config;
        if let Some(s) = self.slots[found.slot as usize].as_mut() {
            s.packets += 1;
            s.bytes += u64::from(p.l3_len);
            s.expire_ns = now.saturating_add(lifetime_ns(&config, s, p, found.forward));
        }
        self.stats.matched += 1;
    }

    /// Makes a state named `name` for the packet's flow on behalf of rule
    /// `rule` (`keep-state`, `record-state`, or `limit` with `limit =
    /// Some((mask, count))`). False when refused: the table is full or the
    /// limit is reached, and the packet is to be denied.
    pub fn install(&mut self, rule: usize, limit: Option<(u8, u32)>, name: u8, p: &Packet) -> bool {
        let (key, a_to_b) = FlowKey::of(p, name);
        if let Some(&slot) = self.index.get(&key) {
            // record-state on a flow that has a state already: ipfw keeps it.
            if self.slots[slot as usize].is_some_and(|s| s.expire_ns > self.now_ns) {
                return true;
            }
            self.remove(slot);
            self.stats.expired += 1;
        }
        if self.index.len() >= self.config.dyn_max as usize {
            self.stats.refused_full += 1;
            return false;
        }
        let limit_key = match limit {
            Some((mask, count)) => {
                let lk = LimitKey::of(rule, mask, p);
                if !self.limit_counters {
                    self.limits.reserve(self.config.dyn_max as usize);
                    self.limit_counters = true;
                }
                let n = self.limits.get(&lk).copied().unwrap_or(0);
                if n >= count {
                    self.stats.refused_limit += 1;
                    return false;
                }
                self.limits.insert(lk, n + 1);
                Some(lk)
            }
            None => None,
        };
        let mut state = DynState {
            key,
            creator_a_to_b: a_to_b,
            rule: rule as u32,
            expire_ns: 0,
            tcp_seen: 0,
            packets: 1,
            bytes: u64::from(p.l3_len),
            limit: limit_key,
        };
        state.expire_ns =
            self.now_ns
                .saturating_add(lifetime_ns(&self.config, &mut state, p, true));
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(state);
                slot
            }
            None => {
                self.slots.push(Some(state));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(key, slot);
        self.stats.created += 1;
        self.stats.live = self.index.len() as u64;
        self.stats.peak = self.stats.peak.max(self.stats.live);
        true
    }

    fn remove(&mut self, slot: u32) {
        if let Some(s) = self.slots[slot as usize].take() {
            self.index.remove(&s.key);
            if let Some(lk) = s.limit {
                match self.limits.get_mut(&lk) {
                    Some(n) if *n > 1 => *n -= 1,
                    _ => {
                        self.limits.remove(&lk);
                    }
                }
            }
            self.free.push(slot);
            self.stats.live = self.index.len() as u64;
        }
    }

    fn sweep(&mut self) {
        let now = self.now_ns;
        let dead: Vec<u32> = (0..self.slots.len() as u32)
            .filter(|&k| self.slots[k as usize].is_some_and(|s| s.expire_ns <= now))
            .collect();
        self.stats.expired += dead.len() as u64;
        for slot in dead {
            self.remove(slot);
        }
    }

    /// Bytes held, an upper estimate: slots, free list, and both indexes.
    /// The indexes are made for `dyn_max` entries and never hold more, so
    /// they never grow and their size follows from it (their `capacity`
    /// drops as removals leave tombstones, so it cannot tell).
    pub fn memory(&self) -> usize {
        let max = self.config.dyn_max as usize;
        let limit_counters = if self.limit_counters {
            map_bytes::<LimitKey>(max)
        } else {
            0
        };
        self.slots.capacity() * size_of::<Option<DynState>>()
            + self.free.capacity() * size_of::<u32>()
            + map_bytes::<FlowKey>(max)
            + limit_counters
    }

    /// The most bytes a table of `dyn_max` states can hold, with or without
    /// `limit` counters: every slot used and freed once, both indexes full.
    pub fn memory_for(dyn_max: u32, limits: bool) -> usize {
        let max = dyn_max as usize;
        let limit_counters = if limits {
            map_bytes::<LimitKey>(max)
        } else {
            0
        };
        max * (size_of::<Option<DynState>>() + size_of::<u32>())
            + map_bytes::<FlowKey>(max)
            + limit_counters
    }

    /// The live states, in rule order, as `ipfw -d show` lists them.
    pub fn live(&self, prog: &Program) -> Vec<StateView> {
        let now = self.now_ns;
        let mut out: Vec<StateView> = self
            .slots
            .iter()
            .flatten()
            .filter(|s| s.expire_ns > now)
            .map(|s| {
                let k = s.key;
                let ((src, src_port), (dst, dst_port)) = if s.creator_a_to_b {
                    ((k.a, k.a_port()), (k.b, k.b_port()))
                } else {
                    ((k.b, k.b_port()), (k.a, k.a_port()))
                };
                StateView {
                    rule: s.rule as usize,
                    name: k.name(),
                    proto: k.proto(),
                    version: k.version(),
                    src,
                    src_port,
                    dst,
                    dst_port,
                    packets: s.packets,
                    bytes: s.bytes,
                    expires_in: (s.expire_ns - now).div_ceil(NS),
                }
            })
            .collect();
        out.sort_by_key(|v| {
            (
                prog.rules[v.rule].number,
                v.src,
                v.src_port,
                v.dst,
                v.dst_port,
            )
        });
        out
    }
}

/// Heap bytes of a hash map of `K` → `u32` made for `capacity` entries:
/// hashbrown keeps a power of two of buckets (at least 8/7 of the entries),
/// each an entry and a control byte, and 16 control bytes more.
fn map_bytes<K>(capacity: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = (capacity.saturating_mul(8) / 7).next_power_of_two().max(4);
    buckets * (size_of::<(K, u32)>() + 1) + 16
}

/// How long the state lives after this packet: ipfw's per-protocol
/// lifetimes, and for TCP its flag state machine.
fn lifetime_ns(c: &StateConfig, s: &mut DynState, p: &Packet, forward: bool) -> u64 {
    let secs = match p.proto {
        proto::TCP => {
            let flags = u16::from(p.tcp_flags & (tcp::FIN | tcp::SYN | tcp::RST));
            s.tcp_seen |= if forward { flags } else { flags << 8 };
            tcp_lifetime(c, s.tcp_seen)
        }
        proto::UDP => c.dyn_udp_lifetime,
        _ => c.dyn_short_lifetime,
    };
    u64::from(secs) * NS
}

fn tcp_lifetime(c: &StateConfig, seen: u16) -> u32 {
    const SYN: u16 = tcp::SYN as u16;
    const FIN: u16 = tcp::FIN as u16;
    const BOTH_SYN: u16 = SYN | SYN << 8;
    const BOTH_FIN: u16 = FIN | FIN << 8;
    match seen {
        SYN => c.dyn_syn_lifetime,
        BOTH_SYN => c.dyn_ack_lifetime,
        s if s == BOTH_SYN | FIN || s == BOTH_SYN | FIN << 8 => c.dyn_ack_lifetime,
        s if s == BOTH_SYN | BOTH_FIN => c.dyn_fin_lifetime,
        // A RST either way, or flags that never made a handshake (a state
        // made by a packet without SYN): ipfw's default branch.
        _ => c.dyn_rst_lifetime,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_wire::{v4_mapped, L3};

    fn tcp_packet(src: u32, sport: u16, dst: u32, dport: u16, flags: u8) -> Packet {
        Packet {
            l3: L3::Ip,
            ip_version: 4,
            src: v4_mapped(src),
            dst: v4_mapped(dst),
            proto: 6,
            src_port: sport,
            dst_port: dport,
            has_ports: true,
            tcp_flags: flags,
            l3_len: 40,
            ..Packet::default()
        }
    }

    #[test]
    fn tcp_lifetimes_follow_the_handshake() {
        let c = StateConfig::default();
        let mut t = StateTable::new(c);
        let syn = tcp_packet(1, 1000, 2, 80, tcp::SYN);
        assert!(t.install(0, None, 0, &syn));
        let reply = tcp_packet(2, 80, 1, 1000, tcp::SYN | tcp::ACK);
        let f = t.lookup(&reply, 0).expect("the reply finds the state");
        assert!(!f.forward);
        t.hit(f, &reply);
        // Both SYNs seen: established, ack lifetime.
        t.set_time(u64::from(c.dyn_ack_lifetime - 1) * NS);
        let ack = tcp_packet(1, 1000, 2, 80, tcp::ACK);
        let f = t.lookup(&ack, 0).expect("alive within the ack lifetime");
        assert!(f.forward);
        t.hit(f, &ack);
        let fin1 = tcp_packet(1, 1000, 2, 80, tcp::FIN | tcp::ACK);
        let f = t.lookup(&fin1, 0).unwrap();
        t.hit(f, &fin1);
        let fin2 = tcp_packet(2, 80, 1, 1000, tcp::FIN | tcp::ACK);
        let f = t.lookup(&fin2, 0).unwrap();
        t.hit(f, &fin2);
        // Both FINs: fin lifetime (1 s) from the last packet.
        let base = t.now_ns;
        t.set_time(base + u64::from(c.dyn_fin_lifetime) * NS);
        assert!(
            t.lookup(&ack, 0).is_none(),
            "closed flows expire after dyn_fin_lifetime"
        );
        assert_eq!(t.stats().live, 0);
    }

    #[test]
    fn a_state_made_without_syn_lives_rst_lifetime() {
        let c = StateConfig::default();
        let mut t = StateTable::new(c);
        let ack = tcp_packet(1, 1000, 2, 80, tcp::ACK);
        assert!(t.install(0, None, 0, &ack));
        t.set_time(u64::from(c.dyn_rst_lifetime) * NS);
        assert!(t.lookup(&ack, 0).is_none());
    }

    #[test]
    fn a_full_table_refuses_and_counts() {
        let c = StateConfig {
            dyn_max: 3,
            ..StateConfig::default()
        };
        let mut t = StateTable::new(c);
        for port in 0..5u16 {
            t.install(0, None, 0, &tcp_packet(1, port, 2, 80, tcp::SYN));
        }
        let s = t.stats();
        assert_eq!((s.created, s.refused_full, s.live), (3, 2, 3));
        // After the syn lifetime the sweep frees the table.
        t.set_time(u64::from(c.dyn_syn_lifetime) * NS);
        assert_eq!(t.stats().live, 0);
        assert!(t.install(0, None, 0, &tcp_packet(1, 9, 2, 80, tcp::SYN)));
    }

    #[test]
    fn states_of_different_names_are_apart() {
        let mut t = StateTable::new(StateConfig::default());
        let syn = tcp_packet(1, 1000, 2, 22, tcp::SYN);
        assert!(t.install(3, None, 1, &syn));
        assert!(t.lookup(&syn, 0).is_none(), "no default-named state");
        assert_eq!(t.lookup(&syn, 1).map(|f| f.rule), Some(3));
        assert!(t.install(5, None, 0, &syn), "the same flow, another name");
        assert_eq!(t.lookup(&syn, 0).map(|f| f.rule), Some(5));
        assert_eq!(t.stats().live, 2);
    }

    #[test]
    fn memory_is_bounded_by_memory_for() {
        for (dyn_max, limits) in [(1, false), (100, true), (65_536, false), (65_536, true)] {
            let mut t = StateTable::new(StateConfig {
                dyn_max,
                ..StateConfig::default()
            });
            let lim = limits.then_some((limit::SRC_PORT, 1));
            for port in 0..=dyn_max.min(70_000) {
                t.install(0, lim, 0, &tcp_packet(1, port as u16, 2, 80, tcp::SYN));
            }
            // Everything expires: the free list fills too.
            t.set_time(1000 * NS);
            let bound = StateTable::memory_for(dyn_max, limits);
            assert!(
                t.memory() <= bound,
                "{dyn_max} {limits}: {} > {bound}",
                t.memory()
            );
            assert!(
                t.memory() * 10 >= bound * 9,
                "{dyn_max} {limits}: the bound is tight"
            );
        }
        // The documented figures (README, "Stateful rules").
        let mib = |b: usize| b as f64 / f64::from(1 << 20);
        assert!(mib(StateTable::memory_for(65_536, false)) < 17.5);
        assert!(mib(StateTable::memory_for(65_536, true)) < 25.7);
        let cap = weir_rules::DYN_MAX_CAP;
        assert!(mib(StateTable::memory_for(cap, false)) < 280.0);
        assert!(mib(StateTable::memory_for(cap, true)) <= 416.0);
    }

    #[test]
    fn limit_counts_per_masked_flow() {
        let mut t = StateTable::new(StateConfig::default());
        let lim = Some((limit::SRC_ADDR, 2));
        assert!(t.install(4, lim, 0, &tcp_packet(1, 1, 2, 80, tcp::SYN)));
        assert!(t.install(4, lim, 0, &tcp_packet(1, 2, 2, 80, tcp::SYN)));
        assert!(!t.install(4, lim, 0, &tcp_packet(1, 3, 2, 80, tcp::SYN)));
        assert!(t.install(4, lim, 0, &tcp_packet(7, 3, 2, 80, tcp::SYN)));
        assert_eq!(t.stats().refused_limit, 1);
        // Expiry gives the slots back to the limit too.
        t.set_time(100 * NS);
        assert!(t.install(4, lim, 0, &tcp_packet(1, 3, 2, 80, tcp::SYN)));
    }
}
