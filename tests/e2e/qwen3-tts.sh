#!/usr/bin/env bash
# Qwen3-TTS end to end on a tiny twin: rtf twin --family qwen3-tts, inspect, speak (WAV + JSON with
# its family and frames; 1920 samples a frame; the same seed the same WAV), demo, and the clear
# errors, a speaker reference (--speaker-file: another voice, a missing file named), and rtf serve (its PCM = rtf speak's). About 25 s.
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
expect_rc 0 '' -- speak --models "$K" --text "hello world" --max-audio-s 1 --speaker-file "$TMP/a.wav" -o "$TMP/v.wav" -q
if cmp -s "$TMP/b.wav" "$TMP/v.wav"; then echo "FAIL: a speaker reference left the WAV unchanged"; fails=$((fails+1)); else echo "ok: a speaker reference changes the WAV"; fi
expect_rc 1 'speaker-file.*no such file' -- speak --models "$K" --text hi --speaker-file "$TMP/none.wav" -o "$TMP/e.wav"
check "limits --models --json: gen (talker + 15 predictor steps) and decoder (code2wav: 1920 samples a frame)" "$K" "$RTF" <<'PY'
import json, subprocess, sys
j = json.loads(subprocess.run([sys.argv[2], "limits", "--models", sys.argv[1], "--json", "-"], capture_output=True, text=True, check=True).stdout)
st = j["models"]["stages"]
assert j["models"]["family"] == "qwen3-tts" and [s["stage"] for s in st] == ["gen", "decoder"], (j["models"].get("family"), st)
assert all(s["unit"] == "frame" and s["units_per_audio_s"] == 12.5 and s["flops_per_unit"] > 0 for s in st), st
g, d = st[0]["parts_per_unit"], st[1]["parts_per_unit"]
assert d["samples_per_frame"] == 1920, d
assert g["predictor_bytes"] > 0 and st[0]["bytes_per_unit"] > g["predictor_bytes"], g
PY
expect_rc 1 "qwen3-tts has no 'llm' file" -- twin --family qwen3-tts --only llm --out "$TMP/x"
# rtf serve on the kit (127.0.0.1 only): /health says the family; the speech PCM equals rtf speak's
"$RTF" speak --models "$K" --text "Hello there." --max-audio-s 1 -q -o - >"$TMP/ref.pcm" 2>/dev/null || echo "FAIL: reference pcm"
if serve_start --models "$K" --max-audio-s 1; then
  check "serve: /health says qwen3-tts; speech = rtf speak's PCM" "$PORT" "$TMP/ref.pcm" <<'PY'
import http.client, json, sys
port, ref = int(sys.argv[1]), open(sys.argv[2], "rb").read()
def req(method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse(); d = r.read(); c.close(); return r.status, d
st, h = req("GET", "/health")
assert st == 200 and json.loads(h)["family"] == "qwen3-tts", h
st, pcm = req("POST", "/v1/audio/speech", json.dumps({"model": "rtf", "input": "Hello there.", "response_format": "pcm"}))
assert st == 200 and len(ref) > 0 and pcm == ref, (st, len(pcm), len(ref))
PY
fi
serve_stop
finish
