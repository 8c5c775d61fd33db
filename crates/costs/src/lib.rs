//! Cost inputs: what the solver's predicted co-location times are made from (MODEL.md section 2).
//!
//! The round model needs, for every job and every (GPU type, slot size), the time per iteration
//! of the whole job while it shares its GPU with co-runners. Those times come from measurements:
//! a job type's *solo profile* on each GPU type (its throughput alone on a whole GPU, and, when a
//! profiler provides them, counters such as SM occupancy, memory-bandwidth use or warp-stall
//! fractions) and a *pairwise co-location table* (the throughput of a job type while one other
//! job type runs on the same GPU). This module holds those inputs as tensors ([`CostInputs`]),
//! and a trait for anything that predicts a job's co-located throughput from them
//! ([`ThroughputModel`]): the measured table itself is one implementation, the learned
//! [`predictor::LearnedPredictor`] (which fills pairs that were never measured) is another.
//!
//! - [`gavel`] reads the measured Gavel throughputs (vendored in `data/gavel/` and bundled in the crate).
//! - [`slots`] turns a model into throughputs for slots of any size (the co-runner composition
//!   documented in `docs/costs.md`).
//! - [`mig`] holds the MIG profiles of the A100 and H100 with their placement rules, and MISO's
//!   measured latencies on each A100 instance.
//! - [`predictor`] learns the unmeasured pairs and evaluates itself on held-out pairs.
//! - [`slowdown`] hands any of these models to placement ([`JobSlowdowns`], a
//!   [`stsfair::placement::CoLocation`] over job ids), so that the round scheduler chooses
//!   co-runners by the measured (or predicted) slowdowns.
//!
//! Throughputs are steps (iterations) per second of the whole job, as Gavel reports them; the
//! instance's `sec_per_iter` is their reciprocal.

#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use std::fmt;

use ndarray::{Array2, Array3};

mod extra_trees;
pub mod gavel;
pub mod generate;
pub mod mig;
pub mod predictor;
pub mod slots;
pub mod slowdown;

pub use gavel::GavelThroughputs;
pub use predictor::{
    FeatureSet, HoldoutReport, LearnedPredictor, Learner, PredictorConfig, ScoredPrediction, Split,
    SplitConfig,
};
pub use slowdown::JobSlowdowns;

/// An invalid cost input, or a model that could not be built from it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CostError {
    /// The file could not be read.
    #[error("cannot read {file}: {message}")]
    Io {
        /// The file.
        file: String,
        /// The operating system's reason.
        message: String,
    },
    /// The document is not JSON, or not JSON of the expected shape.
    #[error("{path}: {message}")]
    Syntax {
        /// Where in the document (`.` for the document itself).
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A job-type key does not follow `('Model (batch size B)', sf)`.
    #[error("{path}: job type key {key:?} {rule}")]
    Key {
        /// Where the key is, e.g. `v100`.
        path: String,
        /// The key as written.
        key: String,
        /// The rule it breaks, phrased to follow the key.
        rule: String,
    },
    /// A value of the right type breaks a rule (negative throughput, half-zero pair, ...).
    #[error("{path} {rule} (got {got})")]
    Value {
        /// Where the value is, e.g. `v100["('A3C', 1)"]["null"]`.
        path: String,
        /// The rule, phrased to follow the path.
        rule: String,
        /// The offending value as written.
        got: String,
    },
    /// Tensors whose shapes do not match the lists of GPU types and job types.
    #[error("{what} has shape {got:?}, expected {expected:?}")]
    Shape {
        /// Which tensor.
        what: &'static str,
        /// Its shape.
        got: Vec<usize>,
        /// The shape the GPU and job lists imply.
        expected: Vec<usize>,
    },
    /// Too few measured pairs to learn from.
    #[error(
        "the predictor needs at least {needed} measured co-located throughputs, the table has {got}"
    )]
    TooFewSamples {
        /// The minimum.
        needed: usize,
        /// How many the (masked) table has.
        got: usize,
    },
    /// The learning library refused the data.
    #[error("the {stage} of the {method} failed: {message}")]
    Learning {
        /// The learner.
        method: &'static str,
        /// "fit" or "prediction".
        stage: &'static str,
        /// The library's message.
        message: String,
    },
    /// A job id was given a job type the cost inputs do not have.
    #[error("job {job:?}: job type {job_type} is not in the cost inputs")]
    UnknownJobType {
        /// The job id.
        job: String,
        /// The job type, in Gavel's key form.
        job_type: String,
    },
    /// A parameter out of its range.
    #[error("{name} {rule} (got {got})")]
    Parameter {
        /// The parameter, e.g. `holdout`.
        name: &'static str,
        /// The rule.
        rule: &'static str,
        /// The offending value.
        got: String,
    },
}

/// A job type: model family, batch size and scale factor (number of workers, one GPU each).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobType {
    /// Model family, e.g. `ResNet-18`, `A3C`.
    pub family: String,
    /// Batch size, when the job type names one.
    pub batch_size: Option<u32>,
    /// Scale factor: the number of workers (GPUs) of the job; 1 for single-GPU jobs.
    pub scale_factor: u32,
}

impl JobType {
    /// The model as Gavel writes it: `ResNet-18 (batch size 16)`, `A3C`.
    pub fn model(&self) -> String {
        match self.batch_size {
            Some(b) => format!("{} (batch size {b})", self.family),
            None => self.family.clone(),
        }
    }

    /// A short identifier with no spaces: `resnet-18-bs16`, `a3c-sf4`.
    pub fn slug(&self) -> String {
        let mut s: String = self
            .family
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        if let Some(b) = self.batch_size {
            s.push_str(&format!("-bs{b}"));
        }
        if self.scale_factor != 1 {
            s.push_str(&format!("-sf{}", self.scale_factor));
        }
        s
    }
}

impl fmt::Display for JobType {
    /// Gavel's key form: `('ResNet-18 (batch size 16)', 1)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "('{}', {})", self.model(), self.scale_factor)
    }
}

/// What the pairwise table says about a job running beside one co-runner.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Colocation {
    /// Measured: the job's own throughput and the co-runner's, steps per second.
    Measured {
        /// Throughput of the job.
        own: f64,
        /// Throughput of the co-runner.
        other: f64,
    },
    /// Measured as impossible (Gavel's `[0, 0]`: out of memory or not supported).
    CannotRun,
    /// Never measured.
    Unmeasured,
}

/// Optional profile counters of each job type on each GPU type (SM occupancy, memory-bandwidth
/// use, warp-stall-reason fractions, ...), the inputs interference predictors in the literature
/// use (e.g. Yeung et al., "Horus: interference-aware and prediction-based scheduling in deep
/// learning systems", IEEE TPDS 2022). The Gavel data has none; a
/// profiler that has them adds them with [`CostInputs::with_counters`], and the predictor then
/// uses them as features.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileCounters {
    /// Counter names, e.g. `sm_occupancy`, `dram_bw`, `stall_memory_dependency`.
    pub names: Vec<String>,
    /// Values, shape `[gpu type, job type, counter]`; NaN where not profiled.
    pub values: Array3<f64>,
}

/// Measured cost inputs: solo throughputs and the pairwise co-location table, per GPU type.
///
/// Encoding (dense tensors, so that lookups are O(1) and the predictor can read whole slices):
/// - `solo[[k, j]]`: throughput of job type `j` alone on GPU type `k`; NaN = no entry (not
///   measured, or measured as zero: the job cannot run there).
/// - `pair[[k, j, o]]`: throughput of `j` while `o` runs on the same GPU of type `k`; NaN =
///   never measured; 0 = measured as impossible (both throughputs zero).
#[derive(Debug, Clone, PartialEq)]
pub struct CostInputs {
    gpu_types: Vec<String>,
    job_types: Vec<JobType>,
    solo: Array2<f64>,
    pair: Array3<f64>,
    counters: Option<ProfileCounters>,
}

impl CostInputs {
    /// Builds cost inputs from their tensors (encoding in the type's documentation), checking
    /// shapes and values: solo entries are NaN or finite >= 0 (0 is stored as NaN), pair
    /// entries are NaN or finite >= 0, a pair is zero in one direction exactly when it is zero
    /// in the other.
    pub fn new(
        gpu_types: Vec<String>,
        job_types: Vec<JobType>,
        solo: Array2<f64>,
        pair: Array3<f64>,
    ) -> Result<CostInputs, CostError> {
        let (k, j) = (gpu_types.len(), job_types.len());
        if solo.shape() != [k, j] {
            return Err(CostError::Shape {
                what: "solo",
                got: solo.shape().to_vec(),
                expected: vec![k, j],
            });
        }
        if pair.shape() != [k, j, j] {
            return Err(CostError::Shape {
                what: "pair",
                got: pair.shape().to_vec(),
                expected: vec![k, j, j],
            });
        }
        let mut solo = solo;
        for ((g, job), v) in solo.indexed_iter_mut() {
            if v.is_nan() {
                continue;
            }
            if !v.is_finite() || *v < 0.0 {
                return Err(CostError::Value {
                    path: format!("solo[{}][{}]", gpu_types[g], job_types[job]),
                    rule: "must be finite and >= 0".into(),
                    got: v.to_string(),
                });
            }
            if *v == 0.0 {
                *v = f64::NAN;
            }
        }
        for ((g, a, b), &v) in pair.indexed_iter() {
            if v.is_nan() {
                continue;
            }
            let path = || format!("pair[{}][{}][{}]", gpu_types[g], job_types[a], job_types[b]);
            if !v.is_finite() || v < 0.0 {
                return Err(CostError::Value {
                    path: path(),
                    rule: "must be finite and >= 0".into(),
                    got: v.to_string(),
                });
            }
            // Every learner and slot rule works with v / solo (the fraction of its solo
            // throughput a job keeps): a solo throughput so small that the ratio overflows
            // (1e-308 beside a measured 50) made the predictor's trees index out of bounds.
            let own_solo = solo[[g, a]];
            if v > 0.0 && !(v / own_solo).is_finite() && !own_solo.is_nan() {
                return Err(CostError::Value {
                    path: path(),
                    rule: "over the job's solo throughput must be a finite ratio".into(),
                    // The solo throughput is tiny here: in exponent form, not 308 zeros.
                    got: format!("{v} over solo {own_solo:e}"),
                });
            }
            let back = pair[[g, b, a]];
            if (v == 0.0) != (back == 0.0) {
                return Err(CostError::Value {
                    path: path(),
                    rule: "must be zero exactly when the reverse pair is zero ([0, 0] = cannot run together)".into(),
                    got: format!("{v} with reverse {back}"),
                });
            }
        }
        Ok(CostInputs {
            gpu_types,
            job_types,
            solo,
            pair,
            counters: None,
        })
    }

    /// Adds profile counters (shape `[gpu type, job type, counter]`).
    pub fn with_counters(mut self, counters: ProfileCounters) -> Result<CostInputs, CostError> {
        let expected = vec![
            self.gpu_types.len(),
            self.job_types.len(),
            counters.names.len(),
        ];
        if counters.values.shape() != expected.as_slice() {
            return Err(CostError::Shape {
                what: "counters",
                got: counters.values.shape().to_vec(),
                expected,
            });
        }
        if let Some(v) = counters.values.iter().find(|v| v.is_infinite()) {
            return Err(CostError::Value {
                path: "counters".into(),
                rule: "must be finite or NaN".into(),
                got: v.to_string(),
            });
        }
        self.counters = Some(counters);
        Ok(self)
    }

    /// GPU type names, in input order.
    pub fn gpu_types(&self) -> &[String] {
        &self.gpu_types
    }
    /// Job types, in input order.
    pub fn job_types(&self) -> &[JobType] {
        &self.job_types
    }
    /// Index of a GPU type by name.
    pub fn gpu_index(&self, name: &str) -> Option<usize> {
        self.gpu_types.iter().position(|g| g == name)
    }
    /// Index of a job type.
    pub fn job_index(&self, job: &JobType) -> Option<usize> {
        self.job_types.iter().position(|j| j == job)
    }
    /// The solo tensor `[gpu, job]` (NaN = no entry).
    pub fn solo_table(&self) -> &Array2<f64> {
        &self.solo
    }
    /// The pair tensor `[gpu, job, co-runner]` (NaN = unmeasured, 0 = cannot run together).
    pub fn pair_table(&self) -> &Array3<f64> {
        &self.pair
    }
    /// The profile counters, if any.
    pub fn counters(&self) -> Option<&ProfileCounters> {
        self.counters.as_ref()
    }

    /// Throughput of `job` alone on a whole GPU of type `gpu`; `None` if it cannot run there or
    /// was not measured (or an index is out of range).
    pub fn solo(&self, gpu: usize, job: usize) -> Option<f64> {
        self.solo.get([gpu, job]).copied().filter(|v| *v > 0.0)
    }

    /// What the table says about `job` beside `other` on a GPU of type `gpu` (out-of-range
    /// indices read as unmeasured).
    pub fn colocation(&self, gpu: usize, job: usize, other: usize) -> Colocation {
        let (Some(&own), Some(&back)) = (
            self.pair.get([gpu, job, other]),
            self.pair.get([gpu, other, job]),
        ) else {
            return Colocation::Unmeasured;
        };
        if own.is_nan() || back.is_nan() {
            Colocation::Unmeasured
        } else if own == 0.0 {
            Colocation::CannotRun
        } else {
            Colocation::Measured { own, other: back }
        }
    }

    /// A copy in which the given pairs (on the given GPU type, both directions) are unmeasured:
    /// how training sets are made for held-out evaluation.
    pub fn without_pairs(&self, pairs: &[(usize, usize, usize)]) -> CostInputs {
        let mut out = self.clone();
        for &(g, a, b) in pairs {
            if let Some(v) = out.pair.get_mut([g, a, b]) {
                *v = f64::NAN;
            }
            if let Some(v) = out.pair.get_mut([g, b, a]) {
                *v = f64::NAN;
            }
        }
        out
    }

    /// The unordered pairs `(gpu, a, b)` with `a <= b` of single-GPU job types that both run
    /// alone on `gpu` and whose co-location was measured as possible: the pairs a predictor can
    /// learn from and be tested on.
    pub fn measured_single_gpu_pairs(&self) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        for g in 0..self.gpu_types.len() {
            for a in self.single_gpu_jobs_on(g) {
                for b in self.single_gpu_jobs_on(g).filter(|&b| b >= a) {
                    if matches!(self.colocation(g, a, b), Colocation::Measured { .. }) {
                        out.push((g, a, b));
                    }
                }
            }
        }
        out
    }

    /// How many ordered pairs of single-GPU job types with solo entries on a GPU type were never
    /// measured there.
    pub fn unmeasured_single_gpu_pairs(&self) -> usize {
        (0..self.gpu_types.len())
            .map(|g| {
                self.single_gpu_jobs_on(g)
                    .map(|a| {
                        self.single_gpu_jobs_on(g)
                            .filter(|&b| self.colocation(g, a, b) == Colocation::Unmeasured)
                            .count()
                    })
                    .sum::<usize>()
            })
            .sum()
    }

    /// Single-GPU job types (scale factor 1) with a solo entry on `gpu`.
    pub fn single_gpu_jobs_on(&self, gpu: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.job_types.len())
            .filter(move |&j| self.job_types[j].scale_factor == 1 && self.solo(gpu, j).is_some())
    }
}

/// Anything that predicts the throughput of a job beside co-runners on one GPU.
///
/// Jobs and GPU types are indices into [`inputs`](ThroughputModel::inputs). A `None` means the
/// model knows the job cannot run so (or has nothing to say): callers treat it as a missing
/// option, never as zero throughput.
pub trait ThroughputModel {
    /// The measurements the model is built on.
    fn inputs(&self) -> &CostInputs;

    /// Throughput of `job` on a GPU of type `gpu` while `other` runs on the same GPU.
    fn pair_throughput(&self, gpu: usize, job: usize, other: usize) -> Option<f64>;

    /// A short name of the method, for reports.
    fn method(&self) -> &str;

    /// Throughput of `job` on a GPU of type `gpu` beside all of `co_runners` at once.
    ///
    /// No co-runner: the solo throughput; one: [`pair_throughput`](Self::pair_throughput);
    /// several: the slowdowns multiply, `solo * prod_i (pair_i / solo)`. Pairwise data cannot
    /// say more; the product assumes each co-runner takes its share of the contended resources
    /// independently of the others (the composition rule of pairwise interference models such
    /// as Bubble-Up, Mars et al., MICRO 2011). O(|co_runners|).
    fn throughput_with(&self, gpu: usize, job: usize, co_runners: &[usize]) -> Option<f64> {
        let solo = self.inputs().solo(gpu, job)?;
        let mut theta = solo;
        for &o in co_runners {
            theta *= self.pair_throughput(gpu, job, o)? / solo;
        }
        Some(theta)
    }

    /// Throughput of `job` sharing a GPU of type `gpu` with a typical co-runner: the median over
    /// every single-GPU job type that can run beside it of
    /// [`pair_throughput`](Self::pair_throughput). The median, not the mean, because a few
    /// co-runners (large-batch models that take the whole memory bandwidth) slow a job far more
    /// than the rest, and the placement step avoids exactly those pairings. `None` if no
    /// co-runner can run beside it. O(J log J) for J job types.
    fn typical_shared_throughput(&self, gpu: usize, job: usize) -> Option<f64> {
        let inputs = self.inputs();
        let mut values: Vec<f64> = inputs
            .single_gpu_jobs_on(gpu)
            .filter_map(|o| self.pair_throughput(gpu, job, o))
            .collect();
        median(&mut values)
    }
}

/// A boxed model, such as the one [`predictor::complete`] returns, is a model too.
impl<T: ThroughputModel + ?Sized> ThroughputModel for Box<T> {
    fn inputs(&self) -> &CostInputs {
        (**self).inputs()
    }
    fn pair_throughput(&self, gpu: usize, job: usize, other: usize) -> Option<f64> {
        (**self).pair_throughput(gpu, job, other)
    }
    fn method(&self) -> &str {
        (**self).method()
    }
}

/// The measured table itself: measured pairs only, nothing predicted.
impl ThroughputModel for CostInputs {
    fn inputs(&self) -> &CostInputs {
        self
    }
    fn pair_throughput(&self, gpu: usize, job: usize, other: usize) -> Option<f64> {
        match self.colocation(gpu, job, other) {
            Colocation::Measured { own, .. } => Some(own),
            Colocation::CannotRun | Colocation::Unmeasured => None,
        }
    }
    fn method(&self) -> &str {
        "measured"
    }
}

/// Median of finite values (mean of the two middle ones for an even count); `None` if empty.
pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        0.5 * (values[n / 2 - 1] + values[n / 2])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, Array3};

    fn job(f: &str, b: u32) -> JobType {
        JobType {
            family: f.into(),
            batch_size: Some(b),
            scale_factor: 1,
        }
    }

    fn tiny() -> CostInputs {
        let mut pair = Array3::from_elem((1, 3, 3), f64::NAN);
        // a beside b: a gets 6 of its 10, b 3 of its 4; a beside c cannot run.
        pair[[0, 0, 1]] = 6.0;
        pair[[0, 1, 0]] = 3.0;
        pair[[0, 0, 2]] = 0.0;
        pair[[0, 2, 0]] = 0.0;
        pair[[0, 0, 0]] = 5.0;
        let solo = Array2::from_shape_vec((1, 3), vec![10.0, 4.0, 2.0]).unwrap();
        CostInputs::new(
            vec!["v100".into()],
            vec![job("a", 1), job("b", 2), job("c", 3)],
            solo,
            pair,
        )
        .unwrap()
    }

    #[test]
    fn colocation_reads_both_directions() {
        let c = tiny();
        assert_eq!(
            c.colocation(0, 0, 1),
            Colocation::Measured {
                own: 6.0,
                other: 3.0
            }
        );
        assert_eq!(
            c.colocation(0, 1, 0),
            Colocation::Measured {
                own: 3.0,
                other: 6.0
            }
        );
        assert_eq!(c.colocation(0, 0, 2), Colocation::CannotRun);
        assert_eq!(c.colocation(0, 1, 2), Colocation::Unmeasured);
        assert_eq!(c.colocation(5, 0, 1), Colocation::Unmeasured);
    }

    #[test]
    fn throughput_with_multiplies_slowdowns() {
        let c = tiny();
        // 10 * (6/10) * (5/10) = 3.
        assert_eq!(c.throughput_with(0, 0, &[1, 0]), Some(3.0));
        assert_eq!(c.throughput_with(0, 0, &[]), Some(10.0));
        assert_eq!(c.throughput_with(0, 0, &[2]), None);
    }

    #[test]
    fn typical_is_the_median_of_runnable_partners() {
        // a's partners: a (5), b (6); c cannot run beside a. Median of {5, 6} = 5.5.
        assert_eq!(tiny().typical_shared_throughput(0, 0), Some(5.5));
    }

    #[test]
    fn half_zero_pairs_are_rejected() {
        let mut pair = Array3::from_elem((1, 2, 2), f64::NAN);
        pair[[0, 0, 1]] = 0.0;
        pair[[0, 1, 0]] = 2.0;
        let solo = Array2::from_elem((1, 2), 1.0);
        let err = CostInputs::new(
            vec!["k80".into()],
            vec![job("a", 1), job("b", 1)],
            solo,
            pair,
        )
        .unwrap_err();
        assert!(err.to_string().contains("cannot run together"), "{err}");
    }

    #[test]
    fn pairs_that_overflow_their_solo_ratio_are_rejected() {
        let pairs = |own: f64| {
            let mut pair = Array3::from_elem((1, 2, 2), f64::NAN);
            pair[[0, 0, 1]] = own;
            pair[[0, 1, 0]] = 2.0;
            pair
        };
        let solo = Array2::from_shape_vec((1, 2), vec![1e-308, 1.0]).unwrap();
        let build = |own| {
            CostInputs::new(
                vec!["k80".into()],
                vec![job("a", 1), job("b", 1)],
                solo.clone(),
                pairs(own),
            )
        };
        let err = build(24.0).unwrap_err();
        assert!(err.to_string().contains("must be a finite ratio"), "{err}");
        // 1e-309 over 1e-308: a ratio of 0.1, tiny but finite.
        assert!(build(1e-309).is_ok());
    }

    #[test]
    fn slug_and_key_forms() {
        let j = JobType {
            family: "ResNet-18".into(),
            batch_size: Some(16),
            scale_factor: 4,
        };
        assert_eq!(j.to_string(), "('ResNet-18 (batch size 16)', 4)");
        assert_eq!(j.slug(), "resnet-18-bs16-sf4");
    }
}
