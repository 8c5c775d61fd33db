//! The hand-written interior-point method for the max-min LP of Gavel's policies
//! (`MaxMin`, the one LP type every method of [`lp`](super::lp) reads):
//! a structure-exploiting form when every entry is one job (`gavel-mmf`, and each step of `ftf`),
//! a dense one when entries may be pairs of jobs (`gavel-mmf-ss`).
//!
//! Why it exists: on Gavel's trace it replays gavel-mmf-ss with 12x less CPU than HiGHS's IPX and
//! 15x to 18x less than Clarabel (docs/dependencies.md, "The simulation's LP: hand-written
//! interior point vs HiGHS vs Clarabel"), and like ECOS, which Gavel uses, it returns a point near the
//! analytic center of the optimal face: jobs above the bottleneck keep their spare time spread
//! over the types instead of piled on a vertex.
//!
//! The LP, in standard form with slacks (n jobs, K types, E entries):
//!
//! ```text
//! minimize -t
//! subject to  U_i:  sum over entries r with job i, types k of a[r][k][i] x[r][k] - t - su_i = 0
//!             R_i:  sum over entries r with job i, types k of x[r][k] + sr_i = 1
//!             C_k:  sum over entries r of s_r x[r][k] + sc_k = n_k
//!             x, t, su, sr, sc >= 0
//! ```
//!
//! The files follow the phases of one solve:
//! - `mehrotra.rs`: the iteration itself, Mehrotra's predictor-corrector primal-dual method
//!   (Mehrotra, "On the implementation of a primal-dual interior point method", SIAM J. Optim.
//!   2(4), 1992; Nocedal and Wright, "Numerical Optimization", 2nd ed., algorithm 14.3; Wright,
//!   "Primal-Dual Interior-Point Methods", SIAM 1997): starting point, residuals and stopping
//!   test, the Newton directions, the step lengths (ratio test). Generic over `System`: the
//!   products with A and the solves of the normal equations of one form of the LP.
//! - `block.rs`: the normal equations A D A^T when every entry is one job: block-diagonal in the
//!   (U_i, R_i) pairs, coupled by the K capacity rows and t, eliminated down to a (K + 1) x (K + 1)
//!   Schur complement; identical jobs are one group with a multiplicity, so n counts groups
//!   (20 to 30 on Gavel's job mix). O(n K^3 + K^3) per iteration; about 8 iterations per LP,
//!   roughly 170 microseconds per LP near saturation (110 to 160 jobs on three types).
//! - `dense.rs`: the normal equations with pairs as entries: a pair couples two jobs' rows, so
//!   A D A^T is assembled densely (O(E K)) and factored by faer's Cholesky (O((2n + K)^3 / 3)); on
//!   Gavel's trace n reaches 96 active jobs and E K about 14,000 columns, 17 iterations per LP on
//!   average.

mod block;
mod dense;
mod mehrotra;

use super::lp::MaxMin;

/// Why the solver stopped without an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum IpmError {
    /// The inputs have inconsistent lengths or non-finite values.
    #[error("invalid max-min LP: {0}")]
    Invalid(&'static str),
    /// No finite iterate at all (numerical breakdown).
    #[error(
        "the interior point method broke down after {iterations} iterations (best relative error {error:.1e})"
    )]
    NoConvergence {
        /// The iteration limit.
        iterations: usize,
        /// Largest of the relative infeasibilities and gap at the best iterate.
        error: f64,
    },
}

/// An answer of the method.
#[derive(Debug, Clone, PartialEq)]
pub struct IpmSolution {
    /// `x[i][k]`, row-major n x K, clipped to [0, 1].
    pub x: Vec<f64>,
    /// The max-min value t.
    pub t: f64,
    /// Largest of the relative primal infeasibility, dual infeasibility and duality gap at this
    /// point: at most [`GAP`] when the method converged, at most [`FALLBACK`] when it stalled
    /// close enough to count as ECOS's "optimal (inaccurate)".
    pub error: f64,
}

/// Relative primal and dual infeasibility at which the method may stop (ECOS's default
/// `feastol`).
pub const FEASIBILITY: f64 = 1e-8;
/// Relative duality gap at which the method may stop (utilities are scaled so that t* <= 1).
pub const GAP: f64 = 1e-5;
/// When the iterations stall or diverge (the normal equations lose their last digits as the
/// iterates reach the boundary), the best iterate is returned if it is within this tolerance:
/// ECOS's own reduced-accuracy thresholds (`feastol_inacc` 1e-4, `reltol_inacc` 5e-5), under
/// which cvxpy reports "optimal_inaccurate" and Gavel uses the allocation all the same.
pub const FALLBACK: f64 = 5e-5;
/// Iteration limit.
pub const MAX_ITERATIONS: usize = 100;

/// Solves the LP: the best iterate found, with its accuracy (see [`IpmSolution::error`]); x per
/// entry and type (row-major, entries x K), clipped to [0, 1]. The block method when every
/// entry `i` is job `i` alone, the dense one otherwise.
pub fn solve(lp: &MaxMin<'_>) -> Result<IpmSolution, IpmError> {
    let capacity: Vec<f64> = lp.capacity.iter().map(|&c| f64::from(c)).collect();
    let one_job_each = lp.entries.len() == lp.jobs
        && lp
            .entries
            .iter()
            .enumerate()
            .all(|(i, e)| e.job == i && e.partner.is_none());
    if one_job_each {
        block::solve(lp.entries, &capacity)
    } else {
        dense::solve(lp.jobs, lp.entries, &capacity)
    }
}

/// The factor that brings the utilities to t* of order 1: t* is at most the smallest, over jobs,
/// of a job's largest utility coefficient (its time sums to at most 1), so dividing by that
/// makes the duality gap tolerance relative to t*, as ECOS's relative tolerance is. Scaling the
/// objective changes neither the optimal face nor its analytic center.
fn utility_scale(best_per_job: impl Iterator<Item = f64>) -> f64 {
    let least = best_per_job
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    if least.is_finite() { 1.0 / least } else { 1.0 }
}

/// t's column times y: minus the sum of the n U rows.
fn t_dot(n: usize, y: &[f64]) -> f64 {
    -y[..n].iter().sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::lp::Entry;

    /// [`solve`] on one-job entries of one GPU each, `utility` row-major (`k` per job).
    fn singles(utility: &[f64], k: usize, capacity: &[u32]) -> Result<IpmSolution, IpmError> {
        let entries: Vec<Entry> = utility
            .chunks(k)
            .enumerate()
            .map(|(i, u)| Entry::single(i, 1.0, u.iter().copied()))
            .collect();
        solve(&MaxMin {
            jobs: entries.len(),
            entries: &entries,
            capacity,
        })
    }

    /// Near saturation: 110 jobs of 26 kinds on 108 GPUs, many jobs of one kind (an LP of the
    /// 5.6 jobs/h replay, degenerate; docs/simulation.md, "Near saturation"). The method converges
    /// to the tolerances on its own (a stall at relative error 1.9e-3, above ECOS's reduced
    /// accuracy, would hand the LP to HiGHS), to HiGHS simplex's optimum, and gives identical
    /// jobs identical allocations.
    #[test]
    fn many_identical_jobs_converge() {
        // The replay's LP: the utilities of the 26 kinds, and each job's kind in the LP's order.
        let kinds: [[f64; 3]; 26] = [
            [1.6792359457063453, 1.0541119291393333, 0.26665212515432185],
            [1.527814027952607, 1.1446465650323665, 0.3275394070150266],
            [1.352279680407938, 1.2519085235001703, 0.39581179609189154],
            [1.691445389782045, 1.0733263139380627, 0.23522829627989247],
            [1.4671039609664036, 1.159948085909417, 0.37294795312417983],
            [1.6720724265101372, 0.9879494274001177, 0.3399781460897456],
            [1.3210271590364615, 1.0459108167806876, 0.633062024182851],
            [1.5028101151600368, 1.1938197941432054, 0.30337009069675797],
            [1.727217855040213, 1.0294940044453817, 0.24328814051440512],
            [1.4527911711083707, 1.2080473524007151, 0.33916147649091394],
            [1.2825533047982414, 1.348931270731717, 0.3685154244700418],
            [1.2732603334195698, 1.097551099501866, 0.6291885670785644],
            [1.3419925987147934, 1.2669319795311098, 0.39107542175409654],
            [1.6342159031084664, 1.2252799346210939, 0.1405041622704396],
            [1.7150563431418508, 1.1127671346074677, 0.17217652225068153],
            [1.4484658877011503, 1.0731961436388588, 0.4783379686599912],
            [1.3867695304501493, 1.2460462703050423, 0.36718419924480866],
            [0.6473058430661487, 1.4743437738540581, 0.8783503830797933],
            [1.3292655197694812, 1.47371584255952, 0.19701863767099895],
            [1.810624653772066, 0.9828837486146333, 0.2064915976133008],
            [0.6658419167416845, 1.3958510226701222, 0.9383070605881931],
            [1.7196013282080524, 0.9704650849294387, 0.30993358686250905],
            [1.231576792502283, 1.4733176008981295, 0.29510560659958784],
            [0.6493922060532004, 1.4428727634367033, 0.9077350305100959],
            [0.7687560041219252, 1.501102112173215, 0.7301418837048598],
            [0.6218726578505345, 1.439414611319088, 0.9387127308303777],
        ];
        let kind_of: [usize; 110] = [
            0, 1, 2, 3, 4, 5, 5, 6, 7, 2, 7, 8, 9, 10, 1, 11, 9, 12, 13, 7, 6, 3, 1, 14, 8, 14, 15,
            13, 10, 5, 1, 13, 7, 13, 16, 6, 16, 17, 18, 15, 15, 19, 20, 14, 0, 21, 3, 15, 16, 3,
            14, 22, 7, 22, 19, 1, 10, 12, 19, 9, 19, 23, 23, 0, 14, 19, 2, 17, 21, 16, 8, 11, 16,
            15, 9, 2, 21, 14, 3, 5, 9, 24, 8, 24, 16, 6, 8, 19, 0, 17, 8, 19, 8, 6, 13, 19, 25, 17,
            15, 7, 15, 16, 20, 20, 0, 22, 3, 17, 20, 5,
        ];
        let utility: Vec<f64> = kind_of.iter().flat_map(|&j| kinds[j]).collect();
        let capacity = [36, 36, 36];
        let solution = singles(&utility, 3, &capacity).unwrap();
        // Converged, not merely within the fallback's reduced accuracy.
        assert!(solution.error <= GAP, "{}", solution.error);
        for (i, &j) in kind_of.iter().enumerate() {
            let first = kind_of.iter().position(|&q| q == j).unwrap();
            assert_eq!(
                solution.x[3 * i..3 * i + 3],
                solution.x[3 * first..3 * first + 3]
            );
        }
        #[cfg(feature = "highs")]
        {
            let t = simplex_t(&utility, &capacity);
            assert!((solution.t - t).abs() <= 1e-5 * t, "{} vs {t}", solution.t);
        }
    }

    #[test]
    fn two_jobs_one_fast_type() {
        // Two jobs, one GPU of each of two types; job 0 is 2x faster on type 0, job 1 equal.
        // Optimum: job 1 takes type 1 fully (utility 1), job 0 takes type 0 (utility 2):
        // min = 1; any split that keeps both >= 1 is optimal, and t = 1 at best... unless
        // sharing lifts the minimum: job 1 also gets part of type 0? Then job 0 drops below 2 but
        // stays >= 1: t is bounded by job 1's max utility, sum x <= 1 at rate 1: t* = 1.
        let IpmSolution { x, t, .. } = singles(&[2.0, 1.0, 1.0, 1.0], 2, &[1, 1]).unwrap();
        assert!((t - 1.0).abs() < 1e-5, "t = {t}");
        let u0 = 2.0 * x[0] + x[1];
        let u1 = x[2] + x[3];
        assert!(u0 >= 1.0 - 1e-5 && u1 >= 1.0 - 1e-5);
        assert!(x[0] + x[2] <= 1.0 + 1e-7 && x[1] + x[3] <= 1.0 + 1e-7);
    }

    #[test]
    fn capacity_binds() {
        // Three equal jobs on one GPU: each gets a third.
        let IpmSolution { x, t, .. } = singles(&[1.0, 1.0, 1.0], 1, &[1]).unwrap();
        assert!((t - 1.0 / 3.0).abs() < 1e-5, "t = {t}");
        for v in x {
            assert!((v - 1.0 / 3.0).abs() < 1e-5);
        }
    }

    #[test]
    fn regression_trace_instance() {
        let utility = [
            1.6720724265101372,
            0.9879494274001177,
            0.3399781460897456,
            1.691445389782045,
            1.0733263139380627,
            0.23522829627989247,
            1.4527911711083707,
            1.2080473524007151,
            0.33916147649091394,
            1.6792359457063453,
            1.0541119291393333,
            0.26665212515432185,
            1.2732603334195698,
            1.097551099501866,
            0.6291885670785644,
            1.527814027952607,
            1.1446465650323665,
            0.3275394070150266,
            1.2825533047982414,
            1.348931270731717,
            0.3685154244700418,
            1.2825533047982414,
            1.348931270731717,
            0.3685154244700418,
            1.2825533047982414,
            1.348931270731717,
            0.3685154244700418,
            1.2732603334195698,
            1.097551099501866,
            0.6291885670785644,
            1.727217855040213,
            1.0294940044453817,
            0.24328814051440512,
            1.7150563431418508,
            1.1127671346074677,
            0.17217652225068153,
            1.5028101151600368,
            1.1938197941432054,
            0.30337009069675797,
            1.3292655197694812,
            1.47371584255952,
            0.19701863767099895,
            1.4527911711083707,
            1.2080473524007151,
            0.33916147649091394,
            1.5028101151600368,
            1.1938197941432054,
            0.30337009069675797,
            1.7150563431418508,
            1.1127671346074677,
            0.17217652225068153,
            1.7150563431418508,
            1.1127671346074677,
            0.17217652225068153,
            1.2825533047982414,
            1.348931270731717,
            0.3685154244700418,
            1.2825533047982414,
            1.348931270731717,
            0.3685154244700418,
            1.231576792502283,
            1.4733176008981295,
            0.29510560659958784,
            1.5028101151600368,
            1.1938197941432054,
            0.30337009069675797,
            1.6792359457063453,
            1.0541119291393333,
            0.26665212515432185,
            1.6792359457063453,
            1.0541119291393333,
            0.26665212515432185,
            1.6792359457063453,
            1.0541119291393333,
            0.26665212515432185,
            1.4484658877011503,
            1.0731961436388588,
            0.4783379686599912,
            1.6792359457063453,
            1.0541119291393333,
            0.26665212515432185,
            1.352279680407938,
            1.2519085235001703,
            0.39581179609189154,
            1.352279680407938,
            1.2519085235001703,
            0.39581179609189154,
            1.6792359457063453,
            1.0541119291393333,
            0.26665212515432185,
            1.3867695304501493,
            1.2460462703050423,
            0.36718419924480866,
            1.2732603334195698,
            1.097551099501866,
            0.6291885670785644,
            1.727217855040213,
            1.0294940044453817,
            0.24328814051440512,
            1.5028101151600368,
            1.1938197941432054,
            0.30337009069675797,
            1.691445389782045,
            1.0733263139380627,
            0.23522829627989247,
            0.7687560041219252,
            1.501102112173215,
            0.7301418837048598,
            0.7687560041219252,
            1.501102112173215,
            0.7301418837048598,
            1.4527911711083707,
            1.2080473524007151,
            0.33916147649091394,
            1.7196013282080524,
            0.9704650849294387,
            0.30993358686250905,
            1.4484658877011503,
            1.0731961436388588,
            0.4783379686599912,
            0.6473058430661487,
            1.4743437738540581,
            0.8783503830797933,
            1.231576792502283,
            1.4733176008981295,
            0.29510560659958784,
            1.4671039609664036,
            1.159948085909417,
            0.37294795312417983,
            1.352279680407938,
            1.2519085235001703,
            0.39581179609189154,
            1.4527911711083707,
            1.2080473524007151,
            0.33916147649091394,
            1.527814027952607,
            1.1446465650323665,
            0.3275394070150266,
            1.6720724265101372,
            0.9879494274001177,
            0.3399781460897456,
            1.3419925987147934,
            1.2669319795311098,
            0.39107542175409654,
            1.3867695304501493,
            1.2460462703050423,
            0.36718419924480866,
            1.3867695304501493,
            1.2460462703050423,
            0.36718419924480866,
            0.6658419167416845,
            1.3958510226701222,
            0.9383070605881931,
            1.4484658877011503,
            1.0731961436388588,
            0.4783379686599912,
            1.3867695304501493,
            1.2460462703050423,
            0.36718419924480866,
            1.5028101151600368,
            1.1938197941432054,
            0.30337009069675797,
            0.6473058430661487,
            1.4743437738540581,
            0.8783503830797933,
            1.3292655197694812,
            1.47371584255952,
            0.19701863767099895,
            1.4527911711083707,
            1.2080473524007151,
            0.33916147649091394,
            1.691445389782045,
            1.0733263139380627,
            0.23522829627989247,
            1.5028101151600368,
            1.1938197941432054,
            0.30337009069675797,
            1.4671039609664036,
            1.159948085909417,
            0.37294795312417983,
            1.527814027952607,
            1.1446465650323665,
            0.3275394070150266,
            0.6658419167416845,
            1.3958510226701222,
            0.9383070605881931,
            1.352279680407938,
            1.2519085235001703,
            0.39581179609189154,
            1.2825533047982414,
            1.348931270731717,
            0.3685154244700418,
            1.2825533047982414,
            1.348931270731717,
            0.3685154244700418,
            1.691445389782045,
            1.0733263139380627,
            0.23522829627989247,
            1.727217855040213,
            1.0294940044453817,
            0.24328814051440512,
            1.2825533047982414,
            1.348931270731717,
            0.3685154244700418,
            1.727217855040213,
            1.0294940044453817,
            0.24328814051440512,
            1.4671039609664036,
            1.159948085909417,
            0.37294795312417983,
            1.2732603334195698,
            1.097551099501866,
            0.6291885670785644,
            0.6658419167416845,
            1.3958510226701222,
            0.9383070605881931,
            1.5028101151600368,
            1.1938197941432054,
            0.30337009069675797,
            1.6342159031084664,
            1.2252799346210939,
            0.1405041622704396,
            1.2732603334195698,
            1.097551099501866,
            0.6291885670785644,
            1.7150563431418508,
            1.1127671346074677,
            0.17217652225068153,
            1.5028101151600368,
            1.1938197941432054,
            0.30337009069675797,
            1.7196013282080524,
            0.9704650849294387,
            0.30993358686250905,
            1.691445389782045,
            1.0733263139380627,
            0.23522829627989247,
            1.691445389782045,
            1.0733263139380627,
            0.23522829627989247,
            1.7196013282080524,
            0.9704650849294387,
            0.30993358686250905,
            1.352279680407938,
            1.2519085235001703,
            0.39581179609189154,
            1.3210271590364615,
            1.0459108167806876,
            0.633062024182851,
        ];
        let solution = singles(&utility, 3, &[36, 36, 36]).unwrap();
        assert!(
            solution.t > 0.0 && solution.error <= FALLBACK,
            "{:?}",
            solution.error
        );
        // The same LP through HiGHS's simplex: the same max-min value.
        #[cfg(feature = "highs")]
        {
            let t = simplex_t(&utility, &[36, 36, 36]);
            assert!((solution.t - t).abs() <= 1e-4 * t, "{} vs {t}", solution.t);
        }
    }

    /// The max-min value t of the single-job LP with these utilities (3 types per job) by
    /// HiGHS's simplex: an independent path to the method's t.
    #[cfg(feature = "highs")]
    fn simplex_t(utility: &[f64], capacity: &[u32]) -> f64 {
        let entries: Vec<Entry> = utility
            .chunks(3)
            .enumerate()
            .map(|(i, u)| Entry::single(i, 1.0, u.iter().copied()))
            .collect();
        let lp = MaxMin {
            jobs: entries.len(),
            entries: &entries,
            capacity,
        };
        let (_, t) = lp
            .solve("test", crate::policies::lp::Method::HighsSimplex)
            .unwrap();
        t
    }
}
