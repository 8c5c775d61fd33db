//! `predict-eval`: held-out evaluation of the co-location predictor on a throughputs file.

use std::path::PathBuf;

use clap::Args;
use stsfair_costs::{Learner, PredictorConfig, predictor};

use crate::Failure;

#[derive(Args)]
pub struct PredictEvalArgs {
    /// Gavel throughputs file (default: the measured data bundled in the binary).
    #[arg(long, value_name = "FILE")]
    throughputs: Option<PathBuf>,
    /// Fraction of the measured unordered pairs held out, per GPU type.
    #[arg(long, default_value_t = 0.2)]
    holdout: f64,
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
    /// Print the report as JSON on standard output.
    #[arg(long)]
    json: bool,
}

pub fn predict_eval(args: PredictEvalArgs) -> Result<u8, Failure> {
    let data = crate::gavel_data(args.throughputs.as_deref())?;
    let learner = Learner::from_name(&args.learner).ok_or_else(|| {
        Failure::input(format!(
            "--learner must be extra-trees or random-forest (got {:?})",
            args.learner
        ))
    })?;
    let config = PredictorConfig {
        learner,
        trees: args.trees,
        seed: args.seed,
        features_per_split: args.features_per_split,
    };
    let report = predictor::evaluate_holdout(data.inputs(), args.holdout, &config)
        .map_err(Failure::input)?;
    if args.json {
        let text = serde_json::to_string(&report).map_err(Failure::other)?;
        println!("{text}");
    } else {
        println!(
            "mape {:.4} on {} held-out pairs ({} predictions), trained on {} pairs, seed {}",
            report.mape,
            report.pairs_test,
            report.predictions_test,
            report.pairs_train,
            report.seed
        );
        println!(
            "baselines: global mean ratio {:.4}, per-job mean ratio {:.4}",
            report.baselines.global_mean_ratio, report.baselines.per_job_mean_ratio
        );
        println!("method: {}", report.method);
    }
    Ok(0)
}
