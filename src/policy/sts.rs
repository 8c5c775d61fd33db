//! [`StsPolicy`]: the crate's spatiotemporal-fair round policy, as a scheduler drives it: events
//! in (a job arrived, a job finished, a round was realized), a plan out (who runs where).
//!
//! Each round the active jobs form an STS round problem (docs/model.md): every GPU is cut into `U`
//! units (2 by default: half GPUs, chosen by measurement, docs/simulation.md) with slots of 1, 2,
//! 4, ... units, and a job's predicted throughput in each slot comes from the co-location data
//! the policy is given ([`Throughputs::slot_throughputs`]): the solo throughput for a whole GPU,
//! the typical co-located throughput for a half GPU, and for smaller slots the co-runner
//! composition rule. The round scheduler ([`RoundScheduler`]) solves the problem (the solver is
//! configurable: `dp` is exact and fast, `ilp` the HiGHS baseline), relaxes the fairness
//! constraint when the forced jobs cannot all fit, and places the slots on GPUs choosing
//! co-runners by their measured slowdowns. Jobs are weighted by least attained service by
//! default ([`Weights`]) in crowded rounds, equally in the others (below), and a distributed
//! job's weight grows with a power of its workers ([`job_weight`], below).
//!
//! What a job really gets is for the scheduler to report ([`StsPolicy::round_realized`]); where
//! the data is right, it is [`StsPolicy::composed`]: alone on its GPU, its solo throughput;
//! beside one job, the measured pair; beside several, the product of the pairwise slowdowns
//! ([`composed_throughput`]). A pair that cannot share gives the job nothing that round. The
//! realized throughputs update the round scheduler's deficits, so mispredictions are paid back in
//! later rounds.
//!
//! The fairness parameters (lambda, the allowed debt Delta, the credit bound B; docs/model.md section
//! 3) are [`StsOptions::fairness`], 1, 1 and 1 by default.
//!
//! **Pairing step** ([`StsOptions::pairing`], on by default with threshold 1.4). A value
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
//! can differ by GPU type ([`StsOptions::pairing_by_type`]); by default it is derived
//! from the throughputs and the cluster ([`derived_pairing_by_type`]): 1.0 on the slowest of
//! several GPU types, since the jobs that run there are those the faster types had no room for
//! (the oldest, under least-attained-service weights), for whom a pair of sum >= 1 does more
//! than one of them alone; infinite (no pair reaches it, so single-GPU jobs get whole GPUs
//! only) on a type whose pairs are weak, its median pair sum below halfway from 1 to the
//! threshold, where sharing cost JCT and makespan as jobs kept arriving. On Gavel's cluster
//! that is the K80s at 1.0, the P100s infinite (median sum 1.13 against 1.37 on the V100s),
//! the V100s at the threshold (docs/simulation.md, "A pairing step").
//!
//! **Paired rounds** ([`StsOptions::paired_rounds`], on by default). Where
//! the attained-service weights do not apply (below) and every active job is a single-GPU job,
//! the round is planned with pairs as items ([`paired_round`]): a GPU shared by two jobs is one
//! choice worth both jobs' measured throughputs, solved exactly over classes of identical jobs.
//! The pairing step's matching gives a half slot one value, its partner's, but whether the
//! partner takes its half beside it is the round problem's choice for the partner, and the
//! placement seats the half slots beside whoever is left: at 5.6 jobs/h the rounds realized
//! 97.1-98.1% of what the measured pairs allow. The round problem's plan still names the forced
//! jobs and their least throughputs, which the paired round keeps (or the round is planned as
//! usual), and the round mechanism's deficits follow what the paired round runs
//! (docs/simulation.md, "Pairs as items").
//!
//! **Sharing when crowded** ([`StsOptions::crowded_sharing`], off by default). On the
//! GPU types it names, in the rounds where the attained-service weights apply (below), a job
//! that the pairing step matched there gets only its half slot, beside its partner, and no whole
//! GPU of that type: the weights would give a young job a whole V100 and leave its pair's extra
//! work undone while more jobs wait than run. Measured with `v100` under the drained overload
//! (8 jobs/h, seeds 0-19): the mean JCT 1.0% lower (lower on 16 seeds), the mean makespan 3.8%
//! longer, and longer than gavel-mmf-ss's on 4 seeds, none with it off (docs/simulation.md,
//! "Matched jobs share the V100s when crowded").
//!
//! **Attained service when crowded** ([`StsOptions::crowding`], 1.5 by default). The
//! attained-service weights ([`Weights::Attained`]) apply only in rounds where the active jobs
//! outnumber the cluster's capacity 1.5 times; in other rounds every job has its trace weight.
//! Least attained service finishes the short jobs first when many more jobs wait than run, but
//! where jobs keep arriving it gives the old jobs a vanishing share, parks them on slow GPUs
//! and lets the cluster clog (docs/simulation.md, "Arrivals that do not stop"). The capacity is
//! the GPU count, or the most work the cluster has done in one round, in GPUs at the jobs' best
//! solo speed, where that is more: a shared GPU serves two jobs at once, so a cluster whose pairs
//! do the work of more GPUs than it has runs more jobs before they wait. On the synthetic
//! one-type table of docs/results.md (64 GPUs that do the work of 111 to 114) counting GPUs
//! called 95% of the rounds crowded while jobs kept arriving, and sts's mean JCT was 0.37x
//! gavel-mmf-ss's; counting work, no round is crowded and it is 1.06x-1.08x. On Gavel's cluster
//! the most work is close to the GPU count (113 on 108 under the overload): the overload's and
//! the multi-GPU mix's mean JCTs are the same to 0.1%, and 5.6 jobs/h has no crowded round
//! either way. The jobs are
//! counted, not the GPUs they ask for: with multi-GPU jobs arriving at 2.6 jobs/h the GPUs
//! asked for exceeded 1.5 times the cluster in most rounds, and on one seed in six the old jobs
//! starved (with size exponent 1, below: a single-GPU job of the window waited 1,795 h, a makespan
//! of 3,526 h against gavel-mmf-ss's 3,038 h; counting jobs: 804 h; docs/simulation.md, "Weights
//! that count the workers"). On single-GPU jobs the two counts are the same.
//!
//! **Held until the next arrival** ([`StsOptions::crowding_hold`], on by default). After
//! a crowded round the attained-service weights stay on, however few jobs are left, until the
//! next job arrives: a crowded cluster that nothing enters is draining a finite backlog, the
//! case where least attained service is right (what it held back is what is left), and the
//! clog it causes needs arrivals. Under the drained overload (8 jobs/h) the hold
//! gives a lower JCT on every seed of six and a shorter makespan on five (the cluster busier,
//! the drain shorter), for about the same solver time; with jobs arriving as in Gavel's
//! simulator it changes only the rounds between a crowded round and the next arrival
//! (docs/simulation.md, "Held until the next arrival").
//!
//! **Starvation promotion** ([`StsOptions::promotion`], factor 4 by default). Where
//! attained service orders the jobs, a job whose age less its service is more than 4 times
//! its service is weighted as a new job until it has run again ([`attained_for_weight`]), as
//! Tiresias promotes starved jobs. Past saturation, where the queue grows while jobs keep
//! arriving, least attained service otherwise holds a long job behind every newer one until
//! the arrivals stop (3.0 multi-GPU jobs/h: window jobs waiting thousands of hours; the
//! window's mean JCT 0.588x of gavel-mmf-ss's without the promotion, 0.836x with it).
//! Under the drained overload (8 jobs/h) it moves the mean JCT by 0.05%; where the rounds are not
//! crowded it cannot act (docs/simulation.md, "Starvation promotion past saturation").
//!
//! **Critical jobs** ([`StsOptions::critical`], factor 1.2 by default). Where attained
//! service orders the jobs and the cluster drains (no job has arrived for an hour, the policy's
//! sign of a drain; [`StsOptions::critical_after`]), a job whose remaining work would
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
//! **Weights that count the workers** ([`StsOptions::size_exponent`], 0.75 by default).
//! A job of d_j workers weighs d_j^0.75 times a one-worker job ([`job_weight`]). With one weight
//! a job (exponent 0) a GPU of an 8-GPU job is worth an eighth of a single-GPU job's, the
//! single-GPU jobs keep whole GPUs that pairs could have shared, and where multi-GPU jobs keep
//! arriving at 2.6 jobs/h the 8-GPU jobs queue until the cluster clogs. Exponent 1 gives every
//! job the same share of time, as Gavel's max-min fairness does, and makes the round problem
//! maximize normalized work: no clog, but the single-GPU jobs wait longer than with a smaller
//! exponent (docs/simulation.md, "Weights that count the workers"). On single-GPU jobs every factor
//! is 1 and nothing changes.
//!
//! **Second stage** ([`StsOptions::second_stage`], on by default with exponent 0.25;
//! `RoundScheduler::with_second_stage`). The attained-service weights span orders of magnitude,
//! so in the round problem they decide where jobs run as well as who runs: the young jobs take
//! the fast types whatever they gain there and the old ones run on the K80s at a fifth of their
//! speed (docs/simulation.md, "Work per busy GPU"). After the round problem chooses who runs,
//! where those jobs run is chosen again, exactly, with the weights' fourth roots; every fairness
//! minimum still holds. The second stage runs only in the rounds where the attained-service
//! weights apply ([`StsOptions::second_stage_rounds`]): elsewhere the weights differ only by
//! distributed jobs' size factors, and softening those made multi-GPU jobs wait longer.
//!
//! When the DP refuses a round problem as too large (its state limit, `SolveError::TooLarge`),
//! that problem goes to the ILP (feature `highs`), which gives the same optimum. A paired
//! program that the branch and bound cannot prove optimal within its limits (100,000 nodes,
//! 256 MiB of open nodes, 100,000 pivots in a node; none in the runs of docs/results.md) leaves
//! its round to the round problem. The simulation reports how often either happens
//! (`solver_fallbacks`).
//!
//! Per round: one round-problem solve (three when relaxing: the infeasible one, the count problem
//! and the relaxed round), one more for the second stage in the rounds that have it, O(n)
//! instance building, and placement.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use super::PolicyError;
use super::data::{Throughputs, composed_throughput};
use super::options::{SecondStageRounds, StsOptions, Weights};
use super::paired::PairedError;
use super::paired_round::{self, PairedCache, PairedJob};
use super::rules::{
    Crowding, attained_for_weight, critical_jobs, derived_pairing_by_type, greedy_pairs,
    job_weight, ladder,
};
use crate::instance::{Instance, JobSpec};
use crate::rounds::RoundScheduler;
use crate::solvers::{Fallback, Solver, SolverConfig, SolverKind};

/// A job as it arrives.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StsJob {
    /// The scheduler's id of the job, unique among active jobs.
    pub id: u64,
    /// Its job type in the policy's [`Throughputs`]; its workers are the type's.
    pub job_type: usize,
    /// Its priority weight (> 0, finite), 1 by default.
    pub weight: f64,
    /// When it arrived, seconds (its age, for the starvation promotion, counts from here).
    pub arrival: f64,
    /// Steps it must run; infinite when unknown (the critical-job rule then never marks it).
    pub steps: f64,
}

impl StsJob {
    /// Job `id` of `job_type`, weight 1, arrived at `arrival` seconds, of unknown length.
    pub fn new(id: u64, job_type: usize, arrival: f64) -> StsJob {
        StsJob {
            id,
            job_type,
            weight: 1.0,
            arrival,
            steps: f64::INFINITY,
        }
    }

    /// Sets [`StsJob::weight`].
    #[must_use]
    pub fn with_weight(mut self, weight: f64) -> StsJob {
        self.weight = weight;
        self
    }

    /// Sets [`StsJob::steps`].
    #[must_use]
    pub fn with_steps(mut self, steps: f64) -> StsJob {
        self.steps = steps;
        self
    }
}

/// One job's place in a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct StsRun {
    /// The job.
    pub job: u64,
    /// GPU type index (the cluster's order).
    pub gpu_type: usize,
    /// GPU indices within the type, one per worker.
    pub gpus: Vec<u32>,
    /// Fraction of each listed GPU the job's slot holds (1 for a whole GPU).
    pub fraction: f64,
    /// The steps/s the plan expects.
    pub throughput: f64,
    /// Whether the fairness constraint forces the job to run this round.
    pub forced: bool,
}

/// A round's plan.
#[derive(Debug, Clone, PartialEq)]
pub struct StsPlan {
    /// The jobs that run, in the order of the round scheduler's jobs (a paired round: by GPU).
    pub runs: Vec<StsRun>,
    /// Forced jobs whose forcing was dropped because the forced jobs could not all fit.
    pub relaxed: Vec<u64>,
    /// Whether the round was planned with pairs as items ([`StsOptions::paired_rounds`]): its
    /// throughputs are measured pairs, what runs if the data is right.
    pub paired: bool,
}

/// What one job realized in a round, as the scheduler reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Realized {
    /// The job.
    pub job: u64,
    /// Its steps/s this round (0: it made no progress).
    pub throughput: f64,
    /// The steps it ran this round.
    pub steps: f64,
}

/// What the policy knows of an active job.
#[derive(Debug, Clone)]
pub(crate) struct Active {
    pub(crate) job: StsJob,
    /// The job's name in the round scheduler: `id/job_type`, so that the placement's co-location
    /// model can read its type back.
    pub(crate) name: String,
    pub(crate) workers: u32,
    pub(crate) steps_done: f64,
    /// Seconds of service received, for the attained-service weights.
    pub(crate) attained: f64,
    /// Slot times as derived at arrival (GPU type, slot units, seconds per step).
    pub(crate) arrival_times: Vec<(usize, u64, f64)>,
    /// The times the round scheduler holds, so that only changes are sent.
    pub(crate) given: Option<Vec<(usize, u64, f64)>>,
}

/// The pairing step's settings, resolved to GPU type indices.
#[derive(Debug)]
struct Pairing {
    /// Least pair sum of a matched pair on each GPU type.
    threshold: Vec<f64>,
    /// GPU types on which a matched job keeps only its half slot in crowded rounds.
    shared_when_crowded: Vec<bool>,
    /// (GPU type, job id) -> the job's partner this round; read by the placement's model.
    partners: Arc<RwLock<HashMap<(usize, u64), u64>>>,
}

/// The policy (module docs): create it with the cluster, the co-location data and the options;
/// feed it arrivals, departures and realized rounds; ask it for a plan every round.
///
/// ```
/// use std::sync::Arc;
/// use stsfair::policy::{Realized, StsJob, StsOptions, StsPolicy, ThroughputMatrix};
///
/// // One GPU type of 2 GPUs; job types 0 and 1 run at 10 and 4 steps/s alone, 8 and 3 together.
/// let mut pair = vec![vec![vec![(0.0, 0.0); 2]; 2]];
/// pair[0][0][1] = (8.0, 3.0);
/// pair[0][1][0] = (3.0, 8.0);
/// let data = ThroughputMatrix::new(vec![1, 1], vec![vec![10.0, 4.0]], pair)?;
/// let mut policy = StsPolicy::new(&[("v100", 2)], Arc::new(data), StsOptions::default())?;
/// policy.job_arrived(0.0, StsJob::new(7, 0, 0.0).with_steps(1e6))?;
/// policy.job_arrived(0.0, StsJob::new(8, 1, 0.0).with_steps(1e6))?;
/// let plan = policy.plan(0.0)?;
/// assert_eq!(plan.runs.len(), 2);
/// // Report what ran (here: what the data says), then plan the next round.
/// let realized: Vec<Realized> = plan
///     .runs
///     .iter()
///     .zip(policy.composed(&plan))
///     .map(|(run, thr)| Realized { job: run.job, throughput: thr, steps: thr * 360.0 })
///     .collect();
/// policy.round_realized(360.0, &realized)?;
/// policy.job_finished(8)?;
/// assert_eq!(policy.plan(360.0)?.runs.len(), 1);
/// # Ok::<(), stsfair::policy::PolicyError>(())
/// ```
pub struct StsPolicy {
    options: StsOptions,
    data: Arc<dyn Throughputs>,
    names: Vec<String>,
    counts: Vec<u32>,
    ladder: Vec<u32>,
    inner: RoundScheduler,
    /// Active jobs by id, and their ids in arrival order.
    jobs: HashMap<u64, Active>,
    order: Vec<u64>,
    /// The last plan's runs by job: (fraction, workers' GPUs, planned throughput).
    planned: HashMap<u64, (f64, usize, f64)>,
    solver_seconds: f64,
    fallbacks: Arc<AtomicU64>,
    /// Sum of realized / planned throughput over job-rounds, and their number.
    kept_promises: (f64, u64),
    pairing: Option<Pairing>,
    crowding: Crowding,
    /// The work the cluster did in the last round that ran a job, in best-speed GPUs.
    work_rate: Option<f64>,
    /// The most work the cluster did in one round, in best-speed GPUs, at most its units (the
    /// crowding rule's capacity when above the GPU count).
    most_work: Option<f64>,
    /// When the last job was admitted, seconds.
    last_arrival: Option<f64>,
    paired_cache: PairedCache,
}

impl std::fmt::Debug for StsPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StsPolicy")
            .field("options", &self.options)
            .field("gpu_types", &self.names)
            .field("active", &self.order.len())
            .finish()
    }
}

impl StsPolicy {
    /// The policy for a cluster of `cluster` (GPU type name, GPUs), whose GPU types index `data`
    /// in that order, with `options`.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Setting`] or [`PolicyError::Fairness`] for options out of range
    /// ([`StsOptions::check`]), [`PolicyError::Cluster`] for a cluster the round problem refuses.
    pub fn new(
        cluster: &[(&str, u32)],
        data: Arc<dyn Throughputs>,
        options: StsOptions,
    ) -> Result<StsPolicy, PolicyError> {
        options.check()?;
        let ladder = ladder(options.units);
        let names: Vec<String> = cluster.iter().map(|(n, _)| n.to_string()).collect();
        let counts: Vec<u32> = cluster.iter().map(|&(_, c)| c).collect();
        // The step prices half GPUs; other ladders keep the data's slot throughputs.
        let pairing = options
            .pairing
            .filter(|_| options.units == 2)
            .map(|threshold| pairing_of(&options, threshold, &names, data.as_ref()));
        let fallbacks = Arc::new(AtomicU64::new(0));
        let inner = round_scheduler(
            &options, &names, &counts, &ladder, &data, &pairing, &fallbacks,
        )?;
        Ok(StsPolicy {
            crowding: Crowding::new(options.crowding, options.crowding_hold),
            options,
            data,
            names,
            counts,
            ladder,
            inner,
            jobs: HashMap::new(),
            order: Vec::new(),
            planned: HashMap::new(),
            solver_seconds: 0.0,
            fallbacks,
            kept_promises: (0.0, 0),
            pairing,
            work_rate: None,
            most_work: None,
            last_arrival: None,
            paired_cache: PairedCache::default(),
        })
    }

    /// The options the policy runs with.
    pub fn options(&self) -> &StsOptions {
        &self.options
    }

    /// Job `job` arrived; it is admitted at `now` seconds and can run from the next plan. Its
    /// slot throughputs come from the data ([`Throughputs::slot_throughputs`]); a slot whose
    /// throughput is 0 or whose time underflows is not offered.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Job`] for an id already active, a job type the data lacks, or a weight,
    /// arrival or length out of range; [`PolicyError::Round`] when the round scheduler refuses
    /// the job (no slot on any type).
    pub fn job_arrived(&mut self, now: f64, job: StsJob) -> Result<(), PolicyError> {
        if self.jobs.contains_key(&job.id) {
            return Err(PolicyError::Job {
                job: job.id,
                rule: "is already active",
            });
        }
        let (spec, active) = self.admit(&job)?;
        self.inner.add_job(spec)?;
        self.crowding.job_arrived();
        self.last_arrival = Some(now);
        self.order.push(job.id);
        self.jobs.insert(job.id, active);
        Ok(())
    }

    /// Checks `job` and derives what the round scheduler and the policy hold of it.
    pub(crate) fn admit(&self, job: &StsJob) -> Result<(JobSpec, Active), PolicyError> {
        let bad = |rule: &'static str| PolicyError::Job { job: job.id, rule };
        if job.job_type >= self.data.job_types() {
            return Err(bad("has a job type the throughputs lack"));
        }
        if !(job.weight > 0.0 && job.weight.is_finite()) {
            return Err(bad("weight must be finite and > 0"));
        }
        if !job.arrival.is_finite() || job.steps.is_nan() || job.steps <= 0.0 {
            return Err(bad("arrival must be finite and steps > 0"));
        }
        let workers = self.data.workers(job.job_type).max(1);
        let name = job_name(job.id, job.job_type);
        let mut spec = JobSpec::new(name.clone())
            .weight(job_weight(
                self.options.size_exponent,
                job.weight,
                workers,
                None,
            ))
            .workers(u64::from(workers));
        let mut arrival_times = Vec::new();
        for (k, gpu) in self.names.iter().enumerate() {
            let slots =
                self.data
                    .slot_throughputs(k, job.job_type, self.options.units, &self.ladder);
            for (slot, thr) in slots {
                // A slot whose throughput underflows (a 1/1024 GPU under the composition rule)
                // has no finite time: the job does not get it.
                if thr > 0.0 && (1.0 / thr).is_finite() {
                    spec = spec.time(gpu, u64::from(slot), 1.0 / thr);
                    arrival_times.push((k, u64::from(slot), 1.0 / thr));
                }
            }
        }
        let active = Active {
            job: job.clone(),
            name,
            workers,
            steps_done: 0.0,
            attained: 0.0,
            arrival_times,
            given: None,
        };
        Ok((spec, active))
    }

    /// Job `id` finished (or left): it is no longer planned.
    ///
    /// # Errors
    ///
    /// [`PolicyError::UnknownJob`] when no such job is active.
    pub fn job_finished(&mut self, id: u64) -> Result<(), PolicyError> {
        let job = self
            .jobs
            .remove(&id)
            .ok_or(PolicyError::UnknownJob { job: id })?;
        self.order.retain(|&j| j != id);
        self.planned.remove(&id);
        // Its pairs go too: the placement only ever asks about active jobs, and a snapshot
        // holds the partners of active jobs only.
        if let Some(p) = &self.pairing
            && let Ok(mut m) = p.partners.write()
        {
            m.retain(|&(_, a), b| a != id && *b != id);
        }
        self.inner.remove_job(&job.name)?;
        Ok(())
    }

    /// What ran in the last planned round of `seconds` seconds: each job that ran, with its
    /// realized throughput and steps. Jobs of the plan not listed idled. Updates the deficits
    /// (with the realized throughputs), each job's attained service (its slot's fraction of the
    /// round, [`Weights::service`]) and steps, and the cluster's pace for the critical-job rule.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Round`] when no round is pending, or a job was not in it or is listed
    /// twice; [`PolicyError::Job`] for a throughput or steps not finite and >= 0.
    pub fn round_realized(&mut self, seconds: f64, runs: &[Realized]) -> Result<(), PolicyError> {
        for r in runs {
            if !(r.throughput >= 0.0
                && r.throughput.is_finite()
                && r.steps >= 0.0
                && r.steps.is_finite())
            {
                return Err(PolicyError::Job {
                    job: r.job,
                    rule: "realized throughput and steps must be finite and >= 0",
                });
            }
        }
        // An empty plan (no active job) has nothing to report.
        if self.order.is_empty() && runs.is_empty() {
            return Ok(());
        }
        let report: Vec<(&str, f64)> = runs
            .iter()
            .filter(|r| r.throughput > 0.0)
            .filter_map(|r| Some((self.jobs.get(&r.job)?.name.as_str(), r.throughput)))
            .collect();
        self.inner.report(&report)?;
        let mut work_rate = 0.0;
        let mut ran = false;
        for r in runs {
            let best = self.best_solo_of(r.job);
            let (Some(job), Some(&(fraction, gpus, planned))) =
                (self.jobs.get_mut(&r.job), self.planned.get(&r.job))
            else {
                continue;
            };
            job.steps_done += r.steps;
            if r.throughput <= 0.0 {
                continue;
            }
            ran = true;
            if planned > 0.0 {
                self.kept_promises.0 += r.throughput / planned;
                self.kept_promises.1 += 1;
            }
            job.attained += self.options.weights.service(gpus, fraction, seconds);
            if best > 0.0 {
                work_rate += r.throughput / best * f64::from(job.workers);
            }
        }
        if ran {
            self.work_rate = Some(work_rate);
            // No round does more than every unit of every GPU at a job's best speed: a report
            // above that is not taken as the cluster's capacity.
            let units: f64 = self
                .counts
                .iter()
                .map(|&c| f64::from(c) * f64::from(self.options.units))
                .sum();
            let work = work_rate.min(units);
            self.most_work = Some(self.most_work.map_or(work, |m| m.max(work)));
        }
        self.planned.clear();
        Ok(())
    }

    /// The next round's plan at `now` seconds: the phases of the module docs, in order.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Round`] when the round scheduler fails (a solver error: it does not on
    /// valid input), [`PolicyError::Paired`] when the paired program does.
    pub fn plan(&mut self, now: f64) -> Result<StsPlan, PolicyError> {
        self.planned.clear();
        if self.order.is_empty() {
            return Ok(StsPlan {
                runs: Vec::new(),
                relaxed: Vec::new(),
                paired: false,
            });
        }
        let by_attained = self.weigh_jobs(now)?;
        let stage = match self.options.second_stage_rounds {
            SecondStageRounds::Attained => self.options.second_stage.filter(|_| by_attained),
            SecondStageRounds::All => self.options.second_stage,
        };
        self.inner.set_second_stage(stage)?;
        let start = Instant::now();
        if self.options.paired_rounds
            && !by_attained
            && self.pairing.is_some()
            && self.order.iter().all(|id| self.jobs[id].workers == 1)
        {
            // Without a paired plan the round is planned as usual, and its time counted below.
            if let Some(plan) = self.plan_paired()? {
                self.solver_seconds += start.elapsed().as_secs_f64();
                return Ok(plan);
            }
        }
        if self.pairing.is_some() {
            self.pair(by_attained)?;
        }
        let plan = self.plan_round_problem()?;
        self.solver_seconds += start.elapsed().as_secs_f64();
        Ok(plan)
    }

    /// What each run of `plan` realizes where the data is right: [`composed_throughput`] beside
    /// the run's co-runners on each of its GPUs, the slowest worker setting a distributed job's
    /// pace. In `plan.runs` order. O(runs).
    pub fn composed(&self, plan: &StsPlan) -> Vec<f64> {
        let mut on_gpu: HashMap<(usize, u32), Vec<(u64, usize)>> = HashMap::new();
        for run in &plan.runs {
            let job_type = self.jobs.get(&run.job).map_or(0, |j| j.job.job_type);
            for &g in &run.gpus {
                on_gpu
                    .entry((run.gpu_type, g))
                    .or_default()
                    .push((run.job, job_type));
            }
        }
        plan.runs
            .iter()
            .map(|run| {
                let Some(job) = self.jobs.get(&run.job) else {
                    return 0.0;
                };
                let a = job.job.job_type;
                run.gpus
                    .iter()
                    .map(|&g| {
                        let others: Vec<usize> = on_gpu
                            .get(&(run.gpu_type, g))
                            .into_iter()
                            .flatten()
                            .filter(|(id, _)| *id != run.job)
                            .map(|&(_, b)| b)
                            .collect();
                        composed_throughput(self.data.as_ref(), run.gpu_type, a, &others)
                    })
                    .fold(f64::INFINITY, f64::min)
            })
            .collect()
    }

    /// Seconds spent planning (solves, pairing and placement) so far.
    pub fn solver_seconds(&self) -> f64 {
        self.solver_seconds
    }

    /// Round-problem solves that the DP refused as too large and the ILP answered (feature
    /// `highs`; without it the refusal is an error), and paired rounds whose program passed the
    /// branch and bound's limits and were planned as usual.
    pub fn solver_fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    /// The mean, over every job-round that ran, of realized / planned throughput (1 when the
    /// plans' promises are kept); `None` before any.
    pub fn realized_over_planned(&self) -> Option<f64> {
        let (sum, n) = self.kept_promises;
        (n > 0).then(|| sum / n as f64)
    }

    /// The active jobs' ids, in arrival order.
    pub fn active(&self) -> &[u64] {
        &self.order
    }

    /// The attained service of active job `id`, seconds (`None` for a job not active).
    pub fn attained(&self, id: u64) -> Option<f64> {
        self.jobs.get(&id).map(|j| j.attained)
    }

    /// A job's best solo throughput on the GPU types with room for its workers (0 if none).
    fn best_solo_of(&self, id: u64) -> f64 {
        let Some(job) = self.jobs.get(&id) else {
            return 0.0;
        };
        (0..self.counts.len())
            .filter(|&k| self.counts[k] >= job.workers)
            .map(|k| self.data.solo(k, job.job.job_type))
            .fold(0.0, f64::max)
    }

    /// A job's remaining steps at its best solo throughput, in hours (0 if it runs on no type).
    fn remaining_hours(&self, id: u64) -> f64 {
        let best = self.best_solo_of(id);
        match self.jobs.get(&id) {
            Some(job) if best > 0.0 => (job.job.steps - job.steps_done).max(0.0) / best / 3600.0,
            _ => 0.0,
        }
    }

    /// Phase 1: this round's weights. Attained service orders the jobs only in a crowded round,
    /// or until the next arrival after one; otherwise every job has its own weight. Jobs whose
    /// remaining work would outlast the backlog, and starved jobs, are weighted as new ones.
    /// Returns whether attained service orders the jobs.
    fn weigh_jobs(&mut self, now: f64) -> Result<bool, PolicyError> {
        let gpus: u64 = self.counts.iter().map(|&c| u64::from(c)).sum();
        let capacity = (gpus as f64).max(self.most_work.unwrap_or(0.0));
        let by_attained = self.options.weights != Weights::Trace
            && self.crowding.applies(self.order.len(), capacity);
        if self.options.weights == Weights::Trace {
            return Ok(by_attained);
        }
        // The critical-job rule acts where the cluster drains (no arrival for `critical_after`
        // seconds). Before any job has run, the pace is every GPU at full speed.
        let draining = self
            .last_arrival
            .is_some_and(|t| now - t >= self.options.critical_after);
        let critical: Vec<bool> = match self.options.critical.filter(|_| by_attained && draining) {
            Some(factor) => {
                let remaining: Vec<(f64, u32)> = self
                    .order
                    .iter()
                    .map(|&id| (self.remaining_hours(id), self.jobs[&id].workers))
                    .collect();
                critical_jobs(&remaining, self.work_rate.unwrap_or(gpus as f64), factor)
            }
            None => vec![false; self.order.len()],
        };
        for (id, critical) in self.order.iter().zip(critical) {
            let job = &self.jobs[id];
            let got = by_attained.then(|| {
                if critical {
                    return 0.0;
                }
                attained_for_weight(self.options.promotion, now - job.job.arrival, job.attained)
            });
            let w = job_weight(self.options.size_exponent, job.job.weight, job.workers, got);
            self.inner.set_weight(&job.name, w)?;
        }
        Ok(by_attained)
    }

    /// Phase 2a, a paired round ([`paired_round`]): the round problem's plan gives the forced
    /// jobs and their floors (m_j F_j, after its relaxation), the paired round decides who runs
    /// where and beside whom. `None` when the forced jobs cannot all run at their floors in the
    /// paired round; the round is then planned as usual. Within a job type, the least attained
    /// service takes the fastest place. The DP's cost plus one branch and bound over classes.
    fn plan_paired(&mut self) -> Result<Option<StsPlan>, PolicyError> {
        let plan = self.inner.plan()?;
        let bounds: HashMap<&str, f64> = plan
            .jobs
            .iter()
            .filter(|p| p.forced && p.fair_rate > 0.0)
            .map(|p| (p.id.as_str(), p.minimum * p.fair_rate))
            .collect();
        let mut jobs: Vec<PairedJob> = self
            .order
            .iter()
            .map(|id| {
                let job = &self.jobs[id];
                PairedJob {
                    id: *id,
                    job_type: job.job.job_type,
                    weight: job.job.weight,
                    floor: bounds.get(job.name.as_str()).copied().unwrap_or(0.0),
                }
            })
            .collect();
        jobs.sort_by(|a, b| {
            self.jobs[&a.id]
                .attained
                .total_cmp(&self.jobs[&b.id].attained)
                .then(a.id.cmp(&b.id))
        });
        let forced: HashMap<u64, bool> = self
            .order
            .iter()
            .map(|id| (*id, bounds.contains_key(self.jobs[id].name.as_str())))
            .collect();
        // The types the pairing step may share (an infinite threshold: whole GPUs only).
        let pairs_on: Vec<bool> = match &self.pairing {
            Some(p) => p.threshold.iter().map(|t| t.is_finite()).collect(),
            None => vec![false; self.counts.len()],
        };
        let relaxed = ids_of(&plan.relaxed);
        let answer = paired_round::solve_with(
            self.data.as_ref(),
            &self.counts,
            &jobs,
            &pairs_on,
            &mut self.paired_cache,
        );
        let paired = match answer {
            Ok(Some(paired)) => paired,
            Ok(None) => return Ok(None),
            // A program the branch and bound cannot prove within its limits: planned as usual.
            Err(PolicyError::Paired(PairedError::SearchLimit { .. })) => {
                self.fallbacks.fetch_add(1, Ordering::Relaxed);
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let mut next_gpu = vec![0u32; self.counts.len()];
        let mut runs = Vec::new();
        for gpu in paired.gpus {
            let k = gpu.gpu_type;
            let index = next_gpu[k];
            next_gpu[k] += 1;
            let fraction = 1.0 / gpu.jobs.len() as f64;
            for (id, throughput) in gpu.jobs {
                runs.push(StsRun {
                    job: id,
                    gpu_type: k,
                    gpus: vec![index],
                    fraction,
                    throughput,
                    forced: forced.get(&id).copied().unwrap_or(false),
                });
            }
        }
        self.remember(&runs);
        Ok(Some(StsPlan {
            runs,
            relaxed,
            paired: true,
        }))
    }

    /// Phase 2b, the round problem: solved by the round scheduler, placed on GPUs.
    fn plan_round_problem(&mut self) -> Result<StsPlan, PolicyError> {
        let plan = self.inner.plan()?;
        let mut runs = Vec::with_capacity(plan.jobs.len());
        for planned in &plan.jobs {
            let (Some((k, slot)), Some((id, _))) = (planned.run, parse_job_name(&planned.id))
            else {
                continue;
            };
            runs.push(StsRun {
                job: id,
                gpu_type: k,
                gpus: plan
                    .placement
                    .gpus_of(&planned.id)
                    .into_iter()
                    .map(|(_, g)| g)
                    .collect(),
                fraction: f64::from(slot) / f64::from(self.options.units),
                throughput: planned.throughput,
                forced: planned.forced,
            });
        }
        let relaxed = ids_of(&plan.relaxed);
        self.remember(&runs);
        Ok(StsPlan {
            runs,
            relaxed,
            paired: false,
        })
    }

    /// Keeps the plan's runs for [`StsPolicy::round_realized`].
    fn remember(&mut self, runs: &[StsRun]) {
        self.planned = runs
            .iter()
            .map(|r| (r.job, (r.fraction, r.gpus.len(), r.throughput)))
            .collect();
    }

    /// Phase 2c, the pairing step before the round problem: matches the active single-GPU jobs
    /// per GPU type ([`greedy_pairs`]), prices each matched job's half slot at its partner's
    /// measured pair, drops the unmatched jobs' half slots, and publishes the partners to the
    /// placement. `crowded`: attained service orders the jobs this round, where a job matched on
    /// a type of [`StsOptions::crowded_sharing`] keeps only its half slot there. O(n^2 log n) per
    /// GPU type for n single-GPU jobs, plus one time update per job whose times changed.
    fn pair(&mut self, crowded: bool) -> Result<(), PolicyError> {
        let Some(pairing) = self.pairing.as_ref() else {
            return Ok(());
        };
        let data = self.data.as_ref();
        let singles: Vec<u64> = self
            .order
            .iter()
            .copied()
            .filter(|id| self.jobs[id].workers == 1)
            .collect();
        // Job types by position in `singles`, so that the O(n^2) pair lookups index a vector.
        let types: Vec<usize> = singles
            .iter()
            .map(|id| self.jobs[id].job.job_type)
            .collect();
        let positions: Vec<usize> = (0..singles.len()).collect();
        let mut partners: HashMap<(usize, u64), u64> = HashMap::new();
        // (GPU type, job id) -> the job's half-slot throughput beside its partner.
        let mut half: HashMap<(usize, u64), f64> = HashMap::new();
        for k in 0..self.counts.len() {
            let ratios = |x: usize, y: usize| {
                let (ta, tb) = (types[x], types[y]);
                let (sa, sb) = (data.solo(k, ta), data.solo(k, tb));
                let (oa, ob) = data.pair(k, ta, tb);
                (sa > 0.0 && sb > 0.0 && oa > 0.0 && ob > 0.0).then(|| (oa / sa, ob / sb))
            };
            for (x, y, ra, rb) in greedy_pairs(&positions, pairing.threshold[k], ratios) {
                let (a, b) = (singles[x], singles[y]);
                partners.insert((k, a), b);
                partners.insert((k, b), a);
                half.insert((k, a), ra * data.solo(k, types[x]));
                half.insert((k, b), rb * data.solo(k, types[y]));
            }
        }
        let units = u64::from(self.options.units);
        let mut changed = Vec::new();
        for &id in &singles {
            let job = &self.jobs[&id];
            let times: Vec<(usize, u64, f64)> = job
                .arrival_times
                .iter()
                .filter_map(|&(k, slot, seconds)| {
                    if slot == units {
                        // Crowded, a matched job shares these types with its partner: its whole
                        // GPU there would leave the pair's extra work undone.
                        let shared = crowded && pairing.shared_when_crowded[k];
                        let alone = !(shared && half.contains_key(&(k, id)));
                        return alone.then_some((k, slot, seconds));
                    }
                    let thr = half.get(&(k, id))?;
                    Some((k, slot, 1.0 / thr))
                })
                .collect();
            // A job without whole-GPU times keeps its arrival times.
            if !times.is_empty() && job.given.as_ref() != Some(&times) {
                changed.push((id, times));
            }
        }
        if let Ok(mut m) = pairing.partners.write() {
            *m = partners;
        }
        for (id, times) in changed {
            let slots: Vec<(&str, u64, f64)> = times
                .iter()
                .map(|&(k, s, t)| (self.names[k].as_str(), s, t))
                .collect();
            let job = &self.jobs[&id];
            self.inner.update_times(&job.name, &slots)?;
            if let Some(job) = self.jobs.get_mut(&id) {
                job.given = Some(times);
            }
        }
        Ok(())
    }
}

/// A job's name in the round scheduler: `id/job_type`, so that the placement's co-location
/// model reads its type back ([`parse_job_name`]).
fn job_name(id: u64, job_type: usize) -> String {
    format!("{id}/{job_type}")
}

/// The (id, job type) of a name [`job_name`] wrote.
fn parse_job_name(name: &str) -> Option<(u64, usize)> {
    let (id, t) = name.split_once('/')?;
    Some((id.parse().ok()?, t.parse().ok()?))
}

/// The ids of round scheduler job names.
fn ids_of(names: &[String]) -> Vec<u64> {
    names
        .iter()
        .filter_map(|n| parse_job_name(n).map(|(id, _)| id))
        .collect()
}

/// The pairing step's thresholds by GPU type index: [`StsOptions::pairing_by_type`] by name
/// (types the cluster lacks ignored), or derived from the data when it is `None`.
fn pairing_of(
    options: &StsOptions,
    threshold: f64,
    names: &[String],
    data: &dyn Throughputs,
) -> Pairing {
    let mut by_type = vec![threshold; names.len()];
    match &options.pairing_by_type {
        Some(list) => {
            for (name, t) in list {
                if let Some(k) = names.iter().position(|n| n == name) {
                    by_type[k] = *t;
                }
            }
        }
        None => {
            for (k, t) in derived_pairing_by_type(data, names.len(), threshold) {
                by_type[k] = t;
            }
        }
    }
    Pairing {
        threshold: by_type,
        shared_when_crowded: names
            .iter()
            .map(|n| options.crowded_sharing.contains(n))
            .collect(),
        partners: Arc::new(RwLock::new(HashMap::new())),
    }
}

/// The round scheduler of the policy's cluster, with the solver of [`solver_of`] and the
/// placement model of [`attach`].
fn round_scheduler(
    options: &StsOptions,
    names: &[String],
    counts: &[u32],
    ladder: &[u32],
    data: &Arc<dyn Throughputs>,
    pairing: &Option<Pairing>,
    fallbacks: &Arc<AtomicU64>,
) -> Result<RoundScheduler, PolicyError> {
    let mut builder = Instance::builder().fairness(options.fairness);
    let sizes: Vec<u64> = ladder.iter().map(|&s| u64::from(s)).collect();
    for (name, &count) in names.iter().zip(counts) {
        builder = builder.gpu_type(name, u64::from(count), u64::from(options.units), &sizes);
    }
    let cluster = builder
        .build()
        .map_err(|source| PolicyError::Cluster { source })?;
    let scheduler = RoundScheduler::new(&cluster, solver_of(options, fallbacks));
    Ok(attach(scheduler, options, names, data, pairing))
}

/// The configured solver, with the ILP behind the DP where the build has HiGHS (for rounds the
/// DP refuses as too large; the refusals are counted in `fallbacks`).
fn solver_of(options: &StsOptions, fallbacks: &Arc<AtomicU64>) -> Box<dyn Solver> {
    let config = SolverConfig::default();
    let primary = options.solver.build(&config);
    let backup = SolverKind::ALL
        .iter()
        .find(|k| k.name() == "ilp" && **k != options.solver)
        .map(|k| k.build(&config));
    match backup {
        Some(then) => Box::new(Fallback {
            first: primary,
            then,
            fallbacks: Arc::clone(fallbacks),
        }),
        None => primary,
    }
}

/// `scheduler` with the placement's co-location model: a pair's measured slowdown
/// `1 - shared / solo` (infinite for pairs that cannot share), and with the pairing step, 0 for
/// matched partners and the slowdown plus 1 for any other pair, so that placement keeps the
/// matched pairs together first; and with the long-run prices where the options ask for them.
fn attach(
    scheduler: RoundScheduler,
    options: &StsOptions,
    names: &[String],
    data: &Arc<dyn Throughputs>,
    pairing: &Option<Pairing>,
) -> RoundScheduler {
    let index: HashMap<String, usize> = names
        .iter()
        .enumerate()
        .map(|(k, n)| (n.clone(), k))
        .collect();
    let partners = pairing.as_ref().map(|p| Arc::clone(&p.partners));
    let data = Arc::clone(data);
    let model = move |job: &str, other: &str, gpu: &str| -> f64 {
        let (Some((x, a)), Some((y, b)), Some(&k)) =
            (parse_job_name(job), parse_job_name(other), index.get(gpu))
        else {
            return 0.0;
        };
        let solo = data.solo(k, a);
        let (own, _) = data.pair(k, a, b);
        if own <= 0.0 || solo <= 0.0 {
            return f64::INFINITY;
        }
        let slowdown = (1.0 - own / solo).max(0.0);
        let Some(partners) = &partners else {
            return slowdown;
        };
        let matched = partners.read().is_ok_and(|m| m.get(&(k, x)) == Some(&y));
        if matched { 0.0 } else { slowdown + 1.0 }
    };
    let scheduler = scheduler.with_colocation(model);
    #[cfg(feature = "highs")]
    let scheduler = if options.prices {
        scheduler.with_service_prices(crate::bound::LongRunPrices::default())
    } else {
        scheduler
    };
    #[cfg(not(feature = "highs"))]
    let _ = options;
    scheduler
}

/// What [`StsPolicy::snapshot`] reads of the policy.
pub(crate) struct StateView<'a> {
    pub(crate) options: &'a StsOptions,
    pub(crate) names: &'a [String],
    pub(crate) counts: &'a [u32],
    pub(crate) order: &'a [u64],
    pub(crate) jobs: &'a HashMap<u64, Active>,
    pub(crate) planned: &'a HashMap<u64, (f64, usize, f64)>,
    pub(crate) holding: bool,
    pub(crate) work_rate: Option<f64>,
    pub(crate) most_work: Option<f64>,
    pub(crate) last_arrival: Option<f64>,
    pub(crate) kept_promises: (f64, u64),
    pub(crate) solver_seconds: f64,
    pub(crate) partners: Vec<(usize, u64, u64)>,
    pub(crate) scheduler: crate::rounds::SchedulerSnapshot,
}

/// What [`StsPolicy::restore`] sets, checked.
pub(crate) struct RestoredState {
    pub(crate) scheduler: RoundScheduler,
    pub(crate) jobs: HashMap<u64, Active>,
    pub(crate) order: Vec<u64>,
    pub(crate) planned: HashMap<u64, (f64, usize, f64)>,
    pub(crate) holding: bool,
    pub(crate) work_rate: Option<f64>,
    pub(crate) most_work: Option<f64>,
    pub(crate) last_arrival: Option<f64>,
    pub(crate) kept_promises: (f64, u64),
    pub(crate) solver_seconds: f64,
    pub(crate) partners: HashMap<(usize, u64), u64>,
}

impl StsPolicy {
    pub(crate) fn state(&self) -> StateView<'_> {
        let partners = self
            .pairing
            .as_ref()
            .and_then(|p| {
                p.partners
                    .read()
                    .ok()
                    .map(|m| m.iter().map(|(&(k, a), &b)| (k, a, b)).collect())
            })
            .unwrap_or_default();
        StateView {
            options: &self.options,
            names: &self.names,
            counts: &self.counts,
            order: &self.order,
            jobs: &self.jobs,
            planned: &self.planned,
            holding: self.crowding.holding,
            work_rate: self.work_rate,
            most_work: self.most_work,
            last_arrival: self.last_arrival,
            kept_promises: self.kept_promises,
            solver_seconds: self.solver_seconds,
            partners,
            scheduler: self.inner.snapshot(),
        }
    }

    /// A solver as the policy's own, for a restored round scheduler.
    pub(crate) fn solver_for_restore(&self) -> Box<dyn Solver> {
        solver_of(&self.options, &self.fallbacks)
    }

    pub(crate) fn set_state(&mut self, state: RestoredState) {
        self.inner = attach(
            state.scheduler,
            &self.options,
            &self.names,
            &self.data,
            &self.pairing,
        );
        self.jobs = state.jobs;
        self.order = state.order;
        self.planned = state.planned;
        self.crowding.holding = state.holding;
        self.work_rate = state.work_rate;
        self.most_work = state.most_work;
        self.last_arrival = state.last_arrival;
        self.kept_promises = state.kept_promises;
        self.solver_seconds = state.solver_seconds;
        if let Some(p) = &self.pairing
            && let Ok(mut m) = p.partners.write()
        {
            *m = state.partners;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::data::ThroughputMatrix;
    use proptest::prelude::*;

    /// Three GPU types (fast, middle, slow) and five single-GPU job types with pairs on every
    /// type, from `cells` (solo speeds and pair ratios).
    fn table(cells: &[(f64, f64)]) -> ThroughputMatrix {
        let jobs = 5;
        let speed = [1.0, 0.6, 0.3];
        let solo: Vec<Vec<f64>> = speed
            .iter()
            .map(|s| {
                (0..jobs)
                    .map(|j| s * (5.0 + 5.0 * cells[j % cells.len()].0))
                    .collect()
            })
            .collect();
        let mut pair = vec![vec![vec![(0.0, 0.0); jobs]; jobs]; 3];
        for k in 0..3 {
            for a in 0..jobs {
                for b in a..jobs {
                    let ra = 0.3 + 0.6 * cells[(a * jobs + b) % cells.len()].1;
                    let rb = if a == b {
                        ra
                    } else {
                        0.3 + 0.6 * cells[(b * jobs + a) % cells.len()].1
                    };
                    pair[k][a][b] = (ra * solo[k][a], rb * solo[k][b]);
                    pair[k][b][a] = (rb * solo[k][b], ra * solo[k][a]);
                }
            }
        }
        ThroughputMatrix::new(vec![1; jobs], solo, pair).expect("a valid table")
    }

    const CLUSTER: [(&str, u32); 3] = [("fast", 2), ("middle", 2), ("slow", 2)];

    /// One crowded-or-not round of `options` with a job of each of `types`, 100 h old, with
    /// `hours` of service each: the jobs the pairing step matched on the fast type and the plan.
    fn one_round(
        data: &ThroughputMatrix,
        options: &StsOptions,
        types: &[usize],
        hours: &[f64],
    ) -> (Vec<u64>, StsPlan) {
        let mut policy =
            StsPolicy::new(&CLUSTER, Arc::new(data.clone()), options.clone()).expect("valid");
        for (i, (&t, &h)) in types.iter().zip(hours).enumerate() {
            policy
                .job_arrived(0.0, StsJob::new(i as u64, t % 5, 0.0))
                .expect("a job of the data");
            if let Some(job) = policy.jobs.get_mut(&(i as u64)) {
                job.attained = h * 3600.0;
            }
        }
        let plan = policy.plan(100.0 * 3600.0).expect("a plan");
        let matched = policy
            .pairing
            .as_ref()
            .expect("the pairing step is on")
            .partners
            .read()
            .expect("not poisoned")
            .keys()
            .filter(|&&(k, _)| k == 0)
            .map(|&(_, id)| id)
            .collect();
        (matched, plan)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// With `crowded_sharing = ["fast"]`, a crowded round (10-16 jobs on 6 GPUs) runs no job
        /// that the pairing step matched on the fast type alone on a whole fast GPU, whatever the
        /// jobs and their service; where the round is not crowded the rule changes nothing.
        #[test]
        fn crowded_sharing_keeps_matched_jobs_off_whole_gpus(
            cells in proptest::collection::vec((0.0f64..1.0, 0.0f64..1.0), 25),
            jobs in proptest::collection::vec((0usize..5, 0.0f64..100.0), 10..17),
        ) {
            let data = table(&cells);
            let (types, hours): (Vec<usize>, Vec<f64>) = jobs.into_iter().unzip();
            prop_assert!(StsOptions::default().crowded_sharing.is_empty());
            let sharing = StsOptions::default()
                .with_pairing_by_type(Some(Vec::new()))
                .with_pairing(Some(1.0))
                .with_crowded_sharing(vec!["fast".to_string()]);
            let (matched, plan) = one_round(&data, &sharing, &types, &hours);
            prop_assert!(!plan.runs.is_empty());
            for run in plan.runs.iter().filter(|r| r.gpu_type == 0 && r.fraction == 1.0) {
                prop_assert!(!matched.contains(&run.job), "a matched job alone on a whole GPU: {}", run.job);
            }
            let calm = sharing.clone().with_crowded_sharing(Vec::new()).with_crowding(Some(1e9));
            let calm_sharing = sharing.clone().with_crowding(Some(1e9));
            prop_assert_eq!(
                one_round(&data, &calm, &types, &hours).1,
                one_round(&data, &calm_sharing, &types, &hours).1
            );
        }
    }

    /// The crowding rule's capacity is the cluster's GPUs until a round's work, in best-speed
    /// GPUs, passes them, and then the most work of one round: 10 jobs on 6 GPUs are crowded
    /// (10 > 1.5 * 6) before any round, and after a round that ran every planned job at its best
    /// solo speed they are crowded exactly when 10 > 1.5 * max(6, jobs that ran). A later round
    /// of less work keeps the most; no round counts more than the cluster's 12 units.
    #[test]
    fn crowding_counts_the_most_work_of_one_round() {
        let data = table(&[(0.5, 1.0)]);
        let options = StsOptions::default().with_crowding_hold(false);
        let mut policy = StsPolicy::new(&CLUSTER, Arc::new(data), options).expect("valid");
        for i in 0..10u64 {
            policy
                .job_arrived(0.0, StsJob::new(i, (i % 5) as usize, 0.0))
                .expect("admitted");
        }
        assert!(policy.weigh_jobs(3600.0).expect("weights"));
        let realize = |policy: &StsPolicy, plan: &StsPlan, share: f64| -> Vec<Realized> {
            plan.runs
                .iter()
                .map(|r| {
                    let best = policy.best_solo_of(r.job) * share;
                    Realized {
                        job: r.job,
                        throughput: best,
                        steps: best * 360.0,
                    }
                })
                .collect()
        };
        let plan = policy.plan(3600.0).expect("a plan");
        let ran = plan.runs.len() as f64;
        assert!(ran > 6.0, "shared GPUs run more jobs than GPUs: {ran}");
        let report = realize(&policy, &plan, 1.0);
        policy
            .round_realized(360.0, &report)
            .expect("a valid report");
        assert_eq!(policy.most_work, Some(ran));
        assert_eq!(
            policy.weigh_jobs(3960.0).expect("weights"),
            10.0 > 1.5 * ran
        );
        let plan = policy.plan(3960.0).expect("a plan");
        let report = realize(&policy, &plan, 0.5);
        policy
            .round_realized(360.0, &report)
            .expect("a valid report");
        assert_eq!(policy.most_work, Some(ran));
        // A report of more work than every unit of every GPU at best speed counts as that.
        let plan = policy.plan(4320.0).expect("a plan");
        let report = realize(&policy, &plan, 1e9);
        policy
            .round_realized(360.0, &report)
            .expect("a valid report");
        assert_eq!(policy.most_work, Some(12.0));
    }

    /// Events out of order are refused by name and change nothing.
    #[test]
    fn bad_events_are_refused() {
        let data = table(&[(0.5, 0.5)]);
        let mut policy =
            StsPolicy::new(&CLUSTER, Arc::new(data), StsOptions::default()).expect("valid");
        assert!(matches!(
            policy.job_finished(3),
            Err(PolicyError::UnknownJob { job: 3 })
        ));
        policy
            .job_arrived(0.0, StsJob::new(1, 0, 0.0))
            .expect("admitted");
        let again = policy.job_arrived(0.0, StsJob::new(1, 1, 0.0));
        assert!(matches!(again, Err(PolicyError::Job { job: 1, .. })));
        let unknown_type = policy.job_arrived(0.0, StsJob::new(2, 9, 0.0));
        assert!(matches!(unknown_type, Err(PolicyError::Job { job: 2, .. })));
        for weight in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let bad = policy.job_arrived(0.0, StsJob::new(4, 0, 0.0).with_weight(weight));
            assert!(
                matches!(bad, Err(PolicyError::Job { job: 4, .. })),
                "{weight}"
            );
        }
        assert_eq!(policy.active(), &[1]);
        // No plan yet: nothing to report.
        let realized = [Realized {
            job: 1,
            throughput: 1.0,
            steps: 360.0,
        }];
        assert!(matches!(
            policy.round_realized(360.0, &realized),
            Err(PolicyError::Round(_))
        ));
        let plan = policy.plan(0.0).expect("a plan");
        assert_eq!(plan.runs.len(), 1);
        let nan = [Realized {
            job: 1,
            throughput: f64::NAN,
            steps: 0.0,
        }];
        assert!(matches!(
            policy.round_realized(360.0, &nan),
            Err(PolicyError::Job { job: 1, .. })
        ));
        policy
            .round_realized(360.0, &realized)
            .expect("a valid report");
        assert_eq!(policy.attained(1), Some(360.0));
        assert_eq!(
            policy.realized_over_planned(),
            Some(1.0 / plan.runs[0].throughput)
        );
    }

    /// A one-type cluster plans with every default: no default names a GPU type.
    #[test]
    fn one_gpu_type_runs_with_the_defaults() {
        let data = table(&[(0.2, 0.9), (0.7, 0.4)]);
        let mut policy =
            StsPolicy::new(&[("only", 3)], Arc::new(data), StsOptions::default()).expect("valid");
        for id in 0..5 {
            policy
                .job_arrived(0.0, StsJob::new(id, id as usize, 0.0))
                .expect("admitted");
        }
        let plan = policy.plan(0.0).expect("a plan");
        let composed = policy.composed(&plan);
        // Every run realizes what the data says, and a paired round's plan is what runs.
        assert!(composed.iter().all(|&t| t > 0.0));
        if plan.paired {
            for (run, thr) in plan.runs.iter().zip(&composed) {
                assert_eq!(run.throughput, *thr);
            }
        }
        let mut used = std::collections::HashMap::new();
        for run in &plan.runs {
            *used.entry(run.gpus[0]).or_insert(0.0) += run.fraction;
        }
        assert!(used.values().all(|&f| f <= 1.0 + 1e-12));
    }
}
