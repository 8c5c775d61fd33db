//! Writes the instance manifest of a folder (`instances/index.json` for the shipped instances;
//! docs/format.md, "Instance manifest"): every `*.json` instance with its family, size, status,
//! reference optimum and proofs. Each instance is solved by the DP (its answer checked by
//! `verify`) and by the ILP (HiGHS, gaps 0, feasibility tolerance 1e-9, presolve off); the two
//! must agree, or nothing is written and the run fails.
//!
//! ```sh
//! cargo run --release --features highs --example manifest              # instances/
//! cargo run --release --features highs --example manifest -- DIR --no-ilp
//! ```
//!
//! `--no-ilp` proves by the DP and `verify` alone (for folders of rounds too large for HiGHS).

use std::path::PathBuf;
use std::process::ExitCode;

use stsfair::manifest::{Entry, MANIFEST_FILE, MANIFEST_FORMAT, Manifest, PROOF_DP, PROOF_ILP};
use stsfair::solution::objectives_agree;
use stsfair::{Dp, Ilp, Instance, Solution, Solver, Status, verify};

/// The objective of an exact answer (`None`: infeasible); an answer stopped early is an error.
fn exact(solver: &str, solution: &Solution) -> Result<Option<f64>, String> {
    match solution.status {
        Status::Optimal => Ok(solution.objective),
        Status::Infeasible { .. } => Ok(None),
        Status::Feasible { .. } => Err(format!("{solver} stopped before proving its answer")),
    }
}

fn run() -> Result<(), String> {
    let mut dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/instances"));
    let mut ilp = true;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--no-ilp" => ilp = false,
            a if a.starts_with('-') => return Err(format!("unknown flag {a}")),
            a => dir = PathBuf::from(a),
        }
    }
    let files =
        stsfair::bench::instance_files(std::slice::from_ref(&dir)).map_err(|e| e.to_string())?;
    let mut instances = Vec::new();
    for path in &files {
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| format!("{}: not a UTF-8 file name", path.display()))?;
        let instance = Instance::from_path(path).map_err(|e| format!("{file}: {e}"))?;
        let dp = Dp::default()
            .solve(&instance)
            .map_err(|e| format!("{file}: {e}"))?;
        verify(&instance, &dp)
            .map_err(|e| format!("{file}: verify refuses the DP's answer: {e}"))?;
        let objective = exact("dp", &dp).map_err(|e| format!("{file}: {e}"))?;
        let mut proofs = vec![PROOF_DP.to_string()];
        if ilp {
            let answer = Ilp::default()
                .with_presolve(false)
                .solve(&instance)
                .map_err(|e| format!("{file}: {e}"))?;
            let theirs = exact("ilp", &answer).map_err(|e| format!("{file}: {e}"))?;
            let same = match (objective, theirs) {
                (Some(a), Some(b)) => objectives_agree(a, b),
                (None, None) => true,
                _ => false,
            };
            if !same {
                return Err(format!(
                    "{file}: the DP says {objective:?}, the ILP {theirs:?}"
                ));
            }
            proofs.insert(0, PROOF_ILP.to_string());
        }
        eprintln!("{file}: {objective:?} ({})", proofs.join(", "));
        instances.push(Entry::of(file, &instance, objective, proofs));
    }
    let manifest = Manifest {
        format: MANIFEST_FORMAT.to_string(),
        instances,
    };
    let out = dir.join(MANIFEST_FILE);
    std::fs::write(&out, manifest.to_json()).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("wrote {}", out.display());
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("manifest: {e}");
            ExitCode::FAILURE
        }
    }
}
