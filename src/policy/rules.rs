//! The policy's rules as functions of their inputs: weights, the starvation promotion, the
//! critical-job rule, the pairing step's matching and its thresholds by GPU type. Each is
//! documented with its mechanism, its measured effect and its cost.

use super::data::{Throughputs, median};

/// The weight the policy gives a job this round: its trace weight `trace` times `workers` raised to
/// `size_exponent` (a distributed job's size factor, [`StsOptions::size_exponent`](super::StsOptions::size_exponent)),
/// divided by 1 + its attained hours when attained service orders the jobs this round
/// (`attained_seconds` is `Some`: [`Weights::Attained`](super::Weights::Attained) or [`Weights::AttainedGpu`](super::Weights::AttainedGpu) in a
/// crowded round).
///
/// With exponent p a d-worker job's share is d^p times a one-worker job's, and a whole GPU of
/// its best option is worth d^(p-1) of a one-worker job's: p = 0 counts jobs (a GPU of an 8-GPU
/// job is worth an eighth), p = 1 counts GPUs (every job the same share of time).
pub fn job_weight(
    size_exponent: f64,
    trace: f64,
    workers: u32,
    attained_seconds: Option<f64>,
) -> f64 {
    let w = trace * f64::from(workers).powf(size_exponent);
    match attained_seconds {
        Some(seconds) => w / (1.0 + seconds / 3600.0),
        None => w,
    }
}

/// The attained service that weights a job of `age_seconds` that has `attained_seconds` of
/// service, under the starvation promotion with `factor` ([`StsOptions::promotion`](super::StsOptions::promotion)): 0 (a
/// new job's weight) when the time it was not served, its age less its service, is more than
/// `factor` times its service; its service otherwise, and always with `None`.
///
/// After Tiresias's promotion of starved jobs (Gu et al., NSDI 2019): a job held
/// back long enough returns to the highest priority until it has run again. Here that holds
/// each job's service at about `1 / (factor + 1)` of its age at least, whenever the cluster can
/// give it.
pub fn attained_for_weight(factor: Option<f64>, age_seconds: f64, attained_seconds: f64) -> f64 {
    match factor {
        Some(k)
            if attained_seconds > 0.0 && age_seconds - attained_seconds > k * attained_seconds =>
        {
            0.0
        }
        _ => attained_seconds,
    }
}

/// Which jobs are critical under the critical-job rule with `factor`
/// ([`StsOptions::critical`](super::StsOptions::critical)): `remaining` holds each job's remaining hours at its best
/// solo speed and its workers, `work_rate` the work the cluster does in an hour, in hours of
/// best-speed work (a job on its best GPU type alone adds its workers).
///
/// The backlog's drain time is `H = sum(hours * workers) / work_rate`: how long the cluster,
/// at its last round's pace and with no more arrivals, takes to finish every active job. A job
/// is critical when `hours >= factor * H`: with factor 1 it cannot finish within the drain even
/// run at its best speed from now on, so any round it waits lengthens the makespan. The set is
/// closed upward in remaining hours. With `work_rate` 0 or not finite no job is critical (no
/// pace to measure against). O(n).
pub fn critical_jobs(remaining: &[(f64, u32)], work_rate: f64, factor: f64) -> Vec<bool> {
    let work: f64 = remaining
        .iter()
        .map(|&(hours, workers)| hours * f64::from(workers))
        .sum();
    let drain = work / work_rate;
    let usable = work_rate > 0.0 && work_rate.is_finite() && drain.is_finite();
    remaining
        .iter()
        .map(|&(hours, _)| usable && hours > 0.0 && hours >= factor * drain)
        .collect()
}

/// Pairs of `jobs` for one GPU type, greedily by pair sum: all pairs whose ratios
/// `ratios(a, b) = Some((r(a|b), r(b|a)))` sum to at least `threshold`, taken from the largest
/// sum down (ties by position in `jobs`) while both jobs are free. Returns `(a, b, r(a|b),
/// r(b|a))` per pair. `None` means the pair cannot share the type.
///
/// The greedy matching is within a factor 2 of a maximum-weight matching on the sums (Avis,
/// Networks 13, 1983); the step's measured effect is with this matching, not an exact one
/// (Edmonds' blossom algorithm, O(n^3)). O(n^2 log n) for n jobs: at most a few hundred single-GPU jobs are active
/// in the simulations, and the pairs of job types repeat, so `ratios` is a table lookup.
pub fn greedy_pairs<Id: Copy>(
    jobs: &[Id],
    threshold: f64,
    ratios: impl Fn(Id, Id) -> Option<(f64, f64)>,
) -> Vec<(Id, Id, f64, f64)> {
    // Measured ratios are finite, so no pair reaches an infinite threshold (the P100s' default):
    // skip the O(n^2) lookups that every round would otherwise spend on it.
    if threshold == f64::INFINITY {
        return Vec::new();
    }
    let mut candidates: Vec<(f64, usize, usize, f64, f64)> = Vec::new();
    for (x, &a) in jobs.iter().enumerate() {
        for (y, &b) in jobs.iter().enumerate().skip(x + 1) {
            if let Some((ra, rb)) = ratios(a, b)
                && ra + rb >= threshold
            {
                candidates.push((ra + rb, x, y, ra, rb));
            }
        }
    }
    // Largest sum first; ties by position, so the matching is deterministic.
    candidates.sort_by(|p, q| q.0.total_cmp(&p.0).then((p.1, p.2).cmp(&(q.1, q.2))));
    let mut taken = vec![false; jobs.len()];
    let mut pairs = Vec::new();
    for (_, x, y, ra, rb) in candidates {
        if !taken[x] && !taken[y] {
            taken[x] = true;
            taken[y] = true;
            pairs.push((jobs[x], jobs[y], ra, rb));
        }
    }
    pairs
}

/// The pairing thresholds by GPU type, derived from the data the policy is given (the default,
/// [`StsOptions::pairing_by_type`](super::StsOptions::pairing_by_type) `None`): for a threshold
/// `threshold` on the other types, with `counts[k]` the GPUs of type k,
///
/// - the slowest GPU type of a cluster of two or more types gets `min(1, threshold)`: the jobs
///   that run there are those the faster types had no room for (the oldest, under
///   least-attained-service weights), and when more jobs are active than GPUs the alternative
///   to a pair of sum >= 1 is one of the two waiting. Speed is [`speeds`]; the slowest is the one
///   strictly below the others (none on a tie). Measured on Gavel's K80s (docs/simulation.md,
///   "A pairing step": under overload 1.5% less JCT and 0.7% less makespan on seeds 0-5);
/// - another type whose pairs are weak, the median pair sum `r(a|b) + r(b|a)` of its known pairs
///   of single-GPU job types (every unordered pair, a job beside itself too, both throughputs
///   above 0) below `(1 + threshold) / 2`, halfway from time slicing to the threshold, gets
///   infinity: no pairs, whole GPUs only (a type with no known pair too). Measured on Gavel's
///   P100s, median 1.13 against 1.37 on the V100s: where jobs keep arriving, whole P100s gave 1.2%
///   less JCT and makespan than P100 pairs at 1.4 (docs/simulation.md, "A pairing
///   step");
/// - every other type keeps `threshold` (it is not listed).
///
/// Returns (GPU type index, threshold) for the types that differ. On Gavel's table and default
/// 1.4: the K80s 1.0 (median 1.05), the P100s infinite (1.13 < 1.2), the V100s 1.4 (1.37).
/// O(K J^2) for K types and J job types.
pub fn derived_pairing_by_type<T: Throughputs + ?Sized>(
    data: &T,
    gpu_types: usize,
    threshold: f64,
) -> Vec<(usize, f64)> {
    let singles: Vec<usize> = (0..data.job_types())
        .filter(|&j| data.workers(j) == 1)
        .collect();
    let slowest = slowest_type(data, gpu_types);
    let weak_below = 0.5 * (1.0 + threshold);
    let mut out = Vec::new();
    for k in 0..gpu_types {
        if slowest == Some(k) {
            out.push((k, threshold.min(1.0)));
            continue;
        }
        let runs: Vec<usize> = singles
            .iter()
            .copied()
            .filter(|&j| data.solo(k, j) > 0.0)
            .collect();
        let mut sums = Vec::new();
        for (i, &a) in runs.iter().enumerate() {
            for &b in &runs[i..] {
                let (oa, ob) = data.pair(k, a, b);
                if oa > 0.0 && ob > 0.0 {
                    sums.push(oa / data.solo(k, a) + ob / data.solo(k, b));
                }
            }
        }
        if median(&mut sums).is_none_or(|m| m < weak_below) {
            out.push((k, f64::INFINITY));
        }
    }
    out
}

/// The relative speed of each of `gpu_types` GPU types: the median, over the single-GPU job
/// types that run alone on every one of them (every job type that does when no single-GPU one
/// does), of the log of the job's solo throughput there less its mean over the types. A median
/// of per-job ratios, so that one odd measurement does not reorder the types. All zero when no
/// job type runs on every type. O(K J log J).
pub fn speeds<T: Throughputs + ?Sized>(data: &T, gpu_types: usize) -> Vec<f64> {
    let everywhere = |single: bool| -> Vec<usize> {
        (0..data.job_types())
            .filter(|&j| !single || data.workers(j) == 1)
            .filter(|&j| (0..gpu_types).all(|k| data.solo(k, j) > 0.0))
            .collect()
    };
    let mut common = everywhere(true);
    if common.is_empty() {
        common = everywhere(false);
    }
    let mean: Vec<f64> = common
        .iter()
        .map(|&j| (0..gpu_types).map(|k| data.solo(k, j).ln()).sum::<f64>() / gpu_types as f64)
        .collect();
    (0..gpu_types)
        .map(|k| {
            let mut logs: Vec<f64> = common
                .iter()
                .zip(&mean)
                .map(|(&j, m)| data.solo(k, j).ln() - m)
                .collect();
            median(&mut logs).unwrap_or(0.0)
        })
        .collect()
}

/// The strictly slowest of two or more GPU types by [`speeds`]; `None` for one type or a tie.
fn slowest_type<T: Throughputs + ?Sized>(data: &T, gpu_types: usize) -> Option<usize> {
    if gpu_types < 2 {
        return None;
    }
    let speed = speeds(data, gpu_types);
    let least = speed.iter().copied().fold(f64::INFINITY, f64::min);
    let at_least: Vec<usize> = (0..speed.len()).filter(|&k| speed[k] == least).collect();
    match at_least.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// When the attained-service weights apply: in crowded rounds, where the active jobs are more
/// than `ratio` times the cluster's capacity (every round for `None`), and with the hold on from
/// a crowded round until the next job arrives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Crowding {
    ratio: Option<f64>,
    hold: bool,
    /// A crowded round came and no job has arrived since.
    pub(crate) holding: bool,
}

impl Crowding {
    pub(crate) fn new(ratio: Option<f64>, hold: bool) -> Crowding {
        Crowding {
            ratio,
            hold,
            holding: false,
        }
    }

    /// Whether attained service orders the jobs in a round of `active` jobs on a cluster of
    /// `capacity`: its GPUs, or the most work it has done in one round in best-speed GPUs where
    /// that is more (shared GPUs serve more than one job each). Jobs are counted, not their
    /// workers (docs/simulation.md, "Weights that count the workers": counting workers starved
    /// the old jobs on one seed in six at 2.6 jobs/h).
    pub(crate) fn applies(&mut self, active: usize, capacity: f64) -> bool {
        let crowded = self
            .ratio
            .is_none_or(|ratio| active as f64 > ratio * capacity);
        self.holding = self.hold && (crowded || self.holding);
        crowded || self.holding
    }

    /// A job arrived: the cluster is not draining, and the hold ends.
    pub(crate) fn job_arrived(&mut self) {
        self.holding = false;
    }
}

/// Slot sizes 1, 2, 4, ... up to `units` (a divisibility ladder), plus `units` itself.
pub(crate) fn ladder(units: u32) -> Vec<u32> {
    let mut sizes: Vec<u32> = std::iter::successors(Some(1u32), |s| s.checked_mul(2))
        .take_while(|&s| s < units)
        .collect();
    sizes.retain(|&s| units.is_multiple_of(s));
    sizes.push(units);
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::options::{DEFAULT_SIZE_EXPONENT, Weights};
    use proptest::prelude::*;

    /// Pair sums of four jobs: (0,1) 1.5, (0,2) 1.6, (1,3) 1.4, (2,3) 1.0, others cannot share.
    fn four(a: usize, b: usize) -> Option<(f64, f64)> {
        match (a.min(b), a.max(b)) {
            (0, 1) => Some((0.7, 0.8)),
            (0, 2) => Some((0.9, 0.7)),
            (1, 3) => Some((0.6, 0.8)),
            (2, 3) => Some((0.5, 0.5)),
            _ => None,
        }
    }

    /// Worked by hand: (0,2) has the largest sum and is taken; (0,1) then has job 0 taken; (1,3)
    /// is next. At threshold 1.45 the pair (1,3) is not a candidate and 1 and 3 stay alone.
    #[test]
    fn greedy_pairs_takes_the_largest_sums_first() {
        let pairs = greedy_pairs(&[0, 1, 2, 3], 1.0, four);
        assert_eq!(pairs, vec![(0, 2, 0.9, 0.7), (1, 3, 0.6, 0.8)]);
        let pairs = greedy_pairs(&[0, 1, 2, 3], 1.45, four);
        assert_eq!(pairs, vec![(0, 2, 0.9, 0.7)]);
        // The ratios follow the order of the jobs: r(a|b) first for a before b in `jobs`.
        let pairs = greedy_pairs(&[2, 0], 0.0, four);
        assert_eq!(pairs.len(), 1);
        assert_eq!((pairs[0].0, pairs[0].1), (2, 0));
        assert!(greedy_pairs(&[3], 0.0, four).is_empty());
        // An infinite threshold matches nothing: whole GPUs only on that type.
        assert!(greedy_pairs(&[0, 1, 2, 3], f64::INFINITY, four).is_empty());
    }

    /// Worked by hand: 4 workers on half GPUs for a 360 s round have run 180 s each, 720
    /// GPU-seconds in all; one worker on a whole GPU counts the same either way.
    #[test]
    fn attained_service_counts_a_distributed_job_once() {
        assert_eq!(Weights::Attained.service(4, 0.5, 360.0), 180.0);
        assert_eq!(Weights::AttainedGpu.service(4, 0.5, 360.0), 720.0);
        for w in [Weights::Attained, Weights::AttainedGpu] {
            assert_eq!(w.service(1, 1.0, 360.0), 360.0);
        }
    }

    /// Worked by hand: an 8-worker job of trace weight 1 weighs 8 with exponent 1, 1 with
    /// exponent 0 and 8^0.5 with 0.5 (the default is 0.75); 2 h of attained service divide each
    /// by 3; a one-worker job weighs the same whatever the exponent.
    #[test]
    fn size_weights_by_hand() {
        assert_eq!(DEFAULT_SIZE_EXPONENT, 0.75);
        assert_eq!(job_weight(1.0, 1.0, 8, None), 8.0);
        assert_eq!(job_weight(0.0, 1.0, 8, None), 1.0);
        assert_eq!(job_weight(0.5, 1.0, 8, None), 8f64.sqrt());
        assert_eq!(job_weight(1.0, 1.0, 8, Some(7200.0)), 8.0 / 3.0);
        assert_eq!(job_weight(0.0, 1.0, 8, Some(7200.0)), 1.0 / 3.0);
        for p in [0.0, 0.5, 1.0] {
            assert_eq!(job_weight(p, 2.5, 1, Some(3600.0)), 1.25);
        }
    }

    proptest! {
        /// The size factor multiplies whatever the weight rule gives: a d-worker job weighs d^p
        /// times its weight with exponent 0, more for a larger exponent, and a one-worker job
        /// the same whatever the exponent.
        #[test]
        fn size_weights_scale_by_workers(
            trace in 0.01f64..100.0,
            workers in 1u32..=8,
            p in 0.0f64..=1.0,
            attained in proptest::option::of(0.0f64..1e7),
        ) {
            let one = job_weight(0.0, trace, workers, attained);
            let w = job_weight(p, trace, workers, attained);
            prop_assert!(one > 0.0 && one <= trace);
            let expected = one * f64::from(workers).powf(p);
            prop_assert!((w - expected).abs() <= 1e-12 * expected);
            prop_assert!(w <= job_weight(1.0, trace, workers, attained) * (1.0 + 1e-12));
            prop_assert_eq!(job_weight(p, trace, 1, attained), job_weight(0.0, trace, 1, attained));
        }
    }

    /// The hold by hand: 10 GPUs at ratio 1.5, so more than 15 active jobs is crowded.
    #[test]
    fn attained_service_holds_until_the_next_arrival() {
        let mut held = Crowding::new(Some(1.5), true);
        let mut plain = Crowding::new(Some(1.5), false);
        // (active jobs, a job arrived before the round, applies with the hold, without)
        let rounds = [
            (10, false, false, false),
            (15, true, false, false), // 15 is not more than 15
            (16, true, true, true),
            (12, false, true, false), // draining: held
            (3, false, true, false),
            (3, true, false, false), // an arrival ends the hold
            (2, false, false, false),
            (20, false, true, true),
            (14, true, false, false),
        ];
        for (i, &(active, arrived, with_hold, without)) in rounds.iter().enumerate() {
            if arrived {
                held.job_arrived();
                plain.job_arrived();
            }
            assert_eq!(held.applies(active, 10.0), with_hold, "round {i}, held");
            assert_eq!(plain.applies(active, 10.0), without, "round {i}, plain");
        }
        // `None` (every round) and a ratio no round reaches.
        let mut always = Crowding::new(None, true);
        assert!(always.applies(0, 10.0));
        let mut never = Crowding::new(Some(1e9), true);
        assert!(!never.applies(1000, 10.0));
    }

    proptest! {
        /// Against a replay of the rule on the whole history: without the hold the weights
        /// apply exactly in crowded rounds; with it, also in a round that no arrival separates
        /// from an earlier crowded round, and in no other.
        #[test]
        fn hold_applies_exactly_after_a_crowded_round_without_arrivals(
            rounds in proptest::collection::vec((0usize..40, proptest::bool::ANY), 1..60),
            capacity in 1.0f64..20.0,
            ratio in 0.0f64..3.0,
        ) {
            let mut held = Crowding::new(Some(ratio), true);
            let mut plain = Crowding::new(Some(ratio), false);
            let crowded = |active: usize| active as f64 > ratio * capacity;
            for (i, &(active, arrived)) in rounds.iter().enumerate() {
                if arrived {
                    held.job_arrived();
                    plain.job_arrived();
                }
                prop_assert_eq!(plain.applies(active, capacity), crowded(active));
                // The latest round at or before i that an arrival precedes, and a crowded round
                // from there to i (an arrival before round k comes before round k's plan).
                let since = (0..=i).rev().find(|&k| rounds[k].1).unwrap_or(0);
                let expected = rounds[since..=i].iter().any(|&(a, _)| crowded(a));
                prop_assert_eq!(held.applies(active, capacity), expected, "round {}", i);
            }
        }
    }

    /// Promotion by hand, factor 10, in hours: a job 110 h old with 10 h of service has waited
    /// 100 h, exactly 10 times its service (kept); at 111 h it is promoted.
    #[test]
    fn starved_jobs_are_promoted_by_hand() {
        let h = 3600.0;
        assert_eq!(
            attained_for_weight(Some(10.0), 110.0 * h, 10.0 * h),
            10.0 * h
        );
        assert_eq!(attained_for_weight(Some(10.0), 111.0 * h, 10.0 * h), 0.0);
        assert_eq!(attained_for_weight(None, 1e6 * h, 10.0 * h), 10.0 * h);
        // A job that never ran has a new job's weight anyway.
        assert_eq!(attained_for_weight(Some(10.0), 1e6 * h, 0.0), 0.0);
        // Factor 0: any wait at all promotes; none (always served) does not.
        assert_eq!(attained_for_weight(Some(0.0), 2.0 * h, 1.0 * h), 0.0);
        assert_eq!(attained_for_weight(Some(0.0), 1.0 * h, 1.0 * h), 1.0 * h);
        // The weight the round problem gets.
        let promoted = attained_for_weight(Some(10.0), 200.0 * h, 10.0 * h);
        assert_eq!(job_weight(0.5, 1.0, 1, Some(promoted)), 1.0);
    }

    /// Four jobs of 10, 20, 30 and 40 remaining hours, one worker each but the last (two):
    /// 140 hours of work at a pace of 10 best-speed GPUs drain in 14 h.
    #[test]
    fn critical_jobs_by_hand() {
        let remaining = [(10.0, 1), (20.0, 1), (30.0, 1), (40.0, 2)];
        assert_eq!(
            critical_jobs(&remaining, 10.0, 1.0),
            [false, true, true, true]
        );
        assert_eq!(
            critical_jobs(&remaining, 10.0, 2.0),
            [false, false, true, true]
        );
        // Factor 1.5: at least 21 h.
        assert_eq!(
            critical_jobs(&remaining, 10.0, 1.5),
            [false, false, true, true]
        );
        // A pace of 14 drains in 10 h: the 10 h job is exactly at the bound, and counts.
        assert_eq!(
            critical_jobs(&remaining, 14.0, 1.0),
            [true, true, true, true]
        );
        // No pace, no critical job; a finished job (0 h) is never critical.
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(critical_jobs(&remaining, rate, 1.0), [false; 4], "{rate}");
        }
        assert_eq!(critical_jobs(&[(0.0, 1)], 1.0, 0.0), [false]);
        assert!(critical_jobs(&[], 1.0, 1.0).is_empty());
    }

    proptest! {
        /// The critical set is closed upward in remaining hours, shrinks as the factor grows,
        /// and with factor at most 1 holds the job of most remaining hours whenever the pace
        /// is at least the work's GPUs (every job could run at its best speed at once).
        #[test]
        fn critical_jobs_are_the_longest_and_shrink_with_the_factor(
            remaining in proptest::collection::vec((0.0f64..200.0, 1u32..9), 0..30),
            rate in 0.1f64..200.0,
            factor in 0.0f64..3.0,
            more in 0.0f64..2.0,
        ) {
            let critical = critical_jobs(&remaining, rate, factor);
            prop_assert_eq!(critical.len(), remaining.len());
            for (a, &(ha, _)) in remaining.iter().enumerate() {
                for (b, &(hb, _)) in remaining.iter().enumerate() {
                    if critical[a] && hb >= ha {
                        prop_assert!(critical[b], "{} h critical, {} h not", ha, hb);
                    }
                }
            }
            let fewer = critical_jobs(&remaining, rate, factor + more);
            for (c, f) in critical.iter().zip(&fewer) {
                prop_assert!(*c || !*f);
            }
            let gpus: f64 = remaining.iter().map(|&(_, w)| f64::from(w)).sum();
            let longest = remaining
                .iter()
                .enumerate()
                .filter(|(_, r)| r.0 > 0.0)
                .max_by(|x, y| x.1.0.total_cmp(&y.1.0));
            if let Some((i, _)) = longest
                && rate >= gpus
                && factor <= 1.0
            {
                prop_assert!(critical[i]);
            }
        }

        /// On random pair sums: every job is in at most one pair, every pair is a candidate
        /// (sum at least the threshold, the ratios its own), no candidate is left with both jobs
        /// free (the matching is maximal), and each pair's sum is the largest among the
        /// candidates that were still free when it was taken.
        #[test]
        fn greedy_pairs_is_a_maximal_matching_of_candidates(
            n in 0usize..12,
            cells in proptest::collection::vec((0.0f64..1.2, 0.0f64..1.2, any::<bool>()), 144),
            threshold in 0.0f64..2.0,
        ) {
            let ratios = |a: usize, b: usize| {
                let (x, y) = (a.min(b), a.max(b));
                let (ra, rb, ok) = cells[x * 12 + y];
                ok.then_some(if a < b { (ra, rb) } else { (rb, ra) })
            };
            let jobs: Vec<usize> = (0..n).rev().collect();
            let pairs = greedy_pairs(&jobs, threshold, ratios);
            let mut seen = vec![false; n];
            for &(a, b, ra, rb) in &pairs {
                prop_assert!(!seen[a] && !seen[b] && a != b);
                seen[a] = true;
                seen[b] = true;
                prop_assert_eq!(ratios(a, b), Some((ra, rb)));
                prop_assert!(ra + rb >= threshold);
            }
            for (x, &a) in jobs.iter().enumerate() {
                for &b in &jobs[x + 1..] {
                    if let Some((ra, rb)) = ratios(a, b) && ra + rb >= threshold {
                        prop_assert!(seen[a] || seen[b], "({a}, {b}) left with both free");
                    }
                }
            }
            let mut taken = vec![false; n];
            for &(a, b, ra, rb) in &pairs {
                for (x, &c) in jobs.iter().enumerate() {
                    for &d in &jobs[x + 1..] {
                        if taken[c] || taken[d] || !(c == a || c == b || d == a || d == b) {
                            continue;
                        }
                        if let Some((rc, rd)) = ratios(c, d) && rc + rd >= threshold {
                            prop_assert!(rc + rd <= ra + rb);
                        }
                    }
                }
                taken[a] = true;
                taken[b] = true;
            }
        }
    }
}
