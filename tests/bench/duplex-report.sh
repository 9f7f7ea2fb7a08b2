#!/usr/bin/env bash
# rtf duplex-report end to end on fixtures written here (spec §5.1 shape, as the reference's
# perf_report.json): a real-time run -> 0, a run whose decisions are slower than the interval
# -> 2, a broken and a missing file -> 3 naming the file, a bad flag -> 1 naming the flag.
# No timed assertion: the fixtures carry their own clock.
source "$(dirname "$0")/../e2e/lib.sh"
cat > "$TMP/pass.json" <<'J'
{"meta": {"stream_interval_ms": 1000, "n_threads": 4, "sample_rate_hint": 24000, "llm_path": "llm.gguf",
          "vision_backend": "metal", "use_tts": true, "media_type": 2},
 "frames": [
  {"user_seq": 0, "frame_id": 0, "t_push_ms": 0, "t_done_ms": 300, "ok": true, "is_speak": false, "is_idle": false,
   "speak_turn_id": -1, "ms_decode": 250, "ms_total": 300, "n_past_after": 100, "text_len": 0, "text": ""},
  {"user_seq": 1, "frame_id": 1, "t_push_ms": 1000, "t_done_ms": 1400, "ok": true, "is_speak": true, "is_idle": false,
   "speak_turn_id": 0, "ms_decode": 350, "ms_total": 400, "n_past_after": 120, "text_len": 6, "text": "Hello "},
  {"user_seq": 2, "frame_id": 2, "t_push_ms": 2000, "t_done_ms": 2350, "ok": true, "is_speak": true, "is_idle": false,
   "speak_turn_id": 0, "ms_decode": 300, "ms_total": 350, "n_past_after": 140, "text_len": 6, "text": "there."}],
 "audio_chunks": [
  {"t_complete_ms": 1700, "n_samples": 24000, "sample_rate": 24000, "duration_s": 1.0, "is_final": false, "audio_turn_id": 0},
  {"t_complete_ms": 2500, "n_samples": 24000, "sample_rate": 24000, "duration_s": 1.0, "is_final": false, "audio_turn_id": 0},
  {"t_complete_ms": 3100, "n_samples": 12000, "sample_rate": 24000, "duration_s": 0.5, "is_final": true, "audio_turn_id": 0}]}
J
# Same run, but every decision takes 1500 ms of a 1000 ms interval.
python3 - "$TMP/pass.json" "$TMP/slow.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for f in r["frames"]:
    f["ms_total"] = 1500; f["t_done_ms"] = f["t_push_ms"] + 1500
json.dump(r, open(sys.argv[2], "w"))
PY
echo '{"frames": [' > "$TMP/broken.json"

expect_rc 0 'duplex-report: PASS' -- duplex-report "$TMP/pass.json" --json "$TMP/pass-out.json" --md "$TMP/pass.md"
expect_rc 0 '\| \[5\] playback continuity \| PASS \|' -- duplex-report "$TMP/pass.json"
grep -q 'duplex-report: PASS' "$TMP/pass.md" && echo "ok: --md written" || { echo "FAIL: --md"; fails=$((fails+1)); }
python3 - "$TMP/pass-out.json" <<'PY' && echo "ok: result JSON" || { echo "FAIL: result JSON"; fails=$((fails+1)); }
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "rtfkit.duplex-report/1" and j["verdict"] == "pass" and j["exit_code"] == 0, j
p = j["pairs"][0]
assert p["first_audio_e2e_ms"] == 700 and p["first_audio_tts_ms"] == 300, p   # 1700 - 1000, 1700 - 1400
assert abs(p["tts_rtf"] - 1.7 / 2.5) < 1e-9, p                               # (3100 - 1400) / 2.5 s
assert p["gaps"] == 0 and p["minimum_startup_buffer_ms"] == 0, p
assert [c["state"] for c in j["checks"]] == ["PASS"] * 5, j["checks"]
PY
# The stored analysis renders again through rtf report.
expect_rc 0 'duplex-report: PASS' -- report "$TMP/pass-out.json" --md
# The first-audio threshold follows --interval-ms; a startup buffer is charged to first audio.
expect_rc 2 '\[2\] first audio \(e2e\) \| FAIL' -- duplex-report "$TMP/pass.json" --interval-ms 600
expect_rc 2 '\[2\] first audio \(e2e\) \| FAIL' -- duplex-report "$TMP/pass.json" --startup-buffer-ms 300
expect_rc 2 '\[1\] LLM decision latency \| FAIL' -- duplex-report "$TMP/slow.json"
expect_rc 3 'broken.json' -- duplex-report "$TMP/broken.json" --json "$TMP/broken-out.json"
grep -q '"verdict": "incomplete"' "$TMP/broken-out.json" && echo "ok: unreadable -> incomplete JSON" \
  || { echo "FAIL: unreadable JSON result"; fails=$((fails+1)); }
expect_rc 3 'missing.json' -- duplex-report "$TMP/missing.json"
expect_rc 1 '--max-gap-ms' -- duplex-report "$TMP/pass.json" --max-gap-ms=-5
expect_rc 1 '--interval-ms' -- duplex-report "$TMP/pass.json" --interval-ms 0
finish
