//! The `rounds` command: its JSON document, its usage errors, and placement by the measured Gavel
//! slowdowns.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
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
            "jobs"
        ]
    );
    assert_eq!(doc["rounds"], 10);
    assert_eq!(doc["relaxed_rounds"], 0);
    assert_eq!(doc["mean_objective"], 1.0);
    assert_eq!(doc["migrations"], 0);
    // One solve a round, none of them a fallback (dp-dense is a single solver).
    assert_eq!(doc["solves"], 10);
    assert_eq!(doc["fallback_rounds"], 0);
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

#[test]
fn cli_rounds_rejects_bad_usage() {
    let path = temp_file("alternate-usage.json", &alternating_instance().to_json());
    let file = path.to_string_lossy();
    let (code, _, err) = stsfair(&["rounds", &file, "--rounds", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--rounds must be >= 1 (got 0)"), "{err}");
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
