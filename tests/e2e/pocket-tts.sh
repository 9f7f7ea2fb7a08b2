#!/usr/bin/env bash
# Pocket TTS end to end on a tiny twin: rtf twin --family pocket-tts, inspect, speak (WAV + JSON
# that says its family, frames and the knobs), demo --family pocket-tts, the family knobs, and
# the clear errors (a prompt for a TTS without an LLM, a missing speaker file, the commands
# that take MiniCPM-o kits only), tune's family candidates, a kit voice (voices/NAME.wav) by
# name in speak and serve. About 25 s.
source "$(dirname "$0")/lib.sh"
check() {  # check <description> <python over sys.argv[1:]>
  local what=$1; shift
  if python3 - "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails+1)); fi
}
K=$TMP/kit
expect_rc 0 'mmproj-pocket-tts.gguf' -- twin --family pocket-tts --scale tiny --out "$K" --quiet
expect_rc 0 'pass: 2 file' -- inspect "$K"
expect_rc 0 'family pocket-tts: [0-9]+ frames of 80 ms' -- speak --models "$K" --text "hello world, this is a test" \
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
# rtf bench's speak workload on the kit: 3 runs, its audio gates passed (VALID, exit 0). No
# targets (bench's default asks for RTF <= 1 and no starvation): a test here checks that the
# protocol runs and judges the audio, not this machine's speed under whatever else it runs.
expect_rc 0 'VALID \(exit 0\)' -- bench --workload speak --models "$K" --runs 3 --no-history --set 'text=Hello world, a bench.' \
  --target-rtf off --target-starvation off --json "$TMP/bench.json"
check "bench: VALID with no target judged (speed is not this test's to check)" "$TMP/bench.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
v = j["configs"][0]["verdict"]
assert v["status"] == "VALID" and v["targets"] == [] and v["exit_code"] == 0, v
PY
check "limits --models --json: the family's two stages, gen and decoder, per frame" "$K" "$RTF" <<'PY'
import json, subprocess, sys
j = json.loads(subprocess.run([sys.argv[2], "limits", "--models", sys.argv[1], "--json", "-"], capture_output=True, text=True, check=True).stdout)
st = j["models"]["stages"]
assert j["models"]["family"] == "pocket-tts" and [s["stage"] for s in st] == ["gen", "decoder"], (j["models"].get("family"), st)
assert all(s["unit"] == "frame" and s["units_per_audio_s"] == 12.5 and s["flops_per_unit"] > 0 for s in st), st
PY
# rtf tune on the kit: the family's own candidates (its stages gen / decoder, the chunk sizes), one A/B run end to end
expect_rc 0 'family-first-frames=1 +stage all' -- tune --models "$K" --list
expect_rc 0 'workload speak \(family pocket-tts\)' -- tune --models "$K" --list
expect_rc 0 'wrote .*tuned.json' -- tune --models "$K" --set 'text=Hello world.' --candidate pipeline:family-frames=4 \
  --runs 3 --warmup 0 --no-history -o "$TMP/tuned.json" --json "$TMP/tune.json"
check "tune --json says the family" "$TMP/tune.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); assert j["family"] == "pocket-tts" and j["trials"], j.get("family")
PY
expect_rc 1 'give the input' -- tune --models "$K" --runs 3
# errors: named, no crash
expect_rc 1 'TTS without an LLM.*--text' -- speak --models "$K" -p "Hello" -o "$TMP/e.wav"
expect_rc 1 'speaker-file.*no such file' -- speak --models "$K" --text hi --speaker-file /nonexistent.wav -o "$TMP/e.wav"
expect_rc 1 'family-first-frames' -- speak --models "$K" --text hi --family-first-frames 0 -o "$TMP/e.wav"
expect_rc 1 'batch.*pocket-tts kit' -- serve --models "$K" --port 0 --batch on
expect_rc 1 'pocket-tts kit: rtf lm-bench' -- lm-bench --models "$K"
expect_rc 1 'unknown family' -- twin --family nope --out "$TMP/x"
# a kit voice: voices/alt.wav by name is the same as that file given with --speaker-file
mkdir -p "$K/voices" && cp "$TMP/b.wav" "$K/voices/alt.wav"
expect_rc 0 '' -- speak --models "$K" --text "hello world" --voice alt -o "$TMP/v1.wav" -q
expect_rc 0 '' -- speak --models "$K" --text "hello world" --speaker-file "$K/voices/alt.wav" -o "$TMP/v2.wav" -q
if cmp -s "$TMP/v1.wav" "$TMP/v2.wav"; then echo "ok: --voice alt = --speaker-file voices/alt.wav"; else echo "FAIL: a kit voice differs from its file"; fails=$((fails+1)); fi
expect_rc 1 "voice.*no voice 'nobody'.*default, alt" -- speak --models "$K" --text hi --voice nobody -o "$TMP/e.wav"
# rtf serve on the same kit, 127.0.0.1 only: the same endpoints; the streamed PCM equals rtf speak's
TEXT="hello from the server"
"$RTF" speak --models "$K" --text "$TEXT" --max-audio-s 2 -q -o - >"$TMP/ref.pcm" 2>/dev/null || echo "FAIL: reference pcm"
"$RTF" speak --models "$K" --text "$TEXT" --max-audio-s 2 --voice alt -q -o - >"$TMP/alt.pcm" 2>/dev/null || echo "FAIL: alt pcm"
if serve_start --models "$K" --max-streams 2 --max-audio-s 2; then
  check "serve: /health and /v1/audio/voices say the family; speech (twice at once) = rtf speak's PCM; voice alt; a prompt is a 400" \
    "$PORT" "$TMP/ref.pcm" "$TEXT" "$TMP/alt.pcm" <<'PY'
import http.client, json, sys, threading
port, ref, text, alt = int(sys.argv[1]), open(sys.argv[2], "rb").read(), sys.argv[3], open(sys.argv[4], "rb").read()
def req(method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse(); d = r.read(); c.close(); return r.status, d
st, h = req("GET", "/health"); h = json.loads(h)
assert st == 200 and h["family"] == "pocket-tts", h
st, v = req("GET", "/v1/audio/voices"); v = json.loads(v)
assert st == 200 and v["family"] == "pocket-tts" and [x["name"] for x in v["voices"]] == ["default", "alt"], v
out = [None, None]
def one(i): out[i] = req("POST", "/v1/audio/speech", json.dumps({"model": "rtf", "input": text, "response_format": "pcm"}))
ts = [threading.Thread(target=one, args=(i,)) for i in range(2)]
[t.start() for t in ts]; [t.join(90) for t in ts]
for st, pcm in out:
    assert st == 200 and len(ref) > 0 and pcm == ref, (st, len(pcm), len(ref))
st, pcm = req("POST", "/v1/audio/speech", json.dumps({"model": "rtf", "input": text, "voice": "alt", "response_format": "pcm"}))
assert st == 200 and len(alt) > 0 and pcm == alt and pcm != ref, (st, len(pcm), len(alt))
st, e = req("POST", "/v1/audio/speech", json.dumps({"model": "rtf", "input": text, "voice": "nobody"}))
assert st == 400 and b"alt" in e, (st, e[:200])
st, e = req("POST", "/v1/speak", json.dumps({"prompt": "Hello"}))
assert st == 400 and b"text" in e, (st, e[:200])
PY
fi
serve_stop
finish
