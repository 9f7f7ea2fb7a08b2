#!/usr/bin/env bash
# rtf tune end to end on the mock workload (instant): the kept change lands in tuned.json,
# the report lists every trial; the speak candidates list comes from the knob table; bad
# input is a clear error (exit 1).
source "$(dirname "$0")/../e2e/lib.sh"
expect_rc 0 'Descent' -- tune --workload mock --candidate 'pipeline:rtf=0.45' --candidate 'types:quality=fail' \
  --candidate 'runtime:rtf=0.445' --warmup 0 -o "$TMP/tuned.json" --json "$TMP/tune.json" --md "$TMP/tune.md"
python3 - "$TMP/tuned.json" "$TMP/tune.json" "$TMP/tune.md" <<'PY' && echo "ok: tune outputs" || { echo "FAIL: tune outputs"; fails=$((fails+1)); }
import json, sys
assert json.load(open(sys.argv[1])) == {"rtf": "0.45"}
j = json.load(open(sys.argv[2]))
v = {t["knob"] + "=" + t["value"]: t["verdict"] for t in j["trials"]}
assert v == {"quality=fail": "failed gate", "rtf=0.45": "kept", "rtf=0.445": "within noise"}, v
assert [d["step"] for d in j["descent"]] == ["baseline", "rtf=0.45"]
md = open(sys.argv[3]).read()
assert "failed gate" in md and "within noise" in md
PY
# rtf report renders the stored result as Markdown (as README's rtf report row says); HTML
# is refused with the way to get the Markdown
expect_rc 0 '' -- report "$TMP/tune.json" -o "$TMP/tune2.md"
grep -q 'within noise' "$TMP/tune2.md" && echo "ok: rtf report of a tune result" || { echo "FAIL: rtf report tune"; fails=$((fails+1)); }
expect_rc 1 'renders as Markdown' -- report "$TMP/tune.json" -o "$TMP/tune2.html"
# the tune result lands in the history (kind tune, its estimate as rtf)
expect_rc 0 'tune +mock +tuned' -- history list --kind tune
KIT=$TMP/kit
"$RTF" twin --family minicpmo45 --scale tiny --out "$KIT" >/dev/null 2>&1 || { echo "FAIL: twin"; exit 1; }
expect_rc 0 'placement +t2w-threads-voc=1' -- tune --models "$KIT" --list
expect_rc 0 'changes the math' -- tune --models "$KIT" --list
expect_rc 0 't2w-ramp=11,15,21 \+ t2w-first-window=8' -- tune --models "$KIT" --list
# the speak workload starts from the machine profile (here a faked AVX2 CPU's built-in row):
# its choices are every trial's base, not candidates; --profile none lists them again
out=$(RTF_PROFILE=auto RTF_CPU_FEATURES=avx2,fma "$RTF" tune --models "$KIT" --list 2>&1)
if grep -q 'starting from the profile avx2' <<<"$out" && ! grep -q '^types  tts-weight-type=q8_0 ' <<<"$out" &&
   RTF_PROFILE=none "$RTF" tune --models "$KIT" --list 2>&1 | grep -q '^types  tts-weight-type=q8_0 '; then
  echo "ok: tune starts from the machine profile"
else
  echo "FAIL: tune and the machine profile"; echo "$out" | head -5; fails=$((fails+1))
fi
# --objective: the first audio decides; the bundle's two knobs land in tuned.json together
expect_rc 0 'Objective \*\*first' -- tune --workload mock --set 'first-audio-ms=1000' \
  --candidate 'pipeline:first-audio-ms=500+rtf=0.55' --objective first_audio_ms --warmup 0 -o "$TMP/tuned2.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d == {'first-audio-ms': '500', 'rtf': '0.55'}, d" \
  "$TMP/tuned2.json" && echo "ok: objective + bundle" || { echo "FAIL: objective + bundle"; fails=$((fails+1)); }
expect_rc 1 'objective' -- tune --workload mock --candidate 'pipeline:rtf=0.4' --objective latency
expect_rc 1 'is not LAYER:KEY=VALUE' -- tune --workload mock --candidate 'rtf0.4'
expect_rc 1 'no built-in candidates' -- tune --workload mock
expect_rc 1 'runs per side' -- tune --workload mock --candidate 'pipeline:rtf=0.4' --runs 2
expect_rc 1 'budget' -- tune --workload mock --candidate 'pipeline:rtf=0.4' --budget soon
finish
