"""`stsfair.solve` and `stsfair.verify` give the CLI's answers on every shipped instance."""

import json
import math
from pathlib import Path

import pytest

import stsfair
from conftest import INSTANCES

# Every instance but the manifest (docs/format.md, "Instance manifest").
SHIPPED = sorted(p for p in INSTANCES.glob("*.json") if p.name != "index.json")


def agree(a, b):
    """The objective agreement rule of docs/format.md."""
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-9 * max(1.0, abs(a))


def test_there_are_shipped_instances():
    assert len(SHIPPED) >= 10


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_dp_answers_equal_the_cli(cli, path):
    r = cli("solve", path, "--json")
    expected = json.loads(r.stdout)
    got = stsfair.solve(path)
    assert got["format"] == "stsfair-solution/1"
    assert got["status"] == expected["status"]
    assert agree(got["objective"], expected["objective"])
    assert got["assignments"] == expected["assignments"]
    assert got["units_used"] == expected["units_used"]
    # The same document but for the timings.
    for doc in (got, expected):
        doc["stats"] = {k: v for k, v in doc["stats"].items() if not k.startswith("seconds")}
    assert got == expected
    # A dict and a str path give the same answer as a Path.
    by_dict = stsfair.solve(json.loads(path.read_text()))
    assert by_dict["assignments"] == expected["assignments"]
    assert stsfair.solve(str(path))["assignments"] == expected["assignments"]
    stsfair.verify(path, got)


@pytest.mark.parametrize("name", ["hand-fastest-first", "hand-infeasible", "hand-no-bound", "hand-share-one-gpu", "hand-unpackable"])
@pytest.mark.parametrize("solver", ["dp-dense", "brute"])
def test_other_solvers_equal_the_cli(cli, name, solver):
    path = INSTANCES / f"{name}.json"
    expected = json.loads(cli("solve", path, "--json", "--solver", solver).stdout)
    got = stsfair.solve(path, solver=solver)
    assert got["solver"] == expected["solver"] == solver
    assert got["status"] == expected["status"]
    assert agree(got["objective"], expected["objective"])
    assert got["assignments"] == expected["assignments"]
    stsfair.verify(path, got)


def test_infeasible_answer_is_a_document_not_an_error():
    got = stsfair.solve(INSTANCES / "hand-infeasible.json")
    assert got["status"] == "infeasible"
    assert got["objective"] is None and got["assignments"] == []
    assert got["stats"]["reason"]


def test_verify_refuses_a_false_claim_of_infeasibility():
    # The forced jobs of hand-fastest-first fit together: the round has a solution.
    path = INSTANCES / "hand-fastest-first.json"
    claim = dict(stsfair.solve(path), status="infeasible", objective=None, assignments=[])
    with pytest.raises(stsfair.VerifyError, match="forced jobs fit together"):
        stsfair.verify(path, claim)


def test_verify_names_what_is_wrong(tmp_path):
    path = INSTANCES / "hand-fastest-first.json"
    good = stsfair.solve(path)
    proved = stsfair.verify(path, good)
    assert proved["optimality"] == "certified"
    assert proved["objective"] == pytest.approx(good["objective"], rel=1e-9)
    assert proved["optimum"] == pytest.approx(good["objective"], rel=1e-9)
    bad = json.loads(json.dumps(good))
    bad["objective"] += 1.0
    with pytest.raises(stsfair.VerifyError, match="objective"):
        stsfair.verify(path, bad)
    bad = json.loads(json.dumps(good))
    bad["assignments"].pop()
    with pytest.raises(stsfair.VerifyError, match="jobs"):
        stsfair.verify(path, bad)
    bad = json.loads(json.dumps(good))
    bad["assignments"][0] = {"job": bad["assignments"][0]["job"], "gpu": "nope", "slot": 4}
    with pytest.raises(stsfair.VerifyError):
        stsfair.verify(path, bad)
    with pytest.raises(stsfair.VerifyError, match="solution"):
        stsfair.verify(path, {"format": "something else"})
    # A solution file works as well as a dict.
    f = tmp_path / "s.json"
    f.write_text(json.dumps(good))
    stsfair.verify(str(path), f)
    assert issubclass(stsfair.VerifyError, ValueError)


def test_unknown_solver_names_the_known_ones():
    with pytest.raises(ValueError, match="dp, dp-dense, brute"):
        stsfair.solve(INSTANCES / "hand-fastest-first.json", solver="simplex")
    assert stsfair.solvers()[:3] == ["dp", "dp-dense", "brute"]


def test_solver_limit_is_a_solve_error():
    # brute force refuses a 300-job round as too large (SolveError::TooLarge): exit 1 in the CLI.
    with pytest.raises(stsfair.SolveError, match="brute"):
        stsfair.solve(INSTANCES / "gavel-36x3-300.json", solver="brute")


def test_a_time_limit_gives_the_dp_greedy_solution_as_feasible(cli):
    # A nanosecond has passed by the DP's first look at the clock: its greedy solution, with its
    # gap to the Lagrangian bound, the CLI's answer with the same limit.
    path = INSTANCES / "gavel-250x3-3000.json"
    got = stsfair.solve(path, time_limit=1e-9)
    assert got["status"] == "feasible"
    assert got["objective"] < 1289.456147052 < got["stats"]["bound"]
    assert got["stats"]["gap"] > 0
    stsfair.verify(path, got)
    expected = json.loads(cli("solve", path, "--json", "--time-limit", "1e-9").stdout)
    assert got["assignments"] == expected["assignments"]
    assert got["stats"]["bound"] == expected["stats"]["bound"]
    # The dense DP has no answer before its last job.
    with pytest.raises(stsfair.SolveError, match="time limit"):
        stsfair.solve(INSTANCES / "gavel-8x3-40.json", solver="dp-dense", time_limit=1e-9)
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="time_limit"):
            stsfair.solve(path, time_limit=bad)
    # A scheduler's solves have it too: its plan is the greedy's, and says a limit stopped it.
    with pytest.raises(ValueError, match="time_limit"):
        stsfair.RoundScheduler(json.loads(path.read_text()), time_limit=0)
    plan = stsfair.RoundScheduler(json.loads(path.read_text()), time_limit=1e-9).plan()
    assert plan["feasible_solves"] == 1 and plan["objective"] < 1289.456147052


def test_numbers_round_trip_exactly():
    path = INSTANCES / "gavel-8x3-40.json"
    got = stsfair.solve(path)
    # Recomputed from the instance, the objective agrees to the last bit with the solver's sum.
    assert isinstance(got["objective"], float) and math.isfinite(got["objective"])
    stsfair.verify(json.loads(Path(path).read_text()), got)


def test_plain_python_data_of_any_shape_gives_the_same_answer():
    # Tuples for lists, int subclasses, float subclasses, str subclasses: all are JSON to
    # json.dumps, and so to solve.
    class F(float):
        pass

    class S(str):
        pass

    path = INSTANCES / "hand-share-one-gpu.json"
    doc = json.loads(path.read_text())
    odd = json.loads(path.read_text())
    for g in odd["gpu_types"]:
        g["slot_sizes"] = tuple(g["slot_sizes"])
        g["name"] = S(g["name"])
    for j in odd["jobs"]:
        j["times"] = tuple(dict(t, sec_per_iter=F(t["sec_per_iter"])) for t in j["times"])
    assert stsfair.solve(odd)["assignments"] == stsfair.solve(doc)["assignments"]
