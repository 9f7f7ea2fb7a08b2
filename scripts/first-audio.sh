#!/usr/bin/env bash
# First audio, measured (issue 20): `rtf demo` under named settings, interleaved run by
# run (A B C A B C ...), medians of RUNS, with the breakdown of first_audio_ms per setting
# (LLM prefill, first text step, first TTS code, fill window, T2W wait, first window).
# Run it on an idle machine: every figure is a latency.
#
#   scripts/first-audio.sh [OUT]
#
# Environment:
#   RUNS      runs per setting (default 3)
#   KIT       kit directory (default: the demo's cached cpu twin kit)
#   SETTINGS  ';'-separated "name=flags" (default: the machine profile as it is, then with an
#             8-token first window, then with that window and a ramp back to 28; the profile
#             already picks the compute types for this CPU)
#   RTF       the rtf binary (default build/bin/rtf)
#   BINS      ';'-separated "name=path": the settings so named run that binary instead
#             (A/B of two builds: SETTINGS="old=;new=" BINS="old=/tmp/rtf-old")
# Writes OUT/<name>-<run>/demo.json (the demo's own results) and OUT/first-audio.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
RTF=${RTF:-$root/build/bin/rtf}
OUT=${1:-$root/out/first-audio}
RUNS=${RUNS:-3}
SETTINGS=${SETTINGS:-"auto=;first8=--t2w-first-window 8;ramp=--t2w-first-window 8 --t2w-ramp 11,15,21"}
[[ -x $RTF ]] || { echo "first-audio: no rtf binary at $RTF (./scripts/setup.sh builds it)" >&2; exit 1; }
kit=()
if [[ -n ${KIT:-} ]]; then
  [[ -d $KIT ]] || { echo "first-audio: KIT=$KIT is not a directory" >&2; exit 1; }
  kit=(--models "$KIT")
fi
IFS=';' read -r -a sets <<<"$SETTINGS"
declare -A bin_of=()
if [[ -n ${BINS:-} ]]; then
  IFS=';' read -r -a bins <<<"$BINS"
  for b in "${bins[@]}"; do
    [[ $b == *=* && -x ${b#*=} ]] || { echo "first-audio: BINS entry '$b' is not name=<an executable>" >&2; exit 1; }
    bin_of[${b%%=*}]=${b#*=}
  done
fi
names=()
for s in "${sets[@]}"; do
  [[ $s == *=* ]] || { echo "first-audio: SETTINGS entry '$s' is not name=flags" >&2; exit 1; }
  names+=("${s%%=*}")
done
mkdir -p "$OUT"
for i in $(seq 1 "$RUNS"); do
  for s in "${sets[@]}"; do
    name=${s%%=*} flags=${s#*=}
    echo "run $i/$RUNS: $name ${flags:-(defaults)}" >&2
    # shellcheck disable=SC2086  # flags are words by design
    "${bin_of[$name]:-$RTF}" demo -q --no-history "${kit[@]}" --out-dir "$OUT/$name-$i" $flags >/dev/null
  done
done
/usr/bin/python3 - "$OUT" "$RUNS" "${names[@]}" <<'PY' | tee "$OUT/first-audio.md"
import json, statistics, sys
out, runs, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
parts = ["llm_prefill_ms", "llm_first_step_ms", "tts_first_code_ms", "tts_fill_window_ms", "t2w_wait_ms", "t2w_first_window_ms"]
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")
print("| setting | first_audio_ms runs | median | gapless_start_ms runs | median | rtf runs | median | " +
      " | ".join(p[:-3].replace("_", " ") for p in parts) + " |")
print("|---|---|---:|---|---:|---|---:|" + "---:|" * len(parts))
for n in names:
    rs = [json.load(open(f"{out}/{n}-{i}/demo.json")) for i in range(1, runs + 1)]
    fa = [r["first_audio"]["first_audio_ms"] for r in rs]
    gs = [r["metrics"].get("gapless_start_ms") for r in rs]
    rtf = [r["metrics"]["rtf"] for r in rs]
    cols = [med([r["first_audio"]["parts"].get(p) for r in rs]) for p in parts]
    print(f"| {n} | {', '.join(f'{x:.0f}' for x in fa)} | {med(fa):.0f} | {', '.join(f'{x:.0f}' for x in gs if x is not None)} | "
          f"{med(gs):.0f} | {', '.join(f'{x:.3f}' for x in rtf)} | {med(rtf):.3f} | " + " | ".join(f"{c:.0f}" for c in cols) + " |")
PY
