//! The program of the issue "A crate scheduler authors can depend on": what a scheduler author
//! writes against the public API (solve, verify, read stats, schedule rounds, move the scheduler
//! to another thread, snapshot and restore it). It must compile and pass with and without the
//! `highs` feature.

use stsfair::{Dp, Instance, JobSpec, RoundScheduler, Solver, verify};

fn assert_send<T: Send>(_: &T) {}

fn program() -> Result<(), Box<dyn std::error::Error>> {
    let instance = Instance::builder()
        .gpu_type("v100", 1, 4, &[1, 2, 4])
        .job(
            JobSpec::new("a")
                .time("v100", 4, 0.25)
                .time("v100", 2, 0.40),
        )
        .build()?;
    let solution = Dp::default().solve(&instance)?;
    verify(&instance, &solution)?;
    let _seconds: f64 = solution.stats.seconds;
    let cluster = Instance::builder()
        .gpu_type("v100", 2, 4, &[1, 2, 4])
        .build()?;
    let mut scheduler = RoundScheduler::new(&cluster, Dp::default());
    assert_send(&scheduler);
    scheduler.add_job(JobSpec::new("j").workers(2).time("v100", 4, 0.5))?;
    let plan = scheduler.plan()?;
    scheduler.report_planned(&plan)?;
    let snapshot = serde_json::to_string(&scheduler.snapshot())?;
    let restored = RoundScheduler::restore(serde_json::from_str(&snapshot)?, Dp::default())?;
    assert_eq!(serde_json::to_string(&restored.snapshot())?, snapshot);
    println!("ok");
    Ok(())
}

#[test]
fn the_issue_program_runs() {
    if let Err(e) = program() {
        panic!("{e}");
    }
}
