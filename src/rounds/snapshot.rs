//! Snapshots of a [`RoundScheduler`]: its whole state as a versioned JSON document
//! (`stsfair-scheduler/1`, `docs/rounds.md`, "Snapshots and restarts"), so that a scheduler
//! process that restarts keeps every job's fairness and plans exactly as if it had never stopped.
//!
//! Restoring validates everything before anything is built: the cluster and the jobs go through
//! [`Instance::builder`], the same checks as an instance file (with the same paths, since the
//! snapshot lists them the same way); the rest (runs, placements, the pending round) is checked
//! against that cluster here. Errors are [`RoundError::InvalidSnapshot`].

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Deserializer, Serialize};

use super::{Pending, RoundBound, RoundError, RoundScheduler};
use crate::instance::{Fairness, GpuType, Instance, InstanceError, JobSpec, json_message, num};
use crate::placement::{MAX_GPUS, PlacedGpu, PlacedSlot, Placement};
use crate::solvers::{Solver, WarmStart};

/// The format tag of scheduler snapshots.
pub const SNAPSHOT_FORMAT: &str = "stsfair-scheduler/1";

/// The whole state of a [`RoundScheduler`] as a serde document (`"format":
/// "stsfair-scheduler/1"`): the cluster, every active job with its deficit, the runs and
/// placement of the last reported round, the pending plan and the round counter. Taken with
/// [`RoundScheduler::snapshot`], turned back into a scheduler with [`RoundScheduler::restore`].
///
/// The co-location model and the solver are not part of it: [`RoundScheduler::restore`] takes a
/// solver, and places with [`NoInterference`](crate::placement::NoInterference) until the caller attaches a model again with
/// [`RoundScheduler::with_colocation`].
///
/// Deserializing checks the shape only (missing, unknown or mistyped fields, another format
/// tag); [`SchedulerSnapshot::from_json`] reports those with the path of the field, and
/// [`RoundScheduler::restore`] checks every rule.
///
/// ```
/// use stsfair::{Dp, Instance, JobSpec, RoundScheduler, SchedulerSnapshot};
///
/// let cluster = Instance::builder().gpu_type("v100", 1, 4, &[1, 2, 4]).build()?;
/// let mut s = RoundScheduler::new(&cluster, Dp::default());
/// s.add_job(JobSpec::new("a").time("v100", 4, 0.25))?;
/// let plan = s.plan()?;
/// s.report_planned(&plan)?;
/// let text = s.snapshot().to_json();
/// let restored = RoundScheduler::restore(SchedulerSnapshot::from_json(&text)?, Dp::default())?;
/// assert_eq!(restored.deficit("a"), s.deficit("a"));
/// assert_eq!(restored.snapshot().to_json(), text);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerSnapshot {
    #[serde(deserialize_with = "format_tag")]
    format: String,
    round: u64,
    fairness: SnapFairness,
    gpu_types: Vec<SnapGpuType>,
    jobs: Vec<SnapJob>,
    last_runs: Vec<SnapRun>,
    // `deserialize_with` makes the field required: serde fills a missing `Option` with `None`
    // otherwise, and a lost placement must not pass for "no round ran yet".
    #[serde(deserialize_with = "required")]
    running: Option<SnapPlacement>,
    #[serde(deserialize_with = "required")]
    pending: Option<SnapPending>,
    /// The warm start of the next solve (one multiplier per GPU type, docs/solver.md "Warm
    /// starts"); optional, so that snapshots written before it existed still load (a missing
    /// one only makes the next solve start cold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    multipliers: Option<Vec<f64>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapFairness {
    lambda: f64,
    max_debt: f64,
    credit: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapGpuType {
    name: String,
    count: u64,
    units: u64,
    slot_sizes: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapJob {
    id: String,
    weight: f64,
    workers: u64,
    deficit: f64,
    times: Vec<SnapTime>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapTime {
    gpu: String,
    slot: u64,
    sec_per_iter: f64,
}

/// The option a job ran (or is planned to run): GPU type name and slot size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapRun {
    job: String,
    gpu: String,
    slot: u64,
}

/// What `report` needs of the pending plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapPending {
    /// The active jobs of the planned round with their F_j, in job order.
    jobs: Vec<SnapFairRate>,
    /// Jobs of the planned round removed since the plan, by id: `report` still accepts (and
    /// ignores) them.
    removed: Vec<SnapFairRate>,
    /// The planned options, by job id (they become `last_runs` when the round is reported).
    runs: Vec<SnapRun>,
    placement: SnapPlacement,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapFairRate {
    job: String,
    fair_rate: f64,
    /// B_j of the planned round. Snapshots written before the per-job credit bound have none:
    /// the job then gets B, as the scheduler that wrote them would have given it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    credit: Option<f64>,
}

/// A [`Placement`]: the GPUs that hold a slot (idle GPUs follow from the cluster).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapPlacement {
    gpus: Vec<SnapGpu>,
    migrations: u64,
    slowdown: f64,
    conflicts: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapGpu {
    gpu_type: String,
    index: u64,
    slots: Vec<SnapSlot>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapSlot {
    offset: u64,
    size: u64,
    job: String,
    worker: u64,
}

/// Refuses another format or version as soon as the tag is read: a document of another version
/// may differ in any field, so nothing after the tag is worth reporting.
fn format_tag<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let tag = String::deserialize(d)?;
    if tag != SNAPSHOT_FORMAT {
        return Err(serde::de::Error::custom(format!(
            "must be \"{SNAPSHOT_FORMAT}\" (got {tag:?}): a snapshot of another format or version"
        )));
    }
    Ok(tag)
}

fn required<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

impl SchedulerSnapshot {
    /// Number of the next round: rounds reported before the snapshot.
    pub fn round(&self) -> u64 {
        self.round
    }

    /// Number of active jobs.
    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }

    /// The snapshot as compact JSON (its fields in the documented order).
    pub fn to_json(&self) -> String {
        // Plain structs of strings, integers and finite numbers: serializing cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses a snapshot document, checking its shape: errors name the field by its path
    /// (`jobs[2].deficit: missing field ...`). The rules are checked by
    /// [`RoundScheduler::restore`].
    pub fn from_json(text: &str) -> Result<SchedulerSnapshot, RoundError> {
        let invalid = |path: String, message: String| RoundError::InvalidSnapshot {
            source: InstanceError::syntax(path, message),
        };
        let de = &mut serde_json::Deserializer::from_str(text);
        let snapshot: SchedulerSnapshot = serde_path_to_error::deserialize(&mut *de)
            .map_err(|e| invalid(e.path().to_string(), json_message(text, e.inner())))?;
        // serde stops after the first value: text after it is refused here.
        de.end().map_err(|e| invalid(".".into(), e.to_string()))?;
        Ok(snapshot)
    }
}

fn placement_doc(p: &Placement) -> SnapPlacement {
    SnapPlacement {
        gpus: p
            .gpus
            .iter()
            .filter(|g| !g.slots.is_empty())
            .map(|g| SnapGpu {
                gpu_type: g.type_name.clone(),
                index: u64::from(g.index),
                slots: g
                    .slots
                    .iter()
                    .map(|s| SnapSlot {
                        offset: u64::from(s.offset),
                        size: u64::from(s.size),
                        job: s.job.clone(),
                        worker: u64::from(s.worker),
                    })
                    .collect(),
            })
            .collect(),
        migrations: p.migrations as u64,
        slowdown: p.slowdown,
        conflicts: p.conflicts as u64,
    }
}

/// Runs by job id, in id order, so that the document does not depend on hash order.
fn runs_doc(types: &[GpuType], runs: &HashMap<String, (usize, u32)>) -> Vec<SnapRun> {
    let sorted: BTreeMap<&String, &(usize, u32)> = runs.iter().collect();
    sorted
        .into_iter()
        .map(|(job, &(k, slot))| SnapRun {
            job: job.clone(),
            gpu: types
                .get(k)
                .map(|t| t.name().to_string())
                .unwrap_or_default(),
            slot: u64::from(slot),
        })
        .collect()
}

fn rule(
    path: impl Into<String>,
    rule: impl Into<String>,
    got: impl std::fmt::Display,
) -> RoundError {
    RoundError::InvalidSnapshot {
        source: InstanceError::rule(path, rule, got),
    }
}

/// The index of the type called `name`, or an error naming `path`.
fn type_index(types: &[GpuType], name: &str, path: String) -> Result<usize, RoundError> {
    types
        .iter()
        .position(|t| t.name() == name)
        .ok_or_else(|| rule(path, "must name one of gpu_types", format!("{name:?}")))
}

/// `slot` as a slot size of type `k`, or an error naming `path`.
fn slot_size(types: &[GpuType], k: usize, slot: u64, path: String) -> Result<u32, RoundError> {
    let t = &types[k];
    t.slot_sizes()
        .iter()
        .copied()
        .find(|&s| u64::from(s) == slot)
        .ok_or_else(|| {
            rule(
                path,
                format!(
                    "must be one of the slot_sizes of {} ({:?})",
                    t.name(),
                    t.slot_sizes()
                ),
                slot,
            )
        })
}

/// Checks a list of runs (each job once, a known type, a slot on its ladder).
fn runs_from(
    types: &[GpuType],
    runs: &[SnapRun],
    path: &str,
) -> Result<HashMap<String, (usize, u32)>, RoundError> {
    let mut out = HashMap::with_capacity(runs.len());
    for (i, r) in runs.iter().enumerate() {
        let p = format!("{path}[{i}]");
        if r.job.is_empty() {
            return Err(rule(format!("{p}.job"), "must not be empty", "\"\""));
        }
        let k = type_index(types, &r.gpu, format!("{p}.gpu"))?;
        let slot = slot_size(types, k, r.slot, format!("{p}.slot"))?;
        if out.insert(r.job.clone(), (k, slot)).is_some() {
            return Err(rule(
                format!("{p}.job"),
                format!("must be listed once in {path}"),
                format!("{:?}", r.job),
            ));
        }
    }
    Ok(out)
}

/// The pending plan's runs against its round: each names a job of the planned round
/// (`pending.jobs` or `pending.removed`), an active job's is one of its options, and the active
/// jobs' runs together fit every GPU type's units.
fn check_pending_runs(
    instance: &Instance,
    bounds: &HashMap<String, RoundBound>,
    listed: &[SnapRun],
    runs: &HashMap<String, (usize, u32)>,
) -> Result<(), RoundError> {
    let mut used = vec![0u64; instance.gpu_types().len()];
    for (i, r) in listed.iter().enumerate() {
        let p = format!("pending.runs[{i}]");
        if !bounds.contains_key(&r.job) {
            return Err(rule(
                format!("{p}.job"),
                "must name a job of the planned round (pending.jobs or pending.removed)",
                format!("{:?}", r.job),
            ));
        }
        let Some(job) = instance.jobs().iter().find(|j| j.id() == r.job) else {
            continue;
        };
        let Some(&(k, slot)) = runs.get(&r.job) else {
            continue;
        };
        let Some(option) = job.options().iter().find(|o| o.gpu == k && o.slot == slot) else {
            return Err(rule(
                p,
                "must be an option of the job (a time for its gpu and slot that fits)",
                format!("({}, {slot})", r.gpu),
            ));
        };
        used[k] = used[k].saturating_add(option.units);
    }
    for (k, g) in instance.gpu_types().iter().enumerate() {
        if used[k] > g.capacity() {
            return Err(rule(
                "pending.runs",
                format!(
                    "must fit gpu type {}: {} units (capacity {})",
                    g.name(),
                    used[k],
                    g.capacity()
                ),
                format!("{} units", used[k]),
            ));
        }
    }
    Ok(())
}

/// The largest round counter a snapshot may hold: 2^53, more rounds than any run makes (at one a
/// minute, 17 billion years), so that counting on from it never overflows.
pub const MAX_ROUND: u64 = 1 << 53;

/// The snapshot's cluster and jobs as an instance, checked exactly as an instance file's (the
/// builder reports `gpu_types[k]...`, `jobs[j]...` and `fairness...`, the snapshot's own
/// paths), then the limits a scheduler needs: a cluster a placement can hold, a round number
/// below 2^53.
fn instance_from(s: &SchedulerSnapshot) -> Result<Instance, RoundError> {
    let mut b = Instance::builder().fairness(Fairness {
        lambda: s.fairness.lambda,
        max_debt: s.fairness.max_debt,
        credit: s.fairness.credit,
    });
    for g in &s.gpu_types {
        b = b.gpu_type(g.name.clone(), g.count, g.units, &g.slot_sizes);
    }
    for j in &s.jobs {
        let mut spec = JobSpec::new(j.id.clone())
            .weight(j.weight)
            .workers(j.workers)
            .deficit(j.deficit);
        for t in &j.times {
            spec = spec.time(t.gpu.clone(), t.slot, t.sec_per_iter);
        }
        b = b.job(spec);
    }
    let instance = b
        .build()
        .map_err(|source| RoundError::InvalidSnapshot { source })?;
    // A cluster past the placement's limit is refused here: such a scheduler could not plan.
    let gpus: u64 = instance
        .gpu_types()
        .iter()
        .map(|t| u64::from(t.count()))
        .sum();
    if gpus > MAX_GPUS {
        return Err(rule(
            "gpu_types",
            format!("must hold at most {MAX_GPUS} gpus in all (what a placement can hold)"),
            format!("{gpus} gpus"),
        ));
    }
    if s.round > MAX_ROUND {
        return Err(rule(
            "round",
            format!("must be at most {MAX_ROUND} (2^53: more rounds than any run makes)"),
            s.round,
        ));
    }
    Ok(instance)
}

/// The pending round: its fair rates (`pending.jobs` naming active jobs, `pending.removed`
/// jobs removed since the plan, each job once, F_j finite and >= 0, B_j finite and at least
/// fairness.credit), its runs and its placement.
fn pending_from(
    instance: &Instance,
    p: &SnapPending,
    workers: &HashMap<&str, u64>,
) -> Result<Pending, RoundError> {
    let types = instance.gpu_types();
    let active: HashSet<&str> = instance.jobs().iter().map(|j| j.id()).collect();
    let least_credit = instance.fairness().credit;
    let mut bounds = HashMap::with_capacity(p.jobs.len() + p.removed.len());
    let lists = [(&p.jobs, "jobs", true), (&p.removed, "removed", false)];
    for (list, name, must_be_active) in lists {
        for (i, f) in list.iter().enumerate() {
            let fp = format!("pending.{name}[{i}]");
            if active.contains(f.job.as_str()) != must_be_active {
                let rule_text = if must_be_active {
                    "must name an active job (one of jobs)"
                } else {
                    "must not name an active job (it lists jobs removed since the plan)"
                };
                return Err(rule(format!("{fp}.job"), rule_text, format!("{:?}", f.job)));
            }
            if !(f.fair_rate >= 0.0 && f.fair_rate.is_finite()) {
                return Err(rule(
                    format!("{fp}.fair_rate"),
                    "must be finite and >= 0",
                    num(f.fair_rate),
                ));
            }
            let credit = f.credit.unwrap_or(least_credit);
            // B_j = max(B, ...) is never below B.
            if !(credit >= least_credit && credit.is_finite()) {
                return Err(rule(
                    format!("{fp}.credit"),
                    "must be finite and >= fairness.credit",
                    num(credit),
                ));
            }
            let bound = RoundBound {
                fair_rate: f.fair_rate,
                credit,
            };
            if bounds.insert(f.job.clone(), bound).is_some() {
                return Err(rule(
                    format!("{fp}.job"),
                    "must be listed once in pending.jobs and pending.removed",
                    format!("{:?}", f.job),
                ));
            }
        }
    }
    let runs = runs_from(types, &p.runs, "pending.runs")?;
    check_pending_runs(instance, &bounds, &p.runs, &runs)?;
    Ok(Pending {
        bounds,
        runs,
        placement: placement_from(types, &p.placement, "pending.placement", workers)?,
    })
}

/// The warm start of the multipliers: one finite mu_k >= 0 per GPU type.
fn warm_from(types: &[GpuType], mu: Vec<f64>) -> Result<WarmStart, RoundError> {
    if mu.len() != types.len() {
        return Err(rule(
            "multipliers",
            format!("must have one entry per GPU type ({})", types.len()),
            format!("{} entries", mu.len()),
        ));
    }
    if let Some((k, m)) = mu
        .iter()
        .enumerate()
        .find(|(_, m)| !(m.is_finite() && **m >= 0.0))
    {
        return Err(rule(
            format!("multipliers[{k}]"),
            "must be finite and >= 0",
            num(*m),
        ));
    }
    Ok(WarmStart::from_multipliers(mu))
}

/// Rebuilds a [`Placement`] (the GPUs that hold a slot, in type and index order) after checking that
/// every slot lies on a GPU of the cluster, on the type's ladder, aligned, inside the GPU and
/// clear of the slots before it, that each (job, worker) holds one slot, and that a slot of an
/// active job (in `active`, its workers by id) holds one of its workers. Slots of jobs not
/// among the active ones are kept: a job removed since the placement still has its slots there
/// (the next placement counts its migrations from them).
fn placement_from(
    types: &[GpuType],
    doc: &SnapPlacement,
    path: &str,
    active: &HashMap<&str, u64>,
) -> Result<Placement, RoundError> {
    let mut slots: BTreeMap<(usize, u32), Vec<PlacedSlot>> = BTreeMap::new();
    let mut workers: HashSet<(&str, u64)> = HashSet::new();
    for (i, g) in doc.gpus.iter().enumerate() {
        let p = format!("{path}.gpus[{i}]");
        let k = type_index(types, &g.gpu_type, format!("{p}.gpu_type"))?;
        let t = &types[k];
        let index = u32::try_from(g.index)
            .ok()
            .filter(|&x| x < t.count())
            .ok_or_else(|| {
                rule(
                    format!("{p}.index"),
                    format!("must be below the count of {} ({})", t.name(), t.count()),
                    g.index,
                )
            })?;
        if g.slots.is_empty() {
            return Err(rule(
                format!("{p}.slots"),
                "must not be empty (idle GPUs are left out)",
                "[]",
            ));
        }
        let mut placed = Vec::with_capacity(g.slots.len());
        let mut end = 0u64;
        for (x, s) in g.slots.iter().enumerate() {
            let sp = format!("{p}.slots[{x}]");
            let size = slot_size(types, k, s.size, format!("{sp}.size"))?;
            if s.offset % s.size != 0 {
                return Err(rule(
                    format!("{sp}.offset"),
                    format!("must be a multiple of the slot's size ({})", s.size),
                    s.offset,
                ));
            }
            if s.offset < end {
                return Err(rule(
                    format!("{sp}.offset"),
                    format!(
                        "must not be below the end of the slot before it ({end}): slots are listed by offset and do not overlap"
                    ),
                    s.offset,
                ));
            }
            end = s.offset.saturating_add(s.size);
            if end > u64::from(t.units()) {
                return Err(rule(
                    format!("{sp}.offset"),
                    format!(
                        "must leave room for the slot on the GPU ({} units)",
                        t.units()
                    ),
                    s.offset,
                ));
            }
            if s.job.is_empty() {
                return Err(rule(format!("{sp}.job"), "must not be empty", "\"\""));
            }
            if !workers.insert((s.job.as_str(), s.worker)) {
                return Err(rule(
                    format!("{sp}.worker"),
                    format!(
                        "must be the only slot of worker {} of job {:?}",
                        s.worker, s.job
                    ),
                    s.worker,
                ));
            }
            if let Some(&n) = active.get(s.job.as_str())
                && s.worker >= n
            {
                return Err(rule(
                    format!("{sp}.worker"),
                    format!("must be below the workers of job {:?} ({n})", s.job),
                    s.worker,
                ));
            }
            let worker = u32::try_from(s.worker)
                .map_err(|_| rule(format!("{sp}.worker"), "must fit in 32 bits", s.worker))?;
            // end <= units <= MAX_UNITS: both fit in 32 bits.
            placed.push(PlacedSlot {
                offset: u32::try_from(s.offset).unwrap_or(u32::MAX),
                size,
                job: s.job.clone(),
                worker,
            });
        }
        if slots.insert((k, index), placed).is_some() {
            return Err(rule(
                format!("{p}.index"),
                format!("must list GPU {index} of {} once", t.name()),
                g.index,
            ));
        }
    }
    if !(doc.slowdown >= 0.0 && doc.slowdown.is_finite()) {
        return Err(rule(
            format!("{path}.slowdown"),
            "must be finite and >= 0",
            num(doc.slowdown),
        ));
    }
    let count = |v: u64, field: &str| {
        usize::try_from(v).map_err(|_| rule(format!("{path}.{field}"), "must fit in a usize", v))
    };
    let mut out = Placement {
        gpus: Vec::new(),
        migrations: count(doc.migrations, "migrations")?,
        slowdown: doc.slowdown,
        conflicts: count(doc.conflicts, "conflicts")?,
    };
    for ((k, index), slots) in slots {
        let t = &types[k];
        out.gpus.push(PlacedGpu {
            gpu_type: k,
            type_name: t.name().to_string(),
            index,
            units: t.units(),
            slots,
        });
    }
    Ok(out)
}

impl RoundScheduler {
    /// The scheduler's whole state as a [`SchedulerSnapshot`] (see its documentation); write it
    /// with `serde_json` or [`SchedulerSnapshot::to_json`]. O(jobs + times + placed slots).
    pub fn snapshot(&self) -> SchedulerSnapshot {
        let types = &self.gpu_types;
        SchedulerSnapshot {
            format: SNAPSHOT_FORMAT.to_string(),
            round: self.round,
            fairness: SnapFairness {
                lambda: self.fairness.lambda,
                max_debt: self.fairness.max_debt,
                credit: self.fairness.credit,
            },
            gpu_types: types
                .iter()
                .map(|g| SnapGpuType {
                    name: g.name().to_string(),
                    count: u64::from(g.count()),
                    units: u64::from(g.units()),
                    slot_sizes: g.slot_sizes().iter().map(|&s| u64::from(s)).collect(),
                })
                .collect(),
            jobs: self
                .jobs
                .iter()
                .zip(&self.deficits)
                .map(|(j, &deficit)| SnapJob {
                    id: j.id().to_string(),
                    weight: j.weight(),
                    workers: u64::from(j.workers()),
                    deficit,
                    times: j
                        .times()
                        .iter()
                        .map(|t| SnapTime {
                            gpu: types[t.gpu].name().to_string(),
                            slot: u64::from(t.slot),
                            sec_per_iter: t.sec_per_iter,
                        })
                        .collect(),
                })
                .collect(),
            last_runs: runs_doc(types, &self.last_runs),
            multipliers: self.warm.multipliers().map(<[f64]>::to_vec),
            running: self.running.as_ref().map(placement_doc),
            pending: self.pending.as_ref().map(|p| {
                let active: HashSet<&str> = self.jobs.iter().map(|j| j.id()).collect();
                let removed: BTreeMap<&String, &RoundBound> = p
                    .bounds
                    .iter()
                    .filter(|(id, _)| !active.contains(id.as_str()))
                    .collect();
                SnapPending {
                    // Active jobs in job order, removed ones in id order: no hash order leaks in.
                    jobs: self
                        .jobs
                        .iter()
                        .filter_map(|j| {
                            p.bounds.get(j.id()).map(|b| SnapFairRate {
                                job: j.id().to_string(),
                                fair_rate: b.fair_rate,
                                credit: Some(b.credit),
                            })
                        })
                        .collect(),
                    removed: removed
                        .into_iter()
                        .map(|(job, b)| SnapFairRate {
                            job: job.clone(),
                            fair_rate: b.fair_rate,
                            credit: Some(b.credit),
                        })
                        .collect(),
                    runs: runs_doc(types, &p.runs),
                    placement: placement_doc(&p.placement),
                }
            }),
        }
    }

    /// A scheduler in the state of `snapshot`, solving with `solver` and placing with
    /// [`NoInterference`](crate::placement::NoInterference) until a model is attached again with
    /// [`with_colocation`](Self::with_colocation) (the model is not part of the snapshot). With
    /// the same solver and model, it plans exactly as the scheduler the snapshot was taken of.
    ///
    /// Everything is checked before the scheduler is built; an error
    /// ([`RoundError::InvalidSnapshot`]) names the field by its path in the document and the
    /// rule it breaks: the format tag; the cluster and the jobs as an instance file's
    /// (`jobs[3].times[0].gpu must name one of gpu_types`); runs naming a known type and a slot
    /// on its ladder; placed slots on GPUs of the cluster, aligned and not overlapping; the
    /// pending round naming active jobs, each once, with a finite F_j >= 0.
    pub fn restore(
        snapshot: SchedulerSnapshot,
        solver: impl Solver + 'static,
    ) -> Result<RoundScheduler, RoundError> {
        let s = snapshot;
        if s.format != SNAPSHOT_FORMAT {
            return Err(rule(
                "format",
                format!("must be \"{SNAPSHOT_FORMAT}\""),
                format!("{:?}", s.format),
            ));
        }
        let instance = instance_from(&s)?;
        let types = instance.gpu_types();
        let workers: HashMap<&str, u64> = instance
            .jobs()
            .iter()
            .map(|j| (j.id(), u64::from(j.workers())))
            .collect();
        let last_runs = runs_from(types, &s.last_runs, "last_runs")?;
        let running = match &s.running {
            Some(p) => Some(placement_from(types, p, "running", &workers)?),
            None => None,
        };
        let pending = match &s.pending {
            Some(p) => Some(pending_from(&instance, p, &workers)?),
            None => None,
        };
        let warm = match s.multipliers {
            Some(mu) => warm_from(types, mu)?,
            None => WarmStart::default(),
        };
        let mut scheduler = RoundScheduler::new(&instance, solver);
        scheduler.warm = warm;
        scheduler.pending = pending;
        scheduler.running = running;
        scheduler.last_runs = last_runs;
        scheduler.round = s.round;
        Ok(scheduler)
    }
}
