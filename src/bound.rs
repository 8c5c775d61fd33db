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
//! Identical jobs share one set of columns (the LP is symmetric in them, so some optimum gives
//! them equal fractions): one column per option of a class of identical jobs, one row per class
//! and per type, one more per bounded class; O(sum_j |O_j|) to group the jobs; HiGHS's dual
//! simplex solves it (Huangfu and Hall, Math. Prog. Comp. 10, 2018).

use std::collections::HashMap;

use crate::highs_lp::{self, ColProblem, OptionValue, Outcome, Sense};

use crate::formulation::RoundProblem;
use crate::instance::Instance;
use crate::rounds::ServicePrices;
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
    /// The price of each job's fairness service, in instance order: the optimal dual value of
    /// its fairness row, the objective lost per unit of sigma the job must get on average
    /// (>= 0; 0 for a job whose row is slack or that has no bound). Identical jobs (the same
    /// options, values and sigmas) share one row of the LP over classes, and so one price: an
    /// optimal dual of the per-job LP too, by its symmetry (dual optima need not be unique on
    /// degenerate LPs; this is the one HiGHS's simplex reaches). The round mechanism prices the
    /// service of forced jobs with them ([`LongRunPrices`]).
    pub prices: Vec<f64>,
}

/// The long-run LP bound of `instance` at `share` (e.g. 0.95) of its fairness level lambda.
/// `Ok(None)` when no fractional schedule meets the shares (the cluster is too small for them
/// even in the long run). Errors: a `share` outside (0, 1], or HiGHS failing.
///
/// O(sum_j |O_j|) to group identical jobs, then one LP over the classes.
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
    // Identical jobs (the same options with the same values and sigmas, bit for bit) form one
    // class: the LP is symmetric in them, so averaging any optimum over the class's jobs is
    // again optimal, and the LP over per-class fractions y[c][o] (each job of c runs o in a y
    // fraction of the rounds) has the same optimum. A 10,000-job Gavel round is about 110
    // classes: the full LP took HiGHS 50 s, this one a fraction of a second.
    let classes = classes(&problem);
    let (mut bounded_jobs, mut capped_jobs) = (0, 0);
    // Rows are numbered in the order they are added: the capacities, then per class its row of
    // choices and, if bounded, its fairness row.
    let mut rows = capacity.len();
    // (class, row, the row's scale: its job's largest sigma).
    let mut fair_rows: Vec<(usize, usize, f64)> = Vec::new();
    let mut columns = 0usize;
    // HiGHS refuses a model with a cost or a matrix entry of 1e15 or more and drops entries of
    // 1e-9 or less, and valid instances reach both (a weight of 1e15; sigmas of 1e13 when one
    // job's times are 1e13 times another's). So the objective is divided by its largest cost
    // and each fairness row by its job's largest sigma: the same LP, with every cost and every
    // sigma entry in (0, n] for a class of n jobs. A sigma entry below `TINY` of the job's largest is raised to it,
    // which only relaxes the row (the job gets more service than it does), so the optimum stays
    // an upper bound; such an option gives the job less than a billionth of its best option's
    // service.
    const TINY: f64 = 2e-9;
    let largest_value = problem
        .jobs
        .iter()
        .flat_map(|j| j.options.iter().map(|o| o.value))
        .fold(0.0, f64::max);
    // Values are > 0 but may underflow to 0 (a weight of 1e-300 times a speed ratio of 1e-300).
    let cost_scale = if largest_value > 0.0 {
        largest_value
    } else {
        1.0
    };
    for (c, members) in classes.iter().enumerate() {
        let job = &problem.jobs[members[0]];
        if job.options.is_empty() {
            continue;
        }
        let n = members.len() as f64;
        let one = pb.add_row(..=1.0);
        rows += 1;
        let largest = job.options.iter().map(|o| o.sigma).fold(0.0, f64::max);
        if job.fair_rate > 0.0 {
            bounded_jobs += members.len();
            if largest < target {
                capped_jobs += members.len();
            }
        }
        // A job with an option of infinite sigma (its equal-share rate underflows beside a
        // finite throughput) meets its requirement in an arbitrarily small fraction of the
        // rounds: the supremum of the LP is that without its row, and its price is 0.
        let fair = (job.fair_rate > 0.0 && largest.is_finite()).then(|| {
            fair_rows.push((c, rows, largest));
            rows += 1;
            // Scaled by n, so that its dual is the price of one job's service (the sum of the
            // class's jobs' duals in the per-job LP is n times their mean).
            pb.add_row(n * target.min(largest) / largest..)
        });
        for o in &job.options {
            let mut entries = vec![(one, 1.0), (capacity[o.gpu], n * o.units as f64)];
            if let Some(fair) = fair {
                entries.push((fair, n * (o.sigma / largest).max(TINY)));
            }
            pb.add_column(n * (o.value / cost_scale), 0.0.., entries);
            columns += 1;
        }
    }
    // No job has an admissible option (no jobs, or slots larger than every type's capacity):
    // then no job has a fairness row either, and the only schedule, all idle, is worth 0.
    // HiGHS answers a model without columns with `ModelEmpty` rather than an optimum.
    if columns == 0 {
        return Ok(Some(LongRunBound {
            objective: 0.0,
            share,
            bounded_jobs,
            capped_jobs,
            prices: vec![0.0; problem.jobs.len()],
        }));
    }
    let options = [
        ("output_flag", OptionValue::Bool(false)),
        ("threads", OptionValue::Int(1)),
    ];
    let answer =
        highs_lp::solve(pb, Sense::Maximise, &options).map_err(|e| SolveError::Backend {
            solver: NAME,
            message: e.to_string(),
        })?;
    match answer.outcome {
        Outcome::Optimal => Ok(Some(LongRunBound {
            objective: answer.objective * cost_scale,
            share,
            bounded_jobs,
            capped_jobs,
            prices: prices(problem.jobs.len(), &classes, &fair_rows, &answer.row_duals)
                .into_iter()
                .map(|p| p * cost_scale)
                .collect(),
        })),
        Outcome::Infeasible { .. } => Ok(None),
        _ => Err(SolveError::Backend {
            solver: NAME,
            message: format!("HiGHS ended with model status {}", answer.status),
        }),
    }
}

/// The classes of identical jobs of `problem` (the same options, values and sigmas, bit for
/// bit), each a list of job indices in job order, in order of their first job. O(sum_j |O_j|).
fn classes(problem: &RoundProblem) -> Vec<Vec<usize>> {
    type Key = Vec<(usize, u32, u64, u64, u64)>;
    let mut index: HashMap<Key, usize> = HashMap::new();
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (jx, job) in problem.jobs.iter().enumerate() {
        let key = job
            .options
            .iter()
            .map(|o| (o.gpu, o.slot, o.units, o.value.to_bits(), o.sigma.to_bits()))
            .collect();
        let c = *index.entry(key).or_insert_with(|| {
            out.push(Vec::new());
            out.len() - 1
        });
        out[c].push(jx);
    }
    out
}

/// Per job, the dual of its class's fairness row as a price >= 0 (0 for jobs without one), per
/// unit of the LP's (scaled) objective: each row's dual divided by the row's scale, its job's
/// largest sigma (a row divided by s has s times the dual).
fn prices(
    jobs: usize,
    classes: &[Vec<usize>],
    fair_rows: &[(usize, usize, f64)],
    duals: &[f64],
) -> Vec<f64> {
    let mut out = vec![0.0; jobs];
    for &(c, row, scale) in fair_rows {
        // A >= row of a maximization has a dual <= 0 in HiGHS's sign convention; its size is
        // the objective lost per unit of required sigma. A dual of the wrong sign is round-off.
        let price = duals.get(row).map_or(0.0, |d| (-d).max(0.0)) / scale;
        for &j in &classes[c] {
            out[j] = price;
        }
    }
    out
}

/// Prices of fairness service from the long-run LP at `share` of lambda (the default 1: the
/// level the round mechanism enforces), for [`RoundScheduler::with_service_prices`]: a forced
/// job's option is worth `v + price * sigma` in the round problem (docs/rounds.md, "Pricing
/// the service of forced jobs"). Recomputed by the scheduler when its jobs change; an LP with
/// no feasible point gives no prices (the round is solved unpriced).
///
/// [`RoundScheduler::with_service_prices`]: crate::RoundScheduler::with_service_prices
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LongRunPrices {
    /// The share of lambda of the LP's fairness rows, in (0, 1].
    pub share: f64,
}

impl Default for LongRunPrices {
    fn default() -> Self {
        LongRunPrices { share: 1.0 }
    }
}

impl ServicePrices for LongRunPrices {
    fn name(&self) -> &'static str {
        "lp"
    }

    fn prices(&self, instance: &Instance) -> Result<Option<Vec<f64>>, String> {
        long_run_bound(instance, self.share)
            .map(|found| found.map(|b| b.prices))
            .map_err(|e| e.to_string())
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

    /// No admissible option anywhere (a type of no GPUs; no jobs at all): the bound is 0, every
    /// price 0, without asking HiGHS, which calls a model without columns `ModelEmpty` (so
    /// `stsfair bound` and `rounds` answer there instead of failing with exit 1).
    #[test]
    fn no_admissible_option_bounds_at_zero() {
        let no_gpus = Instance::builder()
            .gpu_type("g", 0, 4, &[4])
            .job(JobSpec::new("x").time("g", 4, 1.0))
            .job(JobSpec::new("y").time("g", 4, 2.0))
            .build()
            .unwrap();
        let no_jobs = Instance::builder()
            .gpu_type("g", 2, 4, &[4])
            .build()
            .unwrap();
        for (instance, jobs) in [(&no_gpus, 2), (&no_jobs, 0)] {
            let b = long_run_bound(instance, 0.95).unwrap().unwrap();
            assert_eq!(b.objective, 0.0);
            assert_eq!(b.prices, vec![0.0; jobs]);
            assert_eq!((b.bounded_jobs, b.capped_jobs), (0, 0));
        }
    }

    /// Valid instances of extreme magnitudes: with a whole-GPU time of 1e13 s/it beside a
    /// half-GPU time of 0.4 s, job a's sigma on half a GPU is about 1e13, and HiGHS, given that
    /// entry unscaled, returns 1.0 (below the 1.8333 that `rounds` reaches); from 1e15 on it
    /// refuses the model, and the `highs` crate panics; at 1e308
    /// the sigma is infinite. Scaled, every case gives the bound: a and b on half GPUs every
    /// round, 1 + 2/2.4. A weight of 1e15 (sigmas of 1e15 for the light job) likewise.
    #[test]
    fn extreme_times_and_weights_give_the_bound() {
        let with = |whole_a: f64, weight_a: f64| {
            Instance::builder()
                .gpu_type("v100", 1, 4, &[1, 2, 4])
                .job(
                    JobSpec::new("a")
                        .weight(weight_a)
                        .time("v100", 4, whole_a)
                        .time("v100", 2, 0.4),
                )
                .job(JobSpec::new("b").time("v100", 4, 0.5).time("v100", 2, 0.6))
                .build()
                .unwrap()
        };
        for whole_a in [1e10, 1e13, 1e14, 1e15, 1e16, 1e100, 1e308] {
            let b = long_run_bound(&with(whole_a, 1.0), 0.95).unwrap().unwrap();
            let expected = 1.0 + 0.5 / 0.6;
            assert!((b.objective - expected).abs() < 1e-9, "{whole_a}: {b:?}");
            assert!(b.prices.iter().all(|p| p.is_finite() && *p >= 0.0), "{b:?}");
        }
        // Weight 1e15 on a (whole GPU 0.25 s: a's best is the whole GPU, value 1e15): b's sigma
        // is about 1e15 (its share 1e-15); the bound is a's whole GPU in most rounds.
        let heavy = Instance::builder()
            .gpu_type("v100", 1, 4, &[1, 2, 4])
            .job(JobSpec::new("a").weight(1e15).time("v100", 4, 0.25))
            .job(JobSpec::new("b").time("v100", 4, 0.5).time("v100", 2, 0.6))
            .build()
            .unwrap();
        let b = long_run_bound(&heavy, 0.95).unwrap().unwrap();
        assert!((b.objective / 1e15 - 1.0).abs() < 1e-9, "{b:?}");
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
        // At share 0.5, a's row is slack (7/8 of the rounds against 3/8 required): price 0. The
        // GPU's price pi solves 3 = 4 pi (a's column is basic): pi = 3/4; b's column is basic
        // too: 1 + 4 mu_b = 4 pi, so mu_b = 1/2 (a run of b, sigma 4, is worth 1 + 2 = 3, as
        // much as a run of a).
        let b = long_run_bound(&instance, 0.5).unwrap().unwrap();
        assert_eq!(b.prices.len(), 2);
        assert!(b.prices[0].abs() < 1e-9, "{b:?}");
        assert!((b.prices[1] - 0.5).abs() < 1e-9, "{b:?}");
    }

    /// The LP over classes of identical jobs against the LP over jobs: the same instance with
    /// every job's first time nudged by a different factor of 1 + 1e-12 (so that no two jobs
    /// are identical and every job is its own class) has the same bound to 1e-9.
    #[test]
    fn classes_give_the_bound_of_the_jobs() {
        let build = |nudge: bool| {
            let mut b = Instance::builder()
                .gpu_type("v", 3, 4, &[1, 2, 4])
                .gpu_type("k", 2, 4, &[2, 4]);
            for i in 0..12 {
                let f = if nudge {
                    1.0 + 1e-12 * f64::from(i + 1)
                } else {
                    1.0
                };
                let spec = match i % 3 {
                    0 => JobSpec::new(format!("a{i}"))
                        .time("v", 1, 3.0 * f)
                        .time("v", 4, 1.0),
                    1 => JobSpec::new(format!("b{i}"))
                        .workers(2)
                        .time("v", 4, 0.5 * f)
                        .time("k", 4, 2.0),
                    _ => JobSpec::new(format!("c{i}"))
                        .time("v", 2, 1.5 * f)
                        .time("k", 2, 2.5),
                };
                b = b.job(spec);
            }
            b.build().unwrap()
        };
        let (grouped, apart) = (build(false), build(true));
        assert_eq!(classes(&RoundProblem::new(&grouped)).len(), 3);
        assert_eq!(classes(&RoundProblem::new(&apart)).len(), 12);
        for share in [0.3, 0.95, 1.0] {
            let (a, b) = (
                long_run_bound(&grouped, share).unwrap(),
                long_run_bound(&apart, share).unwrap(),
            );
            match (a, b) {
                (Some(a), Some(b)) => {
                    assert!(
                        (a.objective - b.objective).abs() < 1e-9,
                        "{share}: {a:?} {b:?}"
                    );
                    assert_eq!(
                        (a.bounded_jobs, a.capped_jobs),
                        (b.bounded_jobs, b.capped_jobs)
                    );
                }
                (a, b) => assert_eq!(a.is_none(), b.is_none(), "{share}: {a:?} {b:?}"),
            }
        }
    }

    /// Identical jobs get one price (their class's), whatever vertex HiGHS returns.
    #[test]
    fn identical_jobs_get_one_price() {
        let mut builder = Instance::builder().gpu_type("g", 1, 4, &[1, 4]);
        for i in 0..5 {
            builder = builder.job(
                JobSpec::new(format!("s{i}"))
                    .time("g", 1, 2.0)
                    .time("g", 4, 1.0),
            );
        }
        let instance = builder
            .job(JobSpec::new("big").weight(2.0).time("g", 4, 0.5))
            .build()
            .unwrap();
        let b = long_run_bound(&instance, 1.0).unwrap().unwrap();
        assert!(b.prices.iter().all(|&p| p >= 0.0 && p.is_finite()), "{b:?}");
        assert!(b.prices[1..5].iter().all(|&p| p == b.prices[0]), "{b:?}");
    }
}
