//! The exported ILP (`stsfair::solvers::export_ilp`) is the model the `ilp` solver solves: HiGHS
//! reading the MPS or LP file back (`Highs_readModel`) and solving it finds the `ilp` solver's
//! optimum on every shipped instance (`instances/` and `instances/hard/`), and an infeasible
//! round's file is infeasible.
#![cfg(feature = "highs")]

use std::ffi::CString;
use std::path::{Path, PathBuf};

use stsfair::solution::objectives_agree;
use stsfair::solvers::{ModelFormat, export_ilp, ilp_names};
use stsfair::{Ilp, Instance, RoundProblem, Solver, Status};

/// What HiGHS made of a model file: optimal with this objective, or infeasible.
#[derive(Debug, PartialEq)]
enum Read {
    Optimal(f64),
    Infeasible,
}

/// Reads `path` into a fresh HiGHS and solves it exactly (gaps 0, feasibility tolerance 1e-9,
/// presolve off, one thread), on a thread of its own (HiGHS's scheduler is per thread).
fn solve_file(path: &Path) -> Read {
    let path = path.to_path_buf();
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || solve_file_here(&path))
        .expect("a thread starts")
        .join()
        .expect("HiGHS does not panic")
}

fn solve_file_here(path: &Path) -> Read {
    let file = CString::new(path.to_str().expect("a UTF-8 path")).expect("no NUL");
    // SAFETY: `highs` is created here, used only on this thread and destroyed at the end; every
    // string is NUL-terminated and outlives its call.
    unsafe {
        let highs = highs_sys::Highs_create();
        let set_bool = |name: &str, v: i32| {
            let n = CString::new(name).expect("no NUL");
            assert_eq!(
                highs_sys::Highs_setBoolOptionValue(highs, n.as_ptr(), v),
                highs_sys::STATUS_OK
            );
        };
        let set_double = |name: &str, v: f64| {
            let n = CString::new(name).expect("no NUL");
            assert_eq!(
                highs_sys::Highs_setDoubleOptionValue(highs, n.as_ptr(), v),
                highs_sys::STATUS_OK
            );
        };
        set_bool("output_flag", 0);
        set_double("mip_rel_gap", 0.0);
        set_double("mip_abs_gap", 0.0);
        set_double("mip_feasibility_tolerance", 1e-9);
        let presolve = CString::new("presolve").expect("no NUL");
        let off = CString::new("off").expect("no NUL");
        assert_eq!(
            highs_sys::Highs_setStringOptionValue(highs, presolve.as_ptr(), off.as_ptr()),
            highs_sys::STATUS_OK
        );
        let threads = CString::new("threads").expect("no NUL");
        assert_eq!(
            highs_sys::Highs_setIntOptionValue(highs, threads.as_ptr(), 1),
            highs_sys::STATUS_OK
        );
        let read = highs_sys::Highs_readModel(highs, file.as_ptr());
        assert_eq!(read, highs_sys::STATUS_OK, "HiGHS reads {}", path.display());
        let run = highs_sys::Highs_run(highs);
        let status = highs_sys::Highs_getModelStatus(highs);
        let objective = highs_sys::Highs_getObjectiveValue(highs);
        highs_sys::Highs_destroy(highs);
        assert_ne!(
            run,
            highs_sys::STATUS_ERROR,
            "HiGHS runs {}",
            path.display()
        );
        match status {
            highs_sys::MODEL_STATUS_OPTIMAL => Read::Optimal(objective),
            highs_sys::MODEL_STATUS_INFEASIBLE
            | highs_sys::MODEL_STATUS_UNBOUNDED_OR_INFEASIBLE => Read::Infeasible,
            other => panic!("{}: HiGHS ended with model status {other}", path.display()),
        }
    }
}

fn shipped() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances");
    // Every *.json but the manifests (index.json), the hard rounds of instances/hard/ included.
    let files = stsfair::bench::instance_files(&[dir.clone(), dir.join("hard")])
        .expect("instances/ is readable");
    assert!(files.len() >= 17, "the shipped instances are found");
    files
}

/// A fresh directory for one test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stsfair-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn check_round_trip(format: ModelFormat, test: &str) {
    let dir = scratch(test);
    let ilp = Ilp::default().with_presolve(false);
    for path in shipped() {
        let instance = Instance::from_path(&path).expect("a shipped instance is valid");
        let problem = RoundProblem::new(&instance);
        let solution = ilp
            .solve(&instance)
            .expect("the ILP solves a shipped instance");
        let expected = match solution.status {
            Status::Optimal => Read::Optimal(solution.objective.expect("an optimum")),
            Status::Infeasible { .. } => Read::Infeasible,
            Status::Feasible { .. } => panic!("{}: the exact ILP stopped early", path.display()),
        };
        let model = export_ilp(&problem, format).expect("the model is written");
        let stem = path.file_stem().and_then(|s| s.to_str()).expect("a name");
        let file = dir.join(format!("{stem}.{}", format.extension()));
        std::fs::write(&file, &model.text).expect("the model file is written");
        let got = solve_file(&file);
        match (&got, &expected) {
            (Read::Optimal(a), Read::Optimal(b)) => assert!(
                objectives_agree(*a, *b),
                "{}: the exported model's optimum {a} is not the ilp solver's {b}",
                path.display()
            ),
            _ => assert_eq!(got, expected, "{}", path.display()),
        }
        eprintln!("{stem}: {got:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exported_mps_solves_to_the_ilp_optimum_on_every_shipped_instance() {
    check_round_trip(ModelFormat::Mps, "export-mps");
}

#[test]
fn exported_lp_solves_to_the_ilp_optimum_on_every_shipped_instance() {
    check_round_trip(ModelFormat::Lp, "export-lp");
}

#[test]
fn an_infeasible_round_exports_an_infeasible_model() {
    let dir = scratch("export-infeasible");
    for name in ["hand-infeasible", "hand-unpackable"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("instances")
            .join(format!("{name}.json"));
        let instance = Instance::from_path(&path).expect("a shipped instance is valid");
        let problem = RoundProblem::new(&instance);
        for format in [ModelFormat::Mps, ModelFormat::Lp] {
            let model = export_ilp(&problem, format).expect("the model is written");
            let file = dir.join(format!("{name}.{}", format.extension()));
            std::fs::write(&file, &model.text).expect("the model file is written");
            assert_eq!(solve_file(&file), Read::Infeasible, "{}", file.display());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn names_follow_jobs_types_and_slots() {
    let instance = Instance::builder()
        .gpu_type("v100 sxm", 1, 4, &[1, 2, 4])
        .gpu_type("v100-sxm", 1, 4, &[4])
        .job(stsfair::JobSpec::new("job a").time("v100 sxm", 2, 0.5))
        .job(stsfair::JobSpec::new("b").time("v100-sxm", 4, 0.25))
        .build()
        .expect("a valid instance");
    let problem = RoundProblem::new(&instance);
    let (columns, rows) = ilp_names(&problem);
    // The two type names meet once sanitized, so each carries its index.
    assert_eq!(
        rows,
        ["cap_v100_sxm_0", "cap_v100_sxm_1", "job_0_job_a", "job_1_b"]
    );
    assert_eq!(columns, ["x_0_job_a_v100_sxm_0_2", "x_1_b_v100_sxm_1_4"]);
    let model = export_ilp(&problem, ModelFormat::Lp).expect("the model is written");
    assert_eq!((model.columns, model.rows), (2, 4));
    assert!(model.text.contains("x_0_job_a_v100_sxm_0_2"));
    assert!(model.text.to_lowercase().contains("max"));
}

#[test]
fn a_round_without_options_exports_the_capacity_rows_alone() {
    use stsfair::formulation::{JobClass, RoundJob};
    let problem = RoundProblem {
        type_names: vec!["v100".into()],
        job_ids: vec!["idle".into()],
        capacity: vec![4],
        jobs: vec![RoundJob {
            share: 1.0,
            fair_rate: 0.0,
            max_throughput: 0.0,
            minimum: 0.0,
            class: JobClass::Unbounded,
            options: Vec::new(),
        }],
    };
    for format in [ModelFormat::Mps, ModelFormat::Lp] {
        let model = export_ilp(&problem, format).expect("the model is written");
        assert_eq!((model.columns, model.rows), (0, 1));
        assert!(model.text.contains("cap_v100"), "{}", model.text);
        assert!(!model.text.contains("job_0"), "{}", model.text);
    }
}
