//! MIG slices: NVIDIA's GPU-instance profiles of the A100 and H100 with their placement rules,
//! and MISO's measured training latencies on each A100 instance (`data/miso-mig/`, provenance in
//! its `SOURCE.txt`).
//!
//! A GPU that supports Multi-Instance GPU splits into isolated instances. An instance of
//! profile p takes `compute` of the GPU's compute slices (7 on A100 and H100) and the memory
//! slices `[start, start + memory)` of its 8, for a start among the profile's allowed ones
//! (`nvidia-smi mig -lgipp`). A set of instances can coexist when no two memory ranges overlap:
//! NVML refuses to create an instance that overlaps an occupied memory slice. A **layout** is a
//! multiset of compute sizes, such as `[4, 2, 1]`; it is valid on a GPU when its instances can
//! be given starts whose ranges are disjoint ([`MigGpu::place`]). The sizes then sum to at most
//! 7 by themselves. `[3, 3]`, `[4, 3]` and `[3, 2, 1, 1]` are layouts of the A100; `[4, 4]` and
//! `[3, 3, 1]` are not (the second 3g instance may start only at memory slice 4, which leaves
//! no room for a 1g instance).
//!
//! One profile per compute size (the `base` profiles of the data: 1g.5gb, 2g.10gb, 3g.20gb,
//! 4g.20gb, 7g.40gb on the A100-40GB) decides the layouts: the others (`+me`, 1g.10gb) take the
//! same compute and at least as much memory, so they add no multiset of sizes.
//!
//! The placement search is a depth-first search over the slots of a layout, largest first,
//! each given the allowed starts whose range is free; equal sizes take increasing starts, so no
//! permutation is searched twice. A layout has at most 7 slots and a profile at most 7 starts:
//! at most 7^7 leaves in theory, a few dozen nodes in practice. [`MigGpu::layouts`] enumerates
//! every set of placed base instances the same way, O(2^P) for the P placements (14 on the A100,
//! 16,384 sets at most).
//!
//! Between rounds a GPU whose layout changes is reconfigured: its instances are destroyed and
//! created again, and the jobs on it stop meanwhile. [`MigGpu::assign_layouts`] gives a round's layouts
//! to the GPUs so that the fewest change.
//!
//! Times: MISO (Li et al., SoCC 2022) ran each of 32 training jobs (8 models, 4 batch sizes)
//! alone on each A100-40GB instance it fits; [`MigLatencies`] holds the mean seconds per
//! iteration, warm-up dropped. A MIG instance is isolated (its own compute slices, memory and
//! bandwidth), so a slot's time is the job's measured time on its instance, with no co-runner
//! term: the slot times of MODEL.md section 2 are these numbers as they are
//! ([`MigLatencies::seconds_per_iteration`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

/// The vendored profile tables (`data/miso-mig/mig_profiles.json`).
const PROFILES: &str = include_str!("../data/miso-mig/mig_profiles.json");
/// MISO's latencies (`data/miso-mig/a100_mig_latency.json`).
const LATENCY: &str = include_str!("../data/miso-mig/a100_mig_latency.json");

/// A MIG request that the data or the placement rules refuse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MigError {
    /// No vendored GPU model has this name.
    #[error("unknown MIG GPU model {name:?} (known: {known})")]
    UnknownGpu {
        /// The name asked for.
        name: String,
        /// The vendored names, comma-separated.
        known: String,
    },
    /// The GPU model's start positions are not sourced (H200): its layouts cannot be checked.
    #[error("MIG GPU model {gpu:?}: start positions not sourced, no layout can be checked")]
    NotSourced {
        /// The GPU model.
        gpu: String,
    },
    /// A layout the placement rules forbid.
    #[error("MIG GPU model {gpu:?}: layout {layout:?} {rule}")]
    Layout {
        /// The GPU model.
        gpu: String,
        /// The layout, in compute slices.
        layout: Vec<u32>,
        /// The rule it breaks, phrased to follow the layout.
        rule: String,
    },
    /// A round asks for more GPUs of a model than it has.
    #[error(
        "MIG GPU model {gpu:?}: the layouts' counts add up to {wanted} GPUs, more than its {gpus}"
    )]
    Count {
        /// The GPU model.
        gpu: String,
        /// The sum of the counts.
        wanted: u128,
        /// The GPUs.
        gpus: usize,
    },
    /// The vendored data does not parse (a build defect, not a user error).
    #[error("vendored MIG data: {0}")]
    Data(String),
}

/// One GPU-instance profile: its compute and memory slices and where it may start.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MigProfile {
    /// NVIDIA's name, e.g. `3g.20gb`.
    pub name: String,
    /// Compute slices (of 7).
    pub compute: u32,
    /// Memory slices (of 8).
    pub memory: u32,
    /// Allowed first memory slices.
    pub starts: Vec<u32>,
}

/// One instance of a placed layout: its profile's name, compute slices and first memory slice.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MigSlot {
    /// Compute slices: the slot's size in the instance's units.
    pub compute: u32,
    /// First memory slice.
    pub start: u32,
    /// Memory slices.
    pub memory: u32,
    /// The profile's name.
    pub profile: String,
}

/// A GPU model that supports MIG, with the profiles that decide its layouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigGpu {
    /// Its name in the data, e.g. `a100-40gb`.
    pub name: String,
    /// Compute slices of the whole GPU (7).
    pub compute_slices: u32,
    /// Memory slices of the whole GPU (8).
    pub memory_slices: u32,
    /// One profile per compute size, smallest first.
    pub profiles: Vec<MigProfile>,
}

#[derive(Deserialize)]
struct ProfilesDoc {
    gpus: Vec<GpuDoc>,
}

#[derive(Deserialize)]
struct GpuDoc {
    gpu: String,
    compute_slices: u32,
    memory_slices: Option<u32>,
    profiles: Vec<ProfileDoc>,
}

#[derive(Deserialize)]
struct ProfileDoc {
    name: String,
    compute: u32,
    memory: Option<u32>,
    starts: Option<Vec<u32>>,
    base: Option<bool>,
}

/// The bundled profile tables, parsed.
fn profiles_doc() -> Result<ProfilesDoc, MigError> {
    serde_json::from_str(PROFILES).map_err(|e| MigError::Data(e.to_string()))
}

impl MigGpu {
    /// The vendored GPU models' names, in the data's order.
    ///
    /// # Errors
    ///
    /// [`MigError::Data`] if the bundled file does not parse (a build defect).
    pub fn vendored_names() -> Result<Vec<String>, MigError> {
        Ok(profiles_doc()?.gpus.into_iter().map(|g| g.gpu).collect())
    }

    /// The vendored GPU model `name` (`a100-40gb`, `a100-80gb`, `h100-80gb`, ...).
    ///
    /// # Errors
    ///
    /// [`MigError::UnknownGpu`] for a name not in the data, [`MigError::NotSourced`] for a model
    /// whose start positions are not sourced.
    pub fn vendored(name: &str) -> Result<MigGpu, MigError> {
        let doc = profiles_doc()?;
        let known = doc
            .gpus
            .iter()
            .map(|g| g.gpu.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let Some(gpu) = doc.gpus.into_iter().find(|g| g.gpu == name) else {
            return Err(MigError::UnknownGpu {
                name: name.to_string(),
                known,
            });
        };
        let not_sourced = || MigError::NotSourced {
            gpu: gpu.gpu.clone(),
        };
        let memory_slices = gpu.memory_slices.ok_or_else(not_sourced)?;
        let mut profiles = Vec::new();
        for p in gpu.profiles.iter().filter(|p| p.base == Some(true)) {
            let (Some(memory), Some(starts)) = (p.memory, p.starts.clone()) else {
                return Err(not_sourced());
            };
            profiles.push(MigProfile {
                name: p.name.clone(),
                compute: p.compute,
                memory,
                starts,
            });
        }
        if profiles.is_empty() {
            return Err(not_sourced());
        }
        // The placement search keeps memory in a 64-bit mask and needs every start to fit.
        let fits = |p: &MigProfile| {
            p.memory >= 1
                && p.compute >= 1
                && !p.starts.is_empty()
                && p.starts
                    .iter()
                    .all(|&s| s.checked_add(p.memory).is_some_and(|e| e <= memory_slices))
        };
        if memory_slices > 64 || !profiles.iter().all(fits) {
            return Err(MigError::Data(format!(
                "{}: a profile whose memory or starts do not fit {memory_slices} memory slices",
                gpu.gpu
            )));
        }
        profiles.sort_by_key(|p| p.compute);
        Ok(MigGpu {
            name: gpu.gpu,
            compute_slices: gpu.compute_slices,
            memory_slices,
            profiles,
        })
    }

    /// The slot sizes an instance can have, smallest first (1, 2, 3, 4, 7 on the A100).
    pub fn sizes(&self) -> Vec<u32> {
        self.profiles.iter().map(|p| p.compute).collect()
    }

    /// Starts for every slot of `layout` (compute sizes, in any order) such that no two memory
    /// ranges overlap; the slots come back largest first, equal sizes by start. The first such
    /// placement in that order, so the same layout always gets the same starts.
    ///
    /// # Errors
    ///
    /// [`MigError::Layout`] naming the rule: an empty layout, a size that no profile has, more
    /// compute slices than the GPU's, or sizes whose instances overlap at every allowed start.
    pub fn place(&self, layout: &[u32]) -> Result<Vec<MigSlot>, MigError> {
        let refuse = |rule: String| MigError::Layout {
            gpu: self.name.clone(),
            layout: layout.to_vec(),
            rule,
        };
        if layout.is_empty() {
            return Err(refuse(
                "is empty: a layout has at least one instance".into(),
            ));
        }
        let mut profiles = Vec::with_capacity(layout.len());
        for &size in layout {
            match self.profiles.iter().find(|p| p.compute == size) {
                Some(p) => profiles.push(p),
                None => {
                    return Err(refuse(format!(
                        "has a slot of {size} compute slices: the sizes of instances are {:?}",
                        self.sizes()
                    )));
                }
            }
        }
        let total: u64 = layout.iter().map(|&s| u64::from(s)).sum();
        if total > u64::from(self.compute_slices) {
            return Err(refuse(format!(
                "takes {total} compute slices, more than the GPU's {}",
                self.compute_slices
            )));
        }
        profiles.sort_by_key(|p| std::cmp::Reverse(p.compute));
        let mut starts = Vec::with_capacity(profiles.len());
        if !self.search(&profiles, 0, &mut starts) {
            return Err(refuse(
                "cannot be placed: every choice of the profiles' allowed starts makes two \
                 instances' memory slices overlap"
                    .into(),
            ));
        }
        Ok(profiles
            .iter()
            .zip(starts)
            .map(|(p, start)| MigSlot {
                compute: p.compute,
                start,
                memory: p.memory,
                profile: p.name.clone(),
            })
            .collect())
    }

    /// The memory mask of `memory` slices from `start`, or `None` past the GPU's last slice.
    fn mask(&self, start: u32, memory: u32) -> Option<u64> {
        let end = start.checked_add(memory)?;
        if memory == 0 || end > self.memory_slices || self.memory_slices > 64 {
            return None;
        }
        // memory >= 1 and end <= 64, so start <= 63.
        let bits = if memory == 64 {
            u64::MAX
        } else {
            (1u64 << memory) - 1
        };
        bits.checked_shl(start)
    }

    /// Depth-first search for starts of `profiles` (largest first) whose ranges are disjoint;
    /// `starts` holds those of the profiles placed so far. Equal profiles take increasing starts.
    fn search(&self, profiles: &[&MigProfile], used: u64, starts: &mut Vec<u32>) -> bool {
        let i = starts.len();
        let Some(p) = profiles.get(i) else {
            return true;
        };
        let after = match (i.checked_sub(1), starts.last()) {
            (Some(prev), Some(&s)) if profiles[prev].name == p.name => Some(s),
            _ => None,
        };
        for &start in &p.starts {
            if after.is_some_and(|a| start <= a) {
                continue;
            }
            let Some(mask) = self.mask(start, p.memory) else {
                continue;
            };
            if used & mask != 0 {
                continue;
            }
            starts.push(start);
            if self.search(profiles, used | mask, starts) {
                return true;
            }
            starts.pop();
        }
        false
    }

    /// Every maximal layout: the multisets of compute sizes of the sets of placed instances to
    /// which no instance can be added, each sorted largest first, in decreasing order. On the
    /// A100 these are the 14 of `mig_profiles.json`, 4g+3g among them (MISO's 18 layout codes,
    /// 13 multisets, leave it out; `data/miso-mig/SOURCE.txt` says why it is kept).
    pub fn layouts(&self) -> Vec<Vec<u32>> {
        let placements: Vec<(u32, u64)> = self
            .profiles
            .iter()
            .flat_map(|p| {
                p.starts
                    .iter()
                    .filter_map(|&s| Some((p.compute, self.mask(s, p.memory)?)))
            })
            .collect();
        let mut out = BTreeSet::new();
        let mut chosen = Vec::new();
        collect_maximal(&placements, 0, 0, &mut chosen, &mut out);
        out.into_iter().rev().collect()
    }

    /// Gives this model's GPUs the layouts a round asks for, `wanted[i].1` GPUs of layout
    /// `wanted[i].0`, changing as few GPUs' layouts as possible. `current[g]` is GPU g's layout
    /// now (`None`: not partitioned). Layouts are compared as multisets of sizes: [`MigGpu::place`]
    /// gives one layout the same starts every time, so equal multisets are the same instances.
    ///
    /// Exact: a GPU keeps its layout only if that layout is asked for, so at most
    /// `sum over layouts of min(GPUs holding it now, GPUs asked for)` GPUs keep theirs, and the
    /// greedy below keeps exactly that many: each layout's holders keep it first; the layouts
    /// still asked for go to the unpartitioned GPUs, then to the others, by index (a GPU left
    /// out keeps its instances for a later round). O(G L) for G GPUs and L layouts asked for.
    ///
    /// # Errors
    ///
    /// [`MigError::Layout`] for a layout asked for that [`MigGpu::place`] refuses,
    /// [`MigError::Count`] when the counts add up to more GPUs than `current` has.
    pub fn assign_layouts(
        &self,
        current: &[Option<Vec<u32>>],
        wanted: &[(Vec<u32>, usize)],
    ) -> Result<Reassignment, MigError> {
        for (layout, _) in wanted {
            self.place(layout)?;
        }
        let total: u128 = wanted.iter().map(|(_, n)| *n as u128).sum();
        if total > current.len() as u128 {
            return Err(MigError::Count {
                gpu: self.name.clone(),
                wanted: total,
                gpus: current.len(),
            });
        }
        let wanted_sorted: Vec<Vec<u32>> = wanted.iter().map(|(l, _)| canonical(l)).collect();
        let mut left: Vec<usize> = wanted.iter().map(|(_, n)| *n).collect();
        let mut layout_of: Vec<Option<usize>> = vec![None; current.len()];
        // Pass 1: a GPU whose layout is asked for keeps it while that layout's count lasts.
        for (g, now) in current.iter().enumerate() {
            let Some(now) = now else { continue };
            let now = canonical(now);
            if let Some(i) = (0..wanted.len()).find(|&i| left[i] > 0 && wanted_sorted[i] == now) {
                layout_of[g] = Some(i);
                left[i] -= 1;
            }
        }
        // Pass 2: the layouts still asked for go to the unpartitioned GPUs, then the others.
        let mut free: Vec<usize> = (0..current.len())
            .filter(|&g| layout_of[g].is_none())
            .collect();
        free.sort_by_key(|&g| current[g].is_some());
        let mut free = free.into_iter();
        for (i, n) in left.iter().enumerate() {
            for g in free.by_ref().take(*n) {
                layout_of[g] = Some(i);
            }
        }
        let reconfigured = current
            .iter()
            .zip(&layout_of)
            .filter(|(now, new)| match (now, new) {
                (Some(now), Some(i)) => canonical(now) != wanted_sorted[*i],
                (None, Some(_)) => true,
                (_, None) => false,
            })
            .count();
        Ok(Reassignment {
            layout_of,
            reconfigured,
        })
    }
}

/// `layout` sorted largest first: the layout as a multiset.
fn canonical(layout: &[u32]) -> Vec<u32> {
    let mut v = layout.to_vec();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v
}

/// Adds to `out` the size multiset of every maximal set of disjoint `placements` that extends
/// `chosen` (memory `used`) with placements from index `from` on.
fn collect_maximal(
    placements: &[(u32, u64)],
    from: usize,
    used: u64,
    chosen: &mut Vec<u32>,
    out: &mut BTreeSet<Vec<u32>>,
) {
    for i in from..placements.len() {
        let (size, mask) = placements[i];
        if used & mask == 0 {
            chosen.push(size);
            collect_maximal(placements, i + 1, used | mask, chosen, out);
            chosen.pop();
        }
    }
    if placements.iter().all(|&(_, mask)| used & mask != 0) {
        out.insert(canonical(chosen));
    }
}

/// The layouts a round gives a model's GPUs ([`MigGpu::assign_layouts`]): each GPU's new layout, as an
/// index into the counts asked for (`None`: left as it is, with no instance in use), and how
/// many GPUs change layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reassignment {
    /// Per GPU, the index of its layout in the counts asked for, or `None`.
    pub layout_of: Vec<Option<usize>>,
    /// GPUs whose layout changes: a GPU with a layout before whose new one differs, or a GPU
    /// with none before that gets one.
    pub reconfigured: usize,
}

/// One of MISO's training jobs: a model and batch size, and its mean seconds per iteration on
/// each A100-40GB instance it fits.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MigJob {
    /// The model (bert, cyclegan, deepspeech2, embedding, gnn, mobilenet, resnet, transformer).
    pub model: String,
    /// The batch size.
    pub batch: u32,
    /// Mean seconds per iteration by profile name; a profile it does not fit is absent.
    pub latency: BTreeMap<String, f64>,
}

impl MigJob {
    /// The job's name, `model (batch size B)` as Gavel names its job types.
    pub fn name(&self) -> String {
        format!("{} (batch size {})", self.model, self.batch)
    }
}

/// MISO's measured latencies: 32 jobs on the A100-40GB's five instance sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct MigLatencies {
    /// The GPU model they were measured on (`a100-40gb`).
    pub gpu: String,
    /// The jobs, by model then batch size.
    pub jobs: Vec<MigJob>,
}

#[derive(Deserialize)]
struct LatencyDoc {
    gpu: String,
    jobs: Vec<MigJob>,
}

impl MigLatencies {
    /// The vendored measurements.
    ///
    /// # Errors
    ///
    /// [`MigError::Data`] if the bundled file does not parse (a build defect).
    pub fn vendored() -> Result<MigLatencies, MigError> {
        let doc: LatencyDoc =
            serde_json::from_str(LATENCY).map_err(|e| MigError::Data(e.to_string()))?;
        Ok(MigLatencies {
            gpu: doc.gpu,
            jobs: doc.jobs,
        })
    }

    /// Seconds per iteration of job `job` in a slot of `compute` slices of `gpu` (the GPU the
    /// latencies were measured on): its time on the instance of that size, alone, since an
    /// instance shares nothing with its neighbours. `None` where the job does not fit that
    /// instance, `gpu` has no profile of that size, or `gpu` is another model than the one
    /// measured.
    pub fn seconds_per_iteration(&self, gpu: &MigGpu, job: usize, compute: u32) -> Option<f64> {
        if gpu.name != self.gpu {
            return None;
        }
        let profile = gpu.profiles.iter().find(|p| p.compute == compute)?;
        self.jobs.get(job)?.latency.get(&profile.name).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a100() -> MigGpu {
        MigGpu::vendored("a100-40gb").expect("vendored")
    }

    #[test]
    fn a100_places_its_known_layouts() {
        let gpu = a100();
        assert_eq!(gpu.sizes(), vec![1, 2, 3, 4, 7]);
        let starts = |layout: &[u32]| -> Vec<(u32, u32)> {
            gpu.place(layout)
                .expect("placeable")
                .into_iter()
                .map(|s| (s.compute, s.start))
                .collect()
        };
        assert_eq!(starts(&[7]), vec![(7, 0)]);
        assert_eq!(starts(&[3, 3]), vec![(3, 0), (3, 4)]);
        assert_eq!(starts(&[3, 4]), vec![(4, 0), (3, 4)]);
        // 4g at 0-3, then 2g at 4-5 and 1g at 6.
        assert_eq!(starts(&[1, 2, 4]), vec![(4, 0), (2, 4), (1, 6)]);
        // The 3g at 0 leaves memory slices 4-7: the 2g at 4, then one 1g at 6 and no start for
        // the second (1g starts at 0-6); with the 3g at 4, the 2g at 0 and the 1g at 2 and 3.
        assert_eq!(starts(&[1, 3, 1, 2]), vec![(3, 4), (2, 0), (1, 2), (1, 3)]);
    }

    #[test]
    fn a100_refuses_layouts_by_rule() {
        let gpu = a100();
        let rule = |layout: &[u32]| match gpu.place(layout) {
            Err(MigError::Layout { rule, .. }) => rule,
            other => panic!("{layout:?}: {other:?}"),
        };
        assert!(rule(&[4, 4]).contains("more than the GPU's 7"));
        assert!(rule(&[3, 3, 1]).contains("overlap"));
        assert!(rule(&[5]).contains("sizes of instances are [1, 2, 3, 4, 7]"));
        assert!(rule(&[]).contains("empty"));
        let message = gpu.place(&[3, 3, 1]).expect_err("refused").to_string();
        assert!(
            message.contains("a100-40gb") && message.contains("[3, 3, 1]"),
            "{message}"
        );
    }

    #[test]
    fn unknown_and_unsourced_models_are_named() {
        let unknown = MigGpu::vendored("a200").expect_err("unknown");
        assert!(unknown.to_string().contains("a100-40gb"), "{unknown}");
        let h200 = MigGpu::vendored_names()
            .expect("vendored")
            .into_iter()
            .find(|n| n.starts_with("h200"))
            .expect("h200 listed");
        assert!(matches!(
            MigGpu::vendored(&h200),
            Err(MigError::NotSourced { .. })
        ));
    }

    /// The fewest reconfigured GPUs over every way to give the GPUs the layouts asked for
    /// (brute force over the assignments of layout indices to GPUs).
    fn fewest_reconfigured(current: &[Option<Vec<u32>>], wanted: &[(Vec<u32>, usize)]) -> usize {
        fn go(
            g: usize,
            current: &[Option<Vec<u32>>],
            wanted: &[(Vec<u32>, usize)],
            left: &mut Vec<usize>,
            cost: usize,
            best: &mut usize,
        ) {
            if g == current.len() {
                if left.iter().all(|&n| n == 0) {
                    *best = (*best).min(cost);
                }
                return;
            }
            // GPU g left as it is.
            go(g + 1, current, wanted, left, cost, best);
            for i in 0..wanted.len() {
                if left[i] == 0 {
                    continue;
                }
                let mut new = wanted[i].0.clone();
                new.sort_unstable();
                let same = current[g].as_ref().is_some_and(|now| {
                    let mut now = now.clone();
                    now.sort_unstable();
                    now == new
                });
                left[i] -= 1;
                go(
                    g + 1,
                    current,
                    wanted,
                    left,
                    cost + usize::from(!same),
                    best,
                );
                left[i] += 1;
            }
        }
        let mut left: Vec<usize> = wanted.iter().map(|(_, n)| *n).collect();
        let mut best = usize::MAX;
        go(0, current, wanted, &mut left, 0, &mut best);
        best
    }

    #[test]
    fn assign_layouts_changes_the_fewest_gpus() {
        use rand::{Rng, SeedableRng};
        let gpu = a100();
        let layouts = gpu.layouts();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for case in 0..2000 {
            let gpus = rng.random_range(0..=6);
            let kinds = rng.random_range(1..=4);
            let pick = |rng: &mut rand_chacha::ChaCha8Rng| {
                let mut l = layouts[rng.random_range(0..kinds)].clone();
                l.reverse(); // any order of sizes is the same layout
                l
            };
            let current: Vec<Option<Vec<u32>>> = (0..gpus)
                .map(|_| rng.random_bool(0.8).then(|| pick(&mut rng)))
                .collect();
            let mut wanted: Vec<(Vec<u32>, usize)> = Vec::new();
            let mut budget = rng.random_range(0..=gpus);
            for layout in &layouts[..kinds] {
                let n = rng.random_range(0..=budget);
                budget -= n;
                wanted.push((layout.clone(), n));
            }
            if rng.random_bool(0.3) {
                // The same layout listed twice.
                let n = rng.random_range(0..=budget);
                wanted.push((layouts[0].clone(), n));
            }
            let got = gpu.assign_layouts(&current, &wanted).expect("counts fit");
            assert_eq!(
                got.reconfigured,
                fewest_reconfigured(&current, &wanted),
                "case {case}: {current:?} {wanted:?}"
            );
            for (i, (_, n)) in wanted.iter().enumerate() {
                assert_eq!(got.layout_of.iter().filter(|&&l| l == Some(i)).count(), *n);
            }
        }
        let too_many = gpu
            .assign_layouts(&[None], &[(vec![7], 2)])
            .expect_err("2 of 1");
        assert!(
            too_many.to_string().contains("2 GPUs, more than its 1"),
            "{too_many}"
        );
        let bad = gpu.assign_layouts(&[None], &[(vec![3, 3, 1], 1)]);
        assert!(matches!(bad, Err(MigError::Layout { .. })), "{bad:?}");
        // The same layout listed twice, and an unpartitioned GPU taken before a partitioned one.
        let current = vec![Some(vec![7]), None, Some(vec![4, 3])];
        let got = gpu
            .assign_layouts(&current, &[(vec![3, 4], 1), (vec![4, 3], 1)])
            .expect("fits");
        assert_eq!(got.layout_of, vec![None, Some(1), Some(0)]);
        assert_eq!(got.reconfigured, 1);
    }

    #[test]
    fn latencies_map_to_slot_times_by_compute_size() {
        let gpu = a100();
        let data = MigLatencies::vendored().expect("vendored");
        assert_eq!(data.gpu, gpu.name);
        let bert2 = data
            .jobs
            .iter()
            .position(|j| j.model == "bert" && j.batch == 2)
            .expect("bert 2");
        assert_eq!(data.jobs[bert2].name(), "bert (batch size 2)");
        assert_eq!(data.seconds_per_iteration(&gpu, bert2, 1), None);
        assert_eq!(data.seconds_per_iteration(&gpu, bert2, 2), Some(0.121359));
        assert_eq!(data.seconds_per_iteration(&gpu, bert2, 7), Some(0.0472323));
        assert_eq!(data.seconds_per_iteration(&gpu, bert2, 5), None);
    }
}
