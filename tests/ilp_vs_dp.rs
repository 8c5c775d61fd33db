//! The ILP (HiGHS) against the dense DP and the fast DP: solvers that share no code must agree on
//! the optimum and on feasibility, and `verify` must accept what each returns. Also the status mapping of
//! the ILP (infeasible, limits, loosened gaps) and HiGHS's per-thread thread pool.
#![cfg(feature = "highs")]

mod common;

use proptest::prelude::*;
use stsfair::RoundProblem;
use stsfair::solution::objectives_agree;
use stsfair::{
    DenseDp, Dp, Fairness, Ilp, Instance, JobSpec, Solution, SolveError, Solver, Status, verify,
};

/// The ILP as an exactness check: HiGHS with its MIP presolve off. HiGHS 1.16.0's presolve
/// returns a suboptimal answer as optimal on rare rounds
/// (`highs_presolve_defect_is_avoided_with_presolve_off` below); with presolve off it has agreed
/// with the DPs on every case.
fn exact_ilp() -> Ilp {
    Ilp::default().with_presolve(false)
}

/// The random cases' time limit for the ILP, so that a case HiGHS cannot close ends the
/// comparison with a note instead of hanging the suite (once in about 15 runs of the suite one
/// thread was still busy after 10 minutes; these cases take milliseconds).
const RANDOM_CASE_SECONDS: f64 = 60.0;

/// The random cases' ILP: [`exact_ilp`] under [`RANDOM_CASE_SECONDS`].
fn random_case_ilp() -> Ilp {
    exact_ilp().with_time_limit(Some(RANDOM_CASE_SECONDS))
}

/// The ILP's answer to a random case, or `None` (with a note on stderr naming the instance)
/// when its time limit stopped it.
fn ilp_within_limit(got: Result<Solution, SolveError>, instance: &Instance) -> Option<Solution> {
    match got {
        Ok(s) if !matches!(s.status, Status::Feasible { .. }) => Some(s),
        Ok(_) | Err(SolveError::NoSolutionWithinLimit { .. }) => {
            eprintln!(
                "the ILP reached its {RANDOM_CASE_SECONDS} s limit, not compared: {}",
                instance.to_json()
            );
            None
        }
        Err(e) => panic!("the ILP fails on a small instance: {e}"),
    }
}

fn assert_agree(instance: &Instance, ilp: &Ilp) {
    let dp = DenseDp::default()
        .solve(instance)
        .expect("the dense DP solves small instances");
    let fast = Dp::default()
        .solve(instance)
        .expect("the fast DP solves small instances");
    verify(instance, &fast).expect("verify accepts the fast DP's answer");
    let Some(got) = ilp_within_limit(ilp.solve(instance), instance) else {
        // The two DPs still agree.
        assert_eq!(fast.objective.is_some(), dp.objective.is_some());
        if let (Some(a), Some(b)) = (fast.objective, dp.objective) {
            assert!(objectives_agree(a, b), "fast dp {a} vs dense dp {b}");
        }
        return;
    };
    verify(instance, &got).expect("verify accepts the ILP's answer");
    assert_eq!(
        fast.objective.is_some(),
        got.objective.is_some(),
        "fast dp {:?} vs ilp {:?}",
        fast.status,
        got.status
    );
    if let (Some(a), Some(b)) = (fast.objective, got.objective) {
        assert!(
            objectives_agree(a, b),
            "fast dp {a} vs ilp {b}, instance {}",
            instance.to_json()
        );
    }
    match (&dp.status, &got.status) {
        (Status::Infeasible { .. }, Status::Infeasible { reason }) => {
            assert!(!reason.to_string().is_empty())
        }
        (Status::Optimal, Status::Optimal) => {
            let (a, b) = (dp.objective.unwrap(), got.objective.unwrap());
            assert!(
                objectives_agree(a, b),
                "dp {a} vs ilp {b}, instance {}",
                instance.to_json()
            );
        }
        (d, i) => panic!(
            "dp says {d:?}, ilp says {i:?}, instance {}",
            instance.to_json()
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Same feasibility, same optimum (1e-9 relative), and a verified answer.
    #[test]
    fn ilp_matches_dense_dp(instance in common::instance(common::Shape::SMALL)) {
        assert_agree(&instance, &random_case_ilp());
    }
}

/// The solvers on a round problem whose forced jobs' service is priced (what the round mechanism
/// solves with `--prices lp`): the same optimum from the ILP, the dense DP and the fast DP.
fn assert_agree_priced(instance: &Instance, prices: &[f64]) {
    let mut problem = RoundProblem::new(instance);
    problem.price_forced(prices);
    let dense = DenseDp::default()
        .solve_problem(&problem)
        .expect("dense dp");
    let fast = Dp::default().solve_problem(&problem).expect("fast dp");
    let ilp = ilp_within_limit(random_case_ilp().solve_problem(&problem), instance);
    // Without the ILP's answer (its time limit), the two DPs still agree.
    let objectives = [
        dense.objective,
        fast.objective,
        ilp.map_or(dense.objective, |s| s.objective),
    ];
    assert!(
        objectives
            .iter()
            .all(|o| o.is_some() == objectives[0].is_some()),
        "feasibility differs: {objectives:?}, prices {prices:?}, instance {}",
        instance.to_json()
    );
    if let [Some(a), Some(b), Some(c)] = objectives {
        assert!(
            objectives_agree(a, b) && objectives_agree(a, c),
            "dense {a}, fast {b}, ilp {c}, prices {prices:?}, instance {}",
            instance.to_json()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Priced forced jobs (prices from a few values, 0 included, so that identical jobs with
    /// different prices and ties occur): the three solvers agree.
    #[test]
    fn solvers_agree_on_priced_rounds(
        instance in common::instance(common::Shape::SMALL),
        raw in proptest::collection::vec(prop_oneof![Just(0.0), Just(0.25), Just(1.0), 0.0..3.0], 25),
    ) {
        assert_agree_priced(&instance, &raw[..instance.jobs().len().min(raw.len())]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// Rounds larger than the other tests', made of a few jobs copied up to 40 times on up to 12
    /// GPUs per type (classes the LP splits between tied choices): fast DP against the ILP.
    #[test]
    fn fast_dp_matches_ilp_on_many_copies(instance in common::repeated(
        common::Shape { max_jobs: 0, max_types: 3, max_count: 12, max_workers: 3 }, 40)) {
        let fast = Dp::default().solve(&instance).unwrap();
        verify(&instance, &fast).unwrap();
        let Some(ilp) = ilp_within_limit(random_case_ilp().solve(&instance), &instance) else {
            return Ok(());
        };
        prop_assert_eq!(fast.objective.is_some(), ilp.objective.is_some());
        if let (Some(a), Some(b)) = (fast.objective, ilp.objective) {
            prop_assert!(objectives_agree(a, b), "fast dp {} vs ilp {}", a, b);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// With a loosened gap HiGHS may stop early: the answer is then "feasible" with a gap that
    /// covers the distance to the true optimum, and "optimal" only when it is the optimum.
    #[test]
    fn loose_gap_is_honest(instance in common::instance(common::Shape::SMALL)) {
        let exact = DenseDp::default().solve(&instance).unwrap();
        let loose = exact_ilp().with_mip_rel_gap(0.5).solve(&instance).unwrap();
        verify(&instance, &loose).unwrap();
        if let Some(best) = exact.objective {
            let got = loose.objective.unwrap();
            prop_assert!(got <= best + 1e-9 * best.abs().max(1.0));
            match loose.status {
                Status::Optimal => prop_assert!(objectives_agree(best, got)),
                Status::Feasible { gap } => {
                    prop_assert!(gap <= 0.5 + 1e-9);
                    // HiGHS's bound is at least the optimum, so the gap covers the shortfall.
                    prop_assert!(got * (1.0 + gap) >= best - 1e-9 * best.abs().max(1.0));
                }
                Status::Infeasible { .. } => prop_assert!(false, "feasible instance called infeasible"),
            }
        } else {
            let infeasible = matches!(loose.status, Status::Infeasible { .. });
            prop_assert!(infeasible, "infeasible instance answered {:?}", loose.status);
        }
    }
}

fn fairness() -> Fairness {
    Fairness {
        lambda: 1.0,
        max_debt: 1.0,
        credit: 1.0,
    }
}

#[test]
fn two_forced_jobs_on_one_whole_gpu_are_infeasible() {
    // One GPU, whole-GPU slots only; both jobs are behind (deficit 1 > 0), so both must run.
    let instance = Instance::builder()
        .fairness(fairness())
        .gpu_type("v100", 1, 4, &[4])
        .job(JobSpec::new("a").deficit(1.0).time("v100", 4, 0.5))
        .job(JobSpec::new("b").deficit(1.0).time("v100", 4, 0.5))
        .build()
        .unwrap();
    let got = exact_ilp().solve(&instance).unwrap();
    match &got.status {
        Status::Infeasible { reason } => {
            assert!(reason.to_string().contains("v100"), "reason: {reason}")
        }
        other => panic!("expected infeasible, got {other:?}"),
    }
    assert!(got.objective.is_none() && got.assignments.is_empty());
    verify(&instance, &got).unwrap();
    assert_agree(&instance, &exact_ilp());
}

#[test]
fn identical_jobs_tie_and_fill_the_capacity() {
    // Six identical jobs on 8 units; 1- and 2-unit slots are worth the same per unit, so many
    // assignments reach the optimum (all 8 units in small slots), with one value.
    let mut b = Instance::builder()
        .fairness(fairness())
        .gpu_type("v100", 2, 4, &[1, 2, 4]);
    for j in 0..6 {
        b = b.job(
            JobSpec::new(format!("j{j}"))
                .time("v100", 4, 0.2)
                .time("v100", 2, 0.25)
                .time("v100", 1, 0.5),
        );
    }
    let instance = b.build().unwrap();
    let got = exact_ilp().solve(&instance).unwrap();
    assert_eq!(got.status, Status::Optimal);
    assert_eq!(got.units_used, vec![8]);
    assert_agree(&instance, &exact_ilp());
}

#[test]
fn everything_forced_runs_every_job() {
    // Four jobs, all behind (m_j = 0.1 > 0), on 8 units: every one must run.
    let mut b = Instance::builder()
        .fairness(fairness())
        .gpu_type("v100", 2, 4, &[1, 2, 4]);
    for j in 0..4 {
        b = b.job(
            JobSpec::new(format!("j{j}"))
                .deficit(0.1)
                .time("v100", 4, 0.2)
                .time("v100", 2, 0.3)
                .time("v100", 1, 0.7),
        );
    }
    let instance = b.build().unwrap();
    let got = exact_ilp().solve(&instance).unwrap();
    assert_eq!(got.status, Status::Optimal);
    assert!(
        got.assignments.iter().all(Option::is_some),
        "{:?}",
        got.assignments
    );
    verify(&instance, &got).unwrap();
    assert_agree(&instance, &exact_ilp());
}

#[test]
fn no_options_at_all_is_all_idle() {
    // The job's only time is for a slot larger than the GPU has: no admissible option.
    let instance = Instance::builder()
        .fairness(fairness())
        .gpu_type("v100", 1, 4, &[1, 2, 4])
        .job(JobSpec::new("a").workers(2).time("v100", 4, 0.5))
        .build()
        .unwrap();
    let got = exact_ilp().solve(&instance).unwrap();
    verify(&instance, &got).unwrap();
    assert_agree(&instance, &exact_ilp());
}

/// A round large enough that HiGHS cannot finish presolve in no time at all.
fn medium_instance() -> Instance {
    let mut b = Instance::builder().fairness(fairness());
    for k in 0..3 {
        b = b.gpu_type(format!("g{k}"), 20, 4, &[1, 2, 4]);
    }
    for j in 0..300u32 {
        let mut spec = JobSpec::new(format!("j{j}")).deficit(if j % 10 == 0 { 0.05 } else { -1.0 });
        for k in 0..3u32 {
            // Deterministic, varied times; bigger slots never slower.
            let base = 0.1 + f64::from((j * 7 + k * 13) % 17) / 40.0;
            spec = spec
                .time(format!("g{k}"), 4, base)
                .time(format!("g{k}"), 2, base * 1.4)
                .time(format!("g{k}"), 1, base * 2.3);
        }
        b = b.job(spec);
    }
    b.build().unwrap()
}

#[test]
fn a_zero_time_limit_stops_before_any_solution() {
    let instance = medium_instance();
    let got = exact_ilp().with_time_limit(Some(0.0)).solve(&instance);
    match got {
        Err(SolveError::NoSolutionWithinLimit { solver, limit }) => {
            assert_eq!(solver, "ilp");
            assert!(limit.contains("time limit"), "{limit}");
        }
        other => panic!("expected no solution within the limit, got {other:?}"),
    }
    // Without the limit the same round solves, with the stats the docs promise.
    let solved = exact_ilp().solve(&instance).unwrap();
    assert_eq!(solved.status, Status::Optimal);
    verify(&instance, &solved).unwrap();
    assert!(solved.stats.seconds > 0.0, "{:?}", solved.stats);
    let stats = solved.stats.ilp().expect("the ILP's counters");
    assert!(stats.seconds_build.is_some(), "{stats:?}");
    assert!(stats.seconds_solve.is_some(), "{stats:?}");
    assert!(stats.mip_gap.is_some(), "{stats:?}");
    assert!(stats.nodes.is_some(), "{stats:?}");
    assert_eq!(stats.variables, Some(300 * 9));
}

#[test]
fn every_solve_gets_the_threads_it_asks_for() {
    // HiGHS fixes its scheduler per calling thread; the ILP runs each solve on a fresh thread, so
    // changing `threads` between solves in one thread works.
    let instance = medium_instance();
    let one = exact_ilp().solve(&instance).unwrap();
    let two = exact_ilp().with_threads(2).solve(&instance).unwrap();
    let again = exact_ilp().solve(&instance).unwrap();
    for s in [&two, &again] {
        assert_eq!(s.status, Status::Optimal);
        assert!(objectives_agree(
            one.objective.unwrap(),
            s.objective.unwrap()
        ));
    }
}

/// More threads than `MAX_ILP_THREADS` are refused before HiGHS starts: HiGHS would make them
/// all at its first solve and abort the process when it cannot (through `stsfair solve
/// --threads` too).
#[test]
fn too_many_threads_are_refused_before_highs_starts() {
    let instance = medium_instance();
    for threads in [stsfair::solvers::MAX_ILP_THREADS + 1, usize::MAX] {
        let err = exact_ilp()
            .with_threads(threads)
            .solve(&instance)
            .unwrap_err();
        assert!(
            err.to_string().contains(&format!(
                "threads = {threads} is more than the 256 the ILP allows"
            )),
            "{err}"
        );
    }
}

#[test]
fn highs_alone_refuses_a_second_thread_count_on_one_thread() {
    // What the fresh thread per solve works around: raw HiGHS, same OS thread, threads 1 then 2.
    use highs::{ColProblem, Sense};
    let run = |threads: i32| {
        let mut pb = ColProblem::default();
        let row = pb.add_row(..=1.0);
        pb.add_integer_column(1.0, 0.0..=1.0, [(row, 1.0)]);
        pb.add_integer_column(2.0, 0.0..=1.0, [(row, 1.0)]);
        let mut model = pb.try_optimise(Sense::Maximise).unwrap();
        model.try_set_option("threads", threads).unwrap();
        model.try_solve().map(|s| s.objective_value())
    };
    std::thread::spawn(move || {
        assert_eq!(run(1), Ok(2.0));
        assert!(
            run(2).is_err(),
            "HiGHS accepted a second thread count on the same thread"
        );
    })
    .join()
    .unwrap();
}

/// Rounds of a large integrality gap: round 4 of `stsfair rounds instances/gavel-36x3-300.json`
/// has a Lagrangian bound 0.38 above its optimum (0.2%, where the shipped rounds have 0.001%),
/// which keeps every job in the core; the DP refused it as too large before the type tables
/// (docs/solver.md step 6). The plain DP (no ILP fallback) must answer the first five rounds,
/// each equal to the ILP's optimum.
#[test]
fn fast_dp_solves_rounds_of_large_integrality_gap() {
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/gavel-36x3-300.json");
    let instance = Instance::from_path(&file).unwrap();
    let mut scheduler = stsfair::RoundScheduler::new(&instance, Box::new(Dp::default()));
    for round in 1..=5 {
        let plan = scheduler
            .plan()
            .unwrap_or_else(|e| panic!("round {round}: the dp gives no plan: {e}"));
        verify(&plan.instance, &plan.solution).unwrap();
        let ilp = exact_ilp().solve(&plan.instance).unwrap();
        let (a, b) = (plan.solution.objective.unwrap(), ilp.objective.unwrap());
        assert!(
            objectives_agree(a, b),
            "round {round}: fast dp {a} vs ilp {b}"
        );
        scheduler.report_planned(&plan).unwrap();
    }
}

/// The shipped hard round (`instances/round4-gavel-36x3-300.json`, an integrality gap of 0.23%):
/// the plain DP answers it, with the ILP's optimum.
#[test]
fn fast_dp_solves_the_shipped_hard_round() {
    fast_dp_matches_the_ilp_on("instances/round4-gavel-36x3-300.json", 166.336555108);
}

/// The fast DP on the shipped instance `path`: verified, equal to the ILP's optimum, which is
/// `optimum` (to 1e-6).
fn fast_dp_matches_the_ilp_on(path: &str, optimum: f64) {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let instance = Instance::from_path(&file).unwrap();
    let dp = Dp::default().solve(&instance).unwrap();
    verify(&instance, &dp).unwrap();
    let ilp = exact_ilp().solve(&instance).unwrap();
    let (a, b) = (dp.objective.unwrap(), ilp.objective.unwrap());
    assert!(objectives_agree(a, b), "{path}: fast dp {a} vs ilp {b}");
    assert!((a - optimum).abs() < 1e-6, "{path}: {a}");
}

/// The first round of `stsfair rounds instances/gavel-100x3-1000.json` that the DP refused
/// before the pair tables on 401 x 401 grids (`instances/hard/round6-gavel-100x3-1000.json`,
/// a gap of 0.32 of 488.39 between the Lagrangian bound and the optimum): the plain DP answers
/// it, with the ILP's optimum.
#[test]
fn fast_dp_solves_the_shipped_100_gpu_hard_round() {
    fast_dp_matches_the_ilp_on("instances/hard/round6-gavel-100x3-1000.json", 488.069587945);
}

/// A round on which HiGHS 1.16.0 with its default presolve reports 15.8233 as optimal; the
/// optimum is 15.8835 (brute force, the dense DP and the fast DP agree, and `verify` accepts
/// it), and HiGHS finds it with presolve off. The default ILP's answer is optimal only where it
/// is the optimum (a later HiGHS may fix the defect), else feasible with the DP's optimum as its
/// bound.
#[test]
fn highs_presolve_defect_is_avoided_with_presolve_off() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/highs-presolve-defect.json");
    let instance = Instance::from_path(&path).unwrap();
    let brute = stsfair::BruteForce::default().solve(&instance).unwrap();
    let optimum = brute.objective.unwrap();
    assert!((optimum - 15.883515409).abs() < 1e-8, "{optimum}");
    assert_agree(&instance, &exact_ilp());
    // With presolve (the default), HiGHS's answer is checked against the exact DP's optimum:
    // optimal only where it is the optimum, else feasible with a gap that covers the distance.
    let default = Ilp::default().solve(&instance).unwrap();
    let got = default.objective.unwrap();
    match default.status {
        Status::Optimal => assert!(objectives_agree(optimum, got), "optimal {got}"),
        Status::Feasible { gap } => {
            assert!(got * (1.0 + gap) >= optimum - 1e-9, "{got} gap {gap}");
            let bound = default.stats.bound.unwrap();
            assert!(objectives_agree(optimum, bound), "bound {bound}");
        }
        other => panic!("{other:?}"),
    }
}

/// The multi-GPU simulation's round with no solution (`tests/data/multi-unpackable-36x3-88.json`,
/// `dp_exact.rs`): HiGHS proves it infeasible too, independently of the forced jobs'
/// reachability by which the DP and `verify` answer.
#[test]
fn the_ilp_agrees_the_simulations_unpackable_round_has_no_solution() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/multi-unpackable-36x3-88.json");
    let instance = Instance::from_path(&path).unwrap();
    let ilp = exact_ilp().solve(&instance).unwrap();
    assert!(
        matches!(ilp.status, Status::Infeasible { .. }),
        "{:?}",
        ilp.status
    );
    let dp = Dp::default().solve(&instance).unwrap();
    assert!(matches!(dp.status, Status::Infeasible { .. }));
}

/// Every solver on a round of spread weights: brute force is the truth; an `optimal` answer of
/// any solver must have its objective (1e-9 relative), a `feasible` one a gap that covers the
/// distance, and `verify` must accept each answer.
fn assert_optimal_means_optimal(instance: &Instance, ilp: &Ilp) -> Result<(), TestCaseError> {
    let brute = stsfair::BruteForce::default().solve(instance).unwrap();
    let answers = [
        DenseDp::default().solve(instance).unwrap(),
        Dp::default().solve(instance).unwrap(),
        ilp.solve(instance).unwrap(),
    ];
    for got in &answers {
        let context = || format!("{} on {}", got.solver, instance.to_json());
        prop_assert!(
            verify(instance, got).is_ok(),
            "verify rejects {}",
            context()
        );
        match (&got.status, brute.objective, got.objective) {
            (Status::Infeasible { .. }, None, None) => {}
            (Status::Optimal, Some(best), Some(o)) => prop_assert!(
                objectives_agree(best, o),
                "optimal {o}, brute force {best}: {}",
                context()
            ),
            (Status::Feasible { gap }, Some(best), Some(o)) => prop_assert!(
                o * (1.0 + gap) >= best - 1e-9 * best.abs().max(1.0),
                "feasible {o} with gap {gap}, brute force {best}: {}",
                context()
            ),
            (s, b, _) => prop_assert!(false, "{s:?} against brute force {b:?}: {}", context()),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Weights 10^e with e in [-12, 12], the ILP with HiGHS's defaults (presolve on): no solver
    /// calls a non-optimal answer optimal.
    #[test]
    fn optimal_answers_are_optimal_on_weights_from_1e_12_to_1e12(
        instance in common::spread(common::Shape::TINY, -12.0, 12.0),
    ) {
        assert_optimal_means_optimal(&instance, &Ilp::default())?;
    }

    /// The same over the whole accepted range, 10^e with e in [-300, 300].
    #[test]
    fn optimal_answers_are_optimal_on_weights_from_1e_300_to_1e300(
        instance in common::spread(common::Shape::TINY, -300.0, 300.0),
    ) {
        assert_optimal_means_optimal(&instance, &Ilp::default())?;
    }
}

/// One v100 (units 4, ladder 1/2/4) and two jobs: a takes 1.0 s per iteration on 4 units and 1.5
/// on 2, b 1.0 and 1.9. Both on half a GPU are worth 1.1930 times the weight, one on the whole
/// GPU 1.0 times it.
fn two_jobs_of_weight(weight: f64, third: Option<f64>) -> Instance {
    let mut b = Instance::builder()
        .gpu_type("v100", 1, 4, &[1, 2, 4])
        .job(
            JobSpec::new("a")
                .weight(weight)
                .time("v100", 4, 1.0)
                .time("v100", 2, 1.5),
        )
        .job(
            JobSpec::new("b")
                .weight(weight)
                .time("v100", 4, 1.0)
                .time("v100", 2, 1.9),
        );
    if let Some(w) = third {
        b = b.job(JobSpec::new("c").weight(w).time("v100", 1, 1.0));
    }
    b.build().unwrap()
}

/// The ILP (HiGHS's defaults, presolve on) answered `optimal` with 1e-7 where the optimum is
/// 1.193e-7, for every weight from 1e-8 to 3e-7, and failed (`objective inf`, model status
/// Unknown) at 1e20 and 1e300. Now it gives the optimum at every weight from 1e-300 to 1e300,
/// and `verify` certifies it.
#[test]
fn ilp_is_optimal_on_tiny_and_huge_weights() {
    let weights = [
        1e-300, 1e-100, 1e-12, 1e-8, 3e-8, 1e-7, 2e-7, 3e-7, 1.0, 1e12, 1e20, 1e100, 1e300,
    ];
    for w in weights {
        for third in [None, Some(1.0), Some(1e-7)] {
            let instance = two_jobs_of_weight(w, third);
            let brute = stsfair::BruteForce::default().solve(&instance).unwrap();
            let ilp = Ilp::default().solve(&instance).unwrap();
            let (best, got) = (brute.objective.unwrap(), ilp.objective.unwrap());
            assert_eq!(ilp.status, Status::Optimal, "weight {w}, third {third:?}");
            assert!(
                objectives_agree(best, got),
                "weight {w}, third {third:?}: ilp {got}, brute {best}"
            );
            let verified = verify(&instance, &ilp).unwrap();
            assert!(verified.optimality.is_certified(), "weight {w}");
        }
    }
}
