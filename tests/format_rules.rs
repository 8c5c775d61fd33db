//! One rejecting test per rule of FORMAT.md (`stsfair/1` instance files), each asserting the
//! JSON path the error names and part of the rule it states; then the accepting side: defaults,
//! empty lists, boundary values, options that can never fit, and the `to_json` round trip.
//!
//! Every document starts from one valid base document and changes one thing, so a rejection can
//! only come from that one change.

use serde_json::{Value, json};
use stsfair::formulation::JobClass;
use stsfair::{Fairness, Instance, InstanceError, JobSpec, RoundProblem};

/// A valid instance touching every field: two GPU types with different ladders, one job with
/// every optional field written, one with none.
fn base() -> Value {
    json!({
        "format": "stsfair/1",
        "name": "base",
        "fairness": { "lambda": 1.0, "max_debt": 1.0, "credit": 1.0 },
        "gpu_types": [
            { "name": "v100", "count": 2, "units": 4, "slot_sizes": [1, 2, 4] },
            { "name": "k80", "count": 1, "units": 8, "slot_sizes": [2, 4, 8] }
        ],
        "jobs": [
            { "id": "a", "weight": 1.0, "workers": 1, "deficit": 0.0,
              "times": [
                { "gpu": "v100", "slot": 4, "sec_per_iter": 0.25 },
                { "gpu": "k80", "slot": 2, "sec_per_iter": 0.5 }
              ] },
            { "id": "b", "times": [ { "gpu": "v100", "slot": 2, "sec_per_iter": 0.4 } ] }
        ]
    })
}

/// The object at a JSON pointer of `doc` (`""` is the document).
fn object<'a>(doc: &'a mut Value, pointer: &str) -> &'a mut serde_json::Map<String, Value> {
    doc.pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no object at {pointer:?}"))
}

/// The base document with `key` of the object at `pointer` set to `value`.
fn set(pointer: &str, key: &str, value: Value) -> String {
    let mut doc = base();
    object(&mut doc, pointer).insert(key.to_string(), value);
    doc.to_string()
}

/// The base document with `key` of the object at `pointer` set to a literal that `Value` cannot
/// hold (2^64, 1e400, NaN, a repeated key): written through a placeholder.
fn set_literal(pointer: &str, key: &str, literal: &str) -> String {
    let text = set(pointer, key, json!("@@literal@@"));
    assert_eq!(text.matches("\"@@literal@@\"").count(), 1);
    text.replace("\"@@literal@@\"", literal)
}

/// The base document with `key` removed from the object at `pointer`.
fn remove(pointer: &str, key: &str) -> String {
    let mut doc = base();
    assert!(
        object(&mut doc, pointer).shift_remove(key).is_some(),
        "{pointer}/{key} is in the base"
    );
    doc.to_string()
}

/// The base document with `key: literal` written a second time in the object at `pointer`.
fn repeat(pointer: &str, key: &str, literal: &str) -> String {
    let text = set(pointer, "@@repeat@@", json!(0));
    assert_eq!(text.matches("\"@@repeat@@\":0").count(), 1);
    text.replace("\"@@repeat@@\":0", &format!("{key:?}:{literal}"))
}

/// The path and the message (rule and value, or the JSON reader's complaint) of a rejection.
fn rejection(text: &str) -> (String, String) {
    match Instance::from_json(text) {
        Ok(_) => panic!("accepted an invalid document: {text}"),
        Err(e @ InstanceError::Rule { .. }) => {
            let shown = e.to_string();
            let InstanceError::Rule { path, rule, got } = e else {
                unreachable!()
            };
            // The displayed error leads with the path, so the CLI message names it too.
            assert!(
                shown.starts_with(&path),
                "{shown:?} does not start with {path:?}"
            );
            (path, format!("{rule} (got {got})"))
        }
        Err(e @ InstanceError::Syntax { .. }) => {
            let shown = e.to_string();
            let InstanceError::Syntax { path, message } = e else {
                unreachable!()
            };
            assert!(
                shown.starts_with(&path),
                "{shown:?} does not start with {path:?}"
            );
            (path, message)
        }
        Err(e) => panic!("unexpected error kind: {e:?}"),
    }
}

/// Asserts that `text` is rejected at `path` with a message containing `part`.
#[track_caller]
fn rejects(text: &str, path: &str, part: &str) {
    let (p, message) = rejection(text);
    assert_eq!(p, path, "wrong path; message: {message}; document: {text}");
    assert!(
        message.contains(part),
        "message {message:?} lacks {part:?}; document: {text}"
    );
}

const TWO_TO_64: &str = "18446744073709551616";

// ---- the document as a whole

#[test]
fn base_document_is_valid() {
    let instance = Instance::from_json(&base().to_string()).unwrap();
    assert_eq!(instance.gpu_types().len(), 2);
    assert_eq!(instance.jobs().len(), 2);
}

#[test]
fn format_tag_must_be_stsfair_1() {
    rejects(
        &set("", "format", json!("stsfair/2")),
        "format",
        "must be \"stsfair/1\"",
    );
    rejects(
        &set("", "format", json!("")),
        "format",
        "must be \"stsfair/1\"",
    );
    rejects(&remove("", "format"), ".", "missing field `format`");
}

#[test]
fn not_json_or_not_one_document_is_rejected() {
    rejects("", ".", "EOF while parsing");
    // Inside an unfinished object the reader cannot name a field yet: its path is "?".
    rejects("{", "?", "EOF while parsing");
    rejects("stsfair", ".", "expected value");
    // A second value after the document is not ignored.
    rejects(&format!("{} {{}}", base()), ".", "trailing characters");
    rejects(&format!("{} x", base()), ".", "trailing characters");
}

#[test]
fn arrays_are_not_accepted_where_objects_are_required() {
    // serde would read a struct from an array of its fields in order; FORMAT.md has objects.
    let doc = r#"["stsfair/1", "n", {"lambda": 1, "max_debt": 1, "credit": 1},
                  [{"name": "v100", "count": 1, "units": 4, "slot_sizes": [4]}], []]"#;
    rejects(doc, ".", "must be a JSON object");
    rejects(
        &set("", "fairness", json!([1.0, 1.0, 1.0])),
        "fairness",
        "must be a JSON object",
    );
    let types = json!([["v100", 2, 4, [1, 2, 4]], { "name": "k80", "count": 1, "units": 8, "slot_sizes": [2, 4, 8] }]);
    rejects(
        &set("", "gpu_types", types),
        "gpu_types[0]",
        "must be a JSON object",
    );
    let mut doc = base();
    doc["jobs"][1] = json!(["b", 1.0, 1, 0.0, []]);
    rejects(&doc.to_string(), "jobs[1]", "must be a JSON object");
    let mut doc = base();
    doc["jobs"][0]["times"][1] = json!(["k80", 2, 0.5]);
    rejects(
        &doc.to_string(),
        "jobs[0].times[1]",
        "must be a JSON object",
    );
}

#[test]
fn unknown_fields_are_rejected_at_every_level() {
    let cases = [
        ("", "x", "x"),
        ("/fairness", "level", "fairness.level"),
        ("/gpu_types/1", "memory", "gpu_types[1].memory"),
        ("/jobs/1", "priority", "jobs[1].priority"),
        ("/jobs/0/times/1", "note", "jobs[0].times[1].note"),
    ];
    for (pointer, key, path) in cases {
        rejects(
            &set(pointer, key, json!(1)),
            path,
            &format!("unknown field `{key}`"),
        );
    }
}

#[test]
fn null_is_rejected_for_every_optional_field() {
    let cases = [
        ("", "name", "name"),
        ("", "fairness", "fairness"),
        ("/fairness", "lambda", "fairness.lambda"),
        ("/fairness", "max_debt", "fairness.max_debt"),
        ("/fairness", "credit", "fairness.credit"),
        ("/jobs/0", "weight", "jobs[0].weight"),
        ("/jobs/0", "workers", "jobs[0].workers"),
        ("/jobs/0", "deficit", "jobs[0].deficit"),
        // Also on a job that omits them, so `null` is not read as "absent".
        ("/jobs/1", "weight", "jobs[1].weight"),
        ("/jobs/1", "workers", "jobs[1].workers"),
        ("/jobs/1", "deficit", "jobs[1].deficit"),
    ];
    for (pointer, key, path) in cases {
        rejects(&set(pointer, key, Value::Null), path, "invalid type: null");
    }
}

#[test]
fn null_is_rejected_for_every_required_field() {
    let cases = [
        ("", "format", "format"),
        ("", "gpu_types", "gpu_types"),
        ("", "jobs", "jobs"),
        ("/gpu_types/0", "name", "gpu_types[0].name"),
        ("/gpu_types/0", "count", "gpu_types[0].count"),
        ("/gpu_types/0", "units", "gpu_types[0].units"),
        ("/gpu_types/0", "slot_sizes", "gpu_types[0].slot_sizes"),
        ("/jobs/0", "id", "jobs[0].id"),
        ("/jobs/0", "times", "jobs[0].times"),
        ("/jobs/0/times/0", "gpu", "jobs[0].times[0].gpu"),
        ("/jobs/0/times/0", "slot", "jobs[0].times[0].slot"),
        (
            "/jobs/0/times/0",
            "sec_per_iter",
            "jobs[0].times[0].sec_per_iter",
        ),
    ];
    for (pointer, key, path) in cases {
        rejects(&set(pointer, key, Value::Null), path, "invalid type: null");
    }
    let mut doc = base();
    doc["gpu_types"][0]["slot_sizes"][1] = Value::Null;
    rejects(
        &doc.to_string(),
        "gpu_types[0].slot_sizes[1]",
        "invalid type: null",
    );
}

#[test]
fn required_fields_must_be_present() {
    let cases = [
        ("", "gpu_types", "."),
        ("", "jobs", "."),
        ("/gpu_types/0", "name", "gpu_types[0]"),
        ("/gpu_types/0", "count", "gpu_types[0]"),
        ("/gpu_types/0", "units", "gpu_types[0]"),
        ("/gpu_types/0", "slot_sizes", "gpu_types[0]"),
        ("/jobs/0", "id", "jobs[0]"),
        ("/jobs/0/times/0", "gpu", "jobs[0].times[0]"),
        ("/jobs/0/times/0", "slot", "jobs[0].times[0]"),
        ("/jobs/0/times/0", "sec_per_iter", "jobs[0].times[0]"),
    ];
    for (pointer, key, path) in cases {
        rejects(
            &remove(pointer, key),
            path,
            &format!("missing field `{key}`"),
        );
    }
}

#[test]
fn times_is_required() {
    rejects(
        &remove("/jobs/1", "times"),
        "jobs[1]",
        "missing field `times`",
    );
}

#[test]
fn repeated_keys_are_rejected_at_every_level() {
    let cases = [
        ("", "format", "\"stsfair/1\"", "."),
        ("", "jobs", "[]", "."),
        ("/fairness", "lambda", "0.5", "fairness"),
        ("/gpu_types/0", "count", "3", "gpu_types[0]"),
        ("/jobs/0", "id", "\"c\"", "jobs[0]"),
        ("/jobs/0", "weight", "2.0", "jobs[0]"),
        ("/jobs/0", "deficit", "0.0", "jobs[0]"),
        ("/jobs/0/times/1", "slot", "4", "jobs[0].times[1]"),
    ];
    for (pointer, key, literal, path) in cases {
        rejects(
            &repeat(pointer, key, literal),
            path,
            &format!("duplicate field `{key}`"),
        );
    }
}

#[test]
fn integers_must_be_integer_literals() {
    let cases = [
        ("/gpu_types/0", "count", "2.0", "gpu_types[0].count"),
        ("/gpu_types/0", "units", "4.0", "gpu_types[0].units"),
        ("/gpu_types/0", "units", "4e0", "gpu_types[0].units"),
        ("/jobs/0", "workers", "1.0", "jobs[0].workers"),
        ("/jobs/0/times/0", "slot", "4.0", "jobs[0].times[0].slot"),
        ("/jobs/0/times/0", "slot", "\"4\"", "jobs[0].times[0].slot"),
    ];
    for (pointer, key, literal, path) in cases {
        rejects(&set_literal(pointer, key, literal), path, "invalid type");
    }
    let mut doc = base();
    doc["gpu_types"][0]["slot_sizes"] = json!([1, 2.0, 4]);
    rejects(
        &doc.to_string(),
        "gpu_types[0].slot_sizes[1]",
        "invalid type: floating point `2.0`",
    );
}

/// `key` of the object at `pointer` with each of `bad` literals is rejected at `path`; the
/// message is serde's for negative or 2^64 literals and the range rule for the others.
#[track_caller]
fn integer_range(
    pointer: &str,
    key: &str,
    path: &str,
    rule: &str,
    too_small: Option<&str>,
    too_big: &str,
) {
    if let Some(small) = too_small {
        rejects(&set_literal(pointer, key, small), path, rule);
    }
    rejects(&set_literal(pointer, key, too_big), path, rule);
    rejects(
        &set_literal(pointer, key, "-1"),
        path,
        "invalid value: integer `-1`",
    );
    rejects(
        &set_literal(pointer, key, TWO_TO_64),
        path,
        "invalid type: floating point",
    );
    rejects(
        &set_literal(pointer, key, "1e400"),
        path,
        "number out of range",
    );
}

#[test]
fn count_must_be_in_0_to_1_000_000() {
    integer_range(
        "/gpu_types/0",
        "count",
        "gpu_types[0].count",
        "must be an integer in [0, 1000000]",
        None,
        "1000001",
    );
    // u32 and u64 limits: past MAX_COUNT is refused before any conversion can wrap.
    rejects(
        &set_literal("/gpu_types/0", "count", "4294967296"),
        "gpu_types[0].count",
        "[0, 1000000]",
    );
    rejects(
        &set_literal("/gpu_types/0", "count", "18446744073709551615"),
        "gpu_types[0].count",
        "[0, 1000000]",
    );
}

#[test]
fn units_must_be_in_1_to_1024() {
    integer_range(
        "/gpu_types/0",
        "units",
        "gpu_types[0].units",
        "must be an integer in [1, 1024]",
        Some("0"),
        "1025",
    );
}

#[test]
fn workers_must_be_in_1_to_1024() {
    integer_range(
        "/jobs/0",
        "workers",
        "jobs[0].workers",
        "must be an integer in [1, 1024]",
        Some("0"),
        "1025",
    );
}

#[test]
fn slot_must_be_a_non_negative_integer_in_range() {
    // Any u64 literal that is not a rung of the ladder (0, 3, 2^64 - 1) breaks the ladder rule.
    for literal in ["0", "3", "8", "18446744073709551615"] {
        rejects(
            &set_literal("/jobs/0/times/0", "slot", literal),
            "jobs[0].times[0].slot",
            "must be one of the slot_sizes of v100",
        );
    }
    rejects(
        &set_literal("/jobs/0/times/0", "slot", "-4"),
        "jobs[0].times[0].slot",
        "invalid value: integer `-4`",
    );
    rejects(
        &set_literal("/jobs/0/times/0", "slot", TWO_TO_64),
        "jobs[0].times[0].slot",
        "invalid type: floating point",
    );
}

#[test]
fn slot_sizes_must_not_be_empty() {
    rejects(
        &set("/gpu_types/1", "slot_sizes", json!([])),
        "gpu_types[1].slot_sizes",
        "must not be empty",
    );
}

#[test]
fn slot_sizes_entries_must_be_in_range() {
    rejects(
        &set("/gpu_types/0", "slot_sizes", json!([0, 4])),
        "gpu_types[0].slot_sizes[0]",
        "must be an integer in [1, 1024]",
    );
    rejects(
        &set("/gpu_types/0", "slot_sizes", json!([1, 2048])),
        "gpu_types[0].slot_sizes[1]",
        "must be an integer in [1, 1024]",
    );
    let mut doc = base();
    doc["gpu_types"][0]["slot_sizes"] = json!([1, -2]);
    rejects(
        &doc.to_string(),
        "gpu_types[0].slot_sizes[1]",
        "invalid value: integer `-2`",
    );
    let text = set("/gpu_types/0", "slot_sizes", json!([1, "@@"])).replace("\"@@\"", TWO_TO_64);
    rejects(
        &text,
        "gpu_types[0].slot_sizes[1]",
        "invalid type: floating point",
    );
}

#[test]
fn slot_sizes_must_be_strictly_ascending() {
    rejects(
        &set("/gpu_types/0", "slot_sizes", json!([2, 1, 4])),
        "gpu_types[0].slot_sizes[1]",
        "strictly ascending",
    );
    rejects(
        &set("/gpu_types/0", "slot_sizes", json!([1, 1, 4])),
        "gpu_types[0].slot_sizes[1]",
        "strictly ascending",
    );
}

#[test]
fn slot_sizes_must_be_a_divisibility_ladder() {
    rejects(
        &set("/gpu_types/1", "slot_sizes", json!([2, 3])),
        "gpu_types[1].slot_sizes[1]",
        "divisibility ladder",
    );
    // 4 and 6 both divide 12 but 4 does not divide 6.
    let mut doc = base();
    doc["gpu_types"][0] =
        json!({ "name": "v100", "count": 1, "units": 12, "slot_sizes": [1, 4, 6] });
    rejects(
        &doc.to_string(),
        "gpu_types[0].slot_sizes[2]",
        "must be a multiple of the size before it (4)",
    );
}

#[test]
fn largest_slot_size_must_divide_units() {
    rejects(
        &set("/gpu_types/1", "slot_sizes", json!([2, 4, 16])),
        "gpu_types[1].slot_sizes[2]",
        "must divide units (8)",
    );
    rejects(
        &set("/gpu_types/1", "slot_sizes", json!([3])),
        "gpu_types[1].slot_sizes[0]",
        "must divide units (8)",
    );
}

#[test]
fn gpu_types_must_list_at_least_one() {
    rejects(
        &set("", "gpu_types", json!([])),
        "gpu_types",
        "at least one",
    );
}

#[test]
fn gpu_type_names_must_be_unique_and_non_empty() {
    rejects(
        &set("/gpu_types/1", "name", json!("v100")),
        "gpu_types[1].name",
        "must be unique",
    );
    rejects(
        &set("/gpu_types/0", "name", json!("")),
        "gpu_types[0].name",
        "must not be empty",
    );
}

#[test]
fn job_ids_must_be_unique_and_non_empty() {
    rejects(
        &set("/jobs/1", "id", json!("a")),
        "jobs[1].id",
        "must be unique",
    );
    rejects(
        &set("/jobs/0", "id", json!("")),
        "jobs[0].id",
        "must not be empty",
    );
}

#[test]
fn weight_must_be_positive_and_finite() {
    for w in [0.0, -0.0, -1.0] {
        rejects(
            &set("/jobs/1", "weight", json!(w)),
            "jobs[1].weight",
            "must be finite and > 0",
        );
    }
    // Too large for f64, and the non-JSON spellings of non-finite numbers.
    rejects(
        &set_literal("/jobs/1", "weight", "1e400"),
        "jobs[1].weight",
        "number out of range",
    );
    rejects(
        &set_literal("/jobs/1", "weight", "-1e400"),
        "jobs[1].weight",
        "number out of range",
    );
    // JSON has no NaN or Infinity (what JavaScript and Python's json.dumps write for them):
    // the message says so rather than serde_json's "expected value".
    rejects(
        &set_literal("/jobs/1", "weight", "NaN"),
        "jobs[1].weight",
        "NaN is not a JSON number (numbers must be finite)",
    );
    rejects(
        &set_literal("/jobs/1", "weight", "Infinity"),
        "jobs[1].weight",
        "Infinity is not a JSON number",
    );
    rejects(
        &set_literal("/jobs/1", "weight", "-Infinity"),
        "jobs[1].weight",
        "-Infinity is not a JSON number",
    );
    rejects(
        &set_literal("/jobs/1", "weight", "\"1\""),
        "jobs[1].weight",
        "invalid type: string",
    );
}

#[test]
fn weights_must_sum_to_a_finite_number() {
    // Each weight is finite, but 1e308 + 1e308 is not: phi_j = w_j / sum would be 0 for all.
    let mut doc = base();
    doc["jobs"][0]["weight"] = json!(1e308);
    doc["jobs"][1]["weight"] = json!(1e308);
    rejects(
        &doc.to_string(),
        "jobs[1].weight",
        "must keep the sum of all job weights finite",
    );
    doc["jobs"][1]["weight"] = json!(7e307);
    Instance::from_json(&doc.to_string()).unwrap();
}

#[test]
fn deficit_must_be_finite() {
    rejects(
        &set_literal("/jobs/0", "deficit", "1e400"),
        "jobs[0].deficit",
        "number out of range",
    );
    rejects(
        &set_literal("/jobs/0", "deficit", "-1e999"),
        "jobs[0].deficit",
        "number out of range",
    );
    rejects(
        &set_literal("/jobs/0", "deficit", "NaN"),
        "jobs[0].deficit",
        "NaN is not a JSON number",
    );
}

#[test]
fn times_gpu_must_name_a_gpu_type() {
    rejects(
        &set("/jobs/0/times/1", "gpu", json!("a100")),
        "jobs[0].times[1].gpu",
        "must name one of gpu_types",
    );
    rejects(
        &set("/jobs/0/times/1", "gpu", json!("V100")),
        "jobs[0].times[1].gpu",
        "must name one of gpu_types",
    );
}

#[test]
fn times_slot_must_be_on_the_types_ladder() {
    // 1 is on v100's ladder but not on k80's.
    rejects(
        &set("/jobs/0/times/1", "slot", json!(1)),
        "jobs[0].times[1].slot",
        "must be one of the slot_sizes of k80 ([2, 4, 8])",
    );
}

#[test]
fn sec_per_iter_must_be_positive_and_finite() {
    for t in [0.0, -0.0, -2.0] {
        rejects(
            &set("/jobs/0/times/1", "sec_per_iter", json!(t)),
            "jobs[0].times[1].sec_per_iter",
            "must be finite and > 0",
        );
    }
    let path = "jobs[0].times[1].sec_per_iter";
    rejects(
        &set_literal("/jobs/0/times/1", "sec_per_iter", "1e400"),
        path,
        "number out of range",
    );
    rejects(
        &set_literal("/jobs/0/times/1", "sec_per_iter", "-Infinity"),
        path,
        "-Infinity is not a JSON number",
    );
    rejects(
        &set_literal("/jobs/0/times/1", "sec_per_iter", "Infinity"),
        path,
        "Infinity is not a JSON number",
    );
    rejects(
        &set_literal("/jobs/0/times/1", "sec_per_iter", "NaN"),
        path,
        "NaN is not a JSON number",
    );
}

#[test]
fn sec_per_iter_whose_reciprocal_overflows_is_rejected() {
    // 5e-324 is the smallest subnormal; 1 / 5e-324 and 1 / 1e-309 are infinite as f64.
    for literal in ["5e-324", "1e-309"] {
        rejects(
            &set_literal("/jobs/0/times/1", "sec_per_iter", literal),
            "jobs[0].times[1].sec_per_iter",
            "must have a finite, non-zero reciprocal",
        );
    }
    // 1e-300 has a finite reciprocal and is accepted.
    Instance::from_json(&set_literal("/jobs/0/times/1", "sec_per_iter", "1e-300")).unwrap();
}

#[test]
fn times_has_at_most_one_entry_per_gpu_and_slot() {
    let mut doc = base();
    doc["jobs"][0]["times"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "gpu": "k80", "slot": 2, "sec_per_iter": 0.7 }));
    rejects(
        &doc.to_string(),
        "jobs[0].times[2]",
        "at most one time per (gpu, slot)",
    );
    // Same slot size on another type is a different option.
    let mut doc = base();
    doc["jobs"][0]["times"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "gpu": "v100", "slot": 2, "sec_per_iter": 0.5 }));
    Instance::from_json(&doc.to_string()).unwrap();
}

#[test]
fn lambda_must_be_in_0_exclusive_to_1() {
    for l in [0.0, -0.5, 1.0000001, 2.0] {
        rejects(
            &set("/fairness", "lambda", json!(l)),
            "fairness.lambda",
            "must be in (0, 1]",
        );
    }
    rejects(
        &set_literal("/fairness", "lambda", "1e400"),
        "fairness.lambda",
        "number out of range",
    );
}

#[test]
fn max_debt_must_be_non_negative_and_finite() {
    rejects(
        &set("/fairness", "max_debt", json!(-0.001)),
        "fairness.max_debt",
        "must be finite and >= 0",
    );
    rejects(
        &set_literal("/fairness", "max_debt", "1e400"),
        "fairness.max_debt",
        "number out of range",
    );
}

#[test]
fn credit_must_be_non_negative_and_finite() {
    rejects(
        &set("/fairness", "credit", json!(-1.0)),
        "fairness.credit",
        "must be finite and >= 0",
    );
    rejects(
        &set_literal("/fairness", "credit", "1e400"),
        "fairness.credit",
        "number out of range",
    );
}

#[test]
fn wrong_json_types_are_rejected_with_their_path() {
    rejects(
        &set("", "name", json!(7)),
        "name",
        "invalid type: integer `7`, expected a string",
    );
    rejects(
        &set("", "gpu_types", json!({})),
        "gpu_types",
        "invalid type: map",
    );
    rejects(
        &set("/jobs/0", "times", json!({})),
        "jobs[0].times",
        "invalid type: map",
    );
    rejects(
        &set("/jobs/0", "id", json!(1)),
        "jobs[0].id",
        "invalid type: integer",
    );
}

// ---- the same rules for instances built in code

#[test]
fn builder_runs_the_same_checks_with_the_same_paths() {
    let gpu = || Instance::builder().gpu_type("v100", 1, 4, &[1, 2, 4]);
    let err = |b: stsfair::InstanceBuilder| match b.build() {
        Err(InstanceError::Rule { path, rule, .. }) => (path, rule),
        other => panic!("expected a rule error, got {other:?}"),
    };
    let (path, rule) = err(gpu().job(JobSpec::new("a").time("v100", 4, f64::NAN)));
    assert_eq!(path, "jobs[0].times[0].sec_per_iter");
    assert!(rule.contains("must be finite and > 0"));
    let (path, _) = err(gpu().job(JobSpec::new("a").time("v100", 4, f64::INFINITY)));
    assert_eq!(path, "jobs[0].times[0].sec_per_iter");
    let (path, rule) = err(gpu().job(JobSpec::new("a").weight(f64::INFINITY)));
    assert_eq!(
        (path.as_str(), rule.as_str()),
        ("jobs[0].weight", "must be finite and > 0")
    );
    let (path, _) = err(gpu().job(JobSpec::new("a").weight(f64::NAN)));
    assert_eq!(path, "jobs[0].weight");
    let (path, rule) = err(gpu().job(JobSpec::new("a").deficit(f64::NEG_INFINITY)));
    assert_eq!(
        (path.as_str(), rule.as_str()),
        ("jobs[0].deficit", "must be finite")
    );
    let (path, _) = err(gpu().job(JobSpec::new("a").deficit(f64::NAN)));
    assert_eq!(path, "jobs[0].deficit");
    let (path, _) = err(gpu().job(JobSpec::new("a").workers(u64::MAX)));
    assert_eq!(path, "jobs[0].workers");
    let (path, _) = err(Instance::builder().gpu_type("v100", u64::MAX, 4, &[4]));
    assert_eq!(path, "gpu_types[0].count");
    let (path, _) = err(Instance::builder());
    assert_eq!(path, "gpu_types");
    let nan = Fairness {
        lambda: f64::NAN,
        ..Fairness::default()
    };
    let (path, _) = err(gpu().fairness(nan));
    assert_eq!(path, "fairness.lambda");
    let inf = Fairness {
        max_debt: f64::INFINITY,
        ..Fairness::default()
    };
    let (path, _) = err(gpu().fairness(inf));
    assert_eq!(path, "fairness.max_debt");
    let inf = Fairness {
        credit: f64::INFINITY,
        ..Fairness::default()
    };
    let (path, _) = err(gpu().fairness(inf));
    assert_eq!(path, "fairness.credit");
}

#[test]
fn with_fairness_and_with_deficits_validate() {
    let instance = Instance::from_json(&base().to_string()).unwrap();
    let bad = Fairness {
        lambda: 0.0,
        ..Fairness::default()
    };
    assert!(
        matches!(instance.with_fairness(bad), Err(InstanceError::Rule { path, .. }) if path == "fairness.lambda")
    );
    assert!(
        matches!(instance.with_deficits(&[1.0]), Err(InstanceError::Rule { path, .. }) if path == "jobs")
    );
    assert!(
        matches!(instance.with_deficits(&[1.0, f64::NAN]), Err(InstanceError::Rule { path, .. }) if path == "jobs[1].deficit")
    );
    let moved = instance.with_deficits(&[2.5, -1.0]).unwrap();
    assert_eq!(moved.jobs()[0].deficit(), 2.5);
    assert_eq!(moved.jobs()[1].deficit(), -1.0);
}

#[test]
fn unreadable_file_is_an_io_error_naming_it() {
    let missing = std::env::temp_dir().join("stsfair-format-rules-no-such-file.json");
    match Instance::from_path(&missing) {
        Err(e @ InstanceError::Io { .. }) => assert!(
            e.to_string()
                .contains("stsfair-format-rules-no-such-file.json")
        ),
        other => panic!("expected an io error, got {other:?}"),
    }
}

// ---- accepting side

#[test]
fn defaults_are_applied() {
    let doc = json!({
        "format": "stsfair/1",
        "gpu_types": [ { "name": "v100", "count": 1, "units": 4, "slot_sizes": [4] } ],
        "jobs": [ { "id": "a", "times": [ { "gpu": "v100", "slot": 4, "sec_per_iter": 0.5 } ] } ]
    });
    let instance = Instance::from_json(&doc.to_string()).unwrap();
    assert_eq!(instance.name(), None);
    assert_eq!(
        instance.fairness(),
        Fairness {
            lambda: 1.0,
            max_debt: 1.0,
            credit: 1.0
        }
    );
    let job = &instance.jobs()[0];
    assert_eq!((job.weight(), job.workers(), job.deficit()), (1.0, 1, 0.0));

    // Each fairness field defaults on its own.
    let partial = set("", "fairness", json!({ "lambda": 0.5 }));
    let f = Instance::from_json(&partial).unwrap().fairness();
    assert_eq!(
        f,
        Fairness {
            lambda: 0.5,
            max_debt: 1.0,
            credit: 1.0
        }
    );
    let partial = set("", "fairness", json!({ "credit": 0.0 }));
    let f = Instance::from_json(&partial).unwrap().fairness();
    assert_eq!(
        f,
        Fairness {
            lambda: 1.0,
            max_debt: 1.0,
            credit: 0.0
        }
    );
    let f = Instance::from_json(&set("", "fairness", json!({})))
        .unwrap()
        .fairness();
    assert_eq!(f, Fairness::default());
}

#[test]
fn empty_jobs_are_accepted() {
    let instance = Instance::from_json(&set("", "jobs", json!([]))).unwrap();
    assert!(instance.jobs().is_empty());
    assert!(RoundProblem::new(&instance).jobs.is_empty());
}

#[test]
fn empty_times_give_an_unbounded_idle_job() {
    let instance = Instance::from_json(&set("/jobs/1", "times", json!([]))).unwrap();
    let job = &instance.jobs()[1];
    assert!(job.times().is_empty() && job.options().is_empty());
    // A large deficit does not force a job with no bound.
    let instance = instance.with_deficits(&[0.0, 50.0]).unwrap();
    let round = &RoundProblem::new(&instance).jobs[1];
    assert_eq!(round.fair_rate, 0.0);
    assert_eq!(round.class, JobClass::Unbounded);
    assert!(round.may_idle() && round.options.is_empty());
}

#[test]
fn boundary_values_are_accepted() {
    let mut doc = base();
    doc["gpu_types"][0] =
        json!({ "name": "v100", "count": 1000000, "units": 1024, "slot_sizes": [1, 1024] });
    doc["gpu_types"][1]["count"] = json!(0);
    doc["jobs"][0]["workers"] = json!(1024);
    doc["jobs"][0]["deficit"] = json!(-1e300);
    doc["jobs"][1]["weight"] = json!(1e300);
    doc["fairness"] = json!({ "lambda": 1.0, "max_debt": 0.0, "credit": 0.0 });
    doc["jobs"][0]["times"] = json!([ { "gpu": "v100", "slot": 1024, "sec_per_iter": 1e300 } ]);
    doc["jobs"][1]["times"] = json!([ { "gpu": "v100", "slot": 1, "sec_per_iter": 1e-300 } ]);
    let instance = Instance::from_json(&doc.to_string()).unwrap();
    assert_eq!(instance.gpu_types()[0].capacity(), 1_024_000_000);
    assert_eq!(instance.gpu_types()[1].capacity(), 0);
    assert_eq!(instance.jobs()[0].options()[0].units, 1024 * 1024);
}

#[test]
fn options_that_can_never_fit_are_dropped_but_kept_in_the_file() {
    // One v100 of 4 units: a 2-worker job fits in 2-unit slots (4 units) but not in whole GPUs
    // (2 * 4 = 8 > C = 4). A 0-GPU k80 type fits nothing.
    let doc = json!({
        "format": "stsfair/1",
        "name": "never-fit",
        "gpu_types": [
            { "name": "v100", "count": 1, "units": 4, "slot_sizes": [1, 2, 4] },
            { "name": "k80", "count": 0, "units": 4, "slot_sizes": [4] }
        ],
        "jobs": [ { "id": "pair", "workers": 2, "times": [
            { "gpu": "v100", "slot": 4, "sec_per_iter": 0.2 },
            { "gpu": "v100", "slot": 2, "sec_per_iter": 0.5 },
            { "gpu": "k80", "slot": 4, "sec_per_iter": 0.1 }
        ] } ]
    });
    let instance = Instance::from_json(&doc.to_string()).unwrap();
    let job = &instance.jobs()[0];
    assert_eq!(job.times().len(), 3);
    assert_eq!(job.options().len(), 1);
    assert_eq!(
        (
            job.options()[0].gpu,
            job.options()[0].slot,
            job.options()[0].units
        ),
        (0, 2, 4)
    );
    // The dropped whole-GPU entries count nowhere: no whole-GPU option fits, so F = 0.
    let round = &RoundProblem::new(&instance).jobs[0];
    assert_eq!(round.fair_rate, 0.0);
    assert_eq!(round.max_throughput, 2.0);

    let written = instance.to_json();
    let reread: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(reread["jobs"][0]["times"].as_array().unwrap().len(), 3);
    assert_eq!(
        reread["jobs"][0]["times"][2],
        json!({ "gpu": "k80", "slot": 4, "sec_per_iter": 0.1 })
    );
    assert_eq!(Instance::from_json(&written).unwrap(), instance);
}

#[test]
fn to_json_round_trips_and_writes_defaults_out() {
    let instance = Instance::from_json(&base().to_string()).unwrap();
    let written = instance.to_json();
    assert_eq!(Instance::from_json(&written).unwrap(), instance);
    let reread: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(reread["jobs"][1]["weight"], json!(1.0));
    assert_eq!(reread["jobs"][1]["workers"], json!(1));
    assert_eq!(reread["fairness"]["credit"], json!(1.0));
    // An unnamed instance stays unnamed (no `"name": null`, which the reader would refuse).
    let unnamed = Instance::from_json(&remove("", "name")).unwrap();
    assert_eq!(Instance::from_json(&unnamed.to_json()).unwrap(), unnamed);
}

/// The size limit holds for what is not a regular file too: a device or a pipe is read one byte
/// past the limit and refused, never read to the end (`validate /dev/zero` would read until
/// memory runs out).
#[cfg(unix)]
#[test]
fn inputs_that_are_not_regular_files_are_read_up_to_the_limit() {
    use std::path::Path;
    let err = stsfair::instance::read_text_limited(Path::new("/dev/zero"), 1000).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert_eq!(
        err.to_string(),
        "input goes on, more than the limit of 1000 bytes"
    );
    // Under the limit a device's text is read whole: /dev/null is empty.
    assert_eq!(
        stsfair::instance::read_text_limited(Path::new("/dev/null"), 1000).unwrap(),
        ""
    );
    // A regular file over the limit is refused by its size, before it is read.
    let file = std::env::temp_dir().join(format!("stsfair-limit-{}.json", std::process::id()));
    std::fs::write(&file, "x".repeat(1001)).unwrap();
    let err = stsfair::instance::read_text_limited(&file, 1000).unwrap_err();
    assert_eq!(
        err.to_string(),
        "file is 1001 bytes, more than the limit of 1000 bytes"
    );
    assert_eq!(
        stsfair::instance::read_text_limited(&file, 1001)
            .unwrap()
            .len(),
        1001
    );
    std::fs::remove_file(&file).unwrap();
}
