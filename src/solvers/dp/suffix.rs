//! The suffix data of one run of the class DP (class_dp.rs): per layer, what the remaining
//! core classes can still add (their best reduced cost at each probe price, the most units
//! they can take of each type), the residual capacity, and the grain of the state key. The
//! probes' bounds of class_dp.rs and the type tables of tables.rs both read it.
//!
//! Complexity: O(m P + m w K) time and memory to build, for m core classes, P probes, w kept
//! choices a class and K types; O(K) a bound term.

use super::classes::{Choice, Class, best_rc};
use crate::solvers::SolveError;

/// Per-layer data over the remaining core classes of one run, and the room the state key and
/// the bounds read.
pub(super) struct Suffix {
    pub(super) k: usize,
    pub(super) m: usize,
    /// `rc[p * (m + 1) + i]`: sum over classes i.. of count * best rc at probe p.
    pub(super) rc: Vec<f64>,
    /// The number P of probes.
    pub(super) probes: usize,
    /// The same by layer: `rc_at[i * P + p]`.
    pub(super) rc_at: Vec<f64>,
    /// The probes' prices by type: `price_at[t * P + p]` is probe p's price of type t.
    pub(super) price_at: Vec<f64>,
    /// `add[i * k + t]`: the most units classes i.. can take on type t.
    pub(super) add: Vec<u64>,
    /// Residual capacity per type (C_k minus the fixed classes' units).
    pub(super) residual: Vec<u64>,
    /// Grain of the state key per type (gcd of the core's sizes there); 0 for a type the core
    /// cannot fill, which never binds and stays out of the key.
    pub(super) grain: Vec<u64>,
}

/// What is left of a partly placed class inside a layer: `jobs` still to place, on choices of
/// best reduced cost `rc` at mu and at most `units[t]` units of each type t each.
#[derive(Clone, Copy)]
pub(super) struct Rest<'a> {
    pub(super) jobs: u64,
    pub(super) rc: f64,
    pub(super) units: &'a [u64],
}

impl Suffix {
    /// The suffix data of the core classes `core` (in layer order) at `probes`, or `None` when
    /// the fixed classes already overflow a type (`residual` < 0: no solution of this run).
    pub(super) fn new(
        classes: &[Class],
        kept: &[Vec<Choice>],
        core: &[usize],
        probes: &[Vec<f64>],
        residual: &[i128],
    ) -> Option<Suffix> {
        let k = residual.len();
        let residual: Vec<u64> = residual
            .iter()
            .map(|&r| u64::try_from(r).ok())
            .collect::<Option<_>>()?;
        let mut grain = vec![0u64; k];
        for &c in core {
            for ch in &kept[c] {
                if let Some(g) = ch.gpu {
                    grain[g] = crate::solvers::dense::gcd(grain[g], ch.units);
                }
            }
        }
        let m = core.len();
        let np = probes.len();
        let mut rcs = vec![0.0; np * (m + 1)];
        let mut add = vec![0u64; (m + 1) * k];
        for i in (0..m).rev() {
            let cl = &classes[core[i]];
            let cs = &kept[core[i]];
            let n = cl.jobs.len() as f64;
            for (p, probe) in probes.iter().enumerate() {
                rcs[p * (m + 1) + i] = rcs[p * (m + 1) + i + 1] + n * best_rc(cs, probe);
            }
            for t in 0..k {
                let most = cs
                    .iter()
                    .filter(|c| c.gpu == Some(t))
                    .map(|c| c.units)
                    .max()
                    .unwrap_or(0);
                add[i * k + t] = add[(i + 1) * k + t] + most * cl.jobs.len() as u64;
            }
        }
        // A type the core cannot fill even with every job on its largest choice there never
        // binds: its units stay out of the key, and states that differ only there merge
        // (dominance holds because no completion can overflow it).
        for t in 0..k {
            if add[t] <= residual[t] {
                grain[t] = 0;
            }
        }
        let mut rc_at = vec![0.0; (m + 1) * np];
        for p in 0..np {
            for i in 0..=m {
                rc_at[i * np + p] = rcs[p * (m + 1) + i];
            }
        }
        let mut price_at = vec![0.0; k * np];
        for (p, probe) in probes.iter().enumerate() {
            for t in 0..k {
                price_at[t * np + p] = probe[t];
            }
        }
        Some(Suffix {
            k,
            m,
            rc: rcs,
            probes: np,
            rc_at,
            price_at,
            add,
            residual,
            grain,
        })
    }

    /// The mixed-radix stride of each binding type in the u128 state key (0 for the others),
    /// and the number of keys (the product over those types of their cells + 1).
    pub(super) fn strides(&self) -> Result<(Vec<u128>, u128), SolveError> {
        let mut stride = vec![0u128; self.k];
        let mut acc: u128 = 1;
        for (t, st) in stride.iter_mut().enumerate() {
            if let Some(cells) = self.residual[t].checked_div(self.grain[t]) {
                *st = acc;
                let cells = u128::from(cells) + 1;
                acc = acc.checked_mul(cells).ok_or(SolveError::TooLarge {
                    solver: "dp",
                    what: "bits of state key",
                    needed: 129,
                    limit: 128,
                    hint: "the undecided jobs span too many gpu types of large capacity; use --solver ilp",
                })?;
            }
        }
        Ok((stride, acc))
    }

    /// `start` plus, over the types t with `prices[t] > 0` and not `skip(t)`,
    /// prices_t min(room_t, A^i_t + extra(t)): the most the priced units of a completion from
    /// layer `i` can be worth, for a state that used `used` units (room_t = residual_t - used_t,
    /// A^i_t the most units classes i.. can take on t, `extra` units that other jobs may add).
    /// Added to `start` term by term (not as a separate sum) so that every bound built on it
    /// rounds exactly as it always did.
    #[inline]
    pub(super) fn priced(
        &self,
        start: f64,
        prices: &[f64],
        used: &[u64],
        i: usize,
        skip: impl Fn(usize) -> bool,
        extra: impl Fn(usize) -> u64,
    ) -> f64 {
        let mut u = start;
        for t in 0..self.k {
            if prices[t] > 0.0 && !skip(t) {
                let room = self.residual[t].saturating_sub(used[t]);
                u += prices[t] * room.min(self.add[i * self.k + t] + extra(t)) as f64;
            }
        }
        u
    }
}
