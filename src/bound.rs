//! The long-run LP bound on what the round mechanism can achieve (feature `highs`).
//!
//! A round scheduler keeps every job near its fair share over many rounds; how much useful work
//! per round can it do at best while doing so? Relax the rounds to fractions of time: `x[j][o]` is
//! the fraction of rounds in which job j runs option o.
//!
//! ```text
//! maximize   sum_j sum_o v[j][o] * x[j][o]                     (mean objective per round)
//! subject to sum_o x[j][o] <= 1                                  for every job
//!            sum_{(j, o) on type k} units[j][o] * x[j][o] <= C_k  for every GPU type k
//!            sum_o sigma[j][o] * x[j][o] >= r_j                   for every job with F_j > 0
//!            x >= 0,   r_j = min(share * lambda, largest sigma of j)
//! ```
//!
//! Every schedule of rounds whose jobs reach a mean sigma of `share * lambda` (or, for a job
//! that cannot, runs its fastest option every round) gives, averaged over its rounds, a feasible
//! `x` of the same mean objective: the LP optimum bounds the mean objective of any such
//! schedule, the round mechanism's included. The options are those of the instance with every
//! job optional (deficits do not matter in the long run). `stsfair bound` prints it and
//! `stsfair rounds --json` compares the mechanism with it.
//!
//! One column per option, one row per job and per type, one more per bounded job: O(sum_j |O_j|)
//! to build; HiGHS's dual simplex solves it (Huangfu and Hall, Math. Prog. Comp. 10, 2018).

use highs::{ColProblem, HighsModelStatus, Sense};

use crate::formulation::RoundProblem;
use crate::instance::Instance;
use crate::solvers::SolveError;

const NAME: &str = "lp-bound";

/// The long-run bound of an instance at a fairness share.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LongRunBound {
    /// The largest mean objective per round of any schedule that meets the shares.
    pub objective: f64,
    /// The share of lambda each bounded job must reach on average.
    pub share: f64,
    /// Jobs with a fairness bound (F_j > 0).
    pub bounded_jobs: usize,
    /// Bounded jobs whose largest sigma is below `share * lambda`: their requirement is their
    /// largest sigma (they run their fastest option every round).
    pub capped_jobs: usize,
}

/// The long-run LP bound of `instance` at `share` (e.g. 0.95) of its fairness level lambda.
/// `Ok(None)` when no fractional schedule meets the shares (the cluster is too small for them
/// even in the long run). Errors: a `share` outside (0, 1], or HiGHS failing.
///
/// O(sum_j |O_j|) to build, then one LP solve.
pub fn long_run_bound(instance: &Instance, share: f64) -> Result<Option<LongRunBound>, SolveError> {
    if !(share > 0.0 && share <= 1.0) {
        return Err(SolveError::Backend {
            solver: NAME,
            message: format!("share must be in (0, 1] (got {share})"),
        });
    }
    // Deficits far below -(lambda + max_debt) make every job optional: all options admissible.
    let fairness = instance.fairness();
    let low = vec![-(fairness.lambda + fairness.max_debt + 1.0); instance.jobs().len()];
    let free = instance
        .with_deficits(&low)
        .map_err(|e| SolveError::Backend {
            solver: NAME,
            message: e.to_string(),
        })?;
    let problem = RoundProblem::new(&free);
    let target = share * fairness.lambda;

    let mut pb = ColProblem::default();
    let capacity: Vec<_> = problem
        .capacity
        .iter()
        .map(|&c| pb.add_row(..=c as f64))
        .collect();
    let (mut bounded_jobs, mut capped_jobs) = (0, 0);
    for job in problem.jobs.iter().filter(|j| !j.options.is_empty()) {
        let one = pb.add_row(..=1.0);
        let fair = (job.fair_rate > 0.0).then(|| {
            let largest = job.options.iter().map(|o| o.sigma).fold(0.0, f64::max);
            bounded_jobs += 1;
            if largest < target {
                capped_jobs += 1;
            }
            pb.add_row(target.min(largest)..)
        });
        for o in &job.options {
            let mut entries = vec![(one, 1.0), (capacity[o.gpu], o.units as f64)];
            if let Some(fair) = fair {
                entries.push((fair, o.sigma));
            }
            pb.add_column(o.value, 0.0.., entries);
        }
    }
    // HiGHS fixes its thread pool per thread at the first solve (see `Ilp`): solve on a thread
    // of its own so that the bound never clashes with an ILP solved on the caller's thread.
    let solved = std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let mut model = pb.optimise(Sense::Maximise);
                model.set_option("output_flag", false);
                model.set_option("threads", 1);
                // The solved model holds HiGHS's pointer and stays on this thread.
                model
                    .try_solve()
                    .map(|solved| (solved.status(), solved.objective_value()))
            })
            .join()
    })
    .map_err(|_| SolveError::Backend {
        solver: NAME,
        message: "HiGHS panicked".into(),
    })?
    .map_err(|e| SolveError::Backend {
        solver: NAME,
        message: format!("HiGHS failed: {e:?}"),
    })?;
    let (status, objective) = solved;
    match status {
        HighsModelStatus::Optimal => Ok(Some(LongRunBound {
            objective,
            share,
            bounded_jobs,
            capped_jobs,
        })),
        HighsModelStatus::Infeasible | HighsModelStatus::UnboundedOrInfeasible => Ok(None),
        other => Err(SolveError::Backend {
            solver: NAME,
            message: format!("HiGHS ended with model status {other:?}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Fairness, JobSpec};

    /// Two identical jobs on one whole GPU (F = 0.5 it/s, sigma 2 when running): each must run
    /// at least share / 2 of the rounds, and the GPU is busy every round: the bound is 1 (one job
    /// of value 1 every round) for every share, and infeasible with three jobs that need more
    /// than the GPU.
    #[test]
    fn two_jobs_share_one_gpu() {
        let instance = Instance::builder()
            .gpu_type("g", 1, 4, &[4])
            .job(JobSpec::new("x").time("g", 4, 1.0))
            .job(JobSpec::new("y").time("g", 4, 1.0))
            .build()
            .unwrap();
        for share in [0.5, 0.95, 1.0] {
            let b = long_run_bound(&instance, share).unwrap().unwrap();
            assert!((b.objective - 1.0).abs() < 1e-9, "{b:?}");
            assert_eq!((b.bounded_jobs, b.capped_jobs), (2, 0));
        }
        assert!(long_run_bound(&instance, 0.0).is_err());
    }

    /// Unequal weights: the requirements take the GPU in proportion, the rest goes to the job of
    /// larger value, exactly as the LP says.
    #[test]
    fn the_requirement_costs_what_the_lp_says() {
        // One GPU; a (weight 3): 1 s/it, b (weight 1): 4 s/it, whole GPU only. phi = 3/4, 1/4;
        // F_a = 0.75 it/s, F_b = 0.0625 it/s; running, sigma_a = 4/3 and sigma_b = 4; values
        // v_a = 3, v_b = 1. At share 1: a runs 3/4 of the rounds, b 1/4: 3 * 3/4 + 1/4 = 2.5.
        // At share 0.5: a at least 3/8, b at least 1/8, the rest to a: 3 * 7/8 + 1/8 = 2.75.
        let instance = Instance::builder()
            .fairness(Fairness::default())
            .gpu_type("g", 1, 4, &[4])
            .job(JobSpec::new("a").weight(3.0).time("g", 4, 1.0))
            .job(JobSpec::new("b").time("g", 4, 4.0))
            .build()
            .unwrap();
        for (share, expected) in [(1.0, 2.5), (0.5, 2.75)] {
            let b = long_run_bound(&instance, share).unwrap().unwrap();
            assert!((b.objective - expected).abs() < 1e-9, "{share}: {b:?}");
        }
    }
}
