#!/bin/bash
# Runs one texel command line and checks how it ends.
# Usage: check.sh [--ok] [--stdout TEXT]... [--stderr TEXT]... [--file PATH]... -- COMMAND...
#   default   the command must fail cleanly: exit status 1..127 (>= 128 is a crash), and stderr
#             must be exactly one line that starts with "texel: error:" and contains every
#             --stderr TEXT (fixed strings)
#   --ok      the command must exit 0
#   --stdout  stdout must contain TEXT (fixed string)
#   --file    PATH must exist afterwards (it is removed before the command runs)
# Hangs are caught by the ctest TIMEOUT of each test.
set -euo pipefail

ok=0
stdout_want=()
stderr_want=()
files=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --ok) ok=1; shift ;;
    --stdout) stdout_want+=("$2"); shift 2 ;;
    --stderr) stderr_want+=("$2"); shift 2 ;;
    --file) files+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "check.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [[ $# -eq 0 ]]; then
  echo "usage: check.sh [--ok] [--stdout TEXT]... [--stderr TEXT]... [--file PATH]..." \
    "-- COMMAND..." >&2
  exit 2
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for f in ${files[@]+"${files[@]}"}; do rm -f "$f"; done

echo "+ $*"
status=0
"$@" >"$scratch/out" 2>"$scratch/err" || status=$?
echo "exit status: $status"
echo "--- stdout"; cat "$scratch/out"
echo "--- stderr"; cat "$scratch/err"
echo "---"

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if [[ $ok -eq 1 ]]; then
  [[ $status -eq 0 ]] || fail "expected exit status 0, got $status"
else
  if [[ $status -eq 0 ]]; then
    fail "expected a failure, got exit status 0"
  elif [[ $status -ge 128 ]]; then
    fail "exit status $status: killed by a signal (crash)"
  fi
  lines=$(wc -l <"$scratch/err")
  # A last line without a newline still counts as a line.
  if [[ -s "$scratch/err" && -n $(tail -c 1 "$scratch/err") ]]; then lines=$((lines + 1)); fi
  [[ $lines -eq 1 ]] || fail "expected exactly one line on stderr, got $lines"
  first=$(head -n 1 "$scratch/err")
  [[ $first == "texel: error: "* ]] || fail "stderr does not start with 'texel: error: '"
fi
for t in ${stderr_want[@]+"${stderr_want[@]}"}; do
  grep -qF -- "$t" "$scratch/err" || fail "stderr does not mention '$t'"
done
for t in ${stdout_want[@]+"${stdout_want[@]}"}; do
  grep -qF -- "$t" "$scratch/out" || fail "stdout does not contain '$t'"
done
for f in ${files[@]+"${files[@]}"}; do
  [[ -f $f ]] || fail "$f was not written"
done

if [[ $failures -gt 0 ]]; then exit 1; fi
echo "PASS"
