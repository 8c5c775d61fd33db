//! Parts of the round policy that a scheduler drives beside the round problem.
//!
//! [`paired`] plans a round of single-GPU jobs with pairs of jobs as items: a GPU shared by two
//! jobs is one choice, worth both jobs' measured throughputs beside each other, so that the plan
//! is what runs.

pub mod paired;

pub use paired::{PairedClass, PairedColumn, PairedError, PairedProgram};
