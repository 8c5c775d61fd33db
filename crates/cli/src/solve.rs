//! `validate`, `solve` and `verify`.

use std::path::PathBuf;

use clap::Args;
use stsfair::solution::{Certificate, Infeasibility, Optimality, VerifyError};
use stsfair::{
    Instance, JobClass, RoundProblem, Solution, Solver, SolverConfig, SolverKind, Status,
};

use crate::Failure;

#[derive(Args)]
pub struct ValidateArgs {
    /// Instance file (stsfair/1 JSON).
    file: PathBuf,
}

/// The most threads `--threads` may give HiGHS. HiGHS makes every worker thread, and a task
/// queue of half a MiB for each, when its first solve starts, in C++ that cannot report a
/// failure to Rust: 1,000 threads ended in `std::system_error` and 10,000 or more in
/// `std::bad_alloc`, both aborting the process (exit 134). A MIP solve gains nothing from more
/// threads than cores, and 256 is more cores than the machines this runs on have.
pub const MAX_THREADS: usize = 256;
#[cfg(feature = "highs")]
const _: () = assert!(MAX_THREADS == stsfair::solvers::MAX_ILP_THREADS);

/// The solver flags shared by `solve` and `rounds` (flattened into both).
#[derive(Args)]
pub struct SolverArgs {
    /// Solver: dp (exact, fast), dp-dense (reference DP), brute (tiny instances), ilp (HiGHS),
    /// dp+ilp (dp, and the ilp for a round dp refuses as too large; what `rounds` uses for dp).
    #[arg(long, default_value = "dp")]
    solver: String,
    /// Time limit in seconds per solve (ilp, dp, dp-dense; stopped, a solver answers with the
    /// best solution it has as `feasible`, with its gap, or exits 1 without one).
    #[arg(long)]
    time_limit: Option<f64>,
    /// Relative MIP gap at which the ilp may stop (default 0: exact).
    #[arg(long)]
    mip_rel_gap: Option<f64>,
    /// Absolute MIP gap at which the ilp may stop (default 0: exact).
    #[arg(long)]
    mip_abs_gap: Option<f64>,
    /// Threads for the ilp, 1 to 256 (default 1).
    #[arg(long)]
    threads: Option<usize>,
    /// HiGHS's MIP presolve for the ilp: on (HiGHS's default) or off (HiGHS 1.16.0's presolve returns a suboptimal answer as optimal on rare rounds; docs/ilp.md).
    #[arg(long, value_parser = ["on", "off"])]
    presolve: Option<String>,
    /// Memory limit of the DP in MiB (at least 1).
    #[arg(long)]
    max_memory_mib: Option<u64>,
}

impl SolverArgs {
    /// The solver the flags name, with their configuration; usage errors (exit 2) name the flag.
    pub fn solver(&self) -> Result<Box<dyn Solver>, Failure> {
        self.named(&self.solver)
    }

    /// For `rounds`: like [`SolverArgs::solver`], but `dp` becomes `dp+ilp` when the crate has
    /// the ILP, so that a round the DP refuses as too large is solved by HiGHS instead of ending
    /// the run (a scheduler's rounds must not fail).
    pub fn solver_for_rounds(&self) -> Result<Box<dyn Solver>, Failure> {
        if self.solver == "dp" && solver_kind("dp+ilp").is_some() {
            return self.named("dp+ilp");
        }
        self.solver()
    }

    fn named(&self, name: &str) -> Result<Box<dyn Solver>, Failure> {
        let config = self.config()?;
        let kind = solver_kind(name).ok_or_else(|| {
            Failure::input(format!(
                "--solver must be one of {} (got {:?})",
                solver_names(),
                self.solver
            ))
        })?;
        Ok(kind.build(&config))
    }

    fn config(&self) -> Result<SolverConfig, Failure> {
        let non_negative = |name: &str, v: Option<f64>| match v {
            Some(x) if !(x >= 0.0 && x.is_finite()) => Err(Failure::input(format!(
                "--{name} must be a finite number >= 0 (got {x})"
            ))),
            _ => Ok(v),
        };
        if let Some(t) = self.time_limit.filter(|t| !(*t > 0.0 && t.is_finite())) {
            return Err(Failure::input(format!(
                "--time-limit must be a finite number > 0 (got {t})"
            )));
        }
        if let Some(t) = self.threads.filter(|t| !(1..=MAX_THREADS).contains(t)) {
            return Err(Failure::input(format!(
                "--threads must be between 1 and {MAX_THREADS} (got {t})"
            )));
        }
        if self.max_memory_mib == Some(0) {
            // 0 MiB became a limit of a few DP states, refused with a message about states,
            // not about the flag that set it.
            return Err(Failure::input(
                "--max-memory-mib must be at least 1 (got 0)",
            ));
        }
        let mut config = SolverConfig::default();
        config.time_limit = self.time_limit;
        config.mip_rel_gap = non_negative("mip-rel-gap", self.mip_rel_gap)?;
        config.mip_abs_gap = non_negative("mip-abs-gap", self.mip_abs_gap)?;
        config.threads = self.threads;
        config.presolve = self.presolve.as_deref().map(|p| p == "on");
        config.max_bytes = self.max_memory_mib.map(|m| m.saturating_mul(1 << 20));
        Ok(config)
    }
}

/// The solver kind a `--solver` / `--solvers` name stands for (the names of
/// [`SolverKind::name`]); `None` for a name this build does not have.
pub fn solver_kind(name: &str) -> Option<SolverKind> {
    SolverKind::ALL.iter().copied().find(|k| k.name() == name)
}

/// The solver names of this build, for usage messages.
pub fn solver_names() -> String {
    let names: Vec<&str> = SolverKind::ALL.iter().map(|k| k.name()).collect();
    names.join(", ")
}

#[derive(Args)]
pub struct SolveArgs {
    /// Instance file (stsfair/1 JSON).
    file: PathBuf,
    #[command(flatten)]
    solver: SolverArgs,
    /// Print exactly the stsfair-solution/1 document on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct VerifyArgs {
    /// Instance file.
    instance: PathBuf,
    /// Solution file (stsfair-solution/1, as written by `solve --json`).
    solution: PathBuf,
}

pub fn load(path: &PathBuf) -> Result<Instance, Failure> {
    Instance::from_path(path).map_err(|e| Failure::input(format!("{}: {e}", path.display())))
}

pub fn validate(args: ValidateArgs) -> Result<u8, Failure> {
    let instance = load(&args.file)?;
    let options: usize = instance.jobs().iter().map(|j| j.options().len()).sum();
    outln!(
        "{}: valid ({} gpu types, {} jobs, {} options)",
        args.file.display(),
        instance.gpu_types().len(),
        instance.jobs().len(),
        options
    );
    Ok(0)
}

pub fn solve(args: SolveArgs) -> Result<u8, Failure> {
    let solver = args.solver.solver()?;
    let instance = load(&args.file)?;
    let solution = solver.solve(&instance).map_err(Failure::other)?;
    if args.json {
        outln!("{}", solution.to_json(&instance));
    } else {
        print_summary(&instance, &solution);
    }
    Ok(if matches!(solution.status, Status::Infeasible { .. }) {
        3
    } else {
        0
    })
}

/// `text` as one line of the summary: as it is, or quoted with its control characters
/// escaped (`"a\nstatus optimal"`) where it holds any, so that a name or an id from the
/// instance cannot write a line of its own.
pub(crate) fn one_line(text: &str) -> String {
    if text.chars().any(char::is_control) {
        format!("{text:?}")
    } else {
        text.to_string()
    }
}

fn print_summary(instance: &Instance, solution: &Solution) {
    let problem = RoundProblem::new(instance);
    let name = one_line(instance.name().unwrap_or("(unnamed)"));
    outln!(
        "instance   {name}: {} jobs, {} gpu types",
        instance.jobs().len(),
        instance.gpu_types().len()
    );
    outln!("solver     {}", solution.solver);
    match &solution.status {
        Status::Infeasible { reason } => {
            outln!("status     infeasible");
            outln!("reason     {}", one_line(&reason.to_string()));
        }
        status => {
            let gap = match status {
                Status::Feasible { gap } => format!(" (gap {gap:.3e})"),
                _ => String::new(),
            };
            outln!("status     {}{gap}", status.as_str());
            outln!("objective  {:.9}", solution.objective.unwrap_or(f64::NAN));
            let run = solution.assignments.iter().filter(|a| a.is_some()).count();
            let forced = problem
                .jobs
                .iter()
                .filter(|j| matches!(j.class, JobClass::Forced { .. }))
                .count();
            let behind = problem
                .jobs
                .iter()
                .filter(|j| {
                    matches!(
                        j.class,
                        JobClass::Forced {
                            cannot_catch_up: true
                        }
                    )
                })
                .count();
            let unbounded = problem
                .jobs
                .iter()
                .filter(|j| j.class == JobClass::Unbounded)
                .count();
            outln!(
                "jobs       {run} run, {} idle; {forced} forced ({behind} cannot catch up), {unbounded} without a fairness bound",
                solution.assignments.len() - run
            );
        }
    }
    outln!("units      used / capacity per gpu type");
    for (g, used) in instance.gpu_types().iter().zip(&solution.units_used) {
        let cap = g.capacity();
        let pct = if cap > 0 {
            100.0 * *used as f64 / cap as f64
        } else {
            0.0
        };
        outln!(
            "  {:<10} {used:>10} / {cap:<10} ({pct:.1}%)",
            one_line(g.name())
        );
    }
    outln!("time       {:.6} s", solution.stats.seconds);
}

/// What `verify` proved of a feasible answer's optimality, in words.
fn optimality_text(o: &Optimality) -> String {
    match o {
        Optimality::Certified { optimum } => format!(
            "optimality certified: the exact DP's re-solve finds the optimum {}",
            crate::number::fixed(*optimum, 9)
        ),
        Optimality::Suboptimal { optimum } => format!(
            "not optimal: the exact DP's re-solve finds {}, within the solution's gap",
            crate::number::fixed(*optimum, 9)
        ),
        Optimality::NotCertified { reason } => {
            format!("feasible; optimality not certified ({reason})")
        }
        // Optimality is non_exhaustive: a kind added later proves nothing here.
        _ => "feasible; optimality not certified".to_string(),
    }
}

pub fn verify(args: VerifyArgs) -> Result<u8, Failure> {
    let instance = load(&args.instance)?;
    let text =
        stsfair::instance::read_text_limited(&args.solution, stsfair::instance::MAX_FILE_BYTES)
            .map_err(|e| Failure::input(format!("cannot read {}: {e}", args.solution.display())))?;
    let solution = Solution::from_json(&instance, &text).map_err(|e| match e {
        // A well-formed document that lists more jobs than the instance has is not a solution
        // of it, as one that lists fewer (which `verify` finds): exit 1 for both.
        VerifyError::JobCount { .. } => Failure::other(format!("invalid solution: {e}")),
        e => Failure::input(e),
    })?;
    match stsfair::verify(&instance, &solution) {
        Ok(v) => {
            match (v.objective, &v.certificate) {
                (Some(obj), _) => outln!(
                    "valid: {} solution, objective {} recomputed from the instance; {}",
                    solution.status.as_str(),
                    crate::number::fixed(obj, 9),
                    optimality_text(&v.optimality)
                ),
                (None, Some(Certificate::Shortage(s))) => outln!(
                    "valid: infeasible, certified by a capacity shortage: {}",
                    one_line(&Infeasibility::Shortage(s.clone()).to_string())
                ),
                (None, Some(Certificate::ForcedJobsDoNotPack)) => outln!(
                    "valid: infeasible, certified: the forced jobs' admissible slots do not pack into the capacities"
                ),
                // Certificate is non_exhaustive: a kind added later is still a proof.
                (None, Some(_)) => outln!("valid: infeasible, certified"),
                (None, None) => outln!(
                    "valid form: infeasible (not certified: no shortage found, and the forced jobs' packing is too large to check)"
                ),
            }
            Ok(0)
        }
        Err(e) => Err(Failure {
            code: 1,
            message: format!("invalid solution: {e}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A re-solve past `verify`'s budget (`stsfair::solution::exact_optimum`) prints as valid and
    /// not certified, with the budget's reason.
    #[test]
    fn a_re_solve_past_its_budget_prints_not_certified() {
        let reason = "the exact DP's re-solve is past its budget: dp: the instance needs 3 states \
                      over all gap-deepening runs, more than the limit of 2; raise the limit or \
                      use --solver ilp";
        let o = Optimality::NotCertified {
            reason: reason.into(),
        };
        assert_eq!(
            optimality_text(&o),
            format!("feasible; optimality not certified ({reason})")
        );
    }
}
