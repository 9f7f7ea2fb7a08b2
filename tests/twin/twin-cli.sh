#!/usr/bin/env bash
# rtf twin / rtf inspect end to end: a small tiny kit is written and passes inspect; broken files
# fail with exit 2 naming file and tensor; bad use exits 1 naming the flag or path.
source "$(dirname "$0")/../e2e/lib.sh"
K=$TMP/kit
expect_rc 0 'total' -- twin --scale tiny --only llm,projector,flow_extra --out "$K" --quiet
expect_rc 0 '^pass: 3 file' -- inspect "$K"
expect_rc 0 'ok +.*flow_extra.gguf' -- inspect "$K/token2wav-gguf/flow_extra.gguf"
"$RTF" inspect "$K" --json "$TMP/inspect.json" >/dev/null
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["pass"] and len(j["files"])==3, j' "$TMP/inspect.json" \
  && echo "ok: inspect --json" || { echo "FAIL: inspect --json"; fails=$((fails+1)); }
# --tensors: every tensor with type, shape and bytes; the bytes add up to the data section
expect_rc 0 'token_embd.weight  f16  \[128, 151748\]  38847488 B' -- inspect "$K/MiniCPM-o-4_5-F16.gguf" --tensors
"$RTF" inspect "$K/MiniCPM-o-4_5-F16.gguf" --tensors --json "$TMP/tensors.json" >/dev/null
python3 - "$TMP/tensors.json" "$K/MiniCPM-o-4_5-F16.gguf" <<'PY' && echo "ok: inspect --tensors JSON" || { echo "FAIL: inspect --tensors JSON"; fails=$((fails+1)); }
import json, os, sys
f = json.load(open(sys.argv[1]))["files"][0]
t = f["tensors"]
assert len(t) == f["n_tensors"] and all(x["bytes"] > 0 and x["type"] and x["shape"].startswith("[") for x in t), t[:2]
total = sum(x["bytes"] for x in t)
assert 0 < os.path.getsize(sys.argv[2]) - total < 16 << 20, (os.path.getsize(sys.argv[2]), total)  # header + padding
PY
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["scale"]=="tiny" and len(j["files"])==3 and j["dims"]["llm"]["n_embd"]==128, j' "$K/rtf-kit.json" \
  && echo "ok: rtf-kit.json" || { echo "FAIL: rtf-kit.json"; fails=$((fails+1)); }

# the optional vision encoder: --vision adds it, inspect knows it
expect_rc 0 'vpm +vision/MiniCPM-o-4_5-vision-F16.gguf' -- twin --scale tiny --only apm --vision --out "$TMP/vkit" --quiet
expect_rc 0 'pass: 2 file' -- inspect "$TMP/vkit"

# dry run of the full kit: sizes, nothing written
expect_rc 0 'flow_matching +token2wav-gguf/flow_matching.gguf +458' -- twin --scale full --dry-run --out "$TMP/none"
[[ ! -e "$TMP/none" ]] && echo "ok: dry run wrote nothing" || { echo "FAIL: dry run wrote files"; fails=$((fails+1)); }

# --like: the twin of a twin has the same header and passes the same check
expect_rc 0 'twin of' -- twin --like "$K/tts/MiniCPM-o-4_5-projector-F16.gguf" --out "$TMP/like/MiniCPM-o-4_5-projector-F16.gguf" --seed 3 --quiet
expect_rc 0 '^pass' -- inspect "$TMP/like/MiniCPM-o-4_5-projector-F16.gguf"

# broken files: exit 2, naming the file and the tensor
B=$TMP/broken; mkdir -p "$B"
cp "$K/token2wav-gguf/flow_extra.gguf" "$B/flow_extra.gguf"
truncate -s 1000000 "$B/flow_extra.gguf"
expect_rc 2 'flow_extra.gguf: truncated.*input_embedding.weight' -- inspect "$B/flow_extra.gguf"
echo "not a model" > "$B/encoder.gguf"
expect_rc 2 'encoder.gguf: not a GGUF file' -- inspect "$B/encoder.gguf"
expect_rc 2 'fail: 2 file' -- inspect "$B"

# usage errors: exit 1
expect_rc 1 'no such file' -- inspect "$TMP/does-not-exist"
expect_rc 1 'required' -- inspect
expect_rc 1 '--scale.*tiny, cpu, full' -- twin --scale huge --out "$TMP/x"
expect_rc 1 '--type.*f16, q8_0, q4_k_m' -- twin --type q2_k --out "$TMP/x"
expect_rc 1 '--only.*unknown file role' -- twin --only vocoder --out "$TMP/x"
expect_rc 1 '--out' -- twin --scale tiny
expect_rc 1 'kv-heads' -- twin --llm-kv-heads 3 --out "$TMP/x"
finish
