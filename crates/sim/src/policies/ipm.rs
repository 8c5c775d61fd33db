//! Interior-point solvers for the max-min LP of Gavel's policies: a structure-exploiting one when
//! every entry is one job (`gavel-mmf`, and each step of `ftf`), a dense one when entries may be
//! pairs of jobs (`gavel-mmf-ss`).
//!
//! The LP, in standard form with slacks (n jobs, K types):
//!
//! ```text
//! minimize -t
//! subject to  U_i:  sum_k a[i][k] x[i][k] - t - su_i = 0      (each job i)
//!             R_i:  sum_k x[i][k] + sr_i = 1                  (each job i)
//!             C_k:  sum_i s_i x[i][k] + sc_k = n_k            (each type k)
//!             x, t, su, sr, sc >= 0
//! ```
//!
//! It is solved by Mehrotra's predictor-corrector primal-dual method (Mehrotra, "On the
//! implementation of a primal-dual interior point method", SIAM J. Optim. 2(4), 1992; Nocedal and
//! Wright, "Numerical Optimization", 2nd ed., algorithm 14.3). Like ECOS, which Gavel uses, it
//! returns a point near the analytic center of the optimal face: jobs above the bottleneck keep
//! their spare time spread over the types instead of piled on a vertex.
//!
//! The normal equations A D A^T dy = r have 2n + K rows, but their matrix is block-diagonal in
//! the (U_i, R_i) pairs, coupled only by the K capacity rows C_k and by the column of the free
//! variable t (it appears in every U_i). Eliminating the 2x2 blocks leaves a (K + 1) x (K + 1)
//! Schur complement, so each iteration costs O(n K^2 + K^3) instead of O((2n + K)^3). Vectors
//! are stored type by type (all jobs of type k together) so that every inner loop runs over the
//! jobs. About a dozen iterations reach the tolerances: roughly 100 microseconds for 60 jobs on
//! three types.
//!
//! With pairs of jobs as entries (`gavel-mmf-ss`) a pair couples two jobs' rows, so A D A^T is
//! dense: it is assembled (O(E K) for E entries, per-job sums kept in small arrays) and factored
//! by faer's dense Cholesky (O((2n + K)^3 / 3)); on Gavel's trace, n reaches 96 active jobs and
//! E K about 14,000 columns, 17 iterations per LP on average.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{
    LltRegularization, cholesky_in_place, cholesky_in_place_scratch,
};
use faer::linalg::cholesky::llt::solve::{solve_in_place_scratch, solve_in_place_with_conj};
use faer::{Conj, MatMut, MatRef, Par, Spec};

use super::lp::Entry;

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

/// Bounded variables, column-major: x (K columns of n), su (n), sr (n), sc (K). Rows: U (n),
/// R (n), C (K). t is free and kept apart.
#[derive(Debug, Clone, Copy)]
struct Layout {
    n: usize,
    k: usize,
}

impl Layout {
    fn len(&self) -> usize {
        self.n * self.k + 2 * self.n + self.k
    }
    fn rows(&self) -> usize {
        2 * self.n + self.k
    }
    /// (x, su, sr, sc) views of a variable vector.
    fn split<'v>(&self, z: &'v [f64]) -> (&'v [f64], &'v [f64], &'v [f64], &'v [f64]) {
        let (x, rest) = z.split_at(self.n * self.k);
        let (su, rest) = rest.split_at(self.n);
        let (sr, sc) = rest.split_at(self.n);
        (x, su, sr, sc)
    }
    fn split_mut<'v>(
        &self,
        z: &'v mut [f64],
    ) -> (&'v mut [f64], &'v mut [f64], &'v mut [f64], &'v mut [f64]) {
        let (x, rest) = z.split_at_mut(self.n * self.k);
        let (su, rest) = rest.split_at_mut(self.n);
        let (sr, sc) = rest.split_at_mut(self.n);
        (x, su, sr, sc)
    }
}

/// The linear algebra of one form of the max-min LP (see the module documentation for the
/// rows): products with A for the bounded variables and solves of the Newton system
/// [A D A^T, a_t; a_t^T, 0], a_t = -1 on the U rows (the first n rows) and 0 elsewhere.
trait System {
    /// The factored Newton system.
    type Factor: Solve;
    /// Number of jobs n (U rows, then R rows).
    fn jobs(&self) -> usize;
    /// Number of bounded variables.
    fn len(&self) -> usize;
    /// out = A z.
    fn apply(&self, z: &[f64], out: &mut [f64]);
    /// out = A^T y.
    fn apply_transpose(&self, y: &[f64], out: &mut [f64]);
    /// The right-hand side b: 0 on U rows, 1 on R rows, the capacities on C rows.
    fn rhs(&self) -> Vec<f64>;
    /// Factors the Newton system for scaling `d`.
    fn factor(&self, d: &[f64]) -> Self::Factor;
    /// Whether every solve needs one step of iterative refinement (eliminations that subtract
    /// large terms do; a Cholesky factorization of the whole matrix does not).
    fn refines(&self) -> bool {
        true
    }
}

/// A factored Newton system.
trait Solve {
    /// Solves [A D A^T, a_t; a_t^T, 0] [y; v] = [r; r_t] into `y`, returns v; `scratch` has
    /// [`scratch_len`](Solve::scratch_len) values.
    fn solve(&self, r: &[f64], r_t: f64, y: &mut [f64], scratch: &mut [f64]) -> f64;
    /// Scratch values `solve` needs.
    fn scratch_len(&self) -> usize;
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

/// The max-min LP with one job per entry: `utility[i * K + k]` = `a[i][k]`, `size[i]` = s_i (GPUs
/// per job), `capacity[k]` = n_k.
pub struct MaxMinLp<'a> {
    /// `a[i][k]`, row-major n x K.
    pub utility: &'a [f64],
    /// s_i per job.
    pub size: &'a [f64],
    /// n_k per type.
    pub capacity: &'a [f64],
}

/// The LP's data, column-major.
struct Data<'a> {
    l: Layout,
    /// `a[k][i]`, column-major.
    a: Vec<f64>,
    size: &'a [f64],
    capacity: &'a [f64],
}

impl System for Data<'_> {
    type Factor = Factor;

    fn jobs(&self) -> usize {
        self.l.n
    }

    fn len(&self) -> usize {
        self.l.len()
    }

    /// A z for the bounded variables; t's column (-1 on every U row) is added by the callers.
    fn apply(&self, z: &[f64], out: &mut [f64]) {
        let Layout { n, k } = self.l;
        let (x, su, sr, sc) = self.l.split(z);
        let (u, rest) = out.split_at_mut(n);
        let (r, c) = rest.split_at_mut(n);
        for i in 0..n {
            u[i] = -su[i];
            r[i] = sr[i];
        }
        for kk in 0..k {
            let (a, xk) = (&self.a[kk * n..(kk + 1) * n], &x[kk * n..(kk + 1) * n]);
            let mut load = sc[kk];
            for i in 0..n {
                u[i] += a[i] * xk[i];
                r[i] += xk[i];
                load += self.size[i] * xk[i];
            }
            c[kk] = load;
        }
    }

    /// A^T y for the bounded variables.
    fn apply_transpose(&self, y: &[f64], out: &mut [f64]) {
        let Layout { n, k } = self.l;
        let (yu, rest) = y.split_at(n);
        let (yr, yc) = rest.split_at(n);
        let (x, su, sr, sc) = self.l.split_mut(out);
        for kk in 0..k {
            let (a, xk) = (&self.a[kk * n..(kk + 1) * n], &mut x[kk * n..(kk + 1) * n]);
            let c = yc[kk];
            for i in 0..n {
                xk[i] = a[i] * yu[i] + yr[i] + self.size[i] * c;
            }
        }
        for i in 0..n {
            su[i] = -yu[i];
            sr[i] = yr[i];
        }
        sc.copy_from_slice(&yc[..k]);
    }

    fn rhs(&self) -> Vec<f64> {
        let Layout { n, .. } = self.l;
        let mut b = vec![0.0; self.l.rows()];
        b[n..2 * n].iter_mut().for_each(|v| *v = 1.0);
        b[2 * n..].copy_from_slice(self.capacity);
        b
    }

    /// Factors the Newton system [A D A^T, a_t; a_t^T, 0] (a_t the column of the free variable t)
    /// by block elimination. O(n K^2 + K^3) time, O(n K) memory.
    ///
    /// A D A^T is block-diagonal in the (U_i, R_i) pairs (B), coupled by the K capacity rows
    /// (E, F). t enters as a bordered unknown (the augmented-system treatment of a free, dense
    /// column: Andersen et al., "Implementation of interior point methods for large scale
    /// linear programming", 1996), so the Schur complement is (K + 1) x (K + 1).
    fn factor(&self, d: &[f64]) -> Factor {
        let Layout { n, k } = self.l;
        let m = k + 1;
        let (dx, d_su, d_sr, d_sc) = self.l.split(d);
        let mut uu: Vec<f64> = d_su.to_vec();
        let mut rr: Vec<f64> = d_sr.to_vec();
        let mut ur = vec![0.0; n];
        // uu rr - ur^2 without cancellation (Lagrange's identity): every term is >= 0.
        let mut det = vec![0.0; n];
        let mut f = vec![0.0; m];
        let mut eu = vec![0.0; m * n];
        let mut er = vec![0.0; m * n];
        for kk in 0..k {
            let (a, dk) = (&self.a[kk * n..(kk + 1) * n], &dx[kk * n..(kk + 1) * n]);
            let (euk, erk) = (&mut eu[kk * n..(kk + 1) * n], &mut er[kk * n..(kk + 1) * n]);
            let mut fk = d_sc[kk];
            for i in 0..n {
                let s = self.size[i];
                uu[i] += a[i] * a[i] * dk[i];
                ur[i] += a[i] * dk[i];
                rr[i] += dk[i];
                euk[i] = a[i] * s * dk[i];
                erk[i] = s * dk[i];
                fk += s * s * dk[i];
            }
            f[kk] = fk;
            for q in kk + 1..k {
                let (aq, dq) = (&self.a[q * n..(q + 1) * n], &dx[q * n..(q + 1) * n]);
                for i in 0..n {
                    let diff = a[i] - aq[i];
                    det[i] += dk[i] * dq[i] * diff * diff;
                }
            }
        }
        eu[k * n..].iter_mut().for_each(|v| *v = -1.0);
        let (mut i00, mut i01, mut i11) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        for i in 0..n {
            let mut dt = det[i] + d_su[i] * rr[i] + d_sr[i] * (uu[i] - d_su[i]);
            // Dual regularization (Altman and Gondzio, "Regularized symmetric indefinite systems
            // in interior point methods for linear and quadratic optimization", 1999): a tiny
            // shift keeps the block invertible; iterative refinement removes its bias.
            let delta = 1e-14 * (uu[i] + rr[i]);
            let (u, r) = (uu[i] + delta, rr[i] + delta);
            dt = (dt + delta * (u + r - delta)).max(f64::MIN_POSITIVE);
            i00[i] = r / dt;
            i01[i] = -ur[i] / dt;
            i11[i] = u / dt;
        }
        // W = B^-1 E' and S = F' - E'^T W.
        let mut wu = vec![0.0; m * n];
        let mut wr = vec![0.0; m * n];
        for c in 0..m {
            let (euc, erc) = (&eu[c * n..(c + 1) * n], &er[c * n..(c + 1) * n]);
            let (wuc, wrc) = (&mut wu[c * n..(c + 1) * n], &mut wr[c * n..(c + 1) * n]);
            for i in 0..n {
                wuc[i] = i00[i] * euc[i] + i01[i] * erc[i];
                wrc[i] = i01[i] * euc[i] + i11[i] * erc[i];
            }
        }
        let mut schur = vec![0.0; m * m];
        for a in 0..m {
            for b in 0..m {
                let (ea, ra) = (&eu[a * n..(a + 1) * n], &er[a * n..(a + 1) * n]);
                let (wb, vb) = (&wu[b * n..(b + 1) * n], &wr[b * n..(b + 1) * n]);
                let mut dot = 0.0;
                for i in 0..n {
                    dot += ea[i] * wb[i] + ra[i] * vb[i];
                }
                schur[a * m + b] = if a == b && a < k { f[a] } else { 0.0 } - dot;
            }
        }
        let pivots = lu_factor(&mut schur, m);
        Factor {
            n,
            k,
            i00,
            i01,
            i11,
            eu,
            er,
            wu,
            wr,
            lu: schur,
            pivots,
        }
    }
}

impl MaxMinLp<'_> {
    /// Solves the LP: the best iterate found, with its accuracy (see [`IpmSolution::error`]).
    /// x is row-major n x K.
    pub fn solve(&self) -> Result<IpmSolution, IpmError> {
        let l = Layout {
            n: self.size.len(),
            k: self.capacity.len(),
        };
        let Layout { n, k } = l;
        if self.utility.len() != n * k {
            return Err(IpmError::Invalid("utility must hold n * K values"));
        }
        if self
            .utility
            .iter()
            .chain(self.size)
            .chain(self.capacity)
            .any(|v| !v.is_finite() || *v < 0.0)
        {
            return Err(IpmError::Invalid("coefficients must be finite and >= 0"));
        }
        if n == 0 {
            return Ok(IpmSolution {
                x: Vec::new(),
                t: 0.0,
                error: 0.0,
            });
        }
        let mut a = vec![0.0; n * k];
        for i in 0..n {
            for kk in 0..k {
                a[kk * n + i] = self.utility[i * k + kk];
            }
        }
        let c = utility_scale((0..n).map(|i| (0..k).map(|kk| a[kk * n + i]).fold(0.0, f64::max)));
        a.iter_mut().for_each(|v| *v *= c);
        let data = Data {
            l,
            a,
            size: self.size,
            capacity: self.capacity,
        };
        let (error, x, t) = mehrotra(&data, n * k)?;
        let t = t / c;
        // Back to row-major x[i][k].
        let mut rows_x = vec![0.0; n * k];
        for kk in 0..k {
            for i in 0..n {
                rows_x[i * k + kk] = x[kk * n + i].clamp(0.0, 1.0);
            }
        }
        Ok(IpmSolution {
            x: rows_x,
            t,
            error,
        })
    }
}

/// Mehrotra's predictor-corrector method on `sys`; returns the relative error, the first `keep`
/// bounded variables (the x part) and t of the best iterate.
#[inline(always)]
fn mehrotra<S: System>(sys: &S, keep: usize) -> Result<(f64, Vec<f64>, f64), IpmError> {
    let n = sys.jobs();
    let len = sys.len();
    let b = sys.rhs();
    let rows = b.len();
    let ones = vec![1.0; len];
    let start = sys.factor(&ones);
    let mut work = Work::new(len, rows, start.scratch_len());

    // Mehrotra's starting point: least-norm primal and dual solutions (the objective is
    // min -t, so the dual needs a_t^T y = -1), shifted into the positive orthant.
    let mut t = start.solve(&b, 0.0, &mut work.y, &mut work.scratch);
    let mut z = vec![0.0; len];
    sys.apply_transpose(&work.y, &mut z);
    let mut y = vec![0.0; rows];
    start.solve(&vec![0.0; rows], -1.0, &mut y, &mut work.scratch);
    let mut w = vec![0.0; len];
    sys.apply_transpose(&y, &mut w);
    w.iter_mut().for_each(|v| *v = -*v);
    let dz = (-1.5 * z.iter().copied().fold(f64::INFINITY, f64::min)).max(0.0);
    let dw = (-1.5 * w.iter().copied().fold(f64::INFINITY, f64::min)).max(0.0);
    z.iter_mut().for_each(|v| *v += dz);
    w.iter_mut().for_each(|v| *v += dw);
    let zw: f64 = z.iter().zip(&w).map(|(a, b)| a * b).sum();
    let sz: f64 = z.iter().sum();
    let sw: f64 = w.iter().sum();
    let (ez, ew) = if sw > 0.0 && sz > 0.0 {
        (0.5 * zw / sw, 0.5 * zw / sz)
    } else {
        (1.0, 1.0)
    };
    z.iter_mut().for_each(|v| *v = (*v + ez).max(1e-8));
    w.iter_mut().for_each(|v| *v = (*v + ew).max(1e-8));

    let norm_b = 1.0 + b.iter().map(|v| v.abs()).fold(0.0, f64::max);
    let mut rb = vec![0.0; rows];
    let mut rc = vec![0.0; len];
    let mut d = vec![0.0; len];
    let mut w_inverse = vec![0.0; len];
    let mut z_inverse = vec![0.0; len];
    let mut rxw = vec![0.0; len];
    let mut best: (f64, Vec<f64>, f64) = (f64::INFINITY, Vec::new(), 0.0);
    let mut since_best = 0;
    let mut iterations = 0;
    while iterations < MAX_ITERATIONS {
        iterations += 1;
        sys.apply(&z, &mut rb);
        for (r, b) in rb.iter_mut().zip(&b) {
            *r -= b;
        }
        rb[..n].iter_mut().for_each(|r| *r -= t);
        sys.apply_transpose(&y, &mut rc);
        for (r, w) in rc.iter_mut().zip(&w) {
            *r += w;
        }
        let rt = t_dot(n, &y) + 1.0;
        let mu = z.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() / len as f64;
        let dual: f64 = b.iter().zip(&y).map(|(b, y)| b * y).sum();
        let inf_p = rb.iter().map(|v| v.abs()).fold(0.0, f64::max) / norm_b;
        let inf_d = rc.iter().map(|v| v.abs()).fold(rt.abs(), f64::max) / 2.0;
        let gap = (-t - dual).abs() / (1.0 + t.abs());
        let error = inf_p.max(inf_d).max(gap);
        if !error.is_finite() {
            break;
        }
        if error < best.0 {
            best.0 = error;
            best.1.clear();
            best.1.extend_from_slice(&z[..keep]);
            best.2 = t;
            since_best = 0;
        } else {
            since_best += 1;
        }
        if inf_p < FEASIBILITY && inf_d < FEASIBILITY && gap < GAP {
            break;
        }
        // Diverging, or stalled near an acceptable point (or for long): keep the best point.
        let stalled = (since_best >= 3 && best.0 <= FALLBACK) || since_best >= 15;
        if error > 1e6 * best.0 || stalled {
            break;
        }
        // Two divisions per variable and iteration: W^-1 (for D = Z W^-1 and the directions)
        // and Z^-1 (for the step lengths). The passes over the variables are zipped iterators,
        // without index checks, so that they vectorize: with space sharing there are tens of
        // thousands of variables.
        for ((dj, (wi, zi)), (zj, wj)) in d
            .iter_mut()
            .zip(w_inverse.iter_mut().zip(&mut z_inverse))
            .zip(z.iter().zip(&w))
        {
            *wi = 1.0 / wj;
            *zi = 1.0 / zj;
            *dj = zj * *wi;
        }
        let factor = sys.factor(&d);
        // Predictor (affine scaling), then corrector with the same factors.
        for (r, (zj, wj)) in rxw.iter_mut().zip(z.iter().zip(&w)) {
            *r = -zj * wj;
        }
        // The block eliminations lose digits even far from the optimum (seen as primal
        // residuals that grow after full steps, and as stalls short of the tolerances on
        // degenerate LPs), so their solves are always refined: O(n K) each, a few percent of
        // an iteration.
        let refine = sys.refines();
        let scaling = Scaling {
            d: &d,
            z: &z,
            w_inverse: &w_inverse,
        };
        direction(
            sys, &factor, &scaling, &rb, &rc, rt, &rxw, refine, &mut work,
        );
        let ap = max_step(&z_inverse, &work.dz).min(1.0);
        let ad = max_step(&w_inverse, &work.dw).min(1.0);
        let mu_aff = z
            .iter()
            .zip(&w)
            .zip(work.dz.iter().zip(&work.dw))
            .map(|((zj, wj), (dz, dw))| (zj + ap * dz) * (wj + ad * dw))
            .sum::<f64>()
            / len as f64;
        let sigma = (mu_aff / mu).powi(3).clamp(0.0, 1.0);
        for (r, ((zj, wj), (dz, dw))) in rxw
            .iter_mut()
            .zip(z.iter().zip(&w).zip(work.dz.iter().zip(&work.dw)))
        {
            *r = -zj * wj - dz * dw + sigma * mu;
        }
        let dt = direction(
            sys, &factor, &scaling, &rb, &rc, rt, &rxw, refine, &mut work,
        );
        let ap = (0.99 * max_step(&z_inverse, &work.dz)).min(1.0);
        let ad = (0.99 * max_step(&w_inverse, &work.dw)).min(1.0);
        for (zj, dz) in z.iter_mut().zip(&work.dz) {
            *zj = (*zj + ap * dz).max(1e-300);
        }
        for (wj, dw) in w.iter_mut().zip(&work.dw) {
            *wj = (*wj + ad * dw).max(1e-300);
        }
        t += ap * dt;
        for (y, dy) in y.iter_mut().zip(&work.y) {
            *y += ad * dy;
        }
    }
    let (error, x, t) = best;
    if x.is_empty() {
        return Err(IpmError::NoConvergence { iterations, error });
    }
    Ok((error, x, t))
}

/// Solves the Newton system with right-hand side (r, r_t) into `work.y`, returns the border
/// unknown, refining once against the exact products A (D (A^T y)) + a_t v and a_t^T y: the
/// eliminations lose digits when D spans many orders of magnitude near the optimum, and
/// refinement wins them back (Wright, "Primal-Dual Interior-Point Methods", SIAM 1997,
/// chapter 11).
#[inline(always)]
fn solve_refined<S: System>(
    sys: &S,
    factor: &S::Factor,
    d: &[f64],
    r: &[f64],
    r_t: f64,
    refine: bool,
    work: &mut Work,
) -> f64 {
    let n = sys.jobs();
    let mut v = factor.solve(r, r_t, &mut work.y, &mut work.scratch);
    if !refine {
        return v;
    }
    sys.apply_transpose(&work.y, &mut work.aty);
    for (a, dj) in work.aty.iter_mut().zip(d) {
        *a *= dj;
    }
    sys.apply(&work.aty, &mut work.back);
    work.back[..n].iter_mut().for_each(|b| *b -= v);
    for (b, r) in work.back.iter_mut().zip(r) {
        *b = r - *b;
    }
    let fix_t = r_t - t_dot(n, &work.y);
    v += factor.solve(&work.back, fix_t, &mut work.fix, &mut work.scratch);
    for (y, f) in work.y.iter_mut().zip(&work.fix) {
        *y += f;
    }
    v
}

/// The current iterate's scaling: D = Z W^-1, Z and W^-1 (the bounded variables z, their dual
/// slacks w).
struct Scaling<'a> {
    d: &'a [f64],
    z: &'a [f64],
    w_inverse: &'a [f64],
}

/// One Newton direction for complementarity target `rxw` (predictor or corrector): fills
/// `work.dz`, `work.y` (dy) and `work.dw`, returns dt.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn direction<S: System>(
    sys: &S,
    factor: &S::Factor,
    scaling: &Scaling<'_>,
    rb: &[f64],
    rc: &[f64],
    rt: f64,
    rxw: &[f64],
    refine: bool,
    work: &mut Work,
) -> f64 {
    let Scaling { d, z, w_inverse } = *scaling;
    // [A D A^T, a_t; a_t^T, 0] [dy; dt] = [-rb - A (W^-1 rxw + D rc); -rt]
    for (v, ((r, wi), (dj, c))) in work
        .v
        .iter_mut()
        .zip(rxw.iter().zip(w_inverse).zip(d.iter().zip(rc)))
    {
        *v = r * wi + dj * c;
    }
    sys.apply(&work.v, &mut work.av);
    for ((h, r), a) in work.rhs.iter_mut().zip(rb).zip(&work.av) {
        *h = -r - a;
    }
    let rhs = std::mem::take(&mut work.rhs);
    let dt = solve_refined(sys, factor, d, &rhs, -rt, refine, work);
    work.rhs = rhs;
    sys.apply_transpose(&work.y, &mut work.aty);
    for ((dw, dz), ((c, aty), ((r, zj), wi))) in work.dw.iter_mut().zip(&mut work.dz).zip(
        rc.iter()
            .zip(&work.aty)
            .zip(rxw.iter().zip(z).zip(w_inverse)),
    ) {
        *dw = -c - aty;
        *dz = (r - zj * *dw) * wi;
    }
    dt
}

/// The max-min LP over general entries (a job alone or a pair of jobs sharing GPUs): `gavel-mmf-ss`.
pub struct EntryLp<'a> {
    /// Number of jobs n.
    pub jobs: usize,
    /// The entries (one or two jobs each).
    pub entries: &'a [Entry],
    /// n_k per type.
    pub capacity: &'a [f64],
}

/// One entry's data in the dense backend.
#[derive(Debug, Clone, Copy)]
struct Row {
    jobs: [usize; 2],
    members: usize,
    size: f64,
}

/// The dense backend: x entry-major (x[r * K + k]), then su (n), sr (n), sc (K); rows U (n),
/// R (n), C (K).
struct Dense<'a> {
    n: usize,
    k: usize,
    rows: Vec<Row>,
    /// u[(r * K + k) * 2 + m]: utility coefficient of member m.
    u: Vec<f64>,
    capacity: &'a [f64],
}

impl System for Dense<'_> {
    type Factor = Cholesky;

    fn refines(&self) -> bool {
        false
    }

    fn jobs(&self) -> usize {
        self.n
    }

    fn len(&self) -> usize {
        self.rows.len() * self.k + 2 * self.n + self.k
    }

    #[inline(always)]
    fn apply(&self, z: &[f64], out: &mut [f64]) {
        let (n, k) = (self.n, self.k);
        let base = self.rows.len() * k;
        for i in 0..n {
            out[i] = -z[base + i];
            out[n + i] = z[base + n + i];
        }
        let (head, cap) = out.split_at_mut(2 * n);
        cap.copy_from_slice(&z[base + 2 * n..base + 2 * n + k]);
        // Per entry, sums over the types first: four scattered writes instead of 4K.
        for ((row, x), u) in self
            .rows
            .iter()
            .zip(z[..base].chunks_exact(k))
            .zip(self.u.chunks_exact(2 * k))
        {
            let (mut ua, mut ub, mut total) = (0.0, 0.0, 0.0);
            for kk in 0..k {
                ua += u[2 * kk] * x[kk];
                ub += u[2 * kk + 1] * x[kk];
                total += x[kk];
                cap[kk] += row.size * x[kk];
            }
            let a = row.jobs[0];
            head[a] += ua;
            head[n + a] += total;
            if row.members == 2 {
                let b = row.jobs[1];
                head[b] += ub;
                head[n + b] += total;
            }
        }
    }

    #[inline(always)]
    fn apply_transpose(&self, y: &[f64], out: &mut [f64]) {
        let (n, k) = (self.n, self.k);
        let base = self.rows.len() * k;
        let yc = &y[2 * n..2 * n + k];
        for ((row, o), u) in self
            .rows
            .iter()
            .zip(out[..base].chunks_exact_mut(k))
            .zip(self.u.chunks_exact(2 * k))
        {
            let a = row.jobs[0];
            let (ya, ra) = (y[a], y[n + a]);
            let (yb, rb) = if row.members == 2 {
                (y[row.jobs[1]], y[n + row.jobs[1]])
            } else {
                (0.0, 0.0)
            };
            for kk in 0..k {
                o[kk] = u[2 * kk] * ya + ra + u[2 * kk + 1] * yb + rb + row.size * yc[kk];
            }
        }
        for i in 0..n {
            out[base + i] = -y[i];
            out[base + n + i] = y[n + i];
        }
        out[base + 2 * n..base + 2 * n + k].copy_from_slice(yc);
    }

    fn rhs(&self) -> Vec<f64> {
        let n = self.n;
        let mut b = vec![0.0; 2 * n + self.k];
        b[n..2 * n].iter_mut().for_each(|v| *v = 1.0);
        b[2 * n..].copy_from_slice(self.capacity);
        b
    }

    /// Builds A D A^T densely (each x column touches at most 5 rows) and factors it by
    /// Cholesky; t's border is handled through q = M^-1 a_t. O(E K + (2n + K)^3 / 6).
    #[inline(always)]
    fn factor(&self, d: &[f64]) -> Cholesky {
        let (n, k) = (self.n, self.k);
        let m = 2 * n + k;
        let base = self.rows.len() * k;
        // The lower triangle of M, column-major (faer's layout): M[i][j], i >= j, at j * m + i.
        let mut l = vec![0.0; m * m];
        // What every entry of a job adds to the job's own rows (U_a U_a, R_a U_a, R_a R_a) and
        // to its couplings with the capacity rows (U_a C_k, R_a C_k), summed in small per-job
        // arrays that stay in L1 cache, then written into M once: M has (2n + K)^2 entries
        // and scattered additions into it cost more than the arithmetic.
        let mut own = vec![[0.0_f64; 3]; n];
        let mut coupling = vec![0.0_f64; n * 2 * k];
        let mut capacity = vec![0.0_f64; k];
        for ((row, dr), ur) in self
            .rows
            .iter()
            .zip(d[..base].chunks_exact(k))
            .zip(self.u.chunks_exact(2 * k))
        {
            // The column of x[r][k] is u_a e_Ua + e_Ra (+ u_b e_Ub + e_Rb) + s e_Ck.
            let (a, b) = (row.jobs[0], row.jobs[1]);
            let s = row.size;
            let (mut uu, mut ur_, mut rr) = ([0.0_f64; 2], [0.0_f64; 2], 0.0_f64);
            let (mut ab, mut ua_rb, mut ra_ub) = (0.0_f64, 0.0_f64, 0.0_f64);
            for kk in 0..k {
                let dj = dr[kk];
                let (ua, ub) = (ur[2 * kk], ur[2 * kk + 1]);
                uu[0] += dj * ua * ua;
                ur_[0] += dj * ua;
                rr += dj;
                coupling[a * 2 * k + kk] += dj * s * ua;
                coupling[a * 2 * k + k + kk] += dj * s;
                capacity[kk] += dj * s * s;
                if row.members == 2 {
                    uu[1] += dj * ub * ub;
                    ur_[1] += dj * ub;
                    ab += dj * ua * ub;
                    ua_rb += dj * ua;
                    ra_ub += dj * ub;
                    coupling[b * 2 * k + kk] += dj * s * ub;
                    coupling[b * 2 * k + k + kk] += dj * s;
                }
            }
            for (mm, &j) in row.jobs[..row.members].iter().enumerate() {
                own[j][0] += uu[mm];
                own[j][1] += ur_[mm];
                own[j][2] += rr;
            }
            if row.members == 2 {
                let mut add = |i: usize, j: usize, v: f64| {
                    let (i, j) = if j <= i { (i, j) } else { (j, i) };
                    l[j * m + i] += v;
                };
                add(a, b, ab);
                add(n + b, a, ua_rb);
                add(n + a, b, ra_ub);
                add(n + a, n + b, rr);
            }
        }
        for (a, o) in own.iter().enumerate() {
            l[a * m + a] += o[0] + d[base + a];
            l[a * m + n + a] += o[1];
            l[(n + a) * m + n + a] += o[2] + d[base + n + a];
            for kk in 0..k {
                l[a * m + 2 * n + kk] += coupling[a * 2 * k + kk];
                l[(n + a) * m + 2 * n + kk] += coupling[a * 2 * k + k + kk];
            }
        }
        for kk in 0..k {
            l[(2 * n + kk) * m + 2 * n + kk] += capacity[kk] + d[base + 2 * n + kk];
        }
        let factored = cholesky(&mut l, m);
        let mut q = vec![0.0; m];
        q[..n].iter_mut().for_each(|v| *v = -1.0);
        if factored {
            cholesky_solve(&l, m, &mut q);
        } else {
            q.fill(f64::NAN);
        }
        let sigma = -q[..n].iter().sum::<f64>();
        Cholesky {
            m,
            u: n,
            l,
            factored,
            q,
            sigma,
        }
    }
}

/// [`mehrotra`] on the dense backend, compiled for AVX2 and FMA when the CPU has them (the
/// Cholesky factorization and the long vector passes dominate and vectorize four-wide).
fn solve_dense(sys: &Dense<'_>, keep: usize) -> Result<(f64, Vec<f64>, f64), IpmError> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU supports the features `solve_dense_avx2` is compiled for (checked
            // just above); the function has no other requirement.
            return unsafe { solve_dense_avx2(sys, keep) };
        }
    }
    mehrotra(sys, keep)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn solve_dense_avx2(sys: &Dense<'_>, keep: usize) -> Result<(f64, Vec<f64>, f64), IpmError> {
    mehrotra(sys, keep)
}

/// A dense Cholesky factor of A D A^T with t's border.
struct Cholesky {
    m: usize,
    /// Number of U rows (jobs): a_t is -1 there.
    u: usize,
    /// Lower-triangular factor, column-major (faer's layout).
    l: Vec<f64>,
    /// Whether the factorization succeeded; if not, every solve gives NaN (see [`cholesky`]).
    factored: bool,
    /// q = M^-1 a_t.
    q: Vec<f64>,
    /// a_t^T q.
    sigma: f64,
}

impl Solve for Cholesky {
    fn scratch_len(&self) -> usize {
        0
    }

    /// y = M^-1 r - v q with v = (a_t^T M^-1 r - r_t) / sigma. O((2n + K)^2).
    fn solve(&self, r: &[f64], r_t: f64, y: &mut [f64], _scratch: &mut [f64]) -> f64 {
        if !self.factored {
            y[..self.m].fill(f64::NAN);
            return f64::NAN;
        }
        y[..self.m].copy_from_slice(&r[..self.m]);
        cholesky_solve(&self.l, self.m, y);
        let at_y: f64 = -y[..self.u].iter().sum::<f64>();
        let v = if self.sigma != 0.0 {
            (at_y - r_t) / self.sigma
        } else {
            0.0
        };
        for (yi, qi) in y.iter_mut().zip(&self.q) {
            *yi -= v * qi;
        }
        v
    }
}

/// In-place Cholesky factorization M = L L^T of the lower triangle of the dense m x m matrix
/// (column-major), by faer's blocked LL^T (SIMD kernels chosen at run time); O(m^3 / 3) flops.
/// Pivots that rounding makes tiny or negative are replaced by a small positive value, the
/// usual safeguard of interior-point codes (Wright, "Primal-Dual Interior-Point Methods", SIAM
/// 1997, chapter 11), through faer's dynamic regularization. Returns false when the matrix is
/// not finite or faer still reports a non-positive pivot: the solves then give NaN, which stops
/// the iterations at the best point so far.
fn cholesky(a: &mut [f64], m: usize) -> bool {
    if a.iter().any(|v| !v.is_finite()) {
        return false;
    }
    let scale = (0..m)
        .map(|i| a[i * m + i].abs())
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let regularization = LltRegularization {
        dynamic_regularization_delta: 1e-30 * scale,
        dynamic_regularization_epsilon: 1e-30 * scale,
    };
    let mut buffer = MemBuffer::new(cholesky_in_place_scratch::<f64>(
        m,
        Par::Seq,
        Spec::default(),
    ));
    let matrix = MatMut::from_column_major_slice_mut(a, m, m);
    cholesky_in_place(
        matrix,
        regularization,
        Par::Seq,
        MemStack::new(&mut buffer),
        Spec::default(),
    )
    .is_ok()
}

/// Solves L L^T x = b in place with the factor of [`cholesky`]. O(m^2).
fn cholesky_solve(l: &[f64], m: usize, b: &mut [f64]) {
    let factor = MatRef::from_column_major_slice(l, m, m);
    let rhs = MatMut::from_column_major_slice_mut(b, m, 1);
    let mut buffer = MemBuffer::new(solve_in_place_scratch::<f64>(m, 1, Par::Seq));
    solve_in_place_with_conj(factor, Conj::No, rhs, Par::Seq, MemStack::new(&mut buffer));
}

impl EntryLp<'_> {
    /// Solves the LP: x per entry and type (row-major, entries x K), clipped to [0, 1].
    pub fn solve(&self) -> Result<IpmSolution, IpmError> {
        let (n, k) = (self.jobs, self.capacity.len());
        if self.capacity.iter().any(|v| !v.is_finite() || *v < 0.0) {
            return Err(IpmError::Invalid("capacities must be finite and >= 0"));
        }
        let mut rows = Vec::with_capacity(self.entries.len());
        let mut u = vec![0.0; self.entries.len() * k * 2];
        for (r, e) in self.entries.iter().enumerate() {
            if e.job >= n || e.partner.is_some_and(|j| j >= n) || e.utility.len() != k {
                return Err(IpmError::Invalid(
                    "entries hold one or two of the jobs and a utility per type",
                ));
            }
            if !(e.scale_factor.is_finite() && e.scale_factor >= 0.0) {
                return Err(IpmError::Invalid("scale factors must be finite and >= 0"));
            }
            let members = 1 + usize::from(e.partner.is_some());
            rows.push(Row {
                jobs: [e.job, e.partner.unwrap_or(0)],
                members,
                size: e.scale_factor,
            });
            for (kk, us) in e.utility.iter().enumerate() {
                // A job alone's second coefficient is unused: 0 in the LP whatever it holds.
                for (m, &v) in us.iter().enumerate().take(members) {
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(IpmError::Invalid("utilities must be finite and >= 0"));
                    }
                    u[(r * k + kk) * 2 + m] = v;
                }
            }
        }
        if n == 0 {
            return Ok(IpmSolution {
                x: vec![0.0; self.entries.len() * k],
                t: 0.0,
                error: 0.0,
            });
        }
        let mut best = vec![0.0_f64; n];
        for (r, row) in rows.iter().enumerate() {
            for kk in 0..k {
                for m in 0..row.members {
                    let j = row.jobs[m];
                    best[j] = best[j].max(u[(r * k + kk) * 2 + m]);
                }
            }
        }
        let c = utility_scale(best.into_iter());
        u.iter_mut().for_each(|v| *v *= c);
        let sys = Dense {
            n,
            k,
            rows,
            u,
            capacity: self.capacity,
        };
        let keep = self.entries.len() * k;
        let (error, x, t) = solve_dense(&sys, keep)?;
        let t = t / c;
        Ok(IpmSolution {
            x: x.into_iter().map(|v| v.clamp(0.0, 1.0)).collect(),
            t,
            error,
        })
    }
}

/// The Newton system factored by block elimination (see [`Data::factor`]); vectors per job,
/// and per coupling unknown (K capacity rows, then t) a column of n.
struct Factor {
    n: usize,
    k: usize,
    /// B_i^-1 = [[i00, i01], [i01, i11]].
    i00: Vec<f64>,
    i01: Vec<f64>,
    i11: Vec<f64>,
    /// E' = [E, a_t], U and R rows.
    eu: Vec<f64>,
    er: Vec<f64>,
    /// W = B^-1 E', U and R rows.
    wu: Vec<f64>,
    wr: Vec<f64>,
    /// LU factors of the (K + 1) x (K + 1) Schur complement.
    lu: Vec<f64>,
    pivots: Vec<usize>,
}

impl Solve for Factor {
    fn scratch_len(&self) -> usize {
        2 * self.n + self.k + 1
    }

    /// O(n K).
    fn solve(&self, r: &[f64], r_t: f64, y: &mut [f64], scratch: &mut [f64]) -> f64 {
        let (n, k) = (self.n, self.k);
        let m = k + 1;
        let (bu, rest) = scratch.split_at_mut(n);
        let (br, rest) = rest.split_at_mut(n);
        let rc = &mut rest[..m];
        let (ru, rr) = (&r[..n], &r[n..2 * n]);
        for i in 0..n {
            bu[i] = self.i00[i] * ru[i] + self.i01[i] * rr[i];
            br[i] = self.i01[i] * ru[i] + self.i11[i] * rr[i];
        }
        // [y_C, v] = S^-1 ([r_C, r_t] - E'^T B^-1 r_B).
        for c in 0..m {
            let (eu, er) = (&self.eu[c * n..(c + 1) * n], &self.er[c * n..(c + 1) * n]);
            let mut dot = 0.0;
            for i in 0..n {
                dot += eu[i] * bu[i] + er[i] * br[i];
            }
            rc[c] = if c < k { r[2 * n + c] } else { r_t } - dot;
        }
        lu_solve(&self.lu, &self.pivots, rc, m);
        // y_B = B^-1 r_B - W [y_C, v].
        let (yu, rest) = y.split_at_mut(n);
        let (yr, yc) = rest.split_at_mut(n);
        yu.copy_from_slice(bu);
        yr.copy_from_slice(br);
        for (c, &x) in rc.iter().enumerate().take(m) {
            let (wu, wr) = (&self.wu[c * n..(c + 1) * n], &self.wr[c * n..(c + 1) * n]);
            for i in 0..n {
                yu[i] -= wu[i] * x;
                yr[i] -= wr[i] * x;
            }
        }
        yc[..k].copy_from_slice(&rc[..k]);
        rc[k]
    }
}

/// Largest alpha in [0, 1/0.99] keeping v + alpha dv >= 0 (capped so that 0.99 alpha <= 1),
/// from `inverse` = 1/v (v > 0): 1 / max(0.99, max_j -dv_j / v_j), products instead of a
/// division per variable.
#[inline(always)]
fn max_step(inverse: &[f64], dv: &[f64]) -> f64 {
    // Four running maxima, branch-free, so that the loop vectorizes.
    let mut lanes = [0.99_f64; 4];
    let (ci, ri) = inverse.as_chunks::<4>();
    let (cd, rd) = dv.as_chunks::<4>();
    for (x, d) in ci.iter().zip(cd) {
        for l in 0..4 {
            let rate = -d[l] * x[l];
            lanes[l] = if rate > lanes[l] { rate } else { lanes[l] };
        }
    }
    for (x, d) in ri.iter().zip(rd) {
        lanes[0] = lanes[0].max(-d * x);
    }
    1.0 / lanes[0].max(lanes[1]).max(lanes[2].max(lanes[3]))
}

/// Scratch vectors of one solve, allocated once.
struct Work {
    y: Vec<f64>,
    fix: Vec<f64>,
    scratch: Vec<f64>,
    aty: Vec<f64>,
    back: Vec<f64>,
    v: Vec<f64>,
    av: Vec<f64>,
    rhs: Vec<f64>,
    dz: Vec<f64>,
    dw: Vec<f64>,
}

impl Work {
    fn new(len: usize, rows: usize, scratch: usize) -> Work {
        Work {
            y: vec![0.0; rows],
            fix: vec![0.0; rows],
            scratch: vec![0.0; scratch],
            aty: vec![0.0; len],
            back: vec![0.0; rows],
            v: vec![0.0; len],
            av: vec![0.0; rows],
            rhs: vec![0.0; rows],
            dz: vec![0.0; len],
            dw: vec![0.0; len],
        }
    }
}

/// LU factorization with partial pivoting of the dense m x m matrix, in place; returns the pivot
/// rows. O(m^3).
fn lu_factor(a: &mut [f64], m: usize) -> Vec<usize> {
    let mut pivots = Vec::with_capacity(m);
    for col in 0..m {
        let p = (col..m)
            .max_by(|&x, &y| a[x * m + col].abs().total_cmp(&a[y * m + col].abs()))
            .unwrap_or(col);
        pivots.push(p);
        if p != col {
            for c in 0..m {
                a.swap(col * m + c, p * m + c);
            }
        }
        let d = a[col * m + col];
        if d == 0.0 {
            continue;
        }
        for row in col + 1..m {
            let f = a[row * m + col] / d;
            a[row * m + col] = f;
            for c in col + 1..m {
                a[row * m + c] -= f * a[col * m + c];
            }
        }
    }
    pivots
}

/// Solves with the factors of [`lu_factor`], in place. O(m^2).
fn lu_solve(a: &[f64], pivots: &[usize], r: &mut [f64], m: usize) {
    for (col, &p) in pivots.iter().enumerate() {
        r.swap(col, p);
        for row in col + 1..m {
            r[row] -= a[row * m + col] * r[col];
        }
    }
    for col in (0..m).rev() {
        let d = a[col * m + col];
        let s: f64 = (col + 1..m).map(|c| a[col * m + c] * r[c]).sum();
        r[col] = if d == 0.0 { 0.0 } else { (r[col] - s) / d };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block elimination solves the same bordered system as a dense [A D A^T, a_t; a_t^T, 0].
    #[test]
    fn newton_system_matches_dense() {
        let utility = [2.0, 1.0, 0.5, 1.0, 3.0, 0.0, 0.7, 0.2, 1.1];
        let l = Layout { n: 3, k: 3 };
        let mut a = vec![0.0; 9];
        for i in 0..3 {
            for kk in 0..3 {
                a[kk * 3 + i] = utility[i * 3 + kk];
            }
        }
        let lp = Data {
            l,
            a,
            size: &[1.0, 2.0, 1.0],
            capacity: &[2.0, 1.0, 3.0],
        };
        let (len, rows) = (l.len(), l.rows());
        // Dense A by applying to unit vectors.
        let mut a = vec![vec![0.0; len]; rows];
        let mut e = vec![0.0; len];
        let mut col = vec![0.0; rows];
        for j in 0..len {
            e.iter_mut().for_each(|v| *v = 0.0);
            e[j] = 1.0;
            lp.apply(&e, &mut col);
            for r in 0..rows {
                a[r][j] = col[r];
            }
        }
        let d: Vec<f64> = (0..len)
            .map(|j| 0.3 + (j as f64 * 0.77).sin().abs() * 5.0)
            .collect();
        let rhs: Vec<f64> = (0..rows).map(|r| (r as f64 * 1.3).cos()).collect();
        let r_t = 0.4;
        let mut y = vec![0.0; rows];
        let mut scratch = vec![0.0; 2 * l.n + l.k + 1];
        let v = lp.factor(&d).solve(&rhs, r_t, &mut y, &mut scratch);
        for r in 0..rows {
            let mut back: f64 = (0..rows)
                .map(|c| (0..len).map(|j| a[r][j] * d[j] * a[c][j]).sum::<f64>() * y[c])
                .sum();
            if r < l.n {
                back -= v;
            }
            assert!(
                (back - rhs[r]).abs() < 1e-9,
                "row {r}: {back} vs {}",
                rhs[r]
            );
        }
        assert!((t_dot(l.n, &y) - r_t).abs() < 1e-9);
    }

    #[test]
    fn two_jobs_one_fast_type() {
        // Two jobs, one GPU of each of two types; job 0 is 2x faster on type 0, job 1 equal.
        // Optimum: job 1 takes type 1 fully (utility 1), job 0 takes type 0 (utility 2):
        // min = 1; any split that keeps both >= 1 is optimal, and t = 1 at best... unless
        // sharing lifts the minimum: job 1 also gets part of type 0? Then job 0 drops below 2 but
        // stays >= 1: t is bounded by job 1's max utility, sum x <= 1 at rate 1: t* = 1.
        let lp = MaxMinLp {
            utility: &[2.0, 1.0, 1.0, 1.0],
            size: &[1.0, 1.0],
            capacity: &[1.0, 1.0],
        };
        let IpmSolution { x, t, .. } = lp.solve().unwrap();
        assert!((t - 1.0).abs() < 1e-5, "t = {t}");
        let u0 = 2.0 * x[0] + x[1];
        let u1 = x[2] + x[3];
        assert!(u0 >= 1.0 - 1e-5 && u1 >= 1.0 - 1e-5);
        assert!(x[0] + x[2] <= 1.0 + 1e-7 && x[1] + x[3] <= 1.0 + 1e-7);
    }

    #[test]
    fn capacity_binds() {
        // Three equal jobs on one GPU: each gets a third.
        let lp = MaxMinLp {
            utility: &[1.0, 1.0, 1.0],
            size: &[1.0, 1.0, 1.0],
            capacity: &[1.0],
        };
        let IpmSolution { x, t, .. } = lp.solve().unwrap();
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
        let size = [
            1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
            1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
            1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
            1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
            1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
        ];
        let capacity = [36.0, 36.0, 36.0];
        let lp = MaxMinLp {
            utility: &utility,
            size: &size,
            capacity: &capacity,
        };
        let solution = lp.solve().unwrap();
        assert!(
            solution.t > 0.0 && solution.error <= FALLBACK,
            "{:?}",
            solution.error
        );
    }
}
