//! Side-by-side timing of solvers on the same instances: median wall time per solver, the ratio
//! of each median to the first solver's, and whether the answers agree.
//!
//! This is what `stsfair bench` and `benches/scaling.sh` report. It exists in the library (not the
//! CLI) so that the comparison rule — which answers count as agreeing — is stated once and tested.
//!
//! Agreement follows MODEL.md section 4: two optimal answers agree when their objectives agree to
//! 1e-9 relative ([`objectives_agree`]); two infeasible answers agree; an optimal and an
//! infeasible answer disagree. A solver that failed ([`SolveError`]) or stopped at a limit with a
//! gap ([`Status::Feasible`]) proves nothing either way, so the comparison is left open.

use std::io;
use std::path::{Path, PathBuf};

use crate::instance::Instance;
use crate::manifest::MANIFEST_FILE;
use crate::solution::{Status, objectives_agree};
use crate::solvers::{SolveError, Solver};

/// Why the instances of a benchmark could not be listed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// A path given does not exist or cannot be read.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// A directory given holds no `*.json` file.
    #[error("{path}: directory holds no *.json instance")]
    EmptyDirectory {
        /// The directory.
        path: PathBuf,
    },
}

/// The instance files named by `paths`: files as given, directories replaced by their `*.json`
/// files in name order (not recursive), but for the manifest ([`MANIFEST_FILE`], `index.json`).
/// Order is kept so that tables are reproducible.
pub fn instance_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, BenchError> {
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|source| BenchError::Read {
            path: path.clone(),
            source,
        })?;
        if !meta.is_dir() {
            files.push(path.clone());
            continue;
        }
        let entries = std::fs::read_dir(path).map_err(|source| BenchError::Read {
            path: path.clone(),
            source,
        })?;
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| BenchError::Read {
                path: path.clone(),
                source,
            })?;
            let p = entry.path();
            let manifest = p.file_name().is_some_and(|n| n == MANIFEST_FILE);
            if p.is_file() && p.extension().is_some_and(|e| e == "json") && !manifest {
                found.push(p);
            }
        }
        if found.is_empty() {
            return Err(BenchError::EmptyDirectory { path: path.clone() });
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

/// The median of `values` (the upper middle one for an even count, so it is always a measured
/// value); `None` when empty. O(n log n).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// What one solver did on one instance over its runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Every run returned a solution.
    Solved {
        /// The status of the last run.
        status: Status,
        /// The objective of the last run (`None` when infeasible).
        objective: Option<f64>,
        /// Median of the runs' `stats.seconds`.
        median_seconds: f64,
        /// How many runs were timed.
        runs: usize,
    },
    /// A run failed; later runs were skipped since a failure (too large, time limit before any
    /// solution) would only repeat.
    Failed(SolveError),
}

impl Outcome {
    /// The median time, when solved.
    pub fn seconds(&self) -> Option<f64> {
        match self {
            Outcome::Solved { median_seconds, .. } => Some(*median_seconds),
            Outcome::Failed(_) => None,
        }
    }

    /// A short word for tables: the status word, or "error".
    pub fn status_word(&self) -> &'static str {
        match self {
            Outcome::Solved { status, .. } => status.as_str(),
            Outcome::Failed(_) => "error",
        }
    }
}

/// Whether two outcomes agree (see the module docs); `None` when undecided.
pub fn agree(a: &Outcome, b: &Outcome) -> Option<bool> {
    let (
        Outcome::Solved {
            status: sa,
            objective: oa,
            ..
        },
        Outcome::Solved {
            status: sb,
            objective: ob,
            ..
        },
    ) = (a, b)
    else {
        return None;
    };
    match (sa, sb) {
        (Status::Feasible { .. }, _) | (_, Status::Feasible { .. }) => None,
        (Status::Infeasible { .. }, Status::Infeasible { .. }) => Some(true),
        (Status::Optimal, Status::Optimal) => match (oa, ob) {
            (Some(x), Some(y)) => Some(objectives_agree(*x, *y)),
            _ => Some(false),
        },
        _ => Some(false),
    }
}

/// One instance's row: each solver's outcome, in the order the solvers were given.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Row {
    /// The instance's name (its file stem when unnamed is up to the caller).
    pub instance: String,
    /// Jobs in the instance.
    pub jobs: usize,
    /// GPU types in the instance.
    pub types: usize,
    /// Per solver: its name and outcome.
    pub outcomes: Vec<(String, Outcome)>,
}

impl Row {
    /// A row from outcomes measured elsewhere (`stsfair bench --processes` times each run in a
    /// process of its own), for [`Row::ratio`] and [`Row::agreement`].
    pub fn new(instance: &Instance, name: &str, outcomes: Vec<(String, Outcome)>) -> Row {
        Row {
            instance: name.to_string(),
            jobs: instance.jobs().len(),
            types: instance.gpu_types().len(),
            outcomes,
        }
    }

    /// Median time of solver `i` over the first solver's; `None` unless both solved.
    pub fn ratio(&self, i: usize) -> Option<f64> {
        let first = self.outcomes.first()?.1.seconds()?;
        let t = self.outcomes.get(i)?.1.seconds()?;
        Some(t / first)
    }

    /// Whether every solver agrees with the first: `Some(false)` if any pair disagrees,
    /// `Some(true)` if all pairs were decided and agree, `None` if some pair is undecided and none
    /// disagrees.
    pub fn agreement(&self) -> Option<bool> {
        let (_, first) = self.outcomes.first()?;
        let mut all = Some(true);
        for (_, other) in self.outcomes.iter().skip(1) {
            match agree(first, other) {
                Some(false) => return Some(false),
                None => all = None,
                Some(true) => {}
            }
        }
        all
    }
}

/// Runs `solver` `runs` times on `instance` (at least once) and summarizes. O(runs) solves.
pub fn run_solver(solver: &dyn Solver, instance: &Instance, runs: usize) -> Outcome {
    let mut seconds = Vec::with_capacity(runs.max(1));
    let mut last = None;
    for _ in 0..runs.max(1) {
        match solver.solve(instance) {
            Ok(s) => {
                seconds.push(s.stats.seconds);
                last = Some(s);
            }
            Err(e) => return Outcome::Failed(e),
        }
    }
    match (last, median(&seconds)) {
        (Some(s), Some(m)) => Outcome::Solved {
            status: s.status,
            objective: s.objective,
            median_seconds: m,
            runs: seconds.len(),
        },
        // Unreachable with runs >= 1, but an empty run list is not a reason to panic.
        _ => Outcome::Failed(SolveError::Backend {
            solver: solver.name(),
            message: "no run was made".into(),
        }),
    }
}

/// Runs every solver on `instance` and returns the row named `name`.
pub fn run_instance(
    name: &str,
    instance: &Instance,
    solvers: &[Box<dyn Solver>],
    runs: usize,
) -> Row {
    let outcomes = solvers
        .iter()
        .map(|s| (s.name().to_string(), run_solver(s.as_ref(), instance, runs)))
        .collect();
    Row::new(instance, name, outcomes)
}

/// The name a row is shown under: the instance's own name, else the file stem.
pub fn display_name(path: &Path, instance: &Instance) -> String {
    instance.name().map(str::to_string).unwrap_or_else(|| {
        path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        )
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::JobSpec;
    use crate::solvers::{BruteForce, DenseDp, Dp};

    /// A solved outcome of one run in one second, for tests that check answers.
    pub(crate) fn solved(status: Status, objective: Option<f64>) -> Outcome {
        Outcome::Solved {
            status,
            objective,
            median_seconds: 1.0,
            runs: 1,
        }
    }

    #[test]
    fn median_takes_the_middle_measured_value() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0]), Some(4.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn agreement_rule() {
        let opt = |x| solved(Status::Optimal, Some(x));
        let inf = solved(
            Status::Infeasible {
                reason: crate::Infeasibility::Reported("r".into()),
            },
            None,
        );
        let gap = solved(Status::Feasible { gap: 0.1 }, Some(1.0));
        let err = Outcome::Failed(SolveError::Backend {
            solver: "x",
            message: "m".into(),
        });
        assert_eq!(agree(&opt(1.0), &opt(1.0 + 1e-12)), Some(true));
        assert_eq!(agree(&opt(1.0), &opt(1.0 + 1e-6)), Some(false));
        assert_eq!(agree(&inf, &inf), Some(true));
        assert_eq!(agree(&opt(1.0), &inf), Some(false));
        assert_eq!(agree(&opt(1.0), &gap), None);
        assert_eq!(agree(&err, &opt(1.0)), None);
    }

    #[test]
    fn row_of_exact_solvers_agrees_and_has_ratios() {
        let instance = Instance::builder()
            .gpu_type("v100", 1, 4, &[1, 2, 4])
            .job(
                JobSpec::new("a")
                    .time("v100", 4, 0.25)
                    .time("v100", 2, 0.40),
            )
            .job(
                JobSpec::new("b")
                    .time("v100", 4, 0.50)
                    .time("v100", 2, 0.60),
            )
            .build()
            .unwrap();
        let solvers: Vec<Box<dyn Solver>> = vec![
            Box::new(Dp::default()),
            Box::new(DenseDp::default()),
            Box::new(BruteForce::default()),
        ];
        let row = run_instance("two", &instance, &solvers, 3);
        assert_eq!(row.agreement(), Some(true));
        assert_eq!(row.jobs, 2);
        assert!(row.ratio(1).is_some_and(|r| r > 0.0));
        for (_, o) in &row.outcomes {
            assert!(matches!(o, Outcome::Solved { runs: 3, .. }));
        }
    }

    #[test]
    fn missing_path_is_an_error_naming_it() {
        let err = instance_files(&[PathBuf::from("/nonexistent/x.json")]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("/nonexistent/x.json: cannot read")
        );
    }
}
