#!/usr/bin/env bash
# The DP driver's regime switches, each turned off alone (src/solvers/dp/switches.rs), on the
# shipped rounds (instances/, instances/hard/), the test rounds (tests/data/), rounds of ties
# (`ties`: generated rounds of 23-56 jobs on 4 types, and shipped and test rounds of 25-1,000
# jobs, with each job's times all set to its fastest, so that every slot of a job is worth the
# same) and every problem the fair round mechanism solves in 20 rounds on generated Gavel
# clusters, the forced jobs priced by the long-run LP as `stsfair rounds` prices them: 1,000 and
# 10,000 jobs, single-GPU and mixed, seeds 1-3. Prints a table per family and the summary of
# docs/performance.md ("The driver's switches"). About 5 minutes on an idle 2-core machine.
#
#   benches/switches.sh            # OUT=/tmp/stsfair-switches holds the generated rounds
#   RUNS=5 benches/switches.sh     # median of 5 solves per round (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null
OUT=${OUT:-/tmp/stsfair-switches}
mkdir -p "$OUT"
cargo build --release -p stsfair-cli
BIN=target/release/stsfair
files=()
for seed in 1 2 3; do
  for multi in "" "--multi"; do
    for size in 1000 10000; do
      file="$OUT/gavel${multi:+-multi}-$size-s$seed.json"
      "$BIN" gen --gavel $multi --jobs "$size" --count $((size / 10)) --seed "$seed" \
        --out "$file" >/dev/null
      files+=("$file")
    done
  done
done
mkdir -p "$OUT/ties"
for seed in $(seq 1 12); do
  "$BIN" gen --jobs $((20 + 3 * seed)) --types 4 --count 2 --seed "$seed" \
    --out "$OUT/ties/g$seed.json" >/dev/null
done
cp instances/gavel-8x3-40.json instances/gavel-36x3-300.json instances/synth-*.json \
  tests/data/dense-finish-25.json tests/data/gavel-12x3-150.json "$OUT/ties/"
python3 - "$OUT/ties" <<'PY'
import json, pathlib, sys
for path in pathlib.Path(sys.argv[1]).glob("*.json"):
    doc = json.loads(path.read_text())
    doc["name"] += "-ties"
    for job in doc["jobs"]:
        fastest = min(t["sec_per_iter"] for t in job["times"])
        for t in job["times"]:
            t["sec_per_iter"] = fastest
    path.write_text(json.dumps(doc))
PY
rounds=$(IFS=:; echo "${files[*]}")
STSFAIR_SWITCH_DIR="instances:tests/data:$OUT/ties" STSFAIR_SWITCH_ROUNDS="$rounds" \
  STSFAIR_SWITCH_ROUND_COUNT=20 STSFAIR_SWITCH_RUNS="${RUNS:-3}" \
  cargo test --release -p stsfair --features highs --lib dp::switches -- --ignored --nocapture
