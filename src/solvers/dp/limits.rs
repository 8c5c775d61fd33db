//! Every tuning constant and tolerance of the fast DP, in one place, each with why its value.
//!
//! Why this file exists: the phases (bound, incumbent, fixing, class DP, type tables, gap
//! deepening) each have a few thresholds; gathered here they can be read and tuned together,
//! and none hides in a 250-line function. None of them affects exactness (docs/solver.md proves
//! every pruning rule for any value); they trade time and memory only, except the tolerances,
//! which absorb floating-point error. No algorithm here: O(1) time and memory.
//! References: the measurements of docs/performance.md, from which the values were chosen.

/// Default of [`Dp::max_states`](super::Dp::max_states): at about 100 bytes per state of the
/// layer being built, 4,000,000 states stay under about 400 MB, and the whole solve (twice
/// that, [`SOLVE_BUDGET`]) under about 1 GiB.
pub(super) const DEFAULT_MAX_STATES: usize = 4_000_000;

/// The states all gap-deepening runs of one solve may create together, in units of
/// [`Dp::max_states`](super::Dp::max_states) (8,000,000 by default: about 10 to 25 s on the
/// rounds measured, and 64 MB of back pointers if one run takes them all).
pub(super) const SOLVE_BUDGET: u64 = 2;

/// Default of `Dp::tables_after_states`: a gap-deepening run past this many states turns on
/// the type tables ([`TypeTables`](super::tables::TypeTables)) and the slow growth of the gap
/// for the rest of the solve. Measured trade-off (docs/performance.md, worst cases): at 10,000
/// the tables also came on in rounds of the `sts` simulation that the plain runs finish anyway,
/// and cost more solver time per round there than they saved; 100,000 keeps most of that and
/// still solves the hard 300-job round in 1.5 s.
pub(super) const TABLES_AFTER_STATES: u64 = 100_000;

/// Default of `Dp::single_tables_after_states`: a run of this many states or more (or one of
/// [`ADAPT_AFTER_STATES`] or more that predicts this many for the next plain run) turns on the
/// type tables of single types for the later runs, until the pairs' come on
/// ([`TABLES_AFTER_STATES`]). They cost little to build (one grid of rooms per binding type,
/// `add_copies` for classes of many jobs) and see each type's integrality, which the last runs
/// of the 1,000-job Gavel rounds pay for (docs/solver.md step 5). Chosen by instruction counts
/// on 19 rounds (docs/solver.md, "Single types' tables first"): 1,000 won on two 1,000-job rounds
/// and lost twice as much on a 10,000-job one; 4,000 left 1k-4 at 76,955 states. Half of it
/// for the core in the rigid order ([`RIGID_SINGLE_SHARE`]).
pub(super) const SINGLE_TABLES_AFTER_STATES: u64 = 2_000;

/// The fixing and tables of single types are made for this many times the gap of the run that
/// needs them, and rebuilt for a run past it unless the fixing there keeps the same choices
/// (`fixing::next_gap`; the tables are cheap; a wider fixing keeps more classes in the core
/// and looser tables: 2.5 makes 10k-5 97,088 states instead of 11,077). 1 against 1.25, with
/// the rebuilds the same fixing would make skipped: on the 10,000-job round of seed 10 61,974
/// -> 43,192 states, 18.1 -> 11.9 ms in one process, 3.4% less on 24 such rounds by geometric
/// mean, 1% less on 49 of 40-3,000 jobs but `gavel-multi-36x3-300`, 1.36 -> 1.62 ms
/// (docs/solver.md, "Single types' tables first").
pub(super) const SINGLE_SPAN: f64 = 1.0;

/// The tables also come on after a run whose states, times their growth over the run before
/// it, exceed this many times [`TABLES_AFTER_STATES`]: the states of plain runs grow by 4 to
/// 7 per doubling of the gap on the rounds of large integrality gap, so such a run predicts a
/// next one far past the threshold. On `round6-gavel-100x3-1000` the run at gap 0.116 created
/// 89,969 states (21,536 the run before), just under the threshold, and the next plain run
/// 6.4 M; with the tables it creates 52,000.
pub(super) const TABLES_PREDICTED: u64 = 2;

/// Default of `Dp::race_after_states`: a gap-deepening run may create at most this many
/// states, or [`RACE_FACTOR`] times the last finished run's if more, before the same gap is
/// run in the other core order (docs/solver.md step 5, "The order race"). A lost race costs
/// at most twice the limit in states, and the first order's fixing and tables built again.
/// Chosen between 20,000 and 50,000 on 47 Gavel-mix runs of 10 rounds: both took about a fifth
/// off their time, but at 20,000 a single-GPU 10,000-job round whose last run takes 20,485
/// states lost a race (22,905 -> 62,907 states); at 50,000 none of 125 single rounds races.
pub(super) const RACE_AFTER_STATES: u64 = 50_000;

/// The growth over the last finished run past which a run is raced by the other core order:
/// the runs of one order grow by 2 to 17 times from one step to the next on the rounds
/// measured, and a run that grows far more is the sign of an order that spreads the loads
/// early (25 times, 109,612 -> 2,773,774 states, on round 8 of the 10,000-job mix of seed 2 in
/// the rigid order, where the order by units took 13,109). 16 measured about the same as 8.
pub(super) const RACE_FACTOR: u64 = 8;

/// Word operations the forced jobs' reachability ([`RoundProblem::forced_fit`]) may take
/// before any DP run of a solve whose greedy found no solution: 2^22, a few milliseconds at
/// most, and only where the greedy fails. Three types of 36 GPUs in halves take 10,658 words
/// an option: the 35 forced jobs of the multi-GPU simulation's round that has no solution
/// (`tests/data/multi-unpackable-36x3-88.json`) take 2.2 M word operations, and the solve
/// answers `infeasible` in 0.74 ms where its runs took 0.69 s to refuse it (the ILP proves it
/// in 0.22 s; docs/solver.md, "Certificates of infeasibility"). Larger clusters (100 GPUs a
/// type in halves: 161,604 words an option) pass the allowance after a few forced jobs, and
/// are checked only once the DP refuses them ([`REFUTE_WORK`]).
///
/// [`RoundProblem::forced_fit`]: crate::formulation::RoundProblem::forced_fit
pub(super) const FIT_WORK: u64 = 1 << 22;

/// Word operations the forced jobs' reachability may take once the DP refuses a problem as
/// too large (`SolveError::TooLarge`) that no solution is known for (`refused`): 2^26, tens of
/// milliseconds, where the runs that led to the refusal took far longer; if the forced jobs do
/// not fit, the answer is that the round has no solution instead of the refusal.
pub(super) const REFUTE_WORK: u64 = 1 << 26;

/// Least growth of the gap for the shorter step that replaces an early refusal (step 5 of
/// docs/solver.md): a step that the budget allows only below 1.02 times the gap would find
/// little the last run did not, and the solve stops with `SolveError::TooLarge` instead.
pub(super) const MIN_STEP: f64 = 1.02;

/// The first gap g tried, relative to max(1, |L|): small enough that a round whose optimum
/// nearly ties the LP (the shipped rounds: 0.001% to 0.01% of L) is solved by a core of the
/// few classes at a tie, large enough to be above floating-point noise.
pub(super) const FIRST_GAP: f64 = 1e-9;

/// Growth factor of the gap per failed run while the runs are cheap: doubling makes the failed
/// runs together cost about as much as the last one (their gaps halve backwards).
pub(super) const FAST_GROWTH: f64 = 2.0;

/// Past this many states in a failed run without the type tables, the next gap is the one
/// predicted to grow the states by [`RUN_GROWTH`] instead of a doubling (`plain_growth` in
/// mod.rs): below it a run costs well under a millisecond and doubling reaches the
/// optimum's gap in the fewest runs. For the core in the units order; the rigid order has
/// [`RIGID_ADAPT_AFTER_STATES`].
pub(super) const ADAPT_AFTER_STATES: u64 = 1_000;

/// [`ADAPT_AFTER_STATES`] for the core in the rigid order (`CoreOrder::Rigid`). With the
/// classes that may idle last there, the failed runs are smaller, and a doubling from a run of a
/// few hundred states overshot the optimum's gap where the states grow 17 to 32 times per doubling
/// (the 1,000-job Gavel round of seed 23: 392 states at gap 0.030, then 9,702 at 0.060, the
/// optimum's 0.038); from 250 that growth is measured in time. The units order keeps 1,000: with
/// both triggers lowered there too, the multi-GPU simulations of seeds 4 and 8 fell back to the ILP
/// once each, and with either one that of seed 4 (docs/solver.md step 6, "Core order").
pub(super) const RIGID_ADAPT_AFTER_STATES: u64 = 250;

/// The single types' tables' trigger (`Dp::single_tables_after_states`, and the prediction of
/// it) is divided by this for the core in the rigid order: its runs before the tables are smaller
/// with the classes that may idle last, and at 2,000 the tables came on too late on the 1,000-job
/// Gavel round of seed 39 (3,320 -> 20,799 states; 1,535 at 1,000) and on the 3,000-job rounds of
/// seeds 15 and 19. The units order keeps the trigger as it is, for the reason of
/// [`RIGID_ADAPT_AFTER_STATES`].
pub(super) const RIGID_SINGLE_SHARE: u64 = 2;

/// The growth of the states from one failed run to the next that the step after
/// [`ADAPT_AFTER_STATES`] aims at: near e, where the runs together cost the least for states
/// growing exponentially with the gap (`plain_growth` in mod.rs).
pub(super) const RUN_GROWTH: f64 = 3.0;

/// Growth factor of the gap once the runs are expensive (type tables on): the cost of a run
/// grows steeply as its floor drops below the optimum (about 10 times per doubling of the gap
/// on the rounds of large integrality gap measured), so overshooting the optimum's gap by up to
/// 25% instead of 100% costs less than the extra failed runs, whose floors lie above the
/// optimum.
pub(super) const SLOW_GROWTH: f64 = 1.25;

/// Floating-point tolerance of the fixing and the floors, relative to max(1, |L|): the values
/// are sums of up to ~10^5 terms of size ~1 computed in different orders, whose rounding error
/// stays far below 1e-10 relative, while the gaps that matter are 1e-9 relative and more.
pub(super) const TOLERANCE: f64 = 1e-10;

/// A failed run whose states grew by less than this per doubling of the gap (from the run
/// before) jumps to the next gap at which anything can change (docs/solver.md step 5, "Jump
/// after a failed run"), as runs with the tables do.
pub(super) const FLAT_GROWTH: f64 = 1.25;

/// Most states of one plain run (no type tables) before it is stopped and made again with the
/// tables: the growth of the plain runs is predicted from the runs before, and one run can jump
/// past any prediction when the gap lets classes with many choices into the core (a priced
/// round of the 10,000-job Gavel mix: 3,264 states at gap 0.043, then 9.4 M at 0.074, past the
/// budget, and the ILP took the round; with the tables that gap took 252 states). Two and a
/// half times the states at which the tables come on.
pub(super) const PLAIN_RUN_STATES: u64 = 250_000;

/// Runs of fewer states never predict a refusal (their growth from run to run is noise).
pub(super) const PREDICT_AFTER_STATES: u64 = 100_000;

/// The dense finish (docs/solver.md step 5): once the runs of a solve have created one
/// `DENSE_SHARE`-th of the dense DP's cells (its grid of unit vectors times the jobs), and at
/// least [`DENSE_AFTER_STATES`] states, the dense DP solves the round instead. A state costs
/// the runs about four times what a cell costs the dense recurrence: on the 25-job round of
/// `tests/dp_vs_brute.rs` (`the_dense_finish_answers_a_round_small_for_the_dense_dp`: all
/// values 1, four types, 96,237 unit vectors) the runs created 8.0 M states in 1.3 s before
/// the budget refused the round, the dense DP visited its 2.4 M cells in 0.1 s (162 against
/// 44 ns). So the solve costs at most about twice the dense DP's time, plus the floor's.
pub(super) const DENSE_SHARE: u64 = 4;

/// The fewest states after which the dense finish is made: about 15 ms of runs, below which
/// switching saves nothing measurable, and above the states the runs make on nearly every small
/// random instance of the property tests (which check the fast DP against the dense one, and
/// would otherwise compare the dense DP with itself; the rare rounds past it, such as the one
/// of [`DENSE_SHARE`], are the finish's own cases).
pub(super) const DENSE_AFTER_STATES: u64 = 100_000;

/// Most passes of line searches in the Lagrangian descent: 3 to 4 passes settle on the rounds
/// measured; the cap only stops a pathological zigzag (any mu gives a valid bound).
pub(super) const MAX_PASSES: usize = 50;

/// A pass that lowers L by less than this, relative to max(1, |L|), ends the descent: below
/// it the gain is floating-point noise.
pub(super) const SETTLED: f64 = 1e-12;

/// A pass of the descent's line searches that gains more than this part of the pass before
/// it is taken for a zigzag: the passes converge linearly towards a kink of L that no fixed
/// direction crosses, and the steepest direction is tried at once instead of after the gains
/// fall to [`SETTLED`]. On the 1,000-job Gavel round of seed 21 (`gen --gavel --jobs 1000
/// --count 100 --seed 21`) eleven passes each gained a quarter of the one before (4e-4 down
/// to 1e-10) before the steepest direction reached the minimum in one step; with the trigger
/// it is tried at the fourth pass. Rounds whose passes settle at once (most) never meet it.
pub(super) const ZIGZAG: f64 = 0.1;

/// Where the descent's passes settle, the vertex of L's nearest pieces (`Flat::vertex`) is
/// taken only if it lowers L by more than this, relative to max(1, |L|): the DP's first gap
/// ([`FIRST_GAP`]) cannot tell less, and a taken step costs a pass of line searches more.
/// Measured (docs/solver.md step 2): on the 10,000-job Gavel round of seed 36 the passes settle
/// at L = 4531.297163 and the vertex is at 4531.297034 (the smoothing's 4531.297034 too), 14.7
/// -> 10.9 ms in one process; with any gain taken, the 1,000-job rounds took 2% longer.
pub(super) const JUMP_GAIN: f64 = 1e-9;

/// The nearest planes `Flat::vertex` chooses its K from, per type: the planes through a
/// vertex near mu are the nearest but for others as near that are parallel to them or to
/// each other (a class's two choices on one type, or many classes tied alike).
pub(super) const VERTEX_PLANES: usize = 4;

/// Frank-Wolfe steps of the steepest descent direction's search (`Flat::steepest`, step 2):
/// each costs one pass over the maximizing choices of the classes that tie between units
/// vectors, a handful on the Gavel rounds. At a minimizer of L the search cannot meet its gap
/// test (the shortest subgradient is 0), so it ends here or at rounding: most of the 0.2 M
/// instructions a solve where the direction finds nothing (a review's fuzzer saw the cap
/// reached in about a third of its calls, averaging 68 steps a call).
pub(super) const STEEPEST_STEPS: usize = 200;

/// The search for the steepest direction stops once Frank-Wolfe's gap (which bounds how much
/// shorter the subgradient can still get, squared) is below this part of its squared length:
/// the direction is then within a few percent of the steepest, and the exact line search
/// that follows does not need more.
pub(super) const STEEPEST_GAP: f64 = 1e-3;

/// Once the runs of a solve have created this many states (or are predicted to, with the next
/// run's), the multipliers are refined by smoothing (docs/solver.md steps 2 and 5, "When to
/// smooth"). Its 1 to 2 ms are the cost of a few thousand states; of 20 rounds measured, the
/// descent's L was above the LP's on 2 of the 6 solved in fewer states (one 3,070 states
/// instead of 280) and on 8 of the 14 above (up to 100 times the states). 9,000, not 10,000:
/// on `instances/hard/round62-gavel-100x3-1000` the descent's L is 0.40 above the LP's and the
/// run at gap 0.058 (2,403 states) predicts 9,873 with the next; at 10,000 the smoothing comes
/// three runs later, after 15,561 states (16,248 in all, against 3,351). On the 118 shipped and
/// generated Gavel rounds of 1,000 to 10,000 jobs (`gen --gavel`, seeds 1-60, 1-30, 1-24) and
/// the 100 rounds of `rounds instances/gavel-100x3-1000.json` (`--prices off`: the same
/// states; `lp`: the same answers) no other solve changes; at
/// 5,000 it is also made on `gavel-100x3-1000` and the 3,000-job round of seed 7, where it
/// lowers L too little to be taken (0.3 ms and 2 ms lost).
pub(super) const SMOOTH_AFTER_STATES: u64 = 9_000;

/// The first tau of the smoothing homotopy, relative to the largest |value| of a choice: large
/// enough that every class is spread over its choices, so that the first Newton steps see
/// every type's price.
pub(super) const FIRST_TAU: f64 = 0.1;

/// Most levels of the smoothing homotopy (tau from a tenth of the largest |value| down by 10
/// per level): 14 levels reach 1e-15 of it, past any excess that matters.
pub(super) const SMOOTH_LEVELS: usize = 14;

/// The homotopy stops once the smoothing's excess over L, tau sum_c n_c ln |Q_c|, is below this
/// relative to max(1, |L|).
pub(super) const SMOOTH_EXCESS: f64 = 1e-10;

/// The homotopy also stops once its fractional solution (each class split by its softmax)
/// shows L within this of the LP's value, relative to max(1, |L|).
pub(super) const SMOOTH_GAP: f64 = 1e-7;

/// ... or once a level lowers L_tau by at most this, relative to max(1, |L|). It saves about
/// two of eleven levels on the Gavel rounds; of 43 rounds measured, one solve changed its
/// states (fewer). (At 1e-7 the homotopy stopped up to 3e-5 above where the next levels took
/// it.)
pub(super) const SMOOTH_LEVEL_GAIN: f64 = 1e-9;

/// Most Newton steps per level of the homotopy.
pub(super) const NEWTON_STEPS: usize = 30;

/// A Newton step predicted to lower L_tau by less than this, relative to max(1, |L_tau|), ends
/// the level.
pub(super) const SMOOTH_SETTLED: f64 = 1e-2;

/// Halvings of a Newton step before the level gives up.
pub(super) const BACKTRACKS: usize = 40;

/// The Armijo fraction: a step must lower L_tau by at least this fraction of its first-order
/// prediction.
pub(super) const ARMIJO: f64 = 1e-4;

/// The ridge added to the Hessian's diagonal, relative to its mean diagonal: keeps the Newton
/// system solvable where L_tau is nearly linear.
pub(super) const RIDGE: f64 = 1e-9;

/// The Newton steps of the smoothing move each price by at most this many times tau.
pub(super) const TRUST: f64 = 100.0;

/// Up to this many GPU types the descent tries every direction of {-1, 0, 1}^K (3^5 - 1 = 242);
/// beyond, coordinates and pairs only (3^K would grow past the cost of the DP itself).
pub(super) const ALL_DIRECTIONS_UP_TO: usize = 5;

/// Margin of the price cap over the bound of the dual optimum (`price_cap` in lagrangian/mod.rs):
/// the descent's box must contain it, and only an infeasible LP drives mu to the cap.
pub(super) const PRICE_CAP_FACTOR: f64 = 2.0;

/// The greedy skips options of an optional job whose reduced cost is below this (worse than
/// idling at the prices): a little below 0 so that options tied with idle are still taken.
pub(super) const GREEDY_RC_SLACK: f64 = 1e-9;

/// The consolidation pass of the greedy (integral problems) chains moves over at most this
/// many GPU types: the type that needs room and two more (every type of the Gavel clusters).
pub(super) const CHAIN_TYPES: usize = 3;

/// Candidate moves the consolidation pass may examine in one greedy (about a millisecond's
/// work); past them it stops, keeping what it placed.
pub(super) const CONSOLIDATE_WORK: u64 = 1_000_000;

/// Rounds of compaction and consolidation in the greedy of integral problems at most (each
/// round frees units, then places idle jobs in them). The count problem that needed them
/// (round 7 of the 10,000-job Gavel mix, seed 6) reached its ceiling after 6, in about 3 ms.
/// All rounds of one repair share one budget of [`CONSOLIDATE_WORK`] candidate moves.
pub(super) const COMPACT_PASSES: usize = 16;

/// The probes of the state bound move each type's price by these fractions of it, up and down:
/// 1/64 sees small excesses of one type, 1 large ones; three scales cover the range for 1 + 6K
/// probes per state.
pub(super) const PROBE_SCALES: [f64; 3] = [1.0 / 64.0, 1.0 / 8.0, 1.0];

/// Most cells one array of [`TypeTables`](super::tables::TypeTables) may hold over all sets and
/// layers (24 Mi cells; the tables and their running maxima take 384 MiB at most). Enough for
/// the three pair tables of a 40-class core on 100 GPUs of 4 units per type (3 x 401^2 x 43 =
/// 20.7 Mi cells, `instances/hard/round6-gavel-100x3-1000`), where the single-type tables that
/// 4 Mi allowed left that round to the ILP; with the layer limit of `Dp::max_states` (about
/// 400 MB) the solve stays under about 1 GiB.
pub(super) const TABLE_CELLS: usize = 24 << 20;

/// Most cells of the tables for a layer limit of `max_states` states: as many bytes as a full
/// layer (about 100 bytes per state, 16 per cell with its running maximum), at most
/// [`TABLE_CELLS`]; so a memory limit given as `Dp::max_states` (`--max-memory-mib`) bounds the
/// tables too (the default 4,000,000 states allow 25 M cells, all of [`TABLE_CELLS`]).
pub(super) fn table_cells(max_states: usize) -> usize {
    (max_states.saturating_mul(100) / 16).min(TABLE_CELLS)
}

/// Most bytes the dense finish ([`DENSE_SHARE`]) may allocate for a layer limit of
/// `max_states` states: as many as a full layer (about 100 bytes per state), so that
/// `--max-memory-mib` bounds it too.
pub(super) fn dense_bytes(max_states: usize) -> u64 {
    (max_states as u64).saturating_mul(100)
}

/// Most cell updates building the type tables may take (about 4 s at 1.3 updates per ns, the
/// pair tables of round 6 above at twice its optimum's gap); past it the pairs fall back to
/// single types, and the singles to no tables.
pub(super) const TABLE_WORK: usize = 5_000_000_000;

/// Cell updates the tables may take per state the solve has created so far (a cell update
/// costs about 1 ns, a state about 1 us). Counted over the solve, not the largest run: the
/// runs before the tables create few states (148,000 on `round4-gavel-36x3-300`), and 500 per
/// state of the largest run left the pair tables (0.3 * 10^9 updates) out, which made the last
/// run 2.6 M states instead of 0.3 M. 40,000: on `round6-gavel-100x3-1000` the tables come on
/// after 115,000 states and its pair tables (fixed at [`TABLE_SPAN`] times the gap) take
/// 2.5 * 10^9 updates (1.8 s); at 2,000 only the single-type tables fit and the next run alone
/// created 6.4 M states (8 s), and at 20,000 the pairs fitted once but not their rebuild (7.9 M
/// states).
pub(super) const TABLE_WORK_PER_STATE: u64 = 40_000;

/// Most cells of one set's room grid (512 x 512; 401 x 401 is a pair of types of 100 GPUs of 4
/// units): pairs of types whose grid is larger fall back to single types.
pub(super) const TABLE_GRID: usize = 1 << 18;

/// Once the tables are on, the fixing and its tables are made for this many times the gap of
/// the run that needs them and kept while the runs' gaps stay within it: 2 covered three runs
/// of [`SLOW_GROWTH`] (1.25^3 < 2), whose tables (0.03 to 0.08 s each on the 300-job round of
/// large gap) were rebuilt for every run, while the extra choices kept cost the bound little.
/// 2.5 covers four: on `round6-gavel-100x3-1000` the pair tables built at 2 x 0.145 stopped
/// just short of the run that succeeds (gap 0.355), and their rebuild at 2 x 0.355 cost more
/// than the work budget allowed (single-type tables, 7.9 M states, refused); at 2.5 x 0.145
/// one build serves every run (3.6 s in all).
pub(super) const TABLE_SPAN: f64 = 2.5;

/// Classes of at least this many jobs are added to the type tables by `add_copies` (one pass
/// over the grid, with a sliding-window maximum); smaller ones one job at a time, whose plain
/// passes cost less than the window's bookkeeping for one or two jobs.
pub(super) const COPIES_AFTER: usize = 3;

/// A step of the class DP whose counts that fit span fewer than this many values scans them
/// all; a longer one searches the concave probe bound from where the step's last search ended
/// (`above`, docs/solver.md step 6), whose full evaluations cost more than the scan's (which
/// stop at the first probe below the floor) on short ranges. Chosen among 2, 3, 4, 5, 6, 8
/// and 16 on 37 rounds, with the same states everywhere: 4 took 1,467.5 M instructions, 8
/// 1,490.9 M, 16 1,613.7 M, 2 1,475.7 M; round4-gavel-36x3-300 96.3 M at 8, 81.4 M at 4.
pub(super) const SCAN_COUNTS: u64 = 4;
