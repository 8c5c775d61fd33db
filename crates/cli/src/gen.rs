//! `gen`: seeded synthetic or Gavel-derived instances (flags to a `GenConfig`, then the library).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use stsfair::{Fairness, InstanceError};
use stsfair_costs::generate::{self, GenConfig, GenError, GpuSpec, MAX_TYPES, MultiMix};
use stsfair_costs::slots::SlotRule;
use stsfair_costs::{PredictorConfig, predictor};

use crate::Failure;

/// `--multi-mix`.
#[derive(Clone, Copy, ValueEnum)]
enum MixArg {
    Gavel,
    Uniform,
}

/// `--slot-rule` (of `gen` and `simulate`).
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum RuleArg {
    Composition,
    PowerLaw,
}

impl From<RuleArg> for SlotRule {
    fn from(rule: RuleArg) -> SlotRule {
        match rule {
            RuleArg::Composition => SlotRule::Composition,
            RuleArg::PowerLaw => SlotRule::PowerLaw,
        }
    }
}

#[derive(Args)]
pub struct GenArgs {
    /// Draw jobs from measured Gavel throughputs instead of synthetic ones: the data bundled in
    /// the binary, or the throughputs file PATH.
    #[arg(long, value_name = "PATH", num_args = 0..=1)]
    gavel: Option<Option<PathBuf>>,
    /// Number of jobs.
    #[arg(long, default_value_t = 100)]
    jobs: usize,
    /// Number of synthetic GPU types, named gpu1, gpu2, ... (fastest first); ignored when
    /// --gpu-types is given.
    #[arg(long, default_value_t = 2)]
    types: usize,
    /// GPU type names, comma-separated. With --gavel: worker types of the data (default: every
    /// worker type of the data, fastest first; v100,p100,k80 on Gavel's).
    #[arg(long, value_delimiter = ',')]
    gpu_types: Vec<String>,
    /// GPUs per type: one number for every type, or one per type (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "8")]
    count: Vec<u64>,
    /// Units per GPU.
    #[arg(long, default_value_t = 4)]
    units: u32,
    /// Slot sizes (a divisibility ladder), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    ladder: Vec<u32>,
    /// Fraction of jobs forced by their deficit.
    #[arg(long, default_value_t = 0.1)]
    forced: f64,
    /// Largest deficit magnitude (rounds).
    #[arg(long, default_value_t = 1.0)]
    deficit_max: f64,
    /// Weights each job draws from uniformly, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    weights: Vec<f64>,
    /// Multi-worker jobs (Gavel: distributed job types, workers = scale factor, drawn as --multi-mix says).
    #[arg(long)]
    multi: bool,
    /// With --gavel --multi: `gavel` draws a scale factor 1/2/4/8 with probabilities 0.70/0.10/0.15/0.05 (Gavel's workload generator), then a job type of that scale factor; `uniform` draws uniformly over all job types (65% distributed; the draw of instances shipped before the Gavel mix).
    #[arg(long, value_enum, default_value_t = MixArg::Gavel)]
    multi_mix: MixArg,
    /// With --gavel: times of slots smaller than half a GPU. `composition`: a slot of s of U units has U/s - 1 typical co-runners, each multiplying the throughput by the median pair ratio (the rule the simulation realizes); `power-law`: solo * (s/U)^a through the whole and half GPU (kept for comparison).
    #[arg(long, value_enum, default_value_t = RuleArg::Composition)]
    slot_rule: RuleArg,
    /// Synthetic only: probability that a job cannot run on a GPU type.
    #[arg(long, default_value_t = 0.1)]
    missing: f64,
    /// Fairness level lambda.
    #[arg(long, default_value_t = 1.0)]
    lambda: f64,
    /// Allowed debt Delta.
    #[arg(long, default_value_t = 1.0)]
    max_debt: f64,
    /// Credit bound B.
    #[arg(long, default_value_t = 1.0)]
    credit: f64,
    /// Instance name (default: gavel-<count>x<types>-<jobs>-s<seed>, or synth-... likewise;
    /// <count>x<types> becomes <types>types when the counts differ). The seed is in the default
    /// so that `bench` and `rounds` tables of generated rounds can be told apart.
    #[arg(long)]
    name: Option<String>,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write the instance here instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub fn gen_instance(args: GenArgs) -> Result<u8, Failure> {
    // Checked before the names are made (a mistyped --types would allocate them all), and here
    // rather than by the generator, whose message names its `gpus` list and no flag.
    if args.gpu_types.is_empty() && args.gavel.is_none() && !(1..=MAX_TYPES).contains(&args.types) {
        return Err(Failure::input(format!(
            "--types must be between 1 and {MAX_TYPES} (got {})",
            args.types
        )));
    }
    if args.gpu_types.len() > MAX_TYPES {
        return Err(Failure::input(format!(
            "--gpu-types must list at most {MAX_TYPES} gpu types (got {})",
            args.gpu_types.len()
        )));
    }
    let fairness = Fairness {
        lambda: args.lambda,
        max_debt: args.max_debt,
        credit: args.credit,
    };
    // The generator's own check printed the struct's Debug text and no flag.
    fairness.check().map_err(|e| match e {
        InstanceError::Rule { path, rule, got } => Failure::input(format!(
            "--{} {rule} (got {got})",
            path.trim_start_matches("fairness.").replace('_', "-")
        )),
        e => Failure::input(e),
    })?;
    let names: Vec<String> = match (&args.gavel, args.gpu_types.is_empty()) {
        (_, false) => args.gpu_types.clone(),
        (Some(path), true) => {
            // Every worker type of the data, fastest first.
            let table =
                stsfair_sim::ThroughputTable::from_gavel(&crate::gavel_data(path.as_deref())?);
            table
                .fastest_first()
                .into_iter()
                .map(|w| table.workers()[w].clone())
                .collect()
        }
        (None, true) => (1..=args.types).map(|k| format!("gpu{k}")).collect(),
    };
    let counts: Vec<u64> = match args.count.as_slice() {
        [one] => vec![*one; names.len()],
        many if many.len() == names.len() => many.to_vec(),
        many => {
            return Err(Failure::input(format!(
                "--count must give one number or one per gpu type ({} types, got {})",
                names.len(),
                many.len()
            )));
        }
    };
    let gpus: Vec<GpuSpec> = names
        .iter()
        .zip(&counts)
        .map(|(name, &count)| GpuSpec {
            name: name.clone(),
            count,
            units: args.units,
            ladder: args.ladder.clone(),
        })
        .collect();
    let prefix = if args.gavel.is_some() {
        "gavel"
    } else {
        "synth"
    };
    let shape = if counts.iter().all(|&c| c == counts[0]) {
        format!("{}x{}", counts.first().copied().unwrap_or(0), names.len())
    } else {
        format!("{}types", names.len())
    };
    let mut config = GenConfig::default();
    config.name = Some(
        args.name
            .clone()
            .unwrap_or_else(|| default_name(prefix, &shape, args.jobs, args.seed)),
    );
    config.jobs = args.jobs;
    config.gpus = gpus;
    config.seed = args.seed;
    config.fairness = fairness;
    config.forced = args.forced;
    config.deficit_max = args.deficit_max;
    config.weights = args.weights.clone();
    config.multi = args.multi;
    config.missing = args.missing;
    config.slot_rule = args.slot_rule.into();
    config.multi_mix = match args.multi_mix {
        MixArg::Gavel => MultiMix::Gavel,
        MixArg::Uniform => MultiMix::Uniform,
    };
    let instance = match &args.gavel {
        Some(path) => {
            let data = crate::gavel_data(path.as_deref())?;
            let model = predictor::complete(
                data.into_inputs(),
                &PredictorConfig {
                    seed: args.seed,
                    ..Default::default()
                },
            )
            .map_err(Failure::other)?;
            generate::from_measurements(model.as_ref(), &config)
        }
        None => generate::synthetic(&config),
    }
    .map_err(|e| gen_error(e, &args))?;
    let mut text = instance.to_json();
    text.push('\n');
    match &args.out {
        Some(file) => {
            std::fs::write(file, text).map_err(|e| Failure::cannot_write(file, e))?;
            let forced = instance
                .jobs()
                .iter()
                .filter(|j| (j.deficit() + args.lambda) - args.max_debt > 0.0)
                .count();
            eprintln!(
                "wrote {}: {} jobs ({forced} with m_j > 0), {} gpu types",
                file.display(),
                instance.jobs().len(),
                names.len()
            );
        }
        None => out!("{text}"),
    }
    Ok(0)
}

/// A generator's error in the terms of the flags: its parameters are the [`GenConfig`] fields
/// the flags of the same names set (`deficit_max` is `--deficit-max`), a slot time it cannot
/// represent comes from `--units` and `--ladder` together, and a GPU type the format refuses
/// from `--gpu-types`, `--count`, `--units` or `--ladder`.
fn gen_error(e: GenError, args: &GenArgs) -> Failure {
    match e {
        GenError::Parameter { name, rule, got } => {
            Failure::input(format!("--{} {rule} (got {got})", name.replace('_', "-")))
        }
        GenError::SlotTime { .. } => {
            let ladder: Vec<String> = args.ladder.iter().map(u32::to_string).collect();
            Failure::input(format!(
                "--units {} with --ladder {} cannot be represented: {e}; give fewer --units or \
                 larger slots in --ladder{}",
                args.units,
                ladder.join(","),
                match args.slot_rule {
                    RuleArg::Composition => " (or --slot-rule power-law)",
                    RuleArg::PowerLaw => "",
                }
            ))
        }
        // The GPU types of the generated document come from flags: name the flag beside the
        // path (`gpu_types[0].units` is `--units`, `slot_sizes` `--ladder`).
        GenError::Instance(InstanceError::Rule { ref path, .. })
            if path.starts_with("gpu_types[") =>
        {
            let field = path.split_once("].").map_or("", |(_, field)| field);
            let flag = match field.split('[').next() {
                Some("name") => "--gpu-types",
                Some("count") => "--count",
                Some("units") => "--units",
                Some("slot_sizes") => "--ladder",
                _ => return Failure::input(e),
            };
            Failure::input(format!("{flag}: {e}"))
        }
        // Weights come from --weights: a sum of them past f64::MAX is that flag's.
        GenError::Instance(InstanceError::Rule { ref path, .. })
            if path.starts_with("jobs[") && path.ends_with("].weight") =>
        {
            Failure::input(format!(
                "--weights: {e} (the jobs' weights, drawn from --weights, must have a finite sum: \
                 give smaller weights or fewer --jobs)"
            ))
        }
        e => Failure::input(e),
    }
}

/// The default instance name: `<prefix>-<shape>-<jobs>-s<seed>`. The seed is in it so that
/// rounds of the same shape and size (every `gen --gavel --jobs 1000 --count 100` round is
/// `gavel-100x3-1000-s<seed>`) have distinct names, and the rows of a `bench` table over several
/// seeds can be told apart.
fn default_name(prefix: &str, shape: &str, jobs: usize, seed: u64) -> String {
    format!("{prefix}-{shape}-{jobs}-s{seed}")
}
