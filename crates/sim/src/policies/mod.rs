//! The scheduling policies the simulator compares, one file each.
//!
//! | name | what | file |
//! |---|---|---|
//! | `sts` | the crate's spatiotemporal-fair round scheduler | [`sts`] |
//! | `gavel-mmf` | Gavel's heterogeneity-aware max-min fairness (`max_min_fairness_perf`) | [`max_min`] |
//! | `gavel-mmf-ss` | the same with space sharing (`max_min_fairness_packed`) | [`max_min`] |
//! | `ftf` | finish-time fairness (`finish_time_fairness_perf`) | [`ftf`] |
//! | `fifo` | first in, first out on the fastest free type (`fifo_perf`) | [`fifo`] |
//! | `gandiva` | Gandiva's random packing (`gandiva`) | [`gandiva`] |
//!
//! Every Gavel policy runs inside Gavel's round mechanism ([`GavelRounds`]); space-sharing
//! max-min fairness needs the `highs` feature (its LP is not block-structured).

pub mod fifo;
pub mod ftf;
pub mod gandiva;
pub mod ipm;
pub mod lp;
pub mod max_min;
pub mod paired;
pub mod sts;

use super::engine::Scheduler;
use super::gavel::{AllocationPolicy, GavelRounds};
use stsfair::{Fairness, SolverKind};
use stsfair_costs::slots::SlotRule;

use super::{Cluster, SimConfig, SimError};

/// The policy names [`by_name`] knows, in the order the CLI lists them.
pub fn policy_names() -> Vec<&'static str> {
    let mut names = vec!["sts", "gavel-mmf"];
    if cfg!(feature = "highs") {
        names.push("gavel-mmf-ss");
    }
    names.extend(["ftf", "fifo", "gandiva"]);
    names
}

/// Settings of the policies that have any.
///
/// Start from `PolicyOptions::default()` and set the fields (the struct is `#[non_exhaustive]`:
/// settings may be added without breaking callers):
///
/// ```
/// let mut options = stsfair_sim::policies::PolicyOptions::default();
/// options.sts_units = 4;
/// assert_eq!(options.sts_solver, stsfair::SolverKind::Dp);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PolicyOptions {
    /// Solver of the `sts` round problem.
    pub sts_solver: SolverKind,
    /// Units per GPU for `sts` (spatial slots 1, 2, ... up to this, a divisibility ladder of
    /// powers of two). 2 by default: half GPUs, whose co-located times are measured pairs; 4
    /// adds quarter GPUs, priced by composing pairs (docs/simulation.md has the measurements).
    pub sts_units: u32,
    /// Fairness parameters of `sts` (lambda, allowed debt, credit bound; MODEL.md section 3).
    pub sts_fairness: Fairness,
    /// How `sts` derives the times of slots smaller than half a GPU (the co-runner composition
    /// the simulation realizes, by default; docs/costs.md).
    pub sts_slot_rule: SlotRule,
    /// How `sts` weights jobs (their shares and the value of their options).
    pub sts_weights: sts::Weights,
    /// How a distributed job's weight in `sts` grows with its workers d_j: it weighs d_j raised
    /// to this exponent in [0, 1] times a one-worker job ([`sts::job_weight`]). 0: one weight a
    /// job; 1: the same share of time for every job,
    /// as Gavel's max-min fairness, and a GPU worth as much in a job of any size. By default
    /// [`sts::DEFAULT_SIZE_EXPONENT`] (0.75), chosen by measurement (docs/simulation.md, "Weights
    /// that count the workers", "The size exponent once the second stage is confined").
    pub sts_size_exponent: f64,
    /// Whether `sts` prices the fairness service of forced jobs with the long-run LP's duals
    /// (`stsfair::bound::LongRunPrices`, recomputed every round the jobs or weights change;
    /// needs the feature `highs`). Off by default in the simulation, where the LP would be solved
    /// again every round the weights change (docs/simulation.md, "Prices").
    pub sts_prices: bool,
    /// The pairing step of `sts` (`sts` module docs): each round the active single-GPU jobs are
    /// matched per GPU type into pairs whose measured pair sum `r(a|b) + r(b|a)` is at least
    /// this, and a half GPU is priced beside the job's partner; an unmatched job gets whole
    /// GPUs only (so an infinite threshold means no half GPUs). By default
    /// `Some(`[`sts::DEFAULT_PAIRING`]`)` (1.4), chosen by measurement (docs/simulation.md, "A
    /// pairing step", "Pairing thresholds where arrivals go on"); `None` prices every half GPU
    /// at the median pair. Applies to `sts_units == 2` only.
    pub sts_pairing: Option<f64>,
    /// Per GPU type thresholds of the pairing step, by type name, in place of
    /// [`PolicyOptions::sts_pairing`] on that type (when the step is on; a type the cluster
    /// lacks is ignored; infinite: no pairs, whole GPUs only on that type). `None` (the
    /// default): derived from the throughputs and the cluster at the first round
    /// ([`sts::derived_pairing_by_type`]: the slowest of several types at 1.0, a type whose
    /// median pair sum is below halfway to the threshold infinite); `Some(vec![])`: every type
    /// at `sts_pairing`.
    pub sts_pairing_by_type: Option<Vec<(String, f64)>>,
    /// GPU types (by name) on which, in the rounds where `sts`'s attained-service weights apply
    /// ([`PolicyOptions::sts_crowding`]), a single-GPU job that the pairing step matched there
    /// gets only its half slot, beside its partner, and no whole GPU of that type: where more
    /// jobs wait than run, a good pair's extra work is worth more than one young job's full
    /// speed, which the attained-service weights would choose. Empty by default; `v100` is the
    /// measured variant (docs/simulation.md, "Matched
    /// jobs share the V100s when crowded"). Needs the pairing step
    /// ([`PolicyOptions::sts_pairing`]); a type the cluster lacks is ignored.
    pub sts_crowded_sharing: Vec<String>,
    /// The second stage of `sts`'s round scheduler (`stsfair::RoundScheduler::with_second_stage`):
    /// after the round problem chooses who runs with the jobs' weights, where the chosen jobs run
    /// is chosen again with the weights raised to this exponent (0: the most normalized
    /// throughput; 1 or `None`: the round problem's own choice). By default
    /// `Some(`[`sts::DEFAULT_SECOND_STAGE`]`)` (0.25), chosen by measurement (docs/simulation.md,
    /// "Work per busy GPU", "The second stage's exponent where only crowded rounds have it").
    pub sts_second_stage: Option<f64>,
    /// In which rounds `sts`'s second stage runs: by default
    /// [`sts::SecondStageRounds::Attained`], only where the attained-service weights apply
    /// (chosen by measurement, docs/simulation.md, "The second stage only where attained service
    /// weights the jobs"); [`sts::SecondStageRounds::All`] runs it in every round whose chosen
    /// jobs' weights differ.
    pub sts_second_stage_rounds: sts::SecondStageRounds,
    /// When `sts`'s attained-service weights apply ([`sts::Weights::Attained`] and
    /// [`sts::Weights::AttainedGpu`]): only in rounds where the active jobs are more than this
    /// many times the cluster's GPUs (jobs counted, not their workers: docs/simulation.md,
    /// "Weights that count the workers"); in other rounds every job
    /// has its trace weight (equal shares), except in the rounds after a crowded one until
    /// the next arrival ([`PolicyOptions::sts_crowding_hold`]). By default
    /// `Some(`[`sts::DEFAULT_CROWDING`]`)` (1.5); `None`: every round. Least attained service
    /// finishes short jobs first when the cluster is oversubscribed, but where jobs keep arriving
    /// it holds the long ones back until the cluster clogs (docs/simulation.md, "Arrivals that do
    /// not stop").
    pub sts_crowding: Option<f64>,
    /// Whether `sts`'s attained-service weights, once a round is crowded
    /// ([`PolicyOptions::sts_crowding`]), stay on until the next job arrives, however few jobs
    /// are left: a crowded cluster that nothing enters is draining its backlog. On by default,
    /// chosen by measurement (docs/simulation.md, "Held until the next arrival": under the drained
    /// overload (8 jobs/h) a lower JCT on six seeds of six and a shorter makespan on five);
    /// `false`: the weights end with the first uncrowded round.
    pub sts_crowding_hold: bool,
    /// Whether `sts` plans its uncrowded rounds of single-GPU jobs as paired rounds
    /// ([`paired`]): where the attained-service weights do not apply
    /// ([`PolicyOptions::sts_crowding`]), every active job is a single-GPU job and the pairing
    /// step is on ([`PolicyOptions::sts_pairing`], half GPUs), a GPU shared by two jobs is one
    /// choice worth both jobs' measured throughputs, solved exactly over classes of identical
    /// jobs, with the round mechanism's forced jobs at their floors; GPU types with an infinite
    /// pairing threshold (the P100s by default) are not shared. On by default, chosen by
    /// measurement (docs/simulation.md, "Pairs as items"). `false`: every round through the round
    /// problem.
    pub sts_paired_rounds: bool,
    /// `sts`'s starvation promotion: where its attained-service weights apply, a job whose age
    /// less its attained service is more than this many times its attained service is weighted
    /// as a job that has not run yet ([`sts::attained_for_weight`]). By default
    /// `Some(`[`sts::DEFAULT_PROMOTION`]`)` (4); `None`: off. Chosen by measurement
    /// (docs/simulation.md, "Starvation promotion past saturation").
    pub sts_promotion: Option<f64>,
    /// `sts`'s critical-job rule: where its attained-service weights apply and no job has
    /// arrived for [`PolicyOptions::sts_critical_after`] seconds, a job whose remaining hours at
    /// its best solo speed are at least this many times the backlog's drain time (every active
    /// job's remaining hours over the cluster's pace in the last round) is weighted as a job
    /// that has not run yet ([`sts::critical_jobs`]). It reads the jobs' remaining steps. By
    /// default `Some(`[`sts::DEFAULT_CRITICAL`]`)` (1.2); `None`: off. Chosen by measurement
    /// (docs/simulation.md, "Jobs that would outlast the backlog").
    pub sts_critical: Option<f64>,
    /// How long no job must have arrived, in seconds, before `sts`'s critical-job rule
    /// ([`PolicyOptions::sts_critical`]) acts: the rule is for a crowd that drains, and where
    /// jobs keep arriving past saturation it clogged the cluster. By default
    /// [`sts::DEFAULT_CRITICAL_AFTER`] (an hour).
    pub sts_critical_after: f64,
    /// How the Gavel LPs are solved.
    pub lp_method: lp::Method,
    /// Whether Gavel's space-sharing policies (`gavel-mmf-ss`, `gandiva`) estimate the
    /// co-located throughputs of pairs that have not run yet. `None`, as in Gavel's drivers by
    /// default, means they see every pair's measured throughput from the start.
    pub pair_estimation: Option<PairEstimation>,
}

/// Gavel's throughput estimation for space sharing, by its two driver settings
/// (`--profiling_percentage`, `--num_reference_models`; [`crate::gavel`] has how they are used).
/// Gavel estimates only when the percentage is below 1 or fewer reference models than job types
/// are used; [`PairEstimation::new`] returns `None` for the two values that mean no estimation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairEstimation {
    profiling_percentage: f64,
    reference_models: usize,
}

impl PairEstimation {
    /// The estimation with `profiling_percentage` P (the probability that a new job is profiled
    /// against each reference model on each GPU type, 0 < P <= 1) and `reference_models` N (how
    /// many of the `job_types` single-GPU job types are reference models, 1 <= N <= job_types);
    /// `Ok(None)` when P = 1 and N = job_types (Gavel's default: no estimation).
    pub fn new(
        profiling_percentage: f64,
        reference_models: usize,
        job_types: usize,
    ) -> Result<Option<PairEstimation>, SimError> {
        // Written so that NaN fails too.
        if !(profiling_percentage > 0.0 && profiling_percentage <= 1.0) {
            return Err(SimError::Setting {
                setting: "profiling_percentage",
                rule: "must be in (0, 1]",
                got: profiling_percentage.to_string(),
            });
        }
        if reference_models == 0 || reference_models > job_types {
            return Err(SimError::Setting {
                setting: "reference_models",
                rule: "must be between 1 and the number of single-GPU job types",
                got: format!("{reference_models}, with {job_types} job types"),
            });
        }
        if profiling_percentage == 1.0 && reference_models == job_types {
            return Ok(None);
        }
        Ok(Some(PairEstimation {
            profiling_percentage,
            reference_models,
        }))
    }

    /// P, the share of (reference model, GPU type) co-located throughputs profiled per job.
    pub fn profiling_percentage(&self) -> f64 {
        self.profiling_percentage
    }

    /// N, the number of reference models.
    pub fn reference_models(&self) -> usize {
        self.reference_models
    }
}

impl Default for PolicyOptions {
    fn default() -> Self {
        PolicyOptions {
            sts_solver: SolverKind::Dp,
            sts_units: 2,
            sts_fairness: Fairness::default(),
            sts_slot_rule: SlotRule::default(),
            sts_weights: sts::Weights::default(),
            sts_size_exponent: sts::DEFAULT_SIZE_EXPONENT,
            sts_prices: false,
            sts_pairing: Some(sts::DEFAULT_PAIRING),
            sts_pairing_by_type: None,
            sts_crowded_sharing: Vec::new(),
            sts_second_stage: Some(sts::DEFAULT_SECOND_STAGE),
            sts_second_stage_rounds: sts::SecondStageRounds::Attained,
            sts_crowding: Some(sts::DEFAULT_CROWDING),
            sts_crowding_hold: true,
            sts_paired_rounds: true,
            sts_promotion: Some(sts::DEFAULT_PROMOTION),
            sts_critical: Some(sts::DEFAULT_CRITICAL),
            sts_critical_after: sts::DEFAULT_CRITICAL_AFTER,
            lp_method: lp::Method::InteriorPoint,
            pair_estimation: None,
        }
    }
}

/// A policy by name, ready to run on `cluster`.
pub fn by_name(
    name: &str,
    cluster: &Cluster,
    config: &SimConfig,
    options: &PolicyOptions,
) -> Result<Box<dyn Scheduler>, SimError> {
    let k = cluster.types.len();
    let method = options.lp_method;
    let scheduler: Box<dyn Scheduler> = match name {
        "fifo" => gavel(
            fifo::Fifo::new(cluster.types.iter().map(|t| t.name.clone()).collect()),
            k,
            config,
        ),
        "gandiva" => estimated(
            gavel_rounds(gandiva::Gandiva::new(config.seed), k, config),
            config,
            options,
        ),
        "gavel-mmf" => gavel(max_min::MaxMinFairness::perf(method), k, config),
        #[cfg(feature = "highs")]
        "gavel-mmf-ss" => estimated(
            gavel_rounds(max_min::MaxMinFairness::packed(method), k, config),
            config,
            options,
        ),
        "ftf" => gavel(ftf::FinishTimeFairness::new(method), k, config),
        "sts" => Box::new(sts::Sts::new(cluster, config, options)?),
        _ => {
            return Err(SimError::UnknownPolicy {
                name: name.to_string(),
                known: policy_names().join(", "),
            });
        }
    };
    Ok(scheduler)
}

fn gavel_rounds<P: AllocationPolicy>(
    policy: P,
    types: usize,
    config: &SimConfig,
) -> GavelRounds<P> {
    GavelRounds::new(policy, types, config.round_seconds, config.reset_seconds)
}

fn gavel<P: AllocationPolicy + 'static>(
    policy: P,
    types: usize,
    config: &SimConfig,
) -> Box<dyn Scheduler> {
    Box::new(gavel_rounds(policy, types, config))
}

/// Space-sharing Gavel policies, with Gavel's pair-throughput estimation when it is asked for
/// (seeded with seed + 4, as Gavel seeds its estimator).
fn estimated<P: AllocationPolicy + 'static>(
    rounds: GavelRounds<P>,
    config: &SimConfig,
    options: &PolicyOptions,
) -> Box<dyn Scheduler> {
    match options.pair_estimation {
        None => Box::new(rounds),
        Some(estimation) => {
            Box::new(rounds.with_pair_estimates(estimation, config.seed.wrapping_add(4)))
        }
    }
}
