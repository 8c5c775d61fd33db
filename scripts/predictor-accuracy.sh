#!/usr/bin/env bash
# The held-out accuracy table of docs/costs.md ("Held-out evaluation"): `stsfair predict-eval`
# on the bundled Gavel table, every split, --holdout 0.2, seeds 0-4 (SEEDS to change), with the
# default predictor (cold-start features) and the first one (--features pairwise). Prints, per
# split, the held-out pairs of the first seed and the worst MAPE over the seeds of each
# predictor and baseline, with the range of the default predictor's.
#
# Usage: scripts/predictor-accuracy.sh   (about a minute on two cores)
# Needs a release build (`cargo build --release`) and jq. Set STSFAIR to use another binary.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${STSFAIR:-${CARGO_TARGET_DIR:-target}/release/stsfair}
SEEDS=${SEEDS:-0 1 2 3 4}
first=${SEEDS%% *}

echo "| split | held-out pairs (seed $first) | first predictor (\`pairwise\`) | predictor (\`cold-start\`) | seeds $(echo "$SEEDS" | tr ' ' ',') range | global mean ratio | per-job mean ratio |"
echo "|---|---|---|---|---|---|---|"
for split in "per-type" "pair-all-types" "job" "job --reference-partners 3" "family" \
    "family --reference-partners 3"; do
  runs=""
  for s in $SEEDS; do
    for features in cold-start pairwise; do
      # shellcheck disable=SC2086
      runs+=$("$BIN" predict-eval --split $split --holdout 0.2 --seed "$s" --features "$features" --json \
        | jq -c --arg f "$features" '. + {features: $f}')$'\n'
    done
  done
  echo -n "$runs" | jq -rs --arg split "$split" --argjson first "$first" '
    def r4: . * 10000 | round / 10000;
    (map(select(.features == "cold-start"))) as $cold
    | (map(select(.features == "pairwise"))) as $pair
    | "| \($split) | \($cold | map(select(.seed == $first)) | first | .pairs_test) | \($pair | map(.mape) | max | r4) | **\($cold | map(.mape) | max | r4)** | \($cold | map(.mape) | min | r4)-\($cold | map(.mape) | max | r4) | \($cold | map(.baselines.global_mean_ratio) | max | r4) | \($cold | map(.baselines.per_job_mean_ratio) | max | r4) |"'
done
