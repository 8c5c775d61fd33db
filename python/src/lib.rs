//! `stsfair._stsfair`: the Python face of the `stsfair` crates (re-exported by
//! `stsfair/__init__.py`; documented in `docs/python.md`).
//!
//! Conversion and error mapping only: documents cross the boundary as the JSON text of the file
//! formats (Python's `json` module writes and reads it), so that an invalid dict gets exactly
//! the message the CLI gives for the same file (the JSON path and the rule), and a solution is
//! exactly the document `stsfair solve --json` prints. Every solve runs with the GIL released.
//! Nothing here unwraps user data: every failure is a Python exception.

use std::path::PathBuf;
use std::sync::OnceLock;

mod policy;

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Value, json};
use stsfair::instance::MAX_FILE_BYTES;
use stsfair::{
    Instance, Job, JobSpec, RoundError, RoundPlan, SchedulerSnapshot, Solution, Solver,
    SolverConfig, SolverKind,
};
use stsfair_costs::generate::{self, GpuSpec};
use stsfair_costs::mig::{MigError, MigGpu, MigLatencies};
use stsfair_costs::{GavelThroughputs as Gavel, PredictorConfig, ThroughputModel, predictor};

create_exception!(
    stsfair,
    InstanceError,
    PyValueError,
    "An invalid document (instance, job, times or snapshot): the message names the JSON path and the rule."
);
create_exception!(
    stsfair,
    VerifyError,
    PyValueError,
    "A solution that does not check out against its instance: the message says what is wrong."
);
create_exception!(
    stsfair,
    SolveError,
    PyRuntimeError,
    "The solver could not answer (e.g. the DP's state space is past its limit)."
);
create_exception!(
    stsfair,
    PolicyError,
    PyValueError,
    "A StsPolicy call the policy refuses (a setting, a job or a snapshot that breaks a rule): the message names it."
);
create_exception!(
    stsfair,
    SchedulerError,
    PyValueError,
    "A RoundScheduler call the scheduler refuses (unknown or duplicate job, no plan to report, a bad throughput, ...)."
);

/// A `time_limit` argument: None, or a number of seconds (an int or a float, not a bool). An
/// int past the floats (10**400) is refused as not finite, not raised as `OverflowError`.
fn seconds(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<f64>> {
    let Some(v) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    let refuse = |got: String| {
        PyValueError::new_err(format!(
            "time_limit must be a finite number of seconds > 0, or None (got {got})"
        ))
    };
    if v.is_instance_of::<PyBool>() {
        return Err(refuse(format!("{v}, a bool")));
    }
    if !(v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>()) {
        return Err(refuse(format!("{}", v.repr()?)));
    }
    match v.extract::<f64>() {
        Ok(t) => Ok(Some(t)),
        Err(_) => Err(refuse("an int too large for a float".to_string())),
    }
}

/// The solver a name stands for, as `stsfair solve --solver` reads it, with the time limit
/// of `--time-limit` (seconds a solve, `None`: none; the ILP and both DPs honour it).
fn solver(name: &str, time_limit: Option<f64>) -> PyResult<Box<dyn Solver>> {
    if let Some(t) = time_limit.filter(|t| !(*t > 0.0 && t.is_finite())) {
        return Err(PyValueError::new_err(format!(
            "time_limit must be a finite number of seconds > 0, or None (got {t})"
        )));
    }
    let mut config = SolverConfig::default();
    config.time_limit = time_limit;
    SolverKind::ALL
        .iter()
        .find(|k| k.name() == name)
        .map(|k| k.build(&config))
        .ok_or_else(|| {
            let names: Vec<&str> = SolverKind::ALL.iter().map(|k| k.name()).collect();
            PyValueError::new_err(format!(
                "solver must be one of {} (got {name:?})",
                names.join(", ")
            ))
        })
}

/// `prices` of `RoundScheduler`: "off", the round problem of MODEL.md section 4 as is (the
/// library's default), or "lp", forced jobs' service priced by the long-run LP's duals
/// (`stsfair rounds`'s default; docs/rounds.md), which needs a package built with HiGHS.
fn priced(scheduler: stsfair::RoundScheduler, prices: &str) -> PyResult<stsfair::RoundScheduler> {
    match prices {
        "off" => Ok(scheduler),
        #[cfg(feature = "highs")]
        "lp" => Ok(scheduler.with_service_prices(stsfair::bound::LongRunPrices::default())),
        #[cfg(not(feature = "highs"))]
        "lp" => Err(PyValueError::new_err(
            "prices=\"lp\" needs the long-run LP, and this package was built without HiGHS \
             (pip install ./python --config-settings=build-args=\"--features highs\"); use \
             prices=\"off\"",
        )),
        other => Err(PyValueError::new_err(format!(
            "prices must be \"off\" or \"lp\" (got {other:?})"
        ))),
    }
}

/// A Python value for a message: its type and a short repr.
fn describe(v: &Bound<'_, PyAny>) -> String {
    let kind = v
        .get_type()
        .name()
        .map_or_else(|_| "object".to_string(), |n| n.to_string());
    let text = v.repr().map_or_else(|_| String::new(), |r| r.to_string());
    let short: String = text.chars().take(40).collect();
    let cut = if short.len() < text.len() { "..." } else { "" };
    format!("{kind} {short}{cut}")
}

/// A document given by the caller: its JSON text, and the file it came from (for messages).
struct Document {
    text: String,
    file: Option<PathBuf>,
}

impl Document {
    /// `obj` is a `str` or `os.PathLike` naming a file (read here: an unreadable file raises the
    /// `OSError` subclass of its cause), or any other object, written as JSON by Python's `json`
    /// module (what it cannot write raises `InstanceError`, since it is no document of the
    /// format).
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Document> {
        let py = obj.py();
        let pathlike = py.import("os")?.getattr("PathLike")?;
        if obj.is_instance_of::<PyString>() || obj.is_instance(&pathlike)? {
            let file: PathBuf = obj.extract()?;
            return Ok(Document {
                text: read_file(py, &file)?,
                file: Some(file),
            });
        }
        Ok(Document {
            text: to_text(obj)?,
            file: None,
        })
    }

    /// The instance, with the CLI's message (`FILE: path rule`) on error.
    fn instance(&self) -> Result<Instance, String> {
        Instance::from_json(&self.text).map_err(|e| self.message(e))
    }

    /// The error as the CLI words it for a file (`FILE: ...`); for a Python object, without the
    /// `at line 1 column N` the JSON reader adds, which would point into text the caller never
    /// saw.
    fn message(&self, e: impl std::fmt::Display) -> String {
        match &self.file {
            Some(f) => format!("{}: {e}", f.display()),
            None => without_location(e.to_string()),
        }
    }
}

/// The file's text, at most `MAX_FILE_BYTES` (the core's limit and reader,
/// `instance::read_text_limited`: a wrong path, a pipe or a device cannot exhaust memory), read
/// with the GIL released, as Python's own `open().read()` does: a FIFO whose writer is another
/// thread of the same process would otherwise wait for ever, and Ctrl-C could not interrupt it.
/// I/O errors become `OSError`s; text that is too long or not UTF-8 is an invalid instance, with
/// the message the core gives.
fn read_file(py: Python<'_>, file: &std::path::Path) -> PyResult<String> {
    py.detach(|| stsfair::instance::read_text_limited(file, MAX_FILE_BYTES))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => {
                InstanceError::new_err(format!("cannot read {}: {e}", file.display()))
            }
            _ => os_error(py, file, e),
        })
}

/// The `OSError` Python's `open` would raise: `OSError(errno, strerror, filename)`, which Python
/// turns into the subclass of the errno (`FileNotFoundError`, `PermissionError`, ...).
fn os_error(py: Python<'_>, file: &std::path::Path, e: std::io::Error) -> PyErr {
    match e.raw_os_error() {
        Some(code) => {
            let message = py
                .import("os")
                .and_then(|os| os.call_method1("strerror", (code,)))
                .and_then(|m| m.extract::<String>())
                .unwrap_or_else(|_| e.to_string());
            PyOSError::new_err((code, message, file.display().to_string()))
        }
        None => PyOSError::new_err(format!("{}: {e}", file.display())),
    }
}

/// `message` without a trailing ` at line L column C`.
fn without_location(message: String) -> String {
    let Some(at) = message.rfind(" at line ") else {
        return message;
    };
    let tail = &message[at + " at line ".len()..];
    let location = tail
        .split_once(" column ")
        .is_some_and(|(l, c)| is_number(l) && is_number(c));
    if location {
        message[..at].to_string()
    } else {
        message
    }
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Nesting the direct conversion follows (documents of the format nest 4 deep); deeper objects
/// go through `json.dumps`, and the core refuses them by its own nesting limit.
const MAX_DEPTH: usize = 32;

/// `obj` as JSON text. Plain JSON data (dicts with `str` keys, lists, tuples, `str`, `bool`,
/// `int` within 64 bits, finite `float`, `None`) is written here, faster than `json.dumps` on a
/// large instance; anything else (a big int, NaN, a non-`str` key, another type, deep nesting)
/// goes through `json.dumps`, whose text the core then judges, so the outcome is the same
/// either way.
fn to_text(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    let mut out = Vec::with_capacity(1 << 16);
    match write_json(obj, 0, &mut out).and_then(|()| String::from_utf8(out).ok()) {
        Some(text) => Ok(text),
        None => dumps(obj),
    }
}

/// Appends the JSON text of plain JSON data to `out` (serde_json's escaping and number
/// formatting); `None` for anything else. Type tests by `is_instance_of` (a failed `cast` builds
/// an error object), the common types of an instance first.
fn write_json(obj: &Bound<'_, PyAny>, depth: usize, out: &mut Vec<u8>) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    if obj.is_instance_of::<PyString>() {
        let s = obj.cast::<PyString>().ok()?.to_cow().ok()?;
        return serde_json::to_writer(out, s.as_ref()).ok();
    }
    if obj.is_instance_of::<PyFloat>() {
        let f = obj.cast::<PyFloat>().ok()?.value();
        // serde_json writes NaN and infinities as null: those go to json.dumps.
        return f.is_finite().then(|| serde_json::to_writer(out, &f).ok())?;
    }
    // bool before int: True is an int in Python.
    if obj.is_instance_of::<PyBool>() {
        let b = obj.is_truthy().ok()?;
        out.extend_from_slice(if b { b"true" } else { b"false" });
        return Some(());
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return serde_json::to_writer(out, &i).ok();
        }
        let u = obj.extract::<u64>().ok()?;
        return serde_json::to_writer(out, &u).ok();
    }
    if obj.is_instance_of::<PyDict>() {
        out.push(b'{');
        for (i, (k, v)) in obj.cast::<PyDict>().ok()?.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            if !k.is_instance_of::<PyString>() {
                return None;
            }
            write_json(&k, depth + 1, out)?;
            out.push(b':');
            write_json(&v, depth + 1, out)?;
        }
        out.push(b'}');
        return Some(());
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        out.push(b'[');
        for (i, v) in obj.try_iter().ok()?.enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_json(&v.ok()?, depth + 1, out)?;
        }
        out.push(b']');
        return Some(());
    }
    if obj.is_none() {
        out.extend_from_slice(b"null");
        return Some(());
    }
    None
}

/// `json.dumps(obj)`; what it cannot write (sets, objects, cycles, too deep) is no document.
fn dumps(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    let py = obj.py();
    py.import("json")?
        .call_method1("dumps", (obj,))
        .and_then(|t| t.extract::<String>())
        .map_err(|e| InstanceError::new_err(format!(".: not a JSON document: {e}")))
}

/// `json.loads(text)`.
fn loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

/// `stsfair.solve`: the `stsfair-solution/1` document of the instance's solution, with the GIL
/// released while parsing, solving and writing.
#[pyfunction]
#[pyo3(signature = (instance, solver = "dp", time_limit = None))]
fn solve<'py>(
    py: Python<'py>,
    instance: &Bound<'py, PyAny>,
    solver: &str,
    time_limit: Option<Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let solver = self::solver(solver, seconds(time_limit.as_ref())?)?;
    let doc = Document::from_py(instance)?;
    enum Failure {
        Instance(String),
        Solve(String),
    }
    let text = py
        .detach(|| {
            let instance = doc.instance().map_err(Failure::Instance)?;
            let solution = solver
                .solve(&instance)
                .map_err(|e| Failure::Solve(e.to_string()))?;
            Ok(solution.to_json(&instance).to_string())
        })
        .map_err(|f| match f {
            Failure::Instance(m) => InstanceError::new_err(m),
            Failure::Solve(m) => SolveError::new_err(m),
        })?;
    loads(py, &text)
}

/// `stsfair.verify`: recomputes the solution from the instance, as `stsfair verify` does, and
/// returns what it proved: a dict with `objective` (recomputed; None for an infeasible answer),
/// `optimality` ("certified", "suboptimal", "not certified" or "not applicable"), `optimum`
/// (the exact DP's re-solve, where it ran) and `reason` (why optimality is not certified).
#[pyfunction]
fn verify<'py>(
    py: Python<'py>,
    instance: &Bound<'py, PyAny>,
    solution: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let instance = Document::from_py(instance)?;
    let solution = Document::from_py(solution)?;
    let verified = py.detach(|| {
        let inst = instance.instance().map_err(InstanceError::new_err)?;
        let sol = Solution::from_json(&inst, &solution.text)
            .map_err(|e| VerifyError::new_err(solution.message(e)))?;
        stsfair::verify(&inst, &sol).map_err(|e| VerifyError::new_err(e.to_string()))
    })?;
    let (word, optimum, reason) = match verified.optimality {
        stsfair::Optimality::Certified { optimum } => ("certified", Some(optimum), None),
        stsfair::Optimality::Suboptimal { optimum } => ("suboptimal", Some(optimum), None),
        stsfair::Optimality::NotCertified { reason } => ("not certified", None, Some(reason)),
        _ => ("not applicable", None, None),
    };
    let out = PyDict::new(py);
    out.set_item("objective", verified.objective)?;
    out.set_item("optimality", word)?;
    out.set_item("optimum", optimum)?;
    out.set_item("reason", reason)?;
    Ok(out)
}

/// A scheduler error as the Python exception of its kind: documents that break a rule are
/// `InstanceError`s, refused calls `SchedulerError`s, solver failures `SolveError`s, defects
/// (which the core reports rather than hides) `RuntimeError`s.
fn round_error(e: RoundError) -> PyErr {
    let message = e.to_string();
    match e {
        RoundError::InvalidNewJob { .. }
        | RoundError::InvalidJob { .. }
        | RoundError::InvalidSnapshot { .. } => InstanceError::new_err(message),
        RoundError::DuplicateJob { .. }
        | RoundError::UnknownJob { .. }
        | RoundError::InvalidThroughput { .. }
        | RoundError::DuplicateReport { .. }
        | RoundError::NotInRound { .. }
        | RoundError::NoPlan
        | RoundError::StalePlan { .. }
        | RoundError::InvalidSetting { .. } => SchedulerError::new_err(message),
        // A placement error of the scheduler's own requests is the cluster past what a
        // placement can hold (`placement::MAX_GPUS`): a limit, as the solver's.
        RoundError::Solve(_) | RoundError::SolverDefect { .. } | RoundError::Placement(_) => {
            SolveError::new_err(message)
        }
        _ => PyRuntimeError::new_err(message),
    }
}

/// A time entry by GPU type name: (gpu, slot, seconds per iteration), as `update_times` takes it.
type NamedTime = (String, u64, f64);

/// `second_stage` of `RoundScheduler`: `None` (the library's default: the round problem's own
/// choice of where the jobs run) or an exponent in [0, 1] (`RoundScheduler::with_second_stage`,
/// docs/rounds.md "Who runs, then where").
fn staged(
    scheduler: stsfair::RoundScheduler,
    second_stage: Option<f64>,
) -> PyResult<stsfair::RoundScheduler> {
    match second_stage {
        None => Ok(scheduler),
        Some(exponent) => scheduler.with_second_stage(exponent).map_err(round_error),
    }
}

/// `stsfair.RoundScheduler`: `stsfair::RoundScheduler` with documents for arguments.
#[pyclass(module = "stsfair", name = "RoundScheduler")]
struct Scheduler {
    inner: stsfair::RoundScheduler,
}

impl Scheduler {
    /// One job object of the format, checked as the only job of an instance of this cluster (so
    /// errors name it `jobs[0]...`, as `RoundError::InvalidNewJob` does): the job and its times
    /// by GPU type name.
    fn one_job(&self, job: &str) -> Result<(Job, Vec<NamedTime>), String> {
        let s = &self.inner;
        let types: Vec<Value> = s
            .gpu_types()
            .iter()
            .map(|g| {
                json!({"name": g.name(), "count": g.count(), "units": g.units(),
                       "slot_sizes": g.slot_sizes()})
            })
            .collect();
        let f = s.fairness();
        let fairness = json!({"lambda": f.lambda, "max_debt": f.max_debt, "credit": f.credit});
        // `job` is the text of one JSON value (see `to_text`), placed as the only job.
        let doc = format!(
            r#"{{"format":"stsfair/1","fairness":{fairness},"gpu_types":{},"jobs":[{job}]}}"#,
            Value::Array(types)
        );
        let one = Instance::from_json(&doc)
            .map_err(|e| format!("new job: {}", without_location(e.to_string())))?;
        let job = one
            .jobs()
            .first()
            .cloned()
            .ok_or_else(|| "new job: jobs must hold the job".to_string())?;
        let times = job
            .times()
            .iter()
            .filter_map(|t| {
                let g = one.gpu_types().get(t.gpu)?;
                Some((g.name().to_string(), u64::from(t.slot), t.sec_per_iter))
            })
            .collect();
        Ok((job, times))
    }
}

/// The plan as a dict: per job its option by GPU type name (`None` when idle), the planned
/// throughput and sigma, and the placement's non-idle GPUs.
fn plan_dict<'py>(
    py: Python<'py>,
    s: &stsfair::RoundScheduler,
    plan: &RoundPlan,
) -> PyResult<Bound<'py, PyDict>> {
    let type_name = |k: usize| s.gpu_types().get(k).map(|g| g.name().to_string());
    let jobs = PyList::empty(py);
    for j in &plan.jobs {
        let d = PyDict::new(py);
        d.set_item("id", &j.id)?;
        d.set_item("gpu", j.run.and_then(|(k, _)| type_name(k)))?;
        d.set_item("slot", j.run.map(|(_, slot)| slot))?;
        d.set_item("throughput", j.throughput)?;
        d.set_item("sigma", j.sigma)?;
        d.set_item("fair_rate", j.fair_rate)?;
        d.set_item("deficit", j.deficit)?;
        d.set_item("minimum", j.minimum)?;
        d.set_item("forced", j.forced)?;
        d.set_item("relaxed", j.relaxed)?;
        d.set_item("credit", j.credit)?;
        jobs.append(d)?;
    }
    let gpus = PyList::empty(py);
    for g in plan.placement.gpus.iter().filter(|g| !g.slots.is_empty()) {
        let slots = PyList::empty(py);
        for slot in &g.slots {
            let d = PyDict::new(py);
            d.set_item("offset", slot.offset)?;
            d.set_item("size", slot.size)?;
            d.set_item("job", &slot.job)?;
            d.set_item("worker", slot.worker)?;
            slots.append(d)?;
        }
        let d = PyDict::new(py);
        d.set_item("gpu", &g.type_name)?;
        d.set_item("index", g.index)?;
        d.set_item("units", g.units)?;
        d.set_item("slots", slots)?;
        gpus.append(d)?;
    }
    let placement = PyDict::new(py);
    placement.set_item("gpus", gpus)?;
    placement.set_item("migrations", plan.placement.migrations)?;
    placement.set_item("slowdown", plan.placement.slowdown)?;
    placement.set_item("conflicts", plan.placement.conflicts)?;
    let out = PyDict::new(py);
    out.set_item("round", plan.round)?;
    out.set_item("objective", plan.objective)?;
    out.set_item("relaxed", &plan.relaxed)?;
    out.set_item("solves", plan.solves)?;
    out.set_item("fallback_solves", plan.fallback_solves)?;
    out.set_item("feasible_solves", plan.feasible_solves)?;
    out.set_item("jobs", jobs)?;
    out.set_item("placement", placement)?;
    Ok(out)
}

#[pymethods]
impl Scheduler {
    #[new]
    #[pyo3(signature = (cluster, solver = "dp", prices = "off", second_stage = None, time_limit = None))]
    fn new(
        cluster: &Bound<'_, PyAny>,
        solver: &str,
        prices: &str,
        second_stage: Option<f64>,
        time_limit: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Scheduler> {
        let solver = self::solver(solver, seconds(time_limit.as_ref())?)?;
        let cluster = Document::from_py(cluster)?
            .instance()
            .map_err(InstanceError::new_err)?;
        let inner = priced(stsfair::RoundScheduler::new(&cluster, solver), prices)?;
        Ok(Scheduler {
            inner: staged(inner, second_stage)?,
        })
    }

    fn add_job(&mut self, job: &Bound<'_, PyAny>) -> PyResult<()> {
        let (job, times) = self
            .one_job(&to_text(job)?)
            .map_err(InstanceError::new_err)?;
        let mut spec = JobSpec::new(job.id())
            .weight(job.weight())
            .workers(u64::from(job.workers()))
            .deficit(job.deficit());
        for (gpu, slot, sec_per_iter) in times {
            spec = spec.time(gpu, slot, sec_per_iter);
        }
        self.inner.add_job(spec).map_err(round_error)
    }

    fn remove_job(&mut self, id: &str) -> PyResult<f64> {
        self.inner.remove_job(id).map_err(round_error)
    }

    fn update_times(&mut self, id: &str, times: &Bound<'_, PyAny>) -> PyResult<()> {
        // The times are read as those of a one-job document (errors name them
        // `jobs[0].times[i]...`); the core then checks them with the job's own workers.
        let job = format!(
            r#"{{"id":{},"times":{}}}"#,
            Value::from(id),
            to_text(times)?
        );
        let (_, times) = self.one_job(&job).map_err(|m| {
            InstanceError::new_err(m.replacen("new job:", &format!("job {id:?}:"), 1))
        })?;
        let refs: Vec<(&str, u64, f64)> =
            times.iter().map(|(g, s, t)| (g.as_str(), *s, *t)).collect();
        self.inner.update_times(id, &refs).map_err(round_error)
    }

    fn plan<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let inner = &mut self.inner;
        let plan = py.detach(|| inner.plan()).map_err(round_error)?;
        plan_dict(py, &self.inner, &plan)
    }

    fn report<'py>(
        &mut self,
        py: Python<'py>,
        realized: &Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut pairs: Vec<(String, f64)> = Vec::with_capacity(realized.len());
        for (k, v) in realized.iter() {
            // The errors name the entry: pyo3's own say only "must be real number, not str".
            let id: String = k.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "realized: keys must be job ids (str) (got {})",
                    describe(&k)
                ))
            })?;
            // A bool is an int to Python, but no throughput: refused rather than read as 1.0.
            let thr: f64 = if v.is_instance_of::<PyBool>() {
                None
            } else {
                v.extract().ok()
            }
            .ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "realized[{id:?}]: the throughput must be a number (got {})",
                    describe(&v)
                ))
            })?;
            pairs.push((id, thr));
        }
        self.report_pairs(py, &pairs)
    }

    fn report_planned<'py>(
        &mut self,
        py: Python<'py>,
        plan: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        // A plan is the dict plan() returned: of the pending round (an older round's would
        // charge the deficits from the wrong round), with its jobs.
        let key = |name: &str| {
            plan.get_item(name).map_err(|_| {
                SchedulerError::new_err(format!(
                    "report_planned takes the plan that plan() returned: it has no {name:?}"
                ))
            })
        };
        let round: u64 = key("round")?.extract()?;
        if round != self.inner.round() {
            return Err(round_error(RoundError::StalePlan {
                round,
                pending: self.inner.round(),
            }));
        }
        // The plan's own predictions for its running jobs: `RoundPlan::planned_throughputs`.
        let mut pairs = Vec::new();
        for job in key("jobs")?.try_iter()? {
            let job = job?;
            if !job.get_item("gpu")?.is_none() {
                pairs.push((
                    job.get_item("id")?.extract()?,
                    job.get_item("throughput")?.extract()?,
                ));
            }
        }
        self.report_pairs(py, &pairs)
    }

    fn snapshot(&self) -> PyResult<String> {
        serde_json::to_string(&self.inner.snapshot())
            .map_err(|e| PyRuntimeError::new_err(format!("cannot write the snapshot: {e}")))
    }

    #[staticmethod]
    #[pyo3(signature = (snapshot, solver = "dp", prices = "off", second_stage = None, time_limit = None))]
    fn restore(
        snapshot: &Bound<'_, PyAny>,
        solver: &str,
        prices: &str,
        second_stage: Option<f64>,
        time_limit: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Scheduler> {
        let solver = self::solver(solver, seconds(time_limit.as_ref())?)?;
        // The text `snapshot()` returned, or the dict `json.loads` makes of it; anything else
        // is no snapshot (`InstanceError`, as every invalid document).
        let text: String = if snapshot.is_instance_of::<PyString>() {
            snapshot.extract()?
        } else {
            to_text(snapshot)?
        };
        let snapshot = SchedulerSnapshot::from_json(&text).map_err(round_error)?;
        let inner = stsfair::RoundScheduler::restore(snapshot, solver).map_err(round_error)?;
        Ok(Scheduler {
            inner: staged(priced(inner, prices)?, second_stage)?,
        })
    }

    /// D_j of every active job, in the order they were added.
    fn deficits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (job, deficit) in self.inner.jobs() {
            d.set_item(job.id(), deficit)?;
        }
        Ok(d)
    }

    /// Rounds reported so far.
    #[getter]
    fn round(&self) -> u64 {
        self.inner.round()
    }

    /// The solver's name.
    #[getter]
    fn solver(&self) -> &'static str {
        self.inner.solver_name()
    }

    /// The second stage's exponent, or `None` (none; an exponent of 1 is none as well).
    #[getter]
    fn second_stage(&self) -> Option<f64> {
        self.inner.second_stage()
    }

    /// Sets the second stage of the next plans between plans (`RoundScheduler::set_second_stage`):
    /// an exponent in [0, 1] or `None`; outside [0, 1] raises `SchedulerError` and changes nothing.
    #[setter]
    fn set_second_stage(&mut self, exponent: Option<f64>) -> PyResult<()> {
        self.inner.set_second_stage(exponent).map_err(round_error)
    }

    fn __repr__(&self) -> String {
        format!(
            "<stsfair.RoundScheduler solver={:?} jobs={} round={}>",
            self.inner.solver_name(),
            self.inner.jobs().count(),
            self.inner.round()
        )
    }
}

impl Scheduler {
    /// `report` with the realized throughputs as pairs; the services as dicts.
    fn report_pairs<'py>(
        &mut self,
        py: Python<'py>,
        pairs: &[(String, f64)],
    ) -> PyResult<Bound<'py, PyList>> {
        let refs: Vec<(&str, f64)> = pairs.iter().map(|(id, t)| (id.as_str(), *t)).collect();
        let services = self.inner.report(&refs).map_err(round_error)?;
        let out = PyList::empty(py);
        for s in services {
            let d = PyDict::new(py);
            d.set_item("job", s.job)?;
            d.set_item("sigma", s.sigma)?;
            d.set_item("deficit", s.deficit)?;
            out.append(d)?;
        }
        Ok(out)
    }
}

/// `stsfair.GavelThroughputs`: Gavel's measured throughputs as vendored in `stsfair-costs`.
#[pyclass(module = "stsfair", name = "GavelThroughputs", frozen)]
pub(crate) struct GavelTable {
    data: Gavel,
    seed: u64,
    /// The model `stsfair gen --gavel` derives slot times from (the measured table, completed by
    /// the predictor where pairs are missing), built on first use.
    model: OnceLock<Box<dyn ThroughputModel + Send + Sync>>,
}

impl GavelTable {
    fn worker(&self, name: &str) -> PyResult<usize> {
        self.data.worker_index(name).ok_or_else(|| {
            PyValueError::new_err(format!(
                "worker type must be one of {} (got {name:?})",
                self.data.worker_types().join(", ")
            ))
        })
    }

    fn job(&self, slug: &str) -> PyResult<usize> {
        self.data
            .job_types()
            .iter()
            .position(|j| j.slug() == slug)
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "{slug:?} is not a Gavel job type (see GavelThroughputs.job_types)"
                ))
            })
    }

    fn model(&self) -> PyResult<&(dyn ThroughputModel + Send + Sync)> {
        if let Some(m) = self.model.get() {
            return Ok(m.as_ref());
        }
        let config = PredictorConfig {
            seed: self.seed,
            ..Default::default()
        };
        let m = predictor::complete(self.data.clone().into_inputs(), &config)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        // Another thread may have set it meanwhile; either model is the same (seeded).
        Ok(self.model.get_or_init(|| m).as_ref())
    }
}

#[pymethods]
impl GavelTable {
    /// The worker (GPU) types: k80, p100, v100.
    #[getter]
    fn worker_types(&self) -> Vec<String> {
        self.data.worker_types().to_vec()
    }

    /// The job types by slug (`resnet-18-bs16`, `a3c-sf4`), in the file's order.
    #[getter]
    fn job_types(&self) -> Vec<String> {
        self.data.job_types().iter().map(|j| j.slug()).collect()
    }

    /// A job type's description: slug, Gavel's key and model name, family, batch size (or
    /// `None`), scale factor (its number of workers).
    fn job_type<'py>(&self, py: Python<'py>, job: &str) -> PyResult<Bound<'py, PyDict>> {
        let j = self.job(job)?;
        let t = &self.data.job_types()[j];
        let d = PyDict::new(py);
        d.set_item("slug", t.slug())?;
        d.set_item("key", t.to_string())?;
        d.set_item("model", t.model())?;
        d.set_item("family", &t.family)?;
        d.set_item("batch_size", t.batch_size)?;
        d.set_item("scale_factor", t.scale_factor)?;
        Ok(d)
    }

    /// Measured solo throughput (iterations per second), `None` where the job type cannot run.
    fn solo(&self, worker: &str, job: &str) -> PyResult<Option<f64>> {
        Ok(self.data.solo(self.worker(worker)?, self.job(job)?))
    }

    /// Measured `(job, other)` throughputs sharing one GPU; `None` when the pair cannot run
    /// together or was not measured.
    fn pair(&self, worker: &str, job: &str, other: &str) -> PyResult<Option<(f64, f64)>> {
        Ok(self
            .data
            .pair(self.worker(worker)?, self.job(job)?, self.job(other)?))
    }

    /// The `times` of a job of type `job` on the GPU types `gpu_types` (dicts with `name`,
    /// `units` and `slot_sizes`, e.g. a cluster's `gpu_types`), exactly as
    /// `stsfair gen --gavel` writes them.
    fn job_times<'py>(
        &self,
        py: Python<'py>,
        job: &str,
        gpu_types: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let j = self.job(job)?;
        // Each type is checked as an instance file's (`gpu_types[k]...`, by the core's builder:
        // units in range, a divisibility ladder, unique names), so that the times returned are
        // ones `add_job` accepts.
        let mut gpus = Vec::new();
        let mut check = Instance::builder();
        for (k, g) in gpu_types.try_iter()?.enumerate() {
            let g = g?;
            let field = |key: &str| {
                g.get_item(key).map_err(|_| {
                    InstanceError::new_err(format!("gpu_types[{k}]: missing field `{key}`"))
                })
            };
            let bad = |key: &str, e: PyErr| {
                InstanceError::new_err(format!("gpu_types[{k}].{key}: {}", e.value(py)))
            };
            let name: String = field("name")?.extract().map_err(|e| bad("name", e))?;
            let units: u64 = field("units")?.extract().map_err(|e| bad("units", e))?;
            let ladder: Vec<u64> = field("slot_sizes")?
                .extract()
                .map_err(|e| bad("slot_sizes", e))?;
            check = check.gpu_type(name.clone(), 1, units, &ladder);
            gpus.push((name, units, ladder));
        }
        check
            .build()
            .map_err(|e| InstanceError::new_err(e.to_string()))?;
        // Checked above: units and sizes are at most MAX_UNITS (1024).
        let gpus: Vec<GpuSpec> = gpus
            .into_iter()
            .map(|(name, units, ladder)| GpuSpec {
                name,
                count: 0,
                units: u32::try_from(units).unwrap_or(u32::MAX),
                ladder: ladder
                    .iter()
                    .map(|&s| u32::try_from(s).unwrap_or(u32::MAX))
                    .collect(),
            })
            .collect();
        let times = generate::job_times(self.model()?, j, &gpus)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let out = PyList::empty(py);
        for (gpu, slot, sec) in times {
            let d = PyDict::new(py);
            d.set_item("gpu", gpu)?;
            d.set_item("slot", slot)?;
            d.set_item("sec_per_iter", sec)?;
            out.append(d)?;
        }
        Ok(out)
    }

    fn __repr__(&self) -> String {
        format!(
            "<stsfair.GavelThroughputs {} worker types, {} job types>",
            self.data.worker_types().len(),
            self.data.job_types().len()
        )
    }
}

/// `stsfair.gavel_throughputs`: the bundled table; `seed` seeds the predictor that fills
/// unmeasured pairs for `job_times` (as `stsfair gen --gavel --seed`).
#[pyfunction]
#[pyo3(signature = (seed = 0))]
fn gavel_throughputs(seed: u64) -> GavelTable {
    GavelTable {
        data: Gavel::bundled(),
        seed,
        model: OnceLock::new(),
    }
}

/// A refused MIG call (an unknown or unsourced model, a layout the placement rules forbid) as
/// `ValueError`, with the library's message (it names the model, the layout and the rule).
fn mig_error(e: MigError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// `stsfair.mig_gpu`: a vendored MIG GPU model (`stsfair_costs::mig::MigGpu`) as a dict:
/// `name`, `compute_slices`, `memory_slices`, `profiles` (one per compute size: `name`,
/// `compute`, `memory`, `starts`) and `layouts` (the maximal ones, largest sizes first).
#[pyfunction]
fn mig_gpu<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyDict>> {
    let gpu = MigGpu::vendored(name).map_err(mig_error)?;
    let d = PyDict::new(py);
    d.set_item("name", &gpu.name)?;
    d.set_item("compute_slices", gpu.compute_slices)?;
    d.set_item("memory_slices", gpu.memory_slices)?;
    let profiles = PyList::empty(py);
    for p in &gpu.profiles {
        let profile = PyDict::new(py);
        profile.set_item("name", &p.name)?;
        profile.set_item("compute", p.compute)?;
        profile.set_item("memory", p.memory)?;
        profile.set_item("starts", &p.starts)?;
        profiles.append(profile)?;
    }
    d.set_item("profiles", profiles)?;
    d.set_item("layouts", gpu.layouts())?;
    Ok(d)
}

/// `stsfair.mig_place`: the instances of `layout` (compute sizes, any order) on the model
/// `name`, largest first, each a dict `profile`, `compute`, `start`, `memory` (memory slices);
/// `ValueError` naming the rule for a layout the placement rules forbid.
#[pyfunction]
fn mig_place<'py>(py: Python<'py>, name: &str, layout: Vec<i64>) -> PyResult<Bound<'py, PyList>> {
    let gpu = MigGpu::vendored(name).map_err(mig_error)?;
    let mut sizes = Vec::with_capacity(layout.len());
    for &size in &layout {
        match u32::try_from(size) {
            Ok(s) if s >= 1 => sizes.push(s),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "layout: a size is a number of compute slices, a whole number >= 1 (got {size})"
                )));
            }
        }
    }
    let slots = gpu.place(&sizes).map_err(mig_error)?;
    let out = PyList::empty(py);
    for slot in slots {
        let d = PyDict::new(py);
        d.set_item("profile", slot.profile)?;
        d.set_item("compute", slot.compute)?;
        d.set_item("start", slot.start)?;
        d.set_item("memory", slot.memory)?;
        out.append(d)?;
    }
    Ok(out)
}

/// `stsfair.mig_latencies`: MISO's measured jobs on the A100-40GB, each a dict `name`, `model`,
/// `batch` and `latency` (mean seconds per iteration by profile name; a profile the job does not
/// fit is absent).
#[pyfunction]
fn mig_latencies<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    let data = MigLatencies::vendored().map_err(mig_error)?;
    let out = PyList::empty(py);
    for job in &data.jobs {
        let d = PyDict::new(py);
        d.set_item("name", job.name())?;
        d.set_item("model", &job.model)?;
        d.set_item("batch", job.batch)?;
        d.set_item("latency", job.latency.clone())?;
        out.append(d)?;
    }
    Ok(out)
}

/// The solver names of this build (`dp`, `dp-dense`, `brute`; `ilp` and `dp+ilp` with HiGHS).
#[pyfunction]
fn solvers() -> Vec<&'static str> {
    SolverKind::ALL.iter().map(|k| k.name()).collect()
}

#[pymodule]
fn _stsfair(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("InstanceError", py.get_type::<InstanceError>())?;
    m.add("VerifyError", py.get_type::<VerifyError>())?;
    m.add("SolveError", py.get_type::<SolveError>())?;
    m.add("SchedulerError", py.get_type::<SchedulerError>())?;
    m.add("PolicyError", py.get_type::<PolicyError>())?;
    m.add_class::<policy::Policy>()?;
    m.add_function(wrap_pyfunction!(solve, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(gavel_throughputs, m)?)?;
    m.add_function(wrap_pyfunction!(solvers, m)?)?;
    m.add_function(wrap_pyfunction!(mig_gpu, m)?)?;
    m.add_function(wrap_pyfunction!(mig_place, m)?)?;
    m.add_function(wrap_pyfunction!(mig_latencies, m)?)?;
    m.add_class::<Scheduler>()?;
    m.add_class::<GavelTable>()?;
    Ok(())
}
