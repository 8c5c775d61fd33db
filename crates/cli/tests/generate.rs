//! Instance generation: determinism (same seed, same bytes), validity and round trips of every
//! generated instance, the Gavel slot-time derivation, and the shipped generated instances
//! (each one is regenerated from the command line recorded in instances/README.md).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use stsfair::formulation::{JobClass, RoundProblem};
use stsfair::{Fairness, Instance};
use stsfair_costs::gavel::GavelThroughputs;
use stsfair_costs::generate::{self, GenConfig, GpuSpec, MultiMix};
use stsfair_costs::slots::SlotRule;
use stsfair_costs::{JobType, ThroughputModel};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `stsfair` binary run with `args` from the repository's root.
fn stsfair(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stsfair"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

fn gavel() -> GavelThroughputs {
    GavelThroughputs::bundled()
}

fn gpus(names: &[&str], count: u64, units: u32, ladder: &[u32]) -> Vec<GpuSpec> {
    names
        .iter()
        .map(|n| GpuSpec {
            name: n.to_string(),
            count,
            units,
            ladder: ladder.to_vec(),
        })
        .collect()
}

/// The default configuration with `jobs` jobs on `gpus` (`GenConfig` is `#[non_exhaustive]`:
/// built from its default, then set field by field).
fn configured(jobs: usize, gpus: Vec<GpuSpec>) -> GenConfig {
    let mut config = GenConfig::default();
    config.jobs = jobs;
    config.gpus = gpus;
    config
}

/// A spread of configurations: 1 to 4 types, several ladders, multi-worker jobs, other fairness.
fn configs() -> Vec<GenConfig> {
    let mut out = Vec::new();
    for (i, (names, units, ladder)) in [
        (&["g1"][..], 4, &[1, 2, 4][..]),
        (&["g1", "g2"][..], 8, &[2, 4, 8][..]),
        (&["g1", "g2", "g3"][..], 6, &[1, 3][..]),
        (&["g1", "g2", "g3", "g4"][..], 4, &[4][..]),
    ]
    .into_iter()
    .enumerate()
    {
        let mut config = configured(30 + 10 * i, gpus(names, 3 + i as u64, units, ladder));
        config.name = Some(format!("cfg-{i}"));
        config.seed = 11 * i as u64;
        config.multi = i % 2 == 1;
        if i == 2 {
            config.weights = vec![1.0, 2.0, 4.0];
        }
        if i == 3 {
            config.fairness = Fairness {
                lambda: 0.5,
                max_debt: 0.0,
                credit: 2.0,
            };
        }
        out.push(config);
    }
    out
}

fn round_trips(instance: &Instance) {
    let text = instance.to_json();
    let back = Instance::from_json(&text).unwrap();
    assert_eq!(&back, instance);
    assert_eq!(back.to_json(), text);
}

#[test]
fn synthetic_same_seed_same_bytes_and_round_trips() {
    for config in configs() {
        let a = generate::synthetic(&config).unwrap();
        let b = generate::synthetic(&config).unwrap();
        assert_eq!(a.to_json(), b.to_json());
        let mut reseeded = config.clone();
        reseeded.seed += 1;
        let c = generate::synthetic(&reseeded).unwrap();
        assert_ne!(a.to_json(), c.to_json());
        assert_eq!(a.jobs().len(), config.jobs);
        assert!(
            a.jobs().iter().all(|j| !j.times().is_empty()),
            "every job keeps at least one type"
        );
        round_trips(&a);
    }
}

#[test]
fn gavel_same_seed_same_bytes_and_round_trips() {
    let data = gavel();
    for multi in [false, true] {
        let mut config = configured(200, gpus(&["v100", "p100", "k80"], 8, 4, &[1, 2, 4]));
        config.seed = 5;
        config.multi = multi;
        let a = generate::from_measurements(data.inputs(), &config).unwrap();
        let b = generate::from_measurements(data.inputs(), &config).unwrap();
        assert_eq!(a.to_json(), b.to_json());
        round_trips(&a);
        let distributed = a.jobs().iter().filter(|j| j.workers() > 1).count();
        assert_eq!(distributed > 0, multi);
    }
}

#[test]
fn forced_jobs_are_the_requested_fraction() {
    let data = gavel();
    for jobs in [10, 95, 300] {
        let config = configured(jobs, gpus(&["v100", "k80"], 4, 4, &[1, 2, 4]));
        for inst in [
            generate::from_measurements(data.inputs(), &config).unwrap(),
            generate::synthetic(&config).unwrap(),
        ] {
            let problem = RoundProblem::new(&inst);
            let forced = problem
                .jobs
                .iter()
                .filter(|j| matches!(j.class, JobClass::Forced { .. }))
                .count();
            assert_eq!(forced, (0.1 * jobs as f64).round() as usize);
            // At the defaults (lambda = max_debt = 1), forced exactly when D_j > 0.
            for (j, rj) in inst.jobs().iter().zip(&problem.jobs) {
                assert_eq!(
                    j.deficit() > 0.0,
                    matches!(rj.class, JobClass::Forced { .. }),
                    "{}",
                    j.id()
                );
            }
        }
    }
}

/// Slot times follow docs/costs.md: tau(U) = 1/solo, tau(U/2) = 1/median of the measured
/// co-located throughputs, the composition rule below (three typical co-runners in a quarter), nothing where a job has no solo entry, only
/// whole GPUs for distributed jobs; and the times fall as slots grow.
#[test]
fn gavel_slot_times_follow_the_documented_derivation() {
    let data = gavel();
    let inputs = data.inputs();
    let mut config = configured(400, gpus(&["v100", "p100", "k80"], 8, 4, &[1, 2, 4]));
    config.multi = true;
    config.seed = 9;
    let inst = generate::from_measurements(inputs, &config).unwrap();
    let rel = |a: f64, b: f64| ((a - b) / b).abs();
    for job in inst.jobs() {
        // The id ends with the job type's slug.
        let jt: &JobType = inputs
            .job_types()
            .iter()
            .find(|t| job.id().ends_with(&format!("-{}", t.slug())))
            .unwrap();
        let j = inputs.job_index(jt).unwrap();
        assert_eq!(job.workers(), jt.scale_factor);
        for (k, name) in ["v100", "p100", "k80"].iter().enumerate() {
            let g = inputs.gpu_index(name).unwrap();
            let times: Vec<(u32, f64)> = job
                .times()
                .iter()
                .filter(|t| t.gpu == k)
                .map(|t| (t.slot, t.sec_per_iter))
                .collect();
            let Some(solo) = inputs.solo(g, j) else {
                assert!(times.is_empty(), "{} has no solo entry on {name}", job.id());
                continue;
            };
            let whole = times.iter().find(|t| t.0 == 4).unwrap().1;
            assert!(rel(whole, 1.0 / solo) < 1e-5);
            if jt.scale_factor > 1 {
                assert_eq!(times.len(), 1, "distributed jobs only get whole GPUs");
                continue;
            }
            let Some(typical) = inputs.typical_shared_throughput(g, j) else {
                assert_eq!(
                    times.len(),
                    1,
                    "{}: no co-runner fits beside it on {name}: whole GPUs only",
                    job.id()
                );
                continue;
            };
            let half = times.iter().find(|t| t.0 == 2).unwrap().1;
            assert!(rel(half, 1.0 / typical) < 1e-5);
            let quarter = times.iter().find(|t| t.0 == 1).unwrap().1;
            // Composition: a quarter GPU has three typical co-runners, each costing
            // r = theta(2) / theta(4): theta(1) = solo * r^3 = theta(2)^3 / theta(4)^2.
            let expected = if typical < solo {
                solo * solo / (typical * typical * typical)
            } else {
                1.0 / solo
            };
            assert!(
                rel(quarter, expected) < 1e-4,
                "{}: {quarter} vs {expected}",
                job.id()
            );
            assert!(quarter >= half && half >= whole);
        }
    }
}

/// The power law (kept for comparison) differs from the composition rule only in slots below half
/// a GPU: same jobs, same whole and half times, and a quarter GPU faster by the factor 1 / r.
#[test]
fn slot_rules_differ_only_below_half_a_gpu() {
    let data = gavel();
    let mut config = configured(200, gpus(&["v100", "p100", "k80"], 8, 4, &[1, 2, 4]));
    config.seed = 3;
    let composition = generate::from_measurements(data.inputs(), &config).unwrap();
    config.slot_rule = SlotRule::PowerLaw;
    let power = generate::from_measurements(data.inputs(), &config).unwrap();
    let mut faster = 0;
    for (c, p) in composition.jobs().iter().zip(power.jobs()) {
        assert_eq!(c.id(), p.id());
        for (tc, tp) in c.times().iter().zip(p.times()) {
            assert_eq!((tc.gpu, tc.slot), (tp.gpu, tp.slot));
            if tc.slot >= 2 {
                assert_eq!(tc.sec_per_iter, tp.sec_per_iter);
            } else {
                let half = c
                    .times()
                    .iter()
                    .find(|t| t.gpu == tc.gpu && t.slot == 2)
                    .unwrap();
                let whole = c
                    .times()
                    .iter()
                    .find(|t| t.gpu == tc.gpu && t.slot == 4)
                    .unwrap();
                // tau(1) / tau_power(1) = 1 / r = tau(2) / tau(4), to the 6 digits written.
                let ratio = tc.sec_per_iter / tp.sec_per_iter;
                let expected = half.sec_per_iter / whole.sec_per_iter;
                assert!(
                    (ratio / expected - 1.0).abs() < 1e-4,
                    "{}: {ratio} vs {expected}",
                    c.id()
                );
                faster += usize::from(ratio > 1.0 + 1e-4);
            }
        }
    }
    assert!(
        faster > 100,
        "the power law promised more in only {faster} quarter slots"
    );
}

/// With `multi`, scale factors follow Gavel's mix (0.70/0.10/0.15/0.05) by default, and the
/// earlier uniform draw over the 83 job types gives mostly distributed jobs.
#[test]
fn gavel_multi_draws_gavels_scale_factor_mix() {
    let data = gavel();
    let mut config = configured(4000, gpus(&["v100", "p100", "k80"], 8, 4, &[1, 2, 4]));
    config.multi = true;
    config.seed = 5;
    let share = |inst: &Instance, w: u32| {
        inst.jobs().iter().filter(|j| j.workers() == w).count() as f64 / inst.jobs().len() as f64
    };
    let gavel_mix = generate::from_measurements(data.inputs(), &config).unwrap();
    for (w, p) in [(1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05)] {
        let got = share(&gavel_mix, w);
        // 4,000 draws: the standard error is below 0.0073.
        assert!((got - p).abs() < 0.03, "{w} workers: {got} vs {p}");
    }
    config.multi_mix = MultiMix::Uniform;
    let uniform = generate::from_measurements(data.inputs(), &config).unwrap();
    assert!(share(&uniform, 1) < 0.45, "{}", share(&uniform, 1));
}

#[test]
fn unknown_gavel_type_and_bad_parameters_are_errors() {
    let data = gavel();
    let config = configured(3, gpus(&["a100"], 1, 4, &[1, 2, 4]));
    let err = generate::from_measurements(data.inputs(), &config).unwrap_err();
    assert!(
        err.to_string()
            .contains("gpu type \"a100\" is not in the measurements"),
        "{err}"
    );
    let config = configured(3, gpus(&["g"], 1, 4, &[1, 3]));
    let err = generate::synthetic(&config).unwrap_err();
    assert!(err.to_string().contains("slot_sizes"), "{err}");
    let config = configured(3, Vec::new());
    assert!(generate::synthetic(&config).is_err());
    // At most MAX_TYPES GPU types, from the library and from the command (whose --types is
    // refused before it makes the names).
    let names: Vec<String> = (1..=65).map(|k| format!("gpu{k}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let err = generate::synthetic(&configured(3, gpus(&refs, 1, 4, &[1, 2, 4]))).unwrap_err();
    assert!(err.to_string().contains("at most 64 gpu types"), "{err}");
    assert!(generate::synthetic(&configured(3, gpus(&refs[..64], 1, 4, &[1, 2, 4]))).is_ok());
    for types in ["0", "65", "1000000000000"] {
        let out = stsfair(&["gen", "--types", types]);
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--types must be between 1 and 64"), "{err}");
    }
}

/// `gen` without `--name` names the instance by its kind, shape, jobs and seed, so that
/// rounds of different seeds are told apart in `bench` and `rounds` tables; `--name` wins.
#[test]
fn default_name_carries_the_seed() {
    let name_of = |extra: &[&str]| -> String {
        let out = stsfair(&[&["gen", "--jobs", "5"], extra].concat());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        Instance::from_json(&text)
            .unwrap()
            .name()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        name_of(&["--gavel", "--count", "3", "--seed", "7"]),
        "gavel-3x3-5-s7"
    );
    assert_eq!(name_of(&["--gavel", "--count", "3"]), "gavel-3x3-5-s0");
    assert_eq!(
        name_of(&["--types", "2", "--count", "4,6", "--seed", "2"]),
        "synth-2types-5-s2"
    );
    assert_eq!(name_of(&["--seed", "7", "--name", "mine"]), "mine");
}

/// Every `stsfair gen ... --out instances/NAME.json` line of instances/README.md, run again,
/// writes exactly the shipped file; and every shipped generated file is listed there.
#[test]
fn shipped_generated_instances_match_their_recorded_commands() {
    let readme = std::fs::read_to_string(root().join("instances/README.md")).unwrap();
    let section = readme
        .split("## Generated instances")
        .nth(1)
        .expect("instances/README.md has a Generated instances section");
    let dir = std::env::temp_dir().join(format!("stsfair-gen-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut checked = Vec::new();
    for line in section
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("stsfair gen ") && l.contains(" --out "))
    {
        let args: Vec<&str> = line.split_whitespace().skip(1).collect();
        let out_at = args.iter().position(|a| *a == "--out").unwrap();
        let shipped = args[out_at + 1];
        let name = Path::new(shipped).file_name().unwrap().to_owned();
        let fresh = dir.join(&name);
        let mut cmd_args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        cmd_args[out_at + 1] = fresh.display().to_string();
        let cmd_args: Vec<&str> = cmd_args.iter().map(String::as_str).collect();
        let status = stsfair(&cmd_args);
        assert!(
            status.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&status.stderr)
        );
        let want = std::fs::read(root().join(shipped)).unwrap();
        let got = std::fs::read(&fresh).unwrap();
        assert!(
            want == got,
            "{shipped} differs from the output of its recorded command"
        );
        Instance::from_json(std::str::from_utf8(&got).unwrap()).unwrap();
        checked.push(name.to_string_lossy().into_owned());
    }
    std::fs::remove_dir_all(&dir).ok();
    for entry in std::fs::read_dir(root().join("instances")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if (name.starts_with("gavel-") || name.starts_with("synth-")) && name.ends_with(".json") {
            assert!(
                checked.contains(&name),
                "{name} has no recorded command in instances/README.md"
            );
        }
    }
    assert!(!checked.is_empty());
}
