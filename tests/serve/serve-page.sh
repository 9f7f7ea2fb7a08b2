#!/usr/bin/env bash
# The listening page (GET /, src/serve/page/listen.html) in a real browser: `rtf serve` on a
# tiny twin kit, headless Chromium driven through chromedriver's W3C WebDriver API, all on
# 127.0.0.1. The page lists the kit's voices, a click on Speak streams pcm and plays it live,
# and what the page measured agrees with the server's own result (GET /v1/runs/ID): the same
# run id, the decoded duration equal to the audio sent, first audio no earlier than the
# server's and while the stream still arrives (not stalled, then delivered at once); then once
# more as FLAC (downloaded, then decoded by the browser). No console
# errors; a screenshot is kept as a test artifact (serve-page.png).
# Chromium and chromedriver are required (scripts/deps-debian.txt): without them the test
# FAILS, so CI proves it. Every request and wait is bounded; the server, chromedriver and the
# Chromium it starts are killed at exit whatever happens. RTF_SERVE_PAGE, when set, reaches
# the server (it then serves that file instead of the built-in page).
source "$(dirname "$0")/../e2e/lib.sh"
PY=/usr/bin/python3  # Debian's (a plain python3 may be a pyenv shim)
CHROME=/usr/bin/chromium
DRIVER=/usr/bin/chromedriver
[[ -x $CHROME ]] || { echo "FAIL: chromium is not installed (apt-get install chromium; it is in scripts/deps-debian.txt)"; exit 1; }
[[ -x $DRIVER ]] || { echo "FAIL: chromedriver is not installed (apt-get install chromium-driver; it is in scripts/deps-debian.txt)"; exit 1; }
[[ -x $PY ]] || { echo "FAIL: /usr/bin/python3 is not installed (apt-get install python3)"; exit 1; }
ART_BASE=${RTF_TEST_TMP:+$RTF_TEST_TMP/..}
ART=${RTF_TEST_ARTIFACTS:-${ART_BASE:-$(dirname "$TMP")}/test-artifacts}
mkdir -p "$ART" || { echo "FAIL: cannot create $ART"; exit 1; }
ART=$(cd "$ART" && pwd)

SRV_PID=
DRV_PID=
# Chromium is chromedriver's child; chromedriver runs in a process group of its own (setsid),
# so one kill of that group takes both, and the tree walk catches anything that left the group.
tree() { local p; for p in $(ps -o pid= --ppid "$1" 2>/dev/null); do echo "$p"; tree "$p"; done; }
cleanup() {
  if [[ -n $DRV_PID ]]; then
    local kids; kids=$(tree "$DRV_PID")
    kill -9 -- "-$DRV_PID" 2>/dev/null
    kill -9 "$DRV_PID" $kids 2>/dev/null
  fi
  [[ -n $SRV_PID ]] && kill -9 "$SRV_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

KIT=$TMP/kit
"$RTF" twin --family minicpmo45 --scale tiny --out "$KIT" >/dev/null 2>&1 || { echo "FAIL: twin"; exit 1; }
echo "ok: tiny twin kit"

"$RTF" serve --models "$KIT" --port 0 --port-file "$TMP/port" --max-streams 1 --max-audio-s 2 --min-audio-s 2 \
  --seed 7 >"$TMP/serve.log" 2>&1 &
SRV_PID=$!
disown "$SRV_PID"  # killed at exit on purpose: no "Killed" notice from the shell
for _ in $(seq 1 240); do [[ -s "$TMP/port" ]] && break; kill -0 $SRV_PID 2>/dev/null || break; sleep 0.25; done
[[ -s "$TMP/port" ]] || { echo "FAIL: server did not start"; cat "$TMP/serve.log"; exit 1; }
PORT=$(cat "$TMP/port")
echo "ok: rtf serve on 127.0.0.1:$PORT${RTF_SERVE_PAGE:+ (page from RTF_SERVE_PAGE=$RTF_SERVE_PAGE)}"

# chromedriver on a free loopback port: the kernel picks one, chromedriver takes it (a few
# tries, in case another process takes it in between); ready when /status says so.
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wd_ready() {
  "$PY" - "$1" <<'PY'
import http.client, json, sys
try:
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=2)
    c.request("GET", "/status")
    sys.exit(0 if json.loads(c.getresponse().read())["value"]["ready"] else 1)
except Exception:
    sys.exit(1)
PY
}
WD_PORT=
for try in 1 2 3; do
  p=$(free_port)
  setsid "$DRIVER" --port="$p" --log-path="$TMP/chromedriver.log" >"$TMP/chromedriver.out" 2>&1 &
  DRV_PID=$!
  disown "$DRV_PID"
  for _ in $(seq 1 40); do wd_ready "$p" && { WD_PORT=$p; break; }; kill -0 $DRV_PID 2>/dev/null || break; sleep 0.25; done
  [[ -n $WD_PORT ]] && break
  kill -9 -- "-$DRV_PID" "$DRV_PID" 2>/dev/null; DRV_PID=
done
[[ -n $WD_PORT ]] || { echo "FAIL: chromedriver did not start"; cat "$TMP/chromedriver.out"; exit 1; }
echo "ok: chromedriver on 127.0.0.1:$WD_PORT"

# The browser part: WebDriver over HTTP with Python's http.client (no curl needed), every
# request with a timeout, every wait bounded. Prints ok:/FAIL: lines; exits with the count.
"$PY" - "$PORT" "$WD_PORT" "$TMP" "$CHROME" "$ART/serve-page.png" <<'PY'
import base64, http.client, json, struct, sys, time
port, wd_port, tmp, chrome, shot = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
fails = 0

def check(cond, what, detail=""):
    global fails
    if cond:
        print("ok:", what)
    else:
        fails += 1
        print("FAIL:", what, ("-- " + detail) if detail else "")
    return cond

class WdError(Exception):
    pass

def wd(method, path, body=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", wd_port, timeout=timeout)
    c.request(method, path, None if body is None else json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    raw = r.read()
    c.close()
    d = json.loads(raw) if raw else {}
    if r.status != 200:
        raise WdError("%s %s -> HTTP %d: %s" % (method, path, r.status, json.dumps(d.get("value", d))[:400]))
    return d.get("value")

def server(path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path)
    r = c.getresponse()
    d = r.read()
    c.close()
    return r, d

# GET / itself: the page, with the CSP that keeps it to this server
r, page = server("/")
csp = r.getheader("Content-Security-Policy") or ""
check(r.status == 200 and r.getheader("Content-Type", "").startswith("text/html") and b'id="speak"' in page
      and "default-src 'none'" in csp and "connect-src 'self'" in csp,
      "GET / serves the page (%d bytes) with its CSP" % len(page))

caps = {"capabilities": {"alwaysMatch": {
    "browserName": "chrome",
    "goog:loggingPrefs": {"browser": "ALL"},
    "goog:chromeOptions": {"binary": chrome, "args": [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--autoplay-policy=no-user-gesture-required", "--window-size=1200,900",
        "--user-data-dir=" + tmp + "/profile",
        # nothing but loopback: no background fetches, updates, sync or first-run pages
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-extensions", "--disable-default-apps", "--metrics-recording-only"]}}}}
try:
    s = wd("POST", "/session", caps, timeout=60)
except Exception as e:
    check(False, "WebDriver session (headless Chromium)", str(e))
    sys.exit(1)
sid = s["sessionId"]
print("ok: WebDriver session, %s %s" % (s["capabilities"].get("browserName"), s["capabilities"].get("browserVersion")))
S = "/session/" + sid

def js(script, *args, timeout=40):
    return wd("POST", S + "/execute/sync", {"script": script, "args": list(args)}, timeout=timeout)

def wait_for(script, seconds, what):
    end = time.monotonic() + seconds
    while True:
        v = js(script)
        if v or time.monotonic() > end:
            return v
        time.sleep(0.25)

def click(css):
    e = wd("POST", S + "/element", {"using": "css selector", "value": css})
    wd("POST", S + "/element/%s/click" % next(iter(e.values())), {})

def speak(fmt, text):
    """Set the form, click Speak (a real click: a user gesture), wait for the run to end."""
    js("document.getElementById('text').value = arguments[0];"
       "document.getElementById('format').value = arguments[1];", text, fmt)
    t0 = time.monotonic()
    click("#speak")
    state = None
    while time.monotonic() - t0 < 120:
        state = js("return window.rtfResult && window.rtfResult.state")
        if state in ("done", "error"):
            break
        time.sleep(0.25)
    res = js("return window.rtfResult") or {}
    print("   %s run: %.1f s, page state %s, status line: %s" % (
        fmt, time.monotonic() - t0, state, js("return document.getElementById('status').textContent")))
    return res

def close(a, b, tol):
    return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= tol

def check_run(res, fmt):
    check(res.get("state") == "done", "%s: the page's run is done" % fmt, res.get("error") or "")
    if res.get("state") != "done":
        return None
    page_srv = res.get("server") or {}
    sv = page_srv.get("serve") or {}
    rid = res.get("run_id")
    r, d = server("/v1/runs/%s" % rid)
    direct = json.loads(d) if r.status == 200 else {}
    check(rid is not None and str(sv.get("id")) == str(rid) and direct.get("serve", {}).get("id") == sv.get("id"),
          "%s: run id %s: X-Rtf-Run-Id = the page's GET /v1/runs/ID = the server's own" % (fmt, rid))
    sent, dec = sv.get("audio_s_sent"), res.get("decoded_duration_s")
    check(close(dec, sent, 0.05) and close(sent, 2.0, 0.25),
          "%s: decoded %.3f s = audio sent %.3f s (within 0.05 s; both 2.0 +- 0.25 s)" % (fmt, dec or -1, sent or -1),
          "player %s, decodeAudioData %s" % (res.get("player_duration_s"), res.get("decode_audio_s")))
    if res.get("decode_audio_s") is not None:
        check(close(res["decode_audio_s"], sent, 0.05),
              "%s: the browser's decoder gives %.3f s too" % (fmt, res["decode_audio_s"]))
    return sv

# 1. the page loads and lists the kit's voices
try:
    wd("POST", S + "/timeouts", {"pageLoad": 30000, "script": 30000})
    wd("POST", S + "/url", {"url": "http://127.0.0.1:%d/" % port}, timeout=40)
    check(wd("GET", S + "/title") == "rtf serve \u2014 listen", "page loaded: title 'rtf serve \u2014 listen'")
    ready = wait_for("return document.getElementById('voice').dataset.ready === '1'", 15, "voices")
    voices = js("return Array.from(document.getElementById('voice').options).map(o => o.value)")
    check(ready and all(v in voices for v in ("default", "twin-a", "twin-b")),
          "the voice list is filled from GET /v1/audio/voices: %s" % voices)

    # 2. pcm, played live through Web Audio
    res = speak("pcm", "Hello! This is rtfkit speaking in a browser.")
    sv = check_run(res, "pcm")
    if sv:
        check(close(res.get("audio_s"), sv.get("audio_s_sent"), 1 / 24000),
              "pcm: the page counted %.4f s of audio in %d bytes over %d reads = the server's" % (
                  res.get("audio_s") or -1, res.get("bytes") or -1, res.get("n_reads") or -1))
        # First audio: the page hears it no earlier than the server sent it (50 ms for the two
        # clocks' granularity), and while the stream is still arriving: from its first audio to
        # the stream's end the page waits at least half as long as the server took from its
        # first chunk to its last (less 50 ms). A page behind a loaded machine's scheduler is
        # late at both ends alike; a stream that stalls (held back, then delivered at once)
        # ends at the page right after its first audio.
        fa, sfa = res.get("first_audio_ms"), sv.get("first_audio_ms_from_request")
        ch = (res["server"].get("run") or {}).get("chunks") or []
        srv_spread = ch[-1]["arrival_ms"] - ch[0]["arrival_ms"] if len(ch) >= 2 else 0.0
        page_spread = (res.get("wall_s") or 0) * 1000 - (fa or 0)
        check(isinstance(fa, (int, float)) and isinstance(sfa, (int, float)) and fa >= sfa - 50,
              "pcm: first audio %.0f ms in the page, %.0f ms at the server (diff %+.0f ms; the page's no earlier)"
              % (fa or -1, sfa or -1, (fa or 0) - (sfa or 0)))
        check(len(ch) >= 2 and page_spread >= 0.5 * srv_spread - 50,
              "pcm: streamed, not stalled: the page's first audio to its end %.0f ms, the server's first chunk to its last "
              "%.0f ms (%d chunks; at least half of it, less 50 ms)" % (page_spread, srv_spread, len(ch)))
        check(isinstance(res.get("gaps"), int) and isinstance(res.get("gap_ms"), (int, float)),
              "pcm: gaps counted: %s (%.0f ms) on the %s clock, context at %s Hz, arrival ratio %s" % (
                  res.get("gaps"), res.get("gap_ms") or 0, res.get("audio_clock"), res.get("context_rate"),
                  "%.2f" % res["arrival_ratio"] if res.get("arrival_ratio") else None))
        check(res.get("audio_clock") == "audio", "pcm: the AudioContext ran (the pieces were scheduled on it)",
              "audio_clock %s" % res.get("audio_clock"))
        print("   server: rtf %s, voice %s, %s chunks" % (
            (res["server"].get("metrics") or {}).get("rtf"), sv.get("voice_spoken"), sv.get("n_chunks_sent")))
    # the screenshot: the figures, the timeline and the server's result after a pcm run, the
    # window grown to the page's height so all of it is in the picture
    need = js("return document.documentElement.scrollHeight + window.outerHeight - window.innerHeight")
    try:
        wd("POST", S + "/window/rect", {"width": 1200, "height": max(900, min(int(need), 2400))})
    except Exception as e:
        print("note: the window could not be resized (%s); the screenshot is the first 900 px" % str(e)[:120])
    png = base64.b64decode(wd("GET", S + "/screenshot"))
    with open(shot, "wb") as f:
        f.write(png)
    w, h = struct.unpack(">II", png[16:24]) if len(png) > 24 else (0, 0)
    check(png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR" and len(png) > 8000 and w >= 600 and h >= 400,
          "screenshot: %dx%d PNG, %d bytes -> %s" % (w, h, len(png), shot))

    # 3. flac: downloaded whole, then decoded and played by the browser
    res = speak("flac", "Hello again, this time in FLAC.")
    check_run(res, "flac")

    # 4. the browser's console: nothing at SEVERE (script errors, CSP refusals, failed loads)
    log = None
    for method, body in (("POST", {"type": "browser"}), ("GET", None)):
        try:
            log = wd(method, S + "/se/log", body)
            break
        except Exception as e:
            err = str(e)
    if log is None:
        print("note: the browser log endpoint is not supported here (%s); console check skipped" % err[:160])
    else:
        severe = [e for e in log if e.get("level") == "SEVERE"]
        # a GET /v1/runs/ID that found the run not yet kept is retried by the page: not an error
        bad = [e for e in severe if not ("/v1/runs/" in e.get("message", "") and "404" in e.get("message", ""))]
        check(not bad, "no console errors (%d log entries, %d SEVERE)" % (len(log), len(severe)),
              "; ".join(e.get("message", "")[:200] for e in bad[:5]))
except Exception as e:
    check(False, "the browser session", "%s: %s" % (type(e).__name__, e))
finally:
    try:
        wd("DELETE", S, timeout=10)
    except Exception:
        pass
sys.exit(min(fails, 100))
PY
fails=$((fails + $?))
[[ $fails -eq 0 ]] || { echo "--- server log (tail)"; tail -20 "$TMP/serve.log"; }
finish
