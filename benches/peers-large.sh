#!/usr/bin/env bash
# benches/peers.py on larger Gavel-derived rounds than the shipped ones: 1,000, 3,000 and 10,000
# jobs (`stsfair gen --gavel`, 3 GPU types of 100, 300 and 1,000 GPUs, seed 1), each once with
# single-GPU jobs only (gavel-J-s1) and once with distributed jobs (gavel-multi-J-s1: `--multi`,
# Gavel's mix of scale factors), generated into $OUT (never the repository), with their manifest
# (`examples/manifest.rs --no-ilp`: the DP's answers, checked by `verify`; one exact ILP solve of
# the 10,000-job round takes minutes).
#
# usage: benches/peers-large.sh [peers.py flags]   (from the repo root, after `cargo build --release`)
#   BIN=path/to/stsfair overrides the binary, OUT (default /tmp/stsfair-peers-large) the folder,
#   PY (default python3) the Python that has benches/requirements.txt installed.
#   e.g. PY=/tmp/peers/bin/python benches/peers-large.sh --runs 3 --time-limit 60
#   (peers.py's --only NAMES picks rounds, e.g. --only gavel-multi-1000-s1,gavel-multi-3000-s1)
set -eu
BIN=${BIN:-target/release/stsfair}
OUT=${OUT:-/tmp/stsfair-peers-large}
PY=${PY:-python3}
mkdir -p "$OUT"
for spec in "1000 100" "3000 300" "10000 1000"; do
  read -r jobs count <<< "$spec"
  "$BIN" gen --gavel --jobs "$jobs" --count "$count" --seed 1 \
    --name "gavel-$jobs-s1" --out "$OUT/gavel-$jobs-s1.json" > /dev/null
  "$BIN" gen --gavel --multi --jobs "$jobs" --count "$count" --seed 1 \
    --name "gavel-multi-$jobs-s1" --out "$OUT/gavel-multi-$jobs-s1.json" > /dev/null
done
cargo run --release --features highs --example manifest -- "$OUT" --no-ilp
"$PY" benches/peers.py --bin "$BIN" --instances "$OUT" "$@"
