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
#   ./scripts/test.sh                   all three
#   RTF_TEST_SANITIZERS=0 ./scripts/test.sh   only the release suite
#   RTF_TEST_SLOW=1 ./scripts/test.sh   also the `slow` tests (full-scale kits, soaks)
#   RTF_TEST_GOLDEN=0 ./scripts/test.sh skip the golden twins and tests (a quick local run)
#   RTF_TEST_VULKAN=0 ./scripts/test.sh no Vulkan build (the vulkan tests then skip, saying why)
# Extra arguments are passed to every ctest call (e.g. -R queue).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${RTF_JOBS:-$(nproc)}
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
echo "all tests passed in $(( $(date +%s) - t0 )) s"
