//! Reduced ordered binary decision diagrams over the header bits.
//!
//! Why our own and not a crate: the analysis walks thousands of rules and
//! each step intersects a large "packets that get here" set with a small
//! rule set. With one shared, hash-consed node table and an operation
//! cache, such a step touches only the nodes on the small set's paths.
//! `biodivine-lib-bdd` keeps every diagram as its own node vector, so each
//! step copies the large set (quadratic over a ruleset); `oxidd` shares
//! nodes but brings a manager and threading model far larger than the four
//! operations needed here (and, or, and-not, one satisfying path).
//!
//! Node 0 is false, node 1 is true. A node tests variable `var` (smaller
//! numbers nearer the root) and goes to `lo` when it is 0, `hi` when 1.

use ahash::AHashMap;

/// A diagram: an index into the node table.
pub type Set = u32;
pub const FALSE: Set = 0;
pub const TRUE: Set = 1;

const LEAF: u16 = u16::MAX;
/// The operation cache is dropped past this many entries (bounded memory).
const CACHE_MAX: usize = 1 << 22;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Node {
    var: u16,
    lo: Set,
    hi: Set,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    And,
    Or,
    AndNot,
}

/// The node table: every diagram made lives here until it is dropped.
pub struct Bdd {
    nodes: Vec<Node>,
    unique: AHashMap<Node, Set>,
    cache: AHashMap<(Op, Set, Set), Set>,
    vars: u16,
}

impl Bdd {
    pub fn new(vars: u16) -> Bdd {
        let leaf = |v| Node {
            var: LEAF,
            lo: v,
            hi: v,
        };
        Bdd {
            nodes: vec![leaf(0), leaf(1)],
            unique: AHashMap::new(),
            cache: AHashMap::new(),
            vars,
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

    /// The node `var ? hi : lo`, shared if it exists.
    pub fn node(&mut self, var: u16, lo: Set, hi: Set) -> Set {
        if lo == hi {
            return lo;
        }
        let n = Node { var, lo, hi };
        if let Some(&s) = self.unique.get(&n) {
            return s;
        }
        let s = self.nodes.len() as Set;
        self.nodes.push(n);
        self.unique.insert(n, s);
        s
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

    /// `a ⊆ b`.
    pub fn subset(&mut self, a: Set, b: Set) -> bool {
        self.minus(a, b) == FALSE
    }

    pub fn intersects(&mut self, a: Set, b: Set) -> bool {
        self.and(a, b) != FALSE
    }

    pub fn any(&mut self, sets: impl IntoIterator<Item = Set>) -> Set {
        sets.into_iter().fold(FALSE, |acc, s| self.or(acc, s))
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
        let key = match op {
            Op::And | Op::Or if a > b => (op, b, a),
            _ => (op, a, b),
        };
        if let Some(&s) = self.cache.get(&key) {
            return s;
        }
        let (na, nb) = (self.nodes[a as usize], self.nodes[b as usize]);
        let var = na.var.min(nb.var);
        let (alo, ahi) = if na.var == var {
            (na.lo, na.hi)
        } else {
            (a, a)
        };
        let (blo, bhi) = if nb.var == var {
            (nb.lo, nb.hi)
        } else {
            (b, b)
        };
        let lo = self.apply(op, alo, blo);
        let hi = self.apply(op, ahi, bhi);
        let s = self.node(var, lo, hi);
        if self.cache.len() >= CACHE_MAX {
            self.cache.clear();
        }
        self.cache.insert(key, s);
        s
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
        let mut memo = AHashMap::new();
        let top = self.level(s);
        self.count_from(s, &mut memo) * 2f64.powi(i32::from(top))
    }

    fn level(&self, s: Set) -> u16 {
        let v = self.nodes[s as usize].var;
        if v == LEAF {
            self.vars
        } else {
            v
        }
    }

    /// Assignments of the variables from `s`'s own level down.
    fn count_from(&self, s: Set, memo: &mut AHashMap<Set, f64>) -> f64 {
        if s <= TRUE {
            return f64::from(s);
        }
        if let Some(&c) = memo.get(&s) {
            return c;
        }
        let n = self.nodes[s as usize];
        let mut side = |child: Set| {
            let gap = self.level(child) - n.var - 1;
            self.count_from(child, memo) * 2f64.powi(i32::from(gap))
        };
        let c = side(n.lo) + side(n.hi);
        memo.insert(s, c);
        c
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
    }
}
