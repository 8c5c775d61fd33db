//! The fast DP against two independent oracles: brute force on tiny instances and the dense
//! reference DP on small ones. Same feasibility, objectives within 1e-9 relative, and `verify`
//! accepts every answer. The same checks with the type tables on from the first run (a
//! setting internal to the crate) are unit tests in src/solvers/dp/tables.rs.

mod common;

use proptest::prelude::*;
use stsfair::solution::{Certificate, objectives_agree};
use stsfair::{BruteForce, DenseDp, Dp, Fairness, Instance, JobSpec, Solver, Status, verify};

fn agree(instance: &Instance, reference: &dyn Solver) -> Result<(), TestCaseError> {
    let fast = Dp::default()
        .solve(instance)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let oracle = reference
        .solve(instance)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let infeasible = |s: &stsfair::Solution| matches!(s.status, Status::Infeasible { .. });
    prop_assert_eq!(
        infeasible(&fast),
        infeasible(&oracle),
        "feasibility differs: {:?} vs {:?}",
        fast.status,
        oracle.status
    );
    if let (Some(a), Some(b)) = (fast.objective, oracle.objective) {
        prop_assert!(
            objectives_agree(b, a),
            "objective {} (dp) vs {} ({})",
            a,
            b,
            oracle.solver
        );
    }
    verify(instance, &fast).map_err(|e| TestCaseError::fail(format!("verify rejects dp: {e}")))?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn dp_matches_brute_force(instance in common::instance(common::Shape::TINY)) {
        agree(&instance, &BruteForce::default())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]
    #[test]
    fn dp_matches_dense_dp(instance in common::instance(common::Shape::SMALL)) {
        agree(&instance, &DenseDp::default())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Single-GPU jobs only: the core in the rigid order, not by units.
    #[test]
    fn dp_matches_brute_force_on_single_gpu_jobs(
        instance in common::instance(common::Shape::TINY.single_gpu())
    ) {
        agree(&instance, &BruteForce::default())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]
    #[test]
    fn dp_matches_dense_dp_on_single_gpu_jobs(
        instance in common::instance(common::Shape::SMALL.single_gpu())
    ) {
        agree(&instance, &DenseDp::default())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    /// Many identical jobs (classes split between tied choices by the LP).
    #[test]
    fn dp_matches_dense_dp_on_copies(instance in common::repeated(common::Shape::SMALL, 15)) {
        agree(&instance, &DenseDp::default())?;
    }
}

/// A round of the multi-GPU simulation (`simulate --jobs 20000 --rate 2.6 --multi-gpu --seed 4
/// --window 4000-4999`) with no solution: 35 of its 88 jobs are
/// forced and need 216 units of the 216 the three types of 36 half-GPU pairs hold, so neither
/// the Lagrangian bound nor a shortage proves it, and the slots of 4 and 8 GPUs do not pack.
/// The DP's runs alone predict 9.5 M states and refuse it (the ILP proves it infeasible in
/// 0.24 s); the forced jobs' reachability answers before any run.
#[test]
fn the_simulations_unpackable_round_is_answered_infeasible() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/multi-unpackable-36x3-88.json");
    let instance = Instance::from_path(&path).unwrap();
    let problem = stsfair::RoundProblem::new(&instance);
    assert_eq!(problem.forced().count(), 35);
    assert_eq!(problem.shortage(), None);
    assert_eq!(problem.forced_fit(u64::MAX), Some(false));
    let solution = Dp::default().solve(&instance).unwrap();
    let Status::Infeasible { reason } = &solution.status else {
        panic!("expected infeasible, got {:?}", solution.status)
    };
    assert!(
        matches!(reason, stsfair::Infeasibility::Unpackable { forced, .. } if forced.len() == 35),
        "{reason:?}"
    );
    // No gap-deepening run was made: the answer came from the certificates.
    assert_eq!(
        solution.stats.dp().and_then(|d| d.runs),
        None,
        "{:?}",
        solution.stats
    );
    let checked = verify(&instance, &solution).unwrap();
    assert_eq!(checked.certificate, Some(Certificate::ForcedJobsDoNotPack));
    assert!(checked.infeasibility_certified);
}

/// Where the forced jobs' reachability would take too long to try before every solve, the DP
/// tries it once it refuses a round as too large: a refused round whose forced jobs do not
/// pack is answered `infeasible`, not refused. Three types of 100 GPUs in halves (200 units
/// each); four forced jobs of 68 workers on whole GPUs (136 units: two do not fit on one type)
/// and eight forced single-GPU jobs, 552 units of 600. No shortage, and fractionally they fit.
#[test]
fn a_refused_round_whose_forced_jobs_do_not_pack_is_answered_infeasible() {
    let mut builder = Instance::builder();
    for t in ["a", "b", "c"] {
        builder = builder.gpu_type(t, 100, 2, &[1, 2]);
    }
    for i in 0..4 {
        let mut job = stsfair::JobSpec::new(format!("big{i}"))
            .workers(68)
            .deficit(0.5);
        for t in ["a", "b", "c"] {
            job = job.time(t, 2, 1.0);
        }
        builder = builder.job(job);
    }
    for i in 0..8 {
        let mut job = stsfair::JobSpec::new(format!("small{i}")).deficit(0.5);
        for t in ["a", "b", "c"] {
            job = job.time(t, 2, 1.0).time(t, 1, 1.25);
        }
        builder = builder.job(job);
    }
    let instance = builder.build().unwrap();
    let problem = stsfair::RoundProblem::new(&instance);
    assert_eq!(problem.forced().count(), 12);
    assert_eq!(problem.shortage(), None);
    // 161,604 words a set and 96 passes over it: past the 2^22 tried before the runs.
    assert_eq!(problem.forced_fit(1 << 22), None);
    assert_eq!(problem.forced_fit(u64::MAX), Some(false));
    let mut small = Dp::default();
    small.max_states = 10;
    let solution = small.solve(&instance).unwrap();
    assert!(
        matches!(solution.status, Status::Infeasible { .. }),
        "{:?}",
        solution.status
    );
    // It came from the refusal (the certificates before the runs report the classes).
    assert_eq!(
        solution.stats.dp().and_then(|d| d.classes),
        None,
        "{:?}",
        solution.stats
    );
    let checked = verify(&instance, &solution).unwrap();
    assert_eq!(checked.certificate, Some(Certificate::ForcedJobsDoNotPack));
    assert!(checked.infeasibility_certified);
    // The default DP answers the same.
    let solution = Dp::default().solve(&instance).unwrap();
    assert!(matches!(solution.status, Status::Infeasible { .. }));
}

/// A job of weight 1.5e240 beside three forced jobs of weight 1 (`max_debt` 0): the
/// multipliers' descent priced the units near 1e240 and L(mu) lost the small values to
/// cancellation (a bound of -3.7e224); the fast DP answered `optimal` with the forced jobs idle.
/// The optimum is 1.
#[test]
fn fast_dp_keeps_forced_jobs_beside_a_weight_of_1e240() {
    let times = |a: (u64, f64), b: (u64, f64)| {
        move |spec: JobSpec| spec.time("g0", a.0, a.1).time("g0", b.0, b.1)
    };
    let instance = Instance::builder()
        .fairness(Fairness {
            lambda: 1.0,
            max_debt: 0.0,
            credit: 1.0,
        })
        .gpu_type("g0", 2, 4, &[1, 2, 4])
        .job(
            JobSpec::new("j0")
                .weight(1.536041012886754e240)
                .time("g0", 2, 0.2),
        )
        .job(times((1, 0.30000000000000004), (4, 0.1))(
            JobSpec::new("j1").workers(2),
        ))
        .job(times((1, 0.6000000000000001), (4, 0.1))(
            JobSpec::new("j2").workers(2),
        ))
        .job(times((2, 0.2), (4, 0.1))(JobSpec::new("j3").workers(2)))
        .build()
        .unwrap();
    let fast = Dp::default().solve(&instance).unwrap();
    let brute = BruteForce::default().solve(&instance).unwrap();
    assert_eq!(brute.objective, Some(1.0));
    assert_eq!(fast.status, Status::Optimal);
    assert!(
        objectives_agree(1.0, fast.objective.unwrap()),
        "{:?}",
        fast.objective
    );
    let verified = verify(&instance, &fast).expect("verify accepts the fast DP's answer");
    assert!(
        verified.optimality.is_certified(),
        "{:?}",
        verified.optimality
    );
}
