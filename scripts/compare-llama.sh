#!/usr/bin/env bash
# Side-by-side prefill/decode benchmark of minfer and an already-built
# llama.cpp on the same GGUF file. It builds nothing from llama.cpp: point
# LLAMA_BENCH at an existing llama-bench binary.
#
#   LLAMA_BENCH=/path/to/llama-bench scripts/compare-llama.sh [model.gguf] [threads...]
#
# Without a model it synthesizes the Qwen2.5-0.5B-shaped Q4_K_M benchmark
# model (with the real Qwen vocabulary when ../shared/fixtures has it).
# Run on a quiet machine (check `top`): llama.cpp's spinning barrier
# collapses when another process is busy, and so does any comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/minfer-compare}
mkdir -p "$out"
model=${1:-}
shift || true
threads=("$@")
[ ${#threads[@]} -gt 0 ] || threads=(1 2)
reps=${REPS:-5}
go build -o "$out/minfer" ./cmd/minfer
go build -o "$out/minferc" ./cmd/minferc
if [ -z "$model" ]; then
  model="$out/qwen2-0.5b-q4_k_m.gguf"
  vocab=${MINFER_FIXTURES:-../shared/fixtures}/tokenizer/ggml-vocab-qwen2.gguf
  vflag=()
  [ -f "$vocab" ] && vflag=(--vocab "$vocab")
  [ -f "$model" ] || "$out/minferc" synth --preset qwen2-0.5b --type q4_k_m "${vflag[@]}" -o "$model"
fi
"$out/minferc" compile "$model" -o "$out/model.plan" -q
tflags=()
for t in "${threads[@]}"; do tflags+=(-t "$t"); done
echo "== load: $(uptime)"
echo "== minfer"
"$out/minfer" bench "$out/model.plan" -p 512 -n 128 -r "$reps" "${tflags[@]}" --json > "$out/minfer.json"
if [ -n "${LLAMA_BENCH:-}" ]; then
  echo "== llama.cpp ($LLAMA_BENCH)"
  tl=$(IFS=,; echo "${threads[*]}")
  "$LLAMA_BENCH" -m "$model" -p 512 -n 128 -t "$tl" -r "$reps" -o json > "$out/llama.json"
fi
python3 - "$out/minfer.json" "${LLAMA_BENCH:+$out/llama.json}" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
ours = {(r["test"], r["threads"]): r["tok_per_s"] for r in m["results"]}
theirs = {}
if len(sys.argv) > 2 and sys.argv[2]:
    for r in json.load(open(sys.argv[2])):
        test = f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"
        theirs[(test, r["n_threads"])] = r["avg_ts"]
print("| test | threads | minfer tok/s | llama.cpp tok/s | ratio |")
print("|---|---|---|---|---|")
for k in sorted(ours):
    l = theirs.get(k)
    lt = f"{l:.1f}" if l else "-"
    ratio = f"{ours[k]/l:.2f}" if l else "-"
    print(f"| {k[0]} | {k[1]} | {ours[k]:.1f} | {lt} | {ratio} |")
PY
