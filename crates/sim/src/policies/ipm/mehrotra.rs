//! Mehrotra's predictor-corrector primal-dual interior-point iteration, generic over the form
//! of the LP's linear algebra ([`System`]): why it exists is the module documentation of
//! [`ipm`](super); this file is the part both forms share.
//!
//! Per iteration: residuals and the stopping test (ECOS's tolerances, [`FEASIBILITY`] and
//! [`GAP`], with the best iterate kept for [`FALLBACK`]); one factorization of the normal
//! equations; the affine-scaling (predictor) direction, the centering parameter
//! sigma = (mu_aff / mu)^3, the corrector direction with the same factors; step lengths by the
//! ratio test at 0.99 of the boundary. Follows Nocedal and Wright, "Numerical Optimization",
//! 2nd ed., algorithm 14.3, and Wright, "Primal-Dual Interior-Point Methods", SIAM 1997
//! (chapters 10 and 11 for the starting point and the refinement). Cost per iteration: the
//! form's factorization plus O(number of variables) for the vector passes, which are zipped
//! iterators so that they vectorize.

use super::{FALLBACK, FEASIBILITY, GAP, IpmError, MAX_ITERATIONS, t_dot};

/// The linear algebra of one form of the max-min LP (see the module documentation for the
/// rows): products with A for the bounded variables and solves of the Newton system
/// [A D A^T, a_t; a_t^T, 0], a_t = -1 on the U rows (the first n rows) and 0 elsewhere.
pub(super) trait System {
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
    /// Factors the Newton system for scaling `d`, reusing the buffers of `spare` (a factor no
    /// longer needed) when given: the result is the same either way.
    fn factor(&self, d: &[f64], spare: Option<Self::Factor>) -> Self::Factor;
    /// How many jobs each bounded variable and each row stands for, when one entry stands for
    /// several identical jobs (the block form's groups); `None` when every one stands for
    /// itself. The iteration's sums over the variables (mu, the starting point's shifts) and
    /// over the rows (b^T y, a_t^T y) count each that many times, so that the iterates are
    /// those of the LP with the jobs apart.
    fn multiplicity(&self) -> Option<(&[f64], &[f64])> {
        None
    }
    /// a_t^T y: minus the sum of the U rows of y, each counted for the jobs it stands for.
    fn t_dot(&self, y: &[f64]) -> f64 {
        let n = self.jobs();
        match self.multiplicity() {
            None => t_dot(n, y),
            Some((_, rows)) => -weighted(Some(rows), y[..n].iter().copied()),
        }
    }
    /// A slower factorization that stays accurate where [`factor`](System::factor)'s
    /// eliminations lose digits, reusing the buffers of `spare` when given; `None` when the
    /// form has none (a Cholesky factorization of the whole matrix is stable already).
    fn factor_stable(&self, _d: &[f64], _spare: Option<Self::Factor>) -> Option<Self::Factor> {
        None
    }
    /// Whether every solve needs one step of iterative refinement (eliminations that subtract
    /// large terms do; a Cholesky factorization of the whole matrix does not).
    fn refines(&self) -> bool {
        true
    }
}

/// A factored Newton system.
pub(super) trait Solve {
    /// Solves [A D A^T, a_t; a_t^T, 0] [y; v] = [r; r_t] into `y`, returns v; `scratch` has
    /// [`scratch_len`](Solve::scratch_len) values.
    fn solve(&self, r: &[f64], r_t: f64, y: &mut [f64], scratch: &mut [f64]) -> f64;
    /// Scratch values `solve` needs.
    fn scratch_len(&self) -> usize;
}

/// The residual a refined solve may leave, relative to its right-hand side, before the LP's
/// systems go to the stable factorization: good solves leave 1e-14 and less; the block
/// elimination's failures (see `block.rs`) leave 1e-8 to 1e-2. Directions with residuals up to
/// 1e-4 still let every LP of the replays converge to the method's tolerance (none went to
/// HiGHS), and the stable factorization costs O((2n + K)^3) an iteration: at 1e-10 ftf's
/// 400-job replay switched 375 times and took 0.74 CPU s, at 1e-4 none and 0.29 s, with
/// gavel-mmf's results identical (docs/simulation.md, "Near saturation").
const SOLVE_ACCURACY: f64 = 1e-4;

/// Mehrotra's predictor-corrector method on `sys`; returns the relative error, the first `keep`
/// bounded variables (the x part) and t of the best iterate.
#[inline(always)]
pub(super) fn mehrotra<S: System>(sys: &S, keep: usize) -> Result<(f64, Vec<f64>, f64), IpmError> {
    let n = sys.jobs();
    let len = sys.len();
    let b = sys.rhs();
    let rows = b.len();
    let ones = vec![1.0; len];
    let start = sys.factor(&ones, None);
    let mut work = Work::new(len, rows, start.scratch_len());

    let (mut t, mut z, mut w, mut y) = starting_point(sys, &start, &b, &mut work);
    let counts = sys.multiplicity();
    // The number of variables of the LP with every job apart.
    let variables = counts.map_or(len as f64, |(c, _)| c.iter().sum());

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
    // The previous factorization, whose buffers the next one reuses.
    let mut spare = Some(start);
    // Whether this LP's systems have gone to the stable factorization.
    let mut stable = false;
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
        let rt = sys.t_dot(&y) + 1.0;
        let mu = dot(counts, &z, &w) / variables;
        let dual = weighted(
            counts.map(|(_, rows)| rows),
            b.iter().zip(&y).map(|(b, y)| b * y),
        );
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
        scale(&z, &w, &mut d, &mut w_inverse, &mut z_inverse);
        let mut factor = if stable {
            sys.factor_stable(&d, spare.take())
        } else {
            None
        }
        .unwrap_or_else(|| sys.factor(&d, spare.take()));
        // Predictor (affine scaling), then corrector with the same factors.
        for (r, (zj, wj)) in rxw.iter_mut().zip(z.iter().zip(&w)) {
            *r = -zj * wj;
        }
        // The block eliminations lose digits as D spreads near the optimum (pivots on nearly
        // singular 2x2 blocks next to t's border), so their solves are always refined: O(n K)
        // each, a few percent of an iteration; the residual left after refinement is checked
        // too (one more product pair), and a miss moves the LP to the stable factorization.
        let refine = sys.refines();
        let scaling = Scaling {
            d: &d,
            z: &z,
            w_inverse: &w_inverse,
        };
        let (_, left) = direction(
            sys, &factor, &scaling, &rb, &rc, rt, &rxw, refine, &mut work,
        );
        // A solve that refinement could not bring back to working accuracy: from here on,
        // this LP's systems go to the stable factorization (see `System::factor_stable`).
        if refine
            && !stable
            && left > SOLVE_ACCURACY
            && let Some(accurate) = sys.factor_stable(&d, None)
        {
            factor = accurate;
            stable = true;
            direction(
                sys, &factor, &scaling, &rb, &rc, rt, &rxw, refine, &mut work,
            );
        }
        let ap = max_step(&z_inverse, &work.dz).min(1.0);
        let ad = max_step(&w_inverse, &work.dw).min(1.0);
        let mu_aff = weighted(
            counts.map(|(c, _)| c),
            z.iter()
                .zip(&w)
                .zip(work.dz.iter().zip(&work.dw))
                .map(|((zj, wj), (dz, dw))| (zj + ap * dz) * (wj + ad * dw)),
        ) / variables;
        let sigma = (mu_aff / mu).powi(3).clamp(0.0, 1.0);
        for (r, ((zj, wj), (dz, dw))) in rxw
            .iter_mut()
            .zip(z.iter().zip(&w).zip(work.dz.iter().zip(&work.dw)))
        {
            *r = -zj * wj - dz * dw + sigma * mu;
        }
        let (dt, _) = direction(
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
        spare = Some(factor);
    }
    let (error, x, t) = best;
    if x.is_empty() {
        return Err(IpmError::NoConvergence { iterations, error });
    }
    Ok((error, x, t))
}

/// D = Z W^-1, W^-1 and Z^-1 of the iterate (z, w): two divisions per variable and iteration,
/// W^-1 for D and the directions, Z^-1 for the step lengths. The pass is zipped iterators,
/// without index checks, so that it vectorizes: with space sharing there are tens of thousands
/// of variables.
#[inline(always)]
fn scale(z: &[f64], w: &[f64], d: &mut [f64], w_inverse: &mut [f64], z_inverse: &mut [f64]) {
    for ((dj, (wi, zi)), (zj, wj)) in d
        .iter_mut()
        .zip(w_inverse.iter_mut().zip(z_inverse.iter_mut()))
        .zip(z.iter().zip(w))
    {
        *wi = 1.0 / wj;
        *zi = 1.0 / zj;
        *dj = zj * *wi;
    }
}

/// Mehrotra's starting point for `sys` factored at D = I (`start`): least-norm primal and dual
/// solutions (the objective is min -t, so the dual needs a_t^T y = -1), shifted into the
/// positive orthant. Returns (t, z, w, y). O(one factored solve pair).
fn starting_point<S: System>(
    sys: &S,
    start: &S::Factor,
    b: &[f64],
    work: &mut Work,
) -> (f64, Vec<f64>, Vec<f64>, Vec<f64>) {
    let len = sys.len();
    let rows = b.len();
    let t = start.solve(b, 0.0, &mut work.y, &mut work.scratch);
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
    let counts = sys.multiplicity();
    let zw = dot(counts, &z, &w);
    let sz = total(counts, &z);
    let sw = total(counts, &w);
    let (ez, ew) = if sw > 0.0 && sz > 0.0 {
        (0.5 * zw / sw, 0.5 * zw / sz)
    } else {
        (1.0, 1.0)
    };
    z.iter_mut().for_each(|v| *v = (*v + ez).max(1e-8));
    w.iter_mut().for_each(|v| *v = (*v + ew).max(1e-8));
    (t, z, w, y)
}

/// sum_j c_j v_j, c the multiplicities of the variables or rows `values` runs over (1 without):
/// every sum of the iteration over groups of identical jobs counts each group for its jobs.
fn weighted(counts: Option<&[f64]>, values: impl Iterator<Item = f64>) -> f64 {
    match counts {
        None => values.sum(),
        Some(c) => values.zip(c).map(|(v, c)| v * c).sum(),
    }
}

/// sum_j c_j a_j b_j over the variables.
fn dot(counts: Option<(&[f64], &[f64])>, a: &[f64], b: &[f64]) -> f64 {
    weighted(counts.map(|(c, _)| c), a.iter().zip(b).map(|(a, b)| a * b))
}

/// sum_j c_j a_j over the variables.
fn total(counts: Option<(&[f64], &[f64])>, a: &[f64]) -> f64 {
    weighted(counts.map(|(c, _)| c), a.iter().copied())
}

/// Solves the Newton system with right-hand side (r, r_t) into `work.y`, returns the border
/// unknown and, when refining, the largest residual left relative to the right-hand side's
/// largest value (0 without refinement). Refines once against the exact products
/// A (D (A^T y)) + a_t v and a_t^T y: the eliminations lose digits when D spans many orders of
/// magnitude near the optimum, and refinement wins them back (Wright, "Primal-Dual
/// Interior-Point Methods", SIAM 1997, chapter 11).
#[inline(always)]
fn solve_refined<S: System>(
    sys: &S,
    factor: &S::Factor,
    d: &[f64],
    r: &[f64],
    r_t: f64,
    refine: bool,
    work: &mut Work,
) -> (f64, f64) {
    let mut v = factor.solve(r, r_t, &mut work.y, &mut work.scratch);
    if !refine {
        return (v, 0.0);
    }
    let fix_t = residual(sys, d, r, r_t, v, work);
    v += factor.solve(&work.back, fix_t, &mut work.fix, &mut work.scratch);
    for (y, f) in work.y.iter_mut().zip(&work.fix) {
        *y += f;
    }
    let left = residual(sys, d, r, r_t, v, work);
    let size = r.iter().map(|v| v.abs()).fold(r_t.abs(), f64::max);
    let left = work.back.iter().map(|v| v.abs()).fold(left.abs(), f64::max);
    (v, if size > 0.0 { left / size } else { left })
}

/// The residual of (`work.y`, v) in the Newton system with right-hand side (r, r_t): into
/// `work.back` for the rows, returned for t's row.
#[inline(always)]
fn residual<S: System>(sys: &S, d: &[f64], r: &[f64], r_t: f64, v: f64, work: &mut Work) -> f64 {
    let n = sys.jobs();
    sys.apply_transpose(&work.y, &mut work.aty);
    for (a, dj) in work.aty.iter_mut().zip(d) {
        *a *= dj;
    }
    sys.apply(&work.aty, &mut work.back);
    work.back[..n].iter_mut().for_each(|b| *b -= v);
    for (b, r) in work.back.iter_mut().zip(r) {
        *b = r - *b;
    }
    r_t - sys.t_dot(&work.y)
}

/// The current iterate's scaling: D = Z W^-1, Z and W^-1 (the bounded variables z, their dual
/// slacks w).
struct Scaling<'a> {
    d: &'a [f64],
    z: &'a [f64],
    w_inverse: &'a [f64],
}

/// One Newton direction for complementarity target `rxw` (predictor or corrector): fills
/// `work.dz`, `work.y` (dy) and `work.dw`, returns dt and the relative residual the solve left
/// (see [`solve_refined`]).
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
) -> (f64, f64) {
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
    let (dt, left) = solve_refined(sys, factor, d, &rhs, -rt, refine, work);
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
    (dt, left)
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
