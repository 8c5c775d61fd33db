//! `bound`: the long-run LP bound of an instance (`stsfair::bound`, feature `highs`).

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::Failure;
use crate::solve::load;

#[derive(Args)]
pub struct BoundArgs {
    /// Instance file (stsfair/1 JSON).
    file: PathBuf,
    /// The share of lambda every job with a fairness bound must reach on average, in (0, 1].
    #[arg(long, default_value_t = 0.95)]
    share: f64,
    /// Print a JSON object instead of a line of text.
    #[arg(long)]
    json: bool,
}

#[cfg(feature = "highs")]
pub fn bound(args: BoundArgs) -> Result<u8, Failure> {
    if !(args.share > 0.0 && args.share <= 1.0) {
        return Err(Failure::input(format!(
            "--share must be in (0, 1] (got {})",
            args.share
        )));
    }
    let instance = load(&args.file)?;
    let found = stsfair::bound::long_run_bound(&instance, args.share).map_err(Failure::other)?;
    if args.json {
        let doc = match &found {
            Some(b) => json!({
                "share": b.share,
                "feasible": true,
                "lp_bound": b.objective,
                "bounded_jobs": b.bounded_jobs,
                "capped_jobs": b.capped_jobs,
            }),
            None => json!({ "share": args.share, "feasible": false, "lp_bound": null }),
        };
        outln!("{doc}");
    } else {
        match &found {
            Some(b) => outln!(
                "lp bound   {} (mean objective per round at {:?} lambda; {} jobs bounded, {} capped at their largest sigma)",
                crate::number::fixed(b.objective, 9),
                b.share,
                b.bounded_jobs,
                b.capped_jobs
            ),
            None => outln!(
                "no schedule gives every bounded job {:?} lambda on average, even fractionally",
                args.share
            ),
        }
    }
    Ok(if found.is_some() { 0 } else { 3 })
}

#[cfg(not(feature = "highs"))]
pub fn bound(_args: BoundArgs) -> Result<u8, Failure> {
    Err(Failure::input(
        "bound needs HiGHS: build stsfair with feature highs (the default of stsfair-cli)",
    ))
}
