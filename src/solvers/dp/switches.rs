//! Does each regime switch of the gap-deepening driver earn its place? (measurement only)
//!
//! What it measures: every instance file of a corpus is solved with the default [`Dp`] and with
//! each regime switch of [`Dp`] turned off alone (its threshold set to [`NEVER`]; the dense
//! finish also as `dense_finish = false`). Every answer's objective must equal the default's
//! ([`objectives_agree`], 1e-9 relative): the solver is exact, so a difference is a bug, listed
//! before the table and failing the test. The table gives, per family of files (a regime) and
//! per switch turned off: the total states of the runs (`DpStats::states`, deterministic; the
//! dense finish's cells are not states) off / on, and the total time off / on, each solve's time
//! being the median of `STSFAIR_SWITCH_RUNS` solves of its round problem (derived once per file,
//! not timed, nor is a first warm-up solve; the configurations take turns, so drift hits them
//! alike). Totals are over the files both configurations answered. A switch earns its place
//! where turning it off makes a family's states or time 1% worse or more. The row `none
//! (control)` is the default against itself: its time ratio is the noise floor of the machine
//! (its states ratio is 1 exactly), and a time ratio within it where no file's states changed
//! is noise, not an effect of the switch.
//!
//! Every solve has a time limit of `STSFAIR_SWITCH_CAP` seconds (default 60; the default solve
//! has it too, so that all carry the same clock checks). A configuration stopped by it on a file
//! is counted under `capped` and not solved on the family's later files (a family's files are
//! taken smallest first). Refusals ([`SolveError`](crate::solvers::SolveError)) are counted per
//! side.
//!
//! Corpus: `STSFAIR_SWITCH_DIR`, directories separated by `:` (default `instances`, relative to
//! the crate): the `.json` files of each directory (but `index.json`) are a family named after
//! it, and so are those of each of its subdirectories. `STSFAIR_SWITCH_ROUNDS`, instance files
//! separated by `:`, adds the round problems that the fair round mechanism
//! ([`RoundScheduler`]) solves on each of them in `STSFAIR_SWITCH_ROUND_COUNT` rounds (default
//! 10), one family per file: every problem the mechanism gives its solver, with the deficits of
//! its round and, with the feature `highs`, the forced jobs priced by the long-run LP as
//! `stsfair rounds` prices them. They are recorded from a run with the default DP and then
//! measured like files. The summary table after the families' tables counts, per switch, the
//! families where turning it off costs 1% more states or a round, and those where it saves 1%.
//! `STSFAIR_SWITCH_ONLY` (comma-separated switch names) measures only those switches.
//!
//! Run it (release profile only; `--test-threads=1` is not needed, the test is alone):
//!
//! ```text
//! STSFAIR_SWITCH_DIR=instances:/tmp/stsfair-switches STSFAIR_SWITCH_RUNS=3 \
//!   cargo test --release -p stsfair --lib dp::switches -- --ignored --nocapture
//! STSFAIR_SWITCH_DIR= STSFAIR_SWITCH_ROUNDS=/tmp/gavel-multi-10000.json \
//!   cargo test --release -p stsfair --features highs --lib dp::switches -- --ignored --nocapture
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::Dp;
use crate::formulation::RoundProblem;
use crate::solution::{Solution, Status, objectives_agree};
use crate::solvers::{SolveError, Solver, WarmStart};
use crate::{Instance, RoundScheduler};

/// A threshold no solve reaches. Not `u64::MAX`: `TABLES_PREDICTED * tables_after_states`
/// would overflow in a debug build (in release it wraps to about `u64::MAX` as well).
const NEVER: u64 = u64::MAX / 4;

/// The default DP (`"default"`), the default again as a control, and each switch turned off
/// alone, each with the time limit `cap`.
fn configurations(cap: f64) -> Vec<(&'static str, Dp)> {
    let on = Dp {
        time_limit: Some(cap),
        ..Dp::default()
    };
    let off = |name, dp: Dp| (name, dp);
    vec![
        ("default", on),
        // The default again: its ratios are the noise floor of the times (states: 1 exactly).
        off("none (control)", on),
        off(
            "smooth",
            Dp {
                smooth_after_states: NEVER,
                ..on
            },
        ),
        off(
            "single-tables",
            Dp {
                single_tables_after_states: NEVER,
                ..on
            },
        ),
        off(
            "pair-tables",
            Dp {
                tables_after_states: NEVER,
                ..on
            },
        ),
        off(
            "plain-run-limit",
            Dp {
                plain_run_states: NEVER,
                ..on
            },
        ),
        off(
            "race",
            Dp {
                race_after_states: NEVER,
                ..on
            },
        ),
        off(
            "dense-after",
            Dp {
                dense_after_states: NEVER,
                ..on
            },
        ),
        off(
            "dense-finish",
            Dp {
                dense_finish: false,
                ..on
            },
        ),
    ]
}

/// One configuration's answer on one file.
#[derive(Debug, Clone)]
enum Outcome {
    /// Answered: the objective (`None`: infeasible), the runs' states, whether the dense DP
    /// finished it, and the median time in seconds.
    Answered {
        objective: Option<f64>,
        states: u64,
        dense: bool,
        seconds: f64,
    },
    /// Stopped by the time limit.
    Capped,
    /// Refused, with the error.
    Refused(String),
}

/// The answer of one solve and its time; a solve stopped by the time limit is `Capped`.
fn solve_once(dp: &Dp, problem: &RoundProblem) -> Outcome {
    let start = Instant::now();
    let answer = dp.solve_problem(problem);
    let seconds = start.elapsed().as_secs_f64();
    match answer {
        Ok(Solution {
            status: Status::Feasible { .. },
            ..
        }) => Outcome::Capped,
        Ok(solution) => {
            let stats = solution.stats.dp();
            Outcome::Answered {
                objective: solution.objective,
                states: solution.stats.states().unwrap_or(0),
                dense: stats.is_some_and(|d| d.dense_cells.is_some()),
                seconds,
            }
        }
        Err(e) => Outcome::Refused(e.to_string()),
    }
}

/// The median of `xs` (not empty).
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Solves `problem` `runs` times with each configuration not `skipped`, taking turns (each
/// run starting one configuration later), after one untimed solve of the default; the
/// outcome per configuration (`None` where skipped), its time the median of the runs. A
/// configuration whose states or objective differ between runs of the same problem is
/// reported in `surprises` (the solver is deterministic).
fn measure_file(
    configs: &[(&'static str, Dp)],
    skipped: &[bool],
    problem: &RoundProblem,
    runs: usize,
    surprises: &mut Vec<String>,
) -> Vec<Option<Outcome>> {
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut first: Vec<Option<Outcome>> = vec![None; configs.len()];
    // The first solve of a problem is slower (caches, the allocator's pages): one untimed.
    solve_once(&configs[0].1, problem);
    for run in 0..runs {
        let turn = (0..configs.len()).map(|i| (i + run) % configs.len());
        for (c, (name, dp)) in turn.map(|c| (c, &configs[c])) {
            let stopped = matches!(first[c], Some(Outcome::Capped | Outcome::Refused(_)));
            if skipped[c] || stopped {
                continue;
            }
            let outcome = solve_once(dp, problem);
            if let Outcome::Answered { seconds, .. } = outcome {
                times[c].push(seconds);
            }
            match (&first[c], &outcome) {
                (None, _) => first[c] = Some(outcome),
                (
                    Some(Outcome::Answered {
                        objective, states, ..
                    }),
                    Outcome::Answered {
                        objective: o,
                        states: s,
                        ..
                    },
                ) if objective == o && states == s => {}
                (Some(a), b) => surprises.push(format!("{name}: not deterministic: {a:?} / {b:?}")),
            }
        }
    }
    first
        .into_iter()
        .zip(times)
        .map(|(outcome, times)| match outcome {
            Some(Outcome::Answered {
                objective,
                states,
                dense,
                ..
            }) => Some(Outcome::Answered {
                objective,
                states,
                dense,
                seconds: median(times),
            }),
            other => other,
        })
        .collect()
}

/// One switch's totals over one family.
#[derive(Debug, Default, Clone)]
struct Totals {
    /// Files both the default and the switch off answered.
    compared: usize,
    /// Of those, files whose states differ.
    changed: usize,
    states_on: u64,
    states_off: u64,
    seconds_on: f64,
    seconds_off: f64,
    dense_on: usize,
    dense_off: usize,
    /// Files the default did not answer (refused, or stopped by the time limit), and files
    /// the switch off refused; a file both refuse counts on both sides.
    refused_on: usize,
    refused_off: usize,
    /// Files the switch off was stopped by the time limit on, or skipped after.
    capped: usize,
    /// Files the default answered and the switch off did not (refused, stopped or skipped).
    lost: usize,
}

impl Totals {
    /// Adds one file's outcomes: `on` the default's, `off` the switch's (`None`: skipped).
    fn add(&mut self, on: &Option<Outcome>, off: &Option<Outcome>) {
        // Each side counted on its own: a file both sides refuse counts on both.
        match off {
            None | Some(Outcome::Capped) => self.capped += 1,
            Some(Outcome::Refused(_)) => self.refused_off += 1,
            Some(Outcome::Answered { .. }) => {}
        }
        if !matches!(on, Some(Outcome::Answered { .. })) {
            self.refused_on += 1;
        } else if !matches!(off, Some(Outcome::Answered { .. })) {
            self.lost += 1;
        }
        if let (
            Some(Outcome::Answered {
                states: s0,
                seconds: t0,
                dense: d0,
                ..
            }),
            Some(Outcome::Answered {
                states: s1,
                seconds: t1,
                dense: d1,
                ..
            }),
        ) = (on, off)
        {
            self.compared += 1;
            self.changed += usize::from(s0 != s1);
            self.states_on += s0;
            self.states_off += s1;
            self.seconds_on += t0;
            self.seconds_off += t1;
            self.dense_on += usize::from(*d0);
            self.dense_off += usize::from(*d1);
        }
    }
}

/// The objectives of `name`'s answer and the default's differ (or one is infeasible and the
/// other not): a description, else `None`.
fn differs(name: &str, on: &Option<Outcome>, off: &Option<Outcome>) -> Option<String> {
    match (on, off) {
        (
            Some(Outcome::Answered { objective: a, .. }),
            Some(Outcome::Answered { objective: b, .. }),
        ) => {
            let agree = match (a, b) {
                (Some(a), Some(b)) => objectives_agree(*a, *b),
                (None, None) => true,
                _ => false,
            };
            (!agree).then(|| format!("{name}: objective {b:?}, default {a:?}"))
        }
        _ => None,
    }
}

/// The families of the corpus `spec` (directories separated by `:`): each directory's `.json`
/// files but `index.json`, smallest first, and each subdirectory's likewise.
fn families(spec: &str) -> Vec<(String, Vec<PathBuf>)> {
    let mut out = Vec::new();
    for dir in spec.split(':').filter(|d| !d.is_empty()) {
        let dir = Path::new(dir);
        let mut dirs = vec![dir.to_path_buf()];
        let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        subdirs.sort();
        dirs.extend(subdirs);
        for d in dirs {
            let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(&d)
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .filter(|p| p.file_name().is_some_and(|n| n != "index.json"))
                .map(|p| (std::fs::metadata(&p).map_or(0, |m| m.len()), p))
                .collect();
            files.sort();
            if !files.is_empty() {
                let name = d
                    .file_name()
                    .map_or("?".into(), |n| n.to_string_lossy().into());
                out.push((name, files.into_iter().map(|(_, p)| p).collect()));
            }
        }
    }
    out
}

/// Measures one family: its totals per configuration (index 0, the default, left empty), and
/// the objectives that differ from the default's in `wrong`. `problems` gives each member's
/// label and round problem, in the order measured (a configuration stopped by the time limit
/// skips the family's later members).
fn measure_family(
    configs: &[(&'static str, Dp)],
    problems: impl Iterator<Item = (String, RoundProblem)>,
    runs: usize,
    wrong: &mut Vec<String>,
) -> Vec<Totals> {
    let mut totals = vec![Totals::default(); configs.len()];
    let mut skipped = vec![false; configs.len()];
    for (label, problem) in problems {
        let mut surprises = Vec::new();
        let outcomes = measure_file(configs, &skipped, &problem, runs, &mut surprises);
        for s in surprises {
            wrong.push(format!("{label}: {s}"));
        }
        for (c, (name, _)) in configs.iter().enumerate().skip(1) {
            totals[c].add(&outcomes[0], &outcomes[c]);
            if let Some(d) = differs(name, &outcomes[0], &outcomes[c]) {
                wrong.push(format!("{label}: {d}"));
            }
            if let Some(Outcome::Refused(e)) = &outcomes[c] {
                eprintln!("{name} refused {label}: {e}");
            }
            if matches!(outcomes[c], Some(Outcome::Capped)) {
                eprintln!("{name} capped on {label}: skipped on the rest");
                skipped[c] = true;
            }
        }
        eprintln!("{label}: {:?}", outcomes[0]);
    }
    totals
}

/// The round problems of `files`, each read from its file.
fn file_problems(files: &[PathBuf]) -> impl Iterator<Item = (String, RoundProblem)> + '_ {
    files
        .iter()
        .filter_map(|path| match Instance::from_path(path) {
            Ok(instance) => Some((path.display().to_string(), RoundProblem::new(&instance))),
            Err(_) => {
                eprintln!("skipped (not an instance): {}", path.display());
                None
            }
        })
}

/// The default DP, keeping a copy of every round problem it is given.
struct Recorder {
    dp: Dp,
    seen: Arc<Mutex<Vec<RoundProblem>>>,
}

impl Recorder {
    fn keep(&self, problem: &RoundProblem) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(problem.clone());
        }
    }
}

impl Solver for Recorder {
    fn name(&self) -> &'static str {
        self.dp.name()
    }

    fn solve_problem(&self, problem: &RoundProblem) -> Result<Solution, SolveError> {
        self.keep(problem);
        self.dp.solve_problem(problem)
    }

    fn solve_problem_warm(
        &self,
        problem: &RoundProblem,
        warm: &mut WarmStart,
    ) -> Result<Solution, SolveError> {
        self.keep(problem);
        self.dp.solve_problem_warm(problem, warm)
    }
}

/// Every round problem the round mechanism gives its solver in `rounds` rounds on the instance
/// at `path`, every planned throughput realized: one a round, three in a relaxed round (the
/// infeasible problem, the count problem and the relaxed round). With the feature `highs` the
/// forced jobs are priced by the long-run LP, the first round's too. The run solves each
/// round's own problem warm (from what the last round's solve left), the relaxation's cold; all
/// are measured cold, as files are. A round the default DP cannot plan ends the run.
fn round_problems(path: &Path, rounds: usize) -> Vec<RoundProblem> {
    let instance = Instance::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorder = Recorder {
        dp: Dp::default(),
        seen: Arc::clone(&seen),
    };
    let scheduler = RoundScheduler::new(&instance, recorder);
    #[cfg(feature = "highs")]
    let scheduler = scheduler.with_service_prices(crate::bound::LongRunPrices::default());
    let mut scheduler = scheduler;
    for round in 0..rounds {
        let planned = scheduler
            .plan()
            .and_then(|plan| scheduler.report_planned(&plan));
        if let Err(e) = planned {
            eprintln!("{}: round {round} not planned: {e}", path.display());
            break;
        }
    }
    seen.lock().map(|s| s.clone()).unwrap_or_default()
}

/// A ratio off / on as text ("-" without a denominator).
fn ratio(off: f64, on: f64) -> String {
    if on > 0.0 {
        format!("{:.3}", off / on)
    } else {
        "-".into()
    }
}

/// The markdown row of `switch` off on `family`.
fn row(family: &str, switch: &str, t: &Totals) -> String {
    format!(
        "| {family} | {switch} | {} | {} | {} | {} | {} | {:.4} | {:.4} | {} | {}/{} | \
         {}/{} | {} |",
        t.compared,
        t.changed,
        t.states_on,
        t.states_off,
        ratio(t.states_off as f64, t.states_on as f64),
        t.seconds_on,
        t.seconds_off,
        ratio(t.seconds_off, t.seconds_on),
        t.dense_on,
        t.dense_off,
        t.refused_on,
        t.refused_off,
        t.capped,
    )
}

/// Whether turning a switch off made a family worse (`Some(true)`: 1% more states, or a round
/// the default answered and it did not), better (`Some(false)`: 1% fewer states), or neither
/// (`None`, also where no round was compared).
fn verdict(t: &Totals) -> Option<bool> {
    if t.lost > 0 {
        return Some(true);
    }
    if t.compared == 0 || t.states_on == 0 {
        return None;
    }
    let ratio = t.states_off as f64 / t.states_on as f64;
    if ratio >= 1.01 {
        Some(true)
    } else if ratio <= 0.99 {
        Some(false)
    } else {
        None
    }
}

/// The table over every family of `all` (per family, per configuration): per switch, the
/// families where turning it off cost 1% more states or a round, those where it saved 1%, and
/// the total states on and off over the rounds both answered. The control row is left out
/// (its states are equal by construction).
fn summary(configs: &[(&'static str, Dp)], all: &[Vec<Totals>]) -> String {
    let mut out = format!(
        "over {} families: families where off is worse (1% more states, or a round the default \
         answered and off did not) / better (1% fewer)\n\n| switch off | worse | better | states on | states off | states ratio |\n\
         |---|---|---|---|---|---|",
        all.len()
    );
    for (c, (name, _)) in configs.iter().enumerate().skip(2) {
        let verdicts: Vec<Option<bool>> = all.iter().map(|f| verdict(&f[c])).collect();
        let on: u64 = all.iter().map(|f| f[c].states_on).sum();
        let off: u64 = all.iter().map(|f| f[c].states_off).sum();
        out.push_str(&format!(
            "\n| {name} | {} | {} | {on} | {off} | {} |",
            verdicts.iter().filter(|v| **v == Some(true)).count(),
            verdicts.iter().filter(|v| **v == Some(false)).count(),
            ratio(off as f64, on as f64),
        ));
    }
    out
}

/// Reads the environment variable `name`, or `default`.
fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

#[test]
#[ignore = "a measurement of minutes: see the module's doc for the command"]
fn regime_switches() {
    let default_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/instances");
    let spec = env_or("STSFAIR_SWITCH_DIR", default_dir);
    let runs: usize = env_or("STSFAIR_SWITCH_RUNS", "3").parse().expect("runs");
    let cap: f64 = env_or("STSFAIR_SWITCH_CAP", "60").parse().expect("cap");
    let only = env_or("STSFAIR_SWITCH_ONLY", "");
    let configs: Vec<_> = configurations(cap)
        .into_iter()
        .enumerate()
        .filter(|(i, (name, _))| *i <= 1 || only.is_empty() || only.split(',').any(|o| o == *name))
        .map(|(_, c)| c)
        .collect();
    let mut wrong = Vec::new();
    let mut rows = Vec::new();
    let mut all: Vec<Vec<Totals>> = Vec::new();
    // A family's rows of the per-family table, and its totals for the summary.
    let mut tabulate = |label: String, totals: Vec<Totals>| {
        for (c, (name, _)) in configs.iter().enumerate().skip(1) {
            rows.push(row(&label, name, &totals[c]));
        }
        all.push(totals);
    };
    for (family, files) in families(&spec) {
        let problems = file_problems(&files);
        let totals = measure_family(&configs, problems, runs.max(1), &mut wrong);
        tabulate(format!("{family} ({})", files.len()), totals);
    }
    let round_count: usize = env_or("STSFAIR_SWITCH_ROUND_COUNT", "10")
        .parse()
        .expect("round count");
    for file in env_or("STSFAIR_SWITCH_ROUNDS", "")
        .split(':')
        .filter(|f| !f.is_empty())
    {
        let path = Path::new(file);
        let problems = round_problems(path, round_count);
        let count = problems.len();
        let family = path
            .file_stem()
            .map_or("?".into(), |n| n.to_string_lossy().into_owned());
        let labelled = problems
            .into_iter()
            .enumerate()
            .map(|(i, p)| (format!("{family} solve {i}"), p));
        let totals = measure_family(&configs, labelled, runs.max(1), &mut wrong);
        tabulate(format!("{family} rounds ({count})"), totals);
    }
    for w in &wrong {
        println!("DIFFERS: {w}");
    }
    println!("median of {runs} runs per solve; time limit {cap} s; ratios are off / on\n");
    println!(
        "| family (files) | switch off | compared | states changed | states on | states off | \
         states ratio | time on (s) | time off (s) | time ratio | dense on/off | \
         refused on/off | capped |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    println!("\n{}", summary(&configs, &all));
    assert!(
        wrong.is_empty(),
        "{} answers differ: {wrong:#?}",
        wrong.len()
    );
}
