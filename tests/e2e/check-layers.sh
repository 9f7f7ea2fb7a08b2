#!/usr/bin/env bash
# scripts/check-layers.py, the declared picture checked: the real tree passes; a copy of src/ and
# docs/architecture.md with one planted include the layer table does not declare fails naming the
# file, the edge and the row; so does a copy whose table lost a dependency the code uses. (No build:
# python3 only. An argument, the rtf binary rtf_add_script_test passes, is not used.)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$root/scripts/check-layers.py
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails+1)); }

# run WANT_RC LABEL ARGS...: the script's output in $out
run() {
  local want=$1 label=$2 rc; shift 2
  out=$(python3 "$script" "$@" 2>&1); rc=$?
  if [[ $rc -eq $want ]]; then ok "$label: exit $rc"; else fail "$label: exit $rc, want $want"; echo "$out" | head -40; fi
}
has() {   # has LABEL TEXT: $out contains TEXT
  if [[ $out == *"$2"* ]]; then ok "$1: says '$2'"; else fail "$1: no '$2' in:"; echo "$out" | head -40; fi
}
fresh() {   # a copy of the tree's src/ and docs/architecture.md under $tmp/$1
  mkdir -p "$tmp/$1/docs"
  cp -a "$root/src" "$tmp/$1/src"
  cp "$root/docs/architecture.md" "$tmp/$1/docs/architecture.md"
}

# 1. The real tree: every include declared, the summary line printed.
run 0 "real tree" "$root/src"
has "real tree" "check-layers: "
has "real tree" " 0 errors"
[[ $out =~ ([0-9]+)\ layers,\ ([0-9]+)\ files,\ ([0-9]+)\ includes ]] && (( BASH_REMATCH[2] > 100 )) \
  && ok "real tree: ${BASH_REMATCH[0]}" || fail "real tree: no 'N layers, N files, N includes' summary"

# 2. A planted include the table does not declare: report -> speak (downward in the build
#    order, so the old linear check let it pass; the table does not).
fresh plant
printf '// planted by tests/e2e/check-layers.sh\n#include <string>\n\n#include "speak/speak.h"\n' \
  >"$tmp/plant/src/report/planted.cpp"
run 1 "report -> speak planted" --root "$tmp/plant"
has "report -> speak planted" "report -> speak is not declared"
has "report -> speak planted" "src/report/planted.cpp:4: #include \"speak/speak.h\""
has "report -> speak planted" "(\`src/report\`)"

# 2b. A library include the table does not declare: report -> SQLite.
rm "$tmp/plant/src/report/planted.cpp"
printf '#include <sqlite3.h>\n' >"$tmp/plant/src/report/planted-lib.cpp"
run 1 "report -> SQLite planted" --root "$tmp/plant"
has "report -> SQLite planted" "report -> SQLite is not declared"
has "report -> SQLite planted" "src/report/planted-lib.cpp:1"

# 2c. An include back up the build order (core -> speak): undeclared and upward.
rm "$tmp/plant/src/report/planted-lib.cpp"
printf '#include "speak/speak.h"\n' >"$tmp/plant/src/core/planted-up.cpp"
run 1 "core -> speak planted" --root "$tmp/plant"
has "core -> speak planted" "core -> speak is not declared"
has "core -> speak planted" "core -> speak points up the build order"

# 3. A dependency the code uses removed from the copied table: serve's `models/apm`
#    (src/serve/realtime.cpp includes models/apm/audio-input.h).
fresh drop
python3 - "$tmp/drop/docs/architecture.md" <<'EOF' || fail "could not edit the copied table"
import re, sys
p = sys.argv[1]
lines = open(p, encoding="utf-8").read().split("\n")
hit = [i for i, l in enumerate(lines) if l.startswith("| `src/serve` |")]
assert len(hit) == 1, "no single `src/serve` row"
head, cell = lines[hit[0]][:-1].rsplit("|", 1)
names = [n.strip() for n in cell.split(",")]
assert "models/apm" in names, cell
lines[hit[0]] = head + "| " + ", ".join(n for n in names if n != "models/apm") + " |"
open(p, "w", encoding="utf-8").write("\n".join(lines))
EOF
run 1 "serve row without models/apm" --root "$tmp/drop"
has "serve row without models/apm" "serve -> models/apm is not declared"
has "serve row without models/apm" "src/serve/realtime.cpp:"
has "serve row without models/apm" "(\`src/serve\`)"

# 4. A may-use name the check cannot see fails too (a stale library name: the drift of issue 54).
fresh stale
sed -i 's/^\(| `src\/core` |.*| std, .*\), Sonic |$/\1, SoundTouch |/' "$tmp/stale/docs/architecture.md"
run 1 "core row naming SoundTouch" --root "$tmp/stale"
has "core row naming SoundTouch" "may use 'SoundTouch'"

if (( fails )); then echo "check-layers.sh: $fails failed"; exit 1; fi
echo "check-layers.sh: all passed"
