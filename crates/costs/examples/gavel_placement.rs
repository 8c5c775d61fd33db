//! Co-location-aware placement from the measured Gavel pairs, with the trained predictor filling
//! the pairs that were never measured (`docs/placement.md`).
//!
//! ```sh
//! cargo run --release -p stsfair-costs --example gavel_placement [THROUGHPUTS] [INSTANCE] [ROUNDS]
//! ```
//!
//! Defaults: the bundled Gavel throughputs (`-` names them too),
//! `instances/gavel-36x3-300.json` (300 Gavel-derived jobs on 36 GPUs of each of 3 types), 10
//! rounds.
//!
//! The Gavel file measures every pair of single-GPU job types, so to put the predictor to work
//! the example hides every fifth measured pair of each GPU type, trains the predictor on the
//! rest, and gives the round scheduler the measured-or-predicted slowdowns as its placement
//! model ([`JobSlowdowns`]). Each round it places the same slots twice, with that model and
//! with none ([`NoInterference`]: slots in decreasing size, first GPU with room), and scores
//! both by the complete measured table, which knows the hidden pairs.

use stsfair::rounds::RoundScheduler;
use stsfair::{Dp, Instance, NoInterference, place};
use stsfair_costs::{
    GavelThroughputs, JobSlowdowns, LearnedPredictor, PredictorConfig, ThroughputModel,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let throughputs = args.get(1).map(String::as_str).filter(|p| *p != "-");
    let instance = args
        .get(2)
        .map_or("instances/gavel-36x3-300.json", String::as_str);
    let rounds: u64 = args.get(3).map_or(Ok(10), |r| r.parse())?;

    // The measured table, and a predictor that has seen only four fifths of it.
    let measured = match throughputs {
        Some(path) => GavelThroughputs::from_path(path)?,
        None => GavelThroughputs::bundled(),
    }
    .into_inputs();
    let hidden: Vec<_> = measured
        .measured_single_gpu_pairs()
        .into_iter()
        .step_by(5)
        .collect();
    let config = PredictorConfig {
        trees: 100,
        ..PredictorConfig::default()
    };
    let predictor = LearnedPredictor::train(&measured.without_pairs(&hidden), &config)?;
    println!(
        "hid {} of {} measured pairs; the predictor ({}) fills {} ordered pairs",
        hidden.len(),
        measured.measured_single_gpu_pairs().len(),
        predictor.method(),
        predictor.predicted_pairs()
    );
    let truth = JobSlowdowns::new(measured);

    let instance = Instance::from_path(instance)?;
    let unknown = truth.unknown(instance.jobs().iter().map(|j| j.id()));
    if !unknown.is_empty() {
        println!(
            "{} job ids name no Gavel job type (e.g. {:?}): no slowdown predicted for them",
            unknown.len(),
            unknown[0]
        );
    }
    let mut scheduler =
        RoundScheduler::new(&instance, Dp::default()).with_colocation(JobSlowdowns::new(predictor));

    println!(
        "round  objective  aware: predicted  measured  conflicts  migrations | oblivious: measured  conflicts"
    );
    let (mut aware_sum, mut oblivious_sum) = (0.0, 0.0);
    for round in 0..rounds {
        let plan = scheduler.plan()?;
        let aware = plan.placement.interference(&truth);
        let oblivious = place(
            scheduler.gpu_types(),
            &plan.requests(),
            None,
            &NoInterference,
        )?
        .interference(&truth);
        println!(
            "{round:>5}  {:>9.3}  {:>16.3}  {:>8.3}  {:>9}  {:>10} | {:>18.3}  {:>9}",
            plan.objective,
            plan.placement.slowdown,
            aware.0,
            aware.1,
            plan.placement.migrations,
            oblivious.0,
            oblivious.1
        );
        if round == 0 {
            // A few shared GPUs of the first round, as placement names them.
            for gpu in plan
                .placement
                .gpus
                .iter()
                .filter(|g| g.slots.len() > 1)
                .take(3)
            {
                println!("       {gpu}");
            }
        }
        aware_sum += aware.0;
        oblivious_sum += oblivious.0;
        scheduler.report_planned(&plan)?;
    }
    let r = rounds.max(1) as f64;
    println!(
        "mean measured slowdown per round: aware {:.3}, oblivious {:.3} ({:.1}% less)",
        aware_sum / r,
        oblivious_sum / r,
        100.0 * (1.0 - aware_sum / oblivious_sum.max(f64::MIN_POSITIVE))
    );
    Ok(())
}
