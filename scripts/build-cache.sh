# A content-keyed cache of finished builds, shared by every clone on the machine
# (sourced by scripts/fetch-llama.sh; tests/e2e/build-cache.sh exercises it).
#
# An entry is a directory CACHE/NAME. It is built elsewhere (cache_stage), moved into place
# with one rename, and only then gets its completion marker, CACHE/NAME/.rtf-complete:
# the key text followed by a sha256 manifest of every file in the entry (written to a
# temporary name and renamed, so the marker itself is never half written). So a build that
# died half way leaves either a staging directory (ignored, swept later) or an entry
# without a marker; either is rebuilt. An entry whose files no longer match the manifest
# (a truncated library, a file someone edited) is corrupt and rebuilt too.
#
#   cache_key TEXT...            the 16-hex key of the given lines
#   cache_check ENTRY KEYTEXT    0: complete and intact; 1: absent; 2: partial; 3: corrupt
#                                (the reason on stdout)
#   cache_stage CACHE NAME       prints a fresh staging directory beside the entry
#   cache_commit STAGE ENTRY KEYTEXT   moves STAGE to ENTRY, then writes the marker
#   cache_lock CACHE NAME        takes an exclusive lock (fd 9) for building NAME

cache_key() { printf '%s\n' "$@" | sha256sum | cut -c1-16; }

_cache_manifest() {   # ENTRY: sha256 of every file but the marker
  (cd "$1" && find . -type f ! -name .rtf-complete ! -name '.rtf-complete.*' -print0 |
    LC_ALL=C sort -z | xargs -0 -r sha256sum)
}

cache_check() {
  local entry=$1 keytext=$2 marker="$1/.rtf-complete"
  [[ -d $entry ]] || { echo "absent"; return 1; }
  [[ -f $marker ]] || { echo "partial: no completion marker (a build that did not finish)"; return 2; }
  local want_key have_key
  want_key=$(printf '%s\n' "$keytext" | sha256sum | cut -d' ' -f1)
  have_key=$(head -1 "$marker")
  [[ $have_key == "key $want_key" ]] || { echo "corrupt: the marker's key differs"; return 3; }
  local bad
  bad=$(cd "$entry" && tail -n +2 .rtf-complete | sha256sum --check --quiet 2>&1 | head -3)
  if [[ -n $bad ]]; then echo "corrupt: ${bad//$'\n'/; }"; return 3; fi
  # a file added after the marker is not covered: compare the file list too
  if [[ $(_cache_manifest "$entry" | cut -d' ' -f3- | sha256sum) != \
        $(tail -n +2 "$marker" | cut -d' ' -f3- | sha256sum) ]]; then
    echo "corrupt: the entry's files differ from its manifest"; return 3
  fi
  return 0
}

cache_stage() {
  local cache=$1 name=$2
  mkdir -p "$cache"
  # staging directories of builds that died (their owner process is gone) are swept
  local old pid
  for old in "$cache/.stage-$name".*; do
    [[ -d $old ]] || continue
    pid=${old##*.}
    kill -0 "$pid" 2>/dev/null || rm -rf "$old"
  done
  local stage="$cache/.stage-$name.$$"
  rm -rf "$stage"; mkdir -p "$stage"
  echo "$stage"
}

cache_commit() {
  local stage=$1 entry=$2 keytext=$3
  rm -rf "$entry"
  mv -T "$stage" "$entry"     # one rename: the entry appears whole or not at all
  local tmp="$entry/.rtf-complete.$$"
  { echo "key $(printf '%s\n' "$keytext" | sha256sum | cut -d' ' -f1)"; _cache_manifest "$entry"; } >"$tmp"
  mv -T "$tmp" "$entry/.rtf-complete"   # written last
}

cache_lock() {
  local cache=$1 name=$2
  mkdir -p "$cache"
  exec 9>"$cache/.lock-$name"
  if ! flock -n 9; then
    echo "waiting for another build of $name in $cache" >&2
    flock 9
  fi
}
