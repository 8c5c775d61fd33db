//! Random small instances and oracles for the dp unit tests.
//!
//! Why this file exists: unit tests cannot import the integration tests' tests/common, so this
//! is a compact subset of its shapes (forced and optional jobs, missing options, options that
//! never fit, 1 to 4 types, ladders [1, 2, 4], [2, 4, 8], [4], [1, 3], [1], ties, and classes of
//! copied jobs), shared by the unit tests of every phase. O(jobs * types) per instance.
//! Reference: the oracles are the brute force and the dense DP (MODEL.md section 4).

use proptest::prelude::*;

use super::classes::{Class, classes};
use super::fixing::{CoreOrder, Fixed, fix};
use super::lagrangian::multipliers;
use super::limits::TOLERANCE;
use crate::formulation::RoundProblem;
use crate::solvers::{DenseDp, Solver};
use crate::{Fairness, Instance, JobSpec, Status};

/// Ladders a GPU type may use, with the units of its GPUs.
const LADDERS: &[(u64, &[u64])] = &[
    (4, &[1, 2, 4]),
    (8, &[2, 4, 8]),
    (4, &[4]),
    (6, &[1, 3]),
    (7, &[1]),
];

/// Sizes of random instances.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    jobs: usize,
    types: usize,
    count: u64,
    workers: u64,
}

/// Small enough for brute force (at most ~10^5 combinations).
pub(super) const TINY: Shape = Shape {
    jobs: 6,
    types: 3,
    count: 3,
    workers: 2,
};

/// Small enough for the dense DP.
pub(super) const SMALL: Shape = Shape {
    jobs: 25,
    types: 4,
    count: 6,
    workers: 3,
};

/// A random instance of `shape`: up to `shape.jobs` jobs (`copies` = 1), or 1 to 3 job
/// templates copied 1 to `copies` times each (classes the LP splits between tied choices).
/// Times are drawn from a few values so that ties happen; deficits span from far below to far
/// above the forcing threshold.
pub(super) fn instance(shape: Shape, copies: usize) -> impl Strategy<Value = Instance> {
    let types = proptest::collection::vec((0..LADDERS.len(), 0..=shape.count), 1..=shape.types);
    let fairness = (
        prop_oneof![Just(1.0), Just(0.5), 0.05f64..=1.0],
        prop_oneof![Just(1.0), Just(0.0), 0.0f64..3.0],
    );
    (types, fairness).prop_flat_map(move |(types, (lambda, max_debt))| {
        let time = prop_oneof![
            2 => Just(None),
            3 => (0usize..6).prop_map(|i| Some([0.1, 0.2, 0.25, 0.4, 0.5, 1.0][i])),
            1 => (0.05f64..2.0).prop_map(Some),
        ];
        let job = (
            prop_oneof![3 => Just(1.0), 1 => 0.1f64..4.0],
            1..=shape.workers,
            prop_oneof![2 => Just(0.0), 2 => -2.0f64..3.0, 1 => Just(1.0)],
            proptest::collection::vec(time, types.len() * 4),
            1..=copies,
        );
        let templates = if copies > 1 { 1..=3 } else { 0..=shape.jobs };
        (Just(types), proptest::collection::vec(job, templates)).prop_map(move |(types, jobs)| {
            let fairness = Fairness {
                lambda,
                max_debt,
                credit: 1.0,
            };
            let mut b = Instance::builder().fairness(fairness);
            for (k, &(ladder, count)) in types.iter().enumerate() {
                let (units, sizes) = LADDERS[ladder];
                b = b.gpu_type(format!("g{k}"), count, units, sizes);
            }
            let copied = jobs.iter().flat_map(|j| std::iter::repeat_n(j, j.4));
            for (j, (weight, workers, deficit, times, _)) in copied.enumerate() {
                let mut spec = JobSpec::new(format!("j{j}"))
                    .weight(*weight)
                    .workers(*workers)
                    .deficit(*deficit);
                for (k, &(ladder, _)) in types.iter().enumerate() {
                    let sizes = LADDERS[ladder].1;
                    for (r, &s) in sizes.iter().enumerate() {
                        // Bigger slots are never slower, as in the measured data, except by
                        // ties.
                        if let Some(t) = times[k * 4 + r.min(3)] {
                            spec = spec.time(format!("g{k}"), s, t * (sizes.len() - r) as f64);
                        }
                    }
                }
                b = b.job(spec);
            }
            b.build().expect("generated instances are valid")
        })
    })
}

/// The round problem of a random instance of `shape` (see [`instance`]).
pub(super) fn problem(shape: Shape, copies: usize) -> impl Strategy<Value = RoundProblem> {
    instance(shape, copies).prop_map(|i| RoundProblem::new(&i))
}

/// The optimum of `problem` by the dense DP, `None` if it is infeasible.
pub(super) fn optimum(problem: &RoundProblem) -> Result<Option<f64>, TestCaseError> {
    let s = DenseDp::default()
        .solve_problem(problem)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    match s.status {
        Status::Infeasible { .. } => Ok(None),
        _ => Ok(s.objective),
    }
}

/// Whether `a` is at least `b` up to floating-point error (1e-9 relative).
pub(super) fn at_least(a: f64, b: f64) -> bool {
    a >= b - 1e-9 * b.abs().max(1.0)
}

/// The checks of tests/dp_exact.rs for `dp` against `reference` on `instance`: same
/// feasibility, objectives within 1e-9 relative, and `verify` accepts dp's answer.
pub(super) fn agree(
    dp: &super::Dp,
    instance: &Instance,
    reference: &dyn Solver,
) -> Result<(), TestCaseError> {
    let fast = dp
        .solve(instance)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let oracle = reference
        .solve(instance)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let infeasible = |s: &crate::Solution| matches!(s.status, Status::Infeasible { .. });
    prop_assert_eq!(
        infeasible(&fast),
        infeasible(&oracle),
        "feasibility differs: {:?} vs {:?}",
        fast.status,
        oracle.status
    );
    if let (Some(a), Some(b)) = (fast.objective, oracle.objective) {
        prop_assert!(
            crate::solution::objectives_agree(b, a),
            "objective {} (dp) vs {} ({})",
            a,
            b,
            oracle.solver
        );
    }
    crate::verify(instance, &fast)
        .map_err(|e| TestCaseError::fail(format!("verify rejects dp: {e}")))?;
    Ok(())
}

/// Checks that `assignment` is a solution of `problem`: every job on one of its options or
/// idle (only if it may idle), every type within capacity. Returns its value.
pub(super) fn check_feasible(
    problem: &RoundProblem,
    assignment: &[crate::solution::Assignment],
) -> Result<f64, TestCaseError> {
    prop_assert_eq!(assignment.len(), problem.jobs.len());
    let mut units = vec![0u64; problem.capacity.len()];
    let mut value = 0.0;
    for (j, (job, a)) in problem.jobs.iter().zip(assignment).enumerate() {
        match *a {
            None => prop_assert!(job.may_idle(), "forced job {} idles", j),
            Some((gpu, slot)) => {
                let o = job.options.iter().find(|o| o.gpu == gpu && o.slot == slot);
                let Some(o) = o else {
                    return Err(TestCaseError::fail(format!(
                        "job {j}: no option {gpu}/{slot}"
                    )));
                };
                units[gpu] += o.units;
                value += o.value;
            }
        }
    }
    for (t, (&u, &c)) in units.iter().zip(&problem.capacity).enumerate() {
        prop_assert!(u <= c, "type {}: {} units of {}", t, u, c);
    }
    Ok(value)
}

/// Small instances, plain or of copied jobs (half each).
pub(super) fn small_problem() -> impl Strategy<Value = RoundProblem> {
    prop_oneof![problem(SMALL, 1), problem(SMALL, 15)]
}

/// A count problem from its classes as (jobs, units on each of 3 types, 0 where the type is not
/// admissible), every job optional and worth 1 on any admissible type: what the relaxation
/// makes (src/rounds/relax.rs), written as the classes a trace of it shows.
pub(super) fn count_problem(classes: &[(usize, [u64; 3])], capacity: u64) -> RoundProblem {
    use crate::formulation::{JobClass, RoundJob, RoundOption};
    let mut jobs = Vec::new();
    for &(count, units) in classes {
        let options: Vec<RoundOption> = (0..3)
            .filter(|&k| units[k] > 0)
            .map(|k| RoundOption {
                option: k,
                gpu: k,
                slot: units[k] as u32,
                units: units[k],
                sigma: 1.0,
                value: 1.0,
            })
            .collect();
        for _ in 0..count {
            jobs.push(RoundJob {
                share: 1.0,
                fair_rate: 1.0,
                max_throughput: 1.0,
                minimum: 0.0,
                class: JobClass::Optional,
                options: options.clone(),
            });
        }
    }
    RoundProblem {
        type_names: vec!["v100".into(), "p100".into(), "k80".into()],
        job_ids: (0..jobs.len()).map(|j| j.to_string()).collect(),
        capacity: vec![capacity; 3],
        jobs,
    }
}

/// A problem's classes fixed at its optimum's reduced-cost gap times `factor` (>= 1) at the
/// optimal multipliers, in the rigid order: the start of the tests of runs at a given gap.
pub(super) struct AtOptimum {
    pub(super) classes: Vec<Class>,
    pub(super) mu: Vec<f64>,
    /// The optimum (the dense DP's).
    pub(super) opt: f64,
    /// The solver's tolerance at the Lagrangian bound's scale.
    pub(super) tol: f64,
    pub(super) fixed: Fixed,
}

/// [`AtOptimum`] of `problem`, or `None` when it has no solution.
pub(super) fn fixed_at_optimum(
    problem: &RoundProblem,
    factor: f64,
) -> Result<Option<AtOptimum>, TestCaseError> {
    let classes = classes(problem);
    let (mu, l) = multipliers(&classes, &problem.capacity);
    let Some(opt) = optimum(problem)? else {
        return Ok(None);
    };
    let tol = TOLERANCE * l.abs().max(1.0);
    let gap = (l - opt).max(0.0) * factor;
    let fixed = fix(&classes, &problem.capacity, &mu, gap, tol, CoreOrder::Rigid);
    Ok(Some(AtOptimum {
        classes,
        mu,
        opt,
        tol,
        fixed,
    }))
}
