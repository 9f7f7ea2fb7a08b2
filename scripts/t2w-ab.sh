#!/usr/bin/env bash
# Interleaved A/B of two rtf binaries on Token2Wav (issue 13's workload): OLD NEW OLD NEW ...,
# RUNS each, medians of RTF and of the per-window token2mel / vocoder ms, peak RSS, and the
# PCM SNR of NEW's output against OLD's (same tokens, same settings: how far NEW's numerics
# moved). Every figure but the SNR is a timing: run it on an idle machine (`uptime`) or say
# that the machine was loaded.
#
#   scripts/t2w-ab.sh OLD_BIN NEW_BIN [KIT] [OUT]   # KIT default: the golden Token2Wav twin
#
# Workload: the golden tokens three times over (282 codes, 12 windows), --t2w-lead-silence 0,
# 2 threads for token2mel and the vocoder, f32. Environment: RUNS (3), EXTRA (more rtf t2w
# flags for both), OLD_ENV / NEW_ENV (environment assignments for one side, e.g.
# NEW_ENV=RTF_T2W_PACKED=0 to A/B one binary against itself).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 2 ]] || { sed -n '2,13p' "$0" >&2; exit 2; }
OLD=$1 NEW=$2
KIT=${3:-$root/.cache/t2w-golden-twin}
OUT=${4:-$root/out/t2w-ab}
RUNS=${RUNS:-3}
shared=${RTF_SHARED_DIR:-$root/../shared}
for b in "$OLD" "$NEW"; do [[ -x $b ]] || { echo "t2w-ab: no rtf binary at $b" >&2; exit 2; }; done
[[ -d $KIT ]] || { echo "t2w-ab: no kit at $KIT (scripts/golden-twins.sh makes the golden twin)" >&2; exit 2; }
mkdir -p "$OUT"
tok=$OUT/tokens.txt
for _ in 1 2 3; do cat "$shared/golden/minicpmo45-t2w/tokens.txt"; echo; done >"$tok"
common=(t2w --models "$KIT" --tokens "$tok" --t2w-lead-silence 0 --t2w-threads-t2m 2 --t2w-threads-voc 2 --no-fidelity)
# shellcheck disable=SC2206
extra=(${EXTRA:-})
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/load.txt"
for i in $(seq 1 "$RUNS"); do
  for side in old new; do
    if [[ $side == old ]]; then bin=$OLD envs=${OLD_ENV:-}; else bin=$NEW envs=${NEW_ENV:-}; fi
    echo "run $i/$RUNS: $side"
    # shellcheck disable=SC2086
    env $envs /usr/bin/time -f '%M' -o "$OUT/rss-$side-$i.txt" "$bin" "${common[@]}" "${extra[@]}" \
      -o "$OUT/$side-$i.wav" --json "$OUT/$side-$i.json" >/dev/null
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt"
/usr/bin/python3 - "$OUT" "$RUNS" <<'PY'
import json, math, statistics, sys, wave, array
out, runs = sys.argv[1], int(sys.argv[2])
def pcm(path):
    with wave.open(path) as w:
        a = array.array("h", w.readframes(w.getnframes()))
    return a
def snr(ref, x):
    n = min(len(ref), len(x))
    s = sum(float(v) * v for v in ref[:n]); e = sum((float(a) - b) ** 2 for a, b in zip(ref[:n], x[:n]))
    return math.inf if e == 0 else 10 * math.log10(s / e)
res = {}
for side in ("old", "new"):
    rs = [json.load(open(f"{out}/{side}-{i}.json")) for i in range(1, runs + 1)]
    res[side] = {
        "rtf": [r["rtf"] for r in rs],
        "t2m_ms": [statistics.median([w["t2m"]["total_ms"] for w in r["windows"]]) for r in rs],
        "voc_ms": [statistics.median([w["voc"]["total_ms"] for w in r["windows"]]) for r in rs],
        "rss_mib": [int(open(f"{out}/rss-{side}-{i}.txt").read().split()[-1]) / 1024 for i in range(1, runs + 1)],
    }
s = snr(pcm(f"{out}/old-1.wav"), pcm(f"{out}/new-1.wav"))
same = all(pcm(f"{out}/new-1.wav") == pcm(f"{out}/new-{i}.wav") for i in range(2, runs + 1))
json.dump({"schema": "rtfkit.t2w-ab/1", "runs": runs, "sides": res, "pcm_snr_new_vs_old_db": s,
           "new_runs_identical": same}, open(f"{out}/ab.json", "w"), indent=1)
print("| metric | old runs | new runs | old median | new median | new/old |")
print("|---|---|---|---:|---:|---:|")
for key, name, p in (("rtf", "RTF", 3), ("t2m_ms", "token2mel ms/window", 0), ("voc_ms", "vocoder ms/window", 0),
                     ("rss_mib", "peak RSS MiB", 0)):
    o, n = res["old"][key], res["new"][key]
    mo, mn = statistics.median(o), statistics.median(n)
    print(f"| {name} | {', '.join(f'{x:.{p}f}' for x in o)} | {', '.join(f'{x:.{p}f}' for x in n)} | {mo:.{p}f} | {mn:.{p}f} | {mn / mo:.3f} |")
print(f"PCM SNR new vs old: {s:.1f} dB; new runs bit-identical to each other: {same}")
print(f"(JSON: {out}/ab.json)")
PY
