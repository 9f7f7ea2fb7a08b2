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
# .deps/llama.cpp-<tag>-vulkan/module/libggml-vulkan.so, where .deps/llama.cpp-<tag>-<variant>
# is a link into a cache outside the clone, shared by every clone on the machine:
# ${RTF_LLAMA_CACHE_DIR:-~/.cache/rtfkit/llama.cpp}/<tag>-<variant>-<key>, the key being the
# hash of what decides the result (the lock's sha512, the variant, this recipe and its
# CMake flags, the C/C++ compiler versions, and for the -march=native builds the CPU's
# feature flags). An entry is complete only with its marker, written last after an atomic
# rename; a partial or corrupt entry is said so and rebuilt (scripts/build-cache.sh).
# RTF_LLAMA_CACHE=off builds inside the clone (.deps/llama-cache-off/) whatever the cache
# holds. The sources (for gguf-py and by-hand builds) are an entry too: .deps/llama.cpp-<tag>. The module is built from the same
# tree with GGML_BACKEND_DL, so the cpu install's libggml loads it at run time
# (ggml_backend_load): nothing else is built twice. It needs Debian's libvulkan-dev, glslc
# and spirv-headers (scripts/deps-debian-vulkan.txt) and one patch of ours to the tree
# (scripts/patches/ggml-vulkan-old-headers.patch: Debian 12's Vulkan headers are 1.3.239).
# Safe to run twice: a finished entry is reused, nothing is downloaded or rebuilt.
# Environment: RTF_JOBS (parallel jobs, default: nproc), RTF_DEPS_DIR (default .deps),
# RTF_LLAMA_CACHE (on | off), RTF_LLAMA_CACHE_DIR, RTF_CUDA_ARCH (--cuda: CMAKE_CUDA_ARCHITECTURES).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=llama-cpp.lock
source "$root/scripts/llama-cpp.lock"
# shellcheck source=build-cache.sh
source "$root/scripts/build-cache.sh"
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
mode=${RTF_LLAMA_CACHE:-on}
case "$mode" in
  on) cache=${RTF_LLAMA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rtfkit/llama.cpp} ;;
  off) cache="$deps/llama-cache-off" ;;
  *) echo "fetch-llama.sh: RTF_LLAMA_CACHE='$mode' (allowed: on, off)" >&2; exit 1 ;;
esac
mkdir -p "$deps" "$cache"
deps=$(cd "$deps" && pwd) cache=$(cd "$cache" && pwd)
tgz="$NPM_PACKAGE-$NPM_VERSION.tgz"
patch="$root/scripts/patches/ggml-vulkan-old-headers.patch"
# bump when the build recipe below changes, so existing entries are not reused
recipe=4

# 1. what this variant builds, and so what its cache key covers
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
off=(-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF
     -DLLAMA_OPENSSL=OFF)
case $variant in
  vulkan)   # only the Vulkan backend module (its shaders are compiled by the build)
    args=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON -DGGML_VULKAN=ON
          -DGGML_CPU=OFF -DGGML_NATIVE=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TOOLS=OFF
          -DLLAMA_BUILD_MTMD=OFF "${off[@]}")
    targets=(ggml-vulkan) what="ggml's Vulkan backend module (~6 min on 2 cores)" ;;
  tts)      # llama.cpp's llama-tts, static, with the cpu build's flags (same kernels as our libraries)
    args=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON -DGGML_CUDA=OFF
          "${no_amx[@]}" -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_MTMD=ON
          -DLLAMA_CURL=OFF "${off[@]}")
    targets=(llama-tts) what="llama-tts (static, common + mtmd; ~10 min on 2 cores)" ;;
  *)        # only the libraries (no tools, tests, examples, server, common)
    args=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_RPATH='$ORIGIN'
          -DGGML_NATIVE=ON -DGGML_CUDA=$cuda "${no_amx[@]}" -DLLAMA_BUILD_COMMON=OFF
          -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_MTMD=ON "${off[@]}")
    targets=(ggml llama mtmd) what="ggml, llama, mtmd (~5 min on 2 cores)"
    # --cuda: RTF_CUDA_ARCH (e.g. native, 90) compiles the kernels for that GPU only, not
    # for ggml's default list (scripts/device-check.sh: minutes instead of most of an hour)
    [[ $variant == cuda && -n ${RTF_CUDA_ARCH:-} ]] && args+=(-DCMAKE_CUDA_ARCHITECTURES="$RTF_CUDA_ARCH") ;;
esac
keytext="llama.cpp $LLAMA_TAG from $NPM_PACKAGE@$NPM_VERSION sha512 $NPM_SHA512
variant $variant recipe $recipe generator ${gen[*]:-make}
flags ${args[*]}
cc $(${CC:-cc} --version | head -1)
cxx $(${CXX:-c++} --version | head -1)"
# -march=native compiles for this CPU: another CPU model gets its own entry
[[ $variant != vulkan ]] &&
  keytext+=$'\n'"cpu $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | tr ' ' '\n' | sort | tr '\n' ' ' | sha256sum | cut -c1-16)"
[[ $variant == cuda ]] && keytext+=$'\n'"nvcc $(nvcc --version 2>/dev/null | tail -1)"
[[ $variant == vulkan ]] && keytext+=$'\n'"patch $(sha256sum "$patch" | cut -c1-16)"
name="$LLAMA_TAG-$variant-$(cache_key "$keytext")"
entry="$cache/$name"
link="$deps/llama.cpp-$LLAMA_TAG-$variant"
case $variant in vulkan) result=$entry/module ;; tts) result=$entry/bin ;; *) result=$entry/install ;; esac

use_entry() {   # link the clone's .deps names to the entry (and to the sources, for gguf-py)
  local d
  for d in "$link" "$deps/llama.cpp-$LLAMA_TAG"; do   # a clone's own build from before the cache
    [[ -d $d && ! -L $d ]] && rm -rf "$d"
  done
  ln -sfnT "$entry" "$link"
  [[ -n ${src_entry:-} ]] && ln -sfnT "$src_entry" "$deps/llama.cpp-$LLAMA_TAG"
  return 0
}

# 2. the sources: the npm tarball (verified by sha512) and the tree cloned from its bundle,
# an entry of their own so that any clone's gguf-py and by-hand builds share them
src_keytext="llama.cpp $LLAMA_TAG sources from $NPM_PACKAGE@$NPM_VERSION sha512 $NPM_SHA512 patch $(sha256sum "$patch" | cut -c1-16)"
src_name="src-$LLAMA_TAG-$(cache_key "$src_keytext")"
src_entry=""
ensure_sources() {
  local src="$cache/$src_name" why
  if why=$(cache_check "$src" "$src_keytext"); then src_entry=$src; return 0; fi
  [[ $why == absent ]] || echo "llama.cpp sources in the cache: $why; unpacking them again"
  local tarball="$deps/$tgz"
  [[ -f $tarball ]] || tarball="$cache/$tgz"
  if [[ ! -f "$tarball" ]]; then
    echo "fetching $NPM_PACKAGE@$NPM_VERSION from the npm registry"
    local tmp; tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "$NPM_PACKAGE@$NPM_VERSION" >/dev/null)
    mv "$tmp/$tgz" "$tarball.tmp.$$" && mv "$tarball.tmp.$$" "$tarball"
    rmdir "$tmp"
  fi
  local actual; actual=$(sha512sum "$tarball" | cut -d' ' -f1)
  if [[ "$actual" != "$NPM_SHA512" ]]; then
    echo "error: checksum mismatch for $tarball" >&2
    echo "  expected sha512: $NPM_SHA512 (scripts/llama-cpp.lock)" >&2
    echo "  actual   sha512: $actual" >&2
    echo "  delete the file to fetch it again, or update the lock file deliberately" >&2
    exit 1
  fi
  local stage; stage=$(cache_stage "$cache" "$src_name")
  tar -xzf "$tarball" -C "$stage" package/llama/gitRelease.bundle
  git -c advice.detachedHead=false clone --quiet "$stage/package/llama/gitRelease.bundle" "$stage/tree"
  git -C "$stage/tree" rev-parse --short=12 HEAD >"$stage/tree/.rtf-commit"
  rm -rf "$stage/tree/.git" "$stage/package"
  # Debian 12's Vulkan headers are 1.3.239: one patch of ours to the Vulkan backend
  # (a no-op on newer headers; the other backends do not compile the file it touches)
  (cd "$stage/tree" && git apply "$patch") || { echo "error: could not apply $patch to the llama.cpp sources" >&2; exit 1; }
  find "$stage/tree" -mindepth 1 -maxdepth 1 -exec mv -t "$stage" {} +
  rmdir "$stage/tree"
  cache_commit "$stage" "$src" "$src_keytext"
  src_entry=$src
}

if why=$(cache_check "$entry" "$keytext") && [[ $mode == on ]]; then
  ensure_sources
  use_entry
  echo "llama.cpp $LLAMA_TAG ($variant) from the cache: $result"
  exit 0
fi
cache_lock "$cache" "$name"
if [[ $mode == on ]] && why=$(cache_check "$entry" "$keytext"); then   # another clone built it meanwhile
  ensure_sources; use_entry
  echo "llama.cpp $LLAMA_TAG ($variant) from the cache: $result"
  exit 0
fi
case "$why" in
  absent|"") ;;
  *) [[ $mode == on ]] && echo "llama.cpp cache entry $entry is $why; rebuilding it" ;;
esac
[[ $mode == off ]] && echo "RTF_LLAMA_CACHE=off: building llama.cpp ($variant) in $cache"
ensure_sources
src=$src_entry
commit=$(cat "$src/.rtf-commit")

# 3. configure and build in a build tree beside the entry (kept: scripts/build-llama-bench.sh
# compiles its tool into it), install into a staging directory, then commit the entry
bdir="$cache/build-$name"
stage=$(cache_stage "$cache" "$name")
echo "building llama.cpp $LLAMA_TAG ($commit, $variant): $what with $jobs jobs"
inst=(); [[ $variant == cpu || $variant == cuda ]] && inst=(-DCMAKE_INSTALL_PREFIX="$stage/install")
log="$cache/configure-$name.log"
cmake -S "$src" -B "$bdir" "${gen[@]}" "${args[@]}" "${inst[@]}" \
  -DLLAMA_BUILD_COMMIT="$commit" -DLLAMA_BUILD_NUMBER=0 >"$log" 2>&1 ||
  { tail -30 "$log" >&2
    echo "error: llama.cpp configure ($variant) failed (log: $log)" >&2
    [[ $variant == vulkan ]] && echo "  it needs the packages in scripts/deps-debian-vulkan.txt" >&2
    exit 1; }
cmake --build "$bdir" --target "${targets[@]}" -j "$jobs"
case $variant in
  vulkan)
    mkdir -p "$stage/module"
    cp "$(find "$bdir" -name 'libggml-vulkan.so' -print -quit)" "$stage/module/"
    echo "$LLAMA_TAG $commit" >"$stage/module/llama-cpp-version" ;;
  tts)
    mkdir -p "$stage/bin"
    cp "$(find "$bdir" -name 'llama-tts' -type f -perm -u+x -print -quit)" "$stage/bin/"
    echo "$LLAMA_TAG $commit" >"$stage/bin/llama-cpp-version" ;;
  *)
    cmake --install "$bdir" >/dev/null
    # the vocabulary-only GGUFs the LLM twins reuse (real tokenizers)
    mkdir -p "$stage/install/share/rtf/vocab"
    cp "$src"/models/ggml-vocab-qwen2.gguf "$src"/models/ggml-vocab-llama-bpe.gguf "$stage/install/share/rtf/vocab/"
    echo "$LLAMA_TAG $commit" >"$stage/install/share/rtf/llama-cpp-version"
    # the installed CMake package must not point into the staging directory it moves from
    if grep -rlF "$stage" "$stage/install/lib/cmake" >/dev/null 2>&1; then
      echo "error: llama.cpp's installed CMake files name the staging path $stage (not relocatable)" >&2; exit 1
    fi ;;
esac
printf '%s\n' "$bdir" >"$stage/build-tree"
cache_commit "$stage" "$entry" "$keytext"
use_entry
echo "llama.cpp $LLAMA_TAG ($variant) built into the cache: $result"
