//! The round problem's ILP as a model file (MPS or CPLEX LP), for other MIP solvers.
//!
//! The model written is the one the `ilp` solver hands HiGHS, built by the same code as
//! [`build_ilp_model`] but with the objective in the instance's units instead of scaled by a power
//! of two; the columns and rows are named, and HiGHS writes it (`Highs_writeModel`), so the file
//! holds the solved model's columns, rows, coefficients (written with 17 significant digits,
//! which round-trip every f64) and sense (maximize).
//!
//! Names (in the order of [`build_ilp_model`]):
//! - row `cap_<type>` per GPU type: the units of that type in use, at most its capacity;
//! - row `job_<j>_<id>` per job with an admissible option: at most one option (exactly one when
//!   the job is forced);
//! - column `x_<j>_<id>_<type>_<slot>` per admissible option: the job runs in a slot of `<slot>`
//!   units (per worker) on a GPU of `<type>`.
//!
//! `<j>` is the job's index in the instance, which keeps names unique whatever the ids are; ids
//! and type names are written with every character outside `A-Z a-z 0-9 _ .` replaced by `_` and
//! cut to 64 characters, which both formats accept. GPU type names are unique once sanitized or
//! get their index appended (`cap_<type>_<k>`).
//!
//! [`build_ilp_model`]: super::build_ilp_model

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use super::SolveError;
use super::ilp::unscaled_problem;
use crate::formulation::RoundProblem;
use crate::highs_lp::{self, Sense};

const NAME: &str = "export";

/// The longest id or type name kept in a column or row name (before the index and prefix).
const NAME_CHARS: usize = 64;

/// A model file format HiGHS writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelFormat {
    /// Free-format MPS (`OBJSENSE MAX`, integer columns between `MARKER INTORG/INTEND`).
    Mps,
    /// CPLEX LP format (`maximize`, a `binary` or `general` section).
    Lp,
}

impl ModelFormat {
    /// The file extension HiGHS reads the format from ("mps", "lp").
    pub fn extension(self) -> &'static str {
        match self {
            ModelFormat::Mps => "mps",
            ModelFormat::Lp => "lp",
        }
    }

    /// The format a name stands for ("mps", "lp"); `None` otherwise.
    pub fn from_name(name: &str) -> Option<ModelFormat> {
        match name {
            "mps" => Some(ModelFormat::Mps),
            "lp" => Some(ModelFormat::Lp),
            _ => None,
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedModel {
    /// The model file's text.
    pub text: String,
    /// Columns (binaries), one per admissible option.
    pub columns: usize,
    /// Rows: one per GPU type and one per job with an admissible option.
    pub rows: usize,
}

fn backend(message: impl Into<String>) -> SolveError {
    SolveError::Backend {
        solver: NAME,
        message: message.into(),
    }
}

/// `text` with every character outside `A-Z a-z 0-9 _ .` replaced by `_`, cut to
/// [`NAME_CHARS`] characters; "_" when empty.
fn sanitize(text: &str) -> String {
    let s: String = text
        .chars()
        .take(NAME_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "_".to_string() } else { s }
}

/// The column and row names of the model of [`build_ilp_model`](super::build_ilp_model), in its
/// order: columns are the admissible options in job order, rows one per GPU type, then one per
/// job with an option (see the module docs). Every name is unique. O(sum_j |O_j|).
pub fn ilp_names(problem: &RoundProblem) -> (Vec<String>, Vec<String>) {
    let types: Vec<String> = (0..problem.types())
        .map(|k| sanitize(&problem.type_name(k)))
        .collect();
    // Two type names may meet once sanitized ("a-b", "a b"): then every type carries its index.
    let mut sorted = types.clone();
    sorted.sort();
    sorted.dedup();
    let types: Vec<String> = if sorted.len() == types.len() {
        types
    } else {
        types
            .into_iter()
            .enumerate()
            .map(|(k, t)| format!("{t}_{k}"))
            .collect()
    };
    let mut rows: Vec<String> = types.iter().map(|t| format!("cap_{t}")).collect();
    let mut columns = Vec::new();
    for (j, job) in problem.jobs.iter().enumerate() {
        if job.options.is_empty() {
            continue;
        }
        let id = sanitize(&problem.job_name(j));
        rows.push(format!("job_{j}_{id}"));
        for o in &job.options {
            // Options of a job differ in (type, slot), so the column names are unique.
            columns.push(format!("x_{j}_{id}_{}_{}", types[o.gpu], o.slot));
        }
    }
    (columns, rows)
}

/// A directory of its own under the system's temporary directory, removed when dropped: HiGHS
/// writes to a path and picks the format by its extension.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> Result<ScratchDir, SolveError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        for _ in 0..100 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let dir = base.join(format!("stsfair-export-{}-{n}-{nanos}", std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(ScratchDir(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(backend(format!(
                        "cannot create a directory under {}: {e}",
                        base.display()
                    )));
                }
            }
        }
        Err(backend(format!(
            "cannot create a fresh directory under {}",
            base.display()
        )))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The ILP the `ilp` solver builds for `problem` ([`build_ilp_model`](super::build_ilp_model)),
/// named by [`ilp_names`] and written by HiGHS in `format`, with the objective in the instance's
/// units (the solver's model scales it by a power of two, `docs/ilp.md`, "Scaling"; the export
/// builds the same model without that scale): the file's optimum is the round's. O(sum_j |O_j|) time and memory.
///
/// A round in which no job has an admissible option has no column: the model then holds only the
/// capacity rows, and its optimum, 0, is the round's (all idle). A forced job always has an
/// admissible option, so an infeasible round exports an infeasible model.
///
/// Fails ([`SolveError::TooLarge`]) when the model is past HiGHS's 32-bit indices, or
/// ([`SolveError::Backend`]) when HiGHS refuses it or cannot write it.
pub fn export_ilp(
    problem: &RoundProblem,
    format: ModelFormat,
) -> Result<ExportedModel, SolveError> {
    let pb = unscaled_problem(problem)?;
    let (columns, rows) = ilp_names(problem);
    let dir = ScratchDir::new()?;
    let path = dir.0.join(format!("round.{}", format.extension()));
    highs_lp::write(pb, Sense::Maximise, &columns, &rows, &path)
        .map_err(|e| backend(e.to_string()))?;
    let text = std::fs::read_to_string(&path)
        .map_err(|e| backend(format!("cannot read back {}: {e}", path.display())))?;
    Ok(ExportedModel {
        text,
        columns: columns.len(),
        rows: rows.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized_and_unique() {
        assert_eq!(sanitize("resnet-18 (bs 16)"), "resnet_18__bs_16_");
        assert_eq!(sanitize(""), "_");
        assert_eq!(sanitize("é"), "_");
        assert_eq!(sanitize(&"a".repeat(100)).len(), NAME_CHARS);
    }
}
