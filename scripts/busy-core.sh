#!/usr/bin/env bash
# Decode speed with one core taken by another process (issue: "a pool that
# survives a busy machine"): tg at -t THREADS on a quiet machine, then while
# `yes > /dev/null` keeps one core busy, alternated, for minfer and for any
# already-built llama-bench given with --llama (as in compare-llama.sh).
#
#   scripts/busy-core.sh [--tier avx2|native] [--rounds N] [-n N] [--llama 'NAME=PATH ARGS'] model.gguf [threads]
#
# Prints each engine's quiet and busy tok/s (medians over the rounds) and
# the share of its quiet speed it keeps. Start it on an otherwise quiet
# machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/minfer-busy}
mkdir -p "$out"
llamas=()
tier=native
rounds=2
ng=128
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --llama) llamas+=("$2"); shift 2 ;;
    --tier) tier=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -n) ng=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
model=${args[0]:?model.gguf}
t=${args[1]:-2}
case "$tier" in
  avx2) export MINFER_NO_AVX512=1 MINFER_NO_AVXVNNI=1 ;;
  avx512|native) unset MINFER_NO_AVX512 ;;
  *) echo "busy-core: --tier must be avx2, avx512 or native" >&2; exit 2 ;;
esac
go build -o "$out/minfer" ./cmd/minfer
go build -o "$out/minferc" ./cmd/minferc
"$out/minferc" compile "$model" -o "$out/model.plan" -q
hog=
trap '[ -n "$hog" ] && kill "$hog" 2>/dev/null || true' EXIT
run() { # name cmd... : prints avg tok/s of one run
  local name=$1; shift
  "$@" -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["avg_ts"])'
}
declare -A res
names=(minfer)
for entry in "${llamas[@]}"; do names+=("${entry%%=*}"); done
for r in $(seq 1 "$rounds"); do
  for state in quiet busy; do
    if [ "$state" = busy ]; then yes > /dev/null & hog=$!; sleep 1; fi
    echo "== round $r, $state: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    res[minfer,$state]+="$(run minfer "$out/minfer" bench "$out/model.plan" -p 0 -n "$ng" -t "$t" -r 2) "
    for entry in "${llamas[@]}"; do
      name=${entry%%=*}
      cmd=${entry#*=}
      # shellcheck disable=SC2086 # cmd holds the path and its extra arguments
      res[$name,$state]+="$(run "$name" $cmd -m "$model" -p 0 -n "$ng" -t "$t" -r 2) "
    done
    if [ "$state" = busy ]; then kill "$hog"; wait "$hog" 2>/dev/null || true; hog=; sleep 1; fi
  done
done
echo "| engine | tg$ng -t $t quiet | busy (one core taken by \`yes\`) | kept |"
echo "|---|---|---|---|"
for n in "${names[@]}"; do
  python3 - "$n" "${res[$n,quiet]}" "${res[$n,busy]}" <<'PY'
import statistics, sys
n, q, b = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
mq, mb = statistics.median(q), statistics.median(b)
print(f"| {n} | {mq:.1f} | {mb:.1f} | {100*mb/mq:.0f}% |")
PY
done
echo "(medians of $rounds rounds; each run the mean of 2 repetitions after a warm-up)"
