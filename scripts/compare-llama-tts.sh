#!/usr/bin/env bash
# Our PCM against llama.cpp's own llama-tts on the same kit, text and seed (issue 35), for a Pocket
# TTS or a Qwen3-TTS kit (told by its files): both run the pinned tree's kernels; llama-tts drives
# libmtmd's helper pipeline, rtf its own generator and decoder. Prints the samples compared, the
# largest difference in 16-bit steps, the SNR, and whether every difference is the WAV writers'
# float -> int16 conversion (llama-tts truncates, rtf rounds) and nothing else. Exit 1 when the
# lengths differ or the SNR is under 60 dB.
#   Pocket TTS: 8-frame PCM chunks on both sides (as the helper decodes).
#   Qwen3-TTS:  both sample code 0 with llama-tts's default chain and seed, and the code predictor
#               with its top-k / top-p; a twin's talker rarely samples EOS, so FRAMES caps both
#               (llama-tts -n, rtf --max-audio-s).
#
#   scripts/fetch-llama.sh --tts          # once: builds .deps/llama.cpp-<tag>-tts/bin/llama-tts
#   scripts/compare-llama-tts.sh KIT ["text to speak"] [SEED] [FRAMES (qwen3-tts; default 50)]
#   SPEAKER=voice.wav scripts/compare-llama-tts.sh KIT ...   # both clone the same reference
#   KEEP_TMP=DIR: keep both WAVs and llama-tts's log in DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=llama-cpp.lock
source "$root/scripts/llama-cpp.lock"
kit=${1:?usage: compare-llama-tts.sh KIT [TEXT] [SEED]}
text=${2:-"Real time means the listener never waits."}
seed=${3:-42}
tts=${RTF_LLAMA_TTS:-${RTF_DEPS_DIR:-$root/.deps}/llama.cpp-$LLAMA_TAG-tts/bin/llama-tts}
rtf=${RTF:-$root/build/bin/rtf}
[[ -x $tts ]] || { echo "no llama-tts at $tts: run scripts/fetch-llama.sh --tts first" >&2; exit 1; }
tmp=${KEEP_TMP:-$(mktemp -d)}; [[ -n ${KEEP_TMP:-} ]] || trap 'rm -rf "$tmp"' EXIT
frames=${4:-50}
spk_tts=() spk_rtf=()
if [[ -n ${SPEAKER:-} ]]; then spk_tts=(--tts-speaker-file "$SPEAKER"); spk_rtf=(--speaker-file "$SPEAKER"); fi
if [[ -f $kit/qwen3-tts.gguf ]]; then
  "$tts" -m "$kit/qwen3-tts.gguf" -mm "$kit/mmproj-qwen3-tts.gguf" -p "$text" -s "$seed" -n "$frames" -t "$(nproc)" "${spk_tts[@]}" \
    -o "$tmp/llama-tts.wav" >"$tmp/llama-tts.log" 2>&1 || { tail -20 "$tmp/llama-tts.log" >&2; exit 1; }
  "$rtf" speak --models "$kit" --text "$text" --seed "$seed" "${spk_rtf[@]}" --max-audio-s "$(awk "BEGIN{print $frames * 0.08}")" \
    -o "$tmp/rtf.wav" -q
else
  "$tts" -m "$kit/pocket-tts.gguf" -mm "$kit/mmproj-pocket-tts.gguf" -p "$text" -s "$seed" -t "$(nproc)" "${spk_tts[@]}" \
    -o "$tmp/llama-tts.wav" >"$tmp/llama-tts.log" 2>&1 || { tail -20 "$tmp/llama-tts.log" >&2; exit 1; }
  "$rtf" speak --models "$kit" --text "$text" --seed "$seed" "${spk_rtf[@]}" --family-first-frames 8 --family-frames 8 \
    -o "$tmp/rtf.wav" -q
fi
/usr/bin/python3 - "$tmp/llama-tts.wav" "$tmp/rtf.wav" <<'PY'
import sys, wave
import numpy as np
def read(p):
    w = wave.open(p)
    assert w.getframerate() == 24000 and w.getnchannels() == 1 and w.getsampwidth() == 2, p
    return np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float64)
a, b = read(sys.argv[1]), read(sys.argv[2])
print(f"llama-tts {len(a)} samples, rtf {len(b)} samples")
n = min(len(a), len(b))
d = np.abs(a[:n] - b[:n])
snr = 10 * np.log10(np.sum(a[:n] ** 2) / max(np.sum((a[:n] - b[:n]) ** 2), 1e-30))
print(f"max |difference| {int(d.max()) if n else 0} (16-bit steps), samples that differ {int((d > 0).sum())}, SNR {snr:.1f} dB")
# llama-tts writes trunc(x * 32767), rtf lrint(x * 32767): from the same float x they differ by at most
# one step, and only where rounding moved away from zero. Every difference of that kind and no other
# means the two float streams are the same to within that conversion.
diff = b[:n] - a[:n]
conv_only = bool(n) and d.max() <= 1 and bool(np.all((diff == 0) | (np.sign(diff) == np.sign(b[:n]))))
print("differences are the 16-bit conversion's only (llama-tts truncates, rtf rounds):", "yes" if conv_only else "NO")
sys.exit(0 if len(a) == len(b) and snr >= 60 else 1)
PY
