//! `export`: the round problem's ILP as an MPS or LP file (`stsfair::solvers::export_ilp`,
//! feature `highs`).

use std::path::PathBuf;

use clap::Args;

use crate::Failure;
#[cfg(feature = "highs")]
use crate::solve::load;

#[derive(Args)]
pub struct ExportArgs {
    /// Instance file (stsfair/1 JSON).
    file: PathBuf,
    /// Model file format: mps (free MPS) or lp (CPLEX LP).
    #[arg(long, value_parser = ["mps", "lp"], default_value = "mps")]
    format: String,
    /// Write the model to this file instead of standard output.
    #[arg(long, value_name = "PATH")]
    out: Option<PathBuf>,
}

#[cfg(feature = "highs")]
pub fn export(args: ExportArgs) -> Result<u8, Failure> {
    use stsfair::RoundProblem;
    use stsfair::solvers::{ModelFormat, export_ilp};

    let format = ModelFormat::from_name(&args.format).ok_or_else(|| {
        Failure::input(format!(
            "--format must be mps or lp (got {:?})",
            args.format
        ))
    })?;
    let instance = load(&args.file)?;
    let problem = RoundProblem::new(&instance);
    let model = export_ilp(&problem, format).map_err(Failure::other)?;
    match &args.out {
        Some(path) => {
            std::fs::write(path, &model.text).map_err(|e| Failure::cannot_write(path, e))?;
            eprintln!(
                "{}: {} columns, {} rows written to {}",
                args.file.display(),
                model.columns,
                model.rows,
                path.display()
            );
        }
        None => out!("{}", model.text),
    }
    Ok(0)
}

#[cfg(not(feature = "highs"))]
pub fn export(_args: ExportArgs) -> Result<u8, Failure> {
    Err(Failure::input(
        "export needs HiGHS, which writes the model: build stsfair with feature highs (the default \
         of stsfair-cli)",
    ))
}
