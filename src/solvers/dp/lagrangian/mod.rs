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
//!
//! Where each part lives:
//! - this file: [`Flat`] (the classes' choices as arrays), L(mu) and its maximizing choices
//!   ([`Ties`]), the [`Descent`] driver with the entry points the DP calls, and the
//!   Gauss-Jordan solver the submodules share;
//! - [`line_search`]: the exact line search along a direction and its walk over the breakpoints;
//! - [`directions`]: the steepest direction, the vertex of L's pieces and the edges through mu,
//!   with the Gram-Schmidt helpers they use;
//! - [`smoothing`]: the entropic smoothing L_tau and its projected Newton steps;
//! - [`certificate`]: [`proven_minimum`], whether mu provably minimizes L;
//! - `tests`: the unit tests.

mod certificate;
mod directions;
mod line_search;
mod smoothing;
#[cfg(test)]
mod tests;

use super::classes::Class;
use super::limits::{
    ALL_DIRECTIONS_UP_TO, JUMP_GAIN, MAX_PASSES, PRICE_CAP_FACTOR, SETTLED, TOLERANCE, ZIGZAG,
};
use line_search::Scratch;

pub(super) use certificate::proven_minimum;

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

    /// The terms L(mu) sums, in order: mu_k C_k for each type, then n_c max_q rc_q for each
    /// class with choices (the idle pseudo-type's price is 0).
    fn terms<'a>(&'a self, mu: &'a [f64]) -> impl Iterator<Item = f64> + 'a {
        let prices = mu.iter().zip(&self.capacity).map(|(m, c)| m * c);
        let classes = (0..self.count.len()).filter_map(move |c| {
            let best = (self.start[c]..self.start[c + 1])
                .map(|q| {
                    let price = mu.get(self.gpu[q]).copied().unwrap_or(0.0);
                    self.value[q] - price * self.units[q]
                })
                .fold(f64::NEG_INFINITY, f64::max);
            (best > f64::NEG_INFINITY).then(|| self.count[c] * best)
        });
        prices.chain(classes)
    }

    /// L(mu) = sum_k mu_k C_k + sum_c n_c max_q rc_q (Lemma 1 of docs/solver.md), its terms
    /// summed in order.
    fn lagrangian(&self, mu: &[f64]) -> f64 {
        self.terms(mu).sum()
    }

    /// L(mu) with Neumaier's compensated summation of the same terms (Higham, *Accuracy and
    /// Stability of Numerical Algorithms*, section 4.3): the sum then errs by about 2^-52 of L
    /// plus n 2^-104 of the terms' magnitude instead of n 2^-53, so the bound of a round of
    /// 10^5 classes can be trusted. O(S) like `lagrangian`.
    fn lagrangian_compensated(&self, mu: &[f64]) -> f64 {
        let (sum, compensation) = self.terms(mu).fold((0.0f64, 0.0f64), |(sum, comp), x| {
            let t = sum + x;
            let lost = if sum.abs() >= x.abs() {
                (sum - t) + x
            } else {
                (x - t) + sum
            };
            (t, comp + lost)
        });
        sum + compensation
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

/// The cap of every price: PRICE_CAP_FACTOR A K R^(K-1) + 1, with A = 2 max |v_q| / min u_q and R
/// the largest ratio of units between two choices (at least 1). The argument that some minimizer of
/// L lies below it when the LP has a feasible point: take an optimal primal y. A type whose
/// capacity y leaves slack has mu_k = 0 at every dual optimum (complementary slackness); the others
/// are used by some class at a choice that maximizes rc at mu, so mu_k <= v / u <= A / 2 when that
/// class may idle, and mu_k <= (v - v' + mu_k' u') / u <= A + R mu_k' for any other choice q' of a
/// forced class, on a type k' whose price is bounded in turn; along a chain over at most K types,
/// mu_k <= A (1 + R + ... + R^(K-1)) <= A K R^(K-1) (where such inequalities form a cycle, L is
/// flat along the direction that raises the cycle's prices together, and lowering them keeps the
/// minimum). The unit tests check that L reaches the LP's value (HiGHS) on 500 random problems,
/// forced jobs included. (A cap of twice the largest value per unit of the type plus 1 holds for
/// optional jobs only: a forced job whose other choice takes 8 times the units holds the minimum
/// beyond it, and L above the LP's value, on random instances of the unit tests.)
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
    /// The first of `candidates` (multipliers and their L, in order of preference) where L's
    /// rounding cannot reach the DP's tolerance, as summed or, failing that, summed again with
    /// compensation ([`Flat::lagrangian_compensated`], whose L is then returned), else the
    /// multipliers 0 and L(0), whose terms are the values themselves and do not cancel. Where
    /// one job's values are 10^200 times another's, the descent's prices are as large as the
    /// first and L(mu) = mu . C + sum (v - mu u) loses the small values to cancellation (a bound
    /// of -3.7e224 on a round whose optimum is 1, which the DP then took as exact:
    /// `fast_dp_keeps_forced_jobs_beside_a_weight_of_1e240`). Any mu >= 0 bounds the optimum
    /// (Lemma 1), so 0 is always exact, only weaker.
    fn trusted(&self, candidates: Vec<(Vec<f64>, f64)>) -> (Vec<f64>, f64) {
        let terms = (self.flat.k + self.flat.count.len() + 3) as f64;
        for (mu, value) in candidates {
            let magnitude = self.flat.magnitude(&mu);
            if ROUNDING_PER_TERM * terms * magnitude <= TOLERANCE * value.abs().max(1.0) {
                return (mu, value);
            }
            // Many classes: the plain sum's bound grows with their number, the compensated
            // sum's does not (a round of 10^5 classes otherwise falls back to L(0)).
            let precise = self.flat.lagrangian_compensated(&mu);
            let error =
                (COMPENSATED_ROUNDING + terms * ROUNDING_PER_TERM * ROUNDING_PER_TERM) * magnitude;
            if error <= TOLERANCE * precise.abs().max(1.0) {
                return (mu, precise);
            }
        }
        let zero = vec![0.0; self.flat.k];
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
    let from: Vec<f64> = start.iter().map(|m| m.max(0.0)).collect();
    let mut mu = from.clone();
    let value = descent.descend(&mut mu);
    // The edges can walk far along a direction where L is flat, to prices whose rounding is not
    // trusted: the start is then kept, so that the refinement never raises L.
    let at_start = descent.flat.lagrangian(&from);
    descent.trusted(vec![(mu, value), (from, at_start)])
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
    descent.trusted(vec![(mu, value)])
}

/// L's rounding error per term it sums, relative to the terms' magnitude: a sum of n terms,
/// each a product and a difference, errs by at most about (n + 3) 2^-53 of the magnitude
/// (Higham, *Accuracy and Stability of Numerical Algorithms*, section 4.2); twice that, 2^-52
/// a term, is taken.
const ROUNDING_PER_TERM: f64 = f64::EPSILON;

/// L's rounding error under compensated summation ([`Flat::lagrangian_compensated`]), relative
/// to the terms' magnitude, less its n 2^-104 part: each term's product and difference err by
/// about 3 2^-53 and the compensated sum by 2 2^-53; eight times 2^-52 is taken.
const COMPENSATED_ROUNDING: f64 = 8.0 * f64::EPSILON;

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
        descent.trusted(vec![(warm, warm_value), (mu, value)])
    } else {
        descent.trusted(vec![(mu, value)])
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
    descent.trusted(vec![(mu, value)])
}
