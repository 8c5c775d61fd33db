//! `simulate`: run policies on a generated workload or a replayed Gavel trace.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use stsfair::{Fairness, InstanceError};
use stsfair_sim::policies::Method;
use stsfair_sim::policies::{self, PairEstimation, PolicyOptions};
use stsfair_sim::workload::{self, WorkloadSpec};
use stsfair_sim::{
    self, Cluster, Metrics, SimConfig, SimError, SimResult, ThroughputTable, TraceJob, WindowJob,
    trace,
};

use crate::Failure;

/// `--sts-weights`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum WeightsArg {
    Trace,
    Attained,
    AttainedGpu,
}

/// `--sts-second-stage-rounds`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum SecondStageRoundsArg {
    Attained,
    All,
}

/// `--sts-crowding-hold`, `--sts-paired-rounds`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OnOff {
    On,
    Off,
}

#[derive(Args)]
pub struct SimulateArgs {
    /// Gavel throughputs file (simulation_throughputs.json; default: the measured data bundled
    /// in the binary).
    #[arg(long, value_name = "FILE")]
    throughputs: Option<PathBuf>,
    /// GPUs per type, TYPE=N,..., in the order the round mechanism fills them (default: 36 GPUs
    /// of every type of the throughputs, fastest first: v100=36,p100=36,k80=36 on Gavel's).
    #[arg(long, value_name = "TYPE=N,...")]
    cluster: Option<String>,
    /// Policies, comma-separated: sts, gavel-mmf, gavel-mmf-ss, ftf, fifo, gandiva, or all.
    #[arg(long, default_value = "sts")]
    policy: String,
    /// Number of jobs to generate (with --rate and --seed).
    #[arg(long, conflicts_with = "trace")]
    jobs: Option<usize>,
    /// Arrival rate of generated jobs, jobs per hour.
    #[arg(long, default_value_t = 5.0)]
    rate: f64,
    /// Seed of the generated workload (and of Gandiva's pairing).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Generate multi-GPU jobs too (scale factors 1/2/4/8 w.p. 0.70/0.10/0.15/0.05).
    #[arg(long)]
    multi_gpu: bool,
    /// Replay a Gavel trace file instead of generating jobs.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Jobs whose metrics count, A-B inclusive (default: all); the run stops when they are done.
    #[arg(long)]
    window: Option<String>,
    /// Round length in seconds (at least 1).
    #[arg(long, default_value_t = 360.0)]
    round_seconds: f64,
    /// Minimum seconds between allocation resets of the Gavel mechanism (finite, >= 0).
    #[arg(long, default_value_t = 1920.0)]
    reset_seconds: f64,
    /// Solver of the sts round problem (dp, ilp, ...).
    #[arg(long, default_value = "dp")]
    sts_solver: String,
    /// Spatial units per GPU for sts (slots of 1, 2, ... units): 2 (half GPUs, every co-location a measured pair) by default; 4 adds quarter GPUs (docs/simulation.md).
    #[arg(long, default_value_t = 2)]
    units: u32,
    /// How sts derives the times of slots smaller than half a GPU: composition (the co-runner rule the simulation realizes) or power-law (a power law of the slot's share of the GPU, kept for comparison); docs/costs.md.
    #[arg(long, value_enum, default_value_t = crate::r#gen::RuleArg::Composition)]
    slot_rule: crate::r#gen::RuleArg,
    /// How sts weights jobs: `attained` (the default: least attained service first, as Tiresias: w = weight / (1 + hours of service received), a distributed job's counted once, recomputed every round), `attained-gpu` (the same with GPU-hours, every worker counted: Tiresias's two-dimensional attained service) or `trace` (the trace's priority weights: equal shares, as Gavel's policies).
    #[arg(long, value_enum, default_value_t = WeightsArg::Attained)]
    sts_weights: WeightsArg,
    /// How a distributed job's sts weight grows with its workers d: it weighs d^P times a
    /// one-worker job, P in [0, 1]. 0: one weight a job; 1: the same share of time for every
    /// job, as Gavel's max-min fairness, and a GPU worth as much in a job of any size; 0.75 by
    /// default (docs/simulation.md, "Weights that count the workers").
    #[arg(long, value_name = "P", default_value_t = stsfair::policy::options::DEFAULT_SIZE_EXPONENT)]
    sts_size_exponent: f64,
    /// How sts's forced jobs choose among their options: off (the default in simulations) or lp (their fairness service priced by the long-run LP's duals, as `stsfair rounds` does by default; docs/rounds.md).
    #[arg(long, value_enum, default_value_t = crate::rounds::Prices::Off)]
    prices: crate::rounds::Prices,
    /// sts's pairing step: each round the single-GPU jobs are matched per GPU type into pairs
    /// whose measured pair sum r(a|b) + r(b|a) is at least this, and a half GPU is priced beside
    /// the job's partner; an unmatched job gets whole GPUs only (`inf`: no pairs; `off`: every
    /// half GPU at the median pair). With --units 2 only (docs/simulation.md, "A pairing step").
    #[arg(long, value_name = "SUM|off", default_value_t = stsfair::policy::options::DEFAULT_PAIRING.to_string())]
    sts_pairing: String,
    /// Thresholds of sts's pairing step for some GPU types in place of --sts-pairing there:
    /// TYPE=SUM,... (types of the throughputs; SUM a number >= 0 or `inf`, no pairs on that
    /// type), `none` (every type at --sts-pairing), or `auto` (the default): derived from the
    /// throughputs and the cluster, the slowest of several GPU types at 1.0 (the jobs the
    /// faster types had no room for run there, and the alternative to a pair of sum >= 1 is
    /// one of them waiting) and `inf` on a type whose median measured pair sum is below halfway
    /// from 1 to --sts-pairing (weak pairs: whole GPUs only); on Gavel's cluster k80=1,p100=inf
    /// (docs/simulation.md, "A pairing step").
    #[arg(long, value_name = "TYPE=SUM,...|none|auto", default_value = "auto")]
    sts_pairing_types: String,
    /// GPU types on which, in crowded rounds (where sts's attained-service weights apply), a
    /// single-GPU job matched by the pairing step gets only its half slot beside its partner,
    /// no whole GPU of that type: TYPE,... or `none` (the default). `v100` under the drained
    /// overload (8 jobs/h): a 1.0% lower mean JCT for a 3.8% longer mean makespan
    /// (docs/simulation.md, "Matched jobs share the V100s when crowded").
    #[arg(long, value_name = "TYPE,...|none", default_value = "none")]
    sts_crowded_sharing: String,
    /// sts's second stage: after the round problem chooses who runs, where the chosen jobs run
    /// (GPU type and slot) is chosen again with each job's weight raised to this exponent in
    /// [0, 1], so that a heavy job takes a fast GPU only where it gains there (`off`: the round
    /// problem's own choice; docs/rounds.md, "Who runs, then where").
    #[arg(long, value_name = "EXPONENT|off", default_value_t = stsfair::policy::options::DEFAULT_SECOND_STAGE.to_string())]
    sts_second_stage: String,
    /// In which rounds sts's second stage runs: `attained`, only where the attained-service
    /// weights apply (crowded rounds and the hold after them; the default); `all`, every round
    /// whose chosen jobs' weights differ (docs/simulation.md, "Work per busy
    /// GPU").
    #[arg(long, value_enum, value_name = "attained|all", default_value_t = SecondStageRoundsArg::Attained)]
    sts_second_stage_rounds: SecondStageRoundsArg,
    /// When sts's attained-service weights apply: only in rounds where the active jobs are more
    /// than RATIO times the cluster's capacity (jobs counted, not their workers; the capacity is
    /// the GPUs, or the most work of one round in GPUs at the jobs' best speed if more), and
    /// after such a round until the next arrival (`--sts-crowding-hold`); in other rounds every
    /// job has its trace weight (equal shares); 1.5 by default. `off`: every round
    /// (docs/simulation.md, "Arrivals that do not stop").
    #[arg(long, value_name = "RATIO|off", default_value_t = stsfair::policy::options::DEFAULT_CROWDING.to_string())]
    sts_crowding: String,
    /// Whether sts's attained-service weights, after a crowded round, stay on until the next
    /// job arrives however few jobs are left (a crowded cluster that nothing enters is draining
    /// its backlog); `off`: the weights end with the first uncrowded round (docs/simulation.md,
    /// "Held until the next arrival").
    #[arg(long, value_enum, value_name = "on|off", default_value_t = OnOff::On)]
    sts_crowding_hold: OnOff,
    /// Whether sts plans its uncrowded rounds of single-GPU jobs as paired rounds: a GPU
    /// shared by two jobs is one choice worth both jobs' measured throughputs, solved exactly
    /// (branch and bound, pure Rust) with the forced jobs at their floors; `off`: every round
    /// through the round problem with the pairing step's prices (docs/simulation.md, "Pairs as
    /// items").
    #[arg(long, value_enum, value_name = "on|off", default_value_t = OnOff::On)]
    sts_paired_rounds: OnOff,
    /// sts's starvation promotion: where the attained-service weights apply, a job whose age
    /// less its attained service is more than K times its attained service is weighted as a
    /// new job until it runs again (after Tiresias); 4 by default, `off`: no promotion
    /// (docs/simulation.md, "Starvation promotion past saturation").
    #[arg(long, value_name = "K|off", default_value_t = stsfair::policy::options::DEFAULT_PROMOTION.to_string())]
    sts_promotion: String,
    /// sts's critical-job rule: where the attained-service weights apply and no job has arrived
    /// for `--sts-critical-after` seconds, a job whose remaining hours at its best speed are at
    /// least FACTOR times the backlog's drain time (every active job's remaining hours over the
    /// cluster's pace in the last round) is weighted as a new job; 1.2 by default. It reads the
    /// jobs' remaining steps; `off` for a scheduler that does not know them (docs/simulation.md,
    /// "Jobs that would outlast the backlog").
    #[arg(long, value_name = "FACTOR|off", default_value_t = stsfair::policy::options::DEFAULT_CRITICAL.to_string())]
    sts_critical: String,
    /// How long no job must have arrived, in seconds, before sts's critical-job rule acts (the
    /// cluster drains); 3600 by default. Without it the rule clogged the cluster past
    /// saturation where jobs keep arriving.
    #[arg(long, value_name = "SECONDS", default_value_t = stsfair::policy::options::DEFAULT_CRITICAL_AFTER)]
    sts_critical_after: f64,
    /// How the Gavel LPs are solved: ipm (interior point, central like Gavel's ECOS), highs-ipm,
    /// highs-simplex (a vertex), clarabel (needs the `stsfair-sim/clarabel` feature).
    #[arg(long, default_value = "ipm")]
    lp: String,
    /// Turns on Gavel's throughput estimation for gavel-mmf-ss and gandiva, as Gavel's
    /// --profiling_percentage: the probability P in (0, 1] that a new job is profiled against
    /// each reference model on each GPU type; the rest is matrix-completed. Estimation is on when
    /// P < 1 or --reference-models is below the number of job types; by default (P = 1, all job
    /// types, Gavel's defaults) the policies see every pair's measured throughput.
    #[arg(long, value_name = "P")]
    profiling_percentage: Option<f64>,
    /// Gavel's --num_reference_models for the estimation: how many single-GPU job types (drawn
    /// at random) serve as reference models, 1 to their number (26 in Gavel's data; default all).
    #[arg(long, value_name = "N")]
    reference_models: Option<usize>,
    /// Measured pairs, the default now; kept so that older command lines still run.
    #[arg(long, hide = true, conflicts_with_all = ["profiling_percentage", "reference_models"])]
    measured_pairs: bool,
    /// Fairness level lambda in (0, 1], one value for two uses: sts's fairness level (each job is
    /// owed lambda times its fair share) and the threshold of the share_meeting_lambda metric
    /// (the share of jobs with 1/rho >= lambda) for every policy.
    #[arg(long, default_value_t = 1.0)]
    lambda: f64,
    /// sts's allowed fairness debt Delta >= 0, in rounds (MODEL.md section 3).
    #[arg(long, default_value_t = 1.0)]
    max_debt: f64,
    /// sts's credit bound B >= 0, in rounds (MODEL.md section 3).
    #[arg(long, default_value_t = 1.0)]
    credit: f64,
    /// Print one JSON object per policy on stdout.
    #[arg(long)]
    json: bool,
    /// Write SVG figures (JCT CDF, finish-time-fairness CDF) into this directory.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Write the generated workload as a Gavel trace file.
    #[arg(long)]
    write_trace: Option<PathBuf>,
    /// Write every window job of every policy's run to FILE, one JSON object a line: policy,
    /// job (input index), job type, scale factor, arrival, completion and JCT in hours, its
    /// time alone on its fastest GPU type, rho, contention, and where its JCT went: hours on
    /// each GPU type, shared, waiting (docs/simulation.md).
    #[arg(long, value_name = "FILE")]
    job_log: Option<PathBuf>,
}

/// Reads `--sts-pairing-types`: `auto` (`None`: derived from the data), `none`, or
/// TYPE=SUM,... with every TYPE a worker type of the throughputs (the ranges are checked by the
/// policy's own check).
fn pairing_types(text: &str, workers: &[String]) -> Result<Option<Vec<(String, f64)>>, Failure> {
    match text {
        "auto" => return Ok(None),
        "none" => return Ok(Some(Vec::new())),
        _ => {}
    }
    text.split(',')
        .map(|part| {
            let bad = |why: String| {
                Failure::input(format!(
                    "--sts-pairing-types must be TYPE=SUM,..., none or auto ({why}; got {text:?})"
                ))
            };
            let (name, sum) = part
                .split_once('=')
                .ok_or_else(|| bad(format!("{part:?} is not TYPE=SUM")))?;
            let name = name.trim();
            known_type(name, workers).map_err(bad)?;
            let sum: f64 = sum
                .trim()
                .parse()
                .map_err(|_| bad(format!("{sum:?} is not a number")))?;
            Ok((name.to_string(), sum))
        })
        .collect::<Result<Vec<_>, Failure>>()
        .map(Some)
}

/// Whether `name` is a worker type of the throughputs; the error says which types there are.
fn known_type(name: &str, workers: &[String]) -> Result<(), String> {
    if workers.iter().any(|w| w == name) {
        Ok(())
    } else {
        Err(format!(
            "unknown gpu type {name:?}; the throughputs know {}",
            workers.join(", ")
        ))
    }
}

/// Reads `--sts-crowded-sharing`: `none`, or TYPE,... with every TYPE a worker type of the
/// throughputs, each once.
fn crowded_sharing(text: &str, workers: &[String]) -> Result<Vec<String>, Failure> {
    if text == "none" {
        return Ok(Vec::new());
    }
    let mut names: Vec<String> = Vec::new();
    for name in text.split(',').map(str::trim) {
        let bad = |why: String| {
            Failure::input(format!(
                "--sts-crowded-sharing must be TYPE,... or none ({why}; got {text:?})"
            ))
        };
        known_type(name, workers).map_err(bad)?;
        if names.iter().any(|n| n == name) {
            return Err(bad(format!("{name:?} is given twice")));
        }
        names.push(name.to_string());
    }
    Ok(names)
}

/// Reads `--policy`: `all`, or names of [`policies::policy_names`], comma-separated. Checked
/// before any run, so that an empty list or an unknown name fails before any policy runs.
fn policy_list(text: &str) -> Result<Vec<String>, Failure> {
    let known = policies::policy_names();
    if text.trim() == "all" {
        return Ok(known.into_iter().map(String::from).collect());
    }
    let names: Vec<String> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let bad = |why: String| {
        Failure::input(format!(
            "--policy must name policies among {} (comma-separated), or all ({why})",
            known.join(", ")
        ))
    };
    if names.is_empty() {
        return Err(bad(format!("got {text:?}, no policy")));
    }
    if let Some(name) = names.iter().find(|n| !known.contains(&n.as_str())) {
        return Err(bad(format!("unknown policy {name:?}")));
    }
    Ok(names)
}

/// A flag's value that is a number or `off` (`None`); the range is checked by the policy's own
/// check, this only reads the text.
fn number_or_off(text: &str, flag: &str, what: &str) -> Result<Option<f64>, Failure> {
    match text {
        "off" => Ok(None),
        _ => text
            .parse::<f64>()
            .map(Some)
            .map_err(|_| Failure::input(format!("{flag} must be {what} or off (got {text:?})"))),
    }
}

/// A usage error naming the flag of a library setting (`max_debt` is `--max-debt`).
fn flag_error(e: SimError) -> Failure {
    match e {
        SimError::Setting { setting, rule, got } => Failure::input(format!(
            "--{} {rule} (got {got})",
            setting.replace('_', "-")
        )),
        SimError::Fairness {
            source: InstanceError::Rule { path, rule, got },
        } => Failure::input(format!(
            "--{} {rule} (got {got})",
            path.trim_start_matches("fairness.").replace('_', "-")
        )),
        other => Failure::input(other),
    }
}

/// A run's error: exit 2 naming the flag where it is in what was given (`--round-seconds 0`, a
/// window past the jobs, a job no GPU type can run), 1 where the run itself failed.
fn run_error(e: SimError) -> Failure {
    match e {
        SimError::Setting {
            setting: "round_seconds" | "reset_seconds" | "window",
            ..
        } => flag_error(e),
        e if e.is_input() => Failure::input(e),
        e => Failure::other(e),
    }
}

pub fn simulate(args: SimulateArgs) -> Result<u8, Failure> {
    let sts_fairness = Fairness {
        lambda: args.lambda,
        max_debt: args.max_debt,
        credit: args.credit,
    };
    sts_fairness
        .check()
        .map_err(|source| flag_error(SimError::Fairness { source }))?;
    let gavel = crate::gavel_data(args.throughputs.as_deref())?;
    // The measured table (names, solo throughputs, measured pairs: milliseconds) serves every
    // check of the flags and the workload; the pairs the data does not measure are predicted
    // once all of them pass, since the predictor's fit takes seconds on a large table.
    let table = ThroughputTable::from_gavel(&gavel);
    let fastest_first = table.fastest_first();
    let cluster_text = args.cluster.clone().unwrap_or_else(|| {
        fastest_first
            .iter()
            .map(|&w| format!("{}=36", table.workers()[w]))
            .collect::<Vec<_>>()
            .join(",")
    });
    let cluster = Cluster::parse(&cluster_text, &table).map_err(|e| match e {
        SimError::Cluster { text, rule } => Failure::input(format!("--cluster {text:?}: {rule}")),
        e => Failure::input(e),
    })?;
    let options = policy_options(&args, &table, sts_fairness)?;
    let names = policy_list(&args.policy)?;
    let window = args
        .window
        .as_deref()
        .map(stsfair_sim::parse_window)
        .transpose()
        .map_err(Failure::input)?;
    let trace_jobs = workload_of(&args, &table, &fastest_first)?;
    if let Some(path) = &args.write_trace {
        std::fs::write(path, trace::write_trace(&trace_jobs))
            .map_err(|e| Failure::cannot_write(path, e))?;
    }
    let jobs = stsfair_sim::jobs_from_trace(&trace_jobs, &table).map_err(Failure::input)?;
    let config = SimConfig {
        round_seconds: args.round_seconds,
        reset_seconds: args.reset_seconds,
        window,
        lambda: args.lambda,
        seed: args.seed,
    };

    // Opened before the runs, so that a path that cannot be written fails at once.
    let mut job_log = match &args.job_log {
        Some(path) => {
            let file = std::fs::File::create(path).map_err(|e| Failure::cannot_write(path, e))?;
            Some((path.as_path(), std::io::BufWriter::new(file)))
        }
        None => None,
    };
    let table = ThroughputTable::completed(&gavel).map_err(Failure::input)?;
    let inputs = SimInputs {
        table: &table,
        cluster: &cluster,
        jobs: &jobs,
        config: &config,
        options: &options,
    };
    let mut results: Vec<SimResult> = Vec::new();
    for name in &names {
        let result = inputs.simulate(name)?;
        report(&args, &Metrics::new(&result, args.lambda))?;
        if let Some((path, log)) = &mut job_log {
            for record in WindowJob::of(&result, &jobs, &table, &cluster) {
                let line = serde_json::to_string(&record).map_err(Failure::other)?;
                writeln!(log, "{line}").map_err(|e| Failure::cannot_write(path, e))?;
            }
        }
        results.push(result);
    }
    if let Some(dir) = &args.plot {
        plot(dir, &results).map_err(Failure::other)?;
    }
    if let Some((path, log)) = &mut job_log {
        log.flush().map_err(|e| Failure::cannot_write(path, e))?;
    }
    Ok(0)
}

/// The jobs of the run: `--trace FILE`, or `--jobs N` generated at `--rate` with `--seed`, their
/// durations made steps on the fastest type of the throughputs.
fn workload_of(
    args: &SimulateArgs,
    table: &ThroughputTable,
    fastest_first: &[usize],
) -> Result<Vec<TraceJob>, Failure> {
    match (&args.trace, args.jobs) {
        (Some(path), _) => trace::read_trace(path).map_err(Failure::input),
        (None, Some(jobs)) => {
            let reference = fastest_first
                .first()
                .map_or("", |&w| table.workers()[w].as_str());
            let spec = WorkloadSpec {
                jobs,
                rate: args.rate,
                seed: args.seed,
                multi_gpu: args.multi_gpu,
                reference: reference.to_string(),
            };
            workload::generate(&spec, table).map_err(|e| match e {
                SimError::Setting {
                    setting: "rate" | "jobs",
                    ..
                } => flag_error(e),
                e => Failure::input(e),
            })
        }
        (None, None) => Err(Failure::input(
            "give --trace FILE or --jobs N (with --rate and --seed)",
        )),
    }
}

/// The policies' options from the flags, checked (exit 2 naming the flag) before any run.
fn policy_options(
    args: &SimulateArgs,
    table: &ThroughputTable,
    sts_fairness: Fairness,
) -> Result<PolicyOptions, Failure> {
    // Gavel's estimator works on the single-GPU job types (its JobTable).
    let job_types = table
        .job_types()
        .iter()
        .filter(|j| j.scale_factor == 1)
        .count();
    let pair_estimation = PairEstimation::new(
        args.profiling_percentage.unwrap_or(1.0),
        args.reference_models.unwrap_or(job_types),
        job_types,
    )
    .map_err(flag_error)?;
    let lp_method = match args.lp.as_str() {
        "ipm" => Method::InteriorPoint,
        "highs-ipm" => Method::HighsInteriorPoint,
        // `simplex` is the older name of highs-simplex.
        "highs-simplex" | "simplex" => Method::HighsSimplex,
        "clarabel" => Method::Clarabel,
        other => {
            return Err(Failure::input(format!(
                "--lp must be ipm, highs-ipm, highs-simplex or clarabel (got {other:?})"
            )));
        }
    };
    if !lp_method.is_available() {
        return Err(Failure::input(format!(
            "--lp {} needs the `{}` feature of stsfair-sim, which this build does not have",
            args.lp,
            lp_method.feature().unwrap_or("?")
        )));
    }
    let sts_solver = crate::solve::solver_kind(&args.sts_solver).ok_or_else(|| {
        Failure::input(format!(
            "--sts-solver must be one of {} (got {:?})",
            crate::solve::solver_names(),
            args.sts_solver
        ))
    })?;
    let mut options = PolicyOptions::default();
    options.sts.solver = sts_solver;
    options.sts.units = args.units;
    options.sts.fairness = sts_fairness;
    options.slot_rule = args.slot_rule.into();
    options.sts.weights = match args.sts_weights {
        WeightsArg::Trace => stsfair::policy::Weights::Trace,
        WeightsArg::Attained => stsfair::policy::Weights::Attained,
        WeightsArg::AttainedGpu => stsfair::policy::Weights::AttainedGpu,
    };
    options.sts.size_exponent = args.sts_size_exponent;
    options.sts.prices = args.prices == crate::rounds::Prices::Lp;
    options.sts.pairing =
        number_or_off(&args.sts_pairing, "--sts-pairing", "a pair sum >= 0, inf")?;
    options.sts.pairing_by_type = pairing_types(&args.sts_pairing_types, table.workers())?;
    options.sts.crowded_sharing = crowded_sharing(&args.sts_crowded_sharing, table.workers())?;
    options.sts.second_stage = number_or_off(
        &args.sts_second_stage,
        "--sts-second-stage",
        "an exponent in [0, 1]",
    )?;
    options.sts.second_stage_rounds = match args.sts_second_stage_rounds {
        SecondStageRoundsArg::Attained => stsfair::policy::SecondStageRounds::Attained,
        SecondStageRoundsArg::All => stsfair::policy::SecondStageRounds::All,
    };
    options.sts.crowding = number_or_off(&args.sts_crowding, "--sts-crowding", "a ratio >= 0")?;
    options.sts.crowding_hold = args.sts_crowding_hold == OnOff::On;
    options.sts.paired_rounds = args.sts_paired_rounds == OnOff::On;
    options.sts.promotion = number_or_off(&args.sts_promotion, "--sts-promotion", "a factor >= 0")?;
    options.sts.critical = number_or_off(&args.sts_critical, "--sts-critical", "a factor >= 0")?;
    options.sts.critical_after = args.sts_critical_after;
    options.lp_method = lp_method;
    options.pair_estimation = pair_estimation;
    policies::check_sts(&options).map_err(flag_error)?;
    Ok(options)
}

/// What every policy of a `simulate` call runs on.
struct SimInputs<'a> {
    table: &'a ThroughputTable,
    cluster: &'a Cluster,
    jobs: &'a [stsfair_sim::SimJob],
    config: &'a SimConfig,
    options: &'a PolicyOptions,
}

impl SimInputs<'_> {
    /// Simulates policy `name`, with a progress bar where stderr is a terminal.
    fn simulate(&self, name: &str) -> Result<SimResult, Failure> {
        let mut scheduler = policies::by_name(name, self.cluster, self.config, self.options)
            .map_err(Failure::input)?;
        let bar = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} jobs, {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_prefix(name.to_string());
            Some(bar)
        } else {
            None
        };
        let mut progress = |p: stsfair_sim::Progress| {
            if let Some(bar) = &bar {
                bar.set_length(p.window_jobs as u64);
                bar.set_position(p.finished as u64);
                bar.set_message(format!("{:.1} h simulated", p.now / 3600.0));
            }
        };
        let result = stsfair_sim::simulate(
            self.table,
            self.cluster,
            self.jobs,
            self.config,
            scheduler.as_mut(),
            &mut progress,
        )
        .map_err(run_error)?;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        Ok(result)
    }
}

/// Prints one policy's metrics: a JSON line with `--json`, else a line of text; notes on stderr
/// a window that outlasted the arrivals.
fn report(args: &SimulateArgs, metrics: &Metrics) -> Result<(), Failure> {
    if args.window.is_some() && metrics.drain_h > 0.0 {
        eprintln!(
            "stsfair: note: {}: jobs stopped arriving {:.1} h before the window's last job finished (Gavel's simulator keeps them arriving until the window is done; give more --jobs, or a longer trace, to measure as it does)",
            metrics.policy, metrics.drain_h
        );
    }
    if args.json {
        let text = serde_json::to_string(metrics).map_err(Failure::other)?;
        outln!("{text}");
    } else {
        outln!(
            "{:<13} avg JCT {:>7.2} h  makespan {:>7.1} h  {:>5.2} jobs/h  rho p50 {:>5.2} max {:>6.2}  jain {:.3}  >=lambda {:.2}  util {:.3}  work/busy GPU {:.3}  drain {:.1} h  solver {:.4} s/round  {:.2} s",
            metrics.policy,
            metrics.avg_jct_h,
            metrics.makespan_h,
            metrics.throughput_jobs_h,
            metrics.ftf_rho_p50,
            metrics.ftf_rho_max,
            metrics.jain,
            metrics.share_meeting_lambda,
            metrics.utilization,
            metrics.work_per_busy_gpu,
            metrics.drain_h,
            metrics.solver_seconds_per_round,
            metrics.seconds
        );
    }
    Ok(())
}

/// Empirical CDF points of `values` (sorted copy).
fn cdf(mut values: Vec<f64>) -> Vec<(f64, f64)> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len() as f64;
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| (v, (i + 1) as f64 / n))
        .collect()
}

fn plot(dir: &Path, results: &[SimResult]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let window = |r: &SimResult| r.jobs[r.window.0..=r.window.1].to_vec();
    let jct: Vec<(String, Vec<(f64, f64)>)> = results
        .iter()
        .map(|r| {
            (
                r.policy.clone(),
                cdf(window(r)
                    .iter()
                    .filter_map(|j| j.jct())
                    .map(|s| s / 3600.0)
                    .collect()),
            )
        })
        .collect();
    let rho: Vec<(String, Vec<(f64, f64)>)> = results
        .iter()
        .map(|r| {
            let values = window(r)
                .iter()
                .filter_map(|j| Some(j.jct()? * j.fair_rate / j.total_steps))
                .collect();
            (r.policy.clone(), cdf(values))
        })
        .collect();
    figure(
        &dir.join("jct_cdf.svg"),
        "Job completion time",
        "JCT (hours, log scale)",
        &jct,
        true,
    )?;
    figure(
        &dir.join("ftf_cdf.svg"),
        "Finish-time fairness",
        "rho = JCT / equal-share time (log scale)",
        &rho,
        true,
    )?;
    Ok(())
}

fn figure(
    path: &Path,
    title: &str,
    x_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
    log_x: bool,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    let xs = series
        .iter()
        .flat_map(|(_, s)| s.iter().map(|p| p.0))
        .filter(|x| *x > 0.0);
    let (lo, hi) = xs.fold((f64::INFINITY, 0.0_f64), |(a, b), x| (a.min(x), b.max(x)));
    let (lo, hi) = if lo.is_finite() && hi > lo {
        (lo, hi)
    } else {
        (0.01, 1.0)
    };
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55);
    let palette = [&BLUE, &RED, &GREEN, &MAGENTA, &CYAN, &BLACK];
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc("fraction of jobs")
                .draw()
                .map_err(|e| err(&e))?;
            for (i, (name, points)) in series.iter().enumerate() {
                let color = palette[i % palette.len()];
                chart
                    .draw_series(LineSeries::new(
                        points.iter().copied().filter(|p| p.0 > 0.0),
                        color,
                    ))
                    .map_err(|e| err(&e))?
                    .label(name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::LowerRight)
                .draw()
                .map_err(|e| err(&e))?;
        }};
    }
    if log_x {
        draw!(
            builder
                .build_cartesian_2d((lo * 0.9..hi * 1.1).log_scale(), 0.0..1.0)
                .map_err(|e| err(&e))?
        );
    } else {
        draw!(
            builder
                .build_cartesian_2d(0.0..hi * 1.05, 0.0..1.0)
                .map_err(|e| err(&e))?
        );
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
