//! Reduced ordered binary decision diagrams over the header bits.
//!
//! Why our own and not a crate: the analysis walks thousands of rules and
//! each step intersects a large "packets that get here" set with a small
//! rule set. With one shared, hash-consed node table and an operation
//! cache, such a step touches only the nodes on the small set's paths.
//! `biodivine-lib-bdd` keeps every diagram as its own node vector, so each
//! step copies the large set (quadratic over a ruleset); `oxidd` shares
//! nodes but brings a manager and threading model far larger than the few
//! operations needed here (and, or, and-not, if-then-else, one satisfying
//! path). Neither was measured against this table: the analysis's cost
//! turned out to be which sets it builds, not the table (BENCHMARKS.md).
//!
//! Node 0 is false, node 1 is true. A node tests variable `var` (smaller
//! numbers nearer the root) and goes to `lo` when it is 0, `hi` when 1.
//! The unique table is open addressing over node indices; the computed
//! table is a fixed-size, direct-mapped cache (an entry is overwritten on
//! a clash), so neither grows past what the nodes need.

/// A diagram: an index into the node table.
pub type Set = u32;
pub const FALSE: Set = 0;
pub const TRUE: Set = 1;

const LEAF: u16 = u16::MAX;
/// Most computed-table entries (16 bytes each).
const CACHE_MAX: usize = 1 << 21;
const CACHE_MIN: usize = 1 << 10;

#[derive(Clone, Copy, PartialEq, Eq)]
struct Node {
    var: u16,
    lo: Set,
    hi: Set,
}

#[derive(Clone, Copy)]
enum Op {
    And = 1,
    Or = 2,
    AndNot = 3,
}

/// The computed-table tags of `ite`, `subset` and `intersects` (after
/// the binary operations').
const ITE: u32 = 4;
const SUBSET: u32 = 5;
const MEETS: u32 = 6;

/// The node table: every diagram made lives here.
pub struct Bdd {
    nodes: Vec<Node>,
    /// Open addressing: node indices, 0 for an empty slot; a power of two
    /// at most half full.
    unique: Vec<Set>,
    /// `[op | a << 3, b, c, result]` per entry; op 0 is an empty entry.
    cache: Vec<[u32; 4]>,
    vars: u16,
    max_nodes: usize,
}

/// The node table is full (see [`Bdd::with_limit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge;

fn mix(a: u32, b: u32, c: u32) -> u64 {
    let x = u64::from(a) | u64::from(b) << 32;
    let x =
        (x ^ u64::from(c).wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^ x >> 29
}

impl Bdd {
    pub fn new(vars: u16) -> Bdd {
        Bdd::with_limit(vars, usize::MAX)
    }

    /// A table that refuses to grow past `max_nodes` nodes: operations
    /// then return [`TooLarge`] through [`Bdd::full`].
    pub fn with_limit(vars: u16, max_nodes: usize) -> Bdd {
        let leaf = |v| Node {
            var: LEAF,
            lo: v,
            hi: v,
        };
        Bdd {
            nodes: vec![leaf(0), leaf(1)],
            unique: vec![0; 1 << 10],
            cache: vec![[0; 4]; CACHE_MIN],
            vars,
            max_nodes,
        }
    }

    pub fn vars(&self) -> u16 {
        self.vars
    }

    /// How many nodes were made (for statistics and memory bounds).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 2
    }

    /// Whether the node limit was reached: results made since are wrong
    /// and the analysis must stop.
    pub fn full(&self) -> Result<(), TooLarge> {
        if self.nodes.len() >= self.max_nodes {
            Err(TooLarge)
        } else {
            Ok(())
        }
    }

    /// Bytes the tables hold.
    pub fn memory(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.unique.capacity() * 4
            + self.cache.capacity() * 16
    }

    /// The variable a set tests first (`vars()` for a leaf).
    pub fn top(&self, s: Set) -> u16 {
        let v = self.nodes[s as usize].var;
        if v == LEAF {
            self.vars
        } else {
            v
        }
    }

    /// Forgets every node made after the first `len` (sets made since are
    /// gone: only sets made before may be used again).
    pub fn truncate(&mut self, len: usize) {
        if len >= self.nodes.len() {
            return;
        }
        self.nodes.truncate(len.max(2));
        self.unique.fill(0);
        let mask = self.unique.len() - 1;
        for (s, n) in self.nodes.iter().enumerate().skip(2) {
            let mut at = mix(u32::from(n.var), n.lo, n.hi) as usize & mask;
            while self.unique[at] != 0 {
                at = (at + 1) & mask;
            }
            self.unique[at] = s as Set;
        }
        self.cache.fill([0; 4]);
    }

    /// The node `var ? hi : lo`, shared if it exists.
    pub fn node(&mut self, var: u16, lo: Set, hi: Set) -> Set {
        if lo == hi {
            return lo;
        }
        let n = Node { var, lo, hi };
        let mask = self.unique.len() - 1;
        let mut at = mix(u32::from(var), lo, hi) as usize & mask;
        loop {
            let s = self.unique[at];
            if s == 0 {
                break;
            }
            if self.nodes[s as usize] == n {
                return s;
            }
            at = (at + 1) & mask;
        }
        if self.nodes.len() >= self.max_nodes {
            // Full: answer something; `full()` tells the caller.
            return FALSE;
        }
        let s = self.nodes.len() as Set;
        self.nodes.push(n);
        self.unique[at] = s;
        if self.nodes.len() * 2 > self.unique.len() {
            self.grow();
        }
        s
    }

    fn grow(&mut self) {
        let size = self.unique.len() * 2;
        self.unique = vec![0; size];
        let mask = size - 1;
        for (s, n) in self.nodes.iter().enumerate().skip(2) {
            let mut at = mix(u32::from(n.var), n.lo, n.hi) as usize & mask;
            while self.unique[at] != 0 {
                at = (at + 1) & mask;
            }
            self.unique[at] = s as Set;
        }
        if self.cache.len() < CACHE_MAX && self.cache.len() < size {
            self.cache = vec![[0; 4]; (self.cache.len() * 4).min(CACHE_MAX)];
        }
    }

    /// The set where variable `var` is `value`.
    pub fn var(&mut self, var: u16, value: bool) -> Set {
        if value {
            self.node(var, FALSE, TRUE)
        } else {
            self.node(var, TRUE, FALSE)
        }
    }

    pub fn and(&mut self, a: Set, b: Set) -> Set {
        self.apply(Op::And, a, b)
    }

    pub fn or(&mut self, a: Set, b: Set) -> Set {
        self.apply(Op::Or, a, b)
    }

    /// `a` and not `b`.
    pub fn minus(&mut self, a: Set, b: Set) -> Set {
        self.apply(Op::AndNot, a, b)
    }

    pub fn not(&mut self, a: Set) -> Set {
        self.apply(Op::AndNot, TRUE, a)
    }

    /// `if f then g else h`.
    pub fn ite(&mut self, f: Set, g: Set, h: Set) -> Set {
        match (f, g, h) {
            (TRUE, _, _) => return g,
            (FALSE, _, _) => return h,
            _ if g == h => return g,
            (_, TRUE, FALSE) => return f,
            (_, TRUE, _) => return self.or(f, h),
            (_, FALSE, _) => return self.minus(h, f),
            (_, _, FALSE) => return self.and(f, g),
            (_, _, TRUE) => {
                let nf = self.not(f);
                return self.or(nf, g);
            }
            _ => {}
        }
        if let Some(r) = self.cached(ITE, f, g, h) {
            return r;
        }
        let var = self.top(f).min(self.top(g)).min(self.top(h));
        let (f0, f1) = self.branches(f, var);
        let (g0, g1) = self.branches(g, var);
        let (h0, h1) = self.branches(h, var);
        let lo = self.ite(f0, g0, h0);
        let hi = self.ite(f1, g1, h1);
        let r = self.node(var, lo, hi);
        self.remember(ITE, f, g, h, r);
        r
    }

    /// `a ⊆ b`, answered without making nodes: the walk stops at the
    /// first path `a` has and `b` lacks (where `minus` would build the
    /// whole difference).
    pub fn subset(&mut self, a: Set, b: Set) -> bool {
        if a == FALSE || b == TRUE || a == b {
            return true;
        }
        if a == TRUE || b == FALSE {
            return false;
        }
        if let Some(r) = self.cached(SUBSET, a, b, 0) {
            return r == TRUE;
        }
        let var = self.top(a).min(self.top(b));
        let (a0, a1) = self.branches(a, var);
        let (b0, b1) = self.branches(b, var);
        let r = self.subset(a0, b0) && self.subset(a1, b1);
        self.remember(SUBSET, a, b, 0, Set::from(r));
        r
    }

    /// Whether `a` and `b` share a packet, without making nodes.
    pub fn intersects(&mut self, a: Set, b: Set) -> bool {
        if a == FALSE || b == FALSE {
            return false;
        }
        if a == TRUE || b == TRUE || a == b {
            return true;
        }
        let (a, b) = if a > b { (b, a) } else { (a, b) };
        if let Some(r) = self.cached(MEETS, a, b, 0) {
            return r == TRUE;
        }
        let var = self.top(a).min(self.top(b));
        let (a0, a1) = self.branches(a, var);
        let (b0, b1) = self.branches(b, var);
        let r = self.intersects(a0, b0) || self.intersects(a1, b1);
        self.remember(MEETS, a, b, 0, Set::from(r));
        r
    }

    pub fn any(&mut self, sets: impl IntoIterator<Item = Set>) -> Set {
        sets.into_iter().fold(FALSE, |acc, s| self.or(acc, s))
    }

    fn branches(&self, s: Set, var: u16) -> (Set, Set) {
        let n = self.nodes[s as usize];
        if n.var == var {
            (n.lo, n.hi)
        } else {
            (s, s)
        }
    }

    fn slot(&self, tag: u32, a: Set, b: Set, c: Set) -> usize {
        (mix(a, b, c ^ tag << 29) as usize) & (self.cache.len() - 1)
    }

    fn cached(&self, tag: u32, a: Set, b: Set, c: Set) -> Option<Set> {
        let e = self.cache[self.slot(tag, a, b, c)];
        (e[0] == tag | a << 3 && e[1] == b && e[2] == c).then_some(e[3])
    }

    fn remember(&mut self, tag: u32, a: Set, b: Set, c: Set, r: Set) {
        let at = self.slot(tag, a, b, c);
        self.cache[at] = [tag | a << 3, b, c, r];
    }

    fn apply(&mut self, op: Op, a: Set, b: Set) -> Set {
        match op {
            Op::And => {
                if a == FALSE || b == FALSE {
                    return FALSE;
                }
                if a == TRUE || a == b {
                    return b;
                }
                if b == TRUE {
                    return a;
                }
            }
            Op::Or => {
                if a == TRUE || b == TRUE {
                    return TRUE;
                }
                if a == FALSE || a == b {
                    return b;
                }
                if b == FALSE {
                    return a;
                }
            }
            Op::AndNot => {
                if a == FALSE || b == TRUE || a == b {
                    return FALSE;
                }
                if b == FALSE {
                    return a;
                }
            }
        }
        let (a, b) = match op {
            Op::And | Op::Or if a > b => (b, a),
            _ => (a, b),
        };
        if let Some(r) = self.cached(op as u32, a, b, 0) {
            return r;
        }
        let var = self.top(a).min(self.top(b));
        let (alo, ahi) = self.branches(a, var);
        let (blo, bhi) = self.branches(b, var);
        let lo = self.apply(op, alo, blo);
        let hi = self.apply(op, ahi, bhi);
        let r = self.node(var, lo, hi);
        self.remember(op as u32, a, b, 0, r);
        r
    }

    /// One member of `s`: the value of each variable on one path to true,
    /// taking 0 where the path allows (variables off the path are 0 too).
    pub fn pick(&self, s: Set) -> Option<Vec<bool>> {
        if s == FALSE {
            return None;
        }
        let mut bits = vec![false; usize::from(self.vars)];
        let mut at = s;
        while at != TRUE {
            let n = self.nodes[at as usize];
            if n.lo != FALSE {
                at = n.lo;
            } else {
                bits[usize::from(n.var)] = true;
                at = n.hi;
            }
        }
        Some(bits)
    }

    /// A member of `s` drawn at random: each variable 0 or 1 by the next
    /// numbers of the xorshift generator `seed`, where `s` allows both.
    pub fn draw(&self, s: Set, seed: &mut u64) -> Option<Vec<bool>> {
        if s == FALSE {
            return None;
        }
        let mut coin = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed & 1 == 1
        };
        let mut bits: Vec<bool> = (0..self.vars).map(|_| coin()).collect();
        let mut at = s;
        while at != TRUE {
            let n = self.nodes[at as usize];
            let one = if n.lo == FALSE {
                true
            } else if n.hi == FALSE {
                false
            } else {
                coin()
            };
            bits[usize::from(n.var)] = one;
            at = if one { n.hi } else { n.lo };
        }
        Some(bits)
    }

    /// The set of one assignment.
    pub fn minterm(&mut self, bits: &[bool]) -> Set {
        let mut s = TRUE;
        for v in (0..self.vars).rev() {
            s = if bits[usize::from(v)] {
                self.node(v, FALSE, s)
            } else {
                self.node(v, s, FALSE)
            };
        }
        s
    }

    /// Whether the assignment `bits` is in `s`.
    pub fn contains(&self, s: Set, bits: &[bool]) -> bool {
        let mut at = s;
        while at > TRUE {
            let n = self.nodes[at as usize];
            at = if bits[usize::from(n.var)] { n.hi } else { n.lo };
        }
        at == TRUE
    }

    /// How many assignments of all the variables are in `s`, as a float
    /// (a measure for choosing among sets; exact up to f64 rounding).
    pub fn count(&self, s: Set) -> f64 {
        let mut memo = ahash::AHashMap::new();
        let top = self.top(s);
        self.count_from(s, &mut memo) * 2f64.powi(i32::from(top))
    }

    /// Assignments of the variables from `s`'s own level down.
    fn count_from(&self, s: Set, memo: &mut ahash::AHashMap<Set, f64>) -> f64 {
        if s <= TRUE {
            return f64::from(s);
        }
        if let Some(&c) = memo.get(&s) {
            return c;
        }
        let n = self.nodes[s as usize];
        let mut side = |child: Set| {
            let gap = self.top(child) - n.var - 1;
            self.count_from(child, memo) * 2f64.powi(i32::from(gap))
        };
        let c = side(n.lo) + side(n.hi);
        memo.insert(s, c);
        c
    }

    /// The literals every member of `s` has: a quick test that two sets
    /// are disjoint without building their intersection.
    pub fn cube(&self, s: Set) -> Cube {
        assert!(
            usize::from(self.vars) <= CUBE_WORDS * 64,
            "cubes hold 512 variables"
        );
        let mut memo: ahash::AHashMap<Set, Cube> = ahash::AHashMap::new();
        self.cube_of(s, &mut memo)
    }

    fn cube_of(&self, s: Set, memo: &mut ahash::AHashMap<Set, Cube>) -> Cube {
        if s == TRUE {
            return Cube::free();
        }
        if s == FALSE {
            return Cube::empty_set();
        }
        if let Some(c) = memo.get(&s) {
            return *c;
        }
        let n = self.nodes[s as usize];
        let c = if n.lo == FALSE {
            self.cube_of(n.hi, memo).with(n.var, true)
        } else if n.hi == FALSE {
            self.cube_of(n.lo, memo).with(n.var, false)
        } else {
            let lo = self.cube_of(n.lo, memo);
            let hi = self.cube_of(n.hi, memo);
            lo.common(&hi)
        };
        memo.insert(s, c);
        c
    }
}

/// Words of a [`Cube`]: room for 512 variables.
const CUBE_WORDS: usize = 8;

/// A conjunction of literals: `care` bits are fixed to the bits of
/// `value`; `empty` stands for the empty set (it clashes with every cube).
/// Fixed-size, so a list of cubes is one block of memory to scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cube {
    care: [u64; CUBE_WORDS],
    value: [u64; CUBE_WORDS],
    empty: bool,
}

impl Cube {
    fn free() -> Cube {
        Cube {
            care: [0; CUBE_WORDS],
            value: [0; CUBE_WORDS],
            empty: false,
        }
    }

    fn empty_set() -> Cube {
        Cube {
            empty: true,
            ..Cube::free()
        }
    }

    /// The cube of one assignment.
    pub fn point(bits: &[bool]) -> Cube {
        assert!(bits.len() <= CUBE_WORDS * 64, "cubes hold 512 variables");
        let mut c = Cube::free();
        for (v, &b) in bits.iter().enumerate() {
            c.care[v / 64] |= 1 << (v % 64);
            c.value[v / 64] |= u64::from(b) << (v % 64);
        }
        c
    }

    fn with(mut self, var: u16, bit: bool) -> Cube {
        let (w, b) = (usize::from(var / 64), var % 64);
        self.care[w] |= 1 << b;
        if bit {
            self.value[w] |= 1 << b;
        } else {
            self.value[w] &= !(1 << b);
        }
        self
    }

    /// The literals both have (of the empty set: the other's).
    fn common(&self, o: &Cube) -> Cube {
        if self.empty {
            return *o;
        }
        if o.empty {
            return *self;
        }
        let mut c = Cube::free();
        for w in 0..CUBE_WORDS {
            c.care[w] = self.care[w] & o.care[w] & !(self.value[w] ^ o.value[w]);
            c.value[w] = self.value[w] & c.care[w];
        }
        c
    }

    /// Whether a set whose cube this is may hold a set whose cube is `x`:
    /// every literal here is one of `x`'s (a set implies the literals of
    /// any set holding it).
    #[inline]
    pub fn may_hold(&self, x: &Cube) -> bool {
        if x.empty {
            return true;
        }
        if self.empty {
            return false;
        }
        let mut missing = 0;
        for w in 0..CUBE_WORDS {
            missing |= self.care[w] & !(x.care[w] & !(self.value[w] ^ x.value[w]));
        }
        missing == 0
    }

    /// Whether no assignment has both cubes' literals.
    #[inline]
    pub fn clashes(&self, o: &Cube) -> bool {
        let mut clash = 0;
        for w in 0..CUBE_WORDS {
            clash |= self.care[w] & o.care[w] & (self.value[w] ^ o.value[w]);
        }
        clash != 0 || self.empty || o.empty
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laws_hold_on_small_sets() {
        let mut b = Bdd::new(3);
        let (x, y) = (b.var(0, true), b.var(2, true));
        let xy = b.and(x, y);
        let x_or_y = b.or(x, y);
        assert_eq!(b.count(xy), 2.0);
        assert_eq!(b.count(x_or_y), 6.0);
        let ny = b.not(y);
        let x_not_y = b.and(x, ny);
        let back = b.or(xy, x_not_y);
        assert_eq!(back, x, "hash-consing makes equal sets equal nodes");
        assert!(b.subset(xy, x_or_y));
        assert_eq!(b.minus(x, x_or_y), FALSE);
        let p = b.pick(xy).unwrap();
        assert_eq!(p, vec![true, false, true]);
        assert_eq!(b.pick(FALSE), None);
        let z = b.var(1, true);
        let by_ite = b.ite(x, y, z);
        let (xy2, nx) = (b.and(x, y), b.not(x));
        let nxz = b.and(nx, z);
        assert_eq!(by_ite, b.or(xy2, nxz));
    }

    #[test]
    fn cubes_tell_disjoint_sets_apart() {
        let mut b = Bdd::new(130);
        let (x, y, z) = (b.var(3, true), b.var(70, false), b.var(129, true));
        let xy = b.and(x, y);
        let nx = b.not(x);
        let nx_z = b.and(nx, z);
        let either = b.or(xy, nx_z);
        assert!(b.cube(xy).clashes(&b.cube(nx_z)));
        assert!(!b.cube(xy).clashes(&b.cube(z)));
        // The union keeps no literal of x: it may meet anything.
        assert!(!b.cube(either).clashes(&b.cube(nx)));
        assert!(b.cube(FALSE).clashes(&b.cube(TRUE)));
    }

    #[test]
    fn truncating_forgets_what_came_after() {
        let mut b = Bdd::new(8);
        let x = b.var(0, true);
        let keep = b.len();
        let y = b.var(1, true);
        let xy = b.and(x, y);
        b.truncate(keep);
        assert_eq!(b.len(), keep);
        let z = b.var(2, true);
        let xz = b.and(x, z);
        assert_eq!(b.count(xz), 64.0);
        assert!(xy >= keep as Set && z >= keep as Set);
        assert_eq!(b.and(x, x), x);
    }

    /// A union of cubes over 6 variables: each cube a list of
    /// (variable, value) literals.
    fn union(b: &mut Bdd, cubes: &[Vec<(u16, bool)>]) -> Set {
        let mut u = FALSE;
        for c in cubes {
            let mut x = TRUE;
            for &(v, val) in c {
                let l = b.var(v, val);
                x = b.and(x, l);
            }
            u = b.or(u, x);
        }
        u
    }

    fn cubes() -> impl proptest::strategy::Strategy<Value = Vec<Vec<(u16, bool)>>> {
        use proptest::prelude::*;
        prop::collection::vec(prop::collection::vec((0u16..6, any::<bool>()), 0..4), 0..5)
    }

    proptest::proptest! {
        #[test]
        fn subset_and_intersects_agree_with_every_assignment(x in cubes(), y in cubes()) {
            let mut b = Bdd::new(6);
            let (a, c) = (union(&mut b, &x), union(&mut b, &y));
            let made = b.len();
            let (sub, meets) = (b.subset(a, c), b.intersects(a, c));
            proptest::prop_assert_eq!(b.len(), made, "no nodes made");
            let (mut want_sub, mut want_meets) = (true, false);
            for n in 0..64u32 {
                let bits: Vec<bool> = (0..6).map(|v| n >> v & 1 == 1).collect();
                let (in_a, in_c) = (b.contains(a, &bits), b.contains(c, &bits));
                want_sub &= !in_a || in_c;
                want_meets |= in_a && in_c;
            }
            proptest::prop_assert_eq!(sub, want_sub);
            proptest::prop_assert_eq!(meets, want_meets);
            proptest::prop_assert_eq!(sub, b.minus(a, c) == FALSE);
            if sub {
                proptest::prop_assert!(b.cube(c).may_hold(&b.cube(a)));
            }
        }
    }

    #[test]
    fn a_full_table_says_so() {
        let mut b = Bdd::with_limit(64, 40);
        let mut s = TRUE;
        for v in 0..64 {
            let x = b.var(v, v % 2 == 0);
            s = b.and(s, x);
        }
        assert_eq!(b.full(), Err(TooLarge));
        assert!(b.len() <= 40);
    }
}
