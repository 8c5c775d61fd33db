//! Step 2 of docs/solver.md: the Lagrangian bound L(mu) and the multipliers that minimize it.
//!
//! Why this file exists: every later phase prices the GPU types at mu. The reduced costs at mu
//! decide which choices the fixing keeps (step 4), the greedy's order (step 3) and the probes
//! of the state bound (step 6); L(mu) is the upper bound whose gap to a solution bounds how far
//! that solution's choices can be from a tie (Lemmas 1 and 2). For prices mu >= 0,
//! L(mu) = sum_k mu_k C_k + sum_c n_c max_(q in Q_c) rc(q) bounds every solution from above;
//! its minimum over mu is the LP relaxation's value. mu is found by exact line searches along
//! every direction of {-1, 0, 1}^K (K <= 5; coordinates and pairs beyond), each costing about
//! one evaluation of L: walk the upper envelope of each class's lines, in sweeps that each go
//! only as far as the breakpoints found so far put the step (`Flat::crossing`), and select
//! the breakpoint where the slope turns >= 0. A direction that does not
//! descend (most of them) costs one pass over the classes' maximizing choices, kept until mu
//! moves (the slope from the classes whose maximizers share one units vector summed once,
//! `Ties::used`). Where a pass gains nothing, or more than [`ZIGZAG`] times the pass before
//! it (a linear zigzag), the descent tries the vertex of L's pieces nearest mu
//! (`Flat::vertex`: K planes where classes tie, solved for their intersection) and one more
//! line search along the steepest direction, from the least subgradient (`Flat::steepest`),
//! which descends at any kink that is not a minimum. Where the DP asks for better multipliers
//! (its smoothing trigger), `refine_multipliers` makes the descent again with line searches
//! along the edges of L's pieces through each settle point (`Flat::edges`, the dual simplex
//! method's pivots), before the entropic smoothing (`smooth_multipliers`).
//!
//! Complexity: O(P * D * (S + B |Q_c|)) time for P passes (<= [`MAX_PASSES`], 2 to 4
//! measured), D = 3^K - 1 directions, S = sum_c |Q_c| and B the breakpoints a descending
//! search walks (each a step of one class's envelope; their selection expected O(B));
//! memory O(S + B).
//! Reference: A. M. Geoffrion, "Lagrangean relaxation for integer programming", Mathematical
//! Programming Study 2 (1974) 82-114; for the multiple-choice knapsack's LP and its dual,
//! Kellerer, Pferschy and Pisinger, *Knapsack Problems*, Springer 2004, chapter 11.

use super::classes::{Class, rc};
use super::limits::{
    ALL_DIRECTIONS_UP_TO, ARMIJO, BACKTRACKS, FIRST_TAU, JUMP_GAIN, MAX_PASSES, NEWTON_STEPS,
    PRICE_CAP_FACTOR, RIDGE, SETTLED, SMOOTH_EXCESS, SMOOTH_GAP, SMOOTH_LEVEL_GAIN, SMOOTH_LEVELS,
    SMOOTH_SETTLED, STEEPEST_GAP, STEEPEST_STEPS, TOLERANCE, TRUST, VERTEX_PLANES, ZIGZAG,
};

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

    /// The magnitude of the terms L(mu) sums (|mu_k C_k| and n_c times the largest |v_q| +
    /// |mu u_q| of each class): L's rounding error is a small multiple of it times 2^-52.
    fn magnitude(&self, mu: &[f64]) -> f64 {
        let mut m: f64 = mu
            .iter()
            .zip(&self.capacity)
            .map(|(m, c)| (m * c).abs())
            .sum();
        for c in 0..self.count.len() {
            let mut most = 0.0f64;
            for q in self.start[c]..self.start[c + 1] {
                let price = mu.get(self.gpu[q]).copied().unwrap_or(0.0);
                most = most.max(self.value[q].abs() + (price * self.units[q]).abs());
            }
            m += self.count[c] * most;
        }
        m
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
    /// (The line search reads the same from [`Flat::ties`]; the tests check that they agree.)
    #[cfg(test)]
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

    /// Each class's maximizing choices at prices `price` (the idle pseudo-type's 0 last): the
    /// choices whose reduced cost equals the class's largest, compared exactly as
    /// [`Flat::maximizer`] compares them, so that the least d . u over them is its second part
    /// for any direction d.
    ///
    /// Also sums the units of the classes whose maximizing choices share one units vector
    /// (`Ties::used`) and lists the others (`Ties::split`): the slope of L along a direction d
    /// of integers is then d . (C - used) less the split classes' least d . u, the same integer
    /// as the sum over every class, in O(K + split classes) instead of O(classes).
    fn ties(&self, price: &[f64], ties: &mut Ties) {
        ties.start.clear();
        ties.choices.clear();
        ties.start.push(0);
        ties.used.clear();
        ties.used.resize(self.k, 0.0);
        ties.split.clear();
        for c in 0..self.count.len() {
            let range = self.start[c]..self.start[c + 1];
            let rc = |q: usize| self.value[q] - price[self.gpu[q]] * self.units[q];
            let best = range.clone().map(rc).fold(f64::NEG_INFINITY, f64::max);
            let from = ties.choices.len();
            ties.choices.extend(range.filter(|&q| rc(q) == best));
            ties.start.push(ties.choices.len());
            let tied = &ties.choices[from..];
            let Some(&first) = tied.first() else { continue };
            if tied.iter().all(|&q| self.same_units(q, first)) {
                if self.gpu[first] < self.k {
                    ties.used[self.gpu[first]] += self.count[c] * self.units[first];
                }
            } else {
                ties.split.push(c);
            }
        }
    }

    /// Whether choices q and r use the same units vector: the same type and units, or none
    /// (idle has 0 units).
    fn same_units(&self, q: usize, r: usize) -> bool {
        self.gpu[q] == self.gpu[r] && self.units[q] == self.units[r]
            || self.units[q] == 0.0 && self.units[r] == 0.0
    }

    /// Class c's least d . u over its maximizing choices in `ties` (`dir` with the idle
    /// pseudo-type's 0 last): the d . u of the maximizer that stays maximal as t grows along
    /// d, what [`Flat::maximizer`] gives; `None` for a class without choices.
    fn least(&self, c: usize, dir: &[f64], ties: &Ties) -> Option<f64> {
        ties.choices[ties.start[c]..ties.start[c + 1]]
            .iter()
            .map(|&q| dir[self.gpu[q]] * self.units[q])
            .reduce(f64::min)
    }

    /// The right slope of t -> L(mu + t d) at t = 0, with `ties` made at mu and `dir` = d with
    /// the idle pseudo-type's 0 last: d . C less sum_c n_c times class c's least d . u.
    /// For a direction of integers every term is an integer (units, counts and capacities
    /// are), every sum exact (below 2^53, which the instance limits keep them) and its order
    /// free, so the classes whose maximizers share one units vector come in as `Ties::used`:
    /// O(K + split classes) instead of O(classes). (Were a sum inexact, only the descent's
    /// path could change: any mu bounds the optimum.)
    fn slope(&self, dir: &[f64], ties: &Ties) -> f64 {
        let k = self.k;
        if !dir.iter().all(|x| x.fract() == 0.0) {
            return self.slope_by_class(dir, ties);
        }
        let mut slope: f64 = (0..k)
            .map(|t| dir[t] * self.capacity[t] - dir[t] * ties.used[t])
            .sum();
        for &c in &ties.split {
            if let Some(b) = self.least(c, dir, ties) {
                slope -= self.count[c] * b;
            }
        }
        slope
    }

    /// [`Flat::slope`] class by class, for any direction.
    fn slope_by_class(&self, dir: &[f64], ties: &Ties) -> f64 {
        let mut slope: f64 = dir
            .iter()
            .take(self.k)
            .zip(&self.capacity)
            .map(|(x, c)| x * c)
            .sum();
        for c in 0..self.count.len() {
            if let Some(b) = self.least(c, dir, ties) {
                slope -= self.count[c] * b;
            }
        }
        slope
    }

    /// Minimizes t -> L(mu + t d) exactly over the t that keep mu in [0, cap]. Along d each
    /// class's term is the upper envelope of the lines rc_q(mu) - t (d . u_q); its breakpoints
    /// are where the slope of L grows, and the minimum is the first breakpoint where the slope
    /// turns >= 0 ([`Flat::crossing`]). About the cost of one evaluation of L (where a
    /// bisection on the slope costs 64). Returns whether mu moved.
    ///
    /// `ties` holds [`Flat::ties`] at `mu`; it is made again when mu moves.
    fn line_search(
        &self,
        mu: &mut [f64],
        d: &[f64],
        cap: &[f64],
        ties: &mut Ties,
        scratch: &mut Scratch,
    ) -> bool {
        let k = self.k;
        let mut price = mu.to_vec();
        price.push(0.0);
        let mut dir = d.to_vec();
        dir.push(0.0);
        let hi = reach(mu, d, cap);
        if !(hi > 0.0 && hi.is_finite()) {
            return false;
        }
        // Right slope at t = 0. Most directions do not descend: check that first, over the
        // maximizers only (26 directions a pass with 3 types, and mu moves for few of them).
        let slope = self.slope(&dir, ties);
        if slope >= 0.0 {
            return false;
        }
        let step = self.crossing(&price, &dir, ties, hi, -slope, scratch);
        if step <= 0.0 {
            return false;
        }
        for t in 0..k {
            mu[t] = (mu[t] + step * d[t]).max(0.0);
            price[t] = mu[t];
        }
        self.ties(&price, ties);
        true
    }
}

impl Flat {
    /// The steepest descent direction of L at `mu` (with `ties` its maximizing choices), or
    /// `None` where the iterations find none. The subgradients of L at mu are
    /// g = C - sum_c n_c y_c with y_c in the hull of the units vectors of class c's maximizing
    /// choices; the steepest direction is -P(g*) for the subgradient g* whose part P(g) that
    /// can move (every coordinate, but only the negative ones of prices at 0) is shortest.
    /// g* is approached by Frank-Wolfe over the sum of the hulls (a linear function over it is
    /// minimized class by class) with an exact line search on the piecewise quadratic
    /// |P(g)|^2, [`STEEPEST_STEPS`] steps at most; only classes with two or more maximizing
    /// choices on different units vectors move. O(steps * ties) time, O(K) memory besides.
    ///
    /// Why: the directions of {-1, 0, 1}^K can all fail to descend at a kink of L that is not
    /// its minimum; the steepest direction descends from every such point (L's directional
    /// derivative along it is -|P(g*)|^2 < 0), and the exact line search then takes the step.
    /// Reference: the minimum-norm subgradient as the steepest descent direction of a convex
    /// function, J.-B. Hiriart-Urruty and C. Lemarechal, *Convex Analysis and Minimization
    /// Algorithms I*, Springer 1993, chapter VIII; Frank-Wolfe: M. Frank and P. Wolfe, Naval
    /// Research Logistics Quarterly 3 (1956) 95-110.
    fn steepest(&self, mu: &[f64], ties: &Ties) -> Option<Vec<f64>> {
        let k = self.k;
        let at_zero: Vec<bool> = mu.iter().map(|&m| m <= 0.0).collect();
        let project = |g: &[f64], out: &mut [f64]| {
            for t in 0..k {
                out[t] = if at_zero[t] { g[t].min(0.0) } else { g[t] };
            }
        };
        // g starts with every class on its first maximizer. The moving classes (maximizers on
        // different units vectors: `Ties::split`) are the variables; `part` holds their share
        // of C - g, sum n_c y_c. The other classes' units are `Ties::used` (integers, so g is
        // the same number as summed class by class).
        let mut g: Vec<f64> = (0..k).map(|t| self.capacity[t] - ties.used[t]).collect();
        let mut part = vec![0.0; k];
        let moving = &ties.split;
        for &c in moving {
            let first = ties.choices[ties.start[c]];
            if self.gpu[first] < k {
                let used = self.count[c] * self.units[first];
                g[self.gpu[first]] -= used;
                part[self.gpu[first]] += used;
            }
        }
        let mut p = vec![0.0; k];
        let mut delta = vec![0.0; k];
        let mut vertex = vec![0.0; k];
        let mut kinks: Vec<f64> = Vec::with_capacity(k + 1);
        // |P(g)|^2 below this is 0 to rounding: the capacities' squared size times 1e-24.
        let tiny = 1e-24 * self.capacity.iter().map(|c| c * c).sum::<f64>().max(1.0);
        for _ in 0..STEEPEST_STEPS {
            project(&g, &mut p);
            // Frank-Wolfe's vertex: the moving classes' choice of largest p . u (the gradient
            // of |P(g)|^2 in y_c is -2 n_c p).
            vertex.fill(0.0);
            for &c in moving {
                let tied = &ties.choices[ties.start[c]..ties.start[c + 1]];
                let best = tied
                    .iter()
                    .map(|&q| {
                        let t = self.gpu[q];
                        (if t < k { p[t] * self.units[q] } else { 0.0 }, q)
                    })
                    .max_by(|a, b| a.0.total_cmp(&b.0))?;
                let q = best.1;
                if self.gpu[q] < k {
                    vertex[self.gpu[q]] += self.count[c] * self.units[q];
                }
            }
            // g moves by delta = part - vertex times the step s in [0, 1] that minimizes the
            // convex |P(g + s delta)|^2: its half-derivative sum_t P_t(s) delta_t is piecewise
            // linear and nondecreasing in s, with a kink where a price at 0 changes sign.
            for t in 0..k {
                delta[t] = part[t] - vertex[t];
            }
            let slope = |s: f64| -> f64 {
                (0..k)
                    .map(|t| {
                        let x = g[t] + s * delta[t];
                        (if at_zero[t] { x.min(0.0) } else { x }) * delta[t]
                    })
                    .sum()
            };
            let at0 = slope(0.0);
            let norm: f64 = p.iter().map(|x| x * x).sum();
            // Frank-Wolfe's gap -2 slope(0) bounds |P(g)|^2 - |P(g*)|^2 from above: stop once
            // it is a small part of |P(g)|^2, or once |P(g)| is within rounding of 0.
            if at0 >= 0.0 || -2.0 * at0 <= STEEPEST_GAP * norm || norm <= tiny {
                break;
            }
            kinks.clear();
            kinks.extend(
                (0..k)
                    .filter(|&t| at_zero[t] && delta[t] != 0.0)
                    .map(|t| -g[t] / delta[t])
                    .filter(|s| *s > 0.0 && *s < 1.0),
            );
            kinks.sort_by(f64::total_cmp);
            kinks.push(1.0);
            let (mut a, mut sa) = (0.0, at0);
            let mut lo = 1.0;
            for &b in kinks.iter() {
                let sb = slope(b);
                if sb >= 0.0 {
                    // The root of the linear piece between a and b.
                    lo = if sb > sa {
                        a + (b - a) * (-sa / (sb - sa))
                    } else {
                        b
                    };
                    break;
                }
                (a, sa) = (b, sb);
            }
            if lo <= 0.0 {
                break;
            }
            for t in 0..k {
                g[t] += lo * delta[t];
                part[t] += lo * (vertex[t] - part[t]);
            }
        }
        project(&g, &mut p);
        if p.iter().map(|x| x * x).sum::<f64>() <= tiny {
            return None;
        }
        Some(p.iter().map(|x| -x).collect())
    }
}

impl Flat {
    /// The vertex of L's pieces nearest `mu`, or `None`: the intersection of K linearly
    /// independent hyperplanes, taken nearest first among the [`VERTEX_PLANES`] K nearest of
    /// those where a class's maximizing choice ties one of its choices on another units vector
    /// (rc_q = rc_r, linear in mu) and those where a price is 0, if it lies in [0, cap].
    ///
    /// Why: L is piecewise linear, and its minimum lies where K of its pieces' boundaries
    /// meet (the LP's optimal basis). Where the fixed directions stall near such a vertex, the
    /// planes through it are those nearest mu, and solving for their intersection lands on
    /// it in one step, where the steepest direction can need many (each pass of line searches
    /// then gains a steady fraction of the last: on the 1,000-job Gavel round of seed 37,
    /// ten passes and 240 us; with the vertex three passes and 140 us, at an L lower by
    /// 5e-11). A guess of the optimal basis from a near-optimal point, as in crossover from
    /// an interior point (N. Megiddo, "On finding primal- and dual-optimal bases", ORSA
    /// Journal on Computing 3 (1991) 63-65); the caller keeps it only if L is lower there,
    /// and any mu >= 0 bounds the optimum (Lemma 1).
    /// O(total choices + K^3) time; the nearest planes are kept by insertion in O(K) memory.
    fn vertex(&self, mu: &[f64], cap: &[f64]) -> Option<Vec<f64>> {
        let k = self.k;
        if k == 0 || k > MAX_VERTEX_TYPES {
            return None;
        }
        let mut price = mu.to_vec();
        price.push(0.0);
        // The nearest planes as (distance, q, r), nearest first: choices q and r tie, or the
        // price of type q is 0 (r = usize::MAX).
        let most = VERTEX_PLANES * k;
        let mut near: Vec<(f64, usize, usize)> = Vec::with_capacity(most + 1);
        let keep = |near: &mut Vec<(f64, usize, usize)>, d: f64, q: usize, r: usize| {
            if d.is_nan() || near.len() == most && near.last().is_some_and(|l| d >= l.0) {
                return;
            }
            let at = near.partition_point(|x| x.0 <= d);
            near.insert(at, (d, q, r));
            near.truncate(most);
        };
        // sqrt(2) times the most units of a choice bounds every plane's |normal|.
        let widest = std::f64::consts::SQRT_2 * self.units.iter().fold(0.0f64, |m, &u| m.max(u));
        let units = |q: usize| if self.gpu[q] < k { self.units[q] } else { 0.0 };
        for c in 0..self.count.len() {
            let (from, to) = (self.start[c], self.start[c + 1]);
            if from == to {
                continue;
            }
            let rc = |q: usize| self.value[q] - price[self.gpu[q]] * self.units[q];
            let (best, top, second) = self.top_two(from..to, &price);
            // Every plane of the class is at least (top - second) / widest away.
            if near.len() == most && near.last().is_some_and(|l| top - second >= l.0 * widest) {
                continue;
            }
            for r in from..to {
                if self.same_units(best, r) {
                    continue;
                }
                // The plane's normal is u_best e_(type of best) - u_r e_(type of r).
                let (ub, ur) = (units(best), units(r));
                let norm = if self.gpu[best] == self.gpu[r] {
                    (ub - ur).abs()
                } else {
                    (ub * ub + ur * ur).sqrt()
                };
                if norm > 0.0 {
                    keep(&mut near, (top - rc(r)) / norm, best, r);
                }
            }
        }
        for (t, &m) in mu.iter().enumerate() {
            keep(&mut near, m, t, usize::MAX);
        }
        // The first K independent normals (Gram-Schmidt against those taken), as the rows
        // [normal | right-hand side] of the system.
        let mut basis: Vec<Vec<f64>> = Vec::with_capacity(k);
        let mut system: Vec<f64> = Vec::with_capacity(k * (k + 1));
        for &(_, q, r) in &near {
            let (normal, rhs) = if r == usize::MAX {
                let mut e = vec![0.0; k];
                e[q] = 1.0;
                (e, 0.0)
            } else {
                (self.tie_normal(q, r), self.value[q] - self.value[r])
            };
            if extend_basis(&mut basis, &normal) {
                system.extend(normal);
                system.push(rhs);
                if basis.len() == k {
                    break;
                }
            }
        }
        if basis.len() < k {
            return None;
        }
        let x = gauss_jordan(&mut system, k, f64::MIN_POSITIVE)?;
        // A vertex outside the box by more than rounding is no candidate; rounding below 0 is
        // clamped.
        let scale = x.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        if x.iter()
            .zip(cap)
            .any(|(&v, &c)| !v.is_finite() || v < -1e-12 * scale || v > c)
        {
            return None;
        }
        Some(x.iter().map(|v| v.max(0.0)).collect())
    }
}

impl Flat {
    /// The directions of the edges of L's pieces through `mu`: the planes where a class's
    /// maximizing choice ties another on a different units vector to within [`ACTIVE`]
    /// (relative to 1 + the largest price), or where a price is 0 to within as much, taken
    /// once each (at most [`MAX_ACTIVE`]); for every K - 1 of them that are independent, the
    /// two directions along which they all stay tied. At a vertex of L that is not its
    /// minimum some edge descends (the dual simplex method's pivots walk such edges), where
    /// the fixed directions of {-1, 0, 1}^K can all go uphill: on the 10,000-job Gavel round of
    /// seed 39 the descent settles at the vertex of three planes with normals (0, 2, -4),
    /// (2, -4, 0) and (2, 0, -1), and L's minimum, 0.00044 lower, lies along the edge of the
    /// first and the last, direction (1, 4, 2).
    /// O(total choices + C(MAX_ACTIVE, K - 1) K^3) time.
    fn edges(&self, mu: &[f64]) -> Vec<Vec<f64>> {
        let k = self.k;
        let mut out = Vec::new();
        if !(2..=MAX_VERTEX_TYPES).contains(&k) || mu.len() != k {
            return out;
        }
        let mut price = mu.to_vec();
        price.push(0.0);
        let tol = ACTIVE * (1.0 + mu.iter().fold(0.0f64, |m, &x| m.max(x)));
        // The active planes' unit normals, each once (up to sign).
        let mut active: Vec<Vec<f64>> = Vec::new();
        let mut add = |normal: Vec<f64>| {
            let len = norm(&normal);
            if len == 0.0 || active.len() == MAX_ACTIVE {
                return;
            }
            let unit: Vec<f64> = normal.iter().map(|x| x / len).collect();
            let parallel = |a: &Vec<f64>| {
                let dot: f64 = a.iter().zip(&unit).map(|(x, y)| x * y).sum();
                dot.abs() > 1.0 - 1e-12
            };
            if !active.iter().any(parallel) {
                active.push(unit);
            }
        };
        for c in 0..self.count.len() {
            let (from, to) = (self.start[c], self.start[c + 1]);
            if from == to {
                continue;
            }
            let rc = |q: usize| self.value[q] - price[self.gpu[q]] * self.units[q];
            let (best, top, _) = self.top_two(from..to, &price);
            for r in from..to {
                if !self.same_units(best, r) && top - rc(r) <= tol {
                    add(self.tie_normal(best, r));
                }
            }
        }
        for t in 0..k {
            if mu[t] <= tol {
                let mut normal = vec![0.0; k];
                normal[t] = 1.0;
                add(normal);
            }
        }
        // Every K - 1 of them (in lexicographic order): the unit direction orthogonal to all,
        // the coordinate vector with the longest part left after projecting them out.
        let m = active.len();
        if m + 1 < k {
            return out;
        }
        let mut pick: Vec<usize> = (0..k - 1).collect();
        loop {
            let basis = orthonormal(pick.iter().map(|&i| active[i].as_slice()));
            if basis.len() == k - 1 {
                let along = (0..k)
                    .map(|e| {
                        let mut v = vec![0.0; k];
                        v[e] = 1.0;
                        project_out(&mut v, &basis);
                        v
                    })
                    .max_by(|a, b| norm(a).total_cmp(&norm(b)));
                let len = along.as_deref().map_or(0.0, norm);
                if let Some(v) = along
                    && len > 0.0
                {
                    let d: Vec<f64> = v.iter().map(|x| x / len).collect();
                    out.push(d.iter().map(|x| -x).collect());
                    out.push(d);
                }
            }
            // The next K - 1 of the m, or the end.
            let Some(i) = (0..k - 1).rev().find(|&i| pick[i] < m - (k - 1 - i)) else {
                return out;
            };
            pick[i] += 1;
            for j in i + 1..k - 1 {
                pick[j] = pick[j - 1] + 1;
            }
        }
    }
}

impl Flat {
    /// The choice of largest reduced cost among `choices` (one class's, not empty) at `price`
    /// (the idle pseudo-type's 0 last; the first of equals), its reduced cost, and the largest
    /// reduced cost of the others (-inf for a class of one choice).
    fn top_two(&self, choices: std::ops::Range<usize>, price: &[f64]) -> (usize, f64, f64) {
        let rc = |q: usize| self.value[q] - price[self.gpu[q]] * self.units[q];
        let (mut best, mut top, mut second) = (choices.start, rc(choices.start), f64::NEG_INFINITY);
        for q in choices.start + 1..choices.end {
            let x = rc(q);
            if x > top {
                (best, top, second) = (q, x, top);
            } else if x > second {
                second = x;
            }
        }
        (best, top, second)
    }

    /// The normal of the plane where choices q and r tie (rc_q = rc_r, linear in mu):
    /// u_q e_(type of q) - u_r e_(type of r), idle contributing nothing.
    fn tie_normal(&self, q: usize, r: usize) -> Vec<f64> {
        let mut normal = vec![0.0; self.k];
        if self.gpu[q] < self.k {
            normal[self.gpu[q]] += self.units[q];
        }
        if self.gpu[r] < self.k {
            normal[self.gpu[r]] -= self.units[r];
        }
        normal
    }
}

/// How far mu + t d may go along `d` and stay in [0, cap]: the largest such t (infinite for
/// d = 0).
fn reach(mu: &[f64], d: &[f64], cap: &[f64]) -> f64 {
    let mut hi = f64::INFINITY;
    for (t, &dt) in d.iter().enumerate() {
        if dt > 0.0 {
            hi = hi.min((cap[t] - mu[t]) / dt);
        } else if dt < 0.0 {
            hi = hi.min(mu[t] / -dt);
        }
    }
    hi
}

/// The Euclidean length of `v`.
fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// `v` less its projections on the orthonormal `basis`.
fn project_out(v: &mut [f64], basis: &[Vec<f64>]) {
    for b in basis {
        let dot: f64 = v.iter().zip(b).map(|(x, y)| x * y).sum();
        v.iter_mut().zip(b).for_each(|(x, y)| *x -= dot * y);
    }
}

/// One step of Gram-Schmidt: adds `row`'s part independent of the orthonormal `basis`, as a
/// unit vector, unless it is shorter than [`INDEPENDENT`] of `row`'s length; returns whether
/// it did.
fn extend_basis(basis: &mut Vec<Vec<f64>>, row: &[f64]) -> bool {
    let mut v = row.to_vec();
    project_out(&mut v, basis);
    let len = norm(&v);
    let added = len > INDEPENDENT * norm(row);
    if added {
        basis.push(v.iter().map(|x| x / len).collect());
    }
    added
}

/// An orthonormal basis of the span of `rows` (Gram-Schmidt), skipping a row whose part
/// independent of those before is shorter than [`INDEPENDENT`] of its length.
fn orthonormal<'a>(rows: impl Iterator<Item = &'a [f64]>) -> Vec<Vec<f64>> {
    let mut basis: Vec<Vec<f64>> = Vec::new();
    for row in rows {
        extend_basis(&mut basis, row);
    }
    basis
}

/// How near a plane must pass to mu to be active for [`Flat::edges`], relative to 1 + the
/// largest price: the descent's settle points are vertices computed to rounding.
const ACTIVE: f64 = 1e-9;

/// Most active planes [`Flat::edges`] takes (C(8, 2) = 28 pairs with three types).
const MAX_ACTIVE: usize = 8;

/// A normal whose part independent of the normals taken is shorter than this, relative to
/// its length, is taken as dependent on them ([`Flat::vertex`]).
const INDEPENDENT: f64 = 1e-9;

/// Most types [`Flat::vertex`] solves for (its normals are short vectors of K entries; beyond,
/// the descent's directions are coordinates and pairs only, and no vertex is tried).
const MAX_VERTEX_TYPES: usize = ALL_DIRECTIONS_UP_TO;

/// The line search's buffers, kept across its calls ([`Flat::crossing`]).
#[derive(Default)]
struct Scratch {
    /// Every choice's line (a, b) = (rc at the search's start, d . u).
    lines: Vec<(f64, f64)>,
    /// The breakpoints found, as (t, the slope's increase there).
    found: Vec<(f64, f64)>,
    /// The classes whose envelopes may go on: their last breakpoint found as (t, class), and
    /// their line after it (a, b).
    frontier: Vec<(f64, usize)>,
    current: Vec<(f64, f64)>,
}

impl Flat {
    /// The line search's step: the least t at which the slope of L along `dir`, `-need` at
    /// t = 0, turns >= 0, or `hi` if it does not before. The classes' envelopes are walked in
    /// sweeps, each only as far as the step the breakpoints found so far give (a weighted
    /// selection over them, `first_crossing`): the first sweep takes each class's first
    /// breakpoint; the next walks on, past that step, only the classes whose last breakpoint
    /// found lies before it. The step can only move earlier as breakpoints are added, so the
    /// third sweep finds nothing before it and the step is final: every breakpoint before it
    /// has been found, and those after it do not change it. A class whose first breakpoint
    /// lies beyond the step costs one pass over its lines. O(S + B |Q_c|) for S choices and B
    /// breakpoints walked, plus two selections, O(B) expected.
    ///
    /// Why: walking every envelope to `hi` before the selection would, on a search from mu = 0,
    /// walk them far past the step (100 to 200 breakpoints on 86 classes at 1,000 jobs). The step
    /// is the same number (`crossing_matches_sorting_every_breakpoint`): along a direction of
    /// integers every increase is an integer and every sum exact. (A binary heap over the classes'
    /// next breakpoints, least first, was tried too: as fast at 1,000 jobs, 12-27% slower on the
    /// synthetic rounds of 10,000 and 100,000 jobs, one class a job, where a search from 0
    /// passes most breakpoints; docs/performance.md.)
    fn crossing(
        &self,
        price: &[f64],
        dir: &[f64],
        ties: &Ties,
        hi: f64,
        need: f64,
        scratch: &mut Scratch,
    ) -> f64 {
        let Scratch {
            lines,
            current,
            found,
            frontier,
            ..
        } = scratch;
        lines.clear();
        lines.extend((0..self.value.len()).map(|q| {
            (
                self.value[q] - price[self.gpu[q]] * self.units[q],
                dir[self.gpu[q]] * self.units[q],
            )
        }));
        current.clear();
        found.clear();
        // Class c's next breakpoint after its line (a, b), before `hi`, as (t, the line after
        // it): the line of smaller slope that crosses it first (ties to the smaller slope).
        let next = |c: usize, (a_cur, b_cur): (f64, f64)| -> Option<(f64, f64, f64)> {
            let mut best: Option<(f64, f64, f64)> = None;
            for &(a, b) in &lines[self.start[c]..self.start[c + 1]] {
                if b < b_cur {
                    let t = ((a_cur - a) / (b_cur - b)).max(0.0);
                    if best.is_none_or(|(tn, _, bn)| t < tn || (t == tn && b < bn)) {
                        best = Some((t, a, b));
                    }
                }
            }
            best.filter(|&(t, _, _)| t < hi)
        };
        frontier.clear();
        // The first sweep: each class's maximizer at t = 0 (its tie of least d . u) and its
        // first breakpoint.
        for c in 0..self.count.len() {
            let tied = &ties.choices[ties.start[c]..ties.start[c + 1]];
            let (Some(&first), Some(b)) = (tied.first(), self.least(c, dir, ties)) else {
                continue;
            };
            let line = (lines[first].0, b);
            if let Some((t, a, nb)) = next(c, line) {
                found.push((t, self.count[c] * (b - nb)));
                current.push((a, nb));
                frontier.push((t, c));
            }
        }
        loop {
            // The order of `found` is free: the selection only permutes it.
            let limit = first_crossing(found, need).unwrap_or(hi);
            // Whether this sweep found a breakpoint before the limit (which may then move).
            let mut more = false;
            let mut i = 0;
            while i < frontier.len() {
                let (t, c) = frontier[i];
                if t > limit {
                    i += 1;
                    continue;
                }
                // Walk this class on, past the limit.
                let mut line = current[i];
                let mut last = t;
                let mut ended = true;
                while let Some((tn, a, b)) = next(c, line) {
                    found.push((tn, self.count[c] * (line.1 - b)));
                    line = (a, b);
                    last = tn;
                    if tn <= limit {
                        more = true;
                    } else {
                        ended = false;
                        break;
                    }
                }
                if ended {
                    frontier.swap_remove(i);
                    current.swap_remove(i);
                } else {
                    frontier[i] = (last, c);
                    current[i] = line;
                    i += 1;
                }
            }
            if !more {
                return limit;
            }
        }
    }
}

/// [`Flat::ties`]: class c's maximizing choices are `choices[start[c]..start[c + 1]]`.
#[derive(Default)]
struct Ties {
    start: Vec<usize>,
    choices: Vec<usize>,
    /// Per type, the units of the classes whose maximizing choices share one units vector.
    used: Vec<f64>,
    /// The other classes (maximizing choices on two units vectors or more).
    split: Vec<usize>,
}

/// Entropic smoothing of L, the start of the descent of [`smooth_multipliers`].
impl Flat {
    /// L_tau(mu) = sum_k mu_k C_k + sum_c n_c tau ln sum_(q in Q_c) exp(rc_q / tau), a smooth
    /// convex function with L <= L_tau <= L + tau sum_c n_c ln |Q_c| (each class's soft
    /// maximum is within tau ln |Q_c| of its maximum). Writes its gradient and Hessian (K x K,
    /// row-major): d/dmu_a = C_a - sum_c n_c E_p[x_a], and the Hessian is
    /// sum_c n_c Cov_p(x) / tau, where p is class c's softmax of rc / tau and x_a(q) = u_q when q
    /// is on type a, else 0. O(total choices + classes * K^2).
    fn smoothed(&self, mu: &[f64], tau: f64, grad: &mut [f64], hess: &mut [f64]) -> (f64, f64) {
        let k = self.k;
        let mut price = mu.to_vec();
        price.push(0.0);
        let mut value: f64 = mu.iter().zip(&self.capacity).map(|(m, c)| m * c).sum();
        grad.copy_from_slice(&self.capacity);
        hess.fill(0.0);
        let mut loss = 0.0;
        // Per class: the sums of p u and p u^2 per type (the idle pseudo-type K last, unused).
        let mut first = vec![0.0; k + 1];
        let mut second = vec![0.0; k + 1];
        for c in 0..self.count.len() {
            let range = self.start[c]..self.start[c + 1];
            if range.is_empty() {
                continue;
            }
            let rc = |q: usize| self.value[q] - price[self.gpu[q]] * self.units[q];
            let top = range.clone().map(rc).fold(f64::NEG_INFINITY, f64::max);
            first.fill(0.0);
            second.fill(0.0);
            let mut sum = 0.0;
            let mut below = 0.0;
            for q in range {
                let x = (rc(q) - top) / tau;
                // exp(x) is exactly 0 below EXP_UNDERFLOW, where libm takes a slow path (a fifth
                // of the smoothing's time on a 10,000-job round): skipping it changes no bit.
                if x < EXP_UNDERFLOW {
                    continue;
                }
                let w = x.exp();
                sum += w;
                below += w * (top - rc(q));
                first[self.gpu[q]] += w * self.units[q];
                second[self.gpu[q]] += w * self.units[q] * self.units[q];
            }
            let n = self.count[c];
            value += n * (top + tau * sum.ln());
            loss += n * below / sum;
            for a in 0..k {
                let ea = first[a] / sum;
                grad[a] -= n * ea;
                hess[a * k + a] += n * (second[a] / sum) / tau;
                for b in 0..k {
                    hess[a * k + b] -= n * ea * (first[b] / sum) / tau;
                }
            }
        }
        (value, loss)
    }

    /// Approximately minimizes L_tau over 0 <= mu <= cap for a decreasing sequence of tau
    /// (a homotopy: each level starts at the last one's minimizer), by projected Newton steps
    /// with backtracking (a steepest descent step where the Newton step does not descend);
    /// returns the last mu. Coordinates at a bound whose gradient pushes
    /// them out are held there. The levels go from tau = [`FIRST_TAU`] times the largest
    /// |value| down by 10 until the fractional solution of the softmax (class c split over its
    /// choices by p) shows L within [`SMOOTH_GAP`] of the LP's value: L(mu) - V(y) =
    /// sum_c n_c (max rc - E_p rc) + mu . grad, an exact duality gap when y fits (grad >= 0),
    /// counted here with |grad|; or until tau sum_c n_c ln |Q_c| is below [`SMOOTH_EXCESS`] |L|
    /// (L_tau then exceeds L by less); or once a level lowers L_tau by at most
    /// [`SMOOTH_LEVEL_GAIN`] relative: on degenerate LPs (a class split between tied choices)
    /// the softmax's solution never shows the gap closed, and the last levels, down to tau =
    /// 1e-11 of the largest value, moved L_tau by less than 1e-6. Each level costs
    /// at most [`NEWTON_STEPS`] steps of at most [`BACKTRACKS`] evaluations; 100 to 250
    /// evaluations in all were measured.
    fn smooth_start(&self, cap: &[f64]) -> Vec<f64> {
        let k = self.k;
        let mut mu = vec![0.0; k];
        if k == 0 {
            return mu;
        }
        let spread: f64 = (0..self.count.len())
            .map(|c| self.count[c] * ((self.start[c + 1] - self.start[c]).max(1) as f64).ln())
            .sum();
        let scale = self
            .value
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()))
            .max(f64::MIN_POSITIVE);
        let mut grad = vec![0.0; k];
        let mut hess = vec![0.0; k * k];
        let mut trial_grad = vec![0.0; k];
        let mut trial_hess = vec![0.0; k * k];
        let mut tau = scale * FIRST_TAU;
        let mut previous = f64::INFINITY;
        for _level in 0..SMOOTH_LEVELS {
            let (mut value, mut loss) = self.smoothed(&mu, tau, &mut grad, &mut hess);
            for _step in 0..NEWTON_STEPS {
                // The free coordinates: not held at a bound by the gradient.
                let free: Vec<usize> = (0..k)
                    .filter(|&a| {
                        !(mu[a] <= 0.0 && grad[a] > 0.0 || mu[a] >= cap[a] && grad[a] < 0.0)
                    })
                    .collect();
                if free.is_empty() {
                    break;
                }
                // A trust region of TRUST tau per coordinate: where no class is near a tie
                // L_tau is almost linear, its Hessian almost 0, and the Newton step absurdly
                // long; the path of minimizers moves by O(tau) per level. Returns the step and
                // its predicted decrease (for the Newton step, the Newton decrement).
                let trusted = |step: Vec<f64>| {
                    let longest = step.iter().fold(0.0f64, |m, d| m.max(d.abs()));
                    let shrink = (TRUST * tau / longest).min(1.0);
                    let step: Vec<f64> = step.iter().map(|d| d * shrink).collect();
                    let predicted: f64 = free.iter().zip(&step).map(|(&a, d)| -grad[a] * d).sum();
                    (step, predicted)
                };
                // There the rounded Hessian can also be indefinite, and the Newton step go
                // uphill (a random case stopped at L = 3.70 where the LP's value is 1.45): the
                // steepest descent step replaces it then.
                let (step, predicted) = match newton_step(&free, k, &grad, &hess).map(&trusted) {
                    Some((step, predicted)) if predicted > 0.0 => (step, predicted),
                    _ => trusted(free.iter().map(|&a| -grad[a]).collect()),
                };
                // Below noise the level is done. (Written to also stop on a NaN prediction.)
                if predicted.is_nan() || predicted <= SMOOTH_SETTLED * tau {
                    break;
                }
                let mut t = 1.0;
                let mut moved = false;
                for _ in 0..BACKTRACKS {
                    let mut trial = mu.clone();
                    for (&a, d) in free.iter().zip(&step) {
                        trial[a] = (mu[a] + t * d).clamp(0.0, cap[a]);
                    }
                    let change: f64 = (0..k).map(|a| grad[a] * (trial[a] - mu[a])).sum();
                    let (now, now_loss) =
                        self.smoothed(&trial, tau, &mut trial_grad, &mut trial_hess);
                    if now <= value + ARMIJO * change.min(0.0) && now < value {
                        mu = trial;
                        value = now;
                        loss = now_loss;
                        std::mem::swap(&mut grad, &mut trial_grad);
                        std::mem::swap(&mut hess, &mut trial_hess);
                        moved = true;
                        break;
                    }
                    t /= 2.0;
                }
                if !moved {
                    break;
                }
            }
            let est = loss + (0..k).map(|a| mu[a] * grad[a].abs()).sum::<f64>();
            if est <= SMOOTH_GAP * value.abs().max(1.0)
                || tau * spread <= SMOOTH_EXCESS * value.abs().max(1.0)
                || previous - value <= SMOOTH_LEVEL_GAIN * value.abs().max(1.0)
            {
                break;
            }
            previous = value;
            tau /= 10.0;
        }
        mu
    }
}

/// Below this, `f64::exp` returns +0 (the smallest subnormal is exp(-744.44)).
const EXP_UNDERFLOW: f64 = -745.2;

/// The Newton step on the coordinates `free`: solves H_FF d = -g_F by Gaussian elimination with
/// partial pivoting, the diagonal raised by a relative ridge so that a singular H (a direction
/// along which L_tau is linear) still gives a step; `None` if even that fails. O(|F|^3).
fn newton_step(free: &[usize], k: usize, grad: &[f64], hess: &[f64]) -> Option<Vec<f64>> {
    let m = free.len();
    let trace: f64 = free.iter().map(|&a| hess[a * k + a].abs()).sum();
    let ridge = RIDGE * (trace / m as f64).max(f64::MIN_POSITIVE);
    // The augmented matrix [H_FF + ridge I | -g_F], row-major.
    let mut a = vec![0.0; m * (m + 1)];
    for (i, &fi) in free.iter().enumerate() {
        for (j, &fj) in free.iter().enumerate() {
            a[i * (m + 1) + j] = hess[fi * k + fj] + if i == j { ridge } else { 0.0 };
        }
        a[i * (m + 1) + m] = -grad[fi];
    }
    let step = gauss_jordan(&mut a, m, f64::MIN_POSITIVE)?;
    step.iter().all(|x| x.is_finite()).then_some(step)
}

/// Solves the n x n system whose augmented matrix [A | b] (row-major, n + 1 columns) is `a`,
/// by Gauss-Jordan elimination with partial pivoting; `None` when a pivot is at most
/// `singular` in absolute value. O(n^3); `a` is overwritten.
fn gauss_jordan(a: &mut [f64], n: usize, singular: f64) -> Option<Vec<f64>> {
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| {
            a[x * (n + 1) + col]
                .abs()
                .total_cmp(&a[y * (n + 1) + col].abs())
        })?;
        if a[pivot * (n + 1) + col].abs() <= singular {
            return None;
        }
        for j in 0..=n {
            a.swap(col * (n + 1) + j, pivot * (n + 1) + j);
        }
        for row in 0..n {
            if row != col {
                let f = a[row * (n + 1) + col] / a[col * (n + 1) + col];
                for j in col..=n {
                    a[row * (n + 1) + j] -= f * a[col * (n + 1) + j];
                }
            }
        }
    }
    Some(
        (0..n)
            .map(|i| a[i * (n + 1) + n] / a[i * (n + 1) + i])
            .collect(),
    )
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

/// The cap of every price: PRICE_CAP_FACTOR A K R^(K-1) + 1, with A = 2 max |v_q| / min u_q
/// and R the largest ratio of units between two choices (at least 1). The argument that some
/// minimizer of L lies below it when the LP has a feasible point: take an optimal primal y. A type whose
/// capacity y leaves slack has mu_k = 0 at every dual optimum (complementary slackness); the
/// others are used by some class at a choice that maximizes rc at mu, so mu_k <= v / u <= A / 2
/// when that class may idle, and mu_k <= (v - v' + mu_k' u') / u <= A + R mu_k' for any other
/// choice q' of a forced class, on a type k' whose price is bounded in turn; along a chain
/// over at most K types, mu_k <= A (1 + R + ... + R^(K-1)) <= A K R^(K-1) (where such
/// inequalities form a cycle, L is flat along the direction that raises the cycle's prices
/// together, and lowering them keeps the minimum). The unit tests check that L reaches the
/// LP's value (HiGHS) on 500 random problems, forced jobs included. (A cap of twice the largest
/// value per unit of the type plus 1 holds for optional jobs only: a forced job whose other
/// choice takes 8 times the units holds the minimum beyond it, and L above the LP's value, on
/// random instances of the unit tests.)
fn price_cap(classes: &[Class], k: usize) -> f64 {
    let placed = || {
        classes
            .iter()
            .flat_map(|cl| cl.choices.iter())
            .filter(|c| c.gpu.is_some() && c.units > 0)
    };
    let least = placed().map(|c| c.units).min().unwrap_or(1).max(1) as f64;
    let most = placed().map(|c| c.units).max().unwrap_or(1).max(1) as f64;
    let value = placed().map(|c| c.value.abs()).fold(0.0, f64::max);
    let a = 2.0 * value / least;
    let ratio = most / least;
    PRICE_CAP_FACTOR * a * k as f64 * ratio.powi(k.saturating_sub(1) as i32) + 1.0
}

/// The price caps and the descent directions of [`multipliers`] and [`smooth_multipliers`].
struct Descent {
    flat: Flat,
    /// The box 0 <= mu_k <= cap_k the descent searches; some minimizer of L lies inside it when
    /// the LP has a feasible point (see [`price_cap`]); when it has none, L falls without bound
    /// along some direction and mu stops at the cap.
    cap: Vec<f64>,
    dirs: Vec<Vec<f64>>,
    /// Whether a settled pass is followed by line searches along the edges through mu
    /// ([`refine_multipliers`]).
    edges: bool,
}

impl Descent {
    /// `(mu, value)` where L(mu)'s rounding cannot reach the DP's tolerance, else the
    /// multipliers 0 and L(0), whose terms are the values themselves and do not cancel. Where
    /// one job's values are 10^200 times another's, the descent's prices are as large as the
    /// first and L(mu) = mu . C + sum (v - mu u) loses the small values to cancellation (a
    /// bound of -3.7e224 on a round whose optimum is 1, which the DP then took as exact:
    /// `fast_dp_keeps_forced_jobs_beside_a_weight_of_1e240`). Any mu >= 0 bounds the
    /// optimum (Lemma 1), so 0 is always exact, only weaker.
    fn trusted(&self, mu: Vec<f64>, value: f64) -> (Vec<f64>, f64) {
        let terms = (mu.len() + self.flat.count.len() + 3) as f64;
        let error = ROUNDING_PER_TERM * terms * self.flat.magnitude(&mu);
        if error <= TOLERANCE * value.abs().max(1.0) {
            return (mu, value);
        }
        let zero = vec![0.0; mu.len()];
        let value = self.flat.lagrangian(&zero);
        (zero, value)
    }

    fn new(classes: &[Class], capacity: &[u64]) -> Descent {
        let k = capacity.len();
        let cap = vec![price_cap(classes, k); k];
        // Every direction in {-1, 0, 1}^K for up to 5 types (at a kink of L some descent
        // direction moves several prices at once); coordinates and pairs beyond that.
        let mut dirs: Vec<Vec<f64>> = Vec::new();
        if k <= ALL_DIRECTIONS_UP_TO {
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
        Descent {
            flat: Flat::new(classes, capacity),
            cap,
            dirs,
            edges: false,
        }
    }

    /// Passes of line searches from `mu` until one lowers L by at most [`SETTLED`] relative;
    /// returns L at the final mu.
    fn descend(&self, mu: &mut [f64]) -> f64 {
        let mut scratch = Scratch::default();
        let mut value = self.flat.lagrangian(mu);
        let mut price = mu.to_vec();
        price.push(0.0);
        let mut ties = Ties::default();
        self.flat.ties(&price, &mut ties);
        // mu to `at`, and its maximizing choices with it: back to where a step began, or on
        // to a vertex taken.
        let go_to = |mu: &mut [f64], at: &[f64], ties: &mut Ties| {
            mu.copy_from_slice(at);
            let mut price = at.to_vec();
            price.push(0.0);
            self.flat.ties(&price, ties);
        };
        let mut before = mu.to_vec();
        // The last pass's gain: a pass that gains more than ZIGZAG times it shows the passes
        // converging linearly.
        let mut last_gain = f64::INFINITY;
        for _pass in 0..MAX_PASSES {
            before.copy_from_slice(mu);
            for d in &self.dirs {
                self.flat
                    .line_search(mu, d, &self.cap, &mut ties, &mut scratch);
            }
            let mut now = self.flat.lagrangian(mu);
            if !now.is_finite() {
                // Prices at their caps can overflow L (an LP without a feasible point, where L
                // falls without bound, on values near f64::MAX): keep the last finite point.
                go_to(mu, &before, &mut ties);
                break;
            }
            let gain = value - now;
            let mut settled = gain <= SETTLED * now.abs().max(1.0);
            let zigzag = last_gain > 0.0 && gain > ZIGZAG * last_gain;
            last_gain = gain;
            // Where the fixed directions stop, at a kink of L that need not be its minimum,
            // or zigzag towards one (their gains shrinking by a steady factor, `ZIGZAG`), two
            // steps can cross it (with one type the fixed directions are every direction):
            // - the vertex of L's nearest pieces (`Flat::vertex`, one pass over the choices),
            //   tried first where the passes settled, and taken if it lowers L by more than
            //   JUMP_GAIN relative (less is no help to the DP's gaps, and would cost the
            //   pass that follows a taken step);
            // - else the steepest direction (from the least subgradient), which descends from
            //   any kink that is not a minimum, and after it (where it moved, or where the
            //   passes zigzag) the vertex from there, taken if it lowers L.
            // A step that does not lower L by more than SETTLED (rounding, or a direction that
            // only descends up to a kink a rounding error away) is undone, so that mu is the
            // fixed directions' then.
            if (settled || zigzag) && self.flat.k >= 2 {
                let mut jumped = false;
                if settled && let Some(v) = self.flat.vertex(mu, &self.cap) {
                    let l = self.flat.lagrangian(&v);
                    if lowers(l, now, JUMP_GAIN) {
                        go_to(mu, &v, &mut ties);
                        (now, settled, jumped) = (l, false, true);
                    }
                }
                if !jumped && settled && self.edges {
                    before.copy_from_slice(mu);
                    for d in self.flat.edges(mu) {
                        self.flat
                            .line_search(mu, &d, &self.cap, &mut ties, &mut scratch);
                    }
                    let l = self.flat.lagrangian(mu);
                    if lowers(l, now, SETTLED) {
                        (now, settled, jumped) = (l, false, true);
                    } else {
                        go_to(mu, &before, &mut ties);
                    }
                }
                let mut stepped = false;
                if !jumped {
                    before.copy_from_slice(mu);
                    if let Some(d) = self.flat.steepest(mu, &ties)
                        && self
                            .flat
                            .line_search(mu, &d, &self.cap, &mut ties, &mut scratch)
                    {
                        let after = self.flat.lagrangian(mu);
                        if lowers(after, now, SETTLED) {
                            (now, settled, stepped) = (after, false, true);
                        } else {
                            go_to(mu, &before, &mut ties);
                        }
                    }
                }
                if (zigzag || stepped)
                    && let Some(v) = self.flat.vertex(mu, &self.cap)
                {
                    let l = self.flat.lagrangian(&v);
                    if lowers(l, now, SETTLED) {
                        go_to(mu, &v, &mut ties);
                        (now, settled) = (l, false);
                    }
                }
            }
            value = now;
            if settled {
                break;
            }
        }
        value
    }
}

/// Multipliers refined from `start`: the descent of [`multipliers`] from there, where each
/// settled pass is followed by line searches along the edges of L's pieces through mu
/// (`Flat::edges`); returns mu and L(mu). What the DP tries before the smoothing (docs/solver.md
/// step 5, "When to smooth"): where the descent stopped at a vertex that is not the minimum,
/// an edge from it descends, and the refined mu is a vertex that `proven_minimum` can prove.
/// Measured on 138 Gavel-derived rounds: the smoothing is made on
/// four (`instances/hard/round6-` and `round62-gavel-100x3-1000`, 10,000-job seeds 35 and 39);
/// the refined mu is proven on three of them, at the LP's value (HiGHS, 1e-9 relative, on
/// the two hard rounds: `refinement_reaches_the_lp_value_on_the_hard_rounds`; on seed 39
/// 7e-10 below the smoothing's L), and the DP's states are the same; the smoothing's 1-2.5 ms
/// are saved.
/// Not in every descent: from mu = 0 on `gavel-100x3-1000` the edges reach a lower L
/// (499.741291 against 499.743124) where more classes tie, and the DP made 52,749 states
/// instead of 4,006. Any mu >= 0 bounds the optimum (Lemma 1).
/// O(passes * (D + C(MAX_ACTIVE, K - 1)) * (S + B |Q_c|)).
pub(super) fn refine_multipliers(
    classes: &[Class],
    capacity: &[u64],
    start: &[f64],
) -> (Vec<f64>, f64) {
    let mut descent = Descent::new(classes, capacity);
    descent.edges = true;
    let mut mu: Vec<f64> = start.iter().map(|m| m.max(0.0)).collect();
    let value = descent.descend(&mut mu);
    descent.trusted(mu, value)
}

/// Whether `l` is below `now` by more than `by` relative to max(1, |now|).
fn lowers(l: f64, now: f64, by: f64) -> bool {
    l < now - by * now.abs().max(1.0)
}

/// Multipliers minimizing L(mu) (the LP relaxation's dual): line searches along every direction
/// of {-1, 0, 1}^K (up to [`ALL_DIRECTIONS_UP_TO`] types; beyond, the coordinate directions and
/// e_a + e_b, e_a - e_b for every pair of types), repeated until no pass improves L by more than
/// [`SETTLED`] relative. Coordinate descent alone can stop at a ridge of the piecewise-linear L;
/// the combined directions walk along such ridges, but even they can converge to a point that
/// is not the minimum (their gains shrinking geometrically: a kink where no direction of the
/// set descends). There the vertex of the nearest pieces (`Flat::vertex`) and the steepest
/// direction (`Flat::steepest`) take over; where even they fall short, [`smooth_multipliers`]
/// repairs it at a higher cost.
/// Returns mu and L(mu). O(passes * D * (S + B |Q_c|)) for D directions (module doc).
pub(super) fn multipliers(classes: &[Class], capacity: &[u64]) -> (Vec<f64>, f64) {
    let descent = Descent::new(classes, capacity);
    let mut mu = vec![0.0; capacity.len()];
    let value = descent.descend(&mut mu);
    descent.trusted(mu, value)
}

/// L's rounding error per term it sums, relative to the terms' magnitude: a sum of n terms,
/// each a product and a difference, errs by at most about (n + 3) 2^-53 of the magnitude
/// (Higham, *Accuracy and Stability of Numerical Algorithms*, section 4.2); twice that, 2^-52
/// a term, is taken.
const ROUNDING_PER_TERM: f64 = f64::EPSILON;

/// [`multipliers`] with a warm start: the descent from 0 and from `start` (the multipliers of
/// a similar problem, the last round's; negative entries taken as 0), the lower L kept, and
/// the cold one unless the warm one is lower by more than `rel_tol` times |L| (at least 1),
/// so that a warm start that does not help leaves the solve exactly as a cold one. Twice the
/// descent's cost at most (the one from `start` settles in fewer passes when it is near a
/// minimizer).
///
/// Why both and not the warm one alone: on 100 rounds of gavel-100x3-1000, starting only from
/// the last round's multipliers made the DP's runs 34% larger (503,347 states against
/// 375,932; they can sit where many classes tie, docs/solver.md step 2), keeping the better of
/// the two 22% smaller (294,070).
pub(super) fn warm_multipliers(
    classes: &[Class],
    capacity: &[u64],
    start: &[f64],
    rel_tol: f64,
) -> (Vec<f64>, f64) {
    let descent = Descent::new(classes, capacity);
    let mut mu = vec![0.0; capacity.len()];
    let value = descent.descend(&mut mu);
    let mut warm: Vec<f64> = start.iter().map(|m| m.max(0.0)).collect();
    let warm_value = descent.descend(&mut warm);
    if warm_value < value - rel_tol * value.abs().max(1.0) {
        descent.trusted(warm, warm_value)
    } else {
        descent.trusted(mu, value)
    }
}

/// Multipliers by entropic smoothing, then the line searches of [`multipliers`] from there: the
/// minimizers of the smooth L_tau (see `Flat::smoothed`) for tau falling by 10 per level, found
/// by projected Newton steps, converge to a minimizer of L, where the fixed directions of the
/// descent can stop short of it. Measured (docs/solver.md step 2): on `round4-gavel-36x3-300`
/// the descent stops at L = 166.7187 where the LP's value (HiGHS) is 166.3622, on
/// `instances/hard/round6-gavel-100x3-1000` at 488.3889 against 488.0696 (the optimum itself);
/// the smoothing reaches both to 1e-9. It costs 100 to 250 evaluations of L_tau, each
/// O(total choices + classes K^2), about 1 to 2 ms on Gavel rounds of 1,000 and 10,000 jobs:
/// the DP calls it only once its runs get expensive.
/// Reference: Yu. Nesterov, "Smooth minimization of non-smooth functions", Mathematical
/// Programming 103 (2005) 127-152 (the entropy smoothing of a maximum and its error bound).
pub(super) fn smooth_multipliers(classes: &[Class], capacity: &[u64]) -> (Vec<f64>, f64) {
    let descent = Descent::new(classes, capacity);
    let mut mu = descent.flat.smooth_start(&descent.cap);
    let value = descent.descend(&mut mu);
    descent.trusted(mu, value)
}

/// Whether `mu` is proven to minimize L up to `slack`: some fractional solution y of the LP
/// puts each class only on choices whose reduced cost at mu is within `slack / 2n` of the
/// class's best (n the jobs), fills every type priced above 0 (to within `slack / (2 K max
/// mu)` units) and no type over its capacity. Then L(mu) - V(y) = sum_c n_c (max rc - E_y rc) +
/// mu . (C - usage(y)) <= slack, and V(y) is at most the LP's value, the least L: no
/// multipliers (the smoothing's included) give a bound lower by more than `slack`.
///
/// y is looked for among the classes whose near-best choices use two different units vectors
/// (at most [`CERTIFY_VARIABLES`] of them, with one slack per type priced 0): each is a share
/// in [0, 1], and the K capacity rows are solved at every vertex of that box system, the
/// shares outside a basis at 0 or 1 (sum_(s <= K) C(m, s) 2^(m - s) systems of at most K x K).
/// Classes of near-best choices on three units vectors or more, or more such classes than the
/// cap, answer `false`, as does a system without a solution in the box: `false` proves
/// nothing, the smoothing then runs as before. A heuristic's input only: exactness never
/// depends on it (any mu >= 0 bounds the optimum, Lemma 1).
///
/// Why: on the 10,000-job Gavel rounds the descent's mu is already optimal and the smoothing
/// (2.5 ms of a 15-27 ms solve) lowers L by nothing; there 4-6 classes tie, on two units vectors
/// each (two of them to rounding only: exact ties miss them, as the descent's least
/// subgradient does).
/// Complexity: O(total choices + 3^m K^3) for m <= [`CERTIFY_VARIABLES`] moving shares.
pub(super) fn proven_minimum(classes: &[Class], capacity: &[u64], mu: &[f64], slack: f64) -> bool {
    let k = capacity.len();
    let jobs: usize = classes.iter().map(|c| c.jobs.len()).sum();
    if k == 0 || jobs == 0 || mu.len() != k || slack.is_nan() || slack < 0.0 {
        return false;
    }
    // Half the slack for the near-best choices, half for the rows' rounding (below).
    let near = 0.5 * slack / jobs as f64;
    // The capacity rows' right-hand side less what the classes of one units vector use, and
    // the moving shares' columns with their upper bounds.
    let mut rhs: Vec<f64> = capacity.iter().map(|&c| c as f64).collect();
    let mut columns: Vec<(Vec<f64>, f64)> = Vec::new();
    for cl in classes {
        let n = cl.jobs.len() as f64;
        let best = cl
            .choices
            .iter()
            .map(|c| rc(c, mu))
            .fold(f64::NEG_INFINITY, f64::max);
        if cl.jobs.is_empty() || !best.is_finite() {
            continue;
        }
        // The near-best choices' units vectors as (type, units); idle and 0 units alike.
        let mut vectors: Vec<(usize, u64)> = Vec::with_capacity(2);
        for c in &cl.choices {
            if rc(c, mu) >= best - near {
                let v = match c.gpu {
                    Some(t) if c.units > 0 => (t, c.units),
                    _ => (k, 0),
                };
                if !vectors.contains(&v) {
                    vectors.push(v);
                }
            }
        }
        let use_of = |v: (usize, u64)| {
            let mut u = vec![0.0; k];
            if v.0 < k {
                u[v.0] = n * v.1 as f64;
            }
            u
        };
        match vectors[..] {
            [a] => {
                for (r, x) in rhs.iter_mut().zip(use_of(a)) {
                    *r -= x;
                }
            }
            [a, b] => {
                let (ua, ub) = (use_of(a), use_of(b));
                for (r, x) in rhs.iter_mut().zip(&ua) {
                    *r -= x;
                }
                columns.push((ub.iter().zip(&ua).map(|(y, x)| y - x).collect(), 1.0));
            }
            _ => return false,
        }
        if columns.len() > CERTIFY_VARIABLES {
            return false;
        }
    }
    for t in 0..k {
        if mu[t] <= 0.0 {
            let mut e = vec![0.0; k];
            e[t] = 1.0;
            columns.push((e, capacity[t] as f64));
        }
    }
    if columns.len() > CERTIFY_VARIABLES {
        return false;
    }
    // A row met to within `tol` adds at most mu_t tol to L - V(y): K of them, half the slack.
    let dearest = mu.iter().fold(0.0f64, |m, &x| m.max(x));
    let tol = if dearest > 0.0 {
        0.5 * slack / (k as f64 * dearest)
    } else {
        1e-9 * capacity.iter().fold(1.0f64, |m, &c| m.max(c as f64))
    };
    box_solution(&columns, &rhs, tol)
}

/// Most moving shares [`proven_minimum`] looks at (3^7 = 2,187 small systems at most, about
/// 0.3 ms; the 10,000-job Gavel rounds have 4-6).
const CERTIFY_VARIABLES: usize = 7;

/// Whether sum_i y_i a_i = b has a solution with 0 <= y_i <= upper_i (within `tol` in b and a
/// relative 1e-9 in y): a vertex of the box system if any, so every choice of at most rank-many
/// basic shares with the others at a bound is tried, the basic ones by least squares.
fn box_solution(columns: &[(Vec<f64>, f64)], b: &[f64], tol: f64) -> bool {
    let k = b.len();
    let m = columns.len();
    let fits = |y: &[f64]| {
        (0..k).all(|t| {
            let lhs: f64 = columns.iter().zip(y).map(|((a, _), y)| a[t] * y).sum();
            (lhs - b[t]).abs() <= tol
        })
    };
    // Each share's state: 0 at its lower bound, 1 at its upper, 2 basic (3^m in all).
    let mut state = vec![0u8; m];
    loop {
        let basic: Vec<usize> = (0..m).filter(|&i| state[i] == 2).collect();
        if basic.len() <= k {
            let mut y: Vec<f64> = (0..m)
                .map(|i| if state[i] == 1 { columns[i].1 } else { 0.0 })
                .collect();
            let rest: Vec<f64> = (0..k)
                .map(|t| {
                    b[t] - columns
                        .iter()
                        .zip(&y)
                        .map(|((a, _), y)| a[t] * y)
                        .sum::<f64>()
                })
                .collect();
            if let Some(x) = least_squares(columns, &basic, &rest) {
                let inside = basic.iter().zip(&x).all(|(&i, &v)| {
                    let up = columns[i].1;
                    v >= -1e-9 * up.max(1.0) && v <= up * (1.0 + 1e-9) + 1e-9
                });
                if inside {
                    for (&i, &v) in basic.iter().zip(&x) {
                        y[i] = v.clamp(0.0, columns[i].1);
                    }
                    if fits(&y) {
                        return true;
                    }
                }
            }
        }
        // The next state vector, as a number in base 3.
        let mut i = 0;
        loop {
            if i == m {
                return false;
            }
            state[i] += 1;
            if state[i] < 3 {
                break;
            }
            state[i] = 0;
            i += 1;
        }
    }
}

/// The least-squares shares of the columns `basic` for `rest` (normal equations, Gaussian
/// elimination with partial pivoting); `Some(empty)` for no column, `None` when singular.
fn least_squares(columns: &[(Vec<f64>, f64)], basic: &[usize], rest: &[f64]) -> Option<Vec<f64>> {
    let s = basic.len();
    let mut a = vec![0.0; s * (s + 1)];
    for (r, &i) in basic.iter().enumerate() {
        for (c, &j) in basic.iter().enumerate() {
            a[r * (s + 1) + c] = columns[i]
                .0
                .iter()
                .zip(&columns[j].0)
                .map(|(x, y)| x * y)
                .sum();
        }
        a[r * (s + 1) + s] = columns[i].0.iter().zip(rest).map(|(x, y)| x * y).sum();
    }
    let largest = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    gauss_jordan(&mut a, s, 1e-12 * largest)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::solvers::dp::classes::{Choice, classes};
    use crate::solvers::dp::testing::{self, at_least, optimum};

    /// Hand-worked: capacities 4 and 16; a forced job on 4 units of type 0 (value 1); a forced
    /// job on 1 unit of type 0 (value 0.25) or 8 of type 1 (value 1); two optional jobs on 6
    /// units of type 1 and one on 4 (value 1 each). At mu = (0.5, 5/32) the second forced job
    /// ties (rc -0.25 both ways) and the optional ones run, so the subgradients are
    /// g = (-l, -8 (1 - l)) for l in [0, 1], the share of that job on type 0. The shortest is at
    /// l = 64/65: g* = -(64, 8) / 65, and the steepest direction is (64, 8) / 65, along which L
    /// falls.
    #[test]
    fn steepest_direction_by_hand() {
        let choice = |gpu: Option<usize>, units: u64, value: f64| Choice {
            gpu,
            units,
            value,
            slot: 0,
        };
        let idle = choice(None, 0, 0.0);
        let class = |choices: Vec<Choice>, forced: bool, jobs: Vec<usize>| Class {
            choices,
            forced,
            jobs,
        };
        let classes = vec![
            class(vec![choice(Some(0), 4, 1.0)], true, vec![0]),
            class(
                vec![choice(Some(0), 1, 0.25), choice(Some(1), 8, 1.0)],
                true,
                vec![1],
            ),
            class(vec![choice(Some(1), 6, 1.0), idle], false, vec![2, 3]),
            class(vec![choice(Some(1), 4, 1.0), idle], false, vec![4]),
        ];
        let flat = Flat::new(&classes, &[4, 16]);
        let mu = [0.5, 5.0 / 32.0];
        let mut ties = Ties::default();
        flat.ties(&[0.5, 5.0 / 32.0, 0.0], &mut ties);
        assert_eq!(&ties.choices[ties.start[1]..ties.start[2]], &[1, 2]);
        let d = flat.steepest(&mu, &ties).unwrap();
        let want = [64.0 / 65.0, 8.0 / 65.0];
        let err = ((d[0] - want[0]).powi(2) + (d[1] - want[1]).powi(2)).sqrt();
        assert!(err <= 0.03, "direction {d:?}, want {want:?}");
        let at = |t: f64| flat.lagrangian(&[mu[0] + t * d[0], mu[1] + t * d[1]]);
        assert!(at(1e-3) < at(0.0), "L {} then {}", at(0.0), at(1e-3));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Lemma 1: L(mu) bounds the optimum for every mu >= 0, in particular at the
        /// multipliers found, which are >= 0, are where the returned L was evaluated, and do
        /// not lose to mu = 0 or to the random prices.
        #[test]
        fn lagrangian_bound_is_at_least_the_optimum(
            problem in testing::small_problem(),
            prices in proptest::collection::vec(0.0f64..3.0, 4),
        ) {
            let classes = classes(&problem);
            let (mu, l) = multipliers(&classes, &problem.capacity);
            let flat = Flat::new(&classes, &problem.capacity);
            prop_assert!(mu.iter().all(|&m| m >= 0.0), "mu {:?}", mu);
            prop_assert_eq!(flat.lagrangian(&mu), l);
            let zero = vec![0.0; mu.len()];
            prop_assert!(at_least(flat.lagrangian(&zero), l));
            let other = &prices[..mu.len()];
            if let Some(opt) = optimum(&problem)? {
                prop_assert!(at_least(l, opt), "L {} below the optimum {}", l, opt);
                let lo = flat.lagrangian(other);
                prop_assert!(at_least(lo, opt), "L({:?}) = {} below {}", other, lo, opt);
            }
        }
    }

    /// Prices for the tests of the line search, four of them (one per type at most): halves
    /// from 0 to 2, where choices of the small problems tie, or any in [0, 3).
    fn tie_prices() -> impl Strategy<Value = Vec<f64>> {
        proptest::collection::vec(
            prop_oneof![(0u8..5).prop_map(|i| f64::from(i) / 2.0), 0.0f64..3.0],
            4,
        )
    }

    /// The descent of `classes`, the prices (the first K of `prices`, then the idle
    /// pseudo-type's 0) and the maximizing choices there.
    fn descent_at(
        classes: &[Class],
        capacity: &[u64],
        prices: &[f64],
    ) -> (Descent, Vec<f64>, Ties) {
        let descent = Descent::new(classes, capacity);
        let mut price = prices[..capacity.len()].to_vec();
        price.push(0.0);
        let mut ties = Ties::default();
        descent.flat.ties(&price, &mut ties);
        (descent, price, ties)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// The line search's slope check reads each class's maximizing choices from `ties`:
        /// for every direction of the descent, the least d . u over them is what `maximizer`
        /// gives, at prices where choices tie (0 and halves) as at any, and so is the rc its
        /// envelope walk starts from; the slope summed over `Ties::used` is the slope summed
        /// class by class.
        #[test]
        fn ties_give_what_maximizer_gives(
            problem in testing::small_problem(),
            prices in tie_prices(),
        ) {
            let classes = classes(&problem);
            let (descent, price, ties) = descent_at(&classes, &problem.capacity, &prices);
            let flat = &descent.flat;
            for d in &descent.dirs {
                let mut dir = d.clone();
                dir.push(0.0);
                for c in 0..flat.count.len() {
                    let from_ties = ties.choices[ties.start[c]..ties.start[c + 1]]
                        .iter()
                        .map(|&q| dir[flat.gpu[q]] * flat.units[q])
                        .reduce(f64::min);
                    let direct = flat.maximizer(c, &price, &dir);
                    prop_assert_eq!(from_ties, direct.map(|(_, b)| b));
                    prop_assert_eq!(flat.least(c, &dir, &ties), from_ties);
                    // The line search's start on the envelope: the first tie's rc is the
                    // maximizer's, to the bit.
                    if let Some(&q) = ties.choices[ties.start[c]..ties.start[c + 1]].first() {
                        let a = flat.value[q] - price[flat.gpu[q]] * flat.units[q];
                        prop_assert_eq!(Some(a.to_bits()), direct.map(|(a, _)| a.to_bits()));
                    }
                }
                // The slope from the classes of one units vector summed (`Ties::used`) is the
                // class-by-class sum exactly (0 and -0 alike: the line search only compares it
                // with 0 before it is negative).
                let (fast, by_class) = (flat.slope(&dir, &ties), flat.slope_by_class(&dir, &ties));
                prop_assert!(fast == by_class, "{} against {}", fast, by_class);
            }
        }
    }

    /// The LP relaxation's value by HiGHS (an independent path to min L), `None` when the
    /// LP has no feasible point.
    #[cfg(feature = "highs")]
    fn lp_value(problem: &crate::RoundProblem) -> Option<f64> {
        use highs::{ColProblem, HighsModelStatus, Sense};
        let mut pb = ColProblem::default();
        let capacity: Vec<_> = problem
            .capacity
            .iter()
            .map(|&c| pb.add_row(..=c as f64))
            .collect();
        for job in &problem.jobs {
            let one = pb.add_row(if job.may_idle() { 0.0 } else { 1.0 }..=1.0);
            for o in &job.options {
                pb.add_column(
                    o.value,
                    0.0..=1.0,
                    [(one, 1.0), (capacity[o.gpu], o.units as f64)],
                );
            }
        }
        let mut model = pb.optimise(Sense::Maximise);
        model.make_quiet();
        let solved = model.solve();
        (solved.status() == HighsModelStatus::Optimal).then(|| solved.objective_value())
    }

    /// The descent of `multipliers` stops short of the minimum of L on a shipped round
    /// (166.7187 where the LP's value is 166.3622); the smoothing reaches the LP's value, by
    /// HiGHS, to 1e-9 relative.
    #[cfg(feature = "highs")]
    #[test]
    fn descent_and_smoothing_reach_the_lp_value_where_the_fixed_directions_stop_short() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/instances/round4-gavel-36x3-300.json"
        );
        let instance = crate::Instance::from_path(path).unwrap();
        let problem = crate::RoundProblem::new(&instance);
        let classes = classes(&problem);
        let lp = lp_value(&problem).unwrap();
        // The fixed directions alone stop 0.36 above the LP's value here (L = 166.7187);
        // the steepest direction takes the descent to it.
        let (_, descended) = multipliers(&classes, &problem.capacity);
        assert!(
            (descended - lp).abs() <= 1e-9 * lp,
            "descent {descended}, LP {lp}"
        );
        let (mu, smoothed) = smooth_multipliers(&classes, &problem.capacity);
        assert!(
            (smoothed - lp).abs() <= 1e-9 * lp,
            "smoothed {smoothed}, LP {lp}"
        );
        assert!(mu.iter().all(|&m| m >= 0.0));
    }

    /// `proven_minimum` on the shipped rounds: wherever it proves the descent's mu a minimizer,
    /// L there is the LP's value (HiGHS) to within the slack; it proves it on the shipped
    /// Gavel rounds named below (so the property is not vacuous there); and a mu moved off the
    /// minimizer is never proven.
    #[cfg(feature = "highs")]
    #[test]
    fn proven_minima_are_the_lp_value_on_the_shipped_rounds() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/instances");
        let mut proven = Vec::new();
        for name in [
            "gavel-100x3-1000",
            "gavel-250x3-3000",
            "gavel-36x3-300",
            "gavel-8x3-40",
            "gavel-multi-36x3-300",
            "round4-gavel-36x3-300",
            "synth-3types-tight-1000",
            "synth-4types-multi-500",
        ] {
            let instance = crate::Instance::from_path(format!("{dir}/{name}.json")).unwrap();
            let problem = crate::RoundProblem::new(&instance);
            let classes = classes(&problem);
            let lp = lp_value(&problem).unwrap();
            let (mu, l) = multipliers(&classes, &problem.capacity);
            let slack = 1e-10 * l.abs().max(1.0);
            if proven_minimum(&classes, &problem.capacity, &mu, slack) {
                assert!(l <= lp + slack + 1e-12 * lp.abs(), "{name}: L {l}, LP {lp}");
                proven.push(name);
            }
            let moved: Vec<f64> = mu.iter().map(|m| m * 1.2 + 0.01).collect();
            let l_moved = Flat::new(&classes, &problem.capacity).lagrangian(&moved);
            assert!(l_moved > lp + 1e-6, "{name}: moved mu still minimal");
            assert!(
                !proven_minimum(&classes, &problem.capacity, &moved, slack),
                "{name}: a mu with L {l_moved} against LP {lp} proven minimal"
            );
        }
        eprintln!("proven: {proven:?}");
    }

    /// Box systems by hand: one share reaching the right-hand side inside its box, one that
    /// would need to leave it, two shares that reach it only together, and a slack.
    #[test]
    fn box_systems_by_hand() {
        let col = |a: &[f64], up: f64| (a.to_vec(), up);
        // 4 y = 2 with y in [0, 1]: y = 0.5.
        assert!(box_solution(&[col(&[4.0], 1.0)], &[2.0], 1e-9));
        // 4 y = 6: y = 1.5 is outside.
        assert!(!box_solution(&[col(&[4.0], 1.0)], &[6.0], 1e-9));
        // (1, 1) y1 + (1, -1) y2 = (1.5, 0.5): y1 = y2 = ... y1 + y2 = 1.5, y1 - y2 = 0.5 ->
        // y1 = 1, y2 = 0.5.
        assert!(box_solution(
            &[col(&[1.0, 1.0], 1.0), col(&[1.0, -1.0], 1.0)],
            &[1.5, 0.5],
            1e-9
        ));
        // The same rows need y1 = 1.5 for (2, 1): no.
        assert!(!box_solution(
            &[col(&[1.0, 1.0], 1.0), col(&[1.0, -1.0], 1.0)],
            &[2.0, 1.0],
            1e-9
        ));
        // A row no share touches must already hold.
        assert!(box_solution(&[col(&[3.0, 0.0], 1.0)], &[3.0, 0.0], 1e-9));
        assert!(!box_solution(&[col(&[3.0, 0.0], 1.0)], &[3.0, 1.0], 1e-9));
        // A slack of up to 5 on the second row covers 3 of room.
        assert!(box_solution(
            &[col(&[3.0, 0.0], 1.0), col(&[0.0, 1.0], 5.0)],
            &[3.0, 3.0],
            1e-9
        ));
        // No shares: the right-hand side must be 0.
        assert!(box_solution(&[], &[0.0, 0.0], 1e-9));
        assert!(!box_solution(&[], &[1.0, 0.0], 1e-9));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// Wherever `proven_minimum` proves the descent's mu (or a mu moved from it) a
        /// minimizer of L to within a slack, L there is within that slack of the LP's value
        /// (HiGHS), and the smoothing finds nothing lower by more.
        #[cfg(feature = "highs")]
        #[test]
        fn a_proven_minimum_is_the_lp_value(problem in testing::small_problem()) {
            let classes = classes(&problem);
            let flat = Flat::new(&classes, &problem.capacity);
            let (mu, l) = multipliers(&classes, &problem.capacity);
            let slack = 1e-9 * l.abs().max(1.0);
            let moved: Vec<f64> = mu.iter().map(|m| m * 1.5 + 0.05).collect();
            for at in [mu, moved] {
                if !proven_minimum(&classes, &problem.capacity, &at, slack) {
                    continue;
                }
                let l_at = flat.lagrangian(&at);
                let Some(lp) = lp_value(&problem) else { continue };
                prop_assert!(
                    l_at <= lp + slack + 1e-9 * lp.abs().max(1.0),
                    "proven at {:?}: L {} against LP {}", at, l_at, lp
                );
                let (_, smoothed) = smooth_multipliers(&classes, &problem.capacity);
                prop_assert!(smoothed >= l_at - slack - 1e-9 * l_at.abs().max(1.0));
            }
        }

        /// The smoothed multipliers give a valid bound (>= 0, at least the optimum) that is
        /// the LP relaxation's value (HiGHS) to 1e-7 relative when the LP has a feasible point.
        #[cfg(feature = "highs")]
        #[test]
        fn smoothed_multipliers_reach_the_lp_value(problem in testing::small_problem()) {
            let classes = classes(&problem);
            let (mu, l) = smooth_multipliers(&classes, &problem.capacity);
            prop_assert!(mu.iter().all(|&m| m >= 0.0), "mu {:?}", mu);
            prop_assert_eq!(Flat::new(&classes, &problem.capacity).lagrangian(&mu), l);
            if let Some(opt) = optimum(&problem)? {
                prop_assert!(at_least(l, opt), "L {} below the optimum {}", l, opt);
            }
            if let Some(lp) = lp_value(&problem) {
                prop_assert!((l - lp).abs() <= 1e-7 * lp.abs().max(1.0), "L {} LP {}", l, lp);
            }
        }
    }

    /// The line search's step by the old way, for `crossing`'s test: walk every class's whole
    /// envelope up to `hi`, sort all breakpoints and sum their slope increases until they
    /// reach `need`.
    fn crossing_by_sorting(
        flat: &Flat,
        price: &[f64],
        dir: &[f64],
        ties: &Ties,
        hi: f64,
        need: f64,
    ) -> f64 {
        let mut breaks: Vec<(f64, f64)> = Vec::new();
        for c in 0..flat.count.len() {
            let tied = &ties.choices[ties.start[c]..ties.start[c + 1]];
            let (Some(&first), Some(mut b_cur)) = (tied.first(), flat.least(c, dir, ties)) else {
                continue;
            };
            let line = |q: usize| {
                (
                    flat.value[q] - price[flat.gpu[q]] * flat.units[q],
                    dir[flat.gpu[q]] * flat.units[q],
                )
            };
            let mut a_cur = line(first).0;
            loop {
                let mut next: Option<(f64, f64, f64)> = None;
                for (a, b) in (flat.start[c]..flat.start[c + 1]).map(line) {
                    if b < b_cur {
                        let t = ((a_cur - a) / (b_cur - b)).max(0.0);
                        if next.is_none_or(|(tn, _, bn)| t < tn || (t == tn && b < bn)) {
                            next = Some((t, a, b));
                        }
                    }
                }
                match next {
                    Some((t, a, b)) if t < hi => {
                        breaks.push((t, flat.count[c] * (b_cur - b)));
                        (a_cur, b_cur) = (a, b);
                    }
                    _ => break,
                }
            }
        }
        breaks.sort_by(|x, y| x.0.total_cmp(&y.0));
        let mut sum = 0.0;
        breaks
            .iter()
            .find(|b| {
                sum += b.1;
                sum >= need
            })
            .map_or(hi, |b| b.0)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// The sweeps over the envelopes (`Flat::crossing`) find the step that walking them
        /// whole and sorting every breakpoint finds, for every descending direction of the
        /// descent, at prices where choices tie (0 and halves) as at any. (The slope and its
        /// increases are integers there: no sum is rounded.)
        #[test]
        fn crossing_matches_sorting_every_breakpoint(
            problem in testing::small_problem(),
            prices in tie_prices(),
        ) {
            let classes = classes(&problem);
            let (descent, price, ties) = descent_at(&classes, &problem.capacity, &prices);
            let flat = &descent.flat;
            let mu = &price[..problem.capacity.len()];
            let mut scratch = Scratch::default();
            for d in &descent.dirs {
                let mut dir = d.clone();
                dir.push(0.0);
                let slope = flat.slope(&dir, &ties);
                if slope >= 0.0 {
                    continue;
                }
                let hi = reach(mu, d, &descent.cap);
                let swept = flat.crossing(&price, &dir, &ties, hi, -slope, &mut scratch);
                let sorted = crossing_by_sorting(flat, &price, &dir, &ties, hi, -slope);
                prop_assert_eq!(swept, sorted, "direction {:?}", d);
            }
        }
    }

    /// The classes of `vertex_by_hand` and `edges_by_hand` on two types: a forced class tied
    /// on the plane mu_1 - mu_0 = -0.5 (1 unit of type 0 worth 3 or of type 1 worth 2.5), an
    /// optional one on mu_0 = 2 (1 unit of type 0 worth 2, or idle), and with `twin` a second
    /// forced class on the first plane (worth 3.1 or 2.6).
    fn two_planes(twin: bool) -> Vec<Class> {
        let choice = |gpu: Option<usize>, units: u64, value: f64| Choice {
            gpu,
            units,
            value,
            slot: 0,
        };
        let class = |choices: Vec<Choice>, forced: bool, job: usize| Class {
            choices,
            forced,
            jobs: vec![job],
        };
        let mut classes = vec![
            class(
                vec![choice(Some(0), 1, 3.0), choice(Some(1), 1, 2.5)],
                true,
                0,
            ),
            class(
                vec![choice(Some(0), 1, 2.0), choice(None, 0, 0.0)],
                false,
                1,
            ),
        ];
        if twin {
            classes.push(class(
                vec![choice(Some(0), 1, 3.1), choice(Some(1), 1, 2.6)],
                true,
                2,
            ));
        }
        classes
    }

    /// The vertex by hand, two types. A forced class takes 1 unit of type 0 (value 3) or of
    /// type 1 (value 2.5): the two tie on the plane mu_1 - mu_0 = -0.5. An optional class takes
    /// 1 unit of type 0 (value 2) or idles: it ties on mu_0 = 2. A second forced class ties on
    /// the same plane as the first (3.1 or 2.6), which is not independent of it. From (1.99,
    /// 1.48), nearest to those two planes, the vertex is (2, 1.5).
    #[test]
    fn vertex_by_hand() {
        let flat = Flat::new(&two_planes(true), &[10, 10]);
        let v = flat.vertex(&[1.99, 1.48], &[100.0, 100.0]).unwrap();
        assert!(
            (v[0] - 2.0).abs() <= 1e-12 && (v[1] - 1.5).abs() <= 1e-12,
            "vertex {v:?}"
        );
        // Outside the box: no candidate.
        assert!(flat.vertex(&[1.99, 1.48], &[1.9, 100.0]).is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// The weighted selection finds the same crossing as sorting and summing (integer
        /// weights and a half-integer need, so that no sum is rounded and none ties).
        #[test]
        fn first_crossing_matches_sorting(
            breaks in proptest::collection::vec((0u32..20, 0u32..5), 0..40),
            need in 0u32..60,
        ) {
            let need = f64::from(need) + 0.5;
            let mut breaks: Vec<(f64, f64)> =
                breaks.iter().map(|&(t, w)| (f64::from(t), f64::from(w))).collect();
            let mut sorted = breaks.clone();
            sorted.sort_by(|x, y| x.0.total_cmp(&y.0));
            let mut sum = 0.0;
            let expected = sorted.iter().find(|b| {
                sum += b.1;
                sum >= need
            });
            prop_assert_eq!(first_crossing(&mut breaks, need), expected.map(|b| b.0));
        }
    }

    /// The edges by hand, two types, at the vertex (2, 1.5) of `vertex_by_hand`'s classes:
    /// along the plane mu_1 - mu_0 = -0.5, directions +-(1, 1) / sqrt 2; along mu_0 = 2,
    /// +-(0, 1). Away from every plane, none.
    #[test]
    fn edges_by_hand() {
        let flat = Flat::new(&two_planes(false), &[10, 10]);
        let edges = flat.edges(&[2.0, 1.5]);
        let h = std::f64::consts::FRAC_1_SQRT_2;
        for want in [[h, h], [-h, -h], [0.0, 1.0], [0.0, -1.0]] {
            assert!(
                edges
                    .iter()
                    .any(|d| (d[0] - want[0]).abs() < 1e-12 && (d[1] - want[1]).abs() < 1e-12),
                "{want:?} not among {edges:?}"
            );
        }
        assert_eq!(edges.len(), 4, "{edges:?}");
        assert!(flat.edges(&[1.0, 3.0]).is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The refinement from the descent's multipliers never raises L (to rounding), keeps
        /// mu >= 0, and still bounds the optimum (Lemma 1).
        #[test]
        fn refined_multipliers_are_no_worse_and_bound_the_optimum(
            problem in testing::small_problem(),
        ) {
            let classes = classes(&problem);
            let (mu, l) = multipliers(&classes, &problem.capacity);
            let (refined, lr) = refine_multipliers(&classes, &problem.capacity, &mu);
            prop_assert!(refined.iter().all(|&m| m >= 0.0), "mu {:?}", refined);
            prop_assert_eq!(Flat::new(&classes, &problem.capacity).lagrangian(&refined), lr);
            // To rounding: a line search that moves mu recomputes L there.
            prop_assert!(at_least(l, lr), "refined L {} above the descent's {}", lr, l);
            if let Some(opt) = optimum(&problem)? {
                prop_assert!(at_least(lr, opt), "L {} below the optimum {}", lr, opt);
            }
        }
    }

    /// On the shipped hard rounds whose descent stops above the LP's value, the refinement
    /// from there reaches it (HiGHS, 1e-9 relative) and `proven_minimum` proves it.
    #[cfg(feature = "highs")]
    #[test]
    fn refinement_reaches_the_lp_value_on_the_hard_rounds() {
        for name in ["round6-gavel-100x3-1000", "round62-gavel-100x3-1000"] {
            let path = format!("{}/instances/hard/{name}.json", env!("CARGO_MANIFEST_DIR"));
            let instance = crate::Instance::from_path(path).unwrap();
            let problem = crate::RoundProblem::new(&instance);
            let classes = classes(&problem);
            let lp = lp_value(&problem).unwrap();
            let (mu, l) = multipliers(&classes, &problem.capacity);
            assert!(
                l > lp + 1e-3,
                "{name}: the descent reached the LP ({l} against {lp})"
            );
            let (refined, lr) = refine_multipliers(&classes, &problem.capacity, &mu);
            assert!(
                (lr - lp).abs() <= 1e-9 * lp,
                "{name}: refined {lr}, LP {lp}"
            );
            let slack = 1e-10 * lr.abs().max(1.0);
            assert!(
                proven_minimum(&classes, &problem.capacity, &refined, slack),
                "{name}: the refined mu is not proven"
            );
        }
    }
}
