#!/usr/bin/env bash
# The C API as a user meets it: `cmake --install` to a temp prefix, examples/speak-wav.c
# compiled against that prefix alone (pkg-config), run on a tiny twin; its PCM equals
# `rtf speak --greedy`'s for the same text. Bad input: a clear message and exit 1.
source "$(dirname "$0")/../e2e/lib.sh"
BUILD=$(cd "$(dirname "$RTF")/.." && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PREFIX=$TMP/prefix
cmake --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log" 2>&1 || { cat "$TMP/install.log"; echo "FAIL: install"; exit 1; }
for f in include/rtf/rtf.h lib/librtf.so lib/pkgconfig/rtf.pc lib/libllama.so bin/rtf; do
  [[ -e $PREFIX/$f ]] || { echo "FAIL: $f not installed"; fails=$((fails+1)); }
done
# the installed binary runs from the prefix alone (its RUNPATH finds llama.cpp's libraries there)
env -u LD_LIBRARY_PATH "$PREFIX/bin/rtf" version >/dev/null && echo "ok: installed rtf runs" || { echo "FAIL: installed rtf"; fails=$((fails+1)); }
# a build with ggml's Vulkan module installs it, and the installed rtf loads that copy
if grep -q '^RTF_VULKAN:BOOL=ON' "$BUILD/CMakeCache.txt"; then
  mod=$PREFIX/lib/rtfkit/libggml-vulkan.so
  [[ -f $mod ]] || { echo "FAIL: the Vulkan module is not installed at $mod"; fails=$((fails+1)); }
  env -u LD_LIBRARY_PATH -u RTF_VULKAN_MODULE "$PREFIX/bin/rtf" devices --json >"$TMP/devices.json" 2>"$TMP/devices.err"
  python3 - "$TMP/devices.json" "$(readlink -f "$mod")" <<'PY' && echo "ok: the installed rtf loads the installed Vulkan module"     || { echo "FAIL: installed Vulkan module not loaded"; cat "$TMP/devices.err"; fails=$((fails+1)); }
import json, sys
b = json.load(open(sys.argv[1]))["backend"]
assert b["vulkan_module"] == sys.argv[2], (b["vulkan_module"], sys.argv[2], b["notes"])
PY
fi
# only the C API leaves the library
extra=$(nm -D --defined-only "$PREFIX/lib/librtf.so" | awk '$2 ~ /^[TDBRW]$/ {print $3}' | grep -v '^rtf_' || true)
[[ -z $extra ]] && echo "ok: librtf.so exports rtf_* only" || { echo "FAIL: librtf.so exports:"; echo "$extra" | head; fails=$((fails+1)); }

export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
flags=$(pkg-config --cflags --libs rtf) || { echo "FAIL: pkg-config rtf"; exit 1; }
cc -std=c11 -Wall -Wextra -Werror "$SRC/examples/speak-wav.c" $flags -lm -o "$TMP/speak-wav" \
  || { echo "FAIL: the example does not build against the installed library ($flags)"; exit 1; }
echo "ok: example built with: $flags"
export LD_LIBRARY_PATH=$PREFIX/lib

KIT=$TMP/kit
"$RTF" twin --family minicpmo45 --scale tiny --out "$KIT" >/dev/null 2>&1 || { echo "FAIL: twin"; exit 1; }
TEXT="One two three four five six seven."
"$TMP/speak-wav" "$KIT" "$TEXT" "$TMP/c.wav" '{"greedy": true, "min-audio-s": 3, "max-audio-s": 3}' \
  || { echo "FAIL: speak-wav"; exit 1; }
expect_rc 0 '' -- speak --models "$KIT" --text "$TEXT" --greedy --min-audio-s 3 --max-audio-s 3 -q -o "$TMP/cli.wav"
python3 - "$TMP/c.wav" "$TMP/cli.wav" <<'PY' && echo "ok: the C API's PCM equals rtf speak's" || { echo "FAIL: PCM differs"; fails=$((fails+1)); }
import sys, wave
a, b = (wave.open(p) for p in sys.argv[1:3])
assert (a.getframerate(), a.getnchannels(), a.getsampwidth()) == (b.getframerate(), b.getnchannels(), b.getsampwidth())
fa, fb = a.readframes(a.getnframes()), b.readframes(b.getnframes())
assert len(fa) >= 2 * 3 * 24000 and fa == fb, (len(fa), len(fb))
print("%d samples identical" % (len(fa) // 2))
PY

# bad input through the library: a message naming what is wrong, exit 1, still a valid WAV
out=$("$TMP/speak-wav" "$TMP/no-kit" "Hello." "$TMP/bad.wav" 2>&1); rc=$?
[[ $rc -eq 1 && $out == *no-kit* ]] && echo "ok: a missing kit is named" || { echo "FAIL: missing kit -> $rc: $out"; fails=$((fails+1)); }
out=$("$TMP/speak-wav" "$KIT" "Hello." "$TMP/bad.wav" '{"max-audio-s": -1}' 2>&1); rc=$?
[[ $rc -eq 1 && $out == *max-audio-s* ]] && echo "ok: a bad knob is named" || { echo "FAIL: bad knob -> $rc: $out"; fails=$((fails+1)); }
python3 -c "import wave,sys; wave.open(sys.argv[1]).getnframes()" "$TMP/bad.wav" && echo "ok: WAV valid after a failure" \
  || { echo "FAIL: bad.wav invalid"; fails=$((fails+1)); }
finish
