"""The library's round policy (`stsfair.StsPolicy`) driven over a Gavel trace: jobs arrive at the
trace's times, every round is planned, each job runs at what the measured pairs give it beside its
co-runners (the plan's `composed` throughputs), the realized round is reported, and jobs leave
when their steps are done. Prints the mean job completion time and the policy's planning time.

    python examples/python/gavel_trace_policy.py [--jobs 60] [--gpus 4] [--trace FILE]

Needs the `stsfair` package (`pip install ./python`).
"""

import argparse
import pathlib

import stsfair

TRACE = pathlib.Path(__file__).resolve().parents[2] / "crates/sim/data/gavel-ref/seed0-rate5-36x3.trace"


def read_trace(path, limit):
    """(model, steps, scale factor, weight, arrival seconds) of the first `limit` jobs."""
    jobs = []
    for line in pathlib.Path(path).read_text().splitlines()[:limit]:
        f = line.split("\t")
        jobs.append((f[0], int(f[5]), int(f[6]), float(f[7]), float(f[9])))
    return jobs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=60)
    ap.add_argument("--gpus", type=int, default=4, help="GPUs of each of v100, p100, k80")
    ap.add_argument("--trace", default=str(TRACE))
    ap.add_argument("--round-seconds", type=float, default=360.0)
    args = ap.parse_args()

    gavel = stsfair.gavel_throughputs(0)
    by_model = {}
    for slug in gavel.job_types:
        t = gavel.job_type(slug)
        by_model[(t["model"], t["scale_factor"])] = slug
    cluster = [("v100", args.gpus), ("p100", args.gpus), ("k80", args.gpus)]
    policy = stsfair.StsPolicy(cluster, gavel)

    jobs = read_trace(args.trace, args.jobs)
    steps_left = {}
    arrived_at = {}
    done_at = {}
    now, nxt = 0.0, 0
    while len(done_at) < len(jobs):
        while nxt < len(jobs) and jobs[nxt][4] <= now:
            model, steps, scale, weight, arrival = jobs[nxt]
            slug = by_model[(model, scale)]
            policy.job_arrived(now, nxt, slug, weight=weight, arrival=arrival, steps=steps)
            steps_left[nxt], arrived_at[nxt] = steps, arrival
            nxt += 1
        plan = policy.plan(now)
        if not plan["runs"]:
            now = jobs[nxt][4] if nxt < len(jobs) else now + args.round_seconds
            continue
        realized = {}
        for run in plan["runs"]:
            thr = run["composed"]
            steps = min(steps_left[run["job"]], thr * args.round_seconds)
            realized[run["job"]] = (thr, steps)
        policy.round_realized(args.round_seconds, realized)
        now += args.round_seconds
        for job, (_, steps) in realized.items():
            steps_left[job] -= steps
            if steps_left[job] <= 0:
                done_at[job] = now
                policy.job_finished(job)
    jct = [(done_at[j] - arrived_at[j]) / 3600 for j in done_at]
    print(f"{len(jct)} jobs, mean JCT {sum(jct) / len(jct):.2f} h, "
          f"planning {policy.solver_seconds:.2f} s")


if __name__ == "__main__":
    main()
