//! The paired program: a round of single-GPU jobs with pairs of jobs as items, solved exactly.
//!
//! The round problem ([`crate::RoundProblem`]) gives each job one value per slot, so a half GPU
//! is priced as if its partner were known. A paired round removes that guess: a GPU shared by two
//! jobs is one item, worth both jobs' throughputs beside each other, so the plan is what runs.
//!
//! **The program.** Interchangeable jobs form classes c of `n_c` jobs; GPU types k have `C_k`
//! GPUs. A column is a GPU of type k holding one job of class c (value `v(c,k)`) or one job of
//! c and one of d (value `v(c|d,k) + v(d|c,k)`; d = c is a pair of one class). With `x_col` the
//! number of GPUs that take a column,
//!
//! ```text
//! maximize   sum_col value(col) x_col
//! subject to sum_col uses(col, c) x_col <= n_c      (= n_c for a class whose jobs must all run)
//!            sum_{col on k} x_col <= C_k
//!            x_col >= 0 integer
//! ```
//!
//! with `uses(col, c)` = 2 for a pair of class c with itself, 1 for any other column holding c,
//! 0 otherwise. The caller builds only the columns whose throughputs meet the classes' floors.
//! It contains a maximum-weight matching with budgets, so it is solved by branch and bound over
//! its LP relaxation. The program has `|classes| + |types|` rows and, with P types that allow
//! pairs, up to `K C + P C (C + 1) / 2` columns.
//!
//! **Solver.** The crate's own branch and bound (`branch_bound`: a dense bounded dual simplex,
//! pseudocost branching, reduced-cost fixing), after dropping the pair columns that a solo
//! column of the same GPU dominates. The objective is scaled by the largest value of a column
//! that can take a GPU; a column worth less than 1e-11 of it counts as worth nothing, and a node
//! is cut unless its bound beats the incumbent by a relative 1e-12. The answer is then checked
//! here, in exact integer arithmetic for the rows: every count is an integer within its rows'
//! bounds, and the value is recomputed from the columns. The tests compare it with brute force
//! over every assignment of counts (values over up to 200 decades) and with HiGHS where the
//! `highs` feature is on.
//!
//! Complexity: branch and bound is exponential in the worst case, and stops at 100,000 nodes,
//! 256 MiB of open nodes or 100,000 pivots in a node ([`PairedError::SearchLimit`]); a node is
//! a few simplex pivots of O((|classes| + |types|) * columns) each.

use thiserror::Error;

use super::branch_bound::{self, IntegerProgram, Limit};

/// A class of interchangeable jobs of a paired program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairedClass {
    /// How many jobs it holds.
    pub size: u32,
    /// Whether every one of its jobs must run (a class of forced jobs).
    pub all_run: bool,
}

/// A column of a paired program: a GPU of `gpu_type` holding one job of `first`, or one job of
/// `first` and one of `second`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedColumn {
    /// Index of the GPU type.
    pub gpu_type: usize,
    /// Index of the class of the first job.
    pub first: usize,
    /// Index of the class of the second job, for a shared GPU.
    pub second: Option<usize>,
    /// The column's value in the objective (finite, >= 0).
    pub value: f64,
}

/// A paired program: classes, GPUs per type and columns (module docs).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PairedProgram {
    /// The classes of jobs.
    pub classes: Vec<PairedClass>,
    /// `gpus[k]`: the GPUs of type k.
    pub gpus: Vec<u32>,
    /// The columns.
    pub columns: Vec<PairedColumn>,
}

/// The optimum of a paired program.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedAnswer {
    /// `counts[i]`: how many GPUs take column i.
    pub counts: Vec<u32>,
    /// The objective, `sum value(col) * counts[col]`, recomputed from the columns.
    pub value: f64,
}

/// Why a paired program was not solved.
#[derive(Debug, Error, PartialEq)]
#[non_exhaustive]
pub enum PairedError {
    /// A column names a class or a GPU type the program does not have.
    #[error("columns[{column}] names {what} {index}, but the program has {len}")]
    OutOfRange {
        /// The column's index.
        column: usize,
        /// `"class"` or `"gpu type"`.
        what: &'static str,
        /// The index it names.
        index: usize,
        /// How many there are.
        len: usize,
    },
    /// A column's value is negative or not finite.
    #[error("columns[{column}].value must be finite and >= 0 (got {value})")]
    Value {
        /// The column's index.
        column: usize,
        /// Its value.
        value: f64,
    },
    /// The branch and bound reached a limit without proving an optimum: 100,000 nodes, 256 MiB
    /// of open nodes, or 100,000 pivots in one node's LP (a cycling simplex).
    #[error("the paired program's branch and bound passed its limit of {limit}")]
    SearchLimit {
        /// The limit passed.
        limit: &'static str,
    },
    /// The LP solver failed, or its answer did not pass the check of the module docs.
    #[error("the paired program was not solved: {reason}")]
    Solver {
        /// What failed.
        reason: String,
    },
}

impl PairedProgram {
    /// Checks that every column names a class and a GPU type of the program and has a finite,
    /// non-negative value.
    ///
    /// # Errors
    ///
    /// [`PairedError::OutOfRange`] or [`PairedError::Value`], naming the column.
    pub fn validate(&self) -> Result<(), PairedError> {
        for (i, col) in self.columns.iter().enumerate() {
            let range = |what, index, len| {
                (index >= len).then_some(PairedError::OutOfRange {
                    column: i,
                    what,
                    index,
                    len,
                })
            };
            let classes = self.classes.len();
            if let Some(e) = range("gpu type", col.gpu_type, self.gpus.len())
                .or_else(|| range("class", col.first, classes))
                .or_else(|| col.second.and_then(|d| range("class", d, classes)))
            {
                return Err(e);
            }
            if !col.value.is_finite() || col.value < 0.0 {
                return Err(PairedError::Value {
                    column: i,
                    value: col.value,
                });
            }
        }
        Ok(())
    }

    /// How many jobs of class `c` column `col` holds.
    fn uses(col: &PairedColumn, c: usize) -> u32 {
        u32::from(col.first == c) + u32::from(col.second == Some(c))
    }

    /// The most GPUs that can take column `col`: its type's GPUs, and its classes' sizes.
    fn column_bound(&self, col: &PairedColumn) -> u32 {
        let mut bound = self.gpus[col.gpu_type];
        for c in [Some(col.first), col.second].into_iter().flatten() {
            bound = bound.min(self.classes[c].size / Self::uses(col, c));
        }
        bound
    }

    /// Solves the program exactly. `Ok(None)`: the classes whose jobs must all run cannot.
    ///
    /// # Errors
    ///
    /// As [`PairedProgram::validate`], and [`PairedError::Solver`] when the LP solver fails.
    pub fn solve(&self) -> Result<Option<PairedAnswer>, PairedError> {
        self.validate()?;
        if self.obviously_infeasible() {
            return Ok(None);
        }
        let kept = self.undominated();
        let reduced = PairedProgram {
            classes: self.classes.clone(),
            gpus: self.gpus.clone(),
            columns: kept.iter().map(|&i| self.columns[i]).collect(),
        };
        let Some(kept_counts) = reduced.branch_and_bound()? else {
            return Ok(None);
        };
        let mut counts = vec![0; self.columns.len()];
        for (&i, n) in kept.iter().zip(kept_counts) {
            counts[i] = n;
        }
        self.check(&counts)?;
        Ok(Some(PairedAnswer {
            value: self.value_of(&counts),
            counts,
        }))
    }

    /// The columns that may take a GPU in some optimum: a pair of c and d on type k worth no more
    /// than c alone on k is dropped when d's jobs need not all run (the solo column uses the
    /// same GPU and one job fewer, so it replaces the pair in any solution at no loss), and
    /// likewise with c and d swapped. On sts's rounds, where many measured pairs are worth less
    /// than their faster job alone, this removes most pair columns.
    fn undominated(&self) -> Vec<usize> {
        let mut solo: Vec<Vec<f64>> =
            vec![vec![f64::NEG_INFINITY; self.classes.len()]; self.gpus.len()];
        for col in &self.columns {
            if col.second.is_none() {
                let v = &mut solo[col.gpu_type][col.first];
                *v = v.max(col.value);
            }
        }
        let dominated = |col: &PairedColumn| {
            col.second.is_some_and(|d| {
                let by = |alone: usize, freed: usize| {
                    !self.classes[freed].all_run && col.value <= solo[col.gpu_type][alone]
                };
                by(col.first, d) || by(d, col.first)
            })
        };
        (0..self.columns.len())
            .filter(|&i| !dominated(&self.columns[i]))
            .collect()
    }

    /// A class whose jobs must all run, with fewer places in the columns than jobs.
    fn obviously_infeasible(&self) -> bool {
        self.classes.iter().enumerate().any(|(c, class)| {
            class.all_run
                && class.size > 0
                && !self
                    .columns
                    .iter()
                    .any(|col| Self::uses(col, c) > 0 && self.column_bound(col) > 0)
        })
    }

    /// The objective of `counts`.
    fn value_of(&self, counts: &[u32]) -> f64 {
        self.columns
            .iter()
            .zip(counts)
            .map(|(col, &n)| col.value * f64::from(n))
            .sum()
    }

    /// Every row of the program holds for `counts`, in integers.
    fn check(&self, counts: &[u32]) -> Result<(), PairedError> {
        let mut jobs = vec![0u64; self.classes.len()];
        let mut gpus = vec![0u64; self.gpus.len()];
        for (col, &n) in self.columns.iter().zip(counts) {
            gpus[col.gpu_type] += u64::from(n);
            jobs[col.first] += u64::from(n);
            if let Some(d) = col.second {
                jobs[d] += u64::from(n);
            }
        }
        let fail = |reason: String| Err(PairedError::Solver { reason });
        for (k, (&used, &count)) in gpus.iter().zip(&self.gpus).enumerate() {
            if used > u64::from(count) {
                return fail(format!("gpu type {k}: {used} GPUs used of {count}"));
            }
        }
        for (c, (&placed, class)) in jobs.iter().zip(&self.classes).enumerate() {
            let size = u64::from(class.size);
            if placed > size || (class.all_run && placed < size) {
                return fail(format!("class {c}: {placed} jobs placed of {size}"));
            }
        }
        Ok(())
    }

    /// The integer program through [`branch_bound`]: the count of each column, or `None` when
    /// it is infeasible. Rows without columns are left out (a class that must run with no
    /// column is caught before, by `obviously_infeasible`); the objective is scaled by the
    /// largest value of a column that can take a GPU.
    fn branch_and_bound(&self) -> Result<Option<Vec<u32>>, PairedError> {
        let scale = self
            .columns
            .iter()
            .filter(|c| self.column_bound(c) > 0)
            .map(|c| c.value)
            .fold(0.0, f64::max);
        let scale = if scale > 0.0 { scale } else { 1.0 };
        let (nc, n) = (self.classes.len(), self.columns.len());
        // Rows: classes, then GPU types; kept where some column uses them.
        let mut used = vec![false; nc + self.gpus.len()];
        for col in &self.columns {
            used[col.first] = true;
            if let Some(d) = col.second {
                used[d] = true;
            }
            used[nc + col.gpu_type] = true;
        }
        let rows: Vec<usize> = (0..used.len()).filter(|&i| used[i]).collect();
        let mut row_of = vec![usize::MAX; used.len()];
        for (r, &i) in rows.iter().enumerate() {
            row_of[i] = r;
        }
        let mut a = vec![0.0; rows.len() * n];
        for (j, col) in self.columns.iter().enumerate() {
            for c in [Some(col.first), col.second].into_iter().flatten() {
                a[row_of[c] * n + j] = f64::from(Self::uses(col, c));
            }
            a[row_of[nc + col.gpu_type] * n + j] = 1.0;
        }
        let program = IntegerProgram {
            rows: rows.len(),
            columns: n,
            a,
            rhs: rows
                .iter()
                .map(|&i| {
                    f64::from(if i < nc {
                        self.classes[i].size
                    } else {
                        self.gpus[i - nc]
                    })
                })
                .collect(),
            equal: rows
                .iter()
                .map(|&i| i < nc && self.classes[i].all_run)
                .collect(),
            cost: self.columns.iter().map(|c| c.value / scale).collect(),
            upper: self
                .columns
                .iter()
                .map(|c| f64::from(self.column_bound(c)))
                .collect(),
        };
        branch_bound::maximize(&program).map_err(|e| match e {
            Limit::Nodes => PairedError::SearchLimit {
                limit: "100,000 nodes",
            },
            Limit::OpenMemory => PairedError::SearchLimit {
                limit: "256 MiB of open nodes",
            },
            Limit::Pivots => PairedError::SearchLimit {
                limit: "100,000 pivots in one node's LP",
            },
        })
    }
}
