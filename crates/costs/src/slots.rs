//! From co-location throughputs to throughputs in slots of any size (the derivation `stsfair gen
//! --gavel` and the simulation's `sts` policy use; `docs/costs.md` gives the reasoning).
//!
//! Measurements exist at two points of a GPU of `U` units: the whole GPU (the solo throughput,
//! `s = U`) and the GPU shared with one co-runner, which we read as a half GPU (`s = U/2`: two
//! jobs side by side under MPS each get about half the SMs). A slot of `s` units stands for a
//! GPU shared by `U/s` jobs, that is `U/s - 1` co-runners, and the time of a smaller slot follows
//! from the rule that composes co-runners, the one the simulation realizes
//! ([`ThroughputModel::throughput_with`]): each co-runner multiplies the job's throughput by its
//! pairwise ratio. With the typical ratio `r = theta_half / solo` (the median partner),
//! `theta(s) = solo * r^(U/s - 1)`: exact at both measured points, monotone in `s` (`r <= 1` is
//! enforced: a co-runner never makes a job faster), and what a GPU of equal slots filled with
//! typical partners realizes, so that the planner is promised what the run then gives
//! ([`SlotRule::Composition`], the default).
//!
//! The other rule, the power law `theta(s) = solo * (s / U)^a` through both points
//! ([`SlotRule::PowerLaw`], `a = log2(1 / r)`, so `theta(s) = solo * r^log2(U/s)`), promises
//! `solo * r^2` for a quarter GPU where the composition rule realizes `solo * r^3`: it packs GPUs
//! four ways on promises the run does not keep (docs/costs.md, "Slot times and what runs"). It
//! is kept for comparison.

use super::ThroughputModel;

/// How the throughput in a slot smaller than half a GPU is derived from the two measured points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SlotRule {
    /// `solo * r^(U/s - 1)`: a slot of `s` units has `U/s - 1` typical co-runners, each costing
    /// the factor `r`, as [`ThroughputModel::throughput_with`] composes them.
    #[default]
    Composition,
    /// `solo * (s / U)^a` with `a = log2(1 / r)`: a power law of the resource share.
    PowerLaw,
}

/// The throughput curve of one job type on one GPU type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlotCurve {
    /// Throughput on the whole GPU (steps per second).
    pub solo: f64,
    /// The typical pairwise ratio `r = theta_half / solo`, in (0, 1].
    pub ratio: f64,
    /// How smaller slots follow.
    pub rule: SlotRule,
}

impl SlotCurve {
    /// The curve of `rule` through the whole-GPU throughput and the half-GPU throughput. `None`
    /// unless both are finite and > 0. A half-GPU throughput above the solo one (measurement
    /// noise) gives `r = 1`: a flat curve, never a decreasing one.
    pub fn through_half(solo: f64, half: f64, rule: SlotRule) -> Option<SlotCurve> {
        if !(solo.is_finite() && half.is_finite() && solo > 0.0 && half > 0.0) {
            return None;
        }
        Some(SlotCurve {
            solo,
            ratio: (half / solo).min(1.0),
            rule,
        })
    }

    /// Throughput in a slot of `slot` of the GPU's `units` units (`slot <= units`, both >= 1).
    pub fn throughput(&self, slot: u32, units: u32) -> f64 {
        if slot >= units {
            return self.solo;
        }
        let share = f64::from(units) / f64::from(slot);
        match self.rule {
            SlotRule::Composition => self.solo * self.ratio.powf(share - 1.0),
            SlotRule::PowerLaw => self.solo * self.ratio.powf(share.log2()),
        }
    }
}

/// Throughputs of job type `job` on GPU type `gpu` in each slot size of `ladder` (GPUs of
/// `units` units), as `(slot, throughput)` pairs in ladder order.
///
/// - `slot = units`: the solo throughput (whole GPUs, one per worker).
/// - `slot < units`: the [`SlotCurve`] of the default [`SlotRule`] through the solo throughput
///   and the model's
///   [`typical_shared_throughput`](ThroughputModel::typical_shared_throughput); only for
///   single-GPU job types, since distributed jobs are never co-located in the data (every pair
///   of theirs is `[0, 0]`).
/// - A job type with no solo entry on `gpu` has no slot there; sizes above `units` are skipped.
///
/// O(|ladder| + J log J) for J job types.
pub fn slot_throughputs(
    model: &dyn ThroughputModel,
    gpu: usize,
    job: usize,
    units: u32,
    ladder: &[u32],
) -> Vec<(u32, f64)> {
    slot_throughputs_by(SlotRule::default(), model, gpu, job, units, ladder)
}

/// [`slot_throughputs`] with the slot rule chosen by the caller.
pub fn slot_throughputs_by(
    rule: SlotRule,
    model: &dyn ThroughputModel,
    gpu: usize,
    job: usize,
    units: u32,
    ladder: &[u32],
) -> Vec<(u32, f64)> {
    let inputs = model.inputs();
    let Some(solo) = inputs.solo(gpu, job) else {
        return Vec::new();
    };
    let single = inputs
        .job_types()
        .get(job)
        .is_some_and(|j| j.scale_factor == 1);
    let curve = if single {
        model
            .typical_shared_throughput(gpu, job)
            .and_then(|half| SlotCurve::through_half(solo, half, rule))
    } else {
        None
    };
    ladder
        .iter()
        .filter(|&&s| s >= 1 && s <= units)
        .filter_map(|&s| match (s == units, curve) {
            (true, _) => Some((s, solo)),
            (false, Some(c)) => Some((s, c.throughput(s, units))),
            (false, None) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_pass_through_both_points_and_are_monotone() {
        for rule in [SlotRule::Composition, SlotRule::PowerLaw] {
            let c = SlotCurve::through_half(10.0, 7.0, rule).unwrap();
            assert!((c.throughput(2, 4) - 7.0).abs() < 1e-12);
            assert_eq!(c.throughput(4, 4), 10.0);
            assert!(c.throughput(1, 8) < c.throughput(2, 8));
            assert!(c.throughput(2, 8) < c.throughput(4, 8));
        }
        // r = 0.7. Composition: a quarter GPU has 3 co-runners, 10 * 0.7^3 = 3.43; the power
        // law: 10 * 0.7^log2(4) = 4.9.
        let c = SlotCurve::through_half(10.0, 7.0, SlotRule::Composition).unwrap();
        assert!((c.throughput(1, 4) - 3.43).abs() < 1e-9);
        let p = SlotCurve::through_half(10.0, 7.0, SlotRule::PowerLaw).unwrap();
        assert!((p.throughput(1, 4) - 4.9).abs() < 1e-9);
    }

    #[test]
    fn faster_when_shared_is_flat_not_decreasing() {
        let c = SlotCurve::through_half(10.0, 12.0, SlotRule::Composition).unwrap();
        assert_eq!(c.ratio, 1.0);
        assert_eq!(c.throughput(1, 4), 10.0);
        assert!(SlotCurve::through_half(0.0, 1.0, SlotRule::Composition).is_none());
    }
}
