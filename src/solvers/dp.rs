//! The fast exact DP ("dp"): the dense recurrence of MODEL.md section 4, restricted to the states
//! that can still lead to an optimum.
//!
//! The round problem is a multiple-choice knapsack with one capacity per GPU type. Following the
//! core idea of Pisinger's exact knapsack algorithms (Minknap, Mcknap; Pisinger, "A minimal
//! algorithm for the multiple-choice knapsack problem", EJOR 83, 1995; Kellerer, Pferschy and
//! Pisinger, *Knapsack Problems*, 2004, chapters 5 and 11), it combines:
//!
//! 1. **Aggregation.** Jobs with identical admissible options (same type, units and value) form a
//!    class with a count; everything below works per class, so 10,000 jobs of 26 Gavel job types
//!    are about a hundred classes, and 1,000 copies of one job are one.
//! 2. **Lagrangian (LP) bound.** For multipliers mu_k >= 0 (one per GPU type),
//!    L(mu) = sum_k mu_k C_k + sum_c n_c max_q rc(q), rc(q) = v_q - mu_(k(q)) * units_q
//!    (idle: rc = 0, only if the job may idle) bounds every solution from above. mu minimizes L
//!    by exact line searches (upper envelopes of lines, weighted selection of the breakpoints);
//!    for this structure min L(mu) equals the LP relaxation.
//! 3. **Reduced-cost fixing and gap deepening.** Any solution x satisfies
//!    V(x) = L(mu) - sum_j delta_j(x_j) - mu . slack(x), with delta_j = max rc_j - rc_j(x_j) >= 0,
//!    so a solution worth >= L - g uses only choices with delta <= g. The DP runs with floor
//!    L - g for g = 1e-9 |L|, 2g, 4g, ... (1.25 g per run once the runs are expensive) until
//!    a run finds a solution, which is then optimal; the last run uses a greedy's value as the
//!    floor.
//! 4. **Class DP over the core.** One layer per undecided class, a transition is a count vector
//!    (how many of the class's jobs take each kept choice), states are unit vectors over the
//!    types that can bind (dominance: the larger value wins), pruned by capacity and by the
//!    Lagrangian bound of the remaining classes at several probe multipliers; on expensive runs
//!    also by partial relaxations that keep the capacities of two types exact (dense tables
//!    over their grid, [`TypeTables`]), which see the integrality the LP bound cannot.
//!
//! Every pruning rule removes only states whose every completion is worth less than the floor
//! (proofs in docs/solver.md), so the answer is the optimum. Worst case: the core is all classes
//! and the states are the whole grid, the dense DP's O(n * prod_k (C_k + 1) * |O|) time; the guard
//! refuses a layer past [`Dp::max_states`], or a solve whose runs create (or, predicted from the
//! growth of the last runs, would create) more than twice that, instead of exhausting memory
//! or time.
//! Typical case: O(P 3^K sum |Q_c|^2) for the bound, plus a few DP runs over a core of a few
//! classes (measured figures in docs/performance.md).

use std::time::Instant;

use rustc_hash::FxHashMap;

use super::{SolveError, Solver};
use crate::formulation::RoundProblem;
use crate::solution::{Assignment, Solution, Status};
use crate::solution::{Infeasibility, SolveStats};

/// The fast exact DP.
#[derive(Debug, Clone, Copy)]
pub struct Dp {
    /// Largest number of states one DP layer may hold before the solver gives up with
    /// [`SolveError::TooLarge`] (default 4,000,000, about 100 bytes each while a layer is built);
    /// all gap-deepening runs of one solve together may create twice as many (a run keeps its
    /// states' parent and count vector for reconstruction), so the solver stays under about
    /// 1 GiB, and it stops as soon as the growth of its last runs predicts that the next one
    /// would go past that (docs/solver.md, step 5).
    pub max_states: usize,
    /// Once a gap-deepening run creates more than this many states (default 100,000), every
    /// later run of the solve also bounds its states by the exact tables of pairs of types
    /// (`TypeTables` in the source, docs/solver.md step 6) and the gap grows by 1.25 per run
    /// instead of 2. Any value gives the optimum; 0 turns both on from the first run, and
    /// the tables at any cost up to their fixed limits (the tests use it to check the tables on
    /// small instances).
    pub tables_after_states: u64,
}

impl Default for Dp {
    fn default() -> Self {
        Dp {
            max_states: 4_000_000,
            tables_after_states: TABLES_AFTER_STATES,
        }
    }
}

/// One choice of a job: an admissible option or idle.
#[derive(Debug, Clone, Copy)]
struct Choice {
    /// GPU type, `None` for idle.
    gpu: Option<usize>,
    units: u64,
    value: f64,
    /// The option's slot (for the assignment).
    slot: u32,
}

/// Jobs with identical choices.
struct Class {
    choices: Vec<Choice>,
    forced: bool,
    jobs: Vec<usize>,
}

fn choices_of(problem: &RoundProblem, j: usize) -> Vec<Choice> {
    let job = &problem.jobs[j];
    let mut out: Vec<Choice> = job
        .options
        .iter()
        .map(|o| Choice {
            gpu: Some(o.gpu),
            units: o.units,
            value: o.value,
            slot: o.slot,
        })
        .collect();
    if job.may_idle() {
        out.push(Choice {
            gpu: None,
            units: 0,
            value: 0.0,
            slot: 0,
        });
    }
    out
}

fn classes(problem: &RoundProblem) -> Vec<Class> {
    let mut index: FxHashMap<Vec<(usize, u32, u64, u64)>, usize> = FxHashMap::default();
    let mut out: Vec<Class> = Vec::new();
    for j in 0..problem.jobs.len() {
        let choices = choices_of(problem, j);
        let key: Vec<(usize, u32, u64, u64)> = choices
            .iter()
            .map(|c| {
                (
                    c.gpu.map_or(usize::MAX, |g| g),
                    c.slot,
                    c.units,
                    c.value.to_bits(),
                )
            })
            .collect();
        match index.get(&key) {
            Some(&c) => out[c].jobs.push(j),
            None => {
                index.insert(key, out.len());
                out.push(Class {
                    forced: !problem.jobs[j].may_idle(),
                    choices,
                    jobs: vec![j],
                });
            }
        }
    }
    out
}

fn rc(c: &Choice, mu: &[f64]) -> f64 {
    match c.gpu {
        Some(k) => c.value - mu[k] * c.units as f64,
        None => 0.0,
    }
}

fn best_rc(choices: &[Choice], mu: &[f64]) -> f64 {
    choices
        .iter()
        .map(|c| rc(c, mu))
        .fold(f64::NEG_INFINITY, f64::max)
}

/// The classes' choices flattened for the bound's inner loops (structure of arrays). Idle is a
/// choice on the pseudo-type K, whose price and direction are always 0.
struct Flat {
    k: usize,
    /// Class c's choices are `start[c]..start[c + 1]`.
    start: Vec<usize>,
    gpu: Vec<usize>,
    units: Vec<f64>,
    value: Vec<f64>,
    /// Jobs per class.
    count: Vec<f64>,
    capacity: Vec<f64>,
}

impl Flat {
    fn new(classes: &[Class], capacity: &[u64]) -> Flat {
        let k = capacity.len();
        let mut f = Flat {
            k,
            start: vec![0],
            gpu: Vec::new(),
            units: Vec::new(),
            value: Vec::new(),
            count: Vec::new(),
            capacity: capacity.iter().map(|&c| c as f64).collect(),
        };
        for cl in classes {
            for c in &cl.choices {
                f.gpu.push(c.gpu.unwrap_or(k));
                f.units.push(c.units as f64);
                f.value.push(c.value);
            }
            f.start.push(f.gpu.len());
            f.count.push(cl.jobs.len() as f64);
        }
        f
    }

    /// L(mu) = sum_k mu_k C_k + sum_c n_c max_q rc_q (Lemma 1 of docs/solver.md).
    fn lagrangian(&self, mu: &[f64]) -> f64 {
        let mut price = mu.to_vec();
        price.push(0.0);
        let mut l: f64 = mu.iter().zip(&self.capacity).map(|(m, c)| m * c).sum();
        for c in 0..self.count.len() {
            let mut best = f64::NEG_INFINITY;
            for q in self.start[c]..self.start[c + 1] {
                best = best.max(self.value[q] - price[self.gpu[q]] * self.units[q]);
            }
            if best > f64::NEG_INFINITY {
                l += self.count[c] * best;
            }
        }
        l
    }

    /// Class c's maximizing choice at prices `price` as (rc, d . u), ties to the smallest d . u;
    /// `None` for a class without choices. `price` and `dir` have the idle pseudo-type's 0 last.
    fn maximizer(&self, c: usize, price: &[f64], dir: &[f64]) -> Option<(f64, f64)> {
        let mut best: Option<(f64, f64)> = None;
        for q in self.start[c]..self.start[c + 1] {
            let a = self.value[q] - price[self.gpu[q]] * self.units[q];
            let b = dir[self.gpu[q]] * self.units[q];
            if best.is_none_or(|(ab, bb)| a > ab || (a == ab && b < bb)) {
                best = Some((a, b));
            }
        }
        best
    }

    /// Minimizes t -> L(mu + t d) exactly over the t that keep mu in [0, cap]. Along d each
    /// class's term is the upper envelope of the lines rc_q(mu) - t (d . u_q); walking every
    /// class's envelope gives the breakpoints where the slope of L grows, and the minimum is the
    /// first breakpoint where the slope turns >= 0. O(total choices * envelope steps + B)
    /// for B breakpoints (expected, by weighted selection), about the cost of a few evaluations of L (where a bisection on the
    /// slope costs 64). Returns whether mu moved.
    fn line_search(
        &self,
        mu: &mut [f64],
        d: &[f64],
        cap: &[f64],
        breaks: &mut Vec<(f64, f64)>,
    ) -> bool {
        let k = self.k;
        let mut price = mu.to_vec();
        price.push(0.0);
        let mut dir = d.to_vec();
        dir.push(0.0);
        let mut hi = f64::INFINITY;
        for (t, &dt) in d.iter().enumerate() {
            if dt > 0.0 {
                hi = hi.min((cap[t] - mu[t]) / dt);
            } else if dt < 0.0 {
                hi = hi.min(mu[t] / -dt);
            }
        }
        if !(hi > 0.0 && hi.is_finite()) {
            return false;
        }
        // Right slope at t = 0: each class on its maximizer, ties to the smallest d . u (the one
        // that stays maximal as t grows). Most directions do not descend: check that first.
        let mut slope: f64 = dir
            .iter()
            .take(k)
            .zip(&self.capacity)
            .map(|(x, c)| x * c)
            .sum();
        for c in 0..self.count.len() {
            if let Some((_, b)) = self.maximizer(c, &price, &dir) {
                slope -= self.count[c] * b;
            }
        }
        if slope >= 0.0 {
            return false;
        }
        breaks.clear();
        for c in 0..self.count.len() {
            let range = self.start[c]..self.start[c + 1];
            let Some((mut a_cur, mut b_cur)) = self.maximizer(c, &price, &dir) else {
                continue;
            };
            // The envelope to the right: the next maximizer is the line of smaller slope
            // (smaller d . u) that crosses the current one first.
            loop {
                let mut next: Option<(f64, f64, f64)> = None;
                for q in range.clone() {
                    let b = dir[self.gpu[q]] * self.units[q];
                    if b < b_cur {
                        let a = self.value[q] - price[self.gpu[q]] * self.units[q];
                        let t = ((a_cur - a) / (b_cur - b)).max(0.0);
                        if next.is_none_or(|(tn, _, bn)| t < tn || (t == tn && b < bn)) {
                            next = Some((t, a, b));
                        }
                    }
                }
                match next {
                    Some((t, a, b)) if t < hi => {
                        breaks.push((t, self.count[c] * (b_cur - b)));
                        a_cur = a;
                        b_cur = b;
                    }
                    _ => break,
                }
            }
        }
        let step = first_crossing(breaks, -slope).unwrap_or(hi);
        if step <= 0.0 {
            return false;
        }
        for t in 0..k {
            mu[t] = (mu[t] + step * d[t]).max(0.0);
        }
        true
    }
}

/// The smallest t among `breaks` (t, slope increase) at which the increases up to t sum to at
/// least `need`, or `None` if they never do. Weighted selection (quickselect on t, keeping the
/// side where the running sum crosses): expected O(B) where sorting costs O(B log B), and the
/// line searches on 100,000 classes spend most of their time here.
fn first_crossing(breaks: &mut [(f64, f64)], mut need: f64) -> Option<f64> {
    let mut part = breaks;
    loop {
        if part.is_empty() {
            return None;
        }
        let mid = part.len() / 2;
        let (left, pivot, right) = part.select_nth_unstable_by(mid, |x, y| x.0.total_cmp(&y.0));
        let below: f64 = left.iter().map(|b| b.1).sum();
        if below >= need {
            part = left;
        } else if below + pivot.1 >= need {
            return Some(pivot.0);
        } else {
            need -= below + pivot.1;
            part = right;
        }
    }
}

/// Multipliers minimizing L(mu) (the LP relaxation's dual): line searches along the coordinate
/// directions and along e_a + e_b and e_a - e_b for every pair of types, repeated until no
/// direction improves L by more than 1e-12 relative. Coordinate descent alone can stop at a
/// ridge of the piecewise-linear L; the pair directions walk along such ridges.
/// Returns mu and L(mu). O(passes * D * (envelope steps + breakpoints)) for D directions.
fn multipliers(classes: &[Class], capacity: &[u64]) -> (Vec<f64>, f64) {
    let k = capacity.len();
    let mut mu = vec![0.0; k];
    // Beyond twice the largest value per unit no optional job prefers a type; forced jobs may
    // still demand it, in which case the LP is infeasible and mu_k stays at this cap.
    let cap: Vec<f64> = (0..k)
        .map(|t| {
            classes
                .iter()
                .flat_map(|cl| cl.choices.iter())
                .filter(|c| c.gpu == Some(t) && c.units > 0)
                .map(|c| c.value / c.units as f64)
                .fold(0.0, f64::max)
                * 2.0
                + 1.0
        })
        .collect();
    // Every direction in {-1, 0, 1}^K for up to 5 types (at a kink of L some descent direction
    // moves several prices at once); coordinates and pairs beyond that.
    let mut dirs: Vec<Vec<f64>> = Vec::new();
    if k <= 5 {
        for code in 1..3usize.pow(k as u32) {
            let mut d = vec![0.0; k];
            let mut c = code;
            for x in d.iter_mut() {
                *x = [0.0, 1.0, -1.0][c % 3];
                c /= 3;
            }
            dirs.push(d);
        }
        // Single coordinates first: they do most of the work.
        dirs.sort_by_key(|d| d.iter().filter(|x| **x != 0.0).count());
    } else {
        for a in 0..k {
            for b in a..k {
                for (sa, sb) in [(1.0, 1.0), (-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0)] {
                    let mut d = vec![0.0; k];
                    d[a] += sa;
                    d[b] += sb;
                    if d.iter().any(|x| *x != 0.0) {
                        dirs.push(d);
                    }
                }
            }
        }
    }
    let flat = Flat::new(classes, capacity);
    let mut breaks = Vec::new();
    let mut value = flat.lagrangian(&mu);
    for _pass in 0..50 {
        for d in &dirs {
            flat.line_search(&mut mu, d, &cap, &mut breaks);
        }
        let now = flat.lagrangian(&mu);
        let settled = value - now <= 1e-12 * now.abs().max(1.0);
        value = now;
        if settled {
            break;
        }
    }
    (mu, value)
}

/// A feasible assignment by greedy at `mu`: forced classes first (fewest choices first), then
/// the rest by best reduced cost; each job takes its best-rc choice that still fits. Then one
/// upgrade pass moves jobs to higher-value choices that fit. Returns per job its choice index
/// (into `choices_of`), or `None` if a forced job could not be placed.
fn greedy(problem: &RoundProblem, classes: &[Class], mu: &[f64]) -> Option<Vec<usize>> {
    let n = problem.jobs.len();
    let mut pick = vec![usize::MAX; n];
    let mut free: Vec<u64> = problem.capacity.clone();
    let mut order: Vec<usize> = (0..classes.len()).collect();
    // Forced classes first, those with fewest choices first (they are the hardest to place);
    // then the optional ones by best reduced cost.
    let key = |i: usize| {
        let cl = &classes[i];
        if cl.forced {
            (false, cl.choices.len())
        } else {
            (true, 0)
        }
    };
    let best: Vec<f64> = classes.iter().map(|cl| best_rc(&cl.choices, mu)).collect();
    order.sort_by(|&a, &b| {
        key(a)
            .cmp(&key(b))
            .then_with(|| best[b].total_cmp(&best[a]))
    });
    for &ci in &order {
        let cl = &classes[ci];
        // Choices by reduced cost, best first; ties to the larger value, then the listed order.
        let mut ranked: Vec<usize> = (0..cl.choices.len()).collect();
        ranked.sort_by(|&a, &b| {
            let (ca, cb) = (&cl.choices[a], &cl.choices[b]);
            rc(cb, mu)
                .total_cmp(&rc(ca, mu))
                .then(cb.value.total_cmp(&ca.value))
                .then(a.cmp(&b))
        });
        for &j in &cl.jobs {
            let mut placed = false;
            for &q in &ranked {
                let c = &cl.choices[q];
                if !cl.forced && rc(c, mu) < -1e-9 && c.gpu.is_some() {
                    // Worse than idling at these prices; idle is in `ranked` too.
                    continue;
                }
                let fits = c.gpu.is_none_or(|g| c.units <= free[g]);
                if fits {
                    if let Some(g) = c.gpu {
                        free[g] -= c.units;
                    }
                    pick[j] = q;
                    placed = true;
                    break;
                }
            }
            if !placed {
                if cl.forced {
                    return None;
                }
                // Optional job with only negative-rc options and no idle? Cannot happen: idle
                // is always a choice of an optional job.
                return None;
            }
        }
    }
    // Upgrade pass: move each job to the most valuable choice that fits after releasing its own.
    for cl in classes {
        for &j in &cl.jobs {
            let cur = cl.choices[pick[j]];
            if let Some(g) = cur.gpu {
                free[g] += cur.units;
            }
            let mut best = pick[j];
            for (q, c) in cl.choices.iter().enumerate() {
                let fits = c.gpu.is_none_or(|g| c.units <= free[g]);
                if fits && c.value > cl.choices[best].value {
                    best = q;
                }
            }
            pick[j] = best;
            if let Some(g) = cl.choices[best].gpu {
                free[g] -= cl.choices[best].units;
            }
        }
    }
    Some(pick)
}

/// Multiplier vectors for the per-state bound: `mu` itself first, then `mu` moved up and down
/// along every type by 1/64, 1/8 and 1 times the type's price (or the largest price, for a type
/// priced 0). Every vector >= 0 gives a valid bound (Lemma 1 of docs/solver.md applied to the
/// remaining jobs); taking the least over several lets a state that used too much or too little
/// of one type see what the remaining jobs lose by absorbing it, which `mu` alone cannot.
fn probes(mu: &[f64]) -> Vec<Vec<f64>> {
    let top = mu.iter().copied().fold(0.0, f64::max).max(1e-12);
    let mut out = vec![mu.to_vec()];
    for t in 0..mu.len() {
        let unit = if mu[t] > 0.0 { mu[t] } else { top };
        for scale in [1.0 / 64.0, 1.0 / 8.0, 1.0] {
            for sign in [1.0, -1.0] {
                let mut p = mu.to_vec();
                p[t] = (p[t] + sign * scale * unit).max(0.0);
                if p[t] != mu[t] {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// The class-level sparse DP: one layer per undecided class, a transition is how many of the
/// class's jobs take each of its kept choices. A state is the vector of units used per touched
/// type, one per vector (the larger value wins; ties keep the first, so the answer is
/// deterministic). A state or partial transition is dropped when it overflows a residual or when
/// its bound (see [`ClassDp::bound`]) is below `floor`.
///
/// Counting jobs per class instead of taking them one by one is what keeps many identical jobs
/// cheap: a class of n jobs split between two tied choices makes n + 1 transitions from a state
/// in one layer, where a layer per job makes O(n^2) state visits. Inside a class the counts are
/// chosen choice by choice, with sub-states (units, jobs placed) deduplicated like states.
struct ClassDp<'a> {
    classes: &'a [Class],
    /// Per class, the choices that can be in a solution of value >= floor.
    kept: &'a [Vec<Choice>],
    probes: &'a [Vec<f64>],
    max_states: usize,
    /// States created over all layers (work and memory measure).
    states: u64,
    /// Most states this run may create before it stops with [`SolveError::TooLarge`].
    limit: u64,
    /// States the earlier runs of the solve created (for the error message).
    spent: u64,
    /// Heuristic runs only: after each step keep the `beam` sub-states of largest bound. The
    /// answer is then a feasible solution, not necessarily the optimum (an incumbent).
    beam: Option<usize>,
    /// Most cell updates [`TypeTables`] may take in this run (0: no tables); pairs of types
    /// whose tables would take more fall back to single types, and those to none.
    tables: usize,
}

/// Per-layer suffix data over the remaining classes.
struct Suffix {
    k: usize,
    /// `rc[p * (m + 1) + i]`: sum over classes i.. of count * best rc at probe p.
    rc: Vec<f64>,
    /// `add[i * k + t]`: the most units classes i.. can take on type t.
    add: Vec<u64>,
    m: usize,
}

/// Most cells one array of [`TypeTables`] may hold over all sets and layers (4 Mi cells; the
/// tables and their running maxima take 64 MiB at most).
const TABLE_CELLS: usize = 4 << 20;

/// Most cell updates building [`TypeTables`] may take (about 0.3 s); past it the pairs fall
/// back to single types, and the singles to no tables.
const TABLE_WORK: usize = 400_000_000;

/// Cell updates the tables of a run may take per state of the largest run of the solve so far
/// (a cell update costs about 1 ns, a state about 1 us).
const TABLE_WORK_PER_STATE: u64 = 500;

/// Most cells of one set's room grid: pairs of types whose grid is larger fall back to single
/// types.
const TABLE_GRID: usize = 1 << 16;

/// One set S of one or two binding types and, per layer i, the exact value table of the
/// remaining core classes i.. with S's capacities kept and the other types priced at mu.
struct TypeTable {
    /// The types of S.
    types: Vec<usize>,
    /// Grid extent per type of S: room in grains, 0..=dims.
    dims: Vec<usize>,
    /// Cells of one layer's grid.
    cells: usize,
    /// `data[i * cells + r]`: T_S^i(r) (see [`TypeTables`]); -inf when no completion fits.
    data: Vec<f64>,
    /// `slack[i * cells + r]`: G_S^i(r) = max over r' <= r of T_S^i(r') - sum_(t in S) mu_t
    /// grain_t r'_t, for the bound inside a class (see [`TypeTables::inner_bound`]).
    slack: Vec<f64>,
}

/// Partial Lagrangian relaxations of the remaining classes, one per set S of binding types
/// (every pair, or every single type when the pairs' grids are too large): only the
/// capacities outside S are relaxed, at prices mu, and the capacities in S are kept exactly.
/// For a layer i and a room r on S (in grains), T_S^i(r) is the largest
/// sum_(j in y) w_S(y_j), with w_S(q) = v_q - mu_(k(q)) u_q for q off S and w_S(q) = v_q on S,
/// over the completions y of the core classes i.. (all their jobs on kept choices) with
/// U_t(y) <= r_t for t in S. It is computed backwards, one job at a time, as a dense DP over
/// S's grid (Geoffrion, "Lagrangean relaxation for integer programming", Mathematical
/// Programming Study 2, 1974: a relaxation that keeps some constraints is at least as strong as
/// the LP; Kellerer, Pferschy and Pisinger 2004, chapter 9, on relaxations of the
/// multidimensional knapsack problem).
///
/// *Bound.* Let y be a completion of a state with value V and units U that fits the residual
/// R; write room_t = R_t - U_t and A_t for the most units the rest can take on t. Then
/// v(y) = sum_j w_S(y_j) + sum_(t not in S) mu_t U_t(y), y is among the completions T_S^i
/// maximizes over (its units on S fit room_S), and U_t(y) <= min(room_t, A_t). So
/// V + T_S^i(room_S) + sum_(t not in S) mu_t min(room_t, A_t) bounds every completion.
/// It is never weaker than the probe bound at mu: for every y counted in T_S^i,
/// sum_j w_S(y_j) = sum_j rc_mu(y_j) + sum_(t in S) mu_t U_t(y), at most
/// sum max rc_mu plus sum_(t in S) mu_t min(room_t, A_t). It is stronger where integrality
/// binds (jobs of 2 or 4 units that cannot fill a room exactly, the last few jobs of a type),
/// which the Lagrangian bound, equal to the LP relaxation, cannot see.
///
/// Cost: O(sets * core jobs * kept choices * grid cells) time, 2 (m + 1) grids of memory per
/// set; bounded by [`TABLE_WORK`] and [`TABLE_CELLS`].
struct TypeTables {
    sets: Vec<TypeTable>,
}

impl TypeTables {
    /// Tables for the core classes `core` (in layer order) over the binding types (`grain` > 0),
    /// or `None` when even the single types' grids exceed [`TABLE_CELLS`] or their work
    /// `max_work` cell updates.
    fn new(
        classes: &[Class],
        kept: &[Vec<Choice>],
        core: &[usize],
        residual: &[i128],
        grain: &[u64],
        mu: &[f64],
        max_work: usize,
    ) -> Option<TypeTables> {
        let k = residual.len();
        let binding: Vec<usize> = (0..k).filter(|&t| grain[t] > 0).collect();
        let extent = |t: usize| {
            usize::try_from(residual[t].max(0) as u64 / grain[t])
                .unwrap_or(usize::MAX)
                .saturating_add(1)
        };
        let m = core.len();
        let mut sets: Vec<Vec<usize>> = Vec::new();
        for (a, &ta) in binding.iter().enumerate() {
            for &tb in &binding[a + 1..] {
                sets.push(vec![ta, tb]);
            }
        }
        // Cells of one set's grid, and of all sets' grids (saturating: capacities may be huge).
        let grid = |s: &[usize]| s.iter().fold(1usize, |a, &t| a.saturating_mul(extent(t)));
        let cells_of =
            |sets: &[Vec<usize>]| sets.iter().fold(0usize, |a, s| a.saturating_add(grid(s)));
        let too_big = |sets: &[Vec<usize>]| {
            sets.is_empty()
                || sets.iter().any(|s| grid(s) > TABLE_GRID)
                || cells_of(sets).saturating_mul(m + 1) > TABLE_CELLS
        };
        // Table work: every set's grid once per core job and kept choice.
        let moves: usize = core
            .iter()
            .map(|&c| classes[c].jobs.len() * kept[c].len())
            .sum();
        let work = |sets: &[Vec<usize>]| cells_of(sets).saturating_mul(moves);
        if too_big(&sets) || work(&sets) > max_work {
            sets = binding.iter().map(|&t| vec![t]).collect();
            if too_big(&sets) || work(&sets) > max_work {
                return None;
            }
        }
        let mut out = Vec::with_capacity(sets.len());
        for types in sets {
            let dims: Vec<usize> = types.iter().map(|&t| extent(t)).collect();
            let cells: usize = dims.iter().product();
            let mut data = vec![f64::NEG_INFINITY; (m + 1) * cells];
            // An empty completion fits every room.
            data[m * cells..].fill(0.0);
            let mut cur = vec![0.0; cells];
            let mut next = vec![0.0; cells];
            for i in (0..m).rev() {
                cur.copy_from_slice(&data[(i + 1) * cells..(i + 2) * cells]);
                // Per kept choice: its shift on the grid (None: off S) and its value there.
                let moves: Vec<(Option<(usize, usize)>, f64)> = kept[core[i]]
                    .iter()
                    .map(|c| match c.gpu {
                        Some(g) => match types.iter().position(|&t| t == g) {
                            Some(0) => (Some(((c.units / grain[g]) as usize, 0)), c.value),
                            Some(_) => (Some((0, (c.units / grain[g]) as usize)), c.value),
                            None => (None, c.value - mu[g] * c.units as f64),
                        },
                        None => (None, 0.0),
                    })
                    .collect();
                let da = dims[0];
                let db = dims.get(1).copied().unwrap_or(1);
                for _job in 0..classes[core[i]].jobs.len() {
                    next.fill(f64::NEG_INFINITY);
                    for &(shift, v) in &moves {
                        match shift {
                            None => {
                                for (n, c) in next.iter_mut().zip(&cur) {
                                    *n = n.max(c + v);
                                }
                            }
                            Some((sa, sb)) => {
                                for rb in sb..db {
                                    for ra in sa..da {
                                        let at = ra + da * rb;
                                        let from = (ra - sa) + da * (rb - sb);
                                        next[at] = next[at].max(cur[from] + v);
                                    }
                                }
                            }
                        }
                    }
                    std::mem::swap(&mut cur, &mut next);
                }
                data[i * cells..(i + 1) * cells].copy_from_slice(&cur);
            }
            // G: T minus the priced units, then a running maximum along each axis (a prefix
            // maximum over the grid's lower set).
            let da = dims[0];
            let price: Vec<f64> = types.iter().map(|&t| mu[t] * grain[t] as f64).collect();
            let mut slack = data.clone();
            for layer in slack.chunks_mut(cells) {
                for (at, x) in layer.iter_mut().enumerate() {
                    let (ra, rb) = (at % da, at / da);
                    *x -= price[0] * ra as f64 + price.get(1).map_or(0.0, |p| p * rb as f64);
                }
                for at in 0..cells {
                    let (ra, rb) = (at % da, at / da);
                    if ra > 0 {
                        layer[at] = layer[at].max(layer[at - 1]);
                    }
                    if rb > 0 {
                        layer[at] = layer[at].max(layer[at - da]);
                    }
                }
            }
            out.push(TypeTable {
                types,
                dims,
                cells,
                data,
                slack,
            });
        }
        Some(TypeTables { sets: out })
    }

    /// The least over the sets of V + T_S^i(room_S) + sum_(t not in S) mu_t min(room_t, A_t)
    /// for a state after `i` core classes worth `value` with `used` units (see the bound proved
    /// on [`TypeTables`]).
    #[allow(clippy::too_many_arguments)]
    fn bound(
        &self,
        sfx: &Suffix,
        residual: &[i128],
        grain: &[u64],
        mu: &[f64],
        value: f64,
        used: &[u64],
        i: usize,
    ) -> f64 {
        let mut best = f64::INFINITY;
        for set in &self.sets {
            let (at, _) = set.cell(residual, grain, used);
            let u = value
                + set.data[i * set.cells + at]
                + set.outside(sfx, residual, mu, used, i, |_| 0);
            best = best.min(u);
        }
        best
    }
}

impl TypeTables {
    /// The bound of a sub-state inside layer `i` (class i partly placed) worth `value` with
    /// `used` units, whose class still has `rest` jobs, to be placed on choices of best reduced
    /// cost `rest_rc` at mu and at most `rest_units` units per type each: the least over the
    /// sets S of V + rest * rest_rc + sum_(t in S) mu_t grain_t room_t + G_S^(i+1)(room_S),
    /// plus sum_(t not in S) mu_t min(room_t, A_t + rest * rest_units_t), room in grains on S.
    ///
    /// *Proof.* Let the rest jobs take w grains on S (so the later classes get at most
    /// room_S - w there). Their value is at most rest * rest_rc + sum_t mu_t (their units on
    /// t); the later classes' value is at most T_S^(i+1)(room_S - w) + sum_(t not in S) mu_t
    /// (their units on t) (the bound on [`TypeTables`]). Summing, the S part is
    /// mu_S grain w + T(room_S - w) = mu_S grain room_S + (T(r') - mu_S grain r') for
    /// r' = room_S - w <= room_S, at most mu_S grain room_S + G(room_S); the units outside S,
    /// of the rest jobs and the later classes together, are at most
    /// min(room_t, A_t + rest * rest_units_t).
    #[allow(clippy::too_many_arguments)]
    fn inner_bound(
        &self,
        sfx: &Suffix,
        residual: &[i128],
        grain: &[u64],
        mu: &[f64],
        value: f64,
        used: &[u64],
        i: usize,
        rest: u64,
        rest_rc: f64,
        rest_units: &[u64],
    ) -> f64 {
        let mut best = f64::INFINITY;
        for set in &self.sets {
            let (at, rooms) = set.cell(residual, grain, used);
            let mut u = value + rest as f64 * rest_rc + set.slack[i * set.cells + at];
            for (&t, &room) in set.types.iter().zip(&rooms) {
                u += mu[t] * (grain[t] * room) as f64;
            }
            u += set.outside(sfx, residual, mu, used, i, |t| rest * rest_units[t]);
            best = best.min(u);
        }
        best
    }
}

impl TypeTable {
    /// S's rooms in grains (capped to the grid) for a state that used `used` units, and the
    /// cell of the layer grid they index.
    fn cell(&self, residual: &[i128], grain: &[u64], used: &[u64]) -> (usize, [u64; 2]) {
        let (mut at, mut scale, mut rooms) = (0usize, 1usize, [0u64; 2]);
        for (x, &t) in self.types.iter().enumerate() {
            let room = ((residual[t] as u64).saturating_sub(used[t]) / grain[t])
                .min(self.dims[x] as u64 - 1);
            rooms[x] = room;
            at += room as usize * scale;
            scale *= self.dims[x];
        }
        (at, rooms)
    }

    /// sum over the priced types t outside S of mu_t min(room_t, A_t + extra(t)): the most the
    /// relaxed capacities can add (A_t: the most units the later classes can take on t).
    fn outside(
        &self,
        sfx: &Suffix,
        residual: &[i128],
        mu: &[f64],
        used: &[u64],
        i: usize,
        extra: impl Fn(usize) -> u64,
    ) -> f64 {
        let k = sfx.k;
        let mut sum = 0.0;
        for t in 0..k {
            if mu[t] > 0.0 && !self.types.contains(&t) {
                let room = (residual[t] as u64).saturating_sub(used[t]);
                sum += mu[t] * room.min(sfx.add[i * k + t] + extra(t)) as f64;
            }
        }
        sum
    }
}

impl ClassDp<'_> {
    /// Upper bound on any completion of a state after `i` core classes that used `used` units
    /// and is worth `value` (fixed jobs included): for every probe p >= 0,
    /// value + sum_rest max rc_p + sum_t p_t * min(room_t, add_t) (Lemma 1 of docs/solver.md on
    /// the remaining jobs, whose units on t are at most the room and the most they can take).
    fn bound(
        probes: &[Vec<f64>],
        sfx: &Suffix,
        residual: &[i128],
        value: f64,
        used: &[u64],
        i: usize,
    ) -> f64 {
        let k = sfx.k;
        let mut best = f64::INFINITY;
        for (p, probe) in probes.iter().enumerate() {
            let mut u = value + sfx.rc[p * (sfx.m + 1) + i];
            for t in 0..k {
                if probe[t] > 0.0 {
                    let room = (residual[t] as u64).saturating_sub(used[t]);
                    u += probe[t] * room.min(sfx.add[i * k + t]) as f64;
                }
            }
            best = best.min(u);
        }
        best
    }

    fn run(
        &mut self,
        core: &[usize],
        residual: &[i128],
        base: f64,
        floor: f64,
    ) -> Result<Option<Found>, SolveError> {
        let k = residual.len();
        let mu = &self.probes[0];
        if residual.iter().any(|&r| r < 0) {
            return Ok(None);
        }
        // Grain and stride per touched type for the state key.
        let mut grain = vec![0u64; k];
        for &c in core {
            for ch in &self.kept[c] {
                if let Some(g) = ch.gpu {
                    grain[g] = super::dense::gcd(grain[g], ch.units);
                }
            }
        }
        let m = core.len();
        let np = self.probes.len();
        let mut sfx = Suffix {
            k,
            rc: vec![0.0; np * (m + 1)],
            add: vec![0u64; (m + 1) * k],
            m,
        };
        for i in (0..m).rev() {
            let cl = &self.classes[core[i]];
            let cs = &self.kept[core[i]];
            let n = cl.jobs.len() as f64;
            for (p, probe) in self.probes.iter().enumerate() {
                sfx.rc[p * (m + 1) + i] = sfx.rc[p * (m + 1) + i + 1] + n * best_rc(cs, probe);
            }
            for t in 0..k {
                let most = cs
                    .iter()
                    .filter(|c| c.gpu == Some(t))
                    .map(|c| c.units)
                    .max()
                    .unwrap_or(0);
                sfx.add[i * k + t] = sfx.add[(i + 1) * k + t] + most * cl.jobs.len() as u64;
            }
        }
        // A type the core cannot fill even with every job on its largest choice there never
        // binds: its units stay out of the key, and states that differ only there merge
        // (dominance holds because no completion can overflow it).
        for t in 0..k {
            if i128::from(sfx.add[t]) <= residual[t] {
                grain[t] = 0;
            }
        }
        let mut stride = vec![0u128; k];
        let mut acc: u128 = 1;
        for t in 0..k {
            if let Some(cells) = (residual[t] as u64).checked_div(grain[t]) {
                stride[t] = acc;
                let cells = u128::from(cells) + 1;
                acc = acc.checked_mul(cells).ok_or(SolveError::TooLarge {
                    solver: "dp",
                    what: "bits of state key",
                    needed: 129,
                    limit: 128,
                    hint: "the undecided jobs span too many gpu types of large capacity; use --solver ilp",
                })?;
            }
        }
        let tables = if self.tables > 0 {
            TypeTables::new(
                self.classes,
                self.kept,
                core,
                residual,
                &grain,
                mu,
                self.tables,
            )
        } else {
            None
        };
        // The bound of a state after `i` classes: the probes', and the type tables' if built.
        let probes = self.probes;
        let state_bound = |value: f64, used: &[u64], i: usize| {
            let b = ClassDp::bound(probes, &sfx, residual, value, used, i);
            match &tables {
                Some(tb) => b.min(tb.bound(&sfx, residual, &grain, mu, value, used, i)),
                None => b,
            }
        };
        let mut units: Vec<u64> = vec![0; k];
        let mut values: Vec<f64> = vec![base];
        let mut keys: Vec<u128> = vec![0];
        if state_bound(base, &units, 0) < floor {
            return Ok(None);
        }
        // Per class, per choice step: each sub-state's parent and the count that made it.
        let mut trail: Vec<Vec<Step>> = Vec::with_capacity(m);
        let mut row = vec![0u64; k];
        for (i, &c) in core.iter().enumerate() {
            let cs = &self.kept[c];
            let width = cs.len();
            let n = self.classes[c].jobs.len() as u64;
            // Per position q: the best rc at mu and the most units per type of choices q.. .
            let mut tail_rc = vec![f64::NEG_INFINITY; width + 1];
            let mut tail_units = vec![0u64; (width + 1) * k];
            for q in (0..width).rev() {
                tail_rc[q] = tail_rc[q + 1].max(rc(&cs[q], mu));
                tail_units.copy_within((q + 1) * k..(q + 2) * k, q * k);
                if let Some(g) = cs[q].gpu {
                    tail_units[q * k + g] = tail_units[q * k + g].max(cs[q].units);
                }
            }
            // The class's jobs are counted choice by choice: a sub-state is (units, jobs of the
            // class placed so far), deduplicated like states, so a class of n jobs with w kept
            // choices costs O(w * states * n), never the O(n^(w-1)) count vectors.
            let mut placed: Vec<u64> = vec![0; values.len()];
            let mut steps: Vec<Step> = Vec::with_capacity(width);
            for (q, ch) in cs.iter().enumerate() {
                let last = q + 1 == width;
                let guess = values.len() * 2;
                let mut index: FxHashMap<(u128, u64), u32> =
                    FxHashMap::with_capacity_and_hasher(guess, Default::default());
                let mut n_units: Vec<u64> = Vec::with_capacity(guess * k);
                let mut n_values: Vec<f64> = Vec::with_capacity(guess);
                let mut n_keys: Vec<u128> = Vec::with_capacity(guess);
                let mut n_placed: Vec<u64> = Vec::with_capacity(guess);
                let mut n_score: Vec<f64> = Vec::with_capacity(guess);
                let mut step = Step {
                    parent: Vec::with_capacity(guess),
                    count: Vec::with_capacity(guess),
                };
                for s in 0..values.len() {
                    let left = n - placed[s];
                    let most = match ch.gpu {
                        Some(g) => left.min(
                            (residual[g] as u64).saturating_sub(units[s * k + g]) / ch.units.max(1),
                        ),
                        None => left,
                    };
                    // The last choice takes every job left.
                    let lo = if last { left } else { 0 };
                    if lo > most {
                        continue;
                    }
                    for cnt in lo..=most {
                        row.copy_from_slice(&units[s * k..(s + 1) * k]);
                        let mut key = keys[s];
                        if let Some(g) = ch.gpu {
                            row[g] += ch.units * cnt;
                            if let Some(cells) = (ch.units * cnt).checked_div(grain[g]) {
                                key += u128::from(cells) * stride[g];
                            }
                        }
                        let v = values[s] + ch.value * cnt as f64;
                        let rest = left - cnt;
                        let score = if last {
                            state_bound(v, &row, i + 1)
                        } else {
                            // The class's `rest` jobs take at best the tail's rc and at most
                            // its units per type, at prices mu.
                            let mut u = v + rest as f64 * tail_rc[q + 1] + sfx.rc[i + 1];
                            for t in 0..k {
                                if mu[t] > 0.0 {
                                    let room = (residual[t] as u64).saturating_sub(row[t]);
                                    let add = sfx.add[(i + 1) * k + t]
                                        + rest * tail_units[(q + 1) * k + t];
                                    u += mu[t] * room.min(add) as f64;
                                }
                            }
                            match &tables {
                                Some(tb) => u.min(tb.inner_bound(
                                    &sfx,
                                    residual,
                                    &grain,
                                    mu,
                                    v,
                                    &row,
                                    i + 1,
                                    rest,
                                    tail_rc[q + 1],
                                    &tail_units[(q + 1) * k..(q + 2) * k],
                                )),
                                None => u,
                            }
                        };
                        if score < floor {
                            continue;
                        }
                        let id = (key, n - rest);
                        match index.get(&id) {
                            Some(&at) => {
                                // Dominance: the larger value wins, a tie keeps the first.
                                let at = at as usize;
                                if v > n_values[at] {
                                    n_units[at * k..(at + 1) * k].copy_from_slice(&row);
                                    n_values[at] = v;
                                    n_score[at] = score;
                                    step.parent[at] = s as u32;
                                    step.count[at] = cnt as u32;
                                }
                            }
                            None => {
                                if n_values.len() >= self.max_states {
                                    return Err(SolveError::TooLarge {
                                        solver: "dp",
                                        what: "states in one layer",
                                        needed: n_values.len() as u128 + 1,
                                        limit: self.max_states as u128,
                                        hint: "raise the limit or use --solver ilp",
                                    });
                                }
                                index.insert(id, n_values.len() as u32);
                                n_units.extend_from_slice(&row);
                                n_values.push(v);
                                n_keys.push(key);
                                n_placed.push(n - rest);
                                n_score.push(score);
                                step.parent.push(s as u32);
                                step.count.push(cnt as u32);
                            }
                        }
                    }
                }
                self.states += n_values.len() as u64;
                // The back pointers of every step stay in memory, and the time of the solve
                // grows with its states: bound them too.
                if self.states > self.limit {
                    return Err(SolveError::TooLarge {
                        solver: "dp",
                        what: "states over all gap-deepening runs",
                        needed: u128::from(self.spent + self.states),
                        limit: u128::from(self.spent + self.limit),
                        hint: "raise the limit or use --solver ilp",
                    });
                }
                if n_values.is_empty() {
                    return Ok(None);
                }
                if let Some(width) = self.beam.filter(|&b| n_values.len() > b) {
                    // Keep the sub-states of largest bound (ties: the first), in their order.
                    let mut order: Vec<usize> = (0..n_values.len()).collect();
                    order.select_nth_unstable_by(width - 1, |&a, &b| {
                        n_score[b].total_cmp(&n_score[a]).then(a.cmp(&b))
                    });
                    order.truncate(width);
                    order.sort_unstable();
                    n_units = order
                        .iter()
                        .flat_map(|&x| n_units[x * k..(x + 1) * k].to_vec())
                        .collect();
                    n_values = order.iter().map(|&x| n_values[x]).collect();
                    n_keys = order.iter().map(|&x| n_keys[x]).collect();
                    n_placed = order.iter().map(|&x| n_placed[x]).collect();
                    step.parent = order.iter().map(|&x| step.parent[x]).collect();
                    step.count = order.iter().map(|&x| step.count[x]).collect();
                }
                units = n_units;
                values = n_values;
                keys = n_keys;
                placed = n_placed;
                steps.push(step);
            }
            trail.push(steps);
        }
        let mut best = 0usize;
        for (s, &v) in values.iter().enumerate() {
            if v > values[best] {
                best = s;
            }
        }
        let total = values[best];
        let mut picks: Vec<Vec<u32>> = vec![Vec::new(); m];
        let mut s = best;
        for (i, steps) in trail.iter().enumerate().rev() {
            let mut counts = vec![0u32; steps.len()];
            for (q, step) in steps.iter().enumerate().rev() {
                counts[q] = step.count[s];
                s = step.parent[s] as usize;
            }
            picks[i] = counts;
        }
        Ok(Some((total, picks)))
    }
}

/// A run's answer: the best total (fixed classes included) and, per core class, how many of its
/// jobs take each kept choice.
type Found = (f64, Vec<Vec<u32>>);

/// Back pointers of one choice step of a class: per sub-state, the sub-state it came from and
/// how many of the class's jobs it put on the step's choice.
struct Step {
    parent: Vec<u32>,
    count: Vec<u32>,
}

/// Sub-states kept per step by the beam search that improves the greedy's incumbent.
const BEAM: usize = 2000;

/// The states all gap-deepening runs of one solve may create together, in units of
/// [`Dp::max_states`] (8,000,000 by default: about 10 to 25 s on the rounds measured, and
/// 64 MB of back pointers if one run takes them all).
const SOLVE_BUDGET: u64 = 2;

/// Most states the beam search may create (it gives up past them, keeping the incumbent).
const BEAM_STATES: u64 = 2_000_000;

/// Runs of fewer states never predict a refusal (their growth is noise).
const PREDICT_AFTER_STATES: u64 = 100_000;

/// Default of [`Dp::tables_after_states`]: a gap-deepening run past this many states turns on
/// the type tables ([`TypeTables`]) and the slow growth of the gap for the rest of the solve.
/// Measured trade-off (docs/performance.md, worst cases): at 10,000 the tables also came on in
/// rounds of the `sts` simulation that the plain runs finish anyway, and cost more solver time
/// per round there than they saved; 100,000 keeps most of that and still solves the hard
/// 300-job round in 1.5 s.
const TABLES_AFTER_STATES: u64 = 100_000;

/// Growth factor of the gap once the runs are expensive (2 before): the cost of a run grows
/// steeply as its floor drops below the optimum (about 10 times per doubling of the gap on the
/// rounds of large integrality gap measured), so overshooting the optimum's gap by up to 25%
/// instead of 100% costs less than the extra failed runs, whose floors lie above the optimum.
const SLOW_GROWTH: f64 = 1.25;

/// A failed gap-deepening run past this many states triggers the beam search.
const BEAM_AFTER_STATES: u64 = 50_000;

impl Solver for Dp {
    fn name(&self) -> &'static str {
        "dp"
    }

    fn solve_problem(&self, problem: &RoundProblem) -> Result<Solution, SolveError> {
        let start = Instant::now();
        let n = problem.jobs.len();
        let classes = classes(problem);
        let (mu, bound) = multipliers(&classes, &problem.capacity);
        // The incumbent: the best solution known, as (value, assignment).
        let mut best: Option<(f64, Vec<Assignment>)> = greedy(problem, &classes, &mu).map(|pick| {
            let mut value = 0.0;
            let mut assignment: Vec<Assignment> = vec![None; n];
            for cl in &classes {
                for &j in &cl.jobs {
                    let c = cl.choices[pick[j]];
                    value += c.value;
                    assignment[j] = c.gpu.map(|t| (t, c.slot));
                }
            }
            (value, assignment)
        });
        let seconds_bound = start.elapsed().as_secs_f64();
        // When the greedy fails, look for a certificate before any DP run (a DP that must prove
        // infeasibility has no floor and can be as large as the dense one). Every solution is
        // worth at least the sum of each job's least valuable choice, and at most L (Lemma 1):
        // a bound below that certifies that no solution exists (the forced jobs do not fit even
        // fractionally).
        let least: f64 = classes
            .iter()
            .map(|cl| {
                cl.jobs.len() as f64
                    * cl.choices
                        .iter()
                        .map(|c| c.value)
                        .fold(f64::INFINITY, f64::min)
                        .min(0.0)
            })
            .sum();
        let tol = 1e-10 * bound.abs().max(1.0);
        // A Hall-type shortage (a set of types the forced jobs need more of than it holds) is a
        // second certificate, cheap and independent of mu.
        if best.is_none() && (bound < least - tol || problem.shortage().is_some()) {
            return Ok(
                Solution::infeasible("dp", problem, Infeasibility::of(problem)).with_stats(
                    SolveStats {
                        classes: Some(classes.len() as u64),
                        lagrangian_bound: Some(bound),
                        seconds_bound: Some(seconds_bound),
                        ..SolveStats::default()
                    },
                ),
            );
        }
        let probes = probes(&mu);
        // Largest reduced-cost gap of any choice: past it nothing more can be kept.
        let widest = classes
            .iter()
            .map(|cl| {
                let b = best_rc(&cl.choices, &mu);
                cl.choices
                    .iter()
                    .map(|c| b - rc(c, &mu))
                    .fold(0.0, f64::max)
            })
            .fold(0.0, f64::max);

        // The choices a solution worth >= L - gap may use, worst reduced cost first and a best
        // choice last (the last choice takes the jobs left, so the earlier steps only count the
        // few jobs the gap lets deviate); classes left with one choice are fixed (`base`,
        // `residual`); the others form the core, rigid classes first, the flexible (many kept
        // choices, many jobs) last: the states stay few until the last layers, where little room
        // is left and the bound bites.
        let setup = |gap: f64| {
            let mut kept: Vec<Vec<Choice>> = Vec::with_capacity(classes.len());
            for cl in &classes {
                let b = best_rc(&cl.choices, &mu);
                let mut cs: Vec<Choice> = cl
                    .choices
                    .iter()
                    .copied()
                    .filter(|c| b - rc(c, &mu) <= gap + tol)
                    .collect();
                cs.sort_by(|x, y| rc(x, &mu).total_cmp(&rc(y, &mu)));
                kept.push(cs);
            }
            let mut base = 0.0;
            let mut residual: Vec<i128> = problem.capacity.iter().map(|&c| c as i128).collect();
            let mut core: Vec<usize> = Vec::new();
            for (c, cl) in classes.iter().enumerate() {
                match kept[c].as_slice() {
                    [] => {}
                    [only] => {
                        base += only.value * cl.jobs.len() as f64;
                        if let Some(t) = only.gpu {
                            residual[t] -= (only.units * cl.jobs.len() as u64) as i128;
                        }
                    }
                    _ => core.push(c),
                }
            }
            core.sort_by_key(|&c| (kept[c].len(), classes[c].jobs.len(), c));
            (kept, base, residual, core)
        };
        // The assignment of a run's answer: fixed classes on their one choice, core classes'
        // jobs on the kept choices in the counted numbers.
        let assign = |kept: &[Vec<Choice>], core: &[usize], counts: &[Vec<u32>]| {
            let mut assignment: Vec<Assignment> = vec![None; n];
            for (c, cl) in classes.iter().enumerate() {
                if let [only] = kept[c].as_slice() {
                    for &j in &cl.jobs {
                        assignment[j] = only.gpu.map(|t| (t, only.slot));
                    }
                }
            }
            for (i, &c) in core.iter().enumerate() {
                let mut jobs = classes[c].jobs.iter();
                for (q, &cnt) in counts[i].iter().enumerate() {
                    let ch = kept[c][q];
                    for &j in jobs.by_ref().take(cnt as usize) {
                        assignment[j] = ch.gpu.map(|t| (t, ch.slot));
                    }
                }
            }
            assignment
        };
        // Gap deepening: guess that the optimum is within g of the bound, keep only choices with
        // delta <= g and drop states whose bound is below L - g. A run that finds a solution has
        // found the optimum (Lemma 3 of docs/solver.md); one that finds none proves the optimum
        // is below L - g, and g doubles. The last run uses the incumbent's value (or nothing)
        // as the floor, which makes it the classic reduced-cost-fixed DP.
        let mut states = 0u64;
        let mut beam_done = false;
        let mut last_states = 0u64;
        let mut tables_on = self.tables_after_states == 0;
        // The states all runs of the solve may create, and the most one finished run created.
        let budget = SOLVE_BUDGET * self.max_states as u64;
        let mut largest_run = 0u64;
        let mut largest_any = 0u64;
        let mut g = 1e-9 * bound.abs().max(1.0);
        let mut runs = 0u64;
        let mut core_jobs: u64;
        let mut core_classes: u64;
        let mut last_gap: f64;
        let chosen: Option<Vec<Assignment>> = loop {
            // A better incumbent once the runs get expensive (a cheap instance never pays for
            // it): the class DP as a beam search (the BEAM sub-states of largest bound per step)
            // over the choices the incumbent's gap allows. Its value only lowers the last run's
            // gap; exactness never depends on it.
            if !beam_done && last_states > BEAM_AFTER_STATES {
                beam_done = true;
                let gap = best.as_ref().map_or(f64::INFINITY, |(v, _)| bound - v);
                let floor = best.as_ref().map_or(f64::NEG_INFINITY, |(v, _)| v + tol);
                let (kept, base, residual, core) = setup(gap);
                let mut dp = ClassDp {
                    classes: &classes,
                    kept: &kept,
                    probes: &probes,
                    max_states: self.max_states,
                    states: 0,
                    limit: budget.saturating_sub(states).min(BEAM_STATES),
                    spent: states,
                    beam: Some(BEAM),
                    tables: 0,
                };
                if let Ok(Some((total, counts))) = dp.run(&core, &residual, base, floor)
                    && best.as_ref().is_none_or(|(v, _)| total > *v)
                {
                    best = Some((total, assign(&kept, &core, &counts)));
                }
                states += dp.states;
            }
            let lb = best.as_ref().map(|(v, _)| *v);
            let incumbent_gap = lb.map_or(f64::INFINITY, |lb| bound - lb);
            let last = g >= incumbent_gap || g > widest + bound.abs() + 1.0;
            let (gap, floor) = if last {
                (incumbent_gap, lb.map_or(f64::NEG_INFINITY, |lb| lb - tol))
            } else {
                (g, bound - g - tol)
            };
            last_gap = gap;
            runs += 1;
            let (kept, base, residual, core) = setup(gap);
            core_classes = core.len() as u64;
            core_jobs = core.iter().map(|&c| classes[c].jobs.len() as u64).sum();
            let mut dp = ClassDp {
                classes: &classes,
                kept: &kept,
                probes: &probes,
                max_states: self.max_states,
                states: 0,
                limit: budget.saturating_sub(states),
                spent: states,
                beam: None,
                // The tables may cost as much as TABLE_WORK_PER_STATE cell updates per state of
                // the largest run so far (a cheap solve never pays more for them than for its
                // states), at most TABLE_WORK.
                tables: match (tables_on, self.tables_after_states) {
                    (false, _) => 0,
                    (true, 0) => TABLE_WORK,
                    (true, _) => usize::try_from(largest_any.saturating_mul(TABLE_WORK_PER_STATE))
                        .unwrap_or(usize::MAX)
                        .min(TABLE_WORK),
                },
            };
            let found = dp.run(&core, &residual, base, floor);
            states += dp.states;
            last_states = dp.states;
            let steady = tables_on;
            largest_any = largest_any.max(dp.states);
            tables_on |= dp.states > self.tables_after_states;
            let found = found?;
            if let Some((total, counts)) = found
                && total >= floor
            {
                break Some(assign(&kept, &core, &counts));
            }
            if last {
                break best.map(|(_, a)| a);
            }
            // Early refusal: once the tables are on (and the gap grows by SLOW_GROWTH), the
            // states of a run grow by a roughly steady factor from one run to the next (2 to 7
            // on the rounds of large integrality gap measured), so a next run that would take
            // the solve past its budget is predicted from the last two instead of being run
            // into the limit. The prediction is the last run's states times their growth over
            // the largest earlier run with tables (at least 1); it is made only for runs of
            // PREDICT_AFTER_STATES or more after such an earlier run (the run that turns the
            // tables on grew under the old regime and predicts nothing).
            if steady && largest_run > 0 && dp.states >= PREDICT_AFTER_STATES {
                let growth = (dp.states as f64 / largest_run as f64).max(1.0);
                let predicted = states as f64 + dp.states as f64 * growth;
                if predicted > budget as f64 {
                    return Err(SolveError::TooLarge {
                        solver: "dp",
                        what: "states over all gap-deepening runs (predicted from the last runs)",
                        needed: predicted as u128,
                        limit: u128::from(budget),
                        hint: "raise the limit or use --solver ilp",
                    });
                }
            }
            if steady {
                largest_run = largest_run.max(dp.states.max(1));
            }
            g *= if tables_on { SLOW_GROWTH } else { 2.0 };
        };
        let sol = match chosen {
            None => Solution::infeasible("dp", problem, Infeasibility::of(problem)),
            Some(a) => Solution::from_assignments("dp", Status::Optimal, problem, a),
        };
        Ok(sol.with_stats(SolveStats {
            classes: Some(classes.len() as u64),
            core_classes: Some(core_classes),
            core_jobs: Some(core_jobs),
            runs: Some(runs),
            gap_searched: Some(last_gap),
            states: Some(states),
            lagrangian_bound: Some(bound),
            seconds_bound: Some(seconds_bound),
            ..SolveStats::default()
        }))
    }
}
