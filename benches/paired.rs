//! The paired program's solver side by side with microlp's branch and bound, on the same
//! programs (docs/dependencies.md, "Why the paired program has its own solver").
//!
//! `cargo bench --bench paired` draws 50 programs shaped like the paired rounds of `stsfair
//! simulate` on Gavel's cluster (28 classes of 1-8 jobs, one in ten forced, three GPU types of 36
//! GPUs, pairs on two of them for about half the class pairs, values 0.1-2), solves each with
//! [`PairedProgram::solve`] and with the same program given to microlp (a pure-Rust sparse
//! simplex with branch and bound), checks that both reach the same optimum, and times both
//! on the whole set.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stsfair::policy::{PairedClass, PairedColumn, PairedProgram};

/// A program like a simulated round's, from `rng`.
fn round_program(rng: &mut ChaCha8Rng) -> PairedProgram {
    let (nc, nk) = (28, 3);
    let classes = (0..nc)
        .map(|_| PairedClass {
            size: rng.random_range(1..=8),
            all_run: rng.random_bool(0.1),
        })
        .collect();
    let speed: Vec<f64> = (0..nk).map(|k| 1.0 / (1.0 + k as f64)).collect();
    let mut columns = Vec::new();
    for (k, s) in speed.iter().enumerate() {
        for c in 0..nc {
            columns.push(PairedColumn {
                gpu_type: k,
                first: c,
                second: None,
                value: s * rng.random_range(0.5..=2.0),
            });
        }
        if k == 1 {
            continue;
        }
        for c in 0..nc {
            for d in c..nc {
                if rng.random_bool(0.5) {
                    columns.push(PairedColumn {
                        gpu_type: k,
                        first: c,
                        second: Some(d),
                        value: s * rng.random_range(0.1..=2.0),
                    });
                }
            }
        }
    }
    PairedProgram {
        classes,
        gpus: vec![36; nk],
        columns,
    }
}

/// The program given to microlp as an integer program: the optimum, or `None` when infeasible.
fn microlp_optimum(p: &PairedProgram) -> Option<f64> {
    use microlp::{ComparisonOp, OptimizationDirection, Problem};
    let mut problem = Problem::new(OptimizationDirection::Maximize);
    let vars: Vec<microlp::Variable> = p
        .columns
        .iter()
        .map(|col| {
            let mut bound = p.gpus[col.gpu_type];
            for c in [Some(col.first), col.second].into_iter().flatten() {
                let uses = 1 + u32::from(col.second == Some(col.first));
                bound = bound.min(p.classes[c].size / uses);
            }
            problem.add_integer_var(col.value, (0, i32::try_from(bound).unwrap_or(i32::MAX)))
        })
        .collect();
    let mut class_rows = vec![Vec::new(); p.classes.len()];
    let mut type_rows = vec![Vec::new(); p.gpus.len()];
    for (col, &var) in p.columns.iter().zip(&vars) {
        match col.second {
            Some(d) if d == col.first => class_rows[d].push((var, 2.0)),
            Some(d) => {
                class_rows[col.first].push((var, 1.0));
                class_rows[d].push((var, 1.0));
            }
            None => class_rows[col.first].push((var, 1.0)),
        }
        type_rows[col.gpu_type].push((var, 1.0));
    }
    for (row, class) in class_rows.iter().zip(&p.classes) {
        let op = if class.all_run {
            ComparisonOp::Eq
        } else {
            ComparisonOp::Le
        };
        problem.add_constraint(row.as_slice(), op, f64::from(class.size));
    }
    for (row, &count) in type_rows.iter().zip(&p.gpus) {
        problem.add_constraint(row.as_slice(), ComparisonOp::Le, f64::from(count));
    }
    problem
        .solve()
        .ok()
        .and_then(|o| o.into_solution().ok())
        .map(|s| s.objective())
}

fn bench_paired(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let programs: Vec<PairedProgram> = (0..50).map(|_| round_program(&mut rng)).collect();
    for (i, p) in programs.iter().enumerate() {
        let ours = p.solve().expect("a valid program").map(|a| a.value);
        let theirs = microlp_optimum(p);
        match (ours, theirs) {
            (Some(a), Some(b)) => assert!(
                (a - b).abs() <= 1e-7 * b.abs().max(1.0),
                "program {i}: ours {a}, microlp {b}"
            ),
            (None, None) => {}
            (a, b) => panic!("program {i}: ours {a:?}, microlp {b:?}"),
        }
    }
    let mut group = c.benchmark_group("paired");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    group.bench_function("branch_bound", |b| {
        b.iter(|| programs.iter().filter(|p| p.solve().is_ok()).count())
    });
    group.bench_function("microlp", |b| {
        b.iter(|| programs.iter().filter_map(microlp_optimum).count())
    });
    group.finish();
}

criterion_group!(benches, bench_paired);
criterion_main!(benches);
