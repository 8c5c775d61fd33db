//! Enumeration of every assignment: the oracle for tiny instances in tests.
//!
//! Time O(prod_j (|O_j| + 1) * n), memory O(n). Refuses more than [`BruteForce::max_combinations`].

use super::{SolveError, Solver};
use crate::formulation::RoundProblem;
use crate::solution::{Assignment, Solution, Status};
use crate::solution::{Infeasibility, SolveStats, SolverDetail};

/// Brute force over all assignments.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct BruteForce {
    /// Largest number of assignments it will enumerate (default 2,000,000).
    pub max_combinations: u128,
}

impl Default for BruteForce {
    fn default() -> Self {
        BruteForce {
            max_combinations: 2_000_000,
        }
    }
}

impl BruteForce {
    /// Sets the largest number of assignments it will enumerate.
    pub fn with_max_combinations(mut self, combinations: u128) -> Self {
        self.max_combinations = combinations;
        self
    }
}

impl Solver for BruteForce {
    fn name(&self) -> &'static str {
        "brute"
    }

    fn solve_problem(&self, problem: &RoundProblem) -> Result<Solution, SolveError> {
        // Per job the choices: index into options, with `options.len()` meaning idle.
        let radix: Vec<usize> = problem
            .jobs
            .iter()
            .map(|j| j.options.len() + usize::from(j.may_idle()))
            .collect();
        let total = radix
            .iter()
            .fold(1u128, |a, &r| a.saturating_mul(r as u128));
        if total > self.max_combinations {
            return Err(SolveError::TooLarge {
                solver: "brute",
                what: "combinations",
                needed: total,
                limit: self.max_combinations,
                hint: "brute force is for tiny instances; use --solver dp",
            });
        }
        let n = problem.jobs.len();
        let mut digits = vec![0usize; n];
        let mut best: Option<(f64, Vec<usize>)> = None;
        if total > 0 {
            loop {
                let mut used = vec![0u64; problem.types()];
                let mut value = 0.0;
                for (job, &d) in problem.jobs.iter().zip(&digits) {
                    if let Some(o) = job.options.get(d) {
                        used[o.gpu] += o.units;
                        value += o.value;
                    }
                }
                let fits = used.iter().zip(&problem.capacity).all(|(u, c)| u <= c);
                if fits && best.as_ref().is_none_or(|(b, _)| value > *b) {
                    best = Some((value, digits.clone()));
                }
                // Next combination (odometer).
                let mut i = 0;
                while i < n {
                    digits[i] += 1;
                    if digits[i] < radix[i] {
                        break;
                    }
                    digits[i] = 0;
                    i += 1;
                }
                if i == n {
                    break;
                }
            }
        }
        let Some((_, digits)) = best else {
            return Ok(Solution::infeasible(
                "brute",
                problem,
                Infeasibility::of(problem),
            ));
        };
        let assignments: Vec<Assignment> = problem
            .jobs
            .iter()
            .zip(&digits)
            .map(|(job, &d)| job.options.get(d).map(|o| (o.gpu, o.slot)))
            .collect();
        Ok(
            Solution::from_assignments("brute", Status::Optimal, problem, assignments).with_stats(
                SolveStats::of(SolverDetail::BruteForce {
                    combinations: u64::try_from(total).unwrap_or(u64::MAX),
                }),
            ),
        )
    }
}
