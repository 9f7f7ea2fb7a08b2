# Helpers for the shell e2e tests. Source it; $1 of the test is the rtf binary.
set -uo pipefail
RTF=${RTF:-$1}
TMP=$(mktemp -d "${RTF_TEST_TMP:-/tmp}/rtf-e2e.XXXXXX" 2>/dev/null || mktemp -d)
# results of bench/speak/demo go to a history in the test's own folder, not the user's
export RTF_HISTORY_DB=$TMP/history.db
# the plain knob defaults on every CPU (the machine profile picks per CPU; speak.sh tests it
# with --profile auto)
export RTF_PROFILE=none
fails=0
# expect_rc <rc> <grep-pattern-in-output or ''> -- <args...>
expect_rc() {
  local want=$1 pat=$2; shift 3
  local out rc
  out=$("$RTF" "$@" 2>&1); rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL: rtf $* -> exit $rc, want $want"; echo "$out" | head -20; fails=$((fails+1)); return
  fi
  if [[ -n "$pat" ]] && ! grep -qE -- "$pat" <<<"$out"; then
    echo "FAIL: rtf $* -> output lacks /$pat/"; echo "$out" | head -20; fails=$((fails+1)); return
  fi
  echo "ok: rtf $* -> $rc"
}
finish() { [[ $fails -eq 0 ]] || { echo "$fails check(s) failed"; exit 1; }; echo "all checks passed"; }
# serve_start <args...>: `rtf serve <args> --port 0 --port-file $TMP/port` in the background, on 127.0.0.1
# (serve's default host); waits up to 30 s for the port. Sets SRV_PID and PORT; returns 1 (log shown,
# a failure counted) when it did not start. The EXIT trap kills it whatever happens.
# serve_stop: SIGTERM, then a bounded wait of 10 s (a failure counted if it is still running).
SRV_PID=
trap '[[ -n "$SRV_PID" ]] && kill -9 "$SRV_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
serve_start() {
  rm -f "$TMP/port"
  "$RTF" serve "$@" --port 0 --port-file "$TMP/port" >"$TMP/serve.log" 2>&1 &
  SRV_PID=$!
  for _ in $(seq 1 120); do [[ -s "$TMP/port" ]] && break; kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.25; done
  if [[ -s "$TMP/port" ]]; then PORT=$(cat "$TMP/port"); return 0; fi
  echo "FAIL: server did not start"; cat "$TMP/serve.log"; fails=$((fails+1)); return 1
}
# stop_server <pid> <what>: SIGTERM, a bounded wait of 10 s, then its exit status, which must
# be 0 (rtf serve's on SIGTERM); a failure counted otherwise, or if it still runs (then SIGKILL).
stop_server() {
  local pid=$1 what=$2 rc
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "FAIL: $what still running 10 s after SIGTERM (killed)"; kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    fails=$((fails+1)); return 1
  fi
  wait "$pid" 2>/dev/null; rc=$?
  if [[ $rc -ne 0 ]]; then echo "FAIL: $what exited $rc after SIGTERM, want 0"; fails=$((fails+1)); return 1; fi
  echo "ok: $what: SIGTERM -> exit 0"
}
serve_stop() {
  [[ -n "$SRV_PID" ]] || return 0
  kill -TERM "$SRV_PID" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$SRV_PID" 2>/dev/null && { echo "FAIL: server still running 10 s after SIGTERM"; fails=$((fails+1)); }
  SRV_PID=
}
