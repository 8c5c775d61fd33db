//! The co-location data the policy plans with: each job type's throughput alone on each GPU type
//! and beside each other job type. A scheduler brings its own through [`Throughputs`] (Gavel's
//! measured table, its own profiler's, or predictions); [`ThroughputMatrix`] holds a table in
//! memory.

/// Throughputs (steps per second) by GPU type and job type. GPU types are indexed as in the
/// policy's cluster ([`StsPolicy::new`](super::StsPolicy::new)), job types as the caller numbers
/// them ([`StsJob::job_type`](super::StsJob::job_type)).
///
/// A job type that cannot run on a GPU type has solo throughput 0 there; a pair that cannot share
/// a GPU has pair throughputs (0, 0).
pub trait Throughputs: Send + Sync {
    /// How many job types there are (job types are `0..job_types()`).
    fn job_types(&self) -> usize;
    /// The workers (GPUs at once) of jobs of `job_type`: 1 for a single-GPU job type.
    fn workers(&self, job_type: usize) -> u32;
    /// Steps/s of a job of `job_type` alone on a GPU of `gpu_type` (0: it cannot run there).
    fn solo(&self, gpu_type: usize, job_type: usize) -> f64;
    /// Steps/s of jobs of `a` and `b` sharing one GPU of `gpu_type`, (a's, b's); (0, 0) when
    /// they cannot share one.
    fn pair(&self, gpu_type: usize, a: usize, b: usize) -> (f64, f64);
    /// The throughput a job of `job_type` is planned with in each slot size of `ladder` on a GPU
    /// of `gpu_type` cut into `units` units, before its co-runners are known, as `(slot,
    /// steps/s)`. By default ([`typical_slot_throughputs`]): the solo throughput for a whole GPU,
    /// and for a slot of s units the typical pair's ratio to solo (the median over the single-GPU
    /// job types it pairs with) raised to `units / s - 1`, the product of the slowdowns of the
    /// co-runners that fill the GPU. A data source with its own slot model overrides it.
    fn slot_throughputs(
        &self,
        gpu_type: usize,
        job_type: usize,
        units: u32,
        ladder: &[u32],
    ) -> Vec<(u32, f64)> {
        typical_slot_throughputs(self, gpu_type, job_type, units, ladder)
    }
}

/// [`Throughputs::slot_throughputs`]'s default: solo on a whole GPU; on a slot of s < units
/// units, `solo * r^(units/s - 1)` with r the median over single-GPU job types b of
/// `pair(a | b) / solo(a)` (at most 1), for single-GPU job types that have a known pair; no
/// slot smaller than the GPU otherwise. O(J log J + |ladder|) for J job types.
pub fn typical_slot_throughputs<T: Throughputs + ?Sized>(
    data: &T,
    gpu_type: usize,
    job_type: usize,
    units: u32,
    ladder: &[u32],
) -> Vec<(u32, f64)> {
    let solo = data.solo(gpu_type, job_type);
    if solo.is_nan() || solo <= 0.0 {
        return Vec::new();
    }
    let ratio = (data.workers(job_type) == 1)
        .then(|| {
            let mut shared: Vec<f64> = (0..data.job_types())
                .filter(|&b| data.workers(b) == 1)
                .map(|b| data.pair(gpu_type, job_type, b).0)
                .filter(|&x| x > 0.0)
                .collect();
            median(&mut shared).map(|m| (m / solo).min(1.0))
        })
        .flatten();
    ladder
        .iter()
        .filter(|&&s| s >= 1 && s <= units)
        .filter_map(|&s| match (s == units, ratio) {
            (true, _) => Some((s, solo)),
            (false, Some(r)) => Some((s, solo * r.powf(f64::from(units) / f64::from(s) - 1.0))),
            (false, None) => None,
        })
        .collect()
}

/// The median of `values` (sorted in place), `None` when empty.
pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some(0.5 * (values[n / 2 - 1] + values[n / 2])),
    }
}

/// What a job of `job_type` realizes on a GPU of `gpu_type` beside co-runners of `others`'
/// job types: its solo throughput alone, the measured pair beside one, and beside several the
/// solo throughput times each co-runner's pairwise ratio `pair(a | b) / solo(a)` (the
/// composition rule the planned slots assume). 0 where a pair cannot share. O(|others|).
pub fn composed_throughput<T: Throughputs + ?Sized>(
    data: &T,
    gpu_type: usize,
    job_type: usize,
    others: &[usize],
) -> f64 {
    let solo = data.solo(gpu_type, job_type);
    match others {
        [] => solo,
        [b] => data.pair(gpu_type, job_type, *b).0,
        _ => others.iter().fold(solo, |thr, &b| {
            let own = data.pair(gpu_type, job_type, b).0;
            thr * if solo > 0.0 { own / solo } else { 0.0 }
        }),
    }
}

/// A throughput table in memory: `solo[gpu_type][job_type]` and
/// `pair[gpu_type][a][b] = (a's, b's)`, with each job type's workers.
#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputMatrix {
    workers: Vec<u32>,
    solo: Vec<Vec<f64>>,
    pair: Vec<Vec<Vec<(f64, f64)>>>,
}

impl ThroughputMatrix {
    /// A table of `solo` (one row per GPU type, one column per job type) and `pair` (per GPU type,
    /// a job-type by job-type matrix of (own, other's) throughputs), with `workers[j]` the
    /// workers of job type j.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Data`](super::PolicyError::Data) when the shapes disagree, a throughput is
    /// negative or not finite, a pair is not the mirror of its transpose, or a job type has 0
    /// workers.
    pub fn new(
        workers: Vec<u32>,
        solo: Vec<Vec<f64>>,
        pair: Vec<Vec<Vec<(f64, f64)>>>,
    ) -> Result<ThroughputMatrix, super::PolicyError> {
        let bad = |what: String| Err(super::PolicyError::Data { what });
        let jobs = workers.len();
        if let Some(j) = workers.iter().position(|&w| w == 0) {
            return bad(format!("workers[{j}] must be at least 1"));
        }
        if pair.len() != solo.len() {
            return bad(format!(
                "pair has {} GPU types, solo {}",
                pair.len(),
                solo.len()
            ));
        }
        for (k, row) in solo.iter().enumerate() {
            if row.len() != jobs {
                return bad(format!(
                    "solo[{k}] has {} job types, workers {jobs}",
                    row.len()
                ));
            }
            if let Some(j) = row.iter().position(|x| !(x.is_finite() && *x >= 0.0)) {
                return bad(format!("solo[{k}][{j}] must be finite and >= 0"));
            }
            if pair[k].len() != jobs || pair[k].iter().any(|r| r.len() != jobs) {
                return bad(format!("pair[{k}] must be {jobs} by {jobs}"));
            }
            for (a, row) in pair[k].iter().enumerate() {
                for (b, &(x, y)) in row.iter().enumerate() {
                    if !(x.is_finite() && x >= 0.0 && y.is_finite() && y >= 0.0) {
                        return bad(format!("pair[{k}][{a}][{b}] must be finite and >= 0"));
                    }
                    if pair[k][b][a] != (y, x) {
                        return bad(format!(
                            "pair[{k}][{a}][{b}] must mirror pair[{k}][{b}][{a}]"
                        ));
                    }
                }
            }
        }
        Ok(ThroughputMatrix {
            workers,
            solo,
            pair,
        })
    }
}

impl Throughputs for ThroughputMatrix {
    fn job_types(&self) -> usize {
        self.workers.len()
    }
    fn workers(&self, job_type: usize) -> u32 {
        self.workers.get(job_type).copied().unwrap_or(1)
    }
    fn solo(&self, gpu_type: usize, job_type: usize) -> f64 {
        self.solo
            .get(gpu_type)
            .and_then(|r| r.get(job_type))
            .copied()
            .unwrap_or(0.0)
    }
    fn pair(&self, gpu_type: usize, a: usize, b: usize) -> (f64, f64) {
        self.pair
            .get(gpu_type)
            .and_then(|m| m.get(a))
            .and_then(|r| r.get(b))
            .copied()
            .unwrap_or((0.0, 0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_types() -> ThroughputMatrix {
        // One GPU type, job types 0 and 1 (single-GPU) and 2 (two workers).
        let solo = vec![vec![10.0, 4.0, 8.0]];
        let mut pair = vec![vec![vec![(0.0, 0.0); 3]; 3]];
        pair[0][0][0] = (6.0, 6.0);
        pair[0][0][1] = (8.0, 3.0);
        pair[0][1][0] = (3.0, 8.0);
        ThroughputMatrix::new(vec![1, 1, 2], solo, pair).expect("a valid table")
    }

    /// Worked by hand: job type 0 pairs at 6 and 8 (median 7, ratio 0.7), so a half of 2 units is
    /// 7 and a quarter of 4 units is 10 * 0.7^3 = 3.43; the distributed type gets whole GPUs only.
    #[test]
    fn typical_slots_by_hand() {
        let t = two_types();
        assert_eq!(
            t.slot_throughputs(0, 0, 2, &[1, 2]),
            vec![(1, 7.0), (2, 10.0)]
        );
        let quarter = t.slot_throughputs(0, 0, 4, &[1, 2, 4]);
        assert!((quarter[0].1 - 3.43).abs() < 1e-12, "{quarter:?}");
        assert_eq!(t.slot_throughputs(0, 2, 2, &[1, 2]), vec![(2, 8.0)]);
    }

    #[test]
    fn composition_by_hand() {
        let t = two_types();
        assert_eq!(composed_throughput(&t, 0, 0, &[]), 10.0);
        assert_eq!(composed_throughput(&t, 0, 0, &[1]), 8.0);
        // 10 * 0.8 * 0.6 = 4.8.
        assert!((composed_throughput(&t, 0, 0, &[1, 0]) - 4.8).abs() < 1e-12);
        assert_eq!(composed_throughput(&t, 0, 0, &[2]), 0.0);
    }

    #[test]
    fn bad_tables_are_refused_by_place() {
        let err = |r: Result<ThroughputMatrix, super::super::PolicyError>| {
            r.expect_err("refused").to_string()
        };
        assert!(
            err(ThroughputMatrix::new(
                vec![0],
                vec![vec![1.0]],
                vec![vec![vec![(0.0, 0.0)]]]
            ))
            .contains("workers[0]")
        );
        assert!(
            err(ThroughputMatrix::new(
                vec![1],
                vec![vec![-1.0]],
                vec![vec![vec![(0.0, 0.0)]]]
            ))
            .contains("solo[0][0]")
        );
        let mut pair = vec![vec![vec![(0.0, 0.0); 2]; 2]];
        pair[0][0][1] = (1.0, 2.0);
        assert!(
            err(ThroughputMatrix::new(
                vec![1, 1],
                vec![vec![1.0, 1.0]],
                pair
            ))
            .contains("mirror")
        );
    }
}
