//! Paired rounds: the policy's round with pairs of jobs as items, solved exactly.
//!
//! The round problem of the crate gives each job one value per slot: a half GPU is priced at
//! the ratio of the partner the pairing step matched ([`StsPolicy`](super::StsPolicy)), but whether that
//! partner takes its own half beside it is the solver's choice for the partner, and the
//! placement then seats the half slots beside whoever is left. Measured on the policy's own rounds at
//! 5.6 jobs/h (docs/simulation.md, "Pairs as items"), what it realizes is 97.1% (seed 10) and 98.1%
//! (seed 0) of the best sum of normalized throughputs a round could reach with the measured
//! pairs, and 96.3% in the rounds with 120 or more active jobs. A paired round removes that gap:
//! a GPU shared by two jobs is one choice, worth both jobs' measured throughputs beside each
//! other, so the plan is what runs.
//!
//! **The problem.** Each single-GPU job j (job type a_j, weight w_j) is idle, alone on a whole GPU
//! of type k (throughput `solo_k(a_j)`), or shares one GPU of a type k that allows pairs with one
//! other job i (throughputs `pair_k(a_j | a_i)` and `pair_k(a_i | a_j)`, the measured pair). The
//! value is the round problem's (docs/model.md section 4): sum of `w_j * throughput / best_j`, best_j
//! the job's largest solo throughput on the cluster's types. Each type k has `C_k` GPUs. A job
//! with a floor `f_j > 0` (a forced job: `f_j = m_j * F_j`, its least admissible throughput) must
//! run at `min(f_j, best_j)` or more: its admissible options are those of sigma >= m_j or, when
//! none reaches m_j, those of the largest sigma, which is its best whole GPU.
//!
//! **Classes.** Jobs of one job type and weight without a floor are interchangeable, and so are
//! those with floors that leave the same options admissible (the same number of the type's
//! possible speeds this round below the floor). For classes c, d and types k the integer
//! program is
//!
//! ```text
//! maximize   sum v(c,k) x[c,k] + sum (v(c|d,k) + v(d|c,k)) y[c,d,k]
//! subject to sum_k x[c,k] + sum_{d,k} m(c;c,d) y[c,d,k] <= n_c     (= n_c for a class with floors)
//!            sum_c x[c,k] + sum_{c<=d} y[c,d,k] <= C_k
//!            x, y >= 0 integer
//! ```
//!
//! with `m(c;c,d)` = 2 for a pair of one class and 1 otherwise, and only the columns whose
//! throughputs meet the classes' floors. With C classes (at most the job types plus the forced
//! jobs) and K types, K C + P C (C + 1) / 2 columns, P the types that allow pairs, and C + K
//! rows. It contains a maximum-weight matching with budgets, so it is solved by branch and
//! bound: [`PairedProgram`], pure Rust, in every build. The answer is checked
//! against brute force over every assignment of the jobs, and against HiGHS on larger rounds
//! where the `highs` feature is on, in the tests.
//!
//! **Which job of a class takes which place.** A class's seats, whole GPUs and halves of shared
//! ones alike, go to its jobs fastest first (by the class's own throughput in them), in the order
//! the caller gives the jobs (the policy: least attained service first).

use std::collections::BTreeMap;

use super::PolicyError;
use super::data::Throughputs;
use super::paired::{PairedClass, PairedColumn, PairedProgram};

/// One single-GPU job of a paired round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedJob {
    /// The caller's id of the job.
    pub id: u64,
    /// Its job type in the [`Throughputs`].
    pub job_type: usize,
    /// Its weight w_j (> 0).
    pub weight: f64,
    /// The least throughput (steps/s) it must get, 0 for a job that may idle.
    pub floor: f64,
}

/// One GPU of a paired round's plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedGpu {
    /// Cluster type index.
    pub gpu_type: usize,
    /// The job alone on it, or the two jobs that share it: (job id, steps/s).
    pub jobs: Vec<(u64, f64)>,
}

/// The plan of a paired round.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedPlan {
    /// The GPUs used.
    pub gpus: Vec<PairedGpu>,
    /// Sum of `w_j * throughput / best_j` over the jobs that run.
    pub value: f64,
}

/// A class of interchangeable jobs: (job type, weight's bits, for jobs with a floor the number
/// of the type's possible speeds below it).
type ClassKey = (usize, u64, Option<usize>);

/// The best value of the paired round of `jobs` (in the order their places are handed out,
/// within each class) on a cluster of `gpus[k]` GPUs of type k, where `pairs_on[k]` says whether
/// GPUs of type k may be shared by two jobs. `Ok(None)`: the jobs with floors cannot all run at
/// them. Every job must be a single-GPU job; a job that runs on no type is left idle (it has no
/// column) and, with a floor, makes the round infeasible.
///
/// # Errors
///
/// [`PolicyError::Paired`] when the program's solver fails (it does not on well-formed input).
pub fn solve<T: Throughputs + ?Sized>(
    data: &T,
    gpus: &[u32],
    jobs: &[PairedJob],
    pairs_on: &[bool],
) -> Result<Option<PairedPlan>, PolicyError> {
    solve_with(data, gpus, jobs, pairs_on, &mut PairedCache::default())
}

/// The last program solved and its answer. Successive rounds often pose the same program (the
/// same classes of the same sizes and floors: no arrival, no completion, no forced job changed):
/// then its answer is the last one, and the round costs no solve.
#[derive(Debug, Default, Clone)]
pub struct PairedCache {
    last: Option<(Signature, Option<Vec<u64>>)>,
}

/// What determines the program for given data: the classes with their sizes, the GPUs of each
/// type, and the types that allow pairs. A class's key holds, for jobs with floors, how many of
/// the type's possible speeds lie below them, which is all the floors decide (which columns they
/// admit); the possible speeds are those beside the job types present, which the keys list.
type Signature = (Vec<(ClassKey, usize)>, Vec<u32>, Vec<bool>);

/// The round's classes of interchangeable jobs, with each class's best solo throughput and least
/// throughput.
struct Classes {
    keys: Vec<ClassKey>,
    /// The jobs of each class, in the caller's order.
    members: Vec<Vec<u64>>,
    best: Vec<f64>,
    need: Vec<f64>,
}

impl Classes {
    /// The value of a job of class `c` at `throughput`: `w * throughput / best`.
    fn value(&self, c: usize, throughput: f64) -> f64 {
        f64::from_bits(self.keys[c].1) * throughput / self.best[c]
    }
}

/// A job type's best solo throughput on the types that have a GPU.
fn best_of<T: Throughputs + ?Sized>(data: &T, gpus: &[u32], a: usize) -> f64 {
    (0..gpus.len())
        .filter(|&k| gpus[k] >= 1)
        .map(|k| data.solo(k, a))
        .fold(0.0, f64::max)
}

/// Groups `jobs` into classes. A job's least throughput is its floor, or its best when nothing
/// reaches the floor; jobs with floors that leave the same speeds admissible (the same number of
/// the type's possible speeds below them) are interchangeable.
fn classes_of<T: Throughputs + ?Sized>(
    data: &T,
    gpus: &[u32],
    jobs: &[PairedJob],
    pairs_on: &[bool],
) -> Classes {
    // Every throughput a job of type a can get this round: alone on a type, or beside a job of a
    // type present.
    let present: std::collections::BTreeSet<usize> = jobs.iter().map(|j| j.job_type).collect();
    let speeds = |a: usize| {
        let mut v: Vec<f64> = Vec::new();
        for k in 0..gpus.len() {
            v.push(data.solo(k, a));
            if pairs_on.get(k).copied().unwrap_or(false) {
                v.extend(present.iter().map(|&b| data.pair(k, a, b).0));
            }
        }
        v.retain(|&x| x > 0.0);
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    let mut speeds_of: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    let mut classes: BTreeMap<ClassKey, Vec<u64>> = BTreeMap::new();
    let mut need_of: BTreeMap<ClassKey, f64> = BTreeMap::new();
    for job in jobs {
        let forced = (job.floor > 0.0).then(|| {
            let need = job.floor.min(best_of(data, gpus, job.job_type));
            let list = speeds_of
                .entry(job.job_type)
                .or_insert_with(|| speeds(job.job_type));
            (list.partition_point(|&x| x < need), need)
        });
        let key = (job.job_type, job.weight.to_bits(), forced.map(|f| f.0));
        need_of.insert(key, forced.map_or(0.0, |f| f.1));
        classes.entry(key).or_default().push(job.id);
    }
    let keys: Vec<ClassKey> = classes.keys().copied().collect();
    Classes {
        best: keys
            .iter()
            .map(|&(a, _, _)| best_of(data, gpus, a))
            .collect(),
        need: keys.iter().map(|k| need_of[k]).collect(),
        members: classes.into_values().collect(),
        keys,
    }
}

/// The program's columns: each class alone on each type, and each pair of classes on each type
/// that allows pairs, where the throughputs meet both classes' least throughputs.
fn columns_of<T: Throughputs + ?Sized>(
    data: &T,
    gpus: &[u32],
    classes: &Classes,
    pairs_on: &[bool],
) -> Vec<PairedColumn> {
    let n = classes.keys.len();
    let mut columns: Vec<PairedColumn> = Vec::new();
    for k in 0..gpus.len() {
        for c in 0..n {
            let a = classes.keys[c].0;
            let (best, need) = (classes.best[c], classes.need[c]);
            let solo = data.solo(k, a);
            if best > 0.0 && solo > 0.0 && solo >= need {
                columns.push(PairedColumn {
                    gpu_type: k,
                    first: c,
                    second: None,
                    value: classes.value(c, solo),
                });
            }
            if !pairs_on.get(k).copied().unwrap_or(false) || best <= 0.0 {
                continue;
            }
            for d in c..n {
                if d == c && classes.members[c].len() < 2 {
                    continue;
                }
                let (x, y) = data.pair(k, a, classes.keys[d].0);
                if classes.best[d] > 0.0 && x > 0.0 && y > 0.0 && x >= need && y >= classes.need[d]
                {
                    columns.push(PairedColumn {
                        gpu_type: k,
                        first: c,
                        second: Some(d),
                        value: classes.value(c, x) + classes.value(d, y),
                    });
                }
            }
        }
    }
    columns
}

/// [`solve`], reusing `cache`'s answer when the program is the last one's (the same data is the
/// caller's to keep).
///
/// # Errors
///
/// As [`solve`].
pub fn solve_with<T: Throughputs + ?Sized>(
    data: &T,
    gpus: &[u32],
    jobs: &[PairedJob],
    pairs_on: &[bool],
    cache: &mut PairedCache,
) -> Result<Option<PairedPlan>, PolicyError> {
    let classes = classes_of(data, gpus, jobs, pairs_on);
    let columns = columns_of(data, gpus, &classes, pairs_on);
    if columns.is_empty() {
        // Nothing can run: feasible unless a job has a floor.
        let plan = PairedPlan {
            gpus: Vec::new(),
            value: 0.0,
        };
        return Ok(classes.keys.iter().all(|k| k.2.is_none()).then_some(plan));
    }
    let signature: Signature = (
        classes
            .keys
            .iter()
            .zip(&classes.members)
            .map(|(k, m)| (*k, m.len()))
            .collect(),
        gpus.to_vec(),
        pairs_on.to_vec(),
    );
    let answer = match cache.last.take() {
        Some((last, answer)) if last == signature => answer,
        _ => solve_program(&classes, &columns, gpus)?,
    };
    cache.last = Some((signature, answer.clone()));
    Ok(answer.map(|counts| seat(data, &classes, &columns, &counts)))
}

/// Hands each class's seats (throughput, column, instance, side), fastest first, to its jobs in
/// the caller's order, and groups them by GPU.
fn seat<T: Throughputs + ?Sized>(
    data: &T,
    classes: &Classes,
    columns: &[PairedColumn],
    counts: &[u64],
) -> PairedPlan {
    let mut seats: Vec<Vec<(f64, usize, u64, usize)>> = vec![Vec::new(); classes.keys.len()];
    for (i, col) in columns.iter().enumerate() {
        let k = col.gpu_type;
        for n in 0..counts[i] {
            match col.second {
                None => seats[col.first].push((data.solo(k, classes.keys[col.first].0), i, n, 0)),
                Some(d) => {
                    let (x, y) = data.pair(k, classes.keys[col.first].0, classes.keys[d].0);
                    seats[col.first].push((x, i, n, 0));
                    seats[d].push((y, i, n, 1));
                }
            }
        }
    }
    let mut seated: BTreeMap<(usize, u64, usize), (u64, f64)> = BTreeMap::new();
    for (c, mut list) in seats.into_iter().enumerate() {
        list.sort_by(|p, q| {
            q.0.total_cmp(&p.0)
                .then((p.1, p.2, p.3).cmp(&(q.1, q.2, q.3)))
        });
        // The program keeps each class within its size, so every seat finds a job.
        for (&(thr, i, n, side), &j) in list.iter().zip(&classes.members[c]) {
            seated.insert((i, n, side), (j, thr));
        }
    }
    let mut on_gpu: BTreeMap<(usize, u64), Vec<(u64, f64)>> = BTreeMap::new();
    let mut total = 0.0;
    for ((i, n, side), (j, thr)) in seated {
        let col = &columns[i];
        let class = if side == 0 {
            col.first
        } else {
            col.second.unwrap_or(col.first)
        };
        total += classes.value(class, thr);
        on_gpu.entry((i, n)).or_default().push((j, thr));
    }
    let gpus = on_gpu
        .into_iter()
        .map(|((i, _), jobs)| PairedGpu {
            gpu_type: columns[i].gpu_type,
            jobs,
        })
        .collect();
    PairedPlan { gpus, value: total }
}

/// The integer program of the module docs, solved exactly by [`PairedProgram`]: the count of
/// each column, or `None` when it is infeasible.
fn solve_program(
    classes: &Classes,
    columns: &[PairedColumn],
    gpus: &[u32],
) -> Result<Option<Vec<u64>>, PolicyError> {
    let program = PairedProgram {
        classes: classes
            .keys
            .iter()
            .zip(&classes.members)
            .map(|(key, members)| PairedClass {
                size: u32::try_from(members.len()).unwrap_or(u32::MAX),
                all_run: key.2.is_some(),
            })
            .collect(),
        gpus: gpus.to_vec(),
        columns: columns.to_vec(),
    };
    let answer = program.solve().map_err(PolicyError::Paired)?;
    Ok(answer.map(|a| a.counts.into_iter().map(u64::from).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::data::ThroughputMatrix;
    use proptest::prelude::*;

    /// A table of `solo[w][a]` and symmetric pairs `pair[w][a][b] = (a's, b's)`.
    fn table(solo: Vec<Vec<f64>>, pair: Vec<Vec<Vec<(f64, f64)>>>) -> ThroughputMatrix {
        let jobs = solo[0].len();
        ThroughputMatrix::new(vec![1; jobs], solo, pair).expect("a valid table")
    }

    fn cluster(counts: &[u32]) -> Vec<u32> {
        counts.to_vec()
    }

    /// Brute force over every assignment of a round's jobs: idle, alone on a GPU, or beside one
    /// other job on a type in `pairs_on`, keeping the counts and the floors. Exponential: for a
    /// handful of jobs.
    struct Brute<'a> {
        t: &'a ThroughputMatrix,
        c: &'a [u32],
        jobs: &'a [PairedJob],
        pairs_on: &'a [bool],
        best: Vec<f64>,
    }

    impl Brute<'_> {
        /// A job's throughput meets its floor (or its best, when the floor is above it).
        fn admits(&self, i: usize, thr: f64) -> bool {
            thr > 0.0 && thr >= self.jobs[i].floor.min(self.best[i])
        }

        fn value(&self, i: usize, thr: f64) -> f64 {
            self.jobs[i].weight * thr / self.best[i]
        }

        /// The best value of jobs i.. with `done` placed and `left` GPUs of each type free;
        /// `None` when a job with a floor cannot run.
        fn search(&self, i: usize, done: &mut Vec<bool>, left: &mut Vec<u32>) -> Option<f64> {
            if i == self.jobs.len() {
                return Some(0.0);
            }
            if done[i] {
                return self.search(i + 1, done, left);
            }
            let mut best: Option<f64> = None;
            let mut keep = |x: Option<f64>| {
                if let Some(x) = x {
                    best = Some(best.map_or(x, |b: f64| b.max(x)));
                }
            };
            // Idle, unless it has a floor.
            if self.jobs[i].floor <= 0.0 {
                done[i] = true;
                keep(self.search(i + 1, done, left));
                done[i] = false;
            }
            for k in 0..self.c.len() {
                if left[k] == 0 {
                    continue;
                }
                left[k] -= 1;
                done[i] = true;
                let solo = self.t.solo(k, self.jobs[i].job_type);
                if self.admits(i, solo) {
                    keep(
                        self.search(i + 1, done, left)
                            .map(|r| r + self.value(i, solo)),
                    );
                }
                if self.pairs_on[k] {
                    for j in i + 1..self.jobs.len() {
                        if done[j] {
                            continue;
                        }
                        let (x, y) = self.t.pair(k, self.jobs[i].job_type, self.jobs[j].job_type);
                        if self.admits(i, x) && self.admits(j, y) {
                            done[j] = true;
                            keep(
                                self.search(i + 1, done, left)
                                    .map(|r| r + self.value(i, x) + self.value(j, y)),
                            );
                            done[j] = false;
                        }
                    }
                }
                done[i] = false;
                left[k] += 1;
            }
            best
        }
    }

    /// The best value of the round by brute force; `None` when no assignment keeps the floors.
    fn brute_force(
        t: &ThroughputMatrix,
        c: &[u32],
        jobs: &[PairedJob],
        pairs_on: &[bool],
    ) -> Option<f64> {
        let best = jobs
            .iter()
            .map(|j| {
                (0..c.len())
                    .filter(|&k| c[k] >= 1)
                    .map(|k| t.solo(k, j.job_type))
                    .fold(0.0, f64::max)
            })
            .collect();
        let brute = Brute {
            t,
            c,
            jobs,
            pairs_on,
            best,
        };
        let mut done = vec![false; jobs.len()];
        let mut left: Vec<u32> = c.to_vec();
        brute.search(0, &mut done, &mut left)
    }

    /// Checks a plan: counts, each job at most once, floors, throughputs from the table, value.
    fn check(
        t: &ThroughputMatrix,
        c: &[u32],
        jobs: &[PairedJob],
        pairs_on: &[bool],
        plan: &PairedPlan,
    ) {
        let mut used = vec![0u32; c.len()];
        let mut seen = std::collections::BTreeSet::new();
        let mut value = 0.0;
        let job = |id: u64| {
            jobs.iter()
                .find(|j| j.id == id)
                .expect("a job of the round")
        };
        for g in &plan.gpus {
            used[g.gpu_type] += 1;
            let w = g.gpu_type;
            match g.jobs[..] {
                [(a, thr)] => assert_eq!(thr, t.solo(w, job(a).job_type)),
                [(a, x), (b, y)] => {
                    assert!(pairs_on[g.gpu_type]);
                    assert_eq!((x, y), t.pair(w, job(a).job_type, job(b).job_type));
                }
                _ => panic!("a GPU holds one or two jobs: {g:?}"),
            }
            for &(id, thr) in &g.jobs {
                assert!(seen.insert(id), "job {id} placed twice");
                let j = job(id);
                let best = (0..c.len())
                    .filter(|&k| c[k] >= 1)
                    .map(|k| t.solo(k, j.job_type))
                    .fold(0.0, f64::max);
                assert!(thr >= j.floor.min(best) && thr > 0.0);
                value += j.weight * thr / best;
            }
        }
        for (k, &count) in c.iter().enumerate() {
            assert!(used[k] <= count);
        }
        for j in jobs.iter().filter(|j| j.floor > 0.0) {
            assert!(seen.contains(&j.id), "job {} has a floor and idles", j.id);
        }
        assert!((value - plan.value).abs() <= 1e-9 * value.abs().max(1.0));
    }

    /// Two V100-like GPUs of type 0 (pairs allowed) and one slow GPU of type 1, three jobs.
    /// Job 0 shares well with job 1 (0.9 + 0.8 of their solo speed); job 2 loses little on
    /// the slow GPU. Worked by hand: 0 and 1 share a fast GPU (1.7), 2 takes the other fast GPU
    /// alone (1), the slow GPU stays free: 2.7. Every job alone (two fast, one slow) gives at most
    /// 1 + 1 + 0.6 = 2.6.
    #[test]
    fn a_good_pair_shares_and_frees_a_gpu_for_a_third_job() {
        let solo = vec![vec![10.0, 10.0, 10.0], vec![2.0, 2.0, 6.0]];
        let mut pair = vec![vec![vec![(0.0, 0.0); 3]; 3]; 2];
        pair[0][0][1] = (9.0, 8.0);
        pair[0][1][0] = (8.0, 9.0);
        pair[0][0][2] = (5.0, 5.0);
        pair[0][2][0] = (5.0, 5.0);
        let t = table(solo, pair);
        let c = cluster(&[2, 1]);
        let jobs: Vec<PairedJob> = (0..3)
            .map(|a| PairedJob {
                id: 10 + a as u64,
                job_type: a,
                weight: 1.0,
                floor: 0.0,
            })
            .collect();
        let plan = solve(&t, &c, &jobs, &[true, false])
            .expect("solved")
            .expect("feasible");
        check(&t, &c, &jobs, &[true, false], &plan);
        assert!((plan.value - 2.7).abs() < 1e-9, "{plan:?}");
        assert_eq!(plan.gpus.len(), 2);
        assert!(
            plan.gpus
                .iter()
                .any(|g| g.jobs == vec![(10, 9.0), (11, 8.0)])
        );
        // With a floor of 7 steps/s on job 1, the pair (8 for it) still qualifies; with 9 it does
        // not, and the best is 1 + 1 (jobs 0 and 1 alone on the fast GPUs) + 0.6 (job 2 slow).
        let mut floored = jobs.clone();
        floored[1].floor = 7.0;
        let plan = solve(&t, &c, &floored, &[true, false])
            .expect("solved")
            .expect("feasible");
        check(&t, &c, &floored, &[true, false], &plan);
        assert!((plan.value - 2.7).abs() < 1e-9, "{plan:?}");
        floored[1].floor = 9.0;
        let plan = solve(&t, &c, &floored, &[true, false])
            .expect("solved")
            .expect("feasible");
        check(&t, &c, &floored, &[true, false], &plan);
        assert!((plan.value - 2.6).abs() < 1e-9, "{plan:?}");
        // Two jobs with floors above what the slow GPU gives cannot both run: infeasible.
        floored[0].floor = 9.5;
        floored[2].floor = 9.5;
        let c1 = cluster(&[1, 1]);
        assert_eq!(
            solve(&t, &c1, &floored, &[true, false]).expect("solved"),
            None
        );
    }

    /// Within a class the first jobs get the fastest seats.
    #[test]
    fn the_first_jobs_of_a_class_get_its_fastest_seats() {
        let solo = vec![vec![10.0], vec![4.0]];
        let pair = vec![vec![vec![(0.0, 0.0)]]; 2];
        let t = table(solo, pair);
        let c = cluster(&[1, 1]);
        let jobs: Vec<PairedJob> = [7, 3]
            .iter()
            .map(|&id| PairedJob {
                id,
                job_type: 0,
                weight: 1.0,
                floor: 0.0,
            })
            .collect();
        let plan = solve(&t, &c, &jobs, &[false, false])
            .expect("solved")
            .expect("feasible");
        check(&t, &c, &jobs, &[false, false], &plan);
        let fast = plan
            .gpus
            .iter()
            .find(|g| g.gpu_type == 0)
            .expect("the fast GPU is used");
        assert_eq!(fast.jobs, vec![(7, 10.0)]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// The program's optimum is brute force's, over random rounds of up to 6 jobs of 3 job
        /// types on 2 GPU types of 0-2 GPUs, with random pairs (some impossible), weights and
        /// floors, and its plan is valid.
        #[test]
        fn paired_rounds_match_brute_force(
            solo in prop::collection::vec(prop::collection::vec(0u32..=8, 3), 2),
            pair in prop::collection::vec(prop::collection::vec((0u32..=8, 0u32..=8), 9), 2),
            counts in prop::collection::vec(0u32..=2, 2),
            pairs_on in prop::collection::vec(any::<bool>(), 2),
            jobs in prop::collection::vec((0usize..3, 1u32..=3, 0u32..=10), 1..=6),
        ) {
            let solo: Vec<Vec<f64>> = solo.iter().map(|r| r.iter().map(|&x| f64::from(x)).collect()).collect();
            // Symmetric pairs, each side at most its solo speed.
            let mut p = vec![vec![vec![(0.0, 0.0); 3]; 3]; 2];
            for w in 0..2 {
                for a in 0..3 {
                    for b in a..3 {
                        let (x, y) = pair[w][a * 3 + b];
                        let x = f64::from(x).min(solo[w][a]);
                        let y = f64::from(y).min(solo[w][b]);
                        let y = if a == b { x } else { y };
                        p[w][a][b] = (x, y);
                        p[w][b][a] = (y, x);
                    }
                }
            }
            let t = table(solo, p);
            let c = cluster(&counts);
            let jobs: Vec<PairedJob> = jobs
                .iter()
                .enumerate()
                .map(|(i, &(a, w, f))| PairedJob {
                    id: i as u64,
                    job_type: a,
                    weight: f64::from(w),
                    // Floors of 0-10 steps/s on about a third of the jobs.
                    floor: if f > 6 { f64::from(f - 6) * 2.0 } else { 0.0 },
                })
                .collect();
            let expected = brute_force(&t, &c, &jobs, &pairs_on);
            let got = solve(&t, &c, &jobs, &pairs_on).expect("solved");
            match (expected, got) {
                (None, None) => {}
                (Some(e), Some(plan)) => {
                    check(&t, &c, &jobs, &pairs_on, &plan);
                    prop_assert!((plan.value - e).abs() <= 1e-9 * e.abs().max(1.0), "{} against {}", plan.value, e);
                }
                (e, g) => prop_assert!(false, "brute force {:?}, program {:?}", e, g),
            }
        }
    }
}
