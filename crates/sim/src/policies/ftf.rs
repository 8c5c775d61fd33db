//! Finish-time fairness (`ftf`): Gavel's `finish_time_fairness_perf`, after Themis (Mahajan et
//! al., "Themis: Fair and Efficient GPU Cluster Scheduling", NSDI 2020).
//!
//! Gavel's formulation (commit c4fa400, `scheduler/policies/finish_time_fairness.py`): minimize
//! max over jobs i of
//!
//! ```text
//! rho_i(x) = (t_i + R_i / (sum_k T[i][k] x[i][k])) / (C_i + R_i / I_i)
//! ```
//!
//! with t_i the time since arrival, R_i the steps left, I_i the isolated throughput (the equal
//! 1/m share: `x_iso[i][k] = n_k / (m sf_i)`, scaled down to sum to 1) and C_i the cumulative
//! isolated time: at each allocation, C_i grows by (steps run since the previous allocation) /
//! (I_i of the previous allocation). Constraints are those of max-min fairness (rows <= 1,
//! capacity per type).
//!
//! Gavel hands this convex program to ECOS. Here it is solved up to a tolerance through the
//! max-min LP ([`lp`]): rho_i(x) <= rho holds iff `sum_k T[i][k] x[i][k] >= L_i(rho)` =
//! R_i / (rho D_i - t_i) (D_i the denominator, rho D_i > t_i), so rho is feasible iff the max-min
//! LP with utilities `T[i][k]` / L_i(rho) reaches 1. Starting from the isolated allocation's rho,
//! each LP at the current bound yields an allocation whose own max rho_i is a better bound
//! (a Dinkelbach-type iteration); a handful of LPs per allocation reach [`TOLERANCE`].

use std::collections::HashMap;

use super::super::SimError;
use super::super::gavel::{Allocation, AllocationInput, AllocationPolicy};
use super::lp::{self, Entry, Method};

/// Relative gap between the bounds on the optimal max rho at which bisection stops.
pub const TOLERANCE: f64 = 1e-3;

/// Finish-time fairness with Gavel's isolated-time bookkeeping.
#[derive(Debug, Clone)]
pub struct FinishTimeFairness {
    method: Method,
    cumulative: HashMap<usize, f64>,
    /// Per job: (steps left, isolated throughput) at the previous allocation.
    previous: HashMap<usize, (f64, f64)>,
}

impl FinishTimeFairness {
    /// A finish-time fairness policy whose LPs use `method`.
    pub fn new(method: Method) -> FinishTimeFairness {
        FinishTimeFairness {
            method,
            cumulative: HashMap::new(),
            previous: HashMap::new(),
        }
    }
}

/// Isolated throughput of a job under an equal 1/m share, rows scaled down to at most 1.
pub fn isolated_throughput(
    throughput: &[f64],
    scale_factor: u32,
    capacity: &[u32],
    m: usize,
) -> f64 {
    let x: Vec<f64> = capacity
        .iter()
        .map(|&n| f64::from(n) / m as f64 / f64::from(scale_factor))
        .collect();
    let sum: f64 = x.iter().sum();
    let norm = sum.max(1.0);
    throughput.iter().zip(&x).map(|(t, xi)| t * xi / norm).sum()
}

impl AllocationPolicy for FinishTimeFairness {
    fn name(&self) -> &'static str {
        "ftf"
    }

    fn allocate(&mut self, input: &AllocationInput<'_>) -> Result<Allocation, SimError> {
        let k = input.capacity.len();
        let m = input.jobs.len();
        if m == 0 {
            self.previous.clear();
            return Ok(Allocation::default());
        }
        let isolated: Vec<f64> = input
            .jobs
            .iter()
            .map(|j| isolated_throughput(&j.throughput, j.scale_factor, input.capacity, m))
            .collect();
        let mut since = Vec::with_capacity(m);
        let mut denominator = Vec::with_capacity(m);
        for (j, &iso) in input.jobs.iter().zip(&isolated) {
            let c = self.cumulative.entry(j.id).or_insert(0.0);
            if let Some(&(left, prev_iso)) = self.previous.get(&j.id)
                && prev_iso > 0.0
            {
                *c += (left - j.remaining_steps) / prev_iso;
            }
            since.push(j.since_arrival);
            denominator.push(if iso > 0.0 {
                *c + j.remaining_steps / iso
            } else {
                f64::INFINITY
            });
        }
        self.previous = input
            .jobs
            .iter()
            .zip(&isolated)
            .map(|(j, &iso)| (j.id, (j.remaining_steps, iso)))
            .collect();

        let rho_of = |x: &[Vec<f64>]| -> f64 {
            input
                .jobs
                .iter()
                .enumerate()
                .map(|(i, j)| {
                    let y: f64 = j.throughput.iter().zip(&x[i]).map(|(t, v)| t * v).sum();
                    if y <= 0.0 {
                        f64::INFINITY
                    } else {
                        (since[i] + j.remaining_steps / y) / denominator[i]
                    }
                })
                .fold(0.0, f64::max)
        };
        // Upper bound: the isolated allocation is feasible.
        let mut best: Vec<Vec<f64>> = input
            .jobs
            .iter()
            .map(|j| {
                let x: Vec<f64> = input
                    .capacity
                    .iter()
                    .map(|&n| f64::from(n) / m as f64 / f64::from(j.scale_factor))
                    .collect();
                let s: f64 = x.iter().sum::<f64>().max(1.0);
                x.into_iter().map(|v| v / s).collect()
            })
            .collect();
        let mut hi = rho_of(&best);
        // Dinkelbach-type iteration for min-max ratios (Crouzeix, Ferland and Schaible, "An
        // algorithm for generalized fractional programs", JOTA 47, 1985): solve the max-min LP
        // at the best known rho; when it reaches z > 1 every job beats rho, and the allocation's
        // own max rho is a strictly better bound. Stop when the bound moves by less than the
        // tolerance (or the LP finds no slack: rho is optimal).
        let mut iterations = 0;
        while hi.is_finite() && iterations < 50 {
            iterations += 1;
            let entries: Vec<Entry> = input
                .jobs
                .iter()
                .enumerate()
                .map(|(i, j)| {
                    let need = j.remaining_steps / (hi * denominator[i] - since[i]);
                    Entry::single(
                        i,
                        f64::from(j.scale_factor),
                        j.throughput.iter().map(|t| t / need),
                    )
                })
                .collect();
            let (x, z) = lp::MaxMin {
                jobs: m,
                entries: &entries,
                capacity: input.capacity,
            }
            .solve(self.name(), self.method)?;
            let r = rho_of(&x);
            if r < hi {
                let done = hi - r <= TOLERANCE * hi;
                hi = r;
                best = x;
                if done {
                    break;
                }
            } else {
                break;
            }
            if z <= 1.0 + TOLERANCE {
                break;
            }
        }
        Ok(Allocation {
            jobs: best,
            pairs: vec![vec![0.0; k]; input.pairs.len()],
        })
    }
}
