//! The simulator: trace parsing, determinism, sanity of small runs, and (ignored, long) the
//! replay of Gavel's reference trace against Gavel's own numbers.

use stsfair_sim::policies::{self, PairEstimation, PolicyOptions};
use stsfair_sim::trace::{self, TraceError};
use stsfair_sim::workload::{self, WorkloadSpec};
use stsfair_sim::{
    Cluster, MAX_ALONE_SECONDS, Metrics, SimConfig, SimError, SimResult, Simulation,
    ThroughputTable,
};

/// Gavel's trace, vendored with its provenance in `data/gavel-ref/`.
const GAVEL_TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/data/gavel-ref/seed0-rate5-36x3.trace"
);

fn table() -> ThroughputTable {
    ThroughputTable::bundled().expect("the bundled Gavel throughputs load")
}

fn run(
    table: &ThroughputTable,
    cluster: &str,
    jobs: &[trace::TraceJob],
    policy: &str,
    config: &SimConfig,
) -> SimResult {
    let mut options = PolicyOptions::default();
    options.sts.solver = stsfair::SolverKind::Dp;
    run_with(table, cluster, jobs, policy, config, &options)
}

fn run_with(
    table: &ThroughputTable,
    cluster: &str,
    jobs: &[trace::TraceJob],
    policy: &str,
    config: &SimConfig,
    options: &PolicyOptions,
) -> SimResult {
    let cluster = Cluster::parse(cluster, table).unwrap();
    let jobs = stsfair_sim::jobs_from_trace(jobs, table).unwrap();
    let mut scheduler = policies::by_name(policy, &cluster, config, options).unwrap();
    stsfair_sim::simulate(
        table,
        &cluster,
        &jobs,
        config,
        scheduler.as_mut(),
        &mut |_| {},
    )
    .unwrap()
}

fn generated(table: &ThroughputTable, jobs: usize, rate: f64, seed: u64) -> Vec<trace::TraceJob> {
    let spec = WorkloadSpec {
        jobs,
        rate,
        seed,
        multi_gpu: false,
        reference: "v100".into(),
    };
    workload::generate(&spec, table).unwrap()
}

/// 60 jobs of Gavel's multi-GPU mix at 12 jobs/h (seed 3), with at least one distributed job.
fn multi_gpu_mix(table: &ThroughputTable) -> Vec<trace::TraceJob> {
    let spec = WorkloadSpec {
        jobs: 60,
        rate: 12.0,
        seed: 3,
        multi_gpu: true,
        reference: "v100".into(),
    };
    let multi = workload::generate(&spec, table).unwrap();
    assert!(
        multi.iter().any(|j| j.scale_factor > 1),
        "no distributed job"
    );
    multi
}

const GOOD: &str = "ResNet-18 (batch size 64)\tpython3 main.py --batch_size 64\timage_classification/cifar10\t--num_steps\t1\t1646636\t1\t1\t-1.000000\t0\n\
A3C\tpython3 main.py --env PongNoFrameskip-v4\trl\t--max-steps\t0\t8000\t1\t1\t-1.000000\t195.668858\n";

#[test]
fn trace_parses_gavel_lines() {
    let jobs = trace::parse_trace(GOOD).unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].job_type, "ResNet-18 (batch size 64)");
    assert_eq!(jobs[0].total_steps, 1_646_636);
    assert!(jobs[0].needs_data_dir);
    assert_eq!(jobs[1].job_type, "A3C");
    assert_eq!(jobs[1].arrival, 195.668858);
    assert_eq!(jobs[1].slo, None);
    assert_eq!(
        trace::parse_trace(&trace::write_trace(&jobs)).unwrap(),
        jobs
    );
}

#[test]
fn trace_reads_the_reference_file() {
    let jobs = trace::read_trace(GAVEL_TRACE).unwrap();
    assert_eq!(jobs.len(), 1368);
    assert!(jobs.iter().all(|j| j.scale_factor == 1));
    // Every job type of the trace is known to the throughput table.
    let table = table();
    assert_eq!(
        stsfair_sim::jobs_from_trace(&jobs, &table).unwrap().len(),
        1368
    );
}

#[test]
fn trace_errors_name_line_and_field() {
    let cases: &[(&str, &str)] = &[
        (
            "A3C\tx\ty\tz\t0\t8000\t1\t1\t-1",
            "trace line 3: expected 10 tab-separated fields, got 9",
        ),
        (
            "A3C\tx\ty\tz\t2\t8000\t1\t1\t-1\t5",
            "trace line 3: field 5 (needs data dir) must be 0 or 1 (got \"2\")",
        ),
        (
            "A3C\tx\ty\tz\t0\t-8\t1\t1\t-1\t5",
            "trace line 3: field 6 (total steps) must be a positive integer (got \"-8\")",
        ),
        (
            "A3C\tx\ty\tz\t0\t18446744073709551616\t1\t1\t-1\t5",
            "trace line 3: field 6 (total steps) must be at most 18446744073709551615 (2^64 - 1) (got \"18446744073709551616\")",
        ),
        (
            "A3C\tx\ty\tz\t0\t8000\t4294967296\t1\t-1\t5",
            "trace line 3: field 7 (scale factor) must be at most 4294967295 (2^32 - 1) (got \"4294967296\")",
        ),
        (
            "A3C\tx\ty\tz\t0\t8000\t0\t1\t-1\t5",
            "trace line 3: field 7 (scale factor) must be a positive integer (got \"0\")",
        ),
        (
            "A3C\tx\ty\tz\t0\t8000\t1\t0\t-1\t5",
            "trace line 3: field 8 (priority weight) must be > 0 (got \"0\")",
        ),
        (
            "A3C\tx\ty\tz\t0\t8000\t1\t1\tslow\t5",
            "trace line 3: field 9 (slo) must be a number (got \"slow\")",
        ),
        (
            "A3C\tx\ty\tz\t0\t8000\t1\t1\t-1\tinf",
            "trace line 3: field 10 (arrival time) must be finite (got \"inf\")",
        ),
        (
            "A3C\tx\ty\tz\t0\t8000\t1\t1\t-1\t1e300",
            "trace line 3: field 10 (arrival time) must be at most 1e12 seconds (31,700 years) (got \"1e300\")",
        ),
        (
            "A3C\tx\ty\tz\t0\t8000\t1\t1\t-1\t5",
            "trace line 3: arrival time 5 is before the previous line's 195.668858; arrivals must be sorted",
        ),
    ];
    for (line, message) in cases {
        let text = format!("{GOOD}{line}\n");
        let err = trace::parse_trace(&text).unwrap_err();
        assert_eq!(err.to_string(), *message, "for line {line:?}");
    }
    assert!(matches!(trace::parse_trace("\n\n"), Err(TraceError::Empty)));
    assert!(matches!(
        trace::read_trace("/nonexistent/trace"),
        Err(TraceError::Io { .. })
    ));
}

#[test]
fn unknown_job_type_is_reported_with_its_line() {
    let table = table();
    let jobs = trace::parse_trace(&GOOD.replace("A3C\t", "GPT-9\t")).unwrap();
    let err = stsfair_sim::jobs_from_trace(&jobs, &table).unwrap_err();
    assert_eq!(
        err.to_string(),
        "trace job 1 (line 2): unknown job type \"GPT-9\" with scale factor 1"
    );
}

#[test]
fn cluster_and_window_parse() {
    let table = table();
    let c = Cluster::parse("v100=2, k80=3", &table).unwrap();
    assert_eq!(c.counts(), vec![2, 3]);
    assert!(
        Cluster::parse("v100=2,tpu=3", &table)
            .unwrap_err()
            .to_string()
            .contains("unknown gpu type \"tpu\"")
    );
    assert!(Cluster::parse("v100", &table).is_err());
    assert!(Cluster::parse("v100=0", &table).is_err());
    // The round problem's limit, for every policy, said as a limit (past 2^32 it was "must be
    // a non-negative integer"; past 10^6 sts failed at its first arrival).
    assert_eq!(
        Cluster::parse("v100=1000000", &table).unwrap().counts(),
        vec![1_000_000]
    );
    for count in ["1000001", "4294967296", "1000000000000", "-1", "2.5"] {
        let err = Cluster::parse(&format!("v100={count}"), &table).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cluster \"v100={count}\": count of v100 must be an integer in [0, 1000000] \
                 (got \"{count}\")"
            )
        );
    }
    // A cluster built by hand past the limit is refused before the run too.
    let mut big = Cluster::parse("v100=1", &table).unwrap();
    big.types[0].count = u32::MAX;
    let jobs = stsfair_sim::jobs_from_trace(&trace::parse_trace(GOOD).unwrap(), &table).unwrap();
    let err = Simulation::new(&table, &big, &jobs, &SimConfig::default()).unwrap_err();
    assert!(matches!(err, SimError::Cluster { .. }), "{err}");
    assert_eq!(stsfair_sim::parse_window("0-399").unwrap(), (0, 399));
    assert!(stsfair_sim::parse_window("9-3").is_err());
}

#[test]
fn generated_workloads_are_deterministic_and_shaped_like_gavel() {
    let table = table();
    let a = generated(&table, 300, 5.0, 7);
    assert_eq!(a, generated(&table, 300, 5.0, 7));
    assert_ne!(a, generated(&table, 300, 5.0, 8));
    assert_eq!(a[0].arrival, 0.0);
    // Mean gap ~ 720 s at 5 jobs/h; durations within 60 * 10^1.5 .. 60 * 10^4 s on a V100.
    let mean_gap = a.last().unwrap().arrival / 299.0;
    assert!((500.0..1000.0).contains(&mean_gap), "mean gap {mean_gap}");
    let v100 = table.worker("v100").unwrap();
    for j in &a {
        let t = table.job_type(&j.job_type, 1).unwrap();
        let seconds = j.total_steps as f64 / table.solo(v100, t);
        assert!(
            (60.0 * 10f64.powf(1.5) - 1.0..=60.0 * 1e4).contains(&seconds),
            "{seconds}"
        );
    }
}

/// A job longer alone than `MAX_ALONE_SECONDS` is refused before the run (a trace line of
/// 10^15 steps ran for days), naming its line and field; one just below is accepted.
#[test]
fn jobs_too_long_to_simulate_are_refused_by_line() {
    let table = table();
    let cluster = Cluster::parse("v100=2,k80=2", &table).unwrap();
    let mut jobs =
        stsfair_sim::jobs_from_trace(&trace::parse_trace(GOOD).unwrap(), &table).unwrap();
    let v100 = table.worker("v100").unwrap();
    let solo = table.solo(v100, jobs[1].job_type);
    let config = SimConfig::default();
    jobs[1].total_steps = (MAX_ALONE_SECONDS * solo * 0.999).floor();
    assert!(Simulation::new(&table, &cluster, &jobs, &config).is_ok());
    jobs[1].total_steps = (MAX_ALONE_SECONDS * solo * 1.001).ceil();
    let err = Simulation::new(&table, &cluster, &jobs, &config).unwrap_err();
    assert!(err.is_input());
    let text = err.to_string();
    assert!(
        text.starts_with("trace job 1 (line 2): field 6 (total steps) "),
        "{text}"
    );
    assert!(
        text.contains("alone on its fastest gpu type (v100, "),
        "{text}"
    );
    assert!(
        text.ends_with("more than the limit of 1e8 s (3.2 years) of the simulation"),
        "{text}"
    );
    // A throughput so small that the time overflows is refused, not let through as NaN.
    jobs[1].total_steps = 1e300;
    assert!(matches!(
        Simulation::new(&table, &cluster, &jobs, &config),
        Err(SimError::TooLong { .. })
    ));
}

/// Generated jobs last at most 10^4 minutes on the reference type (`workload`), and no job type
/// of the bundled throughputs is more than 15 times slower on one type than on another: no
/// generated workload, on any cluster, comes within 10 times of `MAX_ALONE_SECONDS`.
#[test]
fn generated_workloads_stay_far_below_the_length_limit() {
    let table = table();
    let mut worst: f64 = 1.0;
    for j in 0..table.job_types().len() {
        let solos: Vec<f64> = (0..table.workers().len())
            .map(|w| table.solo(w, j))
            .filter(|&s| s > 0.0)
            .collect();
        for a in &solos {
            for b in &solos {
                worst = worst.max(a / b);
            }
        }
    }
    assert!(worst < 15.0, "{worst}");
    assert!(60.0 * 1e4 * worst < MAX_ALONE_SECONDS / 10.0);
}

/// Generated arrivals are held to a trace's limit (1e12 s): at 1e-15 jobs/h they reached 1e18 s
/// and the run's metrics broke their own bounds.
#[test]
fn generated_arrivals_past_the_trace_limit_refuse_the_rate() {
    let table = table();
    let spec = |rate: f64| WorkloadSpec {
        jobs: 20,
        rate,
        seed: 0,
        multi_gpu: false,
        reference: "v100".into(),
    };
    let err = workload::generate(&spec(1e-15), &table).unwrap_err();
    assert!(err.is_input());
    let text = err.to_string();
    assert!(
        text.starts_with("rate must be high enough that every arrival is at most 1e12 seconds"),
        "{text}"
    );
    assert!(
        text.contains("(got 1e-15 jobs per hour: job 1 would arrive at "),
        "{text}"
    );
    let jobs = workload::generate(&spec(1e-6), &table).unwrap();
    assert!(jobs.iter().all(|j| j.arrival <= trace::MAX_ARRIVAL));
}

/// Every window job finishes, no job beats its best solo speed, and the metrics are in range.
fn sane(result: &SimResult, lambda: f64) {
    for (i, j) in result.jobs.iter().enumerate() {
        let jct = j
            .jct()
            .unwrap_or_else(|| panic!("job {i} of {} did not finish", result.policy));
        assert!(
            jct + 1e-6 >= j.total_steps / j.best_throughput,
            "{}: job {i} ran faster than alone",
            result.policy
        );
    }
    let m = Metrics::new(result, lambda);
    assert_eq!(m.finished, m.jobs);
    assert!(m.avg_jct_h > 0.0 && m.makespan_h > 0.0 && m.throughput_jobs_h > 0.0);
    assert!(m.ftf_rho_p50 > 0.0 && m.ftf_rho_max >= m.ftf_rho_p50);
    assert!(m.jain > 0.0 && m.jain <= 1.0 + 1e-12);
    assert!((0.0..=1.0).contains(&m.share_meeting_lambda));
    assert!(
        (0.0..=1.0 + 1e-9).contains(&m.utilization),
        "utilization {}",
        m.utilization
    );
    assert!(
        m.drain_h >= 0.0 && m.drain_h.is_finite(),
        "drain {}",
        m.drain_h
    );
    assert!(
        m.work_per_busy_gpu > 0.0 && m.work_per_busy_gpu.is_finite(),
        "work per busy GPU {}",
        m.work_per_busy_gpu
    );
    // Without co-location a GPU delivers at most its job's best solo speed.
    if ["fifo", "gavel-mmf", "ftf"].contains(&result.policy.as_str()) {
        assert!(
            m.work_per_busy_gpu <= 1.0 + 1e-9,
            "{}: work per busy GPU {} without co-location",
            result.policy,
            m.work_per_busy_gpu
        );
    }
}

/// `drain_h`: 0 when jobs are still arriving as the window's last job finishes (Gavel's
/// methodology), else the hours from the last arrival to the window's end.
#[test]
fn drain_is_the_window_after_the_last_arrival() {
    let table = table();
    let jobs = generated(&table, 60, 2.0, 4);
    let config = |window| SimConfig {
        window: Some(window),
        ..SimConfig::default()
    };
    let last = jobs.last().unwrap().arrival;
    // The first job's window ends long before the 60th arrival (about 30 h later).
    let early = run(
        &table,
        "v100=8,p100=8,k80=8",
        &jobs,
        "fifo",
        &config((0, 0)),
    );
    assert!(early.window_end < last, "{} >= {last}", early.window_end);
    assert_eq!(Metrics::new(&early, 1.0).drain_h, 0.0);
    // The last jobs' window ends after every arrival.
    let late = run(
        &table,
        "v100=8,p100=8,k80=8",
        &jobs,
        "fifo",
        &config((50, 59)),
    );
    let drain = Metrics::new(&late, 1.0).drain_h;
    assert!(drain > 0.0);
    assert!((drain - (late.window_end - last) / 3600.0).abs() < 1e-9);
}

#[test]
fn small_runs_of_every_policy_are_sane_and_deterministic() {
    let table = table();
    let jobs = generated(&table, 30, 6.0, 1);
    let config = SimConfig::default();
    for policy in policies::policy_names() {
        let a = run(&table, "v100=3,p100=3,k80=3", &jobs, policy, &config);
        sane(&a, config.lambda);
        let b = run(&table, "v100=3,p100=3,k80=3", &jobs, policy, &config);
        assert_eq!(a.jobs, b.jobs, "{policy} is not deterministic");
    }
}

#[test]
fn a_lone_job_runs_at_its_best_speed() {
    let table = table();
    let jobs = generated(&table, 1, 1.0, 3);
    for policy in policies::policy_names() {
        let r = run(
            &table,
            "v100=1,p100=1,k80=1",
            &jobs,
            policy,
            &SimConfig::default(),
        );
        let j = &r.jobs[0];
        let alone = j.total_steps / j.best_throughput;
        // Whole steps per round and the round boundary cost at most one round.
        let jct = j.jct().unwrap();
        assert!(
            jct >= alone - 1e-6 && jct <= alone + 360.0 + 1e-6,
            "{policy}: {jct} vs {alone}"
        );
        // Alone on its fastest type, every busy GPU-second is a second at the best speed.
        assert!(
            (r.work_per_busy_gpu - 1.0).abs() < 1e-9,
            "{policy}: work per busy GPU {}",
            r.work_per_busy_gpu
        );
    }
}

/// The run stops at the end of the round in which the window's last job finished (Gavel's
/// `jobs_to_complete`): jobs still running then stay unfinished. With 40 jobs at 8 jobs/h a
/// long window job (job 14 needs about a day) can outlive every later job, so the workload here
/// keeps arriving for longer than the window's jobs run.
#[test]
fn window_limits_the_metrics_and_the_run() {
    let table = table();
    let jobs = generated(&table, 200, 8.0, 5);
    let config = SimConfig {
        window: Some((5, 14)),
        ..SimConfig::default()
    };
    let r = run(&table, "v100=4,p100=4,k80=4", &jobs, "fifo", &config);
    let m = Metrics::new(&r, 1.0);
    assert_eq!((m.jobs, m.finished), (10, 10));
    assert!(r.jobs[5..=14].iter().all(|j| j.completion.is_some()));
    // The run stops at the end of the round in which the last window job finished.
    let last = r.jobs[5..=14]
        .iter()
        .filter_map(|j| j.completion)
        .fold(0.0, f64::max);
    assert!(r.window_end >= last && r.window_end - last <= 360.0 + 1e-6);
    assert!(
        r.jobs
            .iter()
            .filter_map(|j| j.completion)
            .all(|c| c <= r.window_end)
    );
    assert!(
        r.jobs.iter().any(|j| j.completion.is_none()),
        "the run went on past the window"
    );
}

/// The crowded run the sts defaults are checked on: 60 single-GPU jobs at 12 jobs/h on three
/// GPUs of each type, half-GPU slots.
const CROWDED: &str = "v100=3,p100=3,k80=3";

/// The multi-GPU tests' cluster: room for Gavel's 8-worker jobs on every type.
const ROOM_FOR_8: &str = "v100=8,p100=8,k80=8";

/// sts with the defaults on [`CROWDED`] is sane and deterministic, and its schedule differs from
/// the one with `off` (the defaults with one step turned off, named `what`).
fn defaults_differ_from(
    table: &ThroughputTable,
    jobs: &[trace::TraceJob],
    off: &PolicyOptions,
    what: &str,
) {
    let mut on = PolicyOptions::default();
    on.sts.solver = stsfair::SolverKind::Dp;
    options_differ(table, jobs, &on, off, what);
}

/// sts with options `on` on the crowded cluster: sane and deterministic, and the schedule is
/// not the one with options `off` (sane too), which is returned.
fn options_differ(
    table: &ThroughputTable,
    jobs: &[trace::TraceJob],
    on: &PolicyOptions,
    off: &PolicyOptions,
    what: &str,
) -> SimResult {
    let config = SimConfig::default();
    let with = run_with(table, CROWDED, jobs, "sts", &config, on);
    sane(&with, config.lambda);
    assert_eq!(
        with.jobs,
        run_with(table, CROWDED, jobs, "sts", &config, on).jobs,
        "not deterministic"
    );
    let without = run_with(table, CROWDED, jobs, "sts", &config, off);
    sane(&without, config.lambda);
    assert_ne!(with.jobs, without.jobs, "the {what} changed nothing");
    without
}

/// sts's pairing step is on by default, changes the schedule of a crowded half-GPU run (and
/// stays sane and deterministic), and leaves other unit ladders alone.
#[test]
fn sts_pairing_is_on_by_default_and_applies_to_half_gpus() {
    let table = table();
    let jobs = generated(&table, 60, 12.0, 2);
    let config = SimConfig::default();
    let mut off = PolicyOptions::default();
    assert_eq!(off.sts.pairing, Some(1.4));
    off.sts.pairing = None;
    defaults_differ_from(&table, &jobs, &off, "pairing step");
    // Quarter GPUs: the step does not apply, the run is the one without it.
    let mut four = PolicyOptions::default();
    four.sts.units = 4;
    let mut four_off = four.clone();
    four_off.sts.pairing = None;
    assert_eq!(
        run_with(&table, CROWDED, &jobs, "sts", &config, &four).jobs,
        run_with(&table, CROWDED, &jobs, "sts", &config, &four_off).jobs
    );
}

/// sts's pairing step derives its thresholds by GPU type from the data by default: on Gavel's
/// table the K80s (the slowest type) at 1.0 and the P100s (weak pairs) infinite, the V100s at
/// the general threshold; the crowded run is the one with those thresholds given, and each
/// changes it. An override equal to the general threshold is the run without overrides.
/// Without K80s the P100s are the slowest type of the cluster, at 1.0.
#[test]
fn sts_pairing_thresholds_by_type_are_derived_from_the_data() {
    let table = table();
    let jobs = generated(&table, 60, 12.0, 2);
    let config = SimConfig::default();
    let general = stsfair::policy::options::DEFAULT_PAIRING;
    assert_eq!(PolicyOptions::default().sts.pairing_by_type, None);
    let cluster = |text: &str| Cluster::parse(text, &table).expect("a cluster");
    let derived = |text: &str, threshold: f64| -> Vec<(String, f64)> {
        let c = cluster(text);
        let data = policies::TableData::new(&table, &c, Default::default());
        stsfair::policy::rules::derived_pairing_by_type(&data, c.types.len(), threshold)
            .into_iter()
            .map(|(k, t)| (c.types[k].name.clone(), t))
            .collect()
    };
    let gavel = vec![
        ("p100".to_string(), f64::INFINITY),
        ("k80".to_string(), 1.0),
    ];
    assert_eq!(derived(CROWDED, general), gavel);
    assert_eq!(
        derived("v100=4,p100=4", general),
        vec![("p100".to_string(), 1.0)]
    );
    assert_eq!(derived("v100=4", general), vec![]);
    // Halfway from 1 to 2.0 is 1.5: the V100s' median pair sum (1.37) is below it too.
    assert_eq!(
        derived(CROWDED, 2.0),
        vec![
            ("v100".to_string(), f64::INFINITY),
            ("p100".to_string(), f64::INFINITY),
            ("k80".to_string(), 1.0),
        ]
    );
    let run_of = |cluster: &str, options: &PolicyOptions| {
        run_with(&table, cluster, &jobs, "sts", &config, options).jobs
    };
    let mut given = PolicyOptions::default();
    given.sts.pairing_by_type = Some(gavel.clone());
    assert_eq!(
        run_of(CROWDED, &PolicyOptions::default()),
        run_of(CROWDED, &given)
    );
    let mut none = PolicyOptions::default();
    none.sts.pairing_by_type = Some(Vec::new());
    defaults_differ_from(&table, &jobs, &none, "K80s' and P100s' pairing thresholds");
    let mut same = none.clone();
    same.sts.pairing_by_type = Some(vec![
        ("k80".to_string(), general),
        ("p100".to_string(), general),
    ]);
    assert_eq!(run_of(CROWDED, &same), run_of(CROWDED, &none));
    // Each derived threshold on its own changes the crowded run.
    for (name, sum) in gavel {
        let mut one = none.clone();
        one.sts.pairing_by_type = Some(vec![(name.clone(), sum)]);
        assert_ne!(
            run_of(CROWDED, &one),
            run_of(CROWDED, &none),
            "{name}={sum}"
        );
    }
}

/// sts's attained-service weights apply only in crowded rounds by default (more jobs than 1.5
/// times the cluster's capacity): a crowded run differs from both rules it switches between, a
/// ratio no round reaches is equal weights in every round, and ratio 0 is attained service in
/// every round.
#[test]
fn sts_attained_service_applies_when_crowded() {
    let table = table();
    let jobs = generated(&table, 60, 12.0, 2);
    let config = SimConfig::default();
    let defaults = PolicyOptions::default();
    assert_eq!(defaults.sts.crowding, Some(1.5));
    let mut always = defaults.clone();
    always.sts.crowding = None;
    defaults_differ_from(&table, &jobs, &always, "crowding threshold");
    let mut trace = defaults.clone();
    trace.sts.weights = stsfair::policy::Weights::Trace;
    let on = run_with(&table, CROWDED, &jobs, "sts", &config, &defaults);
    assert_ne!(
        on.jobs,
        run_with(&table, CROWDED, &jobs, "sts", &config, &trace).jobs
    );
    let mut never = defaults.clone();
    never.sts.crowding = Some(1e9);
    assert_eq!(
        run_with(&table, CROWDED, &jobs, "sts", &config, &never).jobs,
        run_with(&table, CROWDED, &jobs, "sts", &config, &trace).jobs
    );
    let mut zero = defaults.clone();
    zero.sts.crowding = Some(0.0);
    assert_eq!(
        run_with(&table, CROWDED, &jobs, "sts", &config, &zero).jobs,
        run_with(&table, CROWDED, &jobs, "sts", &config, &always).jobs
    );
}

/// sts plans its uncrowded rounds of single-GPU jobs as paired rounds by default: on a run that
/// is never crowded every round is paired, so what runs is what was planned (every promise kept,
/// `realized_over_planned` exactly 1), and the schedule is not the one without them, whose half
/// GPUs realize less than planned. Where only distributed jobs run no round is paired, and the
/// two runs are the same.
#[test]
fn sts_paired_rounds_run_what_they_plan() {
    let table = table();
    let config = SimConfig::default();
    let defaults = PolicyOptions::default();
    assert!(defaults.sts.paired_rounds);
    let mut off = defaults.clone();
    off.sts.paired_rounds = false;
    let jobs = generated(&table, 40, 6.0, 4);
    let cluster = "v100=6,p100=6,k80=6";
    let on = run_with(&table, cluster, &jobs, "sts", &config, &defaults);
    let without = run_with(&table, cluster, &jobs, "sts", &config, &off);
    assert_eq!(on.jobs.len(), 40);
    assert!(on.jobs.iter().all(|j| j.completion.is_some()));
    assert_eq!(on.realized_over_planned, Some(1.0));
    assert!(without.realized_over_planned.is_some_and(|r| r < 1.0));
    assert_ne!(on.jobs, without.jobs);
    assert_eq!(
        on.jobs,
        run_with(&table, cluster, &jobs, "sts", &config, &defaults).jobs
    );
    // Distributed jobs only: no round is paired.
    let distributed: Vec<trace::TraceJob> = multi_gpu_mix(&table)
        .into_iter()
        .filter(|j| j.scale_factor > 1)
        .collect();
    let wide = "v100=8,p100=8,k80=8";
    assert_eq!(
        run_with(&table, wide, &distributed, "sts", &config, &defaults).jobs,
        run_with(&table, wide, &distributed, "sts", &config, &off).jobs
    );
}

/// sts holds its attained-service weights after a crowded round until the next arrival by
/// default: on a crowded run whose arrivals stop, the drain differs from the run without the
/// hold; where attained service applies in every round (`None`), or in none, the hold changes
/// nothing.
#[test]
fn sts_attained_service_holds_until_the_next_arrival() {
    let table = table();
    let jobs = generated(&table, 60, 12.0, 2);
    let config = SimConfig::default();
    let defaults = PolicyOptions::default();
    assert!(defaults.sts.crowding_hold);
    let mut off = defaults.clone();
    off.sts.crowding_hold = false;
    defaults_differ_from(&table, &jobs, &off, "hold until the next arrival");
    for ratio in [None, Some(1e9)] {
        let mut held = defaults.clone();
        held.sts.crowding = ratio;
        let mut plain = held.clone();
        plain.sts.crowding_hold = false;
        assert_eq!(
            run_with(&table, CROWDED, &jobs, "sts", &config, &held).jobs,
            run_with(&table, CROWDED, &jobs, "sts", &config, &plain).jobs,
            "{ratio:?}"
        );
    }
}

/// sts's sharing of matched V100s in crowded rounds is off by default: on the crowded run
/// `v100` changes the schedule (sane and deterministic); where no round is crowded, or on a
/// type the cluster lacks, or with the pairing step off (nothing matched), it changes nothing.
#[test]
fn sts_crowded_sharing_is_off_by_default_and_acts_only_where_crowded() {
    let table = table();
    let jobs = generated(&table, 60, 12.0, 2);
    let config = SimConfig::default();
    let defaults = PolicyOptions::default();
    assert!(defaults.sts.crowded_sharing.is_empty());
    let mut sharing = defaults.clone();
    sharing.sts.crowded_sharing = vec!["v100".to_string()];
    options_differ(&table, &jobs, &sharing, &defaults, "sharing when crowded");
    let run_of = |cluster: &str, options: &PolicyOptions| {
        run_with(&table, cluster, &jobs, "sts", &config, options).jobs
    };
    let mut calm = defaults.clone();
    calm.sts.crowding = Some(1e9);
    let mut calm_sharing = sharing.clone();
    calm_sharing.sts.crowding = Some(1e9);
    assert_eq!(run_of(CROWDED, &calm_sharing), run_of(CROWDED, &calm));
    let no_v100 = "p100=3,k80=3";
    assert_eq!(run_of(no_v100, &sharing), run_of(no_v100, &defaults));
    let mut unpaired = defaults.clone();
    unpaired.sts.pairing = None;
    let mut unpaired_sharing = sharing.clone();
    unpaired_sharing.sts.pairing = None;
    assert_eq!(
        run_of(CROWDED, &unpaired_sharing),
        run_of(CROWDED, &unpaired)
    );
}

/// sts's starvation promotion is on by default (factor 4): on a run crowded in every round
/// (attained service always on) with arrivals far past the cluster's capacity, it changes the
/// schedule; a factor no job reaches is the run without it.
#[test]
fn sts_promotes_starved_jobs_by_default() {
    let table = table();
    let jobs = generated(&table, 80, 30.0, 4);
    let config = SimConfig::default();
    let mut always = PolicyOptions::default();
    assert_eq!(always.sts.promotion, Some(4.0));
    always.sts.crowding = None;
    let mut off = always.clone();
    off.sts.promotion = None;
    let without = options_differ(&table, &jobs, &always, &off, "promotion");
    let mut unreached = always.clone();
    unreached.sts.promotion = Some(1e12);
    assert_eq!(
        run_with(&table, CROWDED, &jobs, "sts", &config, &unreached).jobs,
        without.jobs
    );
}

/// sts's critical-job rule is on by default (factor 1.2, once no job has arrived for an hour):
/// on a run crowded in every round it changes the schedule (in the drain after the last
/// arrival), a factor no job reaches or a wait for arrivals longer than the run is the run
/// without it, and where attained service never applies (a crowding threshold no round
/// passes) it changes nothing.
#[test]
fn sts_weights_critical_jobs_as_new_by_default() {
    let table = table();
    let jobs = generated(&table, 80, 30.0, 4);
    let config = SimConfig::default();
    let mut always = PolicyOptions::default();
    assert_eq!(always.sts.critical, Some(1.2));
    always.sts.crowding = None;
    let mut off = always.clone();
    off.sts.critical = None;
    let without = options_differ(&table, &jobs, &always, &off, "critical-job rule");
    let mut unreached = always.clone();
    unreached.sts.critical = Some(1e12);
    assert_eq!(
        run_with(&table, CROWDED, &jobs, "sts", &config, &unreached).jobs,
        without.jobs
    );
    assert_eq!(always.sts.critical_after, 3600.0);
    let mut never_quiet = always.clone();
    never_quiet.sts.critical_after = 1e12;
    assert_eq!(
        run_with(&table, CROWDED, &jobs, "sts", &config, &never_quiet).jobs,
        without.jobs
    );
    let mut never = PolicyOptions::default();
    never.sts.crowding = Some(1e6);
    let mut never_off = never.clone();
    never_off.sts.critical = None;
    assert_eq!(
        run_with(&table, CROWDED, &jobs, "sts", &config, &never).jobs,
        run_with(&table, CROWDED, &jobs, "sts", &config, &never_off).jobs
    );
}

/// sts's second stage is on by default (exponent 0.25): on a crowded run on three GPU types it
/// changes where jobs run, the runs stay sane and deterministic, and with trace weights (all
/// equal, so that both stages value every option alike) it changes nothing.
#[test]
fn sts_second_stage_is_on_by_default_and_moves_jobs_between_types() {
    let table = table();
    let jobs = generated(&table, 60, 12.0, 2);
    let config = SimConfig::default();
    let mut off = PolicyOptions::default();
    assert_eq!(off.sts.second_stage, Some(0.25));
    off.sts.second_stage = None;
    defaults_differ_from(&table, &jobs, &off, "second stage");
    let mut equal = PolicyOptions::default();
    equal.sts.weights = stsfair::policy::Weights::Trace;
    let mut equal_off = equal.clone();
    equal_off.sts.second_stage = None;
    assert_eq!(
        run_with(&table, CROWDED, &jobs, "sts", &config, &equal).jobs,
        run_with(&table, CROWDED, &jobs, "sts", &config, &equal_off).jobs
    );
}

/// sts's second stage runs only where the attained-service weights apply by default: on a
/// multi-GPU mix that is never crowded (the weights differ only by the workers' factor) the
/// schedule is the one without a second stage and not the one with it in every round; on a
/// crowded single-GPU run both rules give one schedule (its uncrowded rounds have equal
/// weights, where the second stage has nothing to do).
#[test]
fn sts_second_stage_runs_only_where_attained_service_applies() {
    use stsfair::policy::SecondStageRounds;
    let table = table();
    let config = SimConfig::default();
    let cluster = ROOM_FOR_8;
    let defaults = PolicyOptions::default();
    assert_eq!(
        defaults.sts.second_stage_rounds,
        SecondStageRounds::Attained
    );
    let mut all = defaults.clone();
    all.sts.second_stage_rounds = SecondStageRounds::All;
    let mut off = defaults.clone();
    off.sts.second_stage = None;
    // 30 jobs never outnumber 1.5 times the 24 GPUs (`sts_weights_count_the_workers_by_default`).
    let few = &multi_gpu_mix(&table)[..30];
    let attained = run_with(&table, cluster, few, "sts", &config, &defaults);
    sane(&attained, config.lambda);
    assert_eq!(
        attained.jobs,
        run_with(&table, cluster, few, "sts", &config, &off).jobs
    );
    let everywhere = run_with(&table, cluster, few, "sts", &config, &all);
    sane(&everywhere, config.lambda);
    assert_ne!(
        attained.jobs, everywhere.jobs,
        "the second stage in every round changed nothing"
    );
    let single = generated(&table, 60, 12.0, 2);
    assert_eq!(
        run_with(&table, CROWDED, &single, "sts", &config, &defaults).jobs,
        run_with(&table, CROWDED, &single, "sts", &config, &all).jobs
    );
}

/// sts's attained service counts a distributed job's service once by default: on single-GPU
/// jobs that is the same schedule as counting GPU time, on a multi-GPU mix another one (the
/// distributed jobs keep larger weights).
#[test]
fn sts_attained_service_counts_distributed_jobs_once() {
    let table = table();
    let config = SimConfig::default();
    let cluster = ROOM_FOR_8;
    let defaults = PolicyOptions::default();
    assert_eq!(defaults.sts.weights, stsfair::policy::Weights::Attained);
    let mut gpu = defaults.clone();
    gpu.sts.weights = stsfair::policy::Weights::AttainedGpu;
    let single = generated(&table, 40, 12.0, 3);
    assert_eq!(
        run_with(&table, cluster, &single, "sts", &config, &defaults).jobs,
        run_with(&table, cluster, &single, "sts", &config, &gpu).jobs
    );
    let multi = multi_gpu_mix(&table);
    let once = run_with(&table, cluster, &multi, "sts", &config, &defaults);
    let per_gpu = run_with(&table, cluster, &multi, "sts", &config, &gpu);
    sane(&once, config.lambda);
    sane(&per_gpu, config.lambda);
    assert_ne!(once.jobs, per_gpu.jobs, "counting GPU time changed nothing");
}

/// sts weights a distributed job by its workers to the power 0.75 by default: on single-GPU
/// jobs that is the same schedule as one weight a job (exponent 0; every factor is 1), on a
/// multi-GPU mix another one, and exponent 1 a third, with equal weights as well as with
/// attained service.
#[test]
fn sts_weights_count_the_workers_by_default() {
    let table = table();
    let config = SimConfig::default();
    let cluster = ROOM_FOR_8;
    let defaults = PolicyOptions::default();
    assert_eq!(defaults.sts.size_exponent, 0.75);
    let mut one = defaults.clone();
    one.sts.size_exponent = 0.0;
    let single = generated(&table, 40, 12.0, 3);
    assert_eq!(
        run_with(&table, cluster, &single, "sts", &config, &defaults).jobs,
        run_with(&table, cluster, &single, "sts", &config, &one).jobs
    );
    let multi = multi_gpu_mix(&table);
    for weights in [
        stsfair::policy::Weights::Attained,
        stsfair::policy::Weights::Trace,
    ] {
        let mut runs = Vec::new();
        for p in [0.0, 0.75, 1.0] {
            let mut options = defaults.clone();
            options.sts.weights = weights;
            options.sts.size_exponent = p;
            let run = run_with(&table, cluster, &multi, "sts", &config, &options);
            sane(&run, config.lambda);
            runs.push(run.jobs);
        }
        assert_ne!(
            runs[0], runs[1],
            "{weights:?}: exponents 0 and 0.75 gave one schedule"
        );
        assert_ne!(
            runs[1], runs[2],
            "{weights:?}: exponents 0.75 and 1 gave one schedule"
        );
    }
    // Crowding counts jobs, not their GPUs: 30 jobs never outnumber 1.5 times the 24 GPUs, so
    // the attained-service weights never apply, however many GPUs the jobs ask for.
    let few = &multi[..30];
    let demand: u32 = few.iter().map(|j| j.scale_factor).sum();
    assert!(demand > 36, "the jobs ask for {demand} GPUs");
    let mut trace = defaults.clone();
    trace.sts.weights = stsfair::policy::Weights::Trace;
    assert_eq!(
        run_with(&table, cluster, few, "sts", &config, &defaults).jobs,
        run_with(&table, cluster, few, "sts", &config, &trace).jobs
    );
}

/// Gavel's single-GPU job types (its `JobTable`), the range of `reference_models`.
fn single_gpu_types(table: &ThroughputTable) -> usize {
    table
        .job_types()
        .iter()
        .filter(|j| j.scale_factor == 1)
        .count()
}

/// Gavel's drivers leave the estimation off (profiling percentage 1, every job type a
/// reference), so its space-sharing policies see measured pairs: so do ours by default.
#[test]
fn pair_estimation_is_off_by_default_and_validated() {
    let n = single_gpu_types(&table());
    assert_eq!(n, 26, "Gavel's data has 26 single-GPU job types");
    assert_eq!(PolicyOptions::default().pair_estimation, None);
    assert_eq!(PairEstimation::new(1.0, n, n).unwrap(), None);
    let on = PairEstimation::new(0.5, n, n).unwrap().unwrap();
    assert_eq!((on.profiling_percentage(), on.reference_models()), (0.5, n));
    assert!(PairEstimation::new(1.0, 10, n).unwrap().is_some());
    for (p, refs, setting) in [
        (0.0, n, "profiling_percentage"),
        (1.5, n, "profiling_percentage"),
        (f64::NAN, n, "profiling_percentage"),
        (1.0, 0, "reference_models"),
        (1.0, n + 1, "reference_models"),
    ] {
        let e = PairEstimation::new(p, refs, n).unwrap_err().to_string();
        assert!(e.starts_with(setting), "{p} {refs}: {e}");
    }
}

/// With the estimation on, the allocation believes estimated pair throughputs, so the schedule
/// (not the jobs' real speeds) changes; every setting is deterministic.
#[test]
fn pair_estimation_changes_the_space_sharing_schedule() {
    if !policies::policy_names().contains(&"gavel-mmf-ss") {
        return;
    }
    let table = table();
    let n = single_gpu_types(&table);
    let jobs = generated(&table, 40, 8.0, 2);
    let config = SimConfig::default();
    let cluster = "v100=3,p100=3,k80=3";
    let measured = run(&table, cluster, &jobs, "gavel-mmf-ss", &config);
    sane(&measured, 1.0);
    for (p, refs) in [(0.5, n), (1.0, 8), (0.2, 16)] {
        let mut options = PolicyOptions::default();
        options.pair_estimation = PairEstimation::new(p, refs, n).unwrap();
        let a = run_with(&table, cluster, &jobs, "gavel-mmf-ss", &config, &options);
        sane(&a, 1.0);
        assert_ne!(a.jobs, measured.jobs, "P {p}, N {refs} changed nothing");
        let b = run_with(&table, cluster, &jobs, "gavel-mmf-ss", &config, &options);
        assert_eq!(a.jobs, b.jobs, "P {p}, N {refs} is not deterministic");
    }
}

/// Gavel's numbers on its own trace (data/gavel-ref/README.md, measured pairs as in Gavel's
/// default runs): policy, average JCT in hours and its tolerance, makespan in hours and its
/// tolerance.
const GAVEL: &[(&str, f64, f64, f64, f64)] = &[
    ("gavel-mmf", 14.35, 0.05, 225.6, 0.05),
    ("gavel-mmf-ss", 14.57, 0.01, 270.4, 0.02),
    ("ftf", 15.24, 0.05, 235.0, 0.05),
    ("fifo", 13.72, 0.05, 202.0, 0.05),
    ("gandiva", 16.04, 0.10, 249.9, 0.10),
];

/// Minutes on two cores: `cargo test --release --test simulation -- --ignored`.
#[test]
#[ignore]
fn replay_matches_gavel() {
    let table = table();
    let jobs = trace::read_trace(GAVEL_TRACE).unwrap();
    let config = SimConfig {
        window: Some((0, 399)),
        ..SimConfig::default()
    };
    for &(policy, gavel, tolerance, gavel_makespan, makespan_tolerance) in GAVEL {
        if !policies::policy_names().contains(&policy) {
            continue;
        }
        let r = run(&table, "v100=36,p100=36,k80=36", &jobs, policy, &config);
        let m = Metrics::new(&r, 1.0);
        let off = (m.avg_jct_h - gavel).abs() / gavel;
        assert!(
            off <= tolerance,
            "{policy}: {:.2} h vs Gavel's {gavel} h ({:.1}% off)",
            m.avg_jct_h,
            off * 100.0
        );
        let off = (m.makespan_h - gavel_makespan).abs() / gavel_makespan;
        assert!(
            off <= makespan_tolerance,
            "{policy}: makespan {:.1} h vs Gavel's {gavel_makespan} h ({:.1}% off)",
            m.makespan_h,
            off * 100.0
        );
    }
}
