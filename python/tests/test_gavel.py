"""Gavel's measured throughputs from Python, and job times exactly as `stsfair gen --gavel`."""

import json

import pytest

import stsfair
from conftest import REPO

DATA = REPO / "crates" / "costs" / "data" / "gavel" / "simulation_throughputs.json"


def test_the_table_is_the_vendored_file():
    g = stsfair.gavel_throughputs()
    raw = json.loads(DATA.read_text())
    assert sorted(g.worker_types) == ["k80", "p100", "v100"]
    assert len(g.job_types) == len(set(g.job_types)) > 20
    checked = 0
    for worker in g.worker_types:
        for key, row in raw[worker].items():
            slug = next(s for s in g.job_types if g.job_type(s)["key"] == key)
            solo = row["null"]
            assert g.solo(worker, slug) == (solo if solo > 0 else None)
            for other_key, pair in row.items():
                if other_key == "null":
                    continue
                other = next(s for s in g.job_types if g.job_type(s)["key"] == other_key)
                got = g.pair(worker, slug, other)
                assert got == (tuple(pair) if pair[0] > 0 else None), (worker, key, other_key)
                checked += 1
    assert checked > 1000


def test_job_type_description():
    g = stsfair.gavel_throughputs()
    t = g.job_type("resnet-18-bs16")
    assert t == {"slug": "resnet-18-bs16", "key": "('ResNet-18 (batch size 16)', 1)",
                 "model": "ResNet-18 (batch size 16)", "family": "ResNet-18",
                 "batch_size": 16, "scale_factor": 1}
    with pytest.raises(ValueError, match="not a Gavel job type"):
        g.job_type("resnet-1000")
    with pytest.raises(ValueError, match="k80, p100, v100"):
        g.solo("a100", "resnet-18-bs16")


@pytest.mark.parametrize("seed,extra", [
    (3, []),
    (11, ["--multi", "--gpu-types", "v100,k80", "--units", "8", "--ladder", "2,4,8"]),
])
def test_job_times_are_those_of_gen_gavel(cli, seed, extra):
    doc = json.loads(cli("gen", "--gavel", "--jobs", "40", "--seed", seed, *extra).stdout)
    g = stsfair.gavel_throughputs(seed=seed)
    for job in doc["jobs"]:
        slug = job["id"].split("-", 2)[2]  # job-07-resnet-18-bs16
        assert g.job_times(slug, doc["gpu_types"]) == job["times"], job["id"]
        assert g.job_type(slug)["scale_factor"] == job.get("workers", 1)


def test_job_times_feed_the_scheduler():
    g = stsfair.gavel_throughputs()
    gpus = [{"name": "v100", "count": 1, "units": 4, "slot_sizes": [1, 2, 4]}]
    cluster = {"format": "stsfair/1", "gpu_types": gpus, "jobs": []}
    s = stsfair.RoundScheduler(cluster)
    for k in ["resnet-18-bs16", "transformer-bs64", "a3c"]:
        s.add_job({"id": k, "times": g.job_times(k, gpus)})
    plan = s.plan()
    assert sum(1 for j in plan["jobs"] if j["gpu"]) >= 1
    with pytest.raises(ValueError, match="a100"):
        g.job_times("a3c", [{"name": "a100", "units": 4, "slot_sizes": [4]}])
    with pytest.raises(stsfair.InstanceError, match=r"gpu_types\[0\]: missing field `name`"):
        g.job_times("a3c", [{"units": 4, "slot_sizes": [4]}])
    # The types are checked as an instance file's (a slot of 3 on 4 units, repeated sizes, 2^31
    # units and a repeated type are refused here, not returned as times `add_job` refuses).
    for bad, says in [
        ([{"name": "v100", "units": 4, "slot_sizes": [3]}], r"gpu_types\[0\].slot_sizes"),
        ([{"name": "v100", "units": 4, "slot_sizes": [1, 1]}], r"gpu_types\[0\].slot_sizes"),
        ([{"name": "v100", "units": 2**31, "slot_sizes": [2**31]}], r"gpu_types\[0\].units"),
        ([{"name": "v100", "units": 4, "slot_sizes": [4]}] * 2, r"gpu_types\[1\].name"),
        ([{"name": "v100", "units": -1, "slot_sizes": [4]}], r"gpu_types\[0\].units"),
        ([{"name": "v100", "units": 4, "slot_sizes": [1.0]}], r"gpu_types\[0\].slot_sizes"),
    ]:
        with pytest.raises(stsfair.InstanceError, match=says):
            g.job_times("a3c", bad)
