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

# issue 30 §2: a load-time weight type for the LM stages: the F16 twin converted once into the
# kit's .rtf-cache (a second run reuses it), recorded in the result; a bad type names the flag.
KIT=$TMP/kit-f16
"$RTF" twin --family minicpmo45 --scale tiny --out "$KIT" >/dev/null 2>&1 || { echo "FAIL: twin"; fails=$((fails+1)); }
expect_rc 0 'converting the tts weights to q8_0' -- speak --models "$KIT" --text "Hello there." --max-audio-s 1 \
  --tts-weight-type q8_0 --llm-weight-type q4_k_m -o "$TMP/wt.wav" --json "$TMP/wt.json"
ls "$KIT"/.rtf-cache/*.q8_0.*.gguf "$KIT"/.rtf-cache/*.q4_k_m.*.gguf >/dev/null 2>&1 && echo "ok: converted files cached" \
  || { echo "FAIL: no converted files in $KIT/.rtf-cache"; ls -la "$KIT/.rtf-cache"; fails=$((fails+1)); }
out=$("$RTF" speak --models "$KIT" --text "Hello there." --max-audio-s 1 --tts-weight-type q8_0 --llm-weight-type q4_k_m \
  -q -o "$TMP/wt2.wav" 2>&1) && ! grep -q converting <<<"$out" && echo "ok: second run reuses the files" \
  || { echo "FAIL: second run: $out"; fails=$((fails+1)); }
python3 - "$TMP/wt.json" <<'PY' && echo "ok: weight types recorded" || { echo "FAIL: weight types"; fails=$((fails+1)); }
import json, sys
c = json.load(open(sys.argv[1]))["config"]
assert c["tts"]["placement"]["weight_type"] == "q8_0", c["tts"]["placement"]
assert c["llm"]["placement"]["weight_type"] == "q4_k_m", c["llm"]["placement"]
PY
expect_rc 1 'tts-weight-type' -- speak --models "$KIT" --text "Hi." --tts-weight-type q3 -o "$TMP/x.wav"
finish
