//! Small integer programs solved exactly: a dense bounded simplex inside a depth-first branch
//! and bound. It solves the paired program ([`super::paired`]).
//!
//! **Problem.** `maximize c'x` subject to `A x <= b` (rows marked `equal`: `A x = b`),
//! `0 <= x <= u`, x integer, where A, b and u are non-negative integers.
//!
//! **LPs.** The root's LP is solved by the bounded primal simplex from the slack basis at x = 0,
//! which keeps every `<=` row: phase 1 fills the equality rows, phase 2 maximizes `c'x`
//! (Dantzig's rule, Bland's after 50 degenerate pivots in a row). A branch puts a new bound on a
//! basic variable, which leaves its parent's basis dual feasible, so a child starts from a copy
//! of its parent's tableau and is solved by the bounded dual simplex (Chvátal, *Linear
//! Programming*, 1983, ch. 8 and 10; Koberstein, *The dual simplex method*, 2005, ch. 3).
//!
//! **Search.** Depth first. The column branched on has the best pseudocost score (Bénichou et
//! al., *Experiments in mixed-integer linear programming*, 1971; the product rule of Achterberg,
//! Koch and Martin, *Branching rules revisited*, 2005), the lowest index among equals, and the
//! child of the smaller estimated fall is taken first, so the search, and which optimum it
//! returns among several, is deterministic. A node is cut as soon as its dual objective, an
//! upper bound that falls with each dual pivot, does not beat the incumbent by a relative 1e-12.
//! A node with an incumbent fixes the nonbasic columns whose reduced cost would cost more than
//! the gap (reduced-cost fixing), and tries its LP values rounded down, which keep every `<=`
//! row.
//!
//! **Why its own.** The paired program has a few dozen rows and a few hundred columns; a dense
//! tableau of that size pivots in microseconds. On 50 programs shaped like sts's rounds it is
//! about 11 times faster than microlp's sparse branch and bound (`cargo bench --bench paired`,
//! side by side). Many of sts's rounds have columns of equal value, where branching on the most
//! fractional column does not finish in a million nodes and pseudocosts take 419
//! (`tests/paired_program.rs`, `a_symmetric_round_is_solved_within_the_node_limit`).
//!
//! Complexity: a pivot is O(m (n + m)) for m rows and n columns; the number of nodes is
//! exponential in the worst case, and bounded by [`NODE_LIMIT`], the memory of the open nodes by
//! [`OPEN_LIMIT`].

/// The most nodes one search visits before it gives up with [`Limit::Nodes`].
pub(crate) const NODE_LIMIT: usize = 100_000;

/// The most tableau entries the open nodes hold together (256 MiB) before the search gives up
/// with [`Limit::OpenMemory`].
pub(crate) const OPEN_LIMIT: usize = 32 << 20;

/// The most dual simplex pivots one node takes before it gives up.
const PIVOT_LIMIT: usize = 100_000;

/// A basic variable this far outside a bound is infeasible.
const FEASIBILITY_TOL: f64 = 1e-9;

/// A pivot element smaller than this in magnitude is not taken.
const PIVOT_TOL: f64 = 1e-9;

/// A reduced cost this small does not improve the objective.
const REDUCED_COST_TOL: f64 = 1e-11;

/// A value this close to an integer is that integer.
const INTEGRALITY_TOL: f64 = 1e-6;

/// An integer program of the module docs, A dense in row-major order.
#[derive(Debug, Clone)]
pub(crate) struct IntegerProgram {
    /// Rows.
    pub rows: usize,
    /// Columns (variables).
    pub columns: usize,
    /// `a[i * columns + j]`: the coefficient of variable j in row i (a non-negative integer).
    pub a: Vec<f64>,
    /// Right-hand sides (non-negative integers).
    pub rhs: Vec<f64>,
    /// Rows that must hold with equality.
    pub equal: Vec<bool>,
    /// Objective coefficients, finite.
    pub cost: Vec<f64>,
    /// Upper bounds (non-negative integers).
    pub upper: Vec<f64>,
}

/// The limit a search passed, which stopped it without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// More than [`NODE_LIMIT`] nodes.
    Nodes,
    /// Open nodes of more than [`OPEN_LIMIT`] tableau entries.
    OpenMemory,
    /// A node's LP took more than the pivot limit (cycling or numerical trouble).
    Pivots,
}

/// How a node's LP ended.
enum LpEnd {
    /// Optimal: primal and dual feasible.
    Optimal,
    /// No point within the node's bounds.
    Infeasible,
    /// Its bound fell to the cutoff: nothing better than the incumbent below it.
    Cut,
}

/// A node: the bounds of every variable (columns, then one slack per row) and a dual feasible
/// basis as a dense tableau.
#[derive(Debug, Clone)]
struct Node {
    /// Rows.
    m: usize,
    /// Variables: columns and slacks.
    width: usize,
    /// `tableau[i * width + k]`: row i of B^-1 [A I].
    tableau: Vec<f64>,
    /// The basic variables' values.
    beta: Vec<f64>,
    /// The reduced costs.
    reduced: Vec<f64>,
    /// The basic variable of each row.
    basis: Vec<usize>,
    /// Whether each variable is basic.
    is_basic: Vec<bool>,
    /// Whether each nonbasic variable sits at its upper bound (else at its lower).
    at_upper: Vec<bool>,
    lower: Vec<f64>,
    upper: Vec<f64>,
    /// The parent's LP bound, and the branch that made this node: (column, up, distance moved).
    parent: Option<(f64, usize, bool, f64)>,
}

impl Node {
    /// The slack basis with every column at 0. It is primal feasible but for the equality rows,
    /// whose slacks take the bounds `[0, inf)` here until [`Node::root`] has driven them to 0.
    fn at_zero(p: &IntegerProgram) -> Node {
        let (m, n) = (p.rows, p.columns);
        let width = n + m;
        let mut tableau = vec![0.0; m * width];
        for i in 0..m {
            tableau[i * width..i * width + n].copy_from_slice(&p.a[i * n..(i + 1) * n]);
            tableau[i * width + n + i] = 1.0;
        }
        let mut upper = p.upper.clone();
        upper.resize(width, f64::INFINITY);
        let mut is_basic = vec![false; width];
        is_basic[n..].fill(true);
        Node {
            m,
            width,
            tableau,
            beta: p.rhs.clone(),
            reduced: vec![0.0; width],
            basis: (n..width).collect(),
            is_basic,
            at_upper: vec![false; width],
            lower: vec![0.0; width],
            upper,
            parent: None,
        }
    }

    /// The root's LP, solved by the primal simplex from [`Node::at_zero`]: phase 1 fills the
    /// equality rows (maximizes their left-hand sides), phase 2 maximizes `c'x` with their
    /// slacks fixed at 0. `None`: the LP, and so the program, is infeasible.
    fn root(p: &IntegerProgram) -> Result<Option<Node>, Limit> {
        let (m, n) = (p.rows, p.columns);
        let mut node = Node::at_zero(p);
        if p.equal.iter().any(|&e| e) {
            let mut fill = vec![0.0; n + m];
            let mut target = 0.0;
            for i in (0..m).filter(|&i| p.equal[i]) {
                for (f, a) in fill.iter_mut().zip(&p.a[i * n..(i + 1) * n]) {
                    *f += a;
                }
                target += p.rhs[i];
            }
            node.set_costs(&fill);
            node.primal()?;
            if node.objective(&fill) < target - FEASIBILITY_TOL * target.max(1.0) {
                return Ok(None);
            }
            for i in (0..m).filter(|&i| p.equal[i]) {
                node.upper[n + i] = 0.0;
            }
            // A basic slack of an equality row may be left a rounding error above 0.
            for r in 0..m {
                let k = node.basis[r];
                if k >= n && p.equal[k - n] {
                    node.beta[r] = 0.0;
                }
            }
        }
        let mut cost = p.cost.clone();
        cost.resize(n + m, 0.0);
        node.set_costs(&cost);
        node.primal()?;
        Ok(Some(node))
    }

    /// The reduced costs of `cost` (one per variable) in the current basis: `c - c_B' B^-1 [A I]`.
    fn set_costs(&mut self, cost: &[f64]) {
        self.reduced.copy_from_slice(cost);
        for (r, &b) in self.basis.iter().enumerate() {
            let cb = cost[b];
            if cb != 0.0 {
                let row = &self.tableau[r * self.width..(r + 1) * self.width];
                for (d, t) in self.reduced.iter_mut().zip(row) {
                    *d -= cb * t;
                }
            }
        }
        for &b in &self.basis {
            self.reduced[b] = 0.0;
        }
    }

    /// The entering variable of the primal simplex: the largest reduced cost that can improve
    /// (Dantzig), or the lowest such index (Bland, which cannot cycle). `None`: optimal.
    fn primal_entering(&self, bland: bool) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for k in 0..self.width {
            if self.is_basic[k] || self.lower[k] == self.upper[k] {
                continue;
            }
            let gain = if self.at_upper[k] {
                -self.reduced[k]
            } else {
                self.reduced[k]
            };
            if gain > REDUCED_COST_TOL && best.is_none_or(|(_, g)| gain > g) {
                best = Some((k, gain));
                if bland {
                    break;
                }
            }
        }
        best.map(|(k, _)| k)
    }

    /// The primal ratio test for variable k moving off its bound: how far it moves, and the row
    /// whose basic variable reaches a bound first (with whether that bound is its lower), or
    /// `None` when k reaches its own other bound first. Ties go to the larger `|alpha|`, or, for
    /// Bland's rule, to the lowest basic variable.
    fn primal_ratio(&self, k: usize, bland: bool) -> Option<(f64, Option<(usize, bool)>)> {
        let dir = if self.at_upper[k] { -1.0 } else { 1.0 };
        let mut step = self.upper[k] - self.lower[k];
        let mut leave: Option<(usize, bool, f64)> = None;
        for r in 0..self.m {
            let alpha = self.tableau[r * self.width + k] * dir;
            let b = self.basis[r];
            let (limit, to_lower) = if alpha > PIVOT_TOL {
                ((self.beta[r] - self.lower[b]) / alpha, true)
            } else if alpha < -PIVOT_TOL && self.upper[b].is_finite() {
                ((self.upper[b] - self.beta[r]) / -alpha, false)
            } else {
                continue;
            };
            let limit = limit.max(0.0);
            let better = match leave {
                _ if limit < step - 1e-12 => true,
                Some((lr, _, la)) if limit <= step + 1e-12 => {
                    if bland {
                        b < self.basis[lr]
                    } else {
                        alpha.abs() > la
                    }
                }
                _ => false,
            };
            if better {
                step = step.min(limit);
                leave = Some((r, to_lower, alpha.abs()));
            }
        }
        step.is_finite()
            .then_some((step, leave.map(|(r, to_lower, _)| (r, to_lower))))
    }

    /// The primal simplex from a primal feasible basis, for the costs whose reduced costs
    /// [`Node::set_costs`] set. After 50 degenerate pivots in a row it follows Bland's rule until
    /// a step moves.
    fn primal(&mut self) -> Result<(), Limit> {
        let mut degenerate = 0;
        for _ in 0..PIVOT_LIMIT {
            let bland = degenerate >= 50;
            let Some(k) = self.primal_entering(bland) else {
                return Ok(());
            };
            let Some((step, leave)) = self.primal_ratio(k, bland) else {
                // Unbounded: impossible with bounded columns and rows of non-negative A.
                return Err(Limit::Pivots);
            };
            degenerate = if step <= 1e-12 { degenerate + 1 } else { 0 };
            match leave {
                None => {
                    let dir = if self.at_upper[k] { -step } else { step };
                    for r in 0..self.m {
                        self.beta[r] -= self.tableau[r * self.width + k] * dir;
                    }
                    self.at_upper[k] = !self.at_upper[k];
                }
                Some((r, to_lower)) => self.pivot(r, k, to_lower),
            }
        }
        Err(Limit::Pivots)
    }

    /// Reduced-cost fixing: a nonbasic column whose reduced cost would take the node's bound
    /// down by more than `gap` (its excess over the incumbent) within one unit keeps its bound in
    /// this subtree. In general, a column moves off its bound by at most `gap / |d_j|` units.
    fn fix_by_reduced_cost(&mut self, n: usize, gap: f64) {
        for j in 0..n {
            if self.is_basic[j] || self.lower[j] == self.upper[j] {
                continue;
            }
            let d = self.reduced[j];
            let slope = if self.at_upper[j] { d } else { -d };
            if slope <= REDUCED_COST_TOL {
                continue;
            }
            let room = (gap.max(0.0) / slope * (1.0 + 1e-9) + 1e-9).floor();
            if self.at_upper[j] {
                self.lower[j] = self.lower[j].max(self.upper[j] - room);
            } else {
                self.upper[j] = self.upper[j].min(self.lower[j] + room);
            }
        }
    }

    /// The bound this node inherits: its parent's LP optimum (infinite at the root).
    fn bound(&self) -> f64 {
        self.parent.map_or(f64::INFINITY, |(bound, ..)| bound)
    }

    /// The values of the first `n` variables (the columns).
    fn column_values(&self, n: usize) -> Vec<f64> {
        let mut x: Vec<f64> = (0..n)
            .map(|k| {
                if self.at_upper[k] {
                    self.upper[k]
                } else {
                    self.lower[k]
                }
            })
            .collect();
        for (r, &k) in self.basis.iter().enumerate() {
            if k < n {
                x[k] = self.beta[r];
            }
        }
        x
    }

    /// `c'x` at the node's values: for a dual feasible basis, an upper bound on the node's LP.
    fn objective(&self, cost: &[f64]) -> f64 {
        self.column_values(cost.len())
            .iter()
            .zip(cost)
            .map(|(x, c)| x * c)
            .sum()
    }

    /// The row whose basic variable lies farthest outside its bounds, and whether below.
    fn leaving(&self) -> Option<(usize, bool)> {
        let mut best: Option<(usize, bool, f64)> = None;
        for (r, &k) in self.basis.iter().enumerate() {
            let below = self.lower[k] - self.beta[r];
            let above = self.beta[r] - self.upper[k];
            let (by, is_below) = if below > above {
                (below, true)
            } else {
                (above, false)
            };
            if by > FEASIBILITY_TOL && best.is_none_or(|b| by > b.2) {
                best = Some((r, is_below, by));
            }
        }
        best.map(|(r, below, _)| (r, below))
    }

    /// The entering variable for row r (the dual ratio test), or `None`: the node is infeasible.
    /// The least `|d_k / alpha_k|` keeps every reduced cost's sign; ties go to the larger
    /// `|alpha_k|`, then the lower index.
    fn entering(&self, r: usize, below: bool) -> Option<usize> {
        let row = &self.tableau[r * self.width..(r + 1) * self.width];
        let mut best: Option<(usize, f64, f64)> = None;
        for (k, &alpha) in row.iter().enumerate() {
            if self.is_basic[k] || self.lower[k] == self.upper[k] || alpha.abs() <= PIVOT_TOL {
                continue;
            }
            // Below: the basic variable must rise, so a variable at its lower bound needs
            // alpha < 0 and one at its upper bound alpha > 0; above, the reverse.
            if (alpha < 0.0) != (below != self.at_upper[k]) {
                continue;
            }
            let ratio = self.reduced[k].abs() / alpha.abs();
            let better = best.is_none_or(|(_, br, ba)| {
                ratio < br - 1e-12 || (ratio <= br + 1e-12 && alpha.abs() > ba)
            });
            if better {
                best = Some((k, ratio, alpha.abs()));
            }
        }
        best.map(|(k, _, _)| k)
    }

    /// Pivots variable `k` into row r, whose basic variable leaves at the bound it violated.
    fn pivot(&mut self, r: usize, k: usize, below: bool) {
        let w = self.width;
        let leaving = self.basis[r];
        let target = if below {
            self.lower[leaving]
        } else {
            self.upper[leaving]
        };
        let alpha = self.tableau[r * w + k];
        let step = (self.beta[r] - target) / alpha;
        let entering_value = if self.at_upper[k] {
            self.upper[k]
        } else {
            self.lower[k]
        };
        for i in 0..self.m {
            self.beta[i] -= self.tableau[i * w + k] * step;
        }
        self.beta[r] = entering_value + step;
        let pivot_row: Vec<f64> = self.tableau[r * w..(r + 1) * w]
            .iter()
            .map(|v| v / alpha)
            .collect();
        for i in 0..self.m {
            if i == r {
                continue;
            }
            let factor = self.tableau[i * w + k];
            if factor != 0.0 {
                let row = &mut self.tableau[i * w..(i + 1) * w];
                for (x, p) in row.iter_mut().zip(&pivot_row) {
                    *x -= factor * p;
                }
                row[k] = 0.0;
            }
        }
        let dk = self.reduced[k];
        for (d, p) in self.reduced.iter_mut().zip(&pivot_row) {
            *d -= dk * p;
        }
        self.reduced[k] = 0.0;
        self.tableau[r * w..(r + 1) * w].copy_from_slice(&pivot_row);
        self.tableau[r * w + k] = 1.0;
        self.basis[r] = k;
        self.is_basic[k] = true;
        self.is_basic[leaving] = false;
        self.at_upper[leaving] = !below;
    }

    /// The dual simplex from a dual feasible basis, stopped early once the bound reaches
    /// `cutoff`.
    fn solve(&mut self, cost: &[f64], cutoff: f64) -> Result<LpEnd, Limit> {
        for _ in 0..PIVOT_LIMIT {
            let Some((r, below)) = self.leaving() else {
                return Ok(LpEnd::Optimal);
            };
            if self.objective(cost) <= cutoff {
                return Ok(LpEnd::Cut);
            }
            let Some(k) = self.entering(r, below) else {
                return Ok(LpEnd::Infeasible);
            };
            self.pivot(r, k, below);
        }
        Err(Limit::Pivots)
    }
}

/// The incumbent: the best integer point found and its objective.
struct Incumbent {
    x: Option<Vec<u32>>,
    value: f64,
}

impl Incumbent {
    /// The bound a node must beat: the incumbent's value plus a relative 1e-12.
    fn cutoff(&self) -> f64 {
        if self.x.is_some() {
            self.value + 1e-12 * self.value.abs().max(f64::MIN_POSITIVE)
        } else {
            f64::NEG_INFINITY
        }
    }

    /// Keeps `x` if it satisfies every row of `p` exactly and beats the incumbent.
    fn offer(&mut self, p: &IntegerProgram, x: Vec<u32>) {
        let value: f64 = x.iter().zip(&p.cost).map(|(&v, c)| f64::from(v) * c).sum();
        if self.x.is_some() && value <= self.value {
            return;
        }
        let holds = (0..p.rows).all(|i| {
            let used: f64 = (0..p.columns)
                .map(|j| p.a[i * p.columns + j] * f64::from(x[j]))
                .sum();
            used <= p.rhs[i] && (!p.equal[i] || used >= p.rhs[i])
        });
        if holds {
            self.value = value;
            self.x = Some(x);
        }
    }
}

/// Pseudocosts (Bénichou et al., 1971): per column and direction, the mean fall of the LP bound
/// per unit that branching on it has cost so far, starting at the column's cost.
struct PseudoCosts {
    /// `sum[2 j + up]`, `count[2 j + up]`.
    sum: Vec<f64>,
    count: Vec<u32>,
    initial: Vec<f64>,
}

impl PseudoCosts {
    fn new(cost: &[f64]) -> PseudoCosts {
        PseudoCosts {
            sum: vec![0.0; 2 * cost.len()],
            count: vec![0; 2 * cost.len()],
            initial: cost.iter().map(|c| c.abs() + 1e-6).collect(),
        }
    }

    fn estimate(&self, j: usize, up: bool) -> f64 {
        let i = 2 * j + usize::from(up);
        if self.count[i] > 0 {
            self.sum[i] / f64::from(self.count[i])
        } else {
            self.initial[j]
        }
    }

    fn record(&mut self, j: usize, up: bool, fall_per_unit: f64) {
        let i = 2 * j + usize::from(up);
        self.sum[i] += fall_per_unit.max(0.0);
        self.count[i] += 1;
    }

    /// The fractional column with the best score `max(down, 1e-6) * max(up, 1e-6)`, each side
    /// its estimated fall times its distance; the lowest index among equals.
    fn branching_column(&self, x: &[f64]) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for (j, &v) in x.iter().enumerate() {
            let down = v - v.floor();
            let up = v.ceil() - v;
            if down.min(up) <= INTEGRALITY_TOL {
                continue;
            }
            let score = (self.estimate(j, false) * down).max(1e-6)
                * (self.estimate(j, true) * up).max(1e-6);
            if best.is_none_or(|(_, b)| score > b) {
                best = Some((j, score));
            }
        }
        best.map(|(j, _)| j)
    }
}

/// Rounds values that are integral within the tolerance to integers in `[0, u]`.
fn rounded(x: &[f64], upper: &[f64], down: bool) -> Vec<u32> {
    x.iter()
        .zip(upper)
        .map(|(&v, &u)| {
            let v = if down {
                (v + INTEGRALITY_TOL).floor()
            } else {
                v.round()
            };
            v.clamp(0.0, u) as u32
        })
        .collect()
}

/// Solves `p` exactly: the optimal integer point, or `None` when there is none.
///
/// # Errors
///
/// [`Limit`]: the search passed [`NODE_LIMIT`] nodes, [`OPEN_LIMIT`] entries of open tableaux,
/// or a node's LP its pivot limit.
pub(crate) fn maximize(p: &IntegerProgram) -> Result<Option<Vec<u32>>, Limit> {
    let n = p.columns;
    let mut incumbent = Incumbent {
        x: None,
        value: f64::NEG_INFINITY,
    };
    let Some(root) = Node::root(p)? else {
        return Ok(None);
    };
    let mut costs = PseudoCosts::new(&p.cost);
    let mut open = vec![root];
    let mut nodes = 0usize;
    while let Some(mut node) = open.pop() {
        nodes += 1;
        if nodes > NODE_LIMIT {
            return Err(Limit::Nodes);
        }
        if node.bound() <= incumbent.cutoff() {
            continue;
        }
        match node.solve(&p.cost, incumbent.cutoff())? {
            LpEnd::Infeasible | LpEnd::Cut => continue,
            LpEnd::Optimal => {}
        }
        let bound = node.objective(&p.cost);
        if let Some((parent, j, up, distance)) = node.parent {
            costs.record(j, up, (parent - bound) / distance);
        }
        if bound <= incumbent.cutoff() {
            continue;
        }
        if incumbent.x.is_some() {
            node.fix_by_reduced_cost(n, bound - incumbent.value);
        }
        let x = node.column_values(n);
        let Some(j) = costs.branching_column(&x) else {
            incumbent.offer(p, rounded(&x, &p.upper, false));
            continue;
        };
        incumbent.offer(p, rounded(&x, &p.upper, true));
        let v = x[j];
        let (to_down, to_up) = (v - v.floor(), v.ceil() - v);
        let mut down = node.clone();
        down.upper[j] = v.floor();
        down.parent = Some((bound, j, false, to_down));
        let mut up = node;
        up.lower[j] = v.ceil();
        up.parent = Some((bound, j, true, to_up));
        // The child of the smaller estimated fall is taken next.
        if costs.estimate(j, false) * to_down > costs.estimate(j, true) * to_up {
            open.push(down);
            open.push(up);
        } else {
            open.push(up);
            open.push(down);
        }
        if open.len() * (p.rows * (p.rows + n)) > OPEN_LIMIT {
            return Err(Limit::OpenMemory);
        }
    }
    Ok(incumbent.x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn program(
        a: Vec<Vec<f64>>,
        rhs: Vec<f64>,
        equal: Vec<bool>,
        cost: Vec<f64>,
        upper: Vec<f64>,
    ) -> IntegerProgram {
        IntegerProgram {
            rows: a.len(),
            columns: cost.len(),
            a: a.concat(),
            rhs,
            equal,
            cost,
            upper,
        }
    }

    /// The best objective over every integer point in the bounds that keeps the rows, and
    /// whether one does.
    fn brute_force(p: &IntegerProgram) -> Option<f64> {
        let mut x = vec![0u32; p.columns];
        let mut best: Option<f64> = None;
        loop {
            let holds = (0..p.rows).all(|i| {
                let used: f64 = (0..p.columns)
                    .map(|j| p.a[i * p.columns + j] * f64::from(x[j]))
                    .sum();
                used <= p.rhs[i] && (!p.equal[i] || used >= p.rhs[i])
            });
            if holds {
                let value: f64 = x.iter().zip(&p.cost).map(|(&v, c)| f64::from(v) * c).sum();
                best = Some(best.map_or(value, |b| b.max(value)));
            }
            // The next point, as an odometer.
            let Some(j) = (0..p.columns).find(|&j| f64::from(x[j]) < p.upper[j]) else {
                return best;
            };
            x[j] += 1;
            x[..j].fill(0);
        }
    }

    /// Programs of 1-4 columns and 1-3 rows with coefficients 0-3, right-hand sides 0-8, one row
    /// in three an equality, bounds 0-3 and costs over `spread` decades (some 0).
    fn small(spread: f64) -> impl Strategy<Value = IntegerProgram> {
        (1usize..=4, 1usize..=3).prop_flat_map(move |(n, m)| {
            (
                prop::collection::vec(prop::collection::vec(0u8..=3, n), m),
                prop::collection::vec((0u8..=8, prop::bool::weighted(0.33)), m),
                prop::collection::vec((0.0f64..=1.0, prop::bool::weighted(0.1), 0u8..=3), n),
            )
                .prop_map(move |(a, rows, cols)| {
                    program(
                        a.iter()
                            .map(|r| r.iter().map(|&v| f64::from(v)).collect())
                            .collect(),
                        rows.iter().map(|r| f64::from(r.0)).collect(),
                        rows.iter().map(|r| r.1).collect(),
                        cols.iter()
                            .map(|&(u, zero, _)| {
                                if zero {
                                    0.0
                                } else {
                                    10f64.powf(spread * (u - 0.5))
                                }
                            })
                            .collect(),
                        cols.iter().map(|c| f64::from(c.2)).collect(),
                    )
                })
        })
    }

    fn agrees(p: &IntegerProgram) -> Result<(), TestCaseError> {
        let found = maximize(p).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        let largest = p.cost.iter().fold(0.0, |m: f64, c| m.max(c.abs()));
        match (found, brute_force(p)) {
            (None, None) => {}
            (Some(x), Some(best)) => {
                let value: f64 = x.iter().zip(&p.cost).map(|(&v, c)| f64::from(v) * c).sum();
                prop_assert!(
                    (value - best).abs() <= 1e-9 * best.abs().max(largest),
                    "found {x:?} worth {value}, brute force {best}, program {p:?}"
                );
            }
            (a, b) => prop_assert!(false, "found {a:?}, brute force {b:?}, program {p:?}"),
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Costs within two decades: the optimum is brute force's, or neither has a point.
        #[test]
        fn small_programs_match_brute_force(p in small(2.0)) {
            agrees(&p)?;
        }

        /// Costs over twelve decades.
        #[test]
        fn small_programs_match_brute_force_spread_costs(p in small(12.0)) {
            agrees(&p)?;
        }
    }

    /// A knapsack whose LP optimum is fractional, worked by hand: maximize 5x + 3y with
    /// 3x + 2y <= 4 and x, y <= 2. The LP takes x = 4/3 (6.67); the integer points are
    /// y = 2 (6), x = 1 (5) and y = 1 (3).
    #[test]
    fn a_fractional_lp_branches_to_the_integer_optimum() {
        let p = program(
            vec![vec![3.0, 2.0]],
            vec![4.0],
            vec![false],
            vec![5.0, 3.0],
            vec![2.0, 2.0],
        );
        assert_eq!(maximize(&p), Ok(Some(vec![0, 2])));
    }

    /// An equality row no integer point meets: 2x = 3.
    #[test]
    fn an_equality_without_an_integer_point_is_infeasible() {
        let p = program(vec![vec![2.0]], vec![3.0], vec![true], vec![1.0], vec![5.0]);
        assert_eq!(maximize(&p), Ok(None));
    }

    /// An equality row forces a column of zero value in: x + y = 2, y <= 1, x worthless.
    #[test]
    fn an_equality_forces_a_worthless_column() {
        let p = program(
            vec![vec![1.0, 1.0]],
            vec![2.0],
            vec![true],
            vec![0.0, 1.0],
            vec![2.0, 1.0],
        );
        assert_eq!(maximize(&p), Ok(Some(vec![1, 1])));
    }
}
