//! Round instances: the cluster, the jobs with their predicted co-location times, and the
//! fairness parameters (MODEL.md sections 1-3; the file format is FORMAT.md, `stsfair/1`).
//!
//! An [`Instance`] can only be obtained through validation, whether it comes from a file
//! ([`Instance::from_json`], [`Instance::from_path`]) or is built in code ([`InstanceBuilder`]):
//! both paths fill the same raw document and run the same checks, so a scheduler that links the
//! crate gets exactly the errors a file user gets. Every error names the offending value by its
//! JSON path (`jobs[3].times[1].sec_per_iter`) and the rule it broke.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};

/// Largest `count` of GPUs of one type (FORMAT.md).
pub const MAX_COUNT: u64 = 1_000_000;
/// Largest number of `units` per GPU (FORMAT.md).
pub const MAX_UNITS: u64 = 1_024;
/// Largest number of `workers` of one job (FORMAT.md).
pub const MAX_WORKERS: u64 = 1_024;
/// Largest instance file the crate reads, in bytes: past this the file is refused before it is
/// read, so a wrong path cannot exhaust memory.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// The format tag of instance files.
pub const FORMAT_TAG: &str = "stsfair/1";

/// An invalid instance: the JSON path of the bad value and the rule it breaks.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InstanceError {
    /// The document is not JSON of the expected shape (syntax, wrong type, unknown or repeated
    /// field, `null`, a non-integer where an integer is required, a number out of range).
    #[error("{path}: {message}")]
    Syntax {
        /// JSON path of the value (`.` for the document itself).
        path: String,
        /// What the JSON reader found wrong.
        message: String,
    },
    /// A value of the right type breaks a rule of FORMAT.md or MODEL.md.
    #[error("{path} {rule} (got {got})")]
    Rule {
        /// JSON path of the value, e.g. `jobs[3].times[1].sec_per_iter`.
        path: String,
        /// The rule, phrased to follow the path: "must be > 0".
        rule: String,
        /// The offending value as written.
        got: String,
    },
    /// The file could not be read.
    #[error("cannot read {file}: {message}")]
    Io {
        /// The file.
        file: String,
        /// The operating system's reason.
        message: String,
    },
}

impl InstanceError {
    pub(crate) fn rule(
        path: impl Into<String>,
        rule: impl Into<String>,
        got: impl fmt::Display,
    ) -> Self {
        InstanceError::Rule {
            path: path.into(),
            rule: rule.into(),
            got: clip(got.to_string()),
        }
    }

    pub(crate) fn syntax(path: String, message: String) -> Self {
        InstanceError::Syntax {
            path: clip(path),
            message: clip(message),
        }
    }
}

/// Longest path, message or value an error quotes, in characters.
const MAX_QUOTE: usize = 200;

/// Shortens `s` to its first and last `MAX_QUOTE / 2` characters around a note of what was cut:
/// an error must stay readable when the offending value is a 50 MB string (an id, an unknown
/// key), and must not keep that string alive.
fn clip(s: String) -> String {
    let chars = s.chars().count();
    if chars <= MAX_QUOTE {
        return s;
    }
    let half = MAX_QUOTE / 2;
    let head: String = s.chars().take(half).collect();
    let tail: String = s.chars().skip(chars - half).collect();
    format!(
        "{head} ... [{} characters cut] ... {tail}",
        chars - MAX_QUOTE
    )
}

/// What a JSON reader's error says, in the words of serde_json but where the text holds a
/// non-finite number (see [`not_json_number`]).
pub(crate) fn json_message(text: &str, e: &serde_json::Error) -> String {
    match not_json_number(text, e.line(), e.column()) {
        Some(word) => format!(
            "{word} is not a JSON number (numbers must be finite) at line {} column {}",
            e.line(),
            e.column()
        ),
        None => e.to_string(),
    }
}

/// The word at `line`, `column` (serde_json's 1-based position of a syntax error) when it is one
/// of the non-finite numbers that JavaScript, Python's `json.dumps` and others write (`NaN`,
/// `Infinity`, `-Infinity`) and JSON does not have: serde_json says only "expected value" there,
/// which does not tell a Python user that their `float("nan")` is the cause.
pub(crate) fn not_json_number(text: &str, line: usize, column: usize) -> Option<&'static str> {
    let start = text.split('\n').nth(line.checked_sub(1)?)?;
    let (before, rest) = start.split_at_checked(column.checked_sub(1)?)?;
    // After a minus sign serde_json points at what follows it.
    match rest {
        _ if rest.starts_with("NaN") => Some("NaN"),
        _ if rest.starts_with("Infinity") && before.ends_with('-') => Some("-Infinity"),
        _ if rest.starts_with("Infinity") => Some("Infinity"),
        _ => None,
    }
}

/// A number as an error quotes it: plain when short (`-2`, `0.25`), in exponent form otherwise, so
/// that `1e308` is not written out as 309 digits and `5e-324` as 324 zeros.
pub(crate) fn num(x: f64) -> String {
    let plain = x.to_string();
    if plain.len() <= 24 {
        plain
    } else {
        format!("{x:e}")
    }
}

/// Fairness parameters (MODEL.md section 3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Fairness {
    /// Fairness level lambda in (0, 1].
    pub lambda: f64,
    /// Allowed debt Delta >= 0, in rounds.
    pub max_debt: f64,
    /// Credit bound B >= 0, in rounds.
    pub credit: f64,
}

impl Fairness {
    /// Checks the ranges of MODEL.md section 3 (lambda in (0, 1], Delta and B finite and >= 0);
    /// the error names the field as an instance file has it (`fairness.max_debt`).
    pub fn check(&self) -> Result<(), InstanceError> {
        check_fairness(self)
    }
}

impl Default for Fairness {
    fn default() -> Self {
        Fairness {
            lambda: 1.0,
            max_debt: 1.0,
            credit: 1.0,
        }
    }
}

/// One GPU type: `count` GPUs of `units` units each, cut into slots of `slot_sizes`.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuType {
    name: String,
    count: u32,
    units: u32,
    slot_sizes: Vec<u32>,
}

impl GpuType {
    /// The type's name, unique in the instance.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// n_k, the number of physical GPUs.
    pub fn count(&self) -> u32 {
        self.count
    }
    /// U_k, the units of one GPU.
    pub fn units(&self) -> u32 {
        self.units
    }
    /// S_k, the divisibility ladder of slot sizes (ascending).
    pub fn slot_sizes(&self) -> &[u32] {
        &self.slot_sizes
    }
    /// C_k = n_k * U_k, the type's capacity in units.
    pub fn capacity(&self) -> u64 {
        u64::from(self.count) * u64::from(self.units)
    }
}

/// A predicted co-location time as given in the instance: seconds per iteration of the whole job
/// when each worker runs in a `slot`-unit slot of a GPU of type `gpu` (an index into
/// [`Instance::gpu_types`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlotTime {
    /// Index of the GPU type.
    pub gpu: usize,
    /// Slot size in units, one of the type's `slot_sizes`.
    pub slot: u32,
    /// tau, seconds per iteration (> 0, finite).
    pub sec_per_iter: f64,
}

/// An option o = (k, s) that can fit on its type (`workers * slot <= C_k`), with its throughput.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobOption {
    /// Index of the GPU type k.
    pub gpu: usize,
    /// Slot size s in units.
    pub slot: u32,
    /// Units used, d_j * s.
    pub units: u64,
    /// theta = 1 / tau, iterations per second.
    pub throughput: f64,
}

/// A job of the round.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    id: String,
    weight: f64,
    workers: u32,
    deficit: f64,
    times: Vec<SlotTime>,
    options: Vec<JobOption>,
}

impl Job {
    /// The job's id, unique in the instance.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// w_j > 0.
    pub fn weight(&self) -> f64 {
        self.weight
    }
    /// d_j >= 1.
    pub fn workers(&self) -> u32 {
        self.workers
    }
    /// D_j, the fairness deficit in rounds.
    pub fn deficit(&self) -> f64 {
        self.deficit
    }
    /// Every time entry as given, including those that can never fit.
    pub fn times(&self) -> &[SlotTime] {
        &self.times
    }
    /// The options that can fit (MODEL.md section 2), in the order of `times`.
    pub fn options(&self) -> &[JobOption] {
        &self.options
    }
}

/// A validated round instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    name: Option<String>,
    fairness: Fairness,
    gpu_types: Vec<GpuType>,
    jobs: Vec<Job>,
}

impl Instance {
    /// Starts an instance in code; [`InstanceBuilder::build`] runs the file format's checks.
    pub fn builder() -> InstanceBuilder {
        InstanceBuilder::default()
    }

    /// Parses and validates an instance document.
    pub fn from_json(text: &str) -> Result<Instance, InstanceError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let raw: RawInstance = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
            let path = e.path().to_string();
            InstanceError::syntax(path, json_message(text, e.inner()))
        })?;
        // serde stops reading after the first value: text after it must be refused here.
        de.end()
            .map_err(|e| InstanceError::syntax(".".into(), e.to_string()))?;
        check_objects(text)?;
        raw.validate()
    }

    /// Reads, parses and validates an instance file (at most [`MAX_FILE_BYTES`]).
    pub fn from_path(path: impl AsRef<Path>) -> Result<Instance, InstanceError> {
        let text = read_limited(path.as_ref())?;
        Instance::from_json(&text)
    }

    /// The instance's name, if it has one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    /// The fairness parameters.
    pub fn fairness(&self) -> Fairness {
        self.fairness
    }
    /// The GPU types, in file order.
    pub fn gpu_types(&self) -> &[GpuType] {
        &self.gpu_types
    }
    /// The jobs, in file order.
    pub fn jobs(&self) -> &[Job] {
        &self.jobs
    }
    /// Index of the GPU type called `name`.
    pub fn gpu_index(&self, name: &str) -> Option<usize> {
        self.gpu_types.iter().position(|g| g.name == name)
    }

    /// The instance as a `stsfair/1` document (pretty-printed JSON). Every time entry is written,
    /// including those dropped as options because they can never fit.
    pub fn to_json(&self) -> String {
        let raw = RawInstance {
            format: FORMAT_TAG.to_string(),
            name: self.name.clone(),
            fairness: Some(RawFairness {
                lambda: Some(self.fairness.lambda),
                max_debt: Some(self.fairness.max_debt),
                credit: Some(self.fairness.credit),
            }),
            gpu_types: self
                .gpu_types
                .iter()
                .map(|g| RawGpuType {
                    name: g.name.clone(),
                    count: u64::from(g.count),
                    units: u64::from(g.units),
                    slot_sizes: g.slot_sizes.iter().map(|&s| u64::from(s)).collect(),
                })
                .collect(),
            jobs: self
                .jobs
                .iter()
                .map(|j| RawJob {
                    id: j.id.clone(),
                    weight: Some(j.weight),
                    workers: Some(u64::from(j.workers)),
                    deficit: Some(j.deficit),
                    times: j
                        .times
                        .iter()
                        .map(|t| RawTime {
                            gpu: self.gpu_types[t.gpu].name.clone(),
                            slot: u64::from(t.slot),
                            sec_per_iter: t.sec_per_iter,
                        })
                        .collect(),
                })
                .collect(),
        };
        // Serializing plain structs of strings and finite numbers cannot fail.
        serde_json::to_string_pretty(&raw).unwrap_or_default()
    }

    /// A copy with other fairness parameters, validated like a file's.
    pub fn with_fairness(&self, fairness: Fairness) -> Result<Instance, InstanceError> {
        check_fairness(&fairness)?;
        Ok(Instance {
            fairness,
            ..self.clone()
        })
    }

    /// A copy with the job deficits replaced (one per job, in order), validated like a file's.
    pub fn with_deficits(&self, deficits: &[f64]) -> Result<Instance, InstanceError> {
        if deficits.len() != self.jobs.len() {
            return Err(InstanceError::rule(
                "jobs",
                format!("must have one deficit per job ({} jobs)", self.jobs.len()),
                deficits.len(),
            ));
        }
        let mut out = self.clone();
        for (i, (job, &d)) in out.jobs.iter_mut().zip(deficits).enumerate() {
            if !d.is_finite() {
                return Err(InstanceError::rule(
                    format!("jobs[{i}].deficit"),
                    "must be finite",
                    num(d),
                ));
            }
            job.deficit = d;
        }
        Ok(out)
    }
}

/// Reads a file of at most [`MAX_FILE_BYTES`] into a string.
pub(crate) fn read_limited(path: &Path) -> Result<String, InstanceError> {
    read_text_limited(path, MAX_FILE_BYTES).map_err(|e| InstanceError::Io {
        file: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Reads the UTF-8 text of the file at `path`, refusing one of more than `limit` bytes with an
/// error of kind [`std::io::ErrorKind::InvalidData`] that names the limit. A regular file is
/// refused by its size before anything is read; anything else (a pipe, a device such as
/// `/dev/zero`, a process substitution) is read up to one byte past the limit, so that no input
/// can make the reader hold more than `limit + 1` bytes. O(min(size, limit)) time and memory.
///
/// ```
/// let dir = std::env::temp_dir().join("stsfair-doc-read-text-limited");
/// std::fs::write(&dir, "0123456789").unwrap();
/// assert_eq!(stsfair::instance::read_text_limited(&dir, 10).unwrap(), "0123456789");
/// let err = stsfair::instance::read_text_limited(&dir, 9).unwrap_err();
/// assert!(err.to_string().contains("more than the limit of 9 bytes"));
/// # std::fs::remove_file(&dir).unwrap();
/// ```
pub fn read_text_limited(path: &Path, limit: u64) -> std::io::Result<String> {
    use std::io::Read;
    let too_large = |what: String| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{what}, more than the limit of {limit} bytes"),
        )
    };
    let mut file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() && meta.len() > limit {
        return Err(too_large(format!("file is {} bytes", meta.len())));
    }
    // Read in chunks into a buffer that grows by doubling up to `limit + 1` bytes and no
    // further (`read_to_end`'s own doubling would reserve up to twice that).
    let most = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
    let mut bytes: Vec<u8> = Vec::new();
    let known = usize::try_from(meta.len()).unwrap_or(0).min(most);
    bytes
        .try_reserve_exact(known)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::OutOfMemory, e.to_string()))?;
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let want = chunk.len().min(most - bytes.len());
        if want == 0 {
            break;
        }
        let got = match file.read(&mut chunk[..want]) {
            Ok(0) => break,
            Ok(got) => got,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if bytes.capacity() - bytes.len() < got {
            let grown = (bytes.capacity() * 2).max(bytes.len() + got).min(most);
            // An allocation that fails is an error, not an abort (a memory limit below 1 GiB).
            bytes
                .try_reserve_exact(grown - bytes.len())
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::OutOfMemory, e.to_string()))?;
        }
        bytes.extend_from_slice(&chunk[..got]);
    }
    if bytes.len() as u64 > limit {
        return Err(too_large("input goes on".to_string()));
    }
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text ({})", e.utf8_error()),
        )
    })
}

/// Builds an [`Instance`] in code. Nothing is checked until [`build`](InstanceBuilder::build),
/// which runs exactly the checks of a file, with the paths the file would have.
///
/// ```
/// use stsfair::{Instance, JobSpec};
/// let inst = Instance::builder()
///     .gpu_type("v100", 2, 4, &[1, 2, 4])
///     .job(JobSpec::new("a").time("v100", 4, 0.25).time("v100", 2, 0.4))
///     .build()
///     .unwrap();
/// assert_eq!(inst.jobs()[0].options().len(), 2);
/// ```
#[derive(Debug, Clone, Default)]
pub struct InstanceBuilder {
    raw: RawInstance,
}

impl Default for RawInstance {
    fn default() -> Self {
        RawInstance {
            format: FORMAT_TAG.to_string(),
            name: None,
            fairness: None,
            gpu_types: Vec::new(),
            jobs: Vec::new(),
        }
    }
}

impl InstanceBuilder {
    /// Sets the instance's name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.raw.name = Some(name.into());
        self
    }
    /// Sets the fairness parameters.
    pub fn fairness(mut self, f: Fairness) -> Self {
        self.raw.fairness = Some(RawFairness {
            lambda: Some(f.lambda),
            max_debt: Some(f.max_debt),
            credit: Some(f.credit),
        });
        self
    }
    /// Adds a GPU type.
    pub fn gpu_type(
        mut self,
        name: impl Into<String>,
        count: u64,
        units: u64,
        slot_sizes: &[u64],
    ) -> Self {
        self.raw.gpu_types.push(RawGpuType {
            name: name.into(),
            count,
            units,
            slot_sizes: slot_sizes.to_vec(),
        });
        self
    }
    /// Adds a job.
    pub fn job(mut self, job: JobSpec) -> Self {
        self.raw.jobs.push(job.raw);
        self
    }
    /// Validates and returns the instance.
    pub fn build(self) -> Result<Instance, InstanceError> {
        self.raw.validate()
    }
}

/// A job for [`InstanceBuilder::job`]: weight 1, one worker and deficit 0 unless set.
#[derive(Debug, Clone)]
pub struct JobSpec {
    raw: RawJob,
}

impl JobSpec {
    /// A job with this id and no times yet.
    pub fn new(id: impl Into<String>) -> Self {
        JobSpec {
            raw: RawJob {
                id: id.into(),
                weight: None,
                workers: None,
                deficit: None,
                times: Vec::new(),
            },
        }
    }
    /// Sets w_j.
    pub fn weight(mut self, w: f64) -> Self {
        self.raw.weight = Some(w);
        self
    }
    /// Sets d_j.
    pub fn workers(mut self, d: u64) -> Self {
        self.raw.workers = Some(d);
        self
    }
    /// Sets D_j.
    pub fn deficit(mut self, d: f64) -> Self {
        self.raw.deficit = Some(d);
        self
    }
    /// Adds a predicted time: `sec_per_iter` seconds per iteration in `slot`-unit slots of `gpu`.
    pub fn time(mut self, gpu: impl Into<String>, slot: u64, sec_per_iter: f64) -> Self {
        self.raw.times.push(RawTime {
            gpu: gpu.into(),
            slot,
            sec_per_iter,
        });
        self
    }
}

// ---- the document as written: serde does the shape (unknown fields, repeated keys, nulls,
// integer literals); `validate` does the rules, naming paths the same way.

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawInstance {
    format: String,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    name: Option<String>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    fairness: Option<RawFairness>,
    gpu_types: Vec<RawGpuType>,
    jobs: Vec<RawJob>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawFairness {
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    lambda: Option<f64>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    max_debt: Option<f64>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    credit: Option<f64>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawGpuType {
    name: String,
    count: u64,
    units: u64,
    slot_sizes: Vec<u64>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawJob {
    id: String,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    weight: Option<f64>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    workers: Option<u64>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    deficit: Option<f64>,
    times: Vec<RawTime>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawTime {
    gpu: String,
    slot: u64,
    sec_per_iter: f64,
}

/// Refuses arrays where FORMAT.md has objects: serde's derived structs also accept a JSON array
/// of the fields in order (`[["v100", 1, 4, [1, 2, 4]]]` as `gpu_types`), which the format does
/// not allow. Runs after the typed parse, so the text is known to be one well-formed document.
///
/// It walks the text with a visitor instead of building a `serde_json::Value`: a value tree
/// takes about 15 times the file's size (665 MB for a 45 MB file of 100,000 jobs), so a file
/// near [`MAX_FILE_BYTES`] would exhaust memory. O(file size) time, O(nesting depth) memory.
fn check_objects(text: &str) -> Result<(), InstanceError> {
    const TIME: Shape = Shape::Object(&[]);
    const JOB: Shape = Shape::Object(&[("times", Shape::List(&TIME))]);
    const GPU: Shape = Shape::Object(&[]);
    const DOC: Shape = Shape::Object(&[
        ("fairness", Shape::Object(&[])),
        ("gpu_types", Shape::List(&GPU)),
        ("jobs", Shape::List(&JOB)),
    ]);
    let mut found = None;
    let mut de = serde_json::Deserializer::from_str(text);
    let walked = serde::de::DeserializeSeed::deserialize(
        Walk {
            shape: &DOC,
            path: ".".into(),
            found: &mut found,
        },
        &mut de,
    );
    match (found, walked) {
        (Some(path), _) => Err(InstanceError::rule(
            path,
            "must be a JSON object",
            "an array",
        )),
        (None, Err(e)) => Err(InstanceError::syntax(".".into(), e.to_string())),
        (None, Ok(())) => Ok(()),
    }
}

/// Where FORMAT.md requires objects: an object whose listed members have shapes of their own
/// (others are skipped), or a list whose items have a shape.
#[derive(Clone, Copy)]
enum Shape {
    Object(&'static [(&'static str, Shape)]),
    List(&'static Shape),
}

/// Checks one value against a [`Shape`]; on an array where an object belongs, records the path
/// in `found` and stops the walk with an error.
struct Walk<'a> {
    shape: &'a Shape,
    path: String,
    found: &'a mut Option<String>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    // The typed parse has checked every type already: scalars need no look.
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        match self.shape {
            Shape::Object(_) => {
                *self.found = Some(self.path);
                Err(serde::de::Error::custom("an array where an object belongs"))
            }
            Shape::List(item) => {
                let mut i = 0usize;
                loop {
                    let path = format!("{}[{i}]", self.path);
                    if seq
                        .next_element_seed(Walk {
                            shape: item,
                            path,
                            found: &mut *self.found,
                        })?
                        .is_none()
                    {
                        return Ok(());
                    }
                    i += 1;
                }
            }
        }
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let members: &[(&str, Shape)] = match self.shape {
            Shape::Object(members) => members,
            Shape::List(_) => &[],
        };
        while let Some(key) = map.next_key::<String>()? {
            match members.iter().find(|(name, _)| *name == key) {
                Some((_, shape)) => {
                    let path = if self.path == "." {
                        key
                    } else {
                        format!("{}.{key}", self.path)
                    };
                    map.next_value_seed(Walk {
                        shape,
                        path,
                        found: &mut *self.found,
                    })?;
                }
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// An optional field that, when present, must hold a value: `null` is rejected by `T` itself.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

fn check_fairness(f: &Fairness) -> Result<(), InstanceError> {
    if !(f.lambda > 0.0 && f.lambda <= 1.0) {
        return Err(InstanceError::rule(
            "fairness.lambda",
            "must be in (0, 1]",
            num(f.lambda),
        ));
    }
    if !(f.max_debt >= 0.0 && f.max_debt.is_finite()) {
        return Err(InstanceError::rule(
            "fairness.max_debt",
            "must be finite and >= 0",
            num(f.max_debt),
        ));
    }
    if !(f.credit >= 0.0 && f.credit.is_finite()) {
        return Err(InstanceError::rule(
            "fairness.credit",
            "must be finite and >= 0",
            num(f.credit),
        ));
    }
    Ok(())
}

fn check_int(path: &str, value: u64, min: u64, max: u64) -> Result<u32, InstanceError> {
    if value < min || value > max {
        return Err(InstanceError::rule(
            path,
            format!("must be an integer in [{min}, {max}]"),
            value,
        ));
    }
    // max <= MAX_COUNT fits in u32
    u32::try_from(value).map_err(|_| InstanceError::rule(path, "must fit in 32 bits", value))
}

impl RawInstance {
    /// The phases of validation, in the order of the file: the format tag, the fairness
    /// parameters, the GPU types, then the jobs (whose times name the types). The first broken
    /// rule is the error.
    fn validate(self) -> Result<Instance, InstanceError> {
        if self.format != FORMAT_TAG {
            return Err(InstanceError::rule(
                "format",
                format!("must be \"{FORMAT_TAG}\""),
                format!("{:?}", self.format),
            ));
        }
        let fairness = fairness_of(self.fairness.as_ref())?;
        let gpu_types = validate_gpu_types(&self.gpu_types)?;
        let jobs = validate_jobs(self.jobs, &gpu_types)?;
        Ok(Instance {
            name: self.name,
            fairness,
            gpu_types,
            jobs,
        })
    }
}

/// The fairness parameters, each field defaulting to [`Fairness::default`]'s.
fn fairness_of(raw: Option<&RawFairness>) -> Result<Fairness, InstanceError> {
    let d = Fairness::default();
    let fairness = match raw {
        None => d,
        Some(f) => Fairness {
            lambda: f.lambda.unwrap_or(d.lambda),
            max_debt: f.max_debt.unwrap_or(d.max_debt),
            credit: f.credit.unwrap_or(d.credit),
        },
    };
    check_fairness(&fairness)?;
    Ok(fairness)
}

/// The GPU types: at least one, names non-empty and unique, each type valid on its own.
fn validate_gpu_types(raw: &[RawGpuType]) -> Result<Vec<GpuType>, InstanceError> {
    if raw.is_empty() {
        return Err(InstanceError::rule(
            "gpu_types",
            "must list at least one GPU type",
            "[]",
        ));
    }
    let mut gpu_types: Vec<GpuType> = Vec::with_capacity(raw.len());
    for (k, g) in raw.iter().enumerate() {
        let p = format!("gpu_types[{k}]");
        if g.name.is_empty() {
            return Err(InstanceError::rule(
                format!("{p}.name"),
                "must not be empty",
                "\"\"",
            ));
        }
        if gpu_types.iter().any(|o| o.name == g.name) {
            return Err(InstanceError::rule(
                format!("{p}.name"),
                "must be unique among gpu_types",
                format!("{:?}", g.name),
            ));
        }
        let count = check_int(&format!("{p}.count"), g.count, 0, MAX_COUNT)?;
        let units = check_int(&format!("{p}.units"), g.units, 1, MAX_UNITS)?;
        let slot_sizes = validate_slot_sizes(&p, &g.slot_sizes, units)?;
        gpu_types.push(GpuType {
            name: g.name.clone(),
            count,
            units,
            slot_sizes,
        });
    }
    Ok(gpu_types)
}

/// The slot sizes of the GPU type at `p` with `units` units: not empty, strictly ascending,
/// each a multiple of the one before, the largest dividing `units`.
fn validate_slot_sizes(p: &str, raw: &[u64], units: u32) -> Result<Vec<u32>, InstanceError> {
    if raw.is_empty() {
        return Err(InstanceError::rule(
            format!("{p}.slot_sizes"),
            "must not be empty",
            "[]",
        ));
    }
    let mut sizes = Vec::with_capacity(raw.len());
    for (i, &s) in raw.iter().enumerate() {
        let sp = format!("{p}.slot_sizes[{i}]");
        let s = check_int(&sp, s, 1, MAX_UNITS)?;
        if let Some(&prev) = sizes.last() {
            if s <= prev {
                return Err(InstanceError::rule(
                    &sp,
                    format!(
                        "must be larger than the size before it ({prev}): slot_sizes are strictly ascending"
                    ),
                    s,
                ));
            }
            if s % prev != 0 {
                return Err(InstanceError::rule(
                    &sp,
                    format!(
                        "must be a multiple of the size before it ({prev}): slot_sizes form a divisibility ladder"
                    ),
                    s,
                ));
            }
        }
        sizes.push(s);
    }
    // `sizes` is not empty (checked above); `last` rather than an index keeps this free of
    // panics if that check ever moves.
    if let Some(&largest) = sizes.last()
        && !units.is_multiple_of(largest)
    {
        return Err(InstanceError::rule(
            format!("{p}.slot_sizes[{}]", sizes.len() - 1),
            format!("must divide units ({units}): the largest slot size divides the GPU"),
            largest,
        ));
    }
    Ok(sizes)
}

/// The jobs: ids non-empty and unique, the sum of the weights finite, each job valid on its
/// own against `gpu_types`.
fn validate_jobs(raw: Vec<RawJob>, gpu_types: &[GpuType]) -> Result<Vec<Job>, InstanceError> {
    let mut ids = std::collections::HashSet::with_capacity(raw.len());
    let mut jobs = Vec::with_capacity(raw.len());
    let mut weight_sum = 0.0_f64;
    for (j, rj) in raw.into_iter().enumerate() {
        let p = format!("jobs[{j}]");
        if rj.id.is_empty() {
            return Err(InstanceError::rule(
                format!("{p}.id"),
                "must not be empty",
                "\"\"",
            ));
        }
        if !ids.insert(rj.id.clone()) {
            return Err(InstanceError::rule(
                format!("{p}.id"),
                "must be unique among jobs",
                format!("{:?}", rj.id),
            ));
        }
        let weight = rj.weight.unwrap_or(1.0);
        if !(weight > 0.0 && weight.is_finite()) {
            return Err(InstanceError::rule(
                format!("{p}.weight"),
                "must be finite and > 0",
                num(weight),
            ));
        }
        // phi_j = w_j / (sum of w): an infinite sum would make every share 0 and the
        // objective infinite.
        weight_sum += weight;
        if !weight_sum.is_finite() {
            return Err(InstanceError::rule(
                format!("{p}.weight"),
                "must keep the sum of all job weights finite",
                num(weight),
            ));
        }
        let workers = check_int(
            &format!("{p}.workers"),
            rj.workers.unwrap_or(1),
            1,
            MAX_WORKERS,
        )?;
        let deficit = rj.deficit.unwrap_or(0.0);
        if !deficit.is_finite() {
            return Err(InstanceError::rule(
                format!("{p}.deficit"),
                "must be finite",
                num(deficit),
            ));
        }
        let times = validate_times(&p, &rj.times, gpu_types)?;
        let options = times
            .iter()
            .filter_map(|t| {
                let units = u64::from(workers) * u64::from(t.slot);
                (units <= gpu_types[t.gpu].capacity()).then(|| JobOption {
                    gpu: t.gpu,
                    slot: t.slot,
                    units,
                    throughput: 1.0 / t.sec_per_iter,
                })
            })
            .collect();
        jobs.push(Job {
            id: rj.id,
            weight,
            workers,
            deficit,
            times,
            options,
        });
    }
    Ok(jobs)
}

/// The times of the job at `p`: each names a GPU type and one of its slot sizes, at most once,
/// with a time whose reciprocal (the throughput) is finite and positive.
fn validate_times(
    p: &str,
    raw: &[RawTime],
    gpu_types: &[GpuType],
) -> Result<Vec<SlotTime>, InstanceError> {
    let mut times: Vec<SlotTime> = Vec::with_capacity(raw.len());
    for (t, rt) in raw.iter().enumerate() {
        let tp = format!("{p}.times[{t}]");
        let Some(gpu) = gpu_types.iter().position(|g| g.name == rt.gpu) else {
            return Err(InstanceError::rule(
                format!("{tp}.gpu"),
                "must name one of gpu_types",
                format!("{:?}", rt.gpu),
            ));
        };
        let g = &gpu_types[gpu];
        let Some(slot) = g
            .slot_sizes
            .iter()
            .copied()
            .find(|&s| u64::from(s) == rt.slot)
        else {
            return Err(InstanceError::rule(
                format!("{tp}.slot"),
                format!(
                    "must be one of the slot_sizes of {} ({:?})",
                    g.name, g.slot_sizes
                ),
                rt.slot,
            ));
        };
        if !(rt.sec_per_iter > 0.0 && rt.sec_per_iter.is_finite()) {
            return Err(InstanceError::rule(
                format!("{tp}.sec_per_iter"),
                "must be finite and > 0",
                num(rt.sec_per_iter),
            ));
        }
        if times.iter().any(|o| o.gpu == gpu && o.slot == slot) {
            return Err(InstanceError::rule(
                &tp,
                format!(
                    "must be the only entry for ({}, {slot}): at most one time per (gpu, slot)",
                    g.name
                ),
                format!("{}/{slot}", g.name),
            ));
        }
        let throughput = 1.0 / rt.sec_per_iter;
        if !(throughput > 0.0 && throughput.is_finite()) {
            return Err(InstanceError::rule(
                format!("{tp}.sec_per_iter"),
                "must have a finite, non-zero reciprocal (throughput)",
                num(rt.sec_per_iter),
            ));
        }
        times.push(SlotTime {
            gpu,
            slot,
            sec_per_iter: rt.sec_per_iter,
        });
    }
    Ok(times)
}
