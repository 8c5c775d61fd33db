//! Adversarial inputs through the `stsfair` binary: extreme numbers, out-of-range
//! counts, very many jobs and options, deep nesting, huge strings, duplicates, every field
//! deleted in turn, a cluster of 4 x 1,000,000 GPUs, the ILP's time limit and byte-identical
//! output. Each run must end (no hang, no panic, no signal) with exit 0, 2 or 3 and, when it
//! refuses, one short message that names the offending field. docs/reliability.md lists the cases
//! with their exit codes.
//!
//! Nothing here asserts a duration: a loaded machine must not fail the suite. The commands only
//! have to finish.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_stsfair");

/// Longest refusal message accepted as "clear": one readable line, not an echo of the input.
const MAX_MESSAGE: usize = 1_000;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Run {
    let out = Command::new(BIN).args(args).output().unwrap();
    let run = Run {
        code: out
            .status
            .code()
            .unwrap_or_else(|| panic!("{args:?} was killed by a signal")),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "{args:?} panicked: {}",
        run.stderr
    );
    run
}

/// A scratch file of this test run.
fn scratch(name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("adversarial");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A valid document using every field of FORMAT.md.
fn base() -> Value {
    json!({
        "format": "stsfair/1",
        "name": "adversarial",
        "fairness": { "lambda": 1.0, "max_debt": 1.0, "credit": 1.0 },
        "gpu_types": [
            { "name": "v100", "count": 2, "units": 4, "slot_sizes": [1, 2, 4] },
            { "name": "k80", "count": 1, "units": 8, "slot_sizes": [2, 4, 8] }
        ],
        "jobs": [
            { "id": "a", "weight": 1.0, "workers": 1, "deficit": 0.0,
              "times": [ { "gpu": "v100", "slot": 4, "sec_per_iter": 0.25 },
                         { "gpu": "v100", "slot": 2, "sec_per_iter": 0.4 },
                         { "gpu": "k80", "slot": 8, "sec_per_iter": 0.5 } ] },
            { "id": "b", "weight": 2.0, "workers": 2, "deficit": 1.5,
              "times": [ { "gpu": "v100", "slot": 2, "sec_per_iter": 0.6 },
                         { "gpu": "k80", "slot": 4, "sec_per_iter": 0.9 } ] }
        ]
    })
}

/// `base()` with the value at JSON pointer `pointer` replaced by the literal text `literal`
/// (which need not be valid JSON, or representable as a `serde_json::Value`).
fn with_literal(pointer: &str, literal: &str) -> String {
    let mut doc = base();
    *doc.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer}")) = json!("@@here@@");
    doc.to_string().replace("\"@@here@@\"", literal)
}

/// Runs `args` on a scratch copy of `text` and checks the outcome: exit `code`; for a refusal
/// (2), one short line on stderr containing every one of `parts`; for an answer, the solution
/// document passes `verify`.
#[track_caller]
fn expect(name: &str, text: impl AsRef<[u8]>, args: &[&str], code: i32, parts: &[&str]) -> Run {
    let file = scratch(name, text);
    let mut all = args.to_vec();
    all.push(s(&file));
    let r = run(&all);
    assert_eq!(
        r.code,
        code,
        "{name}: {args:?}: stdout {} stderr {}",
        clip(&r.stdout),
        clip(&r.stderr)
    );
    assert!([0, 2, 3].contains(&r.code));
    if code == 2 {
        assert!(r.stdout.is_empty(), "{name}: {}", clip(&r.stdout));
        assert!(
            r.stderr.starts_with("stsfair: "),
            "{name}: {}",
            clip(&r.stderr)
        );
        assert!(
            r.stderr.len() <= MAX_MESSAGE,
            "{name}: a {} byte message: {}",
            r.stderr.len(),
            clip(&r.stderr)
        );
        assert_eq!(
            r.stderr.trim_end().lines().count(),
            1,
            "{name}: {}",
            r.stderr
        );
    }
    for part in parts {
        let out = if code == 2 { &r.stderr } else { &r.stdout };
        assert!(out.contains(part), "{name}: {:?} lacks {part:?}", clip(out));
    }
    if args == ["solve", "--json"] && code != 2 {
        let solution = scratch(&format!("{name}.solution.json"), &r.stdout);
        let v = run(&["verify", s(&file), s(&solution)]);
        assert_eq!(v.code, 0, "{name}: verify: {}", v.stderr);
    }
    r
}

fn clip(text: &str) -> String {
    text.chars().take(600).collect()
}

const SOLVE: &[&str] = &["solve", "--json"];
const VALIDATE: &[&str] = &["validate"];

// ---- extreme numbers

#[test]
fn extreme_times_are_solved_or_refused_by_name() {
    let path = "jobs[0].times[0].sec_per_iter";
    let p = "/jobs/0/times/0/sec_per_iter";
    // Accepted: the reciprocal (the throughput) is finite and non-zero, even when subnormal.
    for (i, literal) in [
        "1e308",
        "1.7976931348623157e308",
        "2.2250738585072014e-308",
        "3e-308",
        "1e-300",
    ]
    .iter()
    .enumerate()
    {
        let r = expect(
            &format!("time-ok-{i}.json"),
            with_literal(p, literal),
            SOLVE,
            0,
            &["\"status\":\"optimal\""],
        );
        let doc: Value = serde_json::from_str(&r.stdout).unwrap();
        assert!(doc["objective"].as_f64().unwrap().is_finite());
    }
    // Refused: the reciprocal of a subnormal overflows; 1e309 is no f64; -0 is not > 0.
    let refused = [
        (
            "5e-324",
            "must have a finite, non-zero reciprocal (throughput) (got 5e-324)",
        ),
        (
            "1e-310",
            "must have a finite, non-zero reciprocal (throughput) (got 1e-310)",
        ),
        ("1e309", "number out of range"),
        ("-1e309", "number out of range"),
        ("-0.0", "must be finite and > 0 (got -0)"),
        ("-1e308", "must be finite and > 0 (got -1e308)"),
        ("NaN", "NaN is not a JSON number (numbers must be finite)"),
    ];
    for (i, (literal, part)) in refused.iter().enumerate() {
        expect(
            &format!("time-bad-{i}.json"),
            with_literal(p, literal),
            SOLVE,
            2,
            &[path, part],
        );
    }
}

/// Extreme but valid numbers through `bound`, `rounds` and `verify`: a whole-GPU time of 1e13
/// to 1e308 s/it beside a half-GPU time of 0.4 s, or a weight of 1e15, give the bound (unscaled,
/// HiGHS refuses such a long-run LP, the `highs` crate panics, or at 1e13 it returns 1.0 where
/// `rounds` reaches 1.8333); an infinite sigma leaves the deficits finite (minus infinity would
/// fail the next round) and the state file's tally a number, not `null`; a solution with one
/// job too many is exit 1, as one too few.
#[cfg(feature = "highs")]
#[test]
fn extreme_numbers_through_bound_rounds_and_verify() {
    let two = |whole_a: &str, weight_a: &str| {
        format!(
            r#"{{"format": "stsfair/1", "gpu_types": [{{"name": "v100", "count": 1, "units": 4, "slot_sizes": [1, 2, 4]}}],
"jobs": [{{"id": "a", "weight": {weight_a}, "times": [{{"gpu": "v100", "slot": 4, "sec_per_iter": {whole_a}}}, {{"gpu": "v100", "slot": 2, "sec_per_iter": 0.4}}]}},
{{"id": "b", "times": [{{"gpu": "v100", "slot": 4, "sec_per_iter": 0.5}}, {{"gpu": "v100", "slot": 2, "sec_per_iter": 0.6}}]}}]}}"#
        )
    };
    for (i, whole_a) in ["1e13", "1e15", "1e308"].iter().enumerate() {
        let file = scratch(&format!("extreme-{i}.json"), two(whole_a, "1"));
        let r = run(&["bound", "--json", s(&file)]);
        assert_eq!(r.code, 0, "{whole_a}: {}", r.stderr);
        let doc: Value = serde_json::from_str(&r.stdout).unwrap();
        let bound = doc["lp_bound"].as_f64().unwrap();
        assert!(
            (bound - (1.0 + 0.5 / 0.6)).abs() < 1e-9,
            "{whole_a}: {bound}"
        );
        for prices in ["off", "lp"] {
            let r = run(&["rounds", "--rounds", "3", "--prices", prices, s(&file)]);
            assert_eq!(r.code, 0, "{whole_a} {prices}: {}", r.stderr);
        }
        // Resumed from a state file written after an infinite sigma.
        let state = scratch(&format!("extreme-{i}.state.json"), "");
        std::fs::remove_file(&state).unwrap();
        for rounds in ["2", "4"] {
            let r = run(&["rounds", "--rounds", rounds, "--state", s(&state), s(&file)]);
            assert_eq!(r.code, 0, "{whole_a} {rounds}: {}", r.stderr);
        }
    }
    let heavy = scratch("extreme-weight.json", two("0.25", "1e15"));
    let r = run(&["bound", "--json", s(&heavy)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(
        (doc["lp_bound"].as_f64().unwrap() / 1e15 - 1.0).abs() < 1e-9,
        "{doc}"
    );
    // A well-formed solution with one assignment too many is not a solution of the instance:
    // exit 1, as one with one too few.
    let file = scratch("extreme-verify.json", two("0.25", "1"));
    let r = run(&["solve", "--json", s(&file)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut doc: Value = serde_json::from_str(&r.stdout).unwrap();
    let first = doc["assignments"][0].clone();
    doc["assignments"].as_array_mut().unwrap().push(first);
    let extra = scratch("extreme-verify.extra.json", doc.to_string());
    doc["assignments"].as_array_mut().unwrap().truncate(1);
    let fewer = scratch("extreme-verify.fewer.json", doc.to_string());
    for (solution, count) in [(&extra, 3), (&fewer, 1)] {
        let r = run(&["verify", s(&file), s(solution)]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        let says = format!("invalid solution: solution lists {count} jobs, the instance has 2");
        assert!(r.stderr.contains(&says), "{}", r.stderr);
    }
}

/// A cluster past the placement's limit of 4,000,000 GPUs (five types of a million) is solved
/// by `solve` and refused by `rounds` with a message that says so, before any allocation
/// (unchecked, 64 types of a million abort on a 2 GiB allocation).
#[test]
fn rounds_refuse_clusters_past_the_placement_limit() {
    let types: Vec<Value> = (0..5)
        .map(
            |k| json!({"name": format!("g{k}"), "count": 1_000_000, "units": 1, "slot_sizes": [1]}),
        )
        .collect();
    let doc = json!({
        "format": "stsfair/1",
        "gpu_types": types,
        "jobs": [{"id": "a", "times": [{"gpu": "g0", "slot": 1, "sec_per_iter": 1.0}]}],
    });
    let file = scratch("five-million-gpus.json", doc.to_string());
    let r = run(&["solve", s(&file)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = run(&["rounds", "--rounds", "1", s(&file)]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "the cluster has 5000000 gpus in all, more than the 4000000 a placement can hold"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn extreme_weights_deficits_and_fairness_are_solved_or_refused_by_name() {
    let ok = [
        ("/jobs/0/weight", "5e-324"),
        ("/jobs/0/weight", "1e308"),
        ("/jobs/0/deficit", "1e308"),
        ("/jobs/0/deficit", "-1e308"),
        ("/jobs/1/deficit", "5e-324"),
        ("/fairness/lambda", "5e-324"),
        ("/fairness/max_debt", "1e308"),
        ("/fairness/max_debt", "5e-324"),
        ("/fairness/credit", "1e308"),
    ];
    for (i, (pointer, literal)) in ok.iter().enumerate() {
        let name = format!("number-ok-{i}.json");
        let file_text = with_literal(pointer, literal);
        // Feasible or infeasible, never refused: every value is valid.
        let file = scratch(&name, &file_text);
        let code = run(&["solve", "--json", s(&file)]).code;
        assert!(code == 0 || code == 3, "{name}: exit {code}");
        expect(&name, file_text, SOLVE, code, &[]);
    }
    let mut doc = base();
    doc["jobs"][0]["weight"] = json!(1e308);
    doc["jobs"][1]["weight"] = json!(1e308);
    expect(
        "weights-sum.json",
        doc.to_string(),
        SOLVE,
        2,
        &["jobs[1].weight must keep the sum of all job weights finite (got 1e308)"],
    );
    expect(
        "lambda-zero.json",
        with_literal("/fairness/lambda", "0"),
        SOLVE,
        2,
        &["fairness.lambda must be in (0, 1] (got 0)"],
    );
    expect(
        "lambda-big.json",
        with_literal("/fairness/lambda", "1.0000000000000002"),
        SOLVE,
        2,
        &["fairness.lambda"],
    );
    expect(
        "debt-neg.json",
        with_literal("/fairness/max_debt", "-5e-324"),
        SOLVE,
        2,
        &["fairness.max_debt must be finite and >= 0 (got -5e-324)"],
    );
    expect(
        "deficit-inf.json",
        with_literal("/jobs/0/deficit", "-1e400"),
        SOLVE,
        2,
        &["jobs[0].deficit", "number out of range"],
    );
}

// ---- counts out of range

#[test]
fn counts_of_2_to_the_64_and_negative_counts_are_refused_by_name() {
    let cases = [
        ("/gpu_types/0/count", "gpu_types[0].count"),
        ("/gpu_types/0/units", "gpu_types[0].units"),
        ("/gpu_types/0/slot_sizes/0", "gpu_types[0].slot_sizes[0]"),
        ("/jobs/0/workers", "jobs[0].workers"),
        ("/jobs/0/times/0/slot", "jobs[0].times[0].slot"),
    ];
    for (i, (pointer, path)) in cases.iter().enumerate() {
        for (literal, part) in [
            ("18446744073709551616", "expected u64"),
            ("-1", "invalid value: integer `-1`, expected u64"),
            ("-18446744073709551616", "expected u64"),
            ("4.0", "invalid type: floating point `4.0`, expected u64"),
            ("1e3", "expected u64"),
        ] {
            expect(
                &format!("count-{i}-{literal}.json"),
                with_literal(pointer, literal),
                VALIDATE,
                2,
                &[path, part],
            );
        }
        // The largest u64 parses, and then breaks the range rule (or, for a slot, the ladder).
        let r = expect(
            &format!("count-{i}-max.json"),
            with_literal(pointer, "18446744073709551615"),
            VALIDATE,
            2,
            &[path],
        );
        assert!(
            r.stderr.contains("must be") && r.stderr.contains("18446744073709551615"),
            "{}",
            r.stderr
        );
    }
    expect(
        "count-over.json",
        with_literal("/gpu_types/0/count", "1000001"),
        VALIDATE,
        2,
        &["gpu_types[0].count must be an integer in [0, 1000000] (got 1000001)"],
    );
    expect(
        "workers-zero.json",
        with_literal("/jobs/0/workers", "0"),
        VALIDATE,
        2,
        &["jobs[0].workers must be an integer in [1, 1024] (got 0)"],
    );
}

// ---- size

/// A document of `jobs` jobs on `types` GPU types of `count` GPUs, each job with a time on every
/// (type, slot) pair; deterministic (no randomness), with a spread of weights, workers, deficits
/// and times.
fn many_jobs(name: &str, jobs: usize, types: usize, count: u64) -> String {
    let gpu_types: Vec<Value> = (0..types)
        .map(|k| json!({ "name": format!("g{k}"), "count": count, "units": 4, "slot_sizes": [1, 2, 4] }))
        .collect();
    let jobs: Vec<Value> = (0..jobs)
        .map(|j| {
            let times: Vec<Value> = (0..types)
                .flat_map(|k| {
                    [1u64, 2, 4].map(|slot| {
                        let t = (0.05 + ((j * 7 + k * 13 + slot as usize * 5) % 97) as f64 / 50.0)
                            / slot as f64;
                        json!({ "gpu": format!("g{k}"), "slot": slot, "sec_per_iter": t })
                    })
                })
                .collect();
            let weight = [1.0, 2.0, 0.5][j % 3];
            let workers = [1, 1, 2, 4][j % 4];
            json!({
                "id": format!("job-{j}"),
                "weight": weight,
                "workers": workers,
                "deficit": (j % 11) as f64 / 4.0 - 1.0,
                "times": times
            })
        })
        .collect();
    json!({ "format": "stsfair/1", "name": name, "gpu_types": gpu_types, "jobs": jobs }).to_string()
}

#[test]
fn a_hundred_thousand_jobs_are_read_and_validated() {
    let text = many_jobs("jobs-100k", 100_000, 2, 1_000);
    expect(
        "jobs-100k.json",
        &text,
        VALIDATE,
        0,
        &["(2 gpu types, 100000 jobs, 600000 options)"],
    );
}

/// 100,000 jobs on 4 x 1,000,000 GPUs, where capacity cannot bind: the first DP took minutes and
/// 1 GB here (docs/reliability.md, findings); the class DP leaves such types out of its states.
#[test]
fn a_hundred_thousand_jobs_are_solved() {
    let text = many_jobs("jobs-100k-slack", 100_000, 4, 1_000_000);
    expect(
        "jobs-100k-slack.json",
        &text,
        SOLVE,
        0,
        &["\"status\":\"optimal\""],
    );
}

#[test]
fn a_cluster_of_4_by_1_000_000_gpus_is_solved() {
    // Capacity 4,000,000 units per type; 1,000 jobs need at most 16,000 of them, so capacity
    // cannot bind and every job takes its best admissible option.
    let text = many_jobs("cluster-4x1m", 1_000, 4, 1_000_000);
    let r = expect(
        "cluster-4x1m.json",
        &text,
        SOLVE,
        0,
        &["\"status\":\"optimal\""],
    );
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["assignments"].as_array().unwrap().len(), 1_000);
    // The dense reference DP cannot hold the grid: it says so, before allocating, and exits 1.
    let file = scratch("cluster-4x1m.json", &text);
    let r = run(&["solve", "--solver", "dp-dense", s(&file)]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("dp-dense: the instance needs")
            && r.stderr.contains("more than the limit"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_job_with_hundreds_of_options_is_solved() {
    // 100 GPU types with ladders [1, 2, 4]: each job has 300 options.
    let text = many_jobs("options-300", 12, 100, 4);
    let r = expect(
        "options-300.json",
        &text,
        VALIDATE,
        0,
        &["(100 gpu types, 12 jobs, 3600 options)"],
    );
    assert!(r.stderr.is_empty());
    expect(
        "options-300.json",
        &text,
        SOLVE,
        0,
        &["\"status\":\"optimal\""],
    );
    // dp-dense records each choice in a byte: more than 255 options is refused by name.
    let file = scratch("options-300.json", &text);
    let r = run(&["solve", "--solver", "dp-dense", s(&file)]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.starts_with("stsfair: dp-dense: "), "{}", r.stderr);
}

// ---- nesting and strings

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    let deep = 100_000;
    let arrays = format!("{}{}", "[".repeat(deep), "]".repeat(deep));
    let objects = format!("{}1{}", "{\"a\":".repeat(deep), "}".repeat(deep));
    expect(
        "deep-format.json",
        with_literal("/format", &arrays),
        VALIDATE,
        2,
        &["format: invalid type: sequence"],
    );
    expect(
        "deep-lambda.json",
        with_literal("/fairness/lambda", &arrays),
        VALIDATE,
        2,
        &["fairness.lambda"],
    );
    expect(
        "deep-times.json",
        with_literal("/jobs/0/times", &arrays),
        VALIDATE,
        2,
        &["jobs[0].times[0]"],
    );
    expect(
        "deep-name.json",
        with_literal("/name", &objects),
        VALIDATE,
        2,
        &["name: invalid type: map"],
    );
    // A document that is nothing but nesting.
    expect(
        "deep-only.json",
        &arrays,
        VALIDATE,
        2,
        &["invalid type: sequence"],
    );
    expect(
        "deep-unclosed.json",
        "[".repeat(deep),
        VALIDATE,
        2,
        &["stsfair: "],
    );
    // The solution file's free-form `stats` is read as JSON values: serde_json's recursion limit
    // of 128 refuses the nesting instead of recursing 100,000 deep.
    let instance = scratch("deep-instance.json", base().to_string());
    let r = run(&["solve", "--json", s(&instance)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut solution: Value = serde_json::from_str(&r.stdout).unwrap();
    solution["stats"]["deep"] = json!("@@here@@");
    let text = solution.to_string().replace("\"@@here@@\"", &arrays);
    let file = scratch("deep-solution.json", text);
    let r = run(&["verify", s(&instance), s(&file)]);
    assert_eq!(r.code, 2, "{}", clip(&r.stderr));
    assert!(
        r.stderr.contains("recursion limit exceeded"),
        "{}",
        clip(&r.stderr)
    );
}

#[test]
fn huge_strings_are_handled_and_quoted_briefly() {
    let huge = "x".repeat(16 << 20);
    // Valid: a 16 MiB id, instance name and GPU type name.
    let mut doc = base();
    doc["jobs"][0]["id"] = json!(huge);
    doc["name"] = json!(huge);
    doc["gpu_types"][1]["name"] = json!(huge);
    for job in doc["jobs"].as_array_mut().unwrap() {
        for t in job["times"].as_array_mut().unwrap() {
            if t["gpu"] == "k80" {
                t["gpu"] = json!(huge);
            }
        }
    }
    expect(
        "huge-ok.json",
        doc.to_string(),
        VALIDATE,
        0,
        &["valid (2 gpu types, 2 jobs"],
    );
    expect(
        "huge-ok.json",
        doc.to_string(),
        SOLVE,
        0,
        &["\"status\":\"optimal\""],
    );
    // Refused: the message quotes at most a few hundred characters of the string.
    let quoted = |s: &str| serde_json::to_string(s).unwrap();
    expect(
        "huge-format.json",
        with_literal("/format", &quoted(&huge)),
        VALIDATE,
        2,
        &["format must be \"stsfair/1\"", "characters cut"],
    );
    expect(
        "huge-gpu.json",
        with_literal("/jobs/0/times/0/gpu", &quoted(&huge)),
        VALIDATE,
        2,
        &[
            "jobs[0].times[0].gpu must name one of gpu_types",
            "characters cut",
        ],
    );
    expect(
        "huge-number.json",
        with_literal("/jobs/0/weight", &quoted(&huge)),
        VALIDATE,
        2,
        &["jobs[0].weight: invalid type: string", "characters cut"],
    );
    let mut doc = base();
    doc["jobs"][1]["id"] = json!(huge);
    doc["jobs"][0]["id"] = json!(huge);
    expect(
        "huge-dup.json",
        doc.to_string(),
        VALIDATE,
        2,
        &["jobs[1].id must be unique among jobs", "characters cut"],
    );
    let mut doc = base();
    doc.as_object_mut().unwrap().insert(huge.clone(), json!(1));
    expect(
        "huge-key.json",
        doc.to_string(),
        VALIDATE,
        2,
        &["unknown field", "characters cut"],
    );
    // A digit string too long for any number.
    expect(
        "huge-digits.json",
        with_literal("/jobs/0/deficit", &"9".repeat(1 << 20)),
        VALIDATE,
        2,
        &["jobs[0].deficit"],
    );
}

#[test]
fn files_that_are_not_documents_are_refused() {
    expect("empty.json", "", VALIDATE, 2, &["EOF while parsing"]);
    expect(
        "latin1.json",
        b"{\"format\": \"stsfair/1\xe9\"}",
        VALIDATE,
        2,
        &["latin1.json", "UTF-8"],
    );
    expect(
        "bom.json",
        format!("\u{feff}{}", base()),
        VALIDATE,
        2,
        &["expected value"],
    );
    expect(
        "two-docs.json",
        format!("{} {}", base(), base()),
        VALIDATE,
        2,
        &["trailing characters"],
    );
    // Past the 1 GiB limit the file is refused before it is read (a sparse file: no disk used).
    let big = scratch("over-1gib.json", "");
    std::fs::File::options()
        .write(true)
        .open(&big)
        .unwrap()
        .set_len((1 << 30) + 1)
        .unwrap();
    let r = run(&["validate", s(&big)]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("more than the limit of 1073741824"),
        "{}",
        r.stderr
    );
    std::fs::remove_file(&big).unwrap();
    // A directory.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let r = run(&["validate", s(dir)]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("cannot read"), "{}", r.stderr);
}

// ---- duplicates and missing fields

#[test]
fn duplicates_are_refused_by_name() {
    let mut doc = base();
    doc["jobs"][1]["id"] = json!("a");
    expect(
        "dup-id.json",
        doc.to_string(),
        VALIDATE,
        2,
        &["jobs[1].id must be unique among jobs (got \"a\")"],
    );
    let mut doc = base();
    doc["gpu_types"][1]["name"] = json!("v100");
    expect(
        "dup-gpu.json",
        doc.to_string(),
        VALIDATE,
        2,
        &["gpu_types[1].name must be unique among gpu_types"],
    );
    let mut doc = base();
    doc["jobs"][0]["times"][1]["slot"] = json!(4);
    expect(
        "dup-time.json",
        doc.to_string(),
        VALIDATE,
        2,
        &["jobs[0].times[1] must be the only entry for (v100, 4)"],
    );
    let text = base()
        .to_string()
        .replacen("\"weight\":1.0,", "\"weight\":1.0,\"weight\":2.0,", 1);
    expect(
        "dup-key.json",
        text,
        VALIDATE,
        2,
        &["jobs[0]: duplicate field `weight`"],
    );
    // 10,000 jobs with the same id: refused at the second.
    let mut doc = base();
    let job = doc["jobs"][0].clone();
    doc["jobs"] = Value::Array(vec![job; 10_000]);
    expect(
        "dup-many.json",
        doc.to_string(),
        VALIDATE,
        2,
        &["jobs[1].id must be unique among jobs"],
    );
}

/// Every object member of `v` as (JSON pointer of its object, key, display path of the object).
fn members(v: &Value, pointer: &str, path: &str, out: &mut Vec<(String, String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.push((pointer.to_string(), k.clone(), path.to_string()));
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                members(x, &format!("{pointer}/{k}"), &sub, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                members(x, &format!("{pointer}/{i}"), &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_field_deleted_in_turn_is_refused_by_name_or_defaulted() {
    // FORMAT.md's optional fields, by the object that holds them.
    let optional = |pointer: &str, key: &str| match pointer {
        "" => ["name", "fairness"].contains(&key),
        "/fairness" => true,
        p if p.starts_with("/jobs/") && !p.contains("/times") => {
            ["weight", "workers", "deficit"].contains(&key)
        }
        _ => false,
    };
    let mut all = Vec::new();
    members(&base(), "", "", &mut all);
    assert_eq!(all.len(), 41, "every member of base() is deleted once");
    for (i, (pointer, key, path)) in all.iter().enumerate() {
        let mut doc = base();
        let object = if pointer.is_empty() {
            &mut doc
        } else {
            doc.pointer_mut(pointer).unwrap()
        };
        object.as_object_mut().unwrap().remove(key);
        let name = format!("deleted-{i}-{key}.json");
        if optional(pointer, key) {
            expect(
                &name,
                doc.to_string(),
                SOLVE,
                0,
                &["\"status\":\"optimal\""],
            );
        } else {
            // serde names the object that lacks the field ("." for the document).
            let at = if path.is_empty() {
                ".".to_string()
            } else {
                path.clone()
            };
            expect(
                &name,
                doc.to_string(),
                VALIDATE,
                2,
                &[&format!("{at}: missing field `{key}`")],
            );
        }
    }
}

// ---- limits

#[test]
fn the_dp_stops_at_its_time_limit_with_its_greedy_solution() {
    // A nanosecond has passed by the DP's first look at the clock, after its multipliers and
    // greedy (step 3): it answers with the greedy's solution, its gap to the Lagrangian bound.
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../instances/gavel-250x3-3000.json");
    let r = run(&[
        "solve",
        "--json",
        "--solver",
        "dp",
        "--time-limit",
        "1e-9",
        s(&file),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["status"], "feasible", "{}", clip(&r.stdout));
    let (objective, bound) = (doc["objective"].as_f64(), doc["stats"]["bound"].as_f64());
    let (Some(objective), Some(bound)) = (objective, bound) else {
        panic!("{}", clip(&r.stdout));
    };
    // The optimum (1289.456147052, the README's solve) lies between the two.
    assert!(
        objective < 1289.456147052 && 1289.456147052 < bound,
        "{objective} {bound}"
    );
    let gap = doc["stats"]["gap"].as_f64().unwrap();
    assert!(
        (gap - (bound - objective) / objective).abs() < 1e-12,
        "{gap}"
    );
    let solution = scratch("dp-limit.solution.json", &r.stdout);
    assert_eq!(run(&["verify", s(&file), s(&solution)]).code, 0);
    // The dense DP has no answer before its last job: exit 1, saying so.
    let small = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../instances/gavel-8x3-40.json");
    let r = run(&[
        "solve",
        "--solver",
        "dp-dense",
        "--time-limit",
        "1e-9",
        s(&small),
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("dp-dense: stopped by the time limit")
            && r.stderr.contains("before any solution"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_ilp_stops_at_its_time_limit() {
    // 3,000 jobs on a 250 x 3 cluster: far more than HiGHS proves optimal in 0.2 s.
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../instances/gavel-250x3-3000.json");
    let start = std::time::Instant::now();
    let r = run(&[
        "solve",
        "--json",
        "--solver",
        "ilp",
        "--time-limit",
        "0.2",
        s(&file),
    ]);
    let elapsed = start.elapsed().as_secs_f64();
    eprintln!(
        "ilp with --time-limit 0.2: exit {} after {elapsed:.2} s",
        r.code
    );
    match r.code {
        // Stopped at the limit with an incumbent: `feasible`, with its gap.
        0 => {
            let doc: Value = serde_json::from_str(&r.stdout).unwrap();
            assert_eq!(doc["status"], "feasible", "{}", clip(&r.stdout));
            // A gap without a finite bound is written as null (docs/format.md).
            let gap = &doc["stats"]["gap"];
            assert!(
                gap.is_null() || gap.as_f64().is_some_and(|g| g > 0.0),
                "{gap}"
            );
            let solution = scratch("ilp-limit.solution.json", &r.stdout);
            assert_eq!(run(&["verify", s(&file), s(&solution)]).code, 0);
        }
        // Stopped before any incumbent: said so.
        1 => assert!(
            r.stderr.contains("ilp: stopped by the time limit")
                && r.stderr.contains("before any solution"),
            "{}",
            r.stderr
        ),
        code => panic!("exit {code}: {}", r.stderr),
    }
}

#[test]
fn bad_limits_are_usage_errors() {
    let file = scratch("limits.json", base().to_string());
    for (flag, value) in [
        ("--time-limit", "NaN"),
        ("--time-limit", "inf"),
        ("--time-limit", "-1"),
        ("--mip-rel-gap", "-0.5"),
        ("--threads", "0"),
        ("--threads", "-1"),
        // HiGHS aborted the process (exit 134, `std::bad_alloc` or `std::system_error`) making
        // this many threads; at most 256 now.
        ("--threads", "257"),
        ("--threads", "1000"),
        ("--threads", "100000"),
        ("--threads", "1000000000"),
        ("--threads", "18446744073709551615"),
        ("--max-memory-mib", "-1"),
        ("--max-memory-mib", "0"),
        ("--max-memory-mib", "18446744073709551616"),
    ] {
        // `--flag=value`, so that clap reads "-1" as the value and not as a flag.
        let r = run(&[
            "solve",
            "--solver",
            "ilp",
            &format!("{flag}={value}"),
            s(&file),
        ]);
        assert_eq!(r.code, 2, "{flag} {value}: {}", r.stderr);
        assert!(r.stderr.contains(flag), "{}", r.stderr);
        assert!(r.stderr.len() <= MAX_MESSAGE, "{}", r.stderr);
    }
    let r = run(&["solve", "--solver", "ilp", "--threads", "1000", s(&file)]);
    assert!(
        r.stderr
            .contains("--threads must be between 1 and 256 (got 1000)"),
        "{}",
        r.stderr
    );
    // `rounds` takes the same flags.
    let r = run(&["rounds", s(&file), "--rounds", "2", "--threads", "1000"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--threads"), "{}", r.stderr);
    // The largest thread count is one HiGHS can make.
    let r = run(&[
        "solve",
        "--json",
        "--solver",
        "ilp",
        "--threads",
        "256",
        s(&file),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // 0 MiB was a limit of one DP state, refused as "needs 2 states ... limit of 1".
    let r = run(&["solve", "--max-memory-mib", "0", s(&file)]);
    assert!(
        r.stderr
            .contains("--max-memory-mib must be at least 1 (got 0)"),
        "{}",
        r.stderr
    );
    // A memory limit too small for the DP is refused by the solver, naming the limit.
    let r = run(&["solve", "--max-memory-mib", "1", s(&file)]);
    assert!(
        r.code == 0 || (r.code == 1 && r.stderr.contains("more than the limit")),
        "{}",
        r.stderr
    );
}

// ---- flags of simulate, gen and predict-eval at their edges

/// Runs `args` and requires a refusal: exit 2, nothing on stdout, one short line on stderr
/// holding every one of `parts`.
#[track_caller]
fn refused(args: &[&str], parts: &[&str]) {
    let r = run(args);
    assert_eq!(r.code, 2, "{args:?}: {}", clip(&r.stderr));
    assert!(r.stdout.is_empty(), "{args:?}: {}", clip(&r.stdout));
    assert!(r.stderr.starts_with("stsfair: "), "{args:?}: {}", r.stderr);
    assert_eq!(
        r.stderr.trim_end().lines().count(),
        1,
        "{args:?}: {}",
        r.stderr
    );
    assert!(r.stderr.len() <= MAX_MESSAGE, "{args:?}: {}", r.stderr);
    for part in parts {
        assert!(
            r.stderr.contains(part),
            "{args:?}: {:?} lacks {part:?}",
            r.stderr
        );
    }
}

/// The first `lines` lines of Gavel's reference trace with the priority weights `weights`
/// (field 8) of the first lines.
fn trace_with_weights(name: &str, lines: usize, weights: &[&str]) -> PathBuf {
    let reference =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../sim/data/gavel-ref/seed0-rate5-36x3.trace");
    let text = std::fs::read_to_string(reference).unwrap();
    let mut out = String::new();
    for (i, line) in text.lines().take(lines).enumerate() {
        let mut fields: Vec<&str> = line.split('\t').collect();
        if let Some(w) = weights.get(i) {
            fields[7] = w;
        }
        out.push_str(&fields.join("\t"));
        out.push('\n');
    }
    scratch(name, out)
}

/// Trace weights the policies cannot run (sts schedules nothing for a lone 1e-9 or 5e-324;
/// 1e20 beside 1 stops sts's paired round; 1e-100 stops gavel-mmf's LP; two of 1e308 make a
/// round's instance invalid) are refused before the run with exit 2 naming the line and field;
/// 1e-6 and 1e6, alone and together, run under every policy.
#[test]
fn simulate_refuses_trace_weights_past_1e_6_to_1e6() {
    for (name, lines, weights) in [
        ("w-tiny", 1, &["1e-9"][..]),
        ("w-subnormal", 1, &["5e-324"]),
        ("w-huge-beside-1", 2, &["1e20", "1"]),
        ("w-1e-100", 2, &["1e-100", "1"]),
        ("w-max", 2, &["1e308", "1e308"]),
    ] {
        let file = trace_with_weights(&format!("{name}.trace"), lines, weights);
        for policy in ["sts", "gavel-mmf"] {
            refused(
                &["simulate", "--trace", s(&file), "--policy", policy],
                &["trace line 1: field 8 (priority weight) must be in [1e-6, 1e6]"],
            );
        }
    }
    for (name, lines, weights) in [
        ("w-low", 1, &["1e-6"][..]),
        ("w-high", 1, &["1e6"]),
        ("w-both", 6, &["1e-6", "1e6"]),
    ] {
        let file = trace_with_weights(&format!("{name}.trace"), lines, weights);
        for policy in ["sts", "gavel-mmf", "gavel-mmf-ss", "fifo"] {
            let r = run(&["simulate", "--trace", s(&file), "--policy", policy]);
            assert_eq!(r.code, 0, "{name} {policy}: {}", r.stderr);
        }
    }
}

/// `gen --weights 1e308` with several jobs makes the sum of the weights infinite: refused
/// naming the flag, not only the generated document's `jobs[1].weight`.
#[test]
fn gen_names_the_weights_flag_when_their_sum_overflows() {
    refused(
        &["gen", "--weights", "1e308", "--jobs", "3"],
        &["--weights: jobs[1].weight must keep the sum of all job weights finite"],
    );
}

/// A trace line of Gavel's reference trace with `steps` total steps.
fn trace_with_steps(name: &str, steps: &str) -> PathBuf {
    let reference =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../sim/data/gavel-ref/seed0-rate5-36x3.trace");
    let text = std::fs::read_to_string(reference).unwrap();
    let mut fields: Vec<&str> = text.lines().next().unwrap().split('\t').collect();
    fields[5] = steps;
    scratch(name, format!("{}\n", fields.join("\t")))
}

#[test]
fn simulate_refuses_what_it_cannot_run_by_flag() {
    // A job of 10^15 steps ran for days (10^9 steps took a second): refused by line and field.
    let huge = trace_with_steps("huge-steps.trace", "1000000000000000");
    for policy in ["fifo", "sts"] {
        refused(
            &["simulate", "--trace", s(&huge), "--policy", policy],
            &[
                "trace job 0 (line 1): field 6 (total steps) 1000000000000000",
                "alone on its fastest gpu type (v100",
                "more than the limit of 1e8 s",
            ],
        );
    }
    // 10^8 steps of ResNet-18 (4.2e6 s alone) run as before.
    let long = trace_with_steps("long-steps.trace", "100000000");
    let r = run(&[
        "simulate",
        "--trace",
        s(&long),
        "--policy",
        "fifo",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Arrivals past a trace's 1e12 s limit lost the clock's precision and gave impossible
    // metrics with exit 0.
    for rate in ["1e-15", "1e-9"] {
        refused(
            &["simulate", "--jobs", "20", "--rate", rate, "--json"],
            &[
                "--rate must be high enough",
                "at most 1e12 seconds",
                "would arrive at",
            ],
        );
    }
    let r = run(&[
        "simulate", "--jobs", "20", "--rate", "1e-6", "--policy", "fifo", "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    refused(
        &["simulate", "--jobs", "20", "--rate", "0"],
        &["--rate must be > 0"],
    );
    // GPU counts past the round problem's limit: exit 1 naming an instance path, or "not a
    // non-negative integer" past 2^32.
    for count in ["1000001", "4294967296", "1000000000000", "-1", "x"] {
        let cluster = format!("v100={count}");
        refused(
            &["simulate", "--jobs", "5", "--cluster", &cluster],
            &[
                "--cluster",
                "count of v100 must be an integer in [0, 1000000]",
            ],
        );
    }
    // No policy ran nothing and exited 0; an unknown one failed after the others had run.
    for policy in ["", " , ", "fifo,typo", "sts,all"] {
        refused(
            &["simulate", "--jobs", "5", "--policy", policy],
            &["--policy must name policies among sts, gavel-mmf"],
        );
    }
    // An LP method this build lacks is a usage error (it was exit 1 at the first LP).
    let r = run(&[
        "simulate",
        "--jobs",
        "5",
        "--lp",
        "clarabel",
        "--policy",
        "gavel-mmf",
    ]);
    if r.code != 0 {
        refused(
            &[
                "simulate",
                "--jobs",
                "5",
                "--lp",
                "clarabel",
                "--policy",
                "gavel-mmf",
            ],
            &["--lp clarabel needs the `clarabel` feature of stsfair-sim"],
        );
    }
}

#[test]
fn gen_and_predict_eval_name_the_flag() {
    let cases: &[(&[&str], &[&str])] = &[
        // The fairness flags were reported as `got Fairness { lambda: 0.0, ... }`.
        (
            &["gen", "--lambda", "0"],
            &["--lambda must be in (0, 1] (got 0)"],
        ),
        (&["gen", "--lambda", "1.5"], &["--lambda must be in (0, 1]"]),
        (
            &["gen", "--max-debt", "nan"],
            &["--max-debt must be finite and >= 0 (got NaN)"],
        ),
        (
            &["gen", "--credit", "inf"],
            &["--credit must be finite and >= 0 (got inf)"],
        ),
        // The generator's parameters by their flags.
        (
            &["gen", "--forced", "2"],
            &["--forced must be in [0, 1] (got 2)"],
        ),
        (&["gen", "--missing", "1"], &["--missing must be in [0, 1)"]),
        (
            &["gen", "--weights", "0"],
            &["--weights must be finite and > 0"],
        ),
        (
            &["gen", "--jobs", "1000001"],
            &["--jobs must be at most 1000000"],
        ),
        // GPU types: "gpus must list at least one gpu type" / "at most 64".
        (
            &["gen", "--types", "0"],
            &["--types must be between 1 and 64 (got 0)"],
        ),
        // The generated GPU types' rules, by flag as well as path.
        (
            &["gen", "--units", "2000"],
            &["--units: gpu_types[0].units must be an integer in [1, 1024]"],
        ),
        (
            &["gen", "--ladder", "1,3"],
            &["--ladder: gpu_types[0].slot_sizes[1] must divide units (4)"],
        ),
        (
            &["gen", "--gpu-types", "a,a"],
            &["--gpu-types: gpu_types[1].name must be unique"],
        ),
        (
            &["gen", "--gpu-types", ""],
            &["--gpu-types: gpu_types[0].name must not be empty"],
        ),
        // A slot time the composition rule underflows was refused as an instance path
        // (`jobs[0].times[4].sec_per_iter ... (got inf)`) of a document nobody wrote.
        (
            &["gen", "--gavel", "--units", "1024", "--ladder", "1,1024"],
            &[
                "--units 1024 with --ladder 1,1024 cannot be represented",
                "1-unit slot of",
                "--slot-rule power-law",
            ],
        ),
        // A training set held out to nothing: "the table has 0".
        (
            &["predict-eval", "--split", "job", "--holdout", "0.99"],
            &["--holdout 0.99 (--split job) leaves 0 measured co-located throughputs to train on"],
        ),
        (
            &["predict-eval", "--holdout", "0"],
            &["--holdout must be in (0, 1)"],
        ),
        (&["predict-eval", "--trees", "0"], &["--trees must be in"]),
    ];
    for (args, parts) in cases {
        refused(args, parts);
    }
    let names: Vec<String> = (0..65).map(|k| format!("g{k}")).collect();
    refused(
        &["gen", "--gpu-types", &names.join(",")],
        &["--gpu-types must list at most 64 gpu types (got 65)"],
    );
}

// ---- determinism

/// `solve --json` output split into everything before `"stats"` (compared byte for byte) and the
/// stats without their wall times (`seconds*`, which no two runs share).
fn solve_twice_compare(file: &Path, solver: &str) {
    let outputs: Vec<(String, Value)> = (0..2)
        .map(|_| {
            let r = run(&["solve", "--json", "--solver", solver, s(file)]);
            assert_eq!(r.code, 0, "{solver}: {}", r.stderr);
            let cut = r.stdout.find(",\"stats\":").unwrap();
            let doc: Value = serde_json::from_str(&r.stdout).unwrap();
            let mut stats = doc["stats"].as_object().unwrap().clone();
            stats.retain(|k, _| !k.starts_with("seconds"));
            (r.stdout[..cut].to_string(), Value::Object(stats))
        })
        .collect();
    assert_eq!(
        outputs[0].0, outputs[1].0,
        "{solver}: the solution differs between two runs"
    );
    assert_eq!(
        outputs[0].1, outputs[1].1,
        "{solver}: the stats differ between two runs"
    );
}

#[test]
fn the_same_input_gives_the_same_bytes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../instances");
    for solver in ["dp", "dp-dense", "brute", "ilp"] {
        solve_twice_compare(&root.join("hand-fastest-first.json"), solver);
    }
    for solver in ["dp", "ilp"] {
        solve_twice_compare(&root.join("gavel-36x3-300.json"), solver);
    }
    // The summary differs only in its time line; validate not at all.
    let file = root.join("gavel-36x3-300.json");
    let summaries: Vec<Vec<String>> = (0..2)
        .map(|_| {
            run(&["solve", s(&file)])
                .stdout
                .lines()
                .filter(|l| !l.starts_with("time"))
                .map(String::from)
                .collect()
        })
        .collect();
    assert_eq!(summaries[0], summaries[1]);
    assert_eq!(
        run(&["validate", s(&file)]).stdout,
        run(&["validate", s(&file)]).stdout
    );
}

/// A reader that stops early (`stsfair gen ... | head`) closes the pipe while the command is still
/// writing: the command must end quietly with exit 0, not panic on the failed write.
#[test]
fn closed_standard_output_ends_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    // About 1.5 MB of JSON, far more than a pipe buffers.
    let mut child = Command::new(BIN)
        .args(["gen", "--gavel", "--jobs", "2000", "--count", "10"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).unwrap();
    assert!(String::from_utf8_lossy(&first).contains("stsfair/1"));
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert!(stderr.is_empty(), "nothing on stderr, got: {stderr}");
}
