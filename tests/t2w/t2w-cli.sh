#!/usr/bin/env bash
# e2e: `rtf t2w` on a tiny random kit (written by t2w-tiny-kit next to the rtf binary).
source "$(dirname "$0")/../e2e/lib.sh"
KITGEN="$(dirname "$RTF")/t2w-tiny-kit"
[[ -x "$KITGEN" ]] || { echo "missing $KITGEN"; exit 1; }
"$KITGEN" "$TMP/kit/token2wav-gguf" || exit 1

expect_rc 0 "kernels: [0-9]+ weights on our packed kernels" -- t2w --models "$TMP/kit" --random 60 --seed 1 -o "$TMP/a.wav" --json "$TMP/a.json"
[[ -s "$TMP/a.wav" ]] || { echo "FAIL: no wav"; fails=$((fails+1)); }
grep -q '"finite": true' "$TMP/a.json" || { echo "FAIL: json lacks finite=true"; fails=$((fails+1)); }
expect_rc 0 "" -- t2w --models "$TMP/kit/token2wav-gguf" --random 30 -o "$TMP/b.wav" --no-cfg --t2w-threads-t2m 1 --t2w-threads-voc 1 --chunk 7
printf '1 2 3\n4,5 6\n' > "$TMP/tok.txt"
expect_rc 0 "" -- t2w --models "$TMP/kit" --tokens "$TMP/tok.txt" -o "$TMP/c.wav" --t2w-lead-silence 0
: > "$TMP/empty.txt"
expect_rc 1 "empty" -- t2w --models "$TMP/kit" --tokens "$TMP/empty.txt" -o "$TMP/d.wav"
echo "1 2 7000" > "$TMP/bad.txt"
expect_rc 1 "out of range" -- t2w --models "$TMP/kit" --tokens "$TMP/bad.txt" -o "$TMP/d.wav"
echo "1 x 3" > "$TMP/junk.txt"
expect_rc 1 "tokens" -- t2w --models "$TMP/kit" --tokens "$TMP/junk.txt" -o "$TMP/d.wav"
expect_rc 1 "random" -- t2w --models "$TMP/kit" -o "$TMP/d.wav"
expect_rc 1 "flow-steps|n_timesteps" -- t2w --models "$TMP/kit" --random 5 --flow-steps 7 -o "$TMP/d.wav"
expect_rc 1 "device|Device|CPU" -- t2w --models "$TMP/kit" --random 5 --t2w-device-t2m NOPE0 -o "$TMP/d.wav"
mkdir -p "$TMP/broken"
cp "$TMP/kit/token2wav-gguf/"*.gguf "$TMP/broken/"
echo garbage > "$TMP/broken/hifigan2.gguf"
expect_rc 1 "hifigan2.gguf" -- t2w --models "$TMP/broken" --random 5 -o "$TMP/d.wav"
expect_rc 1 "encoder.gguf" -- t2w --models "$TMP/nowhere" --random 5 -o "$TMP/d.wav"
# the bf16 vocoder runs on oneDNN: with it switched off, a refusal that says why and what to use
RTF_T2W_ONEDNN=0 expect_rc 1 "--t2w-type-voc: bf16 needs .*use f32 or f16" -- t2w --models "$TMP/kit" --random 5 --t2w-type-voc bf16 -o "$TMP/d.wav"
export -n RTF_T2W_ONEDNN 2>/dev/null; unset RTF_T2W_ONEDNN
python3 - "$TMP/a.json" <<'PY' && echo "ok: kernels in the JSON" || { echo "FAIL: kernels in the JSON"; fails=$((fails+1)); }
import json, sys
k = json.load(open(sys.argv[1]))["kernels"]
assert {"packed_weights", "onednn_weights", "onednn"} <= set(k), k
assert {"compiled", "available", "version", "isa", "impls"} <= set(k["onednn"]), k
t = k["token2mel"]
assert t["cfg"] in ("lanes", "batched") and t["lanes"] in (1, 2), t
# the fused attention wherever the CPU has AVX-512F or AVX2 + FMA (dit-attention.h), else
# ggml's graph; packed_isa names the micro-kernels
flags = set(open("/proc/cpuinfo").read().split())
isa = "avx512" if "avx512f" in flags else "avx2" if {"avx2", "fma"} <= flags else "off"
assert t["attention"] == ("ggml" if isa == "off" else "fused"), (t, isa)
assert k["packed_isa"] == isa, (k, isa)
PY
# the A/B switch back to ggml's attention graph, said on stderr and in the JSON
RTF_T2W_ATTN=ggml expect_rc 0 "DiT attention ggml graph" -- t2w --models "$TMP/kit" --random 30 --seed 1 -o "$TMP/e.wav" --json "$TMP/e.json"
export -n RTF_T2W_ATTN 2>/dev/null; unset RTF_T2W_ATTN
grep -q '"attention": "ggml"' "$TMP/e.json" || { echo "FAIL: RTF_T2W_ATTN=ggml not in the JSON"; fails=$((fails+1)); }
finish
