//! The directions the descent tries where its fixed ones stop: the steepest descent direction
//! from the least subgradient, the vertex of L's pieces nearest mu and the edges of L's pieces
//! through mu, with the Gram-Schmidt helpers they use.

use super::{Flat, Ties, gauss_jordan};
use crate::solvers::dp::limits::{
    ALL_DIRECTIONS_UP_TO, STEEPEST_GAP, STEEPEST_STEPS, VERTEX_PLANES,
};

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
    pub(super) fn steepest(&self, mu: &[f64], ties: &Ties) -> Option<Vec<f64>> {
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
    pub(super) fn vertex(&self, mu: &[f64], cap: &[f64]) -> Option<Vec<f64>> {
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
    pub(super) fn edges(&self, mu: &[f64]) -> Vec<Vec<f64>> {
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
