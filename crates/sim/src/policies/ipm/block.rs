//! The normal equations of the max-min LP when every entry is one job (`gavel-mmf`, each step of
//! `ftf`), solved by block elimination.
//!
//! Why it exists: A D A^T has 2n + K rows, but it is block-diagonal in the (U_i, R_i) pairs,
//! coupled only by the K capacity rows C_k and by the column of the free variable t (it appears
//! in every U_i). Eliminating the 2x2 blocks leaves a (K + 1) x (K + 1) Schur complement, so each
//! iteration costs O(n K^3 + K^3) (K^3 per job for the cancellation-free products of
//! [`Data::factor`]) instead of O((2n + K)^3) for a dense factorization. t enters as a bordered
//! unknown (Andersen et al., "Implementation of interior point methods for large scale linear
//! programming", 1996). Vectors are stored type by type (all jobs of type k together) so that
//! every inner loop runs over the jobs.
//!
//! Identical jobs (same scale factor and utilities) are one group with a multiplicity (see
//! [`solve`]): n is the number of groups, 20 to 30 on Gavel's job mix however many jobs are
//! active. Should a refined block solve still miss (see `mehrotra.rs`), the LP's remaining
//! iterations factor the whole bordered system by LU with partial pivoting instead
//! ([`Data::factor_stable`], O((2n + K)^3)).

use super::mehrotra::{Solve, System, mehrotra};
use super::{IpmError, IpmSolution, utility_scale};
use crate::policies::lp::Entry;

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

/// The LP's data, column-major, one column per group of identical jobs.
struct Data<'a> {
    l: Layout,
    /// `a[k][g]`, column-major.
    a: Vec<f64>,
    /// Scale factor of the group's jobs.
    size: Vec<f64>,
    /// Jobs in the group.
    count: Vec<f64>,
    /// count * size: a group's weight in the capacity rows.
    load: Vec<f64>,
    capacity: &'a [f64],
    /// Multiplicity of each bounded variable and of each row (see [`System::multiplicity`]).
    variable_count: Vec<f64>,
    row_count: Vec<f64>,
}

impl<'a> Data<'a> {
    /// The LP of `l.n` groups: `a` column-major (`a[k][g]`), per group its jobs' scale factor
    /// and how many jobs it has.
    fn new(l: Layout, a: Vec<f64>, size: Vec<f64>, count: Vec<f64>, capacity: &'a [f64]) -> Self {
        let load = size.iter().zip(&count).map(|(s, c)| s * c).collect();
        let mut variable_count = Vec::with_capacity(l.len());
        for _ in 0..l.k + 2 {
            variable_count.extend_from_slice(&count);
        }
        variable_count.extend(std::iter::repeat_n(1.0, l.k));
        let mut row_count = Vec::with_capacity(l.rows());
        row_count.extend_from_slice(&count);
        row_count.extend_from_slice(&count);
        row_count.extend(std::iter::repeat_n(1.0, l.k));
        Data {
            l,
            a,
            size,
            count,
            load,
            capacity,
            variable_count,
            row_count,
        }
    }
}

impl System for Data<'_> {
    type Factor = Factor;

    fn jobs(&self) -> usize {
        self.l.n
    }

    fn len(&self) -> usize {
        self.l.len()
    }

    fn multiplicity(&self) -> Option<(&[f64], &[f64])> {
        Some((&self.variable_count, &self.row_count))
    }

    /// A z for the bounded variables; t's column (-1 on every U row) is added by the callers.
    /// A group's x counts once per job in the capacity rows.
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
                load += self.load[i] * xk[i];
            }
            c[kk] = load;
        }
    }

    /// A^T y for the bounded variables (the column of one job of each group).
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
    /// by block elimination. O(n K^3 + K^3) time (K^3 per group for the products below; K is
    /// 3 on Gavel's clusters), O(n K) memory.
    ///
    /// A D A^T is block-diagonal in the (U_g, R_g) pairs (B_g, one per job), coupled by the K
    /// capacity rows (E, F). t enters as a bordered unknown (the augmented-system treatment of a
    /// free, dense column: Andersen et al., "Implementation of interior point methods for large
    /// scale linear programming", 1996), so the Schur complement
    /// S = F' - sum over jobs of E'^T B^-1 E' is (K + 1) x (K + 1); a group adds its count
    /// times one job's term.
    ///
    /// Why the products are written out instead of forming B^-1 E' and subtracting: near the
    /// optimum a job that runs on one type has d_k of 1e4 and more on that type while its
    /// slacks' d are small, so B_g is nearly singular; adj(B_g) E'_k = s d_k (a_k rr - ur, uu -
    /// a_k ur) then cancels two terms of size d_k down to a value of the small d's size, and the
    /// Schur complement cancels d_k against that again: its error grows as eps d_k^2 / d_small,
    /// enough (1e-5 relative at d_k = 5e4, measured on a stalled LP of the 5.6 jobs/h replay)
    /// for the Newton directions to miss and the iterations to stall above ECOS's reduced
    /// accuracy. Expanded, every such term is a sum in which the large d_k has cancelled
    /// exactly (its coefficient is a_k - a_k): with P_k = a_k rr - ur and Q_k = uu - a_k ur,
    ///   P_k = a_k d_r + sum_q d_q (a_k - a_q),  Q_k = d_u + sum_q a_q d_q (a_q - a_k),
    ///   S_kk gets s^2 d_k det_-k / det (det_-k: det(B) without d_k, a sum of terms >= 0),
    ///   S_kl gets -s^2 d_k d_l (d_u + a_k a_l d_r + sum_q d_q (a_k - a_q)(a_l - a_q)) / det,
    /// and det = uu rr - ur^2 = sum_(p<q) d_p d_q (a_p - a_q)^2 + d_u rr + d_r (uu - d_u)
    /// (Lagrange's identity: every term >= 0).
    fn factor(&self, d: &[f64], spare: Option<Factor>) -> Factor {
        let Layout { n, k } = self.l;
        let m = k + 1;
        let (dx, d_su, d_sr, d_sc) = self.l.split(d);
        // The previous iteration's buffers: an LP takes dozens of iterations, and a dozen zeroed
        // allocations per iteration cost as much as the O(n K) passes over them. Buffers
        // written in full are not cleared.
        let Factor {
            mut i00,
            mut i01,
            mut i11,
            mut wu,
            mut wr,
            lu: mut schur,
            mut pivots,
            mut job,
            mut count,
            full,
            full_pivots,
            ..
        } = spare.unwrap_or_default();
        refill_from(&mut count, &self.count);
        fit(&mut i00, n);
        fit(&mut i01, n);
        fit(&mut i11, n);
        fit(&mut wu, m * n);
        fit(&mut wr, m * n);
        refill(&mut schur, m * m, 0.0);
        for (kk, &v) in d_sc.iter().enumerate() {
            schur[kk * m + kk] = v;
        }
        // One group's a_k and d_k.
        refill(&mut job, 2 * k, 0.0);
        for g in 0..n {
            let (a, dg) = job.split_at_mut(k);
            for kk in 0..k {
                a[kk] = self.a[kk * n + g];
                dg[kk] = dx[kk * n + g];
            }
            let (a, dg) = (&*a, &*dg);
            let (mut sum_d, mut sum_ad, mut sum_aad, mut pairs) = (0.0, 0.0, 0.0, 0.0);
            for p in 0..k {
                sum_d += dg[p];
                sum_ad += a[p] * dg[p];
                sum_aad += a[p] * a[p] * dg[p];
                for q in p + 1..k {
                    let diff = a[p] - a[q];
                    pairs += dg[p] * dg[q] * diff * diff;
                }
            }
            // Dual regularization (Altman and Gondzio, "Regularized symmetric indefinite
            // systems in interior point methods for linear and quadratic optimization", 1999):
            // a tiny shift of B's diagonal, i.e. of the slacks' d, keeps the block invertible;
            // iterative refinement removes its bias.
            let delta = 1e-14 * (sum_aad + d_su[g] + sum_d + d_sr[g]);
            let (du, dr) = (d_su[g] + delta, d_sr[g] + delta);
            let (uu, rr) = (sum_aad + du, sum_d + dr);
            let det = (pairs + du * rr + dr * sum_aad).max(f64::MIN_POSITIVE);
            i00[g] = rr / det;
            i01[g] = -sum_ad / det;
            i11[g] = uu / det;
            let (c, s) = (self.count[g], self.size[g]);
            for kk in 0..k {
                let (ak, dk) = (a[kk], dg[kk]);
                let (mut p_k, mut q_k) = (ak * dr, du);
                for q in 0..k {
                    p_k += dg[q] * (ak - a[q]);
                    q_k += a[q] * dg[q] * (a[q] - ak);
                }
                let (wuk, wrk) = (s * dk * p_k / det, s * dk * q_k / det);
                wu[kk * n + g] = wuk;
                wr[kk * n + g] = wrk;
                // det(B) without d_k.
                let (mut minus, mut rest_d, mut rest_aad) = (0.0, dr, 0.0);
                for p in (0..k).filter(|&p| p != kk) {
                    rest_d += dg[p];
                    rest_aad += a[p] * a[p] * dg[p];
                    for q in (p + 1..k).filter(|&q| q != kk) {
                        let diff = a[p] - a[q];
                        minus += dg[p] * dg[q] * diff * diff;
                    }
                }
                minus += du * rest_d + dr * rest_aad;
                schur[kk * m + kk] += c * s * s * dk * minus / det;
                for l in kk + 1..k {
                    let (al, dl) = (a[l], dg[l]);
                    let mut cross = du + ak * al * dr;
                    for q in (0..k).filter(|&q| q != kk && q != l) {
                        cross += dg[q] * (ak - a[q]) * (al - a[q]);
                    }
                    let v = -c * s * s * dk * dl * cross / det;
                    schur[kk * m + l] += v;
                    schur[l * m + kk] += v;
                }
                schur[kk * m + k] += c * wuk;
                schur[k * m + kk] += c * wuk;
            }
            wu[k * n + g] = -i00[g];
            wr[k * n + g] = -i01[g];
            schur[k * m + k] -= c * i00[g];
        }
        lu_factor(&mut schur, m, &mut pivots);
        Factor {
            n,
            k,
            count,
            i00,
            i01,
            i11,
            wu,
            wr,
            lu: schur,
            pivots,
            job,
            stable: false,
            full,
            full_pivots,
        }
    }

    /// The whole bordered system, (2n + K + 1) x (2n + K + 1) for n groups, assembled densely
    /// and factored by LU with partial pivoting: O(n K + (2n + K)^3). Why: the block
    /// elimination pivots on each group's 2x2 block B_g, and when a job runs on one type with
    /// both its slacks near zero, B_g's small eigenvalue (a sum of the small d's) is a bad
    /// pivot next to t's border: y_B = B^-1 r_B - W [y_C, v] then cancels values 1/eps_B
    /// times larger than itself (measured: residuals of 1e-4 relative that refinement cannot
    /// remove, and stalls above ECOS's reduced accuracy on the degenerate LPs near
    /// saturation). Partial pivoting picks t's row instead and stays accurate. With identical
    /// jobs grouped n is 20 to 30, so this costs about as much as a few block
    /// factorizations; it is used only once a block solve has failed (see `mehrotra.rs`).
    /// The groups' rows are not symmetric (a C row sums over all jobs of a group, a U row
    /// holds one), hence LU rather than a symmetric factorization.
    fn factor_stable(&self, d: &[f64], spare: Option<Factor>) -> Option<Factor> {
        let Layout { n, k } = self.l;
        let (dx, d_su, d_sr, d_sc) = self.l.split(d);
        let mut factor = spare.unwrap_or_default();
        let size = 2 * n + k + 1;
        let (c_row, t_row) = (2 * n, 2 * n + k);
        let full = &mut factor.full;
        refill(full, size * size, 0.0);
        for g in 0..n {
            let (c, s) = (self.count[g], self.size[g]);
            let (u, r) = (g, n + g);
            let (mut uu, mut ur, mut rr) = (d_su[g], 0.0, d_sr[g]);
            for kk in 0..k {
                let (a, dk) = (self.a[kk * n + g], dx[kk * n + g]);
                uu += a * a * dk;
                ur += a * dk;
                rr += dk;
                let ck = c_row + kk;
                full[u * size + ck] = s * a * dk;
                full[r * size + ck] = s * dk;
                full[ck * size + u] = c * s * a * dk;
                full[ck * size + r] = c * s * dk;
                full[ck * size + ck] += c * s * s * dk;
            }
            full[u * size + u] = uu;
            full[u * size + r] = ur;
            full[r * size + u] = ur;
            full[r * size + r] = rr;
            full[u * size + t_row] = -1.0;
            full[t_row * size + u] = -c;
        }
        for kk in 0..k {
            full[(c_row + kk) * size + c_row + kk] += d_sc[kk];
        }
        lu_factor(full, size, &mut factor.full_pivots);
        factor.n = n;
        factor.k = k;
        factor.stable = true;
        Some(factor)
    }
}

/// `v` holding `len` copies of `value`, as `vec![value; len]` would, in its own allocation.
fn refill(v: &mut Vec<f64>, len: usize, value: f64) {
    v.clear();
    v.resize(len, value);
}

/// `v` with `len` values, to be overwritten entirely (what it held before is left in place).
fn fit(v: &mut Vec<f64>, len: usize) {
    v.resize(len, 0.0);
}

/// `v` holding a copy of `from`, as `from.to_vec()` would, in its own allocation.
fn refill_from(v: &mut Vec<f64>, from: &[f64]) {
    v.clear();
    v.extend_from_slice(from);
}

/// Solves the LP whose entry `i` is job `i` alone (checked by the caller): x row-major
/// n x K, clipped to [0, 1].
///
/// Jobs with the same scale factor and the same utilities (bit for bit: the same model, size
/// and weight) are solved as one group with a multiplicity. From the symmetric starting point
/// every Newton step of the LP with the jobs apart is symmetric among them (its system is
/// invariant under exchanging them and has one solution), so the iterates, the stopping test
/// and the answer are those of that LP, up to rounding, with 20 to 30 groups instead of up to
/// 160 jobs near saturation; and the degeneracy that identical jobs bring (they may exchange
/// their types at no cost) is gone from the Newton systems.
pub(super) fn solve(entries: &[Entry], capacity: &[f64]) -> Result<IpmSolution, IpmError> {
    let k = capacity.len();
    if entries.iter().any(|e| e.utility.len() != k) {
        return Err(IpmError::Invalid("entries hold a utility per type"));
    }
    if entries
        .iter()
        .flat_map(|e| e.utility.iter().map(|u| u[0]))
        .chain(entries.iter().map(|e| e.scale_factor))
        .chain(capacity.iter().copied())
        .any(|v| !v.is_finite() || v < 0.0)
    {
        return Err(IpmError::Invalid("coefficients must be finite and >= 0"));
    }
    if entries.is_empty() {
        return Ok(IpmSolution {
            x: Vec::new(),
            t: 0.0,
            error: 0.0,
        });
    }
    // The group of every job, groups in order of their first job.
    let mut group_of = Vec::with_capacity(entries.len());
    let mut first: Vec<usize> = Vec::new();
    let mut count: Vec<f64> = Vec::new();
    let key = |e: &Entry| {
        std::iter::once(e.scale_factor.to_bits())
            .chain(e.utility.iter().map(|u| u[0].to_bits()))
            .collect::<Vec<u64>>()
    };
    let mut seen: std::collections::HashMap<Vec<u64>, usize> = std::collections::HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        let g = *seen.entry(key(e)).or_insert_with(|| {
            first.push(i);
            count.push(0.0);
            first.len() - 1
        });
        count[g] += 1.0;
        group_of.push(g);
    }
    let l = Layout { n: first.len(), k };
    let n = l.n;
    let mut a = vec![0.0; n * k];
    for (g, &i) in first.iter().enumerate() {
        for (kk, u) in entries[i].utility.iter().enumerate() {
            a[kk * n + g] = u[0];
        }
    }
    let c = utility_scale((0..n).map(|g| (0..k).map(|kk| a[kk * n + g]).fold(0.0, f64::max)));
    a.iter_mut().for_each(|v| *v *= c);
    let size: Vec<f64> = first.iter().map(|&i| entries[i].scale_factor).collect();
    let data = Data::new(l, a, size, count, capacity);
    let (error, x, t) = mehrotra(&data, n * k)?;
    let t = t / c;
    // Back to row-major x[i][k], every job its group's.
    let mut rows_x = vec![0.0; entries.len() * k];
    for (i, &g) in group_of.iter().enumerate() {
        for kk in 0..k {
            rows_x[i * k + kk] = x[kk * n + g].clamp(0.0, 1.0);
        }
    }
    Ok(IpmSolution {
        x: rows_x,
        t,
        error,
    })
}

/// The Newton system factored by block elimination (see [`Data::factor`]); vectors per group,
/// and per coupling unknown (K capacity rows, then t) a column of n.
#[derive(Default)]
struct Factor {
    n: usize,
    k: usize,
    /// Jobs per group.
    count: Vec<f64>,
    /// B_g^-1 = [[i00, i01], [i01, i11]].
    i00: Vec<f64>,
    i01: Vec<f64>,
    i11: Vec<f64>,
    /// W = B^-1 E', U and R rows.
    wu: Vec<f64>,
    wr: Vec<f64>,
    /// LU factors of the (K + 1) x (K + 1) Schur complement.
    lu: Vec<f64>,
    pivots: Vec<usize>,
    /// One group's a and d during the factorization, kept only for its buffer.
    job: Vec<f64>,
    /// Whether this is the stable factorization: LU factors of the whole bordered system (see
    /// [`Data::factor_stable`]) in `full` and `full_pivots`, the block fields unused.
    stable: bool,
    full: Vec<f64>,
    full_pivots: Vec<usize>,
}

impl Solve for Factor {
    fn scratch_len(&self) -> usize {
        2 * self.n + self.k + 1
    }

    /// O(n K), or O((2n + K)^2) for the stable factorization.
    fn solve(&self, r: &[f64], r_t: f64, y: &mut [f64], scratch: &mut [f64]) -> f64 {
        let (n, k) = (self.n, self.k);
        if self.stable {
            let size = 2 * n + k + 1;
            let x = &mut scratch[..size];
            x[..size - 1].copy_from_slice(r);
            x[size - 1] = r_t;
            lu_solve(&self.full, &self.full_pivots, x, size);
            y.copy_from_slice(&x[..size - 1]);
            return x[size - 1];
        }
        let m = k + 1;
        let (bu, rest) = scratch.split_at_mut(n);
        let (br, rest) = rest.split_at_mut(n);
        let rc = &mut rest[..m];
        let (ru, rr) = (&r[..n], &r[n..2 * n]);
        for i in 0..n {
            bu[i] = self.i00[i] * ru[i] + self.i01[i] * rr[i];
            br[i] = self.i01[i] * ru[i] + self.i11[i] * rr[i];
        }
        // [y_C, v] = S^-1 ([r_C, r_t] - E'^T B^-1 r_B), E'^T B^-1 = W^T (B is symmetric): W's
        // columns are the accurate ones (see `factor`), where E' times B^-1 r_B would cancel
        // again. Every job of a group counts.
        for c in 0..m {
            let (wu, wr) = (&self.wu[c * n..(c + 1) * n], &self.wr[c * n..(c + 1) * n]);
            let mut dot = 0.0;
            for i in 0..n {
                dot += self.count[i] * (wu[i] * ru[i] + wr[i] * rr[i]);
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

/// LU factorization with partial pivoting of the dense m x m matrix, in place; the pivot rows
/// go to `pivots`. O(m^3).
fn lu_factor(a: &mut [f64], m: usize, pivots: &mut Vec<usize>) {
    pivots.clear();
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
}

/// Solves with the factors of [`lu_factor`], in place. O(m^2).
fn lu_solve(a: &[f64], pivots: &[usize], r: &mut [f64], m: usize) {
    // The factorization swapped whole rows, multipliers included, so the multipliers sit in
    // the rows' final places: every swap first, then the forward substitution.
    for (col, &p) in pivots.iter().enumerate() {
        r.swap(col, p);
    }
    for col in 0..m {
        let rc = r[col];
        for row in col + 1..m {
            r[row] -= a[row * m + col] * rc;
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
    use super::super::t_dot;
    use super::*;

    /// The LP of `utility` (row-major, 3 types per job), `count[g]` jobs per group.
    fn data<'a>(utility: &[f64], size: &[f64], count: &[f64], capacity: &'a [f64]) -> Data<'a> {
        let (n, k) = (size.len(), capacity.len());
        let mut a = vec![0.0; n * k];
        for i in 0..n {
            for kk in 0..k {
                a[kk * n + i] = utility[i * k + kk];
            }
        }
        Data::new(Layout { n, k }, a, size.to_vec(), count.to_vec(), capacity)
    }

    /// Solves [A D A^T, a_t; a_t^T, 0] [y; v] = [rhs; r_t] with a dense Gaussian elimination
    /// (partial pivoting) of the LP with every job apart: `lp` has one job per group.
    fn dense_solve(lp: &Data<'_>, d: &[f64], rhs: &[f64], r_t: f64) -> (Vec<f64>, f64) {
        let (len, rows) = (lp.l.len(), lp.l.rows());
        let m = rows + 1;
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
        let mut mat = vec![vec![0.0; m + 1]; m];
        for p in 0..rows {
            for q in 0..rows {
                mat[p][q] = (0..len).map(|j| a[p][j] * d[j] * a[q][j]).sum::<f64>();
            }
            mat[p][m] = rhs[p];
        }
        for row in mat.iter_mut().take(lp.l.n) {
            row[rows] = -1.0;
        }
        mat[rows][..lp.l.n].fill(-1.0);
        mat[rows][m] = r_t;
        for c in 0..m {
            let p = (c..m)
                .max_by(|&x, &y| mat[x][c].abs().total_cmp(&mat[y][c].abs()))
                .unwrap();
            mat.swap(c, p);
            let (done, below) = mat.split_at_mut(c + 1);
            let pivot = &done[c];
            for row in below {
                let f = row[c] / pivot[c];
                for (x, p) in row[c..].iter_mut().zip(&pivot[c..]) {
                    *x -= f * p;
                }
            }
        }
        let mut x = vec![0.0; m];
        for c in (0..m).rev() {
            let s: f64 = (c + 1..m).map(|q| mat[c][q] * x[q]).sum();
            x[c] = (mat[c][m] - s) / mat[c][c];
        }
        let v = x.pop().unwrap();
        (x, v)
    }

    /// The block elimination solves the same bordered system as a dense [A D A^T, a_t; a_t^T, 0].
    #[test]
    fn newton_system_matches_dense() {
        let utility = [2.0, 1.0, 0.5, 1.0, 3.0, 0.0, 0.7, 0.2, 1.1];
        let lp = data(&utility, &[1.0, 2.0, 1.0], &[1.0; 3], &[2.0, 1.0, 3.0]);
        let l = lp.l;
        let d: Vec<f64> = (0..l.len())
            .map(|j| 0.3 + (j as f64 * 0.77).sin().abs() * 5.0)
            .collect();
        let rhs: Vec<f64> = (0..l.rows()).map(|r| (r as f64 * 1.3).cos()).collect();
        let r_t = 0.4;
        let mut y = vec![0.0; l.rows()];
        let mut scratch = vec![0.0; 2 * l.n + l.k + 1];
        let v = lp.factor(&d, None).solve(&rhs, r_t, &mut y, &mut scratch);
        let (y_dense, v_dense) = dense_solve(&lp, &d, &rhs, r_t);
        assert!((v - v_dense).abs() < 1e-9, "{v} vs {v_dense}");
        for (r, (a, b)) in y.iter().zip(&y_dense).enumerate() {
            assert!((a - b).abs() < 1e-9, "row {r}: {a} vs {b}");
        }
        assert!((t_dot(l.n, &y) - r_t).abs() < 1e-9);
    }

    /// A group of identical jobs solves as the jobs apart: the system of the groups, with
    /// symmetric scaling and right-hand side, gives every job of a group its group's y.
    #[test]
    fn groups_solve_as_jobs_apart() {
        // Groups of 3, 1 and 2 jobs; 3 types.
        let group = [[1.5, 0.8, 0.3], [0.6, 1.4, 0.9], [1.1, 1.1, 0.2]];
        let count = [3usize, 1, 2];
        let size = [1.0, 2.0, 1.0];
        let capacity = [3.0, 2.0, 2.0];
        let grouped = data(&group.concat(), &size, &count.map(|c| c as f64), &capacity);
        let member: Vec<usize> = (0..3).flat_map(|g| vec![g; count[g]]).collect();
        let jobs = member.len();
        let apart = data(
            &member.iter().flat_map(|&g| group[g]).collect::<Vec<_>>(),
            &member.iter().map(|&g| size[g]).collect::<Vec<_>>(),
            &vec![1.0; jobs],
            &capacity,
        );
        // A scaling spanning eight orders of magnitude, as near the optimum, the same for
        // every job of a group; then the same on the jobs apart.
        let (gl, al) = (grouped.l, apart.l);
        let d_group: Vec<f64> = (0..gl.len())
            .map(|j| 10f64.powf(4.0 - 8.0 * ((j as f64 * 0.61).sin().abs())))
            .collect();
        let rhs_group: Vec<f64> = (0..gl.rows()).map(|r| (r as f64 * 1.3).cos()).collect();
        let mut d = Vec::new();
        for kk in 0..3 {
            d.extend(member.iter().map(|&g| d_group[kk * 3 + g]));
        }
        d.extend(member.iter().map(|&g| d_group[9 + g]));
        d.extend(member.iter().map(|&g| d_group[12 + g]));
        d.extend_from_slice(&d_group[15..]);
        let mut rhs: Vec<f64> = member.iter().map(|&g| rhs_group[g]).collect();
        rhs.extend(member.iter().map(|&g| rhs_group[3 + g]));
        rhs.extend_from_slice(&rhs_group[6..]);
        let r_t = 0.4;
        let mut y = vec![0.0; gl.rows()];
        let factor = grouped.factor(&d_group, None);
        let mut scratch = vec![0.0; factor.scratch_len()];
        let v = factor.solve(&rhs_group, r_t, &mut y, &mut scratch);
        let (y_apart, v_apart) = dense_solve(&apart, &d, &rhs, r_t);
        // The stable factorization, of the groups too.
        let stable = grouped.factor_stable(&d_group, None).unwrap();
        let mut y_stable = vec![0.0; gl.rows()];
        let v_stable = stable.solve(&rhs_group, r_t, &mut y_stable, &mut scratch);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-7 * (1.0 + b.abs());
        for (y, v) in [(&y, v), (&y_stable, v_stable)] {
            assert!(close(v, v_apart), "{v} vs {v_apart}");
            for (i, &g) in member.iter().enumerate() {
                assert!(close(y[g], y_apart[i]), "U row of job {i}");
                assert!(close(y[3 + g], y_apart[jobs + i]), "R row of job {i}");
            }
            for kk in 0..3 {
                assert!(close(y[6 + kk], y_apart[2 * jobs + kk]), "C row {kk}");
            }
            assert!(close(grouped.t_dot(y), t_dot(al.n, &y_apart)));
        }
    }

    /// LU with partial pivoting solves a system whose later pivots swap rows that hold earlier
    /// multipliers (the solve once interleaved the swaps with the substitution, which is wrong
    /// then, and the Newton directions went astray on degenerate LPs).
    #[test]
    fn lu_solves_with_crossing_pivots() {
        let m = 4;
        // Column 0 pivots on row 2, column 1 on row 3: row 3 holds column 0's multiplier.
        let a = [
            1.0, 2.0, 0.5, 1.0, //
            2.0, 1.0, 3.0, 0.0, //
            4.0, 0.0, 1.0, 2.0, //
            1.0, 5.0, 0.0, 1.0,
        ];
        let x = [1.0, -2.0, 0.5, 3.0];
        let mut b: Vec<f64> = (0..m)
            .map(|r| (0..m).map(|c| a[r * m + c] * x[c]).sum())
            .collect();
        let mut lu = a.to_vec();
        let mut pivots = Vec::new();
        lu_factor(&mut lu, m, &mut pivots);
        assert_eq!(pivots[..2], [2, 3]);
        lu_solve(&lu, &pivots, &mut b, m);
        for (got, want) in b.iter().zip(x) {
            assert!((got - want).abs() < 1e-12, "{b:?}");
        }
    }

    /// A factorization that reuses an earlier one's buffers solves exactly (bit for bit) as a
    /// fresh one: the iterations reuse them, and the replays must not change.
    #[test]
    fn reused_buffers_give_the_same_factor() {
        let (n, k) = (4, 3);
        let l = Layout { n, k };
        let lp = Data::new(
            l,
            (0..n * k)
                .map(|c| 0.2 + (c as f64 * 0.61).sin().abs())
                .collect(),
            vec![1.0, 2.0, 1.0, 4.0],
            vec![1.0, 3.0, 1.0, 2.0],
            &[2.0, 1.0, 3.0],
        );
        let scaling = |phase: f64| -> Vec<f64> {
            (0..l.len())
                .map(|j| 1e-3 + (j as f64 * phase).cos().abs() * 7.0)
                .collect()
        };
        let (d1, d2) = (scaling(0.37), scaling(1.9));
        let rhs: Vec<f64> = (0..l.rows()).map(|r| (r as f64 * 0.7).sin()).collect();
        let solve = |f: &Factor| {
            let mut y = vec![0.0; l.rows()];
            let mut scratch = vec![0.0; f.scratch_len()];
            let v = f.solve(&rhs, 0.3, &mut y, &mut scratch);
            (y, v)
        };
        let fresh = lp.factor(&d2, None);
        let reused = lp.factor(&d2, Some(lp.factor(&d1, None)));
        let (y_fresh, v_fresh) = solve(&fresh);
        let (y_reused, v_reused) = solve(&reused);
        assert_eq!(v_fresh.to_bits(), v_reused.to_bits());
        assert!(
            y_fresh
                .iter()
                .zip(&y_reused)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
        assert_eq!(fresh.lu, reused.lu);
    }
}
