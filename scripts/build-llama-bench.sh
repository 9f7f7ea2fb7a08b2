#!/usr/bin/env bash
# Build llama.cpp's own `llama-bench` from the pinned release, for the reference
# measurements rtfkit checks itself against (`rtf lm-bench --llama-bench`, `rtf limits`).
#
#   scripts/build-llama-bench.sh [--cuda]     # prints the path of the llama-bench binary
#
# Why it reuses fetch-llama.sh's build tree (kept beside its cache entry): llama-bench must run the very kernels our
# libllama was built with (same flags, same objects), and it then costs only llama-common
# and the tool itself (~1-2 min) instead of a second ggml build. fetch-llama.sh passes every
# LLAMA_BUILD_* switch explicitly, so a later rebuild there resets this configuration.
# Not part of CI or setup: it is a by-hand measurement tool.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=llama-cpp.lock
source "$root/scripts/llama-cpp.lock"
variant=cpu
[[ "${1:-}" == "--cuda" ]] && variant=cuda
deps=${RTF_DEPS_DIR:-$root/.deps}
jobs=${RTF_JOBS:-$(nproc)}
bdir=$(cat "$deps/llama.cpp-$LLAMA_TAG-$variant/build-tree" 2>/dev/null || true)   # fetch-llama.sh's, in its cache
if [[ -z $bdir || ! -f "$bdir/CMakeCache.txt" ]]; then
  echo "error: no llama.cpp build tree at $bdir; run scripts/fetch-llama.sh${1:+ $1} first" >&2
  exit 1
fi
cmake -S "$deps/llama.cpp-$LLAMA_TAG" -B "$bdir" -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON \
  >"$deps/llama-bench-configure.log" 2>&1 ||
  { tail -30 "$deps/llama-bench-configure.log" >&2; echo "error: configure failed (log: $deps/llama-bench-configure.log)" >&2; exit 1; }
cmake --build "$bdir" --target llama-bench -j "$jobs" >&2
echo "$bdir/bin/llama-bench"
