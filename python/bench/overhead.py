"""Call overhead of `stsfair.solve` from Python against the CLI, on one instance.

    python python/bench/overhead.py [INSTANCE] [--runs 9] [--cli target/release/stsfair]

Prints medians over the runs of:
- `cli stats.seconds`: the solver's own time as the CLI reports it (`solve --json`);
- `cli wall`: the whole `stsfair solve FILE --json` process: read and parse the file, solve,
  write the document (and the process start);
- `py solve(path)`: `stsfair.solve(path)` in this process: the same reading, parsing, solving
  and writing, plus `json.loads` of the document into dicts;
- `py solve(dict)`: the same from an already loaded dict (adds `json.dumps`).
The issue's bound: `py solve(path)` within 1.5x of `cli wall` (the CLI's stats.seconds plus the
JSON conversion it does too). Exit status 1 when it is not.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import stsfair

REPO = Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("instance", nargs="?", default=str(REPO / "instances" / "gavel-250x3-3000.json"))
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--solver", default="dp")
    ap.add_argument("--cli", default=str(REPO / "target" / "release" / "stsfair"))
    args = ap.parse_args()
    path = Path(args.instance)
    doc = json.loads(path.read_text())

    cli_stats, cli_wall, py_path, py_stats, py_dict = [], [], [], [], []
    for _ in range(args.runs):
        t = time.perf_counter()
        out = subprocess.run([args.cli, "solve", str(path), "--json", "--solver", args.solver],
                             capture_output=True, text=True, check=True).stdout
        cli_wall.append(time.perf_counter() - t)
        cli_stats.append(json.loads(out)["stats"]["seconds"])

        t = time.perf_counter()
        sol = stsfair.solve(path, solver=args.solver)
        py_path.append(time.perf_counter() - t)
        py_stats.append(sol["stats"]["seconds"])

        t = time.perf_counter()
        stsfair.solve(doc, solver=args.solver)
        py_dict.append(time.perf_counter() - t)

    med = statistics.median
    rows = [
        ("cli stats.seconds", med(cli_stats)),
        ("cli wall", med(cli_wall)),
        ("py stats.seconds", med(py_stats)),
        ("py solve(path)", med(py_path)),
        ("py solve(dict)", med(py_dict)),
    ]
    print(f"{path.name}: {len(doc['jobs'])} jobs, solver {args.solver}, medians of {args.runs} runs")
    for name, seconds in rows:
        print(f"  {name:<18} {seconds * 1000:9.1f} ms")
    ratio = med(py_path) / med(cli_wall)
    ratio_dict = med(py_dict) / med(cli_wall)
    print(f"  solve(path) / cli wall = {ratio:.2f}; solve(dict) / cli wall = {ratio_dict:.2f} (bound 1.5)")
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
