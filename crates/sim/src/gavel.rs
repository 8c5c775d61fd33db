//! Gavel's round mechanism: how an allocation (fractions of time per job and GPU type) becomes
//! the placements of each round.
//!
//! Follows `Scheduler._update_priorities`, `_reset_time_run_so_far`,
//! `_schedule_jobs_on_workers(_helper)` and `_done_callback` of Gavel's simulator
//! (stanford-futuredata/gavel at commit c4fa400, `scheduler/scheduler.py`; Narayanan et al.,
//! "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads", OSDI 2020,
//! section 5), including its quirks, because they shape the numbers it reports:
//!
//! - The allocation X is recomputed only when jobs arrived or finished since the last time *and*
//!   at least `reset_seconds` (1,920 s) have passed since the last reset (or the last reset
//!   happened at time 0). Jobs that arrive in between have no allocation; the greedy fill still
//!   reserves GPUs for them but they do not run (the GPUs idle).
//! - Every job (and, with space sharing, every pair of jobs) carries per GPU type the time it ran
//!   since the last reset, starting with a credit of half a round; the type's total is the sum
//!   over jobs. priority = X / (job's time / type's total), X * 10^9 for a job with no time on a
//!   type whose total is 0, and 0 when X = 0 or the job cannot run there.
//! - At a reset, deficit += X_old * elapsed - time received (the credit excluded), and all times
//!   go back to the credit.
//! - Each round, per type in fill order, entries are sorted by (priority, deficit, X) descending
//!   (stable, ties in insertion order); the types' queues are concatenated and walked once: an
//!   entry is placed on its type when it fits, none of its jobs is placed yet and its throughput
//!   there is positive (FIFO also skips priority 0). Leftover GPUs thus go to entries of priority
//!   0: the mechanism is work-conserving on the fastest types first.
//! - A placement keeps its previous GPUs when they are free (lease extension); the execution time
//!   credited to an entry is its finish minus the end of the previous round.
//! - With space sharing, the allocation sees the measured pair throughputs, as in Gavel's
//!   default runs; with Gavel's throughput estimation on ([`GavelRounds::with_pair_estimates`])
//!   it sees estimates until a pair has run on a type. Placed jobs always run at the measured
//!   throughputs.
//!
//! Cost per round: O(E K + V log E) for E entries (jobs, plus pairs with space sharing), K types
//! and V entries visited before the types are full,
//! plus the allocation policy's solve at resets.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use super::engine::{GpuGroup, RoundReport, Scheduler, SimState};
use super::policies::PairEstimation;
use super::{SimError, ThroughputTable};

/// A job or a pair of jobs, as Gavel's `JobIdPair`: (smaller id, larger id).
pub type Combo = (usize, Option<usize>);

/// One active job as an allocation policy sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct AllocationJob {
    /// Job id.
    pub id: usize,
    /// GPUs per job.
    pub scale_factor: u32,
    /// Priority weight.
    pub weight: f64,
    /// Solo steps/s per cluster type.
    pub throughput: Vec<f64>,
    /// Steps left.
    pub remaining_steps: f64,
    /// Seconds since the job arrived.
    pub since_arrival: f64,
}

/// A pair of active jobs (same scale factor) that may share GPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct AllocationPair {
    /// Index of the first job in [`AllocationInput::jobs`] (the smaller id).
    pub a: usize,
    /// Index of the second job.
    pub b: usize,
    /// (a's, b's) steps/s per cluster type when co-located; (0, 0) where they cannot share.
    pub throughput: Vec<(f64, f64)>,
}

/// The input of an allocation policy.
#[derive(Debug, Clone, Copy)]
pub struct AllocationInput<'a> {
    /// Active jobs, by increasing id.
    pub jobs: &'a [AllocationJob],
    /// Pairs (only for policies with [`AllocationPolicy::packing`]).
    pub pairs: &'a [AllocationPair],
    /// GPUs per cluster type.
    pub capacity: &'a [u32],
}

/// Fractions of time per entry and type, aligned with the input's jobs and pairs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Allocation {
    /// `X[job][type]`.
    pub jobs: Vec<Vec<f64>>,
    /// `X[pair][type]`.
    pub pairs: Vec<Vec<f64>>,
}

/// A Gavel allocation policy.
pub trait AllocationPolicy {
    /// The policy's name.
    fn name(&self) -> &'static str;
    /// Whether pairs of jobs are entries of the allocation (space sharing).
    fn packing(&self) -> bool {
        false
    }
    /// Whether entries of priority 0 are never placed (Gavel does this for FIFO only).
    fn skips_zero_priority(&self) -> bool {
        false
    }
    /// Computes the allocation.
    fn allocate(&mut self, input: &AllocationInput<'_>) -> Result<Allocation, SimError>;
}

/// Order of the per-type queues: (priority, deficit, X) descending, ties to the earlier entry
/// (Python's stable sort in reverse keeps insertion order among equal keys).
#[derive(Debug, Clone, Copy)]
struct QueueKey {
    priority: f64,
    deficit: f64,
    allocation: f64,
    index: usize,
}

impl PartialEq for QueueKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for QueueKey {}

impl PartialOrd for QueueKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for QueueKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority
            .total_cmp(&other.priority)
            .then_with(|| self.deficit.total_cmp(&other.deficit))
            .then_with(|| self.allocation.total_cmp(&other.allocation))
            .then_with(|| other.index.cmp(&self.index))
    }
}

#[derive(Debug, Clone)]
struct Entry {
    combo: Combo,
    deficit: Vec<f64>,
    time: Vec<f64>,
    /// Steps/s per type of the first and second job (second 0 for a single job), as the
    /// scheduler believes them (estimated for pairs that never ran, see [`Estimator`]).
    throughput: Vec<(f64, f64)>,
    /// What the jobs really run at.
    oracle: Vec<(f64, f64)>,
    /// X per type from the latest allocation; `None` when the entry did not exist then.
    allocation: Option<Vec<f64>>,
    /// Type and GPUs (offset and length in [`GavelRounds`]'s arena) of the previous round, when
    /// the entry ran in it.
    previous: Option<(usize, usize, usize)>,
}

impl Entry {
    fn runs_on(&self, k: usize) -> bool {
        let (a, b) = self.throughput[k];
        match self.combo.1 {
            None => a > 0.0,
            Some(_) => a > 0.0 && b > 0.0,
        }
    }

    /// Gavel's priority on type `k` whose entries have run `total` seconds since the last
    /// reset: X / (share of the type's time), X * 10^9 with no time yet, 0 when X = 0 or the
    /// entry cannot run there. Computed where the queue is built (not stored per round): with
    /// space sharing there are thousands of entries and only the queued ones need it.
    fn priority(&self, k: usize, total: f64) -> f64 {
        let fraction = if total == 0.0 {
            0.0
        } else {
            self.time[k] / total
        };
        match &self.allocation {
            None => 0.0,
            Some(x) if x[k] == 0.0 || !self.runs_on(k) => 0.0,
            Some(x) if fraction > 0.0 => x[k] / fraction,
            Some(x) => x[k] * 1e9,
        }
    }
}

/// Gavel's throughput estimator (`ThroughputEstimator`, `scheduler/throughput_estimator.py`),
/// which its scheduler turns on for space sharing when `profiling_percentage` P < 1 or
/// `num_reference_models` N < the number of job types (both are at their no-estimation defaults,
/// 1.0 and all 26 job types, in Gavel's drivers and in the runs of `data/gavel-ref/`):
///
/// - At start, N reference job types are drawn without replacement from the single-GPU job types.
///   Their normalized co-located throughputs, pair(r, s)[0] / solo(r) for every GPU type and
///   reference s, are known ("profiled offline"): an N x (K N) matrix over the K GPU types of the
///   throughput table, sorted by name as Gavel sorts them.
/// - An arriving job of type t is profiled against each (GPU type, reference) with probability P,
///   which reveals t's normalized throughput there. When something is missing, the new row is
///   completed by probabilistic matrix factorization ([`pmf_solve`]) together with the reference
///   rows, and the estimates are clipped to [0, 1]; the job's reference is the reference row
///   nearest to it in cosine distance (the first on ties), or a reference drawn uniformly at
///   random when the completed row is all zero (e.g. nothing was profiled: the factorization then
///   gives exactly 0 for the row).
/// - The scheduler believes a pair of jobs a, b with references A, B runs at
///   (pair(A, B) / solo(A) * solo(a), pair(B, A) / solo(B) * solo(b)) until the pair has run on a
///   type, after which it knows the measured value there (`Scheduler._update_throughput`).
///
/// Differences from Gavel: the draws come from ChaCha8 (references, profiling, random matches)
/// and a second ChaCha8 stream (the factorization's starting point), not Python's `random` and
/// numpy's global generator, so a run matches Gavel's jobs to references differently; only
/// single-GPU jobs are estimated (Gavel asserts that every job is single-GPU when estimating;
/// here pairs of multi-GPU jobs see their measured throughputs).
#[derive(Debug, Clone)]
struct Estimator {
    settings: PairEstimation,
    rng: ChaCha8Rng,
    /// Starting points of the matrix factorization (numpy's generator in Gavel).
    pmf_rng: ChaCha8Rng,
    /// Built at the first arrival, when the throughput table is known.
    references: Option<References>,
    /// Job id -> its reference job type (table index).
    reference: HashMap<usize, usize>,
}

/// The reference job types and their offline-profiled normalized throughputs.
#[derive(Debug, Clone)]
struct References {
    /// Reference job types (table indices), increasing.
    types: Vec<usize>,
    /// Worker types (table indices) sorted by name.
    workers: Vec<usize>,
    /// Row j, column (worker i, reference s): normalized throughput of reference j beside s on
    /// worker i, row-major, N x (K N).
    matrix: Vec<f64>,
}

impl References {
    /// The offline-profiled rows of the reference job types `types` (table indices, increasing).
    fn new(table: &ThroughputTable, types: Vec<usize>) -> References {
        let mut workers: Vec<usize> = (0..table.workers().len()).collect();
        workers.sort_by(|&a, &b| table.workers()[a].cmp(&table.workers()[b]));
        let mut references = References {
            types,
            workers,
            matrix: Vec::new(),
        };
        let matrix = references
            .types
            .iter()
            .flat_map(|&r| (0..references.columns()).map(move |c| (r, c)))
            .map(|(r, c)| references.profile(table, r, c))
            .collect();
        references.matrix = matrix;
        references
    }

    /// Columns of a row: one per (worker, reference).
    fn columns(&self) -> usize {
        self.workers.len() * self.types.len()
    }

    /// Cell `c` of job type `t`'s row: its normalized throughput beside reference c mod N on
    /// worker c / N (Gavel's layout).
    fn profile(&self, table: &ThroughputTable, t: usize, c: usize) -> f64 {
        let n = self.types.len();
        normalized(table, self.workers[c / n], t, self.types[c % n])
    }

    /// The reference type whose row is nearest to `row` in cosine distance, the first on ties
    /// (Gavel's stable sort); `None` when `row` is all zero.
    fn nearest(&self, row: &[f64]) -> Option<usize> {
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm == 0.0 {
            return None;
        }
        let columns = self.columns();
        let mut best = (f64::INFINITY, None);
        for (j, &r) in self.types.iter().enumerate() {
            let other = &self.matrix[j * columns..(j + 1) * columns];
            let dot: f64 = other.iter().zip(row).map(|(a, b)| a * b).sum();
            let other_norm = other.iter().map(|v| v * v).sum::<f64>().sqrt();
            let distance = 1.0 - dot / (other_norm * norm);
            // A reference row of zeros has no direction (NaN): never the nearest.
            if distance < best.0 {
                best = (distance, Some(r));
            }
        }
        best.1.or(self.types.first().copied())
    }
}

/// A job's co-located throughput as a share of its solo one on worker `w`, in [0, 1] (0 when
/// the pair cannot share or the job does not run there).
fn normalized(table: &ThroughputTable, w: usize, job: usize, other: usize) -> f64 {
    let solo = table.solo(w, job);
    if solo > 0.0 {
        (table.pair(w, job, other).0 / solo).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

impl Estimator {
    fn new(settings: PairEstimation, seed: u64) -> Estimator {
        let mut pmf_rng = ChaCha8Rng::seed_from_u64(seed);
        pmf_rng.set_stream(1);
        Estimator {
            settings,
            rng: ChaCha8Rng::seed_from_u64(seed),
            pmf_rng,
            references: None,
            reference: HashMap::new(),
        }
    }

    /// Draws the reference job types once (Gavel does it when the scheduler starts).
    fn draw_references(&mut self, table: &ThroughputTable) -> Result<(), SimError> {
        if self.references.is_some() {
            return Ok(());
        }
        let singles: Vec<usize> = (0..table.job_types().len())
            .filter(|&j| table.job_types()[j].scale_factor == 1)
            .collect();
        let n = self.settings.reference_models();
        if n == 0 || n > singles.len() {
            return Err(SimError::Setting {
                setting: "reference_models",
                rule: "must be between 1 and the number of single-GPU job types",
                got: format!("{n}, with {} job types", singles.len()),
            });
        }
        let mut picked = rand::seq::index::sample(&mut self.rng, singles.len(), n).into_vec();
        picked.sort_unstable();
        let types = picked.into_iter().map(|i| singles[i]).collect();
        self.references = Some(References::new(table, types));
        Ok(())
    }

    fn arrive(&mut self, id: usize, state: &SimState<'_>) -> Result<(), SimError> {
        if state.jobs[id].scale_factor != 1 {
            return Ok(());
        }
        self.draw_references(state.table)?;
        let Some(refs) = self.references.as_ref() else {
            return Ok(());
        };
        let t = state.jobs[id].job_type;
        let (n, columns) = (refs.types.len(), refs.columns());
        // Profiling: each (worker, reference) cell revealed with probability P.
        let p = self.settings.profiling_percentage();
        let mut row = vec![0.0; columns];
        let mut known = vec![false; columns];
        for (c, (cell, seen)) in row.iter_mut().zip(&mut known).enumerate() {
            if self.rng.random::<f64>() <= p {
                *cell = refs.profile(state.table, t, c);
                *seen = true;
            }
        }
        // Nothing profiled leaves the row at 0 (the factorization would give exactly 0 too).
        if known.iter().any(|&k| k) && !known.iter().all(|&k| k) {
            let mut a = refs.matrix.clone();
            a.extend_from_slice(&row);
            let mut mask = vec![true; n * columns];
            mask.extend_from_slice(&known);
            let x = pmf_solve(&a, &mask, n + 1, columns, &mut self.pmf_rng);
            for c in 0..columns {
                if !known[c] {
                    row[c] = x[n * columns + c].clamp(0.0, 1.0);
                }
            }
        }
        let chosen = match refs.nearest(&row) {
            Some(r) => r,
            None => refs.types[self.rng.random_range(0..n)],
        };
        self.reference.insert(id, chosen);
        Ok(())
    }

    /// The believed throughputs of jobs a, b sharing type k, if both have references.
    fn pair(&self, a: usize, b: usize, k: usize, state: &SimState<'_>) -> Option<(f64, f64)> {
        let (ra, rb) = (*self.reference.get(&a)?, *self.reference.get(&b)?);
        let w = state.cluster.types[k].worker;
        // The reference pair's slowdown, applied to the job's own solo throughput.
        Some((
            normalized(state.table, w, ra, rb) * state.solo(a, k),
            normalized(state.table, w, rb, ra) * state.solo(b, k),
        ))
    }
}

/// `matrix_completion.pmf_solve(A, mask, k=10, mu=1e-2)` as Gavel calls it: probabilistic matrix
/// factorization by alternating least squares (Salakhutdinov and Mnih, NIPS 2008; Hu, Koren and
/// Volinsky, ICDM 2008). A (m x n, row-major) is approximated by U V^T with k = 10 factors: from
/// standard normal U and V, each row of U solves (V^T C_i V + mu I) u = V^T C_i a_i over the
/// known cells C_i of its row, then each row of V likewise over its column, until the mean change
/// of U V^T, ||X - X_prev||_F / m / n, is below 1e-3 (at most 100 sweeps). Returns X = U V^T.
///
/// Cost per sweep O(m n k^2 + (m + n) k^3); Gavel's sizes are m <= 27, n <= 78.
fn pmf_solve(a: &[f64], mask: &[bool], m: usize, n: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    const K: usize = 10;
    const MU: f64 = 1e-2;
    const EPSILON: f64 = 1e-3;
    const SWEEPS: usize = 100;
    let mut normal = || rng.sample::<f64, _>(StandardNormal);
    let mut u: Vec<f64> = (0..m * K).map(|_| normal()).collect();
    let mut v: Vec<f64> = (0..n * K).map(|_| normal()).collect();
    let product = |u: &[f64], v: &[f64]| -> Vec<f64> {
        let mut x = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                x[i * n + j] = (0..K).map(|f| u[i * K + f] * v[j * K + f]).sum();
            }
        }
        x
    };
    // One row's factors from its known cells, given the other side's factors.
    let solve = |other: &[f64], cells: &mut dyn Iterator<Item = (usize, f64)>| -> [f64; K] {
        let mut lhs = [[0.0; K]; K];
        let mut rhs = [0.0; K];
        for (o, value) in cells {
            let f = &other[o * K..(o + 1) * K];
            for p in 0..K {
                rhs[p] += f[p] * value;
                for q in 0..K {
                    lhs[p][q] += f[p] * f[q];
                }
            }
        }
        for (p, row) in lhs.iter_mut().enumerate() {
            row[p] += MU;
        }
        cholesky_solve(lhs, rhs)
    };
    let mut x = product(&u, &v);
    for _ in 0..SWEEPS {
        for i in 0..m {
            let mut cells = (0..n)
                .filter(|&j| mask[i * n + j])
                .map(|j| (j, a[i * n + j]));
            let f = solve(&v, &mut cells);
            u[i * K..(i + 1) * K].copy_from_slice(&f);
        }
        for j in 0..n {
            let mut cells = (0..m)
                .filter(|&i| mask[i * n + j])
                .map(|i| (i, a[i * n + j]));
            let f = solve(&u, &mut cells);
            v[j * K..(j + 1) * K].copy_from_slice(&f);
        }
        let next = product(&u, &v);
        let change = next
            .iter()
            .zip(&x)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt();
        x = next;
        if change / ((m * n) as f64) < EPSILON {
            break;
        }
    }
    x
}

/// Solves L L^T y = b for a symmetric positive definite matrix (here V^T C V + mu I, mu > 0, so
/// every pivot is at least mu).
fn cholesky_solve<const K: usize>(mut a: [[f64; K]; K], mut b: [f64; K]) -> [f64; K] {
    let dot = |x: &[f64], y: &[f64]| -> f64 { x.iter().zip(y).map(|(p, q)| p * q).sum() };
    // A = L L^T, L stored in the lower triangle of `a`.
    for j in 0..K {
        let d = (a[j][j] - dot(&a[j][..j], &a[j][..j]))
            .max(f64::MIN_POSITIVE)
            .sqrt();
        a[j][j] = d;
        for i in j + 1..K {
            a[i][j] = (a[i][j] - dot(&a[i][..j], &a[j][..j])) / d;
        }
    }
    // L y = b, then L^T x = y.
    for i in 0..K {
        b[i] = (b[i] - dot(&a[i][..i], &b[..i])) / a[i][i];
    }
    for i in (0..K).rev() {
        let s: f64 = (i + 1..K).map(|p| a[p][i] * b[p]).sum();
        b[i] = (b[i] - s) / a[i][i];
    }
    b
}

/// Buffers reused from round to round (the simulator plans thousands of rounds).
#[derive(Debug, Default)]
struct Scratch {
    placed: Vec<bool>,
    touched: Vec<usize>,
    left: Vec<u32>,
    keys: Vec<QueueKey>,
    chosen: Vec<Vec<(usize, u32)>>,
    taken: Vec<bool>,
    gpus_of: Vec<Option<(usize, usize)>>,
    arena: Vec<u32>,
    next_previous: Vec<(usize, usize, usize, usize)>,
}

impl Scratch {
    fn prepare(&mut self, jobs: usize, types: usize) {
        if self.placed.len() < jobs {
            self.placed.resize(jobs, false);
        }
        self.chosen.resize_with(types, Vec::new);
    }
}

/// Gavel's round mechanism around an allocation policy.
#[derive(Debug)]
pub struct GavelRounds<P> {
    policy: P,
    reset_seconds: f64,
    credit: f64,
    types: usize,
    entries: Vec<Entry>,
    worker_time: Vec<f64>,
    last_reset: f64,
    need_update: bool,
    /// Entry index of each placement of the round being run, in placement order.
    planned: Vec<usize>,
    /// GPU indices of the previous round's placements.
    arena: Vec<u32>,
    /// Indices of the entries whose `previous` is set (placed in the previous round, still
    /// active), so that a round touches those rather than every entry.
    with_previous: Vec<usize>,
    scratch: Scratch,
    previous_end: Option<f64>,
    estimator: Option<Estimator>,
    solver_seconds: f64,
    extensions: u64,
    opportunities: u64,
}

impl<P: AllocationPolicy> GavelRounds<P> {
    /// Wraps `policy` for a cluster of `types` GPU types, rounds of `round_seconds` and resets at
    /// least `reset_seconds` apart.
    pub fn new(policy: P, types: usize, round_seconds: f64, reset_seconds: f64) -> GavelRounds<P> {
        GavelRounds {
            policy,
            reset_seconds,
            credit: round_seconds / 2.0,
            types,
            entries: Vec::new(),
            worker_time: vec![0.0; types],
            last_reset: 0.0,
            need_update: true,
            planned: Vec::new(),
            arena: Vec::new(),
            with_previous: Vec::new(),
            scratch: Scratch::default(),
            previous_end: None,
            estimator: None,
            solver_seconds: 0.0,
            extensions: 0,
            opportunities: 0,
        }
    }

    /// Estimates the co-located throughputs of pairs that have not run yet as Gavel's scheduler
    /// does when its throughput estimation is on (`settings`; draws seeded with `seed`): each
    /// arriving job is matched to a reference job type from what profiling it reveals, and a
    /// pair that has not run on a type is believed to run at its references' measured slowdowns
    /// applied to its own solo throughputs (the module's notes). The reference count is checked
    /// against the throughput table at the first arrival.
    pub fn with_pair_estimates(mut self, settings: PairEstimation, seed: u64) -> GavelRounds<P> {
        self.estimator = Some(Estimator::new(settings, seed));
        self
    }

    fn reset(&mut self, now: f64) {
        let elapsed = now - self.last_reset;
        for k in 0..self.types {
            self.worker_time[k] = 0.0;
            for e in &mut self.entries {
                let received = e.time[k] - self.credit;
                let owed = e.allocation.as_ref().map_or(0.0, |x| x[k] * elapsed);
                e.deficit[k] += owed - received;
                e.time[k] = self.credit;
                self.worker_time[k] += self.credit;
            }
        }
        self.last_reset = now;
    }

    fn compute_allocation(&mut self, state: &SimState<'_>) -> Result<(), SimError> {
        let mut ids: Vec<usize> = state.active.to_vec();
        ids.sort_unstable();
        let jobs: Vec<AllocationJob> = ids
            .iter()
            .map(|&id| AllocationJob {
                id,
                scale_factor: state.jobs[id].scale_factor,
                weight: state.jobs[id].weight,
                throughput: (0..self.types).map(|k| state.solo(id, k)).collect(),
                remaining_steps: state.remaining(id),
                since_arrival: state.now - state.jobs[id].arrival,
            })
            .collect();
        let mut position = vec![usize::MAX; state.jobs.len()];
        for (i, &id) in ids.iter().enumerate() {
            position[id] = i;
        }
        let mut pairs: Vec<AllocationPair> = Vec::new();
        let mut pair_entries: Vec<usize> = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            if let (a, Some(b)) = e.combo {
                pairs.push(AllocationPair {
                    a: position[a],
                    b: position[b],
                    throughput: e.throughput.clone(),
                });
                pair_entries.push(i);
            }
        }
        let capacity: Vec<u32> = state.cluster.counts();
        let input = AllocationInput {
            jobs: &jobs,
            pairs: &pairs,
            capacity: &capacity,
        };
        let start = Instant::now();
        let x = self.policy.allocate(&input)?;
        self.solver_seconds += start.elapsed().as_secs_f64();
        let mut rows: Vec<Option<Vec<f64>>> = x.jobs.into_iter().map(Some).collect();
        for e in &mut self.entries {
            e.allocation = match e.combo {
                (a, None) => rows.get_mut(position[a]).and_then(Option::take),
                _ => None,
            };
        }
        for (row, at) in x.pairs.into_iter().zip(pair_entries) {
            self.entries[at].allocation = Some(row);
        }
        Ok(())
    }

    /// Resets and recomputes the allocation when jobs came or went and the reset period has
    /// passed (the priorities follow from the times when the queues are built).
    fn update_allocation(&mut self, state: &SimState<'_>) -> Result<(), SimError> {
        let due = state.now - self.last_reset >= self.reset_seconds || self.last_reset == 0.0;
        if self.need_update && due {
            self.reset(state.now);
            self.compute_allocation(state)?;
            self.need_update = false;
        }
        Ok(())
    }

    /// The greedy fill of Gavel's `_schedule_jobs_on_workers_helper`: per GPU type in fill
    /// order, the free entries by priority (a lazy max-heap), each taken while the type has GPUs
    /// for its scale factor; the chosen entries go to `s.chosen`. O(entries log entries) a type.
    fn fill(&self, s: &mut Scratch, state: &SimState<'_>) {
        let types = self.types;
        let skip_zero = self.policy.skips_zero_priority();
        // Per type a sorted queue, the queues walked in fill order.
        s.left.clear();
        s.left.extend(state.cluster.types.iter().map(|t| t.count));
        let mut unplaced = state.active.len();
        for k in 0..types {
            if unplaced == 0 {
                break;
            }
            // A lazy max-heap instead of a full sort: the walk usually stops long before the
            // end of the queue (the type is full, or every job is placed).
            let entries = &self.entries;
            let total = self.worker_time[k];
            let mut keys = std::mem::take(&mut s.keys);
            keys.clear();
            keys.extend(entries.iter().enumerate().filter_map(|(i, e)| {
                let free = !s.placed[e.combo.0] && e.combo.1.is_none_or(|b| !s.placed[b]);
                if !free || !e.runs_on(k) {
                    return None;
                }
                let priority = e.priority(k, total);
                if skip_zero && priority <= 0.0 {
                    return None;
                }
                Some(QueueKey {
                    priority,
                    deficit: e.deficit[k],
                    allocation: e.allocation.as_ref().map_or(0.0, |x| x[k]),
                    index: i,
                })
            }));
            let mut queue = BinaryHeap::from(keys);
            while s.left[k] > 0 && unplaced > 0 {
                let Some(QueueKey { index: i, .. }) = queue.pop() else {
                    break;
                };
                let (a, b) = entries[i].combo;
                if s.placed[a] || b.is_some_and(|b| s.placed[b]) {
                    continue;
                }
                let sf = state.jobs[a].scale_factor;
                if sf > s.left[k] {
                    continue;
                }
                s.left[k] -= sf;
                s.placed[a] = true;
                s.touched.push(a);
                unplaced -= 1;
                if let Some(b) = b {
                    s.placed[b] = true;
                    s.touched.push(b);
                    unplaced -= 1;
                }
                s.chosen[k].push((i, sf));
            }
            s.keys = queue.into_vec();
        }
    }

    /// The GPUs of type `k` for its chosen entries, larger scale factors first: an entry keeps
    /// its previous GPUs when they are free (a lease extension), else takes the first free ones;
    /// each placed entry becomes a group of `placements`, at the jobs' true throughputs.
    fn place_on_type(
        &mut self,
        k: usize,
        s: &mut Scratch,
        state: &SimState<'_>,
        placements: &mut Vec<GpuGroup>,
    ) {
        s.taken.clear();
        s.taken.resize(state.cluster.types[k].count as usize, false);
        let mut list = std::mem::take(&mut s.chosen[k]);
        list.sort_by_key(|c| std::cmp::Reverse(c.1));
        s.gpus_of.clear();
        s.gpus_of.resize(list.len(), None);
        let mut cursor = 0usize;
        let mut from = 0usize;
        while from < list.len() {
            let size = list[from].1;
            let to = from + list[from..].iter().take_while(|c| c.1 == size).count();
            for (slot, &(i, sf)) in list[from..to].iter().enumerate() {
                if let Some((pk, offset, len)) = self.entries[i].previous {
                    let gpus = &self.arena[offset..offset + len];
                    if pk == k && len == sf as usize && gpus.iter().all(|&g| !s.taken[g as usize]) {
                        let at = s.arena.len();
                        for &g in gpus {
                            s.taken[g as usize] = true;
                            s.arena.push(g);
                        }
                        s.gpus_of[from + slot] = Some((at, len));
                    }
                }
            }
            for (slot, &(i, sf)) in list[from..to].iter().enumerate() {
                // Gavel reserves GPUs for entries that have no allocation yet but never
                // starts them.
                if s.gpus_of[from + slot].is_some() || self.entries[i].allocation.is_none() {
                    continue;
                }
                let at = s.arena.len();
                while s.arena.len() - at < sf as usize && cursor < s.taken.len() {
                    if !s.taken[cursor] {
                        s.taken[cursor] = true;
                        s.arena.push(cursor as u32);
                    }
                    cursor += 1;
                }
                s.gpus_of[from + slot] = Some((at, s.arena.len() - at));
            }
            from = to;
        }
        for (slot, &(i, _)) in list.iter().enumerate() {
            let Some((at, len)) = s.gpus_of[slot] else {
                continue;
            };
            let gpus = &s.arena[at..at + len];
            let e = &self.entries[i];
            // Jobs run at their true speed, whatever the scheduler believed; a pair that
            // cannot share runs no step and wastes its GPU for the round, as in Gavel.
            let (jobs, throughputs) = match e.combo {
                (a, None) => (vec![a], vec![e.oracle[k].0]),
                (a, Some(b)) => (vec![a, b], vec![e.oracle[k].0, e.oracle[k].1]),
            };
            if let Some((pk, offset, plen)) = e.previous
                && pk == k
                && self.arena[offset..offset + plen] == *gpus
            {
                self.extensions += 1;
            }
            s.next_previous.push((i, k, at, len));
            self.planned.push(i);
            placements.push(GpuGroup {
                jobs,
                gpu_type: k,
                gpus: gpus.to_vec(),
                fraction: 1.0,
                throughputs,
            });
        }
        list.clear();
        s.chosen[k] = list;
    }
}

impl<P: AllocationPolicy> Scheduler for GavelRounds<P> {
    fn name(&self) -> String {
        self.policy.name().to_string()
    }

    fn job_arrived(&mut self, id: usize, state: &SimState<'_>) -> Result<(), SimError> {
        let k = self.types;
        self.entries.push(Entry {
            combo: (id, None),
            deficit: vec![0.0; k],
            time: vec![self.credit; k],
            throughput: (0..k).map(|t| (state.solo(id, t), 0.0)).collect(),
            oracle: (0..k).map(|t| (state.solo(id, t), 0.0)).collect(),
            allocation: None,
            previous: None,
        });
        if let Some(est) = self.estimator.as_mut() {
            est.arrive(id, state)?;
        }
        if self.policy.packing() {
            // Gavel pairs the new job with every active job of the same scale factor, in arrival
            // order, and starts their time at 0 (not at the credit).
            let sf = state.jobs[id].scale_factor;
            for &other in state
                .active
                .iter()
                .filter(|&&o| o != id && state.jobs[o].scale_factor == sf)
            {
                let (a, b) = (other.min(id), other.max(id));
                self.entries.push(Entry {
                    combo: (a, Some(b)),
                    deficit: vec![0.0; k],
                    time: vec![0.0; k],
                    throughput: (0..k)
                        .map(|t| {
                            self.estimator
                                .as_ref()
                                .and_then(|e| e.pair(a, b, t, state))
                                .unwrap_or(state.pair(a, b, t))
                        })
                        .collect(),
                    oracle: (0..k).map(|t| state.pair(a, b, t)).collect(),
                    allocation: None,
                    previous: None,
                });
            }
        }
        self.need_update = true;
        Ok(())
    }

    fn job_finished(&mut self, id: usize, _state: &SimState<'_>) {
        self.entries
            .retain(|e| e.combo.0 != id && e.combo.1 != Some(id));
        // The removal shifted the indices.
        self.with_previous.clear();
        self.with_previous.extend(
            self.entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.previous.is_some())
                .map(|(i, _)| i),
        );
        if let Some(est) = self.estimator.as_mut() {
            est.reference.remove(&id);
        }
        self.need_update = true;
    }

    fn round_finished(&mut self, report: &RoundReport, state: &SimState<'_>) {
        // Gavel credits each run with its finish minus the end of the previous round (0 before
        // the first), which overstates the first round after an idle gap.
        let start = self.previous_end.unwrap_or(0.0);
        self.previous_end = Some(report.end);
        for (run, &at) in report.runs.iter().zip(&self.planned) {
            let p = &run.placement;
            // Once a pair has run on a type, Gavel knows its true throughput there.
            if let Some(e) = self.entries.get_mut(at) {
                e.throughput[p.gpu_type] = e.oracle[p.gpu_type];
            }
            let elapsed = run.finish - start;
            let failed = elapsed <= 0.0
                || p.jobs
                    .iter()
                    .zip(&run.steps)
                    .any(|(&j, &s)| s <= 0.0 && state.remaining(j) + s > 0.0);
            if failed {
                // Gavel counts a failed micro-task and recomputes the allocation.
                self.need_update = true;
                continue;
            }
            if let Some(e) = self.entries.get_mut(at) {
                e.time[p.gpu_type] += elapsed;
            }
            self.worker_time[p.gpu_type] += elapsed;
        }
    }

    fn plan(&mut self, state: &SimState<'_>) -> Result<Vec<GpuGroup>, SimError> {
        if state.idle {
            // Gavel's trace replay forces a reset when nothing runs and nothing will arrive.
            self.last_reset = 0.0;
        }
        self.update_allocation(state)?;
        let mut s = std::mem::take(&mut self.scratch);
        s.prepare(state.jobs.len(), self.types);

        // Lease-extension opportunities: previous placements whose entry is still active.
        self.opportunities += self.with_previous.len() as u64;
        self.fill(&mut s, state);

        // GPUs: larger scale factors first; keep previous GPUs when free, then first free GPUs.
        // GPU lists live in one arena per round: (offset, length) per placed entry.
        let mut placements = Vec::new();
        self.planned.clear();
        s.arena.clear();
        s.next_previous.clear();
        for k in 0..self.types {
            self.place_on_type(k, &mut s, state, &mut placements);
        }
        // Only the entries placed last round have a previous placement to forget.
        for &i in &self.with_previous {
            self.entries[i].previous = None;
        }
        self.with_previous.clear();
        for &(i, k, at, len) in &s.next_previous {
            self.entries[i].previous = Some((k, at, len));
            self.with_previous.push(i);
        }
        std::mem::swap(&mut self.arena, &mut s.arena);
        for &j in &s.touched {
            s.placed[j] = false;
        }
        s.touched.clear();
        self.scratch = s;
        Ok(placements)
    }

    fn solver_seconds(&self) -> f64 {
        self.solver_seconds
    }

    fn lease_extension_share(&self) -> f64 {
        if self.opportunities == 0 {
            0.0
        } else {
            self.extensions as f64 / self.opportunities as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The factorization fits the known cells and fills the unknown ones of a low-rank matrix
    /// with close to their true values (Gavel's shape: 26 reference rows and 78 columns known,
    /// the new job's row half known, as when it is profiled at P = 0.5; rank 2).
    #[test]
    fn pmf_completes_a_low_rank_matrix() {
        let (m, n) = (27, 78);
        let a: Vec<f64> = (0..m * n)
            .map(|c| {
                let (i, j) = ((c / n) as f64, (c % n) as f64);
                0.2 + 0.6 * (0.5 + 0.5 * (i / 7.0).sin()) * (0.5 + 0.5 * (j / 11.0).cos())
            })
            .collect();
        let mask: Vec<bool> = (0..m * n).map(|c| c < (m - 1) * n || c % 2 == 0).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let x = pmf_solve(&a, &mask, m, n, &mut rng);
        for c in (m - 1) * n..m * n {
            assert!(
                (x[c] - a[c]).abs() < 0.05,
                "cell {c}: {} vs {}{}",
                x[c],
                a[c],
                if mask[c] { " (known)" } else { "" }
            );
        }
    }

    /// Fully profiled (P = 1), a job is matched to a reference with its own row direction: to
    /// its own type when that is a reference. This checks that the profiled row and the
    /// reference rows share one layout.
    #[test]
    fn a_fully_profiled_job_is_matched_to_its_own_type() {
        let table = ThroughputTable::bundled().expect("the bundled Gavel throughputs load");
        let singles: Vec<usize> = (0..table.job_types().len())
            .filter(|&j| table.job_types()[j].scale_factor == 1)
            .collect();
        for types in [
            singles.clone(),
            singles.iter().copied().step_by(2).collect(),
        ] {
            let refs = References::new(&table, types);
            for &t in &singles {
                let row: Vec<f64> = (0..refs.columns())
                    .map(|c| refs.profile(&table, t, c))
                    .collect();
                let r = refs
                    .nearest(&row)
                    .expect("a job with some co-located throughput");
                let j = refs.types.iter().position(|&x| x == r).unwrap();
                let reference = &refs.matrix[j * refs.columns()..(j + 1) * refs.columns()];
                if refs.types.contains(&t) {
                    assert_eq!(reference, &row[..], "type {t} matched to {r}");
                }
            }
        }
    }

    #[test]
    fn cholesky_solves_a_positive_definite_system() {
        let a = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]];
        let y = [1.0, -2.0, 0.5];
        let b: [f64; 3] = std::array::from_fn(|i| (0..3).map(|j| a[i][j] * y[j]).sum());
        let x = cholesky_solve(a, b);
        for i in 0..3 {
            assert!((x[i] - y[i]).abs() < 1e-12, "{x:?}");
        }
    }
}
