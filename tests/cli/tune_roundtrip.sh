#!/bin/bash
# The tuner and the tuning database end to end (docs/tuning.md), on tiny models with a
# few-second budget: tune writes entries that the next compile finds by exact signature; a shape
# near a tuned one takes its neighbour's point; truncated lines, another format or family
# version, and impossible parameters are skipped with notices and the heuristic is used; two
# tunes into one database keep both models' entries; --no-tuning turns the database off; a
# tuned compile computes what the heuristic one does; an interrupt keeps what was measured.
# Usage: tune_roundtrip.sh TEXEL DATA_DIR [PYTHON]  (PYTHON: one with numpy; default python3)
set -euo pipefail
texel=$1
data=$2
python=${3:-python3}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
export TEXEL_CACHE_DIR=$d/cache  # never the user's database
fail() {
  echo "FAIL: $*"
  exit 1
}
count() {  # count PATH FILE: the number after "  PATH" in compile --stats output
  awk -v k="$1" '$1 == k { print $2 }' "$2"
}

echo "== a tiny tune of a convolution and of a matrix product into one database"
family="" conv_sig=""
for m in tiny_conv tiny_matmul; do
  "$texel" tune "$data/$m.onnx" --budget 8 --db "$d/db.jsonl" >"$d/tune_$m" 2>"$d/err" ||
    fail "tune $m: $(cat "$d/err")"
  cat "$d/tune_$m"
  grep -q "^database $d/db.jsonl" "$d/tune_$m" || fail "tune $m names no database"
  grep -Eq "each kernel counted with [0-9.]+ us of launch" "$d/err" ||
    fail "tune $m says no launch cost: $(cat "$d/err")"
  # The convolution's family is the device's (conv_blocked on a CPU, another on a GPU).
  if [[ $m == tiny_conv ]]; then
    family=$(sed -n 's/.*"family":"\([a-z_0-9]*\)".*/\1/p' "$d/db.jsonl" | head -n 1)
    conv_sig=$(sed -n 's/.*"signature":"\([^"]*\)".*/\1/p' "$d/db.jsonl" | head -n 1)
  fi
done
[[ -n $family && -n $conv_sig ]] || fail "no entry for the convolution: $(cat "$d/db.jsonl")"
grep -qF "\"signature\":\"$conv_sig\"" "$d/db.jsonl" || fail "the second tune lost the first's entry"
grep -q '"family":"matmul"' "$d/db.jsonl" || fail "no matmul entry: $(cat "$d/db.jsonl")"

echo "== builds compiled in parallel waves by worker processes (--jobs 2) give entries too, and"
echo "   the model check's model compiled by a worker; a bad --jobs is refused"
mkdir "$d/tmp"
TMPDIR=$d/tmp "$texel" tune "$data/tiny_conv.onnx" --budget 8 --jobs 2 --model-check on \
  --db "$d/jobs.jsonl" >"$d/out" 2>"$d/err" || fail "tune --jobs 2: $(cat "$d/err")"
grep -q "\"family\":\"$family\"" "$d/jobs.jsonl" || fail "no entry from the waves: $(cat "$d/err")"
grep -Eq "[0-9]+ builds of candidates \([1-9][0-9]* compiled in parallel waves, [1-9][0-9]* of them in worker processes\) took [0-9.]+ s: lowering" "$d/err" ||
  fail "no builds compiled in parallel waves by workers: $(cat "$d/err")"
# A check the budget no longer holds is skipped, saying so (a loaded machine's last wave).
grep -Eq "the model (check has nothing to compare|with the heuristic's points)|the model check's (programs were given up|[0-9.]+ s of runs)|left of the model check's" "$d/err" ||
  fail "no model check: $(cat "$d/err")"
[[ -z $(ls -A "$d/tmp") ]] || fail "compile jobs' directories left behind: $(ls "$d/tmp")"
if "$texel" tune "$data/tiny_conv.onnx" --budget 8 --jobs -1 >"$d/out" 2>"$d/err"; then
  fail "--jobs -1 was accepted"
fi
grep -q "jobs" "$d/err" || fail "--jobs -1 refused without naming it: $(cat "$d/err")"

echo "== the next compile finds them exactly"
"$texel" compile "$data/tiny_conv.onnx" --db "$d/db.jsonl" --stats >"$d/out" 2>"$d/err"
[[ $(count exact "$d/out") -ge 1 && $(count heuristic "$d/out") -eq 0 ]] ||
  fail "expected exact hits: $(grep -A3 '^tuning' "$d/out")"

echo "== a nearby shape takes the nearest entry"
# Every dimension of 8 in the signatures becomes 9.
sed -E 's/=8([,"])/=9\1/g' "$d/db.jsonl" >"$d/near.jsonl"
"$texel" compile "$data/tiny_conv.onnx" --db "$d/near.jsonl" --stats >"$d/out" 2>"$d/err"
[[ $(count nearest "$d/out") -ge 1 ]] || fail "expected a nearest hit: $(grep -A3 '^tuning' "$d/out")"

echo "== damaged, foreign and impossible entries are skipped with notices"
conv=$(grep "\"family\":\"$family\"" "$d/db.jsonl" | head -n 1)
{
  echo "${conv:0:50}"                               # truncated
  echo "${conv//\"v\":1/\"v\":99}"                  # another format version
  echo "$conv" | sed -E 's/"family_version":[0-9]+/"family_version":77/'  # another family version
  echo "$conv" | sed -E 's/("params":\{[^}]*":)[0-9]+/\1999999/'  # a parameter past its range
} >"$d/bad.jsonl"
"$texel" compile "$data/tiny_conv.onnx" --db "$d/bad.jsonl" --stats >"$d/out" 2>"$d/err" ||
  fail "a bad database must not fail the compile: $(cat "$d/err")"
cat "$d/err"
[[ $(count exact "$d/out") -eq 0 && $(count nearest "$d/out") -eq 0 ]] ||
  fail "a bad entry was used: $(grep -A3 '^tuning' "$d/out")"
for want in "bad.jsonl:1" "bad.jsonl:2" "of version 77" "outside its space"; do
  grep -q "texel: note: .*$want" "$d/err" || fail "no notice with '$want'"
done

echo "== --no-tuning reads no database"
"$texel" compile "$data/tiny_conv.onnx" --db "$d/db.jsonl" --no-tuning --stats >"$d/out"
grep -q "^tuning *off" "$d/out" || fail "--no-tuning: $(grep -A3 '^tuning' "$d/out")"

echo "== tuned and heuristic compiles compute the same"
for m in tiny_conv tiny_matmul; do
  "$texel" run "$data/$m.onnx" --db "$d/db.jsonl" --seed 3 --output-dir "$d/tuned_$m" >/dev/null
  "$texel" run "$data/$m.onnx" --no-tuning --seed 3 --output-dir "$d/heur_$m" >/dev/null
  for f in "$d/heur_$m"/*.npy; do
    "$python" "$(dirname "$0")/../../scripts/compare_npy.py" "$f" "$d/tuned_$m/$(basename "$f")" \
      --rel-l2 1e-5 || fail "$m: $(basename "$f") differs"
  done
done

echo "== --model-check on: the chosen points are checked in the whole model (or there are none)"
"$texel" tune "$data/tiny_matmul.onnx" --budget 8 --model-check on --db "$d/check.jsonl" \
  >"$d/out" 2>"$d/err" || fail "tune --model-check on: $(cat "$d/err")"
grep -Eq "the model with the heuristic's points: [0-9.]+ ms, with the chosen points: [0-9.]+ ms|the model check has nothing to compare|the model check's (programs were given up|[0-9.]+ s of runs)|left of the model check's" "$d/err" ||
  fail "no model check: $(cat "$d/err")"
if grep -q "the heuristic's kept" "$d/err"; then  # reverted: every entry holds the heuristic's point
  awk '{print $3, $4}' <(grep -v '^family\|^tuned\|^database\|^model\|^device' "$d/out") |
    while read -r h t; do [[ $h == "$t" ]] || fail "a reverted kernel still shows $t against $h"; done
fi
"$texel" tune "$data/tiny_matmul.onnx" --budget 8 --model-check off --db "$d/check.jsonl" \
  >"$d/out" 2>"$d/err" || fail "tune --model-check off: $(cat "$d/err")"
if grep -q "model check\|the model with" "$d/err"; then fail "--model-check off checked"; fi

echo "== an interrupt stops the search at its next build and keeps the points measured"
# SIGTERM (a background job's SIGINT is ignored, and stays so); Ctrl-C's SIGINT takes the same
# path. Slow builds (many runs per candidate, one build per wave), interrupted once a build of
# candidates was judged: the search must stop short of the space, status 128 + 15.
"$texel" tune "$data/tiny_conv.onnx" --budget 120 --runs 10000 --jobs 1 --db "$d/int.jsonl" \
  >"$d/out" 2>"$d/err" &
pid=$!
judged=0
for _ in $(seq 1 600); do
  if grep -Eq "tried ([2-9]|[1-9][0-9]+)/" "$d/err"; then
    judged=1
    break
  fi
  sleep 0.1
done
((judged)) || fail "no build of candidates judged within 60 s: $(cat "$d/err")"
kill -TERM "$pid" 2>/dev/null || fail "the tune ended before the interrupt: $(cat "$d/err")"
start=$SECONDS
rc=0
wait "$pid" || rc=$?
((rc == 143)) || fail "an interrupted tune gave status $rc: $(cat "$d/err")"
((SECONDS - start <= 30)) || fail "the interrupted tune took $((SECONDS - start)) s to stop"
grep -q "interrupted after .*: entries stored for the 1 kernels searched" "$d/err" ||
  fail "no interrupt summary: $(cat "$d/err")"
last=$(grep -Eo "tried [0-9]+/[0-9]+" "$d/err" | tail -1)
tried=${last#tried }
((${tried%/*} < ${tried#*/})) || fail "the search was not cut short ($last)"
grep -q "\"family\":\"$family\"" "$d/int.jsonl" || fail "the interrupted tune stored no entry"
grep -q "^database $d/int.jsonl" "$d/out" || fail "no summary after the interrupt: $(cat "$d/out")"

echo "== bad arguments"
if "$texel" tune "$data/tiny_conv.onnx" --budget 0 --db "$d/x.jsonl" 2>"$d/err"; then
  fail "--budget 0 accepted"
fi
grep -q "budget must be positive" "$d/err" || fail "--budget 0: $(cat "$d/err")"
echo PASS
