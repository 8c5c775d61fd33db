//! The dense dynamic program of MODEL.md section 4: the reference solver.
//!
//! V_j(c) = max( V_(j-1)(c) if j may idle, max over admissible o of V_(j-1)(c - size(o)) + v[j][o] )
//! over every vector c of units used per GPU type.
//!
//! Units of type k are counted in grains of g_k = gcd of the admissible option sizes on k: every
//! reachable load is a multiple of g_k, so the grid `0..=floor(C_k / g_k)` loses nothing.
//!
//! Time O(n * prod_k (C_k/g_k + 1) * |O|), memory O(prod_k (C_k/g_k + 1) * (n + 16)) bytes: one
//! byte per job and state records the choice for reconstruction. The guard computes both before
//! allocating and refuses past [`DenseDp::max_bytes`]. With a time limit
//! ([`DenseDp::time_limit`]) it looks at the clock before each job's pass over the grid.
//! Reference: the textbook DP for the multiple-choice knapsack problem (Kellerer, Pferschy and
//! Pisinger, *Knapsack Problems*, Springer 2004, section 11.5), with one capacity per GPU type.

use std::time::Instant;

use super::{SolveError, Solver, deadline, time_limit_text};
use crate::formulation::RoundProblem;
use crate::solution::{Infeasibility, SolveStats, SolverDetail};
use crate::solution::{Solution, Status};

/// The dense DP. Exact; its cost is the full state grid, so it serves small clusters and as the
/// independent reference for the fast solver.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct DenseDp {
    /// Largest memory the DP may allocate, in bytes (default 2 GiB).
    pub max_bytes: u64,
    /// Wall-time limit of a solve in seconds (default `None`: no limit). The DP has no answer
    /// before its last job's pass, so past the limit it stops with
    /// [`SolveError::NoSolutionWithinLimit`]; it looks at the clock before each job's pass,
    /// one pass over the grid (its states times the job's options). A limit that is not a
    /// number >= 0 counts as 0.
    pub time_limit: Option<f64>,
}

impl Default for DenseDp {
    fn default() -> Self {
        DenseDp {
            max_bytes: 2 << 30,
            time_limit: None,
        }
    }
}

impl DenseDp {
    /// Sets the memory limit in bytes.
    pub fn with_max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Sets the time limit in seconds (`None`: no limit).
    pub fn with_time_limit(mut self, seconds: Option<f64>) -> Self {
        self.time_limit = seconds;
        self
    }
}

pub(crate) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl DenseDp {
    /// Grain per type and grid size per type (capacity in grains + 1).
    fn grid(problem: &RoundProblem) -> (Vec<u64>, Vec<u64>) {
        let options = problem.jobs.iter().flat_map(|j| &j.options);
        Self::grid_of(&problem.capacity, options.map(|o| (o.gpu, o.units)))
    }

    /// [`DenseDp::grid`] from the capacities and the (type, units) of every admissible option,
    /// for a caller that has them without the jobs (the fast DP's classes: the same options,
    /// far fewer of them on large rounds).
    pub(crate) fn grid_of(
        capacity: &[u64],
        options: impl IntoIterator<Item = (usize, u64)>,
    ) -> (Vec<u64>, Vec<u64>) {
        let mut grain = vec![0u64; capacity.len()];
        for (gpu, units) in options {
            grain[gpu] = gcd(grain[gpu], units);
        }
        let dims = capacity
            .iter()
            .zip(&grain)
            .map(|(&c, &g)| c.checked_div(g).map_or(1, |cells| cells + 1))
            .collect();
        (grain, dims)
    }

    /// States and bytes of a grid of `dims` for `jobs` jobs.
    pub(crate) fn size(dims: &[u64], jobs: usize) -> (u128, u128) {
        let states = dims
            .iter()
            .fold(1u128, |a, &d| a.saturating_mul(u128::from(d)));
        let per_state = 16 + jobs as u128;
        (states, states.saturating_mul(per_state))
    }

    /// Number of states and bytes the DP would allocate for `problem`.
    pub fn estimate(problem: &RoundProblem) -> (u128, u128) {
        let (_, dims) = Self::grid(problem);
        Self::size(&dims, problem.jobs.len())
    }

    /// Why the DP refuses a problem whose grid takes `bytes` and whose jobs have at most
    /// `most_options` admissible options each (past [`DenseDp::max_bytes`], or more than 255
    /// options, which its one byte per choice cannot record), or `None`: checked before
    /// anything is allocated.
    pub(crate) fn refusal_of(&self, bytes: u128, most_options: usize) -> Option<SolveError> {
        if bytes > u128::from(self.max_bytes) {
            return Some(SolveError::TooLarge {
                solver: "dp-dense",
                // A count that saturated 128 bits is a lower bound: the error says so.
                what: "bytes",
                needed: bytes,
                limit: u128::from(self.max_bytes),
                hint: "use the fast solver (--solver dp) or the ILP (--solver ilp)",
            });
        }
        if most_options > 255 {
            return Some(SolveError::TooLarge {
                solver: "dp-dense",
                what: "admissible options in one job",
                needed: most_options as u128,
                limit: 255,
                hint: "use the fast solver (--solver dp) or the ILP (--solver ilp)",
            });
        }
        None
    }
}

impl Solver for DenseDp {
    fn name(&self) -> &'static str {
        "dp-dense"
    }

    fn solve_problem(&self, problem: &RoundProblem) -> Result<Solution, SolveError> {
        self.solve_until(problem, deadline(Instant::now(), self.time_limit))
    }
}

impl DenseDp {
    /// The solve, stopped with [`SolveError::NoSolutionWithinLimit`] where `until` passes
    /// before the last job's pass: the fast DP's dense finish gives it what is left of its
    /// own limit.
    pub(crate) fn solve_until(
        &self,
        problem: &RoundProblem,
        until: Option<Instant>,
    ) -> Result<Solution, SolveError> {
        // The grid once: its guard, then the recurrence over it.
        let (grain, dims) = Self::grid(problem);
        let (states, bytes) = Self::size(&dims, problem.jobs.len());
        let most = problem.jobs.iter().map(|j| j.options.len()).max();
        if let Some(refusal) = self.refusal_of(bytes, most.unwrap_or(0)) {
            return Err(refusal);
        }
        // Fits in memory, so it fits in usize.
        let states = states as usize;
        let k = problem.types();
        let mut stride = vec![1usize; k];
        for t in 1..k {
            stride[t] = stride[t - 1] * dims[t - 1] as usize;
        }
        // Per job and state: 0 = idle (or copied), i + 1 = option i.
        let n = problem.jobs.len();
        let mut choice = vec![0u8; n * states];
        let mut prev = vec![f64::NEG_INFINITY; states];
        let mut next = vec![f64::NEG_INFINITY; states];
        prev[0] = 0.0;
        // The grid coordinate of every state along every type, computed once.
        let coord = |idx: usize, t: usize| (idx / stride[t]) % dims[t] as usize;
        for (j, job) in problem.jobs.iter().enumerate() {
            if until.is_some_and(|d| Instant::now() >= d) {
                return Err(SolveError::NoSolutionWithinLimit {
                    solver: "dp-dense",
                    limit: time_limit_text(self.time_limit),
                });
            }
            let may_idle = job.may_idle();
            let row = &mut choice[j * states..(j + 1) * states];
            for idx in 0..states {
                let mut best = if may_idle {
                    prev[idx]
                } else {
                    f64::NEG_INFINITY
                };
                let mut pick = 0u8;
                for (i, o) in job.options.iter().enumerate() {
                    let q = (o.units / grain[o.gpu]) as usize;
                    if coord(idx, o.gpu) < q {
                        continue;
                    }
                    let from = prev[idx - q * stride[o.gpu]];
                    if from == f64::NEG_INFINITY {
                        continue;
                    }
                    let cand = from + o.value;
                    if cand > best {
                        best = cand;
                        pick = i as u8 + 1;
                    }
                }
                next[idx] = best;
                row[idx] = pick;
            }
            std::mem::swap(&mut prev, &mut next);
        }
        // Best final state; ties to the lowest index (fewest units, deterministic).
        let mut best_idx = None;
        let mut best_val = f64::NEG_INFINITY;
        for (idx, &v) in prev.iter().enumerate() {
            if v > best_val {
                best_val = v;
                best_idx = Some(idx);
            }
        }
        let stats = SolveStats::of(SolverDetail::Dense {
            states: states as u64,
        });
        let Some(mut idx) = best_idx else {
            return Ok(
                Solution::infeasible("dp-dense", problem, Infeasibility::of(problem))
                    .with_stats(stats),
            );
        };
        let mut assignments = vec![None; n];
        for j in (0..n).rev() {
            let pick = choice[j * states + idx];
            if pick > 0 {
                let o = &problem.jobs[j].options[pick as usize - 1];
                assignments[j] = Some((o.gpu, o.slot));
                idx -= (o.units / grain[o.gpu]) as usize * stride[o.gpu];
            }
        }
        Ok(
            Solution::from_assignments("dp-dense", Status::Optimal, problem, assignments)
                .with_stats(stats),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Instance;

    /// Past its time limit before its last job's pass the dense DP has no answer, and says
    /// so; a limit that is not a number >= 0 counts as 0, an infinite one as none.
    #[test]
    fn the_dense_dp_stops_at_its_time_limit() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/instances/gavel-8x3-40.json");
        let instance = Instance::from_path(path).unwrap();
        for limit in [0.0, -1.0, f64::NAN] {
            let answer = DenseDp::default()
                .with_time_limit(Some(limit))
                .solve(&instance);
            assert!(
                matches!(
                    answer,
                    Err(SolveError::NoSolutionWithinLimit {
                        solver: "dp-dense",
                        ..
                    })
                ),
                "{limit}: {answer:?}"
            );
        }
        let unlimited = DenseDp::default().solve(&instance).unwrap();
        let infinite = DenseDp::default().with_time_limit(Some(f64::INFINITY));
        assert_eq!(
            infinite.solve(&instance).unwrap().objective,
            unlimited.objective
        );
    }
}
