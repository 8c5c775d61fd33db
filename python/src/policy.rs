//! `stsfair.StsPolicy`: the library's round policy (`stsfair::policy::StsPolicy`) with Python
//! values for arguments. Plans run with the GIL released. Errors: `PolicyError` (a setting, a job
//! or a snapshot that breaks a rule, named), `SchedulerError` and `SolveError` as for
//! `RoundScheduler`.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use stsfair::policy::{
    PolicyError as CorePolicyError, Realized, SecondStageRounds, StsJob, StsOptions, StsSnapshot,
    ThroughputMatrix, Weights,
};
use stsfair::{Fairness, SolverKind};

use super::{GavelTable, PolicyError, SolveError, round_error};

fn policy_error(e: CorePolicyError) -> PyErr {
    match e {
        CorePolicyError::Round(r) => round_error(r),
        CorePolicyError::Paired(p) => SolveError::new_err(p.to_string()),
        other => PolicyError::new_err(other.to_string()),
    }
}

/// The co-location data: a `GavelThroughputs` (measured pairs, predicted where Gavel has none)
/// on the cluster's GPU types by name, or a dict with `workers` (per job type), `solo` (per GPU
/// type, per job type) and `pair` (per GPU type, a job-type by job-type list of `[own,
/// other's]`).
fn throughputs(
    source: &Bound<'_, PyAny>,
    cluster: &[(String, u32)],
) -> PyResult<(ThroughputMatrix, Vec<String>)> {
    if let Ok(gavel) = source.cast::<GavelTable>() {
        let table = gavel.get();
        let model = table.model()?;
        let jobs = table.data.job_types();
        let mut solo = Vec::new();
        let mut pair = Vec::new();
        for (name, _) in cluster {
            let w = table.worker(name)?;
            solo.push(
                (0..jobs.len())
                    .map(|j| table.data.solo(w, j).unwrap_or(0.0))
                    .collect(),
            );
            let mut m = vec![vec![(0.0, 0.0); jobs.len()]; jobs.len()];
            for a in 0..jobs.len() {
                for b in a..jobs.len() {
                    let single = jobs[a].scale_factor == 1 && jobs[b].scale_factor == 1;
                    let (x, y) = match table.data.pair(w, a, b) {
                        Some(p) => p,
                        None if single => (
                            model.pair_throughput(w, a, b).unwrap_or(0.0),
                            model.pair_throughput(w, b, a).unwrap_or(0.0),
                        ),
                        None => (0.0, 0.0),
                    };
                    m[a][b] = (x, y);
                    m[b][a] = (y, x);
                }
            }
            pair.push(m);
        }
        let workers = jobs.iter().map(|j| j.scale_factor).collect();
        let names = jobs.iter().map(|j| j.slug()).collect();
        let matrix = ThroughputMatrix::new(workers, solo, pair).map_err(policy_error)?;
        return Ok((matrix, names));
    }
    let dict = source.cast::<PyDict>().map_err(|_| {
        PolicyError::new_err(
            "throughputs must be a GavelThroughputs or a dict with workers, solo and pair",
        )
    })?;
    let get = |key: &str| -> PyResult<Bound<'_, PyAny>> {
        dict.get_item(key)?
            .ok_or_else(|| PolicyError::new_err(format!("throughputs.{key} is missing")))
    };
    let workers: Vec<u32> = get("workers")?.extract()?;
    let solo: Vec<Vec<f64>> = get("solo")?.extract()?;
    // Each pair entry is `[own, other's]` (a list or a tuple of two numbers).
    let entries: Vec<Vec<Vec<Vec<f64>>>> = get("pair")?.extract()?;
    let mut pair = Vec::with_capacity(entries.len());
    for (k, m) in entries.into_iter().enumerate() {
        let mut rows = Vec::with_capacity(m.len());
        for (a, row) in m.into_iter().enumerate() {
            let mut out = Vec::with_capacity(row.len());
            for (b, e) in row.into_iter().enumerate() {
                match e[..] {
                    [x, y] => out.push((x, y)),
                    _ => {
                        return Err(PolicyError::new_err(format!(
                            "throughputs.pair[{k}][{a}][{b}] must be [own, other's]"
                        )));
                    }
                }
            }
            rows.push(out);
        }
        pair.push(rows);
    }
    let names = (0..workers.len()).map(|j| j.to_string()).collect();
    let matrix = ThroughputMatrix::new(workers, solo, pair).map_err(policy_error)?;
    Ok((matrix, names))
}

/// `options`: a dict of `StsOptions` fields; unknown keys are refused by name.
fn options(given: Option<&Bound<'_, PyDict>>) -> PyResult<StsOptions> {
    let mut o = StsOptions::default();
    let Some(given) = given else {
        return Ok(o);
    };
    for (k, v) in given.iter() {
        let key: String = k.extract()?;
        let bad = |what: &str| PolicyError::new_err(format!("options.{key} must be {what}"));
        o = match key.as_str() {
            "solver" => {
                let name: String = v.extract()?;
                let kind = SolverKind::ALL.iter().copied().find(|s| s.name() == name);
                o.with_solver(kind.ok_or_else(|| bad("a solver name of stsfair.solvers()"))?)
            }
            "units" => o.with_units(v.extract()?),
            "fairness" => {
                let (lambda, max_debt, credit): (f64, f64, f64) = v.extract()?;
                o.with_fairness(Fairness {
                    lambda,
                    max_debt,
                    credit,
                })
            }
            "weights" => o.with_weights(match v.extract::<String>()?.as_str() {
                "trace" => Weights::Trace,
                "attained" => Weights::Attained,
                "attained-gpu" => Weights::AttainedGpu,
                _ => return Err(bad("trace, attained or attained-gpu")),
            }),
            "size_exponent" => o.with_size_exponent(v.extract()?),
            "prices" => o.with_prices(v.extract()?),
            "pairing" => o.with_pairing(v.extract()?),
            "pairing_by_type" => o.with_pairing_by_type(v.extract()?),
            "crowded_sharing" => o.with_crowded_sharing(v.extract()?),
            "second_stage" => o.with_second_stage(v.extract()?),
            "second_stage_rounds" => {
                o.with_second_stage_rounds(match v.extract::<String>()?.as_str() {
                    "attained" => SecondStageRounds::Attained,
                    "all" => SecondStageRounds::All,
                    _ => return Err(bad("attained or all")),
                })
            }
            "crowding" => o.with_crowding(v.extract()?),
            "crowding_hold" => o.with_crowding_hold(v.extract()?),
            "paired_rounds" => o.with_paired_rounds(v.extract()?),
            "promotion" => o.with_promotion(v.extract()?),
            "critical" => o.with_critical(v.extract()?),
            "critical_after" => o.with_critical_after(v.extract()?),
            _ => {
                return Err(PolicyError::new_err(format!(
                    "options: unknown option {key:?}"
                )));
            }
        };
    }
    Ok(o)
}

/// `stsfair.StsPolicy`.
#[pyclass(module = "stsfair", name = "StsPolicy")]
pub(crate) struct Policy {
    inner: stsfair::policy::StsPolicy,
    gpu_types: Vec<String>,
    /// Job type names (Gavel's slugs, or the index as text), for `job_type` arguments.
    job_types: Vec<String>,
}

impl Policy {
    fn job_type(&self, job_type: &Bound<'_, PyAny>) -> PyResult<usize> {
        if let Ok(i) = job_type.extract::<usize>() {
            return Ok(i);
        }
        let name: String = job_type.extract()?;
        self.job_types
            .iter()
            .position(|n| *n == name)
            .ok_or_else(|| {
                PolicyError::new_err(format!(
                    "job_type {name:?} is not a job type of the throughputs"
                ))
            })
    }
}

#[pymethods]
impl Policy {
    #[new]
    #[pyo3(signature = (cluster, throughputs, options = None))]
    fn new(
        cluster: Vec<(String, u32)>,
        throughputs: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Policy> {
        let (data, job_types) = self::throughputs(throughputs, &cluster)?;
        let names: Vec<(&str, u32)> = cluster.iter().map(|(n, c)| (n.as_str(), *c)).collect();
        let inner =
            stsfair::policy::StsPolicy::new(&names, Arc::new(data), self::options(options)?)
                .map_err(policy_error)?;
        Ok(Policy {
            inner,
            gpu_types: cluster.into_iter().map(|(n, _)| n).collect(),
            job_types,
        })
    }

    /// A job arrived at `now` seconds: its id, job type (index or name), weight, arrival time
    /// (`now` by default) and steps (unknown by default).
    #[pyo3(signature = (now, job, job_type, weight = 1.0, arrival = None, steps = None))]
    fn job_arrived(
        &mut self,
        now: f64,
        job: u64,
        job_type: &Bound<'_, PyAny>,
        weight: f64,
        arrival: Option<f64>,
        steps: Option<f64>,
    ) -> PyResult<()> {
        let spec = StsJob::new(job, self.job_type(job_type)?, arrival.unwrap_or(now))
            .with_weight(weight)
            .with_steps(steps.unwrap_or(f64::INFINITY));
        self.inner.job_arrived(now, spec).map_err(policy_error)
    }

    fn job_finished(&mut self, job: u64) -> PyResult<()> {
        self.inner.job_finished(job).map_err(policy_error)
    }

    /// What ran in the last planned round of `seconds`: `{job: (throughput, steps)}`.
    fn round_realized(&mut self, seconds: f64, realized: &Bound<'_, PyDict>) -> PyResult<()> {
        let mut runs = Vec::with_capacity(realized.len());
        for (k, v) in realized.iter() {
            let (throughput, steps): (f64, f64) = v.extract()?;
            runs.push(Realized {
                job: k.extract()?,
                throughput,
                steps,
            });
        }
        self.inner
            .round_realized(seconds, &runs)
            .map_err(policy_error)
    }

    /// The plan at `now` seconds, with the GIL released: `runs` (job, gpu_type by name, gpus,
    /// fraction, throughput planned, composed: what the data says it realizes, forced),
    /// `relaxed` and `paired`.
    fn plan<'py>(&mut self, py: Python<'py>, now: f64) -> PyResult<Bound<'py, PyDict>> {
        let inner = &mut self.inner;
        let (plan, composed) = py
            .detach(|| {
                let plan = inner.plan(now)?;
                let composed = inner.composed(&plan);
                Ok::<_, CorePolicyError>((plan, composed))
            })
            .map_err(policy_error)?;
        let runs = PyList::empty(py);
        for (run, thr) in plan.runs.iter().zip(composed) {
            let d = PyDict::new(py);
            d.set_item("job", run.job)?;
            d.set_item("gpu_type", &self.gpu_types[run.gpu_type])?;
            d.set_item("gpus", &run.gpus)?;
            d.set_item("fraction", run.fraction)?;
            d.set_item("throughput", run.throughput)?;
            d.set_item("composed", thr)?;
            d.set_item("forced", run.forced)?;
            runs.append(d)?;
        }
        let out = PyDict::new(py);
        out.set_item("runs", runs)?;
        out.set_item("relaxed", &plan.relaxed)?;
        out.set_item("paired", plan.paired)?;
        Ok(out)
    }

    /// The policy's whole state as JSON text (`stsfair-policy/1`).
    fn snapshot(&self) -> String {
        self.inner.snapshot().to_json()
    }

    /// The policy of `snapshot` (text from `snapshot()`), planning with `throughputs` again.
    #[staticmethod]
    fn restore(snapshot: &str, throughputs: &Bound<'_, PyAny>) -> PyResult<Policy> {
        let snap = StsSnapshot::from_json(snapshot).map_err(policy_error)?;
        let cluster: Vec<(String, u32)> = snap.cluster().to_vec();
        let (data, job_types) = self::throughputs(throughputs, &cluster)?;
        let inner =
            stsfair::policy::StsPolicy::restore(Arc::new(data), snap).map_err(policy_error)?;
        Ok(Policy {
            inner,
            gpu_types: cluster.into_iter().map(|(n, _)| n).collect(),
            job_types,
        })
    }

    /// Active job ids, in arrival order.
    #[getter]
    fn active(&self) -> Vec<u64> {
        self.inner.active().to_vec()
    }

    /// Seconds of attained service of an active job.
    fn attained(&self, job: u64) -> PyResult<f64> {
        self.inner
            .attained(job)
            .ok_or_else(|| PyValueError::new_err(format!("job {job} is not active")))
    }

    /// Seconds spent planning so far.
    #[getter]
    fn solver_seconds(&self) -> f64 {
        self.inner.solver_seconds()
    }

    fn __repr__(&self) -> String {
        format!(
            "StsPolicy({} active jobs on {})",
            self.inner.active().len(),
            self.gpu_types.join(", ")
        )
    }
}
