#!/usr/bin/env bash
# Token2Wav flow steps as a lever, measured (issue 13 item 4): prompt caches for 5, 3 and 2
# Euler steps built by `rtf t2w-prompt` from one seeded prompt bundle, then `rtf t2w` with
# each (--prompt-cache, --flow-steps) on the same tokens, interleaved run by run (5 3 2 5 3
# 2 ...), medians of RUNS; then one fidelity run per step count != 5 scoring its mel and PCM
# against the 5-step output (--ref-prompt-cache = the 5-step cache from the same bundle, so
# only the step count differs). Run it on an idle machine: every figure is a timing.
#
#   scripts/t2w-steps.sh [KIT] [OUT]     # KIT default: the golden Token2Wav twin
#
# The bundle: the full-scale twin's (`rtf twin --scale full --only prompt_cache`, seed 0:
# T_p 154, L 302, the official shapes), so it fits the golden twin's weights. Default
# workload = the issue's: the golden tokens three times over (282 codes, 12 windows),
# --t2w-lead-silence 0, 2 threads. Environment: RUNS (3), STEPS ("5 3 2"), RTF (binary).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
RTF=${RTF:-$root/build/bin/rtf}
KIT=${1:-$root/.cache/t2w-golden-twin}
OUT=${2:-$root/out/t2w-steps}
RUNS=${RUNS:-3}
STEPS=${STEPS:-5 3 2}
shared=${RTF_SHARED_DIR:-$root/../shared}
[[ -x $RTF ]] || { echo "t2w-steps: no rtf binary at $RTF" >&2; exit 1; }
[[ -d $KIT ]] || { echo "t2w-steps: no kit at $KIT (scripts/golden-twins.sh makes the golden twin)" >&2; exit 1; }
mkdir -p "$OUT"
tok=$OUT/tokens.txt
for _ in 1 2 3; do cat "$shared/golden/minicpmo45-t2w/tokens.txt"; echo; done >"$tok"
bundle=$OUT/bundle-kit/token2wav-gguf
[[ -f $bundle/spk_f32.bin ]] || "$RTF" twin --scale full --only prompt_cache --out "$OUT/bundle-kit" >/dev/null
for n in 5 $STEPS; do
  [[ -f $OUT/pc$n.gguf ]] && continue
  echo "building the $n-step prompt cache"
  "$RTF" t2w-prompt --t2w-dir "$KIT" --bundle "$bundle" --steps "$n" -o "$OUT/pc$n.gguf" --json "$OUT/build-$n.json" --quiet
done
common=(t2w --models "$KIT" --tokens "$tok" --t2w-lead-silence 0 --t2w-threads-t2m 2 --t2w-threads-voc 2 -o "$OUT/out.wav")
for i in $(seq 1 "$RUNS"); do
  for n in $STEPS; do
    echo "run $i/$RUNS: $n flow steps ($(cut -d' ' -f1-3 /proc/loadavg) load)"
    "$RTF" "${common[@]}" --prompt-cache "$OUT/pc$n.gguf" --flow-steps "$n" --no-fidelity --json "$OUT/run-$n-$i.json" >/dev/null 2>"$OUT/run-$n-$i.err"
  done
done
for n in $STEPS; do
  [[ $n == 5 ]] && continue
  echo "fidelity: $n flow steps vs 5"
  "$RTF" "${common[@]}" --prompt-cache "$OUT/pc$n.gguf" --flow-steps "$n" --ref-prompt-cache "$OUT/pc5.gguf" --json "$OUT/fid-$n.json" >/dev/null 2>"$OUT/fid-$n.err"
done
/usr/bin/python3 - "$OUT" "$RUNS" $STEPS <<'PY'
import json, statistics, sys, os
out, runs, steps = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows, base = [], None
for n in steps:
    rs = [json.load(open(f"{out}/run-{n}-{i}.json")) for i in range(1, runs + 1)]
    rtf = [r["rtf"] for r in rs]
    t2m = [statistics.median([w["t2m"]["total_ms"] for w in r["windows"]]) for r in rs]
    voc = [statistics.median([w["voc"]["total_ms"] for w in r["windows"]]) for r in rs]
    fid = json.load(open(f"{out}/fid-{n}.json"))["fidelity"] if os.path.exists(f"{out}/fid-{n}.json") else None
    b = json.load(open(f"{out}/build-{n}.json"))
    row = {"flow_steps": int(n), "rtf_runs": rtf, "rtf": statistics.median(rtf), "t2m_window_ms": statistics.median(t2m),
           "voc_window_ms": statistics.median(voc), "mel_snr_db": fid and fid["mel_snr_db"], "pcm_snr_db": fid and fid["pcm_snr_db"],
           "cache_build_ms": b["build_ms"], "differs_from_reference": rs[0]["flow_steps_differ_from_reference"]}
    if n == "5": base = row["rtf"]
    rows.append(row)
for r in rows: r["speedup_vs_5"] = base / r["rtf"] if base else None
json.dump({"schema": "rtfkit.t2w-steps/1", "runs": runs, "rows": rows}, open(f"{out}/steps.json", "w"), indent=1)
def f(x, p=2): return "-" if x is None else f"{x:.{p}f}"
print("| flow steps | RTF runs | median RTF | vs 5 steps | t2m ms/window | voc ms/window | mel SNR dB vs 5 | PCM SNR dB vs 5 | cache build ms |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['flow_steps']} | {', '.join(f(x, 3) for x in r['rtf_runs'])} | {f(r['rtf'], 3)} | {f(r['speedup_vs_5'])}x | "
          f"{r['t2m_window_ms']:.0f} | {r['voc_window_ms']:.0f} | {f(r['mel_snr_db'])} | {f(r['pcm_snr_db'])} | {r['cache_build_ms']:.0f} |")
PY
