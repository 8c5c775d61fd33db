//! Step 4 of docs/solver.md: reduced-cost fixing for a target gap g.
//!
//! Why this file exists: by Lemma 2 of docs/solver.md a solution worth at least L(mu) - g uses
//! only choices whose reduced-cost gap delta = max rc - rc is at most g, so every other choice
//! can be removed before the DP. Classes left with one choice are fixed (their value and units
//! leave the DP); the others form the *core*, the only classes the class DP (class_dp.rs) lays
//! out. With the small gaps of gap deepening (step 5) the core is the few classes whose choices
//! are that close to a tie, which is what makes the DP fast. This file also maps a run's counts
//! back to an assignment.
//!
//! Complexity: O(sum_c |Q_c| log |Q_c| + C log C) time for C classes (sorting each class's kept
//! choices and the core), O(sum_c |Q_c|) memory.
//! Reference: reduced-cost fixing and core problems, Kellerer, Pferschy and Pisinger,
//! *Knapsack Problems*, Springer 2004, chapter 5 (core of the 0-1 knapsack problem) and
//! chapter 11 (MCKP); D. Pisinger, "A minimal algorithm for the multiple-choice knapsack
//! problem", EJOR 83 (1995) 394-410.

use super::classes::{Choice, Class, best_rc, rc};
use crate::solution::Assignment;

/// The problem left for the class DP after fixing at one gap.
pub(super) struct Fixed {
    /// Per class, the choices a solution worth >= L - gap may use, worst reduced cost first and
    /// a best choice last (the last choice takes the jobs left, so the earlier steps of the DP
    /// only count the few jobs the gap lets deviate).
    pub(super) kept: Vec<Vec<Choice>>,
    /// Value of the fixed classes (one kept choice each).
    pub(super) base: f64,
    /// Capacity per type left by the fixed classes (negative: they overflow it).
    pub(super) residual: Vec<i128>,
    /// The classes with two or more kept choices, in the [`CoreOrder`] of the fixing.
    pub(super) core: Vec<usize>,
}

/// The order of a fixing's core classes, the DP's layers (docs/solver.md step 6, "Core order").
/// Any order is exact (a run enumerates the same choices); only the states differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CoreOrder {
    /// Classes that may idle last, and before that rigid first (fewest kept choices, then
    /// fewest jobs): the states stay few until the last layers, where little room is left and
    /// the bound bites. A class whose kept choices include idle (an optional class tied, at mu,
    /// between running and not) can absorb whatever room the others leave: as a last layer its
    /// counts are pinned by that room, where as an earlier one each of its counts is a state
    /// that every later layer carries (on the 10,000-job Gavel round of
    /// seed 32 an optional class of 319 jobs, 2 units or idle, was layer 22 of 29 and its counts
    /// made 26,694 of the last run's 55,983 states; last, the solve makes 6,337 states in all
    /// instead of 123,419; docs/solver.md step 6, "Core order").
    Rigid,
    /// Fewest units first (a class's largest kept choice), then rigid first: for problems of
    /// integral values and problems with distributed jobs (d_j > 1). Where every choice is
    /// worth the same, the bound cannot tell states of equal value apart and a run keeps every
    /// load vector it reaches; and where a few classes take 8 to 32 units a job, placing them
    /// early spreads the loads that every later layer then multiplies. Small classes first
    /// keep the early layers' loads in a small range, where equal vectors merge, and leave the
    /// large jobs to the last layers, where the tables' bound sees whether the room left can
    /// still hold them. Units are compared across GPU types as they are (types of different
    /// units per GPU only make the order a coarser guess).
    Units,
}

impl CoreOrder {
    /// The other order, which a run that grows past its limit is raced by (docs/solver.md
    /// step 5, "The order race").
    pub(super) fn other(self) -> Self {
        match self {
            CoreOrder::Rigid => CoreOrder::Units,
            CoreOrder::Units => CoreOrder::Rigid,
        }
    }
}

/// Fixes the choices of `classes` at reduced-cost gap `gap` at prices `mu` (choices with
/// delta > gap + tol are removed; `tol` absorbs floating-point error) on a cluster of
/// `capacity` units per type, with the core in `order`.
pub(super) fn fix(
    classes: &[Class],
    capacity: &[u64],
    mu: &[f64],
    gap: f64,
    tol: f64,
    order: CoreOrder,
) -> Fixed {
    let mut kept: Vec<Vec<Choice>> = Vec::with_capacity(classes.len());
    for cl in classes {
        let b = best_rc(&cl.choices, mu);
        let mut cs: Vec<Choice> = cl
            .choices
            .iter()
            .copied()
            .filter(|c| b - rc(c, mu) <= gap + tol)
            .collect();
        cs.sort_by(|x, y| rc(x, mu).total_cmp(&rc(y, mu)));
        kept.push(cs);
    }
    let mut base = 0.0;
    let mut residual: Vec<i128> = capacity.iter().map(|&c| c as i128).collect();
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
    match order {
        CoreOrder::Rigid => {
            let may_idle = |c: usize| kept[c].iter().any(|h| h.gpu.is_none());
            core.sort_by_key(|&c| (may_idle(c), kept[c].len(), classes[c].jobs.len(), c));
        }
        CoreOrder::Units => {
            let largest = |c: usize| kept[c].iter().map(|h| h.units).max().unwrap_or(0);
            core.sort_by_cached_key(|&c| (largest(c), kept[c].len(), classes[c].jobs.len(), c));
        }
    }
    Fixed {
        kept,
        base,
        residual,
        core,
    }
}

/// The largest reduced-cost gap of any choice at `mu`: past it fixing keeps every choice, so
/// gap deepening need not go further.
pub(super) fn widest(classes: &[Class], mu: &[f64]) -> f64 {
    classes
        .iter()
        .map(|cl| {
            let b = best_rc(&cl.choices, mu);
            cl.choices.iter().map(|c| b - rc(c, mu)).fold(0.0, f64::max)
        })
        .fold(0.0, f64::max)
}

/// The smallest reduced-cost gap of a choice above `gap + tol` at `mu` (infinite if none): the
/// fixing keeps the same choices at every gap from `gap` up to just below it.
pub(super) fn next_gap(classes: &[Class], mu: &[f64], gap: f64, tol: f64) -> f64 {
    classes
        .iter()
        .flat_map(|cl| {
            let b = best_rc(&cl.choices, mu);
            cl.choices.iter().map(move |c| b - rc(c, mu))
        })
        .filter(|&d| d > gap + tol)
        .fold(f64::INFINITY, f64::min)
}

impl Fixed {
    /// The assignment of `jobs` jobs from a run's answer: fixed classes on their one choice,
    /// core classes' jobs on the kept choices in the `counts` of the run (per core class, per
    /// kept choice; a class's jobs in order).
    pub(super) fn assign(
        &self,
        classes: &[Class],
        jobs: usize,
        counts: &[Vec<u32>],
    ) -> Vec<Assignment> {
        let mut assignment: Vec<Assignment> = vec![None; jobs];
        for (c, cl) in classes.iter().enumerate() {
            if let [only] = self.kept[c].as_slice() {
                for &j in &cl.jobs {
                    assignment[j] = only.gpu.map(|t| (t, only.slot));
                }
            }
        }
        for (i, &c) in self.core.iter().enumerate() {
            let mut jobs = classes[c].jobs.iter();
            for (q, &cnt) in counts[i].iter().enumerate() {
                let ch = self.kept[c][q];
                for &j in jobs.by_ref().take(cnt as usize) {
                    assignment[j] = ch.gpu.map(|t| (t, ch.slot));
                }
            }
        }
        assignment
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::formulation::{JobClass, RoundProblem};
    use crate::solution::objectives_agree;
    use crate::solvers::dp::classes::classes;
    use crate::solvers::dp::lagrangian::multipliers;
    use crate::solvers::dp::limits::TOLERANCE;
    use crate::solvers::dp::testing::{self, optimum};

    /// `problem` with every job restricted to its class's kept choices (a job whose idle was
    /// removed becomes forced).
    fn restricted(problem: &RoundProblem, classes: &[Class], fixed: &Fixed) -> RoundProblem {
        let mut out = problem.clone();
        for (c, cl) in classes.iter().enumerate() {
            let kept = &fixed.kept[c];
            for &j in &cl.jobs {
                let job = &mut out.jobs[j];
                job.options.retain(|o| {
                    kept.iter().any(|k| {
                        k.gpu == Some(o.gpu)
                            && k.slot == o.slot
                            && k.units == o.units
                            && k.value.to_bits() == o.value.to_bits()
                    })
                });
                if !kept.iter().any(|k| k.gpu.is_none()) {
                    job.class = JobClass::Forced {
                        cannot_catch_up: false,
                    };
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// `next_gap` is where the fixing next changes: at every gap from `gap` to just below
        /// it the same choices are kept, and at it more are (unless it is infinite).
        #[test]
        fn next_gap_is_where_the_fixing_changes(
            problem in testing::small_problem(),
            gap in prop_oneof![Just(0.0), 0.0f64..2.0],
            at in 0.0f64..1.0,
        ) {
            let classes = classes(&problem);
            let (mu, l) = multipliers(&classes, &problem.capacity);
            let tol = TOLERANCE * l.abs().max(1.0);
            let next = next_gap(&classes, &mu, gap, tol);
            let kept = |g: f64| -> Vec<usize> {
                fix(&classes, &problem.capacity, &mu, g, tol, CoreOrder::Rigid).kept.iter().map(Vec::len).collect()
            };
            let here = kept(gap);
            if next.is_finite() {
                let inside = gap + (next - tol - gap) * at;
                if inside - tol < next - tol && inside >= gap {
                    prop_assert_eq!(&here, &kept(inside), "gap {} inside {} next {}", gap, inside, next);
                }
                let more = kept(next);
                prop_assert!(more.iter().sum::<usize>() > here.iter().sum::<usize>());
            } else {
                prop_assert_eq!(here, kept(f64::INFINITY));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The rigid order: every class that may idle (idle among its kept choices) after every
        /// one that may not, and within each part fewest kept choices, then fewest jobs, then
        /// class index (so the order, and the states, are deterministic).
        #[test]
        fn rigid_order_puts_the_classes_that_may_idle_last(
            problem in testing::small_problem(),
            gap in prop_oneof![Just(f64::INFINITY), 0.0f64..2.0],
        ) {
            let classes = classes(&problem);
            let (mu, l) = multipliers(&classes, &problem.capacity);
            let tol = TOLERANCE * l.abs().max(1.0);
            let fixed = fix(&classes, &problem.capacity, &mu, gap, tol, CoreOrder::Rigid);
            let key = |c: usize| {
                let may_idle = fixed.kept[c].iter().any(|h| h.gpu.is_none());
                (may_idle, fixed.kept[c].len(), classes[c].jobs.len(), c)
            };
            for pair in fixed.core.windows(2) {
                prop_assert!(key(pair[0]) < key(pair[1]), "{:?} before {:?}", key(pair[0]), key(pair[1]));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Lemma 2: fixing at any gap at least the optimum's gap to L keeps an optimal
        /// solution, so the fixed problem's optimum is the original's; the core is exactly the
        /// classes left with several choices, and the fixed classes' value and units are
        /// `base` and the capacity less `residual`.
        #[test]
        fn fixing_keeps_an_optimum(
            problem in testing::small_problem(),
            factor in prop_oneof![Just(1.0), 1.0f64..4.0],
        ) {
            let classes = classes(&problem);
            let (mu, l) = multipliers(&classes, &problem.capacity);
            let Some(opt) = optimum(&problem)? else {
                return Ok(());
            };
            let tol = TOLERANCE * l.abs().max(1.0);
            let gap = (l - opt).max(0.0) * factor;
            let fixed = fix(&classes, &problem.capacity, &mu, gap, tol, CoreOrder::Rigid);
            let fixed_opt = optimum(&restricted(&problem, &classes, &fixed))?;
            prop_assert_eq!(fixed_opt.is_some(), true, "fixing at gap {} lost every solution", gap);
            if let Some(f) = fixed_opt {
                prop_assert!(objectives_agree(opt, f), "optimum {} fixed {} (gap {})", opt, f, gap);
            }
            let mut base = 0.0;
            let mut residual: Vec<i128> = problem.capacity.iter().map(|&c| c as i128).collect();
            for (c, cl) in classes.iter().enumerate() {
                prop_assert!(!fixed.kept[c].is_empty());
                prop_assert_eq!(fixed.core.contains(&c), fixed.kept[c].len() > 1);
                if let [only] = fixed.kept[c].as_slice() {
                    base += only.value * cl.jobs.len() as f64;
                    if let Some(t) = only.gpu {
                        residual[t] -= i128::from(only.units) * cl.jobs.len() as i128;
                    }
                }
            }
            prop_assert_eq!(base, fixed.base);
            prop_assert_eq!(residual, fixed.residual.clone());
        }
    }
}
