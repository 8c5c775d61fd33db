#!/usr/bin/env bash
# Many seeds of the Gavel-derived rounds, for the tail of the DP's times (docs/performance.md,
# "Where the targets stand"): a handful of seeds can say the targets are met where many more
# find the rounds where they are not. Generates the rounds (into $OUT, never the repo)
# and times them with `stsfair bench`: dp against ilp (medians of 3) at 1,000 and 3,000 jobs,
# dp alone (median of 5) at 10,000 jobs, where one ilp solve takes minutes.
#
# usage: benches/seeds.sh   (from the repo root after `cargo build --release`)
#   BIN=path/to/stsfair overrides the binary; OUT (default /tmp/stsfair-seeds) takes the
#   instances and the CSV files; SEEDS_1K, SEEDS_3K, SEEDS_10K ("FIRST LAST", defaults
#   "16 60", "6 25", "9 24").
# About 15 minutes on the 2-core machine, most of it the ilp at 3,000 jobs (2-24 s a solve).
set -eu
BIN=${BIN:-target/release/stsfair}
OUT=${OUT:-/tmp/stsfair-seeds}

# rounds JOBS GPUS_PER_TYPE "FIRST LAST" DIR: `gen --gavel` rounds, one per seed.
rounds() {
  local jobs=$1 count=$2 dir="$OUT/$4" first last seed
  read -r first last <<< "$3"
  mkdir -p "$dir"
  for seed in $(seq "$first" "$last"); do
    "$BIN" gen --gavel --jobs "$jobs" --count "$count" --seed "$seed" \
      --name "gavel-$jobs-s$seed" --out "$dir/gavel-$jobs-s$seed.json" > /dev/null
  done
}

rounds 1000 100 "${SEEDS_1K:-16 60}" 1k
rounds 3000 300 "${SEEDS_3K:-6 25}" 3k
rounds 10000 1000 "${SEEDS_10K:-9 24}" 10k
"$BIN" bench "$OUT/1k" --solvers dp,ilp --runs 3 --csv "$OUT/1k.csv"
"$BIN" bench "$OUT/3k" --solvers dp,ilp --runs 3 --csv "$OUT/3k.csv"
"$BIN" bench "$OUT/10k" --solvers dp --runs 5 --csv "$OUT/10k.csv"
