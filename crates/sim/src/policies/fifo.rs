//! Gavel's `fifo_perf`: jobs in arrival order each take the fastest GPU type that still has room.
//!
//! Follows `FIFOPolicy` in `perf` mode (stanford-futuredata/gavel, `scheduler/policies/fifo.py`):
//! the allocation is rebuilt from scratch at every reset; the queue is the active jobs by
//! increasing id; each job gets X = 1 on the type of largest solo throughput among the types
//! with at least its scale factor of GPUs left (ties to the type whose name sorts first, as
//! Gavel's sorted type list), until no type has room. O(n K) per allocation.

use super::super::SimError;
use super::super::gavel::{Allocation, AllocationInput, AllocationPolicy};

/// First in, first out onto the fastest free GPU type.
#[derive(Debug, Clone, Default)]
pub struct Fifo {
    type_names: Vec<String>,
}

impl Fifo {
    /// A FIFO policy; `type_names` (cluster order) decide ties between equally fast types.
    pub fn new(type_names: Vec<String>) -> Fifo {
        Fifo { type_names }
    }
}

impl AllocationPolicy for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }

    fn skips_zero_priority(&self) -> bool {
        true
    }

    fn allocate(&mut self, input: &AllocationInput<'_>) -> Result<Allocation, SimError> {
        let k = input.capacity.len();
        let mut free: Vec<u32> = input.capacity.to_vec();
        // Gavel scans worker types in sorted name order; the strict `>` below keeps the first.
        let mut order: Vec<usize> = (0..k).collect();
        order.sort_by(|&a, &b| {
            let name = |t: usize| self.type_names.get(t).map_or("", String::as_str);
            name(a).cmp(name(b))
        });
        let mut rows = vec![vec![0.0; k]; input.jobs.len()];
        for (row, job) in rows.iter_mut().zip(input.jobs) {
            if free.iter().all(|&f| f == 0) {
                break;
            }
            let mut best: Option<usize> = None;
            let mut best_thr = -1.0;
            for &t in &order {
                if free[t] > 0 && free[t] >= job.scale_factor && job.throughput[t] > best_thr {
                    best_thr = job.throughput[t];
                    best = Some(t);
                }
            }
            // Gavel stops at the first job that fits nowhere: FIFO lets no job jump the queue.
            let Some(t) = best else { break };
            row[t] = 1.0;
            free[t] -= job.scale_factor;
        }
        Ok(Allocation {
            jobs: rows,
            pairs: vec![vec![0.0; k]; input.pairs.len()],
        })
    }
}
