//! The vendored MIG data (`data/miso-mig/`, provenance in its SOURCE.txt) checked against its
//! own rules: MISO's measured latencies are positive and a job that fits a MIG instance fits
//! every instance with more memory; the layouts of `mig_profiles.json` are exactly the maximal
//! placements of its profiles' start positions, derived here again by brute force; MISO's
//! layouts are among them.

use std::collections::BTreeSet;

use serde_json::Value;
use stsfair_costs::mig::MigGpu;

const LATENCY: &str = include_str!("../data/miso-mig/a100_mig_latency.json");
const PROFILES: &str = include_str!("../data/miso-mig/mig_profiles.json");
const MISO_LAYOUTS: &str = include_str!("../data/miso-mig/a100_layouts_miso.json");

fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("vendored JSON parses")
}

fn sorted(slices: impl IntoIterator<Item = u64>) -> Vec<u64> {
    let mut v: Vec<u64> = slices.into_iter().collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v
}

fn numbers(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_u64().expect("a count"))
        .collect()
}

/// A100-40GB instances by memory: 1g.5gb < 2g.10gb < 3g.20gb = 4g.20gb < 7g.40gb.
#[test]
fn latencies_are_positive_and_fit_is_monotone_in_memory() {
    let doc = parse(LATENCY);
    let jobs = doc["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 32, "8 models x 4 batch sizes");
    let memory = [
        ("1g.5gb", 5),
        ("2g.10gb", 10),
        ("3g.20gb", 20),
        ("4g.20gb", 20),
        ("7g.40gb", 40),
    ];
    let mut fits = [0usize; 5];
    for job in jobs {
        let latency = job["latency"].as_object().expect("latency");
        for (i, (profile, gb)) in memory.iter().enumerate() {
            let Some(t) = latency.get(*profile) else {
                // Not measured: the job does not fit; nor may it fit any smaller instance.
                for (other, other_gb) in &memory {
                    if other_gb < gb {
                        assert!(
                            latency.get(*other).is_none(),
                            "{job}: fits {other} but not {profile}"
                        );
                    }
                }
                continue;
            };
            let t = t.as_f64().expect("seconds");
            assert!(t.is_finite() && t > 0.0 && t < 10.0, "{job}: {profile} {t}");
            fits[i] += 1;
        }
    }
    assert_eq!(fits, [21, 28, 32, 32, 32]);
}

/// Each placement of a profile of `gpu` whose starts are sourced (only the base profiles, one
/// per compute size, with `base_only`): its compute slices and its memory slices as a bit mask.
/// A placement past the last memory slice fits in no set and is left out.
fn placements(gpu: &Value, base_only: bool) -> Vec<(u64, u64)> {
    let memory_slices = gpu["memory_slices"].as_u64().expect("memory slices");
    gpu["profiles"]
        .as_array()
        .expect("profiles")
        .iter()
        .filter(|p| !base_only || p["base"].as_bool() == Some(true))
        .filter(|p| !p["starts"].is_null())
        .flat_map(|p| {
            let compute = p["compute"].as_u64().expect("compute");
            let memory = p["memory"].as_u64().expect("memory");
            numbers(&p["starts"])
                .into_iter()
                .filter(move |&start| start + memory <= memory_slices)
                .map(move |start| (compute, ((1u64 << memory) - 1) << start))
        })
        .collect()
}

/// Every set of base instances whose memory ranges [start, start + memory) do not overlap,
/// as multisets of compute slices: all of them, and those of the maximal sets.
fn derive_layouts(gpu: &Value) -> (BTreeSet<Vec<u64>>, BTreeSet<Vec<u64>>) {
    let slots = placements(gpu, true);
    let mut all = BTreeSet::new();
    let mut maximal = BTreeSet::new();
    for set in 1u32..(1 << slots.len()) {
        let chosen: Vec<(u64, u64)> = (0..slots.len())
            .filter(|i| set & (1 << i) != 0)
            .map(|i| slots[i])
            .collect();
        let mut used = 0u64;
        let disjoint = chosen.iter().all(|&(_, mask)| {
            let free = used & mask == 0;
            used |= mask;
            free
        });
        if !disjoint {
            continue;
        }
        let layout = sorted(chosen.iter().map(|&(compute, _)| compute));
        assert!(
            layout.iter().sum::<u64>() <= 7,
            "{layout:?} over 7 compute slices"
        );
        all.insert(layout.clone());
        if slots.iter().all(|&(_, mask)| used & mask != 0) {
            maximal.insert(layout);
        }
    }
    (all, maximal)
}

/// The multisets of compute slices listed under `field` of a GPU.
fn listed(gpu: &Value, field: &str) -> BTreeSet<Vec<u64>> {
    gpu[field]
        .as_array()
        .expect(field)
        .iter()
        .map(|l| sorted(numbers(l)))
        .collect()
}

#[test]
fn layouts_are_the_maximal_placements_of_the_profiles() {
    let doc = parse(PROFILES);
    let mut derived = 0;
    for gpu in doc["gpus"].as_array().expect("gpus") {
        if gpu["layouts"].is_null() {
            // Start positions not sourced (SOURCE.txt): no layouts are claimed.
            assert!(
                gpu["profiles"]
                    .as_array()
                    .expect("profiles")
                    .iter()
                    .all(|p| p["starts"].is_null())
            );
            continue;
        }
        let (all, maximal) = derive_layouts(gpu);
        let layouts = listed(gpu, "layouts");
        assert_eq!(layouts, maximal, "{}", gpu["gpu"]);
        assert_eq!(listed(gpu, "layouts_all"), all, "{}", gpu["gpu"]);
        assert!(layouts.contains(&vec![4, 3]), "4g+3g is a placement");
        derived += 1;
    }
    assert_eq!(
        derived, 3,
        "A100-40GB, A100-80GB and H100 have sourced placements"
    );
}

#[test]
fn miso_layouts_are_valid_placements() {
    let profiles = parse(PROFILES);
    let a100 = &profiles["gpus"][0];
    assert_eq!(a100["gpu"], "a100-40gb");
    let (all, _) = derive_layouts(a100);
    let miso = parse(MISO_LAYOUTS);
    let layouts = miso["layouts"].as_array().expect("layouts");
    assert_eq!(layouts.len(), 18);
    for layout in layouts {
        let slices = sorted(numbers(&layout["slices"]));
        assert!(
            all.contains(&slices),
            "MISO's {slices:?} is not a placement"
        );
    }
}

/// Every multiset of `sizes` whose sum is at most `total`, sorted largest first.
fn multisets(sizes: &[u64], total: u64) -> Vec<Vec<u64>> {
    let Some((&first, rest)) = sizes.split_first() else {
        return vec![Vec::new()];
    };
    let mut out = Vec::new();
    for copies in 0..=total / first {
        for tail in multisets(rest, total - copies * first) {
            let mut m = vec![first; copies as usize];
            m.extend(tail);
            out.push(sorted(m));
        }
    }
    out
}

/// The library's placement search (`MigGpu::place`, `MigGpu::layouts`) against the brute
/// force above: a multiset of sizes is placeable exactly when some set of disjoint placements
/// has it, and the maximal layouts are the same.
#[test]
fn the_library_places_exactly_the_brute_force_layouts() {
    let doc = parse(PROFILES);
    let mut checked = 0;
    for gpu in doc["gpus"].as_array().expect("gpus") {
        if gpu["layouts"].is_null() {
            continue;
        }
        let name = gpu["gpu"].as_str().expect("name");
        let model = MigGpu::vendored(name).expect("sourced");
        let (all, maximal) = derive_layouts(gpu);
        let library: BTreeSet<Vec<u64>> = model
            .layouts()
            .into_iter()
            .map(|l| l.into_iter().map(u64::from).collect())
            .collect();
        assert_eq!(library, maximal, "{name}");
        let sizes: Vec<u64> = model.sizes().into_iter().map(u64::from).collect();
        for m in multisets(&sizes, 7).into_iter().filter(|m| !m.is_empty()) {
            let layout: Vec<u32> = m.iter().map(|&s| s as u32).collect();
            let placed = model.place(&layout);
            assert_eq!(placed.is_ok(), all.contains(&m), "{name} {m:?}: {placed:?}");
            if let Ok(slots) = placed {
                let mut used = 0u64;
                for slot in &slots {
                    let mask = ((1u64 << slot.memory) - 1) << slot.start;
                    assert_eq!(used & mask, 0, "{name} {m:?}: overlap");
                    used |= mask;
                }
                assert_eq!(sorted(slots.iter().map(|s| u64::from(s.compute))), m);
            }
            checked += 1;
        }
    }
    assert_eq!(
        checked,
        3 * 38,
        "38 multisets of 1, 2, 3, 4, 7 summing to 1-7, per model"
    );
}

/// Every multiset of compute sizes of a set of disjoint placements, over every profile of `gpu`
/// whose starts are sourced (the `+me` and 1g.10gb ones too), by a depth-first search.
fn layouts_over_all_profiles(gpu: &Value) -> BTreeSet<Vec<u64>> {
    let every = placements(gpu, false);
    fn go(
        placements: &[(u64, u64)],
        from: usize,
        used: u64,
        chosen: &mut Vec<u64>,
        out: &mut BTreeSet<Vec<u64>>,
    ) {
        if !chosen.is_empty() {
            out.insert(sorted(chosen.iter().copied()));
        }
        for i in from..placements.len() {
            let (compute, mask) = placements[i];
            if used & mask == 0 {
                chosen.push(compute);
                go(placements, i + 1, used | mask, chosen, out);
                chosen.pop();
            }
        }
    }
    let mut out = BTreeSet::new();
    go(&every, 0, 0, &mut Vec::new(), &mut out);
    out
}

/// The other profiles of a compute size (`+me`, 1g.10gb) take at least the base profile's
/// memory, so they add no multiset of sizes: the base profiles decide the layouts, as the data
/// and `MigGpu` assume.
#[test]
fn the_base_profiles_decide_the_layouts() {
    let doc = parse(PROFILES);
    for gpu in doc["gpus"].as_array().expect("gpus") {
        if gpu["layouts"].is_null() {
            continue;
        }
        let (all, _) = derive_layouts(gpu);
        assert_eq!(layouts_over_all_profiles(gpu), all, "{}", gpu["gpu"]);
        let placements = gpu["maximal_placements"]
            .as_array()
            .expect("maximal placements");
        assert_eq!(
            placements.len(),
            19,
            "{}: maximal placement sets",
            gpu["gpu"]
        );
    }
}
