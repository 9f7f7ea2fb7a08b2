#!/usr/bin/env bash
# rtf lm-bench end to end on a tiny twin kit: both stages decode the asked number of tokens,
# the JSON holds every run, and the llama-bench side is driven through a stand-in script
# (the real llama-bench is a by-hand tool: scripts/build-llama-bench.sh) so the argument
# mapping, interleaving, ratio, --min-ratio exit code and failure reporting are checked.
source "$(dirname "$0")/../e2e/lib.sh"
KIT=$TMP/kit
"$RTF" twin --family minicpmo45 --scale tiny --out "$KIT" >/dev/null 2>&1 || { echo "FAIL: twin"; exit 1; }

# stand-in llama-bench: logs like the real one on stderr, records its arguments, prints
# one tg result whose avg_ts comes from $FAKE_TS (or fails when FAKE_TS=fail)
cat >"$TMP/llama-bench" <<'SH'
#!/usr/bin/env bash
echo "$@" >>"$FAKE_ARGS"
echo "load_backend: loaded CPU backend" >&2
[[ "$FAKE_TS" == fail ]] && { echo "error: failed to load model" >&2; exit 1; }
n=0; while [[ $# -gt 0 ]]; do [[ $1 == -n ]] && n=$2; shift; done
echo "[ {\"model_filename\": \"x\", \"n_prompt\": 0, \"n_gen\": $n, \"avg_ts\": $FAKE_TS, \"samples_ts\": [ $FAKE_TS ]} ]"
SH
chmod +x "$TMP/llama-bench"
export FAKE_ARGS=$TMP/args

# 1. ours only, both stages: exact work size, JSON contract
expect_rc 0 'tts: stage' -- lm-bench --models "$KIT" -n 8 --runs 3 -t 1 --json "$TMP/a.json"
python3 - "$TMP/a.json" <<'PY' && echo "ok: JSON" || { echo "FAIL: lm-bench JSON"; fails=$((fails+1)); }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "rtfkit.lm-bench-set/1"
llm, tts = d["results"]
assert llm["config"]["stage"] == "llm" and tts["config"]["stage"] == "tts"
for r in (llm, tts):
    assert r["schema"] == "rtfkit.lm-bench/1" and len(r["runs"]) == 3
    for run in r["runs"]:
        assert run["stage_tps"] > 0 and run["decode_tps"] >= run["stage_tps"] * 0.999, run
    assert "ratio" not in r
assert all(run["n"] == 8 for run in tts["runs"]), tts["runs"]     # EOS masked: exactly n codes
assert all(1 <= run["n"] <= 8 for run in llm["runs"]), llm["runs"]
assert tts["measured_file"].endswith(".gguf") and ".rtf-cache" in tts["measured_file"]
for r in (llm, tts):   # the memory floor: bytes per token from the file, a measured bandwidth
    m = r["memory_floor"]
    assert m["bytes_per_token"] > 0 and m["read_gib_s"] > 0 and m["tps"] > 0, m
    assert abs(m["stage_of_floor"] - r["median"]["stage_tps"] / m["tps"]) < 1e-9 * max(1, m["stage_of_floor"]), m
PY

# 1b. a weight type: the converted file is what runs and what the floor costs (fewer bytes)
expect_rc 0 'q8_0 weights' -- lm-bench --models "$KIT" --stage llm -n 4 --runs 1 -t 1 --weight-type q8_0 --json "$TMP/q.json"
python3 - "$TMP/a.json" "$TMP/q.json" <<'PY' && echo "ok: weight type" || { echo "FAIL: lm-bench --weight-type"; fails=$((fails+1)); }
import json, sys
f16 = json.load(open(sys.argv[1]))["results"][0]
q8 = json.load(open(sys.argv[2]))["results"][0]
assert ".q8_0." in q8["measured_file"] and ".rtf-cache" in q8["measured_file"], q8["measured_file"]
assert q8["memory_floor"]["bytes_per_token"] < f16["memory_floor"]["bytes_per_token"]
PY
expect_rc 1 'weight-type' -- lm-bench --models "$KIT" --weight-type q3

# 1c. rtf lm-fidelity: the converted type against the file's own weights, both stages
expect_rc 0 'tts q8_0: KL mean' -- lm-fidelity --models "$KIT" --weight-type q8_0 -n 16 -t 1 --json "$TMP/f.json"
python3 - "$TMP/f.json" <<'PY' && echo "ok: lm-fidelity JSON" || { echo "FAIL: lm-fidelity JSON"; fails=$((fails+1)); }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "rtfkit.lm-fidelity/1"
assert [r["stage"] for r in d["results"]] == ["llm", "tts"]
for r in d["results"]:
    assert r["weight_type"] == "q8_0" and r["positions"] > 1 and r["kl_mean"] >= 0 and 0 <= r["top1_pct"] <= 100, r
    assert r["passes"] == (r["kl_mean"] <= 0.01 and r["top1_pct"] >= 98), r
PY
expect_rc 1 "'file' is not one of" -- lm-fidelity --models "$KIT" --weight-type file
expect_rc 1 'exactly one of --models' -- lm-fidelity --weight-type q8_0
# 1d. text mode's fixed user turn priced against echo (the same reply after other templates:
# the twin's distributions must differ, and the verdict follows the lines)
expect_rc 0 'llm text-turn fixed: KL mean' -- lm-fidelity --models "$KIT" --text-turn fixed -n 24 -t 1 --json "$TMP/tt.json"
python3 - "$TMP/tt.json" <<'PY' && echo "ok: lm-fidelity --text-turn JSON" || { echo "FAIL: lm-fidelity --text-turn JSON"; fails=$((fails+1)); }
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
assert r["priced"] == "text-turn fixed" and r["reference"] == "text-turn echo" and r["weight_type"] == "file", r
assert r["positions"] == 24 and r["kl_mean"] > 0 and r["hidden_snr_db"] is not None, r
assert r["passes"] == (r["kl_mean"] <= 0.01 and r["top1_pct"] >= 98), r
PY
expect_rc 1 'use --stage llm' -- lm-fidelity --models "$KIT" --text-turn fixed --stage tts
expect_rc 1 'text-turn' -- lm-fidelity --models "$KIT" --text-turn echo

# 2. with the stand-in llama-bench: ratio, argument mapping, interleaving (one call per run)
: >"$FAKE_ARGS"
FAKE_TS=0.001 expect_rc 0 'ratio' -- lm-bench --models "$KIT" --stage tts -n 8 --runs 3 -t 1 --fa on \
  --kv-type q8_0 --llama-bench "$TMP/llama-bench" --min-ratio 0.97 --json "$TMP/b.json"
[[ $(wc -l <"$FAKE_ARGS") -eq 3 ]] || { echo "FAIL: llama-bench called $(wc -l <"$FAKE_ARGS") times, want 3"; fails=$((fails+1)); }
grep -q -- '-p 0 -n 8 -r 1 -o json -t 1 -fa on -ctk q8_0 -ctv q8_0' "$FAKE_ARGS" &&
  grep -q -- "-m $KIT/.rtf-cache/" "$FAKE_ARGS" && echo "ok: llama-bench arguments" ||
  { echo "FAIL: llama-bench arguments: $(head -1 "$FAKE_ARGS")"; fails=$((fails+1)); }
python3 -c "
import json; r = json.load(open('$TMP/b.json'))['results'][0]
assert r['median']['llama_bench_tps'] == 0.001 and abs(r['ratio'] - r['median']['stage_tps'] / 0.001) < 1e-6 * r['ratio']
" && echo "ok: ratio" || { echo "FAIL: ratio"; fails=$((fails+1)); }

# 3. verdict and failures
FAKE_TS=1e9 expect_rc 2 'BELOW 0.970' -- lm-bench --models "$KIT" --stage llm -n 4 --runs 1 -t 1 \
  --llama-bench "$TMP/llama-bench" --min-ratio 0.97
FAKE_TS=fail expect_rc 1 'llama-bench failed \(exit status 1\)' -- lm-bench --models "$KIT" --stage llm -n 4 \
  --runs 1 -t 1 --llama-bench "$TMP/llama-bench"
expect_rc 1 'not one of llm, tts' -- lm-bench --models "$KIT" --stage vocoder
expect_rc 1 'exactly one of --models' -- lm-bench -n 4
expect_rc 1 'needs --llama-bench' -- lm-bench --models "$KIT" --min-ratio 0.97
expect_rc 1 'n-gen' -- lm-bench --models "$KIT" -n 0
expect_rc 1 'kv-type' -- lm-bench --models "$KIT" --kv-type q3
finish
