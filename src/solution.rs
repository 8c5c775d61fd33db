//! Solutions of a round, their `stsfair-solution/1` form, and [`verify`], which checks a solution
//! against its instance without trusting the solver that produced it.

use std::collections::BTreeMap;

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::formulation::{JobClass, RoundProblem, Shortage};
use crate::instance::{Instance, json_message};

/// The format tag of solution documents.
pub const SOLUTION_TAG: &str = "stsfair-solution/1";

/// Relative tolerance of objective comparisons (MODEL.md section 4).
pub const OBJECTIVE_TOLERANCE: f64 = 1e-9;

/// Whether two objective values agree: |a - b| <= 1e-9 * max(1, |a|).
pub fn objectives_agree(a: f64, b: f64) -> bool {
    (a - b).abs() <= OBJECTIVE_TOLERANCE * a.abs().max(1.0)
}

/// How a solve ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Proven optimal.
    Optimal,
    /// A solution found before a limit stopped the solver; `gap` is the relative MIP gap.
    Feasible {
        /// Relative gap between the solution and the best bound.
        gap: f64,
    },
    /// No assignment meets every forced job's minimum.
    Infeasible {
        /// Why: a certificate naming GPU types or forced jobs; its `Display` is the
        /// `stats.reason` of the file format.
        reason: Infeasibility,
    },
}

/// Why a round is infeasible (MODEL.md section 4): what a solver can prove, in a form a program
/// can act on (the round mechanism relaxes by it) and a person can read (`Display`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Infeasibility {
    /// A Hall-type certificate: the forced jobs confined to some GPU types need more units of
    /// them than they hold ([`RoundProblem::shortage`]).
    Shortage(Shortage),
    /// No shortage certificate exists, but the forced jobs' admissible slots do not pack into the
    /// capacities together (proven by the solver's exhaustive search, its bound, or the forced
    /// jobs' reachability, [`RoundProblem::forced_fit`]).
    Unpackable {
        /// Indices of the forced jobs.
        forced: Vec<usize>,
        /// Their ids, in the same order.
        ids: Vec<String>,
    },
    /// A reason read back from a solution file, which carries only its words.
    Reported(String),
}

impl Infeasibility {
    /// The certificate of `problem`, which a solver has found infeasible: the shortage when one
    /// exists, else the forced jobs.
    pub fn of(problem: &RoundProblem) -> Infeasibility {
        if let Some(s) = problem.shortage() {
            return Infeasibility::Shortage(s);
        }
        let forced: Vec<usize> = problem.forced().collect();
        let ids = forced.iter().map(|&j| problem.job_name(j)).collect();
        Infeasibility::Unpackable { forced, ids }
    }
}

impl fmt::Display for Infeasibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Infeasibility::Shortage(s) => write!(
                f,
                "{} forced jobs can only run on gpu types [{}], which need at least {} units there but hold {}: short by {} units",
                s.jobs,
                s.type_names.join(", "),
                s.need,
                s.have,
                s.short
            ),
            Infeasibility::Unpackable { ids, .. } => {
                let shown: Vec<&str> = ids.iter().take(10).map(String::as_str).collect();
                write!(
                    f,
                    "the {} forced jobs ({}{}) cannot all be placed at once: their admissible slots do not pack into the capacities of the gpu types",
                    ids.len(),
                    shown.join(", "),
                    if ids.len() > 10 { ", ..." } else { "" }
                )
            }
            Infeasibility::Reported(reason) => f.write_str(reason),
        }
    }
}

/// What a solver reports besides its answer, written under `stats` of the solution file: the
/// fields every solver fills, and the counters of the solver that ran ([`SolverDetail`]). The
/// file's `stats` object is flat (docs/format.md): the detail's fields sit beside `seconds`, and a
/// file is read back into the detail whose fields it holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "WireStats", into = "WireStats")]
#[non_exhaustive]
pub struct SolveStats {
    /// Wall time of deriving the round problem and solving it, in seconds (every solver, through
    /// [`Solver::solve`](crate::Solver::solve)).
    pub seconds: f64,
    /// The best bound proven on the optimum, when a limit stopped the solver (the DP and the ILP).
    pub bound: Option<f64>,
    /// [`Fallback`](crate::Fallback): the solver that refused the problem before this one solved
    /// it.
    pub fallback_from: Option<String>,
    /// The counters of the solver that ran.
    pub detail: SolverDetail,
    /// Keys of a solution file that no field names (the format allows more), kept so that a file
    /// read and written again loses nothing.
    pub other: BTreeMap<String, Value>,
}

/// The counters of one solver, part of [`SolveStats`].
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub enum SolverDetail {
    /// No solver's counters (a solution read from a file that has none).
    #[default]
    None,
    /// The DP (`dp`).
    Dp(DpStats),
    /// The dense DP (`dp-dense`): states created.
    Dense {
        /// States created.
        states: u64,
    },
    /// The ILP (`ilp`, HiGHS).
    Ilp(IlpStats),
    /// Brute force (`brute`): combinations enumerated.
    BruteForce {
        /// Combinations enumerated.
        combinations: u64,
    },
}

/// The DP's counters (docs/solver.md). A solve that stops early fills only the counters of the
/// steps it reached.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct DpStats {
    /// Job classes (jobs with identical choices).
    pub classes: Option<u64>,
    /// Classes left with more than one choice after reduced-cost fixing.
    pub core_classes: Option<u64>,
    /// Jobs in those classes.
    pub core_jobs: Option<u64>,
    /// Gap-deepening runs.
    pub runs: Option<u64>,
    /// The gap below the bound that the last run searched.
    pub gap_searched: Option<f64>,
    /// States created.
    pub states: Option<u64>,
    /// The cells of the dense DP (its grid of unit vectors times the jobs) where it finished the
    /// solve (docs/solver.md step 5, "The dense finish").
    pub dense_cells: Option<u64>,
    /// The Lagrangian upper bound on the optimum.
    pub lagrangian_bound: Option<f64>,
    /// Seconds spent on the bound (multipliers and greedy incumbent).
    pub seconds_bound: Option<f64>,
}

/// The ILP's counters (HiGHS, docs/ilp.md).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct IlpStats {
    /// Seconds building the model.
    pub seconds_build: Option<f64>,
    /// Seconds in HiGHS.
    pub seconds_solve: Option<f64>,
    /// Binary variables (columns).
    pub variables: Option<u64>,
    /// HiGHS's model status, as it names it.
    pub highs_status: Option<String>,
    /// HiGHS's relative MIP gap at the end.
    pub mip_gap: Option<f64>,
    /// Branch-and-bound nodes.
    pub nodes: Option<u64>,
}

impl SolveStats {
    /// Stats that hold `detail` and nothing else yet.
    pub fn of(detail: SolverDetail) -> SolveStats {
        SolveStats {
            detail,
            ..SolveStats::default()
        }
    }

    /// The DP's counters, where the DP ran.
    pub fn dp(&self) -> Option<&DpStats> {
        match &self.detail {
            SolverDetail::Dp(dp) => Some(dp),
            _ => None,
        }
    }

    /// The ILP's counters, where the ILP ran.
    pub fn ilp(&self) -> Option<&IlpStats> {
        match &self.detail {
            SolverDetail::Ilp(ilp) => Some(ilp),
            _ => None,
        }
    }

    /// States created, by the DP or the dense DP.
    pub fn states(&self) -> Option<u64> {
        match &self.detail {
            SolverDetail::Dp(dp) => dp.states,
            SolverDetail::Dense { states } => Some(*states),
            _ => None,
        }
    }
}

/// The flat `stats` object of the file format: every solver's counters side by side, `None`
/// where absent (and left out of the file). [`SolveStats`] is read and written through it.
#[derive(Default, Serialize, Deserialize)]
struct WireStats {
    #[serde(default)]
    seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    classes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    core_classes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    core_jobs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    runs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gap_searched: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    states: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dense_cells: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lagrangian_bound: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seconds_bound: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seconds_build: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seconds_solve: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    variables: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    highs_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mip_gap: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nodes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bound: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    combinations: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fallback_from: Option<String>,
    #[serde(flatten)]
    other: BTreeMap<String, Value>,
}

impl From<SolveStats> for WireStats {
    fn from(stats: SolveStats) -> WireStats {
        let mut wire = WireStats {
            seconds: stats.seconds,
            bound: stats.bound,
            fallback_from: stats.fallback_from,
            other: stats.other,
            ..WireStats::default()
        };
        match stats.detail {
            SolverDetail::None => {}
            SolverDetail::Dp(dp) => {
                wire.classes = dp.classes;
                wire.core_classes = dp.core_classes;
                wire.core_jobs = dp.core_jobs;
                wire.runs = dp.runs;
                wire.gap_searched = dp.gap_searched;
                wire.states = dp.states;
                wire.dense_cells = dp.dense_cells;
                wire.lagrangian_bound = dp.lagrangian_bound;
                wire.seconds_bound = dp.seconds_bound;
            }
            SolverDetail::Dense { states } => wire.states = Some(states),
            SolverDetail::Ilp(ilp) => {
                wire.seconds_build = ilp.seconds_build;
                wire.seconds_solve = ilp.seconds_solve;
                wire.variables = ilp.variables;
                wire.highs_status = ilp.highs_status;
                wire.mip_gap = ilp.mip_gap;
                wire.nodes = ilp.nodes;
            }
            SolverDetail::BruteForce { combinations } => wire.combinations = Some(combinations),
        }
        wire
    }
}

impl From<WireStats> for SolveStats {
    /// The detail is the ILP's where the object holds an ILP counter, else the DP's where it
    /// holds one of the DP's other than `states`, else brute force's or the dense DP's; counters
    /// of another solver than the one chosen stay in `other`, so that nothing read is lost.
    fn from(wire: WireStats) -> SolveStats {
        let WireStats {
            seconds,
            classes,
            core_classes,
            core_jobs,
            runs,
            gap_searched,
            states,
            dense_cells,
            lagrangian_bound,
            seconds_bound,
            seconds_build,
            seconds_solve,
            variables,
            highs_status,
            mip_gap,
            nodes,
            bound,
            combinations,
            fallback_from,
            mut other,
        } = wire;
        let ilp = IlpStats {
            seconds_build,
            seconds_solve,
            variables,
            highs_status,
            mip_gap,
            nodes,
        };
        let dp = DpStats {
            classes,
            core_classes,
            core_jobs,
            runs,
            gap_searched,
            states,
            dense_cells,
            lagrangian_bound,
            seconds_bound,
        };
        let dp_only = DpStats {
            states: None,
            ..dp.clone()
        };
        let mut combinations = combinations;
        let detail = if ilp != IlpStats::default() {
            keep_in(&mut other, &dp);
            SolverDetail::Ilp(ilp)
        } else if dp_only != DpStats::default() {
            SolverDetail::Dp(dp)
        } else if let Some(combinations) = combinations.take() {
            keep_in(&mut other, &dp);
            SolverDetail::BruteForce { combinations }
        } else if let Some(states) = states {
            SolverDetail::Dense { states }
        } else {
            SolverDetail::None
        };
        if let Some(c) = combinations {
            other.insert("combinations".into(), Value::from(c));
        }
        SolveStats {
            seconds,
            bound,
            fallback_from,
            detail,
            other,
        }
    }
}

/// Writes the DP's counters that are set into `other` (read beside another solver's).
fn keep_in(other: &mut BTreeMap<String, Value>, dp: &DpStats) {
    let wire = WireStats::from(SolveStats::of(SolverDetail::Dp(dp.clone())));
    if let Ok(Value::Object(map)) = serde_json::to_value(&wire) {
        for (key, value) in map {
            if key != "seconds" {
                other.insert(key, value);
            }
        }
    }
}

impl Status {
    /// The status word of the file format.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Optimal => "optimal",
            Status::Feasible { .. } => "feasible",
            Status::Infeasible { .. } => "infeasible",
        }
    }
}

/// What a job does this round: an option (GPU type index and slot size) or idle.
pub type Assignment = Option<(usize, u32)>;

/// A solver's answer for one round.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// Name of the solver ("dp", "ilp", "brute").
    pub solver: String,
    /// How the solve ended.
    pub status: Status,
    /// Sum of v over the assigned jobs; `None` when infeasible.
    pub objective: Option<f64>,
    /// One entry per job, in instance order; empty when infeasible.
    pub assignments: Vec<Assignment>,
    /// Units used per GPU type.
    pub units_used: Vec<u64>,
    /// Solver statistics, written under `stats`.
    pub stats: SolveStats,
}

impl Solution {
    /// Builds a feasible solution from assignments, computing objective and units from `problem`.
    /// Assignments must name admissible options (solvers only produce those).
    pub fn from_assignments(
        solver: &str,
        status: Status,
        problem: &RoundProblem,
        assignments: Vec<Assignment>,
    ) -> Solution {
        let mut units = vec![0u64; problem.types()];
        let mut objective = 0.0;
        for (job, a) in problem.jobs.iter().zip(&assignments) {
            if let Some((gpu, slot)) = *a
                && let Some(o) = job.options.iter().find(|o| o.gpu == gpu && o.slot == slot)
            {
                units[gpu] += o.units;
                objective += o.value;
            }
        }
        Solution::from_totals(solver, status, assignments, objective, units)
    }

    /// A solution whose objective and units per type the solver has summed itself, as
    /// [`Solution::from_assignments`] would (the DP reads them from its classes, whose few
    /// choices are in cache where 10,000 jobs' options are not).
    pub(crate) fn from_totals(
        solver: &str,
        status: Status,
        assignments: Vec<Assignment>,
        objective: f64,
        units_used: Vec<u64>,
    ) -> Solution {
        Solution {
            solver: solver.to_string(),
            status,
            objective: Some(objective),
            assignments,
            units_used,
            stats: SolveStats::default(),
        }
    }

    /// An infeasible answer with its certificate.
    pub fn infeasible(solver: &str, problem: &RoundProblem, reason: Infeasibility) -> Solution {
        Solution {
            solver: solver.to_string(),
            status: Status::Infeasible { reason },
            objective: None,
            assignments: Vec::new(),
            units_used: vec![0; problem.types()],
            stats: SolveStats::default(),
        }
    }

    /// Sets the statistics.
    pub fn with_stats(mut self, stats: SolveStats) -> Self {
        self.stats = stats;
        self
    }

    /// The solution as a `stsfair-solution/1` JSON value.
    pub fn to_json(&self, instance: &Instance) -> Value {
        let mut m = Map::new();
        m.insert("format".into(), SOLUTION_TAG.into());
        m.insert(
            "instance".into(),
            instance.name().map_or(Value::Null, |n| n.into()),
        );
        m.insert("solver".into(), self.solver.clone().into());
        m.insert("status".into(), self.status.as_str().into());
        m.insert(
            "objective".into(),
            self.objective.map_or(Value::Null, Value::from),
        );
        let assignments = instance
            .jobs()
            .iter()
            .zip(&self.assignments)
            .map(|(job, a)| match a {
                Some((gpu, slot)) => serde_json::json!({
                    "job": job.id(), "gpu": instance.gpu_types()[*gpu].name(), "slot": slot
                }),
                None => serde_json::json!({ "job": job.id(), "idle": true }),
            })
            .collect();
        m.insert("assignments".into(), Value::Array(assignments));
        let units: Map<String, Value> = instance
            .gpu_types()
            .iter()
            .zip(&self.units_used)
            .map(|(g, u)| (g.name().to_string(), Value::from(*u)))
            .collect();
        m.insert("units_used".into(), Value::Object(units));
        // Keys in alphabetical order, as the format's readers have always seen them.
        let mut stats: BTreeMap<String, Value> = match serde_json::to_value(&self.stats) {
            Ok(Value::Object(fields)) => fields.into_iter().collect(),
            _ => BTreeMap::new(),
        };
        match &self.status {
            Status::Feasible { gap } => {
                stats.insert("gap".into(), Value::from(*gap));
            }
            Status::Infeasible { reason } => {
                stats.insert("reason".into(), reason.to_string().into());
            }
            Status::Optimal => {}
        }
        m.insert("stats".into(), Value::Object(stats.into_iter().collect()));
        Value::Object(m)
    }

    /// Reads a `stsfair-solution/1` document for `instance`, resolving names to indices.
    pub fn from_json(instance: &Instance, text: &str) -> Result<Solution, VerifyError> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RawSolution {
            format: String,
            #[allow(dead_code)]
            instance: Option<String>,
            solver: String,
            status: String,
            objective: Option<f64>,
            assignments: Vec<RawAssignment>,
            units_used: BTreeMap<String, u64>,
            stats: Map<String, Value>,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RawAssignment {
            job: String,
            gpu: Option<String>,
            slot: Option<u32>,
            idle: Option<bool>,
        }
        let de = &mut serde_json::Deserializer::from_str(text);
        let raw: RawSolution =
            serde_path_to_error::deserialize(&mut *de).map_err(|e| VerifyError::Malformed {
                path: e.path().to_string(),
                message: json_message(text, e.inner()),
            })?;
        // serde stops reading after the first value: text after it must be refused here.
        de.end().map_err(|e| VerifyError::Malformed {
            path: ".".into(),
            message: e.to_string(),
        })?;
        let bad = |path: String, message: String| VerifyError::Malformed { path, message };
        if raw.format != SOLUTION_TAG {
            return Err(bad("format".into(), format!("must be \"{SOLUTION_TAG}\"")));
        }
        let mut raw_stats = raw.stats;
        // `gap` and `reason` belong to the status; the other keys are the solver's statistics.
        let gap = raw_stats.remove("gap");
        let reason = raw_stats.remove("reason");
        let status = match raw.status.as_str() {
            "optimal" => Status::Optimal,
            // The format puts a feasible solution's gap in `stats.gap`: a number >= 0, or null
            // where it is unbounded (no finite bound, or an objective of 0 under a positive
            // one; JSON has no infinity, so the writer's f64::INFINITY comes out as null).
            "feasible" => Status::Feasible {
                gap: match gap.as_ref().map(|v| (v, v.as_f64())) {
                    Some((Value::Null, _)) => f64::INFINITY,
                    Some((_, Some(g))) if g >= 0.0 => g,
                    _ => {
                        let found = gap.map_or("nothing".to_string(), |v| v.to_string());
                        return Err(bad(
                            "stats.gap".into(),
                            format!(
                                "a feasible solution gives its gap as a number >= 0 (null where \
                                 unbounded), found {found}"
                            ),
                        ));
                    }
                },
            },
            "infeasible" => Status::Infeasible {
                reason: Infeasibility::Reported(
                    reason
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default(),
                ),
            },
            other => return Err(bad("status".into(), format!("unknown status {other:?}"))),
        };
        // A feasible answer lists every job: one missing anywhere (first or last) is the same
        // defect, found before the ids are matched.
        let listed = raw.assignments.len();
        if !matches!(status, Status::Infeasible { .. }) && listed != instance.jobs().len() {
            return Err(VerifyError::JobCount {
                expected: instance.jobs().len(),
                got: listed,
            });
        }
        let mut assignments = Vec::with_capacity(raw.assignments.len());
        for (i, a) in raw.assignments.iter().enumerate() {
            let p = format!("assignments[{i}]");
            let Some(expected) = instance.jobs().get(i) else {
                return Err(VerifyError::JobCount {
                    expected: instance.jobs().len(),
                    got: raw.assignments.len(),
                });
            };
            if a.job != expected.id() {
                return Err(bad(
                    format!("{p}.job"),
                    format!(
                        "must be {:?}: jobs are listed once each, in instance order (got {:?})",
                        expected.id(),
                        a.job
                    ),
                ));
            }
            let entry = match (&a.gpu, a.slot, a.idle) {
                (None, None, Some(true)) => None,
                (Some(g), Some(s), None) => {
                    let Some(k) = instance.gpu_index(g) else {
                        return Err(bad(
                            format!("{p}.gpu"),
                            format!("names no GPU type of the instance ({g:?})"),
                        ));
                    };
                    Some((k, s))
                }
                _ => {
                    return Err(bad(
                        p,
                        "must be either {\"gpu\", \"slot\"} or {\"idle\": true}".into(),
                    ));
                }
            };
            assignments.push(entry);
        }
        let mut units_used = vec![0u64; instance.gpu_types().len()];
        for (name, u) in &raw.units_used {
            let Some(k) = instance.gpu_index(name) else {
                return Err(bad(
                    format!("units_used.{name}"),
                    "names no GPU type of the instance".into(),
                ));
            };
            units_used[k] = *u;
        }
        let stats = serde_json::from_value(Value::Object(raw_stats)).map_err(|e| {
            bad(
                "stats".into(),
                format!("{e} (stats holds the counters of docs/format.md)"),
            )
        })?;
        Ok(Solution {
            solver: raw.solver,
            status,
            objective: raw.objective,
            assignments,
            units_used,
            stats,
        })
    }
}

/// Why a solution does not check out against its instance.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The solution document is not of the expected shape.
    #[error("solution {path}: {message}")]
    Malformed {
        /// JSON path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Not exactly one assignment per job.
    #[error("solution lists {got} jobs, the instance has {expected}")]
    JobCount {
        /// Jobs in the instance.
        expected: usize,
        /// Assignments in the solution.
        got: usize,
    },
    /// A job runs an option it does not have or that can never fit.
    #[error("job {job}: ({gpu}, {slot}) is not an option of the job")]
    NoSuchOption {
        /// Job id.
        job: String,
        /// GPU type name.
        gpu: String,
        /// Slot size.
        slot: u32,
    },
    /// A forced job idles or runs an option below its minimum service.
    #[error("job {job}: {what}")]
    NotAdmissible {
        /// Job id.
        job: String,
        /// Which rule failed.
        what: String,
    },
    /// A GPU type is over capacity.
    #[error("gpu type {gpu}: {used} units used, capacity {capacity}")]
    OverCapacity {
        /// GPU type name.
        gpu: String,
        /// Units the assignments use.
        used: u64,
        /// C_k.
        capacity: u64,
    },
    /// The reported units used differ from the recomputed ones.
    #[error("gpu type {gpu}: units_used says {reported}, the assignments use {actual}")]
    UnitsMismatch {
        /// GPU type name.
        gpu: String,
        /// As reported.
        reported: u64,
        /// As recomputed.
        actual: u64,
    },
    /// The reported objective differs from the recomputed one by more than 1e-9 relative.
    #[error("objective says {}, the assignments are worth {actual:?}", or_null(*.reported))]
    ObjectiveMismatch {
        /// As reported.
        reported: Option<f64>,
        /// As recomputed.
        actual: f64,
    },
    /// An `optimal` answer worth less than a solution the exact DP finds when [`verify`]
    /// re-solves the round ([`exact_optimum`]); the DP's solution is checked like any other.
    #[error(
        "the solution says optimal with objective {claimed:?}, but the round's optimum is at least {optimum:?} (the exact DP's re-solve, checked like any solution)"
    )]
    NotOptimal {
        /// The objective of the solution, recomputed.
        claimed: f64,
        /// The optimum of the re-solve.
        optimum: f64,
    },
    /// A `feasible` answer whose gap does not cover the distance to a solution the exact DP
    /// finds: the optimum is more than objective * (1 + gap).
    #[error(
        "the solution says feasible with objective {claimed:?} and gap {gap:?}, but the round's optimum is at least {optimum:?} (the exact DP's re-solve, checked like any solution), more than objective * (1 + gap)"
    )]
    GapUnderstated {
        /// The objective of the solution, recomputed.
        claimed: f64,
        /// The gap it states.
        gap: f64,
        /// The optimum of the re-solve.
        optimum: f64,
    },
    /// An infeasible answer that carries assignments or an objective.
    #[error("an infeasible solution must have no assignments and a null objective")]
    InfeasibleWithAssignments,
    /// An infeasible answer to a round whose forced jobs all fit at once (each on an
    /// admissible option, every type within its units, the other jobs idle): the round has a
    /// solution ([`RoundProblem::forced_fit`]).
    #[error(
        "the solution says infeasible, but the {forced} forced jobs fit together on admissible slots (the round has a solution)"
    )]
    FeasibleClaimedInfeasible {
        /// Number of forced jobs.
        forced: usize,
    },
}

/// A reported number as the file writes it (`null` for none; 1e300, not 300 digits).
fn or_null(v: Option<f64>) -> String {
    v.map_or_else(|| "null".to_string(), |x| format!("{x:?}"))
}

/// Word operations [`verify`] lets the forced jobs' reachability take
/// ([`RoundProblem::forced_fit`]) to check an infeasible answer: 2^26, tens of milliseconds.
pub const VERIFY_FIT_WORK: u64 = 1 << 26;

/// What proves an infeasible answer ([`verify`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Certificate {
    /// A Hall-type shortage: the forced jobs confined to some GPU types need more units than they
    /// hold ([`RoundProblem::shortage`]).
    Shortage(Shortage),
    /// No shortage, but the forced jobs' admissible options do not pack into the capacities
    /// ([`RoundProblem::forced_fit`]).
    ForcedJobsDoNotPack,
}

/// The most states per layer of the exact DP that [`verify`] (and the ILP's check of HiGHS's
/// optimum) re-solves a round with: 2^20, about 100 MiB while a layer is built; all its runs
/// together may create twice as many ([`Dp::max_states`](crate::Dp::max_states)). Past it the
/// round's optimality is not certified.
pub const CERTIFY_MAX_STATES: usize = 1 << 20;

/// The most bytes of the dense DP's grid that [`exact_optimum`] tries first: 16 MiB. Past it,
/// the fast DP within [`CERTIFY_MAX_STATES`].
pub const CERTIFY_DENSE_BYTES: u64 = 16 << 20;

/// What [`verify`] established about the optimality of a feasible answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Optimality {
    /// The exact DP re-solved the round within [`CERTIFY_MAX_STATES`] and its optimum agrees
    /// with the solution's objective (1e-9 relative, [`objectives_agree`]). For a `feasible`
    /// answer: it is optimal although it does not say so.
    Certified {
        /// The re-solved optimum.
        optimum: f64,
    },
    /// A `feasible` answer below the re-solved optimum, by no more than its gap says.
    Suboptimal {
        /// The re-solved optimum.
        optimum: f64,
    },
    /// Not certified: why, in words (the re-solve is past its budget, or its answer did not
    /// check out).
    NotCertified {
        /// Why.
        reason: String,
    },
    /// An infeasible answer: there is no objective to certify.
    NotApplicable,
}

impl Optimality {
    /// Whether the answer is proven optimal.
    pub fn is_certified(&self) -> bool {
        matches!(self, Optimality::Certified { .. })
    }
}

/// The optimum of `problem` by an exact DP (the dense DP within [`CERTIFY_DENSE_BYTES`], else
/// the fast DP within [`CERTIFY_MAX_STATES`]): `Ok(Some(solution))`
/// for a feasible round (its objective recomputed from its assignment), `Ok(None)` for an
/// infeasible one, `Err(reason)` when the DP refuses it as too large or fails.
pub fn exact_optimum(problem: &RoundProblem) -> Result<Option<Solution>, String> {
    exact_optimum_within(problem, CERTIFY_BUDGET)
}

/// The budget of the exact re-solve: bytes of the dense DP's grid, then states per layer of the
/// fast DP.
#[derive(Debug, Clone, Copy)]
struct CertifyBudget {
    dense_bytes: u64,
    max_states: usize,
}

/// The budget of [`exact_optimum`] and [`verify`].
const CERTIFY_BUDGET: CertifyBudget = CertifyBudget {
    dense_bytes: CERTIFY_DENSE_BYTES,
    max_states: CERTIFY_MAX_STATES,
};

/// [`exact_optimum`] within `budget`.
fn exact_optimum_within(
    problem: &RoundProblem,
    budget: CertifyBudget,
) -> Result<Option<Solution>, String> {
    use crate::solvers::Solver;
    // The dense DP first, where its grid fits the budget's bytes: it compares values without
    // tolerances and shares no bound with the fast DP.
    let dense = crate::solvers::DenseDp::default().with_max_bytes(budget.dense_bytes);
    let answer = match dense.solve_problem(problem) {
        Err(crate::solvers::SolveError::TooLarge { .. }) => crate::solvers::Dp {
            max_states: budget.max_states,
            ..crate::solvers::Dp::default()
        }
        .solve_problem(problem),
        other => other,
    };
    match answer {
        Ok(s) if s.status == Status::Optimal => Ok(Some(s)),
        Ok(s) if matches!(s.status, Status::Infeasible { .. }) => Ok(None),
        Ok(s) => Err(format!(
            "the exact DP's re-solve answered {}",
            s.status.as_str()
        )),
        Err(e) => Err(format!("the exact DP's re-solve is past its budget: {e}")),
    }
}

/// What [`verify`] established.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Verified {
    /// The recomputed objective (None for an infeasible answer).
    pub objective: Option<f64>,
    /// For an infeasible answer: what proves it, a Hall-type shortage certificate
    /// ([`RoundProblem::shortage`], tried first) or the forced jobs' options not packing into
    /// the capacities ([`RoundProblem::forced_fit`]). `None` for a feasible answer, and for an
    /// infeasible claim that could not be checked: no shortage, and the reachability would take
    /// more than [`VERIFY_FIT_WORK`] word operations or more than
    /// [`MAX_FIT_WORDS`](crate::formulation::MAX_FIT_WORDS) words.
    pub certificate: Option<Certificate>,
    /// Whether an infeasible answer is proven: `certificate.is_some()`.
    pub infeasibility_certified: bool,
    /// For a feasible answer: whether the exact DP's re-solve certifies it optimal
    /// ([`Optimality`]); [`Optimality::NotApplicable`] for an infeasible one.
    pub optimality: Optimality,
}

/// Checks `solution` against `instance`, recomputing everything from the input: every job once
/// and in order, each option a fitting option of its job, every forced job on an admissible
/// option (MODEL.md section 3), capacities, units used and the objective (1e-9 relative).
///
/// For an `infeasible` answer it checks the form, then the claim: a shortage certificate
/// proves it, and so does the forced jobs' reachability ([`RoundProblem::forced_fit`]), which
/// decides it exactly and rejects a false claim (the forced jobs fit: the round has a
/// solution). [`Verified::certificate`] says which proved it. A claim that neither proves (the
/// reachability past [`VERIFY_FIT_WORK`] word operations or its memory limit) is reported as
/// not certified (no certificate), not rejected.
///
/// For a feasible answer it then re-solves the round with the exact DP within
/// [`CERTIFY_MAX_STATES`] ([`exact_optimum`]) and checks the DP's answer the same way:
/// [`Verified::optimality`] is [`Optimality::Certified`] where the objectives agree (1e-9
/// relative); an `optimal` claim below the re-solved optimum is [`VerifyError::NotOptimal`], a
/// `feasible` one below it by more than its gap [`VerifyError::GapUnderstated`]; past the budget
/// the answer is valid and [`Optimality::NotCertified`].
/// O(n * |O| + 2^K n), plus at most [`VERIFY_FIT_WORK`] word operations for an infeasible
/// answer.
pub fn verify(instance: &Instance, solution: &Solution) -> Result<Verified, VerifyError> {
    verify_within(instance, solution, CERTIFY_BUDGET)
}

/// [`verify`] with the exact re-solve within `budget`.
fn verify_within(
    instance: &Instance,
    solution: &Solution,
    budget: CertifyBudget,
) -> Result<Verified, VerifyError> {
    let problem = RoundProblem::new(instance);
    let mut verified = verify_claim(instance, &problem, solution)?;
    if let Some(objective) = verified.objective {
        verified.optimality = certify(instance, &problem, &solution.status, objective, budget)?;
    }
    Ok(verified)
}

/// [`verify`] without the optimality: the form, the feasibility and the objective of a
/// feasible answer, the certificate of an infeasible one; [`Verified::optimality`] is
/// [`Optimality::NotCertified`]. For the solution of another objective over the same
/// assignments (a round solved with priced forced jobs or a second stage, docs/rounds.md),
/// whose `optimal` is of that objective, not of the instance's.
pub fn verify_feasible(instance: &Instance, solution: &Solution) -> Result<Verified, VerifyError> {
    verify_claim(instance, &RoundProblem::new(instance), solution)
}

/// The optimality of a feasible answer worth `objective` (recomputed), by the exact DP's
/// re-solve ([`exact_optimum`]) whose answer is itself checked by [`verify_claim`]: an `optimal`
/// claim below it is [`VerifyError::NotOptimal`], a `feasible` one below it by more than its
/// gap is [`VerifyError::GapUnderstated`].
fn certify(
    instance: &Instance,
    problem: &RoundProblem,
    status: &Status,
    objective: f64,
    budget: CertifyBudget,
) -> Result<Optimality, VerifyError> {
    let not_certified = |reason: String| Ok(Optimality::NotCertified { reason });
    let witness = match exact_optimum_within(problem, budget) {
        Ok(Some(w)) => w,
        Ok(None) => {
            return not_certified(
                "the exact DP's re-solve answered infeasible to a round with a valid solution"
                    .into(),
            );
        }
        Err(reason) => return not_certified(reason),
    };
    let optimum = match verify_claim(instance, problem, &witness) {
        Ok(Verified {
            objective: Some(o), ..
        }) => o,
        Ok(_) => return not_certified("the exact DP's re-solve has no objective".into()),
        Err(e) => return not_certified(format!("the exact DP's re-solve does not check: {e}")),
    };
    let tolerance = OBJECTIVE_TOLERANCE * optimum.abs().max(1.0);
    if objective + tolerance >= optimum {
        // At least the re-solved optimum (more only by the DP's own defect, which the witness
        // check cannot see): certified where they agree.
        return if objectives_agree(optimum, objective) {
            Ok(Optimality::Certified { optimum })
        } else {
            not_certified(format!(
                "the exact DP's re-solve found {optimum:?}, less than the solution's {objective:?}"
            ))
        };
    }
    match *status {
        Status::Feasible { gap } if objective * (1.0 + gap) + tolerance >= optimum => {
            Ok(Optimality::Suboptimal { optimum })
        }
        Status::Feasible { gap } => Err(VerifyError::GapUnderstated {
            claimed: objective,
            gap,
            optimum,
        }),
        _ => Err(VerifyError::NotOptimal {
            claimed: objective,
            optimum,
        }),
    }
}

/// [`verify`] without the optimality: the form, the feasibility and the objective of a
/// feasible answer, the certificate of an infeasible one.
fn verify_claim(
    instance: &Instance,
    problem: &RoundProblem,
    solution: &Solution,
) -> Result<Verified, VerifyError> {
    if let Status::Infeasible { .. } = solution.status {
        if !solution.assignments.is_empty() || solution.objective.is_some() {
            return Err(VerifyError::InfeasibleWithAssignments);
        }
        // The shortage first: O(2^K n), where the reachability may take up to VERIFY_FIT_WORK.
        let certificate = match problem.shortage() {
            Some(s) => Some(Certificate::Shortage(s)),
            None => match problem.forced_fit(VERIFY_FIT_WORK) {
                Some(false) => Some(Certificate::ForcedJobsDoNotPack),
                Some(true) => {
                    return Err(VerifyError::FeasibleClaimedInfeasible {
                        forced: problem.forced().count(),
                    });
                }
                None => None,
            },
        };
        return Ok(Verified {
            objective: None,
            infeasibility_certified: certificate.is_some(),
            certificate,
            optimality: Optimality::NotApplicable,
        });
    }
    if solution.assignments.len() != instance.jobs().len() {
        return Err(VerifyError::JobCount {
            expected: instance.jobs().len(),
            got: solution.assignments.len(),
        });
    }
    let types = instance.gpu_types();
    let mut used = vec![0u64; types.len()];
    let mut objective = 0.0;
    for ((job, round), a) in instance
        .jobs()
        .iter()
        .zip(&problem.jobs)
        .zip(&solution.assignments)
    {
        match *a {
            None => {
                if let JobClass::Forced { .. } = round.class {
                    return Err(VerifyError::NotAdmissible {
                        job: job.id().to_string(),
                        what: format!("is forced (m_j = {}) but idles", round.minimum),
                    });
                }
            }
            Some((gpu, slot)) => {
                let name = types
                    .get(gpu)
                    .map_or_else(|| format!("#{gpu}"), |g| g.name().to_string());
                let Some(opt) = job
                    .options()
                    .iter()
                    .find(|o| o.gpu == gpu && o.slot == slot)
                else {
                    return Err(VerifyError::NoSuchOption {
                        job: job.id().to_string(),
                        gpu: name,
                        slot,
                    });
                };
                // Recompute sigma and v from the raw throughput, independently of `problem`.
                let s = opt.throughput / round.fair_rate;
                if let JobClass::Forced { cannot_catch_up } = round.class {
                    let ok = if cannot_catch_up {
                        let best = job
                            .options()
                            .iter()
                            .map(|o| o.throughput / round.fair_rate)
                            .fold(f64::NEG_INFINITY, f64::max);
                        s == best
                    } else {
                        s >= round.minimum
                    };
                    if !ok {
                        return Err(VerifyError::NotAdmissible {
                            job: job.id().to_string(),
                            what: format!(
                                "is forced (m_j = {}) but ({name}, {slot}) gives sigma = {s}",
                                round.minimum
                            ),
                        });
                    }
                }
                used[gpu] += opt.units;
                objective += job.weight() * (opt.throughput / round.max_throughput);
            }
        }
    }
    for (k, g) in types.iter().enumerate() {
        if used[k] > g.capacity() {
            return Err(VerifyError::OverCapacity {
                gpu: g.name().to_string(),
                used: used[k],
                capacity: g.capacity(),
            });
        }
        let reported = solution.units_used.get(k).copied().unwrap_or(0);
        if reported != used[k] {
            return Err(VerifyError::UnitsMismatch {
                gpu: g.name().to_string(),
                reported,
                actual: used[k],
            });
        }
    }
    match solution.objective {
        Some(r) if objectives_agree(objective, r) => {}
        reported => {
            return Err(VerifyError::ObjectiveMismatch {
                reported,
                actual: objective,
            });
        }
    }
    Ok(Verified {
        objective: Some(objective),
        certificate: None,
        infeasibility_certified: false,
        optimality: Optimality::NotCertified {
            reason: "not checked".into(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dp, Instance, JobSpec, Solver};

    /// An optimal answer whose exact re-solve is past the budget is valid and "not certified",
    /// naming the budget: the dense DP refuses its grid and the fast DP its states. The round
    /// (the shipped 36-GPU Gavel round of 300 jobs) is certified within the default budget.
    #[test]
    fn a_re_solve_past_its_budget_leaves_optimality_not_certified() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/gavel-36x3-300.json");
        let instance = Instance::from_path(&path).unwrap();
        let solution = Dp::default().solve(&instance).unwrap();
        assert_eq!(solution.status, Status::Optimal);
        assert!(
            verify(&instance, &solution)
                .unwrap()
                .optimality
                .is_certified()
        );
        let tiny = CertifyBudget {
            dense_bytes: 0,
            max_states: 1,
        };
        let verified = verify_within(&instance, &solution, tiny).unwrap();
        assert_eq!(verified.objective, solution.objective);
        assert_eq!(
            verified.optimality,
            Optimality::NotCertified {
                reason: "the exact DP's re-solve is past its budget: dp: the instance needs 3 \
                         states over all gap-deepening runs, more than the limit of 2; raise the \
                         limit or use --solver ilp"
                    .into()
            }
        );
    }

    /// The message names the reported objective as the file writes it: `null`, or 1e300 rather
    /// than its 301 digits (not Rust's `Some(30.2)`, `None`).
    #[test]
    fn an_objective_mismatch_prints_the_numbers_as_written() {
        let says = |reported| {
            VerifyError::ObjectiveMismatch {
                reported,
                actual: 29.25,
            }
            .to_string()
        };
        assert_eq!(
            says(Some(30.25)),
            "objective says 30.25, the assignments are worth 29.25"
        );
        assert_eq!(
            says(None),
            "objective says null, the assignments are worth 29.25"
        );
        assert_eq!(
            says(Some(1e300)),
            "objective says 1e300, the assignments are worth 29.25"
        );
    }

    /// One job that fits one v100: every solver answers it `optimal`.
    fn one_job() -> Instance {
        Instance::builder()
            .gpu_type("v100", 1, 4, &[1, 2, 4])
            .job(JobSpec::new("a").time("v100", 4, 0.25))
            .build()
            .unwrap()
    }

    fn one_gpu_two_forced() -> Instance {
        // Two jobs forced onto one whole GPU: the v100 holds 4 units, they need 8.
        let job = |id: &str| JobSpec::new(id).time("v100", 4, 1.0).deficit(5.0);
        Instance::builder()
            .gpu_type("v100", 1, 4, &[4])
            .job(job("a"))
            .job(job("b"))
            .build()
            .unwrap()
    }

    /// A solution file with a non-finite number (what `json.dumps` writes for `float("nan")`)
    /// is refused by name, not as serde_json's "expected value", with the reader's position
    /// after the name; text that only starts like the words is left to serde_json.
    #[test]
    fn non_finite_numbers_are_named() {
        let instance = one_gpu_two_forced();
        let text = Dp::default()
            .solve(&instance)
            .unwrap()
            .to_json(&instance)
            .to_string();
        let objective = text.find("\"objective\":").unwrap() + "\"objective\":".len();
        for (word, named) in [
            ("NaN", Some("NaN")),
            ("Infinity", Some("Infinity")),
            ("-Infinity", Some("-Infinity")),
            ("Nah", None),
        ] {
            let end = objective + text[objective..].find([',', '}']).unwrap();
            let bad = format!("{}{word}{}", &text[..objective], &text[end..]);
            let Err(VerifyError::Malformed { path, message }) =
                Solution::from_json(&instance, &bad)
            else {
                panic!("{word} accepted");
            };
            assert_eq!(path, "objective");
            match named {
                Some(w) => assert!(
                    message.starts_with(&format!(
                        "{w} is not a JSON number (numbers must be finite) at line 1 column "
                    )),
                    "{message}"
                ),
                None => assert!(message.starts_with("expected value"), "{message}"),
            }
        }
        // A position past the text, or inside a multi-byte character, names nothing.
        assert_eq!(crate::instance::not_json_number("NaN", 2, 1), None);
        assert_eq!(crate::instance::not_json_number("\u{e9}NaN", 1, 2), None);
        assert_eq!(
            crate::instance::not_json_number("x\n NaN", 2, 2),
            Some("NaN")
        );
        assert_eq!(crate::instance::not_json_number("NaN", 1, 0), None);
    }

    /// The typed stats are written as the format's `stats` object, alphabetically, and read back
    /// whole, keys no field names included.
    #[test]
    fn stats_round_trip_through_the_file_format() {
        let instance = one_job();
        let solution = Dp::default().solve(&instance).unwrap();
        let text = solution.to_json(&instance).to_string();
        let keys: Vec<String> = serde_json::from_str::<Value>(&text).unwrap()["stats"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert!(keys.contains(&"seconds".to_string()) && keys.contains(&"states".to_string()));

        let mut doc: Value = serde_json::from_str(&text).unwrap();
        doc["stats"]["from_another_tool"] = Value::from(7);
        let read = Solution::from_json(&instance, &doc.to_string()).unwrap();
        assert_eq!(read.stats.detail, solution.stats.detail);
        assert_eq!(read.stats.seconds, solution.stats.seconds);
        assert_eq!(
            read.stats.other.get("from_another_tool"),
            Some(&Value::from(7))
        );
        assert_eq!(read.to_json(&instance), doc);
    }

    /// Each solver's counters are read into its own detail, worked by hand for every detail:
    /// an ILP key makes the ILP's detail and a DP key beside it stays in `other`; `states` alone
    /// is the dense DP's; `combinations` brute force's; every object is written back as read.
    #[test]
    fn stats_are_read_into_the_detail_of_their_solver() {
        let read = |text: &str| -> SolveStats { serde_json::from_str(text).unwrap() };
        let cases = [
            r#"{"classes":3,"runs":1,"seconds":0.5,"states":9}"#,
            r#"{"seconds":0.5,"states":9}"#,
            r#"{"combinations":27,"seconds":0.5}"#,
            r#"{"classes":3,"nodes":4,"seconds":0.5,"variables":12}"#,
            r#"{"bound":2.5,"fallback_from":"dp","seconds":0.5}"#,
        ];
        let stats: Vec<SolveStats> = cases.iter().map(|c| read(c)).collect();
        assert_eq!(stats[0].dp().and_then(|d| d.classes), Some(3));
        assert_eq!(stats[0].states(), Some(9));
        assert_eq!(stats[1].detail, SolverDetail::Dense { states: 9 });
        assert_eq!(
            stats[2].detail,
            SolverDetail::BruteForce { combinations: 27 }
        );
        let ilp = stats[3].ilp().unwrap();
        assert_eq!((ilp.nodes, ilp.variables), (Some(4), Some(12)));
        assert_eq!(stats[3].other.get("classes"), Some(&Value::from(3)));
        assert_eq!(stats[4].detail, SolverDetail::None);
        assert_eq!(stats[4].bound, Some(2.5));
        assert_eq!(stats[4].fallback_from.as_deref(), Some("dp"));
        for (case, s) in cases.iter().zip(&stats) {
            let written = serde_json::to_value(s).unwrap();
            assert_eq!(written, serde_json::from_str::<Value>(case).unwrap());
        }
    }

    /// A feasible solution's gap is read from `stats.gap` (null where it is unbounded, as the
    /// writer puts an infinite gap), and a feasible solution without it, or with a negative or
    /// non-numeric one, is refused by that path.
    #[test]
    fn a_feasible_solution_gives_its_gap() {
        let instance = one_job();
        let mut doc = Dp::default().solve(&instance).unwrap().to_json(&instance);
        doc["status"] = Value::from("feasible");
        for (gap, read) in [(Value::from(0.25), 0.25), (Value::Null, f64::INFINITY)] {
            doc["stats"]["gap"] = gap;
            let solution = Solution::from_json(&instance, &doc.to_string()).unwrap();
            assert_eq!(solution.status, Status::Feasible { gap: read });
        }
        let infinite = Solution {
            status: Status::Feasible { gap: f64::INFINITY },
            ..Solution::from_json(&instance, &doc.to_string()).unwrap()
        };
        let written = infinite.to_json(&instance);
        assert_eq!(written["stats"]["gap"], Value::Null);
        assert_eq!(
            Solution::from_json(&instance, &written.to_string())
                .unwrap()
                .status,
            infinite.status
        );
        for gap in [None, Some(Value::from(-0.5)), Some(Value::from("small"))] {
            let mut bad = doc.clone();
            match gap {
                Some(g) => bad["stats"]["gap"] = g,
                None => {
                    bad["stats"].as_object_mut().unwrap().remove("gap");
                }
            }
            let Err(VerifyError::Malformed { path, message }) =
                Solution::from_json(&instance, &bad.to_string())
            else {
                panic!("accepted: {bad}");
            };
            assert_eq!(path, "stats.gap");
            assert!(
                message.starts_with("a feasible solution gives its gap"),
                "{message}"
            );
        }
    }

    /// A stat of the wrong type is refused with its path.
    #[test]
    fn a_stat_of_the_wrong_type_is_refused() {
        let instance = one_gpu_two_forced();
        let solution = Dp::default().solve(&instance).unwrap();
        let mut doc = solution.to_json(&instance);
        doc["stats"]["states"] = Value::from("many");
        let err = Solution::from_json(&instance, &doc.to_string()).unwrap_err();
        assert!(err.to_string().starts_with("solution stats:"), "{err}");
    }

    /// The certificate is structured, its words are those of the format's `stats.reason`, and a
    /// file's reason is read back as words.
    #[test]
    fn infeasibility_is_a_certificate_with_words() {
        let instance = one_gpu_two_forced();
        let solution = Dp::default().solve(&instance).unwrap();
        let Status::Infeasible { reason } = &solution.status else {
            panic!("{:?}", solution.status)
        };
        let Infeasibility::Shortage(s) = reason else {
            panic!("{reason:?}")
        };
        assert_eq!((s.need, s.have, s.short, s.jobs), (8, 4, 4, 2));
        let words = "2 forced jobs can only run on gpu types [v100], which need at least 8 units there but hold 4: short by 4 units";
        assert_eq!(reason.to_string(), words);
        let doc = solution.to_json(&instance);
        assert_eq!(doc["stats"]["reason"], Value::from(words));
        let read = Solution::from_json(&instance, &doc.to_string()).unwrap();
        assert_eq!(
            read.status,
            Status::Infeasible {
                reason: Infeasibility::Reported(words.to_string())
            }
        );
        let forced = Infeasibility::Unpackable {
            forced: vec![0, 1],
            ids: vec!["a".into(), "b".into()],
        };
        assert_eq!(
            forced.to_string(),
            "the 2 forced jobs (a, b) cannot all be placed at once: their admissible slots do not pack into the capacities of the gpu types"
        );
    }
}
