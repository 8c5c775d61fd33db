#!/usr/bin/env python3
"""The DP and three MIP solvers side by side on a library of round instances.

For every instance listed in the library's manifest (index.json, docs/format.md), the DP (the
`stsfair` binary, `solve --json`) and the exported ILP (`stsfair export`, free MPS) solved by HiGHS
(highspy), CP-SAT (OR-Tools' model builder) and SCIP (PySCIPOpt). Each solver is asked to prove
optimality (gaps 0) within a time limit, single-threaded (and with --threads-multi N also with N
threads, where the solver offers it). Printed per instance and solver: the median solve time over
the runs, the status, the optimum, the time ratio to the DP and whether the answer agrees with the
manifest (objectives within 1e-9 relative, or 1e-6 for CP-SAT, which scales a fractional
objective to integers: see docs/performance.md, "Peers").

Timing is the same for all: the solve alone, model reading and building excluded. The DP's time
is its solution's stats.seconds (deriving the round problem from the parsed instance, then
solving; the JSON is read before the clock starts). A MIP solver's time is the wall time of its
solve call (HiGHS run(), CP-SAT Solver.solve(), SCIP optimize()) on a model already read from the
MPS file, each run in a fresh process (python peers.py --worker ...). A run stopped by the time
limit is not repeated.

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install -r benches/requirements.txt
    cargo build --release
    /tmp/peers/bin/python benches/peers.py --runs 3 --time-limit 60
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS = ("highs", "cpsat", "scip")
# Objective agreement with the manifest (docs/format.md); CP-SAT approximates a fractional
# objective by an integer one scaled to about 1e-6 relative (its mip_wanted_precision).
TOLERANCE = {"dp": 1e-9, "highs": 1e-9, "scip": 1e-9, "cpsat": 1e-6}


# ---- worker: one solve of one model file by one solver, in a process of its own


def solve_highs(path, threads, limit):
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    if h.readModel(str(path)) != highspy.HighsStatus.kOk:
        raise RuntimeError(f"HiGHS cannot read {path}")
    for name, value in [
        ("mip_rel_gap", 0.0),
        ("mip_abs_gap", 0.0),
        ("mip_feasibility_tolerance", 1e-9),
        ("threads", threads),
        ("time_limit", float(limit)),
    ]:
        h.setOptionValue(name, value)
    start = time.perf_counter()
    h.run()
    seconds = time.perf_counter() - start
    status = h.getModelStatus()
    info = h.getInfo()
    has = info.primal_solution_status == 2  # kSolutionStatusFeasible
    objective = info.objective_function_value if has else None
    if status == highspy.HighsModelStatus.kOptimal:
        return "optimal", objective, seconds
    if status in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible):
        return "infeasible", None, seconds
    if status == highspy.HighsModelStatus.kTimeLimit:
        return ("timelimit" if not has else "feasible"), objective, seconds
    return h.modelStatusToString(status), objective, seconds


def solve_cpsat(path, threads, limit):
    from ortools.linear_solver.python import model_builder as mb

    model = mb.Model()
    if not model.import_from_mps_file(str(path)):
        raise RuntimeError(f"OR-Tools cannot read {path}")
    solver = mb.Solver("sat")
    solver.set_time_limit_in_seconds(float(limit))
    solver.set_solver_specific_parameters(
        f"num_workers:{threads},relative_gap_limit:0,absolute_gap_limit:0"
    )
    start = time.perf_counter()
    status = solver.solve(model)
    seconds = time.perf_counter() - start
    if status == mb.SolveStatus.OPTIMAL:
        return "optimal", solver.objective_value, seconds
    if status == mb.SolveStatus.INFEASIBLE:
        return "infeasible", None, seconds
    if status == mb.SolveStatus.FEASIBLE:
        return "feasible", solver.objective_value, seconds
    return str(status).split(".")[-1].lower(), None, seconds


def solve_scip(path, threads, limit):
    import pyscipopt

    if threads != 1:
        raise RuntimeError("SCIP solves a MIP on one thread")
    m = pyscipopt.Model()
    m.hideOutput()
    m.readProblem(str(path))
    m.setParam("limits/time", float(limit))
    m.setParam("limits/gap", 0.0)
    m.setParam("limits/absgap", 0.0)
    start = time.perf_counter()
    m.optimize()
    seconds = time.perf_counter() - start
    status = m.getStatus()
    objective = m.getObjVal() if m.getNSols() > 0 else None
    if status == "optimal":
        return "optimal", objective, seconds
    if status == "infeasible":
        return "infeasible", None, seconds
    if status == "timelimit":
        return ("feasible" if objective is not None else "timelimit"), objective, seconds
    return status, objective, seconds


def worker(solver, path, threads, limit):
    # Banners and logs go to stderr; stdout carries the one JSON answer.
    out = os.dup(1)
    os.dup2(2, 1)
    run = {"highs": solve_highs, "cpsat": solve_cpsat, "scip": solve_scip}[solver]
    status, objective, seconds = run(Path(path), threads, limit)
    os.write(out, (json.dumps({"status": status, "objective": objective, "seconds": seconds}) + "\n").encode())


# ---- driver


def run_dp(binary, instance, runs, limit):
    times, answer = [], None
    for _ in range(runs):
        p = subprocess.run(
            [binary, "solve", str(instance), "--json", "--time-limit", str(limit)],
            capture_output=True,
            text=True,
        )
        if p.returncode not in (0, 3):
            return {"status": "error", "objective": None, "seconds": None, "runs": 0, "error": p.stderr.strip()}
        doc = json.loads(p.stdout)
        times.append(doc["stats"]["seconds"])
        answer = doc
    return {
        "status": answer["status"],
        "objective": answer.get("objective"),
        "seconds": statistics.median(times),
        "runs": len(times),
    }


def run_peer(solver, model, threads, runs, limit):
    times, answer = [], None
    for _ in range(runs):
        cmd = [sys.executable, __file__, "--worker", solver, str(model), str(threads), str(limit)]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit * 3 + 120)
        except subprocess.TimeoutExpired:
            return {"status": "hung", "objective": None, "seconds": None, "runs": len(times)}
        if p.returncode != 0:
            tail = p.stderr.strip().splitlines()[-1:] or ["exit " + str(p.returncode)]
            return {"status": "error", "objective": None, "seconds": None, "runs": len(times), "error": tail[0]}
        answer = json.loads(p.stdout.strip().splitlines()[-1])
        # Whatever a solver calls a stop at the limit without proof (HiGHS overruns it in its
        # presolve; CP-SAT says NOT_SOLVED without a solution), it is the time limit.
        if answer["status"] not in ("optimal", "infeasible", "feasible") and answer["seconds"] >= limit:
            answer["status"] = "timelimit"
        times.append(answer["seconds"])
        if answer["status"] in ("timelimit", "feasible"):
            break  # a run stopped by the limit is not repeated
    return {
        "status": answer["status"],
        "objective": answer["objective"],
        "seconds": statistics.median(times),
        "runs": len(times),
    }


def agrees(result, entry, tolerance):
    """yes / NO / - (nothing proven) against the manifest entry."""
    if entry is None or result["status"] not in ("optimal", "infeasible", "feasible"):
        return "-"
    if result["status"] == "infeasible":
        return "yes" if entry["status"] == "infeasible" else "NO"
    if entry["status"] == "infeasible":
        return "NO"
    best, x = entry["objective"], result["objective"]
    close = abs(x - best) <= tolerance * max(1.0, abs(best))
    if result["status"] == "feasible":
        return "NO" if x > best and not close else "-"
    return "yes" if close else "NO"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=str(ROOT / "target/release/stsfair"), help="the stsfair binary")
    ap.add_argument("--instances", default=str(ROOT / "instances"), help="folder with index.json")
    ap.add_argument("--runs", type=int, default=5, help="runs per solver and instance (median)")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per solve")
    ap.add_argument("--solvers", default="highs,cpsat,scip", help="peers, comma-separated")
    ap.add_argument("--threads-multi", type=int, default=0, help="also run HiGHS and CP-SAT with N threads")
    ap.add_argument("--only", default="", help="instance names, comma-separated (default: all listed)")
    ap.add_argument("--json", help="also write every result to this file")
    args = ap.parse_args()
    if args.runs < 1 or not args.time_limit > 0:
        ap.error("--runs must be >= 1 and --time-limit > 0")
    peers = [s for s in args.solvers.split(",") if s]
    for s in peers:
        if s not in PEERS:
            ap.error(f"--solvers: {s!r} is not one of {', '.join(PEERS)}")
    folder = Path(args.instances)
    manifest = json.loads((folder / "index.json").read_text())
    entries = manifest["instances"]
    if args.only:
        wanted = set(args.only.split(","))
        entries = [e for e in entries if e["name"] in wanted]
    columns = [(s, 1) for s in peers]
    if args.threads_multi > 1:
        columns += [(s, args.threads_multi) for s in peers if s != "scip"]

    print(
        f"Median of {args.runs} runs of the solve alone (model read/build excluded; dp: stats.seconds, "
        f"which includes deriving the round problem), time limit {args.time_limit:g} s per solve, "
        f"a run stopped by it not repeated; ratio = solver / dp (proven answers only); manifest: agrees with index.json"
    )
    head = ["instance", "jobs", "binaries", "dp s"]
    for s, t in columns:
        name = s if t == 1 else f"{s} x{t}"
        head += [f"{name} status", f"{name} s", f"{name}/dp", f"{name} manifest"]
    head += ["optimum"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|")
    results = []
    mismatch = False
    with tempfile.TemporaryDirectory(prefix="stsfair-peers-") as work:
        for e in entries:
            instance = folder / e["file"]
            model = Path(work) / (Path(e["file"]).stem + ".mps")
            p = subprocess.run([args.bin, "export", str(instance), "--out", str(model)], capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"export {instance}: {p.stderr.strip()}")
            binaries = p.stderr.rsplit(": ", 1)[-1].split(" ")[0]
            dp = run_dp(args.bin, instance, args.runs, args.time_limit)
            row = {"instance": e["name"], "dp": dp}
            cells = [e["name"], f"{e['jobs']:,}", f"{int(binaries):,}", fmt_s(dp["seconds"])]
            mismatch |= agrees(dp, e, TOLERANCE["dp"]) == "NO"
            for s, t in columns:
                r = run_peer(s, model, t, args.runs, args.time_limit)
                key = s if t == 1 else f"{s}x{t}"
                row[key] = r
                a = agrees(r, e, TOLERANCE[s])
                mismatch |= a == "NO"
                # A ratio only between proven answers: a stopped run's time is only a lower bound.
                proven = r["status"] in ("optimal", "infeasible") and dp["status"] in ("optimal", "infeasible")
                ratio = r["seconds"] / dp["seconds"] if proven and r["seconds"] and dp["seconds"] else None
                status = r["status"] + ("" if r["runs"] == args.runs else f" ({r['runs']} run)")
                cells += [status, fmt_s(r["seconds"]), fmt_ratio(ratio), a]
                if r.get("error"):
                    print(f"  {e['name']}: {s}: {r['error']}", file=sys.stderr)
            cells.append("infeasible" if e["objective"] is None else f"{e['objective']:.9f}")
            print("| " + " | ".join(cells) + " |", flush=True)
            results.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 1 if mismatch else 0


def fmt_ratio(r):
    if r is None:
        return "-"
    return f"{r:.1f}" if r < 10 else f"{r:,.0f}"


def fmt_s(x):
    if x is None:
        return "-"
    if x < 0.01:
        return f"{x:.6f}"
    return f"{x:.4f}" if x < 10 else f"{x:.1f}"


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    else:
        sys.exit(main())
