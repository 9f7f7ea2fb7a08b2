#!/usr/bin/env bash
# rtf predict end to end: the shipped descriptions, the write-up's checks on the full-scale
# layout (910B: the CPU LLM binds first, then the CPU vocoder; RTX 4090: not the LLM), bad
# hardware files named by field, calibration from a run in the (test's own) history, and
# rtf report --history over that history. No timed assertion.
source "$(dirname "$0")/../e2e/lib.sh"
expect_rc 0 'ascend-910b' -- predict --list
expect_rc 0 'Bottleneck: \*\*llm\*\*' -- predict --scale full --hardware ascend-910b --calibrate none --json "$TMP/910b.json"
expect_rc 0 'the floor is a \*\*bound\*\*|The floor is a \*\*bound\*\*' -- predict --scale full --type q4_k_m --hardware rtx-4090 \
  --calibrate none --json "$TMP/4090.json"
python3 - "$TMP/910b.json" "$TMP/4090.json" <<'PY' && echo "ok: predicted bottlenecks" || { echo "FAIL: predicted bottlenecks"; fails=$((fails+1)); }
import json, sys
a = json.load(open(sys.argv[1]))["prediction"]
assert a["order"][0] == "llm", a["order"]
l = a["levers"][0]
assert (l["stage"], l["to"], l["next_bottleneck"]) == ("llm", "npu", "voc"), l
assert l["to_prefill_s"] < l["from_prefill_s"]
b = json.load(open(sys.argv[2]))["prediction"]
assert b["bottleneck"] != "llm", b["order"]
PY
# rtf report renders a stored prediction as Markdown (README's rtf report row); HTML is refused
expect_rc 0 '' -- report "$TMP/910b.json" -o "$TMP/910b.md"
grep -q 'llm' "$TMP/910b.md" && echo "ok: rtf report of a prediction" || { echo "FAIL: rtf report predict"; fails=$((fails+1)); }
expect_rc 1 'renders as Markdown' -- report "$TMP/910b.json" -o "$TMP/910b.html"
# Bad descriptions: the message names the file and the field.
cat > "$TMP/bad.json" <<'J'
{"name": "bad", "devices": [{"name": "cpu", "kind": "cpu", "cores": {"value": 2, "source": "me"},
  "gflops": {"f32": {"value": 100, "source": "me"}}}]}
J
expect_rc 1 'bad.json: devices\[0\]\.memory_gb_s: missing' -- predict --scale tiny --hardware "$TMP/bad.json"
echo '{"name": ' > "$TMP/broken.json"
expect_rc 1 'broken.json: not valid JSON' -- predict --scale tiny --hardware "$TMP/broken.json"
expect_rc 1 'cannot run voc' -- predict --scale full --hardware ascend-910b --placement voc=npu
expect_rc 1 'no device .tpu.' -- predict --scale full --hardware rtx-4090 --placement llm=tpu
expect_rc 1 'exactly one' -- predict --hardware rtx-4090

# Calibration: a short speak on a tiny twin lands in the history; predict divides by its efficiencies.
KIT=$TMP/kit
"$RTF" twin --family minicpmo45 --scale tiny --out "$KIT" >/dev/null 2>&1 || { echo "FAIL: twin"; exit 1; }
expect_rc 0 '' -- speak --models "$KIT" --text 'Hello there.' --max-audio-s 2 -o "$TMP/a.wav"
cat > "$TMP/here.json" <<'J'
{"schema": "rtfkit.hardware/1", "name": "here", "devices": [{"name": "cpu", "kind": "cpu", "model": "test",
  "cores": {"value": 2, "source": "test"}, "memory_gb_s": {"value": 30, "source": "test"},
  "gflops": {"f32": {"value": 400, "source": "test"}, "f16": {"value": 400, "source": "test"}}}]}
J
expect_rc 0 'likely RTF' -- predict --models "$KIT" --hardware rtx-4090 --here "$TMP/here.json" --json "$TMP/cal.json"
python3 - "$TMP/cal.json" <<'PY' && echo "ok: calibration" || { echo "FAIL: calibration"; fails=$((fails+1)); }
import json, sys
j = json.load(open(sys.argv[1]))
assert j["calibration"]["history_id"] >= 1
for s in j["prediction"]["stages"]:
    assert s["efficiency"] is not None and s["efficiency"] > 0, s
    assert abs(s["likely_rtf"] - s["floor_rtf"] / s["efficiency"]) < 1e-9 * s["likely_rtf"], s
PY
expect_rc 0 'No calibration' -- predict --models "$KIT" --hardware rtx-4090 --calibrate none
# The history as a series: Markdown and an HTML page with the chart.
expect_rc 0 '\| rtf \|' -- report --history --metric rtf --md
expect_rc 0 '' -- report --history --metric rtf --machine this -o "$TMP/h.html"
grep -q '<svg' "$TMP/h.html" && echo "ok: history chart" || { echo "FAIL: history chart"; fails=$((fails+1)); }
expect_rc 1 'exactly one' -- report --history "$TMP/cal.json"
finish
