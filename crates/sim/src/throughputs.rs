//! The throughputs the simulator runs on: a dense table of solo and co-located steps per second,
//! indexed by GPU type and job type.
//!
//! The simulator looks throughputs up millions of times (every job, every round, every candidate
//! pair), so the measured data is copied once into flat vectors indexed by small integers rather
//! than looked up by name. The table is built from any source through [`ThroughputTable::new`];
//! [`ThroughputTable::from_gavel`] builds it from Gavel's measurements (the `costs` module's
//! importer) and fills unmeasured pairs with the `costs` predictor.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use stsfair_costs::{
    Colocation, CostError, GavelThroughputs, JobType, LearnedPredictor, PredictorConfig,
    ThroughputModel,
};

/// Solo and pairwise throughputs (steps per second of the whole job) per GPU type and job type.
#[derive(Clone)]
pub struct ThroughputTable {
    workers: Vec<String>,
    jobs: Vec<JobType>,
    index: HashMap<(String, u32), usize>,
    /// solo[w * J + j]; 0 when the job cannot run on the type.
    solo: Vec<f64>,
    /// pair[(w * J + a) * J + b] = (a's, b's) steps/s when a and b share one GPU (or one set of
    /// sf GPUs); (0, 0) when they cannot run together; `None` when nobody measured or predicted it.
    pair: Vec<Option<(f64, f64)>>,
    predicted: usize,
    /// The co-location model the table came from (measured pairs, or the learned predictor
    /// when some were missing), for slot throughputs; same worker and job indices.
    model: Option<Arc<dyn ThroughputModel + Send + Sync>>,
}

impl fmt::Debug for ThroughputTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThroughputTable")
            .field("workers", &self.workers)
            .field("job_types", &self.jobs.len())
            .field("predicted_pairs", &self.predicted)
            .field(
                "model",
                &self.model.as_ref().map(|m| m.method().to_string()),
            )
            .finish()
    }
}

impl ThroughputTable {
    /// Builds a table from lookup functions. `solo(w, j)` is the throughput of job type `j` alone
    /// on worker type `w` (`None` or 0: cannot run); `pair(w, a, b)` the co-located pair. Pairs are
    /// kept only between job types of the same scale factor (the only ones a GPU can share).
    /// O(W * J^2) calls.
    pub fn new(
        workers: Vec<String>,
        jobs: Vec<JobType>,
        solo: impl Fn(usize, usize) -> Option<f64>,
        pair: impl Fn(usize, usize, usize) -> Option<(f64, f64)>,
    ) -> ThroughputTable {
        let n = jobs.len();
        let w = workers.len();
        let mut s = vec![0.0; w * n];
        let mut p = vec![None; w * n * n];
        for wi in 0..w {
            for a in 0..n {
                s[wi * n + a] = solo(wi, a)
                    .filter(|t| t.is_finite() && *t > 0.0)
                    .unwrap_or(0.0);
                for b in 0..n {
                    if jobs[a].scale_factor == jobs[b].scale_factor {
                        p[(wi * n + a) * n + b] =
                            pair(wi, a, b).map(|(x, y)| (x.max(0.0), y.max(0.0)));
                    }
                }
            }
        }
        let index = jobs
            .iter()
            .enumerate()
            .map(|(i, j)| ((j.model(), j.scale_factor), i))
            .collect();
        ThroughputTable {
            workers,
            jobs,
            index,
            solo: s,
            pair: p,
            predicted: 0,
            model: None,
        }
    }

    /// The measured Gavel throughputs: solo entries, measured pairs, and `[0, 0]` pairs as pairs
    /// that cannot share; unmeasured pairs stay unknown (see
    /// [`fill_missing_pairs`](Self::fill_missing_pairs)).
    pub fn from_gavel(gavel: &GavelThroughputs) -> ThroughputTable {
        let mut table = ThroughputTable::new(
            gavel.worker_types().to_vec(),
            gavel.job_types().to_vec(),
            |w, j| gavel.solo(w, j),
            |w, a, b| match gavel.colocation(w, a, b) {
                Colocation::Measured { own, other } => Some((own, other)),
                Colocation::CannotRun => Some((0.0, 0.0)),
                Colocation::Unmeasured => None,
            },
        );
        table.model = Some(Arc::new(gavel.inputs().clone()));
        table
    }

    /// Reads a Gavel throughputs file. Pairs the file does not measure (none in Gavel's own
    /// file) are filled by the `costs` module's learned predictor, trained on the measured ones.
    pub fn load(path: impl AsRef<Path>) -> Result<ThroughputTable, CostError> {
        ThroughputTable::completed(&GavelThroughputs::from_path(path)?)
    }

    /// The Gavel throughputs bundled with `stsfair-costs` ([`GavelThroughputs::bundled`]), as
    /// [`load`](Self::load) reads a file.
    pub fn bundled() -> Result<ThroughputTable, CostError> {
        ThroughputTable::completed(&GavelThroughputs::bundled())
    }

    /// [`from_gavel`](Self::from_gavel), with the pairs the data does not measure filled by the
    /// learned predictor trained on the measured ones. The predictor predicts pairs of
    /// single-GPU job types only, so it is trained only when such a pair is unmeasured: a
    /// file that leaves the pairs of distributed job types unwritten (they cannot share a GPU)
    /// is complete as it is, and the fit, about a second on a table of 56 job types
    /// (docs/simulation.md, "Inputs"), would predict nothing.
    pub fn completed(gavel: &GavelThroughputs) -> Result<ThroughputTable, CostError> {
        let mut table = ThroughputTable::from_gavel(gavel);
        if gavel.inputs().unmeasured_single_gpu_pairs() > 0 {
            let model = LearnedPredictor::train(gavel.inputs(), &PredictorConfig::default())?;
            table.fill_from_model(&model);
            table.model = Some(Arc::new(model));
        }
        Ok(table)
    }

    /// Same-scale-factor pairs of job types that both run alone on the worker type but whose
    /// co-location is unknown. O(W * J^2).
    pub fn missing_pairs(&self) -> usize {
        let n = self.jobs.len();
        let mut missing = 0;
        for w in 0..self.workers.len() {
            for a in 0..n {
                for b in 0..n {
                    let both = self.solo(w, a) > 0.0 && self.solo(w, b) > 0.0;
                    if both
                        && self.jobs[a].scale_factor == self.jobs[b].scale_factor
                        && !self.has_pair(w, a, b)
                    {
                        missing += 1;
                    }
                }
            }
        }
        missing
    }

    /// Fills unmeasured pairs with a co-location model's predictions (both directions must be
    /// predicted). The model's job and GPU indices must be this table's (true for a model built
    /// on the same [`GavelThroughputs`]).
    pub fn fill_from_model(&mut self, model: &dyn ThroughputModel) {
        self.fill_missing_pairs(|w, a, b| {
            Some((
                model.pair_throughput(w, a, b)?,
                model.pair_throughput(w, b, a)?,
            ))
        });
    }

    /// Fills every missing same-scale-factor pair with `predict(w, a, b)` (when it answers) and
    /// counts how many were filled. O(W * J^2).
    pub fn fill_missing_pairs(
        &mut self,
        predict: impl Fn(usize, usize, usize) -> Option<(f64, f64)>,
    ) {
        let n = self.jobs.len();
        for wi in 0..self.workers.len() {
            for a in 0..n {
                for b in 0..n {
                    let slot = (wi * n + a) * n + b;
                    if self.jobs[a].scale_factor == self.jobs[b].scale_factor
                        && self.pair[slot].is_none()
                        && let Some((x, y)) = predict(wi, a, b)
                    {
                        self.pair[slot] = Some((x.max(0.0), y.max(0.0)));
                        self.predicted += 1;
                    }
                }
            }
        }
    }

    /// Worker (GPU) type names.
    pub fn workers(&self) -> &[String] {
        &self.workers
    }

    /// Job types.
    pub fn job_types(&self) -> &[JobType] {
        &self.jobs
    }

    /// Index of a worker type by name.
    pub fn worker(&self, name: &str) -> Option<usize> {
        self.workers.iter().position(|w| w == name)
    }

    /// The relative speed of each of `workers` (worker type indices), as the policy's
    /// [`speeds`](stsfair::policy::rules::speeds) computes it over those types: the median, over
    /// the single-GPU job types that run alone on every one of them, of the log of the job's solo
    /// throughput there less its mean over `workers`. O(W * J log J).
    pub fn speeds(&self, workers: &[usize]) -> Vec<f64> {
        stsfair::policy::rules::speeds(
            &WorkerView {
                table: self,
                workers,
            },
            workers.len(),
        )
    }

    /// Worker type indices, fastest first by [`speeds`](Self::speeds) over every worker type,
    /// the order of the table on a tie. On Gavel's table: v100, p100, k80. O(W * J log J).
    pub fn fastest_first(&self) -> Vec<usize> {
        let all: Vec<usize> = (0..self.workers.len()).collect();
        let speed = self.speeds(&all);
        let mut order = all;
        order.sort_by(|&a, &b| speed[b].total_cmp(&speed[a]).then(a.cmp(&b)));
        order
    }

    /// Index of a job type.
    pub fn job_type(&self, model: &str, scale_factor: u32) -> Option<usize> {
        self.index.get(&(model.to_string(), scale_factor)).copied()
    }

    /// Steps/s of job type `j` alone on worker type `w` (0: cannot run there).
    pub fn solo(&self, w: usize, j: usize) -> f64 {
        self.solo[w * self.jobs.len() + j]
    }

    /// Steps/s of `a` and of `b` when they share GPUs of type `w`; (0, 0) when they cannot, or
    /// when the pair is unknown.
    pub fn pair(&self, w: usize, a: usize, b: usize) -> (f64, f64) {
        let n = self.jobs.len();
        self.pair[(w * n + a) * n + b].unwrap_or((0.0, 0.0))
    }

    /// Whether the pair was measured or predicted.
    pub fn has_pair(&self, w: usize, a: usize, b: usize) -> bool {
        let n = self.jobs.len();
        self.pair[(w * n + a) * n + b].is_some()
    }

    /// The co-location model behind the table (`None` for a table built from functions).
    pub fn model(&self) -> Option<&(dyn ThroughputModel + Send + Sync)> {
        self.model.as_deref()
    }

    /// How many pairs came from the predictor.
    pub fn predicted_pairs(&self) -> usize {
        self.predicted
    }
}

/// A table's worker types `workers`, in that order, as the policy's co-location data (GPU type
/// k is worker type `workers[k]`).
pub(crate) struct WorkerView<'a> {
    pub(crate) table: &'a ThroughputTable,
    pub(crate) workers: &'a [usize],
}

impl stsfair::policy::Throughputs for WorkerView<'_> {
    fn job_types(&self) -> usize {
        self.table.jobs.len()
    }
    fn workers(&self, job_type: usize) -> u32 {
        self.table.jobs.get(job_type).map_or(1, |j| j.scale_factor)
    }
    fn solo(&self, gpu_type: usize, job_type: usize) -> f64 {
        self.workers
            .get(gpu_type)
            .map_or(0.0, |&w| self.table.solo(w, job_type))
    }
    fn pair(&self, gpu_type: usize, a: usize, b: usize) -> (f64, f64) {
        self.workers
            .get(gpu_type)
            .map_or((0.0, 0.0), |&w| self.table.pair(w, a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A throughputs document of one GPU type `g`: `singles` single-GPU job types with every
    /// pair measured except `(skip, skip + 1)`, and two distributed job types whose pairs are
    /// not written.
    fn document(singles: usize, skip: Option<usize>) -> String {
        let key = |i: usize, sf: u32| format!("('M{i} (batch size {})', {sf})", 1 << (i % 5));
        let mut rows = Vec::new();
        for a in 0..singles {
            let mut entries = vec![format!("\"null\": {}", 10.0 + a as f64)];
            for b in 0..singles {
                let missing = skip.is_some_and(|s| (a, b) == (s, s + 1) || (a, b) == (s + 1, s));
                if !missing {
                    let (ra, rb) = (
                        0.3 + 0.05 * ((a * 7 + b) % 11) as f64,
                        0.3 + 0.05 * ((b * 7 + a) % 11) as f64,
                    );
                    entries.push(format!(
                        "\"{}\": [{}, {}]",
                        key(b, 1),
                        ra * (10.0 + a as f64),
                        rb * (10.0 + b as f64)
                    ));
                }
            }
            rows.push(format!("\"{}\": {{{}}}", key(a, 1), entries.join(", ")));
        }
        for i in 0..2 {
            rows.push(format!("\"{}\": {{\"null\": 15.0}}", key(i, 2)));
        }
        format!("{{\"g\": {{{}}}}}", rows.join(", "))
    }

    #[test]
    fn unwritten_pairs_of_distributed_jobs_train_no_predictor() {
        let gavel = GavelThroughputs::from_json(&document(12, None)).expect("a document");
        let table = ThroughputTable::completed(&gavel).expect("a table");
        assert!(
            table.missing_pairs() > 0,
            "the distributed pairs stay unknown"
        );
        assert_eq!(table.predicted_pairs(), 0);
        assert_eq!(table.model().map(|m| m.method()), Some("measured"));
    }

    #[test]
    fn an_unmeasured_single_gpu_pair_is_predicted() {
        let gavel = GavelThroughputs::from_json(&document(12, Some(3))).expect("a document");
        let table = ThroughputTable::completed(&gavel).expect("a table");
        assert_eq!(table.predicted_pairs(), 2);
        let singles: Vec<usize> = (0..table.job_types().len())
            .filter(|&j| table.job_types()[j].scale_factor == 1)
            .collect();
        for &a in &singles {
            for &b in &singles {
                assert!(table.has_pair(0, a, b), "pair {a}, {b} is known");
            }
        }
        assert!(table.model().is_some_and(|m| m.method() != "measured"));
    }
}
