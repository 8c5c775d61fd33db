//! Gavel's heterogeneity-aware max-min fairness, without (`gavel-mmf`) and with (`gavel-mmf-ss`)
//! space sharing.
//!
//! Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
//! Workloads", OSDI 2020, section 4.1; the formulas are those of Gavel's code at commit c4fa400
//! (`scheduler/policies/max_min_fairness.py`, `proportional.py`, `policy.py`):
//!
//! - `gavel-mmf` (`max_min_fairness_perf`): maximize min over jobs i of
//!   sum_k `T[i][k]` * sf_i * `x[i][k]` / (w_i * P_i), where P_i = sum_k `T[i][k]` * n_k / sum_k n_k is
//!   the job's throughput under the proportional split (the same share of every type; Gavel
//!   scales the split so that rows sum to 1 whatever the number of jobs).
//! - `gavel-mmf-ss` (`max_min_fairness_packed`): entries are the jobs and every pair of jobs of
//!   the same scale factor; a pair occupies its sf GPUs once and gives each of its jobs its
//!   co-located throughput. Job i's utility sums, over the entries that contain it, its
//!   throughput there times sf_i / (w_i * P_i), as without space sharing. (Older Gavel versions
//!   also divided by sum_k `T[i][k]` in `PolicyWithPacking.flatten`; the version whose numbers we
//!   reproduce does not.)
//!
//! Both are solved as the LP of [`lp`]. O(LP) per allocation: (m + P) K variables
//! for m jobs and P pairs.

use super::super::SimError;
use super::super::gavel::{Allocation, AllocationInput, AllocationPolicy};
use super::lp::{self, Entry, Method};

/// P_i: throughput under the proportional split, sum_k `T[i][k]` * n_k / sum_k n_k.
pub fn proportional_throughput(throughput: &[f64], capacity: &[u32]) -> f64 {
    let total: f64 = capacity.iter().map(|&n| f64::from(n)).sum();
    if total == 0.0 {
        return 0.0;
    }
    throughput
        .iter()
        .zip(capacity)
        .map(|(t, &n)| t * f64::from(n) / total)
        .sum()
}

/// Heterogeneity-aware max-min fairness.
#[derive(Debug, Clone)]
pub struct MaxMinFairness {
    packing: bool,
    method: Method,
}

impl MaxMinFairness {
    /// `gavel-mmf` (no space sharing).
    pub fn perf(method: Method) -> MaxMinFairness {
        MaxMinFairness {
            packing: false,
            method,
        }
    }

    /// `gavel-mmf-ss` (pairs as extra entries).
    pub fn packed(method: Method) -> MaxMinFairness {
        MaxMinFairness {
            packing: true,
            method,
        }
    }
}

impl AllocationPolicy for MaxMinFairness {
    fn name(&self) -> &'static str {
        if self.packing {
            "gavel-mmf-ss"
        } else {
            "gavel-mmf"
        }
    }

    fn packing(&self) -> bool {
        self.packing
    }

    fn allocate(&mut self, input: &AllocationInput<'_>) -> Result<Allocation, SimError> {
        // Per job the divisor of its throughputs in the objective.
        let scale: Vec<f64> = input
            .jobs
            .iter()
            .map(|j| {
                let p = proportional_throughput(&j.throughput, input.capacity);
                j.weight * p
            })
            .collect();
        let coefficient = |thr: f64, job: usize| {
            if scale[job] > 0.0 {
                thr * f64::from(input.jobs[job].scale_factor) / scale[job]
            } else {
                0.0
            }
        };
        let mut entries: Vec<Entry> = input
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| {
                Entry::single(
                    i,
                    f64::from(j.scale_factor),
                    j.throughput.iter().map(|&t| coefficient(t, i)),
                )
            })
            .collect();
        if self.packing {
            entries.extend(input.pairs.iter().map(|p| {
                Entry {
                    job: p.a,
                    partner: Some(p.b),
                    scale_factor: f64::from(input.jobs[p.a].scale_factor),
                    utility: p
                        .throughput
                        .iter()
                        .map(|&(ta, tb)| [coefficient(ta, p.a), coefficient(tb, p.b)])
                        .collect(),
                }
            }));
        }

        let problem = lp::MaxMin {
            jobs: input.jobs.len(),
            entries: &entries,
            capacity: input.capacity,
        };
        let (mut x, _) = problem.solve(self.name(), self.method)?;
        let pairs = x.split_off(input.jobs.len());
        Ok(Allocation { jobs: x, pairs })
    }
}
