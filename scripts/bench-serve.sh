#!/usr/bin/env bash
# Serving throughput of minfer serve and, given an already-built
# llama-server, of llama-server -np SLOTS on the same GGUF: each server is
# started on a loopback port, loaded by `minfer bench-serve` with 1, 4 and 8
# concurrent streaming clients (every request generates exactly -n tokens,
# ignore_eos), and stopped. Prints one table per server: aggregate
# generated tok/s, median per-request decode tok/s, time to first token.
#
#   scripts/bench-serve.sh [options] model.gguf|plan.bin
#
# options:
#   --llama-server PATH   also run this llama-server (built elsewhere; nothing is built here)
#   -t N                  threads of both servers (default 2)
#   --slots N             slots of both servers: llama-server -np N, minfer serve --parallel N
#                         for a GGUF (default 8; a plan has the slots it was compiled with)
#   --ctx N               context per slot (default 1024: llama-server gets -c SLOTS*N)
#   -n N                  tokens per request (default 128)
#   -c LIST               client counts (default 1,4,8)
#   -r N                  requests per client per level (default 2)
#   --pack-weights T      minfer serve --pack-weights T for a GGUF (none, avx2, avx512: weight
#                         layouts packed at load; a plan has the layouts it was compiled with)
#   --tier avx2|native    minfer's SIMD tier (avx2: AVX2+FMA+F16C only, MINFER_NO_AVX512=1 MINFER_NO_AVXVNNI=1)
#   --all-tokens          do not send the logit_bias that keeps random-weight output valid UTF-8
#                         (by default every request to both servers bans, with -100, the tokens
#                         whose text is not valid UTF-8 alone: llama-server's output parser
#                         answers 500 to the invalid UTF-8 random weights produce)
# Run on a quiet machine: both servers' decode is bandwidth bound and a busy
# core halves it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/minfer-bench-serve}
mkdir -p "$out"
llama=""
threads=2
slots=8
ctx=1024
n=128
levels=1,4,8
reqs=2
tier=native
pack=none
textonly=1
model=""
while [ $# -gt 0 ]; do
  case "$1" in
    --llama-server) llama=$2; shift 2 ;;
    -t) threads=$2; shift 2 ;;
    --slots) slots=$2; shift 2 ;;
    --ctx) ctx=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    -c) levels=$2; shift 2 ;;
    -r) reqs=$2; shift 2 ;;
    --tier) tier=$2; shift 2 ;;
    --pack-weights) pack=$2; shift 2 ;;
    --all-tokens) textonly=0; shift ;;
    --ban-invalid-utf8) textonly=1; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) model=$1; shift ;;
  esac
done
[ -n "$model" ] || { echo "usage: $0 [options] model.gguf|plan.bin" >&2; exit 2; }
go build -o "$out/minfer" ./cmd/minfer
minfer=$out/minfer
envs=()
[ "$tier" = avx2 ] && envs=(MINFER_NO_AVX512=1 MINFER_NO_AVXVNNI=1)

pid=""
cleanup() { [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=""; }
trap cleanup EXIT

# wait_health URL: until GET /health answers 200 (model loaded), at most 5 min.
wait_health() {
  for _ in $(seq 1500); do
    if curl -fsS -o /dev/null "$1/health" 2>/dev/null; then return 0; fi
    kill -0 "$pid" 2>/dev/null || { echo "the server exited; its log:" >&2; tail -20 "$2" >&2; return 1; }
    sleep 0.2
  done
  echo "no healthy server at $1" >&2; return 1
}

tflag=()
[ "$textonly" = 1 ] && tflag=(--ban-invalid-utf8 "$model")
bench() { # label url
  "$minfer" bench-serve --url "$2" --label "$1" -c "$levels" -n "$n" -r "$reqs" "${tflag[@]}"
}

port=$((20000 + RANDOM % 20000))
echo "minfer serve $model -t $threads (tier $tier, pack-weights $pack), $n tokens per request"
ctxflag=()
case "$model" in *.gguf) ctxflag=(-c "$ctx" --parallel "$slots" --pack-weights "$pack") ;; esac
env "${envs[@]}" "$minfer" serve "$model" --addr "127.0.0.1:$port" -t "$threads" "${ctxflag[@]}" --log-format json 2>"$out/minfer-serve.log" &
pid=$!
wait_health "http://127.0.0.1:$port" "$out/minfer-serve.log"
grep -o '"slots":[0-9]*' "$out/minfer-serve.log" | head -1 | sed 's/"slots":/slots: /'
bench minfer "http://127.0.0.1:$port"
cleanup

if [ -n "$llama" ]; then
  port=$((port + 1))
  echo
  echo "$llama -np $slots -c $((slots * ctx)) -t $threads on $model"
  "$llama" -m "$model" -np "$slots" -c $((slots * ctx)) -t "$threads" --host 127.0.0.1 --port "$port" >"$out/llama-server.log" 2>&1 &
  pid=$!
  wait_health "http://127.0.0.1:$port" "$out/llama-server.log"
  bench llama-server "http://127.0.0.1:$port"
  cleanup
fi
