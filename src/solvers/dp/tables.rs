//! Step 6 of docs/solver.md, expensive runs only: the type tables, partial Lagrangian
//! relaxations that keep the capacities of one or two binding types exact.
//!
//! Why this file exists: the Lagrangian bound equals the LP relaxation, which cannot see
//! integrality (jobs of 2 or 4 units that cannot fill a room exactly, the last few jobs a type
//! can take); on rounds of large integrality gap that is what makes every job part of the core
//! and the plain class DP slow. Keeping one or two capacities exact in dense tables over their
//! room grid gives a bound that is never weaker than the probe bound at mu and sees exactly
//! that integrality.
//!
//! Complexity: O(sets * core jobs * kept choices * grid cells) time to build (O(sets * grid
//! cells) for a class of several jobs with one choice on the set, [`add_copies`], or with two
//! choices on one type of it and no other, [`add_two_choices`]), 2 (m + 1) grids of
//! f64 per set for m core classes (at most [`TABLE_CELLS`] cells, 64 MiB); O(sets * K) per bound.
//! Reference: A. M. Geoffrion, "Lagrangean relaxation for integer programming", Mathematical
//! Programming Study 2 (1974) 82-114 (a relaxation that keeps some constraints is at least as
//! strong as the LP); Kellerer, Pferschy and Pisinger, *Knapsack Problems*, Springer 2004,
//! chapter 9 (relaxations of the multidimensional knapsack problem).

use super::classes::{Choice, Class};
use super::limits::{COPIES_AFTER, TABLE_CELLS, TABLE_GRID};
use super::suffix::{Rest, Suffix};

/// One set S of one or two binding types and, per layer i, the exact value table of the
/// remaining core classes i.. with S's capacities kept and the other types priced at mu.
struct TypeTable {
    /// The types of S.
    types: Vec<usize>,
    /// Grid extent per type of S: room in grains, 0..=dims.
    dims: Vec<usize>,
    /// Cells of one layer's grid.
    cells: usize,
    /// `data[i * cells + r]`: T_S^i(r) (see [`TypeTables`]); -inf when no completion fits.
    data: Vec<f64>,
    /// `slack[i * cells + r]`: G_S^i(r) = max over r' <= r of T_S^i(r') - sum_(t in S) mu_t
    /// grain_t r'_t, for the bound inside a class (see [`TypeTables::bound`]).
    slack: Vec<f64>,
}

/// Partial Lagrangian relaxations of the remaining classes, one per set S of binding types
/// (every pair, or every single type when the pairs' grids are too large): only the
/// capacities outside S are relaxed, at prices mu, and the capacities in S are kept exactly.
/// For a layer i and a room r on S (in grains), T_S^i(r) is the largest
/// sum_(j in y) w_S(y_j), with w_S(q) = v_q - mu_(k(q)) u_q for q off S and w_S(q) = v_q on S,
/// over the completions y of the core classes i.. (all their jobs on kept choices) with
/// U_t(y) <= r_t for t in S. It is computed backwards, one job at a time, as a dense DP over
/// S's grid.
///
/// *Bound.* Let y be a completion of a state with value V and units U that fits the residual
/// R; write room_t = R_t - U_t and A_t for the most units the rest can take on t. Then
/// v(y) = sum_j w_S(y_j) + sum_(t not in S) mu_t U_t(y), y is among the completions T_S^i
/// maximizes over (its units on S fit room_S), and U_t(y) <= min(room_t, A_t). So
/// V + T_S^i(room_S) + sum_(t not in S) mu_t min(room_t, A_t) bounds every completion.
/// It is never weaker than the probe bound at mu: for every y counted in T_S^i,
/// sum_j w_S(y_j) = sum_j rc_mu(y_j) + sum_(t in S) mu_t U_t(y), at most
/// sum max rc_mu plus sum_(t in S) mu_t min(room_t, A_t). It is stronger where integrality
/// binds (jobs of 2 or 4 units that cannot fill a room exactly, the last few jobs of a type),
/// which the Lagrangian bound, equal to the LP relaxation, cannot see.
pub(super) struct TypeTables {
    sets: Vec<TypeTable>,
    /// The prices of the relaxed capacities (the tables' values depend on them).
    mu: Vec<f64>,
}

impl TypeTables {
    /// Tables for the core classes `core` (in layer order) over sets of at most `most` (1 or
    /// 2) binding types (those with a grain in `sfx`), or `None` when even the single types'
    /// grids exceed `max_cells` (at most [`TABLE_CELLS`]) over all layers or their work
    /// `max_work` cell updates.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        classes: &[Class],
        kept: &[Vec<Choice>],
        core: &[usize],
        sfx: &Suffix,
        mu: &[f64],
        most: usize,
        max_work: usize,
        max_cells: usize,
    ) -> Option<TypeTables> {
        let sets = sets(classes, kept, core, sfx, most, max_work, max_cells)?;
        let (residual, grain) = (&sfx.residual, &sfx.grain);
        let extent = |t: usize| {
            usize::try_from(residual[t] / grain[t])
                .unwrap_or(usize::MAX)
                .saturating_add(1)
        };
        let m = core.len();
        let mut out = Vec::with_capacity(sets.len());
        for types in sets {
            let dims: Vec<usize> = types.iter().map(|&t| extent(t)).collect();
            let cells: usize = dims.iter().product();
            // Every layer but the last is written below; the last is 0: an empty completion
            // fits every room. Zeroed, not filled with -inf first: fresh memory comes zeroed
            // from the system, where the fill wrote every cell once more (a quarter of a
            // single-type build on the 10,000-job Gavel round of seed 39).
            let mut data = vec![0.0; (m + 1) * cells];
            let mut cur = vec![0.0; cells];
            let mut next = vec![0.0; cells];
            // Scratch of `add_two_choices`, allocated where a class needs it.
            let mut shifted = Vec::new();
            for i in (0..m).rev() {
                cur.copy_from_slice(&data[(i + 1) * cells..(i + 2) * cells]);
                // Per kept choice on S: its shift on the grid and its value; the choices off S
                // (and idle) do not move on the grid, so only the best of their values counts.
                let mut off = f64::NEG_INFINITY;
                let mut moves: Vec<(usize, usize, f64)> = Vec::new();
                for c in &kept[core[i]] {
                    match c.gpu {
                        Some(g) => match types.iter().position(|&t| t == g) {
                            Some(0) => moves.push(((c.units / grain[g]) as usize, 0, c.value)),
                            Some(_) => moves.push((0, (c.units / grain[g]) as usize, c.value)),
                            None => off = off.max(c.value - mu[g] * c.units as f64),
                        },
                        None => off = off.max(0.0),
                    }
                }
                let da = dims[0];
                let db = dims.get(1).copied().unwrap_or(1);
                let jobs = classes[core[i]].jobs.len();
                // A class with at most one choice that moves on the grid (the common case of
                // single-type tables: one slot on the type, the others elsewhere), or with two
                // choices, both on one type of S, and nothing else, is added in one pass over
                // the grid instead of one per job (`add_copies`, `add_two_choices`).
                let passes = if !in_one_pass(jobs, &kept[core[i]], &types) {
                    jobs
                } else {
                    if let [a, b] = moves[..] {
                        add_two_choices(&cur, &mut shifted, &mut next, (da, db), (a, b), jobs);
                    } else {
                        let one = moves.first().copied().unwrap_or((0, 0, f64::NEG_INFINITY));
                        add_copies(&cur, &mut next, (da, db), one, off, jobs);
                    }
                    std::mem::swap(&mut cur, &mut next);
                    0
                };
                for _job in 0..passes {
                    // Row by row, every move's update of a row right after its first, so that
                    // a row and the rows it reads are in cache (a grid of 2^18 cells is 2 MB).
                    // Each cell sees the same updates in the same order as in a pass per move.
                    // With the `max` below, the tables went from 18% to 15% of the samples of
                    // a priced 10,000-job run (`perf record`).
                    for rb in 0..db {
                        let row = &mut next[da * rb..da * (rb + 1)];
                        if off > f64::NEG_INFINITY {
                            for (n, c) in row.iter_mut().zip(&cur[da * rb..da * (rb + 1)]) {
                                *n = c + off;
                            }
                        } else {
                            row.fill(f64::NEG_INFINITY);
                        }
                        for &(sa, sb, v) in &moves {
                            if sa >= da || rb < sb {
                                // Larger than every room (or than this row's): fits no cell.
                                continue;
                            }
                            let from = &cur[da * (rb - sb)..da * (rb - sb) + da - sa];
                            for (n, c) in row[sa..].iter_mut().zip(from) {
                                // No NaN here (-inf + v is -inf): `max` is the comparison,
                                // in a form the compiler vectorizes.
                                *n = n.max(c + v);
                            }
                        }
                    }
                    std::mem::swap(&mut cur, &mut next);
                }
                data[i * cells..(i + 1) * cells].copy_from_slice(&cur);
            }
            // G: T minus the priced units, then a running maximum along each axis (a prefix
            // maximum over the grid's lower set).
            let da = dims[0];
            let price: Vec<f64> = types.iter().map(|&t| mu[t] * grain[t] as f64).collect();
            // Row by row: a cell's row and column come from the loops, not from a division by
            // the grid's width per cell.
            let mut slack = data.clone();
            for layer in slack.chunks_mut(cells) {
                for (rb, row) in layer.chunks_mut(da).enumerate() {
                    let along_b = price.get(1).map_or(0.0, |p| p * rb as f64);
                    for (ra, x) in row.iter_mut().enumerate() {
                        *x -= price[0] * ra as f64 + along_b;
                    }
                }
                // The running maximum along a row is kept in a register: read back from the
                // cell just written, each cell waited on the store before (the maximum was
                // half of `perf annotate`'s samples of a single-type build on the 10,000-job
                // Gavel round of seed 39).
                for rb in 0..cells / da {
                    let (lower, upper) = layer.split_at_mut(rb * da);
                    // The row below (none for the first row): the last `da` cells of `lower`.
                    let below = (rb > 0).then(|| &lower[(rb - 1) * da..]);
                    let mut left = f64::NEG_INFINITY;
                    for (ra, x) in upper[..da].iter_mut().enumerate() {
                        let mut best = x.max(left);
                        if let Some(below) = below {
                            best = best.max(below[ra]);
                        }
                        *x = best;
                        left = best;
                    }
                }
            }
            out.push(TypeTable {
                types,
                dims,
                cells,
                data,
                slack,
            });
        }
        Some(TypeTables {
            sets: out,
            mu: mu.to_vec(),
        })
    }

    /// The least over the sets S of the tables' bound on the completions from layer `i` of a
    /// (sub-)state worth `value` (fixed jobs included) with `used` units; `rest` describes the
    /// jobs of the current class still to place (`None` between layers).
    ///
    /// Between layers: V + T_S^i(room_S) + sum_(t not in S) mu_t min(room_t, A_t) (proved on
    /// [`TypeTables`]).
    ///
    /// Inside a class, with `rest` jobs on choices of best reduced cost rc_rest and at most
    /// units_rest,t units each: V + rest rc_rest + sum_(t in S) mu_t grain_t room_t +
    /// G_S^i(room_S) + sum_(t not in S) mu_t min(room_t, A_t + rest units_rest,t), room in
    /// grains on S. *Proof.* Let the rest jobs take w grains on S (so the later classes get at
    /// most room_S - w there). Their value is at most rest rc_rest + sum_t mu_t (their units on
    /// t); the later classes' value is at most T_S^i(room_S - w) + sum_(t not in S) mu_t
    /// (their units on t). Summing, the S part is mu_S grain w + T(room_S - w) =
    /// mu_S grain room_S + (T(r') - mu_S grain r') for r' = room_S - w <= room_S, at most
    /// mu_S grain room_S + G(room_S); the units outside S, of the rest jobs and the later
    /// classes together, are at most min(room_t, A_t + rest units_rest,t). QED.
    #[inline]
    pub(super) fn bound(
        &self,
        sfx: &Suffix,
        value: f64,
        used: &[u64],
        i: usize,
        rest: Option<Rest>,
    ) -> f64 {
        let mu = &self.mu;
        let mut best = f64::INFINITY;
        for set in &self.sets {
            let (at, rooms) = set.cell(sfx, used);
            // Only the types outside S are relaxed (priced at mu); S is exact in the table.
            let in_s = |t: usize| set.types.contains(&t);
            let u = match rest {
                None => {
                    value + set.data[i * set.cells + at] + sfx.priced(0.0, mu, used, i, in_s, |_| 0)
                }
                Some(r) => {
                    let mut u = value + r.jobs as f64 * r.rc + set.slack[i * set.cells + at];
                    for (&t, &room) in set.types.iter().zip(&rooms) {
                        u += mu[t] * (sfx.grain[t] * room) as f64;
                    }
                    u + sfx.priced(0.0, mu, used, i, in_s, |t| r.jobs * r.units[t])
                }
            };
            best = best.min(u);
        }
        best
    }
}

/// Whether a class of `jobs` jobs with the kept choices `kept` is added to the table of the
/// types `set` in one pass, by [`add_copies`] (at most one choice on the set's types) or
/// [`add_two_choices`] (two choices, both on one type of the set, and no other), rather than
/// one job at a time. [`TypeTables::new`] builds by it and [`sets`] counts the work by it.
fn in_one_pass(jobs: usize, kept: &[Choice], set: &[usize]) -> bool {
    let mut on_set = kept
        .iter()
        .filter_map(|q| q.gpu.filter(|g| set.contains(g)));
    let one_type = match (on_set.next(), on_set.next(), on_set.next()) {
        (None, _, _) | (Some(_), None, _) => true,
        (Some(a), Some(b), None) => a == b && kept.len() == 2,
        _ => false,
    };
    jobs >= COPIES_AFTER && one_type
}

/// `next` = `cur` with `jobs` identical jobs added, each taking one of two grid moves `a` and
/// `b` = (shift along the first axis, along the second, value) on one axis, and nothing else:
/// next(r) = max over c in 0..=jobs of cur(r - (jobs - c) s_lo - c s_hi) + c v_hi +
/// (jobs - c) v_lo, with lo the move of the smaller shift. Every job takes lo and c of them
/// move up by s_hi - s_lo >= 0 (componentwise: both moves are on one axis), so it is
/// [`add_copies`] of the move (s_hi - s_lo, v_hi) with `off` = v_lo on `cur` shifted by
/// jobs s_lo (into `shifted`, -inf where that leaves the grid). On the 10,000-job Gavel rounds
/// of seeds 10, 36 and 39, one class of 341 to 359 forced jobs whose only kept choices are two
/// slots of one type made 80% of the single types' table work, one job at a time. O(cells).
fn add_two_choices(
    cur: &[f64],
    shifted: &mut Vec<f64>,
    next: &mut [f64],
    (da, db): (usize, usize),
    (a, b): ((usize, usize, f64), (usize, usize, f64)),
    jobs: usize,
) {
    let (lo, hi) = if a.0 + a.1 <= b.0 + b.1 {
        (a, b)
    } else {
        (b, a)
    };
    let (ta, tb) = (lo.0.saturating_mul(jobs), lo.1.saturating_mul(jobs));
    shifted.clear();
    shifted.resize(cur.len(), f64::NEG_INFINITY);
    for rb in tb..db {
        let (to, from) = (rb * da, (rb - tb) * da);
        if ta < da {
            shifted[to + ta..to + da].copy_from_slice(&cur[from..from + da - ta]);
        }
    }
    add_copies(
        shifted,
        next,
        (da, db),
        (hi.0 - lo.0, hi.1 - lo.1, hi.2),
        lo.2,
        jobs,
    );
}

/// `next` = `cur` with `jobs` identical jobs added, each taking the grid move `one` = (shift
/// along the first axis, along the second, value) or a choice off the grid worth `off` (-inf:
/// none): next(r) = max over c in 0..=jobs of cur(r - c s) + c v + (jobs - c) off, over the c
/// with r - c s on the grid (c = jobs only, when `off` is -inf). With no move (v = -inf), c = 0.
///
/// What `jobs` passes of one job each compute, in one pass: along each chain r0, r0 + s,
/// r0 + 2s, ... of the grid (r0 - s off it), with d = v - off, next(r0 + k s) is jobs off +
/// k d plus the maximum over j in k - jobs..=k of cur(r0 + j s) - j d, a sliding window's,
/// kept in a monotone deque (O(1) amortized per cell). Each value is formed as
/// cur(r0 + j s) + c v + (jobs - c) off with c = k - j, the definition's own sum, so its
/// rounding is of the order of the ulps of the values and of jobs |v| and jobs |off|, as in
/// the per-job passes, far below the tolerance of the floors. O(cells), where the per-job
/// passes cost O(jobs * cells).
/// Reference: the sliding-window maximum of the bounded knapsack, Kellerer, Pferschy and
/// Pisinger 2004, section 7.2.
fn add_copies(
    cur: &[f64],
    next: &mut [f64],
    (da, db): (usize, usize),
    (sa, sb, v): (usize, usize, f64),
    off: f64,
    jobs: usize,
) {
    let n = jobs as f64;
    if v == f64::NEG_INFINITY || (sa == 0 && sb == 0) {
        // No move on the grid (or one that stays in place): every job takes its best value.
        let each = v.max(off);
        for (x, &c) in next.iter_mut().zip(cur) {
            *x = if each == f64::NEG_INFINITY {
                f64::NEG_INFINITY
            } else {
                c + n * each
            };
        }
        return;
    }
    if off == f64::NEG_INFINITY {
        // Every job takes the move: a shift by jobs * s.
        next.fill(f64::NEG_INFINITY);
        let (ta, tb) = (sa.saturating_mul(jobs), sb.saturating_mul(jobs));
        for rb in tb..db {
            for ra in ta..da {
                next[rb * da + ra] = cur[(rb - tb) * da + ra - ta] + n * v;
            }
        }
        return;
    }
    if sa >= da || sb >= db {
        // Larger than the grid: no job fits the move, every chain is one cell.
        for (x, &c) in next.iter_mut().zip(cur) {
            *x = c + n * off;
        }
        return;
    }
    let d = v - off;
    // The window holds (k, cell) of chain positions whose key cur - k d is decreasing. The
    // keys are compared, and the result formed, as differences of at most `jobs` steps
    // (cur(j) + (k - j) d, cur(j) + c v + (jobs - c) off): a key cur - k d itself would carry
    // a rounding error of the order of k |d|, k up to the grid's extent, whatever the values.
    let mut window: std::collections::VecDeque<(usize, usize)> = std::collections::VecDeque::new();
    for rb in 0..db {
        for ra in 0..da {
            if ra >= sa && rb >= sb {
                // Not the start of a chain: r - s is on the grid.
                continue;
            }
            window.clear();
            let (mut a, mut b, mut k) = (ra, rb, 0usize);
            while a < da && b < db {
                let at = b * da + a;
                while window.front().is_some_and(|&(j, _)| j + jobs < k) {
                    window.pop_front();
                }
                while window
                    .back()
                    .is_some_and(|&(j, from)| cur[from] + (k - j) as f64 * d <= cur[at])
                {
                    window.pop_back();
                }
                window.push_back((k, at));
                let (j, from) = window[0];
                let c = k - j;
                next[at] = cur[from] + c as f64 * v + (jobs - c) as f64 * off;
                a += sa;
                b += sb;
                k += 1;
            }
        }
    }
}

/// The sets of types [`TypeTables::new`] builds tables for: with `most` = 2, every pair of
/// binding types when their grids fit [`TABLE_GRID`] and, over all layers, `max_cells` and
/// [`TABLE_CELLS`], and their work (every grid once per core job and kept choice, twice for a
/// class [`add_copies`] adds) `max_work`; else (or with `most` = 1) every single binding type
/// under the same limits; else `None`.
fn sets(
    classes: &[Class],
    kept: &[Vec<Choice>],
    core: &[usize],
    sfx: &Suffix,
    most: usize,
    max_work: usize,
    max_cells: usize,
) -> Option<Vec<Vec<usize>>> {
    let (residual, grain) = (&sfx.residual, &sfx.grain);
    let binding: Vec<usize> = (0..sfx.k).filter(|&t| grain[t] > 0).collect();
    let extent = |t: usize| {
        usize::try_from(residual[t] / grain[t])
            .unwrap_or(usize::MAX)
            .saturating_add(1)
    };
    let m = core.len();
    let mut sets: Vec<Vec<usize>> = Vec::new();
    if most >= 2 {
        for (a, &ta) in binding.iter().enumerate() {
            for &tb in &binding[a + 1..] {
                sets.push(vec![ta, tb]);
            }
        }
    }
    // Cells of one set's grid, and of all sets' grids (saturating: capacities may be huge).
    let grid = |s: &[usize]| s.iter().fold(1usize, |a, &t| a.saturating_mul(extent(t)));
    let cells_of = |sets: &[Vec<usize>]| sets.iter().fold(0usize, |a, s| a.saturating_add(grid(s)));
    let too_big = |sets: &[Vec<usize>]| {
        sets.is_empty()
            || sets.iter().any(|s| grid(s) > TABLE_GRID)
            || cells_of(sets).saturating_mul(m + 1) > TABLE_CELLS.min(max_cells)
    };
    // Table work, per set: its grid once per core job and kept choice, or twice for a class
    // added in one pass (`in_one_pass`).
    let passes = |set: &[usize]| -> usize {
        core.iter()
            .map(|&c| {
                let (jobs, width) = (classes[c].jobs.len(), kept[c].len());
                if in_one_pass(jobs, &kept[c], set) {
                    2
                } else {
                    jobs.saturating_mul(width)
                }
            })
            .fold(0usize, usize::saturating_add)
    };
    let work = |sets: &[Vec<usize>]| {
        sets.iter().fold(0usize, |a, s| {
            a.saturating_add(grid(s).saturating_mul(passes(s)))
        })
    };
    if too_big(&sets) || work(&sets) > max_work {
        sets = binding.iter().map(|&t| vec![t]).collect();
        if too_big(&sets) || work(&sets) > max_work {
            return None;
        }
    }
    Some(sets)
}

/// Whether [`TypeTables::new`] would build its strongest tables of sets of at most `most`
/// types for this core within `max_work` and `max_cells`: the pairs of binding types (with
/// `most` = 2 and two or more binding), else the single types.
pub(super) fn strongest_fit(
    classes: &[Class],
    kept: &[Vec<Choice>],
    core: &[usize],
    sfx: &Suffix,
    most: usize,
    max_work: usize,
    max_cells: usize,
) -> bool {
    let binding = sfx.grain.iter().filter(|&&g| g > 0).count();
    sets(classes, kept, core, sfx, most, max_work, max_cells)
        .is_some_and(|sets| sets[0].len() == binding.min(most))
}

impl TypeTable {
    /// S's rooms in grains (capped to the grid) for a state that used `used` units, and the
    /// cell of the layer grid they index.
    #[inline]
    fn cell(&self, sfx: &Suffix, used: &[u64]) -> (usize, [u64; 2]) {
        let (mut at, mut scale, mut rooms) = (0usize, 1usize, [0u64; 2]);
        for (x, &t) in self.types.iter().enumerate() {
            let room = (sfx.residual[t].saturating_sub(used[t]) / sfx.grain[t])
                .min(self.dims[x] as u64 - 1);
            rooms[x] = room;
            at += room as usize * scale;
            scale *= self.dims[x];
        }
        (at, rooms)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::solution::objectives_agree;
    use crate::solvers::dp::Dp;
    use crate::solvers::dp::class_dp::{ClassDp, StateBounds, probes};
    use crate::solvers::dp::classes::classes;
    use crate::solvers::dp::fixing::{CoreOrder, fix};
    use crate::solvers::dp::lagrangian::multipliers;
    use crate::solvers::dp::limits::{TABLE_CELLS, TABLE_WORK, TOLERANCE};
    use crate::solvers::dp::testing::{self, SMALL, TINY, at_least, optimum};
    use crate::solvers::{BruteForce, DenseDp};

    /// The DP with the type tables and the slow gap growth on from the first run (by default
    /// they start only once a run is expensive, which small instances never are).
    fn with_tables() -> Dp {
        Dp {
            tables_after_states: 0,
            ..Dp::default()
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        #[test]
        fn dp_with_tables_matches_brute_force(instance in testing::instance(TINY, 1)) {
            testing::agree(&with_tables(), &instance, &BruteForce::default())?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        #[test]
        fn dp_with_tables_matches_dense_dp(instance in testing::instance(SMALL, 1)) {
            testing::agree(&with_tables(), &instance, &DenseDp::default())?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Many identical jobs (classes split between tied choices by the LP).
        #[test]
        fn dp_with_tables_matches_dense_dp_on_copies(instance in testing::instance(SMALL, 15)) {
            testing::agree(&with_tables(), &instance, &DenseDp::default())?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// `add_copies` against its definition: the best count c of jobs on the move, every
        /// other job off the grid.
        #[test]
        fn add_copies_is_the_best_count_on_the_move(
            (da, db) in (1usize..12, 1usize..4),
            seed in proptest::collection::vec(prop_oneof![1 => Just(f64::NEG_INFINITY), 4 => -10.0f64..10.0], 48),
            (sa, sb) in (0usize..5, 0usize..3),
            v in prop_oneof![1 => Just(f64::NEG_INFINITY), 4 => -5.0f64..5.0],
            off in prop_oneof![1 => Just(f64::NEG_INFINITY), 4 => -5.0f64..5.0],
            jobs in 1usize..9,
        ) {
            let cells = da * db;
            let cur: Vec<f64> = (0..cells).map(|x| seed[x % seed.len()]).collect();
            let mut next = vec![0.0; cells];
            add_copies(&cur, &mut next, (da, db), (sa, sb, v), off, jobs);
            for rb in 0..db {
                for ra in 0..da {
                    let mut want = f64::NEG_INFINITY;
                    for c in 0..=jobs {
                        let (ta, tb) = (c * sa, c * sb);
                        if ta > ra || tb > rb {
                            break;
                        }
                        let from = cur[(rb - tb) * da + ra - ta];
                        let on = if c == 0 { 0.0 } else { c as f64 * v };
                        let rest = if c == jobs { 0.0 } else { (jobs - c) as f64 * off };
                        want = want.max(from + on + rest);
                    }
                    let got = next[rb * da + ra];
                    prop_assert!(
                        got == want || (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                        "cell ({}, {}): {} against {}", ra, rb, got, want
                    );
                }
            }
        }

        /// `add_two_choices` against its definition and against one pass per job: every job
        /// takes one of the two moves, on one axis.
        #[test]
        fn add_two_choices_is_the_best_split(
            (da, db) in (1usize..12, 1usize..4),
            seed in proptest::collection::vec(prop_oneof![1 => Just(f64::NEG_INFINITY), 4 => -10.0f64..10.0], 48),
            (s1, s2, second_axis) in (1usize..5, 1usize..5, any::<bool>()),
            (v1, v2) in (-5.0f64..5.0, -5.0f64..5.0),
            jobs in 1usize..9,
        ) {
            let cells = da * db;
            let cur: Vec<f64> = (0..cells).map(|x| seed[x % seed.len()]).collect();
            let on_axis = |s: usize| if second_axis { (0, s) } else { (s, 0) };
            let (a, b) = (on_axis(s1), on_axis(s2));
            let mut next = vec![0.0; cells];
            let mut shifted = Vec::new();
            add_two_choices(&cur, &mut shifted, &mut next, (da, db), ((a.0, a.1, v1), (b.0, b.1, v2)), jobs);
            // One job at a time, as the tables add a class of fewer jobs.
            let mut each = cur.clone();
            for _ in 0..jobs {
                let mut after = vec![f64::NEG_INFINITY; cells];
                for rb in 0..db {
                    for ra in 0..da {
                        for &((sa, sb), v) in &[(a, v1), (b, v2)] {
                            if sa <= ra && sb <= rb {
                                let x = each[(rb - sb) * da + ra - sa] + v;
                                after[rb * da + ra] = after[rb * da + ra].max(x);
                            }
                        }
                    }
                }
                each = after;
            }
            for rb in 0..db {
                for ra in 0..da {
                    let mut want = f64::NEG_INFINITY;
                    for c in 0..=jobs {
                        let (ta, tb) = (c * a.0 + (jobs - c) * b.0, c * a.1 + (jobs - c) * b.1);
                        if ta <= ra && tb <= rb {
                            let from = cur[(rb - tb) * da + ra - ta];
                            want = want.max(from + c as f64 * v1 + (jobs - c) as f64 * v2);
                        }
                    }
                    let got = next[rb * da + ra];
                    let close = |x: f64, y: f64| x == y || (x - y).abs() <= 1e-9 * y.abs().max(1.0);
                    prop_assert!(close(got, want), "cell ({}, {}): {} against {}", ra, rb, got, want);
                    let one = each[rb * da + ra];
                    prop_assert!(close(got, one), "cell ({}, {}): {} against {} job by job", ra, rb, got, one);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Fixing at a wider gap than the floor's (as gap deepening does once the tables are
        /// on, TABLE_SPAN), with tables built by the caller for that fixing: a run whose floor
        /// is just below the optimum finds it, one just above finds nothing.
        #[test]
        fn wider_fixing_with_prebuilt_tables_finds_the_optimum(
            problem in testing::small_problem(),
            factor in prop_oneof![Just(1.0), 1.0f64..8.0],
            most in 1usize..=2,
        ) {
            let Some(testing::AtOptimum { classes, mu, opt, tol, fixed }) =
                testing::fixed_at_optimum(&problem, factor)?
            else {
                return Ok(());
            };
            let probes = probes(&mu);
            let Some(sfx) = Suffix::new(&classes, &fixed.kept, &fixed.core, &probes, &fixed.residual)
            else {
                return Err(TestCaseError::fail("the fixing at the optimum's gap overflows"));
            };
            let tables = TypeTables::new(&classes, &fixed.kept, &fixed.core, &sfx, &mu, most, TABLE_WORK, TABLE_CELLS);
            let mut dp = ClassDp {
                prebuilt: tables.as_ref(),
                ..ClassDp::unlimited(&classes, &fixed.kept, &probes)
            };
            let mut run = |floor: f64| {
                dp.run(&fixed.core, &fixed.residual, fixed.base, floor)
                    .map_err(|e| TestCaseError::fail(e.to_string()))
            };
            let Some((total, _)) = run(opt - tol)? else {
                return Err(TestCaseError::fail(format!("nothing found above {}", opt - tol)));
            };
            prop_assert!(objectives_agree(opt, total), "dp {} optimum {}", total, opt);
            let above = opt + 1e-6 * opt.abs().max(1.0);
            prop_assert!(run(above)?.is_none(), "found a solution above the optimum {}", opt);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The tables' bound of the empty state is at least the optimum (the bound proved on
        /// [`TypeTables`]), and never weaker than the Lagrangian bound at mu alone.
        #[test]
        fn type_tables_bound_is_at_least_the_optimum(problem in testing::small_problem()) {
            let classes = classes(&problem);
            let (mu, l) = multipliers(&classes, &problem.capacity);
            let Some(opt) = optimum(&problem)? else {
                return Ok(());
            };
            let tol = TOLERANCE * l.abs().max(1.0);
            let fixed = fix(&classes, &problem.capacity, &mu, f64::INFINITY, tol, CoreOrder::Rigid);
            let at_mu = vec![mu.clone()];
            let Some(sfx) = Suffix::new(&classes, &fixed.kept, &fixed.core, &at_mu, &fixed.residual)
            else {
                return Err(TestCaseError::fail("a feasible round overflows with every choice kept"));
            };
            let at_mu = StateBounds { probes: &at_mu, sfx, tables: None };
            let sfx = &at_mu.sfx;
            let Some(tables) =
                TypeTables::new(&classes, &fixed.kept, &fixed.core, sfx, &mu, 2, TABLE_WORK, TABLE_CELLS)
            else {
                // No type can bind (or the grids are too large): nothing to check.
                return Ok(());
            };
            let used = vec![0; mu.len()];
            let b = tables.bound(sfx, fixed.base, &used, 0, None);
            prop_assert!(at_least(b, opt), "tables bound {} below the optimum {}", b, opt);
            let lagrangian = at_mu.bound(fixed.base, &used, 0, None);
            prop_assert!(at_least(lagrangian, b), "tables {} weaker than mu {}", b, lagrangian);
        }
    }
}
