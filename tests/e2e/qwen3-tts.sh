#!/usr/bin/env bash
# Qwen3-TTS end to end on a tiny twin: rtf twin --family qwen3-tts, inspect, speak (WAV + JSON with
# its family and frames; 1920 samples a frame; the same seed the same WAV), demo, and the clear
# errors (a speaker reference, not supported yet for this family). About 20 s.
source "$(dirname "$0")/lib.sh"
check() {
  local what=$1; shift
  if python3 - "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails+1)); fi
}
K=$TMP/kit
expect_rc 0 'mmproj-qwen3-tts.gguf' -- twin --family qwen3-tts --scale tiny --out "$K" --quiet
expect_rc 0 'pass: 2 file' -- inspect "$K"
expect_rc 0 'family qwen3-tts: [0-9]+ frames' -- speak --models "$K" --text "hello world, this is a test" \
  --max-audio-s 2 -o "$TMP/a.wav" --json "$TMP/a.json"
check "speak --json: family, frames (capped at 2 s = 25), 1920 samples a frame" "$TMP/a.json" "$TMP/a.wav" <<'PY'
import json, sys, wave
j = json.load(open(sys.argv[1]))
assert j["family"] == "qwen3-tts", j.get("family")
o = j["output"]
assert o["n_frames"] == 25 and o["n_samples"] == 25 * 1920, o
w = wave.open(sys.argv[2]); assert w.getframerate() == 24000 and w.getnframes() == o["n_samples"]
PY
expect_rc 0 '' -- speak --models "$K" --text "hello world" --max-audio-s 1 -o "$TMP/b.wav" -q
expect_rc 0 '' -- speak --models "$K" --text "hello world" --max-audio-s 1 -o "$TMP/c.wav" -q
if cmp -s "$TMP/b.wav" "$TMP/c.wav"; then echo "ok: two runs, same WAV"; else echo "FAIL: two runs differ"; fails=$((fails+1)); fi
expect_rc 0 'rtf +[0-9.]+ .*gapless_start_ms' -- demo --family qwen3-tts --scale tiny --kit-dir "$K" --max-audio-s 2 --out-dir "$TMP/demo" -q
expect_rc 1 'speaker-file.*not supported yet' -- speak --models "$K" --text hi --speaker-file "$TMP/a.wav" -o "$TMP/e.wav"
expect_rc 1 'Qwen3-TTS file: its stage floors are not costed yet' -- limits --models "$K"
expect_rc 1 "qwen3-tts has no 'llm' file" -- twin --family qwen3-tts --only llm --out "$TMP/x"
finish
