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
//! - profile counters of `a` and `b` on `g`, when the inputs have them;
//! - with [`FeatureSet::ColdStart`] (the default), also for `a` and `b` the additive
//!   sensitivity and pressure on every GPU type (`Additive`), the speed on every other GPU
//!   type relative to `g`, and the additive prediction; each sample is then trained on in
//!   seven variants (`Cold::VARIANTS`) that hide what a never-measured pair, job or partner
//!   lacks, so that the trees learn to predict without it (`docs/costs.md`).
//!
//! **Never-paired job types.** A pair with a job type that has no measured pair on any GPU type
//! is predicted (with [`FeatureSet::ColdStart`]) by the geometric mean of that model and a
//! second one (`Features::for_never_paired`) that learns the ratio relative to a contention
//! prior from solo profiles only (`Prior`: each job's elasticity of solo throughput to
//! hardware speed, a ridge regression per GPU type, cross-fitted without the hidden job's
//! family), so that a family unlike every measured one falls back to the prior's
//! extrapolation rather than to the trees' nearest leaf.
//!
//! **Jobs known from a few partners.** A job type with 1 to 3 (`FEW_PARTNERS`) measured partners
//! on a GPU type (a new job profiled against a few reference jobs) has its predicted ratios
//! there scaled by its shrunk mean log residual on those reference pairs, each predicted out
//! of fold (`few_partner_factors`). Every other job is corrected in the same way in both
//! roles, its sensitivity and its pressure on partners, from residuals predicted in 3 folds
//! (`job_biases`).
//!
//! **Evaluation.** [`evaluate_split`] draws a held-out set ([`held_out_pairs`]: per GPU type,
//! pairs on every type, job types or model families, with optional reference partners) and
//! scores the predictor trained on the rest ([`evaluate_pairs`], which also takes a held-out
//! set from the caller). Features read only the masked table, so nothing of a held-out pair
//! reaches them (tested below).
//!
//! **Learner.** Extremely randomized trees (Geurts, Ernst and Wehenkel, "Extremely randomized
//! trees", Machine Learning 63, 2006), the crate's own (`extra_trees.rs`, 1.6-1.8x faster
//! than `smartcore`'s on these fits): an average of 50 fully grown trees whose split thresholds
//! are drawn at random. On these ~1,500 samples they beat bootstrap random forests
//! ([`Learner::RandomForest`], from `smartcore`; `docs/costs.md` compares them). Training is
//! O(T * m * n * depth) for T trees, n training rows and m features tried per split;
//! prediction of all unmeasured pairs O(T * depth) each. Deterministic for a fixed seed (tree
//! `t` draws from ChaCha8 seeded with `seed + t`).
//!
//! The predictor never overrides a measurement: measured pairs and pairs measured as impossible
//! (`[0, 0]`) are returned as measured, and only pairs that were never measured are predicted.

use std::collections::HashMap;

use ndarray::{Array1, Array2, Array3};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use smartcore::ensemble::random_forest_regressor::{
    RandomForestRegressor, RandomForestRegressorParameters,
};

use super::extra_trees::ExtraTrees;
use super::{Colocation, CostError, CostInputs, ThroughputModel};

/// Fewest measured co-located throughputs the predictor trains on.
pub const MIN_SAMPLES: usize = 10;

/// Value of a feature that does not exist for a sample (no solo entry, no measurement on another
/// type): far below every real value (log throughputs are above -10, ratios above 0), so a tree
/// can split it off.
const ABSENT: f64 = -20.0;

/// The tree ensemble the predictor learns with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Learner {
    /// Extremely randomized trees (Geurts et al. 2006): whole sample, random thresholds; the
    /// crate's own implementation.
    #[default]
    ExtraTrees,
    /// Random forest (Breiman, "Random forests", Machine Learning 45, 2001): bootstrap samples,
    /// best thresholds, from `smartcore`. Kept for comparison (`stsfair predict-eval --learner
    /// random-forest`).
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
    /// Number of trees (50 by default: their worst held-out error is within 6% of 300 trees' on
    /// every split of docs/costs.md, at a sixth of the fit time).
    pub trees: usize,
    /// Seed of the learner (and of the split in [`evaluate_holdout`]).
    pub seed: u64,
    /// Features tried at each split, as a fraction of all features.
    pub features_per_split: f64,
    /// The feature set (and training rows) the learner sees.
    pub features: FeatureSet,
}

/// Which features the predictor computes, and on which rows it trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FeatureSet {
    /// The pairwise features of the first predictor: job and partner descriptions,
    /// leave-one-out mean ratios, the same pair on other GPU types; one row per measured sample.
    /// Kept for comparison (`stsfair predict-eval --features pairwise`).
    Pairwise,
    /// Cold-start features: the pairwise ones, plus each job's additive sensitivity
    /// and pressure on every GPU type (`Additive`), the additive model's prediction, and the
    /// job's speed on every GPU type relative to this one; each measured sample is also shown
    /// to the learner as it would look if the pair, the job or the partner had never been
    /// measured (those features absent), so that the trees learn what to do without them.
    #[default]
    ColdStart,
}

impl FeatureSet {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            FeatureSet::Pairwise => "pairwise",
            FeatureSet::ColdStart => "cold-start",
        }
    }

    /// The feature set called `name` ([`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<FeatureSet> {
        [FeatureSet::Pairwise, FeatureSet::ColdStart]
            .into_iter()
            .find(|f| f.name() == name)
    }
}

impl Default for PredictorConfig {
    fn default() -> Self {
        PredictorConfig {
            learner: Learner::ExtraTrees,
            trees: 50,
            seed: 0,
            features_per_split: 0.5,
            features: FeatureSet::ColdStart,
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
        Self::train_with(inputs, config, true)
    }

    /// [`train`](Self::train), with or without the calibration of few-partner jobs
    /// ([`few_partner_factors`]; the shadow fits it makes are trained without it).
    fn train_with(
        inputs: &CostInputs,
        config: &PredictorConfig,
        calibrate: bool,
    ) -> Result<LearnedPredictor, CostError> {
        check_config(config)?;
        let features = Features::new(inputs, config.features);
        let samples = training_samples(inputs);
        if samples.len() < MIN_SAMPLES {
            return Err(CostError::TooFewSamples {
                needed: MIN_SAMPLES,
                got: samples.len(),
            });
        }
        let k = inputs.gpu_types().len();
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
        let method = format!(
            "{} ({} trees, {}, {} features)",
            config.learner.name(),
            config.trees,
            match config.learner {
                Learner::ExtraTrees => "stsfair",
                Learner::RandomForest => "smartcore",
            },
            config.features.name()
        );
        // The calibrations' shadow fits read only `inputs`, not the predictions: they run on a
        // second thread while this one fits the model (their factors are applied after, to
        // disjoint rows, so the predictions are the same bit for bit as one after the other).
        let calibrating = calibrate && config.features == FeatureSet::ColdStart;
        let calibration = || -> Result<Calibration, CostError> {
            Ok(Calibration {
                few: few_partner_factors(inputs, config)?,
                all: job_biases(inputs, config),
            })
        };
        let (predicted, calibration) = std::thread::scope(|scope| {
            let worker = if calibrating {
                std::thread::Builder::new()
                    .name("predictor-calibration".into())
                    .spawn_scoped(scope, calibration)
                    .ok()
            } else {
                None
            };
            let predicted = predict_targets(inputs, &features, &samples, &targets, config);
            let calibration = match (calibrating, worker) {
                (false, _) => None,
                (true, Some(handle)) => Some(handle.join().map_err(|_| CostError::Learning {
                    method: config.learner.name(),
                    stage: "calibration",
                    message: "the calibration's thread stopped".into(),
                })),
                // No second thread to be had: the calibration runs here.
                (true, None) => Some(Ok(calibration())),
            };
            (predicted, calibration)
        });
        let mut predicted = predicted?;
        if let Some(calibration) = calibration {
            let Calibration { few, all } = calibration??;
            apply_few_partner_factors(&mut predicted, &few);
            if let Some((sens, press)) = all {
                let few: Vec<(usize, usize)> =
                    few_partner_jobs(inputs).into_iter().map(|p| p.0).collect();
                apply_biases(&mut predicted, &sens, &press, &few);
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

/// Factors of rows `(gpu, job)` of the predictions.
type RowFactors = Vec<((usize, usize), f64)>;

/// The factors of both calibrations, computed apart from the predictions they scale.
struct Calibration {
    /// [`few_partner_factors`].
    few: RowFactors,
    /// [`job_biases`].
    all: Option<(Array2<f64>, Array2<f64>)>,
}

/// The predicted throughput of every target `(gpu, job, other)` (NaN elsewhere), before
/// calibration: pairs with a job type never measured beside anything by their own model too.
fn predict_targets(
    inputs: &CostInputs,
    features: &Features,
    samples: &[Sample],
    targets: &[(usize, usize, usize)],
    config: &PredictorConfig,
) -> Result<Array3<f64>, CostError> {
    let k = inputs.gpu_types().len();
    let j = inputs.job_types().len();
    let mut predicted = Array3::from_elem((k, j, j), f64::NAN);
    // Pairs with a job type never measured beside anything (a new job type, a new family)
    // are predicted by their own model ([`Features::for_never_paired`]); the others by the
    // model of the chosen feature set.
    let (cold, warm): (Vec<_>, Vec<_>) = targets.iter().partition(|&&(_, a, b)| {
        config.features == FeatureSet::ColdStart
            && (features.never_paired(a) || features.never_paired(b))
    });
    for (group, never_paired) in [(warm, false), (cold, true)] {
        if group.is_empty() {
            continue;
        }
        let mut ratios = fit_and_predict(features, samples, &group, config)?;
        if never_paired {
            // The geometric mean of the two models' ratios.
            let prior = Features::for_never_paired(inputs);
            let other = fit_and_predict(&prior, samples, &group, config)?;
            for (r, o) in ratios.iter_mut().zip(other) {
                *r = (*r * o).sqrt();
            }
        }
        for (&(g, a, b), &r) in group.iter().zip(ratios.iter()) {
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
    Ok(predicted)
}

/// The measured partners (other job types) of each job type with at most [`FEW_PARTNERS`] of
/// them on a GPU type, sorted by the partner's solo throughput there (then index), keyed by
/// `(gpu, job)`: jobs known from a few reference partners.
fn few_partner_jobs(inputs: &CostInputs) -> Vec<((usize, usize), Vec<usize>)> {
    let mut out = Vec::new();
    for g in 0..inputs.gpu_types().len() {
        for a in inputs.single_gpu_jobs_on(g) {
            let mut partners: Vec<(f64, usize)> = inputs
                .single_gpu_jobs_on(g)
                .filter(|&b| {
                    b != a && matches!(inputs.colocation(g, a, b), Colocation::Measured { .. })
                })
                .filter_map(|b| inputs.solo(g, b).map(|v| (v, b)))
                .collect();
            if partners.is_empty() || partners.len() > FEW_PARTNERS {
                continue;
            }
            partners.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
            out.push(((g, a), partners.into_iter().map(|p| p.1).collect()));
        }
    }
    out
}

/// Calibrates the predictions of a job known from a few partners ([`few_partner_jobs`]) by
/// its reference pairs: its predicted ratio beside any partner on GPU type `g` is multiplied by
/// `exp(sum / (n + RIDGE))`, the sum over its `n` measured partners on `g` of
/// `ln(measured / predicted)`, each predicted out of fold. The folds: fold `i` removes each
/// such job's `i`-th partner (both directions, that GPU type only) and trains the predictor
/// without calibration (`1 / CALIBRATION_TREES` of the trees) on the rest, so each reference pair
/// is predicted as the job's other pairs are, from a table without it. Only the job's own
/// ratio (its sensitivity) is calibrated: the partners' ratios beside it vary with each
/// partner's own sensitivity, and calibrating them did not help (`docs/costs.md`, "The
/// predictor"). Reads only `inputs`; a table without such jobs is left as it is (no fit), and so
/// is one whose shadow fit fails (too few samples). `FEW_PARTNERS` extra fits.
fn few_partner_factors(
    inputs: &CostInputs,
    config: &PredictorConfig,
) -> Result<RowFactors, CostError> {
    let few = few_partner_jobs(inputs);
    if few.is_empty() {
        return Ok(Vec::new());
    }
    let shadow = PredictorConfig {
        trees: config.trees.div_ceil(CALIBRATION_TREES),
        ..*config
    };
    // Per (gpu, job): sum of ln(measured / out-of-fold predicted) and count.
    let mut residuals: HashMap<(usize, usize), (f64, f64)> = HashMap::new();
    for fold in 0..FEW_PARTNERS {
        let removed: Vec<(usize, usize, usize)> = few
            .iter()
            .filter_map(|((g, a), ps)| ps.get(fold).map(|&b| (*g, (*a).min(b), (*a).max(b))))
            .collect();
        if removed.is_empty() {
            continue;
        }
        // A table too small to lose these pairs (too few samples left) is not calibrated.
        let Ok(model) =
            LearnedPredictor::train_with(&inputs.without_pairs(&removed), &shadow, false)
        else {
            return Ok(Vec::new());
        };
        for &((g, a), ref ps) in &few {
            let Some(&b) = ps.get(fold) else { continue };
            if let (Colocation::Measured { own, .. }, Some(p)) =
                (inputs.colocation(g, a, b), model.pair_throughput(g, a, b))
            {
                let e = residuals.entry((g, a)).or_insert((0.0, 0.0));
                e.0 += (own / p).ln();
                e.1 += 1.0;
            }
        }
    }
    Ok(residuals
        .into_iter()
        .map(|(row, (sum, n))| (row, calibration_factor(sum, n)))
        .collect())
}

/// Scales each row `(g, a)` of `predicted` by its factor ([`few_partner_factors`]).
fn apply_few_partner_factors(predicted: &mut Array3<f64>, factors: &[((usize, usize), f64)]) {
    for &((g, a), factor) in factors {
        predicted
            .slice_mut(ndarray::s![g, a, ..])
            .mapv_inplace(|v| v * factor);
    }
}

/// Calibrates every job type with more than [`FEW_PARTNERS`] measured partners on a GPU type
/// (those with fewer are [`few_partner_factors`]'s) by its out-of-fold residuals there, in
/// both roles: its predicted ratio beside any partner on `g` (its sensitivity) is multiplied by
/// `exp(CALIBRATION_SHRINK * sum / (n + RIDGE))`, the sum over its `n` measured pairs on `g` of
/// `ln(measured / predicted)` of its own throughput, and each partner's predicted ratio beside
/// it (its pressure) by the same of the partners' throughputs beside it. The folds: the
/// measured pairs of distinct job types (unordered, all GPU types) are shuffled with the
/// config's seed and dealt into [`CALIBRATION_FOLDS`] folds; each fold is removed (both
/// directions) and the predictor trained without calibration (`1 / CALIBRATION_TREES` of the
/// trees) on the rest predicts it. The two factors are estimated from the same residuals, so
/// each is halved in the log ([`CALIBRATION_SHRINK`]) rather than applied in full. The rows of
/// few-partner jobs are left to [`few_partner_factors`] (their factor, from uncalibrated
/// shadow fits, already carries their partners' pressure on their references). Reads only
/// `inputs`; a table without such jobs, or whose shadow fit fails, is left as it is.
/// `CALIBRATION_FOLDS` extra fits.
///
/// The factors: `(sensitivity, pressure)`, each indexed `[gpu, job]`
/// (1 for a job not calibrated on that type); `None` when nothing is calibrated.
fn job_biases(inputs: &CostInputs, config: &PredictorConfig) -> Option<(Array2<f64>, Array2<f64>)> {
    let k = inputs.gpu_types().len();
    let j = inputs.job_types().len();
    let mut pairs: Vec<(usize, usize, usize)> = inputs
        .measured_single_gpu_pairs()
        .into_iter()
        .filter(|&(_, a, b)| a != b)
        .collect();
    let mut partners = Array2::<usize>::zeros((k, j));
    for &(g, a, b) in &pairs {
        partners[[g, a]] += 1;
        partners[[g, b]] += 1;
    }
    let many = |g: usize, a: usize| partners[[g, a]] > FEW_PARTNERS;
    if !pairs.iter().any(|&(g, a, b)| many(g, a) || many(g, b)) {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed ^ 0x5ca1_ab1e);
    pairs.shuffle(&mut rng);
    let shadow = PredictorConfig {
        trees: config.trees.div_ceil(CALIBRATION_TREES),
        ..*config
    };
    // Sums of log residuals and their counts, by the job's own role and by the partner's.
    let mut sens = Array2::<f64>::zeros((k, j));
    let mut sens_n = Array2::<f64>::zeros((k, j));
    let mut press = Array2::<f64>::zeros((k, j));
    let mut press_n = Array2::<f64>::zeros((k, j));
    for fold in 0..CALIBRATION_FOLDS {
        let removed: Vec<(usize, usize, usize)> = pairs
            .iter()
            .skip(fold)
            .step_by(CALIBRATION_FOLDS)
            .copied()
            .collect();
        // A table too small to lose these pairs (too few samples left) is not calibrated.
        let model =
            LearnedPredictor::train_with(&inputs.without_pairs(&removed), &shadow, false).ok()?;
        for &(g, a, b) in &removed {
            for (x, y) in [(a, b), (b, a)] {
                if let (Colocation::Measured { own, .. }, Some(p)) =
                    (inputs.colocation(g, x, y), model.pair_throughput(g, x, y))
                {
                    let r = (own / p).ln();
                    if many(g, x) {
                        sens[[g, x]] += r;
                        sens_n[[g, x]] += 1.0;
                    }
                    if many(g, y) {
                        press[[g, y]] += r;
                        press_n[[g, y]] += 1.0;
                    }
                }
            }
        }
    }
    let factor = |sum: f64, n: f64| (CALIBRATION_SHRINK * sum / (n + RIDGE)).exp();
    let sens = ndarray::Zip::from(&sens)
        .and(&sens_n)
        .map_collect(|&s, &n| factor(s, n));
    let press = ndarray::Zip::from(&press)
        .and(&press_n)
        .map_collect(|&s, &n| factor(s, n));
    Some((sens, press))
}

/// Multiplies each predicted `[g, a, b]` by `sens[[g, a]] * press[[g, b]]`, except the rows
/// `(g, a)` in `few` (jobs calibrated by [`few_partner_factors`]).
fn apply_biases(
    predicted: &mut Array3<f64>,
    sens: &Array2<f64>,
    press: &Array2<f64>,
    few: &[(usize, usize)],
) {
    for ((g, a, b), v) in predicted.indexed_iter_mut() {
        if few.contains(&(g, a)) {
            continue;
        }
        *v *= sens[[g, a]] * press[[g, b]];
    }
}

/// The folds of [`job_biases`].
const CALIBRATION_FOLDS: usize = 3;

/// The share of [`job_biases`]'s mean log residuals applied, in each role.
const CALIBRATION_SHRINK: f64 = 0.5;

/// The calibration factor of a job with `n` reference pairs whose log residuals sum to `sum`:
/// their mean, shrunk toward 0 with the additive model's ridge weight ([`RIDGE`] samples).
fn calibration_factor(sum: f64, n: f64) -> f64 {
    (sum / (n + RIDGE)).exp()
}

/// The shadow fits of [`few_partner_factors`] use `1 / CALIBRATION_TREES` of the trees
/// (the factor averages over partners and trees; this keeps the extra cost near one fit).
const CALIBRATION_TREES: usize = 3;

/// Trains the learner on `samples` with `features` and returns the predicted ratio of each of
/// `targets` (`(gpu, job, other)`).
fn fit_and_predict(
    features: &Features,
    samples: &[Sample],
    targets: &[(usize, usize, usize)],
    config: &PredictorConfig,
) -> Result<Vec<f64>, CostError> {
    let (x, y) = features.training_set(samples)?;
    let m = ((x.ncols() as f64 * config.features_per_split).ceil() as usize).clamp(1, x.ncols());
    let xt = features.matrix(targets.iter().map(|&(g, a, b)| (g, a, b, None, Cold::NONE)))?;
    let method = config.learner.name();
    let fit = |message: String| CostError::Learning {
        method,
        stage: "fit",
        message,
    };
    let predict = |message: String| CostError::Learning {
        method,
        stage: "prediction",
        message,
    };
    let out: Array1<f64> = match config.learner {
        Learner::ExtraTrees => ExtraTrees::fit(&x, &y, config.trees, m, config.seed)
            .ok_or_else(|| fit("no training row, or a value that is not finite".into()))?
            .predict(&xt)
            .ok_or_else(|| predict("the rows to predict have another number of features".into()))?,
        Learner::RandomForest => {
            let params = RandomForestRegressorParameters::default()
                .with_n_trees(config.trees)
                .with_m(m)
                .with_seed(config.seed);
            RandomForestRegressor::fit(&x, &y, params)
                .map_err(|e| fit(e.to_string()))?
                .predict(&xt)
                .map_err(|e| predict(e.to_string()))?
        }
    };
    Ok(targets
        .iter()
        .zip(out.iter())
        .map(|(&(g, a, b), &t)| features.ratio_from_target(t, g, a, b))
        .collect())
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

/// The result of [`evaluate_split`] (and [`evaluate_pairs`], [`evaluate_holdout`]), in the JSON
/// form `stsfair predict-eval --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HoldoutReport {
    /// Mean absolute percentage error (as a fraction) of the predicted co-located throughputs of
    /// both jobs of every held-out pair.
    pub mape: f64,
    /// Unordered measured pairs trained on (summed over GPU types).
    pub pairs_train: usize,
    /// Unordered pairs held out (summed over GPU types).
    pub pairs_test: usize,
    /// Predictions scored (two per held-out pair of distinct job types, one for a job beside
    /// itself).
    pub predictions_test: usize,
    /// The learner.
    pub method: String,
    /// The split's seed.
    pub seed: u64,
    /// The split kind ([`Split::name`]; `custom` for a held-out set given by the caller).
    pub split: String,
    /// Reference partners kept per held-out job type and GPU type (`job` and `family` splits;
    /// 0 otherwise).
    pub reference_partners: usize,
    /// Baselines on the same split.
    pub baselines: Baselines,
    /// Every scored prediction, in the order of the held-out pairs (not in the report's JSON:
    /// `stsfair predict-eval --predictions FILE` writes them apart, one JSON object a line).
    #[serde(skip)]
    pub predictions: Vec<ScoredPrediction>,
}

/// One scored prediction of a held-out evaluation: the co-located throughput of `job` beside
/// `partner` on `gpu`, predicted with the pair held out, its measurement, and what the two
/// baselines predicted. Where a model's error sits (which GPU type, which jobs, which side of
/// the pair) is read from these: docs/costs.md, "Accuracy against the targets".
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ScoredPrediction {
    /// GPU type name.
    pub gpu: String,
    /// The job whose throughput is predicted (Gavel's job key).
    pub job: String,
    /// Its co-runner.
    pub partner: String,
    /// The job's solo throughput on `gpu` (steps per second).
    pub solo: f64,
    /// Its measured throughput beside `partner`.
    pub measured: f64,
    /// The predictor's throughput, trained without the held-out pairs.
    pub predicted: f64,
    /// The global-mean-ratio baseline's throughput.
    pub global_mean_ratio: f64,
    /// The per-job-mean-ratio baseline's throughput.
    pub per_job_mean_ratio: f64,
}

/// How the held-out pairs are chosen (`stsfair predict-eval --split`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Split {
    /// Per GPU type, a fraction of its measured pairs; the same pair usually stays measured on
    /// the other types.
    #[default]
    PerType,
    /// A fraction of the job-type pairs, held out on every GPU type: pairs never measured.
    PairAllTypes,
    /// A fraction of the job types, every pair of theirs held out on every GPU type (but the
    /// reference partners): job types profiled alone but never beside anything.
    Job,
    /// A fraction of the model families, every pair of their job types held out (but the
    /// reference partners): models never seen beside anything.
    Family,
}

impl Split {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Split::PerType => "per-type",
            Split::PairAllTypes => "pair-all-types",
            Split::Job => "job",
            Split::Family => "family",
        }
    }

    /// The split called `name` ([`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<Split> {
        [
            Split::PerType,
            Split::PairAllTypes,
            Split::Job,
            Split::Family,
        ]
        .into_iter()
        .find(|x| x.name() == name)
    }
}

/// A held-out split: its kind, the fraction held out and the reference partners.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplitConfig {
    /// The kind.
    pub split: Split,
    /// Fraction held out, in (0, 1): of the pairs (per GPU type for [`Split::PerType`], of
    /// job-type pairs for [`Split::PairAllTypes`]), of the job types ([`Split::Job`]) or of the
    /// families ([`Split::Family`]); `round(fraction * n)`, at least 1 and at most `n - 1`
    /// (a split that holds out every job type leaves nothing to train on).
    pub holdout: f64,
    /// For [`Split::Job`] and [`Split::Family`]: measured pairs kept in training for each
    /// held-out job type on each GPU type (see [`held_out_pairs`] for the rule).
    pub reference_partners: usize,
}

impl Default for SplitConfig {
    fn default() -> Self {
        SplitConfig {
            split: Split::PerType,
            holdout: 0.2,
            reference_partners: 0,
        }
    }
}

/// How many of `n` items a fraction holds out: `round(holdout * n)`, clamped to `1..=n - 1`
/// when `clamp_below_all` (job types, families) or to `1..=n` otherwise.
fn holdout_count(holdout: f64, n: usize, clamp_below_all: bool) -> usize {
    let top = if clamp_below_all {
        n.saturating_sub(1)
    } else {
        n
    };
    ((holdout * n as f64).round() as usize).max(1).min(top)
}

/// The held-out unordered pairs `(gpu, a, b)` (`a <= b`, measured as possible) of a split drawn
/// with ChaCha8 seeded by `seed`:
///
/// - [`Split::PerType`]: per GPU type, `round(holdout * n_g)` of its `n_g` pairs (the draw of
///   the first predictor's evaluation, so its numbers are unchanged);
/// - [`Split::PairAllTypes`]: `round(holdout * n)` of the `n` job-type pairs measured on some
///   type, each held out on every type where it is measured;
/// - [`Split::Job`] / [`Split::Family`]: `round(holdout * n)` of the `n` single-GPU job types
///   (families) that have a measured pair; every measured pair with a held-out job type in it,
///   on every GPU type, except the reference partners.
///
/// **Reference partners** (the fixed rule): for a held-out job type `h` on GPU type `g`, the
/// candidates are the job types that are not held out and whose pair with `h` is measured on
/// `g`, sorted by solo throughput on `g` (then index); with `c` candidates and `N` reference
/// partners, the candidates at positions `floor((i + 1/2) c / N)` for `i < N` are kept (all
/// of them when `N >= c`): `N` partners spread evenly from the smallest to the largest job, as
/// a profiler would pick reference jobs of every size. The rule reads only which pairs exist
/// and the solo throughputs, never a held-out measurement. O(P log P) for P measured pairs.
pub fn held_out_pairs(
    inputs: &CostInputs,
    split: &SplitConfig,
    seed: u64,
) -> Result<Vec<(usize, usize, usize)>, CostError> {
    let holdout = split.holdout;
    check_holdout(holdout)?;
    let all = inputs.measured_single_gpu_pairs();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut test = Vec::new();
    match split.split {
        Split::PerType => {
            for g in 0..inputs.gpu_types().len() {
                let mut pairs: Vec<_> = all.iter().copied().filter(|p| p.0 == g).collect();
                if pairs.is_empty() {
                    continue;
                }
                pairs.shuffle(&mut rng);
                let n_test = holdout_count(holdout, pairs.len(), false);
                test.extend_from_slice(&pairs[..n_test]);
            }
        }
        Split::PairAllTypes => {
            let mut pairs: Vec<(usize, usize)> = all.iter().map(|&(_, a, b)| (a, b)).collect();
            pairs.sort_unstable();
            pairs.dedup();
            pairs.shuffle(&mut rng);
            let n_test = holdout_count(holdout, pairs.len(), false);
            let chosen: std::collections::HashSet<(usize, usize)> =
                pairs[..n_test].iter().copied().collect();
            test.extend(
                all.iter()
                    .copied()
                    .filter(|&(_, a, b)| chosen.contains(&(a, b))),
            );
        }
        Split::Job | Split::Family => {
            let jobs = paired_jobs(&all);
            let held = held_out_jobs(inputs, split, seed)?;
            let mut keep = std::collections::HashSet::new();
            for g in 0..inputs.gpu_types().len() {
                for h in jobs.iter().copied().filter(|&h| held[h]) {
                    let mut partners: Vec<(f64, usize)> = inputs
                        .single_gpu_jobs_on(g)
                        .filter(|&c| {
                            !held[c] && all.binary_search(&(g, h.min(c), h.max(c))).is_ok()
                        })
                        .filter_map(|c| inputs.solo(g, c).map(|v| (v, c)))
                        .collect();
                    partners.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
                    for pos in reference_positions(partners.len(), split.reference_partners) {
                        let p = partners[pos].1;
                        keep.insert((g, h.min(p), h.max(p)));
                    }
                }
            }
            test.extend(
                all.iter()
                    .copied()
                    .filter(|&(g, a, b)| (held[a] || held[b]) && !keep.contains(&(g, a, b))),
            );
        }
    }
    Ok(test)
}

/// The single-GPU job types that appear in a measured pair, in index order.
fn paired_jobs(all: &[(usize, usize, usize)]) -> Vec<usize> {
    let mut jobs: Vec<usize> = all.iter().flat_map(|&(_, a, b)| [a, b]).collect();
    jobs.sort_unstable();
    jobs.dedup();
    jobs
}

/// For [`Split::Job`] and [`Split::Family`]: which job types are held out (indexed by job
/// type), drawn with ChaCha8 seeded by `seed` as [`held_out_pairs`] draws them; all false for
/// the other split kinds.
pub fn held_out_jobs(
    inputs: &CostInputs,
    split: &SplitConfig,
    seed: u64,
) -> Result<Vec<bool>, CostError> {
    check_holdout(split.holdout)?;
    let mut held = vec![false; inputs.job_types().len()];
    let jobs = paired_jobs(&inputs.measured_single_gpu_pairs());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    match split.split {
        Split::PerType | Split::PairAllTypes => return Ok(held),
        Split::Job => {
            let mut order = jobs.clone();
            order.shuffle(&mut rng);
            let n_test = holdout_count(split.holdout, order.len(), true);
            for &j in &order[..n_test] {
                held[j] = true;
            }
        }
        Split::Family => {
            let family = |j: usize| inputs.job_types()[j].family.as_str();
            let mut families: Vec<&str> = jobs.iter().map(|&j| family(j)).collect();
            families.sort_unstable();
            families.dedup();
            families.shuffle(&mut rng);
            let n_test = holdout_count(split.holdout, families.len(), true);
            let chosen = &families[..n_test];
            for &j in &jobs {
                held[j] = chosen.contains(&family(j));
            }
        }
    }
    if jobs.iter().all(|&j| held[j]) || !jobs.iter().any(|&j| held[j]) {
        return Err(CostError::Parameter {
            name: "holdout",
            rule: "must leave at least one job type (family) in and take one out",
            got: split.holdout.to_string(),
        });
    }
    Ok(held)
}

/// Holds out a random `holdout` fraction of the measured unordered pairs of single-GPU job types
/// per GPU type ([`Split::PerType`], seeded by `config.seed`), trains the predictor on the rest
/// and scores it: [`evaluate_split`] with the default split kind.
pub fn evaluate_holdout(
    inputs: &CostInputs,
    holdout: f64,
    config: &PredictorConfig,
) -> Result<HoldoutReport, CostError> {
    evaluate_split(
        inputs,
        &SplitConfig {
            holdout,
            ..SplitConfig::default()
        },
        config,
    )
}

/// Draws the held-out pairs of `split` with `config.seed` ([`held_out_pairs`]) and scores the
/// predictor on them ([`evaluate_pairs`]).
pub fn evaluate_split(
    inputs: &CostInputs,
    split: &SplitConfig,
    config: &PredictorConfig,
) -> Result<HoldoutReport, CostError> {
    let test = held_out_pairs(inputs, split, config.seed)?;
    let mut report = evaluate_pairs(inputs, &test, config)?;
    report.split = split.split.name().to_string();
    report.reference_partners = match split.split {
        Split::Job | Split::Family => split.reference_partners,
        Split::PerType | Split::PairAllTypes => 0,
    };
    Ok(report)
}

/// Scores the predictor on held-out pairs the caller chose: removes the unordered pairs
/// `test` (`(gpu, a, b)`, both directions, on that GPU type only) from the table, trains on the
/// rest and compares the predicted co-located throughput of each job of each held-out pair
/// with its measurement, with the two baselines on the same split. A held-out pair that is
/// not measured as possible in `inputs` is not scored. O(training + |test|).
pub fn evaluate_pairs(
    inputs: &CostInputs,
    test: &[(usize, usize, usize)],
    config: &PredictorConfig,
) -> Result<HoldoutReport, CostError> {
    let all = inputs.measured_single_gpu_pairs();
    let masked = inputs.without_pairs(test);
    let predictor = LearnedPredictor::train(&masked, config)?;

    let train = training_samples(&masked);
    let global = train.iter().map(|s| s.ratio).sum::<f64>() / train.len() as f64;
    let (sums, counts) = ratio_sums(&masked, &train);

    let mut err = [0.0_f64; 3];
    let mut n = 0usize;
    let mut predictions = Vec::new();
    for &(g, a, b) in test {
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
            let guesses = [predicted, solo * global, solo * per_job];
            for (e, guess) in err.iter_mut().zip(guesses) {
                *e += (guess - actual).abs() / actual;
            }
            n += 1;
            predictions.push(ScoredPrediction {
                gpu: inputs.gpu_types()[g].clone(),
                job: inputs.job_types()[x].to_string(),
                partner: inputs.job_types()[y].to_string(),
                solo,
                measured: actual,
                predicted,
                global_mean_ratio: guesses[1],
                per_job_mean_ratio: guesses[2],
            });
        }
    }
    let n_f = n.max(1) as f64;
    let pairs_test = masked.measured_single_gpu_pairs();
    Ok(HoldoutReport {
        mape: err[0] / n_f,
        pairs_train: pairs_test.len(),
        pairs_test: all.len() - pairs_test.len(),
        predictions_test: n,
        method: predictor.method().to_string(),
        seed: config.seed,
        split: "custom".to_string(),
        reference_partners: 0,
        baselines: Baselines {
            global_mean_ratio: err[1] / n_f,
            per_job_mean_ratio: err[2] / n_f,
        },
        predictions,
    })
}

fn check_holdout(holdout: f64) -> Result<(), CostError> {
    if !(holdout > 0.0 && holdout < 1.0) {
        return Err(CostError::Parameter {
            name: "holdout",
            rule: "must be in (0, 1)",
            got: holdout.to_string(),
        });
    }
    Ok(())
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

/// The additive interference model per GPU type, fitted to the training ratios:
/// `r(a | b, g) ~ mu_g + s[g, a] + p[g, b]`, with `s` the *sensitivity* of `a` (how much it
/// loses beside a typical partner, relative to the mean) and `p` the *pressure* of `b` (how much
/// a typical job loses beside it). It is the rank-0 (biases-only) form of the matrix
/// factorisation used for collaborative filtering (Koren, Bell and Volinsky, "Matrix
/// factorization techniques for recommender systems", IEEE Computer 2009): unlike plain means,
/// `s` is corrected for which partners were measured, which matters when a job has only a few
/// (reference partners). Fitted by alternating ridge updates (block coordinate descent on the
/// squared error plus `RIDGE * (s^2 + p^2)`, which shrinks the terms of a job with few
/// measurements towards 0): O(ADDITIVE_SWEEPS * n) for n training samples.
#[derive(Debug, Clone)]
struct Additive {
    /// Mean training ratio per GPU type (the global mean where a type has none).
    mu: Vec<f64>,
    /// Sensitivity per (gpu, job); NaN where the job has no measured partner on that type.
    sens: Array2<f64>,
    /// Pressure per (gpu, job); NaN where the job was measured beside no job on that type.
    press: Array2<f64>,
}

/// Ridge weight of the additive terms, in samples: a job with n partners gets `n / (n + RIDGE)`
/// of its mean residual.
const RIDGE: f64 = 1.0;
/// Alternating sweeps; the updates converge to a few 1e-4 within ten on the Gavel data.
const ADDITIVE_SWEEPS: usize = 25;

impl Additive {
    fn fit(inputs: &CostInputs, samples: &[Sample], global: f64) -> Additive {
        let shape = (inputs.gpu_types().len(), inputs.job_types().len());
        let k = shape.0;
        let mut mu = vec![global; k];
        for (g, m) in mu.iter_mut().enumerate() {
            let (sum, n) = samples
                .iter()
                .filter(|s| s.gpu == g)
                .fold((0.0, 0usize), |(t, n), s| (t + s.ratio, n + 1));
            if n > 0 {
                *m = sum / n as f64;
            }
        }
        let mut sens = Array2::<f64>::zeros(shape);
        let mut press = Array2::<f64>::zeros(shape);
        let mut n_sens = Array2::<f64>::zeros(shape);
        let mut n_press = Array2::<f64>::zeros(shape);
        for s in samples {
            n_sens[[s.gpu, s.job]] += 1.0;
            n_press[[s.gpu, s.other]] += 1.0;
        }
        for _ in 0..ADDITIVE_SWEEPS {
            let mut acc = Array2::<f64>::zeros(shape);
            for s in samples {
                acc[[s.gpu, s.job]] += s.ratio - mu[s.gpu] - press[[s.gpu, s.other]];
            }
            sens = &acc / &(&n_sens + RIDGE);
            let mut acc = Array2::<f64>::zeros(shape);
            for s in samples {
                acc[[s.gpu, s.other]] += s.ratio - mu[s.gpu] - sens[[s.gpu, s.job]];
            }
            press = &acc / &(&n_press + RIDGE);
        }
        // A job with no sample on a type has no term there: absent, not 0, so that a tree can
        // tell "typical" from "unknown".
        sens.zip_mut_with(&n_sens, |v, &n| {
            if n == 0.0 {
                *v = f64::NAN
            }
        });
        press.zip_mut_with(&n_press, |v, &n| {
            if n == 0.0 {
                *v = f64::NAN
            }
        });
        Additive { mu, sens, press }
    }
}

/// A contention prior for pairs with a job type never measured beside anything, from solo
/// profiles only. Each job's *elasticity* `e_j` is how its solo throughput follows the
/// hardware: the least-squares slope of its log solo throughputs on the GPU types' log speeds
/// (the median over jobs profiled on every type of the job's log throughput there minus its
/// mean). A job whose throughput grows with the GPU (`e` near 1 or above) keeps the GPU busy;
/// one that does not (`e` near 0: the GPU is not its bottleneck) leaves it idle. Per GPU type,
/// the ratio is a ridge regression on `[1, e_a, e_b, e_a e_b, ln solo(a), ln solo(b)]`,
/// fitted to the training ratios: once on all of them, and once without each family and each
/// pair of families, so that a training row showing a job (or partner) as never measured gets
/// the prior as it would be had its family never been measured (the row's own family cannot
/// vouch for it).
#[derive(Debug, Clone)]
struct Prior {
    /// Family index (into `Features::families`) of each job type.
    family: Vec<usize>,
    /// Elasticity `e_j` per job type (1 where fewer than two solo entries).
    elasticity: Vec<f64>,
    /// Weights per GPU type, by excluded families `(f, h)` (`f < h`; `NONE` for none).
    fits: HashMap<(usize, usize), Vec<[f64; PRIOR_TERMS]>>,
}

/// Terms of the prior's regression.
const PRIOR_TERMS: usize = 6;
/// Ridge weight of the prior's non-constant terms (in samples).
const PRIOR_RIDGE: f64 = 1.0;
/// No family excluded.
const NONE: usize = usize::MAX;

impl Prior {
    /// Fits the prior to `samples`. O((F^2 / 2) * n * PRIOR_TERMS^2) for F families and n
    /// samples: a few milliseconds on the Gavel data.
    fn fit(inputs: &CostInputs, samples: &[Sample], families: &[String]) -> Prior {
        let jt = inputs.job_types();
        let k = inputs.gpu_types().len();
        let family: Vec<usize> = jt
            .iter()
            .map(|j| families.iter().position(|f| *f == j.family).unwrap_or(0))
            .collect();
        let profiled: Vec<Vec<f64>> = (0..jt.len())
            .filter_map(|j| (0..k).map(|x| inputs.solo(x, j).map(f64::ln)).collect())
            .collect();
        let speed: Vec<f64> = (0..k)
            .map(|x| {
                let mut v: Vec<f64> = profiled
                    .iter()
                    .map(|l| l[x] - l.iter().sum::<f64>() / k as f64)
                    .collect();
                v.sort_by(f64::total_cmp);
                v.get(v.len() / 2).copied().unwrap_or(0.0)
            })
            .collect();
        let elasticity = (0..jt.len())
            .map(|j| {
                let pts: Vec<(f64, f64)> = (0..k)
                    .filter_map(|x| inputs.solo(x, j).map(|v| (speed[x], v.ln())))
                    .collect();
                let n = pts.len() as f64;
                let hm = pts.iter().map(|p| p.0).sum::<f64>() / n;
                let sm = pts.iter().map(|p| p.1).sum::<f64>() / n;
                let var: f64 = pts.iter().map(|p| (p.0 - hm).powi(2)).sum();
                if pts.len() < 2 || var < 1e-9 {
                    1.0
                } else {
                    pts.iter().map(|p| (p.0 - hm) * (p.1 - sm)).sum::<f64>() / var
                }
            })
            .collect();
        let mut prior = Prior {
            family,
            elasticity,
            fits: HashMap::new(),
        };
        let nf = families.len();
        let keys = std::iter::once((NONE, NONE)).chain(
            (0..nf)
                .flat_map(|f| std::iter::once((f, NONE)).chain((f + 1..nf).map(move |h| (f, h)))),
        );
        for key in keys {
            let fits = (0..k)
                .map(|g| {
                    let mut ata = [[0.0; PRIOR_TERMS]; PRIOR_TERMS];
                    let mut atb = [0.0; PRIOR_TERMS];
                    let (mut sum, mut n) = (0.0, 0usize);
                    for s in samples.iter().filter(|s| s.gpu == g) {
                        let fams = [prior.family[s.job], prior.family[s.other]];
                        if fams.iter().any(|&f| f == key.0 || f == key.1) {
                            continue;
                        }
                        let Some(x) = prior.terms(inputs, g, s.job, s.other) else {
                            continue;
                        };
                        for i in 0..PRIOR_TERMS {
                            atb[i] += x[i] * s.ratio;
                            for j in 0..PRIOR_TERMS {
                                ata[i][j] += x[i] * x[j];
                            }
                        }
                        sum += s.ratio;
                        n += 1;
                    }
                    let mut w = [0.0; PRIOR_TERMS];
                    if n > PRIOR_TERMS {
                        for (i, row) in ata.iter_mut().enumerate().skip(1) {
                            row[i] += PRIOR_RIDGE;
                        }
                        w = solve(ata, atb);
                    } else {
                        // Too few samples to fit: the mean ratio (NaN without any, and the
                        // caller falls back to the additive model's mean).
                        w[0] = sum / n as f64;
                    }
                    w
                })
                .collect();
            prior.fits.insert(key, fits);
        }
        prior
    }

    /// The regression terms of `a` beside `b` on `g` (None without both solo entries).
    fn terms(
        &self,
        inputs: &CostInputs,
        g: usize,
        a: usize,
        b: usize,
    ) -> Option<[f64; PRIOR_TERMS]> {
        let (sa, sb) = (inputs.solo(g, a)?, inputs.solo(g, b)?);
        let (ea, eb) = (self.elasticity[a], self.elasticity[b]);
        Some([1.0, ea, eb, ea * eb, sa.ln(), sb.ln()])
    }

    /// The prior ratio of `a` beside `b` on `g`, clamped to [0.05, 1.2], from the fit without
    /// the family of `a` (`hide_a`) and of `b` (`hide_b`); NaN when it has nothing.
    fn ratio(&self, inputs: &CostInputs, g: usize, a: usize, b: usize, hide: (bool, bool)) -> f64 {
        let Some(x) = self.terms(inputs, g, a, b) else {
            return f64::NAN;
        };
        let fa = if hide.0 { self.family[a] } else { NONE };
        let fb = if hide.1 { self.family[b] } else { NONE };
        let key = match (fa.min(fb), fa.max(fb)) {
            (f, h) if f == h => (f, NONE),
            key => key,
        };
        let v: f64 = self.fits[&key][g].iter().zip(x).map(|(w, x)| w * x).sum();
        v.clamp(0.05, 1.2)
    }
}

/// Solves the small linear system `a x = b` (Gaussian elimination with partial pivoting; a
/// pivot below 1e-12 leaves its unknown at 0).
fn solve(
    mut a: [[f64; PRIOR_TERMS]; PRIOR_TERMS],
    mut b: [f64; PRIOR_TERMS],
) -> [f64; PRIOR_TERMS] {
    let n = PRIOR_TERMS;
    let mut skip = [false; PRIOR_TERMS];
    for i in 0..n {
        let piv = (i..n)
            .max_by(|&r, &q| a[r][i].abs().total_cmp(&a[q][i].abs()))
            .unwrap_or(i);
        a.swap(i, piv);
        b.swap(i, piv);
        if a[i][i].abs() < 1e-12 {
            skip[i] = true;
            continue;
        }
        let pivot_row = a[i];
        for r in i + 1..n {
            let f = a[r][i] / pivot_row[i];
            for (v, p) in a[r].iter_mut().zip(pivot_row.iter()).skip(i) {
                *v -= f * p;
            }
            b[r] -= f * b[i];
        }
    }
    let mut x = [0.0; PRIOR_TERMS];
    for i in (0..n).rev() {
        if skip[i] {
            continue;
        }
        let t: f64 = (i + 1..n).map(|c| a[i][c] * x[c]).sum();
        x[i] = (b[i] - t) / a[i][i];
    }
    x
}

/// Which parts of a training sample's features are hidden, to show the learner what a pair, a
/// job or a partner that was never measured looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cold {
    /// The same pair on the other GPU types.
    pair: bool,
    /// Everything measured of the job beside anything (sensitivity, pressure, mean ratios).
    job: bool,
    /// Everything measured of the partner beside anything.
    other: bool,
    /// The job known only from [`FEW_PARTNERS`] partners per GPU type (chosen by the reference
    /// rule of [`held_out_pairs`], never the sample's own partner): a new job type profiled
    /// against a few reference jobs.
    few_job: bool,
    /// The partner known only from a few partners, likewise.
    few_other: bool,
}

/// Partners of the "known from a few partners" training variants: the number of reference
/// partners whose accuracy docs/costs.md sets a target for (a job with 3 reference partners).
const FEW_PARTNERS: usize = 3;

/// Positions of `n` reference partners among `c` candidates sorted by solo throughput:
/// `floor((2i + 1) c / (2n))` for `i < n`, or all of them when `n >= c`.
fn reference_positions(c: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..n.min(c)).map(move |i| if n >= c { i } else { (2 * i + 1) * c / (2 * n) })
}

impl Cold {
    /// Nothing hidden: how targets (and all rows of [`FeatureSet::Pairwise`]) are computed.
    pub(crate) const NONE: Cold = Cold {
        pair: false,
        job: false,
        other: false,
        few_job: false,
        few_other: false,
    };
    /// The variants each training sample is shown in under [`FeatureSet::ColdStart`]: as
    /// measured; pair never measured (the `pair-all-types` case); job, partner, or both never
    /// measured beside anything (the `job` and `family` cases; a job type unseen beside
    /// anything has no measured pair on any GPU type either).
    /// Last, the job or the partner known from [`FEW_PARTNERS`] partners only (the
    /// `--reference-partners 3` case).
    const VARIANTS: [Cold; 7] = [
        Cold::NONE,
        Cold::hide(true, false, false),
        Cold::hide(true, true, false),
        Cold::hide(true, false, true),
        Cold::hide(true, true, true),
        Cold {
            few_job: true,
            ..Cold::hide(true, false, false)
        },
        Cold {
            few_other: true,
            ..Cold::hide(true, false, false)
        },
    ];

    /// The variants of [`VARIANTS`](Self::VARIANTS) that hide the job, the partner or both:
    /// the training rows of the model of never-paired jobs ([`Features::for_never_paired`]).
    const NEVER_PAIRED: [Cold; 3] = [
        Cold::hide(true, true, false),
        Cold::hide(true, false, true),
        Cold::hide(true, true, true),
    ];

    const fn hide(pair: bool, job: bool, other: bool) -> Cold {
        Cold {
            pair,
            job,
            other,
            few_job: false,
            few_other: false,
        }
    }
}

/// Builds feature rows from one (training) table. Everything it reads comes from `inputs`, the
/// table the predictor trains on: a pair removed from it cannot reach a feature.
pub(crate) struct Features<'a> {
    inputs: &'a CostInputs,
    set: FeatureSet,
    families: Vec<String>,
    sens: (Array2<f64>, Array2<f64>),
    press: (Array2<f64>, Array2<f64>),
    global: f64,
    additive: Additive,
    /// The contention prior: `Some` in the model of pairs with a never-measured job type
    /// ([`for_never_paired`](Self::for_never_paired)), which learns the ratio relative to
    /// it.
    prior: Option<Prior>,
}

impl<'a> Features<'a> {
    pub(crate) fn new(inputs: &'a CostInputs, set: FeatureSet) -> Features<'a> {
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
        let additive = Additive::fit(inputs, &samples, global);
        Features {
            inputs,
            set,
            families,
            sens,
            press,
            global,
            additive,
            prior: None,
        }
    }

    /// The features of the model for pairs with a job type never measured beside anything
    /// ([`FeatureSet::ColdStart`] plus the [`Prior`] and what it is built from): it learns
    /// `prior / ratio`, the contention prior relative to the measured ratio, so that where the
    /// trees have nothing alike (a family unlike every measured one) the prediction falls back
    /// to the prior's extrapolation rather than to the trees' nearest leaf. The prediction is
    /// `prior / t` for the trees' mean `t`: the prior times the harmonic mean of the
    /// neighbours' `ratio / prior`. That lies below their geometric mean (what the `ln`
    /// residual this model learned first gave) by a factor of about `exp(-v / 2)` for a
    /// variance `v` of their log ratios: little where the neighbours agree, more where they
    /// do not, the side a relative error favours then (over-predicting a ratio of 0.2 by 0.4
    /// costs 2, under-predicting one of 0.6 by 0.4 costs 0.67). The trees' mean of positive
    /// targets is positive, so the ratio is finite.
    pub(crate) fn for_never_paired(inputs: &'a CostInputs) -> Features<'a> {
        let mut features = Features::new(inputs, FeatureSet::ColdStart);
        features.prior = Some(Prior::fit(
            inputs,
            &training_samples(inputs),
            &features.families,
        ));
        features
    }

    /// Whether `job` has no measured pair on any GPU type, beside or as the partner.
    pub(crate) fn never_paired(&self, job: usize) -> bool {
        self.sens.1.column(job).iter().all(|&c| c == 0.0)
            && self.press.1.column(job).iter().all(|&c| c == 0.0)
    }

    /// The prior ratio of the sample `(g, a, b)` as the row `cold` shows it: from the fit
    /// without the families of the jobs the row hides or that were never paired. The
    /// additive model's mean where the prior has nothing; 1 without a prior.
    fn prior_ratio(&self, g: usize, a: usize, b: usize, cold: Cold) -> f64 {
        let Some(prior) = &self.prior else {
            return 1.0;
        };
        let hide = (
            cold.job || self.never_paired(a),
            cold.other || self.never_paired(b),
        );
        let v = prior.ratio(self.inputs, g, a, b, hide);
        if v.is_nan() { self.additive.mu[g] } else { v }
    }

    /// The learner's target for a sample of ratio `ratio` in the row `cold`.
    fn target(&self, ratio: f64, g: usize, a: usize, b: usize, cold: Cold) -> f64 {
        match self.prior {
            None => ratio,
            Some(_) => self.prior_ratio(g, a, b, cold) / ratio,
        }
    }

    /// The ratio a predicted target `t` of the pair `(g, a, b)` stands for.
    fn ratio_from_target(&self, t: f64, g: usize, a: usize, b: usize) -> f64 {
        match self.prior {
            None => t,
            Some(_) => self.prior_ratio(g, a, b, Cold::NONE) / t,
        }
    }

    /// Training rows and targets: one row per sample ([`FeatureSet::Pairwise`]), or one per
    /// sample and [`Cold::VARIANTS`] entry ([`FeatureSet::ColdStart`]; a variant that hides
    /// nothing new, e.g. the pair on other types when none is measured, is still included so
    /// that every sample has the same weight).
    fn training_set(&self, samples: &[Sample]) -> Result<(Array2<f64>, Array1<f64>), CostError> {
        let variants: &[Cold] = match self.set {
            FeatureSet::Pairwise => &[Cold::NONE],
            // The model of never-paired jobs trains on the rows that hide the job, the
            // partner or both: the only ones like what it predicts.
            FeatureSet::ColdStart if self.prior.is_some() => &Cold::NEVER_PAIRED,
            FeatureSet::ColdStart => &Cold::VARIANTS,
        };
        let rows = samples.iter().flat_map(|s| {
            variants
                .iter()
                .map(move |&c| (s.gpu, s.job, s.other, Some(s.ratio), c))
        });
        let x = self.matrix(rows)?;
        let y = Array1::from_iter(samples.iter().flat_map(|s| {
            variants
                .iter()
                .map(move |&c| self.target(s.ratio, s.gpu, s.job, s.other, c))
        }));
        Ok((x, y))
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

    pub(crate) fn row(
        &self,
        g: usize,
        a: usize,
        b: usize,
        own: Option<f64>,
        cold: Cold,
        out: &mut Vec<f64>,
    ) {
        let inputs = self.inputs;
        let k = inputs.gpu_types().len();
        let cold_start = self.set == FeatureSet::ColdStart;
        out.extend((0..k).map(|x| if x == g { 1.0 } else { 0.0 }));
        for job in [a, b] {
            let jt = &inputs.job_types()[job];
            let hidden = (job == a && cold.job) || (job == b && cold.other);
            out.extend(
                self.families
                    .iter()
                    .map(|f| if *f == jt.family { 1.0 } else { 0.0 }),
            );
            out.push(jt.batch_size.map_or(ABSENT, |bs| f64::from(bs).log2()));
            out.extend((0..k).map(|x| inputs.solo(x, job).map_or(ABSENT, f64::ln)));
            if cold_start {
                // Speed on each type relative to this one: compute-bound jobs gain most from
                // newer architectures, memory-bound ones less (the solo profile's view of
                // intensity). Known for every job that was profiled alone.
                let here = inputs.solo(g, job).map(f64::ln);
                out.extend((0..k).map(|x| match (inputs.solo(x, job), here) {
                    (Some(v), Some(h)) if x != g => v.ln() - h,
                    _ => ABSENT,
                }));
                let few = (job == a && cold.few_job) || (job == b && cold.few_other);
                let partner = if job == a { b } else { a };
                for pressure in [false, true] {
                    out.extend((0..k).map(|x| {
                        let v = if few {
                            self.few_term(x, job, partner, pressure).0
                        } else if pressure {
                            self.additive.press[[x, job]]
                        } else {
                            self.additive.sens[[x, job]]
                        };
                        if hidden || v.is_nan() { ABSENT } else { v }
                    }));
                }
            }
        }
        if let Some(prior) = &self.prior {
            // The prior, its elasticities, and how alike the two jobs' solo profiles are
            // (same family; distance between their speeds relative to this type; log solo
            // throughput of the job over the partner's here).
            out.push(self.prior_ratio(g, a, b, cold));
            out.push(prior.elasticity[a]);
            out.push(prior.elasticity[b]);
            let jt = inputs.job_types();
            out.push(if jt[a].family == jt[b].family {
                1.0
            } else {
                0.0
            });
            let rel =
                |job: usize, x: usize| Some(inputs.solo(x, job)?.ln() - inputs.solo(g, job)?.ln());
            let d2: Option<f64> = (0..k)
                .map(|x| Some((rel(a, x)? - rel(b, x)?).powi(2)))
                .sum();
            out.push(d2.map_or(ABSENT, f64::sqrt));
            out.push(match (inputs.solo(g, a), inputs.solo(g, b)) {
                (Some(p), Some(q)) => p.ln() - q.ln(),
                _ => ABSENT,
            });
        }
        if cold_start {
            let (few_sens_a, few_mean_a) = self.few_term(g, a, b, false);
            let (few_press_b, few_mean_b) = self.few_term(g, b, a, true);
            let absent = |v: f64| if v.is_nan() { ABSENT } else { v };
            let sens_a = if cold.job {
                ABSENT
            } else if cold.few_job {
                absent(few_mean_a)
            } else {
                self.leave_one_out(&self.sens, g, a, own)
            };
            let press_b = if cold.other {
                ABSENT
            } else if cold.few_other {
                absent(few_mean_b)
            } else {
                self.leave_one_out(&self.press, g, b, own)
            };
            out.push(sens_a);
            out.push(press_b);
            // The additive prediction, an unknown term counting as typical (0).
            let term = |hidden: bool, v: f64| if hidden || v.is_nan() { 0.0 } else { v };
            let s_a = if cold.few_job {
                few_sens_a
            } else {
                self.additive.sens[[g, a]]
            };
            let p_b = if cold.few_other {
                few_press_b
            } else {
                self.additive.press[[g, b]]
            };
            out.push(self.additive.mu[g] + term(cold.job, s_a) + term(cold.other, p_b));
        } else {
            out.push(self.mean(&self.sens, g, a, own));
            out.push(self.mean(&self.press, g, b, own));
        }
        for x in 0..k {
            let hidden = cold.pair || cold.job || cold.other;
            let v = match (
                x != g && !hidden,
                inputs.colocation(x, a, b),
                inputs.solo(x, a),
            ) {
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

    /// The additive sensitivity (or, with `pressure`, pressure) of `job` on GPU type `x` as if
    /// it had been measured beside [`FEW_PARTNERS`] partners only, and the plain mean ratio
    /// over them (NaN when there is none): the partners are those of `job` measured on `x`
    /// other than `exclude` (the sample's own partner, so the target never enters) and `job`
    /// itself, chosen by the reference rule ([`held_out_pairs`]); the term is one ridge update
    /// with the partners' terms fixed, what the alternating fit gives a job with so few
    /// samples. O(J log J) for J job types.
    fn few_term(&self, x: usize, job: usize, exclude: usize, pressure: bool) -> (f64, f64) {
        let inputs = self.inputs;
        let mut partners: Vec<(f64, usize, f64)> = inputs
            .single_gpu_jobs_on(x)
            .filter(|&c| c != exclude && c != job)
            .filter_map(|c| {
                // The ratio the term is about: job's own (sensitivity) or the partner's
                // (pressure).
                let (who, whom) = if pressure { (c, job) } else { (job, c) };
                match (inputs.colocation(x, who, whom), inputs.solo(x, who)) {
                    (Colocation::Measured { own, .. }, Some(solo)) => {
                        inputs.solo(x, c).map(|v| (v, c, own / solo))
                    }
                    _ => None,
                }
            })
            .collect();
        partners.sort_by(|p, q| p.0.total_cmp(&q.0).then(p.1.cmp(&q.1)));
        let (mut residual, mut sum, mut n) = (0.0, 0.0, 0usize);
        for pos in reference_positions(partners.len(), FEW_PARTNERS) {
            let (_, c, r) = partners[pos];
            let other = if pressure {
                self.additive.sens[[x, c]]
            } else {
                self.additive.press[[x, c]]
            };
            residual += r - self.additive.mu[x] - if other.is_nan() { 0.0 } else { other };
            sum += r;
            n += 1;
        }
        if n == 0 {
            return (f64::NAN, f64::NAN);
        }
        (residual / (n as f64 + RIDGE), sum / n as f64)
    }

    /// Leave-one-out mean like [`mean`](Self::mean), but absent (not the global mean) where
    /// nothing is left: a job never measured on this type is unknown, not typical.
    fn leave_one_out(
        &self,
        table: &(Array2<f64>, Array2<f64>),
        g: usize,
        j: usize,
        own: Option<f64>,
    ) -> f64 {
        let c = table.1[[g, j]] - if own.is_some() { 1.0 } else { 0.0 };
        if c > 0.0 {
            self.mean(table, g, j, own)
        } else {
            ABSENT
        }
    }

    pub(crate) fn matrix(
        &self,
        rows: impl Iterator<Item = (usize, usize, usize, Option<f64>, Cold)>,
    ) -> Result<Array2<f64>, CostError> {
        let mut data = Vec::new();
        let mut n = 0;
        for (g, a, b, own, cold) in rows {
            self.row(g, a, b, own, cold, &mut data);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GavelThroughputs;

    fn gavel() -> CostInputs {
        GavelThroughputs::bundled().into_inputs()
    }

    fn splits() -> Vec<SplitConfig> {
        [
            (Split::PerType, 0),
            (Split::PairAllTypes, 0),
            (Split::Job, 0),
            (Split::Job, 3),
            (Split::Family, 0),
            (Split::Family, 2),
        ]
        .into_iter()
        .map(|(split, reference_partners)| SplitConfig {
            split,
            holdout: 0.2,
            reference_partners,
        })
        .collect()
    }

    /// The same table with every held-out pair's measurement (both directions) scaled: what
    /// the held-out values are must not matter to anything the predictor sees.
    fn perturbed(inputs: &CostInputs, test: &[(usize, usize, usize)]) -> CostInputs {
        let mut out = inputs.clone();
        for &(g, a, b) in test {
            out.pair[[g, a, b]] *= 1.7;
            out.pair[[g, b, a]] *= 0.6;
        }
        out
    }

    /// The leakage rule: the feature rows of held-out pairs, and of every training row in every
    /// cold variant, are identical whether the held-out measurements are the real ones or
    /// others, and so are the trained predictor's predictions.
    #[test]
    fn held_out_values_reach_no_feature_and_no_prediction() {
        let inputs = gavel();
        let config = PredictorConfig {
            trees: 8,
            ..PredictorConfig::default()
        };
        for split in splits() {
            let test = held_out_pairs(&inputs, &split, 5).unwrap();
            assert!(!test.is_empty());
            let other = perturbed(&inputs, &test);
            let (m1, m2) = (inputs.without_pairs(&test), other.without_pairs(&test));
            let (f1, f2) = (
                Features::new(&m1, FeatureSet::ColdStart),
                Features::new(&m2, FeatureSet::ColdStart),
            );
            let rows = || {
                test.iter().flat_map(|&(g, a, b)| {
                    [(g, a, b, None, Cold::NONE), (g, b, a, None, Cold::NONE)]
                })
            };
            let (x1, x2) = (f1.matrix(rows()).unwrap(), f2.matrix(rows()).unwrap());
            assert_eq!(x1, x2, "{split:?}");
            let samples = training_samples(&m1);
            assert_eq!(
                f1.training_set(&samples).unwrap(),
                f2.training_set(&training_samples(&m2)).unwrap()
            );
            // The same for the model of pairs with a never-measured job type: its prior, its
            // features and its residual targets read only the masked table.
            let (c1, c2) = (
                Features::for_never_paired(&m1),
                Features::for_never_paired(&m2),
            );
            assert_eq!(
                c1.matrix(rows()).unwrap(),
                c2.matrix(rows()).unwrap(),
                "{split:?}"
            );
            assert_eq!(
                c1.training_set(&samples).unwrap(),
                c2.training_set(&training_samples(&m2)).unwrap()
            );
            let (p1, p2) = (
                LearnedPredictor::train(&m1, &config).unwrap(),
                LearnedPredictor::train(&m2, &config).unwrap(),
            );
            for &(g, a, b) in &test {
                assert_eq!(p1.pair_throughput(g, a, b), p2.pair_throughput(g, a, b));
                assert_eq!(p1.pair_throughput(g, b, a), p2.pair_throughput(g, b, a));
            }
        }
    }

    /// What each split removes: pair-all-types removes a pair on every GPU type; job and
    /// family remove every pair of a held-out job type on every type but the reference
    /// partners (not held out themselves, spread by solo throughput), and keep its solo
    /// throughputs.
    #[test]
    fn splits_hold_out_what_they_say() {
        let inputs = gavel();
        let all = inputs.measured_single_gpu_pairs();
        for split in splits() {
            for seed in 0..3 {
                let test = held_out_pairs(&inputs, &split, seed).unwrap();
                let masked = inputs.without_pairs(&test);
                assert_eq!(masked.solo_table().len(), inputs.solo_table().len());
                match split.split {
                    Split::PerType => {
                        for g in 0..3 {
                            let n = all.iter().filter(|p| p.0 == g).count();
                            let t = test.iter().filter(|p| p.0 == g).count();
                            assert_eq!(t, (0.2 * n as f64).round() as usize);
                        }
                    }
                    Split::PairAllTypes => {
                        // No measurement of the pair is left on any type. A `[0, 0]` entry (the
                        // pair cannot run there) stays: it is not a throughput, no feature
                        // reads it, and it is not scored.
                        for &(_, a, b) in &test {
                            for g in 0..3 {
                                for (x, y) in [(a, b), (b, a)] {
                                    assert!(!matches!(
                                        masked.colocation(g, x, y),
                                        Colocation::Measured { .. }
                                    ));
                                }
                            }
                        }
                    }
                    Split::Job | Split::Family => {
                        let held = held_out_jobs(&inputs, &split, seed).unwrap();
                        assert!(held.iter().any(|&h| h));
                        for g in 0..3 {
                            for h in (0..held.len()).filter(|&h| held[h]) {
                                assert_eq!(masked.solo(g, h), inputs.solo(g, h));
                                let kept: Vec<usize> = (0..held.len())
                                    .filter(|&c| {
                                        matches!(
                                            masked.colocation(g, h, c),
                                            Colocation::Measured { .. }
                                        )
                                    })
                                    .collect();
                                let candidates = masked
                                    .single_gpu_jobs_on(g)
                                    .filter(|&c| {
                                        !held[c]
                                            && matches!(
                                                inputs.colocation(g, h, c),
                                                Colocation::Measured { .. }
                                            )
                                    })
                                    .count();
                                assert_eq!(kept.len(), split.reference_partners.min(candidates));
                                assert!(kept.iter().all(|&c| !held[c]));
                            }
                        }
                    }
                }
            }
        }
    }

    /// The partners `b` of job `a` on GPU type `g` whose pair both models predict, with the
    /// uncalibrated and the calibrated throughput of `a`; a measured pair must be the same in
    /// both (calibration touches predictions only).
    fn predicted_pairs(
        inputs: &CostInputs,
        plain: &LearnedPredictor,
        calibrated: &LearnedPredictor,
        g: usize,
        a: usize,
    ) -> Vec<(usize, f64, f64)> {
        let mut out = Vec::new();
        for b in inputs.single_gpu_jobs_on(g) {
            let (Some(p), Some(c)) = (
                plain.pair_throughput(g, a, b),
                calibrated.pair_throughput(g, a, b),
            ) else {
                continue;
            };
            if plain.is_predicted(g, a, b) {
                out.push((b, p, c));
            } else {
                assert_eq!(p, c);
            }
        }
        out
    }

    /// The calibration of jobs known from a few partners finds exactly the held-out job types
    /// of a `job` split with reference partners (nothing in the full table), and scales each
    /// one's predicted ratios on a GPU type by one factor, leaving every other prediction as
    /// it is.
    #[test]
    fn few_partner_calibration_scales_only_few_partner_jobs() {
        let inputs = gavel();
        assert!(few_partner_jobs(&inputs).is_empty());
        let split = SplitConfig {
            split: Split::Job,
            holdout: 0.2,
            reference_partners: 3,
        };
        let test = held_out_pairs(&inputs, &split, 1).unwrap();
        let held = held_out_jobs(&inputs, &split, 1).unwrap();
        let masked = inputs.without_pairs(&test);
        let few = few_partner_jobs(&masked);
        let expected = (0..3)
            .flat_map(|g| masked.single_gpu_jobs_on(g).map(move |h| (g, h)))
            .filter(|&(_, h)| held[h])
            .count();
        assert_eq!(few.len(), expected);
        for ((g, a), partners) in &few {
            assert!(held[*a] && !partners.is_empty() && partners.len() <= FEW_PARTNERS);
            let solos: Vec<f64> = partners
                .iter()
                .map(|&b| masked.solo(*g, b).unwrap())
                .collect();
            assert!(solos.windows(2).all(|w| w[0] <= w[1]));
        }
        let config = PredictorConfig {
            trees: 8,
            ..PredictorConfig::default()
        };
        let plain = LearnedPredictor::train_with(&masked, &config, false).unwrap();
        let calibrated = LearnedPredictor::train(&masked, &config).unwrap();
        // The calibration of every other job ([`job_biases`]) is divided out.
        let (sens, press) = job_biases(&masked, &config).unwrap();
        let mut scaled = 0;
        for g in 0..3 {
            for a in masked.single_gpu_jobs_on(g) {
                let is_few = few.iter().any(|(key, _)| *key == (g, a));
                let mut factor = None;
                for (b, p, c) in predicted_pairs(&masked, &plain, &calibrated, g, a) {
                    if !is_few {
                        let c = c / (sens[[g, a]] * press[[g, b]]);
                        assert!((c / p - 1.0).abs() < 1e-9);
                        continue;
                    }
                    let f = *factor.get_or_insert(c / p);
                    assert!((c / p - f).abs() < 1e-9 * f);
                    scaled += usize::from(f != 1.0);
                }
            }
        }
        assert!(scaled > 0);
    }

    #[test]
    fn job_calibration_scales_by_row_and_column_and_spares_measured_pairs() {
        let inputs = gavel();
        let split = SplitConfig {
            split: Split::PerType,
            holdout: 0.2,
            reference_partners: 0,
        };
        let masked = inputs.without_pairs(&held_out_pairs(&inputs, &split, 0).unwrap());
        assert!(few_partner_jobs(&masked).is_empty());
        let config = PredictorConfig {
            trees: 8,
            ..PredictorConfig::default()
        };
        let (sens, press) = job_biases(&masked, &config).unwrap();
        let moved = |f: &Array2<f64>| f.iter().filter(|&&v| v != 1.0).count();
        assert!(moved(&sens) > 0 && moved(&press) > 0);
        assert!(
            sens.iter()
                .chain(press.iter())
                .all(|&v| v.is_finite() && v > 0.0)
        );
        // A job with no measured pair on a type keeps factor 1 there.
        for g in 0..3 {
            for a in 0..masked.job_types().len() {
                let paired = masked
                    .measured_single_gpu_pairs()
                    .iter()
                    .any(|&(h, x, y)| h == g && x != y && (x == a || y == a));
                if !paired {
                    assert_eq!((sens[[g, a]], press[[g, a]]), (1.0, 1.0));
                }
            }
        }
        let plain = LearnedPredictor::train_with(&masked, &config, false).unwrap();
        let calibrated = LearnedPredictor::train(&masked, &config).unwrap();
        let mut checked = 0;
        for g in 0..3 {
            for a in masked.single_gpu_jobs_on(g) {
                for (b, p, c) in predicted_pairs(&masked, &plain, &calibrated, g, a) {
                    let f = sens[[g, a]] * press[[g, b]];
                    assert!((c / p - f).abs() < 1e-9 * f);
                    checked += 1;
                }
            }
        }
        assert!(checked > 0);
        // Without jobs of more than `FEW_PARTNERS` partners nothing is calibrated.
        let mut sparse = masked.clone();
        let keep = sparse.measured_single_gpu_pairs();
        sparse = sparse.without_pairs(&keep[FEW_PARTNERS..]);
        assert!(job_biases(&sparse, &config).is_none());
    }

    #[test]
    fn reference_partners_are_spread_by_solo_throughput() {
        // 7 candidates, 3 partners: positions floor((2i + 1) * 7 / 6) = 1, 3, 5.
        let c = 7;
        let n = 3;
        let pos: Vec<usize> = (0..n).map(|i| (2 * i + 1) * c / (2 * n)).collect();
        assert_eq!(pos, vec![1, 3, 5]);
        assert_eq!(holdout_count(0.2, 26, true), 5);
        assert_eq!(holdout_count(0.01, 26, true), 1);
        assert_eq!(holdout_count(0.99, 2, true), 1);
        assert_eq!(
            Split::from_name("pair-all-types"),
            Some(Split::PairAllTypes)
        );
        assert_eq!(
            FeatureSet::from_name("pairwise"),
            Some(FeatureSet::Pairwise)
        );
    }
}
