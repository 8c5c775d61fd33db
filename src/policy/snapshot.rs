//! Snapshots of a [`StsPolicy`]: its whole state as a versioned JSON document
//! (`stsfair-policy/1`), so that a scheduler that restarts plans exactly as if it had never
//! stopped, placements included. The options, the cluster, every active job with its attained
//! service and steps, the rules' state (the hold, the cluster's pace and the most work of one
//! round, the last arrival, the pairing step's partners) and the round scheduler's own snapshot
//! (`stsfair-scheduler/1`: deficits, the last placement, the pending plan, the warm start) are in
//! it. The co-location data is not: [`StsPolicy::restore`] takes it again.
//!
//! Restoring checks every part: the options as [`StsOptions::check`] does, the round scheduler's
//! snapshot as [`RoundScheduler::restore`] does, and the jobs against both (each active job once,
//! in the round scheduler under its name, of a job type the data has). Errors are
//! [`PolicyError::Snapshot`] naming the field.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::options::{SecondStageRounds, StsOptions, Weights};
use super::sts::{Active, StsJob, StsPolicy};
use super::{PolicyError, Throughputs};
use crate::instance::Fairness;
use crate::rounds::{RoundScheduler, SchedulerSnapshot};
use crate::solvers::SolverKind;

/// The format tag of policy snapshots.
pub const POLICY_SNAPSHOT_FORMAT: &str = "stsfair-policy/1";

/// A number that may be infinite: JSON has no infinity, so it is written `"inf"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum Num {
    Finite(f64),
    Text(String),
}

fn num(v: f64) -> Num {
    if v == f64::INFINITY {
        Num::Text("inf".into())
    } else {
        Num::Finite(v)
    }
}

fn value(n: &Num, field: &str) -> Result<f64, PolicyError> {
    match n {
        Num::Finite(v) => Ok(*v),
        Num::Text(t) if t == "inf" => Ok(f64::INFINITY),
        Num::Text(t) => Err(bad(
            field,
            format!("must be a number or \"inf\" (got {t:?})"),
        )),
    }
}

fn bad(field: &str, rule: impl Into<String>) -> PolicyError {
    PolicyError::Snapshot {
        field: field.to_string(),
        rule: rule.into(),
    }
}

/// The whole state of a [`StsPolicy`] (module docs). Taken with [`StsPolicy::snapshot`], turned
/// back into a policy with [`StsPolicy::restore`]; [`StsSnapshot::to_json`] and
/// [`StsSnapshot::from_json`] write and read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StsSnapshot {
    format: String,
    options: SnapOptions,
    cluster: Vec<(String, u32)>,
    jobs: Vec<SnapJob>,
    /// The pending plan's runs: (job, fraction, GPUs, planned throughput).
    planned: Vec<(u64, f64, usize, f64)>,
    holding: bool,
    work_rate: Option<f64>,
    most_work: Option<f64>,
    last_arrival: Option<f64>,
    kept_promises: (f64, u64),
    solver_seconds: f64,
    /// The pairing step's partners: (GPU type, job, partner).
    partners: Vec<(usize, u64, u64)>,
    scheduler: SchedulerSnapshot,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapOptions {
    solver: String,
    units: u32,
    fairness: (f64, f64, f64),
    weights: String,
    size_exponent: f64,
    prices: bool,
    pairing: Option<Num>,
    pairing_by_type: Option<Vec<(String, Num)>>,
    crowded_sharing: Vec<String>,
    second_stage: Option<f64>,
    second_stage_rounds: String,
    crowding: Option<f64>,
    crowding_hold: bool,
    paired_rounds: bool,
    promotion: Option<f64>,
    critical: Option<f64>,
    critical_after: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapJob {
    id: u64,
    job_type: usize,
    weight: f64,
    arrival: f64,
    steps: Num,
    steps_done: f64,
    attained: f64,
    given: Option<Vec<(usize, u64, f64)>>,
}

impl StsSnapshot {
    /// The cluster the snapshot's policy runs on: GPU type names and counts.
    pub fn cluster(&self) -> &[(String, u32)] {
        &self.cluster
    }

    /// The snapshot as one line of JSON.
    pub fn to_json(&self) -> String {
        // A struct of numbers, strings and vectors always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a snapshot written by [`StsSnapshot::to_json`].
    ///
    /// # Errors
    ///
    /// [`PolicyError::Snapshot`] with the JSON error's path and message.
    pub fn from_json(text: &str) -> Result<StsSnapshot, PolicyError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de)
            .map_err(|e| bad(&e.path().to_string(), e.inner().to_string()))
    }
}

fn snap_options(o: &StsOptions) -> SnapOptions {
    SnapOptions {
        solver: o.solver.name().to_string(),
        units: o.units,
        fairness: (o.fairness.lambda, o.fairness.max_debt, o.fairness.credit),
        weights: match o.weights {
            Weights::Trace => "trace",
            Weights::Attained => "attained",
            Weights::AttainedGpu => "attained-gpu",
        }
        .into(),
        size_exponent: o.size_exponent,
        prices: o.prices,
        pairing: o.pairing.map(num),
        pairing_by_type: o
            .pairing_by_type
            .as_ref()
            .map(|l| l.iter().map(|(n, t)| (n.clone(), num(*t))).collect()),
        crowded_sharing: o.crowded_sharing.clone(),
        second_stage: o.second_stage,
        second_stage_rounds: match o.second_stage_rounds {
            SecondStageRounds::Attained => "attained",
            SecondStageRounds::All => "all",
        }
        .into(),
        crowding: o.crowding,
        crowding_hold: o.crowding_hold,
        paired_rounds: o.paired_rounds,
        promotion: o.promotion,
        critical: o.critical,
        critical_after: o.critical_after,
    }
}

fn options_of(s: &SnapOptions) -> Result<StsOptions, PolicyError> {
    let solver = SolverKind::ALL
        .iter()
        .copied()
        .find(|k| k.name() == s.solver)
        .ok_or_else(|| {
            bad(
                "options.solver",
                format!("must be a solver of this build (got {:?})", s.solver),
            )
        })?;
    let weights = match s.weights.as_str() {
        "trace" => Weights::Trace,
        "attained" => Weights::Attained,
        "attained-gpu" => Weights::AttainedGpu,
        other => {
            return Err(bad(
                "options.weights",
                format!("must be trace, attained or attained-gpu (got {other:?})"),
            ));
        }
    };
    let second_stage_rounds = match s.second_stage_rounds.as_str() {
        "attained" => SecondStageRounds::Attained,
        "all" => SecondStageRounds::All,
        other => {
            return Err(bad(
                "options.second_stage_rounds",
                format!("must be attained or all (got {other:?})"),
            ));
        }
    };
    let pairing = s
        .pairing
        .as_ref()
        .map(|n| value(n, "options.pairing"))
        .transpose()?;
    let pairing_by_type = match &s.pairing_by_type {
        Some(list) => Some(
            list.iter()
                .map(|(n, t)| Ok((n.clone(), value(t, "options.pairing_by_type")?)))
                .collect::<Result<Vec<_>, PolicyError>>()?,
        ),
        None => None,
    };
    let options = StsOptions::default()
        .with_solver(solver)
        .with_units(s.units)
        .with_fairness(Fairness {
            lambda: s.fairness.0,
            max_debt: s.fairness.1,
            credit: s.fairness.2,
        })
        .with_weights(weights)
        .with_size_exponent(s.size_exponent)
        .with_prices(s.prices)
        .with_pairing(pairing)
        .with_pairing_by_type(pairing_by_type)
        .with_crowded_sharing(s.crowded_sharing.clone())
        .with_second_stage(s.second_stage)
        .with_second_stage_rounds(second_stage_rounds)
        .with_crowding(s.crowding)
        .with_crowding_hold(s.crowding_hold)
        .with_paired_rounds(s.paired_rounds)
        .with_promotion(s.promotion)
        .with_critical(s.critical)
        .with_critical_after(s.critical_after);
    options.check()?;
    Ok(options)
}

impl StsPolicy {
    /// The policy's whole state (module docs).
    pub fn snapshot(&self) -> StsSnapshot {
        let state = self.state();
        StsSnapshot {
            format: POLICY_SNAPSHOT_FORMAT.to_string(),
            options: snap_options(state.options),
            cluster: state
                .names
                .iter()
                .cloned()
                .zip(state.counts.iter().copied())
                .collect(),
            jobs: state
                .order
                .iter()
                .filter_map(|id| state.jobs.get(id))
                .map(|a| SnapJob {
                    id: a.job.id,
                    job_type: a.job.job_type,
                    weight: a.job.weight,
                    arrival: a.job.arrival,
                    steps: num(a.job.steps),
                    steps_done: a.steps_done,
                    attained: a.attained,
                    given: a.given.clone(),
                })
                .collect(),
            planned: {
                let mut p: Vec<(u64, f64, usize, f64)> = state
                    .planned
                    .iter()
                    .map(|(&j, &(f, g, t))| (j, f, g, t))
                    .collect();
                p.sort_by_key(|x| x.0);
                p
            },
            holding: state.holding,
            work_rate: state.work_rate,
            most_work: state.most_work,
            last_arrival: state.last_arrival,
            kept_promises: state.kept_promises,
            solver_seconds: state.solver_seconds,
            partners: {
                let mut p = state.partners;
                p.sort_unstable();
                p
            },
            scheduler: state.scheduler,
        }
    }

    /// The policy of `snapshot`, planning with `data` (the co-location data it was created
    /// with: the snapshot does not hold it).
    ///
    /// # Errors
    ///
    /// [`PolicyError::Snapshot`] naming the field that breaks a rule, or the errors of
    /// [`StsPolicy::new`] and [`RoundScheduler::restore`] (as [`PolicyError::Round`]).
    pub fn restore(
        data: Arc<dyn Throughputs>,
        snapshot: StsSnapshot,
    ) -> Result<StsPolicy, PolicyError> {
        let s = snapshot;
        if s.format != POLICY_SNAPSHOT_FORMAT {
            return Err(bad(
                "format",
                format!("must be \"{POLICY_SNAPSHOT_FORMAT}\" (got {:?})", s.format),
            ));
        }
        let options = options_of(&s.options)?;
        let cluster: Vec<(&str, u32)> = s.cluster.iter().map(|(n, c)| (n.as_str(), *c)).collect();
        let mut policy = StsPolicy::new(&cluster, Arc::clone(&data), options)?;
        let scheduler_jobs = s.scheduler.job_count();
        let scheduler = RoundScheduler::restore(s.scheduler, policy.solver_for_restore())?;
        let mut names = HashSet::new();
        let mut jobs = HashMap::new();
        let mut order = Vec::new();
        for (i, j) in s.jobs.iter().enumerate() {
            let field = |f: &str| format!("jobs[{i}].{f}");
            if j.job_type >= data.job_types() {
                return Err(bad(&field("job_type"), "must be a job type of the data"));
            }
            let steps = value(&j.steps, &field("steps"))?;
            let finite = |v: f64| v.is_finite() && v >= 0.0;
            if !(finite(j.steps_done) && finite(j.attained) && j.arrival.is_finite()) {
                return Err(bad(
                    &field("steps_done"),
                    "steps_done, attained and arrival must be finite, the first two >= 0",
                ));
            }
            let job = StsJob::new(j.id, j.job_type, j.arrival)
                .with_weight(j.weight)
                .with_steps(steps);
            let (_, mut active): (_, Active) = policy.admit(&job)?;
            if !names.insert(active.name.clone()) || jobs.contains_key(&j.id) {
                return Err(bad(&field("id"), "must name each active job once"));
            }
            if scheduler.deficit(&active.name).is_none() {
                return Err(bad(
                    &field("id"),
                    "must be a job of the round scheduler's snapshot",
                ));
            }
            active.steps_done = j.steps_done;
            active.attained = j.attained;
            active.given = j.given.clone();
            order.push(j.id);
            jobs.insert(j.id, active);
        }
        if scheduler_jobs != jobs.len() {
            return Err(bad("scheduler.jobs", "must be the policy's active jobs"));
        }
        for (i, &(job, fraction, gpus, thr)) in s.planned.iter().enumerate() {
            let valid = jobs.contains_key(&job)
                && fraction > 0.0
                && fraction <= 1.0
                && thr.is_finite()
                && thr >= 0.0
                && gpus > 0;
            if !valid {
                return Err(bad(
                    &format!("planned[{i}]"),
                    "must be an active job with a fraction in (0, 1], GPUs and a finite throughput",
                ));
            }
        }
        for (i, &(k, a, b)) in s.partners.iter().enumerate() {
            if k >= cluster.len() || !jobs.contains_key(&a) || !jobs.contains_key(&b) {
                return Err(bad(
                    &format!("partners[{i}]"),
                    "must be a GPU type and two active jobs",
                ));
            }
        }
        let (kept, n) = s.kept_promises;
        for (field, v) in [
            ("work_rate", s.work_rate.unwrap_or(0.0)),
            ("most_work", s.most_work.unwrap_or(0.0)),
            ("kept_promises", kept),
            ("solver_seconds", s.solver_seconds),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(field, "must be finite and >= 0"));
            }
        }
        if s.last_arrival.is_some_and(|t| !t.is_finite()) {
            return Err(bad("last_arrival", "must be finite"));
        }
        policy.set_state(super::sts::RestoredState {
            scheduler,
            jobs,
            order,
            planned: s
                .planned
                .iter()
                .map(|&(j, f, g, t)| (j, (f, g, t)))
                .collect(),
            holding: s.holding,
            work_rate: s.work_rate,
            most_work: s.most_work,
            last_arrival: s.last_arrival,
            kept_promises: (kept, n),
            solver_seconds: s.solver_seconds,
            partners: s.partners.iter().map(|&(k, a, b)| ((k, a), b)).collect(),
        });
        Ok(policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Realized, StsPlan, ThroughputMatrix};
    use proptest::prelude::*;

    /// Two GPU types and four job types (one of two workers), pairs on every single-GPU pair.
    fn data() -> Arc<dyn Throughputs> {
        let solo = vec![vec![10.0, 8.0, 6.0, 9.0], vec![4.0, 5.0, 2.0, 3.0]];
        let mut pair = vec![vec![vec![(0.0, 0.0); 4]; 4]; 2];
        for (k, row) in solo.iter().enumerate() {
            for a in 0..3 {
                for b in 0..3 {
                    let r = 0.45 + 0.1 * ((a + 2 * b + k) % 4) as f64;
                    let q = 0.45 + 0.1 * ((b + 2 * a + k) % 4) as f64;
                    pair[k][a][b] = (r * row[a], q * row[b]);
                }
            }
        }
        Arc::new(ThroughputMatrix::new(vec![1, 1, 1, 2], solo, pair).expect("valid"))
    }

    /// Runs `events` (arrivals by job type and length, completions) on `policy` from round
    /// `from` on, realizing each plan as the data says; returns the plans.
    fn drive(policy: &mut StsPolicy, events: &[(usize, u8)], from: usize) -> Vec<StsPlan> {
        let mut plans = Vec::new();
        for (round, &(job_type, kind)) in events.iter().enumerate().skip(from) {
            let now = round as f64 * 360.0;
            let id = round as u64;
            match kind % 3 {
                0 | 1 => policy
                    .job_arrived(
                        now,
                        StsJob::new(id, job_type, now).with_steps(1e4 * f64::from(kind + 1)),
                    )
                    .expect("admitted"),
                _ => {
                    if let Some(&first) = policy.active().first() {
                        policy.job_finished(first).expect("active");
                    }
                }
            }
            let plan = policy.plan(now).expect("a plan");
            let realized: Vec<Realized> = plan
                .runs
                .iter()
                .zip(policy.composed(&plan))
                .map(|(r, t)| Realized {
                    job: r.job,
                    throughput: t * 0.9,
                    steps: t * 324.0,
                })
                .collect();
            policy
                .round_realized(360.0, &realized)
                .expect("a valid report");
            plans.push(plan);
        }
        plans
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// A policy restored from a snapshot (through JSON) plans every later round exactly as the
        /// uninterrupted one, placements included, under crowded and uncrowded rounds alike.
        #[test]
        fn a_restored_policy_plans_as_the_uninterrupted_one(
            events in proptest::collection::vec((0usize..4, 0u8..6), 4..30),
            cut in 0usize..30,
            crowding in prop_oneof![Just(Some(1.5)), Just(Some(0.5)), Just(None)],
        ) {
            let cut = cut % events.len();
            let options = StsOptions::default().with_crowding(crowding).with_critical_after(0.0);
            let cluster = [("fast", 3), ("slow", 2)];
            let mut whole = StsPolicy::new(&cluster, data(), options.clone()).expect("valid");
            let mut first = StsPolicy::new(&cluster, data(), options).expect("valid");
            let expected = drive(&mut whole, &events, 0);
            let mut got = drive(&mut first, &events[..cut], 0);
            let text = first.snapshot().to_json();
            let mut restored = StsPolicy::restore(data(), StsSnapshot::from_json(&text).expect("read")).expect("restored");
            prop_assert_eq!(restored.snapshot().to_json(), text);
            got.extend(drive(&mut restored, &events, cut));
            prop_assert_eq!(got, expected);
        }
    }

    /// A tampered snapshot is refused by field, whole.
    #[test]
    fn tampered_snapshots_are_refused_by_field() {
        let mut policy =
            StsPolicy::new(&[("fast", 2)], data(), StsOptions::default()).expect("valid");
        policy
            .job_arrived(0.0, StsJob::new(4, 1, 0.0))
            .expect("admitted");
        let text = policy.snapshot().to_json();
        let refused = |from: &str, to: &str| {
            assert!(text.contains(from), "{from}");
            let tampered = text.replacen(from, to, 1);
            let err = StsSnapshot::from_json(&tampered)
                .and_then(|s| StsPolicy::restore(data(), s))
                .expect_err("refused");
            err.to_string()
        };
        assert!(refused("\"job_type\":1", "\"job_type\":9").contains("jobs[0].job_type"));
        assert!(refused("\"attained\":0.0", "\"attained\":-1.0").contains("jobs[0]"));
        assert!(refused("\"id\":4", "\"id\":5").contains("jobs[0].id"));
        assert!(
            refused("\"weights\":\"attained\"", "\"weights\":\"x\"").contains("options.weights")
        );
        assert!(refused("stsfair-policy/1", "stsfair-policy/2").contains("format"));
        assert!(refused("\"units\":2", "\"units\":0").contains("units"));
        assert!(refused("\"holding\":false", "\"holding\":false,\"extra\":1").contains("extra"));
        assert!(refused("\"most_work\":null", "\"most_work\":-1.0").contains("most_work"));
    }
}
