//! Replays the kept fuzz corpus (`tests/fuzz-corpus/{parse,solve,solution}/*`)
//! through the very checks the fuzz targets run (`fuzz/checks.rs`), so every input that once
//! crashed a target, and the seeds that reach each part of it, stay checked by `cargo test`.
//! The targets themselves and how they were run: docs/reliability.md.

use std::path::Path;

#[path = "../fuzz/checks.rs"]
mod checks;

/// Every file of `tests/fuzz-corpus/<dir>`, sorted by name.
fn corpus(dir: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-corpus")
        .join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect()
}

#[test]
fn parse_corpus_passes_the_parse_checks() {
    let files = corpus("parse");
    assert!(files.len() >= 5, "the parse corpus is missing");
    for (name, data) in &files {
        eprintln!("parse {name}");
        checks::check_parse(data);
    }
}

#[test]
fn solution_corpus_passes_the_solution_checks() {
    let files = corpus("solution");
    assert!(files.len() >= 5, "the solution corpus is missing");
    for (name, data) in &files {
        eprintln!("solution {name}");
        checks::check_solution(data);
    }
}

#[test]
fn solve_corpus_passes_the_solve_checks() {
    let files = corpus("solve");
    assert!(files.len() >= 5, "the solve corpus is missing");
    let mut solvable = 0;
    for (name, data) in &files {
        eprintln!("solve {name}");
        if checks::decode_instance(data).is_some() {
            solvable += 1;
        }
        checks::check_solve(data);
    }
    // The corpus must reach the solvers, not only the validator.
    assert!(
        solvable * 2 >= files.len(),
        "only {solvable} of {} decode to valid instances",
        files.len()
    );
}

/// Replays one input file named by `STSFAIR_FUZZ_INPUT` (a crash or slow unit the fuzzer wrote),
/// printing the decoded instance and each solver's time, for turning a finding into a test:
/// `STSFAIR_FUZZ_INPUT=fuzz/artifacts/solve-crash-... cargo test --release --test fuzz_regressions -- --ignored --nocapture`.
#[test]
#[ignore = "a tool: replays the file named by STSFAIR_FUZZ_INPUT"]
fn replay_one_input() {
    let Ok(path) = std::env::var("STSFAIR_FUZZ_INPUT") else {
        eprintln!("set STSFAIR_FUZZ_INPUT to a fuzz input file");
        return;
    };
    let data = std::fs::read(&path).unwrap();
    if let Some(instance) = checks::decode_instance(&data) {
        println!("{}", instance.to_json());
        for kind in [
            stsfair::SolverKind::Dp,
            stsfair::SolverKind::DenseDp,
            stsfair::SolverKind::BruteForce,
        ] {
            let solver = kind.name();
            let start = std::time::Instant::now();
            let config = stsfair::solvers::SolverConfig::default();
            let result = kind.build(&config).solve(&instance);
            println!(
                "{solver}: {:.3} s: {:?}",
                start.elapsed().as_secs_f64(),
                result.map(|s| (s.status, s.objective))
            );
        }
    }
    let start = std::time::Instant::now();
    checks::check_solve(&data);
    checks::check_parse(&data);
    println!("checks: {:.3} s", start.elapsed().as_secs_f64());
}
