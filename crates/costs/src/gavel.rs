//! Importer for the throughputs measured by the Gavel authors (Narayanan et al., "Heterogeneity-
//! aware cluster scheduling policies for deep learning workloads", OSDI 2020), as shipped in
//! `simulation_throughputs.json` of Gavel's repository. The file is vendored in this crate
//! (`data/gavel/`, with Gavel's MIT licence and `SOURCE.txt`, which names the commit) and
//! compiled into it: [`GavelThroughputs::bundled`] needs no file at run time, so an installed
//! `stsfair` works from any folder.
//!
//! Layout of the file:
//! `{worker_type: {"('Model (batch size B)', sf)": {"null": solo, "('Other (batch size C)', sf)": [own, other]}}}`
//! - worker types `k80`, `p100`, `v100` (and `*_unconsolidated` variants, which Gavel's scheduler
//!   does not use: they are skipped unless [`Workers::All`] asks for them);
//! - job types keyed by model (family, optional batch size) and scale factor (workers);
//! - `"null"`: throughput alone (steps per second of the whole job); 0 means it cannot run there;
//! - a pair `[own, other]`: both jobs' throughputs while they share the same GPUs; `[0, 0]`
//!   means the pair cannot run together (every pair of distributed jobs is `[0, 0]`).
//!
//! The file is parsed once into dense tensors ([`CostInputs`]); every lookup after that is O(1).
//! Parsing is O(W * J^2) for W worker types and J job types (83 job types, 3 worker types: a few
//! milliseconds).

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use ndarray::{Array2, Array3};
use serde_json::{Map, Value};

use super::{Colocation, CostError, CostInputs, JobType};

/// Gavel's `simulation_throughputs.json` (commit c4fa400, MIT licence), as vendored in
/// `data/gavel/` of this crate.
pub const BUNDLED_JSON: &str = include_str!("../data/gavel/simulation_throughputs.json");

/// Largest throughput file read, in bytes (the real one is 1.2 MB): a wrong path cannot
/// exhaust memory.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// Which worker types to import.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Workers {
    /// The worker types Gavel schedules on (`k80`, `p100`, `v100`): names without
    /// `_unconsolidated`.
    #[default]
    Consolidated,
    /// Every worker type of the file.
    All,
}

/// The measured Gavel throughputs of a file, parsed once.
#[derive(Debug, Clone, PartialEq)]
pub struct GavelThroughputs {
    inputs: CostInputs,
}

impl GavelThroughputs {
    /// The measured throughputs shipped with the crate ([`BUNDLED_JSON`]), consolidated worker
    /// types (k80, p100, v100). Parsing takes a few milliseconds; callers that need the table
    /// often keep the result.
    pub fn bundled() -> GavelThroughputs {
        // The bundled document is a fixed input checked by this crate's tests
        // (`bundled_data_parses`); failing to parse it is a build defect, not a user error.
        #[allow(clippy::expect_used)]
        GavelThroughputs::from_json(BUNDLED_JSON).expect("the bundled Gavel data parses")
    }

    /// Reads the consolidated worker types of a throughputs file.
    pub fn from_path(path: impl AsRef<Path>) -> Result<GavelThroughputs, CostError> {
        GavelThroughputs::from_path_with(path, Workers::Consolidated)
    }

    /// Reads a throughputs file, keeping the chosen worker types.
    pub fn from_path_with(
        path: impl AsRef<Path>,
        workers: Workers,
    ) -> Result<GavelThroughputs, CostError> {
        let path = path.as_ref();
        let io = |e: std::io::Error| CostError::Io {
            file: path.display().to_string(),
            message: e.to_string(),
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let mut text = String::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(io)?;
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(CostError::Io {
                file: path.display().to_string(),
                message: format!("larger than {MAX_FILE_BYTES} bytes; not a throughputs file"),
            });
        }
        GavelThroughputs::from_json_with(&text, workers)
    }

    /// Parses a throughputs document, consolidated worker types only.
    pub fn from_json(text: &str) -> Result<GavelThroughputs, CostError> {
        GavelThroughputs::from_json_with(text, Workers::Consolidated)
    }

    /// Parses a throughputs document, keeping the chosen worker types.
    pub fn from_json_with(text: &str, workers: Workers) -> Result<GavelThroughputs, CostError> {
        let doc: Value = serde_json::from_str(text).map_err(|e| CostError::Syntax {
            path: ".".into(),
            message: e.to_string(),
        })?;
        let top = as_object(&doc, ".")?;
        let selected: Vec<(&String, &Map<String, Value>)> = top
            .iter()
            .filter(|(name, _)| workers == Workers::All || !name.ends_with("_unconsolidated"))
            .map(|(name, v)| Ok((name, as_object(v, name)?)))
            .collect::<Result<_, CostError>>()?;
        if selected.is_empty() {
            return Err(CostError::Syntax {
                path: ".".into(),
                message: "no worker type to import".into(),
            });
        }

        // Job types in order of first appearance, rows and partners alike.
        let mut job_types: Vec<JobType> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut intern = |key: &str, path: &str| -> Result<usize, CostError> {
            if let Some(&i) = index.get(key) {
                return Ok(i);
            }
            let job = parse_job_key(key, path)?;
            if let Some(i) = job_types.iter().position(|j| *j == job) {
                // The same job type spelled differently (spacing): one entry.
                index.insert(key.to_string(), i);
                return Ok(i);
            }
            job_types.push(job);
            index.insert(key.to_string(), job_types.len() - 1);
            Ok(job_types.len() - 1)
        };
        for (worker, rows) in &selected {
            for (key, row) in rows.iter() {
                intern(key, worker)?;
                let row_path = format!("{worker}[{key:?}]");
                for partner in as_object(row, &row_path)?.keys().filter(|k| *k != "null") {
                    intern(partner, &row_path)?;
                }
            }
        }

        let (w, j) = (selected.len(), job_types.len());
        let mut solo = Array2::from_elem((w, j), f64::NAN);
        let mut pair = Array3::from_elem((w, j, j), f64::NAN);
        // The co-runner's throughput as written in this row, used where its own row lacks us.
        let mut reverse: Vec<(usize, usize, usize, f64)> = Vec::new();
        for (g, (worker, rows)) in selected.iter().enumerate() {
            for (key, row) in rows.iter() {
                let a = index[key.as_str()];
                let row_path = format!("{worker}[{key:?}]");
                for (partner, value) in as_object(row, &row_path)? {
                    let path = format!("{row_path}[{partner:?}]");
                    if partner == "null" {
                        let v = throughput(value, &path)?;
                        solo[[g, a]] = if v > 0.0 { v } else { f64::NAN };
                        continue;
                    }
                    let b = index[partner.as_str()];
                    let (own, other) = pair_value(value, &path)?;
                    pair[[g, a, b]] = own;
                    reverse.push((g, b, a, other));
                }
            }
        }
        // A row's own throughput wins over the partner's row (the file is symmetric anyway).
        for (g, b, a, other) in reverse {
            if pair[[g, b, a]].is_nan() {
                pair[[g, b, a]] = other;
            }
        }
        let names = selected.iter().map(|(n, _)| (*n).clone()).collect();
        Ok(GavelThroughputs {
            inputs: CostInputs::new(names, job_types, solo, pair)?,
        })
    }

    /// The worker (GPU) types, in file order.
    pub fn worker_types(&self) -> &[String] {
        self.inputs.gpu_types()
    }
    /// The job types, in order of first appearance.
    pub fn job_types(&self) -> &[JobType] {
        self.inputs.job_types()
    }
    /// Index of a worker type by name.
    pub fn worker_index(&self, name: &str) -> Option<usize> {
        self.inputs.gpu_index(name)
    }
    /// Index of a job type.
    pub fn job_index(&self, job: &JobType) -> Option<usize> {
        self.inputs.job_index(job)
    }
    /// Solo throughput of `job` on `worker`; `None` where it cannot run or has no entry.
    pub fn solo(&self, worker: usize, job: usize) -> Option<f64> {
        self.inputs.solo(worker, job)
    }
    /// `(own, other)` throughputs of `a` and `b` sharing a `worker` GPU; `None` when the pair
    /// cannot run together (`[0, 0]`) or was not measured (see [`colocation`](Self::colocation)
    /// to tell the two apart).
    pub fn pair(&self, worker: usize, a: usize, b: usize) -> Option<(f64, f64)> {
        match self.inputs.colocation(worker, a, b) {
            Colocation::Measured { own, other } => Some((own, other)),
            Colocation::CannotRun | Colocation::Unmeasured => None,
        }
    }
    /// What the file says about `a` beside `b` on `worker`.
    pub fn colocation(&self, worker: usize, a: usize, b: usize) -> Colocation {
        self.inputs.colocation(worker, a, b)
    }
    /// The data as general cost inputs.
    pub fn inputs(&self) -> &CostInputs {
        &self.inputs
    }
    /// The data as general cost inputs, by value.
    pub fn into_inputs(self) -> CostInputs {
        self.inputs
    }
}

fn as_object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, CostError> {
    v.as_object().ok_or_else(|| CostError::Syntax {
        path: path.to_string(),
        message: format!("expected an object, got {v}"),
    })
}

fn throughput(v: &Value, path: &str) -> Result<f64, CostError> {
    let x = v.as_f64().ok_or_else(|| CostError::Value {
        path: path.to_string(),
        rule: "must be a number (steps per second)".into(),
        got: v.to_string(),
    })?;
    if !x.is_finite() || x < 0.0 {
        return Err(CostError::Value {
            path: path.to_string(),
            rule: "must be finite and >= 0".into(),
            got: v.to_string(),
        });
    }
    Ok(x)
}

fn pair_value(v: &Value, path: &str) -> Result<(f64, f64), CostError> {
    let bad = || CostError::Value {
        path: path.to_string(),
        rule: "must be a pair [own, other] of throughputs".into(),
        got: v.to_string(),
    };
    let items = v.as_array().ok_or_else(bad)?;
    let [own, other] = items.as_slice() else {
        return Err(bad());
    };
    let (own, other) = (
        throughput(own, &format!("{path}[0]"))?,
        throughput(other, &format!("{path}[1]"))?,
    );
    if (own == 0.0) != (other == 0.0) {
        return Err(CostError::Value {
            path: path.to_string(),
            rule: "must be [0, 0] (cannot run together) or two throughputs > 0".into(),
            got: v.to_string(),
        });
    }
    Ok((own, other))
}

/// Parses `('ResNet-18 (batch size 16)', 1)` or `('A3C', 1)`.
pub fn parse_job_key(key: &str, path: &str) -> Result<JobType, CostError> {
    let err = |rule: &str| CostError::Key {
        path: path.to_string(),
        key: key.to_string(),
        rule: rule.to_string(),
    };
    let inner = key
        .trim()
        .strip_prefix("('")
        .and_then(|k| k.strip_suffix(')'))
        .ok_or_else(|| err("must look like ('Model (batch size B)', scale_factor)"))?;
    let (model, sf) = inner
        .rsplit_once("',")
        .ok_or_else(|| err("must end with ', scale_factor)"))?;
    let scale_factor: u32 = sf
        .trim()
        .parse()
        .map_err(|_| err("must end with an integer scale factor"))?;
    if scale_factor == 0 {
        return Err(err("must have a scale factor >= 1"));
    }
    let (family, batch_size) = match model
        .strip_suffix(')')
        .and_then(|m| m.rsplit_once(" (batch size "))
    {
        Some((family, b)) => {
            let b: u32 = b
                .trim()
                .parse()
                .map_err(|_| err("must have an integer batch size"))?;
            if b == 0 {
                return Err(err("must have a batch size >= 1"));
            }
            (family.trim(), Some(b))
        }
        None => (model.trim(), None),
    };
    if family.is_empty() {
        return Err(err("must name a model"));
    }
    Ok(JobType {
        family: family.to_string(),
        batch_size,
        scale_factor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse() {
        let j = parse_job_key("('ResNet-18 (batch size 16)', 4)", "v100").unwrap();
        assert_eq!(
            j,
            JobType {
                family: "ResNet-18".into(),
                batch_size: Some(16),
                scale_factor: 4
            }
        );
        let j = parse_job_key("('A3C', 1)", "v100").unwrap();
        assert_eq!(
            j,
            JobType {
                family: "A3C".into(),
                batch_size: None,
                scale_factor: 1
            }
        );
        for bad in [
            "A3C",
            "('A3C')",
            "('A3C', x)",
            "('A3C', 0)",
            "('', 1)",
            "('LM (batch size y)', 1)",
        ] {
            let e = parse_job_key(bad, "k80").unwrap_err();
            assert!(matches!(e, CostError::Key { .. }), "{bad}: {e}");
        }
    }

    #[test]
    fn reverse_direction_is_filled_from_the_partner_row() {
        let text = r#"{"k80": {"('A', 1)": {"null": 4.0, "('B', 1)": [2.0, 1.5]},
                                "('B', 1)": {"null": 3.0}}}"#;
        let g = GavelThroughputs::from_json(text).unwrap();
        assert_eq!(g.pair(0, 0, 1), Some((2.0, 1.5)));
        assert_eq!(g.pair(0, 1, 0), Some((1.5, 2.0)));
    }
}
