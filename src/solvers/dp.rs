//! The fast exact DP ("dp"): the dense recurrence of MODEL.md section 4, restricted to the states
//! that can still lead to an optimum.
//!
//! The round problem is a multiple-choice knapsack with one capacity per GPU type. Following the
//! core idea of Pisinger's exact knapsack algorithms (Minknap, Mcknap; Pisinger, "A minimal
//! algorithm for the multiple-choice knapsack problem", EJOR 83, 1995; Kellerer, Pferschy and
//! Pisinger, *Knapsack Problems*, 2004, chapters 5 and 11), it combines:
//!
//! 1. **Aggregation.** Jobs with identical admissible options (same type, units and value) form a
//!    class with a count; the relaxation and the greedy work per class, so 100,000 jobs of 26
//!    Gavel job types cost hundreds of classes, not 100,000 jobs.
//! 2. **Lagrangian (LP) bound.** For multipliers mu_k >= 0 (one per GPU type),
//!    L(mu) = sum_k mu_k C_k + sum_j max_q rc_j(q), rc_j(q) = v_q - mu_(k(q)) * units_q
//!    (idle: rc = 0, only if the job may idle) bounds every solution from above. mu is chosen by
//!    coordinate descent with exact line minimization; for this structure min L(mu) equals the
//!    LP relaxation (the subproblem has integral vertices).
//! 3. **Incumbent.** A greedy at mu (forced jobs first, then by reduced cost), followed by an
//!    upgrade pass, gives a feasible value LB.
//! 4. **Reduced-cost fixing.** Any solution x satisfies
//!    V(x) = L(mu) - sum_j delta_j(x_j) - mu . slack(x), with delta_j = max rc_j - rc_j(x_j) >= 0,
//!    so a solution better than LB uses only choices with delta_j <= G = L(mu) - LB. Jobs left
//!    with one such choice are fixed; the others form the core.
//! 5. **Sparse DP over the core** with states = units used per touched type, one state per unit
//!    vector (dominance: the larger value wins), pruned by capacity and by the bound
//!    V + sum_rem max rc + sum_k mu_k * min(residual_k, max units the rest can add on k) < LB.
//!    Reconstruction keeps 5 bytes per state (parent, choice), not the layers' values.
//!
//! Every pruning rule removes only states whose every completion is worth less than LB (proof
//! in docs/solver.md), so the answer is the optimum. Worst case: the core is all jobs and the
//! states are the whole grid, the dense DP's O(n * prod_k (C_k + 1) * |O|) time; the guard
//! refuses a layer past [`Dp::max_states`] instead of exhausting memory.
//! Typical case: O(N |O| log(1/eps) K passes) for the bound on N classes, plus a DP over a core
//! of tens to hundreds of jobs.

use std::collections::HashMap;
use std::time::Instant;

use super::{SolveError, Solver, infeasible_reason};
use crate::formulation::RoundProblem;
use crate::solution::{Assignment, Solution, Status};

/// The fast exact DP.
#[derive(Debug, Clone, Copy)]
pub struct Dp {
    /// Largest number of states one DP layer may hold before the solver gives up with
    /// [`SolveError::TooLarge`] (default 4,000,000, about 100 bytes each while a layer is built);
    /// all layers together may hold five times
    /// as many (5 bytes each for reconstruction), so the solver stays under about 1 GiB.
    pub max_states: usize,
}

impl Default for Dp {
    fn default() -> Self {
        Dp { max_states: 4_000_000 }
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
        .map(|o| Choice { gpu: Some(o.gpu), units: o.units, value: o.value, slot: o.slot })
        .collect();
    if job.may_idle() {
        out.push(Choice { gpu: None, units: 0, value: 0.0, slot: 0 });
    }
    out
}

fn classes(problem: &RoundProblem) -> Vec<Class> {
    let mut index: HashMap<Vec<(usize, u32, u64, u64)>, usize> = HashMap::new();
    let mut out: Vec<Class> = Vec::new();
    for j in 0..problem.jobs.len() {
        let choices = choices_of(problem, j);
        let key: Vec<(usize, u32, u64, u64)> = choices
            .iter()
            .map(|c| (c.gpu.map_or(usize::MAX, |g| g), c.slot, c.units, c.value.to_bits()))
            .collect();
        match index.get(&key) {
            Some(&c) => out[c].jobs.push(j),
            None => {
                index.insert(key, out.len());
                out.push(Class { forced: !problem.jobs[j].may_idle(), choices, jobs: vec![j] });
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
    choices.iter().map(|c| rc(c, mu)).fold(f64::NEG_INFINITY, f64::max)
}

/// L(mu), and whether it is finite (a class with no choice makes it -inf, never happens for
/// valid problems since forced jobs have options).
fn lagrangian(classes: &[Class], capacity: &[u64], mu: &[f64]) -> f64 {
    let mut l: f64 = mu.iter().zip(capacity).map(|(m, &c)| m * c as f64).sum();
    for cl in classes {
        if !cl.choices.is_empty() {
            l += cl.jobs.len() as f64 * best_rc(&cl.choices, mu);
        }
    }
    l
}

/// Right derivative of L at `mu` along direction `d`: sum_k d_k C_k - sum_j d . u_j, where u_j
/// is the unit vector of j's maximizing choice at mu + eps d (among ties, the one with the
/// largest d . u, which is the one that stays maximal as t grows).
fn slope(classes: &[Class], capacity: &[u64], mu: &[f64], d: &[f64]) -> f64 {
    let mut s: f64 = d.iter().zip(capacity).map(|(x, &c)| x * c as f64).sum();
    for cl in classes {
        let mut best = f64::NEG_INFINITY;
        let mut du = 0.0;
        for c in &cl.choices {
            let r = rc(c, mu);
            let u = c.gpu.map_or(0.0, |g| d[g] * c.units as f64);
            if r > best || (r == best && u > du) {
                best = r;
                du = u;
            }
        }
        s -= cl.jobs.len() as f64 * du;
    }
    s
}

/// Minimizes t -> L(mu + t d) over the t that keep mu >= 0 and below `cap`, exactly up to
/// 1e-13 relative, by bisection on the sign of the right derivative (L is convex along d).
/// Returns whether mu moved.
fn line_search(classes: &[Class], capacity: &[u64], mu: &mut [f64], d: &[f64], cap: &[f64]) -> bool {
    if slope(classes, capacity, mu, d) >= 0.0 {
        return false;
    }
    // Largest step that keeps every coordinate in [0, cap].
    let mut hi = f64::INFINITY;
    for (k, &dk) in d.iter().enumerate() {
        if dk > 0.0 {
            hi = hi.min((cap[k] - mu[k]) / dk);
        } else if dk < 0.0 {
            hi = hi.min(mu[k] / -dk);
        }
    }
    if !(hi > 0.0 && hi.is_finite()) {
        return false;
    }
    let base: Vec<f64> = mu.to_vec();
    let at = |t: f64, mu: &mut [f64]| {
        for k in 0..mu.len() {
            mu[k] = (base[k] + t * d[k]).max(0.0);
        }
    };
    let mut lo = 0.0;
    at(hi, mu);
    if slope(classes, capacity, mu, d) < 0.0 {
        return true; // the minimum along d is at the boundary
    }
    for _ in 0..64 {
        let mid = 0.5 * (lo + hi);
        at(mid, mu);
        if slope(classes, capacity, mu, d) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-13 * hi {
            break;
        }
    }
    at(hi, mu);
    true
}

/// Multipliers minimizing L(mu) (the LP relaxation's dual): line searches along the coordinate
/// directions and along e_a + e_b and e_a - e_b for every pair of types, repeated until no
/// direction improves L by more than 1e-12 relative. Coordinate descent alone can stop at a
/// ridge of the piecewise-linear L; the pair directions walk along such ridges.
/// O(passes * K^2 * 64 * sum of class choices).
fn multipliers(classes: &[Class], capacity: &[u64]) -> Vec<f64> {
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
    let mut last = lagrangian(classes, capacity, &mu);
    for _pass in 0..50 {
        for d in &dirs {
            line_search(classes, capacity, &mut mu, d, &cap);
        }
        let now = lagrangian(classes, capacity, &mu);
        if last - now <= 1e-12 * now.abs().max(1.0) {
            break;
        }
        last = now;
    }
    mu
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
        if cl.forced { (false, cl.choices.len()) } else { (true, 0) }
    };
    order.sort_by(|&a, &b| {
        key(a).cmp(&key(b)).then_with(|| {
            best_rc(&classes[b].choices, mu).total_cmp(&best_rc(&classes[a].choices, mu))
        })
    });
    for &ci in &order {
        let cl = &classes[ci];
        // Choices by reduced cost, best first; ties to the larger value, then the listed order.
        let mut ranked: Vec<usize> = (0..cl.choices.len()).collect();
        ranked.sort_by(|&a, &b| {
            let (ca, cb) = (&cl.choices[a], &cl.choices[b]);
            rc(cb, mu).total_cmp(&rc(ca, mu)).then(cb.value.total_cmp(&ca.value)).then(a.cmp(&b))
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

/// The sparse DP over `core` jobs, each restricted to `choices[j]`, on top of fixed jobs worth
/// `base` that leave `residual` units per type. States are unit vectors over the types the core
/// touches, one per vector (the larger value wins; ties keep the first, so the result is
/// deterministic). A state is dropped when it overflows a residual or when
/// base + value + sum_rem max rc + sum_k mu_k * min(room_k, most units the rest can add on k)
/// is below `floor`. Returns the best total (base included) and each core job's choice index, or
/// `None` when no state survives.
/// Time O(sum over layers of states * choices), memory 5 bytes per state for the back pointers
/// plus the largest layer.
struct Sparse<'a> {
    choices: &'a [Vec<Choice>],
    mu: &'a [f64],
    max_states: usize,
    states: u64,
    /// When set, a layer past `max_states` ends the run with `Ok(None)` instead of an error
    /// (heuristic runs may give up; the exact run may not).
    give_up: bool,
}

impl Sparse<'_> {
    fn run(
        &mut self,
        core: &[usize],
        residual: &[i128],
        base: f64,
        floor: f64,
    ) -> Result<Option<(f64, Vec<usize>)>, SolveError> {
        let k = residual.len();
        let mu = self.mu;
        let choices = self.choices;
        if residual.iter().any(|&r| r < 0) {
            return Ok(None);
        }
        if let Some(&j) = core.iter().find(|&&j| choices[j].len() > 255) {
            return Err(SolveError::TooLarge {
                solver: "dp",
                what: "undecided choices of one job",
                needed: choices[j].len() as u128,
                limit: 255,
                hint: "use --solver ilp",
            });
        }
        // Grain and stride per touched type for the state key.
        let mut grain = vec![0u64; k];
        for &j in core {
            for c in &choices[j] {
                if let Some(g) = c.gpu {
                    grain[g] = super::dense::gcd(grain[g], c.units);
                }
            }
        }
        let mut stride = vec![0u128; k];
        let mut acc: u128 = 1;
        for t in 0..k {
            if grain[t] > 0 {
                stride[t] = acc;
                let cells = u128::from(residual[t] as u64 / grain[t]) + 1;
                acc = acc.checked_mul(cells).ok_or(SolveError::TooLarge {
                    solver: "dp",
                    what: "bits of state key",
                    needed: 129,
                    limit: 128,
                    hint: "the undecided jobs span too many gpu types of large capacity; use --solver ilp",
                })?;
            }
        }
        // Suffix bounds: best rc and most units per type of the core jobs from position i on.
        let m = core.len();
        let mut suffix_rc = vec![0.0; m + 1];
        let mut suffix_add = vec![0u64; (m + 1) * k];
        for i in (0..m).rev() {
            let cs = &choices[core[i]];
            suffix_rc[i] = suffix_rc[i + 1] + best_rc(cs, mu);
            for t in 0..k {
                let most = cs.iter().filter(|c| c.gpu == Some(t)).map(|c| c.units).max().unwrap_or(0);
                suffix_add[i * k + t] = suffix_add[(i + 1) * k + t] + most;
            }
        }
        let bound = |value: f64, used: &[u64], i: usize| -> f64 {
            let mut u = base + value + suffix_rc[i];
            for t in 0..k {
                if mu[t] > 0.0 {
                    let room = (residual[t] as u64).saturating_sub(used[t]);
                    u += mu[t] * room.min(suffix_add[i * k + t]) as f64;
                }
            }
            u
        };
        let mut units: Vec<u64> = vec![0; k];
        let mut values: Vec<f64> = vec![0.0];
        let mut keys: Vec<u128> = vec![0];
        if bound(0.0, &units, 0) < floor {
            return Ok(None);
        }
        let mut trail: Vec<(Vec<u32>, Vec<u8>)> = Vec::with_capacity(m);
        let mut row = vec![0u64; k];
        for (i, &j) in core.iter().enumerate() {
            let cs = &choices[j];
            let guess = values.len() * 2;
            let mut index: HashMap<u128, u32> = HashMap::with_capacity(guess);
            let mut n_units: Vec<u64> = Vec::with_capacity(guess * k);
            let mut n_values: Vec<f64> = Vec::with_capacity(guess);
            let mut n_keys: Vec<u128> = Vec::with_capacity(guess);
            let mut parent: Vec<u32> = Vec::with_capacity(guess);
            let mut choice: Vec<u8> = Vec::with_capacity(guess);
            for s in 0..values.len() {
                for (q, c) in cs.iter().enumerate() {
                    row.copy_from_slice(&units[s * k..(s + 1) * k]);
                    let mut key = keys[s];
                    if let Some(g) = c.gpu {
                        row[g] += c.units;
                        if row[g] as i128 > residual[g] {
                            continue;
                        }
                        key += u128::from(c.units / grain[g]) * stride[g];
                    }
                    let v = values[s] + c.value;
                    if bound(v, &row, i + 1) < floor {
                        continue;
                    }
                    match index.get(&key) {
                        Some(&at) => {
                            let at = at as usize;
                            if v > n_values[at] {
                                n_values[at] = v;
                                parent[at] = s as u32;
                                choice[at] = q as u8;
                            }
                        }
                        None => {
                            if n_values.len() >= self.max_states {
                                if self.give_up {
                                    return Ok(None);
                                }
                                return Err(SolveError::TooLarge {
                                    solver: "dp",
                                    what: "states in one layer",
                                    needed: n_values.len() as u128 + 1,
                                    limit: self.max_states as u128,
                                    hint: "raise the limit or use --solver ilp",
                                });
                            }
                            index.insert(key, n_values.len() as u32);
                            n_units.extend_from_slice(&row);
                            n_values.push(v);
                            n_keys.push(key);
                            parent.push(s as u32);
                            choice.push(q as u8);
                        }
                    }
                }
            }
            self.states += n_values.len() as u64;
            // The back pointers of every layer stay in memory (5 bytes a state): bound them too.
            if self.states > 5 * self.max_states as u64 {
                if self.give_up {
                    return Ok(None);
                }
                return Err(SolveError::TooLarge {
                    solver: "dp",
                    what: "states over all layers",
                    needed: u128::from(self.states),
                    limit: 5 * self.max_states as u128,
                    hint: "raise the limit or use --solver ilp",
                });
            }
            if n_values.is_empty() {
                return Ok(None);
            }
            units = n_units;
            values = n_values;
            keys = n_keys;
            trail.push((parent, choice));
        }
        let mut best = 0usize;
        for (s, &v) in values.iter().enumerate() {
            if v > values[best] {
                best = s;
            }
        }
        let total = base + values[best];
        let mut picks = vec![0usize; m];
        let mut s = best;
        for (i, (parent, choice)) in trail.iter().enumerate().rev() {
            picks[i] = choice[s] as usize;
            s = parent[s] as usize;
        }
        Ok(Some((total, picks)))
    }
}

/// Largest core of the improvement phase.
const MAX_IMPROVE_CORE: usize = 4096;

/// Largest layer of an improvement run; past it the run gives up (the exact phase does not).
const IMPROVE_STATES: usize = 50_000;

impl Solver for Dp {
    fn name(&self) -> &'static str {
        "dp"
    }

    fn solve_problem(&self, problem: &RoundProblem) -> Result<Solution, SolveError> {
        let start = Instant::now();
        let n = problem.jobs.len();
        let classes = classes(problem);
        let mu = multipliers(&classes, &problem.capacity);
        let bound = lagrangian(&classes, &problem.capacity, &mu);
        // Per job its choices (shared per class) and the incumbent's pick.
        let mut choices: Vec<Vec<Choice>> = vec![Vec::new(); n];
        for cl in &classes {
            for &j in &cl.jobs {
                choices[j] = cl.choices.clone();
            }
        }
        let mut class_of = vec![0usize; n];
        for (c, cl) in classes.iter().enumerate() {
            for &j in &cl.jobs {
                class_of[j] = c;
            }
        }
        let mut incumbent = greedy(problem, &classes, &mu);
        let value_of = |pick: &[usize]| -> f64 { (0..n).map(|j| choices[j][pick[j]].value).sum() };
        let mut lb = incumbent.as_deref().map(value_of);
        let seconds_bound = start.elapsed().as_secs_f64();
        // Safety margin for floating-point error in sums of up to 10^5 terms.
        let tol = 1e-10 * bound.abs().max(1.0);
        let mut states = 0u64;

        // Improvement (expanding core): re-optimize the jobs whose choice is most ambiguous at mu
        // (smallest reduced-cost regret), the rest kept as in the incumbent.
        let regret = |j: usize| -> f64 {
            let best = best_rc(&choices[j], &mu);
            let mut second = f64::INFINITY;
            for c in &choices[j] {
                let d = best - rc(c, &mu);
                if d > 0.0 {
                    second = second.min(d);
                }
            }
            let ties = choices[j].iter().filter(|c| rc(c, &mu) == best).count();
            if ties > 1 { 0.0 } else { second }
        };
        // Jobs the greedy put on a choice that is not their best at mu come first: they carry
        // the incumbent's loss against the bound.
        let deviation = |j: usize| -> f64 {
            incumbent.as_ref().map_or(0.0, |p| best_rc(&choices[j], &mu) - rc(&choices[j][p[j]], &mu))
        };
        let mut by_regret: Vec<usize> = (0..n).filter(|&j| choices[j].len() > 1).collect();
        by_regret.sort_by(|&a, &b| {
            let (da, db) = (deviation(a), deviation(b));
            (da == 0.0)
                .cmp(&(db == 0.0))
                .then(db.total_cmp(&da))
                .then(regret(a).total_cmp(&regret(b)))
                .then(a.cmp(&b))
        });
        // Two neighbourhoods, each over cores of growing size: first near-ties only (plus the
        // current pick), which is where the greedy splits ties differently from the LP and is
        // cheap to search whole; then every choice within the current gap, under a state budget.
        let mut size = 16usize;
        let mut rounds = 0u64;
        let mut wide = false;
        while let (Some(pick), Some(value)) = (incumbent.as_ref(), lb) {
            if bound - value <= tol || by_regret.is_empty() {
                break;
            }
            let mut core: Vec<usize> = by_regret.iter().copied().take(size).collect();
            core.sort_unstable();
            let mut residual: Vec<i128> = problem.capacity.iter().map(|&c| c as i128).collect();
            let mut base = 0.0;
            let mut in_core = vec![false; n];
            for &j in &core {
                in_core[j] = true;
            }
            for j in 0..n {
                if !in_core[j] {
                    let c = choices[j][pick[j]];
                    base += c.value;
                    if let Some(g) = c.gpu {
                        residual[g] -= c.units as i128;
                    }
                }
            }
            // Only choices that can be in a better solution (delta <= current gap), and jobs
            // with a single such choice keep their incumbent pick.
            let g = if wide { bound - value } else { (bound - value).min(1e-7 * bound.abs().max(1.0)) };
            let near: Vec<Vec<Choice>> = core
                .iter()
                .map(|&j| {
                    let best = best_rc(&choices[j], &mu);
                    let mut cs: Vec<Choice> =
                        choices[j].iter().copied().filter(|c| best - rc(c, &mu) <= g + tol).collect();
                    let own = choices[j][pick[j]];
                    if !cs.iter().any(|c| c.gpu == own.gpu && c.slot == own.slot) {
                        cs.push(own);
                    }
                    cs
                })
                .collect();
            let mut order: Vec<usize> = (0..core.len()).collect();
            order.sort_by_key(|&i| (near[i].len(), class_of[core[i]], core[i]));
            let core: Vec<usize> = order.iter().map(|&i| core[i]).collect();
            rounds += 1;
            let mut restricted: Vec<Vec<Choice>> = vec![Vec::new(); n];
            for (i, &j) in order.iter().zip(&core) {
                restricted[j] = near[*i].clone();
            }
            let mut sparse = Sparse { choices: &restricted, mu: &mu, max_states: IMPROVE_STATES, states: 0, give_up: true };
            let found = sparse.run(&core, &residual, base, value + tol)?;
            states += sparse.states;
            if let Some((total, picks)) = found {
                if total > value + tol {
                    let mut next = pick.clone();
                    for (i, &j) in core.iter().enumerate() {
                        let c = restricted[j][picks[i]];
                        next[j] = choices[j].iter().position(|o| o.gpu == c.gpu && o.slot == c.slot).unwrap_or(pick[j]);
                    }
                    lb = Some(value_of(&next));
                    incumbent = Some(next);
                }
            }
            if size >= by_regret.len() || size >= MAX_IMPROVE_CORE {
                if wide {
                    break;
                }
                wide = true;
                size = 16;
                continue;
            }
            size *= 2;
        }
        let seconds_improve = start.elapsed().as_secs_f64() - seconds_bound;

        // Exact phase: a solution better than LB uses only choices with delta <= G.
        let gap = lb.map_or(f64::INFINITY, |lb| bound - lb);
        let mut kept: Vec<Vec<Choice>> = Vec::with_capacity(n);
        for j in 0..n {
            let best = best_rc(&choices[j], &mu);
            kept.push(choices[j].iter().copied().filter(|c| best - rc(c, &mu) <= gap + tol).collect());
        }
        let mut base = 0.0;
        let mut residual: Vec<i128> = problem.capacity.iter().map(|&c| c as i128).collect();
        let mut assignment: Vec<Assignment> = vec![None; n];
        let mut core: Vec<usize> = Vec::new();
        for j in 0..n {
            match kept[j].as_slice() {
                [] => {} // no choice at all: a job with no option that may idle has `idle`
                [only] => {
                    base += only.value;
                    if let Some(g) = only.gpu {
                        residual[g] -= only.units as i128;
                        assignment[j] = Some((g, only.slot));
                    }
                }
                _ => core.push(j),
            }
        }
        core.sort_by_key(|&j| (kept[j].len(), class_of[j], j));
        let floor = lb.map_or(f64::NEG_INFINITY, |v| v - tol);
        let mut exact = Sparse { choices: &kept, mu: &mu, max_states: self.max_states, states: 0, give_up: false };
        let found = exact.run(&core, &residual, base, floor)?;
        states += exact.states;

        let chosen: Option<Vec<Assignment>> = match (found, incumbent.as_ref(), lb) {
            (Some((total, picks)), inc, lb) if inc.is_none() || total >= lb.unwrap_or(f64::NEG_INFINITY) => {
                for (i, &j) in core.iter().enumerate() {
                    let c = kept[j][picks[i]];
                    assignment[j] = c.gpu.map(|g| (g, c.slot));
                }
                Some(assignment)
            }
            (_, Some(pick), _) => Some(
                (0..n).map(|j| {
                    let c = choices[j][pick[j]];
                    c.gpu.map(|g| (g, c.slot))
                }).collect(),
            ),
            (_, None, _) => None,
        };
        let sol = match chosen {
            None => Solution::infeasible("dp", problem, infeasible_reason(problem)),
            Some(a) => Solution::from_assignments("dp", Status::Optimal, problem, a),
        };
        Ok(sol
            .stat("classes", classes.len() as u64)
            .stat("core_jobs", core.len() as u64)
            .stat("improve_rounds", rounds)
            .stat("states", states)
            .stat("lagrangian_bound", bound)
            .stat("seconds_bound", seconds_bound)
            .stat("seconds_improve", seconds_improve))
    }
}
