//! The scheduling policies the simulator compares, one file each.
//!
//! | name | what | file |
//! |---|---|---|
//! | `sts` | the crate's spatiotemporal-fair round scheduler | `sts.rs` |
//! | `gavel-mmf` | Gavel's heterogeneity-aware max-min fairness (`max_min_fairness_perf`) | `max_min.rs` |
//! | `gavel-mmf-ss` | the same with space sharing (`max_min_fairness_packed`) | `max_min.rs` |
//! | `ftf` | finish-time fairness (`finish_time_fairness_perf`) | `ftf.rs` |
//! | `fifo` | first in, first out on the fastest free type (`fifo_perf`) | `fifo.rs` |
//! | `gandiva` | Gandiva's random packing (`gandiva`) | `gandiva.rs` |
//!
//! Every Gavel policy runs inside Gavel's round mechanism (`GavelRounds` in `gavel.rs`);
//! space-sharing max-min fairness needs the `highs` feature (its LP is not block-structured).

mod fifo;
mod ftf;
mod gandiva;
mod ipm;
mod lp;
mod max_min;
mod sts;

pub use ipm::IpmError;
pub use lp::Method;
pub use sts::{TableData, check as check_sts};

use super::engine::Scheduler;
use super::gavel::{AllocationPolicy, GavelRounds};
use stsfair::policy::StsOptions;
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
/// options.sts = options.sts.with_units(4);
/// assert_eq!(options.sts.solver, stsfair::SolverKind::Dp);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PolicyOptions {
    /// The `sts` policy's options, every rule a field (`stsfair::policy::StsOptions`).
    pub sts: StsOptions,
    /// How `sts` derives the times of slots smaller than half a GPU from the table (the
    /// co-runner composition the simulation realizes, by default; docs/costs.md).
    pub slot_rule: SlotRule,
    /// How the Gavel LPs are solved.
    pub lp_method: lp::Method,
    /// Whether Gavel's space-sharing policies (`gavel-mmf-ss`, `gandiva`) estimate the
    /// co-located throughputs of pairs that have not run yet. `None`, as in Gavel's drivers by
    /// default, means they see every pair's measured throughput from the start.
    pub pair_estimation: Option<PairEstimation>,
}

/// Gavel's throughput estimation for space sharing, by its two driver settings
/// (`--profiling_percentage`, `--num_reference_models`; `gavel.rs` has how they are used).
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
            sts: StsOptions::default(),
            slot_rule: SlotRule::default(),
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
