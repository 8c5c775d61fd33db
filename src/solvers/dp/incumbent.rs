//! Step 3 of docs/solver.md: a feasible solution before any DP run, and its improvement by a
//! beam search once the runs get expensive.
//!
//! Why this file exists: the incumbent's value is the floor of the last gap-deepening run (so
//! the runs never go below it) and its solution the answer when no run finds a better one.
//! Exactness never depends on it: any feasible solution, however poor, is a valid floor.
//! The greedy places forced classes first (fewest choices first), then the optional ones by
//! best reduced cost at mu, each job on its best-rc choice that still fits, then moves each job
//! to a more valuable choice that fits. The beam search is the class DP (class_dp.rs) keeping
//! only the [`BEAM`] sub-states of largest bound per step, over the choices within the
//! incumbent's gap of a tie.
//!
//! Complexity: greedy O(n log n + sum_j |Q_j| log |Q_j|) time, O(n + K) memory; the beam search
//! at most [`BEAM_STATES`] states (each O(P K) to bound), O(BEAM * K) memory per step plus its
//! back pointers.
//! Reference: greedy by reduced cost (the LP-rounding heuristic of Kellerer, Pferschy and
//! Pisinger, *Knapsack Problems*, Springer 2004, section 11.2); beam search over a DP's states
//! as a primal heuristic for the core problem (D. Pisinger, "A minimal algorithm for the
//! multiple-choice knapsack problem", EJOR 83, 1995, on the expanding core).

use super::class_dp::{ClassDp, Found};
use super::classes::{Class, best_rc, rc};
use super::fixing::Fixed;
use super::limits::{BEAM, BEAM_STATES, GREEDY_RC_SLACK};
use crate::formulation::RoundProblem;
use crate::solution::Assignment;

/// The greedy's solution as (value, assignment), or `None` if a forced job could not be placed.
pub(super) fn incumbent(
    problem: &RoundProblem,
    classes: &[Class],
    mu: &[f64],
) -> Option<(f64, Vec<Assignment>)> {
    greedy(problem, classes, mu).map(|pick| {
        let mut value = 0.0;
        let mut assignment: Vec<Assignment> = vec![None; problem.jobs.len()];
        for cl in classes {
            for &j in &cl.jobs {
                let c = cl.choices[pick[j]];
                value += c.value;
                assignment[j] = c.gpu.map(|t| (t, c.slot));
            }
        }
        (value, assignment)
    })
}

/// The least value any solution can have: the sum of each job's least valuable choice (or 0).
/// With L (Lemma 1 of docs/solver.md) below it, no solution exists.
pub(super) fn least_value(classes: &[Class]) -> f64 {
    classes
        .iter()
        .map(|cl| {
            cl.jobs.len() as f64
                * cl.choices
                    .iter()
                    .map(|c| c.value)
                    .fold(f64::INFINITY, f64::min)
                    .min(0.0)
        })
        .sum()
}

/// The beam search over the core of `fixed` (fixed at the incumbent's gap) with floor `floor`:
/// a solution (possibly better than the incumbent) and the states it created. At most `limit`
/// states (past them it gives up with `None`); `spent` is the states of the solve so far, for
/// its error message (which is dropped: the beam is only a heuristic).
pub(super) fn beam_search(
    classes: &[Class],
    fixed: &Fixed,
    probes: &[Vec<f64>],
    max_states: usize,
    limit: u64,
    spent: u64,
    floor: f64,
) -> (Option<Found>, u64) {
    let mut dp = ClassDp {
        classes,
        kept: &fixed.kept,
        probes,
        max_states,
        states: 0,
        limit: limit.min(BEAM_STATES),
        spent,
        beam: Some(BEAM),
        tables: 0,
        dropped: f64::NEG_INFINITY,
        prebuilt: None,
    };
    let found = dp
        .run(&fixed.core, &fixed.residual, fixed.base, floor)
        .ok()
        .flatten();
    (found, dp.states)
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
                if !cl.forced && rc(c, mu) < -GREEDY_RC_SLACK && c.gpu.is_some() {
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::solvers::dp::bound::multipliers;
    use crate::solvers::dp::class_dp::probes;
    use crate::solvers::dp::classes::classes;
    use crate::solvers::dp::fixing::fix;
    use crate::solvers::dp::limits::TOLERANCE;
    use crate::solvers::dp::testing::{self, at_least, check_feasible, optimum};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The greedy's solution is feasible, worth the value it reports and at most the
        /// optimum; so is the beam search's (run with no floor, as if the greedy had failed).
        #[test]
        fn incumbents_are_feasible_and_at_most_the_optimum(problem in testing::small_problem()) {
            let classes = classes(&problem);
            let (mu, l) = multipliers(&classes, &problem.capacity);
            let opt = optimum(&problem)?;
            if let Some((value, assignment)) = incumbent(&problem, &classes, &mu) {
                let Some(opt) = opt else {
                    return Err(TestCaseError::fail("greedy solved an infeasible round"));
                };
                let checked = check_feasible(&problem, &assignment)?;
                prop_assert!(crate::solution::objectives_agree(checked, value));
                prop_assert!(at_least(opt, value), "greedy {} above the optimum {}", value, opt);
            }
            let tol = TOLERANCE * l.abs().max(1.0);
            let fixed = fix(&classes, &problem.capacity, &mu, f64::INFINITY, tol);
            let probes = probes(&mu);
            let (found, states) =
                beam_search(&classes, &fixed, &probes, 1 << 20, u64::MAX, 0, f64::NEG_INFINITY);
            prop_assert!(states <= BEAM_STATES);
            if let Some((total, counts)) = found {
                let Some(opt) = opt else {
                    return Err(TestCaseError::fail("beam solved an infeasible round"));
                };
                let assignment = fixed.assign(&classes, problem.jobs.len(), &counts);
                let checked = check_feasible(&problem, &assignment)?;
                prop_assert!(crate::solution::objectives_agree(checked, total));
                prop_assert!(at_least(opt, total), "beam {} above the optimum {}", total, opt);
            }
        }
    }
}
