//! HiGHS, through one adapter (feature `highs`): every linear or mixed-integer program the
//! crate and its simulator give HiGHS goes through [`solve`], which loads the model, sets its
//! options, solves it on a thread of its own and reads back what the callers use, with HiGHS's
//! model status mapped once to an [`Outcome`].
//!
//! Why a thread of its own: HiGHS keeps its thread pool in a thread-local scheduler made at the
//! first solve on a thread and fixed from then on, so a later solve on the same thread that asks
//! for another `threads` value fails. A fresh thread a solve gives every solve the thread count it
//! asks for (about 30 microseconds a solve, against the milliseconds of the smallest model the
//! crate solves), contains a panic inside the binding, and gets the 8 MiB stack that HiGHS,
//! written for a main thread, needs for its recursive presolve and search.
//!
//! Users: the `ilp` solver ([`crate::solvers::Ilp`]), the long-run bound ([`crate::bound`]), and
//! the simulator's LP policies (`--lp highs-ipm`, `highs-simplex`). The tests' HiGHS oracles
//! build their models apart, so that they share no code with what they check.
//!
//! Reference: Huangfu and Hall, "Parallelizing the dual revised simplex method", Math. Prog.
//! Comp. 10 (2018); HiGHS's options and statuses as its C API names them.

use std::any::Any;
use std::ffi::{CStr, CString};
use std::path::Path;
use std::time::Instant;

pub use highs::{ColProblem, Row, Sense};
use highs::{HighsModelStatus, HighsSolutionStatus, Model, SolvedModel};

/// Stack of the thread HiGHS runs on: the 8 MiB a main thread gets on Linux.
const STACK_BYTES: usize = 8 << 20;

/// The value of a HiGHS option ([`solve`]'s `options`), as HiGHS types it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OptionValue {
    /// A boolean option (`output_flag`, ...).
    Bool(bool),
    /// An integer option (`threads`, ...).
    Int(i32),
    /// A real option (`time_limit`, `mip_rel_gap`, ...).
    Float(f64),
    /// A string option (`solver`, `presolve`, ...).
    Text(&'static str),
}

impl std::fmt::Display for OptionValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptionValue::Bool(v) => write!(f, "{v}"),
            OptionValue::Int(v) => write!(f, "{v}"),
            OptionValue::Float(v) => write!(f, "{v}"),
            OptionValue::Text(v) => write!(f, "{v}"),
        }
    }
}

/// The limit a solve stopped at ([`Outcome::Stopped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// `time_limit`.
    Time,
    /// An iteration limit.
    Iterations,
    /// A limit on the number of solutions.
    Solutions,
    /// An interrupt.
    Interrupt,
    /// HiGHS ran out of memory.
    Memory,
}

/// How a solve ended: HiGHS's model status, mapped once for every caller.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// An optimum (within HiGHS's tolerances and the gaps it was given).
    Optimal,
    /// No feasible point, proven; `or_unbounded`: HiGHS's presolve says "unbounded or
    /// infeasible", which a model whose columns are all bounded can only mean as infeasible.
    Infeasible {
        /// Whether HiGHS left open that the model is unbounded instead.
        or_unbounded: bool,
    },
    /// The objective is unbounded.
    Unbounded,
    /// Stopped at a limit; [`Answer::has_solution`] says whether an incumbent exists.
    Stopped(Limit),
    /// Any other status (an empty model, a solve error, ...), by HiGHS's name for it.
    Other(String),
}

/// What a solve gives back: the outcome, the primal and dual values, and HiGHS's statistics.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Answer {
    /// How the solve ended.
    pub outcome: Outcome,
    /// HiGHS's model status, as HiGHS names it.
    pub status: String,
    /// Whether HiGHS holds a feasible primal solution.
    pub has_solution: bool,
    /// The objective value of that solution, in the model's units.
    pub objective: f64,
    /// The columns' values, in the order they were added.
    pub columns: Vec<f64>,
    /// The rows' dual values, in the order they were added.
    pub row_duals: Vec<f64>,
    /// A mixed-integer solve's final relative gap, when finite.
    pub mip_gap: Option<f64>,
    /// A mixed-integer solve's best dual bound, when finite.
    pub mip_dual_bound: Option<f64>,
    /// A mixed-integer solve's branch-and-bound nodes.
    pub nodes: Option<u64>,
    /// Seconds to hand the model to HiGHS and set its options.
    pub seconds_load: f64,
    /// Seconds of HiGHS's solve.
    pub seconds_solve: f64,
}

/// Why HiGHS gave no [`Answer`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum HighsError {
    /// HiGHS refused the model (a matrix or bounds it cannot take).
    #[error("HiGHS refused the model: {status}")]
    Refused {
        /// HiGHS's status.
        status: String,
    },
    /// HiGHS rejected an option's name or value.
    #[error("HiGHS rejected option {name} = {value}")]
    OptionRejected {
        /// The option's name.
        name: String,
        /// The value asked for.
        value: OptionValue,
    },
    /// HiGHS failed to run the model.
    #[error("HiGHS failed to run the model: {status}")]
    Failed {
        /// HiGHS's status.
        status: String,
    },
    /// The thread HiGHS runs on could not be started.
    #[error("cannot start the HiGHS thread: {message}")]
    Thread {
        /// The operating system's reason.
        message: String,
    },
    /// HiGHS could not name or write the model ([`write()`]).
    #[error("{message}")]
    Write {
        /// What failed, and HiGHS's status.
        message: String,
    },
    /// HiGHS (or its binding) panicked.
    #[error("HiGHS panicked: {message}")]
    Panicked {
        /// The panic's message.
        message: String,
    },
}

/// Loads `problem` into a HiGHS model with `sense` and `options` (HiGHS's output off), ready to
/// solve: what [`solve`] does before solving, for callers that time the load alone.
pub fn load(
    problem: ColProblem,
    sense: Sense,
    options: &[(&str, OptionValue)],
) -> Result<Model, HighsError> {
    let mut model = problem
        .try_optimise(sense)
        .map_err(|status| HighsError::Refused {
            status: format!("{status:?}"),
        })?;
    for &(name, value) in options {
        let set = match value {
            OptionValue::Bool(v) => model.try_set_option(name, v),
            OptionValue::Int(v) => model.try_set_option(name, v),
            OptionValue::Float(v) => model.try_set_option(name, v),
            OptionValue::Text(v) => model.try_set_option(name, v),
        };
        set.map_err(|_| HighsError::OptionRejected {
            name: name.to_string(),
            value,
        })?;
    }
    Ok(model)
}

/// Solves `problem` with `sense` and `options` on a fresh thread (see the module's
/// documentation) and reads the answer. O(size of the model) besides HiGHS's own work.
pub fn solve(
    problem: ColProblem,
    sense: Sense,
    options: &[(&str, OptionValue)],
) -> Result<Answer, HighsError> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("stsfair-highs".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || solve_here(problem, sense, options))
            .map_err(|e| HighsError::Thread {
                message: e.to_string(),
            })?;
        handle.join().map_err(|p| HighsError::Panicked {
            message: panic_message(p.as_ref()),
        })?
    })
}

/// [`solve`]'s work, on the thread it runs on.
fn solve_here(
    problem: ColProblem,
    sense: Sense,
    options: &[(&str, OptionValue)],
) -> Result<Answer, HighsError> {
    let start = Instant::now();
    let model = load(problem, sense, options)?;
    let seconds_load = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let solved = model.try_solve().map_err(|status| HighsError::Failed {
        status: format!("{status:?}"),
    })?;
    let seconds_solve = start.elapsed().as_secs_f64();
    let status = solved.status();
    let values = solved.get_solution();
    let finite = |v: Result<f64, _>| v.ok().filter(|v: &f64| v.is_finite());
    Ok(Answer {
        outcome: outcome(status),
        status: format!("{status:?}"),
        has_solution: solved.primal_solution_status() == HighsSolutionStatus::Feasible,
        objective: solved.objective_value(),
        columns: values.columns().to_vec(),
        row_duals: values.dual_rows().to_vec(),
        mip_gap: finite(solved.double_info_value(c"mip_gap")),
        mip_dual_bound: finite(solved.double_info_value(c"mip_dual_bound")),
        nodes: nodes(&solved).and_then(|n| u64::try_from(n).ok()),
        seconds_load,
        seconds_solve,
    })
}

/// Writes `problem` with `sense`, its columns and rows named `column_names` and `row_names`,
/// to `path` in the format its extension names (`.mps`, `.lp`; HiGHS's `Highs_writeModel`).
/// O(size of the model).
pub fn write(
    problem: ColProblem,
    sense: Sense,
    column_names: &[String],
    row_names: &[String],
    path: &Path,
) -> Result<(), HighsError> {
    let fail = |message: String| HighsError::Write { message };
    let c_string = |text: &str| {
        CString::new(text).map_err(|_| fail(format!("name {text:?} holds a NUL byte")))
    };
    let mut model = load(problem, sense, &[])?;
    let ptr = model.as_mut_ptr();
    // SAFETY (here and below): `ptr` is the live Highs object `model` owns, which outlives every
    // call; names are NUL-terminated C strings that live across their call, which copies them;
    // indices are below the model's counts (checked against HiGHS's own).
    let (have_columns, have_rows) = unsafe {
        (
            highs_sys::Highs_getNumCol(ptr),
            highs_sys::Highs_getNumRow(ptr),
        )
    };
    if usize::try_from(have_columns).ok() != Some(column_names.len())
        || usize::try_from(have_rows).ok() != Some(row_names.len())
    {
        return Err(fail(format!(
            "the model has {have_columns} columns and {have_rows} rows, the names {} and {}",
            column_names.len(),
            row_names.len()
        )));
    }
    for (pass, names) in [(0, column_names), (1, row_names)] {
        for (i, name) in names.iter().enumerate() {
            let c = c_string(name)?;
            // i < the model's count, which HiGHS holds in a HighsInt.
            let index = highs_sys::HighsInt::try_from(i)
                .map_err(|_| fail(format!("index {i} is past HiGHS's integers")))?;
            let status = unsafe {
                if pass == 0 {
                    highs_sys::Highs_passColName(ptr, index, c.as_ptr())
                } else {
                    highs_sys::Highs_passRowName(ptr, index, c.as_ptr())
                }
            };
            if status != highs_sys::STATUS_OK {
                return Err(fail(format!("HiGHS refused the name {name:?}")));
            }
        }
    }
    let text = path
        .to_str()
        .ok_or_else(|| fail(format!("{} is not UTF-8", path.display())))?;
    let c_path = c_string(text)?;
    let status = unsafe { highs_sys::Highs_writeModel(ptr, c_path.as_ptr()) };
    if status != highs_sys::STATUS_OK {
        let format = path.extension().and_then(|e| e.to_str()).unwrap_or("?");
        return Err(fail(format!(
            "HiGHS could not write the model as {format} (status {status})"
        )));
    }
    Ok(())
}

/// HiGHS's model status as an [`Outcome`].
fn outcome(status: HighsModelStatus) -> Outcome {
    match status {
        HighsModelStatus::Optimal => Outcome::Optimal,
        HighsModelStatus::Infeasible => Outcome::Infeasible {
            or_unbounded: false,
        },
        HighsModelStatus::UnboundedOrInfeasible => Outcome::Infeasible { or_unbounded: true },
        HighsModelStatus::Unbounded => Outcome::Unbounded,
        HighsModelStatus::ReachedTimeLimit => Outcome::Stopped(Limit::Time),
        HighsModelStatus::ReachedIterationLimit => Outcome::Stopped(Limit::Iterations),
        HighsModelStatus::ReachedSolutionLimit => Outcome::Stopped(Limit::Solutions),
        HighsModelStatus::ReachedInterrupt => Outcome::Stopped(Limit::Interrupt),
        HighsModelStatus::ReachedMemoryLimit => Outcome::Stopped(Limit::Memory),
        other => Outcome::Other(format!("{other:?}")),
    }
}

/// Node count of the branch and bound, an int64 info value the `highs` crate does not read
/// (`None` for a pure LP, where HiGHS has no such count).
fn nodes(solved: &SolvedModel) -> Option<i64> {
    let mut count: i64 = -1;
    let name: &CStr = c"mip_node_count";
    // SAFETY: `solved.as_ptr()` is a live Highs object owned by `solved`, `name` is a
    // NUL-terminated C string and `count` outlives the call, which only writes one int64 to it.
    let status =
        unsafe { highs_sys::Highs_getInt64InfoValue(solved.as_ptr(), name.as_ptr(), &mut count) };
    (status == highs_sys::STATUS_OK && count >= 0).then_some(count)
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// maximize x + y subject to x + 2y <= 4, 3x + y <= 6, 0 <= x, y: the optimum is at
    /// (8/5, 6/5), worth 14/5, with row duals 2/5 and 1/5 (worked by hand).
    #[test]
    fn a_hand_worked_lp() {
        let mut pb = ColProblem::default();
        let a = pb.add_row(..=4.0);
        let b = pb.add_row(..=6.0);
        pb.add_column(1.0, 0.0.., [(a, 1.0), (b, 3.0)]);
        pb.add_column(1.0, 0.0.., [(a, 2.0), (b, 1.0)]);
        let answer = solve(pb, Sense::Maximise, &[("threads", OptionValue::Int(1))]).unwrap();
        assert_eq!(answer.outcome, Outcome::Optimal);
        assert!(answer.has_solution);
        assert!((answer.objective - 2.8).abs() < 1e-9);
        assert!((answer.columns[0] - 1.6).abs() < 1e-9);
        assert!((answer.columns[1] - 1.2).abs() < 1e-9);
        assert!((answer.row_duals[0] - 0.4).abs() < 1e-9);
        assert!((answer.row_duals[1] - 0.2).abs() < 1e-9);
    }

    /// x >= 2 and x <= 1 (one row, one bound): infeasible, proven.
    #[test]
    fn an_infeasible_lp() {
        let mut pb = ColProblem::default();
        let r = pb.add_row(2.0..);
        pb.add_column(1.0, 0.0..=1.0, [(r, 1.0)]);
        let answer = solve(
            pb,
            Sense::Maximise,
            &[("presolve", OptionValue::Text("off"))],
        )
        .unwrap();
        assert!(matches!(answer.outcome, Outcome::Infeasible { .. }));
        assert!(!answer.has_solution);
    }

    /// A binary knapsack: max 5a + 4b + 3c subject to 2a + 3b + c <= 4: the optimum a = c = 1,
    /// worth 8, found by branch and bound (nodes counted).
    #[test]
    fn a_hand_worked_mip() {
        let mut pb = ColProblem::default();
        let r = pb.add_row(..=4.0);
        for (v, w) in [(5.0, 2.0), (4.0, 3.0), (3.0, 1.0)] {
            pb.add_integer_column(v, 0.0..=1.0, [(r, w)]);
        }
        let answer = solve(
            pb,
            Sense::Maximise,
            &[("mip_rel_gap", OptionValue::Float(0.0))],
        )
        .unwrap();
        assert_eq!(answer.outcome, Outcome::Optimal);
        assert!((answer.objective - 8.0).abs() < 1e-9);
        let x: Vec<i64> = answer.columns.iter().map(|v| v.round() as i64).collect();
        assert_eq!(x, [1, 0, 1]);
        assert!(answer.nodes.is_some());
    }

    /// A bad option value is an error that names the option, not a panic.
    #[test]
    fn a_rejected_option_is_named() {
        let mut pb = ColProblem::default();
        let r = pb.add_row(..=1.0);
        pb.add_column(1.0, 0.0..=1.0, [(r, 1.0)]);
        let err = solve(
            pb,
            Sense::Maximise,
            &[("mip_rel_gap", OptionValue::Float(-1.0))],
        )
        .unwrap_err();
        assert_eq!(
            err,
            HighsError::OptionRejected {
                name: "mip_rel_gap".into(),
                value: OptionValue::Float(-1.0)
            }
        );
        assert!(err.to_string().contains("mip_rel_gap = -1"));
    }
}
