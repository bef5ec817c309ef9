#!/bin/bash
# cache_race.sh TEXEL MODEL [PROCESSES]
# PROCESSES `texel run MODEL` at once into one empty program cache: every one must succeed, the
# cache must hold whole entries only (no temporary files left behind; beside an entry, its build's
# seconds in <key>.sec), and a later run must take
# its program from the cache (an entry torn or lost would be rebuilt instead).
set -euo pipefail
texel=${1:?usage: cache_race.sh TEXEL MODEL [PROCESSES]}
model=${2:?usage: cache_race.sh TEXEL MODEL [PROCESSES]}
n=${3:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TEXEL_CACHE_DIR=$work/cache
pids=()
for i in $(seq "$n"); do
  "$texel" run "$model" >"$work/out$i.txt" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    echo "cache_race: process $((i + 1)) of $n failed:"
    cat "$work/out$((i + 1)).txt"
    failed=1
  fi
done
((failed == 0)) || exit 1
entries=$(find "$TEXEL_CACHE_DIR" -name '*.bin' | wc -l)
others=$(find "$TEXEL_CACHE_DIR" -type f ! -name '*.bin' ! -name '*.sec' | wc -l)
for sec in "$TEXEL_CACHE_DIR"/*.sec; do  # a record only beside its entry
  [ -e "$sec" ] || continue
  [ -f "${sec%.sec}.bin" ] || others=$((others + 1))
done
if ((entries == 0 || others != 0)); then
  echo "cache_race: $entries entries and $others other files in the cache:"
  ls -la "$TEXEL_CACHE_DIR"
  exit 1
fi
if ! "$texel" run "$model" | grep -q "program from cache"; then
  echo "cache_race: the run after the race rebuilt its program; the cache held:"
  ls -la "$TEXEL_CACHE_DIR"
  exit 1
fi
echo "cache_race: $n processes, $entries cache entries, the next run took its program from the cache"
