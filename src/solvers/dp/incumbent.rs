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
///
/// With `displace_jobs` (the solver passes it for integral values, where an incumbent that
/// reaches the integer below L ends the solve) the greedy orders the optional classes by size
/// and a displacement pass follows ([`displace`]).
pub(super) fn incumbent(
    problem: &RoundProblem,
    classes: &[Class],
    mu: &[f64],
    displace_jobs: bool,
) -> Option<(f64, Vec<Assignment>)> {
    greedy(problem, classes, mu, displace_jobs).map(|pick| {
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
fn greedy(
    problem: &RoundProblem,
    classes: &[Class],
    mu: &[f64],
    displace_jobs: bool,
) -> Option<Vec<usize>> {
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
    // With `displace_jobs` (integral values: the relaxation's count problems, every option
    // worth 1) the optional classes go by their best value per unit, then fewest choices first:
    // at prices mu that tie across types the reduced costs order jobs of equal size arbitrarily,
    // and a class that fits only some types must not find them taken by one that fits all (on
    // the 10,000-job Gavel mix, 8-unit jobs free to go anywhere filled the two types where 43
    // others could go, and the greedy fell 22 jobs short).
    let density: Vec<f64> = if displace_jobs {
        classes
            .iter()
            .map(|cl| {
                cl.choices
                    .iter()
                    .filter(|c| c.gpu.is_some() && c.units > 0)
                    .map(|c| c.value / c.units as f64)
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect()
    } else {
        Vec::new()
    };
    let width = |i: usize| classes[i].choices.len();
    order.sort_by(|&a, &b| {
        let by_size = if displace_jobs {
            density[b]
                .total_cmp(&density[a])
                .then(width(a).cmp(&width(b)))
        } else {
            std::cmp::Ordering::Equal
        };
        key(a)
            .cmp(&key(b))
            .then(by_size)
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
    if displace_jobs {
        displace(classes, &mut free, &mut pick);
    }
    Some(pick)
}

/// Displacement pass: an idle job takes a more valuable choice on a type without room for it
/// when one placed job there can move to a choice on another type that has room, the two moves
/// together gaining value (a path of two moves, as in the augmenting paths of assignment
/// problems). One pass over the idle jobs, class by class; once a job of a class finds no such
/// move, its identical classmates are not tried (they would find none either: the moves only
/// fill room).
///
/// Why: on the relaxation's count problems (every option worth 1) an incumbent one job short
/// of the ceiling leaves the DP a proof it may not afford (docs/solver.md step 5, integral
/// values), and a job placed on a type that others also fit can stand where an idle job alone
/// fits. On the first count problem of the 10,000-job Gavel mix the pass alone added one job
/// (3,249 to 3,250 of 3,271); with the greedy's order by size it reaches the ceiling.
///
/// Complexity: O(I * w^3 * C) for I idle jobs, C classes of at most w choices; memory O(n).
fn displace(classes: &[Class], free: &mut [u64], pick: &mut [usize]) {
    // Per class and choice, the jobs placed on it (a choice on a GPU type).
    let mut holders: Vec<Vec<Vec<usize>>> = classes
        .iter()
        .map(|cl| vec![Vec::new(); cl.choices.len()])
        .collect();
    for (ci, cl) in classes.iter().enumerate() {
        for &j in &cl.jobs {
            if cl.choices[pick[j]].gpu.is_some() {
                holders[ci][pick[j]].push(j);
            }
        }
    }
    for (ci, cl) in classes.iter().enumerate() {
        for &j in &cl.jobs {
            let cur = cl.choices[pick[j]];
            if cur.gpu.is_some() {
                continue;
            }
            // The choice to take (index, type) and the move that makes room for it, if any
            // (class, from choice, to choice, to type).
            let moved = cl.choices.iter().enumerate().find_map(|(qc, c)| {
                let t = c.gpu?;
                if c.value <= cur.value {
                    return None;
                }
                if c.units <= free[t] {
                    return Some((qc, t, None));
                }
                let need = c.units - free[t];
                // A placed job of class di on choice qi (type t, at least `need` units) that can
                // move to choice q2 on another type with room, with a gain overall.
                classes.iter().enumerate().find_map(|(di, dl)| {
                    dl.choices.iter().enumerate().find_map(|(qi, on)| {
                        if on.gpu != Some(t) || on.units < need || holders[di][qi].is_empty() {
                            return None;
                        }
                        dl.choices.iter().enumerate().find_map(|(q2, to)| {
                            let t2 = to.gpu?;
                            let gain = c.value - cur.value + to.value - on.value;
                            (t2 != t && to.units <= free[t2] && gain > 0.0).then_some((
                                qc,
                                t,
                                Some((di, qi, q2, t2)),
                            ))
                        })
                    })
                })
            });
            let Some((qc, t, mover)) = moved else {
                // Its classmates left idle would find nothing either.
                break;
            };
            if let Some((di, qi, q2, t2)) = mover
                && let Some(i) = holders[di][qi].pop()
            {
                free[t] += classes[di].choices[qi].units;
                free[t2] -= classes[di].choices[q2].units;
                pick[i] = q2;
                holders[di][q2].push(i);
            }
            free[t] -= cl.choices[qc].units;
            pick[j] = qc;
            holders[ci][qc].push(j);
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::solvers::dp::bound::multipliers;
    use crate::solvers::dp::class_dp::probes;
    use crate::solvers::dp::classes::{Choice, classes};
    use crate::solvers::dp::fixing::fix;
    use crate::solvers::dp::limits::TOLERANCE;
    use crate::solvers::dp::testing::{self, at_least, check_feasible, optimum};

    /// Hand-worked: one type of 4 units holds a job that could also run on a second type of 2
    /// units; an idle job fits only the first type. The displacement moves the first job to the
    /// second type and places the idle one: two jobs instead of one.
    #[test]
    fn displacement_moves_a_job_to_make_room() {
        let choice = |gpu: Option<usize>, units: u64, value: f64| Choice {
            gpu,
            units,
            value,
            slot: units as u32,
        };
        let classes = vec![
            Class {
                choices: vec![
                    choice(Some(0), 4, 1.0),
                    choice(Some(1), 2, 1.0),
                    choice(None, 0, 0.0),
                ],
                forced: false,
                jobs: vec![0],
            },
            Class {
                choices: vec![choice(Some(0), 4, 1.0), choice(None, 0, 0.0)],
                forced: false,
                jobs: vec![1],
            },
        ];
        let mut free = vec![0, 2];
        let mut pick = vec![0, 1];
        displace(&classes, &mut free, &mut pick);
        assert_eq!(pick, vec![1, 0]);
        assert_eq!(free, vec![0, 0]);
        // Nothing to gain: a job whose only other choice has no room stays where it is.
        let mut free = vec![0, 1];
        let mut pick = vec![0, 1];
        displace(&classes, &mut free, &mut pick);
        assert_eq!(pick, vec![0, 1]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The greedy's solution is feasible, worth the value it reports and at most the
        /// optimum, with and without the displacement pass; so is the beam search's (run with
        /// no floor, as if the greedy had failed).
        #[test]
        fn incumbents_are_feasible_and_at_most_the_optimum(problem in testing::small_problem()) {
            let classes = classes(&problem);
            let (mu, l) = multipliers(&classes, &problem.capacity);
            let opt = optimum(&problem)?;
            // Both orders of the greedy, the second with the displacement pass.
            for displace_jobs in [false, true] {
                if let Some((value, assignment)) = incumbent(&problem, &classes, &mu, displace_jobs) {
                    let Some(opt) = opt else {
                        return Err(TestCaseError::fail("greedy solved an infeasible round"));
                    };
                    let checked = check_feasible(&problem, &assignment)?;
                    prop_assert!(crate::solution::objectives_agree(checked, value));
                    prop_assert!(at_least(opt, value), "greedy {} above the optimum {}", value, opt);
                }
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
