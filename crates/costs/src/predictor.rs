//! A learned predictor of co-located throughput for job pairs that were never measured, and its
//! held-out evaluation (`stsfair predict-eval`).
//!
//! **Target.** For a job `a` beside a co-runner `b` on GPU type `g`, the model learns the ratio
//! `r = theta(a | b, g) / solo(a, g)` (the fraction of its solo throughput `a` keeps) and predicts
//! `solo(a, g) * r`. Ratios are comparable across jobs whose throughputs differ by two orders of
//! magnitude; the relative error of the throughput equals that of the ratio.
//!
//! **Features** of a sample `(g, a, b)`, all read from the training table only:
//! - the GPU type (one-hot);
//! - for `a` and for `b`: the model family (one-hot), log2 of the batch size, and the log of the
//!   solo throughput on every GPU type (how large and how fast the job is on each architecture);
//! - `a`'s mean ratio on `g` over its measured co-runners (its *sensitivity*) and the mean ratio
//!   of the jobs measured beside `b` on `g` (`b`'s *pressure*), leave-one-out on training
//!   samples so that a sample never sees its own target;
//! - the same ordered pair's ratio on each other GPU type, where measured (interference depends
//!   on the pair more than on the architecture, so this transfers);
//! - profile counters of `a` and `b` on `g`, when the inputs have them.
//!
//! **Learner.** Extremely randomized trees (Geurts, Ernst and Wehenkel, "Extremely randomized
//! trees", Machine Learning 63, 2006), from the `smartcore` crate: an average of fully grown
//! trees whose split thresholds are drawn at random. On these ~1,500 samples they beat bootstrap
//! random forests ([`Learner::RandomForest`]; `docs/costs.md` compares them). Training is
//! O(T * n log n * m) for T trees, n samples and m features tried per split; prediction of all
//! unmeasured pairs O(T * depth) each. Deterministic for a fixed seed (smartcore seeds tree `t`
//! with `seed + t`).
//!
//! The predictor never overrides a measurement: measured pairs and pairs measured as impossible
//! (`[0, 0]`) are returned as measured, and only pairs that were never measured are predicted.

use ndarray::{Array1, Array2, Array3};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use smartcore::ensemble::extra_trees_regressor::{
    ExtraTreesRegressor, ExtraTreesRegressorParameters,
};
use smartcore::ensemble::random_forest_regressor::{
    RandomForestRegressor, RandomForestRegressorParameters,
};

use super::{Colocation, CostError, CostInputs, ThroughputModel};

/// Fewest measured co-located throughputs the predictor trains on.
pub const MIN_SAMPLES: usize = 10;

/// Value of a feature that does not exist for a sample (no solo entry, no measurement on another
/// type): far below every real value (log throughputs are above -10, ratios above 0), so a tree
/// can split it off.
const ABSENT: f64 = -20.0;

/// The tree ensemble the predictor learns with (both from `smartcore`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Learner {
    /// Extremely randomized trees (Geurts et al. 2006): whole sample, random thresholds.
    #[default]
    ExtraTrees,
    /// Random forest (Breiman, "Random forests", Machine Learning 45, 2001): bootstrap samples,
    /// best thresholds. Kept for comparison (`stsfair predict-eval --learner random-forest`).
    RandomForest,
}

impl Learner {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Learner::ExtraTrees => "extra-trees",
            Learner::RandomForest => "random-forest",
        }
    }

    /// The learner called `name` ([`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<Learner> {
        [Learner::ExtraTrees, Learner::RandomForest]
            .into_iter()
            .find(|l| l.name() == name)
    }
}

/// Settings of the learned predictor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PredictorConfig {
    /// The tree ensemble.
    pub learner: Learner,
    /// Number of trees.
    pub trees: usize,
    /// Seed of the learner (and of the split in [`evaluate_holdout`]).
    pub seed: u64,
    /// Features tried at each split, as a fraction of all features.
    pub features_per_split: f64,
}

impl Default for PredictorConfig {
    fn default() -> Self {
        PredictorConfig {
            learner: Learner::ExtraTrees,
            trees: 300,
            seed: 0,
            features_per_split: 0.5,
        }
    }
}

/// Cost inputs whose unmeasured single-GPU pairs are filled by a learned model.
#[derive(Debug, Clone)]
pub struct LearnedPredictor {
    inputs: CostInputs,
    /// Predicted throughputs where the pair was never measured; NaN elsewhere.
    predicted: Array3<f64>,
    count: usize,
    method: String,
}

impl LearnedPredictor {
    /// Trains on every measured pair of single-GPU job types in `inputs` and predicts every
    /// unmeasured one (both jobs with a solo entry on the GPU type).
    pub fn train(
        inputs: &CostInputs,
        config: &PredictorConfig,
    ) -> Result<LearnedPredictor, CostError> {
        check_config(config)?;
        let features = Features::new(inputs);
        let samples = training_samples(inputs);
        if samples.len() < MIN_SAMPLES {
            return Err(CostError::TooFewSamples {
                needed: MIN_SAMPLES,
                got: samples.len(),
            });
        }
        let k = inputs.gpu_types().len();
        let j = inputs.job_types().len();
        let mut targets = Vec::new();
        for g in 0..k {
            for a in inputs.single_gpu_jobs_on(g) {
                for b in inputs.single_gpu_jobs_on(g) {
                    if inputs.colocation(g, a, b) == Colocation::Unmeasured {
                        targets.push((g, a, b));
                    }
                }
            }
        }
        let mut predicted = Array3::from_elem((k, j, j), f64::NAN);
        let method = format!(
            "{} ({} trees, smartcore)",
            config.learner.name(),
            config.trees
        );
        if !targets.is_empty() {
            let x = features.matrix(
                samples
                    .iter()
                    .map(|s| (s.gpu, s.job, s.other, Some(s.ratio))),
            )?;
            let y = Array1::from_iter(samples.iter().map(|s| s.ratio));
            let m = ((x.ncols() as f64 * config.features_per_split).ceil() as usize)
                .clamp(1, x.ncols());
            let xt = features.matrix(targets.iter().map(|&(g, a, b)| (g, a, b, None)))?;
            let method = config.learner.name();
            let fit = |e: smartcore::error::Failed| CostError::Learning {
                method,
                stage: "fit",
                message: e.to_string(),
            };
            let predict = |e: smartcore::error::Failed| CostError::Learning {
                method,
                stage: "prediction",
                message: e.to_string(),
            };
            let ratios: Array1<f64> = match config.learner {
                Learner::ExtraTrees => {
                    let params = ExtraTreesRegressorParameters::default()
                        .with_n_trees(config.trees)
                        .with_m(m)
                        .with_seed(config.seed);
                    ExtraTreesRegressor::fit(&x, &y, params)
                        .map_err(fit)?
                        .predict(&xt)
                        .map_err(predict)?
                }
                Learner::RandomForest => {
                    let params = RandomForestRegressorParameters::default()
                        .with_n_trees(config.trees)
                        .with_m(m)
                        .with_seed(config.seed);
                    RandomForestRegressor::fit(&x, &y, params)
                        .map_err(fit)?
                        .predict(&xt)
                        .map_err(predict)?
                }
            };
            for (&(g, a, b), &r) in targets.iter().zip(ratios.iter()) {
                let Some(solo) = inputs.solo(g, a) else {
                    continue;
                };
                if !(r.is_finite() && r > 0.0) {
                    return Err(CostError::Learning {
                        method: config.learner.name(),
                        stage: "prediction",
                        message: format!(
                            "ratio {r} for {} beside {}",
                            inputs.job_types()[a],
                            inputs.job_types()[b]
                        ),
                    });
                }
                predicted[[g, a, b]] = solo * r;
            }
        }
        Ok(LearnedPredictor {
            inputs: inputs.clone(),
            predicted,
            count: targets.len(),
            method,
        })
    }

    /// Whether `pair_throughput(gpu, job, other)` is a prediction rather than a measurement.
    pub fn is_predicted(&self, gpu: usize, job: usize, other: usize) -> bool {
        self.predicted
            .get([gpu, job, other])
            .is_some_and(|v| !v.is_nan())
    }

    /// How many ordered pairs were predicted.
    pub fn predicted_pairs(&self) -> usize {
        self.count
    }
}

impl ThroughputModel for LearnedPredictor {
    fn inputs(&self) -> &CostInputs {
        &self.inputs
    }
    fn pair_throughput(&self, gpu: usize, job: usize, other: usize) -> Option<f64> {
        match self.inputs.colocation(gpu, job, other) {
            Colocation::Measured { own, .. } => Some(own),
            Colocation::CannotRun => None,
            Colocation::Unmeasured => self
                .predicted
                .get([gpu, job, other])
                .copied()
                .filter(|v| !v.is_nan()),
        }
    }
    fn method(&self) -> &str {
        &self.method
    }
}

/// The model instance generation and placement should use: the measured table itself when every
/// pair of single-GPU job types that can run alone was measured (the Gavel file is complete),
/// otherwise a [`LearnedPredictor`] trained on it, which predicts exactly the missing pairs.
pub fn complete(
    inputs: CostInputs,
    config: &PredictorConfig,
) -> Result<Box<dyn ThroughputModel + Send + Sync>, CostError> {
    if inputs.unmeasured_single_gpu_pairs() == 0 {
        return Ok(Box::new(inputs));
    }
    Ok(Box::new(LearnedPredictor::train(&inputs, config)?))
}

/// Baseline errors on the same held-out split.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Baselines {
    /// MAPE of predicting every ratio by the mean ratio of all training samples.
    pub global_mean_ratio: f64,
    /// MAPE of predicting a job's ratio on a GPU type by its mean ratio there in training
    /// (the global mean where it has none).
    pub per_job_mean_ratio: f64,
}

/// The result of [`evaluate_holdout`], in the JSON form `stsfair predict-eval --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HoldoutReport {
    /// Mean absolute percentage error (as a fraction) of the predicted co-located throughputs of
    /// both jobs of every held-out pair.
    pub mape: f64,
    /// Unordered measured pairs trained on (summed over GPU types).
    pub pairs_train: usize,
    /// Unordered pairs held out.
    pub pairs_test: usize,
    /// Predictions scored (two per held-out pair of distinct job types, one for a job beside
    /// itself).
    pub predictions_test: usize,
    /// The learner.
    pub method: String,
    /// The split's seed.
    pub seed: u64,
    /// Baselines on the same split.
    pub baselines: Baselines,
}

/// Holds out a random `holdout` fraction of the measured unordered pairs of single-GPU job types
/// (per GPU type: `round(holdout * n_g)` of its `n_g` pairs, drawn with ChaCha8 seeded by
/// `config.seed`), trains the predictor on the rest and scores the predicted co-located
/// throughput of each job of each held-out pair, with the two baselines on the same split.
pub fn evaluate_holdout(
    inputs: &CostInputs,
    holdout: f64,
    config: &PredictorConfig,
) -> Result<HoldoutReport, CostError> {
    if !(holdout > 0.0 && holdout < 1.0) {
        return Err(CostError::Parameter {
            name: "holdout",
            rule: "must be in (0, 1)",
            got: holdout.to_string(),
        });
    }
    let all = inputs.measured_single_gpu_pairs();
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut test = Vec::new();
    for g in 0..inputs.gpu_types().len() {
        let mut pairs: Vec<_> = all.iter().copied().filter(|p| p.0 == g).collect();
        pairs.shuffle(&mut rng);
        let n_test = (holdout * pairs.len() as f64).round() as usize;
        test.extend_from_slice(&pairs[..n_test]);
    }
    let masked = inputs.without_pairs(&test);
    let predictor = LearnedPredictor::train(&masked, config)?;

    let train = training_samples(&masked);
    let global = train.iter().map(|s| s.ratio).sum::<f64>() / train.len() as f64;
    let (sums, counts) = ratio_sums(&masked, &train);

    let mut err = [0.0_f64; 3];
    let mut n = 0usize;
    for &(g, a, b) in &test {
        let directions: &[(usize, usize)] = if a == b { &[(a, b)] } else { &[(a, b), (b, a)] };
        for &(x, y) in directions {
            let Colocation::Measured { own: actual, .. } = inputs.colocation(g, x, y) else {
                continue;
            };
            let solo = inputs.solo(g, x).ok_or(CostError::Parameter {
                name: "inputs",
                rule: "held-out pairs must have solo entries",
                got: format!("{} on {}", inputs.job_types()[x], inputs.gpu_types()[g]),
            })?;
            let predicted =
                predictor
                    .pair_throughput(g, x, y)
                    .ok_or_else(|| CostError::Learning {
                        method: config.learner.name(),
                        stage: "prediction",
                        message: format!(
                            "no prediction for {} beside {}",
                            inputs.job_types()[x],
                            inputs.job_types()[y]
                        ),
                    })?;
            let per_job = if counts[[g, x]] > 0.0 {
                sums[[g, x]] / counts[[g, x]]
            } else {
                global
            };
            for (e, guess) in err
                .iter_mut()
                .zip([predicted, solo * global, solo * per_job])
            {
                *e += (guess - actual).abs() / actual;
            }
            n += 1;
        }
    }
    let n_f = n.max(1) as f64;
    Ok(HoldoutReport {
        mape: err[0] / n_f,
        pairs_train: all.len() - test.len(),
        pairs_test: test.len(),
        predictions_test: n,
        method: predictor.method().to_string(),
        seed: config.seed,
        baselines: Baselines {
            global_mean_ratio: err[1] / n_f,
            per_job_mean_ratio: err[2] / n_f,
        },
    })
}

fn check_config(config: &PredictorConfig) -> Result<(), CostError> {
    if config.trees == 0 || config.trees > 100_000 {
        return Err(CostError::Parameter {
            name: "trees",
            rule: "must be in 1..=100000",
            got: config.trees.to_string(),
        });
    }
    let f = config.features_per_split;
    if !(f > 0.0 && f <= 1.0) {
        return Err(CostError::Parameter {
            name: "features_per_split",
            rule: "must be in (0, 1]",
            got: f.to_string(),
        });
    }
    Ok(())
}

/// One measured co-located throughput, as a ratio of the solo throughput.
#[derive(Debug, Clone, Copy)]
struct Sample {
    gpu: usize,
    job: usize,
    other: usize,
    ratio: f64,
}

/// Every measured ordered pair of single-GPU job types with solo entries.
fn training_samples(inputs: &CostInputs) -> Vec<Sample> {
    let mut out = Vec::new();
    for g in 0..inputs.gpu_types().len() {
        for a in inputs.single_gpu_jobs_on(g) {
            let Some(solo) = inputs.solo(g, a) else {
                continue;
            };
            for b in inputs.single_gpu_jobs_on(g) {
                if let Colocation::Measured { own, .. } = inputs.colocation(g, a, b) {
                    out.push(Sample {
                        gpu: g,
                        job: a,
                        other: b,
                        ratio: own / solo,
                    });
                }
            }
        }
    }
    out
}

/// Sums and counts of ratios per (gpu, job): the job's sensitivity.
fn ratio_sums(inputs: &CostInputs, samples: &[Sample]) -> (Array2<f64>, Array2<f64>) {
    let shape = (inputs.gpu_types().len(), inputs.job_types().len());
    let (mut sums, mut counts) = (Array2::zeros(shape), Array2::zeros(shape));
    for s in samples {
        sums[[s.gpu, s.job]] += s.ratio;
        counts[[s.gpu, s.job]] += 1.0;
    }
    (sums, counts)
}

/// Builds feature rows from one (training) table.
struct Features<'a> {
    inputs: &'a CostInputs,
    families: Vec<String>,
    sens: (Array2<f64>, Array2<f64>),
    press: (Array2<f64>, Array2<f64>),
    global: f64,
}

impl<'a> Features<'a> {
    fn new(inputs: &'a CostInputs) -> Features<'a> {
        let samples = training_samples(inputs);
        let mut families: Vec<String> = inputs
            .job_types()
            .iter()
            .map(|j| j.family.clone())
            .collect();
        families.sort();
        families.dedup();
        let sens = ratio_sums(inputs, &samples);
        let swapped: Vec<Sample> = samples
            .iter()
            .map(|s| Sample {
                job: s.other,
                other: s.job,
                ..*s
            })
            .collect();
        let press = ratio_sums(inputs, &swapped);
        let global = if samples.is_empty() {
            1.0
        } else {
            samples.iter().map(|s| s.ratio).sum::<f64>() / samples.len() as f64
        };
        Features {
            inputs,
            families,
            sens,
            press,
            global,
        }
    }

    /// Mean of a (gpu, job) cell, without `own` (leave-one-out) when it is a training sample.
    fn mean(
        &self,
        table: &(Array2<f64>, Array2<f64>),
        g: usize,
        j: usize,
        own: Option<f64>,
    ) -> f64 {
        let (mut s, mut c) = (table.0[[g, j]], table.1[[g, j]]);
        if let Some(r) = own {
            s -= r;
            c -= 1.0;
        }
        if c > 0.0 { s / c } else { self.global }
    }

    fn row(&self, g: usize, a: usize, b: usize, own: Option<f64>, out: &mut Vec<f64>) {
        let inputs = self.inputs;
        let k = inputs.gpu_types().len();
        out.extend((0..k).map(|x| if x == g { 1.0 } else { 0.0 }));
        for job in [a, b] {
            let jt = &inputs.job_types()[job];
            out.extend(
                self.families
                    .iter()
                    .map(|f| if *f == jt.family { 1.0 } else { 0.0 }),
            );
            out.push(jt.batch_size.map_or(ABSENT, |bs| f64::from(bs).log2()));
            out.extend((0..k).map(|x| inputs.solo(x, job).map_or(ABSENT, f64::ln)));
        }
        out.push(self.mean(&self.sens, g, a, own));
        out.push(self.mean(&self.press, g, b, own));
        for x in 0..k {
            let v = match (x != g, inputs.colocation(x, a, b), inputs.solo(x, a)) {
                (true, Colocation::Measured { own, .. }, Some(solo)) => own / solo,
                _ => ABSENT,
            };
            out.push(v);
        }
        if let Some(c) = inputs.counters() {
            for job in [a, b] {
                out.extend((0..c.names.len()).map(|i| {
                    let v = c.values[[g, job, i]];
                    if v.is_nan() { ABSENT } else { v }
                }));
            }
        }
    }

    fn matrix(
        &self,
        rows: impl Iterator<Item = (usize, usize, usize, Option<f64>)>,
    ) -> Result<Array2<f64>, CostError> {
        let mut data = Vec::new();
        let mut n = 0;
        for (g, a, b, own) in rows {
            self.row(g, a, b, own, &mut data);
            n += 1;
        }
        let width = data.len().checked_div(n).unwrap_or(0);
        let len = data.len();
        Array2::from_shape_vec((n, width), data).map_err(|_| CostError::Shape {
            what: "feature matrix",
            got: vec![len],
            expected: vec![n, width],
        })
    }
}
