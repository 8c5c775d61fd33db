//! The manifests of the shipped instances (docs/format.md, "Instance manifest"):
//! `instances/index.json` and `instances/hard/index.json` list every instance of their folder, and
//! their sizes, statuses and optima are what the files hold and what the DP finds (`verify`
//! accepting each answer; milliseconds per round in a release build, the hard rounds included).

use std::path::{Path, PathBuf};

use stsfair::manifest::{Entry, MANIFEST_FILE, Manifest, PROOF_DP, PROOF_ILP, family};
use stsfair::solution::objectives_agree;
use stsfair::{Dp, Instance, Solver, Status, verify};

/// The folder of shipped instances `sub` (`""`: `instances/` itself).
fn folder(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("instances")
        .join(sub)
}

/// The folder's manifest entries with their instances, after checking that the manifest lists
/// every instance file of the folder, in name order, with its sizes, name, family and proofs.
fn listed(dir: &Path) -> Vec<(Entry, Instance)> {
    let manifest = Manifest::from_path(&dir.join(MANIFEST_FILE)).expect("the manifest reads");
    let files = stsfair::bench::instance_files(&[dir.to_path_buf()]).expect("the folder reads");
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let listed: Vec<String> = manifest.instances.iter().map(|e| e.file.clone()).collect();
    assert_eq!(
        listed,
        names,
        "{}: the manifest lists the folder's files, in name order",
        dir.display()
    );
    let mut out = Vec::new();
    for (path, entry) in files.iter().zip(manifest.instances) {
        let instance = Instance::from_path(path).expect("a shipped instance is valid");
        entry
            .describes(&instance)
            .unwrap_or_else(|e| panic!("{}: {e}", entry.file));
        assert_eq!(Some(entry.name.as_str()), instance.name(), "{}", entry.file);
        assert_eq!(entry.family, family(&entry.name), "{}", entry.file);
        assert!(
            !entry.proven_by.is_empty()
                && entry
                    .proven_by
                    .iter()
                    .all(|p| p == PROOF_ILP || p == PROOF_DP),
            "{}: {:?}",
            entry.file,
            entry.proven_by
        );
        out.push((entry, instance));
    }
    out
}

/// The DP's answer on every listed instance, checked by `verify`, agrees with the manifest.
fn dp_agrees(entries: &[(Entry, Instance)]) {
    for (entry, instance) in entries {
        let dp = Dp::default().solve(instance).expect("the DP solves it");
        verify(instance, &dp).expect("verify accepts the DP's answer");
        match (&dp.status, dp.objective, entry.objective) {
            (Status::Optimal, Some(x), Some(listed)) => assert!(
                objectives_agree(listed, x),
                "{}: the DP finds {x}, the manifest says {listed}",
                entry.file
            ),
            (Status::Infeasible { .. }, _, None) => assert_eq!(entry.status, "infeasible"),
            other => panic!("{}: the DP answers {other:?}", entry.file),
        }
    }
}

#[test]
fn the_manifest_lists_every_shipped_instance_with_the_dps_answer() {
    dp_agrees(&listed(&folder("")));
}

#[test]
fn the_hard_manifest_lists_every_hard_round_with_the_dps_answer() {
    let entries = listed(&folder("hard"));
    assert!(!entries.is_empty());
    for (entry, _) in &entries {
        assert_eq!(entry.family, "gavel-round", "{}", entry.file);
        assert_eq!(entry.status, "optimal", "{}", entry.file);
        assert_eq!(entry.proven_by, [PROOF_ILP, PROOF_DP], "{}", entry.file);
    }
    dp_agrees(&entries);
}
