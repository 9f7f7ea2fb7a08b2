#!/usr/bin/env bash
# docs/cli/ matches the binary's --help (scripts/cli-docs.py --check), and the check can fail:
# an altered generated line, a missing page and a page without a command are each named; a
# re-render restores the generated part and keeps the hand-written notes; two renders agree.
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/e2e/lib.sh"
docs=$root/docs/cli
py() { python3 "$root/scripts/cli-docs.py" --rtf "$RTF" "$@"; }
# check <want-rc> <pattern or ''> <what> -- <cli-docs args...>
check() {
  local want=$1 pat=$2 what=$3; shift 4
  local out rc
  out=$(py "$@" 2>&1); rc=$?
  if [[ $rc -ne $want ]]; then echo "FAIL: $what: exit $rc, want $want"; echo "$out" | head -20; fails=$((fails+1)); return; fi
  if [[ -n "$pat" ]] && ! grep -qE -- "$pat" <<<"$out"; then
    echo "FAIL: $what: output lacks /$pat/"; echo "$out" | head -20; fails=$((fails+1)); return
  fi
  echo "ok: $what -> $rc"
}

check 0 'pages match' "docs/cli matches rtf --help" -- --check

# one generated line altered: exit 1, that page named, no other
cp -r "$docs" "$TMP/cli"
sed -i 's/^Usage: rtf speak \[OPTIONS\]$/Usage: rtf speak [OPTIONS] EXTRA/' "$TMP/cli/speak.md"
grep -q 'EXTRA' "$TMP/cli/speak.md" || { echo "FAIL: the test could not alter speak.md"; fails=$((fails+1)); }
check 1 'cli/speak\.md: differs' "an altered generated line" -- --check --docs "$TMP/cli"
n=$(py --check --docs "$TMP/cli" | grep -c ': differs')
[[ $n -eq 1 ]] && echo "ok: only that page named" || { echo "FAIL: $n pages named, want 1"; fails=$((fails+1)); }

# a note below the end marker is not the generated part: still exit 0
cp -r "$docs" "$TMP/notes"
echo "- a new hand-written note" >>"$TMP/notes/speak.md"
check 0 'pages match' "an added note" -- --check --docs "$TMP/notes"

# a command without a page, a page without a command
rm "$TMP/cli/version.md"
printf '# stray\n' >"$TMP/cli/no-such-command.md"
check 1 'version\.md: missing' "a missing page" -- --check --docs "$TMP/cli"
check 1 'no-such-command\.md: a page without a command' "a page without a command" -- --check --docs "$TMP/cli"

# re-rendering restores the generated part and keeps the notes byte for byte
check 0 '' "re-render" -- --out "$TMP/notes"
rm "$TMP/cli/no-such-command.md"
check 0 '' "re-render" -- --out "$TMP/cli"
if diff -r "$docs" "$TMP/cli" >/dev/null; then echo "ok: re-rendered pages equal docs/cli"
else echo "FAIL: re-rendered pages differ from docs/cli"; diff -r "$docs" "$TMP/cli" | head -20; fails=$((fails+1)); fi
tail -1 "$TMP/notes/speak.md" | grep -q 'a new hand-written note' && echo "ok: a note survives a re-render" \
  || { echo "FAIL: the added note was lost"; fails=$((fails+1)); }

# deterministic: two renders into fresh folders agree (notes come from docs/cli)
py --out "$TMP/r1" >/dev/null && py --out "$TMP/r2" >/dev/null
if diff -r "$TMP/r1" "$TMP/r2" >/dev/null && diff -r "$docs" "$TMP/r1" >/dev/null; then echo "ok: two renders agree"
else echo "FAIL: two renders differ"; diff -r "$TMP/r1" "$TMP/r2" | head; fails=$((fails+1)); fi

finish
