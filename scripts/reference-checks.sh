#!/usr/bin/env bash
# The by-hand checks of rtfkit against independent references, in one run on one machine
# (run it on an idle machine: every figure is a real timing). Each writes JSON under OUT.
#
#   scripts/reference-checks.sh [KIT] [OUT]     # KIT default: the `rtf demo` cpu kit
#
#  1. lm-bench   LLM and TTS stage decode vs llama.cpp's llama-bench tg (interleaved, medians)
#  2. limits     read/copy bandwidth and the stage floors, next to Debian's `mbw` memcpy and
#                the bandwidth llama-bench's LLM decode implies (weight bytes x tokens/s)
#  3. t2w        Token2Wav per-window sub-stage times at 1 and 2 threads (interleaved)
#  4. demo A/B   the demo's speak workload, pipelined vs sequential, interleaved medians
#  5. t2w-ref    Token2Wav head to head with the reference runtime's `token2wav-example`
#                (REF_T2W=path to that binary, built by you from llama.cpp-omni): the golden
#                twin (T2W_REF_KIT, default .cache/t2w-golden-twin), the golden tokens three
#                times over (12 windows), THREADS threads, runs interleaved ref/ours, medians,
#                the ratio, and the PCM SNR of our output against the reference's. Skipped
#                unless REF_T2W is set (it is not in STEPS by default: add it, STEPS=t2w-ref)
#
# Needs: a built `rtf` (RTF, default build/bin/rtf), llama-bench (scripts/build-llama-bench.sh),
# optionally `mbw` (apt-get install mbw). Environment: THREADS (default 2), RUNS (default 3),
# STEPS (default "lm limits t2w demo"), T2W_KIT (step 3's kit, default KIT; the issue's
# head-to-head uses the golden token2wav twin: tools/t2w_twin.py in the shared folder).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
RTF=${RTF:-$root/build/bin/rtf}
KIT=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/rtfkit/kits/minicpmo45-cpu-f16-seed0}
OUT=${2:-$root/out/reference-checks}
THREADS=${THREADS:-2}
RUNS=${RUNS:-3}
STEPS=${STEPS:-lm limits t2w demo}
# rtf demo's built-in paragraph (src/cli/cmd-demo.cpp), so step 4 runs the demo's work
DEMO_TEXT="Real time means the listener never waits. Each second of speech must be made in less than a \
second, chunk after chunk, while the model is still thinking about what to say next."
mkdir -p "$OUT"
[[ -x "$RTF" ]] || { echo "error: no rtf binary at $RTF (set RTF=...)" >&2; exit 1; }
has() { [[ " $STEPS " == *" $1 "* ]]; }
if has lm || has limits || has t2w || has demo; then
  [[ -d "$KIT" ]] || { echo "error: no kit at $KIT (run \`rtf demo\` once, or pass a kit)" >&2; exit 1; }
fi
LB="(not needed)"
if has lm || has limits; then LB=$("$root/scripts/build-llama-bench.sh" 2>/dev/null | tail -1); fi
echo "rtf: $RTF  kit: $KIT  llama-bench: $LB  threads: $THREADS  runs: $RUNS  out: $OUT"

if has lm; then
  echo "== 1. LLM and TTS decode vs llama-bench (tg128, $THREADS threads)"
  "$RTF" lm-bench --models "$KIT" --stage llm,tts -n 128 --runs "$RUNS" -t "$THREADS" \
    --llama-bench "$LB" --json "$OUT/lm-bench.json"
fi

if has limits; then
  echo "== 2. rtf limits vs llama-bench-implied and mbw bandwidth"
  "$RTF" limits --threads "1,$THREADS" --bw-mib 512 --models "$KIT" --json "$OUT/limits.json"
  llm=$(ls "$KIT"/MiniCPM-o-4_5-*.gguf | head -1)
  for i in $(seq "$RUNS"); do
    "$LB" -m "$llm" -p 0 -n 128 -t "$THREADS" -r 1 -o json 2>/dev/null >"$OUT/llama-bench-llm-$i.json"
  done
  # bytes one decode step reads: every tensor except token_embd (one row of it is gathered)
  "$RTF" inspect "$llm" --tensors --json "$OUT/llm-tensors.json" >/dev/null || true
  if command -v mbw >/dev/null; then mbw -q -n 5 -t0 512 >"$OUT/mbw.txt"; else echo "(mbw not installed: skipped)"; fi
  python3 - "$OUT" "$THREADS" "$RUNS" <<'PY'
import json, re, statistics, sys, os
out, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lim = json.load(open(f"{out}/limits.json"))
bw = {r["n_threads"]: r for r in lim["bandwidth"]}
ts = [json.load(open(f"{out}/llama-bench-llm-{i}.json"))[0] for i in range(1, runs + 1)]
tps = statistics.median(t["avg_ts"] for t in ts)
size = ts[0]["model_size"]
tensors = json.load(open(f"{out}/llm-tensors.json"))["files"][0]["tensors"]
per_token = sum(t["bytes"] for t in tensors if t["name"] != "token_embd.weight")
implied = per_token * tps / 2**30
read = bw[threads]["read_gib_s"]
print(f"llama-bench LLM tg128 ({threads} threads): {tps:.2f} tok/s (runs {[round(t['avg_ts'], 2) for t in ts]}); "
      f"weights {size/2**30:.3f} GiB, read per token (all but token_embd) {per_token/2**30:.3f} GiB "
      f"-> {implied:.2f} GiB/s implied")
print(f"rtf limits read @{threads} threads: {read:.2f} GiB/s  ratio {read/implied:.3f} (goal within 0.8..1.2)")
if os.path.exists(f"{out}/mbw.txt"):
    txt = open(f"{out}/mbw.txt").read()
    its = [float(x) for x in re.findall(r"^\d+\s+Method: MEMCPY.*?Copy:\s+([\d.]+) MiB/s", txt, re.M)]
    avg = [float(x) for x in re.findall(r"^AVG\s+Method: MEMCPY.*?Copy:\s+([\d.]+) MiB/s", txt, re.M)]
    if its:
        # rtf limits reports the best of its repetitions: compare best with best
        best = max(its) / 1024
        copy1 = bw[1]["copy_gib_s"]
        print(f"mbw memcpy (1 thread): best {best:.2f} GiB/s (avg {avg[0]/1024 if avg else float('nan'):.2f}); "
              f"rtf limits copy @1 thread (best of its reps): {copy1:.2f} GiB/s  ratio {copy1/best:.3f} (goal 0.8..1.2)")
for st in lim.get("path", {}).get("stages", []):
    print("floor:", json.dumps(st)[:300])
PY
fi

if has t2w; then
  echo "== 3. Token2Wav per 1-s window at 1 and $THREADS threads (interleaved)"
  toks=$root/../shared/golden/minicpmo45-t2w/tokens.txt
  input=(--random 125)
  [[ -f "$toks" ]] && input=(--tokens "$toks")
  for i in $(seq "$RUNS"); do
    for t in 1 "$THREADS"; do
      "$RTF" t2w --models "${T2W_KIT:-$KIT}" "${input[@]}" -o "$OUT/t2w.wav" \
        --t2w-threads-t2m "$t" --t2w-threads-voc "$t" --json "$OUT/t2w-$t-$i.json" >/dev/null
    done
  done
  python3 - "$OUT" "$THREADS" "$RUNS" <<'PY'
import json, statistics as st, sys
out, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for t in (1, threads):
    t2m, voc, rtf = [], [], []
    for i in range(1, runs + 1):
        d = json.load(open(f"{out}/t2w-{t}-{i}.json"))
        w = [x for x in d["windows"] if not x["final"]]
        t2m.append(st.median(x["t2m"]["total_ms"] for x in w)); voc.append(st.median(x["voc"]["total_ms"] for x in w))
        rtf.append(d["rtf"])
    print(f"{t} thread(s): token2mel {st.median(t2m):.0f} ms, vocoder {st.median(voc):.0f} ms per 1-s window, "
          f"T2W RTF {st.median(rtf):.3f}   (runs: {[round(x) for x in t2m]} / {[round(x) for x in voc]})")
PY
fi

if has demo; then
  echo "== 4. demo workload: pipelined vs sequential (interleaved A B A B)"
  "$RTF" bench --workload speak --models "$KIT" --runs "$RUNS" --warmup 1 \
    --set "max-audio-s=6;min-audio-s=6" --set "text=$DEMO_TEXT" --ab schedule=pipelined schedule=sequential \
    --json "$OUT/demo-ab.json" --md "$OUT/demo-ab.md" || true
fi
if has t2w-ref; then
  echo "== 5. Token2Wav head to head: reference token2wav-example vs rtf t2w (interleaved)"
  if [[ -z "${REF_T2W:-}" || ! -x "${REF_T2W:-}" ]]; then
    echo "(REF_T2W is not an executable token2wav-example: skipped)"
  else
    kit=${T2W_REF_KIT:-$root/.cache/t2w-golden-twin}
    [[ -f "$kit/prompt_cache.gguf" ]] || { echo "error: no Token2Wav twin at $kit (scripts/golden-twins.sh)" >&2; exit 1; }
    # the reference example repeats its built-in token list (= golden tokens.txt) OMNI_T2W_REPEAT times
    for _ in 1 2 3; do cat "$root/../shared/golden/minicpmo45-t2w/tokens.txt"; echo; done >"$OUT/t2w-ref-tokens.txt"
    for i in $(seq "$RUNS"); do
      OMNI_T2W_MODEL_DIR="$kit" OMNI_T2W_DEVICE=cpu OMNI_VOC_DEVICE=cpu OMNI_T2W_THREADS="$THREADS" OMNI_T2W_REPEAT=3 \
        OMNI_T2W_N_TIMESTEPS=5 OMNI_T2W_OUT_WAV="$OUT/t2w-ref.wav" OMNI_T2W_OUT_CHUNK_DIR="$OUT/t2w-ref-chunks" \
        "$REF_T2W" >"$OUT/t2w-ref-$i.out" 2>"$OUT/t2w-ref-$i.log" || { echo "error: $REF_T2W failed (log: $OUT/t2w-ref-$i.log)" >&2; exit 1; }
      "$RTF" t2w --models "$kit" --tokens "$OUT/t2w-ref-tokens.txt" --t2w-lead-silence 0 --t2w-threads-t2m "$THREADS" \
        --t2w-threads-voc "$THREADS" --no-fidelity -o "$OUT/t2w-ours.wav" --json "$OUT/t2w-ours-$i.json" >/dev/null
      echo "run $i/$RUNS done"
    done
    /usr/bin/python3 - "$OUT" "$RUNS" <<'PY'
import json, re, statistics as st, sys, wave
import numpy as np
out, runs = sys.argv[1], int(sys.argv[2])
ref_s, ours_s, audio = [], [], None
for i in range(1, runs + 1):
    log = open(f"{out}/t2w-ref-{i}.log").read() + open(f"{out}/t2w-ref-{i}.out").read()
    m, n = re.search(r"\[timing-total\].*?infer=([\d.]+)ms", log), re.search(r"total_samples=(\d+)", log)
    if not (m and n): sys.exit(f"t2w-ref: run {i}: no '[timing-total] ... infer=' / 'total_samples=' line in the reference's output")
    ref_s.append(float(m.group(1)) / 1000); audio = int(n.group(1)) / 24000
    ours_s.append(json.load(open(f"{out}/t2w-ours-{i}.json"))["compute_s"])
def pcm(p):
    with wave.open(p) as w: return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64)
a, b = pcm(f"{out}/t2w-ref.wav"), pcm(f"{out}/t2w-ours.wav")
k = min(len(a), len(b))
snr = 10 * np.log10(np.sum(a[:k] ** 2) / max(np.sum((a[:k] - b[:k]) ** 2), 1e-30))
r = {"schema": "rtfkit.t2w-head-to-head/1", "runs": runs, "audio_s": audio, "reference_infer_s": ref_s, "ours_compute_s": ours_s,
     "reference_rtf": st.median(ref_s) / audio, "ours_rtf": st.median(ours_s) / audio,
     "speedup": st.median(ref_s) / st.median(ours_s), "pcm_snr_db": snr, "samples": [len(a), len(b)]}
json.dump(r, open(f"{out}/t2w-head-to-head.json", "w"), indent=1)
print("| | " + " | ".join(f"run {i}" for i in range(1, runs + 1)) + " | median RTF |")
print("|---|" + "---:|" * (runs + 1))
print("| reference token2wav-example, infer | " + " | ".join(f"{x:.1f} s" for x in ref_s) + f" | {r['reference_rtf']:.2f} |")
print("| rtf t2w, compute | " + " | ".join(f"{x:.1f} s" for x in ours_s) + f" | {r['ours_rtf']:.2f} |")
print(f"ours {r['speedup']:.2f}x faster (median/median); PCM SNR ours vs reference {snr:.1f} dB over {k} samples "
      f"(lengths {len(a)} / {len(b)}); JSON {out}/t2w-head-to-head.json")
PY
  fi
fi
echo "results in $OUT"
