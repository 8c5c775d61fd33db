//! The instance manifest: `index.json` beside a library of instance files (`instances/index.json`
//! for the shipped ones; docs/format.md, "Instance manifest"), listing every instance with its
//! family, size, status, reference optimum and how that optimum was proven. `stsfair bench`
//! checks every answer against it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::bench::Outcome;
use crate::instance::Instance;
use crate::solution::{Status, objectives_agree};

/// The manifest's file name, in the folder of the instances it lists.
pub const MANIFEST_FILE: &str = "index.json";

/// The manifest's `format` value.
pub const MANIFEST_FORMAT: &str = "stsfair-index/1";

/// Proof `ilp-exact`: the ILP (HiGHS) with both MIP gaps 0, `mip_feasibility_tolerance` 1e-9 and
/// presolve off answered this status and objective.
pub const PROOF_ILP: &str = "ilp-exact";

/// Proof `dp-verified`: the DP answered this status and objective, and `verify` accepted its
/// answer (for an infeasible round: its certificate).
pub const PROOF_DP: &str = "dp-verified";

/// Why a manifest cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The file cannot be read.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a manifest (JSON path and rule).
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong, with the JSON path.
        message: String,
    },
}

/// A manifest: every instance of a folder and its reference answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always [`MANIFEST_FORMAT`].
    pub format: String,
    /// The instances, by file name.
    pub instances: Vec<Entry>,
}

/// One instance of a [`Manifest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The file name, relative to the manifest's folder.
    pub file: String,
    /// The instance's `name`.
    pub name: String,
    /// Where it comes from: `hand`, `synth`, `gavel`, `gavel-multi`, `gavel-round` (a later
    /// round of a Gavel instance) or `other`.
    pub family: String,
    /// Jobs.
    pub jobs: usize,
    /// GPU types.
    pub gpu_types: usize,
    /// GPUs, all types together.
    pub gpus: u64,
    /// `optimal` or `infeasible`.
    pub status: String,
    /// The optimum (null when infeasible).
    pub objective: Option<f64>,
    /// How the status and optimum were proven: [`PROOF_ILP`], [`PROOF_DP`], or both.
    pub proven_by: Vec<String>,
}

/// What an answer is against the manifest.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// Same status and, when optimal, the same objective (1e-9 relative).
    Agrees,
    /// The answer contradicts the manifest: why.
    Differs(String),
    /// The answer proves nothing either way (a solver failed, or stopped at a limit with an
    /// objective at most the optimum).
    Undecided,
}

/// The family of an instance by its name (see [`Entry::family`]).
pub fn family(name: &str) -> &'static str {
    let round = name
        .strip_prefix("round")
        .map(|r| r.trim_start_matches(|c: char| c.is_ascii_digit()))
        .is_some_and(|r| r.starts_with("-gavel-"));
    if name.starts_with("hand-") {
        "hand"
    } else if name.starts_with("synth-") {
        "synth"
    } else if name.starts_with("gavel-multi-") {
        "gavel-multi"
    } else if name.starts_with("gavel-") {
        "gavel"
    } else if round {
        "gavel-round"
    } else {
        "other"
    }
}

impl Manifest {
    /// Reads a manifest file.
    pub fn from_path(path: &Path) -> Result<Manifest, ManifestError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: shown.clone(),
            source,
        })?;
        Manifest::from_json(&text).map_err(|message| ManifestError::Invalid {
            path: shown,
            message,
        })
    }

    /// Parses a manifest; the error names the JSON path and the rule broken.
    pub fn from_json(text: &str) -> Result<Manifest, String> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let manifest: Manifest = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            format!("at {path}: {}", e.inner())
        })?;
        if manifest.format != MANIFEST_FORMAT {
            return Err(format!(
                "at format: must be {MANIFEST_FORMAT:?} (got {:?})",
                manifest.format
            ));
        }
        for (i, e) in manifest.instances.iter().enumerate() {
            match (e.status.as_str(), e.objective) {
                ("optimal", Some(x)) if x.is_finite() => {}
                ("infeasible", None) => {}
                _ => {
                    return Err(format!(
                        "at instances[{i}]: status must be \"optimal\" with a finite objective \
                         or \"infeasible\" with a null one (got {:?}, {:?})",
                        e.status, e.objective
                    ));
                }
            }
        }
        Ok(manifest)
    }

    /// The manifest as written: pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        // Plain data of strings and numbers: serializing cannot fail.
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The entry of a file name (`gavel-8x3-40.json`).
    pub fn entry(&self, file: &str) -> Option<&Entry> {
        self.instances.iter().find(|e| e.file == file)
    }
}

impl Entry {
    /// The size fields an entry of `instance` must hold (file, name, family, jobs, types, GPUs),
    /// with the given answer and proofs.
    pub fn of(
        file: &str,
        instance: &Instance,
        objective: Option<f64>,
        proven_by: Vec<String>,
    ) -> Entry {
        let name = instance.name().unwrap_or(file).to_string();
        Entry {
            file: file.to_string(),
            family: family(&name).to_string(),
            name,
            jobs: instance.jobs().len(),
            gpu_types: instance.gpu_types().len(),
            gpus: instance
                .gpu_types()
                .iter()
                .map(|g| u64::from(g.count()))
                .sum(),
            status: if objective.is_some() {
                "optimal"
            } else {
                "infeasible"
            }
            .to_string(),
            objective,
            proven_by,
        }
    }

    /// Whether the entry describes `instance` (jobs, GPU types, GPUs); `Err` says what differs.
    pub fn describes(&self, instance: &Instance) -> Result<(), String> {
        let gpus: u64 = instance
            .gpu_types()
            .iter()
            .map(|g| u64::from(g.count()))
            .sum();
        let have = (instance.jobs().len(), instance.gpu_types().len(), gpus);
        let listed = (self.jobs, self.gpu_types, self.gpus);
        if have == listed {
            Ok(())
        } else {
            Err(format!(
                "the manifest lists {} jobs, {} GPU types, {} GPUs; the file has {}, {}, {}",
                listed.0, listed.1, listed.2, have.0, have.1, have.2
            ))
        }
    }

    /// An answer against the entry (the agreement rule of [`crate::bench`]).
    pub fn check(&self, outcome: &Outcome) -> Check {
        let Outcome::Solved {
            status, objective, ..
        } = outcome
        else {
            return Check::Undecided;
        };
        let answer = match (status, objective) {
            (Status::Infeasible { .. }, _) => "infeasible".to_string(),
            (s, Some(x)) => format!("{} {x}", s.as_str()),
            (s, None) => s.as_str().to_string(),
        };
        let listed = match self.objective {
            Some(x) => format!("optimal {x}"),
            None => "infeasible".to_string(),
        };
        let differs = || Check::Differs(format!("answered {answer}, the manifest says {listed}"));
        match (status, objective, self.objective) {
            (Status::Infeasible { .. }, _, None) => Check::Agrees,
            (Status::Infeasible { .. }, _, Some(_)) => differs(),
            (_, _, None) => differs(),
            (Status::Optimal, Some(x), Some(best)) if objectives_agree(best, *x) => Check::Agrees,
            (Status::Optimal, _, Some(_)) => differs(),
            // Feasible at a limit: only an objective above the optimum contradicts it.
            (Status::Feasible { .. }, Some(x), Some(best))
                if *x > best && !objectives_agree(best, *x) =>
            {
                differs()
            }
            (Status::Feasible { .. }, _, Some(_)) => Check::Undecided,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Infeasibility;
    use crate::bench::tests::solved;

    fn entry(objective: Option<f64>) -> Entry {
        Entry {
            file: "a.json".into(),
            name: "a".into(),
            family: "hand".into(),
            jobs: 1,
            gpu_types: 1,
            gpus: 1,
            status: if objective.is_some() {
                "optimal"
            } else {
                "infeasible"
            }
            .into(),
            objective,
            proven_by: vec![PROOF_DP.into()],
        }
    }

    #[test]
    fn answers_are_checked_by_the_agreement_rule() {
        let inf = || Status::Infeasible {
            reason: Infeasibility::Reported("r".into()),
        };
        let opt = entry(Some(2.0));
        assert_eq!(
            opt.check(&solved(Status::Optimal, Some(2.0 + 1e-12))),
            Check::Agrees
        );
        assert!(matches!(
            opt.check(&solved(Status::Optimal, Some(2.1))),
            Check::Differs(m) if m == "answered optimal 2.1, the manifest says optimal 2"
        ));
        assert!(matches!(opt.check(&solved(inf(), None)), Check::Differs(_)));
        let gap = Status::Feasible { gap: 0.1 };
        assert_eq!(opt.check(&solved(gap.clone(), Some(1.9))), Check::Undecided);
        assert!(matches!(
            opt.check(&solved(gap, Some(2.5))),
            Check::Differs(_)
        ));
        let none = entry(None);
        assert_eq!(none.check(&solved(inf(), None)), Check::Agrees);
        assert!(matches!(
            none.check(&solved(Status::Optimal, Some(1.0))),
            Check::Differs(_)
        ));
        let failed = Outcome::Failed(crate::SolveError::Backend {
            solver: "x",
            message: "m".into(),
        });
        assert_eq!(opt.check(&failed), Check::Undecided);
    }

    #[test]
    fn families_follow_the_names() {
        assert_eq!(family("hand-infeasible"), "hand");
        assert_eq!(family("synth-1type-tight-200"), "synth");
        assert_eq!(family("gavel-multi-36x3-300"), "gavel-multi");
        assert_eq!(family("gavel-100x3-1000-s7"), "gavel");
        assert_eq!(family("round4-gavel-36x3-300"), "gavel-round");
        assert_eq!(family("mine"), "other");
    }

    #[test]
    fn bad_manifests_name_the_path_and_rule() {
        let e = Manifest::from_json(r#"{"format": "x", "instances": []}"#).unwrap_err();
        assert!(e.contains("at format"), "{e}");
        let e =
            Manifest::from_json(r#"{"format": "stsfair-index/1", "instances": [{}]}"#).unwrap_err();
        assert!(e.contains("instances[0]"), "{e}");
        let mut m = Manifest {
            format: MANIFEST_FORMAT.into(),
            instances: vec![entry(Some(1.5))],
        };
        assert_eq!(Manifest::from_json(&m.to_json()), Ok(m.clone()));
        m.instances[0].status = "infeasible".into();
        let e = Manifest::from_json(&m.to_json()).unwrap_err();
        assert!(e.contains("at instances[0]: status"), "{e}");
    }
}
