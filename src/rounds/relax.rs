//! Relaxation: when the forced jobs of a round cannot all run at once, keep as many of them
//! forced as fit.
//!
//! Two solves after the infeasible one. First the *count problem*: only the forced jobs, each
//! with, per GPU type, its admissible option of fewest units, every option worth 1, every job
//! free to idle. Its optimum is the largest number k* of forced jobs that can run admissibly at
//! once: a smaller slot on the same type never makes a packing infeasible (slots of a
//! divisibility ladder pack at aligned offsets, and a smaller slot fits where a larger one was),
//! and the other jobs can always idle. All values are equal, so jobs with the same options form
//! one class for the DP and the problem is small. Among the forced jobs with identical options in
//! the count problem, which ones it keeps is free (they use the same units); the kept places go
//! to the most behind (largest m_j, ties in job order). Second, the round with exactly the other
//! forced jobs made optional is solved for the plan: the most efficient round that keeps those
//! k* jobs. A relaxed round costs three solver calls (the infeasible one, the count problem, the
//! final one), whatever the number of forced jobs; docs/rounds.md has the argument and the
//! measurements.

use std::collections::HashMap;

use super::{RoundError, RoundScheduler};
use crate::formulation::{JobClass, RoundOption, RoundProblem};
use crate::instance::Instance;
use crate::solution::{Solution, Status};

/// The outcome of a relaxation.
pub(super) struct Relaxation {
    /// Forced jobs whose forcing was dropped, by decreasing m_j, ties in job order.
    pub relaxed: Vec<usize>,
    /// The instance solved for the plan: the round with the relaxed jobs made optional.
    pub instance: Instance,
    /// The solver's optimum of `instance`.
    pub solution: Solution,
    /// Solver calls made here (2).
    pub solves: usize,
    /// How many of them a fallback solver answered (their solutions carry `fallback_from`).
    pub fallback_solves: usize,
    /// How many of them answered `feasible` (stopped by a limit; `RoundPlan::feasible_solves`).
    pub feasible_solves: usize,
}

/// The count problem of `problem` (see the module documentation): forced jobs only, per GPU type
/// the admissible option of fewest units (the first of them on ties), each worth 1; every job
/// may idle.
pub(super) fn count_problem(problem: &RoundProblem) -> RoundProblem {
    let mut out = problem.clone();
    for job in &mut out.jobs {
        let forced = !job.may_idle();
        let mut cheapest: Vec<RoundOption> = Vec::new();
        if forced {
            for o in &job.options {
                match cheapest.iter_mut().find(|c| c.gpu == o.gpu) {
                    Some(c) if o.units < c.units => *c = *o,
                    Some(_) => {}
                    None => cheapest.push(*o),
                }
            }
        }
        for o in &mut cheapest {
            o.value = 1.0;
        }
        job.options = cheapest;
        job.class = JobClass::Optional;
    }
    out
}

/// The forced jobs of `problem` that the count problem's `solution` runs, with the places of each
/// group of forced jobs with identical count-problem options handed to the group's largest m_j
/// first (ties in job order). The units used do not change.
fn kept_most_behind(
    problem: &RoundProblem,
    count: &RoundProblem,
    solution: &Solution,
) -> Vec<bool> {
    let n = problem.jobs.len();
    let mut kept = vec![false; n];
    // Group forced jobs by their count-problem options (gpu, slot, units per option).
    let mut groups: HashMap<Vec<(usize, u32, u64)>, Vec<usize>> = HashMap::new();
    let mut order: Vec<Vec<(usize, u32, u64)>> = Vec::new();
    for j in problem.forced() {
        let key: Vec<(usize, u32, u64)> = count.jobs[j]
            .options
            .iter()
            .map(|o| (o.gpu, o.slot, o.units))
            .collect();
        let members = groups.entry(key.clone()).or_default();
        if members.is_empty() {
            order.push(key);
        }
        members.push(j);
    }
    for key in order {
        let members = &groups[&key];
        let runs = members
            .iter()
            .filter(|&&j| solution.assignments.get(j).copied().flatten().is_some())
            .count();
        let mut by_need = members.clone();
        // Largest m_j first; equal m_j keep job order (the sort is stable).
        by_need.sort_by(|&a, &b| problem.jobs[b].minimum.total_cmp(&problem.jobs[a].minimum));
        for &j in by_need.iter().take(runs) {
            kept[j] = true;
        }
    }
    kept
}

impl RoundScheduler {
    /// The deficits of this round's instance with the jobs of `relax` made optional: their
    /// deficit is lowered to -(lambda + Delta + 1), so m_j < 0. Their true deficits are untouched.
    fn relaxed_deficits(&self, relax: &[usize]) -> Vec<f64> {
        let f = self.fairness;
        let low = -(f.lambda + f.max_debt + 1.0);
        let mut d = self.deficits.clone();
        for &j in relax {
            d[j] = low;
        }
        d
    }

    /// Relaxes a round whose problem (`problem`, of the true deficits) is infeasible.
    pub(super) fn relax(&self, problem: &RoundProblem) -> Result<Relaxation, RoundError> {
        let count = count_problem(problem);
        let most = self.solver.solve_problem(&count)?;
        if let Status::Infeasible { reason } = &most.status {
            // Every job may idle in the count problem: it always has a solution.
            return Err(RoundError::SolverDefect {
                solver: most.solver.clone(),
                reason: reason.to_string(),
            });
        }
        let kept = kept_most_behind(problem, &count, &most);
        let mut relaxed: Vec<usize> = problem.forced().filter(|&j| !kept[j]).collect();
        // Largest m_j first; equal m_j keep job order (the sort is stable).
        relaxed.sort_by(|&a, &b| problem.jobs[b].minimum.total_cmp(&problem.jobs[a].minimum));
        let instance = self.instance(&self.relaxed_deficits(&relaxed))?;
        let solution = self.solve_round(&instance, None)?;
        if let Status::Infeasible { reason } = &solution.status {
            // The count problem's solution is a solution of this problem: the kept jobs on
            // admissible options (their cheapest), every other job idle.
            return Err(RoundError::SolverDefect {
                solver: solution.solver.clone(),
                reason: reason.to_string(),
            });
        }
        let fallback_solves = [&most, &solution]
            .iter()
            .filter(|s| s.stats.fallback_from.is_some())
            .count();
        let feasible_solves = [&most, &solution]
            .iter()
            .filter(|s| matches!(s.status, Status::Feasible { .. }))
            .count();
        Ok(Relaxation {
            relaxed,
            instance,
            solution,
            solves: 2,
            fallback_solves,
            feasible_solves,
        })
    }
}
