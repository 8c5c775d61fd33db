//! From co-location throughputs to throughputs in slots of any size (the derivation `stsfair gen
//! --gavel` uses; `docs/costs.md` gives the reasoning).
//!
//! Measurements exist at two points of a GPU of `U` units: the whole GPU (the solo throughput,
//! `s = U`) and the GPU shared with one co-runner, which we read as a half GPU (`s = U/2`: two
//! jobs side by side under MPS each get about half the SMs). Other slot sizes are extrapolated by
//! the power law `theta(s) = solo * (s / U)^a` through both points, so
//! `a = log2(solo / theta_half)`. The law is monotone in `s` (a >= 0 is enforced: a co-runner
//! never makes a job faster), exact at both measured points, and with `a = 1` it is plain
//! time-sharing (`s/U` of the solo rate), with `a < 1` the sublinear scaling of jobs that do not
//! saturate a GPU (the usual case in the Gavel data), with `a > 1`
//! a job that loses more than its share to interference. Power laws of the resource share are
//! the usual first-order model of throughput scaling with allocated compute (e.g. the
//! sublinear-speedup models of Optimus, Peng et al., EuroSys 2018).

use super::ThroughputModel;

/// The power-law throughput curve of one job type on one GPU type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlotCurve {
    /// Throughput on the whole GPU (steps per second).
    pub solo: f64,
    /// Exponent a >= 0 of `theta(s) = solo * (s / U)^a`.
    pub exponent: f64,
}

impl SlotCurve {
    /// The curve through the whole-GPU throughput and the half-GPU throughput. `None` unless
    /// both are finite and > 0. A half-GPU throughput above the solo one (measurement noise)
    /// gives exponent 0: a flat curve, never a decreasing one.
    pub fn through_half(solo: f64, half: f64) -> Option<SlotCurve> {
        if !(solo.is_finite() && half.is_finite() && solo > 0.0 && half > 0.0) {
            return None;
        }
        Some(SlotCurve {
            solo,
            exponent: (solo / half).log2().max(0.0),
        })
    }

    /// Throughput in a slot of `slot` of the GPU's `units` units (`slot <= units`, both >= 1).
    pub fn throughput(&self, slot: u32, units: u32) -> f64 {
        if slot >= units {
            return self.solo;
        }
        self.solo * (f64::from(slot) / f64::from(units)).powf(self.exponent)
    }
}

/// Throughputs of job type `job` on GPU type `gpu` in each slot size of `ladder` (GPUs of
/// `units` units), as `(slot, throughput)` pairs in ladder order.
///
/// - `slot = units`: the solo throughput (whole GPUs, one per worker).
/// - `slot < units`: the [`SlotCurve`] through the solo throughput and the model's
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
            .and_then(|half| SlotCurve::through_half(solo, half))
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
    fn curve_passes_through_both_points_and_is_monotone() {
        let c = SlotCurve::through_half(10.0, 7.0).unwrap();
        assert!((c.throughput(2, 4) - 7.0).abs() < 1e-12);
        assert_eq!(c.throughput(4, 4), 10.0);
        // a = log2(10/7) = 0.5146: theta(1/4) = 10 * 0.25^0.5146 = 4.9.
        assert!((c.throughput(1, 4) - 4.9).abs() < 1e-9);
        assert!(c.throughput(1, 8) < c.throughput(2, 8) && c.throughput(2, 8) < c.throughput(4, 8));
    }

    #[test]
    fn faster_when_shared_is_flat_not_decreasing() {
        let c = SlotCurve::through_half(10.0, 12.0).unwrap();
        assert_eq!(c.exponent, 0.0);
        assert_eq!(c.throughput(1, 4), 10.0);
        assert!(SlotCurve::through_half(0.0, 1.0).is_none());
    }
}
