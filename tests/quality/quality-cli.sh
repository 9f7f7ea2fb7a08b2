#!/usr/bin/env bash
# `rtf quality` end to end: real speech from flite passes (exit 0), broken audio and token
# streams fail with the reason named (exit 2), bad use exits 1 naming the flag or file.
source "$(dirname "$0")/../e2e/lib.sh"
command -v flite >/dev/null || { echo "FAIL: flite is not installed (Debian package flite)"; exit 1; }

S="we are going to the market to buy some fresh vegetables"
flite -voice slt -t "$S" -o "$TMP/slt.wav"
flite -voice kal16 -t "$S" -o "$TMP/kal.wav"
flite -voice slt -t "can you tell me how to get to the train station" -o "$TMP/other.wav"
# Odd files and broken signals, written with python's standard library only.
python3 - "$TMP" <<'PY'
import math, random, struct, sys, wave
d = sys.argv[1]
def write(name, samples, rate=24000, width=2, channels=1):
    with wave.open(f"{d}/{name}", "wb") as w:
        w.setnchannels(channels); w.setsampwidth(width); w.setframerate(rate)
        if width == 1:
            w.writeframes(bytes(int(128 + 127 * max(-1, min(1, s))) for s in samples))
        else:
            w.writeframes(b"".join(struct.pack("<h", int(32767 * max(-1, min(1, s)))) for s in samples))
random.seed(1)
write("noise.wav", [random.uniform(-0.3, 0.3) for _ in range(3 * 24000)])
write("silence.wav", [0.0] * (3 * 24000))
write("square.wav", [max(-1, min(1, 10 * math.sin(2 * math.pi * 220 * i / 24000))) for i in range(2 * 24000)])
write("empty.wav", [])
write("u8.wav", [0.4 * math.sin(2 * math.pi * 200 * i / 8000) for i in range(8000)], rate=8000, width=1)
# A float WAV with one NaN (IEEE float, format tag 3), by hand.
n = 24000
data = b"".join(struct.pack("<f", 0.3 * math.sin(2 * math.pi * 150 * i / 24000) if i != 500 else float("nan")) for i in range(n))
hdr = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 3, 1, 24000, 96000, 4, 32) + b"data" + struct.pack("<I", len(data))
open(f"{d}/nan.wav", "wb").write(hdr + data)
open(f"{d}/text.wav", "w").write("not audio\n")
open(f"{d}/loop.tok", "w").write(" ".join(str(random.randrange(6561)) for _ in range(100)) + " " + "17 256 1024 33 " * 30)
open(f"{d}/ok.tok", "w").write(" ".join(str(random.randrange(6561)) for _ in range(150)) + " 6561\n")
PY
# 192 kHz stereo copy of the speech (linear interpolation; right channel at half level).
python3 - "$TMP" <<'PY'
import struct, sys, wave
d = sys.argv[1]
with wave.open(f"{d}/slt.wav") as w:
    x = struct.unpack(f"<{w.getnframes()}h", w.readframes(w.getnframes()))
out = bytearray()
for i in range(len(x) - 1):
    for k in range(12):
        v = int(x[i] + (x[i + 1] - x[i]) * k / 12)
        out += struct.pack("<hh", v, v // 2)
with wave.open(f"{d}/hi.wav", "wb") as w:
    w.setnchannels(2); w.setsampwidth(2); w.setframerate(192000); w.writeframes(bytes(out))
PY
head -c 30 "$TMP/slt.wav" > "$TMP/truncated.wav"            # header cut: unreadable
head -c $((44 + 2 * 16000)) "$TMP/slt.wav" > "$TMP/cut.wav"  # data cut after 1 s: the samples present

# Real speech passes, with the ASR gate and chunk boundaries.
expect_rc 0 'verdict: PASS' -- quality "$TMP/slt.wav" --text "$S" --chunk-ms 1000
expect_rc 0 'heard: "we are going to the market' -- quality "$TMP/kal.wav" --text "$S"
# Same file as its own baseline (a bit-identical rerun) passes, incl. the WER red line.
expect_rc 0 'PASS  wer_increase_pp' -- quality "$TMP/slt.wav" --baseline "$TMP/slt.wav" --text "$S"
# Another utterance as the baseline fails the spectral distance.
expect_rc 2 'FAIL  log_mel_distance_db' -- quality "$TMP/slt.wav" --baseline "$TMP/other.wav"
# Wrong reference text: unintelligible against it.
expect_rc 2 'FAIL  wer_pct' -- quality "$TMP/slt.wav" --text "the birch canoe slid on the smooth planks"
# Broken signals fail with the reason named.
expect_rc 2 'FAIL  flatness.*noise-like' -- quality "$TMP/noise.wav"
expect_rc 2 'FAIL  rms_dbfs.*silent' -- quality "$TMP/silence.wav"
expect_rc 2 'FAIL  clip_ratio.*clipped' -- quality "$TMP/square.wav"
expect_rc 2 'FAIL  nonfinite.*1 NaN' -- quality "$TMP/nan.wav"
expect_rc 2 'FAIL  duration_ms.*no samples' -- quality "$TMP/empty.wav"
# Odd but valid files are handled.
expect_rc 0 '8 bit' -- quality "$TMP/u8.wav" --no-speech
expect_rc 0 '16000 Hz, 1 ch, 1 s' -- quality "$TMP/cut.wav"
expect_rc 0 'heard: "we are going to the market' -- quality "$TMP/hi.wav" --text "$S"
# Token streams.
expect_rc 0 'verdict: PASS' -- quality --tokens "$TMP/ok.tok" --vocab 6562 --eos 6561 --limit 500
expect_rc 2 'FAIL  token_loop.*4-token unit' -- quality --tokens "$TMP/loop.tok" --vocab 6562 --eos 6561 --limit 220
expect_rc 2 'FAIL  token_ids' -- quality --tokens "$TMP/ok.tok" --baseline-tokens "$TMP/loop.tok" --vocab 6562
# JSON carries every check.
expect_rc 0 '' -- quality "$TMP/slt.wav" --text "$S" --json "$TMP/q.json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["passed"] and j["schema"]=="rtf.quality/1"; assert len(j["audio"]["checks"])==11; i=j["intelligibility"]; assert i["wer_pct"]<=35 and i["passed"]; c=i["checks"][0]; assert c["name"]=="wer_pct" and c["status"]=="pass" and c["value"]==i["wer_pct"] and c["threshold"]>0, c' "$TMP/q.json" \
  && echo "ok: --json parses" || { echo "FAIL: --json content"; fails=$((fails+1)); }
"$RTF" quality "$TMP/slt.wav" --json - 2>/dev/null | python3 -c 'import json,sys; assert json.load(sys.stdin)["passed"]' \
  && echo "ok: --json - is clean JSON on stdout" || { echo "FAIL: --json -"; fails=$((fails+1)); }
# Thresholds can be moved; bad ones are usage errors naming the key.
expect_rc 2 'FAIL  rms_dbfs' -- quality "$TMP/slt.wav" --threshold min_rms_dbfs=-10,max_rms_dbfs=-3
expect_rc 1 'no_such_key' -- quality "$TMP/slt.wav" --threshold no_such_key=1
expect_rc 1 'max_clip_ratio' -- quality "$TMP/slt.wav" --threshold max_clip_ratio=5
# Bad input files and flags: exit 1 with the file named.
expect_rc 1 'missing.wav' -- quality "$TMP/missing.wav"
expect_rc 1 'text.wav' -- quality "$TMP/text.wav"
expect_rc 1 'truncated.wav' -- quality "$TMP/truncated.wav"
expect_rc 1 'needs an audio FILE' -- quality
expect_rc 1 '--vocab' -- quality --tokens "$TMP/ok.tok"
expect_rc 1 'asr-model|not found' -- quality "$TMP/slt.wav" --text "$S" --asr-model "$TMP/nowhere"
finish
