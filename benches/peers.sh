#!/usr/bin/env bash
# The three peers' tables of docs/performance.md ("Peers"), from one command: the DP against
# HiGHS, CP-SAT and SCIP (benches/peers.py) on
#   1. the shipped library (instances/index.json), medians of 3 runs;
#   2. the hard rounds (instances/hard/index.json), medians of 15 runs, HiGHS and CP-SAT also
#      with 2 threads;
#   3. Gavel-derived rounds of 1,000, 3,000 and 10,000 jobs, single-GPU and distributed
#      (benches/peers-large.sh, generated into /tmp), medians of 3 runs.
# Every solve has a 60 s limit. The peers' Python packages (benches/requirements.txt) are
# installed into a virtual environment at $VENV (default /tmp/stsfair-peers) on the first call.
# About 18 minutes on an idle 2-core machine (the ratios are of wall times: keep it idle).
#
# usage: benches/peers.sh   (from the repo root; builds the release binary)
#   PY=path/to/python skips the virtual environment (it must have the requirements).
set -eu
cd "$(dirname "$0")/.."
if [ -z "${PY:-}" ]; then
  VENV=${VENV:-/tmp/stsfair-peers}
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet -r benches/requirements.txt
  fi
  PY=$VENV/bin/python
fi
export PY
cargo build --release --quiet
echo "## The shipped library (instances/index.json)"
"$PY" benches/peers.py --runs 3 --time-limit 60
echo
echo "## The hard rounds (instances/hard/index.json)"
"$PY" benches/peers.py --instances instances/hard --runs 15 --time-limit 60 --threads-multi 2
echo
echo "## Larger Gavel-derived rounds (benches/peers-large.sh)"
benches/peers-large.sh --runs 3 --time-limit 60
