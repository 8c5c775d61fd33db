//! The settings of [`StsPolicy`](super::StsPolicy): one options type, every rule a documented
//! field, each default chosen by measurement (docs/simulation.md has the measurements; the
//! fields below name the section).

use crate::instance::Fairness;
use crate::solvers::SolverKind;

use super::PolicyError;

/// How the policy weights jobs. The weight w_j sets a job's fair share phi_j = w_j / (sum of
/// w) and the value of its options (docs/model.md sections 3 and 4). A distributed job's weight
/// is then multiplied by a power of its workers ([`job_weight`](super::rules::job_weight)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Weights {
    /// The jobs' own priority weights (1 for generated jobs): equal shares.
    Trace,
    /// Least attained service first, as Tiresias (Gu et al., NSDI 2019) orders jobs without
    /// knowing their length: w_j = (weight) / (1 + a_j / 1 hour), with a_j the time the job has
    /// run so far, each round counted by its slot's fraction of a GPU and once however many
    /// workers the job has; recomputed every round. Every job keeps the fairness floor of its
    /// (smaller) share. These weights apply only in crowded rounds
    /// ([`StsOptions::crowding`]) and until the next arrival after one
    /// ([`StsOptions::crowding_hold`]).
    ///
    /// The default: at 5.6 jobs/h, 2.6 jobs/h with multi-GPU jobs and 8 jobs/h it gave a lower
    /// mean JCT than [`Weights::Trace`] on every seed (docs/results.md). A distributed job counts
    /// its service once, because the round problem already charges it for its size; counting
    /// GPU time made the multi-GPU mix's makespan longer than gavel-mmf-ss's on 5 seeds of 12
    /// (docs/simulation.md, "Attained service per job").
    #[default]
    Attained,
    /// Least attained service with a_j in GPU-hours (every worker's time counted), as
    /// Tiresias's two-dimensional attained service.
    AttainedGpu,
}

impl Weights {
    /// The attained service a round adds to a job of `workers` workers in slots of `fraction`
    /// of a GPU for `seconds`: `fraction * seconds`, once per job, or once per worker for
    /// [`Weights::AttainedGpu`].
    pub fn service(self, workers: usize, fraction: f64, seconds: f64) -> f64 {
        let counted = match self {
            Weights::AttainedGpu => workers as f64,
            Weights::Attained | Weights::Trace => 1.0,
        };
        counted * fraction * seconds
    }
}

/// In which rounds the policy's second stage runs ([`StsOptions::second_stage_rounds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SecondStageRounds {
    /// Only in rounds where the attained-service weights apply (a crowded round or the hold
    /// after one), the weights it softens: they span orders of magnitude there. The default:
    /// elsewhere the weights differ only by distributed jobs' size factors, and softening those
    /// made the multi-GPU mix at 2.6 jobs/h wait longer on every seed (docs/simulation.md, "Work
    /// per busy GPU").
    #[default]
    Attained,
    /// In every round where the chosen jobs' weights differ.
    All,
}

/// The default pairing threshold ([`StsOptions::pairing`]): 1.4 on the pair sum
/// `r(a|b) + r(b|a)`, chosen on seeds 0-2 among 1.0 to 1.7 and confirmed on seeds 3-5
/// (docs/simulation.md, "A pairing step").
pub const DEFAULT_PAIRING: f64 = 1.4;

/// The default exponent of the size weights ([`StsOptions::size_exponent`]): a job of d workers
/// weighs d^0.75 times a one-worker job. With multi-GPU jobs at 2.6 jobs/h, 0 lets the 8-GPU jobs
/// queue until the cluster clogs and 1 makes the single-GPU jobs wait; 0.75 gave a lower JCT than
/// 0.6 on 10 seeds of 12 (docs/simulation.md, "Weights that count the workers").
pub const DEFAULT_SIZE_EXPONENT: f64 = 0.75;

/// The default exponent of the second stage ([`StsOptions::second_stage`]): under the drained
/// overload (8 jobs/h) exponents 0, 0.25, 0.5 and 0.75 gave a mean JCT of 22.44, 21.39, 21.63 and
/// 21.87 h (docs/simulation.md, "Work per busy GPU").
pub const DEFAULT_SECOND_STAGE: f64 = 0.25;

/// The default crowding ratio ([`StsOptions::crowding`]): the attained-service weights apply
/// when the active jobs are more than 1.5 times the cluster's capacity. At 5.6 jobs/h the weights
/// then stay equal and sts beats gavel-mmf-ss where least attained service in every round lost
/// to it; 2 left too many overloaded rounds to equal weights (docs/simulation.md, "Arrivals that
/// do not stop").
pub const DEFAULT_CROWDING: f64 = 1.5;

/// The default factor of the starvation promotion ([`StsOptions::promotion`]): past saturation
/// (3.0 multi-GPU jobs/h) 4 took the mean JCT from 0.588x of gavel-mmf-ss's to 0.836x, 10 to
/// 0.662x; under the drained overload neither moved it by more than 0.05%
/// (docs/simulation.md, "Starvation promotion past saturation").
pub const DEFAULT_PROMOTION: f64 = 4.0;

/// The default factor of the critical-job rule ([`StsOptions::critical`]): under the drained
/// overload (8 jobs/h) 1.2 left no seed of twenty with a makespan longer than gavel-mmf-ss's, for
/// 0.8% of the mean JCT; 1.5 left three, 2 seven (docs/simulation.md, "Jobs that would outlast
/// the backlog").
pub const DEFAULT_CRITICAL: f64 = 1.2;

/// The default of [`StsOptions::critical_after`]: an hour without arrivals. Without the wait,
/// past saturation (6.4 jobs/h) promoting the long jobs in every crowded round clogged the
/// cluster (mean JCT 55.74 h against 27.26 h); half an hour to two hours gave the same means.
pub const DEFAULT_CRITICAL_AFTER: f64 = 3600.0;

/// Every setting of [`StsPolicy`](super::StsPolicy), each rule a field. Start from
/// `StsOptions::default()` and change fields with the `with_*` methods (the struct is
/// `#[non_exhaustive]`: settings may be added without breaking callers):
///
/// ```
/// use stsfair::policy::{StsOptions, Weights};
/// let options = StsOptions::default()
///     .with_weights(Weights::Trace)
///     .with_paired_rounds(false);
/// assert_eq!(options.units, 2);
/// options.check()?;
/// # Ok::<(), stsfair::policy::PolicyError>(())
/// ```
///
/// No default names a GPU type or a job type: where a rule needs a value per GPU type
/// ([`StsOptions::pairing_by_type`]), it is derived from the throughputs the policy is given.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StsOptions {
    /// Solver of the round problem (the DP by default; it is exact).
    pub solver: SolverKind,
    /// Units per GPU: slots of 1, 2, 4, ... units up to this. 2 by default: half GPUs, whose
    /// co-located throughputs are measured pairs (docs/simulation.md).
    pub units: u32,
    /// Fairness parameters (lambda, the allowed debt, the credit bound; docs/model.md section 3).
    pub fairness: Fairness,
    /// How jobs are weighted ([`Weights::Attained`] by default).
    pub weights: Weights,
    /// A d-worker job weighs d to this power times a one-worker job, in [0, 1]
    /// ([`DEFAULT_SIZE_EXPONENT`]).
    pub size_exponent: f64,
    /// Whether the fairness service of forced jobs is priced by the long-run LP's duals
    /// (`crate::bound::LongRunPrices`; needs the feature `highs`). Off by default: the LP is
    /// solved again every round the weights change (docs/simulation.md, "Prices").
    pub prices: bool,
    /// The pairing step: each round the active single-GPU jobs are matched per GPU type into
    /// pairs whose measured pair sum `r(a|b) + r(b|a)` is at least this, a matched job's half GPU
    /// is priced beside its partner, and an unmatched job gets whole GPUs only (an infinite
    /// threshold: no half GPUs). `Some(`[`DEFAULT_PAIRING`]`)` by default; `None` prices every
    /// half GPU at the data's typical pair. Applies with 2 units only.
    pub pairing: Option<f64>,
    /// Pairing thresholds of some GPU types, by name, in place of [`StsOptions::pairing`] there.
    /// `None` (the default): derived from the throughputs and the cluster at the first round
    /// ([`derived_pairing_by_type`](super::rules::derived_pairing_by_type)); `Some(vec![])`:
    /// every type at [`StsOptions::pairing`].
    pub pairing_by_type: Option<Vec<(String, f64)>>,
    /// GPU types (by name) on which, in crowded rounds, a job the pairing step matched there gets
    /// only its half slot beside its partner, no whole GPU of that type. Empty by default
    /// (docs/simulation.md, "Matched jobs share the V100s when crowded").
    pub crowded_sharing: Vec<String>,
    /// The second stage: after the round problem chooses who runs, where they run is chosen
    /// again with the weights raised to this exponent (`RoundScheduler::with_second_stage`).
    /// `Some(`[`DEFAULT_SECOND_STAGE`]`)` by default; `None`: off.
    pub second_stage: Option<f64>,
    /// In which rounds the second stage runs ([`SecondStageRounds::Attained`] by default).
    pub second_stage_rounds: SecondStageRounds,
    /// The attained-service weights apply only in rounds whose active jobs are more than this
    /// many times the cluster's capacity (jobs counted, not workers): its GPUs, or, where shared
    /// GPUs have made it do more, the most work it has done in one round, in GPUs at the jobs'
    /// best solo speed. `Some(`[`DEFAULT_CROWDING`]`)` by default; `None`: every round.
    pub crowding: Option<f64>,
    /// Whether the attained-service weights, once a round is crowded, stay on until the next job
    /// arrives: a crowded cluster that nothing enters is draining its backlog. On by default
    /// (docs/simulation.md, "Held until the next arrival").
    pub crowding_hold: bool,
    /// Whether uncrowded rounds of single-GPU jobs are planned with pairs as items
    /// ([`paired_round`](super::paired_round)): a GPU shared by two jobs is one choice worth both
    /// jobs' measured throughputs, solved exactly. On by default (docs/simulation.md, "Pairs as
    /// items"). Needs the pairing step.
    pub paired_rounds: bool,
    /// Starvation promotion: where the attained-service weights apply, a job whose age less its
    /// service is more than this many times its service is weighted as a new job.
    /// `Some(`[`DEFAULT_PROMOTION`]`)` by default; `None`: off.
    pub promotion: Option<f64>,
    /// The critical-job rule: where the attained-service weights apply and no job has arrived for
    /// [`StsOptions::critical_after`] seconds, a job whose remaining hours at its best speed are
    /// at least this many times the backlog's drain time is weighted as a new job. It reads the
    /// jobs' remaining steps. `Some(`[`DEFAULT_CRITICAL`]`)` by default; `None`: off.
    pub critical: Option<f64>,
    /// Seconds without an arrival before the critical-job rule acts
    /// ([`DEFAULT_CRITICAL_AFTER`]).
    pub critical_after: f64,
}

impl Default for StsOptions {
    fn default() -> Self {
        StsOptions {
            solver: SolverKind::Dp,
            units: 2,
            fairness: Fairness::default(),
            weights: Weights::default(),
            size_exponent: DEFAULT_SIZE_EXPONENT,
            prices: false,
            pairing: Some(DEFAULT_PAIRING),
            pairing_by_type: None,
            crowded_sharing: Vec::new(),
            second_stage: Some(DEFAULT_SECOND_STAGE),
            second_stage_rounds: SecondStageRounds::Attained,
            crowding: Some(DEFAULT_CROWDING),
            crowding_hold: true,
            paired_rounds: true,
            promotion: Some(DEFAULT_PROMOTION),
            critical: Some(DEFAULT_CRITICAL),
            critical_after: DEFAULT_CRITICAL_AFTER,
        }
    }
}

/// `with_field(value)` setters, one per field, for the builder style.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $field:ident: $ty:ty;)*) => {
        impl StsOptions {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $name(mut self, value: $ty) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

setters! {
    /// Sets [`StsOptions::solver`].
    with_solver: solver: SolverKind;
    /// Sets [`StsOptions::units`].
    with_units: units: u32;
    /// Sets [`StsOptions::fairness`].
    with_fairness: fairness: Fairness;
    /// Sets [`StsOptions::weights`].
    with_weights: weights: Weights;
    /// Sets [`StsOptions::size_exponent`].
    with_size_exponent: size_exponent: f64;
    /// Sets [`StsOptions::prices`].
    with_prices: prices: bool;
    /// Sets [`StsOptions::pairing`].
    with_pairing: pairing: Option<f64>;
    /// Sets [`StsOptions::pairing_by_type`].
    with_pairing_by_type: pairing_by_type: Option<Vec<(String, f64)>>;
    /// Sets [`StsOptions::crowded_sharing`].
    with_crowded_sharing: crowded_sharing: Vec<String>;
    /// Sets [`StsOptions::second_stage`].
    with_second_stage: second_stage: Option<f64>;
    /// Sets [`StsOptions::second_stage_rounds`].
    with_second_stage_rounds: second_stage_rounds: SecondStageRounds;
    /// Sets [`StsOptions::crowding`].
    with_crowding: crowding: Option<f64>;
    /// Sets [`StsOptions::crowding_hold`].
    with_crowding_hold: crowding_hold: bool;
    /// Sets [`StsOptions::paired_rounds`].
    with_paired_rounds: paired_rounds: bool;
    /// Sets [`StsOptions::promotion`].
    with_promotion: promotion: Option<f64>;
    /// Sets [`StsOptions::critical`].
    with_critical: critical: Option<f64>;
    /// Sets [`StsOptions::critical_after`].
    with_critical_after: critical_after: f64;
}

impl StsOptions {
    /// Checks every field's range; the error names the field and the rule.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Setting`] for a value out of range, [`PolicyError::Fairness`] for fairness
    /// parameters the instance format refuses.
    pub fn check(&self) -> Result<(), PolicyError> {
        // The round problem's own limit on units per GPU.
        const _: () = assert!(crate::instance::MAX_UNITS == 1024);
        if !(1..=crate::instance::MAX_UNITS).contains(&u64::from(self.units)) {
            return Err(PolicyError::Setting {
                setting: "units",
                rule: "must be between 1 and 1024 (the round problem's limit on units per GPU)",
                got: self.units.to_string(),
            });
        }
        self.fairness
            .check()
            .map_err(|source| PolicyError::Fairness { source })?;
        let in_unit = |e: f64| (0.0..=1.0).contains(&e);
        check(
            Some(self.size_exponent),
            "size_exponent",
            "must be an exponent in [0, 1]",
            in_unit,
        )?;
        check(
            self.pairing,
            "pairing",
            "must be a pair sum >= 0, inf or off",
            pair_sum,
        )?;
        check_pairing_by_type(self.pairing_by_type.as_deref().unwrap_or(&[]))?;
        let exponent = "must be an exponent in [0, 1] or off";
        check(self.second_stage, "second_stage", exponent, in_unit)?;
        let ratio = "must be a ratio >= 0 or off";
        check(self.crowding, "crowding", ratio, finite_non_negative)?;
        let factor = "must be a factor >= 0 or off";
        check(self.promotion, "promotion", factor, finite_non_negative)?;
        check(self.critical, "critical", factor, finite_non_negative)?;
        let seconds = "must be a finite number of seconds >= 0";
        check(
            Some(self.critical_after),
            "critical_after",
            seconds,
            finite_non_negative,
        )?;
        if self.prices && !cfg!(feature = "highs") {
            return Err(PolicyError::Setting {
                setting: "prices",
                rule: "needs the long-run LP, and this build has no HiGHS (feature highs)",
                got: "true".into(),
            });
        }
        Ok(())
    }
}

/// A setting that is a number or `None` (off): `value` must pass `ok`, else `setting` is refused
/// with `rule`.
fn check(
    value: Option<f64>,
    setting: &'static str,
    rule: &'static str,
    ok: impl Fn(f64) -> bool,
) -> Result<(), PolicyError> {
    match value {
        Some(v) if !ok(v) => Err(PolicyError::Setting {
            setting,
            rule,
            got: v.to_string(),
        }),
        _ => Ok(()),
    }
}

/// A finite number >= 0.
fn finite_non_negative(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

/// A pair sum threshold: a number >= 0, or infinite (no pair reaches it: whole GPUs only).
fn pair_sum(v: f64) -> bool {
    v >= 0.0
}

/// Each threshold a pair sum >= 0 or infinite, each type named once.
fn check_pairing_by_type(thresholds: &[(String, f64)]) -> Result<(), PolicyError> {
    for (i, (name, sum)) in thresholds.iter().enumerate() {
        if !pair_sum(*sum) {
            return Err(PolicyError::Setting {
                setting: "pairing_by_type",
                rule: "must give each type a pair sum >= 0 or inf",
                got: format!("{name}={sum}"),
            });
        }
        if thresholds[..i].iter().any(|(n, _)| n == name) {
            return Err(PolicyError::Setting {
                setting: "pairing_by_type",
                rule: "must name each GPU type once",
                got: name.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every numeric setting refuses NaN and its out-of-range values by name.
    #[test]
    fn settings_are_refused_by_name() {
        let cases: Vec<(StsOptions, &str)> = vec![
            (StsOptions::default().with_units(0), "units"),
            (StsOptions::default().with_units(2048), "units"),
            (
                StsOptions::default().with_size_exponent(1.5),
                "size_exponent",
            ),
            (
                StsOptions::default().with_size_exponent(f64::NAN),
                "size_exponent",
            ),
            (StsOptions::default().with_pairing(Some(-1.0)), "pairing"),
            (
                StsOptions::default().with_pairing(Some(f64::NAN)),
                "pairing",
            ),
            (
                StsOptions::default().with_pairing_by_type(Some(vec![("a".into(), -0.5)])),
                "pairing_by_type",
            ),
            (
                StsOptions::default()
                    .with_pairing_by_type(Some(vec![("a".into(), 1.0), ("a".into(), 2.0)])),
                "pairing_by_type",
            ),
            (
                StsOptions::default().with_second_stage(Some(2.0)),
                "second_stage",
            ),
            (
                StsOptions::default().with_crowding(Some(f64::INFINITY)),
                "crowding",
            ),
            (
                StsOptions::default().with_promotion(Some(-1.0)),
                "promotion",
            ),
            (
                StsOptions::default().with_critical(Some(f64::NAN)),
                "critical",
            ),
            (
                StsOptions::default().with_critical_after(-1.0),
                "critical_after",
            ),
        ];
        for (options, field) in cases {
            match options.check() {
                Err(PolicyError::Setting { setting, .. }) => assert_eq!(setting, field),
                other => panic!("{field}: {other:?}"),
            }
        }
        let bad_fairness = Fairness {
            lambda: 0.0,
            ..Fairness::default()
        };
        assert!(matches!(
            StsOptions::default().with_fairness(bad_fairness).check(),
            Err(PolicyError::Fairness { .. })
        ));
        // Infinite thresholds are whole GPUs only, and valid.
        StsOptions::default()
            .with_pairing(Some(f64::INFINITY))
            .with_pairing_by_type(Some(vec![("a".into(), f64::INFINITY)]))
            .check()
            .expect("valid");
        StsOptions::default()
            .check()
            .expect("the defaults are valid");
    }
}
