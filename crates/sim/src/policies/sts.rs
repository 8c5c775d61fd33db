//! `sts`: the library's round policy ([`StsPolicy`], `stsfair::policy`) as a simulation policy,
//! driven through its public API only.
//!
//! The simulator feeds it the trace's arrivals, the completions and each realized round, and runs
//! its plans. The policy plans with the run's throughput table ([`TableData`]: Gavel's measured
//! solo and pair throughputs, the slot times of [`slot_throughputs_by`] under the run's
//! [`SlotRule`]), and the simulation realizes each plan with the same table
//! ([`StsPolicy::composed`]: alone, a job gets its solo throughput; beside one job, the measured
//! pair; beside several, the product of the pairwise slowdowns). A planned job whose realized
//! throughput is 0 (a pair measured as impossible) does not run that round. The rules, their
//! defaults and their measurements are documented in `stsfair::policy::sts`.

use std::sync::Arc;

use super::super::engine::{GpuGroup, RoundReport, Scheduler, SimState};
use super::super::throughputs::WorkerView;
use super::super::{Cluster, SimConfig, SimError, ThroughputTable};
use super::PolicyOptions;
use stsfair::policy::data::typical_slot_throughputs;
use stsfair::policy::{PolicyError, Realized, StsJob, StsOptions, StsPolicy, Throughputs};
use stsfair_costs::slots::{SlotRule, slot_throughputs_by};

/// The run's throughput table as the policy's co-location data, GPU types in the cluster's
/// order.
#[derive(Debug)]
pub struct TableData {
    table: ThroughputTable,
    /// Cluster type index -> worker type index of the table.
    workers: Vec<usize>,
    rule: SlotRule,
}

impl TableData {
    /// `table` on `cluster`'s types, with small slots priced by `rule`.
    pub fn new(table: &ThroughputTable, cluster: &Cluster, rule: SlotRule) -> TableData {
        TableData {
            table: table.clone(),
            workers: cluster.types.iter().map(|t| t.worker).collect(),
            rule,
        }
    }
}

impl TableData {
    /// The table on the cluster's types.
    fn view(&self) -> WorkerView<'_> {
        WorkerView {
            table: &self.table,
            workers: &self.workers,
        }
    }
}

impl Throughputs for TableData {
    fn job_types(&self) -> usize {
        self.view().job_types()
    }
    fn workers(&self, job_type: usize) -> u32 {
        self.view().workers(job_type)
    }
    fn solo(&self, gpu_type: usize, job_type: usize) -> f64 {
        self.view().solo(gpu_type, job_type)
    }
    fn pair(&self, gpu_type: usize, a: usize, b: usize) -> (f64, f64) {
        self.view().pair(gpu_type, a, b)
    }
    /// The slot times `stsfair gen --gavel` derives: [`slot_throughputs_by`] with the table's
    /// co-location model (measured pairs, and predicted ones where the table has gaps).
    fn slot_throughputs(
        &self,
        gpu_type: usize,
        job: usize,
        units: u32,
        ladder: &[u32],
    ) -> Vec<(u32, f64)> {
        match (self.table.model(), self.workers.get(gpu_type)) {
            (Some(model), Some(&w)) => slot_throughputs_by(self.rule, model, w, job, units, ladder),
            _ => typical_slot_throughputs(self, gpu_type, job, units, ladder),
        }
    }
}

/// The `sts` simulation policy: a [`StsPolicy`], created at the first arrival (it needs the
/// run's table).
#[derive(Debug)]
pub struct Sts {
    options: StsOptions,
    slot_rule: SlotRule,
    policy: Option<StsPolicy>,
}

/// A policy error as the simulator reports it: a setting by the simulator's name for it
/// (`--sts-crowding` for `crowding`), anything else as the policy's failure.
pub fn sim_error(e: PolicyError) -> SimError {
    match e {
        PolicyError::Setting { setting, rule, got } => SimError::Setting {
            setting: match setting {
                "size_exponent" => "sts_size_exponent",
                "pairing" => "sts_pairing",
                "pairing_by_type" => "sts_pairing_types",
                "second_stage" => "sts_second_stage",
                "crowding" => "sts_crowding",
                "promotion" => "sts_promotion",
                "critical" => "sts_critical",
                "critical_after" => "sts_critical_after",
                other => other,
            },
            rule,
            got,
        },
        PolicyError::Fairness { source } => SimError::Fairness { source },
        source => SimError::Policy { source },
    }
}

/// Checks the `sts` options of `options` before a run ([`StsOptions::check`]).
///
/// # Errors
///
/// The first setting out of range, as [`SimError::Setting`] with the simulator's name for it
/// (`sts_crowding` for `crowding`).
pub fn check(options: &PolicyOptions) -> Result<(), SimError> {
    options.sts.check().map_err(sim_error)
}

impl Sts {
    /// The policy with `options.sts`, its small slots priced by `options.slot_rule`.
    ///
    /// # Errors
    ///
    /// A setting out of range ([`check`]).
    pub fn new(
        _cluster: &Cluster,
        _config: &SimConfig,
        options: &PolicyOptions,
    ) -> Result<Sts, SimError> {
        check(options)?;
        Ok(Sts {
            options: options.sts.clone(),
            slot_rule: options.slot_rule,
            policy: None,
        })
    }

    fn policy(&mut self, state: &SimState<'_>) -> Result<&mut StsPolicy, SimError> {
        if self.policy.is_none() {
            let data = TableData::new(state.table, state.cluster, self.slot_rule);
            let cluster: Vec<(&str, u32)> = state
                .cluster
                .types
                .iter()
                .map(|t| (t.name.as_str(), t.count))
                .collect();
            let policy = StsPolicy::new(&cluster, Arc::new(data), self.options.clone())
                .map_err(sim_error)?;
            self.policy = Some(policy);
        }
        self.policy
            .as_mut()
            .ok_or_else(|| sim_error(PolicyError::UnknownJob { job: 0 }))
    }
}

impl Scheduler for Sts {
    fn name(&self) -> String {
        "sts".to_string()
    }

    fn job_arrived(&mut self, id: usize, state: &SimState<'_>) -> Result<(), SimError> {
        let job = &state.jobs[id];
        let spec = StsJob::new(id as u64, job.job_type, job.arrival)
            .with_weight(job.weight)
            .with_steps(job.total_steps);
        self.policy(state)?
            .job_arrived(state.now, spec)
            .map_err(sim_error)
    }

    fn job_finished(&mut self, id: usize, _state: &SimState<'_>) {
        if let Some(policy) = self.policy.as_mut() {
            // The job is active in the policy: removal cannot fail.
            let _ = policy.job_finished(id as u64);
        }
    }

    fn round_finished(&mut self, report: &RoundReport, state: &SimState<'_>) {
        let realized: Vec<Realized> = report
            .runs
            .iter()
            .flat_map(|r| {
                r.placement.jobs.iter().enumerate().map(|(i, &j)| Realized {
                    job: j as u64,
                    throughput: r.placement.throughputs[i],
                    steps: r.steps[i],
                })
            })
            .collect();
        if let Some(policy) = self.policy.as_mut() {
            // Every reported job was in the plan and is still active: the report is valid.
            let _ = policy.round_realized(state.round_seconds, &realized);
        }
    }

    fn plan(&mut self, state: &SimState<'_>) -> Result<Vec<GpuGroup>, SimError> {
        if state.active.is_empty() {
            return Ok(Vec::new());
        }
        let policy = self.policy(state)?;
        let plan = policy.plan(state.now).map_err(sim_error)?;
        let realized = policy.composed(&plan);
        Ok(plan
            .runs
            .into_iter()
            .zip(realized)
            .filter(|(_, thr)| thr.is_finite() && *thr > 0.0)
            .map(|(run, thr)| GpuGroup {
                jobs: vec![run.job as usize],
                gpu_type: run.gpu_type,
                gpus: run.gpus,
                fraction: run.fraction,
                throughputs: vec![thr],
            })
            .collect())
    }

    fn solver_seconds(&self) -> f64 {
        self.policy.as_ref().map_or(0.0, StsPolicy::solver_seconds)
    }

    fn solver_fallbacks(&self) -> u64 {
        self.policy.as_ref().map_or(0, StsPolicy::solver_fallbacks)
    }

    fn realized_over_planned(&self) -> Option<f64> {
        self.policy
            .as_ref()
            .and_then(StsPolicy::realized_over_planned)
    }
}
