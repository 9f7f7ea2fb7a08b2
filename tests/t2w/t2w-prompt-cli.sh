#!/usr/bin/env bash
# e2e: `rtf t2w-prompt` builds prompt caches from a bundle for a tiny kit (written by
# t2w-tiny-kit), twice to the same bytes; `rtf t2w --prompt-cache --flow-steps N` runs with
# them, says that N != 5 differs from the reference and scores it against the 5-step cache;
# bad flags and bundles fail naming what is wrong.
source "$(dirname "$0")/../e2e/lib.sh"
KITGEN="$(dirname "$RTF")/t2w-tiny-kit"
[[ -x "$KITGEN" ]] || { echo "missing $KITGEN"; exit 1; }
"$KITGEN" "$TMP/kit/token2wav-gguf" || exit 1
B=$TMP/bundle
mkdir -p "$B"
# a seeded bundle: 192 speaker floats, T_p = 13 codes, T_m = 20 rows of 80
python3 - "$B" <<'PY'
import random, struct, sys
r = random.Random(5); d = sys.argv[1]
open(d + "/spk_f32.bin", "wb").write(struct.pack("<192f", *[r.gauss(0, 1) for _ in range(192)]))
open(d + "/prompt_tokens_i32.bin", "wb").write(struct.pack("<13i", *[r.randrange(6561) for _ in range(13)]))
open(d + "/prompt_mel_btc_f32.bin", "wb").write(struct.pack("<1600f", *[r.gauss(0, 1) for _ in range(1600)]))
PY
for n in 5 3 2; do
  expect_rc 0 "n_timesteps $n, L 20" -- t2w-prompt --models "$TMP/kit" --bundle "$B" --steps $n -o "$TMP/pc$n.gguf" --json "$TMP/pc$n.json"
done
expect_rc 0 "wrote" -- t2w-prompt --t2w-dir "$TMP/kit/token2wav-gguf" --bundle "$B" --steps 3 -o "$TMP/pc3b.gguf" --threads 1 --quiet
cmp -s "$TMP/pc3.gguf" "$TMP/pc3b.gguf" && echo "ok: same bytes twice" || { echo "FAIL: two builds differ"; fails=$((fails+1)); }
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); t=j["tensors"]; assert j["n_timesteps"]==3 and t["prompt_cache.estimator_att_cache"]==[32,20,12,2], j' "$TMP/pc3.json" \
  && echo "ok: --json shapes" || { echo "FAIL: --json shapes"; fails=$((fails+1)); }
expect_rc 0 "differs from the reference" -- t2w --models "$TMP/kit" --prompt-cache "$TMP/pc3.gguf" --flow-steps 3 --ref-prompt-cache "$TMP/pc5.gguf" --random 40 -o "$TMP/a.wav" --json "$TMP/a.json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); f=j["fidelity"]; assert j["flow_steps_differ_from_reference"] and f["reference_flow_steps"]==5 and f["flow_steps"]==3 and f["mel_snr_db"] is not None, f' "$TMP/a.json" \
  && echo "ok: 3 steps scored against 5" || { echo "FAIL: fidelity vs 5 steps"; fails=$((fails+1)); }
expect_rc 0 "windows" -- t2w --models "$TMP/kit" --prompt-cache "$TMP/pc5.gguf" --flow-steps 5 --random 40 -o "$TMP/b.wav" --json "$TMP/b.json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert not j["flow_steps_differ_from_reference"] and j["fidelity"] is None, j["fidelity"]' "$TMP/b.json" \
  && echo "ok: 5 steps is the reference" || { echo "FAIL: 5 steps"; fails=$((fails+1)); }
# the tiny kit's own cache has 2 steps: no 5-step cache to score against unless one is given
expect_rc 0 "no 5-step prompt cache" -- t2w --models "$TMP/kit" --random 20 -o "$TMP/c.wav"
expect_rc 1 "n_timesteps 2.*expected 5" -- t2w --models "$TMP/kit" --random 20 -o "$TMP/c.wav" --ref-prompt-cache "$TMP/kit/token2wav-gguf/prompt_cache.gguf"
expect_rc 1 "pc2.gguf has n_timesteps 2" -- t2w --models "$TMP/kit" --prompt-cache "$TMP/pc2.gguf" --flow-steps 3 --random 5 -o "$TMP/d.wav"
# bad use
expect_rc 1 "steps" -- t2w-prompt --models "$TMP/kit" --bundle "$B" --steps 0 -o "$TMP/x.gguf"
expect_rc 1 "exactly one of --models" -- t2w-prompt --bundle "$B" -o "$TMP/x.gguf"
expect_rc 1 "bundle" -- t2w-prompt --models "$TMP/kit" -o "$TMP/x.gguf"
mkdir -p "$TMP/bad"; cp "$B"/* "$TMP/bad/"; head -c 100 "$B/spk_f32.bin" > "$TMP/bad/spk_f32.bin"
expect_rc 1 "spk_f32.bin.*expected" -- t2w-prompt --models "$TMP/kit" --bundle "$TMP/bad" -o "$TMP/x.gguf"
cp "$B"/* "$TMP/bad/"; head -c 6080 "$B/prompt_mel_btc_f32.bin" > "$TMP/bad/prompt_mel_btc_f32.bin"
expect_rc 1 "prompt_mel_btc_f32.bin holds 1520 float32 values \(19 rows of 80\), expected" -- t2w-prompt --models "$TMP/kit" --bundle "$TMP/bad" -o "$TMP/x.gguf"
[[ -e $TMP/x.gguf || -e $TMP/x.gguf.part ]] && { echo "FAIL: a failed build left a file"; fails=$((fails+1)); }
finish
