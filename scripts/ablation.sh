#!/usr/bin/env bash
# The ablation of sts's rules on a workload of scripts/workloads.sh (docs/results.md, "Every
# rule, one at a time"): sts with its defaults, and sts with one rule turned off, the others at
# their defaults.
#
# Usage: scripts/ablation.sh ROW [OUT_DIR]       ROW: a row of scripts/workloads.sh
# Settings (environment): SEEDS (default "0 1 2 3 4 5"), PARALLEL (simulations at once, default
# 2), STSFAIR (the binary), RULES (the rules to turn off, default all of them, names as below).
# Every run is one `stsfair simulate --json` process whose JSON line is kept in OUT_DIR/runs/, so
# an interrupted sweep resumes where it stopped (delete OUT_DIR to redo). Prints a markdown
# table: per rule, its flag, and the means over the seeds of JCT, makespan and worst rho with
# the rule off, each over the same mean with every rule on (above 1: the rule helps). Costs, two
# runs at a time on two cores: a saturation run about 20 s, an overload run 20-40 s, a multi-GPU
# run about 2 minutes; an overload run with `attained-weights` off runs over 30 minutes (equal
# shares leave thousands of jobs waiting in every round).
# Needs a release build (`cargo build --release`) and jq.
set -euo pipefail
cd "$(dirname "$0")/.."
ROW=${1:?usage: scripts/ablation.sh saturation|overload|multi|past-saturation|no-k80|synthetic [OUT_DIR]}
BIN=${STSFAIR:-${CARGO_TARGET_DIR:-target}/release/stsfair}
OUT=${2:-target/ablation-$ROW}
PARALLEL=${PARALLEL:-2}
SEEDS=${SEEDS:-0 1 2 3 4 5}
source scripts/workloads.sh
ARGS=$(workload_args "$ROW") || exit 2
# Each rule and the flags that turn it off (the others stay at their defaults).
declare -A OFF=(
  [defaults]=""
  [attained-weights]="--sts-weights trace"
  [size-exponent]="--sts-size-exponent 0"
  [pairing-step]="--sts-pairing off"
  [pairing-types]="--sts-pairing-types none"
  [second-stage]="--sts-second-stage off"
  [second-stage-confined]="--sts-second-stage-rounds all"
  [crowding]="--sts-crowding off"
  [crowding-hold]="--sts-crowding-hold off"
  [paired-rounds]="--sts-paired-rounds off"
  [promotion]="--sts-promotion off"
  [critical]="--sts-critical off"
  [critical-after]="--sts-critical-after 0"
)
ORDER="attained-weights size-exponent pairing-step pairing-types second-stage second-stage-confined crowding crowding-hold paired-rounds promotion critical critical-after"
RULES=${RULES:-$ORDER}
for r in $RULES; do
  [ -n "${OFF[$r]+x}" ] || { echo "unknown rule: $r (one of: $ORDER)" >&2; exit 2; }
done
mkdir -p "$OUT/runs"

run_one() {
  local seed=$1 rule=$2 flags=$3
  local file="$OUT/runs/$seed-$rule.json"
  [ -s "$file" ] && return 0
  # shellcheck disable=SC2086
  "$BIN" simulate $ARGS --seed "$seed" --policy sts --json $flags \
    | jq -c --argjson seed "$seed" --arg rule "$rule" '. + {seed: $seed, rule: $rule}' > "$file.tmp"
  mv "$file.tmp" "$file"
  echo "done: $ROW seed $seed, $rule" >&2
}
export -f run_one
export BIN OUT ARGS ROW

for seed in $SEEDS; do
  for r in defaults $RULES; do printf '%s\t%s\t%s\n' "$seed" "$r" "${OFF[$r]}"; done
done | xargs -P "$PARALLEL" -d '\n' -L 1 bash -c 'IFS=$'"'"'\t'"'"' read -r s r f <<< "$1"; run_one "$s" "$r" "$f"' _

echo "| rule off | flag | JCT off / on | makespan off / on | worst rho off / on | seeds |"
echo "|---|---|---|---|---|---|"
for r in $RULES; do
  cat "$OUT"/runs/*.json | jq -rs --arg rule "$r" --arg flag "${OFF[$r]}" --arg seeds "$SEEDS" '
    def r3: . * 1000 | round / 1000;
    def mean(f): map(f) | add / length;
    ($seeds | split(" ") | map(select(. != "") | tonumber)) as $want
    | map(select(.seed as $s | $want | index($s))) | group_by(.seed)
    | map({on: (map(select(.rule == "defaults")) | first), off: (map(select(.rule == $rule)) | first)})
    | map(select(.on != null and .off != null)) as $rows
    | if ($rows | length) == 0 then "| \($rule) | `\($flag)` | | | | 0 |" else
      "| \($rule) | `\($flag)` | \(($rows | mean(.off.avg_jct_h)) / ($rows | mean(.on.avg_jct_h)) | r3) | \(($rows | mean(.off.makespan_h)) / ($rows | mean(.on.makespan_h)) | r3) | \(($rows | mean(.off.ftf_rho_max)) / ($rows | mean(.on.ftf_rho_max)) | r3) | \($rows | length) |" end'
done
