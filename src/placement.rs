//! Placement: from the options a round chose to slots on physical GPUs (MODEL.md section 5).
//!
//! The solvers only count units per GPU type. This module turns "job j runs d_j workers in
//! s-unit slots of type k" into named slots on named GPUs, and it is where the packing lemma of
//! MODEL.md section 1 is used: under a divisibility ladder, any multiset of slots whose units sum
//! to at most n_k * U_k fits on the n_k GPUs when the slots are placed in decreasing size
//! (proof in `docs/placement.md`). The proof only needs the decreasing order, not first-fit:
//! within one size class a slot may go to *any* GPU with room. That freedom is what
//! [`place`] spends on two secondary goals:
//!
//! 1. co-runners: among the valid packings, jobs that share a GPU should slow each other down as
//!    little as a pairwise [`CoLocation`] model predicts;
//! 2. stability: a job stays on the GPUs it ran on in the previous round when that costs no
//!    predicted slowdown, and the moves that remain are counted as migrations.
//!
//! Per GPU, offsets are assigned in decreasing slot size, so every slot of size s starts at a
//! multiple of s (MIG-style alignment).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use rustc_hash::FxHashMap;

use crate::instance::GpuType;

/// A pairwise co-location model: the predicted slowdown of one job when another job runs on the
/// same GPU. The costs layer implements it from measured pairs; [`NoInterference`] predicts none.
///
/// Any `Fn(&str, &str, &str) -> f64` closure taking (job, other, gpu type) is a model too.
/// `Send + Sync`, so that a round scheduler holding one can move between threads.
pub trait CoLocation: Send + Sync {
    /// Predicted slowdown of `job` while `other` shares a GPU of type `gpu_type` with it: 0 means
    /// none, larger is worse (for example the fraction of throughput lost, 1 - shared / alone).
    /// A non-finite value (infinity or NaN) means the pair cannot share a GPU (as Gavel's `[0, 0]`
    /// pairs); placement avoids such pairs whenever a valid packing allows it. Negative values
    /// count as 0.
    fn slowdown(&self, job: &str, other: &str, gpu_type: &str) -> f64;

    /// Whether every pair may share every GPU type at slowdown 0, as with [`NoInterference`]:
    /// placement then skips the pair costs (on the 10,000-job Gavel mix they were 70% of a
    /// `stsfair rounds` run) and only minimizes migrations, with the same result. The default,
    /// `false`, is always correct.
    fn interference_free(&self) -> bool {
        false
    }
}

/// The model that predicts no interference between co-runners: placement then only minimizes
/// migrations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoInterference;

impl CoLocation for NoInterference {
    fn slowdown(&self, _job: &str, _other: &str, _gpu_type: &str) -> f64 {
        0.0
    }

    fn interference_free(&self) -> bool {
        true
    }
}

impl<F> CoLocation for F
where
    F: Fn(&str, &str, &str) -> f64 + Send + Sync,
{
    fn slowdown(&self, job: &str, other: &str, gpu_type: &str) -> f64 {
        self(job, other, gpu_type)
    }
}

/// What one job asks of placement: `workers` slots of `slot` units on GPUs of type `gpu`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotRequest {
    /// The job's id (unique among the requests).
    pub job: String,
    /// Index of the GPU type.
    pub gpu: usize,
    /// Slot size in units; one of the type's slot sizes.
    pub slot: u32,
    /// Number of slots, d_j >= 1 (one per worker).
    pub workers: u32,
}

/// One slot on a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlacedSlot {
    /// First unit of the slot on its GPU; a multiple of `size`.
    pub offset: u32,
    /// Units of the slot.
    pub size: u32,
    /// The job running in it.
    pub job: String,
    /// Which of the job's workers (0-based).
    pub worker: u32,
}

/// One physical GPU and its slots.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlacedGpu {
    /// Index of the GPU type.
    pub gpu_type: usize,
    /// Name of the GPU type.
    pub type_name: String,
    /// Index of the GPU within its type, 0..n_k.
    pub index: u32,
    /// Units of the GPU, U_k.
    pub units: u32,
    /// The slots, by increasing offset; never empty in a [`Placement`] (which lists only the
    /// GPUs that hold a slot).
    pub slots: Vec<PlacedSlot>,
}

impl PlacedGpu {
    /// Units the slots use.
    pub fn used(&self) -> u32 {
        self.slots.iter().map(|s| s.size).sum()
    }
}

impl fmt::Display for PlacedGpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}:", self.type_name, self.index)?;
        if self.slots.is_empty() {
            return write!(f, " idle");
        }
        for s in &self.slots {
            write!(f, " [{}..{}) {}", s.offset, s.offset + s.size, s.job)?;
            if s.worker > 0 {
                write!(f, "/w{}", s.worker)?;
            }
        }
        Ok(())
    }
}

/// The slots of a round on the GPUs of the cluster. Only the GPUs that hold a slot are listed,
/// so a placement's size follows the round's slots, not the cluster's GPUs: the idle GPUs of a
/// type are the indices 0..n_k that [`Placement::gpus`] does not name.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Placement {
    /// The GPUs that hold at least one slot, in type order and then index order. Idle GPUs are
    /// not listed: a GPU of the cluster absent here runs nothing this round.
    pub gpus: Vec<PlacedGpu>,
    /// Workers placed on a GPU that did not hold a worker of the same job in the previous
    /// placement (matched as multisets), counted only for jobs that ran in the previous placement.
    /// A job that changed GPU type moves all its workers.
    pub migrations: usize,
    /// Sum, over GPUs and over unordered pairs of distinct jobs sharing the GPU, of both jobs'
    /// predicted slowdowns (pairs the model forbids are counted in `conflicts` instead).
    pub slowdown: f64,
    /// Pairs of distinct jobs sharing a GPU that the model says cannot share one. Zero unless
    /// the units left no other choice (or the search did not find one).
    pub conflicts: usize,
}

impl Placement {
    /// The GPUs (type index, GPU index) of `job`, one entry per worker, by worker.
    pub fn gpus_of(&self, job: &str) -> Vec<(usize, u32)> {
        let mut found: Vec<(u32, usize, u32)> = self
            .gpus
            .iter()
            .flat_map(|g| {
                g.slots
                    .iter()
                    .filter(|s| s.job == job)
                    .map(move |s| (s.worker, g.gpu_type, g.index))
            })
            .collect();
        found.sort_unstable();
        found.into_iter().map(|(_, k, i)| (k, i)).collect()
    }

    /// What this placement costs under `model`: (predicted slowdown, forbidden pairs), summed
    /// as for [`Placement::slowdown`] and [`Placement::conflicts`]. For a placement made with
    /// `model` this recomputes those two fields (up to rounding); with another model it scores the same slots
    /// under it (for example a placement made with [`NoInterference`], scored by measured
    /// pairs). O(sum over GPUs of (jobs on it)^2) model calls.
    pub fn interference(&self, model: &dyn CoLocation) -> (f64, usize) {
        let (mut slowdown, mut conflicts) = (0.0, 0);
        for g in &self.gpus {
            let mut jobs: Vec<&str> = g.slots.iter().map(|s| s.job.as_str()).collect();
            jobs.sort_unstable();
            jobs.dedup();
            for (x, a) in jobs.iter().enumerate() {
                for b in &jobs[x + 1..] {
                    let u = model.slowdown(a, b, &g.type_name);
                    let v = model.slowdown(b, a, &g.type_name);
                    if u.is_finite() && v.is_finite() {
                        slowdown += u.max(0.0) + v.max(0.0);
                    } else {
                        conflicts += 1;
                    }
                }
            }
        }
        (slowdown, conflicts)
    }
}

/// A request that placement cannot honour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlacementError {
    /// The request names a GPU type the cluster does not have.
    #[error("job {job:?}: gpu type index {gpu} does not exist ({types} gpu types)")]
    UnknownGpuType {
        /// The job.
        job: String,
        /// The index given.
        gpu: usize,
        /// Number of GPU types.
        types: usize,
    },
    /// The slot size is not on the type's ladder.
    #[error("job {job:?}: slot {slot} must be one of the slot_sizes of {gpu} ({sizes:?})")]
    NotASlotSize {
        /// The job.
        job: String,
        /// GPU type name.
        gpu: String,
        /// The slot size given.
        slot: u32,
        /// The type's ladder.
        sizes: Vec<u32>,
    },
    /// A request for zero workers.
    #[error("job {job:?}: workers must be >= 1 (got 0)")]
    NoWorkers {
        /// The job.
        job: String,
    },
    /// Two requests for one job.
    #[error("job {job:?}: must be requested once (listed twice)")]
    DuplicateJob {
        /// The job.
        job: String,
    },
    /// The requests of a type need more units than its GPUs hold.
    #[error(
        "gpu type {gpu}: the requests need {needed} units, more than the capacity of {capacity}"
    )]
    OverCapacity {
        /// GPU type name.
        gpu: String,
        /// Units requested.
        needed: u64,
        /// n_k * U_k.
        capacity: u64,
    },
    /// The cluster has more GPUs in all than a placement can hold ([`MAX_GPUS`]).
    #[error("the cluster has {gpus} gpus in all, more than the {limit} a placement can hold")]
    TooManyGpus {
        /// GPUs of all types.
        gpus: u64,
        /// [`MAX_GPUS`].
        limit: u64,
    },
}

/// The most GPUs of all types together that [`place`] accepts; past it, `place` refuses the
/// cluster before any work. Neither a placement nor its search grows with the GPU count: they
/// keep state only for the GPUs that receive a slot, so a round of three jobs on a type of a
/// million GPUs lists at most as many GPUs as it has slots.
pub const MAX_GPUS: u64 = 4_000_000;

/// First-fit decreasing for one GPU type: places slots of the given sizes on `count` GPUs of
/// `units` units, largest first, each on the lowest-numbered GPU with room. Returns, per slot in
/// input order, its (GPU index, offset), or `None` when some slot finds no room.
///
/// Under a divisibility ladder (sizes each divide the next and `units`) this succeeds whenever the
/// sizes sum to at most `count * units` (the packing lemma, `docs/placement.md`), and every slot
/// of size s starts at a multiple of s. Without a ladder it can fail below capacity: sizes
/// {3, 3, 2} on two GPUs of 4 units.
///
/// Time O(m log m + m * count) for m slots; memory O(m + count).
/// Reference: Johnson, *Near-optimal bin packing algorithms*, MIT 1973 (first-fit decreasing);
/// Coffman, Garey and Johnson, *Bin packing with divisible item sizes*, J. Complexity 3 (1987),
/// which shows FFD optimal for divisible sizes.
pub fn first_fit_decreasing(sizes: &[u32], count: u32, units: u32) -> Option<Vec<(u32, u32)>> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]).then(a.cmp(&b)));
    let mut load = vec![0u32; count as usize];
    let mut out = vec![(0u32, 0u32); sizes.len()];
    for i in order {
        let s = sizes[i];
        let g = load
            .iter()
            .position(|&l| u64::from(l) + u64::from(s) <= u64::from(units))?;
        out[i] = (g as u32, load[g]);
        load[g] += s;
    }
    Some(out)
}

/// Places the requests on the cluster's GPUs.
///
/// Per GPU type, the slots are placed in decreasing size; within one size each slot goes to the
/// GPU with room that adds the fewest forbidden pairs, then the least predicted slowdown, then
/// keeps a previous GPU of its job (from `previous`), then is awaited by the fewest previous
/// workers of other jobs (so a newcomer does not take a GPU another job will want back), then
/// joins a GPU already holding a worker of the same job, then has the lowest index. By the
/// packing lemma this never runs out of room.
/// A local search then swaps two same-size slots of different jobs, or moves a slot to a GPU with
/// room, while that strictly lowers (forbidden pairs, predicted slowdown, migrations) in this
/// lexicographic order (a 2-exchange neighbourhood as in Kernighan and Lin, *An efficient
/// heuristic procedure for partitioning graphs*, Bell Syst. Tech. J. 49, 1970). Grouping jobs
/// into GPUs to minimize pairwise cost is a clique-partitioning problem, NP-hard in general, so
/// the result is a local optimum, not a proven optimum. With [`NoInterference`] the slowdown terms
/// are all 0 and only migrations are minimized.
///
/// Time: with m slots of a type, p the previous workers on it and c = U_k / (smallest slot)
/// co-runners at most, the greedy pass is O(m * (m + p + c^2) * log m) plus O(m^2) model calls
/// cached per pair of jobs; each of at most 20 improvement passes is O(b * (m + p) * c^2) where
/// b counts the slots that sit next to a co-runner with a cost or away from their previous GPU.
/// Memory O(m + p + pairs). None of it depends on the number of GPUs n_k: the search keeps state
/// only for the GPUs it puts a slot on, the empty GPUs are runs of indices, and the placement
/// lists only the GPUs that hold a slot (the previous placement is read the same way, slot by
/// slot).
///
/// Errors: a request naming a type or slot size the cluster does not have, zero workers, a job
/// requested twice, or requests of one type over its capacity n_k * U_k.
pub fn place(
    types: &[GpuType],
    requests: &[SlotRequest],
    previous: Option<&Placement>,
    model: &dyn CoLocation,
) -> Result<Placement, PlacementError> {
    place_with(types, requests, previous, model, TableForm::Auto)
}

/// [`place`] with the per-GPU state of every type in the given form.
fn place_with(
    types: &[GpuType],
    requests: &[SlotRequest],
    previous: Option<&Placement>,
    model: &dyn CoLocation,
    form: TableForm,
) -> Result<Placement, PlacementError> {
    let gpus: u64 = types.iter().map(|t| u64::from(t.count())).sum();
    if gpus > MAX_GPUS {
        return Err(PlacementError::TooManyGpus {
            gpus,
            limit: MAX_GPUS,
        });
    }
    let mut seen = BTreeSet::new();
    let mut needed = vec![0u64; types.len()];
    for r in requests {
        let Some(t) = types.get(r.gpu) else {
            return Err(PlacementError::UnknownGpuType {
                job: r.job.clone(),
                gpu: r.gpu,
                types: types.len(),
            });
        };
        if !t.slot_sizes().contains(&r.slot) {
            return Err(PlacementError::NotASlotSize {
                job: r.job.clone(),
                gpu: t.name().to_string(),
                slot: r.slot,
                sizes: t.slot_sizes().to_vec(),
            });
        }
        if r.workers == 0 {
            return Err(PlacementError::NoWorkers { job: r.job.clone() });
        }
        if !seen.insert(r.job.as_str()) {
            return Err(PlacementError::DuplicateJob { job: r.job.clone() });
        }
        needed[r.gpu] += u64::from(r.workers) * u64::from(r.slot);
    }
    for (t, &need) in types.iter().zip(&needed) {
        if need > t.capacity() {
            return Err(PlacementError::OverCapacity {
                gpu: t.name().to_string(),
                needed: need,
                capacity: t.capacity(),
            });
        }
    }

    // Where each job ran before: (type, GPU) per worker.
    let mut before: HashMap<&str, Vec<(usize, u32)>> = HashMap::new();
    if let Some(p) = previous {
        for g in &p.gpus {
            for s in &g.slots {
                before
                    .entry(s.job.as_str())
                    .or_default()
                    .push((g.gpu_type, g.index));
            }
        }
    }

    let mut out = Placement::default();
    for (k, t) in types.iter().enumerate() {
        let reqs: Vec<&SlotRequest> = requests.iter().filter(|r| r.gpu == k).collect();
        // Unreachable by the packing lemma once the capacity check above passed.
        let no_room = || PlacementError::OverCapacity {
            gpu: t.name().to_string(),
            needed: needed[k],
            capacity: t.capacity(),
        };
        let pairs = PairCache::new(reqs.len());
        let mut packer = TypePacker::new(t, &reqs, &before, k, model, pairs, form);
        packer.greedy().ok_or_else(no_room)?;
        packer.improve();
        if packer.ran.iter().any(|&r| r) {
            // A second start that ignores where jobs ran: the greedy pass and search of a
            // placement with no previous round, then the search again with migrations counted.
            // Keeping the better of the two means that the previous round can only help: the
            // result is never worse in (conflicts, slowdown) than placing from scratch, and when
            // the round repeats, staying put (which is that scratch placement) moves nobody.
            // The pair costs are the same requests' on the same type: the second start takes
            // the first's cache (leaving an empty map, which allocates nothing), and the kept
            // start ends with it.
            let pairs =
                std::mem::replace(&mut packer.pairs, PairCache::Sparse(FxHashMap::default()));
            let mut fresh = TypePacker::new(t, &reqs, &HashMap::new(), k, model, pairs, form);
            fresh.greedy().ok_or_else(no_room)?;
            fresh.improve();
            fresh.ran.clone_from(&packer.ran);
            fresh.prev.clone_from(&packer.prev);
            fresh.improve();
            let fresh_total = fresh.total();
            std::mem::swap(&mut fresh.pairs, &mut packer.pairs);
            if fresh_total.better(packer.total()) {
                std::mem::swap(&mut fresh.pairs, &mut packer.pairs);
                packer = fresh;
            }
        }
        packer.finish(k, t, &mut out);
    }
    Ok(out)
}

/// Largest number of improvement passes per GPU type: the search stops earlier at a local optimum.
const MAX_PASSES: usize = 20;

/// Cost of a set of slots: forbidden pairs, predicted slowdown, migrated workers; compared
/// lexicographically, slowdown up to a relative 1e-12 so that rounding never drives the search.
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    conflicts: u64,
    slowdown: f64,
    moved: u64,
}

impl Cost {
    fn add(self, o: Cost) -> Cost {
        Cost {
            conflicts: self.conflicts + o.conflicts,
            slowdown: self.slowdown + o.slowdown,
            moved: self.moved + o.moved,
        }
    }
    /// Whether `self` is strictly better than `than`.
    fn better(self, than: Cost) -> bool {
        if self.conflicts != than.conflicts {
            return self.conflicts < than.conflicts;
        }
        let eps = 1e-12 * than.slowdown.abs().max(1.0);
        if self.slowdown < than.slowdown - eps {
            return true;
        }
        if self.slowdown > than.slowdown + eps {
            return false;
        }
        self.moved < than.moved
    }
}

/// How the greedy pass ranks a GPU for a slot: lexicographically, smaller first.
struct GreedyKey {
    conflicts: u64,
    slowdown: f64,
    migrates: bool,
    /// Previous workers of other jobs that this GPU still waits for.
    claimed: u32,
    alone: bool,
    gpu: u32,
}

impl GreedyKey {
    fn less(&self, o: &GreedyKey) -> bool {
        self.conflicts
            .cmp(&o.conflicts)
            .then(self.slowdown.total_cmp(&o.slowdown))
            .then(self.migrates.cmp(&o.migrates))
            .then(self.claimed.cmp(&o.claimed))
            .then(self.alone.cmp(&o.alone))
            .then(self.gpu.cmp(&o.gpu))
            == std::cmp::Ordering::Less
    }
}

struct Item {
    /// Index into the type's requests.
    req: usize,
    worker: u32,
    size: u32,
}

/// The pair costs of one GPU type's requests, filled as the search asks: the slowdown of both
/// jobs, `+inf` for a forbidden pair, NaN while unknown. A dense triangle up to
/// [`DENSE_PAIRS`] requests (a lookup there is an index, where hashing the pair costs a tenth of
/// the search's time); a hash map above, where the triangle would be too large to clear every
/// round.
enum PairCache {
    Dense { n: usize, cost: Vec<f64> },
    Sparse(FxHashMap<(usize, usize), f64>),
}

/// Most requests of one type whose pair costs [`PairCache`] keeps in a dense triangle (at most
/// 2 MB).
const DENSE_PAIRS: usize = 724;

impl PairCache {
    fn new(n: usize) -> PairCache {
        if n <= DENSE_PAIRS {
            PairCache::Dense {
                n,
                cost: vec![f64::NAN; n * (n + 1) / 2],
            }
        } else {
            PairCache::Sparse(FxHashMap::default())
        }
    }

    /// Index of (a, b), a <= b < n, in the row-major upper triangle.
    fn index(n: usize, a: usize, b: usize) -> usize {
        a * n - a * (a + 1) / 2 + b
    }

    /// The cached cost of (a, b) with a <= b, NaN if unknown.
    fn get(&self, a: usize, b: usize) -> f64 {
        match self {
            PairCache::Dense { n, cost } => cost[PairCache::index(*n, a, b)],
            PairCache::Sparse(map) => map.get(&(a, b)).copied().unwrap_or(f64::NAN),
        }
    }

    fn set(&mut self, a: usize, b: usize, c: f64) {
        match self {
            PairCache::Dense { n, cost } => cost[PairCache::index(*n, a, b)] = c,
            PairCache::Sparse(map) => {
                map.insert((a, b), c);
            }
        }
    }
}

/// What the search keeps of one GPU.
#[derive(Debug, Clone, Default)]
struct GpuState {
    /// The items on the GPU.
    items: Vec<usize>,
    /// Units they take.
    load: u32,
    /// The GPU's cost as [`TypePacker::gpu_cost`] last computed it, valid while its items have
    /// not changed: a trial move reads the costs of two GPUs before and after, and most GPUs are
    /// read again and again unchanged.
    cost: Option<Cost>,
}

/// The per-GPU state of one type: a vector indexed by GPU when the type has few GPUs for its
/// slots (an index is cheaper than a hash, and the search looks GPUs up millions of times in a
/// long simulation), a map of the GPUs that received a slot otherwise, so that a type of a
/// million GPUs costs what its slots cost.
#[derive(Debug, Clone)]
enum GpuTable {
    Dense(Vec<GpuState>),
    Sparse(FxHashMap<u32, GpuState>),
}

/// GPUs a type may have per slot for [`GpuTable`] to be a vector: beyond, most of a vector
/// would be GPUs the slots never touch, allocated and cleared for nothing.
const DENSE_GPUS_PER_SLOT: usize = 4;

impl GpuTable {
    /// The table of a type of `n` GPUs that will hold `slots` slots: dense or sparse as `form`
    /// says, or by their ratio.
    fn new(n: u32, slots: usize, form: TableForm) -> GpuTable {
        let dense = match form {
            #[cfg(test)]
            TableForm::Dense => true,
            #[cfg(test)]
            TableForm::Sparse => false,
            TableForm::Auto => n as usize <= slots.saturating_mul(DENSE_GPUS_PER_SLOT),
        };
        if dense {
            GpuTable::Dense(vec![GpuState::default(); n as usize])
        } else {
            GpuTable::Sparse(FxHashMap::default())
        }
    }

    fn get(&self, g: u32) -> Option<&GpuState> {
        match self {
            GpuTable::Dense(v) => v.get(g as usize),
            GpuTable::Sparse(m) => m.get(&g),
        }
    }

    fn get_mut(&mut self, g: u32) -> Option<&mut GpuState> {
        match self {
            GpuTable::Dense(v) => v.get_mut(g as usize),
            GpuTable::Sparse(m) => m.get_mut(&g),
        }
    }

    /// GPU g's state, created empty if the table has none.
    fn entry(&mut self, g: u32) -> &mut GpuState {
        match self {
            GpuTable::Dense(v) => {
                let at = g as usize;
                if at >= v.len() {
                    v.resize(at + 1, GpuState::default());
                }
                &mut v[at]
            }
            GpuTable::Sparse(m) => m.entry(g).or_default(),
        }
    }

    /// The GPUs holding an item, in increasing index.
    fn used(&self) -> Vec<u32> {
        match self {
            GpuTable::Dense(v) => (0..v.len() as u32)
                .zip(v)
                .filter(|(_, s)| s.load > 0)
                .map(|(g, _)| g)
                .collect(),
            GpuTable::Sparse(m) => {
                let mut v: Vec<u32> = (m.iter())
                    .filter(|(_, s)| s.load > 0)
                    .map(|(&g, _)| g)
                    .collect();
                v.sort_unstable();
                v
            }
        }
    }
}

/// Which form of [`GpuTable`] [`place`] uses: by the ratio of GPUs to slots, or one form for
/// every type (the tests compare the two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TableForm {
    Auto,
    #[cfg(test)]
    Dense,
    #[cfg(test)]
    Sparse,
}

/// The empty GPUs of a type as runs of consecutive indices (first -> one past the last), so
/// that a type of a million GPUs with a few in use is a few runs: O(runs) memory, O(log runs)
/// an update, and listing in index order costs nothing per GPU skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EmptyGpus {
    runs: BTreeMap<u32, u32>,
}

impl EmptyGpus {
    /// GPUs 0..n, all empty.
    fn new(n: u32) -> EmptyGpus {
        let mut runs = BTreeMap::new();
        if n > 0 {
            runs.insert(0, n);
        }
        EmptyGpus { runs }
    }

    /// The run holding GPU g, if g is empty.
    fn run_of(&self, g: u32) -> Option<(u32, u32)> {
        self.runs
            .range(..=g)
            .next_back()
            .map(|(&first, &end)| (first, end))
            .filter(|&(_, end)| g < end)
    }

    fn remove(&mut self, g: u32) {
        let Some((first, end)) = self.run_of(g) else {
            return;
        };
        self.runs.remove(&first);
        if first < g {
            self.runs.insert(first, g);
        }
        if g + 1 < end {
            self.runs.insert(g + 1, end);
        }
    }

    fn insert(&mut self, g: u32) {
        if self.run_of(g).is_some() {
            return;
        }
        let mut first = g;
        if let Some((&f, &end)) = self.runs.range(..g).next_back()
            && end == g
        {
            first = f;
        }
        let end = self.runs.remove(&(g + 1)).unwrap_or(g + 1);
        self.runs.insert(first, end);
    }

    /// The empty GPUs in increasing index.
    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.runs.iter().flat_map(|(&first, &end)| first..end)
    }
}

/// The packing state of one GPU type. Its memory and time follow the slots placed, never the
/// type's GPU count: per-GPU state is kept only for GPUs that received a slot, and the empty
/// GPUs are runs of indices.
struct TypePacker<'a> {
    type_name: &'a str,
    units: u32,
    reqs: &'a [&'a SlotRequest],
    model: &'a dyn CoLocation,
    items: Vec<Item>,
    /// GPU of each item (u32::MAX before it is placed).
    loc: Vec<u32>,
    /// The GPUs' items, loads and cached costs; a GPU the table does not hold is empty.
    gpus: GpuTable,
    /// Items of each request.
    req_items: Vec<Vec<usize>>,
    /// Per request: whether the job ran in the previous placement, and its previous GPUs of this
    /// type (a sorted multiset).
    ran: Vec<bool>,
    prev: Vec<Vec<u32>>,
    /// GPUs with 0 < load < units, and GPUs with load 0.
    partial: BTreeSet<u32>,
    empty: EmptyGpus,
    /// Pair costs by (request, request), computed once.
    pairs: PairCache,
    /// The buffer of [`TypePacker::gpu_cost`]: the search asks for GPU costs millions of times
    /// in a long simulation, and allocating a list each time would cost a tenth of its time.
    scratch: Vec<usize>,
    /// The model's [`CoLocation::interference_free`]: every pair costs nothing, so only
    /// migrations count.
    free: bool,
}

impl<'a> TypePacker<'a> {
    fn new(
        t: &'a GpuType,
        reqs: &'a [&'a SlotRequest],
        before: &HashMap<&str, Vec<(usize, u32)>>,
        k: usize,
        model: &'a dyn CoLocation,
        pairs: PairCache,
        form: TableForm,
    ) -> Self {
        let mut items = Vec::new();
        let mut req_items = vec![Vec::new(); reqs.len()];
        for (ri, r) in reqs.iter().enumerate() {
            for w in 0..r.workers {
                req_items[ri].push(items.len());
                items.push(Item {
                    req: ri,
                    worker: w,
                    size: r.slot,
                });
            }
        }
        let n = t.count();
        let ran = reqs
            .iter()
            .map(|r| before.contains_key(r.job.as_str()))
            .collect();
        let prev = reqs
            .iter()
            .map(|r| {
                let mut v: Vec<u32> = before
                    .get(r.job.as_str())
                    .map(|gs| {
                        gs.iter()
                            .filter(|(tk, i)| *tk == k && *i < n)
                            .map(|(_, i)| *i)
                            .collect()
                    })
                    .unwrap_or_default();
                v.sort_unstable();
                v
            })
            .collect();
        let loc = vec![u32::MAX; items.len()];
        let gpus = GpuTable::new(n, items.len(), form);
        TypePacker {
            type_name: t.name(),
            units: t.units(),
            reqs,
            model,
            items,
            loc,
            gpus,
            req_items,
            ran,
            prev,
            partial: BTreeSet::new(),
            empty: EmptyGpus::new(n),
            pairs,
            scratch: Vec::new(),
            free: model.interference_free(),
        }
    }

    /// Units in use on GPU g.
    fn load(&self, g: u32) -> u32 {
        self.gpus.get(g).map_or(0, |s| s.load)
    }

    /// Items on GPU g.
    fn occ(&self, g: u32) -> &[usize] {
        self.gpus.get(g).map_or(&[], |s| &s.items)
    }

    /// The cached cost of GPU g.
    fn cached(&self, g: u32) -> Option<Cost> {
        self.gpus.get(g).and_then(|s| s.cost)
    }

    /// Sets the cached cost of GPU g (a GPU that holds or held an item).
    fn set_cached(&mut self, g: u32, cost: Option<Cost>) {
        if let Some(s) = self.gpus.get_mut(g) {
            s.cost = cost;
        }
    }

    /// The GPUs holding an item, in increasing index.
    fn used(&self) -> Vec<u32> {
        self.gpus.used()
    }

    fn pair(&mut self, a: usize, b: usize) -> (bool, f64) {
        if self.free {
            return (false, 0.0);
        }
        let (a, b) = (a.min(b), a.max(b));
        let cached = self.pairs.get(a, b);
        if !cached.is_nan() {
            return if cached == f64::INFINITY {
                (true, 0.0)
            } else {
                (false, cached)
            };
        }
        let (ja, jb) = (self.reqs[a].job.as_str(), self.reqs[b].job.as_str());
        let x = self.model.slowdown(ja, jb, self.type_name);
        let y = self.model.slowdown(jb, ja, self.type_name);
        let c = if x.is_finite() && y.is_finite() {
            (false, x.max(0.0) + y.max(0.0))
        } else {
            (true, 0.0)
        };
        self.pairs.set(a, b, if c.0 { f64::INFINITY } else { c.1 });
        c
    }

    /// Distinct requests on GPU g, sorted, into `buf` (cleared first).
    fn jobs_on_into(&self, g: u32, buf: &mut Vec<usize>) {
        buf.clear();
        buf.extend(self.occ(g).iter().map(|&i| self.items[i].req));
        buf.sort_unstable();
        buf.dedup();
    }

    /// Distinct requests on GPU g, sorted.
    fn jobs_on(&self, g: u32) -> Vec<usize> {
        let mut v = Vec::with_capacity(self.occ(g).len());
        self.jobs_on_into(g, &mut v);
        v
    }

    /// Forbidden pairs and slowdown of GPU g.
    fn gpu_cost(&mut self, g: u32) -> Cost {
        if self.free {
            return Cost::default();
        }
        if let Some(c) = self.cached(g) {
            return c;
        }
        let mut jobs = std::mem::take(&mut self.scratch);
        self.jobs_on_into(g, &mut jobs);
        let mut c = Cost::default();
        for (x, &a) in jobs.iter().enumerate() {
            for &b in &jobs[x + 1..] {
                let (bad, s) = self.pair(a, b);
                if bad {
                    c.conflicts += 1;
                } else {
                    c.slowdown += s;
                }
            }
        }
        self.scratch = jobs;
        self.set_cached(g, Some(c));
        c
    }

    /// Workers of request r not matched to one of its previous GPUs (all of them when the job
    /// ran before but not on this type; none when it did not run).
    fn moved(&self, r: usize) -> u64 {
        if !self.ran[r] {
            return 0;
        }
        if let [i] = self.req_items[r][..] {
            // One worker (most jobs): the intersection is whether its GPU is a previous one.
            return u64::from(!self.prev[r].contains(&self.loc[i]));
        }
        let mut now: Vec<u32> = self.req_items[r].iter().map(|&i| self.loc[i]).collect();
        now.sort_unstable();
        // Multiset intersection of two sorted lists.
        let (mut a, mut b, mut kept) = (0, 0, 0u64);
        let prev = &self.prev[r];
        while a < now.len() && b < prev.len() {
            match now[a].cmp(&prev[b]) {
                std::cmp::Ordering::Equal => {
                    kept += 1;
                    a += 1;
                    b += 1;
                }
                std::cmp::Ordering::Less => a += 1,
                std::cmp::Ordering::Greater => b += 1,
            }
        }
        now.len() as u64 - kept
    }

    fn put(&mut self, i: usize, g: u32) {
        self.shift(i, g);
        self.reclassify(g);
    }

    /// Puts item i (placed nowhere) on GPU g without updating the partial and empty sets: the
    /// trial moves of the search, which read only costs, call [`TypePacker::reclassify`] for
    /// the GPUs of a move they keep.
    fn shift(&mut self, i: usize, g: u32) {
        self.loc[i] = g;
        let s = self.gpus.entry(g);
        s.items.push(i);
        s.load += self.items[i].size;
        s.cost = None;
    }

    /// Takes item i off its GPU without updating the partial and empty sets (see [`shift`]).
    ///
    /// [`shift`]: TypePacker::shift
    fn unshift(&mut self, i: usize) {
        let g = self.loc[i];
        if let Some(s) = self.gpus.get_mut(g) {
            s.items.retain(|&x| x != i);
            s.load -= self.items[i].size;
            s.cost = None;
        }
        self.loc[i] = u32::MAX;
    }

    fn reclassify(&mut self, g: u32) {
        let l = self.load(g);
        self.partial.remove(&g);
        self.empty.remove(g);
        if l == 0 {
            self.empty.insert(g);
        } else if l < self.units {
            self.partial.insert(g);
        }
    }

    /// GPUs worth trying for a slot of request r and `size` units other than `except`: every
    /// partly used GPU with room, r's previous GPUs with room, and the lowest-numbered empty GPU
    /// (all empty GPUs are alike unless they are previous GPUs).
    fn candidates(&self, r: usize, size: u32, except: u32) -> Vec<u32> {
        let room = |g: u32| self.load(g) + size <= self.units;
        let mut c: Vec<u32> = self
            .partial
            .iter()
            .copied()
            .filter(|&g| g != except && room(g))
            .collect();
        c.extend(
            self.prev[r]
                .iter()
                .copied()
                .filter(|&g| g != except && room(g)),
        );
        if let Some(g) = self.empty.iter().find(|&g| g != except) {
            c.push(g);
        }
        c.sort_unstable();
        c.dedup();
        c
    }

    /// Places every slot: decreasing size, then jobs with previous GPUs first, then request and
    /// worker order. `None` only if some slot finds no room (impossible under the lemma).
    fn greedy(&mut self) -> Option<()> {
        let mut order: Vec<usize> = (0..self.items.len()).collect();
        order.sort_by(|&a, &b| {
            let (x, y) = (&self.items[a], &self.items[b]);
            y.size
                .cmp(&x.size)
                .then(
                    self.prev[x.req]
                        .is_empty()
                        .cmp(&self.prev[y.req].is_empty()),
                )
                .then(x.req.cmp(&y.req))
                .then(x.worker.cmp(&y.worker))
        });
        // Previous GPUs of each request not yet reused, and per GPU how many such entries it
        // still has: a GPU claimed by another job's previous worker is taken only if nothing
        // unclaimed is as good, so that a newcomer does not push a job off its GPU.
        let mut unused: Vec<Vec<u32>> = self.prev.clone();
        let mut claims: FxHashMap<u32, u32> = FxHashMap::default();
        for p in &unused {
            for &g in p {
                *claims.entry(g).or_default() += 1;
            }
        }
        let claims_of = |claims: &FxHashMap<u32, u32>, g: u32| claims.get(&g).copied().unwrap_or(0);
        for i in order {
            let (r, size) = (self.items[i].req, self.items[i].size);
            let mut cands = self.candidates(r, size, u32::MAX);
            if let Some(g) = self.empty.iter().find(|&g| claims_of(&claims, g) == 0) {
                cands.push(g);
            }
            let mut best: Option<GreedyKey> = None;
            for g in cands {
                let jobs = self.jobs_on(g);
                let (mut conflicts, mut slowdown) = (0u64, 0.0);
                let alone = !jobs.contains(&r);
                if alone {
                    for &o in &jobs {
                        let (bad, s) = self.pair(r, o);
                        if bad {
                            conflicts += 1;
                        } else {
                            slowdown += s;
                        }
                    }
                }
                let mine = unused[r].iter().filter(|&&x| x == g).count() as u32;
                let key = GreedyKey {
                    conflicts,
                    slowdown,
                    migrates: self.ran[r] && mine == 0,
                    claimed: claims_of(&claims, g) - mine,
                    alone,
                    gpu: g,
                };
                if best.as_ref().is_none_or(|b| key.less(b)) {
                    best = Some(key);
                }
            }
            let g = best?.gpu;
            if let Some(p) = unused[r].iter().position(|&x| x == g) {
                unused[r].swap_remove(p);
                if let Some(c) = claims.get_mut(&g) {
                    *c -= 1;
                }
            }
            self.put(i, g);
        }
        Some(())
    }

    /// Cost of the whole type: every GPU (an empty one costs nothing) and every request.
    fn total(&mut self) -> Cost {
        let gpus = self.used();
        let reqs: Vec<usize> = (0..self.reqs.len()).collect();
        self.cost_of(&gpus, &reqs)
    }

    fn cost_of(&mut self, gpus: &[u32], reqs: &[usize]) -> Cost {
        let mut c = Cost::default();
        for &g in gpus {
            c = c.add(self.gpu_cost(g));
        }
        for &r in reqs {
            c.moved += self.moved(r);
        }
        c
    }

    /// Whether item i is worth trying to move: it shares its GPU with a cost, or its job has
    /// workers away from their previous GPUs.
    fn unhappy(&mut self, i: usize) -> bool {
        let g = self.loc[i];
        let c = self.gpu_cost(g);
        c.conflicts > 0 || c.slowdown > 0.0 || self.moved(self.items[i].req) > 0
    }

    /// Local search over moves and same-size swaps; see [`place`].
    fn improve(&mut self) {
        for _ in 0..MAX_PASSES {
            let mut improved = false;
            for i in 0..self.items.len() {
                if !self.unhappy(i) {
                    continue;
                }
                if self.try_move(i) || self.try_swap(i) {
                    improved = true;
                }
            }
            if !improved {
                break;
            }
        }
    }

    fn try_move(&mut self, i: usize) -> bool {
        let (r, size, g) = (self.items[i].req, self.items[i].size, self.loc[i]);
        for h in self.candidates(r, size, g) {
            let before = self.cost_of(&[g, h], &[r]);
            let kept = (self.cached(g), self.cached(h));
            self.unshift(i);
            self.shift(i, h);
            let after = self.cost_of(&[g, h], &[r]);
            if after.better(before) {
                self.reclassify(g);
                self.reclassify(h);
                return true;
            }
            self.unshift(i);
            self.shift(i, g);
            self.set_cached(g, kept.0);
            self.set_cached(h, kept.1);
        }
        false
    }

    fn try_swap(&mut self, i: usize) -> bool {
        let (r, size, g) = (self.items[i].req, self.items[i].size, self.loc[i]);
        for i2 in 0..self.items.len() {
            let (r2, h) = (self.items[i2].req, self.loc[i2]);
            if i2 == i || r2 == r || h == g || self.items[i2].size != size {
                continue;
            }
            // Without pair costs only migrations count, and a swap that takes neither job to
            // one of its previous GPUs matches no more workers than before: not better.
            if self.free
                && self.prev[r].binary_search(&h).is_err()
                && self.prev[r2].binary_search(&g).is_err()
            {
                continue;
            }
            // Same sizes: both GPUs keep their loads, so the partial and empty sets hold.
            let before = self.cost_of(&[g, h], &[r, r2]);
            let kept = (self.cached(g), self.cached(h));
            self.unshift(i);
            self.unshift(i2);
            self.shift(i, h);
            self.shift(i2, g);
            let after = self.cost_of(&[g, h], &[r, r2]);
            if after.better(before) {
                return true;
            }
            self.unshift(i);
            self.unshift(i2);
            self.shift(i, g);
            self.shift(i2, h);
            self.set_cached(g, kept.0);
            self.set_cached(h, kept.1);
        }
        false
    }

    /// Writes the GPUs of this type that hold a slot, with offsets in decreasing slot size, and
    /// adds the totals.
    fn finish(&mut self, k: usize, t: &GpuType, out: &mut Placement) {
        for g in self.used() {
            let mut here = self.occ(g).to_vec();
            here.sort_by(|&a, &b| {
                let (x, y) = (&self.items[a], &self.items[b]);
                y.size
                    .cmp(&x.size)
                    .then(x.req.cmp(&y.req))
                    .then(x.worker.cmp(&y.worker))
            });
            let mut offset = 0;
            let slots = here
                .iter()
                .map(|&i| {
                    let it = &self.items[i];
                    let s = PlacedSlot {
                        offset,
                        size: it.size,
                        job: self.reqs[it.req].job.clone(),
                        worker: it.worker,
                    };
                    offset += it.size;
                    s
                })
                .collect();
            let c = self.gpu_cost(g);
            out.conflicts += c.conflicts as usize;
            out.slowdown += c.slowdown;
            out.gpus.push(PlacedGpu {
                gpu_type: k,
                type_name: t.name().to_string(),
                index: g,
                units: t.units(),
                slots,
            });
        }
        for r in 0..self.reqs.len() {
            out.migrations += self.moved(r) as usize;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Instance;

    fn cluster(count: u64, units: u64, ladder: &[u64]) -> Vec<GpuType> {
        Instance::builder()
            .gpu_type("g", count, units, ladder)
            .build()
            .unwrap()
            .gpu_types()
            .to_vec()
    }

    fn req(job: &str, slot: u32, workers: u32) -> SlotRequest {
        SlotRequest {
            job: job.into(),
            gpu: 0,
            slot,
            workers,
        }
    }

    /// A small deterministic generator for the tests below (no dependency, same cases always).
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n.max(1)
        }
    }

    #[test]
    fn empty_gpus_as_runs_match_a_set() {
        let mut rng = Lcg(7);
        for n in [0u32, 1, 2, 5, 40] {
            let mut runs = EmptyGpus::new(n);
            let mut set: BTreeSet<u32> = (0..n).collect();
            for _ in 0..2_000 {
                let g = rng.below(u64::from(n) + 1) as u32;
                if rng.below(2) == 0 {
                    runs.remove(g);
                    set.remove(&g);
                } else if g < n {
                    runs.insert(g);
                    set.insert(g);
                }
                assert_eq!(
                    runs.iter().collect::<Vec<_>>(),
                    set.iter().copied().collect::<Vec<_>>()
                );
                // Runs are maximal: two never touch.
                let bounds: Vec<(u32, u32)> = runs.runs.iter().map(|(&a, &b)| (a, b)).collect();
                assert!(bounds.iter().all(|&(a, b)| a < b), "{bounds:?}");
                assert!(bounds.windows(2).all(|w| w[0].1 < w[1].0), "{bounds:?}");
            }
        }
    }

    /// The search's per-GPU state in a vector and in a map gives the same placements, with and
    /// without a previous placement and a model with costs and forbidden pairs.
    #[test]
    fn dense_and_sparse_gpu_tables_place_alike() {
        let mut rng = Lcg(11);
        let model = |a: &str, b: &str, _: &str| {
            let h = a
                .bytes()
                .chain(b.bytes())
                .fold(7u64, |x, c| x * 31 + u64::from(c));
            match h % 9 {
                0 => f64::INFINITY,
                r => r as f64 / 20.0,
            }
        };
        let models: [&dyn CoLocation; 2] = [&NoInterference, &model];
        for case in 0..300 {
            let mut b = Instance::builder();
            let ntypes = 1 + rng.below(3) as usize;
            for k in 0..ntypes {
                b = b.gpu_type(format!("g{k}"), rng.below(7), 4, &[1, 2, 4]);
            }
            let types = b.build().unwrap().gpu_types().to_vec();
            let draw = |rng: &mut Lcg| {
                let mut left: Vec<u64> = types.iter().map(GpuType::capacity).collect();
                let mut out = Vec::new();
                for j in 0..rng.below(16) {
                    let k = rng.below(ntypes as u64) as usize;
                    let slot = [1u32, 2, 4][rng.below(3) as usize];
                    let workers = 1 + rng.below(3) as u32;
                    let need = u64::from(slot * workers);
                    if need <= left[k] {
                        left[k] -= need;
                        out.push(SlotRequest {
                            job: format!("j{j}"),
                            gpu: k,
                            slot,
                            workers,
                        });
                    }
                }
                out
            };
            let first = draw(&mut rng);
            let second = draw(&mut rng);
            let model = models[case % 2];
            let runs = |form| {
                let prev = place_with(&types, &first, None, model, form).unwrap();
                let next = place_with(&types, &second, Some(&prev), model, form).unwrap();
                (prev, next)
            };
            let dense = runs(TableForm::Dense);
            assert_eq!(dense, runs(TableForm::Sparse), "case {case}");
            assert_eq!(dense, runs(TableForm::Auto), "case {case}");
        }
    }

    /// The search of a type of a million GPUs keeps state for the GPUs it puts a slot on and a
    /// few runs of empty ones, and the placement lists the GPUs that hold a slot: a previous
    /// worker on the last GPU stays there.
    #[test]
    fn the_search_keeps_state_only_for_the_gpus_it_uses() {
        let types = cluster(1_000_000, 4, &[1, 2, 4]);
        let reqs = [req("a", 4, 1), req("b", 2, 2), req("c", 1, 1)];
        let refs: Vec<&SlotRequest> = reqs.iter().collect();
        let before: HashMap<&str, Vec<(usize, u32)>> = HashMap::from([("a", vec![(0, 999_999)])]);
        let pairs = PairCache::new(refs.len());
        let t = &types[0];
        let mut p = TypePacker::new(
            t,
            &refs,
            &before,
            0,
            &NoInterference,
            pairs,
            TableForm::Auto,
        );
        p.greedy().unwrap();
        p.improve();
        let GpuTable::Sparse(touched) = &p.gpus else {
            panic!("a vector of a million GPUs for 4 slots");
        };
        assert!(touched.len() <= 4, "{} GPUs kept", touched.len());
        assert!(p.empty.runs.len() <= 5, "{:?}", p.empty.runs);
        let mut out = Placement::default();
        p.finish(0, t, &mut out);
        assert_eq!(out.gpus_of("a"), vec![(0, 999_999)]);
        assert_eq!(out.migrations, 0);
        assert!(out.gpus.len() <= 4 && out.gpus.iter().all(|g| !g.slots.is_empty()));
    }

    #[test]
    fn pair_cache_triangle_is_a_bijection_and_both_forms_agree() {
        for n in [0usize, 1, 2, 7, 40] {
            let mut seen = vec![false; n * (n + 1) / 2];
            for a in 0..n {
                for b in a..n {
                    let at = PairCache::index(n, a, b);
                    assert!(!seen[at], "({a}, {b}) shares cell {at} (n = {n})");
                    seen[at] = true;
                }
            }
            assert!(seen.iter().all(|&x| x), "n = {n}: a cell is never used");
        }
        // The dense triangle and the map keep what was set and nothing else.
        let mut dense = PairCache::new(DENSE_PAIRS);
        let mut sparse = PairCache::new(DENSE_PAIRS + 1);
        assert!(matches!(dense, PairCache::Dense { .. }));
        assert!(matches!(sparse, PairCache::Sparse(_)));
        for cache in [&mut dense, &mut sparse] {
            assert!(cache.get(3, 9).is_nan());
            cache.set(3, 9, 0.25);
            cache.set(9, 9, f64::INFINITY);
            assert_eq!(cache.get(3, 9), 0.25);
            assert_eq!(cache.get(9, 9), f64::INFINITY);
            assert!(cache.get(3, 10).is_nan());
        }
    }

    #[test]
    fn ffd_fails_without_a_ladder_below_capacity() {
        // 3 + 3 + 2 = 8 units on 2 GPUs of 4: each 3 takes a GPU, the 2 finds 1 unit left on each.
        assert_eq!(first_fit_decreasing(&[3, 3, 2], 2, 4), None);
        // On the ladder {1, 2, 4} the same total always packs.
        let p = first_fit_decreasing(&[2, 2, 4], 2, 4).unwrap();
        assert_eq!(p, vec![(1, 0), (1, 2), (0, 0)]);
    }

    #[test]
    fn the_previous_gpu_is_kept_when_it_costs_nothing() {
        let types = cluster(2, 4, &[1, 2, 4]);
        let first = place(
            &types,
            &[req("a", 2, 1), req("b", 2, 1)],
            None,
            &NoInterference,
        )
        .unwrap();
        // First fit: both halves on GPU 0.
        assert_eq!(first.gpus_of("a"), vec![(0, 0)]);
        assert_eq!(first.gpus_of("b"), vec![(0, 0)]);
        // Next round "c" arrives with a whole GPU: placed first (largest), it must not evict the
        // others: GPU 0 is their previous GPU, so c takes GPU 1 and nobody migrates.
        let second = place(
            &types,
            &[req("c", 4, 1), req("a", 2, 1), req("b", 2, 1)],
            Some(&first),
            &NoInterference,
        )
        .unwrap();
        assert_eq!(second.gpus_of("c"), vec![(0, 1)]);
        assert_eq!(second.gpus_of("a"), vec![(0, 0)]);
        assert_eq!(second.migrations, 0);
    }

    #[test]
    fn co_runners_are_paired_to_minimize_predicted_slowdown() {
        // Four half-GPU jobs on two GPUs: a and b hurt each other (0.5 each way), every other pair
        // costs 0.1 each way. Best pairing: {a, c}, {b, d} or {a, d}, {b, c}: total 0.4.
        let types = cluster(2, 4, &[1, 2, 4]);
        let model = |x: &str, y: &str, _: &str| {
            if (x, y) == ("a", "b") || (x, y) == ("b", "a") {
                0.5
            } else {
                0.1
            }
        };
        let reqs = [
            req("a", 2, 1),
            req("b", 2, 1),
            req("c", 2, 1),
            req("d", 2, 1),
        ];
        let p = place(&types, &reqs, None, &model).unwrap();
        assert!((p.slowdown - 0.4).abs() < 1e-12, "slowdown {}", p.slowdown);
        assert_ne!(p.gpus_of("a"), p.gpus_of("b"));
        assert_eq!(p.conflicts, 0);
    }

    #[test]
    fn forbidden_pairs_are_avoided_when_units_allow() {
        let types = cluster(2, 4, &[1, 2, 4]);
        let model = |x: &str, y: &str, _: &str| {
            if x.starts_with('x') && y.starts_with('x') {
                f64::INFINITY
            } else {
                0.0
            }
        };
        let reqs = [
            req("x1", 2, 1),
            req("x2", 2, 1),
            req("y1", 2, 1),
            req("y2", 2, 1),
        ];
        let p = place(&types, &reqs, None, &model).unwrap();
        assert_eq!(p.conflicts, 0);
        // Only x jobs: they must share, and the conflict is reported.
        let p = place(
            &cluster(1, 4, &[1, 2, 4]),
            &[req("x1", 2, 1), req("x2", 2, 1)],
            None,
            &model,
        )
        .unwrap();
        assert_eq!(p.conflicts, 1);
    }

    #[test]
    fn offsets_are_aligned_and_multi_worker_jobs_get_one_slot_per_worker() {
        let types = cluster(2, 8, &[2, 4, 8]);
        let reqs = [req("a", 2, 3), req("b", 4, 2), req("c", 2, 1)];
        let p = place(&types, &reqs, None, &NoInterference).unwrap();
        assert_eq!(p.gpus_of("a").len(), 3);
        assert_eq!(p.gpus_of("b").len(), 2);
        for g in &p.gpus {
            assert!(g.used() <= 8);
            for s in &g.slots {
                assert_eq!(s.offset % s.size, 0, "{g}");
            }
        }
    }

    #[test]
    fn requests_over_capacity_are_refused_with_the_type() {
        let types = cluster(1, 4, &[1, 2, 4]);
        let e = place(
            &types,
            &[req("a", 4, 1), req("b", 1, 1)],
            None,
            &NoInterference,
        )
        .unwrap_err();
        assert_eq!(
            e,
            PlacementError::OverCapacity {
                gpu: "g".into(),
                needed: 5,
                capacity: 4
            }
        );
        let e = place(&types, &[req("a", 3, 1)], None, &NoInterference).unwrap_err();
        assert!(
            e.to_string()
                .contains("slot 3 must be one of the slot_sizes of g"),
            "{e}"
        );
    }
}
