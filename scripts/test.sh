#!/usr/bin/env bash
# Build (if needed) and run rtfkit's whole test suite through ctest:
#   0. the seeded golden twins (scripts/golden-twins.sh: once per clone, ~1 min)
#   1. release build (build/, with ggml's Vulkan module: setup.sh --vulkan): every test
#      except those labelled `slow`, so also the `golden` comparisons with the reference
#      runtime (test-t2w-golden, test-lm-golden) and the `vulkan` tests on lavapipe (Mesa's
#      software Vulkan device)
#   2. ASan+UBSan build (build-asan/): tests labelled `unit` (builds target tests-unit)
#   3. TSan build (build-tsan/): tests labelled `tsan`, the concurrent pipeline code and the
#      speak / duplex pipelines on tiny twins (builds target tests-tsan). Token2Wav runs on
#      ggml's kernels there (RTF_T2W_PACKED=0): the packed GEMM runs on ggml's OpenMP threads,
#      whose barriers TSan cannot see, and instrumented it is ~10x slower.
#
#   4. every lower kernel level the host runs (RTF_ISA, src/core/cpu-features.h): the tests
#      labelled `isa` (the kernel, Token2Wav-unit and Token2Wav golden suites) again with the
#      kernels capped at that level, so an AVX-512 machine also tests the AVX2 paths; at the
#      end one table: level, tests run, result ("not exercised on this host" above the CPU's)
#
#   ./scripts/test.sh                   all of them
#   RTF_TEST_SANITIZERS=0 ./scripts/test.sh   only the release suite
#   RTF_TEST_SLOW=1 ./scripts/test.sh   also the `slow` tests (full-scale kits, soaks)
#   RTF_TEST_GOLDEN=0 ./scripts/test.sh skip the golden twins and tests (a quick local run)
#   RTF_TEST_VULKAN=0 ./scripts/test.sh no Vulkan build (the vulkan tests then skip, saying why)
#   RTF_TEST_LEVELS=0 ./scripts/test.sh only the host's own kernel level
#   RTF_TEST_REQUIRE=vulkan,onednn,asr,golden   a test that would skip for lack of one of these
#                                       fails instead (.ci/run sets it: setup installs them all)
# Extra arguments are passed to every ctest call (e.g. -R queue).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${RTF_JOBS:-$(nproc)}
# the CPU first: every figure and every kernel path in this log depends on it
cpu_model=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')
cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2-) "
has() { [[ $cpu_flags == *" $1 "* ]]; }
if has amx_tile && has amx_bf16; then cpu_class=amx
elif has avx512f && has avx512_bf16; then cpu_class=avx512-bf16
elif has avx512f; then cpu_class=avx512
elif has avx2 && has fma; then cpu_class=avx2
else cpu_class=baseline; fi
echo "== CPU: ${cpu_model:-unknown} ($(nproc) CPUs), class $cpu_class; matrix flags:" \
  "$(for f in avx2 fma avx512f avx512_vnni avx512_bf16 amx_tile amx_int8 amx_bf16; do has $f && printf '%s ' $f; done)"
echo "== $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || true)"
t_setup=$(date +%s)
if [[ "${RTF_TEST_VULKAN:-1}" == 1 ]]; then ./scripts/setup.sh --vulkan; else ./scripts/setup.sh; fi
t0=$(date +%s)
echo "== setup took $(( t0 - t_setup )) s"
since() { echo "$(( $(date +%s) - t0 )) s"; }   # phase times in the log: CI's budget is 60 min
skip=()   # labels the release suite leaves out
[[ "${RTF_TEST_SLOW:-0}" == 1 ]] || skip+=(slow)
if [[ "${RTF_TEST_GOLDEN:-1}" == 1 ]]; then
  echo "== golden twins"
  ./scripts/golden-twins.sh
else
  skip+=(golden)
fi
exclude=()
((${#skip[@]})) && exclude=(-LE "$(IFS='|'; echo "${skip[*]}")")
echo "== release suite (at $(since))"
ctest --test-dir build --output-on-failure -j "$jobs" "${exclude[@]}" "$@"
# what tests keep for a person to look at (e2e-serve-page's screenshot of the listening page)
[[ -d build/test-artifacts ]] && echo "== test artifacts in build/test-artifacts: $(ls build/test-artifacts | tr '\n' ' ')"
if [[ "${RTF_TEST_SANITIZERS:-1}" == 1 ]]; then
  for san in asan tsan; do
    echo "== $san build (at $(since))"
    cmake --preset "$san" >/dev/null
    label=unit; [[ $san == tsan ]] && label=tsan
    cmake --build --preset "$san" --target "tests-$label"   # only what the suite runs
    echo "== $san suite (label $label, at $(since))"
    san_env=(); [[ $san == tsan ]] && san_env=(RTF_T2W_PACKED=0)
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
      env "${san_env[@]}" ctest --test-dir "build-$san" --output-on-failure -j "$jobs" -L "$label" -LE slow "$@"
  done
fi

# 4. the lower kernel levels: the `isa` tests again, capped with RTF_ISA
levels=(avx2 avx512 avx512-bf16 amx)
host=$(build/bin/rtf version --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["kernel_level"]["host"])')
isa_exclude=(); [[ "${RTF_TEST_GOLDEN:-1}" == 1 ]] || isa_exclude=(-LE golden)
count() {   # "N run, M skipped" from a ctest log
  local n s
  n=$(grep -oE 'tests failed out of [0-9]+' "$1" | grep -oE '[0-9]+$' || echo 0)
  s=$(grep -cE '\(Skipped\)$' "$1" || true)
  echo "$n run, $s skipped"
}
rows=() level_fail=0 above=0
for l in "${levels[@]}"; do
  if ((above)); then rows+=("$l|-|not exercised on this host (the CPU's level is $host)"); continue; fi
  log="build/test-level-$l.log"
  if [[ $l == "$host" ]]; then
    ctest --test-dir build -N -L isa "${isa_exclude[@]}" >"$log"
    rows+=("$l|$(grep -oE 'Total Tests: [0-9]+' "$log" | grep -oE '[0-9]+') in the release suite|the host's own level: passed above")
    above=1
    continue
  fi
  if [[ "${RTF_TEST_LEVELS:-1}" != 1 ]]; then rows+=("$l|-|not run (RTF_TEST_LEVELS=0)"); continue; fi
  echo "== kernel level $l (RTF_ISA=$l, at $(since))"
  if RTF_ISA=$l ctest --test-dir build --output-on-failure -j "$jobs" -L isa "${isa_exclude[@]}" "$@" 2>&1 | tee "$log"; then
    rows+=("$l|$(count "$log")|passed")
  else
    rows+=("$l|$(count "$log")|FAILED (log: $log)"); level_fail=1
  fi
done
[[ $host == baseline ]] && rows=("baseline|-|this CPU has no AVX2: the portable loops ran in the release suite" "${rows[@]}")
echo "== kernel levels on this CPU (${cpu_model:-unknown}, class $cpu_class; RTF_ISA=baseline is not run: no CPU of the pool lacks AVX2)"
printf '%-12s | %-32s | %s\n' level "tests (label isa)" result
for r in "${rows[@]}"; do IFS='|' read -r a b c <<<"$r"; printf '%-12s | %-32s | %s\n' "$a" "$b" "$c"; done
((level_fail == 0)) || { echo "a kernel level failed (table above)"; exit 1; }
echo "all tests passed in $(( $(date +%s) - t0 )) s"
