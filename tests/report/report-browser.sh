#!/usr/bin/env bash
# The HTML report end to end: render a twin `rtf speak` run (its prompt carries a <script>),
# a 500-chunk simulate bench, an A/B bench with device samples, and a bench whose quality
# gate is marked failed; open each in headless Chromium (no network) and check that the
# screenshot is not blank, the page's own marker script ran (data-report="ok"), nothing
# raised an error or CSP violation, and the injected script did not run.
# Chromium is required (scripts/deps-debian.txt): without it the test FAILS, so CI proves it.
# RTF_REPORT_SCREENSHOT=PATH copies the twin run's screenshot there (docs/report-screenshot.png).
source "$(dirname "$0")/../e2e/lib.sh"

CHROME=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$CHROME" ]]; then
  echo "FAIL: chromium is not installed (apt-get install chromium; it is in scripts/deps-debian.txt)"
  exit 1
fi

KIT=$TMP/kit
"$RTF" twin --family minicpmo45 --scale tiny --out "$KIT" >/dev/null 2>&1 || { echo "FAIL: twin"; exit 1; }
EVIL="<script>document.documentElement.setAttribute('data-pwned','1')</script><img src=x onerror=\"document.title='pwned'\">Hello"

# 1. speak on the twin: --html straight from rtf speak, and rtf report from its JSON
expect_rc 0 'html' -- speak --models "$KIT" -p "$EVIL" --max-audio-s 3 --max-tokens 40 -o "$TMP/a.wav" \
  --json "$TMP/speak.json" --html "$TMP/speak-direct.html"
expect_rc 0 '' -- report "$TMP/speak.json" -o "$TMP/speak.html"
expect_rc 0 'rtfkit report' -- report "$TMP/speak.json"                     # Markdown on stdout
expect_rc 0 '' -- report "$TMP/speak.json" -o "$TMP/speak.md"
# Markdown escapes with backslashes (a renderer shows \<script> as text), never HTML entities
grep -qF '\<script>' "$TMP/speak.md" && ! grep -qE '(^|[^\])<(script|img)' "$TMP/speak.md" \
  && ! grep -qE '&lt;|&#39;' "$TMP/speak.md" \
  && echo "ok: markdown escapes the prompt" || { echo "FAIL: markdown escaping"; fails=$((fails+1)); }

# 2. a 500-chunk simulate bench (virtual clock: instant), with --html from rtf bench
expect_rc 0 '' -- bench --workload simulate --cost llm=20ms,tts=60ms,t2w=60ms --chunks 500 --chunk-ms 200 \
  --clock virtual --runs 3 --json "$TMP/sim500.json" --html "$TMP/sim500.html"
# 3. A/B with device samples (--trace keeps the per-sample timeline)
expect_rc 0 '' -- bench --workload simulate --cost llm=2ms,tts=6ms,t2w=6ms --chunks 10 --chunk-ms 20 \
  --ab 'd1=1' 'd1=16' --runs 3 --sample-ms 5 --trace "$TMP/ab.trace.json" --json "$TMP/ab.json"
expect_rc 0 '' -- report "$TMP/ab.json" -o "$TMP/ab.html"
# 4. a failed quality gate (marked in the JSON) and a result with its optional sections removed
python3 - "$TMP/ab.json" "$TMP/failed.json" "$TMP/speak.json" "$TMP/bare.json" <<'PY' || { echo "FAIL: editing JSON"; exit 1; }
import json, sys
d = json.load(open(sys.argv[1]))
c = d["configs"][0]
r = next(r for r in c["runs"] if not r["warmup"])
r["quality"] = {"checked": True, "passed": False, "note": "token loop <???>", "report": None}
c["verdict"].update(status="INVALID", exit_code=3, reasons=["run 0: quality gate failed (token loop); its figures are not counted"])
d["exit_code"] = 3
json.dump(d, open(sys.argv[2], "w"))
s = json.load(open(sys.argv[3]))
for k in ["engines", "output", "config"]: s.pop(k, None)
s["run"]["chunks"] = s["run"]["chunks"][:1]
json.dump(s, open(sys.argv[4], "w"))
PY
expect_rc 0 '' -- report "$TMP/failed.json" -o "$TMP/failed.html"
expect_rc 0 '' -- report "$TMP/bare.json" -o "$TMP/bare.html"
expect_rc 1 'not an rtfkit result' -- report "$TMP/ab.trace.json" -o "$TMP/x.html"
expect_rc 1 'cannot tell the format' -- report "$TMP/ab.json" -o "$TMP/x.pdf"

# Open each page in headless Chromium.
check_page() {
  local html; html=$(realpath "$1"); local name
  name=$(basename "$html" .html)
  local prof; prof=$(mktemp -d "$TMP/chrome.XXXXXX")
  local flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
               --disable-component-update --disable-sync --disable-extensions --hide-scrollbars
               --user-data-dir="$prof" --enable-logging=stderr --v=0 --virtual-time-budget=2000)
  timeout 40 "$CHROME" "${flags[@]}" --window-size=1280,2000 --screenshot="$TMP/$name.png" "file://$html" \
    >"$TMP/$name.shot.log" 2>&1
  timeout 40 "$CHROME" "${flags[@]}" --dump-dom "file://$html" >"$TMP/$name.dom" 2>"$TMP/$name.dom.log"
  python3 - "$TMP/$name.png" "$TMP/$name.dom" "$TMP/$name.shot.log" "$TMP/$name.dom.log" <<'PY'
import re, struct, sys, zlib
png, dom, logs = sys.argv[1], open(sys.argv[2], errors="replace").read(), sys.argv[3:]
data = open(png, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "screenshot is not a PNG"
assert len(data) > 20000, "screenshot suspiciously small (%d bytes)" % len(data)
# Inflate the image data. A blank page filters to (almost) all zero bytes whatever PNG
# filter the encoder picked (uniform rows: "up" and "sub" residuals are 0); text and charts
# leave many distinct non-zero residuals. Cheap, and it cannot pass on a one-colour page.
pos, idat = 8, b""
while pos < len(data):
    n, typ = struct.unpack(">I4s", data[pos:pos + 8]); body = data[pos + 8:pos + 8 + n]; pos += 12 + n
    if typ == b"IHDR": w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    if typ == b"IDAT": idat += body
raw = zlib.decompress(idat)
bpp = {2: 3, 6: 4}.get(ctype, 0)
assert depth == 8 and bpp and len(raw) == h * (w * bpp + 1), "unexpected PNG layout"
residual = b"".join(raw[y * (w * bpp + 1) + 1:(y + 1) * (w * bpp + 1)] for y in range(0, h, 2))
nonzero = 1 - residual.count(0) / len(residual)
distinct = len(set(residual))
assert nonzero > 0.005 and distinct > 32, "screenshot is (nearly) blank: %.4f non-zero, %d values" % (nonzero, distinct)
assert re.search(r'<html[^>]*data-report="ok"', dom), "the report's marker script did not run"
assert not re.search(r'data-report-error="1"', dom), "a script error or CSP violation was recorded"
assert not re.search(r'data-pwned="1"', dom) and "<title>pwned" not in dom, "an injected script ran"
for lf in logs:
    for line in open(lf, errors="replace"):
        if re.search(r"Uncaught|ERROR:CONSOLE|Refused to|SyntaxError", line):
            raise AssertionError("browser logged an error: " + line.strip())
print("%dx%d, %.1f %% non-zero residuals, %d values, %d bytes" % (w, h, 100 * nonzero, distinct, len(data)))
PY
  if [[ $? -eq 0 ]]; then echo "ok: chromium renders $name"; else
    echo "FAIL: chromium check of $name"; tail -5 "$TMP/$name.shot.log"; fails=$((fails+1)); fi
}
for page in speak sim500 ab failed bare; do check_page "$TMP/$page.html"; done
# rtf speak --html renders the same document as rtf report (only the nonce and source line differ)
diff <(sed -E 's/nonce-?[="a-f0-9]+//g; s/from speak.json &middot; //; s/from speak\.json · //' "$TMP/speak.html") \
     <(sed -E 's/nonce-?[="a-f0-9]+//g' "$TMP/speak-direct.html") >/dev/null \
  && echo "ok: rtf speak --html = rtf report" || { echo "FAIL: speak --html differs from rtf report"; fails=$((fails+1)); }
grep -q '&lt;script&gt;document.documentElement' "$TMP/speak.dom" \
  && echo "ok: the prompt's <script> is text on the page" || { echo "FAIL: prompt text missing"; fails=$((fails+1)); }
if [[ -n "${RTF_REPORT_SCREENSHOT:-}" ]]; then cp "$TMP/speak.png" "$RTF_REPORT_SCREENSHOT" && echo "screenshot -> $RTF_REPORT_SCREENSHOT"; fi
finish
