//! The `rounds` command: its JSON document, its usage errors, and placement by the measured Gavel
//! slowdowns.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use stsfair::{Instance, JobSpec};

/// Two identical jobs on one GPU "g" of 4 units with whole-GPU slots only, default fairness (the
/// hand-worked run of the core's tests/rounds.rs).
fn alternating_instance() -> Instance {
    let mut b = Instance::builder()
        .name("one-gpu")
        .gpu_type("g", 1, 4, &[4]);
    for id in ["x", "y"] {
        b = b.job(JobSpec::new(id).time("g", 4, 1.0));
    }
    b.build().unwrap()
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stsfair-rounds-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn stsfair(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_stsfair"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `stsfair rounds --json` prints exactly the documented document, with the hand-worked numbers
/// of `two_jobs_alternate_by_hand`.
#[test]
fn cli_rounds_json() {
    let path = temp_file("alternate.json", &alternating_instance().to_json());
    let file = path.to_string_lossy();
    let (code, out, err) = stsfair(&[
        "rounds", &file, "--rounds", "10", "--json", "--solver", "dp-dense",
    ]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let keys: Vec<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "rounds",
            "relaxed_rounds",
            "mean_objective",
            "migrations",
            "solves",
            "fallback_rounds",
            "feasible_rounds",
            "prices",
            "second_stage",
            "lp_bound",
            "efficiency",
            "jobs",
            "per_round"
        ]
    );
    let per_round = doc["per_round"].as_array().unwrap();
    assert_eq!(per_round.len(), 10);
    for (r, record) in per_round.iter().enumerate() {
        assert_eq!(record["round"], r as u64);
        assert_eq!(record["objective"], 1.0);
        assert_eq!(record["relaxed"], 0);
        assert_eq!(record["running"], 1);
        assert_eq!(record["solves"], 1);
        assert_eq!(record["fallback"], false);
        assert_eq!(record["feasible"], false);
    }
    // Two identical jobs on one whole GPU: one runs every round, the bound is 1 (src/bound.rs).
    if cfg!(feature = "highs") {
        let near = |v: &Value| (v.as_f64().unwrap() - 1.0).abs() < 1e-9;
        assert!(near(&doc["lp_bound"]) && near(&doc["efficiency"]), "{doc}");
    } else {
        assert!(doc["lp_bound"].is_null() && doc["efficiency"].is_null());
    }
    // The default price source: the long-run LP's duals where the binary has HiGHS.
    assert_eq!(
        doc["prices"],
        if cfg!(feature = "highs") { "lp" } else { "off" }
    );
    assert!(doc["second_stage"].is_null(), "{doc}");
    assert_eq!(doc["rounds"], 10);
    assert_eq!(doc["relaxed_rounds"], 0);
    assert_eq!(doc["mean_objective"], 1.0);
    assert_eq!(doc["migrations"], 0);
    // One solve a round, none of them a fallback (dp-dense is a single solver).
    assert_eq!(doc["solves"], 10);
    assert_eq!(doc["fallback_rounds"], 0);
    assert_eq!(doc["feasible_rounds"], 0);
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    for (j, id) in jobs.iter().zip(["x", "y"]) {
        let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "job",
                "rounds_run",
                "mean_sigma",
                "final_deficit",
                "no_bound"
            ]
        );
        assert_eq!(j["job"], id);
        assert_eq!(j["rounds_run"], 5);
        assert_eq!(j["mean_sigma"], 1.0);
        assert_eq!(j["final_deficit"], 0.0);
        assert_eq!(j["no_bound"], false);
    }
    // Without --json: a readable summary (no progress bar: stderr is not a terminal here).
    let (code, out, err) = stsfair(&["rounds", &file, "--rounds", "4", "--solver", "dp-dense"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("rounds          4 (0 relaxed"), "{out}");
    assert!(err.is_empty(), "{err}");
}

/// `--prices off` solves every round as MODEL.md section 4 says; `--prices lp` on the
/// hand-worked alternation changes nothing (both jobs are identical: the price only chooses
/// among a forced job's options, and each has one); without HiGHS, `lp` is refused by name.
#[test]
fn cli_rounds_prices() {
    let path = temp_file("alternate-prices.json", &alternating_instance().to_json());
    let file = path.to_string_lossy();
    let mut docs = Vec::new();
    for prices in ["off", "lp"] {
        let (code, out, err) = stsfair(&[
            "rounds", &file, "--rounds", "6", "--json", "--solver", "dp", "--prices", prices,
        ]);
        if prices == "lp" && !cfg!(feature = "highs") {
            assert_eq!(code, 2);
            assert!(err.contains("--prices lp needs the long-run LP"), "{err}");
            continue;
        }
        assert_eq!(code, 0, "{err}");
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(doc["prices"], prices);
        docs.push(doc);
    }
    if let [off, lp] = &docs[..] {
        assert_eq!(off["per_round"], lp["per_round"]);
        assert_eq!(off["jobs"], lp["jobs"]);
    }
    let (code, _, err) = stsfair(&["rounds", &file, "--rounds", "2", "--prices", "maybe"]);
    assert_eq!(code, 2);
    assert!(err.contains("--prices"), "{err}");
}

/// A time limit that stops every solve at the DP's first look at the clock: every round's plan is
/// the greedy's, `feasible` (on gavel-100x3-1000 the greedy is below the Lagrangian bound in
/// every round), counted as `feasible_rounds` and per round; worth less than without the limit.
#[test]
fn cli_rounds_counts_the_solves_a_time_limit_stopped() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../instances/gavel-100x3-1000.json"
    );
    let mut means = Vec::new();
    for limit in [None, Some("1e-9")] {
        let mut args = vec!["rounds", file, "--rounds", "5", "--json", "--prices", "off"];
        args.extend(limit.iter().flat_map(|l| ["--time-limit", l]));
        let (code, out, err) = stsfair(&args);
        assert_eq!(code, 0, "{err}");
        let doc: Value = serde_json::from_str(&out).unwrap();
        let stopped = if limit.is_some() { 5 } else { 0 };
        assert_eq!(doc["feasible_rounds"], stopped, "{limit:?}");
        for record in doc["per_round"].as_array().unwrap() {
            assert_eq!(record["feasible"], limit.is_some(), "{record}");
        }
        means.push(doc["mean_objective"].as_f64().unwrap());
    }
    assert!(means[1] < means[0], "{means:?}");
}

/// A cluster where no job can run (a type of no GPUs) or no job at all: `rounds` with the LP
/// prices and `bound` answer a bound of 0, without asking HiGHS (which calls a model without
/// columns `ModelEmpty`).
#[test]
fn cli_rounds_and_bound_on_a_cluster_where_nothing_can_run() {
    if !cfg!(feature = "highs") {
        return;
    }
    let no_gpus = Instance::builder()
        .name("no-gpus")
        .gpu_type("g", 0, 4, &[4])
        .job(JobSpec::new("x").time("g", 4, 1.0))
        .build()
        .unwrap();
    let no_jobs = Instance::builder()
        .name("no-jobs")
        .gpu_type("g", 1, 4, &[4])
        .build()
        .unwrap();
    for (name, instance, jobs) in [("no-gpus.json", &no_gpus, 1), ("no-jobs.json", &no_jobs, 0)] {
        let path = temp_file(name, &instance.to_json());
        let file = path.to_string_lossy();
        let (code, out, err) = stsfair(&["rounds", &file, "--rounds", "3", "--json"]);
        assert_eq!(code, 0, "{name}: {err}");
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(doc["lp_bound"], json!(0.0), "{name}");
        assert_eq!(doc["mean_objective"], json!(0.0), "{name}");
        assert_eq!(doc["jobs"].as_array().map(Vec::len), Some(jobs), "{name}");
        let (code, out, err) = stsfair(&["bound", &file]);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(out.contains("lp bound   0.000000000"), "{name}: {out}");
    }
}

#[test]
fn cli_rounds_rejects_bad_usage() {
    let path = temp_file("alternate-usage.json", &alternating_instance().to_json());
    let file = path.to_string_lossy();
    let (code, _, err) = stsfair(&["rounds", &file, "--rounds", "0"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--rounds must be between 1 and 1,000,000"),
        "{err}"
    );
    assert!(err.contains("(got 0)"), "{err}");
    // Past the limit the report's records would grow without bound: refused before any round.
    let (code, out, err) = stsfair(&["rounds", &file, "--rounds", "1000001"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("(got 1000001)"), "{err}");
    let (code, _, err) = stsfair(&["rounds", &file, "--rounds", "3", "--solver", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("--solver must be one of"), "{err}");
    let (code, _, err) = stsfair(&["rounds", "/nonexistent/instance.json", "--rounds", "3"]);
    assert_eq!(code, 2, "{err}");
}

/// `--throughputs` gives placement the measured Gavel slowdowns: the summary reports a
/// predicted slowdown, which is 0 without a model; a missing file is bad usage.
#[test]
fn cli_rounds_places_by_gavel_slowdowns() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let file = root.join("instances/gavel-8x3-40.json");
    let data = root.join("crates/costs/data/gavel/simulation_throughputs.json");
    let (file, data) = (file.to_string_lossy(), data.to_string_lossy());
    let slowdown = |out: &str| -> f64 {
        let line = out.lines().find(|l| l.starts_with("placement")).unwrap();
        line.split_whitespace().nth(3).unwrap().parse().unwrap()
    };
    let (code, out, err) = stsfair(&["rounds", &file, "--rounds", "2", "--throughputs", &data]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "every job id names a Gavel job type: {err}");
    assert!(slowdown(&out) > 0.0, "{out}");
    let (code, out, err) = stsfair(&["rounds", &file, "--rounds", "2"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(slowdown(&out), 0.0, "{out}");
    let (code, _, err) = stsfair(&[
        "rounds",
        &file,
        "--rounds",
        "2",
        "--throughputs",
        "/nonexistent.json",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read /nonexistent.json"), "{err}");
}

/// The round number saved in a `--state` file, once it exists and parses.
/// `--second-stage`: the worked case of `RoundScheduler::with_second_stage`'s rustdoc (a heavy
/// job almost as fast on a K80 as on a V100, a light one ten times slower there) run as a file:
/// without the stage the heavy job takes the V100 (objective 16 + 0.1), with square roots it
/// takes the K80 (16 * 0.9 + 1 = 15.4). The exponent's range, and a state file that must be
/// resumed with the stage it was written with.
#[test]
fn cli_rounds_second_stage() {
    let instance = Instance::builder()
        .name("heavy-light")
        .gpu_type("v100", 1, 1, &[1])
        .gpu_type("k80", 1, 1, &[1])
        .job(
            JobSpec::new("heavy")
                .weight(16.0)
                .time("v100", 1, 1.0)
                .time("k80", 1, 1.0 / 0.9),
        )
        .job(
            JobSpec::new("light")
                .time("v100", 1, 1.0)
                .time("k80", 1, 10.0),
        )
        .build()
        .unwrap();
    let path = temp_file("heavy-light.json", &instance.to_json());
    let file = path.to_string_lossy();
    let run = |rounds: &str, extra: &[&str]| -> Value {
        let mut args = vec![
            "rounds", &file, "--rounds", rounds, "--json", "--prices", "off",
        ];
        args.extend_from_slice(extra);
        let (code, out, err) = stsfair(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).unwrap()
    };
    let near = |v: &Value, x: f64| (v.as_f64().unwrap() - x).abs() < 1e-9;
    let plain = run("1", &[]);
    assert!(near(&plain["mean_objective"], 16.1), "{plain}");
    assert!(plain["second_stage"].is_null());
    let staged = run("1", &["--second-stage", "0.5"]);
    assert!(near(&staged["mean_objective"], 15.4), "{staged}");
    assert_eq!(staged["second_stage"], 0.5);
    // Two solves: the round problem, then where its jobs run.
    assert_eq!(staged["solves"], 2);
    // Exponent 1 is the round problem itself.
    let one = run("1", &["--second-stage", "1"]);
    assert!(
        near(&one["mean_objective"], 16.1) && one["second_stage"].is_null(),
        "{one}"
    );
    let (code, _, err) = stsfair(&["rounds", &file, "--rounds", "1", "--second-stage", "1.5"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--second-stage must be an exponent in [0, 1] (got 1.5)"),
        "{err}"
    );
    let (code, out, _) = stsfair(&["rounds", &file, "--rounds", "1", "--second-stage", "0.25"]);
    assert_eq!(code, 0);
    assert!(out.contains(", second stage 0.25\n"), "{out}");

    // A state file records the stage; resuming with another is refused, with the same one
    // gives the uninterrupted run's document.
    let state = path.with_file_name("heavy-light.state.json");
    let _ = std::fs::remove_file(&state);
    let state_arg = state.to_string_lossy().into_owned();
    let with_state = |rounds: &str, extra: &[&str]| {
        let mut args = vec![
            "rounds", &file, "--rounds", rounds, "--json", "--prices", "off", "--state", &state_arg,
        ];
        args.extend_from_slice(extra);
        stsfair(&args)
    };
    let (code, _, err) = with_state("3", &["--second-stage", "0.5"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = with_state("6", &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("was written with --second-stage 0.5, not no --second-stage"),
        "{err}"
    );
    let (code, resumed, err) = with_state("6", &["--second-stage", "0.5"]);
    assert_eq!(code, 0, "{err}");
    let resumed: Value = serde_json::from_str(&resumed).unwrap();
    assert_eq!(resumed, run("6", &["--second-stage", "0.5"]));
}

fn saved_round(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let doc: Value = serde_json::from_str(&text).ok()?;
    doc["scheduler"]["round"].as_u64()
}

/// `--state`: a run killed with SIGKILL between rounds and started again with the same command
/// ends with exactly the JSON document (deficits, mean sigma, migrations, ...) of a run that
/// was never interrupted.
#[test]
fn cli_rounds_resume_after_sigkill() {
    const ROUNDS: u64 = 200;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let file = root.join("instances/gavel-8x3-40.json");
    let file = file.to_string_lossy();
    let n = ROUNDS.to_string();
    let (code, whole, err) = stsfair(&["rounds", &file, "--rounds", &n, "--json"]);
    assert_eq!(code, 0, "{err}");

    let dir = std::env::temp_dir().join(format!("stsfair-rounds-state-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("run.state.json");
    let _ = std::fs::remove_file(&state);
    let state_arg = state.to_string_lossy().into_owned();
    let args = [
        "rounds", &file, "--rounds", &n, "--json", "--state", &state_arg,
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_stsfair"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill at the first saved state past round 0. Every round also syncs the file to disk, so
    // the remaining rounds take far longer than one poll: the run cannot slip through.
    let start = std::time::Instant::now();
    let seen = loop {
        if let Some(r) = saved_round(&state).filter(|&r| r >= 1) {
            break r;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it saved round 1"
        );
        assert!(start.elapsed().as_secs() < 120, "no state saved");
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "the run finished before the kill");
    let interrupted = saved_round(&state).unwrap();
    assert!(
        (1..ROUNDS).contains(&interrupted) && interrupted >= seen,
        "saved round {interrupted}"
    );

    eprintln!("killed after round {seen} was seen; the state file holds round {interrupted}");
    let (code, resumed, err) = stsfair(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(saved_round(&state), Some(ROUNDS));
    let (a, b): (Value, Value) = (
        serde_json::from_str(&whole).unwrap(),
        serde_json::from_str(&resumed).unwrap(),
    );
    let deficits = |d: &Value| -> Vec<f64> {
        d["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["final_deficit"].as_f64().unwrap())
            .collect()
    };
    assert_eq!(deficits(&a), deficits(&b));
    assert_eq!(a, b, "interrupted at round {interrupted}");
    // Finished: running again changes nothing and prints the same document.
    let (code, again, err) = stsfair(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(again, resumed);
    // The temporary file (left behind if the kill came while it was written) was renamed away.
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 1, "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A state file that is not one (garbage, another version, a corrupted snapshot), one of another
/// cluster or solver, and more rounds saved than asked are refused with exit 2, naming the
/// problem; nothing is run.
#[test]
fn cli_rounds_refuses_bad_state_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let gavel = root.join("instances/gavel-8x3-40.json");
    let gavel = gavel.to_string_lossy();
    let path = temp_file("state-cluster.json", &alternating_instance().to_json());
    let file = path.to_string_lossy();
    let state = temp_file("state-good.json", "");
    std::fs::remove_file(&state).unwrap();
    let state_arg = state.to_string_lossy().into_owned();
    let (code, _, err) = stsfair(&[
        "rounds", &file, "--rounds", "3", "--state", &state_arg, "--solver", "dp-dense",
    ]);
    assert_eq!(code, 0, "{err}");
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(good["format"], "stsfair-rounds-state/1");
    assert_eq!(good["scheduler"]["format"], "stsfair-scheduler/1");
    assert_eq!(good["scheduler"]["round"], 3);

    let run = |instance: &str, text: &str, solver: &str| {
        let bad = temp_file("state-bad.json", text);
        let bad = bad.to_string_lossy().into_owned();
        let (code, out, err) = stsfair(&[
            "rounds", instance, "--rounds", "5", "--state", &bad, "--solver", solver,
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(out.is_empty(), "{out}");
        // A refused file is left as it was.
        assert_eq!(std::fs::read_to_string(&bad).unwrap(), text);
        err
    };
    let edit = |f: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        f(&mut v);
        v.to_string()
    };
    let err = run(
        &file,
        "{\"format\": \"stsfair-rounds-state/1\", ",
        "dp-dense",
    );
    assert!(
        err.contains("state-bad.json") && err.contains("EOF"),
        "{err}"
    );
    let err = run(
        &file,
        &edit(&|v| v["format"] = "stsfair-rounds-state/2".into()),
        "dp-dense",
    );
    assert!(
        err.contains("format: must be \"stsfair-rounds-state/1\" (got \"stsfair-rounds-state/2\")"),
        "{err}"
    );
    let err = run(
        &file,
        &edit(&|v| v["scheduler"]["format"] = "stsfair-scheduler/9".into()),
        "dp-dense",
    );
    assert!(
        err.contains("scheduler.format: must be \"stsfair-scheduler/1\""),
        "{err}"
    );
    let err = run(
        &file,
        &edit(&|v| v["scheduler"]["jobs"][1]["times"][0]["gpu"] = "h100".into()),
        "dp-dense",
    );
    assert!(
        err.contains("scheduler snapshot: jobs[1].times[0].gpu must name one of gpu_types"),
        "{err}"
    );
    let err = run(
        &file,
        &edit(&|v| {
            v["scheduler"]["jobs"][0]
                .as_object_mut()
                .unwrap()
                .remove("deficit");
        }),
        "dp-dense",
    );
    assert!(
        err.contains("scheduler.jobs[0]: missing field `deficit`"),
        "{err}"
    );
    // Another cluster: the saved run is of one GPU "g", the instance has 8 of each Gavel type.
    let text = good.to_string();
    let err = run(&gavel, &text, "dp-dense");
    assert!(
        err.contains("was written for another cluster than")
            && err.contains("the state file has 1 gpu types, the instance 3"),
        "{err}"
    );
    let err = run(
        &file,
        &edit(&|v| v["scheduler"]["gpu_types"][0]["count"] = 2.into()),
        "dp-dense",
    );
    assert!(
        err.contains("gpu_types[0] is g x2 of 4 units, slots [4] in the state file, g x1 of 4 units, slots [4] in the instance"),
        "{err}"
    );
    // Another fairness: written as the format writes it, not as Rust's Debug.
    let err = run(
        &file,
        &edit(&|v| v["scheduler"]["fairness"]["lambda"] = json!(0.5)),
        "dp-dense",
    );
    assert!(
        err.contains("fairness is {\"lambda\": 0.5,") && !err.contains("Fairness {"),
        "{err}"
    );
    let err = run(&file, &text, "brute");
    assert!(
        err.contains("was written with --solver dp-dense, not brute"),
        "{err}"
    );
    // Another price source than the saved run's; a file written before `--prices` existed ran
    // unpriced.
    let other = if cfg!(feature = "highs") { "off" } else { "lp" };
    let text = edit(&|v| v["prices"] = json!(other));
    let err = run(&file, &text, "dp-dense");
    let default = if cfg!(feature = "highs") { "lp" } else { "off" };
    assert!(
        err.contains(&format!("was written with --prices {other}, not {default}")),
        "{err}"
    );
    if cfg!(feature = "highs") {
        let text = edit(&|v| {
            v.as_object_mut().unwrap().remove("prices");
        });
        let err = run(&file, &text, "dp-dense");
        assert!(
            err.contains("was written with --prices off, not lp"),
            "{err}"
        );
    }
    // Totals the summary divides by the rounds: counts of rounds at most the rounds, sums
    // finite and >= 0, migrations and conflicts at most what the rounds can move, the objective
    // at most the rounds times the sum of the weights, solves and objective the sums of the
    // per-round records.
    type Change = fn(&mut Value);
    let tally_cases: [(Change, &str); 8] = [
        (
            |v| v["tally"]["migrations"] = json!(u64::MAX),
            "tally.migrations must be at most tally.rounds (3) x 4000000 gpus x 1024 units (got 18446744073709551615)",
        ),
        (
            |v| v["tally"]["conflicts"] = json!(u64::MAX),
            "tally.conflicts must be at most",
        ),
        (
            |v| v["tally"]["solves"] = json!(0),
            "tally.solves must be the sum of tally.per_round[..].solves",
        ),
        (
            |v| v["tally"]["objective_sum"] = json!(f64::MAX),
            "tally.objective_sum must be at most tally.rounds (3) times the sum of the jobs' weights",
        ),
        (
            |v| v["tally"]["jobs"][0]["rounds_run"] = json!(1_000_000),
            "tally.jobs[0].rounds_run must be at most tally.rounds (3) (got 1000000)",
        ),
        (
            |v| v["tally"]["relaxed_rounds"] = json!(4),
            "tally.relaxed_rounds must be at most tally.rounds (3) (got 4)",
        ),
        (
            |v| v["tally"]["objective_sum"] = json!(-1e308),
            "tally.objective_sum must be finite and >= 0 (got -1e308)",
        ),
        (
            |v| v["tally"]["jobs"][1]["sigma_sum"] = json!(-2.5),
            "tally.jobs[1].sigma_sum must be finite and >= 0 (got -2.5)",
        ),
    ];
    for (change, says) in tally_cases {
        let err = run(&file, &edit(&change), "dp-dense");
        assert!(err.contains(says), "{err}");
    }
    // Another `--throughputs` than the saved run's (which had none).
    assert_eq!(good["throughputs"], "off");
    let text = edit(&|v| v["throughputs"] = json!("bundled"));
    let err = run(&file, &text, "dp-dense");
    assert!(
        err.contains(
            "was written by a run with --throughputs (the bundled table); this command has no --throughputs"
        ),
        "{err}"
    );
    // A file written before `--throughputs` was recorded resumes with the command's, and
    // records it from then on.
    let old = temp_file(
        "state-old.json",
        &edit(&|v| {
            v.as_object_mut().unwrap().remove("throughputs");
        }),
    );
    let old_arg = old.to_string_lossy().into_owned();
    let (code, _, err) = stsfair(&[
        "rounds", &file, "--rounds", "4", "--state", &old_arg, "--solver", "dp-dense",
    ]);
    assert_eq!(code, 0, "{err}");
    let resumed: Value = serde_json::from_str(&std::fs::read_to_string(&old).unwrap()).unwrap();
    assert_eq!(resumed["throughputs"], "off");
    assert_eq!(resumed["scheduler"]["round"], 4);
    // More rounds saved than the total asked for.
    let (code, _, err) = stsfair(&[
        "rounds", &file, "--rounds", "2", "--state", &state_arg, "--solver", "dp-dense",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--rounds 2 is fewer than the 3 rounds"),
        "{err}"
    );
}
