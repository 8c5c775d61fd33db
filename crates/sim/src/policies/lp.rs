//! The max-min linear program shared by Gavel's LP policies.
//!
//! Entries (a job alone, or a pair of jobs sharing GPUs) get a time fraction `x[r][k]` on each GPU
//! type k:
//!
//! ```text
//! maximize t
//! subject to  sum over entries r containing job i, types k of u[r][k][i] * x[r][k] >= t   (each job i)
//!             sum over entries r containing job i, types k of x[r][k]           <= 1   (each job i)
//!             sum over entries r of sf_r * x[r][k]                              <= n_k (each type k)
//!             x >= 0
//! ```
//!
//! Max-min allocations are not unique: jobs above the bottleneck can take their spare time on any
//! type. Gavel solves with cvxpy/ECOS, an interior-point method, whose answer lies near the
//! analytic center of the optimal face: spare time is spread over the types rather than piled on
//! one vertex. Two interior-point paths mimic that:
//! - when every entry is one job, the block interior-point method of [`ipm`]
//!   (O(n K^2) per iteration);
//! - with pairs (space sharing), the dense interior-point method of [`ipm`]
//!   (O(E K + (2n + K)^3) per iteration for E entries).
//!
//! HiGHS (feature `highs`, through good_lp) is the fallback when the interior-point methods stall
//! short of ECOS's reduced accuracy, and the alternative on request: [`Method::HighsInteriorPoint`]
//! (IPX without crossover) or [`Method::Simplex`] (a vertex). The interior-point methods are the
//! default for speed only: on Gavel's trace (`docs/results.md`) HiGHS's IPX gives the same
//! average JCT within 1.5% but costs about ten times as much per LP (the allocation is
//! recomputed about 400 times per run, each LP with up to 14,000 columns under space sharing),
//! which would put every LP policy below the required 100x speed-up over Gavel's simulator.
//! Results are clipped to [0, 1] as Gavel does.

use super::super::SimError;
use super::ipm::{self, EntryLp, MaxMinLp};

/// Without HiGHS to fall back on, the block method's best point is accepted up to this relative
/// error (ECOS's `feastol_inacc`).
pub const LAST_RESORT: f64 = 1e-4;

/// How the LP is solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// An interior-point solution (central, as ECOS returns): the block method of [`ipm`] for
    /// one-job entries, its dense method (faer's Cholesky) with pairs; HiGHS's IPX when either
    /// stalls short of ECOS's reduced accuracy.
    InteriorPoint,
    /// HiGHS's IPX without crossover, even for one-job entries (to cross-check the block method).
    HighsInteriorPoint,
    /// HiGHS's dual simplex: an optimal vertex.
    Simplex,
}

/// One entry of the LP: the job it holds, or the pair of jobs sharing GPUs (indices into the job
/// list), its scale factor, and per type the utility coefficient of each of its jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The job alone, or the pair's first job.
    pub job: usize,
    /// The pair's second job; `None` for a job alone.
    pub partner: Option<usize>,
    /// GPUs the entry occupies on its type.
    pub scale_factor: f64,
    /// `utility[k]`: coefficients of `x[entry][k]` in the utilities of `job` and `partner` (the
    /// second is unused for a job alone). One allocation per entry: a space-sharing LP has
    /// thousands of entries and is rebuilt at every arrival and completion.
    pub utility: Vec<[f64; 2]>,
}

impl Entry {
    /// A job alone, with its utility coefficient per type.
    pub fn single(job: usize, scale_factor: f64, utility: impl IntoIterator<Item = f64>) -> Entry {
        Entry {
            job,
            partner: None,
            scale_factor,
            utility: utility.into_iter().map(|u| [u, 0.0]).collect(),
        }
    }

    /// The entry's jobs with their member index (0, then 1 for a pair's partner).
    pub fn members(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        std::iter::once(self.job).chain(self.partner).enumerate()
    }
}

/// One max-min LP: `jobs` jobs, the entries that hold them, and the GPUs per type.
#[derive(Debug, Clone, Copy)]
pub struct MaxMin<'a> {
    /// Number of jobs (job indices of the entries are below it).
    pub jobs: usize,
    /// The entries (one variable per entry and type).
    pub entries: &'a [Entry],
    /// GPUs per type.
    pub capacity: &'a [u32],
}

impl MaxMin<'_> {
    /// Solves the LP with `method`; returns x per entry and type, clipped to [0, 1], and the
    /// optimal t. `policy` names the caller in errors.
    pub fn solve(&self, policy: &str, method: Method) -> Result<(Vec<Vec<f64>>, f64), SimError> {
        let (jobs, entries) = (self.jobs, self.entries);
        let k = self.capacity.len();
        if jobs == 0 {
            return Ok((vec![vec![0.0; k]; entries.len()], 0.0));
        }
        // Shapes checked once here, for every method (HiGHS indexes the entries directly).
        if let Some(r) = entries.iter().position(|e| {
            e.utility.len() != k || e.job >= jobs || e.partner.is_some_and(|j| j >= jobs)
        }) {
            return Err(SimError::Solver {
                policy: policy.to_string(),
                message: format!(
                    "LP entry {r} must hold jobs below {jobs} and one utility pair per type ({k})"
                ),
            });
        }
        let one_job_each = entries.len() == jobs
            && entries
                .iter()
                .enumerate()
                .all(|(i, e)| e.job == i && e.partner.is_none());
        if method == Method::InteriorPoint {
            let cap: Vec<f64> = self.capacity.iter().map(|&c| f64::from(c)).collect();
            let solution = if one_job_each {
                let utility: Vec<f64> = entries
                    .iter()
                    .flat_map(|e| e.utility.iter().map(|u| u[0]))
                    .collect();
                let size: Vec<f64> = entries.iter().map(|e| e.scale_factor).collect();
                MaxMinLp {
                    utility: &utility,
                    size: &size,
                    capacity: &cap,
                }
                .solve()
            } else {
                EntryLp {
                    jobs,
                    entries,
                    capacity: &cap,
                }
                .solve()
            };
            let rows =
                |s: &ipm::IpmSolution| s.x.chunks(k).map(<[f64]>::to_vec).collect::<Vec<_>>();
            match solution {
                Ok(s) if s.error <= ipm::FALLBACK => return Ok((rows(&s), s.t)),
                // Numerical trouble: HiGHS when it is there, else a looser answer if close enough.
                _ if cfg!(feature = "highs") => {}
                Ok(s) if s.error <= LAST_RESORT => return Ok((rows(&s), s.t)),
                Ok(s) => {
                    return Err(SimError::Solver {
                        policy: policy.to_string(),
                        message: format!(
                            "the interior point method stalled at relative error {:.1e}",
                            s.error
                        ),
                    });
                }
                Err(e) => {
                    return Err(SimError::Solver {
                        policy: policy.to_string(),
                        message: e.to_string(),
                    });
                }
            }
        }
        self.solve_highs(policy, method)
    }

    /// The LP through good_lp and HiGHS (IPX without crossover, or the dual simplex).
    fn solve_highs(&self, policy: &str, method: Method) -> Result<(Vec<Vec<f64>>, f64), SimError> {
        #[cfg(feature = "highs")]
        {
            use good_lp::solvers::highs::{HighsSolverType, highs};
            use good_lp::{
                Expression, ProblemVariables, Solution, SolverModel, Variable, variable,
            };

            let k = self.capacity.len();
            let mut vars = ProblemVariables::new();
            let t = vars.add(variable());
            let x: Vec<Vec<Variable>> = self
                .entries
                .iter()
                .map(|_| (0..k).map(|_| vars.add(variable().min(0.0))).collect())
                .collect();
            let mut utility: Vec<Expression> = vec![Expression::from(0.0); self.jobs];
            let mut time: Vec<Expression> = vec![Expression::from(0.0); self.jobs];
            let mut load: Vec<Expression> = vec![Expression::from(0.0); k];
            for (e, xs) in self.entries.iter().zip(&x) {
                for (kk, &v) in xs.iter().enumerate() {
                    load[kk] += e.scale_factor * v;
                    for (m, j) in e.members() {
                        let u = e.utility[kk][m];
                        if u != 0.0 {
                            utility[j] += u * v;
                        }
                        time[j] += v;
                    }
                }
            }
            let mut model = vars.maximise(t).using(highs).set_threads(1);
            model = match method {
                Method::Simplex => model.set_solver(HighsSolverType::Simplex),
                Method::InteriorPoint | Method::HighsInteriorPoint => model
                    .set_solver(HighsSolverType::Ipm)
                    .set_option("run_crossover", "off"),
            };
            for (u, tm) in utility.into_iter().zip(time) {
                model = model.with((u - t).geq(0.0)).with(tm.leq(1.0));
            }
            for (l, &n) in load.into_iter().zip(self.capacity) {
                model = model.with(l.leq(f64::from(n)));
            }
            let solution = model.solve().map_err(|e| SimError::Solver {
                policy: policy.to_string(),
                message: e.to_string(),
            })?;
            let values = x
                .iter()
                .map(|xs| {
                    xs.iter()
                        .map(|&v| solution.value(v).clamp(0.0, 1.0))
                        .collect()
                })
                .collect();
            Ok((values, solution.value(t)))
        }
        #[cfg(not(feature = "highs"))]
        {
            let _ = method;
            Err(SimError::Solver {
                policy: policy.to_string(),
                message: "this LP needs HiGHS: build with the `highs` feature".to_string(),
            })
        }
    }
}

#[cfg(all(test, feature = "highs"))]
mod tests {
    use super::*;

    /// A max-min LP with every pair of `n` jobs as extra entries, deterministic pseudo-random
    /// utilities (pairs slower than alone, as measured co-locations are).
    fn with_pairs(n: usize, k: usize) -> Vec<Entry> {
        let u = |i: usize, kk: usize, salt: usize| {
            0.3 + ((i * 37 + kk * 11 + salt * 7) % 17) as f64 / 10.0
        };
        let mut entries: Vec<Entry> = (0..n)
            .map(|i| Entry::single(i, 1.0, (0..k).map(|kk| u(i, kk, 0))))
            .collect();
        for a in 0..n {
            for b in a + 1..n {
                let utility = (0..k)
                    .map(|kk| [0.6 * u(a, kk, b), 0.5 * u(b, kk, a)])
                    .collect();
                entries.push(Entry {
                    job: a,
                    partner: Some(b),
                    scale_factor: 1.0,
                    utility,
                });
            }
        }
        entries
    }

    /// The interior-point methods and HiGHS agree on the optimal value t, with and without
    /// pairs, and the interior-point answer is feasible.
    #[test]
    fn interior_point_agrees_with_highs() {
        let capacity = [3, 2, 4];
        for pairs in [false, true] {
            let n = 12;
            let mut entries = with_pairs(n, capacity.len());
            if !pairs {
                entries.truncate(n);
            }
            let lp = MaxMin {
                jobs: n,
                entries: &entries,
                capacity: &capacity,
            };
            let (x, t) = lp.solve("test", Method::InteriorPoint).unwrap();
            let (_, t_highs) = lp.solve("test", Method::Simplex).unwrap();
            assert!(
                (t - t_highs).abs() <= 1e-4 * t_highs,
                "pairs {pairs}: {t} vs HiGHS {t_highs}"
            );
            let mut time = vec![0.0; n];
            let mut utility = vec![0.0; n];
            let mut load = vec![0.0; capacity.len()];
            for (e, row) in entries.iter().zip(&x) {
                for (kk, &v) in row.iter().enumerate() {
                    load[kk] += e.scale_factor * v;
                    for (m, j) in e.members() {
                        time[j] += v;
                        utility[j] += e.utility[kk][m] * v;
                    }
                }
            }
            // Feasible up to the methods' relative tolerance (ECOS's reduced accuracy, 5e-5).
            assert!(time.iter().all(|&s| s <= 1.0 + 5e-5), "{time:?}");
            assert!(
                load.iter()
                    .zip(&capacity)
                    .all(|(&l, &c)| l <= f64::from(c) * (1.0 + 5e-5)),
                "{load:?}"
            );
            assert!(
                utility.iter().all(|&u| u >= t_highs * (1.0 - 1e-4)),
                "{utility:?}"
            );
        }
    }
}
