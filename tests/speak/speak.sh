#!/usr/bin/env bash
# rtf speak / rtf demo end to end on a tiny twin kit: outputs, metrics, schedules,
# Ctrl-C, and the clear errors (exit 1) for bad kits and bad input.
source "$(dirname "$0")/../e2e/lib.sh"
KIT=$TMP/kit
"$RTF" twin --family minicpmo45 --scale tiny --out "$KIT" >/dev/null 2>&1 || { echo "FAIL: twin"; exit 1; }

# 1. a normal run: WAV + JSON + trace; audio duration = codes / 25 (+ the final window's look-ahead tail)
expect_rc 0 'rtf_stage.t2w' -- speak --models "$KIT" -p "Hello there, how are you?" --max-audio-s 3 \
  --max-tokens 60 -o "$TMP/a.wav" --json "$TMP/a.json" --trace "$TMP/a.trace.json"
python3 - "$TMP/a.wav" "$TMP/a.json" "$TMP/a.trace.json" <<'PY' && echo "ok: outputs" || { echo "FAIL: outputs"; exit 1; }
import json, sys, wave
w = wave.open(sys.argv[1]); dur = w.getnframes() / w.getframerate()
assert w.getframerate() == 24000 and w.getnchannels() == 1, "24 kHz mono"
j = json.load(open(sys.argv[2])); m = j["metrics"]
for k in ["rtf", "rtf_steady", "rtf_stage.llm", "rtf_stage.tts", "rtf_stage.t2w", "first_audio_ms", "xrt",
          "starvation", "llm.prefill_ms", "llm.ms_per_token", "tts.ms_per_token", "t2w.token2mel_ms",
          "t2w.vocoder_ms", "queue_wait.q1", "queue_wait.q2", "bound_overlap", "bound_serial",
          "pipeline_efficiency"]:
    assert k in m, "metric %s missing" % k
codes = j["output"]["n_audio_codes"]
assert codes > 0
# 25 codes per second; the final window also renders the 3 look-ahead tokens (0.12 s)
assert abs(dur - codes / 25.0) <= 0.2, (dur, codes)
assert abs(j["output"]["audio_s"] - dur) < 1e-3, (j["output"]["audio_s"], dur)
t = json.load(open(sys.argv[3])); assert t["traceEvents"], "trace empty"
# issue 18.2: the resolved thread count, never the "0 = all CPUs" request
for st in j["run"]["stages"]: assert st["n_threads"] >= 1, (st["name"], st["n_threads"])
print("duration %.3f s, %d codes, rtf %.3f" % (dur, codes, m["rtf"]))
PY

# 1a. issue 18.1: a kit that has been spoken with still passes inspect (its .rtf-cache
# file is listed as rtfkit's own, not checked as a TTS file), and touching the TTS file
# makes the next run derive a fresh cache file in place of the stale one
expect_rc 0 '^pass' -- inspect "$KIT"
expect_rc 0 '^cache .*\.rtf-cache/MiniCPM-o-4_5-tts-F16\.llama-' -- inspect "$KIT"
before=$(ls "$KIT/.rtf-cache")
sleep 0.01; touch "$KIT/tts/MiniCPM-o-4_5-tts-F16.gguf"
expect_rc 0 '' -- speak --models "$KIT" --text "Again." --max-audio-s 1 -q -o "$TMP/again.wav"
after=$(ls "$KIT/.rtf-cache")
# 1b. -o by extension: FILE.flac is the WAV's samples losslessly (Debian's flac decodes it),
# FILE.opus an Ogg/Opus stream of the same length (opusdec); both written as chunks arrive
expect_rc 0 '' -- speak --models "$KIT" --text "Again." --max-audio-s 1 -q -o "$TMP/again.flac"
expect_rc 0 '' -- speak --models "$KIT" --text "Again." --max-audio-s 1 -q -o "$TMP/again.opus"
flac -d -s -f -o "$TMP/again-flac.wav" "$TMP/again.flac" && opusdec --quiet --rate 24000 "$TMP/again.opus" "$TMP/again-opus.wav" \
  && python3 - "$TMP/again.wav" "$TMP/again-flac.wav" "$TMP/again-opus.wav" <<'PY' && echo "ok: -o x.flac / x.opus" || { echo "FAIL: -o x.flac / x.opus"; fails=$((fails+1)); }
import sys, wave
w = [wave.open(p) for p in sys.argv[1:]]
a, f, o = (x.readframes(x.getnframes()) for x in w)
assert a == f and w[1].getframerate() == 24000, "flac differs from the wav"
assert w[2].getnframes() == w[0].getnframes(), (w[2].getnframes(), w[0].getnframes())
PY
# 1b'. --voice and --speed: another voice, another WAV of the same length; an unknown voice
# names the kit's; --speed 2 halves the samples (exactly), out of range names the flag
expect_rc 0 '' -- speak --models "$KIT" --text "Again." --max-audio-s 1 -q --voice twin-b -o "$TMP/again-b.wav"
expect_rc 0 '' -- speak --models "$KIT" --text "Again." --max-audio-s 1 -q --speed 2 -o "$TMP/again-fast.wav"
expect_rc 1 "unknown voice 'nobody' \\(this kit has: default, twin-a, twin-b\\)" -- speak --models "$KIT" --text "Again." --voice nobody -o "$TMP/x.wav"
expect_rc 1 'speed' -- speak --models "$KIT" --text "Again." --speed 9 -o "$TMP/x.wav"
python3 - "$TMP/again.wav" "$TMP/again-b.wav" "$TMP/again-fast.wav" <<'PY' && echo "ok: --voice / --speed" || { echo "FAIL: --voice / --speed"; fails=$((fails+1)); }
import sys, wave
a, b, f = (wave.open(p) for p in sys.argv[1:])
assert a.getnframes() == b.getnframes() and a.readframes(a.getnframes()) != b.readframes(b.getnframes()), "twin-b"
assert f.getnframes() == round(a.getnframes() / 2), (f.getnframes(), a.getnframes())
PY
[[ -n $before && -n $after && $before != "$after" && $(wc -l <<<"$after") -eq 1 ]] \
  && echo "ok: cache rebuilt after touch ($before -> $after)" || { echo "FAIL: cache after touch: '$before' -> '$after'"; fails=$((fails+1)); }

# 1c. issue 18.4: on a twin, prompt mode is capped at --twin-text-rate text tokens per second
# of audio (4/s: 3 s -> 12 tokens) and says so; --twin-text-rate 0 turns the cap off
expect_rc 0 'twin cap +LLM reply capped at 12 text tokens' -- speak --models "$KIT" -p "Tell me a story" \
  --max-audio-s 3 --max-tokens 200 -o "$TMP/cap.wav" --json "$TMP/cap.json"
python3 - "$TMP/cap.json" <<'PY' && echo "ok: twin text cap" || { echo "FAIL: twin text cap"; fails=$((fails+1)); }
import json, sys
o = json.load(open(sys.argv[1]))["output"]
assert o["twin_text_cap"] == 12 and o["n_text_tokens"] <= 12, o
assert o["n_text_tokens"] <= 4 * 3, o
assert o["n_audio_codes"] == 75, o  # 3 s: the cap fixes the work size on a twin
PY
"$RTF" speak --models "$KIT" -p "Tell me a story" --max-audio-s 3 --max-tokens 40 --twin-text-rate 0 -q \
  -o "$TMP/nocap.wav" --json "$TMP/nocap.json" >/dev/null 2>&1
python3 -c "import json,sys; o=json.load(open(sys.argv[1]))['output']; assert o['twin_text_cap']==0 and o['n_text_tokens']>12, o" \
  "$TMP/nocap.json" && echo "ok: --twin-text-rate 0 leaves the reply uncapped" || { echo "FAIL: --twin-text-rate 0"; fails=$((fails+1)); }
expect_rc 1 'twin-text-rate' -- speak --models "$KIT" -p hi --twin-text-rate -1 -o "$TMP/x.wav"

# 1b. --min-audio-s = --max-audio-s fixes the work size exactly (EOS masked until then)
#     (and --text-turn fixed: the whole template comes from the prompt cache filled at load)
expect_rc 0 '' -- speak --models "$KIT" --text "Fixed work." --min-audio-s 2 --max-audio-s 2 -q --text-turn fixed \
  -o "$TMP/fixed.wav" --json "$TMP/fixed.json"
python3 -c "import json,sys; n=json.load(open(sys.argv[1]))['output']['n_audio_codes']; assert n==50, n; print('ok: exactly', n, 'codes')" \
  "$TMP/fixed.json" || { echo "FAIL: fixed work size"; fails=$((fails+1)); }
python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); l=d['engines']['llm']
assert d['config']['llm']['text_turn'] == 'fixed', d['config']['llm']
assert l['n_prompt_cached'] > 0 and l['n_prompt'] - l['n_prompt_cached'] < 8, l
print('ok: --text-turn fixed decodes only the reply (%d of %d prompt tokens cached)' % (l['n_prompt_cached'], l['n_prompt']))" \
  "$TMP/fixed.json" || { echo "FAIL: --text-turn fixed"; fails=$((fails+1)); }
expect_rc 1 'min-audio-s' -- speak --models "$KIT" --text "x" --min-audio-s 3 --max-audio-s 2 -o "$TMP/x.wav"

# 1d. issue 18.6: --config FILE reads the knob table's names; flags on the command line win
printf '{"schedule": "sequential", "d1": 3, "max-audio-s": 1, "no-cfg": true}' >"$TMP/cfg.json"
expect_rc 0 'schedule sequential' -- speak --models "$KIT" --text "Configured." --config "$TMP/cfg.json" \
  -o "$TMP/cfg.wav" --json "$TMP/cfg1.json"
expect_rc 0 'schedule lockstep' -- speak --models "$KIT" --text "Configured." --config "$TMP/cfg.json" \
  --schedule lockstep -o "$TMP/cfg.wav" --json "$TMP/cfg2.json"
python3 - "$TMP/cfg1.json" <<'PY' && echo "ok: --config reached the config" || { echo "FAIL: --config"; fails=$((fails+1)); }
import json, sys
c = json.load(open(sys.argv[1]))["config"]
assert c["max_audio_s"] == 1 and c["t2w"]["cfg"] is False and c["pipeline"]["depths"][0] == 3, c
PY
printf '{"d1": 0}' >"$TMP/bad-cfg.json"
expect_rc 1 'bad-cfg.json.*--d1' -- speak --models "$KIT" --text "x" --config "$TMP/bad-cfg.json" -o "$TMP/x.wav"
# every Token2Wav flag of `rtf t2w` is spelt as in `rtf speak`
t2w_flags=$("$RTF" t2w --help | grep -oE '^ +--[a-z0-9-]+' | tr -d ' ' | sort -u)
speak_flags=$("$RTF" speak --help | grep -oE '^ +(-[a-z], )?--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+' | sort -u)
missing=$(comm -23 <(grep -E -- '--(t2w-|flow-|no-cfg)' <<<"$t2w_flags") <(echo "$speak_flags"))
[[ -z $missing && $(grep -cE -- '--(t2w-|flow-|no-cfg)' <<<"$t2w_flags") -ge 6 ]] && echo "ok: t2w and speak spell the Token2Wav flags alike" \
  || { echo "FAIL: t2w flags not in speak: $missing"; fails=$((fails+1)); }

# 2. the other schedules and text mode run too
expect_rc 0 'schedule sequential' -- speak --models "$KIT" --text "One two three." --max-audio-s 2 \
  --schedule sequential -o "$TMP/b.wav"
expect_rc 0 'schedule lockstep' -- speak --models "$KIT" -p "Hi" --max-audio-s 2 --max-tokens 30 \
  --schedule lockstep -o "$TMP/c.wav"
# raw PCM on stdout: the WAV file's samples of the same run (text mode, seeded, min = max
# audio: the same audio every run), s16le, nothing else on stdout; and not silence
raw_knobs=(--models "$KIT" --text "Raw samples, please." --max-audio-s 1.5 --min-audio-s 1.5 --seed 7 -q)
"$RTF" speak "${raw_knobs[@]}" -o - >"$TMP/raw.pcm" 2>/dev/null
"$RTF" speak "${raw_knobs[@]}" -o "$TMP/raw.wav" --json "$TMP/raw.json" >/dev/null 2>&1
python3 - "$TMP/raw.pcm" "$TMP/raw.wav" "$TMP/raw.json" <<'PY' && echo "ok: raw pcm on stdout = the WAV's samples" || { echo "FAIL: raw pcm"; fails=$((fails+1)); }
import json, struct, sys, wave
raw = open(sys.argv[1], "rb").read()
w = wave.open(sys.argv[2]); n = json.load(open(sys.argv[3]))["output"]["n_samples"]
assert w.getsampwidth() == 2 and w.getnchannels() == 1 and w.getnframes() == n >= 36000, (w.getnframes(), n)
frames = w.readframes(n)
assert len(raw) == 2 * n, "stdout holds %d bytes, the run made %d samples" % (len(raw), n)
assert raw == frames, "stdout's samples differ from the WAV's (first at byte %d)" % next(i for i in range(len(raw)) if raw[i] != frames[i])
x = struct.unpack("<%dh" % n, raw)
rms = (sum(v * v for v in x) / n) ** 0.5
assert rms > 30, "stdout's samples are near silence: rms %.1f" % rms
print("raw pcm: %d bytes = %d samples, bit-equal to the WAV's, rms %.0f" % (len(raw), n, rms))
PY

# 3. Ctrl-C leaves a valid WAV and exits 3 (interrupted)
"$RTF" speak --models "$KIT" -p "Tell me a long story." --max-audio-s 600 --min-audio-s 600 -o "$TMP/int.wav" -q &
# SIGINT once the run has started (the WAV exists just before the Ctrl-C guard goes in), not
# after a fixed sleep: a loaded machine may still be loading the kit at 3 s
pid=$!; for _ in $(seq 1 600); do [[ -e "$TMP/int.wav" ]] && break; sleep 0.2; done; sleep 2
kill -INT $pid; wait $pid; rc=$?
python3 -c "import wave,sys; w=wave.open(sys.argv[1]); print('ok: interrupted WAV valid, %d frames' % w.getnframes())" "$TMP/int.wav" \
  && [[ $rc -eq 3 ]] || { echo "FAIL: Ctrl-C rc=$rc"; fails=$((fails+1)); }

# 4. clear errors, exit 1
expect_rc 1 'text' -- speak --models "$KIT" --text "   " -o "$TMP/x.wav"
printf 'bad \xff\xfe utf8' >"$TMP/bad.txt"
expect_rc 1 'UTF-8' -- speak --models "$KIT" --text-file "$TMP/bad.txt" -o "$TMP/x.wav"
expect_rc 1 'exceeds context' -- speak --models "$KIT" --llm-ctx 64 -p "$(printf 'word %.0s' {1..600})" -o "$TMP/x.wav"
expect_rc 1 'prompt' -- speak --models "$KIT" -o "$TMP/x.wav"
expect_rc 1 'not a directory' -- speak --models "$TMP/nope" -p hi -o "$TMP/x.wav"
expect_rc 1 '--schedule' -- speak --models "$KIT" -p hi --schedule fast -o "$TMP/x.wav"
mkdir -p "$TMP/kit2" && cp -r "$KIT"/* "$TMP/kit2/" && rm "$TMP/kit2/token2wav-gguf/hifigan2.gguf"
expect_rc 1 'hifigan2' -- speak --models "$TMP/kit2" -p hi -o "$TMP/x.wav"
# a kit whose TTS file lost a tensor: the layout check names file and tensor
python3 - "$KIT/tts/MiniCPM-o-4_5-tts-F16.gguf" "$TMP/kit3" <<'PY'
import shutil, sys, os
src, dst = sys.argv[1], sys.argv[2]
shutil.copytree(os.path.dirname(os.path.dirname(src)), dst)
PY
"$RTF" twin --like "$TMP/kit3/tts/MiniCPM-o-4_5-tts-F16.gguf" --out "$TMP/like.gguf" >/dev/null 2>&1
truncate -s 100000 "$TMP/kit3/tts/MiniCPM-o-4_5-tts-F16.gguf"
expect_rc 1 'MiniCPM-o-4_5-tts-F16.gguf' -- speak --models "$TMP/kit3" -p hi -o "$TMP/x.wav"

# 5. rtf bench runs the speak workload under the protocol (quality gates on every run)
expect_rc 0 'VALID' -- bench --workload speak --models "$KIT" --set 'text=Hello world.;max-audio-s=1' \
  --warmup 0 --runs 3 --target-rtf 1000 --json "$TMP/bench.json"
python3 - "$TMP/bench.json" <<'PY' && echo "ok: bench json" || { echo "FAIL: bench json"; exit 1; }
import json, sys
j = json.load(open(sys.argv[1]))
s = json.dumps(j)
assert '"VALID"' in s and '"speak"' in s, "verdict/workload missing"
# issue 19: each run's playback starts at its own first audio, not at the bench's clock
for r in j["configs"][0]["runs"]:
    m = r["metrics"]
    assert abs(m["starvation"]["playback_start_ms"] - m["first_audio_ms"]) < 1e-6, (r["index"], m["starvation"], m["first_audio_ms"])
PY
expect_rc 1 'nope' -- bench --workload speak --models "$KIT" --set 'nope=1'
# issue 18.3: --models alone means the speak workload, and the output says it was inferred
expect_rc 0 'workload speak \(inferred' -- bench --models "$KIT" --set 'text=Hi.;max-audio-s=1' --warmup 0 --runs 3 \
  --target-rtf 1000

# 6. rtf demo on the tiny scale (the main job's code path, seconds)
expect_rc 0 'bottleneck' -- demo --scale tiny --kit-dir "$TMP/demo-kit" --out-dir "$TMP/demo" --max-audio-s 2 -q
[[ -s "$TMP/demo/demo.wav" && -s "$TMP/demo/demo.json" && -s "$TMP/demo/demo.trace.json" ]] \
  && echo "ok: demo outputs" || { echo "FAIL: demo outputs"; fails=$((fails+1)); }

# 7. issue 30: the machine profile. auto names its source and applies its choices (unless a
# flag sets the knob); the built-in choices follow the CPU's features (faked by
# RTF_CPU_FEATURES: no AMX vs AMX give different token2mel types); exact leaves out what
# changes the math; none is the plain defaults; gapless_start_ms is in every result.
for prof in "avx2,fma,avx512f,avx512_bf16:bf16" "avx2,fma,avx512f,avx512_bf16,amx:f32" "avx2,fma:f32" "avx2,fma,avx512f:f32"; do
  feats=${prof%:*}; want=${prof##*:}
  RTF_CPU_FEATURES=$feats expect_rc 0 '' -- speak --models "$KIT" --text "Hi." --max-audio-s 1 -q \
    --profile auto -o "$TMP/p.wav" --json "$TMP/p-${want}-${feats//,/_}.json"
  python3 - "$TMP/p-${want}-${feats//,/_}.json" "$want" <<'PY' && echo "ok: profile $feats -> $want" || { echo "FAIL: profile $feats"; fails=$((fails+1)); }
import json, sys
j = json.load(open(sys.argv[1]))
p = j["profile"]
assert p["mode"] == "auto" and "built-in" in p["source"], p
assert j["config"]["t2w"]["type_t2m"] == sys.argv[2], (j["config"]["t2w"]["type_t2m"], p)
m = j["metrics"]
assert m["gapless_start_ms"] >= m["first_audio_ms"] - 1e-6, m
PY
done
RTF_CPU_FEATURES=avx2,fma,avx512f,avx512_bf16 expect_rc 0 't2w-type-t2m=bf16 \(overridden\)' -- speak --models "$KIT" \
  --text "Hi." --max-audio-s 1 --profile auto --t2w-type-t2m f32 -o "$TMP/p.wav"
RTF_CPU_FEATURES=avx2,fma,avx512f,avx512_bf16 expect_rc 0 'math-changing choices left out' -- speak --models "$KIT" \
  --text "Hi." --max-audio-s 1 --profile exact -o "$TMP/p.wav"
expect_rc 0 '^profile   none' -- speak --models "$KIT" --text "Hi." --max-audio-s 1 --profile none -o "$TMP/p.wav"
expect_rc 1 "--profile 'fast' is not one of" -- speak --models "$KIT" --text "Hi." --profile fast -o "$TMP/p.wav"
# rtf bench's speak workload measures what speak runs: the profile's choices under --set (which
# wins), the profile in its JSON and report; --profile none leaves the plain defaults
RTF_CPU_FEATURES=avx2,fma expect_rc 0 'Machine profile \*\*avx2\*\*' -- bench --models "$KIT" --profile auto \
  --set 'text=Hi.;max-audio-s=1;t2w-type-t2m=f16' --warmup 0 --runs 3 --target-rtf 1000 --no-history --json "$TMP/bp.json"
RTF_CPU_FEATURES=avx2,fma expect_rc 0 '' -- bench --models "$KIT" --profile none --set 'text=Hi.;max-audio-s=1' \
  --warmup 0 --runs 3 --target-rtf 1000 --no-history --json "$TMP/bn.json"
python3 - "$TMP/bp.json" "$TMP/bn.json" <<'PY' && echo "ok: bench starts from the profile" || { echo "FAIL: bench profile"; fails=$((fails+1)); }
import json, sys
p, n = (json.load(open(f)) for f in sys.argv[1:3])
k = p["configs"][0]["knobs"]
assert p["profile"]["name"] == "avx2" and k["tts-weight-type"] == "q8_0", (p["profile"], k)
assert k["t2w-type-t2m"] == "f16" and "t2w-type-t2m" not in p["profile"]["applied"], (k, p["profile"]["applied"])
assert n["profile"]["name"] == "none" and "tts-weight-type" not in n["configs"][0]["knobs"], n["configs"][0]["knobs"]
PY
expect_rc 0 '' -- report "$TMP/bp.json" -o "$TMP/bp.html"
grep -q 'Machine profile: avx2' "$TMP/bp.html" && echo "ok: the HTML report names the profile" || { echo "FAIL: bench html profile"; fails=$((fails+1)); }
finish
