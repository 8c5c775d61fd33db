#!/usr/bin/env python3
"""Regenerates crates/costs/data/miso-mig/a100_mig_latency.json and a100_layouts_miso.json from a
copy of MISO (github.com/boringlee24/socc22-miso, Li et al., SoCC 2022, MIT licence).

    scripts/vendor-miso.py PATH [--rev HEAD] [--out DIR] [--check]

PATH is a checkout (a folder holding mps/models/logs/mig/) or a git directory (bare or .git),
read with `git show REV:path`. Standard library only (plus the git binary for a git directory).
The output is deterministic: same input files, same bytes. --check compares with the files in
--out instead of writing them and exits 1 if they differ.

What is converted (see crates/costs/data/miso-mig/SOURCE.txt):
  mps/models/logs/mig/<profile>_<model>_train<batch>.json  ->  a100_mig_latency.json
    Each file is {"<epoch>": [seconds of one training iteration, ...], ...}: wall time of every
    Keras train batch (time.time() around the batch, rounded to 0.1 ms by MISO), keyed by epoch.
    Per (model, batch, profile): the samples of all epochs in epoch order, the first one dropped
    (the first iteration: graph tracing / warm-up, 2-44 s), then
      latency = arithmetic mean (MISO's own summary, mps/scheduler/simulator/utils.py),
      median  = median, samples = count used;
    both rounded to 6 significant digits. A profile has no entry where MISO has no file (the job
    does not fit that instance). The synthetic "dummy" workload is left out.
  mps/scheduler/partition_code.json  ->  a100_layouts_miso.json (MISO's 18 layouts, as listed).

It also writes mig_profiles.json (which does not depend on PATH) from the table PROFILE_TABLE
below: NVIDIA's MIG GPU-instance profiles with their placements (start positions among the memory
slices, as `nvidia-smi mig -lgipp` lists them; sources in SOURCE.txt), and the layouts derived
from them. A set of GPU instances is valid when their memory-slice ranges [start, start+memory)
do not overlap (NVML: creating a GPU instance fails only on overlap with occupied memory slices).
Layouts are derived over the base profiles (one per compute size, the smallest memory):
  maximal_placements: sets of (profile, start) to which no base instance can be added;
  layouts: their distinct multisets of compute slices; layouts_all: every non-empty multiset of
  compute slices some valid set of base instances has.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

PROFILES = ["1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]
LOG_DIR = "mps/models/logs/mig"
LAYOUTS = "mps/scheduler/partition_code.json"
SKIP_MODELS = {"dummy"}
NAME = re.compile(r"^(\d+g\.\d+gb)_([A-Za-z0-9]+)_train(\d+)\.json$")


class Source:
    """Reads files from a folder or from a git directory at a revision."""

    def __init__(self, path, rev):
        self.path = path
        self.rev = rev
        self.git = os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(os.path.join(path, "objects"))

    def _git(self, *args):
        return subprocess.run(["git", "--git-dir=" + self.path, *args], check=True,
                              capture_output=True).stdout

    def list_dir(self, d):
        if self.git:
            out = self._git("ls-tree", "--name-only", self.rev + ":" + d).decode()
            return sorted(n for n in out.split("\n") if n)
        return sorted(os.listdir(os.path.join(self.path, d)))

    def read(self, p):
        if self.git:
            return self._git("show", self.rev + ":" + p).decode("utf-8")
        with open(os.path.join(self.path, p), encoding="utf-8") as f:
            return f.read()


def sig6(x):
    return float(f"{x:.6g}")


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def latency_doc(src):
    jobs = {}
    for name in src.list_dir(LOG_DIR):
        m = NAME.match(name)
        if not m:
            continue
        prof, model, batch = m.group(1), m.group(2), int(m.group(3))
        if model in SKIP_MODELS:
            continue
        if prof not in PROFILES:
            sys.exit(f"unexpected profile in {name}")
        d = json.loads(src.read(LOG_DIR + "/" + name))
        samples = []
        for epoch in sorted(d, key=int):  # json.dump wrote epochs 0, 1, 2, ...
            samples.extend(d[epoch])
        samples = samples[1:]  # the first iteration is warm-up
        if not samples:
            sys.exit(f"no samples after warm-up in {name}")
        j = jobs.setdefault((model, batch), {"latency": {}, "median": {}, "samples": {}})
        j["latency"][prof] = sig6(math.fsum(samples) / len(samples))
        j["median"][prof] = sig6(median(samples))
        j["samples"][prof] = len(samples)
    head = {
        "format": "stsfair-mig-latency/1",
        "gpu": "a100-40gb",
        "unit": "seconds per iteration",
        "statistic": "latency: mean of the measured training-iteration wall times, first "
                     "iteration (warm-up) dropped, as MISO does; median: their median; samples: "
                     "iterations used; 6 significant digits",
        "source": "github.com/boringlee24/socc22-miso " + LOG_DIR + "/<profile>_<model>_train<batch>.json",
        "profiles": PROFILES,
    }
    lines = []
    for (model, batch) in sorted(jobs):
        j = jobs[(model, batch)]
        row = {"model": model, "batch": batch}
        for k in ("latency", "median", "samples"):
            row[k] = {p: j[k][p] for p in PROFILES if p in j[k]}
        lines.append(json.dumps(row, separators=(",", ":")))
    body = json.dumps(head, separators=(",", ":"))[:-1]
    return body + ',"jobs":[\n' + ",\n".join(lines) + "\n]}\n"


def layouts_doc(src):
    d = json.loads(src.read(LAYOUTS))
    rows = []
    for code in sorted(d, key=int):
        slices = d[code]
        if not all(isinstance(s, int) and s in (1, 2, 3, 4, 7) for s in slices) or sum(slices) > 7:
            sys.exit(f"unexpected layout {code}: {slices}")
        rows.append(json.dumps({"code": int(code), "slices": slices}, separators=(",", ":")))
    head = {
        "format": "stsfair-mig-layouts/1",
        "gpu": "a100-40gb",
        "note": "MISO's A100 MIG layouts as listed in github.com/boringlee24/socc22-miso "
                + LAYOUTS + " (key = MISO's partition code); slices = compute slices of each GPU "
                "instance (1 = 1g.5gb, 2 = 2g.10gb, 3 = 3g.20gb, 4 = 4g.20gb, 7 = 7g.40gb) in the "
                "order MISO creates them, one nvidia-smi mig -cgi call each with the placement left "
                "to the driver (gpu_server.py, mig_helper.py); this is not the physical order, and "
                "MISO keeps entries that are equal as multisets as separate codes without recording "
                "their placement",
    }
    body = json.dumps(head, separators=(",", ":"))[:-1]
    return body + ',"layouts":[\n' + ",\n".join(rows) + "\n]}\n"


# Profile rows: (name, profile id, compute slices, memory slices, max instances, starts, base);
# None = not sourced. GPU rows: (key, products, profiles). Start positions by profile id as
# `nvidia-smi mig -lgipp` prints them ({starts}:memory slices); seen on A100-40GB, A100-80GB and
# H100 hardware (ids 15 and 20 not in the A100 outputs found; see SOURCE.txt). Not sourced for
# H200: its rows keep names, ids and instance counts (nvidia-smi mig -lgip) only.
_LGIPP_STARTS = {19: [0, 1, 2, 3, 4, 5, 6], 20: [0, 1, 2, 3, 4, 5, 6], 15: [0, 2, 4, 6],
                14: [0, 2, 4], 9: [0, 4], 5: [0], 0: [0]}


def _table(names, starts):
    ids = [19, 20, 15, 14, 9, 5, 0]
    compute = [1, 1, 1, 2, 3, 4, 7]
    memory = [1, 1, 2, 2, 4, 4, 8] if starts else [None] * 7
    instances = [7, 1, 4, 3, 2, 1, 1]
    base = [True, False, False, True, True, True, True]
    return [(n, i, c, m, k, (starts[i] if starts else None), b)
            for n, i, c, m, k, b in zip(names, ids, compute, memory, instances, base)]


PROFILE_TABLE = [
    ("a100-40gb", ["A100-SXM4-40GB", "A100-PCIE-40GB"],
     _table(["1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"], _LGIPP_STARTS)),
    ("a100-80gb", ["A100-SXM4-80GB", "A100-PCIE-80GB"],
     _table(["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"], _LGIPP_STARTS)),
    ("h100-80gb", ["H100-SXM5-80GB", "H100-PCIE-80GB"],
     _table(["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"], _LGIPP_STARTS)),
    ("h200-141gb", ["H200-SXM5-141GB", "H200-NVL-141GB"],
     _table(["1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"], None)),
]


def derive_layouts(profiles):
    """(maximal placements, layouts, layouts_all) over the base profiles; None if unsourced."""
    base = [p for p in profiles if p[6]]
    if any(p[5] is None or p[3] is None for p in base):
        return None, None, None
    pl = [(name, start, comp, frozenset(range(start, start + mem)))
          for name, _, comp, mem, _, starts, _ in base for start in starts]
    sets = []

    def rec(i, used, chosen):
        if i == len(pl):
            if chosen:
                sets.append(tuple(chosen))
            return
        rec(i + 1, used, chosen)
        if not pl[i][3] & used:
            chosen.append(i)
            rec(i + 1, used | pl[i][3], chosen)
            chosen.pop()

    rec(0, frozenset(), [])

    def multiset(s):
        return tuple(sorted((pl[i][2] for i in s), reverse=True))

    def maximal(s):
        used = frozenset().union(*(pl[i][3] for i in s))
        return all(pl[j][3] & used for j in range(len(pl)) if j not in s)

    def order(m):
        return (-sum(m), [-x for x in m])

    maxi = sorted((s for s in sets if maximal(s)),
                  key=lambda s: (order(multiset(s)), [pl[i][1] for i in s], [pl[i][0] for i in s]))
    placements = [[[pl[i][0], pl[i][1]] for i in sorted(s, key=lambda i: pl[i][1])] for s in maxi]
    layouts = sorted({multiset(s) for s in maxi}, key=order)
    every = sorted({multiset(s) for s in sets}, key=order)
    return placements, [list(m) for m in layouts], [list(m) for m in every]


def profiles_doc():
    j = lambda o: json.dumps(o, separators=(",", ":"))
    out = ['{"format":"stsfair-mig-profiles/1",',
           '"note":' + j("GPU-instance profiles: compute = compute slices (of 7), memory = memory "
                         "slices (of 8), instances = most instances of the profile on one GPU, "
                         "starts = allowed start positions among the memory slices (nvidia-smi mig "
                         "-lgipp); an instance occupies memory slices [start, start+memory); "
                         "instances are compatible when those ranges do not overlap; null = not "
                         "sourced. base = the profile used for each compute size when deriving "
                         "layouts. maximal_placements: sets of base instances (profile, start) to "
                         "which no base instance can be added; layouts: their distinct multisets "
                         "of compute slices; layouts_all: all multisets reachable. Derived by "
                         "scripts/vendor-miso.py; sources in SOURCE.txt") + ",",
           '"gpus":[']
    gpus = []
    for key, products, profiles in PROFILE_TABLE:
        placements, layouts, every = derive_layouts(profiles)
        rows = [j({"name": n, "id": i, "compute": c, "memory": m, "instances": k, "starts": st,
                   "base": b}) for n, i, c, m, k, st, b in profiles]
        g = ['{"gpu":' + j(key) + ',"products":' + j(products)
             + ',"compute_slices":7,"memory_slices":8,',
             '"profiles":[\n' + ",\n".join(rows) + "],"]
        if placements is None:
            g.append('"maximal_placements":null,\n"layouts":null,\n"layouts_all":null}')
        else:
            g.append('"maximal_placements":[\n' + ",\n".join(j(p) for p in placements) + "],")
            g.append('"layouts":' + j(layouts) + ",")
            g.append('"layouts_all":' + j(every) + "}")
        gpus.append("\n".join(g))
    out.append(",\n".join(gpus))
    out.append("]}")
    return "\n".join(out) + "\n"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("path", help="MISO checkout folder or git directory")
    p.add_argument("--rev", default="HEAD", help="revision, for a git directory (default HEAD)")
    p.add_argument("--out", default=os.path.join(here, "..", "crates", "costs", "data", "miso-mig"))
    p.add_argument("--check", action="store_true", help="compare with --out instead of writing")
    a = p.parse_args()
    src = Source(a.path, a.rev)
    outputs = {"a100_mig_latency.json": latency_doc(src), "a100_layouts_miso.json": layouts_doc(src),
               "mig_profiles.json": profiles_doc()}
    differ = False
    for name, text in outputs.items():
        target = os.path.join(a.out, name)
        if a.check:
            try:
                with open(target, encoding="utf-8") as f:
                    same = f.read() == text
            except FileNotFoundError:
                same = False
            print(("same    " if same else "DIFFERS ") + target)
            differ |= not same
        else:
            os.makedirs(a.out, exist_ok=True)
            with open(target, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            print("wrote " + target)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
