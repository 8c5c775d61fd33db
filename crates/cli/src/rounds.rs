//! `rounds`: run the round mechanism for R rounds on an instance whose jobs all stay active and
//! realize exactly their predicted times; with `--state FILE`, survive restarts (the scheduler's
//! snapshot and the run's totals after every round, resumed from when the command starts).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};
use stsfair::rounds::{RunSummary, RunTally};
use stsfair::{Instance, RoundScheduler, SchedulerSnapshot};
use stsfair_costs::{JobSlowdowns, PredictorConfig, ThroughputModel, predictor};

use crate::Failure;
use crate::solve::{SolverArgs, load};

#[derive(Args)]
pub struct RoundsArgs {
    /// Instance file (stsfair/1 JSON): the cluster, the jobs and their starting deficits.
    file: PathBuf,
    /// Number of rounds (1 to 1,000,000). With --state, the total over every run of the command:
    /// a resumed run runs only the rounds that remain.
    #[arg(long)]
    rounds: u64,
    /// Save the run after every round to FILE (written atomically: a temporary file in the same
    /// folder, synced, renamed over FILE); if FILE exists when the command starts, resume from
    /// it. The instance (cluster and jobs) and --solver must be those of the saved run.
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// Print exactly one JSON document on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    solver: SolverArgs,
    /// Choose co-runners in placement by measured Gavel co-location slowdowns: those bundled in
    /// the binary, or those of the throughputs file FILE (pairs never measured are predicted);
    /// job types are read from the job ids, as `gen --gavel` writes them. Without the flag,
    /// placement assumes no interference.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    throughputs: Option<Option<PathBuf>>,
    /// How forced jobs choose among their admissible options: lp prices their fairness service
    /// with the duals of the long-run LP (an option is worth v + price * sigma; docs/rounds.md),
    /// off solves MODEL.md section 4 as is. Default: lp in a binary with HiGHS, else off.
    #[arg(long, value_enum)]
    prices: Option<Prices>,
    /// After each round problem chooses who runs, choose again, exactly, where those jobs run,
    /// with option values `w^EXPONENT * theta / theta_max` instead of `w * theta / theta_max`
    /// (EXPONENT in [0, 1]; 1 is the same as without; `RoundScheduler::with_second_stage`,
    /// docs/rounds.md). Only jobs of unequal weights are moved. Default: off.
    #[arg(long, value_name = "EXPONENT")]
    second_stage: Option<f64>,
}

/// The values of `--prices`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Prices {
    /// The duals of the long-run LP (HiGHS).
    Lp,
    /// No prices.
    Off,
}

impl Prices {
    fn name(self) -> &'static str {
        match self {
            Prices::Lp => "lp",
            Prices::Off => "off",
        }
    }
}

/// `--prices` as given, or the default of this binary.
fn chosen_prices(args: &RoundsArgs) -> Result<Prices, Failure> {
    match args.prices {
        Some(Prices::Lp) if !cfg!(feature = "highs") => Err(Failure::input(
            "--prices lp needs the long-run LP, and this binary was built without HiGHS (feature highs); use --prices off",
        )),
        Some(p) => Ok(p),
        None if cfg!(feature = "highs") => Ok(Prices::Lp),
        None => Ok(Prices::Off),
    }
}

/// `--second-stage` as the scheduler holds it: `None` when off or 1 (the same plans), after
/// checking the range.
fn chosen_second_stage(args: &RoundsArgs) -> Result<Option<f64>, Failure> {
    match args.second_stage {
        Some(e) if !(0.0..=1.0).contains(&e) => Err(Failure::input(format!(
            "--second-stage must be an exponent in [0, 1] (got {e})"
        ))),
        Some(e) => Ok((e < 1.0).then_some(e)),
        None => Ok(None),
    }
}

/// A recorded `--second-stage` as the command line gives it.
fn second_stage_flag(exponent: Option<f64>) -> String {
    match exponent {
        Some(e) => format!("--second-stage {e}"),
        None => "no --second-stage".to_string(),
    }
}

/// Attaches the chosen price source to `scheduler`.
fn with_prices(scheduler: RoundScheduler, prices: Prices) -> RoundScheduler {
    match prices {
        #[cfg(feature = "highs")]
        Prices::Lp => scheduler.with_service_prices(stsfair::bound::LongRunPrices::default()),
        _ => scheduler,
    }
}

/// The most rounds a run (resumed or not) may ask for: the report keeps a record of every
/// round (`per_round`; measured 1.1 KB a round of `--json`'s document, 70 bytes without), so
/// this bounds its memory at about a gigabyte rather than letting a mistyped count grow until
/// the machine has none.
const MAX_ROUNDS: u64 = 1_000_000;

pub fn rounds(args: RoundsArgs) -> Result<u8, Failure> {
    if args.rounds == 0 || args.rounds > MAX_ROUNDS {
        return Err(Failure::input(format!(
            "--rounds must be between 1 and 1,000,000 (every round's record is kept for the \
             report: about 1 KB a round with --json) (got {})",
            args.rounds
        )));
    }
    let solver = args.solver.solver_for_rounds()?;
    let prices = chosen_prices(&args)?;
    let second_stage = chosen_second_stage(&args)?;
    let throughputs = throughputs_name(&args);
    let instance = load(&args.file)?;
    let saved = match &args.state {
        Some(path) if path.exists() => Some(read_state(path)?),
        _ => None,
    };
    let (mut scheduler, mut tally) = match saved {
        Some(saved) => resume(
            saved,
            &instance,
            &args,
            solver,
            prices,
            second_stage,
            &throughputs,
        )?,
        None => {
            let scheduler = RoundScheduler::new(&instance, solver);
            let tally = RunTally::new(&scheduler).map_err(Failure::other)?;
            (scheduler, tally)
        }
    };
    if let Some(path) = &args.throughputs {
        scheduler = scheduler.with_colocation(colocation(path.as_deref(), &instance)?);
    }
    scheduler = with_prices(scheduler, prices);
    if let Some(e) = second_stage {
        // In range: checked by `chosen_second_stage`.
        scheduler = scheduler.with_second_stage(e).map_err(Failure::input)?;
    }
    let done = scheduler.round();
    if let Some(state) = &args.state {
        if done > args.rounds {
            return Err(Failure::input(format!(
                "--rounds {} is fewer than the {done} rounds {} has already run (--rounds counts every round of the run, resumed or not)",
                args.rounds,
                state.display()
            )));
        }
        // Written before the first round too: an unwritable path fails now, not after a round.
        write_state(state, &scheduler, &tally, prices, &throughputs)?;
    }
    let bar = (!args.json && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(args.rounds);
        if let Ok(style) = ProgressStyle::with_template(
            "{bar:40} {pos}/{len} rounds  {elapsed_precise} ({eta} left)",
        ) {
            bar.set_style(style);
        }
        bar.set_position(done);
        bar
    });
    // The loop of `stsfair::rounds::run_rounds`, with the state saved between rounds.
    for _ in done..args.rounds {
        let plan = scheduler.plan().map_err(Failure::other)?;
        let service = scheduler.report_planned(&plan).map_err(Failure::other)?;
        tally.record(&plan, &service);
        if let Some(state) = &args.state {
            write_state(state, &scheduler, &tally, prices, &throughputs)?;
        }
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let summary = tally.summary(&scheduler);
    if args.json {
        outln!(
            "{}",
            to_json(&summary, lp_bound(&instance)?, prices, second_stage)
        );
    } else {
        print_summary(
            &summary,
            instance.fairness().lambda,
            instance.name(),
            scheduler.solver_name(),
            prices,
            second_stage,
        );
    }
    Ok(0)
}

/// The long-run LP bound of `instance` at 0.95 lambda, when the binary has HiGHS.
#[cfg(feature = "highs")]
fn lp_bound(instance: &Instance) -> Result<Option<f64>, Failure> {
    let found = stsfair::bound::long_run_bound(instance, 0.95).map_err(Failure::other)?;
    Ok(found.map(|b| b.objective))
}

#[cfg(not(feature = "highs"))]
fn lp_bound(_instance: &Instance) -> Result<Option<f64>, Failure> {
    Ok(None)
}

/// The format tag of `--state` files.
const STATE_FORMAT: &str = "stsfair-rounds-state/1";

/// A `--state` file: the solver's name, the price source, the run's totals and the scheduler's
/// snapshot, all as of the end of round `scheduler.round`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunState {
    #[serde(deserialize_with = "state_format")]
    format: String,
    solver: String,
    /// `--prices` of the run; files written before the option existed ran unpriced.
    #[serde(default = "prices_off")]
    prices: String,
    /// `--throughputs` of the run ([`throughputs_name`]); files written before it was recorded
    /// have none, and are resumed with whatever the command gives.
    #[serde(default)]
    throughputs: Option<String>,
    /// `--second-stage` of the run (`None`: off); files written before the option existed ran
    /// without it.
    #[serde(default)]
    second_stage: Option<f64>,
    tally: RunTally,
    scheduler: SchedulerSnapshot,
}

/// `--throughputs` as a state file records it: `off` (no flag), `bundled` (the flag without a
/// file) or `file PATH`, PATH made absolute (a run resumed from another folder names the same
/// file another way). A resumed run must place jobs as the interrupted one did.
fn throughputs_name(args: &RoundsArgs) -> String {
    match &args.throughputs {
        None => "off".to_string(),
        Some(None) => "bundled".to_string(),
        Some(Some(path)) => {
            let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
            format!("file {}", path.display())
        }
    }
}

/// A recorded `--throughputs` ([`throughputs_name`]) as the command line gives it.
fn throughputs_flag(name: &str) -> String {
    match name {
        "off" => "no --throughputs".to_string(),
        "bundled" => "--throughputs (the bundled table)".to_string(),
        other => format!(
            "--throughputs {}",
            other.strip_prefix("file ").unwrap_or(other)
        ),
    }
}

fn prices_off() -> String {
    Prices::Off.name().to_string()
}

/// Refuses another format or version as soon as the tag is read.
fn state_format<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let tag = String::deserialize(d)?;
    if tag != STATE_FORMAT {
        return Err(serde::de::Error::custom(format!(
            "must be \"{STATE_FORMAT}\" (got {tag:?}): a state file of another format or version"
        )));
    }
    Ok(tag)
}

fn read_state(path: &Path) -> Result<RunState, Failure> {
    let bad = |e: String| {
        Failure::input(format!(
            "state file {}: {e} (delete it to start the run over)",
            path.display()
        ))
    };
    // The limit of instance files: a wrong path (a large file, a pipe, a device) must not
    // exhaust memory.
    let limit = stsfair::instance::MAX_FILE_BYTES;
    let text = stsfair::instance::read_text_limited(path, limit)
        .map_err(|e| bad(format!("cannot read: {e}")))?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    let state: RunState = serde_path_to_error::deserialize(&mut *de)
        .map_err(|e| bad(format!("{}: {}", e.path(), e.inner())))?;
    de.end().map_err(|e| bad(e.to_string()))?;
    Ok(state)
}

/// The scheduler and totals of a saved run, after checking that the saved run is this one: the
/// same solver, cluster and jobs (the deficits are the run's own), and totals of its jobs and
/// rounds.
fn resume(
    saved: RunState,
    instance: &Instance,
    args: &RoundsArgs,
    solver: Box<dyn stsfair::Solver>,
    prices: Prices,
    second_stage: Option<f64>,
    throughputs: &str,
) -> Result<(RoundScheduler, RunTally), Failure> {
    let path = args.state.as_deref().unwrap_or(Path::new(""));
    let bad = |e: String| {
        Failure::input(format!(
            "state file {}: {e} (delete it to start the run over)",
            path.display()
        ))
    };
    if saved.solver != solver.name() {
        return Err(bad(format!(
            "was written with --solver {}, not {}",
            saved.solver,
            solver.name()
        )));
    }
    if saved.prices != prices.name() {
        return Err(bad(format!(
            "was written with --prices {}, not {}",
            saved.prices,
            prices.name()
        )));
    }
    if saved.second_stage != second_stage {
        return Err(bad(format!(
            "was written with {}, not {}",
            second_stage_flag(saved.second_stage),
            second_stage_flag(second_stage)
        )));
    }
    if let Some(was) = &saved.throughputs
        && was != throughputs
    {
        return Err(bad(format!(
            "was written by a run with {}; this command has {} (placements, and so migrations and slowdowns, would differ from the interrupted run's)",
            throughputs_flag(was),
            throughputs_flag(throughputs)
        )));
    }
    let scheduler =
        RoundScheduler::restore(saved.scheduler, solver).map_err(|e| bad(e.to_string()))?;
    if let Some(diff) = cluster_difference(&scheduler, instance) {
        return Err(bad(format!(
            "was written for another cluster than {}: {diff}",
            args.file.display()
        )));
    }
    let jobs: Vec<_> = scheduler.jobs().map(|(j, _)| j).collect();
    let same_job = |a: &stsfair::Job, b: &stsfair::Job| {
        a.id() == b.id()
            && a.weight() == b.weight()
            && a.workers() == b.workers()
            && a.times() == b.times()
    };
    if jobs.len() != instance.jobs().len() {
        return Err(bad(format!(
            "has {} jobs, {} has {}",
            jobs.len(),
            args.file.display(),
            instance.jobs().len()
        )));
    }
    if let Some(j) = (0..jobs.len()).find(|&j| !same_job(jobs[j], &instance.jobs()[j])) {
        return Err(bad(format!(
            "jobs[{j}] ({:?}) differs from jobs[{j}] of {} ({:?}) in id, weight, workers or times",
            jobs[j].id(),
            args.file.display(),
            instance.jobs()[j].id()
        )));
    }
    let tally = saved.tally;
    // A state file written before the per-round records were kept has none; one written since
    // has one per round.
    if !tally.per_round.is_empty() && tally.per_round.len() as u64 != tally.rounds {
        return Err(bad(format!(
            "tally.per_round must have one entry per round ({}) (got {})",
            tally.rounds,
            tally.per_round.len()
        )));
    }
    if tally.rounds != scheduler.round() {
        return Err(bad(format!(
            "tally.rounds must equal scheduler.round ({}) (got {})",
            scheduler.round(),
            tally.rounds
        )));
    }
    if tally.jobs.len() != jobs.len() || tally.jobs.iter().zip(&jobs).any(|(t, j)| t.job != j.id())
    {
        return Err(bad(
            "tally.jobs must list the scheduler's jobs, in order".to_string()
        ));
    }
    // The totals a summary divides by the rounds: counts of rounds at most the rounds, sums
    // finite and >= 0 (objectives, slowdowns and sigmas are). Each job's by its path.
    let per_job = |name: &'static str| {
        let jobs = tally.jobs.iter().enumerate();
        jobs.map(move |(j, t)| (format!("tally.jobs[{j}].{name}"), t))
    };
    let counts = [
        ("tally.relaxed_rounds".to_string(), tally.relaxed_rounds),
        ("tally.fallback_rounds".to_string(), tally.fallback_rounds),
        ("tally.feasible_rounds".to_string(), tally.feasible_rounds),
    ];
    let runs = per_job("rounds_run").map(|(field, t)| (field, t.rounds_run));
    if let Some((field, n)) = counts
        .into_iter()
        .chain(runs)
        .find(|&(_, n)| n > tally.rounds)
    {
        return Err(bad(format!(
            "{field} must be at most tally.rounds ({}) (got {n})",
            tally.rounds
        )));
    }
    let sums = [
        ("tally.objective_sum".to_string(), tally.objective_sum),
        ("tally.slowdown_sum".to_string(), tally.slowdown_sum),
    ];
    let sigmas = per_job("sigma_sum").map(|(field, t)| (field, t.sigma_sum));
    if let Some((field, x)) = sums
        .into_iter()
        .chain(sigmas)
        .find(|&(_, x)| !(x.is_finite() && x >= 0.0))
    {
        return Err(bad(format!("{field} must be finite and >= 0 (got {x:?})")));
    }
    check_totals(&tally, instance).map_err(bad)?;
    Ok((scheduler, tally))
}

/// The totals of a state file's tally against what its rounds can have made: each round's
/// objective is at most the sum of the jobs' weights (v <= w), its migrations and conflicts at
/// most the GPUs a placement can hold times their units, and where the per-round records are
/// kept the solves and the objective are their sums.
fn check_totals(tally: &RunTally, instance: &Instance) -> Result<(), String> {
    let weights: f64 = instance.jobs().iter().map(|j| j.weight()).sum();
    let most = tally.rounds as f64 * weights;
    if tally.objective_sum > most * (1.0 + 1e-9) {
        return Err(format!(
            "tally.objective_sum must be at most tally.rounds ({}) times the sum of the jobs' \
             weights ({weights:?}) (got {:?})",
            tally.rounds, tally.objective_sum
        ));
    }
    let moves = tally
        .rounds
        .saturating_mul(stsfair::placement::MAX_GPUS)
        .saturating_mul(1024);
    for (field, n) in [
        ("tally.migrations", tally.migrations),
        ("tally.conflicts", tally.conflicts),
    ] {
        if n > moves {
            return Err(format!(
                "{field} must be at most tally.rounds ({}) x 4000000 gpus x 1024 units (got {n})",
                tally.rounds
            ));
        }
    }
    if tally.per_round.is_empty() {
        return Ok(());
    }
    let solves = tally
        .per_round
        .iter()
        .fold(0u64, |a, r| a.saturating_add(r.solves));
    if solves != tally.solves {
        return Err(format!(
            "tally.solves must be the sum of tally.per_round[..].solves ({solves}) (got {})",
            tally.solves
        ));
    }
    let objective: f64 = tally.per_round.iter().map(|r| r.objective).sum();
    if !stsfair::solution::objectives_agree(objective, tally.objective_sum) {
        return Err(format!(
            "tally.objective_sum must be the sum of tally.per_round[..].objective ({objective:?}) \
             (got {:?})",
            tally.objective_sum
        ));
    }
    Ok(())
}

/// Fairness parameters as the instance format writes them.
fn fairness_text(f: stsfair::Fairness) -> String {
    format!(
        "{{\"lambda\": {:?}, \"max_debt\": {:?}, \"credit\": {:?}}}",
        f.lambda, f.max_debt, f.credit
    )
}

/// The first difference between the cluster (GPU types and fairness) of the restored scheduler
/// and the instance's, in words; `None` when they agree.
fn cluster_difference(scheduler: &RoundScheduler, instance: &Instance) -> Option<String> {
    let describe = |t: &stsfair::GpuType| {
        format!(
            "{} x{} of {} units, slots {:?}",
            t.name(),
            t.count(),
            t.units(),
            t.slot_sizes()
        )
    };
    let (saved, now) = (scheduler.gpu_types(), instance.gpu_types());
    if saved.len() != now.len() {
        return Some(format!(
            "the state file has {} gpu types, the instance {}",
            saved.len(),
            now.len()
        ));
    }
    if let Some(k) = (0..saved.len()).find(|&k| saved[k] != now[k]) {
        return Some(format!(
            "gpu_types[{k}] is {} in the state file, {} in the instance",
            describe(&saved[k]),
            describe(&now[k])
        ));
    }
    if scheduler.fairness() != instance.fairness() {
        return Some(format!(
            "fairness is {} in the state file, {} in the instance",
            fairness_text(scheduler.fairness()),
            fairness_text(instance.fairness())
        ));
    }
    None
}

/// Writes the run's state to `path` atomically: a temporary file in the same folder, written and
/// synced, then renamed over `path` (and the folder synced, so that the rename survives a crash).
/// A reader, or a run killed at any point, sees either the previous state or the new one.
fn write_state(
    path: &Path,
    scheduler: &RoundScheduler,
    tally: &RunTally,
    prices: Prices,
    throughputs: &str,
) -> Result<(), Failure> {
    let state = RunState {
        format: STATE_FORMAT.to_string(),
        solver: scheduler.solver_name().to_string(),
        prices: prices.name().to_string(),
        throughputs: Some(throughputs.to_string()),
        second_stage: scheduler.second_stage(),
        tally: tally.clone(),
        scheduler: scheduler.snapshot(),
    };
    let fail = |e: std::io::Error| {
        Failure::other(format!("cannot write state file {}: {e}", path.display()))
    };
    let text = serde_json::to_string(&state).map_err(|e| fail(std::io::Error::other(e)))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| fail(std::io::Error::other("the path names no file")))?;
    // One fixed name: a run killed while writing leaves it behind, and the next write (of the
    // resumed run) truncates and renames it away.
    let tmp = dir.join(format!(".{}.tmp", name.to_string_lossy()));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(e));
    }
    // Opening a folder to sync it works on Unix; elsewhere the rename is left to the system.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The placement model of `--throughputs`: the file's measured pairs, with a trained predictor
/// filling any pair it lacks. Job ids it cannot map to a job type are reported on stderr.
fn colocation(
    path: Option<&Path>,
    instance: &Instance,
) -> Result<JobSlowdowns<Box<dyn ThroughputModel + Send + Sync>>, Failure> {
    let data = crate::gavel_data(path)?;
    let model = predictor::complete(data.into_inputs(), &PredictorConfig::default())
        .map_err(Failure::other)?;
    let model = JobSlowdowns::new(model);
    let unknown = model.unknown(instance.jobs().iter().map(|j| j.id()));
    if let Some(first) = unknown.first() {
        eprintln!(
            "stsfair: warning: {} job ids (first {first:?}) end with no job type of {}: placement predicts no slowdown for them",
            unknown.len(),
            crate::gavel_source(path)
        );
    }
    Ok(model)
}

/// The `--json` document. `bound`: the long-run LP bound at 0.95 lambda (`stsfair bound`), of
/// which `efficiency` is the share the mechanism's mean objective reached; both null without
/// HiGHS or when no fractional schedule meets the shares.
fn to_json(s: &RunSummary, bound: Option<f64>, prices: Prices, second_stage: Option<f64>) -> Value {
    let jobs: Vec<Value> = s
        .jobs
        .iter()
        .map(|j| {
            json!({
                "job": j.job,
                "rounds_run": j.rounds_run,
                "mean_sigma": j.mean_sigma,
                "final_deficit": j.final_deficit,
                "no_bound": j.no_bound,
            })
        })
        .collect();
    json!({
        "rounds": s.rounds,
        "relaxed_rounds": s.relaxed_rounds,
        "mean_objective": s.mean_objective,
        "migrations": s.migrations,
        "solves": s.solves,
        "fallback_rounds": s.fallback_rounds,
        "feasible_rounds": s.feasible_rounds,
        "prices": prices.name(),
        "second_stage": second_stage,
        "lp_bound": bound,
        "efficiency": bound.map(|b| s.mean_objective / b),
        "jobs": jobs,
        "per_round": s.per_round,
    })
}

/// The value at quantile q of sorted values (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn print_summary(
    s: &RunSummary,
    lambda: f64,
    name: Option<&str>,
    solver: &str,
    prices: Prices,
    second_stage: Option<f64>,
) {
    let stage = second_stage.map_or_else(|| "off".to_string(), |e| e.to_string());
    outln!(
        "instance        {}: {} jobs, solver {solver}, prices {}, second stage {stage}",
        name.unwrap_or("(unnamed)"),
        s.jobs.len(),
        prices.name()
    );
    outln!(
        "rounds          {} ({} relaxed, {} solves, {} solved by the fallback solver)",
        s.rounds,
        s.relaxed_rounds,
        s.solves,
        s.fallback_rounds
    );
    if s.feasible_rounds > 0 {
        outln!(
            "                {} with a solve a limit stopped (time or gap: not proven optimal)",
            s.feasible_rounds
        );
    }
    let fixed = crate::number::fixed;
    outln!("mean objective  {}", fixed(s.mean_objective, 6));
    outln!("migrations      {}", s.migrations);
    outln!(
        "placement       predicted slowdown {:.4} per round, {} forbidden pairs in all",
        s.mean_slowdown,
        s.conflicts
    );
    let mut sigma: Vec<f64> = s.jobs.iter().filter_map(|j| j.mean_sigma).collect();
    sigma.sort_by(f64::total_cmp);
    let unbounded = s.jobs.len() - sigma.len();
    let reached = sigma.iter().filter(|&&x| x >= 0.95 * lambda).count();
    outln!("fairness bound  {} jobs ({unbounded} without)", sigma.len());
    if !sigma.is_empty() {
        outln!(
            "mean sigma      min {}  p1 {}  p5 {}  median {}  max {}",
            fixed(sigma[0], 4),
            fixed(quantile(&sigma, 0.01), 4),
            fixed(quantile(&sigma, 0.05), 4),
            fixed(quantile(&sigma, 0.5), 4),
            fixed(sigma[sigma.len() - 1], 4)
        );
        outln!(
            "reach 0.95*lambda  {reached} of {} ({:.2}%)",
            sigma.len(),
            100.0 * reached as f64 / sigma.len() as f64
        );
    }
    let deficits = s.jobs.iter().map(|j| j.final_deficit);
    let (lo, hi) = deficits.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), d| {
        (a.min(d), b.max(d))
    });
    if lo <= hi {
        outln!("final deficits  [{}, {}]", fixed(lo, 4), fixed(hi, 4));
    }
}
