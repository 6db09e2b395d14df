#!/usr/bin/env bash
# Side-by-side prefill/decode benchmark of minfer and already-built
# llama-bench binaries (llama.cpp per SIMD tier, ik_llama.cpp, ...) on the
# same GGUF file. It builds nothing from those projects: point it at
# existing llama-bench binaries.
#
#   scripts/compare-llama.sh [options] [model.gguf] [threads...]
#
# options:
#   --llama 'NAME=PATH [EXTRA ARGS]'   a llama-bench to compare with (repeatable), e.g.
#                                      --llama 'llama.cpp=/opt/llama/build/bin/llama-bench'
#                                      --llama 'ik_llama.cpp=/opt/ik/build/bin/llama-bench -rtr 1'
#   --tier avx2|avx2-vnni|avx512|native
#                                      minfer's SIMD tier: avx2 = AVX2+FMA+F16C only (MINFER_NO_AVX512=1
#                                      MINFER_NO_AVXVNNI=1), as a llama.cpp built with GGML_AVX2 and
#                                      without GGML_AVX_VNNI / GGML_AVX512; avx2-vnni keeps the AVX-VNNI
#                                      Q5_0/Q4_0 row kernels on a CPU that has AVX-VNNI (MINFER_NO_AVX512=1
#                                      only); default native
#   --rounds N                         alternating rounds (minfer, then each llama-bench, N times); default 3
#   --reps N                           repetitions inside each run (default 3)
#   -p N / -n N                        prompt and generation lengths (default 512 / 128)
#   -d N                               depth: both engines start each test with N positions
#                                      already in the KV cache (llama-bench -d; default 0).
#                                      The plan gets a context of N + max(p, n) + 256 unless
#                                      --compile sets one; pass -fa 1 in --llama for flash attention
#   --compile 'ARGS'                   extra minferc compile arguments (e.g. '--kv-type f32')
# LLAMA_BENCH=/path (the older form) adds one entry named llama.cpp.
#
# Each cell of the table is the median over the rounds of each run's
# mean of its repetitions (avg_ts, for both engines); ratios are
# minfer / engine. Without a model it synthesizes the Qwen2.5-0.5B-shaped
# Q4_K_M benchmark model. Run on a quiet machine (check `top`):
# llama.cpp's spinning barrier collapses when another process is busy.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/minfer-compare}
mkdir -p "$out"
llamas=()
tier=native
rounds=3
reps=${REPS:-3}
np=512
ng=128
nd=0
cargs=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --llama) llamas+=("$2"); shift 2 ;;
    --tier) tier=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    -p) np=$2; shift 2 ;;
    -n) ng=$2; shift 2 ;;
    -d) nd=$2; shift 2 ;;
    --compile) cargs=$2; shift 2 ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
[ -n "${LLAMA_BENCH:-}" ] && llamas+=("llama.cpp=$LLAMA_BENCH")
model=${args[0]:-}
threads=("${args[@]:1}")
[ ${#threads[@]} -gt 0 ] || threads=(1 2)
case "$tier" in
  avx2) export MINFER_NO_AVX512=1 MINFER_NO_AVXVNNI=1 ;;
  avx2-vnni) export MINFER_NO_AVX512=1; unset MINFER_NO_AVXVNNI ;;
  avx512|native) unset MINFER_NO_AVX512 MINFER_NO_AVXVNNI ;;
  *) echo "compare-llama: --tier must be avx2, avx2-vnni, avx512 or native" >&2; exit 2 ;;
esac
go build -o "$out/minfer" ./cmd/minfer
go build -o "$out/minferc" ./cmd/minferc
if [ -z "$model" ]; then
  model="$out/qwen2-0.5b-q4_k_m.gguf"
  vocab=${MINFER_FIXTURES:-../shared/fixtures}/tokenizer/ggml-vocab-qwen2.gguf
  vflag=()
  [ -f "$vocab" ] && vflag=(--vocab "$vocab")
  [ -f "$model" ] || "$out/minferc" synth --preset qwen2-0.5b --type q4_k_m "${vflag[@]}" -o "$model"
fi
cflags=()
# shellcheck disable=SC2206 # extra compile arguments, split on spaces
[ -n "$cargs" ] && cflags=($cargs)
if [ "$nd" -gt 0 ] && [[ " $cargs " != *" -c "* && " $cargs " != *" --n-ctx"* ]]; then
  cflags+=(-c $((nd + (np > ng ? np : ng) + 256)))
fi
"$out/minferc" compile "$model" -o "$out/model.plan" -q "${cflags[@]}"
dflag=()
# -d only when asked: llama-bench builds without it (ik_llama.cpp's) refuse the flag
[ "$nd" -gt 0 ] && dflag=(-d "$nd")
tflags=()
for t in "${threads[@]}"; do tflags+=(-t "$t"); done
tl=$(IFS=,; echo "${threads[*]}")
echo "== model $model; minfer tier: $tier${MINFER_NO_AVX512:+ (MINFER_NO_AVX512=1)}${MINFER_NO_AVXVNNI:+ (MINFER_NO_AVXVNNI=1)}"
echo "== cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) flags: $(grep -m1 -o -w 'avx2\|avx512f\|avx512_vnni\|avx_vnni' /proc/cpuinfo | sort -u | tr '\n' ' ')"
for r in $(seq 1 "$rounds"); do
  echo "== round $r: load $(cut -d' ' -f1-3 /proc/loadavg)"
  "$out/minfer" bench "$out/model.plan" -p "$np" -n "$ng" -d "$nd" -r "$reps" "${tflags[@]}" --json > "$out/minfer.$r.json"
  i=0
  for entry in "${llamas[@]}"; do
    name=${entry%%=*}
    cmd=${entry#*=}
    # shellcheck disable=SC2086 # cmd holds the path and its extra arguments
    $cmd -m "$model" -p "$np" -n "$ng" "${dflag[@]}" -t "$tl" -r "$reps" -o json > "$out/llama$i.$r.json" 2> "$out/llama$i.$r.err" ||
      { echo "compare-llama: $name failed, see $out/llama$i.$r.err" >&2; exit 1; }
    i=$((i+1))
  done
done
names=()
for entry in "${llamas[@]}"; do names+=("${entry%%=*}"); done
python3 - "$out" "$rounds" "${names[@]}" <<'PY'
import json, statistics, sys
out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def med(xs): return statistics.median(xs) if xs else None
# minfer bench -o json and llama-bench -o json print the same fields: a list
# of tests, each with n_prompt, n_gen, n_threads and avg_ts (mean tok/s).
def load(path):
    d = {}
    for x in json.load(open(path)):
        test = f"pp{x['n_prompt']}" if x["n_prompt"] else f"tg{x['n_gen']}"
        if x.get("n_depth"):
            test += f" @ d{x['n_depth']}"
        d.setdefault((test, x["n_threads"]), []).append(x["avg_ts"])
    return d
def merge(ds):
    m = {}
    for d in ds:
        for k, v in d.items():
            m.setdefault(k, []).extend(v)
    return m
ours = merge(load(f"{out}/minfer.{r}.json") for r in range(1, rounds + 1))
theirs = [merge(load(f"{out}/llama{i}.{r}.json") for r in range(1, rounds + 1)) for i, _ in enumerate(names)]
head = "| test | threads | minfer tok/s |" + "".join(f" {n} tok/s | ratio vs {n} |" for n in names)
print(head)
print("|" + "---|" * (3 + 2 * len(names)))
for k in sorted(ours):
    m = med(ours[k])
    row = f"| {k[0]} | {k[1]} | {m:.1f} |"
    for d in theirs:
        l = med(d.get(k, []))
        row += f" {l:.1f} | {m / l:.2f}× |" if l else " - | - |"
    print(row)
print(f"(medians of {rounds} alternating rounds; per round each engine reports the mean of its repetitions)")
PY
