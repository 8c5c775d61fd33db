//! The exact line search along a direction: the slope of L at mu from its maximizing choices,
//! and the step where that slope turns >= 0, found by walking the classes' envelopes only as
//! far as the breakpoints found so far put it.

use super::{Flat, Ties};

impl Flat {
    /// Class c's least d . u over its maximizing choices in `ties` (`dir` with the idle
    /// pseudo-type's 0 last): the d . u of the maximizer that stays maximal as t grows along
    /// d, what [`Flat::maximizer`] gives; `None` for a class without choices.
    pub(super) fn least(&self, c: usize, dir: &[f64], ties: &Ties) -> Option<f64> {
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
    pub(super) fn slope(&self, dir: &[f64], ties: &Ties) -> f64 {
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
    pub(super) fn slope_by_class(&self, dir: &[f64], ties: &Ties) -> f64 {
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
    pub(super) fn line_search(
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

/// How far mu + t d may go along `d` and stay in [0, cap]: the largest such t (infinite for
/// d = 0).
pub(super) fn reach(mu: &[f64], d: &[f64], cap: &[f64]) -> f64 {
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

/// The line search's buffers, kept across its calls ([`Flat::crossing`]).
#[derive(Default)]
pub(super) struct Scratch {
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
    pub(super) fn crossing(
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

/// The smallest t among `breaks` (t, slope increase) at which the increases up to t sum to at
/// least `need`, or `None` if they never do. Weighted selection (quickselect on t, keeping the
/// side where the running sum crosses): expected O(B) where sorting costs O(B log B), and the
/// line searches on 100,000 classes spend most of their time here.
pub(super) fn first_crossing(breaks: &mut [(f64, f64)], mut need: f64) -> Option<f64> {
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
