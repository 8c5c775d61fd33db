//! The `stsfair` command: thin glue from flags to library calls. Each subcommand lives in its
//! own file; none holds solver logic.
//!
//! Exit codes (FORMAT.md): 0 optimal or feasible; 3 infeasible; 2 invalid input or usage;
//! 1 any other failure.

#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `print!` for the command's output, which ends the process quietly when standard output has
/// been closed (`stsfair gen ... | head`): the reader took what it wanted, so exit 0 with nothing
/// on stderr, as ripgrep does. `print!` would panic there. Any other write error is reported
/// and ends the process with exit 1.
macro_rules! out {
    ($($arg:tt)*) => { $crate::write_out(format_args!($($arg)*), false) };
}

/// [`out!`] with a newline, for `println!`.
macro_rules! outln {
    () => { $crate::write_out(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::write_out(format_args!($($arg)*), true) };
}

/// The body of [`out!`] and [`outln!`].
fn write_out(args: std::fmt::Arguments<'_>, newline: bool) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(args).and_then(|()| {
        if newline {
            stdout.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    if let Err(e) = written {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("stsfair: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

// The simulations and the DP allocate many small, short-lived vectors (placements per round,
// LP entries per allocation, DP sub-states); mimalloc serves them faster than glibc's malloc.
// The library leaves the allocator to its users; this is the CLI's choice. Built without
// transparent huge pages (the `no_thp` feature: mimalloc does not madvise its arenas huge):
// a fresh `stsfair solve` of a 10,000-job round took 26-27 ms without them, and with them one
// process in four or five took 36-137 ms (the first touches of 2 MiB pages); the same in-process
// (docs/performance.md, "Huge pages"). Where the kernel makes every mapping huge
// (`/sys/kernel/mm/transparent_hugepage/enabled` = always), MIMALLOC_ALLOW_THP=0 does the same.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bench;
mod bound;
mod export;
mod r#gen;
mod number;
mod predict;
mod rounds;
mod simulate;
mod solve;

/// Exact spatiotemporal-fair round scheduling for shared heterogeneous GPU clusters.
#[derive(Parser)]
#[command(name = "stsfair", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check an instance file against the format; exit 0 if valid, 2 if not.
    Validate(solve::ValidateArgs),
    /// Solve one round of an instance file.
    Solve(solve::SolveArgs),
    /// Check a solution file against its instance, recomputing everything from the instance.
    Verify(solve::VerifyArgs),
    /// Run the fair round mechanism for R rounds on an instance (times taken as realized).
    Rounds(rounds::RoundsArgs),
    // Boxed: its many policy flags make it several times the size of the other commands.
    /// Simulate scheduling policies on a generated workload or a replayed Gavel trace.
    Simulate(Box<simulate::SimulateArgs>),
    /// Generate a seeded synthetic or Gavel-derived instance.
    Gen(r#gen::GenArgs),
    /// Evaluate the co-location predictor on held-out measured pairs.
    PredictEval(predict::PredictEvalArgs),
    /// Time several solvers on the same instances: medians, ratios, agreement, and every answer
    /// against the folder's manifest (index.json) where it lists the instance.
    Bench(bench::BenchArgs),
    /// The long-run LP bound: the best mean objective per round of any schedule in which every
    /// job reaches a share of lambda on average (exit 3 when none can).
    Bound(bound::BoundArgs),
    /// Write the round problem's ILP, the model `--solver ilp` solves, as an MPS or LP file for
    /// other MIP solvers (columns and rows named after the jobs, GPU types and slots).
    Export(export::ExportArgs),
}

/// A failure with the exit code it maps to.
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    /// Invalid input or usage (exit 2).
    pub fn input(message: impl std::fmt::Display) -> Self {
        Failure {
            code: 2,
            message: message.to_string(),
        }
    }
    /// Any other failure (exit 1).
    pub fn other(message: impl std::fmt::Display) -> Self {
        Failure {
            code: 1,
            message: message.to_string(),
        }
    }
    /// An output file that could not be written (exit 1), naming it.
    pub fn cannot_write(path: &std::path::Path, error: std::io::Error) -> Self {
        Failure::other(format!("cannot write {}: {error}", path.display()))
    }
}

/// The Gavel throughputs of `--throughputs FILE` / `--gavel FILE`, or, with no file, the ones
/// bundled in the binary (so that an installed `stsfair` works from any folder).
pub fn gavel_data(
    path: Option<&std::path::Path>,
) -> Result<stsfair_costs::GavelThroughputs, Failure> {
    use stsfair_costs::{CostError, GavelThroughputs};
    match path {
        None => Ok(GavelThroughputs::bundled()),
        Some(path) => GavelThroughputs::from_path(path).map_err(|e| match e {
            CostError::Io { .. } => Failure::input(e),
            _ => Failure::input(format!("{}: {e}", path.display())),
        }),
    }
}

/// The name of a Gavel data source in messages.
pub fn gavel_source(path: Option<&std::path::Path>) -> String {
    path.map_or_else(
        || "the bundled Gavel data".to_string(),
        |p| p.display().to_string(),
    )
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Validate(a) => solve::validate(a),
        Command::Solve(a) => solve::solve(a),
        Command::Verify(a) => solve::verify(a),
        Command::Simulate(a) => simulate::simulate(*a),
        Command::Rounds(a) => rounds::rounds(a),
        Command::Gen(a) => r#gen::gen_instance(a),
        Command::PredictEval(a) => predict::predict_eval(a),
        Command::Bench(a) => bench::bench(a),
        Command::Bound(a) => bound::bound(a),
        Command::Export(a) => export::export(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("stsfair: {}", solve::one_line(&f.message));
            ExitCode::from(f.code)
        }
    }
}
