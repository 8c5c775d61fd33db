//! The properties the fuzz targets check, shared by `fuzz/fuzz_targets/*.rs` (libFuzzer) and
//! `tests/fuzz_regressions.rs` (which replays the kept corpus under `cargo test`), so that a
//! finding is re-checked by exactly the code that found it.
//!
//! Only `stsfair` and `std` are used here: the solve input is decoded from raw bytes by a small
//! reader rather than by the `arbitrary` crate, so the regression test needs no extra dependency.
//! Each check panics (the fuzzer's crash signal) when a property fails; every other outcome
//! returns normally.
#![allow(dead_code)]

use stsfair::solution::objectives_agree;
use stsfair::solvers::{BruteForce, DenseDp, Dp, SolveError, Solver};
use stsfair::{Fairness, Instance, JobSpec, RoundProblem, Solution, Status, verify};

/// The parse target: any bytes either fail with an error or give an instance that survives a
/// round trip through `to_json` unchanged and whose round problem can be derived.
pub fn check_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(instance) = Instance::from_json(text) else {
        return;
    };
    let again = Instance::from_json(&instance.to_json())
        .unwrap_or_else(|e| panic!("a valid instance's own document is refused: {e}"));
    assert_eq!(again, instance, "to_json does not round-trip");
    for job in instance.jobs() {
        for o in job.options() {
            assert!(
                o.units <= instance.gpu_types()[o.gpu].capacity(),
                "an option that cannot fit was kept"
            );
            assert!(
                o.throughput > 0.0 && o.throughput.is_finite(),
                "throughput {}",
                o.throughput
            );
        }
    }
    let problem = RoundProblem::new(&instance);
    check_problem(&problem);
    let _ = problem.shortage();
}

/// The instance the solution target reads solutions against.
const SOLUTION_INSTANCE: &str = include_str!("../instances/hand-fastest-first.json");

/// The solution target: any bytes as a `stsfair-solution/1` document for
/// `instances/hand-fastest-first.json`. Reading and `verify` must never panic; a solution that
/// `verify` accepts has the objective it claims and is written back without panicking.
pub fn check_solution(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let instance = Instance::from_json(SOLUTION_INSTANCE)
        .unwrap_or_else(|e| panic!("the shipped instance is refused: {e}"));
    let Ok(solution) = Solution::from_json(&instance, text) else {
        return;
    };
    let Ok(verified) = verify(&instance, &solution) else {
        return;
    };
    if let (Some(claimed), Some(actual)) = (solution.objective, verified.objective) {
        assert!(
            objectives_agree(claimed, actual),
            "verify accepted objective {claimed} for {actual}"
        );
    }
    let _ = solution.to_json(&instance);
}

/// Invariants of the derived round problem that every solver relies on.
fn check_problem(problem: &RoundProblem) {
    for job in &problem.jobs {
        assert!(
            !job.share.is_nan() && !job.fair_rate.is_nan(),
            "NaN share or fair rate"
        );
        for o in &job.options {
            assert!(
                o.value.is_finite() && o.value >= 0.0,
                "option value {}",
                o.value
            );
            assert!(!o.sigma.is_nan(), "NaN sigma");
        }
    }
}

/// Reads the solve target's input: a byte at a time, 0 once the data runs out, so that every
/// input decodes to something.
struct Bytes<'a> {
    data: &'a [u8],
}

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }
    /// One of `table`, or (when the byte is 255) the f64 with the next 8 bytes as its bits,
    /// which reaches NaN, infinities, subnormals and every extreme the validator must handle.
    fn float(&mut self, table: &[f64]) -> f64 {
        let b = self.byte();
        if b == 255 {
            let mut bits = [0u8; 8];
            for x in &mut bits {
                *x = self.byte();
            }
            return f64::from_le_bytes(bits);
        }
        table[usize::from(b) % table.len()]
    }
}

/// GPU shapes the decoder picks from: (units, slot ladder).
const LADDERS: &[(u64, &[u64])] = &[
    (4, &[1, 2, 4]),
    (8, &[2, 4, 8]),
    (4, &[4]),
    (8, &[1, 2, 4]),
    (6, &[1, 3]),
    (7, &[1]),
];
/// GPU counts: mostly tiny (so the dense DP and brute force answer), some large enough that
/// capacity cannot bind.
const COUNTS: &[u64] = &[0, 1, 1, 2, 2, 3, 4, 1_000_000, 250_000, 1_000];
const TIMES: &[f64] = &[
    0.1,
    0.2,
    0.25,
    0.4,
    0.5,
    1.0,
    3.0,
    1e-300,
    1e300,
    5e-324,
    0.1 + 0.2,
    1.0 / 3.0,
];
const WEIGHTS: &[f64] = &[1.0, 1.0, 2.0, 0.5, 1e-300, 1e300, 5e-324, 3.0];
const DEFICITS: &[f64] = &[
    0.0, 0.0, 1.0, 0.5, 1.5, 3.0, -2.0, 1e308, -1e308, 5e-324, -0.0,
];
const LAMBDAS: &[f64] = &[1.0, 0.5, 0.25, 5e-324, 0.1];
const DEBTS: &[f64] = &[1.0, 0.0, 0.5, 2.0, 1e300, 5e-324];

/// Decodes bytes into an instance through the builder (which validates like a file); `None` when
/// validation refuses the decoded values.
pub fn decode_instance(data: &[u8]) -> Option<Instance> {
    let mut r = Bytes { data };
    let fairness = Fairness {
        lambda: r.float(LAMBDAS),
        max_debt: r.float(DEBTS),
        credit: r.float(DEBTS),
    };
    let types: Vec<(u64, &[u64], u64)> = (0..1 + r.byte() % 3)
        .map(|_| {
            let (units, ladder) = LADDERS[usize::from(r.byte()) % LADDERS.len()];
            (units, ladder, COUNTS[usize::from(r.byte()) % COUNTS.len()])
        })
        .collect();
    let mut b = Instance::builder().fairness(fairness);
    for (k, &(units, ladder, count)) in types.iter().enumerate() {
        b = b.gpu_type(format!("g{k}"), count, units, ladder);
    }
    for j in 0..r.byte() % 9 {
        let workers = [1, 1, 2, 3, 1024][usize::from(r.byte()) % 5];
        let mut spec = JobSpec::new(format!("j{j}"))
            .weight(r.float(WEIGHTS))
            .workers(workers)
            .deficit(r.float(DEFICITS));
        for (k, &(_, ladder, _)) in types.iter().enumerate() {
            for &slot in ladder {
                // About half the (type, slot) pairs get a time.
                if r.byte() % 2 == 1 {
                    spec = spec.time(format!("g{k}"), slot, r.float(TIMES));
                }
            }
        }
        b = b.job(spec);
    }
    b.build().ok()
}

/// Memory the fuzzed dense DP may use: small, so that one execution stays in milliseconds.
const DENSE_BYTES: u64 = 1 << 20;
/// Assignments brute force may enumerate per execution.
const BRUTE_COMBINATIONS: u128 = 20_000;

/// The solve target: decode an instance; solve it with the fast DP, the dense DP and (when tiny)
/// brute force; every answer must pass `verify`, and answers must agree on feasibility and, to
/// 1e-9 relative, on the objective. A solver may refuse only with [`SolveError::TooLarge`].
pub fn check_solve(data: &[u8]) {
    let Some(instance) = decode_instance(data) else {
        return;
    };
    // The decoded instance must also survive the file path unchanged.
    let again = Instance::from_json(&instance.to_json())
        .unwrap_or_else(|e| panic!("a built instance's document is refused: {e}"));
    assert_eq!(again, instance, "to_json does not round-trip");
    let problem = RoundProblem::new(&instance);
    check_problem(&problem);
    let answers: Vec<Solution> = [
        solve_checked(&Dp::default(), &instance),
        solve_checked(&DenseDp::default().with_max_bytes(DENSE_BYTES), &instance),
        solve_checked(
            &BruteForce::default().with_max_combinations(BRUTE_COMBINATIONS),
            &instance,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    // The large GPU counts make capacity slack: the fast DP must answer those.
    if instance.jobs().len() <= 8 && instance.gpu_types().iter().all(|g| g.count() >= 1_000) {
        assert!(
            answers.iter().any(|s| s.solver == "dp"),
            "dp refused an instance whose capacity cannot bind"
        );
    }
    let Some((first, rest)) = answers.split_first() else {
        return;
    };
    for other in rest {
        let infeasible = |s: &Solution| matches!(s.status, Status::Infeasible { .. });
        assert_eq!(
            infeasible(first),
            infeasible(other),
            "{} says {:?}, {} says {:?}",
            first.solver,
            first.status,
            other.solver,
            other.status
        );
        if let (Some(a), Some(b)) = (first.objective, other.objective) {
            assert!(
                objectives_agree(a, b),
                "{} finds {a}, {} finds {b}",
                first.solver,
                other.solver
            );
        }
    }
}

/// Solves and verifies; `None` when the solver refuses for size, a panic for any other failure.
fn solve_checked(solver: &dyn Solver, instance: &Instance) -> Option<Solution> {
    match solver.solve(instance) {
        Ok(solution) => {
            if let Err(e) = verify(instance, &solution) {
                panic!("{}: verify refuses its answer: {e}", solver.name());
            }
            Some(solution)
        }
        Err(SolveError::TooLarge { .. }) => None,
        Err(e) => panic!("{}: {e}", solver.name()),
    }
}
