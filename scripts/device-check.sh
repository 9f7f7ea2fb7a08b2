#!/usr/bin/env bash
# The one script to run when a machine with an NVIDIA GPU is lent for a short while (no
# network there, many cores): build rtfkit against ggml's CUDA backend, then measure the GPU
# the way the CPU figures are measured, and leave every result as JSON under $OUT.
#
#   scripts/device-check.sh --dry-run     what it would run (steps, commands, result files); exit 0
#   OUT=/some/dir scripts/device-check.sh run it (default OUT: ./device-check-out)
#
# Steps (each prints its time; the whole aims at < 8 min on 16 cores):
#   1. preflight: nvcc, nvidia-smi, cmake, ninja, the Debian libraries the build needs, and the
#      pinned llama.cpp tarball (no network: .deps/node-llama-cpp-<version>.tgz travels with
#      the tree, or the cache of scripts/fetch-llama.sh holds it); anything missing: exit 1,
#      naming it
#   2. build: scripts/fetch-llama.sh --cuda for this GPU's architecture only
#      (RTF_CUDA_ARCH=native), then the `cuda` preset (build-cuda/bin/rtf)
#   3. rtf devices, rtf version, nvidia-smi        -> devices.json, version.json, gpu.txt
#   4. rtf limits (the CPU and GPU matmul peaks)   -> limits.json
#   5. the demo's twin kit (cpu scale; DEVICE_CHECK_SCALE=tiny for a smoke run) spoken with
#      every stage on the GPU, and with none       -> demo-gpu.json, demo-cpu.json (+ .wav)
#   6. rtf lm-bench on the kit's LLM and TTS, on the GPU -> lm-bench.json
#   7. summary.json: each step's exit code and seconds
# The session copies $OUT back; nothing here needs the network.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=llama-cpp.lock
source scripts/llama-cpp.lock
dry=0
for a in "$@"; do
  case "$a" in
    --dry-run) dry=1 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "device-check.sh: unknown option '$a' (allowed: --dry-run, --help)" >&2; exit 1 ;;
  esac
done
OUT=${OUT:-$root/device-check-out}
scale=${DEVICE_CHECK_SCALE:-cpu}
jobs=${RTF_JOBS:-$(nproc)}
rtf=build-cuda/bin/rtf
kit=$OUT/kit
dev=CUDA0
place=(--llm-device $dev --tts-device $dev --t2w-device-t2m $dev --t2w-device-voc $dev)
demo_common=(demo --scale "$scale" --kit-dir "$kit" --profile none)

# name|command (run by bash -c in the repository root; no '|' inside)|result files
steps=(
  "build-llama|RTF_CUDA_ARCH=native RTF_JOBS=$jobs scripts/fetch-llama.sh --cuda|"
  "build-rtf|cmake --preset cuda -DRTF_BUILD_TESTS=OFF -DRTF_BUILD_BENCHMARKS=OFF >/dev/null && cmake --build --preset cuda --target rtf -j $jobs|"
  "devices|$rtf devices --json >$OUT/devices.json && $rtf version --json >$OUT/version.json && nvidia-smi -q >$OUT/gpu.txt|devices.json version.json gpu.txt"
  "limits|$rtf limits --json $OUT/limits.json|limits.json"
  "demo-gpu|$rtf ${demo_common[*]} ${place[*]} --out-dir $OUT/demo-gpu && cp $OUT/demo-gpu/demo.json $OUT/demo-gpu.json|demo-gpu.json demo-gpu/demo.wav"
  "demo-cpu|$rtf ${demo_common[*]} --out-dir $OUT/demo-cpu && cp $OUT/demo-cpu/demo.json $OUT/demo-cpu.json|demo-cpu.json demo-cpu/demo.wav"
  "lm-bench|$rtf lm-bench --models $kit --stage llm,tts --device $dev --json $OUT/lm-bench.json|lm-bench.json"
)

if ((dry)); then
  echo "device-check (dry run): OUT=$OUT, twin kit scale $scale, $jobs jobs, the GPU as $dev"
  echo "preflight: nvcc nvidia-smi cmake ninja pkg-config; libraries: hwloc sndfile samplerate sonic nlohmann_json CLI11;"
  echo "           the tarball .deps/$NPM_PACKAGE-$NPM_VERSION.tgz or the fetch-llama.sh cache"
  i=1
  for s in "${steps[@]}"; do
    IFS='|' read -r name cmd files <<<"$s"
    printf '%d. %-12s %s\n' "$i" "$name" "$cmd"
    [[ -n $files ]] && printf '   %-12s -> %s\n' "" "$(for f in $files; do printf '%s ' "$OUT/$f"; done)"
    i=$((i + 1))
  done
  echo "then: $OUT/summary.json (each step's exit code and seconds)"
  exit 0
fi

# 1. preflight: every missing thing named at once
missing=()
for c in nvcc nvidia-smi cmake ninja pkg-config python3; do command -v "$c" >/dev/null || missing+=("$c (command)"); done
[[ -f /usr/include/sonic.h ]] || missing+=("sonic.h (libsonic-dev)")
for p in hwloc sndfile samplerate; do pkg-config --exists "$p" 2>/dev/null || missing+=("$p (pkg-config; Debian: scripts/deps-debian.txt)"); done
[[ -f /usr/include/nlohmann/json.hpp ]] || missing+=("nlohmann/json.hpp (nlohmann-json3-dev)")
[[ -f /usr/include/CLI/CLI.hpp ]] || missing+=("CLI/CLI.hpp (libcli11-dev)")
cache=${RTF_LLAMA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rtfkit/llama.cpp}
[[ -f .deps/$NPM_PACKAGE-$NPM_VERSION.tgz || -f $cache/$NPM_PACKAGE-$NPM_VERSION.tgz ]] ||
  missing+=(".deps/$NPM_PACKAGE-$NPM_VERSION.tgz (copy it from $cache and carry it: there is no network here)")
if ((${#missing[@]})); then
  echo "device-check: cannot run; missing:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi

mkdir -p "$OUT"
summary=()
t_all=$(date +%s)
for s in "${steps[@]}"; do
  IFS='|' read -r name cmd files <<<"$s"
  echo "== $name: $cmd"
  t=$(date +%s)
  bash -c "$cmd" >"$OUT/$name.log" 2>&1; rc=$?
  dt=$(( $(date +%s) - t ))
  tail -5 "$OUT/$name.log"
  echo "== $name: exit $rc in $dt s (log: $OUT/$name.log)"
  summary+=("{\"step\": \"$name\", \"rc\": $rc, \"seconds\": $dt}")
  # nothing after a failed build can run
  if ((rc != 0)) && [[ $name == build-* ]]; then break; fi
done
{ echo "{\"cpu\": \"$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')\", \"nproc\": $(nproc),"
  echo " \"seconds\": $(( $(date +%s) - t_all )), \"steps\": ["
  (IFS=,; echo "  ${summary[*]}")
  echo "]}"; } >"$OUT/summary.json"
cat "$OUT/summary.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if all(s["rc"]==0 for s in d["steps"]) else 1)' "$OUT/summary.json"
