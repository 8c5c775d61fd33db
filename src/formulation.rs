//! From an instance to the round problem every solver works on (MODEL.md sections 3 and 4).
//!
//! This is the one place where shares, equal-share throughputs, normalized service, efficiency
//! values and the fairness minimum are computed, so that every solver, the verifier and the
//! round mechanism agree to the last bit. Comparisons follow MODEL.md literally: exact
//! floating-point comparisons, computed in the order the model writes them.

use crate::instance::{Instance, JobOption};

/// How the fairness constraint treats a job this round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JobClass {
    /// F_j = 0: no fairness bound; never forced, may idle.
    Unbounded,
    /// m_j <= 0: may run or idle.
    Optional,
    /// m_j > 0 and F_j > 0: must run an admissible option.
    Forced {
        /// No option reaches m_j; the options of largest sigma are admissible instead.
        cannot_catch_up: bool,
    },
}

/// An admissible option of a job in the round problem.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundOption {
    /// Index into the job's [`Job::options`](crate::Job::options).
    pub option: usize,
    /// GPU type k.
    pub gpu: usize,
    /// Slot size s.
    pub slot: u32,
    /// Units used, d_j * s.
    pub units: u64,
    /// Normalized service sigma = theta / F_j (infinite when F_j = 0).
    pub sigma: f64,
    /// Efficiency value v = w_j * theta / theta_max_j, computed as w_j * (theta / theta_max_j)
    /// so that it is at most w_j and never overflows.
    pub value: f64,
}

/// One job as the solvers see it.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundJob {
    /// phi_j = w_j / sum of w.
    pub share: f64,
    /// F_j, the equal-share throughput.
    pub fair_rate: f64,
    /// theta_max_j (0 when the job has no option).
    pub max_throughput: f64,
    /// m_j = (D_j + lambda) - Delta.
    pub minimum: f64,
    /// Forced, optional or unbounded.
    pub class: JobClass,
    /// The admissible options, in the order of the job's options.
    pub options: Vec<RoundOption>,
}

impl RoundJob {
    /// Whether the job may be left idle.
    pub fn may_idle(&self) -> bool {
        !matches!(self.class, JobClass::Forced { .. })
    }
}

/// The per-round problem: a multiple-choice knapsack with one capacity per GPU type, each option
/// using units of exactly one type.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundProblem {
    /// GPU type names, for messages.
    pub type_names: Vec<String>,
    /// Job ids, for messages.
    pub job_ids: Vec<String>,
    /// C_k per GPU type.
    pub capacity: Vec<u64>,
    /// The jobs, in instance order.
    pub jobs: Vec<RoundJob>,
}

/// phi_j for every job, and F_j (MODEL.md section 3).
pub fn fair_rate(instance: &Instance, job: usize, share: f64) -> f64 {
    fair_rate_in(instance, job, share, &mut FairScratch::default())
}

/// The vectors of [`fair_rate`], kept from one job to the next by [`RoundProblem::new`]. With
/// the admissible options filtered in place, the formulation of a 10,000-job Gavel round in a
/// fresh process went from 2.2 to 1.7 ms (of a 22 ms solve, where `stats.seconds` counts it).
#[derive(Default)]
struct FairScratch {
    whole: Vec<f64>,
    x: Vec<f64>,
    order: Vec<usize>,
}

/// [`fair_rate`] with its vectors in `scratch`.
fn fair_rate_in(instance: &Instance, job: usize, share: f64, scratch: &mut FairScratch) -> f64 {
    let j = &instance.jobs()[job];
    let types = instance.gpu_types();
    let FairScratch { whole, x, order } = scratch;
    // Whole-GPU throughput per type (0 where the type has no fitting whole-GPU option).
    whole.clear();
    whole.extend(types.iter().enumerate().map(|(k, g)| {
        j.options()
            .iter()
            .find(|o| o.gpu == k && o.slot == g.units())
            .map_or(0.0, |o| o.throughput)
    }));
    x.clear();
    x.extend(
        types
            .iter()
            .map(|g| share * f64::from(g.count()) / f64::from(j.workers())),
    );
    let total: f64 = x.iter().sum();
    if total > 1.0 {
        // Fastest types first (largest whole-GPU throughput; ties to the type listed first),
        // until the fractions sum to 1. A type with no whole-GPU entry has throughput 0, so it
        // comes last and adds nothing whichever fraction it keeps.
        order.clear();
        order.extend(0..types.len());
        order.sort_by(|&a, &b| whole[b].total_cmp(&whole[a]).then(a.cmp(&b)));
        let mut left = 1.0_f64;
        for &k in order.iter() {
            let take = x[k].min(left);
            x[k] = take;
            left -= take;
        }
    }
    x.iter().zip(whole.iter()).map(|(xk, t)| xk * t).sum()
}

/// The shares phi_j of all jobs: w_j / (sum of all weights, in job order).
pub fn shares(instance: &Instance) -> Vec<f64> {
    let total: f64 = instance.jobs().iter().map(|j| j.weight()).sum();
    instance.jobs().iter().map(|j| j.weight() / total).collect()
}

/// Normalized service of a throughput for a job with equal-share rate `fair_rate`.
pub fn sigma(throughput: f64, fair_rate: f64) -> f64 {
    throughput / fair_rate
}

impl RoundProblem {
    /// Job j's id for messages (`#j` when the problem was built without ids).
    pub fn job_name(&self, j: usize) -> String {
        self.job_ids
            .get(j)
            .cloned()
            .unwrap_or_else(|| format!("#{j}"))
    }

    /// GPU type k's name for messages (`#k` when the problem was built without names).
    pub fn type_name(&self, k: usize) -> String {
        self.type_names
            .get(k)
            .cloned()
            .unwrap_or_else(|| format!("#{k}"))
    }

    /// Derives the round problem from a validated instance. O(n * (|O| + K log K)).
    pub fn new(instance: &Instance) -> RoundProblem {
        let fairness = instance.fairness();
        let capacity = instance.gpu_types().iter().map(|g| g.capacity()).collect();
        let shares = shares(instance);
        let mut scratch = FairScratch::default();
        let jobs = instance
            .jobs()
            .iter()
            .enumerate()
            .map(|(jx, job)| {
                let share = shares[jx];
                let fair_rate = fair_rate_in(instance, jx, share, &mut scratch);
                let max_throughput = job
                    .options()
                    .iter()
                    .map(|o| o.throughput)
                    .fold(0.0, f64::max);
                let minimum = (job.deficit() + fairness.lambda) - fairness.max_debt;
                let all = |o: &JobOption| sigma(o.throughput, fair_rate);
                let mk = |(i, o): (usize, &JobOption)| RoundOption {
                    option: i,
                    gpu: o.gpu,
                    slot: o.slot,
                    units: o.units,
                    sigma: all(o),
                    // theta / theta_max <= 1 first, so that v <= w_j never overflows.
                    value: job.weight() * (o.throughput / max_throughput),
                };
                let mut every: Vec<RoundOption> =
                    job.options().iter().enumerate().map(mk).collect();
                let (class, options) = if fair_rate > 0.0 && minimum > 0.0 {
                    // The options that reach the minimum, or else those of the most service,
                    // kept in place (one vector a job).
                    let cannot_catch_up = !every.iter().any(|o| o.sigma >= minimum);
                    if cannot_catch_up {
                        let best = every
                            .iter()
                            .map(|o| o.sigma)
                            .fold(f64::NEG_INFINITY, f64::max);
                        every.retain(|o| o.sigma == best);
                    } else {
                        every.retain(|o| o.sigma >= minimum);
                    }
                    (JobClass::Forced { cannot_catch_up }, every)
                } else if fair_rate > 0.0 {
                    (JobClass::Optional, every)
                } else {
                    (JobClass::Unbounded, every)
                };
                RoundJob {
                    share,
                    fair_rate,
                    max_throughput,
                    minimum,
                    class,
                    options,
                }
            })
            .collect();
        RoundProblem {
            type_names: instance
                .gpu_types()
                .iter()
                .map(|g| g.name().to_string())
                .collect(),
            job_ids: instance.jobs().iter().map(|j| j.id().to_string()).collect(),
            capacity,
            jobs,
        }
    }

    /// Prices the fairness service of the forced jobs: every admissible option of a forced job
    /// `j` with `prices[j] > 0` is worth `v + prices[j] * sigma` instead of `v`. Optional and
    /// unbounded jobs keep `v` (a missing price counts as 0). A forced job runs whatever its
    /// values; the price only changes which admissible option it takes against the other jobs'
    /// use of the capacity (docs/rounds.md, "Pricing the service of forced jobs"). The problem
    /// stays a multiple-choice knapsack with values >= 0: every solver solves it as it is.
    /// O(sum_j |O_j|).
    pub fn price_forced(&mut self, prices: &[f64]) {
        for (job, &price) in self.jobs.iter_mut().zip(prices) {
            // A NaN price is no price (the scheduler refuses NaN before it gets here).
            if !job.may_idle() && price > 0.0 {
                for o in &mut job.options {
                    o.value += price * o.sigma;
                }
            }
        }
    }

    /// Number of GPU types.
    pub fn types(&self) -> usize {
        self.capacity.len()
    }

    /// Indices of the forced jobs.
    pub fn forced(&self) -> impl Iterator<Item = usize> + '_ {
        self.jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| !j.may_idle())
            .map(|(i, _)| i)
    }

    /// A Hall-type certificate of infeasibility, if one exists: a set of GPU types T such that the
    /// forced jobs whose admissible options all lie in T need, even each at its smallest option
    /// in T, more units than T holds. Checks every subset of up to 16 types (2^K subsets, O(2^K n)
    /// time). Returns `None` when no such set proves infeasibility (the round may still be
    /// infeasible because of how units split between types).
    pub fn shortage(&self) -> Option<Shortage> {
        let k = self.types();
        if k > 16 {
            return None;
        }
        // For each forced job: bitmask of types it can use and its smallest units per type.
        let forced: Vec<(u32, Vec<u64>)> = self
            .forced()
            .map(|j| {
                let mut mask = 0u32;
                let mut least = vec![u64::MAX; k];
                for o in &self.jobs[j].options {
                    mask |= 1 << o.gpu;
                    least[o.gpu] = least[o.gpu].min(o.units);
                }
                (mask, least)
            })
            .collect();
        let mut best: Option<Shortage> = None;
        for set in 1u32..(1u32 << k) {
            let mut need = 0u64;
            let mut jobs = 0usize;
            for (mask, least) in &forced {
                if mask & !set == 0 {
                    let m = (0..k)
                        .filter(|t| set >> t & 1 == 1)
                        .map(|t| least[t])
                        .min()
                        .unwrap_or(0);
                    need = need.saturating_add(m);
                    jobs += 1;
                }
            }
            let have: u64 = (0..k)
                .filter(|t| set >> t & 1 == 1)
                .map(|t| self.capacity[t])
                .sum();
            if need > have {
                let short = need - have;
                // Prefer the smallest set of types; among equals the largest shortage.
                let better = match &best {
                    None => true,
                    Some(b) => {
                        let bs = b.types.len();
                        let cs = set.count_ones() as usize;
                        cs < bs || (cs == bs && short > b.short)
                    }
                };
                if better {
                    let types: Vec<usize> = (0..k).filter(|t| set >> t & 1 == 1).collect();
                    best = Some(Shortage {
                        type_names: types.iter().map(|&t| self.type_name(t)).collect(),
                        types,
                        jobs,
                        need,
                        have,
                        short,
                    });
                }
            }
        }
        best
    }

    /// Whether the forced jobs can all run at once: each takes one of its admissible options and
    /// the units of every GPU type suffice. `Some(false)` is a certificate of infeasibility that
    /// the fractional ones (the Lagrangian bound, [`RoundProblem::shortage`]) miss, where only the
    /// sizes of the slots keep the forced jobs from fitting: three forced jobs of 48 units on two
    /// types of 72 need 144 units of the 144 there are, but no type holds two of them. `None`
    /// when deciding would take more than `max_work` word operations (below).
    ///
    /// The exact reachability of MODEL.md section 4's dense DP restricted to the forced jobs,
    /// with a bit per vector of units used (a subset-sum DP over K dimensions): every vector
    /// `u <= C` that some choice of the forced jobs' options uses is set, job by job. The set
    /// ends empty exactly when no choice fits. A forced job without options empties it. Bits
    /// of the first type's units are packed 64 to a word, one row of words for each vector of
    /// the other types' units, so a job's option on the first type is a shift of every row and
    /// one on another type an OR of whole rows into rows further on. O(F (|O| + 3) W) word
    /// operations for F forced jobs of at most |O| distinct options, W = ceil((C_1 + 1) / 64)
    /// prod_{k>1} (C_k + 1) words, and 2 W words of memory (`None` past [`MAX_FIT_WORDS`]).
    pub fn forced_fit(&self, max_work: u64) -> Option<bool> {
        let forced: Vec<usize> = self.forced().collect();
        if forced.is_empty() {
            return Some(true);
        }
        // The distinct (type, units) options of each forced job; units past the type's capacity
        // fit nowhere.
        let choices: Vec<Vec<(usize, u64)>> = forced
            .iter()
            .map(|&j| {
                let mut c: Vec<(usize, u64)> = self.jobs[j]
                    .options
                    .iter()
                    .map(|o| (o.gpu, o.units))
                    .filter(|&(k, u)| u <= self.capacity[k])
                    .collect();
                c.sort_unstable();
                c.dedup();
                c
            })
            .collect();
        if choices.iter().any(Vec::is_empty) {
            return Some(false);
        }
        let row_words = self.capacity.first().map(|&c| c / 64 + 1)?;
        // Rows: one per vector of the units of types 1..K; stride[t] rows per unit of type t.
        let mut stride = vec![0u64; self.types()];
        let mut rows = 1u64;
        for (t, &c) in self.capacity.iter().enumerate().skip(1) {
            stride[t] = rows;
            rows = rows.checked_mul(c.checked_add(1)?)?;
        }
        let words = rows.checked_mul(row_words)?;
        // An operation per option and word, and three passes a job over its set: clearing,
        // masking, and looking for a word left.
        let operations: u64 = choices.iter().map(|c| c.len() as u64 + 3).sum();
        if words > MAX_FIT_WORDS || operations.checked_mul(words)? > max_work {
            return None;
        }
        let words = usize::try_from(words).ok()?;
        let row_words = usize::try_from(row_words).ok()?;
        // The first type's units in a row's last word: bits past its capacity are cleared.
        let last_bits = self.capacity[0] % 64 + 1;
        let last_mask = if last_bits == 64 {
            u64::MAX
        } else {
            (1u64 << last_bits) - 1
        };
        let mut set = vec![0u64; words];
        set[0] = 1;
        let mut next = vec![0u64; words];
        for choice in &choices {
            next.iter_mut().for_each(|w| *w = 0);
            for &(t, u) in choice {
                if t == 0 {
                    // Shift every row left by u bits (u <= C_1 < 64 row_words).
                    let (q, b) = ((u / 64) as usize, (u % 64) as u32);
                    for (src, dst) in set
                        .chunks_exact(row_words)
                        .zip(next.chunks_exact_mut(row_words))
                    {
                        for i in q..row_words {
                            let mut w = src[i - q] << b;
                            if b > 0 && i > q {
                                w |= src[i - q - 1] >> (64 - b);
                            }
                            dst[i] |= w;
                        }
                    }
                } else {
                    // Rows whose type-t units x have x + u <= C_t move u strides on: in each
                    // block of (C_t + 1) strides, the first (C_t + 1 - u) strides of rows.
                    let block = (stride[t] * (self.capacity[t] + 1)) as usize * row_words;
                    let span = (stride[t] * (self.capacity[t] + 1 - u)) as usize * row_words;
                    let shift = (stride[t] * u) as usize * row_words;
                    for start in (0..words).step_by(block) {
                        let (src, dst) = (&set[start..start + span], &mut next[start + shift..]);
                        for (d, s) in dst.iter_mut().zip(src) {
                            *d |= s;
                        }
                    }
                }
            }
            for row in next.chunks_exact_mut(row_words) {
                if let Some(w) = row.last_mut() {
                    *w &= last_mask;
                }
            }
            std::mem::swap(&mut set, &mut next);
            if set.iter().all(|&w| w == 0) {
                return Some(false);
            }
        }
        Some(true)
    }
}

/// The most words [`RoundProblem::forced_fit`] keeps in each of its two sets: 2^22, 32 MiB a
/// set (three types of 100 GPUs in halves, 200 units each, take 161,604 words).
pub const MAX_FIT_WORDS: u64 = 1 << 22;

/// A proof of infeasibility: the forced jobs confined to `types` need at least `need` units of
/// them, which hold only `have`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortage {
    /// The GPU types (indices).
    pub types: Vec<usize>,
    /// Their names, in the same order.
    pub type_names: Vec<String>,
    /// How many forced jobs can only use these types.
    pub jobs: usize,
    /// Units those jobs need at the least.
    pub need: u64,
    /// Units the types hold.
    pub have: u64,
    /// need - have.
    pub short: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A round problem of `capacity` whose jobs have the `(gpu, units)` options given, forced
    /// or optional; values and sigmas do not matter to `forced_fit`.
    fn problem(capacity: Vec<u64>, jobs: Vec<(bool, Vec<(usize, u64)>)>) -> RoundProblem {
        let job = |(forced, options): (bool, Vec<(usize, u64)>)| RoundJob {
            share: 0.0,
            fair_rate: 1.0,
            max_throughput: 1.0,
            minimum: if forced { 1.0 } else { 0.0 },
            class: if forced {
                JobClass::Forced {
                    cannot_catch_up: false,
                }
            } else {
                JobClass::Optional
            },
            options: options
                .into_iter()
                .enumerate()
                .map(|(option, (gpu, units))| RoundOption {
                    option,
                    gpu,
                    slot: 1,
                    units,
                    sigma: 1.0,
                    value: 1.0,
                })
                .collect(),
        };
        let jobs: Vec<RoundJob> = jobs.into_iter().map(job).collect();
        RoundProblem {
            type_names: (0..capacity.len()).map(|k| format!("t{k}")).collect(),
            job_ids: (0..jobs.len()).map(|j| format!("j{j}")).collect(),
            capacity,
            jobs,
        }
    }

    /// Whether some choice of one option per forced job fits, by trying every choice.
    fn brute_fit(p: &RoundProblem) -> bool {
        fn go(p: &RoundProblem, forced: &[usize], used: &mut Vec<u64>) -> bool {
            let Some((&j, rest)) = forced.split_first() else {
                return true;
            };
            p.jobs[j].options.iter().any(|o| {
                used[o.gpu] += o.units;
                let ok = used[o.gpu] <= p.capacity[o.gpu] && go(p, rest, used);
                used[o.gpu] -= o.units;
                ok
            })
        }
        let forced: Vec<usize> = p.forced().collect();
        go(p, &forced, &mut vec![0; p.types()])
    }

    #[test]
    fn slots_that_do_not_pack_are_found_where_the_units_suffice() {
        // Three forced jobs of 48 units, each on either of two types of 72: 144 units of 144,
        // no shortage, but no type holds two of them.
        let three = problem(vec![72, 72], vec![(true, vec![(0, 48), (1, 48)]); 3]);
        assert_eq!(three.shortage(), None);
        assert_eq!(three.forced_fit(u64::MAX), Some(false));
        // Two fit (one a type); an optional third may idle.
        let mut two = three.clone();
        two.jobs[2].class = JobClass::Optional;
        assert_eq!(two.forced_fit(u64::MAX), Some(true));
        // A forced job without options fits nowhere; no forced job fits trivially.
        assert_eq!(
            problem(vec![72], vec![(true, vec![])]).forced_fit(0),
            Some(false)
        );
        assert_eq!(
            problem(vec![72], vec![(false, vec![(0, 100)])]).forced_fit(0),
            Some(true)
        );
        // Past the allowance the answer is unknown: 73 rows of 2 words, 5 passes a job (its two
        // options, the clearing, the masking and the look for a word left).
        assert_eq!(three.forced_fit(3 * 5 * 146 - 1), None);
        assert_eq!(three.forced_fit(3 * 5 * 146), Some(false));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The reachability decides exactly what trying every choice decides, with rows of one
        /// to three words (capacities up to 150 on the first type, units up to 80, so shifts
        /// cross words and go past the row) and one to three types.
        #[test]
        fn forced_fit_is_what_every_choice_says(
            capacity in prop::collection::vec(0u64..150, 1..4),
            jobs in prop::collection::vec(
                (prop::bool::weighted(0.7),
                 prop::collection::vec((0usize..3, 1u64..80), 0..4)),
                0..7),
        ) {
            let k = capacity.len();
            let jobs = jobs
                .into_iter()
                .map(|(forced, options)| {
                    (forced, options.into_iter().map(|(g, u)| (g % k, u)).collect())
                })
                .collect();
            let p = problem(capacity, jobs);
            prop_assert_eq!(p.forced_fit(u64::MAX), Some(brute_fit(&p)));
        }
    }
}
