#!/usr/bin/env bash
# GPU readiness check, one script, under 8 minutes on one GPU:
#   1. the CUDA-marked tests (MedSAM2 parity on CUDA within the tolerances stated in
#      tests/models/test_cuda.py, attacks on CUDA, the evaluation runner with one GPU);
#   2. the speed benchmarks on the device: bench_medsam2_speed, bench_attacks at 128^3,
#      bench_multi_structure (five structures, MedSAM2 and the built-in model),
#      bench_litemedsam (LiteMedSAM against the authors' loop; needs the litemedsam extra),
#      bench_litemedsam --part encoder (LiteMedSAM's encoder in fp32 and bf16 on the device:
#      speed and the masks' agreement with fp32; WRONG only if a path auto takes differs);
# then one summary table. Exit status 0 when the tests pass and every benchmark ran with
# correct results (masks identical on the CPU, agreeing within tolerance on a GPU); speed
# targets that are missed are reported in the table, not as failures.
#
# Usage: scripts/gpu-check.sh [--device cuda|cpu] [--quick] [--python PATH]
#   --device cpu --quick   a dry run of the whole script on the CPU (about 1.5 min of CPU,
#                          tests/test_gpu_check.py, a release test): the CUDA tests skip
#                          and the benchmarks run on tiny inputs (MedSAM2 at 128 px: the
#                          same network and code paths).
# The Python interpreter is --python, else $PYTHON, else .venv/bin/python, else python3.
set -u
cd "$(dirname "$0")/.."

device=cuda
quick=0
py="${PYTHON:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device="$2"; shift 2 ;;
    --device=*) device="${1#*=}"; shift ;;
    --quick) quick=1; shift ;;
    --python) py="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "gpu-check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$py" ]; then
  if [ -x .venv/bin/python ]; then py=.venv/bin/python; else py=python3; fi
fi
logs="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")"
start_all=$(date +%s)
declare -a names statuses secs figures
failed=0

# step NAME TIMEOUT_S COMMAND...: run with a time limit, log to $logs/NAME.log, record a row
step() {
  local name="$1" limit="$2"; shift 2
  local t0 rc status fig
  echo "== $name: $*"
  t0=$(date +%s)
  timeout "$limit" "$@" > "$logs/$name.log" 2>&1
  rc=$?
  fig="$(grep -h '^SUMMARY' "$logs/$name.log" | sed 's/^SUMMARY [^ ]* //' | tr '\n' ';' | sed 's/;$//')"
  if [ "$rc" -eq 124 ]; then
    status="TIMEOUT"; failed=1
  elif [ "$name" = "cuda-tests" ]; then
    fig="$(grep -E '(passed|failed|skipped|error|no tests ran)' "$logs/$name.log" | tail -1 | tr -d '=' | sed 's/^ *//')"
    if [ "$rc" -eq 0 ]; then status="ok"; else status="FAIL"; failed=1; fi
  elif [ -z "$fig" ]; then
    status="ERROR"; failed=1; fig="$(tail -1 "$logs/$name.log")"
  elif [ "$rc" -eq 3 ]; then
    status="WRONG"; failed=1  # results differ: a correctness failure
  else
    status="ran"
  fi
  tail -n 25 "$logs/$name.log"
  names+=("$name"); statuses+=("$status"); secs+=("$(( $(date +%s) - t0 ))"); figures+=("$fig")
}

if [ "$quick" -eq 1 ]; then
  speed_args=(--slices 1 --size 32 --repeat 1 --image-size 128)
  attack_args=(--model toy --shape 8 16 16 --steps 1 --repeats 1)
  multi_args=(--quick)
  lite_args=(--quick)
  enc_args=(--quick)
  limits=(120 120 120 120 240 240)
else
  speed_args=(--slices 16 --size 128 --repeat 2)
  attack_args=(--shape 128 128 128 --steps 10 --repeats 2)
  multi_args=(--case both --slices 64 --size 160 --repeat 2)
  lite_args=(--repeat 1)
  enc_args=(--repeat 3 --slices 8 --cases 6)
  limits=(180 45 75 170 120 90)
fi

"$py" - "$device" <<'EOF' || { echo "gpu-check.sh: device $device is not usable" >&2; exit 2; }
import sys, torch
dev = sys.argv[1]
print(f"torch {torch.__version__}; CUDA available: {torch.cuda.is_available()}"
      + (f"; {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""))
if dev.startswith("cuda") and not torch.cuda.is_available():
    sys.exit(1)
EOF

# The CUDA tests need none of the GUI, hypothesis or hydra pytest plugins: loading them (napari
# above all) took half of this step's CPU time in the dry run.
step cuda-tests "${limits[0]}" "$py" -m pytest -m cuda -q -p no:cacheprovider -p no:xvfb -p no:pytestqt \
  -p no:napari -p no:napari-plugin-engine -p no:npe2 -p no:hypothesispytest -p no:anyio \
  -p no:hydra_pytest tests/models/test_cuda.py tests/attacks/test_promptable.py tests/evaluation/test_runner_gpu.py
step medsam2-speed "${limits[1]}" "$py" benchmarks/bench_medsam2_speed.py --device "$device" \
  "${speed_args[@]}"
step attacks "${limits[2]}" "$py" benchmarks/bench_attacks.py --device "$device" "${attack_args[@]}"
step multi-structure "${limits[3]}" "$py" benchmarks/bench_multi_structure.py --device "$device" \
  "${multi_args[@]}"
step litemedsam "${limits[4]}" "$py" benchmarks/bench_litemedsam.py --device "$device" \
  "${lite_args[@]}"
step litemedsam-encoder "${limits[5]}" "$py" benchmarks/bench_litemedsam.py --part encoder \
  --device "$device" "${enc_args[@]}"

echo
echo "gpu-check summary: device $device$([ "$quick" -eq 1 ] && echo ' (quick)'), $(( $(date +%s) - start_all )) s in all, logs in $logs"
printf '%-18s %-8s %6s  %s\n' "step" "status" "s" "figures"
for i in "${!names[@]}"; do
  printf '%-18s %-8s %6s  %s\n' "${names[$i]}" "${statuses[$i]}" "${secs[$i]}" "${figures[$i]}"
done
exit "$failed"
