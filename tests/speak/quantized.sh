#!/usr/bin/env bash
# Issue 29 §1b: quantized LM weights speak on whichever CPU CI lands on. On an AMX Xeon the
# pinned ggml's AMX mul_mat (Q8_0, Q4_K, ...) died with SIGILL (exit 132) before any audio;
# a tiny q8_0 and a tiny q4_k_m twin must speak (exit 0, audio written) on every CPU.
source "$(dirname "$0")/../e2e/lib.sh"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
amx=no; grep -qw amx_tile /proc/cpuinfo && amx=yes
echo "CPU: $cpu (AMX: $amx)"
for t in q8_0 q4_k_m; do
  KIT=$TMP/kit-$t
  "$RTF" twin --family minicpmo45 --scale tiny --type "$t" --out "$KIT" >/dev/null 2>&1 || { echo "FAIL: twin --type $t"; fails=$((fails+1)); continue; }
  expect_rc 0 '' -- speak --models "$KIT" --text "Hello there." --max-audio-s 1 -q -o "$TMP/$t.wav" --json "$TMP/$t.json"
  python3 - "$TMP/$t.wav" "$TMP/$t.json" "$t" <<'PY' && echo "ok: $t audio" || { echo "FAIL: $t audio"; fails=$((fails+1)); }
import json, sys, wave
w = wave.open(sys.argv[1]); n = w.getnframes()
j = json.load(open(sys.argv[2]))
assert n > 0 and j["output"]["n_audio_codes"] > 0, (n, j["output"])
print("%s: %d codes, %.2f s" % (sys.argv[3], j["output"]["n_audio_codes"], n / w.getframerate()))
PY
done
finish
