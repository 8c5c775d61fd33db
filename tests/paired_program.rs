//! The paired program (`stsfair::policy::paired`) against brute force over every assignment of
//! counts, hand-worked rounds, and HiGHS where the `highs` feature is on.

use proptest::prelude::*;
use stsfair::policy::paired::{
    PairedAnswer, PairedClass, PairedColumn, PairedError, PairedProgram,
};

/// The best objective over every vector of column counts within the rows, by depth-first
/// search; `None` when no vector meets the rows of the classes whose jobs must all run.
fn brute_force(p: &PairedProgram) -> Option<f64> {
    fn search(p: &PairedProgram, i: usize, jobs: &mut [u32], gpus: &mut [u32]) -> Option<f64> {
        if i == p.columns.len() {
            let full = p
                .classes
                .iter()
                .zip(jobs.iter())
                .all(|(c, &left)| !c.all_run || left == 0);
            return full.then_some(0.0);
        }
        let col = p.columns[i];
        let mut best = search(p, i + 1, jobs, gpus);
        let mut n = 0.0;
        loop {
            let need_second = col.second.map(|d| (d, 1 + u32::from(d == col.first)));
            let fits = gpus[col.gpu_type] >= 1
                && match need_second {
                    Some((d, 2)) => jobs[d] >= 2,
                    Some((d, _)) => jobs[col.first] >= 1 && jobs[d] >= 1,
                    None => jobs[col.first] >= 1,
                };
            if !fits {
                break;
            }
            gpus[col.gpu_type] -= 1;
            match need_second {
                Some((d, 2)) => jobs[d] -= 2,
                Some((d, _)) => {
                    jobs[col.first] -= 1;
                    jobs[d] -= 1;
                }
                None => jobs[col.first] -= 1,
            }
            n += 1.0;
            if let Some(rest) = search(p, i + 1, jobs, gpus) {
                let v = rest + n * col.value;
                best = Some(best.map_or(v, |b: f64| b.max(v)));
            }
        }
        // Undo the n placements of this column.
        let n = n as u32;
        gpus[col.gpu_type] += n;
        match col.second {
            Some(d) if d == col.first => jobs[d] += 2 * n,
            Some(d) => {
                jobs[col.first] += n;
                jobs[d] += n;
            }
            None => jobs[col.first] += n,
        }
        best
    }
    let mut jobs: Vec<u32> = p.classes.iter().map(|c| c.size).collect();
    let mut gpus = p.gpus.clone();
    search(p, 0, &mut jobs, &mut gpus)
}

/// Random programs small enough for brute force, with values spread over `spread` decades.
fn small_program(spread: f64) -> impl Strategy<Value = PairedProgram> {
    (1usize..=3, 1usize..=2).prop_flat_map(move |(nc, nk)| {
        (
            prop::collection::vec((0u32..=3, prop::bool::weighted(0.3)), nc),
            prop::collection::vec(0u32..=3, nk),
            prop::collection::vec(
                (
                    0..nk,
                    0..nc,
                    prop::option::of(0..nc),
                    0.0f64..=1.0,
                    prop::bool::weighted(0.8),
                ),
                0..=10,
            ),
        )
            .prop_map(move |(classes, gpus, cols)| PairedProgram {
                classes: classes
                    .into_iter()
                    .map(|(size, all_run)| PairedClass { size, all_run })
                    .collect(),
                gpus,
                columns: cols
                    .into_iter()
                    .filter(|c| c.4)
                    .map(|(k, c, d, u, _)| PairedColumn {
                        gpu_type: k,
                        first: c,
                        second: d,
                        value: 10f64.powf(spread * (u - 0.5)),
                    })
                    .collect(),
            })
    })
}

/// The solver's optimum is brute force's within 1e-9 of the larger of the optimum and the
/// largest value of a column that can take a GPU (the solver's tolerances are relative to that
/// value: a column worth less than 1e-11 of it counts as worth nothing).
fn agrees(p: &PairedProgram) -> Result<(), TestCaseError> {
    let answer = p.solve().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let brute = brute_force(p);
    let largest = p
        .columns
        .iter()
        .filter(|c| {
            let uses = |d: usize| 1 + u32::from(c.second == Some(d) && c.first == d);
            p.gpus[c.gpu_type] > 0
                && p.classes[c.first].size >= uses(c.first)
                && c.second.is_none_or(|d| p.classes[d].size >= uses(d))
        })
        .map(|c| c.value)
        .fold(0.0, f64::max);
    match (&answer, brute) {
        (None, None) => {}
        (Some(PairedAnswer { value, counts }), Some(b)) => {
            let tol = 1e-9 * b.abs().max(largest).max(1e-300);
            prop_assert!(
                (value - b).abs() <= tol,
                "solver {value} brute force {b} counts {counts:?} program {p:?}"
            );
        }
        (a, b) => prop_assert!(false, "solver {a:?} brute force {b:?} program {p:?}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Values within one decade: the optimum equals brute force, or both find no solution.
    #[test]
    fn paired_program_matches_brute_force(p in small_program(1.0)) {
        agrees(&p)?;
    }

    /// Values spread over six decades.
    #[test]
    fn paired_program_matches_brute_force_spread_values(p in small_program(6.0)) {
        agrees(&p)?;
    }

    /// Values spread over 200 decades, from 1e-100 to 1e100.
    #[test]
    fn paired_program_matches_brute_force_extreme_values(p in small_program(200.0)) {
        agrees(&p)?;
    }
}

fn class(size: u32, all_run: bool) -> PairedClass {
    PairedClass { size, all_run }
}

fn col(gpu_type: usize, first: usize, second: Option<usize>, value: f64) -> PairedColumn {
    PairedColumn {
        gpu_type,
        first,
        second,
        value,
    }
}

/// Two jobs of one class and one GPU: alone each is worth 1.0, together 0.7 + 0.7 = 1.4, so
/// they share it.
#[test]
fn two_jobs_share_one_gpu() {
    let p = PairedProgram {
        classes: vec![class(2, false)],
        gpus: vec![1],
        columns: vec![col(0, 0, None, 1.0), col(0, 0, Some(0), 1.4)],
    };
    let a = p.solve().unwrap().unwrap();
    assert_eq!(a.counts, vec![0, 1]);
    assert!((a.value - 1.4).abs() < 1e-12);
}

/// Two GPUs of two types and classes a (1 job) and b (2 jobs, all must run). b's jobs only run
/// paired with each other on type 0 or alone on type 1: the best is b+b on type 0 (1.2) and a
/// alone on type 1 (0.9), 2.1, above a alone on type 0 (1.0) with b's pair impossible.
#[test]
fn a_forced_class_takes_the_pair() {
    let p = PairedProgram {
        classes: vec![class(1, false), class(2, true)],
        gpus: vec![1, 1],
        columns: vec![
            col(0, 0, None, 1.0),
            col(1, 0, None, 0.9),
            col(0, 1, Some(1), 1.2),
            col(1, 1, None, 0.8),
        ],
    };
    let a = p.solve().unwrap().unwrap();
    assert_eq!(a.counts, vec![0, 1, 1, 0]);
    assert!((a.value - 2.1).abs() < 1e-12);
}

/// A forced class with no column, or more forced jobs than places: no plan.
#[test]
fn forced_jobs_that_cannot_run_make_no_plan() {
    let none_fits = PairedProgram {
        classes: vec![class(1, true)],
        gpus: vec![1],
        columns: vec![],
    };
    assert_eq!(none_fits.solve().unwrap(), None);
    let too_many = PairedProgram {
        classes: vec![class(3, true)],
        gpus: vec![1],
        columns: vec![col(0, 0, None, 1.0), col(0, 0, Some(0), 1.5)],
    };
    assert_eq!(too_many.solve().unwrap(), None);
}

/// A round of `stsfair simulate --rate 8 --seed 5` (50 classes, 26 of them forced, 3 GPU types
/// of 36, 1,041 columns, many of equal value) whose LP optimum, 50.93572, lies above the
/// integer one: branching on the most fractional column does not finish it in a million nodes,
/// the pseudocosts do in 419. The optimum is HiGHS's (1.16, `mip_rel_gap` 0).
#[test]
fn a_symmetric_round_is_solved_within_the_node_limit() {
    let text = include_str!("data/paired_hard.txt");
    let mut lines = text.lines();
    let classes = lines
        .next()
        .unwrap()
        .split(' ')
        .map(|c| class(c.trim_end_matches('*').parse().unwrap(), c.ends_with('*')))
        .collect();
    let gpus = lines
        .next()
        .unwrap()
        .split(' ')
        .map(|g| g.parse().unwrap())
        .collect();
    let columns = lines
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            let second = (f[2] != "-").then(|| f[2].parse().unwrap());
            col(
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                second,
                f[3].parse().unwrap(),
            )
        })
        .collect();
    let p = PairedProgram {
        classes,
        gpus,
        columns,
    };
    let a = p.solve().unwrap().unwrap();
    let highs = 50.93312139879471;
    assert!((a.value - highs).abs() <= 1e-9 * highs, "{}", a.value);
}

/// The empty program is solved with value 0.
#[test]
fn empty_program_has_value_zero() {
    let a = PairedProgram::default().solve().unwrap().unwrap();
    assert_eq!(a.counts, Vec::<u32>::new());
    assert_eq!(a.value, 0.0);
}

/// Bad columns are refused by name.
#[test]
fn bad_columns_are_refused_by_name() {
    let p = PairedProgram {
        classes: vec![class(1, false)],
        gpus: vec![1],
        columns: vec![col(0, 0, Some(3), 1.0)],
    };
    assert_eq!(
        p.solve().unwrap_err().to_string(),
        "columns[0] names class 3, but the program has 1"
    );
    let p = PairedProgram {
        classes: vec![class(1, false)],
        gpus: vec![1],
        columns: vec![col(0, 0, None, f64::NAN)],
    };
    assert!(matches!(
        p.solve(),
        Err(PairedError::Value { column: 0, .. })
    ));
}

/// Against HiGHS (branch and bound to gap 0, presolve off) on programs too large for brute
/// force: up to 30 classes on 3 GPU types of up to 40 GPUs, as in a simulated round.
#[cfg(feature = "highs")]
mod highs_oracle {
    use super::*;
    use highs::{HighsModelStatus, Model, RowProblem, Sense};

    /// The optimum HiGHS finds, or `None` when it proves the program infeasible.
    fn highs_optimum(p: &PairedProgram) -> Option<f64> {
        let mut problem = RowProblem::new();
        let cols: Vec<highs::Col> = p
            .columns
            .iter()
            .map(|c| problem.add_integer_column(c.value, 0.0..))
            .collect();
        let mut class_rows = vec![Vec::new(); p.classes.len()];
        let mut type_rows = vec![Vec::new(); p.gpus.len()];
        for (c, &col) in p.columns.iter().zip(&cols) {
            match c.second {
                Some(d) if d == c.first => class_rows[d].push((col, 2.0)),
                Some(d) => {
                    class_rows[c.first].push((col, 1.0));
                    class_rows[d].push((col, 1.0));
                }
                None => class_rows[c.first].push((col, 1.0)),
            }
            type_rows[c.gpu_type].push((col, 1.0));
        }
        for (class, row) in p.classes.iter().zip(class_rows) {
            let n = f64::from(class.size);
            if class.all_run && n > 0.0 && row.is_empty() {
                return None;
            }
            problem.add_row(if class.all_run { n } else { 0.0 }..=n, row);
        }
        for (&count, row) in p.gpus.iter().zip(type_rows) {
            problem.add_row(..=f64::from(count), row);
        }
        let mut model = Model::new(problem);
        model.set_sense(Sense::Maximise);
        model.set_option("threads", 1);
        model.set_option("presolve", "off");
        model.set_option("output_flag", false);
        model.set_option("mip_rel_gap", 0.0);
        let solved = model.solve();
        match solved.status() {
            HighsModelStatus::Optimal => Some(solved.objective_value()),
            HighsModelStatus::Infeasible => None,
            status => panic!("HiGHS: {status:?}"),
        }
    }

    /// Rounds like a simulated one: every class alone on most types, pairs on the first
    /// `paired` types with about half of the class pairs, values of 0.1-2, some forced classes.
    fn round_program() -> impl Strategy<Value = PairedProgram> {
        (5usize..=30, 1usize..=3).prop_flat_map(|(nc, nk)| {
            (
                prop::collection::vec((0u32..=8, prop::bool::weighted(0.15)), nc),
                prop::collection::vec(0u32..=40, nk),
                0..=nk,
                prop::collection::vec((0.1f64..=2.0, prop::bool::weighted(0.8)), nc * nk),
                prop::collection::vec(
                    (0.1f64..=2.0, prop::bool::weighted(0.5)),
                    nk * nc * (nc + 1) / 2,
                ),
            )
                .prop_map(move |(classes, gpus, paired, solo, pairs)| {
                    let mut columns = Vec::new();
                    for k in 0..nk {
                        for c in 0..nc {
                            let (value, on) = solo[k * nc + c];
                            if on {
                                columns.push(col(k, c, None, value));
                            }
                        }
                    }
                    let mut i = 0;
                    for k in 0..nk {
                        for c in 0..nc {
                            for d in c..nc {
                                let (value, on) = pairs[i];
                                i += 1;
                                if on && k < paired {
                                    columns.push(col(k, c, Some(d), value));
                                }
                            }
                        }
                    }
                    PairedProgram {
                        classes: classes
                            .into_iter()
                            .map(|(size, all_run)| class(size, all_run))
                            .collect(),
                        gpus,
                        columns,
                    }
                })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The optimum equals HiGHS's within 1e-9 relative, or both find no solution.
        #[test]
        fn paired_program_matches_highs(p in round_program()) {
            let ours = p.solve().map_err(|e| TestCaseError::fail(e.to_string()))?;
            match (ours, highs_optimum(&p)) {
                (None, None) => {}
                (Some(a), Some(h)) => prop_assert!(
                    (a.value - h).abs() <= 1e-9 * h.abs().max(1.0),
                    "ours {} HiGHS {h}", a.value
                ),
                (a, h) => prop_assert!(false, "ours {a:?} HiGHS {h:?}"),
            }
        }
    }
}
