//! The round policy a scheduler links: [`StsPolicy`], the spatiotemporal-fair policy whose
//! results docs/results.md reports, as a type driven by events (a job arrived, a job finished, a
//! round was realized) that answers each round with a plan (who runs where).
//!
//! The data flows through one module per stage:
//! [`data`] (the co-location data, [`Throughputs`], which a scheduler brings: Gavel's table, its
//! own profiler's, predictions) -> [`options`] (every rule a field of [`StsOptions`]) ->
//! [`rules`] (weights, promotion, critical jobs, the pairing step's matching and thresholds) ->
//! [`sts`] (the policy: the round problem through [`RoundScheduler`](crate::RoundScheduler), or a
//! paired round) -> [`paired_round`] (a round of single-GPU jobs with pairs of jobs as items) ->
//! [`paired`] (its integer program, solved exactly).
//!
//! The policy needs no HiGHS: the round problem is solved by the DP and the paired round by the
//! crate's own branch and bound, in the default build.

mod branch_bound;
pub mod data;
pub mod options;
pub mod paired;
pub mod paired_round;
pub mod rules;
pub mod snapshot;
pub mod sts;

use thiserror::Error;

pub use data::{ThroughputMatrix, Throughputs, composed_throughput};
pub use options::{SecondStageRounds, StsOptions, Weights};
pub use paired::{PairedClass, PairedColumn, PairedError, PairedProgram};
pub use snapshot::StsSnapshot;
pub use sts::{Realized, StsJob, StsPlan, StsPolicy, StsRun};

/// Why the policy refused a setting, a job or an event, or could not plan.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// An option out of its range ([`StsOptions::check`]).
    #[error("{setting} {rule} (got {got})")]
    Setting {
        /// The option's field.
        setting: &'static str,
        /// The rule it breaks.
        rule: &'static str,
        /// The value given.
        got: String,
    },
    /// Fairness parameters the instance format refuses.
    #[error("fairness: {source}")]
    Fairness {
        /// The instance format's error, naming the parameter.
        source: crate::InstanceError,
    },
    /// A cluster the round problem refuses (a GPU type named twice, too many GPUs).
    #[error("cluster: {source}")]
    Cluster {
        /// The instance format's error.
        source: crate::InstanceError,
    },
    /// Co-location data whose shape or values are invalid ([`ThroughputMatrix::new`]).
    #[error("throughputs: {what}")]
    Data {
        /// What is wrong, by place.
        what: String,
    },
    /// A job or a report of one that breaks a rule.
    #[error("job {job} {rule}")]
    Job {
        /// The job's id.
        job: u64,
        /// The rule.
        rule: &'static str,
    },
    /// A job that is not active.
    #[error("job {job} is not active")]
    UnknownJob {
        /// The job's id.
        job: u64,
    },
    /// The round scheduler refused an event or failed to plan.
    #[error(transparent)]
    Round(#[from] crate::RoundError),
    /// A snapshot that breaks a rule ([`StsPolicy::restore`]).
    #[error("snapshot: {field} {rule}")]
    Snapshot {
        /// The field, as a path.
        field: String,
        /// The rule.
        rule: String,
    },
    /// The paired round's program failed.
    #[error("paired round: {0}")]
    Paired(#[from] PairedError),
}
