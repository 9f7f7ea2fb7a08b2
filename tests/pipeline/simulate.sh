#!/usr/bin/env bash
# rtf simulate end to end: pipelined beats sequential on the same synthetic costs, JSON and
# trace are valid, bad values exit 1 naming the value.
source "$(dirname "$0")/../e2e/lib.sh"
expect_rc 0 'rtf_steady' -- simulate --cost llm=2ms,tts=6ms,t2w=6ms --chunk-ms 20 --chunks 8
expect_rc 0 'lockstep' -- simulate --cost llm=2ms,tts=6ms,t2w=6ms --chunk-ms 20 --chunks 4 --schedule lockstep --clock virtual
"$RTF" simulate --cost llm=100ms,tts=300ms,t2w=300ms --chunk-ms 1000 --chunks 20 --clock virtual \
  --json "$TMP/p.json" --trace "$TMP/p.trace.json" >/dev/null &&
"$RTF" simulate --cost llm=100ms,tts=300ms,t2w=300ms --chunk-ms 1000 --chunks 20 --clock virtual \
  --schedule sequential --json "$TMP/s.json" >/dev/null &&
python3 - "$TMP" <<'PY' && echo "ok: simulate json/trace" || { echo "FAIL: simulate json/trace"; fails=$((fails+1)); }
import json, sys
d = sys.argv[1]
p = json.load(open(d + "/p.json"))["result"]["metrics"]
s = json.load(open(d + "/s.json"))["result"]["metrics"]
assert abs(p["rtf"] - 0.3) < 0.03, p["rtf"]          # (100 + 300 + 300*20) / 20000 = 0.32
assert abs(s["rtf"] - 0.7) < 0.01, s["rtf"]
for k in ["rtf", "rtf_steady", "rtf_stage.llm", "rtf_stage.tts", "rtf_stage.t2w", "first_audio_ms", "xrt",
          "starvation", "queue_wait.q1", "queue_wait.q2", "bound_overlap", "bound_serial", "pipeline_efficiency",
          "t2w.item_ms"]:
    assert k in p, k
t = json.load(open(d + "/p.trace.json"))
ev = t["traceEvents"]
names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert {"llm", "tts", "t2w", "playback"} <= names, names
assert sum(1 for e in ev if e["ph"] == "X" and e.get("cat") == "stage") == 60
assert any(e["ph"] == "C" for e in ev)
PY
"$RTF" simulate --chunks 3 --clock virtual --json - | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["result"]["metrics"]["n_chunks"] == 3' \
  && echo "ok: simulate --json - is pure JSON" || { echo "FAIL: simulate --json -"; fails=$((fails+1)); }
expect_rc 1 '--d1' -- simulate --d1 0
expect_rc 1 "'-2'" -- simulate --d2 -2
expect_rc 1 "'vocoder'" -- simulate --cost vocoder=10ms
expect_rc 1 "'abc'" -- simulate --cost llm=abc
expect_rc 1 'KEY=VALUE' -- simulate --cost llm
expect_rc 1 "'fast'" -- simulate --schedule fast
expect_rc 1 "'lazy'" -- simulate --cost-type lazy
expect_rc 1 '--chunks' -- simulate --chunks 0
expect_rc 1 '--chunk-ms' -- simulate --chunk-ms 0
expect_rc 1 '100000' -- simulate --cpus llm=100000 --chunks 1 --cost llm=0,tts=0,t2w=0
finish
