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
//! one vertex. [`MaxMin`] is the one LP type; every method reads it:
//! - [`Method::InteriorPoint`] (default): the hand-written interior point of [`ipm`], the block
//!   method when every entry is one job (O(n K^2) per iteration), the dense one with pairs
//!   (space sharing; O(E K + (2n + K)^3) per iteration for E entries);
//! - [`Method::HighsInteriorPoint`] and [`Method::HighsSimplex`] (feature `highs`): HiGHS's IPX
//!   without crossover or its dual simplex (a vertex), through the raw `highs` API; IPX is also
//!   the fallback when the hand-written method stalls short of ECOS's reduced accuracy;
//! - [`Method::Clarabel`] (feature `clarabel`): Clarabel's interior point.
//!
//! The hand-written method is the default for speed: on Gavel's trace IPX and Clarabel give the
//! same average JCT within 2% but cost 8x to 60x as much CPU (docs/dependencies.md, "The
//! simulation's LP"; the allocation is recomputed about 400 times per run, each LP with up to
//! 14,000 columns under space sharing), which would put every LP policy below the required 100x
//! speed-up over Gavel's simulator. Results are clipped to [0, 1] as Gavel does.

use super::super::SimError;
use super::ipm;

/// Without HiGHS to fall back on, the block method's best point is accepted up to this relative
/// error (ECOS's `feastol_inacc`).
pub const LAST_RESORT: f64 = 1e-4;

/// How the LP is solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// An interior-point solution (central, as ECOS returns): the block method of `ipm` for
    /// one-job entries, its dense method (faer's Cholesky) with pairs; HiGHS's IPX when either
    /// stalls short of ECOS's reduced accuracy.
    InteriorPoint,
    /// HiGHS's IPX without crossover, even for one-job entries (to cross-check the block method).
    HighsInteriorPoint,
    /// HiGHS's dual simplex: an optimal vertex.
    HighsSimplex,
    /// Clarabel's interior point (feature `clarabel`), for comparison.
    Clarabel,
}

impl Method {
    /// Whether this build can solve with the method: HiGHS's need the `highs` feature and
    /// Clarabel's the `clarabel` one (without them a run failed at its first LP, after the
    /// policies before it had run).
    pub fn is_available(self) -> bool {
        match self {
            Method::InteriorPoint => true,
            Method::HighsInteriorPoint | Method::HighsSimplex => cfg!(feature = "highs"),
            Method::Clarabel => cfg!(feature = "clarabel"),
        }
    }

    /// The cargo feature of `stsfair-sim` the method needs, if any.
    pub fn feature(self) -> Option<&'static str> {
        match self {
            Method::InteriorPoint => None,
            Method::HighsInteriorPoint | Method::HighsSimplex => Some("highs"),
            Method::Clarabel => Some("clarabel"),
        }
    }
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
        if method == Method::InteriorPoint {
            let solution = ipm::solve(self);
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
                Err(source) => {
                    return Err(SimError::InteriorPoint {
                        policy: policy.to_string(),
                        source,
                    });
                }
            }
        }
        if method == Method::Clarabel {
            return self.solve_clarabel(policy);
        }
        self.solve_highs(policy, method)
    }

    /// The x columns of the LP, for the general-purpose solvers, entry by entry (t's column is
    /// the caller's).
    /// Each x column lists its rows (U rows 0..n, R rows n..2n, C rows 2n..2n + K, as in the
    /// module documentation) in increasing order, with their coefficients.
    #[cfg(any(feature = "highs", feature = "clarabel"))]
    fn columns(&self, mut column: impl FnMut(&[(usize, f64)])) {
        let (n, k) = (self.jobs, self.capacity.len());
        let mut rows: Vec<(usize, f64)> = Vec::with_capacity(5);
        for e in self.entries {
            for kk in 0..k {
                rows.clear();
                for (m, j) in e.members() {
                    let u = e.utility[kk][m];
                    if u != 0.0 {
                        rows.push((j, u));
                    }
                }
                for (_, j) in e.members() {
                    rows.push((n + j, 1.0));
                }
                rows.push((2 * n + kk, e.scale_factor));
                // A pair's partner may come before its first job.
                rows.sort_unstable_by_key(|&(row, _)| row);
                column(&rows);
            }
        }
    }

    /// The LP through the `highs` crate's column-wise API (IPX without crossover, or the dual
    /// simplex): no modelling layer, the matrix is handed over as built.
    fn solve_highs(&self, policy: &str, method: Method) -> Result<(Vec<Vec<f64>>, f64), SimError> {
        #[cfg(feature = "highs")]
        {
            use stsfair::highs_lp::{self, ColProblem, OptionValue, Outcome, Row, Sense};

            let (n, k) = (self.jobs, self.capacity.len());
            let fail = |message: String| SimError::Solver {
                policy: policy.to_string(),
                message,
            };
            let mut problem = ColProblem::new();
            // U_i: utility - t >= 0; R_i: time <= 1; C_k: load <= n_k. HiGHS gets them in the
            // order good_lp gave them (U_0, R_0, U_1, R_1, ..., then the C rows): the simplex
            // path, and so the allocations, depend on the order, and this keeps the answers of
            // `--lp highs-ipm` and `highs-simplex` those measured through good_lp before.
            let mut rows: Vec<Row> = Vec::with_capacity(2 * n + k);
            for _ in 0..n {
                rows.push(problem.add_row(0.0..));
                rows.push(problem.add_row(..=1.0));
            }
            for &c in self.capacity {
                rows.push(problem.add_row(..=f64::from(c)));
            }
            let place = |r: usize| match r {
                r if r < n => 2 * r,
                r if r < 2 * n => 2 * (r - n) + 1,
                r => r,
            };
            // t is free.
            problem.add_column::<f64, _, _, _>(1.0, .., (0..n).map(|i| (rows[2 * i], -1.0)));
            let mut placed: Vec<(usize, f64)> = Vec::with_capacity(5);
            self.columns(|col| {
                placed.clear();
                placed.extend(col.iter().map(|&(r, v)| (place(r), v)));
                placed.sort_unstable_by_key(|&(r, _)| r);
                problem.add_column(0.0, 0.0.., placed.iter().map(|&(r, v)| (rows[r], v)));
            });
            let mut options = vec![("threads", OptionValue::Int(1))];
            match method {
                Method::HighsSimplex => options.push(("solver", OptionValue::Text("simplex"))),
                _ => {
                    options.push(("solver", OptionValue::Text("ipm")));
                    options.push(("run_crossover", OptionValue::Text("off")));
                }
            }
            let answer = highs_lp::solve(problem, Sense::Maximise, &options).map_err(|source| {
                SimError::Highs {
                    policy: policy.to_string(),
                    source,
                }
            })?;
            if answer.outcome != Outcome::Optimal {
                return Err(fail(format!("HiGHS: {}", answer.status)));
            }
            let values = &answer.columns;
            let t = values.first().copied().unwrap_or(0.0);
            Ok((self.rows_of(values.get(1..).unwrap_or_default()), t))
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

    /// The LP through Clarabel, as a conic program over the nonnegative cone: minimize -t
    /// subject to A z + s = b, s >= 0, with the U, R and C rows of the module documentation
    /// (U negated into `t - utility <= 0`) and one row `-x <= 0` per x.
    fn solve_clarabel(&self, policy: &str) -> Result<(Vec<Vec<f64>>, f64), SimError> {
        #[cfg(feature = "clarabel")]
        {
            use clarabel::algebra::CscMatrix;
            use clarabel::solver::{
                DefaultSettingsBuilder, DefaultSolver, IPSolver, SolverStatus,
                SupportedConeT::NonnegativeConeT,
            };

            let (n, k) = (self.jobs, self.capacity.len());
            let fail = |message: String| SimError::Solver {
                policy: policy.to_string(),
                message,
            };
            let vars = 1 + self.entries.len() * k;
            let bound_row = 2 * n + k;
            let m = bound_row + vars - 1;
            let (mut colptr, mut rowval, mut nzval) = (vec![0], Vec::new(), Vec::new());
            rowval.extend(0..n);
            nzval.extend(std::iter::repeat_n(1.0, n));
            colptr.push(rowval.len());
            let mut x = 0;
            self.columns(|col| {
                for &(r, v) in col {
                    rowval.push(r);
                    nzval.push(if r < n { -v } else { v });
                }
                rowval.push(bound_row + x);
                nzval.push(-1.0);
                colptr.push(rowval.len());
                x += 1;
            });
            let a = CscMatrix::new(m, vars, colptr, rowval, nzval);
            let mut b = vec![0.0; m];
            b[n..2 * n].fill(1.0);
            for (bk, &c) in b[2 * n..bound_row].iter_mut().zip(self.capacity) {
                *bk = f64::from(c);
            }
            let mut q = vec![0.0; vars];
            q[0] = -1.0;
            let p = CscMatrix::<f64>::zeros((vars, vars));
            // The hand-written method's tolerances: ECOS's feasibility, a relative gap of 1e-5.
            let settings = DefaultSettingsBuilder::default()
                .verbose(false)
                .tol_gap_rel(1e-5)
                .tol_gap_abs(1e-8)
                .tol_feas(1e-8)
                .build()
                .map_err(|e| fail(format!("Clarabel settings: {e}")))?;
            let mut solver = DefaultSolver::new(&p, &q, &a, &b, &[NonnegativeConeT(m)], settings)
                .map_err(|e| fail(format!("Clarabel: {e:?}")))?;
            solver.solve();
            match solver.solution.status {
                SolverStatus::Solved | SolverStatus::AlmostSolved => {}
                status => return Err(fail(format!("Clarabel: {status:?}"))),
            }
            let z = &solver.solution.x;
            Ok((self.rows_of(&z[1..]), z[0]))
        }
        #[cfg(not(feature = "clarabel"))]
        Err(SimError::Solver {
            policy: policy.to_string(),
            message: "--lp clarabel needs the `clarabel` feature of stsfair-sim".to_string(),
        })
    }

    /// x entry by entry (K values each), clipped to [0, 1] as Gavel does.
    #[cfg(any(feature = "highs", feature = "clarabel"))]
    fn rows_of(&self, x: &[f64]) -> Vec<Vec<f64>> {
        let k = self.capacity.len().max(1);
        x.chunks(k)
            .map(|row| row.iter().map(|v| v.clamp(0.0, 1.0)).collect())
            .collect()
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

    /// The CLI refuses a method this build lacks before any run (`--lp clarabel` was exit 1 at
    /// the first LP).
    #[test]
    fn methods_say_whether_this_build_has_them() {
        assert!(Method::InteriorPoint.is_available());
        assert_eq!(Method::InteriorPoint.feature(), None);
        for m in [Method::HighsInteriorPoint, Method::HighsSimplex] {
            assert_eq!(m.is_available(), cfg!(feature = "highs"));
            assert_eq!(m.feature(), Some("highs"));
        }
        assert_eq!(Method::Clarabel.is_available(), cfg!(feature = "clarabel"));
        assert_eq!(Method::Clarabel.feature(), Some("clarabel"));
    }

    /// Every LP method on the same LPs, with and without pairs: the same optimal value t as
    /// HiGHS's simplex, and a feasible x.
    #[test]
    fn methods_agree() {
        let capacity = [3, 2, 4];
        let mut methods = vec![Method::InteriorPoint, Method::HighsInteriorPoint];
        if cfg!(feature = "clarabel") {
            methods.push(Method::Clarabel);
        }
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
            let (_, t_simplex) = lp.solve("test", Method::HighsSimplex).unwrap();
            for &method in &methods {
                let (x, t) = lp.solve("test", method).unwrap();
                assert!(
                    (t - t_simplex).abs() <= 1e-4 * t_simplex,
                    "{method:?}, pairs {pairs}: {t} vs HiGHS's simplex {t_simplex}"
                );
                assert_feasible(&lp, &x, t_simplex);
            }
        }
    }

    /// x meets the LP's constraints up to the methods' relative tolerance (ECOS's reduced
    /// accuracy, 5e-5), with every job's utility at least `t` (up to 1e-4).
    fn assert_feasible(lp: &MaxMin<'_>, x: &[Vec<f64>], t: f64) {
        let mut time = vec![0.0; lp.jobs];
        let mut utility = vec![0.0; lp.jobs];
        let mut load = vec![0.0; lp.capacity.len()];
        for (e, row) in lp.entries.iter().zip(x) {
            for (kk, &v) in row.iter().enumerate() {
                load[kk] += e.scale_factor * v;
                for (m, j) in e.members() {
                    time[j] += v;
                    utility[j] += e.utility[kk][m] * v;
                }
            }
        }
        assert!(time.iter().all(|&s| s <= 1.0 + 5e-5), "{time:?}");
        assert!(
            load.iter()
                .zip(lp.capacity)
                .all(|(&l, &c)| l <= f64::from(c) * (1.0 + 5e-5)),
            "{load:?}"
        );
        assert!(
            utility.iter().all(|&u| u >= t * (1.0 - 1e-4)),
            "{utility:?}"
        );
    }
}
