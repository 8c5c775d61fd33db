//! Gavel's heterogeneity-aware max-min fairness, without (`gavel-mmf`) and with (`gavel-mmf-ss`)
//! space sharing.
//!
//! Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
//! Workloads", OSDI 2020, section 4.1; the formulas are those of Gavel's code at commit c4fa400
//! (`scheduler/policies/max_min_fairness.py`, `proportional.py`, `policy.py`):
//!
//! - `gavel-mmf` (`max_min_fairness_perf`): maximize min over jobs i of
//!   sum_k T[i][k] * sf_i * x[i][k] / (w_i * P_i), where P_i = sum_k T[i][k] * n_k / sum_k n_k is
//!   the job's throughput under the proportional split (the same share of every type; Gavel
//!   scales the split so that rows sum to 1 whatever the number of jobs).
//! - `gavel-mmf-ss` (`max_min_fairness_packed`): entries are the jobs and every pair of jobs of
//!   the same scale factor; a pair occupies its sf GPUs once and gives each of its jobs its
//!   co-located throughput. Job i's utility sums over the entries that contain it, and each
//!   throughput is divided by S_i * w_i * P_i, with S_i = sum_k T[i][k] (Gavel's packed flatten
//!   normalizes by S_i before dividing by the proportional throughput).
//!
//! Both are solved as the LP of [`lp`](super::lp). O(LP) per allocation: (m + P) K variables
//! for m jobs and P pairs.

use super::super::gavel::{Allocation, AllocationInput, AllocationPolicy};
use super::super::SimError;
use super::lp::{self, Entry, Method};

/// P_i: throughput under the proportional split, sum_k T[i][k] * n_k / sum_k n_k.
pub fn proportional_throughput(throughput: &[f64], capacity: &[u32]) -> f64 {
    let total: f64 = capacity.iter().map(|&n| f64::from(n)).sum();
    if total == 0.0 {
        return 0.0;
    }
    throughput.iter().zip(capacity).map(|(t, &n)| t * f64::from(n) / total).sum()
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
        MaxMinFairness { packing: false, method }
    }

    /// `gavel-mmf-ss` (pairs as extra entries).
    pub fn packed(method: Method) -> MaxMinFairness {
        MaxMinFairness { packing: true, method }
    }
}

impl AllocationPolicy for MaxMinFairness {
    fn name(&self) -> &'static str {
        if self.packing { "gavel-mmf-ss" } else { "gavel-mmf" }
    }

    fn packing(&self) -> bool {
        self.packing
    }

    fn allocate(&mut self, input: &AllocationInput<'_>) -> Result<Allocation, SimError> {
        let k = input.capacity.len();
        // Per job the divisor of its throughputs in the objective.
        let scale: Vec<f64> = input
            .jobs
            .iter()
            .map(|j| {
                let p = proportional_throughput(&j.throughput, input.capacity);
                let s: f64 = if self.packing { j.throughput.iter().sum() } else { 1.0 };
                s * j.weight * p
            })
            .collect();
        let coefficient = |thr: f64, job: usize| {
            if scale[job] > 0.0 { thr * f64::from(input.jobs[job].scale_factor) / scale[job] } else { 0.0 }
        };
        let mut entries: Vec<Entry> = input
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| Entry {
                jobs: vec![i],
                scale_factor: f64::from(j.scale_factor),
                utility: (0..k).map(|kk| vec![coefficient(j.throughput[kk], i)]).collect(),
            })
            .collect();
        if self.packing {
            entries.extend(input.pairs.iter().map(|p| Entry {
                jobs: vec![p.a, p.b],
                scale_factor: f64::from(input.jobs[p.a].scale_factor),
                utility: (0..k).map(|kk| vec![coefficient(p.throughput[kk].0, p.a), coefficient(p.throughput[kk].1, p.b)]).collect(),
            }));
        }
        let (mut x, _) = lp::max_min(self.name(), input.jobs.len(), &entries, input.capacity, self.method)?;
        if std::env::var("ECOS_SERVER").is_ok() && self.packing {
            use std::io::{BufRead, Write};
            thread_local! { static SERVER: std::cell::RefCell<Option<(std::process::ChildStdin, std::io::BufReader<std::process::ChildStdout>)>> = const { std::cell::RefCell::new(None) }; }
            let jobs: Vec<serde_json::Value> = input.jobs.iter().map(|j| serde_json::json!({"id": j.id, "sf": j.scale_factor, "w": j.weight, "thr": j.throughput})).collect();
            let pairs: Vec<serde_json::Value> = input.pairs.iter().map(|p| serde_json::json!({"a": p.a, "b": p.b, "thr": p.throughput.iter().map(|t| [t.0, t.1]).collect::<Vec<_>>()})).collect();
            let doc = serde_json::json!({"capacity": input.capacity, "jobs": jobs, "pairs": pairs}).to_string();
            let answer = SERVER.with(|s| {
                let mut s = s.borrow_mut();
                if s.is_none() {
                    let mut child = std::process::Command::new("python3").arg("/tmp/ecos_server.py").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
                    *s = Some((child.stdin.take().unwrap(), std::io::BufReader::new(child.stdout.take().unwrap())));
                }
                let (i, o) = s.as_mut().unwrap();
                writeln!(i, "{doc}").unwrap();
                let mut line = String::new();
                o.read_line(&mut line).unwrap();
                line
            });
            let xe: Vec<Vec<f64>> = serde_json::from_str(&answer).unwrap();
            x = xe;
        }
        if let Ok(dir) = std::env::var("LP_DUMP") {
            static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let c = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let jobs: Vec<serde_json::Value> = input.jobs.iter().map(|j| serde_json::json!({"id": j.id, "sf": j.scale_factor, "w": j.weight, "thr": j.throughput})).collect();
            let pairs: Vec<serde_json::Value> = input.pairs.iter().map(|p| serde_json::json!({"a": p.a, "b": p.b, "thr": p.throughput.iter().map(|t| [t.0, t.1]).collect::<Vec<_>>()})).collect();
            let doc = serde_json::json!({"capacity": input.capacity, "jobs": jobs, "pairs": pairs, "x": x});
            let _ = std::fs::write(format!("{dir}/lp{c}.json"), doc.to_string());
        }
        let pairs = x.split_off(input.jobs.len());
        Ok(Allocation { jobs: x, pairs })
    }
}
