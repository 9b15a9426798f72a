//! Which packets reach a rule and match it, asked rule by rule.
//!
//! A ruleset with jumps, calls or states is walked once, forwards, for
//! every packet ([`flow::forward`]), and the answers are read off that
//! walk. A plain ruleset ([`Model::plain`]) is never walked as a whole:
//! the set of packets still walking after thousands of rules is the
//! complement of a union of thousands of boxes, and its diagram grows
//! with every broad rule. Instead a question about rule `i` starts from
//! the packets asked about and takes away what earlier rules surely
//! decide, nearest first, passing over rules whose literals clash. When
//! that grows past a budget and a yes with one packet is enough, packets
//! of what is left are drawn and each is checked against every earlier
//! rule: one that none decides is the answer. Only if all draws fail does
//! the exact difference go on.

use crate::bdd::{Cube, Set, FALSE, TRUE};
use crate::flow::{backward, forward, key, Flow, Model, Plain};
use crate::space::Space;
use weir_engine::Verdict;

/// New nodes an answer may make before packets are drawn instead.
pub const BUDGET: usize = 4_000;
/// Packets drawn before the exact difference goes on.
const DRAWS: usize = 8;
/// Differences taken before packets are drawn instead.
const STEPS: usize = 64;

pub(crate) enum Reach {
    Walked(Flow),
    /// With the budget of new nodes before drawing.
    Plain(usize),
}

/// Packets that reach a rule, and whether that is all of them or only
/// some (at least one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hits {
    pub set: Set,
    pub all: bool,
}

impl Reach {
    pub fn new(s: &mut Space, m: &Model, budget: usize) -> Result<Reach, String> {
        Ok(match m.plain {
            Some(_) => Reach::Plain(budget),
            None => Reach::Walked(forward(s, m)?),
        })
    }

    /// The call stacks rule `i` may be reached with.
    pub fn stacks(&self, i: usize) -> Vec<Vec<u32>> {
        match self {
            Reach::Walked(f) => f.states[i].iter().map(|x| x.0.clone()).collect(),
            Reach::Plain(_) => vec![Vec::new()],
        }
    }

    /// Packets of `within` that may reach rule `i` with `stack` and match
    /// it: all of them with `exact`, else at least one if there are any.
    pub fn hits(
        &self,
        s: &mut Space,
        m: &Model,
        i: usize,
        stack: &[u32],
        within: Set,
        exact: bool,
    ) -> Result<Hits, String> {
        match self {
            Reach::Walked(f) => {
                let here = f.states[i]
                    .iter()
                    .find(|x| x.0 == stack)
                    .map_or(FALSE, |x| x.1);
                let set = s.bdd.and(here, within);
                Ok(Hits { set, all: true })
            }
            Reach::Plain(budget) => {
                let mine = s.bdd.and(m.bounds[i].hi, within);
                let mine = s.bdd.and(mine, s.universe);
                uncovered(s, m, i, mine, (!exact).then_some(*budget))
            }
        }
    }

    /// Packets of `within` rule `t` may decide with verdict `v`.
    pub fn decides(
        &self,
        s: &mut Space,
        m: &Model,
        t: usize,
        v: Verdict,
        within: Set,
        exact: bool,
    ) -> Result<Hits, String> {
        match self {
            Reach::Walked(f) => {
                let d = match v {
                    Verdict::Pass => f.pass[t],
                    Verdict::Drop => f.drop[t],
                };
                let set = s.bdd.and(d, within);
                Ok(Hits { set, all: true })
            }
            Reach::Plain(_) => match m.plain.as_ref().map(|p| p[t]) {
                Some(Plain::Decides { verdict, .. }) if verdict == v => {
                    self.hits(s, m, t, &[], within, exact)
                }
                _ => Ok(Hits {
                    set: FALSE,
                    all: true,
                }),
            },
        }
    }

    /// Packets the ruleset may pass.
    pub fn passes(&self, s: &mut Space, m: &Model) -> Result<Set, String> {
        match self {
            Reach::Walked(f) => Ok(s.bdd.any(f.pass.iter().copied())),
            Reach::Plain(_) => {
                let v = backward(s, m)?;
                Ok(v.at.get(&key(&[], 0)).map_or(TRUE, |x| x.1))
            }
        }
    }

    /// Rules whose part of the analysis is not exact, and why.
    pub fn inexact(&self, m: &Model) -> Vec<(usize, &'static str)> {
        match self {
            Reach::Walked(f) => f
                .inexact
                .iter()
                .enumerate()
                .filter_map(|(i, w)| w.map(|w| (i, w)))
                .collect(),
            Reach::Plain(_) => m
                .bounds
                .iter()
                .zip(&m.prog.rules)
                .enumerate()
                .filter_map(|(i, (b, r))| {
                    if r.prob.is_some() {
                        Some((i, b.why.unwrap_or("prob")))
                    } else {
                        b.why.filter(|_| !b.is_exact()).map(|w| (i, w))
                    }
                })
                .collect(),
        }
    }
}

/// `x` less what the rules before `i` of a plain ruleset surely decide;
/// with a budget, once that many nodes are made, maybe one packet of it
/// (and drawn again each time the work doubles; a budget of 0 draws at
/// every step).
fn uncovered(
    s: &mut Space,
    m: &Model,
    i: usize,
    x: Set,
    budget: Option<usize>,
) -> Result<Hits, String> {
    let plain = m.plain.as_deref().expect("a plain ruleset");
    if x == FALSE {
        return Ok(Hits {
            set: FALSE,
            all: true,
        });
    }
    let cube = s.bdd.cube(x);
    let takes = |j: usize| match plain[j] {
        Plain::Decides { sure, .. } if sure != FALSE && !m.cubes[j].clashes(&cube) => Some(sure),
        _ => None,
    };
    let made = s.bdd.len();
    // Draws again each time the work done doubles: what is left shrinks
    // towards the packets no earlier rule takes, so a later draw finds
    // one where an early draw did not, long before the exact difference
    // is done.
    let (mut nodes, mut step_goal) = match budget {
        Some(b) => (b, STEPS),
        None => (usize::MAX, usize::MAX),
    };
    let mut left = x;
    let mut steps = 0;
    for j in (0..i).rev() {
        if left == FALSE {
            break;
        }
        if let Some(sure) = takes(j) {
            left = s.bdd.minus(left, sure);
            steps += 1;
        }
        if s.bdd.len() - made >= nodes || steps >= step_goal {
            nodes = nodes.saturating_mul(2);
            step_goal = step_goal.saturating_mul(2);
            let earlier: Vec<(&Cube, Set)> = (0..j)
                .filter_map(|k| takes(k).map(|e| (&m.cubes[k], e)))
                .collect();
            if let Some(p) = draw(s, left, &earlier) {
                return Ok(Hits { set: p, all: false });
            }
            // No packet drawn: often one earlier rule takes them all,
            // which a check that makes no nodes sees at once.
            if earlier.iter().any(|&(_, e)| s.bdd.subset(left, e)) {
                left = FALSE;
                break;
            }
        }
    }
    s.bdd.full().map_err(|_| crate::flow::too_large())?;
    Ok(Hits {
        set: left,
        all: true,
    })
}

/// A packet of `left` in none of `earlier`, drawn a few times with a
/// fixed seed (the same ruleset gives the same witness).
fn draw(s: &mut Space, left: Set, earlier: &[(&Cube, Set)]) -> Option<Set> {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..DRAWS {
        let bits = s.bdd.draw(left, &mut seed)?;
        let here = Cube::point(&bits);
        let taken = earlier
            .iter()
            .any(|&(c, e)| !c.clashes(&here) && s.bdd.contains(e, &bits));
        if !taken {
            return Some(s.bdd.minterm(&bits));
        }
    }
    None
}
