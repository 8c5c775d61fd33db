//! Shared by the integration tests: proptest strategies for random small instances that reach
//! every corner of the model (forced jobs, jobs that cannot catch up, missing options, options
//! that can never fit, several GPU types, ladders such as [1, 2, 4] and [2, 4, 8], ties).
#![allow(dead_code)]

use proptest::prelude::*;
use stsfair::{Fairness, Instance, JobSpec};

/// Ladders a GPU type may use, with the units of its GPUs.
const LADDERS: &[(u64, &[u64])] = &[
    (4, &[1, 2, 4]),
    (8, &[2, 4, 8]),
    (4, &[4]),
    (8, &[1, 2, 4]),
    (6, &[1, 3]),
    (7, &[1]),
];

/// Parameters of random instances.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub max_jobs: usize,
    pub max_types: usize,
    pub max_count: u64,
    pub max_workers: u64,
}

impl Shape {
    /// Small enough for brute force (at most ~10^5 combinations).
    pub const TINY: Shape = Shape {
        max_jobs: 6,
        max_types: 3,
        max_count: 3,
        max_workers: 2,
    };
    /// Larger, for DP vs ILP.
    pub const SMALL: Shape = Shape {
        max_jobs: 25,
        max_types: 4,
        max_count: 6,
        max_workers: 3,
    };

    /// The same shape with single-GPU jobs only (d_j = 1). The fast DP takes the core of such
    /// problems in its rigid order and that of problems with distributed jobs by units
    /// (docs/solver.md step 6, "Core order"); most random instances of the shapes above have a
    /// distributed job.
    pub const fn single_gpu(self) -> Shape {
        Shape {
            max_workers: 1,
            ..self
        }
    }
}

/// A random instance of the given shape. Times are drawn from a few values so that ties happen;
/// deficits span from far below to far above the forcing threshold.
pub fn instance(shape: Shape) -> impl Strategy<Value = Instance> {
    weighted(shape, prop_oneof![3 => Just(1.0), 1 => 0.1f64..4.0].boxed())
}

/// Like [`instance`], but every job's weight is 10^e with e uniform in [lo, hi] (one in four is
/// 10^lo or 10^hi exactly): rounds whose values differ by up to 10^(hi - lo), and rounds whose
/// values are all tiny or all huge.
pub fn spread(shape: Shape, lo: f64, hi: f64) -> impl Strategy<Value = Instance> {
    let weight = prop_oneof![
        6 => (lo..=hi).prop_map(|e| 10f64.powf(e)),
        1 => Just(10f64.powf(lo)),
        1 => Just(10f64.powf(hi)),
    ];
    weighted(shape, weight.boxed())
}

fn weighted(shape: Shape, weight: BoxedStrategy<f64>) -> impl Strategy<Value = Instance> {
    let types =
        proptest::collection::vec((0..LADDERS.len(), 0..=shape.max_count), 1..=shape.max_types);
    let fairness = (
        prop_oneof![Just(1.0), Just(0.5), 0.05f64..=1.0],
        prop_oneof![Just(1.0), Just(0.0), 0.0f64..3.0],
        prop_oneof![Just(1.0), 0.0f64..3.0],
    );
    (types, fairness).prop_flat_map(move |(types, (lambda, max_debt, credit))| {
        let k = types.len();
        // Per job: weight, workers, deficit, and per (type, ladder rung) an optional time.
        let time = prop_oneof![
            2 => Just(None),
            3 => (0usize..6).prop_map(|i| Some([0.1, 0.2, 0.25, 0.4, 0.5, 1.0][i])),
            2 => (0.05f64..2.0).prop_map(Some),
        ];
        let job = (
            weight.clone(),
            1..=shape.max_workers,
            prop_oneof![2 => Just(0.0), 2 => -2.0f64..3.0, 1 => Just(1.0)],
            proptest::collection::vec(time, k * 4),
        );
        let jobs = proptest::collection::vec(job, 0..=shape.max_jobs);
        (Just(types.clone()), Just((lambda, max_debt, credit)), jobs).prop_map(
            |(types, (lambda, max_debt, credit), jobs)| {
                build(
                    &types,
                    Fairness {
                        lambda,
                        max_debt,
                        credit,
                    },
                    &jobs,
                )
            },
        )
    })
}

/// Like [`instance`], but the jobs are 1 to 3 templates, each copied up to `max_copies` times:
/// classes of identical jobs that the LP splits between tied choices, the case the DP's class
/// counting exists for.
pub fn repeated(shape: Shape, max_copies: usize) -> impl Strategy<Value = Instance> {
    let types =
        proptest::collection::vec((0..LADDERS.len(), 0..=shape.max_count), 1..=shape.max_types);
    let fairness = (
        prop_oneof![Just(1.0), 0.05f64..=1.0],
        prop_oneof![Just(1.0), 0.0f64..3.0],
    );
    (types, fairness).prop_flat_map(move |(types, (lambda, max_debt))| {
        let k = types.len();
        let time = prop_oneof![
            1 => Just(None),
            3 => (0usize..6).prop_map(|i| Some([0.1, 0.2, 0.25, 0.4, 0.5, 1.0][i])),
        ];
        let job = (
            Just(1.0),
            1..=shape.max_workers,
            prop_oneof![Just(0.0), Just(1.0), -2.0f64..3.0],
            proptest::collection::vec(time, k * 4),
            1..=max_copies,
        );
        let jobs = proptest::collection::vec(job, 1..=3);
        (Just(types.clone()), jobs).prop_map(move |(types, jobs)| {
            let raw: Vec<RawJob> = jobs
                .iter()
                .flat_map(|(w, workers, deficit, times, copies)| {
                    std::iter::repeat_n((*w, *workers, *deficit, times.clone()), *copies)
                })
                .collect();
            build(
                &types,
                Fairness {
                    lambda,
                    max_debt,
                    credit: 1.0,
                },
                &raw,
            )
        })
    })
}

type RawJob = (f64, u64, f64, Vec<Option<f64>>);

fn build(types: &[(usize, u64)], fairness: Fairness, jobs: &[RawJob]) -> Instance {
    let mut b = Instance::builder().fairness(fairness);
    for (k, &(ladder, count)) in types.iter().enumerate() {
        let (units, sizes) = LADDERS[ladder];
        b = b.gpu_type(format!("g{k}"), count, units, sizes);
    }
    for (j, (weight, workers, deficit, times)) in jobs.iter().enumerate() {
        let mut spec = JobSpec::new(format!("j{j}"))
            .weight(*weight)
            .workers(*workers)
            .deficit(*deficit);
        for (k, &(ladder, _)) in types.iter().enumerate() {
            let (_, sizes) = LADDERS[ladder];
            for (r, &s) in sizes.iter().enumerate() {
                // Bigger slots are never slower here, as in the measured data, except by ties.
                if let Some(t) = times[k * 4 + r.min(3)] {
                    spec = spec.time(format!("g{k}"), s, t * (sizes.len() - r) as f64);
                }
            }
        }
        b = b.job(spec);
    }
    b.build().expect("generated instances are valid")
}
