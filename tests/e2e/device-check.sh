#!/usr/bin/env bash
# scripts/device-check.sh, the prepared GPU check, as far as a machine without a GPU can check
# it: --dry-run lists every step with its command and result files and exits 0; the real run
# without nvcc (this PATH has none) exits 1 naming it, before building anything.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
fails=0
out=$(OUT=/tmp/dc-out "$root/scripts/device-check.sh" --dry-run 2>&1); rc=$?
if [[ $rc -eq 0 ]] && grep -q '^1\. build-llama .*fetch-llama.sh --cuda' <<<"$out" &&
   grep -q '^7\. lm-bench .*--device CUDA0' <<<"$out" && grep -q -- '-> /tmp/dc-out/limits.json' <<<"$out"; then
  echo "ok: --dry-run lists the steps"
else
  echo "FAIL: --dry-run -> $rc"; echo "$out" | head -20; fails=$((fails+1))
fi
# a PATH without any directory that holds nvcc
path=""
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do [[ -x $d/nvcc ]] || path+="${path:+:}$d"; done
out=$(PATH=$path OUT=/tmp/dc-out "$root/scripts/device-check.sh" 2>&1); rc=$?
if [[ $rc -eq 1 ]] && grep -q '^  nvcc (command)' <<<"$out" && [[ ! -e /tmp/dc-out/summary.json ]]; then
  echo "ok: without nvcc the run exits 1 naming it"
else
  echo "FAIL: without nvcc -> $rc"; echo "$out" | head; fails=$((fails+1))
fi
out=$("$root/scripts/device-check.sh" --nosuch 2>&1); rc=$?
[[ $rc -eq 1 && $out == *"unknown option '--nosuch' (allowed: --dry-run, --help)"* ]] && echo "ok: a bad option named" ||
  { echo "FAIL: --nosuch -> $rc: $out"; fails=$((fails+1)); }
((fails == 0)) || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
