//! The time loop shared by every policy: rounds, steps, completions, arrivals.
//!
//! The loop follows Gavel's `Scheduler.simulate` (stanford-futuredata/gavel,
//! `scheduler/scheduler.py`) so that a Gavel policy run here meets the same events at the same
//! simulated times as in Gavel's simulator. Per round it costs O(P + A), P placements and A
//! active jobs, plus whatever the policy spends in [`Scheduler::plan`].

use stsfair::instance::MAX_COUNT;

use super::{Cluster, JobOutcome, SimConfig, SimError, SimJob, SimResult, ThroughputTable};

/// What a policy sees when it decides.
#[derive(Debug, Clone, Copy)]
pub struct SimState<'a> {
    /// Simulated time, seconds.
    pub now: f64,
    /// Throughputs.
    pub table: &'a ThroughputTable,
    /// The cluster.
    pub cluster: &'a Cluster,
    /// All jobs of the run, by index (= Gavel's job id).
    pub jobs: &'a [SimJob],
    /// Steps each job has run so far.
    pub steps_done: &'a [f64],
    /// Jobs that arrived and are not finished, in arrival order.
    pub active: &'a [usize],
    /// Round length, seconds.
    pub round_seconds: f64,
    /// Nothing ran in the round that just ended and no arrival is pending: a policy that keeps
    /// jobs waiting for a timer (Gavel's reset period) must act now or never.
    pub idle: bool,
}

impl SimState<'_> {
    /// Steps job `id` has left.
    pub fn remaining(&self, id: usize) -> f64 {
        (self.jobs[id].total_steps - self.steps_done[id]).max(0.0)
    }

    /// Best solo throughput of job `id` over the cluster's types that can hold it (0 if none):
    /// the speed the run's `work` metric and `alone_h` measure against.
    pub fn best_solo(&self, id: usize) -> f64 {
        best_solo(self.table, self.cluster, &self.jobs[id])
    }

    /// Solo throughput of job `id` on cluster type `k`.
    pub fn solo(&self, id: usize, k: usize) -> f64 {
        self.table
            .solo(self.cluster.types[k].worker, self.jobs[id].job_type)
    }

    /// Throughputs of jobs `a` and `b` co-located on cluster type `k` (0, 0 when they cannot be).
    pub fn pair(&self, a: usize, b: usize, k: usize) -> (f64, f64) {
        let (ja, jb) = (&self.jobs[a], &self.jobs[b]);
        if ja.scale_factor != jb.scale_factor {
            return (0.0, 0.0);
        }
        self.table
            .pair(self.cluster.types[k].worker, ja.job_type, jb.job_type)
    }
}

/// Best solo throughput of `job` over the types of `cluster` that can hold it (0 if none).
fn best_solo(table: &ThroughputTable, cluster: &Cluster, job: &SimJob) -> f64 {
    cluster
        .types
        .iter()
        .filter(|t| t.count >= job.scale_factor)
        .map(|t| table.solo(t.worker, job.job_type))
        .fold(0.0, f64::max)
}

/// Rounds in a row without a completed step, once no job will arrive, after which a run stops
/// with [`SimError::NoProgress`]. A round lasts until its slowest placement's last whole step,
/// so such a round ends where it began and the clock stands still (a deterministic policy then
/// plans the same round again); 1,000 of them is far more than any rotation of time-shared
/// jobs needs to reach one that can step.
pub const NO_PROGRESS_ROUNDS: u64 = 1_000;

/// The longest a job may take alone on its fastest GPU type of the cluster, in seconds (about
/// 3.2 years); [`Simulation::new`] refuses a job that would take longer
/// ([`SimError::TooLong`]). The run advances a job round by round, so its wall time grows with
/// the job's length: a trace line of 10^15 steps would have run for days (10^9 steps of
/// ResNet-18, 4.2e7 s alone, took sts 2.9 s). At the default 360 s rounds the limit is 278,000
/// rounds of one job alone. Gavel's generator draws at most 6e5 s (10^4 minutes) on the
/// reference GPU type, and no job type of the bundled throughputs is more than 15 times slower
/// on one type than on another, so no generated workload comes within 10 times of it.
pub const MAX_ALONE_SECONDS: f64 = 1e8;

/// One group of a round: jobs sharing the same GPUs of one type (named apart from the core's
/// [`stsfair::Placement`], which lists a round's slots on the GPUs of the cluster).
#[derive(Debug, Clone, PartialEq)]
pub struct GpuGroup {
    /// The jobs (one, or several sharing the GPUs).
    pub jobs: Vec<usize>,
    /// Cluster type index.
    pub gpu_type: usize,
    /// GPU indices within the type (as many as the jobs' scale factor).
    pub gpus: Vec<u32>,
    /// Fraction of each listed GPU this placement occupies (1 for whole GPUs, a slot's share of
    /// the units under spatial sharing). The fractions of one GPU sum to at most 1.
    pub fraction: f64,
    /// Steps/s of each job in this placement (its co-located throughput when it shares); 0 for a
    /// job that cannot run so, which then makes no progress this round.
    pub throughputs: Vec<f64>,
}

/// What one placement did in a round.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The placement.
    pub placement: GpuGroup,
    /// Steps each of its jobs ran.
    pub steps: Vec<f64>,
    /// When the last of its jobs stopped, seconds.
    pub finish: f64,
}

/// A round that ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundReport {
    /// When the round started.
    pub start: f64,
    /// When it ended (the latest finish of its runs).
    pub end: f64,
    /// Its runs.
    pub runs: Vec<Run>,
}

/// Reported after each round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Simulated time, seconds.
    pub now: f64,
    /// Window jobs finished.
    pub finished: usize,
    /// Window jobs in all.
    pub window_jobs: usize,
    /// Rounds so far.
    pub rounds: u64,
}

/// A scheduling policy driven by the simulator. Calls come in Gavel's order at each round
/// boundary: [`round_finished`](Scheduler::round_finished) (the jobs that just completed are still
/// active), [`job_finished`](Scheduler::job_finished) for each completed job,
/// [`job_arrived`](Scheduler::job_arrived) for each arrival, then [`plan`](Scheduler::plan).
pub trait Scheduler {
    /// The policy's name.
    fn name(&self) -> String;
    /// Job `id` arrived (it is in `state.active`).
    fn job_arrived(&mut self, id: usize, state: &SimState<'_>) -> Result<(), SimError>;
    /// Job `id` finished (it is no longer in `state.active`).
    fn job_finished(&mut self, id: usize, state: &SimState<'_>);
    /// The round described by `report` ended; `state.steps_done` already counts its steps.
    fn round_finished(&mut self, report: &RoundReport, state: &SimState<'_>);
    /// The placements of the next round.
    fn plan(&mut self, state: &SimState<'_>) -> Result<Vec<GpuGroup>, SimError>;
    /// Seconds spent in solvers so far.
    fn solver_seconds(&self) -> f64;
    /// Share of placements that kept their GPUs from the previous round (0 when not tracked).
    fn lease_extension_share(&self) -> f64 {
        0.0
    }
    /// Solver calls answered by a fallback solver because the configured one refused the
    /// problem as too large (0 for policies without one).
    fn solver_fallbacks(&self) -> u64 {
        0
    }
    /// For policies that plan with predicted throughputs: the mean, over every job-round that
    /// ran, of realized / planned throughput (1 when the plan's promises are kept). `None` for
    /// the others.
    fn realized_over_planned(&self) -> Option<f64> {
        None
    }
}

/// What a run books per job and over the window, round by round (`Simulation::run`).
struct Ledger {
    steps_done: Vec<f64>,
    completion: Vec<Option<f64>>,
    added_at: Vec<Option<f64>>,
    left_at: Vec<Option<f64>>,
    /// Integral of the number of active jobs over each job's active life.
    crowd: Vec<f64>,
    /// Seconds each job held GPUs, per cluster type (`types` a job), and of them in a slot of a
    /// GPU or beside co-runners (JobOutcome::placed_seconds, shared_seconds).
    placed: Vec<f64>,
    shared: Vec<f64>,
    types: usize,
    /// Busy GPU-seconds from the window's first arrival on.
    busy: f64,
    /// Work done over the same rounds as `busy`, in GPU-seconds at each job's best solo speed
    /// (d_j GPUs for a distributed job), so that work / busy says how much of its best speed a
    /// busy GPU delivered: above 1 where sharing gains, below it on slower types.
    work: f64,
}

impl Ledger {
    fn new(jobs: usize, types: usize) -> Ledger {
        Ledger {
            steps_done: vec![0.0; jobs],
            completion: vec![None; jobs],
            added_at: vec![None; jobs],
            left_at: vec![None; jobs],
            crowd: vec![0.0; jobs],
            placed: vec![0.0; jobs * types],
            shared: vec![0.0; jobs],
            types,
            busy: 0.0,
            work: 0.0,
        }
    }
}

/// A prepared simulation.
#[derive(Debug)]
pub struct Simulation<'a> {
    table: &'a ThroughputTable,
    cluster: &'a Cluster,
    jobs: &'a [SimJob],
    config: SimConfig,
    window: (usize, usize),
}

impl<'a> Simulation<'a> {
    /// Checks the inputs: at least one job, arrivals sorted, the window inside the jobs, the
    /// round length positive, and every job able to run on some type of the cluster.
    pub fn new(
        table: &'a ThroughputTable,
        cluster: &'a Cluster,
        jobs: &'a [SimJob],
        config: &SimConfig,
    ) -> Result<Simulation<'a>, SimError> {
        if jobs.is_empty() {
            return Err(SimError::Setting {
                setting: "jobs",
                rule: "must not be empty",
                got: "0".into(),
            });
        }
        // At least a second: a round shorter than the clock's resolution at the simulated time
        // never moves it (1e-300 s looped for ever), and a GPU scheduler's rounds are minutes.
        if !(config.round_seconds.is_finite() && config.round_seconds >= 1.0) {
            return Err(SimError::Setting {
                setting: "round_seconds",
                rule: "must be a finite number of seconds >= 1",
                got: config.round_seconds.to_string(),
            });
        }
        // NaN compared false with every elapsed time: the resets stopped without a word.
        if !(config.reset_seconds.is_finite() && config.reset_seconds >= 0.0) {
            return Err(SimError::Setting {
                setting: "reset_seconds",
                rule: "must be a finite number of seconds >= 0",
                got: config.reset_seconds.to_string(),
            });
        }
        if jobs.windows(2).any(|w| w[1].arrival < w[0].arrival) {
            return Err(SimError::Setting {
                setting: "jobs",
                rule: "must be sorted by arrival",
                got: String::new(),
            });
        }
        let window = config.window.unwrap_or((0, jobs.len() - 1));
        if window.0 > window.1 || window.1 >= jobs.len() {
            return Err(SimError::Setting {
                setting: "window",
                rule: "must lie within the jobs (0-based, inclusive)",
                got: format!("{}-{} of {} jobs", window.0, window.1, jobs.len()),
            });
        }
        // `Cluster::parse` refuses larger counts; a cluster built by hand is checked here, since
        // the run keeps a slot per GPU (a count of 2^32 - 1 would be 32 GB).
        if let Some(t) = cluster
            .types
            .iter()
            .find(|t| u64::from(t.count) > MAX_COUNT)
        {
            return Err(SimError::Cluster {
                text: format!("{}={}", t.name, t.count),
                rule: format!("count of {} must be an integer in [0, {MAX_COUNT}]", t.name),
            });
        }
        for (i, j) in jobs.iter().enumerate() {
            let fastest = cluster
                .types
                .iter()
                .filter(|t| t.count >= j.scale_factor)
                .map(|t| (t, table.solo(t.worker, j.job_type)))
                .filter(|(_, solo)| *solo > 0.0)
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let Some((gpu, solo)) = fastest else {
                let model = table.job_types()[j.job_type].model();
                return Err(SimError::Unrunnable {
                    index: i,
                    model,
                    scale_factor: j.scale_factor,
                });
            };
            let alone = j.total_steps / solo;
            // A throughput so small that the time overflows to infinity is refused too, and so
            // is a NaN of steps a caller wrote into a `SimJob` by hand.
            if alone.is_nan() || alone > MAX_ALONE_SECONDS {
                return Err(SimError::TooLong {
                    index: i,
                    line: i + 1,
                    total_steps: j.total_steps,
                    seconds: alone,
                    gpu: gpu.name.clone(),
                    throughput: solo,
                });
            }
        }
        Ok(Simulation {
            table,
            cluster,
            jobs,
            config: config.clone(),
            window,
        })
    }

    /// Runs the policy until every window job has finished. `wall_seconds` of the result is left
    /// 0 (the caller times the run).
    ///
    /// Each pass of the loop is one round boundary, in Gavel's order: the clock moves to the end
    /// of the running round (or to the next arrival when nothing runs); the round's steps and
    /// completions are booked (`book_round`) and reported to the policy; jobs that
    /// have arrived are added; the policy plans, the plan is checked, and the next round's runs
    /// start (`start_runs`). O(rounds * (jobs + policy)).
    pub fn run(
        &mut self,
        scheduler: &mut dyn Scheduler,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<SimResult, SimError> {
        let n = self.jobs.len();
        let mut book = Ledger::new(n, self.cluster.types.len());
        let best: Vec<f64> = (0..n).map(|j| self.best_throughput(j)).collect();
        let mut active: Vec<usize> = Vec::new();
        let mut next = 0usize;
        let mut now = self.jobs[0].arrival;
        let mut running: Vec<Run> = Vec::new();
        let mut round_start = now;
        let mut rounds = 0u64;
        let window_jobs = self.window.1 - self.window.0 + 1;
        let mut finished_in_window = 0usize;
        let mut window_end = now;
        let mut idle_plans = 0u32;
        let mut stepless_rounds = 0u64;
        let name = scheduler.name();
        let mut scratch = CheckScratch {
            placed: vec![false; n],
            used: self
                .cluster
                .types
                .iter()
                .map(|t| vec![0.0; t.count as usize])
                .collect(),
        };

        while finished_in_window < window_jobs {
            // The clock: the end of the running round, or the next arrival.
            let before = now;
            let ran = !running.is_empty();
            if ran {
                now = running.iter().map(|r| r.finish).fold(round_start, f64::max);
            } else if next < n {
                now = now.max(self.jobs[next].arrival);
            }
            let crowd_now = active.len() as f64;
            for &j in &active {
                book.crowd[j] += crowd_now * (now - before);
            }

            // The round that ended: its steps and completions, reported to the policy.
            if ran {
                rounds += 1;
                let mut done = self.book_round(&mut book, &running, round_start, &best);
                let report = RoundReport {
                    start: round_start,
                    end: now,
                    runs: std::mem::take(&mut running),
                };
                let state = self.state(now, &book.steps_done, &active, false);
                scheduler.round_finished(&report, &state);
                done.sort_unstable();
                for &j in &done {
                    book.left_at[j] = Some(now);
                    if (self.window.0..=self.window.1).contains(&j) {
                        finished_in_window += 1;
                        window_end = now;
                    }
                }
                active.retain(|j| book.completion[*j].is_none());
                for &j in &done {
                    let state = self.state(now, &book.steps_done, &active, false);
                    scheduler.job_finished(j, &state);
                }
            }
            if finished_in_window >= window_jobs {
                break;
            }

            // Arrivals up to now.
            while next < n && self.jobs[next].arrival <= now {
                active.push(next);
                book.added_at[next] = Some(now);
                let state = self.state(now, &book.steps_done, &active, false);
                scheduler.job_arrived(next, &state)?;
                next += 1;
            }

            // The next round: planned, checked, started.
            let idle = !ran && next >= n;
            let state = self.state(now, &book.steps_done, &active, idle);
            let placements = scheduler.plan(&state)?;
            self.check(
                &name,
                now,
                &placements,
                (&book.added_at, &book.completion),
                &mut scratch,
            )?;
            if placements.is_empty() && next >= n {
                idle_plans += 1;
                if idle_plans >= 3 {
                    return Err(SimError::Stalled {
                        policy: name,
                        time: now,
                        active: active.len(),
                    });
                }
            } else {
                idle_plans = 0;
            }
            round_start = now;
            let stepped;
            (running, stepped) = self.start_runs(placements, &book.steps_done, now);
            // Placements that complete no step (throughputs below one step a round) leave the
            // state as it was; once nothing will arrive, a long run of such rounds is a run
            // that cannot end (a job measured at 1e-30 steps/s on the type a policy gives it).
            if stepped || next < n {
                stepless_rounds = 0;
            } else {
                stepless_rounds += 1;
                if stepless_rounds >= NO_PROGRESS_ROUNDS {
                    return Err(SimError::NoProgress {
                        policy: name,
                        time: now,
                        rounds: stepless_rounds,
                        active: active.len(),
                    });
                }
            }
            progress(Progress {
                now,
                finished: finished_in_window,
                window_jobs,
                rounds,
            });
        }
        Ok(self.result(scheduler, &book, now, window_end, rounds))
    }

    /// Books the runs of a round that started at `round_start`: each job's steps, the seconds
    /// it held GPUs (alone or sharing), and from the window's first arrival on the busy
    /// GPU-seconds and the work done at `best` speed. Returns the jobs that completed in it.
    /// O(jobs of the round).
    fn book_round(
        &self,
        book: &mut Ledger,
        running: &[Run],
        round_start: f64,
        best: &[f64],
    ) -> Vec<usize> {
        let types = book.types;
        let mut done = Vec::new();
        for r in running {
            // A group holds its GPUs until its last job stops, and its jobs complete then
            // (below), so each of them held them that long.
            let held = r.finish - round_start;
            let sharing = r.placement.jobs.len() > 1 || r.placement.fraction < 1.0;
            for (i, &j) in r.placement.jobs.iter().enumerate() {
                book.placed[j * types + r.placement.gpu_type] += held;
                if sharing {
                    book.shared[j] += held;
                }
                book.steps_done[j] += r.steps[i];
                if book.steps_done[j] >= self.jobs[j].total_steps && book.completion[j].is_none() {
                    book.completion[j] = Some(r.finish);
                    done.push(j);
                }
            }
            if round_start >= book.added_at[self.window.0].unwrap_or(f64::INFINITY) {
                book.busy +=
                    (r.finish - round_start) * r.placement.gpus.len() as f64 * r.placement.fraction;
                for (i, &j) in r.placement.jobs.iter().enumerate() {
                    // Every job of the simulation can run somewhere (checked in `new`), so its
                    // best solo throughput is positive.
                    book.work += r.steps[i] / best[j] * f64::from(self.jobs[j].scale_factor);
                }
            }
        }
        done
    }

    /// The runs of `placements` from `now`: each job runs Gavel's whole steps,
    /// floor(throughput * round), capped by what it has left, and its group finishes when its
    /// last job stops. Also returns whether any job makes a step. O(jobs placed).
    fn start_runs(
        &self,
        placements: Vec<GpuGroup>,
        steps_done: &[f64],
        now: f64,
    ) -> (Vec<Run>, bool) {
        let round = self.config.round_seconds;
        let mut stepped = false;
        let mut running = Vec::with_capacity(placements.len());
        for p in placements {
            let mut steps = Vec::with_capacity(p.jobs.len());
            let mut finish = now;
            for (i, &j) in p.jobs.iter().enumerate() {
                let thr = p.throughputs[i];
                let s = (thr * round)
                    .floor()
                    .min(self.jobs[j].total_steps - steps_done[j])
                    .max(0.0);
                if s > 0.0 {
                    finish = finish.max(now + s / thr);
                    stepped = true;
                }
                steps.push(s);
            }
            running.push(Run {
                placement: p,
                steps,
                finish,
            });
        }
        (running, stepped)
    }

    /// The run's outcome from its ledger, at `now` (the end of the last round) with the
    /// window's last completion at `window_end`.
    fn result(
        &self,
        scheduler: &dyn Scheduler,
        book: &Ledger,
        now: f64,
        window_end: f64,
        rounds: u64,
    ) -> SimResult {
        let n = self.jobs.len();
        let types = book.types;
        let window_start = book.added_at[self.window.0].unwrap_or(self.jobs[self.window.0].arrival);
        let span = (window_end - window_start).max(0.0);
        let gpus = self.cluster.gpus() as f64;
        let outcomes = (0..n)
            .map(|j| {
                let job = &self.jobs[j];
                // The crowd integral runs to the end of the round the job finished in, so it is
                // averaged over the same span.
                let lived = match book.added_at[j] {
                    Some(a) => book.left_at[j].unwrap_or(now) - a,
                    None => 0.0,
                };
                let contention = if lived > 0.0 {
                    (book.crowd[j] / lived).max(1.0)
                } else {
                    1.0
                };
                JobOutcome {
                    arrival: job.arrival,
                    completion: book.completion[j],
                    total_steps: job.total_steps,
                    best_throughput: self.best_throughput(j),
                    fair_rate: self.fair_rate(j, contention),
                    contention,
                    placed_seconds: book.placed[j * types..(j + 1) * types].to_vec(),
                    shared_seconds: book.shared[j],
                }
            })
            .collect();
        SimResult {
            policy: scheduler.name(),
            window: self.window,
            jobs: outcomes,
            window_start,
            window_end,
            rounds,
            solver_seconds: scheduler.solver_seconds(),
            wall_seconds: 0.0,
            utilization: if span > 0.0 && gpus > 0.0 {
                book.busy / (span * gpus)
            } else {
                0.0
            },
            work_per_busy_gpu: if book.busy > 0.0 {
                book.work / book.busy
            } else {
                0.0
            },
            lease_extension_share: scheduler.lease_extension_share(),
            solver_fallbacks: scheduler.solver_fallbacks(),
            realized_over_planned: scheduler.realized_over_planned(),
        }
    }

    fn state<'s>(
        &'s self,
        now: f64,
        steps_done: &'s [f64],
        active: &'s [usize],
        idle: bool,
    ) -> SimState<'s> {
        SimState {
            now,
            table: self.table,
            cluster: self.cluster,
            jobs: self.jobs,
            steps_done,
            active,
            round_seconds: self.config.round_seconds,
            idle,
        }
    }

    /// Best solo throughput of job `j` over the types that can hold it.
    fn best_throughput(&self, j: usize) -> f64 {
        best_solo(self.table, self.cluster, &self.jobs[j])
    }

    /// F_j of MODEL.md section 3 with share 1/contention: x_k = n_k / (contention * sf), capped
    /// so that the fractions sum to at most 1, fastest types first.
    fn fair_rate(&self, j: usize, contention: f64) -> f64 {
        let job = &self.jobs[j];
        let mut rates: Vec<(f64, f64)> = self
            .cluster
            .types
            .iter()
            .map(|t| {
                let x = f64::from(t.count) / (contention * f64::from(job.scale_factor));
                (self.table.solo(t.worker, job.job_type), x)
            })
            .collect();
        rates.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut left = 1.0_f64;
        let mut f = 0.0;
        for (thr, x) in rates {
            let take = x.min(left);
            f += take * thr;
            left -= take;
        }
        f
    }

    /// Rejects placements that break the cluster: unknown or finished jobs, a job placed twice,
    /// a GPU index out of range, GPUs shared beyond their capacity, the wrong number of GPUs,
    /// negative or non-finite throughputs.
    ///
    /// `scratch` holds all-false / all-zero buffers and is left so on return. O(P) for P
    /// placements.
    fn check(
        &self,
        policy: &str,
        now: f64,
        placements: &[GpuGroup],
        ledger: (&[Option<f64>], &[Option<f64>]),
        scratch: &mut CheckScratch,
    ) -> Result<(), SimError> {
        let (added_at, completion) = ledger;
        let CheckScratch { placed, used } = scratch;
        let bad = |reason: String| SimError::InvalidPlacement {
            policy: policy.to_string(),
            time: now,
            reason,
        };
        let result = 'check: {
            for p in placements {
                let Some(t) = self.cluster.types.get(p.gpu_type) else {
                    break 'check Err(bad(format!("gpu type index {} out of range", p.gpu_type)));
                };
                if p.jobs.is_empty() || p.throughputs.len() != p.jobs.len() {
                    break 'check Err(bad("a placement needs one throughput per job".into()));
                }
                if !(p.fraction > 0.0 && p.fraction <= 1.0) {
                    break 'check Err(bad(format!("fraction {} must lie in (0, 1]", p.fraction)));
                }
                for (i, &j) in p.jobs.iter().enumerate() {
                    if j >= self.jobs.len() || completion[j].is_some() || added_at[j].is_none() {
                        break 'check Err(bad(format!("job {j} is not active")));
                    }
                    if std::mem::replace(&mut placed[j], true) {
                        break 'check Err(bad(format!("job {j} placed twice")));
                    }
                    if self.jobs[j].scale_factor as usize != p.gpus.len() {
                        break 'check Err(bad(format!(
                            "job {j} needs {} gpus, placement has {}",
                            self.jobs[j].scale_factor,
                            p.gpus.len()
                        )));
                    }
                    if !(p.throughputs[i].is_finite() && p.throughputs[i] >= 0.0) {
                        break 'check Err(bad(format!(
                            "job {j} has throughput {}",
                            p.throughputs[i]
                        )));
                    }
                }
                for &g in &p.gpus {
                    let Some(u) = used[p.gpu_type].get_mut(g as usize) else {
                        break 'check Err(bad(format!("gpu {g} of {} out of range", t.name)));
                    };
                    *u += p.fraction;
                    if *u > 1.0 + 1e-9 {
                        break 'check Err(bad(format!("gpu {g} of {} over-full", t.name)));
                    }
                }
            }
            Ok(())
        };
        // Reset what the placements touched (also after an early error).
        for p in placements {
            for &j in &p.jobs {
                if let Some(f) = placed.get_mut(j) {
                    *f = false;
                }
            }
            if let Some(u) = used.get_mut(p.gpu_type) {
                for &g in &p.gpus {
                    if let Some(x) = u.get_mut(g as usize) {
                        *x = 0.0;
                    }
                }
            }
        }
        result
    }
}

/// Scratch buffers of [`Simulation::check`]: per job whether it is placed, per type and GPU the
/// fraction used.
#[derive(Debug)]
struct CheckScratch {
    placed: Vec<bool>,
    used: Vec<Vec<f64>>,
}
