//! Step 6 of docs/solver.md: the class-level sparse DP over the core, and the bound that
//! prunes its states.
//!
//! Why this file exists: after the fixing (step 4) only the core classes, whose kept choices are
//! within the gap of a tie, are undecided; this DP finds their best completion above the
//! floor. One layer per core class; a transition is a count vector (how many of the class's jobs
//! take each kept choice), chosen choice by choice so that sub-states (units, jobs placed)
//! merge like states. A state is the vector of units per type that can bind; of two with the
//! same key the larger value wins (ties: the first, so the answer is deterministic). A state or
//! sub-state is dropped when it overflows the residual capacity or when its bound ([`StateBounds`]:
//! Lagrangian bounds of the remaining classes at several probe prices, and the type tables of
//! tables.rs when built) is below the floor.
//!
//! Complexity: O(sum over core classes of w_c * sub-states * n_c) time for w_c kept choices and
//! n_c jobs, each sub-state bounded in O(P K) for P = 1 + 6K probes (plus O(sets K) with the
//! tables); at most the dense DP's O(n prod_k (C_k + 1) |Q|). Memory: 32 + 8K bytes per
//! sub-state of the step being built, 8 bytes per sub-state kept for reconstruction; a layer is
//! refused past `Dp::max_states`, a solve past its budget.
//! Reference: D. Pisinger, "A minimal algorithm for the multiple-choice knapsack problem", EJOR
//! 83 (1995) 394-410 (core, bounds, dominance); Kellerer, Pferschy and Pisinger, *Knapsack
//! Problems*, Springer 2004, chapters 5 and 11 (bounds from the LP relaxation, dominance).

use std::time::Instant;

use rustc_hash::FxHashMap;

use super::classes::{Choice, Class, rc};
use super::limits::{PROBE_SCALES, SCAN_COUNTS, table_cells};
use super::suffix::{Rest, Suffix};
use super::tables::TypeTables;
use crate::solvers::SolveError;

/// A run's answer: the best total (fixed classes included) and, per core class, how many of its
/// jobs take each kept choice.
pub(super) type Found = (f64, Vec<Vec<u32>>);

/// Back pointers of one choice step of a class: per sub-state, the sub-state it came from and
/// how many of the class's jobs it put on the step's choice.
struct Step {
    parent: Vec<u32>,
    count: Vec<u32>,
}

/// The sub-states of a choice step by (state key, jobs of the class placed), to their index.
/// The pair is packed into one `u64` when the keys times the class's counts fit (16-byte
/// entries, where the general map's are 32: on the priced 10,000-job rounds the lookups are
/// the run's cache misses).
enum StepIndex {
    /// `key * (n + 1) + placed`.
    Packed(FxHashMap<u64, u32>, u64),
    Wide(FxHashMap<(u128, u64), u32>),
}

impl StepIndex {
    /// An index for about `capacity` sub-states of keys below `keys` and counts up to `n`.
    fn new(capacity: usize, keys: u128, n: u64) -> StepIndex {
        let per = u128::from(n) + 1;
        match keys.checked_mul(per).map(u64::try_from) {
            Some(Ok(_)) => StepIndex::Packed(
                FxHashMap::with_capacity_and_hasher(capacity, Default::default()),
                n + 1,
            ),
            _ => StepIndex::Wide(FxHashMap::with_capacity_and_hasher(
                capacity,
                Default::default(),
            )),
        }
    }

    #[inline(always)]
    fn get(&self, key: u128, placed: u64) -> Option<u32> {
        match self {
            // key < keys and placed <= n: the product fits, as checked in `new`.
            StepIndex::Packed(map, per) => map.get(&(key as u64 * per + placed)).copied(),
            StepIndex::Wide(map) => map.get(&(key, placed)).copied(),
        }
    }

    #[inline(always)]
    fn insert(&mut self, key: u128, placed: u64, at: u32) {
        match self {
            StepIndex::Packed(map, per) => {
                map.insert(key as u64 * *per + placed, at);
            }
            StepIndex::Wide(map) => {
                map.insert((key, placed), at);
            }
        }
    }
}

/// Most GPU types for which [`StateBounds::probe_bound`] keeps its per-type terms on the stack
/// (more types take the general path).
const PROBE_TYPES: usize = 8;

/// Most probes [`StateBounds::probe_bound`] evaluates at once: all those of [`PROBE_TYPES`] types
/// ([`probes`] makes at most 1 + 6 K).
const MOST_PROBES: usize = 1 + 6 * PROBE_TYPES;

/// Multiplier vectors for the per-state bound: `mu` itself first, then `mu` moved up and down
/// along every type by [`PROBE_SCALES`] times the type's price (or the largest price, for a type
/// priced 0). Every vector >= 0 gives a valid bound (Lemma 1 of docs/solver.md applied to the
/// remaining jobs); taking the least over several lets a state that used too much or too little
/// of one type see what the remaining jobs lose by absorbing it, which `mu` alone cannot.
pub(super) fn probes(mu: &[f64]) -> Vec<Vec<f64>> {
    let top = mu.iter().copied().fold(0.0, f64::max).max(1e-12);
    let mut out = vec![mu.to_vec()];
    for t in 0..mu.len() {
        let unit = if mu[t] > 0.0 { mu[t] } else { top };
        for scale in PROBE_SCALES {
            for sign in [1.0, -1.0] {
                let mut p = mu.to_vec();
                p[t] = (p[t] + sign * scale * unit).max(0.0);
                if p[t] != mu[t] {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// The class-level sparse DP of one run (see the file's opening paragraph).
///
/// Counting jobs per class instead of taking them one by one is what keeps many identical jobs
/// cheap: a class of n jobs split between two tied choices makes n + 1 transitions from a state
/// in one layer, where a layer per job makes O(n^2) state visits.
pub(super) struct ClassDp<'a> {
    pub(super) classes: &'a [Class],
    /// Per class, the choices that can be in a solution of value >= floor.
    pub(super) kept: &'a [Vec<Choice>],
    /// The probe prices of the state bound, mu first ([`probes`]).
    pub(super) probes: &'a [Vec<f64>],
    pub(super) max_states: usize,
    /// States created over all layers (work and memory measure).
    pub(super) states: u64,
    /// Most states this run may create before it stops with [`SolveError::TooLarge`].
    pub(super) limit: u64,
    /// States the earlier runs of the solve created (for the error message).
    pub(super) spent: u64,
    /// Most cell updates [`TypeTables`] may take in this run (0: no tables); pairs of types
    /// whose tables would take more fall back to single types, and those to none.
    pub(super) tables: usize,
    /// The largest bound of a state or count the run dropped because its bound was below the
    /// floor (-inf if none): every completion with the kept choices that the run did not
    /// reach is worth at most this (docs/solver.md step 5).
    pub(super) dropped: f64,
    /// Tables built by the caller for exactly this run's core, kept choices and residual (then
    /// `tables` is not used): gap deepening builds them once for several runs.
    pub(super) prebuilt: Option<&'a TypeTables>,
    /// When the solve's time limit ends (`Dp::time_limit`): past it the run stops with
    /// [`SolveError::NoSolutionWithinLimit`], checked before each class and every
    /// [`DEADLINE_EVERY`] counts it evaluates.
    pub(super) deadline: Option<Instant>,
}

/// How many counts (sub-states) a run evaluates between two looks at the clock: a count costs
/// tens of nanoseconds (its bounds), a look at the clock about as much, so the check costs
/// nothing measurable and the run stops within a fraction of a millisecond of its deadline.
/// Counted on the counts evaluated, not the states made: most counts are dominated or pruned
/// (8.5 M of 8.9 M on a priced 10,000-job round), and a step can make none.
const DEADLINE_EVERY: u64 = 4096;

/// Whether `deadline` has passed.
pub(super) fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// The error of a run or solve stopped by its time limit; the driver replaces it by its
/// incumbent where it has one.
pub(super) fn out_of_time() -> SolveError {
    SolveError::NoSolutionWithinLimit {
        solver: "dp",
        limit: "the time limit".to_string(),
    }
}

#[cfg(test)]
impl<'a> ClassDp<'a> {
    /// A run for the tests: exact (no tables), a million states per layer, no limit
    /// on the total.
    pub(super) fn unlimited(
        classes: &'a [Class],
        kept: &'a [Vec<Choice>],
        probes: &'a [Vec<f64>],
    ) -> ClassDp<'a> {
        ClassDp {
            classes,
            kept,
            probes,
            max_states: 1 << 20,
            states: 0,
            limit: u64::MAX,
            spent: 0,
            tables: 0,
            dropped: f64::NEG_INFINITY,
            prebuilt: None,
            deadline: None,
        }
    }
}

/// The bound of one run's states and sub-states: the probes' Lagrangian bounds, and the type
/// tables' when built.
pub(super) struct StateBounds<'a> {
    pub(super) probes: &'a [Vec<f64>],
    pub(super) sfx: Suffix,
    pub(super) tables: Option<&'a TypeTables>,
}

impl StateBounds<'_> {
    /// Upper bound on any completion from layer `i` of a (sub-)state worth `value` (fixed jobs
    /// included) that used `used` units, where `rest` describes the jobs of the current class
    /// still to place (`None` for a state between layers).
    ///
    /// Between layers: for every probe p >= 0, value + sum_(rest) n_c max rc_p +
    /// sum_t p_t min(room_t, A_t) (Lemma 1 of docs/solver.md on the remaining jobs, whose units
    /// on t are at most the room and the most they can take). Inside a class only at mu (the
    /// probes cost 1 + 6K evaluations, and the sub-states are many): the class's `rest` jobs
    /// add at most rest * rc_rest in reduced cost and rest * units_rest,t units on each t.
    // Inlined at its two call sites of the hot loop, where `rest` is known to be `None` or
    // `Some`: each becomes the straight-line code it was before the two bounds were merged
    // (measured: as an out-of-line call it cost 5% more instructions on gavel-100x3-1000).
    #[inline(always)]
    pub(super) fn bound(&self, value: f64, used: &[u64], i: usize, rest: Option<Rest>) -> f64 {
        self.probe_bound(value, used, i, rest, f64::NEG_INFINITY)
            .min(self.table_bound(value, used, i, rest))
    }

    /// The probes' part of [`StateBounds::bound`]. For a state or sub-state that puts `cnt` more
    /// jobs of the current class on one choice (and, inside a class, `rest` - `cnt` fewer in
    /// the rest; at the last step the rest on the class's last choice), this is a concave
    /// function of `cnt`: per probe, a linear function plus terms p_t min(a - b cnt, c - d cnt),
    /// and the least of concave functions is concave (docs/solver.md step 6, counting).
    ///
    /// It stops at the first probe below `cut` and returns that probe's bound (still an upper
    /// bound, below `cut`): a caller that only asks whether the bound reaches a floor passes
    /// the floor, one that needs the least over every probe passes -inf.
    #[inline(always)]
    pub(super) fn probe_bound(
        &self,
        value: f64,
        used: &[u64],
        i: usize,
        rest: Option<Rest>,
        cut: f64,
    ) -> f64 {
        let sfx = &self.sfx;
        let (start, probes) = match rest {
            None => (value, self.probes),
            Some(r) => (value + r.jobs as f64 * r.rc, &self.probes[..1]),
        };
        let k = sfx.k;
        if k <= PROBE_TYPES && sfx.probes == self.probes.len() && sfx.probes <= MOST_PROBES {
            // The units term min(room_t, A^i_t + extra_t) is the same for every probe: made
            // once, each probe is then a dot product (measured: the probes were a quarter of
            // a priced 10,000-job round's time). The sum runs in the order of
            // [`Suffix::priced`] and adds the same products (a type priced 0 adds +0.0, which
            // changes no sum), so the bound is the same to the last bit.
            let mut most = [0.0f64; PROBE_TYPES];
            for (t, m) in most.iter_mut().enumerate().take(k) {
                let room = sfx.residual[t].saturating_sub(used[t]);
                let extra = rest.map_or(0, |r| r.jobs * r.units[t]);
                *m = room.min(sfx.add[i * k + t] + extra) as f64;
            }
            // Every probe at once, type by type over the probes' prices (a loop the compiler
            // vectorizes), then the least of the probes up to the first below `cut`. A price
            // of 0 adds +0.0 where `Suffix::priced` skips it, which leaves every sum as it was.
            let (np, all) = (probes.len(), sfx.probes);
            let rc = &sfx.rc_at[i * all..i * all + np];
            let most = &most[..k];
            // The probe counts of 1 to 3 types (and mu alone, inside a class) with their
            // length known to the compiler, which then unrolls and vectorizes the sums
            // (measured: 6% of the DP's instructions on a 1,000-job round, 10% on a
            // 10,000-job one, were the loops' overhead).
            let prices = &sfx.price_at[..];
            let fixed = match np {
                1 => probe_least::<1>(start, rc, prices, all, most, cut),
                7 => probe_least::<7>(start, rc, prices, all, most, cut),
                13 => probe_least::<13>(start, rc, prices, all, most, cut),
                19 => probe_least::<19>(start, rc, prices, all, most, cut),
                _ => None,
            };
            if let Some(bound) = fixed {
                return bound;
            }
            let mut u = [0.0f64; MOST_PROBES];
            for (x, r) in u.iter_mut().zip(rc) {
                *x = start + r;
            }
            for (t, m) in most.iter().enumerate() {
                for (x, p) in u.iter_mut().zip(&sfx.price_at[t * all..t * all + np]) {
                    *x += p * m;
                }
            }
            return first_below(&u[..np], cut);
        }
        self.probe_bound_each(start, probes, used, i, rest, cut)
    }

    /// [`StateBounds::probe_bound`] probe by probe with [`Suffix::priced`]: the path for more types
    /// than [`PROBE_TYPES`], and the reference the vectorized path is tested against.
    fn probe_bound_each(
        &self,
        start: f64,
        probes: &[Vec<f64>],
        used: &[u64],
        i: usize,
        rest: Option<Rest>,
        cut: f64,
    ) -> f64 {
        let sfx = &self.sfx;
        let mut best = f64::INFINITY;
        for (p, probe) in probes.iter().enumerate() {
            let u = sfx.priced(
                start + sfx.rc[p * (sfx.m + 1) + i],
                probe,
                used,
                i,
                |_| false,
                |t| rest.map_or(0, |r| r.jobs * r.units[t]),
            );
            best = best.min(u);
            if best < cut {
                break;
            }
        }
        best
    }

    /// The type tables' part of [`StateBounds::bound`] (infinite without tables).
    #[inline(always)]
    pub(super) fn table_bound(
        &self,
        value: f64,
        used: &[u64],
        i: usize,
        rest: Option<Rest>,
    ) -> f64 {
        match &self.tables {
            Some(tb) => tb.bound(&self.sfx, value, used, i, rest),
            None => f64::INFINITY,
        }
    }
}

/// Every probe's bound `start + rc[p] + sum_t price_t(p) most[t]`, summed in that order (as
/// [`Suffix::priced`] does), for `N` probes; `price_at[t * all + p]` is probe p's price of type
/// t. `None` if a slice is shorter than `N` (the callers' never are).
#[inline(always)]
fn probe_sums<const N: usize>(
    start: f64,
    rc: &[f64],
    price_at: &[f64],
    all: usize,
    most: &[f64],
) -> Option<[f64; N]> {
    let mut u = [start; N];
    for (x, r) in u.iter_mut().zip(rc.first_chunk::<N>()?) {
        *x += r;
    }
    for (t, &m) in most.iter().enumerate() {
        let prices = price_at.get(t * all..)?.first_chunk::<N>()?;
        for (x, p) in u.iter_mut().zip(prices) {
            *x += p * m;
        }
    }
    Some(u)
}

/// [`first_below`] of [`probe_sums`].
#[inline(always)]
fn probe_least<const N: usize>(
    start: f64,
    rc: &[f64],
    price_at: &[f64],
    all: usize,
    most: &[f64],
    cut: f64,
) -> Option<f64> {
    // The first probe (mu) alone first: when it is below `cut` it is the answer, and the
    // others are not needed. Summed in the same order as in `probe_sums`, so it is the same
    // number.
    if N > 1 {
        let mut first = start + *rc.first()?;
        for (t, &m) in most.iter().enumerate() {
            first += *price_at.get(t * all)? * m;
        }
        if first < cut {
            return Some(first);
        }
    }
    probe_sums::<N>(start, rc, price_at, all, most).map(|u| first_below(&u, cut))
}

/// What the probes in order give: the first bound below `cut`, or the least of them when none
/// is (the running least first falls below `cut` at that probe, and is its bound). The least
/// is taken first, without branches, and the first below `cut` looked for only when it is.
#[inline(always)]
fn first_below(u: &[f64], cut: f64) -> f64 {
    // `f64::min` without its NaN branch (no bound is NaN; a NaN would be skipped either way).
    let least = u
        .iter()
        .fold(f64::INFINITY, |a, &x| if x < a { x } else { a });
    if least >= cut {
        return least;
    }
    u.iter().copied().find(|&x| x < cut).unwrap_or(least)
}

/// A count c in `a..=b` with `f(c) >= floor`, or, when there is none, `Err` with the largest
/// value of `f` there and a count that takes it, for a function `f` that is concave on the
/// integers (so that the counts it keeps form an interval, which the caller walks out from c).
///
/// The search starts at `hint` (clamped into the range), where the caller's last search ended:
/// from one parent state to the next the maximum moves little (measured on a 10,000-job Gavel
/// round, `gen --gavel --jobs 10000 --count 1000 --seed 8`: the same count for 49% of the
/// searches, the next one for 49%), so `f` at the hint and its two neighbours usually settle
/// it. Otherwise a gallop on the sign of the differences, in steps that double, brackets the
/// maximum and a bisection finds it: three evaluations when the maximum is at the hint, O(log
/// d) when it is d counts away, never more than O(log(b - a)) (a bisection from `a` took 17 on
/// average on that round). Any count that reaches `floor` on the way ends the search.
fn above(
    a: u64,
    b: u64,
    hint: u64,
    floor: f64,
    f: impl FnMut(u64) -> f64,
) -> Result<u64, (f64, u64)> {
    // `peak` stops at the first value that reaches the floor, so the maximum it returns
    // otherwise is below it.
    match peak(a, b, hint, floor, f) {
        Err(reached) => Ok(reached),
        Ok(most) => Err(most),
    }
}

/// [`above`]'s search: `Ok` with the largest value of `f` in `a..=b` and a count that takes
/// it, or `Err` with the first count evaluated whose value reaches `floor` (a value is
/// remembered only when it does not, so no remembered one does).
fn peak(
    a: u64,
    b: u64,
    hint: u64,
    floor: f64,
    mut f: impl FnMut(u64) -> f64,
) -> Result<(f64, u64), u64> {
    // The last few values: the gallop and the bisection ask again for counts already seen.
    let mut seen: [Option<(u64, f64)>; 4] = [None; 4];
    let mut next = 0;
    let mut at = |c: u64| -> Result<f64, u64> {
        if let Some((_, v)) = seen.iter().flatten().find(|s| s.0 == c) {
            return Ok(*v);
        }
        let v = f(c);
        seen[next] = Some((c, v));
        next = (next + 1) % seen.len();
        if v >= floor { Err(c) } else { Ok(v) }
    };
    // Whether f rises from c to c + 1 (for c < b).
    fn rises(at: &mut impl FnMut(u64) -> Result<f64, u64>, c: u64) -> Result<bool, u64> {
        let fc = at(c)?;
        Ok(at(c + 1)? > fc)
    }
    // The maximum wanted is the smallest c in a..=b with f(c + 1) <= f(c), or b: by concavity
    // f rises before it and does not after. It is bracketed in lo..=hi from the hint outwards,
    // then bisected.
    let h = hint.clamp(a, b);
    let (mut lo, mut hi) = (a, b);
    if h < b && rises(&mut at, h)? {
        lo = h + 1;
        let mut off = 0;
        loop {
            let x = lo.saturating_add(off).min(b);
            if x == b {
                break;
            }
            if rises(&mut at, x)? {
                lo = x + 1;
                off = 2 * off + 1;
            } else {
                hi = x;
                break;
            }
        }
    } else if h > a && at(h - 1)? > at(h)? {
        hi = h - 1;
        let mut off = 1;
        loop {
            let x = hi.saturating_sub(off).max(a);
            if rises(&mut at, x)? {
                lo = x + 1;
                break;
            }
            hi = x;
            if x == a {
                break;
            }
            off = 2 * off + 1;
        }
    } else {
        // f does not rise from h and did not fall into it: h is a maximum.
        return Ok((at(h)?, h));
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if rises(&mut at, mid)? {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok((at(lo)?, lo))
}

/// The counts `cnt` in 0..=`left` for which a step fits the residual `residual` from a
/// sub-state that used `used` units: `cnt` jobs on `ch` and, at the class's last step, the
/// `left - cnt` others on `tail`. Each type's units are linear in `cnt`, so the counts that
/// fit form an interval; `None` when it is empty.
fn fitting(
    used: &[u64],
    residual: &[u64],
    left: u64,
    ch: &Choice,
    tail: Option<&Choice>,
) -> Option<(u64, u64)> {
    let (mut lo, mut hi) = (0i128, i128::from(left));
    let mut types = [ch.gpu, tail.and_then(|t| t.gpu)];
    if types[0] == types[1] {
        types[1] = None;
    }
    for t in types.into_iter().flatten() {
        let alpha = if ch.gpu == Some(t) {
            i128::from(ch.units)
        } else {
            0
        };
        let beta = match tail {
            Some(tl) if tl.gpu == Some(t) => i128::from(tl.units),
            _ => 0,
        };
        // used + cnt alpha + (left - cnt) beta <= residual, i.e. cnt (alpha - beta) <= rhs.
        let rhs = i128::from(residual[t]) - i128::from(used[t]) - i128::from(left) * beta;
        let d = alpha - beta;
        if d > 0 {
            hi = hi.min(rhs.div_euclid(d));
        } else if d < 0 {
            lo = lo.max(-(rhs.div_euclid(-d)));
        } else if rhs < 0 {
            return None;
        }
    }
    (lo <= hi).then_some((lo as u64, hi as u64))
}

/// The states of a layer, or the sub-states of a choice step, as parallel vectors: per state
/// its units on each type that can bind (`k` each), its value, its key and how many jobs of
/// the current class it placed so far.
struct Layer {
    units: Vec<u64>,
    values: Vec<f64>,
    keys: Vec<u128>,
    placed: Vec<u64>,
}

/// The sub-states a choice step makes: the layer being built, indexed by (key, jobs of the
/// class placed), and the back pointers of each to its parent.
struct NextLayer {
    index: StepIndex,
    layer: Layer,
    step: Step,
}

impl NextLayer {
    /// An empty step for about `capacity` sub-states of `k` types, keys below `keys` and
    /// counts up to `n`.
    fn new(capacity: usize, keys: u128, n: u64, k: usize) -> NextLayer {
        NextLayer {
            index: StepIndex::new(capacity, keys, n),
            layer: Layer {
                units: Vec::with_capacity(capacity * k),
                values: Vec::with_capacity(capacity),
                keys: Vec::with_capacity(capacity),
                placed: Vec::with_capacity(capacity),
            },
            step: Step {
                parent: Vec::with_capacity(capacity),
                count: Vec::with_capacity(capacity),
            },
        }
    }

    /// The sub-states made so far.
    fn len(&self) -> usize {
        self.layer.values.len()
    }

    /// A new sub-state: `placed` jobs of the class placed, `units`, `value`, from the parent
    /// state `parent` with `count` jobs on the step's choice.
    #[inline(always)]
    fn push(
        &mut self,
        key: u128,
        placed: u64,
        units: &[u64],
        value: f64,
        parent: usize,
        count: u64,
    ) {
        self.index.insert(key, placed, self.len() as u32);
        self.layer.units.extend_from_slice(units);
        self.layer.values.push(value);
        self.layer.keys.push(key);
        self.layer.placed.push(placed);
        self.step.parent.push(parent as u32);
        self.step.count.push(count as u32);
    }

    /// Makes sub-state `at` the one reached from `parent` with `count` jobs on the step's
    /// choice, worth `value` (its units are the caller's to set where they differ).
    #[inline(always)]
    fn replace(&mut self, at: usize, value: f64, parent: usize, count: u64) {
        self.layer.values[at] = value;
        self.step.parent[at] = parent as u32;
        self.step.count[at] = count as u32;
    }
}

/// What every step of one run reads: the states' bounds, the key's stride per type, the key
/// space and the floor.
struct Frame<'f> {
    bounds: &'f StateBounds<'f>,
    stride: &'f [u128],
    key_space: u128,
    floor: f64,
    /// The types that can bind.
    k: usize,
}

impl Frame<'_> {
    /// Per job on `c`, its type's key cells and their stride (the grain divides every kept
    /// size of the core, so cells = units / grain * count exactly; a type outside the key
    /// adds nothing). Made once per step, not with a division per count.
    fn cells(&self, c: &Choice) -> (u64, u128) {
        match c.gpu {
            Some(g) => match c.units.checked_div(self.bounds.sfx.grain[g]) {
                Some(per) => (per, self.stride[g]),
                None => (0, 0),
            },
            None => (0, 0),
        }
    }
}

/// A core class as a layer of the DP: its kept choices and jobs, and per position q the best
/// rc at mu and the most units per type of the choices q.. (what the class's jobs not yet
/// placed can add).
struct ClassLayer<'c> {
    /// The layer's index in the core.
    i: usize,
    choices: &'c [Choice],
    n: u64,
    tail_rc: Vec<f64>,
    tail_units: Vec<u64>,
}

impl<'c> ClassLayer<'c> {
    /// Layer `i`, of a class of `n` jobs with the kept `choices`, over `k` types at prices `mu`.
    fn new(i: usize, choices: &'c [Choice], n: u64, mu: &[f64], k: usize) -> ClassLayer<'c> {
        let width = choices.len();
        let mut tail_rc = vec![f64::NEG_INFINITY; width + 1];
        let mut tail_units = vec![0u64; (width + 1) * k];
        for q in (0..width).rev() {
            tail_rc[q] = tail_rc[q + 1].max(rc(&choices[q], mu));
            tail_units.copy_within((q + 1) * k..(q + 2) * k, q * k);
            if let Some(g) = choices[q].gpu {
                tail_units[q * k + g] = tail_units[q * k + g].max(choices[q].units);
            }
        }
        ClassLayer {
            i,
            choices,
            n,
            tail_rc,
            tail_units,
        }
    }
}

/// One choice step of a class: counts of its jobs on the choice `ch`; at the class's last
/// step the jobs left also go on its last choice `tail` (a best one), so that its sub-states
/// are whole states.
struct ChoiceStep<'s> {
    class: &'s ClassLayer<'s>,
    q: usize,
    ch: &'s Choice,
    tail: &'s Choice,
    last: bool,
    /// [`Frame::cells`] of `ch` and of `tail`.
    ch_cells: (u64, u128),
    tail_cells: (u64, u128),
}

impl<'s> ChoiceStep<'s> {
    /// Step `q` of `class`.
    fn new(frame: &Frame, class: &'s ClassLayer<'s>, q: usize) -> ChoiceStep<'s> {
        let width = class.choices.len();
        let (ch, tail) = (&class.choices[q], &class.choices[width - 1]);
        ChoiceStep {
            class,
            q,
            ch,
            tail,
            last: q + 2 == width,
            ch_cells: frame.cells(ch),
            tail_cells: frame.cells(tail),
        }
    }
}

/// The sub-states one parent state makes in a choice step: `cnt` of the `left` jobs of the
/// class not yet placed on the step's choice (and, at the last step, the others on its tail).
struct Moves<'m> {
    frame: &'m Frame<'m>,
    step: &'m ChoiceStep<'m>,
    /// The parent's index, units, key and value.
    parent: usize,
    used: &'m [u64],
    key: u128,
    value: f64,
    left: u64,
}

impl Moves<'_> {
    /// The units of the sub-state with `cnt` jobs on the choice, into `row`.
    #[inline(always)]
    fn units(&self, cnt: u64, row: &mut [u64]) {
        let step = self.step;
        row.copy_from_slice(self.used);
        if let Some(g) = step.ch.gpu {
            row[g] += step.ch.units * cnt;
        }
        if step.last
            && let Some(g) = step.tail.gpu
        {
            row[g] += step.tail.units * (self.left - cnt);
        }
    }

    /// Its key and value (without its units or bounds: the dominance check asks for these
    /// first).
    #[inline(always)]
    fn key_value(&self, cnt: u64) -> (u128, f64) {
        let step = self.step;
        let mut key = self.key + u128::from(step.ch_cells.0 * cnt) * step.ch_cells.1;
        let mut v = self.value + step.ch.value * cnt as f64;
        if step.last {
            key += u128::from(step.tail_cells.0 * (self.left - cnt)) * step.tail_cells.1;
            v += step.tail.value * (self.left - cnt) as f64;
        }
        (key, v)
    }

    /// The class's other jobs, before its last step: they take at best the tail's rc and at
    /// most its units per type, at prices mu.
    #[inline(always)]
    fn rest(&self, cnt: u64) -> Rest<'_> {
        let (class, q, k) = (self.step.class, self.step.q, self.frame.k);
        Rest {
            jobs: self.left - cnt,
            rc: class.tail_rc[q + 1],
            units: &class.tail_units[(q + 1) * k..(q + 2) * k],
        }
    }

    /// The sub-state with `cnt` jobs on the choice: its units (in `row`), key, value (`at`,
    /// when the caller has them already) and the probes' bound, down to `cut`
    /// ([`StateBounds::probe_bound`]).
    #[inline(always)]
    fn eval(
        &self,
        cnt: u64,
        at: Option<(u128, f64)>,
        row: &mut [u64],
        cut: f64,
    ) -> (u128, f64, f64) {
        self.units(cnt, row);
        let (key, v) = at.unwrap_or_else(|| self.key_value(cnt));
        let (bounds, i) = (self.frame.bounds, self.step.class.i);
        let p = if self.step.last {
            bounds.probe_bound(v, row, i + 1, None, cut)
        } else {
            bounds.probe_bound(v, row, i + 1, Some(self.rest(cnt)), cut)
        };
        (key, v, p)
    }

    /// The type tables' bound of the sub-state with `cnt` jobs on the choice, worth `v`,
    /// with the units `row`.
    #[inline(always)]
    fn table_bound(&self, cnt: u64, v: f64, row: &[u64]) -> f64 {
        let (bounds, i) = (self.frame.bounds, self.step.class.i);
        if self.step.last {
            bounds.table_bound(v, row, i + 1, None)
        } else {
            bounds.table_bound(v, row, i + 1, Some(self.rest(cnt)))
        }
    }
}

/// The scratch of a run's walks over the counts.
struct Work {
    /// Counts evaluated, for the time limit's checks.
    evaluated: u64,
    /// The units of the count at hand.
    row: Vec<u64>,
    /// Where the last search for a count above the floor ended ([`above`]), per step.
    hint: u64,
}

/// Whether a walk over the counts goes on past a count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    On,
    /// The count's probe bound is below the floor: by concavity so are those past it on its
    /// side.
    Ended,
}

impl ClassDp<'_> {
    /// The best completion of the core classes `core` (in layer order) worth at least `floor`
    /// with `base` the value of the fixed classes and `residual` the capacity they leave, or
    /// `None` when every completion is below `floor`.
    pub(super) fn run(
        &mut self,
        core: &[usize],
        residual: &[i128],
        base: f64,
        floor: f64,
    ) -> Result<Option<Found>, SolveError> {
        let Some(sfx) = Suffix::new(self.classes, self.kept, core, self.probes, residual) else {
            return Ok(None);
        };
        let (k, m) = (sfx.k, core.len());
        let (stride, key_space) = sfx.strides()?;
        let owned = self.own_tables(core, &sfx);
        let bounds = StateBounds {
            probes: self.probes,
            sfx,
            tables: self.prebuilt.or(owned.as_ref()),
        };
        let frame = Frame {
            bounds: &bounds,
            stride: &stride,
            key_space,
            floor,
            k,
        };
        let mut layer = Layer {
            units: vec![0; k],
            values: vec![base],
            keys: vec![0],
            placed: Vec::new(),
        };
        let root = bounds.bound(base, &layer.units, 0, None);
        if root < floor {
            self.dropped = self.dropped.max(root);
            return Ok(None);
        }
        // Per class, per choice step: each sub-state's parent and the count that made it.
        let mut trail: Vec<Vec<Step>> = Vec::with_capacity(m);
        let mut work = Work {
            evaluated: 0,
            row: vec![0u64; k],
            hint: 0,
        };
        let (classes, kept, mu) = (self.classes, self.kept, &self.probes[0]);
        for (i, &c) in core.iter().enumerate() {
            if past(self.deadline) {
                return Err(out_of_time());
            }
            let class = ClassLayer::new(i, &kept[c], classes[c].jobs.len() as u64, mu, k);
            let Some(steps) = self.class_steps(&frame, &class, &mut layer, &mut work)? else {
                return Ok(None);
            };
            trail.push(steps);
        }
        Ok(Some(self.completion(core, &layer.values, &trail)))
    }

    /// The run's own type tables for `core` with the suffix `sfx`, where the caller built none
    /// and the run has a work budget for them.
    fn own_tables(&self, core: &[usize], sfx: &Suffix) -> Option<TypeTables> {
        if self.prebuilt.is_none() && self.tables > 0 {
            TypeTables::new(
                self.classes,
                self.kept,
                core,
                sfx,
                &self.probes[0],
                2,
                self.tables,
                table_cells(self.max_states),
            )
        } else {
            None
        }
    }

    /// The layer of `class`: the states of `layer` move to the next layer, and the back
    /// pointers of its choice steps are returned (`None` when a step keeps no state).
    ///
    /// The class's jobs are counted choice by choice: a sub-state is (units, jobs of the class
    /// placed so far), deduplicated like states, so a class of n jobs with w kept choices
    /// costs O(w * states * n), never the O(n^(w-1)) count vectors. One step per choice but
    /// the last: the last step also puts the jobs left on the last choice (a best one), so
    /// that its sub-states are whole states, bounded by every probe and the tables.
    fn class_steps(
        &mut self,
        frame: &Frame,
        class: &ClassLayer,
        layer: &mut Layer,
        work: &mut Work,
    ) -> Result<Option<Vec<Step>>, SolveError> {
        layer.placed = vec![0; layer.values.len()];
        let width = class.choices.len();
        let mut steps: Vec<Step> = Vec::with_capacity(width - 1);
        for q in 0..width - 1 {
            let step = ChoiceStep::new(frame, class, q);
            let Some((next, back)) = self.choice_step(frame, &step, layer, work)? else {
                return Ok(None);
            };
            *layer = next;
            steps.push(back);
        }
        Ok(Some(steps))
    }

    /// The sub-states `step` makes from the states of `layer`, with their back pointers
    /// (`None` when it keeps none).
    fn choice_step(
        &mut self,
        frame: &Frame,
        step: &ChoiceStep,
        layer: &Layer,
        work: &mut Work,
    ) -> Result<Option<(Layer, Step)>, SolveError> {
        let guess = layer.values.len() * 2;
        let mut next = NextLayer::new(guess, frame.key_space, step.class.n, frame.k);
        work.hint = 0;
        for s in 0..layer.values.len() {
            self.expand(frame, step, layer, s, &mut next, work)?;
        }
        self.states += next.len() as u64;
        if next.len() == 0 {
            return Ok(None);
        }
        Ok(Some((next.layer, next.step)))
    }

    /// The sub-states of state `s` of `layer` in `step`, added to `next`.
    ///
    /// The probes' bound is concave in the count (StateBounds::probe_bound), so the counts it
    /// keeps above the floor form an interval: for a long range, find a count in it
    /// ([`above`]), then walk out both ways until the bound drops below; a short range is
    /// scanned. The walk and the scan only ask whether a count's bound reaches the floor
    /// (`cut`).
    #[inline]
    fn expand(
        &mut self,
        frame: &Frame,
        step: &ChoiceStep,
        layer: &Layer,
        s: usize,
        next: &mut NextLayer,
        work: &mut Work,
    ) -> Result<(), SolveError> {
        let k = frame.k;
        let left = step.class.n - layer.placed[s];
        let used = &layer.units[s * k..(s + 1) * k];
        let residual = &frame.bounds.sfx.residual;
        let Some((a, b)) = fitting(
            used,
            residual,
            left,
            step.ch,
            step.last.then_some(step.tail),
        ) else {
            return Ok(());
        };
        let moves = Moves {
            frame,
            step,
            parent: s,
            used,
            key: layer.keys[s],
            value: layer.values[s],
            left,
        };
        let (start, scan) = if b - a < SCAN_COUNTS {
            (a, true)
        } else {
            match above(a, b, work.hint, frame.floor, |c| {
                moves.eval(c, None, &mut work.row, f64::NEG_INFINITY).2
            }) {
                Ok(start) => {
                    work.hint = start;
                    (start, false)
                }
                Err((most, at)) => {
                    work.hint = at;
                    self.dropped = self.dropped.max(most);
                    return Ok(());
                }
            }
        };
        // Up from `start`, then down from `start - 1`. The walk up ends at once
        // (`up_done`): skipping its remaining counts one by one instead costs a sixth
        // of a 10,000-job round's solve, whose classes have hundreds of jobs.
        let mut up = start..=b;
        let mut up_done = false;
        let mut down = (a..start).rev();
        loop {
            work.evaluated += 1;
            if work.evaluated.is_multiple_of(DEADLINE_EVERY) && past(self.deadline) {
                self.states += next.len() as u64;
                return Err(out_of_time());
            }
            let next_up = if up_done { None } else { up.next() };
            let (cnt, rising) = match next_up {
                Some(c) => (c, true),
                None => match down.next() {
                    Some(c) => (c, false),
                    None => break,
                },
            };
            if self.offer(&moves, next, cnt, &mut work.row)? == Walk::Ended {
                if scan {
                    continue;
                }
                if rising {
                    up_done = true;
                    continue;
                }
                break;
            }
        }
        Ok(())
    }

    /// The sub-state with `cnt` jobs on the step's choice, offered to `next` (with `row` as
    /// scratch for its units): kept where no sub-state of the same key dominates it and its
    /// bound reaches the floor.
    #[inline(always)]
    fn offer(
        &mut self,
        moves: &Moves,
        next: &mut NextLayer,
        cnt: u64,
        row: &mut [u64],
    ) -> Result<Walk, SolveError> {
        let (k, floor, n) = (moves.frame.k, moves.frame.floor, moves.step.class.n);
        // A sub-state already made with at least this value (the same key: the same units on
        // every type that can bind) dominates this one: skip it before its bounds, which cost
        // most of a step. Sub-states of a class of many jobs meet this way again and again
        // (measured on a priced round of the 10,000-job Gavel mix: 8.5 M of 8.9 M counts,
        // 400,000 states). Every completion of the skipped one is worth at most one of the
        // kept one, which is reached or dropped with its bound, so `dropped` stays an upper
        // bound of what the run did not reach. The walk goes on past it: its bound is not
        // known, and the next count evaluated tells.
        let (key, v) = moves.key_value(cnt);
        let rest = if moves.step.last { 0 } else { moves.left - cnt };
        // Nothing enters the index until this count is kept, so this lookup also serves the
        // insertion below (one lookup a count: they are most of a priced 10,000-job round's
        // cache misses).
        let found = next.index.get(key, n - rest);
        if let Some(at) = found {
            let at = at as usize;
            if next.layer.values[at] >= v {
                return Ok(Walk::On);
            }
            // Worth more with the same units on every type (the types that cannot bind are
            // outside the key): each of its bounds is the kept one's with a larger value,
            // which reached the floor, so it replaces the kept one without them (half the
            // counts of that round).
            moves.units(cnt, row);
            if *row == next.layer.units[at * k..(at + 1) * k] {
                next.replace(at, v, moves.parent, cnt);
                return Ok(Walk::On);
            }
        }
        let (key, v, p) = moves.eval(cnt, Some((key, v)), row, floor);
        if p < floor {
            self.dropped = self.dropped.max(p);
            return Ok(Walk::Ended);
        }
        let score = p.min(moves.table_bound(cnt, v, row));
        if score < floor {
            self.dropped = self.dropped.max(score);
            return Ok(Walk::On);
        }
        match found {
            Some(at) => {
                // Dominance: the larger value wins, a tie keeps the first.
                let at = at as usize;
                if v > next.layer.values[at] {
                    next.layer.units[at * k..(at + 1) * k].copy_from_slice(row);
                    next.replace(at, v, moves.parent, cnt);
                }
            }
            None => {
                self.make_room(next.len())?;
                next.push(key, n - rest, row, v, moves.parent, cnt);
            }
        }
        Ok(Walk::On)
    }

    /// Room for one more sub-state in a step that has `made`: within the layer limit
    /// (`max_states`) and the run's limit, else the refusal.
    #[inline(always)]
    fn make_room(&mut self, made: usize) -> Result<(), SolveError> {
        if made >= self.max_states {
            return Err(SolveError::TooLarge {
                solver: "dp",
                what: "states in one layer",
                needed: made as u128 + 1,
                limit: self.max_states as u128,
                hint: "raise the limit or use --solver ilp",
            });
        }
        // The run's limit, checked as the step grows (after it, a step of a plain run on a
        // priced 10,000-job round had made 2.1 M states, 3 s, past a limit of 250,000): the
        // back pointers of every step stay in memory, and the time of the solve grows with
        // its states.
        if self.states + made as u64 >= self.limit {
            self.states += made as u64 + 1;
            return Err(SolveError::TooLarge {
                solver: "dp",
                what: "states over all gap-deepening runs",
                needed: u128::from(self.spent + self.states),
                limit: u128::from(self.spent + self.limit),
                hint: "raise the limit or use --solver ilp",
            });
        }
        Ok(())
    }

    /// The best state of the last layer (`values`; ties: the first) and, per core class, the
    /// counts of its kept choices that lead to it, followed back through `trail`.
    fn completion(&self, core: &[usize], values: &[f64], trail: &[Vec<Step>]) -> Found {
        let mut best = 0usize;
        for (s, &v) in values.iter().enumerate() {
            if v > values[best] {
                best = s;
            }
        }
        let total = values[best];
        let mut picks: Vec<Vec<u32>> = vec![Vec::new(); core.len()];
        let mut s = best;
        for (i, steps) in trail.iter().enumerate().rev() {
            // The last choice took the jobs the steps left.
            let n = self.classes[core[i]].jobs.len() as u32;
            let mut counts = vec![0u32; steps.len() + 1];
            for (q, step) in steps.iter().enumerate().rev() {
                counts[q] = step.count[s];
                s = step.parent[s] as usize;
            }
            counts[steps.len()] = n - counts.iter().sum::<u32>();
            picks[i] = counts;
        }
        (total, picks)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::solution::objectives_agree;
    use crate::solvers::dp::classes::classes;
    use crate::solvers::dp::fixing::{CoreOrder, fix};
    use crate::solvers::dp::lagrangian::multipliers;
    use crate::solvers::dp::limits::TOLERANCE;
    use crate::solvers::dp::testing::{self, at_least, check_feasible, optimum};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The search of a count above the floor: for a concave function (the least of a few
        /// lines, integer slopes and intercepts so that no value is rounded, and a
        /// half-integer floor so that none ties), `above` finds a count with f >= floor exactly
        /// when one exists, and walking out from it keeps every count with f >= floor; when
        /// none exists it returns the largest value of f.
        #[test]
        fn above_finds_the_counts_of_a_concave_function_above_the_floor(
            lines in proptest::collection::vec((-20i64..20, -200i64..200), 1..5),
            a in 0u64..40,
            len in 0u64..40,
            hint in 0u64..90,
            floor in -200i64..200,
        ) {
            let b = a + len;
            let floor = floor as f64 + 0.5;
            let f = |c: u64| {
                lines.iter().map(|&(s, i)| (s * c as i64 + i) as f64).fold(f64::INFINITY, f64::min)
            };
            let expected: Vec<u64> = (a..=b).filter(|&c| f(c) >= floor).collect();
            let max = (a..=b).map(f).fold(f64::NEG_INFINITY, f64::max);
            match above(a, b, hint, floor, f) {
                Err((most, at)) => {
                    prop_assert!(expected.is_empty(), "missed {:?}", expected);
                    prop_assert_eq!(most, max);
                    prop_assert!((a..=b).contains(&at));
                    prop_assert_eq!(f(at), most);
                }
                Ok(start) => {
                    prop_assert!(f(start) >= floor);
                    let lo = (a..=start).rev().take_while(|&c| f(c) >= floor).last().unwrap();
                    let hi = (start..=b).take_while(|&c| f(c) >= floor).last().unwrap();
                    prop_assert_eq!(expected, (lo..=hi).collect::<Vec<_>>());
                }
            }
            // From the first count that takes the maximum (where the last search of a step
            // usually ended), three evaluations settle it: the count and its two neighbours.
            let first = (a..=b).find(|&c| f(c) == max).unwrap();
            let mut evaluations = 0;
            let _ = above(a, b, first, floor, |c| {
                evaluations += 1;
                f(c)
            });
            prop_assert!(evaluations <= 3, "{} evaluations", evaluations);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// The packed index finds exactly what the general one finds: (key, placed) packs
        /// without collisions for keys below the key space and placed up to n; a key space
        /// too large for 64 bits takes the general map.
        #[test]
        fn packed_index_is_the_general_one(
            keys in 1u64..5_000,
            n in 0u64..40,
            pairs in proptest::collection::vec((0u64..5_000, 0u64..40), 0..200),
            probes in proptest::collection::vec((0u64..5_000, 0u64..40), 0..200),
        ) {
            let mut packed = StepIndex::new(16, u128::from(keys), n);
            prop_assert!(matches!(packed, StepIndex::Packed(..)));
            let mut wide = StepIndex::Wide(FxHashMap::default());
            for (at, &(key, placed)) in pairs.iter().enumerate() {
                let (key, placed) = (u128::from(key % keys), placed % (n + 1));
                if packed.get(key, placed).is_none() {
                    packed.insert(key, placed, at as u32);
                    wide.insert(key, placed, at as u32);
                }
            }
            for &(key, placed) in pairs.iter().chain(&probes) {
                let (key, placed) = (u128::from(key % keys), placed % (n + 1));
                prop_assert_eq!(packed.get(key, placed), wide.get(key, placed));
            }
            let huge = StepIndex::new(16, u128::from(u64::MAX) / u128::from(n + 1) + 1, n);
            prop_assert!(matches!(huge, StepIndex::Wide(..)));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// The vectorized probes (arrays of 1, 7, 13 or 19 probes, or any count up to
        /// MOST_PROBES) give exactly what the probes one by one give: the least bound,
        /// or the first below the cut. The runs' answers, states and `dropped` depend on it.
        #[test]
        fn vectorized_probes_are_the_probes_one_by_one(
            problem in testing::small_problem(),
            gap in 0.0f64..3.0,
            layer in 0usize..8,
            spend in proptest::collection::vec(0.0f64..1.2, 5),
            value in -5.0f64..5.0,
            rest in proptest::option::of((0u64..6, -2.0f64..2.0, proptest::collection::vec(0u64..4, 5))),
            cut in prop_oneof![Just(f64::NEG_INFINITY), -10.0f64..10.0],
        ) {
            let classes = classes(&problem);
            let (mu, l) = multipliers(&classes, &problem.capacity);
            let tol = TOLERANCE * l.abs().max(1.0);
            let fixed = fix(&classes, &problem.capacity, &mu, gap, tol, CoreOrder::Rigid);
            let probes = probes(&mu);
            let Some(sfx) = Suffix::new(&classes, &fixed.kept, &fixed.core, &probes, &fixed.residual)
            else {
                return Ok(());
            };
            let k = sfx.k;
            let i = layer.min(fixed.core.len());
            let used: Vec<u64> = (0..k)
                .map(|t| (sfx.residual[t] as f64 * spend[t % spend.len()]) as u64)
                .collect();
            let units: Vec<u64> = rest.as_ref().map_or(vec![0; k], |r| r.2[..k].to_vec());
            let rest = rest.as_ref().map(|r| Rest { jobs: r.0, rc: r.1, units: &units });
            let bounds = StateBounds { probes: &probes, sfx, tables: None };
            let (start, each) = match rest {
                None => (value, &probes[..]),
                Some(r) => (value + r.jobs as f64 * r.rc, &probes[..1]),
            };
            let fast = bounds.probe_bound(value, &used, i, rest, cut);
            let slow = bounds.probe_bound_each(start, each, &used, i, rest, cut);
            prop_assert_eq!(fast, slow, "k {}, probes {}", k, each.len());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The counts of a step that fit the residual are exactly the interval `fitting`
        /// returns, with and without the class's last choice taking the other jobs.
        #[test]
        fn fitting_is_exactly_the_counts_that_fit(
            used in proptest::collection::vec(0u64..30, 3),
            residual in proptest::collection::vec(0u64..30, 3),
            left in 0u64..12,
            ch in (proptest::option::of(0usize..3), 1u64..5),
            tail in proptest::option::of((proptest::option::of(0usize..3), 1u64..5)),
        ) {
            let residual: Vec<u64> = residual.iter().zip(&used).map(|(r, u)| r + u).collect();
            let choice = |(gpu, units): (Option<usize>, u64)| Choice {
                gpu,
                units: if gpu.is_some() { units } else { 0 },
                value: 1.0,
                slot: 0,
            };
            let ch = choice(ch);
            let tail = tail.map(choice);
            let fits = |cnt: u64| {
                let mut row = used.clone();
                if let Some(g) = ch.gpu {
                    row[g] += ch.units * cnt;
                }
                if let Some(t) = tail
                    && let Some(g) = t.gpu
                {
                    row[g] += t.units * (left - cnt);
                }
                row.iter().zip(&residual).all(|(u, r)| u <= r)
            };
            let expected: Vec<u64> = (0..=left).filter(|&c| fits(c)).collect();
            let got = fitting(&used, &residual, left, &ch, tail.as_ref())
                .map_or(Vec::new(), |(lo, hi)| (lo..=hi).collect());
            prop_assert_eq!(expected, got);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The jump of gap deepening (docs/solver.md step 5): a run that finds nothing above
        /// its floor leaves the optimum at most the larger of the largest bound it dropped and
        /// L minus the next gap at which the fixing keeps more choices.
        #[test]
        fn a_failed_run_bounds_the_optimum_by_what_it_dropped(
            problem in testing::small_problem(),
            at in 0.0f64..1.0,
            above in 0.0f64..1.0,
        ) {
            let classes = classes(&problem);
            let (mu, l) = multipliers(&classes, &problem.capacity);
            let Some(opt) = optimum(&problem)? else {
                return Ok(());
            };
            let tol = TOLERANCE * l.abs().max(1.0);
            let gap = (l - opt).max(0.0) * at;
            let fixed = fix(&classes, &problem.capacity, &mu, gap, tol, CoreOrder::Rigid);
            let probes = probes(&mu);
            let mut dp = ClassDp::unlimited(&classes, &fixed.kept, &probes);
            let floor = opt + (l - opt).max(0.0) * above + 1e-6 * opt.abs().max(1.0);
            let found = dp
                .run(&fixed.core, &fixed.residual, fixed.base, floor)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            if found.is_none() {
                let next = crate::solvers::dp::fixing::next_gap(&classes, &mu, gap, tol);
                let most = dp.dropped.max(l - next);
                prop_assert!(at_least(most, opt), "dropped {} next {} optimum {}", dp.dropped, next, opt);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Lemma 3: fixed at the optimum's gap to L (times 1 to 2) and with a floor just below
        /// the optimum, the class DP finds the optimum, and its counts are a feasible
        /// assignment worth its total; the bound of the empty state is at least the optimum;
        /// with the floor just above the optimum it finds nothing. The probes are >= 0, mu
        /// first. (No floor at all would make it the full recurrence over the unit grid, far
        /// slower than the dense DP's arrays.)
        #[test]
        fn class_dp_at_the_optimums_gap_finds_the_optimum(
            problem in testing::small_problem(),
            factor in prop_oneof![Just(1.0), 1.0f64..2.0],
        ) {
            let Some(testing::AtOptimum { classes, mu, opt, tol, fixed }) =
                testing::fixed_at_optimum(&problem, factor)?
            else {
                return Ok(());
            };
            let probes = probes(&mu);
            prop_assert_eq!(&probes[0], &mu);
            prop_assert!(probes.iter().flatten().all(|&p| p >= 0.0));
            let Some(sfx) = Suffix::new(&classes, &fixed.kept, &fixed.core, &probes, &fixed.residual)
            else {
                return Err(TestCaseError::fail("the fixing at the optimum's gap overflows"));
            };
            let bounds = StateBounds { probes: &probes, sfx, tables: None };
            let root = bounds.bound(fixed.base, &vec![0; mu.len()], 0, None);
            prop_assert!(at_least(root, opt), "root bound {} below the optimum {}", root, opt);
            let mut dp = ClassDp::unlimited(&classes, &fixed.kept, &probes);
            let mut run = |floor: f64| {
                dp.run(&fixed.core, &fixed.residual, fixed.base, floor)
                    .map_err(|e| TestCaseError::fail(e.to_string()))
            };
            let Some((total, counts)) = run(opt - tol)? else {
                return Err(TestCaseError::fail(format!("nothing found above {}", opt - tol)));
            };
            prop_assert!(objectives_agree(opt, total), "dp {} optimum {}", total, opt);
            let assignment = fixed.assign(&classes, problem.jobs.len(), &counts);
            let value = check_feasible(&problem, &assignment)?;
            prop_assert!(objectives_agree(value, total));
            let above = opt + 1e-6 * opt.abs().max(1.0);
            prop_assert!(run(above)?.is_none(), "found a solution above the optimum {}", opt);
        }
    }
}
