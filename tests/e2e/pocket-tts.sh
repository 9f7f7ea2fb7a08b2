#!/usr/bin/env bash
# Pocket TTS end to end on a tiny twin: rtf twin --family pocket-tts, inspect, speak (WAV + JSON
# that says its family, frames and the knobs), demo --family pocket-tts, the family knobs, and
# the clear errors (a prompt for a TTS without an LLM, a missing speaker file, the commands
# that take MiniCPM-o kits only). About 10 s.
source "$(dirname "$0")/lib.sh"
check() {  # check <description> <python over sys.argv[1:]>
  local what=$1; shift
  if python3 - "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails+1)); fi
}
K=$TMP/kit
expect_rc 0 'mmproj-pocket-tts.gguf' -- twin --family pocket-tts --scale tiny --out "$K" --quiet
expect_rc 0 'pass: 2 file' -- inspect "$K"
expect_rc 0 'family pocket-tts: [0-9]+ latent frames' -- speak --models "$K" --text "hello world, this is a test" \
  --family-first-frames 1 --family-frames 4 -o "$TMP/a.wav" --json "$TMP/a.json"
check "speak --json: family, frames, 1920 samples a frame, chunks 1, 2, 4, 4 ... frames, no gap" "$TMP/a.json" "$TMP/a.wav" <<'PY'
import json, sys, wave
j = json.load(open(sys.argv[1]))
assert j["family"] == "pocket-tts", j.get("family")
o = j["output"]
assert o["n_frames"] > 10 and o["n_samples"] == o["n_frames"] * 1920, o
assert o["sample_rate"] == 24000 and o["n_text_tokens"] > 3, o
assert j["config"]["family"]["first_frames"] == 1 and j["config"]["family"]["frames"] == 4
assert j["engines"]["variant"] == "english" and abs(j["engines"]["temp"] - 0.3) < 1e-6, j["engines"]
d = [round(c["duration_ms"]) for c in j["run"]["chunks"]]
assert d[:3] == [80, 160, 320] and all(x == 320 for x in d[3:-1]) and 0 < d[-1] <= 320, d
m = j["metrics"]
assert m["n_chunks"] >= 4 and m["rtf"] > 0, m
w = wave.open(sys.argv[2]); assert w.getframerate() == 24000 and w.getnframes() == o["n_samples"], w.getnframes()
PY
# the same text, seed and kit: the same PCM (the flow's noise restarts at the seed)
expect_rc 0 '' -- speak --models "$K" --text "hello world, this is a test" -o "$TMP/b.wav" -q
expect_rc 0 '' -- speak --models "$K" --text "hello world, this is a test" -o "$TMP/c.wav" -q
if cmp -s "$TMP/b.wav" "$TMP/c.wav"; then echo "ok: two runs, same WAV"; else echo "FAIL: two runs differ"; fails=$((fails+1)); fi
expect_rc 0 '' -- speak --models "$K" --text "hello world, this is a test" --seed 7 -o "$TMP/d.wav" -q
if ! cmp -s "$TMP/b.wav" "$TMP/d.wav"; then echo "ok: another seed, another WAV"; else echo "FAIL: --seed ignored"; fails=$((fails+1)); fi
expect_rc 0 'rtf +[0-9.]+ .*gapless_start_ms' -- demo --family pocket-tts --scale tiny --kit-dir "$K" --out-dir "$TMP/demo" -q
# errors: named, no crash
expect_rc 1 'TTS without an LLM.*--text' -- speak --models "$K" -p "Hello" -o "$TMP/e.wav"
expect_rc 1 'speaker-file.*no such file' -- speak --models "$K" --text hi --speaker-file /nonexistent.wav -o "$TMP/e.wav"
expect_rc 1 'family-first-frames' -- speak --models "$K" --text hi --family-first-frames 0 -o "$TMP/e.wav"
expect_rc 1 'pocket-tts kit: rtf serve runs MiniCPM-o 4.5 kits only' -- serve --models "$K" --port 0
expect_rc 1 'pocket-tts kit: rtf lm-bench' -- lm-bench --models "$K"
expect_rc 1 'unknown family' -- twin --family nope --out "$TMP/x"
finish
