//! The certificate that multipliers minimize L: a fractional solution of the LP on the
//! near-best choices at mu, found among the vertices of a small box system, whose value is
//! within a slack of L(mu).

use super::gauss_jordan;
use crate::solvers::dp::classes::{Class, rc};

/// Whether `mu` is proven to minimize L up to `slack`: some fractional solution y of the LP
/// puts each class only on choices whose reduced cost at mu is within `slack / 2n` of the
/// class's best (n the jobs), fills every type priced above 0 (to within `slack / (2 K max
/// mu)` units) and no type over its capacity. Then L(mu) - V(y) = sum_c n_c (max rc - E_y rc) +
/// mu . (C - usage(y)) <= slack, and V(y) is at most the LP's value, the least L: no
/// multipliers (the smoothing's included) give a bound lower by more than `slack`.
///
/// y is looked for among the classes whose near-best choices use two different units vectors
/// (at most [`CERTIFY_VARIABLES`] of them, with one slack per type priced 0): each is a share
/// in [0, 1], and the K capacity rows are solved at every vertex of that box system, the
/// shares outside a basis at 0 or 1 (sum_(s <= K) C(m, s) 2^(m - s) systems of at most K x K).
/// Classes of near-best choices on three units vectors or more, or more such classes than the
/// cap, answer `false`, as does a system without a solution in the box: `false` proves
/// nothing, the smoothing then runs as before. A heuristic's input only: exactness never
/// depends on it (any mu >= 0 bounds the optimum, Lemma 1).
///
/// Why: on the 10,000-job Gavel rounds the descent's mu is already optimal and the smoothing
/// (2.5 ms of a 15-27 ms solve) lowers L by nothing; there 4-6 classes tie, on two units vectors
/// each (two of them to rounding only: exact ties miss them, as the descent's least
/// subgradient does).
/// Complexity: O(total choices + 3^m K^3) for m <= [`CERTIFY_VARIABLES`] moving shares.
pub(in crate::solvers::dp) fn proven_minimum(
    classes: &[Class],
    capacity: &[u64],
    mu: &[f64],
    slack: f64,
) -> bool {
    let k = capacity.len();
    let jobs: usize = classes.iter().map(|c| c.jobs.len()).sum();
    if k == 0 || jobs == 0 || mu.len() != k || slack.is_nan() || slack < 0.0 {
        return false;
    }
    // Half the slack for the near-best choices, half for the rows' rounding (below).
    let near = 0.5 * slack / jobs as f64;
    // The capacity rows' right-hand side less what the classes of one units vector use, and
    // the moving shares' columns with their upper bounds.
    let mut rhs: Vec<f64> = capacity.iter().map(|&c| c as f64).collect();
    let mut columns: Vec<(Vec<f64>, f64)> = Vec::new();
    for cl in classes {
        let n = cl.jobs.len() as f64;
        let best = cl
            .choices
            .iter()
            .map(|c| rc(c, mu))
            .fold(f64::NEG_INFINITY, f64::max);
        if cl.jobs.is_empty() || !best.is_finite() {
            continue;
        }
        // The near-best choices' units vectors as (type, units); idle and 0 units alike.
        let mut vectors: Vec<(usize, u64)> = Vec::with_capacity(2);
        for c in &cl.choices {
            if rc(c, mu) >= best - near {
                let v = match c.gpu {
                    Some(t) if c.units > 0 => (t, c.units),
                    _ => (k, 0),
                };
                if !vectors.contains(&v) {
                    vectors.push(v);
                }
            }
        }
        let use_of = |v: (usize, u64)| {
            let mut u = vec![0.0; k];
            if v.0 < k {
                u[v.0] = n * v.1 as f64;
            }
            u
        };
        match vectors[..] {
            [a] => {
                for (r, x) in rhs.iter_mut().zip(use_of(a)) {
                    *r -= x;
                }
            }
            [a, b] => {
                let (ua, ub) = (use_of(a), use_of(b));
                for (r, x) in rhs.iter_mut().zip(&ua) {
                    *r -= x;
                }
                columns.push((ub.iter().zip(&ua).map(|(y, x)| y - x).collect(), 1.0));
            }
            _ => return false,
        }
        if columns.len() > CERTIFY_VARIABLES {
            return false;
        }
    }
    for t in 0..k {
        if mu[t] <= 0.0 {
            let mut e = vec![0.0; k];
            e[t] = 1.0;
            columns.push((e, capacity[t] as f64));
        }
    }
    if columns.len() > CERTIFY_VARIABLES {
        return false;
    }
    // A row met to within `tol` adds at most mu_t tol to L - V(y): K of them, half the slack.
    let dearest = mu.iter().fold(0.0f64, |m, &x| m.max(x));
    let tol = if dearest > 0.0 {
        0.5 * slack / (k as f64 * dearest)
    } else {
        1e-9 * capacity.iter().fold(1.0f64, |m, &c| m.max(c as f64))
    };
    box_solution(&columns, &rhs, tol)
}

/// Most moving shares [`proven_minimum`] looks at (3^7 = 2,187 small systems at most, about
/// 0.3 ms; the 10,000-job Gavel rounds have 4-6).
const CERTIFY_VARIABLES: usize = 7;

/// Whether sum_i y_i a_i = b has a solution with 0 <= y_i <= upper_i (within `tol` in b and a
/// relative 1e-9 in y): a vertex of the box system if any, so every choice of at most rank-many
/// basic shares with the others at a bound is tried, the basic ones by least squares.
pub(super) fn box_solution(columns: &[(Vec<f64>, f64)], b: &[f64], tol: f64) -> bool {
    let k = b.len();
    let m = columns.len();
    let fits = |y: &[f64]| {
        (0..k).all(|t| {
            let lhs: f64 = columns.iter().zip(y).map(|((a, _), y)| a[t] * y).sum();
            (lhs - b[t]).abs() <= tol
        })
    };
    // Each share's state: 0 at its lower bound, 1 at its upper, 2 basic (3^m in all).
    let mut state = vec![0u8; m];
    loop {
        let basic: Vec<usize> = (0..m).filter(|&i| state[i] == 2).collect();
        if basic.len() <= k {
            let mut y: Vec<f64> = (0..m)
                .map(|i| if state[i] == 1 { columns[i].1 } else { 0.0 })
                .collect();
            let rest: Vec<f64> = (0..k)
                .map(|t| {
                    b[t] - columns
                        .iter()
                        .zip(&y)
                        .map(|((a, _), y)| a[t] * y)
                        .sum::<f64>()
                })
                .collect();
            if let Some(x) = least_squares(columns, &basic, &rest) {
                let inside = basic.iter().zip(&x).all(|(&i, &v)| {
                    let up = columns[i].1;
                    v >= -1e-9 * up.max(1.0) && v <= up * (1.0 + 1e-9) + 1e-9
                });
                if inside {
                    for (&i, &v) in basic.iter().zip(&x) {
                        y[i] = v.clamp(0.0, columns[i].1);
                    }
                    if fits(&y) {
                        return true;
                    }
                }
            }
        }
        // The next state vector, as a number in base 3.
        let mut i = 0;
        loop {
            if i == m {
                return false;
            }
            state[i] += 1;
            if state[i] < 3 {
                break;
            }
            state[i] = 0;
            i += 1;
        }
    }
}

/// The least-squares shares of the columns `basic` for `rest` (normal equations, Gaussian
/// elimination with partial pivoting); `Some(empty)` for no column, `None` when singular.
fn least_squares(columns: &[(Vec<f64>, f64)], basic: &[usize], rest: &[f64]) -> Option<Vec<f64>> {
    let s = basic.len();
    let mut a = vec![0.0; s * (s + 1)];
    for (r, &i) in basic.iter().enumerate() {
        for (c, &j) in basic.iter().enumerate() {
            a[r * (s + 1) + c] = columns[i]
                .0
                .iter()
                .zip(&columns[j].0)
                .map(|(x, y)| x * y)
                .sum();
        }
        a[r * (s + 1) + s] = columns[i].0.iter().zip(rest).map(|(x, y)| x * y).sum();
    }
    let largest = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    gauss_jordan(&mut a, s, 1e-12 * largest)
}
