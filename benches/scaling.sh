#!/usr/bin/env bash
# The scaling table of docs/performance.md: generates instances (into /tmp, never the repo) and
# times `dp` against `ilp` with `stsfair bench` (median of 3 runs each).
#
# usage: benches/scaling.sh [small|large|all]   (run from the repo root after
#        `cargo build --release`; BIN=path/to/stsfair overrides the binary)
#   small: shipped instances + generated rounds of <= 3,000 jobs, dp and ilp (--time-limit 120)
#   large: generated rounds of 10,000 and 100,000 jobs (synthetic and Gavel-derived), dp only (the ilp takes ~3 min on one
#          10,000-job Gavel round), each bench call cut at DP_LIMIT seconds (default
#          600), plus dp's peak memory (/usr/bin/time -f %M, KiB) on each
# CSV files go to $OUT (default /tmp/stsfair-scaling).
set -u
BIN=${BIN:-target/release/stsfair}
OUT=${OUT:-/tmp/stsfair-scaling}
DP_LIMIT=${DP_LIMIT:-600}
WHAT=${1:-all}
mkdir -p "$OUT/small" "$OUT/large"

# synth JOBS TYPES tight|loose DIR: capacity in units is jobs/2 (tight: about half the jobs can
# run, one unit each) or 4*jobs (loose: every job can have a whole GPU).
synth() {
  local jobs=$1 types=$2 cap=$3 dir=$4 count
  if [ "$cap" = tight ]; then count=$(( (jobs / 8 + types - 1) / types )); else count=$(( (jobs + types - 1) / types )); fi
  "$BIN" gen --jobs "$jobs" --types "$types" --count "$count" --seed 1 \
    --name "synth-${types}t-${cap}-${jobs}" --out "$OUT/$dir/synth-${types}t-${cap}-${jobs}.json"
}

# identical JOBS TYPES DIR: one generated job copied JOBS times (tight capacity), the case where
# ties are everywhere and aggregation of identical jobs matters.
identical() {
  local jobs=$1 types=$2 dir=$3 f="$OUT/$3/ident-${2}t-${1}.json"
  synth "$jobs" "$types" tight "$dir" 2>/dev/null
  python3 - "$OUT/$dir/synth-${types}t-tight-${jobs}.json" "$f" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
first = d["jobs"][0]
d["name"] = sys.argv[2].rsplit("/", 1)[-1][:-5]
d["jobs"] = [dict(first, id=f"j{i}") for i in range(len(d["jobs"]))]
json.dump(d, open(sys.argv[2], "w"))
PY
  rm "$OUT/$dir/synth-${types}t-tight-${jobs}.json"
}

if [ "$WHAT" != large ]; then
  synth 100 1 tight small; synth 100 4 loose small
  synth 1000 2 tight small; synth 1000 3 loose small; synth 1000 4 tight small
  synth 3000 3 tight small; synth 3000 4 loose small
  identical 1000 3 small
  "$BIN" bench instances "$OUT/small" --solvers dp,ilp --runs 3 --time-limit 120 --csv "$OUT/small.csv"
fi

if [ "$WHAT" != small ]; then
  "$BIN" gen --gavel --jobs 10000 --count 1000 --seed 1 --out "$OUT/large/gavel-1000x3-10000.json"
  # Gavel-derived rounds at 100,000 jobs on 10,000 GPUs per type: single-GPU jobs and the
  # Gavel's mix of 1/2/4/8 workers.
  "$BIN" gen --gavel --jobs 100000 --count 10000 --seed 1 --out "$OUT/large/gavel-10000x3-100000.json"
  "$BIN" gen --gavel --multi --jobs 100000 --count 10000 --seed 1 --name gavel-multi-10000x3-100000 \
    --out "$OUT/large/gavel-multi-10000x3-100000.json"
  synth 10000 1 tight large; synth 10000 3 loose large; synth 10000 4 tight large
  identical 10000 3 large
  synth 100000 2 loose large; synth 100000 4 tight large
  for f in "$OUT"/large/*.json; do
    echo "== $f"
    timeout "$DP_LIMIT" /usr/bin/time -f "peak_kib %M" "$BIN" bench "$f" --solvers dp --runs 3 \
      --csv "$OUT/large-$(basename "$f" .json).csv" || echo "dp: no answer within ${DP_LIMIT} s (exit $?)"
  done
fi
