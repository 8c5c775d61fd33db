//! Step 1 of docs/solver.md: jobs with identical choice lists form one class with a count.
//!
//! Why this file exists: every later phase works per class, not per job, which is what makes a
//! round of 10,000 Gavel jobs about 110 classes and 1,000 copies of one job a single class (the
//! class DP then counts how many of a class's jobs take each choice instead of deciding them one
//! by one). It also holds the choice type and the reduced cost that all phases share.
//!
//! Complexity: O(sum_j |Q_j|) time (one hash of each job's choice list) and memory.
//! Reference: the aggregation of identical items, as in the core algorithms for the
//! multiple-choice knapsack problem (D. Pisinger, "A minimal algorithm for the multiple-choice
//! knapsack problem", EJOR 83, 1995; Kellerer, Pferschy and Pisinger, *Knapsack Problems*,
//! Springer 2004, chapter 11).

use std::hash::Hasher;

use rustc_hash::{FxHashMap, FxHasher};

use crate::formulation::RoundProblem;
use crate::solution::Assignment;

/// One choice of a job: an admissible option or idle.
#[derive(Debug, Clone, Copy)]
pub(super) struct Choice {
    /// GPU type, `None` for idle.
    pub(super) gpu: Option<usize>,
    pub(super) units: u64,
    pub(super) value: f64,
    /// The option's slot (for the assignment).
    pub(super) slot: u32,
}

/// Jobs with identical choices.
pub(super) struct Class {
    pub(super) choices: Vec<Choice>,
    pub(super) forced: bool,
    pub(super) jobs: Vec<usize>,
}

/// Job j's choices: its admissible options in order, then idle if it may idle.
pub(super) fn choices_of(problem: &RoundProblem, j: usize) -> Vec<Choice> {
    choices(problem, j).collect()
}

/// [`choices_of`] as an iterator (the classes' keys are made from it without a list per job).
fn choices(problem: &RoundProblem, j: usize) -> impl Iterator<Item = Choice> + '_ {
    let job = &problem.jobs[j];
    let idle = job.may_idle().then_some(Choice {
        gpu: None,
        units: 0,
        value: 0.0,
        slot: 0,
    });
    job.options
        .iter()
        .map(|o| Choice {
            gpu: Some(o.gpu),
            units: o.units,
            value: o.value,
            slot: o.slot,
        })
        .chain(idle)
}

/// The classes of `problem`, in order of their first job; a class's jobs in instance order.
/// Two jobs share a class exactly when their choice lists agree in type, slot, units and value
/// bits (so forced and optional jobs never share one: idle is a choice of the latter only).
///
/// Each job's choice list is hashed as it is read from the problem and compared, on a hash
/// match, with the options of the class's first job (`same_choices`): nothing is allocated
/// per job but for a job that opens a class.
/// (A key built in a buffer for each job, hashed and compared as a slice of tuples, costs 11.6%
/// of the DP's in-process time on 1,000-job Gavel rounds.)
/// Classes whose lists hash alike are chained (`next`), so a collision costs a comparison,
/// never a wrong merge.
pub(super) fn classes(problem: &RoundProblem) -> Vec<Class> {
    classes_by(problem, list_hash)
}

/// Job j's choice list hashed: FxHash over whether it may idle and each option's value bits,
/// type, slot and units packed in two words (a collision only costs a comparison).
fn list_hash(problem: &RoundProblem, j: usize) -> u64 {
    let job = &problem.jobs[j];
    let mut hasher = FxHasher::default();
    hasher.write_u8(u8::from(job.may_idle()));
    for o in &job.options {
        hasher.write_u64(o.value.to_bits());
        hasher.write_u64((o.gpu as u64) << 40 ^ u64::from(o.slot) << 20 ^ o.units);
    }
    hasher.finish()
}

/// Whether jobs i and j have the same choice list: the same options in type, slot, units and
/// value bits, in order, and both may idle or neither.
fn same_choices(problem: &RoundProblem, i: usize, j: usize) -> bool {
    let (a, b) = (&problem.jobs[i], &problem.jobs[j]);
    a.may_idle() == b.may_idle()
        && a.options.len() == b.options.len()
        && a.options.iter().zip(&b.options).all(|(x, y)| {
            x.gpu == y.gpu
                && x.slot == y.slot
                && x.units == y.units
                && x.value.to_bits() == y.value.to_bits()
        })
}

/// [`classes`] with the hash of a job's choice list given (the tests make every list collide).
fn classes_by(problem: &RoundProblem, hash_of: impl Fn(&RoundProblem, usize) -> u64) -> Vec<Class> {
    // Hash -> the latest class with it; `next[c]`: the class before it with the same hash.
    let mut index: FxHashMap<u64, usize> = FxHashMap::default();
    let mut next: Vec<Option<usize>> = Vec::new();
    let mut out: Vec<Class> = Vec::new();
    for j in 0..problem.jobs.len() {
        let hash = hash_of(problem, j);
        let mut at = index.get(&hash).copied();
        // A class's first job stands for its list.
        while let Some(c) = at {
            if same_choices(problem, out[c].jobs[0], j) {
                break;
            }
            at = next[c];
        }
        match at {
            Some(c) => out[c].jobs.push(j),
            None => {
                next.push(index.insert(hash, out.len()));
                out.push(Class {
                    forced: !problem.jobs[j].may_idle(),
                    choices: choices_of(problem, j),
                    jobs: vec![j],
                });
            }
        }
    }
    out
}

/// A choice list's key, for the tests.
#[cfg(test)]
fn key_of(choices: &[Choice]) -> Vec<(usize, u32, u64, u64)> {
    choices.iter().map(key_entry).collect()
}

/// One choice's part of a choice list's identity: idle as type `usize::MAX`, values by their
/// bits (two values that differ in the last bit are different choices; merging them would
/// change the optimum).
#[cfg(test)]
fn key_entry(c: &Choice) -> (usize, u32, u64, u64) {
    (
        c.gpu.map_or(usize::MAX, |g| g),
        c.slot,
        c.units,
        c.value.to_bits(),
    )
}

/// The reduced cost rc(q) = v_q - mu_(k(q)) u_q; idle's is 0.
pub(super) fn rc(c: &Choice, mu: &[f64]) -> f64 {
    match c.gpu {
        Some(k) => c.value - mu[k] * c.units as f64,
        None => 0.0,
    }
}

/// The best reduced cost of `choices` (-inf for none).
pub(super) fn best_rc(choices: &[Choice], mu: &[f64]) -> f64 {
    choices
        .iter()
        .map(|c| rc(c, mu))
        .fold(f64::NEG_INFINITY, f64::max)
}

/// The value and the units per type of `assignment` (one entry per job of the problem the
/// classes were made from), read from the classes' choices instead of the jobs' options: at the
/// end of a solve the options of 10,000 jobs are cold (a cache miss or more a job: finding
/// each job's option again took 1.1 to 5.8 ms of a fresh 10,000-job solve of 7 to 80 ms), the
/// classes' few choices are not. A job's choices are its options in order (then idle), so the
/// first choice with the assignment's type and slot is the option
/// [`Solution::from_assignments`] finds, with the same value to the bit; the values are summed
/// in job order, as it sums them, so the objective is the same number
/// (`totals_are_those_of_the_options`). O(sum_j |Q_j|), over the classes' lists.
///
/// [`Solution::from_assignments`]: crate::Solution::from_assignments
pub(super) fn totals(
    classes: &[Class],
    types: usize,
    assignment: &[Assignment],
) -> (f64, Vec<u64>) {
    let mut class_of = vec![0usize; assignment.len()];
    for (c, cl) in classes.iter().enumerate() {
        for &j in &cl.jobs {
            class_of[j] = c;
        }
    }
    let mut units = vec![0u64; types];
    let mut objective = 0.0;
    for (a, &c) in assignment.iter().zip(&class_of) {
        if let Some((gpu, slot)) = *a
            && let Some(q) = classes[c]
                .choices
                .iter()
                .find(|q| q.gpu == Some(gpu) && q.slot == slot)
        {
            units[gpu] += q.units;
            objective += q.value;
        }
    }
    (objective, units)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::solvers::dp::testing;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Every job is in exactly one class, and two jobs share a class exactly when their
        /// choice lists are identical; a class's flag and choices are its jobs'.
        #[test]
        fn classes_group_exactly_identical_choices(
            problem in testing::small_problem()
        ) {
            let classes = classes(&problem);
            let mut class_of = vec![usize::MAX; problem.jobs.len()];
            for (c, cl) in classes.iter().enumerate() {
                prop_assert!(!cl.jobs.is_empty());
                for &j in &cl.jobs {
                    prop_assert_eq!(class_of[j], usize::MAX, "job {} in two classes", j);
                    class_of[j] = c;
                    prop_assert_eq!(key_of(&choices_of(&problem, j)), key_of(&cl.choices));
                    prop_assert_eq!(cl.forced, !problem.jobs[j].may_idle());
                }
            }
            // Lists whose hashes collide are told apart by comparison: with every hash equal
            // the classes are the same.
            let collided = classes_by(&problem, |_, _| 7);
            prop_assert_eq!(collided.len(), classes.len());
            for (x, y) in collided.iter().zip(&classes) {
                prop_assert_eq!(&x.jobs, &y.jobs);
                prop_assert_eq!(key_of(&x.choices), key_of(&y.choices));
            }
            for a in 0..problem.jobs.len() {
                prop_assert!(class_of[a] != usize::MAX, "job {} in no class", a);
                for b in a + 1..problem.jobs.len() {
                    let same = key_of(&choices_of(&problem, a)) == key_of(&choices_of(&problem, b));
                    prop_assert_eq!(same, class_of[a] == class_of[b]);
                }
            }
        }

        /// [`totals`] is what [`Solution::from_assignments`] computes from the jobs' options,
        /// the objective to the bit, for any assignment of admissible options or idle.
        #[test]
        fn totals_are_those_of_the_options(
            problem in testing::small_problem(),
            picks in proptest::collection::vec(0usize..64, 64)
        ) {
            let classes = classes(&problem);
            let assignment: Vec<Assignment> = problem
                .jobs
                .iter()
                .enumerate()
                .map(|(j, job)| {
                    let pick = picks[j % picks.len()] % (job.options.len() + 1);
                    job.options.get(pick).map(|o| (o.gpu, o.slot))
                })
                .collect();
            let (objective, units) = totals(&classes, problem.types(), &assignment);
            let solution = crate::Solution::from_assignments(
                "test",
                crate::solution::Status::Optimal,
                &problem,
                assignment,
            );
            prop_assert_eq!(solution.objective.map(f64::to_bits), Some(objective.to_bits()));
            prop_assert_eq!(solution.units_used, units);
        }
    }
}
