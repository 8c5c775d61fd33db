//! The round mechanism: the deficit update rule with its per-job credit bound, relaxation that
//! keeps the most forced jobs, rounds that never fail, hand-worked runs, the `rounds` command,
//! and (ignored by default, long) the acceptance runs on Gavel-derived clusters.

mod common;

use std::path::Path;
use std::time::Instant;

use common::{Shape, instance};
use proptest::prelude::*;
use stsfair::formulation::RoundProblem;
use stsfair::rounds::{RoundScheduler, RunSummary, SchedulerSnapshot, run_rounds, update_deficit};
use stsfair::solution::Solution;
use stsfair::solvers::{SolveError, SolverConfig, SolverKind};
use stsfair::{
    BruteForce, DenseDp, Dp, Fairness, Instance, JobSpec, Placement, RoundError, Solver, Status,
    verify, verify_feasible,
};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// After any report, every job of the round with F_j > 0 has D_j = max(-B_j, D_j + lambda -
    /// realized / F_j) (idle: realized 0), bit for bit, with B_j = max(B, sigma_hat_j - lambda)
    /// and sigma_hat_j the largest theta / F_j over all the job's options; jobs with F_j = 0 keep
    /// D_j.
    #[test]
    fn deficits_follow_the_update_rule(
        inst in instance(Shape::TINY),
        realized in proptest::collection::vec(prop_oneof![Just(None), (0.0f64..20.0).prop_map(Some)], 6),
    ) {
        let mut s = RoundScheduler::new(&inst, Box::new(BruteForce::default()));
        let plan = s.plan().unwrap();
        let report: Vec<(&str, f64)> = plan
            .jobs
            .iter()
            .zip(&realized)
            .filter_map(|(j, r)| r.map(|x| (j.id.as_str(), x)))
            .collect();
        let service = s.report(&report).unwrap();
        let f = inst.fairness();
        for (j, job) in inst.jobs().iter().enumerate() {
            let fair = plan.jobs[j].fair_rate;
            let got = report.iter().find(|(id, _)| *id == job.id()).map_or(0.0, |r| r.1);
            let best = job.options().iter().map(|o| o.throughput / fair).fold(0.0, f64::max);
            let credit = if fair > 0.0 && best > 0.0 { f.credit.max(best - f.lambda) } else { f.credit };
            prop_assert_eq!(plan.jobs[j].credit, credit);
            prop_assert!(credit >= f.credit);
            let expected = if fair > 0.0 {
                let d = job.deficit() + f.lambda - got / fair;
                if d < -credit { -credit } else { d }
            } else {
                job.deficit()
            };
            prop_assert_eq!(s.deficit(job.id()), Some(expected));
            prop_assert_eq!(service[j].deficit, expected);
            prop_assert!(service[j].deficit >= -credit || fair == 0.0);
        }
    }

    /// Rounds never fail: several rounds of random instances (relaxing whenever the forced jobs
    /// do not fit), every plan valid against the instance it solved and fully placed.
    #[test]
    fn rounds_never_fail(inst in instance(Shape::TINY)) {
        let mut s = RoundScheduler::new(&inst, Box::new(DenseDp::default()));
        for _ in 0..6 {
            let plan = s.plan().unwrap();
            verify(&plan.instance, &plan.solution).unwrap();
            for g in &plan.placement.gpus {
                prop_assert!(g.used() <= g.units);
            }
            s.report_planned(&plan).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Priced rounds (random prices per job, 0 included) keep what the mechanism guarantees:
    /// over 6 rounds every plan verifies against the instance it solved; every forced job that
    /// is not relaxed runs an option with sigma >= m_j (or of largest sigma when it cannot catch
    /// up); from the same deficits, the same forced and relaxed jobs as unpriced (prices change
    /// options, not who must run); the plan's objective is the model's v of its choices and the optimum of the priced
    /// problem (brute force on it); and no optional job's value is priced.
    #[test]
    fn priced_rounds_keep_the_guarantees(
        inst in instance(Shape::TINY),
        prices in proptest::collection::vec(prop_oneof![Just(0.0), 0.0f64..5.0], 6),
    ) {
        let prices = prices[..inst.jobs().len().min(prices.len())].to_vec();
        let mut priced = RoundScheduler::new(&inst, Box::new(DenseDp::default()))
            .with_service_prices(FixedPrices(Ok(Some(prices.clone()))));
        let mut plain = RoundScheduler::new(&inst, Box::new(DenseDp::default()));
        for round in 0..6 {
            let plan = priced.plan().unwrap();
            let other = plain.plan().unwrap();
            verify_feasible(&plan.instance, &plan.solution).unwrap();
            let problem = RoundProblem::new(&plan.instance);
            for ((p, q), job) in plan.jobs.iter().zip(&other.jobs).zip(&problem.jobs) {
                // From the same deficits (round 0), the same jobs must run; later the deficits
                // differ by the options taken.
                if round == 0 {
                    prop_assert_eq!((p.forced, p.relaxed), (q.forced, q.relaxed));
                }
                if p.forced && !p.relaxed {
                    let sigma = p.sigma;
                    let best = job.options.iter().map(|o| o.sigma).fold(f64::NEG_INFINITY, f64::max);
                    prop_assert!(p.run.is_some());
                    prop_assert!(sigma >= p.minimum || sigma == best, "{} < {}", sigma, p.minimum);
                }
            }
            let mut values = problem.clone();
            values.price_forced(&prices);
            for (a, b) in values.jobs.iter().zip(&problem.jobs) {
                if a.may_idle() {
                    prop_assert_eq!(&a.options, &b.options);
                }
            }
            let best = BruteForce::default().solve_problem(&values).unwrap().objective.unwrap();
            let chosen = chosen_value(&plan.solution, &values);
            prop_assert!((chosen - best).abs() <= 1e-9 * best.abs().max(1.0), "{} vs {}", chosen, best);
            let v = chosen_value(&plan.solution, &problem);
            prop_assert!((v - plan.objective).abs() <= 1e-9 * v.abs().max(1.0));
            priced.report_planned(&plan).unwrap();
            plain.report_planned(&other).unwrap();
        }
    }
}

proptest! {
    // Most random instances force fewer than two jobs (a type without a whole-GPU slot gives
    // F_j = 0): allow the rejections.
    #![proptest_config(ProptestConfig { cases: 256, max_global_rejects: 100_000, ..ProptestConfig::default() })]

    /// Relaxation keeps the most forced jobs that fit: checked against brute force over every
    /// subset of the forced jobs. The plan is the optimum of the round it solved (brute force on
    /// that instance), deterministic (two schedulers give the same plan), the dense DP keeps as
    /// many, a relaxed round takes 3 solver calls, the relaxed jobs are listed by decreasing m_j,
    /// the answer verifies against the instance that was solved, and placement holds every
    /// running job.
    #[test]
    fn relaxation_keeps_the_most_forced_jobs_that_fit(
        inst in instance(Shape::TINY),
        behind in proptest::collection::vec(prop_oneof![1 => Just(None), 4 => (3.0f64..8.0).prop_map(Some)], 6),
    ) {
        // Most jobs far behind, so that most rounds need relaxing.
        let deficits: Vec<f64> = inst
            .jobs()
            .iter()
            .zip(&behind)
            .map(|(j, b)| b.unwrap_or(j.deficit()))
            .collect();
        let inst = inst.with_deficits(&deficits).unwrap();
        // At least two forced jobs: otherwise there is nothing to choose.
        prop_assume!(RoundProblem::new(&inst).forced().count() >= 2);
        let plan = RoundScheduler::new(&inst, Box::new(BruteForce::default())).plan().unwrap();
        let again = RoundScheduler::new(&inst, Box::new(BruteForce::default())).plan().unwrap();
        let dense = RoundScheduler::new(&inst, Box::new(DenseDp::default())).plan().unwrap();
        prop_assert_eq!(&plan.relaxed, &again.relaxed);
        prop_assert_eq!(&plan.jobs, &again.jobs);
        prop_assert_eq!(plan.relaxed.len(), dense.relaxed.len());
        verify(&plan.instance, &plan.solution).unwrap();
        prop_assert_eq!(plan.solves, if plan.relaxed.is_empty() { 1 } else { 3 });
        let best = BruteForce::default().solve(&plan.instance).unwrap().objective.unwrap();
        let tol = 1e-9 * best.abs().max(1.0);
        prop_assert!((plan.objective - best).abs() <= tol, "{} vs {}", plan.objective, best);

        // Brute force over subsets: the largest number of forced jobs that can stay forced.
        let problem = RoundProblem::new(&inst);
        let forced: Vec<usize> = problem.forced().collect();
        prop_assume!(forced.len() <= 6);
        let f = inst.fairness();
        let low = -(f.lambda + f.max_debt + 1.0);
        let mut most = 0;
        for mask in 0u32..(1 << forced.len()) {
            let kept = mask.count_ones() as usize;
            if kept <= most {
                continue;
            }
            let mut deficits: Vec<f64> = inst.jobs().iter().map(|j| j.deficit()).collect();
            for (i, &j) in forced.iter().enumerate() {
                if mask >> i & 1 == 0 {
                    deficits[j] = low;
                }
            }
            let s = BruteForce::default().solve(&inst.with_deficits(&deficits).unwrap()).unwrap();
            if s.objective.is_some() {
                most = kept;
            }
        }
        prop_assert_eq!(forced.len() - plan.relaxed.len(), most);

        let minimum = |id: &String| plan.jobs.iter().find(|j| &j.id == id).unwrap().minimum;
        for w in plan.relaxed.windows(2) {
            prop_assert!(minimum(&w[0]) >= minimum(&w[1]));
        }
        for (j, p) in plan.jobs.iter().enumerate() {
            prop_assert_eq!(p.relaxed, plan.relaxed.contains(&p.id));
            let placed = plan.placement.gpus_of(&p.id);
            let workers = inst.jobs()[j].workers() as usize;
            prop_assert_eq!(placed.len(), if p.run.is_some() { workers } else { 0 });
        }
    }

}

/// Sum of `w_j^exponent * theta / theta_max_j` over the options `assignment` names.
fn tempered_value(
    problem: &RoundProblem,
    inst: &Instance,
    assignment: &[Option<(usize, u32)>],
    exponent: f64,
) -> f64 {
    let mut value = 0.0;
    for (j, a) in assignment.iter().enumerate() {
        if let Some((gpu, slot)) = *a {
            let job = &inst.jobs()[j];
            let o = job
                .options()
                .iter()
                .find(|o| o.gpu == gpu && o.slot == slot)
                .unwrap();
            value += job.weight().powf(exponent) * (o.throughput / problem.jobs[j].max_throughput);
        }
    }
    value
}

/// The largest tempered value over every assignment that runs exactly the jobs of `running`,
/// each on an admissible option of `problem`, within the capacities: brute force, counting
/// through every combination of the running jobs' options like an odometer.
fn best_tempered(problem: &RoundProblem, inst: &Instance, running: &[bool], exponent: f64) -> f64 {
    let jobs: Vec<usize> = (0..running.len()).filter(|&j| running[j]).collect();
    let mut digits = vec![0usize; jobs.len()];
    let mut best = f64::NEG_INFINITY;
    loop {
        let mut used = vec![0u64; problem.capacity.len()];
        let mut chosen: Vec<Option<(usize, u32)>> = vec![None; running.len()];
        for (&j, &d) in jobs.iter().zip(&digits) {
            if let Some(o) = problem.jobs[j].options.get(d) {
                used[o.gpu] += o.units;
                chosen[j] = Some((o.gpu, o.slot));
            }
        }
        let fits = used.iter().zip(&problem.capacity).all(|(u, c)| u <= c);
        if fits && jobs.iter().all(|&j| chosen[j].is_some()) {
            best = best.max(tempered_value(problem, inst, &chosen, exponent));
        }
        // Next combination.
        let mut i = 0;
        loop {
            if i == jobs.len() {
                return best;
            }
            digits[i] += 1;
            if digits[i] < problem.jobs[jobs[i]].options.len() {
                break;
            }
            digits[i] = 0;
            i += 1;
        }
    }
}

proptest! {
    // About 1 case in 70 changes where a job runs (most tiny rounds have one way to run their
    // jobs): many cases, each a fraction of a millisecond.
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// The second stage (`RoundScheduler::with_second_stage`), with the brute force, the DP and
    /// the dense DP: the same jobs run as in the plan without it (same solver), the plan verifies
    /// against the instance it solved (every minimum and capacity holds, its objective is the
    /// round problem's value of its assignment), that objective is at most the plan's without
    /// the stage, and the tempered value `w^a * theta / theta_max` of its options is the largest
    /// that any assignment of the same running jobs reaches (brute force over all of them).
    /// When the running jobs' weights are all equal no second solve is made and the plan is the
    /// plain one.
    #[test]
    fn second_stage_keeps_who_runs_and_chooses_where_exactly(
        inst in instance(Shape::TINY),
        spread in proptest::collection::vec(0i32..3, 6),
        exponent in prop_oneof![Just(0.0), Just(0.5), 0.0f64..1.0],
    ) {
        // Weights spread by factors of 8, as attained-service weights are: where the two stages
        // differ.
        let mut doc: serde_json::Value = serde_json::from_str(&inst.to_json()).unwrap();
        for (job, e) in doc["jobs"].as_array_mut().unwrap().iter_mut().zip(&spread) {
            let w = job.get("weight").and_then(serde_json::Value::as_f64).unwrap_or(1.0);
            job["weight"] = (w * 8f64.powi(*e)).into();
        }
        let inst = Instance::from_json(&doc.to_string()).unwrap();
        let solvers: [fn() -> Box<dyn Solver>; 3] = [
            || Box::new(BruteForce::default()),
            || Box::new(stsfair::Dp::default()),
            || Box::new(DenseDp::default()),
        ];
        for solver in solvers {
            let plain = RoundScheduler::new(&inst, solver()).plan().unwrap();
            let staged = RoundScheduler::new(&inst, solver())
                .with_second_stage(exponent)
                .unwrap()
                .plan()
                .unwrap();
            for (a, b) in plain.jobs.iter().zip(&staged.jobs) {
                prop_assert_eq!(a.run.is_some(), b.run.is_some(), "job {} runs in one plan only", &a.id);
            }
            prop_assert_eq!(&plain.relaxed, &staged.relaxed);
            let mut weights = staged.jobs.iter().zip(staged.instance.jobs()).filter(|(p, _)| p.run.is_some()).map(|(_, j)| j.weight());
            let first = weights.next();
            let differ = first.is_some_and(|w| weights.any(|x| x != w));
            prop_assert_eq!(staged.solves, plain.solves + usize::from(differ));
            if !differ {
                prop_assert_eq!(&plain.jobs, &staged.jobs);
            }
            verify_feasible(&staged.instance, &staged.solution).unwrap();
            let tol = 1e-9 * plain.objective.abs().max(1.0);
            prop_assert!(staged.objective <= plain.objective + tol, "{} > {}", staged.objective, plain.objective);
            let problem = RoundProblem::new(&staged.instance);
            let running: Vec<bool> = staged.jobs.iter().map(|j| j.run.is_some()).collect();
            let chosen: Vec<Option<(usize, u32)>> = staged.jobs.iter().map(|j| j.run).collect();
            let got = tempered_value(&problem, &staged.instance, &chosen, exponent);
            let best = best_tempered(&problem, &staged.instance, &running, exponent);
            prop_assert!((got - best).abs() <= 1e-9 * best.abs().max(1.0), "tempered {} against the best {}", got, best);
        }
    }
}

#[test]
fn second_stage_exponent_out_of_range_is_refused() {
    let inst = Instance::builder()
        .gpu_type("v100", 1, 1, &[1])
        .build()
        .unwrap();
    for bad in [-0.1, 1.5, f64::NAN, f64::INFINITY] {
        let err = RoundScheduler::new(&inst, Box::new(BruteForce::default()))
            .with_second_stage(bad)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("second stage exponent must be in [0, 1]"),
            "{err}"
        );
    }
    // 1 is the round problem itself: no second stage.
    let s = RoundScheduler::new(&inst, Box::new(BruteForce::default()))
        .with_second_stage(1.0)
        .unwrap();
    assert_eq!(s.second_stage(), None);
}

/// A sigma that overflows to infinity (job a's equal-share rate, from a whole-GPU time of
/// 1e308 s/it, underflows beside its half-GPU time of 0.4 s) leaves a finite deficit: the credit
/// bound is at most `f64::MAX`. A deficit of minus infinity would fail the next round ("the
/// round's instance is invalid: jobs[0].deficit must be finite (got -inf)").
#[test]
fn an_infinite_sigma_leaves_finite_deficits() {
    let inst = Instance::builder()
        .gpu_type("v100", 1, 4, &[1, 2, 4])
        .job(
            JobSpec::new("a")
                .time("v100", 4, 1e308)
                .time("v100", 2, 0.4),
        )
        .job(JobSpec::new("b").time("v100", 4, 0.5).time("v100", 2, 0.6))
        .build()
        .unwrap();
    let mut s = RoundScheduler::new(&inst, Box::new(BruteForce::default()));
    for _ in 0..5 {
        let plan = s.plan().unwrap();
        verify(&plan.instance, &plan.solution).unwrap();
        // Both run on half GPUs every round: a's run is worth infinitely many rounds of its
        // share, b's 2/2.4 * 2 = 1.67.
        assert_eq!(
            plan.solution
                .assignments
                .iter()
                .filter(|a| a.is_some())
                .count(),
            2
        );
        s.report_planned(&plan).unwrap();
        assert_eq!(s.deficit("a"), Some(-f64::MAX));
        assert!(s.deficit("b").is_some_and(f64::is_finite));
    }
}

/// A job removed after `plan()` and added again under its id is a new job: not part of the
/// planned round, so reporting it is refused and its deficit is not charged with the old job's
/// round (it does not inherit the old job's entry).
#[test]
fn a_job_added_again_under_a_removed_id_is_not_in_the_planned_round() {
    let cluster = Instance::builder()
        .gpu_type("v100", 1, 4, &[4])
        .build()
        .unwrap();
    let mut s = RoundScheduler::new(&cluster, BruteForce::default());
    let spec = |d: f64| JobSpec::new("a").time("v100", 4, 0.5).deficit(d);
    s.add_job(spec(0.0)).unwrap();
    s.add_job(JobSpec::new("b").time("v100", 4, 0.5)).unwrap();
    s.plan().unwrap();
    s.remove_job("a").unwrap();
    s.add_job(spec(5.0)).unwrap();
    let err = s.report(&[("a", 1.0)]).unwrap_err();
    assert!(
        matches!(err, stsfair::RoundError::NotInRound { .. }),
        "{err}"
    );
    let services = s.report(&[]).unwrap();
    assert_eq!(
        services.iter().map(|x| x.job.as_str()).collect::<Vec<_>>(),
        ["b"]
    );
    assert_eq!(s.deficit("a"), Some(5.0));
    // The old job's slots go too: a job of 2 workers removed and added again with 1, with a
    // plan pending and a placement that ran, gives a snapshot that restores.
    let cluster = Instance::builder()
        .gpu_type("v100", 4, 4, &[4])
        .build()
        .unwrap();
    let mut s = RoundScheduler::new(&cluster, BruteForce::default());
    s.add_job(JobSpec::new("a").workers(2).time("v100", 4, 0.5))
        .unwrap();
    let plan = s.plan().unwrap();
    s.report_planned(&plan).unwrap();
    s.plan().unwrap();
    s.remove_job("a").unwrap();
    s.add_job(JobSpec::new("a").time("v100", 4, 0.5)).unwrap();
    let snapshot = SchedulerSnapshot::from_json(&s.snapshot().to_json()).unwrap();
    RoundScheduler::restore(snapshot, BruteForce::default()).unwrap();
}

/// Workers of `now` on a GPU that held no worker of the same job in `before` (GPUs matched as
/// multisets), for jobs that ran in `before`: the definition of `Placement::migrations`,
/// recounted independently.
fn recount_migrations(before: &Placement, now: &Placement) -> usize {
    let mut jobs: Vec<&str> = now
        .gpus
        .iter()
        .flat_map(|g| g.slots.iter().map(|s| s.job.as_str()))
        .collect();
    jobs.sort_unstable();
    jobs.dedup();
    let mut moved = 0;
    for job in jobs {
        let mut left = before.gpus_of(job);
        if left.is_empty() {
            continue;
        }
        for g in now.gpus_of(job) {
            match left.iter().position(|&x| x == g) {
                Some(i) => {
                    left.swap_remove(i);
                }
                None => moved += 1,
            }
        }
    }
    moved
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Over eight rounds with a co-location model and realized throughputs that differ from
    /// the plan: every placement is valid (no GPU over its units, every running worker placed
    /// once, in a slot of its option's size on its option's GPU type, idle jobs nowhere), its
    /// migrations equal a recount against the last reported round, and every round's deficits
    /// follow the update rule.
    #[test]
    fn placement_and_deficits_over_rounds(
        inst in instance(Shape::TINY),
        factors in proptest::collection::vec(0.0f64..1.5, 48),
        seed in any::<u64>(),
    ) {
        // A model that depends on the pair only: forbidden pairs and slowdowns up to 0.7.
        let model = move |a: &str, b: &str, _: &str| {
            let h = a.bytes().chain(b.bytes()).fold(seed, |h, x| h.wrapping_mul(31).wrapping_add(u64::from(x)));
            match h % 8 {
                0 => f64::INFINITY,
                r => r as f64 / 10.0,
            }
        };
        let mut s = RoundScheduler::new(&inst, Box::new(DenseDp::default()))
            .with_colocation(model);
        let f = inst.fairness();
        let mut factors = factors.iter().cycle();
        for _ in 0..8 {
            let before = s.last_placement().cloned();
            let deficits: Vec<f64> = s.jobs().map(|(_, d)| d).collect();
            let plan = s.plan().unwrap();
            verify(&plan.instance, &plan.solution).unwrap();
            for g in &plan.placement.gpus {
                prop_assert!(g.used() <= g.units, "{g}");
            }
            for (j, p) in plan.jobs.iter().enumerate() {
                let placed = plan.placement.gpus_of(&p.id);
                match p.run {
                    Some((k, slot)) => {
                        prop_assert_eq!(placed.len(), inst.jobs()[j].workers() as usize);
                        prop_assert!(placed.iter().all(|&(t, _)| t == k));
                        let sizes: Vec<u32> = plan.placement.gpus.iter()
                            .flat_map(|g| g.slots.iter().filter(|x| x.job == p.id).map(|x| x.size))
                            .collect();
                        prop_assert!(sizes.iter().all(|&x| x == slot));
                    }
                    None => prop_assert!(placed.is_empty()),
                }
            }
            let expected = before.as_ref().map_or(0, |b| recount_migrations(b, &plan.placement));
            prop_assert_eq!(plan.placement.migrations, expected);
            prop_assert_eq!(plan.placement.interference(&model).1, plan.placement.conflicts);

            let realized = scaled(&plan, &mut factors);
            s.report(&realized).unwrap();
            for (j, (job, d)) in s.jobs().enumerate() {
                let fair = plan.jobs[j].fair_rate;
                let got = realized.iter().find(|r| r.0 == job.id()).map_or(0.0, |r| r.1);
                let want = if fair > 0.0 {
                    update_deficit(deficits[j], f.lambda, plan.jobs[j].credit, got / fair)
                } else {
                    deficits[j]
                };
                prop_assert_eq!(d, want);
            }
        }
    }
}

/// One GPU "g" of 4 units, whole-GPU slots only, with `fairness` and jobs (id, seconds per
/// iteration on the whole GPU): the cluster of the hand-worked runs below.
fn one_gpu(fairness: Fairness, jobs: &[(&str, f64)]) -> Instance {
    let mut b = Instance::builder()
        .name("one-gpu")
        .fairness(fairness)
        .gpu_type("g", 1, 4, &[4]);
    for &(id, sec) in jobs {
        b = b.job(JobSpec::new(id).time("g", 4, sec));
    }
    b.build().unwrap()
}

/// Two identical jobs on one GPU with whole-GPU slots only: each has F = 0.5 it/s and runs at 1
/// it/s (sigma 2). With lambda = Delta = B = 1: round 0 runs one of them (say x): D_x = max(-1,
/// 0 + 1 - 2) = -1, D_y = 1. Round 1: m_y = (1 + 1) - 1 = 1 > 0, y is forced: D_y = 0, D_x = 0.
/// Round 2 is round 0 again. Over 10 rounds each runs 5 times, mean sigma 1, final deficits 0.
#[test]
fn two_jobs_alternate_by_hand() {
    let inst = one_gpu(Fairness::default(), &[("x", 1.0), ("y", 1.0)]);
    let mut s = RoundScheduler::new(&inst, Box::new(DenseDp::default()));
    let sum = run_rounds(&mut s, 10, |_| {}).unwrap();
    assert_eq!(sum.relaxed_rounds, 0);
    assert_eq!(sum.mean_objective, 1.0);
    for j in &sum.jobs {
        assert_eq!(j.rounds_run, 5);
        assert_eq!(j.mean_sigma, Some(1.0));
        assert_eq!(j.final_deficit, 0.0);
        assert!(!j.no_bound);
    }
    // Always on the one GPU: nobody migrates.
    assert_eq!(sum.migrations, 0);
}

/// lambda = 0.5 and B = 0.25: a job alone on a GPU gets sigma 1 every round (its largest sigma),
/// so its credit bound is B_x = max(0.25, 1 - 0.5) = 0.5 and its deficit goes
/// 0 -> max(-0.5, 0 + 0.5 - 1) = -0.5 and stays there.
#[test]
fn credit_clamp_by_hand() {
    let fairness = Fairness {
        lambda: 0.5,
        max_debt: 1.0,
        credit: 0.25,
    };
    let inst = one_gpu(fairness, &[("x", 0.5)]);
    let mut s = RoundScheduler::new(&inst, Box::new(DenseDp::default()));
    for _ in 0..3 {
        let plan = s.plan().unwrap();
        assert_eq!(plan.jobs[0].sigma, 1.0);
        assert_eq!(plan.jobs[0].credit, 0.5);
        s.report_planned(&plan).unwrap();
        assert_eq!(s.deficit("x"), Some(-0.5));
    }
    assert_eq!(update_deficit(-0.5, 0.5, 0.5, 1.0), -0.5);
}

/// A job arrives, gets times updated and leaves while rounds go on. Three GPUs of 4 units:
/// round 0 places a (whole GPU) on GPU 0 and b (half) on GPU 1; in round 1 c arrives wanting a
/// whole GPU: GPU 2 is free and claimed by nobody, so a and b stay (no migration).
/// A round's cost follows its jobs, not the cluster's GPUs: three jobs (four workers) on two
/// types of a million GPUs plan and report round after round with placements that list only
/// the GPUs holding a slot, keep their GPUs, survive a snapshot, and drop a job that leaves and
/// comes back with no idle GPU left behind. Checked by structure; the time per round is in
/// docs/reliability.md.
#[test]
fn a_round_of_three_jobs_on_a_million_gpus_follows_its_jobs() {
    let cluster = Instance::builder()
        .gpu_type("v100", 1_000_000, 4, &[1, 2, 4])
        .gpu_type("k80", 1_000_000, 4, &[1, 2, 4])
        .build()
        .unwrap();
    let mut s = RoundScheduler::new(&cluster, Dp::default());
    s.add_job(JobSpec::new("a").time("v100", 4, 0.25).time("v100", 2, 0.4))
        .unwrap();
    s.add_job(JobSpec::new("b").workers(2).time("k80", 2, 0.9))
        .unwrap();
    s.add_job(JobSpec::new("c").time("v100", 1, 0.9).time("k80", 1, 0.8))
        .unwrap();
    let listed_once = |p: &Placement| {
        p.gpus.len() <= 4
            && p.gpus.iter().all(|g| !g.slots.is_empty())
            && p.gpus
                .windows(2)
                .all(|w| (w[0].gpu_type, w[0].index) < (w[1].gpu_type, w[1].index))
    };
    for round in 0..6 {
        let plan = s.plan().unwrap();
        assert!(plan.jobs.iter().all(|j| j.run.is_some()), "{:?}", plan.jobs);
        assert!(listed_once(&plan.placement), "{:?}", plan.placement);
        let slots: usize = plan.placement.gpus.iter().map(|g| g.slots.len()).sum();
        assert_eq!(slots, 4);
        if round > 0 {
            assert_eq!(plan.placement.migrations, 0);
        }
        s.report_planned(&plan).unwrap();
        assert_eq!(s.last_placement(), Some(&plan.placement));
        if round == 2 {
            let text = s.snapshot().to_json();
            let restored = RoundScheduler::restore(
                SchedulerSnapshot::from_json(&text).unwrap(),
                Dp::default(),
            )
            .unwrap();
            assert_eq!(restored.last_placement(), Some(&plan.placement));
            s = restored;
        }
        if round == 3 {
            s.remove_job("c").unwrap();
            s.add_job(JobSpec::new("c").time("v100", 1, 0.9)).unwrap();
            let last = s.last_placement().unwrap();
            assert!(
                last.gpus_of("c").is_empty() && listed_once(last),
                "{last:?}"
            );
        }
    }
}

#[test]
fn jobs_arrive_and_leave() {
    let cluster = Instance::builder()
        .gpu_type("g", 3, 4, &[1, 2, 4])
        .build()
        .unwrap();
    let mut s = RoundScheduler::new(&cluster, Box::new(DenseDp::default()));
    s.add_job(JobSpec::new("a").time("g", 2, 1.0).time("g", 4, 0.8))
        .unwrap();
    s.add_job(JobSpec::new("b").time("g", 2, 1.0)).unwrap();
    let p0 = s.plan().unwrap();
    assert_eq!(p0.jobs[0].run, Some((0, 4)));
    assert_eq!(p0.placement.gpus_of("a"), vec![(0, 0)]);
    assert_eq!(p0.placement.gpus_of("b"), vec![(0, 1)]);
    s.report_planned(&p0).unwrap();
    s.add_job(JobSpec::new("c").time("g", 4, 0.5)).unwrap();
    let p1 = s.plan().unwrap();
    assert!(p1.jobs.iter().all(|j| j.run.is_some()), "{:?}", p1.jobs);
    assert_eq!(p1.placement.gpus_of("c"), vec![(0, 2)]);
    assert_eq!(p1.placement.migrations, 0);
    s.report_planned(&p1).unwrap();
    s.update_times("b", &[("g", 1, 2.0), ("g", 2, 1.0)])
        .unwrap();
    let d = s.deficit("a").unwrap();
    assert_eq!(s.remove_job("a").unwrap(), d);
    let p2 = s.plan().unwrap();
    assert_eq!(
        p2.jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        vec!["b", "c"]
    );
    assert!(s.remove_job("a").is_err());
}

/// A solver that runs job (call count mod n) alone on the whole GPU: among identical jobs it
/// switches every round, as an ILP may.
struct Rotating(std::sync::atomic::AtomicUsize);

impl Solver for Rotating {
    fn name(&self) -> &'static str {
        "rotating"
    }
    fn solve_problem(&self, p: &RoundProblem) -> Result<Solution, SolveError> {
        let pick = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % p.jobs.len();
        let a = (0..p.jobs.len())
            .map(|j| (j == pick).then_some((0, 4)))
            .collect();
        Ok(Solution::from_assignments(
            "rotating",
            Status::Optimal,
            p,
            a,
        ))
    }
}

/// Identical jobs keep the option they ran: the solver switches from a to b, but a and b are
/// interchangeable, so the plan hands the GPU back to a and nobody migrates. Delta = 5: nobody
/// is forced for a while, so both may idle and the swap is allowed.
#[test]
fn identical_jobs_keep_the_option_they_ran() {
    let fairness = Fairness {
        max_debt: 5.0,
        ..Fairness::default()
    };
    let inst = one_gpu(fairness, &[("a", 1.0), ("b", 1.0)]);
    let mut s = RoundScheduler::new(&inst, Rotating(Default::default()));
    let p0 = s.plan().unwrap();
    assert_eq!(p0.jobs[0].run, Some((0, 4)));
    s.report_planned(&p0).unwrap();
    let p1 = s.plan().unwrap();
    assert_eq!(p1.jobs[0].run, Some((0, 4)));
    assert_eq!(p1.jobs[1].run, None);
    assert_eq!(p1.placement.migrations, 0);
    assert_eq!(p1.objective, 1.0);
    verify(&p1.instance, &p1.solution).unwrap();
}

// ---- acceptance (ignored by default: minutes per cluster) ----

/// The fairness-only baseline: jobs in order of largest m_j (the same order as largest D_j),
/// each given its admissible option of largest sigma that still fits (ties: larger v, then
/// option order), until nothing more fits. It ignores efficiency and may leave a forced job idle,
/// so it is reported as `feasible` with an unknown gap, never `infeasible`. O(n log n + n |O|).
struct LargestDeficitFirst;

impl Solver for LargestDeficitFirst {
    fn name(&self) -> &'static str {
        "ldf"
    }

    fn solve_problem(&self, problem: &RoundProblem) -> Result<Solution, SolveError> {
        let mut order: Vec<usize> = (0..problem.jobs.len()).collect();
        order.sort_by(|&a, &b| problem.jobs[b].minimum.total_cmp(&problem.jobs[a].minimum));
        let mut left = problem.capacity.clone();
        let mut assignments = vec![None; problem.jobs.len()];
        for j in order {
            let mut best: Option<&stsfair::formulation::RoundOption> = None;
            for o in &problem.jobs[j].options {
                if o.units > left[o.gpu] {
                    continue;
                }
                let wins = best
                    .is_none_or(|b| o.sigma > b.sigma || (o.sigma == b.sigma && o.value > b.value));
                if wins {
                    best = Some(o);
                }
            }
            if let Some(o) = best {
                left[o.gpu] -= o.units;
                assignments[j] = Some((o.gpu, o.slot));
            }
        }
        Ok(Solution::from_assignments(
            "ldf",
            Status::Feasible { gap: f64::NAN },
            problem,
            assignments,
        ))
    }
}

/// Quantile by nearest rank of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Prints the distribution of mean sigma / lambda of the jobs with a bound and returns the
/// fraction at or above 0.95.
fn distribution(label: &str, sigma: &[Option<f64>], lambda: f64) -> f64 {
    let mut v: Vec<f64> = sigma.iter().flatten().map(|s| s / lambda).collect();
    v.sort_by(f64::total_cmp);
    let reached = v.iter().filter(|&&x| x >= 0.95).count() as f64 / v.len() as f64;
    let bins = [0.0, 0.5, 0.9, 0.95, 1.0, 1.05, 1.2, f64::INFINITY];
    let counts: Vec<String> = bins
        .windows(2)
        .map(|w| {
            format!(
                "[{}, {}): {}",
                w[0],
                w[1],
                v.iter().filter(|&&x| x >= w[0] && x < w[1]).count()
            )
        })
        .collect();
    println!(
        "  {label:<14} reach 0.95*lambda {:>6.2}%  mean sigma/lambda min {:.3} p1 {:.3} p5 {:.3} p10 {:.3} median {:.3} max {:.3}",
        100.0 * reached,
        v[0],
        quantile(&v, 0.01),
        quantile(&v, 0.05),
        quantile(&v, 0.10),
        quantile(&v, 0.5),
        v[v.len() - 1]
    );
    println!("  {:<14} histogram {}", "", counts.join(", "));
    reached
}

/// A job's option (GPU type, slot) and its GPUs (type, index), one per worker, in a round.
type LastRun = ((usize, u32), Vec<(usize, u32)>);

/// Splits migrations by cause, over consecutive rounds: workers of jobs whose option changed
/// GPU type (they must move), of jobs that changed slot size on the same type, and of jobs that
/// kept their option.
#[derive(Default)]
struct Moves {
    last: std::collections::HashMap<String, LastRun>,
    type_changed: usize,
    size_changed: usize,
    same_option: usize,
}

impl Moves {
    fn observe(&mut self, plan: &stsfair::RoundPlan) {
        let mut now = std::collections::HashMap::new();
        for j in &plan.jobs {
            let Some(run) = j.run else { continue };
            let gpus = plan.placement.gpus_of(&j.id);
            if let Some((before, old)) = self.last.get(&j.id) {
                let mut left = old.clone();
                let mut moved = 0;
                for g in &gpus {
                    match left.iter().position(|x| x == g) {
                        Some(i) => {
                            left.swap_remove(i);
                        }
                        None => moved += 1,
                    }
                }
                if before.0 != run.0 {
                    self.type_changed += moved;
                } else if before.1 != run.1 {
                    self.size_changed += moved;
                } else {
                    self.same_option += moved;
                }
            }
            now.insert(j.id.clone(), (run, gpus));
        }
        self.last = now;
    }
}

fn report(label: &str, sum: &RunSummary, moves: &Moves, seconds: f64, lambda: f64) -> f64 {
    println!(
        "  {label:<14} mean objective {:.4}  relaxed rounds {}  solves {}  {:.1} s",
        sum.mean_objective, sum.relaxed_rounds, sum.solves, seconds
    );
    println!(
        "  {:<14} migrations {} (type changed {}, slot size changed {}, same option {})",
        "", sum.migrations, moves.type_changed, moves.size_changed, moves.same_option
    );
    let sigma: Vec<Option<f64>> = sum.jobs.iter().map(|j| j.mean_sigma).collect();
    distribution(label, &sigma, lambda)
}

/// Loads an acceptance instance; a missing file is explained with the command that makes it.
fn acceptance_instance(path: &Path) -> Instance {
    Instance::from_path(path).unwrap_or_else(|e| {
        panic!("{e}: generate it with `stsfair gen --gavel ...` (see docs/rounds.md)")
    })
}

/// The acceptance runs of docs/rounds.md: on each Gavel-derived overloaded cluster, 100
/// rounds of the mechanism, compared with the unconstrained efficiency optimum (nobody forced)
/// and with largest-deficit-first; asserts that no round fails and that at least 99% of the jobs
/// with a fairness bound reach a mean sigma of 0.95 * lambda. Rerun with
///
/// ```sh
/// STSFAIR_ROUNDS_SOLVER=ilp cargo test --release -p stsfair --features highs --test rounds acceptance -- --ignored --nocapture
/// ```
///
/// STSFAIR_ROUNDS_SOLVER picks the solver (default dp+ilp, as `stsfair rounds` uses for dp; the
/// tables of docs/rounds.md use ilp),
/// STSFAIR_ROUNDS_PRICES=off runs the mechanism without service prices (default: the long-run
/// LP's, as `stsfair rounds`), STSFAIR_ROUNDS the number of rounds (default 100), STSFAIR_ACCEPTANCE the instance files
/// (comma-separated; default instances/gavel-36x3-300.json and instances/gavel-100x3-1000.json).
#[test]
#[ignore = "long (10-20 min): STSFAIR_ROUNDS_SOLVER=ilp cargo test --release -p stsfair --features highs --test rounds acceptance -- --ignored --nocapture"]
fn acceptance_gavel_clusters() {
    let solver = std::env::var("STSFAIR_ROUNDS_SOLVER").unwrap_or_else(|_| "dp+ilp".into());
    let rounds: u64 = std::env::var("STSFAIR_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(100);
    let paths = std::env::var("STSFAIR_ACCEPTANCE")
        .unwrap_or_else(|_| "instances/gavel-36x3-300.json,instances/gavel-100x3-1000.json".into());
    for path in paths.split(',') {
        let inst = acceptance_instance(Path::new(path));
        let f = inst.fairness();
        let gpus: u32 = inst.gpu_types().iter().map(|g| g.count()).sum();
        println!(
            "{path}: {} jobs on {gpus} GPUs, {rounds} rounds, solver {solver}, lambda {}",
            inst.jobs().len(),
            f.lambda
        );

        let t = Instant::now();
        let kind = SolverKind::ALL
            .iter()
            .find(|k| k.name() == solver)
            .expect("a solver name");
        let mut s = RoundScheduler::new(&inst, kind.build(&SolverConfig::default()));
        // Priced forced jobs (`stsfair rounds --prices lp`, its default) unless
        // STSFAIR_ROUNDS_PRICES=off.
        #[cfg(feature = "highs")]
        if std::env::var("STSFAIR_ROUNDS_PRICES").as_deref() != Ok("off") {
            s = s.with_service_prices(stsfair::bound::LongRunPrices::default());
        }
        println!("  prices: {}", s.service_prices_name().unwrap_or("off"));
        let mut moves = Moves::default();
        let sts = run_rounds(&mut s, rounds, |p| moves.observe(p)).expect("no round fails");
        let reached = report(
            "sts-fair",
            &sts,
            &moves,
            t.elapsed().as_secs_f64(),
            f.lambda,
        );

        let t = Instant::now();
        let mut s = RoundScheduler::new(&inst, Box::new(LargestDeficitFirst));
        let mut moves = Moves::default();
        let ldf = run_rounds(&mut s, rounds, |p| moves.observe(p)).unwrap();
        report(
            "largest-D",
            &ldf,
            &moves,
            t.elapsed().as_secs_f64(),
            f.lambda,
        );

        // Unconstrained: nobody forced, so every round is the same efficiency optimum.
        let t = Instant::now();
        let low = vec![-(f.lambda + f.max_debt + 1.0); inst.jobs().len()];
        let free = inst.with_deficits(&low).unwrap();
        let best = kind.build(&SolverConfig::default()).solve(&free).unwrap();
        let problem = RoundProblem::new(&free);
        let sigma: Vec<Option<f64>> = problem
            .jobs
            .iter()
            .zip(&best.assignments)
            .zip(inst.jobs())
            .map(|((rj, a), job)| {
                (rj.fair_rate > 0.0).then(|| match a {
                    Some((k, s)) => {
                        job.options()
                            .iter()
                            .find(|o| o.gpu == *k && o.slot == *s)
                            .map_or(0.0, |o| o.throughput)
                            / rj.fair_rate
                    }
                    None => 0.0,
                })
            })
            .collect();
        let optimum = best.objective.unwrap();
        println!(
            "  {:<14} mean objective {optimum:.4}  ({:.1} s, one solve)",
            "unconstrained",
            t.elapsed().as_secs_f64()
        );
        distribution("unconstrained", &sigma, f.lambda);
        println!(
            "  objective / unconstrained: sts-fair {:.4}, largest-D {:.4}",
            sts.mean_objective / optimum,
            ldf.mean_objective / optimum
        );
        assert!(
            reached >= 0.99,
            "{path}: only {:.2}% of jobs with a bound reach 0.95 * lambda",
            100.0 * reached
        );
    }
}

// ---- snapshots: a restored scheduler is the scheduler it was taken of ----

/// The parts of a plan that depend on the scheduler's state (the solution's timing does not).
fn plan_key(p: &stsfair::RoundPlan) -> String {
    format!(
        "{} {:?} {} {:?} {} {:?} {:?}",
        p.round, p.jobs, p.objective, p.relaxed, p.solves, p.placement, p.solution.assignments
    )
}

/// The plan's throughputs, each scaled by the next factor: what "really ran".
fn scaled<'a, 'f>(
    plan: &'a stsfair::RoundPlan,
    factors: &mut impl Iterator<Item = &'f f64>,
) -> Vec<(&'a str, f64)> {
    plan.planned_throughputs()
        .into_iter()
        .zip(factors)
        .map(|((id, t), x)| (id, t * x))
        .collect()
}

/// Reports `realized` to `a` and, if there is one, to its restored copy `b`: the same services
/// and the same snapshot text after.
fn report_both(
    a: &mut RoundScheduler,
    b: Option<&mut RoundScheduler>,
    realized: &[(&str, f64)],
) -> Result<(), TestCaseError> {
    let sa = a.report(realized).unwrap();
    if let Some(b) = b {
        prop_assert_eq!(sa, b.report(realized).unwrap());
        prop_assert_eq!(a.snapshot().to_json(), b.snapshot().to_json());
    }
    Ok(())
}

/// Snapshots `s`, checks that the text survives restore unchanged, and returns the restored
/// scheduler.
fn restored(s: &RoundScheduler) -> RoundScheduler {
    let text = serde_json::to_string(&s.snapshot()).unwrap();
    let snapshot: SchedulerSnapshot = serde_json::from_str(&text).unwrap();
    let back = RoundScheduler::restore(snapshot, DenseDp::default()).unwrap();
    assert_eq!(serde_json::to_string(&back.snapshot()).unwrap(), text);
    assert_eq!(back.snapshot().to_json(), text);
    back
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Interrupted anywhere (between rounds or with a plan pending), a restored scheduler makes
    /// exactly the plans, deficits and placements of the one that never stopped, and its
    /// snapshot is the same text; jobs arrive and leave, one with a plan pending.
    #[test]
    fn restored_schedulers_plan_as_if_never_stopped(
        inst in instance(Shape::TINY),
        factors in proptest::collection::vec(0.0f64..1.5, 16),
        stop in 0usize..12,
    ) {
        let mut a = RoundScheduler::new(&inst, DenseDp::default());
        let mut b: Option<RoundScheduler> = None;
        let mut factors = factors.iter().cycle();
        for step in 0..6 {
            if step == 2 {
                a.add_job(JobSpec::new("late").workers(1).time(inst.gpu_types()[0].name(), u64::from(inst.gpu_types()[0].slot_sizes()[0]), 0.3)).unwrap();
                if let Some(b) = &mut b {
                    b.add_job(JobSpec::new("late").workers(1).time(inst.gpu_types()[0].name(), u64::from(inst.gpu_types()[0].slot_sizes()[0]), 0.3)).unwrap();
                }
            }
            if stop == 2 * step {
                b = Some(restored(&a));
            }
            let plan = a.plan().unwrap();
            if let Some(b) = &mut b {
                prop_assert_eq!(plan_key(&plan), plan_key(&b.plan().unwrap()));
            }
            if step == 3 {
                // Removed with the plan pending: the plan can still be reported in full.
                let first = a.jobs().next().map(|(j, _)| j.id().to_string()).unwrap_or_default();
                if !first.is_empty() {
                    a.remove_job(&first).unwrap();
                    if let Some(b) = &mut b {
                        b.remove_job(&first).unwrap();
                    }
                }
            }
            if stop == 2 * step + 1 {
                b = Some(restored(&a));
            }
            let realized = scaled(&plan, &mut factors);
            report_both(&mut a, b.as_mut(), &realized)?;
        }
        // `stop` < 12 = 2 * steps: the copy was always made.
        let b = b.unwrap();
        let da: Vec<f64> = a.jobs().map(|(_, d)| d).collect();
        let db: Vec<f64> = b.jobs().map(|(_, d)| d).collect();
        prop_assert_eq!(da, db);
        prop_assert_eq!(a.last_placement(), b.last_placement());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The DP's warm start across rounds (docs/solver.md, "Warm starts"): every plan of a
    /// scheduler on the fast DP, which starts each solve from the last one's multipliers, is
    /// worth the optimum of its round as brute force finds it cold; the multipliers travel in
    /// the snapshot, so a scheduler restored between rounds plans exactly as the one that never
    /// stopped.
    #[test]
    fn warm_started_rounds_stay_optimal_and_resume_exactly(
        inst in instance(Shape::TINY),
        factors in proptest::collection::vec(0.0f64..1.5, 16),
        stop in 1usize..5,
    ) {
        let mut a = RoundScheduler::new(&inst, stsfair::Dp::default());
        let mut b: Option<RoundScheduler> = None;
        let mut factors = factors.iter().cycle();
        for step in 0..5 {
            if step == stop {
                let text = a.snapshot().to_json();
                let back = RoundScheduler::restore(
                    SchedulerSnapshot::from_json(&text).unwrap(),
                    stsfair::Dp::default(),
                ).unwrap();
                prop_assert_eq!(back.snapshot().to_json(), text);
                b = Some(back);
            }
            let plan = a.plan().unwrap();
            let cold = BruteForce::default().solve(&plan.instance).unwrap();
            prop_assert_eq!(plan.solution.objective.is_some(), cold.objective.is_some());
            if let (Some(warm), Some(cold)) = (plan.solution.objective, cold.objective) {
                prop_assert!(
                    stsfair::solution::objectives_agree(warm, cold),
                    "round {}: warm-started {} against the optimum {}", step, warm, cold
                );
            }
            if let Some(b) = &mut b {
                prop_assert_eq!(plan_key(&plan), plan_key(&b.plan().unwrap()));
            }
            let realized = scaled(&plan, &mut factors);
            report_both(&mut a, b.as_mut(), &realized)?;
        }
        // A scheduler on the DP that has solved a round with at least one GPU type keeps its
        // multipliers in the snapshot.
        let saved: serde_json::Value = serde_json::from_str(&a.snapshot().to_json()).unwrap();
        let mu = saved["multipliers"].as_array().map(|m| m.len());
        prop_assert_eq!(mu, Some(inst.gpu_types().len()));
    }
}

/// The 300-job Gavel cluster: snapshots after several rounds and with a plan pending read back
/// to the same text, and the restored scheduler's next plans are the original's.
#[test]
fn snapshot_round_trip_on_a_gavel_cluster() {
    let inst = Instance::from_path(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/gavel-36x3-300.json"),
    )
    .unwrap();
    let mut a = RoundScheduler::new(&inst, stsfair::Dp::default());
    run_rounds(&mut a, 3, |_| {}).unwrap();
    let pending = a.plan().unwrap();
    let text = serde_json::to_string(&a.snapshot()).unwrap();
    let mut b = RoundScheduler::restore(
        SchedulerSnapshot::from_json(&text).unwrap(),
        stsfair::Dp::default(),
    )
    .unwrap();
    assert_eq!(serde_json::to_string(&b.snapshot()).unwrap(), text);
    assert_eq!(b.round(), 3);
    // The pending plan survives: reporting it on the restored scheduler moves the same deficits.
    assert_eq!(
        a.report_planned(&pending).unwrap(),
        b.report_planned(&pending).unwrap()
    );
    for _ in 0..2 {
        let (pa, pb) = (a.plan().unwrap(), b.plan().unwrap());
        assert_eq!(plan_key(&pa), plan_key(&pb));
        a.report_planned(&pa).unwrap();
        b.report_planned(&pb).unwrap();
    }
    assert_eq!(a.snapshot().to_json(), b.snapshot().to_json());
    eprintln!(
        "snapshot of 300 jobs with a plan pending: {} bytes",
        text.len()
    );
}

/// A scheduler with one reported round and a plan pending, as a JSON value to corrupt.
fn snapshot_value() -> serde_json::Value {
    let cluster = Instance::builder()
        .gpu_type("v100", 2, 4, &[1, 2, 4])
        .build()
        .unwrap();
    let mut s = RoundScheduler::new(&cluster, DenseDp::default());
    s.add_job(JobSpec::new("j").workers(2).time("v100", 4, 0.5))
        .unwrap();
    s.add_job(JobSpec::new("k").time("v100", 2, 0.5)).unwrap();
    let plan = s.plan().unwrap();
    s.report_planned(&plan).unwrap();
    s.plan().unwrap();
    serde_json::to_value(s.snapshot()).unwrap()
}

fn restore_text(text: &str) -> Result<RoundScheduler, stsfair::RoundError> {
    RoundScheduler::restore(SchedulerSnapshot::from_json(text)?, DenseDp::default())
}

/// Corrupted snapshots and snapshots of another version are refused, naming the field and the
/// rule; the intact one restores.
#[test]
fn corrupted_snapshots_are_refused_naming_the_field() {
    let good = snapshot_value();
    assert!(restore_text(&good.to_string()).is_ok());
    assert!(good["running"].is_object() && good["pending"].is_object());
    type Edit = fn(&mut serde_json::Value);
    let cases: &[(Edit, &str)] = &[
        (
            |v| v["format"] = "stsfair-scheduler/2".into(),
            "scheduler snapshot: format: must be \"stsfair-scheduler/1\" (got \"stsfair-scheduler/2\")",
        ),
        (
            |v| v["format"] = "stsfair/1".into(),
            "another format or version",
        ),
        (
            |v| {
                v.as_object_mut().unwrap().remove("round");
            },
            "missing field `round`",
        ),
        (
            |v| {
                v.as_object_mut().unwrap().remove("running");
            },
            "missing field `running`",
        ),
        (
            |v| {
                v["jobs"][0].as_object_mut().unwrap().remove("deficit");
            },
            "jobs[0]: missing field `deficit`",
        ),
        (|v| v["color"] = "blue".into(), "unknown field `color`"),
        (
            |v| v["jobs"][1]["times"][0]["gpu"] = "h100".into(),
            "scheduler snapshot: jobs[1].times[0].gpu must name one of gpu_types (got \"h100\")",
        ),
        (
            |v| v["jobs"][1]["id"] = "j".into(),
            "jobs[1].id must be unique among jobs",
        ),
        (
            |v| v["jobs"][0]["deficit"] = "NaN".into(),
            "jobs[0].deficit: invalid type: string",
        ),
        (
            |v| v["fairness"]["lambda"] = 2.0.into(),
            "fairness.lambda must be in (0, 1] (got 2)",
        ),
        (
            |v| v["pending"]["jobs"][0]["job"] = "ghost".into(),
            "pending.jobs[0].job must name an active job (one of jobs) (got \"ghost\")",
        ),
        (
            |v| v["pending"]["jobs"][0]["fair_rate"] = (-1.0).into(),
            "pending.jobs[0].fair_rate must be finite and >= 0 (got -1)",
        ),
        (
            |v| v["pending"]["jobs"][0]["credit"] = 0.5.into(),
            "pending.jobs[0].credit must be finite and >= fairness.credit (got 0.5)",
        ),
        (
            |v| v["last_runs"][0]["slot"] = 3.into(),
            "last_runs[0].slot must be one of the slot_sizes of v100 ([1, 2, 4]) (got 3)",
        ),
        (
            |v| v["running"]["gpus"][0]["index"] = 7.into(),
            "running.gpus[0].index must be below the count of v100 (2) (got 7)",
        ),
        (
            |v| v["running"]["gpus"][0]["slots"][0]["worker"] = 5.into(),
            "running.gpus[0].slots[0].worker must be below the workers of job",
        ),
        (
            |v| v["pending"]["placement"]["gpus"][0]["slots"][0]["worker"] = 2.into(),
            "pending.placement.gpus[0].slots[0].worker must be below the workers of job",
        ),
        (
            |v| v["pending"]["placement"]["gpus"][0]["slots"][0]["offset"] = 1.into(),
            "pending.placement.gpus[0].slots[0].offset must be a multiple of the slot's size",
        ),
        (
            |v| v["multipliers"] = serde_json::json!([0.5, 0.5]),
            "multipliers must have one entry per GPU type (1) (got 2 entries)",
        ),
        (
            |v| v["multipliers"] = serde_json::json!([-0.5]),
            "multipliers[0] must be finite and >= 0 (got -0.5)",
        ),
    ];
    for (edit, want) in cases {
        let mut v = good.clone();
        edit(&mut v);
        let err = restore_text(&v.to_string()).unwrap_err().to_string();
        assert!(err.contains(want), "{err}\n  does not contain\n{want}");
    }
    for text in ["", "{", "not json", "[]"] {
        let err = restore_text(text).unwrap_err().to_string();
        assert!(err.starts_with("scheduler snapshot: "), "{err}");
    }
    // JSON has no NaN or infinity: a deficit too large for a double is refused by the reader.
    let mut v = good.clone();
    v["jobs"][0]["deficit"] = "HUGE".into();
    let text = v.to_string().replace("\"HUGE\"", "1e999");
    let err = restore_text(&text).unwrap_err().to_string();
    assert!(
        err.contains("jobs[0].deficit: number out of range"),
        "{err}"
    );
    let err = restore_text(&format!("{good} {{}}"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("trailing characters"), "{err}");
}

/// The pending plan's credit bounds are saved (B_j, here above B for the distributed job j) and
/// restored; a snapshot written before the per-job credit bound (no `credit`) restores with B,
/// as the scheduler that wrote it would have updated the deficits.
#[test]
fn snapshots_keep_the_credit_bound_and_read_old_ones_with_b() {
    // Five jobs on 4 GPUs: F of the 4-worker job "big" is 1/5 * 4/4 * 2 it/s = 0.4, its sigma on
    // 4 whole GPUs 5, so B_big = max(1, 5 - 1) = 4.
    let cluster = Instance::builder()
        .gpu_type("v100", 4, 4, &[2, 4])
        .build()
        .unwrap();
    let mut s = RoundScheduler::new(&cluster, DenseDp::default());
    s.add_job(JobSpec::new("big").workers(4).time("v100", 4, 0.5))
        .unwrap();
    for id in ["a", "b", "c", "d"] {
        s.add_job(JobSpec::new(id).time("v100", 4, 0.5).time("v100", 2, 0.8))
            .unwrap();
    }
    s.plan().unwrap();
    let good = serde_json::to_value(s.snapshot()).unwrap();
    let credits: Vec<f64> = good["pending"]["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["credit"].as_f64().unwrap())
        .collect();
    assert!(
        credits.iter().all(|&c| c >= 1.0) && credits.iter().any(|&c| c > 1.0),
        "{credits:?}"
    );
    let report = [("big", 0.0), ("a", 0.0)];
    // Idle jobs: the clamp does not bind, both readings agree; a huge sigma shows the bound.
    let mut a = restore_text(&good.to_string()).unwrap();
    let mut old = good.clone();
    for j in old["pending"]["jobs"].as_array_mut().unwrap() {
        j.as_object_mut().unwrap().remove("credit");
    }
    let mut b = restore_text(&old.to_string()).unwrap();
    assert_eq!(a.report(&report).unwrap(), b.report(&report).unwrap());
    let mut a = restore_text(&good.to_string()).unwrap();
    let mut b = restore_text(&old.to_string()).unwrap();
    let busy = [("big", 1e6), ("a", 1e6), ("b", 1e6), ("c", 1e6), ("d", 1e6)];
    let new_rule = a.report(&busy).unwrap();
    let old_rule = b.report(&busy).unwrap();
    for (n, o) in new_rule.iter().zip(&old_rule) {
        assert_eq!(o.deficit, -1.0);
        assert!(n.deficit <= o.deficit);
    }
    assert_eq!(credits[0], 4.0);
    assert_eq!(new_rule[0].deficit, -4.0);
}

/// The sum of the values (in `problem`) of the options `solution` assigns.
fn chosen_value(solution: &Solution, problem: &RoundProblem) -> f64 {
    solution
        .assignments
        .iter()
        .zip(&problem.jobs)
        .filter_map(|(a, job)| {
            let (k, s) = (*a)?;
            job.options
                .iter()
                .find(|o| o.gpu == k && o.slot == s)
                .map(|o| o.value)
        })
        .sum()
}

/// A price source for tests: fixed prices, or a wrong answer.
struct FixedPrices(Result<Option<Vec<f64>>, String>);

impl stsfair::ServicePrices for FixedPrices {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn prices(&self, _: &Instance) -> Result<Option<Vec<f64>>, String> {
        self.0.clone()
    }
}

/// Pricing the service of a forced job, worked by hand. One GPU of a fast type `v` and one of a
/// slow type `k`, whole GPUs only. `big` is forced (D = 0.3, m = 0.3): 1 s/it on v, 4 s/it on
/// k; `small`: 1 s/it on v, 8 s/it on k. phi = 1/2 each, so F_big = 0.5 * 1 + 0.5 * 0.25 = 0.625
/// and sigma_big = 1.6 on v, 0.4 on k: both admissible. Unpriced, big on k and small on v is
/// worth 0.25 + 1 = 1.25 against 1 + 0.125. With a price of 1 on big's service, big on v is
/// worth 1 + 1.6 = 2.6 (+ 0.125) against 0.25 + 0.4 + 1: big takes the fast GPU, and the plan
/// reports the model's objective of that choice, 1.125, with a solution `verify` accepts.
#[test]
fn a_priced_forced_job_takes_the_option_that_buys_most_service() {
    let cluster = Instance::builder()
        .gpu_type("v", 1, 4, &[4])
        .gpu_type("k", 1, 4, &[4])
        .job(
            JobSpec::new("big")
                .deficit(0.3)
                .time("v", 4, 1.0)
                .time("k", 4, 4.0),
        )
        .job(JobSpec::new("small").time("v", 4, 1.0).time("k", 4, 8.0))
        .build()
        .unwrap();
    let mut plain = RoundScheduler::new(&cluster, DenseDp::default());
    let p = plain.plan().unwrap();
    assert_eq!((p.jobs[0].run, p.jobs[1].run), (Some((1, 4)), Some((0, 4))));
    assert!((p.objective - 1.25).abs() < 1e-12, "{}", p.objective);

    for solver in [SolverKind::DenseDp, SolverKind::Dp, SolverKind::BruteForce] {
        let mut priced = RoundScheduler::new(&cluster, solver.build(&SolverConfig::default()))
            .with_service_prices(FixedPrices(Ok(Some(vec![1.0, 0.0]))));
        assert_eq!(priced.service_prices_name(), Some("fixed"));
        let p = priced.plan().unwrap();
        assert_eq!((p.jobs[0].run, p.jobs[1].run), (Some((0, 4)), Some((1, 4))));
        assert!((p.objective - 1.125).abs() < 1e-12, "{}", p.objective);
        assert_eq!(p.solution.objective, Some(p.objective));
        verify_feasible(&p.instance, &p.solution).unwrap();
        // No prices from the source: the round is solved as MODEL.md section 4 says.
        let mut none = RoundScheduler::new(&cluster, solver.build(&SolverConfig::default()))
            .with_service_prices(FixedPrices(Ok(None)));
        assert_eq!(none.plan().unwrap().jobs[0].run, Some((1, 4)));
    }
}

/// A price source that fails or answers wrongly is an error naming it, and the scheduler is
/// unchanged (the next plan with good prices works).
#[test]
fn bad_prices_are_refused_by_name() {
    let cluster = Instance::builder()
        .gpu_type("v", 1, 4, &[4])
        .job(JobSpec::new("a").deficit(0.3).time("v", 4, 1.0))
        .job(JobSpec::new("b").time("v", 4, 2.0))
        .build()
        .unwrap();
    for (answer, words) in [
        (Err("no lp".to_string()), "service prices (fixed): no lp"),
        (Ok(Some(vec![1.0])), "gave 1 prices for 2 jobs"),
        (
            Ok(Some(vec![1.0, -1.0])),
            "the price of job \"b\" must be finite and >= 0 (got -1)",
        ),
        (
            Ok(Some(vec![f64::NAN, 0.0])),
            "the price of job \"a\" must be finite and >= 0 (got NaN)",
        ),
    ] {
        let mut s = RoundScheduler::new(&cluster, DenseDp::default())
            .with_service_prices(FixedPrices(answer));
        let e = s.plan().unwrap_err().to_string();
        assert!(e.contains(words), "{e}");
        assert_eq!(s.round(), 0);
    }
}

/// The long-run LP's prices in the mechanism (`--prices lp`, the `rounds` command's default) on
/// a shipped Gavel-mix round of 300 jobs, 5 rounds: every plan verifies against its instance,
/// its objective is the model's v of the chosen options (recomputed here), and the prices are
/// those of `long_run_bound` at share 1.
#[cfg(feature = "highs")]
#[test]
fn long_run_prices_keep_every_plan_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/round4-gavel-36x3-300.json");
    let cluster = Instance::from_json(&std::fs::read_to_string(path).unwrap()).unwrap();
    let bound = stsfair::bound::long_run_bound(&cluster, 1.0)
        .unwrap()
        .unwrap();
    assert_eq!(bound.prices.len(), cluster.jobs().len());
    assert!(
        bound.prices.iter().any(|&p| p > 0.0),
        "some fairness rows bind"
    );
    let mut priced = RoundScheduler::new(&cluster, stsfair::Dp::default())
        .with_service_prices(stsfair::bound::LongRunPrices::default());
    for _ in 0..5 {
        let p = priced.plan().unwrap();
        verify_feasible(&p.instance, &p.solution).unwrap();
        let problem = RoundProblem::new(&p.instance);
        let v = chosen_value(&p.solution, &problem);
        assert!(
            (v - p.objective).abs() <= 1e-9 * v.max(1.0),
            "{v} vs {}",
            p.objective
        );
        priced.report_planned(&p).unwrap();
    }
}

/// `RoundScheduler::add_job` refuses a job whose weight makes the sum of the active jobs'
/// weights infinite, as the constructor and a file do: two jobs of weight f64::MAX were
/// accepted and every `plan()` failed with the round's instance invalid.
#[test]
fn add_job_refuses_a_weight_that_makes_the_sum_of_weights_infinite() {
    let cluster = Instance::builder()
        .gpu_type("v100", 1, 4, &[1, 2, 4])
        .build()
        .unwrap();
    let mut s = RoundScheduler::new(&cluster, Dp::default());
    let job = |id: &str| JobSpec::new(id).weight(f64::MAX).time("v100", 4, 1.0);
    s.add_job(job("a")).unwrap();
    let e = s.add_job(job("b")).unwrap_err();
    assert!(
        e.to_string()
            .contains("jobs[0].weight must keep the sum of all job weights finite"),
        "{e}"
    );
    assert_eq!(s.jobs().count(), 1);
    let plan = s.plan().unwrap();
    s.report_planned(&plan).unwrap();
    let snapshot = s.snapshot();
    RoundScheduler::restore(snapshot, Dp::default()).unwrap();
}

/// `report_planned` takes only the pending plan: an older round's plan, or one a later `plan()`
/// replaced, is refused with `StalePlan` and nothing changes.
#[test]
fn report_planned_refuses_an_older_plan() {
    let cluster = Instance::builder()
        .gpu_type("v100", 1, 4, &[1, 2, 4])
        .build()
        .unwrap();
    let mut s = RoundScheduler::new(&cluster, Dp::default());
    s.add_job(JobSpec::new("a").weight(3.0).time("v100", 4, 0.25))
        .unwrap();
    s.add_job(JobSpec::new("b").time("v100", 4, 0.5)).unwrap();
    let p0 = s.plan().unwrap();
    s.report_planned(&p0).unwrap();
    let p1 = s.plan().unwrap();
    let before = (s.deficit("a"), s.deficit("b"));
    let e = s.report_planned(&p0).unwrap_err();
    assert!(
        matches!(
            e,
            RoundError::StalePlan {
                round: 0,
                pending: 1
            }
        ),
        "{e}"
    );
    assert_eq!((s.deficit("a"), s.deficit("b")), before);
    s.report_planned(&p1).unwrap();
}

/// A snapshot whose pending plan puts the jobs over a type's units, runs a job on an option it
/// does not have, or names a job not in the planned round is refused whole by `restore`, naming
/// `pending.runs`.
#[test]
fn restore_refuses_a_pending_plan_over_capacity_off_options_or_of_other_jobs() {
    let cluster = Instance::builder()
        .gpu_type("v100", 1, 4, &[1, 2, 4])
        .build()
        .unwrap();
    let mut s = RoundScheduler::new(&cluster, Dp::default());
    for id in ["a", "b"] {
        s.add_job(JobSpec::new(id).time("v100", 4, 0.25).time("v100", 2, 0.4))
            .unwrap();
    }
    s.plan().unwrap();
    let good = serde_json::to_value(s.snapshot()).unwrap();
    let restore = |v: &serde_json::Value| {
        let snapshot: SchedulerSnapshot = serde_json::from_value(v.clone()).unwrap();
        RoundScheduler::restore(snapshot, Dp::default()).map(|_| ())
    };
    restore(&good).unwrap();
    let run = |job: &str, slot: u64| serde_json::json!({ "job": job, "gpu": "v100", "slot": slot });
    let cases = [
        (
            vec![run("a", 4), run("b", 4)],
            "must fit gpu type v100: 8 units (capacity 4)",
        ),
        (
            vec![run("a", 1)],
            "pending.runs[0] must be an option of the job",
        ),
        (
            vec![run("ghost", 2)],
            "pending.runs[0].job must name a job of the planned round",
        ),
    ];
    for (runs, says) in cases {
        let mut bad = good.clone();
        bad["pending"]["runs"] = serde_json::Value::Array(runs);
        let e = restore(&bad).unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
}
