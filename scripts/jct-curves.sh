#!/usr/bin/env bash
# Gavel's JCT-versus-input-rate curves for our policies, with Gavel's published
# points beside them (crates/sim/data/gavel-ref/PUBLISHED-CURVES.md).
#
# Methodology as Gavel's continuous-jobs experiments: Poisson arrivals at RATE jobs/h, 5,000 jobs,
# metrics over jobs 4000-4999 (the steady state), cluster 36 V100 + 36 P100 + 36 K80,
# single-GPU jobs (rates 0.4-6.4) and Gavel's multi-GPU mix (--multi-gpu, rates 0.2-3.0), several
# seeds a point (one seed at saturation differs by tens of percent).
#
# Usage: scripts/jct-curves.sh [OUT_DIR]          (default: target/jct-curves)
# Settings (environment): SINGLE_RATES, MULTI_RATES (space-separated; empty: none), SEEDS (default "0 1 2"),
# POLICIES (default "sts gavel-mmf-ss gavel-mmf gandiva"), JOBS (5000), WINDOW (4000-4999),
# PARALLEL (simulations at once, default: the number of cores), STSFAIR (the binary), EXTRA
# (more `simulate` flags for every run, e.g. EXTRA="--sts-weights attained"; give each setting
# its own OUT_DIR).
# Every run is one `stsfair simulate --json` process whose JSON line is kept in OUT_DIR/runs/, so
# an interrupted sweep resumes where it stopped (delete OUT_DIR to redo). Then it writes
# OUT_DIR/curves.md (mean and min-max over the seeds per point, Gavel's points beside) and
# OUT_DIR/jct-single.svg, OUT_DIR/jct-multi.svg (drawn by the `jct_curves` example with plotters).
# Needs a release build (`cargo build --release`) and jq. The full sweep is about 170
# simulations, 1-2 hours on two cores; docs/baselines.md has the figures and the exact command.
# JOBS=5000 (the default) stops the arrivals at job 4,999, so the window drains with nothing
# arriving behind it. Gavel's simulator keeps jobs arriving until the window is done: to measure
# as it does, give JOBS=14000 (single-GPU) or JOBS=20000 (multi-GPU); a run stops when its window
# is done, so the extra jobs cost only their generation (docs/baselines.md, "Where arrivals go on").
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${STSFAIR:-${CARGO_TARGET_DIR:-target}/release/stsfair}
OUT=${1:-target/jct-curves}
SINGLE_RATES=${SINGLE_RATES-"0.4 2.0 4.0 4.8 5.2 5.6 6.0 6.4"}
MULTI_RATES=${MULTI_RATES-"0.2 1.0 2.0 2.4 2.6 3.0"}
SEEDS=${SEEDS:-"0 1 2"}
POLICIES=${POLICIES:-"sts gavel-mmf-ss gavel-mmf gandiva"}
JOBS=${JOBS:-5000}
WINDOW=${WINDOW:-4000-4999}
PARALLEL=${PARALLEL:-$(nproc)}
mkdir -p "$OUT/runs"

# One line per run: trace kind, rate, seed, policy.
plan() {
  for rate in $SINGLE_RATES; do for seed in $SEEDS; do for p in $POLICIES; do
    echo "single $rate $seed $p"; done; done; done
  for rate in $MULTI_RATES; do for seed in $SEEDS; do for p in $POLICIES; do
    echo "multi $rate $seed $p"; done; done; done
}

run_one() {
  local kind=$1 rate=$2 seed=$3 policy=$4
  local file="$OUT/runs/$kind-$rate-$seed-$policy.json"
  [ -s "$file" ] && return 0
  local multi=()
  [ "$kind" = multi ] && multi=(--multi-gpu)
  "$BIN" simulate --jobs "$JOBS" --rate "$rate" --seed "$seed" --window "$WINDOW" "${multi[@]}" \
    --policy "$policy" --json $EXTRA \
    | jq -c --arg kind "$kind" --argjson rate "$rate" --argjson seed "$seed" \
      '. + {trace: $kind, rate: $rate, seed: $seed}' > "$file.tmp"
  mv "$file.tmp" "$file"
  echo "done: $kind $rate jobs/h, seed $seed, $policy" >&2
}
export -f run_one
EXTRA=${EXTRA:-}
export BIN OUT JOBS WINDOW EXTRA

plan | xargs -P "$PARALLEL" -L 1 bash -c 'run_one "$@"' _

cat "$OUT"/runs/*.json > "$OUT/runs.jsonl"
cargo run --release -q -p stsfair-cli --example jct_curves -- \
  "$OUT/runs.jsonl" crates/sim/data/gavel-ref/PUBLISHED-CURVES.md "$OUT"
echo "wrote $OUT/curves.md, $OUT/jct-single.svg, $OUT/jct-multi.svg" >&2
