#!/usr/bin/env bash
# TTS golden check (issue 5, shared/golden/minicpmo45-tts README criteria 1-6, plus the
# free-running code half of 7): our TTS stage vs the reference runtime's dumps.
#
#   tests/lm/tts-golden.sh [BUILD_DIR]        # default BUILD_DIR: build
#
# Makes the full-shape TTS twin once (shared/tools/tts_twin.py, ~1.2 GB, ~1 min) in
# $RTF_TTS_TWIN_DIR (default .cache/tts-golden-twin), checks its sha256 against the golden
# README, builds test-lm-golden if needed and runs it (~2-5 min on 2 cores; the first run
# also writes the derived llama file, ~420 MB, to <twin>/.rtf-cache). Prints the figures
# ("GOLDEN ..." lines) and exits non-zero on any failed criterion. Same as
# `ctest -L slow -R test-lm-golden` once the twin exists.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
twin=${RTF_TTS_TWIN_DIR:-$root/.cache/tts-golden-twin}
shared=${RTF_SHARED_DIR:-$root/../shared}
tts=$twin/tts/MiniCPM-o-4_5-tts-F16.gguf
want=6f75ec88ea9373991f4396db8e6ace3317a994054557d7ed400cbb0e2c8aaf9e

if [[ ! -f $tts ]]; then
    gguf_py=${GGUF_PY:-$(ls -d "$root"/.deps/llama.cpp-*/gguf-py 2>/dev/null | head -1)}
    [[ -d $gguf_py ]] || { echo "tts-golden: set GGUF_PY to the gguf-py folder of the pinned llama.cpp" >&2; exit 1; }
    echo "tts-golden: generating the twin in $twin"
    GGUF_PY=$gguf_py /usr/bin/python3 "$shared/tools/tts_twin.py" "$twin"
fi
got=$(sha256sum "$tts" | cut -d' ' -f1)
if [[ $got != "$want" ]]; then
    echo "tts-golden: $tts has sha256 $got, the golden run used $want (regenerate the twin)" >&2
    exit 1
fi
[[ -x $build/bin/test-lm-golden ]] || cmake --build "$build" --target test-lm-golden
RTF_TTS_TWIN_DIR=$twin "$build/bin/test-lm-golden"
