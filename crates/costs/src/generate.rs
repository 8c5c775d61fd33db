//! Seeded instance generators: synthetic instances, and instances whose jobs are drawn from
//! measured co-location data (the Gavel throughputs), for tests, benches and simulations.
//!
//! Both generators are deterministic: the same [`GenConfig`] (seed included) gives the same
//! instance, and so the same bytes from [`Instance::to_json`]. Randomness comes from ChaCha8
//! (`rand_chacha`), whose stream is fixed across platforms and versions.
//!
//! **Deficits.** A fraction [`GenConfig::forced`] of the jobs (exactly `round(forced * n)`, drawn
//! at random) get a deficit that makes them forced, `m_j = (D_j + lambda) - Delta > 0`: with the
//! default fairness (lambda = Delta = 1) that is `D_j > 0`, drawn from `(0, deficit_max]`. The
//! others get `D_j` in `[max(-B, -deficit_max), 0]` shifted by `Delta - lambda` in general, so
//! `m_j <= 0`. A job with no whole-GPU option has `F_j = 0` and is never forced, whatever `D_j`.
//!
//! Times and deficits are rounded to 6 significant digits: the predictions are not more precise
//! than that, and the files stay small and readable (the forced/optional split is checked after
//! rounding).

use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::ThroughputModel;
use crate::slots::{SlotRule, slot_throughputs_by};
use stsfair::instance::{Fairness, Instance, InstanceError, JobSpec, MAX_COUNT};

/// Most jobs one generated instance may have.
pub const MAX_JOBS: usize = 1_000_000;

/// Most GPU types one generated instance may have. Every job gets times on every type, so the
/// instance grows with jobs times types (100 jobs on 100,000 types ran out of time before the
/// bound was there); real clusters have a handful of types, and the DP's bound searches all
/// 3^K - 1 directions up to K = 5.
pub const MAX_TYPES: usize = 64;
// The messages name the limit.
const _: () = assert!(MAX_TYPES == 64);

/// A GPU type of a generated instance.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSpec {
    /// Name (for Gavel-derived instances, a worker type of the data: `v100`, `p100`, `k80`).
    pub name: String,
    /// Number of GPUs n_k.
    pub count: u64,
    /// Units per GPU U_k.
    pub units: u32,
    /// Slot sizes S_k (a divisibility ladder).
    pub ladder: Vec<u32>,
}

/// What to generate.
///
/// Start from `GenConfig::default()` and set the fields (the struct is `#[non_exhaustive]`:
/// settings may be added without breaking callers):
///
/// ```
/// let mut config = stsfair_costs::generate::GenConfig::default();
/// config.jobs = 200;
/// config.seed = 7;
/// assert_eq!(config.weights, vec![1.0]);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct GenConfig {
    /// The instance's name.
    pub name: Option<String>,
    /// Number of jobs.
    pub jobs: usize,
    /// The GPU types, fastest first for synthetic instances.
    pub gpus: Vec<GpuSpec>,
    /// Seed of the ChaCha8 stream.
    pub seed: u64,
    /// Fairness parameters written to the instance.
    pub fairness: Fairness,
    /// Fraction of jobs made forced through their deficit, in [0, 1].
    pub forced: f64,
    /// Largest deficit magnitude, >= 0.
    pub deficit_max: f64,
    /// Weights, each job drawing one uniformly (`[1.0]`: all equal).
    pub weights: Vec<f64>,
    /// Multi-worker jobs: Gavel's distributed job types (workers = scale factor, drawn with
    /// Gavel's mix, [`gavel_scale_factor`]); synthetic jobs with 2 or 4 workers (20% and 10% of
    /// jobs).
    pub multi: bool,
    /// Synthetic only: probability that a job has no entry on a GPU type (it does not fit there),
    /// in [0, 1); a job always keeps at least one type.
    pub missing: f64,
    /// Gavel only: how slots smaller than half a GPU get their times.
    pub slot_rule: SlotRule,
    /// Gavel with `multi` only: how job types are drawn.
    pub multi_mix: MultiMix,
}

/// How [`from_measurements`] draws job types when distributed ones are allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MultiMix {
    /// Gavel's workload generator: a scale factor first ([`gavel_scale_factor`]: 1, 2, 4, 8 with
    /// probabilities 0.70, 0.10, 0.15, 0.05), then a job type of that scale factor uniformly.
    #[default]
    Gavel,
    /// Uniformly over every job type, distributed ones included (65% of the jobs distributed
    /// with Gavel's 83 types); the draw of the instances shipped before the Gavel mix.
    Uniform,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            name: None,
            jobs: 100,
            gpus: Vec::new(),
            seed: 0,
            fairness: Fairness::default(),
            forced: 0.1,
            deficit_max: 1.0,
            weights: vec![1.0],
            multi: false,
            missing: 0.1,
            slot_rule: SlotRule::default(),
            multi_mix: MultiMix::default(),
        }
    }
}

/// Why an instance could not be generated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GenError {
    /// A parameter out of its range.
    #[error("{name} {rule} (got {got})")]
    Parameter {
        /// The parameter, e.g. `forced`.
        name: &'static str,
        /// The rule.
        rule: &'static str,
        /// The offending value.
        got: String,
    },
    /// A GPU type the measurements do not have.
    #[error("gpu type {name:?} is not in the measurements (they have {available})")]
    UnknownGpuType {
        /// The requested name.
        name: String,
        /// The names the data has, comma-separated.
        available: String,
    },
    /// No job type of the measurements can run on the chosen GPU types.
    #[error("no job type of the measurements runs on the chosen gpu types ({gpus})")]
    NoJobTypes {
        /// The chosen GPU types, comma-separated.
        gpus: String,
    },
    /// A slot's derived time per step is not a number the format accepts (finite, > 0, with a
    /// finite reciprocal): the job type's throughput there underflows. With the composition
    /// rule a 1-unit slot of a 1,024-unit GPU has 1,023 co-runners, each slowing the job.
    #[error(
        "the time per step of job type {job_type} in a {slot}-unit slot of {gpu} ({units} units \
         a GPU) is {time} s, not a finite number > 0 with a finite reciprocal: its derived \
         throughput underflows"
    )]
    SlotTime {
        /// The job type.
        job_type: String,
        /// The GPU type.
        gpu: String,
        /// The slot, in units.
        slot: u32,
        /// Units of a GPU of that type.
        units: u32,
        /// The time derived.
        time: f64,
    },
    /// The generated document breaks a rule of the format (a bad ladder, a count too large).
    #[error(transparent)]
    Instance(#[from] InstanceError),
}

/// A synthetic instance.
///
/// Cost model (documented in `docs/costs.md`): GPU type `k` (0-based, in the given order) has
/// speed `1 / (1 + k/2)` times a factor in [0.9, 1.1]; job `j` has a base throughput log-uniform
/// in [1, 100] steps/s, a per-type affinity factor in [0.8, 1.25], a slot exponent `a_j` in
/// [0.3, 1.3] (sublinear to superlinear in the slot share), and with `multi` 1, 2 or 4 workers
/// (scaling its whole-GPU throughput by `d^0.8`). Its throughput in an `s`-unit slot of type `k`
/// is `base * speed_k * affinity * d^0.8 * (s / U_k)^a_j`. O(n * sum_k |S_k|).
pub fn synthetic(config: &GenConfig) -> Result<Instance, GenError> {
    check(config)?;
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let speeds: Vec<f64> = (0..config.gpus.len())
        .map(|k| (1.0 / (1.0 + 0.5 * k as f64)) * rng.random_range(0.9..1.1))
        .collect();
    let deficits = deficits(&mut rng, config);
    let width = digits(config.jobs);
    let mut builder = builder(config);
    for (i, &deficit) in deficits.iter().enumerate() {
        let base = (rng.random_range(0.0..1.0_f64) * 100.0_f64.ln()).exp();
        let exponent = rng.random_range(0.3..1.3);
        let workers: u32 = if config.multi {
            match rng.random_range(0..10) {
                0 => 4,
                1 | 2 => 2,
                _ => 1,
            }
        } else {
            1
        };
        let mut present: Vec<bool> = (0..config.gpus.len())
            .map(|_| rng.random::<f64>() >= config.missing)
            .collect();
        if !present.iter().any(|&p| p) {
            let k = rng.random_range(0..present.len());
            present[k] = true;
        }
        let weight = draw_weight(&mut rng, config);
        let mut job = JobSpec::new(format!("job-{:0width$}", i + 1))
            .weight(weight)
            .workers(u64::from(workers))
            .deficit(deficit);
        for (k, gpu) in config.gpus.iter().enumerate() {
            let affinity = rng.random_range(0.8..1.25);
            if !present[k] {
                continue;
            }
            let whole = base * speeds[k] * affinity * f64::from(workers).powf(0.8);
            for &s in gpu.ladder.iter().filter(|&&s| s >= 1 && s <= gpu.units) {
                let theta = whole * (f64::from(s) / f64::from(gpu.units)).powf(exponent);
                job = job.time(gpu.name.clone(), u64::from(s), round6(1.0 / theta));
            }
        }
        builder = builder.job(job);
    }
    Ok(builder.build()?)
}

/// Draws a scale factor as Gavel's workload generator does (`generate_job` with multi-GPU jobs):
/// 1, 2, 4 or 8 with probabilities 0.70, 0.10, 0.15, 0.05, from one uniform draw.
pub fn gavel_scale_factor<R: Rng + ?Sized>(rng: &mut R) -> u32 {
    let r: f64 = rng.random();
    if r < 0.70 {
        1
    } else if r < 0.80 {
        2
    } else if r < 0.95 {
        4
    } else {
        8
    }
}

/// An instance whose jobs are drawn from the measured job types of `model`: single-GPU types
/// uniformly; with `multi`, first a scale factor with Gavel's mix ([`gavel_scale_factor`]; a
/// scale factor with no job type on the chosen GPU types is drawn again), then a job type of
/// that scale factor uniformly, with workers = scale factor. Slot times come from
/// [`slot_throughputs_by`] with `config.slot_rule` (the whole-GPU, half-GPU and co-runner
/// composition derivation of `docs/costs.md`).
/// Every GPU type of the config must be a GPU type of the model's inputs. O(T * J log J + n *
/// sum_k |S_k|) for T types and J job types (the slot times of each job type are computed once).
pub fn from_measurements(
    model: &dyn ThroughputModel,
    config: &GenConfig,
) -> Result<Instance, GenError> {
    check(config)?;
    let inputs = model.inputs();
    let gpu_index = gpu_indices(model, &config.gpus)?;
    // Times of every job type on every chosen type, computed once.
    let table: Vec<Vec<(u32, f64)>> = (0..inputs.job_types().len())
        .map(|j| {
            let mut times = Vec::new();
            for (gpu, &g) in config.gpus.iter().zip(&gpu_index) {
                let rule = config.slot_rule;
                for (slot, theta) in slot_throughputs_by(rule, model, g, j, gpu.units, &gpu.ladder)
                {
                    times.push((slot, theta));
                }
            }
            times
        })
        .collect();
    // Job types per scale factor (1, 2, 4, 8) that can run somewhere in the cluster.
    let pools: Vec<(u32, Vec<usize>)> = [1u32, 2, 4, 8]
        .iter()
        .filter(|&&sf| sf == 1 || config.multi)
        .map(|&sf| {
            let types = (0..inputs.job_types().len())
                .filter(|&j| inputs.job_types()[j].scale_factor == sf && !table[j].is_empty())
                .collect();
            (sf, types)
        })
        .collect();
    if pools.iter().all(|(_, p)| p.is_empty()) {
        let gpus = config
            .gpus
            .iter()
            .map(|g| g.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(GenError::NoJobTypes { gpus });
    }
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let deficits = deficits(&mut rng, config);
    let width = digits(config.jobs);
    let mut builder = builder(config);
    let mut every: Vec<usize> = pools.iter().flat_map(|(_, p)| p.iter().copied()).collect();
    every.sort_unstable();
    for (i, &deficit) in deficits.iter().enumerate() {
        let pool = if config.multi && config.multi_mix == MultiMix::Uniform {
            &every
        } else if config.multi {
            // Terminates: some scale factor has job types, and each is drawn with probability
            // >= 0.05.
            loop {
                let sf = gavel_scale_factor(&mut rng);
                if let Some((_, p)) = pools.iter().find(|(s, p)| *s == sf && !p.is_empty()) {
                    break p;
                }
            }
        } else {
            &pools[0].1
        };
        let j = pool[rng.random_range(0..pool.len())];
        let jt = &inputs.job_types()[j];
        let weight = draw_weight(&mut rng, config);
        let mut job = JobSpec::new(format!("job-{:0width$}-{}", i + 1, jt.slug()))
            .weight(weight)
            .workers(u64::from(jt.scale_factor))
            .deficit(deficit);
        let times = times_of(config.slot_rule, model, j, &config.gpus, &gpu_index);
        for (gpu, slot, sec_per_iter) in times {
            // Refused here, by GPU type and slot, rather than by the instance's check, which
            // named a `jobs[6].times[4].sec_per_iter` of a document the caller never wrote.
            if !(sec_per_iter.is_finite() && sec_per_iter > 0.0 && (1.0 / sec_per_iter).is_finite())
            {
                let units = config
                    .gpus
                    .iter()
                    .find(|g| g.name == gpu)
                    .map_or(0, |g| g.units);
                return Err(GenError::SlotTime {
                    job_type: jt.to_string(),
                    gpu,
                    slot,
                    units,
                    time: sec_per_iter,
                });
            }
            job = job.time(gpu, u64::from(slot), sec_per_iter);
        }
        builder = builder.job(job);
    }
    Ok(builder.build()?)
}

/// The `times` entries [`from_measurements`] writes for a job of type `job` (an index into the
/// model's job types) on the GPU types `gpus` (their `count` is not read): `(gpu type, slot,
/// seconds per iteration)` for each slot of each type's ladder the job type can run in, in type
/// and ladder order, the seconds being 1 / throughput rounded to 6 significant digits. A job
/// type with no such slot gets none. Error: a GPU type the model's inputs do not have. For
/// callers that build jobs one at a time (the Python bindings' `job_times`), so that they get
/// exactly the times of `stsfair gen --gavel` (with the default [`SlotRule`]).
pub fn job_times(
    model: &dyn ThroughputModel,
    job: usize,
    gpus: &[GpuSpec],
) -> Result<Vec<(String, u32, f64)>, GenError> {
    let gpu_index = gpu_indices(model, gpus)?;
    Ok(times_of(SlotRule::default(), model, job, gpus, &gpu_index))
}

/// The index in the model's inputs of each GPU type of `gpus`.
fn gpu_indices(model: &dyn ThroughputModel, gpus: &[GpuSpec]) -> Result<Vec<usize>, GenError> {
    let inputs = model.inputs();
    gpus.iter()
        .map(|gpu| {
            inputs
                .gpu_index(&gpu.name)
                .ok_or_else(|| GenError::UnknownGpuType {
                    name: gpu.name.clone(),
                    available: inputs.gpu_types().join(", "),
                })
        })
        .collect()
}

/// [`job_times`] with the GPU types already resolved (`gpu_index[i]` is the index of `gpus[i]`).
fn times_of(
    rule: SlotRule,
    model: &dyn ThroughputModel,
    job: usize,
    gpus: &[GpuSpec],
    gpu_index: &[usize],
) -> Vec<(String, u32, f64)> {
    let mut times = Vec::new();
    for (gpu, &g) in gpus.iter().zip(gpu_index) {
        for (slot, theta) in slot_throughputs_by(rule, model, g, job, gpu.units, &gpu.ladder) {
            times.push((gpu.name.clone(), slot, round6(1.0 / theta)));
        }
    }
    times
}

fn check(config: &GenConfig) -> Result<(), GenError> {
    let param = |name, rule, got: String| Err(GenError::Parameter { name, rule, got });
    if config.jobs > MAX_JOBS {
        return param("jobs", "must be at most 1000000", config.jobs.to_string());
    }
    if config.gpus.is_empty() {
        return param("gpus", "must list at least one gpu type", "none".into());
    }
    if config.gpus.len() > MAX_TYPES {
        return param(
            "gpus",
            "must list at most 64 gpu types",
            config.gpus.len().to_string(),
        );
    }
    if let Some(g) = config.gpus.iter().find(|g| g.count > MAX_COUNT) {
        return param("count", "must be at most 1000000", g.count.to_string());
    }
    if !(0.0..=1.0).contains(&config.forced) {
        return param("forced", "must be in [0, 1]", config.forced.to_string());
    }
    if !(config.deficit_max.is_finite() && config.deficit_max >= 0.0) {
        return param(
            "deficit_max",
            "must be finite and >= 0",
            config.deficit_max.to_string(),
        );
    }
    if config.weights.is_empty() {
        return param("weights", "must list at least one weight", "none".into());
    }
    if let Some(w) = config
        .weights
        .iter()
        .find(|w| !(w.is_finite() && **w > 0.0))
    {
        return param("weights", "must be finite and > 0", w.to_string());
    }
    if !(0.0..1.0).contains(&config.missing) {
        return param("missing", "must be in [0, 1)", config.missing.to_string());
    }
    let f = config.fairness;
    if !(f.lambda > 0.0
        && f.lambda <= 1.0
        && f.max_debt >= 0.0
        && f.credit >= 0.0
        && f.max_debt.is_finite()
        && f.credit.is_finite())
    {
        return param(
            "fairness",
            "must have lambda in (0, 1], finite max_debt >= 0 and credit >= 0",
            format!("{f:?}"),
        );
    }
    Ok(())
}

fn builder(config: &GenConfig) -> stsfair::instance::InstanceBuilder {
    let mut b = Instance::builder().fairness(config.fairness);
    if let Some(name) = &config.name {
        b = b.name(name.clone());
    }
    for g in &config.gpus {
        let ladder: Vec<u64> = g.ladder.iter().map(|&s| u64::from(s)).collect();
        b = b.gpu_type(g.name.clone(), g.count, u64::from(g.units), &ladder);
    }
    b
}

/// One deficit per job: exactly `round(forced * n)` jobs (a random subset) with m_j > 0, the
/// rest with m_j <= 0, checked with the formulation's own expression `(D + lambda) - Delta`.
fn deficits(rng: &mut ChaCha8Rng, config: &GenConfig) -> Vec<f64> {
    let n = config.jobs;
    let Fairness {
        lambda,
        max_debt,
        credit,
    } = config.fairness;
    let threshold = max_debt - lambda;
    let n_forced = ((config.forced * n as f64).round() as usize).min(n);
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(rng);
    let mut forced = vec![false; n];
    for &i in &order[..n_forced] {
        forced[i] = true;
    }
    let minimum = |d: f64| (d + lambda) - max_debt;
    forced
        .iter()
        .map(|&f| {
            // u in (0, 1] for forced jobs, [0, 1) for the others.
            let u: f64 = rng.random();
            if f {
                let mut d =
                    round6(threshold + (1.0 - u) * config.deficit_max.max(f64::MIN_POSITIVE));
                while minimum(d) <= 0.0 {
                    d = d.next_up();
                }
                d
            } else {
                let mut d = threshold - u * config.deficit_max;
                if threshold >= -credit {
                    d = d.max(-credit);
                }
                d = round6(d);
                while minimum(d) > 0.0 {
                    d = d.next_down();
                }
                d
            }
        })
        .collect()
}

fn draw_weight(rng: &mut ChaCha8Rng, config: &GenConfig) -> f64 {
    config.weights.choose(rng).copied().unwrap_or(1.0)
}

fn digits(n: usize) -> usize {
    n.max(1).to_string().len()
}

/// `x` rounded to 6 significant digits (through the decimal form, so the result prints short).
fn round6(x: f64) -> f64 {
    format!("{x:.5e}").parse().unwrap_or(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stsfair::formulation::{JobClass, RoundProblem};

    fn config(jobs: usize) -> GenConfig {
        GenConfig {
            jobs,
            gpus: vec![
                GpuSpec {
                    name: "a".into(),
                    count: 4,
                    units: 4,
                    ladder: vec![1, 2, 4],
                },
                GpuSpec {
                    name: "b".into(),
                    count: 2,
                    units: 8,
                    ladder: vec![2, 4, 8],
                },
            ],
            ..GenConfig::default()
        }
    }

    #[test]
    fn forced_fraction_is_exact_at_default_fairness() {
        let inst = synthetic(&config(50)).unwrap();
        let forced = inst.jobs().iter().filter(|j| j.deficit() > 0.0).count();
        assert_eq!(forced, 5);
        let problem = RoundProblem::new(&inst);
        let classed = problem
            .jobs
            .iter()
            .filter(|j| matches!(j.class, JobClass::Forced { .. }))
            .count();
        assert_eq!(classed, 5);
    }

    #[test]
    fn forced_fraction_holds_for_other_fairness() {
        let mut c = config(40);
        c.fairness = Fairness {
            lambda: 0.7,
            max_debt: 2.0,
            credit: 0.5,
        };
        c.forced = 0.25;
        let inst = synthetic(&c).unwrap();
        let problem = RoundProblem::new(&inst);
        let classed = problem
            .jobs
            .iter()
            .filter(|j| matches!(j.class, JobClass::Forced { .. }))
            .count();
        assert_eq!(classed, 10);
    }

    #[test]
    fn rounding_keeps_six_digits() {
        assert_eq!(round6(1.0 / 3.0), 0.333333);
        assert_eq!(round6(123456789.0), 123457000.0);
    }

    #[test]
    fn bad_parameters_are_named() {
        let mut c = config(3);
        c.forced = 1.5;
        let e = synthetic(&c).unwrap_err();
        assert!(e.to_string().starts_with("forced must be in [0, 1]"), "{e}");
    }
}
