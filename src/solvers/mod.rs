//! Solvers of the round problem: one trait, one file per algorithm.
//!
//! - [`DenseDp`]: the dense dynamic program of MODEL.md section 4, the reference and the
//!   worst-case bound. Always built.
//! - [`Dp`]: the fast exact DP (bounds, reduced-cost fixing, a sparse DP over the core). The
//!   default.
//! - [`BruteForce`]: enumeration, for tiny instances and tests. Always built.
//! - `Ilp` (feature `highs`): the one-hot ILP solved by HiGHS, the baseline.
//!
//! Every solver returns a [`Solution`] that [`verify`](crate::verify) accepts, or a [`SolveError`]
//! when it cannot answer (never a silently wrong answer).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::formulation::RoundProblem;
use crate::instance::Instance;
use crate::solution::Solution;

mod brute;
mod dense;
mod dp;
#[cfg(feature = "highs")]
mod ilp;

pub use brute::BruteForce;
pub use dense::DenseDp;
pub use dp::Dp;
#[cfg(feature = "highs")]
pub use ilp::{Ilp, build_model as build_ilp_model};

/// Why a solver could not answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SolveError {
    /// The state space or memory the algorithm would need is past its configured limit; nothing
    /// was allocated.
    #[error("{solver}: the instance needs {needed} {what}, more than the limit of {limit}; {hint}")]
    TooLarge {
        /// The solver.
        solver: &'static str,
        /// What is counted ("bytes", "states", "combinations").
        what: &'static str,
        /// How many the instance needs.
        needed: u128,
        /// The limit.
        limit: u128,
        /// What to do instead.
        hint: &'static str,
    },
    /// The external solver failed or ended in a state that gives no answer.
    #[error("{solver}: {message}")]
    Backend {
        /// The solver.
        solver: &'static str,
        /// What the backend reported.
        message: String,
    },
    /// A limit (time) stopped the solver before it found any solution.
    #[error("{solver}: stopped by {limit} before any solution was found")]
    NoSolutionWithinLimit {
        /// The solver.
        solver: &'static str,
        /// Which limit.
        limit: String,
    },
}

/// A solver of the round problem.
pub trait Solver {
    /// The solver's name as written in solutions ("dp", "ilp", ...).
    fn name(&self) -> &'static str;

    /// Solves a derived round problem. The returned solution's `stats` need not hold `seconds`:
    /// [`Solver::solve`] adds it.
    fn solve_problem(&self, problem: &RoundProblem) -> Result<Solution, SolveError>;

    /// Derives the round problem from `instance` and solves it; `stats.seconds` is the wall time
    /// of both steps.
    fn solve(&self, instance: &Instance) -> Result<Solution, SolveError> {
        let start = Instant::now();
        let problem = RoundProblem::new(instance);
        let solution = self.solve_problem(&problem)?;
        Ok(solution.stat("seconds", start.elapsed().as_secs_f64()))
    }
}

/// A readable reason for an infeasible round: a shortage certificate when one exists, else the
/// forced jobs that could not be placed together.
pub(crate) fn infeasible_reason(problem: &RoundProblem) -> String {
    if let Some(s) = problem.shortage() {
        let types: Vec<String> = s.types.iter().map(|&k| problem.type_name(k)).collect();
        return format!(
            "{} forced jobs can only run on gpu types [{}], which need at least {} units there but hold {}: short by {} units",
            s.jobs,
            types.join(", "),
            s.need,
            s.have,
            s.short
        );
    }
    let forced: Vec<usize> = problem.forced().collect();
    let shown: Vec<String> = forced
        .iter()
        .take(10)
        .map(|&j| problem.job_name(j))
        .collect();
    format!(
        "the {} forced jobs ({}{}) cannot all be placed at once: their admissible slots do not pack into the capacities of the gpu types",
        forced.len(),
        shown.join(", "),
        if forced.len() > 10 { ", ..." } else { "" }
    )
}

/// Settings shared by the solvers; each solver reads the ones that apply to it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SolverConfig {
    /// Wall-time limit in seconds (ILP). `None`: no limit.
    pub time_limit: Option<f64>,
    /// Relative MIP gap at which the ILP may stop (default 0: exact).
    pub mip_rel_gap: Option<f64>,
    /// Absolute MIP gap at which the ILP may stop (default 0: exact).
    pub mip_abs_gap: Option<f64>,
    /// Threads for the ILP (default 1).
    pub threads: Option<usize>,
    /// Memory limit of the DPs, in bytes.
    pub max_bytes: Option<u64>,
}

/// The names [`by_name`] knows, in the order the CLI lists them.
pub fn solver_names() -> Vec<&'static str> {
    let mut names = vec!["dp", "dp-dense", "brute"];
    if cfg!(feature = "highs") {
        names.push("ilp");
        names.push("dp+ilp");
    }
    names
}

/// A solver by its CLI name, configured by `config`; `None` for an unknown name.
pub fn by_name(name: &str, config: &SolverConfig) -> Option<Box<dyn Solver>> {
    let dense = || {
        let mut dp = DenseDp::default();
        if let Some(b) = config.max_bytes {
            dp.max_bytes = b;
        }
        dp
    };
    match name {
        "dp" => {
            let mut dp = Dp::default();
            if let Some(b) = config.max_bytes {
                // About 100 bytes per state of the layer being built.
                dp.max_states = usize::try_from(b / 100).unwrap_or(usize::MAX).max(1);
            }
            Some(Box::new(dp))
        }
        "dp-dense" => Some(Box::new(dense())),
        "brute" => Some(Box::new(BruteForce::default())),
        #[cfg(feature = "highs")]
        "ilp" => {
            let mut ilp = Ilp {
                time_limit: config.time_limit,
                threads: config.threads.unwrap_or(1),
                ..Ilp::default()
            };
            if let Some(g) = config.mip_rel_gap {
                ilp.mip_rel_gap = g;
            }
            if let Some(g) = config.mip_abs_gap {
                ilp.mip_abs_gap = g;
            }
            Some(Box::new(ilp))
        }
        #[cfg(feature = "highs")]
        "dp+ilp" => Some(Box::new(Fallback {
            first: by_name("dp", config)?,
            then: by_name("ilp", config)?,
            fallbacks: Arc::default(),
        })),
        _ => None,
    }
}

/// Solves with `first`, and with `then` when `first` refuses the problem as too large
/// ([`SolveError::TooLarge`]): for a scheduler whose rounds must never fail (`--solver dp+ilp`).
/// A solution that came from `then` carries the stat `fallback_from` (the first solver's name).
pub struct Fallback {
    /// The solver tried first.
    pub first: Box<dyn Solver>,
    /// The solver used when `first` says the problem is too large.
    pub then: Box<dyn Solver>,
    /// How many problems went to `then`; keep a clone of the `Arc` to read it while the solver
    /// is owned elsewhere (a round scheduler, a simulation).
    pub fallbacks: Arc<AtomicU64>,
}

impl Solver for Fallback {
    fn name(&self) -> &'static str {
        self.first.name()
    }

    fn solve_problem(&self, problem: &RoundProblem) -> Result<Solution, SolveError> {
        match self.first.solve_problem(problem) {
            Err(SolveError::TooLarge { .. }) => {
                self.fallbacks.fetch_add(1, Ordering::Relaxed);
                self.then
                    .solve_problem(problem)
                    .map(|s| s.stat("fallback_from", self.first.name()))
            }
            other => other,
        }
    }
}
