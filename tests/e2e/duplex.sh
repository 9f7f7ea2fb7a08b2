#!/usr/bin/env bash
# rtf duplex end to end on a tiny twin kit with real speech (flite): a short run with a forced
# speak schedule passes (exit 0) and its JSON holds the timeline of spec §5.1 and the analysis;
# a stage slower than the interval fails check [1] (exit 2); a stage that throws gives exit 3
# and a valid partial JSON; a missing input is exit 1 naming the file; bad flags name the flag.
# The stored result renders through rtf report (HTML with its timeline, Markdown), Markdown on
# the terminal carries no HTML entities, and on a twin sampled speak frames are cut at
# --twin-text-rate (0 = uncapped).
source "$(dirname "$0")/lib.sh"
K=$TMP/kit
"$RTF" twin --scale tiny --out "$K" --quiet >/dev/null 2>&1 || { echo "FAIL: twin"; exit 1; }
if command -v flite >/dev/null; then
  flite -voice slt -t "Could you tell me the way to the station, and how long it takes to walk there?" -o "$TMP/speech.wav"
else
  echo "note: flite not installed, using a generated tone"
  python3 -c 'import math,struct,wave,sys
w=wave.open(sys.argv[1],"wb"); w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
w.writeframes(b"".join(struct.pack("<h",int(8000*math.sin(2*math.pi*300*i/16000))) for i in range(16000*4)))' "$TMP/speech.wav"
fi
D=(duplex --models "$K" --input "$TMP/speech.wav" --threads 1)

# 1. 6 frames every 300 ms, one forced turn (frames 3-4). Whether it passes depends on this
# machine's speed (TTS RTF, playback gaps), so the exit code must be the analysis's own: 0 pass
# or 2 fail; everything else about the run is checked exactly.
"$RTF" "${D[@]}" --frames 6 --interval 300ms --speak-frames 3-4 --json "$TMP/r.json" --md "$TMP/r.md" \
  --html "$TMP/r.html" > "$TMP/r.out" 2>&1
rc=$?
if [[ $rc -eq 0 || $rc -eq 2 ]] && grep -q 'decision: FORCED by --speak-frames 3-4' "$TMP/r.out"; then
  echo "ok: rtf duplex -> $rc, decision forced"
else
  echo "FAIL: rtf duplex -> $rc"; head -30 "$TMP/r.out"; fails=$((fails+1))
fi
python3 - "$TMP/r.json" "$rc" <<'PY' && echo "ok: result JSON" || { echo "FAIL: result JSON"; fails=$((fails+1)); }
import json, sys
j = json.load(open(sys.argv[1])); rc = int(sys.argv[2])
assert j["schema"] == "rtfkit.duplex/1" and j["completed"] is True, (j["schema"], j["error"])
m = j["meta"]
assert m["decision"] == "forced" and m["speak_frames"] == "3-4" and m["stream_interval_ms"] == 300, m
fr = j["frames"]
assert len(fr) == 6, len(fr)
keys = ["user_seq", "frame_id", "t_push_ms", "t_done_ms", "ok", "is_speak", "speak_turn_id", "ms_decode", "ms_total",
        "n_past_after", "text_len", "text", "apm_ms", "llm_prefill_ms"]
for i, f in enumerate(fr):
    for k in keys: assert k in f, (i, k)
    assert f["ok"] and f["t_done_ms"] >= f["t_push_ms"] >= 300 * i - 1e-6, f
    assert abs(f["ms_total"] - (f["t_done_ms"] - f["t_push_ms"])) < 1e-6, f
    assert f["forced"] == (i >= 3) and f["force_listen"] == (i < 3), f
assert [f["speak_turn_id"] for f in fr] == [-1, -1, -1, 0, 0, -1], [f["speak_turn_id"] for f in fr]
assert all(f["n_text_tokens"] == 10 and f["end"] == "forced" for f in fr if f["is_speak"]), [f["n_text_tokens"] for f in fr]
assert all(fr[i]["n_past_after"] > fr[i - 1]["n_past_after"] for i in range(1, 6))
ch = j["audio_chunks"]
assert ch and all(c["sample_rate"] == 24000 for c in ch), ch[:1]
for c in ch:
    for k in ["t_complete_ms", "n_samples", "sample_rate", "duration_s", "is_final", "audio_turn_id"]: assert k in c, k
    assert c["t_complete_ms"] >= fr[3]["t_push_ms"], c
assert [c["is_final"] for c in ch].count(True) == 1 and ch[-1]["is_final"], [c["is_final"] for c in ch]
assert all(c["audio_turn_id"] == 0 for c in ch)
a = j["analysis"]
assert a["schema"] == "rtfkit.duplex-report/1" and a["valid"] and a["tts_status"] == "ok", (a["invalid_reason"], a["tts_reason"])
assert a["exit_code"] == rc and a["verdict"] == {0: "pass", 2: "fail"}[rc], (a["verdict"], rc)
assert [c["id"] for c in a["checks"]] == ["decision_latency", "first_audio", "tts_rtf", "no_failed_frames", "playback"]
assert a["turns"]["speak"] == 1 and a["turns"]["audio"] == 1 and len(a["pairs"]) == 1, a["turns"]
assert {s["name"] for s in j["stages"]} == {"input", "apm", "llm", "tts", "t2w"} and j["binding_stage"], j["stages"]
PY
grep -qE 'rtfkit duplex-report: (PASS|FAIL)' "$TMP/r.md" && echo "ok: markdown" || { echo "FAIL: markdown"; fails=$((fails+1)); }
grep -q 'data-report' "$TMP/r.html" && grep -q '<svg' "$TMP/r.html" && grep -q 'Timeline' "$TMP/r.html" \
  && echo "ok: html timeline" || { echo "FAIL: html"; fails=$((fails+1)); }
# the stored result re-analyses to the same exit code
expect_rc $rc 'duplex-report' -- duplex-report "$TMP/r.json"
# ... and renders through rtf report like every other result: HTML with the session timeline,
# Markdown with the analysis
expect_rc 0 '' -- report "$TMP/r.json" -o "$TMP/r2.html"
grep -q 'Timeline' "$TMP/r2.html" && grep -q '<svg' "$TMP/r2.html" && echo "ok: rtf report of a duplex run (html)" \
  || { echo "FAIL: rtf report duplex html"; fails=$((fails+1)); }
expect_rc 0 'rtfkit duplex-report: (PASS|FAIL)' -- report "$TMP/r.json" --md
# Markdown for a terminal or a .md file is not HTML-escaped (the rules hold "<" and "'")
if grep -qE '&lt;|&gt;|&amp;|&#39;|&\\#39;|&quot;' "$TMP/r.out" "$TMP/r.md"; then
  echo "FAIL: HTML entities in Markdown"; grep -nE '&lt;|&#39;|&\\#39;' "$TMP/r.out" "$TMP/r.md" | head -5; fails=$((fails+1))
elif grep -q "P95 .* < interval" "$TMP/r.out" && grep -q "every turn's TTS RTF < 1" "$TMP/r.md"; then
  echo "ok: Markdown without HTML entities"
else
  echo "FAIL: the rules are missing from the Markdown"; fails=$((fails+1))
fi

# 2. an LLM slower than the interval: decision latency P95 >= interval -> check [1] fails, exit 2
RTF_DUPLEX_TEST_DELAY=llm:150 expect_rc 2 '\[1\].*FAIL|decision_latency.*FAIL|FAIL.*decision' -- "${D[@]}" --frames 6 \
  --interval 40ms --speak-frames 3-4 --json "$TMP/slow.json"
python3 - "$TMP/slow.json" <<'PY' && echo "ok: slow run fails [1]" || { echo "FAIL: slow run"; fails=$((fails+1)); }
import json, sys
a = json.load(open(sys.argv[1]))["analysis"]
c = {x["id"]: x["state"] for x in a["checks"]}
assert c["decision_latency"] == "FAIL" and a["verdict"] == "fail" and a["exit_code"] == 2, (c, a["verdict"])
PY

# 3. a stage that throws mid-run: exit 3, the stage named, a valid partial JSON
RTF_DUPLEX_TEST_FAIL=tts:4 expect_rc 3 "stage 'tts' failed" -- "${D[@]}" --frames 8 --interval 100ms --speak-frames 3-5 \
  --json "$TMP/fail.json"
python3 - "$TMP/fail.json" <<'PY' && echo "ok: partial JSON" || { echo "FAIL: partial JSON"; fails=$((fails+1)); }
import json, sys
j = json.load(open(sys.argv[1]))
assert j["completed"] is False and j["failed_stage"] == "tts" and "fails at frame 4" in j["error"], (j["completed"], j["error"])
assert 1 <= len(j["frames"]) <= 8
for f in j["frames"]: assert f["t_done_ms"] >= f["t_push_ms"]
assert j["analysis"]["exit_code"] == 3
PY

# 4. errors: exit 1 naming the file or flag
expect_rc 1 'missing.wav' -- duplex --models "$K" --input "$TMP/missing.wav"
printf 'not audio' > "$TMP/bad.wav"
expect_rc 1 'bad.wav' -- duplex --models "$K" --input "$TMP/bad.wav"
expect_rc 1 '--speak-frames' -- "${D[@]}" --speak-frames 1-4
expect_rc 1 '--speak-frames' -- "${D[@]}" --frames 5 --speak-frames 4-9
expect_rc 1 '--interval' -- "${D[@]}" --interval soon

# 4b. a session longer than the LLM's context: the context slides (the reference's policy) and
# the session completes; with --context stop it ends with "context full" (exit 3)
"$RTF" "${D[@]}" --frames 40 --interval 50ms --speak-frames 5 --llm-ctx 256 --json "$TMP/slide.json" \
  > "$TMP/slide.out" 2>&1
rc=$?
python3 - "$TMP/slide.json" "$rc" <<'PY' && echo "ok: context slide -> $rc" || { echo "FAIL: context slide -> $rc"; head -20 "$TMP/slide.out"; fails=$((fails+1)); }
import json, sys
j = json.load(open(sys.argv[1])); rc = int(sys.argv[2])
assert rc in (0, 2) and j["completed"] is True, (rc, j["error"])
fr = j["frames"]
assert len(fr) == 40 and all(f["ok"] for f in fr)
assert j["meta"]["context_slides"] >= 2 and sum(1 for f in fr if f["n_discarded"] > 0) == j["meta"]["context_slides"], j["meta"]
n_ctx = j["meta"]["llm_n_ctx"]
assert n_ctx == 256 and all(f["n_past_after"] <= n_ctx for f in fr), (n_ctx, [f["n_past_after"] for f in fr])
assert j["meta"]["config"]["llm"]["context_slide"] is True
PY
grep -q 'context slid' "$TMP/slide.out" && echo "ok: slide line" || { echo "FAIL: no slide line"; fails=$((fails+1)); }
expect_rc 3 'context full' -- "${D[@]}" --frames 40 --interval 50ms --speak-frames 5 --ctx-size 256 --context stop
expect_rc 1 '--context' -- "${D[@]}" --context wrap

# 4c. twin text cap: the decision sampled (no --speak-frames): a random LLM never ends a speak
# unit, so uncapped every sampled speak frame writes the 26-token budget; by default it ends
# after 4 (--twin-text-rate 4/s x 1 s frames), with --twin-text-rate 2 after 2
for rate in default 2 0; do
  extra=(); [[ $rate != default ]] && extra=(--twin-text-rate "$rate")
  "$RTF" "${D[@]}" --frames 6 --interval 300ms "${extra[@]}" --json "$TMP/cap-$rate.json" > "$TMP/cap-$rate.out" 2>&1
  rc=$?
  python3 - "$TMP/cap-$rate.json" "$rc" "$rate" <<'PY' && echo "ok: twin text cap, rate $rate -> $rc" || { echo "FAIL: twin text cap, rate $rate -> $rc"; head -20 "$TMP/cap-$rate.out"; fails=$((fails+1)); }
import json, sys
j = json.load(open(sys.argv[1])); rc = int(sys.argv[2]); rate = sys.argv[3]
# a sampled twin session completes; its verdict is noise (a random turn_eos can leave a speak
# turn and an audio turn unmatched: the analyzer then says incomplete, exit 3)
assert rc in (0, 2, 3) and j["completed"] is True and j["analysis"]["exit_code"] == rc, (rc, j["error"])
m = j["meta"]
want_rate, cap = {"default": (4.0, 4), "2": (2.0, 2), "0": (0.0, 0)}[rate]
assert m["decision"] == "sampled" and m["kit_is_twin"] is True, m["decision"]
assert m["twin_text_rate"] == want_rate and m["config"]["twin_text_rate"] == want_rate, m["twin_text_rate"]
assert m["twin_text_cap"] == cap and m["config"]["llm"]["text_cap"] == cap, m["twin_text_cap"]
speak = [f for f in j["frames"] if f["is_speak"]]
assert speak, "no sampled speak frame"
n = [f["n_text_tokens"] for f in speak]
ends = [f["end"] for f in speak]
if cap:
    assert max(n) <= cap and "twin_text_cap" in ends, (n, ends)
    assert all(k == cap for k, e in zip(n, ends) if e == "twin_text_cap"), (n, ends)
else:
    assert "budget" in ends and max(n) == 26, (n, ends)
PY
done
grep -q 'twin cap 4 text tokens per sampled speak frame' "$TMP/cap-default.out" && grep -q 'uncapped' "$TMP/cap-0.out" \
  && echo "ok: the cap is printed" || { echo "FAIL: cap line"; grep -n 'text' "$TMP/cap-default.out" | head -3; fails=$((fails+1)); }
expect_rc 1 'twin-text-rate' -- "${D[@]}" --twin-text-rate -1
expect_rc 0 'twin-text-rate' -- duplex --help

# 5. rtf bench --workload duplex: the bench protocol over duplex sessions (3 runs)
B="models=$K;input=$TMP/speech.wav;frames=5;interval=100ms;speak-frames=3;threads=1"
"$RTF" bench --workload duplex --set "$B" --warmup 0 --runs 3 --sample-ms 0 --json "$TMP/b.json" > "$TMP/b.out" 2>&1
rc=$?
python3 - "$TMP/b.json" "$rc" <<'PY' && echo "ok: bench --workload duplex -> $rc" || { echo "FAIL: bench duplex -> $rc"; head -20 "$TMP/b.out"; fails=$((fails+1)); }
import json, sys
j = json.load(open(sys.argv[1])); rc = int(sys.argv[2])
c = j["configs"][0]
assert c["workload"] == "duplex" and c["verdict"]["status"] == "VALID" and c["verdict"]["exit_code"] == rc and rc in (0, 2), c["verdict"]
assert len(c["runs"]) == 3 and all(r["ok"] for r in c["runs"])
for r in c["runs"]:
    m = r["metrics"]
    for k in ["rtf", "first_audio_ms", "decision_latency_ms", "starvation", "audio_s", "duplex_verdict_code", "rtf_stage.llm"]:
        assert k in m, k
    assert m["audio_s"] > 0 and m["decision_latency_ms"]["p95"] > 0, m
PY
# its twin-text-rate key: sampled speak frames of every run cut at 3 tokens
"$RTF" bench --workload duplex --set "models=$K;input=$TMP/speech.wav;frames=5;interval=100ms;threads=1;twin-text-rate=3" \
  --warmup 0 --runs 3 --sample-ms 0 --json "$TMP/bcap.json" > "$TMP/bcap.out" 2>&1
rc=$?
python3 - "$TMP/bcap.json" "$rc" <<'PY' && echo "ok: bench duplex twin-text-rate -> $rc" || { echo "FAIL: bench duplex twin-text-rate -> $rc"; head -20 "$TMP/bcap.out"; fails=$((fails+1)); }
import json, sys
j = json.load(open(sys.argv[1])); rc = int(sys.argv[2])
c = j["configs"][0]
assert rc in (0, 2) and c["verdict"]["status"] == "VALID", c["verdict"]
s = json.dumps(c)
assert '"twin_text_cap": 3' in s and '"twin_text_rate": 3.0' in s, "cap not in the bench JSON"
PY
expect_rc 1 'twin-text-rate' -- bench --workload duplex --set "models=$K;input=$TMP/speech.wav;twin-text-rate=-1"
expect_rc 1 'is not a knob of workload duplex' -- bench --workload duplex --set "nope=1"
expect_rc 1 'speak-frames' -- bench --workload duplex --set "models=$K;input=$TMP/speech.wav;speak-frames=1"
finish
