// TEMPORARY scratch harness of the sim helper (deleted before hand-off).
use stsfair::simulation::policies::{self, PolicyOptions};
use stsfair::simulation::{self, trace, Cluster, Metrics, SimConfig, ThroughputTable};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let table = ThroughputTable::load("../shared/data/gavel/simulation_throughputs.json").unwrap();
    let cluster = Cluster::parse("v100=36,p100=36,k80=36", &table).unwrap();
    let tj = trace::read_trace("../shared/data/gavel-ref/seed0-rate5-36x3.trace").unwrap();
    let jobs = simulation::jobs_from_trace(&tj, &table).unwrap();
    let w: usize = std::env::var("WIN").ok().and_then(|v| v.parse().ok()).unwrap_or(399);
    let config = SimConfig { window: Some((0, w)), ..SimConfig::default() };
    use stsfair::simulation::policies::lp::Method;
    let m = match args.get(2).map(String::as_str) { Some("simplex") => Method::Simplex, Some("highs") => Method::HighsInteriorPoint, _ => Method::InteriorPoint };
    let options = PolicyOptions { sts_solver: std::env::var("STS_SOLVER").unwrap_or("dp".into()), lp_method: m, ..PolicyOptions::default() };
    for p in args[1].split(',') {
        let mut s = policies::by_name(p, &cluster, &config, &options).unwrap();
        let t = std::time::Instant::now();
        let r = simulation::simulate(&table, &cluster, &jobs, &config, s.as_mut(), &mut |_| {}).unwrap();
        let m = Metrics::new(&r, 1.0);
        if std::env::var("JOBS").is_ok() { for (i, j) in r.jobs.iter().enumerate().take(w + 1) { println!("job {i} type {} arrival {:.0} jct {:.1}h steps {}", tj[i].job_type, j.arrival, j.jct().unwrap_or(f64::NAN) / 3600.0, j.total_steps); } }
        println!("{p}: jct {:.3} makespan {:.1} util {:.3} solver {:.3}s total {:.3}s rounds {}", m.avg_jct_h, m.makespan_h, m.utilization, r.solver_seconds, t.elapsed().as_secs_f64(), r.rounds);
    }
}
