//! Unit tests of the Lagrangian bound: L(mu) bounds the optimum; the ties, slope and step of
//! the line search against direct computations; the steepest direction, the vertex and the
//! edges by hand; the certificate, the smoothing and the refinement against the LP's value.

use proptest::prelude::*;

use super::certificate::box_solution;
use super::line_search::{first_crossing, reach};
use super::*;
use crate::solvers::dp::classes::{Choice, classes};
use crate::solvers::dp::testing::{self, at_least, optimum};

/// Hand-worked: capacities 4 and 16; a forced job on 4 units of type 0 (value 1); a forced
/// job on 1 unit of type 0 (value 0.25) or 8 of type 1 (value 1); two optional jobs on 6
/// units of type 1 and one on 4 (value 1 each). At mu = (0.5, 5/32) the second forced job
/// ties (rc -0.25 both ways) and the optional ones run, so the subgradients are
/// g = (-l, -8 (1 - l)) for l in [0, 1], the share of that job on type 0. The shortest is at
/// l = 64/65: g* = -(64, 8) / 65, and the steepest direction is (64, 8) / 65, along which L
/// falls.
#[test]
fn steepest_direction_by_hand() {
    let choice = |gpu: Option<usize>, units: u64, value: f64| Choice {
        gpu,
        units,
        value,
        slot: 0,
    };
    let idle = choice(None, 0, 0.0);
    let class = |choices: Vec<Choice>, forced: bool, jobs: Vec<usize>| Class {
        choices,
        forced,
        jobs,
    };
    let classes = vec![
        class(vec![choice(Some(0), 4, 1.0)], true, vec![0]),
        class(
            vec![choice(Some(0), 1, 0.25), choice(Some(1), 8, 1.0)],
            true,
            vec![1],
        ),
        class(vec![choice(Some(1), 6, 1.0), idle], false, vec![2, 3]),
        class(vec![choice(Some(1), 4, 1.0), idle], false, vec![4]),
    ];
    let flat = Flat::new(&classes, &[4, 16]);
    let mu = [0.5, 5.0 / 32.0];
    let mut ties = Ties::default();
    flat.ties(&[0.5, 5.0 / 32.0, 0.0], &mut ties);
    assert_eq!(&ties.choices[ties.start[1]..ties.start[2]], &[1, 2]);
    let d = flat.steepest(&mu, &ties).unwrap();
    let want = [64.0 / 65.0, 8.0 / 65.0];
    let err = ((d[0] - want[0]).powi(2) + (d[1] - want[1]).powi(2)).sqrt();
    assert!(err <= 0.03, "direction {d:?}, want {want:?}");
    let at = |t: f64| flat.lagrangian(&[mu[0] + t * d[0], mu[1] + t * d[1]]);
    assert!(at(1e-3) < at(0.0), "L {} then {}", at(0.0), at(1e-3));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// Lemma 1: L(mu) bounds the optimum for every mu >= 0, in particular at the
    /// multipliers found, which are >= 0, are where the returned L was evaluated, and do
    /// not lose to mu = 0 or to the random prices.
    #[test]
    fn lagrangian_bound_is_at_least_the_optimum(
        problem in testing::small_problem(),
        prices in proptest::collection::vec(0.0f64..3.0, 4),
    ) {
        let classes = classes(&problem);
        let (mu, l) = multipliers(&classes, &problem.capacity);
        let flat = Flat::new(&classes, &problem.capacity);
        prop_assert!(mu.iter().all(|&m| m >= 0.0), "mu {:?}", mu);
        prop_assert_eq!(flat.lagrangian(&mu), l);
        let zero = vec![0.0; mu.len()];
        prop_assert!(at_least(flat.lagrangian(&zero), l));
        let other = &prices[..mu.len()];
        if let Some(opt) = optimum(&problem)? {
            prop_assert!(at_least(l, opt), "L {} below the optimum {}", l, opt);
            let lo = flat.lagrangian(other);
            prop_assert!(at_least(lo, opt), "L({:?}) = {} below {}", other, lo, opt);
        }
    }
}

/// Prices for the tests of the line search, four of them (one per type at most): halves
/// from 0 to 2, where choices of the small problems tie, or any in [0, 3).
fn tie_prices() -> impl Strategy<Value = Vec<f64>> {
    proptest::collection::vec(
        prop_oneof![(0u8..5).prop_map(|i| f64::from(i) / 2.0), 0.0f64..3.0],
        4,
    )
}

/// The descent of `classes`, the prices (the first K of `prices`, then the idle
/// pseudo-type's 0) and the maximizing choices there.
fn descent_at(classes: &[Class], capacity: &[u64], prices: &[f64]) -> (Descent, Vec<f64>, Ties) {
    let descent = Descent::new(classes, capacity);
    let mut price = prices[..capacity.len()].to_vec();
    price.push(0.0);
    let mut ties = Ties::default();
    descent.flat.ties(&price, &mut ties);
    (descent, price, ties)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    /// The line search's slope check reads each class's maximizing choices from `ties`:
    /// for every direction of the descent, the least d . u over them is what `maximizer`
    /// gives, at prices where choices tie (0 and halves) as at any, and so is the rc its
    /// envelope walk starts from; the slope summed over `Ties::used` is the slope summed
    /// class by class.
    #[test]
    fn ties_give_what_maximizer_gives(
        problem in testing::small_problem(),
        prices in tie_prices(),
    ) {
        let classes = classes(&problem);
        let (descent, price, ties) = descent_at(&classes, &problem.capacity, &prices);
        let flat = &descent.flat;
        for d in &descent.dirs {
            let mut dir = d.clone();
            dir.push(0.0);
            for c in 0..flat.count.len() {
                let from_ties = ties.choices[ties.start[c]..ties.start[c + 1]]
                    .iter()
                    .map(|&q| dir[flat.gpu[q]] * flat.units[q])
                    .reduce(f64::min);
                let direct = flat.maximizer(c, &price, &dir);
                prop_assert_eq!(from_ties, direct.map(|(_, b)| b));
                prop_assert_eq!(flat.least(c, &dir, &ties), from_ties);
                // The line search's start on the envelope: the first tie's rc is the
                // maximizer's, to the bit.
                if let Some(&q) = ties.choices[ties.start[c]..ties.start[c + 1]].first() {
                    let a = flat.value[q] - price[flat.gpu[q]] * flat.units[q];
                    prop_assert_eq!(Some(a.to_bits()), direct.map(|(a, _)| a.to_bits()));
                }
            }
            // The slope from the classes of one units vector summed (`Ties::used`) is the
            // class-by-class sum exactly (0 and -0 alike: the line search only compares it
            // with 0 before it is negative).
            let (fast, by_class) = (flat.slope(&dir, &ties), flat.slope_by_class(&dir, &ties));
            prop_assert!(fast == by_class, "{} against {}", fast, by_class);
        }
    }
}

/// The LP relaxation's value by HiGHS (an independent path to min L), `None` when the
/// LP has no feasible point.
#[cfg(feature = "highs")]
fn lp_value(problem: &crate::RoundProblem) -> Option<f64> {
    use highs::{ColProblem, HighsModelStatus, Sense};
    let mut pb = ColProblem::default();
    let capacity: Vec<_> = problem
        .capacity
        .iter()
        .map(|&c| pb.add_row(..=c as f64))
        .collect();
    for job in &problem.jobs {
        let one = pb.add_row(if job.may_idle() { 0.0 } else { 1.0 }..=1.0);
        for o in &job.options {
            pb.add_column(
                o.value,
                0.0..=1.0,
                [(one, 1.0), (capacity[o.gpu], o.units as f64)],
            );
        }
    }
    let mut model = pb.optimise(Sense::Maximise);
    model.make_quiet();
    let solved = model.solve();
    (solved.status() == HighsModelStatus::Optimal).then(|| solved.objective_value())
}

/// The descent of `multipliers` stops short of the minimum of L on a shipped round
/// (166.7187 where the LP's value is 166.3622); the smoothing reaches the LP's value, by
/// HiGHS, to 1e-9 relative.
#[cfg(feature = "highs")]
#[test]
fn descent_and_smoothing_reach_the_lp_value_where_the_fixed_directions_stop_short() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/instances/round4-gavel-36x3-300.json"
    );
    let instance = crate::Instance::from_path(path).unwrap();
    let problem = crate::RoundProblem::new(&instance);
    let classes = classes(&problem);
    let lp = lp_value(&problem).unwrap();
    // The fixed directions alone stop 0.36 above the LP's value here (L = 166.7187);
    // the steepest direction takes the descent to it.
    let (_, descended) = multipliers(&classes, &problem.capacity);
    assert!(
        (descended - lp).abs() <= 1e-9 * lp,
        "descent {descended}, LP {lp}"
    );
    let (mu, smoothed) = smooth_multipliers(&classes, &problem.capacity);
    assert!(
        (smoothed - lp).abs() <= 1e-9 * lp,
        "smoothed {smoothed}, LP {lp}"
    );
    assert!(mu.iter().all(|&m| m >= 0.0));
}

/// `proven_minimum` on the shipped rounds: wherever it proves the descent's mu a minimizer,
/// L there is the LP's value (HiGHS) to within the slack; it proves it on the shipped
/// Gavel rounds named below (so the property is not vacuous there); and a mu moved off the
/// minimizer is never proven.
#[cfg(feature = "highs")]
#[test]
fn proven_minima_are_the_lp_value_on_the_shipped_rounds() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/instances");
    let mut proven = Vec::new();
    for name in [
        "gavel-100x3-1000",
        "gavel-250x3-3000",
        "gavel-36x3-300",
        "gavel-8x3-40",
        "gavel-multi-36x3-300",
        "round4-gavel-36x3-300",
        "synth-3types-tight-1000",
        "synth-4types-multi-500",
    ] {
        let instance = crate::Instance::from_path(format!("{dir}/{name}.json")).unwrap();
        let problem = crate::RoundProblem::new(&instance);
        let classes = classes(&problem);
        let lp = lp_value(&problem).unwrap();
        let (mu, l) = multipliers(&classes, &problem.capacity);
        let slack = 1e-10 * l.abs().max(1.0);
        if proven_minimum(&classes, &problem.capacity, &mu, slack) {
            assert!(l <= lp + slack + 1e-12 * lp.abs(), "{name}: L {l}, LP {lp}");
            proven.push(name);
        }
        let moved: Vec<f64> = mu.iter().map(|m| m * 1.2 + 0.01).collect();
        let l_moved = Flat::new(&classes, &problem.capacity).lagrangian(&moved);
        assert!(l_moved > lp + 1e-6, "{name}: moved mu still minimal");
        assert!(
            !proven_minimum(&classes, &problem.capacity, &moved, slack),
            "{name}: a mu with L {l_moved} against LP {lp} proven minimal"
        );
    }
    eprintln!("proven: {proven:?}");
}

/// Box systems by hand: one share reaching the right-hand side inside its box, one that
/// would need to leave it, two shares that reach it only together, and a slack.
#[test]
fn box_systems_by_hand() {
    let col = |a: &[f64], up: f64| (a.to_vec(), up);
    // 4 y = 2 with y in [0, 1]: y = 0.5.
    assert!(box_solution(&[col(&[4.0], 1.0)], &[2.0], 1e-9));
    // 4 y = 6: y = 1.5 is outside.
    assert!(!box_solution(&[col(&[4.0], 1.0)], &[6.0], 1e-9));
    // (1, 1) y1 + (1, -1) y2 = (1.5, 0.5): y1 = y2 = ... y1 + y2 = 1.5, y1 - y2 = 0.5 ->
    // y1 = 1, y2 = 0.5.
    assert!(box_solution(
        &[col(&[1.0, 1.0], 1.0), col(&[1.0, -1.0], 1.0)],
        &[1.5, 0.5],
        1e-9
    ));
    // The same rows need y1 = 1.5 for (2, 1): no.
    assert!(!box_solution(
        &[col(&[1.0, 1.0], 1.0), col(&[1.0, -1.0], 1.0)],
        &[2.0, 1.0],
        1e-9
    ));
    // A row no share touches must already hold.
    assert!(box_solution(&[col(&[3.0, 0.0], 1.0)], &[3.0, 0.0], 1e-9));
    assert!(!box_solution(&[col(&[3.0, 0.0], 1.0)], &[3.0, 1.0], 1e-9));
    // A slack of up to 5 on the second row covers 3 of room.
    assert!(box_solution(
        &[col(&[3.0, 0.0], 1.0), col(&[0.0, 1.0], 5.0)],
        &[3.0, 3.0],
        1e-9
    ));
    // No shares: the right-hand side must be 0.
    assert!(box_solution(&[], &[0.0, 0.0], 1e-9));
    assert!(!box_solution(&[], &[1.0, 0.0], 1e-9));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    /// Wherever `proven_minimum` proves the descent's mu (or a mu moved from it) a
    /// minimizer of L to within a slack, L there is within that slack of the LP's value
    /// (HiGHS), and the smoothing finds nothing lower by more.
    #[cfg(feature = "highs")]
    #[test]
    fn a_proven_minimum_is_the_lp_value(problem in testing::small_problem()) {
        let classes = classes(&problem);
        let flat = Flat::new(&classes, &problem.capacity);
        let (mu, l) = multipliers(&classes, &problem.capacity);
        let slack = 1e-9 * l.abs().max(1.0);
        let moved: Vec<f64> = mu.iter().map(|m| m * 1.5 + 0.05).collect();
        for at in [mu, moved] {
            if !proven_minimum(&classes, &problem.capacity, &at, slack) {
                continue;
            }
            let l_at = flat.lagrangian(&at);
            let Some(lp) = lp_value(&problem) else { continue };
            prop_assert!(
                l_at <= lp + slack + 1e-9 * lp.abs().max(1.0),
                "proven at {:?}: L {} against LP {}", at, l_at, lp
            );
            let (_, smoothed) = smooth_multipliers(&classes, &problem.capacity);
            prop_assert!(smoothed >= l_at - slack - 1e-9 * l_at.abs().max(1.0));
        }
    }

    /// The smoothed multipliers give a valid bound (>= 0, at least the optimum) that is
    /// the LP relaxation's value (HiGHS) to 1e-7 relative when the LP has a feasible point.
    #[cfg(feature = "highs")]
    #[test]
    fn smoothed_multipliers_reach_the_lp_value(problem in testing::small_problem()) {
        let classes = classes(&problem);
        let (mu, l) = smooth_multipliers(&classes, &problem.capacity);
        prop_assert!(mu.iter().all(|&m| m >= 0.0), "mu {:?}", mu);
        prop_assert_eq!(Flat::new(&classes, &problem.capacity).lagrangian(&mu), l);
        if let Some(opt) = optimum(&problem)? {
            prop_assert!(at_least(l, opt), "L {} below the optimum {}", l, opt);
        }
        if let Some(lp) = lp_value(&problem) {
            prop_assert!((l - lp).abs() <= 1e-7 * lp.abs().max(1.0), "L {} LP {}", l, lp);
        }
    }
}

/// The line search's step by the old way, for `crossing`'s test: walk every class's whole
/// envelope up to `hi`, sort all breakpoints and sum their slope increases until they
/// reach `need`.
fn crossing_by_sorting(
    flat: &Flat,
    price: &[f64],
    dir: &[f64],
    ties: &Ties,
    hi: f64,
    need: f64,
) -> f64 {
    let mut breaks: Vec<(f64, f64)> = Vec::new();
    for c in 0..flat.count.len() {
        let tied = &ties.choices[ties.start[c]..ties.start[c + 1]];
        let (Some(&first), Some(mut b_cur)) = (tied.first(), flat.least(c, dir, ties)) else {
            continue;
        };
        let line = |q: usize| {
            (
                flat.value[q] - price[flat.gpu[q]] * flat.units[q],
                dir[flat.gpu[q]] * flat.units[q],
            )
        };
        let mut a_cur = line(first).0;
        loop {
            let mut next: Option<(f64, f64, f64)> = None;
            for (a, b) in (flat.start[c]..flat.start[c + 1]).map(line) {
                if b < b_cur {
                    let t = ((a_cur - a) / (b_cur - b)).max(0.0);
                    if next.is_none_or(|(tn, _, bn)| t < tn || (t == tn && b < bn)) {
                        next = Some((t, a, b));
                    }
                }
            }
            match next {
                Some((t, a, b)) if t < hi => {
                    breaks.push((t, flat.count[c] * (b_cur - b)));
                    (a_cur, b_cur) = (a, b);
                }
                _ => break,
            }
        }
    }
    breaks.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut sum = 0.0;
    breaks
        .iter()
        .find(|b| {
            sum += b.1;
            sum >= need
        })
        .map_or(hi, |b| b.0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    /// The sweeps over the envelopes (`Flat::crossing`) find the step that walking them
    /// whole and sorting every breakpoint finds, for every descending direction of the
    /// descent, at prices where choices tie (0 and halves) as at any. (The slope and its
    /// increases are integers there: no sum is rounded.)
    #[test]
    fn crossing_matches_sorting_every_breakpoint(
        problem in testing::small_problem(),
        prices in tie_prices(),
    ) {
        let classes = classes(&problem);
        let (descent, price, ties) = descent_at(&classes, &problem.capacity, &prices);
        let flat = &descent.flat;
        let mu = &price[..problem.capacity.len()];
        let mut scratch = Scratch::default();
        for d in &descent.dirs {
            let mut dir = d.clone();
            dir.push(0.0);
            let slope = flat.slope(&dir, &ties);
            if slope >= 0.0 {
                continue;
            }
            let hi = reach(mu, d, &descent.cap);
            let swept = flat.crossing(&price, &dir, &ties, hi, -slope, &mut scratch);
            let sorted = crossing_by_sorting(flat, &price, &dir, &ties, hi, -slope);
            prop_assert_eq!(swept, sorted, "direction {:?}", d);
        }
    }
}

/// The classes of `vertex_by_hand` and `edges_by_hand` on two types: a forced class tied
/// on the plane mu_1 - mu_0 = -0.5 (1 unit of type 0 worth 3 or of type 1 worth 2.5), an
/// optional one on mu_0 = 2 (1 unit of type 0 worth 2, or idle), and with `twin` a second
/// forced class on the first plane (worth 3.1 or 2.6).
fn two_planes(twin: bool) -> Vec<Class> {
    let choice = |gpu: Option<usize>, units: u64, value: f64| Choice {
        gpu,
        units,
        value,
        slot: 0,
    };
    let class = |choices: Vec<Choice>, forced: bool, job: usize| Class {
        choices,
        forced,
        jobs: vec![job],
    };
    let mut classes = vec![
        class(
            vec![choice(Some(0), 1, 3.0), choice(Some(1), 1, 2.5)],
            true,
            0,
        ),
        class(
            vec![choice(Some(0), 1, 2.0), choice(None, 0, 0.0)],
            false,
            1,
        ),
    ];
    if twin {
        classes.push(class(
            vec![choice(Some(0), 1, 3.1), choice(Some(1), 1, 2.6)],
            true,
            2,
        ));
    }
    classes
}

/// The vertex by hand, two types. A forced class takes 1 unit of type 0 (value 3) or of
/// type 1 (value 2.5): the two tie on the plane mu_1 - mu_0 = -0.5. An optional class takes
/// 1 unit of type 0 (value 2) or idles: it ties on mu_0 = 2. A second forced class ties on
/// the same plane as the first (3.1 or 2.6), which is not independent of it. From (1.99,
/// 1.48), nearest to those two planes, the vertex is (2, 1.5).
#[test]
fn vertex_by_hand() {
    let flat = Flat::new(&two_planes(true), &[10, 10]);
    let v = flat.vertex(&[1.99, 1.48], &[100.0, 100.0]).unwrap();
    assert!(
        (v[0] - 2.0).abs() <= 1e-12 && (v[1] - 1.5).abs() <= 1e-12,
        "vertex {v:?}"
    );
    // Outside the box: no candidate.
    assert!(flat.vertex(&[1.99, 1.48], &[1.9, 100.0]).is_none());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    /// The weighted selection finds the same crossing as sorting and summing (integer
    /// weights and a half-integer need, so that no sum is rounded and none ties).
    #[test]
    fn first_crossing_matches_sorting(
        breaks in proptest::collection::vec((0u32..20, 0u32..5), 0..40),
        need in 0u32..60,
    ) {
        let need = f64::from(need) + 0.5;
        let mut breaks: Vec<(f64, f64)> =
            breaks.iter().map(|&(t, w)| (f64::from(t), f64::from(w))).collect();
        let mut sorted = breaks.clone();
        sorted.sort_by(|x, y| x.0.total_cmp(&y.0));
        let mut sum = 0.0;
        let expected = sorted.iter().find(|b| {
            sum += b.1;
            sum >= need
        });
        prop_assert_eq!(first_crossing(&mut breaks, need), expected.map(|b| b.0));
    }
}

/// The edges by hand, two types, at the vertex (2, 1.5) of `vertex_by_hand`'s classes:
/// along the plane mu_1 - mu_0 = -0.5, directions +-(1, 1) / sqrt 2; along mu_0 = 2,
/// +-(0, 1). Away from every plane, none.
#[test]
fn edges_by_hand() {
    let flat = Flat::new(&two_planes(false), &[10, 10]);
    let edges = flat.edges(&[2.0, 1.5]);
    let h = std::f64::consts::FRAC_1_SQRT_2;
    for want in [[h, h], [-h, -h], [0.0, 1.0], [0.0, -1.0]] {
        assert!(
            edges
                .iter()
                .any(|d| (d[0] - want[0]).abs() < 1e-12 && (d[1] - want[1]).abs() < 1e-12),
            "{want:?} not among {edges:?}"
        );
    }
    assert_eq!(edges.len(), 4, "{edges:?}");
    assert!(flat.edges(&[1.0, 3.0]).is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// The refinement from the descent's multipliers never raises L (to rounding), keeps
    /// mu >= 0, and still bounds the optimum (Lemma 1).
    #[test]
    fn refined_multipliers_are_no_worse_and_bound_the_optimum(
        problem in testing::small_problem(),
    ) {
        let classes = classes(&problem);
        let (mu, l) = multipliers(&classes, &problem.capacity);
        let (refined, lr) = refine_multipliers(&classes, &problem.capacity, &mu);
        prop_assert!(refined.iter().all(|&m| m >= 0.0), "mu {:?}", refined);
        prop_assert_eq!(Flat::new(&classes, &problem.capacity).lagrangian(&refined), lr);
        // To rounding: a line search that moves mu recomputes L there.
        prop_assert!(at_least(l, lr), "refined L {} above the descent's {}", lr, l);
        if let Some(opt) = optimum(&problem)? {
            prop_assert!(at_least(lr, opt), "L {} below the optimum {}", lr, opt);
        }
    }
}

/// On the shipped hard rounds whose descent stops above the LP's value, the refinement
/// from there reaches it (HiGHS, 1e-9 relative) and `proven_minimum` proves it.
#[cfg(feature = "highs")]
#[test]
fn refinement_reaches_the_lp_value_on_the_hard_rounds() {
    for name in ["round6-gavel-100x3-1000", "round62-gavel-100x3-1000"] {
        let path = format!("{}/instances/hard/{name}.json", env!("CARGO_MANIFEST_DIR"));
        let instance = crate::Instance::from_path(path).unwrap();
        let problem = crate::RoundProblem::new(&instance);
        let classes = classes(&problem);
        let lp = lp_value(&problem).unwrap();
        let (mu, l) = multipliers(&classes, &problem.capacity);
        assert!(
            l > lp + 1e-3,
            "{name}: the descent reached the LP ({l} against {lp})"
        );
        let (refined, lr) = refine_multipliers(&classes, &problem.capacity, &mu);
        assert!(
            (lr - lp).abs() <= 1e-9 * lp,
            "{name}: refined {lr}, LP {lp}"
        );
        let slack = 1e-10 * lr.abs().max(1.0);
        assert!(
            proven_minimum(&classes, &problem.capacity, &refined, slack),
            "{name}: the refined mu is not proven"
        );
    }
}

/// A round of 100,000 classes (one job each, one unit of one type worth 1 + i 10^-6, or idle)
/// on 10,000 units: the plain sum's rounding bound, 10^5 2^-52 of the magnitude, is above the
/// DP's tolerance, so the descent's multipliers are trusted through the compensated sum, and
/// L is the optimum (the 10,000 largest values) up to rounding, far below L(0).
#[test]
fn many_classes_keep_their_multipliers() {
    let n = 100_000usize;
    let classes: Vec<Class> = (0..n)
        .map(|i| Class {
            choices: vec![
                Choice {
                    gpu: Some(0),
                    units: 1,
                    value: 1.0 + i as f64 * 1e-6,
                    slot: 0,
                },
                Choice {
                    gpu: None,
                    units: 0,
                    value: 0.0,
                    slot: 0,
                },
            ],
            forced: false,
            jobs: vec![i],
        })
        .collect();
    let capacity = [n as u64 / 10];
    let flat = Flat::new(&classes, &capacity);
    let terms = (1 + n + 3) as f64;
    let (mu, l) = multipliers(&classes, &capacity);
    assert!(
        ROUNDING_PER_TERM * terms * flat.magnitude(&mu) > TOLERANCE * l.abs(),
        "the plain bound passes: the test does not reach the compensated sum"
    );
    assert!(mu[0] > 0.0, "multipliers {mu:?}, L {l}");
    let optimum: f64 = (n - n / 10..n).map(|i| 1.0 + i as f64 * 1e-6).sum();
    assert!(
        (l - optimum).abs() <= 1e-9 * optimum,
        "L {l}, optimum {optimum}"
    );
    let zero = flat.lagrangian(&[0.0]);
    assert!(l < 0.2 * zero, "L {l}, L(0) {zero}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// The compensated sum agrees with the plain one within the plain one's rounding bound.
    #[test]
    fn compensated_sum_agrees_with_the_plain_one(
        problem in testing::small_problem(),
        prices in proptest::collection::vec(0.0f64..3.0, 4),
    ) {
        let classes = classes(&problem);
        let flat = Flat::new(&classes, &problem.capacity);
        let mu = &prices[..problem.capacity.len()];
        let plain = flat.lagrangian(mu);
        let precise = flat.lagrangian_compensated(mu);
        let terms = (flat.k + flat.count.len() + 3) as f64;
        let bound = 2.0 * ROUNDING_PER_TERM * terms * flat.magnitude(mu);
        prop_assert!((plain - precise).abs() <= bound, "{} against {}", plain, precise);
    }
}
