"""The vendored MIG data from Python: the same answers as the Rust library (stsfair_costs::mig)."""

import json

import pytest

import stsfair
from conftest import REPO

DATA = REPO / "crates" / "costs" / "data" / "miso-mig"


def test_models_hold_the_vendored_profiles_and_layouts():
    raw = json.loads((DATA / "mig_profiles.json").read_text())
    for entry in raw["gpus"]:
        if entry["layouts"] is None:
            with pytest.raises(ValueError, match="not sourced"):
                stsfair.mig_gpu(entry["gpu"])
            continue
        gpu = stsfair.mig_gpu(entry["gpu"])
        assert gpu["compute_slices"] == 7 and gpu["memory_slices"] == 8
        base = [p for p in entry["profiles"] if p["base"]]
        assert [p["name"] for p in gpu["profiles"]] == [p["name"] for p in base]
        assert [p["starts"] for p in gpu["profiles"]] == [p["starts"] for p in base]
        listed = sorted(sorted(l, reverse=True) for l in entry["layouts"])
        assert sorted(gpu["layouts"]) == listed
        assert [4, 3] in gpu["layouts"]


def test_place_gives_disjoint_memory_and_refuses_by_rule():
    slots = stsfair.mig_place("a100-40gb", [1, 3, 1, 2])
    assert [(s["compute"], s["start"]) for s in slots] == [(3, 4), (2, 0), (1, 2), (1, 3)]
    used = set()
    for s in slots:
        cells = set(range(s["start"], s["start"] + s["memory"]))
        assert not used & cells
        used |= cells
    with pytest.raises(ValueError, match=r'"a100-40gb": layout \[3, 3, 1\] cannot be placed'):
        stsfair.mig_place("a100-40gb", [3, 3, 1])
    with pytest.raises(ValueError, match="more than the GPU's 7"):
        stsfair.mig_place("a100-40gb", [4, 4])
    with pytest.raises(ValueError, match="whole number >= 1"):
        stsfair.mig_place("a100-40gb", [-1])
    with pytest.raises(ValueError, match="a100-40gb"):
        stsfair.mig_place("a200", [7])


def test_latencies_are_the_vendored_means():
    raw = json.loads((DATA / "a100_mig_latency.json").read_text())
    jobs = stsfair.mig_latencies()
    assert len(jobs) == len(raw["jobs"]) == 32
    for got, want in zip(jobs, raw["jobs"]):
        assert (got["model"], got["batch"]) == (want["model"], want["batch"])
        assert got["latency"] == want["latency"]
        assert got["name"] == f"{want['model']} (batch size {want['batch']})"
