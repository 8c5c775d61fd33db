//! The fast DP against two independent oracles: brute force on tiny instances and the dense
//! reference DP on small ones. Same feasibility, objectives within 1e-9 relative, and `verify`
//! accepts every answer. The same checks with the type tables on from the first run (a
//! setting internal to the crate) are unit tests in src/solvers/dp/tables.rs.

mod common;

use proptest::prelude::*;
use stsfair::solution::objectives_agree;
use stsfair::{BruteForce, DenseDp, Dp, Instance, Solver, Status, verify};

fn agree(instance: &Instance, reference: &dyn Solver) -> Result<(), TestCaseError> {
    let fast = Dp::default()
        .solve(instance)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let oracle = reference
        .solve(instance)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let infeasible = |s: &stsfair::Solution| matches!(s.status, Status::Infeasible { .. });
    prop_assert_eq!(
        infeasible(&fast),
        infeasible(&oracle),
        "feasibility differs: {:?} vs {:?}",
        fast.status,
        oracle.status
    );
    if let (Some(a), Some(b)) = (fast.objective, oracle.objective) {
        prop_assert!(
            objectives_agree(b, a),
            "objective {} (dp) vs {} ({})",
            a,
            b,
            oracle.solver
        );
    }
    verify(instance, &fast).map_err(|e| TestCaseError::fail(format!("verify rejects dp: {e}")))?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn dp_matches_brute_force(instance in common::instance(common::Shape::TINY)) {
        agree(&instance, &BruteForce::default())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]
    #[test]
    fn dp_matches_dense_dp(instance in common::instance(common::Shape::SMALL)) {
        agree(&instance, &DenseDp::default())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Single-GPU jobs only: the core in the rigid order, not by units.
    #[test]
    fn dp_matches_brute_force_on_single_gpu_jobs(
        instance in common::instance(common::Shape::TINY.single_gpu())
    ) {
        agree(&instance, &BruteForce::default())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]
    #[test]
    fn dp_matches_dense_dp_on_single_gpu_jobs(
        instance in common::instance(common::Shape::SMALL.single_gpu())
    ) {
        agree(&instance, &DenseDp::default())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    /// Many identical jobs (classes split between tied choices by the LP).
    #[test]
    fn dp_matches_dense_dp_on_copies(instance in common::repeated(common::Shape::SMALL, 15)) {
        agree(&instance, &DenseDp::default())?;
    }
}
