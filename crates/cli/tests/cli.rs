//! The `stsfair` binary on files: `validate`, `solve` (summary and `--json`), `verify`, exit
//! codes per FORMAT.md (0 optimal or feasible, 3 infeasible, 2 invalid input or usage, 1 other
//! failure), and garbage input that must never make it panic.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_stsfair");

fn instance_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../instances")
        .join(format!("{name}.json"))
}

/// A scratch file of this test run, written with `contents`.
fn scratch(name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(BIN).args(args).output().unwrap();
    let run = Run {
        code: status.code().expect("exited, not killed by a signal"),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "{args:?} panicked: {}",
        run.stderr
    );
    run
}

fn run_path(args: &[&str], path: &Path) -> Run {
    let path = path.to_str().unwrap();
    let mut all = args.to_vec();
    all.push(path);
    run(&all)
}

/// `solve --json` on `file`: exit code and the parsed document; stdout must be exactly one JSON
/// value (and a newline), stderr empty.
fn solve_json(file: &Path, solver: &str) -> (i32, Value) {
    let r = run(&[
        "solve",
        file.to_str().unwrap(),
        "--json",
        "--solver",
        solver,
    ]);
    assert!(r.stderr.is_empty(), "stderr: {}", r.stderr);
    assert!(
        r.stdout.ends_with('\n') && r.stdout.trim_end().lines().count() == 1,
        "{:?}",
        r.stdout
    );
    // from_str refuses anything after the first value: exactly one document.
    let doc: Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout));
    (r.code, doc)
}

/// The keys of a JSON object, in order.
fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

// ---- validate

#[test]
fn validate_accepts_every_shipped_hand_instance() {
    for name in [
        "hand-share-one-gpu",
        "hand-fastest-first",
        "hand-no-bound",
        "hand-infeasible",
        "hand-unpackable",
    ] {
        let r = run_path(&["validate"], &instance_file(name));
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        assert!(r.stdout.contains("valid"), "{}", r.stdout);
        assert!(r.stderr.is_empty());
    }
    let r = run_path(&["validate"], &instance_file("hand-fastest-first"));
    // 2 types, 3 jobs, 3 + 4 + 3 fitting options (late's v100/4 can never fit).
    assert!(
        r.stdout.contains("(2 gpu types, 3 jobs, 10 options)"),
        "{}",
        r.stdout
    );
}

#[test]
fn validate_rejects_with_exit_2_naming_the_path_and_rule() {
    let text = std::fs::read_to_string(instance_file("hand-fastest-first")).unwrap();
    let bad = text.replacen("\"sec_per_iter\": 1.0 }", "\"sec_per_iter\": -2 }", 1);
    assert_ne!(bad, text);
    let file = scratch("negative-time.json", bad);
    let r = run_path(&["validate"], &file);
    assert_eq!(r.code, 2);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(r.stderr.starts_with("stsfair: "), "{}", r.stderr);
    assert!(
        r.stderr.contains("negative-time.json"),
        "names the file: {}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("jobs[0].times[1].sec_per_iter must be finite and > 0 (got -2)"),
        "{}",
        r.stderr
    );

    let file = scratch(
        "unknown-field.json",
        text.replacen("\"workers\": 2,", "\"workers\": 2, \"gpus\": 2,", 1),
    );
    let r = run_path(&["validate"], &file);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("jobs[2].gpus: unknown field `gpus`"),
        "{}",
        r.stderr
    );
}

#[test]
fn missing_file_is_exit_2_for_every_subcommand() {
    let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-instance.json");
    for args in [&["validate"][..], &["solve"], &["solve", "--json"]] {
        let r = run_path(args, &missing);
        assert_eq!(r.code, 2, "{args:?}");
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
        assert!(r.stderr.contains("no-such-instance.json"), "{}", r.stderr);
    }
    let r = run(&[
        "verify",
        missing.to_str().unwrap(),
        missing.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    let instance = instance_file("hand-no-bound");
    let r = run(&[
        "verify",
        instance.to_str().unwrap(),
        missing.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no-such-instance.json"), "{}", r.stderr);
}

// ---- solve

#[test]
fn solve_prints_a_readable_summary() {
    let r = run_path(&["solve"], &instance_file("hand-no-bound"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.is_empty());
    let out = &r.stdout;
    // The optimum of instances/README.md: 2.125, three jobs run in 2-unit slots, slow idles,
    // pair is forced, part has no bound; all 8 units used.
    assert!(out.contains("instance   hand-no-bound"), "{out}");
    assert!(out.contains("status     optimal"), "{out}");
    assert!(out.contains("objective  2.125000000"), "{out}");
    assert!(
        out.contains("3 run, 1 idle; 1 forced (0 cannot catch up), 1 without a fairness bound"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("v100") && l.contains("8 / 8")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("time") && l.ends_with(" s")),
        "{out}"
    );

    let r = run_path(&["solve"], &instance_file("hand-fastest-first"));
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("objective  4.000000000"), "{}", r.stdout);
    assert!(
        r.stdout.contains("3 forced (1 cannot catch up)"),
        "{}",
        r.stdout
    );
}

#[test]
fn solve_json_is_exactly_the_solution_document() {
    let (code, doc) = solve_json(&instance_file("hand-no-bound"), "dp");
    assert_eq!(code, 0);
    assert_eq!(
        keys(&doc),
        [
            "format",
            "instance",
            "solver",
            "status",
            "objective",
            "assignments",
            "units_used",
            "stats"
        ]
    );
    assert_eq!(doc["format"], "stsfair-solution/1");
    assert_eq!(doc["instance"], "hand-no-bound");
    assert_eq!(doc["solver"], "dp");
    assert_eq!(doc["status"], "optimal");
    let objective = doc["objective"].as_f64().unwrap();
    assert!((objective - 2.125).abs() < 1e-12, "{objective}");
    // Every job once, in the instance's order.
    assert_eq!(
        doc["assignments"],
        serde_json::json!([
            { "job": "part", "gpu": "v100", "slot": 2 },
            { "job": "whole", "gpu": "v100", "slot": 2 },
            { "job": "pair", "gpu": "v100", "slot": 2 },
            { "job": "slow", "idle": true }
        ])
    );
    assert_eq!(doc["units_used"], serde_json::json!({ "v100": 8 }));
    let seconds = doc["stats"]["seconds"].as_f64().unwrap();
    assert!(seconds >= 0.0 && seconds.is_finite());
}

#[test]
fn solve_json_names_every_gpu_type_in_units_used() {
    // Both types of hand-fastest-first are used; an added k80 type that no job can use is
    // still named, with 0.
    let (_, doc) = solve_json(&instance_file("hand-fastest-first"), "dp");
    assert_eq!(
        doc["units_used"],
        serde_json::json!({ "v100": 4, "a100": 8 })
    );
    let text = std::fs::read_to_string(instance_file("hand-share-one-gpu")).unwrap();
    let two_types = text.replacen(
        "\"gpu_types\": [ ",
        "\"gpu_types\": [ { \"name\": \"k80\", \"count\": 3, \"units\": 4, \"slot_sizes\": [4] }, ",
        1,
    );
    assert_ne!(two_types, text);
    let (code, doc) = solve_json(&scratch("unused-type.json", two_types), "dp");
    assert_eq!(code, 0);
    assert_eq!(keys(&doc["units_used"]), ["k80", "v100"]);
    assert_eq!(doc["units_used"]["k80"], 0);
}

#[test]
fn every_solver_gives_the_hand_worked_optimum_by_cli() {
    let solvers = run(&[
        "solve",
        "--solver",
        "?",
        instance_file("hand-no-bound").to_str().unwrap(),
    ]);
    assert_eq!(solvers.code, 2);
    for solver in ["dp", "dp-dense", "brute"] {
        assert!(solvers.stderr.contains(solver), "{}", solvers.stderr);
        for (name, optimum) in [
            ("hand-share-one-gpu", 0.625 + 0.5 / 0.6),
            ("hand-fastest-first", 4.0),
            ("hand-no-bound", 2.125),
        ] {
            let (code, doc) = solve_json(&instance_file(name), solver);
            assert_eq!(code, 0, "{solver} on {name}");
            assert_eq!(doc["solver"], solver);
            let objective = doc["objective"].as_f64().unwrap();
            assert!(
                (objective - optimum).abs() <= 1e-9 * optimum,
                "{solver} on {name}: {objective}"
            );
        }
    }
}

#[test]
fn infeasible_round_exits_3_with_reason_and_null_objective() {
    let (code, doc) = solve_json(&instance_file("hand-infeasible"), "dp");
    assert_eq!(code, 3);
    assert_eq!(doc["status"], "infeasible");
    assert_eq!(doc["objective"], Value::Null);
    assert_eq!(doc["assignments"], serde_json::json!([]));
    assert_eq!(
        doc["units_used"],
        serde_json::json!({ "v100": 0, "k80": 0 })
    );
    let reason = doc["stats"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("[v100]") && reason.contains("short by 4 units"),
        "{reason}"
    );

    let r = run_path(
        &["solve", "--solver", "dp-dense"],
        &instance_file("hand-infeasible"),
    );
    assert_eq!(r.code, 3);
    assert!(r.stdout.contains("status     infeasible"), "{}", r.stdout);
    assert!(r.stdout.contains("short by 4 units"), "{}", r.stdout);
}

#[test]
fn usage_errors_exit_2() {
    let file = instance_file("hand-no-bound");
    let file = file.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &[],
        &["solve"],
        &["frobnicate"],
        &["solve", file, "--solver", "simplex"],
        &["solve", file, "--no-such-flag"],
        &["solve", file, "--time-limit", "-1"],
        &["solve", file, "--time-limit", "nan"],
        &["solve", file, "--threads", "0"],
        &["verify", file],
    ];
    for args in cases {
        let r = run(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
        assert!(!r.stderr.is_empty(), "{args:?}");
    }
    let r = run(&["solve", file, "--solver", "simplex"]);
    assert!(
        r.stderr
            .contains("--solver must be one of dp, dp-dense, brute"),
        "{}",
        r.stderr
    );
    assert_eq!(run(&["--help"]).code, 0);
    assert_eq!(run(&["--version"]).code, 0);
}

#[test]
fn a_solver_that_cannot_answer_exits_1() {
    // The dense DP's memory guard at 1 MiB refuses before allocating (the round needs 2 MB): a
    // failure, not bad input. (0 MiB is bad input: `--max-memory-mib` must be at least 1.)
    let r = run_path(
        &["solve", "--solver", "dp-dense", "--max-memory-mib", "1"],
        &instance_file("gavel-8x3-40"),
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr.contains("dp-dense: the instance needs") && r.stderr.contains("bytes"),
        "{}",
        r.stderr
    );
}

/// An instance name and a job id holding a newline and `status optimal` cannot write a line of
/// `solve`'s summary or of an error: they are printed quoted with the newline escaped.
#[test]
fn names_with_newlines_cannot_forge_a_line_of_output() {
    let forged = "x\nstatus     optimal\nobjective  99";
    let doc = serde_json::json!({
        "format": "stsfair/1",
        "name": forged,
        "gpu_types": [{ "name": "v100", "count": 1, "units": 4, "slot_sizes": [4] }],
        "jobs": [
            { "id": forged, "deficit": 5.0, "times": [{ "gpu": "v100", "slot": 4, "sec_per_iter": 1.0 }] },
            { "id": "b", "deficit": 5.0, "times": [{ "gpu": "v100", "slot": 4, "sec_per_iter": 1.0 }] }
        ]
    });
    let file = scratch("forged-name.json", doc.to_string());
    let r = run(&["solve", file.to_str().unwrap()]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    for line in r.stdout.lines() {
        assert!(!line.starts_with("status     optimal"), "{}", r.stdout);
        assert!(!line.starts_with("objective  99"), "{}", r.stdout);
    }
    assert!(r.stdout.contains("x\\nstatus"), "{}", r.stdout);
}

// ---- verify

/// A solution missing its first assignment and one missing its last are the same defect: exit 1
/// both, `solution lists 1 jobs, the instance has 2` (docs/format.md).
#[test]
fn verify_exits_1_for_a_missing_first_or_last_assignment() {
    let instance = instance_file("hand-share-one-gpu");
    let (_, doc) = solve_json(&instance, "dp");
    for drop in [0usize, 1] {
        let mut bad = doc.clone();
        bad["assignments"].as_array_mut().unwrap().remove(drop);
        let file = scratch(&format!("missing-{drop}.json"), bad.to_string());
        let r = run(&["verify", instance.to_str().unwrap(), file.to_str().unwrap()]);
        assert_eq!(r.code, 1, "assignment {drop} missing: {}", r.stderr);
        assert!(
            r.stderr
                .contains("solution lists 1 jobs, the instance has 2"),
            "{}",
            r.stderr
        );
    }
}

/// `hand-share-one-gpu` with job a on the whole GPU and b idle, claimed optimal: it is feasible
/// and worth 1.0, the optimum is 1.4583 (both jobs on half a GPU). `verify` refuses it with exit
/// 1 and prints the bound it checked; the same assignment claimed `feasible` with a gap that
/// covers the distance is valid and reported as not optimal.
#[test]
fn verify_refuses_an_optimal_claim_below_the_optimum_with_the_bound() {
    let instance = instance_file("hand-share-one-gpu");
    let mut doc = serde_json::json!({
        "format": "stsfair-solution/1",
        "instance": "hand-share-one-gpu",
        "solver": "dp",
        "status": "optimal",
        "objective": 1.0,
        "assignments": [
            { "job": "a", "gpu": "v100", "slot": 4 },
            { "job": "b", "idle": true }
        ],
        "units_used": { "v100": 4 },
        "stats": { "seconds": 0.001 }
    });
    let file = scratch("wrong-optimal.json", doc.to_string());
    let r = run(&["verify", instance.to_str().unwrap(), file.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("says optimal with objective 1.0")
            && r.stderr.contains("optimum is at least 1.458333"),
        "{}",
        r.stderr
    );
    doc["status"] = "feasible".into();
    doc["stats"]["gap"] = 0.5.into();
    let file = scratch("honest-feasible.json", doc.to_string());
    let r = run(&["verify", instance.to_str().unwrap(), file.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("not optimal: the exact DP's re-solve finds 1.458333333"),
        "{}",
        r.stdout
    );
    doc["stats"]["gap"] = 0.1.into();
    let file = scratch("understated-gap.json", doc.to_string());
    let r = run(&["verify", instance.to_str().unwrap(), file.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains("more than objective * (1 + gap)"),
        "{}",
        r.stderr
    );
}

/// A change to a solution document.
type Edit = dyn Fn(&mut Value);

#[test]
fn verify_accepts_solve_output_and_rejects_tampering() {
    for name in ["hand-share-one-gpu", "hand-fastest-first", "hand-no-bound"] {
        let instance = instance_file(name);
        let r = run_path(&["solve", "--json"], &instance);
        assert_eq!(r.code, 0);
        let solution = scratch(&format!("{name}.solution.json"), &r.stdout);
        let ok = run(&[
            "verify",
            instance.to_str().unwrap(),
            solution.to_str().unwrap(),
        ]);
        assert_eq!(ok.code, 0, "{name}: {}", ok.stderr);
        assert!(
            ok.stdout.starts_with("valid: optimal solution, objective"),
            "{}",
            ok.stdout
        );
        assert!(
            ok.stdout
                .contains("optimality certified: the exact DP's re-solve"),
            "{}",
            ok.stdout
        );
    }

    let instance = instance_file("hand-fastest-first");
    let (_, doc) = solve_json(&instance, "dp");
    let tampered = |label: &str, edit: &Edit| {
        let mut bad = doc.clone();
        edit(&mut bad);
        let file = scratch(&format!("tampered-{label}.json"), bad.to_string());
        run(&["verify", instance.to_str().unwrap(), file.to_str().unwrap()])
    };
    let cases: [(&str, &Edit, &str); 5] = [
        (
            "objective",
            &|d| d["objective"] = 4.5.into(),
            "the assignments are worth 4",
        ),
        (
            "idle-forced",
            &|d| d["assignments"][1] = serde_json::json!({ "job": "mid", "idle": true }),
            "job mid: is forced",
        ),
        (
            "units",
            &|d| d["units_used"]["a100"] = 7.into(),
            "gpu type a100: units_used says 7",
        ),
        (
            "slower",
            &|d| d["assignments"][0]["slot"] = 2.into(),
            "gpu type a100: units_used says 8, the assignments use 6",
        ),
        (
            "dropped",
            &|d| d["assignments"][2]["slot"] = 4.into(),
            "(v100, 4) is not an option of the job",
        ),
    ];
    for (label, edit, message) in cases {
        let r = tampered(label, edit);
        assert_eq!(r.code, 1, "{label}: {}", r.stderr);
        assert!(
            r.stderr.contains("invalid solution") && r.stderr.contains(message),
            "{label}: {}",
            r.stderr
        );
    }
    // A second document after the solution is not ignored.
    let file = scratch("two-solutions.json", format!("{doc}\n{doc}"));
    let r = run(&["verify", instance.to_str().unwrap(), file.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("trailing characters"), "{}", r.stderr);
    // Not a solution document at all, or jobs out of order: malformed input, exit 2.
    let r = tampered("format", &|d| d["format"] = "stsfair/1".into());
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = tampered("order", &|d| {
        d["assignments"].as_array_mut().unwrap().swap(0, 1)
    });
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("assignments[0].job"), "{}", r.stderr);
}

/// `solve --json` on the shipped instance `name` exits 3 (infeasible) and `verify` accepts its
/// answer (exit 0); returns the answer's standard output and verify's run.
fn solve_infeasible_then_verify(name: &str) -> (String, Run) {
    let instance = instance_file(name);
    let r = run_path(&["solve", "--json"], &instance);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let solution = scratch(&format!("{name}.solution.json"), &r.stdout);
    let ok = run(&[
        "verify",
        instance.to_str().unwrap(),
        solution.to_str().unwrap(),
    ]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    (r.stdout, ok)
}

#[test]
fn verify_certifies_an_infeasible_answer() {
    let (_, ok) = solve_infeasible_then_verify("hand-infeasible");
    // The certificate itself: hand-infeasible's two forced jobs need 8 units of the v100s' 4.
    assert!(
        ok.stdout.contains(
            "certified by a capacity shortage: 2 forced jobs can only run on gpu types [v100], \
             which need at least 8 units there but hold 4: short by 4 units"
        ),
        "{}",
        ok.stdout
    );
}

/// A round whose units suffice but whose slots do not pack: `solve` exits 3 naming the forced
/// jobs, and `verify` certifies the claim by their reachability.
#[test]
fn verify_certifies_an_unpackable_answer() {
    let (answer, ok) = solve_infeasible_then_verify("hand-unpackable");
    assert!(answer.contains("do not pack"), "{answer}");
    assert!(
        ok.stdout
            .contains("certified: the forced jobs' admissible slots do not pack"),
        "{}",
        ok.stdout
    );
    // An infeasible answer to a round whose forced jobs fit is refused (exit 1).
    let (code, mut doc) = solve_json(&instance_file("hand-fastest-first"), "dp");
    assert_eq!(code, 0);
    doc["status"] = "infeasible".into();
    doc["objective"] = serde_json::Value::Null;
    doc["assignments"] = serde_json::json!([]);
    doc["stats"]["reason"] = "claimed".into();
    let claim = scratch("claimed-infeasible.solution.json", doc.to_string());
    let bad = run(&[
        "verify",
        instance_file("hand-fastest-first").to_str().unwrap(),
        claim.to_str().unwrap(),
    ]);
    assert_eq!(bad.code, 1, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("forced jobs fit together"),
        "{}",
        bad.stderr
    );
}

// ---- garbage never panics

#[test]
fn garbage_input_never_panics() {
    let deep_array = "[".repeat(100_000);
    let deep_object = "{\"a\":".repeat(100_000);
    let huge_ints = std::fs::read_to_string(instance_file("hand-share-one-gpu"))
        .unwrap()
        .replace(
            "\"count\": 1",
            "\"count\": 99999999999999999999999999999999",
        );
    let two_documents =
        std::fs::read_to_string(instance_file("hand-share-one-gpu")).unwrap() + "{}";
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("two-documents", two_documents.into_bytes()),
        ("empty", Vec::new()),
        ("whitespace", b"  \n\t ".to_vec()),
        ("binary", (0..=255u8).cycle().take(4096).collect()),
        ("invalid-utf8", vec![b'{', 0xff, 0xfe, b'}']),
        ("bom", b"\xef\xbb\xbf{}".to_vec()),
        ("array", b"[]".to_vec()),
        ("number", b"1e999999".to_vec()),
        ("string", b"\"stsfair/1\"".to_vec()),
        ("deep-array", deep_array.into_bytes()),
        ("deep-object", deep_object.into_bytes()),
        ("huge-ints", huge_ints.into_bytes()),
        ("nul", b"{\"format\":\"stsfair/1\x00\"}".to_vec()),
        (
            "escapes",
            br#"{"format":"\ud800","gpu_types":[],"jobs":[]}"#.to_vec(),
        ),
        (
            "truncated",
            br#"{"format":"stsfair/1","gpu_types":[{"name":"v100","count":1,"#.to_vec(),
        ),
    ];
    let good_instance = instance_file("hand-share-one-gpu");
    for (label, bytes) in cases {
        let file = scratch(&format!("garbage-{label}.json"), &bytes);
        for args in [&["validate"][..], &["solve"], &["solve", "--json"]] {
            let r = run_path(args, &file);
            assert_eq!(r.code, 2, "{label} {args:?}: {}", r.stderr);
            assert!(r.stdout.is_empty(), "{label} {args:?}: {}", r.stdout);
            assert!(
                r.stderr.starts_with("stsfair: "),
                "{label} {args:?}: {}",
                r.stderr
            );
        }
        // The same garbage as a solution file.
        let r = run(&[
            "verify",
            good_instance.to_str().unwrap(),
            file.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 2, "{label} as a solution: {}", r.stderr);
    }
    // A directory where a file is expected.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let r = run_path(&["validate"], dir);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

/// `simulate --json` on a short generated workload (30 jobs at 5 jobs/h on 3 GPUs of each
/// type): exit code, stderr and the average JCT and makespan of each policy run.
fn simulate(extra: &[&str]) -> (i32, String, Vec<(String, f64, f64)>) {
    let mut args = vec![
        "simulate",
        "--jobs",
        "30",
        "--rate",
        "5",
        "--cluster",
        "v100=3,p100=3,k80=3",
        "--json",
    ];
    args.extend_from_slice(extra);
    let r = run(&args);
    let rows = r
        .stdout
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            (
                v["policy"].as_str().unwrap().to_string(),
                v["avg_jct_h"].as_f64().unwrap(),
                v["makespan_h"].as_f64().unwrap(),
            )
        })
        .collect();
    (r.code, r.stderr, rows)
}

/// Gavel's drivers run space sharing on measured pair throughputs (profiling percentage 1, all
/// 26 job types as references), and so does `simulate` by default; the estimating settings
/// change the schedule.
#[test]
fn simulate_space_sharing_uses_measured_pairs_unless_estimation_is_asked_for() {
    let policy = ["--policy", "gavel-mmf-ss,gandiva"];
    let (code, stderr, default) = simulate(&policy);
    if code == 2 && stderr.contains("gavel-mmf-ss") {
        return; // built without HiGHS: no space-sharing max-min fairness
    }
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(default.len(), 2);
    for same in [
        &["--profiling-percentage", "1", "--reference-models", "26"][..],
        &["--measured-pairs"][..],
    ] {
        let (code, stderr, rows) = simulate(&[&policy[..], same].concat());
        assert_eq!((code, &rows), (0, &default), "{same:?}: {stderr}");
    }
    for estimating in [
        &["--profiling-percentage", "0.5"][..],
        &["--reference-models", "5"][..],
    ] {
        let (code, stderr, rows) = simulate(&[&policy[..], estimating].concat());
        assert_eq!(code, 0, "{estimating:?}: {stderr}");
        assert_ne!(rows[0], default[0], "{estimating:?} changed nothing");
    }
}

#[test]
fn simulate_refuses_bad_estimation_settings_with_exit_2_naming_the_flag() {
    for (bad, flag) in [
        (
            &["--profiling-percentage", "0"][..],
            "--profiling-percentage",
        ),
        (
            &["--profiling-percentage", "1.5"][..],
            "--profiling-percentage",
        ),
        (
            &["--profiling-percentage=nan"][..],
            "--profiling-percentage",
        ),
        (&["--reference-models", "0"][..], "--reference-models"),
        (&["--reference-models", "27"][..], "--reference-models"),
        (&["--reference-models=-1"][..], "--reference-models"),
        (
            &["--measured-pairs", "--reference-models", "3"][..],
            "--reference-models",
        ),
    ] {
        let (code, stderr, rows) = simulate(&[&["--policy", "gandiva"][..], bad].concat());
        assert_eq!(code, 2, "{bad:?}: {stderr}");
        assert!(stderr.contains(flag), "{bad:?}: {stderr}");
        assert!(rows.is_empty());
    }
}

/// Settings checked past the argument parser (by the engine when the run starts, by sts's
/// round problem, by the workload's memory limit) are usage errors too: exit 2 naming the
/// flag, before any row is written.
#[test]
fn simulate_refuses_run_settings_with_exit_2_naming_the_flag() {
    for (bad, flag) in [
        (&["--round-seconds", "0"][..], "--round-seconds"),
        (&["--round-seconds", "nan"][..], "--round-seconds"),
        (&["--round-seconds", "1e-300"][..], "--round-seconds"),
        (&["--reset-seconds", "nan"][..], "--reset-seconds"),
        (&["--reset-seconds", "inf"][..], "--reset-seconds"),
        (
            &["--window", "0-30"][..],
            "--window must lie within the jobs",
        ),
        (&["--window", "29-30"][..], "30 jobs"),
    ] {
        for policy in ["fifo", "sts"] {
            let (code, stderr, rows) = simulate(&[&["--policy", policy][..], bad].concat());
            assert_eq!(code, 2, "{policy} {bad:?}: {stderr}");
            assert!(stderr.contains(flag), "{policy} {bad:?}: {stderr}");
            assert!(rows.is_empty(), "{policy} {bad:?}");
        }
    }
    // The last job is inside the window: a valid run.
    let (code, stderr, rows) = simulate(&["--policy", "fifo", "--window", "29-29"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(rows.len(), 1);
    // Units past the round problem's limit are refused before the run (they failed at the
    // first arrival with exit 1); at the limit the smallest slots' throughputs underflow and
    // those slots are left out, so the run goes through.
    let (code, stderr, _) = simulate(&["--policy", "sts", "--units", "1025"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("units must be between 1 and 1024"),
        "{stderr}"
    );
    let r = run(&[
        "simulate", "--jobs", "3", "--policy", "sts", "--units", "1024",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // A job count whose jobs would not fit in memory is refused at once, naming the limit.
    let r = run(&["simulate", "--jobs", "10000001", "--policy", "fifo"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("between 1 and 10,000,000"),
        "{}",
        r.stderr
    );
}

/// `--lambda`, `--max-debt` and `--credit` reach sts's round scheduler (MODEL.md section 3).
#[test]
fn simulate_passes_sts_fairness_parameters() {
    let mut results = Vec::new();
    for credit in ["0", "1", "4"] {
        let (code, stderr, rows) = simulate(&["--policy", "sts", "--credit", credit]);
        assert_eq!(code, 0, "--credit {credit}: {stderr}");
        assert_eq!(rows.len(), 1);
        results.push(rows[0].clone());
    }
    // The defaults are lambda 1, Delta 1, B 1.
    let (_, _, default) = simulate(&["--policy", "sts"]);
    assert_eq!(default[0], results[1]);
    assert!(
        results[0] != results[1] || results[1] != results[2],
        "the credit bound changed nothing: {results:?}"
    );
    for other in [&["--lambda", "0.5"][..], &["--max-debt", "0"][..]] {
        let (code, stderr, rows) = simulate(&[&["--policy", "sts"][..], other].concat());
        assert_eq!((code, rows.len()), (0, 1), "{other:?}: {stderr}");
    }
}

/// `--sts-size-exponent` takes an exponent in [0, 1] (0.75 by default); on single-GPU jobs, whose
/// factor is 1 whatever the exponent, every one gives the default run.
#[test]
fn simulate_takes_sts_size_exponent() {
    let (_, _, default) = simulate(&["--policy", "sts"]);
    for p in ["0", "0.5", "1"] {
        let (code, stderr, rows) = simulate(&["--policy", "sts", "--sts-size-exponent", p]);
        assert_eq!(code, 0, "{p}: {stderr}");
        assert_eq!(rows, default, "{p}");
    }
}

/// `--sts-crowding-hold` is on by default; off gives another schedule on this crowded run
/// whose arrivals stop.
#[test]
fn simulate_takes_sts_crowding_hold() {
    let (_, _, default) = simulate(&["--policy", "sts"]);
    let (code, stderr, on) = simulate(&["--policy", "sts", "--sts-crowding-hold", "on"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(on, default);
    let (code, stderr, off) = simulate(&["--policy", "sts", "--sts-crowding-hold", "off"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(off.len(), 1);
    assert_ne!(off, default);
}

/// `--sts-paired-rounds` is on by default; off plans the uncrowded rounds through the round
/// problem with the pairing step's prices, another schedule on this run; a bad value exits 2
/// naming the flag.
#[test]
fn simulate_takes_sts_paired_rounds() {
    let (_, _, default) = simulate(&["--policy", "sts"]);
    let (code, stderr, on) = simulate(&["--policy", "sts", "--sts-paired-rounds", "on"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(on, default);
    let (code, stderr, off) = simulate(&["--policy", "sts", "--sts-paired-rounds", "off"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(off.len(), 1);
    assert_ne!(off, default);
    let (code, stderr, _) = simulate(&["--policy", "sts", "--sts-paired-rounds", "maybe"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--sts-paired-rounds"), "{stderr}");
}

/// `--sts-second-stage-rounds` is `attained` by default: on a multi-GPU mix that is never
/// crowded that is the run without a second stage, and `all` (the second stage in every round
/// whose weights differ) another; a bad value exits 2 naming the flag.
#[test]
fn simulate_takes_sts_second_stage_rounds() {
    let multi = |extra: &[&str]| {
        let mut args = vec![
            "simulate",
            "--jobs",
            "30",
            "--rate",
            "12",
            "--seed",
            "3",
            "--multi-gpu",
            "--cluster",
            "v100=8,p100=8,k80=8",
            "--json",
        ];
        args.extend_from_slice(extra);
        let r = run(&args);
        assert_eq!(r.code, 0, "{extra:?}: {}", r.stderr);
        let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
        (
            v["avg_jct_h"].as_f64().unwrap(),
            v["makespan_h"].as_f64().unwrap(),
        )
    };
    let default = multi(&[]);
    assert_eq!(multi(&["--sts-second-stage-rounds", "attained"]), default);
    assert_eq!(multi(&["--sts-second-stage", "off"]), default);
    assert_ne!(multi(&["--sts-second-stage-rounds", "all"]), default);
    let r = run(&[
        "simulate",
        "--jobs",
        "5",
        "--sts-second-stage-rounds",
        "some",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("--sts-second-stage-rounds"),
        "{}",
        r.stderr
    );
}

/// `simulate --policy sts FLAG VALUE` runs for each of `values` (one row), and `default`, the
/// flag's default value, gives the run without the flag.
#[track_caller]
fn simulate_takes(flag: &str, values: &[&str], default: &str) {
    let (_, _, without) = simulate(&["--policy", "sts"]);
    for &value in values {
        let (code, stderr, rows) = simulate(&["--policy", "sts", flag, value]);
        assert_eq!(code, 0, "{flag} {value}: {stderr}");
        assert_eq!(rows.len(), 1, "{flag} {value}");
        if value == default {
            assert_eq!(rows, without, "{flag} {value}");
        }
    }
}

/// `--sts-crowded-sharing` is `none` by default, and takes GPU types of the throughputs.
#[test]
fn simulate_takes_sts_crowded_sharing() {
    simulate_takes(
        "--sts-crowded-sharing",
        &["none", "v100", "v100,k80", "p100"],
        "none",
    );
}

/// `--sts-promotion` is 4 by default, and takes a factor or `off`.
#[test]
fn simulate_takes_sts_promotion() {
    simulate_takes("--sts-promotion", &["4", "off", "0", "10"], "4");
}

/// `--sts-critical` is 1.2 by default, and takes a factor or `off`; on this run (crowded
/// rounds, then a drain) the rule changes the schedule.
#[test]
fn simulate_takes_sts_critical() {
    simulate_takes("--sts-critical", &["1.2", "off", "0", "2"], "1.2");
    let (_, _, on) = simulate(&["--policy", "sts"]);
    let (_, _, off) = simulate(&["--policy", "sts", "--sts-critical", "off"]);
    assert_ne!(on, off);
}

/// `--sts-critical-after` is 3600 seconds by default; a wait longer than the run is the run
/// without the rule.
#[test]
fn simulate_takes_sts_critical_after() {
    simulate_takes("--sts-critical-after", &["3600", "0", "1e9"], "3600");
    let (_, _, never) = simulate(&["--policy", "sts", "--sts-critical-after", "1e9"]);
    let (_, _, off) = simulate(&["--policy", "sts", "--sts-critical", "off"]);
    assert_eq!(never, off);
}

#[test]
fn simulate_refuses_bad_fairness_parameters_with_exit_2_naming_the_flag() {
    for (bad, flag) in [
        (&["--lambda", "0"][..], "--lambda"),
        (&["--lambda", "1.5"][..], "--lambda"),
        (&["--max-debt=-1"][..], "--max-debt"),
        (&["--max-debt", "inf"][..], "--max-debt"),
        (&["--credit=-0.5"][..], "--credit"),
        (&["--credit", "nan"][..], "--credit"),
        (&["--credit", "abc"][..], "--credit"),
        (&["--sts-pairing=-1"][..], "--sts-pairing"),
        (&["--sts-pairing", "nan"][..], "--sts-pairing"),
        (&["--sts-pairing", "on"][..], "--sts-pairing"),
        (&["--sts-second-stage", "1.5"][..], "--sts-second-stage"),
        (&["--sts-second-stage=-0.5"][..], "--sts-second-stage"),
        (&["--sts-second-stage", "nan"][..], "--sts-second-stage"),
        (&["--sts-second-stage", "on"][..], "--sts-second-stage"),
        (
            &["--sts-pairing-types", "k80=-1"][..],
            "--sts-pairing-types",
        ),
        (
            &["--sts-pairing-types", "k80=1,k80=1.1"][..],
            "each GPU type once",
        ),
        (
            &["--sts-pairing-types", "K80=1"][..],
            "unknown gpu type \"K80\"",
        ),
        (
            &["--sts-pairing-types", "k80"][..],
            "\"k80\" is not TYPE=SUM",
        ),
        (&["--sts-pairing-types", "k80=x"][..], "--sts-pairing-types"),
        (
            &["--sts-pairing-types", "p100=-inf"][..],
            "--sts-pairing-types",
        ),
        (&["--sts-pairing-types", ""][..], "--sts-pairing-types"),
        (
            &["--sts-crowded-sharing", "V100"][..],
            "--sts-crowded-sharing must be TYPE,... or none (unknown gpu type \"V100\"",
        ),
        (
            &["--sts-crowded-sharing", "v100,v100"][..],
            "\"v100\" is given twice",
        ),
        (&["--sts-crowded-sharing", ""][..], "--sts-crowded-sharing"),
        (&["--sts-crowding=-1"][..], "--sts-crowding"),
        (&["--sts-crowding", "inf"][..], "--sts-crowding"),
        (&["--sts-crowding", "many"][..], "--sts-crowding"),
        (&["--sts-crowding-hold", "yes"][..], "--sts-crowding-hold"),
        (&["--sts-crowding-hold", ""][..], "--sts-crowding-hold"),
        (&["--sts-promotion=-1"][..], "--sts-promotion"),
        (&["--sts-promotion", "inf"][..], "--sts-promotion"),
        (&["--sts-promotion", "ten"][..], "--sts-promotion"),
        (&["--sts-critical=-1"][..], "--sts-critical"),
        (&["--sts-critical", "inf"][..], "--sts-critical"),
        (&["--sts-critical", "nan"][..], "--sts-critical"),
        (&["--sts-critical", "on"][..], "--sts-critical"),
        (&["--sts-critical-after=-1"][..], "--sts-critical-after"),
        (&["--sts-critical-after", "inf"][..], "--sts-critical-after"),
        (&["--sts-critical-after", "nan"][..], "--sts-critical-after"),
        (
            &["--sts-critical-after", "hour"][..],
            "--sts-critical-after",
        ),
        (&["--sts-size-exponent", "1.5"][..], "--sts-size-exponent"),
        (&["--sts-size-exponent=-1"][..], "--sts-size-exponent"),
        (&["--sts-size-exponent", "nan"][..], "--sts-size-exponent"),
        (&["--sts-size-exponent", "half"][..], "--sts-size-exponent"),
    ] {
        let (code, stderr, rows) = simulate(&[&["--policy", "sts"][..], bad].concat());
        assert_eq!(code, 2, "{bad:?}: {stderr}");
        assert!(stderr.contains(flag), "{bad:?}: {stderr}");
        assert!(rows.is_empty());
    }
}

/// `predict-eval --predictions FILE`: one JSON line per scored prediction, from which the
/// report's MAPE and its baselines' are recomputed; held-out job types flagged on the family
/// split (every prediction has one in its pair) and never on the per-type split; bad flags exit
/// 2 naming them, and a path that cannot be written exits 1.
#[test]
fn predict_eval_writes_every_scored_prediction_and_its_mape_adds_up() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests");
    std::fs::create_dir_all(&dir).unwrap();
    for (split, held) in [("family", true), ("per-type", false)] {
        let file = dir.join(format!("predictions-{split}.jsonl"));
        let file_arg = file.to_str().unwrap();
        let r = run(&[
            "predict-eval",
            "--split",
            split,
            "--seed",
            "1",
            "--trees",
            "20",
            "--json",
            "--predictions",
            file_arg,
        ]);
        assert_eq!(r.code, 0, "{split}: {}", r.stderr);
        let report: Value = serde_json::from_str(r.stdout.trim()).unwrap();
        let lines: Vec<Value> = std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines.len() as u64,
            report["predictions_test"].as_u64().unwrap()
        );
        let mape_of = |field: &str| {
            lines
                .iter()
                .map(|l| {
                    let measured = l["measured"].as_f64().unwrap();
                    (l[field].as_f64().unwrap() - measured).abs() / measured
                })
                .sum::<f64>()
                / lines.len() as f64
        };
        let close = |a: f64, b: &Value| (a - b.as_f64().unwrap()).abs() < 1e-9;
        assert!(close(mape_of("predicted"), &report["mape"]), "{split}");
        let baselines = &report["baselines"];
        assert!(close(
            mape_of("global_mean_ratio"),
            &baselines["global_mean_ratio"]
        ));
        assert!(close(
            mape_of("per_job_mean_ratio"),
            &baselines["per_job_mean_ratio"]
        ));
        for l in &lines {
            let flagged =
                l["job_held_out"].as_bool().unwrap() || l["partner_held_out"].as_bool().unwrap();
            assert_eq!(flagged, held, "{split}: {l}");
            assert!(l["solo"].as_f64().unwrap() > 0.0 && l["gpu"].is_string());
        }
    }
    let unwritable = dir.to_str().unwrap();
    for (args, code, says) in [
        (&["--split", "bogus"][..], 2, "--split"),
        (
            &["--reference-partners", "3"][..],
            2,
            "--reference-partners",
        ),
        (&["--holdout", "1.5"][..], 2, "holdout"),
        (
            &["--trees", "20", "--predictions", unwritable][..],
            1,
            "cannot write",
        ),
    ] {
        let r = run(&[&["predict-eval"][..], args].concat());
        assert_eq!(r.code, code, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
    }
}

/// `simulate --job-log FILE`: one JSON line per window job and policy, from which each policy's
/// average JCT is recomputed; no job beats its time alone; the hours it held GPUs and waited add
/// up to its JCT; a path that cannot be written fails before any run.
#[test]
fn simulate_job_log_has_every_window_job_and_adds_up() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("job-log.jsonl");
    let (code, stderr, rows) = simulate(&[
        "--policy",
        "fifo,sts",
        "--window",
        "5-24",
        "--job-log",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(rows.len(), 2);
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (policy, avg_jct, _) in &rows {
        let mine: Vec<&Value> = lines.iter().filter(|l| l["policy"] == **policy).collect();
        let jobs: Vec<u64> = mine.iter().map(|l| l["job"].as_u64().unwrap()).collect();
        assert_eq!(jobs, (5..=24).collect::<Vec<u64>>(), "{policy}");
        let jct: Vec<f64> = mine.iter().map(|l| l["jct_h"].as_f64().unwrap()).collect();
        let mean = jct.iter().sum::<f64>() / jct.len() as f64;
        assert!(
            (mean - avg_jct).abs() < 1e-9,
            "{policy}: {mean} against {avg_jct}"
        );
        for l in &mine {
            let (arrival, completion) = (
                l["arrival_h"].as_f64().unwrap(),
                l["completion_h"].as_f64().unwrap(),
            );
            assert!((completion - arrival - l["jct_h"].as_f64().unwrap()).abs() < 1e-9);
            // No policy finishes a job sooner than alone on its fastest type.
            assert!(
                l["jct_h"].as_f64().unwrap() >= l["alone_h"].as_f64().unwrap() - 1e-9,
                "{l}"
            );
            assert!(l["job_type"].as_str().unwrap().starts_with("('"), "{l}");
            assert!(l["rho"].as_f64().unwrap() > 0.0);
            // Where its JCT went: held GPUs (by type, of the cluster's three) and waited.
            let placed = l["placed_h"].as_object().unwrap();
            let keys: Vec<&str> = placed.keys().map(String::as_str).collect();
            assert_eq!(keys, ["k80", "p100", "v100"], "{l}");
            let held: f64 = placed.values().map(|v| v.as_f64().unwrap()).sum();
            let waiting = l["waiting_h"].as_f64().unwrap();
            assert!(held > 0.0 && waiting >= -1e-9, "{l}");
            assert!((held + waiting - l["jct_h"].as_f64().unwrap()).abs() < 1e-9);
            let shared = l["shared_h"].as_f64().unwrap();
            assert!((0.0..=held + 1e-9).contains(&shared), "{l}");
            if policy == "fifo" {
                assert_eq!(shared, 0.0, "fifo never shares a GPU: {l}");
            }
        }
    }
    // sts runs half GPUs here: some window job held one.
    assert!(
        lines
            .iter()
            .any(|l| l["policy"] == "sts" && l["shared_h"].as_f64().unwrap() > 0.0)
    );
    let unwritable = dir.to_str().unwrap();
    let (code, stderr, rows) = simulate(&["--policy", "fifo", "--job-log", unwritable]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("cannot write"), "{stderr}");
    assert!(rows.is_empty());
}

/// `stsfair bench`: one row per instance (a folder's files in name order), each solver's status
/// and median seconds, the ratio to the first solver, agreement, the objective; the CSV holds
/// the same cells; `--processes` gives the same rows from fresh processes; bad usage exits 2
/// naming the flag. (`src/bench.rs` tests its parts.)
#[test]
fn bench_times_every_instance_and_writes_the_same_table_as_csv() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-bench");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["hand-no-bound", "hand-infeasible"] {
        std::fs::copy(instance_file(name), dir.join(format!("{name}.json"))).unwrap();
    }
    let csv = scratch("bench.csv", "");
    // The two hand instances, by dp and the dense reference DP, with `flags`.
    let bench = |flags: &[&str]| {
        let dir = dir.to_str().unwrap();
        run(&[&["bench", dir, "--solvers", "dp,dp-dense"][..], flags].concat())
    };
    let r = bench(&["--runs", "3", "--csv", csv.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", r.stdout);
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "instance",
            "jobs",
            "types",
            "dp_status",
            "dp_s",
            "dp-dense_status",
            "dp-dense_s",
            "dp-dense/dp",
            "agree",
            "objective",
            "manifest"
        ]
    );
    let infeasible: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(infeasible[0], "hand-infeasible");
    assert_eq!((infeasible[3], infeasible[5]), ("infeasible", "infeasible"));
    // No index.json in the folder: the manifest column says "-".
    assert_eq!(
        (infeasible[8], infeasible[9], infeasible[10]),
        ("yes", "-", "-")
    );
    let solved: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(solved[0], "hand-no-bound");
    assert_eq!((solved[1], solved[2]), ("4", "1"));
    assert_eq!((solved[3], solved[5]), ("optimal", "optimal"));
    // The optimum of instances/README.md, as `solve` finds it.
    assert_eq!((solved[8], solved[9]), ("yes", "2.125000000"));
    // Times of microseconds, printed to the microsecond: the ratio (of the unrounded medians)
    // can only be checked for being one.
    for cell in [solved[4], solved[6], solved[7]] {
        let x: f64 = cell.parse().unwrap();
        assert!(x.is_finite() && x >= 0.0, "{cell}");
    }
    // The CSV: the same cells, comma-separated.
    let written = std::fs::read_to_string(&csv).unwrap();
    let expected: Vec<String> = lines
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(written.lines().collect::<Vec<_>>(), expected);

    // --processes: every run in a fresh `stsfair solve --json` process; the same rows but the
    // times (statuses, agreement, objectives).
    let r = bench(&["--runs", "2", "--processes"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let untimed = |line: &str| {
        let cells: Vec<String> = line.split_whitespace().map(String::from).collect();
        [0, 1, 2, 3, 5, 8, 9, 10].map(|i| cells[i].clone())
    };
    let fresh: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(fresh.len(), 3, "{}", r.stdout);
    for (a, b) in lines.iter().zip(&fresh) {
        assert_eq!(untimed(a), untimed(b));
    }
    // A solver that refuses in its process: an error cell, its message on stderr, exit 0 (an
    // undecided comparison is no disagreement).
    let big = instance_file("gavel-100x3-1000");
    let r = run(&[
        "bench",
        big.to_str().unwrap(),
        "--solvers",
        "dp,brute",
        "--runs",
        "1",
        "--processes",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let cells: Vec<&str> = r
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!((cells[3], cells[5], cells[8]), ("optimal", "error", "-"));
    let says = "gavel-100x3-1000: brute: a run exited with exit status: 1: the instance needs";
    assert!(r.stderr.contains(says), "{}", r.stderr);
    // The combinations of 1,000 jobs saturate 128 bits: said so, not written as 39 digits.
    let says = "needs at least 2^128 combinations, more than the limit of 2000000; brute force";
    assert!(r.stderr.contains(says), "{}", r.stderr);

    for (args, flag) in [
        (&["--runs", "0"][..], "--runs"),
        (&["--runs", "100001"][..], "--runs"),
        (&["--solvers", "dp,nope"][..], "--solvers"),
        (&["--time-limit", "0"][..], "--time-limit"),
    ] {
        let r = run(&[&["bench", dir.to_str().unwrap()][..], args].concat());
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(flag), "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}");
    }
    let r = run(&["bench", "/nonexistent/instances", "--solvers", "dp"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("/nonexistent/instances"), "{}", r.stderr);
}

/// Throughput files at the edges of f64. A solo throughput so small that a measured pair over
/// it overflows is refused by name (the predictor's trees panicked on it: exit 101); one that
/// is tiny but finite makes a job that never completes a step where a policy places it, and the
/// run stops with "made no progress" (exit 1) instead of looping for ever at one instant.
#[test]
fn throughput_files_at_the_edges_of_f64_fail_by_name() {
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../costs/data/gavel/simulation_throughputs.json");
    let mut data: Value = serde_json::from_str(&std::fs::read_to_string(bundled).unwrap()).unwrap();
    let job = "('ResNet-18 (batch size 64)', 1)";
    data["v100"][job]["null"] = serde_json::json!(1e-308);
    let overflow = scratch("tiny-solo.json", data.to_string());
    for args in [
        &["predict-eval"][..],
        &["simulate", "--jobs", "5", "--policy", "fifo"][..],
    ] {
        let r = run(&[args, &["--throughputs", overflow.to_str().unwrap()][..]].concat());
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("must be a finite ratio"),
            "{args:?}: {}",
            r.stderr
        );
    }
    data["v100"][job]["null"] = serde_json::json!(1e-30);
    let stuck = scratch("slow-solo.json", data.to_string());
    // fifo places each job on the free type where it is fastest, not on the V100s: it finishes.
    for (policy, code) in [("gavel-mmf", 1), ("fifo", 0)] {
        let flags = ["--policy", policy, "--throughputs", stuck.to_str().unwrap()];
        let r = run(&[&["simulate", "--jobs", "50"][..], &flags[..]].concat());
        assert_eq!(r.code, code, "{policy}: {}", r.stderr);
        if code == 1 {
            let says = "gavel-mmf made no progress at t=";
            assert!(r.stderr.contains(says), "{}", r.stderr);
            assert!(r.stderr.contains("1000 rounds in a row"), "{}", r.stderr);
        }
    }
}

// ---- export

#[cfg(feature = "highs")]
#[test]
fn export_writes_the_ilp_as_mps_or_lp_with_named_columns() {
    let file = instance_file("hand-share-one-gpu");
    let file = file.to_str().unwrap();
    let r = run(&["export", file]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    for needed in [
        "OBJSENSE",
        "MAX",
        "INTORG",
        "cap_v100",
        "job_0_a",
        "x_1_b_v100_2",
    ] {
        assert!(r.stdout.contains(needed), "{needed}: {}", r.stdout);
    }
    // Values are written to 17 significant digits: v = 2.5/4 and (1/0.6)/2.
    assert!(r.stdout.contains("0.625"), "{}", r.stdout);
    assert!(r.stdout.contains("0.83333333333333337"), "{}", r.stdout);
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests-export.lp");
    let r = run(&[
        "export",
        file,
        "--format",
        "lp",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(r.stderr.contains("4 columns, 3 rows"), "{}", r.stderr);
    let lp = std::fs::read_to_string(&out).unwrap();
    assert!(lp.starts_with("\\") && lp.contains("\nmax\n"), "{lp}");
    assert!(lp.contains("x_0_a_v100_4"), "{lp}");
}

#[cfg(feature = "highs")]
#[test]
fn export_refuses_bad_input_and_reports_unwritable_output() {
    let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-instance.json");
    let r = run_path(&["export"], &missing);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no-such-instance.json"), "{}", r.stderr);
    let file = instance_file("hand-share-one-gpu");
    let file = file.to_str().unwrap();
    let r = run(&["export", file, "--format", "xml"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--format"), "{}", r.stderr);
    let r = run(&["export", file, "--out", "/nonexistent-dir/model.mps"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("/nonexistent-dir/model.mps"),
        "{}",
        r.stderr
    );
}

/// A throughputs file of one GPU type named `g1` (no name of Gavel's data): 12 single-GPU job
/// types with every pair measured, and two distributed job types whose pairs are not written.
fn one_type_throughputs() -> PathBuf {
    let key = |i: usize, sf: u32| format!("('M{i} (batch size {})', {sf})", 1 << (i % 5));
    let solo = |i: usize| 5.0 + 3.0 * i as f64;
    let mut rows = Vec::new();
    for a in 0..12 {
        let mut entries = vec![format!("\"null\": {}", solo(a))];
        for b in 0..12 {
            let ratio = |x: usize, y: usize| 0.3 + 0.06 * ((x * 7 + y * 3) % 11) as f64;
            entries.push(format!(
                "\"{}\": [{}, {}]",
                key(b, 1),
                ratio(a.min(b), a.max(b)) * solo(a),
                ratio(a.max(b), a.min(b)) * solo(b)
            ));
        }
        rows.push(format!("\"{}\": {{{}}}", key(a, 1), entries.join(", ")));
    }
    for i in 0..2 {
        rows.push(format!(
            "\"{}\": {{\"null\": {}}}",
            key(i, 2),
            1.7 * solo(i)
        ));
    }
    scratch(
        "one-type-throughputs.json",
        format!("{{\"g1\": {{{}}}}}", rows.join(", ")),
    )
}

/// `simulate` runs on a table of one GPU type with its default flags: no default names a GPU
/// type (the cluster defaults to the table's types, the pairing thresholds are derived from
/// its pairs); an explicit `--sts-pairing-types` still names the table's types.
#[test]
fn simulate_runs_on_a_table_of_one_gpu_type_with_default_flags() {
    let file = one_type_throughputs();
    let file = file.to_str().unwrap();
    for extra in [
        &[][..],
        &["--cluster", "g1=4"][..],
        &["--cluster", "g1=4", "--policy", "sts,gavel-mmf-ss"][..],
        &["--cluster", "g1=4", "--sts-pairing-types", "g1=1.2"][..],
        &["--cluster", "g1=4", "--sts-pairing-types", "none"][..],
        &["--cluster", "g1=4", "--multi-gpu"][..],
    ] {
        let mut args = vec!["simulate", "--throughputs", file, "--jobs", "24", "--json"];
        args.extend_from_slice(extra);
        let r = run(&args);
        assert_eq!(r.code, 0, "{extra:?}: {}", r.stderr);
        for line in r.stdout.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["finished"].as_u64(), Some(24), "{extra:?}: {line}");
        }
    }
    let r = run(&[
        "simulate",
        "--throughputs",
        file,
        "--jobs",
        "24",
        "--sts-pairing-types",
        "k80=1",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("unknown gpu type \"k80\""),
        "{}",
        r.stderr
    );
}

#[cfg(not(feature = "highs"))]
#[test]
fn export_without_highs_says_it_needs_highs() {
    let file = instance_file("hand-share-one-gpu");
    let r = run(&["export", file.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("feature highs"), "{}", r.stderr);
}

/// `stsfair bench` against a folder's manifest (index.json, which is no instance): "yes" where
/// the answers agree with it, "NO" and exit 1 where one differs, each difference on stderr
/// naming the solver and the manifest; a manifest that cannot be read is exit 2.
#[test]
fn bench_checks_answers_against_the_manifest() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-bench-manifest");
    std::fs::create_dir_all(&dir).unwrap();
    let shipped: Value =
        serde_json::from_str(&std::fs::read_to_string(instance_file("index")).unwrap()).unwrap();
    let mut manifest = json!({"format": shipped["format"], "instances": []});
    for name in ["hand-infeasible", "hand-no-bound", "hand-share-one-gpu"] {
        let file = format!("{name}.json");
        std::fs::copy(instance_file(name), dir.join(&file)).unwrap();
        let entry = shipped["instances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["file"] == file.as_str())
            .unwrap()
            .clone();
        // hand-share-one-gpu is left out of this folder's manifest.
        if name != "hand-share-one-gpu" {
            manifest["instances"].as_array_mut().unwrap().push(entry);
        }
    }
    let index = dir.join("index.json");
    std::fs::write(&index, manifest.to_string()).unwrap();
    let bench = || {
        run(&[
            "bench",
            dir.to_str().unwrap(),
            "--solvers",
            "dp,dp-dense",
            "--runs",
            "1",
        ])
    };
    let column = |stdout: &str| -> Vec<String> {
        stdout
            .lines()
            .map(|l| l.split_whitespace().last().unwrap().to_string())
            .collect()
    };
    let r = bench();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        column(&r.stdout),
        ["manifest", "yes", "yes", "-"],
        "{}",
        r.stdout
    );

    // A wrong optimum: the row says NO, stderr says where, exit 1.
    manifest["instances"][1]["objective"] = json!(2.5);
    std::fs::write(&index, manifest.to_string()).unwrap();
    let r = bench();
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        column(&r.stdout),
        ["manifest", "yes", "NO", "-"],
        "{}",
        r.stdout
    );
    for solver in ["dp", "dp-dense"] {
        let says = format!(
            "hand-no-bound: {solver} answered optimal 2.125, the manifest says optimal 2.5 ("
        );
        assert!(r.stderr.contains(&says), "{}", r.stderr);
    }
    assert!(r.stderr.contains("index.json"), "{}", r.stderr);

    // A manifest that is not one: exit 2 naming it.
    std::fs::write(&index, "{\"format\": \"stsfair-index/1\"}").unwrap();
    let r = bench();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("index.json"), "{}", r.stderr);
    std::fs::remove_dir_all(&dir).ok();
}

/// `--sts-pairing-types` is `auto` by default, which on Gavel's table is k80=1,p100=inf.
#[test]
fn simulate_takes_sts_pairing_types() {
    simulate_takes(
        "--sts-pairing-types",
        &["auto", "k80=1,p100=inf", "none", "v100=1.2,k80=inf"],
        "auto",
    );
    let (_, _, auto) = simulate(&["--policy", "sts"]);
    let (_, _, given) = simulate(&["--policy", "sts", "--sts-pairing-types", "k80=1,p100=inf"]);
    assert_eq!(auto, given);
}

/// `simulate` checks its flags before it predicts the pairs the throughputs do not measure:
/// on a table too sparse for the predictor, a bad flag is the error reported (exit 2, naming
/// the flag), and with good flags the predictor's refusal is (exit 2).
#[test]
fn simulate_checks_flags_before_predicting_pairs() {
    let key = |i: usize| format!("('M{i} (batch size 4)', 1)");
    let rows: Vec<String> = (0..4)
        .map(|i| {
            format!(
                "\"{}\": {{\"null\": {}, \"{}\": [2.0, 2.0]}}",
                key(i),
                4.0 + i as f64,
                key(i)
            )
        })
        .collect();
    let file = scratch(
        "sparse-throughputs.json",
        format!("{{\"g1\": {{{}}}}}", rows.join(", ")),
    );
    let file = file.to_str().unwrap();
    let base = ["simulate", "--throughputs", file, "--jobs", "5"];
    for (bad, flag) in [
        (&["--lp", "bogus"][..], "--lp"),
        (&["--sts-promotion", "x"][..], "--sts-promotion"),
        (&["--policy", "nope"][..], "--policy"),
        (
            &["--sts-pairing-types", "k80=1"][..],
            "unknown gpu type \"k80\"",
        ),
        (&["--cluster", "v100=4"][..], "--cluster"),
    ] {
        let r = run(&[&base[..], bad].concat());
        assert_eq!(r.code, 2, "{bad:?}: {}", r.stderr);
        assert!(r.stderr.contains(flag), "{bad:?}: {}", r.stderr);
    }
    let r = run(&base);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("the predictor needs at least 10 measured"),
        "{}",
        r.stderr
    );
}
