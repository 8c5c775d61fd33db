//! # stsfair: exact spatiotemporal-fair rounds for shared GPU clusters
//!
//! Every round, a cluster scheduler must decide how its GPUs (of several types) are cut into
//! slots and which deep-learning job runs in which slot. `stsfair` answers that question exactly:
//! each job gets at least the normalized service its fairness deficit demands, and among the
//! assignments that are fair, the one with the most useful work is chosen.
//!
//! The data flows through one module per stage:
//! [`instance`] (the cluster, jobs, predicted co-location times, fairness parameters) ->
//! [`formulation`] (shares, equal-share rates, admissible options: the round problem) ->
//! [`solvers`] (the fast exact DP [`Dp`], the dense reference DP, brute force and, with feature
//! `highs`, the ILP) -> [`solution`] (answers and [`verify`]) -> [`placement`] (slots onto
//! physical GPUs) -> [`rounds`] (deficits across rounds, the API a scheduler links).
//! [`policy`] is the complete round policy a scheduler drives ([`policy::StsPolicy`]: events in,
//! a plan out), built on the rounds and on its own exact paired program.
//! [`bench`](mod@bench) times solvers over instance files, as `stsfair bench` does, and checks
//! their answers against the folder's [`manifest`] (`index.json`); `bound`
//! (feature `highs`) computes the long-run LP bound a round mechanism is measured against.
//!
//! The stages before and after the round live in crates of their own, so that a scheduler that
//! links this one compiles none of them: `stsfair-costs` (Gavel's measured throughputs, slot
//! times, the co-location predictor, instance generators), `stsfair-sim` (trace-driven
//! simulation against Gavel's policies) and `stsfair-cli` (the `stsfair` command).
//!
//! ## Features
//! - `highs` (off by default): the ILP baseline `solvers::Ilp`, solved by HiGHS, which
//!   is compiled from source (cmake and libclang needed). The DP never needs it.
//!
//! ```
//! use stsfair::{Instance, JobSpec, Solver, Dp, DenseDp, verify};
//!
//! // One V100 of 4 units, slots of 1, 2 or 4 units; two jobs.
//! let instance = Instance::builder()
//!     .gpu_type("v100", 1, 4, &[1, 2, 4])
//!     .job(JobSpec::new("a").time("v100", 4, 0.25).time("v100", 2, 0.40))
//!     .job(JobSpec::new("b").time("v100", 4, 0.50).time("v100", 2, 0.60))
//!     .build()?;
//! // Each job's equal share is half the GPU: F_a = 0.5 * 4 = 2 it/s, F_b = 0.5 * 2 = 1 it/s.
//! // With lambda = max_debt = 1 and no deficits, m_j = 0: nobody is forced.
//! // Alone on the GPU, a is worth 1.0; sharing it, a gets 0.25/0.40 = 0.625 of its best and
//! // b gets 0.50/0.60 = 0.8333..., together 1.4583...: sharing wins.
//! let solution = Dp::default().solve(&instance)?;
//! let objective = solution.objective.unwrap();
//! // The dense reference DP agrees.
//! assert_eq!(DenseDp::default().solve(&instance)?.objective, Some(objective));
//! assert!((objective - (0.625 + 0.5 / 0.6)).abs() < 1e-12);
//! assert_eq!(solution.assignments, vec![Some((0, 2)), Some((0, 2))]);
//! verify(&instance, &solution)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Instance and solution files follow `stsfair/1` (see `docs/format.md` in the repository); the model is in
//! `docs/model.md`.

#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod bench;
#[cfg(feature = "highs")]
pub mod bound;
pub mod formulation;
#[cfg(feature = "highs")]
pub mod highs_lp;
pub mod instance;
pub mod manifest;
pub mod placement;
pub mod policy;
pub mod rounds;
pub mod solution;
pub mod solvers;

pub use formulation::{JobClass, RoundProblem};
pub use instance::{
    Fairness, GpuType, Instance, InstanceBuilder, InstanceError, Job, JobOption, JobSpec,
};
pub use placement::{CoLocation, NoInterference, Placement, PlacementError, SlotRequest, place};
pub use rounds::{RoundError, RoundPlan, RoundScheduler, SchedulerSnapshot, ServicePrices};
pub use solution::{
    DpStats, IlpStats, Infeasibility, Optimality, Solution, SolveStats, SolverDetail, Status,
    Verified, VerifyError, verify, verify_feasible,
};
#[cfg(feature = "highs")]
pub use solvers::Ilp;
pub use solvers::{
    BruteForce, DenseDp, Dp, Fallback, SolveError, Solver, SolverConfig, SolverKind, WarmStart,
};
