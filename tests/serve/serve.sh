#!/usr/bin/env bash
# rtf serve + rtf load end to end on a tiny twin kit, on 127.0.0.1 only: the streamed audio
# equals rtf speak's for the same text and seed (chunked PCM, WAV, SSE of both endpoints, two
# streams of different text at once on two slots, with --batch off (the default: independent
# contexts) and with --batch on (their LLM/TTS decode steps merged; greedy there, since a seeded
# draw may flip on a last-bits difference: docs/serve.md "Batching numerics"));
# refusals name the field (400), capacity refusals carry Retry-After (429), a client that
# disconnects or stops reading cancels its stream and frees its slot, /metrics scrapes, /v1/runs/ID, rtf load
# and its reports, and SIGTERM stops the server. Every request has a timeout; the servers
# are killed at exit whatever happens. Nothing here is a timing guess: the capacity and
# hang-up checks run on a server whose utterances last 600 s of audio (a stream ends only
# when its client leaves or the server drops it), in states that are waited for and checked.
source "$(dirname "$0")/../e2e/lib.sh"
KIT=$TMP/kit
"$RTF" twin --family minicpmo45 --scale tiny --out "$KIT" >/dev/null 2>&1 || { echo "FAIL: twin"; exit 1; }
SRV_PID=
SRV2_PID=
SRV3_PID=
trap 'for p in "$SRV_PID" "$SRV2_PID" "$SRV3_PID"; do [[ -n "$p" ]] && kill -9 "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
KNOBS=(--max-audio-s 1.5 --min-audio-s 1.5 --seed 7)

# the reference: rtf speak's raw PCM for the same text and knobs
"$RTF" speak --models "$KIT" --text "Hello from the server." "${KNOBS[@]}" -q -o - >"$TMP/ref.pcm" 2>/dev/null \
  && [[ -s "$TMP/ref.pcm" ]] && echo "ok: reference pcm $(stat -c %s "$TMP/ref.pcm") bytes" || { echo "FAIL: rtf speak"; exit 1; }
"$RTF" speak --models "$KIT" --text "A second voice, other words." "${KNOBS[@]}" -q -o - >"$TMP/ref2.pcm" 2>/dev/null \
  && [[ -s "$TMP/ref2.pcm" ]] && echo "ok: second reference pcm" || { echo "FAIL: rtf speak (second text)"; exit 1; }

# bad server flags are usage errors naming the flag
expect_rc 1 'max-streams' -- serve --models "$KIT" --max-streams 0
expect_rc 1 'queue-timeout' -- serve --models "$KIT" --queue-timeout soon
expect_rc 1 'send-buffer-kb' -- serve --models "$KIT" --send-buffer-kb 1
expect_rc 1 'batch' -- serve --models "$KIT" --batch maybe
expect_rc 1 'batch-gather-ms' -- serve --models "$KIT" --batch-gather-ms 500
expect_rc 1 'slot-threads' -- serve --models "$KIT" --slot-threads lots
expect_rc 1 'models' -- serve --models "$TMP/nope"

"$RTF" serve --models "$KIT" --port 0 --port-file "$TMP/port" --max-streams 2 --max-queue 1 --queue-timeout 20s \
  --write-timeout 3 --send-buffer-kb 16 "${KNOBS[@]}" >"$TMP/serve.log" 2>&1 &
SRV_PID=$!
for _ in $(seq 1 240); do [[ -s "$TMP/port" ]] && break; kill -0 $SRV_PID 2>/dev/null || break; sleep 0.25; done
[[ -s "$TMP/port" ]] || { echo "FAIL: server did not start"; cat "$TMP/serve.log"; exit 1; }
PORT=$(cat "$TMP/port")
echo "ok: listening on 127.0.0.1:$PORT"

# Debian's python3 (numpy, for the lossy formats' SNR), as scripts/golden-twins.sh
/usr/bin/python3 - "$PORT" "$TMP/ref.pcm" "$TMP/ref2.pcm" <<'PY' || fails=$((fails+1))
import base64, http.client, json, socket, sys, threading, time
port, ref, ref2 = int(sys.argv[1]), open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
T = 60  # seconds: every request is bounded

def req(method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=T)
    c.request(method, path, body=body, headers=headers or {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r, data

def speech(**kw):
    return req("POST", "/v1/audio/speech", json.dumps(dict(dict(model="rtf", input="Hello from the server."), **kw)))

def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
    print("ok:", what)

r, d = req("GET", "/health"); h = json.loads(d)
check(r.status == 200 and h["status"] == "ok" and h["max_streams"] == 2, "health %s" % h)
import os
check(h["slot_threads"] == max(1, len(os.sched_getaffinity(0)) // 2),
      "--slot-threads auto: %d thread(s) per stage per slot on %d CPUs (the audio below still equals rtf speak's)"
      % (h["slot_threads"], len(os.sched_getaffinity(0))))

# 1. chunked PCM equals rtf speak's samples
r, pcm = speech(response_format="pcm")
check(r.status == 200 and r.getheader("Transfer-Encoding") == "chunked", "pcm streamed (chunked)")
check(pcm == ref, "streamed PCM equals rtf speak's (%d bytes)" % len(pcm))
run_id = r.getheader("X-Rtf-Run-Id")
# 1a. two streams of different text at once on the two slots (--batch off, the default:
# contexts of their own; shared Token2Wav weights): each equals rtf speak's PCM for its text
both = {}
def one(text, key):
    r, pcm = speech(response_format="pcm", input=text)
    both[key] = (r.status, pcm, r.getheader("X-Rtf-Run-Id"))
ts = [threading.Thread(target=one, args=a) for a in [("Hello from the server.", 1), ("A second voice, other words.", 2)]]
for t in ts: t.start()
for t in ts: t.join(T)
check(len(both) == 2 and both[1][:2] == (200, ref) and both[2][:2] == (200, ref2),
      "two concurrent streams of different text each equal rtf speak's PCM")
b1 = json.loads(req("GET", "/v1/runs/" + both[1][2])[1])["serve"]["batch"]
m = req("GET", "/metrics")[1].decode()
check(b1 == {"on": False} and "rtf_batch_enabled 0" in m and json.loads(req("GET", "/health")[1])["batch"] is False,
      "batch off in the run, /metrics and /health")
# 2. WAV: a streaming header, then the same samples
r, wav = speech()
check(r.status == 200 and r.getheader("Content-Type") == "audio/wav", "wav content type")
check(wav[:4] == b"RIFF" and wav[8:12] == b"WAVE" and wav[36:40] == b"data" and wav[44:] == ref, "wav = header + the same PCM")
# 2a. the encoded formats (issue 33), streamed as the audio arrives: the right type and
# container, bytes before the stream's end, and what an independent decoder (Debian's flac,
# opusdec, mpg123) makes of them: FLAC the same samples, Opus the same length, MP3 the length
# plus the encoder's delay and padding (no LAME tag in a stream to trim them); lossy SNR printed.
import subprocess, tempfile, wave
import numpy as np
ref_s = np.frombuffer(ref, dtype="<i2").astype(np.float64)

def streamed(**kw):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=T)
    c.request("POST", "/v1/audio/speech", json.dumps(dict(dict(model="rtf", input="Hello from the server."), **kw)),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    parts, t_first = [], None
    while True:
        b = r.read1(1 << 16)
        if not b: break
        if t_first is None: t_first = time.monotonic()
        parts.append(b)
    t_end = time.monotonic()
    c.close()
    return r, b"".join(parts), len(parts), (t_end - t_first) if t_first else 0.0

def snr_db(x):  # x against the reference at the best lag in [0, 4000) samples (the encoder's delay)
    n = len(ref_s)
    best = max(range(0, 4000, 1), key=lambda k: float(np.dot(x[k:k + n][:n], ref_s[:len(x[k:k + n])]))) if len(x) > n else 0
    y = x[best:best + n]
    e = ref_s[:len(y)] - y
    return 10 * np.log10(np.sum(ref_s[:len(y)] ** 2) / max(np.sum(e ** 2), 1e-9)), best

with tempfile.TemporaryDirectory() as td:
    for fmt, ctype, magic in [("flac", "audio/flac", b"fLaC"), ("opus", "audio/ogg", b"OggS"), ("mp3", "audio/mpeg", b"\xff")]:
        r, body, n_reads, spread = streamed(response_format=fmt)
        check(r.status == 200 and r.getheader("Content-Type") == ctype and body[:len(magic)] == magic,
              "%s streamed as %s (%d bytes in %d reads, the first %.2f s before the end)" % (fmt, ctype, len(body), n_reads, spread))
        check(n_reads >= 2 and spread > 0, "%s: bytes arrive before the stream ends" % fmt)
        src = os.path.join(td, "a." + fmt)
        open(src, "wb").write(body)
        if fmt == "flac":
            out = subprocess.run(["flac", "-d", "-s", "-c", "--force-raw-format", "--endian=little", "--sign=signed", src],
                                 capture_output=True, timeout=T).stdout
            check(out == ref, "flac decodes (Debian's flac) to rtf speak's samples, bit for bit (%d samples)" % (len(out) // 2))
            continue
        if fmt == "opus":
            wav_path = os.path.join(td, "o.wav")
            subprocess.run(["opusdec", "--quiet", "--rate", "24000", src, wav_path], check=True, capture_output=True, timeout=T)
            w = wave.open(wav_path)
            x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64)
            check(w.getframerate() == 24000 and len(x) == len(ref_s),
                  "opus decodes (opusdec) to the same length: %d vs %d samples" % (len(x), len(ref_s)))
        else:
            out = subprocess.run(["mpg123", "-q", "-s", src], capture_output=True, timeout=T).stdout
            x = np.frombuffer(out, dtype="<i2").astype(np.float64)
            extra = len(x) - len(ref_s)
            check(0 <= extra <= 2 * 576 + 1152,
                  "mp3 decodes (mpg123) to the length plus delay and padding: %+d samples (%.0f ms)" % (extra, extra / 24.0))
        snr, lag = snr_db(x)
        print("ok: %s SNR %.1f dB against the PCM (lag %d samples; lossy, printed, not gated)" % (fmt, snr, lag))
# 2b. voices and speed: the kit's voices are listed; two voices speak the same text differently
# (the same codes: only Token2Wav's prompt cache differs), default is rtf speak's; an unknown
# one is a 400 listing them; OpenAI's names speak with the default; speed 2 halves the samples
# (exactly: round(n / 2), pitch kept by Sonic), speed 1 is bit-identical.
r, d = req("GET", "/v1/audio/voices"); v = json.loads(d)
names = [x["name"] for x in v["voices"]]
check(r.status == 200 and names == ["default", "twin-a", "twin-b"] and "alloy" in v["openai_aliases"],
      "GET /v1/audio/voices lists %s" % names)
r, pa = speech(response_format="pcm", voice="twin-a")
r2, pb = speech(response_format="pcm", voice="twin-b")
check(r.status == 200 and r2.status == 200 and len(pa) == len(ref) == len(pb) and pa != ref and pb != ref and pa != pb,
      "voices twin-a and twin-b: the same length as default, other audio (%d bytes each)" % len(pa))
check(speech(response_format="pcm", voice="alloy")[1] == ref and speech(response_format="pcm", voice="default")[1] == ref,
      "voice alloy (OpenAI's name) and default speak rtf speak's audio; back from twin-b leaves nothing of it")
r, d = speech(voice="twin-c")
e = json.loads(d)["error"]
check(r.status == 400 and e["field"] == "voice" and "default, twin-a, twin-b" in e["message"], "unknown voice: 400 naming voice and the list")
r, d = req("GET", "/v1/audio/voices")
check([x["loaded"] for x in json.loads(d)["voices"]] == [True, True, True], "every voice loaded (the server loads them at start)")
r, p2 = speech(response_format="pcm", speed=2.0)
n0, n2 = len(ref) // 2, len(p2) // 2
check(r.status == 200 and n2 == round(n0 / 2), "speed 2.0: %d samples = %d / 2 (the duration halved)" % (n2, n0))
check(speech(response_format="pcm", speed=1.0)[1] == ref, "speed 1.0: bit-identical")
r, p4 = speech(response_format="pcm", speed=0.5, voice="twin-b")
check(r.status == 200 and len(p4) // 2 == n0 * 2, "speed 0.5 with twin-b: %d samples = %d x 2" % (len(p4) // 2, n0))
for bad in [0.2, 5, "fast"]:
    r, d = speech(speed=bad)
    check(r.status == 400 and json.loads(d)["error"]["field"] == "speed", "speed %r: 400 naming speed" % (bad,))
r, d = req("POST", "/v1/speak", json.dumps({"text": "Hello from the server.", "knobs": {"voice": "twin-a", "speed": 2},
                                             "stream_format": "audio", "response_format": "pcm"}))
check(r.status == 200 and len(d) // 2 == round(n0 / 2), "/v1/speak knobs voice and speed")
r, d = req("GET", "/v1/runs/" + r.getheader("X-Rtf-Run-Id")); res = json.loads(d)
check(res["output"]["voice"] == "twin-a" and res["output"]["speed"] == 2 and res["output"]["n_samples"] == n0
      and res["output"]["n_samples_out"] == round(n0 / 2), "the result says voice, speed and the samples before and after")
# 3. SSE of the OpenAI endpoint: deltas decode to the same PCM, a done event with usage
r, sse = speech(response_format="pcm", stream_format="sse")
check(r.getheader("Content-Type").startswith("text/event-stream"), "sse content type")
events = [json.loads(l[6:]) for l in sse.decode().split("\n") if l.startswith("data: ")]
deltas = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")
check(deltas == ref, "sse deltas decode to the same PCM (%d events)" % len(events))
check(events[-1]["type"] == "speech.audio.done" and events[-1]["usage"]["output_tokens"] > 0, "sse done event with usage")
# 3a. text timing: transcript deltas that together are the input, each before the audio that
# starts it (the samples sent before it never pass its start), starts non-decreasing, the first
# at the lead silence (3 codes x 960 samples)
def transcript(events):
    seen, before, starts, order_ok = [], 0, [], True
    for e in events:
        if e["type"] == "speech.audio.delta":
            before += len(base64.b64decode(e["audio"])) // 2
        elif e["type"] == "speech.audio.transcript.delta":
            seen.append(e["delta"]); starts.append(e["audio_start_sample"])
            order_ok = order_ok and (before <= e["audio_start_sample"] or not e["in_audio"])
    return seen, starts, order_ok
seen, starts, order_ok = transcript(events)
check("".join(seen).strip() == "Hello from the server." and order_ok and starts[0] == 3 * 960,
      "transcript deltas spell the input %r, each before the audio that starts it, the first at the lead silence" % seen)
long_text = "One two three four five six seven eight nine ten, and then eleven twelve thirteen fourteen fifteen."
r, sse2 = speech(input=long_text, response_format="pcm", stream_format="sse")
ev2 = [json.loads(l[6:]) for l in sse2.decode().split("\n") if l.startswith("data: ")]
seen, starts, order_ok = transcript(ev2)
check(len(seen) >= 2 and "".join(seen).strip() == long_text and order_ok and starts == sorted(starts),
      "a longer input: %d transcript deltas spell it, starts non-decreasing %s (%d past the 1.5 s cap: in_audio false)"
      % (len(seen), starts, sum(1 for e in ev2 if e["type"] == "speech.audio.transcript.delta" and not e["in_audio"])))
# 4. /v1/speak: SSE with a per-utterance knob and the run's result last
r, sse = req("POST", "/v1/speak", json.dumps({"text": "Hello from the server.", "knobs": {"schedule": "sequential"}}))
blocks = [b for b in sse.decode().split("\n\n") if b.strip()]
names = [b.split("\n")[0] for b in blocks]
audio = b"".join(base64.b64decode(json.loads(b.split("\n")[1][6:])["audio"]) for b in blocks if b.startswith("event: audio"))
check(r.status == 200 and names[-1] == "event: result", "speak sse ends with the result event")
res = json.loads(blocks[-1].split("\n", 1)[1][6:])
texts = [json.loads(b.split("\n")[1][6:]) for b in blocks if b.startswith("event: text")]
check("".join(t["text"] for t in texts).strip() == "Hello from the server." and texts == res["output"]["text_timing"],
      "speak sse: text events spell the input and equal the result's output.text_timing")
check(audio == ref, "speak sse audio equals rtf speak's (schedule sequential: same math)")
check(res["metrics"]["rtf"] > 0 and res["serve"]["endpoint"] == "speak" and res["config"]["pipeline"]["schedule"] == "sequential", "speak result: metrics, serve, knobs applied")
# 5. the finished run by id
r, d = req("GET", "/v1/runs/" + run_id)
check(r.status == 200 and json.loads(d)["serve"]["id"] == int(run_id), "GET /v1/runs/%s" % run_id)
r, d = req("GET", "/v1/runs/999999")
check(r.status == 404 and "error" in json.loads(d), "unknown run -> 404 JSON")
# 6. refusals: 400 naming the field, never a crash
bad = [(b"{not json", "body"), (b'{"input":"\xff\xfe"}', "body"), (b"[]", "body"), (b'{"model":"x"}', "input"),
       (b'{"input":"x","voice":"bob"}', "voice"), (b'{"input":"x","response_format":"aac"}', "response_format"),
       (b'{"input":"x","response_format":"opus","stream_format":"sse"}', "response_format"),
       (b'{"input":"x","stream_format":"sse"}', "response_format"), (b'{"input":"x","extra":1}', "extra"),
       (b'{"input":"' + b"a" * 5000 + b'"}', "input"), (b"", "body")]
for body, field in bad:
    r, d = req("POST", "/v1/audio/speech", body)
    e = json.loads(d)["error"]
    check(r.status == 400 and e["field"] == field, "400 names %s: %s" % (field, e["message"][:70]))
import random
rng = random.Random(18)
for i in range(150):  # fuzzed bodies: random bytes, and mutations of a valid body
    if i % 2:
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    else:
        b = bytearray(json.dumps({"input": "x", "voice": "alloy", "response_format": "pcm"}).encode())
        for _ in range(rng.randrange(1, 6)): b[rng.randrange(len(b))] = rng.randrange(256)
        body = bytes(b)
    r, d = req("POST", "/v1/audio/speech" if i % 3 else "/v1/speak", body)
    if r.status == 200: continue  # a mutation that stayed a valid request
    if r.status != 400 or "error" not in json.loads(d):
        check(False, "fuzz body %d %r -> %d %r" % (i, body[:60], r.status, d[:100]))
check(json.loads(req("GET", "/health")[1])["status"] == "ok", "150 fuzzed bodies: every one 400 or served, server alive")
r, d = req("POST", "/v1/speak", json.dumps({"text": "x", "knobs": {"seed": 9}}))
check(r.status == 400 and json.loads(d)["error"]["field"] == "knobs.seed", "a load-time knob is refused per request")
r, d = req("POST", "/v1/audio/speech", b"{" + b" " * (2 << 20) + b"}")
check(r.status == 413, "a 2 MiB body -> 413")
# 6a. POSTs without a body as `curl -X POST URL` sends them (neither Content-Length nor
# Transfer-Encoding; http.client's request() would add "Content-Length: 0"): answered at once,
# not after httplib's read of a body times out (--read-timeout, 10 s): the route that takes no
# body (cancel) as with an empty one (docs/serve.md's example, `curl -X POST URL/v1/runs/7/cancel`:
# the 404 of an id not running, the 409 of a finished one),
# a route that needs a body 411 saying so, an unknown route 404. And what httplib refuses
# itself (a request line it cannot parse) is a sentence, never a bare "HTTP 400".
def bodiless(method, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=T)
    t0 = time.monotonic()
    c.putrequest(method, path)
    c.endheaders()
    r = c.getresponse(); d = r.read(); c.close()
    return r, d, time.monotonic() - t0
for method, path, status, field, words in [("POST", "/v1/runs/999999/cancel", 404, "id", "no running stream 999999"),
                                           ("POST", "/v1/runs/" + run_id + "/cancel", 409, "id", "already finished"),
                                           ("POST", "/v1/audio/speech", 411, None, "needs a JSON body"),
                                           ("POST", "/v1/speak", 411, None, "needs a JSON body"),
                                           ("POST", "/v1/nothing", 404, None, "no route POST /v1/nothing"),
                                           ("DELETE", "/v1/runs/999999", 404, None, "no route DELETE")]:
    r, d, took = bodiless(method, path)
    e = json.loads(d).get("error", {})
    check(r.status == status and e.get("field") == field and words in e.get("message", "") and took < 5,
          "bodiless %s %s -> %d %r in %.2f s" % (method, path, r.status, e.get("message", d[:80]), took))
s_ = socket.create_connection(("127.0.0.1", port), timeout=T)
s_.sendall(b"NOT A REQUEST LINE\r\n\r\n")
raw = b""
while b"\r\n\r\n" not in raw or len(raw.partition(b"\r\n\r\n")[2]) < int(
        ([l.split(b":")[1] for l in raw.split(b"\r\n") if l.lower().startswith(b"content-length:")] or [b"0"])[0]):
    b_ = s_.recv(65536)
    if not b_: break
    raw += b_
s_.close()
head, _, body = raw.partition(b"\r\n\r\n")
msg = json.loads(body).get("error", {}).get("message", "") if body.startswith(b"{") else ""
check(head.startswith(b"HTTP/1.1 400") and msg.startswith("HTTP 400: ") and len(msg) > 30,
      "a request line httplib cannot parse -> 400 %r" % msg[:90])
r, d = req("GET", "/v1/nothing")
check(r.status == 404 and "no route" in json.loads(d)["error"]["message"], "unknown route -> 404 JSON")

# 9. /metrics: Prometheus text
r, m = req("GET", "/metrics"); m = m.decode()
check(r.getheader("Content-Type").startswith("text/plain"), "metrics content type")
for name in ["rtf_streams_active", "rtf_requests_total", "rtf_rejected_total", "rtf_first_audio_seconds_bucket",
             "rtf_stream_rtf_count", "rtf_audio_seconds_total", "rtf_stage_busy_seconds_total"]:
    check(name in m, "metrics has " + name)
check('rtf_rejected_total{reason="queue_full"} 0' in m and "rtf_cancelled_total 0" in m, "no request refused or cancelled on this server")
check(all(len(l.split(" ")) == 2 for l in m.split("\n") if l and not l.startswith("#")), "every sample line is 'name value'")
PY

# 7-8. capacity and hang-ups, on a second server whose utterances cannot end early: EOS is
# masked until 600 s of audio (--min-audio-s = --max-audio-s) and the long streams speak a
# text of 30 LLM steps (the TTS's 500 codes per step: 600 s), so a long stream ends only when
# its client leaves or the server drops it — "both slots busy, one request queued" is a
# state that holds until the test changes it (600 s of audio is minutes of work on any CPU;
# the checks below take seconds). The streams' clients read them (a thread each) unless a
# check says not.
"$RTF" serve --models "$KIT" --port 0 --port-file "$TMP/port3" --max-streams 2 --max-queue 1 --queue-timeout 20s \
  --write-timeout 3 --send-buffer-kb 16 --max-audio-s 600 --min-audio-s 600 --seed 7 >"$TMP/serve3.log" 2>&1 &
SRV3_PID=$!
for _ in $(seq 1 240); do [[ -s "$TMP/port3" ]] && break; kill -0 $SRV3_PID 2>/dev/null || break; sleep 0.25; done
if [[ -s "$TMP/port3" ]]; then
python3 - "$(cat "$TMP/port3")" <<'PY' || fails=$((fails+1))
import http.client, json, socket, sys, threading, time
port = int(sys.argv[1])
T = 60  # seconds: every request and every wait is bounded

def req(method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=T)
    c.request(method, path, body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse(); d = r.read(); c.close()
    return r, d

def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
    print("ok:", what)

def health(): return json.loads(req("GET", "/health")[1])
def metrics(): return req("GET", "/metrics")[1].decode()

def wait_for(pred, what):
    """Polls (bounded) until pred() holds; returns the seconds waited."""
    t0 = time.time()
    while time.time() - t0 < T:
        if pred(): return time.time() - t0
        time.sleep(0.05)
    check(False, "%s within %d s" % (what, T))

def drain(s):
    try:
        while s.recv(65536): pass
    except OSError:
        pass

LONG_TEXT = "Goodbye, and thank you for listening. " * 40  # ~300 tokens: 30 LLM steps of 10

def start_long_stream(read=True, rcvbuf=None, knobs=None):
    """A raw /v1/speak audio stream (600 s of audio); returns (socket, run id) once its 200 arrived,
    i.e. once it holds a slot. `read`: a thread reads it, so the server never blocks on it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf: s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(T)
    s.connect(("127.0.0.1", port))
    b = {"text": LONG_TEXT, "stream_format": "audio"}
    if knobs: b["knobs"] = knobs
    body = json.dumps(b).encode()
    s.sendall(b"POST /v1/speak HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    got = s.recv(1024)
    check(got.startswith(b"HTTP/1.1 200"), "long stream started: %r" % got.split(b"\r\n")[0])
    rid = int([l.split(b":")[1] for l in got.split(b"\r\n") if l.lower().startswith(b"x-rtf-run-id:")][0])
    if read: threading.Thread(target=drain, args=(s,), daemon=True).start()
    return s, rid

def hang_up(s):
    try: s.shutdown(socket.SHUT_RDWR)
    except OSError: pass
    s.close()

def cancelled(n): return lambda: ("rtf_cancelled_total %d" % n) in metrics()
def active(n): return lambda: health()["streams_active"] == n

# 7. over capacity: both slots held, one request queued -> a fourth gets 429 + Retry-After
a, _ = start_long_stream()
b, _ = start_long_stream()
check(health()["streams_active"] == 2, "both slots busy with long streams")
q = socket.create_connection(("127.0.0.1", port), timeout=T)
body = json.dumps({"model": "rtf", "input": "Queued.", "response_format": "pcm"}).encode()
q.sendall(b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
wait_for(lambda: health()["streams_queued"] == 1, "third request queued behind 2 busy slots")
h = health()
check(h["streams_active"] == 2 and h["streams_queued"] == 1, "2 streams + 1 queued: %s" % {k: h[k] for k in ("streams_active", "streams_queued")})
r, d = req("POST", "/v1/speak", json.dumps({"text": "One too many.", "stream_format": "audio"}))
check(r.status == 429 and r.getheader("Retry-After") and int(r.getheader("Retry-After")) >= 1,
      "a fourth request: %d, Retry-After %s" % (r.status, r.getheader("Retry-After")))
check('rtf_rejected_total{reason="queue_full"} 1' in metrics(), "metrics counted the 429")
# 8c. the queued client hangs up: it leaves the queue at once, both streams still running
hang_up(q)
waited = wait_for(lambda: health()["streams_queued"] == 0, "the queued client's hang-up empties the queue")
h = health()
check(h["streams_queued"] == 0 and h["streams_active"] == 2,
      "the queued client's hang-up emptied the queue in %.2f s, both streams still running" % waited)
check("rtf_abandoned_total 1" in metrics(), "metrics counted the abandoned request")
# 8. a running stream whose client hangs up is cancelled and frees its slot
hang_up(a)
check(True, "a hang-up cancelled a running stream in %.1f s" % wait_for(cancelled(1), "1 stream cancelled"))
wait_for(active(1), "its slot freed")
# ... before its first audio: the connection watch sees the hang-up at once (httplib alone would
# notice only at the first failed write, after the first audio). schedule=sequential: Token2Wav
# starts only when the TTS has ended the utterance (15000 codes here), so no audio can come first.
c, cid = start_long_stream(read=False, knobs={"schedule": "sequential"})
hang_up(c)
wait_for(cancelled(2), "the hung-up stream cancelled")
run = json.loads(req("GET", "/v1/runs/%d" % cid)[1])["serve"]
check(run["client_disconnected"] and run["cancelled"] and run["n_chunks_sent"] == 0,
      "hung up before its first audio: cancelled with nothing sent (%s)" % {k: run[k] for k in ("n_chunks_sent", "cancelled")})
# 8b. a reader that stops reading (the socket stays open): once the server's small send buffer
# (--send-buffer-kb 16) and the client's receive buffer are full, the blocked write runs out
# after --write-timeout (3 s), and the stream is cancelled and its slot freed
wait_for(active(1), "one stream running")
d_, _ = start_long_stream(read=False, rcvbuf=4096)
check(True, "a reader that stopped reading was dropped in %.1f s" % wait_for(cancelled(3), "the stopped reader dropped"))
hang_up(d_)
# the freed slot serves the next request
e, _ = start_long_stream()
check(health()["streams_active"] == 2, "the freed slot serves the next request")
hang_up(e); hang_up(b)
wait_for(lambda: cancelled(5)() and active(0)(), "both remaining streams cancelled, no stream active")
# 8d. cancel by request (issue 33): POST /v1/runs/ID/cancel stops a running stream within a
# chunk (at most one more chunk reaches the client: ~1 s of PCM, under 60000 bytes on the
# tiny kit) and frees its slot for the next request, with both slots busy; a finished run is
# a 409, an unknown one a 404
def read_all(s, got):
    try:
        while True:
            d = s.recv(65536)
            if not d: return
            got.append((time.monotonic(), len(d)))
    except OSError:
        pass
h_, _ = start_long_stream()
f, fid = start_long_stream(read=False)
check(health()["streams_active"] == 2, "both slots busy before the cancel")
got = []
reader = threading.Thread(target=read_all, args=(f, got), daemon=True); reader.start()
wait_for(lambda: sum(n for _, n in got) > 60000, "the stream to cancel is sending audio")
# as docs/serve.md's `curl -X POST localhost:8080/v1/runs/ID/cancel` sends it: no body, no Content-Length
c_ = http.client.HTTPConnection("127.0.0.1", port, timeout=T)
c_.putrequest("POST", "/v1/runs/%d/cancel" % fid); c_.endheaders()
r = c_.getresponse(); d = r.read(); c_.close()
t_cancel = time.monotonic()
check(r.status == 202 and json.loads(d)["status"] == "cancelling", "POST /v1/runs/%d/cancel (no body): %d %s" % (fid, r.status, d.decode()))
reader.join(T)
after = sum(n for t, n in got if t > t_cancel)
run = json.loads(req("GET", "/v1/runs/%d" % fid)[1])["serve"]
check(run["cancelled"] and run["cancel_requested"] and not run["client_disconnected"] and run["chunks_after_cancel"] <= 1
      and after < 60000, "cancelled by request: %d chunk(s) sent after the cancel, %d bytes reached the client after its 202"
      % (run["chunks_after_cancel"], after))
g, _ = start_long_stream()
check(health()["streams_active"] == 2, "the slot the cancel freed serves the next request at once")
r409, _ = req("POST", "/v1/runs/%d/cancel" % fid)
r404, _ = req("POST", "/v1/runs/999999/cancel")
check(r409.status == 409 and r404.status == 404, "cancel of a finished run: %d, of an unknown one: %d" % (r409.status, r404.status))
hang_up(f); hang_up(g); hang_up(h_)
wait_for(lambda: cancelled(8)() and active(0)(), "the cancel test's streams ended")
check(True, "all long streams cancelled")
PY
else echo "FAIL: the 600 s server did not start"; cat "$TMP/serve3.log"; fails=$((fails+1)); fi
stop_server "$SRV3_PID" "the 600 s server"
SRV3_PID=

# 10. rtf load against it, and its reports
expect_rc 0 'real time' -- load --url "http://127.0.0.1:$PORT" --streams 1 --requests 2 --json "$TMP/load.json" -q
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); c=j['config']; assert j['summary']['complete'] == 2 and c['duration_s'] == 86400, c" "$TMP/load.json" \
  && echo "ok: --requests 2 without --duration: both sent, no 30 s cut-off" || { echo "FAIL: load --requests without --duration"; fails=$((fails+1)); }
expect_rc 0 '' -- report "$TMP/load.json" -o "$TMP/load.md"
expect_rc 0 '' -- report "$TMP/load.json" -o "$TMP/load.html"
grep -q "rtfkit load" "$TMP/load.md" && grep -q "<html" "$TMP/load.html" && echo "ok: load reports" || { echo "FAIL: load reports"; fails=$((fails+1)); }
expect_rc 1 'url' -- load --url "ftp://127.0.0.1:$PORT" --streams 1
expect_rc 3 'INCOMPLETE' -- load --url "http://127.0.0.1:1" --streams 1 --requests 1 --timeout 5 -q

# 11. --batch on: one LLM and one TTS context, the streams' decode steps merged; two streams
# of different text at once each give rtf speak's (greedy) PCM up to where a near-tie flips a
# code (docs/serve.md "Batching numerics": the merged steps sum in another order, so an argmax
# may flip on another CPU or another merge; seen equal on Zen 4), with its length, bit-equal
# for at least its first half; where the two streams' TTS stages overlapped, their decodes
# merged (each stream's mean batch above 1); the run says so. That streams are never mixed up
# step by step is checked where the numbers are visible: tests/speak/test-speak-batch.cpp (z,
# logits and hidden rows per step).
"$RTF" speak --models "$KIT" --text "Hello from the server." "${KNOBS[@]}" --greedy -q -o - >"$TMP/refg.pcm" 2>/dev/null
"$RTF" speak --models "$KIT" --text "A second voice, other words." "${KNOBS[@]}" --greedy -q -o - >"$TMP/refg2.pcm" 2>/dev/null
"$RTF" serve --models "$KIT" --port 0 --port-file "$TMP/port2" --max-streams 2 --batch on -q "${KNOBS[@]}" --greedy >"$TMP/serve2.log" 2>&1 &
SRV2_PID=$!
for _ in $(seq 1 240); do [[ -s "$TMP/port2" ]] && break; kill -0 $SRV2_PID 2>/dev/null || break; sleep 0.25; done
if [[ -s "$TMP/port2" ]]; then
python3 - "$(cat "$TMP/port2")" "$TMP/refg.pcm" "$TMP/refg2.pcm" <<'PY' || fails=$((fails+1))
import http.client, json, sys, threading
port, ref, ref2 = int(sys.argv[1]), open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
def req(method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse(); d = r.read(); c.close()
    return r, d
both = {}
def one(text, key):
    r, pcm = req("POST", "/v1/audio/speech", json.dumps({"model": "rtf", "input": text, "response_format": "pcm"}))
    both[key] = (r.status, pcm, r.getheader("X-Rtf-Run-Id"))
ts = [threading.Thread(target=one, args=a) for a in [("Hello from the server.", 1), ("A second voice, other words.", 2)]]
for t in ts: t.start()
for t in ts: t.join(60)
# Each stream against its alone run (rtf speak, greedy) as a free run: the same length, and
# bit-equal for at least the first half of its bytes (a near-tie flip of the argmax may part
# the codes after that; seen: equal whole, 23 of 23 runs on Zen 4). The two texts' alone runs
# differ from their first byte, so another stream's audio, or audio of neither, fails at once.
def agreeing(pcm, r):
    m = min(len(pcm), len(r))
    return next((i for i in range(m) if pcm[i] != r[i]), m)
ok = len(ref) > 0 and len(both) == 2 and both[1][0] == 200 and both[2][0] == 200
for k, r, other in ((1, ref, ref2), (2, ref2, ref)):
    if not ok: break
    pcm = both[k][1]
    n, n_other = agreeing(pcm, r), agreeing(pcm, other)
    good = len(pcm) == len(r) and 2 * n >= len(r)
    print(("ok" if good else "FAIL") + ": --batch on: stream %d vs its alone run (rtf speak): %d bytes (alone %d), "
          "bit-equal for the first %d (at least half: %d; the other text's run: %d)" % (k, len(pcm), len(r), n, len(r) // 2, n_other))
    ok = good
runs = {k: json.loads(req("GET", "/v1/runs/" + both[k][2])[1]) for k in (1, 2)} if ok else {}
def tts_busy(run):  # the TTS stage's busy intervals on the server's clock (ms)
    o = run["run"]["clock_origin_ms"]
    return [(o + e["start_ms"], o + e["end_ms"]) for s_ in run["run"]["stages"] if s_["name"] == "tts" for e in s_["events"]]
b = {k: run["serve"]["batch"] for k, run in runs.items()}
if ok:
    # Where the two streams' TTS stages were busy at the same time for 20 ms or more (tens of
    # one-code steps, each waiting up to --batch-gather-ms for the other), their decodes
    # merged: each stream's mean batch above 1 (seen 1.37 .. 2.0 with 26 .. 116 ms of overlap).
    overlap = sum(max(0.0, min(x1, y1) - max(x0, y0)) for x0, x1 in tts_busy(runs[1]) for y0, y1 in tts_busy(runs[2]))
    merged = all(b[k].get("tts_mean_batch", 0) > 1 for k in (1, 2))
    good = overlap < 20 or merged
    print(("ok" if good else "FAIL") + ": --batch on: the TTS stages overlapped %.0f ms, mean batch %s%s"
          % (overlap, [b[k].get("tts_mean_batch") for k in (1, 2)], "" if overlap >= 20 else " (under 20 ms: not judged)"))
    ok = good
m = req("GET", "/metrics")[1].decode()
ok = ok and all(b[k].get("on") is True for k in (1, 2)) and "rtf_batch_enabled 1" in m \
    and 'rtf_batch_mean_streams{stage="tts"}' in m and json.loads(req("GET", "/health")[1])["batch"] is True
print(("ok" if ok else "FAIL") + ": --batch on: two concurrent streams of different text, each its alone run's PCM up to any near-tie flip; batch on in the runs (%s), metrics, health" % b)
# the shared contexts serve both slots: they get both slots' thread shares (at most the CPUs)
import os
h = json.loads(req("GET", "/health")[1]); n = len(os.sched_getaffinity(0))
want = min(n, 2 * h["slot_threads"])
bt_ok = h["batch_threads"] == {"llm": want, "tts": want}
print(("ok" if bt_ok else "FAIL") + ": --batch on: shared contexts on %s threads (slot threads %d, %d CPUs)" % (h["batch_threads"], h["slot_threads"], n))
ok = ok and bt_ok
sys.exit(0 if ok else 1)
PY
else echo "FAIL: the --batch on server did not start"; cat "$TMP/serve2.log"; fails=$((fails+1)); fi
stop_server "$SRV2_PID" "the --batch on server"
SRV2_PID=

# 12. SIGTERM stops it cleanly (bounded wait, exit 0)
stop_server "$SRV_PID" "the server"
SRV_PID=
finish
