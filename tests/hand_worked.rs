//! Hand-worked instances (files `instances/hand-*.json`): every derived number of MODEL.md
//! sections 3 and 4 is written out as arithmetic in the comments and asserted, then every solver
//! must find the optimum worked out by hand (also in `instances/README.md`) and `verify` must
//! accept it.
//!
//! Exact floating-point equality is asserted where the arithmetic is exact in binary (halves,
//! quarters); elsewhere values agree to 1e-12 relative.

use stsfair::formulation::{JobClass, RoundOption, RoundProblem, Shortage};
use stsfair::solution::{Certificate, objectives_agree};
use stsfair::solvers::{SolverConfig, SolverKind};
use stsfair::{Infeasibility, Instance, Solution, Status, verify};

fn load(name: &str) -> Instance {
    let path = format!("{}/instances/{name}.json", env!("CARGO_MANIFEST_DIR"));
    Instance::from_path(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[track_caller]
fn close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() <= 1e-12 * expected.abs().max(1.0),
        "{actual} != {expected} (to 1e-12)"
    );
}

/// The admissible options of a job as (gpu, slot, units), in order.
fn shapes(options: &[RoundOption]) -> Vec<(usize, u32, u64)> {
    options.iter().map(|o| (o.gpu, o.slot, o.units)).collect()
}

/// Every solver the build has, by its CLI name (dp, dp-dense, brute, and ilp with `highs`).
fn every_solver() -> Vec<(&'static str, Box<dyn stsfair::Solver>)> {
    SolverKind::ALL
        .iter()
        .filter(|k| k.name() != "dp+ilp")
        .map(|k| (k.name(), k.build(&SolverConfig::default())))
        .collect()
}

/// Every solver finds `objective` with exactly `assignments` (the hand-worked optimum is unique
/// in each instance below), `units_used` as given, and `verify` agrees.
#[track_caller]
fn every_solver_finds(
    instance: &Instance,
    objective: f64,
    assignments: &[Option<(usize, u32)>],
    units: &[u64],
) {
    for (name, solver) in every_solver() {
        let solution = solver
            .solve(instance)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(solution.status, Status::Optimal, "{name}");
        let found = solution.objective.unwrap();
        assert!(
            objectives_agree(objective, found),
            "{name}: objective {found}, by hand {objective}"
        );
        assert_eq!(solution.assignments, assignments, "{name}");
        assert_eq!(solution.units_used, units, "{name}");
        let checked = verify(instance, &solution).unwrap_or_else(|e| panic!("{name}: verify: {e}"));
        close(checked.objective.unwrap(), objective);
    }
}

/// Every solver answers `instance` infeasible with `words` as its reason, no objective and no
/// assignments, and `verify` certifies the answer by `certificate`; returns each solver's name
/// and structured reason.
#[track_caller]
fn every_solver_says_infeasible(
    instance: &Instance,
    words: &str,
    certificate: &Certificate,
) -> Vec<(&'static str, Infeasibility)> {
    every_solver()
        .into_iter()
        .map(|(name, solver)| {
            let solution = solver
                .solve(instance)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let Status::Infeasible { reason } = &solution.status else {
                panic!("{name}: expected infeasible, got {:?}", solution.status)
            };
            assert_eq!(reason.to_string(), words, "{name}");
            assert_eq!(solution.objective, None, "{name}");
            assert!(solution.assignments.is_empty(), "{name}");
            let checked = verify(instance, &solution).unwrap();
            assert_eq!(checked.certificate.as_ref(), Some(certificate), "{name}");
            assert!(checked.infeasibility_certified, "{name}");
            (name, reason.clone())
        })
        .collect()
}

// ---- hand-share-one-gpu: the example of the crate docs (src/lib.rs)

#[test]
fn share_one_gpu() {
    let instance = load("hand-share-one-gpu");
    let p = RoundProblem::new(&instance);
    let (a, b) = (&p.jobs[0], &p.jobs[1]);
    // One v100, U = 4, C = 1 * 4 = 4. Weights 1 and 1: phi = 1 / 2 each.
    assert_eq!(p.capacity, vec![4]);
    assert_eq!((a.share, b.share), (0.5, 0.5));
    // x = phi * n / d = 0.5 * 1 / 1 = 0.5 <= 1, no cap.
    // F_a = 0.5 * theta(v100, 4) = 0.5 * (1 / 0.25) = 0.5 * 4 = 2.
    // F_b = 0.5 * (1 / 0.50) = 0.5 * 2 = 1.
    assert_eq!((a.fair_rate, b.fair_rate), (2.0, 1.0));
    // theta_max: a 1 / 0.25 = 4; b 1 / 0.5 = 2.
    assert_eq!((a.max_throughput, b.max_throughput), (4.0, 2.0));
    // m = (D + lambda) - Delta = (0 + 1) - 1 = 0 <= 0: both may idle.
    assert_eq!((a.minimum, b.minimum), (0.0, 0.0));
    assert_eq!((a.class, b.class), (JobClass::Optional, JobClass::Optional));
    // sigma_a: slot 4: 4 / 2 = 2; slot 2: (1 / 0.4) / 2 = 2.5 / 2 = 1.25.
    // sigma_b: slot 4: 2 / 1 = 2; slot 2: (1 / 0.6) / 1 = 1.6667.
    close(a.options[0].sigma, 2.0);
    close(a.options[1].sigma, 1.25);
    close(b.options[0].sigma, 2.0);
    close(b.options[1].sigma, 1.0 / 0.6);
    // v = w * theta / theta_max: a: 4 / 4 = 1, 2.5 / 4 = 0.625; b: 2 / 2 = 1, 1.6667 / 2 = 0.8333.
    close(a.options[0].value, 1.0);
    close(a.options[1].value, 0.625);
    close(b.options[0].value, 1.0);
    close(b.options[1].value, 0.5 / 0.6);
    // Assignments within C = 4: a alone whole 1.0; b alone whole 1.0; both in 2-unit slots
    // 0.625 + 0.8333 = 1.4583 (4 units). The optimum shares the GPU.
    every_solver_finds(
        &instance,
        0.625 + 0.5 / 0.6,
        &[Some((0, 2)), Some((0, 2))],
        &[4],
    );
}

// ---- hand-fastest-first: the fastest-types-first cap, forced jobs at the boundary, a job that
// cannot catch up, and an option that can never fit.

#[test]
fn fastest_first_derived_numbers() {
    let instance = load("hand-fastest-first");
    // Types: v100 n = 1, U = 4, C = 4; a100 n = 2, U = 4, C = 8.
    let p = RoundProblem::new(&instance);
    assert_eq!(p.capacity, vec![4, 8]);
    // Weights 2, 1, 1: sum 4. phi_big = 2 / 4 = 0.5, phi_mid = phi_late = 1 / 4 = 0.25.
    let (big, mid, late) = (&p.jobs[0], &p.jobs[1], &p.jobs[2]);
    assert_eq!((big.share, mid.share, late.share), (0.5, 0.25, 0.25));

    // big (d = 1): x_v100 = 0.5 * 1 / 1 = 0.5, x_a100 = 0.5 * 2 / 1 = 1.0, sum 1.5 > 1: cap.
    // Whole-GPU throughputs: v100 1 / 2.0 = 0.5, a100 1 / 1.0 = 1. Fastest first: a100 takes
    // min(1.0, 1) = 1, nothing is left for v100 (0). F_big = 1 * 1 + 0 * 0.5 = 1.
    // (List order would give 0.5 * 0.5 + 0.5 * 1 = 0.75; no cap 0.5 * 0.5 + 1 * 1 = 1.25.)
    assert_eq!(big.fair_rate, 1.0);
    assert_eq!(stsfair::formulation::fair_rate(&instance, 0, 0.5), 1.0);
    // m_big = (0.5 + 1) - 1 = 0.5 > 0: forced. sigma = theta / 1: v100/4 0.5, a100/4 1,
    // a100/2 1 / 1.25 = 0.8. All >= 0.5 (v100/4 exactly at the minimum: the comparison is >=).
    assert_eq!(big.minimum, 0.5);
    assert_eq!(
        big.class,
        JobClass::Forced {
            cannot_catch_up: false
        }
    );
    assert_eq!(shapes(&big.options), vec![(0, 4, 4), (1, 4, 4), (1, 2, 2)]);
    assert_eq!(big.options[0].sigma, 0.5);
    assert_eq!(big.options[1].sigma, 1.0);
    close(big.options[2].sigma, 0.8);
    // theta_max_big = 1 (a100/4). v = 2 * theta / 1: 1.0, 2.0, 1.6.
    assert_eq!(big.max_throughput, 1.0);
    assert_eq!(big.options[0].value, 1.0);
    assert_eq!(big.options[1].value, 2.0);
    close(big.options[2].value, 1.6);

    // mid (d = 1): x_v100 = 0.25 * 1 = 0.25, x_a100 = 0.25 * 2 = 0.5, sum 0.75 <= 1: no cap.
    // F_mid = 0.25 * (1 / 1.0) + 0.5 * (1 / 0.5) = 0.25 + 1 = 1.25.
    assert_eq!(mid.fair_rate, 1.25);
    // m_mid = (1.5 + 1) - 1 = 1.5. sigma: v100/4 1 / 1.25 = 0.8; v100/2 0.625 / 1.25 = 0.5;
    // a100/4 2 / 1.25 = 1.6; a100/2 1.25 / 1.25 = 1. Only a100/4 reaches 1.5.
    assert_eq!(mid.minimum, 1.5);
    assert_eq!(
        mid.class,
        JobClass::Forced {
            cannot_catch_up: false
        }
    );
    assert_eq!(shapes(&mid.options), vec![(1, 4, 4)]);
    assert_eq!(mid.options[0].option, 2);
    close(mid.options[0].sigma, 1.6);
    // theta_max_mid = 2 (a100/4): v = 1 * 2 / 2 = 1.
    assert_eq!(mid.max_throughput, 2.0);
    assert_eq!(mid.options[0].value, 1.0);

    // late (d = 2): v100/4 needs 2 * 4 = 8 > C_v100 = 4 units: dropped at load, as if missing.
    let job = &instance.jobs()[2];
    assert_eq!((job.times().len(), job.options().len()), (4, 3));
    // x_v100 = 0.25 * 1 / 2 = 0.125 (but v100 has no fitting whole-GPU entry: adds nothing),
    // x_a100 = 0.25 * 2 / 2 = 0.25. F_late = 0.25 * (1 / 1.0) = 0.25.
    assert_eq!(late.fair_rate, 0.25);
    // theta_max_late = 1 / 0.8 = 1.25 from v100/2 (not 1 / 0.5 = 2 of the dropped option).
    close(late.max_throughput, 1.25);
    // m_late = (5.5 + 1) - 1 = 5.5. sigma: v100/2 1.25 / 0.25 = 5; a100/4 1 / 0.25 = 4;
    // a100/2 0.625 / 0.25 = 2.5. None reaches 5.5: cannot catch up, the largest sigma (5,
    // v100/2, 2 * 2 = 4 units) is the only admissible option. (The dropped option's 2 / 0.25 = 8
    // would have reached it.)
    assert_eq!(late.minimum, 5.5);
    assert_eq!(
        late.class,
        JobClass::Forced {
            cannot_catch_up: true
        }
    );
    assert_eq!(shapes(&late.options), vec![(0, 2, 4)]);
    close(late.options[0].sigma, 5.0);
    // v = 1 * 1.25 / 1.25 = 1.
    assert_eq!(late.options[0].value, 1.0);
    assert_eq!(p.forced().collect::<Vec<_>>(), vec![0, 1, 2]);
    assert_eq!(p.shortage(), None);
}

#[test]
fn fastest_first_optimum() {
    let instance = load("hand-fastest-first");
    // Forced: late on v100/2 (4 units, all of v100), mid on a100/4 (4 of the 8 a100 units),
    // big on what is left: v100/4 no longer fits; a100/4 (v 2.0) and a100/2 (v 1.6) do.
    // Optimum 1 + 1 + 2 = 4 with big on a100/4; units v100 4 / 4, a100 8 / 8.
    every_solver_finds(
        &instance,
        4.0,
        &[Some((1, 4)), Some((1, 4)), Some((0, 2))],
        &[4, 8],
    );
}

#[test]
fn fastest_first_verify_rejects_inadmissible_choices() {
    let instance = load("hand-fastest-first");
    let p = RoundProblem::new(&instance);
    let solve =
        |a: Vec<Option<(usize, u32)>>| Solution::from_assignments("hand", Status::Optimal, &p, a);
    // mid on a100/2 (sigma 1 < 1.5) is a fitting option but not admissible.
    let mut s = solve(vec![Some((1, 4)), Some((1, 4)), Some((0, 2))]);
    s.assignments[1] = Some((1, 2));
    assert!(
        matches!(verify(&instance, &s), Err(stsfair::VerifyError::NotAdmissible { job, .. }) if job == "mid")
    );
    // late on a100/4 (sigma 4, not the largest 5): rejected although it fits.
    let mut s = solve(vec![Some((1, 4)), Some((1, 4)), Some((0, 2))]);
    s.assignments[2] = Some((1, 4));
    assert!(
        matches!(verify(&instance, &s), Err(stsfair::VerifyError::NotAdmissible { job, .. }) if job == "late")
    );
    // late on the dropped v100/4: not an option at all.
    let mut s = solve(vec![Some((1, 4)), Some((1, 4)), Some((0, 2))]);
    s.assignments[2] = Some((0, 4));
    assert!(
        matches!(verify(&instance, &s), Err(stsfair::VerifyError::NoSuchOption { job, .. }) if job == "late")
    );
}

// ---- hand-no-bound: a job with only partial-GPU options (F = 0), optional jobs, an idle job.

#[test]
fn no_bound_derived_numbers() {
    let instance = load("hand-no-bound");
    // One type v100: n = 2, U = 4, C = 8. Four jobs of weight 1: phi = 1 / 4 = 0.25 each.
    let p = RoundProblem::new(&instance);
    assert_eq!(p.capacity, vec![8]);
    assert!(p.jobs.iter().all(|j| j.share == 0.25));
    let (part, whole, pair, slow) = (&p.jobs[0], &p.jobs[1], &p.jobs[2], &p.jobs[3]);

    // part: no whole-GPU (slot 4) entry, so F = x * 0 = 0: no fairness bound. D = 10 gives
    // m = (10 + 1) - 1 = 10 > 0, yet the job is never forced. sigma = theta / 0 = infinity.
    assert_eq!(part.fair_rate, 0.0);
    assert_eq!(part.minimum, 10.0);
    assert_eq!(part.class, JobClass::Unbounded);
    assert!(part.may_idle());
    assert!(part.options.iter().all(|o| o.sigma == f64::INFINITY));
    // theta: slot 1 1 / 0.5 = 2, slot 2 1 / 0.25 = 4 = theta_max. v: 2 / 4 = 0.5, 4 / 4 = 1.
    assert_eq!(part.max_throughput, 4.0);
    assert_eq!((part.options[0].value, part.options[1].value), (0.5, 1.0));

    // whole: x = 0.25 * 2 / 1 = 0.5; F = 0.5 * (1 / 0.5) = 1. m = (0 + 1) - 1 = 0: optional.
    // sigma: slot 4 2 / 1 = 2; slot 2 (1 / 0.8) / 1 = 1.25. v: 2 / 2 = 1; 1.25 / 2 = 0.625.
    assert_eq!(whole.fair_rate, 1.0);
    assert_eq!((whole.minimum, whole.class), (0.0, JobClass::Optional));
    assert_eq!(whole.options[0].sigma, 2.0);
    close(whole.options[1].sigma, 1.25);
    close(whole.options[1].value, 0.625);

    // pair (d = 2): x = 0.25 * 2 / 2 = 0.25; F = 0.25 * (1 / 0.25) = 1. m = (0.25 + 1) - 1 =
    // 0.25 > 0: forced. sigma: slot 4 (8 units) 4 / 1 = 4; slot 2 (4 units) 2 / 1 = 2: both
    // admissible. v: 4 / 4 = 1; 2 / 4 = 0.5.
    assert_eq!(pair.fair_rate, 1.0);
    assert_eq!(pair.minimum, 0.25);
    assert_eq!(
        pair.class,
        JobClass::Forced {
            cannot_catch_up: false
        }
    );
    assert_eq!(shapes(&pair.options), vec![(0, 4, 8), (0, 2, 4)]);
    assert_eq!((pair.options[0].value, pair.options[1].value), (1.0, 0.5));

    // slow: x = 0.5; F = 0.5 * (1 / 2) = 0.25. m = (-0.5 + 1) - 1 = -0.5: optional.
    // sigma 0.5 / 0.25 = 2; v = 1 (its only option).
    assert_eq!(slow.fair_rate, 0.25);
    assert_eq!((slow.minimum, slow.class), (-0.5, JobClass::Optional));
    assert_eq!((slow.options[0].sigma, slow.options[0].value), (2.0, 1.0));
    assert_eq!(p.forced().collect::<Vec<_>>(), vec![2]);
}

#[test]
fn no_bound_optimum() {
    let instance = load("hand-no-bound");
    // pair must run: slot 4 uses all 8 units (total 1), or slot 2 uses 4 (0.5) and leaves 4:
    //   part/2 + whole/2 (2 + 2 units): 1 + 0.625       -> 0.5 + 1.625 = 2.125
    //   part/1 + whole/2 (1 + 2 units): 0.5 + 0.625     -> 1.625
    //   whole/4 or slow/4 (4 units):    1               -> 1.5
    // Optimum 2.125: pair, part and whole in 2-unit slots, slow idle; 8 / 8 units.
    every_solver_finds(
        &instance,
        2.125,
        &[Some((0, 2)), Some((0, 2)), Some((0, 2)), None],
        &[8],
    );
}

// ---- hand-infeasible: two forced jobs confined to one 4-unit GPU.

#[test]
fn infeasible_derived_numbers_and_shortage() {
    let instance = load("hand-infeasible");
    let p = RoundProblem::new(&instance);
    // v100 C = 1 * 4 = 4, k80 C = 4. Three jobs of weight 1: phi = 1 / 3.
    assert_eq!(p.capacity, vec![4, 4]);
    let (x, y, z) = (&p.jobs[0], &p.jobs[1], &p.jobs[2]);
    // x: F = (1/3) * 1 / 1.0 = 1/3; m = (2 + 1) - 1 = 2; sigma v100/4 = 1 / (1/3) = 3 >= 2.
    close(x.fair_rate, 1.0 / 3.0);
    assert_eq!(x.minimum, 2.0);
    assert_eq!(shapes(&x.options), vec![(0, 4, 4)]);
    close(x.options[0].sigma, 3.0);
    // y: x_v100 = x_k80 = 1/3 (sum 2/3, no cap). F = (1/3) * (1 / 0.5) + (1/3) * (1 / 4.0) =
    // 2/3 + 1/12 = 0.75; m = 2. sigma: v100/4 2 / 0.75 = 2.667 >= 2; v100/2 1 / 0.75 = 1.333;
    // k80/4 0.25 / 0.75 = 0.333. Only v100/4 (4 units) is admissible.
    close(y.fair_rate, 0.75);
    assert_eq!(shapes(&y.options), vec![(0, 4, 4)]);
    close(y.options[0].sigma, 2.0 / 0.75);
    // z: m = 0, optional (k80 only).
    assert_eq!(z.class, JobClass::Optional);
    assert_eq!(p.shortage(), Some(v100_shortage()));
}

/// hand-infeasible's certificate. Types {v100}: the forced jobs x and y can only use it; they
/// need 4 + 4 = 8 units and it holds 4: short by 4. ({k80}: no forced job confined to it;
/// {v100, k80}: 8 <= 8.)
fn v100_shortage() -> Shortage {
    Shortage {
        types: vec![0],
        type_names: vec!["v100".to_string()],
        jobs: 2,
        need: 8,
        have: 4,
        short: 4,
    }
}

#[test]
fn infeasible_every_solver_says_why() {
    let instance = load("hand-infeasible");
    let words = "2 forced jobs can only run on gpu types [v100], which need at least 8 units there but hold 4: short by 4 units";
    let certificate = Certificate::Shortage(v100_shortage());
    for (name, reason) in every_solver_says_infeasible(&instance, words, &certificate) {
        // The certificate is structured: the shortage of the hand-worked formulation test.
        let Infeasibility::Shortage(short) = reason else {
            panic!("{name}: expected a shortage certificate, got {reason:?}")
        };
        assert_eq!(
            (short.types.as_slice(), short.short),
            ([0].as_slice(), 4),
            "{name}"
        );
    }
    // With y's deficit lowered to 0 (m = 0) y may idle and the round is feasible: x on v100/4
    // (v = 1) fills v100; on k80, z is worth 1 and y only 0.25 / 2 = 0.125, so y idles: 2.
    let relaxed = instance.with_deficits(&[2.0, 0.0, 0.0]).unwrap();
    every_solver_finds(&relaxed, 2.0, &[Some((0, 4)), None, Some((1, 4))], &[4, 4]);
}

// ---- hand-unpackable: three forced jobs whose units suffice but whose slots do not pack.

#[test]
fn unpackable_derived_numbers_and_no_shortage() {
    let instance = load("hand-unpackable");
    let p = RoundProblem::new(&instance);
    // v100 and p100 C = 3 * 2 = 6 each. Three jobs of weight 1: phi = 1 / 3.
    assert_eq!(p.capacity, vec![6, 6]);
    for job in &p.jobs {
        // d = 2: x_v100 = x_p100 = (1/3) * 3 / 2 = 0.5, sum 1 (no cap). theta = 1 / 1.0 on
        // both whole-GPU slots: F = 0.5 * 1 + 0.5 * 1 = 1. m = (0.5 + 1) - 1 = 0.5.
        close(job.fair_rate, 1.0);
        assert_eq!(job.minimum, 0.5);
        // sigma = 1 / 1 = 1 >= 0.5 on both: forced, both admissible, d * s = 2 * 2 = 4 units.
        assert_eq!(
            job.class,
            JobClass::Forced {
                cannot_catch_up: false
            }
        );
        assert_eq!(shapes(&job.options), vec![(0, 2, 4), (1, 2, 4)]);
        close(job.options[0].sigma, 1.0);
        close(job.options[0].value, 1.0);
    }
    // The units suffice: {v100}, {p100} confine no forced job; {v100, p100} holds 12 and the
    // jobs need 3 * 4 = 12. No shortage, and fractionally (1.5 jobs a type) they fit: the
    // Lagrangian bound is 3, every solution's least value. But a type of 6 units holds one
    // job of 4: two of the three fit, never three.
    assert_eq!(p.shortage(), None);
    assert_eq!(p.forced_fit(u64::MAX), Some(false));
}

#[test]
fn unpackable_every_solver_says_why() {
    let instance = load("hand-unpackable");
    // `verify` proves the claim by the same reachability.
    let words = "the 3 forced jobs (a, b, c) cannot all be placed at once: their admissible slots do not pack into the capacities of the gpu types";
    let certificate = Certificate::ForcedJobsDoNotPack;
    for (name, reason) in every_solver_says_infeasible(&instance, words, &certificate) {
        assert!(matches!(reason, Infeasibility::Unpackable { .. }), "{name}");
    }
    // With c's deficit lowered to 0 (m = 0) c may idle: a on one type, b on the other, each
    // worth 1 (c, worth 1 too, finds no 4 units left): 2. Which job takes which type ties, so
    // the assignments are not compared.
    let relaxed = instance.with_deficits(&[0.5, 0.5, 0.0]).unwrap();
    for (name, solver) in every_solver() {
        let s = solver.solve(&relaxed).unwrap();
        close(s.objective.unwrap(), 2.0);
        assert_eq!(s.units_used, vec![4, 4], "{name}");
    }
    // A false claim of infeasibility on it is refused: its forced jobs fit.
    let problem = RoundProblem::new(&relaxed);
    let claim = Solution::infeasible("dp", &problem, Infeasibility::of(&problem));
    assert_eq!(
        verify(&relaxed, &claim),
        Err(stsfair::VerifyError::FeasibleClaimedInfeasible { forced: 2 })
    );
}
