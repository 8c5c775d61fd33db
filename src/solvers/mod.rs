//! Solvers of the round problem: one trait, one file per algorithm.
//!
//! - [`DenseDp`]: the dense dynamic program of MODEL.md section 4, the reference and the
//!   worst-case bound. Always built.
//! - [`Dp`]: the fast exact DP (bounds, reduced-cost fixing, a sparse DP over the core). The
//!   default.
//! - [`BruteForce`]: enumeration, for tiny instances and tests. Always built.
//! - `Ilp` (feature `highs`): the one-hot ILP solved by HiGHS, the baseline; `export_ilp`
//!   writes the same model as an MPS or LP file for other MIP solvers.
//!
//! Every solver returns a [`Solution`] that [`verify`](crate::verify) accepts, or a [`SolveError`]
//! when it cannot answer (never a silently wrong answer).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::formulation::RoundProblem;
use crate::instance::Instance;
use crate::solution::Solution;

mod brute;
mod dense;
mod dp;
#[cfg(feature = "highs")]
mod ilp;
#[cfg(feature = "highs")]
mod ilp_export;

pub use brute::BruteForce;
pub use dense::DenseDp;
pub use dp::Dp;
#[cfg(feature = "highs")]
pub use ilp::{Ilp, MAX_THREADS as MAX_ILP_THREADS, build_model as build_ilp_model};
#[cfg(feature = "highs")]
pub use ilp_export::{ExportedModel, ModelFormat, export_ilp, ilp_names};

/// A count as an error quotes it: `u128::MAX` is a saturated count, written as what it means
/// rather than as 39 digits.
fn count_text(n: u128) -> String {
    if n == u128::MAX {
        "at least 2^128".to_string()
    } else {
        n.to_string()
    }
}

/// Why a solver could not answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SolveError {
    /// The state space or memory the algorithm would need is past its configured limit; nothing
    /// was allocated.
    #[error(
        "{solver}: the instance needs {} {what}, more than the limit of {limit}; {hint}",
        count_text(*.needed)
    )]
    TooLarge {
        /// The solver.
        solver: &'static str,
        /// What is counted ("bytes", "states", "combinations").
        what: &'static str,
        /// How many the instance needs (`u128::MAX` when even that is too few to count them:
        /// brute force's combinations on a round of hundreds of jobs).
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

/// A solver of the round problem. `Send + Sync`, so that a scheduler holding one can move
/// between threads and solve from any of them.
pub trait Solver: Send + Sync {
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
        let mut solution = self.solve_problem(&problem)?;
        solution.stats.seconds = start.elapsed().as_secs_f64();
        Ok(solution)
    }

    /// Solves `problem` with what an earlier solve of a similar problem left in `warm` (the
    /// last round's), and leaves in it what this solve found. The answer is an optimum of
    /// `problem` whatever `warm` holds (a stale or foreign warm start only costs time); among
    /// equally valuable assignments, which one is returned may depend on it. The default
    /// ignores `warm`: only [`Dp`] uses it (docs/solver.md, "Warm starts").
    fn solve_problem_warm(
        &self,
        problem: &RoundProblem,
        warm: &mut WarmStart,
    ) -> Result<Solution, SolveError> {
        let _ = warm;
        self.solve_problem(problem)
    }
}

impl<S: Solver + ?Sized> Solver for Box<S> {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn solve_problem(&self, problem: &RoundProblem) -> Result<Solution, SolveError> {
        (**self).solve_problem(problem)
    }

    fn solve_problem_warm(
        &self,
        problem: &RoundProblem,
        warm: &mut WarmStart,
    ) -> Result<Solution, SolveError> {
        (**self).solve_problem_warm(problem, warm)
    }
}

/// What a solve leaves for the next solve of a similar problem: consecutive rounds of a
/// scheduler differ in a few jobs and deficits, and the Lagrangian multipliers (one price per
/// GPU type) that bounded the last round are a good start for the next one's descent
/// ([`Solver::solve_problem_warm`]). Start from `WarmStart::default()` (nothing known) and pass
/// the same value to every round's solve; [`RoundScheduler`](crate::RoundScheduler) does this
/// itself and keeps it in its snapshot.
///
/// It holds hints only: any content, even from another cluster, gives the same optimal
/// objective (the DP checks the warm multipliers against the cold ones and keeps the better
/// bound).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WarmStart {
    multipliers: Option<Vec<f64>>,
}

impl WarmStart {
    /// A warm start from known multipliers (one per GPU type, in the cluster's order), as
    /// [`multipliers`](Self::multipliers) returned them: to restore a saved scheduler.
    /// Values that are not finite and >= 0 are dropped (nothing known).
    pub fn from_multipliers(multipliers: Vec<f64>) -> WarmStart {
        WarmStart {
            multipliers: multipliers
                .iter()
                .all(|m| m.is_finite() && *m >= 0.0)
                .then_some(multipliers),
        }
    }

    /// The multipliers the last solve ended with, if a solver left any.
    pub fn multipliers(&self) -> Option<&[f64]> {
        self.multipliers.as_deref()
    }

    /// Records the multipliers a solve ended with.
    pub(crate) fn set_multipliers(&mut self, multipliers: Vec<f64>) {
        self.multipliers = Some(multipliers);
    }
}

/// How [`SolveError::NoSolutionWithinLimit`] names a time limit of `limit` seconds.
pub(crate) fn time_limit_text(limit: Option<f64>) -> String {
    match limit {
        Some(t) => format!("the time limit of {t} s"),
        None => "the time limit".to_string(),
    }
}

/// When a solve that began at `start` must stop under the time limit `limit`, in seconds:
/// `None` without a limit, with an infinite one or one too far to count; a limit that is not a
/// number >= 0 counts as 0 (the solve stops at its first look at the clock).
pub(crate) fn deadline(start: Instant, limit: Option<f64>) -> Option<Instant> {
    let limit = limit?;
    let seconds = if limit >= 0.0 { limit } else { 0.0 };
    Duration::try_from_secs_f64(seconds)
        .ok()
        .and_then(|d| start.checked_add(d))
}

/// The relative gap of a solution worth `objective` to a proven `bound` on the optimum, as
/// solution files give it (`stats.gap`): (bound - objective) / |objective|, 0 where both are 0,
/// infinite where the objective is 0 and the bound above it.
pub(crate) fn relative_gap(objective: f64, bound: f64) -> f64 {
    let gap = (bound - objective).max(0.0);
    if objective == 0.0 {
        if gap == 0.0 { 0.0 } else { f64::INFINITY }
    } else {
        gap / objective.abs()
    }
}

/// Settings shared by the solvers; each solver reads the ones that apply to it. Start from
/// `SolverConfig::default()` and set the fields you need.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SolverConfig {
    /// Wall-time limit in seconds (the ILP and both DPs; [`Dp::time_limit`]). `None`: no limit.
    pub time_limit: Option<f64>,
    /// Relative MIP gap at which the ILP may stop (default 0: exact).
    pub mip_rel_gap: Option<f64>,
    /// Absolute MIP gap at which the ILP may stop (default 0: exact).
    pub mip_abs_gap: Option<f64>,
    /// Threads for the ILP (default 1).
    pub threads: Option<usize>,
    /// Whether the ILP runs HiGHS's MIP presolve (default: yes, HiGHS's default).
    pub presolve: Option<bool>,
    /// Memory limit of the DPs, in bytes.
    pub max_bytes: Option<u64>,
}

/// The solvers this crate builds, for programs that choose one at run time (a command line, a
/// configuration file); a program that knows its solver constructs it directly ([`Dp`], ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SolverKind {
    /// [`Dp`], the fast exact DP.
    Dp,
    /// [`DenseDp`], the dense reference DP.
    DenseDp,
    /// [`BruteForce`].
    BruteForce,
    /// `Ilp` (feature `highs`).
    #[cfg(feature = "highs")]
    Ilp,
    /// [`Fallback`] from [`Dp`] to `Ilp` on rounds the DP refuses as too large (feature `highs`).
    #[cfg(feature = "highs")]
    DpThenIlp,
}

impl SolverKind {
    /// Every kind built into this crate, in the order the CLI lists them.
    pub const ALL: &'static [SolverKind] = &[
        SolverKind::Dp,
        SolverKind::DenseDp,
        SolverKind::BruteForce,
        #[cfg(feature = "highs")]
        SolverKind::Ilp,
        #[cfg(feature = "highs")]
        SolverKind::DpThenIlp,
    ];

    /// The name written in solutions and used by the CLI's `--solver`.
    pub fn name(self) -> &'static str {
        match self {
            SolverKind::Dp => "dp",
            SolverKind::DenseDp => "dp-dense",
            SolverKind::BruteForce => "brute",
            #[cfg(feature = "highs")]
            SolverKind::Ilp => "ilp",
            #[cfg(feature = "highs")]
            SolverKind::DpThenIlp => "dp+ilp",
        }
    }

    /// The solver of this kind, configured by `config`.
    pub fn build(self, config: &SolverConfig) -> Box<dyn Solver> {
        match self {
            SolverKind::Dp => {
                let mut dp = Dp {
                    time_limit: config.time_limit,
                    ..Dp::default()
                };
                if let Some(b) = config.max_bytes {
                    // About 100 bytes per state of the layer being built.
                    dp.max_states = usize::try_from(b / 100).unwrap_or(usize::MAX).max(1);
                }
                Box::new(dp)
            }
            SolverKind::DenseDp => {
                let mut dp = DenseDp::default().with_time_limit(config.time_limit);
                if let Some(b) = config.max_bytes {
                    dp.max_bytes = b;
                }
                Box::new(dp)
            }
            SolverKind::BruteForce => Box::new(BruteForce::default()),
            #[cfg(feature = "highs")]
            SolverKind::Ilp => {
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
                if let Some(p) = config.presolve {
                    ilp.presolve = p;
                }
                Box::new(ilp)
            }
            #[cfg(feature = "highs")]
            SolverKind::DpThenIlp => Box::new(Fallback::new(
                SolverKind::Dp.build(config),
                SolverKind::Ilp.build(config),
            )),
        }
    }
}

impl std::fmt::Display for SolverKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Solves with `first`, and with `then` when `first` refuses the problem as too large
/// ([`SolveError::TooLarge`]) or stops at its time limit without a solution
/// ([`SolveError::NoSolutionWithinLimit`]; `then` then has its own limit, so a solve can take
/// both): for a scheduler whose rounds must never fail (`--solver dp+ilp`).
/// A solution that came from `then` carries the stat `fallback_from` (the first solver's name).
pub struct Fallback {
    /// The solver tried first.
    pub first: Box<dyn Solver>,
    /// The solver used when `first` says the problem is too large, or has no solution
    /// within its time limit.
    pub then: Box<dyn Solver>,
    /// How many problems went to `then`; keep a clone of the `Arc` to read it while the solver
    /// is owned elsewhere (a round scheduler, a simulation).
    pub fallbacks: Arc<AtomicU64>,
}

impl Fallback {
    /// Tries `first`, then `then` on problems `first` refuses as too large or has no solution
    /// for within its time limit.
    pub fn new(first: impl Solver + 'static, then: impl Solver + 'static) -> Fallback {
        Fallback {
            first: Box::new(first),
            then: Box::new(then),
            fallbacks: Arc::default(),
        }
    }
}

impl Solver for Fallback {
    fn name(&self) -> &'static str {
        self.first.name()
    }

    fn solve_problem(&self, problem: &RoundProblem) -> Result<Solution, SolveError> {
        self.solve_problem_warm(problem, &mut WarmStart::default())
    }

    /// `first` gets the warm start; `then`, a different method, solves cold.
    fn solve_problem_warm(
        &self,
        problem: &RoundProblem,
        warm: &mut WarmStart,
    ) -> Result<Solution, SolveError> {
        match self.first.solve_problem_warm(problem, warm) {
            Err(SolveError::TooLarge { .. } | SolveError::NoSolutionWithinLimit { .. }) => {
                self.fallbacks.fetch_add(1, Ordering::Relaxed);
                self.then.solve_problem(problem).map(|mut s| {
                    s.stats.fallback_from = Some(self.first.name().to_string());
                    s
                })
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Instance;

    /// `Fallback` asks its second solver where the first refuses the round as too large or
    /// has no solution within its time limit, says so in the stat `fallback_from` and counts
    /// it; any other answer of the first is returned as it is.
    #[test]
    fn the_fallback_answers_where_the_first_solver_cannot() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/instances/gavel-8x3-40.json");
        let instance = Instance::from_path(path).unwrap();
        let optimum = Dp::default().solve(&instance).unwrap().objective;
        let too_large = DenseDp::default().with_max_bytes(1);
        let out_of_time = DenseDp::default().with_time_limit(Some(0.0));
        for first in [too_large, out_of_time] {
            let fallback = Fallback::new(first, Dp::default());
            let solution = fallback.solve(&instance).unwrap();
            assert_eq!(solution.solver, "dp");
            assert_eq!(solution.objective, optimum);
            assert_eq!(solution.stats.fallback_from.as_deref(), Some("dp-dense"));
            assert_eq!(fallback.fallbacks.load(Ordering::Relaxed), 1);
        }
        // An answer of the first solver is its own.
        let fallback = Fallback::new(DenseDp::default(), Dp::default());
        let solution = fallback.solve(&instance).unwrap();
        assert_eq!(solution.solver, "dp-dense");
        assert_eq!(solution.stats.fallback_from, None);
        assert_eq!(fallback.fallbacks.load(Ordering::Relaxed), 0);
    }
}
