//! `sts`: the crate's spatiotemporal-fair round scheduler ([`RoundScheduler`]) as a simulation
//! policy.
//!
//! Each round the active jobs form an STS round problem (MODEL.md): every GPU is cut into `U`
//! units (2 by default: half GPUs, chosen by measurement, docs/results.md) with slots of 1, 2,
//! 4, ... units, and a job's predicted throughput in each slot comes from the Gavel data exactly
//! as `stsfair gen --gavel` derives it ([`slot_throughputs_by`]): the solo throughput for a whole
//! GPU, the median co-located throughput for a half GPU, and for smaller slots the co-runner
//! composition rule that the simulation then realizes ([`PolicyOptions::sts_slot_rule`];
//! docs/costs.md). The round scheduler solves the problem (the solver is configurable: `dp` is
//! exact and fast, `ilp` the HiGHS baseline), relaxes the fairness constraint when the forced
//! jobs cannot all fit, and places the slots on GPUs choosing co-runners by their measured
//! slowdowns. Jobs are weighted by least attained service by default ([`Weights`]).
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
//! When the DP refuses a round problem as too large (its state limit, `SolveError::TooLarge`),
//! that problem goes to the ILP (feature `highs`), which gives the same optimum; the simulation
//! reports how often (`solver_fallbacks`).
//!
//! Per round: one round-problem solve (three when relaxing: the infeasible one, the count problem
//! and the relaxed round), O(n) instance building, and placement.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::super::engine::{GpuGroup, RoundReport, Scheduler, SimState};
use super::super::{Cluster, SimConfig, SimError};
use super::PolicyOptions;
use stsfair::instance::{Fairness, Instance, JobSpec};
use stsfair::rounds::RoundScheduler;
use stsfair::solvers::{Fallback, Solver, SolverConfig, SolverKind};
use stsfair_costs::slots::{SlotRule, slot_throughputs_by};

/// How the sts policy weights jobs. The weight w_j sets a job's fair share phi_j = w_j / (sum of
/// w) and the value of its options (MODEL.md sections 3 and 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Weights {
    /// The trace's priority weights (1 for generated jobs): equal shares, as Gavel's policies.
    Trace,
    /// Least attained service first, as Tiresias (Gu et al., NSDI 2019) orders jobs without
    /// knowing their length: w_j = (trace weight) / (1 + a_j / 1 GPU-hour), with a_j the GPU time
    /// the job has received so far, recomputed every round. Jobs that have run little get larger
    /// shares and count for more; every job keeps the fairness floor of its (smaller) share.
    /// The default, chosen by measurement (docs/results.md, "Saturation and overload"): at 5.6
    /// jobs/h, 2.6 jobs/h with multi-GPU jobs and 8 jobs/h it gave a lower average JCT than
    /// [`Weights::Trace`] on every seed.
    #[default]
    Attained,
}

/// The STS policy.
pub struct Sts {
    solver: SolverKind,
    units: u32,
    fairness: Fairness,
    ladder: Vec<u32>,
    slot_rule: SlotRule,
    weights: Weights,
    /// Whether forced jobs' service is priced by the long-run LP (`PolicyOptions::sts_prices`).
    prices: bool,
    /// GPU-seconds each job has received (slots of `fraction` of a GPU for a round count as
    /// `fraction` of it), for [`Weights::Attained`].
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

/// The name of job `id` in the round scheduler: it carries the job type so that the placement's
/// co-location model can read it back.
fn name(id: usize, job_type: usize) -> String {
    format!("{id}/{job_type}")
}

fn job_type_of(name: &str) -> Option<usize> {
    name.split_once('/').and_then(|(_, t)| t.parse().ok())
}

impl Sts {
    /// An STS policy for `cluster` with the solver, units and fairness parameters of `options`.
    pub fn new(
        _cluster: &Cluster,
        _config: &SimConfig,
        options: &PolicyOptions,
    ) -> Result<Sts, SimError> {
        if options.sts_units == 0 {
            return Err(SimError::Setting {
                setting: "units",
                rule: "must be at least 1",
                got: "0".into(),
            });
        }
        check_fairness(&options.sts_fairness)?;
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
            prices: options.sts_prices,
            attained: HashMap::new(),
            inner: None,
            names: HashMap::new(),
            realized: Vec::new(),
            solver_seconds: 0.0,
            fallbacks: Arc::new(AtomicU64::new(0)),
            kept_promises: (0.0, 0),
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
            let model = move |job: &str, other: &str, gpu: &str| -> f64 {
                let (Some(a), Some(b), Some(&w)) =
                    (job_type_of(job), job_type_of(other), workers.get(gpu))
                else {
                    return 0.0;
                };
                let solo = table.solo(w, a);
                let (own, _) = table.pair(w, a, b);
                if own <= 0.0 || solo <= 0.0 {
                    f64::INFINITY
                } else {
                    (1.0 - own / solo).max(0.0)
                }
            };
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

impl Scheduler for Sts {
    fn name(&self) -> String {
        "sts".to_string()
    }

    fn job_arrived(&mut self, id: usize, state: &SimState<'_>) -> Result<(), SimError> {
        let job = &state.jobs[id];
        let label = name(id, job.job_type);
        let mut spec = JobSpec::new(label.clone())
            .weight(job.weight)
            .workers(u64::from(job.scale_factor));
        let model = state
            .table
            .model()
            .ok_or_else(|| Sts::error("the throughput table has no co-location model"))?;
        for t in &state.cluster.types {
            for (slot, thr) in slot_throughputs_by(
                self.slot_rule,
                model,
                t.worker,
                job.job_type,
                self.units,
                &self.ladder,
            ) {
                if thr > 0.0 {
                    spec = spec.time(&t.name, u64::from(slot), 1.0 / thr);
                }
            }
        }
        self.inner(state)?.add_job(spec).map_err(Sts::error)?;
        self.names.insert(id, label);
        Ok(())
    }

    fn job_finished(&mut self, id: usize, _state: &SimState<'_>) {
        self.attained.remove(&id);
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
        if self.weights == Weights::Attained {
            let weights: Vec<(String, f64)> = state
                .active
                .iter()
                .filter_map(|&id| {
                    let label = self.names.get(&id)?;
                    let got = self.attained.get(&id).copied().unwrap_or(0.0);
                    Some((label.clone(), state.jobs[id].weight / (1.0 + got / 3600.0)))
                })
                .collect();
            let inner = self.inner(state)?;
            for (label, w) in weights {
                inner.set_weight(&label, w).map_err(Sts::error)?;
            }
        }
        let start = Instant::now();
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
            if planned.throughput > 0.0 {
                self.kept_promises.0 += realized / planned.throughput;
                self.kept_promises.1 += 1;
            }
            *self.attained.entry(id).or_default() +=
                gpus.len() as f64 * f64::from(slot) / f64::from(self.units) * state.round_seconds;
            self.realized.push((planned.id.clone(), realized));
            placements.push(GpuGroup {
                jobs: vec![id],
                gpu_type: k,
                gpus: gpus.iter().map(|&(_, g)| g).collect(),
                fraction: f64::from(slot) / f64::from(self.units),
                throughputs: vec![realized],
            });
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
