//! `predict-eval`: held-out evaluation of the co-location predictor on a throughputs file.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use stsfair_costs::{
    CostError, CostInputs, FeatureSet, HoldoutReport, Learner, PredictorConfig, Split, SplitConfig,
    predictor,
};

use crate::Failure;

#[derive(Args)]
pub struct PredictEvalArgs {
    /// Gavel throughputs file (default: the measured data bundled in the binary).
    #[arg(long, value_name = "FILE")]
    throughputs: Option<PathBuf>,
    /// Split kind: per-type (pairs held out per GPU type), pair-all-types (pairs held out on
    /// every GPU type), job (job types never measured beside anything) or family (model
    /// families never measured beside anything).
    #[arg(long, default_value = "per-type")]
    split: String,
    /// Fraction held out, in (0, 1): of the pairs (per-type, pair-all-types), of the job types
    /// (job) or of the model families (family); at least one.
    #[arg(long, default_value_t = 0.2)]
    holdout: f64,
    /// For --split job and family: measured pairs of each held-out job type kept in training
    /// per GPU type, the partners spread evenly by solo throughput (docs/costs.md).
    #[arg(long, default_value_t = 0)]
    reference_partners: usize,
    /// Seed of the split and of the learner.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Learner: extra-trees or random-forest.
    #[arg(long, default_value = "extra-trees")]
    learner: String,
    /// Number of trees.
    #[arg(long, default_value_t = PredictorConfig::default().trees)]
    trees: usize,
    /// Fraction of the features tried at each split, in (0, 1].
    #[arg(long, default_value_t = PredictorConfig::default().features_per_split)]
    features_per_split: f64,
    /// Feature set: cold-start (the default predictor) or pairwise (the first predictor, for
    /// comparison).
    #[arg(long, default_value = "cold-start")]
    features: String,
    /// Print the report as JSON on standard output.
    #[arg(long)]
    json: bool,
    /// Also write every scored prediction to FILE, one JSON object a line: GPU type, job,
    /// partner, solo, measured and predicted throughputs, the two baselines' throughputs, and
    /// whether the job and the partner are held-out job types (job and family splits).
    #[arg(long, value_name = "FILE")]
    predictions: Option<PathBuf>,
}

pub fn predict_eval(args: PredictEvalArgs) -> Result<u8, Failure> {
    let data = crate::gavel_data(args.throughputs.as_deref())?;
    let learner = Learner::from_name(&args.learner).ok_or_else(|| {
        Failure::input(format!(
            "--learner must be extra-trees or random-forest (got {:?})",
            args.learner
        ))
    })?;
    let split = Split::from_name(&args.split).ok_or_else(|| {
        Failure::input(format!(
            "--split must be per-type, pair-all-types, job or family (got {:?})",
            args.split
        ))
    })?;
    let features = FeatureSet::from_name(&args.features).ok_or_else(|| {
        Failure::input(format!(
            "--features must be cold-start or pairwise (got {:?})",
            args.features
        ))
    })?;
    if args.reference_partners > 0 && !matches!(split, Split::Job | Split::Family) {
        return Err(Failure::input(
            "--reference-partners applies only to --split job and --split family",
        ));
    }
    let config = PredictorConfig {
        learner,
        trees: args.trees,
        seed: args.seed,
        features_per_split: args.features_per_split,
        features,
    };
    let split = SplitConfig {
        split,
        holdout: args.holdout,
        reference_partners: args.reference_partners,
    };
    // Created before the training, so that a path that cannot be written fails at once.
    let predictions = match &args.predictions {
        Some(path) => Some((
            path.as_path(),
            std::fs::File::create(path).map_err(|e| Failure::cannot_write(path, e))?,
        )),
        None => None,
    };
    let report = predictor::evaluate_split(data.inputs(), &split, &config)
        .map_err(|e| evaluation_error(e, &args))?;
    if let Some((path, file)) = predictions {
        write_predictions(path, file, data.inputs(), &split, &config, &report)?;
    }
    if args.json {
        let text = serde_json::to_string(&report).map_err(Failure::other)?;
        outln!("{text}");
    } else {
        outln!(
            "{} split{}: mape {:.4} on {} held-out pairs ({} predictions), trained on {} pairs, seed {}",
            report.split,
            if report.reference_partners > 0 {
                format!(" ({} reference partners)", report.reference_partners)
            } else {
                String::new()
            },
            report.mape,
            report.pairs_test,
            report.predictions_test,
            report.pairs_train,
            report.seed
        );
        outln!(
            "baselines: global mean ratio {:.4}, per-job mean ratio {:.4}",
            report.baselines.global_mean_ratio,
            report.baselines.per_job_mean_ratio
        );
        outln!("method: {}", report.method);
    }
    Ok(0)
}

/// An evaluation's error in the terms of the flags: the predictor's parameters are named by
/// their flags, and a training set too small to learn from by the `--holdout` that left it so
/// (it said "the table has 0" of a table the user never gave).
fn evaluation_error(e: CostError, args: &PredictEvalArgs) -> Failure {
    match e {
        CostError::Parameter {
            name: name @ ("holdout" | "trees" | "features_per_split"),
            rule,
            got,
        } => Failure::input(format!("--{} {rule} (got {got})", name.replace('_', "-"))),
        CostError::TooFewSamples { needed, got } => Failure::input(format!(
            "--holdout {} (--split {}) leaves {got} measured co-located throughputs to train on, \
             and the predictor needs at least {needed}: hold out less",
            args.holdout, args.split
        )),
        e => Failure::input(e),
    }
}

/// `--predictions FILE`: the report's scored predictions as JSON lines, each with whether its
/// job and its partner are held-out job types (always false for the pair splits).
fn write_predictions(
    path: &Path,
    file: std::fs::File,
    inputs: &CostInputs,
    split: &SplitConfig,
    config: &PredictorConfig,
    report: &HoldoutReport,
) -> Result<(), Failure> {
    let held = predictor::held_out_jobs(inputs, split, config.seed).map_err(Failure::input)?;
    let held_out: HashSet<String> = inputs
        .job_types()
        .iter()
        .zip(&held)
        .filter(|(_, h)| **h)
        .map(|(j, _)| j.to_string())
        .collect();
    let mut out = std::io::BufWriter::new(file);
    for p in &report.predictions {
        let mut line = serde_json::to_value(p).map_err(Failure::other)?;
        if let Some(map) = line.as_object_mut() {
            map.insert("job_held_out".into(), held_out.contains(&p.job).into());
            map.insert(
                "partner_held_out".into(),
                held_out.contains(&p.partner).into(),
            );
        }
        writeln!(out, "{line}").map_err(|e| Failure::cannot_write(path, e))?;
    }
    out.flush().map_err(|e| Failure::cannot_write(path, e))
}
