//! `sts`: the crate's spatiotemporal-fair round scheduler as a simulation policy.

use super::super::engine::{Placement, RoundReport, Scheduler, SimState};
use super::super::{Cluster, SimConfig, SimError};
use super::PolicyOptions;

/// The STS policy.
#[derive(Debug)]
pub struct Sts {
    solver_seconds: f64,
}

impl Sts {
    /// An STS policy for `cluster`.
    pub fn new(_cluster: &Cluster, _config: &SimConfig, _options: &PolicyOptions) -> Result<Sts, SimError> {
        Ok(Sts { solver_seconds: 0.0 })
    }
}

impl Scheduler for Sts {
    fn name(&self) -> String {
        "sts".to_string()
    }
    fn job_arrived(&mut self, _id: usize, _state: &SimState<'_>) -> Result<(), SimError> {
        Ok(())
    }
    fn job_finished(&mut self, _id: usize, _state: &SimState<'_>) {}
    fn round_finished(&mut self, _report: &RoundReport, _state: &SimState<'_>) {}
    fn plan(&mut self, _state: &SimState<'_>) -> Result<Vec<Placement>, SimError> {
        Ok(Vec::new())
    }
    fn solver_seconds(&self) -> f64 {
        self.solver_seconds
    }
}
