//! What a simulation is judged by, computed over the jobs of its window.
//!
//! - `avg_jct_h`: mean job completion time (finish - arrival), hours.
//! - `makespan_h`: from the round at which the first window job was added to the end of the round
//!   in which the last one finished (Gavel's "window duration"), hours.
//! - `throughput_jobs_h`: window jobs per hour of makespan.
//! - Finish-time fairness rho_j = JCT_j / (steps_j / F_j), F_j the job's equal-share throughput
//!   with a 1/n share of the cluster, n the time-averaged number of active jobs over its life
//!   (Themis's rho with the contention measured rather than assumed; Mahajan et al., NSDI 2020).
//!   rho <= 1: the job finished at least as fast as under an equal split. `ftf_rho_p50`, the
//!   median, and `ftf_rho_max`, the worst.
//! - `jain`: Jain's index (sum s)^2 / (n sum s^2) of the normalized service s_j = 1 / rho_j (Jain,
//!   Chiu and Hawe, DEC-TR-301, 1984); 1 when every job got the same multiple of its share.
//! - `share_meeting_lambda`: the fraction of jobs with s_j >= lambda, i.e. that received at least
//!   lambda times their equal share on average over their life.
//! - `solver_seconds_per_round`, `seconds`: solver time per round and wall time of the run;
//!   `solver_fallbacks`: round-problem solves that the configured solver refused as too large and
//!   the ILP answered, and paired rounds past the branch and bound's limits, planned as
//!   usual (`sts` only); `realized_over_planned`: the mean over job-rounds of the
//!   throughput a job realized beside its actual co-runners over the one its plan promised
//!   (`sts` only): how far the slot times the planner used are from what runs.
//! - `avg_jct_bound_h`, `makespan_bound_h`: what no policy can beat, every job alone on its
//!   fastest GPU type from its arrival on (a co-located job runs no faster than alone): the mean
//!   of steps / best solo throughput, and the latest arrival + that time, from the window's start.
//!   They show how much room a workload leaves a scheduler.
//! - `drain_h`: how long the window went on after the last job of the input arrived, hours (0
//!   when jobs were still arriving when the window's last job finished). Gavel's simulator
//!   generates jobs until the window is done, so its windows never drain; in a drained window
//!   the last jobs run with nothing arriving behind them, which flatters a policy that holds
//!   long jobs back (least attained service): docs/simulation.md, "Arrivals that do not stop".
//!
//! All are O(n) (the median O(n log n)) over the window's n jobs.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Cluster, SimJob, SimResult, ThroughputTable};

/// The metrics of one run (the JSON of `stsfair simulate --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    /// Policy.
    pub policy: String,
    /// Jobs in the window.
    pub jobs: usize,
    /// Window jobs that finished (all of them unless the run was cut short).
    pub finished: usize,
    /// Mean JCT, hours.
    pub avg_jct_h: f64,
    /// Window duration, hours.
    pub makespan_h: f64,
    /// Window jobs per hour.
    pub throughput_jobs_h: f64,
    /// Median finish-time fairness rho.
    pub ftf_rho_p50: f64,
    /// Largest rho.
    pub ftf_rho_max: f64,
    /// Jain's index of 1 / rho.
    pub jain: f64,
    /// Share of jobs with 1 / rho >= lambda.
    pub share_meeting_lambda: f64,
    /// Solver seconds per round.
    pub solver_seconds_per_round: f64,
    /// Wall seconds of the run.
    pub seconds: f64,
    /// Rounds simulated.
    pub rounds: u64,
    /// Busy GPU time over available GPU time in the window.
    pub utilization: f64,
    /// Work per busy GPU-second in the window, in seconds at each job's best solo speed
    /// ([`SimResult::work_per_busy_gpu`]); `utilization * work_per_busy_gpu` is the cluster's
    /// work rate per GPU.
    pub work_per_busy_gpu: f64,
    /// Solver calls answered by the fallback solver.
    pub solver_fallbacks: u64,
    /// Mean over job-rounds of realized / planned throughput (`sts` only; `null` otherwise).
    pub realized_over_planned: Option<f64>,
    /// Mean over the window of the job's time alone on its fastest type, hours.
    pub avg_jct_bound_h: f64,
    /// Latest (arrival + time alone on its fastest type) of the window, from the window's
    /// start, hours.
    pub makespan_bound_h: f64,
    /// Hours of the window after the input's last arrival (0 if jobs were still arriving when
    /// the window's last job finished).
    pub drain_h: f64,
}

impl Metrics {
    /// Computes the metrics of `result` with fairness level `lambda`.
    pub fn new(result: &SimResult, lambda: f64) -> Metrics {
        let (a, b) = result.window;
        let window = &result.jobs[a..=b];
        let done: Vec<_> = window.iter().filter(|j| j.completion.is_some()).collect();
        let n = done.len() as f64;
        let mean = |v: &[f64]| {
            if v.is_empty() {
                f64::NAN
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        let jcts: Vec<f64> = done.iter().filter_map(|j| j.jct()).collect();
        let mut rho: Vec<f64> = done
            .iter()
            .map(|j| j.rho().unwrap_or(f64::INFINITY))
            .collect();
        rho.sort_by(f64::total_cmp);
        let service: Vec<f64> = rho.iter().map(|r| 1.0 / r).collect();
        let sum: f64 = service.iter().sum();
        let squares: f64 = service.iter().map(|s| s * s).sum();
        let makespan = (result.window_end - result.window_start) / 3600.0;
        let alone: Vec<f64> = window
            .iter()
            .map(|j| j.total_steps / j.best_throughput)
            .collect();
        let latest = window
            .iter()
            .zip(&alone)
            .map(|(j, t)| j.arrival + t)
            .fold(f64::NEG_INFINITY, f64::max);
        let last_arrival = result
            .jobs
            .iter()
            .map(|j| j.arrival)
            .fold(f64::NEG_INFINITY, f64::max);
        Metrics {
            policy: result.policy.clone(),
            jobs: window.len(),
            finished: done.len(),
            avg_jct_h: mean(&jcts) / 3600.0,
            makespan_h: makespan,
            throughput_jobs_h: if makespan > 0.0 {
                n / makespan
            } else {
                f64::NAN
            },
            ftf_rho_p50: if rho.is_empty() {
                f64::NAN
            } else {
                percentile(&rho, 0.5)
            },
            ftf_rho_max: rho.last().copied().unwrap_or(f64::NAN),
            jain: if squares > 0.0 {
                sum * sum / (n * squares)
            } else {
                f64::NAN
            },
            share_meeting_lambda: if n > 0.0 {
                service.iter().filter(|&&s| s >= lambda).count() as f64 / n
            } else {
                f64::NAN
            },
            solver_seconds_per_round: if result.rounds > 0 {
                result.solver_seconds / result.rounds as f64
            } else {
                0.0
            },
            seconds: result.wall_seconds,
            rounds: result.rounds,
            utilization: result.utilization,
            work_per_busy_gpu: result.work_per_busy_gpu,
            solver_fallbacks: result.solver_fallbacks,
            realized_over_planned: result.realized_over_planned,
            avg_jct_bound_h: mean(&alone) / 3600.0,
            makespan_bound_h: (latest - result.window_start) / 3600.0,
            drain_h: (result.window_end - last_arrival).max(0.0) / 3600.0,
        }
    }
}

/// The q-quantile of sorted values, linear interpolation between closest ranks.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// One window job of one run (`stsfair simulate --job-log FILE` writes one a JSON line): what
/// the metrics above are means and extremes of, so that policies can be compared job by job
/// (which jobs one of them finishes later, and why the makespan moved).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct WindowJob {
    /// Policy.
    pub policy: String,
    /// The job's index in the input (trace order).
    pub job: usize,
    /// Its job type, as Gavel's key (`('ResNet-50 (batch size 64)', 4)`).
    pub job_type: String,
    /// GPUs it uses at once.
    pub scale_factor: u32,
    /// Arrival, hours from the start of the simulation.
    pub arrival_h: f64,
    /// Completion, hours from the start (`null`: not finished when the run stopped).
    pub completion_h: Option<f64>,
    /// Completion time (completion - arrival), hours.
    pub jct_h: Option<f64>,
    /// Its steps alone on its fastest GPU type, hours: no policy finishes it sooner after its
    /// arrival.
    pub alone_h: f64,
    /// Finish-time fairness rho ([`JobOutcome::rho`](crate::JobOutcome::rho); `null` when
    /// unfinished).
    pub rho: Option<f64>,
    /// Time-averaged number of active jobs over its life.
    pub contention: f64,
    /// Hours it held GPUs, per GPU type of the cluster (by name).
    pub placed_h: BTreeMap<String, f64>,
    /// Of those, hours in a slot of a GPU or beside co-runners.
    pub shared_h: f64,
    /// Hours of its JCT it held no GPU (`null` when unfinished).
    pub waiting_h: Option<f64>,
}

impl WindowJob {
    /// The window jobs of `result`, in input order; `jobs`, `table` and `cluster` are the run's
    /// input. O(window * GPU types).
    pub fn of(
        result: &SimResult,
        jobs: &[SimJob],
        table: &ThroughputTable,
        cluster: &Cluster,
    ) -> Vec<WindowJob> {
        let (a, b) = result.window;
        let hours = |s: f64| s / 3600.0;
        (a..=b)
            .filter_map(|i| Some((i, result.jobs.get(i)?, jobs.get(i)?)))
            .map(|(i, outcome, job)| {
                let jct = outcome.jct();
                WindowJob {
                    policy: result.policy.clone(),
                    job: i,
                    job_type: table
                        .job_types()
                        .get(job.job_type)
                        .map_or_else(String::new, |t| t.to_string()),
                    scale_factor: job.scale_factor,
                    arrival_h: hours(outcome.arrival),
                    completion_h: outcome.completion.map(hours),
                    jct_h: jct.map(hours),
                    alone_h: hours(outcome.total_steps / outcome.best_throughput),
                    rho: outcome.rho(),
                    contention: outcome.contention,
                    placed_h: cluster
                        .types
                        .iter()
                        .zip(&outcome.placed_seconds)
                        .map(|(t, &s)| (t.name.clone(), hours(s)))
                        .collect(),
                    shared_h: hours(outcome.shared_seconds),
                    waiting_h: jct.map(|t| hours(t - outcome.placed_seconds.iter().sum::<f64>())),
                }
            })
            .collect()
    }
}
