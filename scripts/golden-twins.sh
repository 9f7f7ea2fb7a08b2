#!/usr/bin/env bash
# Make the seeded full-shape twins the golden data was computed on (../shared/golden/*),
# once per clone, and check each file's sha256 against the golden READMEs: a twin that
# differs from the one the reference runtime ran on would make every golden test moot.
#
#   ./scripts/golden-twins.sh            # both twins into .cache/ (t2w ~1 min, tts ~30 s)
#   ./scripts/golden-twins.sh --check    # only verify what is there (exit 1 if missing/wrong)
#
# Writes .cache/t2w-golden-twin (Token2Wav, ~1.1 GB) and .cache/tts-golden-twin (TTS +
# projector, ~1.2 GB) — the defaults of test-t2w-golden and test-lm-golden. Needs Debian's
# python3-numpy and the pinned llama.cpp's gguf-py (scripts/fetch-llama.sh puts it in .deps/).
# RTF_T2W_GOLDEN_TWIN / RTF_TTS_TWIN_DIR choose other places; GGUF_PY another gguf-py.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${RTF_SHARED_DIR:-$root/../shared}
t2w=${RTF_T2W_GOLDEN_TWIN:-$root/.cache/t2w-golden-twin}
tts=${RTF_TTS_TWIN_DIR:-$root/.cache/tts-golden-twin}
# The default places are links into a machine-wide cache keyed by the golden sums
# (${RTF_GOLDEN_CACHE_DIR:-~/.cache/rtfkit/golden}/<name>-<key>), so a second clone on the
# machine verifies the twins instead of generating 2.3 GB again; RTF_GOLDEN_CACHE=off keeps
# them in the clone. The files are checked against the golden sha256 either way.
gcache=${RTF_GOLDEN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rtfkit/golden}
[[ ${RTF_GOLDEN_CACHE:-on} == off ]] && gcache=""
check_only=0
case "${1:-}" in
  --check) check_only=1 ;;
  -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
  "") ;;
  *) echo "golden-twins.sh: unknown option '$1' (allowed: --check, --help)" >&2; exit 1 ;;
esac

# "<sha256>  <relative path>" lines, as printed in the golden READMEs
t2w_sums="c48a227b3be3a68c1c0934d602ea1c67a11443ae1641fc87a3eada1c2ac9f8c1  encoder.gguf
8daece63d41c918e03fe4e05cf6bc6ea97a336316899010f28108f21ce7cce40  flow_extra.gguf
f49d60dbba0ccb6c0810b9a0f8639c97e500f436d340a9808cacbde0bb6abb2c  flow_matching.gguf
368a1a090397f6e9e199ccf9a252bf52355b81bdf1a873986c6f9dbd192816d9  hifigan2.gguf
54126658450225c9f30e6ffa4d2210f98088a6d6066488450ff4828dca0bbf47  prompt_cache.gguf"
tts_sums="6f75ec88ea9373991f4396db8e6ace3317a994054557d7ed400cbb0e2c8aaf9e  tts/MiniCPM-o-4_5-tts-F16.gguf
181f742c2149d3684395a93a541228b910755c4c8202d89a9bf1989adeb58530  tts/MiniCPM-o-4_5-projector-F16.gguf
6d5b54a237a414c7d1e007ed7998af2af0000d1136d53ec93d5e7550063281d8  input/msg0.ids.i32
6b167d79ce6613af940ad3cec65ca93ea2f8cfac454ddb6526af8ba1b15e9f75  input/msg0.hid.f32
cdd236bbbb2af199f2fafba993f410d9af996bfe49d5c4f85f61c2a3aa4e08f6  input/msg1.ids.i32
04a2f6704d9bd670f480f81676fa4f6c6bc6941983d759e358ea3d745a0259c1  input/msg1.hid.f32
99f7ca67f1a18bb8a76741a8c5d2de35489d4dafdbdb05f130657d05a063f99e  input/msg2.ids.i32
fd9a817457606c365e2a9f4c8bc03c141afefd9b75cd88fba34b5c3763335a93  input/msg2.hid.f32"

# verify DIR SUMS: 0 when every file is there with its sum (a stamp skips re-hashing
# unchanged files on the next run)
verify() {
  local dir=$1 sums=$2 stamp=$1/.golden-verified
  if [[ -f $stamp ]] && ! find "$dir" -newer "$stamp" -type f ! -name .golden-verified | grep -q . ; then
    [[ $(cat "$stamp") == "$sums" ]] && return 0
  fi
  [[ -d $dir ]] || return 1
  (cd "$dir" && sha256sum --quiet -c - <<<"$sums") 2>/dev/null || return 1
  printf '%s' "$sums" > "$stamp"
}

make_twin() {  # make_twin NAME DIR SUMS GENERATOR [DEFAULT-PLACE]
  local name=$1 dir=$2 sums=$3 gen=$4
  if [[ -n $gcache && ${5:-0} == 1 ]]; then   # the default place: a link into the machine cache
    local real; real="$gcache/$name-$(printf '%s' "$sums" | sha256sum | cut -c1-16)"
    mkdir -p "$gcache"
    [[ -d $dir && ! -L $dir ]] && rm -rf "$dir"     # a clone's own copy from before the cache
    ln -sfnT "$real" "$dir"
    exec 8>"$real.lock"; flock 8                    # another clone generating it: wait
    dir=$real
  fi
  if verify "$dir" "$sums"; then echo "golden-twins: $name twin ok ($dir)"; return 0; fi
  if ((check_only)); then echo "golden-twins: $name twin missing or not the golden one: $dir" >&2; return 1; fi
  local gguf_py=${GGUF_PY:-$(ls -d "$root"/.deps/llama.cpp-*/gguf-py 2>/dev/null | head -1)}
  [[ -d $gguf_py ]] || { echo "golden-twins: no gguf-py (run scripts/setup.sh, or set GGUF_PY)" >&2; return 1; }
  echo "golden-twins: generating the $name twin in $dir"
  local t0; t0=$(date +%s)
  rm -rf "$dir.tmp"
  GGUF_PY=$gguf_py /usr/bin/python3 "$shared/tools/$gen" "$dir.tmp" >/dev/null
  if ! (cd "$dir.tmp" && sha256sum --quiet -c - <<<"$sums"); then
    echo "golden-twins: the generated $name twin does not match the golden sha256 (tools or gguf-py changed?)" >&2
    return 1
  fi
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
  printf '%s' "$sums" > "$dir/.golden-verified"
  echo "golden-twins: $name twin made in $(( $(date +%s) - t0 )) s"
}

mkdir -p "$(dirname "$t2w")" "$(dirname "$tts")"
make_twin t2w "$t2w" "$t2w_sums" t2w_twin.py "$([[ -z ${RTF_T2W_GOLDEN_TWIN:-} ]] && echo 1)"
make_twin tts "$tts" "$tts_sums" tts_twin.py "$([[ -z ${RTF_TTS_TWIN_DIR:-} ]] && echo 1)"
