#!/usr/bin/env bash
# Scale-out example: two `rtf serve` instances on loopback behind HAProxy
# (examples/haproxy/haproxy.cfg), `rtf load` through the front door, then a check that both
# instances served and every stream completed. Each instance answers HAProxy's agent check
# (rtf serve --agent-port): HAProxy weighs it by its free-slot share. Stops everything it started.
#
#   scripts/serve-haproxy.sh [KIT] [REQUESTS]   # default: a tiny twin kit made in a temp dir, 6 requests
#   RTF=build/bin/rtf scripts/serve-haproxy.sh
# Exit 0 when the load completed through HAProxy and both backends took requests.
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
    --agent-port "${!agent}" --max-audio-s 1 --min-audio-s 1 -q >"$tmp/serve$i.log" 2>&1 &
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


