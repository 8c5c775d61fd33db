//! Renders the JCT-versus-input-rate curves of `scripts/jct-curves.sh`: reads the runs (one
//! `stsfair simulate --json` line each, tagged with `trace`, `rate` and `seed`) and Gavel's
//! published points, and writes `curves.md` (per trace, rate and policy: the mean average JCT over
//! the seeds with its min-max, and Gavel's point beside) and `jct-single.svg`, `jct-multi.svg`
//! (one line per policy through the means, Gavel's points as dashed lines with markers).
//!
//! Usage: `jct_curves RUNS.jsonl PUBLISHED-CURVES.md OUT_DIR`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;
use serde::Deserialize;

#[derive(Deserialize)]
struct Run {
    trace: String,
    rate: f64,
    policy: String,
    avg_jct_h: f64,
    makespan_h: f64,
    ftf_rho_max: f64,
}

/// Mean, min and max of the seeds' average JCTs at one point, with the seeds' makespans and worst
/// rho.
struct Point {
    rate: f64,
    mean: f64,
    min: f64,
    max: f64,
    seeds: usize,
    makespan: f64,
    rho_max: f64,
}

/// Gavel's published columns and our policy that each one is.
const GAVEL_COLUMNS: [(&str, &str); 3] = [
    ("Gandiva", "gandiva"),
    ("Gavel", "gavel-mmf"),
    ("Gavel w/ SS", "gavel-mmf-ss"),
];

/// (trace, our policy name) -> [(rate, JCT)] from the markdown table of PUBLISHED-CURVES.md
/// (rows `| single, 0.4 | 23.26 | 17.58 | 17.58 | 18.42 |`, columns LAS, Gandiva, Gavel, Gavel
/// w/ SS; `-` where Gavel printed nothing).
fn published(text: &str) -> BTreeMap<(String, String), Vec<(f64, f64)>> {
    let mut out: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let Some((trace, rate)) = cells.first().and_then(|c| c.split_once(", ")) else {
            continue;
        };
        let (Ok(rate), 5) = (rate.parse::<f64>(), cells.len()) else {
            continue;
        };
        // cells[1] is LAS, which we do not run.
        for (i, (_, ours)) in GAVEL_COLUMNS.iter().enumerate() {
            if let Ok(jct) = cells[i + 2].parse::<f64>() {
                out.entry((trace.to_string(), ours.to_string()))
                    .or_default()
                    .push((rate, jct));
            }
        }
    }
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [runs, curves, out] = args.as_slice() else {
        return Err("usage: jct_curves RUNS.jsonl PUBLISHED-CURVES.md OUT_DIR".into());
    };
    let mut by_point: BTreeMap<(String, String), BTreeMap<u64, Vec<Run>>> = BTreeMap::new();
    for (i, line) in std::fs::read_to_string(runs)?.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let run: Run =
            serde_json::from_str(line).map_err(|e| format!("{runs} line {}: {e}", i + 1))?;
        // Rates are keyed in thousandths of a job per hour so that they sort and group exactly.
        let key = (run.rate * 1000.0).round() as u64;
        by_point
            .entry((run.trace.clone(), run.policy.clone()))
            .or_default()
            .entry(key)
            .or_default()
            .push(run);
    }
    let gavel = published(&std::fs::read_to_string(curves)?);
    let mut series: BTreeMap<(String, String), Vec<Point>> = BTreeMap::new();
    for ((trace, policy), rates) in &by_point {
        for runs in rates.values() {
            let jct: Vec<f64> = runs.iter().map(|r| r.avg_jct_h).collect();
            let n = jct.len() as f64;
            series
                .entry((trace.clone(), policy.clone()))
                .or_default()
                .push(Point {
                    rate: runs[0].rate,
                    mean: jct.iter().sum::<f64>() / n,
                    min: jct.iter().copied().fold(f64::INFINITY, f64::min),
                    max: jct.iter().copied().fold(0.0, f64::max),
                    seeds: runs.len(),
                    makespan: runs.iter().map(|r| r.makespan_h).sum::<f64>() / n,
                    rho_max: runs.iter().map(|r| r.ftf_rho_max).fold(0.0, f64::max),
                });
        }
    }
    let out = Path::new(out);
    std::fs::create_dir_all(out)?;
    let mut md = String::new();
    for trace in ["single", "multi"] {
        writeln!(md, "### {trace}-GPU trace\n")?;
        writeln!(
            md,
            "| rate (jobs/h) | policy | seeds | avg JCT (h), mean | min-max | Gavel's (h) | makespan (h), mean | rho max, worst |"
        )?;
        writeln!(md, "|---|---|---|---|---|---|---|---|")?;
        let mut rows: Vec<(f64, &str, &Point)> = series
            .iter()
            .filter(|((t, _), _)| t == trace)
            .flat_map(|((_, p), pts)| pts.iter().map(move |pt| (pt.rate, p.as_str(), pt)))
            .collect();
        rows.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(b.1)));
        for (rate, policy, p) in rows {
            let theirs = gavel
                .get(&(trace.to_string(), policy.to_string()))
                .and_then(|pts| pts.iter().find(|(r, _)| (r - rate).abs() < 1e-9))
                .map_or("-".to_string(), |(_, j)| format!("{j:.2}"));
            writeln!(
                md,
                "| {rate} | {policy} | {} | {:.2} | {:.2}-{:.2} | {theirs} | {:.1} | {:.2} |",
                p.seeds, p.mean, p.min, p.max, p.makespan, p.rho_max
            )?;
        }
        writeln!(md)?;
        draw(
            &out.join(format!("jct-{trace}.svg")),
            &format!("Average JCT, jobs 4000-4999, {trace}-GPU trace"),
            trace,
            &series,
            &gavel,
        )?;
    }
    std::fs::write(out.join("curves.md"), md)?;
    Ok(())
}

fn draw(
    path: &Path,
    title: &str,
    trace: &str,
    series: &BTreeMap<(String, String), Vec<Point>>,
    gavel: &BTreeMap<(String, String), Vec<(f64, f64)>>,
) -> Result<(), Box<dyn std::error::Error>> {
    let ours: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .filter(|((t, _), _)| t == trace)
        .map(|((_, p), pts)| {
            (
                p.as_str(),
                pts.iter().map(|pt| (pt.rate, pt.mean)).collect(),
            )
        })
        .collect();
    let theirs: Vec<(&str, &Vec<(f64, f64)>)> = gavel
        .iter()
        .filter(|((t, _), _)| t == trace)
        .map(|((_, p), pts)| (p.as_str(), pts))
        .collect();
    let all = || {
        ours.iter()
            .flat_map(|(_, s)| s.iter())
            .chain(theirs.iter().flat_map(|(_, s)| s.iter()))
    };
    let x_max = all().map(|p| p.0).fold(0.1, f64::max) * 1.05;
    // Past saturation JCTs explode; cap the axis at 4x the lowest point so that the knee shows.
    let y_min = all().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let y_max = (all().map(|p| p.1).fold(0.0, f64::max) * 1.05).min(4.0 * y_min.max(1.0));
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc("input job rate (jobs/h)")
        .y_desc("average JCT (h)")
        .draw()?;
    let color = |policy: &str| match policy {
        "sts" => BLUE,
        "gavel-mmf-ss" => RED,
        "gavel-mmf" => GREEN,
        "gandiva" => MAGENTA,
        _ => BLACK,
    };
    let clip = |pts: &[(f64, f64)]| -> Vec<(f64, f64)> {
        pts.iter().copied().filter(|p| p.1 <= y_max).collect()
    };
    for (policy, pts) in &ours {
        let c = color(policy);
        chart
            .draw_series(LineSeries::new(clip(pts), c.stroke_width(2)))?
            .label(policy.to_string())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart.draw_series(clip(pts).into_iter().map(|p| Circle::new(p, 3, c.filled())))?;
    }
    for (policy, pts) in &theirs {
        let c = color(policy);
        chart
            .draw_series(DashedLineSeries::new(clip(pts), 6, 4, c.into()))?
            .label(format!("Gavel's {policy} (published)"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
        chart.draw_series(clip(pts).into_iter().map(|p| Cross::new(p, 4, c)))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}
