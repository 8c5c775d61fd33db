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

use rustc_hash::FxHashMap;

use crate::formulation::RoundProblem;

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
/// Each job's key is made in one buffer and looked up as a slice; a job's choice list and key
/// are allocated only when it opens a class (on a 10,000-job round the lists and keys of every
/// job were 17% of the DP's instructions, for about 130 classes).
pub(super) fn classes(problem: &RoundProblem) -> Vec<Class> {
    let mut index: FxHashMap<Vec<(usize, u32, u64, u64)>, usize> = FxHashMap::default();
    let mut out: Vec<Class> = Vec::new();
    let mut key: Vec<(usize, u32, u64, u64)> = Vec::new();
    for j in 0..problem.jobs.len() {
        key.clear();
        key.extend(choices(problem, j).map(|c| key_entry(&c)));
        match index.get(key.as_slice()) {
            Some(&c) => out[c].jobs.push(j),
            None => {
                index.insert(key.clone(), out.len());
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
            for a in 0..problem.jobs.len() {
                prop_assert!(class_of[a] != usize::MAX, "job {} in no class", a);
                for b in a + 1..problem.jobs.len() {
                    let same = key_of(&choices_of(&problem, a)) == key_of(&choices_of(&problem, b));
                    prop_assert_eq!(same, class_of[a] == class_of[b]);
                }
            }
        }
    }
}
