//! Step 2 of docs/solver.md: the Lagrangian bound L(mu) and the multipliers that minimize it.
//!
//! Why this file exists: every later phase prices the GPU types at mu. The reduced costs at mu
//! decide which choices the fixing keeps (step 4), the greedy's order (step 3) and the probes
//! of the state bound (step 6); L(mu) is the upper bound whose gap to a solution bounds how far
//! that solution's choices can be from a tie (Lemmas 1 and 2). For prices mu >= 0,
//! L(mu) = sum_k mu_k C_k + sum_c n_c max_(q in Q_c) rc(q) bounds every solution from above;
//! its minimum over mu is the LP relaxation's value. mu is found by exact line searches along
//! every direction of {-1, 0, 1}^K (K <= 5; coordinates and pairs beyond), each costing about
//! two evaluations of L: walk the upper envelope of each class's lines, then a weighted
//! selection of the breakpoints finds where the slope turns >= 0.
//!
//! Complexity: O(P * D * (E + B)) time for P passes (<= [`MAX_PASSES`], 3 to 4 measured),
//! D = 3^K - 1 directions, E envelope steps over all classes (<= sum_c |Q_c|^2) and B
//! breakpoints (expected linear, by quickselect); memory O(sum_c |Q_c| + B).
//! Reference: A. M. Geoffrion, "Lagrangean relaxation for integer programming", Mathematical
//! Programming Study 2 (1974) 82-114; for the multiple-choice knapsack's LP and its dual,
//! Kellerer, Pferschy and Pisinger, *Knapsack Problems*, Springer 2004, chapter 11.

use super::classes::Class;
use super::limits::{ALL_DIRECTIONS_UP_TO, MAX_PASSES, PRICE_CAP_FACTOR, SETTLED};

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

/// Multipliers minimizing L(mu) (the LP relaxation's dual): line searches along every direction
/// of {-1, 0, 1}^K (up to [`ALL_DIRECTIONS_UP_TO`] types; beyond, the coordinate directions and
/// e_a + e_b, e_a - e_b for every pair of types), repeated until no pass improves L by more than
/// [`SETTLED`] relative. Coordinate descent alone can stop at a ridge of the piecewise-linear L;
/// the combined directions walk along such ridges.
/// Returns mu and L(mu). O(passes * D * (envelope steps + breakpoints)) for D directions.
pub(super) fn multipliers(classes: &[Class], capacity: &[u64]) -> (Vec<f64>, f64) {
    let k = capacity.len();
    let mut mu = vec![0.0; k];
    // Beyond PRICE_CAP_FACTOR times the largest value per unit no optional job prefers a type;
    // forced jobs may still demand it, in which case the LP is infeasible and mu_k stays at
    // this cap.
    let cap: Vec<f64> = (0..k)
        .map(|t| {
            classes
                .iter()
                .flat_map(|cl| cl.choices.iter())
                .filter(|c| c.gpu == Some(t) && c.units > 0)
                .map(|c| c.value / c.units as f64)
                .fold(0.0, f64::max)
                * PRICE_CAP_FACTOR
                + 1.0
        })
        .collect();
    // Every direction in {-1, 0, 1}^K for up to 5 types (at a kink of L some descent direction
    // moves several prices at once); coordinates and pairs beyond that.
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
    let flat = Flat::new(classes, capacity);
    let mut breaks = Vec::new();
    let mut value = flat.lagrangian(&mu);
    for _pass in 0..MAX_PASSES {
        for d in &dirs {
            flat.line_search(&mut mu, d, &cap, &mut breaks);
        }
        let now = flat.lagrangian(&mu);
        let settled = value - now <= SETTLED * now.abs().max(1.0);
        value = now;
        if settled {
            break;
        }
    }
    (mu, value)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::solvers::dp::classes::classes;
    use crate::solvers::dp::testing::{self, at_least, optimum};

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
}
