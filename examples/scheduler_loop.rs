//! A scheduler loop on the round API: plan a round, "run" it, report what really ran, while
//! jobs arrive, leave and get better time predictions.
//!
//! Run with `cargo run --example scheduler_loop`.

use stsfair::{Dp, Instance, JobSpec, RoundScheduler};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The cluster: 2 V100s and 2 K80s of 4 units each, slots of 1, 2 or 4 units.
    let cluster = Instance::builder()
        .gpu_type("v100", 2, 4, &[1, 2, 4])
        .gpu_type("k80", 2, 4, &[1, 2, 4])
        .build()?;
    // Predicted slowdown of a job beside another: here, two "bert" jobs hurt each other.
    let colocation = |job: &str, other: &str, _gpu: &str| {
        if job.starts_with("bert") && other.starts_with("bert") {
            0.6
        } else {
            0.1
        }
    };
    let mut scheduler = RoundScheduler::new(&cluster, Dp::default()).with_colocation(colocation);

    // Seconds per iteration of the whole job, per (gpu type, slot size).
    let job = |id: &str, v100: f64, k80: f64| {
        JobSpec::new(id)
            .time("v100", 4, v100)
            .time("v100", 2, v100 * 1.6)
            .time("v100", 1, v100 * 3.0)
            .time("k80", 4, k80)
            .time("k80", 2, k80 * 1.7)
    };
    for (id, v, k) in [
        ("bert-1", 0.20, 0.90),
        ("bert-2", 0.22, 0.95),
        ("resnet-1", 0.10, 0.30),
        ("lstm-1", 0.30, 0.45),
    ] {
        scheduler.add_job(job(id, v, k))?;
    }
    for _ in 0..8 {
        let round = scheduler.round();
        if round == 2 {
            // A large two-worker job arrives: it needs two slots of the same size.
            scheduler.add_job(job("gpt-1", 0.5, 2.0).workers(2))?;
        }
        if round == 4 {
            // The profiler measured resnet-1 again: it is faster on the K80 than predicted.
            scheduler.update_times(
                "resnet-1",
                &[("v100", 4, 0.10), ("k80", 4, 0.20), ("k80", 2, 0.32)],
            )?;
        }
        if round == 6 {
            let d = scheduler.remove_job("lstm-1")?;
            println!("lstm-1 finished with deficit {d:+.3}");
        }

        let plan = scheduler.plan()?;
        println!(
            "round {round}: objective {:.3}, {} solve(s), relaxed {:?}, migrations {}",
            plan.objective, plan.solves, plan.relaxed, plan.placement.migrations
        );
        for gpu in &plan.placement.gpus {
            println!("  {gpu}");
        }

        // "Run" the round: the bert jobs realize 10% less than predicted, the others exactly.
        let realized: Vec<(&str, f64)> = plan
            .planned_throughputs()
            .into_iter()
            .map(|(id, t)| (id, if id.starts_with("bert") { 0.9 * t } else { t }))
            .collect();
        for s in scheduler.report(&realized)? {
            let sigma = s
                .sigma
                .map_or("no bound".to_string(), |x| format!("{x:.3}"));
            println!("  {:<9} sigma {sigma:>8}  deficit {:+.3}", s.job, s.deficit);
        }
    }
    Ok(())
}
