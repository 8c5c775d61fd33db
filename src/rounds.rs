//! The round mechanism: the per-round solver made into a fair scheduler over time (MODEL.md
//! section 3), with relaxation for rounds whose forced jobs cannot all fit, and placement of the
//! chosen slots (MODEL.md section 5). This is the API a cluster scheduler links against.
//!
//! A [`RoundScheduler`] holds the cluster, the active jobs with their predicted times and
//! fairness deficits, the fairness parameters, a [`Solver`] and a [`CoLocation`] model. Each
//! round the caller asks for a [`RoundPlan`] ([`RoundScheduler::plan`]), runs it, and reports the
//! throughput each job really got ([`RoundScheduler::report`]); the report moves the deficits:
//!
//! D_j <- max(-B_j, D_j + lambda - sigma_realized),  sigma_realized = realized throughput / F_j,
//!
//! where F_j is the job's equal-share throughput of the planned round and an idle job has
//! sigma_realized = 0. A job with F_j = 0 has no fairness bound and keeps its deficit.
//!
//! Rounds never fail for lack of room: when the solver finds that the forced jobs cannot all be
//! placed, [`RoundScheduler::plan`] keeps as many of them forced as fit (among jobs with the same
//! options, the most behind) and drops the forcing of the others for this round only; see
//! `docs/rounds.md` for the rule, why it is exact and what it costs.
//!
//! The credit bound B_j = max(B, sigma_hat_j - lambda) of each job (sigma_hat_j: its largest
//! sigma in the planned round) lets a job whose smallest useful run gives many rounds' worth of
//! service keep that service as credit (MODEL.md section 3).

use std::collections::{HashMap, HashSet};

use crate::formulation::{JobClass, RoundProblem};
use crate::instance::{Fairness, GpuType, Instance, InstanceBuilder, InstanceError, Job, JobSpec};
use crate::placement::{CoLocation, NoInterference, Placement, PlacementError, SlotRequest, place};
use crate::solution::{Solution, Status};
use crate::solvers::{SolveError, Solver, WarmStart};

mod relax;
mod snapshot;
pub use snapshot::{MAX_ROUND, SNAPSHOT_FORMAT, SchedulerSnapshot};

/// Why a scheduler call was refused. Nothing is changed when a call fails.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RoundError {
    /// A job with this id is already active.
    #[error("job {job:?} is already active: job ids must be unique")]
    DuplicateJob {
        /// The id.
        job: String,
    },
    /// No active job has this id.
    #[error("job {job:?} is not an active job")]
    UnknownJob {
        /// The id.
        job: String,
    },
    /// A new job's description breaks a rule of the instance format. `source` names the field
    /// by the path it would have as the only job of an instance file
    /// (`jobs[0].times[1].sec_per_iter`).
    #[error("new job: {source}")]
    InvalidNewJob {
        /// The rule it breaks.
        source: InstanceError,
    },
    /// A change to an active job breaks a rule of the instance format; `source` names the field
    /// as for [`RoundError::InvalidNewJob`].
    #[error("job {job:?}: {source}")]
    InvalidJob {
        /// The job's id.
        job: String,
        /// The rule it breaks.
        source: InstanceError,
    },
    /// The round's instance, built from jobs that were each checked on arrival, is invalid: a
    /// defect of this crate, reported with the path of the offending value.
    #[error("the round's instance is invalid: {source}")]
    RoundInstance {
        /// The rule it breaks.
        source: InstanceError,
    },
    /// A reported throughput is negative, infinite or NaN.
    #[error("job {job:?}: realized throughput must be finite and >= 0 (got {got})")]
    InvalidThroughput {
        /// The job.
        job: String,
        /// The value reported.
        got: f64,
    },
    /// A job is reported twice for one round.
    #[error("job {job:?}: reported twice for one round")]
    DuplicateReport {
        /// The job.
        job: String,
    },
    /// A job is reported that was not part of the planned round (it was added after the plan).
    #[error("job {job:?} was not part of the planned round (added after plan())")]
    NotInRound {
        /// The job.
        job: String,
    },
    /// `report` was called with no planned round pending.
    #[error("no round to report: call plan() first (each plan is reported once)")]
    NoPlan,
    /// `report_planned` was given a plan that is not the pending one: an older round's, or one
    /// a later `plan()` replaced.
    #[error(
        "the plan reported is of round {round}, not the pending plan of round {pending}: report the plan the last plan() returned"
    )]
    StalePlan {
        /// The round of the plan given.
        round: u64,
        /// The round of the pending plan.
        pending: u64,
    },
    /// The solver could not answer (for example its memory limit is too small for the cluster).
    #[error(transparent)]
    Solve(#[from] SolveError),
    /// The solver claimed that even a round with no forced job has no solution, which cannot be:
    /// leaving every job idle is always a solution. A solver defect, reported rather than hidden.
    #[error(
        "{solver}: says a round with no forced job is infeasible ({reason}); leaving every job idle is a solution"
    )]
    SolverDefect {
        /// The solver.
        solver: String,
        /// Its reason.
        reason: String,
    },
    /// The chosen options could not be placed (a solver answer over capacity).
    #[error(transparent)]
    Placement(#[from] PlacementError),
    /// The source of service prices ([`RoundScheduler::with_service_prices`]) failed.
    #[error("service prices ({source_name}): {reason}")]
    Prices {
        /// The price source's name.
        source_name: &'static str,
        /// What failed.
        reason: String,
    },
    /// A scheduler setting out of its range.
    #[error("{setting} {rule} (got {got})")]
    InvalidSetting {
        /// The setting.
        setting: &'static str,
        /// The rule it breaks.
        rule: &'static str,
        /// The value given.
        got: String,
    },
    /// A [`SchedulerSnapshot`] that cannot be restored: another format or version, a field
    /// missing, unknown or of the wrong type, or a value that breaks a rule. `source` names the
    /// field by its path in the snapshot document (`jobs[3].deficit`, `pending.jobs[0].job`).
    #[error("scheduler snapshot: {source}")]
    InvalidSnapshot {
        /// The field and the rule it breaks.
        source: InstanceError,
    },
}

/// Where the round mechanism takes the prices of fairness service from: one price per job
/// (objective per unit of sigma, >= 0, finite) that makes a forced job's option worth
/// `v + price * sigma` in the round problem ([`RoundProblem::price_forced`]). A forced job must
/// run; the price decides *which* of its admissible options it takes, by what the service buys:
/// sigma above this round's minimum is credit that spares the job's next forced runs, which cost
/// capacity in later rounds. The per-round problem alone cannot see that, and picks the option
/// that displaces least value now (a distributed job on slow GPUs, forced again a few rounds
/// later). docs/rounds.md, "Pricing the service of forced jobs", has the argument and the
/// measurements. The crate's source is `stsfair::bound::LongRunPrices` (feature `highs`): the
/// duals of the long-run LP.
pub trait ServicePrices: Send + Sync {
    /// A short name for messages and state files ("lp").
    fn name(&self) -> &'static str;
    /// One price per job of `instance`, in instance order, or `None` for no prices (the round
    /// is solved unpriced). Deficits do not matter: the scheduler calls this again only when its
    /// jobs, their times or weights change.
    fn prices(&self, instance: &Instance) -> Result<Option<Vec<f64>>, String>;
}

/// One job in a [`RoundPlan`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PlannedJob {
    /// The job's id.
    pub id: String,
    /// What it runs: (GPU type index, slot size), or `None` when idle.
    pub run: Option<(usize, u32)>,
    /// Planned throughput theta (iterations per second; 0 when idle).
    pub throughput: f64,
    /// Planned normalized service theta / F_j (0 when idle; infinite for a running job with F_j = 0).
    pub sigma: f64,
    /// F_j, the equal-share throughput of this round.
    pub fair_rate: f64,
    /// D_j at the start of the round.
    pub deficit: f64,
    /// m_j = (D_j + lambda) - Delta, from the true deficit.
    pub minimum: f64,
    /// Whether the job was forced in the problem that was solved (after relaxation).
    pub forced: bool,
    /// Whether the job's forcing was dropped for this round.
    pub relaxed: bool,
    /// The job's credit bound this round, B_j = max(B, sigma_hat_j - lambda) with sigma_hat_j
    /// its largest sigma over all its options (B for a job with no option or F_j = 0): the
    /// deficit after the report is at least -B_j.
    pub credit: f64,
}

/// The plan of one round.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RoundPlan {
    /// Number of the round: rounds reported before it.
    pub round: u64,
    /// Every active job, in the order they were added.
    pub jobs: Vec<PlannedJob>,
    /// Sum of v over the chosen options (MODEL.md section 4).
    pub objective: f64,
    /// Ids of the forced jobs whose forcing was dropped, by decreasing m_j (ties in job order).
    pub relaxed: Vec<String>,
    /// How many times the solver ran (1 when no relaxation was needed).
    pub solves: usize,
    /// How many of those solves a fallback solver answered after the first solver of a
    /// [`Fallback`](crate::solvers::Fallback) (`dp+ilp`) refused them (their solutions carry
    /// the stat `fallback_from`): the round's first solve, the relaxation's count problem or
    /// its final solve.
    pub fallback_solves: usize,
    /// How many of those solves answered `feasible`: a limit stopped them with a valid solution
    /// not proven optimal (the time limit, `Dp::time_limit`, or an ILP's gap). Then the plan
    /// may be worth less than the round's optimum, and a relaxation may keep fewer forced jobs
    /// than fit (docs/rounds.md, "With a time limit"). 0 without limits.
    pub feasible_solves: usize,
    /// The instance that was solved: the active jobs with their deficits, those of relaxed jobs
    /// lowered so that they are not forced. [`crate::verify`] accepts `solution` against it.
    pub instance: Instance,
    /// The solver's answer for `instance`.
    pub solution: Solution,
    /// The chosen slots on physical GPUs.
    pub placement: Placement,
}

impl RoundPlan {
    /// The planned throughputs as a report: what [`RoundScheduler::report`] receives when every
    /// job realizes exactly its prediction. Idle jobs are left out (they count as 0).
    pub fn planned_throughputs(&self) -> Vec<(&str, f64)> {
        self.jobs
            .iter()
            .filter(|j| j.run.is_some())
            .map(|j| (j.id.as_str(), j.throughput))
            .collect()
    }

    /// What placement was asked to place: one request per running job.
    pub fn requests(&self) -> Vec<SlotRequest> {
        slot_requests(&self.jobs, &self.instance)
    }
}

/// The second stage's problem ([`RoundScheduler::with_second_stage`]): the jobs `solution` runs
/// must run (a forced job among its admissible options, any other among all of its options, which
/// are all admissible for a job that may idle), every other job idles, and an option is worth
/// `w_j^exponent * theta / theta_max_j`.
fn second_stage(
    instance: &Instance,
    problem: &RoundProblem,
    solution: &Solution,
    exponent: f64,
) -> RoundProblem {
    let mut staged = problem.clone();
    for (j, job) in staged.jobs.iter_mut().enumerate() {
        let runs = solution.assignments.get(j).copied().flatten().is_some();
        if !runs {
            job.options.clear();
            // A forced job the first stage left idle cannot be (its answer would be infeasible);
            // should one be, it may idle here too rather than have no option to take.
            if !job.may_idle() {
                job.class = JobClass::Optional;
            }
            continue;
        }
        let spec = &instance.jobs()[j];
        let scale = spec.weight().powf(exponent);
        for o in &mut job.options {
            let theta = spec.options()[o.option].throughput;
            o.value = scale * (theta / job.max_throughput);
        }
        if job.may_idle() {
            job.class = JobClass::Forced {
                cannot_catch_up: false,
            };
        }
    }
    staged
}

/// One slot request per running job of `jobs`, with its workers from `instance` (same job order).
fn slot_requests(jobs: &[PlannedJob], instance: &Instance) -> Vec<SlotRequest> {
    jobs.iter()
        .zip(instance.jobs())
        .filter_map(|(p, job)| {
            p.run.map(|(gpu, slot)| SlotRequest {
                job: p.id.clone(),
                gpu,
                slot,
                workers: job.workers(),
            })
        })
        .collect()
}

/// A job's service in a reported round.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Service {
    /// The job's id.
    pub job: String,
    /// sigma_realized = realized throughput / F_j; `None` when F_j = 0 (no fairness bound).
    pub sigma: Option<f64>,
    /// D_j after the update.
    pub deficit: f64,
}

/// What [`RoundScheduler::report`] needs of a job of the last plan.
#[derive(Debug, Clone, Copy, PartialEq)]
struct RoundBound {
    /// F_j of the planned round.
    fair_rate: f64,
    /// B_j of the planned round.
    credit: f64,
}

/// What [`RoundScheduler::report`] needs from the last plan.
#[derive(Debug, Clone)]
struct Pending {
    bounds: HashMap<String, RoundBound>,
    runs: HashMap<String, (usize, u32)>,
    placement: Placement,
}

/// The round-based STS-Fairness scheduler. See the module documentation.
///
/// ```
/// use stsfair::{Dp, Instance, JobSpec, RoundScheduler};
///
/// let cluster = Instance::builder().gpu_type("v100", 1, 4, &[1, 2, 4]).build()?;
/// let mut s = RoundScheduler::new(&cluster, Dp::default());
/// s.add_job(JobSpec::new("a").weight(3.0).time("v100", 4, 0.25))?;
/// s.add_job(JobSpec::new("b").time("v100", 4, 0.50))?;
/// // Both want the whole GPU; a is worth v = w_a = 3, b is worth 1: a runs.
/// let plan = s.plan()?;
/// assert_eq!(plan.jobs[0].run, Some((0, 4)));
/// assert_eq!(plan.jobs[1].run, None);
/// // F_a = 3/4 * 4 it/s = 3, a ran at 4 it/s: sigma 4/3; F_b = 1/4 * 2 = 0.5, b idled: sigma 0.
/// s.report_planned(&plan)?;
/// assert!((s.deficit("a").unwrap() - (1.0 - 4.0 / 3.0)).abs() < 1e-12);
/// assert_eq!(s.deficit("b"), Some(1.0)); // 0 + 1 - 0
/// // Now b is forced (m_b = (1 + 1) - 1 = 1 > 0) and gets the GPU.
/// let plan = s.plan()?;
/// assert_eq!(plan.jobs[1].run, Some((0, 4)));
/// assert!(plan.jobs[1].forced);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RoundScheduler {
    gpu_types: Vec<GpuType>,
    fairness: Fairness,
    jobs: Vec<Job>,
    deficits: Vec<f64>,
    solver: Box<dyn Solver>,
    colocation: Box<dyn CoLocation>,
    pending: Option<Pending>,
    running: Option<Placement>,
    /// The option each job ran in the last reported round.
    last_runs: HashMap<String, (usize, u32)>,
    round: u64,
    /// Where service prices come from; `None`: the round problem of MODEL.md section 4 as is.
    pricing: Option<Box<dyn ServicePrices>>,
    /// The prices of the current jobs, once computed (`Some(None)`: the source gave none);
    /// cleared whenever jobs, times or weights change.
    prices: Option<Option<Vec<f64>>>,
    /// What the last plan's solve left for the next one (docs/solver.md, "Warm starts").
    warm: WarmStart,
    /// The exponent of the second stage that re-chooses where the chosen jobs run
    /// ([`RoundScheduler::with_second_stage`]); `None`: the round problem's own choice.
    second_stage: Option<f64>,
}

impl std::fmt::Debug for RoundScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoundScheduler")
            .field("solver", &self.solver.name())
            .field("gpu_types", &self.gpu_types.len())
            .field("jobs", &self.jobs.len())
            .field("round", &self.round)
            .finish()
    }
}

impl RoundScheduler {
    /// A scheduler for the cluster and fairness parameters of `cluster`, whose jobs (with their
    /// deficits) become the active jobs, solving each round with `solver` and placing without a
    /// co-location model ([`NoInterference`]).
    pub fn new(cluster: &Instance, solver: impl Solver + 'static) -> RoundScheduler {
        RoundScheduler {
            gpu_types: cluster.gpu_types().to_vec(),
            fairness: cluster.fairness(),
            deficits: cluster.jobs().iter().map(Job::deficit).collect(),
            jobs: cluster.jobs().to_vec(),
            solver: Box::new(solver),
            colocation: Box::new(NoInterference),
            pending: None,
            running: None,
            last_runs: HashMap::new(),
            round: 0,
            pricing: None,
            prices: None,
            warm: WarmStart::default(),
            second_stage: None,
        }
    }

    /// Uses `model` to choose co-runners in placement: for example
    /// `stsfair_costs::JobSlowdowns` (crate `stsfair-costs`), the measured Gavel pairs with the trained predictor
    /// filling the pairs never measured (`examples/gavel_placement.rs`).
    pub fn with_colocation(mut self, model: impl CoLocation + 'static) -> RoundScheduler {
        self.colocation = Box::new(model);
        self
    }

    /// Prices the fairness service of forced jobs with `source` (see [`ServicePrices`]): each
    /// round problem's forced jobs get option values `v + price * sigma`, the rest is MODEL.md
    /// section 4 unchanged. The plan's `objective` and its solution's `objective` stay the
    /// model's `v` of the chosen options; the solution is optimal for the priced values. A
    /// restored scheduler ([`RoundScheduler::restore`]) has no prices until this is called again.
    pub fn with_service_prices(mut self, source: impl ServicePrices + 'static) -> RoundScheduler {
        self.pricing = Some(Box::new(source));
        self.prices = None;
        self
    }

    /// Adds a second stage to every plan: the round problem chooses *who* runs, with the jobs'
    /// weights; then, with that set of jobs fixed, where they run (GPU type and slot) is chosen
    /// again, exactly, with each job's value `w_j^exponent * theta / theta_max_j` instead of
    /// `w_j * theta / theta_max_j`. Every job of the first answer runs, no other job does, and a
    /// forced job keeps its admissible options, so every fairness minimum and capacity still
    /// holds; only the trade between the jobs' weights and how well each runs on each type is
    /// softened (exponent 0: the most normalized throughput for the chosen set; 1: the round
    /// problem itself, no second solve).
    ///
    /// Why: with weights that span orders of magnitude (least attained service gives an old job a
    /// fiftieth of a new one's), the round problem puts the heavy jobs on the fast types however
    /// little they gain there, and the light ones run on the slow types at a fraction of their
    /// speed, which the cluster pays for in throughput (docs/rounds.md, "Who runs, then where").
    ///
    /// The plan's `solution` is the second stage's assignment; its `objective` (and the plan's)
    /// is the round problem's value `v` of that assignment (without service prices at most the
    /// first stage's optimum, which also had that assignment);
    /// `solves` counts the second solve. When every chosen job has the same weight the first
    /// answer is already the second stage's optimum (its values are the first's times a
    /// constant, over assignments the first stage also had) and no second solve is made. A
    /// restored scheduler has no second stage until this is called again. Cost: one more solve,
    /// of a problem with only the chosen jobs' options.
    ///
    /// ```
    /// use stsfair::{Dp, Instance, JobSpec, RoundScheduler};
    ///
    /// let cluster = Instance::builder()
    ///     .gpu_type("v100", 1, 1, &[1])
    ///     .gpu_type("k80", 1, 1, &[1])
    ///     .build()?;
    /// let jobs = [
    ///     // Heavy, and almost as fast on a K80 as on a V100.
    ///     JobSpec::new("heavy").weight(16.0).time("v100", 1, 1.0).time("k80", 1, 1.0 / 0.9),
    ///     // Light, and ten times slower on a K80.
    ///     JobSpec::new("light").time("v100", 1, 1.0).time("k80", 1, 10.0),
    /// ];
    /// let mut plain = RoundScheduler::new(&cluster, Dp::default());
    /// let mut staged = RoundScheduler::new(&cluster, Dp::default()).with_second_stage(0.5)?;
    /// for j in &jobs {
    ///     plain.add_job(j.clone())?;
    ///     staged.add_job(j.clone())?;
    /// }
    /// // Weights: 16 * 1 + 1 * 0.1 = 16.1 against 16 * 0.9 + 1 = 15.4: heavy takes the V100.
    /// let p = plain.plan()?;
    /// assert_eq!((p.jobs[0].run, p.jobs[1].run), (Some((0, 1)), Some((1, 1))));
    /// // Both run either way; with 16^0.5 = 4: 4 * 0.9 + 1 = 4.6 against 4 * 1 + 0.1 = 4.1.
    /// let s = staged.plan()?;
    /// assert_eq!((s.jobs[0].run, s.jobs[1].run), (Some((1, 1)), Some((0, 1))));
    /// assert!((s.objective - 15.4).abs() < 1e-9);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_second_stage(mut self, exponent: f64) -> Result<RoundScheduler, RoundError> {
        self.set_second_stage(Some(exponent))?;
        Ok(self)
    }

    /// Sets the second stage of the next plans ([`with_second_stage`](Self::with_second_stage)),
    /// or removes it (`None`: the round problem's own choice of where the jobs run), between
    /// plans: for a caller that softens its weights only in some rounds (the simulator's `sts`
    /// policy runs it only where least attained service weights the jobs). Validated like
    /// `with_second_stage`; on error nothing changes.
    ///
    /// ```
    /// use stsfair::{Dp, Instance, RoundScheduler};
    ///
    /// let cluster = Instance::builder().gpu_type("v100", 1, 1, &[1]).build()?;
    /// let mut s = RoundScheduler::new(&cluster, Dp::default()).with_second_stage(0.5)?;
    /// s.set_second_stage(None)?;
    /// assert_eq!(s.second_stage(), None);
    /// assert!(s.set_second_stage(Some(2.0)).is_err());
    /// assert_eq!(s.second_stage(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_second_stage(&mut self, exponent: Option<f64>) -> Result<(), RoundError> {
        if let Some(exponent) = exponent.filter(|e| !(0.0..=1.0).contains(e)) {
            return Err(RoundError::InvalidSetting {
                setting: "second stage exponent",
                rule: "must be in [0, 1]",
                got: exponent.to_string(),
            });
        }
        self.second_stage = exponent.filter(|&e| e < 1.0);
        Ok(())
    }

    /// The exponent of the second stage, if any ([`RoundScheduler::with_second_stage`]).
    pub fn second_stage(&self) -> Option<f64> {
        self.second_stage
    }

    /// The name of the price source, if any.
    pub fn service_prices_name(&self) -> Option<&'static str> {
        self.pricing.as_ref().map(|p| p.name())
    }

    /// The fairness parameters.
    pub fn fairness(&self) -> Fairness {
        self.fairness
    }

    /// The GPU types.
    pub fn gpu_types(&self) -> &[GpuType] {
        &self.gpu_types
    }

    /// Rounds reported so far.
    pub fn round(&self) -> u64 {
        self.round
    }

    /// The solver's name.
    pub fn solver_name(&self) -> &'static str {
        self.solver.name()
    }

    /// The active jobs with their current deficits, in the order they were added.
    pub fn jobs(&self) -> impl Iterator<Item = (&Job, f64)> + '_ {
        self.jobs.iter().zip(self.deficits.iter().copied())
    }

    /// D_j of an active job.
    pub fn deficit(&self, id: &str) -> Option<f64> {
        self.position(id).map(|i| self.deficits[i])
    }

    /// Where the jobs ran in the last reported round (used to count and avoid migrations).
    pub fn last_placement(&self) -> Option<&Placement> {
        self.running.as_ref()
    }

    fn position(&self, id: &str) -> Option<usize> {
        self.jobs.iter().position(|j| j.id() == id)
    }

    /// A builder holding the cluster and fairness parameters, no jobs.
    fn cluster_builder(&self) -> InstanceBuilder {
        let mut b = Instance::builder().fairness(self.fairness);
        for g in &self.gpu_types {
            let sizes: Vec<u64> = g.slot_sizes().iter().map(|&s| u64::from(s)).collect();
            b = b.gpu_type(g.name(), u64::from(g.count()), u64::from(g.units()), &sizes);
        }
        b
    }

    /// A job's description as a builder entry, with deficit `deficit`.
    fn spec(&self, job: &Job, deficit: f64) -> JobSpec {
        let mut spec = JobSpec::new(job.id())
            .weight(job.weight())
            .workers(u64::from(job.workers()))
            .deficit(deficit);
        for t in job.times() {
            spec = spec.time(
                self.gpu_types[t.gpu].name(),
                u64::from(t.slot),
                t.sec_per_iter,
            );
        }
        spec
    }

    /// Validates one job against the cluster, exactly as a file with this single job would be.
    /// `id` is `None` for a new job (whose id is inside the spec).
    fn validate(&self, spec: JobSpec, id: Option<&str>) -> Result<Job, RoundError> {
        let invalid = |source| match id {
            Some(id) => RoundError::InvalidJob {
                job: id.to_string(),
                source,
            },
            None => RoundError::InvalidNewJob { source },
        };
        let one = self.cluster_builder().job(spec).build().map_err(invalid)?;
        // The builder got exactly one job, so a valid instance holds it.
        one.jobs().first().cloned().ok_or_else(|| {
            invalid(InstanceError::Rule {
                path: "jobs".into(),
                rule: "must hold the job".into(),
                got: "[]".into(),
            })
        })
    }

    /// Adds a job (its deficit is the spec's, 0 by default). It takes part from the next
    /// [`plan`](Self::plan) on, even under the id of a job removed since the pending plan (it is
    /// a new job, not part of that round). Errors: an id already active, or a description the
    /// instance format rejects (unknown GPU type, slot not on the ladder, a time <= 0, ...).
    pub fn add_job(&mut self, spec: JobSpec) -> Result<(), RoundError> {
        let job = self.validate(spec, None)?;
        if self.position(job.id()).is_some() {
            return Err(RoundError::DuplicateJob {
                job: job.id().to_string(),
            });
        }
        // The round's instance must keep the sum of the weights finite, as a file must
        // (docs/format.md): checked here, where the constructor checks its jobs together.
        let sum: f64 = self.jobs.iter().map(Job::weight).sum::<f64>() + job.weight();
        if !sum.is_finite() {
            return Err(RoundError::InvalidNewJob {
                source: InstanceError::rule(
                    "jobs[0].weight".to_string(),
                    "must keep the sum of all job weights finite (with the active jobs')",
                    crate::instance::num(job.weight()),
                ),
            });
        }
        // A job removed since the plan and added again under its id is a new job: not part of
        // the planned round (its entry there was the old job's bound and run), and the old
        // job's last option and GPUs are not its own (nor its workers: it may have fewer, and a
        // snapshot's placed slots of an active job must be of its workers).
        let forget = |placement: &mut Placement| {
            for g in &mut placement.gpus {
                g.slots.retain(|s| s.job != job.id());
            }
            placement.gpus.retain(|g| !g.slots.is_empty());
        };
        if let Some(p) = self.pending.as_mut() {
            p.bounds.remove(job.id());
            p.runs.remove(job.id());
            forget(&mut p.placement);
        }
        if let Some(p) = self.running.as_mut() {
            forget(p);
        }
        self.last_runs.remove(job.id());
        self.deficits.push(job.deficit());
        self.jobs.push(job);
        self.prices = None;
        Ok(())
    }

    /// Removes an active job and returns its deficit. A pending plan can still be reported; the
    /// removed job's entry in it is then ignored.
    pub fn remove_job(&mut self, id: &str) -> Result<f64, RoundError> {
        let i = self.position(id).ok_or_else(|| RoundError::UnknownJob {
            job: id.to_string(),
        })?;
        self.jobs.remove(i);
        self.prices = None;
        Ok(self.deficits.remove(i))
    }

    /// Replaces a job's predicted times (GPU type name, slot size, seconds per iteration), for
    /// example when the predictor has learnt more. Weight, workers and deficit are kept. The new
    /// times are validated like a file's; on error nothing changes.
    pub fn update_times(&mut self, id: &str, times: &[(&str, u64, f64)]) -> Result<(), RoundError> {
        let i = self.position(id).ok_or_else(|| RoundError::UnknownJob {
            job: id.to_string(),
        })?;
        let old = &self.jobs[i];
        let mut spec = JobSpec::new(id)
            .weight(old.weight())
            .workers(u64::from(old.workers()))
            .deficit(self.deficits[i]);
        for &(gpu, slot, sec) in times {
            spec = spec.time(gpu, slot, sec);
        }
        self.jobs[i] = self.validate(spec, Some(id))?;
        self.prices = None;
        Ok(())
    }

    /// Sets a job's weight w_j, for a caller whose priorities change between rounds: it sets the
    /// job's share phi_j = w_j / (sum of w) and the value of its options from the next
    /// [`plan`](Self::plan) on. Validated like a file's weight (finite, > 0); on error nothing
    /// changes.
    ///
    /// A caller that weights jobs by least attained service (as the simulator's `sts` policy)
    /// should count a distributed job's service once, not once per worker: the value of its
    /// options is already that of one job on d_j GPUs, w_j / d_j per GPU, and counting every
    /// worker's GPU time divides that again, by up to d_j (docs/simulation.md, "Attained service
    /// per job": 8.7% shorter makespans on Gavel's multi-GPU mix at 2.6 jobs/h).
    pub fn set_weight(&mut self, id: &str, weight: f64) -> Result<(), RoundError> {
        let i = self.position(id).ok_or_else(|| RoundError::UnknownJob {
            job: id.to_string(),
        })?;
        if self.jobs[i].weight() == weight {
            // Already valid: nothing to rebuild (callers that recompute weights every round
            // change few of them).
            return Ok(());
        }
        let spec = self.spec(&self.jobs[i], self.deficits[i]).weight(weight);
        self.jobs[i] = self.validate(spec, Some(id))?;
        self.prices = None;
        Ok(())
    }

    /// Sets a job's deficit, for example to restore a scheduler's state. Must be finite.
    pub fn set_deficit(&mut self, id: &str, deficit: f64) -> Result<(), RoundError> {
        let i = self.position(id).ok_or_else(|| RoundError::UnknownJob {
            job: id.to_string(),
        })?;
        if !deficit.is_finite() {
            return Err(RoundError::InvalidJob {
                job: id.to_string(),
                source: InstanceError::Rule {
                    path: "jobs[0].deficit".into(),
                    rule: "must be finite".into(),
                    got: deficit.to_string(),
                },
            });
        }
        self.deficits[i] = deficit;
        Ok(())
    }

    /// The instance of the next round: the cluster and every active job with `deficits`.
    fn instance(&self, deficits: &[f64]) -> Result<Instance, RoundError> {
        let mut b = self.cluster_builder();
        for (job, &d) in self.jobs.iter().zip(deficits) {
            b = b.job(self.spec(job, d));
        }
        // Every job was validated against this cluster and ids are unique, so this only fails
        // on a defect; the error still names the job by its path.
        b.build()
            .map_err(|source| RoundError::RoundInstance { source })
    }

    /// Plans the next round: builds the round's instance from the active jobs and deficits,
    /// solves it, relaxes the forcing if the forced jobs cannot all fit, and places the chosen
    /// slots, keeping jobs on the GPUs they ran on in the last reported round when that costs
    /// no predicted slowdown.
    ///
    /// Relaxation: when the solver finds the forced jobs cannot all fit, the plan keeps the
    /// largest number of them forced that fits (found by one solve of a count problem: the
    /// forced jobs alone on their cheapest admissible options, each worth 1; among forced jobs
    /// with the same options the most behind are kept) and solves the round with the others
    /// made optional for this round only (their deficit in this round's problem is lowered to
    /// -(lambda + Delta + 1), so m_j < 0; the true deficit is untouched): three solver calls in
    /// a relaxed round, one otherwise (docs/rounds.md).
    ///
    /// Among identical jobs (same weight, workers and times), which one gets which chosen option
    /// does not change the objective; the plan hands options back to the jobs that ran them in
    /// the last reported round when they stay admissible, so that fewer jobs migrate.
    ///
    /// Calling `plan` again before [`report`](Self::report) replaces the pending plan.
    pub fn plan(&mut self) -> Result<RoundPlan, RoundError> {
        let instance = self.instance(&self.deficits)?;
        self.update_prices(&instance)?;
        let problem = RoundProblem::new(&instance);
        let mut solves = 1;
        // The warm start is taken out for the solve (which borrows the scheduler) and put back.
        let mut warm = std::mem::take(&mut self.warm);
        let solved = self.solve_round(&instance, Some(&mut warm));
        self.warm = warm;
        let mut solution = solved?;
        let mut fallback_solves = usize::from(solution.stats.fallback_from.is_some());
        let stopped = |s: &Solution| usize::from(matches!(s.status, Status::Feasible { .. }));
        let mut feasible_solves = stopped(&solution);
        let mut solved = instance;
        let mut relaxed: Vec<usize> = Vec::new();
        if matches!(solution.status, Status::Infeasible { .. }) {
            let r = self.relax(&problem)?;
            solves += r.solves;
            fallback_solves += r.fallback_solves;
            feasible_solves += r.feasible_solves;
            relaxed = r.relaxed;
            solved = r.instance;
            solution = r.solution;
        }

        let solved_problem = RoundProblem::new(&solved);
        // With one weight among the running jobs, both stages value their options alike up to a
        // constant factor, and the first answer is already the second's optimum: no solve. (Only
        // looked at when there is a second stage.)
        let weights_differ = || {
            let mut weights = (solution.assignments.iter().zip(solved.jobs()))
                .filter(|(a, _)| a.is_some())
                .map(|(_, job)| job.weight());
            let first = weights.next();
            first.is_some_and(|w| weights.any(|x| x != w))
        };
        if let Some(exponent) = self.second_stage.filter(|_| weights_differ()) {
            let staged = second_stage(&solved, &solved_problem, &solution, exponent);
            let answer = self.solver.solve_problem(&staged)?;
            solves += 1;
            fallback_solves += usize::from(answer.stats.fallback_from.is_some());
            feasible_solves += stopped(&answer);
            if let Status::Infeasible { reason } = &answer.status {
                // The first answer is a solution of the second stage's problem.
                return Err(RoundError::SolverDefect {
                    solver: answer.solver.clone(),
                    reason: format!("second stage: {reason}"),
                });
            }
            let stats = std::mem::take(&mut solution.stats);
            solution = Solution::from_assignments(
                &solution.solver,
                solution.status.clone(),
                &solved_problem,
                answer.assignments,
            );
            solution.stats = stats;
        }
        keep_previous_options(&self.jobs, &solved_problem, &self.last_runs, &mut solution);
        let relaxed_set: HashSet<usize> = relaxed.iter().copied().collect();
        let mut jobs = Vec::with_capacity(self.jobs.len());
        for (j, job) in self.jobs.iter().enumerate() {
            let round_job = &problem.jobs[j];
            let run = solution.assignments.get(j).copied().flatten();
            let throughput = run
                .and_then(|(k, s)| job.options().iter().find(|o| o.gpu == k && o.slot == s))
                .map_or(0.0, |o| o.throughput);
            jobs.push(PlannedJob {
                id: job.id().to_string(),
                run,
                throughput,
                sigma: if run.is_some() {
                    throughput / round_job.fair_rate
                } else {
                    0.0
                },
                fair_rate: round_job.fair_rate,
                deficit: self.deficits[j],
                minimum: round_job.minimum,
                forced: matches!(solved_problem.jobs[j].class, JobClass::Forced { .. }),
                relaxed: relaxed_set.contains(&j),
                credit: job_credit(self.fairness, round_job),
            });
        }
        let placement = place(
            &self.gpu_types,
            &slot_requests(&jobs, &solved),
            self.running.as_ref(),
            self.colocation.as_ref(),
        )?;
        self.pending = Some(Pending {
            bounds: jobs
                .iter()
                .map(|j| {
                    let b = RoundBound {
                        fair_rate: j.fair_rate,
                        credit: j.credit,
                    };
                    (j.id.clone(), b)
                })
                .collect(),
            runs: jobs
                .iter()
                .filter_map(|j| j.run.map(|r| (j.id.clone(), r)))
                .collect(),
            placement: placement.clone(),
        });
        Ok(RoundPlan {
            round: self.round,
            objective: solution.objective.unwrap_or(0.0),
            jobs,
            relaxed: relaxed
                .iter()
                .map(|&j| self.jobs[j].id().to_string())
                .collect(),
            solves,
            fallback_solves,
            feasible_solves,
            instance: solved,
            solution,
            placement,
        })
    }

    /// Computes the prices of the current jobs if there is a source and they are not known.
    fn update_prices(&mut self, instance: &Instance) -> Result<(), RoundError> {
        let Some(source) = &self.pricing else {
            return Ok(());
        };
        if self.prices.is_some() {
            return Ok(());
        }
        let bad = |reason: String| RoundError::Prices {
            source_name: source.name(),
            reason,
        };
        let prices = source.prices(instance).map_err(bad)?;
        if let Some(p) = &prices {
            if p.len() != self.jobs.len() {
                return Err(bad(format!(
                    "gave {} prices for {} jobs",
                    p.len(),
                    self.jobs.len()
                )));
            }
            if let Some((j, x)) = p
                .iter()
                .enumerate()
                .find(|(_, x)| !(x.is_finite() && **x >= 0.0))
            {
                return Err(bad(format!(
                    "the price of job {:?} must be finite and >= 0 (got {x})",
                    self.jobs[j].id()
                )));
            }
        }
        self.prices = Some(prices);
        Ok(())
    }

    /// Solves a round instance, with the forced jobs' service priced when there are prices; the
    /// solution's objective is then the model's v of its assignments. With `warm`, the solver
    /// starts from what the last round's solve left there and leaves this one's
    /// ([`Solver::solve_problem_warm`]; the plan's own solve passes it, the relaxation's
    /// subproblems do not).
    fn solve_round(
        &self,
        instance: &Instance,
        warm: Option<&mut WarmStart>,
    ) -> Result<Solution, RoundError> {
        let start = std::time::Instant::now();
        let problem = RoundProblem::new(instance);
        let priced = match &self.prices {
            Some(Some(prices)) => {
                let mut priced = problem.clone();
                priced.price_forced(prices);
                Some(priced)
            }
            _ => None,
        };
        let solved = priced.as_ref().unwrap_or(&problem);
        let mut solution = match warm {
            Some(warm) => self.solver.solve_problem_warm(solved, warm)?,
            None => self.solver.solve_problem(solved)?,
        };
        if priced.is_some() && solution.objective.is_some() {
            let plain = Solution::from_assignments(
                &solution.solver,
                solution.status.clone(),
                &problem,
                solution.assignments.clone(),
            );
            solution.objective = plain.objective;
        }
        solution.stats.seconds = start.elapsed().as_secs_f64();
        Ok(solution)
    }

    /// Reports what really ran in the planned round: the realized throughput (iterations per
    /// second) of each job that ran; jobs of the round not listed idled (sigma 0). Every job of
    /// the round that is still active gets D_j <- max(-B_j, D_j + lambda - sigma_realized) (B_j
    /// of the plan, [`PlannedJob::credit`]), except jobs with F_j = 0, which keep their deficit. Jobs removed since the plan are ignored.
    /// Returns the service of every updated job, in job order.
    ///
    /// Errors (nothing changes): no pending plan, a job that is not active or was not in the
    /// round, a job listed twice, a throughput that is not finite and >= 0.
    pub fn report(&mut self, realized: &[(&str, f64)]) -> Result<Vec<Service>, RoundError> {
        let pending = self.pending.as_ref().ok_or(RoundError::NoPlan)?;
        let mut got: HashMap<&str, f64> = HashMap::with_capacity(realized.len());
        for &(id, thr) in realized {
            if !pending.bounds.contains_key(id) {
                return Err(if self.position(id).is_some() {
                    RoundError::NotInRound {
                        job: id.to_string(),
                    }
                } else {
                    RoundError::UnknownJob {
                        job: id.to_string(),
                    }
                });
            }
            if !(thr >= 0.0 && thr.is_finite()) {
                return Err(RoundError::InvalidThroughput {
                    job: id.to_string(),
                    got: thr,
                });
            }
            if got.insert(id, thr).is_some() {
                return Err(RoundError::DuplicateReport {
                    job: id.to_string(),
                });
            }
        }
        let lambda = self.fairness.lambda;
        let mut out = Vec::new();
        for (job, d) in self.jobs.iter().zip(self.deficits.iter_mut()) {
            let Some(&RoundBound { fair_rate, credit }) = pending.bounds.get(job.id()) else {
                continue;
            };
            let sigma = if fair_rate > 0.0 {
                let s = got.get(job.id()).copied().unwrap_or(0.0) / fair_rate;
                *d = update_deficit(*d, lambda, credit, s);
                Some(s)
            } else {
                None
            };
            out.push(Service {
                job: job.id().to_string(),
                sigma,
                deficit: *d,
            });
        }
        if let Some(p) = self.pending.take() {
            self.running = Some(p.placement);
            self.last_runs = p.runs;
        }
        // A snapshot's round is at most MAX_ROUND (checked by `restore`), far from overflowing.
        self.round = self.round.saturating_add(1);
        Ok(out)
    }

    /// Reports that every job of `plan` realized exactly its planned throughput. `plan` must be
    /// the pending plan (the last [`plan`](Self::plan)'s): of the pending round, with the same
    /// jobs running on the same options; else [`RoundError::StalePlan`] and nothing changes.
    pub fn report_planned(&mut self, plan: &RoundPlan) -> Result<Vec<Service>, RoundError> {
        let pending = self.pending.as_ref().ok_or(RoundError::NoPlan)?;
        // Jobs removed or added again since the plan have left the pending round: not compared.
        let same = plan.round == self.round
            && plan
                .jobs
                .iter()
                .filter(|j| pending.bounds.contains_key(&j.id))
                .all(|j| pending.runs.get(&j.id) == j.run.as_ref());
        if !same {
            return Err(RoundError::StalePlan {
                round: plan.round,
                pending: self.round,
            });
        }
        self.report(&plan.planned_throughputs())
    }
}

/// Among identical jobs (same weight, workers and times, hence the same F_j, sigma and v for
/// every option), the solver's choice of which one gets which option is arbitrary: swapping two
/// of them changes neither the objective nor the units. This hands the chosen options back to the
/// jobs that ran them last round where it can, so that placement can keep them on their GPUs.
///
/// Pairwise swaps within each group of identical jobs, kept when both jobs stay admissible (an
/// option among their admissible ones, idle only if they may idle) and the number of jobs on
/// their previous option (2 points) or at least their previous GPU type (1 point) grows. Each
/// swap raises that score, which is at most 2n, so it ends; O(passes * sum of g^2) for groups of
/// size g. The objective is recomputed in job order (the same sum, reordered, agrees to 1e-9).
fn keep_previous_options(
    jobs: &[Job],
    problem: &RoundProblem,
    last: &HashMap<String, (usize, u32)>,
    solution: &mut Solution,
) {
    if last.is_empty() || solution.assignments.len() != jobs.len() {
        return;
    }
    type Key = (u64, u32, Vec<(usize, u32, u64)>);
    let key = |j: &Job| -> Key {
        (
            j.weight().to_bits(),
            j.workers(),
            j.times()
                .iter()
                .map(|t| (t.gpu, t.slot, t.sec_per_iter.to_bits()))
                .collect(),
        )
    };
    let mut groups: HashMap<Key, Vec<usize>> = HashMap::new();
    for (i, j) in jobs.iter().enumerate() {
        groups.entry(key(j)).or_default().push(i);
    }
    let admissible = |j: usize, a: Option<(usize, u32)>| match a {
        None => problem.jobs[j].may_idle(),
        Some((k, s)) => problem.jobs[j]
            .options
            .iter()
            .any(|o| o.gpu == k && o.slot == s),
    };
    let score = |j: usize, a: Option<(usize, u32)>| -> u32 {
        match (last.get(jobs[j].id()), a) {
            (Some(&p), Some(now)) if p == now => 2,
            (Some(&(pk, _)), Some((k, _))) if pk == k => 1,
            _ => 0,
        }
    };
    let mut changed = false;
    let mut members: Vec<Vec<usize>> = groups.into_values().filter(|g| g.len() > 1).collect();
    members.sort_unstable();
    let a = &mut solution.assignments;
    for group in &members {
        let mut improved = true;
        while improved {
            improved = false;
            for (x, &i) in group.iter().enumerate() {
                for &j in &group[x + 1..] {
                    let (ai, aj) = (a[i], a[j]);
                    if ai == aj || !admissible(i, aj) || !admissible(j, ai) {
                        continue;
                    }
                    if score(i, aj) + score(j, ai) > score(i, ai) + score(j, aj) {
                        a.swap(i, j);
                        improved = true;
                        changed = true;
                    }
                }
            }
        }
    }
    if changed {
        let mut objective = 0.0;
        for (rj, asg) in problem.jobs.iter().zip(a.iter()) {
            if let Some((k, s)) = *asg {
                objective += rj
                    .options
                    .iter()
                    .find(|o| o.gpu == k && o.slot == s)
                    .map_or(0.0, |o| o.value);
            }
        }
        solution.objective = Some(objective);
    }
}

/// One job's record over a [`run_rounds`] run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct JobRecord {
    /// The job's id.
    pub job: String,
    /// Rounds in which the job ran.
    pub rounds_run: u64,
    /// Realized normalized service averaged over all rounds, idle rounds counting 0; `None` for
    /// a job with F_j = 0 (no fairness bound, sigma undefined).
    pub mean_sigma: Option<f64>,
    /// D_j after the last round.
    pub final_deficit: f64,
    /// Whether F_j = 0.
    pub no_bound: bool,
}

/// What [`run_rounds`] measured.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunSummary {
    /// Rounds run.
    pub rounds: u64,
    /// Rounds in which at least one job's forcing was dropped.
    pub relaxed_rounds: u64,
    /// Mean over rounds of the round objective (sum of v of the chosen options).
    pub mean_objective: f64,
    /// Worker migrations summed over rounds ([`Placement::migrations`]).
    pub migrations: u64,
    /// Mean over rounds of the placement's predicted slowdown ([`Placement::slowdown`]; 0 with
    /// [`NoInterference`]).
    pub mean_slowdown: f64,
    /// Pairs sharing a GPU that the co-location model forbids, summed over rounds
    /// ([`Placement::conflicts`]).
    pub conflicts: u64,
    /// Solver calls summed over rounds.
    pub solves: u64,
    /// Rounds with a solve that came from a fallback solver: the first solver of a
    /// [`Fallback`](crate::solvers::Fallback) (`dp+ilp`) refused the round, or the count problem
    /// or final solve of its relaxation, and the second solved it
    /// ([`RoundPlan::fallback_solves`] > 0).
    pub fallback_rounds: u64,
    /// Rounds with a solve a limit stopped with a solution not proven optimal
    /// ([`RoundPlan::feasible_solves`] > 0; 0 without limits).
    pub feasible_rounds: u64,
    /// Per job, in the scheduler's job order.
    pub jobs: Vec<JobRecord>,
    /// Per round, in order.
    pub per_round: Vec<RoundRecord>,
}

/// The running totals behind a [`RunSummary`], one round at a time: what [`run_rounds`] keeps
/// while it runs, as a serde value so that a run interrupted between rounds can be resumed with
/// exactly the summary of an uninterrupted one (`stsfair rounds --state` saves it next to the
/// [`SchedulerSnapshot`]). It belongs to one job set: the scheduler's jobs must not change while
/// it records.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunTally {
    /// Rounds recorded.
    pub rounds: u64,
    /// Rounds in which at least one job's forcing was dropped.
    pub relaxed_rounds: u64,
    /// Sum over rounds of the round objective.
    pub objective_sum: f64,
    /// Worker migrations summed over rounds.
    pub migrations: u64,
    /// Sum over rounds of the placement's predicted slowdown.
    pub slowdown_sum: f64,
    /// Forbidden pairs summed over rounds.
    pub conflicts: u64,
    /// Solver calls summed over rounds.
    pub solves: u64,
    /// Rounds with a solve that came from a fallback solver ([`RoundPlan::fallback_solves`] > 0).
    pub fallback_rounds: u64,
    /// Rounds with a solve a limit stopped ([`RoundPlan::feasible_solves`] > 0; 0 in a state
    /// file written before it was kept).
    #[serde(default)]
    pub feasible_rounds: u64,
    /// Per job, in the scheduler's job order.
    pub jobs: Vec<JobTally>,
    /// Per round, in order (empty in a state file written before it was kept).
    #[serde(default)]
    pub per_round: Vec<RoundRecord>,
}

/// One job's running totals in a [`RunTally`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobTally {
    /// The job's id.
    pub job: String,
    /// Rounds in which the job ran.
    pub rounds_run: u64,
    /// Sum over rounds of sigma_realized (0 for idle rounds and for jobs with F_j = 0).
    pub sigma_sum: f64,
    /// Whether F_j = 0.
    pub no_bound: bool,
}

/// One round of a [`RunTally`]: what a reader needs to see where a run lost objective or
/// relaxed (the totals of [`RunSummary`] average these away).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RoundRecord {
    /// The round's number ([`RoundPlan::round`]).
    pub round: u64,
    /// Its objective (sum of v of the chosen options).
    pub objective: f64,
    /// Jobs forced by their true deficits (m_j > 0 and F_j > 0), relaxed ones included.
    pub forced: u64,
    /// Forced jobs whose forcing was dropped.
    pub relaxed: u64,
    /// Jobs that ran.
    pub running: u64,
    /// Solver calls.
    pub solves: u64,
    /// Whether a solve of the round came from a fallback solver ([`RoundPlan::fallback_solves`]
    /// > 0: any solve of the round, the count problem's included).
    pub fallback: bool,
    /// Whether a limit stopped a solve of the round with a solution not proven optimal
    /// ([`RoundPlan::feasible_solves`] > 0; false in a state file written before it was kept).
    #[serde(default)]
    pub feasible: bool,
}

impl RunTally {
    /// An empty tally for the scheduler's current jobs. Errors are those of building the round's
    /// instance (a defect: every job was checked on arrival).
    pub fn new(scheduler: &RoundScheduler) -> Result<RunTally, RoundError> {
        // F_j depends only on the job set and the cluster, which the run does not change.
        let start = RoundProblem::new(&scheduler.instance(&scheduler.deficits)?);
        Ok(RunTally {
            rounds: 0,
            relaxed_rounds: 0,
            objective_sum: 0.0,
            migrations: 0,
            slowdown_sum: 0.0,
            conflicts: 0,
            solves: 0,
            fallback_rounds: 0,
            feasible_rounds: 0,
            jobs: scheduler
                .jobs
                .iter()
                .zip(&start.jobs)
                .map(|(job, r)| JobTally {
                    job: job.id().to_string(),
                    rounds_run: 0,
                    sigma_sum: 0.0,
                    no_bound: r.fair_rate <= 0.0,
                })
                .collect(),
            per_round: Vec::new(),
        })
    }

    /// Records one round: its plan and the service [`RoundScheduler::report`] returned for it
    /// (both in job order, the job set unchanged since [`RunTally::new`]).
    pub fn record(&mut self, plan: &RoundPlan, service: &[Service]) {
        // Counts saturate rather than wrap (a state file's are checked when it is read).
        self.rounds = self.rounds.saturating_add(1);
        self.relaxed_rounds += u64::from(!plan.relaxed.is_empty());
        self.objective_sum += plan.objective;
        self.migrations = self
            .migrations
            .saturating_add(plan.placement.migrations as u64);
        self.slowdown_sum += plan.placement.slowdown;
        self.conflicts = self
            .conflicts
            .saturating_add(plan.placement.conflicts as u64);
        self.solves = self.solves.saturating_add(plan.solves as u64);
        self.fallback_rounds += u64::from(plan.fallback_solves > 0);
        self.feasible_rounds += u64::from(plan.feasible_solves > 0);
        for (t, p) in self.jobs.iter_mut().zip(&plan.jobs) {
            t.rounds_run += u64::from(p.run.is_some());
        }
        for (t, s) in self.jobs.iter_mut().zip(service) {
            // At most the largest finite float: a sigma can be infinite (`credit_bound`), and
            // the tally is written to state files as JSON, which has no infinity.
            t.sigma_sum = (t.sigma_sum + s.sigma.unwrap_or(0.0)).min(f64::MAX);
        }
        let count =
            |f: &dyn Fn(&PlannedJob) -> bool| plan.jobs.iter().filter(|j| f(j)).count() as u64;
        self.per_round.push(RoundRecord {
            round: plan.round,
            objective: plan.objective,
            forced: count(&|j| j.forced || j.relaxed),
            relaxed: plan.relaxed.len() as u64,
            running: count(&|j| j.run.is_some()),
            solves: plan.solves as u64,
            fallback: plan.fallback_solves > 0,
            feasible: plan.feasible_solves > 0,
        });
    }

    /// The summary of the rounds recorded, with the scheduler's current deficits as the final
    /// ones (jobs matched by position).
    pub fn summary(&self, scheduler: &RoundScheduler) -> RunSummary {
        let r = self.rounds.max(1) as f64;
        let jobs = self
            .jobs
            .iter()
            .zip(scheduler.jobs())
            .map(|(t, (_, d))| JobRecord {
                job: t.job.clone(),
                rounds_run: t.rounds_run,
                mean_sigma: (!t.no_bound).then(|| t.sigma_sum / r),
                final_deficit: d,
                no_bound: t.no_bound,
            })
            .collect();
        RunSummary {
            rounds: self.rounds,
            relaxed_rounds: self.relaxed_rounds,
            mean_objective: self.objective_sum / r,
            migrations: self.migrations,
            mean_slowdown: self.slowdown_sum / r,
            conflicts: self.conflicts,
            solves: self.solves,
            fallback_rounds: self.fallback_rounds,
            feasible_rounds: self.feasible_rounds,
            jobs,
            per_round: self.per_round.clone(),
        }
    }
}

/// Runs `rounds` rounds with the scheduler's current jobs, every job realizing exactly its
/// planned throughput, and returns per-round and per-job statistics; `on_round` sees every plan
/// (for progress display). The jobs must not change during the run (they cannot: the scheduler
/// is borrowed). Errors are those of [`RoundScheduler::plan`]. A run that must survive restarts
/// drives the same loop itself with a [`RunTally`] (as `stsfair rounds --state` does).
pub fn run_rounds(
    scheduler: &mut RoundScheduler,
    rounds: u64,
    mut on_round: impl FnMut(&RoundPlan),
) -> Result<RunSummary, RoundError> {
    let mut tally = RunTally::new(scheduler)?;
    for _ in 0..rounds {
        let plan = scheduler.plan()?;
        let service = scheduler.report_planned(&plan)?;
        tally.record(&plan, &service);
        on_round(&plan);
    }
    Ok(tally.summary(scheduler))
}

/// The deficit update of MODEL.md section 3: max(-B_j, D + lambda - sigma), evaluated left to
/// right; `credit` is the job's credit bound B_j ([`credit_bound`]).
pub fn update_deficit(deficit: f64, lambda: f64, credit: f64, sigma: f64) -> f64 {
    (deficit + lambda - sigma).max(-credit)
}

/// A job's credit bound of MODEL.md section 3: B_j = max(B, sigma_hat - lambda), where
/// `best_sigma` (sigma_hat_j) is the largest sigma among the job's options in the planned round.
/// A job whose smallest useful run gives many rounds' worth of its equal share (a distributed
/// job on whole GPUs in a crowded cluster) keeps that run's over-service as credit, so it is not
/// forced again before its share says; docs/rounds.md gives the guarantee that remains.
///
/// At most the largest finite float: a sigma can overflow to infinity (a job whose equal-share
/// rate underflows beside a finite throughput, with times or weights 1e300 apart), and an
/// infinite bound would give the job a deficit of minus infinity, which no instance holds. With
/// the bound at `f64::MAX` such a job is never forced again, as an infinite credit says.
pub fn credit_bound(credit: f64, lambda: f64, best_sigma: f64) -> f64 {
    credit.max(best_sigma - lambda).min(f64::MAX)
}

/// B_j of a job of the round problem: B for a job with no option or with F_j = 0.
fn job_credit(fairness: Fairness, job: &crate::formulation::RoundJob) -> f64 {
    if job.fair_rate > 0.0 && job.max_throughput > 0.0 {
        // sigma is theta / F_j for every option, so the largest sigma is theta_max / F_j.
        credit_bound(
            fairness.credit,
            fairness.lambda,
            job.max_throughput / job.fair_rate,
        )
    } else {
        fairness.credit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::{BruteForce, DenseDp};

    #[test]
    fn update_rule_by_hand() {
        // 0.5 + 1 - 0.25 = 1.25; credit clamp: 0 + 1 - 3 = -2 -> -1.
        assert_eq!(update_deficit(0.5, 1.0, 1.0, 0.25), 1.25);
        assert_eq!(update_deficit(0.0, 1.0, 1.0, 3.0), -1.0);
        assert_eq!(update_deficit(0.0, 0.5, 0.0, 0.75), 0.0);
        // B_j: a run worth sigma 40 keeps 39 rounds of credit; a small one keeps B.
        assert_eq!(credit_bound(1.0, 1.0, 40.0), 39.0);
        assert_eq!(credit_bound(1.0, 1.0, 1.5), 1.0);
        // An infinite sigma leaves a finite credit, and so a finite deficit.
        assert_eq!(credit_bound(1.0, 1.0, f64::INFINITY), f64::MAX);
        assert_eq!(
            update_deficit(
                0.0,
                1.0,
                credit_bound(1.0, 1.0, f64::INFINITY),
                f64::INFINITY
            ),
            -f64::MAX
        );
        assert_eq!(
            update_deficit(0.0, 1.0, credit_bound(1.0, 1.0, 40.0), 40.0),
            -39.0
        );
    }

    /// One GPU of 4 units, three jobs that each want it whole; Delta = 0 forces every job with a
    /// positive D_j + lambda, so at most one of three forced jobs fits.
    fn crowded() -> Instance {
        Instance::builder()
            .fairness(Fairness {
                lambda: 1.0,
                max_debt: 0.0,
                credit: 1.0,
            })
            .gpu_type("g", 1, 4, &[4])
            .job(JobSpec::new("a").time("g", 4, 1.0).deficit(0.0))
            .job(JobSpec::new("b").time("g", 4, 1.0).deficit(2.0))
            .job(JobSpec::new("c").time("g", 4, 1.0).deficit(2.0))
            .build()
            .unwrap()
    }

    #[test]
    fn relaxation_keeps_the_most_behind_among_equals() {
        let mut s = RoundScheduler::new(&crowded(), Box::new(DenseDp::default()));
        let plan = s.plan().unwrap();
        // m = 1, 3, 3 and only one job fits: one kept, three solves (infeasible, count, final).
        // The three have the same options, so the place goes to the most behind, b (m = 3,
        // first in job order); c (m = 3) and a (m = 1) are relaxed, in that order.
        assert_eq!(plan.relaxed, vec!["c".to_string(), "a".to_string()]);
        assert_eq!(plan.solves, 3);
        assert!(plan.jobs[1].forced && !plan.jobs[1].relaxed);
        assert_eq!(plan.jobs[1].run, Some((0, 4)));
        crate::verify(&plan.instance, &plan.solution).unwrap();
    }

    /// One GPU of 4 units with slots 2 and 4. a is far behind (m_a = 4) and only a whole GPU
    /// gives it sigma >= 4; b and c (m = 1) are served by a half. The longest feasible prefix by
    /// m would keep a alone; the rule keeps b and c, the most forced jobs that fit.
    #[test]
    fn relaxation_keeps_the_most_forced_jobs() {
        let inst = Instance::builder()
            .fairness(Fairness {
                lambda: 1.0,
                max_debt: 0.0,
                credit: 1.0,
            })
            .gpu_type("g", 1, 4, &[2, 4])
            .job(
                JobSpec::new("a")
                    .time("g", 4, 1.0)
                    .time("g", 2, 2.0)
                    .deficit(3.0),
            )
            .job(JobSpec::new("b").time("g", 4, 1.0).time("g", 2, 1.0))
            .job(JobSpec::new("c").time("g", 4, 1.0).time("g", 2, 1.0))
            .build()
            .unwrap();
        // F = 1/3 it/s each. a: whole GPU sigma 3 < m_a = 4: it cannot catch up, its admissible
        // option is the whole GPU (largest sigma). b, c: half GPU sigma 3 >= m = 1.
        let mut s = RoundScheduler::new(&inst, Box::new(BruteForce::default()));
        let plan = s.plan().unwrap();
        assert_eq!(plan.relaxed, vec!["a".to_string()]);
        assert_eq!(plan.jobs[1].run, Some((0, 2)));
        assert_eq!(plan.jobs[2].run, Some((0, 2)));
        assert_eq!(plan.jobs[0].run, None);
        crate::verify(&plan.instance, &plan.solution).unwrap();
    }

    /// Refuses every problem as too large, as the DP does past its state limits.
    struct Refuses;

    impl Solver for Refuses {
        fn name(&self) -> &'static str {
            "refuses"
        }

        fn solve_problem(&self, _: &RoundProblem) -> Result<Solution, SolveError> {
            Err(SolveError::TooLarge {
                solver: "refuses",
                what: "states",
                needed: 2,
                limit: 1,
                hint: "none",
            })
        }
    }

    /// Refuses its second call as too large and answers the others with the dense DP: in a
    /// relaxed round that is the count problem (the solves are the infeasible round, the count
    /// problem, the final round).
    #[derive(Default)]
    struct RefusesSecond {
        calls: std::sync::atomic::AtomicUsize,
    }

    impl Solver for RefusesSecond {
        fn name(&self) -> &'static str {
            "refuses-second"
        }

        fn solve_problem(&self, problem: &RoundProblem) -> Result<Solution, SolveError> {
            let call = self
                .calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if call == 1 {
                Refuses.solve_problem(problem)
            } else {
                DenseDp::default().solve_problem(problem)
            }
        }
    }

    /// A round whose plan the first solver made but whose count problem the fallback solved is a
    /// fallback round too.
    #[test]
    fn a_count_problem_that_falls_back_makes_a_fallback_round() {
        let fallback = crate::solvers::Fallback {
            first: Box::new(RefusesSecond::default()),
            then: Box::new(DenseDp::default()),
            fallbacks: Default::default(),
        };
        let mut s = RoundScheduler::new(&crowded(), Box::new(fallback));
        let summary = run_rounds(&mut s, 1, |plan| {
            assert_eq!(plan.solves, 3);
            assert_eq!(plan.fallback_solves, 1);
            assert_eq!(plan.solution.stats.fallback_from, None);
        })
        .unwrap();
        assert_eq!(summary.fallback_rounds, 1);
        assert!(summary.per_round[0].fallback);
        let mut direct = RoundScheduler::new(&crowded(), Box::new(DenseDp::default()));
        assert_eq!(direct.plan().unwrap().fallback_solves, 0);
    }

    #[test]
    fn run_summary_counts_the_rounds_a_fallback_solved() {
        let fallback = crate::solvers::Fallback {
            first: Box::new(Refuses),
            then: Box::new(DenseDp::default()),
            fallbacks: Default::default(),
        };
        let count = fallback.fallbacks.clone();
        let mut s = RoundScheduler::new(&crowded(), Box::new(fallback));
        let summary = run_rounds(&mut s, 3, |_| {}).unwrap();
        // Each round relaxes two of the three jobs before one fits: several solves a round,
        // every one through the fallback; the final plan of every round came from it.
        assert_eq!(summary.fallback_rounds, 3);
        assert_eq!(
            count.load(std::sync::atomic::Ordering::Relaxed),
            summary.solves
        );
        assert!(summary.solves > 3);
        let mut direct = RoundScheduler::new(&crowded(), Box::new(DenseDp::default()));
        let plain = run_rounds(&mut direct, 3, |_| {}).unwrap();
        assert_eq!(plain.fallback_rounds, 0);
        assert_eq!(plain.mean_objective, summary.mean_objective);
    }

    #[test]
    fn jobs_without_a_fairness_bound_keep_their_deficit() {
        // b has no whole-GPU time: F_b = 0.
        let inst = Instance::builder()
            .gpu_type("g", 1, 4, &[2, 4])
            .job(JobSpec::new("a").time("g", 4, 1.0))
            .job(JobSpec::new("b").time("g", 2, 1.0).deficit(0.5))
            .build()
            .unwrap();
        let mut s = RoundScheduler::new(&inst, Box::new(BruteForce::default()));
        let plan = s.plan().unwrap();
        let service = s.report_planned(&plan).unwrap();
        assert_eq!(service[1].sigma, None);
        assert_eq!(s.deficit("b"), Some(0.5));
    }

    #[test]
    fn reports_are_checked_before_anything_changes() {
        let mut s = RoundScheduler::new(&crowded(), Box::new(DenseDp::default()));
        assert!(matches!(s.report(&[]), Err(RoundError::NoPlan)));
        s.plan().unwrap();
        s.add_job(JobSpec::new("late").time("g", 4, 1.0)).unwrap();
        let e = s.report(&[("b", 1.0), ("late", 1.0)]).unwrap_err();
        assert!(matches!(e, RoundError::NotInRound { .. }), "{e}");
        let e = s.report(&[("b", -1.0)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "job \"b\": realized throughput must be finite and >= 0 (got -1)"
        );
        assert!(matches!(
            s.report(&[("b", 1.0), ("b", 1.0)]),
            Err(RoundError::DuplicateReport { .. })
        ));
        assert!(matches!(
            s.report(&[("zz", 1.0)]),
            Err(RoundError::UnknownJob { .. })
        ));
        assert_eq!(s.deficit("b"), Some(2.0));
        assert_eq!(s.round(), 0);
    }

    #[test]
    fn set_weight_changes_shares_and_values_and_is_validated() {
        let mut s = RoundScheduler::new(&crowded(), Box::new(DenseDp::default()));
        s.set_weight("a", 3.0).unwrap();
        let plan = s.plan().unwrap();
        // phi_a = 3/5 of one GPU at 1 it/s.
        assert!((plan.jobs[0].fair_rate - 0.6).abs() < 1e-12);
        assert_eq!(s.jobs().next().unwrap().0.weight(), 3.0);
        let e = s.set_weight("a", 0.0).unwrap_err();
        assert!(e.to_string().contains("jobs[0].weight"), "{e}");
        assert!(matches!(
            s.set_weight("zz", 1.0),
            Err(RoundError::UnknownJob { .. })
        ));
        assert_eq!(s.jobs().next().unwrap().0.weight(), 3.0);
    }

    #[test]
    fn invalid_jobs_name_the_field() {
        let mut s = RoundScheduler::new(&crowded(), Box::new(DenseDp::default()));
        let e = s.add_job(JobSpec::new("x").time("g", 4, -1.0)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "new job: jobs[0].times[0].sec_per_iter must be finite and > 0 (got -1)"
        );
        assert!(matches!(
            s.add_job(JobSpec::new("a").time("g", 4, 1.0)),
            Err(RoundError::DuplicateJob { .. })
        ));
        let e = s.update_times("a", &[("h", 4, 1.0)]).unwrap_err();
        assert!(
            e.to_string()
                .contains("jobs[0].times[0].gpu must name one of gpu_types"),
            "{e}"
        );
    }
}
