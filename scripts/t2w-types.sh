#!/usr/bin/env bash
# Token2Wav compute types, measured (issue 13's type table): each configuration of
# --t2w-type-t2m / --t2w-type-voc on the same tokens, interleaved run by run (A B C A B C
# ...), medians of RUNS; then one fidelity run per configuration (mel and PCM SNR against
# the f32 path on the same tokens). Run it on an idle machine: every figure is a timing.
#
#   scripts/t2w-types.sh [KIT] [OUT]     # KIT default: the golden Token2Wav twin
#
# Default workload = the issue's: the golden tokens three times over (282 codes, 12
# windows), --t2w-lead-silence 0, 2 threads. Environment: RUNS (3), CONFIGS (default
# "f32:f32 f16:f32 bf16:f32 q8_0:f32 f32:f16 bf16:f16", token2mel:vocoder), RTF (binary).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
RTF=${RTF:-$root/build/bin/rtf}
KIT=${1:-$root/.cache/t2w-golden-twin}
OUT=${2:-$root/out/t2w-types}
RUNS=${RUNS:-3}
CONFIGS=${CONFIGS:-f32:f32 f16:f32 bf16:f32 q8_0:f32 f32:f16 bf16:f16}
shared=${RTF_SHARED_DIR:-$root/../shared}
[[ -x $RTF ]] || { echo "t2w-types: no rtf binary at $RTF" >&2; exit 1; }
[[ -d $KIT ]] || { echo "t2w-types: no kit at $KIT (scripts/golden-twins.sh makes the golden twin)" >&2; exit 1; }
mkdir -p "$OUT"
tok=$OUT/tokens.txt
for _ in 1 2 3; do cat "$shared/golden/minicpmo45-t2w/tokens.txt"; echo; done >"$tok"
common=(t2w --models "$KIT" --tokens "$tok" --t2w-lead-silence 0 --t2w-threads-t2m 2 --t2w-threads-voc 2 -o "$OUT/out.wav")
for i in $(seq 1 "$RUNS"); do
  for c in $CONFIGS; do
    t=${c%%:*} v=${c##*:}
    echo "run $i/$RUNS: token2mel $t, vocoder $v"
    "$RTF" "${common[@]}" --t2w-type-t2m "$t" --t2w-type-voc "$v" --no-fidelity --json "$OUT/run-$t-$v-$i.json" >/dev/null
  done
done
for c in $CONFIGS; do
  t=${c%%:*} v=${c##*:}
  [[ $c == f32:f32 ]] && continue
  echo "fidelity: token2mel $t, vocoder $v"
  "$RTF" "${common[@]}" --t2w-type-t2m "$t" --t2w-type-voc "$v" --json "$OUT/fid-$t-$v.json" >/dev/null
done
/usr/bin/python3 - "$OUT" "$RUNS" $CONFIGS <<'PY'
import json, statistics, sys, os
out, runs, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows, base = [], None
for c in configs:
    t, v = c.split(":")
    rs = [json.load(open(f"{out}/run-{t}-{v}-{i}.json")) for i in range(1, runs + 1)]
    rtf = [r["rtf"] for r in rs]
    t2m = [statistics.median([w["t2m"]["total_ms"] for w in r["windows"]]) for r in rs]
    voc = [statistics.median([w["voc"]["total_ms"] for w in r["windows"]]) for r in rs]
    fid = None
    if os.path.exists(f"{out}/fid-{t}-{v}.json"): fid = json.load(open(f"{out}/fid-{t}-{v}.json"))["fidelity"]
    row = {"type_t2m": t, "type_voc": v, "rtf_runs": rtf, "rtf": statistics.median(rtf),
           "t2m_window_ms": statistics.median(t2m), "voc_window_ms": statistics.median(voc),
           "mel_snr_db": fid and fid["mel_snr_db"], "pcm_snr_db": fid and fid["pcm_snr_db"]}
    if c == "f32:f32": base = row["rtf"]
    rows.append(row)
for r in rows: r["speedup_vs_f32"] = base / r["rtf"] if base else None
json.dump({"schema": "rtfkit.t2w-types/1", "runs": runs, "rows": rows}, open(f"{out}/types.json", "w"), indent=1)
def f(x, p=2): return "identical" if x is None and False else ("-" if x is None else f"{x:.{p}f}")
print("| token2mel | vocoder | RTF runs | median RTF | vs f32 | t2m ms/window | voc ms/window | mel SNR dB | PCM SNR dB |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['type_t2m']} | {r['type_voc']} | {', '.join(f'{x:.3f}' for x in r['rtf_runs'])} | {r['rtf']:.3f} | "
          f"{f(r['speedup_vs_f32'])}x | {r['t2m_window_ms']:.0f} | {r['voc_window_ms']:.0f} | "
          f"{'identical' if r['mel_snr_db'] is None and r['type_t2m'] == 'f32' and r['type_voc'] != 'f32' else f(r['mel_snr_db'], 1)} | {f(r['pcm_snr_db'], 1)} |")
print(f"(JSON: {out}/types.json)")
PY
