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
pub mod sts;

use super::engine::Scheduler;
use super::gavel::{AllocationPolicy, GavelRounds};
use stsfair::SolverKind;

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
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyOptions {
    /// Solver of the `sts` round problem.
    pub sts_solver: SolverKind,
    /// Units per GPU for `sts` (spatial slots 1, 2, ... up to this, a divisibility ladder of
    /// powers of two).
    pub sts_units: u32,
    /// How the Gavel LPs are solved.
    pub lp_method: lp::Method,
    /// Let Gavel's space-sharing policies know every pair's measured throughput from the start,
    /// instead of Gavel's default estimates (see [`crate::gavel`]).
    pub measured_pairs: bool,
}

impl Default for PolicyOptions {
    fn default() -> Self {
        PolicyOptions {
            sts_solver: SolverKind::Dp,
            sts_units: 4,
            lp_method: lp::Method::InteriorPoint,
            measured_pairs: false,
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

/// Space-sharing Gavel policies with Gavel's default pair-throughput estimation (seed + 4, as
/// Gavel seeds its estimator), unless measured pairs are asked for.
fn estimated<P: AllocationPolicy + 'static>(
    rounds: GavelRounds<P>,
    config: &SimConfig,
    options: &PolicyOptions,
) -> Box<dyn Scheduler> {
    if options.measured_pairs {
        Box::new(rounds)
    } else {
        Box::new(rounds.with_pair_estimates(config.seed.wrapping_add(4)))
    }
}
