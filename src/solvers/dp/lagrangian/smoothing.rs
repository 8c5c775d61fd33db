//! The entropic smoothing of L: the smooth L_tau, its gradient and Hessian, and the homotopy of
//! projected Newton steps over falling tau that starts the descent of `smooth_multipliers`.

use super::{Flat, gauss_jordan};
use crate::solvers::dp::limits::{
    ARMIJO, BACKTRACKS, FIRST_TAU, NEWTON_STEPS, RIDGE, SMOOTH_EXCESS, SMOOTH_GAP,
    SMOOTH_LEVEL_GAIN, SMOOTH_LEVELS, SMOOTH_SETTLED, TRUST,
};

/// Entropic smoothing of L, the start of the descent of
/// [`smooth_multipliers`](super::smooth_multipliers).
impl Flat {
    /// L_tau(mu) = sum_k mu_k C_k + sum_c n_c tau ln sum_(q in Q_c) exp(rc_q / tau), a smooth
    /// convex function with L <= L_tau <= L + tau sum_c n_c ln |Q_c| (each class's soft
    /// maximum is within tau ln |Q_c| of its maximum). Writes its gradient and Hessian (K x K,
    /// row-major): d/dmu_a = C_a - sum_c n_c E_p[x_a], and the Hessian is
    /// sum_c n_c Cov_p(x) / tau, where p is class c's softmax of rc / tau and x_a(q) = u_q when q
    /// is on type a, else 0. O(total choices + classes * K^2).
    fn smoothed(&self, mu: &[f64], tau: f64, grad: &mut [f64], hess: &mut [f64]) -> (f64, f64) {
        let k = self.k;
        let mut price = mu.to_vec();
        price.push(0.0);
        let mut value: f64 = mu.iter().zip(&self.capacity).map(|(m, c)| m * c).sum();
        grad.copy_from_slice(&self.capacity);
        hess.fill(0.0);
        let mut loss = 0.0;
        // Per class: the sums of p u and p u^2 per type (the idle pseudo-type K last, unused).
        let mut first = vec![0.0; k + 1];
        let mut second = vec![0.0; k + 1];
        for c in 0..self.count.len() {
            let range = self.start[c]..self.start[c + 1];
            if range.is_empty() {
                continue;
            }
            let rc = |q: usize| self.value[q] - price[self.gpu[q]] * self.units[q];
            let top = range.clone().map(rc).fold(f64::NEG_INFINITY, f64::max);
            first.fill(0.0);
            second.fill(0.0);
            let mut sum = 0.0;
            let mut below = 0.0;
            for q in range {
                let x = (rc(q) - top) / tau;
                // exp(x) is exactly 0 below EXP_UNDERFLOW, where libm takes a slow path (a fifth
                // of the smoothing's time on a 10,000-job round): skipping it changes no bit.
                if x < EXP_UNDERFLOW {
                    continue;
                }
                let w = x.exp();
                sum += w;
                below += w * (top - rc(q));
                first[self.gpu[q]] += w * self.units[q];
                second[self.gpu[q]] += w * self.units[q] * self.units[q];
            }
            let n = self.count[c];
            value += n * (top + tau * sum.ln());
            loss += n * below / sum;
            for a in 0..k {
                let ea = first[a] / sum;
                grad[a] -= n * ea;
                hess[a * k + a] += n * (second[a] / sum) / tau;
                for b in 0..k {
                    hess[a * k + b] -= n * ea * (first[b] / sum) / tau;
                }
            }
        }
        (value, loss)
    }

    /// Approximately minimizes L_tau over 0 <= mu <= cap for a decreasing sequence of tau
    /// (a homotopy: each level starts at the last one's minimizer), by projected Newton steps
    /// with backtracking (a steepest descent step where the Newton step does not descend);
    /// returns the last mu. Coordinates at a bound whose gradient pushes
    /// them out are held there. The levels go from tau = [`FIRST_TAU`] times the largest
    /// |value| down by 10 until the fractional solution of the softmax (class c split over its
    /// choices by p) shows L within [`SMOOTH_GAP`] of the LP's value: L(mu) - V(y) =
    /// sum_c n_c (max rc - E_p rc) + mu . grad, an exact duality gap when y fits (grad >= 0),
    /// counted here with |grad|; or until tau sum_c n_c ln |Q_c| is below [`SMOOTH_EXCESS`] |L|
    /// (L_tau then exceeds L by less); or once a level lowers L_tau by at most
    /// [`SMOOTH_LEVEL_GAIN`] relative: on degenerate LPs (a class split between tied choices)
    /// the softmax's solution never shows the gap closed, and the last levels, down to tau =
    /// 1e-11 of the largest value, moved L_tau by less than 1e-6. Each level costs
    /// at most [`NEWTON_STEPS`] steps of at most [`BACKTRACKS`] evaluations; 100 to 250
    /// evaluations in all were measured.
    pub(super) fn smooth_start(&self, cap: &[f64]) -> Vec<f64> {
        let k = self.k;
        let mut mu = vec![0.0; k];
        if k == 0 {
            return mu;
        }
        let spread: f64 = (0..self.count.len())
            .map(|c| self.count[c] * ((self.start[c + 1] - self.start[c]).max(1) as f64).ln())
            .sum();
        let scale = self
            .value
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()))
            .max(f64::MIN_POSITIVE);
        let mut grad = vec![0.0; k];
        let mut hess = vec![0.0; k * k];
        let mut trial_grad = vec![0.0; k];
        let mut trial_hess = vec![0.0; k * k];
        let mut tau = scale * FIRST_TAU;
        let mut previous = f64::INFINITY;
        for _level in 0..SMOOTH_LEVELS {
            let (mut value, mut loss) = self.smoothed(&mu, tau, &mut grad, &mut hess);
            for _step in 0..NEWTON_STEPS {
                // The free coordinates: not held at a bound by the gradient.
                let free: Vec<usize> = (0..k)
                    .filter(|&a| {
                        !(mu[a] <= 0.0 && grad[a] > 0.0 || mu[a] >= cap[a] && grad[a] < 0.0)
                    })
                    .collect();
                if free.is_empty() {
                    break;
                }
                // A trust region of TRUST tau per coordinate: where no class is near a tie
                // L_tau is almost linear, its Hessian almost 0, and the Newton step absurdly
                // long; the path of minimizers moves by O(tau) per level. Returns the step and
                // its predicted decrease (for the Newton step, the Newton decrement).
                let trusted = |step: Vec<f64>| {
                    let longest = step.iter().fold(0.0f64, |m, d| m.max(d.abs()));
                    let shrink = (TRUST * tau / longest).min(1.0);
                    let step: Vec<f64> = step.iter().map(|d| d * shrink).collect();
                    let predicted: f64 = free.iter().zip(&step).map(|(&a, d)| -grad[a] * d).sum();
                    (step, predicted)
                };
                // There the rounded Hessian can also be indefinite, and the Newton step go
                // uphill (a random case stopped at L = 3.70 where the LP's value is 1.45): the
                // steepest descent step replaces it then.
                let (step, predicted) = match newton_step(&free, k, &grad, &hess).map(&trusted) {
                    Some((step, predicted)) if predicted > 0.0 => (step, predicted),
                    _ => trusted(free.iter().map(|&a| -grad[a]).collect()),
                };
                // Below noise the level is done. (Written to also stop on a NaN prediction.)
                if predicted.is_nan() || predicted <= SMOOTH_SETTLED * tau {
                    break;
                }
                let mut t = 1.0;
                let mut moved = false;
                for _ in 0..BACKTRACKS {
                    let mut trial = mu.clone();
                    for (&a, d) in free.iter().zip(&step) {
                        trial[a] = (mu[a] + t * d).clamp(0.0, cap[a]);
                    }
                    let change: f64 = (0..k).map(|a| grad[a] * (trial[a] - mu[a])).sum();
                    let (now, now_loss) =
                        self.smoothed(&trial, tau, &mut trial_grad, &mut trial_hess);
                    if now <= value + ARMIJO * change.min(0.0) && now < value {
                        mu = trial;
                        value = now;
                        loss = now_loss;
                        std::mem::swap(&mut grad, &mut trial_grad);
                        std::mem::swap(&mut hess, &mut trial_hess);
                        moved = true;
                        break;
                    }
                    t /= 2.0;
                }
                if !moved {
                    break;
                }
            }
            let est = loss + (0..k).map(|a| mu[a] * grad[a].abs()).sum::<f64>();
            if est <= SMOOTH_GAP * value.abs().max(1.0)
                || tau * spread <= SMOOTH_EXCESS * value.abs().max(1.0)
                || previous - value <= SMOOTH_LEVEL_GAIN * value.abs().max(1.0)
            {
                break;
            }
            previous = value;
            tau /= 10.0;
        }
        mu
    }
}

/// Below this, `f64::exp` returns +0 (the smallest subnormal is exp(-744.44)).
const EXP_UNDERFLOW: f64 = -745.2;

/// The Newton step on the coordinates `free`: solves H_FF d = -g_F by Gaussian elimination with
/// partial pivoting, the diagonal raised by a relative ridge so that a singular H (a direction
/// along which L_tau is linear) still gives a step; `None` if even that fails. O(|F|^3).
fn newton_step(free: &[usize], k: usize, grad: &[f64], hess: &[f64]) -> Option<Vec<f64>> {
    let m = free.len();
    let trace: f64 = free.iter().map(|&a| hess[a * k + a].abs()).sum();
    let ridge = RIDGE * (trace / m as f64).max(f64::MIN_POSITIVE);
    // The augmented matrix [H_FF + ridge I | -g_F], row-major.
    let mut a = vec![0.0; m * (m + 1)];
    for (i, &fi) in free.iter().enumerate() {
        for (j, &fj) in free.iter().enumerate() {
            a[i * (m + 1) + j] = hess[fi * k + fj] + if i == j { ridge } else { 0.0 };
        }
        a[i * (m + 1) + m] = -grad[fi];
    }
    let step = gauss_jordan(&mut a, m, f64::MIN_POSITIVE)?;
    step.iter().all(|x| x.is_finite()).then_some(step)
}
