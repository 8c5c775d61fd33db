//! `sts`: the crate's spatiotemporal-fair round scheduler ([`RoundScheduler`]) as a simulation
//! policy.
//!
//! Each round the active jobs form an STS round problem (MODEL.md): every GPU is cut into `U`
//! units (2 by default: half GPUs, chosen by measurement, docs/simulation.md) with slots of 1, 2,
//! 4, ... units, and a job's predicted throughput in each slot comes from the Gavel data exactly
//! as `stsfair gen --gavel` derives it ([`slot_throughputs_by`]): the solo throughput for a whole
//! GPU, the median co-located throughput for a half GPU, and for smaller slots the co-runner
//! composition rule that the simulation then realizes ([`PolicyOptions::sts_slot_rule`];
//! docs/costs.md). The round scheduler solves the problem (the solver is configurable: `dp` is
//! exact and fast, `ilp` the HiGHS baseline), relaxes the fairness constraint when the forced
//! jobs cannot all fit, and places the slots on GPUs choosing co-runners by their measured
//! slowdowns. Jobs are weighted by least attained service by default ([`Weights`]) in crowded
//! rounds, equally in the others (below), and a distributed job's weight grows with a power of
//! its workers ([`job_weight`], below).
//!
//! What a job then really gets is read from the measurements for its actual co-runners: alone
//! on its GPU, its solo throughput; beside one job, the measured pair throughput; beside several,
//! the product of the pairwise slowdowns (the composition rule of
//! [`ThroughputModel::throughput_with`](stsfair_costs::ThroughputModel::throughput_with)). A pair measured as impossible (Gavel's `[0, 0]`) gives
//! the job nothing that round. The realized throughputs are what the round scheduler's deficits
//! are updated with, so mispredictions are paid back in later rounds.
//!
//! The fairness parameters (lambda, the allowed debt Delta, the credit bound B; MODEL.md section
//! 3) are [`PolicyOptions::sts_fairness`], 1, 1 and 1 by default.
//!
//! **Pairing step** ([`PolicyOptions::sts_pairing`], on by default with threshold 1.4). A value
//! per (job, slot) cannot say beside whom a half GPU is spent, and the median pair it assumes is
//! not who the placement finds: half slots realized 0.68 of solo where they were planned at 0.78
//! (docs/results.md). So before each round the active single-GPU jobs are matched, per GPU
//! type, into pairs whose measured pair sum `r(a|b) + r(b|a)` (each job's shared throughput over
//! its solo one) is at least the threshold ([`greedy_pairs`]). A matched job's half slot on that
//! type is priced at its partner's measured ratio; an unmatched job gets no half slot there, only
//! whole GPUs. Placement then puts matched partners together first (their co-location cost is 0;
//! any other pair's is its slowdown plus 1). The round problem still chooses who runs and where,
//! exactly; the matching only says what a half slot is worth. It applies to the 2-unit ladder
//! (the default); with other ladders the slot times stay those of the slot rule. The threshold
//! can differ by GPU type ([`PolicyOptions::sts_pairing_by_type`]); by default it is derived
//! from the throughputs and the cluster ([`derived_pairing_by_type`]): 1.0 on the slowest of
//! several GPU types, since the jobs that run there are those the faster types had no room for
//! (the oldest, under least-attained-service weights), for whom a pair of sum >= 1 does more
//! than one of them alone; infinite (no pair reaches it, so single-GPU jobs get whole GPUs
//! only) on a type whose pairs are weak, its median pair sum below halfway from 1 to the
//! threshold, where sharing cost JCT and makespan as jobs kept arriving. On Gavel's cluster
//! that is the K80s at 1.0, the P100s infinite (median sum 1.13 against 1.37 on the V100s),
//! the V100s at the threshold (docs/simulation.md, "Pairs on the K80s", "Pairing thresholds where
//! arrivals go on").
//!
//! **Paired rounds** ([`PolicyOptions::sts_paired_rounds`], on by default). Where
//! the attained-service weights do not apply (below) and every active job is a single-GPU job,
//! the round is planned with pairs as items ([`paired`]): a GPU shared by two jobs is one
//! choice worth both jobs' measured throughputs, solved exactly over classes of identical jobs.
//! The pairing step's matching gives a half slot one value, its partner's, but whether the
//! partner takes its half beside it is the round problem's choice for the partner, and the
//! placement seats the half slots beside whoever is left: at 5.6 jobs/h the rounds realized
//! 97.1-98.1% of what the measured pairs allow. The round problem's plan still names the forced
//! jobs and their least throughputs, which the paired round keeps (or the round is planned as
//! usual), and the round mechanism's deficits follow what the paired round runs
//! (docs/simulation.md, "Pairs as items").
//!
//! **Sharing when crowded** ([`PolicyOptions::sts_crowded_sharing`], off by default). On the
//! GPU types it names, in the rounds where the attained-service weights apply (below), a job
//! that the pairing step matched there gets only its half slot, beside its partner, and no whole
//! GPU of that type: the weights would give a young job a whole V100 and leave its pair's extra
//! work undone while more jobs wait than run. Measured with `v100` under the drained overload
//! (8 jobs/h): a lower JCT on 17 seeds of 20, a shorter makespan on 16, but a makespan longer
//! than gavel-mmf-ss's on one seed more (docs/simulation.md, "Matched jobs share the V100s when
//! crowded").
//!
//! **Attained service when crowded** ([`PolicyOptions::sts_crowding`], 1.5 by default). The
//! attained-service weights ([`Weights::Attained`]) apply only in rounds where the active jobs
//! outnumber the cluster's GPUs 1.5 times; in other rounds every job has its trace weight.
//! Least attained service finishes the short jobs first when many more jobs wait than run, but
//! where jobs keep arriving it gives the old jobs a vanishing share, parks them on slow GPUs
//! and lets the cluster clog (docs/simulation.md, "Arrivals that do not stop"). The jobs are
//! counted, not the GPUs they ask for: with multi-GPU jobs arriving at 2.6 jobs/h the GPUs
//! asked for exceeded 1.5 times the cluster in most rounds, and on one seed in six the old jobs
//! starved (with size exponent 1, below: a single-GPU job of the window waited 1,795 h, a makespan
//! of 3,526 h against gavel-mmf-ss's 3,038 h; counting jobs: 804 h; docs/simulation.md, "Weights
//! that count the workers"). On single-GPU jobs the two counts are the same.
//!
//! **Held until the next arrival** ([`PolicyOptions::sts_crowding_hold`], on by default). After
//! a crowded round the attained-service weights stay on, however few jobs are left, until the
//! next job arrives: a crowded cluster that nothing enters is draining a finite backlog, the
//! case where least attained service is right (what it held back is what is left), and the
//! clog it causes needs arrivals. Under the drained overload (8 jobs/h) the hold
//! gives a lower JCT on every seed of six and a shorter makespan on five (the cluster busier,
//! the drain shorter), for about the same solver time; with jobs arriving as in Gavel's
//! simulator it changes only the rounds between a crowded round and the next arrival
//! (docs/simulation.md, "Held until the next arrival").
//!
//! **Starvation promotion** ([`PolicyOptions::sts_promotion`], factor 4 by default). Where
//! attained service orders the jobs, a job whose age less its service is more than 4 times
//! its service is weighted as a new job until it has run again ([`attained_for_weight`]), as
//! Tiresias promotes starved jobs. Past saturation, where the queue grows while jobs keep
//! arriving, least attained service otherwise holds a long job behind every newer one until
//! the arrivals stop (3.0 multi-GPU jobs/h: window jobs waiting thousands of hours; the
//! window's mean JCT 0.588x of gavel-mmf-ss's without the promotion, 0.836x with it). Under the
//! drained overload (8 jobs/h) it moves the mean JCT by 0.05%; where the rounds are not crowded it
//! cannot act (docs/simulation.md, "Starvation promotion past saturation").
//!
//! **Critical jobs** ([`PolicyOptions::sts_critical`], factor 1.2 by default). Where attained
//! service orders the jobs and the cluster drains (no job has arrived for an hour, the policy's
//! sign of a drain; [`PolicyOptions::sts_critical_after`]), a job whose remaining work would
//! outlast the backlog is weighted as a new job ([`critical_jobs`]). Its remaining work is its
//! remaining steps over its best solo throughput on the cluster's types that can hold it, in hours;
//! the backlog's drain time is the sum of every active job's remaining hours (times its workers)
//! over the work the cluster did in the previous round (each placed job's realized throughput over
//! its best solo one, times its workers); a job is critical when its remaining hours are at least
//! the factor times that drain time. Least attained service holds a long job back while the short
//! ones run, and where the crowd then drains, that job, started late and served slowly, finishes
//! last: under the drained overload (8 jobs/h), without the rule, the makespan was longer than
//! gavel-mmf-ss's on 8 seeds of 20; with the rule on none (docs/simulation.md, "Jobs that would
//! outlast the backlog"). A job becomes critical only once its remaining work is about as long as
//! everything else left, so the short jobs keep their order. Where jobs keep arriving past
//! saturation the backlog does not drain, and promoting its long jobs clogged the cluster (6.4
//! jobs/h: twice the JCT); hence the wait for an hour without arrivals. The rule reads each job's
//! remaining steps, which Gavel's scheduler also knows (its finish-time fairness policy uses them);
//! `off` for a scheduler that does not.
//!
//! **Weights that count the workers** ([`PolicyOptions::sts_size_exponent`], 0.75 by default).
//! A job of d_j workers weighs d_j^0.75 times a one-worker job ([`job_weight`]). With one weight
//! a job (exponent 0) a GPU of an 8-GPU job is worth an eighth of a single-GPU job's, the
//! single-GPU jobs keep whole GPUs that pairs could have shared, and where multi-GPU jobs keep
//! arriving at 2.6 jobs/h the 8-GPU jobs queue until the cluster clogs. Exponent 1 gives every
//! job the same share of time, as Gavel's max-min fairness does, and makes the round problem
//! maximize normalized work: no clog, but the single-GPU jobs wait longer than with a smaller
//! exponent (docs/simulation.md, "Weights that count the workers"). On single-GPU jobs every factor
//! is 1 and nothing changes.
//!
//! **Second stage** ([`PolicyOptions::sts_second_stage`], on by default with exponent 0.25;
//! `RoundScheduler::with_second_stage`). The attained-service weights span orders of magnitude,
//! so in the round problem they decide where jobs run as well as who runs: the young jobs take
//! the fast types whatever they gain there and the old ones run on the K80s at a fifth of their
//! speed (docs/simulation.md, "Work per busy GPU"). After the round problem chooses who runs,
//! where those jobs run is chosen again, exactly, with the weights' fourth roots; every fairness
//! minimum still holds. The second stage runs only in the rounds where the attained-service
//! weights apply ([`PolicyOptions::sts_second_stage_rounds`]): elsewhere the weights differ only by
//! distributed jobs' size factors, and softening those made multi-GPU jobs wait longer.
//!
//! When the DP refuses a round problem as too large (its state limit, `SolveError::TooLarge`),
//! that problem goes to the ILP (feature `highs`), which gives the same optimum; the simulation
//! reports how often (`solver_fallbacks`).
//!
//! Per round: one round-problem solve (three when relaxing: the infeasible one, the count problem
//! and the relaxed round), one more for the second stage in the rounds that have it, O(n)
//! instance building, and placement.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use super::super::engine::{GpuGroup, RoundReport, Scheduler, SimState};
use super::super::{Cluster, SimConfig, SimError, ThroughputTable};
use super::PolicyOptions;
use super::paired::{self, PairedCache, PairedJob};
use stsfair::instance::{Fairness, Instance, JobSpec};
use stsfair::rounds::RoundScheduler;
use stsfair::solvers::{Fallback, Solver, SolverConfig, SolverKind};
use stsfair_costs::slots::{SlotRule, slot_throughputs_by};

/// How the sts policy weights jobs. The weight w_j sets a job's fair share phi_j = w_j / (sum of
/// w) and the value of its options (MODEL.md sections 3 and 4). A distributed job's weight is
/// then multiplied by a power of its workers ([`job_weight`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Weights {
    /// The trace's priority weights (1 for generated jobs): equal shares (of time, as Gavel's
    /// policies, with size exponent 1, [`job_weight`]).
    Trace,
    /// Least attained service first, as Tiresias (Gu et al., NSDI 2019) orders jobs without
    /// knowing their length: w_j = (trace weight) / (1 + a_j / 1 hour), with a_j the time the
    /// job has run so far, each round counted by its slot's fraction of a GPU (a round on half
    /// GPUs counts half) and once however many workers the job has; recomputed every round.
    /// Jobs that have run little get larger shares and count for more; every job keeps the
    /// fairness floor of its (smaller) share.
    ///
    /// The default, chosen by measurement (docs/results.md, "Saturation and overload"): at 5.6
    /// jobs/h, 2.6 jobs/h with multi-GPU jobs and 8 jobs/h it gave a lower average JCT than
    /// [`Weights::Trace`] on every seed (measured with GPU time, [`Weights::AttainedGpu`]). A
    /// distributed job counts its service once, not per GPU, because the round problem already
    /// charges it for its size. Counting GPU time as well held the 8-GPU jobs back until the
    /// cluster emptied, and made the multi-GPU mix's makespan at 2.6 jobs/h longer than
    /// gavel-mmf-ss's on 5 of 12 seeds (counted once: on none, and the makespan 8.7% shorter on
    /// the mean: docs/simulation.md, "Attained service per job"). These weights apply only in
    /// crowded rounds ([`PolicyOptions::sts_crowding`]) and until the next arrival after one
    /// ([`PolicyOptions::sts_crowding_hold`]): measured as Gavel does, with jobs arriving until
    /// the window is done, applying them in every round lost to gavel-mmf-ss. The weight is also
    /// multiplied by a power of the job's workers ([`job_weight`]): with one-job weights a
    /// distributed job's value per GPU is `w_j / d_j`, and where multi-GPU jobs keep arriving
    /// the 8-GPU jobs queue until the cluster clogs.
    #[default]
    Attained,
    /// Least attained service with a_j in GPU-hours (each worker's GPU time counted), as
    /// Tiresias's two-dimensional attained service (it gives the same weights as
    /// [`Weights::Attained`] when every job has one worker).
    AttainedGpu,
}

impl Weights {
    /// The attained service a round adds to a job of `workers` workers in slots of `fraction`
    /// of a GPU for `seconds`: `fraction * seconds`, once per job, or once per worker for
    /// [`Weights::AttainedGpu`].
    pub fn service(self, workers: usize, fraction: f64, seconds: f64) -> f64 {
        let counted = match self {
            Weights::AttainedGpu => workers as f64,
            Weights::Attained | Weights::Trace => 1.0,
        };
        counted * fraction * seconds
    }
}

/// The default exponent of sts's size weights ([`PolicyOptions::sts_size_exponent`]): a job of
/// d workers weighs d^0.75 times a one-worker job ([`job_weight`]). Chosen by measurement
/// (docs/simulation.md, "Weights that count the workers" and "The size exponent once the second
/// stage is confined"): with multi-GPU jobs arriving at 2.6 jobs/h, exponent 0 (one weight a
/// job) lets the 8-GPU jobs queue until the cluster clogs, and exponent 1 (the same share of
/// time for every job, as in Gavel's max-min fairness) ends the clog but makes the single-GPU
/// jobs wait; with the second stage only in crowded rounds, 0.6 gives a lower JCT than 0.5 on
/// every one of 12 seeds, 0.75 lower still on 10 of them (every seed at 1.1x of gavel-mmf-ss's
/// or more) and at 3.0 jobs/h, and 1 loses to 0.75.
pub const DEFAULT_SIZE_EXPONENT: f64 = 0.75;

/// Checks the exponent of sts's size weights ([`PolicyOptions::sts_size_exponent`]): in [0, 1].
pub fn check_size_exponent(exponent: f64) -> Result<(), SimError> {
    check_setting(
        Some(exponent),
        "sts_size_exponent",
        "must be an exponent in [0, 1]",
        |e| (0.0..=1.0).contains(&e),
    )
}

/// The weight sts gives a job this round: its trace weight `trace` times `workers` raised to
/// `size_exponent` (a distributed job's size factor, [`PolicyOptions::sts_size_exponent`]),
/// divided by 1 + its attained hours when attained service orders the jobs this round
/// (`attained_seconds` is `Some`: [`Weights::Attained`] or [`Weights::AttainedGpu`] in a
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

/// The STS policy.
pub struct Sts {
    solver: SolverKind,
    units: u32,
    fairness: Fairness,
    ladder: Vec<u32>,
    slot_rule: SlotRule,
    weights: Weights,
    /// The exponent of a distributed job's size factor (`PolicyOptions::sts_size_exponent`).
    size_exponent: f64,
    /// Whether forced jobs' service is priced by the long-run LP (`PolicyOptions::sts_prices`).
    prices: bool,
    /// Seconds of service each job has received, for the attained-service weights: a round in
    /// a slot of `fraction` of a GPU counts `fraction` of it, once per job
    /// ([`Weights::Attained`]) or once per worker ([`Weights::AttainedGpu`]).
    attained: HashMap<usize, f64>,
    inner: Option<RoundScheduler>,
    /// Job id -> its name in the round scheduler.
    names: HashMap<usize, String>,
    /// (name, realized throughput) of the jobs placed in the round being run.
    realized: Vec<(String, f64)>,
    solver_seconds: f64,
    fallbacks: Arc<AtomicU64>,
    /// Sum of realized / planned throughput over job-rounds, and their number.
    kept_promises: (f64, u64),
    /// The pairing step, when on and the ladder is half GPUs.
    pairing: Option<Pairing>,
    /// The exponent of the round scheduler's second stage (`PolicyOptions::sts_second_stage`).
    second_stage: Option<f64>,
    /// In which rounds the second stage runs (`PolicyOptions::sts_second_stage_rounds`).
    second_stage_rounds: SecondStageRounds,
    /// When attained service weights the jobs (`PolicyOptions::sts_crowding` and
    /// `PolicyOptions::sts_crowding_hold`).
    crowding: Crowding,
    /// The factor of the starvation promotion (`PolicyOptions::sts_promotion`).
    promotion: Option<f64>,
    /// The factor of the critical-job rule (`PolicyOptions::sts_critical`).
    critical: Option<f64>,
    /// The work the cluster did in the last round that placed a job, in best-speed GPUs: each
    /// placed job's realized throughput over its best solo one, times its workers
    /// ([`critical_jobs`]).
    work_rate: Option<f64>,
    /// Seconds without an arrival before the critical-job rule acts
    /// (`PolicyOptions::sts_critical_after`).
    critical_after: f64,
    /// When the last job was admitted (at the start of the round after its arrival), seconds.
    last_arrival: Option<f64>,
    /// Whether uncrowded rounds of single-GPU jobs are paired rounds
    /// (`PolicyOptions::sts_paired_rounds`).
    paired_rounds: bool,
    /// The last paired round's program and answer.
    paired_cache: PairedCache,
}

/// When the attained-service weights apply (module docs): in crowded rounds, where the active
/// jobs are more than `ratio` times the cluster's GPUs (every round for `None`), and with the
/// hold on from a crowded round until the next job arrives.
#[derive(Debug, Clone, Copy)]
struct Crowding {
    ratio: Option<f64>,
    hold: bool,
    /// A crowded round came and no job has arrived since.
    holding: bool,
}

impl Crowding {
    fn new(ratio: Option<f64>, hold: bool) -> Crowding {
        Crowding {
            ratio,
            hold,
            holding: false,
        }
    }

    /// Whether attained service orders the jobs in a round of `active` jobs on `gpus` GPUs.
    /// Jobs are counted, not their workers (module docs).
    fn applies(&mut self, active: usize, gpus: u64) -> bool {
        let crowded = self
            .ratio
            .is_none_or(|ratio| active as f64 > ratio * gpus as f64);
        self.holding = self.hold && (crowded || self.holding);
        crowded || self.holding
    }

    /// A job arrived: the cluster is not draining, and the hold ends.
    fn job_arrived(&mut self) {
        self.holding = false;
    }
}

/// The pairing step's state (module docs).
#[derive(Debug, Default)]
struct Pairing {
    /// Least pair sum `r(a|b) + r(b|a)` of a matched pair.
    threshold: f64,
    /// The thresholds of GPU types that have their own (by type name); `None` until the first
    /// round when they are derived from the data ([`derived_pairing_by_type`]).
    by_type: Option<HashMap<String, f64>>,
    /// GPU types on which a matched job gets only its half slot in crowded rounds
    /// (`PolicyOptions::sts_crowded_sharing`).
    shared_when_crowded: Vec<String>,
    /// (GPU type index, job id) -> the job's partner this round; read by the placement's
    /// co-location model, which the round scheduler owns.
    partners: Arc<RwLock<HashMap<(usize, usize), usize>>>,
    /// Each job's slot times as derived at its arrival (GPU type index, slot units, seconds per
    /// iteration): the whole-GPU times are kept, the half-GPU ones replaced every round.
    arrival_times: HashMap<usize, Vec<(usize, u64, f64)>>,
    /// The times the round scheduler holds for each job, so that only changes are sent.
    given: HashMap<usize, Vec<(usize, u64, f64)>>,
}

impl Pairing {
    /// The least pair sum of a matched pair on the GPU type named `name`: its own threshold, or
    /// the step's.
    fn threshold_on(&self, name: &str) -> f64 {
        self.by_type
            .as_ref()
            .and_then(|t| t.get(name).copied())
            .unwrap_or(self.threshold)
    }
}

impl std::fmt::Debug for Sts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sts")
            .field("solver", &self.solver)
            .field("units", &self.units)
            .field("fairness", &self.fairness)
            .finish()
    }
}

/// Slot sizes 1, 2, 4, ... up to `units` (a divisibility ladder), plus `units` itself.
fn ladder(units: u32) -> Vec<u32> {
    let mut sizes: Vec<u32> = std::iter::successors(Some(1u32), |s| s.checked_mul(2))
        .take_while(|&s| s < units)
        .collect();
    sizes.retain(|&s| units.is_multiple_of(s));
    sizes.push(units);
    sizes
}

/// Checks MODEL.md section 3's ranges of the fairness parameters with the instance format's own
/// rule ([`Fairness::check`]). [`Sts::new`] calls it so that a bad setting is refused before the
/// run (the instance builder would refuse it only at the first arrival, as a solver failure).
pub fn check_fairness(f: &Fairness) -> Result<(), SimError> {
    f.check().map_err(|source| SimError::Fairness { source })
}

/// The pairing step's default threshold on the pair sum `r(a|b) + r(b|a)`
/// ([`PolicyOptions::sts_pairing`]), chosen by measurement as Gavel's simulator measures, with
/// jobs arriving until the window is done: 1.0 to 1.7 on seeds 0-2, then seeds 3-5
/// (docs/simulation.md, "Pairing thresholds where arrivals go on"; the step itself: "A pairing
/// step").
pub const DEFAULT_PAIRING: f64 = 1.4;

/// The pairing step's thresholds by GPU type, derived from the data the policy is given (the
/// default, [`PolicyOptions::sts_pairing_by_type`] `None`): for a threshold `threshold` on the
/// other types,
///
/// - the slowest GPU type of a cluster of two or more types gets `min(1, threshold)`: the jobs
///   that run there are those the faster types had no room for (the oldest, under
///   least-attained-service weights), and when more jobs are active than GPUs the alternative
///   to a pair of sum >= 1 is one of the two waiting. Speed is [`ThroughputTable::speeds`]
///   over the cluster's types (the median over the single-GPU job types that run on all of
///   them of the job's log solo throughput relative to its mean); the slowest is the one
///   strictly below the others (none on a tie). Measured on Gavel's K80s
///   (docs/simulation.md, "Pairs on the K80s": under overload 1.5% less JCT and 0.7% less
///   makespan on seeds 0-5, at 5.6 jobs/h no change);
/// - another type whose pairs are weak, the median pair sum `r(a|b) + r(b|a)` of its known
///   pairs of single-GPU job types (every unordered pair, a job beside itself too, both
///   throughputs above 0) below `(1 + threshold) / 2`, halfway from time slicing to the
///   threshold, gets infinity: no pairs, whole GPUs only (a type with no known pair too).
///   Measured on Gavel's P100s, median 1.13 against 1.37 on the V100s: where jobs keep
///   arriving, whole P100s gave 1.2% less JCT and makespan than P100 pairs at 1.4
///   (docs/simulation.md, "Pairing thresholds where arrivals go on");
/// - every other type keeps `threshold`.
///
/// On Gavel's table with `v100=36,p100=36,k80=36` and the default 1.4: the K80s 1.0 (median
/// 1.05), the P100s infinite (1.13 < 1.2), the V100s 1.4 (1.37). O(K * J^2) for K types of the
/// cluster and J job types.
pub fn derived_pairing_by_type(
    table: &ThroughputTable,
    cluster: &Cluster,
    threshold: f64,
) -> Vec<(String, f64)> {
    let singles: Vec<usize> = (0..table.job_types().len())
        .filter(|&j| table.job_types()[j].scale_factor == 1)
        .collect();
    let slowest = slowest_type(table, cluster);
    let weak_below = 0.5 * (1.0 + threshold);
    let mut out = Vec::new();
    for (k, t) in cluster.types.iter().enumerate() {
        if slowest == Some(k) {
            out.push((t.name.clone(), threshold.min(1.0)));
            continue;
        }
        let w = t.worker;
        let runs: Vec<usize> = singles
            .iter()
            .copied()
            .filter(|&j| table.solo(w, j) > 0.0)
            .collect();
        let mut sums = Vec::new();
        for (i, &a) in runs.iter().enumerate() {
            for &b in &runs[i..] {
                let (oa, ob) = table.pair(w, a, b);
                if oa > 0.0 && ob > 0.0 {
                    sums.push(oa / table.solo(w, a) + ob / table.solo(w, b));
                }
            }
        }
        sums.sort_by(f64::total_cmp);
        let n = sums.len();
        let median = match n {
            0 => None,
            _ if n % 2 == 1 => Some(sums[n / 2]),
            _ => Some(0.5 * (sums[n / 2 - 1] + sums[n / 2])),
        };
        if median.is_none_or(|m| m < weak_below) {
            out.push((t.name.clone(), f64::INFINITY));
        }
    }
    out
}

/// The cluster's slowest GPU type (index into `cluster.types`) for
/// [`derived_pairing_by_type`], by [`ThroughputTable::speeds`] over the cluster's types
/// (strictly least); `None` for one type or a tie.
fn slowest_type(table: &ThroughputTable, cluster: &Cluster) -> Option<usize> {
    if cluster.types.len() < 2 {
        return None;
    }
    let workers: Vec<usize> = cluster.types.iter().map(|t| t.worker).collect();
    let speed = table.speeds(&workers);
    let least = speed.iter().copied().fold(f64::INFINITY, f64::min);
    let at_least: Vec<usize> = (0..speed.len()).filter(|&k| speed[k] == least).collect();
    match at_least.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// The default exponent of the round scheduler's second stage in `sts`
/// ([`PolicyOptions::sts_second_stage`], `RoundScheduler::with_second_stage`): after the round
/// problem chooses who runs with the attained-service weights, where they run is chosen again
/// with the fourth roots of the weights. Chosen by measurement with the stage only in crowded
/// rounds: under the drained overload (8 jobs/h) exponents 0, 0.25, 0.5 and 0.75 give a mean JCT
/// of 22.44, 21.39, 21.63 and 21.87 h (docs/simulation.md, "The second stage's exponent where
/// only crowded rounds have it").
pub const DEFAULT_SECOND_STAGE: f64 = 0.25;

/// In which rounds `sts`'s second stage runs ([`PolicyOptions::sts_second_stage_rounds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecondStageRounds {
    /// Only in rounds where the attained-service weights apply ([`Weights::Attained`] or
    /// [`Weights::AttainedGpu`], in a crowded round or the hold after one), the weights it was
    /// made to soften: they span orders of magnitude there. The default, chosen by measurement
    /// (docs/simulation.md, "The second stage only where attained service weights the jobs"): in
    /// the other rounds the weights differ only by the size factor of distributed jobs
    /// ([`job_weight`]), and softening that one made the multi-GPU mix at 2.6 jobs/h wait longer on
    /// every seed. Single-GPU runs are unchanged: there the weights of an uncrowded round are all
    /// equal, and the second stage had nothing to do.
    #[default]
    Attained,
    /// In every round where the chosen jobs' weights differ.
    All,
}

/// Checks the second stage's exponent ([`PolicyOptions::sts_second_stage`]): in [0, 1], or
/// `None` (off).
pub fn check_second_stage(exponent: Option<f64>) -> Result<(), SimError> {
    check_setting(
        exponent,
        "sts_second_stage",
        "must be an exponent in [0, 1] or off",
        |e| (0.0..=1.0).contains(&e),
    )
}

/// The shared shape of the settings that are a number or `None` (off): `value` must pass `ok`,
/// else `setting` is refused with `rule`.
fn check_setting(
    value: Option<f64>,
    setting: &'static str,
    rule: &'static str,
    ok: impl Fn(f64) -> bool,
) -> Result<(), SimError> {
    match value {
        Some(v) if !ok(v) => Err(SimError::Setting {
            setting,
            rule,
            got: v.to_string(),
        }),
        _ => Ok(()),
    }
}

/// A finite number >= 0.
fn finite_non_negative(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

/// A pair sum threshold: a number >= 0, or infinite (no pair reaches it: whole GPUs only).
fn pair_sum(v: f64) -> bool {
    v >= 0.0
}

/// The default crowding above which attained service weights the jobs
/// ([`PolicyOptions::sts_crowding`]): 1.5, the active jobs half again as many as the cluster's
/// GPUs. Chosen by measurement (docs/simulation.md, "Arrivals that do not stop": with jobs arriving
/// until the window is done, at 5.6 jobs/h, the weights are equal in every round and sts beats
/// gavel-mmf-ss where least attained service in every round lost to it; under the drained
/// overload (8 jobs/h) the cluster is crowded and least attained service orders the jobs; 2 left
/// too many overloaded rounds to equal weights).
pub const DEFAULT_CROWDING: f64 = 1.5;

/// Checks the crowding threshold of the attained-service weights
/// ([`PolicyOptions::sts_crowding`]): a finite ratio >= 0, or `None` (always).
pub fn check_crowding(factor: Option<f64>) -> Result<(), SimError> {
    check_setting(
        factor,
        "sts_crowding",
        "must be a ratio >= 0 or off",
        finite_non_negative,
    )
}

/// The default factor of sts's starvation promotion ([`PolicyOptions::sts_promotion`]): in a
/// round where attained service orders the jobs, a job whose age less its attained service
/// is more than 4 times its attained service is weighted as a job that has not run yet
/// ([`attained_for_weight`]). Chosen by measurement (docs/simulation.md, "Starvation promotion
/// past saturation"): past saturation (3.0 multi-GPU jobs/h with arrivals going on) least
/// attained service held the window's long jobs behind every newer arrival; 4 took the mean
/// JCT there from 0.588x of gavel-mmf-ss's to 0.836x, 10 to 0.662x, and under the drained
/// overload (8 jobs/h) neither moved the mean JCT by more than 0.05%. 2 gained more past
/// saturation on the one seed run but cost 0.8% of JCT under the overload.
pub const DEFAULT_PROMOTION: f64 = 4.0;

/// Checks the factor of sts's starvation promotion ([`PolicyOptions::sts_promotion`]): a
/// finite number >= 0, or `None` (off).
pub fn check_promotion(factor: Option<f64>) -> Result<(), SimError> {
    check_setting(
        factor,
        "sts_promotion",
        "must be a factor >= 0 or off",
        finite_non_negative,
    )
}

/// The attained service that weights a job of `age_seconds` that has `attained_seconds` of
/// service, under starvation promotion with `factor` ([`PolicyOptions::sts_promotion`]): 0 (a
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

/// The default factor of sts's critical-job rule ([`PolicyOptions::sts_critical`]): where
/// attained service orders the jobs and the cluster drains, a job whose remaining hours at its
/// best speed are at least 1.2 times the backlog's drain time is weighted as a new job
/// ([`critical_jobs`]). Chosen by measurement (docs/simulation.md, "Jobs that would outlast the
/// backlog"): under the drained overload (8 jobs/h), on the ten seeds it was chosen on, 1.0
/// shortened the makespans most and cost 1.8% more JCT than 1.2, 1.5 left three seeds longer
/// than gavel-mmf-ss's, 2 seven; 1.2 left none, and none of the other ten seeds either, for
/// 0.8% of the mean JCT over the twenty (1.267x of gavel-mmf-ss's).
pub const DEFAULT_CRITICAL: f64 = 1.2;

/// Checks the factor of sts's critical-job rule ([`PolicyOptions::sts_critical`]): a finite
/// number >= 0, or `None` (off).
pub fn check_critical(factor: Option<f64>) -> Result<(), SimError> {
    check_setting(
        factor,
        "sts_critical",
        "must be a factor >= 0 or off",
        finite_non_negative,
    )
}

/// The default of [`PolicyOptions::sts_critical_after`]: sts's critical-job rule acts once no
/// job has arrived for an hour. Without it, past saturation with arrivals going on (6.4 jobs/h
/// seed 2), promoting the long jobs in every crowded round clogged the cluster (mean JCT
/// 55.74 h against 27.26 h); the drained overload's makespans need only the drain (half an
/// hour to two hours gave the same means within 0.01 h of JCT and 0.1 h of makespan;
/// docs/simulation.md, "Jobs that would outlast the backlog"). An hour without arrivals is the
/// policy's sign of a drain, not a proof: past saturation such gaps happen (at 6.4 jobs/h
/// about one gap in 600), and where the rule met one there it changed no run measured.
pub const DEFAULT_CRITICAL_AFTER: f64 = 3600.0;

/// Checks [`PolicyOptions::sts_critical_after`]: finite seconds >= 0.
pub fn check_critical_after(seconds: f64) -> Result<(), SimError> {
    check_setting(
        Some(seconds),
        "sts_critical_after",
        "must be a finite number of seconds >= 0",
        finite_non_negative,
    )
}

/// Which jobs are critical under sts's critical-job rule with `factor`
/// ([`PolicyOptions::sts_critical`]): `remaining` holds each job's remaining hours at its best
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

/// Checks the pairing step's threshold ([`PolicyOptions::sts_pairing`]): a pair sum >= 0,
/// infinite (no pairs: whole GPUs only), or `None` (off).
pub fn check_pairing(threshold: Option<f64>) -> Result<(), SimError> {
    check_setting(
        threshold,
        "sts_pairing",
        "must be a pair sum >= 0, inf or off",
        pair_sum,
    )
}

/// Checks the pairing step's thresholds by GPU type ([`PolicyOptions::sts_pairing_by_type`]):
/// each a pair sum >= 0 or infinite (no pairs on that type), each type named once.
pub fn check_pairing_by_type(thresholds: &[(String, f64)]) -> Result<(), SimError> {
    for (i, (name, sum)) in thresholds.iter().enumerate() {
        if !pair_sum(*sum) {
            return Err(SimError::Setting {
                setting: "sts_pairing_types",
                rule: "must give each type a pair sum >= 0 or inf",
                got: format!("{name}={sum}"),
            });
        }
        if thresholds[..i].iter().any(|(n, _)| n == name) {
            return Err(SimError::Setting {
                setting: "sts_pairing_types",
                rule: "must name each GPU type once",
                got: name.clone(),
            });
        }
    }
    Ok(())
}

/// The name of job `id` in the round scheduler: it carries the job type so that the placement's
/// co-location model can read it back.
fn name(id: usize, job_type: usize) -> String {
    format!("{id}/{job_type}")
}

fn job_type_of(name: &str) -> Option<usize> {
    name.split_once('/').and_then(|(_, t)| t.parse().ok())
}

fn job_id_of(name: &str) -> Option<usize> {
    name.split_once('/').and_then(|(i, _)| i.parse().ok())
}

/// Pairs of `jobs` for one GPU type, greedily by pair sum: all pairs whose ratios
/// `ratios(a, b) = Some((r(a|b), r(b|a)))` sum to at least `threshold`, taken from the largest
/// sum down (ties by position in `jobs`) while both jobs are free. Returns `(a, b, r(a|b),
/// r(b|a))` per pair. `None` means the pair cannot share the type.
///
/// The greedy matching is within a factor 2 of a maximum-weight matching on the sums (Avis,
/// Networks 13, 1983); an exact one (Edmonds' blossom algorithm, O(n^3)) was not needed to
/// measure the step. O(n^2 log n) for n jobs: at most a few hundred single-GPU jobs are active
/// in the simulations, and the pairs of job types repeat, so `ratios` is a table lookup.
pub fn greedy_pairs(
    jobs: &[usize],
    threshold: f64,
    ratios: impl Fn(usize, usize) -> Option<(f64, f64)>,
) -> Vec<(usize, usize, f64, f64)> {
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

impl Sts {
    /// An STS policy for `cluster` with the solver, units and fairness parameters of `options`.
    pub fn new(
        _cluster: &Cluster,
        _config: &SimConfig,
        options: &PolicyOptions,
    ) -> Result<Sts, SimError> {
        // The round problem's own limit on units per GPU (its message below names 1024; the
        // assertion keeps the two in step), checked here so that a bad setting is refused
        // before the run rather than at the first arrival.
        const _: () = assert!(stsfair::instance::MAX_UNITS == 1024);
        if !(1..=stsfair::instance::MAX_UNITS).contains(&u64::from(options.sts_units)) {
            return Err(SimError::Setting {
                setting: "units",
                rule: "must be between 1 and 1024 (the round problem's limit on units per GPU)",
                got: options.sts_units.to_string(),
            });
        }
        check_fairness(&options.sts_fairness)?;
        check_pairing(options.sts_pairing)?;
        check_pairing_by_type(options.sts_pairing_by_type.as_deref().unwrap_or(&[]))?;
        check_second_stage(options.sts_second_stage)?;
        check_crowding(options.sts_crowding)?;
        check_promotion(options.sts_promotion)?;
        check_critical(options.sts_critical)?;
        check_critical_after(options.sts_critical_after)?;
        check_size_exponent(options.sts_size_exponent)?;
        if options.sts_prices && !cfg!(feature = "highs") {
            return Err(SimError::Setting {
                setting: "prices",
                rule: "lp needs the long-run LP, and this build has no HiGHS (feature highs)",
                got: "lp".into(),
            });
        }
        Ok(Sts {
            solver: options.sts_solver,
            units: options.sts_units,
            fairness: options.sts_fairness,
            ladder: ladder(options.sts_units),
            slot_rule: options.sts_slot_rule,
            weights: options.sts_weights,
            size_exponent: options.sts_size_exponent,
            prices: options.sts_prices,
            attained: HashMap::new(),
            inner: None,
            names: HashMap::new(),
            realized: Vec::new(),
            solver_seconds: 0.0,
            fallbacks: Arc::new(AtomicU64::new(0)),
            kept_promises: (0.0, 0),
            // The step prices half GPUs; other ladders keep the slot rule's times.
            pairing: options
                .sts_pairing
                .filter(|_| options.sts_units == 2)
                .map(|threshold| Pairing {
                    threshold,
                    by_type: options
                        .sts_pairing_by_type
                        .as_ref()
                        .map(|list| list.iter().cloned().collect()),
                    shared_when_crowded: options.sts_crowded_sharing.clone(),
                    ..Pairing::default()
                }),
            second_stage: options.sts_second_stage,
            second_stage_rounds: options.sts_second_stage_rounds,
            crowding: Crowding::new(options.sts_crowding, options.sts_crowding_hold),
            promotion: options.sts_promotion,
            critical: options.sts_critical,
            work_rate: None,
            critical_after: options.sts_critical_after,
            last_arrival: None,
            paired_rounds: options.sts_paired_rounds,
            paired_cache: PairedCache::default(),
        })
    }

    fn error(message: impl std::fmt::Display) -> SimError {
        SimError::Solver {
            policy: "sts".to_string(),
            message: message.to_string(),
        }
    }

    /// The round scheduler, built at the first arrival (it needs the throughputs).
    fn inner(&mut self, state: &SimState<'_>) -> Result<&mut RoundScheduler, SimError> {
        if self.inner.is_none() {
            let mut builder = Instance::builder().fairness(self.fairness);
            for t in &state.cluster.types {
                let sizes: Vec<u64> = self.ladder.iter().map(|&s| u64::from(s)).collect();
                builder =
                    builder.gpu_type(&t.name, u64::from(t.count), u64::from(self.units), &sizes);
            }
            let cluster = builder.build().map_err(Sts::error)?;
            let config = SolverConfig::default();
            let primary = self.solver.build(&config);
            // The ILP when built with HiGHS, and unless it is the configured solver already.
            let backup = SolverKind::ALL
                .iter()
                .find(|k| k.name() == "ilp" && **k != self.solver)
                .map(|k| k.build(&config));
            // The answer is exact either way; the refusals are counted.
            let solver: Box<dyn Solver> = match backup {
                Some(then) => Box::new(Fallback {
                    first: primary,
                    then,
                    fallbacks: Arc::clone(&self.fallbacks),
                }),
                None => primary,
            };
            // Placement chooses co-runners by measured slowdown, 1 - shared / solo (infinite
            // for pairs that cannot share).
            let table = Arc::new(state.table.clone());
            let workers: HashMap<String, usize> = state
                .cluster
                .types
                .iter()
                .map(|t| (t.name.clone(), t.worker))
                .collect();
            // With the pairing step, matched partners cost 0 and any other pair 1 more than its
            // slowdown (slowdowns are below 1), so placement keeps the matched pairs together
            // first and then minimizes the slowdowns of the rest.
            let partners = self.pairing.as_ref().map(|p| {
                let index: HashMap<String, usize> = state
                    .cluster
                    .types
                    .iter()
                    .enumerate()
                    .map(|(k, t)| (t.name.clone(), k))
                    .collect();
                (index, Arc::clone(&p.partners))
            });
            let model = move |job: &str, other: &str, gpu: &str| -> f64 {
                let (Some(a), Some(b), Some(&w)) =
                    (job_type_of(job), job_type_of(other), workers.get(gpu))
                else {
                    return 0.0;
                };
                let solo = table.solo(w, a);
                let (own, _) = table.pair(w, a, b);
                if own <= 0.0 || solo <= 0.0 {
                    return f64::INFINITY;
                }
                let slowdown = (1.0 - own / solo).max(0.0);
                let Some((index, partners)) = &partners else {
                    return slowdown;
                };
                let matched = match (job_id_of(job), job_id_of(other), index.get(gpu)) {
                    (Some(x), Some(y), Some(&k)) => {
                        partners.read().is_ok_and(|m| m.get(&(k, x)) == Some(&y))
                    }
                    _ => false,
                };
                if matched { 0.0 } else { slowdown + 1.0 }
            };
            // The second stage is set in `plan`, round by round.
            let scheduler = RoundScheduler::new(&cluster, solver).with_colocation(model);
            #[cfg(feature = "highs")]
            let scheduler = if self.prices {
                scheduler.with_service_prices(stsfair::bound::LongRunPrices::default())
            } else {
                scheduler
            };
            self.inner = Some(scheduler);
        }
        self.inner
            .as_mut()
            .ok_or_else(|| Sts::error("round scheduler missing"))
    }
}

impl Sts {
    /// The pairing step (module docs): matches the active single-GPU jobs per GPU type, prices
    /// each matched job's half slot at its partner's measured ratio, drops the unmatched jobs'
    /// half slots, and publishes the partners to the placement. O(n^2 log n) per GPU type for
    /// n single-GPU jobs, plus one time update per job whose times changed. `crowded`: the
    /// attained-service weights apply this round, where a job matched on a type of
    /// `PolicyOptions::sts_crowded_sharing` keeps only its half slot there.
    fn pair(&mut self, state: &SimState<'_>, crowded: bool) -> Result<(), SimError> {
        let Some(pairing) = self.pairing.as_ref() else {
            return Ok(());
        };
        let singles: Vec<usize> = state
            .active
            .iter()
            .copied()
            .filter(|&id| state.jobs[id].scale_factor == 1 && self.names.contains_key(&id))
            .collect();
        let mut partners: HashMap<(usize, usize), usize> = HashMap::new();
        // (GPU type index, job id) -> the job's half-slot throughput beside its partner.
        let mut half: HashMap<(usize, usize), f64> = HashMap::new();
        for (k, t) in state.cluster.types.iter().enumerate() {
            let w = t.worker;
            let ratios = |a: usize, b: usize| {
                let (ta, tb) = (state.jobs[a].job_type, state.jobs[b].job_type);
                let (sa, sb) = (state.table.solo(w, ta), state.table.solo(w, tb));
                let (oa, ob) = state.table.pair(w, ta, tb);
                (sa > 0.0 && sb > 0.0 && oa > 0.0 && ob > 0.0).then(|| (oa / sa, ob / sb))
            };
            let threshold = pairing.threshold_on(&t.name);
            for (a, b, ra, rb) in greedy_pairs(&singles, threshold, ratios) {
                partners.insert((k, a), b);
                partners.insert((k, b), a);
                half.insert((k, a), ra * state.table.solo(w, state.jobs[a].job_type));
                half.insert((k, b), rb * state.table.solo(w, state.jobs[b].job_type));
            }
        }
        // The types on which a matched job keeps only its half slot this round.
        let shared: Vec<bool> = state
            .cluster
            .types
            .iter()
            .map(|t| crowded && pairing.shared_when_crowded.contains(&t.name))
            .collect();
        let mut changed = Vec::new();
        for &id in &singles {
            let Some(arrival) = pairing.arrival_times.get(&id) else {
                continue;
            };
            let times: Vec<(usize, u64, f64)> = arrival
                .iter()
                .filter_map(|&(k, slot, seconds)| {
                    if slot == u64::from(self.units) {
                        // Crowded, a matched job shares these types with its partner: its whole
                        // GPU there would leave the pair's extra work undone.
                        let alone = !(shared[k] && half.contains_key(&(k, id)));
                        return alone.then_some((k, slot, seconds));
                    }
                    let thr = half.get(&(k, id))?;
                    Some((k, slot, 1.0 / thr))
                })
                .collect();
            // A job without whole-GPU times (none in the Gavel data) keeps its arrival times.
            if !times.is_empty() && pairing.given.get(&id) != Some(&times) {
                changed.push((id, times));
            }
        }
        for (id, times) in changed {
            let label = self.names.get(&id).cloned().unwrap_or_default();
            let slots: Vec<(&str, u64, f64)> = times
                .iter()
                .map(|&(k, s, t)| (state.cluster.types[k].name.as_str(), s, t))
                .collect();
            self.inner(state)?
                .update_times(&label, &slots)
                .map_err(Sts::error)?;
            if let Some(p) = self.pairing.as_mut() {
                p.given.insert(id, times);
            }
        }
        if let Some(p) = self.pairing.as_ref()
            && let Ok(mut m) = p.partners.write()
        {
            *m = partners;
        }
        Ok(())
    }
}

/// A job's run in a round, as planned and as realized.
struct Run {
    id: usize,
    /// Cluster type index.
    gpu_type: usize,
    /// GPU indices within the type.
    gpus: Vec<u32>,
    /// The share of each GPU it holds.
    fraction: f64,
    /// Steps/s the plan promised (0: no promise).
    planned: f64,
    /// Steps/s it gets beside its real co-runners.
    realized: f64,
}

impl Sts {
    /// Records `run` of the job the round scheduler names `name`: the promise kept, its
    /// attained service, and the throughput to report to the round mechanism. Returns its
    /// placement and its work in best-speed GPUs (realized over best solo, times its workers;
    /// 0 for a job that runs on no type), which sum to the round's work rate
    /// ([`critical_jobs`]).
    fn record_run(&mut self, state: &SimState<'_>, name: String, run: Run) -> (GpuGroup, f64) {
        if run.planned > 0.0 {
            self.kept_promises.0 += run.realized / run.planned;
            self.kept_promises.1 += 1;
        }
        *self.attained.entry(run.id).or_default() +=
            self.weights
                .service(run.gpus.len(), run.fraction, state.round_seconds);
        self.realized.push((name, run.realized));
        let best = state.best_solo(run.id);
        let work = if best > 0.0 {
            run.realized / best * f64::from(state.jobs[run.id].scale_factor)
        } else {
            0.0
        };
        let group = GpuGroup {
            jobs: vec![run.id],
            gpu_type: run.gpu_type,
            gpus: run.gpus,
            fraction: run.fraction,
            throughputs: vec![run.realized],
        };
        (group, work)
    }

    /// A paired round ([`paired`], module docs): the round problem's plan gives the forced jobs
    /// and their floors (m_j F_j, after its relaxation), the paired round decides who runs where
    /// and beside whom, and the round mechanism is told the throughputs it realizes, so the
    /// deficits follow what ran. `None` when the forced jobs cannot all run at their floors in
    /// the paired round; the caller then plans the round as usual. Within a job type, the least
    /// attained service takes the fastest place. The cost of the round problem's plan (the DP)
    /// plus one branch and bound over classes of jobs.
    fn plan_paired(&mut self, state: &SimState<'_>) -> Result<Option<Vec<GpuGroup>>, SimError> {
        let plan = self.inner(state)?.plan().map_err(Sts::error)?;
        let bounds: HashMap<&str, f64> = plan
            .jobs
            .iter()
            .filter(|p| p.forced && p.fair_rate > 0.0)
            .map(|p| (p.id.as_str(), p.minimum * p.fair_rate))
            .collect();
        let mut jobs: Vec<PairedJob> = state
            .active
            .iter()
            .filter_map(|&id| {
                let name = self.names.get(&id)?;
                Some(PairedJob {
                    id,
                    job_type: state.jobs[id].job_type,
                    weight: state.jobs[id].weight,
                    floor: bounds.get(name.as_str()).copied().unwrap_or(0.0),
                })
            })
            .collect();
        let attained = |id: usize| self.attained.get(&id).copied().unwrap_or(0.0);
        jobs.sort_by(|a, b| {
            attained(a.id)
                .total_cmp(&attained(b.id))
                .then(a.id.cmp(&b.id))
        });
        // The types the pairing step may share (an infinite threshold: whole GPUs only).
        let pairs_on: Vec<bool> = match self.pairing.as_ref() {
            Some(p) => state
                .cluster
                .types
                .iter()
                .map(|t| p.threshold_on(&t.name).is_finite())
                .collect(),
            None => vec![false; state.cluster.types.len()],
        };
        let answer = paired::solve_with(
            state.table,
            state.cluster,
            &jobs,
            &pairs_on,
            &mut self.paired_cache,
        )?;
        let Some(paired) = answer else {
            return Ok(None);
        };
        let mut next_gpu = vec![0u32; state.cluster.types.len()];
        let mut placements = Vec::new();
        let mut work_rate = 0.0;
        self.realized.clear();
        for gpu in paired.gpus {
            let k = gpu.gpu_type;
            let index = next_gpu[k];
            next_gpu[k] += 1;
            let fraction = 1.0 / gpu.jobs.len() as f64;
            for (id, throughput) in gpu.jobs {
                // Every job of the round has a name (`jobs` above).
                let Some(name) = self.names.get(&id).cloned() else {
                    continue;
                };
                // The plan is what runs: every promise is kept.
                let run = Run {
                    id,
                    gpu_type: k,
                    gpus: vec![index],
                    fraction,
                    planned: throughput,
                    realized: throughput,
                };
                let (group, work) = self.record_run(state, name, run);
                placements.push(group);
                work_rate += work;
            }
        }
        if !placements.is_empty() {
            self.work_rate = Some(work_rate);
        }
        Ok(Some(placements))
    }
}

/// Job `id`'s remaining steps at its best solo throughput, in hours (0 if it runs on no type).
fn remaining_hours(state: &SimState<'_>, id: usize) -> f64 {
    let best = state.best_solo(id);
    if best > 0.0 {
        state.remaining(id) / best / 3600.0
    } else {
        0.0
    }
}

impl Scheduler for Sts {
    fn name(&self) -> String {
        "sts".to_string()
    }

    fn job_arrived(&mut self, id: usize, state: &SimState<'_>) -> Result<(), SimError> {
        self.crowding.job_arrived();
        self.last_arrival = Some(state.now);
        let job = &state.jobs[id];
        let label = name(id, job.job_type);
        let mut spec = JobSpec::new(label.clone())
            .weight(job_weight(
                self.size_exponent,
                job.weight,
                job.scale_factor,
                None,
            ))
            .workers(u64::from(job.scale_factor));
        let model = state
            .table
            .model()
            .ok_or_else(|| Sts::error("the throughput table has no co-location model"))?;
        for (k, t) in state.cluster.types.iter().enumerate() {
            for (slot, thr) in slot_throughputs_by(
                self.slot_rule,
                model,
                t.worker,
                job.job_type,
                self.units,
                &self.ladder,
            ) {
                // A slot whose predicted throughput underflows (a 1/1024 GPU under the
                // composition rule: the product of a thousand slowdowns) has no finite time:
                // the job does not get it, as a slot it cannot run in.
                if thr > 0.0 && (1.0 / thr).is_finite() {
                    spec = spec.time(&t.name, u64::from(slot), 1.0 / thr);
                    if let Some(p) = self.pairing.as_mut() {
                        p.arrival_times.entry(id).or_default().push((
                            k,
                            u64::from(slot),
                            1.0 / thr,
                        ));
                    }
                }
            }
        }
        self.inner(state)?.add_job(spec).map_err(Sts::error)?;
        self.names.insert(id, label);
        Ok(())
    }

    fn job_finished(&mut self, id: usize, _state: &SimState<'_>) {
        self.attained.remove(&id);
        if let Some(p) = self.pairing.as_mut() {
            p.arrival_times.remove(&id);
            p.given.remove(&id);
        }
        if let (Some(label), Some(inner)) = (self.names.remove(&id), self.inner.as_mut()) {
            // The job is active in the scheduler: removal cannot fail.
            let _ = inner.remove_job(&label);
        }
    }

    fn round_finished(&mut self, _report: &RoundReport, _state: &SimState<'_>) {
        if let Some(inner) = self.inner.as_mut() {
            let realized: Vec<(&str, f64)> = self
                .realized
                .iter()
                .map(|(n, t)| (n.as_str(), *t))
                .collect();
            // Every reported job was in the plan and is still active: the report is valid.
            let _ = inner.report(&realized);
        }
        self.realized.clear();
    }

    fn plan(&mut self, state: &SimState<'_>) -> Result<Vec<GpuGroup>, SimError> {
        if state.active.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(p) = self.pairing.as_mut()
            && p.by_type.is_none()
        {
            let derived = derived_pairing_by_type(state.table, state.cluster, p.threshold);
            p.by_type = Some(derived.into_iter().collect());
        }
        // Attained service orders the jobs only in a crowded round, or until the next arrival
        // after one (module docs); otherwise every job has its trace weight. Service is counted
        // either way.
        let by_attained = self.weights != Weights::Trace
            && self
                .crowding
                .applies(state.active.len(), state.cluster.gpus());
        // Jobs whose remaining work would outlast the backlog are weighted as new ones where
        // attained service orders the jobs and the cluster drains (no arrival for
        // `critical_after` seconds; module docs). Before any job has run, the cluster's pace is
        // taken as every GPU at full speed.
        let draining = self
            .last_arrival
            .is_some_and(|t| state.now - t >= self.critical_after);
        let critical: Vec<bool> = match self.critical.filter(|_| by_attained && draining) {
            Some(factor) => {
                let remaining: Vec<(f64, u32)> = state
                    .active
                    .iter()
                    .map(|&id| (remaining_hours(state, id), state.jobs[id].scale_factor))
                    .collect();
                let rate = self.work_rate.unwrap_or(state.cluster.gpus() as f64);
                critical_jobs(&remaining, rate, factor)
            }
            None => vec![false; state.active.len()],
        };
        if self.weights != Weights::Trace {
            let weights: Vec<(String, f64)> = state
                .active
                .iter()
                .zip(&critical)
                .filter_map(|(&id, &critical)| {
                    let label = self.names.get(&id)?;
                    let job = &state.jobs[id];
                    let got = by_attained.then(|| {
                        let attained = self.attained.get(&id).copied().unwrap_or(0.0);
                        if critical {
                            return 0.0;
                        }
                        attained_for_weight(self.promotion, state.now - job.arrival, attained)
                    });
                    let w = job_weight(self.size_exponent, job.weight, job.scale_factor, got);
                    Some((label.clone(), w))
                })
                .collect();
            let inner = self.inner(state)?;
            for (label, w) in weights {
                inner.set_weight(&label, w).map_err(Sts::error)?;
            }
        }
        // Which rounds have the second stage depends on the crowding, so it is set every round.
        let stage = match self.second_stage_rounds {
            SecondStageRounds::Attained => self.second_stage.filter(|_| by_attained),
            SecondStageRounds::All => self.second_stage,
        };
        // Checked in `new`.
        self.inner(state)?
            .set_second_stage(stage)
            .map_err(Sts::error)?;
        let start = Instant::now();
        if self.paired_rounds
            && !by_attained
            && self.pairing.is_some()
            && state
                .active
                .iter()
                .all(|&id| state.jobs[id].scale_factor == 1)
        {
            // Without a paired plan the round is planned as usual, and its time counted below.
            if let Some(groups) = self.plan_paired(state)? {
                self.solver_seconds += start.elapsed().as_secs_f64();
                return Ok(groups);
            }
        }
        if self.pairing.is_some() {
            self.pair(state, by_attained)?;
        }
        let plan = self.inner(state)?.plan().map_err(Sts::error)?;
        self.solver_seconds += start.elapsed().as_secs_f64();
        let ids: HashMap<&str, usize> =
            self.names.iter().map(|(&id, n)| (n.as_str(), id)).collect();
        // Co-runners per GPU.
        let mut on_gpu: HashMap<(usize, u32), Vec<&str>> = HashMap::new();
        for g in &plan.placement.gpus {
            for s in &g.slots {
                on_gpu
                    .entry((g.gpu_type, g.index))
                    .or_default()
                    .push(s.job.as_str());
            }
        }
        let mut placements = Vec::new();
        let mut work_rate = 0.0;
        let mut runs = Vec::with_capacity(plan.jobs.len());
        for planned in &plan.jobs {
            let (Some((k, slot)), Some(&id)) = (planned.run, ids.get(planned.id.as_str())) else {
                continue;
            };
            let w = state.cluster.types[k].worker;
            let a = state.jobs[id].job_type;
            let solo = state.table.solo(w, a);
            let gpus = plan.placement.gpus_of(&planned.id);
            // The slowest worker sets the pace of a distributed job.
            let mut realized = f64::INFINITY;
            for &(_, g) in &gpus {
                let mut thr = solo;
                for other in on_gpu
                    .get(&(k, g))
                    .into_iter()
                    .flatten()
                    .filter(|o| **o != planned.id)
                {
                    let b = job_type_of(other).unwrap_or(a);
                    let (own, _) = state.table.pair(w, a, b);
                    thr *= if solo > 0.0 { own / solo } else { 0.0 };
                }
                realized = realized.min(thr);
            }
            if !(realized.is_finite() && realized > 0.0) {
                continue;
            }
            let run = Run {
                id,
                gpu_type: k,
                gpus: gpus.iter().map(|&(_, g)| g).collect(),
                fraction: f64::from(slot) / f64::from(self.units),
                planned: planned.throughput,
                realized,
            };
            runs.push((planned.id.clone(), run));
        }
        // Recorded once `ids`, which borrows the names, is done with.
        for (name, run) in runs {
            let (group, work) = self.record_run(state, name, run);
            placements.push(group);
            work_rate += work;
        }
        if !placements.is_empty() {
            self.work_rate = Some(work_rate);
        }
        Ok(placements)
    }

    fn solver_seconds(&self) -> f64 {
        self.solver_seconds
    }

    fn solver_fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    fn realized_over_planned(&self) -> Option<f64> {
        let (sum, n) = self.kept_promises;
        (n > 0).then(|| sum / n as f64)
    }
}

#[cfg(test)]
mod weights_and_pairing_tests {
    use super::*;
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

    #[test]
    fn size_exponent_is_validated() {
        for good in [0.0, 0.5, 1.0] {
            assert!(check_size_exponent(good).is_ok(), "{good}");
        }
        for bad in [-0.1, 1.5, f64::NAN, f64::INFINITY] {
            let err = check_size_exponent(bad).unwrap_err().to_string();
            assert!(err.contains("sts_size_exponent"), "{err}");
        }
    }

    #[test]
    fn pairing_threshold_is_validated() {
        assert!(check_pairing(None).is_ok());
        assert!(check_pairing(Some(0.0)).is_ok());
        assert!(check_pairing(Some(1.3)).is_ok());
        assert!(check_pairing(Some(f64::INFINITY)).is_ok());
        for bad in [-0.1, f64::NAN, f64::NEG_INFINITY] {
            let err = check_pairing(Some(bad)).unwrap_err().to_string();
            assert!(err.contains("sts_pairing"), "{err}");
        }
    }

    #[test]
    fn pairing_thresholds_by_type_are_validated() {
        let t = |list: &[(&str, f64)]| -> Vec<(String, f64)> {
            list.iter().map(|&(n, s)| (n.to_string(), s)).collect()
        };
        assert!(check_pairing_by_type(&[]).is_ok());
        assert!(check_pairing_by_type(&t(&[("k80", 0.0), ("p100", 1.2)])).is_ok());
        assert!(check_pairing_by_type(&t(&[("p100", f64::INFINITY)])).is_ok());
        for bad in [-0.1, f64::NAN, f64::NEG_INFINITY] {
            let err = check_pairing_by_type(&t(&[("p100", 1.2), ("k80", bad)]))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("sts_pairing_types") && err.contains(&format!("k80={bad}")),
                "{err}"
            );
        }
        let err = check_pairing_by_type(&t(&[("k80", 1.0), ("p100", 1.2), ("k80", 1.1)]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("each GPU type once") && err.contains("k80"),
            "{err}"
        );
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
            assert_eq!(held.applies(active, 10), with_hold, "round {i}, held");
            assert_eq!(plain.applies(active, 10), without, "round {i}, plain");
        }
        // `None` (every round) and a ratio no round reaches.
        let mut always = Crowding::new(None, true);
        assert!(always.applies(0, 10));
        let mut never = Crowding::new(Some(1e9), true);
        assert!(!never.applies(1000, 10));
    }

    proptest! {
        /// Against a replay of the rule on the whole history: without the hold the weights
        /// apply exactly in crowded rounds; with it, also in a round that no arrival separates
        /// from an earlier crowded round, and in no other.
        #[test]
        fn hold_applies_exactly_after_a_crowded_round_without_arrivals(
            rounds in proptest::collection::vec((0usize..40, proptest::bool::ANY), 1..60),
            gpus in 1u64..20,
            ratio in 0.0f64..3.0,
        ) {
            let mut held = Crowding::new(Some(ratio), true);
            let mut plain = Crowding::new(Some(ratio), false);
            let crowded = |active: usize| active as f64 > ratio * gpus as f64;
            for (i, &(active, arrived)) in rounds.iter().enumerate() {
                if arrived {
                    held.job_arrived();
                    plain.job_arrived();
                }
                prop_assert_eq!(plain.applies(active, gpus), crowded(active));
                // The latest round at or before i that an arrival precedes, and a crowded round
                // from there to i (an arrival before round k comes before round k's plan).
                let since = (0..=i).rev().find(|&k| rounds[k].1).unwrap_or(0);
                let expected = rounds[since..=i].iter().any(|&(a, _)| crowded(a));
                prop_assert_eq!(held.applies(active, gpus), expected, "round {}", i);
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

    #[test]
    fn critical_after_is_validated() {
        for good in [0.0, 3600.0, 1e12] {
            assert!(check_critical_after(good).is_ok(), "{good}");
        }
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let err = check_critical_after(bad).unwrap_err().to_string();
            assert!(err.contains("sts_critical_after"), "{err}");
        }
    }

    #[test]
    fn critical_factor_is_validated() {
        for good in [None, Some(0.0), Some(1.2), Some(1e12)] {
            assert!(check_critical(good).is_ok(), "{good:?}");
        }
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let err = check_critical(Some(bad)).unwrap_err().to_string();
            assert!(err.contains("sts_critical"), "{err}");
        }
    }

    #[test]
    fn promotion_is_validated() {
        for good in [None, Some(0.0), Some(10.0), Some(1e6)] {
            assert!(check_promotion(good).is_ok(), "{good:?}");
        }
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let err = check_promotion(Some(bad)).unwrap_err().to_string();
            assert!(err.contains("sts_promotion"), "{err}");
        }
    }

    #[test]
    fn crowding_is_validated() {
        for good in [None, Some(0.0), Some(DEFAULT_CROWDING), Some(1e9)] {
            assert!(check_crowding(good).is_ok(), "{good:?}");
        }
        for bad in [-0.1, f64::NAN, f64::INFINITY] {
            let err = check_crowding(Some(bad)).unwrap_err().to_string();
            assert!(err.contains("sts_crowding"), "{err}");
        }
    }

    #[test]
    fn second_stage_exponent_is_validated() {
        for good in [None, Some(0.0), Some(DEFAULT_SECOND_STAGE), Some(1.0)] {
            assert!(check_second_stage(good).is_ok(), "{good:?}");
        }
        for bad in [-0.1, 1.01, f64::NAN, f64::INFINITY] {
            let err = check_second_stage(Some(bad)).unwrap_err().to_string();
            assert!(err.contains("sts_second_stage"), "{err}");
        }
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

    /// One round of `options` on 2 GPUs a type with a single-GPU job of each of `types` (indices
    /// into the data's single-GPU types), 100 hours old, with `hours` of service each: the V100
    /// index, the jobs the pairing step matched on V100s, and the plan's placements.
    fn one_round(
        options: &PolicyOptions,
        types: &[usize],
        hours: &[f64],
    ) -> (usize, Vec<usize>, Vec<GpuGroup>) {
        use crate::{Cluster, SimJob};
        let table = crate::ThroughputTable::bundled().expect("the bundled throughputs load");
        let cluster = Cluster::parse("v100=2,p100=2,k80=2", &table).expect("a cluster");
        let v100 = 0;
        let singles: Vec<usize> = (0..table.job_types().len())
            .filter(|&a| table.job_types()[a].scale_factor == 1)
            .collect();
        let jobs: Vec<SimJob> = types
            .iter()
            .map(|&t| SimJob {
                job_type: singles[t % singles.len()],
                scale_factor: 1,
                weight: 1.0,
                total_steps: 1e12,
                arrival: 0.0,
            })
            .collect();
        let active: Vec<usize> = (0..jobs.len()).collect();
        let steps = vec![0.0; jobs.len()];
        let state = SimState {
            now: 100.0 * 3600.0,
            table: &table,
            cluster: &cluster,
            jobs: &jobs,
            steps_done: &steps,
            active: &active,
            round_seconds: 360.0,
            idle: false,
        };
        let mut sts = Sts::new(&cluster, &SimConfig::default(), options).expect("valid options");
        for (&id, &h) in active.iter().zip(hours) {
            sts.job_arrived(id, &state).expect("a job of the data");
            sts.attained.insert(id, h * 3600.0);
        }
        let plan = sts.plan(&state).expect("a plan");
        let partners = sts
            .pairing
            .as_ref()
            .expect("the pairing step is on")
            .partners
            .clone();
        let matched = partners
            .read()
            .expect("not poisoned")
            .keys()
            .filter(|&&(k, _)| k == v100)
            .map(|&(_, id)| id)
            .collect();
        (v100, matched, plan)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// With `sts_crowded_sharing = ["v100"]`, a crowded round (10-16 jobs on 6 GPUs) runs no
        /// job that the pairing step matched on the V100s alone on a whole V100, whatever the
        /// jobs and their service; where the round is not crowded the rule changes nothing.
        #[test]
        fn crowded_sharing_keeps_matched_jobs_off_whole_v100s(
            jobs in proptest::collection::vec((0usize..26, 0.0f64..100.0), 10..17),
        ) {
            let (types, hours): (Vec<usize>, Vec<f64>) = jobs.into_iter().unzip();
            let mut sharing = PolicyOptions::default();
            prop_assert!(sharing.sts_crowded_sharing.is_empty());
            sharing.sts_crowded_sharing = vec!["v100".to_string()];
            let (v100, matched, plan) = one_round(&sharing, &types, &hours);
            prop_assert!(!plan.is_empty());
            for g in plan.iter().filter(|g| g.gpu_type == v100 && g.fraction == 1.0) {
                prop_assert!(
                    !g.jobs.iter().any(|id| matched.contains(id)),
                    "a matched job alone on a whole V100: {:?}", g.jobs
                );
            }
            let placements = |o: &PolicyOptions| {
                one_round(o, &types, &hours)
                    .2
                    .into_iter()
                    .map(|g| (g.jobs, g.gpu_type, g.gpus, g.fraction.to_bits()))
                    .collect::<Vec<_>>()
            };
            let calm = PolicyOptions {
                sts_crowding: Some(1e9),
                ..PolicyOptions::default()
            };
            let mut calm_sharing = sharing.clone();
            calm_sharing.sts_crowding = Some(1e9);
            prop_assert_eq!(placements(&calm), placements(&calm_sharing));
        }
    }
}

#[cfg(all(test, feature = "highs"))]
mod tests {
    use super::*;
    use stsfair::formulation::RoundProblem;
    use stsfair::instance::Instance;
    use stsfair::solution::objectives_agree;
    use stsfair::solvers::SolveError;

    /// A round problem the DP refuses under a tiny state limit goes to the ILP, is counted, and
    /// gets the DP's own optimum.
    #[test]
    fn too_large_rounds_fall_back_to_the_ilp() {
        let instance = Instance::from_path(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../instances/gavel-8x3-40.json"
        ))
        .unwrap();
        let problem = RoundProblem::new(&instance);
        let mut tiny = SolverConfig::default();
        tiny.max_bytes = Some(100);
        let fallbacks = Arc::new(AtomicU64::new(0));
        let solver = Fallback {
            first: SolverKind::Dp.build(&tiny),
            then: SolverKind::Ilp.build(&SolverConfig::default()),
            fallbacks: Arc::clone(&fallbacks),
        };
        let answer = solver.solve_problem(&problem).unwrap();
        assert_eq!(fallbacks.load(Ordering::Relaxed), 1);
        let exact = SolverKind::Dp
            .build(&SolverConfig::default())
            .solve_problem(&problem)
            .unwrap();
        assert!(objectives_agree(
            answer.objective.unwrap(),
            exact.objective.unwrap()
        ));
        // Without a backup (the sts policy then uses the solver alone) the refusal is the answer.
        let alone = SolverKind::Dp.build(&tiny);
        assert!(matches!(
            alone.solve_problem(&problem),
            Err(SolveError::TooLarge { .. })
        ));
    }
}
