#!/usr/bin/env bash
# RTF_ISA, the kernel level (src/core/cpu-features.h): a name that is no level and a level
# above this CPU's are refused with a line that names them, by `rtf` and by a test binary
# alike (tests/common/isa-check.cpp), so a refused level never runs as the host's; a level
# the CPU runs is taken and shows in `rtf version --json` (kernel_level, cpu).
source "$(dirname "$0")/lib.sh"
bin=$(dirname "$RTF")
export RTF_ISA=nosuch
expect_rc 1 "RTF_ISA='nosuch' is not a kernel level \(allowed: baseline, avx2, avx512, avx512-bf16, amx\)" -- --version
out=$("$bin/test-t2w-gemm" 2>&1); rc=$?
if [[ $rc -eq 1 ]] && grep -q "test binary refused to run: RTF_ISA='nosuch' is not a kernel level" <<<"$out"; then
  echo "ok: a test binary refuses RTF_ISA=nosuch"
else
  echo "FAIL: test-t2w-gemm with RTF_ISA=nosuch -> exit $rc"; echo "$out" | head -5; fails=$((fails+1))
fi
unset RTF_ISA
host=$("$RTF" version --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["kernel_level"]["host"])')
levels=(baseline avx2 avx512 avx512-bf16 amx)
above=""
for ((i = ${#levels[@]} - 1; i >= 0; i--)); do
  [[ ${levels[i]} == "$host" ]] && break
  above=${levels[i]}
done
echo "host level: $host; the next level up: ${above:-none (the top level)}"
if [[ -n $above ]]; then
  RTF_ISA=$above expect_rc 1 "RTF_ISA=$above: this CPU \(.*level $host\) cannot run $above kernels; levels it runs: baseline" -- --version
  out=$(RTF_ISA=$above "$bin/test-t2w-gemm" 2>&1); rc=$?
  [[ $rc -eq 1 ]] && grep -q "cannot run $above kernels" <<<"$out" && echo "ok: a test binary refuses RTF_ISA=$above" ||
    { echo "FAIL: test-t2w-gemm with RTF_ISA=$above -> exit $rc"; fails=$((fails+1)); }
fi
# a level the host runs: the CPU features as the kernels see them
if [[ $host != baseline ]]; then
  got=$(RTF_ISA=avx2 "$RTF" version --json | python3 -c 'import json,sys; c=json.load(sys.stdin)["cpu"]; print(c["isa_class"], c["avx512f"])')
  [[ $got == "avx2 False" ]] && echo "ok: RTF_ISA=avx2 shows an avx2 CPU ($got)" ||
    { echo "FAIL: RTF_ISA=avx2 --version --json cpu: '$got', want 'avx2 False'"; fails=$((fails+1)); }
fi
finish
