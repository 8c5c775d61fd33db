"""`stsfair.StsPolicy`: the library's round policy from Python, its errors, and snapshot/restore."""

import json
import subprocess
import sys

import pytest

import stsfair
from conftest import REPO

CLUSTER = [("v100", 2), ("k80", 2)]


def matrix():
    """Two GPU types, three single-GPU job types with pairs on both types."""
    solo = [[10.0, 8.0, 6.0], [4.0, 5.0, 2.0]]
    pair = []
    for k in range(2):
        m = [[[0.0, 0.0] for _ in range(3)] for _ in range(3)]
        for a in range(3):
            for b in range(a, 3):
                ra, rb = 0.5 + 0.1 * ((a + b + k) % 3), 0.6 + 0.1 * ((a * b + k) % 3)
                if a == b:
                    rb = ra
                m[a][b] = [ra * solo[k][a], rb * solo[k][b]]
                m[b][a] = [rb * solo[k][b], ra * solo[k][a]]
        pair.append(m)
    return {"workers": [1, 1, 1], "solo": solo, "pair": pair}


def drive(policy, start, rounds):
    plans = []
    for r in range(start, start + rounds):
        now = 360.0 * r
        policy.job_arrived(now, r, r % 3, steps=5000.0 + 1000 * (r % 4))
        plan = policy.plan(now)
        policy.round_realized(360.0, {x["job"]: (x["composed"], x["composed"] * 360.0) for x in plan["runs"]})
        if r % 3 == 2:
            policy.job_finished(policy.active[0])
        plans.append(plan)
    return plans


def test_a_round_plans_every_job_with_what_the_data_says():
    policy = stsfair.StsPolicy(CLUSTER, matrix())
    for j in range(3):
        policy.job_arrived(0.0, j, j, steps=1e6)
    plan = policy.plan(0.0)
    assert sorted(x["job"] for x in plan["runs"]) == [0, 1, 2]
    for run in plan["runs"]:
        assert run["gpu_type"] in ("v100", "k80")
        assert 0 < run["fraction"] <= 1 and run["composed"] > 0
        if plan["paired"]:
            assert run["composed"] == run["throughput"]
    policy.round_realized(360.0, {x["job"]: (x["composed"], 1.0) for x in plan["runs"]})
    assert all(policy.attained(j) > 0 for j in range(3))


def test_a_restored_policy_plans_as_the_uninterrupted_one():
    whole = stsfair.StsPolicy(CLUSTER, matrix(), {"crowding": 0.5})
    expected = drive(whole, 0, 12)
    first = stsfair.StsPolicy(CLUSTER, matrix(), {"crowding": 0.5})
    got = drive(first, 0, 5)
    text = first.snapshot()
    assert json.loads(text)["format"] == "stsfair-policy/1"
    restored = stsfair.StsPolicy.restore(text, matrix())
    got += drive(restored, 5, 7)
    assert got == expected


def test_bad_calls_raise_policy_error_by_name():
    with pytest.raises(stsfair.PolicyError, match="options.weights"):
        stsfair.StsPolicy(CLUSTER, matrix(), {"weights": "fifo"})
    with pytest.raises(stsfair.PolicyError, match="unknown option"):
        stsfair.StsPolicy(CLUSTER, matrix(), {"crowdin": 1.0})
    with pytest.raises(stsfair.PolicyError, match="crowding"):
        stsfair.StsPolicy(CLUSTER, matrix(), {"crowding": -1.0})
    bad = matrix()
    bad["solo"][0][0] = -1.0
    with pytest.raises(stsfair.PolicyError, match=r"solo\[0\]\[0\]"):
        stsfair.StsPolicy(CLUSTER, bad)
    policy = stsfair.StsPolicy(CLUSTER, matrix())
    with pytest.raises(stsfair.PolicyError, match="job 9 is not active"):
        policy.job_finished(9)
    with pytest.raises(stsfair.PolicyError, match="job type"):
        policy.job_arrived(0.0, 1, 7)
    policy.job_arrived(0.0, 1, 0)
    with pytest.raises(stsfair.PolicyError, match="already active"):
        policy.job_arrived(0.0, 1, 0)
    with pytest.raises(stsfair.SchedulerError):
        policy.round_realized(360.0, {1: (1.0, 1.0)})
    with pytest.raises(stsfair.PolicyError, match="snapshot"):
        stsfair.StsPolicy.restore('{"format": "stsfair-policy/9"}', matrix())


def test_gavel_trace_example_runs():
    out = subprocess.run(
        [sys.executable, str(REPO / "examples/python/gavel_trace_policy.py"), "--jobs", "20", "--gpus", "2"],
        capture_output=True, text=True, check=True,
    )
    assert out.stdout.startswith("20 jobs, mean JCT ")
