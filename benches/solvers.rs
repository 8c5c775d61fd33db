//! Criterion timings of the solvers on every shipped instance (`instances/*.json`).
//!
//! `cargo bench --bench solvers` runs the fast DP on all of them and, with feature `highs`, the
//! ILP on those of at most 1,000 jobs (larger ones take HiGHS tens of seconds each, which would
//! make a sample of ten take many minutes; `stsfair bench` covers them). Sample sizes are the
//! smallest criterion accepts (10) and measurement windows short, so the whole bench finishes in
//! a few minutes on a shared 2-core machine. The scaling table of docs/performance.md comes from
//! `benches/scaling.sh`, not from here.

use std::path::PathBuf;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use stsfair::{Instance, RoundProblem};
use stsfair::{SolverConfig, SolverKind};

/// Largest instance (in jobs) the ILP is timed on.
const ILP_MAX_JOBS: usize = 1_000;

fn shipped() -> Vec<(String, Instance)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("instances");
    let files = stsfair::bench::instance_files(&[dir]).expect("instances/ is readable");
    files
        .iter()
        .map(|p| {
            let instance = Instance::from_path(p).expect("shipped instances are valid");
            (stsfair::bench::display_name(p, &instance), instance)
        })
        .collect()
}

fn bench_solvers(c: &mut Criterion) {
    let instances = shipped();
    let mut group = c.benchmark_group("solvers");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let kinds = SolverKind::ALL
        .iter()
        .filter(|k| matches!(k.name(), "dp" | "ilp"));
    for kind in kinds {
        let name = kind.name();
        let solver = kind.build(&SolverConfig::default());
        for (id, instance) in &instances {
            if name == "ilp" && instance.jobs().len() > ILP_MAX_JOBS {
                continue;
            }
            // The formulation is derived once outside the timing: both solvers share it, and
            // `stsfair bench` already reports the end-to-end time.
            let problem = RoundProblem::new(instance);
            group.bench_with_input(BenchmarkId::new(name, id), &problem, |b, p| {
                b.iter(|| solver.solve_problem(p).expect("shipped instances solve"))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_solvers);
criterion_main!(benches);
