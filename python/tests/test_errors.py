"""Every invalid instance raises `stsfair.InstanceError` (a ValueError) with the CLI's message;
unreadable files raise the usual OSError; no input crashes the interpreter.

The bad documents are a representative set of the rules of docs/format.md, mined from
tests/format_rules.rs and crates/cli/tests/adversarial.rs. Each one is written to a file and
given to `stsfair validate`; the Python message must equal the CLI's (`stsfair: FILE: MESSAGE`):
`FILE: MESSAGE` for the file, `MESSAGE` for the same document as a dict (without the
`at line 1 column N` of the JSON reader).
"""

import copy
import json
import os
import re
import sys

import pytest

import stsfair
from conftest import INSTANCES


def base():
    return {
        "format": "stsfair/1",
        "name": "base",
        "fairness": {"lambda": 1.0, "max_debt": 1.0, "credit": 1.0},
        "gpu_types": [
            {"name": "v100", "count": 2, "units": 4, "slot_sizes": [1, 2, 4]},
            {"name": "k80", "count": 1, "units": 8, "slot_sizes": [2, 4, 8]},
        ],
        "jobs": [
            {"id": "a", "weight": 1.0, "workers": 1, "deficit": 0.0,
             "times": [{"gpu": "v100", "slot": 4, "sec_per_iter": 0.25},
                       {"gpu": "k80", "slot": 2, "sec_per_iter": 0.5}]},
            {"id": "b", "times": [{"gpu": "v100", "slot": 2, "sec_per_iter": 0.4}]},
        ],
    }


def edit(f):
    doc = base()
    f(doc)
    return doc


def setitem(path, value):
    """base() with doc[path...] = value."""
    def f(doc):
        obj = doc
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
    return edit(f)


def delitem(path):
    def f(doc):
        obj = doc
        for k in path[:-1]:
            obj = obj[k]
        del obj[path[-1]]
    return edit(f)


# (case, document, a fragment the message must hold: the path of the bad value)
DICT_CASES = [
    ("format tag", setitem(["format"], "stsfair/2"), "format"),
    ("fairness is an array", setitem(["fairness"], [1.0, 1.0, 1.0]), "fairness"),
    ("unknown top-level field", setitem(["extra"], 1), "extra"),
    ("unknown job field", setitem(["jobs", 0, "priority"], 3), "jobs[0]"),
    ("unknown time field", setitem(["jobs", 0, "times", 0, "mem"], 3), "jobs[0].times[0]"),
    ("null optional field", setitem(["jobs", 0, "weight"], None), "jobs[0].weight"),
    ("null required field", setitem(["gpu_types", 0, "units"], None), "gpu_types[0].units"),
    ("missing gpu_types", delitem(["gpu_types"]), "gpu_types"),
    ("missing times", delitem(["jobs", 1, "times"]), "times"),
    ("missing format", delitem(["format"]), "format"),
    ("integer written as float", setitem(["gpu_types", 0, "units"], 4.0), "gpu_types[0].units"),
    ("count above 1,000,000", setitem(["gpu_types", 0, "count"], 1_000_001), "gpu_types[0].count"),
    ("count of 2**64", setitem(["gpu_types", 0, "count"], 2**64), "gpu_types[0].count"),
    ("negative count", setitem(["gpu_types", 0, "count"], -1), "gpu_types[0].count"),
    ("units 0", setitem(["gpu_types", 0, "units"], 0), "gpu_types[0].units"),
    ("units above 1,024", setitem(["gpu_types", 0, "units"], 2048), "gpu_types[0].units"),
    ("workers 0", setitem(["jobs", 0, "workers"], 0), "jobs[0].workers"),
    ("workers above 1,024", setitem(["jobs", 0, "workers"], 1025), "jobs[0].workers"),
    ("empty slot_sizes", setitem(["gpu_types", 1, "slot_sizes"], []), "gpu_types[1].slot_sizes"),
    ("slot size 0", setitem(["gpu_types", 0, "slot_sizes"], [0, 4]), "gpu_types[0].slot_sizes"),
    ("slot_sizes not ascending", setitem(["gpu_types", 0, "slot_sizes"], [2, 1, 4]), "gpu_types[0].slot_sizes"),
    ("slot_sizes repeated", setitem(["gpu_types", 0, "slot_sizes"], [1, 1, 4]), "gpu_types[0].slot_sizes"),
    ("not a divisibility ladder", setitem(["gpu_types", 1, "slot_sizes"], [2, 3]), "gpu_types[1].slot_sizes"),
    ("largest slot does not divide units", setitem(["gpu_types", 1, "slot_sizes"], [2, 4, 16]), "gpu_types[1].slot_sizes"),
    ("no gpu types", setitem(["gpu_types"], []), "gpu_types"),
    ("duplicate gpu type name", setitem(["gpu_types", 1, "name"], "v100"), "gpu_types[1].name"),
    ("empty gpu type name", setitem(["gpu_types", 0, "name"], ""), "gpu_types[0].name"),
    ("duplicate job id", setitem(["jobs", 1, "id"], "a"), "jobs[1].id"),
    ("empty job id", setitem(["jobs", 0, "id"], ""), "jobs[0].id"),
    ("job id is a number", setitem(["jobs", 0, "id"], 1), "jobs[0].id"),
    ("name is a number", setitem(["name"], 7), "name"),
    ("negative weight", setitem(["jobs", 1, "weight"], -1.0), "jobs[1].weight"),
    ("zero weight", setitem(["jobs", 1, "weight"], 0.0), "jobs[1].weight"),
    ("NaN weight", setitem(["jobs", 1, "weight"], float("nan")), "jobs[1].weight: NaN is not a JSON number"),
    ("-inf weight", setitem(["jobs", 1, "weight"], float("-inf")), "jobs[1].weight: -Infinity is not a JSON number"),
    ("weights sum to infinity", edit(lambda d: [j.__setitem__("weight", 1e308) for j in d["jobs"]]), "weight"),
    ("infinite deficit", setitem(["jobs", 0, "deficit"], float("inf")), "jobs[0].deficit"),
    ("unknown gpu in times", setitem(["jobs", 0, "times", 1, "gpu"], "a100"), "jobs[0].times[1].gpu"),
    ("gpu names are case-sensitive", setitem(["jobs", 0, "times", 1, "gpu"], "V100"), "jobs[0].times[1].gpu"),
    ("slot not on the ladder", setitem(["jobs", 0, "times", 1, "slot"], 1), "jobs[0].times[1].slot"),
    ("zero sec_per_iter", setitem(["jobs", 0, "times", 1, "sec_per_iter"], 0.0), "jobs[0].times[1].sec_per_iter"),
    ("negative sec_per_iter", setitem(["jobs", 0, "times", 1, "sec_per_iter"], -2.0), "jobs[0].times[1].sec_per_iter"),
    ("sec_per_iter whose reciprocal overflows", setitem(["jobs", 0, "times", 1, "sec_per_iter"], 5e-324), "jobs[0].times[1].sec_per_iter"),
    ("two times for one (gpu, slot)", edit(lambda d: d["jobs"][0]["times"].append({"gpu": "k80", "slot": 2, "sec_per_iter": 0.7})), "jobs[0].times"),
    ("lambda 0", setitem(["fairness", "lambda"], 0.0), "fairness.lambda"),
    ("lambda above 1", setitem(["fairness", "lambda"], 1.5), "fairness.lambda"),
    ("negative max_debt", setitem(["fairness", "max_debt"], -0.001), "fairness.max_debt"),
    ("negative credit", setitem(["fairness", "credit"], -1.0), "fairness.credit"),
    ("gpu_types is an object", setitem(["gpu_types"], {}), "gpu_types"),
    ("times is an object", setitem(["jobs", 0, "times"], {}), "jobs[0].times"),
    ("a time entry is an array", setitem(["jobs", 0, "times", 1], ["k80", 2, 0.5]), "jobs[0].times[1]"),
]

# Documents a dict cannot hold: only as files (text as written).
TEXT_CASES = [
    ("not JSON", "{", "."),
    ("two documents", json.dumps(base()) + " {}", "."),
    ("repeated key", json.dumps(base()).replace('"name": "base"', '"name": "base", "name": "again"'), "name"),
    ("repeated key in a job", json.dumps(base()).replace('"id": "b"', '"id": "b", "id": "c"'), "jobs[1]"),
    ("deep nesting", '{"format": "stsfair/1", "name": ' + "[" * 100_000 + "]" * 100_000 + "}", "name"),
    ("empty file", "", "."),
]


def test_at_least_twenty_distinct_rules():
    assert len(DICT_CASES) + len(TEXT_CASES) >= 40
    assert len({c[0] for c in DICT_CASES + TEXT_CASES}) == len(DICT_CASES) + len(TEXT_CASES)
    stsfair.solve(base())  # the base document itself is valid


def cli_message(cli, file):
    r = cli("validate", file)
    assert r.returncode == 2, r.stdout
    assert r.stderr.startswith("stsfair: "), r.stderr
    return r.stderr[len("stsfair: "):].rstrip("\n")


@pytest.mark.parametrize("case,doc,fragment", DICT_CASES, ids=[c[0] for c in DICT_CASES])
def test_bad_dict_raises_instance_error_with_the_cli_message(cli, tmp_path, case, doc, fragment):
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(doc))
    expected = cli_message(cli, file)
    assert expected.startswith(f"{file}: ")
    with pytest.raises(stsfair.InstanceError) as e:
        stsfair.solve(doc)
    # For a dict, the message leaves out the JSON reader's "at line 1 column N" (a place in
    # text the caller never wrote).
    assert str(e.value) == re.sub(r" at line \d+ column \d+$", "", expected[len(f"{file}: "):])
    assert fragment in str(e.value)
    with pytest.raises(stsfair.InstanceError) as e:
        stsfair.solve(file)
    assert str(e.value) == expected
    # The scheduler and verify read instances the same way.
    with pytest.raises(stsfair.InstanceError):
        stsfair.RoundScheduler(doc)
    with pytest.raises(stsfair.InstanceError):
        stsfair.verify(doc, {})


@pytest.mark.parametrize("case,text,fragment", TEXT_CASES, ids=[c[0] for c in TEXT_CASES])
def test_bad_file_raises_instance_error_with_the_cli_message(cli, tmp_path, case, text, fragment):
    file = tmp_path / "bad.json"
    file.write_text(text)
    expected = cli_message(cli, file)
    with pytest.raises(stsfair.InstanceError) as e:
        stsfair.solve(str(file))
    assert str(e.value) == expected
    assert fragment in str(e.value)


def test_instance_error_is_a_value_error():
    assert issubclass(stsfair.InstanceError, ValueError)
    with pytest.raises(ValueError):
        stsfair.solve(setitem(["format"], "x"))


def test_unreadable_files_raise_os_errors(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        stsfair.solve(tmp_path / "missing.json")
    assert e.value.filename == str(tmp_path / "missing.json")
    with pytest.raises(FileNotFoundError):
        stsfair.solve(str(tmp_path / "missing.json"))
    with pytest.raises(IsADirectoryError):
        stsfair.solve(tmp_path)
    with pytest.raises(FileNotFoundError):
        stsfair.verify(INSTANCES / "hand-fastest-first.json", tmp_path / "missing.json")
    if os.geteuid() != 0:  # root reads anything
        f = tmp_path / "locked.json"
        f.write_text(json.dumps(base()))
        f.chmod(0)
        with pytest.raises(PermissionError):
            stsfair.solve(f)


def test_a_fifo_written_by_another_thread_is_read(tmp_path):
    """The file is read with the GIL released, else a FIFO whose writer is a thread of the same
    process waits for ever. Run in a subprocess with a timeout, so that a
    regression fails instead of hanging the suite."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    fifo = tmp_path / "cluster.fifo"
    os.mkfifo(fifo)
    code = (
        "import json, threading, time, stsfair\n"
        f"doc = json.dumps({base()!r})\n"
        "def write():\n"
        "    time.sleep(0.5)\n"
        f"    with open({str(fifo)!r}, 'w') as f: f.write(doc)\n"
        "threading.Thread(target=write).start()\n"
        f"print(stsfair.solve({str(fifo)!r})['status'])\n"
    )
    import subprocess
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() in ("optimal", "infeasible"), out.stdout


def test_non_utf8_file_is_an_instance_error(tmp_path):
    f = tmp_path / "latin1.json"
    f.write_bytes(json.dumps(base()).replace("base", "b\u00e4se").encode("latin-1"))
    with pytest.raises(stsfair.InstanceError, match="UTF-8"):
        stsfair.solve(f)


class Odd:
    pass


@pytest.mark.parametrize(
    "obj",
    [None, 5, 1.5, [], [1, 2], {}, {"format": "stsfair/1"}, {1: 2}, {"format": {1, 2}}, Odd(),
     b"instances/x.json", {"a": float("nan")}, "", True],
    ids=repr,
)
def test_anything_else_is_refused_without_a_crash(obj):
    with pytest.raises((stsfair.InstanceError, OSError)):
        stsfair.solve(obj)


def test_cycles_and_deep_python_objects_are_instance_errors():
    doc = base()
    doc["jobs"][0]["self"] = doc
    with pytest.raises(stsfair.InstanceError):
        stsfair.solve(doc)
    deep = []
    for _ in range(sys.getrecursionlimit() * 2):
        deep = [deep]
    with pytest.raises(stsfair.InstanceError):
        stsfair.solve({**base(), "name": deep})
    shallow = []
    for _ in range(200):  # json.dumps writes it; the core's nesting limit refuses it
        shallow = [shallow]
    with pytest.raises(stsfair.InstanceError):
        stsfair.solve({**base(), "name": shallow})


def test_documents_are_not_modified():
    doc = base()
    before = copy.deepcopy(doc)
    stsfair.solve(doc)
    s = stsfair.RoundScheduler(doc)
    s.add_job({"id": "c", "times": [{"gpu": "v100", "slot": 4, "sec_per_iter": 0.3}]})
    s.plan()
    assert doc == before
