#!/usr/bin/env bash
# scripts/gpu-check.sh — the GPU path checked in one go (docs/worker.md#the-gpu-path): no network, < 8 minutes on one
# GPU. Stages (each bounded by `timeout`; a missing prerequisite skips its stage with the reason):
#   build    dist/ from the sources (tsc; node_modules must already be installed)
#   ops      the worker's train / logprob / critic ops on CUDA against CPU float32: fp32, bf16 autocast with fp32 master
#            weights, pure bf16, each within its tolerances (worker/bench/gpu_check.py)
#   ranks    with ≥ 2 GPUs: 2 nccl ranks == 1 process on the same batch (worker/tests/test_distributed.py on CUDA)
#   rl       3 RL steps of the quickstart's task with the policy's worker on CUDA (bf16 autocast), llama.cpp sampling
#   vllm / sglang   when importable: a real server on a qwen3-tiny model directory, sampled through our adapter, the
#            same tokens teacher-forced by the worker on CUDA (mean / max |Δ logprob|)
# Then one summary table. Exit 0 when nothing failed (skips allowed), 1 when a stage failed, 2 without CUDA.
# Environment: HARNESSRL_PYTHON (a Python with CUDA torch; default /usr/bin/python3), GPU_CHECK_OUT (results dir).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${HARNESSRL_PYTHON:-/usr/bin/python3}"
export HARNESSRL_PYTHON="$PY" OPENBLAS_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1
OUT="${GPU_CHECK_OUT:-$ROOT/.cache/gpu-check/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"
RESULTS="$OUT/results.tsv"
: > "$RESULTS"
STARTED=$(date +%s)

record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$RESULTS"; }
since() { echo $(( $(date +%s) - $1 )); }

# --- preflight: CUDA or nothing -----------------------------------------------------------------------------------
if ! "$PY" - > "$OUT/preflight.txt" 2>&1 <<'PYEOF'
import sys
import torch
print(f"torch {torch.__version__}, cuda {torch.version.cuda}, devices {torch.cuda.device_count()}")
for i in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(i)
    print(f"  cuda:{i} {p.name} {p.total_memory / 2**30:.1f} GiB, bf16 {torch.cuda.is_bf16_supported()}")
sys.exit(0 if torch.cuda.is_available() else 3)
PYEOF
then
  echo "gpu-check: no CUDA device visible to $PY ($(head -1 "$OUT/preflight.txt")); nothing was checked." >&2
  echo "gpu-check: run it on a machine with an NVIDIA GPU and a CUDA build of torch (HARNESSRL_PYTHON=...)." >&2
  exit 2
fi
cat "$OUT/preflight.txt"
GPUS=$("$PY" -c 'import torch; print(torch.cuda.device_count())')

# --- build ---------------------------------------------------------------------------------------------------------
t=$(date +%s)
if timeout 180 npx --no-install tsc -p tsconfig.json > "$OUT/build.log" 2>&1; then record build pass "$(since "$t")" "dist/ built"
else record build fail "$(since "$t")" "tsc failed: $OUT/build.log"; fi

# --- ops parity ----------------------------------------------------------------------------------------------------
t=$(date +%s)
timeout 240 "$PY" worker/bench/gpu_check.py --device cuda --out "$OUT/ops.json" > "$OUT/ops.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then record ops pass "$(since "$t")" "fp32, bf16-autocast, bf16 within tolerances"
elif [ $rc -eq 124 ]; then record ops fail "$(since "$t")" "timed out"
else record ops fail "$(since "$t")" "see $OUT/ops.log"; fi

# --- ranks ---------------------------------------------------------------------------------------------------------
t=$(date +%s)
if [ "$GPUS" -ge 2 ]; then
  if (cd worker && HARNESSRL_TEST_DEVICE=cuda timeout 180 "$PY" -m unittest tests.test_distributed.DistributedTest.test_two_gloo_ranks_match_one_process_on_the_same_batch) > "$OUT/ranks.log" 2>&1
  then record ranks pass "$(since "$t")" "2 nccl ranks == 1 process"; else record ranks fail "$(since "$t")" "see $OUT/ranks.log"; fi
else record ranks skip 0 "one GPU ($GPUS): nccl ranks need two"; fi

# --- a few RL steps with the worker on the GPU -----------------------------------------------------------------------
t=$(date +%s)
if ! command -v bwrap > /dev/null; then record rl skip 0 "bubblewrap not installed (rollout sandboxes)"
elif [ ! -f dist/cli/main.js ]; then record rl skip 0 "no dist/ (build failed)"
else
  node scripts/gpu-check-config.mjs "$OUT/rl.yaml"
  if timeout 300 node dist/cli/main.js train --config "$OUT/rl.yaml" --run-dir "$OUT/rl-run" > "$OUT/rl.log" 2>&1; then
    detail=$(node -e '
      const rows = require("node:fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => JSON.parse(l)).filter((r) => r.phase === "rl");
      const peak = Math.max(0, ...rows.map((r) => r["memory/cuda_peak_mb"] ?? 0));
      const train = rows.map((r) => r["time/train_s"] ?? 0);
      console.log(`${rows.length} steps, train ${train.map((s) => s.toFixed(1)).join("/")} s, cuda peak ${peak.toFixed(0)} MB`);
    ' "$OUT/rl-run/metrics.jsonl" 2>&1)
    record rl pass "$(since "$t")" "$detail"
  else record rl fail "$(since "$t")" "see $OUT/rl.log"; fi
fi

# --- remote engines against real servers ---------------------------------------------------------------------------
MODEL="$OUT/qwen3-tiny"
for ENGINE in vllm sglang; do
  t=$(date +%s)
  if ! "$PY" -c "import $ENGINE" > /dev/null 2>&1; then record "$ENGINE" skip 0 "not importable by $PY"; continue; fi
  if [ ! -f dist/cli/main.js ]; then record "$ENGINE" skip 0 "no dist/ (build failed)"; continue; fi
  [ -f "$MODEL/config.json" ] || node dist/cli/main.js model init --preset qwen3-tiny --seed 0 --out "$MODEL" > "$OUT/model-init.log" 2>&1
  PORT=$((18000 + RANDOM % 1000))
  if [ "$ENGINE" = vllm ]; then
    "$PY" -m vllm.entrypoints.openai.api_server --model "$MODEL" --port "$PORT" --dtype float32 --enforce-eager --gpu-memory-utilization 0.3 > "$OUT/$ENGINE-server.log" 2>&1 &
  else
    "$PY" -m sglang.launch_server --model-path "$MODEL" --port "$PORT" --dtype float32 --mem-fraction-static 0.3 > "$OUT/$ENGINE-server.log" 2>&1 &
  fi
  SERVER=$!
  up=0
  for _ in $(seq 1 120); do
    if "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "http://127.0.0.1:$PORT/v1/models" > /dev/null 2>&1; then up=1; break; fi
    kill -0 "$SERVER" 2> /dev/null || break
    sleep 1
  done
  if [ $up -eq 1 ]; then
    if line=$(timeout 120 node scripts/gpu-check-engine.mjs "$ENGINE:http://127.0.0.1:$PORT?model_dir=$MODEL" "$MODEL" 400 2> "$OUT/$ENGINE.log" | tail -1) && [ -n "$line" ]; then
      echo "$line" > "$OUT/$ENGINE.json"
      record "$ENGINE" pass "$(since "$t")" "$line"
    else record "$ENGINE" fail "$(since "$t")" "see $OUT/$ENGINE.log"; fi
  else record "$ENGINE" fail "$(since "$t")" "server did not come up in 120 s: $OUT/$ENGINE-server.log"; fi
  kill "$SERVER" 2> /dev/null; wait "$SERVER" 2> /dev/null
done

# --- summary -------------------------------------------------------------------------------------------------------
"$PY" worker/bench/gpu_check.py summary "$OUT" --total-s "$(since "$STARTED")"
