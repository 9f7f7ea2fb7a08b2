#!/usr/bin/env bash
# Fetch the pinned llama.cpp release (scripts/llama-cpp.lock), verify it, build and
# install only ggml, libllama and libmtmd into .deps/.
#
#   scripts/fetch-llama.sh [--cuda]   ggml (CPU, or CPU + CUDA), libllama, libmtmd
#   scripts/fetch-llama.sh --vulkan   only ggml's Vulkan backend, as a loadable module
#   scripts/fetch-llama.sh --tts      llama.cpp's own llama-tts (with its common library), a
#                                     static binary, for comparing our Pocket TTS PCM with its
#                                     (scripts/compare-llama-tts.sh); not part of the build or CI
#
# Result: .deps/llama.cpp-<tag>-<cpu|cuda>/install (a CMake prefix), or for --vulkan
# .deps/llama.cpp-<tag>-vulkan/module/libggml-vulkan.so. The module is built from the same
# tree with GGML_BACKEND_DL, so the cpu install's libggml loads it at run time
# (ggml_backend_load): nothing else is built twice. It needs Debian's libvulkan-dev, glslc
# and spirv-headers (scripts/deps-debian-vulkan.txt) and one patch of ours to the tree
# (scripts/patches/ggml-vulkan-old-headers.patch: Debian 12's Vulkan headers are 1.3.239).
# Safe to run twice: a finished install is kept (stamp file), nothing is downloaded or rebuilt.
# Environment: RTF_JOBS (parallel jobs, default: nproc), RTF_DEPS_DIR (default .deps).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=llama-cpp.lock
source "$root/scripts/llama-cpp.lock"
variant=cpu
case "${1:-}" in
  "") ;;
  --cuda) variant=cuda ;;
  --vulkan) variant=vulkan ;;
  --tts) variant=tts ;;
  *) echo "fetch-llama.sh: unknown option '$1' (allowed: --cuda, --vulkan, --tts)" >&2; exit 1 ;;
esac
deps=${RTF_DEPS_DIR:-$root/.deps}
jobs=${RTF_JOBS:-$(nproc)}
tarball="$deps/$NPM_PACKAGE-$NPM_VERSION.tgz"
src="$deps/llama.cpp-$LLAMA_TAG"
prefix="$deps/llama.cpp-$LLAMA_TAG-$variant/install"
[[ $variant == vulkan ]] && prefix="$deps/llama.cpp-$LLAMA_TAG-$variant/module"
[[ $variant == tts ]] && prefix="$deps/llama.cpp-$LLAMA_TAG-$variant/bin"
bdir="$deps/llama.cpp-$LLAMA_TAG-$variant/build"
stamp="$prefix/.rtf-stamp"
# bump when the build recipe below changes, so existing installs are rebuilt
recipe=3
want_stamp="$NPM_SHA512 $variant recipe=$recipe"
mkdir -p "$deps"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want_stamp" ]]; then
  echo "llama.cpp $LLAMA_TAG ($variant) already built: $prefix"
  exit 0
fi

# 1. the npm tarball, verified by sha512
if [[ ! -f "$tarball" ]]; then
  echo "fetching $NPM_PACKAGE@$NPM_VERSION from the npm registry"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$NPM_PACKAGE@$NPM_VERSION" >/dev/null)
  mv "$tmp/$NPM_PACKAGE-$NPM_VERSION.tgz" "$tarball"
  rmdir "$tmp"
fi
actual=$(sha512sum "$tarball" | cut -d' ' -f1)
if [[ "$actual" != "$NPM_SHA512" ]]; then
  echo "error: checksum mismatch for $tarball" >&2
  echo "  expected sha512: $NPM_SHA512 (scripts/llama-cpp.lock)" >&2
  echo "  actual   sha512: $actual" >&2
  echo "  delete the file to fetch it again, or update the lock file deliberately" >&2
  exit 1
fi

# 2. the source tree, cloned from the bundle inside the tarball
if [[ ! -f "$src/CMakeLists.txt" ]]; then
  rm -rf "$src" "$deps/unpack"
  mkdir -p "$deps/unpack"
  tar -xzf "$tarball" -C "$deps/unpack" package/llama/gitRelease.bundle
  git clone --quiet "$deps/unpack/package/llama/gitRelease.bundle" "$src"
  rm -rf "$deps/unpack"
fi
commit=$(git -C "$src" rev-parse --short=12 HEAD)

# 3a. --vulkan: only the Vulkan backend module (its shaders are compiled by the build)
if [[ $variant == vulkan ]]; then
  patch="$root/scripts/patches/ggml-vulkan-old-headers.patch"
  if ! git -C "$src" apply --reverse --check "$patch" 2>/dev/null; then
    git -C "$src" apply "$patch" || { echo "error: could not apply $patch to $src" >&2; exit 1; }
  fi
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  echo "building llama.cpp $LLAMA_TAG ($commit): ggml's Vulkan backend module with $jobs jobs (~6 min on 2 cores)"
  cmake -S "$src" -B "$bdir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DGGML_BACKEND_DL=ON -DGGML_VULKAN=ON -DGGML_CPU=OFF -DGGML_NATIVE=OFF \
    -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_MTMD=OFF -DLLAMA_OPENSSL=OFF >"$deps/llama-configure-vulkan.log" 2>&1 ||
    { tail -30 "$deps/llama-configure-vulkan.log" >&2
      echo "error: llama.cpp Vulkan configure failed (log: $deps/llama-configure-vulkan.log; it needs the packages in scripts/deps-debian-vulkan.txt)" >&2; exit 1; }
  cmake --build "$bdir" --target ggml-vulkan -j "$jobs"
  mkdir -p "$prefix"
  cp "$(find "$bdir" -name 'libggml-vulkan.so' -print -quit)" "$prefix/"
  echo "$LLAMA_TAG $commit" >"$prefix/llama-cpp-version"
  echo "$want_stamp" >"$stamp"
  echo "llama.cpp Vulkan module installed: $prefix/libggml-vulkan.so"
  exit 0
fi

# 3. build only the libraries (no tools, tests, examples, server, common)
cuda=OFF; [[ $variant == cuda ]] && cuda=ON
# No AMX in ggml-cpu. Why: with GGML_NATIVE on an AMX Xeon (Sapphire Rapids and later) the
# pinned release's AMX mul_mat (ggml-cpu/amx, used for Q4_0/Q4_1/Q8_0/Q4_K/Q5_K/Q6_K/IQ4_XS
# weights through the "AMX" extra buffer type) dies with SIGILL on `tilezero` in an OpenMP
# worker (issue 29 §1b: rtf speak on a q8_0 or q4_k_m kit, and llama.cpp's own llama-bench
# on the same file; upstream describes the tile-config/permission handling as the cause).
# Explicit -mno-amx-* win over -march=native whatever their order (GCC's explicit ISA flags),
# so __AMX_INT8__ is undefined, the AMX code compiles out and those weights run on the
# AVX-512/VNNI kernels instead. Nothing else changes; on CPUs without AMX this is a no-op.
# rtf also refuses the AMX buffer type at run time for a libllama built with it (placement.h).
no_amx=()
[[ $(uname -m) == x86_64 ]] && no_amx=(-DCMAKE_C_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" \
  -DCMAKE_CXX_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16")
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
# 3b. --tts: llama.cpp's llama-tts, static, with the cpu build's flags (same kernels as our libraries)
if [[ $variant == tts ]]; then
  echo "building llama.cpp $LLAMA_TAG ($commit): llama-tts (static, common + mtmd) with $jobs jobs (~10 min on 2 cores)"
  cmake -S "$src" -B "$bdir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=ON -DGGML_CUDA=OFF "${no_amx[@]}" \
    -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_MTMD=ON -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_COMMIT="$commit" \
    -DLLAMA_BUILD_NUMBER=0 >"$deps/llama-configure-tts.log" 2>&1 ||
    { tail -30 "$deps/llama-configure-tts.log" >&2; echo "error: llama.cpp configure (tts) failed (log: $deps/llama-configure-tts.log)" >&2; exit 1; }
  cmake --build "$bdir" --target llama-tts -j "$jobs"
  mkdir -p "$prefix"
  cp "$(find "$bdir" -name 'llama-tts' -type f -perm -u+x -print -quit)" "$prefix/"
  echo "$LLAMA_TAG $commit" >"$prefix/llama-cpp-version"
  echo "$want_stamp" >"$stamp"
  echo "llama-tts: $prefix/llama-tts"
  exit 0
fi
echo "building llama.cpp $LLAMA_TAG ($commit, $variant): ggml, llama, mtmd with $jobs jobs"
cmake -S "$src" -B "$bdir" "${gen[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_RPATH='$ORIGIN' -DGGML_NATIVE=ON -DGGML_CUDA=$cuda "${no_amx[@]}" \
  -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_MTMD=ON -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_COMMIT="$commit" \
  -DLLAMA_BUILD_NUMBER=0 >"$deps/llama-configure.log" 2>&1 ||
  { tail -30 "$deps/llama-configure.log" >&2; echo "error: llama.cpp configure failed (log: $deps/llama-configure.log)" >&2; exit 1; }
cmake --build "$bdir" --target ggml llama mtmd -j "$jobs"
cmake --install "$bdir" >/dev/null
# the vocabulary-only GGUFs the LLM twins reuse (real tokenizers)
mkdir -p "$prefix/share/rtf/vocab"
cp "$src"/models/ggml-vocab-qwen2.gguf "$src"/models/ggml-vocab-llama-bpe.gguf "$prefix/share/rtf/vocab/"
echo "$LLAMA_TAG $commit" >"$prefix/share/rtf/llama-cpp-version"
echo "$want_stamp" >"$stamp"
echo "llama.cpp installed: $prefix"
