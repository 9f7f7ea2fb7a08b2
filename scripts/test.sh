#!/usr/bin/env bash
# Build (if needed) and run rtfkit's whole test suite through ctest:
#   1. release build (build/): every test except those labelled `slow`
#   2. ASan+UBSan build (build-asan/): tests labelled `unit`
#   3. TSan build (build-tsan/): tests labelled `tsan` (the concurrent pipeline code)
#
#   ./scripts/test.sh                   all three
#   RTF_TEST_SANITIZERS=0 ./scripts/test.sh   only the release suite
#   RTF_TEST_SLOW=1 ./scripts/test.sh   also the `slow` tests (golden comparisons)
# Extra arguments are passed to every ctest call (e.g. -R queue).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${RTF_JOBS:-$(nproc)}
./scripts/setup.sh
t0=$(date +%s)
exclude=(-LE slow)
[[ "${RTF_TEST_SLOW:-0}" == 1 ]] && exclude=()
echo "== release suite"
ctest --test-dir build --output-on-failure -j "$jobs" "${exclude[@]}" "$@"
if [[ "${RTF_TEST_SANITIZERS:-1}" == 1 ]]; then
  for san in asan tsan; do
    echo "== $san build"
    cmake --preset "$san" >/dev/null
    cmake --build --preset "$san"
    label=unit; [[ $san == tsan ]] && label=tsan
    echo "== $san suite (label $label)"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
      ctest --test-dir "build-$san" --output-on-failure -j "$jobs" -L "$label" -LE slow "$@"
  done
fi
echo "all tests passed in $(( $(date +%s) - t0 )) s"
