//! The dense DP (the reference solver) against brute force on random tiny instances, and
//! `verify` against corrupted DP solutions.
//!
//! - Both solvers agree on feasibility and on the objective (1e-9 relative, MODEL.md section 4).
//! - `verify` accepts every answer of both, and rejects each kind of corruption of a DP solution
//!   with the matching `VerifyError` variant.
//! - Solving twice gives the same solution (all but `stats.seconds`).
//!
//! `corruptions_are_exercised` checks that the random instances give each corruption something
//! to corrupt often enough, so the property test cannot pass by skipping them.

mod common;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use stsfair::formulation::{JobClass, RoundProblem};
use stsfair::solution::{Assignment, objectives_agree};
use stsfair::{BruteForce, DenseDp, Dp, Instance, Solution, Solver, Status, VerifyError, verify};

type Corrupt = fn(&Instance, &RoundProblem, &Solution) -> Option<(Solution, &'static str)>;

/// Every corruption: each returns the corrupted solution and the variant `verify` must return,
/// or `None` when the instance and solution give it nothing to corrupt.
const CORRUPTIONS: &[(&str, Corrupt)] = &[
    ("non-option", to_non_option),
    ("forced idle", forced_idle),
    ("over capacity", over_capacity),
    ("wrong objective", wrong_objective),
    ("null objective", null_objective),
    ("wrong units_used", wrong_units),
    ("missing job", missing_job),
    ("infeasible with assignments", infeasible_with_assignments),
];

/// The name of a `VerifyError` variant.
fn variant(e: &VerifyError) -> &'static str {
    match e {
        VerifyError::Malformed { .. } => "Malformed",
        VerifyError::JobCount { .. } => "JobCount",
        VerifyError::NoSuchOption { .. } => "NoSuchOption",
        VerifyError::NotAdmissible { .. } => "NotAdmissible",
        VerifyError::OverCapacity { .. } => "OverCapacity",
        VerifyError::UnitsMismatch { .. } => "UnitsMismatch",
        VerifyError::ObjectiveMismatch { .. } => "ObjectiveMismatch",
        VerifyError::InfeasibleWithAssignments => "InfeasibleWithAssignments",
        _ => "unknown",
    }
}

fn feasible(s: &Solution) -> bool {
    !matches!(s.status, Status::Infeasible { .. })
}

/// Moves the first job that can be moved to a (type, slot) that is not one of its options: a
/// rung of a ladder it has no fitting time for, else a type index past the last.
fn to_non_option(
    instance: &Instance,
    _: &RoundProblem,
    s: &Solution,
) -> Option<(Solution, &'static str)> {
    if !feasible(s) || instance.jobs().is_empty() {
        return None;
    }
    let job = &instance.jobs()[0];
    let missing = instance.gpu_types().iter().enumerate().find_map(|(k, g)| {
        g.slot_sizes()
            .iter()
            .find(|&&slot| !job.options().iter().any(|o| o.gpu == k && o.slot == slot))
            .map(|&slot| (k, slot))
    });
    let mut bad = s.clone();
    bad.assignments[0] = Some(missing.unwrap_or((instance.gpu_types().len(), 1)));
    Some((bad, "NoSuchOption"))
}

/// Idles the first forced job.
fn forced_idle(_: &Instance, p: &RoundProblem, s: &Solution) -> Option<(Solution, &'static str)> {
    let j = p.forced().next().filter(|_| feasible(s))?;
    let mut bad = s.clone();
    bad.assignments[j] = None;
    Some((bad, "NotAdmissible"))
}

/// Moves one job to an admissible option that overloads its type, keeping units_used and the
/// objective consistent with the new assignment, so only the capacity is wrong.
fn over_capacity(_: &Instance, p: &RoundProblem, s: &Solution) -> Option<(Solution, &'static str)> {
    if !feasible(s) {
        return None;
    }
    for (j, job) in p.jobs.iter().enumerate() {
        let current = s.assignments[j]
            .and_then(|(g, slot)| job.options.iter().find(|o| o.gpu == g && o.slot == slot));
        for o in &job.options {
            let freed = current.filter(|c| c.gpu == o.gpu).map_or(0, |c| c.units);
            if s.units_used[o.gpu] - freed + o.units > p.capacity[o.gpu] {
                let mut assignments = s.assignments.clone();
                assignments[j] = Some((o.gpu, o.slot));
                let bad = Solution::from_assignments("dp-dense", Status::Optimal, p, assignments);
                return Some((bad, "OverCapacity"));
            }
        }
    }
    None
}

fn wrong_objective(
    _: &Instance,
    _: &RoundProblem,
    s: &Solution,
) -> Option<(Solution, &'static str)> {
    let objective = s.objective?;
    let mut bad = s.clone();
    // 1e-6 relative is well past the 1e-9 tolerance.
    bad.objective = Some(objective + 1e-6 * objective.abs().max(1.0));
    Some((bad, "ObjectiveMismatch"))
}

fn null_objective(
    _: &Instance,
    _: &RoundProblem,
    s: &Solution,
) -> Option<(Solution, &'static str)> {
    let mut bad = s.clone();
    bad.objective.take()?;
    Some((bad, "ObjectiveMismatch"))
}

fn wrong_units(_: &Instance, _: &RoundProblem, s: &Solution) -> Option<(Solution, &'static str)> {
    if !feasible(s) {
        return None;
    }
    let mut bad = s.clone();
    let last = bad.units_used.len() - 1;
    bad.units_used[last] += 1;
    Some((bad, "UnitsMismatch"))
}

fn missing_job(_: &Instance, _: &RoundProblem, s: &Solution) -> Option<(Solution, &'static str)> {
    let mut bad = s.clone();
    bad.assignments.pop()?;
    Some((bad, "JobCount"))
}

fn infeasible_with_assignments(
    _: &Instance,
    _: &RoundProblem,
    s: &Solution,
) -> Option<(Solution, &'static str)> {
    let mut bad = s.clone();
    bad.status = Status::Infeasible {
        reason: stsfair::Infeasibility::Reported("claimed".into()),
    };
    (!bad.assignments.is_empty() || bad.objective.is_some())
        .then_some((bad, "InfeasibleWithAssignments"))
}

/// Removes the only statistic that may differ between two runs.
fn without_seconds(mut s: Solution) -> Solution {
    assert!(s.stats.seconds > 0.0, "solve must record stats.seconds");
    s.stats.seconds = 0.0;
    s
}

fn check(instance: &Instance) -> Result<(), TestCaseError> {
    let fail = |e: &dyn std::fmt::Display| TestCaseError::fail(e.to_string());
    let dp = DenseDp::default().solve(instance).map_err(|e| fail(&e))?;
    let brute = BruteForce::default()
        .solve(instance)
        .map_err(|e| fail(&e))?;
    prop_assert_eq!(
        feasible(&dp),
        feasible(&brute),
        "dp {:?}, brute {:?}",
        dp.status,
        brute.status
    );
    if let (Some(a), Some(b)) = (dp.objective, brute.objective) {
        prop_assert!(
            objectives_agree(b, a),
            "dp objective {} vs brute force {}",
            a,
            b
        );
    }
    for s in [&dp, &brute] {
        let v =
            verify(instance, s).map_err(|e| fail(&format!("verify rejects {}: {e}", s.solver)))?;
        // verify's own recomputation of the objective agrees with the solver's.
        match (v.objective, s.objective) {
            (Some(recomputed), Some(reported)) => {
                prop_assert!(objectives_agree(recomputed, reported))
            }
            (None, None) => {}
            other => return Err(fail(&format!("objectives {other:?}"))),
        }
        prop_assert_eq!(
            s.assignments.len(),
            if feasible(s) {
                instance.jobs().len()
            } else {
                0
            }
        );
    }

    // Deterministic: the same answer again (but for the time taken).
    let again = DenseDp::default().solve(instance).map_err(|e| fail(&e))?;
    prop_assert_eq!(without_seconds(again), without_seconds(dp.clone()));
    let again = BruteForce::default()
        .solve(instance)
        .map_err(|e| fail(&e))?;
    prop_assert_eq!(without_seconds(again), without_seconds(brute));

    // Within the tolerance is still accepted.
    if let Some(o) = dp.objective {
        let mut near = dp.clone();
        near.objective = Some(o + 1e-11 * o.abs().max(1.0));
        prop_assert!(verify(instance, &near).is_ok());
    }

    let problem = RoundProblem::new(instance);
    for (name, corrupt) in CORRUPTIONS {
        if let Some((bad, expected)) = corrupt(instance, &problem, &dp) {
            match verify(instance, &bad) {
                Ok(_) => {
                    return Err(TestCaseError::fail(format!(
                        "verify accepts a {name} corruption: {bad:?}"
                    )));
                }
                Err(e) => prop_assert_eq!(variant(&e), expected, "{}: {}", name, e),
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn dense_dp_matches_brute_force_and_verify_catches_corruption(instance in common::instance(common::Shape::TINY)) {
        check(&instance)?;
    }
}

/// Brute force, the dense DP and the fast DP on `problem`: the same feasibility and optimum
/// (`context` names the case in a failure). Returns the fast DP's solution.
fn solvers_agree_with_brute_force(
    problem: &RoundProblem,
    context: &str,
) -> Result<Solution, TestCaseError> {
    let brute = BruteForce::default().solve_problem(problem).unwrap();
    let dense = DenseDp::default().solve_problem(problem).unwrap();
    let fast = Dp::default().solve_problem(problem).unwrap();
    for other in [&dense, &fast] {
        prop_assert_eq!(brute.objective.is_some(), other.objective.is_some());
        if let (Some(a), Some(b)) = (brute.objective, other.objective) {
            prop_assert!(
                objectives_agree(a, b),
                "brute {} vs {} {}, {}",
                a,
                other.solver,
                b,
                context
            );
        }
    }
    Ok(fast)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]
    /// Priced forced jobs (the round mechanism's `--prices lp`): brute force, the dense DP and
    /// the fast DP find the same optimum of the priced problem.
    #[test]
    fn dps_match_brute_force_on_priced_rounds(
        instance in common::instance(common::Shape::TINY),
        raw in proptest::collection::vec(prop_oneof![Just(0.0), Just(0.5), 0.0..4.0], 6),
    ) {
        let mut problem = RoundProblem::new(&instance);
        problem.price_forced(&raw);
        solvers_agree_with_brute_force(&problem, &format!("prices {raw:?}"))?;
    }
}

/// The round problem of `instance` with integral values: every option worth 1 (`scale` 0) or
/// its value times `scale` rounded, every job optional if `optional` (as in the relaxation's
/// count problems).
fn integral(instance: &Instance, scale: f64, optional: bool) -> RoundProblem {
    let mut problem = RoundProblem::new(instance);
    for job in &mut problem.jobs {
        if optional {
            job.class = JobClass::Optional;
        }
        for o in &mut job.options {
            o.value = if scale == 0.0 {
                1.0
            } else {
                (o.value * scale).round()
            };
        }
    }
    problem
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]
    /// Integral values, such as the relaxation's count problems (every option worth 1, every
    /// job free to idle): the fast DP bounds the optimum by the integer below its Lagrangian
    /// bound and stops at an incumbent that reaches it (docs/solver.md step 5); brute force, the
    /// dense DP and the fast DP still find the same optimum.
    #[test]
    fn dps_match_brute_force_on_integral_values(
        instance in common::instance(common::Shape::TINY),
        scale in prop_oneof![Just(0.0), Just(1.0), Just(3.0)],
        optional in proptest::bool::ANY,
    ) {
        let problem = integral(&instance, scale, optional);
        let fast = solvers_agree_with_brute_force(&problem, "integral values")?;
        if let Some(a) = fast.objective {
            // The values are integers, so is the optimum.
            prop_assert_eq!(a.fract(), 0.0);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    /// Integral values on instances too large for brute force: the dense DP and the fast DP
    /// (whose core is then taken by units, docs/solver.md step 6) find the same optimum.
    #[test]
    fn dps_agree_on_integral_values_of_small_instances(
        instance in common::instance(common::Shape::SMALL),
        scale in prop_oneof![Just(0.0), Just(1.0), Just(3.0)],
        optional in proptest::bool::ANY,
    ) {
        let problem = integral(&instance, scale, optional);
        let dense = DenseDp::default().solve_problem(&problem).unwrap();
        let fast = Dp::default().solve_problem(&problem).unwrap();
        prop_assert_eq!(dense.objective.is_some(), fast.objective.is_some());
        if let (Some(a), Some(b)) = (dense.objective, fast.objective) {
            prop_assert!(objectives_agree(a, b), "dense {} vs dp {}", a, b);
        }
    }
}

/// A case of `dps_agree_on_integral_values_of_small_instances` (in its regressions file) that
/// the runs alone cannot solve in budget (`tests/data/dense-finish-25.json`, every value 1): 25 jobs on
/// four small types, so a full packing (worth 25, the Lagrangian bound) is a four-dimensional
/// packing whose states no bound prunes. The runs alone create 8.0 M states in about a second
/// before the budget refuses the round. The dense DP's grid is 96,237 unit vectors (2.4 M cells
/// over the 25 jobs): once the runs reach a quarter of that, or the budget would refuse the round,
/// the dense DP finishes the solve (docs/solver.md step 5, "The dense finish").
#[test]
fn the_dense_finish_answers_a_round_small_for_the_dense_dp() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/dense-finish-25.json");
    let instance = Instance::from_path(&path).unwrap();
    let problem = integral(&instance, 0.0, false);
    let dense = DenseDp::default().solve_problem(&problem).unwrap();
    assert_eq!(dense.objective, Some(25.0));
    let cells = 96_237 * 25;
    assert_eq!(dense.stats.states(), Some(96_237));

    let fast = Dp::default().solve_problem(&problem).unwrap();
    assert_eq!(fast.solver, "dp");
    assert_eq!(fast.status, Status::Optimal);
    assert_eq!(fast.objective, Some(25.0));
    assert_eq!(fast.assignments.len(), 25);
    assert!(fast.assignments.iter().all(Option::is_some));
    assert_eq!(
        fast.stats.dp().and_then(|d| d.dense_cells),
        Some(cells),
        "{:?}",
        fast.stats
    );
    // The runs stopped at a quarter of the cells (a run stops one state past it).
    let states = fast.stats.states().unwrap();
    assert!(states >= cells / 4 && states < cells / 3, "{states} states");
    // The units the assignments use fit the capacities.
    for (k, &used) in fast.units_used.iter().enumerate() {
        assert!(used <= problem.capacity[k], "type {k}: {used} units");
    }

    // A budget below a quarter of the cells (200,000 states a layer, 400,000 for the runs):
    // the dense DP finishes where the budget would refuse, since it fits the layer's memory
    // (20 MB; it needs 3.9 MB). With 1,000 states a layer (100 kB) it does not fit, and the
    // round is refused.
    let mut small = Dp::default();
    small.max_states = 200_000;
    let finished = small.solve_problem(&problem).unwrap();
    assert_eq!(finished.objective, Some(25.0));
    assert_eq!(finished.stats.dp().and_then(|d| d.dense_cells), Some(cells));
    assert!(
        finished.stats.states().unwrap() < cells / 4,
        "{:?}",
        finished.stats
    );
    small.max_states = 1_000;
    assert!(matches!(
        small.solve_problem(&problem),
        Err(stsfair::SolveError::TooLarge { .. })
    ));

    // Without the finish, the runs alone go past the quarter of the cells: the case exercises
    // the finish.
    let mut runs_only = Dp::default();
    runs_only.dense_finish = false;
    match runs_only.solve_problem(&problem) {
        Err(stsfair::SolveError::TooLarge { .. }) => {}
        Ok(s) => assert!(s.stats.states().unwrap() > cells / 4, "{:?}", s.stats),
        Err(e) => panic!("{e}"),
    }
}

/// Each corruption applies to a good share of the random instances (and infeasible rounds occur),
/// so the property above exercises every `verify` rejection. Fixed seed: deterministic.
#[test]
fn corruptions_are_exercised() {
    let cases = 500;
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            ..Config::default()
        },
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let strategy = common::instance(common::Shape::TINY);
    let mut applied = vec![0usize; CORRUPTIONS.len()];
    let mut infeasible = 0;
    for _ in 0..cases {
        let instance = strategy.new_tree(&mut runner).unwrap().current();
        let dp = DenseDp::default().solve(&instance).unwrap();
        infeasible += usize::from(!feasible(&dp));
        let problem = RoundProblem::new(&instance);
        for (i, (_, corrupt)) in CORRUPTIONS.iter().enumerate() {
            applied[i] += usize::from(corrupt(&instance, &problem, &dp).is_some());
        }
    }
    for ((name, _), n) in CORRUPTIONS.iter().zip(&applied) {
        assert!(
            *n >= 25,
            "the {name} corruption applied to only {n} of {cases} instances"
        );
    }
    assert!(
        infeasible >= 5,
        "only {infeasible} of {cases} instances were infeasible"
    );
}

/// A round with no jobs is a valid, optimal, empty answer for both solvers.
#[test]
fn an_empty_round_is_optimal_with_nothing_assigned() {
    let instance = Instance::builder()
        .gpu_type("v100", 1, 4, &[1, 2, 4])
        .build()
        .unwrap();
    for solver in [&DenseDp::default() as &dyn Solver, &BruteForce::default()] {
        let s = solver.solve(&instance).unwrap();
        assert_eq!(s.status, Status::Optimal);
        assert_eq!(s.objective, Some(0.0));
        assert_eq!(s.assignments, Vec::<Assignment>::new());
        assert_eq!(s.units_used, vec![0]);
        verify(&instance, &s).unwrap();
    }
}

/// Regression: v = w * theta / theta_max computed left to right overflowed when w * theta does
/// (1e200 * 1e200), giving an infinite objective written as `null` and rejected by `verify`.
#[test]
fn huge_weight_times_huge_throughput_keeps_a_finite_objective() {
    let instance = Instance::builder()
        .gpu_type("v100", 2, 4, &[2, 4])
        .job(
            stsfair::JobSpec::new("a")
                .weight(1e200)
                .time("v100", 4, 1e-200)
                .time("v100", 2, 2e-200),
        )
        .job(
            stsfair::JobSpec::new("b")
                .weight(3e200)
                .time("v100", 4, 1.0),
        )
        .build()
        .unwrap();
    for solver in [&DenseDp::default() as &dyn Solver, &BruteForce::default()] {
        let s = solver.solve(&instance).unwrap();
        // a on its whole GPU (v = 1e200 * (1e200 / 1e200)) and b on the other.
        assert_eq!(s.assignments, vec![Some((0, 4)), Some((0, 4))]);
        let objective = s.objective.unwrap();
        assert!(objectives_agree(objective, 4e200), "{objective}");
        verify(&instance, &s).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Weights over the whole accepted range, 10^e with e in [-300, 300]: brute force, the dense
    /// DP and the fast DP find the same feasibility and optimum, and `verify` accepts each
    /// answer.
    #[test]
    fn dps_match_brute_force_on_weights_from_1e_300_to_1e300(
        instance in common::spread(common::Shape::TINY, -300.0, 300.0),
    ) {
        let problem = RoundProblem::new(&instance);
        let fast = solvers_agree_with_brute_force(&problem, &instance.to_json().to_string())?;
        prop_assert!(verify(&instance, &fast).is_ok(), "verify rejects the fast dp's answer");
    }
}
