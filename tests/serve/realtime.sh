#!/usr/bin/env bash
# rtf serve's duplex sessions (/v1/realtime) end to end on a tiny twin kit, 127.0.0.1 only:
# /health names the WebSocket, GET /v1/realtime on the HTTP port answers 426 with its URL, an
# independent client (Python's standard library, not websocketpp) completes the RFC 6455
# handshake and reads session.created, and rtf load --duplex runs sessions from a recording
# in real time: one session's timeline is judged by the five checks (pass or fail is this
# machine's speed; the JSON is checked exactly), two sessions on one slot give one refusal
# (429), an Opus reply decodes with opusdec to the samples announced, and bad flags name the
# flag. The server is killed at exit whatever happens.
source "$(dirname "$0")/../e2e/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)  # ws_stdlib.py: the independent client
KIT=$TMP/kit
"$RTF" twin --scale tiny --out "$KIT" >/dev/null 2>&1 || { echo "FAIL: twin"; exit 1; }
if command -v flite >/dev/null; then
  flite -voice slt -t "Could you tell me the way to the station, and how long it takes to walk there?" -o "$TMP/speech.wav"
else
  python3 -c 'import math,struct,wave,sys
w=wave.open(sys.argv[1],"wb"); w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
w.writeframes(b"".join(struct.pack("<h",int(8000*math.sin(2*math.pi*300*i/16000))) for i in range(16000*5)))' "$TMP/speech.wav"
fi
SRV_PID=
trap '[[ -n "$SRV_PID" ]] && kill -9 "$SRV_PID" 2>/dev/null; rm -rf "$TMP"' EXIT

expect_rc 1 'realtime-sessions' -- serve --models "$KIT" --realtime-sessions many
expect_rc 1 'realtime-idle-s' -- serve --models "$KIT" --realtime-idle-s 0
expect_rc 1 'input' -- load --duplex --url http://127.0.0.1:9
expect_rc 1 'chunk-ms' -- load --duplex --url http://127.0.0.1:9 --input "$TMP/speech.wav" --chunk-ms 1

"$RTF" serve --models "$KIT" --port 0 --port-file "$TMP/port" --realtime-port 0 >"$TMP/serve.log" 2>&1 &
SRV_PID=$!
for _ in $(seq 1 240); do [[ -s "$TMP/port" ]] && break; kill -0 $SRV_PID 2>/dev/null || break; sleep 0.25; done
[[ -s "$TMP/port" ]] || { echo "FAIL: server did not start"; cat "$TMP/serve.log"; exit 1; }
P=$(cat "$TMP/port")
URL=http://127.0.0.1:$P
grep -q 'duplex: ws://127.0.0.1:[0-9]*/v1/realtime' "$TMP/serve.log" && echo "ok: banner names the WebSocket" \
  || { echo "FAIL: banner"; cat "$TMP/serve.log"; fails=$((fails+1)); }

RP=$(curl -s -m 10 "$URL/health" | python3 -c 'import json,sys; r=json.load(sys.stdin)["realtime"]; assert r["path"]=="/v1/realtime" and r["max_sessions"]==1, r; print(r["port"])') \
  && echo "ok: /health names the realtime port $RP" || { echo "FAIL: /health realtime"; fails=$((fails+1)); }
code=$(curl -s -m 10 -o "$TMP/426.json" -w '%{http_code}' "$URL/v1/realtime")
[[ $code == 426 ]] && grep -q "\"websocket_url\":\"ws://127.0.0.1:$RP/v1/realtime\"" "$TMP/426.json" \
  && echo "ok: GET /v1/realtime -> 426 with the URL" || { echo "FAIL: GET /v1/realtime -> $code"; cat "$TMP/426.json"; fails=$((fails+1)); }

# An independent client (ws_stdlib.py: the handshake by hand, RFC 6455 4.2.2's Sec-WebSocket-Accept
# checked), then the first frame (whole, text, unmasked: session.created), then a close frame.
timeout 20 python3 - "$RP" "$HERE" <<'PY' && echo "ok: RFC 6455 handshake + session.created (independent client)" || { echo "FAIL: independent client"; fails=$((fails+1)); }
import json, sys
sys.dont_write_bytecode = True; sys.path.insert(0, sys.argv[2])
from ws_stdlib import Conn
c = Conn(int(sys.argv[1]), timeout=10)
op, m = c.recv()
assert op == 1, op  # text
ev = json.loads(m)
assert ev["type"] == "session.created" and ev["session"]["input_audio_format"]["rate"] == 16000, ev
c.close(1000)
PY

# One session from the recording, paced in real time, with a forced reply (frames 3-5).
"$RTF" load --duplex --url "$URL" --input "$TMP/speech.wav" --frames 7 --speak-frames 3-5 --sessions 1 \
  --json "$TMP/ld.json" >"$TMP/ld.out" 2>&1
rc=$?
if [[ $rc -eq 0 || $rc -eq 2 ]] && grep -q 'sessions passing all five checks: [01]/1' "$TMP/ld.out"; then
  echo "ok: rtf load --duplex -> $rc"
else
  echo "FAIL: rtf load --duplex -> $rc"; cat "$TMP/ld.out"; fails=$((fails+1))
fi
python3 - "$TMP/ld.json" "$rc" <<'PY' && echo "ok: load-duplex JSON" || { echo "FAIL: load-duplex JSON"; fails=$((fails+1)); }
import json, sys
j = json.load(open(sys.argv[1])); rc = int(sys.argv[2])
assert j["schema"] == "rtfkit.load-duplex/1" and j["opened"] == 1 and j["ended"] == 1, j["schema"]
s = j["sessions"][0]
assert s["status"] == 101 and s["ended"] and s["frames_sent"] == 7 and s["frame_events"] == 7, s
assert s["audio_deltas"] > 0 and s["audio_s"] > 0 and len(s["client_first_audio_ms"]) == 1, s
t = s["timeline"]
assert t["schema"] == "rtfkit.duplex/1" and len(t["frames"]) == 7, t["schema"]
assert [f["is_speak"] for f in t["frames"]] == [False] * 3 + [True] * 3 + [False], [f["is_speak"] for f in t["frames"]]
# frame i is pushed once its last sample arrived, about (i + 1) s after the session started
for i, f in enumerate(t["frames"]):
    assert f["t_push_ms"] >= 1000 * (i + 1) - 150, (i, f["t_push_ms"])
a = j["analysis"][0]
assert a["valid"] and len(a["checks"]) == 5 and a["verdict"] == {0: "pass", 2: "fail"}[rc], a["verdict"]
assert j["summary"]["passed"] == (1 if rc == 0 else 0), j["summary"]
PY

# Two sessions on a server of one: one is refused at the handshake (429), the other runs.
"$RTF" load --duplex --url "$URL" --input "$TMP/speech.wav" --frames 3 --sessions 2 --json "$TMP/ld2.json" -q >"$TMP/ld2.out" 2>&1
python3 - "$TMP/ld2.json" <<'PY' && echo "ok: a second session is refused with 429" || { echo "FAIL: refusal"; cat "$TMP/ld2.out"; fails=$((fails+1)); }
import json, sys
j = json.load(open(sys.argv[1]))
st = sorted(s["status"] for s in j["sessions"])
assert st == [101, 429] and j["refused"] == 1 and j["ended"] == 1, st
PY

# An Opus reply, decoded by an independent decoder: the stdlib client above asks for
# output_audio_format opus, streams the recording paced in 100 ms pieces with a forced reply
# (frames 3-4), collects the reply's response.audio.delta bytes, and opusdec (opus-tools)
# decodes them: one Ogg stream, as many samples as response.done's audio_s says (24 kHz).
timeout 90 python3 - "$RP" "$TMP/speech.wav" "$TMP/reply.opus" "$TMP/reply.wav" "$HERE" <<'PY' && echo "ok: a realtime Opus reply decodes (opusdec) to the samples announced" || { echo "FAIL: realtime Opus reply"; fails=$((fails+1)); }
import base64, json, math, struct, subprocess, sys, time, wave
port, wav_in, opus_path, wav_out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
sys.dont_write_bytecode = True; sys.path.insert(0, sys.argv[5])
from ws_stdlib import Conn
c = Conn(port, busy_retries=40)  # the previous session's slot frees within a moment
recv, send = c.recv, c.send
op, m = recv(); assert json.loads(m)["type"] == "session.created", m
send(1, json.dumps({"type": "session.update", "session": {"speak_frames": "3-4", "output_audio_format": "opus"}}).encode())
op, m = recv(); ev = json.loads(m); assert ev["type"] == "session.updated" and ev["session"]["output_audio_format"] == "opus", ev
w = wave.open(wav_in)
pcm = w.readframes(w.getnframes()) if w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2 else b""
want = 16000 * 2 * 6  # 6 frames of 1 s
pcm = (pcm + b"".join(struct.pack("<h", int(6000 * math.sin(2 * math.pi * 220 * i / 16000))) for i in range(16000 * 6)))[:want]
t0 = time.monotonic()
for k in range(0, want, 3200):
    send(2, pcm[k:k + 3200]); time.sleep(max(0.0, t0 + (k + 3200) / 32000 - time.monotonic()))
send(1, b'{"type": "session.finish"}')
data, samples, done = b"", 0, False
while True:
    op, m = recv()
    if op == 8: break
    if op != 1: continue
    ev = json.loads(m)
    if ev["type"] == "response.audio.delta":
        data += base64.b64decode(ev["delta"])
    elif ev["type"] == "response.done":
        done = ev["response"]["status"]; samples = round(ev["response"]["audio_s"] * 24000)
    elif ev["type"] == "session.ended": break
c.s.close()
assert done == "completed" and samples > 0 and data[:4] == b"OggS" and data.count(b"OpusHead") == 1, (done, samples, data[:8])
open(opus_path, "wb").write(data)
subprocess.run(["opusdec", "--quiet", "--rate", "24000", opus_path, wav_out], check=True, capture_output=True, timeout=30)
n = wave.open(wav_out).getnframes()
assert abs(n - samples) <= 960, (n, samples)  # Opus codes whole 20 ms frames
print("opus reply: %d bytes, %d samples in response.done, %d decoded" % (len(data), samples, n))
PY

stop_server "$SRV_PID" "the server"; SRV_PID=
finish
