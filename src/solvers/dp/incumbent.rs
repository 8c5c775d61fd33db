//! Step 3 of docs/solver.md: a feasible solution before any DP run.
//!
//! Why this file exists: the incumbent's value is the floor of the last gap-deepening run (so
//! the runs never go below it) and its solution the answer when no run finds a better one.
//! Exactness never depends on it: any feasible solution, however poor, is a valid floor.
//! The greedy places forced classes first (fewest choices first), then the optional ones by
//! best reduced cost at mu, each job on its best-rc choice that still fits, then moves each job
//! to a more valuable choice that fits; on problems of integral values (count problems) repair
//! passes place idle jobs by moving placed ones (displacement, then consolidation and
//! compaction in turn, once with the moves in class order and once thriftiest first).
//!
//! Complexity: greedy O(n log n + sum_j |Q_j| log |Q_j|) time, O(n + K) memory; the repair
//! passes as stated at each.
//! Reference: greedy by reduced cost (the LP-rounding heuristic of Kellerer, Pferschy and
//! Pisinger, *Knapsack Problems*, Springer 2004, section 11.2).

use super::classes::{Class, best_rc, rc};
use super::limits::{CHAIN_TYPES, COMPACT_PASSES, CONSOLIDATE_WORK, GREEDY_RC_SLACK};
use crate::formulation::RoundProblem;
use crate::solution::Assignment;

/// The greedy's solution as (value, assignment), or `None` if a forced job could not be placed.
///
/// With `displace_jobs` (the solver passes it for integral values, where an incumbent that
/// reaches the integer below L ends the solve) the greedy orders the optional classes by size
/// and the repair passes follow ([`displace`], then [`repair`] in both [`MoveOrder`]s).
pub(super) fn incumbent(
    problem: &RoundProblem,
    classes: &[Class],
    mu: &[f64],
    displace_jobs: bool,
) -> Option<(f64, Vec<Assignment>)> {
    greedy(problem, classes, mu, displace_jobs).map(|pick| {
        let mut value = 0.0;
        let mut assignment: Vec<Assignment> = vec![None; problem.jobs.len()];
        for cl in classes {
            for &j in &cl.jobs {
                let c = cl.choices[pick[j]];
                value += c.value;
                assignment[j] = c.gpu.map(|t| (t, c.slot));
            }
        }
        (value, assignment)
    })
}

/// The least value any solution can have: the sum of each job's least valuable choice (or 0).
/// With L (Lemma 1 of docs/solver.md) below it, no solution exists.
pub(super) fn least_value(classes: &[Class]) -> f64 {
    classes
        .iter()
        .map(|cl| {
            cl.jobs.len() as f64
                * cl.choices
                    .iter()
                    .map(|c| c.value)
                    .fold(f64::INFINITY, f64::min)
                    .min(0.0)
        })
        .sum()
}

/// A feasible assignment by greedy at `mu`: forced classes first (fewest choices first), then
/// the rest by best reduced cost; each job takes its best-rc choice that still fits. Then one
/// upgrade pass moves jobs to higher-value choices that fit. Returns per job its choice index
/// (into `choices_of`), or `None` if a forced job could not be placed.
fn greedy(
    problem: &RoundProblem,
    classes: &[Class],
    mu: &[f64],
    displace_jobs: bool,
) -> Option<Vec<usize>> {
    let n = problem.jobs.len();
    let mut pick = vec![usize::MAX; n];
    let mut free: Vec<u64> = problem.capacity.clone();
    let mut order: Vec<usize> = (0..classes.len()).collect();
    // Forced classes first, those with fewest choices first (they are the hardest to place);
    // then the optional ones by best reduced cost.
    let key = |i: usize| {
        let cl = &classes[i];
        if cl.forced {
            (false, cl.choices.len())
        } else {
            (true, 0)
        }
    };
    let best: Vec<f64> = classes.iter().map(|cl| best_rc(&cl.choices, mu)).collect();
    // With `displace_jobs` (integral values: the relaxation's count problems, every option
    // worth 1) the optional classes go by their best value per unit, then fewest choices first:
    // at prices mu that tie across types the reduced costs order jobs of equal size arbitrarily,
    // and a class that fits only some types must not find them taken by one that fits all (on
    // the 10,000-job Gavel mix, 8-unit jobs free to go anywhere filled the two types where 43
    // others could go, and the greedy fell 22 jobs short).
    let density: Vec<f64> = if displace_jobs {
        classes
            .iter()
            .map(|cl| {
                cl.choices
                    .iter()
                    .filter(|c| c.gpu.is_some() && c.units > 0)
                    .map(|c| c.value / c.units as f64)
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect()
    } else {
        Vec::new()
    };
    let width = |i: usize| classes[i].choices.len();
    order.sort_by(|&a, &b| {
        let by_size = if displace_jobs {
            density[b]
                .total_cmp(&density[a])
                .then(width(a).cmp(&width(b)))
        } else {
            std::cmp::Ordering::Equal
        };
        key(a)
            .cmp(&key(b))
            .then(by_size)
            .then_with(|| best[b].total_cmp(&best[a]))
    });
    for &ci in &order {
        let cl = &classes[ci];
        // Choices by reduced cost, best first; ties to the larger value, then the listed order.
        let mut ranked: Vec<usize> = (0..cl.choices.len()).collect();
        ranked.sort_by(|&a, &b| {
            let (ca, cb) = (&cl.choices[a], &cl.choices[b]);
            rc(cb, mu)
                .total_cmp(&rc(ca, mu))
                .then(cb.value.total_cmp(&ca.value))
                .then(a.cmp(&b))
        });
        for &j in &cl.jobs {
            let mut placed = false;
            for &q in &ranked {
                let c = &cl.choices[q];
                if !cl.forced && rc(c, mu) < -GREEDY_RC_SLACK && c.gpu.is_some() {
                    // Worse than idling at these prices; idle is in `ranked` too.
                    continue;
                }
                let fits = c.gpu.is_none_or(|g| c.units <= free[g]);
                if fits {
                    if let Some(g) = c.gpu {
                        free[g] -= c.units;
                    }
                    pick[j] = q;
                    placed = true;
                    break;
                }
            }
            if !placed {
                if cl.forced {
                    return None;
                }
                // Optional job with only negative-rc options and no idle? Cannot happen: idle
                // is always a choice of an optional job.
                return None;
            }
        }
    }
    // Upgrade pass: move each job to the most valuable choice that fits after releasing its own.
    for cl in classes {
        for &j in &cl.jobs {
            let cur = cl.choices[pick[j]];
            if let Some(g) = cur.gpu {
                free[g] += cur.units;
            }
            let mut best = pick[j];
            for (q, c) in cl.choices.iter().enumerate() {
                let fits = c.gpu.is_none_or(|g| c.units <= free[g]);
                if fits && c.value > cl.choices[best].value {
                    best = q;
                }
            }
            pick[j] = best;
            if let Some(g) = cl.choices[best].gpu {
                free[g] -= cl.choices[best].units;
            }
        }
    }
    if displace_jobs {
        // The displacement, then the other repair passes twice, with the consolidation's moves
        // in class order and then thriftiest first, each from the displacement's solution; the
        // more valuable is kept (so the second never makes the incumbent worse). Only `pick`
        // is returned: `free` is left as the first repair made it.
        displace(classes, &mut free, &mut pick);
        let mut other = (free.clone(), pick.clone());
        repair(classes, &mut free, &mut pick, MoveOrder::Classes);
        repair(classes, &mut other.0, &mut other.1, MoveOrder::Thrifty);
        let value = |pick: &[usize]| -> f64 {
            classes
                .iter()
                .flat_map(|cl| cl.jobs.iter().map(|&j| cl.choices[pick[j]].value))
                .sum()
        };
        if value(&other.1) > value(&pick) {
            pick = other.1;
        }
    }
    Some(pick)
}

/// The order in which the consolidation pass tries the moves that make room on a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MoveOrder {
    /// Classes in order, their choices in order: the first move that fits.
    Classes,
    /// Fewest units spent on the other type per unit freed first, then the largest job: a type
    /// with a little room is not filled by small jobs that free little while a large job could
    /// have moved there.
    Thrifty,
}

/// The repair passes of integral problems after the displacement: consolidation, then
/// compaction and consolidation in turn while compaction saves units (at most
/// [`COMPACT_PASSES`] times). The first consolidation has a budget of [`CONSOLIDATE_WORK`]
/// candidate moves, and the rounds after it share one more such budget (a helper's review
/// measured 88-92 s on 1,942 random classes with a budget for every pass, 8 s with these).
fn repair(classes: &[Class], free: &mut [u64], pick: &mut [usize], order: MoveOrder) {
    let mut first = CONSOLIDATE_WORK;
    consolidate(classes, free, pick, order, &mut first);
    // Compaction frees units the consolidation's moves spent; the consolidation then places
    // idle jobs in them, which may leave new room to compact. One budget for all the rounds.
    let mut work = CONSOLIDATE_WORK;
    for _ in 0..COMPACT_PASSES {
        if work == 0 || compact(classes, free, pick, &mut work) == 0 {
            break;
        }
        consolidate(classes, free, pick, order, &mut work);
    }
}

/// Displacement pass: an idle job takes a more valuable choice on a type without room for it
/// when one placed job there can move to a choice on another type that has room, the two moves
/// together gaining value (a path of two moves, as in the augmenting paths of assignment
/// problems). One pass over the idle jobs, class by class; once a job of a class finds no such
/// move, its identical classmates are not tried (they would find none either: the moves only
/// fill room).
///
/// Why: on the relaxation's count problems (every option worth 1) an incumbent one job short
/// of the ceiling leaves the DP a proof it may not afford (docs/solver.md step 5, integral
/// values), and a job placed on a type that others also fit can stand where an idle job alone
/// fits. On the first count problem of the 10,000-job Gavel mix the pass alone added one job
/// (3,249 to 3,250 of 3,271); with the greedy's order by size it reaches the ceiling.
///
/// Complexity: O(I * w^3 * C) for I idle jobs, C classes of at most w choices; memory O(n).
fn displace(classes: &[Class], free: &mut [u64], pick: &mut [usize]) {
    let mut holders = holders(classes, pick);
    for (ci, cl) in classes.iter().enumerate() {
        for &j in &cl.jobs {
            let cur = cl.choices[pick[j]];
            if cur.gpu.is_some() {
                continue;
            }
            // The choice to take (index, type) and the move that makes room for it, if any
            // (class, from choice, to choice, to type).
            let moved = cl.choices.iter().enumerate().find_map(|(qc, c)| {
                let t = c.gpu?;
                if c.value <= cur.value {
                    return None;
                }
                if c.units <= free[t] {
                    return Some((qc, t, None));
                }
                let need = c.units - free[t];
                // A placed job of class di on choice qi (type t, at least `need` units) that can
                // move to choice q2 on another type with room, with a gain overall.
                classes.iter().enumerate().find_map(|(di, dl)| {
                    dl.choices.iter().enumerate().find_map(|(qi, on)| {
                        if on.gpu != Some(t) || on.units < need || holders[di][qi].is_empty() {
                            return None;
                        }
                        dl.choices.iter().enumerate().find_map(|(q2, to)| {
                            let t2 = to.gpu?;
                            let gain = c.value - cur.value + to.value - on.value;
                            (t2 != t && to.units <= free[t2] && gain > 0.0).then_some((
                                qc,
                                t,
                                Some((di, qi, q2, t2)),
                            ))
                        })
                    })
                })
            });
            let Some((qc, t, mover)) = moved else {
                // Its classmates left idle would find nothing either.
                break;
            };
            if let Some((di, qi, q2, t2)) = mover
                && shift(&mut holders, pick, (di, qi, q2), 1) == 1
            {
                free[t] += classes[di].choices[qi].units;
                free[t2] -= classes[di].choices[q2].units;
            }
            free[t] -= cl.choices[qc].units;
            pick[j] = qc;
            holders[ci][qc].push(j);
        }
    }
}

/// Compaction pass: moves that lower the units the placed jobs use, none lowering value, so
/// that the consolidation pass finds room for idle jobs. A placed job moves to a choice with
/// fewer units on another type that has room, or two placed jobs exchange types (one of class
/// a from type t to a choice on t2, one of class b from t2 to a choice on t) when the two then
/// use fewer units and both types still hold them. Identical moves are made in bulk, as many as
/// the rooms allow, and the scan repeats until no move saves units. Returns the units saved.
///
/// Why: to make room, the consolidation pass moves the first job it finds that fits elsewhere,
/// at any units. On the count problem of round 7 of the 10,000-job Gavel mix (seed 6: 18
/// classes, 4,615 forced jobs on 3 x 4,000 units, L = 4601.125 at prices of 1/32 per unit on
/// every type, so every unit left unused or spent above a job's fewest costs 1/32 of the
/// bound) it moved 179 jobs of units (1, 2, 4) from the first type to the third at 4 units while
/// 369 jobs of units (1, 1, 1) stayed on the first: the greedy ended at 4,580 jobs, the DP's
/// proof at floor 4,601 ran past its state budget (250,000 states, then 790,000 with the
/// tables) and the ILP took the round, 16 s in all. Exchanging the two classes' places saves
/// three units each; compaction and consolidation in turn reach 4,601, the ceiling, in
/// milliseconds.
///
/// Complexity: a scan examines O((C w^2)^2) candidate moves for C classes of at most w
/// choices, and each candidate (a direct move or an exchange) costs one unit of `work`, at
/// which the pass stops; every scan but the last saves at least one unit. Memory O(n + C w).
fn compact(classes: &[Class], free: &mut [u64], pick: &mut [usize], work: &mut u64) -> u64 {
    let mut holders = holders(classes, pick);
    let mut saved = 0u64;
    loop {
        let before = saved;
        for (a, al) in classes.iter().enumerate() {
            for (qa, on_a) in al.choices.iter().enumerate() {
                let Some(t) = on_a.gpu else { continue };
                for (qa2, to_a) in al.choices.iter().enumerate() {
                    let Some(t2) = to_a.gpu else { continue };
                    if t2 == t || to_a.units >= on_a.units || to_a.value < on_a.value {
                        continue;
                    }
                    let placed = holders[a][qa].len() as u64;
                    if placed == 0 {
                        break;
                    }
                    if *work == 0 {
                        return saved;
                    }
                    *work -= 1;
                    // Straight to t2, as many as its room holds (a choice of 0 units on a type
                    // needs no room).
                    let direct = free[t2]
                        .checked_div(to_a.units)
                        .map_or(placed, |fit| placed.min(fit));
                    if direct > 0 {
                        free[t] += on_a.units * direct;
                        free[t2] -= to_a.units * direct;
                        saved = saved.saturating_add((on_a.units - to_a.units) * direct);
                        shift(&mut holders, pick, (a, qa, qa2), direct);
                        continue;
                    }
                    // In exchange for jobs of another class b on t2 that move to t.
                    for (b, bl) in classes.iter().enumerate() {
                        if holders[a][qa].is_empty() {
                            // Nothing of (a, qa) left to exchange.
                            break;
                        }
                        if b == a {
                            // One job of a class each way only swaps which job is where.
                            continue;
                        }
                        for (qb, on_b) in bl.choices.iter().enumerate() {
                            if on_b.gpu != Some(t2) || holders[b][qb].is_empty() {
                                continue;
                            }
                            for (qb2, to_b) in bl.choices.iter().enumerate() {
                                if *work == 0 {
                                    return saved;
                                }
                                *work -= 1;
                                // In u128: units are u64, and their sums may not fit.
                                let before = u128::from(on_a.units) + u128::from(on_b.units);
                                let after = u128::from(to_a.units) + u128::from(to_b.units);
                                if to_b.gpu != Some(t) || to_b.value < on_b.value || before <= after
                                {
                                    continue;
                                }
                                // Each exchange leaves t with to_b for on_a and t2 with to_a
                                // for on_b; as many as both types can hold in turn.
                                let most =
                                    (holders[a][qa].len() as u64).min(holders[b][qb].len() as u64);
                                let (mut room_t, mut room_t2) = (free[t], free[t2]);
                                let mut k = 0u64;
                                while k < most
                                    && room_t + on_a.units >= to_b.units
                                    && room_t2 + on_b.units >= to_a.units
                                {
                                    room_t = room_t + on_a.units - to_b.units;
                                    room_t2 = room_t2 + on_b.units - to_a.units;
                                    k += 1;
                                }
                                if k == 0 {
                                    continue;
                                }
                                (free[t], free[t2]) = (room_t, room_t2);
                                let each = u64::try_from(before - after).unwrap_or(u64::MAX);
                                saved = saved.saturating_add(each.saturating_mul(k));
                                shift(&mut holders, pick, (a, qa, qa2), k);
                                shift(&mut holders, pick, (b, qb, qb2), k);
                            }
                        }
                    }
                }
            }
        }
        if saved == before {
            return saved;
        }
    }
}

/// Moves up to `k` placed jobs of class `di` from choice `qi` to choice `q2` (`mv` = (di, qi,
/// q2)), in `holders` and `pick`; returns how many moved. The rooms are the caller's.
fn shift(
    holders: &mut [Vec<Vec<usize>>],
    pick: &mut [usize],
    mv: (usize, usize, usize),
    k: u64,
) -> u64 {
    let (di, qi, q2) = mv;
    let mut moved = 0;
    while moved < k {
        let Some(i) = holders[di][qi].pop() else {
            break;
        };
        pick[i] = q2;
        holders[di][q2].push(i);
        moved += 1;
    }
    moved
}

/// Per class and choice, the jobs placed on it (a choice on a GPU type) by `pick`.
fn holders(classes: &[Class], pick: &[usize]) -> Vec<Vec<Vec<usize>>> {
    let mut holders: Vec<Vec<Vec<usize>>> = classes
        .iter()
        .map(|cl| vec![Vec::new(); cl.choices.len()])
        .collect();
    for (ci, cl) in classes.iter().enumerate() {
        for &j in &cl.jobs {
            if cl.choices[pick[j]].gpu.is_some() {
                holders[ci][pick[j]].push(j);
            }
        }
    }
    holders
}

/// Consolidation pass: an idle job takes a more valuable choice on a type without room for it
/// when placed jobs there can move away until the room suffices: each to a choice on another
/// type with room, or with room made there the same way (a chain of moves over up to
/// [`CHAIN_TYPES`] types), and each to a choice of at least its value, so that no move loses
/// value (the displacement pass moves one job, one step). Moves are planned, then made only
/// when they free enough. Once a job of a class finds no such moves, its classmates are not
/// tried.
///
/// Why: on a count problem of the 10,000-job Gavel mix with the service priced (L = 4910,
/// every unit of the three types used at the optimum, which HiGHS confirms) the greedy left
/// 4909 jobs and 4, 12 and 16 units free: a 32-unit job fit no type. The room is made by
/// moving one-unit jobs from one type to a second and from the second to the third. One job
/// short of the ceiling, the DP's proof at floor 4910 had run past its layer limit (2.6 M
/// states, then the ILP).
///
/// Complexity: the moves off each type, in `order`, are listed once a pass (O(C w^2 log(C w))
/// for C classes of at most w choices); each planned move tries O(C w^2) of them, times
/// O(C w^2) per level of a chain, one unit of `work` each, at which the pass stops. Memory
/// O(n + C w^2).
fn consolidate(
    classes: &[Class],
    free: &mut [u64],
    pick: &mut [usize],
    order: MoveOrder,
    work: &mut u64,
) {
    // The chains mark the types they visited in a u32 (the pass is only a heuristic).
    if free.len() > 32 {
        return;
    }
    let mut holders = holders(classes, pick);
    let mut count: Vec<Vec<usize>> = holders
        .iter()
        .map(|h| h.iter().map(Vec::len).collect())
        .collect();
    let moves_off = moves_off(classes, free.len(), order);
    let mut plan = Plan {
        classes,
        room: free.to_vec(),
        count: &mut count,
        moves: Vec::new(),
        work: *work,
        moves_off: &moves_off,
    };
    let depth = free.len().min(CHAIN_TYPES).saturating_sub(1);
    for (ci, cl) in classes.iter().enumerate() {
        for &j in &cl.jobs {
            let cur = cl.choices[pick[j]];
            if cur.gpu.is_some() {
                continue;
            }
            let taken = cl.choices.iter().enumerate().find_map(|(qc, c)| {
                let t = c.gpu?;
                if c.value <= cur.value {
                    return None;
                }
                let mark = plan.moves.len();
                if plan.make_room(t, c.units, 1 << t, depth) {
                    Some(qc)
                } else {
                    plan.undo(mark);
                    None
                }
            });
            let Some(qc) = taken else {
                // Its classmates left idle would find nothing either.
                break;
            };
            // Make the planned moves, then place the job.
            for mv in plan.moves.drain(..) {
                shift(&mut holders, pick, mv, 1);
            }
            if let Some(t) = cl.choices[qc].gpu {
                plan.room[t] -= cl.choices[qc].units;
            }
            pick[j] = qc;
            holders[ci][qc].push(j);
            plan.count[ci][qc] += 1;
        }
    }
    *work = plan.work;
    free.copy_from_slice(&plan.room);
}

/// Per type t, the moves off t that keep value (class, from choice, to choice, to type), in
/// `order`: built once per pass (the order depends on units only).
fn moves_off(
    classes: &[Class],
    types: usize,
    order: MoveOrder,
) -> Vec<Vec<(usize, usize, usize, usize)>> {
    let mut out = vec![Vec::new(); types];
    for (di, dl) in classes.iter().enumerate() {
        for (qi, on) in dl.choices.iter().enumerate() {
            let Some(t) = on.gpu else { continue };
            if on.units == 0 {
                continue;
            }
            for (q2, to) in dl.choices.iter().enumerate() {
                let Some(t2) = to.gpu else { continue };
                if t2 != t && to.value >= on.value {
                    out[t].push((di, qi, q2, t2));
                }
            }
        }
    }
    if order == MoveOrder::Thrifty {
        let units = |&(di, q, _, _): &(usize, usize, usize, usize)| classes[di].choices[q].units;
        let spent = |&(di, _, q2, _): &(usize, usize, usize, usize)| classes[di].choices[q2].units;
        for list in &mut out {
            list.sort_by(|a, b| {
                (u128::from(spent(a)) * u128::from(units(b)))
                    .cmp(&(u128::from(spent(b)) * u128::from(units(a))))
                    .then(units(b).cmp(&units(a)))
            });
        }
    }
    out
}

/// Moves planned by the consolidation pass, on counts of placed jobs per class and choice and
/// the room per type, with an undo log.
struct Plan<'a> {
    classes: &'a [Class],
    room: Vec<u64>,
    count: &'a mut [Vec<usize>],
    /// (class, from choice, to choice), one job each, in order.
    moves: Vec<(usize, usize, usize)>,
    /// Candidate moves left to examine: the pass stops planning when they run out (chains
    /// can cost O((C w^2)^depth) per move; the pass only improves the incumbent).
    work: u64,
    /// Per type, the moves off it in the pass's order ([`moves_off`]).
    moves_off: &'a [Vec<(usize, usize, usize, usize)>],
}

impl Plan<'_> {
    /// Plans moves until type t has `units` of room: each moves one placed job off t to a
    /// choice of at least its value on a type not in `used` (a bit per type), with room there
    /// or, up to `depth` more levels, room made there the same way. Direct moves are tried
    /// before chains. Returns whether it succeeded (the caller undoes a failure).
    fn make_room(&mut self, t: usize, units: u64, used: u32, depth: usize) -> bool {
        while self.room[t] < units {
            let moved = self.move_one(t, used, 0) || (depth > 0 && self.move_one(t, used, depth));
            if !moved {
                return false;
            }
        }
        true
    }

    /// One move off type t (see [`Plan::make_room`]): with `depth` 0 only to a type with room.
    fn move_one(&mut self, t: usize, used: u32, depth: usize) -> bool {
        let (classes, moves_off) = (self.classes, self.moves_off);
        for &(di, qi, q2, t2) in &moves_off[t] {
            if used & (1 << t2) != 0 {
                continue;
            }
            let (on, to) = (classes[di].choices[qi], classes[di].choices[q2]);
            if self.count[di][qi] == 0 {
                continue;
            }
            if self.work == 0 {
                return false;
            }
            self.work -= 1;
            let mark = self.moves.len();
            let fits = self.room[t2] >= to.units
                || (depth > 0 && self.make_room(t2, to.units, used | 1 << t2, depth - 1));
            // A chain may have moved this class's jobs off t already.
            if fits && self.count[di][qi] > 0 {
                self.count[di][qi] -= 1;
                self.count[di][q2] += 1;
                self.room[t] += on.units;
                self.room[t2] -= to.units;
                self.moves.push((di, qi, q2));
                return true;
            }
            self.undo(mark);
        }
        false
    }

    /// Takes back the moves planned after the first `mark`.
    fn undo(&mut self, mark: usize) {
        while self.moves.len() > mark {
            let Some((di, qi, q2)) = self.moves.pop() else {
                break;
            };
            let (on, to) = (self.classes[di].choices[qi], self.classes[di].choices[q2]);
            self.count[di][qi] += 1;
            self.count[di][q2] -= 1;
            if let (Some(a), Some(b)) = (on.gpu, to.gpu) {
                self.room[a] -= on.units;
                self.room[b] += to.units;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::solvers::dp::classes::{Choice, classes};
    use crate::solvers::dp::lagrangian::multipliers;
    use crate::solvers::dp::testing::{self, at_least, check_feasible, count_problem, optimum};

    /// A choice worth 1 on a GPU type (0 when idle), its slot its units.
    fn choice(gpu: Option<usize>, units: u64) -> Choice {
        Choice {
            gpu,
            units,
            value: if gpu.is_some() { 1.0 } else { 0.0 },
            slot: units as u32,
        }
    }

    /// `consolidate` in `order` with a fresh budget, from (free, pick); returns them after.
    fn consolidated(
        classes: &[Class],
        free: &[u64],
        pick: &[usize],
        order: MoveOrder,
    ) -> (Vec<u64>, Vec<usize>) {
        let (mut free, mut pick) = (free.to_vec(), pick.to_vec());
        let mut work = CONSOLIDATE_WORK;
        consolidate(classes, &mut free, &mut pick, order, &mut work);
        (free, pick)
    }

    /// An optional class of `jobs` with `choices`.
    fn class(choices: Vec<Choice>, jobs: Vec<usize>) -> Class {
        Class {
            choices,
            forced: false,
            jobs,
        }
    }

    /// Hand-worked: one type of 4 units holds a job that could also run on a second type of 2
    /// units; an idle job fits only the first type. The displacement moves the first job to the
    /// second type and places the idle one: two jobs instead of one.
    #[test]
    fn displacement_moves_a_job_to_make_room() {
        let choice = |gpu: Option<usize>, units: u64, value: f64| Choice {
            gpu,
            units,
            value,
            slot: units as u32,
        };
        let classes = vec![
            Class {
                choices: vec![
                    choice(Some(0), 4, 1.0),
                    choice(Some(1), 2, 1.0),
                    choice(None, 0, 0.0),
                ],
                forced: false,
                jobs: vec![0],
            },
            Class {
                choices: vec![choice(Some(0), 4, 1.0), choice(None, 0, 0.0)],
                forced: false,
                jobs: vec![1],
            },
        ];
        let mut free = vec![0, 2];
        let mut pick = vec![0, 1];
        displace(&classes, &mut free, &mut pick);
        assert_eq!(pick, vec![1, 0]);
        assert_eq!(free, vec![0, 0]);
        // Nothing to gain: a job whose only other choice has no room stays where it is.
        let mut free = vec![0, 1];
        let mut pick = vec![0, 1];
        displace(&classes, &mut free, &mut pick);
        assert_eq!(pick, vec![0, 1]);
    }

    /// Hand-worked: an idle job needs 2 units on type 0, which has 1 free. A job there can
    /// move to type 1, which is full, but a job on type 1 can move to type 2, which has a unit
    /// free: the chain of two moves makes the room, and every job runs.
    #[test]
    fn consolidation_chains_moves_to_make_room() {
        let classes = vec![
            class(
                vec![choice(Some(0), 1), choice(Some(1), 1), choice(None, 0)],
                vec![0],
            ),
            class(
                vec![choice(Some(1), 1), choice(Some(2), 1), choice(None, 0)],
                vec![1],
            ),
            class(vec![choice(Some(0), 2), choice(None, 0)], vec![2]),
        ];
        let (free, pick) = consolidated(&classes, &[1, 0, 1], &[0, 0, 1], MoveOrder::Classes);
        assert_eq!(pick, vec![1, 1, 0]);
        assert_eq!(free, vec![0, 0, 0]);
        // Without the unit on type 2 no chain makes room, and nothing moves.
        let (free, pick) = consolidated(&classes, &[1, 0, 0], &[0, 0, 1], MoveOrder::Classes);
        assert_eq!(pick, vec![0, 0, 1]);
        assert_eq!(free, vec![1, 0, 0]);
    }

    /// Hand-worked: type 0 is full with two jobs of units (1, 2) and one of units (2, 2); type
    /// 1 has 2 units free; an idle job needs 2 units of type 0. In class order the first move
    /// sends a one-unit job to type 1 at 2 units, which fills it and frees one unit only; the
    /// thrifty order moves the two-unit job first (2 spent per 2 freed) and the idle job runs.
    #[test]
    fn thrifty_moves_make_room_where_the_first_fit_does_not() {
        let classes = vec![
            class(
                vec![choice(Some(0), 1), choice(Some(1), 2), choice(None, 0)],
                vec![0, 1],
            ),
            class(
                vec![choice(Some(0), 2), choice(Some(1), 2), choice(None, 0)],
                vec![2],
            ),
            class(vec![choice(Some(0), 2), choice(None, 0)], vec![3]),
        ];
        let (free, pick) = consolidated(&classes, &[0, 2], &[0, 0, 0, 1], MoveOrder::Classes);
        assert_eq!(pick, vec![0, 0, 0, 1]);
        assert_eq!(free, vec![0, 2]);
        let (free, pick) = consolidated(&classes, &free, &pick, MoveOrder::Thrifty);
        assert_eq!(pick, vec![0, 0, 1, 0]);
        assert_eq!(free, vec![0, 0]);
    }

    /// Hand-worked: type 0 (1 unit) holds a job of units (1, 1); type 1 (4 units) holds a job
    /// of units (1, 4) at 4 units. Exchanging them saves three units on type 1; with type 0's
    /// unit free instead (and both jobs on type 1), the second job moves there alone and frees
    /// its four.
    #[test]
    fn compaction_exchanges_jobs_to_save_units() {
        let classes = vec![
            class(
                vec![choice(Some(0), 1), choice(Some(1), 1), choice(None, 0)],
                vec![0],
            ),
            class(
                vec![choice(Some(0), 1), choice(Some(1), 4), choice(None, 0)],
                vec![1],
            ),
        ];
        // (free, pick) before, then the units saved, pick and free after: the exchange; the
        // direct move with type 0's unit free; nothing to save, every job on its fewest units.
        let cases = [
            ([0, 0], [0, 1], 3, [1, 0], [0, 3]),
            ([1, 0], [1, 1], 3, [1, 0], [0, 4]),
            ([0, 3], [1, 0], 0, [1, 0], [0, 3]),
        ];
        for (free, pick, saved, pick_after, free_after) in cases {
            let (mut free, mut pick) = (free.to_vec(), pick.to_vec());
            let mut work = CONSOLIDATE_WORK;
            assert_eq!(compact(&classes, &mut free, &mut pick, &mut work), saved);
            assert_eq!(pick, pick_after);
            assert_eq!(free, free_after);
        }
    }

    /// Two count problems of `stsfair rounds --rounds 10` on Gavel mixes (`gen --gavel --multi
    /// --jobs N --count N/10 --seed S`), as the relaxation made them; the prices 1/32 on every
    /// type give L = k + 0.125, so no solution runs more than k jobs, and HiGHS finds k. The
    /// greedy must reach k, which ends the solve with no run:
    /// - round 7 of the 10,000-job mix of seed 6 (4,615 forced jobs, 3 x 4,000 units): without
    ///   the compaction the greedy stopped at 4,580, and the DP could not close the gap within
    ///   its budget (the ILP took the round);
    /// - round 4 of the 1,000-job mix of seed 2 (513 forced jobs, 3 x 400 units): with the
    ///   consolidation's moves in class order only it stopped at 486, with 7, 13 and 16 units
    ///   free and 27 jobs of 32 units idle, and the DP refused it after 6.7 s.
    #[test]
    fn count_problems_of_the_gavel_mixes_reach_their_ceiling() {
        let mix_10k: [(usize, [u64; 3]); 18] = [
            (220, [16, 16, 16]),
            (5385, [0, 0, 0]),
            (61, [2, 2, 4]),
            (814, [1, 2, 4]),
            (369, [1, 1, 1]),
            (676, [1, 1, 2]),
            (731, [2, 1, 2]),
            (359, [1, 1, 4]),
            (287, [2, 2, 2]),
            (328, [1, 2, 2]),
            (288, [2, 1, 4]),
            (177, [1, 2, 0]),
            (75, [32, 32, 32]),
            (66, [2, 2, 0]),
            (21, [8, 8, 8]),
            (53, [32, 32, 0]),
            (70, [1, 1, 0]),
            (20, [2, 1, 1]),
        ];
        let mix_1k: [(usize, [u64; 3]); 18] = [
            (80, [1, 2, 4]),
            (95, [1, 1, 2]),
            (8, [2, 2, 4]),
            (61, [1, 1, 1]),
            (43, [1, 1, 4]),
            (487, [0, 0, 0]),
            (11, [1, 2, 0]),
            (64, [2, 1, 2]),
            (25, [2, 2, 2]),
            (32, [2, 1, 4]),
            (36, [32, 32, 32]),
            (2, [16, 16, 0]),
            (9, [16, 16, 16]),
            (23, [1, 2, 2]),
            (10, [8, 8, 8]),
            (4, [32, 32, 0]),
            (7, [2, 2, 0]),
            (3, [2, 1, 1]),
        ];
        for (shape, capacity, ceiling) in [(&mix_10k[..], 4000, 4601.0), (&mix_1k[..], 400, 487.0)]
        {
            let problem = count_problem(shape, capacity);
            let classes = classes(&problem);
            let (mu, bound) = multipliers(&classes, &problem.capacity);
            assert!((bound - ceiling - 0.125).abs() < 1e-9, "L = {bound}");
            let (value, assignment) =
                incumbent(&problem, &classes, &mu, true).expect("every job may idle");
            assert_eq!(value, ceiling);
            let checked = check_feasible(&problem, &assignment).map_err(|e| e.to_string());
            assert_eq!(checked, Ok(ceiling));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The greedy's solution is feasible, worth the value it reports and at most the
        /// optimum, with and without the repair passes.
        #[test]
        fn incumbents_are_feasible_and_at_most_the_optimum(problem in testing::small_problem()) {
            let classes = classes(&problem);
            let (mu, _) = multipliers(&classes, &problem.capacity);
            let opt = optimum(&problem)?;
            // Both orders of the greedy, the second with the displacement pass.
            for displace_jobs in [false, true] {
                if let Some((value, assignment)) = incumbent(&problem, &classes, &mu, displace_jobs) {
                    let Some(opt) = opt else {
                        return Err(TestCaseError::fail("greedy solved an infeasible round"));
                    };
                    let checked = check_feasible(&problem, &assignment)?;
                    prop_assert!(crate::solution::objectives_agree(checked, value));
                    prop_assert!(at_least(opt, value), "greedy {} above the optimum {}", value, opt);
                }
            }
        }
    }
}
