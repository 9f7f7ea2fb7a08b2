#!/usr/bin/env bash
# Set up rtfkit on Debian 12: install system packages (scripts/deps-debian.txt), fetch
# and build the pinned llama.cpp (scripts/fetch-llama.sh), configure and build build/.
# Safe to run twice: installed packages, the llama.cpp build and the CMake build are kept.
#
#   ./scripts/setup.sh            release build into build/ (the binary: build/bin/rtf)
#   ./scripts/setup.sh --cuda     also use llama.cpp's CUDA backend (needs nvcc)
#   ./scripts/setup.sh --vulkan   also ggml's Vulkan backend, loaded as a module by build/
#                                 (Debian's Vulkan packages; ~6 min more on 2 cores; docs/vulkan.md)
#   RTF_LLAMA_CPP_DIR=~/llama.cpp ./scripts/setup.sh   build against your own checkout
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cuda=0 vulkan=0
for a in "$@"; do
  case "$a" in
    --cuda) cuda=1 ;;
    --vulkan) vulkan=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$a' (allowed: --cuda, --vulkan, --help)" >&2; exit 1 ;;
  esac
done
if ((cuda && vulkan)); then echo "setup.sh: --cuda and --vulkan build different trees; pick one" >&2; exit 1; fi

# 1. system packages: only the missing ones, so a second run does nothing
lists=(scripts/deps-debian.txt); ((vulkan)) && lists+=(scripts/deps-debian-vulkan.txt)
mapfile -t pkgs < <(cat "${lists[@]}" | grep -v '^\s*#' | sed '/^\s*$/d')
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}"
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. llama.cpp (pinned release, verified) unless the user brings their own checkout
cmake_args=()
if [[ -n "${RTF_LLAMA_CPP_DIR:-}" ]]; then
  cmake_args+=("-DRTF_LLAMA_CPP_DIR=$RTF_LLAMA_CPP_DIR")
else
  if ((cuda)); then scripts/fetch-llama.sh --cuda; else scripts/fetch-llama.sh; fi
  if ((vulkan)); then scripts/fetch-llama.sh --vulkan; fi
fi
((cuda)) && cmake_args+=(-DRTF_CUDA=ON)

# 3. rtfkit itself
preset=release
((cuda)) && preset=cuda
((vulkan)) && preset=vulkan
cmake --preset "$preset" "${cmake_args[@]}" >/dev/null
cmake --build --preset "$preset"
bdir=build; ((cuda)) && bdir=build-cuda
echo "rtfkit built: $bdir/bin/rtf"
