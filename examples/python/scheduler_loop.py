"""A complete scheduler loop in Python: jobs drawn from Gavel's measured throughputs arrive,
every round is planned, "run" (each job realizes its planned throughput with some noise) and
reported, jobs leave when their iterations are done, and at the end each job's fairness (its
mean sigma over the rounds it was active, over lambda) is printed.

    python examples/python/scheduler_loop.py [--rounds 30] [--seed 1]

Needs the `stsfair` package (`pip install ./python`).
"""

import argparse
import random

import stsfair


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--round-seconds", type=float, default=360.0)
    args = ap.parse_args()
    rng = random.Random(args.seed)

    # A small heterogeneous cluster, no jobs yet: 2 V100s and 2 K80s of 4 units (MPS quarters).
    cluster = {
        "format": "stsfair/1",
        "name": "python-example",
        "fairness": {"lambda": 1.0, "max_debt": 1.0, "credit": 1.0},
        "gpu_types": [
            {"name": "v100", "count": 2, "units": 4, "slot_sizes": [1, 2, 4]},
            {"name": "k80", "count": 2, "units": 4, "slot_sizes": [1, 2, 4]},
        ],
        "jobs": [],
    }
    lam = cluster["fairness"]["lambda"]
    scheduler = stsfair.RoundScheduler(cluster, solver="dp")

    # Single-GPU Gavel job types that run on every GPU type of the cluster; times as
    # `stsfair gen --gavel` derives them (measured whole-GPU and shared throughputs).
    gavel = stsfair.gavel_throughputs()
    kinds = [
        k for k in gavel.job_types
        if gavel.job_type(k)["scale_factor"] == 1
        and all(gavel.solo(g["name"], k) for g in cluster["gpu_types"])
    ]

    remaining = {}  # job id -> iterations left
    sigmas = {}  # job id -> sigma of every round it was active
    arrived = 0
    for r in range(args.rounds):
        # Arrivals: a burst in the first rounds, then one in most rounds: the cluster is
        # oversubscribed, so jobs share GPUs and take turns.
        for _ in range(6 if r < 3 else int(rng.random() < 0.7)):
            arrived += 1
            kind = rng.choice(kinds)
            job_id = f"job-{arrived:03d}-{kind}"
            times = gavel.job_times(kind, cluster["gpu_types"])
            scheduler.add_job({"id": job_id, "times": times})
            # Work for about 3 to 12 rounds on a whole V100.
            per_round = gavel.solo("v100", kind) * args.round_seconds
            remaining[job_id] = per_round * rng.uniform(3.0, 12.0)
            sigmas[job_id] = []

        plan = scheduler.plan()
        # "Run" the round: each placed job realizes its planned throughput within +-10 %.
        realized = {
            j["id"]: j["throughput"] * rng.uniform(0.9, 1.1)
            for j in plan["jobs"] if j["gpu"] is not None
        }
        for service in scheduler.report(realized):
            if service["sigma"] is not None:
                sigmas[service["job"]].append(service["sigma"])
        running = sum(1 for j in plan["jobs"] if j["gpu"] is not None)
        print(f"round {r:2d}: {len(plan['jobs']):2d} jobs, {running:2d} running, "
              f"objective {plan['objective']:7.3f}, relaxed {len(plan['relaxed'])}, "
              f"migrations {plan['placement']['migrations']}")

        for job_id, thr in realized.items():
            remaining[job_id] -= thr * args.round_seconds
            if remaining[job_id] <= 0:
                scheduler.remove_job(job_id)
                del remaining[job_id]

    print(f"\nfairness after {args.rounds} rounds (mean sigma / lambda, 1 = its equal share):")
    for job_id, s in sigmas.items():
        state = "done" if job_id not in remaining else "active"
        mean = sum(s) / len(s) / lam if s else float("nan")
        print(f"  {job_id:<32} {state:<6} {len(s):2d} rounds  {mean:6.3f}")


if __name__ == "__main__":
    main()
