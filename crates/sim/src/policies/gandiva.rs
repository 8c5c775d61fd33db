//! Gandiva as Gavel models it: equal time shares, and random pairing when the cluster is
//! oversubscribed.
//!
//! Follows `GandivaPolicy` (stanford-futuredata/gavel, `scheduler/policies/gandiva.py`; after
//! Xiao et al., "Gandiva: Introspective Cluster Scheduling for Deep Learning", OSDI 2018):
//! - A pair formed earlier is kept while both jobs are active and its normalized packed
//!   throughput, summed over all GPU types (sum over types of shared / solo, both jobs), is at
//!   least 1; a pair that cannot run together on some type counts 0 and is dropped.
//! - When the jobs ask for no more GPUs than the cluster has, every job gets an equal share:
//!   `X[j][k]` = n_k / (m * sf_j), rows scaled down to sum to at most 1 (m jobs).
//! - Otherwise the jobs not in a kept pair are paired at random (as many draws as such jobs; a
//!   draw of two jobs with different scale factors is wasted), and the equal share is computed
//!   over the combinations (pairs and lone jobs).
//!
//! The draws use this crate's seeded ChaCha generator, not Python's, so a run pairs differently
//! from Gavel's even with the same seed. O(m + P) per allocation for m jobs and P pairs.

use std::collections::{BTreeMap, HashMap};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::super::SimError;
use super::super::gavel::{Allocation, AllocationInput, AllocationPolicy};

/// Gandiva's random packing with equal time shares.
#[derive(Debug, Clone)]
pub struct Gandiva {
    rng: ChaCha8Rng,
    /// job id -> partner id (both directions) for the pairs in use.
    partner: BTreeMap<usize, usize>,
}

impl Gandiva {
    /// A Gandiva policy drawing its pairs from `seed`.
    pub fn new(seed: u64) -> Gandiva {
        Gandiva {
            rng: ChaCha8Rng::seed_from_u64(seed),
            partner: BTreeMap::new(),
        }
    }
}

/// Sum over types of (shared / solo) of both jobs; 0 when the pair cannot share on some type.
fn normalized(input: &AllocationInput<'_>, pair: usize) -> f64 {
    let p = &input.pairs[pair];
    let (a, b) = (&input.jobs[p.a], &input.jobs[p.b]);
    let mut total = 0.0;
    for (k, &(ta, tb)) in p.throughput.iter().enumerate() {
        for (shared, solo) in [(ta, a.throughput[k]), (tb, b.throughput[k])] {
            if shared <= 0.0 || solo <= 0.0 {
                return 0.0;
            }
            total += shared / solo;
        }
    }
    total
}

/// The equal share of each type over `m` combinations for a combination of scale factor `sf`.
fn equal_row(capacity: &[u32], m: usize, sf: u32) -> Vec<f64> {
    let mut row: Vec<f64> = capacity
        .iter()
        .map(|&n| f64::from(n) / m as f64 / f64::from(sf))
        .collect();
    let sum: f64 = row.iter().sum();
    if sum > 1.0 {
        for x in &mut row {
            *x /= sum;
        }
    }
    row
}

impl AllocationPolicy for Gandiva {
    fn name(&self) -> &'static str {
        "gandiva"
    }

    fn packing(&self) -> bool {
        true
    }

    fn allocate(&mut self, input: &AllocationInput<'_>) -> Result<Allocation, SimError> {
        let k = input.capacity.len();
        let index: HashMap<usize, usize> = input
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| (j.id, i))
            .collect();
        let pair_of: HashMap<(usize, usize), usize> = input
            .pairs
            .iter()
            .enumerate()
            .map(|(i, p)| ((input.jobs[p.a].id, input.jobs[p.b].id), i))
            .collect();
        // Keep pairs whose jobs are both active and that pack well enough.
        let mut kept: BTreeMap<usize, usize> = BTreeMap::new();
        for (&job, &other) in &self.partner {
            let key = (job.min(other), job.max(other));
            if let Some(&p) = pair_of.get(&key)
                && index.contains_key(&job)
                && index.contains_key(&other)
                && normalized(input, p) >= 1.0
            {
                kept.insert(job, other);
            }
        }
        self.partner = kept;

        let requested: u64 = input.jobs.iter().map(|j| u64::from(j.scale_factor)).sum();
        let available: u64 = input.capacity.iter().map(|&c| u64::from(c)).sum();
        let mut jobs = vec![vec![0.0; k]; input.jobs.len()];
        let mut pairs = vec![vec![0.0; k]; input.pairs.len()];
        if requested <= available {
            let m = input.jobs.len();
            for (row, j) in jobs.iter_mut().zip(input.jobs) {
                *row = equal_row(input.capacity, m, j.scale_factor);
            }
            return Ok(Allocation { jobs, pairs });
        }

        let mut pool: Vec<usize> = input
            .jobs
            .iter()
            .map(|j| j.id)
            .filter(|id| !self.partner.contains_key(id))
            .collect();
        let draws = pool.len();
        let mut i = 0;
        while pool.len() > 1 && i < draws {
            i += 1;
            let x = self.rng.random_range(0..pool.len());
            let mut y = self.rng.random_range(0..pool.len() - 1);
            if y >= x {
                y += 1;
            }
            let (a, b) = (pool[x], pool[y]);
            if input.jobs[index[&a]].scale_factor != input.jobs[index[&b]].scale_factor {
                continue;
            }
            pool.retain(|&j| j != a && j != b);
            self.partner.insert(a, b);
            self.partner.insert(b, a);
        }
        let mut combos: Vec<(usize, Option<usize>)> =
            pool.iter().map(|&j| (index[&j], None)).collect();
        for (&a, &b) in &self.partner {
            if a < b
                && let Some(&p) = pair_of.get(&(a, b))
            {
                combos.push((index[&a], Some(p)));
            }
        }
        let m = combos.len();
        for (job, pair) in combos {
            let row = equal_row(input.capacity, m, input.jobs[job].scale_factor);
            match pair {
                None => jobs[job] = row,
                Some(p) => pairs[p] = row,
            }
        }
        Ok(Allocation { jobs, pairs })
    }
}
