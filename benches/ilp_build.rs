//! How long the one-hot ILP takes to build and to solve, and which way of building it is faster.
//!
//! `cargo bench --bench ilp_build` prints:
//! 1. the time to build the same model into a ready-to-run HiGHS model through good_lp's
//!    expression layer and through the raw `highs` crate (what `Ilp` does), median of 5 builds, on
//!    synthetic Gavel-like rounds (3 GPU types of 4 units with slots 1/2/4, ~10% of the jobs
//!    forced) of 3,000 jobs and of 220,000 jobs (1.98 million binaries);
//! 2. the ILP's build and solve times on the shipped 3,000-job round
//!    `instances/gavel-250x3-3000.json`;
//! 3. what exactness costs there: the same solve with HiGHS's default gaps (1e-4 relative, 1e-6
//!    absolute);
//! 4. the fixed cost of one small solve, through `Ilp` (fresh HiGHS thread per solve) and through
//!    raw HiGHS on one thread, median of 50.
//!
//! The numbers go to docs/ilp.md. The synthetic rounds have a fixed seed, so reruns build the
//! same models; they are generated here because no shipped instance has 220,000 jobs.

use std::time::Instant;

use good_lp::{Expression, ProblemVariables, SolverModel, Variable, variable};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use stsfair::solvers::build_ilp_model;
use stsfair::{Ilp, Instance, JobSpec, RoundProblem, Solver};

const TYPES: [(&str, f64, f64); 3] = [("v100", 1.0, 1.0), ("p100", 1.2, 2.0), ("k80", 2.0, 4.0)];

/// A Gavel-like round: `jobs` jobs on `gpus` GPUs of each of three types. Per job a whole-V100
/// time, slower types by a random factor, and sharing slows a job by (4/s)^a with a in [0.3, 0.9]
/// (sublinear, so sharing is often worth it). 80% of jobs have 1 worker, 15% 2, 5% 4. 10% have a
/// positive deficit (forced with the default fairness), the rest a non-positive one.
fn synthetic(jobs: usize, gpus: u64, seed: u64) -> Instance {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut b = Instance::builder().name(format!("synthetic-{jobs}"));
    for (name, _, _) in TYPES {
        b = b.gpu_type(name, gpus, 4, &[1, 2, 4]);
    }
    for j in 0..jobs {
        let base: f64 = rng.random_range(0.05..0.5);
        let share_cost: f64 = rng.random_range(0.3..0.9);
        let workers = match rng.random_range(0..100) {
            0..80 => 1,
            80..95 => 2,
            _ => 4,
        };
        let deficit = if rng.random_range(0..10) == 0 {
            rng.random_range(0.001..0.5)
        } else {
            rng.random_range(-2.0..0.0)
        };
        let mut spec = JobSpec::new(format!("j{j}"))
            .workers(workers)
            .deficit(deficit);
        for (name, lo, hi) in TYPES {
            let t = base
                * if lo == hi {
                    lo
                } else {
                    rng.random_range(lo..hi)
                };
            for s in [1u64, 2, 4] {
                spec = spec.time(name, s, t * (4.0 / s as f64).powf(share_cost));
            }
        }
        b = b.job(spec);
    }
    b.build().expect("the synthetic round is valid")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The same model as `build_ilp_model`, through good_lp: variables, objective and rows as
/// expressions, then good_lp's conversion into a HiGHS model.
fn build_good_lp(problem: &RoundProblem) -> highs::Model {
    let mut vars = ProblemVariables::new();
    let x: Vec<Vec<Variable>> = problem
        .jobs
        .iter()
        .map(|j| vars.add_vector(variable().binary(), j.options.len()))
        .collect();
    let objective: Expression = problem
        .jobs
        .iter()
        .zip(&x)
        .flat_map(|(j, xs)| j.options.iter().zip(xs).map(|(o, &v)| o.value * v))
        .sum();
    let mut model = vars.maximise(objective).using(good_lp::highs);
    let mut per_type = vec![Expression::default(); problem.types()];
    for (job, xs) in problem.jobs.iter().zip(&x) {
        if xs.is_empty() {
            continue;
        }
        let one: Expression = xs.iter().sum();
        model = model.with(if job.may_idle() {
            one.leq(1.0)
        } else {
            one.eq(1.0)
        });
        for (o, &v) in job.options.iter().zip(xs) {
            per_type[o.gpu].add_mul(o.units as f64, v);
        }
    }
    for (e, &c) in per_type.into_iter().zip(&problem.capacity) {
        model = model.with(e.leq(c as f64));
    }
    model.try_into_inner().expect("good_lp builds the model")
}

fn seconds<T>(f: impl FnOnce() -> T) -> f64 {
    let start = Instant::now();
    let out = f();
    let s = start.elapsed().as_secs_f64();
    drop(out);
    s
}

fn main() {
    let reps = 5;
    println!("1. model build, median of {reps} (seconds)");
    println!(
        "{:>8} {:>10} {:>10} {:>10} {:>8}",
        "jobs", "variables", "good_lp", "raw highs", "ratio"
    );
    for (jobs, gpus) in [(3_000, 250), (220_000, 18_400)] {
        let problem = RoundProblem::new(&synthetic(jobs, gpus, 7));
        let variables: usize = problem.jobs.iter().map(|j| j.options.len()).sum();
        let good = median(
            (0..reps)
                .map(|_| seconds(|| build_good_lp(&problem)))
                .collect(),
        );
        let raw = median(
            (0..reps)
                .map(|_| seconds(|| build_ilp_model(&problem).expect("builds")))
                .collect(),
        );
        println!(
            "{jobs:>8} {variables:>10} {good:>10.4} {raw:>10.4} {:>8.1}",
            good / raw
        );
    }

    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/instances/gavel-250x3-3000.json"
    );
    let instance = Instance::from_path(path).expect("instances/gavel-250x3-3000.json loads");
    let problem = RoundProblem::new(&instance);
    let forced = problem.forced().count();
    let highs_gaps = Ilp::default().with_mip_rel_gap(1e-4).with_mip_abs_gap(1e-6);
    for (title, ilp) in [
        ("2. exact (gaps 0)", Ilp::default()),
        ("3. HiGHS's default gaps", highs_gaps),
    ] {
        println!("\n{title}: the ILP on instances/gavel-250x3-3000.json, 1 thread");
        report(&instance, &ilp, forced);
    }

    let small = RoundProblem::new(&synthetic(20, 2, 11));
    let n = 50;
    let ilp = median(
        (0..n)
            .map(|_| seconds(|| Ilp::default().solve_problem(&small).expect("solves")))
            .collect(),
    );
    let raw = median(
        (0..n)
            .map(|_| {
                seconds(|| {
                    let mut m = build_ilp_model(&small).expect("builds");
                    m.try_set_option("threads", 1).expect("option");
                    m.try_solve().expect("solves")
                })
            })
            .collect(),
    );
    println!(
        "\n4. one 20-job solve, median of {n}: Ilp {:.2} ms, raw HiGHS on one thread {:.2} ms",
        ilp * 1e3,
        raw * 1e3
    );
}

fn report(instance: &Instance, ilp: &Ilp, forced: usize) {
    match ilp.solve(instance) {
        Ok(s) => {
            fn stat<T: ToString>(v: Option<T>) -> String {
                v.map_or_else(|| "-".to_string(), |v| v.to_string())
            }
            let ilp = s.stats.ilp().cloned().unwrap_or_default();
            println!(
                "status {} objective {:.9} forced {forced} variables {} seconds_build {} seconds_solve {} nodes {} mip_gap {}",
                s.status.as_str(),
                s.objective.unwrap_or(f64::NAN),
                stat(ilp.variables),
                stat(ilp.seconds_build),
                stat(ilp.seconds_solve),
                stat(ilp.nodes),
                stat(ilp.mip_gap),
            );
            if let Err(e) = stsfair::verify(instance, &s) {
                println!("VERIFY FAILED: {e}");
            }
        }
        Err(e) => println!("error: {e}"),
    }
}
