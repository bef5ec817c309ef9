#!/bin/bash
# bad_usage.sh TEXEL_SOAK: a bad flag ends in exit status 2 and a message naming it (a crash,
# or any other failure, does not pass).
soak=${1:?usage: bad_usage.sh TEXEL_SOAK}
out=$("$soak" --threads 0 x.onnx 2>&1)
rc=$?
echo "$out"
[[ $rc == 2 && $out == *"--threads '0': want a number >= 1"* ]]
