# The three workloads of docs/results.md, sourced by scripts/sts-bars.sh, scripts/ablation.sh and
# scripts/wall-time.sh: `workload_args ROW` prints ROW's `stsfair simulate` flags, or fails
# naming the rows.
#   saturation  single-GPU jobs, 5.6 jobs/h, arrivals going on
#   overload    single-GPU jobs, 8 jobs/h, drained
#   multi       Gavel's multi-GPU mix, 2.6 jobs/h, arrivals going on
workload_args() {
  case "$1" in
    saturation) echo "--jobs 10000 --rate 5.6 --window 4000-4999" ;;
    overload) echo "--jobs 3000 --rate 8 --window 2000-2999" ;;
    multi) echo "--jobs 20000 --rate 2.6 --multi-gpu --window 4000-4999" ;;
    *) echo "unknown row: $1 (saturation, overload or multi)" >&2; return 2 ;;
  esac
}
