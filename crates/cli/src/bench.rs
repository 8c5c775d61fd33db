//! `bench`: several solvers on the same instances, side by side (flags to `stsfair::bench`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use stsfair::bench::{self, Outcome, Row};
use stsfair::manifest::{Check, Entry, MANIFEST_FILE, Manifest};
use stsfair::{Instance, Solution, SolveError, SolverConfig};

use crate::Failure;
use crate::solve::load;

#[derive(Args)]
pub struct BenchArgs {
    /// Instance files, or directories whose *.json files are all taken (but index.json). Answers
    /// are checked against the manifest index.json of each file's folder when it lists the file
    /// (column `manifest`; exit 1 when one differs, each difference on stderr).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Solvers, comma-separated; ratios are to the first.
    #[arg(long, value_delimiter = ',', default_value = "dp,ilp")]
    solvers: Vec<String>,
    /// Runs per solver and instance (1 to 100,000); the median time is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Time limit in seconds per solve (ilp, dp, dp-dense).
    #[arg(long)]
    time_limit: Option<f64>,
    /// Also write the table as CSV to this file.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Time every run in a process of its own (`stsfair solve FILE --solver S --json`, its
    /// `stats.seconds`), as the performance targets read solver time (docs/performance.md, "Where
    /// the targets stand"): in-process runs after the first find the allocator's pages and the
    /// caches warm, a fresh process does not.
    #[arg(long)]
    processes: bool,
}

pub fn bench(args: BenchArgs) -> Result<u8, Failure> {
    // Every run's time is kept for the median; a bound keeps a mistyped count from running
    // for months.
    if args.runs == 0 || args.runs > 100_000 {
        return Err(Failure::input(format!(
            "--runs must be between 1 and 100,000 (got {})",
            args.runs
        )));
    }
    if let Some(t) = args.time_limit
        && !(t > 0.0 && t.is_finite())
    {
        return Err(Failure::input(format!(
            "--time-limit must be a finite number > 0 (got {t})"
        )));
    }
    let mut config = SolverConfig::default();
    config.time_limit = args.time_limit;
    let mut list = Vec::new();
    for name in &args.solvers {
        let Some(kind) = crate::solve::solver_kind(name) else {
            return Err(Failure::input(format!(
                "--solvers must name solvers among {} (got {name:?})",
                crate::solve::solver_names()
            )));
        };
        list.push(kind.build(&config));
    }
    let files = bench::instance_files(&args.paths).map_err(Failure::input)?;
    let header = header(&args.solvers);
    outln!("{}", header.join("  "));
    // The CSV's cells are the table's without the padding (the header's too).
    let mut csv = String::new();
    let _ = writeln!(csv, "{}", csv_line(&header));
    let mut disagree = false;
    let mut manifests = Manifests::default();
    let exe = if args.processes {
        Some(std::env::current_exe().map_err(|e| {
            Failure::other(format!("--processes: cannot find this program's path: {e}"))
        })?)
    } else {
        None
    };
    for path in &files {
        let instance = load(path)?;
        let name = bench::display_name(path, &instance);
        let row = match &exe {
            None => bench::run_instance(&name, &instance, &list, args.runs),
            Some(exe) => {
                let outcomes = list
                    .iter()
                    .map(|s| {
                        let outcome = in_processes(
                            exe,
                            path,
                            &instance,
                            s.name(),
                            args.runs,
                            args.time_limit,
                        );
                        (s.name().to_string(), outcome)
                    })
                    .collect();
                Row::new(&instance, &name, outcomes)
            }
        };
        disagree |= row.agreement() == Some(false);
        let (listed, differences) = manifests.check(path, &instance, &row)?;
        disagree |= !differences.is_empty();
        let cells = cells(&row, listed);
        outln!("{}", cells.join("  "));
        let _ = writeln!(csv, "{}", csv_line(&cells));
        // Every solver error names its solver.
        for (_, o) in &row.outcomes {
            if let Outcome::Failed(e) = o {
                eprintln!("  {}: {e}", row.instance);
            }
        }
        for difference in &differences {
            eprintln!("  {}: {difference}", row.instance);
        }
    }
    if let Some(file) = &args.csv {
        std::fs::write(file, csv).map_err(|e| Failure::cannot_write(file, e))?;
    }
    Ok(if disagree { 1 } else { 0 })
}

/// `runs` solves of `path` by `solver`, each in a fresh `exe solve ... --json` process: the
/// median of their `stats.seconds` and the last answer (read back against `instance`, as
/// `verify` reads a solution). A run that fails (exit 1 or 2) ends the solver's runs with its
/// message, as a failed in-process run does.
fn in_processes(
    exe: &Path,
    path: &Path,
    instance: &Instance,
    solver: &'static str,
    runs: usize,
    time_limit: Option<f64>,
) -> Outcome {
    let failed = |message: String| Outcome::Failed(SolveError::Backend { solver, message });
    let mut seconds = Vec::with_capacity(runs);
    let mut last: Option<Solution> = None;
    for _ in 0..runs {
        let mut command = Command::new(exe);
        command
            .arg("solve")
            .arg(path)
            .args(["--solver", solver, "--json"]);
        if let Some(t) = time_limit {
            command.args(["--time-limit", &t.to_string()]);
        }
        let output = match command.output() {
            Ok(o) => o,
            Err(e) => return failed(format!("cannot run {}: {e}", exe.display())),
        };
        // 0: optimal or feasible, 3: infeasible (FORMAT.md); both print the solution.
        if !matches!(output.status.code(), Some(0 | 3)) {
            // Its message names the program and the solver, as this one's will.
            let stderr = String::from_utf8_lossy(&output.stderr);
            let message = stderr.trim();
            let message = message.strip_prefix("stsfair: ").unwrap_or(message);
            let message = message
                .strip_prefix(solver)
                .and_then(|m| m.strip_prefix(": "))
                .unwrap_or(message);
            return failed(format!("a run exited with {}: {message}", output.status));
        }
        let text = String::from_utf8_lossy(&output.stdout);
        match Solution::from_json(instance, &text) {
            Ok(s) => {
                seconds.push(s.stats.seconds);
                last = Some(s);
            }
            Err(e) => return failed(format!("a run's solution is unreadable: {e}")),
        }
    }
    match (last, bench::median(&seconds)) {
        (Some(s), Some(m)) => Outcome::Solved {
            status: s.status,
            objective: s.objective,
            median_seconds: m,
            runs: seconds.len(),
        },
        _ => failed("no run was made".into()),
    }
}

/// What the manifests say of a row: `Some(true)` when the instance is listed and every decided
/// answer agrees with it, `Some(false)` when one differs, `None` when the instance is not listed
/// or no answer decides.
type Listed = Option<bool>;

/// The manifest (`index.json`) of each folder an instance comes from, read once.
#[derive(Default)]
struct Manifests {
    by_folder: HashMap<PathBuf, Option<Manifest>>,
}

impl Manifests {
    /// The entry of `path` in its folder's manifest; `None` when the folder has no manifest or
    /// it does not list the file. A manifest that cannot be read is invalid input (exit 2).
    fn entry(&mut self, path: &Path) -> Result<Option<(PathBuf, Entry)>, Failure> {
        let folder = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let file = folder.join(MANIFEST_FILE);
        if !self.by_folder.contains_key(&folder) {
            let manifest = if file.is_file() {
                Some(Manifest::from_path(&file).map_err(Failure::input)?)
            } else {
                None
            };
            self.by_folder.insert(folder.clone(), manifest);
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let entry = self
            .by_folder
            .get(&folder)
            .and_then(Option::as_ref)
            .zip(name)
            .and_then(|(m, name)| m.entry(&name).cloned());
        Ok(entry.map(|e| (file, e)))
    }

    /// The row's answers against the manifest: the table's cell and every difference, each
    /// naming the solver and the manifest.
    fn check(
        &mut self,
        path: &Path,
        instance: &Instance,
        row: &Row,
    ) -> Result<(Listed, Vec<String>), Failure> {
        let Some((file, entry)) = self.entry(path)? else {
            return Ok((None, Vec::new()));
        };
        let mut differences = Vec::new();
        if let Err(e) = entry.describes(instance) {
            differences.push(format!("{}: {e}", file.display()));
        }
        let mut decided = false;
        for (solver, outcome) in &row.outcomes {
            match entry.check(outcome) {
                Check::Agrees => decided = true,
                Check::Differs(why) => {
                    differences.push(format!("{solver} {why} ({})", file.display()));
                }
                Check::Undecided => {}
            }
        }
        let listed = if !differences.is_empty() {
            Some(false)
        } else {
            decided.then_some(true)
        };
        Ok((listed, differences))
    }
}

/// A table line as CSV: the cells without their padding, comma-separated.
fn csv_line(cells: &[String]) -> String {
    cells.iter().map(|c| c.trim()).collect::<Vec<_>>().join(",")
}

fn header(solvers: &[String]) -> Vec<String> {
    let mut h = vec![
        format!("{:<28}", "instance"),
        format!("{:>7}", "jobs"),
        format!("{:>5}", "types"),
    ];
    for s in solvers {
        h.push(format!("{:>12}", format!("{s}_status")));
        h.push(format!("{:>12}", format!("{s}_s")));
    }
    let first = solvers.first().map_or("", String::as_str);
    for s in solvers.iter().skip(1) {
        h.push(format!("{:>10}", format!("{s}/{first}")));
    }
    h.push(format!("{:>6}", "agree"));
    h.push(format!("{:>18}", "objective"));
    h.push(format!("{:>8}", "manifest"));
    h
}

fn cells(row: &Row, listed: Listed) -> Vec<String> {
    let mut c = vec![
        format!("{:<28}", row.instance),
        format!("{:>7}", row.jobs),
        format!("{:>5}", row.types),
    ];
    for (_, o) in &row.outcomes {
        c.push(format!("{:>12}", o.status_word()));
        c.push(format!(
            "{:>12}",
            o.seconds()
                .map_or_else(|| "-".into(), |s| format!("{s:.6}"))
        ));
    }
    for i in 1..row.outcomes.len() {
        c.push(format!(
            "{:>10}",
            row.ratio(i)
                .map_or_else(|| "-".into(), |r| format!("{r:.1}"))
        ));
    }
    let agree = match row.agreement() {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    };
    c.push(format!("{agree:>6}"));
    let objective = row.outcomes.iter().find_map(|(_, o)| match o {
        Outcome::Solved {
            objective: Some(x), ..
        } => Some(*x),
        _ => None,
    });
    c.push(format!(
        "{:>18}",
        objective.map_or_else(|| "-".into(), |x| format!("{x:.9}"))
    ));
    let listed = match listed {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    };
    c.push(format!("{listed:>8}"));
    c
}
