#!/usr/bin/env bash
# TTS golden check (issue 5, shared/golden/minicpmo45-tts README criteria 1-6, plus the
# free-running code half of 7): our TTS stage vs the reference runtime's dumps.
#
#   tests/lm/tts-golden.sh [BUILD_DIR]        # default BUILD_DIR: build
#
# Makes (or verifies) the full-shape twins with scripts/golden-twins.sh, builds
# test-lm-golden if needed and runs it (~2-5 min on 2 cores; the first run also writes the
# derived llama file, ~420 MB, to <twin>/.rtf-cache). Prints the figures ("GOLDEN ..."
# lines) and exits non-zero on any failed criterion. Same as `ctest -R test-lm-golden`
# once the twin exists (scripts/test.sh does both in CI).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
"$root/scripts/golden-twins.sh"
[[ -x $build/bin/test-lm-golden ]] || cmake --build "$build" --target test-lm-golden
RTF_TTS_TWIN_DIR=${RTF_TTS_TWIN_DIR:-$root/.cache/tts-golden-twin} "$build/bin/test-lm-golden"
