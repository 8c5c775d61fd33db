//! The one-hot ILP of MODEL.md section 4, solved by HiGHS: the baseline the DP is measured
//! against, and an exactness check that shares no code with it.
//!
//! ```text
//! maximize   sum_j sum_{o in O_j} v[j][o] * x[j][o]
//! subject to sum_{o in O_j} x[j][o] <= 1     (= 1 when j is forced)   for every job with an option
//!            sum_{(j, o) on type k} units[j][o] * x[j][o] <= C_k          for every GPU type k
//!            x[j][o] in {0, 1}
//! ```
//!
//! One binary per admissible option, one row per job that has an option plus one per GPU type,
//! two nonzeros per column: building the model is O(sum_j |O_j|) time and memory. Solving it is
//! NP-hard in general (it is a multiple-choice knapsack with one capacity per GPU type; Sinha and
//! Zoltners, "The multiple-choice knapsack problem", Operations Research 27(3), 1979); HiGHS runs
//! LP-based branch and bound with presolve, cuts and heuristics (Huangfu and Hall, "Parallelizing
//! the dual revised simplex method", Math. Prog. Comp. 10, 2018, for the LPs; the MIP solver
//! follows the design of Achterberg, "Constraint Integer Programming", TU Berlin, 2007).
//!
//! The model goes to HiGHS as one column-wise matrix through the `highs` crate rather than through
//! good_lp's expression layer, which is several times slower to build large models
//! (`docs/ilp.md` has the numbers and the command that measures them).
//!
//! Exactness: HiGHS stops by default at a relative gap of 1e-4 and an absolute gap of 1e-6, and
//! prunes nodes whose bound is within `mip_feasibility_tolerance` (1e-6) of the incumbent. The
//! solver sets both gaps to 0 and the tolerance to 1e-9 unless asked otherwise, so that its optimum
//! agrees with the DP's to 1e-9 relative. It never trusts HiGHS's answer blindly: the returned
//! columns must be within 1e-6 of 0 or 1, they are rounded at 0.5, and the rounded assignment is
//! checked (one option per job, forced jobs placed, capacities kept, objective as HiGHS reported)
//! before the objective is recomputed from the rounded assignment.

use std::time::Instant;

use highs::Model;

use super::{SolveError, Solver, relative_gap, time_limit_text};
use crate::formulation::RoundProblem;
use crate::highs_lp::{self, Answer, ColProblem, HighsError, Limit, OptionValue, Outcome, Sense};
use crate::solution::{Assignment, OBJECTIVE_TOLERANCE, Solution, Status, exact_optimum};
use crate::solution::{IlpStats, Infeasibility, SolveStats, SolverDetail};

const NAME: &str = "ilp";

/// HiGHS's `mip_feasibility_tolerance`. HiGHS prunes a node when its bound is within this of the
/// incumbent, so it is also how far below the optimum the answer may be: 1e-9 absolute keeps that
/// inside MODEL.md's agreement of 1e-9 * max(1, |objective|).
const MIP_FEASIBILITY_TOLERANCE: f64 = 1e-9;

/// How far from 0 or 1 a returned column may be before the answer is refused, and the relative
/// tolerance between HiGHS's objective and the one recomputed from the rounded assignment.
const INTEGRALITY_CHECK: f64 = 1e-6;

/// The ILP solver (HiGHS). Exact by default: both MIP gaps are 0.
///
/// Each solve runs HiGHS on a fresh thread of its own ([`crate::highs_lp`]), so every solve gets
/// the thread count it asks for; a panic inside the binding becomes a [`SolveError::Backend`].
///
/// `time_limit` counts HiGHS's solve only, not the model build (reported as `seconds_build`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Ilp {
    /// Wall-time limit of the HiGHS run in seconds; `None`: no limit.
    pub time_limit: Option<f64>,
    /// Relative gap |bound - incumbent| / |incumbent| at which HiGHS may stop (default 0).
    pub mip_rel_gap: f64,
    /// Absolute gap |bound - incumbent| at which HiGHS may stop (default 0).
    pub mip_abs_gap: f64,
    /// Threads HiGHS may use (default 1; 0 lets HiGHS choose).
    pub threads: usize,
    /// Whether HiGHS runs its MIP presolve (default true, HiGHS's own default). HiGHS 1.16.0's
    /// presolve returns a suboptimal answer as optimal on rare round problems
    /// (`tests/data/highs-presolve-defect.json`: 15.8233 against the optimum 15.8835, which it
    /// finds with presolve off; the same class of defect as ERGO-Code/HiGHS#2961 and #3094). The
    /// baseline keeps HiGHS's default, so that speed comparisons are fair; the property tests that
    /// use the ILP as an exactness check turn presolve off.
    pub presolve: bool,
}

impl Default for Ilp {
    fn default() -> Self {
        Ilp {
            time_limit: None,
            mip_rel_gap: 0.0,
            mip_abs_gap: 0.0,
            threads: 1,
            presolve: true,
        }
    }
}

impl Ilp {
    /// Sets the wall-time limit of the HiGHS run, in seconds (`None`: no limit).
    pub fn with_time_limit(mut self, seconds: Option<f64>) -> Self {
        self.time_limit = seconds;
        self
    }

    /// Sets the relative MIP gap at which HiGHS may stop.
    pub fn with_mip_rel_gap(mut self, gap: f64) -> Self {
        self.mip_rel_gap = gap;
        self
    }

    /// Sets the absolute MIP gap at which HiGHS may stop.
    pub fn with_mip_abs_gap(mut self, gap: f64) -> Self {
        self.mip_abs_gap = gap;
        self
    }

    /// Sets the threads HiGHS may use (0 lets HiGHS choose; at most [`MAX_THREADS`], or the solve
    /// fails with [`SolveError::Backend`] before HiGHS starts).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Turns HiGHS's MIP presolve on (the default) or off (see [`Ilp::presolve`]).
    pub fn with_presolve(mut self, presolve: bool) -> Self {
        self.presolve = presolve;
        self
    }
}

fn backend(message: impl Into<String>) -> SolveError {
    SolveError::Backend {
        solver: NAME,
        message: message.into(),
    }
}

/// The exponent of the largest value of the objective HiGHS sees ([`objective_scale`]).
const SCALED_EXPONENT: i32 = 20;

/// The power of two the objective is multiplied by before HiGHS sees it, so that the largest
/// value v[j][o] is in [2^20, 2^21). HiGHS's tolerances are absolute (`mip_feasibility_tolerance`,
/// its dual feasibility tolerance of 1e-7): unscaled, values of 1e-7 fall below them and HiGHS
/// calls a poor answer optimal, and values near 1e300 overflow its objective to infinity. With
/// the largest value near 1 the smaller values of a round with spread weights fall below them
/// instead; near 2^20, 2,000 random rounds with weights from 1e-12 to 1e12 had no wrong optimum
/// (docs/ilp.md, "Scaling"). A power of two changes no bit of a value's mantissa, so the scaled
/// problem has the same optimum. Returned as two factors whose product is the scale, each a normal f64 (a scale of
/// 2^1074 for subnormal values does not fit in one).
fn objective_scale(problem: &RoundProblem) -> (f64, f64) {
    let largest = problem
        .jobs
        .iter()
        .flat_map(|j| j.options.iter().map(|o| o.value))
        .fold(0.0f64, f64::max);
    if !(largest > 0.0 && largest.is_finite()) {
        return (1.0, 1.0);
    }
    // floor(log2(largest)) from the bits; subnormals are counted by their leading bit.
    let bits = largest.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let log2 = if exponent == 0 {
        -1075 + (64 - (bits & ((1u64 << 52) - 1)).leading_zeros() as i32)
    } else {
        exponent - 1023
    };
    let shift = SCALED_EXPONENT - log2;
    let first = shift.clamp(-1000, 1000);
    (2f64.powi(first), 2f64.powi(shift - first))
}

/// `v` times the scale of [`objective_scale`].
fn scaled(v: f64, scale: (f64, f64)) -> f64 {
    v * scale.0 * scale.1
}

/// `v` in the units of the instance again: divided by the scale.
fn unscaled(v: f64, scale: (f64, f64)) -> f64 {
    v / scale.0 / scale.1
}

/// Number of columns of the one-hot model: one per admissible option.
fn variables(problem: &RoundProblem) -> usize {
    problem.jobs.iter().map(|j| j.options.len()).sum()
}

/// Builds the one-hot ILP of `problem` as a HiGHS model to maximize, with HiGHS's output off and
/// its default options otherwise. The objective is the values times a power of two that puts the
/// largest in [2^20, 2^21) (docs/ilp.md, "Scaling and the check of HiGHS's optimum"). Columns are
/// the admissible options in job order and, within a job, in the order of [`RoundJob::options`](crate::formulation::RoundJob::options); rows are
/// one per GPU type, then one per job that has an option. O(sum_j |O_j|) time and memory.
///
/// Fails when the model is too large for HiGHS's 32-bit indices or HiGHS refuses it.
pub fn build_model(problem: &RoundProblem) -> Result<Model, SolveError> {
    let pb = scaled_problem(problem, objective_scale(problem))?;
    highs_lp::load(pb, Sense::Maximise, &[]).map_err(highs_error)
}

/// The columns and rows of [`build_model`] with the objective in the instance's units, as
/// `stsfair export` writes it.
pub(super) fn unscaled_problem(problem: &RoundProblem) -> Result<ColProblem, SolveError> {
    scaled_problem(problem, (1.0, 1.0))
}

/// The columns and rows of [`build_model`] with the values times `scale` (the product of its
/// two factors).
fn scaled_problem(problem: &RoundProblem, scale: (f64, f64)) -> Result<ColProblem, SolveError> {
    let columns = variables(problem);
    let rows = problem.types()
        + problem
            .jobs
            .iter()
            .filter(|j| !j.options.is_empty())
            .count();
    // HiGHS indexes rows, columns and nonzeros with 32-bit integers; the binding panics past that.
    let limit = i32::MAX as u128;
    let nonzeros = 2 * columns as u128;
    for (what, needed) in [("nonzeros", nonzeros), ("rows", rows as u128)] {
        if needed > limit {
            return Err(SolveError::TooLarge {
                solver: NAME,
                what,
                needed,
                limit,
                hint: "HiGHS indexes with 32-bit integers; use --solver dp",
            });
        }
    }
    let mut pb = ColProblem::default();
    let capacity: Vec<_> = problem
        .capacity
        .iter()
        .map(|&c| pb.add_row(..=c as f64))
        .collect();
    for job in problem.jobs.iter().filter(|j| !j.options.is_empty()) {
        let lower = if job.may_idle() { 0.0 } else { 1.0 };
        let one = pb.add_row(lower..=1.0);
        for o in &job.options {
            // Units are at most MAX_COUNT * MAX_UNITS, exact in f64.
            pb.add_integer_column(
                scaled(o.value, scale),
                0.0..=1.0,
                [(one, 1.0), (capacity[o.gpu], o.units as f64)],
            );
        }
    }
    Ok(pb)
}

/// The adapter's error as the solver's: HiGHS's reason, and for an option the rule it broke.
fn highs_error(e: HighsError) -> SolveError {
    match e {
        HighsError::OptionRejected { .. } => backend(format!("{e} (gaps and limits must be >= 0)")),
        e => backend(e.to_string()),
    }
}

/// The most threads an [`Ilp`] gives HiGHS. HiGHS makes every worker thread, and a task queue
/// of half a MiB for each, when its first solve starts, in C++ that cannot report a failure: a
/// thousand threads ended in `std::system_error` and ten thousand or more in `std::bad_alloc`,
/// both aborting the process. A MIP solve gains nothing from more threads than cores, and 256
/// is more cores than the machines this runs on have (`stsfair --threads` has the same limit).
pub const MAX_THREADS: usize = 256;

impl Ilp {
    /// HiGHS's options; `scale` is the objective's ([`objective_scale`]), which the absolute gap,
    /// given in the instance's units, is converted by.
    fn options(&self, scale: (f64, f64)) -> Result<Vec<(&'static str, OptionValue)>, SolveError> {
        let abs_gap = scaled(self.mip_abs_gap, scale);
        let abs_gap = if abs_gap.is_finite() || self.mip_abs_gap.is_nan() {
            abs_gap
        } else {
            f64::MAX
        };
        if self.threads > MAX_THREADS {
            return Err(backend(format!(
                "threads = {} is more than the {MAX_THREADS} the ILP allows (HiGHS makes every \
                 worker thread at its first solve and aborts the process when it cannot)",
                self.threads
            )));
        }
        // At most MAX_THREADS: fits in HiGHS's int.
        let threads = i32::try_from(self.threads).unwrap_or(i32::MAX);
        let mut options = vec![
            ("output_flag", OptionValue::Bool(false)),
            ("mip_rel_gap", OptionValue::Float(self.mip_rel_gap)),
            ("mip_abs_gap", OptionValue::Float(abs_gap)),
            (
                "mip_feasibility_tolerance",
                OptionValue::Float(MIP_FEASIBILITY_TOLERANCE),
            ),
            ("threads", OptionValue::Int(threads)),
        ];
        if !self.presolve {
            options.push(("presolve", OptionValue::Text("off")));
        }
        if let Some(t) = self.time_limit {
            options.push(("time_limit", OptionValue::Float(t)));
        }
        Ok(options)
    }

    fn exact(&self) -> bool {
        self.mip_rel_gap == 0.0 && self.mip_abs_gap == 0.0
    }

    /// Builds, solves and reads the model.
    fn run(&self, problem: &RoundProblem, columns: usize) -> Result<Solution, SolveError> {
        let start = Instant::now();
        let scale = objective_scale(problem);
        let pb = scaled_problem(problem, scale)?;
        let options = self.options(scale)?;
        let seconds_columns = start.elapsed().as_secs_f64();
        let answer = highs_lp::solve(pb, Sense::Maximise, &options).map_err(highs_error)?;
        let limit = match &answer.outcome {
            Outcome::Stopped(Limit::Time) => Some(time_limit_text(self.time_limit)),
            Outcome::Stopped(Limit::Iterations) => Some("the iteration limit".to_string()),
            Outcome::Stopped(Limit::Solutions) => Some("the solution limit".to_string()),
            Outcome::Stopped(Limit::Interrupt) => Some("an interrupt".to_string()),
            Outcome::Stopped(Limit::Memory) => Some("the memory limit".to_string()),
            _ => None,
        };
        let solution = match (&answer.outcome, limit) {
            (Outcome::Optimal, _) => self.read(problem, &answer, columns, true)?,
            (_, Some(_)) if answer.has_solution => self.read(problem, &answer, columns, false)?,
            (_, Some(limit)) => {
                return Err(SolveError::NoSolutionWithinLimit {
                    solver: NAME,
                    limit,
                });
            }
            // Every column lies in [0, 1], so the model cannot be unbounded: HiGHS's presolve says
            // "unbounded or infeasible" when it only proved the second.
            (Outcome::Infeasible { .. }, _) => {
                Solution::infeasible(NAME, problem, Infeasibility::of(problem))
            }
            (_, _) => {
                return Err(backend(format!(
                    "HiGHS ended with model status {}, which gives no answer",
                    answer.status
                )));
            }
        };
        let mut solution = solution;
        solution.stats = SolveStats {
            bound: solution.stats.bound,
            ..SolveStats::of(SolverDetail::Ilp(IlpStats {
                seconds_build: Some(seconds_columns + answer.seconds_load),
                seconds_solve: Some(answer.seconds_solve),
                variables: Some(columns as u64),
                highs_status: Some(answer.status.clone()),
                // Infinite values (no incumbent, no bound) would be written as null: the adapter
                // leaves them out.
                mip_gap: answer.mip_gap,
                nodes: answer.nodes,
            }))
        };
        Ok(solution)
    }

    /// Reads HiGHS's incumbent, rounds it and checks it; `proven`: HiGHS reported optimal.
    fn read(
        &self,
        problem: &RoundProblem,
        answer: &Answer,
        columns: usize,
        proven: bool,
    ) -> Result<Solution, SolveError> {
        let x = &answer.columns;
        if x.len() != columns {
            return Err(backend(format!(
                "HiGHS returned {} column values for {columns} columns",
                x.len()
            )));
        }
        let mut assignments: Vec<Assignment> = vec![None; problem.jobs.len()];
        let mut used = vec![0u64; problem.types()];
        let mut column = 0;
        for (j, job) in problem.jobs.iter().enumerate() {
            for o in &job.options {
                let v = x[column];
                column += 1;
                if !(v.abs() <= INTEGRALITY_CHECK || (v - 1.0).abs() <= INTEGRALITY_CHECK) {
                    return Err(backend(format!(
                        "HiGHS's answer is not integral: job {} option ({}, {}) has x = {v}",
                        problem.job_name(j),
                        o.gpu,
                        o.slot
                    )));
                }
                if v > 0.5 {
                    if assignments[j].is_some() {
                        return Err(backend(format!(
                            "HiGHS's answer runs job {} twice",
                            problem.job_name(j)
                        )));
                    }
                    assignments[j] = Some((o.gpu, o.slot));
                    used[o.gpu] += o.units;
                }
            }
            if !job.may_idle() && assignments[j].is_none() {
                return Err(backend(format!(
                    "HiGHS's answer leaves forced job {} idle",
                    problem.job_name(j)
                )));
            }
        }
        for (k, (&u, &c)) in used.iter().zip(&problem.capacity).enumerate() {
            if u > c {
                let name = problem.type_name(k);
                return Err(backend(format!(
                    "HiGHS's answer uses {u} units of gpu type {name}, capacity {c}"
                )));
            }
        }
        let solution = Solution::from_assignments(NAME, Status::Optimal, problem, assignments);
        let objective = solution.objective.unwrap_or(0.0);
        // HiGHS solved the scaled problem: its objective is compared in its own units.
        let scale = objective_scale(problem);
        let reported = answer.objective;
        let mine = scaled(objective, scale);
        let agree = (mine - reported).abs() <= INTEGRALITY_CHECK * mine.abs().max(1.0);
        if !agree {
            return Err(backend(format!(
                "HiGHS reports objective {} (in the instance's units), its assignment is worth \
                 {objective}",
                unscaled(reported, scale)
            )));
        }
        let bound = answer
            .mip_dual_bound
            .map(|b| unscaled(b, scale))
            .unwrap_or(f64::INFINITY);
        let gap = relative_gap(objective, bound);
        // Proven optimal: HiGHS says so and it was asked for the optimum, or the bound it proved is
        // within the agreement tolerance. An "optimal" under a gap the user loosened is only feasible.
        let within = bound - objective <= OBJECTIVE_TOLERANCE * objective.abs().max(1.0);
        let (status, bound) = if proven && (self.exact() || within) {
            checked_optimum(problem, objective, bound)
        } else {
            (Status::Feasible { gap }, bound)
        };
        let mut solution = Solution { status, ..solution };
        solution.stats.bound = bound.is_finite().then_some(bound);
        Ok(solution)
    }
}

/// HiGHS's "optimal", checked against the exact DP's optimum where the DP solves the round
/// within [`CERTIFY_MAX_STATES`](crate::solution::CERTIFY_MAX_STATES): HiGHS's tolerances are
/// absolute, so a round whose values span more than about nine orders of magnitude has values
/// below them, and its presolve returns suboptimal answers as optimal on rare rounds
/// (docs/ilp.md). Where the DP's optimum is higher, the answer is `feasible` with the gap to it
/// and the DP's optimum is the bound; elsewhere (the DP past its budget) HiGHS's word stands.
fn checked_optimum(problem: &RoundProblem, objective: f64, bound: f64) -> (Status, f64) {
    match exact_optimum(problem) {
        Ok(Some(best)) => {
            let optimum = best.objective.unwrap_or(f64::NEG_INFINITY);
            if objective + OBJECTIVE_TOLERANCE * optimum.abs().max(1.0) >= optimum {
                (Status::Optimal, bound)
            } else {
                let gap = relative_gap(objective, optimum);
                (Status::Feasible { gap }, optimum)
            }
        }
        Ok(None) | Err(_) => (Status::Optimal, bound),
    }
}

impl Solver for Ilp {
    fn name(&self) -> &'static str {
        NAME
    }

    fn solve_problem(&self, problem: &RoundProblem) -> Result<Solution, SolveError> {
        let columns = variables(problem);
        if columns == 0 {
            // No job has an option: HiGHS calls an empty model an error, the answer is plain.
            let solution = if problem.forced().next().is_some() {
                Solution::infeasible(NAME, problem, Infeasibility::of(problem))
            } else {
                Solution::from_assignments(
                    NAME,
                    Status::Optimal,
                    problem,
                    vec![None; problem.jobs.len()],
                )
            };
            return Ok(
                solution.with_stats(SolveStats::of(SolverDetail::Ilp(IlpStats {
                    variables: Some(0),
                    ..IlpStats::default()
                }))),
            );
        }
        self.run(problem, columns)
    }
}
