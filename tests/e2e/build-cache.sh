#!/usr/bin/env bash
# scripts/build-cache.sh, the content-keyed cache the pinned llama.cpp builds live in (shared
# by every clone on a machine): an entry is complete only with its marker, written after the
# rename; a missing marker is "partial", a changed, missing or added file "corrupt", and a
# staging directory left by a build that died is swept. fetch-llama.sh refuses a bad
# RTF_LLAMA_CACHE value. (No llama.cpp is built here: fake entries.)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../scripts/build-cache.sh
source "$root/scripts/build-cache.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
check() {   # check WANT_RC WANT_WORD ENTRY KEYTEXT
  local out rc
  out=$(cache_check "$3" "$4"); rc=$?
  if [[ $rc -eq $1 && $out == "$2"* ]]; then echo "ok: $2 ($out)"; else echo "FAIL: cache_check -> $rc '$out', want $1 '$2'"; fails=$((fails+1)); fi
}
key="llama.cpp test key"
[[ $(cache_key "$key") =~ ^[0-9a-f]{16}$ ]] && echo "ok: a 16-hex key" || { echo "FAIL: key $(cache_key "$key")"; fails=$((fails+1)); }
[[ $(cache_key "$key") != $(cache_key "$key 2") ]] || { echo "FAIL: two texts, one key"; fails=$((fails+1)); }
entry=$tmp/cache/e1
check 1 absent "$entry" "$key"
stage=$(cache_stage "$tmp/cache" e1)
mkdir -p "$stage/install/lib"; echo lib >"$stage/install/lib/libggml.so"; echo v >"$stage/install/version"
check 1 absent "$entry" "$key"                       # staged, not yet in place
cache_commit "$stage" "$entry" "$key"
[[ ! -e $stage ]] && echo "ok: the stage was moved, not copied" || { echo "FAIL: stage left"; fails=$((fails+1)); }
check 0 "" "$entry" "$key"
check 3 corrupt "$entry" "another key"               # same files, another recipe
cp -a "$entry" "$tmp/cache/e2"; echo truncated >"$tmp/cache/e2/install/lib/libggml.so"
check 3 corrupt "$tmp/cache/e2" "$key"
cp -a "$entry" "$tmp/cache/e3"; echo extra >"$tmp/cache/e3/install/stray"
check 3 corrupt "$tmp/cache/e3" "$key"
cp -a "$entry" "$tmp/cache/e4"; rm "$tmp/cache/e4/install/version"
check 3 corrupt "$tmp/cache/e4" "$key"
cp -a "$entry" "$tmp/cache/e5"; rm "$tmp/cache/e5/.rtf-complete"   # died between rename and marker
check 2 partial "$tmp/cache/e5" "$key"
# a staging directory of a process that is gone is swept by the next build of that name
mkdir -p "$tmp/cache/.stage-e6.999999999"
s2=$(cache_stage "$tmp/cache" e6)
[[ ! -e "$tmp/cache/.stage-e6.999999999" && -d $s2 ]] && echo "ok: a dead build's stage swept" ||
  { echo "FAIL: dead stage not swept"; fails=$((fails+1)); }
out=$(RTF_LLAMA_CACHE=maybe "$root/scripts/fetch-llama.sh" 2>&1); rc=$?
[[ $rc -eq 1 && $out == *"RTF_LLAMA_CACHE='maybe' (allowed: on, off)"* ]] && echo "ok: a bad RTF_LLAMA_CACHE refused" ||
  { echo "FAIL: RTF_LLAMA_CACHE=maybe -> $rc: $out"; fails=$((fails+1)); }
((fails == 0)) || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
