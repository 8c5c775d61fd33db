//! `rounds`: run the round mechanism for R rounds on an instance whose jobs all stay active and
//! realize exactly their predicted times.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use stsfair::rounds::{RunSummary, run_rounds};
use stsfair::{Instance, RoundScheduler};
use stsfair_costs::{JobSlowdowns, PredictorConfig, ThroughputModel, predictor};

use crate::Failure;
use crate::solve::{SolverArgs, load};

#[derive(Args)]
pub struct RoundsArgs {
    /// Instance file (stsfair/1 JSON): the cluster, the jobs and their starting deficits.
    file: PathBuf,
    /// Number of rounds (>= 1).
    #[arg(long)]
    rounds: u64,
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
}

pub fn rounds(args: RoundsArgs) -> Result<u8, Failure> {
    if args.rounds == 0 {
        return Err(Failure::input("--rounds must be >= 1 (got 0)"));
    }
    let solver = args.solver.solver_for_rounds()?;
    let instance = load(&args.file)?;
    let mut scheduler = RoundScheduler::new(&instance, solver);
    if let Some(path) = &args.throughputs {
        scheduler = scheduler.with_colocation(colocation(path.as_deref(), &instance)?);
    }
    let bar = (!args.json && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(args.rounds);
        if let Ok(style) = ProgressStyle::with_template(
            "{bar:40} {pos}/{len} rounds  {elapsed_precise} ({eta} left)",
        ) {
            bar.set_style(style);
        }
        bar
    });
    let summary = run_rounds(&mut scheduler, args.rounds, |_| {
        if let Some(b) = &bar {
            b.inc(1);
        }
    })
    .map_err(Failure::other)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if args.json {
        println!("{}", to_json(&summary));
    } else {
        print_summary(
            &summary,
            instance.fairness().lambda,
            instance.name(),
            scheduler.solver_name(),
        );
    }
    Ok(0)
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

fn to_json(s: &RunSummary) -> Value {
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
        "jobs": jobs,
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

fn print_summary(s: &RunSummary, lambda: f64, name: Option<&str>, solver: &str) {
    println!(
        "instance        {}: {} jobs, solver {solver}",
        name.unwrap_or("(unnamed)"),
        s.jobs.len()
    );
    println!(
        "rounds          {} ({} relaxed, {} solves, {} solved by the fallback solver)",
        s.rounds, s.relaxed_rounds, s.solves, s.fallback_rounds
    );
    println!("mean objective  {:.6}", s.mean_objective);
    println!("migrations      {}", s.migrations);
    println!(
        "placement       predicted slowdown {:.4} per round, {} forbidden pairs in all",
        s.mean_slowdown, s.conflicts
    );
    let mut sigma: Vec<f64> = s.jobs.iter().filter_map(|j| j.mean_sigma).collect();
    sigma.sort_by(f64::total_cmp);
    let unbounded = s.jobs.len() - sigma.len();
    let reached = sigma.iter().filter(|&&x| x >= 0.95 * lambda).count();
    println!("fairness bound  {} jobs ({unbounded} without)", sigma.len());
    if !sigma.is_empty() {
        println!(
            "mean sigma      min {:.4}  p1 {:.4}  p5 {:.4}  median {:.4}  max {:.4}",
            sigma[0],
            quantile(&sigma, 0.01),
            quantile(&sigma, 0.05),
            quantile(&sigma, 0.5),
            sigma[sigma.len() - 1]
        );
        println!(
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
        println!("final deficits  [{lo:.4}, {hi:.4}]");
    }
}
