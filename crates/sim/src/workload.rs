//! Synthetic workloads in the style of Gavel's simulator (`generate_job` and the Poisson arrival
//! process of `scheduler/scheduler.py` and `scheduler/utils.py`, stanford-futuredata/gavel), with
//! durations drawn from the Philly trace's shape (Jeon et al., "Analysis of Large-Scale
//! Multi-Tenant GPU Clusters for DNN Training Workloads", USENIX ATC 2019):
//!
//! - arrivals: a Poisson process of `rate` jobs per hour, the first job at time 0;
//! - scale factor: 1, or with multi-GPU jobs 1/2/4/8 with probabilities 0.70/0.10/0.15/0.05;
//! - job type: uniform over the types of that scale factor (the 26 single-GPU types for sf 1);
//! - duration: 60 * 10^U(1.5, 3) s for 80% of jobs, 60 * 10^U(3, 4) s for 20%;
//! - steps: duration * the type's solo throughput on the reference GPU (V100), rounded down
//!   (at least 1).
//!
//! Deterministic for a seed (ChaCha8). O(n) for n jobs.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};

use super::trace::{MAX_ARRIVAL, TraceJob};
use super::{SimError, ThroughputTable};

/// Parameters of a synthetic workload.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSpec {
    /// Number of jobs.
    pub jobs: usize,
    /// Arrival rate, jobs per hour.
    pub rate: f64,
    /// Seed.
    pub seed: u64,
    /// Draw scale factors 2, 4 and 8 too.
    pub multi_gpu: bool,
    /// Worker type whose solo throughput turns durations into steps.
    pub reference: String,
}

/// Draws a scale factor: 1/2/4/8 with probabilities 0.70/0.10/0.15/0.05 (the draw `stsfair gen
/// --gavel --multi` makes too).
fn scale_factor(rng: &mut ChaCha8Rng) -> u32 {
    stsfair_costs::generate::gavel_scale_factor(rng)
}

/// Draws a duration in seconds from the Philly-shaped mixture.
fn duration(rng: &mut ChaCha8Rng) -> f64 {
    let long = rng.random::<f64>() >= 0.8;
    let (a, b) = if long { (3.0, 4.0) } else { (1.5, 3.0) };
    60.0 * 10f64.powf(rng.random_range(a..b))
}

/// The most jobs [`generate`] draws: a simulation holds every job from the start, about 0.4 KB
/// each (2,000,000 fifo jobs measured at 850 MB resident), so this bounds the memory at about
/// 4 GB instead of letting a mistyped count run the machine out of memory. Gavel's experiments
/// use at most tens of thousands.
pub const MAX_JOBS: usize = 10_000_000;

/// Generates a workload as trace jobs (so it can be written out and replayed by Gavel too).
pub fn generate(spec: &WorkloadSpec, table: &ThroughputTable) -> Result<Vec<TraceJob>, SimError> {
    if !(spec.rate.is_finite() && spec.rate > 0.0) {
        return Err(SimError::Setting {
            setting: "rate",
            rule: "must be > 0 jobs per hour",
            got: spec.rate.to_string(),
        });
    }
    if spec.jobs == 0 || spec.jobs > MAX_JOBS {
        return Err(SimError::Setting {
            setting: "jobs",
            rule: "must be between 1 and 10,000,000 (a simulation keeps about 0.4 KB a job, \
                   4 GB at the limit)",
            got: spec.jobs.to_string(),
        });
    }
    let reference = table
        .worker(&spec.reference)
        .ok_or_else(|| SimError::Setting {
            setting: "reference gpu type",
            rule: "must be a worker type of the throughputs",
            got: spec.reference.clone(),
        })?;
    // Job types per scale factor that can run on the reference type.
    let of_size = |sf: u32| -> Vec<usize> {
        (0..table.job_types().len())
            .filter(|&j| table.job_types()[j].scale_factor == sf && table.solo(reference, j) > 0.0)
            .collect()
    };
    let singles = of_size(1);
    if singles.is_empty() {
        return Err(SimError::Setting {
            setting: "throughputs",
            rule: "must hold single-gpu job types that run on the reference gpu",
            got: spec.reference.clone(),
        });
    }
    let sizes: Vec<(u32, Vec<usize>)> = [1, 2, 4, 8]
        .into_iter()
        .map(|sf| (sf, of_size(sf)))
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let gap = Exp::new(spec.rate / 3600.0).map_err(|_| SimError::Setting {
        setting: "rate",
        rule: "must be > 0 jobs per hour",
        got: spec.rate.to_string(),
    })?;
    let mut arrival = 0.0;
    let mut jobs = Vec::with_capacity(spec.jobs);
    for i in 0..spec.jobs {
        if i > 0 {
            arrival += gap.sample(&mut rng);
        }
        // A trace's limit (`trace::MAX_ARRIVAL`) holds for generated arrivals too: at 1e-15
        // jobs/h they reached 1e18 s, where an f64 clock loses whole rounds, and the run ended
        // with exit 0 and metrics below their own bounds.
        if arrival > MAX_ARRIVAL {
            return Err(SimError::Setting {
                setting: "rate",
                rule: "must be high enough that every arrival is at most 1e12 seconds \
                       (31,700 years, the limit of a trace's arrival times)",
                got: format!(
                    "{} jobs per hour: job {i} would arrive at {arrival:.3e} s",
                    super::brief(spec.rate)
                ),
            });
        }
        let mut sf = if spec.multi_gpu {
            scale_factor(&mut rng)
        } else {
            1
        };
        // A size with no job type falls back to single-GPU jobs.
        let types = match sizes.iter().find(|(s, t)| *s == sf && !t.is_empty()) {
            Some((_, t)) => t,
            None => {
                sf = 1;
                &singles
            }
        };
        let job_type = types[rng.random_range(0..types.len())];
        let seconds = duration(&mut rng);
        let steps = (seconds * table.solo(reference, job_type)).floor().max(1.0);
        // Steps of hours-long jobs stay far below 2^53.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let total_steps = steps as u64;
        jobs.push(TraceJob {
            job_type: table.job_types()[job_type].model(),
            command: String::new(),
            working_directory: String::new(),
            steps_flag: String::new(),
            needs_data_dir: false,
            total_steps,
            scale_factor: sf,
            priority_weight: 1.0,
            slo: None,
            arrival,
        });
    }
    Ok(jobs)
}
