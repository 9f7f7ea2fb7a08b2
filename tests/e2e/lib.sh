# Helpers for the shell e2e tests. Source it; $1 of the test is the rtf binary.
set -uo pipefail
RTF=${RTF:-$1}
TMP=$(mktemp -d "${RTF_TEST_TMP:-/tmp}/rtf-e2e.XXXXXX" 2>/dev/null || mktemp -d)
trap 'rm -rf "$TMP"' EXIT
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
