//! The normal equations of the max-min LP with pairs of jobs as entries (`gavel-mmf-ss`),
//! assembled densely and factored by Cholesky.
//!
//! Why it exists: a pair's columns touch two jobs' U and R rows, so A D A^T is not
//! block-diagonal as in [`block`](super::block): it is a dense (2n + K) x (2n + K) matrix. Each
//! x column touches at most five rows, so the assembly is O(E K) for E entries (per-job sums
//! kept in small arrays, written into the matrix once), and faer's blocked Cholesky factors it
//! in O((2n + K)^3 / 3) with SIMD kernels; t's border is eliminated with one extra solve. The
//! safeguards (tiny pivots regularized, non-finite factors stopping the iterations) follow
//! Wright, "Primal-Dual Interior-Point Methods", SIAM 1997, chapter 11.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{
    LltRegularization, cholesky_in_place, cholesky_in_place_scratch,
};
use faer::linalg::cholesky::llt::solve::{solve_in_place_scratch, solve_in_place_with_conj};
use faer::{Conj, MatMut, MatRef, Par, Spec};

use super::mehrotra::{Solve, System, mehrotra};
use super::{IpmError, IpmSolution, utility_scale};
use crate::policies::lp::Entry;

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
    fn factor(&self, d: &[f64], spare: Option<Cholesky>) -> Cholesky {
        let (n, k) = (self.n, self.k);
        let m = 2 * n + k;
        let base = self.rows.len() * k;
        // The previous iteration's (2n + K)^2 matrix and q, refilled with zeros: the same
        // values as fresh vectors, without a large allocation per iteration.
        let (mut l, mut q) = spare.map_or_else(Default::default, |c| (c.l, c.q));
        // The lower triangle of M, column-major (faer's layout): M[i][j], i >= j, at j * m + i.
        l.clear();
        l.resize(m * m, 0.0);
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
        q.clear();
        q.resize(m, 0.0);
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

/// Solves the LP over `entries` (one or two of the `jobs` jobs each): x per entry and type
/// (row-major, entries x K), clipped to [0, 1].
pub(super) fn solve(
    jobs: usize,
    entries: &[Entry],
    capacity: &[f64],
) -> Result<IpmSolution, IpmError> {
    let (n, k) = (jobs, capacity.len());
    if capacity.iter().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(IpmError::Invalid("capacities must be finite and >= 0"));
    }
    let mut rows = Vec::with_capacity(entries.len());
    let mut u = vec![0.0; entries.len() * k * 2];
    for (r, e) in entries.iter().enumerate() {
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
            x: vec![0.0; entries.len() * k],
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
        capacity,
    };
    let keep = entries.len() * k;
    let (error, x, t) = solve_dense(&sys, keep)?;
    let t = t / c;
    Ok(IpmSolution {
        x: x.into_iter().map(|v| v.clamp(0.0, 1.0)).collect(),
        t,
        error,
    })
}
