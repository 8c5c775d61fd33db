//! `instances/index.json` (docs/format.md, "Instance manifest") lists every shipped instance, and
//! its sizes, statuses and optima are what the files hold and what the DP finds (`verify`
//! accepting each answer).

use std::path::Path;

use stsfair::manifest::{MANIFEST_FILE, Manifest, PROOF_DP, PROOF_ILP, family};
use stsfair::solution::objectives_agree;
use stsfair::{Dp, Instance, Solver, Status, verify};

#[test]
fn the_manifest_lists_every_shipped_instance_with_the_dps_answer() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances");
    let manifest = Manifest::from_path(&dir.join(MANIFEST_FILE)).expect("the manifest reads");
    let files = stsfair::bench::instance_files(std::slice::from_ref(&dir)).expect("instances/");
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let listed: Vec<String> = manifest.instances.iter().map(|e| e.file.clone()).collect();
    assert_eq!(
        listed, names,
        "the manifest lists the shipped files, in name order"
    );
    for (path, entry) in files.iter().zip(&manifest.instances) {
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
        let dp = Dp::default().solve(&instance).expect("the DP solves it");
        verify(&instance, &dp).expect("verify accepts the DP's answer");
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
