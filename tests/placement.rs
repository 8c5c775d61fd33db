//! Placement: the packing lemma of MODEL.md section 1 and the validity of every placement,
//! checked on random clusters, requests, co-location models and previous placements.

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use stsfair::placement::{
    CoLocation, NoInterference, Placement, SlotRequest, first_fit_decreasing, place,
};
use stsfair::{GpuType, Instance};

/// Divisibility ladders with their units per GPU.
const LADDERS: &[(u32, &[u32])] = &[
    (4, &[1, 2, 4]),
    (8, &[2, 4, 8]),
    (8, &[1, 2, 4, 8]),
    (6, &[1, 3]),
    (7, &[1]),
    (12, &[3, 6]),
];

/// A multiset of ladder sizes whose sum is at most count * units: sizes are drawn, and each one
/// that would overflow is dropped.
fn fill(ladder: &[u32], count: u32, units: u32, picks: &[usize]) -> Vec<u32> {
    let cap = count * units;
    let mut total = 0;
    let mut out = Vec::new();
    for &p in picks {
        let s = ladder[p % ladder.len()];
        if total + s <= cap {
            total += s;
            out.push(s);
        }
    }
    out
}

/// Every slot inside its GPU, aligned to its size, and no two slots of a GPU overlapping.
fn check_gpu_layout(slots: &[(u32, u32)], units: u32) {
    let mut taken = vec![false; units as usize];
    for &(offset, size) in slots {
        assert_eq!(
            offset % size,
            0,
            "slot of {size} at offset {offset} is not aligned"
        );
        assert!(
            offset + size <= units,
            "slot [{offset}, {}) past {units} units",
            offset + size
        );
        for u in offset..offset + size {
            assert!(!taken[u as usize], "unit {u} used twice");
            taken[u as usize] = true;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The packing lemma: any multiset of ladder slots whose units sum to at most n * U packs by
    /// first-fit decreasing, into aligned, non-overlapping slots.
    #[test]
    fn ladder_slots_within_capacity_always_pack_by_ffd(
        ladder in 0..LADDERS.len(),
        count in 0u32..8,
        picks in proptest::collection::vec(0usize..16, 0..80),
    ) {
        let (units, sizes) = LADDERS[ladder];
        let slots = fill(sizes, count, units, &picks);
        let placed = first_fit_decreasing(&slots, count, units);
        prop_assert!(placed.is_some(), "{slots:?} on {count} x {units} did not pack");
        let placed = placed.unwrap_or_default();
        let mut per_gpu: BTreeMap<u32, Vec<(u32, u32)>> = BTreeMap::new();
        for (&(g, off), &s) in placed.iter().zip(&slots) {
            prop_assert!(g < count);
            per_gpu.entry(g).or_default().push((off, s));
        }
        for slots in per_gpu.values() {
            check_gpu_layout(slots, units);
        }
    }
}

fn cluster(types: &[(usize, u32)]) -> Vec<GpuType> {
    let mut b = Instance::builder();
    for (k, &(ladder, count)) in types.iter().enumerate() {
        let (units, sizes) = LADDERS[ladder];
        let sizes: Vec<u64> = sizes.iter().map(|&s| u64::from(s)).collect();
        b = b.gpu_type(format!("g{k}"), u64::from(count), u64::from(units), &sizes);
    }
    b.build().unwrap().gpu_types().to_vec()
}

/// Requests within capacity: each drawn (type, rung, workers) is kept if its type still has room.
fn requests(types: &[GpuType], draws: &[(usize, usize, u32)], tag: &str) -> Vec<SlotRequest> {
    let mut left: Vec<u64> = types.iter().map(GpuType::capacity).collect();
    let mut out = Vec::new();
    for (i, &(k, rung, workers)) in draws.iter().enumerate() {
        let k = k % types.len();
        let sizes = types[k].slot_sizes();
        let slot = sizes[rung % sizes.len()];
        let units = u64::from(slot) * u64::from(workers);
        if units <= left[k] {
            left[k] -= units;
            out.push(SlotRequest {
                job: format!("{tag}{i}"),
                gpu: k,
                slot,
                workers,
            });
        }
    }
    out
}

/// A random pairwise model: a table of slowdowns by job, some pairs forbidden.
struct Table(HashMap<(String, String), f64>);

impl CoLocation for Table {
    fn slowdown(&self, job: &str, other: &str, _gpu: &str) -> f64 {
        self.0
            .get(&(job.to_string(), other.to_string()))
            .copied()
            .unwrap_or(0.0)
    }
}

fn table(jobs: &[String], values: &[u8]) -> Table {
    let mut m = HashMap::new();
    let mut v = values.iter().cycle();
    for a in jobs {
        for b in jobs {
            let x = *v.next().unwrap_or(&0);
            let s = match x % 8 {
                0 => f64::INFINITY,
                1 => 0.0,
                r => f64::from(r) / 10.0,
            };
            m.insert((a.clone(), b.clone()), s);
        }
    }
    Table(m)
}

/// Checks a placement against its requests: only GPUs that hold a slot listed, each once, in
/// type then index order and of the cluster, no GPU over its units, slots aligned and disjoint,
/// every requested worker placed exactly once on its type in a slot of its size, nothing else
/// placed; and recomputes migrations and conflicts.
fn check_placement(
    types: &[GpuType],
    reqs: &[SlotRequest],
    p: &Placement,
    prev: Option<&Placement>,
    model: &dyn CoLocation,
) {
    let mut seen: BTreeMap<(String, u32), (usize, u32, u32)> = BTreeMap::new();
    let mut conflicts = 0;
    for pair in p.gpus.windows(2) {
        assert!(
            (pair[0].gpu_type, pair[0].index) < (pair[1].gpu_type, pair[1].index),
            "gpus are listed once, in type then index order: {} before {}",
            pair[0],
            pair[1]
        );
    }
    for g in &p.gpus {
        assert!(!g.slots.is_empty(), "{g}: idle GPUs are not listed");
        let t = &types[g.gpu_type];
        assert!(
            g.index < t.count(),
            "{g}: past the {} GPUs of its type",
            t.count()
        );
        assert_eq!((g.type_name.as_str(), g.units), (t.name(), t.units()));
        assert!(g.used() <= t.units(), "{g} over {} units", t.units());
        check_gpu_layout(
            &g.slots
                .iter()
                .map(|s| (s.offset, s.size))
                .collect::<Vec<_>>(),
            t.units(),
        );
        for s in &g.slots {
            let prior = seen.insert((s.job.clone(), s.worker), (g.gpu_type, g.index, s.size));
            assert!(prior.is_none(), "{}/w{} placed twice", s.job, s.worker);
        }
        let mut jobs: Vec<&str> = g.slots.iter().map(|s| s.job.as_str()).collect();
        jobs.sort_unstable();
        jobs.dedup();
        for (x, a) in jobs.iter().enumerate() {
            for b in &jobs[x + 1..] {
                let (u, v) = (
                    model.slowdown(a, b, t.name()),
                    model.slowdown(b, a, t.name()),
                );
                conflicts += usize::from(!(u.is_finite() && v.is_finite()));
            }
        }
    }
    let mut expected = 0;
    for r in reqs {
        for w in 0..r.workers {
            let at = seen.get(&(r.job.clone(), w));
            assert!(
                matches!(at, Some(&(k, _, s)) if k == r.gpu && s == r.slot),
                "{}/w{w} at {at:?}",
                r.job
            );
            expected += 1;
        }
    }
    assert_eq!(seen.len(), expected, "only requested slots are placed");
    assert_eq!(p.conflicts, conflicts);
    // Migrations: per job that ran before, workers not matched to a previous GPU.
    let mut migrations = 0;
    if let Some(prev) = prev {
        for r in reqs {
            let before = prev.gpus_of(&r.job);
            if before.is_empty() {
                continue;
            }
            let mut left = before.clone();
            for g in p.gpus_of(&r.job) {
                match left.iter().position(|&x| x == g) {
                    Some(i) => {
                        left.swap_remove(i);
                    }
                    None => migrations += 1,
                }
            }
        }
    }
    assert_eq!(p.migrations, migrations);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any requests within capacity are placed validly, with any co-location model and any
    /// previous placement (which shares some jobs with this round).
    #[test]
    fn placement_is_always_valid(
        types in proptest::collection::vec((0..LADDERS.len(), 0u32..5), 1..4),
        draws in proptest::collection::vec((0usize..4, 0usize..4, 1u32..4), 0..30),
        before in proptest::collection::vec((0usize..4, 0usize..4, 1u32..4), 0..30),
        values in proptest::collection::vec(any::<u8>(), 1..64),
    ) {
        let types = cluster(&types);
        // Jobs "j<i>" in both rounds share ids, so some keep or move their GPUs.
        let prev_reqs = requests(&types, &before, "j");
        let reqs = requests(&types, &draws, "j");
        let ids: Vec<String> = reqs.iter().chain(&prev_reqs).map(|r| r.job.clone()).collect();
        let model = table(&ids, &values);
        let prev = place(&types, &prev_reqs, None, &model).unwrap();
        check_placement(&types, &prev_reqs, &prev, None, &model);
        let p = place(&types, &reqs, Some(&prev), &model).unwrap();
        check_placement(&types, &reqs, &p, Some(&prev), &model);
        // Deterministic: the same call gives the same placement.
        prop_assert_eq!(&p, &place(&types, &reqs, Some(&prev), &model).unwrap());
    }

    /// With no predicted interference, placing the same requests again moves nobody.
    #[test]
    fn the_same_round_again_has_no_migrations(
        types in proptest::collection::vec((0..LADDERS.len(), 0u32..5), 1..4),
        draws in proptest::collection::vec((0usize..4, 0usize..4, 1u32..4), 0..30),
    ) {
        let types = cluster(&types);
        let reqs = requests(&types, &draws, "j");
        let first = place(&types, &reqs, None, &NoInterference).unwrap();
        let again = place(&types, &reqs, Some(&first), &NoInterference).unwrap();
        check_placement(&types, &reqs, &again, Some(&first), &NoInterference);
        prop_assert_eq!(again.migrations, 0);
    }

    /// `NoInterference` takes the placement's shortcut (`CoLocation::interference_free`: no
    /// pair costs, only swaps that bring a job back to a previous GPU); a model that also
    /// predicts no slowdown but does not say so takes the full path. Both give the same
    /// placement.
    #[test]
    fn the_interference_free_shortcut_changes_nothing(
        types in proptest::collection::vec((0..LADDERS.len(), 0u32..5), 1..4),
        draws in proptest::collection::vec((0usize..4, 0usize..4, 1u32..4), 0..30),
        before in proptest::collection::vec((0usize..4, 0usize..4, 1u32..4), 0..30),
    ) {
        let types = cluster(&types);
        let prev_reqs = requests(&types, &before, "j");
        let reqs = requests(&types, &draws, "j");
        let zero = |_: &str, _: &str, _: &str| 0.0;
        prop_assert!(NoInterference.interference_free() && !zero.interference_free());
        let prev = place(&types, &prev_reqs, None, &NoInterference).unwrap();
        prop_assert_eq!(&prev, &place(&types, &prev_reqs, None, &zero).unwrap());
        let fast = place(&types, &reqs, Some(&prev), &NoInterference).unwrap();
        let full = place(&types, &reqs, Some(&prev), &zero).unwrap();
        prop_assert_eq!(fast, full);
    }
}

/// Hand-worked: 2 GPUs of 4 units; jobs a and e (2 units each), b, c, d (1 unit each): 7 units,
/// so one GPU holds a 2-unit job and two 1-unit jobs, the other a 2-unit job and one. a and e
/// cannot share. Slowdowns per direction: b slows a by 0.9 and everyone else by 0.5; every other
/// pair costs 0.1. A GPU's cost sums both directions over its pairs of jobs.
/// - {e, b} + {a, c, d}: (0.5 + 0.1) + 3 * 0.2 = 1.2, the optimum;
/// - {a, b} + {e, c, d}: (0.9 + 0.1) + 0.6 = 1.6; b beside two others costs at least
///   0.6 + 0.6 + 0.2 on its GPU, and the other GPU's pair 0.2: 1.6 or more.
#[test]
fn co_runners_by_hand() {
    let types = cluster(&[(0, 2)]);
    let req = |job: &str, slot| SlotRequest {
        job: job.into(),
        gpu: 0,
        slot,
        workers: 1,
    };
    let reqs = [
        req("a", 2),
        req("b", 1),
        req("c", 1),
        req("d", 1),
        req("e", 2),
    ];
    let model = |x: &str, y: &str, _: &str| match (x, y) {
        ("a", "e") | ("e", "a") => f64::INFINITY,
        ("a", "b") => 0.9,
        (_, "b") => 0.5,
        _ => 0.1,
    };
    let p = place(&types, &reqs, None, &model).unwrap();
    assert_eq!(p.conflicts, 0);
    assert!((p.slowdown - 1.2).abs() < 1e-12, "slowdown {}", p.slowdown);
    assert_eq!(p.gpus_of("b"), p.gpus_of("e"));
    assert_eq!(p.gpus_of("c"), p.gpus_of("a"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Staying costs nothing when the round repeats: the same requests, the same model and the
    /// previous placement give a placement no worse in (conflicts, slowdown), and one that moves
    /// nobody unless it is strictly better.
    #[test]
    fn the_same_round_again_with_a_model_moves_only_to_improve(
        types in proptest::collection::vec((0..LADDERS.len(), 0u32..5), 1..4),
        draws in proptest::collection::vec((0usize..4, 0usize..4, 1u32..4), 0..30),
        values in proptest::collection::vec(any::<u8>(), 1..64),
    ) {
        let types = cluster(&types);
        let reqs = requests(&types, &draws, "j");
        let ids: Vec<String> = reqs.iter().map(|r| r.job.clone()).collect();
        let model = table(&ids, &values);
        let first = place(&types, &reqs, None, &model).unwrap();
        let again = place(&types, &reqs, Some(&first), &model).unwrap();
        check_placement(&types, &reqs, &again, Some(&first), &model);
        let eps = 1e-9 * first.slowdown.abs().max(1.0);
        prop_assert!(again.conflicts <= first.conflicts);
        if again.conflicts == first.conflicts {
            prop_assert!(again.slowdown <= first.slowdown + eps, "{} > {}", again.slowdown, first.slowdown);
        }
        if again.migrations > 0 {
            prop_assert!(
                again.conflicts < first.conflicts || again.slowdown < first.slowdown,
                "{} migrations for nothing", again.migrations
            );
        }
    }
}

/// A cluster of more GPUs than a placement can hold is refused before anything is allocated
/// (else `rounds` on 64 types of a million GPUs aborts on a 2 GiB allocation). One GPU past the
/// limit is enough.
#[test]
fn clusters_past_the_gpu_limit_are_refused_by_name() {
    use stsfair::placement::{MAX_GPUS, PlacementError};
    let over = Instance::builder()
        .gpu_type("a", 1_000_000, 4, &[1, 2, 4])
        .gpu_type("b", 1_000_000, 4, &[1, 2, 4])
        .gpu_type("c", 1_000_000, 4, &[1, 2, 4])
        .gpu_type("d", 1_000_000, 4, &[1, 2, 4])
        .gpu_type("e", 1, 4, &[1, 2, 4])
        .build()
        .unwrap();
    let reqs = [SlotRequest {
        job: "x".into(),
        gpu: 0,
        slot: 4,
        workers: 1,
    }];
    let err = place(over.gpu_types(), &reqs, None, &NoInterference).unwrap_err();
    assert_eq!(
        err,
        PlacementError::TooManyGpus {
            gpus: MAX_GPUS + 1,
            limit: MAX_GPUS
        }
    );
    assert!(
        err.to_string()
            .starts_with("the cluster has 4000001 gpus in all, more than the 4000000"),
        "{err}"
    );
}
