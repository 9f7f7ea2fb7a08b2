#!/usr/bin/env bash
# rtf encode-audio end to end on a tiny twin's audio encoder: real speech (flite's 8 kHz kal
# voice: resampled to 16 kHz) in 1 s frames -> 10 x 128 per frame; a 44.1 kHz stereo WAV is
# resampled and mixed down; the JSON holds every frame; `rtf inspect` knows the file; bad
# input, a kit without the encoder and bad flags exit 1 naming what is wrong.
source "$(dirname "$0")/../e2e/lib.sh"
K=$TMP/kit
expect_rc 0 'apm +audio/MiniCPM-o-4_5-audio-F16.gguf' -- twin --scale tiny --only apm --out "$K" --quiet
expect_rc 0 'pass: 1 file' -- inspect "$K"
expect_rc 0 'ok +.*audio-F16.gguf' -- inspect "$K/audio/MiniCPM-o-4_5-audio-F16.gguf"
# An older kit gains the encoder: its rtf-kit.json keeps listing the files already there.
O=$TMP/older
expect_rc 0 'total' -- twin --scale tiny --only projector,flow_extra --out "$O" --quiet
expect_rc 0 'total' -- twin --scale tiny --only apm --out "$O" --quiet
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); r=[f["role"] for f in j["files"]]; assert r==["projector","flow_extra","apm"], r' "$O/rtf-kit.json" \
  && echo "ok: --only apm into an existing kit keeps its files" || { echo "FAIL: kit merge"; fails=$((fails+1)); }
expect_rc 0 'pass: 3 file' -- inspect "$O"

if command -v flite >/dev/null; then
  flite -t "Turn left at the second light, then keep going for about a mile." -o "$TMP/speech.wav"
else
  echo "note: flite not installed, using a generated tone"
  python3 -c 'import math,struct,wave,sys
w=wave.open(sys.argv[1],"wb"); w.setnchannels(1); w.setsampwidth(2); w.setframerate(8000)
w.writeframes(b"".join(struct.pack("<h",int(8000*math.sin(2*math.pi*300*i/8000))) for i in range(8000*3+1234)))' "$TMP/speech.wav"
fi
expect_rc 0 'frame +0 .* -> 10 x 128' -- encode-audio --models "$K" --input "$TMP/speech.wav" --threads 2 --json "$TMP/enc.json"
python3 - "$TMP/enc.json" <<'PY' && echo "ok: encode-audio JSON" || { echo "FAIL: encode-audio JSON"; fails=$((fails+1)); }
import json, math, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "rtfkit.encode-audio/1", j["schema"]
assert j["input"]["sample_rate"] == 8000 and j["input"]["channels"] == 1, j["input"]
fr = j["frames"]
assert len(fr) == math.ceil(j["input"]["seconds"] - 1e-9), (len(fr), j["input"]["seconds"])
for i, f in enumerate(fr[:-1]):
    assert f["n_rows"] == 10 and f["n_embd"] == 128 and f["n_tokens"] == 50, f
    assert f["n_past"] == 50 * i and f["encode_ms"] > 0 and f["embedding_rms"] > 0, f
assert 1 <= fr[-1]["n_rows"] <= 10, fr[-1]
s = j["summary"]
assert s["valid"] and s["non_finite"] == 0 and s["n_rows"] == sum(f["n_rows"] for f in fr), s
assert s["median_encode_ms"] > 0 and s["rtf"] > 0, s
PY

# 44.1 kHz stereo, 2.5 s: 3 frames, the last 0.5 s -> 5 rows
python3 -c 'import math,struct,wave,sys
w=wave.open(sys.argv[1],"wb"); w.setnchannels(2); w.setsampwidth(2); w.setframerate(44100)
w.writeframes(b"".join(struct.pack("<hh",int(9000*math.sin(2*math.pi*220*i/44100)),int(5000*math.sin(2*math.pi*550*i/44100))) for i in range(110250)))' "$TMP/stereo.wav"
"$RTF" encode-audio --models "$K" --input "$TMP/stereo.wav" --json - --embeddings "$TMP/stereo.f32" > "$TMP/stereo.json"
python3 - "$TMP/stereo.json" "$TMP/stereo.f32" <<'PY' && echo "ok: 44.1 kHz stereo resampled, embeddings written" || { echo "FAIL: 44.1 kHz stereo"; fails=$((fails+1)); }
import json, os, sys
j = json.load(open(sys.argv[1]))
assert j["input"]["sample_rate"] == 44100 and j["input"]["channels"] == 2, j["input"]
assert abs(j["input"]["seconds"] - 2.5) < 0.01, j["input"]
assert [f["n_rows"] for f in j["frames"]] == [10, 10, 5], [f["n_rows"] for f in j["frames"]]
assert j["embeddings"]["shape"] == [25, 128] and os.path.getsize(sys.argv[2]) == 25 * 128 * 4, j["embeddings"]
PY
expect_rc 0 'attends 0 past tokens' -- encode-audio --models "$K" --input "$TMP/stereo.wav" --no-streaming --frame-ms 500

# errors: exit 1, naming the file / flag
expect_rc 1 'missing.wav: no such file' -- encode-audio --models "$K" --input "$TMP/missing.wav"
echo "not audio" > "$TMP/text.wav"
expect_rc 1 'text.wav' -- encode-audio --models "$K" --input "$TMP/text.wav"
mkdir -p "$TMP/empty-kit"
expect_rc 1 'no audio encoder.*rtf twin --only apm' -- encode-audio --models "$TMP/empty-kit" --input "$TMP/speech.wav"
expect_rc 1 'frame-ms' -- encode-audio --models "$K" --input "$TMP/speech.wav" --frame-ms 50
expect_rc 1 'threads' -- encode-audio --models "$K" --input "$TMP/speech.wav" --threads -1
expect_rc 1 'required' -- encode-audio --input "$TMP/speech.wav"
expect_rc 1 'embeddings' -- encode-audio --models "$K" --input "$TMP/speech.wav" --embeddings "$TMP/no-dir/x.f32"
finish
