//! Gavel's job trace format: one job a line, ten tab-separated fields.
//!
//! Gavel's simulator (stanford-futuredata/gavel, `scheduler/utils.py::parse_trace` and
//! `Job.__str__`) reads and writes traces in this layout, so replaying one of its traces here runs
//! exactly the jobs its own simulator ran:
//!
//! | # | field | example |
//! |---|---|---|
//! | 1 | job type (model and batch size) | `ResNet-18 (batch size 64)` |
//! | 2 | command | `python3 main.py ...` |
//! | 3 | working directory | `image_classification/cifar10` |
//! | 4 | steps flag of the command | `--num_steps` |
//! | 5 | needs a data directory (0 or 1) | `1` |
//! | 6 | total steps | `1646636` |
//! | 7 | scale factor (GPUs of the job) | `1` |
//! | 8 | priority weight, 1e-6 to 1e6 | `1` |
//! | 9 | SLO, -1 for none | `-1.000000` |
//! | 10 | arrival time in seconds | `195.668858` |
//!
//! Parsing is strict: a line with a missing field or a number that does not parse is an error
//! naming the line (1-based) and the field, because a silently skipped job would change every
//! metric of the replay. Empty lines are skipped (Gavel's writer ends the file with a newline).

use std::fmt::Write as _;
use std::num::{IntErrorKind, ParseIntError};
use std::path::{Path, PathBuf};

/// One job of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceJob {
    /// Job type without the scale factor, e.g. `ResNet-18 (batch size 64)`.
    pub job_type: String,
    /// Command line (kept for round trips; the simulator does not run it).
    pub command: String,
    /// Working directory of the command.
    pub working_directory: String,
    /// The command's flag for the number of steps.
    pub steps_flag: String,
    /// Whether the command needs a data directory.
    pub needs_data_dir: bool,
    /// Total steps (iterations) of the job.
    pub total_steps: u64,
    /// Number of GPUs the job uses at once.
    pub scale_factor: u32,
    /// Priority weight w_j (> 0).
    pub priority_weight: f64,
    /// Service-level objective as a multiple of the job's duration, `None` when the trace says -1.
    pub slo: Option<f64>,
    /// Arrival time in seconds from the start of the trace.
    pub arrival: f64,
}

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be read.
    #[error("cannot read trace {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A line does not have exactly ten tab-separated fields.
    #[error("trace line {line}: expected 10 tab-separated fields, got {got}")]
    FieldCount {
        /// 1-based line number.
        line: usize,
        /// Number of fields found.
        got: usize,
    },
    /// A field does not hold a valid value.
    #[error("trace line {line}: field {index} ({field}) {rule} (got {value:?})")]
    BadField {
        /// 1-based line number.
        line: usize,
        /// 1-based field number.
        index: usize,
        /// Field name.
        field: &'static str,
        /// The rule the value breaks.
        rule: &'static str,
        /// The text found.
        value: String,
    },
    /// Arrival times go backwards (Gavel requires them sorted).
    #[error(
        "trace line {line}: arrival time {arrival} is before the previous line's {previous}; arrivals must be sorted"
    )]
    Unsorted {
        /// 1-based line number.
        line: usize,
        /// This line's arrival.
        arrival: f64,
        /// The previous job's arrival.
        previous: f64,
    },
    /// The trace holds no job.
    #[error("the trace holds no job")]
    Empty,
}

const FIELDS: [&str; 10] = [
    "job type",
    "command",
    "working directory",
    "steps flag",
    "needs data dir",
    "total steps",
    "scale factor",
    "priority weight",
    "slo",
    "arrival time",
];

/// The least priority weight a trace line may give. The policies' LPs (HiGHS) and the round
/// problem compare values with absolute tolerances near 1e-9: sts schedules nothing for a lone
/// job of weight 1e-9, and a weight of 1e-100 beside weights of 1 stops gavel-mmf's LP
/// (`HiGHS: Error`). Weights from 1e-6 to 1e6, alone or together, run under every policy
/// (`simulate_refuses_trace_weights_past_1e_6_to_1e6` runs both ends).
pub const MIN_PRIORITY_WEIGHT: f64 = 1e-6;

/// The largest priority weight a trace line may give: a weight of 1e20 beside one of 1 stops
/// sts's paired round (`HiGHS: Error`), and two of 1e308 make a round's sum of weights infinite.
pub const MAX_PRIORITY_WEIGHT: f64 = 1e6;

/// The latest arrival a trace may give, in seconds. Past it the simulation's clock (an `f64`
/// of seconds, advanced by rounds of a few minutes) would lose the rounds' seconds, and an
/// arrival of 1e300 s was accepted and printed as a makespan of 297 digits.
pub const MAX_ARRIVAL: f64 = 1e12;

fn bad(line: usize, index: usize, rule: &'static str, value: &str) -> TraceError {
    TraceError::BadField {
        line,
        index: index + 1,
        field: FIELDS[index],
        rule,
        value: value.to_string(),
    }
}

fn number(line: usize, index: usize, text: &str) -> Result<f64, TraceError> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| bad(line, index, "must be a number", text))?;
    if !value.is_finite() {
        return Err(bad(line, index, "must be finite", text));
    }
    Ok(value)
}

/// A positive integer field; `too_large` is the rule past the type's largest value.
fn positive<T: std::str::FromStr<Err = ParseIntError> + Default + PartialEq>(
    line: usize,
    index: usize,
    text: &str,
    too_large: &'static str,
) -> Result<T, TraceError> {
    match text.trim().parse::<T>() {
        Ok(v) if v != T::default() => Ok(v),
        Err(e) if *e.kind() == IntErrorKind::PosOverflow => Err(bad(line, index, too_large, text)),
        _ => Err(bad(line, index, "must be a positive integer", text)),
    }
}

/// Parses one line (without its newline). `line` is the 1-based number used in errors.
pub fn parse_line(line: usize, text: &str) -> Result<TraceJob, TraceError> {
    let fields: Vec<&str> = text.split('\t').collect();
    if fields.len() != 10 {
        return Err(TraceError::FieldCount {
            line,
            got: fields.len(),
        });
    }
    let job_type = fields[0].trim();
    if job_type.is_empty() {
        return Err(bad(line, 0, "must not be empty", fields[0]));
    }
    let needs_data_dir = match fields[4].trim() {
        "0" => false,
        "1" => true,
        _ => return Err(bad(line, 4, "must be 0 or 1", fields[4])),
    };
    let total_steps: u64 = positive(
        line,
        5,
        fields[5],
        "must be at most 18446744073709551615 (2^64 - 1)",
    )?;
    let scale_factor: u32 = positive(line, 6, fields[6], "must be at most 4294967295 (2^32 - 1)")?;
    let priority_weight = number(line, 7, fields[7])?;
    if priority_weight <= 0.0 {
        return Err(bad(line, 7, "must be > 0", fields[7]));
    }
    if !(MIN_PRIORITY_WEIGHT..=MAX_PRIORITY_WEIGHT).contains(&priority_weight) {
        return Err(bad(line, 7, "must be in [1e-6, 1e6]", fields[7]));
    }
    let slo = number(line, 8, fields[8])?;
    let slo = if slo < 0.0 { None } else { Some(slo) };
    let arrival = number(line, 9, fields[9])?;
    if arrival < 0.0 {
        return Err(bad(line, 9, "must be >= 0", fields[9]));
    }
    if arrival > MAX_ARRIVAL {
        return Err(bad(
            line,
            9,
            "must be at most 1e12 seconds (31,700 years)",
            fields[9],
        ));
    }
    Ok(TraceJob {
        job_type: job_type.to_string(),
        command: fields[1].to_string(),
        working_directory: fields[2].to_string(),
        steps_flag: fields[3].to_string(),
        needs_data_dir,
        total_steps,
        scale_factor,
        priority_weight,
        slo,
        arrival,
    })
}

/// Parses a whole trace. O(total length).
pub fn parse_trace(text: &str) -> Result<Vec<TraceJob>, TraceError> {
    let mut jobs: Vec<TraceJob> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let job = parse_line(i + 1, raw.strip_suffix('\r').unwrap_or(raw))?;
        if let Some(prev) = jobs.last()
            && job.arrival < prev.arrival
        {
            return Err(TraceError::Unsorted {
                line: i + 1,
                arrival: job.arrival,
                previous: prev.arrival,
            });
        }
        jobs.push(job);
    }
    if jobs.is_empty() {
        return Err(TraceError::Empty);
    }
    Ok(jobs)
}

/// Reads and parses a trace file (at most `stsfair::instance::MAX_FILE_BYTES`, 1 GiB, read from
/// whatever the path names: a pipe or a device is not read past the limit).
pub fn read_trace(path: impl AsRef<Path>) -> Result<Vec<TraceJob>, TraceError> {
    let path = path.as_ref();
    let limit = stsfair::instance::MAX_FILE_BYTES;
    let text =
        stsfair::instance::read_text_limited(path, limit).map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    parse_trace(&text)
}

/// Writes jobs in the same format (what Gavel's `Job.__str__` plus the arrival time prints), so
/// that a generated workload can be replayed by Gavel's own simulator.
pub fn write_trace(jobs: &[TraceJob]) -> String {
    let mut out = String::new();
    for j in jobs {
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:.6}\t{:.6}",
            j.job_type,
            j.command,
            j.working_directory,
            j.steps_flag,
            u8::from(j.needs_data_dir),
            j.total_steps,
            j.scale_factor,
            j.priority_weight,
            j.slo.unwrap_or(-1.0),
            j.arrival
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "ResNet-18 (batch size 64)\tpython3 main.py\timage_classification/cifar10\t--num_steps\t1\t1646636\t1\t1\t-1.000000\t195.5";

    #[test]
    fn parses_a_gavel_line() {
        let job = parse_line(1, LINE).unwrap();
        assert_eq!(job.job_type, "ResNet-18 (batch size 64)");
        assert_eq!(job.total_steps, 1_646_636);
        assert_eq!(job.scale_factor, 1);
        assert_eq!(job.slo, None);
        assert_eq!(job.arrival, 195.5);
        let again = parse_trace(&write_trace(std::slice::from_ref(&job))).unwrap();
        assert_eq!(again, vec![job]);
    }

    #[test]
    fn names_line_and_field() {
        let text = format!("{LINE}\n{}", LINE.replace("1646636", "many"));
        let err = parse_trace(&text).unwrap_err().to_string();
        assert_eq!(
            err,
            "trace line 2: field 6 (total steps) must be a positive integer (got \"many\")"
        );
    }
}
