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

# An independent client: the handshake by hand (RFC 6455 4.2.2: Sec-WebSocket-Accept), then
# the first frame (text, unmasked, session.created), then a close frame.
timeout 20 python3 - "$RP" <<'PY' && echo "ok: RFC 6455 handshake + session.created (independent client)" || { echo "FAIL: independent client"; fails=$((fails+1)); }
import base64, hashlib, json, os, socket, struct, sys
port = int(sys.argv[1])
key = base64.b64encode(os.urandom(16)).decode()
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall((f"GET /v1/realtime HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
buf = b""
while b"\r\n\r\n" not in buf: buf += s.recv(4096)
head, rest = buf.split(b"\r\n\r\n", 1)
lines = head.decode().split("\r\n")
assert lines[0].startswith("HTTP/1.1 101"), lines[0]
hdr = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:]}
want = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
assert hdr["sec-websocket-accept"] == want, (hdr, want)
def need(n):
    global rest
    while len(rest) < n: rest += s.recv(65536)
    out, rest = rest[:n], rest[n:]; return out
b0, b1 = need(2)
assert b0 == 0x81 and not (b1 & 0x80), (b0, b1)  # FIN + text, server frames unmasked
n = b1 & 0x7F
if n == 126: n = struct.unpack(">H", need(2))[0]
elif n == 127: n = struct.unpack(">Q", need(8))[0]
ev = json.loads(need(n))
assert ev["type"] == "session.created" and ev["session"]["input_audio_format"]["rate"] == 16000, ev
mask = os.urandom(4); payload = struct.pack(">H", 1000)
s.sendall(bytes([0x88, 0x80 | len(payload)]) + mask + bytes(p ^ mask[i % 4] for i, p in enumerate(payload)))
s.close()
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
timeout 90 python3 - "$RP" "$TMP/speech.wav" "$TMP/reply.opus" "$TMP/reply.wav" <<'PY' && echo "ok: a realtime Opus reply decodes (opusdec) to the samples announced" || { echo "FAIL: realtime Opus reply"; fails=$((fails+1)); }
import base64, hashlib, json, math, os, socket, struct, subprocess, sys, time, wave
port, wav_in, opus_path, wav_out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
def connect():
    for _ in range(40):  # the previous session's slot frees within a moment
        key = base64.b64encode(os.urandom(16)).decode()
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall((f"GET /v1/realtime HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        buf = b""
        while b"\r\n\r\n" not in buf: buf += s.recv(4096)
        head, rest = buf.split(b"\r\n\r\n", 1)
        if head.startswith(b"HTTP/1.1 101"): return s, rest
        assert head.startswith(b"HTTP/1.1 429"), head
        s.close(); time.sleep(0.25)
    raise SystemExit("no session slot")
s, rest = connect()
def need(n):
    global rest
    while len(rest) < n:
        chunk = s.recv(65536)
        if not chunk: raise EOFError
        rest += chunk
    out, rest = rest[:n], rest[n:]; return out
def recv():
    b0, b1 = need(2); n = b1 & 0x7F
    if n == 126: n = struct.unpack(">H", need(2))[0]
    elif n == 127: n = struct.unpack(">Q", need(8))[0]
    return b0 & 0x0F, need(n)
def send(op, payload):
    mask = os.urandom(4); n = len(payload)
    hdr = bytes([0x80 | op]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else bytes([0x80 | 127]) + struct.pack(">Q", n))
    s.sendall(hdr + mask + bytes(p ^ mask[i % 4] for i, p in enumerate(payload)))
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
s.close()
assert done == "completed" and samples > 0 and data[:4] == b"OggS" and data.count(b"OpusHead") == 1, (done, samples, data[:8])
open(opus_path, "wb").write(data)
subprocess.run(["opusdec", "--quiet", "--rate", "24000", opus_path, wav_out], check=True, capture_output=True, timeout=30)
n = wave.open(wav_out).getnframes()
assert abs(n - samples) <= 960, (n, samples)  # Opus codes whole 20 ms frames
print("opus reply: %d bytes, %d samples in response.done, %d decoded" % (len(data), samples, n))
PY

kill -TERM $SRV_PID; wait $SRV_PID 2>/dev/null; SRV_PID=
finish
