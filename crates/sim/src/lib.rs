//! Trace-driven simulation of a shared heterogeneous GPU cluster, round by round.
//!
//! This is the last stage of the crate's pipeline: it feeds a stream of jobs (a Poisson
//! workload from [`workload`], or a replayed Gavel trace from [`trace`]) to a scheduling policy
//! and measures what the policy's decisions cost the jobs (average completion time, makespan,
//! finish-time fairness; see [`Metrics`]). Throughputs are the measured ones of the Gavel
//! artifact ([`ThroughputTable`]): a job's speed in a round is its solo throughput on the GPU type
//! it got, or its measured co-located throughput when it shares GPUs with another job.
//!
//! The time loop ([`Simulation::run`]) is the one of Gavel's simulator (`Scheduler.simulate` in
//! stanford-futuredata/gavel, `scheduler/scheduler.py`), so that its baselines can be checked
//! against Gavel's own numbers:
//! - a round starts when the previous one ends; each scheduled job runs
//!   `min(floor(throughput * round length), remaining steps)` steps, and the round ends when the
//!   slowest of its jobs is done (slightly before the nominal 360 s when steps round down);
//! - completions are processed at the end of the round; a job's completion time is the finish
//!   time of its placement (for a co-located pair, the later of the two);
//! - jobs whose arrival time has passed are added at the round boundary, then the next round is
//!   planned; when nothing runs, time jumps to the next arrival.
//!
//! Policies implement [`Scheduler`]: the Gavel baselines through Gavel's round mechanism and an
//! allocation policy of [`policies`], the STS policy through the core's `stsfair::policy`
//! ([`policies::by_name`] builds either). `docs/simulation.md` states every formulation.

#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use std::time::Instant;

use stsfair::instance::MAX_COUNT;

mod engine;
mod gavel;
mod metrics;
pub mod policies;
mod throughputs;
pub mod trace;
pub mod workload;

pub use engine::{
    GpuGroup, MAX_ALONE_SECONDS, NO_PROGRESS_ROUNDS, Progress, RoundReport, Run, Scheduler,
    SimState, Simulation,
};
pub use metrics::{Metrics, WindowJob};
pub use throughputs::ThroughputTable;
pub use trace::{TraceError, TraceJob};

/// Why a simulation could not be set up or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The cluster description is malformed.
    #[error("cluster {text:?}: {rule}")]
    Cluster {
        /// The text given.
        text: String,
        /// What is wrong with it.
        rule: String,
    },
    /// A job of a trace names a job type the throughput table does not know.
    #[error(
        "trace job {index} (line {line}): unknown job type {model:?} with scale factor {scale_factor}"
    )]
    UnknownJobType {
        /// 0-based job index.
        index: usize,
        /// 1-based line of the trace (the index plus one when the trace has no empty lines).
        line: usize,
        /// The model named.
        model: String,
        /// Its scale factor.
        scale_factor: u32,
    },
    /// A job can run on none of the cluster's GPU types (or needs more GPUs than any type has):
    /// it could never finish.
    #[error(
        "job {index} ({model}, scale factor {scale_factor}) cannot run on any gpu type of the cluster"
    )]
    Unrunnable {
        /// 0-based job index.
        index: usize,
        /// Its model.
        model: String,
        /// Its scale factor.
        scale_factor: u32,
    },
    /// A job would take longer than [`MAX_ALONE_SECONDS`] alone on its fastest GPU type of the
    /// cluster: its steps are too many (or its throughputs too small) to simulate round by
    /// round in a bounded time.
    #[error(
        "trace job {index} (line {line}): field 6 (total steps) {total_steps} would take \
         {seconds:.3e} s alone on its fastest gpu type ({gpu}, {} steps/s), more than the \
         limit of {limit:e} s (3.2 years) of the simulation",
        brief(*.throughput),
        limit = MAX_ALONE_SECONDS
    )]
    TooLong {
        /// 0-based job index.
        index: usize,
        /// 1-based line of the trace (the index plus one when the trace has no empty lines).
        line: usize,
        /// Its steps.
        total_steps: f64,
        /// Seconds it would take alone on `gpu`.
        seconds: f64,
        /// Its fastest GPU type of the cluster.
        gpu: String,
        /// Its solo throughput there, steps/s.
        throughput: f64,
    },
    /// A setting is out of range.
    #[error("{setting} {rule} (got {got})")]
    Setting {
        /// The setting, e.g. "window".
        setting: &'static str,
        /// The rule.
        rule: &'static str,
        /// The value given.
        got: String,
    },
    /// The sts policy's fairness parameters are out of range (the rule of
    /// [`Fairness::check`](stsfair::Fairness::check), naming `fairness.lambda`, ...).
    #[error("sts {source}")]
    Fairness {
        /// The rule broken.
        source: stsfair::InstanceError,
    },
    /// The sts policy of the core crate refused an event or could not plan.
    #[error("policy sts: {source}")]
    Policy {
        /// The core's error.
        source: stsfair::policy::PolicyError,
    },
    /// The interior point method of an LP policy stopped without an answer.
    #[error("policy {policy}: {source}")]
    InteriorPoint {
        /// The policy.
        policy: String,
        /// The method's error.
        source: policies::IpmError,
    },
    /// HiGHS gave an LP policy no answer (feature `highs`).
    #[cfg(feature = "highs")]
    #[error("policy {policy}: {source}")]
    Highs {
        /// The policy.
        policy: String,
        /// The adapter's error.
        source: stsfair::highs_lp::HighsError,
    },
    /// The policy's optimization problem could not be solved, for a reason the simulator
    /// finds itself (an LP of the wrong shape, a method that stalls, a status with no answer).
    #[error("policy {policy}: {message}")]
    Solver {
        /// The policy.
        policy: String,
        /// What the solver reported.
        message: String,
    },
    /// A policy returned a placement that breaks the cluster's rules (a bug in the policy).
    #[error("policy {policy} at t={time:.0}s: invalid placement: {reason}")]
    InvalidPlacement {
        /// The policy.
        policy: String,
        /// Simulated time.
        time: f64,
        /// What is wrong.
        reason: String,
    },
    /// Jobs are left, nothing runs and nothing will arrive: the policy will never schedule them.
    #[error(
        "policy {policy} stalled at t={time:.0}s with {active} unfinished jobs and nothing scheduled"
    )]
    Stalled {
        /// The policy.
        policy: String,
        /// Simulated time.
        time: f64,
        /// Jobs left.
        active: usize,
    },
    /// Jobs are left, nothing will arrive, and the placed jobs have completed no step for
    /// [`NO_PROGRESS_ROUNDS`] rounds in a row: where they are placed their throughputs are
    /// below one step a round (Gavel's rounds run whole steps), so the run would never end.
    #[error(
        "policy {policy} made no progress at t={time:.0}s: {rounds} rounds in a row without a \
         completed step and {active} unfinished jobs (where they are placed, their throughputs \
         are below one step a round)"
    )]
    NoProgress {
        /// The policy.
        policy: String,
        /// Simulated time.
        time: f64,
        /// Rounds in a row without a step.
        rounds: u64,
        /// Jobs left.
        active: usize,
    },
    /// An unknown policy name.
    #[error("unknown policy {name:?}; known: {known}")]
    UnknownPolicy {
        /// The name given.
        name: String,
        /// The names known.
        known: String,
    },
}

/// A number for a message: as written when that is short (`0.5`), to two decimals from 1 to
/// 10^6 (`24.09`), in exponent form otherwise (`1e-15`, not 17 characters of zeros;
/// `1.235e-30`).
pub(crate) fn brief(x: f64) -> String {
    let plain = x.to_string();
    if plain.len() <= 10 {
        return plain;
    }
    if (1.0..1e6).contains(&x.abs()) {
        return format!("{x:.2}");
    }
    let exponent = format!("{x:e}");
    if exponent.len() <= 10 {
        exponent
    } else {
        format!("{x:.3e}")
    }
}

impl SimError {
    /// Whether the error is in what the caller gave (the cluster, the jobs, a setting, a policy
    /// name) rather than in a run: a command-line tool exits with its usage code for these
    /// (FORMAT.md: 2), and with 1 for a solver failure, an invalid placement or a stall.
    pub fn is_input(&self) -> bool {
        match self {
            SimError::Cluster { .. }
            | SimError::UnknownJobType { .. }
            | SimError::Unrunnable { .. }
            | SimError::TooLong { .. }
            | SimError::Setting { .. }
            | SimError::Fairness { .. }
            | SimError::UnknownPolicy { .. } => true,
            SimError::Solver { .. }
            | SimError::Policy { .. }
            | SimError::InteriorPoint { .. }
            | SimError::InvalidPlacement { .. }
            | SimError::Stalled { .. }
            | SimError::NoProgress { .. } => false,
            #[cfg(feature = "highs")]
            SimError::Highs { .. } => false,
        }
    }
}

/// One GPU type of the simulated cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterType {
    /// Its name (a worker type of the throughput table).
    pub name: String,
    /// Index of the worker type in the [`ThroughputTable`].
    pub worker: usize,
    /// Number of GPUs.
    pub count: u32,
}

/// The simulated cluster: GPU types in the order the round mechanism fills them.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// GPU types, fastest first (Gavel fills v100, then p100, then k80).
    pub types: Vec<ClusterType>,
}

impl Cluster {
    /// Parses `v100=36,p100=36,k80=36` against the worker types of `table`. The order written is
    /// the order in which the round mechanism fills the types.
    pub fn parse(text: &str, table: &ThroughputTable) -> Result<Cluster, SimError> {
        let err = |rule: String| SimError::Cluster {
            text: text.to_string(),
            rule,
        };
        let mut types: Vec<ClusterType> = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, count) = part
                .split_once('=')
                .ok_or_else(|| err(format!("{part:?} must be written type=count")))?;
            let name = name.trim();
            let worker = table.worker(name).ok_or_else(|| {
                err(format!(
                    "unknown gpu type {name:?}; the throughputs know {}",
                    table.workers().join(", ")
                ))
            })?;
            // The round problem's limit (`stsfair::instance::MAX_COUNT`) for every policy: the
            // engine keeps a slot per GPU; past it sts failed at the first arrival (exit 1,
            // naming the instance's `gpu_types[0].count`), and a count past 2^32 was called
            // "not a non-negative integer", which it was.
            let count = count.trim();
            let count = count
                .parse::<u32>()
                .ok()
                .filter(|&c| u64::from(c) <= MAX_COUNT)
                .ok_or_else(|| {
                    err(format!(
                        "count of {name} must be an integer in [0, {MAX_COUNT}] (got {count:?})"
                    ))
                })?;
            if types.iter().any(|t| t.name == name) {
                return Err(err(format!("gpu type {name} is listed twice")));
            }
            types.push(ClusterType {
                name: name.to_string(),
                worker,
                count,
            });
        }
        if types.iter().all(|t| t.count == 0) {
            return Err(err("the cluster has no gpu".to_string()));
        }
        Ok(Cluster { types })
    }

    /// GPUs per type, in cluster order.
    pub fn counts(&self) -> Vec<u32> {
        self.types.iter().map(|t| t.count).collect()
    }

    /// Total number of GPUs.
    pub fn gpus(&self) -> u64 {
        self.types.iter().map(|t| u64::from(t.count)).sum()
    }
}

/// A job as the simulator sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct SimJob {
    /// Index of its type in the [`ThroughputTable`].
    pub job_type: usize,
    /// GPUs it uses at once.
    pub scale_factor: u32,
    /// Priority weight w_j.
    pub weight: f64,
    /// Steps to run.
    pub total_steps: f64,
    /// Arrival time, seconds.
    pub arrival: f64,
}

/// Settings of a simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Round length in seconds (Gavel: 360).
    pub round_seconds: f64,
    /// Minimum time between two allocation resets of Gavel's mechanism (Gavel: 1,920 s).
    pub reset_seconds: f64,
    /// Jobs whose metrics count, as an inclusive range of job indices; `None`: all jobs. The
    /// simulation stops when they have all finished.
    pub window: Option<(usize, usize)>,
    /// Fairness level lambda for `share_meeting_lambda`.
    pub lambda: f64,
    /// Seed of the policies' own randomness (Gandiva's pairing).
    pub seed: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            round_seconds: 360.0,
            reset_seconds: 1920.0,
            window: None,
            lambda: 1.0,
            seed: 0,
        }
    }
}

/// Parses `A-B` (inclusive job indices).
pub fn parse_window(text: &str) -> Result<(usize, usize), SimError> {
    let bad = || SimError::Setting {
        setting: "window",
        rule: "must be A-B with 0 <= A <= B",
        got: text.to_string(),
    };
    let (a, b) = text.split_once('-').ok_or_else(bad)?;
    let a: usize = a.trim().parse().map_err(|_| bad())?;
    let b: usize = b.trim().parse().map_err(|_| bad())?;
    if a > b {
        return Err(bad());
    }
    Ok((a, b))
}

/// Turns trace jobs into simulator jobs, resolving job types against `table`.
pub fn jobs_from_trace(
    trace: &[TraceJob],
    table: &ThroughputTable,
) -> Result<Vec<SimJob>, SimError> {
    trace
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let job_type = table.job_type(&t.job_type, t.scale_factor).ok_or_else(|| {
                SimError::UnknownJobType {
                    index: i,
                    line: i + 1,
                    model: t.job_type.clone(),
                    scale_factor: t.scale_factor,
                }
            })?;
            // Trace steps are integers far below 2^53: exact as f64.
            #[allow(clippy::cast_precision_loss)]
            let total_steps = t.total_steps as f64;
            Ok(SimJob {
                job_type,
                scale_factor: t.scale_factor,
                weight: t.priority_weight,
                total_steps,
                arrival: t.arrival,
            })
        })
        .collect()
}

/// Everything a finished simulation reports, job by job.
#[derive(Debug, Clone, PartialEq)]
pub struct SimResult {
    /// Policy name.
    pub policy: String,
    /// The window (inclusive job indices) whose jobs the metrics cover.
    pub window: (usize, usize),
    /// Per job (all jobs of the input, in order).
    pub jobs: Vec<JobOutcome>,
    /// Time the first window job was added (the round boundary after its arrival), seconds.
    pub window_start: f64,
    /// End of the round in which the last window job finished, seconds.
    pub window_end: f64,
    /// Rounds simulated.
    pub rounds: u64,
    /// Seconds spent in the policy's solver (LPs, round problems).
    pub solver_seconds: f64,
    /// Wall-clock seconds of the whole run.
    pub wall_seconds: f64,
    /// Busy GPU-seconds over available GPU-seconds during the window.
    pub utilization: f64,
    /// Work done per busy GPU-second during the window, the work of a step counted as the
    /// GPU-seconds it takes at the job's best solo speed (times its GPUs): 1 when every busy GPU
    /// runs its job alone on the job's fastest type, more where co-location gains, less on
    /// slower types or beside co-runners that slow it more than sharing gains.
    pub work_per_busy_gpu: f64,
    /// Placements that kept all of their GPUs from the previous round, over placements of jobs
    /// that ran in the previous round too.
    pub lease_extension_share: f64,
    /// Solver calls answered by a fallback solver ([`engine::Scheduler::solver_fallbacks`]).
    pub solver_fallbacks: u64,
    /// Mean realized / planned throughput ([`engine::Scheduler::realized_over_planned`]).
    pub realized_over_planned: Option<f64>,
}

/// What happened to one job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobOutcome {
    /// Arrival time, seconds.
    pub arrival: f64,
    /// Completion time, seconds (`None`: not finished when the simulation stopped).
    pub completion: Option<f64>,
    /// Steps of the job.
    pub total_steps: f64,
    /// Its best solo throughput over the cluster's types (steps/s).
    pub best_throughput: f64,
    /// Equal-share throughput F_j with a 1/n share of the cluster, n the time-averaged number of
    /// active jobs over the job's life (MODEL.md section 3).
    pub fair_rate: f64,
    /// Time-averaged number of active jobs over the job's life.
    pub contention: f64,
    /// Seconds the job held GPUs, per cluster type (in the cluster's order): what it ran, the
    /// rest of its JCT it waited.
    pub placed_seconds: Vec<f64>,
    /// Of those, seconds in a slot of a GPU or beside co-runners.
    pub shared_seconds: f64,
}

impl JobOutcome {
    /// Job completion time (completion - arrival), seconds.
    pub fn jct(&self) -> Option<f64> {
        self.completion.map(|c| c - self.arrival)
    }

    /// Finish-time fairness rho = JCT / (steps / fair rate) (metrics module), `None` while
    /// unfinished; 0 for a job without a fair rate (nothing it could have been owed).
    pub fn rho(&self) -> Option<f64> {
        let alone = if self.fair_rate > 0.0 {
            self.total_steps / self.fair_rate
        } else {
            f64::INFINITY
        };
        self.jct().map(|t| t / alone)
    }
}

/// Runs `scheduler` on `jobs` and returns the outcome; `progress` is called after every round.
pub fn simulate(
    table: &ThroughputTable,
    cluster: &Cluster,
    jobs: &[SimJob],
    config: &SimConfig,
    scheduler: &mut dyn Scheduler,
    progress: &mut dyn FnMut(Progress),
) -> Result<SimResult, SimError> {
    let start = Instant::now();
    let mut sim = Simulation::new(table, cluster, jobs, config)?;
    let mut result = sim.run(scheduler, progress)?;
    result.wall_seconds = start.elapsed().as_secs_f64();
    Ok(result)
}
