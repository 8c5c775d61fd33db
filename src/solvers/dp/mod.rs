//! The fast exact DP ("dp"): the dense recurrence of MODEL.md section 4, restricted to the states
//! that can still lead to an optimum.
//!
//! Why this module exists: the round problem is a multiple-choice knapsack with one capacity
//! per GPU type, and the dense DP over the whole unit grid is too slow for real clusters.
//! Following the core idea of Pisinger's exact knapsack algorithms (Minknap, Mcknap), this
//! solver bounds, fixes and lays out a DP over only the few classes of jobs whose choices are
//! close to a tie. One file per step of docs/solver.md, which proves every rule:
//!
//! 1. [`classes`](mod@classes): jobs with identical choices form a class with a count.
//! 2. [`lagrangian`](mod@lagrangian): the Lagrangian bound L(mu) and the multipliers mu
//!    minimizing it (exact line searches); min L equals the LP relaxation.
//! 3. [`incumbent`](mod@incumbent): a greedy solution at mu (the last run's floor).
//! 4. [`fixing`]: reduced-cost fixing; a solution worth >= L - g uses only choices whose
//!    reduced-cost gap is <= g, the others are removed, and the classes left with several
//!    choices form the core.
//! 5. Gap deepening (here, [`Dp`]'s [`Solver`] impl): the DP runs with floor L - g for
//!    g = 1e-9 |L|, 2g, 4g, ... (once a run has 250 states, or 1,000 with the core in the
//!    units order, the step predicted to triple
//!    them, [`plain_growth`]; 1.25 g per run once the runs are expensive) until a run finds
//!    a solution, which is then optimal; the last run uses the incumbent's value as the floor.
//!    A failed run raises g to what it proves: past the next gap at which the fixing keeps
//!    more, or past the largest bound it dropped (with the tables on, or after a run that
//!    dropped nothing by its floor or did not grow; otherwise to the first gap of its grid of
//!    steps past that). With the tables on, one fixing and its tables serve the runs within
//!    twice the gap they were made for.
//! 6. [`class_dp`]: the class DP over the core: one layer per core class, a transition is a
//!    count vector chosen choice by choice (the last step places the class's remaining jobs,
//!    the counts kept are an interval of a concave bound), states are unit vectors over the
//!    types that can bind (dominance: the larger value wins), pruned by capacity and by
//!    Lagrangian bounds at several probe prices; once a run has 1,000 states (2,000 in the
//!    units order) also by
//!    [`tables`], partial relaxations that keep the capacity of one type exact (of pairs of
//!    types on expensive runs) and see the integrality the LP bound cannot.
//!
//! The tuning constants are all in [`limits`].
//!
//! Complexity: worst case the core is all classes and the states are the whole grid, the dense
//! DP's O(n * prod_k (C_k + 1) * |Q|) time. Once the runs have created a quarter of the dense
//! DP's cells (and 100,000 states), the dense DP finishes the solve where it fits in memory
//! ([`Dp::dense_finish`]), so a solve costs at most about twice the dense DP's time. Otherwise
//! the guard stops at a layer past [`Dp::max_states`], or at a solve whose runs create (or,
//! predicted from the growth of the last runs, would create) more than twice that: the dense
//! DP finishes there too where it fits in memory, and the solve is refused where it does not,
//! instead of exhausting memory or time. Typical case:
//! O(P 3^K sum |Q_c|^2) for the bound, plus a few DP runs over a core of a few classes
//! (measured figures in docs/performance.md). Memory: O(sum_j |Q_j|) for the classes plus the
//! DP's states, about 100 bytes each while a layer is built.
//! References: D. Pisinger, "A minimal algorithm for the multiple-choice knapsack problem", EJOR
//! 83 (1995) 394-410; D. Pisinger, "A minimal algorithm for the 0-1 knapsack problem",
//! Operations Research 45 (1997); H. Kellerer, U. Pferschy, D. Pisinger, *Knapsack Problems*,
//! Springer 2004, chapters 5 and 11; A. M. Geoffrion, "Lagrangean relaxation for integer
//! programming", Mathematical Programming Study 2 (1974) 82-114.

mod class_dp;
mod classes;
mod fixing;
mod incumbent;
mod lagrangian;
mod limits;
mod suffix;
#[cfg(test)]
mod switches;
mod tables;
#[cfg(test)]
mod testing;

use std::time::Instant;

use super::{DenseDp, SolveError, Solver, WarmStart, deadline, relative_gap, time_limit_text};
use crate::formulation::RoundProblem;
use crate::solution::{Assignment, OBJECTIVE_TOLERANCE, Solution, Status};
use crate::solution::{DpStats, Infeasibility, SolveStats, SolverDetail};
use class_dp::{ClassDp, Found, past, probes};
use classes::{Class, classes, totals};
use fixing::{CoreOrder, Fixed, fix, next_gap, widest};
use incumbent::{incumbent, least_value};
use lagrangian::{
    multipliers, proven_minimum, refine_multipliers, smooth_multipliers, warm_multipliers,
};
use limits::{
    ADAPT_AFTER_STATES, DEFAULT_MAX_STATES, DENSE_AFTER_STATES, DENSE_SHARE, FAST_GROWTH,
    FIRST_GAP, FIT_WORK, FLAT_GROWTH, MIN_STEP, PLAIN_RUN_STATES, PREDICT_AFTER_STATES,
    RACE_AFTER_STATES, RACE_FACTOR, REFUTE_WORK, RIGID_ADAPT_AFTER_STATES, RIGID_SINGLE_SHARE,
    RUN_GROWTH, SINGLE_SPAN, SINGLE_TABLES_AFTER_STATES, SLOW_GROWTH, SMOOTH_AFTER_STATES,
    SOLVE_BUDGET, TABLE_SPAN, TABLE_WORK, TABLE_WORK_PER_STATE, TABLES_AFTER_STATES,
    TABLES_PREDICTED, TOLERANCE, dense_bytes, table_cells,
};
use suffix::Suffix;
use tables::{TypeTables, strongest_fit};

/// How many times the states of a run grow per doubling of the gap, measured between the run
/// before (`previous`) and the run just made (`run`), as (gap, states): (s1 / s0)^(ln 2 /
/// ln(g1 / g0)), the states taken to grow as a power of the gap between the two (on doubling
/// steps simply s1 / s0); `None` without two runs of growing gap and states > 0.
fn growth_per_doubling(previous: (f64, u64), run: (f64, u64)) -> Option<f64> {
    let ((g0, s0), (g1, s1)) = (previous, run);
    (s0 > 0 && g0 > 0.0 && g1 > g0)
        .then(|| (s1 as f64 / s0 as f64).powf(std::f64::consts::LN_2 / (g1 / g0).ln()))
}

/// The growth factor of the gap after a failed run without the type tables: doubling while
/// the runs are cheap; once a run has [`ADAPT_AFTER_STATES`] states or more, the factor that
/// predicts [`RUN_GROWTH`] times its states for the next run from their growth per doubling
/// `per_doubling` (2^(ln RUN_GROWTH / ln per_doubling)), at least [`SLOW_GROWTH`] and at most
/// [`FAST_GROWTH`].
///
/// Why: the runs' states grow steeply with the gap (4 to 26 times per doubling measured on
/// Gavel rounds of 1,000 jobs), and the last run overshoots the optimum's gap by up to the
/// step. With states growing by F per run, the runs together cost about F / ln F times the
/// states at the optimum's gap (the failed ones a geometric series below the last, which lies
/// log-uniformly up to F above it), least near F = e: doubling at 7 to 26 times per step costs
/// 3.7 to 8 times, a step of F = 3 about 2.7. Any sequence of floors is exact (Lemma 3).
fn plain_growth(per_doubling: f64) -> f64 {
    if per_doubling > RUN_GROWTH {
        2f64.powf(RUN_GROWTH.ln() / per_doubling.ln())
            .clamp(SLOW_GROWTH, FAST_GROWTH)
    } else {
        FAST_GROWTH
    }
}

/// Whether every choice of every class is worth an integer (small enough that sums of them stay
/// exact in f64): then so is every solution, which bounds the optimum by the integer below L.
fn integral_values(classes: &[classes::Class]) -> bool {
    classes.iter().all(|cl| {
        cl.choices
            .iter()
            .all(|c| c.value.fract() == 0.0 && c.value.abs() <= 1e9)
    })
}

/// Whether some choice is a distributed job's (d_j > 1: its units, d_j times its slot, are
/// more than its slot; idle choices have neither).
fn spans_gpus(classes: &[classes::Class]) -> bool {
    classes
        .iter()
        .any(|cl| cl.choices.iter().any(|c| c.units > u64::from(c.slot)))
}

/// The fast exact DP.
///
/// Build it with `Dp::default()` and set the public fields (the struct is `#[non_exhaustive]`:
/// settings may be added without breaking callers):
///
/// ```
/// let mut dp = stsfair::Dp::default();
/// dp.max_states = 1_000_000;
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Dp {
    /// Largest number of states one DP layer may hold before the runs stop (default 4,000,000,
    /// about 100 bytes each while a layer is built); all gap-deepening runs of one solve
    /// together may create twice as many (a run keeps its states' parent and count vector for
    /// reconstruction), so the solver stays under about 1 GiB, and they stop as soon as the
    /// growth of the last runs predicts that the next one would go past that (docs/solver.md,
    /// step 5); runs stopped by the order race (step 5) may create half as many more, freed as
    /// each stops. Where the runs stop, the dense DP finishes the solve if it fits in as many
    /// bytes as a full layer ([`Dp::dense_finish`]), else the solver gives up with
    /// [`SolveError::TooLarge`]. Any value gives the optimum or an error, never a wrong answer.
    pub max_states: usize,
    /// Once a gap-deepening run creates more than this many states (default 100,000), every
    /// later run of the solve also bounds its states by the exact tables of pairs of types
    /// (`TypeTables`, docs/solver.md step 6) and the gap grows by 1.25 per run instead of 2.
    /// Any value gives the optimum; 0 turns both on from the first run, and the tables at any
    /// cost up to their fixed limits. Only the unit tests set it (to check the tables on small
    /// instances), so it is not part of the public API.
    pub(crate) tables_after_states: u64,
    /// Once the runs of a solve have created this many states (default 9,000), or are
    /// predicted to with the next run's, the multipliers are refined by smoothing
    /// (docs/solver.md steps 2 and 5). Any value gives the optimum; the unit tests set 0
    /// (smoothing before the first run) and 1 to 63 (both ways of taking it).
    pub(crate) smooth_after_states: u64,
    /// Most states of a run without the type tables before it is stopped and made again with
    /// them (default 250,000). Any value gives the optimum; the unit tests set 1.
    pub(crate) plain_run_states: u64,
    /// Once a gap-deepening run creates this many states (default 2,000), the later runs
    /// bound their states by the exact tables of single types until those of pairs come on
    /// (`tables_after_states`), and the gap grows by 1.25 per run. Any value gives the optimum;
    /// 0 turns them on after the first run (whose work budget, counted on the states made so
    /// far, is 0; the unit tests set it).
    pub(crate) single_tables_after_states: u64,
    /// A run may create this many states (default 50,000), or `race_factor` times the last
    /// finished run's if more, before the same gap is tried in the other core order
    /// (docs/solver.md step 5, "The order race"). Any value gives the optimum; the unit tests
    /// set 0 (the first run that makes a state stops in both orders, and the solve races no
    /// more) and a few states to a few dozen (races won and lost).
    pub(crate) race_after_states: u64,
    /// See `race_after_states` (default 8); the unit tests set 1 (a run is raced as soon as it
    /// makes more states than the last).
    pub(crate) race_factor: u64,
    /// Once the runs of a solve have created a quarter as many states as the dense DP
    /// ([`DenseDp`]) has cells (its grid of unit vectors times the jobs), and at least 100,000,
    /// or where the budget or the layer limit stops the runs first (and the forced jobs'
    /// certificate of infeasibility, tried first there, does not hold), the dense DP finishes
    /// the solve if it fits the memory of a full layer of states (docs/solver.md step 5, "The
    /// dense finish"); the solution then carries the stat `dense_cells`. On by default
    /// (`true`): a round that is small for the dense DP is then answered, its runs costing
    /// about as much as the dense DP (measured on one round), where without it the runs could
    /// be refused. `false` keeps the solve to its runs. Either gives the optimum or an error.
    pub dense_finish: bool,
    /// Wall-time limit of [`Solver::solve_problem`] in seconds (default `None`: no limit;
    /// [`SolverConfig::time_limit`](crate::SolverConfig::time_limit); deriving the round
    /// problem, which [`Solver::solve`] does first, is not counted). The DP looks at the clock
    /// between its steps, before each class of a run and every 4,096 counts it evaluates, and
    /// before each job of the dense finish; a step it does not interrupt (the multipliers'
    /// descent and smoothing, a table's build, one job's pass of the dense finish) can take
    /// it past the limit on large rounds. Stopped, it answers with the best solution it knows
    /// (the greedy's, step 3) as `feasible`, its relative gap to the best bound proven so far
    /// (the stat `bound`: the least of the Lagrangian bound, the ceiling's integer where every
    /// value is an integer, and the floor of a run that found nothing), or `optimal` where
    /// that bound proves it; without one, with [`SolveError::NoSolutionWithinLimit`] (which
    /// [`Fallback`](crate::Fallback) passes to its second solver). A limit that is not a
    /// number >= 0 counts as 0.
    pub time_limit: Option<f64>,
    /// The fewest states after which the dense finish is made (default 100,000); the unit tests
    /// set 0.
    pub(crate) dense_after_states: u64,
}

/// Where the run of a gap stands in the order race (docs/solver.md step 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Race {
    /// The run is raced: past its limit the same gap is run in the other order.
    Ready,
    /// The run is the other order's, with the limit (in states) the first one stopped at.
    Other(u64),
    /// Both orders stopped at the limit of one gap: no more races in this solve.
    Off,
}

/// Which type tables (docs/solver.md step 6) the runs of a solve bound their states with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Tables {
    /// None: the probes' bound only.
    Off,
    /// One table per binding type: cheap (a grid of one type's rooms), kept for the runs
    /// within [`SINGLE_SPAN`] times the gap they were made for, and for those whose fixing
    /// keeps the same choices.
    Single,
    /// Pairs of binding types where they fit the work budget (else single types), kept for
    /// the runs within [`TABLE_SPAN`] times the gap they were made for.
    Strongest,
}

impl Tables {
    /// The most types of a table's set.
    fn most(self) -> usize {
        match self {
            Tables::Strongest => 2,
            _ => 1,
        }
    }
}

impl Default for Dp {
    fn default() -> Self {
        Dp {
            max_states: DEFAULT_MAX_STATES,
            tables_after_states: TABLES_AFTER_STATES,
            smooth_after_states: SMOOTH_AFTER_STATES,
            plain_run_states: PLAIN_RUN_STATES,
            single_tables_after_states: SINGLE_TABLES_AFTER_STATES,
            race_after_states: RACE_AFTER_STATES,
            race_factor: RACE_FACTOR,
            dense_finish: true,
            time_limit: None,
            dense_after_states: DENSE_AFTER_STATES,
        }
    }
}

impl Solver for Dp {
    fn name(&self) -> &'static str {
        "dp"
    }

    fn solve_problem(&self, problem: &RoundProblem) -> Result<Solution, SolveError> {
        self.solve_from(problem, None).map(|(solution, _)| solution)
    }

    /// The warm start's multipliers are a second start of the descent of step 2; the lower of
    /// the two bounds is kept (docs/solver.md, "Warm starts"). The multipliers this solve ends
    /// with (smoothed or not) are left in `warm`.
    fn solve_problem_warm(
        &self,
        problem: &RoundProblem,
        warm: &mut WarmStart,
    ) -> Result<Solution, SolveError> {
        let (solution, mu) = self.solve_from(problem, warm.multipliers())?;
        if let Some(mu) = mu {
            warm.set_multipliers(mu);
        }
        Ok(solution)
    }
}

/// The multipliers the smoothing step takes its candidate from (docs/solver.md step 5, "When
/// to smooth"): the descent refined from `mu` along the edges of L's pieces
/// ([`refine_multipliers`]) when `proven_minimum` proves it a minimizer within
/// `slack_at(its L)`; otherwise the entropic smoothing too ([`smooth_multipliers`]), and the
/// lower of the two. The refinement costs about a descent, the smoothing 1-2.5 ms; on three
/// of the four rounds of the 138 measured that smooth, the refined mu is proven and the
/// smoothing not made (the 10,000-job Gavel round of seed 39: 13.4 -> 11.1 ms in one
/// process, the same states).
fn refined_or_smoothed(
    classes: &[Class],
    problem: &RoundProblem,
    mu: &[f64],
    slack_at: impl Fn(f64) -> f64,
) -> (Vec<f64>, f64) {
    let (refined, l) = refine_multipliers(classes, &problem.capacity, mu);
    if proven_minimum(classes, &problem.capacity, &refined, slack_at(l)) {
        return (refined, l);
    }
    let (smoothed, ls) = smooth_multipliers(classes, &problem.capacity);
    if l <= ls {
        (refined, l)
    } else {
        (smoothed, ls)
    }
}

/// Where the budget refuses a round (`TooLarge`) not known to have a solution (`feasible`:
/// the greedy's or a run's, or the reachability's answer before the runs), the forced jobs'
/// reachability up to [`REFUTE_WORK`] word operations: a round whose forced jobs do not pack
/// has no solution, and is answered so instead of refused (docs/solver.md, "Certificates of
/// infeasibility"). A DP that must prove infeasibility has no floor to prune with, so the rounds
/// it refuses include such rounds where the fractional certificates do not hold. Any other
/// error, or a round known to have a solution, is returned as it is.
fn refused(
    problem: &RoundProblem,
    refusal: SolveError,
    feasible: bool,
) -> Result<(Solution, Option<Vec<f64>>), SolveError> {
    if !feasible
        && matches!(refusal, SolveError::TooLarge { .. })
        && problem.forced_fit(REFUTE_WORK) == Some(false)
    {
        let solution = Solution::infeasible("dp", problem, Infeasibility::of(problem));
        return Ok((solution, None));
    }
    Err(refusal)
}

/// The dense DP's cells for `problem` (its grid of unit vectors times the jobs), from the
/// classes' choices (the jobs' options), or `None` where `dense` would refuse the round.
fn grid_cells(dense: &DenseDp, problem: &RoundProblem, classes: &[Class]) -> Option<u64> {
    let options = |c: &'_ Class| c.choices.iter().filter(|ch| ch.gpu.is_some()).count();
    let sizes = classes.iter().flat_map(|c| &c.choices);
    let sizes = sizes.filter_map(|ch| ch.gpu.map(|k| (k, ch.units)));
    let (_, dims) = DenseDp::grid_of(&problem.capacity, sizes);
    let (grid, bytes) = DenseDp::size(&dims, problem.jobs.len());
    let most = classes.iter().map(options).max().unwrap_or(0);
    if dense.refusal_of(bytes, most).is_some() {
        return None;
    }
    let cells = grid.saturating_mul(problem.jobs.len() as u128);
    Some(u64::try_from(cells).unwrap_or(u64::MAX))
}

/// The dense finish (docs/solver.md step 5): the dense DP's answer as the fast DP's, with the
/// stats of the runs made before it and the dense DP's cells (`stats`).
fn dense_finish(
    dense: &DenseDp,
    problem: &RoundProblem,
    stats: SolveStats,
    until: Option<Instant>,
) -> Result<Solution, SolveError> {
    let answer = dense.solve_until(problem, until)?;
    Ok(Solution {
        solver: "dp".to_string(),
        stats,
        ..answer
    })
}

/// The answer of a solve stopped by its time limit (`Dp::time_limit`, `limit` seconds): the
/// best solution known (`best`, as value and assignment) as `feasible` with its relative gap to
/// `upper`, the best bound proven on the optimum (`optimal` where the two agree), or
/// [`SolveError::NoSolutionWithinLimit`] where none is known. `stats` are the runs' so far.
fn stopped_by_limit(
    problem: &RoundProblem,
    best: Option<&(f64, Vec<Assignment>)>,
    upper: f64,
    limit: Option<f64>,
    stats: SolveStats,
) -> Result<Solution, SolveError> {
    let Some((_, assignment)) = best else {
        return Err(SolveError::NoSolutionWithinLimit {
            solver: "dp",
            limit: time_limit_text(limit),
        });
    };
    let solution = Solution::from_assignments("dp", Status::Optimal, problem, assignment.clone());
    let objective = solution.objective.unwrap_or(0.0);
    let status = if upper - objective <= OBJECTIVE_TOLERANCE * objective.abs().max(1.0) {
        Status::Optimal
    } else {
        Status::Feasible {
            gap: relative_gap(objective, upper),
        }
    };
    let stats = SolveStats {
        bound: upper.is_finite().then_some(upper),
        ..stats
    };
    Ok(Solution { status, ..solution }.with_stats(stats))
}

/// What a solve returns: the solution and the multipliers it ended with, for a warm start
/// (`None` for a problem without types).
type Answer = Result<(Solution, Option<Vec<f64>>), SolveError>;

/// The multipliers a solve leaves for a warm start: `None` for a problem without types.
fn warm(mu: Vec<f64>) -> Option<Vec<f64>> {
    (!mu.is_empty()).then_some(mu)
}

/// Steps 1 to 3 of docs/solver.md: the classes, the multipliers and their Lagrangian bound,
/// and the greedy's incumbent; what the certificates of infeasibility and the gap-deepening
/// runs start from.
struct Opening {
    classes: Vec<Class>,
    mu: Vec<f64>,
    /// The Lagrangian bound L at `mu`: every solution is worth at most this (Lemma 1).
    bound: f64,
    /// Whether every choice is worth an integer ([`integral_values`]).
    integral: bool,
    /// The core's order: fewest units first where every choice is worth an integer or some
    /// job is distributed; fewest kept choices first otherwise (docs/solver.md step 6,
    /// "Core order").
    order: CoreOrder,
    /// The incumbent: the best solution known, as (value, assignment).
    best: Option<(f64, Vec<Assignment>)>,
    /// The seconds the bound and the greedy took (the stat `seconds_bound`).
    seconds_bound: f64,
    /// The solver's tolerance at the scale of the bound.
    tol: f64,
    /// Whether the round is known to have a solution (the greedy's, or the reachability's
    /// answer): this decides whether a refusal of the budget is checked by the reachability
    /// again ([`refused`]).
    known_feasible: bool,
}

impl Opening {
    /// The classes (step 1), the multipliers (step 2: from `start` too where it has one per
    /// type) and the greedy at them (step 3), timed from `begin`.
    fn new(problem: &RoundProblem, start: Option<&[f64]>, begin: Instant) -> Opening {
        let classes = classes(problem);
        // Any mu >= 0 bounds the optimum (Lemma 1): warm multipliers only compete for the
        // lower bound.
        let (mu, bound) = match start.filter(|m| m.len() == problem.capacity.len()) {
            Some(start) => warm_multipliers(&classes, &problem.capacity, start, TOLERANCE),
            None => multipliers(&classes, &problem.capacity),
        };
        let integral = integral_values(&classes);
        let order = if integral || spans_gpus(&classes) {
            CoreOrder::Units
        } else {
            CoreOrder::Rigid
        };
        let best = incumbent(problem, &classes, &mu, integral);
        let seconds_bound = begin.elapsed().as_secs_f64();
        let tol = TOLERANCE * bound.abs().max(1.0);
        let known_feasible = best.is_some();
        Opening {
            classes,
            mu,
            bound,
            integral,
            order,
            best,
            seconds_bound,
            tol,
            known_feasible,
        }
    }

    /// Where the greedy fails, a certificate that no solution exists, looked for before any DP
    /// run (a DP that must prove infeasibility has no floor and can be as large as the dense
    /// one): the infeasible answer, with the bound's stats, where one holds.
    ///
    /// Every solution is worth at least the sum of each job's least valuable choice, and at
    /// most L (Lemma 1): a bound below that certifies that no solution exists (the forced jobs
    /// do not fit even fractionally). A Hall-type shortage (a set of types the forced jobs need
    /// more of than it holds) is a second certificate, cheap and independent of mu. The third
    /// is exact: the forced jobs' reachability (their options do not pack into the capacities,
    /// whatever the fractions say), tried where it takes at most FIT_WORK word operations; its
    /// answer also tells whether the round is known to have a solution (`known_feasible`).
    fn certified_infeasible(&mut self, problem: &RoundProblem) -> Option<Solution> {
        let least = least_value(&self.classes);
        let certified = !self.known_feasible
            && (self.bound < least - self.tol
                || problem.shortage().is_some()
                || match problem.forced_fit(FIT_WORK) {
                    Some(fit) => {
                        self.known_feasible = fit;
                        !fit
                    }
                    None => false,
                });
        certified.then(|| {
            Solution::infeasible("dp", problem, Infeasibility::of(problem)).with_stats(
                SolveStats::of(SolverDetail::Dp(DpStats {
                    classes: Some(self.classes.len() as u64),
                    lagrangian_bound: Some(self.bound),
                    seconds_bound: Some(self.seconds_bound),
                    ..DpStats::default()
                })),
            )
        })
    }
}

/// The fixing a run searches (step 4) and the type tables that bound its states (step 6).
struct Layout {
    /// The gap the fixing is made for: the run's own, or wider with the tables.
    gap: f64,
    /// The tables' regime it is made under, where it is kept for the next runs (`None`: a
    /// fixing made for its run alone).
    kept_for: Option<Tables>,
    fixed: Fixed,
    tables: Option<TypeTables>,
}

/// One gap-deepening run as planned: the gap it searches and its floor.
struct Run {
    /// L - floor: the reduced-cost gap of the choices the run keeps.
    gap: f64,
    /// The run keeps only states whose bound reaches this; a solution it finds is optimal.
    floor: f64,
    /// Whether this is the last run, whose floor is the incumbent's value (or none).
    last: bool,
    /// L less the incumbent's value (infinite without one).
    incumbent_gap: f64,
    /// The tables' regime the run is made under.
    tables: Tables,
    /// The cell updates its tables may take (0: no tables).
    table_work: usize,
}

/// What a run made, for the steps after it.
struct Made {
    /// The states it created.
    states: u64,
    /// The largest bound it dropped by its floor (-inf if none; `ClassDp::dropped`).
    dropped: f64,
    /// Its limit in states, and the order race's (`u64::MAX` where none).
    limit: u64,
    race_limit: u64,
}

/// How the states of the runs grow with the gap, measured after a run.
struct Growth {
    /// The states' growth per doubling of the gap from the run before to this one
    /// ([`growth_per_doubling`]).
    per_doubling: Option<f64>,
    /// The states from which a run's growth counts as measured rather than noise, in this
    /// run's core order.
    adapt_after: u64,
    /// The step of the gap for plain runs ([`plain_growth`] of the steepest growth so far).
    plain: f64,
}

/// Why a run is made again at the same gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// It stopped at the dense finish's states: the dense DP takes over.
    Dense,
    /// It stopped at the race's limit: the other core order runs the gap (the stopped order's
    /// fixing and tables are dropped).
    OtherOrder,
    /// A plain run stopped by its limit: the gap again with the pairs' tables.
    WithTables,
}

/// A solve in gap deepening (step 5 of docs/solver.md): the multipliers and the bound, the
/// incumbent, and what the runs so far have proven and measured. [`Dp::solve_from`] drives it
/// phase by phase, one method a phase.
struct Search<'a> {
    dp: &'a Dp,
    problem: &'a RoundProblem,
    /// When the time limit stops the solve (`None`: no limit).
    until: Option<Instant>,
    /// What steps 1 to 3 gave, kept up to date: the smoothing replaces the multipliers and their
    /// bound where it is taken, the runs and the smoothing's greedy the incumbent, the order
    /// race the core's order.
    opening: Opening,
    /// Integral values (every choice worth an integer, as in the relaxation's count problem,
    /// docs/rounds.md): every solution is worth an integer, so at most `ceiling`, floor(L) at
    /// first and ceil(F) - 1 after a run with floor F finds nothing; the runs' floors are then
    /// integers (less tol), and an incumbent that reaches the ceiling is optimal. Infinite
    /// otherwise.
    ceiling: f64,
    /// The probe prices of the states' bound ([`probes`]).
    probes: Vec<Vec<f64>>,
    /// Largest reduced-cost gap of any choice: past it nothing more can be kept.
    widest: f64,
    /// Whether the smoothing of step 2 is settled for this solve (once per solve): taken,
    /// not worth taking once due, or proven needless ([`proven_minimum`]).
    smoothed: bool,
    /// The smoothing's (mu, L) once computed and not yet taken.
    smoothing: Option<(Vec<f64>, f64)>,
    /// The states predicted for a plain run at the next step (0 when unknown: before two runs
    /// of growing states).
    next_states: u64,
    /// The states all runs of the solve have created.
    states: u64,
    /// The states of the last run, and its gap, for the step of the next one.
    last_states: u64,
    last_run_gap: f64,
    /// The steepest growth of the states per doubling of the gap measured so far on runs of
    /// ADAPT_AFTER_STATES or more (0 before).
    steepest: f64,
    /// The tables' regime; at the start, on from the first run when a trigger is 0.
    tables: Tables,
    /// The states the tables' work budget is counted on (TABLE_WORK_PER_STATE each): the
    /// solve's states, or more when the tables came on by prediction.
    table_basis: u64,
    /// The tables may take as much memory as one full layer of states.
    max_cells: usize,
    /// The states all runs of the solve may create.
    budget: u64,
    /// The dense DP of the dense finish.
    dense: DenseDp,
    /// Its cells (its grid of unit vectors times the jobs), sized from the classes, whose
    /// choices are the jobs' options (a pass over every option of a 10,000-job round took
    /// 0.27 ms, against a solve of 1.5 ms); `None` where the dense finish is off or the dense
    /// DP would refuse the round.
    dense_cells: Option<u64>,
    /// The dense finish: once the runs have created this many states, or where the budget
    /// would refuse the round, the dense DP solves it (u64::MAX states where it is off or the
    /// dense DP would refuse the round).
    dense_after: u64,
    /// The optimum is below the floor of every run that found nothing (Lemma 3 of
    /// docs/solver.md), whatever the multipliers: the least such floor (plus tol).
    proven: f64,
    /// The most states one finished run with the pairs' tables created, and its gap.
    largest_run: u64,
    largest_gap: f64,
    /// The gap g of the next run.
    g: f64,
    /// The fixing of the last runs with tables, the gap it is made for, and its tables.
    cached: Option<Layout>,
    /// The order race (docs/solver.md step 5): where this gap's run stands in it, and the
    /// states of the runs it stopped. Those count against the race's own allowance of half
    /// the budget, not against the budget: the solve then creates at most 1.5 times the
    /// budget's states.
    race: Race,
    raced: u64,
    /// The runs made, and the core and gap of the last one (the stats).
    runs: u64,
    core_classes: u64,
    core_jobs: u64,
    last_gap: f64,
}

/// Step 5 of docs/solver.md, gap deepening: the driver of the other steps.
impl Dp {
    /// The solve, with `start` a second start for the multipliers' descent; returns the
    /// solution and the multipliers it ended with (`None` for a problem without types).
    ///
    /// Gap deepening: guess that the optimum is within g of the bound, keep only choices with
    /// delta <= g and drop states whose bound is below L - g. A run that finds a solution has
    /// found the optimum (Lemma 3 of docs/solver.md); one that finds none proves the optimum
    /// is below L - g, and g grows (doubling while the runs are cheap). The last run uses the
    /// incumbent's value (or nothing) as the floor, which makes it the classic
    /// reduced-cost-fixed DP.
    fn solve_from(&self, problem: &RoundProblem, start: Option<&[f64]>) -> Answer {
        let begin = Instant::now();
        // Steps 1 to 3: the classes, the bound, the greedy; then the certificates where the
        // greedy found nothing.
        let mut opening = Opening::new(problem, start, begin);
        if let Some(solution) = opening.certified_infeasible(problem) {
            return Ok((solution, warm(opening.mu)));
        }
        let until = deadline(begin, self.time_limit);
        let mut search = Search::new(self, problem, opening, until);
        // Step 5: one run per gap, each over a fixing of step 4 with the class DP of step 6.
        let chosen = loop {
            search.smooth_when_due();
            if search.incumbent_at_ceiling() {
                break search.opening.best.take().map(|(_, a)| a);
            }
            if past(search.until) {
                return search.at_limit();
            }
            if search.states >= search.dense_after {
                return search.finish_dense();
            }
            let run = search.next_run();
            let layout = search.layout(&run);
            let (found, made) = search.run_class_dp(&run, &layout);
            if let Err(SolveError::NoSolutionWithinLimit { .. }) = found {
                drop(layout);
                return search.at_limit();
            }
            // A run stopped by a limit proves nothing: the same gap again, another way.
            if let Some(retry) = search.retry(&found, &made) {
                if retry != Retry::OtherOrder {
                    search.keep(layout);
                }
                continue;
            }
            let growth = search.measure_growth(&run, &made);
            // A refusal of the layer limit or the budget ends the solve (`Search::stop`).
            let found = match found {
                Ok(found) => found,
                Err(refusal) => {
                    drop(layout);
                    return search.stop(refusal);
                }
            };
            // A solution that reaches the floor is optimal (Lemma 3); after the last run, whose
            // floor is the incumbent's value, the incumbent is.
            if let Some((total, counts)) = found
                && total >= run.floor
            {
                break Some(layout.fixed.assign(
                    &search.opening.classes,
                    problem.jobs.len(),
                    &counts,
                ));
            }
            if run.last {
                break search.opening.best.take().map(|(_, a)| a);
            }
            // Nothing reached the floor: the optimum is below it, and the gap grows.
            search.prove_below(run.floor);
            let cap = match search.budget_cap(&run, &made) {
                Ok(cap) => cap,
                Err(refusal) => {
                    drop(layout);
                    return search.stop(refusal);
                }
            };
            search.deepen(&run, &made, &growth, &layout, cap);
            search.keep(layout);
        };
        Ok(search.answer(chosen))
    }
}

impl<'a> Search<'a> {
    /// The search from `opening` under the settings of `dp`, stopped at `until`.
    fn new(
        dp: &'a Dp,
        problem: &'a RoundProblem,
        opening: Opening,
        until: Option<Instant>,
    ) -> Search<'a> {
        let ceiling = if opening.integral {
            (opening.bound + opening.tol).floor()
        } else {
            f64::INFINITY
        };
        let probes = probes(&opening.mu);
        let widest = widest(&opening.classes, &opening.mu);
        let tables = if dp.tables_after_states == 0 {
            Tables::Strongest
        } else if dp.single_tables_after_states == 0 {
            Tables::Single
        } else {
            Tables::Off
        };
        let dense = DenseDp::default().with_max_bytes(dense_bytes(dp.max_states));
        let dense_cells = if dp.dense_finish {
            grid_cells(&dense, problem, &opening.classes)
        } else {
            None
        };
        let dense_after = dense_cells.map_or(u64::MAX, |cells| {
            (cells / DENSE_SHARE).max(dp.dense_after_states)
        });
        Search {
            dp,
            problem,
            until,
            ceiling,
            probes,
            widest,
            smoothed: false,
            smoothing: None,
            next_states: 0,
            states: 0,
            last_states: 0,
            last_run_gap: 0.0,
            steepest: 0.0,
            tables,
            table_basis: 0,
            max_cells: table_cells(dp.max_states),
            budget: SOLVE_BUDGET * dp.max_states as u64,
            dense,
            dense_cells,
            dense_after,
            proven: f64::INFINITY,
            largest_run: 0,
            largest_gap: 0.0,
            g: FIRST_GAP * opening.bound.abs().max(1.0),
            cached: None,
            race: Race::Ready,
            raced: 0,
            runs: 0,
            core_classes: 0,
            core_jobs: 0,
            last_gap: 0.0,
            opening,
        }
    }

    /// The incumbent's value, if there is one.
    fn incumbent_value(&self) -> Option<f64> {
        self.opening.best.as_ref().map(|(v, _)| *v)
    }

    /// The best bound proven on the optimum: the least of the Lagrangian bound, the ceiling's
    /// integer and the floors of the runs that found nothing.
    fn upper(&self) -> f64 {
        self.opening.bound.min(self.ceiling).min(self.proven)
    }

    /// The time limit's answer with `stats`: the incumbent as `feasible` with its gap to
    /// [`Search::upper`], or optimal where that bound proves it ([`stopped_by_limit`]).
    fn limit_answer(&self, stats: SolveStats) -> Result<Solution, SolveError> {
        stopped_by_limit(
            self.problem,
            self.opening.best.as_ref(),
            self.upper(),
            self.dp.time_limit,
            stats,
        )
    }

    /// The stats of the runs made so far, for a solve that stops before its runs end (the
    /// budget, the dense finish or the time limit); [`Search::answer`] adds the core's.
    fn stats_so_far(&self) -> DpStats {
        DpStats {
            classes: Some(self.opening.classes.len() as u64),
            runs: Some(self.runs),
            states: Some(self.states),
            lagrangian_bound: Some(self.opening.bound),
            seconds_bound: Some(self.opening.seconds_bound),
            ..DpStats::default()
        }
    }

    /// The slack within which a mu whose L is `l` must be proven a minimizer: half the
    /// tolerance, and for integral values no more than keeps l + tol at the ceiling's integer.
    fn slack_at(&self, l: f64) -> f64 {
        if self.opening.integral {
            (0.5 * self.opening.tol).min(l + self.opening.tol - self.ceiling)
        } else {
            0.5 * self.opening.tol
        }
    }

    /// Better multipliers once the runs get expensive: the descent of step 2 can stop short of
    /// the minimum of L, and every run pays for the excess of L over the LP's value as gap.
    ///
    /// The smoothing is made as soon as the states so far plus those predicted for the next
    /// run reach the trigger, and taken before a run only if its L proves more than the runs
    /// have (below the last run's floor; for integral values, below the ceiling's integer);
    /// otherwise it is kept, tested so again before the next run, and taken once the states
    /// themselves reach the trigger if it lowers L at all (docs/solver.md step 5, "When to
    /// smooth"). "The smoothing" is the descent refined along the edges of L's pieces where
    /// that is proven a minimizer, the entropic smoothing only where it is not
    /// ([`refined_or_smoothed`]). Before the smoothing is first made, the descent's mu is
    /// tested for a proof that it minimizes L to within less than any smoothing taken below
    /// must lower it ([`proven_minimum`], within [`Search::slack_at`]). Then no smoothing could
    /// be taken, and none is made.
    fn smooth_when_due(&mut self) {
        let trigger = self.dp.smooth_after_states;
        let due = self.states >= trigger;
        let triggered =
            !self.smoothed && (due || self.states.saturating_add(self.next_states) >= trigger);
        if triggered && self.smoothing.is_none() {
            let slack = self.slack_at(self.opening.bound);
            self.smoothed = proven_minimum(
                &self.opening.classes,
                &self.problem.capacity,
                &self.opening.mu,
                slack,
            );
        }
        if !triggered || self.smoothed {
            return;
        }
        let (better_mu, better_bound) = self.smoothing.take().unwrap_or_else(|| {
            refined_or_smoothed(&self.opening.classes, self.problem, &self.opening.mu, |l| {
                self.slack_at(l)
            })
        });
        let take = if due {
            better_bound < self.opening.bound - self.opening.tol
        } else if self.opening.integral {
            (better_bound + self.opening.tol).floor() < self.ceiling
        } else {
            better_bound < self.opening.bound - self.last_run_gap.max(self.opening.tol)
        };
        if take {
            self.take_smoothing(better_mu, better_bound);
        } else if due {
            self.smoothed = true;
        } else {
            self.smoothing = Some((better_mu, better_bound));
        }
    }

    /// The smoothing's multipliers `mu` and bound `bound` replace the descent's. The runs so
    /// far stay valid (each proves the optimum below its floor, whatever the multipliers), so
    /// the next run keeps its floor under the new bound; only what depends on the old mu
    /// (tables, growth) is dropped.
    fn take_smoothing(&mut self, mu: Vec<f64>, bound: f64) {
        self.smoothed = true;
        let floor = self.opening.bound - self.g;
        self.opening.mu = mu;
        self.opening.bound = bound;
        self.g = (self.opening.bound - floor).max(FIRST_GAP * self.opening.bound.abs().max(1.0));
        self.probes = probes(&self.opening.mu);
        self.widest = widest(&self.opening.classes, &self.opening.mu);
        self.cached = None;
        (self.last_states, self.last_run_gap, self.steepest) = (0, 0.0, 0.0);
        (self.largest_run, self.largest_gap) = (0, 0.0);
        // The tables themselves are rebuilt at the new mu (`cached`), but the regime stays:
        // the states' steep growth with the gap that turned them on is the round's, not the
        // old mu's. Going back to plain runs costs the 10,000-job Gavel round of seed 39 a
        // plain run of 17,264 states and then, its growth unmeasured, a doubled gap (0.0109 ->
        // 0.0217, the optimum's 0.0120) whose run takes 44,542 states: 78,536 in all, against
        // 29,419 with the tables kept (50 -> 17 ms).
        if self.opening.integral {
            self.ceiling = self
                .ceiling
                .min((self.opening.bound + self.opening.tol).floor());
        }
        // A race's second run would run at other multipliers and another gap than the first:
        // the first order runs again, raced anew.
        if let Race::Other(_) = self.race {
            self.opening.order = self.opening.order.other();
            self.race = Race::Ready;
        }
        if let Some(found) = incumbent(
            self.problem,
            &self.opening.classes,
            &self.opening.mu,
            self.opening.integral,
        ) && self.opening.best.as_ref().is_none_or(|(v, _)| found.0 > *v)
        {
            self.opening.best = Some(found);
        }
    }

    /// Whether the incumbent reaches the ceiling (integral values): nothing is worth more, and
    /// the solve ends with it, its gap to L the gap searched and no core.
    fn incumbent_at_ceiling(&mut self) -> bool {
        match self.incumbent_value() {
            Some(lb) if lb >= self.ceiling - 0.5 => {
                self.last_gap = self.opening.bound - lb;
                self.core_classes = 0;
                self.core_jobs = 0;
                true
            }
            _ => false,
        }
    }

    /// The next run: its gap and floor, whether it is the last, and its tables' work budget.
    fn next_run(&mut self) -> Run {
        let lb = self.incumbent_value();
        let incumbent_gap = lb.map_or(f64::INFINITY, |lb| self.opening.bound - lb);
        if self.opening.integral {
            // No floor above the ceiling can find anything.
            self.g = self.g.max(self.opening.bound - self.ceiling);
        }
        let last = self.g >= incumbent_gap || self.g > self.widest + self.opening.bound.abs() + 1.0;
        let (gap, floor) = if last {
            (
                incumbent_gap,
                lb.map_or(f64::NEG_INFINITY, |lb| lb - self.opening.tol),
            )
        } else if self.opening.integral {
            // The integer at or above L - g (at most the ceiling): a floor between two
            // integers finds the same solutions as the integer above it, and costs more.
            // So the first run of a count problem is at the ceiling itself (rounding down,
            // a count problem with L = 4910 and the greedy at 4909 had its first run at
            // 4909, which only the greedy's own value passes).
            let at = (self.opening.bound - self.g).ceil().min(self.ceiling);
            (self.opening.bound - at, at - self.opening.tol)
        } else {
            (self.g, self.opening.bound - self.g - self.opening.tol)
        };
        self.last_gap = gap;
        self.runs += 1;
        // The tables may cost as much as TABLE_WORK_PER_STATE cell updates per state the
        // solve has created so far (a cheap solve never pays more for them than for its
        // states), at most TABLE_WORK.
        let table_work = match (self.tables, self.dp.tables_after_states) {
            (Tables::Off, _) => 0,
            (_, 0) => TABLE_WORK,
            _ => usize::try_from(
                self.states
                    .max(self.table_basis)
                    .saturating_mul(TABLE_WORK_PER_STATE),
            )
            .unwrap_or(usize::MAX)
            .min(TABLE_WORK),
        };
        Run {
            gap,
            floor,
            last,
            incumbent_gap,
            tables: self.tables,
            table_work,
        }
    }

    /// The fixing of step 4 at reduced-cost gap `gap`, in the current order.
    fn fixing_at(&self, gap: f64) -> Fixed {
        fix(
            &self.opening.classes,
            &self.problem.capacity,
            &self.opening.mu,
            gap,
            self.opening.tol,
            self.opening.order,
        )
    }

    /// The fixing and tables `run` searches with. With the tables on, the fixing and its
    /// tables are made for a gap TABLE_SPAN times this run's and kept for the next runs while
    /// their gap stays within it: fixing at a larger gap keeps more choices, which Lemma 3
    /// allows (the floor, not the fixing, decides what a run finds), and a run then costs its
    /// states only.
    ///
    /// They are rebuilt when this run's gap is past it, or when no tables could be built. Not
    /// for single types' tables whose new fixing would keep the same choices (no reduced-cost
    /// gap between the two widths, `next_gap`), as it would for many runs past it with
    /// SINGLE_SPAN = 1: the same fixing makes the same tables. (The pairs' could differ: a
    /// larger work budget may fit pairs where the cached build fell back to single types.)
    fn layout(&mut self, run: &Run) -> Layout {
        if run.table_work == 0 {
            return Layout {
                gap: run.gap,
                kept_for: None,
                fixed: self.fixing_at(run.gap),
                tables: None,
            };
        }
        let full = if run.last {
            run.gap
        } else {
            let span = if run.tables == Tables::Single {
                SINGLE_SPAN
            } else {
                TABLE_SPAN
            };
            (run.gap * span).min(run.incumbent_gap)
        };
        // Whether a fixing made at `at` keeps the choices of one made at `full`.
        let same_fixing = |at: f64| {
            run.tables == Tables::Single
                && next_gap(
                    &self.opening.classes,
                    &self.opening.mu,
                    at,
                    self.opening.tol,
                ) > full + self.opening.tol
        };
        match self.cached.take() {
            Some(kept)
                if (kept.gap >= run.gap || same_fixing(kept.gap))
                    && kept.kept_for == Some(run.tables)
                    && kept.tables.is_some() =>
            {
                kept
            }
            _ => self.widest_fitting(run, full),
        }
    }

    /// The widest fixing, from `full` down to the run's own gap, whose pair tables fit the work
    /// budget (a wider fixing keeps more classes and choices, and the pairs' work grows with
    /// them); when none does, `full` with whatever tables fit. Measured on round 62 of
    /// gavel-100x3-1000: the pairs at 2.5 times the gap are past the budget, and single-type
    /// tables in their place make the next run 340,000 states and predict 10^9.
    fn widest_fitting(&self, run: &Run, full: f64) -> Layout {
        match self.fitting_at(run, full) {
            Ok(chosen) => chosen,
            Err(unfit) => [SLOW_GROWTH * run.gap, run.gap]
                .into_iter()
                .filter(|&w| w < full)
                .find_map(|w| self.fitting_at(run, w).ok())
                .unwrap_or_else(|| {
                    let (fixed, sfx) = *unfit;
                    let tables = self.tables_for(run, &fixed, &sfx);
                    Layout {
                        gap: full,
                        kept_for: Some(run.tables),
                        fixed,
                        tables,
                    }
                }),
        }
    }

    /// The fixing at width `wide` with its tables where they are chosen (no binding type left,
    /// or the strongest tables fit), or its fixing and suffix when the strongest do not fit.
    fn fitting_at(&self, run: &Run, wide: f64) -> Result<Layout, Box<(Fixed, Suffix)>> {
        let fixed = self.fixing_at(wide);
        let layout = |fixed, tables| Layout {
            gap: wide,
            kept_for: Some(run.tables),
            fixed,
            tables,
        };
        let Some(sfx) = Suffix::new(
            &self.opening.classes,
            &fixed.kept,
            &fixed.core,
            &self.probes,
            &fixed.residual,
        ) else {
            return Ok(layout(fixed, None));
        };
        if strongest_fit(
            &self.opening.classes,
            &fixed.kept,
            &fixed.core,
            &sfx,
            run.tables.most(),
            run.table_work,
            self.max_cells,
        ) {
            let tables = self.tables_for(run, &fixed, &sfx);
            Ok(layout(fixed, tables))
        } else {
            // Boxed: the fixing and suffix are large, and this is the rare path.
            Err(Box::new((fixed, sfx)))
        }
    }

    /// The type tables of `fixed` (with its suffix `sfx`) within `run`'s work budget.
    fn tables_for(&self, run: &Run, fixed: &Fixed, sfx: &Suffix) -> Option<TypeTables> {
        TypeTables::new(
            &self.opening.classes,
            &fixed.kept,
            &fixed.core,
            sfx,
            &self.opening.mu,
            run.tables.most(),
            run.table_work,
            self.max_cells,
        )
    }

    /// Keeps `layout` for the next runs where it is the tables' fixing.
    fn keep(&mut self, layout: Layout) {
        if layout.kept_for.is_some() {
            self.cached = Some(layout);
        }
    }

    /// The order race's limit for the next run: past it the run stops and the same gap is run
    /// in the other order ([`Search::retry`]). A run in the other order has the same limit as
    /// the one it races. No race is started that could take the stopped runs past their
    /// allowance.
    fn race_limit(&self) -> u64 {
        match self.race {
            Race::Ready => {
                let own = self
                    .last_states
                    .saturating_mul(self.dp.race_factor)
                    .max(self.dp.race_after_states);
                let allowance = self.budget / 2;
                if self
                    .raced
                    .saturating_add(own.saturating_add(1).saturating_mul(2))
                    <= allowance
                {
                    own
                } else {
                    u64::MAX
                }
            }
            Race::Other(first) => first,
            Race::Off => u64::MAX,
        }
    }

    /// Makes `run` over `layout` (step 6, the class DP): what it found (the counts of the
    /// core's classes, or a refusal), and what it made.
    fn run_class_dp(
        &mut self,
        run: &Run,
        layout: &Layout,
    ) -> (Result<Option<Found>, SolveError>, Made) {
        let fixed = &layout.fixed;
        self.core_classes = fixed.core.len() as u64;
        self.core_jobs = fixed
            .core
            .iter()
            .map(|&c| self.opening.classes[c].jobs.len() as u64)
            .sum();
        // The states made against the budget so far (the race's stopped runs have their own
        // allowance).
        let spent = self.states - self.raced;
        // A run without the pairs' tables (plain, or with the single types') may take
        // `plain_run_states` at most: past them it is stopped and made again with the
        // strongest tables ([`Search::retry`]).
        let limit = if run.tables == Tables::Strongest {
            self.budget.saturating_sub(spent)
        } else {
            self.budget
                .saturating_sub(spent)
                .min(self.dp.plain_run_states)
        };
        let race_limit = self.race_limit();
        let mut dp = ClassDp {
            classes: &self.opening.classes,
            kept: &fixed.kept,
            probes: &self.probes,
            max_states: self.dp.max_states,
            states: 0,
            limit: limit
                .min(race_limit)
                .min(self.dense_after.saturating_sub(self.states).max(1)),
            spent,
            tables: 0,
            dropped: f64::NEG_INFINITY,
            prebuilt: layout.tables.as_ref(),
            deadline: self.until,
        };
        let found = dp.run(&fixed.core, &fixed.residual, fixed.base, run.floor);
        let made = Made {
            states: dp.states,
            dropped: dp.dropped,
            limit,
            race_limit,
        };
        self.states += made.states;
        (found, made)
    }

    /// Whether a run that stopped (`found` an error) is made again at the same gap, and why.
    ///
    /// A run stopped at the dense finish's states proves nothing: the dense DP takes over.
    ///
    /// The order race: a run stopped by the race's limit (it then holds one state past it; a
    /// run stopped by the layer limit holds fewer) is made again at the same gap in the other
    /// order, with the same limit; if that one finishes, the solve goes on in it; if it stops
    /// too, the first order runs this gap without the race's limit, and the solve races no
    /// more (the orders are alike there). Any order is exact. The stopped order's fixing and
    /// tables are dropped, so that one order's are held at a time (memory as without the
    /// race); a lost race builds them again.
    ///
    /// A plain run stopped by its limit (or by the layer limit): the same gap again with the
    /// type tables, whose bound prunes far more; the smoothing of step 2 comes first (the
    /// states are past its trigger). The limit only chooses how this gap is searched: a run
    /// that stops proves nothing, and the next one searches the same gap.
    fn retry(&mut self, found: &Result<Option<Found>, SolveError>, made: &Made) -> Option<Retry> {
        let stopped = found.is_err();
        if stopped && self.states >= self.dense_after {
            return Some(Retry::Dense);
        }
        if stopped && made.race_limit < made.limit && made.states > made.race_limit {
            self.raced += made.states;
            self.opening.order = self.opening.order.other();
            self.cached = None;
            self.race = match self.race {
                Race::Ready => Race::Other(made.race_limit),
                _ => Race::Off,
            };
            return Some(Retry::OtherOrder);
        }
        if let Race::Other(_) = self.race {
            // Won: the early refusal's growth was measured in the other order.
            self.race = Race::Ready;
            (self.largest_run, self.largest_gap) = (0, 0.0);
        }
        if stopped && self.tables != Tables::Strongest && self.states - self.raced < self.budget {
            self.tables = Tables::Strongest;
            self.table_basis = self.states;
            return Some(Retry::WithTables);
        }
        None
    }

    /// Measures the growth of the states from the run before to `run` (which `made` them),
    /// and turns the tables on where it calls for them: past TABLES_AFTER_STATES states, or
    /// when this run's growth over the one before predicts the next plain run (at the step
    /// `plain`) far past it.
    fn measure_growth(&mut self, run: &Run, made: &Made) -> Growth {
        let per_doubling = growth_per_doubling(
            (self.last_run_gap, self.last_states),
            (run.gap, made.states),
        );
        // The triggers by this run's order: with the classes that may idle last, the rigid
        // order's runs before the tables are smaller (limits.rs, RIGID_ADAPT_AFTER_STATES).
        let single_after = self.dp.single_tables_after_states;
        let (adapt_after, single_after) = match self.opening.order {
            CoreOrder::Rigid => (RIGID_ADAPT_AFTER_STATES, single_after / RIGID_SINGLE_SHARE),
            CoreOrder::Units => (ADAPT_AFTER_STATES, single_after),
        };
        if made.states >= adapt_after {
            self.steepest = self.steepest.max(per_doubling.unwrap_or(0.0));
        }
        let plain = plain_growth(self.steepest);
        let predicted = made.states as f64 * per_doubling.unwrap_or(0.0).powf(plain.log2());
        self.next_states = predicted as u64;
        let tas = self.dp.tables_after_states;
        if self.tables != Tables::Strongest
            && (made.states > tas
                || (self.last_states > 0 && predicted > (TABLES_PREDICTED * tas) as f64))
        {
            self.tables = Tables::Strongest;
            // The tables' work budget counts the run the plain DP would have made next:
            // with tables that prune well the later runs stay small, and a budget of the
            // states actually created would then refuse the pairs their own rebuild.
            self.table_basis = self.states.max(predicted as u64);
        } else if self.tables == Tables::Off
            && (made.states >= single_after
                || (self.last_states > 0
                    && made.states >= adapt_after
                    && predicted >= single_after as f64))
        {
            // The single types' tables likewise: past `single_after` states, or when the
            // next plain run is predicted to reach them (from a run of `adapt_after` states
            // or more, whose growth is measured rather than noise). On the 3,000-job Gavel
            // round of seed 10 a run of 1,257 states at gap 0.011 predicted about 5,000 for
            // the next plain one, which made 13,246 (3.1 ms) before the tables came on;
            // predicted, the solve makes 10,069 states instead of 22,463 (53 rounds
            // measured: 3 changed, each fewer states, the same optima).
            self.tables = Tables::Single;
            self.table_basis = self.states;
        }
        self.last_states = made.states;
        Growth {
            per_doubling,
            adapt_after,
            plain,
        }
    }

    /// A run with floor `floor` found nothing: the optimum is below it (Lemma 3).
    fn prove_below(&mut self, floor: f64) {
        self.proven = self.proven.min(floor + self.opening.tol);
        if self.opening.integral {
            // Nothing reached floor = k - tol: every solution is worth at most k - 1.
            self.ceiling = self.ceiling.min((floor + self.opening.tol).round() - 1.0);
        }
    }

    /// Early refusal: the most the next gap may be for its run to fit the budget (infinite
    /// where no prediction is made), or the refusal where no step worth taking fits.
    ///
    /// Once the tables are on (and the gap grows by SLOW_GROWTH), the states of a run grow by
    /// a roughly steady factor from one run to the next (2 to 17 on the rounds of large
    /// integrality gap measured), so a next run that would take the solve past its budget is
    /// predicted from the last two instead of being run into the limit. The prediction is the
    /// last run's states times their growth over the largest earlier run with tables (at
    /// least 1); it is made only for runs of PREDICT_AFTER_STATES or more after such an
    /// earlier run (the run that turns the tables on grew under the old regime and predicts
    /// nothing).
    ///
    /// Before refusing, a shorter step is tried: with the states growing as exp(a g) (a from
    /// the last two runs), the gap whose run is predicted to just fit the budget left. On
    /// round 62 of gavel-100x3-1000 the step of 1.25 (to 0.49) is predicted at 8.5 M states,
    /// more than the budget; the run there takes 3.5 M. The step is taken when it grows the gap
    /// by at least MIN_STEP; it only chooses a floor (any sequence of floors is correct,
    /// Lemma 3).
    fn budget_cap(&self, run: &Run, made: &Made) -> Result<f64, SolveError> {
        let steady = run.tables == Tables::Strongest;
        if !(steady && self.largest_run > 0 && made.states >= PREDICT_AFTER_STATES) {
            return Ok(f64::INFINITY);
        }
        let growth = (made.states as f64 / self.largest_run as f64).max(1.0);
        let predicted = (self.states - self.raced) as f64 + made.states as f64 * growth;
        if predicted <= self.budget as f64 {
            return Ok(f64::INFINITY);
        }
        let room = self.budget.saturating_sub(self.states - self.raced) as f64;
        let rate = growth.ln() / (run.gap - self.largest_gap);
        let fit = if growth > 1.0 && rate.is_finite() && rate > 0.0 && room > made.states as f64 {
            run.gap + (room / made.states as f64).ln() / rate
        } else {
            run.gap
        };
        if fit < run.gap * MIN_STEP {
            return Err(SolveError::TooLarge {
                solver: "dp",
                what: "states over all gap-deepening runs (predicted from the last runs)",
                needed: predicted as u128,
                limit: u128::from(self.budget),
                hint: "raise the limit or use --solver ilp",
            });
        }
        Ok(fit)
    }

    /// The gap of the next run after `run` found nothing: the step of the measured `growth`
    /// (at most `cap`), then past what the run proves.
    fn deepen(&mut self, run: &Run, made: &Made, growth: &Growth, layout: &Layout, cap: f64) {
        let steady = run.tables == Tables::Strongest;
        let tables_on = run.tables != Tables::Off;
        if steady && made.states.max(1) >= self.largest_run {
            self.largest_run = made.states.max(1);
            self.largest_gap = run.gap;
        }
        let step = if tables_on { SLOW_GROWTH } else { growth.plain };
        self.last_run_gap = run.gap;
        self.g = (self.g * step).min(cap);
        // A step past the gap the tables' fixing was made for first runs at that gap: the
        // fixing and tables are still valid there, so that run costs about what the last
        // did, where the step past it rebuilds them at TABLE_SPAN times a larger gap, with
        // a larger core. Measured on round 2 of `rounds` on the single-GPU 10,000-job mix
        // of seed 3 (`gen --gavel --jobs 10000 --count 1000 --seed 3`, priced): the runs
        // at gaps 0.020-0.032 (fixing at 0.040, 32 core classes) took 12,000 states each,
        // the step to 0.0399 rebuilt the fixing at 0.0997 (52 classes) and its run passed
        // the budget (16.6 M states; the ILP then took over 10 minutes); the run at 0.0395
        // instead found the optimum (gap 0.0332) in 395,000. One more run per rebuild at
        // most, and any sequence of floors is exact (Lemma 3).
        if layout.tables.is_some() && self.g > layout.gap && layout.gap >= run.gap * MIN_STEP {
            self.g = layout.gap;
        }
        // Every solution with this run's kept choices is worth at most the largest bound
        // the run dropped, and every other one uses a choice whose reduced-cost gap is at
        // least the next one the fixing would keep (Lemma 2): a floor above both finds
        // nothing, so the next gap is at least the smaller of the two gaps. Applied once
        // the tables are on (their bounds are close to the optimum); before, only when the
        // run dropped nothing by its floor: a jump there skips the cheap runs whose states
        // turn the tables on in time, and the next doubling overshoots (measured on
        // round4-gavel-36x3-300: 4.4 M states instead of 0.5 M), or when the states did
        // not grow from the run before (the runs up to the jump would each cost as much and
        // find nothing: on a priced round of the 10,000-job Gavel mix ten runs of 78,260
        // states each, at gaps 1e-9 to 0.002 of L, before the fixing changed at 0.004).
        let flat = made.states >= growth.adapt_after
            && growth.per_doubling.is_some_and(|d| d < FLAT_GROWTH);
        let jump = (self.opening.bound - made.dropped).min(next_gap(
            &self.opening.classes,
            &self.opening.mu,
            layout.gap,
            self.opening.tol,
        ));
        if tables_on || flat || made.dropped == f64::NEG_INFINITY {
            self.g = self.g.max(jump);
        } else {
            // Otherwise the runs below the jump are skipped, but on the grid of this run's
            // step: the next run is the first one of the grid at or past the jump, where
            // the steps would have gone had the skipped runs grown by the same factor
            // (also when this run turned the tables on: the exact jump there made one more
            // run on 2 of 37 rounds, 1-5% more instructions). Measured on the 1,000-job
            // Gavel round of seed 3 (`gen --gavel --jobs 1000 --count 100 --seed 3`): its
            // runs at 2e-9 to 4e-6 of L keep the same 51 states and find nothing; jumping
            // to exactly where the fixing keeps more shifted the doubling that followed,
            // whose last run then passed the optimum's gap (0.0297) at 0.045 with 35,991
            // states instead of at 0.030 with 2,284 (4.6 times the instructions), while on
            // the grid it skips 11 runs (26.1 -> 21.9 M). (The loop ends: step > 1, and
            // a NaN jump stops it at once.)
            while self.g < jump {
                self.g *= step;
            }
        }
    }

    /// Stopped by the time limit: the best solution known, with the best bound proven
    /// ([`stopped_by_limit`]), and the multipliers for a warm start.
    fn at_limit(mut self) -> Answer {
        self.cached = None;
        let stats = SolveStats::of(SolverDetail::Dp(self.stats_so_far()));
        let answer = self.limit_answer(stats);
        answer.map(|s| (s, warm(self.opening.mu)))
    }

    /// The dense finish, with the stats of the runs made so far and the multipliers; the time
    /// limit's answer where it stops the dense DP. The tables' memory is freed for the dense
    /// DP's.
    fn finish_dense(mut self) -> Answer {
        self.cached = None;
        let stats = SolveStats::of(SolverDetail::Dp(DpStats {
            dense_cells: self.dense_cells,
            ..self.stats_so_far()
        }));
        let answer = match dense_finish(&self.dense, self.problem, stats.clone(), self.until) {
            Err(SolveError::NoSolutionWithinLimit { .. }) => self.limit_answer(stats),
            answer => answer,
        };
        answer.map(|s| (s, warm(self.opening.mu)))
    }

    /// Where the budget or the layer limit stops the runs (`refusal`): the forced jobs'
    /// certificate where no solution is known ([`refused`], cheap), then the dense finish
    /// where it fits, else the refusal.
    fn stop(mut self, refusal: SolveError) -> Answer {
        self.cached = None;
        // The certificate can take tens of milliseconds: not past the limit.
        if past(self.until) {
            return self.at_limit();
        }
        let feasible = self.opening.known_feasible || self.opening.best.is_some();
        match refused(self.problem, refusal, feasible) {
            Err(SolveError::TooLarge { .. }) if self.dense_cells.is_some() => self.finish_dense(),
            answer => answer,
        }
    }

    /// The solution of the assignment `chosen` (`None`: no solution), with the stats of the
    /// runs, and the multipliers for a warm start.
    fn answer(self, chosen: Option<Vec<Assignment>>) -> (Solution, Option<Vec<f64>>) {
        let solution = match chosen {
            None => Solution::infeasible("dp", self.problem, Infeasibility::of(self.problem)),
            Some(a) => {
                let (objective, units) = totals(&self.opening.classes, self.problem.types(), &a);
                Solution::from_totals("dp", Status::Optimal, a, objective, units)
            }
        };
        let solution = solution.with_stats(SolveStats::of(SolverDetail::Dp(DpStats {
            core_classes: Some(self.core_classes),
            core_jobs: Some(self.core_jobs),
            gap_searched: Some(self.last_gap),
            ..self.stats_so_far()
        })));
        (solution, warm(self.opening.mu))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::solvers::{BruteForce, DenseDp};

    /// The DP with the multipliers smoothed before the first run (by default only once the
    /// runs are expensive, which small instances never are), and optionally the type tables
    /// from the first run too.
    fn smoothing(tables: bool) -> Dp {
        Dp {
            smooth_after_states: 0,
            tables_after_states: if tables { 0 } else { TABLES_AFTER_STATES },
            ..Dp::default()
        }
    }

    /// The DP with the single types' tables after its first run, and the pairs' once a run
    /// has more than `pairs` states.
    fn single_then_pairs(pairs: u64) -> Dp {
        Dp {
            single_tables_after_states: 0,
            tables_after_states: pairs,
            ..Dp::default()
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        #[test]
        fn dp_with_smoothed_multipliers_matches_brute_force(
            instance in testing::instance(testing::TINY, 1),
            tables in any::<bool>(),
        ) {
            testing::agree(&smoothing(tables), &instance, &BruteForce::default())?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// The dense finish after a few states or none (by default only past 100,000, which
        /// small instances never reach): its answer is the fast DP's, with the stats of the runs
        /// before it, and is exact and valid. About one case in seven ends in the finish (137
        /// of 1,000 counted); the others find the optimum before their runs reach a quarter of
        /// the dense DP's cells.
        #[test]
        fn dp_with_an_early_dense_finish_matches_brute_force(
            instance in testing::instance(testing::TINY, 1),
            after in prop_oneof![Just(0u64), 1u64..200],
        ) {
            let dp = Dp {
                dense_after_states: after,
                ..Dp::default()
            };
            testing::agree(&dp, &instance, &BruteForce::default())?;
            let solution = dp.solve(&instance).unwrap();
            prop_assert_eq!(&solution.solver, "dp");
            // Past the quarter of the cells (the budget, the other way to the finish, is far
            // past what these instances make).
            if let Some(cells) = solution.stats.dp().and_then(|d| d.dense_cells) {
                let runs = solution.stats.states().unwrap();
                prop_assert!(runs >= after.max(cells / DENSE_SHARE), "{:?}", solution.stats);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// A time limit of 0 to 1 ms, with the dense finish early or not. Where the limit stops
        /// the solve is the machine's timing, so every case checks what any stop must give:
        /// the optimum (`optimal`); a valid solution whose value and bound enclose the optimum
        /// (`feasible`, the gap between them); the certificate of a round without solution; or
        /// no answer (`NoSolutionWithinLimit`), only where the greedy found nothing. Counted
        /// once: 145 of 500 cases stopped with a solution, 12 of them in a run.
        #[test]
        fn dp_with_a_time_limit_answers_within_its_bound(
            instance in testing::instance(testing::SMALL, 1),
            limit in prop_oneof![Just(0.0), 0.0..0.00005f64, 0.0..0.001f64],
            after in prop_oneof![Just(0u64), Just(DENSE_AFTER_STATES)],
        ) {
            let dp = Dp {
                time_limit: Some(limit),
                dense_after_states: after,
                ..Dp::default()
            };
            let optimum = testing::optimum(&RoundProblem::new(&instance))?;
            let solution = match dp.solve(&instance) {
                Err(SolveError::NoSolutionWithinLimit { solver, .. }) => {
                    prop_assert_eq!(solver, "dp");
                    return Ok(());
                }
                other => other.map_err(|e| TestCaseError::fail(e.to_string()))?,
            };
            crate::verify(&instance, &solution)
                .map_err(|e| TestCaseError::fail(format!("verify rejects dp: {e}")))?;
            match (&solution.status, solution.objective, optimum) {
                (Status::Infeasible { .. }, _, found) => prop_assert!(found.is_none()),
                (Status::Optimal, Some(v), Some(o)) => {
                    prop_assert!(crate::solution::objectives_agree(o, v), "{} vs {}", v, o);
                }
                (Status::Feasible { gap }, Some(v), Some(o)) => {
                    prop_assert!(testing::at_least(o, v), "{} above the optimum {}", v, o);
                    let bound = solution.stats.bound.unwrap_or(f64::INFINITY);
                    prop_assert!(testing::at_least(bound, o), "bound {} below {}", bound, o);
                    prop_assert_eq!(*gap, relative_gap(v, bound));
                }
                (status, v, o) => {
                    return Err(TestCaseError::fail(format!("{status:?} {v:?}, optimum {o:?}")));
                }
            }
        }
    }

    /// The smoothing's trigger counts the next run's predicted states: on round62, whose
    /// descent stops 0.40 above the LP's value, the run at gap 0.058 (2,403 states) predicts
    /// 9,873 with the next, which makes the smoothing there (limits.rs, SMOOTH_AFTER_STATES)
    /// instead of after three more runs at the descent's multipliers (16,248 states in all).
    #[test]
    fn the_hard_round_62_smooths_before_its_runs_grow() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/instances/hard/round62-gavel-100x3-1000.json"
        );
        let instance = crate::Instance::from_path(path).unwrap();
        let solution = Dp::default().solve(&instance).unwrap();
        assert_eq!(solution.status, Status::Optimal);
        let objective = solution.objective.unwrap();
        assert!(
            crate::solution::objectives_agree(objective, 488.44153338501525),
            "{objective}"
        );
        let states = solution.stats.states().unwrap();
        assert!(states <= 5_000, "{states} states: {:?}", solution.stats);
    }

    /// Limits that are not a number >= 0 count as 0, an infinite one as none.
    #[test]
    fn time_limits_that_are_not_numbers_stop_at_once() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/instances/gavel-250x3-3000.json"
        );
        let instance = crate::Instance::from_path(path).unwrap();
        for limit in [f64::NAN, -1.0, 0.0, f64::NEG_INFINITY] {
            let dp = Dp {
                time_limit: Some(limit),
                ..Dp::default()
            };
            let solution = dp.solve(&instance).unwrap();
            assert!(
                matches!(solution.status, Status::Feasible { gap } if gap > 0.0),
                "{limit}: {:?}",
                solution.status
            );
            assert_eq!(solution.stats.dp().and_then(|d| d.runs), Some(0), "{limit}");
        }
        for limit in [f64::INFINITY, 1e300] {
            let dp = Dp {
                time_limit: Some(limit),
                ..Dp::default()
            };
            assert_eq!(dp.solve(&instance).unwrap().status, Status::Optimal);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// The smoothing's trigger at a few states, so that small instances meet both of its
        /// paths: made early on the next run's predicted states (taken only if it proves more
        /// than the runs so far, else kept) and taken once the states reach the trigger.
        #[test]
        fn dp_with_early_smoothing_matches_dense_dp(
            instance in testing::instance(testing::SMALL, 1),
            trigger in 1u64..64,
            tables in any::<bool>(),
        ) {
            let dp = Dp {
                smooth_after_states: trigger,
                ..smoothing(tables)
            };
            testing::agree(&dp, &instance, &DenseDp::default())?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// The single types' tables from the second run, and the pairs' after `pairs` states
        /// (so that small instances meet both levels and the change from one to the other).
        #[test]
        fn dp_with_single_type_tables_matches_brute_force(
            instance in testing::instance(testing::TINY, 1),
            pairs in prop_oneof![Just(TABLES_AFTER_STATES), 1u64..20],
        ) {
            testing::agree(&single_then_pairs(pairs), &instance, &BruteForce::default())?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// As above on many identical jobs: classes of three jobs or more are added to the
        /// tables in one pass (`tables::add_copies`).
        #[test]
        fn dp_with_single_type_tables_matches_dense_dp_on_copies(
            instance in testing::instance(testing::SMALL, 15),
            pairs in prop_oneof![Just(TABLES_AFTER_STATES), 1u64..20],
        ) {
            testing::agree(&single_then_pairs(pairs), &instance, &DenseDp::default())?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// Every plain run stopped after its first state or so and made again with the tables.
        #[test]
        fn dp_that_stops_plain_runs_matches_brute_force(
            instance in testing::instance(testing::TINY, 1),
        ) {
            let dp = Dp {
                plain_run_states: 1,
                ..Dp::default()
            };
            testing::agree(&dp, &instance, &BruteForce::default())?;
        }
    }

    /// The DP with the order race after `trigger` states or `factor` times the last run's,
    /// and one of five settings that lead the race into the other paths of the loop: the
    /// defaults; the single types' tables from the second run and the pairs' past 20 states;
    /// the smoothing and tables before the first run; the smoothing due at `other` states
    /// (between the two runs of a race, too); plain runs stopped past `other` states.
    fn racing(trigger: u64, factor: u64, variant: usize, other: u64) -> Dp {
        let dp = match variant {
            0 => Dp::default(),
            1 => single_then_pairs(20),
            2 => smoothing(true),
            3 => Dp {
                smooth_after_states: other,
                ..Dp::default()
            },
            _ => Dp {
                plain_run_states: other,
                ..Dp::default()
            },
        };
        Dp {
            race_after_states: trigger,
            race_factor: factor,
            ..dp
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]
        /// The order race at a few states, so that small instances meet its paths: a run
        /// stopped and won by the other order, both orders stopped (then no more races),
        /// races again after a win (factor 1: any run larger than the last), the smoothing
        /// due between the two runs of a race, a race's second run stopped by the plain runs'
        /// limit, and races with the tables off, single and strongest (the stopped order's
        /// fixing and tables dropped, the first's built again after a lost race). Not reached
        /// here: a smoothing *taken* between the two runs (these descents already sit at the
        /// LP's value).
        #[test]
        fn dp_with_order_races_matches_brute_force(
            instance in testing::instance(testing::TINY, 1),
            trigger in prop_oneof![Just(0u64), 1u64..40],
            factor in prop_oneof![Just(1u64), Just(RACE_FACTOR)],
            variant in 0usize..5,
            other in 1u64..40,
        ) {
            let dp = racing(trigger, factor, variant, other);
            testing::agree(&dp, &instance, &BruteForce::default())?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// As above on small instances with many identical jobs, where the runs are larger.
        #[test]
        fn dp_with_order_races_matches_dense_dp(
            instance in testing::instance(testing::SMALL, 15),
            trigger in 1u64..30,
            factor in prop_oneof![Just(1u64), Just(RACE_FACTOR)],
            variant in 0usize..5,
            other in 1u64..60,
        ) {
            let dp = racing(trigger, factor, variant, other);
            testing::agree(&dp, &instance, &DenseDp::default())?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Many identical jobs (classes split between tied choices by the LP).
        #[test]
        fn dp_with_smoothed_multipliers_matches_dense_dp(
            instance in testing::instance(testing::SMALL, 15),
            tables in any::<bool>(),
        ) {
            testing::agree(&smoothing(tables), &instance, &DenseDp::default())?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// A warm start is a hint only: from any multipliers (near, far, zero, of the wrong
        /// length), the answer is worth the optimum, with or without the smoothing and the
        /// tables; the multipliers the solve leaves are one per type, finite and >= 0.
        #[test]
        fn warm_started_dp_matches_brute_force(
            instance in testing::instance(testing::TINY, 1),
            start in proptest::collection::vec(
                prop_oneof![Just(0.0), 0.0f64..2.0, 0.0f64..1e6], 0..5),
            variant in 0usize..3,
        ) {
            let dp = match variant {
                0 => Dp::default(),
                1 => smoothing(false),
                _ => smoothing(true),
            };
            let problem = RoundProblem::new(&instance);
            let mut warm = WarmStart::from_multipliers(start);
            let solution = dp
                .solve_problem_warm(&problem, &mut warm)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let oracle = BruteForce::default()
                .solve(&instance)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let infeasible = |s: &Solution| matches!(s.status, Status::Infeasible { .. });
            prop_assert_eq!(infeasible(&solution), infeasible(&oracle));
            if let (Some(a), Some(b)) = (solution.objective, oracle.objective) {
                prop_assert!(
                    crate::solution::objectives_agree(b, a),
                    "warm-started {} against the optimum {}", a, b
                );
            }
            let mu = warm.multipliers().map(<[f64]>::to_vec).unwrap_or_default();
            prop_assert_eq!(mu.len(), problem.capacity.len());
            prop_assert!(mu.iter().all(|m| m.is_finite() && *m >= 0.0), "{:?}", mu);
        }
    }

    /// A count problem whose greedy stops one job short, which the DP's runs must close: round
    /// 7 of `stsfair rounds --rounds 10` on the 1,000-job Gavel mix of seed 20 (`gen --gavel
    /// --multi --jobs 1000 --count 100 --seed 20`; 480 forced jobs, 441 of up to 4 units and
    /// 39 of 8 to 32, on 3 x 400 units). At prices 1/32 per unit on every type L = 476.03125,
    /// so 476 jobs leave at most one unit of the 1,200 unused or spent above a job's fewest;
    /// HiGHS finds such a packing, the greedy stops at 475. In the rigid order (fewest kept
    /// choices first) the run at floor 476 passed its layer limit of 4 M states and the ILP
    /// took the round; with the classes of fewest units first it finds 476 (227,256 states in
    /// the run with the tables, 0.6 s; docs/solver.md step 6, "Core order").
    #[test]
    fn a_count_problem_one_short_of_its_ceiling_is_closed_by_the_runs() {
        let shape: [(usize, [u64; 3]); 18] = [
            (520, [0, 0, 0]),
            (79, [1, 2, 4]),
            (38, [1, 2, 2]),
            (5, [1, 1, 0]),
            (80, [1, 1, 2]),
            (18, [16, 16, 16]),
            (31, [1, 1, 1]),
            (8, [2, 2, 4]),
            (37, [1, 1, 4]),
            (76, [2, 1, 2]),
            (11, [32, 32, 0]),
            (17, [1, 2, 0]),
            (30, [2, 2, 2]),
            (28, [2, 1, 4]),
            (5, [8, 8, 8]),
            (4, [2, 1, 1]),
            (5, [32, 32, 32]),
            (8, [2, 2, 0]),
        ];
        let problem = testing::count_problem(&shape, 400);
        let classes = classes(&problem);
        let (mu, bound) = multipliers(&classes, &problem.capacity);
        assert!((bound - 476.03125).abs() < 1e-9, "L = {bound}");
        let greedy = incumbent(&problem, &classes, &mu, true).map(|(v, _)| v);
        assert_eq!(
            greedy,
            Some(475.0),
            "the greedy reaches the ceiling: this case no longer tests the runs"
        );
        let solution = Dp::default()
            .solve_problem(&problem)
            .expect("within the limits");
        assert_eq!(solution.objective, Some(476.0));
        assert!(
            solution
                .stats
                .dp()
                .and_then(|d| d.runs)
                .is_some_and(|r| r >= 1)
        );
        let value =
            testing::check_feasible(&problem, &solution.assignments).map_err(|e| e.to_string());
        assert_eq!(value, Ok(476.0));
    }

    /// Hand-worked: on doubling steps the growth per doubling is the ratio of the states; on a
    /// step of 1.5 the states' power law is extrapolated to a doubling; no growth without two
    /// runs of growing gap and states.
    #[test]
    fn growth_per_doubling_by_hand() {
        assert_eq!(growth_per_doubling((0.01, 1_000), (0.02, 7_000)), Some(7.0));
        // 2,250 / 1,000 over a step of 1.5 is a power of 2 (1.5^2 = 2.25): 4 per doubling.
        let d = growth_per_doubling((0.02, 1_000), (0.03, 2_250)).unwrap();
        assert!((d - 4.0).abs() < 1e-12, "{d}");
        assert_eq!(growth_per_doubling((0.0, 0), (1e-9, 39)), None);
        assert_eq!(growth_per_doubling((0.01, 0), (0.02, 39)), None);
        assert_eq!(growth_per_doubling((0.02, 10), (0.02, 39)), None);
    }

    /// Hand-worked: 9 times per doubling gives the step 2^(ln 3 / ln 9) = 2^(1/2), which
    /// triples the states; slow growth keeps doubling, very steep growth stops at 1.25.
    #[test]
    fn the_plain_step_aims_at_tripling_the_states() {
        assert!((plain_growth(9.0) - 2f64.sqrt()).abs() < 1e-12);
        assert_eq!(plain_growth(0.0), FAST_GROWTH);
        assert_eq!(plain_growth(RUN_GROWTH), FAST_GROWTH);
        assert_eq!(plain_growth(2.5), FAST_GROWTH);
        assert_eq!(plain_growth(1e6), SLOW_GROWTH);
        // Between the two, the predicted growth of the next run is RUN_GROWTH.
        let d: f64 = 26.0;
        assert!((d.powf(plain_growth(d).log2()) - RUN_GROWTH).abs() < 1e-9);
    }
}
