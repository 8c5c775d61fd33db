//! The normal equations of the max-min LP when every entry is one job (`gavel-mmf`, each step of
//! `ftf`), solved by block elimination.
//!
//! Why it exists: A D A^T has 2n + K rows, but it is block-diagonal in the (U_i, R_i) pairs,
//! coupled only by the K capacity rows C_k and by the column of the free variable t (it appears
//! in every U_i). Eliminating the 2x2 blocks leaves a (K + 1) x (K + 1) Schur complement, so each
//! iteration costs O(n K^2 + K^3) instead of O((2n + K)^3) for a dense factorization. t enters
//! as a bordered unknown (Andersen et al., "Implementation of interior point methods for large
//! scale linear programming", 1996). Vectors are stored type by type (all jobs of type k
//! together) so that every inner loop runs over the jobs.

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
    fn factor(&self, d: &[f64], spare: Option<Factor>) -> Factor {
        let Layout { n, k } = self.l;
        let m = k + 1;
        let (dx, d_su, d_sr, d_sc) = self.l.split(d);
        // The previous iteration's buffers: an LP takes dozens of iterations, and a dozen zeroed
        // allocations per iteration cost as much as the O(n K) passes over them. Sums start
        // from the values fresh vectors would hold; buffers written in full are not cleared.
        let Factor {
            mut i00,
            mut i01,
            mut i11,
            mut eu,
            mut er,
            mut wu,
            mut wr,
            lu: mut schur,
            mut pivots,
            temp:
                Temp {
                    mut uu,
                    mut rr,
                    mut ur,
                    mut det,
                    mut f,
                },
            ..
        } = spare.unwrap_or_default();
        refill_from(&mut uu, d_su);
        refill_from(&mut rr, d_sr);
        refill(&mut ur, n, 0.0);
        // uu rr - ur^2 without cancellation (Lagrange's identity): every term is >= 0.
        refill(&mut det, n, 0.0);
        refill(&mut f, m, 0.0);
        // Columns 0..K of eu and er are written below; t's column is -1 in eu, 0 in er.
        fit(&mut eu, m * n);
        fit(&mut er, m * n);
        er[k * n..].fill(0.0);
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
        fit(&mut i00, n);
        fit(&mut i01, n);
        fit(&mut i11, n);
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
        fit(&mut wu, m * n);
        fit(&mut wr, m * n);
        for c in 0..m {
            let (euc, erc) = (&eu[c * n..(c + 1) * n], &er[c * n..(c + 1) * n]);
            let (wuc, wrc) = (&mut wu[c * n..(c + 1) * n], &mut wr[c * n..(c + 1) * n]);
            for i in 0..n {
                wuc[i] = i00[i] * euc[i] + i01[i] * erc[i];
                wrc[i] = i01[i] * euc[i] + i11[i] * erc[i];
            }
        }
        fit(&mut schur, m * m);
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
        lu_factor(&mut schur, m, &mut pivots);
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
            temp: Temp { uu, rr, ur, det, f },
        }
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
pub(super) fn solve(entries: &[Entry], capacity: &[f64]) -> Result<IpmSolution, IpmError> {
    let l = Layout {
        n: entries.len(),
        k: capacity.len(),
    };
    let Layout { n, k } = l;
    if entries.iter().any(|e| e.utility.len() != k) {
        return Err(IpmError::Invalid("entries hold a utility per type"));
    }
    let size: Vec<f64> = entries.iter().map(|e| e.scale_factor).collect();
    if entries
        .iter()
        .flat_map(|e| e.utility.iter().map(|u| u[0]))
        .chain(size.iter().copied())
        .chain(capacity.iter().copied())
        .any(|v| !v.is_finite() || v < 0.0)
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
    for (i, e) in entries.iter().enumerate() {
        for (kk, u) in e.utility.iter().enumerate() {
            a[kk * n + i] = u[0];
        }
    }
    let c = utility_scale((0..n).map(|i| (0..k).map(|kk| a[kk * n + i]).fold(0.0, f64::max)));
    a.iter_mut().for_each(|v| *v *= c);
    let data = Data {
        l,
        a,
        size: &size,
        capacity,
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

/// The Newton system factored by block elimination (see [`Data::factor`]); vectors per job,
/// and per coupling unknown (K capacity rows, then t) a column of n.
#[derive(Default)]
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
    /// Intermediate sums of the factorization, kept only for their buffers.
    temp: Temp,
}

/// Per-job sums the factorization needs only while it runs (see [`Data::factor`]).
#[derive(Default)]
struct Temp {
    uu: Vec<f64>,
    rr: Vec<f64>,
    ur: Vec<f64>,
    det: Vec<f64>,
    f: Vec<f64>,
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
    use super::super::t_dot;
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
        let v = lp.factor(&d, None).solve(&rhs, r_t, &mut y, &mut scratch);
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

    /// A factorization that reuses an earlier one's buffers solves exactly (bit for bit) as a
    /// fresh one: the iterations reuse them, and the replays must not change.
    #[test]
    fn reused_buffers_give_the_same_factor() {
        let (n, k) = (4, 3);
        let l = Layout { n, k };
        let lp = Data {
            l,
            a: (0..n * k)
                .map(|c| 0.2 + (c as f64 * 0.61).sin().abs())
                .collect(),
            size: &[1.0, 2.0, 1.0, 4.0],
            capacity: &[2.0, 1.0, 3.0],
        };
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
