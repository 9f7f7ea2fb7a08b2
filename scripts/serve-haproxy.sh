#!/usr/bin/env bash
# Scale-out example: two `rtf serve` instances on loopback behind HAProxy
# (examples/haproxy/haproxy.cfg), `rtf load` through the front door, then a check that both
# instances served and every stream completed; then, with instance 1 busy on a stream that
# did not come through HAProxy, that new streams go to instance 2 (the agent check,
# rtf serve --agent-port). Stops everything it started.
#
#   scripts/serve-haproxy.sh [KIT] [REQUESTS]   # default: a tiny twin kit made in a temp dir, 6 requests
#   RTF=build/bin/rtf scripts/serve-haproxy.sh
# Exit 0 when the load completed through HAProxy, both backends took requests, and the busy
# instance got none of the later ones.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
RTF=${RTF:-$root/build/bin/rtf}
command -v haproxy >/dev/null || { echo "serve-haproxy.sh: haproxy not installed (apt-get install haproxy)" >&2; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; sleep 0.5; for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
kit=${1:-}
requests=${2:-6}
if [[ -z "$kit" ]]; then
  kit=$tmp/kit
  "$RTF" twin --family minicpmo45 --scale tiny --out "$kit" >/dev/null 2>&1 || { echo "FAIL: twin kit"; exit 1; }
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

max_streams=1 max_queue=2
export RTF_AGENT_PORT1=$(free_port) RTF_AGENT_PORT2=$(free_port)
for i in 1 2; do
  agent=RTF_AGENT_PORT$i
  "$RTF" serve --models "$kit" --port 0 --port-file "$tmp/port$i" --max-streams $max_streams --max-queue $max_queue \
    --agent-port "${!agent}" --send-buffer-kb 16 --write-timeout 30 --max-audio-s 1 --min-audio-s 1 -q >"$tmp/serve$i.log" 2>&1 &
  pids+=($!)
done
for i in 1 2; do
  for _ in $(seq 1 480); do [[ -s "$tmp/port$i" ]] && break; sleep 0.25; done
  [[ -s "$tmp/port$i" ]] || { echo "FAIL: instance $i did not start"; cat "$tmp/serve$i.log"; exit 1; }
done
export RTF_PORT1=$(cat "$tmp/port1") RTF_PORT2=$(cat "$tmp/port2") RTF_FRONT_PORT=$(free_port)
export RTF_MAXCONN=$((max_streams + max_queue))
haproxy -c -f "$root/examples/haproxy/haproxy.cfg" >/dev/null || { echo "FAIL: haproxy -c rejects the example config"; exit 1; }
haproxy -db -f "$root/examples/haproxy/haproxy.cfg" >"$tmp/haproxy.log" 2>&1 &
pids+=($!)
echo "instances on :$RTF_PORT1 and :$RTF_PORT2, HAProxy on :$RTF_FRONT_PORT"
# wait until HAProxy's health checks see both instances up (a request through it succeeds)
for _ in $(seq 1 40); do
  python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$RTF_FRONT_PORT/health', timeout=2)" 2>/dev/null && break
  sleep 0.25
done
sleep 1.5
"$RTF" load --url "http://127.0.0.1:$RTF_FRONT_PORT" --streams 2 --requests "$requests" --timeout 120 \
  --json "$tmp/load.json" -q
rc=$?
served() { python3 - "$1" <<'PY'
import sys, urllib.request
m = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode()
print(sum(int(float(l.split()[-1])) for l in m.splitlines() if l.startswith('rtf_requests_total{endpoint="speech",code="200"}')))
PY
}
n1=$(served "$RTF_PORT1") n2=$(served "$RTF_PORT2")
echo "instance 1 served $n1, instance 2 served $n2"
complete=$(python3 -c "import json,sys; print(json.load(open('$tmp/load.json'))['summary']['complete'])")
if [[ $rc -ne 0 || "$complete" -ne "$requests" || "$n1" -lt 1 || "$n2" -lt 1 ]]; then
  echo "FAIL: load exit $rc, $complete/$requests complete, backends $n1/$n2"; tail -5 "$tmp/haproxy.log"; exit 1
fi
echo "ok: $complete/$requests streams complete through HAProxy, both instances served"

# Instance 1 busy with a stream that came directly (HAProxy does not count it) and whose client
# does not read: it holds the slot until --write-timeout (30 s; the utterance itself is 1 s,
# more than the 16 KiB send buffer and the 4 KiB receive buffer take). Its agent says
# "ready up 0%", so the next streams through HAProxy all go to instance 2 (without the agent
# HAProxy sees two idle instances and alternates). They are sent one after another with a
# pause of two agent intervals: an instance with one slot says 0 % while it serves, and HAProxy
# hears that it is free again only at its next agent check (agent-inter 250 ms); a request in
# that window finds every weight 0 and goes to the backup lines, i.e. to either instance.
python3 - "$RTF_PORT1" "$RTF_PORT2" "$RTF_FRONT_PORT" "$RTF_AGENT_PORT1" <<'PY'
import json, socket, sys, time, urllib.error, urllib.request
p1, p2, front, agent1 = (int(a) for a in sys.argv[1:5])
T = 60
def served(port):
    m = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=T).read().decode()
    return sum(int(float(l.split()[-1])) for l in m.splitlines() if l.startswith('rtf_requests_total{endpoint="speech",code="200"}'))
def agent(port):
    with socket.create_connection(("127.0.0.1", port), timeout=T) as s:
        return s.recv(64).decode()
busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
busy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
busy.settimeout(T)
busy.connect(("127.0.0.1", p1))
body = json.dumps({"text": "A stream nobody reads.", "stream_format": "audio"}).encode()
busy.sendall(b"POST /v1/speak HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
got = busy.recv(1024)
if not got.startswith(b"HTTP/1.1 200"):
    print("FAIL: the busy stream did not start: %r" % got[:200]); sys.exit(1)
time.sleep(0.6)
reply = agent(agent1)
if reply != "ready up 0%\n":
    print("FAIL: instance 1's agent says %r while its slot is busy" % reply); sys.exit(1)
print("ok: instance 1 busy on a direct stream; its agent says %r" % reply.strip())
before1, before2 = served(p1), served(p2)
for i in range(4):
    req = urllib.request.Request("http://127.0.0.1:%d/v1/audio/speech" % front, method="POST",
                                 data=json.dumps({"model": "rtf", "input": "Next one.", "response_format": "pcm"}).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=T) as r:  # the whole stream
            ok = r.status == 200 and len(r.read()) > 0
    except urllib.error.HTTPError as e:
        print("FAIL: stream %d through HAProxy: %d %s" % (i, e.code, e.read()[:200])); sys.exit(1)
    if not ok:
        print("FAIL: stream %d through HAProxy was empty" % i); sys.exit(1)
    time.sleep(0.6)
d1, d2 = served(p1) - before1, served(p2) - before2
still = agent(agent1)
busy.close()
if still != "ready up 0%\n":
    print("FAIL: instance 1 was not busy for the whole test (its agent now says %r)" % still); sys.exit(1)
if d1 != 0 or d2 != 4:
    print("FAIL: with instance 1 busy, the 4 streams went %d to it and %d to instance 2" % (d1, d2)); sys.exit(1)
print("ok: with instance 1 busy, all 4 new streams went to instance 2 (agent weights)")
PY
[[ $? -eq 0 ]] || { tail -5 "$tmp/haproxy.log"; exit 1; }
