//! The cost inputs as the pairwise co-location model of placement (MODEL.md section 5).
//!
//! Placement ([`stsfair::placement::place`]) asks a [`CoLocation`] model for the predicted slowdown
//! of a job, named by its id, beside another on a GPU type, named by its name. The cost inputs
//! know job *types* and GPU types by index. [`JobSlowdowns`] joins the two: it maps job ids to
//! job types and answers from any [`ThroughputModel`]: the measured table ([`CostInputs`],
//! [`super::GavelThroughputs::into_inputs`]), or a [`super::LearnedPredictor`] that answers the
//! measured pairs from the table and the pairs never measured from its trees.
//!
//! The slowdown of job type `a` beside `b` on GPU type `k` is
//!
//! ```text
//! slowdown(a | b, k) = 1 - pair_throughput(k, a, b) / solo(k, a)
//! ```
//!
//! the fraction of its solo throughput that `a` loses to `b` (Gavel's data measures every pair
//! on a shared whole GPU; 0.46 is the median over the single-GPU pairs on the k80). A pair the
//! table records as unable to run together (`[0, 0]`) is infinite: placement avoids it whenever
//! the units allow. Anything the model has nothing to say about (an id whose job type is
//! unknown, a GPU type the inputs do not have, a pair neither measured nor predicted) is 0, the
//! neutral value: it neither attracts nor repels co-runners.

use std::collections::HashMap;

use super::{Colocation, CostError, CostInputs, JobType, ThroughputModel};
use stsfair::placement::CoLocation;

/// A co-location model over job ids, for placement: each job id is mapped to its job type, and
/// slowdowns come from the wrapped [`ThroughputModel`] (see the module documentation for the
/// formula).
///
/// A job's type is the one given by [`assign`](Self::assign), or else the one inferred from its
/// id: ids that end with `-` and a job type's [`slug`](JobType::slug), as `stsfair gen --gavel`
/// writes them (`job-0017-resnet-18-bs16`). When several slugs end the id (a slug `a3c` and a
/// slug `big-a3c` both end `job-1-big-a3c`) the longest wins; two job types with the same slug
/// resolve to the first in the inputs' order.
///
/// ```
/// use ndarray::{Array2, Array3};
/// use stsfair::CoLocation;
/// use stsfair_costs::{CostInputs, JobSlowdowns, JobType};
///
/// let t = |family: &str| JobType { family: family.into(), batch_size: None, scale_factor: 1 };
/// // One GPU type; a runs at 10 it/s alone and at 6 beside b; b at 4 alone, 3 beside a.
/// let mut pair = Array3::from_elem((1, 2, 2), f64::NAN);
/// pair[[0, 0, 1]] = 6.0;
/// pair[[0, 1, 0]] = 3.0;
/// let solo = Array2::from_shape_vec((1, 2), vec![10.0, 4.0])?;
/// let inputs = CostInputs::new(vec!["v100".into()], vec![t("a"), t("b")], solo, pair)?;
/// let model = JobSlowdowns::new(inputs);
/// assert!((model.slowdown("job-1-a", "job-2-b", "v100") - 0.4).abs() < 1e-12);
/// assert!((model.slowdown("job-2-b", "job-1-a", "v100") - 0.25).abs() < 1e-12);
/// assert_eq!(model.slowdown("job-1-a", "someone-else", "v100"), 0.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct JobSlowdowns<M> {
    model: M,
    /// Job types given explicitly, by job id.
    assigned: HashMap<String, usize>,
    /// (slug, job type index), longest slug first, then input order: the inference order.
    slugs: Vec<(String, usize)>,
}

impl<M: ThroughputModel> JobSlowdowns<M> {
    /// Wraps `model`; job types are inferred from ids until [`assign`](Self::assign) says
    /// otherwise. O(J log J) for J job types.
    pub fn new(model: M) -> JobSlowdowns<M> {
        let mut slugs: Vec<(String, usize)> = model
            .inputs()
            .job_types()
            .iter()
            .enumerate()
            .map(|(i, j)| (j.slug(), i))
            .collect();
        // Stable: equal lengths keep input order.
        slugs.sort_by_key(|s| std::cmp::Reverse(s.0.len()));
        JobSlowdowns {
            model,
            assigned: HashMap::new(),
            slugs,
        }
    }

    /// The wrapped model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// Gives job `job` the job type `job_type` (replacing any earlier assignment or inference).
    /// Errors if the model's inputs do not have that job type.
    pub fn assign(&mut self, job: &str, job_type: &JobType) -> Result<(), CostError> {
        let index =
            self.model
                .inputs()
                .job_index(job_type)
                .ok_or_else(|| CostError::UnknownJobType {
                    job: job.to_string(),
                    job_type: job_type.to_string(),
                })?;
        self.assigned.insert(job.to_string(), index);
        Ok(())
    }

    /// The job type of `job`: assigned, or inferred from the id; `None` if neither.
    /// O(J * |id|) when inferred.
    pub fn job_type(&self, job: &str) -> Option<&JobType> {
        self.job_index(job)
            .and_then(|i| self.model.inputs().job_types().get(i))
    }

    /// The ids among `jobs` whose job type is unknown (their slowdowns will all be 0): what a
    /// caller checks once to learn that its ids do not follow the generator's form.
    pub fn unknown<'a>(&self, jobs: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        jobs.into_iter()
            .filter(|j| self.job_index(j).is_none())
            .collect()
    }

    fn job_index(&self, job: &str) -> Option<usize> {
        if let Some(&i) = self.assigned.get(job) {
            return Some(i);
        }
        self.slugs.iter().find_map(|(slug, i)| {
            job.strip_suffix(slug.as_str())
                .filter(|rest| rest.ends_with('-'))
                .map(|_| *i)
        })
    }

    /// The slowdown of job type `job` beside `other` on GPU type index `gpu` (module
    /// documentation): `Some(f64::INFINITY)` for a pair that cannot run together, `None` when
    /// the model has neither a measurement nor a prediction, or `job` has no solo throughput
    /// there. O(1) for the measured table and the predictor.
    pub fn type_slowdown(&self, gpu: usize, job: usize, other: usize) -> Option<f64> {
        let inputs: &CostInputs = self.model.inputs();
        if inputs.colocation(gpu, job, other) == Colocation::CannotRun {
            return Some(f64::INFINITY);
        }
        let solo = inputs.solo(gpu, job)?;
        let shared = self.model.pair_throughput(gpu, job, other)?;
        Some(1.0 - shared / solo)
    }
}

impl<M: ThroughputModel + Send + Sync> CoLocation for JobSlowdowns<M> {
    fn slowdown(&self, job: &str, other: &str, gpu_type: &str) -> f64 {
        let found = (
            self.model.inputs().gpu_index(gpu_type),
            self.job_index(job),
            self.job_index(other),
        );
        let (Some(g), Some(a), Some(b)) = found else {
            return 0.0;
        };
        self.type_slowdown(g, a, b).unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, Array3};

    fn jt(family: &str, batch: Option<u32>, sf: u32) -> JobType {
        JobType {
            family: family.into(),
            batch_size: batch,
            scale_factor: sf,
        }
    }

    /// v100 only. Job types: lm-bs5, lm-bs5-sf4 (distributed), a3c. lm beside a3c: 0.5 of its
    /// 8 it/s; a3c beside lm: 3 of its 4; lm beside itself: 6; a3c beside a3c cannot run.
    fn inputs() -> CostInputs {
        let types = vec![
            jt("LM", Some(5), 1),
            jt("LM", Some(5), 4),
            jt("A3C", None, 1),
        ];
        let mut pair = Array3::from_elem((1, 3, 3), f64::NAN);
        pair[[0, 0, 2]] = 4.0;
        pair[[0, 2, 0]] = 3.0;
        pair[[0, 0, 0]] = 6.0;
        pair[[0, 2, 2]] = 0.0;
        let solo = Array2::from_shape_vec((1, 3), vec![8.0, 20.0, 4.0]).unwrap();
        CostInputs::new(vec!["v100".into()], types, solo, pair).unwrap()
    }

    #[test]
    fn slowdowns_by_hand() {
        let m = JobSlowdowns::new(inputs());
        // 1 - 4/8 and 1 - 3/4.
        assert_eq!(m.slowdown("job-1-lm-bs5", "job-2-a3c", "v100"), 0.5);
        assert_eq!(m.slowdown("job-2-a3c", "job-1-lm-bs5", "v100"), 0.25);
        assert_eq!(m.slowdown("job-1-lm-bs5", "job-3-lm-bs5", "v100"), 0.25);
        assert_eq!(m.slowdown("job-2-a3c", "job-4-a3c", "v100"), f64::INFINITY);
        // Unmeasured pair, unknown GPU type, unknown id: no information, 0.
        assert_eq!(m.slowdown("job-1-lm-bs5", "job-5-lm-bs5-sf4", "v100"), 0.0);
        assert_eq!(m.slowdown("job-1-lm-bs5", "job-2-a3c", "k80"), 0.0);
        assert_eq!(m.slowdown("job-1-lm-bs5", "mystery", "v100"), 0.0);
    }

    #[test]
    fn job_types_are_inferred_by_the_longest_slug_or_assigned() {
        let mut m = JobSlowdowns::new(inputs());
        assert_eq!(m.job_type("job-9-lm-bs5-sf4"), Some(&jt("LM", Some(5), 4)));
        assert_eq!(m.job_type("job-9-lm-bs5"), Some(&jt("LM", Some(5), 1)));
        // The slug must follow a '-': "xa3c" is not an a3c job.
        assert_eq!(m.job_type("xa3c"), None);
        assert_eq!(m.unknown(["xa3c", "job-1-a3c", "b"]), vec!["xa3c", "b"]);
        m.assign("b", &jt("A3C", None, 1)).unwrap();
        assert_eq!(m.slowdown("b", "job-1-lm-bs5", "v100"), 0.25);
        let e = m.assign("c", &jt("GPT", None, 1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "job \"c\": job type ('GPT', 1) is not in the cost inputs"
        );
    }
}
