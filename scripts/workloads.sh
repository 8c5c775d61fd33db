# The workloads of docs/results.md, sourced by scripts/sts-bars.sh, scripts/ablation.sh and
# scripts/wall-time.sh: `workload_args ROW` prints ROW's `stsfair simulate` flags, or fails
# naming the rows.
#   saturation       single-GPU jobs, 5.6 jobs/h, arrivals going on
#   overload         single-GPU jobs, 8 jobs/h, drained
#   multi            Gavel's multi-GPU mix, 2.6 jobs/h, arrivals going on
#   past-saturation  Gavel's multi-GPU mix, 3.0 jobs/h, arrivals going on (a run takes 12-22 min)
#   no-k80           single-GPU jobs, 5.6 jobs/h, arrivals going on, on Gavel's table with its
#                    K80s left out (36 V100s, 36 P100s)
#   synthetic        a synthetic table of one GPU type (written to target/synth-v100.json by
#                    scripts/gen-throughputs.py), 64 GPUs, 6.5 jobs/h, arrivals going on
workload_args() {
  case "$1" in
    saturation) echo "--jobs 10000 --rate 5.6 --window 4000-4999" ;;
    overload) echo "--jobs 3000 --rate 8 --window 2000-2999" ;;
    multi) echo "--jobs 20000 --rate 2.6 --multi-gpu --window 4000-4999" ;;
    no-k80) echo "--cluster v100=36,p100=36 --jobs 10000 --rate 5.6 --window 4000-4999" ;;
    past-saturation) echo "--jobs 20000 --rate 3 --multi-gpu --window 4000-4999" ;;
    synthetic)
      local table=target/synth-v100.json
      if [ ! -s "$table" ]; then
        # A file of its own per call, renamed into place: parallel first calls do not collide.
        mkdir -p target
        local tmp
        tmp=$(mktemp target/synth-v100.XXXXXX) || return 2
        python3 scripts/gen-throughputs.py --families 7 --batches 8 --gpu v100 --measured 1.0 \
          --seed 0 > "$tmp" && mv "$tmp" "$table" || { rm -f "$tmp"; return 2; }
      fi
      echo "--throughputs $table --cluster v100=64 --jobs 8000 --rate 6.5 --window 4000-4999" ;;
    *) echo "unknown row: $1 (saturation, overload, multi, past-saturation, no-k80 or synthetic)" >&2; return 2 ;;
  esac
}
