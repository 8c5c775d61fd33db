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
//! **Solver.** [`microlp`], a pure-Rust simplex with branch and bound (no C++ build), with
//! `mip_gap` 0. The objective is scaled by its largest column value before the solve. The
//! answer is then checked here, in exact integer arithmetic for the rows: every count is an
//! integer within its rows' bounds, and the value is recomputed from the columns. The tests
//! compare it with brute force over every assignment of counts, and with HiGHS where the
//! `highs` feature is on.
//!
//! Complexity: branch and bound is exponential in the worst case; each node is a dual simplex
//! step on a tableau of `|classes| + |types|` rows.

use thiserror::Error;

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

    /// The integer program through microlp: the count of each column, or `None` when it is
    /// infeasible.
    fn branch_and_bound(&self) -> Result<Option<Vec<u32>>, PairedError> {
        use microlp::{ComparisonOp, Error, OptimizationDirection, Problem};
        let scale = self.columns.iter().map(|c| c.value).fold(0.0, f64::max);
        let scale = if scale > 0.0 { scale } else { 1.0 };
        let mut problem = Problem::new(OptimizationDirection::Maximize);
        let vars: Vec<microlp::Variable> = self
            .columns
            .iter()
            .map(|col| {
                let bound = i32::try_from(self.column_bound(col)).unwrap_or(i32::MAX);
                problem.add_integer_var(col.value / scale, (0, bound))
            })
            .collect();
        let mut class_rows: Vec<Vec<(microlp::Variable, f64)>> =
            vec![Vec::new(); self.classes.len()];
        let mut type_rows: Vec<Vec<(microlp::Variable, f64)>> = vec![Vec::new(); self.gpus.len()];
        for (col, &var) in self.columns.iter().zip(&vars) {
            for c in [Some(col.first), col.second].into_iter().flatten() {
                if !class_rows[c].iter().any(|&(v, _)| v == var) {
                    class_rows[c].push((var, f64::from(Self::uses(col, c))));
                }
            }
            type_rows[col.gpu_type].push((var, 1.0));
        }
        for (row, class) in class_rows.iter().zip(&self.classes) {
            if row.is_empty() {
                continue;
            }
            let size = f64::from(class.size);
            let op = if class.all_run {
                ComparisonOp::Eq
            } else {
                ComparisonOp::Le
            };
            problem.add_constraint(row.as_slice(), op, size);
        }
        for (row, &count) in type_rows.iter().zip(&self.gpus) {
            if !row.is_empty() {
                problem.add_constraint(row.as_slice(), ComparisonOp::Le, f64::from(count));
            }
        }
        let outcome = match problem.solve() {
            Ok(outcome) => outcome,
            Err(Error::Infeasible) => return Ok(None),
            Err(e) => {
                return Err(PairedError::Solver {
                    reason: e.to_string(),
                });
            }
        };
        let Ok(solution) = outcome.into_solution() else {
            return Err(PairedError::Solver {
                reason: "stopped without a solution".to_string(),
            });
        };
        if solution.status() != microlp::SolutionStatus::Optimal {
            return Err(PairedError::Solver {
                reason: "stopped without a proof of optimality".to_string(),
            });
        }
        Ok(Some(
            vars.iter()
                .map(|&v| solution.var_value(v).round().max(0.0) as u32)
                .collect(),
        ))
    }
}
