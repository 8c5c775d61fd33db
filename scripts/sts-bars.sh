#!/usr/bin/env bash
# sts against gavel-mmf-ss, seed by seed, on a workload of scripts/workloads.sh (docs/results.md,
# "Saturation and overload: sts against gavel-mmf-ss", and "Another dataset" for `synthetic`).
#
# Usage: scripts/sts-bars.sh ROW [OUT_DIR]       ROW: a row of scripts/workloads.sh
# Settings (environment): SEEDS (default: saturation "0 ... 23", overload "0 ... 19", multi
# "0 ... 17", no-k80 "0 ... 5", synthetic "0 ... 3", the other rows "0 1"), PARALLEL (simulations at once, default 2), STSFAIR (the
# binary), EXTRA (more `simulate` flags for the sts runs only, e.g. EXTRA="--sts-paired-rounds
# off"; give each setting its own OUT_DIR).
# Every run is one `stsfair simulate --json` process whose JSON line is kept in OUT_DIR/runs/, so
# an interrupted sweep resumes where it stopped (delete OUT_DIR to redo). Prints a markdown
# table: per seed JCT h / makespan h / worst rho of each policy, gavel-mmf-ss's JCT over sts's,
# and whether sts meets all three clauses (JCT >= 1.1x, makespan and worst rho no worse); then
# the means. Costs, two runs at a time on two cores: a saturation run of sts takes about 20 s
# (gavel-mmf-ss about 35 s), an overload run 20-40 s, a multi-GPU run about 2 minutes; the full
# saturation row is about 15 minutes.
# Needs a release build (`cargo build --release`) and jq.
set -euo pipefail
cd "$(dirname "$0")/.."
ROW=${1:?usage: scripts/sts-bars.sh saturation|overload|multi|past-saturation|no-k80|synthetic [OUT_DIR]}
BIN=${STSFAIR:-${CARGO_TARGET_DIR:-target}/release/stsfair}
OUT=${2:-target/sts-bars-$ROW}
PARALLEL=${PARALLEL:-2}
EXTRA=${EXTRA:-}
source scripts/workloads.sh
ARGS=$(workload_args "$ROW") || exit 2
case "$ROW" in
  saturation) DEFAULT_SEEDS=$(seq -s ' ' 0 23) ;;
  overload) DEFAULT_SEEDS=$(seq -s ' ' 0 19) ;;
  multi) DEFAULT_SEEDS=$(seq -s ' ' 0 17) ;;
  no-k80) DEFAULT_SEEDS=$(seq -s ' ' 0 5) ;;
  synthetic) DEFAULT_SEEDS=$(seq -s ' ' 0 3) ;;
  *) DEFAULT_SEEDS="0 1" ;;
esac
SEEDS=${SEEDS:-$DEFAULT_SEEDS}
mkdir -p "$OUT/runs"

run_one() {
  local seed=$1 policy=$2
  local file="$OUT/runs/$seed-$policy.json" extra=""
  [ -s "$file" ] && return 0
  [ "$policy" = sts ] && extra=$EXTRA
  # shellcheck disable=SC2086
  "$BIN" simulate $ARGS --seed "$seed" --policy "$policy" --json $extra \
    | jq -c --argjson seed "$seed" '. + {seed: $seed}' > "$file.tmp"
  mv "$file.tmp" "$file"
  echo "done: $ROW seed $seed, $policy" >&2
}
export -f run_one
export BIN OUT ARGS EXTRA ROW

for seed in $SEEDS; do for p in sts gavel-mmf-ss; do echo "$seed $p"; done; done \
  | xargs -P "$PARALLEL" -L 1 bash -c 'run_one "$@"' _

echo "| seed | gavel-mmf-ss | sts | gavel-mmf-ss JCT / sts JCT | all three clauses |"
echo "|---|---|---|---|---|"
cat "$OUT"/runs/*.json | jq -rs '
  def r2: . * 100 | round / 100;
  def r1: . * 10 | round / 10;
  def r3: . * 1000 | round / 1000;
  group_by(.seed) | map({seed: .[0].seed,
      s: (map(select(.policy == "sts")) | first), g: (map(select(.policy == "gavel-mmf-ss")) | first)})
  | map(select(.s != null and .g != null)) | sort_by(.seed) as $rows
  | ($rows[] | . as $x | ($x.g.avg_jct_h / $x.s.avg_jct_h) as $q
      | "| \($x.seed) | \($x.g.avg_jct_h | r2) / \($x.g.makespan_h | r1) / \($x.g.ftf_rho_max | r2) | \($x.s.avg_jct_h | r2) / \($x.s.makespan_h | r1) / \($x.s.ftf_rho_max | r2) | \($q | r3)x | \(if $q >= 1.1 and $x.s.makespan_h <= $x.g.makespan_h and $x.s.ftf_rho_max <= $x.g.ftf_rho_max then "yes" else "no" end) |"),
    ($rows | (map(.g.avg_jct_h) | add / length) as $gj | (map(.s.avg_jct_h) | add / length) as $sj
      | (map(.g.makespan_h) | add / length) as $gm | (map(.s.makespan_h) | add / length) as $sm
      | (map(select(.g.avg_jct_h / .s.avg_jct_h >= 1.1 and .s.makespan_h <= .g.makespan_h and .s.ftf_rho_max <= .g.ftf_rho_max)) | length) as $ok
      | "| mean | \($gj | r2) / \($gm | r1) | \($sj | r2) / \($sm | r1) | \($gj / $sj | r3)x | \($ok) of \(length) |")'
