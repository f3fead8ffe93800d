#!/usr/bin/env bash
# The GPU path's checks in one script, for a lent GPU machine (or any CUDA box):
#   bash benchmarks/gpu_check.sh            # writes its log and the maps' tables under $OUT
# 1. tests/test_stacking.py: stacked runs with different data knobs equal each run trained alone,
#    on CUDA too (its CUDA test is skipped where there is none); the device tests, and
#    tests/test_fast.py's CUDA test (the fast forward on CUDA against the hooked one) and fused
#    optimizer test;
# 2. study 1's question map (specs/maps/s1-content.yaml) at `default`, 3 seeds: `toymech map` on
#    the GPU (the runs of one model shape stacked), its table;
# 3. benchmarks/bench_gpu_map.py: that map's runs (cut to 500 steps) stacked vs one at a time;
# 4. benchmarks/bench_multiseed.py on the device: 1, 8 and 32 seeds of each family;
# 5. with the time left (BUDGET_S, default 500 s from the start), the same map at `paper`.
# Wheels in .whl/ (packages the machine lacks) are installed first when present.
# DEVICE, SIZE and PY change the device, the first map's size and the Python (a dry run on a CPU:
#   DEVICE=cpu SIZE=smoke PY=.venv/bin/python BUDGET_S=0 bash benchmarks/gpu_check.sh).
set -u
start=$(date +%s)
OUT=${OUT:-/tmp/toymech-gpu-check}
DEVICE=${DEVICE:-cuda}
SIZE=${SIZE:-default}
PY=${PY:-python3}
BUDGET_S=${BUDGET_S:-500}
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
export TOYMECH_CACHE=${TOYMECH_CACHE:-/tmp/toymech-gpu-zoo}
left() { echo $(( BUDGET_S - ($(date +%s) - start) )); }
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null
  nproc
  $PY -c "import torch, transformer_lens, toymech.maps; print('torch', torch.__version__, \
'cuda', torch.cuda.is_available())" || exit 1
  echo "== 1. parity ($(( $(date +%s) - start )) s)"
  timeout 150 $PY -m pytest -q -p no:cacheprovider tests/test_stacking.py tests/test_devices.py \
    tests/test_fast.py -k "stack or cuda or device or fused or embedding"
  echo "== 2. map s1-content at $SIZE on $DEVICE ($(( $(date +%s) - start )) s)"
  /usr/bin/time -v timeout 240 $PY -m toymech map specs/maps/s1-content.yaml --size "$SIZE" \
    --device "$DEVICE" --backend local --out "$OUT" --no-progress 2>&1 \
    | grep -v "^\s*\(Average\|Exit\|File\|Major\|Minor\|Page\|Signals\|Socket\|Swaps\|Voluntary\|Involuntary\)"
  echo "== 3. bench_gpu_map ($(( $(date +%s) - start )) s)"
  timeout 150 $PY benchmarks/bench_gpu_map.py --device "$DEVICE" --size "$SIZE" --seeds 3 \
    --steps 500 --alone 3
  echo "== 4. bench_multiseed ($(( $(date +%s) - start )) s)"
  timeout 120 $PY benchmarks/bench_multiseed.py --device "$DEVICE" --seeds 1,8,32 --steps 30 \
    --no-vmap1
  t=$(left)
  echo "== 5. map s1-content at paper: $t s left"
  if [ "$t" -gt 150 ]; then
    mkdir -p "$OUT/paper"
    /usr/bin/time -v timeout "$t" $PY -m toymech map specs/maps/s1-content.yaml --size paper \
      --device "$DEVICE" --backend local --out "$OUT/paper" --no-progress 2>&1 \
      | grep -v "^\s*\(Average\|Exit\|File\|Major\|Minor\|Page\|Signals\|Socket\|Swaps\|Voluntary\|Involuntary\)"
  fi
  echo "== done ($(( $(date +%s) - start )) s)"
} 2>&1 | tee "$OUT/gpu_check.log"
