#!/usr/bin/env python3
"""Writes a synthetic throughputs file in Gavel's format (simulation_throughputs.json) with many
job types on one GPU type, for start-up measurements and runs on data other than Gavel's.

    scripts/gen-throughputs.py --families 7 --batches 8 --gpu v100 --measured 1.0 > t.json

Job types are FAMILY (batch size B) for every family and batch size, at the scale factors given
(--scale-factors 1,2,4,8). Solo throughputs fall with the batch size; a single-GPU pair keeps
ratios r(a|b), r(b|a) in [0.25, 0.95] of each job's solo throughput, drawn per pair. A fraction
--measured of the single-GPU pairs is written (the rest left unmeasured, for the predictor);
pairs of distributed job types are not written. Deterministic for --seed.
"""
import argparse
import json
import random
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--families", type=int, default=7)
    p.add_argument("--batches", type=int, default=8)
    p.add_argument("--gpu", default="v100")
    p.add_argument("--scale-factors", default="1")
    p.add_argument("--measured", type=float, default=1.0,
                   help="fraction of single-GPU pairs written, in [0, 1]")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.families < 1 or a.batches < 1 or not 0.0 <= a.measured <= 1.0:
        sys.exit("--families and --batches must be >= 1, --measured in [0, 1]")
    rng = random.Random(a.seed)
    sfs = [int(s) for s in a.scale_factors.split(",")]
    models = []
    for f in range(a.families):
        base = 2.0 + 30.0 * rng.random()
        for b in range(a.batches):
            batch = 2 ** (b + 3)
            models.append((f"Synth{f} (batch size {batch})", base * 16.0 / batch * (0.8 + 0.4 * rng.random())))
    rows = {}
    keys = {}
    for sf in sfs:
        for name, solo in models:
            keys[(name, sf)] = f"('{name}', {sf})"
            rows[keys[(name, sf)]] = {"null": solo * sf * (0.85 if sf > 1 else 1.0)}
    singles = [name for name, _ in models]
    solo1 = dict(models)
    for i, x in enumerate(singles):
        for y in singles[i:]:
            rx, ry = 0.25 + 0.7 * rng.random(), 0.25 + 0.7 * rng.random()
            if x == y:
                ry = rx
            if rng.random() >= a.measured:
                continue
            kx, ky = keys[(x, 1)], keys[(y, 1)]
            rows[kx][ky] = [solo1[x] * rx, solo1[y] * ry]
            rows[ky][kx] = [solo1[y] * ry, solo1[x] * rx]
    json.dump({a.gpu: rows}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
